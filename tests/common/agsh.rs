//! agsh / meka fixtures: SQLite files built from the DDL in `fixtures/schema/` under a fake
//! `$HOME`, rows encoded the way agsh writes them (user prompts as plain text, assistant
//! turns and tool results as JSON content-block arrays, events as JSON).
#![allow(dead_code)]

use rusqlite::{params, Connection};
use std::path::{Path, PathBuf};
use std::time::Duration;

const AGSH_DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/agsh-sessions.sql"
));
const MEKA_DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/meka-0.42.sql"
));

/// Stored in every credential table; must never appear anywhere under the mount.
pub const AGSH_SECRET: &str = "agsh-fixture-SECRET-credential-7d41";

/// agsh session with a tool call, a tool result and a scratchpad entry.
pub const AGSH_TOOLS: &str = "4f2a9c1e-3b7d-4e21-9a0c-5d6e7f809101";
/// agsh session that was compacted.
pub const AGSH_COMPACTED: &str = "4f2a9c1e-3b7d-4e21-9a0c-5d6e7f809102";
/// meka session that spawned [`MEKA_CHILD`].
pub const MEKA_PARENT: &str = "7c1e0b2a-91d4-4b5f-8e63-0a1b2c3d4e51";
/// meka sub-agent session (`parent_session_id` = [`MEKA_PARENT`]).
pub const MEKA_CHILD: &str = "7c1e0b2a-91d4-4b5f-8e63-0a1b2c3d4e52";

pub fn agsh_db_path(home: &Path) -> PathBuf {
    home.join(".local/share/agsh/sessions.db")
}

pub fn meka_db_path(home: &Path) -> PathBuf {
    home.join(".local/share/meka/meka.db")
}

fn insert(conn: &Connection, sid: &str, role: &str, content: &str, at: &str) {
    conn.execute(
        "INSERT INTO messages (session_id, role, content, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![sid, role, content, at],
    )
    .expect("insert message");
}

fn open_new(path: &Path) -> Connection {
    std::fs::create_dir_all(path.parent().expect("db has a parent")).expect("create data dir");
    Connection::open(path).expect("create database")
}

/// Write `~/.local/share/agsh/sessions.db` and `~/.local/share/meka/meka.db` under `home`.
/// Returns the native ids of every session written (each is also its directory name under
/// `agsh/`): [`AGSH_TOOLS`], [`AGSH_COMPACTED`], [`MEKA_PARENT`], [`MEKA_CHILD`].
pub fn write_agsh(home: &Path) -> Vec<String> {
    let conn = open_new(&agsh_db_path(home));
    conn.execute_batch(AGSH_DDL).expect("agsh DDL");
    conn.execute(
        "INSERT INTO sessions (id, created_at, updated_at) VALUES (?1, '2025-04-02T14:00:00Z', '2025-04-02T14:03:10Z')",
        [AGSH_TOOLS],
    )
    .expect("session");
    insert(
        &conn,
        AGSH_TOOLS,
        "user",
        "<context>\ncwd: /home/dev/agsh-proj\nshell: zsh\n</context>\n\nagsh fixture: rename the config loader to settings",
        "2025-04-02T14:00:00Z",
    );
    let call = serde_json::json!([
        {"type": "text", "text": "agsh fixture: looking for the loader first."},
        {"type": "tool_use", "id": "toolu_agsh_01", "name": "read_file",
         "input": {"path": "src/config.rs"}}
    ]);
    insert(
        &conn,
        AGSH_TOOLS,
        "assistant",
        &call.to_string(),
        "2025-04-02T14:00:04Z",
    );
    let result = serde_json::json!([
        {"type": "tool_result", "tool_use_id": "toolu_agsh_01",
         "content": [{"type": "text", "text": "pub fn load_config() -> Config { todo!() }"}],
         "is_error": false}
    ]);
    insert(
        &conn,
        AGSH_TOOLS,
        "tool_results",
        &result.to_string(),
        "2025-04-02T14:00:05Z",
    );
    let done = serde_json::json!([
        {"type": "text", "text": "agsh fixture: renamed load_config to load_settings."}
    ]);
    insert(
        &conn,
        AGSH_TOOLS,
        "assistant",
        &done.to_string(),
        "2025-04-02T14:03:10Z",
    );
    conn.execute(
        "INSERT INTO tool_outputs (session_id, name, content, created_at) VALUES (?1, 'plan', ?2, '2025-04-02T14:01:00Z')",
        params![AGSH_TOOLS, "agsh fixture scratchpad: 1. find loader 2. rename 3. build"],
    )
    .expect("scratchpad");

    conn.execute(
        "INSERT INTO sessions (id, created_at, updated_at) VALUES (?1, '2025-04-03T09:00:00Z', '2025-04-03T09:20:00Z')",
        [AGSH_COMPACTED],
    )
    .expect("session");
    insert(
        &conn,
        AGSH_COMPACTED,
        "user",
        "agsh fixture: explain the build cache",
        "2025-04-03T09:00:00Z",
    );
    insert(
        &conn,
        AGSH_COMPACTED,
        "assistant",
        "agsh fixture legacy plain-text answer about caches.",
        "2025-04-03T09:01:00Z",
    );
    let boundary = serde_json::json!({"CompactBoundary": {
        "summary": {"role": "user", "content": [{"type": "text",
            "text": "[Conversation summary from session compaction]\nagsh fixture summary: the user asked about the build cache."}]},
        "replaced_count": 2,
        "loaded_tools_snapshot": []
    }});
    insert(
        &conn,
        AGSH_COMPACTED,
        "compact_boundary",
        &boundary.to_string(),
        "2025-04-03T09:10:00Z",
    );
    insert(
        &conn,
        AGSH_COMPACTED,
        "user",
        "agsh fixture: and how do I clear it?",
        "2025-04-03T09:20:00Z",
    );

    conn.execute(
        "INSERT INTO oauth_tokens (provider, access_token, refresh_token, updated_at) VALUES ('anthropic', ?1, ?1, 'x')",
        [AGSH_SECRET],
    )
    .expect("oauth");
    conn.execute(
        "INSERT INTO mcp_oauth_credentials VALUES ('github', ?1, 'x')",
        [AGSH_SECRET],
    )
    .expect("mcp oauth");
    drop(conn);

    let conn = open_new(&meka_db_path(home));
    conn.pragma_update(None, "journal_mode", "WAL")
        .expect("wal");
    conn.execute_batch(MEKA_DDL).expect("meka DDL");
    // Later ledger steps the agent applies in code.
    conn.execute_batch(
        "ALTER TABLE sessions ADD COLUMN provider TEXT NOT NULL DEFAULT '';
         ALTER TABLE sessions ADD COLUMN model_override TEXT;
         ALTER TABLE sessions ADD COLUMN base_url_override TEXT;
         PRAGMA user_version = 5;",
    )
    .expect("meka ledger");
    conn.execute(
        "INSERT INTO sessions (id, created_at, updated_at, cwd, stat_turns, stat_input_tokens,
           stat_output_tokens, stat_cache_creation_input_tokens, stat_cache_read_input_tokens,
           provider, model_override, token_id)
         VALUES (?1, '2025-06-10T08:00:00Z', '2025-06-10T08:05:00Z', '/home/dev/meka-proj', 1,
           2400, 610, 120, 1800, 'anthropic', 'claude-sonnet-4', ?2)",
        params![MEKA_PARENT, AGSH_SECRET],
    )
    .expect("parent");
    conn.execute(
        "INSERT INTO sessions (id, created_at, updated_at, parent_session_id, subagent_spec_json, provider)
         VALUES (?1, '2025-06-10T08:01:00Z', '2025-06-10T08:02:00Z', ?2,
           '{\"description\":\"meka fixture: survey the tests\"}', 'anthropic')",
        params![MEKA_CHILD, MEKA_PARENT],
    )
    .expect("child");
    insert(
        &conn,
        MEKA_PARENT,
        "user",
        "meka fixture: make the test suite faster",
        "2025-06-10T08:00:00Z",
    );
    let spawn = serde_json::json!([
        {"type": "text", "text": "meka fixture: delegating a survey."},
        {"type": "tool_use", "id": "toolu_meka_01", "name": "spawn_agent",
         "input": {"task": "survey the tests"}}
    ]);
    insert(
        &conn,
        MEKA_PARENT,
        "assistant",
        &spawn.to_string(),
        "2025-06-10T08:00:30Z",
    );
    let result = serde_json::json!([
        {"type": "tool_result", "tool_use_id": "toolu_meka_01",
         "content": "meka fixture: 3 slow tests found", "is_error": false}
    ]);
    insert(
        &conn,
        MEKA_PARENT,
        "tool_results",
        &result.to_string(),
        "2025-06-10T08:04:00Z",
    );
    insert(
        &conn,
        MEKA_CHILD,
        "user",
        "meka fixture: survey the tests",
        "2025-06-10T08:01:00Z",
    );
    let child =
        serde_json::json!([{"type": "text", "text": "meka fixture child: 3 slow tests found"}]);
    insert(
        &conn,
        MEKA_CHILD,
        "assistant",
        &child.to_string(),
        "2025-06-10T08:02:00Z",
    );
    conn.execute(
        "INSERT INTO provider_credentials VALUES ('default', ?1, 'x')",
        [AGSH_SECRET],
    )
    .expect("provider credentials");
    drop(conn);

    vec![
        AGSH_TOOLS.to_string(),
        AGSH_COMPACTED.to_string(),
        MEKA_PARENT.to_string(),
        MEKA_CHILD.to_string(),
    ]
}

/// Append one assistant message (`[{"type":"text","text":…}]`) to `session_id` in `db`
/// the way the agent does: message row and `updated_at` in one transaction, on a fresh
/// read-write connection that waits for locks like the agent's own.
pub fn append_agsh_message(db: &Path, session_id: &str, text: &str) {
    let conn = Connection::open(db).expect("open database for writing");
    conn.busy_timeout(Duration::from_secs(5))
        .expect("busy timeout");
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let body = serde_json::json!([{"type": "text", "text": text}]).to_string();
    conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
    conn.execute(
        "INSERT OR IGNORE INTO sessions (id, created_at, updated_at) VALUES (?1, ?2, ?2)",
        params![session_id, now],
    )
    .expect("session row");
    conn.execute(
        "INSERT INTO messages (session_id, role, content, created_at) VALUES (?1, 'assistant', ?2, ?3)",
        params![session_id, body, now],
    )
    .expect("append message");
    conn.execute(
        "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
        params![session_id, now],
    )
    .expect("touch session");
    conn.execute_batch("COMMIT").expect("commit");
}
