//! pi, omp, indusagi and OpenClaw sessions: one JSONL-tree parser, four dialects. OpenClaw's
//! SQLite era feeds the same parser from database rows ([`openclaw`]).
//!
//! All four agents write pi's `SessionManager` format: a header line, then one entry per line,
//! linked into a tree by `id`/`parentId`; the active conversation is the path from the last
//! entry back to the root, and abandoned paths stay in the file. omp, indusagi and OpenClaw
//! are forks or embedders of that code, so their files differ only at the edges (where the
//! files live, an omp title slot line, a few extra entry types and roles, OpenClaw `leaf`
//! navigation entries). One parser with a [`Dialect`] switch keeps those edges visible and the
//! tree logic in one place.
//!
//! The agents migrate old files (v1 linear logs, v2 `hookMessage`) by rewriting them on open,
//! with random ids. sessfs never writes: it migrates in memory with ids derived from each
//! record's position (its line, and its place on the line when records were glued onto one
//! line: [`crate::stores::jsonl::Pos`]), so the same bytes always give the same ids (and the
//! same rendered files) and a linear file stays linear.
//!
//! A line that shows nowhere (no JSON, an unknown entry type, a partial last line) is never
//! dropped silently: it costs a warning and its raw text is the session's `unparsed.txt`.
//!
//! Listing reads at most the first two lines of each file (omp puts a fixed 256-byte title
//! slot before the header); bucket directory names are never decoded, because the three
//! spellings in use (`--<abs>--`, `-<home-relative>`, `-tmp-<rel>`) are not reversible.
//! omp's per-session artifact directories hold subagent sessions; they are nested under their
//! parent (`subagents/`) rather than listed, since they have no top-level id of their own.

pub mod openclaw;
mod parse;
#[cfg(test)]
mod tests;

use super::kit::{self, subdirs};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Session, Subagent};
use crate::names;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Which agent wrote the file; decides discovery, listing layout and the source format name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    Pi,
    Omp,
    Indusagi,
    Openclaw,
}

impl Dialect {
    pub const ALL: [Dialect; 4] = [
        Dialect::Pi,
        Dialect::Omp,
        Dialect::Indusagi,
        Dialect::Openclaw,
    ];

    pub fn agent(self) -> Agent {
        match self {
            Dialect::Pi => Agent::Pi,
            Dialect::Omp => Agent::Omp,
            Dialect::Indusagi => Agent::Indusagi,
            Dialect::Openclaw => Agent::Openclaw,
        }
    }

    /// `Source::format` of sessions in this dialect.
    pub fn format(self) -> &'static str {
        match self {
            Dialect::Pi => "pi-jsonl",
            Dialect::Omp => "omp-jsonl",
            Dialect::Indusagi => "indusagi-jsonl",
            Dialect::Openclaw => "openclaw-jsonl",
        }
    }
}

/// Every root the dialect's agent might use, in priority order, existing or not.
///
/// pi, omp and indusagi roots are `sessions/` directories holding per-cwd buckets; OpenClaw
/// roots are state directories holding `agents/<agentId>/sessions/`, or (spec and legacy
/// paths) flat directories of transcripts.
pub fn candidates(env: &Env, dialect: Dialect) -> Vec<Root> {
    let agent = dialect.agent();
    let home = env.home.clone();
    let mut out: Vec<Root> = Vec::new();
    let mut push = |p: PathBuf, how: &str| out.push(Root::new(agent, p, how));
    match dialect {
        Dialect::Pi => {
            if let Some(d) = env.path_var("PI_CODING_AGENT_DIR") {
                push(d.join("sessions"), "PI_CODING_AGENT_DIR");
            }
            push(home.join(".pi/agent/sessions"), "default");
            // The spec names `~/.pi/agent/sessions/<id>/`: the same root, listed too.
            push(home.join(".pi/agent/sessions"), "spec");
        }
        Dialect::Omp => {
            if let Some(d) = env.path_var("OMP_CODING_AGENT_DIR") {
                push(d.join("sessions"), "OMP_CODING_AGENT_DIR");
            }
            if let Some(d) = env.path_var("PI_CONFIG_DIR") {
                push(d.join("agent/sessions"), "PI_CONFIG_DIR");
            }
            push(home.join(".omp/agent/sessions"), "default");
            for p in subdirs(&home.join(".omp/profiles")) {
                push(p.join("agent/sessions"), "profile");
            }
            push(home.join(".omp/agent/sessions"), "spec");
        }
        Dialect::Indusagi => {
            for var in ["INDUSAGI_AGENT_DIR", "INDUSAGI_CODING_AGENT_DIR"] {
                if let Some(d) = env.path_var(var) {
                    push(d.join("sessions"), var);
                }
            }
            if let Some(d) = env.path_var("INDUSAGI_DIR") {
                push(d.join("agent/sessions"), "INDUSAGI_DIR");
            }
            push(home.join(".indusagi/agent/sessions"), "default");
            // indusagi's own source comment names `~/.indusagi/sessions/<id>.jsonl`.
            push(home.join(".indusagi/sessions"), "spec");
        }
        Dialect::Openclaw => {
            for var in ["OPENCLAW_STATE_DIR", "CLAWDBOT_STATE_DIR"] {
                if let Some(d) = env.path_var(var) {
                    push(d, var);
                }
            }
            if let Some(h) = env.path_var("OPENCLAW_HOME") {
                push(h.join(".openclaw"), "OPENCLAW_HOME");
            }
            for name in [".openclaw", ".clawdbot", ".moldbot", ".moltbot"] {
                push(home.join(name), "default");
            }
            // `openclaw --profile X` keeps its state in `~/.openclaw-X`.
            for p in kit::entries(&home) {
                let profile = kit::file_name(&p).starts_with(".openclaw-") && p.is_dir();
                if profile {
                    push(p, "profile");
                }
            }
            push(home.join(".openclaw/sessions"), "spec");
            push(home.join(".clawdbot/sessions"), "legacy");
        }
    }
    out
}

pub struct PiStore {
    dialect: Dialect,
    base: Base,
}

impl PiStore {
    pub fn new(dialect: Dialect, roots: Vec<Root>) -> PiStore {
        PiStore {
            dialect,
            base: Base::new(dialect.agent(), roots),
        }
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }
}

impl Store for PiStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for path in session_files(self.dialect, &root.path) {
                let id = listed_id(self.dialect, &path);
                let children = artifact_sessions(self.dialect, &path);
                let mut listed = Listed::file(id, path, i);
                listed.sources.extend(children);
                out.push(listed);
            }
        }
        out
    }

    /// The listing takes a file's id from its header, or from its name while it has none:
    /// a write keeps the listing while the header still gives the id listed.
    fn keeps_listing(&self, listed: &Listed) -> bool {
        listed_id(self.dialect, &listed.path) == listed.id
    }

    /// The listing reads each root, its directories and theirs (artifact directories), the
    /// header of each session file, and versions a session by it and its artifact sessions.
    /// A root that is a file is listed every time. OpenClaw's files are listed only inside
    /// [`openclaw::OpenclawStore`], beside its databases: its glance covers both.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        if self.dialect == Dialect::Openclaw {
            return None;
        }
        let mut g = Glance::default();
        for root in &self.base.roots {
            if !root.path.is_dir() {
                return None;
            }
            g.dirs.push(root.path.clone());
            for dir in scan(&root.path).1 {
                g.dirs.extend(scan(&dir).1);
                g.dirs.push(dir);
            }
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        let mut s = parse::load(self.dialect, listed);
        for p in artifact_sessions(self.dialect, &listed.path) {
            let mut child = parse::load_file(self.dialect, &p, &id_from_file_name(&p)).session;
            child.parent = Some(s.unified_id());
            let stem = p
                .file_stem()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            s.subagents.push(Subagent {
                name: names::escape(&stem),
                unified_id: None,
                description: child.title.clone(),
                tool_call_id: None,
                session: Some(Box::new(child)),
            });
        }
        s
    }
}

/// The session files under one root, sorted by path.
///
/// pi, omp, indusagi: `<root>/*.jsonl` (flat `--session-dir` files) and `<root>/<dir>/*.jsonl`
/// (cwd buckets in every spelling, and the spec's `<id>/` directories). A directory `X` next to
/// a file `X.jsonl` is omp's artifact directory of that session (tool logs, subagent sessions):
/// its files are not sessions of their own.
///
/// OpenClaw: `<root>/agents/<agentId>/sessions/*.jsonl` and `<root>/*.jsonl`, plus the
/// copies OpenClaw archives rather than deletes ([`Archive`]: `.jsonl.reset.<ts>`,
/// `.jsonl.bak…`, `.checkpoint.<n>.jsonl`); what the user deleted (`.jsonl.deleted.<ts>`) and
/// other sidecars with a dot in their stem are skipped.
///
/// A root that is itself a file (`--store openclaw=<file>`) is one session, whatever its
/// name: that is how a user reads a copy sessfs does not list, such as a deleted one.
pub fn session_files(dialect: Dialect, root: &Path) -> Vec<PathBuf> {
    if root.is_file() {
        // An OpenClaw database given as a root is read by [`openclaw`], not as JSONL.
        let db = dialect == Dialect::Openclaw && kit::file_name(root).ends_with(".sqlite");
        return if db {
            Vec::new()
        } else {
            vec![root.to_path_buf()]
        };
    }
    let mut out = Vec::new();
    let (files, dirs) = scan(root);
    out.extend(files.into_iter().filter(|p| is_session_file(dialect, p)));
    match dialect {
        Dialect::Openclaw => {
            for agent_dir in subdirs(&root.join("agents")) {
                let (files, _) = scan(&agent_dir.join("sessions"));
                out.extend(files.into_iter().filter(|p| is_session_file(dialect, p)));
            }
        }
        _ => {
            for dir in dirs {
                if has_jsonl_sibling(&dir) {
                    continue;
                }
                let (files, _) = scan(&dir);
                out.extend(files.into_iter().filter(|p| is_session_file(dialect, p)));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Subagent sessions omp keeps in a session's artifact directory (`<file without .jsonl>/`,
/// named `<outputId>.jsonl`, nested ones `Parent.Child.jsonl`), sorted. They have no
/// top-level id, so they appear under the parent's `subagents/`.
fn artifact_sessions(dialect: Dialect, session_file: &Path) -> Vec<PathBuf> {
    if dialect == Dialect::Openclaw {
        return Vec::new();
    }
    let Some(dir) = session_file
        .to_str()
        .and_then(|s| s.strip_suffix(".jsonl"))
        .map(PathBuf::from)
    else {
        return Vec::new();
    };
    if !dir.is_dir() {
        return Vec::new();
    }
    let (mut files, _) = scan(&dir);
    files.retain(|p| p.extension().and_then(|e| e.to_str()) == Some("jsonl"));
    files.sort();
    files
}

/// True when `dir` is `X` and `X.jsonl` exists beside it (checked by name so a dotted stem
/// such as `a.b` is not mistaken for `a.jsonl`).
fn has_jsonl_sibling(dir: &Path) -> bool {
    match (dir.parent(), dir.file_name().and_then(|n| n.to_str())) {
        (Some(parent), Some(name)) => parent.join(format!("{name}.jsonl")).is_file(),
        _ => false,
    }
}

/// `(files, dirs)` directly in `dir`, hidden entries excluded; empty when unreadable.
fn scan(dir: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            if e.kind() != std::io::ErrorKind::NotFound {
                log::warn!("cannot read {}: {e}", dir.display());
            }
            return (files, dirs);
        }
    };
    for ent in rd.flatten() {
        let hidden = ent.file_name().as_encoded_bytes().starts_with(b".");
        if hidden {
            continue;
        }
        let p = ent.path();
        // `is_dir`/`is_file` follow symlinks; depth is fixed, so a link loop cannot recurse.
        if p.is_dir() {
            dirs.push(p);
        } else if p.is_file() {
            files.push(p);
        }
    }
    (files, dirs)
}

fn is_session_file(dialect: Dialect, p: &Path) -> bool {
    let Some(name) = p.file_name().map(names::os_id) else {
        return false;
    };
    if dialect == Dialect::Openclaw {
        // Archived copies are sessions too; a deleted one only when asked for by name.
        if let Some(a) = Archive::parse(&name) {
            return a.kind != ArchiveKind::Deleted;
        }
    }
    let Some(stem) = name.strip_suffix(".jsonl") else {
        return false;
    };
    if stem.is_empty() {
        return false;
    }
    match dialect {
        Dialect::Openclaw => !stem.contains('.'),
        _ => true,
    }
}

/// The id a file is listed under: an OpenClaw archived copy's own ([`Archive::id`]), else
/// the header id, else the id its name carries.
pub(crate) fn listed_id(dialect: Dialect, path: &Path) -> String {
    if dialect == Dialect::Openclaw {
        if let Some(a) = Archive::of(path) {
            return a.id;
        }
    }
    peek_id(path).unwrap_or_else(|| id_from_file_name(path))
}

/// Why OpenClaw kept a copy of a transcript beside the live one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchiveKind {
    /// `<id>.jsonl.reset.<ts>`: the conversation before a `/reset` (or `/new`).
    Reset,
    /// `<id>.jsonl.bak…` (e.g. `.bak-164503-1777924592329`): a backup of the live file.
    Bak,
    /// `<id>.checkpoint.<n>.jsonl`: a copy taken at a checkpoint (older releases).
    Checkpoint,
    /// `<id>.jsonl.deleted.<ts>`: what the user deleted; never listed from a directory.
    Deleted,
}

impl ArchiveKind {
    pub fn name(self) -> &'static str {
        match self {
            ArchiveKind::Reset => "reset",
            ArchiveKind::Bak => "bak",
            ArchiveKind::Checkpoint => "checkpoint",
            ArchiveKind::Deleted => "deleted",
        }
    }
}

/// An OpenClaw archived copy, told by its file name (optionally `.zst`-compressed).
///
/// Its header holds the id of the session it was copied from, so the header cannot name it:
/// it is listed under its file name without `.jsonl` (`<id>.reset.<ts>`, `<id>.bak-…`,
/// `<id>.checkpoint.<n>`), which no live session and no other copy can share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Archive {
    pub kind: ArchiveKind,
    /// The id the copy is listed under.
    pub id: String,
    /// The live transcript's file stem (`<id>` of `<id>.jsonl`).
    pub stem: String,
    /// What follows the kind in the name: a timestamp, a checkpoint id, a backup tag.
    pub suffix: String,
}

impl Archive {
    pub fn of(path: &Path) -> Option<Archive> {
        let name = path.file_name().map(names::os_id)?;
        Archive::parse(&name)
    }

    pub fn parse(name: &str) -> Option<Archive> {
        let base = name.strip_suffix(".zst").unwrap_or(name);
        let (stem, kind, rest) = if let Some((stem, rest)) = base.split_once(".jsonl.") {
            let kind = if rest.starts_with("reset.") {
                ArchiveKind::Reset
            } else if rest.starts_with("deleted.") {
                ArchiveKind::Deleted
            } else if rest == "bak" || rest.starts_with("bak.") || rest.starts_with("bak-") {
                ArchiveKind::Bak
            } else {
                return None;
            };
            (stem, kind, rest)
        } else {
            let stem = base.strip_suffix(".jsonl")?;
            let (live, _) = stem.split_once(".checkpoint.")?;
            (live, ArchiveKind::Checkpoint, &stem[live.len() + 1..])
        };
        if stem.is_empty() || stem.contains('.') {
            return None;
        }
        let suffix = rest[kind.name().len()..]
            .trim_start_matches(['.', '-', '_'])
            .to_owned();
        Some(Archive {
            kind,
            id: format!("{stem}.{rest}"),
            stem: stem.to_owned(),
            suffix,
        })
    }
}

/// How many bytes listing reads from the start of a file: the title slot plus a header.
const PEEK_BYTES: u64 = 64 * 1024;

/// The header object of a session file: the first line, or the second when the first is an
/// omp title slot. `None` when neither parses as a `session` header.
pub(crate) fn peek_header(path: &Path) -> Option<serde_json::Value> {
    use std::io::BufRead;
    let f = kit::open_file(path).ok()?;
    let mut r = std::io::BufReader::with_capacity(8 * 1024, f.take(PEEK_BYTES));
    let mut line = Vec::new();
    for _ in 0..2 {
        line.clear();
        if r.read_until(b'\n', &mut line).ok()? == 0 {
            return None;
        }
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&line) else {
            return None;
        };
        match v.get("type").and_then(|t| t.as_str()) {
            Some("session") => return Some(v),
            Some("title") => continue,
            _ => return None,
        }
    }
    None
}

/// The header `id` of a session file, if it can be read cheaply.
pub(crate) fn peek_id(path: &Path) -> Option<String> {
    let h = peek_header(path)?;
    let id = h.get("id")?.as_str()?.trim();
    (!id.is_empty()).then(|| id.to_string())
}

/// The session id a file name carries: the part after the last `_` of
/// `<timestamp>_<uuid>.jsonl`, else the whole stem (OpenClaw `<sessionId>.jsonl`).
/// A name that is not UTF-8 keeps its bytes ([`names::os_id`]).
pub(crate) fn id_from_file_name(path: &Path) -> String {
    let name = path.file_name().map(names::os_id).unwrap_or_default();
    id_from_stem(&name)
}

/// As [`id_from_file_name`], for a name that may come from another OS's path (split on both
/// `/` and `\`).
pub(crate) fn id_from_name(name: &str) -> String {
    id_from_stem(name.rsplit(['/', '\\']).next().unwrap_or(name))
}

fn id_from_stem(name: &str) -> String {
    let stem = name.strip_suffix(".jsonl").unwrap_or(name);
    match stem.rsplit_once('_') {
        Some((_, id)) if !id.is_empty() => id.to_string(),
        _ => stem.to_string(),
    }
}
