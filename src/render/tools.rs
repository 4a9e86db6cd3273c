//! `tools/NNNN-<tool>.md`: one file per tool call with its full input and output.
//!
//! The transcript shows only a preview of each result so it stays readable; the full text
//! lives here, one file per call, numbered in call order over the active branch so that
//! `ls tools/` reads like the session's tool log. The numbering is computed only by
//! [`index`], which the transcript uses for its links, so the two can never disagree.
//!
//! Unlike `transcript.md`, a tool file may change after it first appears: its output section
//! fills in when the result message arrives.
//!
//! Inputs that carry file contents are shown as the file or the change, not as one JSON
//! string full of `\n` escapes ([`input_markdown`]): what a Write/`write` writes is a code
//! block in the language of its extension, an Edit/MultiEdit/`edit` is a unified diff of
//! old to new text, an `apply_patch` patch is a `diff` block. Any other argument of several
//! lines (a script, a subagent's prompt, a plan) is a code block of its own under its
//! name. The other arguments stay JSON. `messages.jsonl` keeps the input exactly as stored.

use super::text::{code_span_into, fence_into, human_time_into};
use crate::model::{Message, Session, ToolCall, ToolResult};
use foldhash::{HashMap, HashMapExt};
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// `0007-Bash.md`: 1-based call number, four digits, sanitised tool name.
pub fn file_name(index: usize, tool: &str) -> String {
    format!("{index:04}-{}.md", crate::names::tool_file_part(tool))
}

/// One tool call of the active branch and where it sits.
#[derive(Clone, Debug)]
pub struct CallRef<'a> {
    /// 1-based call number.
    pub number: usize,
    pub file: String,
    /// Index of the message holding the call.
    pub message: usize,
    pub call: &'a ToolCall,
}

/// Every tool call in call order, plus a lookup from call id to position in that list.
pub struct ToolIndex<'a> {
    pub calls: Vec<CallRef<'a>>,
    by_id: HashMap<&'a str, usize>,
}

impl<'a> ToolIndex<'a> {
    /// The file of the call with this id (the first call if an id repeats).
    pub fn file_for(&self, tool_call_id: &str) -> Option<&str> {
        self.get(tool_call_id).map(|c| c.file.as_str())
    }

    pub fn get(&self, tool_call_id: &str) -> Option<&CallRef<'a>> {
        if tool_call_id.is_empty() {
            return None;
        }
        self.by_id
            .get(tool_call_id)
            .and_then(|&i| self.calls.get(i))
    }
}

/// Number the tool calls of `messages`; the single place the numbering is defined.
pub fn index(messages: &[Message]) -> ToolIndex<'_> {
    let mut calls = Vec::new();
    let mut by_id = HashMap::new();
    for (mi, m) in messages.iter().enumerate() {
        for call in &m.tool_calls {
            let number = calls.len() + 1;
            if !call.tool_call_id.is_empty() {
                by_id
                    .entry(call.tool_call_id.as_str())
                    .or_insert(calls.len());
            }
            calls.push(CallRef {
                number,
                file: file_name(number, &call.tool_name),
                message: mi,
                call,
            });
        }
    }
    ToolIndex { calls, by_id }
}

/// The first result message after `from` answering `id`.
fn find_result<'a>(messages: &'a [Message], from: usize, id: &str) -> Option<&'a ToolResult> {
    if id.is_empty() {
        return None;
    }
    messages
        .iter()
        .skip(from + 1)
        .filter_map(|m| m.tool_result.as_ref())
        .find(|r| r.tool_call_id == id)
}

/// `(file name, body)` for each tool call, in call order.
pub fn render(s: &Session) -> Vec<(String, String)> {
    let idx = index(&s.messages);
    idx.calls
        .iter()
        .map(|c| (c.file.clone(), render_one(s, c)))
        .collect()
}

fn render_one(s: &Session, c: &CallRef<'_>) -> String {
    let call = c.call;
    let (output, is_error) = match &call.output {
        Some(o) => (Some(o.as_str()), call.is_error.unwrap_or(false)),
        None => match find_result(&s.messages, c.message, &call.tool_call_id) {
            Some(r) => (Some(r.output.as_str()), r.is_error),
            None => (None, false),
        },
    };
    let status = match (output, is_error) {
        (None, _) => "no result",
        (Some(_), true) => "error",
        (Some(_), false) => "ok",
    };
    let mut out = String::with_capacity(256 + output.map_or(0, str::len));
    out.push_str("# ");
    super::text::cell_into(&mut out, &call.tool_name);
    let _ = write!(out, " (call {:04})\n\n| Call id | ", c.number);
    if call.tool_call_id.is_empty() {
        out.push_str("none");
    } else {
        code_span_into(&mut out, &call.tool_call_id);
    }
    out.push_str(" |\n|---|---|\n| Time | ");
    match s.messages.get(c.message).and_then(|m| m.timestamp.as_ref()) {
        Some(t) => human_time_into(&mut out, t),
        None => out.push_str("unknown"),
    }
    let _ = writeln!(out, " |\n| Status | {status} |");
    if let Some(ms) = call.duration_ms {
        out.push_str("| Duration | ");
        super::text::thousands_into(&mut out, ms);
        out.push_str(" ms |\n");
    }
    out.push_str("\n## Input\n\n");
    input_markdown_into(&mut out, call);
    out.push_str("\n## Output\n\n");
    match output {
        Some(o) => fence_into(&mut out, o, ""),
        None => out.push_str("*No result recorded.*\n"),
    }
    out
}

/// The input of a call as Markdown: pretty JSON, with the file contents a writing or
/// editing tool carries taken out and shown as code (see the module doc). Used by both
/// `transcript.md` and the tool file, so they show an input the same way.
pub fn input_markdown(call: &ToolCall) -> String {
    let mut out = String::new();
    input_markdown_into(&mut out, call);
    out
}

/// [`input_markdown`] appended to `out`.
pub fn input_markdown_into(out: &mut String, call: &ToolCall) {
    let (rest, mut blocks) = match file_input(call) {
        Some(split) => split,
        None => match &call.input {
            Value::Object(o) if o.values().any(moves_out) => (o.clone(), Vec::new()),
            input => return super::input_block_into(out, input),
        },
    };
    let rest = take_multiline(rest, &mut blocks);
    let start = out.len();
    if !rest.is_empty() {
        fence_into(out, &super::pretty_json(&rest), "json");
    }
    for b in blocks {
        if out.len() > start {
            out.push('\n');
        }
        if let Some(key) = b.key {
            code_span_into(out, &key);
            out.push_str(":\n\n");
        }
        fence_into(out, &b.body, &b.lang);
    }
}

/// One argument shown as code outside the JSON block.
struct Block {
    /// The argument's name, shown above the code; `None` for the file or change a writing
    /// or editing tool carries, which needs no name.
    key: Option<String>,
    lang: String,
    body: String,
}

impl Block {
    fn change(lang: String, body: String) -> Block {
        Block {
            key: None,
            lang,
            body,
        }
    }
}

fn is_multiline(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| memchr::memchr(b'\n', s.as_bytes()).is_some())
}

/// A text of several lines, or an argument list ending in one (Codex's `shell` `command`:
/// `["bash", "-lc", "…"]`).
fn moves_out(v: &Value) -> bool {
    is_multiline(v)
        || v.as_array()
            .and_then(|a| a.last())
            .is_some_and(is_multiline)
}

/// Every remaining argument whose text runs over several lines (a script, a prompt, a
/// plan) moves out of `rest` into a block of its own, named by its key, so its lines read
/// and `grep` as written rather than as one JSON string of `\n` escapes. A script that
/// ends an argument list moves out as `key[i]`, the arguments before it staying in JSON.
fn take_multiline(mut rest: Map<String, Value>, blocks: &mut Vec<Block>) -> Map<String, Value> {
    if !rest.values().any(moves_out) {
        return rest;
    }
    let mut moved = Vec::new();
    for (key, v) in rest.iter_mut() {
        let lang = match key.as_str() {
            "command" | "cmd" | "script" => "bash",
            _ => "",
        };
        let (name, body) = match v {
            Value::String(s) if s.contains('\n') => {
                moved.push(key.clone());
                (key.clone(), std::mem::take(s))
            }
            Value::Array(a) if a.last().is_some_and(is_multiline) => {
                let i = a.len() - 1;
                let Some(Value::String(s)) = a.pop() else {
                    continue;
                };
                (format!("{key}[{i}]"), s)
            }
            _ => continue,
        };
        blocks.push(Block {
            key: Some(name),
            lang: lang.into(),
            body,
        });
    }
    for key in moved {
        rest.remove(&key);
    }
    rest
}

/// Keys a path is stored under, across agents.
const PATH_KEYS: [&str; 3] = ["file_path", "path", "filePath"];
/// `(old, new)` key pairs of edit tools: Claude `Edit`, pi/omp `edit`, str_replace tools,
/// OpenCode `edit`, Kimi CLI's `StrReplaceFile` edits.
const EDIT_KEYS: [(&str, &str); 5] = [
    ("old_string", "new_string"),
    ("oldText", "newText"),
    ("old_str", "new_str"),
    ("oldString", "newString"),
    ("old", "new"),
];
/// Tool names (lower case, without `_`) whose `content` is a whole file written.
const WRITE_TOOLS: [&str; 4] = ["write", "writefile", "createfile", "create"];

/// The arguments left to show as JSON, and the code blocks taken out.
type Split = (Map<String, Value>, Vec<Block>);

/// The input split for display when the call carries file contents.
fn file_input(call: &ToolCall) -> Option<Split> {
    let name = &call.tool_name;
    if name.eq_ignore_ascii_case("apply_patch") {
        return match &call.input {
            Value::String(p) => Some((Map::new(), vec![Block::change("diff".into(), p.clone())])),
            Value::Object(o) => {
                let mut rest = o.clone();
                let key = ["input", "patch", "patchText"]
                    .into_iter()
                    .find(|k| o.get(*k).is_some_and(Value::is_string))?;
                let patch = rest.remove(key)?.as_str()?.to_string();
                Some((rest, vec![Block::change("diff".into(), patch)]))
            }
            _ => None,
        };
    }
    let obj = call.input.as_object()?;
    let path = PATH_KEYS
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))
        .unwrap_or("");
    // `write_file` and `WriteFile` alike: lower case, `_` left out, compared in place.
    let is_write = |w: &str| {
        name.bytes()
            .filter(|&b| b != b'_')
            .map(|b| b.to_ascii_lowercase())
            .eq(w.bytes())
    };
    // `file_text` (Copilot CLI's `create`, str_replace_editor's `create` command) is a
    // whole file whatever the tool is called; `content` only for a writing tool.
    let content = match obj.get("file_text") {
        Some(Value::String(_)) => Some("file_text"),
        _ if WRITE_TOOLS.iter().any(|w| is_write(w)) => {
            Some("content").filter(|k| obj.get(*k).is_some_and(Value::is_string))
        }
        _ => None,
    };
    if let Some(key) = content {
        let mut rest = obj.clone();
        let Some(Value::String(body)) = rest.remove(key) else {
            return None;
        };
        return Some((rest, vec![Block::change(language(path), body)]));
    }
    if let Some((o, n)) = edit_pair(obj) {
        let mut rest = obj.clone();
        for (ko, kn) in EDIT_KEYS {
            rest.remove(ko);
            rest.remove(kn);
        }
        return Some((
            rest,
            vec![Block::change("diff".into(), unified(path, o, n))],
        ));
    }
    // A list of edits (`edits`, Kimi CLI's `edit`), or Kimi CLI's one `edit` object.
    let (key, edits, single) = ["edits", "edit"]
        .into_iter()
        .find_map(|k| match obj.get(k)? {
            Value::Array(a) => Some((k, a.iter().collect::<Vec<_>>(), false)),
            one @ Value::Object(_) => Some((k, vec![one], true)),
            _ => None,
        })?;
    let mut rest = obj.clone();
    let mut diff = String::new();
    let mut extras = Vec::new();
    for e in edits {
        let eo = e.as_object()?;
        let (o, n) = edit_pair(eo)?;
        diff.push_str(&unified(path, o, n));
        let mut extra = eo.clone();
        for (ko, kn) in EDIT_KEYS {
            extra.remove(ko);
            extra.remove(kn);
        }
        extras.push(Value::Object(extra));
    }
    // Per-edit options (`replace_all`) stay visible; empty ones say nothing.
    if extras
        .iter()
        .all(|e| e.as_object().is_some_and(Map::is_empty))
    {
        rest.remove(key);
    } else if single {
        rest.insert(key.into(), extras.swap_remove(0));
    } else {
        rest.insert(key.into(), Value::Array(extras));
    }
    Some((rest, vec![Block::change("diff".into(), diff)]))
}

fn edit_pair(o: &Map<String, Value>) -> Option<(&str, &str)> {
    EDIT_KEYS
        .iter()
        .find_map(|(ko, kn)| Some((o.get(*ko)?.as_str()?, o.get(*kn)?.as_str()?)))
}

/// A unified diff of one replacement, all of it shown (old and new are snippets).
fn unified(path: &str, old: &str, new: &str) -> String {
    let (a, b) = if path.is_empty() {
        ("a".to_string(), "b".to_string())
    } else {
        (format!("a/{path}"), format!("b/{path}"))
    };
    let mut old = old.to_string();
    let mut new = new.to_string();
    // Snippets rarely end in a newline; diff them as whole lines.
    for t in [&mut old, &mut new] {
        if !t.is_empty() && !t.ends_with('\n') {
            t.push('\n');
        }
    }
    similar::TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(usize::MAX / 4)
        .header(&a, &b)
        .to_string()
}

/// The fence language for a file: from its extension (or name), as GitHub and Obsidian
/// name languages; unknown extensions are used as they are.
fn language(path: &str) -> String {
    let file = path.rsplit(['/', '\\']).next().unwrap_or("");
    let lower = file.to_ascii_lowercase();
    match lower.as_str() {
        "makefile" | "gnumakefile" => return "makefile".into(),
        "dockerfile" => return "dockerfile".into(),
        _ => {}
    }
    let Some((_, ext)) = lower.rsplit_once('.') else {
        return String::new();
    };
    let lang = match ext {
        "rs" => "rust",
        "py" => "python",
        "js" | "mjs" | "cjs" => "javascript",
        "ts" | "mts" | "cts" => "typescript",
        "md" | "markdown" => "markdown",
        "sh" | "bash" | "zsh" => "bash",
        "yml" => "yaml",
        "rb" => "ruby",
        "ex" | "exs" => "elixir",
        "h" => "c",
        "cc" | "cxx" | "hpp" | "hh" => "cpp",
        "kt" | "kts" => "kotlin",
        "txt" | "log" => "",
        e if !e.is_empty() && e.chars().all(|c| c.is_ascii_alphanumeric()) => e,
        _ => "",
    };
    lang.to_string()
}
