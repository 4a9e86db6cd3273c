//! Open Interpreter: one JSON file per conversation under
//! `~/.config/open-interpreter/conversations/`.
//!
//! Learnt from Open Interpreter's own source, github.com/OpenInterpreter/open-interpreter at
//! commit `dcfcffa9af13737bee1fa128364a718b56324998` (main, release 0.4.3):
//! `interpreter/core/core.py` (`conversation_history`, `conversation_filename`,
//! `conversation_history_path`, `_streaming_chat`, which names the file and rewrites it whole
//! with `json.dump(self.messages)` after every exchange, and `_respond_and_store`, which
//! builds the messages from the streamed chunks), `interpreter/core/respond.py` (what the
//! assistant and the computer yield), `interpreter/core/llm/utils/convert_to_openai_messages.py`
//! (every message type and what the model reads of it: code is the `execute` function with
//! `{language, code}`), `interpreter/core/computer/terminal/terminal.py` and
//! `languages/jupyter_language.py`, `languages/html.py` (console output, images and displayed
//! code the computer yields), `interpreter/terminal_interface/terminal_interface.py` (image
//! paths given with a prompt, declined code), `interpreter/terminal_interface/utils/local_storage_path.py`,
//! `utils/oi_dir.py` and `interpreter/terminal_interface/conversation_navigator.py` (where the
//! files live and how their names read), `interpreter/terminal_interface/profiles/profiles.py`
//! (`migrate_app_directory`, the older directories); the 0.1 shape and places from tags
//! `v0.1.5`, `v0.1.8` and `v0.1.16` (`interpreter/core/core.py`, `interpreter/core/respond.py`,
//! `interpreter/utils/merge_deltas.py`).
//!
//! **Where.** platformdirs' `user_config_dir("open-interpreter")/conversations` (0.2.1 and
//! later): `$XDG_CONFIG_HOME/open-interpreter/conversations`, else
//! `~/.config/open-interpreter/conversations`; macOS `~/Library/Application
//! Support/open-interpreter/conversations`. Older releases wrote to appdirs'
//! `user_config_dir("Open Interpreter")/conversations` (0.1.8 to 0.2.0: `~/.config/Open
//! Interpreter`) and, first, `user_data_dir("Open Interpreter")/conversations` (0.1.5 to 0.1.7:
//! `$XDG_DATA_HOME`, else `~/.local/share`; on macOS both are `~/Library/Application
//! Support/Open Interpreter`): read too. 0.2.1 copies the old conversations into the new
//! directory once; a file name found in an earlier root hides the copy in a later one. A
//! `--store` path is a conversations directory or the directory holding one. Beside the
//! conversations Open Interpreter keeps `profiles/*.yaml` and `*.py` (settings, API keys among
//! them), the old `config.yaml`, `models/`, `skills/` and `~/.cache/open-interpreter/contribute.json`:
//! none is opened, so the model, like the working directory, is unknown.
//!
//! **Names.** `<first words>__<%B_%d_%Y_%H-%M-%S>.json`: the first 25 characters of the first
//! message split at spaces, the last (cut) word dropped, joined by `_`, `<>:"/\|?*!` and
//! newlines removed (15 characters, unsplit, for a language without spaces), then the local
//! time of the first save (0.1.5 wrote the time alone). The id is the name without `.json`;
//! the title is the words with `_` read as spaces, as Open Interpreter's `--conversations`
//! menu shows them (the first prompt when there are none); the time in the name is the start,
//! read as this machine's local time. The file's mtime is the last save: the update.
//!
//! **Messages (0.1.17 and later: LMC).** `{role, type, format?, content, recipient?}`: `user`
//! `message` prompts, with `image` messages (`format` `path`, `base64[.png|.jpeg]` or
//! `description`) joined to the prompt as placeholders; `assistant` `message` replies and
//! `code` (`format` the language): the `execute` call Open Interpreter runs, numbered by its
//! place in the array since it has no id. What the `computer` yields after it (`console`
//! `output`, `image`, `code` it displays) is that call's result, one result per run; no
//! status is kept, so a result is marked failed only when it holds a Python traceback or is
//! Open Interpreter's own "disabled or not supported" / "Code block was empty" answer. A call
//! the user declined has no result ("I have declined to run this code." is the next prompt).
//! `file` is context, `error` an event, `system` messages context. `console` `active_line`
//! records (the line the display highlighted) are counted in a warning, not shown.
//!
//! **Messages (0.1.5 to 0.1.16).** `{role, message, language?, code?, output?, image?}` (deltas
//! merged into one object per turn; a `function_call` with `parsed_arguments` or `arguments`
//! is read for the code when the flat keys are missing): a user prompt with its image, an
//! assistant reply whose code is an `execute` call holding its own output.
//!
//! A file cut mid-rewrite keeps every message before the cut, the rest in `unparsed.txt`; an
//! element that is no message is shown as unparsed context and counted in a warning.
//! Open Interpreter keeps no token usage, cost or model in a conversation.

use super::cline;
use super::jsonl::UNPARSED_FILE;
use super::kit::{self, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{placeholder, Agent, Message, MessageKind, Role, Session, ToolCall};
use chrono::{DateTime, Local, NaiveDateTime, TimeZone, Utc};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Largest conversation file parsed (screenshots are kept inline as base64).
const MAX_JSON_BYTES: u64 = 256 << 20;
/// Longest raw text kept for an element that is no message.
const MAX_RAW_CHARS: usize = 64 << 10;
const CONVERSATIONS: &str = "conversations";
/// The function Open Interpreter offers the model for running code.
const TOOL: &str = "execute";

/// The conversations directories of every release, newest first.
pub fn candidates(env: &Env) -> Vec<Root> {
    let mut out: Vec<Root> = Vec::new();
    let mut push = |path: PathBuf, how: &str| {
        if !out.iter().any(|r| r.path == path) {
            out.push(Root::new(Agent::Interpreter, path, how));
        }
    };
    let (config, config_how) = match env.path_var("XDG_CONFIG_HOME") {
        Some(p) => (p, "XDG_CONFIG_HOME"),
        None => (env.home.join(".config"), "default"),
    };
    let (data, data_how) = match env.path_var("XDG_DATA_HOME") {
        Some(p) => (p, "XDG_DATA_HOME"),
        None => (env.home.join(".local/share"), "default"),
    };
    let mac = env.home.join("Library/Application Support");
    for app in ["open-interpreter", "Open Interpreter"] {
        push(config.join(app).join(CONVERSATIONS), config_how);
        push(mac.join(app).join(CONVERSATIONS), "default");
    }
    push(data.join("Open Interpreter").join(CONVERSATIONS), data_how);
    out
}

pub struct InterpreterStore {
    base: Base,
}

impl InterpreterStore {
    pub fn new(roots: Vec<Root>) -> InterpreterStore {
        InterpreterStore {
            base: Base::new(Agent::Interpreter, roots),
        }
    }
}

/// The conversations directory a root stands for (itself, or its `conversations/`).
fn conversations_dir(root: &Path) -> PathBuf {
    let under = root.join(CONVERSATIONS);
    if under.is_dir() {
        under
    } else {
        root.to_path_buf()
    }
}

impl Store for InterpreterStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for (p, t) in kit::typed_entries(&conversations_dir(&root.path)) {
                let name = kit::file_name(&p);
                let Some(stem) = name.strip_suffix(".json") else {
                    continue;
                };
                if t != EntryType::File || stem.is_empty() || name.starts_with('.') {
                    continue;
                }
                let stem = stem.to_string();
                if seen.insert(stem.clone()) {
                    out.push(Listed::file(stem, p, i));
                }
            }
        }
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        load(&listed.path, &listed.id)
    }

    /// Ids are file names.
    fn keeps_listing(&self, _listed: &Listed) -> bool {
        true
    }

    /// What the listing reads: each root's entries (and its `conversations/`'s).
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if !root.path.is_dir() {
                return None;
            }
            g.dirs.push(root.path.clone());
            let under = root.path.join(CONVERSATIONS);
            if under.is_dir() {
                g.dirs.push(under);
            }
        }
        Some(g)
    }
}

/// `(title, start)` from a file's stem: `<words>__<%B_%d_%Y_%H-%M-%S>`, or the time alone.
fn name_parts(stem: &str) -> (Option<String>, Option<DateTime<Utc>>) {
    let (words, time) = match stem.rsplit_once("__") {
        Some((w, t)) => match name_time(t) {
            Some(t) => (w, Some(t)),
            None => (stem, None),
        },
        None => match name_time(stem) {
            Some(t) => ("", Some(t)),
            None => (stem, None),
        },
    };
    let title = words.replace('_', " ").trim().to_string();
    ((!title.is_empty()).then_some(title), time)
}

/// `March_04_2026_09-15-00`, Open Interpreter's local time.
fn name_time(s: &str) -> Option<DateTime<Utc>> {
    let t = NaiveDateTime::parse_from_str(s, "%B_%d_%Y_%H-%M-%S").ok()?;
    Local
        .from_local_datetime(&t)
        .earliest()
        .map(|d| d.with_timezone(&Utc))
}

/// One conversation file.
pub fn load(path: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Interpreter, id);
    b.s.source.paths.push(path.to_path_buf());
    b.s.source.format = "interpreter-json".into();
    let (title, start) = name_parts(id);
    b.s.title = title;
    b.s.created_at = start;
    let name = kit::file_name(path).to_string();
    let bytes = match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_JSON_BYTES => {
            b.warn(format!(
                "{name}: {} bytes, too large to parse, skipped",
                m.len()
            ));
            return b.finish();
        }
        Ok(m) => {
            let saved = m.modified().ok().map(DateTime::<Utc>::from);
            b.s.updated_at = saved.max(start);
            match kit::read_file(path) {
                Ok(bytes) => bytes,
                Err(e) => {
                    b.warn(format!("{name}: cannot read: {e}"));
                    return b.finish();
                }
            }
        }
        Err(e) => {
            b.warn(format!("{name}: cannot read: {e}"));
            return b.finish();
        }
    };
    let Some(records) = cline::parse_array(&bytes) else {
        b.warn(format!(
            "{name}: not a JSON array; its raw text is in {UNPARSED_FILE}"
        ));
        let text: String = String::from_utf8_lossy(&bytes)
            .chars()
            .take(MAX_RAW_CHARS)
            .collect();
        b.s.extra_files.push((
            UNPARSED_FILE.into(),
            format!("{name}: not a JSON array\n{text}\n"),
        ));
        return b.finish();
    };
    let count = records.items.len();
    let mut st = State::default();
    for (i, v) in records.items.iter().enumerate() {
        if v.get("type").is_some() {
            st.lmc = true;
            lmc(&mut b, &mut st, i, v);
        } else if v.is_object() && v.get("role").is_some() {
            st.legacy = true;
            legacy(&mut b, i, v);
        } else {
            not_a_message(&mut b, i, v, "not a message");
        }
    }
    b.s.source.format_version = match (st.lmc, st.legacy) {
        (true, false) => Some("lmc".into()),
        (false, true) => Some("0.1".into()),
        (true, true) => Some("lmc+0.1".into()),
        (false, false) => None,
    };
    if st.active_lines > 0 {
        b.warn(format!(
            "{} active_line records (the line the display highlighted while code ran) not shown",
            st.active_lines
        ));
    }
    if let Some(raw) = records.unparsed {
        b.warn(format!(
            "{name}: cut after {count} records (half-written?); the rest is in {UNPARSED_FILE}"
        ));
        b.s.extra_files.push((
            UNPARSED_FILE.into(),
            format!("{name}: after the last complete record\n{raw}\n"),
        ));
    }
    b.finish()
}

#[derive(Default)]
struct State {
    /// The code call the computer's output answers: the last `code` with nothing but
    /// computer output after it.
    open: Option<String>,
    active_lines: usize,
    lmc: bool,
    legacy: bool,
}

/// A message's content as text: strings as they are, other JSON as JSON.
fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The placeholder an LMC `image` message stands for.
fn image(format: Option<&str>, content: &str) -> String {
    match format.unwrap_or_default() {
        f if f.starts_with("base64") => {
            let ext = f.split_once('.').map_or("png", |(_, e)| e);
            kit::base64_placeholder("image", Some(&format!("image/{ext}")), Some(content))
        }
        "path" => format!("{} {content}", placeholder("image", None, None)),
        "description" => format!("[image description] {content}"),
        "" => placeholder("image", None, None),
        other => placeholder("image", Some(other), None),
    }
}

/// Whether an output is a failure: a Python traceback (the code raised, or Open Interpreter
/// could not run it) or Open Interpreter's own refusal.
fn failed(output: &str) -> bool {
    let t = output.trim();
    t.contains("Traceback (most recent call last)")
        || (t.starts_with('`') && t.ends_with("` disabled or not supported."))
        || t.starts_with("Code block was empty.")
}

/// `what` joined to the last message's text on a line of its own.
fn append_line(text: &mut String, what: &str) {
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(what);
}

/// An element shown as unparsed context and counted.
fn not_a_message(b: &mut SessionBuilder, i: usize, v: &Value, problem: &str) {
    let raw: String = v.to_string().chars().take(MAX_RAW_CHARS).collect();
    b.unparsed(
        "records",
        problem,
        || format!("record {}", i + 1),
        "record",
        &raw,
        None,
    );
}

/// The assistant message a call joins: the reply just before it, else a new one.
fn push_call(b: &mut SessionBuilder, call: ToolCall) {
    let joins =
        b.s.messages
            .last()
            .is_some_and(|m| m.role == Role::Assistant && m.kind == MessageKind::Normal);
    let mut m = match joins {
        true => b.s.messages.pop().unwrap_or_default(),
        false => Message {
            role: Role::Assistant,
            ..Message::default()
        },
    };
    m.role = Role::Assistant;
    m.tool_calls.push(call);
    b.push(m);
}

/// One LMC message (0.1.17 and later).
fn lmc(b: &mut SessionBuilder, st: &mut State, i: usize, v: &Value) {
    let role = kit::str_field(v, "role").unwrap_or_default();
    let ty = kit::str_field(v, "type").unwrap_or_default();
    let format = kit::str_field(v, "format");
    let content = text_of(v.get("content"));
    if ty == "console" && format == Some("active_line") {
        st.active_lines += 1;
        return;
    }
    if role == "computer" && matches!(ty, "console" | "image" | "code") {
        let part = match ty {
            "image" => image(format, &content),
            "code" => format!("```{}\n{content}\n```", format.unwrap_or_default()),
            _ => content,
        };
        computer_output(b, st, part);
        return;
    }
    st.open = None;
    match (role, ty) {
        ("user", "message") => {
            if !content.trim().is_empty() {
                b.push(Message {
                    role: Role::User,
                    content,
                    ..Message::default()
                });
            }
        }
        (_, "image") => {
            let p = image(format, &content);
            match b.last_mut() {
                Some(m) if m.role == Role::User && m.kind == MessageKind::Normal => {
                    append_line(&mut m.content, &p)
                }
                _ => b.push(Message {
                    role: if role == "assistant" {
                        Role::Assistant
                    } else {
                        Role::User
                    },
                    content: p,
                    ..Message::default()
                }),
            }
        }
        ("assistant", "message") => {
            if !content.trim().is_empty() {
                b.push(Message {
                    role: Role::Assistant,
                    content,
                    ..Message::default()
                });
            }
        }
        ("assistant", "code") => {
            let id = format!("code-{i}");
            push_call(
                b,
                ToolCall {
                    tool_call_id: id.clone(),
                    tool_name: TOOL.into(),
                    input: json!({"language": format, "code": content}),
                    ..ToolCall::default()
                },
            );
            st.open = Some(id);
        }
        (_, "file") => b.context("file", content, None),
        (_, "error") => b.event(format!("{role} error: {content}"), None),
        ("system", "message") => b.context("system message", content, None),
        _ => not_a_message(b, i, v, &format!("unknown role and type {role}/{ty}")),
    }
}

/// What the computer yielded: the open call's result (one per run), else context.
fn computer_output(b: &mut SessionBuilder, st: &mut State, part: String) {
    let Some(id) = st.open.clone() else {
        b.context("computer output", part, None);
        return;
    };
    if let Some(r) = b
        .last_mut()
        .and_then(|m| m.tool_result.as_mut())
        .filter(|r| r.tool_call_id == id)
    {
        append_line(&mut r.output, &part);
        r.is_error |= failed(&part);
        return;
    }
    let is_error = failed(&part);
    b.tool_result(&id, Some(TOOL), part, is_error, None);
}

/// One 0.1 message (0.1.5 to 0.1.16): call and output in the reply's own object.
fn legacy(b: &mut SessionBuilder, i: usize, v: &Value) {
    let role = kit::str_field(v, "role").unwrap_or_default();
    let mut text = text_of(v.get("message"));
    let img = kit::str_field(v, "image").map(kit::data_url_placeholder);
    match role {
        "user" => {
            if let Some(p) = &img {
                append_line(&mut text, p);
            }
            b.push(Message {
                role: Role::User,
                content: text,
                ..Message::default()
            });
        }
        "assistant" => {
            let parsed = kit::value_at(v, &["function_call", "parsed_arguments"]);
            let args = kit::str_at(v, &["function_call", "arguments"])
                .and_then(|a| serde_json::from_str::<Value>(a).ok());
            let field = |k: &str| {
                kit::str_field(v, k)
                    .or_else(|| parsed.and_then(|p| kit::str_field(p, k)))
                    .or_else(|| args.as_ref().and_then(|a| kit::str_field(a, k)))
                    .map(str::to_string)
            };
            let (language, code) = (field("language"), field("code"));
            let output = v.get("output").filter(|o| !o.is_null()).map(|o| {
                let mut out = text_of(Some(o));
                if let Some(p) = &img {
                    append_line(&mut out, p);
                }
                out
            });
            let mut m = Message {
                role: Role::Assistant,
                content: text,
                ..Message::default()
            };
            if code.is_some() || output.is_some() {
                m.tool_calls.push(ToolCall {
                    tool_call_id: format!("code-{i}"),
                    tool_name: TOOL.into(),
                    input: json!({"language": language, "code": code}),
                    is_error: output.as_deref().map(failed),
                    output,
                    ..ToolCall::default()
                });
            } else if let Some(p) = &img {
                append_line(&mut m.content, p);
            }
            b.push(m);
        }
        "system" => b.context("system message", text, None),
        other => not_a_message(b, i, v, &format!("unknown role {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_give_the_title_and_the_local_start() {
        let (title, t) = name_parts("Why_does_the_dev_server__March_04_2026_09-15-00");
        assert_eq!(title.as_deref(), Some("Why does the dev server"));
        let want = Local
            .with_ymd_and_hms(2026, 3, 4, 9, 15, 0)
            .earliest()
            .map(|d| d.with_timezone(&Utc));
        assert_eq!(t, want);
        assert_eq!(name_parts("September_23_2023_18-01-02").0, None);
        assert!(name_parts("September_23_2023_18-01-02").1.is_some());
        assert_eq!(name_parts("my_notes"), (Some("my notes".into()), None));
    }

    #[test]
    fn failures_are_tracebacks_and_refusals() {
        assert!(failed(
            "ok\nTraceback (most recent call last):\n  File \"x\"\nValueError"
        ));
        assert!(failed("`cobol` disabled or not supported."));
        assert!(!failed("3 passed"));
    }
}
