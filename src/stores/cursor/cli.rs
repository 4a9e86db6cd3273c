//! The cursor-agent CLI's per-chat `store.db`: the meta row, the root blob's message order,
//! and the AI-SDK-like JSON message blobs it names.
//!
//! Owns the one read transaction per chat (rows copied out, parsed after) and turning
//! message blobs into messages. The root blob's bytes are decoded by [`super::decode`].

use super::decode::{decode_root, unhex};
use super::{
    odd, output_text, parts_text, split_user_query, time_value, CursorStore, DEFAULT_NAMES,
    MAX_MESSAGES,
};
use crate::model::{Agent, Message, Role, Session, Source, ToolCall};
use crate::stores::kit::{self, SessionBuilder};
use crate::stores::sqlite::{self, Cell, Rows, Table};
use crate::stores::Listed;
use chrono::{DateTime, Utc};
use rusqlite::types::ValueRef;
use rusqlite::Connection;
use serde_json::Value;
use std::path::Path;

/// Rows of one `store.db`, copied out.
#[derive(Default)]
struct CliRaw {
    meta: Value,
    /// `(blob id, data)` in conversation order.
    messages: Vec<(String, Vec<u8>)>,
    workspace: Option<String>,
    warnings: Vec<String>,
}

fn blob_bytes(v: ValueRef<'_>) -> Option<Vec<u8>> {
    match v {
        ValueRef::Blob(b) | ValueRef::Text(b) => Some(b.to_vec()),
        _ => None,
    }
}

/// The meta object: key `"0"` hex-encoded JSON (what cursor-agent writes), or plain JSON, or
/// else the rows themselves as a key/value map (older builds).
fn meta_object(rows: &Rows) -> Value {
    let mut map = serde_json::Map::new();
    for r in rows.iter() {
        let (Some(k), Some(v)) = (r.get("key").text(), r.get("value").text()) else {
            continue;
        };
        let decoded = unhex(&v)
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .or_else(|| serde_json::from_str::<Value>(&v).ok())
            .filter(Value::is_object);
        match decoded {
            Some(Value::Object(o)) if k == "0" => map.extend(o),
            _ => {
                map.entry(k).or_insert(Value::String(v));
            }
        }
    }
    Value::Object(map)
}

fn read_cli(c: &Connection) -> rusqlite::Result<CliRaw> {
    let mut raw = CliRaw::default();
    let meta_t = Table::probe(c, "meta")?;
    let meta = Rows::fetch(c, &meta_t, &["key", "value"], "", [])?;
    raw.meta = meta_object(&meta);
    if !Table::probe(c, "blobs")?.has("data") {
        raw.warnings
            .push("no `blobs` table: not a cursor-agent store".into());
        return Ok(raw);
    }
    let mut get = c.prepare("SELECT data FROM blobs WHERE id = ?1")?;
    let mut blob = |id: &str| -> rusqlite::Result<Option<Vec<u8>>> {
        let mut rows = get.query([id])?;
        Ok(match rows.next()? {
            Some(r) => blob_bytes(r.get_ref(0)?),
            None => None,
        })
    };
    let root_id = kit::str_field(&raw.meta, "latestRootBlobId").map(str::to_string);
    let root = match &root_id {
        Some(id) => match blob(id)? {
            Some(b) => decode_root(&b).map_err(|e| format!("root blob {id}: {e}")),
            None => Err(format!("root blob {id} is missing")),
        },
        None => Err("the meta row names no root blob".into()),
    };
    match root {
        Ok(root) => {
            raw.workspace = root.workspace;
            let mut missing = 0usize;
            for id in root.messages.into_iter().take(MAX_MESSAGES) {
                match blob(&id)? {
                    Some(b) => raw.messages.push((id, b)),
                    None => missing += 1,
                }
            }
            if missing > 0 {
                raw.warnings.push(format!(
                    "{missing} message blobs named by the root are missing"
                ));
            }
        }
        Err(e) => {
            raw.warnings.push(format!(
                "{e}; the JSON blobs are shown in storage order instead"
            ));
            let mut stmt = c.prepare("SELECT id, data FROM blobs ORDER BY rowid LIMIT ?1")?;
            let mut rows = stmt.query([MAX_MESSAGES as i64])?;
            while let Some(r) = rows.next()? {
                let id = Cell::of(r.get_ref(0)?).text().unwrap_or_default();
                if let Some(b) = blob_bytes(r.get_ref(1)?) {
                    // Only JSON messages: the protobuf roots start with a field tag.
                    if b.first() == Some(&b'{') {
                        raw.messages.push((id, b));
                    }
                }
            }
        }
    }
    Ok(raw)
}

impl CursorStore {
    pub(super) fn load_cli(&self, listed: &Listed) -> Session {
        let db = &listed.path;
        let mut b = SessionBuilder::new(Agent::Cursor, listed.id.clone());
        b.s.source = Source {
            paths: vec![db.clone()],
            format: "cursor-agent-store".into(),
            format_version: None,
        };
        let raw = match self.reader.read(db, sqlite::Access::InPlace, |c| {
            sqlite::snapshot(c, read_cli)
        }) {
            Ok((raw, note)) => {
                if let Some(n) = note {
                    b.warn(n);
                }
                raw
            }
            Err(e) => {
                b.warn(format!("cannot read {}: {e}", db.display()));
                return b.finish();
            }
        };
        for w in &raw.warnings {
            b.warn(w.clone());
        }
        let meta = &raw.meta;
        b.s.title = kit::str_field(meta, "name")
            .map(str::trim)
            .filter(|n| !n.is_empty() && !DEFAULT_NAMES.contains(n))
            .map(str::to_string);
        b.s.created_at = meta.get("createdAt").and_then(time_value);
        b.s.cwd = raw.workspace.clone();
        if let Some(mode) = kit::str_field(meta, "mode").filter(|m| !m.is_empty()) {
            b.s.tags.push(format!("mode:{mode}"));
        }
        let model = kit::str_field(meta, "lastUsedModel").map(str::to_string);
        for (id, data) in &raw.messages {
            match serde_json::from_slice::<Value>(data) {
                Ok(v) => ai_sdk_message(&mut b, &v, id, model.as_deref()),
                Err(e) => b.unparsed(
                    "message blobs",
                    "invalid JSON",
                    || format!("blob {id}: {e}"),
                    "message blob",
                    &String::from_utf8_lossy(data),
                    None,
                ),
            }
        }
        // No per-message times: the session was last updated when its files were.
        let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        b.s.updated_at = [mtime(db), mtime(&sqlite::companion(db, "-wal"))]
            .into_iter()
            .flatten()
            .max()
            .map(DateTime::<Utc>::from);
        b.finish()
    }
}

/// The parts of AI-SDK `content` that none of `known` types name (text parts may have no
/// type): what [`parts_text`] and its callers would otherwise pass over.
fn other_parts<'v>(content: Option<&'v Value>, known: &[&str]) -> Vec<&'v Value> {
    match content {
        Some(Value::Array(a)) => a
            .iter()
            .filter(|p| match kit::str_field(p, "type") {
                Some(t) => !known.contains(&t),
                None => p.get("text").and_then(Value::as_str).is_none(),
            })
            .collect(),
        None | Some(Value::Null | Value::String(_)) => Vec::new(),
        Some(other) => vec![other],
    }
}

/// One cursor-agent message blob.
fn ai_sdk_message(b: &mut SessionBuilder, v: &Value, blob_id: &str, model: Option<&str>) {
    let content = v.get("content");
    let native = Some(
        v.get("id")
            .and_then(Value::as_str)
            .unwrap_or(blob_id)
            .to_string(),
    );
    match kit::str_field(v, "role") {
        Some("system") => b.context("system prompt", parts_text(content), None),
        Some("user") => {
            let (query, rest) = split_user_query(&parts_text(content));
            if !rest.is_empty() {
                b.context("user context", rest, None);
            }
            if !query.is_empty() {
                b.push(Message {
                    role: Role::User,
                    content: query,
                    native_id: native,
                    ..Message::default()
                });
            }
            images(b, content);
            for p in other_parts(content, &["text", "image", "file"]) {
                odd(
                    b,
                    "message parts",
                    "unknown type",
                    &format!("blob {blob_id}"),
                    p,
                );
            }
        }
        Some("assistant") => {
            let mut m = Message {
                role: Role::Assistant,
                native_id: native,
                model: model.map(str::to_string),
                ..Message::default()
            };
            let mut text = Vec::new();
            let mut thinking = Vec::new();
            let mut odd_parts: Vec<&Value> = Vec::new();
            match content {
                Some(Value::String(s)) => text.push(s.clone()),
                Some(Value::Array(parts)) => {
                    for p in parts {
                        match kit::str_field(p, "type") {
                            Some("text") => {
                                text.extend(kit::str_field(p, "text").map(String::from))
                            }
                            Some("reasoning") | Some("thinking") => thinking
                                .extend(kit::str_any(p, &["text", "thinking"]).map(String::from)),
                            Some("redacted-reasoning") => {
                                thinking.push(crate::model::SEALED_THINKING.to_string())
                            }
                            Some("tool-call") | Some("tool_use") | Some("tool-use") => {
                                m.tool_calls.push(ToolCall {
                                    tool_call_id: kit::str_any(p, &["toolCallId", "id"])
                                        .unwrap_or_default()
                                        .to_string(),
                                    tool_name: kit::str_any(p, &["toolName", "name"])
                                        .unwrap_or_default()
                                        .to_string(),
                                    input: p
                                        .get("args")
                                        .or_else(|| p.get("input"))
                                        .cloned()
                                        .unwrap_or(Value::Null),
                                    ..ToolCall::default()
                                })
                            }
                            _ => odd_parts.push(p),
                        }
                    }
                }
                None | Some(Value::Null) => {}
                Some(other) => odd_parts.push(other),
            }
            m.content = text.join("\n\n");
            if !thinking.is_empty() {
                m.thinking = Some(thinking.join("\n\n"));
            }
            b.push(m);
            for p in odd_parts {
                odd(
                    b,
                    "message parts",
                    "unknown type",
                    &format!("blob {blob_id}"),
                    p,
                );
            }
        }
        Some("tool") => {
            let parts: Vec<&Value> = match content {
                Some(Value::Array(a)) => a.iter().collect(),
                Some(o @ Value::Object(_)) => vec![o],
                None | Some(Value::Null) => Vec::new(),
                Some(other) => {
                    odd(
                        b,
                        "message parts",
                        "tool content is no list",
                        &format!("blob {blob_id}"),
                        other,
                    );
                    Vec::new()
                }
            };
            for p in parts {
                let (out, err) = output_text(p.get("result").or_else(|| p.get("output")));
                let err = err || p.get("isError").and_then(Value::as_bool) == Some(true);
                b.tool_result(
                    kit::str_field(p, "toolCallId").unwrap_or_default(),
                    kit::str_field(p, "toolName"),
                    out,
                    err,
                    None,
                );
            }
        }
        other => {
            let problem = format!("unknown role `{}`", other.unwrap_or(""));
            odd(b, "message blobs", &problem, &format!("blob {blob_id}"), v);
        }
    }
}

/// Placeholders for image parts of a user message, as one context note.
fn images(b: &mut SessionBuilder, content: Option<&Value>) {
    let Some(Value::Array(parts)) = content else {
        return;
    };
    for p in parts {
        if matches!(kit::str_field(p, "type"), Some("image") | Some("file")) {
            let mime = kit::str_any(p, &["mimeType", "mediaType"]);
            let data = kit::str_any(p, &["image", "data"]);
            let ph = match data {
                Some(d) if d.starts_with("data:") => kit::data_url_placeholder(d),
                d => kit::base64_placeholder("image", mime, d),
            };
            if let Some(last) = b.last_mut().filter(|m| m.role == Role::User) {
                last.content.push_str(&format!("\n\n{ph}"));
            }
        }
    }
}
