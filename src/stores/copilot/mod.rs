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
//! - **Usage is per CLI process**: per-call usage events are ephemeral (never written); each
//!   process (a `session.start` or `session.resume` to its `session.shutdown`) writes its
//!   totals in `session.shutdown.modelMetrics` when it exits. A process that crashed, was
//!   killed or still runs wrote none, and the only usage left of it is each reply's
//!   `assistant.message.outputTokens`. So the session's [`Session::reported_usage`] is, per
//!   process, its shutdown's totals where there is one (its replies then are not counted
//!   again), else its replies' output tokens; input excludes cache reads, as pricing
//!   expects. `requests.cost` counts *premium requests* (it equals `totalPremiumRequests` in
//!   real files), not USD, so it is a tag, never a cost.
//! - **Nothing is dropped unseen**: an event whose `data` is not what its type promises, a
//!   line that is JSON but no event, and an event of a type sessfs does not read are
//!   counted, one warning per kind of problem ([`kit::Unparsed`]), and their raw text is shown where
//!   they stood, as context labelled `unparsed record`; so is a line holding no JSON at all
//!   (counted by the line reader), except a partial last line, still being written.
//!   Only types with nothing of their own to show are passed over ([`QUIET_TYPES`]).
//!   `skill.invoked` (the skill body given to the model) and `system.notification` are
//!   context. In history documents an entry that cannot be read is shown the same way.
//! - `workspace.yaml` is a handful of flat `key: value` lines; they are read by hand.

use super::{jsonl, kit, Base, Env, Listed, Root, Store};
use crate::model::{
    unified_id, Agent, Branch, Message, MessageKind, Role, Session, Subagent, TokenUsage, ToolCall,
    SEALED_THINKING,
};
use chrono::{DateTime, Utc};
use serde::de::IgnoredAny;
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
    #[serde(rename = "skill.invoked")]
    SkillInvoked,
    #[serde(rename = "system.notification")]
    SystemNotification,
    #[serde(other)]
    Other,
}

impl EvType {
    fn of(s: &str) -> EvType {
        use serde::de::IntoDeserializer;
        let d: serde::de::value::StrDeserializer<'_, serde::de::value::Error> =
            s.into_deserializer();
        EvType::deserialize(d).unwrap_or(EvType::Other)
    }
}

/// `{type, data, id, timestamp, parentId, agentId?}`; `data` is parsed by type afterwards.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a> {
    #[serde(rename = "type", default, borrow, deserialize_with = "kit::cow_str")]
    ty: Cow<'a, str>,
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
data_struct!(SkillData { name, content });
data_struct!(NotificationData { content });
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
    /// `session.start` or `session.resume`: a CLI process began writing here.
    begins: bool,
    /// `outputTokens` of an `assistant.message`.
    out_tokens: u64,
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
    Context(String, String),
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

/// Parse `data` as `T`; a mismatch is the reason the event cannot be read.
fn data<'a, T: Deserialize<'a> + Default>(raw: Option<&'a RawValue>) -> Result<T, String> {
    match raw {
        None => Ok(T::default()),
        Some(r) => serde_json::from_str(r.get()).map_err(|e| format!("unexpected data: {e}")),
    }
}

/// The event's item; `Err(reason)` when its `data` is not what its type promises.
fn digest(env: &Envelope<'_>, ty: EvType, at: &str, w: &mut Vec<String>) -> Result<Item, String> {
    let raw = env.data;
    Ok(match ty {
        EvType::Start => {
            let d = data::<StartData<'_>>(raw)?;
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
            let d = data::<ModelChangeData<'_>>(raw)?;
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
            let d = data::<ModeData<'_>>(raw)?;
            event_msg(format!("mode: {} -> {}", d.previous_mode, d.new_mode))
        }
        EvType::Info | EvType::Warning | EvType::Error => {
            let d = data::<NoticeData<'_>>(raw)?;
            let label = match ty {
                EvType::Info => "info",
                EvType::Warning => "warning",
                _ => "error",
            };
            event_msg(format!("{label}: {}", d.message))
        }
        EvType::CompactionComplete => {
            let d = data::<CompactionData<'_>>(raw)?;
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
            let d = data::<TaskData<'_>>(raw)?;
            event_msg(format!("task complete: {}", d.summary))
        }
        EvType::Shutdown => {
            let d = data::<ShutdownData>(raw)?;
            let mut usage = TokenUsage::default();
            let mut premium = 0.0;
            for m in d.model_metrics.values() {
                let u = &m.usage;
                usage.add(&TokenUsage {
                    input_tokens: u.input_tokens.saturating_sub(u.cache_read_tokens),
                    // `outputTokens` holds the reasoning too (the replies' own `outputTokens`
                    // add up to it), as Codex's `output_tokens` does: kept apart, once.
                    output_tokens: u.output_tokens.saturating_sub(u.reasoning_tokens),
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
            let d = data::<SystemData<'_>>(raw)?;
            let label = if d.role == "developer" {
                "developer message"
            } else {
                "system prompt"
            };
            Item::Context(label.into(), d.content.into_owned())
        }
        EvType::UserMessage => {
            let d = data::<UserData<'_>>(raw)?;
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
                Item::Context("injected prompt".into(), d.transformed_content.into_owned())
            } else {
                Item::Msg(Message {
                    role: Role::User,
                    content,
                    ..Message::default()
                })
            }
        }
        EvType::AssistantMessage => {
            let d = data::<AssistantData<'_>>(raw)?;
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
            let d = data::<ReasoningData<'_>>(raw)?;
            match non_empty(&d.content) {
                Some(t) => Item::Reasoning(t),
                None => Item::Other,
            }
        }
        EvType::ToolStart => {
            let d = data::<ToolStartData<'_>>(raw)?;
            Item::ToolStart {
                call: d.tool_call_id.into_owned(),
                name: d.tool_name.into_owned(),
            }
        }
        EvType::ToolComplete => {
            let d = data::<ToolCompleteData<'_>>(raw)?;
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
            let d = data::<SubagentData<'_>>(raw)?;
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
            let d = data::<SubagentData<'_>>(raw)?;
            let how = if ty == EvType::SubagentFailed {
                "failed"
            } else {
                "completed"
            };
            event_msg(format!("subagent {} {how}", d.agent_name))
        }
        EvType::Abort => {
            let d = data::<AbortData<'_>>(raw)?;
            event_msg(format!("aborted: {}", d.reason))
        }
        EvType::SkillInvoked => {
            let d = data::<SkillData<'_>>(raw)?;
            let label = match non_empty(&d.name) {
                Some(n) => format!("skill {n}"),
                None => "skill".into(),
            };
            Item::Context(label, d.content.into_owned())
        }
        EvType::SystemNotification => {
            let d = data::<NotificationData<'_>>(raw)?;
            Item::Context("notification".into(), d.content.into_owned())
        }
        // Told apart by the caller.
        EvType::Other => Item::Other,
    })
}

/// Event types that hold nothing of their own to show: turn brackets, hook runs (their
/// input repeats the tool call and result beside them), compaction and usage markers,
/// permission prompts and agent selection. Any other type sessfs does not read is shown
/// as raw text, with a warning.
const QUIET_TYPES: &[&str] = &[
    "assistant.turn_start",
    "assistant.turn_end",
    "hook.start",
    "hook.end",
    "session.compaction_start",
    "session.usage_checkpoint",
    "permission.requested",
    "permission.completed",
    "subagent.selected",
    "subagent.deselected",
];

/// A record sessfs cannot read, kept where it stood: its raw text as collapsed context
/// labelled `unparsed record`.
fn unread(raw: &str) -> Item {
    Item::Context(UNPARSED.into(), raw.trim().to_string())
}

const UNPARSED: &str = "unparsed record";

/// The events of `path`, and the lines that held none, whose text the session keeps.
fn read_events(path: &Path, warnings: &mut Vec<String>) -> (Vec<Ev>, Vec<jsonl::Unparsed>) {
    let mut evs = Vec::new();
    let mut local: Vec<String> = Vec::new();
    let mut unread_count = kit::Unparsed::default();
    let io = jsonl::read_lines(path, |n, line| {
        let at = format!("line {n}");
        let text = || String::from_utf8_lossy(line);
        let env: Envelope<'_> = match serde_json::from_slice(line) {
            Ok(env) => env,
            // One JSON value that is no event: kept as text. Anything else goes back to
            // the line reader, which recovers values written back to back and keeps the
            // text of what is no JSON at all.
            Err(e) if serde_json::from_slice::<IgnoredAny>(line).is_ok() => {
                unread_count.note("events", "not an event", || format!("{at}: {e}"));
                evs.push(Ev::loose(unread(&text())));
                return Ok(());
            }
            Err(e) => return Err(format!("not an event: {e}")),
        };
        let ty = EvType::of(&env.ty);
        let item = if ty == EvType::Other {
            if env.ty.is_empty() {
                unread_count.note("events", "an event without a type", || at.clone());
                unread(&text())
            } else if QUIET_TYPES.contains(&env.ty.as_ref()) {
                Item::Other
            } else {
                let problem = format!("a type sessfs does not read ({})", env.ty);
                unread_count.note("events", &problem, || at.clone());
                unread(&text())
            }
        } else {
            match digest(&env, ty, &at, &mut local) {
                Ok(item) => item,
                Err(e) => {
                    let problem = format!("{} data of another shape", env.ty);
                    unread_count.note("events", &problem, || format!("{at}: {e}"));
                    unread(&text())
                }
            }
        };
        let parent_call = if env.agent_id.is_empty() {
            None
        } else {
            data::<CommonData<'_>>(env.data)
                .ok()
                .and_then(|c| non_empty(&c.parent_tool_call_id))
        };
        let out_tokens = match ty {
            EvType::AssistantMessage => data::<Tokens>(env.data).map_or(0, |t| t.output_tokens),
            _ => 0,
        };
        evs.push(Ev {
            id: env.id.into_owned(),
            parent: non_empty(&env.parent_id),
            agent: non_empty(&env.agent_id),
            parent_call,
            ts: kit::parse_rfc3339(&env.timestamp),
            item,
            begins: matches!(ty, EvType::Start | EvType::Resume),
            out_tokens,
        });
        Ok(())
    });
    warnings.extend(io.warnings);
    warnings.extend(local);
    warnings.extend(unread_count.warnings());
    (evs, io.unparsed)
}

/// `assistant.message.data.outputTokens`: the only usage written per reply, read when no
/// `session.shutdown` sums up the process that made the reply.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Tokens {
    #[serde(default, deserialize_with = "kit::count")]
    output_tokens: u64,
}

impl Ev {
    /// An event read from a line that is no event envelope: it takes part in nothing but
    /// the file order.
    fn loose(item: Item) -> Ev {
        Ev {
            id: String::new(),
            parent: None,
            agent: None,
            parent_call: None,
            ts: None,
            item,
            begins: false,
            out_tokens: 0,
        }
    }
}

/// Tokens and premium requests of a session. A CLI process writes its totals in one
/// `session.shutdown` when it exits; a process that crashed, was killed or still runs
/// wrote none, and the only usage it left is each reply's `outputTokens`. So events are
/// read in file order as runs (each `session.start` / `session.resume` begins one): a run
/// that ends in a shutdown counts the shutdown's totals and nothing else, a run without
/// one counts its replies' output tokens. No reply is counted twice, and no run is lost.
fn usage(evs: &[Ev]) -> (Option<TokenUsage>, f64) {
    let mut total: Option<TokenUsage> = None;
    let mut premium = 0.0;
    let mut pending = 0u64;
    let flush = |pending: &mut u64, total: &mut Option<TokenUsage>| {
        if *pending > 0 {
            total
                .get_or_insert_with(TokenUsage::default)
                .add(&TokenUsage {
                    output_tokens: *pending,
                    ..TokenUsage::default()
                });
        }
        *pending = 0;
    };
    for e in evs {
        if e.begins {
            flush(&mut pending, &mut total);
        }
        if let Item::Shutdown { usage, premium: p } = &e.item {
            total.get_or_insert_with(TokenUsage::default).add(usage);
            premium += p;
            pending = 0;
        }
        pending += e.out_tokens;
    }
    flush(&mut pending, &mut total);
    (total, premium)
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
            Item::Shutdown { .. } | Item::SubagentStarted { .. } | Item::Other => {}
        }
    }
}

fn load_events(path: &Path, id: &str) -> Session {
    let mut warnings = Vec::new();
    let mut extra = Vec::new();
    let (evs, unread_lines) = read_events(path, &mut warnings);
    if let Some(file) = jsonl::unparsed_file(&unread_lines) {
        warnings.push(jsonl::unparsed_warning(unread_lines.len()));
        extra.push(file);
    }
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
    let (usage, premium) = usage(&evs);
    if premium > 0.0 {
        s.tags.push(format!("premium-requests:{premium}"));
    }
    s.created_at = get("created_at")
        .and_then(|t| kit::parse_rfc3339(&t))
        .or(facts.start)
        .or(s.created_at);
    if let Some(t) = get("updated_at").and_then(|t| kit::parse_rfc3339(&t)) {
        s.updated_at = s.updated_at.max(Some(t));
    }
    s.reported_usage = usage;
    s.source.paths = vec![path.to_path_buf()];
    if dir.is_some() && !ws.is_empty() {
        s.source.paths.push(path.with_file_name("workspace.yaml"));
    }
    s.source.format = "copilot-events-jsonl".into();
    s.source.format_version = facts.version;
    s.warnings.splice(0..0, warnings);
    s.extra_files.extend(extra);
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
    /// Entries are read one by one, so one that cannot be read costs only itself.
    #[serde(default, borrow)]
    chat_messages: Vec<&'a RawValue>,
    #[serde(default, borrow)]
    timeline: Vec<&'a RawValue>,
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
            // A document cut short or of another shape: its text is all there is.
            b.warn(format!(
                "not a Copilot history session: {e}; its raw text is shown"
            ));
            b.context(UNPARSED, text.trim().to_string(), None);
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
    let mut unread = kit::Unparsed::default();
    if h.timeline.is_empty() {
        chat_messages(h.chat_messages, &mut b, &mut unread);
    } else {
        timeline(h.timeline, &mut b, &mut unread);
    }
    for w in unread.warnings() {
        b.warn(w);
    }
    b.finish()
}

/// An entry of a history document that cannot be read: counted, and its text shown where
/// it stood.
fn unread_entry(
    b: &mut kit::SessionBuilder,
    unread: &mut kit::Unparsed,
    raw: &RawValue,
    problem: &str,
    first: impl FnOnce() -> String,
) {
    unread.note("entries", problem, first);
    b.context(UNPARSED, raw.get().trim().to_string(), None);
}

/// The timeline is what the user saw, with times and tool results: preferred when present.
fn timeline(entries: Vec<&RawValue>, b: &mut kit::SessionBuilder, unread: &mut kit::Unparsed) {
    for (i, raw) in entries.into_iter().enumerate() {
        let at = format!("timeline[{i}]");
        let e = match serde_json::from_str::<TimelineEntry<'_>>(raw.get()) {
            Ok(e) => e,
            Err(e) => {
                unread_entry(b, unread, raw, "not a timeline entry", || {
                    format!("{at}: {e}")
                });
                continue;
            }
        };
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
            TimelineType::Other => unread_entry(
                b,
                unread,
                raw,
                "a timeline type sessfs does not read",
                || at,
            ),
        }
    }
}

fn chat_messages(msgs: Vec<&RawValue>, b: &mut kit::SessionBuilder, unread: &mut kit::Unparsed) {
    for (i, raw) in msgs.into_iter().enumerate() {
        let at = format!("chatMessages[{i}]");
        let m = match serde_json::from_str::<ChatMessage<'_>>(raw.get()) {
            Ok(m) => m,
            Err(e) => {
                unread_entry(b, unread, raw, "not a chat message", || {
                    format!("{at}: {e}")
                });
                continue;
            }
        };
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
            other => {
                let problem = format!("a chat message with role {other:?}");
                unread_entry(b, unread, raw, &problem, || at);
            }
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
