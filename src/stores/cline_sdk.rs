//! Cline's SDK-era sessions (the Cline CLI and the SDK the extension moves to): one
//! directory per session, `sessions/<id>/<id>.messages.json` beside its manifest
//! `<id>.json`, under Cline's data dir (`~/.cline/data`, `CLINE_DATA_DIR`,
//! `CLINE_SESSION_DATA_DIR`).
//!
//! Read from Cline's source, cline/cline `21cb8d2525bcedf1f4b6890b27a74a14fe7451e4`:
//! `sdk/packages/shared/src/storage/paths.ts` (`resolveSessionDataDir`),
//! `sdk/packages/core/src/services/session-artifacts.ts` (the two file names),
//! `sdk/packages/core/src/session/models/session-manifest.ts` (manifest: `started_at`,
//! `ended_at`, `model`, `cwd`, `metadata.title`, `metadata.fork.forkedFromSessionId`),
//! `sdk/packages/shared/src/llms/messages.ts` (`MessageWithMetadata`: `role`, `content` as a
//! string or blocks `text`, `thinking`, `redacted_thinking`, `tool_use`, `tool_result`,
//! `file`, `image`, `media`; `modelInfo.id`, `metrics`, `ts`).
//!
//! Why so: the manifest and messages are whole JSON files the SDK rewrites atomically, so
//! each is read in one read and parsed whole. The `sessions` table of `db/sessions.db`
//! repeats the manifest and is not opened. Usage and cost are each message's `metrics`,
//! counted once per message (one message is one API response).

use super::kit::{self, SessionBuilder};
use super::Listed;
use crate::model::{
    unified_id, Agent, Message, Role, Session, TokenUsage, ToolCall, SEALED_THINKING,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Larger files are not parsed (a whole file is held while parsing).
const MAX_JSON_BYTES: u64 = 256 << 20;
const SUFFIX: &str = ".messages.json";

/// Whether `listed` is an SDK session (its path is the messages file).
pub fn is_sdk(listed: &Listed) -> bool {
    kit::file_name(&listed.path).ends_with(SUFFIX)
}

/// SDK sessions under a data dir (`<root>/sessions/<id>/`) or a sessions dir given as the
/// root (`<root>/<id>/`): directory names only, nothing is parsed.
pub fn list(root: &Path, root_index: usize, out: &mut Vec<Listed>) {
    for container in [root.join("sessions"), root.to_path_buf()] {
        for dir in kit::subdirs(&container) {
            let id = kit::file_name(&dir).to_string();
            if id.is_empty() || id.starts_with('.') {
                continue;
            }
            let messages = dir.join(format!("{id}{SUFFIX}"));
            if !messages.is_file() {
                continue;
            }
            out.push(Listed {
                id: crate::names::os_id(dir.file_name().unwrap_or_default()),
                sources: vec![messages.clone(), manifest_path(&messages)],
                path: messages,
                key: None,
                root: root_index,
            });
        }
    }
}

/// The directories [`list`] reads under `root`: `root`, its `sessions/`, and every session
/// directory under either (a session shows when its messages file appears in it). The
/// messages and manifest files are the sessions' sources.
pub fn glance_dirs(root: &Path, out: &mut Vec<PathBuf>) {
    for container in [root.join("sessions"), root.to_path_buf()] {
        if container.is_dir() {
            out.extend(kit::subdirs(&container));
            out.push(container);
        }
    }
}

fn manifest_path(messages: &Path) -> PathBuf {
    let name = kit::file_name(messages);
    messages.with_file_name(format!(
        "{}.json",
        name.strip_suffix(SUFFIX).unwrap_or(name)
    ))
}

pub fn load(agent: Agent, listed: &Listed) -> Session {
    let mut b = SessionBuilder::new(agent, listed.id.clone());
    b.s.source.paths = vec![listed.path.clone()];
    b.s.source.format = "cline-sdk-messages-json".into();
    let manifest = manifest_path(&listed.path);
    match kit::read_json(&manifest, "manifest", MAX_JSON_BYTES) {
        Ok(m) => apply_manifest(&mut b, &m),
        Err(e) if manifest.exists() => b.warn(e),
        Err(_) => {}
    }
    match kit::read_json(&listed.path, "messages", MAX_JSON_BYTES) {
        Ok(v) => {
            if let Some(ver) = v.get("version") {
                b.s.source.format_version = Some(ver.to_string());
            }
            let msgs = match &v {
                Value::Array(a) => Some(a),
                _ => v.get("messages").and_then(Value::as_array),
            };
            for (i, m) in msgs.into_iter().flatten().enumerate() {
                message(&mut b, i, m);
            }
        }
        Err(e) => {
            // Shown as stored, so nothing in the file is lost.
            let raw = std::fs::metadata(&listed.path)
                .ok()
                .filter(|m| m.len() <= MAX_JSON_BYTES)
                .and_then(|_| kit::read_file(&listed.path).ok());
            match raw {
                Some(bytes) => b.unparsed(
                    "messages files",
                    "invalid JSON",
                    || e.clone(),
                    "messages file",
                    &String::from_utf8_lossy(&bytes),
                    None,
                ),
                None => b.warn(e),
            }
        }
    }
    b.finish()
}

fn apply_manifest(b: &mut SessionBuilder, m: &Value) {
    let s = &mut b.s;
    s.title = kit::str_at(m, &["metadata", "title"])
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(String::from);
    s.cwd = kit::str_any(m, &["cwd", "workspace_root"]).map(String::from);
    s.created_at = kit::str_field(m, "started_at").and_then(kit::parse_rfc3339);
    s.updated_at = kit::str_field(m, "ended_at").and_then(kit::parse_rfc3339);
    s.forked_from = kit::str_at(m, &["metadata", "fork", "forkedFromSessionId"])
        .map(|id| unified_id(s.agent, id));
}

fn message(b: &mut SessionBuilder, i: usize, m: &Value) {
    let ts = m.get("ts").and_then(super::parse_time);
    let role = match kit::str_field(m, "role") {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        _ => {
            b.unparsed(
                "messages",
                "unknown role",
                || format!("message {i}"),
                "message",
                &m.to_string(),
                ts,
            );
            return;
        }
    };
    let mut msg = Message {
        role,
        timestamp: ts,
        native_id: kit::str_field(m, "id").map(String::from),
        model: kit::str_at(m, &["modelInfo", "id"]).map(String::from),
        ..Message::default()
    };
    if let Some(t) = m.get("metrics").filter(|t| t.is_object()) {
        let u = TokenUsage {
            input_tokens: kit::u64_field(t, "inputTokens"),
            output_tokens: kit::u64_field(t, "outputTokens"),
            cached_tokens: kit::u64_field(t, "cacheReadTokens"),
            cache_write_tokens: kit::u64_field(t, "cacheWriteTokens"),
            ..TokenUsage::default()
        };
        if !u.is_zero() {
            msg.token_usage = Some(u);
        }
        msg.cost = t.get("cost").and_then(Value::as_f64);
    }
    let mut texts: Vec<String> = Vec::new();
    let mut thinking: Vec<String> = Vec::new();
    // Results and attached files follow the message they belong to.
    let mut after: Vec<&Value> = Vec::new();
    match m.get("content") {
        Some(Value::String(s)) => texts.push(s.clone()),
        Some(Value::Array(blocks)) => {
            for blk in blocks {
                match kit::str_field(blk, "type") {
                    Some("text") => texts.extend(kit::str_field(blk, "text").map(String::from)),
                    Some("thinking") => {
                        thinking.extend(kit::str_field(blk, "thinking").map(String::from))
                    }
                    Some("redacted_thinking") => thinking.push(SEALED_THINKING.into()),
                    Some("image") => texts.push(kit::base64_placeholder(
                        "image",
                        kit::str_field(blk, "mediaType"),
                        kit::str_field(blk, "data"),
                    )),
                    Some("tool_use") => msg.tool_calls.push(ToolCall {
                        tool_call_id: kit::str_field(blk, "id").unwrap_or_default().to_string(),
                        tool_name: kit::str_field(blk, "name").unwrap_or("tool").to_string(),
                        input: blk.get("input").cloned().unwrap_or(Value::Null),
                        is_error: None,
                        output: None,
                        duration_ms: None,
                    }),
                    // Results, attached files and blocks of other types.
                    _ => after.push(blk),
                }
            }
        }
        _ => {}
    }
    msg.content = texts.join("\n\n");
    if !thinking.is_empty() {
        msg.thinking = Some(thinking.join("\n\n"));
    }
    let empty = msg.content.is_empty()
        && msg.tool_calls.is_empty()
        && msg.thinking.is_none()
        && msg.token_usage.is_none();
    if !empty {
        b.push(msg);
    }
    for blk in after {
        match kit::str_field(blk, "type") {
            Some("tool_result") => {
                let id = kit::str_field(blk, "tool_use_id").unwrap_or_default();
                let output = result_text(blk.get("content"));
                let is_error = blk.get("is_error").and_then(Value::as_bool) == Some(true);
                b.tool_result(id, kit::str_field(blk, "name"), output, is_error, ts);
            }
            Some("file") => {
                let path = kit::str_field(blk, "path").unwrap_or_default();
                let content = kit::str_field(blk, "content").unwrap_or_default();
                b.context("file", format!("{path}\n\n{content}"), ts);
            }
            _ => b.unparsed(
                "content blocks",
                "unknown type",
                || format!("message {i}"),
                "content block",
                &blk.to_string(),
                ts,
            ),
        }
    }
}

/// A tool result's `content`: a string, or its text parts (images as placeholders, files
/// as their path and text).
fn result_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|p| match kit::str_field(p, "type") {
                Some("text") => kit::str_field(p, "text").unwrap_or_default().to_string(),
                Some("image") => kit::base64_placeholder(
                    "image",
                    kit::str_field(p, "mediaType"),
                    kit::str_field(p, "data"),
                ),
                Some("file") => format!(
                    "{}\n\n{}",
                    kit::str_field(p, "path").unwrap_or_default(),
                    kit::str_field(p, "content").unwrap_or_default()
                ),
                _ => p.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
        Some(Value::Null) | None => String::new(),
        Some(x) => x.to_string(),
    }
}
