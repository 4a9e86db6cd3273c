//! Ordered records in, unified [`Session`] out.
//!
//! The graph module decides *which* records make a transcript and in what order; this one
//! decides what each becomes: the lines of one API reply merge into one assistant message
//! (usage counted once), each `tool_result` becomes its own tool message, what Claude Code
//! injected for the model (`isMeta` records, `<system-reminder>` blocks inside a prompt,
//! task notifications) becomes [`MessageKind::Context`] placed where it occurred, and the
//! records Claude Code writes for its own bookkeeping (hook summaries, turn timings)
//! disappear.

use super::graph::{Graph, MAX_BRANCHES};
use super::records::{self, FileMeta, Kind, Rec};
use super::text::{self, Special};
use crate::model::{
    self, Agent, Branch, Message, MessageKind, Role, Session, Subagent, ToolResult,
};
use crate::stores::jsonl;
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Spilled tool outputs are read up to this many bytes.
pub(super) const MAX_SPILL_BYTES: u64 = 16 * 1024 * 1024;

/// Every record of one file, plus its file-level facts.
pub(super) struct Parsed {
    pub recs: Vec<Rec>,
    pub meta: FileMeta,
    pub warnings: Vec<String>,
    /// Lines that gave no record, kept so their text stays visible.
    pub unparsed: Vec<jsonl::Unparsed>,
}

pub(super) fn parse_file(path: &Path) -> Parsed {
    let mut recs = Vec::new();
    let mut meta = FileMeta::default();
    let scanned = jsonl::read_lines(path, |_, line| {
        if let Some(r) = records::parse_line(line, &mut meta)? {
            recs.push(r);
        }
        Ok(())
    });
    parsed(recs, meta, scanned)
}

/// [`parse_file`] for an agent that writes these records with habits of its own (iFlow
/// CLI): each line that is JSON goes through `translate`, which gives the records Claude
/// Code would have written for it (none, one or several), and those are read as lines are.
/// A line that is no JSON is kept as by [`parse_file`]. `translate` sees each line once, in
/// file order, and only lines that parse, so it may keep state across lines.
pub(super) fn parse_file_translated(
    path: &Path,
    translate: &mut dyn FnMut(serde_json::Value) -> Vec<serde_json::Value>,
) -> Parsed {
    let mut recs = Vec::new();
    let mut meta = FileMeta::default();
    let scanned = jsonl::read_lines(path, |_, line| {
        let v: serde_json::Value = serde_json::from_slice(line).map_err(|e| e.to_string())?;
        for rec in translate(v) {
            let bytes = serde_json::to_vec(&rec).map_err(|e| e.to_string())?;
            if let Some(r) = records::parse_line(&bytes, &mut meta)? {
                recs.push(r);
            }
        }
        Ok(())
    });
    parsed(recs, meta, scanned)
}

fn parsed(recs: Vec<Rec>, meta: FileMeta, scanned: jsonl::Scanned) -> Parsed {
    let mut warnings = scanned.warnings;
    warnings.extend(meta.unparsed.warnings());
    Parsed {
        recs,
        meta,
        warnings,
        unparsed: scanned.unparsed,
    }
}

/// Records from JSON objects given one at a time (the records of Kode's JSON-array logs),
/// read as [`parse_file`] reads lines. `Err` items are objects that could not be written
/// out again; they cost a warning each.
pub(super) fn parse_objects(objects: impl IntoIterator<Item = Result<Vec<u8>, String>>) -> Parsed {
    let mut recs = Vec::new();
    let mut meta = FileMeta::default();
    let mut warnings = Vec::new();
    for (n, obj) in objects.into_iter().enumerate() {
        match obj.and_then(|o| records::parse_line(&o, &mut meta)) {
            Ok(Some(r)) => recs.push(r),
            Ok(None) => {}
            Err(e) => warnings.push(format!("record {}: skipped: {e}", n + 1)),
        }
    }
    warnings.extend(meta.unparsed.warnings());
    Parsed {
        recs,
        meta,
        warnings,
        unparsed: Vec::new(),
    }
}

/// What message building needs beyond the records themselves.
pub(super) struct Ctx<'a> {
    /// tool_use id -> tool name, over the whole file.
    pub tool_names: HashMap<&'a str, &'a str>,
    /// `<project>/<session>/tool-results`, when it exists.
    pub spill_dir: Option<PathBuf>,
}

impl<'a> Ctx<'a> {
    pub fn new(recs: &'a [Rec], spill_dir: Option<PathBuf>) -> Ctx<'a> {
        let mut tool_names = HashMap::new();
        for r in recs {
            for t in &r.tool_uses {
                tool_names.insert(t.tool_call_id.as_str(), t.tool_name.as_str());
            }
        }
        Ctx {
            tool_names,
            spill_dir: spill_dir.filter(|d| d.is_dir()),
        }
    }
}

/// Messages for `order` (record indices, in transcript order).
pub(super) fn build_messages(
    recs: &[Rec],
    order: &[usize],
    ctx: &Ctx,
    warnings: &mut Vec<String>,
) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    let mut by_msg: HashMap<&str, usize> = HashMap::new();
    for &i in order {
        let Some(r) = recs.get(i) else { continue };
        match r.kind {
            Kind::Assistant => 'reply: {
                if let Some(k) = r.msg_id.as_deref().and_then(|m| by_msg.get(m).copied()) {
                    if let Some(m) = out.get_mut(k) {
                        merge_assistant(m, r);
                        break 'reply;
                    }
                }
                let mut m = Message {
                    role: Role::Assistant,
                    timestamp: r.timestamp,
                    native_id: r.uuid.clone(),
                    ..Message::default()
                };
                merge_assistant(&mut m, r);
                m.reply_id = r
                    .msg_id
                    .as_ref()
                    .map(|id| format!("{id}\u{0}{}", r.request_id.as_deref().unwrap_or("")));
                if let Some(id) = r.msg_id.as_deref() {
                    by_msg.insert(id, out.len());
                }
                out.push(m);
            }
            Kind::User => user_messages(r, ctx, &mut out, warnings),
            Kind::System => {
                if let Some(t) = &r.system_text {
                    out.push(Message {
                        role: if r.user_command {
                            Role::User
                        } else {
                            Role::System
                        },
                        kind: MessageKind::Event,
                        content: t.clone(),
                        timestamp: r.timestamp,
                        native_id: r.uuid.clone(),
                        ..Message::default()
                    });
                }
            }
            Kind::Attachment | Kind::Other => {}
        }
        // What the record held that sessfs does not read, as stored, right after it.
        for raw in &r.unread {
            out.push(Message {
                role: Role::System,
                kind: MessageKind::Context,
                label: Some("unparsed content".into()),
                content: raw.clone(),
                timestamp: r.timestamp,
                native_id: r.uuid.clone(),
                ..Message::default()
            });
        }
    }
    out.retain(|m| {
        !(m.role == Role::Assistant
            && m.content.is_empty()
            && m.thinking.is_none()
            && m.tool_calls.is_empty()
            && m.token_usage.is_none())
    });
    out
}

fn push_para(dst: &mut String, s: &str) {
    if s.trim().is_empty() {
        return;
    }
    if !dst.is_empty() {
        dst.push_str("\n\n");
    }
    dst.push_str(s);
}

/// Fold one line of an API reply into its message.
fn merge_assistant(m: &mut Message, r: &Rec) {
    push_para(&mut m.content, &r.text);
    if let Some(t) = &r.thinking {
        match &mut m.thinking {
            Some(old) if old != model::SEALED_THINKING => push_para(old, t),
            slot => *slot = Some(t.clone()),
        }
    } else if r.sealed && m.thinking.is_none() {
        m.thinking = Some(model::SEALED_THINKING.to_string());
    }
    m.tool_calls.extend(r.tool_uses.iter().cloned());
    // Every line repeats the reply's usage; the last line has the final counts.
    if r.usage.is_some() {
        m.token_usage = r.usage;
    }
    if m.model.is_none() {
        m.model = r.model.clone();
    }
}

fn user_messages(r: &Rec, ctx: &Ctx, out: &mut Vec<Message>, warnings: &mut Vec<String>) {
    for res in &r.results {
        let mut output = res.output.clone();
        if let Some(spilled) = read_spill(ctx, &res.id, r.persisted.as_deref(), warnings) {
            output = spilled;
        } else if r.persisted.is_some() || res.output.contains("<persisted-output>") {
            // Claude Code kept only a preview here and the full output in a file that is
            // gone: say so where the output is read, and in meta.json.
            let file = r
                .persisted
                .as_deref()
                .and_then(|p| Path::new(p).file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| format!("{}.txt", res.id));
            warnings.push(format!(
                "spilled output of tool call {} is missing: tool-results/{file} not found; only the preview is shown",
                res.id
            ));
            output.push_str(&format!(
                "\n\n[sessfs: the full output was saved to tool-results/{file}, which is missing; only the preview above was recorded]"
            ));
        }
        let tool_name = ctx
            .tool_names
            .get(res.id.as_str())
            .map(|s| s.to_string())
            .unwrap_or_else(|| "unknown".to_string());
        out.push(Message {
            role: Role::Tool,
            // The text lives once, in the result (`Message::text` returns it).
            content: String::new(),
            timestamp: r.timestamp,
            tool_result: Some(ToolResult {
                tool_call_id: res.id.clone(),
                tool_name,
                output,
                is_error: res.is_error,
            }),
            native_id: r.uuid.clone(),
            ..Message::default()
        });
    }
    if r.text.trim().is_empty() {
        return;
    }
    let context = |label: &str, content: String| Message {
        role: Role::System,
        kind: MessageKind::Context,
        label: Some(label.to_string()),
        content,
        timestamp: r.timestamp,
        native_id: r.uuid.clone(),
        ..Message::default()
    };
    // `isMeta`: text Claude Code wrote for the model (hook feedback, reminders, skill
    // bodies, the expansion of the slash command just before it). Context, shown collapsed.
    if r.meta || text::is_command_caveat(&r.text) {
        // The command's note (its status line) may stand between the two.
        let after_command = out
            .iter()
            .rev()
            .find(|m| m.label.as_deref() != Some(COMMAND_NOTE))
            .is_some_and(|m| {
                m.role == Role::User
                    && matches!(m.kind, MessageKind::Normal | MessageKind::Event)
                    && m.content.starts_with('/')
            });
        let label = text::context_label(&r.text, after_command);
        let content = match text::clean_command_text(&r.text) {
            Some(c) if c.special == Special::Notification => c.text,
            _ => r.text.clone(),
        };
        out.push(context(label, content));
        return;
    }
    let mut note = None;
    let (role, kind, content) = if r.compact_summary {
        (Role::User, MessageKind::CompactionSummary, r.text.clone())
    } else if let Some(mut c) = text::clean_command_text(&r.text) {
        note = c.note.take();
        match c.special {
            Special::SlashCommand if text::is_local_command(&c.text) => {
                (Role::User, MessageKind::Event, c.text)
            }
            // `/init`, `/review the parser`, a custom command: what the user asked for.
            Special::SlashCommand => (Role::User, MessageKind::Normal, c.text),
            Special::Notification => {
                out.push(context("task notification", c.text));
                return;
            }
            // `/clear` and friends print nothing; an empty output block says nothing.
            Special::CommandOutput if c.text.is_empty() => return,
            Special::CommandOutput => (Role::System, MessageKind::Event, c.text),
            Special::ShellInput | Special::ShellOutput => {
                shell_message(r, c, out);
                return;
            }
        }
    } else if text::is_interruption(&r.text) {
        (Role::User, MessageKind::Event, r.text.trim().to_string())
    } else {
        // Blocks Claude Code put inside the prompt become context just before it.
        let (blocks, typed) = text::split_injected(&r.text);
        for (label, block) in blocks {
            out.push(context(label, block));
        }
        if typed.is_empty() {
            return;
        }
        (Role::User, MessageKind::Normal, typed)
    };
    out.push(Message {
        role,
        kind,
        content,
        timestamp: r.timestamp,
        native_id: r.uuid.clone(),
        ..Message::default()
    });
    // What the command's wrapper said besides the command ("init is analyzing your
    // codebase…"): an event right after it.
    if let Some(note) = note {
        out.push(Message {
            role: Role::System,
            kind: MessageKind::Event,
            label: Some(COMMAND_NOTE.to_string()),
            content: note,
            timestamp: r.timestamp,
            native_id: r.uuid.clone(),
            ..Message::default()
        });
    }
}

/// The label of the event that shows a slash command's `<command-message>`.
const COMMAND_NOTE: &str = "command message";

/// A `!` shell command and its output, which Claude Code writes as two user records at once
/// (`<bash-input>`, then `<bash-stdout>`/`<bash-stderr>`): one execution message whose text
/// is the command and whose one call holds the output, the shape every store gives a
/// command the user ran. Output with no command before it stands alone as a system
/// execution.
fn shell_message(r: &Rec, c: text::Cleaned, out: &mut Vec<Message>) {
    if c.special == Special::ShellOutput {
        let pending = out
            .last_mut()
            .filter(|m| m.kind == MessageKind::Execution && m.role == Role::User)
            .and_then(|m| m.tool_calls.first_mut())
            .filter(|call| call.output.is_none());
        if let Some(call) = pending {
            call.output = Some(c.text);
            return;
        }
    }
    let (role, content, input, output) = match c.special {
        Special::ShellInput => (
            Role::User,
            c.text.clone(),
            serde_json::json!({ "command": c.text }),
            c.output,
        ),
        _ => (
            Role::System,
            String::new(),
            serde_json::Value::Null,
            Some(c.text),
        ),
    };
    out.push(Message {
        role,
        kind: MessageKind::Execution,
        content,
        timestamp: r.timestamp,
        tool_calls: vec![model::ToolCall {
            tool_name: "bash".into(),
            input,
            output,
            ..model::ToolCall::default()
        }],
        native_id: r.uuid.clone(),
        ..Message::default()
    });
}

/// The full output of a tool result Claude Code spilled to `tool-results/`.
fn read_spill(
    ctx: &Ctx,
    call_id: &str,
    persisted: Option<&str>,
    warnings: &mut Vec<String>,
) -> Option<String> {
    let dir = ctx.spill_dir.as_ref()?;
    let mut candidates = Vec::new();
    if !call_id.is_empty() && !call_id.contains(['/', '\\']) && call_id != ".." {
        candidates.push(dir.join(format!("{call_id}.txt")));
    }
    // The recorded path is absolute and goes stale when the store moves; only its file
    // name is trusted, and only inside this session's own directory.
    if let Some(name) = persisted.and_then(|p| Path::new(p).file_name()) {
        candidates.push(dir.join(name));
    }
    let path = candidates.into_iter().find(|p| p.is_file())?;
    let file = match crate::stores::kit::open_file(&path) {
        Ok(f) => f,
        Err(e) => {
            warnings.push(format!("cannot read {}: {e}", path.display()));
            return None;
        }
    };
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut buf = Vec::new();
    if let Err(e) = file.take(MAX_SPILL_BYTES).read_to_end(&mut buf) {
        warnings.push(format!("cannot read {}: {e}", path.display()));
        return None;
    }
    let mut s = String::from_utf8_lossy(&buf).into_owned();
    if total > MAX_SPILL_BYTES {
        s.push_str(&format!(
            "\n[output truncated: {} of {} shown]",
            model::human_bytes(MAX_SPILL_BYTES),
            model::human_bytes(total)
        ));
    }
    Some(s)
}

/// The `source.format` of an agent's sessions in this format.
pub(super) fn format_name(agent: Agent) -> &'static str {
    match agent {
        Agent::Kode => "kode-jsonl",
        Agent::Iflow => "iflow-jsonl",
        _ => "claude-jsonl",
    }
}

/// How to name and link a session built from a record set.
pub(super) struct Shape<'a> {
    /// Whose session this is: Claude Code, or an agent that writes its format (Kode,
    /// iFlow CLI).
    pub agent: Agent,
    pub id: String,
    pub paths: Vec<PathBuf>,
    pub spill_dir: Option<PathBuf>,
    pub parent: Option<String>,
    /// Record indices of this session (ascending).
    pub members: &'a [usize],
    /// Whether the file's own facts (titles, tags, fork link, read warnings) are this
    /// session's: false for a sidechain kept inside its parent's file.
    pub whole_file: bool,
}

/// One session from the records of one file.
pub(super) fn assemble(parsed: &Parsed, shape: Shape) -> Session {
    let recs = &parsed.recs;
    let meta = &parsed.meta;
    let own = FileMeta {
        cwd: meta.cwd.clone(),
        version: meta.version.clone(),
        first_ts: shape
            .members
            .iter()
            .filter_map(|&i| recs.get(i)?.timestamp)
            .min(),
        last_ts: shape
            .members
            .iter()
            .filter_map(|&i| recs.get(i)?.timestamp)
            .max(),
        ..FileMeta::default()
    };
    let meta = if shape.whole_file { meta } else { &own };
    let agent = shape.agent;
    let mut s = Session::new(agent, shape.id);
    s.parent = shape.parent;
    s.cwd = meta.cwd.clone();
    s.created_at = meta.first_ts;
    s.updated_at = meta.last_ts;
    s.source = model::Source {
        paths: shape.paths,
        format: format_name(agent).into(),
        format_version: meta.version.clone(),
    };
    if let Some(t) = meta.tag.as_ref().filter(|t| !t.is_empty()) {
        s.tags.push(t.clone());
    }
    if let Some(f) = meta.forked_from.as_ref().filter(|f| **f != s.id) {
        s.forked_from = Some(model::unified_id(agent, f));
    }
    let mut warnings = if shape.whole_file {
        parsed.warnings.clone()
    } else {
        Vec::new()
    };
    let ctx = Ctx::new(recs, shape.spill_dir);
    let graph = Graph::new(recs, shape.members);
    let plan = graph.plan();
    s.messages = build_messages(recs, &plan.active, &ctx, &mut warnings);
    for b in &plan.branches {
        let Some(leaf) = recs.get(b.leaf).and_then(|r| r.uuid.clone()) else {
            continue;
        };
        let messages = build_messages(recs, &b.order, &ctx, &mut warnings);
        if messages.is_empty() {
            continue;
        }
        let short: String = leaf
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .take(8)
            .collect();
        let mut taken: HashSet<String> = s.branches.iter().map(|x| x.name.clone()).collect();
        let name = crate::stores::kit::unique_name(&mut taken, &format!("branch-{short}"));
        s.branches.push(Branch {
            name,
            fork_point: b
                .fork
                .and_then(|f| recs.get(f))
                .and_then(|r| r.uuid.clone()),
            leaf: Some(leaf),
            messages,
        });
    }
    if plan.dropped_branches > 0 {
        warnings.push(format!(
            "{} more branches not shown (at most {MAX_BRANCHES} are)",
            plan.dropped_branches
        ));
    }
    let active_uuids: HashSet<&str> = plan
        .active
        .iter()
        .filter_map(|&i| recs.get(i).and_then(|r| r.uuid.as_deref()))
        .collect();
    s.title = meta
        .custom_title
        .clone()
        .or_else(|| meta.ai_title.clone())
        .or_else(|| {
            // Old builds also copy summaries of *other* sessions into a file; a summary
            // counts only when its leaf is here (on the active path first) or unnamed.
            let here: HashSet<&str> = recs.iter().filter_map(|r| r.uuid.as_deref()).collect();
            let pick = |f: &dyn Fn(Option<&str>) -> bool| {
                meta.summaries
                    .iter()
                    .rev()
                    .find(|(leaf, _)| f(leaf.as_deref()))
                    .map(|(_, t)| t.clone())
            };
            pick(&|l| l.is_some_and(|l| active_uuids.contains(l)))
                .or_else(|| pick(&|l| l.is_some_and(|l| here.contains(l))))
                .or_else(|| pick(&|l| l.is_none()))
        })
        .or_else(|| {
            // A slash command with arguments ("/review the auth module") is a prompt too.
            s.messages
                .iter()
                .filter(|m| m.role == Role::User)
                .find_map(|m| match m.kind {
                    MessageKind::Normal => text::title_from_prompt(&m.content),
                    MessageKind::Event if m.content.starts_with('/') && m.content.contains(' ') => {
                        Some(m.content.chars().take(100).collect())
                    }
                    _ => None,
                })
        });
    if shape.whole_file {
        if let Some(file) = jsonl::unparsed_file(&parsed.unparsed) {
            warnings.push(jsonl::unparsed_warning(parsed.unparsed.len()));
            s.extra_files.push(file);
        }
    }
    s.warnings = warnings;
    s
}

/// The inline sidechains of an old (2.0-era) main file, grouped by their root record.
pub(super) fn sidechain_groups(recs: &[Rec]) -> Vec<Vec<usize>> {
    let side: Vec<usize> = (0..recs.len()).filter(|&i| recs[i].sidechain).collect();
    let by_uuid: HashMap<&str, usize> = side
        .iter()
        .filter_map(|&i| recs[i].uuid.as_deref().map(|u| (u, i)))
        .collect();
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for &i in &side {
        let mut root = i;
        let mut seen = HashSet::new();
        while seen.insert(root) {
            match recs[root]
                .parent
                .as_deref()
                .and_then(|p| by_uuid.get(p).copied())
            {
                Some(p) => root = p,
                None => break,
            }
        }
        match groups.iter_mut().find(|(r, _)| *r == root) {
            Some((_, g)) => g.push(i),
            None => groups.push((root, vec![i])),
        }
    }
    groups
        .into_iter()
        .map(|(_, mut g)| {
            g.sort_unstable();
            g
        })
        .collect()
}

/// Subagents kept inline in the main file (`isSidechain: true` records).
pub(super) fn inline_subagents(
    owner: Agent,
    parsed: &Parsed,
    parent_id: &str,
    known: &[String],
) -> Vec<Subagent> {
    let recs = &parsed.recs;
    let mut out = Vec::new();
    for group in sidechain_groups(recs) {
        let Some(&first) = group.first() else {
            continue;
        };
        let root = &recs[first];
        let agent = group
            .iter()
            .find_map(|&i| recs[i].agent_id.clone())
            .or_else(|| {
                root.uuid.as_ref().map(|u| {
                    u.chars()
                        .filter(|c| c.is_ascii_alphanumeric())
                        .take(8)
                        .collect()
                })
            })
            .unwrap_or_else(|| format!("sidechain{}", out.len() + 1));
        let name = format!("agent-{agent}");
        if known.contains(&name) || out.iter().any(|s: &Subagent| s.name == name) {
            continue;
        }
        // The Task call whose prompt is the sidechain's first prompt spawned it.
        let prompt = root.text.trim();
        let call = recs
            .iter()
            .filter(|r| !r.sidechain)
            .flat_map(|r| r.tool_uses.iter())
            .find(|t| {
                !prompt.is_empty()
                    && t.input
                        .get("prompt")
                        .and_then(|p| p.as_str())
                        .map(str::trim)
                        == Some(prompt)
            });
        let description = call
            .and_then(|t| t.input.get("description"))
            .and_then(|d| d.as_str())
            .map(str::to_string);
        let child = assemble(
            parsed,
            Shape {
                agent: owner,
                id: format!("{parent_id}/{name}"),
                paths: Vec::new(),
                spill_dir: None,
                parent: Some(model::unified_id(owner, parent_id)),
                members: &group,
                whole_file: false,
            },
        );
        let mut child = child;
        child.title = description.clone().or(child.title);
        out.push(Subagent {
            name,
            unified_id: None,
            description,
            tool_call_id: call.map(|t| t.tool_call_id.clone()),
            session: Some(Box::new(child)),
        });
    }
    out
}
