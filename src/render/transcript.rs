//! `transcript.md`: the conversation for humans, as Markdown that reads well on GitHub and in
//! Obsidian and greps well in a terminal.
//!
//! Decisions and why:
//! - Prefix-stable: message *i* renders from messages `0..=i` only. The header holds only
//!   what is fixed at session start (no updated time, no cost), tool results render where
//!   the result message is, and the cost summary is a running total after each assistant
//!   message instead of a footer. Appending to the native store then only appends bytes.
//! - Greppable: message text is kept line for line; only `<` and `&` are escaped and
//!   a heading inside a message gains three `#` so it nests under the message's own `###`
//!   heading (see `text::markdown_text_into`), so `grep -F` of any line without those characters
//!   finds it (a heading line's text still matches).
//! - Bounded: a tool result shows a preview here and the full output in `tools/`.
//! - Linked: a tool call that spawned a subagent is followed by a `**Subagent:**` line
//!   linking to `subagents/<name>/transcript.md`, so a reader can step into the child
//!   where it starts.

use super::text::{
    cell, cell_into, code_span, code_span_into, escape_html, fence_into, human_time,
    human_time_into, markdown_text_into, thousands_into, usd_into,
};
use super::tools::{self, ToolIndex};
use crate::model::{Message, MessageKind, Role, Session, ToolCall, SEALED_THINKING};
use std::collections::HashMap;
use std::fmt::Write as _;

/// Subagents by the id of the tool call that spawned them: `(entry name, description)`.
type Spawned<'a> = HashMap<&'a str, Vec<(String, Option<&'a str>)>>;

/// A result preview stops after this many lines or characters, whichever comes first.
const PREVIEW_LINES: usize = 20;
const PREVIEW_CHARS: usize = 1500;

pub fn render(s: &Session) -> String {
    let (mut out, blocks) = blocks(s);
    for b in blocks {
        out.push_str(&b);
    }
    out
}

/// [`render`] written to `w` one message at a time, so a long transcript is never whole in
/// memory.
pub fn write(s: &Session, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    w.write_all(header(s).as_bytes())?;
    let mut block = String::new();
    let mut result = Ok(());
    each_block(s, &mut block, |b| {
        if result.is_ok() {
            result = w.write_all(b.as_bytes());
        }
    });
    result
}

/// The transcript cut where it is built: the header, then one block per message (each
/// starting with the blank line before its heading). Concatenated they are [`render`]'s
/// output; the text diff aligns them message by message.
pub(crate) fn blocks(s: &Session) -> (String, Vec<String>) {
    let mut blocks = Vec::with_capacity(s.messages.len());
    each_block(s, &mut String::new(), |b| blocks.push(b.to_string()));
    (header(s), blocks)
}

/// Render each message's block into `buf` (cleared first) and hand it to `f`.
fn each_block(s: &Session, buf: &mut String, mut f: impl FnMut(&str)) {
    let idx = tools::index(&s.messages);
    let spawned = spawned(s);
    let mut totals = Totals::default();
    // Calls are numbered in message order, so the next call's entry is the next in `idx`.
    let mut next_call = 0;
    for m in &s.messages {
        buf.clear();
        buf.push('\n');
        render_message(buf, m, &idx, &spawned, &mut next_call, &mut totals);
        f(buf);
    }
}

/// The subagents that have an entry under `subagents/` and a known spawning call.
fn spawned(s: &Session) -> Spawned<'_> {
    let mut out: Spawned<'_> = HashMap::new();
    for (sub, name) in s.subagents.iter().zip(super::subagent_names(s)) {
        let Some(call) = sub.tool_call_id.as_deref().filter(|c| !c.is_empty()) else {
            continue;
        };
        if sub.unified_id.is_none() && sub.session.is_none() {
            continue;
        }
        out.entry(call)
            .or_default()
            .push((name, sub.description.as_deref()));
    }
    out
}

fn header(s: &Session) -> String {
    let title = match &s.title {
        Some(t) if !t.trim().is_empty() => t.clone(),
        _ => format!("{} session {}", s.agent.name(), s.id),
    };
    // The first assistant model, not the primary one: the primary can change as messages
    // are appended, the first cannot once it is known.
    let model = s
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .find_map(|m| m.model.as_deref())
        .map(cell)
        .unwrap_or_else(|| "unknown".into());
    let started = s
        .created_at
        .as_ref()
        .map(human_time)
        .unwrap_or_else(|| "unknown".into());
    let cwd = s
        .cwd
        .as_deref()
        .map(cell)
        .unwrap_or_else(|| "unknown".into());
    format!(
        "# {}\n\n| Agent | {} |\n|---|---|\n| Session | {} |\n| Model | {model} |\n\
         | Started | {started} |\n| CWD | {cwd} |\n",
        cell(&title),
        s.agent.name(),
        code_span(&s.unified_id()),
    )
}

fn heading(out: &mut String, m: &Message) {
    out.push_str("### ");
    out.push_str(match m.role {
        Role::User => "User",
        Role::Assistant => "Assistant",
        Role::System => "System",
        Role::Tool => "Tool",
    });
    if let Some(t) = &m.timestamp {
        out.push_str(" · ");
        human_time_into(out, t);
    }
    if m.role == Role::Assistant {
        if let Some(model) = &m.model {
            out.push_str(" · ");
            cell_into(out, model);
        }
    }
    let marker = match m.kind {
        MessageKind::Normal => None,
        MessageKind::CompactionSummary => Some("compaction summary"),
        MessageKind::BranchSummary => Some("branch summary"),
        MessageKind::Execution => Some("execution"),
        MessageKind::Event => Some("event"),
        MessageKind::Context => Some("context"),
    };
    if let Some(marker) = marker {
        out.push_str(" · ");
        out.push_str(marker);
    }
    out.push('\n');
}

fn render_message(
    out: &mut String,
    m: &Message,
    idx: &ToolIndex<'_>,
    spawned: &Spawned<'_>,
    next_call: &mut usize,
    t: &mut Totals,
) {
    heading(out, m);
    match m.thinking.as_deref() {
        // In italics, so it reads as a note about the message rather than its text.
        Some(th) if th == SEALED_THINKING => {
            out.push_str("\n*");
            out.push_str(th);
            out.push_str("*\n");
        }
        Some(th) if !th.trim().is_empty() => {
            out.push_str("\n<details><summary>Thinking</summary>\n\n");
            markdown_text_into(out, th);
            out.push_str("\n</details>\n");
        }
        _ => {}
    }

    let result = m.tool_result.as_ref();
    // A result message whose text is its output shows it once, in the preview.
    let content_is_output = result.is_some_and(|r| r.output.trim() == m.content.trim());
    if !m.content.trim().is_empty() && !content_is_output {
        out.push('\n');
        if m.kind == MessageKind::Execution {
            out.push_str("**Command:**\n\n");
            fence_into(out, &m.content, "");
        } else if m.kind == MessageKind::Context {
            // Collapsed: the model saw it, a reader wants it out of the way but greppable.
            out.push_str("<details><summary>");
            out.push_str(&cell(m.label.as_deref().unwrap_or("injected context")));
            out.push_str("</summary>\n\n");
            markdown_text_into(out, &m.content);
            out.push_str("\n</details>\n");
        } else {
            markdown_text_into(out, &m.content);
        }
    }

    for call in &m.tool_calls {
        let file = idx.calls.get(*next_call).map(|c| c.file.as_str());
        *next_call += 1;
        render_call(out, m, call, file);
        for (name, description) in spawned
            .get(call.tool_call_id.as_str())
            .into_iter()
            .flatten()
        {
            subagent_line(out, name, *description);
        }
    }

    if let Some(r) = result {
        let file = idx.file_for(&r.tool_call_id);
        let name = if r.tool_name.is_empty() {
            idx.get(&r.tool_call_id)
                .map(|c| c.call.tool_name.as_str())
                .unwrap_or("")
        } else {
            &r.tool_name
        };
        out.push_str("\n**Result:** ");
        tool_label(out, name);
        out.push_str(if r.is_error { " · error" } else { " · ok" });
        link(out, file);
        out.push('\n');
        preview(out, &r.output, file);
    }

    t.add(m);
    if m.role == Role::Assistant {
        t.line(out, m);
    }
}

fn tool_label(out: &mut String, name: &str) {
    if name.is_empty() {
        out.push_str("*unnamed tool*");
    } else {
        code_span_into(out, name);
    }
}

fn link(out: &mut String, file: Option<&str>) {
    if let Some(f) = file {
        let _ = write!(out, " · [tools/{f}](tools/{f})");
    }
}

/// `**Subagent:** [subagents/<name>/](subagents/<name>/transcript.md) · <description>`
fn subagent_line(out: &mut String, name: &str, description: Option<&str>) {
    // Entry names are already escaped for the filesystem; in the link target, characters
    // a Markdown viewer would decode or stop at are percent-encoded as well.
    let mut target = String::with_capacity(name.len());
    for ch in name.chars() {
        match ch {
            '%' | ' ' | '(' | ')' | '<' | '>' => {
                let _ = write!(target, "%{:02X}", ch as u32);
            }
            _ => target.push(ch),
        }
    }
    out.push('\n');
    let _ = write!(
        out,
        "**Subagent:** [subagents/{}/](subagents/{target}/transcript.md)",
        escape_html(name)
    );
    if let Some(d) = description.map(str::trim).filter(|d| !d.is_empty()) {
        out.push_str(" · ");
        out.push_str(&cell(&d.chars().take(200).collect::<String>()));
    }
    out.push('\n');
}

fn render_call(out: &mut String, m: &Message, call: &ToolCall, file: Option<&str>) {
    // An execution's command is its content; the call only carries the output.
    if m.kind != MessageKind::Execution {
        out.push_str("\n**Tool call:** ");
        tool_label(out, &call.tool_name);
        link(out, file);
        out.push_str("\n\n");
        tools::input_markdown_into(out, call);
    }
    if let Some(output) = &call.output {
        let status = if call.is_error == Some(true) {
            " error"
        } else {
            " ok"
        };
        if m.kind == MessageKind::Execution {
            out.push_str("\n**Output:**");
        } else {
            out.push_str("\n**Result:** ");
            tool_label(out, &call.tool_name);
            out.push_str(" ·");
        }
        out.push_str(status);
        link(out, file);
        out.push('\n');
        preview(out, output, file);
    }
}

/// The first lines of a tool output in a fence, pointing to the full file when cut. An
/// output with no tool file (a result whose call is unknown) is shown whole.
fn preview(out: &mut String, output: &str, file: Option<&str>) {
    out.push('\n');
    if output.trim().is_empty() {
        out.push_str("*Empty output.*\n");
        return;
    }
    let Some(file) = file else {
        fence_into(out, output, "");
        return;
    };
    let mut end = 0;
    // Each line with its newline (`str::split_inclusive`), found with `memchr`.
    let ends = memchr::memchr_iter(b'\n', output.as_bytes())
        .map(|i| i + 1)
        .chain(std::iter::once(output.len()));
    for (n, stop) in ends.enumerate() {
        if n == PREVIEW_LINES || end == output.len() {
            break;
        }
        if stop > PREVIEW_CHARS {
            // A huge line: show its start, cut at a character boundary, rather than stop
            // before it (a pretty-printed JSON output would preview as a lone `{`).
            end = PREVIEW_CHARS;
            while !output.is_char_boundary(end) {
                end -= 1;
            }
            break;
        }
        end = stop;
    }
    fence_into(out, &output[..end], "");
    let rest = &output[end..];
    if !rest.is_empty() {
        // As `str::lines` counts them (a last line without its newline counts too), with
        // a byte count the compiler vectorises: outputs can be megabytes.
        let newlines = rest.bytes().filter(|&b| b == b'\n').count();
        let more = (newlines + usize::from(!rest.ends_with('\n'))).max(1);
        let _ = writeln!(
            out,
            "… ({more} more line{} in tools/{file})",
            if more == 1 { "" } else { "s" }
        );
    }
}

/// Tokens and cost so far, for the running total after each assistant message. Costs are
/// counted as [`Session::cost`] counts them for `meta.json` (reported, else estimated from
/// the price table and shown with `~`; messages inherited from a fork's parent not at all),
/// so the last running total is the session's cost.
#[derive(Default)]
struct Totals {
    input: u64,
    output: u64,
    cached: u64,
    cost: Option<f64>,
    estimated: bool,
}

/// The message's cost: reported, else estimated (`true`) from its model and usage.
fn message_cost(m: &Message) -> Option<(f64, bool)> {
    if let Some(c) = m.cost {
        return Some((c, false));
    }
    let u = m.token_usage.as_ref().filter(|u| !u.is_zero())?;
    let c = u.estimate_usd(m.model.as_deref()?)?;
    Some((c, true))
}

fn money(out: &mut String, (c, estimated): (f64, bool)) {
    if estimated {
        out.push('~');
    }
    usd_into(out, c);
}

impl Totals {
    fn add(&mut self, m: &Message) {
        if m.inherited {
            return;
        }
        if let Some(u) = &m.token_usage {
            self.input += u.input_tokens;
            self.output += u.output_tokens;
            self.cached += u.cached_tokens;
        }
        if let Some((c, estimated)) = message_cost(m) {
            self.cost = Some(self.cost.unwrap_or(0.0) + c);
            self.estimated |= estimated;
        }
    }

    /// `*Tokens: 1,234 in · 56 out · 7,890 cached · $0.0123 — session so far: ...*`, or
    /// nothing for a message that used no tokens and cost nothing (an aborted request),
    /// appended to `out`.
    fn line(&self, out: &mut String, m: &Message) {
        let usage = m.token_usage.as_ref().filter(|u| !u.is_zero());
        let cost = message_cost(m).filter(|(c, _)| *c != 0.0);
        if usage.is_none() && cost.is_none() {
            return;
        }
        out.push_str(if usage.is_some() {
            "\n*Tokens: "
        } else {
            "\n*Cost: "
        });
        if let Some(u) = usage {
            counts(out, u.input_tokens, u.output_tokens, u.cached_tokens);
        }
        if let Some(c) = cost {
            if usage.is_some() {
                out.push_str(" · ");
            }
            money(out, c);
        }
        out.push_str(" — session so far: ");
        counts(out, self.input, self.output, self.cached);
        if let Some(c) = self.cost {
            out.push_str(" · ");
            money(out, (c, self.estimated));
        }
        out.push_str("*\n");
    }
}

/// `1,234 in · 56 out · 7 cached` (no cached part when there are none).
fn counts(out: &mut String, input: u64, output: u64, cached: u64) {
    thousands_into(out, input);
    out.push_str(" in · ");
    thousands_into(out, output);
    out.push_str(" out");
    if cached > 0 {
        out.push_str(" · ");
        thousands_into(out, cached);
        out.push_str(" cached");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appending a message only appends bytes, from the first assistant model on (before it,
    /// the header's Model row still reads `unknown`).
    #[test]
    fn appending_a_message_only_appends() {
        let full = crate::render::golden::sample();
        for n in 2..full.messages.len() {
            let mut a = full.clone();
            a.messages.truncate(n);
            let mut b = full.clone();
            b.messages.truncate(n + 1);
            let (ra, rb) = (render(&a), render(&b));
            assert!(rb.starts_with(&ra), "not a prefix after message {n}");
            assert!(rb.len() > ra.len());
        }
    }

    #[test]
    fn long_output_is_previewed_with_a_pointer() {
        let t = render(&crate::render::golden::sample());
        assert!(t.contains("line 20 of parser.rs\n```"));
        assert!(!t.contains("line 21 of parser.rs"));
        assert!(t.contains("… (10 more lines in tools/0001-Read.md)"));
    }

    /// Claude messages carry tokens but no cost: the transcript showed no money at all while
    /// `meta.json` had an estimate, and an aborted pi request printed `Cost: $0.0000`.
    #[test]
    fn running_total_estimates_like_meta_and_skips_empty_messages() {
        let s = crate::render::golden::sample();
        let t = render(&s);
        let total = s.cost().total_usd;
        let last = t
            .lines()
            .rfind(|l| l.contains("session so far"))
            .expect("a running total");
        assert!(
            last.ends_with(&format!("· ~{}*", super::super::text::usd(total))),
            "{last}"
        );
        let aborted = Message {
            role: Role::Assistant,
            cost: Some(0.0),
            token_usage: Some(crate::model::TokenUsage::default()),
            ..Message::default()
        };
        let mut line = String::new();
        Totals::default().line(&mut line, &aborted);
        assert_eq!(line, "");
    }

    #[test]
    fn the_lines_left_out_of_a_preview_are_counted_as_a_reader_counts_them() {
        let numbered =
            |n: usize, end: &str| -> String { (1..=n).map(|i| format!("line {i}{end}")).collect() };
        let cases = [
            // (output, lines left after the 20 shown)
            (numbered(25, "\n"), 5),
            (numbered(25, "\n").trim_end().to_string(), 5),
            (numbered(22, "\r\n"), 2),
            (numbered(20, "\n") + "\n", 1),
            (numbered(20, "\n") + "tail", 1),
        ];
        for (output, more) in cases {
            let mut out = String::new();
            preview(&mut out, &output, Some("0001-x.md"));
            let s = if more == 1 { "" } else { "s" };
            let want = format!("… ({more} more line{s} in tools/0001-x.md)\n");
            assert!(out.ends_with(&want), "{output:?} -> {out}");
        }
    }

    /// An output whose second line was huge previewed as its first line alone (`{`).
    #[test]
    fn preview_cuts_a_huge_line_instead_of_stopping_before_it() {
        let output = format!("{{\n  \"data\": \"{}\"\n}}\n", "x".repeat(5000));
        let mut out = String::new();
        preview(&mut out, &output, Some("0001-read.md"));
        assert!(out.starts_with("\n```\n{\n  \"data\": \"xxx"), "{out}");
        assert!(out.len() > PREVIEW_CHARS);
        assert!(
            out.ends_with("… (2 more lines in tools/0001-read.md)\n"),
            "{out}"
        );
    }

    /// The sealed-reasoning placeholder read like the first line of the reply.
    #[test]
    fn sealed_thinking_is_a_note_not_reply_text() {
        let t = render(&crate::render::golden::sample());
        assert!(t.contains(&format!("\n*{SEALED_THINKING}*\n\nHere is the fix:")));
    }

    #[test]
    fn a_spawned_subagent_is_named_under_its_call_only_when_it_has_an_entry() {
        use crate::model::{Agent, Subagent};
        let mut s = Session::new(Agent::Claude, "p");
        s.messages.push(Message {
            role: Role::Assistant,
            tool_calls: vec![ToolCall {
                tool_call_id: "t1".into(),
                tool_name: "Task".into(),
                ..Default::default()
            }],
            ..Default::default()
        });
        let sub = |name: &str, uid: Option<&str>| Subagent {
            name: name.into(),
            unified_id: uid.map(str::to_string),
            tool_call_id: Some("t1".into()),
            ..Default::default()
        };
        s.subagents = vec![
            sub("my agent", Some("claude:c")),
            sub("gone", None),
            sub("my agent", Some("claude:d")),
        ];
        let t = render(&s);
        assert!(
            t.contains("**Subagent:** [subagents/my agent/](subagents/my%20agent/transcript.md)\n")
        );
        assert!(t.contains("(subagents/my%20agent~2/transcript.md)"));
        assert!(!t.contains("gone"), "no entry under subagents/, no link");
    }

    #[test]
    fn untitled_session_is_named_after_agent_and_id() {
        let s = Session::new(crate::model::Agent::Pi, "abc");
        assert!(render(&s).starts_with("# pi session abc\n"));
    }
}
