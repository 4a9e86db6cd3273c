//! Nanocoder (the Nano Collective's local-first terminal coding agent, also run by its VS Code
//! extension over ACP): one JSON document per session in its app data directory's
//! `sessions/`, rewritten whole on every autosave, plus the index `sessions.json` beside them.
//!
//! Read from Nanocoder's own source, Nano-Collective/nanocoder
//! `0649028a4af6be8594649958d78c06564ba2efed` (2026-08-22):
//!
//! - `source/config/paths.ts`: `getAppDataPath()` is `$NANOCODER_DATA_DIR`, else
//!   `$XDG_DATA_HOME/nanocoder` (on every platform), else `~/.local/share/nanocoder` (macOS
//!   `~/Library/Application Support/nanocoder`, Windows `%APPDATA%\nanocoder`);
//! - `source/session/session-manager.ts`: the sessions directory is `<app data>/sessions`
//!   unless `sessions.directory` is set in the configuration; `saveSession` writes
//!   `<id>.json` (`JSON.stringify(session, null, 2)` to a temporary file renamed into place)
//!   holding `{id, title, createdAt, lastAccessedAt, messageCount, provider, model,
//!   workingDirectory, messages, titleManuallySet?}`, the id a UUID v4, and the same fields
//!   but `messages` in `sessions.json`; old sessions are deleted by Nanocoder itself
//!   (`retentionDays`, `maxSessions`);
//! - `source/hooks/useSessionAutosave.ts`: the CLI saves the whole history, never truncated;
//!   the title is the latest prompt's first 50 characters unless the user renamed the session;
//!   `provider` and `model` are the ones active at the save; `source/acp/acp-agent.ts`
//!   (`saveAcpSessionToDisk`): the editor's sessions, titled `New Session` until a prompt
//!   names them;
//! - `source/types/core.ts`: `Message {role: user | assistant | system | tool, content,
//!   tool_calls?: [{id, function: {name, arguments}}], tool_call_id?, name?, reasoning?,
//!   structuredContent?, images?: [{data (base64), mediaType, source?}]}`;
//! - `source/utils/message-builder.ts`, `source/message-handler.ts`,
//!   `source/utils/tool-validation.ts`, `source/utils/tool-cancellation.ts`: a tool result is
//!   a `tool` message; the error flag the tool executor knows is not stored, and Nanocoder
//!   tells a failed result, when it replays a session (`source/session/
//!   session-history-renderer.tsx`), by its text starting `Error: ` or `⚒ Validation failed`;
//! - `source/utils/llm-summariser.ts`, `source/app/utils/handlers/compact-handler.ts`: a
//!   compaction replaces the history; the LLM strategy puts a `user` message
//!   `<conversation-summary>…</conversation-summary>` first, the mechanical one shortens
//!   messages in place.
//!
//! Design decisions and why:
//! - **Roots** follow `getAppDataPath()`: `$NANOCODER_DATA_DIR/sessions`, else
//!   `$XDG_DATA_HOME/nanocoder/sessions`, else both `~/.local/share/nanocoder/sessions` and
//!   `~/Library/Application Support/nanocoder/sessions`. A directory moved with
//!   `sessions.directory` is given with `--store` (the directory itself or a data directory
//!   holding `sessions/`): that setting lives in `agents.config.json` (provider API keys) or
//!   `nanocoder-preferences.json`, and neither is opened, nor are `codex-credentials.json`,
//!   `copilot-credentials.json`, `.env`, `usage.json` (aggregate token estimates no current
//!   release writes, tied to no session), `.nano-coder-history` (the prompt history) or the
//!   projects' `.nanocoder/checkpoints/` (copies of a conversation taken by `/checkpoint`,
//!   inside each project).
//! - **Listing reads names only**: every `*.json` of the directory but `sessions.json`; the id
//!   is the file name, as Nanocoder names the file by the session id. The index is never read:
//!   each session file holds everything its entry does.
//! - **Each file is read in one read.** Nanocoder renames a finished file into place, but a
//!   file may still be cut or damaged: it is read field by field (the reader the Amp and
//!   Continue stores use), every message before the cut is kept, the rest is shown raw and a
//!   warning names the file.
//! - **What each message becomes**: prompts (images as placeholders), replies with their
//!   reasoning as thinking and their tool calls, `tool` messages as the calls' results (failed
//!   by Nanocoder's own rule above; a tool's `structuredContent` follows its text), `system`
//!   messages as context, the LLM compaction's summary as the compaction summary.
//! - **Model and usage**: messages name no model and carry no usage. The session's `model` is
//!   the model it was set to (the one active at the last save) and `provider` a
//!   `provider:` tag. Per-call usage lives only in Nanocoder's memory: sessions have none.
//! - **Times**: `createdAt`, and `lastAccessedAt` (bumped by every save and every resume) as
//!   the update time; messages have no times of their own.

use super::amp::doc_or_raw;
use super::kit::{self, title_from_text, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Message, MessageKind, Role, Session, ToolCall};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Larger session files are not parsed (a whole file is held while parsing).
const MAX_JSON_BYTES: u64 = 256 << 20;
/// The index Nanocoder keeps beside the session files; not a session.
const INDEX_FILE: &str = "sessions.json";
/// JSON files of Nanocoder's data and config directories that are no sessions (the
/// configuration and credentials hold API keys): never listed, even when a `--store` path
/// names such a directory.
const NOT_SESSIONS: &[&str] = &[
    INDEX_FILE,
    "usage.json",
    "agents.config.json",
    "nanocoder-preferences.json",
    "codex-credentials.json",
    "copilot-credentials.json",
    "mcp.json",
];
/// The title the editor (ACP) gives a session before a prompt names it.
const PLACEHOLDER_TITLE: &str = "New Session";
/// How an LLM compaction's summary opens, and how it closes.
const SUMMARY_OPEN: &str = "<conversation-summary>";
const SUMMARY_CLOSE: &str = "</conversation-summary>";
/// Where a failed tool result's text starts (Nanocoder's own `isErrorResult`).
const ERROR_PREFIXES: &[&str] = &["Error: ", "⚒ Validation failed"];

/// Every sessions directory Nanocoder may use, existing or not, in priority order.
pub fn candidates(env: &Env) -> Vec<Root> {
    let root = |p: PathBuf, how: &str| Root::new(Agent::Nanocoder, p.join("sessions"), how);
    if let Some(p) = env.path_var("NANOCODER_DATA_DIR") {
        return vec![root(p, "NANOCODER_DATA_DIR")];
    }
    if let Some(p) = env.path_var("XDG_DATA_HOME") {
        return vec![root(p.join("nanocoder"), "XDG_DATA_HOME")];
    }
    vec![
        root(env.home.join(".local/share/nanocoder"), "default"),
        root(
            env.home.join("Library/Application Support/nanocoder"),
            "default (macOS)",
        ),
    ]
}

pub struct NanocoderStore {
    base: Base,
}

impl NanocoderStore {
    pub fn new(roots: Vec<Root>) -> NanocoderStore {
        NanocoderStore {
            base: Base::new(Agent::Nanocoder, roots),
        }
    }
}

impl Store for NanocoderStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        kit::listed_by_stem(&self.base.roots, session_files)
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        // The listing reads file names only; rewriting a session never adds one.
        true
    }

    /// The listing reads the names in each root directory and in its `sessions/`; a root
    /// that is one session file is its own source.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        kit::root_and_sessions_glance(&self.base.roots)
    }

    fn load(&self, listed: &Listed) -> Session {
        load_session(&listed.path, &listed.id)
    }
}

/// The session files under a root: `<root>/sessions/*.json` when the root is Nanocoder's data
/// directory, else `<root>/*.json`; or the root itself when it is one session file. The index
/// and the files of [`NOT_SESSIONS`] are never sessions; temporary files (`<id>.json.<uuid>.tmp`)
/// are not listed.
pub fn session_files(root: &Path) -> Vec<PathBuf> {
    if root.is_file() {
        return vec![root.to_path_buf()];
    }
    let sessions = root.join("sessions");
    let dir = if sessions.is_dir() {
        sessions
    } else {
        root.to_path_buf()
    };
    kit::typed_entries(&dir)
        .into_iter()
        .filter(|(p, t)| {
            let name = p.file_name().map(|n| n.as_encoded_bytes()).unwrap_or(b"");
            *t == EntryType::File
                && !name.starts_with(b".")
                && name.ends_with(b".json")
                && !NOT_SESSIONS.iter().any(|n| name == n.as_bytes())
        })
        .map(|(p, _)| p)
        .collect()
}

/// A string field of the document's top level.
fn field<'a>(f: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    f.get(key).and_then(Value::as_str)
}

/// Load one session file.
pub fn load_session(path: &Path, id: &str) -> Session {
    let file = kit::file_name(path).to_string();
    let mut b = SessionBuilder::new(Agent::Nanocoder, id);
    b.s.source.format = "nanocoder-session-json".into();
    b.s.source.paths.push(path.to_path_buf());
    let Some(bytes) = kit::read_capped(&mut b, path, &file, MAX_JSON_BYTES) else {
        return b.finish();
    };
    let Some(doc) = doc_or_raw(&mut b, &bytes, &file, "messages", "messages") else {
        return b.finish();
    };
    let f = &doc.fields;
    if f.contains_key("messages") {
        // `parse_doc_of` keeps a `messages` that is no list among the fields.
        b.warn(format!(
            "{file}: `messages` is not a list; the file is shown raw"
        ));
        b.context("unparsed file", kit::raw_text(&bytes), None);
    }
    b.title_or_placeholder(field(f, "title").and_then(title_from_text), |t| {
        t == PLACEHOLDER_TITLE
    });
    b.s.cwd = field(f, "workingDirectory")
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    b.s.created_at = f.get("createdAt").and_then(super::parse_time);
    b.s.updated_at = f
        .get("lastAccessedAt")
        .and_then(super::parse_time)
        .or(b.s.created_at);
    b.s.set_model = field(f, "model")
        .filter(|m| !m.trim().is_empty())
        .map(str::to_string);
    if let Some(p) = field(f, "provider").filter(|p| !p.trim().is_empty()) {
        b.s.tags.push(format!("provider:{p}"));
    }
    for (i, m) in doc.messages.iter().enumerate() {
        message(&mut b, i, m);
    }
    if let Some(cut) = doc.cut {
        b.context(&format!("unparsed tail of {file}"), cut, None);
    }
    b.finish()
}

/// A message's `content`: a string, or (defensively: the type says string) text parts.
fn content_text(c: Option<&Value>) -> String {
    match c {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match p {
                Value::String(s) => s.clone(),
                _ => kit::str_field(p, "text")
                    .map(str::to_string)
                    .unwrap_or_else(|| p.to_string()),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The images of a prompt, one placeholder a line (`[image: image/png, 3.0 KB] shot.png`).
fn images_text(m: &Value) -> Vec<String> {
    m.get("images")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|img| {
            let ph = kit::base64_placeholder(
                "image",
                kit::str_field(img, "mediaType"),
                kit::str_field(img, "data"),
            );
            match kit::str_field(img, "source").filter(|s| !s.is_empty()) {
                Some(src) => format!("{ph} {src}"),
                None => ph,
            }
        })
        .collect()
}

/// One element of `messages`.
fn message(b: &mut SessionBuilder, i: usize, m: &Value) {
    if !m.is_object() {
        b.unparsed(
            "messages",
            "not an object",
            || format!("message {i}"),
            "message",
            &m.to_string(),
            None,
        );
        return;
    }
    let text = content_text(m.get("content"));
    match kit::str_field(m, "role") {
        Some("user") => {
            if let Some(summary) = compaction_summary(&text) {
                b.push(Message {
                    role: Role::System,
                    kind: MessageKind::CompactionSummary,
                    content: summary,
                    ..Message::default()
                });
                return;
            }
            let mut content = text;
            for ph in images_text(m) {
                kit::push_paragraph(&mut content, &ph);
            }
            b.push(Message {
                role: Role::User,
                content,
                ..Message::default()
            });
        }
        Some("assistant") => {
            let calls = tool_calls(b, i, m);
            b.push(Message {
                role: Role::Assistant,
                content: text,
                thinking: kit::str_field(m, "reasoning")
                    .filter(|r| !r.trim().is_empty())
                    .map(str::to_string),
                tool_calls: calls,
                ..Message::default()
            });
        }
        Some("tool") => {
            let call = kit::str_field(m, "tool_call_id").unwrap_or_default();
            let failed = ERROR_PREFIXES.iter().any(|p| text.starts_with(p));
            let mut out = text;
            if let Some(s) = m.get("structuredContent").filter(|s| !s.is_null()) {
                kit::push_paragraph(&mut out, &format!("structured content: {s}"));
            }
            b.tool_result(call, kit::str_field(m, "name"), out, failed, None);
        }
        Some("system") => b.context("system message", text, None),
        role => {
            let role = role.unwrap_or("(none)").to_string();
            b.unparsed(
                "messages",
                &format!("unknown role {role}"),
                || format!("message {i}"),
                "message",
                &m.to_string(),
                None,
            );
        }
    }
}

/// The text of an LLM compaction's summary message, `None` for any other prompt.
fn compaction_summary(text: &str) -> Option<String> {
    let rest = text.trim_start().strip_prefix(SUMMARY_OPEN)?;
    let inner = rest.split_once(SUMMARY_CLOSE).map_or(rest, |(s, _)| s);
    Some(inner.trim().to_string())
}

/// A reply's `tool_calls`: arguments are an object (a JSON string from older or odd writers
/// is parsed, and kept verbatim when it is not JSON).
fn tool_calls(b: &mut SessionBuilder, i: usize, m: &Value) -> Vec<ToolCall> {
    let mut out = Vec::new();
    for (ci, c) in m
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let input = kit::call_input(
            kit::value_at(c, &["function", "arguments"]),
            "tool call arguments",
            &mut b.unparsed,
            || format!("message {i}, call {ci}"),
        );
        out.push(ToolCall {
            tool_call_id: kit::str_field(c, "id").unwrap_or_default().to_string(),
            tool_name: kit::str_at(c, &["function", "name"])
                .unwrap_or_default()
                .to_string(),
            input,
            ..ToolCall::default()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn roots_follow_the_data_dir_then_xdg_then_the_platform_defaults() {
        let mut env = Env::at_home(Path::new("/h"));
        let paths = |env: &Env| -> Vec<(PathBuf, String)> {
            candidates(env)
                .into_iter()
                .map(|r| (r.path, r.how))
                .collect()
        };
        assert_eq!(
            paths(&env),
            [
                (
                    PathBuf::from("/h/.local/share/nanocoder/sessions"),
                    "default".to_string()
                ),
                (
                    PathBuf::from("/h/Library/Application Support/nanocoder/sessions"),
                    "default (macOS)".to_string()
                ),
            ]
        );
        env.vars.insert("XDG_DATA_HOME".into(), "/x".into());
        assert_eq!(
            paths(&env),
            [(
                PathBuf::from("/x/nanocoder/sessions"),
                "XDG_DATA_HOME".to_string()
            )]
        );
        env.vars.insert("NANOCODER_DATA_DIR".into(), "~/nd".into());
        assert_eq!(
            paths(&env),
            [(
                PathBuf::from("/h/nd/sessions"),
                "NANOCODER_DATA_DIR".to_string()
            )]
        );
    }

    #[test]
    fn the_index_config_and_temporary_files_are_never_sessions() {
        let dir = tempfile::tempdir().expect("tmp");
        for f in [
            "sessions.json",
            "usage.json",
            "agents.config.json",
            "abc.json",
            "abc.json.0f0e.tmp",
        ] {
            std::fs::write(dir.path().join(f), "{}").expect("write");
        }
        let names: Vec<String> = session_files(dir.path())
            .iter()
            .map(|p| kit::file_name(p).to_string())
            .collect();
        assert_eq!(names, ["abc.json"]);
    }

    #[test]
    fn a_summary_prompt_is_the_compaction_summary() {
        let t = "<conversation-summary>\n## Goal\nship it\n</conversation-summary>\n\n(The above is an automated summary of earlier conversation. Continue from the most recent message.)";
        assert_eq!(compaction_summary(t).as_deref(), Some("## Goal\nship it"));
        assert_eq!(compaction_summary("fix <conversation-summary>"), None);
    }

    #[test]
    fn prompt_images_are_placeholders_with_their_source() {
        let m = json!({"role": "user", "content": "look",
                       "images": [{"data": "AAAAAAAA", "mediaType": "image/png", "source": "shot.png"}]});
        assert_eq!(images_text(&m), ["[image: image/png, 6 B] shot.png"]);
    }
}
