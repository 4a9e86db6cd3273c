//! The Cursor IDE's global `state.vscdb`: composers (chats) and their bubbles, read from
//! `cursorDiskKV` by key range only.
//!
//! Owns listing composers, a composer's version, and turning its bubbles into messages in
//! the order its headers give. `ItemTable`, which holds the IDE's auth tokens, is never read.

use super::decode::uri_to_path;
use super::{output_text, time_value, CursorStore};
use crate::model::{Agent, Message, Role, Session, Source, TokenUsage, ToolCall};
use crate::stores::kit::{self, SessionBuilder};
use crate::stores::sqlite::{self, Rows, Table};
use crate::stores::Listed;
use rusqlite::Connection;
use serde_json::Value;
use std::collections::HashMap;

/// Composer ids with something in them, from the `composerData:` key range only.
pub(super) fn list_composers(c: &Connection) -> rusqlite::Result<Vec<String>> {
    let t = Table::probe(c, "cursorDiskKV")?;
    if !t.has("key") {
        return Ok(Vec::new());
    }
    let rows = Rows::query(
        c,
        "SELECT key, value FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;'",
        vec!["key".into(), "value".into()],
        [],
    )?;
    let mut any_bubble =
        c.prepare("SELECT 1 FROM cursorDiskKV WHERE key >= ?1 AND key < ?2 LIMIT 1")?;
    let mut out = Vec::new();
    for r in rows.iter() {
        let Some(id) = r
            .get("key")
            .str()
            .and_then(|k| k.strip_prefix("composerData:"))
            .filter(|id| !id.is_empty())
        else {
            continue;
        };
        #[derive(serde::Deserialize, Default)]
        #[serde(default, rename_all = "camelCase")]
        struct Head {
            full_conversation_headers_only: Option<Vec<serde::de::IgnoredAny>>,
            conversation: Option<Vec<serde::de::IgnoredAny>>,
        }
        // A row that is not JSON may hold anything: listed, so its text is shown.
        let head: Head = match r.get("value").str().map(serde_json::from_str::<Head>) {
            Some(Ok(h)) => h,
            Some(Err(_)) => {
                out.push(id.to_string());
                continue;
            }
            None => Head::default(),
        };
        let inline = head
            .full_conversation_headers_only
            .is_some_and(|h| !h.is_empty())
            || head.conversation.is_some_and(|h| !h.is_empty());
        let (lo, hi) = bubble_range(id);
        if inline || any_bubble.exists([&lo, &hi])? {
            out.push(id.to_string());
        }
    }
    Ok(out)
}

/// `['bubbleId:<id>:', 'bubbleId:<id>;')`: every bubble key of one composer.
fn bubble_range(id: &str) -> (String, String) {
    (format!("bubbleId:{id}:"), format!("bubbleId:{id};"))
}

/// The `composerData:<id>` row (its header and bubble order).
fn composer_row(c: &Connection, id: &str) -> rusqlite::Result<Rows> {
    Rows::query(
        c,
        "SELECT value FROM cursorDiskKV WHERE key = ?1",
        vec!["value".into()],
        [format!("composerData:{id}")],
    )
}

pub(super) fn composer_version(c: &Connection, id: &str) -> rusqlite::Result<u64> {
    let head = composer_row(c, id)?;
    let (lo, hi) = bubble_range(id);
    let bubbles = Rows::query(
        c,
        "SELECT count(*), max(key) FROM cursorDiskKV WHERE key >= ?1 AND key < ?2",
        vec![],
        [&lo, &hi],
    )?;
    Ok(sqlite::hash_version((head.rows, bubbles.rows)))
}

/// One composer as copied out: its `composerData` JSON and its bubbles. A workspace
/// database's inline composer is this with no bubbles ([`super::workspace`]).
pub(super) struct IdeRaw {
    pub(super) composer: Option<String>,
    /// `(bubble id, JSON)`.
    pub(super) bubbles: Vec<(String, String)>,
}

fn read_ide(c: &Connection, id: &str) -> rusqlite::Result<IdeRaw> {
    let head = composer_row(c, id)?;
    let (lo, hi) = bubble_range(id);
    let rows = Rows::query(
        c,
        "SELECT key, value FROM cursorDiskKV WHERE key >= ?1 AND key < ?2",
        vec!["key".into(), "value".into()],
        [&lo, &hi],
    )?;
    Ok(IdeRaw {
        composer: head.first().and_then(|r| r.get("value").text()),
        bubbles: rows
            .iter()
            .filter_map(|r| {
                let k = r.get("key").str()?.strip_prefix(lo.as_str())?.to_string();
                Some((k, r.get("value").text().unwrap_or_default()))
            })
            .collect(),
    })
}

impl CursorStore {
    pub(super) fn load_ide(&self, listed: &Listed) -> Session {
        let db = &listed.path;
        let id = listed.key.as_deref().unwrap_or(&listed.id);
        let source = || Source {
            paths: vec![db.clone()],
            format: "cursor-state-vscdb".into(),
            format_version: None,
        };
        sqlite::load_session(
            &self.reader,
            db,
            id,
            sqlite::Access::InPlace,
            |c| read_ide(c, id),
            |raw| {
                let mut b = SessionBuilder::new(Agent::Cursor, listed.id.clone());
                b.s.source = source();
                build_ide(b, &raw)
            },
            || {
                let mut s = Session::new(Agent::Cursor, &listed.id);
                s.source = source();
                s
            },
        )
    }
}

pub(super) fn build_ide(mut b: SessionBuilder, raw: &IdeRaw) -> Session {
    let composer: Value = match raw.composer.as_deref().map(serde_json::from_str::<Value>) {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            b.unparsed(
                "composerData rows",
                "invalid JSON",
                || e.to_string(),
                "composerData",
                raw.composer.as_deref().unwrap_or_default(),
                None,
            );
            Value::Null
        }
        None => {
            b.warn("composerData row not found (deleted while reading?)");
            Value::Null
        }
    };
    if let Some(v) = composer.get("_v") {
        b.s.source.format_version = Some(v.to_string());
    }
    b.s.title = kit::str_field(&composer, "name")
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string);
    b.s.created_at = composer.get("createdAt").and_then(time_value);
    b.s.updated_at = composer.get("lastUpdatedAt").and_then(time_value);
    let composer_model = kit::str_at(&composer, &["modelConfig", "modelName"])
        .filter(|m| !m.is_empty() && *m != "default")
        .map(str::to_string);
    let mut bubbles: HashMap<&str, Value> = HashMap::new();
    // Bubbles that are not JSON: shown as stored where the headers place them (or, when
    // nothing places them, where their key sorts), counted once.
    let mut bad: HashMap<&str, (&str, String)> = HashMap::new();
    for (bid, json) in &raw.bubbles {
        match serde_json::from_str::<Value>(json) {
            Ok(v) => {
                bubbles.insert(bid.as_str(), v);
            }
            Err(e) => {
                bad.insert(bid.as_str(), (json.as_str(), e.to_string()));
            }
        }
    }
    let bad_shown = |b: &mut SessionBuilder, bad: &mut HashMap<&str, (&str, String)>, bid: &str| {
        if let Some((json, e)) = bad.remove(bid) {
            b.unparsed(
                "bubbles",
                "invalid JSON",
                || format!("bubble {bid}: {e}"),
                "bubble",
                json,
                None,
            );
        }
    };
    let headers: Vec<&str> = composer
        .get("fullConversationHeadersOnly")
        .and_then(Value::as_array)
        .map(|h| {
            h.iter()
                .filter_map(|x| kit::str_field(x, "bubbleId"))
                .collect()
        })
        .unwrap_or_default();
    let mut order: Vec<(String, Value)> = Vec::new();
    if !headers.is_empty() {
        let mut missing = 0;
        for h in &headers {
            match bubbles.remove(h) {
                Some(v) => order.push((h.to_string(), v)),
                // Shown in place: an `Err` slot.
                None if bad.contains_key(h) => order.push((h.to_string(), Value::Null)),
                None => missing += 1,
            }
        }
        if missing > 0 {
            b.warn(format!(
                "{missing} bubbles named by the conversation headers are missing"
            ));
        }
        if !bubbles.is_empty() {
            b.warn(format!(
                "{} bubbles not in the conversation headers (reverted or edited turns) not shown",
                bubbles.len()
            ));
        }
    } else if let Some(conv) = composer.get("conversation").and_then(Value::as_array) {
        for (i, v) in conv.iter().enumerate() {
            let id =
                kit::str_field(v, "bubbleId").map_or_else(|| format!("inline-{i}"), String::from);
            order.push((id, v.clone()));
        }
    } else {
        // No headers at all: key order (bubble ids carry no time, but it is stable).
        let mut rest: Vec<(&str, Value)> = bubbles.drain().collect();
        rest.extend(bad.keys().map(|k| (*k, Value::Null)));
        rest.sort_by(|a, b| a.0.cmp(b.0));
        order.extend(rest.into_iter().map(|(k, v)| (k.to_string(), v)));
    }
    for (bid, v) in &order {
        if v.is_null() && bad.contains_key(bid.as_str()) {
            bad_shown(&mut b, &mut bad, bid);
        } else {
            bubble(&mut b, bid, v, composer_model.as_deref());
        }
    }
    // Not JSON and placed by nothing: still shown, after the conversation.
    let mut left: Vec<String> = bad.keys().map(|k| k.to_string()).collect();
    left.sort();
    for bid in left {
        bad_shown(&mut b, &mut bad, &bid);
    }
    b.finish()
}

fn bubble(b: &mut SessionBuilder, bid: &str, v: &Value, composer_model: Option<&str>) {
    let ts = v
        .get("createdAt")
        .or_else(|| v.get("timestamp"))
        .and_then(time_value);
    if b.s.cwd.is_none() {
        b.s.cwd = kit::str_field(v, "workspaceProjectDir")
            .map(String::from)
            .or_else(|| {
                v.get("workspaceUris")
                    .and_then(Value::as_array)
                    .and_then(|a| a.first())
                    .and_then(Value::as_str)
                    .map(uri_to_path)
            });
    }
    let text = kit::str_any(v, &["text", "rawText", "content", "message"])
        .unwrap_or("")
        .to_string();
    let role = match v.get("type").and_then(Value::as_u64) {
        Some(1) => Role::User,
        Some(2) => Role::Assistant,
        _ => match kit::str_field(v, "type") {
            Some("user") => Role::User,
            _ => Role::Assistant,
        },
    };
    let mut m = Message {
        role,
        content: text,
        timestamp: ts,
        native_id: Some(bid.to_string()),
        ..Message::default()
    };
    if role == Role::Assistant {
        m.model = kit::str_at(v, &["modelInfo", "modelName"])
            .map(String::from)
            .or_else(|| composer_model.map(String::from));
        m.thinking = match v.get("thinking") {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(t) => kit::str_field(t, "text")
                .filter(|s| !s.is_empty())
                .map(String::from),
            None => None,
        };
        let tokens = v.get("tokenCount");
        if let Some(t) = tokens.filter(|t| t.is_object()) {
            let u = TokenUsage {
                input_tokens: kit::u64_field(t, "inputTokens"),
                output_tokens: kit::u64_field(t, "outputTokens"),
                ..TokenUsage::default()
            };
            if !u.is_zero() {
                m.token_usage = Some(u);
            }
        }
        if let Some(tf) = v.get("toolFormerData").filter(|t| t.is_object()) {
            let input = match tf.get("rawArgs") {
                Some(Value::String(s)) => {
                    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
                }
                Some(x) => x.clone(),
                None => tf.get("params").cloned().unwrap_or(Value::Null),
            };
            let (output, _) = output_text(tf.get("result"));
            let status = kit::str_field(tf, "status");
            m.tool_calls.push(ToolCall {
                tool_call_id: kit::str_field(tf, "toolCallId").unwrap_or(bid).to_string(),
                tool_name: kit::str_field(tf, "name").unwrap_or("tool").to_string(),
                input,
                is_error: status.map(|s| s == "error" || s == "failed"),
                output: (!output.is_empty()).then_some(output),
                duration_ms: None,
            });
        }
    }
    b.push(m);
}
