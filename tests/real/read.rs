//! The suite's own reading of the raw native files: for each session, the lines a reader
//! must find in the mount (prompts, replies, thinking, tool output) and its token recount.
//!
//! Written from the agents' formats (`docs/formats.md` of the research notes, and the
//! files themselves), with `serde_json` and `rusqlite` only: never sessfs' parsers, so a
//! parser bug cannot hide itself. One function per agent; [`READERS`] is the table.

use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// What a line of the raw session is, for the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Prompt,
    Reply,
    Thinking,
    ToolOutput,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Prompt => "prompt",
            Kind::Reply => "reply",
            Kind::Thinking => "thinking",
            Kind::ToolOutput => "tool output",
        }
    }
}

/// One expected line: found when any of `alts` (normalised by [`norm_line`]) is a line of
/// the session's rendered files.
#[derive(Clone, Debug)]
pub struct Expect {
    pub kind: Kind,
    pub alts: Vec<String>,
}

/// How the mounted directories of a raw session are found.
#[derive(Clone, Debug)]
pub enum Match {
    /// Every mounted session whose `meta.json` `source.paths` names the raw file.
    Path,
    /// The mounted session whose `meta.json` `sessionId` is `id`, among those whose
    /// sources name `source` when given (database stores: many sessions, one file).
    Id { id: String, source: Option<PathBuf> },
}

/// Tokens of one session, recounted. `input` is every prompt-side token (uncached, cache
/// read, cache write), `output` every generated one (reasoning included), so the check
/// does not depend on how a store splits them between `meta.json` fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    /// `None` where the store records no prompt-side count for this session.
    pub input: Option<u64>,
    pub output: u64,
}

#[derive(Clone, Debug)]
pub struct Raw {
    /// The agent's directory in the mount.
    pub agent: &'static str,
    pub id: String,
    /// The native file (scratch path), or the database holding the session.
    pub file: PathBuf,
    pub matcher: Match,
    pub lines: Vec<Expect>,
    pub tokens: Option<Tokens>,
    /// The recount over the active branch only, where the store keeps branches in one file
    /// and `tokens` counts them all (Claude rewinds): compared instead of `tokens` when
    /// the mounted session has branches (`meta.json` cost is the active branch's).
    pub active_tokens: Option<Tokens>,
    /// The part of `tokens` spent by side chains a file keeps inline (Claude Code 1.0.x
    /// `isSidechain` records in the main file), which sessfs shows as nested subagents.
    pub side_tokens: Tokens,
    /// A copy the agent archived (OpenClaw `.reset`, `.bak`, `.checkpoint`): must be
    /// visible, and its tokens count only where it is a session of its own.
    pub archive: bool,
    /// What the user deleted (OpenClaw `.deleted`): hidden by design, not checked.
    pub hidden: bool,
    /// Set for sessions whose tokens are deliberately not compared, with the reason.
    pub token_note: Option<String>,
}

impl Raw {
    pub fn new(agent: &'static str, id: String, file: PathBuf, matcher: Match) -> Raw {
        Raw {
            agent,
            id,
            file,
            matcher,
            lines: Vec::new(),
            tokens: None,
            active_tokens: None,
            side_tokens: Tokens::default(),
            archive: false,
            hidden: false,
            token_note: None,
        }
    }

    pub fn text(&mut self, kind: Kind, text: &str) {
        push_text(&mut self.lines, kind, text, false);
    }

    /// Text that may carry Claude-style wrapper tags sessfs unwraps (see [`tag_alts`]).
    fn tagged(&mut self, kind: Kind, text: &str) {
        push_text(&mut self.lines, kind, text, true);
    }
}

/// A reader: `(folder in the set, mount agent, function)`. A new agent is one row.
pub type Reader = fn(&Ctx, &[PathBuf]) -> Vec<Raw>;
pub const READERS: &[(&str, &str, Reader)] = &[
    ("claude", "claude", claude),
    ("codex", "codex", codex),
    ("gemini", "gemini", gemini),
    ("copilot", "copilot", copilot),
    ("cursor", "cursor", cursor),
    ("opencode", "opencode", opencode),
    ("pi", "pi", pi),
    ("omp", "omp", omp),
    ("openclaw", "openclaw", openclaw),
    ("hermes", "hermes", hermes_db),
    ("hermes-jsonl", "hermes", hermes_jsonl),
    ("atsf", "atsf", atsf),
    ("crush", "crush", super::crush::read),
    ("amp", "amp", crate::amp::read),
    ("qwen", "qwen", crate::qwen::read),
    ("kimi", "kimi", crate::kimi::read),
    ("aider", "aider", crate::aider::read),
    ("factory", "droid", crate::droid::read),
];

/// Where the readers read: a private copy of the scratch home (so not even a reader's
/// `-shm` touches the mounted one), while sessions keep the mounted home's paths.
pub struct Ctx {
    pub home: PathBuf,
    pub copy: PathBuf,
}

impl Ctx {
    pub fn bytes(&self, p: &Path) -> Vec<u8> {
        std::fs::read(self.copy_of(p)).unwrap_or_default()
    }
    pub fn copy_of(&self, p: &Path) -> PathBuf {
        self.copy.join(p.strip_prefix(&self.home).unwrap_or(p))
    }
}

// ---------------------------------------------------------------------------------------
// Text normalisation, mirroring what docs/SEMANTICS.md says `transcript.md` does to text.

/// Terminal control removed as the renderer removes it (SEMANTICS "What transcript.md does
/// to message text"): CSI `ESC [ params final`, string sequences `ESC ] P X ^ _ … BEL|ESC \`,
/// two-byte `ESC <intermediates> final`, and every other control character except `\n` and
/// `\t` (so `\r` goes too). Written here from that description, not shared with sessfs.
pub fn strip_terminal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let cs: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        i += 1;
        if c != '\u{1b}' {
            if !(c.is_control() && c != '\n' && c != '\t') {
                out.push(c);
            }
            continue;
        }
        match cs.get(i).copied() {
            Some('[') => {
                i += 1;
                while let Some(&d) = cs.get(i) {
                    if ('\u{20}'..='\u{3f}').contains(&d) {
                        i += 1;
                    } else {
                        if ('@'..='~').contains(&d) {
                            i += 1;
                        }
                        break;
                    }
                }
            }
            Some(']' | 'P' | 'X' | '^' | '_') => {
                i += 1;
                while let Some(&d) = cs.get(i) {
                    i += 1;
                    if d == '\u{7}' {
                        break;
                    }
                    if d == '\u{1b}' {
                        if cs.get(i) == Some(&'\\') {
                            i += 1;
                        }
                        break;
                    }
                }
            }
            Some(d) if ('\u{20}'..='\u{2f}').contains(&d) => {
                while cs.get(i).is_some_and(|d| ('\u{20}'..='\u{2f}').contains(d)) {
                    i += 1;
                }
                if cs.get(i).is_some_and(|d| ('\u{30}'..='\u{7e}').contains(d)) {
                    i += 1;
                }
            }
            Some(d) if ('\u{30}'..='\u{7e}').contains(&d) => i += 1,
            _ => {}
        }
    }
    out
}

/// One line as compared: trimmed, and without a leading Markdown heading marker (the
/// renderer nests a message's `# Plan` as `#### Plan`, SEMANTICS "headings"); `None` for
/// an empty line, which is never checked.
pub fn norm_line(l: &str) -> Option<String> {
    let t = l.trim();
    let hashes = t.bytes().take_while(|b| *b == b'#').count();
    let t = if (1..=6).contains(&hashes)
        && t[hashes..]
            .chars()
            .next()
            .is_none_or(|c| c == ' ' || c == '\t')
    {
        t[hashes..].trim()
    } else {
        t
    };
    (!t.is_empty()).then(|| t.to_string())
}

/// A rendered line with the renderer's HTML escaping undone (only `<` and `&` are escaped,
/// outside code: SEMANTICS "Text is kept line for line").
pub fn unescape(l: &str) -> String {
    l.replace("&lt;", "<").replace("&amp;", "&")
}

/// Wrapper tags Claude Code writes around text it injects or a slash command's parts; the
/// renderer shows what is inside them (a command as `/name args`, a task notification as
/// `name: value` lines, context blocks collapsed), so a line is also found by its text
/// without them.
const WRAPPERS: &[&str] = &[
    "command-name",
    "command-message",
    "command-args",
    "command-contents",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "system-reminder",
    "bash-input",
    "bash-stdout",
    "bash-stderr",
    "user-prompt-submit-hook",
    "ide_opened_file",
    "ide_selection",
    "ide_diagnostics",
    "task-notification",
    "user_query",
    "user_info",
];

/// The other spellings under which a raw line may legitimately appear: without the
/// wrapper tags of [`WRAPPERS`], and `<x>v</x>` as `x: v` (task notification fields).
fn without_wrappers(line: &str) -> String {
    let mut s = line.to_string();
    for t in WRAPPERS {
        s = s
            .replace(&format!("<{t}>"), "")
            .replace(&format!("</{t}>"), "");
    }
    s
}

fn tag_alts(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let s = without_wrappers(line);
    if s != line {
        out.push(s.clone());
    }
    let t = s.trim();
    if let Some(rest) = t.strip_prefix('<') {
        if let Some(gt) = rest.find('>') {
            let name = &rest[..gt];
            let close = format!("</{name}>");
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                && t.ends_with(&close)
            {
                let inner = &rest[gt + 1..rest.len() - close.len()];
                out.push(format!("{name}: {inner}"));
                out.push(inner.to_string());
            }
        }
    }
    out
}

fn push_text(into: &mut Vec<Expect>, kind: Kind, text: &str, tagged: bool) {
    let clean = strip_terminal(text);
    for l in clean.split('\n') {
        let Some(n) = norm_line(l) else { continue };
        let mut alts = vec![n.clone()];
        if tagged {
            // A line that is nothing but wrapper tags (`<task-notification>` alone) has no
            // text of its own to find.
            if without_wrappers(&n).trim().is_empty() {
                continue;
            }
            alts.extend(tag_alts(&n).iter().filter_map(|a| norm_line(a)));
        }
        into.push(Expect { kind, alts });
    }
}

// ---------------------------------------------------------------------------------------
// JSON helpers.

/// Every JSON value of a JSONL text, also several written on one line with no newline
/// between them (real pi files have such lines); bytes that are no JSON are skipped up to
/// the next `{`. A last line cut short is dropped, as an agent still writing it would.
pub fn values(bytes: &[u8]) -> Vec<Value> {
    let mut out = Vec::new();
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    for (n, line) in lines.iter().enumerate() {
        let line: &[u8] = line;
        // A last line with no newline that does not parse is still being written.
        if n + 1 == lines.len() && serde_json::from_slice::<Value>(line).is_err() {
            break;
        }
        let mut at = 0;
        while at < line.len() {
            let Some(start) = line[at..].iter().position(|b| *b == b'{' || *b == b'[') else {
                break;
            };
            let from = at + start;
            let mut it = serde_json::Deserializer::from_slice(&line[from..]).into_iter::<Value>();
            match it.next() {
                Some(Ok(v)) => {
                    out.push(v);
                    at = from + it.byte_offset();
                }
                _ => at = from + 1,
            }
        }
    }
    out
}

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn u(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

/// Text of a content value: a string, or the `text` of each block in an array.
fn content_texts(v: &Value) -> Vec<String> {
    match v {
        Value::String(t) => vec![t.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|b| match b {
                Value::String(t) => Some(t.clone()),
                _ => b.get("text").and_then(Value::as_str).map(str::to_string),
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn stem(p: &Path) -> String {
    let n = p
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .to_string();
    n.split('.').next().unwrap_or(&n).to_string()
}

// ---------------------------------------------------------------------------------------
// Claude Code

/// A chain record's `(parentUuid, logicalParentUuid, reply key)`.
type Link = (Option<String>, Option<String>, Option<String>);

/// `~/.claude/projects/<dir>/<id>.jsonl` and `<id>/subagents/agent-<a>.jsonl`.
///
/// Lines: user text (string content or `text` blocks; `isMeta` injected text included, the
/// renderer shows it collapsed), `tool_result` content, assistant `text` and `thinking`.
/// Tokens: one usage per API reply, the last record of each `message.id` + `requestId`
/// (a streamed reply repeats its usage on every line).
fn claude(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    let mut out = Vec::new();
    for f in files {
        let n = f
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        if !n.ends_with(".jsonl") {
            continue;
        }
        let id = n.trim_end_matches(".jsonl").to_string();
        let mut r = Raw::new("claude", id, f.clone(), Match::Path);
        let mut usage: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let in_subagents_dir = f.components().any(|c| c.as_os_str() == "subagents");
        let mut side: HashSet<String> = HashSet::new();
        // uuid -> (parentUuid, logicalParentUuid, reply key), and the last chain record.
        let mut links: HashMap<String, Link> = HashMap::new();
        let mut last_chain: Option<String> = None;
        for v in values(&cx.bytes(f)) {
            let Some(t) = s(&v, "type") else { continue };
            let msg = v.get("message").cloned().unwrap_or(Value::Null);
            let key = format!(
                "{}|{}",
                s(&msg, "id").or_else(|| s(&v, "uuid")).unwrap_or(""),
                s(&v, "requestId").unwrap_or("")
            );
            if let Some(uuid) = s(&v, "uuid") {
                links.insert(
                    uuid.to_string(),
                    (
                        s(&v, "parentUuid").map(str::to_string),
                        s(&v, "logicalParentUuid").map(str::to_string),
                        (t == "assistant").then(|| key.clone()),
                    ),
                );
                if matches!(t, "user" | "assistant" | "system" | "attachment") {
                    last_chain = Some(uuid.to_string());
                }
            }
            match t {
                "user" => match msg.get("content") {
                    Some(Value::String(text)) => claude_prompt(&mut r, text),
                    Some(Value::Array(blocks)) => {
                        for b in blocks {
                            match s(b, "type") {
                                Some("text") => claude_prompt(&mut r, s(b, "text").unwrap_or("")),
                                Some("tool_result") => {
                                    for t in content_texts(b.get("content").unwrap_or(&Value::Null))
                                    {
                                        r.tagged(Kind::ToolOutput, &t);
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                },
                "assistant" => {
                    match msg.get("content") {
                        Some(Value::String(text)) => r.text(Kind::Reply, text),
                        Some(Value::Array(blocks)) => {
                            for b in blocks {
                                match s(b, "type") {
                                    Some("text") => r.text(Kind::Reply, s(b, "text").unwrap_or("")),
                                    Some("thinking") => {
                                        r.text(Kind::Thinking, s(b, "thinking").unwrap_or(""))
                                    }
                                    _ => {}
                                }
                            }
                        }
                        _ => {}
                    }
                    if let Some(us) = msg.get("usage") {
                        let input = u(us, "input_tokens")
                            + u(us, "cache_creation_input_tokens")
                            + u(us, "cache_read_input_tokens");
                        if !in_subagents_dir && v.get("isSidechain") == Some(&Value::Bool(true)) {
                            side.insert(key.clone());
                        }
                        usage.insert(key, (input, u(us, "output_tokens")));
                    }
                }
                _ => {}
            }
        }
        r.tokens = Some(Tokens {
            input: Some(usage.values().map(|x| x.0).sum()),
            output: usage.values().map(|x| x.1).sum(),
        });
        let side_usage: Vec<&(u64, u64)> = usage
            .iter()
            .filter(|(k, _)| side.contains(*k))
            .map(|(_, x)| x)
            .collect();
        r.side_tokens = Tokens {
            input: Some(side_usage.iter().map(|x| x.0).sum()),
            output: side_usage.iter().map(|x| x.1).sum(),
        };
        // The active branch: from the last chain record back by `parentUuid` (across a
        // compaction boundary by `logicalParentUuid`).
        let mut on_path: HashSet<String> = HashSet::new();
        let mut seen: HashSet<String> = HashSet::new();
        let mut at = last_chain;
        while let Some(uid) = at {
            if !seen.insert(uid.clone()) {
                break;
            }
            let Some((p, lp, k)) = links.get(&uid) else {
                break;
            };
            if let Some(k) = k {
                on_path.insert(k.clone());
            }
            at = p.clone().or_else(|| lp.clone());
        }
        let active: Vec<&(u64, u64)> = usage
            .iter()
            .filter(|(k, _)| on_path.contains(*k))
            .map(|(_, x)| x)
            .collect();
        r.active_tokens = Some(Tokens {
            input: Some(active.iter().map(|x| x.0).sum()),
            output: active.iter().map(|x| x.1).sum(),
        });
        out.push(r);
    }
    out
}

/// The text between `<tag>` and `</tag>`, if both are there.
fn inner<'a>(text: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let a = text.find(&open)? + open.len();
    let b = a + text[a..].find(&close)?;
    Some(&text[a..b])
}

/// `text` without the element `<tag>…</tag>`.
fn without(text: &str, tag: &str) -> String {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    match (text.find(&open), text.find(&close)) {
        (Some(a), Some(b)) if b >= a => format!("{}{}", &text[..a], &text[b + close.len()..]),
        _ => text.to_string(),
    }
}

/// A Claude user text. A slash command (`<command-name>` with `<command-message>` and
/// `<command-args>`) shows as one line `/name args` (SEMANTICS "Titles and turns"), so
/// that is the line looked for; the `<command-message>` text ("init is analyzing your
/// codebase…") is looked for too unless it only repeats the name. `(no content)` is the
/// placeholder Claude Code writes for a local command that printed nothing: no text.
fn claude_prompt(r: &mut Raw, text: &str) {
    if let Some(name) = inner(text, "command-name") {
        let args = inner(text, "command-args").unwrap_or("");
        // A name written without its `/` is shown with it.
        let shown = format!("{} {}", name.trim(), args.trim());
        let slashed = format!("/{}", shown.trim_start_matches('/'));
        let at = r.lines.len();
        r.text(Kind::Prompt, shown.trim());
        if let Some(first) = r.lines.get_mut(at) {
            if let Some(alt) = norm_line(slashed.lines().next().unwrap_or("")) {
                first.alts.push(alt);
            }
        }
        if let Some(m) = inner(text, "command-message") {
            if m.trim() != name.trim().trim_start_matches('/') {
                r.text(Kind::Prompt, m);
            }
        }
        let rest = without(
            &without(&without(text, "command-name"), "command-args"),
            "command-message",
        );
        r.tagged(Kind::Prompt, &rest);
        return;
    }
    let t = text.replace(
        "<local-command-stdout>(no content)</local-command-stdout>",
        "",
    );
    r.tagged(Kind::Prompt, &t);
}

// ---------------------------------------------------------------------------------------
// Codex

/// `rollout-*.jsonl`. Lines: `response_item` messages (user, assistant, developer),
/// reasoning summaries and reasoning text, function/custom tool outputs, `compacted`
/// summaries; the `event_msg` copies of prompts and replies only in a file with no
/// `response_item` message (SEMANTICS "One user stream"). Tokens: `token_count` totals are
/// cumulative, so the last `total_token_usage` (input includes cached; output includes
/// reasoning). A fork whose parent rollout is in the set would subtract the parent's share:
/// not recounted here (none in the sets); with the parent absent sessfs keeps the whole
/// total and warns, which is what is compared.
fn codex(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    let all: Vec<(PathBuf, Vec<Value>)> = files
        .iter()
        .filter(|f| f.to_string_lossy().ends_with(".jsonl"))
        .map(|f| (f.clone(), values(&cx.bytes(f))))
        .collect();
    let ids: HashSet<String> = all
        .iter()
        .filter_map(|(_, vs)| {
            vs.iter()
                .find(|v| s(v, "type") == Some("session_meta"))
                .and_then(|v| v.pointer("/payload/id")?.as_str().map(str::to_string))
        })
        .collect();
    let mut out = Vec::new();
    for (f, vs) in all {
        let meta = vs.iter().find(|v| s(v, "type") == Some("session_meta"));
        let id = meta
            .and_then(|m| m.pointer("/payload/id")?.as_str().map(str::to_string))
            .unwrap_or_else(|| stem(&f));
        let forked = meta.and_then(|m| {
            m.pointer("/payload/forked_from_id")?
                .as_str()
                .map(str::to_string)
        });
        let mut r = Raw::new("codex", id, f.clone(), Match::Path);
        // Mid-2025 files have no envelope: their lines are the response items themselves.
        let item = |v: &'_ Value| -> (Option<&'static str>, Value) {
            match v.get("payload") {
                None if v.get("type").is_some() => (Some("response_item"), v.clone()),
                p => (
                    match s(v, "type") {
                        Some("response_item") => Some("response_item"),
                        Some("event_msg") => Some("event_msg"),
                        Some("compacted") => Some("compacted"),
                        _ => None,
                    },
                    p.cloned().unwrap_or(Value::Null),
                ),
            }
        };
        let has = |kind: &str| {
            vs.iter().any(|v| {
                let (rt, p) = item(v);
                rt == Some("response_item") && s(&p, "type") == Some(kind)
            })
        };
        let has_items = has("message");
        let has_reasoning = has("reasoning");
        let mut last_total = None;
        for v in &vs {
            let (rt, p) = item(v);
            let p = &p;
            match (rt, s(p, "type")) {
                (Some("response_item"), Some("message")) => {
                    let kind = if s(p, "role") == Some("assistant") {
                        Kind::Reply
                    } else {
                        Kind::Prompt
                    };
                    for t in content_texts(p.get("content").unwrap_or(&Value::Null)) {
                        r.text(kind, &t);
                    }
                }
                (Some("response_item"), Some("reasoning")) => {
                    for k in ["summary", "content"] {
                        for t in content_texts(p.get(k).unwrap_or(&Value::Null)) {
                            r.text(Kind::Thinking, &t);
                        }
                    }
                }
                (Some("response_item"), Some(t)) if t.ends_with("_output") => match p.get("output")
                {
                    // Older rollouts wrap a shell output as the JSON text
                    // `{"output": "…", "metadata": {…}}`; the renderer shows the output.
                    Some(Value::String(o)) => match serde_json::from_str::<Value>(o) {
                        Ok(Value::Object(w)) if w.get("output").is_some_and(Value::is_string) => {
                            r.text(Kind::ToolOutput, w["output"].as_str().unwrap_or(""))
                        }
                        // An MCP result is the JSON of its content blocks; a list of bare
                        // text blocks shows as their texts (SEMANTICS, Codex).
                        Ok(Value::Array(blocks))
                            if !blocks.is_empty()
                                && blocks.iter().all(|b| {
                                    s(b, "type") == Some("text")
                                        && s(b, "text").is_some()
                                        && b.as_object().is_some_and(|o| o.len() == 2)
                                }) =>
                        {
                            for b in &blocks {
                                r.text(Kind::ToolOutput, s(b, "text").unwrap_or(""));
                            }
                        }
                        _ => r.text(Kind::ToolOutput, o),
                    },
                    Some(o @ Value::Array(_)) => {
                        for t in content_texts(o) {
                            r.text(Kind::ToolOutput, &t);
                        }
                    }
                    Some(o @ Value::Object(_)) => {
                        if let Some(t) = s(o, "output").or_else(|| s(o, "content")) {
                            r.text(Kind::ToolOutput, t);
                        }
                    }
                    _ => {}
                },
                (Some("compacted"), _) => {
                    if let Some(m) = s(p, "message") {
                        r.text(Kind::Reply, m);
                    }
                }
                (Some("event_msg"), Some("user_message")) if !has_items => {
                    r.text(Kind::Prompt, s(p, "message").unwrap_or(""))
                }
                (Some("event_msg"), Some("agent_message")) if !has_items => {
                    r.text(Kind::Reply, s(p, "message").unwrap_or(""))
                }
                (Some("event_msg"), Some("agent_reasoning")) if !has_reasoning => {
                    r.text(Kind::Thinking, s(p, "text").unwrap_or(""))
                }
                (Some("event_msg"), Some("token_count")) => {
                    if let Some(t) = p.pointer("/info/total_token_usage") {
                        last_total = Some(Tokens {
                            input: Some(u(t, "input_tokens")),
                            output: u(t, "output_tokens"),
                        });
                    }
                }
                _ => {}
            }
        }
        if forked.as_ref().is_some_and(|p| ids.contains(p)) {
            r.token_note = Some("fork of a rollout in the set: its share is not recounted".into());
        } else {
            r.tokens = Some(last_total.unwrap_or_default());
        }
        out.push(r);
    }
    out
}

// ---------------------------------------------------------------------------------------
// Gemini CLI

/// `tmp/<project>/chats/session-*.json` (one document) and `.jsonl` (an edit log: a message
/// id written again replaces the earlier one, `$set.messages` replaces all, `$rewindTo`
/// drops a message and those after it into a branch), and subagent chats in
/// `chats/<dir>/<id>.json[l]`. Lines: user and gemini `content`, `thoughts` (subject and
/// description), tool results (`functionResponse` output or error, else `resultDisplay`).
/// Tokens: per gemini message of the live conversation, `input` (includes `cached`) and
/// `output + thoughts`; `tool` (tool-use prompt tokens) is not counted, by sessfs either.
fn gemini(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    let mut out = Vec::new();
    for f in files {
        let p = f.to_string_lossy();
        if !p.contains("/chats/") || !(p.ends_with(".json") || p.ends_with(".jsonl")) {
            continue;
        }
        let bytes = cx.bytes(f);
        let (head, live, dropped): (Value, Vec<Value>, Vec<Value>) = if p.ends_with(".jsonl") {
            let vs = values(&bytes);
            let head = vs.first().cloned().unwrap_or(Value::Null);
            let mut order: Vec<String> = Vec::new();
            let mut by_id: HashMap<String, Value> = HashMap::new();
            let mut dropped = Vec::new();
            for v in vs.iter().skip(1) {
                if let Some(set) = v.get("$set") {
                    if let Some(Value::Array(ms)) = set.get("messages") {
                        order.clear();
                        by_id.clear();
                        for m in ms {
                            let id = s(m, "id").unwrap_or("").to_string();
                            if !by_id.contains_key(&id) {
                                order.push(id.clone());
                            }
                            by_id.insert(id, m.clone());
                        }
                    }
                } else if let Some(to) = s(v, "$rewindTo") {
                    if let Some(i) = order.iter().position(|x| x == to) {
                        for id in order.drain(i..) {
                            if let Some(m) = by_id.remove(&id) {
                                dropped.push(m);
                            }
                        }
                    }
                } else if s(v, "type").is_some() {
                    let id = s(v, "id").unwrap_or("").to_string();
                    if !by_id.contains_key(&id) {
                        order.push(id.clone());
                    }
                    by_id.insert(id, v.clone());
                }
            }
            let live = order.iter().filter_map(|i| by_id.get(i).cloned()).collect();
            (head, live, dropped)
        } else {
            let doc: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let ms = doc
                .get("messages")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            (doc, ms, Vec::new())
        };
        let id = s(&head, "sessionId")
            .map(str::to_string)
            .unwrap_or_else(|| stem(f));
        let mut r = Raw::new("gemini", id, f.clone(), Match::Path);
        let mut tokens = Tokens {
            input: Some(0),
            output: 0,
        };
        for (i, m) in live.iter().chain(dropped.iter()).enumerate() {
            let kind = match s(m, "type") {
                Some("user") => Kind::Prompt,
                Some("gemini") => Kind::Reply,
                _ => continue,
            };
            for t in content_texts(m.get("content").unwrap_or(&Value::Null)) {
                r.text(kind, &t);
            }
            for th in m
                .get("thoughts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                r.text(Kind::Thinking, s(th, "subject").unwrap_or(""));
                r.text(Kind::Thinking, s(th, "description").unwrap_or(""));
            }
            for call in m
                .get("toolCalls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let mut any = false;
                for res in call
                    .get("result")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let resp = res.pointer("/functionResponse/response");
                    for k in ["output", "error"] {
                        if let Some(o) = resp.and_then(|x| s(x, k)) {
                            r.text(Kind::ToolOutput, o);
                            any = true;
                        }
                    }
                }
                if !any {
                    if let Some(d) = s(call, "resultDisplay") {
                        r.text(Kind::ToolOutput, d);
                    }
                }
            }
            if i < live.len() {
                if let Some(t) = m.get("tokens") {
                    tokens.input = Some(tokens.input.unwrap_or(0) + u(t, "input"));
                    tokens.output += u(t, "output") + u(t, "thoughts");
                }
            }
        }
        r.tokens = Some(tokens);
        out.push(r);
    }
    out
}

// ---------------------------------------------------------------------------------------
// Copilot CLI

/// `session-state/<id>/events.jsonl`, the flat `<id>.jsonl`, and legacy
/// `history-session-state/*.json`. Lines: `user.message` content, `assistant.message`
/// content and `reasoningText`, `tool.execution_complete` result content or error message.
/// Tokens: the output tokens each `assistant.message` carries (one per reply); the prompt
/// side only exists in `session.shutdown.modelMetrics` (input, which includes cache reads,
/// plus cache writes), compared when no reply came after the last shutdown.
fn copilot(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    let mut out = Vec::new();
    for f in files {
        let n = f
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let bytes = cx.bytes(f);
        if n.ends_with(".json") {
            let doc: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let id = s(&doc, "sessionId")
                .map(str::to_string)
                .unwrap_or_else(|| stem(f));
            let mut r = Raw::new("copilot", id, f.clone(), Match::Path);
            for m in doc
                .get("chatMessages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let kind = match s(m, "role") {
                    Some("user") => Kind::Prompt,
                    Some("assistant") => Kind::Reply,
                    Some("tool") => Kind::ToolOutput,
                    _ => continue,
                };
                for t in content_texts(m.get("content").unwrap_or(&Value::Null)) {
                    r.text(kind, &t);
                }
            }
            out.push(r);
            continue;
        }
        let vs = values(&bytes);
        let id = if n == "events.jsonl" {
            f.parent().map(stem).unwrap_or_default()
        } else {
            n.trim_end_matches(".jsonl").to_string()
        };
        let mut r = Raw::new("copilot", id, f.clone(), Match::Path);
        // Output tokens: each shutdown's totals, plus the replies after the last shutdown
        // (a session resumed and then killed); with no shutdown, the replies' own counts.
        let (mut after_out, mut sd_in, mut sd_out, mut shutdowns, mut after) =
            (0u64, 0u64, 0u64, 0, false);
        for v in &vs {
            let d = v.get("data").unwrap_or(&Value::Null);
            match s(v, "type") {
                Some("user.message") => r.text(Kind::Prompt, s(d, "content").unwrap_or("")),
                Some("assistant.message") => {
                    r.text(Kind::Reply, s(d, "content").unwrap_or(""));
                    r.text(Kind::Thinking, s(d, "reasoningText").unwrap_or(""));
                    after_out += u(d, "outputTokens");
                    after = true;
                }
                Some("tool.execution_complete") => {
                    if let Some(c) = d.pointer("/result/content").and_then(Value::as_str) {
                        r.text(Kind::ToolOutput, &copilot_search_text(c));
                    }
                    if let Some(e) = d.pointer("/error/message").and_then(Value::as_str) {
                        // The renderer appends the error's code: `message (failure)`.
                        let at = r.lines.len();
                        r.text(Kind::ToolOutput, e);
                        if let (Some(code), Some(last)) = (
                            d.pointer("/error/code").and_then(Value::as_str),
                            r.lines.get_mut(at..).and_then(|l| l.last_mut()),
                        ) {
                            let alt = format!("{} ({code})", last.alts[0]);
                            last.alts.push(alt);
                        }
                    }
                }
                Some("session.shutdown") => {
                    shutdowns += 1;
                    after = false;
                    after_out = 0;
                    for m in d
                        .get("modelMetrics")
                        .and_then(Value::as_object)
                        .into_iter()
                        .flatten()
                    {
                        let us = m.1.get("usage").unwrap_or(&Value::Null);
                        sd_in += u(us, "inputTokens") + u(us, "cacheWriteTokens");
                        sd_out += u(us, "outputTokens");
                    }
                }
                _ => {}
            }
        }
        r.tokens = Some(Tokens {
            input: (shutdowns > 0 && !after).then_some(sd_in),
            output: sd_out + after_out,
        });
        out.push(r);
    }
    out
}

// ---------------------------------------------------------------------------------------
// Cursor

/// Agent transcripts `projects/<dir>/agent-transcripts/<id>/<id>.jsonl`: user and assistant
/// `text` blocks (a user turn is wrapped in `<user_query>`). No tool results, no usage.
fn cursor(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    let mut out = Vec::new();
    for f in files {
        if !f.to_string_lossy().ends_with(".jsonl") {
            continue;
        }
        let mut r = Raw::new("cursor", stem(f), f.clone(), Match::Path);
        for v in values(&cx.bytes(f)) {
            let kind = match s(&v, "role") {
                Some("user") => Kind::Prompt,
                Some("assistant") => Kind::Reply,
                _ => continue,
            };
            for b in v
                .pointer("/message/content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if s(b, "type") == Some("text") {
                    r.tagged(kind, s(b, "text").unwrap_or(""));
                }
            }
        }
        r.token_note = Some("Cursor transcripts record no usage".into());
        out.push(r);
    }
    out
}

// ---------------------------------------------------------------------------------------
// SQLite stores

fn open(cx: &Ctx, db: &Path) -> Option<rusqlite::Connection> {
    rusqlite::Connection::open_with_flags(
        cx.copy_of(db),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .ok()
}

fn rows(c: &rusqlite::Connection, sql: &str) -> Vec<Vec<Option<String>>> {
    let Ok(mut st) = c.prepare(sql) else {
        return Vec::new();
    };
    let n = st.column_count();
    st.query_map([], |row| {
        Ok((0..n)
            .map(|i| match row.get_ref(i) {
                Ok(rusqlite::types::ValueRef::Text(t)) => {
                    Some(String::from_utf8_lossy(t).into_owned())
                }
                Ok(rusqlite::types::ValueRef::Integer(x)) => Some(x.to_string()),
                Ok(rusqlite::types::ValueRef::Real(x)) => Some(x.to_string()),
                Ok(rusqlite::types::ValueRef::Blob(b)) => {
                    Some(String::from_utf8_lossy(b).into_owned())
                }
                _ => None,
            })
            .collect())
    })
    .map(|it| it.flatten().collect())
    .unwrap_or_default()
}

fn columns(c: &rusqlite::Connection, table: &str) -> HashSet<String> {
    rows(c, &format!("PRAGMA table_info({table})"))
        .into_iter()
        .filter_map(|r| r.get(1).cloned().flatten())
        .collect()
}

/// OpenCode `opencode*.db`: sessions, `message.data` (role, tokens), `part.data` (text,
/// reasoning, tool state with output or error). Tokens per assistant message: the sum of
/// its `step-finish` parts (one per API step), else the message's own `tokens`.
fn opencode(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    let mut out = Vec::new();
    for db in files {
        let Some(c) = open(cx, db) else { continue };
        let mut sessions: BTreeMap<String, Raw> = BTreeMap::new();
        for r in rows(&c, "SELECT id FROM session ORDER BY id") {
            let id = r[0].clone().unwrap_or_default();
            let matcher = Match::Id {
                id: id.clone(),
                source: Some(db.clone()),
            };
            let mut raw = Raw::new("opencode", id.clone(), db.clone(), matcher);
            raw.tokens = Some(Tokens {
                input: Some(0),
                output: 0,
            });
            sessions.insert(id, raw);
        }
        let mut role: HashMap<String, (String, Value)> = HashMap::new();
        for r in rows(&c, "SELECT id, session_id, data FROM message ORDER BY id") {
            let d: Value =
                serde_json::from_str(r[2].as_deref().unwrap_or("null")).unwrap_or(Value::Null);
            role.insert(
                r[0].clone().unwrap_or_default(),
                (r[1].clone().unwrap_or_default(), d),
            );
        }
        let mut steps: HashMap<String, (u64, u64, bool)> = HashMap::new();
        for r in rows(&c, "SELECT message_id, data FROM part ORDER BY id") {
            let mid = r[0].clone().unwrap_or_default();
            let d: Value =
                serde_json::from_str(r[1].as_deref().unwrap_or("null")).unwrap_or(Value::Null);
            let Some((sid, m)) = role.get(&mid) else {
                continue;
            };
            let Some(raw) = sessions.get_mut(sid) else {
                continue;
            };
            let user = s(m, "role") == Some("user");
            match s(&d, "type") {
                Some("text") => raw.text(
                    if user { Kind::Prompt } else { Kind::Reply },
                    s(&d, "text").unwrap_or(""),
                ),
                Some("reasoning") => raw.text(Kind::Thinking, s(&d, "text").unwrap_or("")),
                Some("tool") => {
                    for k in ["output", "error"] {
                        if let Some(o) = d.pointer(&format!("/state/{k}")).and_then(Value::as_str) {
                            raw.text(Kind::ToolOutput, o);
                        }
                    }
                }
                Some("step-finish") => {
                    let t = d.get("tokens").unwrap_or(&Value::Null);
                    let e = steps.entry(mid.clone()).or_default();
                    e.0 += opencode_in(t);
                    e.1 += u(t, "output") + u(t, "reasoning");
                    e.2 = true;
                }
                _ => {}
            }
        }
        for (mid, (sid, m)) in &role {
            if s(m, "role") != Some("assistant") {
                continue;
            }
            let Some(raw) = sessions.get_mut(sid) else {
                continue;
            };
            let (i, o) = match steps.get(mid) {
                Some(&(i, o, true)) => (i, o),
                _ => {
                    let t = m.get("tokens").unwrap_or(&Value::Null);
                    (opencode_in(t), u(t, "output") + u(t, "reasoning"))
                }
            };
            let tk = raw.tokens.get_or_insert_with(Default::default);
            tk.input = Some(tk.input.unwrap_or(0) + i);
            tk.output += o;
        }
        out.extend(sessions.into_values());
    }
    out
}

fn opencode_in(t: &Value) -> u64 {
    u(t, "input")
        + t.pointer("/cache/read")
            .and_then(Value::as_u64)
            .unwrap_or(0)
        + t.pointer("/cache/write")
            .and_then(Value::as_u64)
            .unwrap_or(0)
}

/// Hermes `state.db` (and `profiles/*/state.db`). Lines: user and assistant `content`,
/// `reasoning` (else `reasoning_content`), tool `content`; rows with `active = 0` too (the
/// renderer keeps them under `branches/`). A child of a session that ended
/// `compression` is the same conversation, shown in the first session's directory
/// (SEMANTICS "Hermes Agent"), so it is looked for there. Tokens: the session counters.
fn hermes_db(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    // Gateway transcripts a folder holds beside (or instead of) databases.
    let jsonl: Vec<PathBuf> = files
        .iter()
        .filter(|f| f.to_string_lossy().ends_with(".jsonl"))
        .cloned()
        .collect();
    let mut out = hermes_jsonl(cx, &jsonl);
    for db in files {
        if !db.to_string_lossy().ends_with("state.db") {
            continue;
        }
        let Some(c) = open(cx, db) else { continue };
        let cols = columns(&c, "sessions");
        let col = |k: &str| {
            if cols.contains(k) {
                k.to_string()
            } else {
                "0".to_string()
            }
        };
        let sql = format!(
            "SELECT id, parent_session_id, end_reason, {}, {}, {}, {}, {} FROM sessions",
            col("input_tokens"),
            col("output_tokens"),
            col("cache_read_tokens"),
            col("cache_write_tokens"),
            col("reasoning_tokens"),
        );
        let srows = rows(&c, &sql);
        let info: HashMap<String, (Option<String>, Option<String>)> = srows
            .iter()
            .map(|r| {
                (
                    r[0].clone().unwrap_or_default(),
                    (r[1].clone(), r[2].clone()),
                )
            })
            .collect();
        let root = |mut id: String| {
            for _ in 0..1000 {
                let Some((Some(p), _)) = info.get(&id) else {
                    break;
                };
                match info.get(p) {
                    Some((_, Some(end))) if end == "compression" => id = p.clone(),
                    _ => break,
                }
            }
            id
        };
        let mut sessions: BTreeMap<String, Raw> = BTreeMap::new();
        for r in &srows {
            let id = r[0].clone().unwrap_or_default();
            let n = |i: usize| {
                r[i].as_deref()
                    .and_then(|x| x.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            let matcher = Match::Id {
                id: root(id.clone()),
                source: Some(db.clone()),
            };
            let mut raw = Raw::new("hermes", id.clone(), db.clone(), matcher);
            raw.tokens = Some(Tokens {
                input: Some(n(3) + n(5) + n(6)),
                output: n(4) + n(7),
            });
            sessions.insert(id, raw);
        }
        let mcols = columns(&c, "messages");
        let reasoning = if mcols.contains("reasoning_content") {
            "COALESCE(NULLIF(reasoning, ''), reasoning_content)"
        } else if mcols.contains("reasoning") {
            "reasoning"
        } else {
            "NULL"
        };
        for r in rows(
            &c,
            &format!("SELECT session_id, role, content, {reasoning} FROM messages ORDER BY id"),
        ) {
            let Some(raw) = sessions.get_mut(r[0].as_deref().unwrap_or("")) else {
                continue;
            };
            let content = r[2].as_deref().unwrap_or("");
            match r[1].as_deref() {
                Some("user") => raw.text(Kind::Prompt, content),
                Some("assistant") => raw.text(Kind::Reply, content),
                Some("tool") => raw.text(Kind::ToolOutput, &hermes_tool_text(content)),
                _ => {}
            }
            raw.text(Kind::Thinking, r[3].as_deref().unwrap_or(""));
        }
        out.extend(sessions.into_values());
    }
    out
}

/// The text a Copilot CLI tool result's lines are looked for as: a `web_search` answer
/// stored as `{"type":"text","text":{"value":…}}` is its `value`, then a line
/// `- <title> <<url>>` for every `url_citation` and `- <text> <<url>>` for every search
/// (SEMANTICS: such a result shows its answer, its sources and its searches); anything
/// else, the content as stored.
fn copilot_search_text(content: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(content) else {
        return content.to_string();
    };
    let Some(value) = v.pointer("/text/value").and_then(Value::as_str) else {
        return content.to_string();
    };
    let mut out = vec![value.to_string()];
    for list in ["/text/annotations", "/annotations"] {
        for a in v
            .pointer(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let field = |k: &str| a.pointer(k).and_then(Value::as_str).unwrap_or("");
            out.push(format!(
                "- {} <{}>",
                field("/url_citation/title"),
                field("/url_citation/url")
            ));
        }
    }
    for q in v
        .get("bing_searches")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let field = |k: &str| q.get(k).and_then(Value::as_str).unwrap_or("");
        out.push(format!("- {} <{}>", field("text"), field("url")));
    }
    out.join("\n")
}

/// The text a Hermes tool row's output lines are looked for as: a JSON object whose keys
/// are only `output` (a string), `exit_code`, `error`, `exit_code_meaning` and `approval`,
/// as Hermes' terminal tool returns it, is its `output` (SEMANTICS: such a result shows its
/// output with real newlines); another object with a text field, that text; anything else,
/// the row as stored.
fn hermes_tool_text(content: &str) -> String {
    // The object may be followed by notes Hermes appends (`[Subdirectory context …]`).
    let mut values = serde_json::Deserializer::from_str(content).into_iter::<Value>();
    let Some(Ok(Value::Object(o))) = values.next() else {
        return content.to_string();
    };
    let rest = &content[values.byte_offset()..];
    let only_terminal_keys = o.keys().all(|k| {
        [
            "output",
            "exit_code",
            "error",
            "exit_code_meaning",
            "approval",
        ]
        .contains(&k.as_str())
    });
    if let (Some(Value::String(out)), true) = (o.get("output"), only_terminal_keys) {
        return format!("{out}\n{rest}");
    }
    // A delegate_task result: each task's summary (SEMANTICS, "Other tools' results").
    if let Some(Value::Array(results)) = o.get("results") {
        let summaries: Option<Vec<&str>> = results
            .iter()
            .map(|r| r.get("summary").and_then(Value::as_str))
            .collect();
        if let Some(summaries) = summaries.filter(|s| !s.is_empty()) {
            return format!("{}\n{rest}", summaries.join("\n"));
        }
    }
    // Any other tool's object with a text field: its text (SEMANTICS: read_file's and
    // skill_view's content, execute_code's output, patch's diff).
    match ["content", "output", "diff"]
        .iter()
        .find_map(|k| o.get(*k).and_then(Value::as_str))
    {
        Some(text) => format!("{text}\n{rest}"),
        None => content.to_string(),
    }
}

/// The text an OpenClaw tool result's lines are looked for as (SEMANTICS: such a result
/// shows the text, then the payload's other fields on one line): a tool that threw,
/// `{"status": "error", "error": …}`, its error; a `web_fetch` result, the page, its
/// payload's `text`; anything else, the result as stored.
fn openclaw_tool_text(tool: Option<&str>, content: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(content) else {
        return content.to_string();
    };
    let field = if v.get("status").and_then(Value::as_str) == Some("error") {
        "error"
    } else if tool == Some("web_fetch") {
        "text"
    } else {
        return content.to_string();
    };
    match v.get(field).and_then(Value::as_str) {
        Some(text) => text.to_string(),
        None => content.to_string(),
    }
}

/// Hermes gateway transcripts `~/.hermes/sessions/<id>.jsonl`: rows with `role` (user,
/// assistant with `reasoning`, tool). sessfs reads one only for a session no database has,
/// so its lines are looked for in the session of that id wherever it comes from.
fn hermes_jsonl(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    let mut out = Vec::new();
    for f in files {
        let id = stem(f);
        let matcher = Match::Id {
            id: id.clone(),
            source: None,
        };
        let mut r = Raw::new("hermes", id.clone(), f.clone(), matcher);
        // SEMANTICS (Hermes): a transcript holding more messages than the database beside
        // it has for its id is shown as its own session, `<id>@gateway`.
        let rows_in_db = f
            .parent()
            .and_then(Path::parent)
            .map(|h| h.join("state.db"))
            .filter(|db| db.is_file())
            .and_then(|db| open(cx, &db))
            .map(|c| {
                let q = format!(
                    "SELECT COUNT(*) FROM messages WHERE session_id = '{}'",
                    id.replace('\'', "''")
                );
                rows(&c, &q)
                    .first()
                    .and_then(|r| r[0].as_deref().and_then(|n| n.parse::<usize>().ok()))
                    .unwrap_or(0)
            })
            .unwrap_or(0);
        let messages = values(&cx.bytes(f))
            .iter()
            .filter(|v| s(v, "role") != Some("session_meta"))
            .count();
        if rows_in_db > 0 && messages > rows_in_db {
            r.matcher = Match::Id {
                id: format!("{id}@gateway"),
                source: None,
            };
        }
        for v in values(&cx.bytes(f)) {
            let content = content_texts(v.get("content").unwrap_or(&Value::Null)).join("\n");
            match s(&v, "role") {
                Some("user") => r.text(Kind::Prompt, &content),
                Some("assistant") => {
                    r.text(Kind::Reply, &content);
                    r.text(Kind::Thinking, s(&v, "reasoning").unwrap_or(""));
                }
                Some("tool") => r.text(Kind::ToolOutput, &hermes_tool_text(&content)),
                _ => {}
            }
        }
        r.token_note = Some("gateway transcripts record no usage".into());
        out.push(r);
    }
    out
}

// ---------------------------------------------------------------------------------------
// pi family

/// pi, omp, indusagi and OpenClaw files: a `session` header, then entries (v3: `id` and
/// `parentId`; v1: neither, one line after the other). Lines: user content, assistant
/// `text` and `thinking`, `toolResult` content, `bashExecution` output. Tokens: assistant
/// `usage` (input + cacheRead + cacheWrite, output) over the active branch, the path from
/// the file's last entry back to the root (the whole file when entries have no ids).
fn pi_family(cx: &Ctx, files: &[PathBuf], agent: &'static str) -> Vec<Raw> {
    let is_archive = |n: &str| !n.ends_with(".jsonl") || n.contains(".checkpoint.");
    let parsed: Vec<(PathBuf, String, Vec<Value>, String)> = files
        .iter()
        .filter_map(|f| {
            let n = f.file_name()?.to_string_lossy().to_string();
            if !n.contains(".jsonl") {
                return None;
            }
            let vs = values(&cx.bytes(f));
            let head = vs.iter().find(|v| s(v, "type") == Some("session"));
            let id = head
                .and_then(|h| s(h, "id"))
                .map(str::to_string)
                .unwrap_or_else(|| stem(f));
            Some((f.clone(), n, vs, id))
        })
        .collect();
    // Entry ids of each session's live file: an archived copy (OpenClaw `.bak`,
    // `.checkpoint`) repeats them, and a reply is counted once, in the live session.
    let mut live: HashMap<&str, HashSet<&str>> = HashMap::new();
    for (_, n, vs, id) in &parsed {
        if !is_archive(n) {
            live.entry(id.as_str())
                .or_default()
                .extend(vs.iter().filter_map(|v| s(v, "id")));
        }
    }
    let mut out = Vec::new();
    for (f, n, vs, id) in &parsed {
        let copied =
            |e: &str| is_archive(n) && live.get(id.as_str()).is_some_and(|l| l.contains(e));
        let mut r = Raw::new(agent, id.clone(), f.clone(), Match::Path);
        r.hidden = n.contains(".jsonl.deleted.");
        r.archive = is_archive(n);
        let mut parent: HashMap<String, Option<String>> = HashMap::new();
        let mut usage: HashMap<String, (u64, u64)> = HashMap::new();
        let mut linear = (0u64, 0u64);
        let mut last_id: Option<String> = None;
        for (i, v) in vs.iter().enumerate() {
            if let Some(eid) = s(v, "id").filter(|_| s(v, "type") != Some("session")) {
                parent.insert(eid.to_string(), s(v, "parentId").map(str::to_string));
                last_id = Some(eid.to_string());
            }
            if s(v, "type") != Some("message") {
                continue;
            }
            let m = v.get("message").unwrap_or(&Value::Null);
            let content = m.get("content").unwrap_or(&Value::Null);
            match s(m, "role") {
                Some("user") => {
                    for t in content_texts(content) {
                        r.text(Kind::Prompt, &t);
                    }
                }
                Some("assistant") => {
                    for b in content.as_array().into_iter().flatten() {
                        match s(b, "type") {
                            Some("text") => r.text(Kind::Reply, s(b, "text").unwrap_or("")),
                            Some("thinking") => {
                                r.text(Kind::Thinking, s(b, "thinking").unwrap_or(""))
                            }
                            _ => {}
                        }
                    }
                    if let Value::String(t) = content {
                        r.text(Kind::Reply, t);
                    }
                    if let Some(us) = m.get("usage") {
                        let x = (
                            u(us, "input") + u(us, "cacheRead") + u(us, "cacheWrite"),
                            u(us, "output"),
                        );
                        let key = s(v, "id")
                            .map(str::to_string)
                            .unwrap_or_else(|| format!("#{i}"));
                        if !copied(&key) {
                            linear.0 += x.0;
                            linear.1 += x.1;
                            usage.insert(key, x);
                        }
                    }
                }
                Some("toolResult") => {
                    for t in content_texts(content) {
                        let t = if agent == "openclaw" {
                            openclaw_tool_text(s(m, "toolName"), &t)
                        } else {
                            t
                        };
                        r.text(Kind::ToolOutput, &t);
                    }
                }
                Some("bashExecution") => r.text(Kind::ToolOutput, s(m, "output").unwrap_or("")),
                _ => {}
            }
        }
        let tokens = if parent.is_empty() {
            linear
        } else {
            let mut t = (0, 0);
            let mut at = last_id;
            let mut seen = HashSet::new();
            while let Some(e) = at {
                if !seen.insert(e.clone()) {
                    break;
                }
                if let Some(x) = usage.get(&e) {
                    t.0 += x.0;
                    t.1 += x.1;
                }
                at = parent.get(&e).cloned().flatten();
            }
            t
        };
        r.tokens = Some(Tokens {
            input: Some(tokens.0),
            output: tokens.1,
        });
        out.push(r);
    }
    out
}

fn pi(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    pi_family(cx, files, "pi")
}
fn omp(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    pi_family(cx, files, "omp")
}
fn openclaw(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    pi_family(cx, files, "openclaw")
}

/// ATSF `thread.json`: the thread must be visible (the sets hold no `messages.jsonl`).
fn atsf(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    files
        .iter()
        .filter_map(|f| {
            let v: Value = serde_json::from_slice(&cx.bytes(f)).ok()?;
            let id = s(&v, "threadId")?.to_string();
            let mut r = Raw::new(
                "atsf",
                id.clone(),
                f.clone(),
                Match::Id { id, source: None },
            );
            r.token_note = Some("ATSF threads record no usage".into());
            Some(r)
        })
        .collect()
}
