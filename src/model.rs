//! The unified session model every store parses into and every renderer reads from.
//!
//! The shapes follow agent-mux's `Session` / `SessionMessage` / `SessionToolCall` so that
//! `messages.jsonl` can be consumed by tools written for that spec. sessfs adds what the
//! spec leaves out: in-file branches, subagents, warnings and the native source.
//!
//! Content is plain text. Stores turn images and binary attachments into placeholders
//! (see [`placeholder`]) while parsing, so no base64 payload ever reaches a renderer or the
//! cache: a 200 MB session full of screenshots renders from a few MB of text.

use chrono::{DateTime, Utc};
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;

/// The agents sessfs knows, in the order their directories appear at the mount root.
///
/// This list is the one source of truth for agent directory names (CONTRACT section 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    Claude,
    Codex,
    Gemini,
    Copilot,
    Cursor,
    Opencode,
    Pi,
    Omp,
    Openclaw,
    Hermes,
    Agentuse,
    Agsh,
    Indusagi,
    Atsf,
    Cline,
    Roo,
    Kilo,
    Crush,
    Amp,
    Qwen,
    Kimi,
    Aider,
    Continue,
    Zed,
    CopilotChat,
    Droid,
    Openhands,
    Goose,
    Gptme,
    Kiro,
    Vibe,
    Grok,
    Forge,
    Mux,
    Neovate,
    Llxprt,
    Codebuff,
    Kode,
    Nanocoder,
    Interpreter,
    Cody,
    Void,
    Aichat,
    Codecompanion,
    Avante,
    Llm,
    Copilotchat,
    Gp,
    Fabric,
    Chatgptnvim,
    Parrot,
    Everycode,
    Ellama,
    Octofriend,
    Pearai,
    Jan,
    Sgpt,
    Oterm,
    Dyad,
    Mods,
    Iflow,
    Anythingllm,
    Ollama,
}

impl Agent {
    pub const ALL: [Agent; 63] = [
        Agent::Claude,
        Agent::Codex,
        Agent::Gemini,
        Agent::Copilot,
        Agent::Cursor,
        Agent::Opencode,
        Agent::Pi,
        Agent::Omp,
        Agent::Openclaw,
        Agent::Hermes,
        Agent::Agentuse,
        Agent::Agsh,
        Agent::Indusagi,
        Agent::Atsf,
        Agent::Cline,
        Agent::Roo,
        Agent::Kilo,
        Agent::Crush,
        Agent::Amp,
        Agent::Qwen,
        Agent::Kimi,
        Agent::Aider,
        Agent::Continue,
        Agent::Zed,
        Agent::CopilotChat,
        Agent::Droid,
        Agent::Openhands,
        Agent::Goose,
        Agent::Gptme,
        Agent::Kiro,
        Agent::Vibe,
        Agent::Grok,
        Agent::Forge,
        Agent::Mux,
        Agent::Neovate,
        Agent::Llxprt,
        Agent::Codebuff,
        Agent::Kode,
        Agent::Nanocoder,
        Agent::Interpreter,
        Agent::Cody,
        Agent::Void,
        Agent::Aichat,
        Agent::Codecompanion,
        Agent::Avante,
        Agent::Llm,
        Agent::Copilotchat,
        Agent::Gp,
        Agent::Fabric,
        Agent::Chatgptnvim,
        Agent::Parrot,
        Agent::Everycode,
        Agent::Ellama,
        Agent::Octofriend,
        Agent::Pearai,
        Agent::Jan,
        Agent::Sgpt,
        Agent::Oterm,
        Agent::Dyad,
        Agent::Mods,
        Agent::Iflow,
        Agent::Anythingllm,
        Agent::Ollama,
    ];

    /// The fixed directory name under the mount root.
    pub fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Copilot => "copilot",
            Agent::Cursor => "cursor",
            Agent::Opencode => "opencode",
            Agent::Pi => "pi",
            Agent::Omp => "omp",
            Agent::Openclaw => "openclaw",
            Agent::Hermes => "hermes",
            Agent::Agentuse => "agentuse",
            Agent::Agsh => "agsh",
            Agent::Indusagi => "indusagi",
            Agent::Atsf => "atsf",
            Agent::Cline => "cline",
            Agent::Roo => "roo",
            Agent::Kilo => "kilo",
            Agent::Crush => "crush",
            Agent::Amp => "amp",
            Agent::Qwen => "qwen",
            Agent::Kimi => "kimi",
            Agent::Aider => "aider",
            Agent::Continue => "continue",
            Agent::Zed => "zed",
            Agent::CopilotChat => "copilot-chat",
            Agent::Droid => "droid",
            Agent::Openhands => "openhands",
            Agent::Goose => "goose",
            Agent::Gptme => "gptme",
            Agent::Kiro => "kiro",
            Agent::Vibe => "vibe",
            Agent::Grok => "grok",
            Agent::Forge => "forge",
            Agent::Mux => "mux",
            Agent::Neovate => "neovate",
            Agent::Llxprt => "llxprt",
            Agent::Codebuff => "codebuff",
            Agent::Kode => "kode",
            Agent::Nanocoder => "nanocoder",
            Agent::Interpreter => "interpreter",
            Agent::Cody => "cody",
            Agent::Void => "void",
            Agent::Aichat => "aichat",
            Agent::Codecompanion => "codecompanion",
            Agent::Avante => "avante",
            Agent::Llm => "llm",
            Agent::Copilotchat => "copilotchat",
            Agent::Gp => "gp",
            Agent::Fabric => "fabric",
            Agent::Chatgptnvim => "chatgptnvim",
            Agent::Parrot => "parrot",
            Agent::Everycode => "everycode",
            Agent::Ellama => "ellama",
            Agent::Octofriend => "octofriend",
            Agent::Pearai => "pearai",
            Agent::Jan => "jan",
            Agent::Sgpt => "sgpt",
            Agent::Oterm => "oterm",
            Agent::Dyad => "dyad",
            Agent::Mods => "mods",
            Agent::Iflow => "iflow",
            Agent::Anythingllm => "anythingllm",
            Agent::Ollama => "ollama",
        }
    }

    pub fn from_name(name: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.name() == name)
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    #[default]
    User,
    Assistant,
    System,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
            Role::Tool => "tool",
        }
    }
}

/// What a message is beyond its role; renderers show markers for the special kinds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum MessageKind {
    #[default]
    Normal,
    /// The summary that replaced earlier context (pi `compaction`, Claude `isCompactSummary`).
    CompactionSummary,
    /// A summary of an abandoned branch (pi `branch_summary`).
    BranchSummary,
    /// A shell command the user ran directly (pi `bashExecution`, omp `pythonExecution`).
    Execution,
    /// Session events that are not conversation: model or thinking-level changes, labels.
    Event,
    /// Context the agent's harness injected for the model (hook feedback, reminders, skill
    /// bodies, command expansions, environment blocks): role `system`, never a prompt, a
    /// turn or the title. [`Message::label`] names what kind of context it is.
    Context,
}

/// Token counts as reported by the agent. All fields are totals for one message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub thinking_tokens: u64,
    /// Prompt tokens served from the provider's cache (reads).
    pub cached_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write_tokens: u64,
}

impl TokenUsage {
    pub fn add(&mut self, other: &TokenUsage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.thinking_tokens += other.thinking_tokens;
        self.cached_tokens += other.cached_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }

    pub fn is_zero(&self) -> bool {
        *self == TokenUsage::default()
    }

    /// USD at `model`'s list price ([`crate::pricing`]), `None` for an unpriced model.
    pub fn estimate_usd(&self, model: &str) -> Option<f64> {
        crate::pricing::price(model).map(|p| {
            p.usd(
                self.input_tokens,
                self.output_tokens + self.thinking_tokens,
                self.cached_tokens,
                self.cache_write_tokens,
            )
        })
    }
}

/// A tool call made by an assistant message.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub tool_call_id: String,
    pub tool_name: String,
    /// The call's arguments as the agent stored them.
    pub input: serde_json::Value,
    /// Set only where the native record holds call and result together (agentuse, ATSF,
    /// OpenCode). Elsewhere the result is its own `Role::Tool` message, which keeps
    /// rendering prefix-stable when the result is appended later.
    pub output: Option<String>,
    pub is_error: Option<bool>,
    pub duration_ms: Option<u64>,
}

/// The result of a tool call, carried by a `Role::Tool` message.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub tool_call_id: String,
    pub tool_name: String,
    pub output: String,
    pub is_error: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub role: Role,
    pub kind: MessageKind,
    /// Plain text; images and attachments appear as [`placeholder`]s.
    pub content: String,
    pub timestamp: Option<DateTime<Utc>>,
    pub tool_calls: Vec<ToolCall>,
    pub tool_result: Option<ToolResult>,
    pub token_usage: Option<TokenUsage>,
    /// USD as reported by the agent for this message.
    pub cost: Option<f64>,
    /// Visible reasoning. Sealed or encrypted reasoning is the text [`SEALED_THINKING`].
    pub thinking: Option<String>,
    pub model: Option<String>,
    /// Native id of the record(s) this message came from, for fork points and diffs.
    pub native_id: Option<String>,
    /// For [`MessageKind::Context`]: what was injected (`hook feedback`, `reminder`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Copied from the session this one was forked from: shown, but not counted in cost.
    #[serde(skip)]
    pub inherited: bool,
    /// The provider's identity of the API reply this message is (Claude `message.id` and
    /// `requestId`), where the agent may copy one reply into several files: `sessfs cost`
    /// counts each reply once across all sessions.
    #[serde(skip)]
    pub reply_id: Option<String>,
}

/// How many messages two paths share from the start, by role and content: what a branch
/// or a fork copied from the path it left (counted once, on that path).
pub fn shared_prefix(a: &[Message], b: &[Message]) -> usize {
    a.iter()
        .zip(b)
        .take_while(|(x, y)| x.role == y.role && x.text() == y.text())
        .count()
}

impl Message {
    /// The message's text: `content`, or for a tool result whose text lives only in
    /// [`ToolResult::output`], that output.
    pub fn text(&self) -> &str {
        match &self.tool_result {
            Some(r) if self.content.is_empty() => &r.output,
            _ => &self.content,
        }
    }

    /// A tool result whose text is just its output, with nothing of its own: the
    /// `SessionMessage` shape's "tool-only" message, whose output is written once.
    pub fn is_tool_only(&self) -> bool {
        self.tool_result
            .as_ref()
            .is_some_and(|r| r.output == self.text())
    }
}

/// Shown in place of reasoning the agent stored only in encrypted or signed-away form.
pub const SEALED_THINKING: &str = "[sealed reasoning: stored encrypted by the agent, not readable]";

/// The placeholder for an image or binary attachment: names the type and size, never the bytes.
pub fn placeholder(kind: &str, mime: Option<&str>, bytes: Option<usize>) -> String {
    let mut s = format!("[{kind}");
    if let Some(m) = mime {
        s.push_str(": ");
        s.push_str(m);
    }
    if let Some(b) = bytes {
        s.push_str(if mime.is_some() { ", " } else { ": " });
        s.push_str(&human_bytes(b as u64));
    }
    s.push(']');
    s
}

/// Byte counts as `512 B`, `12.3 KB`, `4.5 MB` (decimal units, one decimal).
pub fn human_bytes(n: u64) -> String {
    if n < 1000 {
        format!("{n} B")
    } else if n < 1_000_000 {
        format!("{:.1} KB", n as f64 / 1e3)
    } else if n < 1_000_000_000 {
        format!("{:.1} MB", n as f64 / 1e6)
    } else {
        format!("{:.1} GB", n as f64 / 1e9)
    }
}

/// Size in bytes of the data a base64 string encodes.
pub fn base64_decoded_len(b64: &str) -> usize {
    let trimmed = b64.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

/// A non-active path of an in-file conversation tree (pi `parentId`, Claude rewinds).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Branch {
    /// Directory-safe name: the label if the store has one, else `branch-<leaf id>`.
    pub name: String,
    /// Native id of the last entry shared with the active path.
    pub fork_point: Option<String>,
    /// Native id of the branch's leaf.
    pub leaf: Option<String>,
    /// The whole path from the root to the branch's leaf, shared prefix included.
    #[serde(skip)]
    pub messages: Vec<Message>,
}

/// A child session spawned by this one (Claude Task/Agent, agentuse, meka).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Subagent {
    /// Name under `subagents/`, e.g. `agent-a881341`.
    pub name: String,
    /// Unified id of the child when it is a top-level session of its own.
    pub unified_id: Option<String>,
    pub description: Option<String>,
    /// The tool call that spawned it, when known.
    pub tool_call_id: Option<String>,
    /// The child itself when it has no top-level id (nested directory).
    #[serde(skip)]
    pub session: Option<Box<Session>>,
}

/// Where a session came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    pub paths: Vec<PathBuf>,
    /// e.g. `pi-jsonl`, `claude-jsonl`.
    pub format: String,
    pub format_version: Option<String>,
}

/// Cost as the agent reported it, summed over messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    pub total_usd: f64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub thinking_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cached_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write_tokens: u64,
    /// True when priced from a model table rather than reported by the agent.
    pub estimated: bool,
    /// True when some usage has neither a reported cost nor a known price: `total_usd` then
    /// covers only the rest, and `meta.json` shows `totalUsd: null`, never a silent 0.
    pub unpriced: bool,
    /// True when the session has replies but the agent recorded no usage and no cost for
    /// any of them (Cursor, ellama, oterm, ...): what they cost is unknown, not zero, so
    /// `meta.json` shows `totalUsd: null` and `usageRecorded: false`.
    pub unrecorded: bool,
}

impl Cost {
    /// `other` added in: tokens and dollars summed; estimated or unpriced if either is.
    pub fn add(&mut self, other: &Cost) {
        self.total_usd += other.total_usd;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.thinking_tokens += other.thinking_tokens;
        self.cached_tokens += other.cached_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.estimated |= other.estimated;
        self.unpriced |= other.unpriced;
        self.unrecorded |= other.unrecorded;
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub agent: Agent,
    /// The agent's own id (Claude file uuid, pi header `id`, ...).
    pub id: String,
    pub title: Option<String>,
    pub created_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
    pub cwd: Option<String>,
    pub tags: Vec<String>,
    /// The active branch, in order.
    pub messages: Vec<Message>,
    pub branches: Vec<Branch>,
    pub subagents: Vec<Subagent>,
    /// Unified id of the session this one was forked from.
    pub forked_from: Option<String>,
    /// Unified id of the session that spawned this one (subagents).
    pub parent: Option<String>,
    /// Only subagents remain: the main transcript they belonged to is gone (a Claude
    /// `<uuid>/subagents/` directory without its `<uuid>.jsonl`).
    pub orphaned: bool,
    pub source: Source,
    /// Every problem met while reading; the session still renders what could be parsed.
    pub warnings: Vec<String>,
    /// Session-level token totals the agent itself keeps (meka's `stat_*` counters), for
    /// stores whose messages carry no per-message usage. `None` when the agent keeps none.
    /// [`Session::cost`] uses it only when no message carries usage or cost, so it is never
    /// counted twice.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported_usage: Option<TokenUsage>,
    /// Session-level USD the agent itself keeps (Hermes `actual_cost_usd`), with `true` when
    /// it is the agent's own estimate (`estimated_cost_usd`). Used, like
    /// [`Session::reported_usage`], only when no message carries usage or cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported_cost: Option<(f64, bool)>,
    /// The model the session was set to use, as the agent records it apart from its replies
    /// (Codex `turn_context.model`, Copilot CLI's selected model): the session's model when
    /// no reply names one, because every request failed or nothing was answered yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_model: Option<String>,
    /// Extra files of the session directory that are neither messages nor tool calls, as
    /// `(path relative to the session directory, content)`, e.g. agsh's scratchpad as
    /// `tools/scratchpad-<name>.md`. Paths use `/`, never start with one and never collide
    /// with rendered names; renderers write them verbatim.
    #[serde(skip)]
    pub extra_files: Vec<(String, String)>,
    /// What the top-level sessions this one spawned cost, each with everything it spawned in
    /// turn: children linked by unified id ([`Subagent::unified_id`]) rather than nested,
    /// which a store cannot see from one session. The tree fills it when it loads them
    /// (`Fs::load_marked`); `None` until then, and for a session that links no child.
    #[serde(skip)]
    pub linked_cost: Option<Cost>,
}

impl Session {
    pub fn new(agent: Agent, id: impl Into<String>) -> Session {
        Session {
            agent,
            id: id.into(),
            title: None,
            created_at: None,
            updated_at: None,
            cwd: None,
            tags: Vec::new(),
            messages: Vec::new(),
            branches: Vec::new(),
            subagents: Vec::new(),
            forked_from: None,
            parent: None,
            orphaned: false,
            source: Source::default(),
            warnings: Vec::new(),
            reported_usage: None,
            reported_cost: None,
            set_model: None,
            extra_files: Vec::new(),
            linked_cost: None,
        }
    }

    /// `<agent>:<native id>`, the agent-mux id scheme.
    pub fn unified_id(&self) -> String {
        unified_id(self.agent, &self.id)
    }

    /// Models used by assistant messages, in order of first use; when no message names one,
    /// the model the session was set to ([`Session::set_model`]), if any.
    pub fn models(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for m in &self.messages {
            if let Some(model) = &m.model {
                if !out.iter().any(|x| x == model) {
                    out.push(model.clone());
                }
            }
        }
        if out.is_empty() {
            out.extend(self.set_model.clone());
        }
        out
    }

    /// The primary model: the one used by the most assistant messages (first wins a tie);
    /// when no message names one, the model the session was set to.
    pub fn primary_model(&self) -> Option<String> {
        let models = self.models();
        let count = |name: &String| {
            self.messages
                .iter()
                .filter(|m| m.model.as_ref() == Some(name))
                .count()
        };
        let mut best: Option<(usize, &String)> = None;
        for m in &models {
            let c = count(m);
            if best.is_none_or(|(bc, _)| c > bc) {
                best = Some((c, m));
            }
        }
        best.map(|(_, m)| m.clone())
    }

    /// Cost and tokens over the active branch. A message with usage but no reported cost
    /// is priced from [`crate::pricing`], and the total is then marked `estimated`. When no
    /// message carries usage or cost, the agent's session totals ([`Session::reported_usage`])
    /// are used instead, priced by the primary model. When there are none either, replies of
    /// the session's own make the cost [`Cost::unrecorded`].
    pub fn cost(&self) -> Cost {
        let mut cost = Cost::default();
        let per_message = self
            .messages
            .iter()
            .any(|m| m.token_usage.is_some() || m.cost.is_some());
        if !per_message && (self.reported_usage.is_some() || self.reported_cost.is_some()) {
            let u = self.reported_usage.unwrap_or_default();
            cost.input_tokens = u.input_tokens;
            cost.output_tokens = u.output_tokens;
            cost.thinking_tokens = u.thinking_tokens;
            cost.cached_tokens = u.cached_tokens;
            cost.cache_write_tokens = u.cache_write_tokens;
            if let Some((usd, estimated)) = self.reported_cost {
                cost.total_usd = usd;
                cost.estimated = estimated;
            } else if u.is_zero() {
                // Nothing used: nothing to estimate.
            } else if let Some(c) = self
                .primary_model()
                .and_then(|model| u.estimate_usd(&model))
            {
                cost.total_usd = c;
                cost.estimated = true;
            } else {
                cost.unpriced = true;
            }
            return cost;
        }
        if !per_message {
            cost.unrecorded = self.has_own_replies();
            return cost;
        }
        for m in self.messages.iter().filter(|m| !m.inherited) {
            if let Some(u) = &m.token_usage {
                cost.input_tokens += u.input_tokens;
                cost.output_tokens += u.output_tokens;
                cost.thinking_tokens += u.thinking_tokens;
                cost.cached_tokens += u.cached_tokens;
                cost.cache_write_tokens += u.cache_write_tokens;
            }
            match (m.cost, &m.token_usage) {
                (Some(c), _) => cost.total_usd += c,
                (None, Some(u)) if !u.is_zero() => {
                    match m.model.as_deref().and_then(|model| u.estimate_usd(model)) {
                        Some(c) => {
                            cost.total_usd += c;
                            cost.estimated = true;
                        }
                        None => cost.unpriced = true,
                    }
                }
                _ => {}
            }
        }
        cost
    }

    /// Whether the session holds a reply of its own (an assistant message not copied from
    /// the session it was forked from): one whose usage the agent could have recorded.
    pub fn has_own_replies(&self) -> bool {
        self.messages
            .iter()
            .any(|m| !m.inherited && m.role == Role::Assistant)
    }

    /// The session together with everything it spawned, nested to any depth: its own
    /// [`Session::cost`], each nested child's total, and [`Session::linked_cost`]. `None` for
    /// a session that spawned nothing, whose own cost is the whole of it.
    pub fn cost_with_subagents(&self) -> Option<Cost> {
        if self.subagents.is_empty() {
            return None;
        }
        let mut total = self.cost();
        for child in self.subagents.iter().filter_map(|s| s.session.as_deref()) {
            total.add(&child.cost_with_subagents().unwrap_or_else(|| child.cost()));
        }
        if let Some(linked) = &self.linked_cost {
            total.add(linked);
        }
        Some(total)
    }

    /// Hold each tool output once: a tool message whose `content` repeats its result's
    /// output keeps only the output ([`Message::text`] still returns it). Outputs are most
    /// of a long session's text, so this halves what a big session costs in memory.
    pub fn drop_duplicate_text(&mut self) {
        let dedupe = |msgs: &mut Vec<Message>| {
            for m in msgs {
                if m.tool_result
                    .as_ref()
                    .is_some_and(|r| r.output == m.content)
                {
                    m.content = String::new();
                }
            }
        };
        dedupe(&mut self.messages);
        for b in &mut self.branches {
            dedupe(&mut b.messages);
        }
        for sub in &mut self.subagents {
            if let Some(child) = &mut sub.session {
                child.drop_duplicate_text();
            }
        }
    }

    /// Number of user turns: user messages that are ordinary prompts.
    pub fn turn_count(&self) -> usize {
        self.messages
            .iter()
            .filter(|m| m.role == Role::User && m.kind == MessageKind::Normal)
            .count()
    }
}

pub fn unified_id(agent: Agent, native: &str) -> String {
    format!("{}:{}", agent.name(), native)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_names_round_trip() {
        for a in Agent::ALL {
            assert_eq!(Agent::from_name(a.name()), Some(a));
        }
    }

    /// meka keeps token totals per session only; `meta.json` used to show zero tokens and
    /// no cost for such sessions.
    #[test]
    fn session_totals_count_when_messages_carry_no_usage() {
        let mut s = Session::new(Agent::Agsh, "m");
        s.messages.push(Message {
            role: Role::Assistant,
            model: Some("claude-sonnet-4".into()),
            ..Message::default()
        });
        s.reported_usage = Some(TokenUsage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            ..TokenUsage::default()
        });
        let c = s.cost();
        assert_eq!((c.input_tokens, c.output_tokens), (1_000_000, 1_000_000));
        assert_eq!(c.total_usd, 18.0);
        assert!(c.estimated);
        // Per-message usage wins, so nothing is counted twice.
        s.messages[0].token_usage = Some(TokenUsage {
            input_tokens: 10,
            ..TokenUsage::default()
        });
        assert_eq!(s.cost().input_tokens, 10);
    }

    #[test]
    fn placeholder_names_type_and_size() {
        assert_eq!(
            placeholder("image", Some("image/png"), Some(12_345)),
            "[image: image/png, 12.3 KB]"
        );
        assert_eq!(placeholder("audio", None, Some(10)), "[audio: 10 B]");
    }
}
