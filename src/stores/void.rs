//! Void (voideditor/void), the open-source VS Code fork with a built-in AI chat and agent:
//! every chat thread, kept as one JSON value in the editor's application storage,
//! `User/globalStorage/state.vscdb`.
//!
//! Learnt from Void's own source, github.com/voideditor/void at commit
//! `b3166e7ef2aefbdfeb139445fdf248a561b85d4d`:
//! `src/vs/workbench/contrib/void/common/storageKeys.ts` (the thread key
//! `void.chatThreadStorageII` since 1.0.3, earlier `void.chatThreadStorage` and
//! `void.chatThreadStorageI`; the settings key `void.settingsServiceStorageII`),
//! `browser/chatThreadService.ts` (`_storeAllThreads`: `JSON.stringify` of every thread by
//! id, stored with `StorageScope.APPLICATION` and `StorageTarget.USER`; `ThreadType`: `id`,
//! `createdAt` and `lastModified` as ISO strings, `messages`, `filesWithUserChanges`,
//! `state` with `stagingSelections`, `currCheckpointIdx`, `focusedMessageIdx`,
//! `linksOfMessageIdx`), `common/chatThreadServiceTypes.ts` (`ChatMessage`: `user` with the
//! text sent, the text shown and its `selections`; `assistant` with `displayContent`,
//! `reasoning` and `anthropicReasoning`; `tool` with its `type` — `invalid_params`,
//! `tool_request`, `running_now`, `tool_error`, `success`, `rejected` — `id`, `name`,
//! `params`/`rawParams`, `content` and `result`, `mcpServerName`; `interrupted_streaming_tool`;
//! `checkpoint` with `voidFileSnapshotOfURI`; `StagingSelectionItem`: `File`,
//! `CodeSelection`, `Folder`) and `product.json` (user-data directory `Void`, `dataFolderName`
//! `.void-editor`). The older tool shape (`result: {type: success | error, value}`,
//! `paramsStr`, the `tool_request` role, the assistant's `content`) is from the same file at
//! commit `009dfbef37494fc7236d54e57d20be7f409ca19b`.
//!
//! **Where.** VS Code keeps application-scoped storage in the `ItemTable` of the default
//! profile's `User/globalStorage/state.vscdb`, keyed by the storage key itself. Void's user
//! data is found as VS Code finds it (the path helpers are shared with the Cody store):
//! `$VSCODE_PORTABLE/user-data`, `$VSCODE_APPDATA/Void`, `$XDG_CONFIG_HOME/Void` (default
//! `~/.config/Void`) and macOS `~/Library/Application Support/Void`, with every profile's
//! database present when sessfs starts. `~/.void-editor` holds extensions, not chats. A
//! `--store` path may be a `state.vscdb`, a `globalStorage` or a `User` directory.
//!
//! **What is read.** Only the row keyed `void.chatThreadStorageII`; SQLite's `json_each`
//! splits it into threads inside the read. `void.settingsServiceStorageII` (provider
//! settings with the API keys), the `secret://` rows and every other row are never
//! selected. The keys of builds before 1.0.3 (`void.chatThreadStorage`,
//! `void.chatThreadStorageI`) are not read: Void itself no longer reads them.
//!
//! **Messages.** Each thread is one session (its id, `createdAt`, `lastModified`; Void keeps
//! no title, so the first prompt names it). A prompt shows the text the user typed, its
//! selections as context and the text sent (with the selections' names) as context when it
//! differs; a reply its text and reasoning (`anthropicReasoning` blocks when there is no
//! plain reasoning; redacted blocks are sealed); a tool message is a call (params, or the
//! raw params when they did not validate) with its result: `success` the text given to the
//! model, `tool_error`, `invalid_params` and `rejected` a failed result, `tool_request` and
//! `running_now` a call without a result plus an event. An interrupted tool and each
//! checkpoint (with the files it snapshots, not their contents) are events; the thread's
//! staged selections not yet sent are context. Void stores no model, token usage, working
//! directory or per-message time. `filesWithUserChanges`, `currCheckpointIdx`,
//! `focusedMessageIdx` and `linksOfMessageIdx` are UI state and not shown.

use super::kit::{self, SessionBuilder};
use super::sqlite::{self, Reader, Rows, Table};
use super::vscode::{state_dbs, state_glance, vscode_roots};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Message, Role, Session, Source, ToolCall, SEALED_THINKING};
use rusqlite::Connection;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// The `ItemTable` key of every chat thread (`THREAD_STORAGE_KEY`).
pub const THREAD_KEY: &str = "void.chatThreadStorageII";
/// The key of Void's settings, API keys included: never selected.
pub const SETTINGS_KEY: &str = "void.settingsServiceStorageII";
const EDITORS: &[&str] = &["Void"];

pub fn candidates(env: &Env) -> Vec<Root> {
    vscode_roots(env, Agent::Void, EDITORS)
}

pub struct VoidStore {
    base: Base,
    reader: Reader,
    snaps: sqlite::Snapshots<Fetched>,
}

/// One database's threads as last read.
struct Fetched {
    threads: Vec<Thread>,
    by_id: HashMap<String, usize>,
    /// Why no thread could be read (the value is not JSON).
    problem: Option<String>,
}

struct Thread {
    id: String,
    /// SQLite's `json_each` type of the value (`object` for a thread).
    kind: String,
    json: String,
}

impl VoidStore {
    pub fn new(roots: Vec<Root>) -> VoidStore {
        VoidStore {
            base: Base::new(Agent::Void, roots),
            reader: Reader::new(),
            snaps: sqlite::Snapshots::default(),
        }
    }

    /// The threads of `db`, read again only when the database or its WAL changed; while
    /// it is busy the last read is kept.
    fn snap(&self, db: &Path) -> Result<Arc<sqlite::Snapshot<Fetched>>, sqlite::Error> {
        self.snaps.get(&self.reader, db, |c| {
            let (threads, problem) = fetch(c)?;
            let by_id = threads
                .iter()
                .enumerate()
                .map(|(i, t)| (t.id.clone(), i))
                .collect();
            Ok(Fetched {
                threads,
                by_id,
                problem,
            })
        })
    }
}

impl Store for VoidStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (_, db) in state_dbs(&self.base.roots) {
            match self.snap(&db) {
                Ok(s) => out.extend(s.problem.iter().map(|p| format!("{}: {p}", db.display()))),
                Err(e) => out.push(format!("{}: {e}", db.display())),
            }
        }
        out
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (root, db) in state_dbs(&self.base.roots) {
            let snap = match self.snap(&db) {
                Ok(s) => s,
                Err(e) => {
                    log::warn!("void: {}: {e}", db.display());
                    continue;
                }
            };
            if let Some(p) = &snap.problem {
                log::warn!("void: {}: {p}", db.display());
            }
            for t in &snap.threads {
                out.push(sqlite::row_session(&t.id, &db, root));
            }
        }
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        let db = &listed.path;
        let empty = |w: String| {
            let mut s = Session::new(Agent::Void, &listed.id);
            s.source = source(db);
            s.warnings.push(w);
            s
        };
        match self.snap(db) {
            Ok(snap) => match snap
                .by_id
                .get(&listed.id)
                .and_then(|&i| snap.threads.get(i))
            {
                Some(t) => {
                    let mut s = build(t, db);
                    if let Some(n) = &snap.note {
                        s.warnings.insert(0, n.clone());
                    }
                    s
                }
                None => empty(format!(
                    "thread {} is no longer in {} (deleted while reading?)",
                    listed.id,
                    db.display()
                )),
            },
            Err(e) => empty(format!("cannot read {}: {e}", db.display())),
        }
    }

    /// A thread's version is its own JSON text: Void rewrites every thread on each change,
    /// so only the thread that changed renders again.
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        listed
            .iter()
            .map(|l| {
                let snap = self.snap(&l.path).ok()?;
                let t = snap.threads.get(*snap.by_id.get(&l.id)?)?;
                Some(sqlite::hash_version((&t.kind, &t.json)))
            })
            .collect()
    }

    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        Some(state_glance(&self.base.roots))
    }
}

fn source(db: &Path) -> Source {
    Source {
        paths: vec![db.to_path_buf()],
        format: "void-application-storage".into(),
        format_version: Some(THREAD_KEY.into()),
    }
}

/// Every thread of the database and the problem that kept them from being read. Only the
/// `void.chatThreadStorageII` row is selected.
fn fetch(c: &Connection) -> rusqlite::Result<(Vec<Thread>, Option<String>)> {
    let t = Table::probe(c, "ItemTable")?;
    if !t.has("key") || !t.has("value") {
        return Ok((Vec::new(), None));
    }
    let valid = Rows::query(
        c,
        "SELECT json_valid(CAST(value AS TEXT)),
                CASE WHEN json_valid(CAST(value AS TEXT)) THEN json_type(CAST(value AS TEXT)) END
           FROM ItemTable WHERE key = ?1",
        vec!["valid".into(), "type".into()],
        [THREAD_KEY],
    )?;
    let Some(row) = valid.first() else {
        return Ok((Vec::new(), None));
    };
    if row.get("valid").int() != Some(1) || row.get("type").text().as_deref() != Some("object") {
        return Ok((
            Vec::new(),
            Some(format!(
                "the {THREAD_KEY} row of ItemTable is not a JSON object: no Void thread can be read"
            )),
        ));
    }
    let rows = Rows::query(
        c,
        "SELECT j.key, j.type, j.value FROM ItemTable t, json_each(CAST(t.value AS TEXT)) j
          WHERE t.key = ?1 ORDER BY j.id",
        vec!["id".into(), "type".into(), "value".into()],
        [THREAD_KEY],
    )?;
    let threads = rows
        .iter()
        .map(|r| Thread {
            id: r.get("id").text().unwrap_or_default(),
            kind: r.get("type").text().unwrap_or_default(),
            json: r.get("value").text().unwrap_or_default(),
        })
        .collect();
    Ok((threads, None))
}

// ---------------------------------------------------------------------------------------
// One thread

const THREAD_FIELDS: &[&str] = &[
    "id",
    "createdAt",
    "lastModified",
    "messages",
    "filesWithUserChanges",
    "state",
];

fn build(t: &Thread, db: &Path) -> Session {
    let mut b = SessionBuilder::new(Agent::Void, t.id.clone());
    b.s.source = source(db);
    let v: Value = if t.kind == "object" {
        serde_json::from_str(&t.json).unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    let Value::Object(o) = &v else {
        let first = || format!("thread {}: a JSON {}", t.id, t.kind);
        b.unparsed(
            "threads",
            "not a thread object",
            first,
            "thread",
            &t.json,
            None,
        );
        return b.finish();
    };
    unknown_fields(&mut b, o, THREAD_FIELDS, "thread fields", "thread");
    b.s.created_at = kit::str_field(&v, "createdAt").and_then(kit::parse_rfc3339);
    b.s.updated_at = kit::str_field(&v, "lastModified").and_then(kit::parse_rfc3339);
    match v.get("messages") {
        Some(Value::Array(ms)) => {
            for (i, m) in ms.iter().enumerate() {
                message(&mut b, m, i);
            }
        }
        None | Some(Value::Null) => {}
        Some(other) => b.unparsed(
            "messages",
            "not a list",
            || "thread: messages".into(),
            "messages",
            &other.to_string(),
            None,
        ),
    }
    if let Some(Value::Array(staged)) = kit::value_at(&v, &["state", "stagingSelections"]) {
        if !staged.is_empty() {
            let lines: Vec<String> = staged.iter().map(selection_line).collect();
            b.context("staged selections (not sent)", lines.join("\n"), None);
        }
    }
    b.finish()
}

/// Fields of `obj` not in `known`, each shown raw where it stands and counted.
fn unknown_fields(
    b: &mut SessionBuilder,
    obj: &Map<String, Value>,
    known: &[&str],
    what: &str,
    place: &str,
) {
    for (k, v) in obj {
        if !known.contains(&k.as_str()) {
            let first = || format!("{place}: `{k}`");
            b.unparsed(what, "unknown field", first, k, &v.to_string(), None);
        }
    }
}

/// A URI as Void stores it: VS Code's `{$mid, fsPath, path, scheme}` (or a string).
fn uri_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(u @ Value::Object(_)) => {
            let path = kit::str_any(u, &["fsPath", "path"]).unwrap_or_default();
            match kit::str_field(u, "scheme") {
                Some("file") | None => path.to_string(),
                Some(s) => format!("{s}://{path}"),
            }
        }
        _ => String::new(),
    }
}

/// One staging selection as a line: `File /w/a.ts`, `CodeSelection /w/a.ts:3-9`.
fn selection_line(s: &Value) -> String {
    let kind = kit::str_field(s, "type").unwrap_or("selection");
    let mut path = uri_text(s.get("uri").or(s.get("fileURI")));
    if let Some(Value::Array(r)) = s.get("range") {
        if let (Some(a), Some(z)) = (
            r.first().and_then(Value::as_u64),
            r.get(1).and_then(Value::as_u64),
        ) {
            path = format!("{path}:{a}-{z}");
        }
    }
    format!("{kind} {path}")
}

fn text_of(v: &Value, keys: &[&str]) -> String {
    kit::str_any(v, keys).unwrap_or_default().to_string()
}

fn message(b: &mut SessionBuilder, m: &Value, i: usize) {
    let place = format!("message {i}");
    match kit::str_field(m, "role") {
        Some("user") => {
            let sent = text_of(m, &["content"]);
            let shown = kit::str_field(m, "displayContent")
                .filter(|s| !s.is_empty())
                .map(str::to_string);
            if let Some(Value::Array(sel)) = m.get("selections") {
                if !sel.is_empty() {
                    let lines: Vec<String> = sel.iter().map(selection_line).collect();
                    b.context("selections", lines.join("\n"), None);
                }
            }
            let content = shown.clone().unwrap_or_else(|| sent.clone());
            b.push(Message {
                role: Role::User,
                content,
                native_id: Some(i.to_string()),
                ..Message::default()
            });
            if shown.is_some_and(|s| s != sent) && !sent.is_empty() {
                b.context("prompt as sent", sent, None);
            }
        }
        Some("assistant") => {
            let content = text_of(m, &["displayContent", "content"]);
            let mut thinking = kit::str_field(m, "reasoning")
                .filter(|r| !r.is_empty())
                .map(str::to_string);
            if thinking.is_none() {
                if let Some(Value::Array(blocks)) = m.get("anthropicReasoning") {
                    let parts: Vec<String> = blocks
                        .iter()
                        .filter_map(|bl| match kit::str_field(bl, "type") {
                            Some("thinking") => kit::str_field(bl, "thinking").map(str::to_string),
                            Some("redacted_thinking") => Some(SEALED_THINKING.to_string()),
                            _ => None,
                        })
                        .filter(|t| !t.is_empty())
                        .collect();
                    if !parts.is_empty() {
                        thinking = Some(parts.join("\n\n"));
                    }
                }
            }
            b.push(Message {
                role: Role::Assistant,
                content,
                thinking,
                native_id: Some(i.to_string()),
                ..Message::default()
            });
        }
        Some("tool") => tool(b, m, i),
        Some("tool_request") => {
            let name = text_of(m, &["name"]);
            let id = text_of(m, &["voidToolId", "id"]);
            call(
                b,
                &id,
                &name,
                m.get("params").cloned().unwrap_or(Value::Null),
                i,
            );
            b.event(format!("tool {name} awaiting approval"), None);
        }
        Some("interrupted_streaming_tool") => {
            let name = text_of(m, &["name"]);
            b.event(format!("tool {name} interrupted while streaming"), None);
        }
        Some("checkpoint") => {
            let kind = kit::str_field(m, "type").unwrap_or("checkpoint");
            let mut files: Vec<String> = m
                .get("voidFileSnapshotOfURI")
                .and_then(Value::as_object)
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default();
            files.sort();
            let mut e = format!("checkpoint ({kind})");
            if !files.is_empty() {
                e.push_str(&format!(": {}", files.join(", ")));
            }
            b.event(e, None);
        }
        other => {
            let first = || format!("{place}: role {}", other.unwrap_or("missing"));
            b.unparsed(
                "messages",
                "unknown role",
                first,
                "message",
                &m.to_string(),
                None,
            );
        }
    }
}

fn call(b: &mut SessionBuilder, id: &str, name: &str, input: Value, i: usize) {
    b.push(Message {
        role: Role::Assistant,
        tool_calls: vec![ToolCall {
            tool_call_id: id.to_string(),
            tool_name: name.to_string(),
            input,
            ..ToolCall::default()
        }],
        native_id: Some(i.to_string()),
        ..Message::default()
    });
}

/// A tool message: Void keeps the call and its outcome in one record.
fn tool(b: &mut SessionBuilder, m: &Value, i: usize) {
    let name = text_of(m, &["name"]);
    let id = match kit::str_field(m, "id").filter(|s| !s.is_empty()) {
        Some(id) => id.to_string(),
        None => format!("void-tool-{i}"),
    };
    let input = match m.get("params").filter(|p| !p.is_null()) {
        Some(p) => p.clone(),
        None => match m.get("rawParams").filter(|p| !p.is_null()) {
            Some(p) => p.clone(),
            None => kit::str_field(m, "paramsStr")
                .map(|s| serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.into())))
                .unwrap_or(Value::Null),
        },
    };
    call(b, &id, &name, input, i);
    if let Some(server) = kit::str_field(m, "mcpServerName").filter(|s| !s.is_empty()) {
        b.event(format!("tool {name} from MCP server {server}"), None);
    }
    let content = text_of(m, &["content"]);
    let result_text = |r: Option<&Value>| match r {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(x) => x.to_string(),
    };
    // The older shape: `result: {type: success | error, value}`.
    let kind = kit::str_field(m, "type").map(str::to_string).or_else(|| {
        match kit::str_at(m, &["result", "type"]) {
            Some("success") => Some("success".into()),
            Some("error") => Some("tool_error".into()),
            _ => None,
        }
    });
    let or_content = |t: String| {
        if content.is_empty() {
            t
        } else {
            content.clone()
        }
    };
    match kind.as_deref() {
        Some("success") => {
            let out = or_content(result_text(m.get("result")));
            b.tool_result(&id, Some(&name), out, false, None);
        }
        Some("tool_error") => {
            let r = m.get("result");
            let err = match r.and_then(|r| r.get("value")) {
                Some(v) => result_text(Some(v)),
                None => result_text(r),
            };
            let out = if err.is_empty() { content.clone() } else { err };
            b.tool_result(&id, Some(&name), out, true, None);
        }
        Some("invalid_params") => {
            let out = or_content("invalid parameters".into());
            b.tool_result(&id, Some(&name), out, true, None);
        }
        Some("rejected") => {
            let out = or_content("rejected by the user".into());
            b.tool_result(&id, Some(&name), out, true, None);
        }
        Some("tool_request") => b.event(format!("tool {name} awaiting approval"), None),
        Some("running_now") => b.event(format!("tool {name} was running"), None),
        other => {
            let first = || format!("message {i}: tool type {}", other.unwrap_or("missing"));
            b.unparsed(
                "tool messages",
                "unknown type",
                first,
                "tool message",
                &m.to_string(),
                None,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selections_name_their_kind_path_and_lines() {
        let u = json!({"$mid": 1, "fsPath": "/w/a.ts", "path": "/w/a.ts", "scheme": "file"});
        let sel = json!({"type": "CodeSelection", "range": [3, 9], "uri": u, "language": "ts"});
        assert_eq!(selection_line(&sel), "CodeSelection /w/a.ts:3-9");
        let dir = json!({"type": "Folder", "uri": {"$mid": 1, "path": "/w/src", "scheme": "file"}});
        assert_eq!(selection_line(&dir), "Folder /w/src");
    }
}
