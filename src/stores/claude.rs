//! Claude Code: `<config>/projects/<dashed cwd>/<session uuid>.jsonl`.
//!
//! Listing is by file name and `stat` only, so `ls` of thousands of sessions stays cheap.
//! The project directory name is a lossy encoding of the cwd (`/a/b_c` and `/a/b-c` give
//! the same name), so it is never decoded: the cwd comes from the records.
//!
//! A session is more than its main file. Subagents live beside it, in one of three layouts
//! depending on the Claude Code version that wrote them: `<session>/subagents/**/agent-*.jsonl`
//! (2.1.2 and later, with an optional `.meta.json` sidecar), flat `agent-*.jsonl` files next
//! to the main file whose records name the parent's `sessionId` (before 2.1.2), or
//! `isSidechain` records inside the main file (2.0 and older). All three become
//! [`Subagent`]s of the parent, and every subagent file is one of the parent's
//! [`Listed::sources`], so a subagent that grows re-renders its parent.
//!
//! A `<session>/subagents/` directory whose `<session>.jsonl` is gone is listed as a session
//! of its own (same id, `orphaned`), so the subagents' work is not lost from view.
//!
//! The conversation itself is a tree; see `graph` for how the active path, the parallel
//! tool calls that only look like forks, and the real branches are told apart.

mod graph;
mod records;
mod session;
mod text;

use super::kit::{entries as sorted_entries, file_name, typed_entries, EntryType};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Session, Subagent};
use crate::names;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Every place Claude Code keeps projects: `CLAUDE_CONFIG_DIR` (a comma-separated list)
/// replaces `~/.claude`; some installs use `~/.config/claude`.
pub fn candidates(env: &Env) -> Vec<Root> {
    if let Some(v) = env.var("CLAUDE_CONFIG_DIR") {
        let roots: Vec<Root> = v
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                Root::new(
                    Agent::Claude,
                    env.expand(s).join("projects"),
                    "CLAUDE_CONFIG_DIR",
                )
            })
            .collect();
        if !roots.is_empty() {
            return roots;
        }
    }
    vec![
        Root::new(Agent::Claude, env.home.join(".claude/projects"), "default"),
        Root::new(
            Agent::Claude,
            env.home.join(".config/claude/projects"),
            "default",
        ),
    ]
}

pub struct ClaudeStore {
    base: Base,
}

impl ClaudeStore {
    pub fn new(roots: Vec<Root>) -> ClaudeStore {
        ClaudeStore::with_agent(Agent::Claude, roots)
    }

    /// The store of an agent that writes Claude Code's project layout and JSONL records
    /// (Kode): `roots` are its `projects/` directories.
    pub fn with_agent(agent: Agent, roots: Vec<Root>) -> ClaudeStore {
        ClaudeStore {
            base: Base::new(agent, roots),
        }
    }
}

impl Store for ClaudeStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (idx, root) in self.base.roots.iter().enumerate() {
            for project in sorted_entries(&root.path)
                .into_iter()
                .filter(|p| p.is_dir())
            {
                list_project(&project, idx, &mut out);
            }
        }
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        if listed.path.is_dir() {
            return load_orphan(self.base.agent, &listed.path, &listed.id);
        }
        // Listing already found the flat subagent files beside this session: loading one
        // session never lists its project directory again (that made a project's cost
        // quadratic in its number of sessions).
        let project = listed.path.parent();
        let flat: Vec<PathBuf> = listed
            .sources
            .iter()
            .filter(|p| p.parent() == project && agent_id_of(p).is_some())
            .cloned()
            .collect();
        load(self.base.agent, &listed.path, &listed.id, Some(flat))
    }

    /// A session file's id is its name; only `agent-*.jsonl` heads are read, and those are
    /// never a session's own file.
    fn keeps_listing(&self, _listed: &Listed) -> bool {
        true
    }

    /// The listing reads the roots, their project directories, each `<uuid>/` beside a
    /// session and the tree of its `subagents/`; the heads of flat `agent-*.jsonl` files;
    /// and versions every session by its sources.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            g.dirs.push(root.path.clone());
            for project in sorted_entries(&root.path)
                .into_iter()
                .filter(|p| p.is_dir())
            {
                for (p, t) in typed_entries(&project) {
                    if t == EntryType::Dir {
                        g.dirs.push(p.clone());
                        g.dirs
                            .extend(super::kit::dirs_under(&p.join("subagents"), 4));
                    } else if t == EntryType::File && agent_id_of(&p).is_some() {
                        g.files.push(p);
                    }
                }
                g.dirs.push(project);
            }
        }
        Some(g)
    }
}

/// `agent-<id>.jsonl` -> `<id>`.
fn agent_id_of(p: &Path) -> Option<&str> {
    file_name(p)
        .strip_prefix("agent-")?
        .strip_suffix(".jsonl")
        .filter(|s| !s.is_empty())
}

fn is_session_file((p, t): &(PathBuf, EntryType)) -> bool {
    let n = p.file_name().map(names::os_id).unwrap_or_default();
    *t == EntryType::File
        && n.ends_with(".jsonl")
        && !n.starts_with("agent-")
        && n.len() > ".jsonl".len()
}

/// One project directory: one `getdents` pass and the types it gives; a session's
/// `<uuid>/subagents/` is looked into only when the listing shows a `<uuid>` directory.
fn list_project(project: &Path, root: usize, out: &mut Vec<Listed>) {
    let start = out.len();
    let entries = typed_entries(project);
    let dirs: std::collections::HashSet<&Path> = entries
        .iter()
        .filter(|(_, t)| *t == EntryType::Dir)
        .map(|(p, _)| p.as_path())
        .collect();
    let nested = |main: &Path| {
        if dirs.contains(main.with_extension("").as_path()) {
            nested_agent_files(main)
        } else {
            Vec::new()
        }
    };
    // Flat subagent files name their parent only inside; read each head once per project.
    let mut flat_by_parent: HashMap<String, Vec<PathBuf>> = HashMap::new();
    for (f, _) in entries
        .iter()
        .filter(|(p, t)| *t == EntryType::File && agent_id_of(p).is_some())
    {
        if let Some(sid) = head_session_id(f) {
            flat_by_parent.entry(sid).or_default().push(f.clone());
        }
    }
    for (p, _) in entries.iter().filter(|e| is_session_file(e)) {
        let Some(id) = p.file_stem().map(names::os_id) else {
            continue;
        };
        let mut listed = Listed::file(id.clone(), p.clone(), root);
        for (f, meta) in nested(p) {
            listed.sources.push(f);
            listed.sources.extend(meta);
        }
        listed
            .sources
            .extend(flat_by_parent.get(&id).into_iter().flatten().cloned());
        out.push(listed);
    }
    // `<uuid>/subagents/` whose `<uuid>.jsonl` is gone (deleted, or never written when the
    // main process died): a session of its own, so the subagents' work stays reachable.
    let all: std::collections::HashSet<&Path> = entries.iter().map(|(p, _)| p.as_path()).collect();
    for dir in dirs.iter().copied() {
        let main = dir.with_file_name(format!("{}.jsonl", file_name(dir)));
        if file_name(dir).is_empty() || all.contains(main.as_path()) {
            continue;
        }
        let files = nested_agent_files(&main);
        if files.is_empty() {
            continue;
        }
        let id = dir.file_name().map(names::os_id).unwrap_or_default();
        let mut listed = Listed::file(id, dir.to_path_buf(), root);
        for (f, meta) in files {
            listed.sources.push(f);
            listed.sources.extend(meta);
        }
        out.push(listed);
    }
    // In path order within the project, an orphan set where its main file would be.
    out[start..].sort_by_cached_key(|a| a.path.with_extension(""));
}

/// How many of `listed` are orphaned subagent sets (for `sessfs doctor`).
pub fn orphan_sets(listed: &[Listed]) -> usize {
    listed.iter().filter(|l| l.path.is_dir()).count()
}

/// An orphaned subagent set: `dir` is `<project>/<uuid>`, its `<uuid>.jsonl` is gone. The
/// session (id = the directory name) has no conversation of its own, one event naming what
/// remains, and every subagent nested under `subagents/` as in a live session.
fn load_orphan(owner: Agent, dir: &Path, id: &str) -> Session {
    let main = dir.with_file_name(format!("{}.jsonl", file_name(dir)));
    let spill = dir.join("tool-results");
    let mut s = Session::new(owner, id);
    s.orphaned = true;
    s.source.format = session::format_name(owner).into();
    s.warnings.push(format!(
        "main transcript {} is missing; only its subagents remain",
        file_name(&main)
    ));
    let parent_uid = s.unified_id();
    let mut lines = Vec::new();
    for (file, meta_path) in nested_agent_files(&main) {
        let Some(agent) = agent_id_of(&file).map(str::to_string) else {
            continue;
        };
        let name = format!("agent-{agent}");
        let meta = meta_path.as_deref().and_then(read_agent_meta);
        let meta_str = |k: &str| meta_field(meta.as_ref(), k);
        let description = meta_str("description").or_else(|| meta_str("agentType"));
        let mut child = load_child(owner, &file, &format!("{id}/{name}"), &parent_uid, &spill);
        if meta.is_none() {
            unparsed_agent_meta(meta_path.as_deref(), &mut child, &mut s.warnings);
        }
        if let Some(d) = &description {
            child.title = Some(d.clone());
        }
        s.source.paths.push(file.clone());
        if let Some(m) = &meta_path {
            child.source.paths.push(m.clone());
            s.source.paths.push(m.clone());
        }
        if s.cwd.is_none() {
            s.cwd = child.cwd.clone();
        }
        if s.source.format_version.is_none() {
            s.source.format_version = child.source.format_version.clone();
        }
        for t in [child.created_at, child.updated_at].into_iter().flatten() {
            if s.created_at.is_none_or(|c| t < c) {
                s.created_at = Some(t);
            }
            if s.updated_at.is_none_or(|u| t > u) {
                s.updated_at = Some(t);
            }
        }
        lines.push(match child.title.as_deref() {
            Some(t) => format!("- subagents/{name}/ · {t}"),
            None => format!("- subagents/{name}/"),
        });
        s.subagents.push(Subagent {
            name,
            unified_id: None,
            description,
            tool_call_id: meta_str("toolUseId"),
            session: Some(Box::new(child)),
        });
    }
    s.title = Some(
        match s.subagents.first().and_then(|x| x.description.as_deref()) {
            Some(d) => format!("{d} (orphaned subagents)"),
            None => format!("orphaned subagents of {id}"),
        },
    );
    s.messages.push(crate::model::Message {
        role: crate::model::Role::System,
        kind: crate::model::MessageKind::Event,
        content: format!(
            "The main transcript {} is gone; these subagent transcripts remain:\n{}",
            file_name(&main),
            lines.join("\n")
        ),
        timestamp: s.created_at,
        ..crate::model::Message::default()
    });
    s
}

/// `<session>/subagents/**/agent-*.jsonl` with their `.meta.json` sidecars, sorted.
fn nested_agent_files(main: &Path) -> Vec<(PathBuf, Option<PathBuf>)> {
    let dir = main.with_extension("").join("subagents");
    if !dir.is_dir() {
        return Vec::new();
    }
    super::walk_files(&dir, ".jsonl", 4)
        .into_iter()
        .filter(|p| agent_id_of(p).is_some())
        .map(|p| {
            let meta = p.with_extension("meta.json");
            let meta = meta.is_file().then_some(meta);
            (p, meta)
        })
        .collect()
}

/// Flat `agent-*.jsonl` siblings of `main` whose records carry `session_id`.
fn flat_agent_files(main: &Path, session_id: &str) -> Vec<PathBuf> {
    let Some(project) = main.parent() else {
        return Vec::new();
    };
    sorted_entries(project)
        .into_iter()
        .filter(|p| agent_id_of(p).is_some() && p.is_file())
        .filter(|p| head_session_id(p).as_deref() == Some(session_id))
        .collect()
}

/// The first `sessionId` in the first 16 KB of a file, without parsing whole lines
/// (a first line can be megabytes of base64).
fn head_session_id(path: &Path) -> Option<String> {
    let f = super::kit::open_file(path).ok()?;
    let mut buf = Vec::new();
    f.take(16 * 1024).read_to_end(&mut buf).ok()?;
    let s = String::from_utf8_lossy(&buf);
    let mut rest = s.as_ref();
    while let Some(i) = rest.find("\"sessionId\"") {
        rest = &rest[i + "\"sessionId\"".len()..];
        let after = rest.trim_start().strip_prefix(':')?.trim_start();
        if let Some(v) = after.strip_prefix('"') {
            let end = v.find('"')?;
            let id = &v[..end];
            if !id.is_empty() {
                return Some(id.to_string());
            }
        }
    }
    None
}

/// A non-empty string field of a subagent's `.meta.json`.
fn meta_field(meta: Option<&Value>, key: &str) -> Option<String> {
    meta.and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// `.meta.json` of a nested subagent: `{agentType, description, toolUseId}`.
fn read_agent_meta(path: &Path) -> Option<Value> {
    agent_meta(path).ok().flatten()
}

/// [`read_agent_meta`], saying when the file is there but not JSON: `Err((text, error))`.
/// `Ok(None)` when it cannot be read (gone, say).
fn agent_meta(path: &Path) -> Result<Option<Value>, (String, String)> {
    let Ok(f) = super::kit::open_file(path) else {
        return Ok(None);
    };
    let mut buf = Vec::new();
    if f.take(1024 * 1024).read_to_end(&mut buf).is_err() {
        return Ok(None);
    }
    serde_json::from_slice(&buf)
        .map(Some)
        .map_err(|e| (String::from_utf8_lossy(&buf).into_owned(), e.to_string()))
}

/// A subagent's `.meta.json` that is not JSON: the child shows it as stored, first, and
/// `warnings` (the parent's) says so. Its description and call link are then unknown.
fn unparsed_agent_meta(path: Option<&Path>, child: &mut Session, warnings: &mut Vec<String>) {
    let Some(Err((raw, e))) = path.map(agent_meta) else {
        return;
    };
    let name = path.map(file_name).unwrap_or_default();
    warnings.push(format!("subagent {name} could not be parsed: {e}"));
    child.messages.insert(
        0,
        crate::model::Message {
            role: crate::model::Role::System,
            kind: crate::model::MessageKind::Context,
            label: Some(format!("unparsed {name}")),
            content: raw,
            ..crate::model::Message::default()
        },
    );
}

/// Load one main session file with its subagents, looking for flat subagent files beside it.
pub fn load_session(path: &Path, id: &str) -> Session {
    load(Agent::Claude, path, id, None)
}

/// Load one main session file; `flat` are its flat `agent-*.jsonl` siblings when the
/// caller already knows them, else the project directory is scanned.
fn load(owner: Agent, path: &Path, id: &str, flat: Option<Vec<PathBuf>>) -> Session {
    let parsed = session::parse_file(path);
    let mut members: Vec<usize> = (0..parsed.recs.len())
        .filter(|&i| !parsed.recs[i].sidechain)
        .collect();
    // A file of sidechain records only is a subagent transcript opened on its own.
    let only_sidechains = !members.iter().any(|&i| parsed.recs[i].kind.is_chain());
    if only_sidechains {
        members = (0..parsed.recs.len()).collect();
    }
    let spill = path.with_extension("").join("tool-results");
    let mut s = session::assemble(
        &parsed,
        session::Shape {
            agent: owner,
            id: id.to_string(),
            paths: vec![path.to_path_buf()],
            spill_dir: Some(spill.clone()),
            parent: None,
            members: &members,
            whole_file: true,
        },
    );
    let parent_uid = s.unified_id();
    // tool_use id -> Task input, to describe subagents by the call that made them.
    let calls: HashMap<&str, &Value> = parsed
        .recs
        .iter()
        .flat_map(|r| r.tool_uses.iter())
        .map(|t| (t.tool_call_id.as_str(), &t.input))
        .collect();
    let link_of = |agent: &str| {
        parsed
            .meta
            .agent_links
            .iter()
            .find(|(a, _)| a == agent)
            .map(|(_, t)| t.clone())
    };
    let mut files: Vec<(PathBuf, Option<PathBuf>)> = nested_agent_files(path);
    let session_id = parsed
        .meta
        .session_id
        .clone()
        .unwrap_or_else(|| id.to_string());
    let flat = flat.unwrap_or_else(|| flat_agent_files(path, &session_id));
    for f in flat {
        files.push((f, None));
    }
    for (file, meta_path) in files {
        let Some(agent) = agent_id_of(&file).map(str::to_string) else {
            continue;
        };
        let name = format!("agent-{agent}");
        if s.subagents.iter().any(|x| x.name == name) {
            continue;
        }
        let meta = meta_path.as_deref().and_then(read_agent_meta);
        let meta_str = |k: &str| meta_field(meta.as_ref(), k);
        let tool_call_id = meta_str("toolUseId").or_else(|| link_of(&agent));
        let description = meta_str("description")
            .or_else(|| {
                tool_call_id
                    .as_deref()
                    .and_then(|t| calls.get(t))
                    .and_then(|i| i.get("description"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .or_else(|| meta_str("agentType"))
            .or_else(|| {
                // Claude Code's own compaction runs as an `acompact-*` agent.
                agent
                    .starts_with("acompact-")
                    .then(|| "context compaction summary".to_string())
            });
        let mut child = load_child(owner, &file, &format!("{id}/{name}"), &parent_uid, &spill);
        if meta.is_none() {
            unparsed_agent_meta(meta_path.as_deref(), &mut child, &mut s.warnings);
        }
        if let Some(d) = &description {
            child.title = Some(d.clone());
        }
        if let Some(m) = &meta_path {
            child.source.paths.push(m.clone());
        }
        s.subagents.push(Subagent {
            name,
            unified_id: None,
            description,
            tool_call_id,
            session: Some(Box::new(child)),
        });
    }
    if !only_sidechains {
        let known: Vec<String> = s.subagents.iter().map(|x| x.name.clone()).collect();
        let inline = session::inline_subagents(owner, &parsed, id, &known);
        s.subagents.extend(inline);
    }
    s
}

/// A subagent transcript file: every record is a sidechain record, all of them its own.
fn load_child(agent: Agent, path: &Path, id: &str, parent_uid: &str, spill: &Path) -> Session {
    let parsed = session::parse_file(path);
    let members: Vec<usize> = (0..parsed.recs.len()).collect();
    session::assemble(
        &parsed,
        session::Shape {
            agent,
            id: id.to_string(),
            paths: vec![path.to_path_buf()],
            spill_dir: Some(spill.to_path_buf()),
            parent: Some(parent_uid.to_string()),
            members: &members,
            whole_file: true,
        },
    )
}

/// One session file of an agent that writes Claude Code's records with habits of its own
/// (iFlow CLI): each line that is JSON goes through `translate`, which gives the records
/// Claude Code would have written for it, and the session is built from those as from a
/// file of this format. The file has no subagents beside it and no spilled outputs.
pub fn load_translated(
    agent: Agent,
    path: &Path,
    id: &str,
    translate: &mut dyn FnMut(Value) -> Vec<Value>,
) -> Session {
    let parsed = session::parse_file_translated(path, translate);
    let members: Vec<usize> = (0..parsed.recs.len()).collect();
    session::assemble(
        &parsed,
        session::Shape {
            agent,
            id: id.to_string(),
            paths: vec![path.to_path_buf()],
            spill_dir: None,
            parent: None,
            members: &members,
            whole_file: true,
        },
    )
}

/// One session from JSON records given in order, as the records of a file of this format
/// are read (Kode's JSON-array logs, each array element a record); `path` is the file they
/// came from, `parent` the unified id of the session this one is a subagent of.
pub fn load_objects(
    agent: Agent,
    id: &str,
    path: &Path,
    objects: impl IntoIterator<Item = Result<Vec<u8>, String>>,
    parent: Option<String>,
) -> Session {
    let parsed = session::parse_objects(objects);
    let members: Vec<usize> = (0..parsed.recs.len()).collect();
    session::assemble(
        &parsed,
        session::Shape {
            agent,
            id: id.to_string(),
            paths: vec![path.to_path_buf()],
            spill_dir: None,
            parent,
            members: &members,
            whole_file: true,
        },
    )
}

#[cfg(test)]
mod fidelity;
#[cfg(test)]
mod tests;
