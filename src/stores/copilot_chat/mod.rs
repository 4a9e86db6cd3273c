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
use super::{Base, Env, Glance, Listed, Root, Store};
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

    /// The listing reads names only: each root, the workspace directories under a
    /// `workspaceStorage`, their `chatSessions/` and the empty window's directory (see
    /// [`glance_dirs`]). Session files and each workspace's `workspace.json` are the
    /// sessions' sources; `state.vscdb` is never read.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if !root.path.is_dir() {
                return None;
            }
            glance_dirs(&root.path, &mut g.dirs);
        }
        Some(g)
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

/// The directories [`session_dirs`] reads under `root`: every session directory it finds,
/// and, where one does not exist yet, the directory it would appear in (a workspace's own
/// directory, `globalStorage`), whose mtime moves when it does.
fn glance_dirs(root: &Path, out: &mut Vec<PathBuf>) {
    out.push(root.to_path_buf());
    let name = kit::file_name(root);
    if name == SESSIONS || name == EMPTY_WINDOW {
        return;
    }
    let storage = root.join("workspaceStorage");
    let global = root.join("globalStorage");
    if storage.is_dir() || global.is_dir() {
        if storage.is_dir() {
            workspace_glance(&storage, out);
        }
        let empty = global.join(EMPTY_WINDOW);
        if empty.is_dir() {
            out.push(empty);
        } else if global.is_dir() {
            out.push(global);
        }
        return;
    }
    let sessions = root.join(SESSIONS);
    if sessions.is_dir() {
        out.push(sessions);
        return;
    }
    workspace_glance(root, out);
}

/// A `workspaceStorage` directory and, for each workspace in it, its `chatSessions/`, or
/// the workspace's own directory while it has none.
fn workspace_glance(storage: &Path, out: &mut Vec<PathBuf>) {
    out.push(storage.to_path_buf());
    for (p, t) in kit::typed_entries(storage) {
        if t != EntryType::Dir {
            continue;
        }
        let sessions = p.join(SESSIONS);
        out.push(if sessions.is_dir() { sessions } else { p });
    }
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

mod doc;
mod request;
#[cfg(test)]
mod tests;

use doc::*;
pub use doc::{parse_doc, Doc};
pub use request::load_session;
