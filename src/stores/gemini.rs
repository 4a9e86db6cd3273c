//! Google Gemini CLI chats: `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/` (home `~`).
//!
//! Two generations live side by side (see `docs/formats.md`, section 3):
//!
//! ```text
//! tmp/<slug or sha256>/chats/session-<ts>-<id8>.jsonl   line 1 metadata, then records (≥ 2026-04)
//! tmp/<slug or sha256>/chats/session-<ts>-<id8>.json    one whole ConversationRecord (before)
//! tmp/<slug>/chats/<parent id>/<agent id>.jsonl         a subagent's chat (`.json` before 2026-04)
//! tmp/<slug>/chats/skill-extraction-<id8>/<agent id>.*  the memory service's extraction agent
//! ```
//!
//! Where Gemini CLI writes them (google-gemini/gemini-cli at commit
//! 5411f113cafae26161b4969b0237b8e1e024e2c2): `ChatRecordingService.initialize` in
//! `packages/core/src/services/chatRecordingService.ts` puts a chat of `kind: "subagent"` in
//! `chats/<sanitizeFilenamePart(parentSessionId)>/<agent id>.jsonl` (`.json` at dcf5afafda,
//! before the JSONL migration f744913584), and a main chat in `chats/session-…`;
//! `LocalAgentExecutor.executionContext` in `packages/core/src/agents/local-executor.ts` sets
//! `parentSessionId` to the parent's own parent id or else its prompt id, so every subagent of
//! a session, however deep, lands in the top-level session's folder; `buildAgentLoopContext`
//! in `packages/core/src/services/memoryService.ts` runs the skill-extraction agent under the
//! prompt id `skill-extraction-<8 hex>`, which no chat ever has; and
//! `deleteSubagentSessionDirAndArtifactsAsync` in `packages/core/src/utils/sessionOperations.ts`
//! treats both `.json` and `.jsonl` in such a folder as chats. The A2A server passes its
//! fixed task id `'a2a-server'` as the session id (`loadConfig` in
//! `packages/a2a-server/src/http/app.ts` and `src/config/config.ts`), so its chats share one.
//!
//! Design decisions and why:
//! - **The JSONL file is a log of edits, replayed in order.** A message record whose `id` was
//!   seen before replaces that message where it stands (Gemini re-appends a message whenever
//!   its tool statuses or tokens change, last one wins); `{"$set":{..}}` patches metadata and
//!   `$set.messages` replaces the whole list; `{"$rewindTo": id}` drops that message and all
//!   after it. Replaying this way gives exactly one version of each message, so usage is
//!   counted once per id with no extra bookkeeping.
//! - **A rewind keeps what it dropped** as a [`Branch`] holding the whole conversation as it
//!   stood before the rewind (root to leaf), so nothing the user saw disappears from the mount.
//! - **Call and result share a record**, so a tool call carries its output
//!   ([`ToolCall::output`]): the `functionResponse` output/error the model saw, else the
//!   `resultDisplay` string the user saw.
//! - **Input tokens exclude cached ones.** Gemini's `tokens.input` is the prompt count
//!   *including* `tokens.cached`; sessfs counts cache reads apart, as pricing expects.
//! - **cwd is never guessed**: the slug's entry in `~/.gemini/projects.json`, else the
//!   `.project_root` marker in the project directory; old sha256 directories have neither.
//! - **Every chat file is a session or a subagent.** Every `.json`/`.jsonl` in `chats/` is a
//!   chat (a `.json` beside the `.jsonl` of the same name is the legacy file Gemini migrated
//!   and is left out). The chats in `chats/<folder>/` are [`Subagent`]s of the chat whose id
//!   names the folder, loaded with the same parser; a folder no chat names (skill
//!   extraction, or a chat deleted by hand) is a session of its own, `orphaned`, with those
//!   chats as its subagents, the way Claude Code's orphaned subagent sets are shown.
//! - **Two chats never share a name**: where several files carry one `sessionId`, the
//!   largest keeps it and the others get `@<file tag>` (the minute in their file name), so
//!   the one holding the conversation is the one found under the plain id.
//! - **A record sessfs cannot read is kept**: a line, `$set.messages` entry or legacy message
//!   that is JSON of another shape (or of an unknown `type`) is counted, one warning per
//!   kind of problem ([`kit::Unparsed`]), and its raw text is shown where it stood, as context
//!   labelled `unparsed record`; a legacy document that is not JSON at all is shown whole.
//!   A line that holds no JSON value at all is counted by the shared line reader and its
//!   text kept in the session's `unparsed.txt`, as for every JSONL store.
//! - **The environment Gemini CLI sends first is context, not a prompt.** A chat that
//!   records the client's initial history (the A2A server's) begins with a `user` message
//!   the client wrote, `<session_context>\nThis is the Gemini CLI. We are setting up the
//!   context for our chat.…` (`getEnvironmentContext` in
//!   `packages/core/src/utils/environmentContext.ts` at 04fbf507; older builds and the Qwen
//!   Code fork write the same sentence without the tag). It is collapsed context labelled
//!   `session context`: never a turn or the title.
//! - Records are parsed into typed, borrowed structs; only tool arguments, results and
//!   content parts (free-form by nature) are `Value`s.

use super::{jsonl, kit, Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    unified_id, Agent, Branch, Message, MessageKind, Role, Session, Subagent, TokenUsage, ToolCall,
};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

/// Legacy `.json` documents larger than this are not parsed.
const MAX_JSON_BYTES: u64 = 256 << 20;
/// The chat format version sessfs was written against (files carry none yet; a `version`
/// above this costs a warning).
const KNOWN_VERSION: u64 = 1;
/// Subagent chats nested deeper than this are not loaded.
const MAX_NESTING: usize = 8;

pub fn candidates(env: &Env) -> Vec<Root> {
    kit::roots(
        env,
        Agent::Gemini,
        &kit::Places {
            env: &[("GEMINI_CLI_HOME", ".gemini/tmp")],
            defaults: &[".gemini/tmp"],
            spec: &[".gemini/sessions"],
        },
    )
}

pub struct GeminiStore {
    base: Base,
}

impl GeminiStore {
    pub fn new(roots: Vec<Root>) -> GeminiStore {
        GeminiStore {
            base: Base::new(Agent::Gemini, roots),
        }
    }
}

impl Store for GeminiStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for chats in chats_dirs(&root.path) {
                list_chats(&chats, i, &mut out);
            }
        }
        split_shared_ids(&mut out);
        out
    }

    /// A chat's id comes from its own first line (or the top of a legacy document), else
    /// its name: a write keeps the listing while that still gives the id listed. An agent
    /// writing one chat then costs no listing (which reads the top of every chat).
    fn keeps_listing(&self, listed: &Listed) -> bool {
        listed_id(&listed.path) == listed.id
    }

    /// The listing reads each root and its project directories (where a `chats/` may
    /// appear), every `chats/` directory and the directories in it (subagent folders), and
    /// the top of every chat; each session is versioned by its chat files and its subagent
    /// folder (its [`Listed::sources`]).
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            glance_dirs(&root.path, &mut g.dirs);
        }
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        let mut s = if listed.path.is_dir() {
            load_folder(&listed.path, &listed.id)
        } else {
            load_chat(&listed.path, None, 0, Some(&listed.id))
        };
        set_cwd(&mut s, project_cwd(&listed.path));
        s
    }
}

// ---------------------------------------------------------------------------------------
// Listing

/// The `chats/` directories under a root: the root may be `tmp/` (the default), one
/// project directory, or a `chats/` directory itself.
pub(super) fn chats_dirs(root: &Path) -> Vec<PathBuf> {
    if kit::file_name(root) == "chats" {
        return vec![root.to_path_buf()];
    }
    if root.join("chats").is_dir() {
        return vec![root.join("chats")];
    }
    let mut out: Vec<PathBuf> = kit::subdirs(root)
        .into_iter()
        .map(|d| d.join("chats"))
        .filter(|d| d.is_dir())
        .collect();
    // The spec layout keeps session files directly in the root.
    if out.is_empty() && root.is_dir() {
        out.push(root.to_path_buf());
    }
    out
}

/// The directories a listing of `root` reads (shared with Qwen Code, whose tree is
/// Gemini's): the root and its project directories (where a `chats/` may appear), every
/// `chats/` directory and the folders in it.
pub(super) fn glance_dirs(root: &Path, out: &mut Vec<PathBuf>) {
    if !root.is_dir() {
        return;
    }
    out.push(root.to_path_buf());
    out.extend(kit::subdirs(root));
    for chats in chats_dirs(root) {
        out.extend(kit::subdirs(&chats));
        out.push(chats);
    }
}

/// A chat file: in a `chats/` directory every `.jsonl` and `.json` is one (main chats are
/// `session-*`; a subagent whose parent was unknown is `<id>.json[l]`); the spec layout (a
/// root holding session files directly) keeps the `session-` prefix rule.
fn is_chat_file(p: &Path, any_name: bool) -> bool {
    let n = kit::file_name(p);
    (any_name || n.starts_with("session-")) && (n.ends_with(".jsonl") || n.ends_with(".json"))
}

/// A file name without its `.jsonl` / `.json` extension.
fn stem(name: &str) -> &str {
    name.strip_suffix(".jsonl")
        .or_else(|| name.strip_suffix(".json"))
        .unwrap_or(name)
}

/// The directory Gemini keeps a session's subagent chats in: the id with every character
/// outside `[A-Za-z0-9_-]` replaced by `_` (`sanitizeFilenamePart`).
fn folder_name(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Chat files of one directory, sorted, a legacy `.json` left out when the `.jsonl` of the
/// same name is beside it (Gemini migrates a legacy chat to `<name>.jsonl` when it is
/// resumed, and leaves the old file).
fn chat_files(dir: &Path, any_name: bool) -> Vec<PathBuf> {
    chats_among(&kit::typed_entries(dir), any_name)
}

/// [`chat_files`] of entries already listed.
fn chats_among(entries: &[(PathBuf, kit::EntryType)], any_name: bool) -> Vec<PathBuf> {
    let files: Vec<&PathBuf> = entries
        .iter()
        .filter(|(p, t)| *t == kit::EntryType::File && is_chat_file(p, any_name))
        .map(|(p, _)| p)
        .collect();
    let migrated: HashSet<&str> = files
        .iter()
        .filter_map(|p| kit::file_name(p).strip_suffix(".jsonl"))
        .collect();
    files
        .into_iter()
        .filter(|p| {
            !kit::file_name(p)
                .strip_suffix(".json")
                .is_some_and(|s| migrated.contains(s))
        })
        .cloned()
        .collect()
}

/// Sessions of one `chats/` directory: every chat file, and every subdirectory that names
/// no chat of this directory (its chats become the subagents of a session named after the
/// directory, see [`load_folder`]).
fn list_chats(chats: &Path, root: usize, out: &mut Vec<Listed>) {
    let any_name = kit::file_name(chats) == "chats";
    let entries = kit::typed_entries(chats);
    let mut owned: HashSet<String> = HashSet::new();
    for path in chats_among(&entries, any_name) {
        let id = listed_id(&path);
        let folder = folder_name(&id);
        let children = chats.join(&folder);
        let mut l = Listed::file(id, path, root);
        if children.is_dir() {
            l.sources.push(children.clone());
            l.sources.extend(chat_files(&children, true));
        }
        owned.insert(folder);
        out.push(l);
    }
    if !any_name {
        return;
    }
    for (dir, t) in entries {
        let name = kit::file_name(&dir).to_string();
        if t != kit::EntryType::Dir || owned.contains(&name) || name.starts_with('.') {
            continue;
        }
        let children = chat_files(&dir, true);
        if children.is_empty() {
            continue;
        }
        let mut l = Listed::file(name, dir, root);
        l.sources.extend(children);
        out.push(l);
    }
}

/// Two chat files with one `sessionId` (Gemini CLI's A2A server gives every chat the id
/// `a2a-server`) must not share a name, and the one holding the conversation must keep the
/// plain id: of each such group the largest file keeps it, the others become
/// `<id>@<file tag>` ([`file_tag`]). Folder sessions keep their names (the tree tells a
/// clash apart with `~2`).
fn split_shared_ids(out: &mut [Listed]) {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, l) in out.iter().enumerate() {
        if !l.path.is_dir() {
            groups.entry(l.id.clone()).or_default().push(i);
        }
    }
    for (id, idx) in groups {
        if idx.len() < 2 {
            continue;
        }
        let sizes: Vec<u64> = idx
            .iter()
            .map(|&i| std::fs::metadata(&out[i].path).map_or(0, |m| m.len()))
            .collect();
        // Largest first; of equal sizes the first path.
        let Some(keep) = (0..idx.len()).min_by(|&a, &b| {
            sizes[b]
                .cmp(&sizes[a])
                .then_with(|| out[idx[a]].path.cmp(&out[idx[b]].path))
        }) else {
            continue;
        };
        for (k, &i) in idx.iter().enumerate() {
            if k != keep {
                out[i].id = format!("{id}@{}", file_tag(&out[i].path, &id));
            }
        }
    }
}

/// What tells a chat file apart from another with the same id: its name without the
/// `session-` prefix, the extension and the `-<first 8 characters of the id>` tail, which
/// leaves the minute it was started (`session-2026-05-19T06-06-a2a-serv.jsonl` →
/// `2026-05-19T06-06`); the whole file name where that leaves nothing.
fn file_tag(path: &Path, id: &str) -> String {
    let name = kit::file_name(path);
    let body = stem(name);
    let body = body.strip_prefix("session-").unwrap_or(body);
    let short: String = folder_name(id).chars().take(8).collect();
    let tag = body
        .strip_suffix(short.as_str())
        .map_or(body, |t| t.trim_end_matches('-'));
    if tag.is_empty() || tag == id {
        name.to_string()
    } else {
        tag.to_string()
    }
}

/// The session id without a full parse: the first line's `sessionId` for JSONL, the
/// `sessionId` key near the top of a legacy document (it is written first), else the name.
fn listed_id(path: &Path) -> String {
    let name = kit::file_name(path);
    let jsonl = name.ends_with(".jsonl");
    let mut head = Vec::new();
    if let Ok(f) = kit::open_file(path) {
        // The JSONL header line, however long (it may list `directories`); a legacy
        // document starts with its `sessionId`.
        let mut r = std::io::BufReader::new(f.take(if jsonl { 1 << 20 } else { 4096 }));
        let _ = if jsonl {
            r.read_until(b'\n', &mut head)
        } else {
            r.read_to_end(&mut head)
        };
    }
    let jsonl_header = || {
        let h: Header<'_> = serde_json::from_slice(&head).ok()?;
        Some(h.session_id.into_owned()).filter(|s| !s.is_empty())
    };
    let json_key = || {
        let text = String::from_utf8_lossy(&head);
        let at = text.find("\"sessionId\"")? + "\"sessionId\"".len();
        let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
        let rest = rest.strip_prefix('"')?;
        let end = rest.find(['"', '\\'])?;
        Some(rest[..end].to_string()).filter(|s| !s.is_empty())
    };
    let found = if jsonl { jsonl_header() } else { json_key() };
    found.unwrap_or_else(|| {
        name.trim_end_matches(".jsonl")
            .trim_end_matches(".json")
            .to_string()
    })
}

#[derive(Deserialize)]
struct Header<'a> {
    #[serde(
        rename = "sessionId",
        default,
        borrow,
        deserialize_with = "kit::cow_str"
    )]
    session_id: Cow<'a, str>,
}

// ---------------------------------------------------------------------------------------
// cwd

/// A chat and its subagents' chats share their project.
fn set_cwd(s: &mut Session, cwd: Option<String>) {
    for sub in &mut s.subagents {
        if let Some(child) = &mut sub.session {
            set_cwd(child, cwd.clone());
        }
    }
    s.cwd = cwd;
}

#[derive(Deserialize, Default)]
struct Projects {
    #[serde(default)]
    projects: BTreeMap<String, String>,
}

/// The most of a `.project_root` marker read: a path is never longer.
const MAX_MARKER: u64 = 4096;

/// The project root of a chat file at `<tmp>/<slug>/chats/<file>`: the path registered for
/// `<slug>` in `<tmp>/../projects.json`, else the absolute path in `<tmp>/<slug>/.project_root`
/// (a Windows one too, `c:\users\…`, as Gemini CLI writes it there, for stores copied from
/// Windows or read through WSL).
fn project_cwd(chat_file: &Path) -> Option<String> {
    let project = chat_file.parent()?.parent()?;
    let slug = kit::file_name(project);
    let registry = project.parent()?.parent()?.join("projects.json");
    if let Ok(bytes) = kit::read_file(&registry) {
        if let Ok(p) = serde_json::from_slice::<Projects>(&bytes) {
            if let Some((path, _)) = p.projects.iter().find(|(_, s)| s.as_str() == slug) {
                return Some(path.clone());
            }
        }
    }
    // A path, so a few KiB at most: never more, whatever the marker has become (a link to
    // `/dev/zero` made the whole mount grow without bound).
    let mut marker = String::new();
    kit::open_file(&project.join(".project_root"))
        .ok()?
        .take(MAX_MARKER)
        .read_to_string(&mut marker)
        .ok()?;
    let marker = marker.trim();
    (Path::new(marker).is_absolute() || is_windows_absolute(marker)).then(|| marker.to_string())
}

/// `c:\dir`, `C:/dir` or `\\server\share`: absolute on Windows, relative to `Path` here.
fn is_windows_absolute(p: &str) -> bool {
    let b = p.as_bytes();
    let drive =
        b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'\\' | b'/');
    drive || p.starts_with("\\\\")
}

// ---------------------------------------------------------------------------------------
// Records

/// A message record's `type`; one sessfs does not know is shown as raw text.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum MsgType {
    User,
    Gemini,
    Info,
    Warning,
    Error,
}

impl MsgType {
    fn of(s: &str) -> Option<MsgType> {
        Some(match s {
            "user" => MsgType::User,
            "gemini" => MsgType::Gemini,
            "info" => MsgType::Info,
            "warning" => MsgType::Warning,
            "error" => MsgType::Error,
            _ => return None,
        })
    }
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
enum ToolStatus {
    Success,
    Error,
    Cancelled,
    #[serde(other)]
    Other,
}

/// One JSONL line, or one element of a legacy document's `messages`: metadata, a patch, a
/// rewind or a message; which one is told by the fields present.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Record<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    session_id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    start_time: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    last_updated: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    summary: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    kind: Cow<'a, str>,
    /// Gemini writes no format version today; one that appears is reported, not trusted.
    #[serde(default, deserialize_with = "kit::count")]
    version: u64,
    #[serde(rename = "$set", default, borrow)]
    set: Option<Box<Patch<'a>>>,
    #[serde(rename = "$rewindTo", default, borrow)]
    rewind_to: Option<Cow<'a, str>>,

    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    timestamp: Cow<'a, str>,
    #[serde(rename = "type", default, borrow, deserialize_with = "kit::cow_str")]
    ty: Cow<'a, str>,
    /// `PartListUnion`: a string, one part or a list of parts.
    #[serde(default)]
    content: Value,
    #[serde(default, borrow)]
    thoughts: Option<Vec<Thought<'a>>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCallRecord<'a>>>,
    #[serde(default)]
    tokens: Option<Tokens>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    model: Cow<'a, str>,
}

/// The body of a `{"$set": {...}}` line.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Patch<'a> {
    /// Each message is read on its own, so one that cannot be read costs only itself.
    #[serde(default, borrow)]
    messages: Option<Vec<&'a RawValue>>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    summary: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    last_updated: Cow<'a, str>,
}

/// A legacy `.json` chat: the whole `ConversationRecord`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Conversation<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    session_id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    start_time: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    last_updated: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    summary: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    kind: Cow<'a, str>,
    /// Each message is read on its own, so one that cannot be read costs only itself.
    #[serde(default, borrow)]
    messages: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct Thought<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    subject: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    description: Cow<'a, str>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolCallRecord<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    name: Cow<'a, str>,
    #[serde(default)]
    args: Value,
    /// Parts: `[{functionResponse: {id, name, response: {output | error}}}]`.
    #[serde(default)]
    result: Value,
    #[serde(default)]
    status: Option<ToolStatus>,
    /// A string, or a `{fileDiff, fileName, ...}` object for edits.
    #[serde(default)]
    result_display: Value,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    agent_id: Cow<'a, str>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct Tokens {
    #[serde(default, deserialize_with = "kit::count")]
    input: u64,
    #[serde(default, deserialize_with = "kit::count")]
    output: u64,
    #[serde(default, deserialize_with = "kit::count")]
    cached: u64,
    #[serde(default, deserialize_with = "kit::count")]
    thoughts: u64,
}

impl Tokens {
    fn usage(self) -> TokenUsage {
        TokenUsage {
            input_tokens: self.input.saturating_sub(self.cached),
            output_tokens: self.output,
            thinking_tokens: self.thoughts,
            cached_tokens: self.cached,
            cache_write_tokens: 0,
        }
    }
}

/// The environment the client sends before the first prompt: `<session_context>` and the
/// sentence it opens with, `This is the <client>. We are setting up the context for our
/// chat.` (with or without the tag, for any client name: Gemini CLI and its forks).
fn is_session_context(text: &str) -> bool {
    let t = text.trim_start();
    let t = t
        .strip_prefix("<session_context>")
        .unwrap_or(t)
        .trim_start();
    t.strip_prefix("This is the ")
        .and_then(|rest| rest.lines().next())
        .is_some_and(|first| {
            first.ends_with(". We are setting up the context for our chat.") && first.len() < 120
        })
}

// ---------------------------------------------------------------------------------------
// What cannot be read

/// A record that could not be read, as it stands in the file: collapsed context labelled
/// `unparsed record`, never a prompt or a reply.
fn unparsed_message(raw: &str) -> Message {
    Message {
        role: Role::System,
        kind: MessageKind::Context,
        label: Some("unparsed record".into()),
        content: raw.trim().to_string(),
        ..Message::default()
    }
}

// ---------------------------------------------------------------------------------------
// Replay

/// One message of the replayed conversation.
#[derive(Clone)]
struct Rec {
    id: String,
    msg: Message,
    /// `agentId` of each tool call, to link subagent chats to the call that ran them.
    agents: Vec<(String, String)>,
}

impl Rec {
    /// A record that could not be read, as its raw text.
    fn unparsed(raw: &str) -> Rec {
        Rec {
            id: String::new(),
            msg: unparsed_message(raw),
            agents: Vec::new(),
        }
    }
}

/// The state a chat file replays into.
#[derive(Default)]
struct Replay {
    session_id: String,
    start_time: Option<String>,
    last_updated: Option<String>,
    summary: Option<String>,
    kind: Option<String>,
    recs: Vec<Rec>,
    index: HashMap<String, usize>,
    branches: Vec<Branch>,
    taken: HashSet<String>,
    warnings: Vec<String>,
    unread_count: kit::Unparsed,
}

impl Replay {
    fn meta(&mut self, session_id: &str, start: &str, updated: &str, summary: &str, kind: &str) {
        let set = |field: &mut Option<String>, v: &str| {
            if !v.is_empty() {
                *field = Some(v.to_string());
            }
        };
        if !session_id.is_empty() {
            self.session_id = session_id.to_string();
        }
        set(&mut self.start_time, start);
        set(&mut self.last_updated, updated);
        set(&mut self.summary, summary);
        set(&mut self.kind, kind);
    }

    /// Replay one record; `raw` is its text, shown as it is when it cannot be read.
    fn apply(&mut self, r: Record<'_>, raw: &str, at: &str) {
        if let Some(p) = r.set {
            let p = *p;
            if let Some(messages) = p.messages {
                self.recs.clear();
                self.index.clear();
                for (i, m) in messages.into_iter().enumerate() {
                    self.raw_message(m, &format!("{at}: $set.messages[{i}]"));
                }
            }
            self.meta("", "", &p.last_updated, &p.summary, "");
        } else if let Some(target) = r.rewind_to {
            self.rewind(&target, at);
        } else if !r.ty.is_empty() || !r.id.is_empty() {
            self.message(r, raw, at);
        } else if !r.session_id.is_empty() {
            if r.version > KNOWN_VERSION {
                self.warnings.push(format!(
                    "{at}: format version {} is newer than the {KNOWN_VERSION} sessfs reads; read as version {KNOWN_VERSION}",
                    r.version
                ));
            }
            self.meta(
                &r.session_id,
                &r.start_time,
                &r.last_updated,
                &r.summary,
                &r.kind,
            );
        } else {
            self.unread(raw, "record of unknown shape", at, "");
        }
    }

    /// A message of a legacy document or a `$set.messages` checkpoint, read on its own.
    fn raw_message(&mut self, raw: &RawValue, at: &str) {
        match serde_json::from_str::<Record<'_>>(raw.get()) {
            Ok(r) => self.message(r, raw.get(), at),
            Err(e) => self.unread(raw.get(), "not a chat message", at, &e.to_string()),
        }
    }

    /// A record that cannot be read: counted under `problem` (`at` and `error` name the
    /// first), and its raw text kept where it stood, so nothing the file holds is out of
    /// sight.
    fn unread(&mut self, raw: &str, problem: &str, at: &str, error: &str) {
        self.unread_count.note("records", problem, || match error {
            "" => at.to_string(),
            e => format!("{at}: {e}"),
        });
        self.recs.push(Rec::unparsed(raw));
    }

    /// Append a message, or replace the message with its id where it stands.
    fn message(&mut self, r: Record<'_>, raw: &str, at: &str) {
        let Some(ty) = MsgType::of(&r.ty) else {
            let problem = format!("message of unknown type {:?}", r.ty.as_ref());
            self.unread(raw, &problem, at, "");
            return;
        };
        let rec = to_rec(r, ty);
        match self.index.get(&rec.id) {
            Some(&i) if !rec.id.is_empty() => self.recs[i] = rec,
            _ => {
                if !rec.id.is_empty() {
                    self.index.insert(rec.id.clone(), self.recs.len());
                }
                self.recs.push(rec);
            }
        }
    }

    /// Drop `target` and everything after it, keeping the conversation as it stood as a
    /// branch.
    fn rewind(&mut self, target: &str, at: &str) {
        let Some(&i) = self.index.get(target) else {
            self.warnings
                .push(format!("{at}: rewind to unknown message {target} ignored"));
            return;
        };
        let tail = self.recs.split_off(i);
        for r in &tail {
            self.index.remove(&r.id);
        }
        let leaf = tail.last().map(|r| r.id.clone());
        let base = format!("branch-{}", leaf.as_deref().unwrap_or("rewound"));
        let name = kit::unique_name(&mut self.taken, &base);
        let messages = self
            .recs
            .iter()
            .chain(&tail)
            .map(|r| r.msg.clone())
            .collect();
        self.branches.push(Branch {
            name,
            fork_point: self.recs.last().map(|r| r.id.clone()),
            leaf,
            messages,
        });
    }
}

fn to_rec(r: Record<'_>, ty: MsgType) -> Rec {
    let timestamp = kit::parse_rfc3339(&r.timestamp);
    let (content, mut thinking) = parts_text(&r.content);
    let native_id = Some(r.id.to_string()).filter(|s| !s.is_empty());
    let mut agents = Vec::new();
    let msg = match ty {
        MsgType::User if is_session_context(&content) => Message {
            role: Role::System,
            kind: MessageKind::Context,
            label: Some("session context".into()),
            content,
            timestamp,
            native_id,
            ..Message::default()
        },
        MsgType::User => Message {
            role: Role::User,
            content,
            timestamp,
            native_id,
            ..Message::default()
        },
        MsgType::Gemini => {
            for t in r.thoughts.iter().flatten() {
                let one = match (t.subject.trim(), t.description.trim()) {
                    ("", d) => d.to_string(),
                    (s, "") => s.to_string(),
                    (s, d) => format!("{s}\n{d}"),
                };
                if !one.is_empty() {
                    push_para(thinking.get_or_insert_with(String::new), &one);
                }
            }
            let mut tool_calls = Vec::new();
            for c in r.tool_calls.into_iter().flatten() {
                if !c.agent_id.is_empty() {
                    agents.push((c.agent_id.to_string(), c.id.to_string()));
                }
                tool_calls.push(tool_call(c));
            }
            Message {
                role: Role::Assistant,
                content,
                timestamp,
                tool_calls,
                token_usage: r.tokens.map(Tokens::usage).filter(|u| !u.is_zero()),
                thinking,
                model: Some(r.model.to_string()).filter(|m| !m.is_empty()),
                native_id,
                ..Message::default()
            }
        }
        MsgType::Info | MsgType::Warning | MsgType::Error => {
            let label = format!("{ty:?}").to_lowercase();
            Message {
                role: Role::System,
                kind: MessageKind::Event,
                content: format!("{label}: {content}"),
                timestamp,
                native_id,
                ..Message::default()
            }
        }
    };
    Rec {
        id: r.id.into_owned(),
        msg,
        agents,
    }
}

fn tool_call(c: ToolCallRecord<'_>) -> ToolCall {
    let mut outputs: Vec<String> = Vec::new();
    collect_responses(&c.result, &mut outputs);
    let mut output = outputs.join("\n");
    if output.is_empty() {
        output = match &c.result_display {
            Value::String(s) => s.clone(),
            Value::Object(o) => o
                .get("fileDiff")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            _ => String::new(),
        };
    }
    let status = c.status.unwrap_or(ToolStatus::Other);
    let finished = matches!(
        status,
        ToolStatus::Success | ToolStatus::Error | ToolStatus::Cancelled
    );
    let (output, is_error) = if finished || !output.is_empty() {
        if output.is_empty() && status == ToolStatus::Cancelled {
            output = "[cancelled]".into();
        }
        (
            Some(output),
            Some(matches!(status, ToolStatus::Error | ToolStatus::Cancelled)),
        )
    } else {
        (None, None)
    };
    ToolCall {
        tool_call_id: c.id.into_owned(),
        tool_name: c.name.into_owned(),
        input: c.args,
        output,
        is_error,
        duration_ms: None,
    }
}

/// `functionResponse.response.output` / `.error` of every part, and text parts.
pub(super) fn collect_responses(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Array(parts) => parts.iter().for_each(|p| collect_responses(p, out)),
        Value::String(s) if !s.is_empty() => out.push(s.clone()),
        Value::Object(o) => {
            if let Some(resp) = o.get("functionResponse").and_then(|f| f.get("response")) {
                for key in ["output", "error"] {
                    match resp.get(key) {
                        Some(Value::String(s)) => out.push(s.clone()),
                        Some(Value::Null) | None => {}
                        Some(other) => out.push(other.to_string()),
                    }
                }
            } else if let Some(t) = o.get("text").and_then(Value::as_str) {
                out.push(t.to_string());
            }
        }
        _ => {}
    }
}

/// The text of a `PartListUnion` and the text of its `thought` parts. Text parts are
/// joined; inline data becomes a placeholder, file data a reference.
pub(super) fn parts_text(v: &Value) -> (String, Option<String>) {
    let mut text = String::new();
    let mut thinking: Option<String> = None;
    let mut one = |p: &Value| {
        if let Some(t) = p.get("text").and_then(Value::as_str) {
            if p.get("thought").and_then(Value::as_bool) == Some(true) {
                push_para(thinking.get_or_insert_with(String::new), t);
            } else {
                text.push_str(t);
            }
        } else if let Some(d) = p.get("inlineData") {
            let mime = d.get("mimeType").and_then(Value::as_str);
            let kind = match mime {
                Some(m) if !m.starts_with("image/") => "attachment",
                _ => "image",
            };
            let data = d.get("data").and_then(Value::as_str);
            push_para(&mut text, &kit::base64_placeholder(kind, mime, data));
        } else if let Some(f) = p.get("fileData") {
            let uri = f.get("fileUri").and_then(Value::as_str).unwrap_or("?");
            push_para(&mut text, &format!("[file: {uri}]"));
        }
    };
    match v {
        Value::String(s) => return (s.clone(), None),
        Value::Array(parts) => parts.iter().for_each(&mut one),
        Value::Object(_) => one(v),
        _ => {}
    }
    (text, thinking)
}

pub(super) fn push_para(buf: &mut String, s: &str) {
    if !buf.is_empty() {
        buf.push_str("\n\n");
    }
    buf.push_str(s);
}

// ---------------------------------------------------------------------------------------
// Loading

/// Parse a subagent's chat file (or any chat, owning the folder named by its id).
fn load_file(path: &Path, parent: Option<String>, depth: usize) -> Session {
    load_chat(path, parent, depth, None)
}

/// Parse one chat file. `listed` is the id the listing gave a top-level chat: a chat whose
/// id was given a file tag ([`split_shared_ids`]) shares its id with a larger chat, which
/// owns the subagent folder of that id.
fn load_chat(path: &Path, parent: Option<String>, depth: usize, listed: Option<&str>) -> Session {
    let mut replay = Replay::default();
    let mut unread_lines = Vec::new();
    let name = kit::file_name(path).to_string();
    let legacy = name.ends_with(".json");
    if legacy {
        read_legacy(path, &mut replay);
    } else {
        let scanned = jsonl::read_lines(path, |n, line| {
            let at = format!("line {n}");
            match serde_json::from_slice::<Record<'_>>(line) {
                Ok(r) => replay.apply(r, &String::from_utf8_lossy(line), &at),
                // One JSON value of a shape sessfs cannot read: kept as text. Anything
                // else goes back to the line reader, which recovers values written back
                // to back and reports what is no JSON at all.
                Err(e) if serde_json::from_slice::<IgnoredAny>(line).is_ok() => {
                    let raw = String::from_utf8_lossy(line);
                    replay.unread(&raw, "not a chat record", &at, &e.to_string());
                }
                Err(e) => return Err(format!("not a chat record: {e}")),
            }
            Ok(())
        });
        replay.warnings.extend(scanned.warnings);
        unread_lines = scanned.unparsed;
    }

    let id = if replay.session_id.is_empty() {
        stem(&name).to_string()
    } else {
        replay.session_id.clone()
    };
    let mut b = kit::SessionBuilder::new(Agent::Gemini, id.clone());
    b.s.parent = parent;
    b.s.source.paths = vec![path.to_path_buf()];
    b.s.source.format = if legacy {
        "gemini-json"
    } else {
        "gemini-jsonl"
    }
    .into();
    b.s.title = replay.summary.clone().filter(|s| !s.trim().is_empty());
    b.s.created_at = replay.start_time.as_deref().and_then(kit::parse_rfc3339);
    b.s.updated_at = replay.last_updated.as_deref().and_then(kit::parse_rfc3339);
    if replay.kind.as_deref() == Some("subagent") {
        b.s.tags.push("subagent".into());
    }
    let unread = replay.unread_count.warnings();
    for w in replay.warnings.drain(..).chain(unread) {
        b.warn(w);
    }
    if let Some(file) = jsonl::unparsed_file(&unread_lines) {
        b.warn(jsonl::unparsed_warning(unread_lines.len()));
        b.s.extra_files.push(file);
    }
    let mut agent_calls: Vec<(String, String)> = Vec::new();
    for r in replay.recs {
        let mut m = r.msg;
        if m.token_usage.is_some() && !r.id.is_empty() && !b.usage_once(&r.id) {
            m.token_usage = None;
        }
        agent_calls.extend(r.agents);
        b.push(m);
    }
    b.s.branches = replay.branches;

    // Subagent chats: `chats/<this id>/<child id>.json[l]`.
    let children = path.parent().map(|d| d.join(folder_name(&id)));
    let owner = listed.is_none_or(|l| l == id);
    if let Some(dir) = children.filter(|d| owner && d.is_dir()) {
        if depth >= MAX_NESTING {
            b.warn(format!(
                "subagents nested deeper than {MAX_NESTING} levels not loaded"
            ));
        } else {
            let uid = unified_id(Agent::Gemini, &id);
            let subs = load_children(&dir, &uid, depth + 1, &agent_calls);
            b.s.subagents.extend(subs);
        }
    }
    b.finish()
}

/// The chats of a subagent folder, each linked to the parent's tool call whose `agentId`
/// names it.
fn load_children(
    dir: &Path,
    parent_uid: &str,
    depth: usize,
    parent_calls: &[(String, String)],
) -> Vec<Subagent> {
    chat_files(dir, true)
        .iter()
        .map(|f| {
            let child = load_file(f, Some(parent_uid.to_string()), depth);
            let call = parent_calls
                .iter()
                .find(|(agent, _)| *agent == child.id)
                .map(|(_, call)| call.clone());
            Subagent {
                name: child.id.clone(),
                unified_id: None,
                description: child.title.clone(),
                tool_call_id: call,
                session: Some(Box::new(child)),
            }
        })
        .collect()
}

/// A `chats/<name>/` folder that no chat of its project names: Gemini CLI's memory service
/// runs its skill-extraction agent under a prompt id of its own (`skill-extraction-<id>`)
/// that is never a chat, and a chat deleted by hand can leave its subagents' folder. The
/// folder is a session of its own (id = the folder name, `orphaned`), with one event naming
/// what it holds and every chat in it nested under `subagents/`, as in a live session.
fn load_folder(dir: &Path, id: &str) -> Session {
    let mut b = kit::SessionBuilder::new(Agent::Gemini, id);
    b.s.orphaned = true;
    b.s.source.paths = vec![dir.to_path_buf()];
    let uid = unified_id(Agent::Gemini, id);
    let subs = load_children(dir, &uid, 1, &[]);
    let mut lines = Vec::new();
    for sub in &subs {
        let Some(child) = &sub.session else { continue };
        b.s.source.paths.extend(child.source.paths.iter().cloned());
        if b.s.source.format.is_empty() {
            b.s.source.format = child.source.format.clone();
        }
        for t in [child.created_at, child.updated_at].into_iter().flatten() {
            if b.s.created_at.is_none_or(|c| t < c) {
                b.s.created_at = Some(t);
            }
            if b.s.updated_at.is_none_or(|u| t > u) {
                b.s.updated_at = Some(t);
            }
        }
        lines.push(format!("- subagents/{}/", sub.name));
    }
    b.s.title = Some(format!("subagent chats of {id}"));
    let at = b.s.created_at;
    b.event(
        format!(
            "No chat of this project is named {id}; the chats Gemini CLI kept under chats/{}/ are its subagents:\n{}",
            kit::file_name(dir),
            lines.join("\n")
        ),
        at,
    );
    b.s.subagents = subs;
    b.finish()
}

fn read_legacy(path: &Path, replay: &mut Replay) {
    let bytes = match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_JSON_BYTES => {
            replay
                .warnings
                .push(format!("{} bytes, too large to parse, skipped", m.len()));
            return;
        }
        _ => match kit::read_file(path) {
            Ok(b) => b,
            Err(e) => {
                replay.warnings.push(format!("cannot read: {e}"));
                return;
            }
        },
    };
    let text = String::from_utf8_lossy(&bytes);
    match serde_json::from_str::<Conversation<'_>>(&text) {
        Ok(c) => {
            replay.meta(
                &c.session_id,
                &c.start_time,
                &c.last_updated,
                &c.summary,
                &c.kind,
            );
            for (i, m) in c.messages.into_iter().enumerate() {
                replay.raw_message(m, &format!("messages[{i}]"));
            }
        }
        // A document cut short or not a conversation at all: its text is all there is.
        Err(e) => replay.unread(
            &text,
            "not a Gemini conversation",
            "the document",
            &e.to_string(),
        ),
    }
}

#[cfg(test)]
mod tests;
