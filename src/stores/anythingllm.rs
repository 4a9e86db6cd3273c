//! AnythingLLM (Mintplex-Labs/anything-llm, a desktop and server app for chatting with LLMs
//! over workspaces of documents, with an `@agent` mode): every exchange a row of one SQLite
//! database, `anythingllm.db` in AnythingLLM's storage folder.
//!
//! Learnt from AnythingLLM's own source, github.com/Mintplex-Labs/anything-llm at commit
//! `72aabbd15481ae405434efd4c83d46026eef1173` (AnythingLLM 1.16.0):
//!
//! - `server/prisma/schema.prisma` (the datasource `file:../storage/anythingllm.db`) and
//!   `server/prisma/migrations/*/migration.sql` up to `20260520160208_init` (written out in
//!   `fixtures/schema/anythingllm-20260520160208.sql`): `workspaces` (`name`, `slug`, the chat
//!   and agent provider and model, `openAiPrompt`, the system prompt), `workspace_threads`
//!   (`name`, `slug`, `workspace_id`, `user_id`), `workspace_chats` (`prompt`, `response`
//!   JSON, `include`, `user_id`, `thread_id`, `api_session_id`, `feedbackScore`, times);
//!   Prisma keeps `DateTime` as epoch milliseconds and `Boolean` as 0/1;
//! - `server/models/workspaceChats.js` (what the chat view lists: `include` rows of one
//!   workspace, thread, user or API session in `id` order; `/reset` and deleting a message
//!   set `include` to false, nothing is deleted), `server/models/workspaceThread.js` (a new
//!   thread is named `Thread` until its first prompt renames it);
//! - what a reply saves: `server/utils/chats/stream.js`, `apiChatHandler.js`,
//!   `openaiCompatible.js`, `commands/img.js` (`text`, `sources`, `type`, `attachments`,
//!   `metrics`, `outputs`), `server/utils/agents/aibitat/plugins/chat-history.js` (an
//!   `@agent` turn: the prompt's row written first with `include` false and `response` `{}`,
//!   then the reply upserted into it with the run's summed usage, citations, outputs and
//!   clarifying questions), `server/utils/agents/ephemeral.js` (an API agent turn also keeps
//!   its `thoughts`), `server/utils/helpers/chat/LLMPerformanceMonitor.js` and
//!   `helpers/modelPricing/index.js` (`metrics`: `prompt_tokens`, `completion_tokens`,
//!   `model`, `duration`, `timestamp`, and where the model's price is known `totalCost`),
//!   `helpers/chat/responses.js` (`<think>` reasoning streamed into `text`; how the history
//!   is read back);
//! - `frontend/src/components/WorkspaceChat/ChatContainer/ChatHistory/ThoughtContainer` and
//!   `HistoricalMessage` (which tags the chat view shows as reasoning).
//!
//! **Where.** The desktop app keeps its storage folder in Electron's userData directory for
//! `anythingllm-desktop`: `$XDG_CONFIG_HOME/anythingllm-desktop/storage` (else
//! `~/.config/...`) on Linux, `~/Library/Application Support/anythingllm-desktop/storage` on
//! macOS (AnythingLLM's documentation, Mintplex-Labs/anythingllm-docs
//! `pages/installation-desktop/storage.mdx` @ `069124ca`). The server (bare metal, Docker)
//! keeps it in `STORAGE_DIR`, looked at when set; a Docker install keeps it in whatever host
//! directory is mounted on `/app/server/storage`, `~/anythingllm` in AnythingLLM's own
//! instructions (`docker/HOW_TO_USE_DOCKER.md`), which is looked at too; any other is added
//! with `--store anythingllm=DIR`. Beside the database the storage folder holds `.env`
//! (provider API keys), `comkey/` (signing keys), `plugins/` (MCP server definitions with
//! their environment) and the documents and vector database: none of them is opened.
//!
//! **What.** AnythingLLM has no session row: a chat is the rows of one workspace's thread,
//! or, outside threads, of its default chat, one per user in multi-user mode and one per
//! developer-API session (`api_session_id`), exactly the groups its chat view lists. Each is
//! one session: `<workspace slug>` (the default chat), `<workspace slug>@user-<id>`,
//! `<workspace slug>@api-<session>`, `<workspace slug>@thread-<thread slug>` (slugs never
//! change once made). A row is a prompt and its reply: the prompt with the attachments kept
//! in the response as placeholders, the sources the reply was given (retrieved document
//! chunks, an agent's citations) as context, the reply with its reasoning, its outputs
//! (generated files, images, charts, scheduled jobs) and clarifying questions as text, its
//! model and usage; the user's rating and a row AnythingLLM hides are events after it.
//!
//! Design decisions and why:
//! - **Only `workspace_chats`, `workspace_threads` and `workspaces` are read**, by column
//!   name. The same file holds `users` (password hashes), `api_keys`, `system_settings`
//!   (provider keys), `browser_extension_api_keys`, `temporary_auth_tokens`,
//!   `recovery_codes`, `password_reset_tokens`, `desktop_mobile_devices` tokens and
//!   `embed_configs`: none of them is ever selected. A user is named by id only.
//! - **Hidden rows are shown**, each followed by an event saying AnythingLLM hides it: a row
//!   with `include` false is one the user cleared (`/reset`, deleting a message), a
//!   query-mode refusal, or an `@agent` turn that never finished. The chat view no longer
//!   lists them and the model no longer sees them, but they are what was said.
//! - **Usage is the row's `metrics`**: a chat reply's prompt and completion tokens (counted
//!   by AnythingLLM where the provider reports none), an `@agent` reply's sums over every
//!   request of the run; `totalCost` is AnythingLLM's price of them and is the reply's cost
//!   (0 for local providers). A reply without token counts has no usage.
//! - **Tool calls are not recorded**: an `@agent` run keeps only its final reply, the
//!   citations and the outputs its tools left; an API agent run also its status lines
//!   (`thoughts`), shown as reasoning.

use super::kit::{self, SessionBuilder};
use super::sqlite::{self, Cell, Reader, Row, Rows, Table};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{self, Agent, Message, Role, Session, Source, TokenUsage};
use rusqlite::types::Value as Sql;
use rusqlite::Connection;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

const DB_FILE: &str = "anythingllm.db";
/// Electron's userData directory name of the desktop app.
const DESKTOP: &str = "anythingllm-desktop";
/// `WorkspaceThread.defaultName`: a thread's name until its first prompt renames it.
const DEFAULT_THREAD_NAME: &str = "Thread";

/// `$STORAGE_DIR` (the server's storage folder) when set, the desktop app's storage folder
/// (`$XDG_CONFIG_HOME` or `~/.config`, then macOS), then the Docker instructions' host folder.
pub fn candidates(env: &Env) -> Vec<Root> {
    let mut out = Vec::new();
    if let Some(dir) = env.path_var("STORAGE_DIR") {
        out.push(Root::new(
            Agent::Anythingllm,
            dir.join(DB_FILE),
            "STORAGE_DIR",
        ));
    }
    let (config, how) = match env.path_var("XDG_CONFIG_HOME") {
        Some(p) => (p, "XDG_CONFIG_HOME"),
        None => (env.home.join(".config"), "default"),
    };
    out.push(Root::new(
        Agent::Anythingllm,
        config.join(DESKTOP).join("storage").join(DB_FILE),
        how,
    ));
    out.push(Root::new(
        Agent::Anythingllm,
        env.home
            .join("Library/Application Support")
            .join(DESKTOP)
            .join("storage")
            .join(DB_FILE),
        "macOS",
    ));
    out.push(Root::new(
        Agent::Anythingllm,
        env.home.join("anythingllm").join(DB_FILE),
        "docker",
    ));
    out
}

pub struct AnythingllmStore {
    base: Base,
    reader: Reader,
}

impl AnythingllmStore {
    pub fn new(roots: Vec<Root>) -> AnythingllmStore {
        AnythingllmStore {
            base: Base::new(Agent::Anythingllm, roots),
            reader: Reader::new(),
        }
    }

    /// `(root index, database)` of every database the roots lead to, each once.
    fn places(&self) -> Vec<(usize, PathBuf)> {
        sqlite::databases(&self.base.roots, DB_FILE)
    }
}

impl Store for AnythingllmStore {
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
            let chats = self.reader.list("anythingllm", &db, list_db);
            for (id, key) in chats.unwrap_or_default() {
                let mut l = sqlite::row_session(&id, &db, root);
                l.key = Some(key);
                out.push(l);
            }
        }
        out
    }

    fn load(&self, listed: &Listed) -> Session {
        let db = &listed.path;
        let key = listed.key.as_deref().unwrap_or_default();
        let group = Group::parse(key);
        sqlite::load_session(
            &self.reader,
            db,
            key,
            sqlite::Access::InPlace,
            |c| match &group {
                Some(g) => fetch(c, &Tables::probe(c)?, g).map(Some),
                None => Ok(None),
            },
            |raw| match (&group, raw) {
                (Some(g), Some(raw)) => build(&raw, db, &listed.id, g),
                _ => {
                    let mut s = empty(db, &listed.id);
                    s.warnings
                        .push(format!("not a chat of this store: {key:?}"));
                    s
                }
            },
            || empty(db, &listed.id),
        )
    }

    /// The listing reads every database's groups of chats: the directories given as
    /// `--store` and every database with its journals.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        sqlite::glance(&self.base.roots, &self.places())
    }

    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        sqlite::versions_by_db(
            &self.reader,
            listed,
            |l| l.key.as_deref(),
            Tables::probe,
            |c, t, key| match Group::parse(key) {
                Some(g) => session_version(c, t, &g),
                None => Ok(0),
            },
        )
    }
}

fn source(db: &Path) -> Source {
    Source {
        paths: vec![db.to_path_buf()],
        format: "anythingllm-sqlite".into(),
        format_version: None,
    }
}

fn empty(db: &Path, id: &str) -> Session {
    let mut s = Session::new(Agent::Anythingllm, id);
    s.source = source(db);
    s
}

// ---------------------------------------------------------------------------------------
// Tables, groups and listing

struct Tables {
    chats: Table,
    threads: Table,
    workspaces: Table,
}

impl Tables {
    fn probe(c: &Connection) -> rusqlite::Result<Tables> {
        Ok(Tables {
            chats: Table::probe(c, "workspace_chats")?,
            threads: Table::probe(c, "workspace_threads")?,
            workspaces: Table::probe(c, "workspaces")?,
        })
    }
}

/// One chat as AnythingLLM's chat view lists it: the rows it selects.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Group {
    /// A thread's rows, by `thread_id`.
    Thread(i64),
    /// A workspace's default chat (no thread, no API session) of one user, or of none.
    Default { workspace: i64, user: Option<i64> },
    /// A workspace's rows of one developer-API session (no thread).
    Api { workspace: i64, session: String },
}

impl Group {
    /// The store key: `thread:<id>`, `default:<workspace>:<user or ->`, `api:<workspace>:<id>`.
    fn key(&self) -> String {
        match self {
            Group::Thread(id) => format!("thread:{id}"),
            Group::Default { workspace, user } => match user {
                Some(u) => format!("default:{workspace}:{u}"),
                None => format!("default:{workspace}:-"),
            },
            Group::Api { workspace, session } => format!("api:{workspace}:{session}"),
        }
    }

    fn parse(key: &str) -> Option<Group> {
        let (kind, rest) = key.split_once(':')?;
        match kind {
            "thread" => rest.parse().ok().map(Group::Thread),
            "default" => {
                let (ws, user) = rest.split_once(':')?;
                let user = match user {
                    "-" => None,
                    u => Some(u.parse().ok()?),
                };
                Some(Group::Default {
                    workspace: ws.parse().ok()?,
                    user,
                })
            }
            "api" => {
                let (ws, session) = rest.split_once(':')?;
                Some(Group::Api {
                    workspace: ws.parse().ok()?,
                    session: session.to_string(),
                })
            }
            _ => None,
        }
    }

    /// `WHERE … ORDER BY id` selecting this group's rows of `workspace_chats`, with its
    /// parameters; `None` where the table lacks a column the group needs (no row is then
    /// the group's).
    fn rows_where(&self, t: &Table) -> Option<(String, Vec<Sql>)> {
        let mut conds: Vec<String> = Vec::new();
        let mut params: Vec<Sql> = Vec::new();
        let is_null = |col: &str, conds: &mut Vec<String>| {
            if t.has(col) {
                conds.push(format!("{} IS NULL", sqlite::quote(col)));
            }
        };
        match self {
            Group::Thread(id) => {
                if !t.has("thread_id") {
                    return None;
                }
                conds.push("\"thread_id\" = ?".into());
                params.push(Sql::Integer(*id));
            }
            Group::Default { workspace, user } => {
                conds.push("\"workspaceId\" = ?".into());
                params.push(Sql::Integer(*workspace));
                is_null("thread_id", &mut conds);
                is_null("api_session_id", &mut conds);
                match (t.has("user_id"), user) {
                    (true, _) => {
                        conds.push("\"user_id\" IS ?".into());
                        params.push(user.map_or(Sql::Null, Sql::Integer));
                    }
                    (false, None) => {}
                    (false, Some(_)) => return None,
                }
            }
            Group::Api { workspace, session } => {
                if !t.has("api_session_id") {
                    return None;
                }
                conds.push("\"workspaceId\" = ?".into());
                params.push(Sql::Integer(*workspace));
                is_null("thread_id", &mut conds);
                conds.push("\"api_session_id\" = ?".into());
                params.push(Sql::Text(session.clone()));
            }
        }
        Some((format!("WHERE {} ORDER BY id", conds.join(" AND ")), params))
    }
}

/// Whether the database is AnythingLLM's: its chats table with the columns every version had.
fn check(t: &Tables) -> rusqlite::Result<()> {
    let has = |c: &str| t.chats.has(c);
    if has("id") && has("workspaceId") && has("prompt") && has("response") {
        Ok(())
    } else {
        Err(rusqlite::Error::InvalidColumnName(
            "no `workspace_chats` table: not an AnythingLLM database".into(),
        ))
    }
}

/// Where a session sorts in the listing: its workspace, then the default chat, the users'
/// default chats, the API sessions and the threads.
type Order = (i64, u8, i64, String);

/// `(session id, key)` of every chat, by workspace: the default chats (of no user, then of
/// each user), the API sessions, then the threads, oldest first.
fn list_db(c: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
    let t = Tables::probe(c)?;
    check(&t)?;
    let mut slugs: BTreeMap<i64, String> = BTreeMap::new();
    if t.workspaces.has("id") {
        let rows = Rows::fetch(c, &t.workspaces, &["id", "slug"], "", [])?;
        for r in rows.iter() {
            if let (Some(id), Some(slug)) = (r.get("id").int(), r.get("slug").text()) {
                slugs.insert(id, slug);
            }
        }
    }
    let slug = |ws: i64| slugs.get(&ws).cloned().unwrap_or_else(|| format!("#{ws}"));
    let mut found: BTreeMap<Order, (String, String)> = BTreeMap::new();
    let mut threads_seen: HashSet<i64> = HashSet::new();
    if t.threads.has("id") {
        let cols = ["id", "slug", "workspace_id"];
        let rows = Rows::fetch(c, &t.threads, &cols, "ORDER BY id", [])?;
        for r in rows.iter() {
            let Some(id) = r.get("id").int() else {
                continue;
            };
            let ws = r.get("workspace_id").int().unwrap_or(-1);
            let name = match r.get("slug").text() {
                Some(s) => format!("{}@thread-{s}", slug(ws)),
                None => format!("{}@thread#{id}", slug(ws)),
            };
            threads_seen.insert(id);
            found.insert((ws, 3, id, String::new()), (name, Group::Thread(id).key()));
        }
    }
    let cols = ["workspaceId", "thread_id", "user_id", "api_session_id"];
    let q = format!(
        "SELECT {} FROM workspace_chats GROUP BY 1, 2, 3, 4",
        t.chats.select_list(&cols)
    );
    let names = cols.iter().map(|s| s.to_string()).collect();
    let groups = Rows::query(c, &q, names, [])?;
    for r in groups.iter() {
        let ws = r.get("workspaceId").int().unwrap_or(-1);
        if let Some(thread) = r.get("thread_id").int() {
            // A thread whose row is gone (its chats outlive it: no foreign key).
            if threads_seen.insert(thread) {
                let name = format!("{}@thread#{thread}", slug(ws));
                found.insert(
                    (ws, 3, thread, String::new()),
                    (name, Group::Thread(thread).key()),
                );
            }
            continue;
        }
        if let Some(session) = r.get("api_session_id").text() {
            let g = Group::Api {
                workspace: ws,
                session: session.clone(),
            };
            let name = format!("{}@api-{session}", slug(ws));
            found.insert((ws, 2, 0, session), (name, g.key()));
            continue;
        }
        let user = r.get("user_id").int();
        let g = Group::Default {
            workspace: ws,
            user,
        };
        let (order, name) = match user {
            None => ((ws, 0, 0, String::new()), slug(ws)),
            Some(u) => ((ws, 1, u, String::new()), format!("{}@user-{u}", slug(ws))),
        };
        found.insert(order, (name, g.key()));
    }
    // Ids stay unique whatever the slugs hold.
    let mut seen = HashSet::new();
    Ok(found
        .into_values()
        .map(|(name, key)| {
            let mut id = name.clone();
            let mut n = 1;
            while !seen.insert(id.clone()) {
                n += 1;
                id = format!("{name}~{n}");
            }
            (id, key)
        })
        .collect())
}

// ---------------------------------------------------------------------------------------
// Reading one chat

/// The columns of `workspace_chats` read; `memory_processed` is not.
const CHAT: [&str; 9] = [
    "id",
    "workspaceId",
    "prompt",
    "response",
    "include",
    "user_id",
    "createdAt",
    "lastUpdatedAt",
    "feedbackScore",
];
/// What a row's version is made of besides the lengths of its prompt and response.
const CHAT_VERSION: [&str; 4] = ["id", "include", "feedbackScore", "lastUpdatedAt"];
const THREAD: [&str; 6] = ["id", "name", "slug", "workspace_id", "user_id", "createdAt"];
/// `workspaces` is read for these columns only.
const WORKSPACE: [&str; 8] = [
    "name",
    "slug",
    "chatProvider",
    "chatModel",
    "chatMode",
    "agentProvider",
    "agentModel",
    "openAiPrompt",
];

struct Raw {
    thread: Rows,
    workspace: Rows,
    chats: Rows,
}

fn thread_row(c: &Connection, t: &Tables, g: &Group) -> rusqlite::Result<Rows> {
    match g {
        Group::Thread(id) if t.threads.has("id") => {
            Rows::fetch(c, &t.threads, &THREAD, "WHERE id = ?1", [id])
        }
        _ => Ok(Rows::default()),
    }
}

/// The workspace of the group: the thread's, else the one the group names, else the one
/// its first row names.
fn workspace_row(
    c: &Connection,
    t: &Tables,
    g: &Group,
    thread: &Rows,
    first_chat: Option<i64>,
) -> rusqlite::Result<Rows> {
    let ws = match g {
        Group::Thread(_) => thread
            .first()
            .and_then(|r| r.get("workspace_id").int())
            .or(first_chat),
        Group::Default { workspace, .. } | Group::Api { workspace, .. } => Some(*workspace),
    };
    match ws {
        Some(ws) if t.workspaces.has("id") => {
            Rows::fetch(c, &t.workspaces, &WORKSPACE, "WHERE id = ?1", [ws])
        }
        _ => Ok(Rows::default()),
    }
}

fn fetch(c: &Connection, t: &Tables, g: &Group) -> rusqlite::Result<Raw> {
    let thread = thread_row(c, t, g)?;
    let chats = match g.rows_where(&t.chats) {
        Some((tail, params)) => Rows::fetch(
            c,
            &t.chats,
            &CHAT,
            &tail,
            rusqlite::params_from_iter(params),
        )?,
        None => Rows::default(),
    };
    let first = chats.first().and_then(|r| r.get("workspaceId").int());
    let workspace = workspace_row(c, t, g, &thread, first)?;
    Ok(Raw {
        thread,
        workspace,
        chats,
    })
}

/// A chat's version: its thread's and workspace's rows, and of every row its id, the
/// lengths of its prompt and response, `include`, the rating and the update time (an
/// `@agent` reply is written into its prompt's row; `/reset` and a rating change a row in
/// place).
fn session_version(c: &Connection, t: &Tables, g: &Group) -> rusqlite::Result<u64> {
    let thread = thread_row(c, t, g)?;
    let mut all = vec![thread.rows.clone()];
    let mut first = None;
    if let Some((tail, params)) = g.rows_where(&t.chats) {
        let q = format!(
            "SELECT length(prompt), length(response), \"workspaceId\", {} FROM workspace_chats {tail}",
            t.chats.select_list(&CHAT_VERSION)
        );
        let rows = Rows::query(c, &q, vec![], rusqlite::params_from_iter(params))?;
        first = rows.rows.first().and_then(|r| r.get(2)).and_then(Cell::int);
        all.push(rows.rows);
    }
    all.push(workspace_row(c, t, g, &thread, first)?.rows);
    Ok(sqlite::hash_version(all))
}

// ---------------------------------------------------------------------------------------
// Building the session

fn build(raw: &Raw, db: &Path, id: &str, g: &Group) -> Session {
    let mut b = SessionBuilder::new(Agent::Anythingllm, id);
    b.s.source = source(db);
    let ws = raw.workspace.first();
    let ws_name = ws.and_then(|w| w.get("name").non_empty());
    if let Some(name) = &ws_name {
        b.s.tags.push(format!("workspace:{name}"));
    }
    b.s.set_model = ws.and_then(|w| w.get("chatModel").non_empty());
    let thread = raw.thread.first();
    let mut parts = Vec::new();
    match (ws, &ws_name) {
        (Some(w), Some(name)) => parts.push(match w.get("slug").non_empty() {
            Some(slug) => format!("workspace \"{name}\" ({slug})"),
            None => format!("workspace \"{name}\""),
        }),
        _ => b.warn("workspace row not found (deleted?)"),
    }
    match g {
        Group::Thread(tid) => match thread {
            Some(t) => {
                let name = t.get("name").text();
                if let Some(n) = &name {
                    parts.push(format!("thread \"{n}\""));
                }
                b.title_or_placeholder(name, |t| t == DEFAULT_THREAD_NAME);
                b.s.created_at = t.get("createdAt").time();
                if let Some(u) = t.get("user_id").int() {
                    b.s.tags.push(format!("user:{u}"));
                }
            }
            None => b.warn(format!(
                "thread {tid} not found (deleted?): its chats are shown"
            )),
        },
        Group::Default { user, .. } => {
            b.s.title = ws_name.clone();
            if let Some(u) = user {
                b.s.tags.push(format!("user:{u}"));
                parts.push(format!("user {u}"));
            }
        }
        Group::Api { session, .. } => {
            b.s.tags.push("api-session".into());
            parts.push(format!("API session {session}"));
        }
    }
    if let Some(w) = ws {
        parts.extend(settings(&w));
    }
    if !parts.is_empty() {
        b.event(format!("AnythingLLM {}", parts.join("; ")), None);
    }
    if let Some(prompt) = ws.and_then(|w| w.get("openAiPrompt").non_empty()) {
        b.context("system prompt", prompt, None);
    }
    for row in raw.chats.iter() {
        chat(&mut b, &row);
    }
    b.finish()
}

/// The workspace's chat mode and models, as set now.
fn settings(w: &Row<'_>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(mode) = w.get("chatMode").non_empty() {
        out.push(format!("chat mode {mode}"));
    }
    let model =
        |provider: &str, model: &str| match (w.get(provider).non_empty(), w.get(model).non_empty())
        {
            (Some(p), Some(m)) => Some(format!("{p} {m}")),
            (Some(p), None) => Some(p),
            (None, Some(m)) => Some(m),
            (None, None) => None,
        };
    if let Some(m) = model("chatProvider", "chatModel") {
        out.push(format!("chat model {m}"));
    }
    if let Some(m) = model("agentProvider", "agentModel") {
        out.push(format!("agent model {m}"));
    }
    out
}

/// A Prisma `Boolean` (0/1; text from a hand-written row); `None` when null or unreadable.
fn flag(c: &Cell) -> Option<bool> {
    match c {
        Cell::Text(s) => match s.trim() {
            "true" | "1" => Some(true),
            "false" | "0" => Some(false),
            _ => None,
        },
        other => other.int().map(|i| i != 0),
    }
}

/// One `workspace_chats` row: the prompt, the sources, the reply, then the rating and
/// whether AnythingLLM hides it.
fn chat(b: &mut SessionBuilder, row: &Row<'_>) {
    let native = row.get("id").text().unwrap_or_else(|| "?".into());
    let at = row.get("createdAt").time();
    let prompt = row.get("prompt").text().unwrap_or_default();
    let raw = row.get("response").text().unwrap_or_default();
    let parsed = match kit::json_text(&raw) {
        Ok(Some(Value::Object(m))) => Ok(Some(Value::Object(m))),
        Ok(None) => Ok(None),
        Ok(Some(_)) => Err(("response is not a JSON object", "not an object".to_string())),
        Err(e) => Err(("response is not JSON", e)),
    };
    let readable = parsed.is_ok();
    let (response, problem) = match parsed {
        Ok(v) => (v, None),
        Err(e) => (None, Some(e)),
    };
    let empty = Value::Null;
    let r = response.as_ref().unwrap_or(&empty);
    let mut content = prompt;
    for a in list(r, "attachments") {
        kit::push_paragraph(&mut content, &attachment(a));
    }
    b.push(Message {
        role: Role::User,
        content,
        timestamp: at,
        native_id: Some(native.clone()),
        ..Message::default()
    });
    if let Some((problem, detail)) = problem {
        unparsed(b, &native, problem, detail, &raw, at);
    }
    let sources: Vec<String> = list(r, "sources").iter().map(source_text).collect();
    if !sources.is_empty() {
        b.context("sources", sources.join("\n\n"), at);
    }
    // The events after the reply are timed with it, so times never run backwards.
    let mut after = at;
    match reply(r, &native, at) {
        Some(m) => {
            after = m.timestamp.or(at);
            b.push(m);
        }
        None if readable => b.event("AnythingLLM saved no reply to this prompt".into(), at),
        None => {}
    }
    match flag(row.get("feedbackScore")) {
        Some(true) => b.event("The user rated this reply good".into(), after),
        Some(false) => b.event("The user rated this reply bad".into(), after),
        None => {}
    }
    if flag(row.get("include")) == Some(false) {
        b.event(
            "Hidden in AnythingLLM (include = false): cleared with /reset or deleted, a \
             refusal, or an unfinished @agent turn; the model no longer sees it"
                .into(),
            after,
        );
    }
}

/// A response that cannot be read, shown as written (at most [`kit::MAX_RAW_CHARS`]
/// characters: it can hold a base64 attachment) where the reply would stand.
fn unparsed(
    b: &mut SessionBuilder,
    native: &str,
    problem: &str,
    detail: String,
    raw: &str,
    at: Option<chrono::DateTime<chrono::Utc>>,
) {
    let first = || format!("chat {native}: {detail}");
    let text = kit::raw_text(raw.as_bytes());
    b.unparsed("chat rows", problem, first, "response", &text, at);
}

/// The array at `key`, or nothing.
fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    kit::str_field(v, key).filter(|s| !s.trim().is_empty())
}

/// `[image: shot.png, image/png, 12.3 KB]`: an attachment's name, type and size, never its
/// bytes (`contentString` is a data URL).
fn attachment(a: &Value) -> String {
    let mime = str_of(a, "mime");
    let kind = match mime {
        Some(m) if !m.starts_with("image/") => "attachment",
        _ => "image",
    };
    let mut parts: Vec<String> = Vec::new();
    parts.extend(str_of(a, "name").map(str::to_string));
    parts.extend(mime.map(str::to_string));
    if let Some(data) = kit::str_field(a, "contentString") {
        let b64 = data.split_once(',').map_or(data, |(_, d)| d);
        parts.push(model::human_bytes(model::base64_decoded_len(b64) as u64));
    }
    if parts.is_empty() {
        format!("[{kind}]")
    } else {
        format!("[{kind}: {}]", parts.join(", "))
    }
}

/// One source: its title, where it is from and its score, then the text the model was given.
fn source_text(s: &Value) -> String {
    let mut head = format!("**{}**", str_of(s, "title").unwrap_or("source"));
    let from = ["chunkSource", "url", "docSource"]
        .iter()
        .find_map(|k| str_of(s, k));
    if let Some(f) = from {
        head.push_str(&format!(" · {f}"));
    }
    if let Some(score) = s.get("score").and_then(Value::as_f64) {
        head.push_str(&format!(" · score {score:.2}"));
    }
    match str_of(s, "text") {
        Some(t) => format!("{head}\n\n{}", t.trim()),
        None => head,
    }
}

/// The reply of a row: its text without the reasoning AnythingLLM shows apart, its outputs
/// and clarifying questions, its model, usage and cost. `None` when the row keeps no reply.
fn reply(r: &Value, native: &str, at: Option<chrono::DateTime<chrono::Utc>>) -> Option<Message> {
    let text = r.get("text").and_then(Value::as_str).unwrap_or_default();
    let mut m = Message {
        role: Role::Assistant,
        native_id: Some(native.to_string()),
        ..Message::default()
    };
    let thoughts: Vec<&str> = list(r, "thoughts")
        .iter()
        .filter_map(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .collect();
    let mut thinking = thoughts.join("\n");
    let (body, reasoning) = if kit::str_field(r, "type") == Some("rechartVisualize") {
        (chart(text), None)
    } else {
        split_thought(text)
    };
    if let Some(t) = reasoning.filter(|t| !t.trim().is_empty()) {
        kit::push_paragraph(&mut thinking, t.trim());
    }
    m.thinking = (!thinking.is_empty()).then_some(thinking);
    m.content = body.trim().to_string();
    for o in list(r, "outputs") {
        kit::push_paragraph(&mut m.content, &output(o));
    }
    for survey in list(r, "clarifyingQuestions") {
        if let Some(qa) = clarifying(survey) {
            kit::push_paragraph(&mut m.content, &qa);
        }
    }
    if m.content.is_empty() && m.thinking.is_none() {
        return None;
    }
    let metrics = r.get("metrics").unwrap_or(&Value::Null);
    m.model = str_of(metrics, "model").map(str::to_string);
    m.timestamp = str_of(metrics, "timestamp")
        .and_then(kit::parse_rfc3339)
        .or(at);
    let usage = TokenUsage {
        input_tokens: kit::u64_field(metrics, "prompt_tokens"),
        output_tokens: kit::u64_field(metrics, "completion_tokens"),
        ..TokenUsage::default()
    };
    if !usage.is_zero() {
        m.token_usage = Some(usage);
        m.cost = metrics
            .get("totalCost")
            .and_then(Value::as_f64)
            .filter(|c| c.is_finite() && *c >= 0.0);
    }
    Some(m)
}

/// The text as AnythingLLM's chat view shows it, and the reasoning it shows apart: the first
/// whole `<think…>…</think…>` or `<thought…>…</thought…>` block (the view's
/// `THOUGHT_REGEX_COMPLETE`: `thinking` and `thought_chain` open and close the same way) is
/// taken out; a reply with an opening tag and no closing tag at all (`</think`, `</thought`,
/// `</response`, `</answer`) is reasoning whole, cut off before it ended.
fn split_thought(text: &str) -> (String, Option<String>) {
    let mut from = 0;
    while let Some(off) = text[from..].find('<') {
        let lt = from + off;
        from = lt + 1;
        let rest = &text[lt + 1..];
        let family = if rest.starts_with("thought") {
            "thought"
        } else if rest.starts_with("think") {
            "think"
        } else {
            continue;
        };
        let Some(gt) = rest.find('>').map(|g| lt + 1 + g) else {
            continue;
        };
        let close = format!("</{family}");
        let Some(c) = text[gt + 1..].find(&close).map(|c| gt + 1 + c) else {
            continue;
        };
        let Some(end) = text[c..].find('>').map(|e| c + e + 1) else {
            continue;
        };
        let body = format!("{}{}", &text[..lt], &text[end..]);
        return (body, Some(text[gt + 1..c].to_string()));
    }
    let opens = open_tag(text);
    let closes = ["</think", "</thought", "</response", "</answer"]
        .iter()
        .any(|c| text.contains(c));
    match opens {
        Some((lt, gt)) if !closes => {
            let inner = format!("{}{}", &text[..lt], &text[gt + 1..]);
            (String::new(), Some(inner))
        }
        _ => (text.to_string(), None),
    }
}

/// The first `<think…>` or `<thought…>` opening tag: `(its '<', its '>')`.
fn open_tag(text: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(off) = text[from..].find('<') {
        let lt = from + off;
        from = lt + 1;
        let rest = &text[lt + 1..];
        if rest.starts_with("think") || rest.starts_with("thought") {
            if let Some(g) = rest.find('>') {
                return Some((lt, lt + 1 + g));
            }
        }
    }
    None
}

/// A chart an `@agent` reply drew (`rechartVisualize`: its `text` is the chart's JSON): the
/// caption, then the chart's type, title and data.
fn chart(text: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return text.to_string();
    };
    let mut out = str_of(&v, "caption").unwrap_or_default().trim().to_string();
    let mut head = "**Chart**".to_string();
    if let Some(t) = str_of(&v, "type") {
        head.push_str(&format!(" · {t}"));
    }
    if let Some(t) = str_of(&v, "title") {
        head.push_str(&format!(" · {t}"));
    }
    let data = match v.get("dataset") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let fence = "`".repeat(longest_backticks(&data).max(2) + 1);
    kit::push_paragraph(&mut out, &format!("{head}\n\n{fence}json\n{data}\n{fence}"));
    out
}

fn longest_backticks(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// What a tool left for the user (`outputs`: a generated file, an image, a scheduled job),
/// as one line naming it.
fn output(o: &Value) -> String {
    let kind = str_of(o, "type").unwrap_or("file");
    // The API keeps a file card's payload itself in place of `{type, payload}`.
    let p = o.get("payload").unwrap_or(o);
    let mut line = format!("**Output** · {kind}");
    if let Some(name) = str_of(p, "filename").or_else(|| str_of(p, "jobName")) {
        line.push_str(&format!(": {name}"));
    }
    if let Some(n) = p.get("fileSize").and_then(Value::as_u64) {
        line.push_str(&format!(" ({})", model::human_bytes(n)));
    }
    if let Some(id) = p.get("jobId").and_then(Value::as_i64) {
        line.push_str(&format!(" (job #{id})"));
    }
    for (key, label) in [
        ("schedule", "schedule"),
        ("nextRun", "next run"),
        ("prompt", "prompt"),
    ] {
        if let Some(v) = str_of(p, key) {
            line.push_str(&format!(" · {label}: {v}"));
        }
    }
    line
}

/// A clarifying-question survey as AnythingLLM replays it to the model: each question and
/// the user's answer.
fn clarifying(survey: &Value) -> Option<String> {
    let questions = list(survey, "questions");
    if questions.is_empty() {
        return None;
    }
    let result = survey.get("result").unwrap_or(&Value::Null);
    let is = |k: &str| result.get(k).and_then(Value::as_bool) == Some(true);
    let body = if is("timedOut") {
        "[no response within the time limit]".to_string()
    } else if is("skipped") {
        "[user let the agent decide]".to_string()
    } else {
        let answers = list(result, "answers");
        questions
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let a = answers.get(i).unwrap_or(&Value::Null);
                let answer =
                    if a.get("skipped").and_then(Value::as_bool) == Some(true) || a.is_null() {
                        "[user skipped]".to_string()
                    } else {
                        match a.get("answer") {
                            Some(Value::Array(xs)) => xs
                                .iter()
                                .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
                                .collect::<Vec<_>>()
                                .join(", "),
                            Some(Value::String(s)) if !s.is_empty() => s.clone(),
                            Some(Value::Null) | None => "[no answer]".to_string(),
                            Some(Value::String(_)) => "[no answer]".to_string(),
                            Some(other) => other.to_string(),
                        }
                    };
                let q = str_of(q, "question").unwrap_or("?");
                format!("Q: {q}\nA: {answer}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    Some(format!("**Clarifying questions**\n\n{body}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_dir_comes_first_and_xdg_moves_the_desktop_folder() {
        let mut env = Env::at_home(Path::new("/h"));
        let got = |env: &Env| -> Vec<(PathBuf, String)> {
            candidates(env)
                .into_iter()
                .map(|r| (r.path, r.how))
                .collect()
        };
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(
            got(&env),
            [
                (
                    p("/h/.config/anythingllm-desktop/storage/anythingllm.db"),
                    "default".into()
                ),
                (
                    p("/h/Library/Application Support/anythingllm-desktop/storage/anythingllm.db"),
                    "macOS".into()
                ),
                (p("/h/anythingllm/anythingllm.db"), "docker".into()),
            ]
        );
        env.vars.insert("XDG_CONFIG_HOME".into(), "/x".into());
        env.vars.insert("STORAGE_DIR".into(), "/srv/storage".into());
        let g = got(&env);
        assert_eq!(
            g[0],
            (p("/srv/storage/anythingllm.db"), "STORAGE_DIR".into())
        );
        assert_eq!(g[1].0, p("/x/anythingllm-desktop/storage/anythingllm.db"));
    }

    #[test]
    fn keys_round_trip() {
        for g in [
            Group::Thread(7),
            Group::Default {
                workspace: 2,
                user: None,
            },
            Group::Default {
                workspace: 2,
                user: Some(5),
            },
            Group::Api {
                workspace: 3,
                session: "a:b c".into(),
            },
        ] {
            assert_eq!(Group::parse(&g.key()), Some(g));
        }
        assert_eq!(Group::parse("default:x:-"), None);
        assert_eq!(Group::parse("other:1"), None);
    }

    #[test]
    fn reasoning_comes_out_the_way_the_chat_view_takes_it() {
        let s = |t: &str| split_thought(t);
        assert_eq!(
            s("<think>plan</think>\n\nanswer"),
            ("\n\nanswer".into(), Some("plan".into()))
        );
        assert_eq!(
            s("a <thinking level=\"x\">p</thinking> b"),
            ("a  b".into(), Some("p".into()))
        );
        assert_eq!(
            s("<thought_chain>q</thought_chain>r"),
            ("r".into(), Some("q".into()))
        );
        // Only the first block; an open tag without any close is reasoning whole.
        assert_eq!(
            s("<think>a</think>b<think>c</think>"),
            ("b<think>c</think>".into(), Some("a".into()))
        );
        assert_eq!(s("<think>cut off"), (String::new(), Some("cut off".into())));
        assert_eq!(
            s("<thinking>x</response>y"),
            ("<thinking>x</response>y".into(), None)
        );
        assert_eq!(s("a < b <th> c"), ("a < b <th> c".into(), None));
    }

    #[test]
    fn attachments_are_named_and_measured_never_kept() {
        let a = serde_json::json!({"name": "shot.png", "mime": "image/png",
            "contentString": format!("data:image/png;base64,{}", "A".repeat(4000))});
        assert_eq!(attachment(&a), "[image: shot.png, image/png, 3.0 KB]");
        let d = serde_json::json!({"name": "notes.pdf", "mime": "application/pdf"});
        assert_eq!(attachment(&d), "[attachment: notes.pdf, application/pdf]");
    }
}
