//! `tools/NNNN-<tool>.md`: one file per tool call with its full input and output.
//!
//! The transcript shows only a preview of each result so it stays readable; the full text
//! lives here, one file per call, numbered in call order over the active branch so that
//! `ls tools/` reads like the session's tool log. The numbering is computed only by
//! [`index`], which the transcript uses for its links, so the two can never disagree.
//!
//! Unlike `transcript.md`, a tool file may change after it first appears: its output section
//! fills in when the result message arrives.

use super::text::{code_span, fence, human_time};
use crate::model::{Message, Session, ToolCall, ToolResult};
use std::collections::HashMap;

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
    let time = s
        .messages
        .get(c.message)
        .and_then(|m| m.timestamp.as_ref())
        .map(human_time)
        .unwrap_or_else(|| "unknown".to_string());

    let id = if call.tool_call_id.is_empty() {
        "none".to_string()
    } else {
        code_span(&call.tool_call_id)
    };
    let mut out = format!(
        "# {} (call {:04})\n\n| Call id | {id} |\n|---|---|\n",
        super::text::cell(&call.tool_name),
        c.number
    );
    out.push_str(&format!("| Time | {time} |\n"));
    out.push_str(&format!("| Status | {status} |\n"));
    if let Some(ms) = call.duration_ms {
        out.push_str(&format!(
            "| Duration | {} ms |\n",
            super::text::thousands(ms)
        ));
    }
    out.push_str("\n## Input\n\n");
    out.push_str(&super::input_block(&call.input));
    out.push_str("\n## Output\n\n");
    match output {
        Some(o) => out.push_str(&fence(o, "")),
        None => out.push_str("*No result recorded.*\n"),
    }
    out
}
