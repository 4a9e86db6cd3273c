//! Copilot CLI events: each `events.jsonl` line read into a typed envelope and `data`
//! payload, then digested at once into an owned [`Ev`] holding only what the transcript
//! needs (the line itself is dropped), plus the session's usage from those events.
//!
//! Owns every shape of an event and every "cannot read this" decision about one; knows
//! nothing about their order, branches or subagents ([`super::session`] does).

use crate::model::{Message, MessageKind, Role, TokenUsage, ToolCall, SEALED_THINKING};
use crate::stores::{jsonl, kit};
use chrono::{DateTime, Utc};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

/// The `session.start.version` this parser was written against.
const SCHEMA_VERSION: u64 = 1;

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
pub(super) struct Ev {
    pub(super) id: String,
    pub(super) parent: Option<String>,
    pub(super) agent: Option<String>,
    /// `data.parentToolCallId` of a subagent's event: the call that spawned the agent.
    pub(super) parent_call: Option<String>,
    pub(super) ts: Option<DateTime<Utc>>,
    pub(super) item: Item,
    /// `session.start` or `session.resume`: a CLI process began writing here.
    begins: bool,
    /// `outputTokens` of an `assistant.message`.
    out_tokens: u64,
}

pub(super) enum Item {
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

pub(super) fn non_empty(s: &str) -> Option<String> {
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
                .map(search_answer)
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

pub(super) const UNPARSED: &str = "unparsed record";

/// The events of `path`, and the lines that held none, whose text the session keeps.
pub(super) fn read_events(
    path: &Path,
    warnings: &mut Vec<String>,
) -> (Vec<Ev>, Vec<jsonl::Unparsed>) {
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
pub(super) fn usage(evs: &[Ev]) -> (Option<TokenUsage>, f64) {
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

/// A `web_search` result as its answer: Copilot CLI stores it as the JSON text
/// `{"type":"text","text":{"value":…,"annotations":[…]},"bing_searches":[…],"annotations":…}`
/// (`"type":"output_text"` in earlier builds), the answer on one line with its newlines
/// escaped. Shown as the answer's text, then each
/// cited source (`url_citation` title and address, once each) and each search with its
/// address, so nothing of it is lost. Anything of another shape (another key, a value
/// that is not text) is kept as stored.
pub(super) fn search_answer(output: String) -> String {
    if !output.starts_with("{\"type\":\"") {
        return output;
    }
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(&output) else {
        return output;
    };
    // `text` in later builds, `output_text` in earlier ones.
    if !matches!(
        o.get("type").and_then(Value::as_str),
        Some("text" | "output_text")
    ) {
        return output;
    }
    let known = |m: &serde_json::Map<String, Value>, keys: &[&str]| {
        m.keys().all(|k| keys.contains(&k.as_str()))
    };
    let Some(Value::Object(text)) = o.get("text") else {
        return output;
    };
    let Some(Value::String(value)) = text.get("value") else {
        return output;
    };
    if !known(&o, &["type", "text", "bing_searches", "annotations"])
        || !known(text, &["value", "annotations"])
    {
        return output;
    }
    let mut sources: Vec<(String, String)> = Vec::new();
    let annotations = [text.get("annotations"), o.get("annotations")];
    for a in annotations
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .flatten()
    {
        let Some(c) = a.get("url_citation") else {
            return output; // a kind of citation this reading does not know
        };
        let field = |k: &str| kit::str_field(c, k).unwrap_or("");
        let (title, url) = (field("title"), field("url"));
        if !sources.iter().any(|(_, u)| u == url) {
            sources.push((title.to_string(), url.to_string()));
        }
    }
    let mut out = value.clone();
    if !sources.is_empty() {
        out.push_str("\n\nSources:\n");
        for (title, url) in &sources {
            out.push_str(&format!("- {title} <{url}>\n"));
        }
    }
    let searches = o.get("bing_searches").and_then(Value::as_array);
    if let Some(searches) = searches.filter(|s| !s.is_empty()) {
        out.push_str(if sources.is_empty() { "\n\n" } else { "\n" });
        out.push_str("Searches:\n");
        for q in searches {
            let field = |k: &str| kit::str_field(q, k).unwrap_or("");
            out.push_str(&format!("- {} <{}>\n", field("text"), field("url")));
        }
    }
    out
}
