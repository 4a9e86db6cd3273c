//! Crush (Charm): one SQLite database per project, `<project>/.crush/crush.db`.
//!
//! Learnt from Crush's own source, github.com/charmbracelet/crush at commit
//! `37f36e93824e5c4f892e4a817f7f628e2682fe14`: the schema is the goose migrations in
//! `internal/db/migrations/` (written out in `fixtures/schema/crush-20260127000000.sql`), the
//! parts format `internal/message/message.go` (`marshalParts`) and
//! `internal/message/content.go`, the registry `internal/projects/projects.go`, usage
//! `internal/agent/agent.go` (`updateSessionUsage`) and `internal/agent/coordinator.go`
//! (`updateParentSessionCost`), child ids `internal/session/session.go`.
//!
//! **Where.** Crush keeps a project's sessions in its data directory, `.crush` in the
//! working directory unless `options.data_directory` says otherwise, and records every
//! project it ran in (`path`, `data_dir`) in `projects.json` beside its global config:
//! `$CRUSH_GLOBAL_DATA`, else `$XDG_DATA_HOME/crush`, else `~/.local/share/crush`. A root is
//! that global directory (its `projects.json` is read at each listing, so a new project
//! shows without a restart), a project or data directory, or a `crush.db` itself; projects
//! holding ATSF threads ([`super::atsf`]'s discovery) are looked in too, and the git
//! worktrees of every project found. Only `projects.json` and `crush.db` are ever opened:
//! `crush.json` beside them holds provider keys and is never read.
//!
//! **Reading.** Through [`super::sqlite`] (read-only, WAL-aware): one read transaction
//! copies the `sessions` row, its `messages` rows and those of its child sessions; parsing
//! happens after. Only `sessions`, `messages` and `goose_db_version` are selected from; the
//! `files` (file snapshots for undo) and `read_files` tables are not sessions and are not
//! shown. A session's version is its own rows and its children's.
//!
//! **Messages.** `messages.parts` is a JSON array of `{type, data}`: `text`, `reasoning`
//! (thinking), `tool_call` (`input` is the arguments as a JSON string), `tool_result` (in a
//! `tool` message, paired by `tool_call_id`), `image_url` and `binary` (placeholders),
//! `shell_command` (a `!` command the user ran: an execution), `finish` (why the turn ended;
//! an error or cancel is shown as an event). The session's `summary_message_id` (and the
//! newer `is_summary_message`) marks the compaction summary. Anything unreadable is kept
//! as stored in the transcript and counted in the warnings.
//!
//! **Usage.** Crush records no usage per message. Each session row keeps `prompt_tokens`
//! and `completion_tokens` (overwritten by each API call: the latest call's) and `cost`
//! (added to by each call, and by each child session's cost when the child finishes). So
//! the session's usage is the row's tokens as recorded, and its own cost is `cost` less its
//! direct children's `cost`: each call counted once, in the session that made it.
//!
//! **Links.** A child session (`parent_session_id`, the agent tool) is a subagent nested
//! in its parent, not listed at the top level; its id is the spawning tool call's id
//! (`<message id>$$<tool call id>` in newer versions), which names the call.

use super::kit::{self, SessionBuilder};
use super::sqlite::{self, Cell, Reader, Rows, Table};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    self, Agent, Message, MessageKind, Role, Session, Source, Subagent, TokenUsage, ToolCall,
};
use crate::names;
use rusqlite::Connection;
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Children nested deeper than this are not read (a cycle guard).
const MAX_DEPTH: usize = 8;
/// Largest `projects.json` read.
const MAX_REGISTRY: u64 = 4 << 20;
/// Projects of the registry looked at, at most.
const MAX_PROJECTS: usize = 4096;

/// The global data directory (holding `projects.json`) and the data directories of the
/// projects it records, then the projects with ATSF threads that hold a `.crush/crush.db`.
/// Each data directory is a root of its own, so the mount watches it.
pub fn candidates(env: &Env) -> Vec<Root> {
    let (global, how) = match env.var("CRUSH_GLOBAL_DATA").filter(|v| !v.is_empty()) {
        Some(v) => (env.expand(v), "CRUSH_GLOBAL_DATA"),
        None if env.var("XDG_DATA_HOME").is_some() => {
            (env.xdg_data_home().join("crush"), "XDG_DATA_HOME")
        }
        None => (env.xdg_data_home().join("crush"), "default"),
    };
    let mut out = expand(Root::new(Agent::Crush, global, how));
    for r in super::atsf::candidates(env) {
        if let Some(project) = r.path.parent().and_then(Path::parent) {
            if project.join(".crush/crush.db").is_file() {
                let r = Root::new(Agent::Crush, project.to_path_buf(), "atsf-project");
                out.extend(expand(r));
            }
        }
    }
    let mut seen = HashSet::new();
    out.retain(|r| seen.insert(r.path.clone()));
    out
}

/// Roots given by hand (`--store crush=…`): a database, a data directory, a project (its
/// `.crush`), or a global data directory (its registry's projects).
pub fn given_roots(roots: Vec<Root>) -> Vec<Root> {
    let mut out: Vec<Root> = roots.into_iter().flat_map(expand).collect();
    let mut seen = HashSet::new();
    out.retain(|r| seen.insert(r.path.clone()));
    out
}

/// What one root stands for: a database or a data directory as it is; a project as its
/// `.crush` and its git worktrees' `.crush`; a directory holding `projects.json` as itself
/// (for the registry) and every data directory the registry records.
fn expand(root: Root) -> Vec<Root> {
    let p = root.path.clone();
    if p.is_file() || p.join("crush.db").is_file() {
        return vec![root];
    }
    let how = root.how.clone();
    let mk = |path: PathBuf| Root::new(Agent::Crush, path, &how);
    let mut out = Vec::new();
    let data = p.join(".crush");
    if data.join("crush.db").is_file() {
        out.push(mk(data));
    }
    for w in worktrees(&p, &mut Glance::default()) {
        out.push(mk(w.join(".crush")));
    }
    let reg = registry(&p.join("projects.json"));
    if !reg.is_empty() || out.is_empty() {
        out.insert(0, root);
    }
    let listed = |path: PathBuf| Root::new(Agent::Crush, path, "projects.json");
    for (project, data) in reg {
        out.push(listed(data));
        let linked = worktrees(&project, &mut Glance::default());
        out.extend(linked.map(|w| listed(w.join(".crush"))));
    }
    out.retain(|r| r.path.is_file() || r.path.join("crush.db").is_file() || r.path == p);
    out
}

pub struct CrushStore {
    base: Base,
    reader: Reader,
}

impl CrushStore {
    pub fn new(roots: Vec<Root>) -> CrushStore {
        CrushStore {
            base: Base::new(Agent::Crush, roots),
            reader: Reader::new(),
        }
    }

    /// `(root index, database)` of every database the roots lead to, each once.
    fn places(&self) -> Vec<(usize, PathBuf)> {
        self.places_reading(&mut Glance::default())
    }

    /// [`Self::places`], noting in `read` what finding the databases read: the registry
    /// files, the worktree lists with their `gitdir` files, and for every database looked
    /// for, the directory it would be in (or the nearest one that is there), and the
    /// database with its journals.
    fn places_reading(&self, read: &mut Glance) -> Vec<(usize, PathBuf)> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            let mut dbs = Vec::new();
            if root.path.is_file() {
                dbs.push(root.path.clone());
            } else {
                dbs.extend(
                    data_dirs(&root.path, read)
                        .into_iter()
                        .map(|d| d.join("crush.db")),
                );
                let file = root.path.join("projects.json");
                read.files.push(file.clone());
                for (project, data) in registry(&file) {
                    dbs.push(data.join("crush.db"));
                    dbs.extend(worktrees(&project, read).map(|w| w.join(".crush/crush.db")));
                }
            }
            for db in dbs {
                read.dirs.extend(db.parent().and_then(kit::nearest_dir));
                read.files.extend(sqlite::with_journals(&db));
                if db.is_file() && seen.insert(db.canonicalize().unwrap_or_else(|_| db.clone())) {
                    out.push((i, db));
                }
            }
        }
        out
    }
}

/// The data directories a directory root stands for: itself (a data directory), its
/// `.crush`, and the `.crush` of its git worktrees.
fn data_dirs(dir: &Path, read: &mut Glance) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf(), dir.join(".crush")];
    let project = if kit::file_name(dir) == ".crush" {
        dir.parent().unwrap_or(dir)
    } else {
        dir
    };
    out.extend(worktrees(project, read).map(|w| w.join(".crush")));
    out
}

/// Linked git worktrees of `project`: `<project>/.git/worktrees/<name>/gitdir` holds
/// `<worktree>/.git`. What is read is noted in `read`: the worktree list (or the nearest
/// directory there, where it would appear) and each `gitdir`.
fn worktrees(project: &Path, read: &mut Glance) -> impl Iterator<Item = PathBuf> {
    let list = project.join(".git").join("worktrees");
    read.dirs.extend(kit::nearest_dir(&list));
    let entries = kit::subdirs(&list);
    read.files.extend(entries.iter().map(|e| e.join("gitdir")));
    entries.into_iter().filter_map(|e| {
        let mut f = kit::open_file(&e.join("gitdir")).ok()?;
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(&mut f, 4096), &mut s).ok()?;
        Path::new(s.trim()).parent().map(Path::to_path_buf)
    })
}

/// `(project path, data dir)` of every project `projects.json` records; a relative
/// `data_dir` is relative to the project, an empty one is `.crush`.
fn registry(file: &Path) -> Vec<(PathBuf, PathBuf)> {
    if !file.is_file() {
        return Vec::new();
    }
    let v = match kit::read_json(file, "crush projects.json", MAX_REGISTRY) {
        Ok(v) => v,
        Err(e) => {
            log::warn!("crush: {e}");
            return Vec::new();
        }
    };
    let list = v.get("projects").and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .take(MAX_PROJECTS)
        .filter_map(|p| {
            let path = PathBuf::from(kit::str_field(p, "path").filter(|s| !s.is_empty())?);
            let data = match kit::str_field(p, "data_dir").filter(|s| !s.is_empty()) {
                Some(d) => path.join(d),
                None => path.join(".crush"),
            };
            Some((path, data))
        })
        .collect()
}

impl Store for CrushStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn problems(&self) -> Vec<String> {
        let dbs = self.places();
        self.reader
            .problems(dbs.iter().map(|(_, db)| db.as_path()), list_db)
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (root, db) in self.places() {
            let Some(rows) = self.reader.list("crush", &db, list_db) else {
                continue;
            };
            let ids: HashSet<&str> = rows.iter().map(|(id, _)| id.as_str()).collect();
            for (id, parent) in &rows {
                // A child is shown inside its parent, unless the parent is gone.
                if parent
                    .as_deref()
                    .is_some_and(|p| ids.contains(p) && p != id)
                {
                    continue;
                }
                out.push(sqlite::row_session(id, &db, root));
            }
        }
        out
    }

    /// What finding the databases read ([`CrushStore::places_reading`]): each registry
    /// `projects.json`, each worktree list and `gitdir`, and every database looked for with
    /// its journals and the directory it is (or would be) in. A write to a database lands
    /// in it or its journal, and a database appearing moves its directory, so this stands
    /// for every session of every database.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        self.places_reading(&mut g);
        Some(g)
    }

    fn load(&self, listed: &Listed) -> Session {
        let db = &listed.path;
        let id = listed.key.as_deref().unwrap_or(&listed.id);
        sqlite::load_session(
            &self.reader,
            db,
            id,
            sqlite::Access::InPlace,
            |c| {
                let t = Tables::probe(c)?;
                let version = schema_version(c)?;
                Ok((fetch(c, &t, id, 0, &mut HashSet::new())?, version))
            },
            |(raw, version)| build(&raw, db, &version),
            || {
                let mut s = Session::new(Agent::Crush, id);
                s.source = source(db, None);
                s
            },
        )
    }

    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        sqlite::versions_by_db(
            &self.reader,
            listed,
            |l| l.key.as_deref(),
            Tables::probe,
            session_version,
        )
    }
}

fn source(db: &Path, version: Option<String>) -> Source {
    Source {
        paths: vec![db.to_path_buf()],
        format: "crush-sqlite".into(),
        format_version: version,
    }
}

/// `(id, parent_session_id)` of every session.
fn list_db(conn: &Connection) -> rusqlite::Result<Vec<(String, Option<String>)>> {
    let t = Table::probe(conn, "sessions")?;
    if !t.has("id") {
        return Err(rusqlite::Error::InvalidColumnName(
            "no `sessions` table: not a Crush database".into(),
        ));
    }
    let rows = Rows::fetch(conn, &t, &["id", "parent_session_id"], "", [])?;
    Ok(rows
        .iter()
        .filter_map(|r| Some((r.get("id").text()?, r.get("parent_session_id").non_empty())))
        .collect())
}

/// The newest applied goose migration: the schema's version.
fn schema_version(c: &Connection) -> rusqlite::Result<Option<String>> {
    let t = Table::probe(c, "goose_db_version")?;
    if !t.has("version_id") {
        return Ok(None);
    }
    let rows = Rows::query(
        c,
        "SELECT max(version_id) FROM goose_db_version",
        vec!["v".into()],
        [],
    )?;
    Ok(rows
        .first()
        .and_then(|r| r.get("v").int())
        .filter(|v| *v > 0)
        .map(|v| v.to_string()))
}

struct Tables {
    sessions: Table,
    messages: Table,
}

impl Tables {
    fn probe(c: &Connection) -> rusqlite::Result<Tables> {
        Ok(Tables {
            sessions: Table::probe(c, "sessions")?,
            messages: Table::probe(c, "messages")?,
        })
    }
}

const SESSION_COLUMNS: [&str; 9] = [
    "id",
    "parent_session_id",
    "title",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "created_at",
    "updated_at",
    "summary_message_id",
];

const MESSAGE_COLUMNS: [&str; 8] = [
    "id",
    "role",
    "parts",
    "model",
    "provider",
    "created_at",
    "updated_at",
    "is_summary_message",
];

/// A session's version: its row, its messages (count, newest `updated_at`, total length
/// of `parts`, which grows while a reply streams), then the same for its children.
fn session_version(conn: &Connection, t: &Tables, id: &str) -> rusqlite::Result<u64> {
    let messages = (t.messages.has("session_id") && t.messages.has("parts")).then(|| {
        let updated = if t.messages.has("updated_at") {
            "max(updated_at)"
        } else {
            "NULL"
        };
        format!(
            "SELECT count(*), {updated}, total(length(parts)), max(id) FROM messages \
             WHERE session_id = ?1"
        )
    });
    sqlite::session_tree_version(conn, &t.sessions, &SESSION_COLUMNS, messages.as_deref(), id)
}

// ---------------------------------------------------------------------------------------
// Raw rows

type Raw = sqlite::SessionRows;
use sqlite::cell;

/// Copy one session's rows and its children's (recursively) out of the database.
fn fetch(
    c: &Connection,
    t: &Tables,
    id: &str,
    depth: usize,
    seen: &mut HashSet<String>,
) -> rusqlite::Result<Raw> {
    let message_order = if t.messages.has("created_at") {
        "ORDER BY created_at, rowid"
    } else {
        "ORDER BY rowid"
    };
    let q = sqlite::TreeQuery {
        sessions: &t.sessions,
        session_columns: &SESSION_COLUMNS,
        messages: &t.messages,
        message_columns: &MESSAGE_COLUMNS,
        content_column: "parts",
        message_order,
        max_depth: MAX_DEPTH,
    };
    sqlite::fetch_session_tree(c, &q, id, depth, seen)
}

// ---------------------------------------------------------------------------------------
// Parsing

/// The recorded `cost` of a session row (0 without one).
fn row_cost(raw: &Raw) -> f64 {
    raw.session
        .as_deref()
        .and_then(|r| cell(r, &SESSION_COLUMNS, "cost").real())
        .filter(|c| c.is_finite() && *c > 0.0)
        .unwrap_or(0.0)
}

/// The names Crush gives a session before (or instead of) a generated title: the TUI
/// creates sessions as `New Session`, and `DefaultSessionName` (`Untitled Session`,
/// `internal/agent/agent.go`) is what a failed title generation leaves.
const PLACEHOLDER_TITLES: &[&str] = &["New Session", "Untitled Session"];

fn build(raw: &Raw, db: &Path, version: &Option<String>) -> Session {
    let mut b = SessionBuilder::new(Agent::Crush, raw.id.clone());
    b.s.source = source(db, version.clone());
    b.s.warnings.extend(raw.warnings.iter().cloned());
    // `<project>/.crush/crush.db`: the project is the working directory.
    b.s.cwd = db
        .parent()
        .filter(|d| kit::file_name(d) == ".crush")
        .and_then(Path::parent)
        .map(|p| p.to_string_lossy().into_owned());
    let mut summary_id = None;
    if let Some(row) = raw.session.as_deref() {
        let get = |n: &str| cell(row, &SESSION_COLUMNS, n);
        b.title_or_placeholder(get("title").non_empty(), |t| {
            PLACEHOLDER_TITLES.contains(&t)
        });
        b.s.created_at = get("created_at").time();
        b.s.updated_at = get("updated_at").time();
        summary_id = get("summary_message_id").non_empty();
        let usage = TokenUsage {
            input_tokens: get("prompt_tokens").int().unwrap_or(0).max(0) as u64,
            output_tokens: get("completion_tokens").int().unwrap_or(0).max(0) as u64,
            ..TokenUsage::default()
        };
        if !usage.is_zero() {
            b.s.reported_usage = Some(usage);
        }
        let children: f64 = raw.children.iter().map(row_cost).sum();
        let own = row_cost(raw) - children;
        if own > 1e-12 {
            b.s.reported_cost = Some((own, false));
        }
    }
    for row in &raw.messages {
        message(&mut b, row, summary_id.as_deref());
    }
    let parent_uid = model::unified_id(Agent::Crush, &raw.id);
    let mut taken = HashSet::new();
    for child in &raw.children {
        let mut c = build(child, db, version);
        c.parent = Some(parent_uid.clone());
        let call = child
            .id
            .rsplit("$$")
            .next()
            .unwrap_or(&child.id)
            .to_string();
        let called =
            b.s.messages
                .iter()
                .flat_map(|m| &m.tool_calls)
                .any(|tc| tc.tool_call_id == call);
        b.s.subagents.push(Subagent {
            name: kit::unique_name(&mut taken, &names::escape(&child.id)),
            unified_id: None,
            description: c.title.clone(),
            tool_call_id: called.then_some(call),
            session: Some(Box::new(c)),
        });
    }
    b.finish()
}

/// One `messages` row.
fn message(b: &mut SessionBuilder, row: &[Cell], summary_id: Option<&str>) {
    let get = |n: &str| cell(row, &MESSAGE_COLUMNS, n);
    let mid = get("id").text().unwrap_or_default();
    let ts = get("created_at").time();
    let role = get("role").text().unwrap_or_default();
    let text = get("parts").text().unwrap_or_default();
    let parts = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(a)) => a,
        Ok(_) => {
            let first = || format!("message {mid}");
            b.unparsed(
                "messages",
                "parts is not a JSON array",
                first,
                "message",
                &text,
                ts,
            );
            return;
        }
        Err(e) => {
            let first = || format!("message {mid}: {e}");
            b.unparsed("messages", "parts is not JSON", first, "message", &text, ts);
            return;
        }
    };
    let role = match role.as_str() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        "system" => Role::System,
        other => {
            let first = || format!("message {mid}: `{other}`");
            b.unparsed("messages", "unknown role", first, "message", &text, ts);
            return;
        }
    };
    let summary = summary_id == Some(mid.as_str()) || get("is_summary_message").int() == Some(1);
    let mut m = Message {
        role,
        kind: if summary {
            MessageKind::CompactionSummary
        } else if role == Role::System {
            MessageKind::Context
        } else {
            MessageKind::Normal
        },
        label: (role == Role::System).then(|| "system prompt".to_string()),
        timestamp: ts,
        model: get("model").non_empty(),
        native_id: Some(mid.clone()),
        ..Message::default()
    };
    // A reply that only failed becomes an event and names no model: the session keeps it.
    if m.model.is_some() {
        b.s.set_model.clone_from(&m.model);
    }
    let mut texts: Vec<String> = Vec::new();
    let mut thinking: Vec<String> = Vec::new();
    let mut after: Vec<Message> = Vec::new();
    let mut results: Vec<(String, String, String, bool)> = Vec::new();
    for part in &parts {
        let data = part.get("data").unwrap_or(&Value::Null);
        let s = |k: &str| kit::str_field(data, k).unwrap_or_default().to_string();
        match kit::str_field(part, "type").unwrap_or_default() {
            "text" => texts.push(s("text")),
            "reasoning" => thinking.push(s("thinking")),
            "image_url" => texts.push(kit::data_url_placeholder(&s("url"))),
            "binary" => {
                let kind = if s("MIMEType").starts_with("image/") {
                    "image"
                } else {
                    "attachment"
                };
                let mime = s("MIMEType");
                let p = kit::base64_placeholder(
                    kind,
                    Some(mime.as_str()).filter(|m| !m.is_empty()),
                    kit::str_field(data, "Data"),
                );
                let path = s("Path");
                texts.push(if path.is_empty() {
                    p
                } else {
                    format!("{p} {path}")
                });
            }
            "tool_call" => {
                let id = s("id");
                let input = kit::call_arguments(&s("input"), "tool calls", &mut b.unparsed, || {
                    format!("message {mid}, call {id}")
                });
                m.tool_calls.push(ToolCall {
                    tool_call_id: id,
                    tool_name: s("name"),
                    input,
                    ..ToolCall::default()
                });
            }
            "tool_result" => {
                let mut out = s("content");
                if out.is_empty() && !s("data").is_empty() {
                    let mime = s("mime_type");
                    out = kit::base64_placeholder(
                        "attachment",
                        Some(mime.as_str()).filter(|m| !m.is_empty()),
                        kit::str_field(data, "data"),
                    );
                }
                let err = data.get("is_error").and_then(Value::as_bool) == Some(true);
                results.push((s("tool_call_id"), s("name"), out, err));
            }
            "shell_command" => {
                let code = data.get("exit_code").and_then(Value::as_i64).unwrap_or(0);
                after.push(Message {
                    role: Role::User,
                    kind: MessageKind::Execution,
                    content: s("command"),
                    timestamp: ts,
                    tool_calls: vec![ToolCall {
                        tool_name: "bash".into(),
                        input: serde_json::json!({ "command": s("command") }),
                        output: Some(s("output")),
                        is_error: Some(code != 0),
                        ..ToolCall::default()
                    }],
                    ..Message::default()
                });
            }
            "finish" => {
                let reason = s("reason");
                if matches!(reason.as_str(), "error" | "canceled" | "content_filter") {
                    let detail = [s("message"), s("details")]
                        .into_iter()
                        .filter(|x| !x.is_empty())
                        .collect::<Vec<_>>()
                        .join(": ");
                    let text = if detail.is_empty() {
                        format!("turn ended: {reason}")
                    } else {
                        format!("turn ended: {reason}: {detail}")
                    };
                    after.push(Message {
                        role: Role::System,
                        kind: MessageKind::Event,
                        content: text,
                        timestamp: ts,
                        ..Message::default()
                    });
                }
            }
            other => {
                let raw = part.to_string();
                let first = || format!("message {mid}: `{other}`");
                b.unparsed("parts", "unsupported type", first, "part", &raw, ts);
            }
        }
    }
    m.content = texts.join("\n");
    if !thinking.is_empty() {
        m.thinking = Some(thinking.join("\n"));
    }
    if role == Role::Tool {
        // A `tool` message is its results, each paired with its call.
        if !m.content.is_empty() {
            m.role = Role::Assistant;
            b.push(m);
        }
        for (call, name, out, err) in results {
            b.tool_result(
                &call,
                Some(&name).filter(|n| !n.is_empty()).map(|n| n.as_str()),
                out,
                err,
                ts,
            );
        }
    } else {
        for (call, name, out, err) in results {
            m.tool_calls.push(ToolCall {
                tool_call_id: call,
                tool_name: name,
                output: Some(out),
                is_error: Some(err),
                ..ToolCall::default()
            });
        }
        let empty = m.content.is_empty() && m.thinking.is_none() && m.tool_calls.is_empty();
        if !empty {
            b.push(m);
        }
    }
    for a in after {
        b.push(a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cols: &[&str], vals: &[(&str, Cell)]) -> Vec<Cell> {
        cols.iter()
            .map(|c| {
                vals.iter()
                    .find(|(k, _)| k == c)
                    .map_or(Cell::Null, |(_, v)| v.clone())
            })
            .collect()
    }

    fn msg(id: &str, role: &str, parts: &str) -> Vec<Cell> {
        row(
            &MESSAGE_COLUMNS,
            &[
                ("id", Cell::Text(id.into())),
                ("role", Cell::Text(role.into())),
                ("parts", Cell::Text(parts.into())),
                ("created_at", Cell::Int(1_767_000_000)),
            ],
        )
    }

    #[test]
    fn the_registry_takes_relative_and_missing_data_dirs_from_the_project() {
        let dir = tempfile::tempdir().expect("tmp");
        let f = dir.path().join("projects.json");
        let text = r#"{"projects":[{"path":"/p/a","data_dir":"/d/a"},{"path":"/p/b","data_dir":"state"},
            {"path":"/p/c"},{"data_dir":"/d/none"},{"path":""}]}"#;
        std::fs::write(&f, text).expect("write");
        let got = registry(&f);
        let want: Vec<(PathBuf, PathBuf)> = [
            ("/p/a", "/d/a"),
            ("/p/b", "/p/b/state"),
            ("/p/c", "/p/c/.crush"),
        ]
        .iter()
        .map(|(p, d)| (PathBuf::from(p), PathBuf::from(d)))
        .collect();
        assert_eq!(got, want);
        std::fs::write(&f, "{not json").expect("write");
        assert!(registry(&f).is_empty());
    }

    #[test]
    fn unknown_roles_part_types_and_cut_rows_are_kept_as_stored_and_counted() {
        let raw = Raw {
            id: "s".into(),
            messages: vec![
                msg(
                    "m1",
                    "user",
                    r#"[{"type":"text","data":{"text":"kept prompt"}}]"#,
                ),
                msg(
                    "m2",
                    "critic",
                    r#"[{"type":"text","data":{"text":"odd role"}}]"#,
                ),
                msg(
                    "m3",
                    "assistant",
                    r#"[{"type":"video","data":{"url":"v.mp4"}},{"type":"text","data":{"text":"kept reply"}}]"#,
                ),
                msg("m4", "assistant", r#"[{"type":"text","data":{"text":"cut"#),
            ],
            ..Raw::default()
        };
        let s = build(&raw, Path::new("/x/.crush/crush.db"), &None);
        let texts: Vec<&str> = s.messages.iter().map(|m| m.content.as_str()).collect();
        assert!(
            texts.contains(&"kept prompt") && texts.contains(&"kept reply"),
            "{texts:?}"
        );
        for stored in ["odd role", "v.mp4", r#""text":"cut"#] {
            assert!(
                s.messages
                    .iter()
                    .any(|m| m.kind == MessageKind::Context && m.content.contains(stored)),
                "{stored} not kept: {texts:?}"
            );
        }
        let w = s.warnings.join("\n");
        assert!(
            w.contains("1 messages could not be parsed: unknown role"),
            "{w}"
        );
        assert!(
            w.contains("1 parts could not be parsed: unsupported type"),
            "{w}"
        );
        assert!(
            w.contains("1 messages could not be parsed: parts is not JSON"),
            "{w}"
        );
        assert_eq!(s.cwd.as_deref(), Some("/x"));
    }

    #[test]
    fn a_sessions_own_cost_leaves_out_what_its_children_added() {
        let sess = |id: &str, cost: f64| {
            Some(row(
                &SESSION_COLUMNS,
                &[
                    ("id", Cell::Text(id.into())),
                    ("prompt_tokens", Cell::Int(10)),
                    ("completion_tokens", Cell::Int(2)),
                    ("cost", Cell::Real(cost)),
                ],
            ))
        };
        let grandchild = Raw {
            id: "g".into(),
            session: sess("g", 0.25),
            ..Raw::default()
        };
        let child = Raw {
            id: "c".into(),
            session: sess("c", 0.75),
            children: vec![grandchild],
            ..Raw::default()
        };
        let raw = Raw {
            id: "p".into(),
            session: sess("p", 1.75),
            children: vec![child],
            ..Raw::default()
        };
        let s = build(&raw, Path::new("/x/crush.db"), &None);
        assert_eq!(s.reported_cost, Some((1.0, false)));
        let c = s.subagents[0].session.as_deref().expect("child");
        assert_eq!(c.reported_cost, Some((0.5, false)));
        let all = s.cost_with_subagents().expect("total");
        assert!((all.total_usd - 1.75).abs() < 1e-12, "{}", all.total_usd);
        assert_eq!((all.input_tokens, all.output_tokens), (30, 6));
    }
}
