//! OpenHands CLI (V1, on the OpenHands software-agent SDK):
//! `~/.openhands/conversations/<conversation id>/`, one JSON file per event in `events/`
//! and the conversation's state in `base_state.json`.
//!
//! Learned from the agents' own source:
//!
//! - github:OpenHands/software-agent-sdk at 611629e6999ad398dc49c761721eefe18d5e6bd9:
//!   `openhands-sdk/openhands/sdk/conversation/persistence_const.py` (`base_state.json`,
//!   `events/event-<idx, 5+ digits>-<event id>.json`), `conversation/event_store.py` (the
//!   index orders events; `parent_id` makes a tree, and an event without one follows the
//!   event before it), `conversation/state.py` (`ConversationState`: `agent`, `workspace`,
//!   `leaf_event_id`, `stats`, `secret_registry`), `conversation/conversation_stats.py` and
//!   `llm/utils/metrics.py` (`usage_to_metrics.<usage id>.token_usages[]`, one per LLM call,
//!   keyed by `response_id`; `costs[]`, positive costs only), `llm/utils/telemetry.py`
//!   (`prompt_tokens` includes cache reads and writes, `completion_tokens` reasoning),
//!   `event/` (`MessageEvent`, `ActionEvent`, `ObservationEvent`, `UserRejectObservation`,
//!   `AgentErrorEvent`, `SystemPromptEvent`, `Condensation`, `CondensationSummaryEvent`,
//!   `CondensationRequest`, `ConversationErrorEvent`, `HookExecutionEvent`,
//!   `PauseEvent`, `InterruptEvent`, `ACPToolCallEvent`, `TokenEvent`,
//!   `LLMCompletionLogEvent`, `StreamingDeltaEvent`, `ConversationStateUpdateEvent`; each
//!   serialised with its class name as `kind`), `llm/message.py` (`Message`,
//!   `TextContent`, `ImageContent`, `MessageToolCall`, thinking blocks) and
//!   `tool/schema.py` (`Observation.content`, `is_error`);
//! - github:OpenHands/OpenHands-CLI at 6b3838ce9083857d54c8be6e4e67e8fae82db11c:
//!   `openhands_cli/locations.py` (`OPENHANDS_PERSISTENCE_DIR`, else `~/.openhands`;
//!   `OPENHANDS_CONVERSATIONS_DIR`, else `<that>/conversations`) and
//!   `openhands_cli/conversations/store/local.py` (a conversation is a directory with an
//!   `events/` directory; its title is its first user message).
//!
//! What this store does with them:
//!
//! - **Listing reads names only**: a directory holding `events/` or `base_state.json` is
//!   a conversation and its name is the id.
//! - **Events in index order**, on the active branch: the path from `leaf_event_id` (else
//!   the last event) to the root. Events off that path are shown as branches.
//! - **Usage once per LLM call**: each `token_usages` entry is one call; it lands on the
//!   first message or action whose `llm_response_id` is its `response_id`, and calls no
//!   event names (the condenser's, a title's) are events of their own, so totals stay
//!   whole. A call's cost is the `costs` entry at its place when the two lists pair up one
//!   to one; otherwise cost is estimated from the call's model.
//! - **`base_state.json` is read through a struct naming the few keys used** (the model,
//!   the working directory, the leaf, the stats): the secret registry and the LLM's
//!   credentials in it are skipped by the parser unread. `agent_settings.json`, `mcp.json`,
//!   `hooks.json` and everything else under `~/.openhands` are never opened.

use super::kit::{self, EntryType, Places, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    Agent, Branch, Message, MessageKind, Role, Session, TokenUsage, ToolCall, SEALED_THINKING,
};
use chrono::{DateTime, Local, NaiveDateTime, TimeZone, Utc};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

const AGENT: Agent = Agent::Openhands;
const BASE_STATE: &str = "base_state.json";
const EVENTS: &str = "events";
/// The kind given to an event file that could not be read (no class has this name).
const UNPARSED: &str = "\u{0}unparsed";
/// Larger state or event files are not parsed.
const MAX_FILE_BYTES: u64 = 256 << 20;

/// `OPENHANDS_CONVERSATIONS_DIR`, else `$OPENHANDS_PERSISTENCE_DIR/conversations`, else
/// `~/.openhands/conversations`.
pub fn candidates(env: &Env) -> Vec<Root> {
    kit::roots(
        env,
        AGENT,
        &Places {
            env: &[
                ("OPENHANDS_CONVERSATIONS_DIR", ""),
                ("OPENHANDS_PERSISTENCE_DIR", "conversations"),
            ],
            defaults: &[".openhands/conversations"],
            spec: &[],
        },
    )
}

pub struct OpenhandsStore {
    base: Base,
}

impl OpenhandsStore {
    pub fn new(roots: Vec<Root>) -> OpenhandsStore {
        OpenhandsStore {
            base: Base::new(AGENT, roots),
        }
    }
}

fn is_conversation(dir: &Path) -> bool {
    dir.join(EVENTS).is_dir() || dir.join(BASE_STATE).is_file()
}

impl Store for OpenhandsStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            // A root given by hand may be one conversation directory.
            let dirs = if is_conversation(&root.path) {
                vec![root.path.clone()]
            } else {
                kit::subdirs(&root.path)
            };
            for dir in dirs.into_iter().filter(|d| is_conversation(d)) {
                let id = dir.file_name().map(crate::names::os_id).unwrap_or_default();
                out.push(Listed {
                    id,
                    sources: vec![dir.join(BASE_STATE), dir.join(EVENTS), dir.clone()],
                    path: dir,
                    key: None,
                    root: i,
                });
            }
        }
        out
    }

    /// Each root and every directory in it: the listing reads the root's names, and in
    /// each directory whether `events/` or `base_state.json` is there (a directory
    /// becomes a conversation when one appears). A root that is one conversation is read
    /// for those two names only. A conversation's state file and `events/` are its sources.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            if !root.path.is_dir() {
                return None;
            }
            if !is_conversation(&root.path) {
                g.dirs.extend(kit::subdirs(&root.path));
            }
            g.dirs.push(root.path.clone());
        }
        Some(g)
    }

    /// The id is the directory's name, which a write never changes.
    fn keeps_listing(&self, _listed: &Listed) -> bool {
        true
    }

    fn load(&self, listed: &Listed) -> Session {
        load_conversation(&listed.path, &listed.id)
    }
}

// ---------------------------------------------------------------------------------------
// base_state.json: only the keys named here are kept.

#[derive(Deserialize, Default)]
struct State {
    #[serde(default)]
    agent: Option<AgentState>,
    #[serde(default)]
    workspace: Option<Workspace>,
    #[serde(default)]
    leaf_event_id: Option<String>,
    #[serde(default)]
    stats: Option<Stats>,
}

#[derive(Deserialize, Default)]
struct AgentState {
    #[serde(default)]
    llm: Option<Llm>,
}

#[derive(Deserialize, Default)]
struct Llm {
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize, Default)]
struct Workspace {
    #[serde(default)]
    working_dir: Option<String>,
}

#[derive(Deserialize, Default)]
struct Stats {
    #[serde(default)]
    usage_to_metrics: HashMap<String, Metrics>,
}

#[derive(Deserialize, Default)]
struct Metrics {
    #[serde(default)]
    model_name: Option<String>,
    #[serde(default)]
    costs: Vec<CallCost>,
    #[serde(default)]
    token_usages: Vec<CallUsage>,
}

#[derive(Deserialize, Default)]
struct CallCost {
    #[serde(default)]
    cost: f64,
}

#[derive(Deserialize, Default)]
struct CallUsage {
    #[serde(default)]
    model: Option<String>,
    #[serde(default, deserialize_with = "kit::count")]
    prompt_tokens: u64,
    #[serde(default, deserialize_with = "kit::count")]
    completion_tokens: u64,
    #[serde(default, deserialize_with = "kit::count")]
    cache_read_tokens: u64,
    #[serde(default, deserialize_with = "kit::count")]
    cache_write_tokens: u64,
    #[serde(default, deserialize_with = "kit::count")]
    reasoning_tokens: u64,
    #[serde(default)]
    response_id: Option<String>,
}

/// One LLM call: its usage, model and (when known) cost.
struct Call {
    usage_id: String,
    usage: TokenUsage,
    model: Option<String>,
    cost: Option<f64>,
    response_id: String,
}

fn read_state(dir: &Path, s: &mut Session) -> State {
    let path = dir.join(BASE_STATE);
    if !path.exists() {
        return State::default();
    }
    let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    if len > MAX_FILE_BYTES {
        s.warnings.push(format!(
            "{BASE_STATE}: {len} bytes, too large to parse, skipped"
        ));
        return State::default();
    }
    match kit::read_file(&path) {
        Ok(bytes) => {
            s.source.paths.push(path);
            serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                s.warnings.push(format!(
                    "{BASE_STATE}: not read: {e} (model, cwd and usage unknown)"
                ));
                State::default()
            })
        }
        Err(e) => {
            s.warnings.push(format!("{BASE_STATE}: cannot read: {e}"));
            State::default()
        }
    }
}

/// Every LLM call the stats record, in usage-id order then call order.
fn calls(stats: Option<Stats>) -> Vec<Call> {
    let mut metrics: Vec<(String, Metrics)> = stats
        .map(|s| s.usage_to_metrics.into_iter().collect())
        .unwrap_or_default();
    metrics.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::new();
    for (usage_id, m) in metrics {
        let paired = m.costs.len() == m.token_usages.len();
        for (i, u) in m.token_usages.into_iter().enumerate() {
            let cached = u.cache_read_tokens;
            let written = u.cache_write_tokens;
            out.push(Call {
                usage_id: usage_id.clone(),
                usage: TokenUsage {
                    input_tokens: u.prompt_tokens.saturating_sub(cached + written),
                    output_tokens: u.completion_tokens.saturating_sub(u.reasoning_tokens),
                    thinking_tokens: u.reasoning_tokens.min(u.completion_tokens),
                    cached_tokens: cached,
                    cache_write_tokens: written,
                },
                model: u
                    .model
                    .filter(|m| !m.is_empty())
                    .or_else(|| m.model_name.clone().filter(|n| n != "default")),
                cost: paired.then(|| m.costs[i].cost),
                response_id: u.response_id.unwrap_or_default(),
            });
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Events

/// The event files of `events/`, in index order: `event-<idx>-<id>.json`.
fn event_files(dir: &Path) -> Vec<(u64, PathBuf)> {
    let mut out: Vec<(u64, PathBuf)> = kit::typed_entries(&dir.join(EVENTS))
        .into_iter()
        .filter(|(_, t)| *t == EntryType::File)
        .filter_map(|(p, _)| {
            let name = kit::file_name(&p);
            let rest = name.strip_prefix("event-")?.strip_suffix(".json")?;
            let (idx, _) = rest.split_once('-')?;
            Some((idx.parse().ok()?, p))
        })
        .collect();
    out.sort();
    out
}

/// Load one conversation directory.
pub fn load_conversation(dir: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(AGENT, id);
    b.s.source.format = "openhands-events".into();
    let state = read_state(dir, &mut b.s);
    let model = state
        .agent
        .and_then(|a| a.llm)
        .and_then(|l| l.model)
        .filter(|m| !m.is_empty());
    b.s.cwd = state
        .workspace
        .and_then(|w| w.working_dir)
        .filter(|w| !w.is_empty());

    let mut events: Vec<Value> = Vec::new();
    for (idx, p) in event_files(dir) {
        let name = kit::file_name(&p).to_string();
        let len = std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0);
        let (why, raw) = if len > MAX_FILE_BYTES {
            (format!("{len} bytes, too large to parse"), String::new())
        } else {
            match kit::read_file(&p) {
                Err(e) => (format!("cannot read: {e}"), String::new()),
                Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                    Ok(v @ Value::Object(_)) => {
                        events.push(v);
                        continue;
                    }
                    Ok(_) => (
                        "not a JSON object".into(),
                        String::from_utf8_lossy(&bytes).into_owned(),
                    ),
                    Err(e) => (e.to_string(), String::from_utf8_lossy(&bytes).into_owned()),
                },
            }
        };
        // Kept as a record of its own, its raw text shown where it stood (no parent
        // known: it follows the event before it).
        events.push(serde_json::json!({
            "kind": UNPARSED, "id": format!("event-{idx}"),
            "why": format!("{name}: {why}"), "raw": raw,
        }));
    }
    b.s.source.paths.push(dir.join(EVENTS));

    let (active, branches) = split_branches(&events, state.leaf_event_id.as_deref());
    let calls = calls(state.stats);
    let mut by_response: HashMap<&str, usize> = HashMap::new();
    for (i, c) in calls.iter().enumerate() {
        if !c.response_id.is_empty() {
            by_response.entry(c.response_id.as_str()).or_insert(i);
        }
    }
    let mut used = vec![false; calls.len()];
    let mut skipped: HashMap<String, usize> = HashMap::new();
    {
        let mut cx = Cx {
            b: &mut b,
            calls: &calls,
            by_response: &by_response,
            used: &mut used,
            model: model.as_deref(),
            skipped: &mut skipped,
            count_usage: true,
            last_action: None,
        };
        for &i in &active {
            cx.event(&events[i]);
        }
    }
    // Calls no event names still count, each as an event of its own.
    for (i, c) in calls.iter().enumerate() {
        if !used[i] {
            b.push(Message {
                role: Role::System,
                kind: MessageKind::Event,
                content: format!(
                    "LLM call ({}, {})",
                    c.usage_id,
                    c.model.as_deref().unwrap_or("model unknown")
                ),
                token_usage: Some(c.usage),
                cost: c.cost,
                model: c.model.clone(),
                reply_id: (!c.response_id.is_empty()).then(|| c.response_id.clone()),
                ..Message::default()
            });
        }
    }
    for (leaf, path, fork) in branches {
        let mut bb = SessionBuilder::new(AGENT, id);
        let mut none = vec![true; calls.len()];
        let mut cx = Cx {
            b: &mut bb,
            calls: &calls,
            by_response: &by_response,
            used: &mut none,
            model: model.as_deref(),
            skipped: &mut skipped,
            count_usage: false,
            last_action: None,
        };
        for &i in &path {
            cx.event(&events[i]);
        }
        b.unparsed.absorb(std::mem::take(&mut bb.unparsed));
        b.s.branches.push(Branch {
            name: format!("branch-{}", crate::names::escape(&leaf)),
            fork_point: fork,
            leaf: Some(leaf),
            messages: bb.s.messages,
        });
    }
    let mut skipped: Vec<(String, usize)> = skipped.into_iter().collect();
    skipped.sort();
    for (kind, n) in skipped {
        b.warn(format!(
            "{n} {kind} records not shown ({})",
            why_skipped(&kind)
        ));
    }
    b.finish()
}

fn why_skipped(kind: &str) -> &'static str {
    match kind {
        "TokenEvent" => "token ids only",
        "LLMCompletionLogEvent" => {
            "raw LLM request and response logs, which repeat the conversation"
        }
        "StreamingDeltaEvent" => "streamed pieces of a reply the conversation holds whole",
        _ => "state updates",
    }
}

/// A branch off the active path: its leaf's id, its path (root first) and the last event
/// it shares with the active path.
type OffPath = (String, Vec<usize>, Option<String>);

/// The active path (event positions, root first) and every other branch as
/// `(leaf id, path, fork point)`. Events follow their `parent_id`; one without follows the
/// event before it (the SDK's rule for events written before the tree).
fn split_branches(events: &[Value], leaf: Option<&str>) -> (Vec<usize>, Vec<OffPath>) {
    let ids: Vec<String> = events
        .iter()
        .enumerate()
        .map(|(i, e)| s(e, "id").map(str::to_string).unwrap_or(format!("#{i}")))
        .collect();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for (i, id) in ids.iter().enumerate() {
        at.entry(id.as_str()).or_insert(i);
    }
    // An event file that could not be read has no known place in the tree: it is shown
    // on the active path where its index puts it, and the event after it follows the
    // event before it.
    let floating = |i: usize| s(&events[i], "kind") == Some(UNPARSED);
    let parent = |i: usize| -> Option<usize> {
        match events[i].get("parent_id") {
            Some(Value::String(p)) if p == "__root__" => None,
            Some(Value::String(p)) => at.get(p.as_str()).copied(),
            _ => (0..i).rev().find(|&j| !floating(j)),
        }
    };
    let path_to = |leaf: usize| -> Vec<usize> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut cur = Some(leaf);
        while let Some(c) = cur {
            if !seen.insert(c) {
                break;
            }
            out.push(c);
            cur = parent(c);
        }
        out.reverse();
        out
    };
    if events.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let Some(last) = (0..events.len()).rev().find(|&j| !floating(j)) else {
        return ((0..events.len()).collect(), Vec::new());
    };
    let head = leaf.and_then(|l| at.get(l).copied()).unwrap_or(last);
    let mut active = path_to(head);
    active.extend((0..events.len()).filter(|&j| floating(j)));
    active.sort_unstable();
    active.dedup();
    if active.len() == events.len() {
        return (active, Vec::new());
    }
    let on: HashSet<usize> = active.iter().copied().collect();
    let mut has_child = vec![false; events.len()];
    for i in 0..events.len() {
        if let Some(p) = parent(i) {
            has_child[p] = true;
        }
    }
    let mut branches = Vec::new();
    for i in 0..events.len() {
        if has_child[i] || on.contains(&i) || floating(i) {
            continue;
        }
        let path = path_to(i);
        let fork = path
            .iter()
            .rev()
            .find(|p| on.contains(p))
            .map(|&p| ids[p].clone());
        branches.push((ids[i].clone(), path, fork));
    }
    (active, branches)
}

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

/// OpenHands writes `datetime.now().isoformat()`: local time without an offset.
fn time(v: &Value) -> Option<DateTime<Utc>> {
    let t = s(v, "timestamp")?;
    if let Some(t) = kit::parse_rfc3339(t) {
        return Some(t);
    }
    let n = NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f").ok()?;
    Local
        .from_local_datetime(&n)
        .earliest()
        .map(|t| t.with_timezone(&Utc))
}

/// The text of a list of `TextContent`/`ImageContent` (images as placeholders).
fn contents(v: Option<&Value>) -> String {
    let mut out = String::new();
    let items: Vec<&Value> = match v {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(o @ Value::Object(_)) => vec![o],
        Some(Value::String(t)) => {
            push_para(&mut out, t);
            Vec::new()
        }
        _ => Vec::new(),
    };
    for c in items {
        match s(c, "type") {
            Some("image") => {
                for u in c
                    .get("image_urls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    push_para(&mut out, &kit::data_url_placeholder(u));
                }
            }
            _ => match s(c, "text") {
                Some(t) => push_para(&mut out, t),
                None => push_para(&mut out, &c.to_string()),
            },
        }
    }
    out
}

fn push_para(dst: &mut String, t: &str) {
    if t.is_empty() {
        return;
    }
    if !dst.is_empty() {
        dst.push_str("\n\n");
    }
    dst.push_str(t);
}

/// Visible reasoning of a message or action: `reasoning_content`, thinking blocks
/// (redacted ones sealed), a Responses reasoning item's summary and content.
fn reasoning(v: &Value) -> Option<String> {
    let mut out = String::new();
    if let Some(r) = s(v, "reasoning_content") {
        push_para(&mut out, r);
    }
    for b in v
        .get("thinking_blocks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match s(b, "type") {
            Some("redacted_thinking") => push_para(&mut out, SEALED_THINKING),
            _ => push_para(&mut out, s(b, "thinking").unwrap_or("")),
        }
    }
    if let Some(item) = v.get("responses_reasoning_item").filter(|i| i.is_object()) {
        for key in ["summary", "content"] {
            for t in item
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                push_para(&mut out, t);
            }
        }
        if out.is_empty() && item.get("encrypted_content").is_some_and(|e| !e.is_null()) {
            push_para(&mut out, SEALED_THINKING);
        }
    }
    (!out.is_empty()).then_some(out)
}

struct Cx<'a> {
    b: &'a mut SessionBuilder,
    calls: &'a [Call],
    by_response: &'a HashMap<&'a str, usize>,
    used: &'a mut Vec<bool>,
    model: Option<&'a str>,
    skipped: &'a mut HashMap<String, usize>,
    /// False in branches: usage is counted on the active path only.
    count_usage: bool,
    /// The message the last action became and the LLM response that made it.
    last_action: Option<(usize, String)>,
}

impl Cx<'_> {
    /// The call `response` names, the first time it is named.
    fn call(&mut self, response: Option<&str>) -> Option<&Call> {
        let i = *self.by_response.get(response?)?;
        if self.used[i] {
            return None;
        }
        self.used[i] = true;
        Some(&self.calls[i])
    }

    fn with_call(&mut self, m: &mut Message, response: Option<&str>) {
        if self.count_usage {
            if let Some(c) = self.call(response) {
                m.token_usage = Some(c.usage);
                m.cost = c.cost;
                m.model = c.model.clone();
                m.reply_id = Some(c.response_id.clone());
            }
        }
        if m.model.is_none() {
            m.model = self.model.map(str::to_string);
        }
    }

    fn event(&mut self, v: &Value) {
        let t = time(v);
        let id = s(v, "id").map(str::to_string);
        let kind = s(v, "kind").unwrap_or("");
        match kind {
            "MessageEvent" => self.message(v, t, id),
            "ActionEvent" => self.action(v, t, id),
            "ObservationEvent" => {
                let obs = v.get("observation").unwrap_or(&Value::Null);
                let is_error = obs
                    .get("is_error")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let out = contents(obs.get("content"));
                self.result(v, out, is_error, t);
                let extra = contents(v.get("extended_content"));
                if !extra.is_empty() {
                    self.b.context("agent context", extra, t);
                }
            }
            "UserRejectObservation" => {
                let why = s(v, "rejection_reason").unwrap_or("rejected");
                let by = s(v, "rejection_source").unwrap_or("user");
                self.result(v, format!("rejected by {by}: {why}"), true, t);
            }
            "AgentErrorEvent" => {
                let err = s(v, "error").unwrap_or("").to_string();
                if s(v, "tool_call_id").is_some_and(|c| !c.is_empty()) {
                    self.result(v, err, true, t);
                } else {
                    self.b.event(format!("agent error: {err}"), t);
                }
            }
            "SystemPromptEvent" => {
                let mut text = contents(v.get("system_prompt"));
                push_para(&mut text, &contents(v.get("dynamic_context")));
                let tools: Vec<&str> = v
                    .get("tools")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|t| s(t, "name").or_else(|| s(t, "title")))
                    .collect();
                if !tools.is_empty() {
                    push_para(&mut text, &format!("tools: {}", tools.join(", ")));
                }
                self.b.context("system prompt", text, t);
            }
            "Condensation" | "CondensationSummaryEvent" => {
                let summary = s(v, "summary").unwrap_or("");
                if summary.trim().is_empty() {
                    let n = v
                        .get("forgotten_event_ids")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    self.b
                        .event(format!("condensation: {n} events forgotten"), t);
                } else {
                    let mut m = Message {
                        role: Role::System,
                        kind: MessageKind::CompactionSummary,
                        content: summary.to_string(),
                        timestamp: t,
                        native_id: id,
                        ..Message::default()
                    };
                    self.with_call(&mut m, s(v, "llm_response_id"));
                    self.b.push(m);
                }
            }
            "CondensationRequest" => self.b.event("condensation requested".into(), t),
            "ConversationErrorEvent" => {
                let code = s(v, "code").unwrap_or("error");
                let detail = s(v, "detail").unwrap_or("");
                self.b.event(format!("{code}: {detail}"), t);
            }
            "PauseEvent" => self.b.event("paused".into(), t),
            "InterruptEvent" => self.b.event("interrupted".into(), t),
            "HookExecutionEvent" => {
                let mut text = format!("$ {}", s(v, "hook_command").unwrap_or(""));
                for k in ["stdout", "stderr", "reason", "additional_context", "error"] {
                    push_para(&mut text, s(v, k).unwrap_or(""));
                }
                let ty = s(v, "hook_event_type").unwrap_or("");
                self.b.context(&format!("hook {ty}"), text, t);
            }
            "ACPToolCallEvent" => {
                let out = match v.get("raw_output") {
                    Some(Value::String(o)) => o.clone(),
                    Some(Value::Null) | None => contents(v.get("content")),
                    Some(o) => o.to_string(),
                };
                let m = Message {
                    role: Role::Assistant,
                    timestamp: t,
                    native_id: id,
                    tool_calls: vec![ToolCall {
                        tool_call_id: s(v, "tool_call_id").unwrap_or("").to_string(),
                        tool_name: s(v, "title").unwrap_or("").to_string(),
                        input: v.get("raw_input").cloned().unwrap_or(Value::Null),
                        output: Some(out),
                        is_error: v.get("is_error").and_then(Value::as_bool),
                        ..ToolCall::default()
                    }],
                    ..Message::default()
                };
                self.b.push(m);
            }
            "ConversationStateUpdateEvent" => {
                // The value may be the whole state; only a plain value is shown.
                let key = s(v, "key").unwrap_or("");
                match v.get("value") {
                    Some(Value::String(x)) => self.b.event(format!("{key}: {x}"), t),
                    Some(x @ (Value::Bool(_) | Value::Number(_))) => {
                        self.b.event(format!("{key}: {x}"), t)
                    }
                    _ => *self.skipped.entry(kind.to_string()).or_default() += 1,
                }
            }
            "TokenEvent" | "LLMCompletionLogEvent" | "StreamingDeltaEvent" => {
                *self.skipped.entry(kind.to_string()).or_default() += 1;
            }
            UNPARSED => {
                let why = s(v, "why").unwrap_or("");
                let raw = s(v, "raw").unwrap_or("");
                self.b.unparsed(
                    "event files",
                    "not JSON",
                    || why.to_string(),
                    "event",
                    raw,
                    None,
                );
            }
            other => {
                let what = format!("kind {other}");
                let text = v.to_string();
                self.b.unparsed(
                    "events",
                    &what,
                    || id.clone().unwrap_or_default(),
                    "event",
                    &text,
                    t,
                );
            }
        }
    }

    fn message(&mut self, v: &Value, t: Option<DateTime<Utc>>, id: Option<String>) {
        let lm = v.get("llm_message").unwrap_or(&Value::Null);
        let role = s(lm, "role").unwrap_or("");
        let source = s(v, "source").unwrap_or("");
        let text = contents(lm.get("content"));
        let extra = contents(v.get("extended_content"));
        match (role, source) {
            ("assistant", _) | (_, "agent") => {
                let mut m = Message {
                    role: Role::Assistant,
                    content: text,
                    timestamp: t,
                    thinking: reasoning(lm),
                    native_id: id,
                    ..Message::default()
                };
                self.with_call(&mut m, s(v, "llm_response_id"));
                self.b.push(m);
            }
            ("system", _) => self.b.context("system message", text, t),
            _ => {
                if !text.trim().is_empty() {
                    self.b.push(Message {
                        role: Role::User,
                        content: text,
                        timestamp: t,
                        native_id: id,
                        ..Message::default()
                    });
                }
            }
        }
        let skills: Vec<&str> = v
            .get("activated_skills")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !extra.is_empty() {
            let label = if skills.is_empty() {
                "agent context".to_string()
            } else {
                format!("skills: {}", skills.join(", "))
            };
            self.b.context(&label, extra, t);
        }
    }

    /// An action: a tool call, joined to the reply before it when the same LLM response
    /// made both (parallel calls).
    fn action(&mut self, v: &Value, t: Option<DateTime<Utc>>, id: Option<String>) {
        let tc = v.get("tool_call").unwrap_or(&Value::Null);
        let call_id = s(v, "tool_call_id")
            .or_else(|| s(tc, "id"))
            .unwrap_or("")
            .to_string();
        let name = s(v, "tool_name")
            .or_else(|| s(tc, "name"))
            .unwrap_or("")
            .to_string();
        let input = match s(tc, "arguments") {
            Some(args) => kit::call_arguments(args, "actions", &mut self.b.unparsed, || {
                id.clone().unwrap_or_default()
            }),
            None => v.get("action").cloned().unwrap_or(Value::Null),
        };
        let call = ToolCall {
            tool_call_id: call_id,
            tool_name: name,
            input,
            ..ToolCall::default()
        };
        let response = s(v, "llm_response_id").map(str::to_string);
        let thought = contents(v.get("thought"));
        let thinking = reasoning(v);
        let last = self.b.s.messages.len().checked_sub(1);
        let same = match (&self.last_action, &response) {
            (Some((i, r)), Some(resp)) => Some(*i) == last && r == resp,
            _ => false,
        };
        if same && thought.is_empty() && thinking.is_none() {
            // Taken off and pushed again, so the builder knows the new call by id.
            if let Some(mut m) = self.b.s.messages.pop() {
                m.tool_calls.push(call);
                self.b.push(m);
            }
            return;
        }
        let mut m = Message {
            role: Role::Assistant,
            content: thought,
            timestamp: t,
            thinking,
            tool_calls: vec![call],
            native_id: id,
            ..Message::default()
        };
        self.with_call(&mut m, response.as_deref());
        self.b.push(m);
        self.last_action = response.map(|r| (self.b.s.messages.len() - 1, r));
    }

    fn result(&mut self, v: &Value, out: String, is_error: bool, t: Option<DateTime<Utc>>) {
        let call = s(v, "tool_call_id").unwrap_or("");
        let name = s(v, "tool_name");
        self.b.tool_result(call, name, out, is_error, t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_off_the_leafs_path_are_branches() {
        let ev = |id: &str, parent: Option<&str>| json!({"id": id, "parent_id": parent});
        let events = vec![
            ev("a", None),
            ev("b", Some("a")),
            ev("c", Some("b")),
            ev("d", Some("b")),
        ];
        let (active, branches) = split_branches(&events, Some("d"));
        assert_eq!(active, [0, 1, 3]);
        assert_eq!(branches.len(), 1);
        assert_eq!(branches[0].0, "c");
        assert_eq!(branches[0].1, [0, 1, 2]);
        assert_eq!(branches[0].2.as_deref(), Some("b"));
        // Without parents, events follow each other: one path, no branch.
        let linear = vec![json!({"id": "x"}), json!({"id": "y"})];
        assert_eq!(split_branches(&linear, None), (vec![0, 1], vec![]));
    }

    #[test]
    fn a_call_splits_cached_and_reasoning_tokens_out() {
        let stats: Stats = serde_json::from_value(json!({"usage_to_metrics": {"agent": {
            "model_name": "m", "costs": [{"model": "m", "cost": 0.5}],
            "token_usages": [{"model": "m", "prompt_tokens": 100, "completion_tokens": 30,
                              "cache_read_tokens": 60, "cache_write_tokens": 10,
                              "reasoning_tokens": 5, "response_id": "r1"}]}}}))
        .expect("stats");
        let c = calls(Some(stats));
        assert_eq!(c.len(), 1);
        assert_eq!(
            (
                c[0].usage.input_tokens,
                c[0].usage.output_tokens,
                c[0].usage.thinking_tokens
            ),
            (30, 25, 5)
        );
        assert_eq!(c[0].cost, Some(0.5));
    }
}
