//! Neovate Code: one JSONL file per session under `~/.neovate/projects/<project>/`.
//!
//! Learnt from Neovate Code's own source, github.com/neovateai/neovate-code at commit
//! `0da6be6d1db8efae326c21e0cbd64ab04498c54f` (release 0.17.1): `src/paths.ts` (the global
//! directory `~/.<product name>`, lower-cased, and `projects/<formatPath(cwd)>/<id>.jsonl`;
//! `formatPath` turns every character outside `[A-Za-z0-9]` into `-` and lower-cases),
//! `src/constants.ts` (`PRODUCT_NAME` `NEOVATE`), `src/session.ts` (session ids are the
//! first 8 characters of a UUID; the `config` line `SessionConfigManager` rewrites at the
//! top of the file; `filterMessages`, which walks `parentUuid` back from the last message),
//! `src/jsonl.ts` (`JsonlLogger` appends one message per line), `src/message.ts` (the
//! message and part types), `src/history.ts` and `src/compact.ts` (compaction), `src/loop.ts`
//! (assistant replies: `model` as `<provider>/<model>`, per-reply `usage`, the request id as
//! the reply's uuid; tool results), `src/nodeBridge.ts` (`session.addMessages`,
//! `session.cancel`), `src/ui/store.ts` (`!` shell commands, forks, plan approval) and
//! `src/globalData.ts` (`data.json`). Subagent transcripts come from later sources of the
//! same repository: `src/agent/executor.ts` @ `dacfa05bc5c1fc66accf8e76c21ee5a1ee3a3f33` (a
//! subagent's session is `agent-<agent id>` in the same project directory) and
//! `src/tools/task.ts` @ `d4d9d9e7ee00b87df2a0b5d9c14903a3f927d3e2` (the task result names
//! the agent id in `metadata` and `returnDisplay`).
//!
//! **Where.** `~/.neovate/projects` (no variable moves it). Products built on Neovate
//! (`runNeovate` with another product name) keep the same layout under their own name;
//! `~/.takumi/projects` is read too. A `--store` path may be the global directory or its
//! `projects/`. Beside the sessions the global directory holds `config.json` (provider API
//! keys): never opened. `data.json` (prompt history per project, keyed by the project's
//! path) is read for its keys only, to give each project directory back its path: the
//! directory name alone is lossy. `projects/<p>/requests/<request id>.jsonl` (raw request
//! and response logs, which may carry provider headers) are not read.
//!
//! **Records.** A line is `{type: "config", config}` (the session's `summary` is its title;
//! `approvalMode`, `approvalTools` and the pasted text and image maps, whose content the
//! messages already hold expanded, are not shown) or `{type: "message", uuid, parentUuid,
//! timestamp, sessionId, role, content, ...}`: a user prompt (a string, or text and image
//! parts), an assistant reply (`text`, `reasoning` and `tool_use` parts, `model`, `usage`),
//! a `tool` message of `tool-result` parts (`result.llmContent` is what the model was sent,
//! `result.isError` its error flag; `returnDisplay`, the terminal's rendering of the same
//! result, is not shown), or, in files of older releases, a user message of `tool_result`
//! parts. User messages Neovate marks `hidden` (a slash command's prompt) are context; a
//! `<bash-input>` message and the `<bash-stdout>`/`<bash-stderr>` one after it are the
//! user's `!` command and its output; `[Request interrupted by user]` is an event.
//!
//! **Tree.** Messages form a tree by `parentUuid`. A fork (editing an earlier prompt) starts
//! a sibling of it; Neovate resumes the path that ends at the last message, which is the
//! active path here, and every other leaf is a [`Branch`]. Compaction appends the summary
//! as a root (`parentUuid: null`, `uiContent` "Chat history compacted successfully."): it
//! is shown as the compaction summary, continuing from the message written before it, so
//! what it replaced stays in the transcript. Any other root or unknown parent after the
//! first line continues the same way. A tool result that hangs off a reply beside the path
//! (the results `session.cancel` writes for every unfinished call) stays on the path.
//!
//! **Usage** is per reply: `usage.input_tokens`/`output_tokens` (and the cache counts where
//! a reply has them).

use super::jsonl;
use super::kit::{self, EntryType, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    unified_id, Agent, Branch, Message, MessageKind, Role, Session, Source, Subagent, TokenUsage,
    ToolCall,
};
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The product directories read: Neovate's own, then one product built on it.
const PRODUCTS: &[&str] = &[".neovate", ".takumi"];
/// The user text Neovate writes when a request is interrupted (`CANCELED_MESSAGE_TEXT`).
const CANCELED: &str = "[Request interrupted by user]";
/// What the terminal shows in place of a compaction summary (`COMPACT_MESSAGE`).
const COMPACTED: &str = "Chat history compacted successfully.";
/// Largest `data.json` read for project paths.
const MAX_DATA_JSON: u64 = 32 << 20;
/// At most this many branches are built; the rest are counted in a warning.
const MAX_BRANCHES: usize = 100;

/// `~/.neovate`, then `~/.takumi`: the product's directory, whose `projects/` holds the
/// sessions and whose `data.json` names their projects' paths (so both are watched).
pub fn candidates(env: &Env) -> Vec<Root> {
    PRODUCTS
        .iter()
        .map(|p| Root::new(Agent::Neovate, env.home.join(p), "default"))
        .collect()
}

pub struct NeovateStore {
    base: Base,
}

impl NeovateStore {
    pub fn new(roots: Vec<Root>) -> NeovateStore {
        NeovateStore {
            base: Base::new(Agent::Neovate, roots),
        }
    }
}

/// The `projects` directory a root stands for (itself, or `<root>/projects`).
fn projects_dir(root: &Path) -> PathBuf {
    let under = root.join("projects");
    if under.is_dir() {
        under
    } else {
        root.to_path_buf()
    }
}

impl Store for NeovateStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            for project in kit::subdirs(&projects_dir(&root.path)) {
                for (p, t) in kit::typed_entries(&project) {
                    let name = kit::file_name(&p);
                    let Some(stem) = name.strip_suffix(".jsonl") else {
                        continue;
                    };
                    if t != EntryType::File || stem.is_empty() || stem.starts_with('.') {
                        continue;
                    }
                    // Ids are 8 characters: one met again in another project is named
                    // after its project too.
                    let mut id = stem.to_string();
                    if !seen.insert(id.clone()) {
                        id = format!("{}-{stem}", kit::file_name(&project));
                        if !seen.insert(id.clone()) {
                            continue;
                        }
                    }
                    let mut l = Listed::file(id, p, i);
                    // The session's cwd comes from `data.json`'s keys ([`project_path`]).
                    if let Some(base) = project.parent().and_then(Path::parent) {
                        l.sources.push(base.join("data.json"));
                    }
                    out.push(l);
                }
            }
        }
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        load(&listed.path, &listed.id)
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        true
    }

    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut dirs = Vec::new();
        for root in &self.base.roots {
            let p = projects_dir(&root.path);
            match kit::nearest_dir(&p) {
                Some(d) if d == p => dirs.extend(kit::dirs_under(&p, 1)),
                Some(d) => dirs.push(d),
                None => {}
            }
        }
        Some(Glance {
            dirs,
            files: Vec::new(),
        })
    }
}

/// Neovate's `formatPath`: the project directory name of a path.
fn format_path(p: &str) -> String {
    let mut out = String::new();
    for c in p.trim_matches('/').chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '-' };
        if !(c == '-' && out.ends_with('-')) {
            out.push(c.to_ascii_lowercase());
        }
    }
    out.trim_matches('-').to_string()
}

/// The path of the project whose directory is `project`, from the keys of `data.json` in
/// the global directory above it; `None` when no key formats to the directory's name.
fn project_path(project: &Path) -> Option<String> {
    let name = kit::file_name(project);
    let data = project.parent()?.parent()?.join("data.json");
    let v = kit::read_json(&data, "neovate data.json", MAX_DATA_JSON).ok()?;
    let projects = v.get("projects")?.as_object()?;
    let mut keys: Vec<&String> = projects.keys().filter(|k| format_path(k) == name).collect();
    keys.sort();
    keys.first().map(|k| k.to_string())
}

/// One line of the file that is a node of the tree.
struct Node {
    v: Value,
    uuid: Option<String>,
    /// The node it continues (see the module docs), by index.
    parent: Option<usize>,
    /// No role Neovate writes: shown as an unparsed record.
    unknown: bool,
}

impl Node {
    fn role(&self) -> &str {
        kit::str_field(&self.v, "role").unwrap_or_default()
    }

    /// A tool result only: may hang off a path without making a branch.
    fn is_result(&self) -> bool {
        match self.role() {
            "tool" => true,
            "user" => self
                .v
                .get("content")
                .and_then(Value::as_array)
                .is_some_and(|a| {
                    !a.is_empty()
                        && a.iter()
                            .all(|p| kit::str_field(p, "type") == Some("tool_result"))
                }),
            _ => self.unknown,
        }
    }
}

/// A session file.
pub fn load(path: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Neovate, id);
    let mut nodes: Vec<Node> = Vec::new();
    let mut config = Value::Null;
    let mut by_uuid: HashMap<String, usize> = HashMap::new();
    let mut relinked = 0usize;
    let mut first_relinked = String::new();
    let scanned = jsonl::read_records(path, |pos, line| {
        let v: Value = serde_json::from_slice(line).map_err(|e| e.to_string())?;
        if !v.is_object() {
            return Err("not a JSON object".into());
        }
        match kit::str_field(&v, "type") {
            Some("config") => {
                config = v.get("config").cloned().unwrap_or_default();
                return Ok(());
            }
            Some("message") => {}
            other => {
                let other = other.unwrap_or("(none)").to_string();
                b.unparsed.note("lines", "unknown record type", || {
                    format!("line {}: `{other}`", pos.line)
                });
                let parent = nodes.len().checked_sub(1);
                nodes.push(Node {
                    v,
                    uuid: None,
                    parent,
                    unknown: true,
                });
                return Ok(());
            }
        }
        let i = nodes.len();
        let uuid = kit::str_field(&v, "uuid").map(str::to_string);
        let named = kit::str_field(&v, "parentUuid");
        let parent = match named.map(|p| by_uuid.get(p).copied()) {
            Some(Some(p)) => Some(p),
            Some(None) => {
                relinked += 1;
                if first_relinked.is_empty() {
                    first_relinked = format!("line {}", pos.line);
                }
                i.checked_sub(1)
            }
            None => i.checked_sub(1),
        };
        let unknown = !matches!(
            kit::str_field(&v, "role"),
            Some("user" | "assistant" | "tool" | "system")
        );
        if unknown {
            let role = kit::str_field(&v, "role").unwrap_or("(none)").to_string();
            b.unparsed.note("messages", "unknown role", || {
                format!("line {}: `{role}`", pos.line)
            });
        }
        if let Some(u) = &uuid {
            by_uuid.insert(u.clone(), i);
        }
        nodes.push(Node {
            v,
            uuid,
            parent,
            unknown,
        });
        Ok(())
    });
    if relinked > 0 {
        b.warn(format!(
            "{relinked} messages name a parent that is not in the file; each is shown after the message written before it (first: {first_relinked})"
        ));
    }
    scanned.into_session(&mut b.s);
    b.s.source = Source {
        paths: vec![path.to_path_buf()],
        format: "neovate-jsonl".into(),
        format_version: None,
    };
    b.s.title = kit::str_field(&config, "summary")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    b.s.cwd = path.parent().and_then(project_path);
    subagents(&mut b, &nodes);

    let (active, branches) = plan(&nodes);
    render(&mut b, &nodes, &active);
    let mut taken = HashSet::new();
    let dropped = branches.len().saturating_sub(MAX_BRANCHES);
    for (order, fork) in branches.into_iter().take(MAX_BRANCHES) {
        let mut bb = SessionBuilder::new(Agent::Neovate, "");
        render(&mut bb, &nodes, &order);
        // Named after its last message (a record of no known kind has no uuid).
        let leaf = order.iter().rev().find_map(|&i| nodes[i].uuid.clone());
        let base = format!(
            "branch-{}",
            leaf.clone().unwrap_or_else(|| "unnamed".to_string())
        );
        b.s.branches.push(Branch {
            name: kit::unique_name(&mut taken, &base),
            fork_point: fork.and_then(|i| nodes[i].uuid.clone()),
            leaf,
            messages: bb.s.messages,
        });
    }
    if dropped > 0 {
        b.warn(format!(
            "{dropped} more branches not shown (at most {MAX_BRANCHES})"
        ));
    }
    b.finish()
}

/// The active path (ancestors of the last node, with the results hanging off it) and every
/// other leaf's path with its fork point (the last node it shares with the active path).
type Plan = (Vec<usize>, Vec<(Vec<usize>, Option<usize>)>);

fn plan(nodes: &[Node]) -> Plan {
    let n = nodes.len();
    let mut has_child = vec![false; n];
    for node in nodes {
        if let Some(p) = node.parent {
            has_child[p] = true;
        }
    }
    // The path to `leaf`, then every childless result hanging off a node on it.
    let path = |leaf: usize| -> Vec<usize> {
        let mut on = vec![false; n];
        let mut cur = Some(leaf);
        while let Some(i) = cur {
            if on[i] {
                break;
            }
            on[i] = true;
            cur = nodes[i].parent;
        }
        for i in 0..n {
            if !on[i] && !has_child[i] && nodes[i].is_result() {
                if let Some(p) = nodes[i].parent {
                    if on[p] && i > p {
                        on[i] = true;
                    }
                }
            }
        }
        (0..n).filter(|&i| on[i]).collect()
    };
    let Some(last) = n.checked_sub(1) else {
        return (Vec::new(), Vec::new());
    };
    let active = path(last);
    let mut covered = vec![false; n];
    let mut in_active = vec![false; n];
    for &i in &active {
        covered[i] = true;
        in_active[i] = true;
    }
    let mut branches = Vec::new();
    for leaf in 0..n {
        if covered[leaf] || has_child[leaf] {
            continue;
        }
        let order = path(leaf);
        for &i in &order {
            covered[i] = true;
        }
        let fork = order.iter().rev().copied().find(|&i| in_active[i]);
        branches.push((order, fork));
    }
    (active, branches)
}

/// Subagents the task tool ran, from the agent ids its results name, in file order.
fn subagents(b: &mut SessionBuilder, nodes: &[Node]) {
    let mut seen = HashSet::new();
    for node in nodes.iter().filter(|n| n.role() == "tool") {
        for part in node
            .v
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let result = part.get("result").unwrap_or(&Value::Null);
            let agent = kit::str_at(result, &["metadata", "agentId"])
                .or_else(|| kit::str_at(result, &["returnDisplay", "agentId"]));
            let Some(agent) = agent.filter(|a| !a.is_empty()) else {
                continue;
            };
            let name = format!("agent-{agent}");
            if !seen.insert(name.clone()) {
                continue;
            }
            let description = kit::str_at(result, &["returnDisplay", "description"])
                .or_else(|| kit::str_at(part, &["input", "description"]))
                .map(str::to_string);
            b.s.subagents.push(Subagent {
                unified_id: Some(unified_id(Agent::Neovate, &name)),
                name,
                description,
                tool_call_id: kit::str_field(part, "toolCallId").map(str::to_string),
                session: None,
            });
        }
    }
}

/// The messages of `order`, in order.
fn render(b: &mut SessionBuilder, nodes: &[Node], order: &[usize]) {
    for (k, &i) in order.iter().enumerate() {
        let node = &nodes[i];
        let v = &node.v;
        let ts = kit::str_field(v, "timestamp").and_then(kit::parse_rfc3339);
        let native_id = node.uuid.clone();
        if node.unknown {
            b.context("unparsed record", v.to_string(), ts);
            continue;
        }
        let content = v.get("content").unwrap_or(&Value::Null);
        match node.role() {
            "user" => {
                // Compaction appends its summary as a new root.
                let compacted = k > 0
                    && v.get("parentUuid").is_some_and(Value::is_null)
                    && kit::str_field(v, "uiContent") == Some(COMPACTED);
                user(b, v, content, compacted, native_id, ts);
            }
            "assistant" => assistant(b, v, content, native_id, ts),
            "tool" => {
                for part in content.as_array().into_iter().flatten() {
                    tool_result(b, part, "toolCallId", "toolName", ts);
                }
            }
            _ => b.context("system", text_of(content), ts),
        }
    }
}

/// Text parts joined, images as placeholders; a string as it is.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => {
            let mut out = String::new();
            for p in parts {
                let piece = match kit::str_field(p, "type") {
                    Some("text") => kit::str_field(p, "text").unwrap_or_default().to_string(),
                    Some("image") | Some("file") => image(p),
                    _ => continue,
                };
                if !out.is_empty() && !piece.is_empty() {
                    out.push('\n');
                }
                out.push_str(&piece);
            }
            out
        }
        _ => String::new(),
    }
}

/// An image part (`data` a data URL or bare base64) as a placeholder.
fn image(p: &Value) -> String {
    let data = kit::str_field(p, "data").unwrap_or_default();
    if data.starts_with("data:") {
        kit::data_url_placeholder(data)
    } else {
        kit::base64_placeholder("image", kit::str_field(p, "mimeType"), Some(data))
    }
}

fn user(
    b: &mut SessionBuilder,
    v: &Value,
    content: &Value,
    compacted: bool,
    native_id: Option<String>,
    ts: Option<chrono::DateTime<chrono::Utc>>,
) {
    // Results in the user role (older releases), each its own tool message.
    if let Some(parts) = content.as_array() {
        for p in parts
            .iter()
            .filter(|p| kit::str_field(p, "type") == Some("tool_result"))
        {
            tool_result(b, p, "id", "name", ts);
        }
        if !parts.is_empty()
            && parts
                .iter()
                .all(|p| kit::str_field(p, "type") == Some("tool_result"))
        {
            return;
        }
    }
    let text = text_of(content);
    if v.get("hidden").is_some_and(|h| h == &Value::Bool(true)) {
        b.push(Message {
            role: Role::System,
            kind: MessageKind::Context,
            label: Some("command prompt".into()),
            content: text,
            timestamp: ts,
            native_id,
            ..Message::default()
        });
        return;
    }
    if compacted {
        b.push(Message {
            role: Role::User,
            kind: MessageKind::CompactionSummary,
            content: text,
            timestamp: ts,
            native_id,
            ..Message::default()
        });
        return;
    }
    if text.trim() == CANCELED {
        b.event(text, ts);
        return;
    }
    if let Some(cmd) = inner(&text, "bash-input") {
        b.push(Message {
            role: Role::User,
            kind: MessageKind::Execution,
            content: cmd.trim().to_string(),
            timestamp: ts,
            tool_calls: vec![ToolCall {
                tool_name: "bash".into(),
                input: serde_json::json!({ "command": cmd.trim() }),
                ..ToolCall::default()
            }],
            native_id,
            ..Message::default()
        });
        return;
    }
    let output = inner(&text, "bash-stdout")
        .map(|o| (o, false))
        .or_else(|| inner(&text, "bash-stderr").map(|o| (o, true)));
    if let Some((out, is_error)) = output {
        let pending = b
            .last_mut()
            .filter(|m| m.kind == MessageKind::Execution && m.role == Role::User)
            .and_then(|m| m.tool_calls.first_mut())
            .filter(|c| c.output.is_none());
        if let Some(call) = pending {
            call.output = Some(out.to_string());
            call.is_error = Some(is_error);
            return;
        }
        b.push(Message {
            role: Role::System,
            kind: MessageKind::Execution,
            timestamp: ts,
            tool_calls: vec![ToolCall {
                tool_name: "bash".into(),
                output: Some(out.to_string()),
                is_error: Some(is_error),
                ..ToolCall::default()
            }],
            native_id,
            ..Message::default()
        });
        return;
    }
    b.push(Message {
        role: Role::User,
        content: text,
        timestamp: ts,
        native_id,
        ..Message::default()
    });
}

/// The text between `<tag>` at the start of `t` and its `</tag>` (or the end).
fn inner<'a>(t: &'a str, tag: &str) -> Option<&'a str> {
    let rest = t.strip_prefix(&format!("<{tag}>"))?;
    let close = format!("</{tag}>");
    Some(rest.find(&close).map_or(rest, |e| &rest[..e]))
}

fn assistant(
    b: &mut SessionBuilder,
    v: &Value,
    content: &Value,
    native_id: Option<String>,
    ts: Option<chrono::DateTime<chrono::Utc>>,
) {
    let mut text = String::new();
    let mut thinking = String::new();
    let mut calls = Vec::new();
    match content {
        Value::String(s) => text.push_str(s),
        Value::Array(parts) => {
            for p in parts {
                match kit::str_field(p, "type") {
                    Some("text") => join(&mut text, kit::str_field(p, "text")),
                    Some("reasoning") => join(&mut thinking, kit::str_field(p, "text")),
                    Some("tool_use") => calls.push(ToolCall {
                        tool_call_id: kit::str_field(p, "id").unwrap_or_default().to_string(),
                        tool_name: kit::str_field(p, "name").unwrap_or_default().to_string(),
                        input: p.get("input").cloned().unwrap_or(Value::Null),
                        ..ToolCall::default()
                    }),
                    Some("image") | Some("file") => join(&mut text, Some(&image(p))),
                    other => {
                        let other = other.unwrap_or("(none)").to_string();
                        b.unparsed(
                            "reply parts",
                            "unknown part type",
                            || format!("reply {}: `{other}`", native_id.as_deref().unwrap_or("?")),
                            "part",
                            &p.to_string(),
                            ts,
                        );
                    }
                }
            }
        }
        _ => {}
    }
    if text.is_empty() {
        text = kit::str_field(v, "text").unwrap_or_default().to_string();
    }
    let usage = v
        .get("usage")
        .filter(|u| u.is_object())
        .map(|u| TokenUsage {
            input_tokens: kit::u64_field(u, "input_tokens"),
            output_tokens: kit::u64_field(u, "output_tokens"),
            cached_tokens: kit::u64_field(u, "cache_read_input_tokens"),
            cache_write_tokens: kit::u64_field(u, "cache_creation_input_tokens"),
            ..TokenUsage::default()
        });
    b.push(Message {
        role: Role::Assistant,
        content: text,
        thinking: (!thinking.is_empty()).then_some(thinking),
        tool_calls: calls,
        token_usage: usage.filter(|u| !u.is_zero()),
        model: kit::str_field(v, "model")
            .filter(|m| !m.is_empty())
            .map(str::to_string),
        timestamp: ts,
        native_id,
        ..Message::default()
    });
}

fn join(out: &mut String, s: Option<&str>) {
    let Some(s) = s.filter(|s| !s.is_empty()) else {
        return;
    };
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(s);
}

/// A `tool-result` (or older `tool_result`) part; `id`/`name` are its keys.
fn tool_result(
    b: &mut SessionBuilder,
    part: &Value,
    id: &str,
    name: &str,
    ts: Option<chrono::DateTime<chrono::Utc>>,
) {
    let result = part.get("result").unwrap_or(&Value::Null);
    let output = match result.get("llmContent") {
        Some(c @ (Value::String(_) | Value::Array(_))) => text_of(c),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let is_error = result.get("isError") == Some(&Value::Bool(true));
    let call = kit::str_field(part, id).unwrap_or_default();
    b.tool_result(call, kit::str_field(part, name), output, is_error, ts);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_directories_are_named_as_neovate_names_them() {
        assert_eq!(format_path("/Users/Dev/my_app.v2/"), "users-dev-my-app-v2");
        assert_eq!(format_path("/home/dev/--x"), "home-dev-x");
    }

    fn node(parent: Option<usize>, role: &str) -> Node {
        Node {
            v: serde_json::json!({ "role": role }),
            uuid: None,
            parent,
            unknown: false,
        }
    }

    #[test]
    fn a_fork_is_a_branch_and_a_result_beside_the_path_is_not() {
        // 0 user, 1 assistant (two calls), 2 and 3 results of both, 4 user; 5 a fork of 4.
        let nodes = vec![
            node(None, "user"),
            node(Some(0), "assistant"),
            node(Some(1), "tool"),
            node(Some(1), "tool"),
            node(Some(3), "user"),
            node(Some(3), "user"),
        ];
        let (active, branches) = plan(&nodes);
        assert_eq!(active, [0, 1, 2, 3, 5]);
        assert_eq!(branches, [(vec![0, 1, 2, 3, 4], Some(3))]);
    }
}
