//! GitHub Copilot CLI sessions: `$COPILOT_HOME` (default `~/.copilot`).
//!
//! Three layouts, by CLI version (see `docs/formats.md`, section 4):
//!
//! ```text
//! session-state/<id>/events.jsonl + workspace.yaml      ≥ 0.0.378 (title, cwd, repo in the yaml)
//! session-state/<id>.jsonl                              0.0.342 – 0.0.377
//! history-session-state/session_<id>_<ms>.json          ≤ 0.0.341 ({chatMessages, timeline})
//! ```
//!
//! Design decisions and why:
//! - **Events form a linked list** (`parentId` = the previous event). The transcript is the
//!   chain that ends at the last event, read in file order; when every event is on it (the
//!   normal case) that is simply the file. Root-agent events off that chain are kept as
//!   [`Branch`]es, one per off-chain leaf, holding the whole path from the first event. A
//!   chain that breaks (a parent that is not in the file, a second root, a cycle) is not
//!   trusted: the file order is used and a warning says so. Subagent events (envelope
//!   `agentId`) never take part: they always belong to their subagent.
//! - **Tool results are their own messages**: `tool.execution_complete` is joined to the
//!   request by `toolCallId` through [`kit::SessionBuilder::tool_result`], so appending
//!   events only appends to the rendering.
//! - **Subagents** (events with an `agentId`) become nested child sessions named after the
//!   agent (`subagent.started.agentName`), attached to the tool call that spawned them
//!   (`data.parentToolCallId`), and are left out of the parent's transcript.
//! - **Usage is per session**: per-call usage events are ephemeral (never written), so
//!   the token totals of `session.shutdown.modelMetrics` (summed over models and over the
//!   shutdowns of a resumed session) become [`Session::reported_usage`]; input excludes cache
//!   reads, as pricing expects. `requests.cost` counts *premium requests* (it equals
//!   `totalPremiumRequests` in real files), not USD, so it is a tag, never a cost.
//! - `workspace.yaml` is a handful of flat `key: value` lines; they are read by hand.

use super::{jsonl, kit, Base, Env, Listed, Root, Store};
use crate::model::{
    unified_id, Agent, Branch, Message, MessageKind, Role, Session, Subagent, TokenUsage, ToolCall,
    SEALED_THINKING,
};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// The `session.start.version` this parser was written against.
const SCHEMA_VERSION: u64 = 1;
/// History documents larger than this are not parsed.
const MAX_JSON_BYTES: u64 = 256 << 20;
/// Subagents nested deeper than this are not loaded.
const MAX_NESTING: usize = 8;

pub fn candidates(env: &Env) -> Vec<Root> {
    let mut roots = kit::roots(
        env,
        Agent::Copilot,
        &kit::Places {
            env: &[("COPILOT_HOME", "")],
            defaults: &[".copilot"],
            spec: &[".config/github-copilot/sessions"],
        },
    );
    // Honoured up to 0.0.421 only, so it adds a place instead of replacing the default.
    if let Some(x) = env.path_var("XDG_CONFIG_HOME") {
        let p = x.join(".copilot");
        if !roots.iter().any(|r| r.path == p) {
            roots.push(Root::new(Agent::Copilot, p, "XDG_CONFIG_HOME"));
        }
    }
    roots
}

pub struct CopilotStore {
    base: Base,
}

impl CopilotStore {
    pub fn new(roots: Vec<Root>) -> CopilotStore {
        CopilotStore {
            base: Base::new(Agent::Copilot, roots),
        }
    }
}

impl Store for CopilotStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            let state = root.path.join("session-state");
            let history = root.path.join("history-session-state");
            if state.is_dir() || history.is_dir() {
                list_state(&state, i, &mut out);
                list_history(&history, i, &mut out);
            } else {
                // A root given by hand may be one of those directories itself.
                list_state(&root.path, i, &mut out);
                list_history(&root.path, i, &mut out);
            }
        }
        out
    }

    /// Ids are directory and file names: a write to a listed session's own file never
    /// changes the listing.
    fn keeps_listing(&self, _listed: &Listed) -> bool {
        true
    }

    fn load(&self, listed: &Listed) -> Session {
        if kit::file_name(&listed.path).ends_with(".json") {
            load_history(&listed.path, &listed.id)
        } else {
            load_events(&listed.path, &listed.id)
        }
    }
}

// ---------------------------------------------------------------------------------------
// Listing: names and stat only

fn list_state(dir: &Path, root: usize, out: &mut Vec<Listed>) {
    for p in kit::entries(dir) {
        let name = kit::file_name(&p).to_string();
        if p.is_dir() {
            let events = p.join("events.jsonl");
            if events.is_file() {
                let mut l = Listed::file(name, events, root);
                l.sources.push(p.join("workspace.yaml"));
                out.push(l);
            }
        } else if let Some(id) = name.strip_suffix(".jsonl") {
            if p.is_file() && !id.is_empty() {
                out.push(Listed::file(id, p.clone(), root));
            }
        }
    }
}

/// `session_<uuid>_<epoch ms>.json` → `<uuid>`.
fn history_id(name: &str) -> Option<&str> {
    let body = name.strip_prefix("session_")?.strip_suffix(".json")?;
    let (id, ms) = body.rsplit_once('_')?;
    (!id.is_empty() && ms.bytes().all(|b| b.is_ascii_digit())).then_some(id)
}

fn list_history(dir: &Path, root: usize, out: &mut Vec<Listed>) {
    for p in kit::entries(dir) {
        if let Some(id) = history_id(kit::file_name(&p)) {
            if p.is_file() {
                out.push(Listed::file(id, p.clone(), root));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// workspace.yaml

/// The top-level `key: value` lines of a flat YAML file. Quoted scalars are unquoted and
/// `|` / `>` block scalars collected; anything nested is skipped.
fn parse_flat_yaml(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.starts_with([' ', '\t', '#', '-']) || line.trim().is_empty() {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let value = if value.starts_with(['|', '>']) {
            let folded = value.starts_with('>');
            let mut block: Vec<&str> = Vec::new();
            while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].is_empty()) {
                block.push(lines[i]);
                i += 1;
            }
            let indent = block
                .iter()
                .filter(|l| !l.trim().is_empty())
                .map(|l| l.len() - l.trim_start().len())
                .min()
                .unwrap_or(0);
            let body: Vec<&str> = block
                .iter()
                .map(|l| l.get(indent..).unwrap_or(""))
                .collect();
            let joined = body.join(if folded { " " } else { "\n" });
            joined.trim_end().to_string()
        } else if let Some(q) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
            q.replace("''", "'")
        } else if let Some(q) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            serde_json::from_str::<String>(&format!("\"{q}\"")).unwrap_or_else(|_| q.to_string())
        } else {
            value.to_string()
        };
        out.insert(key.trim().to_string(), value);
    }
    out
}

// ---------------------------------------------------------------------------------------
// Events: typed records

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
enum EvType {
    #[serde(rename = "session.start")]
    Start,
    #[serde(rename = "session.resume")]
    Resume,
    #[serde(rename = "session.model_change")]
    ModelChange,
    #[serde(rename = "session.mode_changed")]
    ModeChanged,
    #[serde(rename = "session.info")]
    Info,
    #[serde(rename = "session.warning")]
    Warning,
    #[serde(rename = "session.error")]
    Error,
    #[serde(rename = "session.compaction_complete")]
    CompactionComplete,
    #[serde(rename = "session.task_complete")]
    TaskComplete,
    #[serde(rename = "session.shutdown")]
    Shutdown,
    #[serde(rename = "system.message")]
    SystemMessage,
    #[serde(rename = "user.message")]
    UserMessage,
    #[serde(rename = "assistant.message")]
    AssistantMessage,
    #[serde(rename = "assistant.reasoning")]
    AssistantReasoning,
    #[serde(rename = "tool.execution_start")]
    ToolStart,
    #[serde(rename = "tool.execution_complete")]
    ToolComplete,
    #[serde(rename = "subagent.started")]
    SubagentStarted,
    #[serde(rename = "subagent.completed")]
    SubagentCompleted,
    #[serde(rename = "subagent.failed")]
    SubagentFailed,
    #[serde(rename = "abort")]
    Abort,
    #[serde(other)]
    Other,
}

/// `{type, data, id, timestamp, parentId, agentId?}`; `data` is parsed by type afterwards.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a> {
    #[serde(rename = "type", default)]
    ty: Option<EvType>,
    #[serde(default, borrow)]
    data: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    parent_id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    timestamp: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    agent_id: Cow<'a, str>,
}

/// A typed `data` payload whose string fields read as empty when absent or null (plus
/// any extra typed fields after `;`).
macro_rules! data_struct {
    ($name:ident { $($field:ident),* $(,)? } $(; $($extra:ident : $ty:ty),* )?) => {
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct $name<'a> {
            $(
                #[serde(default, borrow, deserialize_with = "kit::cow_str")]
                $field: Cow<'a, str>,
            )*
            $($(
                #[serde(default)]
                $extra: $ty,
            )*)?
        }
    };
}

data_struct!(Context {
    cwd,
    branch,
    repository
});
data_struct!(ModelChangeData {
    new_model,
    previous_model,
    reasoning_effort
});
data_struct!(ModeData {
    new_mode,
    previous_mode
});
data_struct!(NoticeData { message });
data_struct!(CompactionData { summary_content });
data_struct!(TaskData { summary });
data_struct!(SystemData { role, content });
data_struct!(ReasoningData { content });
data_struct!(ToolStartData {
    tool_call_id,
    tool_name
});
data_struct!(SubagentData {
    tool_call_id,
    agent_name,
    agent_display_name,
    agent_description
});
data_struct!(AbortData { reason });
data_struct!(CommonData {
    parent_tool_call_id
});
data_struct!(ToolRequest { tool_call_id, name }; arguments: Value);
data_struct!(ToolOutput {
    content,
    detailed_content
});
data_struct!(ToolError { message, code });
data_struct!(Attachment { path, display_name });

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct StartData<'a> {
    #[serde(default, deserialize_with = "kit::count")]
    version: u64,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    selected_model: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    copilot_version: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    start_time: Cow<'a, str>,
    #[serde(default, borrow)]
    context: Option<Context<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct UserData<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    content: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    transformed_content: Cow<'a, str>,
    #[serde(default, borrow)]
    attachments: Option<Vec<Attachment<'a>>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct AssistantData<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    message_id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    content: Cow<'a, str>,
    #[serde(default, borrow)]
    tool_requests: Option<Vec<ToolRequest<'a>>>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    reasoning_text: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    reasoning_opaque: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    encrypted_content: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    model: Cow<'a, str>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ToolCompleteData<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    tool_call_id: Cow<'a, str>,
    #[serde(default)]
    success: Option<bool>,
    #[serde(default, borrow)]
    result: Option<ToolOutput<'a>>,
    #[serde(default, borrow)]
    error: Option<ToolError<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ShutdownData {
    #[serde(default)]
    model_metrics: BTreeMap<String, ModelMetric>,
    #[serde(default)]
    total_premium_requests: Option<f64>,
}

#[derive(Deserialize, Default)]
struct ModelMetric {
    #[serde(default)]
    requests: Requests,
    #[serde(default)]
    usage: MetricUsage,
}

#[derive(Deserialize, Default)]
struct Requests {
    #[serde(default)]
    cost: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct MetricUsage {
    #[serde(default, deserialize_with = "kit::count")]
    input_tokens: u64,
    #[serde(default, deserialize_with = "kit::count")]
    output_tokens: u64,
    #[serde(default, deserialize_with = "kit::count")]
    cache_read_tokens: u64,
    #[serde(default, deserialize_with = "kit::count")]
    cache_write_tokens: u64,
    #[serde(default, deserialize_with = "kit::count")]
    reasoning_tokens: u64,
}

// ---------------------------------------------------------------------------------------
// Events: owned, digested

/// One event, reduced at read time to what the transcript needs (the line is dropped).
struct Ev {
    id: String,
    parent: Option<String>,
    agent: Option<String>,
    /// `data.parentToolCallId` of a subagent's event: the call that spawned the agent.
    parent_call: Option<String>,
    ts: Option<DateTime<Utc>>,
    item: Item,
}

enum Item {
    Start {
        model: Option<String>,
        /// `copilotVersion`, the CLI that wrote the file.
        version: Option<String>,
        cwd: Option<String>,
        repository: Option<String>,
        branch: Option<String>,
        start: Option<DateTime<Utc>>,
    },
    /// The new model, and how the change reads as an event.
    Model(String, String),
    /// A message as it is; `None` model on assistant messages is filled in from the
    /// current model while converting.
    Msg(Message),
    Context(&'static str, String),
    Reasoning(String),
    ToolStart {
        call: String,
        name: String,
    },
    ToolDone {
        call: String,
        output: String,
        is_error: bool,
    },
    SubagentStarted {
        call: String,
        name: String,
        description: Option<String>,
    },
    Shutdown {
        usage: TokenUsage,
        premium: f64,
    },
    Other,
}

fn non_empty(s: &str) -> Option<String> {
    let t = s.trim();
    (!t.is_empty()).then(|| s.to_string())
}

fn event_msg(text: String) -> Item {
    Item::Msg(Message {
        role: Role::System,
        kind: MessageKind::Event,
        content: text,
        ..Message::default()
    })
}

/// Parse `data` as `T`; a mismatch costs a warning and the event (`None`).
fn data<'a, T: Deserialize<'a> + Default>(
    raw: Option<&'a RawValue>,
    what: &str,
    warnings: &mut Vec<String>,
) -> Option<T> {
    match raw {
        None => Some(T::default()),
        Some(r) => match serde_json::from_str(r.get()) {
            Ok(t) => Some(t),
            Err(e) => {
                warnings.push(format!("{what}: unexpected data skipped: {e}"));
                None
            }
        },
    }
}

fn digest(env: &Envelope<'_>, at: &str, warnings: &mut Vec<String>) -> Item {
    let raw = env.data;
    let Some(ty) = env.ty else {
        return Item::Other;
    };
    let w = warnings;
    match ty {
        EvType::Start => {
            let Some(d) = data::<StartData<'_>>(raw, at, w) else {
                return Item::Other;
            };
            if d.version > SCHEMA_VERSION {
                w.push(format!(
                    "{at}: event schema version {} is newer than the {SCHEMA_VERSION} sessfs reads; read as version {SCHEMA_VERSION}",
                    d.version
                ));
            }
            let ctx = d.context.unwrap_or_default();
            Item::Start {
                model: non_empty(&d.selected_model),
                version: non_empty(&d.copilot_version),
                cwd: non_empty(&ctx.cwd),
                repository: non_empty(&ctx.repository),
                branch: non_empty(&ctx.branch),
                start: kit::parse_rfc3339(&d.start_time),
            }
        }
        EvType::Resume => event_msg("session resumed".into()),
        EvType::ModelChange => {
            let Some(d) = data::<ModelChangeData<'_>>(raw, at, w) else {
                return Item::Other;
            };
            match non_empty(&d.new_model) {
                Some(m) => {
                    let mut text = match non_empty(&d.previous_model) {
                        Some(p) => format!("model: {p} -> {m}"),
                        None => format!("model: {m}"),
                    };
                    if let Some(r) = non_empty(&d.reasoning_effort) {
                        text.push_str(&format!(" (reasoning effort {r})"));
                    }
                    Item::Model(m, text)
                }
                None => Item::Other,
            }
        }
        EvType::ModeChanged => {
            let Some(d) = data::<ModeData<'_>>(raw, at, w) else {
                return Item::Other;
            };
            event_msg(format!("mode: {} -> {}", d.previous_mode, d.new_mode))
        }
        EvType::Info | EvType::Warning | EvType::Error => {
            let Some(d) = data::<NoticeData<'_>>(raw, at, w) else {
                return Item::Other;
            };
            let label = match ty {
                EvType::Info => "info",
                EvType::Warning => "warning",
                _ => "error",
            };
            event_msg(format!("{label}: {}", d.message))
        }
        EvType::CompactionComplete => {
            let Some(d) = data::<CompactionData<'_>>(raw, at, w) else {
                return Item::Other;
            };
            match non_empty(&d.summary_content) {
                Some(text) => Item::Msg(Message {
                    role: Role::System,
                    kind: MessageKind::CompactionSummary,
                    content: text,
                    ..Message::default()
                }),
                None => event_msg("context compacted".into()),
            }
        }
        EvType::TaskComplete => {
            let Some(d) = data::<TaskData<'_>>(raw, at, w) else {
                return Item::Other;
            };
            event_msg(format!("task complete: {}", d.summary))
        }
        EvType::Shutdown => {
            let Some(d) = data::<ShutdownData>(raw, at, w) else {
                return Item::Other;
            };
            let mut usage = TokenUsage::default();
            let mut premium = 0.0;
            for m in d.model_metrics.values() {
                let u = &m.usage;
                usage.add(&TokenUsage {
                    input_tokens: u.input_tokens.saturating_sub(u.cache_read_tokens),
                    output_tokens: u.output_tokens,
                    thinking_tokens: u.reasoning_tokens,
                    cached_tokens: u.cache_read_tokens,
                    cache_write_tokens: u.cache_write_tokens,
                });
                premium += m.requests.cost.unwrap_or(0.0);
            }
            if d.model_metrics.is_empty() {
                premium = d.total_premium_requests.unwrap_or(0.0);
            }
            Item::Shutdown { usage, premium }
        }
        EvType::SystemMessage => {
            let Some(d) = data::<SystemData<'_>>(raw, at, w) else {
                return Item::Other;
            };
            let label = if d.role == "developer" {
                "developer message"
            } else {
                "system prompt"
            };
            Item::Context(label, d.content.into_owned())
        }
        EvType::UserMessage => {
            let Some(d) = data::<UserData<'_>>(raw, at, w) else {
                return Item::Other;
            };
            let mut content = d.content.into_owned();
            for a in d.attachments.iter().flatten() {
                let what = if a.path.is_empty() {
                    &a.display_name
                } else {
                    &a.path
                };
                content.push_str(&format!("\n[attachment: {what}]"));
            }
            if content.trim().is_empty() && !d.transformed_content.trim().is_empty() {
                // Sent by the harness, not typed: a nudge such as "you have not yet
                // marked the task as complete".
                Item::Context("injected prompt", d.transformed_content.into_owned())
            } else {
                Item::Msg(Message {
                    role: Role::User,
                    content,
                    ..Message::default()
                })
            }
        }
        EvType::AssistantMessage => {
            let Some(d) = data::<AssistantData<'_>>(raw, at, w) else {
                return Item::Other;
            };
            let thinking = non_empty(&d.reasoning_text).or_else(|| {
                (!d.reasoning_opaque.is_empty() || !d.encrypted_content.is_empty())
                    .then(|| SEALED_THINKING.to_string())
            });
            let tool_calls = d
                .tool_requests
                .into_iter()
                .flatten()
                .map(|r| ToolCall {
                    tool_call_id: r.tool_call_id.into_owned(),
                    tool_name: r.name.into_owned(),
                    input: r.arguments,
                    ..ToolCall::default()
                })
                .collect();
            Item::Msg(Message {
                role: Role::Assistant,
                content: d.content.into_owned(),
                tool_calls,
                thinking,
                model: non_empty(&d.model),
                native_id: non_empty(&d.message_id),
                ..Message::default()
            })
        }
        EvType::AssistantReasoning => {
            let Some(d) = data::<ReasoningData<'_>>(raw, at, w) else {
                return Item::Other;
            };
            match non_empty(&d.content) {
                Some(t) => Item::Reasoning(t),
                None => Item::Other,
            }
        }
        EvType::ToolStart => {
            let Some(d) = data::<ToolStartData<'_>>(raw, at, w) else {
                return Item::Other;
            };
            Item::ToolStart {
                call: d.tool_call_id.into_owned(),
                name: d.tool_name.into_owned(),
            }
        }
        EvType::ToolComplete => {
            let Some(d) = data::<ToolCompleteData<'_>>(raw, at, w) else {
                return Item::Other;
            };
            let mut is_error = d.success == Some(false);
            let mut output = d
                .result
                .map(|r| {
                    if r.content.is_empty() {
                        r.detailed_content.into_owned()
                    } else {
                        r.content.into_owned()
                    }
                })
                .unwrap_or_default();
            if let Some(e) = d.error {
                is_error = true;
                let msg = match (e.message.is_empty(), e.code.is_empty()) {
                    (false, false) => format!("{} ({})", e.message, e.code),
                    (false, true) => e.message.into_owned(),
                    _ => e.code.into_owned(),
                };
                if output.is_empty() {
                    output = msg;
                } else if !msg.is_empty() {
                    output = format!("{output}\n{msg}");
                }
            }
            Item::ToolDone {
                call: d.tool_call_id.into_owned(),
                output,
                is_error,
            }
        }
        EvType::SubagentStarted => {
            let Some(d) = data::<SubagentData<'_>>(raw, at, w) else {
                return Item::Other;
            };
            let name = non_empty(&d.agent_name)
                .or_else(|| non_empty(&d.agent_display_name))
                .unwrap_or_else(|| "subagent".into());
            Item::SubagentStarted {
                call: d.tool_call_id.into_owned(),
                name,
                description: non_empty(&d.agent_description)
                    .or_else(|| non_empty(&d.agent_display_name)),
            }
        }
        EvType::SubagentCompleted | EvType::SubagentFailed => {
            let Some(d) = data::<SubagentData<'_>>(raw, at, w) else {
                return Item::Other;
            };
            let how = if ty == EvType::SubagentFailed {
                "failed"
            } else {
                "completed"
            };
            event_msg(format!("subagent {} {how}", d.agent_name))
        }
        EvType::Abort => {
            let Some(d) = data::<AbortData<'_>>(raw, at, w) else {
                return Item::Other;
            };
            event_msg(format!("aborted: {}", d.reason))
        }
        EvType::Other => Item::Other,
    }
}

fn read_events(path: &Path, warnings: &mut Vec<String>) -> Vec<Ev> {
    let mut evs = Vec::new();
    let mut local: Vec<String> = Vec::new();
    let io = jsonl::read_lines(path, |n, line| {
        let env: Envelope<'_> =
            serde_json::from_slice(line).map_err(|e| format!("not an event: {e}"))?;
        let at = format!("line {n}");
        let item = digest(&env, &at, &mut local);
        let parent_call = if env.agent_id.is_empty() {
            None
        } else {
            let c: Option<CommonData<'_>> = data(env.data, &at, &mut Vec::new());
            c.and_then(|c| non_empty(&c.parent_tool_call_id))
        };
        evs.push(Ev {
            id: env.id.into_owned(),
            parent: non_empty(&env.parent_id),
            agent: non_empty(&env.agent_id),
            parent_call,
            ts: kit::parse_rfc3339(&env.timestamp),
            item,
        });
        Ok(())
    });
    warnings.extend(io.warnings);
    warnings.extend(local);
    evs
}

// ---------------------------------------------------------------------------------------
// Order: the parentId chain

/// Which events make the transcript, and the off-chain leaves that become branches.
struct Order {
    active: Vec<bool>,
    /// Index paths (root first) of root-agent events off the active chain.
    branches: Vec<Vec<usize>>,
}

fn order(evs: &[Ev], warnings: &mut Vec<String>) -> Order {
    let all = Order {
        active: vec![true; evs.len()],
        branches: Vec::new(),
    };
    let roots: Vec<usize> = (0..evs.len()).filter(|&i| evs[i].agent.is_none()).collect();
    let Some(&last) = roots.last() else {
        return all;
    };
    // Subagent events may sit in the same list, so every event is a link.
    let index: HashMap<&str, usize> = (0..evs.len())
        .filter(|&i| !evs[i].id.is_empty())
        .map(|i| (evs[i].id.as_str(), i))
        .collect();
    let starts = roots.iter().filter(|&&i| evs[i].parent.is_none()).count();
    if starts != 1 || roots.iter().any(|&i| evs[i].id.is_empty()) {
        // Not a linked list (an older writer, or ids missing): file order.
        return all;
    }
    let path_to = |leaf: usize| -> Option<Vec<usize>> {
        let mut path = vec![leaf];
        let mut seen = HashSet::from([leaf]);
        let mut cur = leaf;
        while let Some(p) = &evs[cur].parent {
            let &i = index.get(p.as_str())?;
            if !seen.insert(i) {
                return None;
            }
            path.push(i);
            cur = i;
        }
        path.reverse();
        Some(path)
    };
    let Some(chain) = path_to(last) else {
        warnings.push(
            "the parentId chain is broken (a missing parent or a cycle); events are read in file order"
                .into(),
        );
        return all;
    };
    let mut active = vec![false; evs.len()];
    for i in 0..evs.len() {
        active[i] = evs[i].agent.is_some();
    }
    for &i in &chain {
        active[i] = true;
    }
    let has_child: HashSet<&str> = evs.iter().filter_map(|e| e.parent.as_deref()).collect();
    let branches = roots
        .iter()
        .filter(|&&i| !active[i] && !has_child.contains(evs[i].id.as_str()))
        .filter_map(|&i| path_to(i))
        .collect();
    Order { active, branches }
}

// ---------------------------------------------------------------------------------------
// Events → session

/// What one pass over events yields besides messages.
#[derive(Default)]
struct Facts {
    version: Option<String>,
    cwd: Option<String>,
    repository: Option<String>,
    branch: Option<String>,
    start: Option<DateTime<Utc>>,
    usage: Option<TokenUsage>,
    premium: f64,
}

/// Turn events into messages on `b`, in the order given.
fn convert<'e>(evs: impl Iterator<Item = &'e Ev>, b: &mut kit::SessionBuilder, f: &mut Facts) {
    let mut model: Option<String> = None;
    let mut reasoning: Option<String> = None;
    let mut tool_names: HashMap<String, String> = HashMap::new();
    for e in evs {
        match &e.item {
            Item::Start {
                model: m,
                version,
                cwd,
                repository,
                branch,
                start,
            } => {
                model = m.clone().or(model);
                f.cwd = cwd.clone().or(f.cwd.take());
                f.repository = repository.clone().or(f.repository.take());
                f.branch = branch.clone().or(f.branch.take());
                f.start = f.start.or(*start).or(e.ts);
                f.version = version.clone().or(f.version.take());
            }
            Item::Model(m, text) => {
                b.event(text.clone(), e.ts);
                model = Some(m.clone());
            }
            Item::Msg(m) => {
                let mut m = m.clone();
                m.timestamp = e.ts;
                if m.role == Role::Assistant {
                    if m.model.is_none() {
                        m.model = model.clone();
                    }
                    if let Some(r) = reasoning.take() {
                        if m.thinking.is_none() || m.thinking.as_deref() == Some(SEALED_THINKING) {
                            m.thinking = Some(r);
                        }
                    }
                }
                b.push(m);
            }
            Item::Context(label, text) => b.context(label, text.clone(), e.ts),
            Item::Reasoning(t) => reasoning = Some(t.clone()),
            Item::ToolStart { call, name } => {
                tool_names.insert(call.clone(), name.clone());
            }
            Item::ToolDone {
                call,
                output,
                is_error,
            } => {
                let name = tool_names.get(call).map(String::as_str);
                b.tool_result(call, name, output.clone(), *is_error, e.ts);
            }
            Item::Shutdown { usage, premium } => {
                f.usage.get_or_insert_with(TokenUsage::default).add(usage);
                f.premium += premium;
            }
            Item::SubagentStarted { .. } | Item::Other => {}
        }
    }
}

fn load_events(path: &Path, id: &str) -> Session {
    let mut warnings = Vec::new();
    let evs = read_events(path, &mut warnings);
    let ord = order(&evs, &mut warnings);

    // Group events by agent; `None` is the session's own agent.
    let mut groups: BTreeMap<Option<&str>, Vec<usize>> = BTreeMap::new();
    for (i, e) in evs.iter().enumerate() {
        if ord.active[i] {
            groups.entry(e.agent.as_deref()).or_default().push(i);
        }
    }
    // Tool call id → (agent name, description), from `subagent.started` wherever it is.
    let spawned: HashMap<&str, (&str, Option<&str>)> = evs
        .iter()
        .filter_map(|e| match &e.item {
            Item::SubagentStarted {
                call,
                name,
                description,
            } => Some((call.as_str(), (name.as_str(), description.as_deref()))),
            _ => None,
        })
        .collect();
    let mut facts = Facts::default();
    let tree = Tree {
        evs: &evs,
        groups: &groups,
        spawned: &spawned,
    };
    let mut s = tree.build(None, id, None, &mut facts, 0);

    let mut taken = HashSet::new();
    for path in &ord.branches {
        let mut bb = kit::SessionBuilder::new(Agent::Copilot, id);
        let mut scratch = Facts::default();
        let own = path.iter().map(|&i| &evs[i]).filter(|e| e.agent.is_none());
        convert(own, &mut bb, &mut scratch);
        let leaf = path.last().map(|&i| evs[i].id.clone());
        let fork = path
            .iter()
            .rev()
            .find(|&&i| ord.active[i])
            .map(|&i| evs[i].id.clone());
        let base = format!("branch-{}", leaf.as_deref().unwrap_or("leaf"));
        s.branches.push(Branch {
            name: kit::unique_name(&mut taken, &base),
            fork_point: fork,
            leaf,
            messages: bb.s.messages,
        });
    }

    let dir = path
        .parent()
        .filter(|_| kit::file_name(path) == "events.jsonl");
    let ws = dir
        .and_then(|d| std::fs::read_to_string(d.join("workspace.yaml")).ok())
        .map(|t| parse_flat_yaml(&t))
        .unwrap_or_default();
    let get = |k: &str| ws.get(k).and_then(|v| non_empty(v));
    s.title = get("summary").or(s.title);
    s.cwd = get("cwd").or(facts.cwd);
    if let Some(r) = get("repository").or(facts.repository) {
        s.tags.push(format!("repository:{r}"));
    }
    if let Some(b) = get("branch").or(facts.branch) {
        s.tags.push(format!("branch:{b}"));
    }
    if facts.premium > 0.0 {
        s.tags.push(format!("premium-requests:{}", facts.premium));
    }
    s.created_at = get("created_at")
        .and_then(|t| kit::parse_rfc3339(&t))
        .or(facts.start)
        .or(s.created_at);
    if let Some(t) = get("updated_at").and_then(|t| kit::parse_rfc3339(&t)) {
        s.updated_at = s.updated_at.max(Some(t));
    }
    s.reported_usage = facts.usage;
    s.source.paths = vec![path.to_path_buf()];
    if dir.is_some() && !ws.is_empty() {
        s.source.paths.push(path.with_file_name("workspace.yaml"));
    }
    s.source.format = "copilot-events-jsonl".into();
    s.source.format_version = facts.version;
    s.warnings.splice(0..0, warnings);
    s
}

/// A session's events grouped by agent, for building the subagent tree.
struct Tree<'e> {
    evs: &'e [Ev],
    /// Active event indices per agent; `None` is the session's own agent.
    groups: &'e BTreeMap<Option<&'e str>, Vec<usize>>,
    spawned: &'e HashMap<&'e str, (&'e str, Option<&'e str>)>,
}

impl Tree<'_> {
    fn requested(&self, idx: &[usize]) -> HashSet<&str> {
        idx.iter()
            .filter_map(|&i| match &self.evs[i].item {
                Item::Msg(m) => Some(m.tool_calls.iter().map(|c| c.tool_call_id.as_str())),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// The session of one agent's events, with the subagents it spawned nested inside.
    fn build(
        &self,
        agent: Option<&str>,
        id: &str,
        parent: Option<String>,
        facts: &mut Facts,
        depth: usize,
    ) -> Session {
        let mut b = kit::SessionBuilder::new(Agent::Copilot, id);
        b.s.parent = parent;
        let own = self.groups.get(&agent).map(Vec::as_slice).unwrap_or(&[]);
        convert(own.iter().map(|&i| &self.evs[i]), &mut b, facts);
        if agent.is_some() {
            b.s.tags.push("subagent".into());
        }

        // Children: agents whose spawning call this agent requested; agents whose call
        // nobody requested belong to the session's own agent.
        let requested = self.requested(own);
        let all: Vec<usize> = (0..self.evs.len()).collect();
        let all_requested = self.requested(&all);
        let uid = unified_id(Agent::Copilot, id);
        for (child, idx) in self.groups {
            let Some(child) = *child else { continue };
            if Some(child) == agent {
                continue;
            }
            let call = idx.iter().find_map(|&i| self.evs[i].parent_call.as_deref());
            let mine = match call {
                Some(c) if requested.contains(c) => true,
                Some(c) => agent.is_none() && !all_requested.contains(c),
                None => agent.is_none(),
            };
            if !mine {
                continue;
            }
            if depth >= MAX_NESTING {
                b.warn(format!(
                    "subagents nested deeper than {MAX_NESTING} levels not loaded"
                ));
                continue;
            }
            let session = self.build(
                Some(child),
                child,
                Some(uid.clone()),
                &mut Facts::default(),
                depth + 1,
            );
            let (name, description) = match call.and_then(|c| self.spawned.get(c)) {
                Some((n, d)) => (n.to_string(), d.map(str::to_string)),
                None => (format!("agent-{child}"), None),
            };
            b.s.subagents.push(Subagent {
                name,
                unified_id: None,
                description,
                tool_call_id: call.map(str::to_string),
                session: Some(Box::new(session)),
            });
        }
        b.finish()
    }
}

// ---------------------------------------------------------------------------------------
// The history era

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct History<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    session_id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    start_time: Cow<'a, str>,
    #[serde(default, borrow)]
    chat_messages: Vec<ChatMessage<'a>>,
    #[serde(default, borrow)]
    timeline: Vec<TimelineEntry<'a>>,
}

/// An OpenAI-style chat message.
#[derive(Deserialize)]
struct ChatMessage<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    role: Cow<'a, str>,
    /// A string or a list of `{type, text | image_url}` parts.
    #[serde(default)]
    content: Value,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ChatToolCall<'a>>>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    tool_call_id: Cow<'a, str>,
}

#[derive(Deserialize)]
struct ChatToolCall<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    id: Cow<'a, str>,
    #[serde(default, borrow)]
    function: Option<ChatFunction<'a>>,
}

#[derive(Deserialize)]
struct ChatFunction<'a> {
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    name: Cow<'a, str>,
    /// A JSON string, as OpenAI sends it.
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    arguments: Cow<'a, str>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
enum TimelineType {
    User,
    Copilot,
    Info,
    Warning,
    Error,
    ToolCallCompleted,
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TimelineEntry<'a> {
    #[serde(rename = "type", default)]
    ty: Option<TimelineType>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    timestamp: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    text: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    call_id: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    name: Cow<'a, str>,
    #[serde(default)]
    arguments: Value,
    #[serde(default, borrow)]
    result: Option<TimelineResult<'a>>,
}

#[derive(Deserialize)]
struct TimelineResult<'a> {
    #[serde(rename = "type", default, borrow, deserialize_with = "kit::cow_str")]
    ty: Cow<'a, str>,
    #[serde(default, borrow, deserialize_with = "kit::cow_str")]
    log: Cow<'a, str>,
}

fn load_history(path: &Path, id: &str) -> Session {
    let mut b = kit::SessionBuilder::new(Agent::Copilot, id);
    b.s.source.paths = vec![path.to_path_buf()];
    b.s.source.format = "copilot-history-json".into();
    let bytes = match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_JSON_BYTES => {
            b.warn(format!("{} bytes, too large to parse, skipped", m.len()));
            return b.finish();
        }
        _ => match kit::read_file(path) {
            Ok(x) => x,
            Err(e) => {
                b.warn(format!("cannot read: {e}"));
                return b.finish();
            }
        },
    };
    let text = String::from_utf8_lossy(&bytes);
    let h: History<'_> = match serde_json::from_str(&text) {
        Ok(h) => h,
        Err(e) => {
            b.warn(format!("not a Copilot history session: {e}"));
            return b.finish();
        }
    };
    if !h.session_id.is_empty() && h.session_id != id {
        b.warn(format!(
            "sessionId {} differs from the file name; the file name is used",
            h.session_id
        ));
    }
    b.s.created_at = kit::parse_rfc3339(&h.start_time);
    if h.timeline.is_empty() {
        chat_messages(h.chat_messages, &mut b);
    } else {
        timeline(h.timeline, &mut b);
    }
    b.finish()
}

/// The timeline is what the user saw, with times and tool results: preferred when present.
fn timeline(entries: Vec<TimelineEntry<'_>>, b: &mut kit::SessionBuilder) {
    let mut unknown = 0usize;
    for e in entries {
        let ts = kit::parse_rfc3339(&e.timestamp);
        let text = e.text.into_owned();
        match e.ty.unwrap_or(TimelineType::Other) {
            TimelineType::User => b.push(Message {
                role: Role::User,
                content: text,
                timestamp: ts,
                ..Message::default()
            }),
            TimelineType::Copilot => b.push(Message {
                role: Role::Assistant,
                content: text,
                timestamp: ts,
                ..Message::default()
            }),
            t @ (TimelineType::Info | TimelineType::Warning | TimelineType::Error) => {
                let label = format!("{t:?}").to_lowercase();
                b.event(format!("{label}: {text}"), ts);
            }
            TimelineType::ToolCallCompleted => {
                let (output, is_error) = match e.result {
                    Some(r) => (r.log.into_owned(), !r.ty.is_empty() && r.ty != "success"),
                    None => (String::new(), false),
                };
                let call = ToolCall {
                    tool_call_id: e.call_id.into_owned(),
                    tool_name: e.name.into_owned(),
                    input: e.arguments,
                    output: Some(output),
                    is_error: Some(is_error),
                    duration_ms: None,
                };
                // Call and result share the entry; calls follow the reply that made them.
                match b.last_mut().filter(|m| m.role == Role::Assistant) {
                    Some(m) => m.tool_calls.push(call),
                    None => b.push(Message {
                        role: Role::Assistant,
                        timestamp: ts,
                        tool_calls: vec![call],
                        ..Message::default()
                    }),
                }
            }
            TimelineType::Other => unknown += 1,
        }
    }
    if unknown > 0 {
        b.warn(format!(
            "{unknown} timeline entries of unknown type skipped"
        ));
    }
}

fn chat_messages(msgs: Vec<ChatMessage<'_>>, b: &mut kit::SessionBuilder) {
    for m in msgs {
        let content = chat_text(&m.content);
        match m.role.as_ref() {
            "system" | "developer" => b.context("system prompt", content, None),
            "user" => b.push(Message {
                role: Role::User,
                content,
                ..Message::default()
            }),
            "assistant" => {
                let tool_calls = m
                    .tool_calls
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        let (name, args) = c
                            .function
                            .map(|f| (f.name.into_owned(), f.arguments.into_owned()))
                            .unwrap_or_default();
                        ToolCall {
                            tool_call_id: c.id.into_owned(),
                            tool_name: name,
                            input: serde_json::from_str(&args).unwrap_or(Value::String(args)),
                            ..ToolCall::default()
                        }
                    })
                    .collect();
                b.push(Message {
                    role: Role::Assistant,
                    content,
                    tool_calls,
                    ..Message::default()
                });
            }
            "tool" => b.tool_result(&m.tool_call_id, None, content, false, None),
            other => b.warn(format!("chat message with role {other:?} skipped")),
        }
    }
}

fn chat_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => {
            let mut out: Vec<String> = Vec::new();
            for p in parts {
                if let Some(t) = p.get("text").and_then(Value::as_str) {
                    out.push(t.to_string());
                } else if let Some(url) = p
                    .get("image_url")
                    .and_then(|u| u.get("url").or(Some(u)))
                    .and_then(Value::as_str)
                {
                    out.push(kit::data_url_placeholder(url));
                }
            }
            out.join("\n")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests;
