//! GitHub Copilot Chat in VS Code: the editor's own chat sessions, one file per session in
//! the workspace's storage, rewritten (flat JSON) or appended to (mutation log) while the
//! editor runs.
//!
//! The chat view belongs to VS Code itself; the Copilot Chat extension answers through it and
//! leaves its own records in each reply's `result.metadata`. Read from their source:
//!
//! - microsoft/vscode `047238f9fe1b7661362b3f27cfbddd503339cb1b`:
//!   `src/vs/workbench/contrib/chat/common/model/chatSessionStore.ts` (where sessions live:
//!   `workspaceStorage/<id>/chatSessions/<sessionId>.json` before 1.109, `<sessionId>.jsonl`
//!   since; `globalStorage/emptyWindowChatSessions/` for a window without a folder;
//!   `workspaceStorage/no-workspace/chatSessions/` before that; the log wins when both exist;
//!   the index of sessions lives in `state.vscdb`, which sessfs never opens);
//!   `.../model/objectMutationLog.ts` (the log: one JSON entry a line, `kind` 0 = the whole
//!   state, 1 = set a path, 2 = push onto (or cut) an array at a path, 3 = delete a path; a
//!   log is rewritten from a fresh kind-0 entry after 1024 entries);
//!   `.../model/chatSessionOperationLog.ts` (what the log holds: the version 3 document, a
//!   Markdown reply part stored as its bare `{value}`);
//! - microsoft/vscode `00817b7f8e1cfff7ee8ff8ac8d23b50e4c131ac5`:
//!   `.../model/chatModel.ts` (`ISerializableChatData1..3`: no `version` and `message` as a
//!   plain string in the oldest files, `version: 2` with `computedTitle`, `version: 3` with
//!   `customTitle`, `workingDirectory`, `pendingRequests`; `ISerializableChatRequestData`:
//!   `requestId`, `message`, `variableData`, `response` parts, `result`, `modelId`,
//!   `modelState`, `isCanceled`, `isHidden`/`shouldBeRemovedOnSend`, and since 2026 the usage
//!   fields `promptTokens`, `completionTokens`, `modelTotals`, `copilotCredits`);
//!   `.../chatService/chatService.ts` (the reply parts: `markdownContent`, `thinking`,
//!   `toolInvocationSerialized` with `resultDetails` and `toolSpecificData`, `textEditGroup`,
//!   `codeblockUri`, `inlineReference`, `progressMessage`, `warning`, `confirmation`,
//!   `elicitationSerialized`, `multiDiffData`, …; `IChatUsage`);
//!   `.../tools/languageModelToolsService.ts` (`IToolResultInputOutputDetails`: `input` text
//!   and `output` parts, a plain string in older builds);
//! - microsoft/vscode-copilot-chat `02ecb5d7431ff91fc4efb40d992d66a36efce171`:
//!   `src/extension/prompt/common/conversation.ts` (`IResultMetadata`: `toolCallRounds`,
//!   `toolCallResults`, `summary`, and `promptTokens`/`outputTokens` in some versions) and
//!   `35bfd52a71a1e34b1e30fcfe397392c14fe0b115` `.../toolCallRound.ts` (a round's `response`,
//!   `toolCalls` with `name`/`arguments`/`id`, `thinking` and per-call `usage`).
//!
//! Design decisions and why:
//! - **Roots are the editors' `User/workspaceStorage` and
//!   `User/globalStorage/emptyWindowChatSessions` directories** (Code, Code - Insiders,
//!   VSCodium under `$XDG_CONFIG_HOME` or `~/.config`, the same under `~/Library/Application
//!   Support`, and the remote servers' `~/.vscode-server*/data/User`), not the whole `User`
//!   directory, which the mount would then watch with its file history and every
//!   extension's storage. Listing reads directory and file names only:
//!   `workspaceStorage/*/chatSessions/*.json[l]` and `emptyWindowChatSessions/*.json[l]`; the
//!   file name is the session id. A `--store` path may also be a `User` directory, one
//!   workspace's directory or a `chatSessions` directory.
//! - **Only session files and `workspace.json` are opened.** `state.vscdb` (the session
//!   index, and other extensions' keys and tokens), secret storage and every other
//!   globalStorage file are never read.
//! - **A read never renders half a file.** The flat file is replaced whole and the log is
//!   appended to while the editor runs. A file that does not parse (cut JSON, a log whose
//!   last line has no newline) is read again once after a short pause when it changed in
//!   the last two seconds; if it is still cut, what came before the cut is kept (every
//!   complete request of a flat file, every complete entry of a log), the cut text is shown
//!   raw and a warning names the file.
//! - **One message list per request**: the prompt (with its attachments' names as context),
//!   then the reply parts in order: text, reasoning, each tool invocation as a call holding
//!   its own output (call and result are one part), each edit group as an `edit` call whose
//!   output is the replacement text, notices as events. The extension's
//!   `result.metadata.toolCallRounds`/`toolCallResults` give the model's side of the same
//!   calls (the name and arguments it sent, the text it got back): a round's call is paired
//!   with the reply's invocation by id, else in order when both lists have as many left;
//!   calls only the metadata holds are added after the reply, so nothing is shown twice.
//! - **Usage once per request**, from the most precise source the request holds: the rounds'
//!   per-call `usage`, else `modelTotals`, else `promptTokens`/`completionTokens`, else
//!   `result.metadata.promptTokens`/`outputTokens`; never two of them.

use super::kit::{self, EntryType, SessionBuilder};
use super::{Base, Env, Listed, Root, Store};
use crate::model::{Agent, Message, MessageKind, Role, Session, TokenUsage, ToolCall};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Larger session files are not parsed (a whole file is held while parsing).
const MAX_JSON_BYTES: u64 = 256 << 20;
/// Longest raw text of an unparsable record kept in the transcript.
const MAX_RAW_CHARS: usize = 64 << 10;
/// A file this recently changed that does not parse may be mid-write: read it once more.
const FRESH: Duration = Duration::from_secs(2);
const REREAD_PAUSE: Duration = Duration::from_millis(30);

/// VS Code builds that host Copilot Chat, by their user-data directory name.
const EDITORS: &[&str] = &["Code", "Code - Insiders", "VSCodium"];
const SESSIONS: &str = "chatSessions";
const EMPTY_WINDOW: &str = "emptyWindowChatSessions";

/// Where each VS Code build keeps chat sessions: its `User/workspaceStorage` and
/// `User/globalStorage/emptyWindowChatSessions` directories. Not the whole `User`
/// directory: the mount watches its roots recursively, and `User/` also holds the local
/// file history and every extension's storage.
pub fn candidates(env: &Env) -> Vec<Root> {
    let agent = Agent::CopilotChat;
    let mut users = Vec::new();
    let (config, how) = match env.path_var("XDG_CONFIG_HOME") {
        Some(p) => (p, "XDG_CONFIG_HOME"),
        None => (env.home.join(".config"), "default"),
    };
    for editor in EDITORS {
        users.push((config.join(editor).join("User"), how));
    }
    let mac = env.home.join("Library/Application Support");
    for editor in EDITORS {
        users.push((mac.join(editor).join("User"), "macOS"));
    }
    for server in [
        ".vscode-server",
        ".vscode-server-insiders",
        ".vscodium-server",
    ] {
        users.push((env.home.join(server).join("data/User"), "remote"));
    }
    let mut out = Vec::new();
    for (user, how) in users {
        out.push(Root::new(agent, user.join("workspaceStorage"), how));
        out.push(Root::new(
            agent,
            user.join("globalStorage").join(EMPTY_WINDOW),
            how,
        ));
    }
    out
}

pub struct CopilotChatStore {
    base: Base,
}

impl CopilotChatStore {
    pub fn new(roots: Vec<Root>) -> CopilotChatStore {
        CopilotChatStore {
            base: Base::new(Agent::CopilotChat, roots),
        }
    }
}

impl Store for CopilotChatStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for (dir, workspace) in session_dirs(&root.path) {
                for (id, files) in session_files(&dir) {
                    let mut sources = files.clone();
                    sources.extend(workspace.clone());
                    out.push(Listed {
                        id,
                        path: files[0].clone(),
                        sources,
                        key: None,
                        root: i,
                    });
                }
            }
        }
        out
    }

    fn keeps_listing(&self, listed: &Listed) -> bool {
        // Names only; a write to a log, or to a flat file without a log, changes no name.
        is_log(&listed.path) || listed.sources.iter().all(|p| !is_log(p))
    }

    fn load(&self, listed: &Listed) -> Session {
        let flat = listed
            .sources
            .iter()
            .find(|p| *p != &listed.path && p.extension().is_some_and(|e| e == "json"));
        let flat = flat.filter(|p| kit::file_name(p) != "workspace.json");
        let workspace = listed
            .sources
            .iter()
            .find(|p| kit::file_name(p) == "workspace.json");
        load_session(
            &listed.path,
            &listed.id,
            flat.map(|p| p.as_path()),
            workspace,
        )
    }
}

fn is_log(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "jsonl")
}

/// The session directories under a root, each with the `workspace.json` naming its folder.
pub fn session_dirs(root: &Path) -> Vec<(PathBuf, Option<PathBuf>)> {
    let mut out = Vec::new();
    let name = kit::file_name(root);
    if name == SESSIONS || name == EMPTY_WINDOW {
        let ws = (name == SESSIONS)
            .then(|| root.parent().map(|p| p.join("workspace.json")))
            .flatten();
        return vec![(root.to_path_buf(), ws)];
    }
    let storage = root.join("workspaceStorage");
    let global = root.join("globalStorage").join(EMPTY_WINDOW);
    if storage.is_dir() || root.join("globalStorage").is_dir() {
        out.extend(workspaces(&storage));
        if global.is_dir() {
            out.push((global, None));
        }
        return out;
    }
    if root.join(SESSIONS).is_dir() {
        return vec![(root.join(SESSIONS), Some(root.join("workspace.json")))];
    }
    workspaces(root)
}

/// `<id>/chatSessions` under a `workspaceStorage` directory.
fn workspaces(storage: &Path) -> Vec<(PathBuf, Option<PathBuf>)> {
    kit::typed_entries(storage)
        .into_iter()
        .filter(|(_, t)| *t == EntryType::Dir)
        .map(|(p, _)| (p.join(SESSIONS), Some(p.join("workspace.json"))))
        .filter(|(d, _)| d.is_dir())
        .collect()
}

/// The sessions of a directory by id: the log first when there is one, then the flat file.
fn session_files(dir: &Path) -> Vec<(String, Vec<PathBuf>)> {
    let mut by_id: Vec<(String, Vec<PathBuf>)> = Vec::new();
    for (p, t) in kit::typed_entries(dir) {
        if t != EntryType::File {
            continue;
        }
        let Some(stem) = p
            .file_stem()
            .filter(|_| p.extension().is_some_and(|e| e == "json" || e == "jsonl"))
            .map(crate::names::os_id)
        else {
            continue;
        };
        if stem.is_empty() || stem.starts_with('.') {
            continue;
        }
        match by_id.iter_mut().find(|(id, _)| *id == stem) {
            Some((_, files)) => files.push(p),
            None => by_id.push((stem, vec![p])),
        }
    }
    for (_, files) in &mut by_id {
        // `.jsonl` sorts after `.json`: the log, which VS Code reads first, goes first.
        files.sort_by_key(|p| !is_log(p));
    }
    by_id
}

/// Why a session file could not be read; shown as a warning naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{file}: cannot read: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: {bytes} bytes, too large to parse, skipped")]
    TooLarge { file: String, bytes: u64 },
    #[error("{file}: not a chat session (neither a JSON object nor a session log)")]
    NotSession { file: String },
}

/// A session document as far as it could be read.
#[derive(Debug, Default)]
pub struct Doc {
    /// The (version 1, 2 or 3) session object.
    pub state: Map<String, Value>,
    /// Entries or lines that could not be parsed or applied: (problem, raw text).
    pub unparsed: Vec<(String, String)>,
    /// Set when the file ended mid-record: what was cut off.
    pub cut: Option<String>,
}

/// Read a session file, once more after a pause when it is cut and was just written.
fn read_doc(path: &Path) -> Result<Doc, ReadError> {
    let file = kit::file_name(path).to_string();
    let log = is_log(path);
    let meta = std::fs::metadata(path).map_err(|source| ReadError::Io {
        file: file.clone(),
        source,
    })?;
    if meta.len() > MAX_JSON_BYTES {
        return Err(ReadError::TooLarge {
            file,
            bytes: meta.len(),
        });
    }
    let read = || {
        kit::read_file(path).map_err(|source| ReadError::Io {
            file: file.clone(),
            source,
        })
    };
    let mut bytes = read()?;
    let mut doc = parse_doc(&bytes, log);
    let fresh = meta
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_some_and(|age| age < FRESH);
    if fresh && doc.as_ref().is_none_or(|d| d.cut.is_some()) {
        std::thread::sleep(REREAD_PAUSE);
        let again = read()?;
        if again != bytes {
            bytes = again;
            doc = parse_doc(&bytes, log);
        }
    }
    doc.ok_or(ReadError::NotSession { file })
}

/// Parse a flat session file or a session log. `None` when it is neither.
pub fn parse_doc(bytes: &[u8], log: bool) -> Option<Doc> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_start_matches('\u{feff}');
    if log {
        return replay(text);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(state)) => Some(Doc {
            state,
            ..Doc::default()
        }),
        Ok(_) => None,
        Err(_) => salvage(text),
    }
}

// ---------------------------------------------------------------------------------------
// Cut files and the mutation log

fn skip_ws(b: &[u8], mut p: usize) -> usize {
    while p < b.len() && b[p].is_ascii_whitespace() {
        p += 1;
    }
    p
}

fn raw(text: &str) -> String {
    text.chars().take(MAX_RAW_CHARS).collect()
}

/// One JSON value at the start of `text`, and where it ends.
fn one<T: serde::de::DeserializeOwned>(text: &str) -> Option<(T, usize)> {
    let mut s = serde_json::Deserializer::from_str(text).into_iter::<T>();
    match s.next() {
        Some(Ok(v)) => Some((v, s.byte_offset())),
        _ => None,
    }
}

/// A flat file cut while VS Code rewrote it: its top-level fields and every complete request
/// before the cut. `None` when the text is not an object at all.
fn salvage(text: &str) -> Option<Doc> {
    let b = text.as_bytes();
    let mut pos = skip_ws(b, 0);
    if b.get(pos) != Some(&b'{') {
        return None;
    }
    pos += 1;
    let mut doc = Doc::default();
    loop {
        pos = skip_ws(b, pos);
        match b.get(pos) {
            Some(b'}') => return Some(doc),
            Some(b',') => pos = skip_ws(b, pos + 1),
            _ => {}
        }
        let Some((key, n)) = one::<String>(&text[pos..]) else {
            break;
        };
        pos = skip_ws(b, pos + n);
        if b.get(pos) != Some(&b':') {
            break;
        }
        pos = skip_ws(b, pos + 1);
        if key == "requests" && b.get(pos) == Some(&b'[') {
            let mut items = Vec::new();
            pos = skip_ws(b, pos + 1);
            let mut closed = b.get(pos) == Some(&b']');
            while !closed {
                let Some((v, n)) = one::<Value>(&text[pos..]) else {
                    break;
                };
                items.push(v);
                pos = skip_ws(b, pos + n);
                match b.get(pos) {
                    Some(b',') => pos = skip_ws(b, pos + 1),
                    Some(b']') => closed = true,
                    _ => break,
                }
            }
            doc.state.insert(key, Value::Array(items));
            if !closed {
                break;
            }
            pos += 1;
        } else {
            let Some((v, n)) = one::<Value>(&text[pos..]) else {
                break;
            };
            doc.state.insert(key, v);
            pos += n;
        }
    }
    let tail = text[pos.min(text.len())..].trim();
    doc.cut = Some(if tail.is_empty() {
        "(the file ends before the session object is closed)".to_string()
    } else {
        raw(tail)
    });
    Some(doc)
}

/// Replay a session log into its state. Lines that do not parse or do not apply are kept
/// raw; a last line without its newline is a cut append.
fn replay(text: &str) -> Option<Doc> {
    let mut doc = Doc::default();
    let mut state: Option<Value> = None;
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.split('\n').collect();
    let last = lines.len().saturating_sub(1);
    for (i, line) in lines.iter().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let entry: Map<String, Value> = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                if i == last && !complete {
                    doc.cut = Some(raw(line));
                } else {
                    doc.unparsed
                        .push((format!("line {}: {e}", i + 1), raw(line)));
                }
                continue;
            }
        };
        if let Err(problem) = apply(&mut state, entry) {
            doc.unparsed
                .push((format!("line {}: {problem}", i + 1), raw(line)));
        }
    }
    match state {
        Some(Value::Object(m)) => doc.state = m,
        Some(_) => return None,
        None if doc.unparsed.is_empty() && doc.cut.is_none() => return None,
        None => {}
    }
    Some(doc)
}

/// Apply one log entry (`objectMutationLog.ts` `read`). The entry's value is moved into the
/// state, never copied: an initial entry can be most of a large file.
fn apply(state: &mut Option<Value>, mut entry: Map<String, Value>) -> Result<(), String> {
    let kind = entry.get("kind").and_then(Value::as_u64);
    let v = entry.remove("v");
    if kind == Some(0) {
        *state = Some(v.unwrap_or(Value::Null));
        return Ok(());
    }
    let Some(root) = state.as_mut() else {
        return Err("an update before the log's initial entry".into());
    };
    let path: &[Value] = match entry.get("k") {
        Some(Value::Array(a)) => a,
        _ => return Err("an update without a path".into()),
    };
    let Some((last, parents)) = path.split_last() else {
        // VS Code ignores an update of the root.
        return Ok(());
    };
    let mut cur = root;
    for k in parents {
        cur = step(cur, k).ok_or_else(|| format!("no value at {}", show_path(path)))?;
    }
    match kind {
        // A set without a value is JavaScript's `undefined`: the key goes.
        Some(1) => put(cur, last, v),
        Some(3) => put(cur, last, None),
        Some(2) => {
            if step(cur, last).is_none() {
                put(cur, last, Some(Value::Array(Vec::new())))?;
            }
            let slot = step(cur, last).ok_or("array cannot be made")?;
            if !slot.is_array() {
                *slot = Value::Array(Vec::new());
            }
            let Value::Array(arr) = slot else {
                return Err("not an array".into());
            };
            if let Some(i) = entry.get("i").and_then(Value::as_u64) {
                arr.truncate(usize::try_from(i).unwrap_or(usize::MAX));
            }
            if let Some(Value::Array(vs)) = v {
                arr.extend(vs);
            }
            Ok(())
        }
        _ => Err(format!(
            "unknown entry kind {}",
            entry.get("kind").unwrap_or(&Value::Null)
        )),
    }
}

fn show_path(path: &[Value]) -> String {
    path.iter()
        .map(|k| match k {
            Value::String(s) => format!(".{s}"),
            other => format!("[{other}]"),
        })
        .collect()
}

fn step<'a>(cur: &'a mut Value, k: &Value) -> Option<&'a mut Value> {
    match (cur, k) {
        (Value::Object(o), Value::String(s)) => o.get_mut(s),
        (Value::Array(a), Value::Number(n)) => a.get_mut(n.as_u64()? as usize),
        (Value::Object(o), Value::Number(n)) => o.get_mut(&n.to_string()),
        _ => None,
    }
}

/// Set (or with `None` delete) `k` of `cur`, as a JavaScript assignment would.
fn put(cur: &mut Value, k: &Value, v: Option<Value>) -> Result<(), String> {
    match (cur, k) {
        (Value::Object(o), key) => {
            let key = match key {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            match v {
                Some(v) => {
                    o.insert(key, v);
                }
                None => {
                    o.remove(&key);
                }
            }
            Ok(())
        }
        (Value::Array(a), Value::Number(n)) => {
            let i = n.as_u64().ok_or("negative index")?;
            let v = v.unwrap_or(Value::Null);
            match usize::try_from(i) {
                Ok(i) if i < a.len() => a[i] = v,
                Ok(i) if i == a.len() => a.push(v),
                // VS Code only sets items that exist; a hole is not made up.
                _ => return Err("index past the array's end".into()),
            }
            Ok(())
        }
        _ => Err("path goes through a value that is not an object or array".into()),
    }
}

// ---------------------------------------------------------------------------------------
// Loading

/// Load one session: `path` is the file VS Code reads (the log when there is one), `flat`
/// the older flat file beside it, used only when the log cannot be read.
pub fn load_session(
    path: &Path,
    id: &str,
    flat: Option<&Path>,
    workspace: Option<&PathBuf>,
) -> Session {
    let mut b = SessionBuilder::new(Agent::CopilotChat, id);
    let mut doc = read_doc(path);
    b.s.source.paths.push(path.to_path_buf());
    let mut from = path;
    // Raw lines of a log that held no state, kept when the flat file is read instead.
    let mut log_lines = Vec::new();
    let stateless = match &doc {
        Err(e) => Some(e.to_string()),
        Ok(d) if d.state.is_empty() => Some(format!(
            "{}: holds no readable session state",
            kit::file_name(path)
        )),
        Ok(_) => None,
    };
    if let (Some(why), Some(flat)) = (stateless, flat) {
        b.warn(format!(
            "{why}; read the older {} instead",
            kit::file_name(flat)
        ));
        if let Ok(d) = std::mem::replace(&mut doc, read_doc(flat)) {
            let log = kit::file_name(path);
            log_lines = d
                .unparsed
                .into_iter()
                .map(|(p, t)| (format!("{log} {p}"), t))
                .collect();
        }
        b.s.source.paths.push(flat.to_path_buf());
        from = flat;
    }
    let file = kit::file_name(from).to_string();
    b.s.source.format = if is_log(from) {
        "vscode-chat-log".to_string()
    } else {
        "vscode-chat-json".to_string()
    };
    let mut doc = match doc {
        Ok(d) => d,
        Err(e) => {
            b.warn(e.to_string());
            return b.finish();
        }
    };
    for u in &mut doc.unparsed {
        u.0 = format!("{file} {}", u.0);
    }
    doc.unparsed.extend(log_lines);
    if let Some(ws) = workspace {
        b.s.cwd = workspace_folder(ws);
        if ws.exists() {
            b.s.source.paths.push(ws.clone());
        }
    }
    let mut b = Parser::new(b).session(&doc.state);
    if let Some(cut) = &doc.cut {
        b.warn(format!(
            "{file}: cut mid-write (the editor was writing it?); what came before the cut is shown, the cut text raw"
        ));
        b.context("unparsed cut record", cut.clone(), None);
    }
    for (problem, text) in &doc.unparsed {
        b.unparsed(
            "log lines",
            "not JSON or not applicable",
            || problem.clone(),
            "log line",
            text,
            None,
        );
    }
    b.finish()
}

/// The folder (or `.code-workspace` file) a workspace directory belongs to.
fn workspace_folder(path: &Path) -> Option<String> {
    let v = kit::read_json(path, "workspace.json", 1 << 20).ok()?;
    kit::str_any(&v, &["folder", "workspace", "configuration"]).map(uri_string)
}

/// A `file://` URI as a path (percent-decoded); any other URI as it is.
fn uri_string(uri: &str) -> String {
    match uri.strip_prefix("file://") {
        Some(rest) => {
            // `file:///home/u` or `file://host/share`.
            let path = if rest.starts_with('/') {
                rest.to_string()
            } else {
                format!("//{rest}")
            };
            percent_decode(&path)
        }
        None => uri.to_string(),
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(n) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(n);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A URI as VS Code serializes it (`{scheme, path, fsPath?, authority?}`), a URI string, or
/// a location (`{uri, range}`), as text.
fn uri_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(uri_string(s)),
        Value::Object(o) => {
            if let Some(u) = o.get("uri") {
                let mut s = uri_text(u)?;
                if let Some(line) = o
                    .get("range")
                    .and_then(|r| r.get("startLineNumber").or_else(|| r.get("start")))
                    .and_then(|l| l.as_u64().or_else(|| l.get("line").and_then(Value::as_u64)))
                {
                    s.push_str(&format!(":{line}"));
                }
                return Some(s);
            }
            let scheme = kit::str_field(v, "scheme").unwrap_or("file");
            if let Some(p) = kit::str_field(v, "fsPath").filter(|_| scheme == "file") {
                return Some(p.to_string());
            }
            let path = kit::str_field(v, "path")?;
            Some(if scheme == "file" {
                path.to_string()
            } else {
                format!(
                    "{scheme}://{}{path}",
                    kit::str_field(v, "authority").unwrap_or("")
                )
            })
        }
        _ => None,
    }
}

/// A `string | IMarkdownString` field as text.
fn md(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Object(_)) => kit::str_field(v, "value").unwrap_or("").to_string(),
        _ => String::new(),
    }
}

fn push_para(out: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    if !out.is_empty() && !out.ends_with("\n\n") {
        out.push_str(if out.ends_with('\n') { "\n" } else { "\n\n" });
    }
    out.push_str(text);
}

/// The model's side of a request's tool calls (`result.metadata`).
#[derive(Debug, Default)]
struct ModelCalls {
    /// (id, name, arguments) in call order.
    calls: Vec<(String, String, Value)>,
    /// Tool results by call id, as text.
    results: HashMap<String, String>,
}

struct Parser {
    b: SessionBuilder,
    model: Option<String>,
    agent: Option<String>,
    /// Synthetic ids for calls the file gives none.
    synthetic: usize,
}

/// What a reply builds while walking its parts.
#[derive(Default)]
struct Reply {
    msgs: Vec<Message>,
    cur: Option<Message>,
    /// The id of the thinking part last appended to, so streamed chunks join.
    thinking_id: Option<String>,
}

impl Reply {
    fn cur(&mut self, base: &Message) -> &mut Message {
        self.cur.get_or_insert_with(|| base.clone())
    }
    fn flush(&mut self) {
        if let Some(m) = self.cur.take() {
            self.msgs.push(m);
        }
        self.thinking_id = None;
    }
    fn text(&mut self, base: &Message, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.cur.as_ref().is_some_and(|m| !m.tool_calls.is_empty()) {
            self.flush();
        }
        self.thinking_id = None;
        self.cur(base).content.push_str(text);
    }
    fn thinking(&mut self, base: &Message, text: &str, id: Option<&str>) {
        if text.is_empty() {
            return;
        }
        let joins = id.is_some() && self.thinking_id.as_deref() == id;
        if !joins
            && self
                .cur
                .as_ref()
                .is_some_and(|m| !m.content.is_empty() || !m.tool_calls.is_empty())
        {
            self.flush();
        }
        let m = self.cur(base);
        let t = m.thinking.get_or_insert_with(String::new);
        if joins {
            t.push_str(text);
        } else {
            push_para(t, text);
        }
        self.thinking_id = id.map(str::to_string);
    }
    fn call(&mut self, base: &Message, c: ToolCall) {
        self.thinking_id = None;
        self.cur(base).tool_calls.push(c);
    }
    fn event(&mut self, base: &Message, text: String) {
        if text.trim().is_empty() {
            return;
        }
        self.flush();
        self.msgs.push(Message {
            role: Role::System,
            kind: MessageKind::Event,
            content: text,
            timestamp: base.timestamp,
            ..Message::default()
        });
    }
}

impl Parser {
    fn new(b: SessionBuilder) -> Parser {
        Parser {
            b,
            model: None,
            agent: None,
            synthetic: 0,
        }
    }

    fn session(mut self, doc: &Map<String, Value>) -> SessionBuilder {
        let field = |k: &str| doc.get(k).and_then(Value::as_str);
        self.b.s.source.format_version = Some(match doc.get("version") {
            Some(Value::Number(n)) => n.to_string(),
            _ => "1".to_string(),
        });
        self.b.s.created_at = doc.get("creationDate").and_then(super::parse_time);
        self.b.s.title = ["customTitle", "computedTitle"]
            .iter()
            .find_map(|k| field(k))
            .and_then(kit::title_from_text);
        if let Some(dir) = field("workingDirectory").filter(|s| !s.is_empty()) {
            self.b.s.cwd = Some(uri_string(dir));
        }
        match doc.get("requests") {
            Some(Value::Array(reqs)) => {
                for (i, r) in reqs.iter().enumerate() {
                    self.request(i, r, false);
                }
            }
            Some(other) => self.b.unparsed(
                "fields",
                "requests is not a list",
                || "requests".into(),
                "requests",
                &raw(&other.to_string()),
                None,
            ),
            None => {}
        }
        if let Some(Value::Array(pending)) = doc.get("pendingRequests") {
            for (i, p) in pending.iter().enumerate() {
                if let Some(r) = p.get("request") {
                    self.request(i, r, true);
                }
            }
        }
        self.b
    }

    fn request(&mut self, index: usize, r: &Value, queued: bool) {
        if !r.is_object() {
            self.b.unparsed(
                "requests",
                "not an object",
                || format!("request {index}"),
                "request",
                &raw(&r.to_string()),
                None,
            );
            return;
        }
        let ts = r.get("timestamp").and_then(super::parse_time);
        if let Some(m) = kit::str_field(r, "modelId").filter(|s| !s.is_empty()) {
            // `<vendor>/<id>` as VS Code names language models: `copilot/gpt-4.1`.
            self.model = Some(m.strip_prefix("copilot/").unwrap_or(m).to_string());
        }
        let text = match r.get("message") {
            Some(Value::String(s)) => s.clone(),
            Some(m) => kit::str_field(m, "text").unwrap_or("").to_string(),
            None => String::new(),
        };
        let request_id = kit::str_field(r, "requestId").map(str::to_string);
        if queued {
            self.b.context("queued prompt, not sent yet", text, ts);
            return;
        }
        let agent = r
            .get("agent")
            .and_then(|a| kit::str_field(a, "id"))
            .map(str::to_string);
        if agent.is_some() && agent != self.agent {
            let mut s = format!("agent: {}", agent.as_deref().unwrap_or(""));
            if let Some(c) = r
                .get("slashCommand")
                .and_then(|c| kit::str_field(c, "name"))
            {
                s.push_str(&format!(" /{c}"));
            }
            self.b.event(s, ts);
            self.agent = agent;
        }
        if r.get("isHidden").is_some_and(|v| v == true)
            || r.get("shouldBeRemovedOnSend").is_some_and(Value::is_object)
        {
            self.b.event(
                "this request was undone in the editor (it goes at the next send)".into(),
                ts,
            );
        }
        self.b.push(Message {
            role: Role::User,
            content: text,
            timestamp: ts,
            native_id: request_id.clone(),
            ..Message::default()
        });
        if let Some(att) = attachments(r.get("variableData")) {
            self.b.context("attachments", att, ts);
        }

        let state = r.get("modelState");
        let done = state
            .and_then(|s| s.get("completedAt"))
            .and_then(super::parse_time);
        let base = Message {
            role: Role::Assistant,
            timestamp: done
                .or_else(|| r.get("responseTimestamp").and_then(super::parse_time))
                .or(ts),
            model: self.model.clone(),
            native_id: kit::str_field(r, "responseId").map(str::to_string),
            ..Message::default()
        };
        let result = r.get("result");
        let meta = result.and_then(|x| x.get("metadata"));
        let model_calls = model_calls(meta);
        let mut reply = Reply::default();
        let parts: &[Value] = match r.get("response") {
            Some(Value::Array(a)) => a,
            _ => &[],
        };
        if let Some(Value::String(s)) = r.get("response") {
            reply.text(&base, s);
        }
        let (pair, used) = pair_calls(parts, &model_calls);

        let mut edits = 0;
        for (pi, p) in parts.iter().enumerate() {
            self.part(&mut reply, &base, p, pi, &pair, &model_calls, &mut edits);
        }
        // Calls only the model's side holds (hidden from the user, or cleared).
        for (ci, c) in model_calls.calls.iter().enumerate() {
            if !used[ci] {
                let output = model_calls.results.get(&c.0).cloned();
                reply.call(
                    &base,
                    ToolCall {
                        tool_call_id: c.0.clone(),
                        tool_name: c.1.clone(),
                        input: c.2.clone(),
                        is_error: output.as_ref().map(|_| false),
                        output,
                        duration_ms: None,
                    },
                );
            }
        }
        // Round texts the reply's parts do not already hold.
        if let Some(Value::Array(rounds)) = meta.and_then(|m| m.get("toolCallRounds")) {
            let shown: String = reply
                .msgs
                .iter()
                .chain(reply.cur.iter())
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>()
                .join("\n");
            for round in rounds {
                let t = kit::str_field(round, "response").unwrap_or("").trim();
                if !t.is_empty() && !shown.contains(t) {
                    reply.text(&base, t);
                    reply.flush();
                }
            }
        }
        reply.flush();

        if let Some(e) = result.and_then(|x| x.get("errorDetails")) {
            let msg = md(e.get("message"));
            reply.event(&base, format!("error: {msg}"));
        }
        if let Some(e) = r.get("responseErrorDetails").filter(|e| e.is_object()) {
            reply.event(&base, format!("error: {}", md(e.get("message"))));
        }
        let cancelled = state.and_then(|s| s.get("value")).and_then(Value::as_u64) == Some(2)
            || r.get("isCanceled").is_some_and(|v| v == true);
        if cancelled {
            reply.event(&base, "cancelled".into());
        }
        if let Some(summary) = meta
            .and_then(|m| m.get("summary"))
            .and_then(|s| kit::str_field(s, "text"))
            .filter(|s| !s.trim().is_empty())
        {
            reply.msgs.push(Message {
                role: Role::System,
                kind: MessageKind::CompactionSummary,
                content: summary.to_string(),
                timestamp: base.timestamp,
                ..Message::default()
            });
        }

        // Usage once per request, on its last reply message (or an event when it has none).
        if let Some(u) = request_usage(r, meta) {
            match reply
                .msgs
                .iter_mut()
                .rev()
                .find(|m| m.role == Role::Assistant)
            {
                Some(m) => m.token_usage = Some(u),
                None => reply.msgs.push(Message {
                    role: Role::System,
                    kind: MessageKind::Event,
                    content: format!(
                        "usage: {} in, {} out, {} cached",
                        u.input_tokens, u.output_tokens, u.cached_tokens
                    ),
                    timestamp: base.timestamp,
                    model: base.model.clone(),
                    token_usage: Some(u),
                    ..Message::default()
                }),
            }
        }
        for m in reply.msgs {
            self.b.push(m);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn part(
        &mut self,
        reply: &mut Reply,
        base: &Message,
        p: &Value,
        pi: usize,
        pair: &HashMap<usize, usize>,
        mc: &ModelCalls,
        edits: &mut usize,
    ) {
        let kind = kit::str_field(p, "kind");
        match kind {
            // A Markdown part is stored as its bare `IMarkdownString`.
            None if p.get("value").is_some_and(Value::is_string) => {
                reply.text(base, kit::str_field(p, "value").unwrap_or(""));
            }
            None if p.is_string() => reply.text(base, p.as_str().unwrap_or("")),
            Some("markdownContent" | "markdownVuln") => reply.text(base, &md(p.get("content"))),
            Some("inlineReference") => {
                let name = kit::str_field(p, "name")
                    .map(str::to_string)
                    .or_else(|| p.get("inlineReference").and_then(uri_text))
                    .unwrap_or_default();
                reply.text(base, &format!("`{name}`"));
            }
            Some("codeblockUri") => {
                if let Some(u) = p.get("uri").and_then(uri_text) {
                    let what = if p.get("isEdit").is_some_and(|v| v == true) {
                        "edit of"
                    } else {
                        "code block for"
                    };
                    reply.text(base, &format!("\n[{what} {u}]\n"));
                }
            }
            Some("thinking") => {
                let text = match p.get("value") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
                    _ => String::new(),
                };
                reply.thinking(base, &text, kit::str_field(p, "id"));
            }
            Some("toolInvocationSerialized") => {
                let c = self.invocation(p, pair.get(&pi).map(|&ci| (ci, mc)));
                reply.call(base, c);
            }
            Some("textEditGroup" | "notebookEditGroup") => {
                *edits += 1;
                reply.call(base, edit_call(p, base, *edits));
            }
            Some("undoStop" | "mcpServersStarting" | "mcpServersStartingSerialized") => {}
            Some(k) => {
                let text = notice(k, p);
                reply.event(base, text);
            }
            None => reply.event(base, format!("part: {}", raw(&p.to_string()))),
        }
    }

    /// A tool invocation part as a call holding its output: the model's arguments and
    /// result when a round's call is paired with it, else what the part itself kept.
    fn invocation(&mut self, p: &Value, model: Option<(usize, &ModelCalls)>) -> ToolCall {
        let data = p.get("toolSpecificData");
        let data_kind = data.and_then(|d| kit::str_field(d, "kind"));
        let details = p.get("resultDetails");
        let mut id = kit::str_field(p, "toolCallId").unwrap_or("").to_string();
        if id.is_empty() {
            self.synthetic += 1;
            id = format!("invocation-{}", self.synthetic);
        }
        let mut name = kit::str_field(p, "toolId").unwrap_or("tool").to_string();
        let mut input = None;
        let mut output = None;
        if let Some((ci, mc)) = model {
            let (cid, cname, args) = &mc.calls[ci];
            name = cname.clone();
            input = Some(args.clone());
            output = mc.results.get(cid).cloned();
        }
        let input = input.unwrap_or_else(|| part_input(data, data_kind, details, p));
        let mut is_error = details
            .and_then(|d| d.get("isError"))
            .is_some_and(|v| v == true)
            || p.get("resultError").is_some_and(|v| !v.is_null());
        // What the editor showed (terminal output, result details), where the model's
        // result does not already hold it.
        if let Some(ui) = part_output(data, data_kind, details) {
            match &mut output {
                None => output = Some(ui),
                Some(o) if !o.contains(ui.trim()) => push_para(o, &ui),
                Some(_) => {}
            }
        }
        let denied = match p.get("isConfirmed") {
            Some(Value::Bool(false)) => true,
            Some(Value::Object(o)) => o.get("type").and_then(Value::as_u64) == Some(0),
            _ => false,
        };
        if denied {
            is_error = true;
            let o = output.get_or_insert_with(String::new);
            push_para(o, "(denied by the user)");
        }
        if let Some(e) = p.get("resultError").filter(|v| !v.is_null()) {
            let o = output.get_or_insert_with(String::new);
            push_para(o, &md(Some(e)).to_string());
            if !e.is_string() && !e.get("value").is_some_and(Value::is_string) {
                push_para(o, &e.to_string());
            }
        }
        let output = output.or_else(|| {
            // Nothing kept but the line the user saw: that line is the result.
            let past = md(p.get("pastTenseMessage"));
            let line = if past.trim().is_empty() {
                md(p.get("invocationMessage"))
            } else {
                past
            };
            (!line.trim().is_empty()).then_some(line)
        });
        ToolCall {
            tool_call_id: id,
            tool_name: name,
            input,
            is_error: Some(is_error),
            output,
            duration_ms: data
                .and_then(|d| d.get("terminalCommandState"))
                .and_then(|s| s.get("duration"))
                .and_then(Value::as_u64),
        }
    }
}

/// Pair a reply's tool invocation parts with the model's calls: by id, then in order when
/// both have as many left. Returns part index -> call index, and which calls are paired.
fn pair_calls(parts: &[Value], model_calls: &ModelCalls) -> (HashMap<usize, usize>, Vec<bool>) {
    let inv_ids: Vec<Option<&str>> = parts
        .iter()
        .map(|p| {
            (kit::str_field(p, "kind") == Some("toolInvocationSerialized"))
                .then(|| kit::str_field(p, "toolCallId").unwrap_or(""))
        })
        .collect();
    let mut pair: HashMap<usize, usize> = HashMap::new();
    let mut used = vec![false; model_calls.calls.len()];
    for (pi, id) in inv_ids.iter().enumerate() {
        if let Some(id) = id.filter(|i| !i.is_empty()) {
            if let Some(ci) = model_calls.calls.iter().position(|c| c.0 == id) {
                if !used[ci] {
                    used[ci] = true;
                    pair.insert(pi, ci);
                }
            }
        }
    }
    let left_parts: Vec<usize> = inv_ids
        .iter()
        .enumerate()
        .filter(|(pi, id)| id.is_some() && !pair.contains_key(pi))
        .map(|(pi, _)| pi)
        .collect();
    let left_calls: Vec<usize> = (0..used.len()).filter(|&ci| !used[ci]).collect();
    if left_parts.len() == left_calls.len() {
        for (pi, ci) in left_parts.into_iter().zip(left_calls) {
            used[ci] = true;
            pair.insert(pi, ci);
        }
    }

    (pair, used)
}

/// The arguments a tool invocation part kept, for a call the model's side does not hold.
fn part_input(
    data: Option<&Value>,
    data_kind: Option<&str>,
    details: Option<&Value>,
    p: &Value,
) -> Value {
    let d = data.unwrap_or(&Value::Null);
    match data_kind {
        Some("input") if d.get("rawInput").is_some() => {
            return d.get("rawInput").cloned().unwrap_or(Value::Null)
        }
        Some("terminal") => {
            let cmd = d
                .get("commandLine")
                .map(|c| {
                    ["userEdited", "toolEdited", "original"]
                        .iter()
                        .find_map(|k| kit::str_field(c, k))
                        .unwrap_or("")
                        .to_string()
                })
                .or_else(|| kit::str_field(d, "command").map(str::to_string));
            if let Some(cmd) = cmd {
                return serde_json::json!({ "command": cmd });
            }
        }
        Some("simpleToolInvocation") => {
            return serde_json::json!({ "input": kit::str_field(d, "input").unwrap_or("") })
        }
        Some("subagent") => {
            let mut o = Map::new();
            for k in ["agentName", "description", "prompt"] {
                if let Some(v) = kit::str_field(d, k) {
                    o.insert(k.to_string(), Value::String(v.to_string()));
                }
            }
            if !o.is_empty() {
                return Value::Object(o);
            }
        }
        _ => {}
    }
    if let Some(i) = details.and_then(|d| kit::str_field(d, "input")) {
        return serde_json::from_str(i).unwrap_or_else(|_| Value::String(i.to_string()));
    }
    serde_json::json!({ "message": md(p.get("invocationMessage")) })
}

/// The output a tool invocation part kept (`resultDetails`, terminal output, sub-agent
/// result, to-do list), if any.
fn part_output(
    data: Option<&Value>,
    data_kind: Option<&str>,
    details: Option<&Value>,
) -> Option<String> {
    let d = data.unwrap_or(&Value::Null);
    let mut out = String::new();
    match details {
        Some(Value::Object(o)) => match o.get("output") {
            Some(Value::String(s)) => push_para(&mut out, s),
            Some(Value::Array(parts)) => {
                for part in parts {
                    let text = match kit::str_field(part, "type") {
                        Some("ref") => part.get("uri").and_then(uri_text).unwrap_or_default(),
                        _ if part.get("isText").is_some_and(|v| v == true) => {
                            kit::str_field(part, "value").unwrap_or("").to_string()
                        }
                        _ => kit::base64_placeholder(
                            "attachment",
                            kit::str_field(part, "mimeType"),
                            kit::str_field(part, "value"),
                        ),
                    };
                    push_para(&mut out, &text);
                }
            }
            Some(Value::Object(data)) => push_para(
                &mut out,
                &kit::base64_placeholder(
                    "attachment",
                    kit::str_field(&Value::Object(data.clone()), "mimeType"),
                    kit::str_field(&Value::Object(data.clone()), "base64Data"),
                ),
            ),
            _ => {}
        },
        Some(Value::Array(uris)) => {
            for u in uris {
                if let Some(t) = uri_text(u) {
                    push_para(&mut out, &t);
                }
            }
        }
        _ => {}
    }
    match data_kind {
        Some("terminal") => {
            if let Some(t) = d
                .get("terminalCommandOutput")
                .and_then(|o| kit::str_field(o, "text"))
            {
                push_para(&mut out, t);
            }
            if let Some(code) = d
                .get("terminalCommandState")
                .and_then(|s| s.get("exitCode"))
                .and_then(Value::as_i64)
            {
                push_para(&mut out, &format!("(exit code {code})"));
            }
        }
        Some("simpleToolInvocation") => {
            push_para(&mut out, kit::str_field(d, "output").unwrap_or(""))
        }
        Some("subagent") => push_para(&mut out, kit::str_field(d, "result").unwrap_or("")),
        Some("todoList") => {
            if let Some(Value::Array(items)) = d.get("todoList") {
                for it in items {
                    push_para(
                        &mut out,
                        &format!(
                            "- [{}] {}",
                            kit::str_field(it, "status").unwrap_or(""),
                            kit::str_field(it, "title").unwrap_or("")
                        ),
                    );
                }
            }
        }
        Some("resources") => {
            if let Some(Value::Array(vs)) = d.get("values") {
                for u in vs {
                    if let Some(t) = uri_text(u) {
                        push_para(&mut out, &t);
                    }
                }
            }
        }
        _ => {}
    }
    (!out.is_empty()).then_some(out)
}

/// An edit group as an `edit` call: the file, and each edit's range and new text.
fn edit_call(p: &Value, base: &Message, n: usize) -> ToolCall {
    let file = p.get("uri").and_then(uri_text).unwrap_or_default();
    let mut out = String::new();
    if let Some(Value::Array(batches)) = p.get("edits") {
        for batch in batches {
            let edits: &[Value] = match batch {
                Value::Array(a) => a,
                one => std::slice::from_ref(one),
            };
            for e in edits {
                let e = e.get("edit").unwrap_or(e);
                let r = e.get("range").unwrap_or(&Value::Null);
                let at = |k: &str| kit::u64_field(r, k);
                out.push_str(&format!(
                    "@@ {}:{}-{}:{} @@\n",
                    at("startLineNumber"),
                    at("startColumn"),
                    at("endLineNumber"),
                    at("endColumn")
                ));
                out.push_str(kit::str_field(e, "text").unwrap_or(""));
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
    }
    ToolCall {
        tool_call_id: format!(
            "{}-edit-{n}",
            base.native_id.as_deref().unwrap_or("response")
        ),
        tool_name: "edit".to_string(),
        input: serde_json::json!({ "file": file }),
        output: Some(out),
        is_error: Some(false),
        duration_ms: None,
    }
}

/// A reply part that is neither text, reasoning, a tool call nor an edit, as one line.
fn notice(kind: &str, p: &Value) -> String {
    let body = match kind {
        "progressMessage"
        | "warning"
        | "info"
        | "progressTask"
        | "progressTaskSerialized"
        | "systemNotification" => md(p.get("content")),
        "confirmation" => {
            let mut s = format!(
                "{}: {}",
                kit::str_field(p, "title").unwrap_or(""),
                md(p.get("message"))
            );
            if p.get("isUsed").is_some_and(|v| v == true) {
                s.push_str(" (answered)");
            }
            s
        }
        "elicitation" | "elicitationSerialized" | "elicitation2" => format!(
            "{}: {} ({})",
            md(p.get("title")),
            md(p.get("message")),
            kit::str_field(p, "state").unwrap_or("")
        ),
        "questionCarousel" => {
            let mut s = md(p.get("message"));
            if let Some(Value::Array(qs)) = p.get("questions") {
                for q in qs {
                    push_para(&mut s, kit::str_field(q, "title").unwrap_or(""));
                }
            }
            if let Some(d) = p.get("data").filter(|d| d.is_object()) {
                push_para(&mut s, &format!("answers: {d}"));
            }
            s
        }
        "command" => p
            .get("command")
            .and_then(|c| kit::str_field(c, "title"))
            .unwrap_or("")
            .to_string(),
        "extensions" => p
            .get("extensions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default(),
        "multiDiffData" => {
            let d = p.get("multiDiffData").unwrap_or(&Value::Null);
            let mut s = kit::str_field(d, "title").unwrap_or("").to_string();
            if let Some(Value::Array(rs)) = d.get("resources") {
                for r in rs {
                    if let Some(u) = r
                        .get("modifiedUri")
                        .or_else(|| r.get("originalUri"))
                        .and_then(uri_text)
                    {
                        push_para(&mut s, &u);
                    }
                }
            }
            s
        }
        "treeData" => p
            .get("treeData")
            .and_then(|t| kit::str_field(t, "label"))
            .unwrap_or("")
            .to_string(),
        "hook" => [
            kit::str_field(p, "stopReason"),
            kit::str_field(p, "systemMessage"),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n"),
        "pullRequest" => format!(
            "{}: {}",
            kit::str_field(p, "title").unwrap_or(""),
            kit::str_field(p, "description").unwrap_or("")
        ),
        "autoModeResolution" => p
            .get("resolved")
            .and_then(|r| kit::str_field(r, "name"))
            .unwrap_or("")
            .to_string(),
        "externalEdit" => format!(
            "{} {}",
            kit::str_field(p, "editKind").unwrap_or("edit"),
            p.get("uri").and_then(uri_text).unwrap_or_default()
        ),
        "workspaceEdit" => p
            .get("edits")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|e| {
                        format!(
                            "{} -> {}",
                            e.get("oldResource").and_then(uri_text).unwrap_or_default(),
                            e.get("newResource").and_then(uri_text).unwrap_or_default()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default(),
        "clearToPreviousToolInvocation" => "reply cleared back to the previous tool call".into(),
        _ => raw(&p.to_string()),
    };
    if body.trim().is_empty() {
        kind.to_string()
    } else {
        format!("{kind}: {body}")
    }
}

/// The names of a request's attachments, one a line; `None` when it has none.
fn attachments(v: Option<&Value>) -> Option<String> {
    let vars = v?.get("variables")?.as_array()?;
    let mut out = String::new();
    for var in vars {
        let name = kit::str_any(var, &["name", "id"]).unwrap_or("");
        let kind = kit::str_field(var, "kind").unwrap_or("");
        let mut line = format!("- {name}");
        if kind == "image" || var.get("isImage").is_some_and(|v| v == true) {
            line.push_str(" [image]");
        } else if let Some(u) = var.get("value").and_then(uri_text).filter(|u| u != name) {
            line.push_str(&format!(" ({u})"));
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&line);
    }
    (!out.is_empty()).then_some(out)
}

/// The model's calls and results from the extension's `result.metadata`.
fn model_calls(meta: Option<&Value>) -> ModelCalls {
    let mut mc = ModelCalls::default();
    let Some(meta) = meta else {
        return mc;
    };
    if let Some(Value::Array(rounds)) = meta.get("toolCallRounds") {
        for round in rounds {
            if let Some(Value::Array(calls)) = round.get("toolCalls") {
                for c in calls {
                    let id = kit::str_field(c, "id").unwrap_or("").to_string();
                    let name = kit::str_field(c, "name").unwrap_or("tool").to_string();
                    let args = match c.get("arguments") {
                        Some(Value::String(s)) => {
                            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
                        }
                        Some(v) => v.clone(),
                        None => Value::Null,
                    };
                    mc.calls.push((id, name, args));
                }
            }
        }
    }
    if let Some(Value::Object(results)) = meta.get("toolCallResults") {
        for (id, r) in results {
            mc.results.insert(id.clone(), tool_result_text(r));
        }
    }
    mc
}

/// A `LanguageModelToolResult` as serialized: `content` parts holding text `value`s, or
/// prompt-tsx trees whose text nodes hold it.
fn tool_result_text(r: &Value) -> String {
    fn tree(v: &Value, out: &mut String) {
        match v {
            Value::Object(o) => {
                if let Some(Value::String(t)) = o.get("text") {
                    out.push_str(t);
                }
                for (k, x) in o {
                    if k != "text" {
                        tree(x, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| tree(x, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    let parts: &[Value] = match r.get("content") {
        Some(Value::Array(a)) => a,
        _ => std::slice::from_ref(r),
    };
    for part in parts {
        let text = match part.get("value") {
            Some(Value::String(s)) => s.clone(),
            Some(v @ Value::Object(_)) => {
                let mut t = String::new();
                tree(v, &mut t);
                t
            }
            _ if part.get("data").is_some() || part.get("mimeType").is_some() => {
                kit::base64_placeholder(
                    "attachment",
                    kit::str_field(part, "mimeType"),
                    kit::str_field(part, "data"),
                )
            }
            _ => match part {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
        };
        push_para(&mut out, &text);
    }
    out
}

/// A request's usage from one source (see the module docs), `None` when it holds none.
fn request_usage(r: &Value, meta: Option<&Value>) -> Option<TokenUsage> {
    // The rounds' per-call usage (OpenAI shape: prompt tokens include cached ones).
    let mut u = TokenUsage::default();
    let mut any = false;
    if let Some(Value::Array(rounds)) = meta.and_then(|m| m.get("toolCallRounds")) {
        for round in rounds {
            let Some(us) = round.get("usage").filter(|v| v.is_object()) else {
                continue;
            };
            any = true;
            let cached = kit::u64_at(us, &["prompt_tokens_details", "cached_tokens"]);
            u.input_tokens += kit::u64_field(us, "prompt_tokens").saturating_sub(cached);
            u.cached_tokens += cached;
            u.output_tokens += kit::u64_field(us, "completion_tokens");
        }
    }
    if any {
        return Some(u);
    }
    if let Some(Value::Array(totals)) = r.get("modelTotals") {
        if !totals.is_empty() {
            for t in totals {
                let cached = kit::u64_field(t, "cachedTokens");
                u.input_tokens += kit::u64_field(t, "inputTokens").saturating_sub(cached);
                u.cached_tokens += cached;
                u.output_tokens += kit::u64_field(t, "outputTokens");
            }
            return Some(u);
        }
    }
    let number =
        |v: Option<&Value>, k: &str| v.and_then(|v| v.get(k)).is_some_and(Value::is_number);
    if number(Some(r), "promptTokens") || number(Some(r), "completionTokens") {
        u.input_tokens = kit::u64_field(r, "promptTokens");
        u.output_tokens = kit::u64_field(r, "completionTokens");
        return Some(u);
    }
    if number(meta, "promptTokens") || number(meta, "outputTokens") {
        let m = meta.unwrap_or(&Value::Null);
        u.input_tokens = kit::u64_field(m, "promptTokens");
        u.output_tokens = kit::u64_field(m, "outputTokens");
        return Some(u);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_log_replays_sets_pushes_cuts_and_deletes() {
        let log = [
            json!({"kind": 0, "v": {"version": 3, "requests": [], "customTitle": "t"}}),
            json!({"kind": 2, "k": ["requests"], "v": [{"requestId": "r1", "response": []}]}),
            json!({"kind": 2, "k": ["requests", 0, "response"], "v": [{"value": "a"}, {"value": "b"}]}),
            json!({"kind": 2, "k": ["requests", 0, "response"], "v": [{"value": "c"}], "i": 1}),
            json!({"kind": 1, "k": ["requests", 0, "modelId"], "v": "copilot/gpt-4.1"}),
            json!({"kind": 3, "k": ["customTitle"]}),
        ]
        .iter()
        .map(|v| v.to_string() + "\n")
        .collect::<String>();
        let doc = parse_doc(log.as_bytes(), true).expect("log");
        assert!(doc.unparsed.is_empty() && doc.cut.is_none());
        assert_eq!(
            Value::Object(doc.state),
            json!({"version": 3, "requests": [{"requestId": "r1", "modelId": "copilot/gpt-4.1",
                   "response": [{"value": "a"}, {"value": "c"}]}]})
        );
    }

    #[test]
    fn a_cut_log_line_and_a_cut_flat_file_keep_what_came_before() {
        let log = format!(
            "{}\n{{\"kind\":1,\"k\":[\"customTi",
            json!({"kind": 0, "v": {"requests": []}})
        );
        let doc = parse_doc(log.as_bytes(), true).expect("log");
        assert_eq!(doc.cut.as_deref(), Some("{\"kind\":1,\"k\":[\"customTi"));
        let flat = r#"{"version": 3, "sessionId": "s", "requests": [{"requestId": "a"}, {"requestId": "b", "mess"#;
        let doc = parse_doc(flat.as_bytes(), false).expect("flat");
        assert_eq!(doc.state["requests"].as_array().map(Vec::len), Some(1));
        assert_eq!(doc.state["sessionId"], "s");
        assert!(doc.cut.as_deref().is_some_and(|c| c.contains("\"b\"")));
        assert!(parse_doc(b"[1]", false).is_none());
    }

    #[test]
    fn uris_become_paths() {
        assert_eq!(uri_string("file:///home/u/my%20app"), "/home/u/my app");
        assert_eq!(
            uri_string("vscode-remote://ssh-remote%2Bbox/home/u"),
            "vscode-remote://ssh-remote%2Bbox/home/u"
        );
        assert_eq!(
            uri_text(&json!({"$mid": 1, "scheme": "file", "path": "/a/b.rs"})).as_deref(),
            Some("/a/b.rs")
        );
    }

    /// Every prefix of the bundled samples (a file cut anywhere while the editor writes it)
    /// loads without a panic.
    #[test]
    fn every_cut_of_the_samples_loads() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/home/.config/Code/User/workspaceStorage/9f1c2e7a4b3d5a6c8e0f1a2b3c4d5e6f/chatSessions"
        );
        for (name, log) in [
            ("7d3e9a10-4c2b-4e8f-9a1d-5b6c7d8e9f01.jsonl", true),
            ("2b8f4c61-0e7a-4d3b-b5c9-8a1e2f3d4c5b.json", false),
        ] {
            let bytes = std::fs::read(Path::new(dir).join(name)).expect("sample");
            for cut in (0..=bytes.len()).step_by(5) {
                if let Some(doc) = parse_doc(&bytes[..cut], log) {
                    let b = SessionBuilder::new(Agent::CopilotChat, "x");
                    let _ = Parser::new(b).session(&doc.state).finish();
                }
            }
        }
    }
}
