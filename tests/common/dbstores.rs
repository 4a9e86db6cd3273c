//! OpenCode and Hermes fixtures: SQLite files built from the DDL sessfs wrote from each agent's
//! schema source (`fixtures/schema/`) under a fake `$HOME`, rows encoded the way the agents
//! write them, plus OpenCode's legacy JSON tree and a hand-written Hermes gateway JSONL.
//!
//! [`write`] returns the [`Record`] of what it wrote: which texts belong to which session
//! directory and which tool outputs must appear under its `tools/`. That record is the
//! test oracle; it is built here, from the values written, never from sessfs' parser.
#![allow(dead_code)]

use rusqlite::{params, Connection};
use serde_json::json;
use std::path::{Path, PathBuf};

pub const OPENCODE_DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/opencode-2026-08.sql"
));
pub const OPENCODE_DDL_2026_01: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/opencode-2026-01.sql"
));
pub const HERMES_V30: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/hermes-v30.sql"
));
pub const HERMES_V2: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/hermes-v2.sql"
));
/// A gateway transcript written by hand in the shape Hermes' gateway mirror writes.
pub const GATEWAY_JSONL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/hermes/gateway-20260422_005427_9c1e2a40.jsonl"
));

/// Planted in the credential tables and columns of both stores; must never be shown.
pub const SECRETS: [&str; 4] = [
    "oc-secret-access-token-5b1f",
    "oc-secret-credential-value-77aa",
    "oc-secret-share-secret-0c3d",
    "hermes-secret-api-key-9e02",
];

/// The session a writer appends to, per store.
pub const OC_LIVE: &str = "ses_live0000000000000000001";
pub const HERMES_LIVE: &str = "20260101_090000_live0001";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Journal {
    Wal,
    Delete,
}

impl Journal {
    pub fn pragma(self) -> &'static str {
        match self {
            Journal::Wal => "WAL",
            Journal::Delete => "DELETE",
        }
    }
}

/// What was written, per session directory.
#[derive(Debug, Default)]
pub struct Record {
    /// `(<agent>/<session dir>, text)`: the text must be found in exactly that session.
    pub texts: Vec<(String, String)>,
    /// `(<agent>/<session dir>, output)`: the output must be found under its `tools/`.
    pub tool_outputs: Vec<(String, String)>,
    /// Every database and native file written.
    pub files: Vec<PathBuf>,
    pub opencode_db: PathBuf,
    pub hermes_db: PathBuf,
}

impl Record {
    fn text(&mut self, dir: &str, t: &str) -> String {
        self.texts.push((dir.to_string(), t.to_string()));
        t.to_string()
    }
    fn tool(&mut self, dir: &str, out: &str) -> String {
        self.tool_outputs.push((dir.to_string(), out.to_string()));
        out.to_string()
    }
}

pub fn opencode_db_path(home: &Path) -> PathBuf {
    home.join(".local/share/opencode/opencode.db")
}

pub fn hermes_db_path(home: &Path) -> PathBuf {
    home.join(".hermes/state.db")
}

/// Open a new database in `mode`. In WAL mode the connection closes without a checkpoint,
/// so the `-wal` stays beside the database as a running agent leaves it.
pub fn create(path: &Path, mode: Journal, ddl: &str) -> Connection {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let c = Connection::open(path).expect("create db");
    c.pragma_update(None, "journal_mode", mode.pragma())
        .expect("journal mode");
    if mode == Journal::Wal {
        c.pragma_update(None, "wal_autocheckpoint", 0)
            .expect("pragma");
        c.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .expect("no checkpoint on close");
    }
    c.execute_batch(ddl).expect("agent DDL");
    c
}

/// Write every store under `home`; databases in `mode`.
pub fn write(home: &Path, mode: Journal) -> Record {
    let mut r = Record::default();
    write_opencode(home, mode, &mut r);
    write_opencode_legacy(home, &mut r);
    write_hermes(home, mode, &mut r);
    write_hermes_profile(home, &mut r);
    write_gateway(home, &mut r);
    r
}

const T0: i64 = 1_768_172_351_000;

fn oc_session(c: &Connection, id: &str, parent: Option<&str>, title: &str, extra: &[(&str, &str)]) {
    c.execute(
        "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated)
         VALUES (?1, 'prj', ?2, 'slug', '/work/proj', ?3, '1.2.3', ?4, ?4)",
        params![id, parent, title, T0],
    )
    .expect("session");
    for (col, val) in extra {
        c.execute(
            &format!("UPDATE session SET {col} = ?2 WHERE id = ?1"),
            params![id, val],
        )
        .expect("session column");
    }
}

/// `message` row plus its `part` rows, ids ascending as OpenCode's are.
pub fn oc_message(
    c: &Connection,
    sid: &str,
    mid: &str,
    info: serde_json::Value,
    parts: &[serde_json::Value],
) {
    c.execute(
        "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
        params![mid, sid, T0, info.to_string()],
    )
    .expect("message");
    for (i, p) in parts.iter().enumerate() {
        c.execute(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            params![format!("prt_{mid}_{i:03}"), mid, sid, T0, p.to_string()],
        )
        .expect("part");
    }
}

fn user(at: i64) -> serde_json::Value {
    json!({"role": "user", "time": {"created": T0 + at}, "agent": "build",
           "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4"}})
}

fn assistant(at: i64, cost: f64) -> serde_json::Value {
    json!({"role": "assistant", "time": {"created": T0 + at, "completed": T0 + at + 500},
           "parentID": "x", "modelID": "claude-sonnet-4", "providerID": "anthropic",
           "mode": "build", "agent": "build", "path": {"cwd": "/work/proj", "root": "/work/proj"},
           "cost": cost, "tokens": {"input": 100, "output": 20, "reasoning": 0, "cache": {"read": 0, "write": 0}},
           "finish": "stop"})
}

fn tool(call: &str, name: &str, input: serde_json::Value, output: &str) -> serde_json::Value {
    json!({"type": "tool", "callID": call, "tool": name,
           "state": {"status": "completed", "input": input, "output": output, "title": name,
                     "metadata": {}, "time": {"start": T0, "end": T0 + 40}}})
}

fn text(t: &str) -> serde_json::Value {
    json!({"type": "text", "text": t, "time": {"start": T0, "end": T0}})
}

fn step_finish() -> serde_json::Value {
    json!({"type": "step-finish", "reason": "stop", "snapshot": "abc", "cost": 0.01,
           "tokens": {"input": 100, "output": 20, "reasoning": 0, "cache": {"read": 0, "write": 0}}})
}

fn write_opencode(home: &Path, mode: Journal, r: &mut Record) {
    let path = opencode_db_path(home);
    let c = create(&path, mode, OPENCODE_DDL);
    c.execute_batch(
        "INSERT INTO project (id, worktree, time_created, time_updated, sandboxes) VALUES ('prj', '/work/proj', 1, 1, '[]');",
    )
    .expect("project");
    // Credentials in the same file.
    c.execute(
        "INSERT INTO account (id, email, url, access_token, refresh_token, time_created, time_updated) VALUES ('acc', 'a@example.com', 'https://x.example', ?1, ?1, 1, 1)",
        [SECRETS[0]],
    )
    .expect("account");
    c.execute(
        "INSERT INTO credential (id, label, value, time_created, time_updated) VALUES ('cred', 'github', ?1, 1, 1)",
        [SECRETS[1]],
    )
    .expect("credential");

    // A session with a tool call and a task subagent.
    let d = "opencode/ses_oc1000000000000000000001";
    oc_session(
        &c,
        "ses_oc1000000000000000000001",
        None,
        "OpenCode fixture: rename loader",
        &[],
    );
    let p1 = r.text(d, "oc fixture prompt: rename the loader module");
    oc_message(
        &c,
        "ses_oc1000000000000000000001",
        "msg_oc1_0001",
        user(0),
        &[text(&p1)],
    );
    let out1 = r.tool(d, "oc fixture tool output: src/loader.rs src/main.rs");
    let a1 = r.text(d, "oc fixture answer: found two files");
    let think = r.text(d, "oc fixture reasoning: list files first");
    oc_message(
        &c,
        "ses_oc1000000000000000000001",
        "msg_oc1_0002",
        assistant(100, 0.01),
        &[
            json!({"type": "step-start", "snapshot": "abc"}),
            json!({"type": "reasoning", "text": think, "time": {"start": T0, "end": T0}}),
            tool(
                "call_oc1_glob",
                "glob",
                json!({"pattern": "src/*.rs"}),
                &out1,
            ),
            text(&a1),
            step_finish(),
        ],
    );
    let out_task = r.tool(d, "oc fixture task result: the loader is in src/loader.rs");
    let mut task = tool(
        "call_oc1_task",
        "task",
        json!({"description": "find the loader", "prompt": "where is the loader", "subagent_type": "explore"}),
        &out_task,
    );
    task["state"]["metadata"] = json!({"sessionId": "ses_oc1child00000000000000001"});
    oc_message(
        &c,
        "ses_oc1000000000000000000001",
        "msg_oc1_0003",
        assistant(200, 0.02),
        &[task, step_finish()],
    );
    // The child lives inside its parent's directory.
    oc_session(
        &c,
        "ses_oc1child00000000000000001",
        Some("ses_oc1000000000000000000001"),
        "find the loader (@explore subagent)",
        &[],
    );
    let cp = r.text(d, "oc fixture child prompt: where is the loader");
    oc_message(
        &c,
        "ses_oc1child00000000000000001",
        "msg_oc1c_0001",
        user(300),
        &[text(&cp)],
    );
    let cout = r.text(d, "oc fixture child grep output: loader.rs:1");
    let ca = r.text(d, "oc fixture child answer: src/loader.rs");
    oc_message(
        &c,
        "ses_oc1child00000000000000001",
        "msg_oc1c_0002",
        assistant(400, 0.0),
        &[
            tool(
                "call_oc1c_grep",
                "grep",
                json!({"pattern": "loader"}),
                &cout,
            ),
            text(&ca),
            step_finish(),
        ],
    );

    // A session with an /undo: the reverted message is a branch, still in this directory.
    let d2 = "opencode/ses_oc2000000000000000000002";
    oc_session(
        &c,
        "ses_oc2000000000000000000002",
        None,
        "OpenCode fixture: undo",
        &[("revert", r#"{"messageID":"msg_oc2_0003","snapshot":"s"}"#)],
    );
    let p2 = r.text(d2, "oc fixture second prompt: add a test");
    oc_message(
        &c,
        "ses_oc2000000000000000000002",
        "msg_oc2_0001",
        user(0),
        &[text(&p2)],
    );
    let synthetic = r.text(d2, "oc fixture synthetic context: contents of test.rs");
    oc_message(
        &c,
        "ses_oc2000000000000000000002",
        "msg_oc2_0001b",
        user(10),
        &[json!({"type": "text", "text": synthetic, "synthetic": true})],
    );
    let a2 = r.text(d2, "oc fixture second answer: test added");
    oc_message(
        &c,
        "ses_oc2000000000000000000002",
        "msg_oc2_0002",
        assistant(100, 0.03),
        &[text(&a2), step_finish()],
    );
    let rv = r.text(d2, "oc fixture reverted prompt: delete everything");
    oc_message(
        &c,
        "ses_oc2000000000000000000002",
        "msg_oc2_0003",
        user(200),
        &[text(&rv)],
    );

    // A fork of the first session (newest schema records it).
    let d3 = "opencode/ses_oc3000000000000000000003";
    oc_session(
        &c,
        "ses_oc3000000000000000000003",
        None,
        "OpenCode fixture: fork",
        &[("fork_session_id", "ses_oc1000000000000000000001")],
    );
    let p3 = r.text(d3, "oc fixture fork prompt: try another name");
    oc_message(
        &c,
        "ses_oc3000000000000000000003",
        "msg_oc3_0001",
        user(0),
        &[text(&p3)],
    );

    // The session the concurrent writer appends to.
    let dl = format!("opencode/{OC_LIVE}");
    oc_session(&c, OC_LIVE, None, "OpenCode fixture: live", &[]);
    let pl = r.text(&dl, "oc fixture live prompt: keep going");
    oc_message(&c, OC_LIVE, "msg_live_000000", user(0), &[text(&pl)]);

    c.execute(
        "INSERT INTO session_share (session_id, id, secret, url, time_created, time_updated) VALUES ('ses_oc1000000000000000000001', 'sh', ?1, 'https://x.example/s', 1, 1)",
        [SECRETS[2]],
    )
    .expect("share");
    drop(c);
    r.files.push(path.clone());
    r.opencode_db = path;
}

/// A session only the pre-SQLite JSON tree has.
fn write_opencode_legacy(home: &Path, r: &mut Record) {
    let storage = home.join(".local/share/opencode/storage");
    let sid = "ses_legacy00000000000000001";
    let d = format!("opencode/{sid}");
    let put = |rel: String, v: serde_json::Value, r: &mut Record| {
        let p = storage.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, serde_json::to_string_pretty(&v).expect("json")).expect("write");
        r.files.push(p);
    };
    put(
        format!("session/prj/{sid}.json"),
        json!({"id": sid, "slug": "old", "version": "1.1.13", "projectID": "prj",
               "directory": "/work/old", "title": "legacy session", "time": {"created": T0, "updated": T0}}),
        r,
    );
    let p = r.text(&d, "oc legacy prompt: explain the build");
    let mut u = user(0);
    u["id"] = json!("msg_leg_0001");
    u["sessionID"] = json!(sid);
    put(format!("message/{sid}/msg_leg_0001.json"), u, r);
    put(
        "part/msg_leg_0001/prt_leg_0001.json".into(),
        json!({"id": "prt_leg_0001", "sessionID": sid, "messageID": "msg_leg_0001", "type": "text", "text": p}),
        r,
    );
    let out = r.tool(&d, "oc legacy tool output: cargo build ok");
    let mut a = assistant(100, 0.0);
    a["id"] = json!("msg_leg_0002");
    a["sessionID"] = json!(sid);
    put(format!("message/{sid}/msg_leg_0002.json"), a, r);
    let mut t = tool(
        "call_leg_1",
        "bash",
        json!({"command": "cargo build"}),
        &out,
    );
    t["id"] = json!("prt_leg_0002");
    t["sessionID"] = json!(sid);
    t["messageID"] = json!("msg_leg_0002");
    put("part/msg_leg_0002/prt_leg_0002.json".into(), t, r);
}

pub fn hermes_session(
    c: &Connection,
    id: &str,
    parent: Option<&str>,
    source: &str,
    end: Option<&str>,
    model_config: Option<&str>,
) {
    c.execute(
        "INSERT INTO sessions (id, source, parent_session_id, started_at, end_reason, model_config, model, input_tokens, output_tokens, actual_cost_usd)
         VALUES (?1, ?2, ?3, 1768172351.5, ?4, ?5, 'claude-sonnet-4', 1000, 200, 0.05)",
        params![id, source, parent, end, model_config],
    )
    .expect("hermes session");
}

pub fn hermes_message(
    c: &Connection,
    sid: &str,
    role: &str,
    content: &str,
    extra: &[(&str, &str)],
) {
    let cols: String = extra.iter().map(|(k, _)| format!(", {k}")).collect();
    let marks: String = (0..extra.len()).map(|i| format!(", ?{}", i + 4)).collect();
    let mut vals: Vec<&dyn rusqlite::ToSql> = vec![&sid, &role, &content];
    for (_, v) in extra {
        vals.push(v);
    }
    c.execute(
        &format!(
            "INSERT INTO messages (session_id, role, content, timestamp{cols}) VALUES (?1, ?2, ?3, 1768172352.25{marks})"
        ),
        vals.as_slice(),
    )
    .expect("hermes message");
}

fn write_hermes(home: &Path, mode: Journal, r: &mut Record) {
    let path = hermes_db_path(home);
    let c = create(&path, mode, HERMES_V30);
    c.execute("INSERT INTO schema_version VALUES (30)", [])
        .expect("version");
    // A made-up credential table and a secret in a table sessfs never reads.
    c.execute_batch("CREATE TABLE credentials (provider TEXT, api_key TEXT);")
        .expect("credentials");
    c.execute(
        "INSERT INTO credentials VALUES ('openrouter', ?1)",
        [SECRETS[3]],
    )
    .expect("credential");
    c.execute(
        "INSERT INTO state_meta VALUES ('api_key', ?1)",
        [SECRETS[3]],
    )
    .expect("state_meta");

    let h1 = "20260101_080000_aaaa0001";
    let d = format!("hermes/{h1}");
    hermes_session(&c, h1, None, "cli", Some("compression"), None);
    let p = r.text(&d, "hermes fixture prompt: list the repo");
    hermes_message(&c, h1, "user", &p, &[]);
    let calls = json!([{"id": "call_h1_ls", "type": "function",
                        "function": {"name": "terminal", "arguments": "{\"command\": \"ls\"}"}}])
    .to_string();
    hermes_message(
        &c,
        h1,
        "assistant",
        "",
        &[
            ("tool_calls", &calls),
            ("reasoning", "hermes fixture reasoning: look first"),
        ],
    );
    r.text(&d, "hermes fixture reasoning: look first");
    let out = r.tool(&d, "hermes fixture tool output: Cargo.toml src");
    hermes_message(
        &c,
        h1,
        "tool",
        &out,
        &[("tool_call_id", "call_h1_ls"), ("tool_name", "terminal")],
    );
    let rew = r.text(&d, "hermes fixture rewound answer: wrong guess");
    hermes_message(&c, h1, "assistant", &rew, &[("active", "0")]);
    let a = r.text(&d, "hermes fixture answer: a Rust crate");
    hermes_message(&c, h1, "assistant", &a, &[]);
    // The compression continuation: stitched into h1's directory.
    let h1b = "20260101_081500_aaaa0002";
    hermes_session(&c, h1b, Some(h1), "cli", None, None);
    let carrier = r.text(
        &d,
        "[CONTEXT COMPACTION — REFERENCE ONLY] hermes fixture summary of the repo talk",
    );
    hermes_message(&c, h1b, "user", &carrier, &[("_compressed_summary", "1")]);
    let p2 = r.text(&d, "hermes fixture continued prompt: now build it");
    hermes_message(&c, h1b, "user", &p2, &[]);
    // A delegate_task subagent: nested in h1's directory.
    let sub = "20260101_082000_aaaa0003";
    hermes_session(
        &c,
        sub,
        Some(h1b),
        "subagent",
        None,
        Some(r#"{"_delegate_from": "20260101_081500_aaaa0002"}"#),
    );
    let sp = r.text(&d, "hermes fixture subagent task: run cargo build");
    hermes_message(&c, sub, "user", &sp, &[]);
    // A /branch child: its own directory, forked from h1.
    let br = "20260101_083000_aaaa0004";
    hermes_session(
        &c,
        br,
        Some(h1b),
        "cli",
        None,
        Some(r#"{"_branched_from": "20260101_081500_aaaa0002"}"#),
    );
    let bp = r.text(
        &format!("hermes/{br}"),
        "hermes fixture branch prompt: try release mode",
    );
    hermes_message(&c, br, "user", &bp, &[]);
    // The live session.
    hermes_session(&c, HERMES_LIVE, None, "telegram", None, None);
    let lp = r.text(
        &format!("hermes/{HERMES_LIVE}"),
        "hermes fixture live prompt: hello",
    );
    hermes_message(&c, HERMES_LIVE, "user", &lp, &[]);
    drop(c);
    r.files.push(path.clone());
    r.hermes_db = path;
}

/// A profile with the first (v2) schema.
fn write_hermes_profile(home: &Path, r: &mut Record) {
    let path = home.join(".hermes/profiles/work/state.db");
    let c = create(&path, Journal::Delete, HERMES_V2);
    c.execute("INSERT INTO schema_version VALUES (2)", [])
        .expect("version");
    let id = "20251201_100000_bbbb0001";
    c.execute(
        "INSERT INTO sessions (id, source, started_at, input_tokens) VALUES (?1, 'cli', 1764583200.0, 5)",
        [id],
    )
    .expect("session");
    let d = format!("hermes/{id}");
    let p = r.text(&d, "hermes v2 profile prompt: old schema");
    c.execute(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?1, 'user', ?2, 1764583201.0)",
        params![id, p],
    )
    .expect("message");
    drop(c);
    r.files.push(path);
}

/// The hand-written gateway transcript, for a session no database has.
fn write_gateway(home: &Path, r: &mut Record) {
    let dir = home.join(".hermes/sessions");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let p = dir.join("20260422_005427_9c1e2a40.jsonl");
    std::fs::write(&p, GATEWAY_JSONL).expect("write");
    r.files.push(p);
    let d = "hermes/20260422_005427_9c1e2a40";
    r.text(d, "[Dana] can you chart our build times?");
    r.text(
        d,
        "They did: the median build grew from 6m10s to 7m40s across the last ten runs.",
    );
    r.tool(d, "\"name\": \"plotting\"");
    r.tool(d, "Median build time went from 6m10s to 7m40s");
}
