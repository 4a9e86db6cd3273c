use super::parse::{norm, parse_content, result_text, strip_context, Content};
use super::*;
use crate::model::{Message, MessageKind, Role, TokenUsage, ToolCall};
use crate::stores::sqlite::{companion, parse_time_text, sqlite_uri};
use rusqlite::params;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const AGSH_DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/agsh-sessions.sql"
));
const MEKA_DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/meka-0.42.sql"
));

const S1: &str = "0b7c2d0e-5f1a-4c61-9a53-6f1d2e3c4b5a";
const S_EMPTY: &str = "9e8d7c6b-0000-4000-8000-000000000001";
const PARENT: &str = "meka-parent-7f3e";
const CHILD: &str = "meka-child-a1b2";
const SECRET: &str = "SECRET-TOKEN-must-never-show";

fn insert(conn: &Connection, sid: &str, role: &str, content: &str, at: &str) {
    conn.execute(
        "INSERT INTO messages (session_id, role, content, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![sid, role, content, at],
    )
    .unwrap();
}

fn session(conn: &Connection, sid: &str, created: &str, updated: &str) {
    conn.execute(
        "INSERT INTO sessions (id, created_at, updated_at) VALUES (?1, ?2, ?3)",
        params![sid, created, updated],
    )
    .unwrap();
}

/// An agsh `sessions.db` from the DDL in fixtures/schema, rows encoded as agsh's encoder writes them.
fn write_agsh_db(path: &Path) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(AGSH_DDL).unwrap();
    session(&conn, S1, "2025-03-01T10:00:00Z", "2025-03-01T10:09:00Z");
    insert(
        &conn,
        S1,
        "user",
        "<context>\ncwd: /home/dev/proj\ndate: 2025-03-01\n</context>\n\nPlease fix   the failing build",
        "2025-03-01T10:00:00Z",
    );
    let assistant = serde_json::json!([
        {"type": "thinking", "thinking": "The build log will say what broke."},
        {"type": "text", "text": "Let me run the build."},
        {"type": "tool_use", "id": "toolu_01", "name": "bash", "input": {"command": "cargo build"}}
    ]);
    insert(
        &conn,
        S1,
        "assistant",
        &assistant.to_string(),
        "2025-03-01T10:00:05Z",
    );
    let results = serde_json::json!([
        {"type": "tool_result", "tool_use_id": "toolu_01",
         "content": [{"type": "text", "text": "error[E0308]: mismatched types"}], "is_error": true}
    ]);
    insert(
        &conn,
        S1,
        "tool_results",
        &results.to_string(),
        "2025-03-01T10:00:09Z",
    );
    insert(
        &conn,
        S1,
        "assistant",
        "Fixed the type error in main.rs.",
        "2025-03-01T10:01:00Z",
    );
    let boundary = serde_json::json!({"CompactBoundary": {
        "summary": {"role": "user", "content": [{"type": "text",
            "text": "[Conversation summary from session compaction]\nThe user asked to fix the build."}]},
        "replaced_count": 4, "loaded_tools_snapshot": ["bash"]}});
    insert(
        &conn,
        S1,
        "compact_boundary",
        &boundary.to_string(),
        "2025-03-01T10:02:00Z",
    );
    insert(&conn, S1, "user", "Now add a test", "2025-03-01T10:03:00Z");
    let odd = serde_json::json!([
        {"type": "ToolUse", "id": "toolu_02", "name": "write_file", "input": {"path": "t.rs"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo".repeat(100)}},
        {"type": "hologram", "payload": 1}
    ]);
    insert(
        &conn,
        S1,
        "assistant",
        &odd.to_string(),
        "2025-03-01T10:04:00Z",
    );
    let res2 = serde_json::json!([
        {"type": "ToolResult", "tool_use_id": "toolu_02", "content": "wrote t.rs", "is_error": false}
    ]);
    insert(
        &conn,
        S1,
        "tool_results",
        &res2.to_string(),
        "2025-03-01T10:04:01Z",
    );
    insert(
        &conn,
        S1,
        "mystery_role",
        "{\"x\":1}",
        "2025-03-01T10:05:00Z",
    );
    insert(
        &conn,
        S1,
        "assistant",
        "[{\"type\":\"text\",\"text\":\"unterminated",
        "2025-03-01T10:06:00Z",
    );
    conn.execute(
        "INSERT INTO tool_outputs (session_id, name, content, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![
            S1,
            "plan/notes",
            "1. reproduce\n2. fix\n3. test",
            "2025-03-01T10:01:30Z"
        ],
    )
    .unwrap();
    session(
        &conn,
        S_EMPTY,
        "2025-03-02T08:00:00Z",
        "2025-03-02T08:00:00Z",
    );
    conn.execute(
        "INSERT INTO oauth_tokens (provider, access_token, refresh_token, updated_at) VALUES ('anthropic', ?1, ?1, 'x')",
        [SECRET],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO mcp_oauth_credentials VALUES ('github', ?1, 'x')",
        [SECRET],
    )
    .unwrap();
    conn.execute("INSERT INTO mcp_auth_cache VALUES ('github', 1, 0)", [])
        .unwrap();
}

/// A meka database (WAL) with a parent session and a sub-agent child. Returns the open
/// writer connection so the WAL stays as a live agent leaves it.
fn write_meka_db(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.execute_batch(MEKA_DDL).unwrap();
    conn.execute_batch(
        "ALTER TABLE sessions ADD COLUMN provider TEXT NOT NULL DEFAULT '';
             ALTER TABLE sessions ADD COLUMN model_override TEXT;
             ALTER TABLE sessions ADD COLUMN base_url_override TEXT;
             PRAGMA user_version = 5;",
    )
    .unwrap();
    conn.execute(
        "INSERT INTO sessions (id, created_at, updated_at, cwd, stat_turns, stat_input_tokens,
               stat_output_tokens, stat_cache_creation_input_tokens, stat_cache_read_input_tokens,
               provider, model_override, token_id)
             VALUES (?1, '2025-05-01T09:00:00Z', '2025-05-01T09:30:00Z', '/srv/app', 3, 1200, 340, 50, 900,
               'anthropic', 'claude-sonnet-4', ?2)",
        params![PARENT, SECRET],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO sessions (id, created_at, updated_at, parent_session_id, subagent_spec_json, provider)
             VALUES (?1, '2025-05-01T09:10:00Z', '2025-05-01T09:12:00Z', ?2, '{\"description\":\"search the docs\"}', 'anthropic')",
        params![CHILD, PARENT],
    )
    .unwrap();
    insert(
        &conn,
        PARENT,
        "user",
        "Deploy the app to staging",
        "2025-05-01T09:00:00Z",
    );
    insert(
        &conn,
        PARENT,
        "assistant",
        r#"[{"type":"text","text":"Spawning a helper."},{"type":"tool_use","id":"t1","name":"spawn_agent","input":{"task":"search the docs"}}]"#,
        "2025-05-01T09:00:10Z",
    );
    insert(
        &conn,
        PARENT,
        "repair",
        r#"{"Repair":{"replaced_count":2,"messages":[{"role":"assistant","content":[{"type":"text","text":"Retrying deployment plan."}]}]}}"#,
        "2025-05-01T09:20:00Z",
    );
    insert(
        &conn,
        PARENT,
        "redact",
        r#"{"Redact":{"images":3}}"#,
        "2025-05-01T09:21:00Z",
    );
    insert(
        &conn,
        CHILD,
        "user",
        "search the docs",
        "2025-05-01T09:10:00Z",
    );
    insert(
        &conn,
        CHILD,
        "assistant",
        r#"[{"type":"text","text":"Found deploy.md"}]"#,
        "2025-05-01T09:11:00Z",
    );
    conn.execute(
        "INSERT INTO provider_credentials VALUES ('default', ?1, 'x')",
        [SECRET],
    )
    .unwrap();
    conn
}

fn store_for(paths: &[&Path]) -> AgshStore {
    AgshStore::new(
        paths
            .iter()
            .map(|p| Root::new(Agent::Agsh, p.to_path_buf(), "test"))
            .collect(),
    )
}

fn listed(store: &AgshStore, id: &str) -> Listed {
    store
        .list()
        .into_iter()
        .find(|l| l.id == id)
        .unwrap_or_else(|| panic!("{id} not listed"))
}

#[test]
fn candidates_follow_overrides_and_defaults() {
    let mut env = Env {
        home: PathBuf::from("/home/u"),
        ..Env::default()
    };
    let c = candidates(&env);
    assert_eq!(
        c[0].path,
        PathBuf::from("/home/u/.local/share/agsh/sessions.db")
    );
    assert_eq!(c[0].how, "default");
    assert!(c
        .iter()
        .any(|r| r.path == Path::new("/home/u/Library/Application Support/meka/meka.db")));
    env.vars.insert("AGSH_DATA_DIR".into(), "/data/agsh".into());
    env.vars.insert("XDG_DATA_HOME".into(), "/xdg".into());
    env.vars.insert("MEKA_DATA_DIR".into(), "~/m".into());
    let c = candidates(&env);
    let find = |p: &str| {
        c.iter()
            .find(|r| r.path == Path::new(p))
            .map(|r| r.how.clone())
    };
    assert_eq!(
        find("/data/agsh/sessions.db").as_deref(),
        Some("AGSH_DATA_DIR")
    );
    assert_eq!(
        find("/xdg/agsh/sessions.db").as_deref(),
        Some("XDG_DATA_HOME")
    );
    assert_eq!(find("/home/u/m/meka.db").as_deref(), Some("MEKA_DATA_DIR"));
    assert_eq!(find("/xdg/meka/meka.db").as_deref(), Some("XDG_DATA_HOME"));
    assert!(c.iter().all(|r| r.agent == Agent::Agsh));
}

#[test]
fn open_all_finds_database_files_under_home() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(".local/share/agsh");
    std::fs::create_dir_all(&dir).unwrap();
    write_agsh_db(&dir.join(AGSH_DB));
    let env = Env {
        home: tmp.path().to_path_buf(),
        ..Env::default()
    };
    let stores = super::super::open_all(&env, &[]);
    let s = stores.iter().find(|s| s.agent() == Agent::Agsh).unwrap();
    assert_eq!(s.roots().len(), 1);
    let mut ids: Vec<String> = s.list().into_iter().map(|l| l.id).collect();
    ids.sort();
    assert_eq!(ids, vec![S1.to_string(), S_EMPTY.to_string()]);
}

/// The bundled sample (written by scripts/make-samples; expected values from its rows).
#[test]
fn bundled_sample_database_loads() {
    let db =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home/.local/share/agsh/sessions.db");
    let store = store_for(&[&db]);
    let l = listed(&store, "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d");
    let s = store.load(&l);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(
        s.title.as_deref(),
        Some("Why does backup.sh skip files with spaces in their names?")
    );
    let calls: Vec<&ToolCall> = s.messages.iter().flat_map(|m| &m.tool_calls).collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].tool_name, "read_file");
    assert_eq!(calls[0].input["path"], "backup.sh");
    let r = s
        .messages
        .iter()
        .find_map(|m| m.tool_result.as_ref())
        .unwrap();
    assert!(r.output.contains("for f in $(ls $SRC); do"));
    assert!(s
        .messages
        .last()
        .unwrap()
        .text()
        .contains("quote the variable"));
    assert_eq!(s.extra_files.len(), 1);
    assert!(s.extra_files[0].1.contains("3. suggest a quoted glob"));
}

#[test]
fn loads_an_agsh_session() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join(AGSH_DB);
    write_agsh_db(&db);
    let store = store_for(&[&db]);
    let l = listed(&store, S1);
    assert_eq!(l.path, db);
    assert_eq!(l.sources, vec![db.clone(), companion(&db, "-wal")]);
    let s = store.load(&l);
    assert_eq!(s.source.format, "agsh-sqlite");
    assert_eq!(s.title.as_deref(), Some("Please fix the failing build"));
    assert_eq!(s.created_at, parse_time_text("2025-03-01T10:00:00Z"));
    assert_eq!(s.updated_at, parse_time_text("2025-03-01T10:09:00Z"));
    // The injected `<context>` block is its own context message, just before the prompt.
    let ctx = &s.messages[0];
    assert_eq!(
        (ctx.role, ctx.kind, ctx.label.as_deref()),
        (Role::System, MessageKind::Context, Some("context"))
    );
    assert_eq!(
        ctx.content,
        "<context>\ncwd: /home/dev/proj\ndate: 2025-03-01\n</context>"
    );
    let m = &s.messages[1..];
    let roles: Vec<(Role, MessageKind)> = m.iter().map(|m| (m.role, m.kind)).collect();
    use MessageKind::*;
    use Role::*;
    assert_eq!(
        roles,
        vec![
            (User, Normal),
            (Assistant, Normal),
            (Tool, Normal),
            (Assistant, Normal),
            (User, CompactionSummary),
            (User, Normal),
            (Assistant, Normal),
            (Tool, Normal),
            // The `mystery_role` row, shown as stored.
            (System, Context),
            (Assistant, Normal),
        ]
    );
    assert_eq!(m[8].label.as_deref(), Some("mystery_role message"));
    assert_eq!(m[0].content, "Please fix   the failing build");
    assert_eq!(s.turn_count(), 2);
    assert_eq!(m[1].content, "Let me run the build.");
    assert_eq!(
        m[1].thinking.as_deref(),
        Some("The build log will say what broke.")
    );
    assert_eq!(m[1].tool_calls.len(), 1);
    assert_eq!(m[1].tool_calls[0].tool_name, "bash");
    assert_eq!(m[1].tool_calls[0].input["command"], "cargo build");
    assert!(m[1].tool_calls[0].output.is_none());
    let r = m[2].tool_result.as_ref().unwrap();
    assert_eq!(
        (
            r.tool_call_id.as_str(),
            r.tool_name.as_str(),
            r.output.as_str(),
            r.is_error
        ),
        ("toolu_01", "bash", "error[E0308]: mismatched types", true)
    );
    assert_eq!(m[3].content, "Fixed the type error in main.rs.");
    assert!(m[4]
        .content
        .starts_with("[Conversation summary from session compaction]"));
    assert_eq!(m[6].tool_calls[0].tool_name, "write_file");
    assert!(
        m[6].content.contains("[image: image/png, "),
        "{}",
        m[6].content
    );
    assert!(!m[6].content.contains("iVBOR"));
    assert!(m[6]
        .content
        .contains("[unsupported content block: hologram]"));
    assert_eq!(m[7].tool_result.as_ref().unwrap().tool_name, "write_file");
    assert_eq!(m[7].text(), "wrote t.rs");
    assert!(m[9].content.starts_with("[{\"type\":\"text\""));
    assert_eq!(m[1].native_id.as_deref(), Some("2"));
    let w = s.warnings.join("\n");
    assert!(w.contains("invalid JSON"), "{w}");
    assert!(w.contains("unknown role `mystery_role`"), "{w}");
    assert!(w.contains("`hologram`"), "{w}");
    assert_eq!(s.warnings.len(), 3, "{w}");
    assert_eq!(s.extra_files.len(), 1);
    let (name, body) = &s.extra_files[0];
    assert_eq!(name, "tools/scratchpad-plan%2Fnotes.md");
    assert!(body.starts_with(
        "# Scratchpad: plan/notes\n\nSaved: 2025-03-01T10:01:30+00:00\n\n1. reproduce"
    ));
    assert!(!format!("{s:?}").contains(SECRET));

    let empty = store.load(&listed(&store, S_EMPTY));
    assert!(empty.messages.is_empty());
    assert!(empty.warnings.is_empty(), "{:?}", empty.warnings);
    assert_eq!(empty.title, None);
}

#[test]
fn loads_meka_sessions_with_children_and_counters() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join(MEKA_DB);
    let _writer = write_meka_db(&db);
    let store = store_for(&[tmp.path()]);
    let p = store.load(&listed(&store, PARENT));
    assert_eq!(p.source.format, "meka-sqlite");
    assert_eq!(p.source.format_version.as_deref(), Some("5"));
    assert_eq!(p.cwd.as_deref(), Some("/srv/app"));
    assert_eq!(p.parent, None);
    assert_eq!(
        p.reported_usage,
        Some(TokenUsage {
            input_tokens: 1200,
            output_tokens: 340,
            thinking_tokens: 0,
            cached_tokens: 900,
            cache_write_tokens: 50,
        })
    );
    assert_eq!(p.primary_model().as_deref(), Some("claude-sonnet-4"));
    assert_eq!(p.subagents.len(), 1);
    assert_eq!(p.subagents[0].name, CHILD);
    assert_eq!(
        p.subagents[0].unified_id.as_deref(),
        Some("agsh:meka-child-a1b2")
    );
    assert_eq!(
        p.subagents[0].description.as_deref(),
        Some("search the docs")
    );
    let contents: Vec<&str> = p.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        contents,
        vec![
            "Deploy the app to staging",
            "Spawning a helper.",
            "[rewound 2 messages]",
            "Retrying deployment plan.",
            "[redacted 3 images]",
        ]
    );
    assert_eq!(p.messages[2].kind, MessageKind::Event);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    assert!(!format!("{p:?}").contains(SECRET));

    let c = store.load(&listed(&store, CHILD));
    assert_eq!(c.parent.as_deref(), Some("agsh:meka-parent-7f3e"));
    assert_eq!(c.reported_usage, None);
    // Only a provider is known: "anthropic" used to be shown as the model.
    assert_eq!(c.messages[1].model, None);
    assert_eq!(c.title.as_deref(), Some("search the docs"));
}

/// Every file of `dir` but the WAL index (`-shm`, shared memory every reader writes its
/// read marks into by design), as name → (length, hash), to compare byte for byte.
fn snapshot(dir: &Path) -> BTreeMap<String, (usize, u64)> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().ends_with("-shm"))
        .map(|e| {
            let bytes = std::fs::read(e.path()).unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                (bytes.len(), names::fnv1a(&bytes)),
            )
        })
        .collect()
}

#[test]
fn reading_never_changes_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    let agsh = tmp.path().join("agsh");
    let meka = tmp.path().join("meka");
    std::fs::create_dir_all(&agsh).unwrap();
    std::fs::create_dir_all(&meka).unwrap();
    write_agsh_db(&agsh.join(AGSH_DB));
    let writer = write_meka_db(&meka.join(MEKA_DB));
    assert!(companion(&meka.join(MEKA_DB), "-wal").exists());
    let before_agsh = snapshot(&agsh);
    let before_meka = snapshot(&meka);
    let store = store_for(&[&agsh.join(AGSH_DB), &meka.join(MEKA_DB)]);
    for _ in 0..3 {
        for l in store.list() {
            let s = store.load(&l);
            assert!(!s.id.is_empty());
        }
        assert!(store.problems().is_empty());
    }
    drop(store);
    // A rollback-journal database: no companion files appear, bytes identical.
    assert_eq!(snapshot(&agsh), before_agsh);
    // WAL: the database and its WAL are exactly as the writer left them.
    assert_eq!(snapshot(&meka), before_meka);
    drop(writer);
}

#[test]
fn a_file_that_is_not_a_database_is_a_problem_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join(AGSH_DB);
    std::fs::write(&db, b"this is not sqlite at all, just text\n".repeat(200)).unwrap();
    let store = store_for(&[&db, &tmp.path().join("missing.db")]);
    assert!(store.list().is_empty());
    let problems = store.problems();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems.iter().any(|p| p.contains("not a SQLite database")),
        "{problems:?}"
    );
    let s = store.load(&Listed {
        id: "x".into(),
        path: db.clone(),
        sources: vec![db.clone()],
        key: Some("x".into()),
        root: 0,
    });
    assert!(s.messages.is_empty());
    assert!(
        s.warnings[0].contains("not a SQLite database"),
        "{:?}",
        s.warnings
    );
}

#[test]
fn a_database_without_the_tables_loads_with_warnings() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join(AGSH_DB);
    Connection::open(&db)
        .unwrap()
        .execute_batch(
            "CREATE TABLE sessions (id TEXT PRIMARY KEY);
                            INSERT INTO sessions VALUES ('only-id');",
        )
        .unwrap();
    let store = store_for(&[&db]);
    let s = store.load(&listed(&store, "only-id"));
    assert_eq!(
        s.warnings,
        vec!["the database has no readable messages table".to_string()]
    );
}

#[test]
fn helpers() {
    assert_eq!(
        strip_context("<context>a</context>\n<context>b</context> hi"),
        "hi"
    );
    assert_eq!(
        strip_context("<context>never closed"),
        "<context>never closed"
    );
    assert_eq!(norm("Tool_Use"), "tooluse");
    assert!(matches!(parse_content("[1] plain"), Content::Text(_, None)));
    assert!(matches!(
        parse_content("[{\"type\":"),
        Content::Text(_, Some(_))
    ));
    assert!(matches!(parse_content("[]"), Content::Blocks(b) if b.is_empty()));
    assert_eq!(
        sqlite_uri(Path::new("/a b/c?d#%.db")),
        "file:/a%20b/c%3Fd%23%25.db?mode=ro"
    );
    assert_eq!(
        result_text(Some(
            &serde_json::json!([{"Text": {"text": "a"}}, {"type": "text", "text": "b"}])
        )),
        "a\nb"
    );
    let (name, _) = scratchpad_file(&"n".repeat(400), "x", &Cell::Null);
    assert!(name.len() < 255 && name.starts_with("tools/scratchpad-"));
}

/// Appends the way agsh does: a message row and the session's `updated_at`, one commit.
fn append(conn: &Connection, sid: &str, i: usize) -> rusqlite::Result<()> {
    let text = format!("message {i:04} {}", "lorem ipsum ".repeat(300));
    let body = serde_json::json!([{"type": "text", "text": text}]).to_string();
    conn.execute_batch("BEGIN IMMEDIATE")?;
    conn.execute(
        "INSERT INTO messages (session_id, role, content, created_at) VALUES (?1, 'assistant', ?2, ?3)",
        params![sid, body, "2025-05-01T10:00:00Z"],
    )?;
    conn.execute(
        "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
        params![sid, format!("2025-05-01T10:{:02}:00Z", i % 60)],
    )?;
    conn.execute_batch("COMMIT")
}

#[test]
fn concurrent_writer_never_blocks_and_readers_see_whole_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join(MEKA_DB);
    drop(write_meka_db(&db));
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let db = db.clone();
        let done = Arc::clone(&done);
        std::thread::spawn(move || -> Result<usize, String> {
            let conn = Connection::open(&db).map_err(|e| e.to_string())?;
            // Strict: any lock the readers took would surface here as SQLITE_BUSY.
            conn.busy_timeout(Duration::ZERO)
                .map_err(|e| e.to_string())?;
            conn.pragma_update(None, "journal_mode", "WAL")
                .map_err(|e| e.to_string())?;
            let start = std::time::Instant::now();
            let mut n = 0;
            while start.elapsed() < Duration::from_secs(2) {
                append(&conn, CHILD, n).map_err(|e| format!("write {n}: {e}"))?;
                n += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            done.store(true, Ordering::SeqCst);
            Ok(n)
        })
    };
    let store = store_for(&[&db]);
    let l = listed(&store, CHILD);
    let mut last = 0usize;
    let mut loads = 0;
    loop {
        let finished = done.load(Ordering::SeqCst);
        let s = store.load(&l);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        let appended: Vec<&Message> = s.messages.iter().skip(2).collect();
        assert!(
            appended.len() >= last,
            "count went back: {} < {last}",
            appended.len()
        );
        for (i, m) in appended.iter().enumerate() {
            assert_eq!(m.role, Role::Assistant);
            assert!(
                m.content.starts_with(&format!("message {i:04} lorem")),
                "{}",
                &m.content[..40.min(m.content.len())]
            );
            assert_eq!(
                m.content.len(),
                "message 0000 ".len() + "lorem ipsum ".len() * 300
            );
        }
        last = appended.len();
        loads += 1;
        if finished {
            break;
        }
    }
    let written = writer.join().unwrap().unwrap();
    assert!(written > 20, "writer appended only {written}");
    assert_eq!(last, written, "the final load shows every committed row");
    assert!(loads > 5);
}

/// True when this process can create files in a 0555 directory (root ignores modes).
fn modes_are_ignored(dir: &Path) -> bool {
    let probe = dir.join("probe");
    let ok = std::fs::write(&probe, b"x").is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

#[test]
fn read_only_directory_falls_back_to_a_private_copy() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let live = tmp.path().join("live");
    let ro = tmp.path().join("ro");
    std::fs::create_dir_all(&live).unwrap();
    std::fs::create_dir_all(&ro).unwrap();
    let writer = write_meka_db(&live.join(MEKA_DB));
    // The agent stopped without checkpointing: a database plus a WAL, and no index.
    std::fs::copy(live.join(MEKA_DB), ro.join(MEKA_DB)).unwrap();
    std::fs::copy(
        companion(&live.join(MEKA_DB), "-wal"),
        companion(&ro.join(MEKA_DB), "-wal"),
    )
    .unwrap();
    drop(writer);
    let before = snapshot(&ro);
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let store = store_for(&[&ro.join(MEKA_DB)]);
    let access = if modes_are_ignored(&ro) {
        // Running as root: the directory stays writable, so force the fallback path.
        Access::PrivateCopy
    } else {
        Access::InPlace
    };
    let (ids, note) = store.read(&ro.join(MEKA_DB), access, list_ids).unwrap();
    assert_eq!(ids.len(), 2);
    assert!(note.is_some());
    let l = Listed {
        id: PARENT.into(),
        path: ro.join(MEKA_DB),
        sources: vec![],
        key: Some(PARENT.into()),
        root: 0,
    };
    let s = store.load_with(&l, access);
    // Rows that only exist in the WAL are visible.
    assert_eq!(s.messages.len(), 5);
    assert!(s.warnings[0].contains("private copy"), "{:?}", s.warnings);
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(snapshot(&ro), before);
    // The copy is reused while the source is unchanged, and removed with the store.
    let dir = store.private_copy(&ro.join(MEKA_DB)).unwrap().dir.clone();
    assert_eq!(store.private_copy(&ro.join(MEKA_DB)).unwrap().dir, dir);
    drop(store);
    assert!(!dir.exists());
}
