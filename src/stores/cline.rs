//! Cline, Roo Code and Kilo Code tasks: one JSON tree per task, written by a VS Code
//! extension (or Cline's CLI) and rewritten whole while the editor runs.
//!
//! Roo Code is a fork of Cline and Kilo Code a fork of Roo Code; all three keep the task
//! layout Cline introduced, so they are one store with a [`Dialect`] naming the differences
//! (the extension id, where the task list lives, and the fields a fork added). Read from the
//! agents' own source:
//!
//! - cline/cline `21cb8d2525bcedf1f4b6890b27a74a14fe7451e4`: `apps/vscode/src/core/storage/disk.ts`
//!   (`GlobalFileNames`: `tasks/<taskId>/api_conversation_history.json`, `ui_messages.json`,
//!   `task_metadata.json`), `apps/vscode/src/sdk/legacy-state-reader.ts` (`state/taskHistory.json`,
//!   `CLINE_DATA_DIR`, `~/.cline/data`), `apps/vscode/src/shared/ExtensionMessage.ts`
//!   (`ClineMessage`, the `say`/`ask` kinds), `apps/vscode/src/shared/messages/content.ts` and
//!   `messages/metrics.ts` (stored API messages, `modelInfo`, `metrics.tokens`),
//!   `apps/vscode/src/shared/HistoryItem.ts`, `apps/vscode/src/shared/getApiMetrics.ts` (usage is
//!   the sum of `api_req_started`, `deleted_api_reqs` and `subagent_usage` records),
//!   `apps/vscode/src/core/context/context-tracking/ContextTrackerTypes.ts` (`task_metadata.json`);
//! - RooCodeInc/Roo-Code `cb836567180a3ff1da6d082f3178b90c3bd22a70`: `src/shared/globalFileNames.ts`
//!   and `src/core/task-persistence/TaskHistoryStore.ts` (per-task `history_item.json`,
//!   `tasks/_index.json`), `src/core/task-persistence/apiMessages.ts` (`reasoning` items,
//!   `reasoning_content`, `isSummary`), `packages/types/src/history.ts` (`parentTaskId`,
//!   `childIds`, `workspace`);
//! - Kilo-Org/kilocode `74d6e4839d20b7b8af79c013e09fe9b1ede35539`: `src/shared/globalFileNames.ts`
//!   (Roo Code's task files under `kilocode.kilo-code`, the task list as `task_history.json`).
//!
//! Design decisions and why:
//! - **Roots are the extension's globalStorage directory** of every VS Code build that can
//!   host the extension (Code, Insiders, VSCodium, Cursor, Windsurf, the remote server), on
//!   Linux (`$XDG_CONFIG_HOME`, else `~/.config`) and macOS (`~/Library/Application Support`),
//!   plus Cline's own `~/.cline/data` (`CLINE_DATA_DIR`, `CLINE_DIR/data`). A `--store` path
//!   may be such a directory, its `tasks/` directory or one task directory.
//! - **Listing reads names**: a task directory's name is its id (Cline: milliseconds
//!   since the epoch; Roo and Kilo: a UUID); a directory holding neither conversation file is
//!   not a task. No task file is parsed until a session is opened; the task lists beside
//!   the tasks are (once per version), to know which tasks take their entry from the
//!   editor's `state.vscdb` (older builds), which is then among their sources, watched
//!   ([`Store::watched_files`]) and versioned by the task's own entry.
//! - **Each file is read in one read and parsed whole.** The extension replaces these files
//!   while it runs (Cline with a plain `writeFile`), so a read may meet a half-written file:
//!   the complete records before the cut are kept, the cut tail is shown as raw text, and a
//!   warning names the file. Nothing beside the task files and the task lists is opened:
//!   globalStorage also holds `secrets.json`, `globalState.json`, settings and per-task
//!   `settings.json`, none of which sessfs reads.
//! - **Both views, once each** (docs/SEMANTICS.md, "Cline, Roo Code, Kilo Code"):
//!   `api_conversation_history.json` (what the model saw) gives the conversation;
//!   `ui_messages.json` (what the user saw) adds what the model never saw, placed after the
//!   API message its `conversationHistoryIndex` names: usage and cost per API request,
//!   errors and retries, checkpoints, reasoning the API history lacks, and any prompt or
//!   reply whose text the API history around it does not already hold.
//! - **Usage once per API request**, as Cline's `getApiMetrics` counts it: from the UI
//!   records (`api_req_started`, `api_req_finished` of old versions, `deleted_api_reqs`,
//!   `subagent_usage`); else from the API messages' `metrics`; else from the task list's
//!   totals. Never two of these for one task.
//! - **Tool results written as text** (`[read_file for 'x'] Result:` blocks, as Cline writes
//!   them) are paired in order with the calls of the reply before them; where the reply
//!   called its tools in XML inside its text (older Cline), the call is made from that XML so
//!   each result still gets its `tools/` file.
//! - **Cline's SDK-era sessions** (`sessions/<id>/<id>.messages.json`) are another format
//!   under the same data dir, read by [`super::cline_sdk`].
//! - **Roo and Kilo child tasks** (`parentTaskId`, `childIds` of the task's history item) are
//!   linked as parent and subagents; the children stay top-level sessions.

use super::cline_sdk;
use super::kit::{self, title_from_text, EntryType, SessionBuilder};
use super::sqlite;
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{
    unified_id, Agent, Message, MessageKind, Role, Session, Subagent, TokenUsage, ToolCall,
    SEALED_THINKING,
};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Larger task files are not parsed (a whole file is held while parsing).
const MAX_JSON_BYTES: u64 = 256 << 20;
/// Longest raw text of an unparsable record kept in the transcript.
const MAX_RAW_CHARS: usize = 64 << 10;

const API_FILE: &str = "api_conversation_history.json";
const UI_FILE: &str = "ui_messages.json";
const METADATA_FILE: &str = "task_metadata.json";
/// Roo Code and Kilo Code: the task's own history item.
const HISTORY_ITEM_FILE: &str = "history_item.json";

mod glance;

/// The three extensions of the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Cline,
    Roo,
    Kilo,
}

impl Dialect {
    pub fn agent(self) -> Agent {
        match self {
            Dialect::Cline => Agent::Cline,
            Dialect::Roo => Agent::Roo,
            Dialect::Kilo => Agent::Kilo,
        }
    }

    /// The VS Code extension id, the name of its globalStorage directory.
    pub fn extension_id(self) -> &'static str {
        match self {
            Dialect::Cline => "saoudrizwan.claude-dev",
            Dialect::Roo => "rooveterinaryinc.roo-cline",
            Dialect::Kilo => "kilocode.kilo-code",
        }
    }

    fn format(self) -> &'static str {
        match self {
            Dialect::Cline => "cline-task-json",
            Dialect::Roo => "roo-task-json",
            Dialect::Kilo => "kilo-task-json",
        }
    }
}

/// Editors that host VS Code extensions, by their user-data directory name.
const EDITORS: &[&str] = &["Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf"];

/// Every globalStorage directory (and Cline's own data directory) the dialect may use.
pub fn candidates(env: &Env, dialect: Dialect) -> Vec<Root> {
    let agent = dialect.agent();
    let ext = dialect.extension_id();
    let mut out = Vec::new();
    if dialect == Dialect::Cline {
        // The SDK's sessions dir when set apart from the data dir (see [`cline_sdk`]).
        if let Some(p) = env.path_var("CLINE_SESSION_DATA_DIR") {
            out.push(Root::new(agent, p, "CLINE_SESSION_DATA_DIR"));
        }
        if let Some(p) = env.path_var("CLINE_DATA_DIR") {
            out.push(Root::new(agent, p, "CLINE_DATA_DIR"));
        } else if let Some(p) = env.path_var("CLINE_DIR") {
            out.push(Root::new(agent, p.join("data"), "CLINE_DIR"));
        } else {
            out.push(Root::new(agent, env.home.join(".cline/data"), "default"));
        }
    }
    let (config, how) = match env.path_var("XDG_CONFIG_HOME") {
        Some(p) => (p, "XDG_CONFIG_HOME"),
        None => (env.home.join(".config"), "default"),
    };
    let mac = env.home.join("Library/Application Support");
    for editor in EDITORS {
        out.push(Root::new(
            agent,
            config.join(editor).join("User/globalStorage").join(ext),
            how,
        ));
    }
    for editor in EDITORS {
        out.push(Root::new(
            agent,
            mac.join(editor).join("User/globalStorage").join(ext),
            "macOS",
        ));
    }
    for server in [
        ".vscode-server",
        ".vscode-server-insiders",
        ".cursor-server",
    ] {
        out.push(Root::new(
            agent,
            env.home
                .join(server)
                .join("data/User/globalStorage")
                .join(ext),
            "remote",
        ));
    }
    out
}

pub struct ClineStore {
    base: Base,
    dialect: Dialect,
    lists: Lists,
    /// The editors' `state.vscdb` some tasks need ([`ClineStore::state_dbs`]).
    state_dbs: OnceLock<Vec<PathBuf>>,
}

impl ClineStore {
    pub fn new(dialect: Dialect, roots: Vec<Root>) -> ClineStore {
        ClineStore {
            base: Base::new(dialect.agent(), roots),
            dialect,
            lists: Lists::default(),
            state_dbs: OnceLock::new(),
        }
    }

    /// Whether a task list file beside `dir` gives the task's entry (a Roo or Kilo task's
    /// own `history_item.json` counts), so the editor's database is not needed for it.
    fn entry_in_files(&self, dir: &Path, id: &str, lists: &[(PathBuf, ListMap)]) -> bool {
        (self.dialect != Dialect::Cline && dir.join(HISTORY_ITEM_FILE).is_file())
            || lists.iter().any(|(_, map)| map.contains_key(id))
    }

    /// The editors' `state.vscdb` that hold the entry of a task no list file gives (older
    /// builds), found at the first listing or watch: only those are sources and watched, so
    /// an editor whose tasks all have list files costs nothing when VS Code writes its
    /// database, which it does every few seconds.
    fn state_dbs(&self) -> &[PathBuf] {
        self.state_dbs.get_or_init(|| {
            let mut out: Vec<PathBuf> = Vec::new();
            for root in &self.base.roots {
                let mut lists: HashMap<PathBuf, Vec<(PathBuf, ListMap)>> = HashMap::new();
                for dir in task_dirs(&root.path) {
                    let id = dir.file_name().map(crate::names::os_id).unwrap_or_default();
                    let beside = self.lists_beside(&dir, &mut lists);
                    if self.entry_in_files(&dir, &id, beside) {
                        continue;
                    }
                    if let Some(db) = state_db(&dir).filter(|db| db.is_file()) {
                        if !out.contains(&db) {
                            out.push(db);
                        }
                    }
                }
            }
            out
        })
    }

    /// The list files beside task `dir` that exist, with their entries: those of the
    /// tasks' container, read once per container into `cache`.
    fn lists_beside<'a>(
        &self,
        dir: &Path,
        cache: &'a mut HashMap<PathBuf, Vec<(PathBuf, ListMap)>>,
    ) -> &'a [(PathBuf, ListMap)] {
        cache
            .entry(dir.parent().unwrap_or(dir).to_path_buf())
            .or_insert_with(|| {
                let files = task_lists(dir).into_iter().filter(|l| l.is_file());
                files.map(|l| (l.clone(), self.lists.get(&l))).collect()
            })
    }
}

impl Store for ClineStore {
    fn base(&self) -> &Base {
        &self.base
    }

    /// A task's sources are its directory, its files, and the task lists its title, cwd
    /// and totals may come from ([`Lists::entry`]): the list files beside the tasks that
    /// exist, and the editor's `state.vscdb` (with its journals) where no file gives the
    /// task's entry, for the builds that kept their list there (a database that appears
    /// after the store was opened is read, but is no source). A task's entry is looked up
    /// in each list file, parsed once per version of it.
    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            // The list files, and their entries, are those of the tasks' container.
            let mut lists: HashMap<PathBuf, Vec<(PathBuf, ListMap)>> = HashMap::new();
            for dir in task_dirs(&root.path) {
                let id = dir.file_name().map(crate::names::os_id).unwrap_or_default();
                let mut sources = vec![
                    dir.clone(),
                    dir.join(API_FILE),
                    dir.join(UI_FILE),
                    dir.join(METADATA_FILE),
                    dir.join(HISTORY_ITEM_FILE),
                ];
                let beside = self.lists_beside(&dir, &mut lists);
                // A rewritten list renders the task again, as a rewritten task file does.
                sources.extend(beside.iter().map(|(l, _)| l.clone()));
                if !self.entry_in_files(&dir, &id, beside) {
                    if let Some(db) = state_db(&dir).filter(|db| self.state_dbs().contains(db)) {
                        sources.extend(sqlite::with_journals(&db));
                    }
                }
                out.push(Listed {
                    id,
                    path: dir,
                    sources,
                    key: None,
                    root: i,
                });
            }
            if self.dialect == Dialect::Cline {
                cline_sdk::list(&root.path, i, &mut out);
            }
        }
        // `CLINE_SESSION_DATA_DIR` may name the data dir's own `sessions/`: one file, once.
        let mut seen = std::collections::HashSet::new();
        out.retain(|l| seen.insert(l.path.clone()));
        out
    }

    /// The editors' databases some tasks have among their sources: watched by the mount.
    fn watched_files(&self) -> &[PathBuf] {
        self.state_dbs()
    }

    fn keeps_listing(&self, _listed: &Listed) -> bool {
        // The listing reads directory names and the task lists; writing a task's files
        // never adds a task, and never changes a list.
        true
    }

    /// A task's version where `state.vscdb` is among its sources: the size and mtime of
    /// the others, and its own entry in the task lists. VS Code writes that database for
    /// everything it keeps; only a task whose entry a write changed renders again. Other
    /// tasks version by their sources' size and mtime.
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        listed
            .iter()
            .map(|l| {
                if cline_sdk::is_sdk(l) {
                    return None;
                }
                let db = state_db(&l.path)?;
                if !l.sources.contains(&db) {
                    return None;
                }
                let journals = sqlite::with_journals(&db);
                let own =
                    super::stat_fingerprint(l.sources.iter().filter(|p| !journals.contains(p)));
                let entry = self.lists.entry(self.dialect, &l.path, &l.id);
                Some(crate::names::fnv1a(format!("{own}-{entry:?}").as_bytes()))
            })
            .collect()
    }

    /// The roots, task containers and task directories the listing reads, and where a
    /// task list may appear (see the `glance` module).
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        glance::glance(self.dialect, &self.base.roots)
    }

    fn load(&self, listed: &Listed) -> Session {
        if cline_sdk::is_sdk(listed) {
            return cline_sdk::load(self.dialect.agent(), listed);
        }
        let hist = self.lists.entry(self.dialect, &listed.path, &listed.id);
        load_task(self.dialect, &listed.path, &listed.id, hist)
    }
}

/// The task directories under a root: the root's `tasks/`, the root itself when it is a
/// `tasks/` directory, or the root when it is one task.
pub fn task_dirs(root: &Path) -> Vec<PathBuf> {
    if is_task(root) {
        return vec![root.to_path_buf()];
    }
    let tasks = root.join("tasks");
    let container = if tasks.is_dir() {
        tasks
    } else {
        root.to_path_buf()
    };
    kit::typed_entries(&container)
        .into_iter()
        .filter(|(p, t)| {
            let name = p.file_name().map(|n| n.as_encoded_bytes()).unwrap_or(b"");
            *t == EntryType::Dir && !name.starts_with(b".") && !name.starts_with(b"_")
        })
        .map(|(p, _)| p)
        .filter(|p| is_task(p))
        .collect()
}

fn is_task(dir: &Path) -> bool {
    dir.join(API_FILE).exists() || dir.join(UI_FILE).exists()
}

/// Why a task file could not be read; shown as a warning naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{file}: cannot read: {source}")]
    Io {
        file: &'static str,
        source: std::io::Error,
    },
    #[error("{file}: {bytes} bytes, too large to parse, skipped")]
    TooLarge { file: &'static str, bytes: u64 },
    #[error("{file}: not a JSON array")]
    NotArray { file: &'static str },
}

/// A JSON array file as its records, with what could not be parsed kept as raw text.
#[derive(Debug, Default)]
pub struct Records {
    pub items: Vec<Value>,
    /// Raw text the parser could not read (a half-written tail), if any.
    pub unparsed: Option<String>,
}

/// Read a JSON array file in one read. `Ok(None)` when the file does not exist.
fn read_array(path: &Path, file: &'static str) -> Result<Option<Records>, ReadError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(ReadError::Io { file, source }),
    };
    if meta.len() > MAX_JSON_BYTES {
        return Err(ReadError::TooLarge {
            file,
            bytes: meta.len(),
        });
    }
    let bytes = kit::read_file(path).map_err(|source| ReadError::Io { file, source })?;
    parse_array(&bytes)
        .map(Some)
        .ok_or(ReadError::NotArray { file })
}

/// Parse a JSON array record by record, so a file cut while the editor rewrote it keeps
/// every complete record before the cut. `None` when the text is not an array at all.
pub fn parse_array(bytes: &[u8]) -> Option<Records> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_start_matches('\u{feff}');
    let body = text.trim_start();
    let rest = body.strip_prefix('[')?;
    let mut pos = text.len() - rest.len();
    let mut out = Records::default();
    let b = text.as_bytes();
    let skip_ws = |mut p: usize| {
        while p < b.len() && b[p].is_ascii_whitespace() {
            p += 1;
        }
        p
    };
    pos = skip_ws(pos);
    if b.get(pos) == Some(&b']') {
        return Some(out);
    }
    loop {
        let mut stream = serde_json::Deserializer::from_str(&text[pos..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(v)) => {
                out.items.push(v);
                pos = skip_ws(pos + stream.byte_offset());
                match b.get(pos) {
                    Some(b',') => pos = skip_ws(pos + 1),
                    Some(b']') => return Some(out),
                    _ => break,
                }
            }
            _ => break,
        }
    }
    let tail = text[pos..].trim();
    if !tail.is_empty() {
        out.unparsed = Some(tail.chars().take(MAX_RAW_CHARS).collect());
    } else {
        out.unparsed = Some(String::from("(file ends before the array is closed)"));
    }
    Some(out)
}

/// What sessfs takes from a task-list entry (the rest, such as the whole first prompt, is
/// not kept: a list of thousands of tasks stays small in memory).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HistoryEntry {
    pub title: Option<String>,
    pub cwd: Option<String>,
    pub parent: Option<String>,
    pub children: Vec<String>,
    pub usage: TokenUsage,
    pub cost: Option<f64>,
}

impl HistoryEntry {
    fn from_value(h: &Value) -> HistoryEntry {
        HistoryEntry {
            title: kit::str_field(h, "task").and_then(title_from_text),
            cwd: kit::str_any(h, &["cwdOnTaskInitialization", "workspace"])
                .filter(|c| !c.is_empty())
                .map(str::to_string),
            parent: kit::str_field(h, "parentTaskId")
                .filter(|p| !p.is_empty())
                .map(str::to_string),
            children: h
                .get("childIds")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            usage: TokenUsage {
                input_tokens: kit::u64_field(h, "tokensIn"),
                output_tokens: kit::u64_field(h, "tokensOut"),
                cached_tokens: kit::u64_field(h, "cacheReads"),
                cache_write_tokens: kit::u64_field(h, "cacheWrites"),
                ..TokenUsage::default()
            },
            cost: h.get("totalCost").and_then(Value::as_f64),
        }
    }
}

/// The task-list files beside a task directory, in the order [`Lists::entry`] asks them:
/// `tasks/_index.json`, Cline's `state/taskHistory.json`, Kilo's `task_history.json`.
fn task_lists(dir: &Path) -> Vec<PathBuf> {
    let Some(tasks) = dir.parent() else {
        return Vec::new();
    };
    let mut lists = vec![tasks.join("_index.json")];
    if let Some(base) = tasks.parent() {
        lists.push(base.join("state/taskHistory.json"));
        // Kilo Code's `GlobalFileNames.taskHistory`, beside `tasks/`.
        lists.push(base.join("task_history.json"));
    }
    lists
}

/// The editor's global-state database of the extension whose task `dir` is:
/// `globalStorage/state.vscdb`, above `globalStorage/<extension>/tasks/<id>`.
fn state_db(dir: &Path) -> Option<PathBuf> {
    Some(dir.parent()?.parent()?.parent()?.join("state.vscdb"))
}

/// A task list's entries by task id.
type ListMap = Arc<HashMap<String, HistoryEntry>>;

/// Task lists parsed once per version: every session of a store looks its entry up in the
/// same list, and parsing a list of thousands of tasks per session would dominate a walk.
#[derive(Default)]
struct Lists {
    parsed: kit::PerVersion<ListMap>,
    /// The editors' `state.vscdb` task lists, by database.
    states: Mutex<HashMap<PathBuf, (sqlite::DbVersion, ListMap)>>,
    reader: sqlite::Reader,
}

/// A task list's entries: a list of entries, or `{entries: [...]}`.
fn read_list(list: &Path) -> ListMap {
    let mut map = HashMap::new();
    if let Ok(v) = kit::read_json(list, "taskHistory.json", MAX_JSON_BYTES) {
        let entries = match &v {
            Value::Array(a) => &a[..],
            Value::Object(o) => match o.get("entries") {
                Some(Value::Array(a)) => &a[..],
                _ => &[],
            },
            _ => &[],
        };
        for e in entries {
            if let Some(id) = kit::str_field(e, "id") {
                map.insert(id.to_string(), HistoryEntry::from_value(e));
            }
        }
    }
    Arc::new(map)
}

impl Lists {
    fn get(&self, list: &Path) -> ListMap {
        self.parsed.get(list, read_list)
    }

    /// The task-list entry of a task: Roo and Kilo's own `history_item.json`, else the
    /// `tasks/_index.json` beside it, else Cline's `state/taskHistory.json`, else Kilo's
    /// `task_history.json`, else the editor's `state.vscdb` ([`Lists::state`]). Only these
    /// files are opened.
    fn entry(&self, dialect: Dialect, dir: &Path, id: &str) -> Option<HistoryEntry> {
        if dialect != Dialect::Cline {
            let own = dir.join(HISTORY_ITEM_FILE);
            if let Ok(v @ Value::Object(_)) =
                kit::read_json(&own, HISTORY_ITEM_FILE, MAX_JSON_BYTES)
            {
                return Some(HistoryEntry::from_value(&v));
            }
        }
        task_lists(dir)
            .iter()
            .find_map(|l| self.get(l).get(id).cloned())
            .or_else(|| {
                let db = state_db(dir)?;
                self.state(&db, dialect.extension_id()).get(id).cloned()
            })
    }

    /// The task list older versions kept in the extension's VS Code global state: the
    /// `taskHistory` of the `ItemTable` row keyed by the extension id, in the editor's
    /// `globalStorage/state.vscdb`. Only that row is selected and only `taskHistory` is
    /// taken from it (the same value holds the extension's other settings).
    fn state(&self, db: &Path, ext: &str) -> ListMap {
        if !db.is_file() {
            return Arc::default();
        }
        let version = sqlite::db_version(db);
        if let Ok(cache) = self.states.lock() {
            if let Some((_, map)) = cache.get(db).filter(|(v, _)| *v == version) {
                return map.clone();
            }
        }
        let row = self.reader.read(db, sqlite::Access::InPlace, |c| {
            let t = sqlite::Table::probe(c, "ItemTable")?;
            if !t.has("key") || !t.has("value") {
                return Ok(None);
            }
            let sql = "SELECT value FROM ItemTable WHERE key = ?1";
            let rows = sqlite::Rows::query(c, sql, vec!["value".into()], [ext])?;
            Ok(rows.first().and_then(|r| r.get("value").text()))
        });
        let mut map = HashMap::new();
        if let Ok((Some(text), _)) = row {
            let v: Value = serde_json::from_str(&text).unwrap_or_default();
            let entries = v.get("taskHistory").and_then(Value::as_array);
            for e in entries.into_iter().flatten() {
                if let Some(id) = kit::str_field(e, "id") {
                    map.insert(id.to_string(), HistoryEntry::from_value(e));
                }
            }
        }
        let map = Arc::new(map);
        if let Ok(mut cache) = self.states.lock() {
            cache.insert(db.to_path_buf(), (version, map.clone()));
        }
        map
    }
}

/// Load one task directory.
pub fn load_task(dialect: Dialect, dir: &Path, id: &str, hist: Option<HistoryEntry>) -> Session {
    let agent = dialect.agent();
    let mut b = SessionBuilder::new(agent, id);
    b.s.source.format = dialect.format().to_string();
    let files = |name: &'static str, b: &mut SessionBuilder| -> Option<Records> {
        let path = dir.join(name);
        match read_array(&path, name) {
            Ok(Some(r)) => {
                b.s.source.paths.push(path);
                if r.unparsed.is_some() {
                    b.warn(format!(
                        "{name}: cut after {} records (half-written?); the rest is shown as raw text",
                        r.items.len()
                    ));
                }
                Some(r)
            }
            Ok(None) => None,
            Err(e) => {
                b.s.source.paths.push(path);
                b.warn(e.to_string());
                None
            }
        }
    };
    let api = files(API_FILE, &mut b);
    let ui = files(UI_FILE, &mut b);
    let meta = dir.join(METADATA_FILE);
    let fallback_model = match kit::read_json(&meta, METADATA_FILE, MAX_JSON_BYTES) {
        Ok(v) => {
            b.s.source.paths.push(meta);
            v.get("model_usage")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().rev().find_map(|m| kit::str_field(m, "model_id")))
                .map(str::to_string)
        }
        Err(_) if !meta.exists() => None,
        Err(e) => {
            b.warn(e);
            None
        }
    };

    let mut p = Parser::new(b, fallback_model, api.is_some());
    let api_items = api.as_ref().map_or(&[][..], |r| &r.items[..]);
    let ui_items = ui.as_ref().map_or(&[][..], |r| &r.items[..]);
    p.run(api_items, ui_items);
    for (name, r) in [(API_FILE, &api), (UI_FILE, &ui)] {
        if let Some(raw) = r.as_ref().and_then(|r| r.unparsed.as_ref()) {
            p.raw(name, raw);
        }
    }
    let mut b = p.b;

    // Usage: per request from the UI, else per message from the API (done in `run`), else
    // the task list's totals.
    if let Some(h) = hist {
        let carried =
            b.s.messages
                .iter()
                .any(|m| m.token_usage.is_some() || m.cost.is_some());
        if !carried {
            if !h.usage.is_zero() {
                b.s.reported_usage = Some(h.usage);
            }
            if let Some(c) = h.cost.filter(|c| *c > 0.0 || !h.usage.is_zero()) {
                b.s.reported_cost = Some((c, false));
            }
        }
        b.s.title = h.title;
        b.s.cwd = h.cwd;
        b.s.parent = h.parent.map(|p| unified_id(agent, &p));
        for child in h.children {
            b.s.subagents.push(Subagent {
                name: crate::names::escape(&child),
                unified_id: Some(unified_id(agent, &child)),
                ..Subagent::default()
            });
        }
    }
    if b.s.cwd.is_none() {
        b.s.cwd =
            b.s.messages
                .iter()
                .filter(|m| m.kind == MessageKind::Context)
                .find_map(|m| cwd_from_environment(&m.content));
    }
    if b.s.created_at.is_none() {
        // Cline's task id is `Date.now()` at creation.
        b.s.created_at = id
            .parse::<i64>()
            .ok()
            .filter(|ms| *ms > 1_000_000_000_000)
            .and_then(DateTime::<Utc>::from_timestamp_millis);
    }
    if b.s.title.is_none() {
        b.s.title =
            b.s.messages
                .iter()
                .filter(|m| m.role == Role::User && m.kind == MessageKind::Normal)
                .find_map(|m| title_from_text(unwrap_prompt(&m.content)));
    }
    b.finish()
}

/// `# Current Working Directory (<path>) Files` in the environment details.
fn cwd_from_environment(text: &str) -> Option<String> {
    // Roo Code and Kilo Code say "Workspace".
    let (i, head) = [
        "# Current Working Directory (",
        "# Current Workspace Directory (",
    ]
    .iter()
    .find_map(|h| text.find(h).map(|i| (i, h.len())))?;
    let rest = &text[i + head..];
    let line = rest.lines().next()?;
    let end = line.rfind(')')?;
    Some(line[..end].to_string()).filter(|s| !s.is_empty())
}

/// What the message-level parse keeps between records.
struct Parser {
    b: SessionBuilder,
    model: Option<String>,
    has_api: bool,
    /// Usage comes from the UI records when any carries it.
    ui_usage: bool,
    /// Calls of the last reply not answered yet, in call order.
    pending: VecDeque<(String, String)>,
    /// Index in the session of the last reply from the API history.
    last_reply: Option<usize>,
    /// Text of the last reply, for calls made in XML.
    last_reply_text: String,
    /// Reasoning from the UI waiting for the reply it belongs to.
    thinking: Vec<String>,
    /// Flattened text of each API message, for the duplicate test.
    flat: Vec<String>,
    synthetic: usize,
}

impl Parser {
    fn new(b: SessionBuilder, model: Option<String>, has_api: bool) -> Parser {
        Parser {
            b,
            model,
            has_api,
            ui_usage: false,
            pending: VecDeque::new(),
            last_reply: None,
            last_reply_text: String::new(),
            thinking: Vec::new(),
            flat: Vec::new(),
            synthetic: 0,
        }
    }

    fn run(&mut self, api: &[Value], ui: &[Value]) {
        self.flat = api.iter().map(flatten).collect();
        self.ui_usage = ui.iter().any(|r| usage_kind(r).is_some());
        // Where each UI record goes: after the API message its index names.
        let api_ts: Vec<Option<i64>> = api
            .iter()
            .map(|m| m.get("ts").and_then(Value::as_i64))
            .collect();
        let place = |r: &Value| -> i64 {
            if let Some(h) = r.get("conversationHistoryIndex").and_then(Value::as_i64) {
                return h;
            }
            match r.get("ts").and_then(Value::as_i64) {
                Some(ts) if api_ts.iter().any(Option::is_some) => {
                    api_ts.iter().filter(|t| t.is_some_and(|t| t <= ts)).count() as i64 - 1
                }
                _ => api.len() as i64 - 1,
            }
        };
        let mut slots: Vec<Vec<(usize, &Value)>> = vec![Vec::new(); api.len() + 1];
        for (i, r) in ui.iter().enumerate() {
            let h = place(r).clamp(-1, api.len() as i64 - 1);
            slots[(h + 1) as usize].push((i, r));
        }
        for (i, r) in std::mem::take(&mut slots[0]) {
            self.ui_record(i, r, -1);
        }
        for (i, m) in api.iter().enumerate() {
            self.api_message(i, m);
            for (j, r) in std::mem::take(&mut slots[i + 1]) {
                self.ui_record(j, r, i as i64);
            }
        }
        self.flush_thinking();
    }

    // -----------------------------------------------------------------------------------
    // The API history

    fn api_message(&mut self, index: usize, m: &Value) {
        let Some(obj) = m.as_object() else {
            self.b.warn(format!(
                "{API_FILE}: record {index} is not an object, shown raw"
            ));
            self.raw(API_FILE, &m.to_string());
            return;
        };
        let ts = obj.get("ts").and_then(super::parse_time);
        if let Some(model) = obj
            .get("modelInfo")
            .and_then(|i| kit::str_field(i, "modelId"))
            .filter(|s| !s.is_empty())
        {
            self.model = Some(model.to_string());
        }
        // Roo Code: a reasoning item of its own.
        if kit::str_field(m, "type") == Some("reasoning") {
            let text = reasoning_text(m);
            self.flush_thinking();
            self.b.push(Message {
                role: Role::Assistant,
                thinking: Some(text),
                timestamp: ts,
                model: self.model.clone(),
                ..Message::default()
            });
            return;
        }
        let role = kit::str_field(m, "role").unwrap_or("");
        let one;
        let blocks: &[Value] = match obj.get("content") {
            Some(Value::String(s)) => {
                one = [serde_json::json!({"type": "text", "text": s})];
                &one
            }
            Some(Value::Array(a)) => a,
            _ => &[],
        };
        if role == "assistant" {
            self.api_reply(obj, blocks, ts);
        } else {
            self.api_user(blocks, ts, obj.get("isSummary").is_some_and(|v| v == true));
        }
    }

    fn api_reply(&mut self, obj: &Map<String, Value>, blocks: &[Value], ts: Option<DateTime<Utc>>) {
        let mut msg = Message {
            role: Role::Assistant,
            timestamp: ts,
            model: self.model.clone(),
            native_id: obj.get("id").and_then(Value::as_str).map(str::to_string),
            ..Message::default()
        };
        let mut text = String::new();
        let mut thinking: Vec<String> = Vec::new();
        if let Some(r) = obj.get("reasoning_content").and_then(Value::as_str) {
            thinking.push(r.to_string());
        }
        for bl in blocks {
            match kit::str_field(bl, "type").unwrap_or("") {
                "text" => {
                    push_para(&mut text, kit::str_field(bl, "text").unwrap_or(""));
                    if let Some(Value::Array(details)) = bl.get("reasoning_details") {
                        for d in details {
                            if let Some(t) = kit::str_field(d, "text").filter(|t| !t.is_empty()) {
                                thinking.push(t.to_string());
                            }
                        }
                    }
                }
                "thinking" => {
                    if let Some(t) = kit::str_field(bl, "thinking").filter(|t| !t.is_empty()) {
                        thinking.push(t.to_string());
                    }
                }
                "redacted_thinking" => thinking.push(SEALED_THINKING.to_string()),
                "tool_use" => {
                    let id = kit::str_any(bl, &["id", "call_id"])
                        .unwrap_or("")
                        .to_string();
                    let name = kit::str_field(bl, "name").unwrap_or("").to_string();
                    msg.tool_calls.push(ToolCall {
                        tool_call_id: id,
                        tool_name: name,
                        input: bl.get("input").cloned().unwrap_or(Value::Null),
                        ..ToolCall::default()
                    });
                }
                "image" | "document" => push_para(&mut text, &media_placeholder(bl)),
                _ => push_para(&mut text, &bl.to_string()),
            }
        }
        if thinking.is_empty() && !self.thinking.is_empty() {
            thinking = std::mem::take(&mut self.thinking);
        } else {
            self.flush_thinking();
        }
        if !thinking.is_empty() {
            msg.thinking = Some(thinking.join("\n\n"));
        }
        if !self.ui_usage {
            if let Some(metrics) = obj.get("metrics") {
                let prompt = kit::u64_at(metrics, &["tokens", "prompt"]);
                let cached = kit::u64_at(metrics, &["tokens", "cached"]);
                let u = TokenUsage {
                    // `prompt` includes the cache hits (content.ts, `ClineTokensInfo`).
                    input_tokens: prompt.saturating_sub(cached),
                    output_tokens: kit::u64_at(metrics, &["tokens", "completion"]),
                    cached_tokens: cached,
                    ..TokenUsage::default()
                };
                if !u.is_zero() {
                    msg.token_usage = Some(u);
                }
                msg.cost = metrics.get("cost").and_then(Value::as_f64);
            }
        }
        msg.content = text;
        self.pending = msg
            .tool_calls
            .iter()
            .map(|c| (c.tool_call_id.clone(), c.tool_name.clone()))
            .collect();
        self.last_reply_text = msg.content.clone();
        self.last_reply = Some(self.b.s.messages.len());
        self.b.push(msg);
    }

    fn api_user(&mut self, blocks: &[Value], ts: Option<DateTime<Utc>>, summary: bool) {
        self.flush_thinking();
        // Consecutive blocks of one kind make one message, in block order.
        let mut prompt = String::new();
        let flush = |p: &mut Parser, prompt: &mut String| {
            if !prompt.trim().is_empty() {
                p.b.push(Message {
                    role: Role::User,
                    kind: if summary {
                        MessageKind::CompactionSummary
                    } else {
                        MessageKind::Normal
                    },
                    content: std::mem::take(prompt),
                    timestamp: ts,
                    ..Message::default()
                });
            }
            prompt.clear();
        };
        // A block right after a result that is neither a prompt nor context is more of
        // that result (Cline writes a result's header and its content as separate blocks).
        let mut after_result = false;
        for bl in blocks {
            match kit::str_field(bl, "type").unwrap_or("") {
                "tool_result" => {
                    flush(self, &mut prompt);
                    let id = kit::str_field(bl, "tool_use_id").unwrap_or("").to_string();
                    self.pending.retain(|(p, _)| *p != id);
                    let output = result_text(bl.get("content"));
                    let is_error = bl.get("is_error").is_some_and(|v| v == true);
                    self.b.tool_result(&id, None, output, is_error, ts);
                    after_result = true;
                }
                "text" => {
                    let t = kit::str_field(bl, "text").unwrap_or("");
                    if let Some(name) = text_result_tool(t) {
                        flush(self, &mut prompt);
                        self.text_result(name, t, ts);
                        after_result = true;
                    } else if let Some(label) = context_label(t) {
                        flush(self, &mut prompt);
                        self.b.context(label, t.trim().to_string(), ts);
                        after_result = false;
                    } else if after_result && !holds_user_words(t) && self.extend_result(t) {
                    } else {
                        push_para(&mut prompt, t);
                        after_result = false;
                    }
                }
                "image" | "document" => {
                    let p = media_placeholder(bl);
                    if !(after_result && self.extend_result(&p)) {
                        push_para(&mut prompt, &p);
                    }
                }
                _ => push_para(&mut prompt, &bl.to_string()),
            }
        }
        flush(self, &mut prompt);
    }

    /// Append `text` to the result just pushed; `false` when the last message is none.
    fn extend_result(&mut self, text: &str) -> bool {
        let Some(r) = self.b.last_mut().and_then(|m| m.tool_result.as_mut()) else {
            return false;
        };
        push_para(&mut r.output, text);
        true
    }

    /// A `[tool for 'x'] Result:` text block: the next unanswered call, or a call made in
    /// XML in the reply's text.
    fn text_result(&mut self, name: &str, text: &str, ts: Option<DateTime<Utc>>) {
        let id = match self.pending.pop_front() {
            Some((id, _)) if !id.is_empty() => id,
            _ => {
                self.synthetic += 1;
                let id = format!("text-call-{}", self.synthetic);
                if let Some(mi) = self.last_reply {
                    let input = xml_call(&self.last_reply_text, name).unwrap_or(Value::Null);
                    self.b.s.messages[mi].tool_calls.push(ToolCall {
                        tool_call_id: id.clone(),
                        tool_name: name.to_string(),
                        input,
                        ..ToolCall::default()
                    });
                }
                id
            }
        };
        let is_error = !text.contains("] Result") && text.contains("] Error");
        self.b
            .tool_result(&id, Some(name), text.to_string(), is_error, ts);
    }

    fn flush_thinking(&mut self) {
        if self.thinking.is_empty() {
            return;
        }
        let t = std::mem::take(&mut self.thinking).join("\n\n");
        self.b.push(Message {
            role: Role::Assistant,
            thinking: Some(t),
            model: self.model.clone(),
            ..Message::default()
        });
    }

    /// Unparsable text, visible as an event.
    fn raw(&mut self, file: &str, raw: &str) {
        let text: String = raw.chars().take(MAX_RAW_CHARS).collect();
        self.b
            .event(format!("unparsed text in {file}:\n\n{text}"), None);
    }

    // -----------------------------------------------------------------------------------
    // The UI messages

    /// Whether the API history near index `h` already holds `text`.
    fn in_api(&self, text: &str, h: i64) -> bool {
        let t = text.trim();
        if t.is_empty() {
            return true;
        }
        let lo = (h - 2).max(0) as usize;
        let hi = ((h + 4).max(0) as usize).min(self.flat.len());
        self.flat
            .get(lo..hi)
            .is_some_and(|w| w.iter().any(|f| f.contains(t)))
    }

    fn ui_record(&mut self, index: usize, r: &Value, h: i64) {
        if !r.is_object() {
            self.b.warn(format!(
                "{UI_FILE}: record {index} is not an object, shown raw"
            ));
            self.raw(UI_FILE, &r.to_string());
            return;
        }
        let ts = r.get("ts").and_then(super::parse_time);
        let kind = kit::str_any(r, &["say", "ask"]).unwrap_or("");
        let is_ask = kit::str_field(r, "type") == Some("ask");
        let text = kit::str_field(r, "text").unwrap_or("");
        // The UI names the model of each request; the replies after it were made by it.
        if let Some(m) = r
            .get("modelInfo")
            .and_then(|i| kit::str_field(i, "modelId"))
            .filter(|s| !s.is_empty())
        {
            self.model = Some(m.to_string());
        }
        let model = self.model.clone();
        if let Some(u) = usage_kind(r) {
            self.usage(u, r, ts, model);
            return;
        }
        let mut media = String::new();
        for (key, what) in [("images", "image"), ("files", "file")] {
            if let Some(Value::Array(a)) = r.get(key) {
                for item in a.iter().filter_map(Value::as_str) {
                    let p = if item.starts_with("data:") {
                        kit::data_url_placeholder(item)
                    } else {
                        format!("[{what}: {item}]")
                    };
                    push_para(&mut media, &p);
                }
            }
        }
        let with_media = |t: &str| {
            let mut s = t.to_string();
            push_para(&mut s, &media);
            s
        };
        // The first record is the task (Cline says it as `text` or `task`).
        if index == 0 && !is_ask && (kind == "task" || kind == "text") {
            if !self.in_api(text, h) {
                self.b.push(Message {
                    role: Role::User,
                    content: with_media(text),
                    timestamp: ts,
                    ..Message::default()
                });
            }
            return;
        }
        match (is_ask, kind) {
            (false, "user_feedback" | "user_feedback_diff" | "task") => {
                if !self.in_api(text, h) {
                    self.b.push(Message {
                        role: Role::User,
                        content: with_media(text),
                        timestamp: ts,
                        ..Message::default()
                    });
                }
            }
            (false, "reasoning") => {
                if !text.trim().is_empty() && !self.in_api(text, h) {
                    self.thinking.push(text.to_string());
                }
            }
            (false, "checkpoint_created") => {
                let hash = kit::str_field(r, "lastCheckpointHash").unwrap_or("(no hash)");
                self.b.event(format!("checkpoint {hash}"), ts);
            }
            (
                _,
                "error"
                | "api_req_failed"
                | "diff_error"
                | "clineignore_error"
                | "mistake_limit_reached"
                | "command_permission_denied"
                | "error_retry"
                | "api_req_retried"
                | "shell_integration_warning"
                | "shell_integration_warning_with_suggestion"
                | "resume_task"
                | "resume_completed_task",
            ) => {
                let mut s = kind.to_string();
                if !text.trim().is_empty() {
                    s.push_str(": ");
                    s.push_str(text);
                }
                self.b.event(s, ts);
            }
            (
                _,
                "text"
                | "completion_result"
                | "followup"
                | "plan_mode_respond"
                | "act_mode_respond"
                | "plan_completion_result",
            ) => {
                let shown = ask_text(text);
                if !shown.trim().is_empty() && !self.in_api(&shown, h) && !self.in_api(text, h) {
                    self.b.push(Message {
                        role: Role::Assistant,
                        content: with_media(&shown),
                        timestamp: ts,
                        model,
                        ..Message::default()
                    });
                }
            }
            // The API history holds these calls with their inputs.
            (_, "tool" | "command" | "use_mcp_server" | "browser_action_launch" | "new_task")
                if self.has_api => {}
            (_, "tool" | "command" | "use_mcp_server" | "browser_action_launch" | "new_task") => {
                let input = serde_json::from_str::<Value>(text)
                    .unwrap_or_else(|_| Value::String(text.to_string()));
                let name = match kind {
                    "tool" => kit::str_field(&input, "tool").unwrap_or("tool").to_string(),
                    k => k.to_string(),
                };
                self.synthetic += 1;
                self.b.push(Message {
                    role: Role::Assistant,
                    timestamp: ts,
                    model,
                    tool_calls: vec![ToolCall {
                        tool_call_id: format!("ui-call-{}", self.synthetic),
                        tool_name: name,
                        input,
                        ..ToolCall::default()
                    }],
                    ..Message::default()
                });
            }
            _ => {
                let body = format!("{text}{}", if media.is_empty() { "" } else { "\n\n" }) + &media;
                if !body.trim().is_empty() && !self.in_api(text, h) {
                    self.b.event(format!("{kind}: {body}"), ts);
                }
            }
        }
    }

    /// One API request's usage (or a summary of deleted ones) as an event carrying it.
    fn usage(&mut self, kind: &str, r: &Value, ts: Option<DateTime<Utc>>, model: Option<String>) {
        let text = kit::str_field(r, "text").unwrap_or("");
        let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let u = TokenUsage {
            input_tokens: kit::u64_field(&v, "tokensIn"),
            output_tokens: kit::u64_field(&v, "tokensOut"),
            cached_tokens: kit::u64_field(&v, "cacheReads"),
            cache_write_tokens: kit::u64_field(&v, "cacheWrites"),
            ..TokenUsage::default()
        };
        let cost = v.get("cost").and_then(Value::as_f64);
        let label = match kind {
            "deleted_api_reqs" => "deleted API requests",
            "subagent_usage" => "subagent API requests",
            _ => "API request",
        };
        let mut s = format!(
            "{label}: {} in, {} out, {} cache reads, {} cache writes",
            u.input_tokens, u.output_tokens, u.cached_tokens, u.cache_write_tokens
        );
        if let Some(c) = cost {
            s.push_str(&format!(", ${c:.6}"));
        }
        for key in ["cancelReason", "streamingFailedMessage"] {
            if let Some(t) = kit::str_field(&v, key).filter(|t| !t.is_empty()) {
                s.push_str(&format!("\n{key}: {t}"));
            }
        }
        if v.is_null() && !text.trim().is_empty() {
            self.b.warn(format!(
                "{UI_FILE}: a {kind} record's text is not JSON; shown raw"
            ));
            s.push_str("\n\n");
            s.push_str(text);
        }
        let request = kit::str_field(&v, "request").unwrap_or("");
        self.b.push(Message {
            role: Role::System,
            kind: MessageKind::Event,
            content: s,
            timestamp: ts,
            model,
            token_usage: (!u.is_zero()).then_some(u),
            cost,
            ..Message::default()
        });
        // The request text is the API history's user message; shown only without it.
        if !self.has_api && !request.trim().is_empty() {
            self.b.context("API request", request.to_string(), ts);
        }
    }
}

/// The usage-carrying UI record kinds (Cline's `getApiMetrics`).
fn usage_kind(r: &Value) -> Option<&str> {
    if kit::str_field(r, "type") != Some("say") {
        return None;
    }
    kit::str_field(r, "say").filter(|k| {
        matches!(
            *k,
            "api_req_started" | "api_req_finished" | "deleted_api_reqs" | "subagent_usage"
        )
    })
}

/// A `followup` / `plan_mode_respond` ask holds JSON (`question`/`response`, `options`).
fn ask_text(text: &str) -> String {
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text) else {
        return text.to_string();
    };
    let Some(main) = ["question", "response", "text"]
        .iter()
        .find_map(|k| o.get(*k).and_then(Value::as_str))
    else {
        return text.to_string();
    };
    let mut s = main.to_string();
    if let Some(Value::Array(opts)) = o.get("options") {
        for opt in opts.iter().filter_map(Value::as_str) {
            s.push_str("\n- ");
            s.push_str(opt);
        }
    }
    s
}

/// The tool a `[name for 'x'] Result:` (or `] Error`) text block answers. The header can
/// span lines (a command with newlines) and hold `]` (a search pattern), so the name is the
/// identifier after `[` and the marker is looked for in the block's first 8 KB.
fn text_result_tool(text: &str) -> Option<&str> {
    let rest = text.strip_prefix('[')?;
    let end = rest.find([' ', ']'])?;
    let name = &rest[..end];
    if name.is_empty()
        || !name
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-')
    {
        return None;
    }
    let mut cut = rest.len().min(8192);
    while !rest.is_char_boundary(cut) {
        cut -= 1;
    }
    let head = &rest[..cut];
    (head.contains("] Result") || head.contains("] Error")).then_some(name)
}

/// Context Cline adds to a user message for the model.
fn context_label(text: &str) -> Option<&'static str> {
    let t = text.trim_start();
    if t.starts_with("<environment_details>") {
        Some("environment details")
    } else if t.starts_with("# task_progress") || t.starts_with("# TODO LIST") {
        Some("task progress reminder")
    } else if t.starts_with("[TASK RESUMPTION]") {
        Some("task resumption")
    } else if t.starts_with("<explicit_instructions") {
        Some("instructions")
    } else if t.starts_with("[ERROR]") || t.starts_with("(The user did not provide a new message") {
        Some("harness notice")
    } else {
        None
    }
}

/// Whether a block carries the user's own words, which Cline wraps in tags.
fn holds_user_words(text: &str) -> bool {
    ["<task>", "<feedback>", "<answer>", "<user_message>"]
        .iter()
        .any(|t| text.contains(t))
}

/// The words of a prompt Cline wrapped in `<task>`, `<feedback>`, `<answer>` or
/// `<user_message>` (for its title; the transcript keeps what the model saw).
fn unwrap_prompt(text: &str) -> &str {
    let t = text.trim();
    for tag in ["task", "feedback", "answer", "user_message"] {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        if let Some(inner) = t.strip_prefix(open.as_str()) {
            if let Some(end) = inner.find(close.as_str()) {
                return inner[..end].trim();
            }
        }
    }
    t
}

/// The parameters of the first `<name>…</name>` call in a reply's text, as an object.
fn xml_call(text: &str, name: &str) -> Option<Value> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = text.find(&open)? + open.len();
    let end = start + text[start..].find(&close)?;
    let mut body = &text[start..end];
    let mut params = Map::new();
    while let Some(i) = body.find('<') {
        let rest = &body[i + 1..];
        let Some(j) = rest.find('>') else { break };
        let tag = &rest[..j];
        if tag.is_empty() || !tag.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
            body = rest;
            continue;
        }
        let after = &rest[j + 1..];
        let close = format!("</{tag}>");
        let Some(k) = after.find(&close) else { break };
        let v = after[..k].strip_prefix('\n').unwrap_or(&after[..k]);
        let v = v.strip_suffix('\n').unwrap_or(v);
        params.insert(tag.to_string(), Value::String(v.to_string()));
        body = &after[k + close.len()..];
    }
    Some(Value::Object(params))
}

/// A `tool_result` block's content as text; images as placeholders.
fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => {
            let mut out = String::new();
            for bl in a {
                match kit::str_field(bl, "type") {
                    Some("text") => push_para(&mut out, kit::str_field(bl, "text").unwrap_or("")),
                    Some("image") | Some("document") => push_para(&mut out, &media_placeholder(bl)),
                    _ => push_para(&mut out, &bl.to_string()),
                }
            }
            out
        }
        Some(Value::Null) | None => String::new(),
        Some(v) => v.to_string(),
    }
}

/// Roo Code's reasoning item: its summary text, else a placeholder for encrypted content.
fn reasoning_text(m: &Value) -> String {
    let mut out = String::new();
    if let Some(Value::Array(summary)) = m.get("summary") {
        for s in summary {
            if let Some(t) = kit::str_field(s, "text") {
                push_para(&mut out, t);
            }
        }
    }
    if out.is_empty() {
        if let Some(t) = kit::str_field(m, "text") {
            out.push_str(t);
        }
    }
    if out.is_empty() {
        out.push_str(SEALED_THINKING);
    }
    out
}

fn media_placeholder(bl: &Value) -> String {
    let kind = if kit::str_field(bl, "type") == Some("document") {
        "attachment"
    } else {
        "image"
    };
    let src = bl.get("source").unwrap_or(&Value::Null);
    match kit::str_field(src, "type") {
        Some("base64") => kit::base64_placeholder(
            kind,
            kit::str_field(src, "media_type"),
            kit::str_field(src, "data"),
        ),
        Some("url") => format!("[{kind}: {}]", kit::str_field(src, "url").unwrap_or("")),
        _ => format!("[{kind}]"),
    }
}

/// Every string in an API message, joined, for the "already in the API history" test.
fn flatten(v: &Value) -> String {
    fn walk(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => {
                for (k, x) in o {
                    // Image data is not text anyone wrote.
                    if k != "data" {
                        walk(x, out);
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = String::new();
    walk(v, &mut out);
    out
}

fn push_para(out: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// VS Code writes `state.vscdb` for everything it keeps: a write of the extension's
    /// row moves only the version of the task whose entry it changed, and a write that
    /// changes no entry moves none. The database is a source of every task no list file
    /// gives an entry.
    #[test]
    fn a_state_db_write_moves_only_the_version_of_the_task_it_changed() {
        let dir = tempfile::tempdir().expect("tmp");
        let gs = dir.path().join("globalStorage");
        let ext = gs.join(Dialect::Roo.extension_id());
        for id in ["a", "b"] {
            let t = ext.join("tasks").join(id);
            std::fs::create_dir_all(&t).expect("mkdir");
            std::fs::write(t.join(API_FILE), "[]").expect("write");
        }
        let db = gs.join("state.vscdb");
        let c = rusqlite::Connection::open(&db).expect("db");
        c.execute_batch("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
            .expect("ddl");
        let state = |b_task: &str, other: &str| {
            let v = serde_json::json!({"apiProvider": other, "taskHistory": [
                {"id": "a", "task": "Alpha task", "workspace": "/w/a"},
                {"id": "b", "task": b_task, "workspace": "/w/b"}]});
            c.execute(
                "INSERT INTO ItemTable (key, value) VALUES (?1, ?2)",
                (Dialect::Roo.extension_id(), v.to_string()),
            )
            .expect("row");
        };
        state("Bravo task", "anthropic");
        let store = ClineStore::new(Dialect::Roo, vec![Root::new(Agent::Roo, &ext, "test")]);
        let mut listed = store.list();
        listed.sort_by(|x, y| x.id.cmp(&y.id));
        assert!(listed.iter().all(|l| l.sources.contains(&db)), "{listed:?}");
        let refs: Vec<&Listed> = listed.iter().collect();
        let before = store.versions(&refs);
        assert!(before.iter().all(Option::is_some), "{before:?}");
        // Another setting of the same row: no task's entry moves.
        state("Bravo task", "openrouter");
        assert_eq!(store.versions(&refs), before);
        state("Bravo task, renamed", "openrouter");
        let after = store.versions(&refs);
        assert_eq!(after[0], before[0], "a's entry is as it was");
        assert_ne!(after[1], before[1], "b's entry changed");
        // A task whose own history item gives its entry does not read the database.
        std::fs::write(
            ext.join("tasks/a").join(HISTORY_ITEM_FILE),
            r#"{"id": "a"}"#,
        )
        .expect("item");
        let relisted = store.list();
        let a = relisted.iter().find(|l| l.id == "a").expect("a");
        assert!(!a.sources.contains(&db));
        assert_eq!(store.versions(&[a]), [None]);
    }

    /// VS Code writes its global-state database every few seconds: it is watched only where a
    /// task needs it (an older build's task whose entry no list file gives).
    #[test]
    fn the_editor_database_is_watched_only_where_a_task_needs_it() {
        let dir = tempfile::tempdir().expect("tmp");
        let gs = dir.path().join("globalStorage");
        std::fs::create_dir_all(&gs).expect("mkdir");
        std::fs::write(gs.join("state.vscdb"), b"").expect("db");
        let ext = gs.join(Dialect::Roo.extension_id());
        let t = ext.join("tasks/a");
        std::fs::create_dir_all(&t).expect("mkdir");
        std::fs::write(t.join(API_FILE), "[]").expect("write");
        std::fs::write(t.join(HISTORY_ITEM_FILE), r#"{"id": "a"}"#).expect("item");
        let open = || ClineStore::new(Dialect::Roo, vec![Root::new(Agent::Roo, &ext, "test")]);
        assert!(
            open().watched_files().is_empty(),
            "every task has its entry in a file"
        );
        std::fs::remove_file(t.join(HISTORY_ITEM_FILE)).expect("rm");
        assert_eq!(open().watched_files(), [gs.join("state.vscdb")]);
    }

    #[test]
    fn a_cut_array_keeps_its_complete_records_and_the_raw_tail() {
        let r = parse_array(br#"[{"a":1}, {"b":2}, {"c":"hal"#).expect("array");
        assert_eq!(r.items.len(), 2);
        assert_eq!(r.unparsed.as_deref(), Some(r#"{"c":"hal"#));
        let r = parse_array(b" [ ] ").expect("array");
        assert!(r.items.is_empty() && r.unparsed.is_none());
        assert!(parse_array(b"{}").is_none());
    }

    #[test]
    fn text_results_name_their_tool() {
        assert_eq!(
            text_result_tool("[read_file for 'a b.rs'] Result:\n1 | x"),
            Some("read_file")
        );
        assert_eq!(
            text_result_tool("[subagents] Result:\nok"),
            Some("subagents")
        );
        assert_eq!(
            text_result_tool("[execute_command for 'a\nb'] Result:\nok"),
            Some("execute_command")
        );
        assert_eq!(
            text_result_tool("[search_files for '[\"]x'] Result:"),
            Some("search_files")
        );
        assert_eq!(text_result_tool("[TASK RESUMPTION] This task"), None);
        assert_eq!(text_result_tool("plain"), None);
    }

    #[test]
    fn xml_calls_become_inputs() {
        let t = "Let me look.\n<read_file>\n<path>src/a.rs</path>\n</read_file>";
        assert_eq!(
            xml_call(t, "read_file"),
            Some(serde_json::json!({"path": "src/a.rs"}))
        );
        assert_eq!(xml_call(t, "write_to_file"), None);
    }

    #[test]
    fn prompts_lose_their_wrapper_and_cwd_is_found() {
        assert_eq!(unwrap_prompt("<task>\nfix it\n</task>"), "fix it");
        assert_eq!(unwrap_prompt("plain"), "plain");
        let env = "<environment_details>\n# Current Working Directory (/home/u/p) Files\na.rs";
        assert_eq!(cwd_from_environment(env).as_deref(), Some("/home/u/p"));
    }
}
