//! Octofriend (synthetic-lab/octofriend, the `octo` coding agent): every session a tree of
//! history nodes in one SQLite database, `~/.local/share/octofriend/sqlite.db`.
//!
//! Read from Octofriend's own source, github.com/synthetic-lab/octofriend at commit
//! `3b171999bb190f3f13881c2f68bd437bd06084d5` (2026-08-20):
//!
//! - `source/db/setup.ts`, `source/db/db.ts`: the database is `os.homedir()` joined with
//!   `.local/share/octofriend/sqlite.db`, on every platform (macOS too); no variable moves it
//!   (`XDG_DATA_HOME` is not consulted). Bun's SQLite, rollback-journal mode.
//! - `drizzle/0000` .. `0006` (written out in `fixtures/schema/octofriend-0006.sql`) and
//!   `source/session-history/schema/session-history-schema.ts`: a session is a `trees` row
//!   (`name` the session's UUID, `cwd`, `updated_at` in ms); its `tree_nodes` (`parent_id`,
//!   `is_leaf`, `created_at` in ms) each hold one `history_items` row, whose one payload is an
//!   `llm_irs` row (`json`), a `notifications` row (`content`), or a bare
//!   `request_failed_items` / `compaction_failed_items` row; `model_json` (0006) is the model
//!   the item was written under. Session history arrived with migration 0002 (June 2026,
//!   "Add Session Resume DB schema"); builds before it kept no conversation on disk.
//! - `source/session-history/index.ts`: `insertHistoryItems` appends a chain of nodes under
//!   the last node of the history on screen; editing a failed prompt and retrying
//!   (`editAndRetryFrom` in `source/state.ts`) cuts the history back, so the next nodes
//!   hang off an earlier node: a branch. `loadSession` resumes the most recent leaf (by
//!   `created_at`, then id) and walks its parents.
//! - `source/session-history/llm-ir-json.ts`, `model-json.ts`: `json` is `{version:
//!   "octo-llm-ir/v1", ir}`, `model_json` `{version: "octo-model/v1", model: ModelConfig}` or
//!   `octo-no-model-recorded` for items written before 0006.
//! - `source/libocto/llm-ir.ts`, `source/ir/octo-ir.ts`, `source/tools/common.ts`: the IR
//!   roles `user` (`content` parts: `text`, `image` with `{mimeType, base64Data, dataUrl,
//!   filePath, sizeBytes}`), `assistant` (`content` text, `reasoningContent`,
//!   `openai.encryptedReasoningContent`, `anthropic.thinkingBlocks`, `toolCalls` of
//!   `{type: tool-call, name, toolCallId, original, parsed}` or `{type:
//!   malformed-tool-request, error, call: {original: {name, arguments}}, toolCallId}`,
//!   `usage {input {cached, uncached, total}, output}`), the answers `tool-output`,
//!   `file-read`, `file-mutate`, `tool-runtime-error`, `tool-validation-error`,
//!   `tool-parse-error`, `tool-skip-output`, `tool-reject` (each carrying the `toolCall` it
//!   answers), and `checkpoint` (the summary autocompaction writes).
//!
//! Design decisions and why:
//! - **Only the session tables are read**: `trees`, `tree_nodes`, `history_items`, `llm_irs`
//!   and `notifications`, by column name. `launches`, `local_launches` and `docker_launches`
//!   (the command line a session ran under; `docker run` arguments can carry `-e KEY=…`),
//!   `input_history` (the prompt box's recall list) and `previews` are never selected. The
//!   credentials live elsewhere, `~/.config/octofriend/keys.json5`, `oauth.json5` (Codex
//!   OAuth tokens) and `octofriend.json5`, and are never opened. Of `model_json` only the
//!   model's `model` name is taken: its `auth` (an environment variable's name or a command
//!   that prints a key) and `baseUrl` are not shown.
//! - **The active path is the one Octofriend resumes**: the leaf with the newest
//!   `created_at` (then the largest id) and its parents. Leaves are found from the parent
//!   links rather than `is_leaf`, which the triggers keep equal to them. Every other leaf is a
//!   branch `branch-<leaf node id>` holding its whole path.
//! - **Each node is parsed once**: a node's messages are built without looking at the rest
//!   of the tree (every answer names its tool call), then copied onto each path that holds
//!   it, so a shared prefix costs one parse and one warning.
//! - **Images** are measured by their `sizeBytes`, never decoded: the typed reader skips
//!   `base64Data` and `dataUrl` without building them.
//! - **What the UI hides is shown, marked**: `tool-skip-output` (a call skipped after an
//!   earlier one was rejected) is a failed result, like a rejection or a validation error.

use super::kit::{self, Loose, Obj, SessionBuilder, Unparsed};
use super::rows::{RowFormat, RowStore};
use super::sqlite::{self, Cell, Rows, Table};
use super::{Env, Root};
use crate::model::{
    self, Agent, Branch, Message, MessageKind, Role, Session, Source, TokenUsage, ToolCall,
    ToolResult,
};
use chrono::{DateTime, Utc};
use rusqlite::Connection;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// The database, under the home on every platform.
const DB: &str = ".local/share/octofriend/sqlite.db";
const DB_FILE: &str = "sqlite.db";
/// The one version of `llm_irs.json` Octofriend writes.
const IR_VERSION: &str = "octo-llm-ir/v1";
/// The one version of `history_items.model_json`, and what items before 0006 hold instead.
const MODEL_VERSION: &str = "octo-model/v1";
const NO_MODEL: &str = "octo-no-model-recorded";

/// `~/.local/share/octofriend/sqlite.db`.
pub fn candidates(env: &Env) -> Vec<Root> {
    vec![Root::new(Agent::Octofriend, env.home.join(DB), "default")]
}

/// Octofriend's conversations: one tree each, in `sqlite.db`.
pub type OctofriendStore = RowStore<Octofriend>;

/// The format [`OctofriendStore`] reads.
pub struct Octofriend;

impl RowFormat for Octofriend {
    const AGENT: Agent = Agent::Octofriend;
    const DB_FILE: &'static str = DB_FILE;
    type Probe = Tables;
    type Raw = Raw;

    fn list(conn: &Connection) -> rusqlite::Result<Vec<String>> {
        list_db(conn)
    }

    fn probe(conn: &Connection) -> rusqlite::Result<Tables> {
        Tables::probe(conn)
    }

    fn version(conn: &Connection, probe: &Tables, key: &str) -> rusqlite::Result<u64> {
        session_version(conn, probe, key)
    }

    fn fetch(conn: &Connection, key: &str) -> rusqlite::Result<Raw> {
        fetch(conn, &Tables::probe(conn)?, key)
    }

    fn build(raw: Raw, db: &Path, key: &str) -> Session {
        build(raw, db, key)
    }

    fn unread(db: &Path, key: &str) -> Session {
        let mut s = Session::new(Agent::Octofriend, key);
        s.source = source(db, None);
        s
    }
}

fn source(db: &Path, version: Option<String>) -> Source {
    Source {
        paths: vec![db.to_path_buf()],
        format: "octofriend-sqlite".into(),
        format_version: version,
    }
}

/// Every session's name (its UUID), oldest first.
fn list_db(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let t = Table::probe(conn, "trees")?;
    if !t.has("name") || !Table::probe(conn, "tree_nodes")?.has("tree_id") {
        return Err(rusqlite::Error::InvalidColumnName(
            "no `trees` and `tree_nodes` tables: not an Octofriend database".into(),
        ));
    }
    let rows = Rows::fetch(conn, &t, &["name"], "ORDER BY rowid", [])?;
    Ok(rows.iter().filter_map(|r| r.get("name").text()).collect())
}

pub struct Tables {
    trees: Table,
    nodes: Table,
    items: Table,
    irs: Table,
    notes: Table,
}

impl Tables {
    fn probe(c: &Connection) -> rusqlite::Result<Tables> {
        Ok(Tables {
            trees: Table::probe(c, "trees")?,
            nodes: Table::probe(c, "tree_nodes")?,
            items: Table::probe(c, "history_items")?,
            irs: Table::probe(c, "llm_irs")?,
            notes: Table::probe(c, "notifications")?,
        })
    }
}

const TREE: [&str; 3] = ["id", "cwd", "updated_at"];
/// The columns of one node row, as [`node_query`] names them.
const NODE: [&str; 10] = [
    "id",
    "parent_id",
    "created_at",
    "item",
    "model_json",
    "request_failed_id",
    "compaction_failed_id",
    "notification_id",
    "ir",
    "note",
];

/// `alias.column` where `t` has it, else `NULL`.
fn col(t: &Table, alias: &str, name: &str) -> String {
    if t.has(name) {
        format!("{alias}.{}", sqlite::quote(name))
    } else {
        "NULL".into()
    }
}

/// One query for a tree's nodes with each node's item and payload, the joins made only to
/// the tables and columns this database has (a missing one reads as `NULL`).
fn node_query(t: &Tables) -> String {
    let joins_item = t.nodes.has("history_item_id") && t.items.has("id");
    let joins_ir = joins_item && t.items.has("llm_ir_id") && t.irs.has("id");
    let joins_note = joins_item && t.items.has("notification_id") && t.notes.has("id");
    let item = |c: &str| {
        if joins_item {
            col(&t.items, "h", c)
        } else {
            "NULL".into()
        }
    };
    let mut sql = format!(
        "SELECT n.\"id\", {}, {}, {}, {}, {}, {}, {}, {}, {} FROM \"tree_nodes\" n",
        col(&t.nodes, "n", "parent_id"),
        col(&t.nodes, "n", "created_at"),
        item("id"),
        item("model_json"),
        item("request_failed_id"),
        item("compaction_failed_id"),
        item("notification_id"),
        if joins_ir {
            col(&t.irs, "ir", "json")
        } else {
            "NULL".into()
        },
        if joins_note {
            col(&t.notes, "nt", "content")
        } else {
            "NULL".into()
        },
    );
    if joins_item {
        sql.push_str(" LEFT JOIN \"history_items\" h ON h.\"id\" = n.\"history_item_id\"");
    }
    if joins_ir {
        sql.push_str(" LEFT JOIN \"llm_irs\" ir ON ir.\"id\" = h.\"llm_ir_id\"");
    }
    if joins_note {
        sql.push_str(" LEFT JOIN \"notifications\" nt ON nt.\"id\" = h.\"notification_id\"");
    }
    sql.push_str(" WHERE n.\"tree_id\" = ?1 ORDER BY n.\"id\"");
    sql
}

/// What one read transaction copies out for a session.
pub struct Raw {
    tree: Option<Rows>,
    nodes: Rows,
    warnings: Vec<String>,
}

fn fetch(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<Raw> {
    let mut raw = Raw {
        tree: None,
        nodes: Rows::default(),
        warnings: Vec::new(),
    };
    let tree = Rows::fetch(c, &t.trees, &TREE, "WHERE \"name\" = ?1", [id])?;
    let tree_id = tree.first().and_then(|r| r.get("id").int());
    raw.tree = Some(tree).filter(|r| !r.is_empty());
    let Some(tree_id) = tree_id else {
        return Ok(raw);
    };
    if !(t.nodes.has("id") && t.nodes.has("tree_id")) {
        raw.warnings
            .push("the database has no readable `tree_nodes` table".into());
        return Ok(raw);
    }
    let names = NODE.iter().map(|s| s.to_string()).collect();
    raw.nodes = Rows::query(c, &node_query(t), names, [tree_id])?;
    Ok(raw)
}

/// A session's version: its `trees` row, then the count and largest id of its nodes. Nodes
/// and their payloads are written once and never changed (only `is_leaf`, which a new
/// child node moves with the count).
fn session_version(c: &Connection, t: &Tables, id: &str) -> rusqlite::Result<u64> {
    let tree = Rows::fetch(c, &t.trees, &TREE, "WHERE \"name\" = ?1", [id])?;
    let mut all = vec![tree.rows.clone()];
    if let Some(tid) = tree.first().and_then(|r| r.get("id").int()) {
        if t.nodes.has("tree_id") {
            let q = "SELECT count(*), max(rowid) FROM \"tree_nodes\" WHERE \"tree_id\" = ?1";
            all.push(Rows::query(c, q, vec![], [tid])?.rows);
        }
    }
    Ok(sqlite::hash_version(all))
}

// ---------------------------------------------------------------------------------------
// The IR, read typed: only the fields shown are built.

/// `llm_irs.json`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Envelope<'a> {
    #[serde(borrow)]
    version: Loose<'a>,
    #[serde(borrow)]
    ir: Obj<Ir<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Ir<'a> {
    #[serde(borrow)]
    role: Loose<'a>,
    /// Parts (`user`, `tool-output`, `checkpoint`) or text (`assistant`, `file-read`,
    /// `file-mutate`).
    #[serde(borrow)]
    content: kit::Content<'a, Part<'a>>,
    #[serde(borrow)]
    reasoning_content: Loose<'a>,
    #[serde(borrow)]
    openai: Obj<OpenAi<'a>>,
    #[serde(borrow)]
    anthropic: Obj<Anthropic<'a>>,
    #[serde(borrow)]
    tool_calls: kit::Content<'a, Call<'a>>,
    usage: Obj<Usage>,
    /// The call an answer answers.
    #[serde(borrow)]
    tool_call: Obj<Call<'a>>,
    #[serde(borrow)]
    error: Loose<'a>,
    #[serde(borrow)]
    reason: Loose<'a>,
    #[serde(borrow)]
    aborted: Loose<'a>,
    #[serde(borrow)]
    malformed_request: Obj<Call<'a>>,
    #[serde(borrow)]
    image: Obj<Image<'a>>,
}

/// A content part; an image's `base64Data` and `dataUrl` are skipped unread.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Part<'a> {
    #[serde(rename = "type", borrow)]
    ty: Loose<'a>,
    #[serde(borrow)]
    content: Loose<'a>,
    #[serde(borrow)]
    image: Obj<Image<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Image<'a> {
    #[serde(borrow)]
    mime_type: Loose<'a>,
    #[serde(borrow)]
    size_bytes: Loose<'a>,
    #[serde(borrow)]
    file_path: Loose<'a>,
}

/// A tool call (`tool-call`) or a malformed request (`malformed-tool-request`).
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Call<'a> {
    #[serde(rename = "type", borrow)]
    ty: Loose<'a>,
    #[serde(borrow)]
    name: Loose<'a>,
    #[serde(borrow)]
    tool_call_id: Loose<'a>,
    /// The arguments the model sent (`parsed`, which may hold whole files, is skipped).
    original: Option<Value>,
    #[serde(borrow)]
    error: Loose<'a>,
    #[serde(borrow)]
    call: Obj<Malformed<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Malformed<'a> {
    #[serde(borrow)]
    original: Obj<RawCall<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawCall<'a> {
    #[serde(borrow)]
    name: Loose<'a>,
    arguments: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct OpenAi<'a> {
    #[serde(borrow)]
    encrypted_reasoning_content: Loose<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Anthropic<'a> {
    #[serde(borrow)]
    thinking_blocks: kit::Content<'a, Thinking<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Thinking<'a> {
    #[serde(rename = "type", borrow)]
    ty: Loose<'a>,
    #[serde(borrow)]
    thinking: Loose<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Usage {
    input: Obj<UsageIn>,
    #[serde(deserialize_with = "kit::count")]
    output: u64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct UsageIn {
    #[serde(deserialize_with = "kit::count")]
    cached: u64,
    #[serde(deserialize_with = "kit::count")]
    uncached: u64,
    #[serde(deserialize_with = "kit::count")]
    total: u64,
}

/// `model_json`: only the model's name is read.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ModelJson<'a> {
    #[serde(borrow)]
    version: Loose<'a>,
    #[serde(borrow)]
    model: Obj<ModelName<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ModelName<'a> {
    #[serde(borrow)]
    model: Loose<'a>,
}

// ---------------------------------------------------------------------------------------
// Building

/// One tree node, parsed.
struct Node {
    id: i64,
    parent: Option<i64>,
    created: Option<DateTime<Utc>>,
    model: Option<String>,
    messages: Vec<Message>,
}

/// What parsing the nodes found beside the messages: problems by kind, and versions.
#[derive(Default)]
struct Notes {
    unparsed: Unparsed,
    /// Unknown `llm_irs` / `model_json` versions, read as the known one: (what, version) ->
    /// rows.
    versions: BTreeMap<(&'static str, String), usize>,
    ir_version: Option<String>,
}

fn build(raw: Raw, db: &Path, id: &str) -> Session {
    let mut b = SessionBuilder::new(Agent::Octofriend, id);
    for w in raw.warnings {
        b.warn(w);
    }
    match raw.tree.as_ref().and_then(Rows::first) {
        Some(row) => {
            b.s.cwd = row.get("cwd").non_empty();
            b.s.updated_at = row.get("updated_at").time();
        }
        None => b.warn("session row not found (deleted while reading?)"),
    }
    let mut notes = Notes::default();
    let mut nodes: Vec<Node> = raw.nodes.iter().map(|row| node(row, &mut notes)).collect();
    b.s.source = source(db, notes.ir_version.clone());
    b.unparsed = std::mem::take(&mut notes.unparsed);
    for ((what, v), n) in &notes.versions {
        b.warn(format!(
            "{n} {what} of unknown version {v:?}, read as the version this sessfs knows"
        ));
    }

    let tree = Tree::of(&nodes);
    b.s.warnings.extend(tree.warnings.iter().cloned());
    // Branches first (copies), then the active path moves out of the nodes.
    let mut taken = HashSet::new();
    for (leaf, path) in &tree.branches {
        let fork = path.iter().rposition(|&i| tree.on_active[i]);
        let mut messages = Vec::new();
        for &i in path {
            messages.extend(nodes[i].messages.iter().cloned());
        }
        b.s.branches.push(Branch {
            name: kit::unique_name(&mut taken, &format!("branch-{}", nodes[*leaf].id)),
            fork_point: fork.map(|f| nodes[path[f]].id.to_string()),
            leaf: Some(nodes[*leaf].id.to_string()),
            messages,
        });
    }
    if let Some(&leaf) = tree.active.last() {
        // What Octofriend resumes with: the model of the last item.
        b.s.set_model = nodes[leaf].model.clone();
    }
    for &i in &tree.active {
        for m in std::mem::take(&mut nodes[i].messages) {
            b.push(m);
        }
    }
    b.finish()
}

/// The tree of a session's nodes: the active path and every other leaf's path, as indexes.
struct Tree {
    active: Vec<usize>,
    on_active: Vec<bool>,
    /// (leaf, path from the root), leaves in id order.
    branches: Vec<(usize, Vec<usize>)>,
    warnings: Vec<String>,
}

impl Tree {
    fn of(nodes: &[Node]) -> Tree {
        let by_id: HashMap<i64, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
        let mut warnings = Vec::new();
        let mut orphans = 0;
        let parent: Vec<Option<usize>> = nodes
            .iter()
            .map(|n| {
                let p = n.parent.and_then(|p| by_id.get(&p).copied());
                if n.parent.is_some() && p.is_none() {
                    orphans += 1;
                }
                p
            })
            .collect();
        if orphans > 0 {
            warnings.push(format!(
                "{orphans} tree nodes point to a missing parent; each starts a path of its own"
            ));
        }
        let mut has_child = vec![false; nodes.len()];
        for p in parent.iter().flatten() {
            has_child[*p] = true;
        }
        let leaves: Vec<usize> = (0..nodes.len()).filter(|&i| !has_child[i]).collect();
        // As `loadSession`: the newest leaf, the larger id on a tie.
        let active_leaf = leaves
            .iter()
            .copied()
            .max_by_key(|&i| (nodes[i].created, nodes[i].id))
            .or_else(|| {
                // Every node has a child: the links loop. Start from the last node.
                (!nodes.is_empty()).then(|| nodes.len() - 1)
            });
        let mut cycle = false;
        let active = match active_leaf {
            Some(l) => path_to(l, &parent, &mut cycle),
            None => Vec::new(),
        };
        let mut on_active = vec![false; nodes.len()];
        for &i in &active {
            on_active[i] = true;
        }
        let branches: Vec<(usize, Vec<usize>)> = leaves
            .iter()
            .filter(|&&l| !on_active[l])
            .map(|&l| (l, path_to(l, &parent, &mut cycle)))
            .collect();
        if cycle {
            warnings.push("the tree nodes' parent links loop; the loop was cut".into());
        }
        let mut shown = on_active.clone();
        for i in branches.iter().flat_map(|(_, p)| p) {
            shown[*i] = true;
        }
        let lost = shown.iter().filter(|s| !**s).count();
        if lost > 0 {
            warnings.push(format!(
                "{lost} tree nodes lead to no leaf (their parent links loop) and are not shown"
            ));
        }
        Tree {
            active,
            on_active,
            branches,
            warnings,
        }
    }
}

/// The path from the root to `leaf`, a loop in the parent links cut where it closes.
fn path_to(leaf: usize, parent: &[Option<usize>], cycle: &mut bool) -> Vec<usize> {
    let mut seen = HashSet::new();
    let mut path = Vec::new();
    let mut cur = Some(leaf);
    while let Some(i) = cur {
        if !seen.insert(i) {
            *cycle = true;
            break;
        }
        path.push(i);
        cur = parent[i];
    }
    path.reverse();
    path
}

/// One node row: its item's payload as messages.
fn node(row: sqlite::Row<'_>, notes: &mut Notes) -> Node {
    let id = row.get("id").int().unwrap_or(0);
    let created = row.get("created_at").time();
    let model = model_name(row.get("model_json"), id, notes);
    let mut n = Node {
        id,
        parent: row.get("parent_id").int(),
        created,
        model,
        messages: Vec::new(),
    };
    let event = |text: &str| Message {
        role: Role::System,
        kind: MessageKind::Event,
        content: text.to_string(),
        timestamp: created,
        native_id: Some(id.to_string()),
        ..Message::default()
    };
    if let Some(json) = row.get("ir").str() {
        let versions = Versions {
            seen: &mut notes.ir_version,
            unknown: &mut notes.versions,
        };
        n.messages = ir_messages(json, &n, &mut notes.unparsed, versions);
    } else if let Some(text) = row.get("note").text() {
        n.messages.push(event(&text));
    } else if row.get("request_failed_id") != &Cell::Null {
        n.messages.push(event("Request failed."));
    } else if row.get("compaction_failed_id") != &Cell::Null {
        n.messages.push(event("Compaction failed."));
    } else {
        let problem = if row.get("item") == &Cell::Null {
            "its history item is missing"
        } else {
            "its history item has no payload"
        };
        notes
            .unparsed
            .note("tree nodes", problem, || format!("node {id}"));
    }
    n
}

/// Where [`ir_messages`] records the IR versions it met.
struct Versions<'n> {
    seen: &'n mut Option<String>,
    unknown: &'n mut BTreeMap<(&'static str, String), usize>,
}

/// The model named by a `model_json`; `None` for items before 0006 and for text that is not
/// a model JSON (counted).
fn model_name(cell: &Cell, node: i64, notes: &mut Notes) -> Option<String> {
    let text = cell.str()?;
    if text == NO_MODEL || text.trim().is_empty() {
        return None;
    }
    match serde_json::from_str::<ModelJson>(text) {
        Ok(m) => {
            let v = m.version.str().unwrap_or("(none)");
            if v != MODEL_VERSION {
                *notes
                    .versions
                    .entry(("model_json values", v.to_string()))
                    .or_default() += 1;
            }
            m.model.0.and_then(|m| m.model.nonempty())
        }
        Err(e) => {
            notes.unparsed.note("model_json values", "not JSON", || {
                format!("node {node}: {e}")
            });
            None
        }
    }
}

/// `[image: image/png, 12.3 KB] <path>`.
fn image_placeholder(img: &Image) -> String {
    let size = img
        .size_bytes
        .f64()
        .filter(|n| *n >= 0.0)
        .map(|n| n as usize);
    let ph = model::placeholder("image", img.mime_type.str(), size);
    match img.file_path.str().filter(|p| !p.is_empty()) {
        Some(p) => format!("{ph} {p}"),
        None => ph,
    }
}

/// The text of content parts, one part a line (as Octofriend's `contentToText`), images as
/// placeholders; a plain string as it is.
fn parts_text(c: &kit::Content<'_, Part<'_>>, unparsed: &mut Unparsed, node: i64) -> String {
    let mut lines: Vec<Cow<str>> = Vec::new();
    match c {
        kit::Content::Text(t) => lines.push(Cow::Borrowed(t.as_ref())),
        kit::Content::Blocks(items) => {
            for item in items {
                match item {
                    kit::Item::Text(t) => lines.push(Cow::Borrowed(t.as_ref())),
                    kit::Item::Block(p) => match p.ty.str() {
                        Some("text") => lines.push(Cow::Borrowed(p.content.str().unwrap_or(""))),
                        Some("image") => lines.push(Cow::Owned(match &p.image.0 {
                            Some(img) => image_placeholder(img),
                            None => "[image]".into(),
                        })),
                        other => {
                            let ty = other.unwrap_or("(none)").to_string();
                            unparsed.note(
                                "content parts",
                                &format!("unknown part type {ty}"),
                                || format!("node {node}"),
                            );
                            lines.push(Cow::Owned(format!("[{ty}]")));
                        }
                    },
                    kit::Item::Other => {}
                }
            }
        }
        kit::Content::Null => {}
        kit::Content::Other(v) => lines.push(Cow::Owned(v.to_string())),
    }
    lines.join("\n")
}

/// A tool call as Octofriend records it; a malformed request keeps the name and arguments
/// the model sent.
fn tool_call(c: &Call) -> ToolCall {
    let (name, input) = match (c.ty.str(), &c.call.0) {
        (Some("malformed-tool-request"), Some(m)) => {
            let raw = m.original.0.as_ref();
            (
                raw.and_then(|r| r.name.str()).unwrap_or_default(),
                raw.and_then(|r| r.arguments.clone()).unwrap_or(Value::Null),
            )
        }
        _ => (
            c.name.str().unwrap_or_default(),
            c.original.clone().unwrap_or(Value::Null),
        ),
    };
    ToolCall {
        tool_call_id: c.tool_call_id.str().unwrap_or_default().to_string(),
        tool_name: name.to_string(),
        input,
        ..ToolCall::default()
    }
}

/// The messages of one `llm_irs` row.
fn ir_messages(json: &str, n: &Node, unparsed: &mut Unparsed, v: Versions<'_>) -> Vec<Message> {
    let base = Message {
        timestamp: n.created,
        native_id: Some(n.id.to_string()),
        ..Message::default()
    };
    let raw_context = |label: &str| Message {
        role: Role::System,
        kind: MessageKind::Context,
        label: Some(label.to_string()),
        content: kit::raw_text(json.as_bytes()),
        ..base.clone()
    };
    let env: Envelope = match serde_json::from_str(json) {
        Ok(e) => e,
        Err(e) => {
            let first = || format!("node {}: {e}", n.id);
            unparsed.note("llm_irs rows", "json is not JSON", first);
            return vec![raw_context("unparsed llm_ir")];
        }
    };
    let version = env.version.str().unwrap_or("(none)");
    if version == IR_VERSION {
        v.seen.get_or_insert_with(|| IR_VERSION.to_string());
    } else {
        *v.unknown
            .entry(("llm_irs rows", version.to_string()))
            .or_default() += 1;
    }
    let Some(ir) = env.ir.0 else {
        unparsed.note("llm_irs rows", "no `ir` object", || {
            format!("node {}", n.id)
        });
        return vec![raw_context("unparsed llm_ir")];
    };
    let answered = |output: String, is_error: bool| {
        let call = ir.tool_call.0.as_ref();
        Message {
            role: Role::Tool,
            tool_result: Some(ToolResult {
                tool_call_id: call
                    .and_then(|c| c.tool_call_id.str())
                    .unwrap_or_default()
                    .to_string(),
                tool_name: call
                    .and_then(|c| c.name.str())
                    .unwrap_or_default()
                    .to_string(),
                output,
                is_error,
            }),
            ..base.clone()
        }
    };
    let text = |l: &Loose| l.str().unwrap_or_default().to_string();
    let m = match ir.role.str().unwrap_or("(none)") {
        "user" => Message {
            role: Role::User,
            content: parts_text(&ir.content, unparsed, n.id),
            ..base.clone()
        },
        "assistant" => {
            let mut calls = Vec::new();
            if let kit::Content::Blocks(items) = &ir.tool_calls {
                for item in items {
                    if let kit::Item::Block(c) = item {
                        calls.push(tool_call(c));
                    }
                }
            }
            Message {
                role: Role::Assistant,
                content: parts_text(&ir.content, unparsed, n.id),
                thinking: thinking(&ir),
                tool_calls: calls,
                token_usage: ir.usage.0.as_ref().and_then(usage),
                model: n.model.clone(),
                ..base.clone()
            }
        }
        "tool-output" => answered(parts_text(&ir.content, unparsed, n.id), false),
        "file-read" | "file-mutate" => {
            let mut out = parts_text(&ir.content, unparsed, n.id);
            if let Some(img) = &ir.image.0 {
                kit::push_paragraph(&mut out, &image_placeholder(img));
            }
            answered(out, false)
        }
        "tool-runtime-error" => answered(text(&ir.error), true),
        "tool-validation-error" => {
            let mut out = text(&ir.error);
            if ir.aborted.is_true() {
                out = format!("Aborted. {out}");
            }
            answered(out.trim_end().to_string(), true)
        }
        "tool-skip-output" => answered(format!("Skipped: {}", text(&ir.reason)), true),
        "tool-reject" => answered("Rejected by the user.".into(), true),
        "tool-parse-error" => {
            let req = ir.malformed_request.0.as_ref();
            let name = req
                .and_then(|r| r.call.0.as_ref())
                .and_then(|c| c.original.0.as_ref())
                .and_then(|o| o.name.str());
            Message {
                role: Role::Tool,
                tool_result: Some(ToolResult {
                    tool_call_id: req
                        .and_then(|r| r.tool_call_id.str())
                        .unwrap_or_default()
                        .to_string(),
                    tool_name: name.unwrap_or_default().to_string(),
                    output: req.map(|r| text(&r.error)).unwrap_or_default(),
                    is_error: true,
                }),
                ..base.clone()
            }
        }
        "checkpoint" | "lowered-checkpoint" => Message {
            role: Role::System,
            kind: MessageKind::CompactionSummary,
            content: parts_text(&ir.content, unparsed, n.id),
            ..base.clone()
        },
        other => {
            let first = || format!("node {}: `{other}`", n.id);
            unparsed.note("llm_irs rows", "unknown role", first);
            return vec![raw_context("unparsed llm_ir")];
        }
    };
    vec![m]
}

/// The visible reasoning (`reasoningContent`, else the text of the Anthropic thinking
/// blocks), followed by the sealed-reasoning placeholder when part of it is stored only
/// encrypted (`openai.encryptedReasoningContent`, of which `reasoningContent` is at most a
/// summary) or redacted (`redacted_thinking` blocks).
fn thinking(ir: &Ir) -> Option<String> {
    let mut sealed = ir.openai.0.as_ref().is_some_and(|o| {
        o.encrypted_reasoning_content
            .str()
            .is_some_and(|e| !e.is_empty())
    });
    let mut texts = Vec::new();
    if let Some(kit::Content::Blocks(blocks)) = ir.anthropic.0.as_ref().map(|a| &a.thinking_blocks)
    {
        for b in blocks {
            if let kit::Item::Block(b) = b {
                match b.ty.str() {
                    Some("thinking") => {
                        texts.extend(b.thinking.str().filter(|t| !t.trim().is_empty()))
                    }
                    _ => sealed = true,
                }
            }
        }
    }
    let visible = match ir.reasoning_content.str().filter(|r| !r.trim().is_empty()) {
        Some(r) => Some(r.to_string()),
        None => (!texts.is_empty()).then(|| texts.join("\n\n")),
    };
    match (visible, sealed) {
        (Some(mut v), true) => {
            kit::push_paragraph(&mut v, model::SEALED_THINKING);
            Some(v)
        }
        (v, false) => v,
        (None, true) => Some(model::SEALED_THINKING.to_string()),
    }
}

/// A reply's usage: input less cache reads, cache reads, output; `None` when it used nothing
/// (a reply cut before the provider counted).
fn usage(u: &Usage) -> Option<TokenUsage> {
    let (cached, uncached) = match &u.input.0 {
        Some(i) => (i.cached, i.uncached.max(i.total.saturating_sub(i.cached))),
        None => (0, 0),
    };
    let t = TokenUsage {
        input_tokens: uncached,
        output_tokens: u.output,
        cached_tokens: cached,
        ..TokenUsage::default()
    };
    (!t.is_zero()).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn node_of(id: i64, parent: Option<i64>, created: i64) -> Node {
        Node {
            id,
            parent,
            created: DateTime::from_timestamp_millis(created),
            model: None,
            messages: Vec::new(),
        }
    }

    #[test]
    fn the_root_is_under_local_share_whatever_xdg_says() {
        let mut env = Env::at_home(Path::new("/h"));
        env.vars.insert("XDG_DATA_HOME".into(), "/x".into());
        let roots: Vec<(PathBuf, String)> = candidates(&env)
            .into_iter()
            .map(|r| (r.path, r.how))
            .collect();
        assert_eq!(
            roots,
            [(
                PathBuf::from("/h/.local/share/octofriend/sqlite.db"),
                "default".to_string()
            )]
        );
    }

    /// As `loadSession`: the newest leaf is active, the larger id wins a tie, and every
    /// other leaf is a branch with its whole path.
    #[test]
    fn the_newest_leaf_is_active_and_the_others_are_branches() {
        // 1 - 2 - 3 - 4
        //       \ 5 - 6      (6 and 4 written at the same ms; 6 has the larger id)
        //   \ 7              (older)
        let nodes = vec![
            node_of(1, None, 10),
            node_of(2, Some(1), 20),
            node_of(3, Some(2), 30),
            node_of(4, Some(3), 60),
            node_of(5, Some(2), 50),
            node_of(6, Some(5), 60),
            node_of(7, Some(1), 5),
        ];
        let t = Tree::of(&nodes);
        let ids = |p: &[usize]| p.iter().map(|&i| nodes[i].id).collect::<Vec<_>>();
        assert_eq!(ids(&t.active), [1, 2, 5, 6]);
        let branches: Vec<(i64, Vec<i64>)> = t
            .branches
            .iter()
            .map(|(l, p)| (nodes[*l].id, ids(p)))
            .collect();
        assert_eq!(branches, [(4, vec![1, 2, 3, 4]), (7, vec![1, 7])]);
        assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    }

    #[test]
    fn a_loop_and_a_missing_parent_cost_warnings_not_the_nodes() {
        let nodes = vec![
            node_of(1, Some(2), 10),
            node_of(2, Some(1), 20),
            node_of(3, Some(99), 30),
        ];
        let t = Tree::of(&nodes);
        assert_eq!(t.active, [2]);
        assert_eq!(t.warnings.len(), 2, "{:?}", t.warnings);
        assert!(t.warnings[0].contains("missing parent"), "{:?}", t.warnings);
        assert!(
            t.warnings[1].contains("2 tree nodes lead to no leaf"),
            "{:?}",
            t.warnings
        );
        let nodes = vec![node_of(1, Some(2), 10), node_of(2, Some(1), 20)];
        let t = Tree::of(&nodes);
        assert_eq!(t.active.len(), 2);
        assert!(t.warnings[0].contains("loop"), "{:?}", t.warnings);
    }

    #[test]
    fn images_are_measured_never_decoded_and_usage_drops_cache_reads() {
        let json = serde_json::json!({"version": IR_VERSION, "ir": {"role": "user", "content": [
            {"type": "text", "content": "look"},
            {"type": "image", "image": {"mimeType": "image/png", "base64Data": "AAAA",
              "dataUrl": "data:image/png;base64,AAAA", "filePath": "/tmp/s.png", "sizeBytes": 12345}}
        ]}})
        .to_string();
        let n = node_of(1, None, 10);
        let mut un = Unparsed::default();
        let (mut seen, mut unknown) = (None, BTreeMap::new());
        let v = Versions {
            seen: &mut seen,
            unknown: &mut unknown,
        };
        let m = ir_messages(&json, &n, &mut un, v);
        assert_eq!(m[0].content, "look\n[image: image/png, 12.3 KB] /tmp/s.png");
        let u: Usage = serde_json::from_str(
            r#"{"input": {"cached": 30, "uncached": 70, "total": 100}, "output": 5}"#,
        )
        .expect("usage");
        let t = usage(&u).expect("usage");
        assert_eq!(
            (t.input_tokens, t.cached_tokens, t.output_tokens),
            (70, 30, 5)
        );
        let zero: Usage = serde_json::from_str(
            r#"{"input": {"cached": 0, "uncached": 0, "total": 0}, "output": 0}"#,
        )
        .expect("usage");
        assert_eq!(usage(&zero), None);
    }
}
