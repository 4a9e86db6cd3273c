//! Fabric (the prompt-pattern CLI): the chat sessions kept by `fabric --session <name>`, one
//! JSON file per session in `~/.config/fabric/sessions/`, rewritten whole at each run.
//!
//! Read from Fabric's own source (the Go version), danielmiessler/fabric
//! `272f04dd3278f99bee49e94a7747b54708745a5d` (2025-07-19, v1.4.261):
//!
//! - `internal/cli/initialization.go`: the data directory is `os.UserHomeDir()` joined with
//!   `.config/fabric`, on every platform; no variable moves it (`XDG_CONFIG_HOME` is not
//!   consulted);
//! - `internal/plugins/db/fsdb/db.go`, `storage.go`: `sessions/` holds one `<name>.json` per
//!   session (`--listsessions` lists every non-directory entry ending in `.json`), beside
//!   `patterns/` (prompt templates), `contexts/` (text prepended to the system prompt),
//!   `strategies/`, `extensions/`, `config.yaml` and `.env` (API keys, loaded at start);
//!   `internal/util/oauth_storage.go` keeps OAuth tokens in `.<provider>_oauth`;
//! - `internal/plugins/db/fsdb/sessions.go`: a session file is `json.Marshal` of the
//!   session's messages, a bare JSON array on one line, written with `os.WriteFile` (no
//!   temporary file: a reader may see it cut); the name is given by `--session` and is not
//!   stored inside; `--wipesession` deletes the file;
//! - `internal/chat/chat.go`: a message is `{role, content, refusal?, name?,
//!   reasoning_content?, function_call?, tool_calls?, tool_call_id?}`, `content` a string, or
//!   with attachments an array of parts `{type: text, text}` and `{type: image_url,
//!   image_url: {url}}`, the URL a `data:<mime>;base64,…` URL for a local file
//!   (`internal/cli/flags.go` `BuildChatRequest`);
//! - `internal/core/chatter.go` (`BuildSession`, `Send`), `internal/domain/domain.go`: each
//!   run appends a `meta` message holding the run's command line (`os.Args[1:]` joined by
//!   spaces; never sent to the model), then a `system` message (the context, the pattern, a
//!   strategy's prompt and a language instruction, joined), then the user's message (a
//!   single space when none was given; left out when a pattern used it as its input), and
//!   at the end the reply, `{role: assistant, content}`. With `--raw` the system text is sent
//!   as the user message instead. Nothing else is stored: no time, model, vendor, usage,
//!   cwd or tool call.
//!
//! Design decisions and why:
//! - **Root**: `~/.config/fabric/sessions`. A `--store` path may be that directory, Fabric's
//!   data directory holding `sessions/`, or one session file.
//! - **Never read**: `.env` (API keys), `.<provider>_oauth` (OAuth tokens), `config.yaml`,
//!   `patterns/`, `contexts/`, `strategies/` and `extensions/`: templates and settings, no
//!   sessions. What of them a run used is in the session's system message already.
//! - **One file is one session**, listed by name like `--listsessions` (hidden names too): the
//!   id and the title are the name the user gave `--session`. The first prompt is not a better
//!   title: it is often piped-in text for a pattern, and in raw mode the pattern itself.
//! - **Each file is read in one read**, element by element when it is cut (the reader the
//!   Cline and CopilotChat stores use): every message before the cut is kept, the rest is
//!   shown raw and a warning names the file; a file that is no JSON array is shown raw with a
//!   warning; `null` (Go's empty list) is an empty session.
//! - **What each message becomes**: `user` messages are prompts (attachments as
//!   placeholders; Fabric's one-space prompt holds nothing and shows nothing); `assistant`
//!   messages are replies (`reasoning_content` as thinking, a `refusal` as a paragraph of the
//!   reply); `system` messages are context labelled `system prompt`; `meta` messages are
//!   events reading `fabric <command line>`. The OpenAI fields Fabric's message type carries
//!   but Fabric itself never fills are shown when another writer did: `tool_calls` and
//!   `function_call` as tool calls, `tool` and `function` messages as their results (no error
//!   flag exists; a `function` message answers the id-less `function_call` before it),
//!   `developer` messages as context. Another role, an element that is no
//!   object, a part of unknown type and a field sessfs does not know cost a warning.
//! - **Model, usage, times, cwd**: Fabric stores none. The model of a run is visible only in
//!   its command line when `-m` was given (the default model lives in `.env`, never read).
//!   The file's modification time (the last run) is the update time; there is no creation
//!   time.
//!
//! **Shared with ShellGPT.** ShellGPT ([`super::sgpt`]) saves a chat as the same bare array of
//! OpenAI chat messages, so its store reads them with [`read_chat`] and its own [`Dialect`]:
//! no `meta` role, and the legacy `function_call` / `function` pair it wrote before tool
//! calls. What is said here of the messages holds for both.

use super::cline::parse_array;
use super::kit::{self, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Message, Role, Session, ToolCall};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Larger session files are not parsed (a whole file is held while parsing).
const MAX_JSON_BYTES: u64 = 256 << 20;
/// Fabric's data directory under the home, on every platform.
const DATA_DIR: &str = ".config/fabric";
/// Fields of a message the store knows (`name` only on `tool` and `function` messages).
const KNOWN_FIELDS: &[&str] = &[
    "role",
    "content",
    "refusal",
    "reasoning_content",
    "function_call",
    "tool_calls",
    "tool_call_id",
];

/// What the stores whose sessions are saved arrays of OpenAI chat messages tell apart.
#[derive(Clone, Copy, Debug)]
pub struct Dialect {
    /// The program that saves a `meta` message per run holding the run's command line, shown
    /// as the event `<program> <command line>`; `None` where `meta` is no role of the writer
    /// (it is then an unknown role).
    pub meta_program: Option<&'static str>,
}

/// Fabric's sessions.
pub const FABRIC: Dialect = Dialect {
    meta_program: Some("fabric"),
};

/// The sessions directory Fabric uses, existing or not.
pub fn candidates(env: &Env) -> Vec<Root> {
    vec![Root::new(
        Agent::Fabric,
        env.home.join(DATA_DIR).join("sessions"),
        "default",
    )]
}

pub struct FabricStore {
    base: Base,
}

impl FabricStore {
    pub fn new(roots: Vec<Root>) -> FabricStore {
        FabricStore {
            base: Base::new(Agent::Fabric, roots),
        }
    }
}

/// The session files under a root: `<root>/sessions/*.json` when the root is Fabric's data
/// directory, else `<root>/*.json`; or the root itself when it is one file. Every regular
/// file ending in `.json` is a session, as for `fabric --listsessions`; nothing else in the
/// data directory (`.env`, `patterns/`, …) is ever listed.
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
            *t == EntryType::File && name.len() > 5 && name.ends_with(b".json")
        })
        .map(|(p, _)| p)
        .collect()
}

impl Store for FabricStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        kit::listed_by_stem(&self.base.roots, session_files)
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        // The listing reads file names only; a run rewrites a session, never adds a name.
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

/// Load one session file.
pub fn load_session(path: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Fabric, id);
    b.s.source.format = "fabric-session-json".into();
    if !id.trim().is_empty() {
        b.s.title = Some(id.to_string());
    }
    read_chat(&FABRIC, &mut b, path);
    b.finish()
}

/// Read one saved array of OpenAI chat messages at `path` into `b`: the file as the
/// session's source and its modification time as the update time, every message in order;
/// a file cut mid-write up to the cut (the rest shown raw, a warning); a file that is no
/// JSON array shown raw with a warning; `null` (Go's empty list) as no message. The parsed
/// elements are returned for what a dialect reads beside the messages (none when the file
/// could not be parsed).
pub fn read_chat(d: &Dialect, b: &mut SessionBuilder, path: &Path) -> Vec<Value> {
    let file = kit::file_name(path).to_string();
    b.s.source.paths.push(path.to_path_buf());
    b.s.updated_at = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from);
    let Some(bytes) = kit::read_capped(b, path, &file, MAX_JSON_BYTES) else {
        return Vec::new();
    };
    if bytes.trim_ascii() == b"null" {
        return Vec::new();
    }
    let Some(records) = parse_array(&bytes) else {
        b.warn(format!("{file}: not a JSON array; its text is shown raw"));
        let raw = kit::raw_text(&bytes);
        if !raw.trim().is_empty() {
            b.context("unparsed file", raw, None);
        }
        return Vec::new();
    };
    if records.unparsed.is_some() {
        b.warn(format!(
            "{file}: cut after {} messages (half-written?); the rest is shown as raw text",
            records.items.len()
        ));
    }
    let mut unknown = BTreeSet::new();
    let mut chat = Chat {
        d,
        open_function_call: None,
    };
    for (i, m) in records.items.iter().enumerate() {
        if let Some(o) = m.as_object() {
            let result = matches!(kit::str_field(m, "role"), Some("tool" | "function"));
            unknown.extend(
                o.keys()
                    .filter(|k| !KNOWN_FIELDS.contains(&k.as_str()))
                    .filter(|k| !(result && k.as_str() == "name"))
                    .cloned(),
            );
        }
        chat.message(b, i, m);
    }
    if let Some(cut) = records.unparsed {
        b.context(&format!("unparsed tail of {file}"), cut, None);
    }
    if !unknown.is_empty() {
        b.warn(format!(
            "{file}: message fields this version of sessfs does not read: {}",
            unknown.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    records.items
}

/// A message's `content`: a string, or the parts of a message with attachments (text as
/// is, images as placeholders, a part of another type counted and shown as its JSON).
fn content_text(b: &mut SessionBuilder, i: usize, c: Option<&Value>) -> String {
    match c {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let mut out = String::new();
            for p in parts {
                let text = match kit::str_field(p, "type") {
                    Some("text") => kit::str_field(p, "text").unwrap_or_default().to_string(),
                    Some("image_url") => match kit::str_at(p, &["image_url", "url"]) {
                        Some(url) => kit::data_url_placeholder(url),
                        None => "[image]".to_string(),
                    },
                    other => {
                        let ty = other.unwrap_or("(none)");
                        b.unparsed.note(
                            "content parts",
                            &format!("unknown part type {ty}"),
                            || format!("message {i}"),
                        );
                        p.to_string()
                    }
                };
                if !text.is_empty() {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(&text);
                }
            }
            out
        }
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// A non-blank string field.
fn text_field(m: &Value, key: &str) -> Option<String> {
    kit::str_field(m, key)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string)
}

/// The reading of one array: its dialect, and the legacy function call still waiting for
/// its result.
struct Chat<'d> {
    d: &'d Dialect,
    /// The id given to the last `function_call`, until a `function` message answers it.
    open_function_call: Option<String>,
}

impl Chat<'_> {
    /// One element of the saved array.
    fn message(&mut self, b: &mut SessionBuilder, i: usize, m: &Value) {
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
        let text = content_text(b, i, m.get("content"));
        match (kit::str_field(m, "role"), self.d.meta_program) {
            (Some("user"), _) => {
                if text.trim().is_empty() {
                    return;
                }
                b.push(Message {
                    role: Role::User,
                    content: text,
                    ..Message::default()
                });
            }
            (Some("assistant"), _) => {
                let mut content = text;
                if let Some(r) = text_field(m, "refusal") {
                    kit::push_paragraph(&mut content, &format!("Refusal: {r}"));
                }
                let calls = self.tool_calls(b, i, m);
                b.push(Message {
                    role: Role::Assistant,
                    content,
                    thinking: text_field(m, "reasoning_content"),
                    tool_calls: calls,
                    ..Message::default()
                });
            }
            (Some("system"), _) => b.context("system prompt", text, None),
            (Some("developer"), _) => b.context("developer message", text, None),
            (Some("meta"), Some(program)) => b.event(format!("{program} {}", text.trim()), None),
            (Some("tool"), _) => {
                let call = kit::str_field(m, "tool_call_id").unwrap_or_default();
                b.tool_result(call, kit::str_field(m, "name"), text, false, None);
            }
            (Some("function"), _) => {
                // A legacy result answers the last `function_call` (the API allowed one at a
                // time, and no id links them).
                let call = self.open_function_call.take().unwrap_or_default();
                b.tool_result(&call, kit::str_field(m, "name"), text, false, None);
            }
            (role, _) => {
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

    /// A reply's calls in the OpenAI shape: `tool_calls: [{id, type, function: {name,
    /// arguments}}]` and the older single `function_call: {name, arguments}`, the arguments
    /// JSON text (parsed, kept verbatim when they are not JSON). A `function_call` has no id:
    /// it is given `function-call-<message index>`, which the `function` message after it
    /// answers.
    fn tool_calls(&mut self, b: &mut SessionBuilder, i: usize, m: &Value) -> Vec<ToolCall> {
        let listed = m.get("tool_calls").and_then(Value::as_array);
        let single = m.get("function_call").filter(|f| f.is_object());
        let legacy_id = single.map(|_| format!("function-call-{i}"));
        let mut out = Vec::new();
        let calls = listed
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    kit::str_field(c, "id").unwrap_or_default(),
                    c.get("function"),
                )
            })
            .chain(single.map(|f| (legacy_id.as_deref().unwrap_or_default(), Some(f))));
        for (ci, (id, f)) in calls.enumerate() {
            let f = f.unwrap_or(&Value::Null);
            let input = kit::call_input(
                f.get("arguments"),
                "tool call arguments",
                &mut b.unparsed,
                || format!("message {i}, call {ci}"),
            );
            out.push(ToolCall {
                tool_call_id: id.to_string(),
                tool_name: kit::str_field(f, "name").unwrap_or_default().to_string(),
                input,
                ..ToolCall::default()
            });
        }
        if legacy_id.is_some() {
            self.open_function_call = legacy_id;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_root_is_under_dot_config_whatever_xdg_says() {
        let mut env = Env::at_home(Path::new("/h"));
        env.vars.insert("XDG_CONFIG_HOME".into(), "/x".into());
        let roots: Vec<(PathBuf, String)> = candidates(&env)
            .into_iter()
            .map(|r| (r.path, r.how))
            .collect();
        assert_eq!(
            roots,
            [(
                PathBuf::from("/h/.config/fabric/sessions"),
                "default".to_string()
            )]
        );
    }

    #[test]
    fn only_json_files_of_the_sessions_directory_are_sessions() {
        let dir = tempfile::tempdir().expect("tmp");
        let data = dir.path();
        for f in [
            ".env",
            "config.yaml",
            "unique_patterns.txt",
            "sessions/work.json",
            "sessions/.scratch.json",
            "sessions/notes.txt",
            "patterns/summarize/system.md",
            "contexts/rust",
        ] {
            let p = data.join(f);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, "[]").expect("write");
        }
        std::fs::create_dir_all(data.join("sessions/old.json")).expect("mkdir");
        let names = |root: &Path| -> Vec<String> {
            session_files(root)
                .iter()
                .map(|p| kit::file_name(p).to_string())
                .collect()
        };
        // The data directory and its `sessions/` list the same files.
        assert_eq!(names(data), [".scratch.json", "work.json"]);
        assert_eq!(
            names(&data.join("sessions")),
            [".scratch.json", "work.json"]
        );
    }

    #[test]
    fn parts_text_and_images_become_one_prompt() {
        let mut b = SessionBuilder::new(Agent::Fabric, "t");
        let png = format!("data:image/png;base64,{}", "A".repeat(4000));
        let m = json!({"role": "user", "content": [
            {"type": "text", "text": "describe this"},
            {"type": "image_url", "image_url": {"url": png}},
            {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            {"type": "audio", "data": "zz"}
        ]});
        let mut chat = Chat {
            d: &FABRIC,
            open_function_call: None,
        };
        chat.message(&mut b, 0, &m);
        let s = b.finish();
        assert_eq!(
            s.messages[0].content,
            "describe this\n[image: image/png, 3.0 KB]\n[image: https://x/y.png]\n{\"type\":\"audio\",\"data\":\"zz\"}"
        );
        assert!(
            s.warnings
                .iter()
                .any(|w| w.contains("unknown part type audio")),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn a_function_message_answers_the_function_call_before_it() {
        let mut b = SessionBuilder::new(Agent::Sgpt, "t");
        let mut chat = Chat {
            d: &Dialect { meta_program: None },
            open_function_call: None,
        };
        let call = json!({"role": "assistant", "content": "",
            "function_call": {"name": "execute_shell_command", "arguments": "{\"shell_command\": \"ls\"}"}});
        chat.message(&mut b, 2, &call);
        chat.message(
            &mut b,
            3,
            &json!({"role": "function", "content": "a.txt", "name": "execute_shell_command"}),
        );
        // A second result has no open call left to answer.
        chat.message(
            &mut b,
            4,
            &json!({"role": "function", "content": "stray", "name": "f"}),
        );
        chat.message(
            &mut b,
            5,
            &json!({"role": "meta", "content": "--session x"}),
        );
        let s = b.finish();
        let c = &s.messages[0].tool_calls[0];
        assert_eq!(c.tool_call_id, "function-call-2");
        assert_eq!(c.input, json!({"shell_command": "ls"}));
        let r = s.messages[1].tool_result.as_ref().expect("result");
        assert_eq!(
            (
                r.tool_call_id.as_str(),
                r.tool_name.as_str(),
                r.output.as_str()
            ),
            ("function-call-2", "execute_shell_command", "a.txt")
        );
        let stray = s.messages[2].tool_result.as_ref().expect("result");
        assert_eq!(stray.tool_call_id, "");
        // `meta` is no role outside Fabric.
        assert!(
            s.warnings.iter().any(|w| w.contains("unknown role meta")),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn null_is_an_empty_session_without_warning() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("empty.json");
        std::fs::write(&p, "null").expect("write");
        let s = load_session(&p, "empty");
        assert!(s.messages.is_empty());
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert_eq!(s.title.as_deref(), Some("empty"));
    }
}
