//! The Cursor IDE's per-workspace `state.vscdb` (`User/workspaceStorage/<hash>/`, and the
//! same layout under `~/.cursor-server/data/User` for remote windows): the chat panel of the
//! pre-Composer IDE (`aichat`) and composers kept inline in the workspace's composer list.
//!
//! Read from `ItemTable` by exact key only — two keys, never a scan, so the auth entries
//! (`cursorAuth/*`) the same table holds are never selected:
//!
//! - `workbench.panel.aichat.view.aichat.chatdata`: `{tabs: [{tabId, chatTitle,
//!   lastSendTime, bubbles: [{type: "user" | "ai", text, rawText, modelType, selections:
//!   [{text}]}]}]}`. One tab is one session, id `tabId`. Shapes as read by
//!   somogyijanos/cursor-chat-export `src/export.py` (commit 0351a8f2e57f) and
//!   thomas-pedersen/cursor-chat-browser `src/app/api/workspaces/[id]/tabs/route.ts`
//!   (commit d630002c4cdc).
//! - `composer.composerData`: `{allComposers: [{composerId, name, createdAt, lastUpdatedAt,
//!   conversation?: [{type 1 | 2, bubbleId, text, …}]}], selectedComposerId}`
//!   (thomas-pedersen/cursor-chat-browser `src/types/workspace.ts`, commit 4a508921ada0).
//!   Current Cursor keeps only the head here and the body in the global `composerData:<id>`
//!   (read by [`super::ide`]); a composer of the older releases that kept its conversation
//!   inline is one session, id `composerId`, built exactly as a global inline composer.
//!
//! The workspace folder (`workspace.json` beside the database: `folder`, or the
//! `.code-workspace` file of a multi-root `workspace`) is the session's `cwd`.

use super::decode::uri_to_path;
use super::ide::{build_ide, IdeRaw};
use super::{time_value, CursorStore};
use crate::model::{Agent, Message, Role, Session, Source};
use crate::stores::kit::{self, SessionBuilder};
use crate::stores::sqlite::{self, Rows, Table};
use crate::stores::Listed;
use rusqlite::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The chat panel's tabs.
pub(super) const CHATDATA: &str = "workbench.panel.aichat.view.aichat.chatdata";
/// The workspace's composer list.
pub(super) const COMPOSERS: &str = "composer.composerData";

/// Largest `workspace.json` read.
const MAX_WORKSPACE_JSON: u64 = 1 << 20;

/// Which `ItemTable` value a listed session lives in, and its id inside it (empty: the
/// value is not JSON and is shown whole).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Slot<'a> {
    Tab(&'a str),
    Composer(&'a str),
}

/// `Listed::key` of a workspace session: `aichat:<tabId>` or `composer.composerData:<id>`.
/// Global composers are keyed by their bare id, which never carries these prefixes (Cursor's
/// ids are UUIDs).
pub(super) fn slot(key: &str) -> Option<Slot<'_>> {
    if let Some(id) = key.strip_prefix("aichat:") {
        Some(Slot::Tab(id))
    } else {
        key.strip_prefix("composer.composerData:")
            .map(Slot::Composer)
    }
}

fn slot_key(s: Slot<'_>) -> String {
    match s {
        Slot::Tab(id) => format!("aichat:{id}"),
        Slot::Composer(id) => format!("composer.composerData:{id}"),
    }
}

impl Slot<'_> {
    fn item(&self) -> &'static str {
        match self {
            Slot::Tab(_) => CHATDATA,
            Slot::Composer(_) => COMPOSERS,
        }
    }
}

/// One `ItemTable` value by exact key; `None` when the table or the row is absent.
fn item(c: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    let t = Table::probe(c, "ItemTable")?;
    if !t.has("key") || !t.has("value") {
        return Ok(None);
    }
    let rows = Rows::query(
        c,
        "SELECT value FROM ItemTable WHERE key = ?1",
        vec!["value".into()],
        [key],
    )?;
    Ok(rows.first().and_then(|r| r.get("value").text()))
}

/// `(session id, listed key)` of every conversation in a workspace database's two values.
pub(super) fn list(c: &Connection, ws: &str) -> rusqlite::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    if let Some(text) = item(c, CHATDATA)? {
        match serde_json::from_str::<Value>(&text) {
            Ok(v) => {
                let tabs = v.get("tabs").and_then(Value::as_array);
                for (i, tab) in tabs.into_iter().flatten().enumerate() {
                    let has_bubbles = tab
                        .get("bubbles")
                        .and_then(Value::as_array)
                        .is_some_and(|b| !b.is_empty());
                    if !has_bubbles {
                        continue;
                    }
                    let id = tab_id(tab, ws, i);
                    out.push((id.clone(), slot_key(Slot::Tab(&id))));
                }
            }
            // Not JSON: listed whole, so its text is shown (and counted in a warning).
            Err(_) => out.push((format!("aichat-{ws}"), slot_key(Slot::Tab("")))),
        }
    }
    if let Some(text) = item(c, COMPOSERS)? {
        match serde_json::from_str::<Value>(&text) {
            Ok(v) => {
                for comp in composers(&v) {
                    let inline = comp
                        .get("conversation")
                        .and_then(Value::as_array)
                        .is_some_and(|a| !a.is_empty());
                    if let Some(id) = kit::str_field(comp, "composerId").filter(|_| inline) {
                        out.push((id.to_string(), slot_key(Slot::Composer(id))));
                    }
                }
            }
            Err(_) => out.push((format!("composers-{ws}"), slot_key(Slot::Composer("")))),
        }
    }
    Ok(out)
}

/// `allComposers`, or the bare array some releases wrote.
fn composers(v: &Value) -> impl Iterator<Item = &Value> {
    v.get("allComposers")
        .or(Some(v))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A tab's `tabId`, or (never seen, but not lost) its workspace and position.
fn tab_id(tab: &Value, ws: &str, i: usize) -> String {
    kit::str_field(tab, "tabId")
        .filter(|s| !s.is_empty())
        .map_or_else(|| format!("aichat-{ws}-{i}"), String::from)
}

/// A workspace session's version: its `ItemTable` value (every tab of a workspace shares
/// one value, so a write to one tab re-renders that workspace's tabs).
pub(super) fn version(c: &Connection, s: Slot<'_>) -> rusqlite::Result<u64> {
    Ok(sqlite::hash_version(item(c, s.item())?))
}

/// The workspace folder named by `workspace.json` beside `db`.
fn workspace_folder(db: &Path) -> Option<String> {
    let v = kit::read_json(&workspace_json(db)?, "workspace.json", MAX_WORKSPACE_JSON).ok()?;
    if let Some(f) = kit::str_field(&v, "folder") {
        return Some(uri_to_path(f));
    }
    let w = uri_to_path(kit::str_field(&v, "workspace")?);
    Some(
        Path::new(&w)
            .parent()
            .map_or(w.clone(), |p| p.display().to_string()),
    )
}

pub(super) fn workspace_json(db: &Path) -> Option<PathBuf> {
    Some(db.parent()?.join("workspace.json"))
}

impl CursorStore {
    pub(super) fn load_ws(&self, listed: &Listed) -> Session {
        let db = &listed.path;
        let key = listed.key.as_deref().unwrap_or_default();
        let Some(s) = slot(key) else {
            return Session::new(Agent::Cursor, &listed.id);
        };
        let source = || Source {
            paths: vec![db.clone()],
            format: "cursor-workspace-state-vscdb".into(),
            format_version: None,
        };
        let cwd = workspace_folder(db);
        let ws = kit::file_name(db.parent().unwrap_or(db)).to_string();
        let mut s = sqlite::load_session(
            &self.reader,
            db,
            key,
            sqlite::Access::InPlace,
            |c| item(c, s.item()),
            |raw| {
                let mut b = SessionBuilder::new(Agent::Cursor, listed.id.clone());
                b.s.source = source();
                build(b, s, raw.as_deref(), &ws)
            },
            || {
                let mut s = Session::new(Agent::Cursor, &listed.id);
                s.source = source();
                s
            },
        );
        if s.cwd.is_none() {
            s.cwd = cwd;
        }
        s
    }
}

fn build(mut b: SessionBuilder, slot: Slot<'_>, raw: Option<&str>, ws: &str) -> Session {
    let Some(raw) = raw else {
        b.warn(format!(
            "{} not found (deleted while reading?)",
            slot.item()
        ));
        return b.finish();
    };
    let v: Value = match serde_json::from_str(raw) {
        Ok(v) => v,
        Err(e) => {
            b.unparsed(
                "workspace values",
                "invalid JSON",
                || format!("{}: {e}", slot.item()),
                slot.item(),
                raw,
                None,
            );
            return b.finish();
        }
    };
    match slot {
        Slot::Tab(id) => {
            let tabs = v.get("tabs").and_then(Value::as_array);
            let tab = tabs
                .into_iter()
                .flatten()
                .enumerate()
                .find(|(i, t)| tab_id(t, ws, *i) == id);
            match tab {
                Some((_, t)) => build_tab(b, t),
                None => {
                    b.warn(format!("chat tab {id} not found (deleted while reading?)"));
                    b.finish()
                }
            }
        }
        Slot::Composer(id) => {
            let comp = composers(&v).find(|c| kit::str_field(c, "composerId") == Some(id));
            match comp {
                Some(c) => build_ide(
                    b,
                    &IdeRaw {
                        composer: Some(c.to_string()),
                        bubbles: Vec::new(),
                    },
                ),
                None => {
                    b.warn(format!("composer {id} not found (deleted while reading?)"));
                    b.finish()
                }
            }
        }
    }
}

/// One chat-panel tab: `user` bubbles are prompts (their `selections` the code they
/// attached, shown as context), `ai` bubbles replies (`rawText`, model `modelType`).
fn build_tab(mut b: SessionBuilder, tab: &Value) -> Session {
    b.s.title = kit::str_field(tab, "chatTitle")
        .and_then(|t| t.lines().next())
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(String::from);
    b.s.updated_at = tab.get("lastSendTime").and_then(time_value);
    let bubbles = tab.get("bubbles").and_then(Value::as_array);
    for (i, v) in bubbles.into_iter().flatten().enumerate() {
        let ts = v
            .get("timestamp")
            .or_else(|| v.get("createdAt"))
            .and_then(time_value);
        let native_id = kit::str_field(v, "id").map_or_else(|| format!("bubble-{i}"), String::from);
        match kit::str_field(v, "type") {
            Some("user") => {
                let selections: Vec<&str> = v
                    .get("selections")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|s| kit::str_field(s, "text"))
                    .filter(|s| !s.is_empty())
                    .collect();
                if !selections.is_empty() {
                    b.context("selection", selections.join("\n\n"), ts);
                }
                let text = kit::str_any(v, &["text", "rawText"])
                    .filter(|s| !s.is_empty())
                    .or_else(|| kit::str_at(v, &["delegate", "a"]))
                    .unwrap_or("");
                b.push(Message {
                    role: Role::User,
                    content: text.to_string(),
                    timestamp: ts,
                    native_id: Some(native_id),
                    ..Message::default()
                });
            }
            Some("ai") => {
                let text = kit::str_any(v, &["rawText", "text"]).unwrap_or("");
                b.push(Message {
                    role: Role::Assistant,
                    content: text.to_string(),
                    timestamp: ts,
                    model: kit::str_field(v, "modelType")
                        .filter(|m| !m.is_empty())
                        .map(String::from),
                    native_id: Some(native_id),
                    ..Message::default()
                });
            }
            _ => super::odd(
                &mut b,
                "chat bubbles",
                "unknown type",
                &format!("bubble {i}"),
                v,
            ),
        }
    }
    b.finish()
}
