//! Cursor and OpenClaw (SQLite era) fixtures: SQLite files built from the DDL sessfs wrote in
//! `fixtures/schema/` (OpenClaw's from its schema source, Cursor's from the described layout),
//! rows encoded the way the agents write them (hex meta, protobuf root blob, `cursorDiskKV`
//! keys, pi v3 lines in `transcript_events`), plus Cursor's agent transcripts and OpenClaw's
//! file era with its `sessions.json`.
//!
//! [`write`] returns the [`Record`] of what it wrote; that record is the test oracle, built
//! from the values written here, never from sessfs' parser.
#![allow(dead_code)]

use super::dbstores::{create, Journal};
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

pub const CLI_DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/cursor-agent-store.sql"
));
pub const IDE_DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/cursor-ide-state.sql"
));
pub const OPENCLAW_V1: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/openclaw-v1.sql"
));
pub const OPENCLAW_LATEST: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/openclaw-latest.sql"
));
/// The intermediate STRICT schema, written from its published description (no source of it
/// could be read): `sessions` + `session_entries(status)` + `transcript_events`, all STRICT.
pub const OPENCLAW_MID: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/openclaw-mid.sql"
));

/// Planted in `ItemTable` of the IDE database; must never be shown.
pub const SECRETS: [&str; 2] = [
    "cursor-secret-access-token-4f9a1c",
    "cursor-secret-refresh-token-77b2e0",
];

/// What was written, per session directory.
#[derive(Debug, Default)]
pub struct Record {
    /// `(<agent>/<session dir>, text)`: the text must be found in exactly that session.
    pub texts: Vec<(String, String)>,
    /// `(<agent>/<session dir>, output)`: the output must be found under its `tools/`.
    pub tool_outputs: Vec<(String, String)>,
    /// `(<agent>/<session dir>, earlier text, later text)`: order in transcript.md.
    pub order: Vec<(String, String, String)>,
    /// `(<agent>/<session dir>, title)`.
    pub titles: Vec<(String, String)>,
    /// Texts written where sessfs must not show them (a file superseded by the database).
    pub hidden: Vec<String>,
    /// Session dirs whose meta.json must carry a warning.
    pub warned: Vec<String>,
    pub files: Vec<PathBuf>,
    pub ide_db: PathBuf,
    /// Workspace databases, each with [`WS_SECRET`] planted in its `ItemTable`.
    pub ws_dbs: Vec<PathBuf>,
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

/// Write every store under `home`.
pub fn write(home: &Path) -> Record {
    let mut r = Record::default();
    write_cli(home, &mut r);
    write_transcripts(home, &mut r);
    write_ide(home, &mut r);
    write_workspaces(home, &mut r);
    write_openclaw(home, &mut r);
    r
}

// ---------------------------------------------------------------------------------------
// cursor-agent store.db

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

fn pb_bytes(field: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = varint(field << 3 | 2);
    out.extend(varint(payload.len() as u64));
    out.extend(payload);
    out
}

/// A 32-byte content id (stands in for sha256: sessfs looks blobs up, never re-hashes).
fn id32(data: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ (i as u64);
        for b in data {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        chunk.copy_from_slice(&h.to_le_bytes());
    }
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub const CLI_ID: &str = "5b0c0a9e-1111-4c3e-9f00-00000000c11a";
pub const CLI_BAD_ROOT: &str = "5b0c0a9e-2222-4c3e-9f00-00000000bad0";
pub const CLI_TRUNCATED: &str = "5b0c0a9e-3333-4c3e-9f00-00000000dead";

/// One store.db; `root` replaces the protobuf root when given (malformed on purpose).
fn cli_store(
    home: &Path,
    agent_id: &str,
    messages: &[Value],
    root: Option<Vec<u8>>,
    r: &mut Record,
) -> PathBuf {
    let db = home
        .join(".cursor/chats/0d5e3b6f6f0b2c1e2a9d8c7b6a5f4e3d")
        .join(agent_id)
        .join("store.db");
    let c = create(&db, Journal::Wal, CLI_DDL);
    let mut ids = Vec::new();
    for m in messages {
        let data = serde_json::to_vec(m).unwrap();
        let id = id32(&data);
        c.execute(
            "INSERT INTO blobs (id, data) VALUES (?1, ?2)",
            params![hex(&id), data],
        )
        .unwrap();
        ids.push(id);
    }
    let root = root.unwrap_or_else(|| {
        let mut b: Vec<u8> = ids.iter().flat_map(|id| pb_bytes(1, id)).collect();
        // A field sessfs does not decode (a varint), then the workspace.
        b.extend(varint(4 << 3));
        b.extend(varint(123_456));
        b.extend(pb_bytes(9, b"file:///home/dev/cursor%20proj"));
        b
    });
    let root_id = id32(&root);
    c.execute(
        "INSERT INTO blobs (id, data) VALUES (?1, ?2)",
        params![hex(&root_id), root],
    )
    .unwrap();
    let meta = json!({"agentId": agent_id, "latestRootBlobId": hex(&root_id), "name": "New Agent",
                      "mode": "default", "createdAt": 1_781_256_145_540_i64, "lastUsedModel": "claude-4-sonnet"});
    c.execute(
        "INSERT INTO meta (key, value) VALUES ('0', ?1)",
        params![hex(meta.to_string().as_bytes())],
    )
    .unwrap();
    drop(c);
    r.files.push(db.clone());
    db
}

fn write_cli(home: &Path, r: &mut Record) {
    let d = format!("cursor/{CLI_ID}");
    let q = r.text(&d, "cli-query: rename the parser module");
    let a1 = r.text(&d, "cli-answer: I will look at the module first");
    let think = r.text(&d, "cli-thinking: the module is parse.rs");
    let out = r.tool(&d, "cli-tool-output: src/parse.rs src/lib.rs");
    let a2 = r.text(&d, "cli-answer: renamed it to reader.rs");
    r.order.push((d.clone(), q.clone(), a2.clone()));
    r.titles.push((d.clone(), q.clone()));
    let msgs = [
        json!({"role": "system", "content": "You are a coding agent (cli system prompt)"}),
        json!({"role": "user", "content": [{"type": "text",
              "text": format!("<user_info>OS linux</user_info>\n<user_query>\n{q}\n</user_query>")}]}),
        json!({"role": "assistant", "id": "m-a1", "content": [
            {"type": "reasoning", "text": think},
            {"type": "text", "text": a1},
            {"type": "tool-call", "toolCallId": "tc-1", "toolName": "list_dir", "args": {"path": "src"}}]}),
        json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "tc-1",
              "toolName": "list_dir", "result": out}]}),
        json!({"role": "assistant", "content": a2}),
    ];
    cli_store(home, CLI_ID, &msgs, None, r);

    // A root blob that is not protobuf: the JSON blobs are still shown, in storage order.
    let d = format!("cursor/{CLI_BAD_ROOT}");
    let q = r.text(&d, "badroot-query: why is the root broken");
    let msgs = [json!({"role": "user", "content": q})];
    cli_store(
        home,
        CLI_BAD_ROOT,
        &msgs,
        Some(vec![0x0a, 0xff, 0xff, 0xff, 0x7f, 1, 2]),
        r,
    );
    r.warned.push(d);

    // A truncated store.db: listed from its directory, shown with a warning.
    let d = format!("cursor/{CLI_TRUNCATED}");
    let msgs: Vec<Value> = (0..200)
        .map(|i| json!({"role": "user", "content": format!("truncated {i} {}", "x".repeat(400))}))
        .collect();
    let db = cli_store(home, CLI_TRUNCATED, &msgs, None, r);
    Connection::open(&db)
        .unwrap()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;")
        .unwrap();
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    assert!(!wal.exists());
    let bytes = std::fs::read(&db).unwrap();
    std::fs::write(&db, &bytes[..bytes.len().min(3000)]).unwrap();
    r.warned.push(d);
}

// ---------------------------------------------------------------------------------------
// Agent transcripts

pub const TXT_ID: &str = "7a1e0c3d-aaaa-4b7e-8f6d-0000000000a1";
pub const JSONL_ID: &str = "7a1e0c3d-bbbb-4b7e-8f6d-0000000000b2";
pub const NESTED_ID: &str = "7a1e0c3d-cccc-4b7e-8f6d-0000000000c3";

fn write_transcripts(home: &Path, r: &mut Record) {
    let dir = home.join(".cursor/projects/home-dev-cursor-proj/agent-transcripts");
    std::fs::create_dir_all(dir.join(NESTED_ID).join("subagents")).unwrap();

    let d = format!("cursor/{TXT_ID}");
    let q = r.text(&d, "txt-query: count the tests");
    let t = r.text(&d, "txt-thinking: run grep");
    let a = r.text(&d, "txt-answer: there are twelve tests");
    let out = r.tool(&d, "txt-tool-output: 12 matches");
    let txt = format!(
        "user:\n<user_query>\n{q}\n</user_query>\n\nassistant:\n[Thinking] {t}\n\n[Tool call] Shell\n  command=grep -c test\n[Tool result] Shell\n{out}\n\nassistant:\n{a}\n"
    );
    let p = dir.join(format!("{TXT_ID}.txt"));
    std::fs::write(&p, txt).unwrap();
    r.files.push(p);

    let d = format!("cursor/{JSONL_ID}");
    let q = r.text(&d, "jsonl-query: explain the build");
    let a = r.text(&d, "jsonl-answer: cargo builds it");
    let lines = [
        json!({"role": "user", "message": {"content": [{"type": "text",
              "text": format!("<timestamp>2026-03-01T10:00:00Z</timestamp>\n<user_query>{q}</user_query>")}]}}),
        json!({"role": "assistant", "message": {"content": [{"type": "text", "text": a},
              {"type": "tool_use", "name": "Read", "input": {"path": "Cargo.toml"}}]}}),
    ];
    let p = dir.join(format!("{JSONL_ID}.jsonl"));
    std::fs::write(
        &p,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    r.files.push(p);

    let d = format!("cursor/{NESTED_ID}");
    let q = r.text(&d, "nested-query: split the work");
    let sub = r.text(&d, "nested-subagent: I took the second half");
    let p = dir.join(NESTED_ID).join(format!("{NESTED_ID}.jsonl"));
    std::fs::write(
        &p,
        format!(
            "{}\n",
            json!({"role": "user", "message": {"content": [{"type": "text", "text": q}]}})
        ),
    )
    .unwrap();
    r.files.push(p);
    let p = dir.join(NESTED_ID).join("subagents/helper-1.jsonl");
    std::fs::write(
        &p,
        format!(
            "{}\n",
            json!({"role": "assistant", "message": {"content": [{"type": "text", "text": sub}]}})
        ),
    )
    .unwrap();
    r.files.push(p);
}

// ---------------------------------------------------------------------------------------
// IDE state.vscdb

pub const COMPOSER: &str = "comp-1";
/// Shares `COMPOSER`'s prefix: its bubbles must not leak into `comp-1` (key ranges).
pub const COMPOSER_10: &str = "comp-10";
pub const COMPOSER_INLINE: &str = "comp-inline-0001";
pub const COMPOSER_EMPTY: &str = "comp-empty-0001";

pub fn ide_db_path(home: &Path) -> PathBuf {
    home.join(".config/Cursor/User/globalStorage/state.vscdb")
}

fn kv(c: &Connection, key: &str, v: &Value) {
    // Values have BLOB affinity and TEXT contents, as Cursor writes them.
    c.execute(
        "INSERT INTO cursorDiskKV (key, value) VALUES (?1, ?2)",
        params![key, v.to_string()],
    )
    .unwrap();
}

fn write_ide(home: &Path, r: &mut Record) {
    let path = ide_db_path(home);
    let c = create(&path, Journal::Wal, IDE_DDL);
    for (k, s) in [
        ("cursorAuth/accessToken", SECRETS[0]),
        ("cursorAuth/refreshToken", SECRETS[1]),
    ] {
        c.execute(
            "INSERT INTO ItemTable (key, value) VALUES (?1, ?2)",
            params![k, s],
        )
        .unwrap();
    }

    let d = format!("cursor/{COMPOSER}");
    let title = "IDE composer about caching";
    r.titles.push((d.clone(), title.to_string()));
    let q = r.text(&d, "ide-query: add a cache to the loader");
    let think = r.text(&d, "ide-thinking: an LRU fits");
    let a = r.text(&d, "ide-answer: added an LRU cache");
    let out = r.tool(&d, "ide-tool-output: wrote src/cache.rs");
    r.order.push((d.clone(), q.clone(), a.clone()));
    kv(
        &c,
        &format!("composerData:{COMPOSER}"),
        &json!({"_v": 10, "composerId": COMPOSER, "name": title, "createdAt": 1_770_000_000_000_i64,
                "lastUpdatedAt": 1_770_000_090_000_i64, "modelConfig": {"modelName": "claude-4-sonnet", "maxMode": false},
                "fullConversationHeadersOnly": [
                    {"bubbleId": "b-user", "type": 1}, {"bubbleId": "b-tool", "type": 2},
                    {"bubbleId": "b-answer", "type": 2}]}),
    );
    // Written in another order than the headers: the headers decide.
    kv(
        &c,
        &format!("bubbleId:{COMPOSER}:b-answer"),
        &json!({"_v": 3, "type": 2, "bubbleId": "b-answer", "text": a, "createdAt": "2026-02-02T10:01:30Z",
                "thinking": {"text": think}, "tokenCount": {"inputTokens": 1200, "outputTokens": 80}}),
    );
    kv(
        &c,
        &format!("bubbleId:{COMPOSER}:b-user"),
        &json!({"_v": 3, "type": 1, "bubbleId": "b-user", "text": q, "createdAt": "2026-02-02T10:00:00Z",
                "workspaceUris": ["file:///home/dev/cursor%20proj"]}),
    );
    kv(
        &c,
        &format!("bubbleId:{COMPOSER}:b-tool"),
        &json!({"_v": 3, "type": 2, "bubbleId": "b-tool", "text": "",
                "toolFormerData": {"name": "edit_file", "toolCallId": "tool-1", "status": "completed",
                                   "rawArgs": "{\"target_file\":\"src/cache.rs\"}", "result": out}}),
    );

    let d = format!("cursor/{COMPOSER_10}");
    let q = r.text(&d, "ide10-query: a neighbour composer");
    kv(
        &c,
        &format!("composerData:{COMPOSER_10}"),
        &json!({"_v": 10, "composerId": COMPOSER_10, "name": "neighbour",
                "fullConversationHeadersOnly": [{"bubbleId": "n1", "type": 1}]}),
    );
    kv(
        &c,
        &format!("bubbleId:{COMPOSER_10}:n1"),
        &json!({"type": 1, "text": q}),
    );

    let d = format!("cursor/{COMPOSER_INLINE}");
    let q = r.text(&d, "inline-query: an old composer");
    let a = r.text(&d, "inline-answer: kept inline");
    kv(
        &c,
        &format!("composerData:{COMPOSER_INLINE}"),
        &json!({"_v": 2, "composerId": COMPOSER_INLINE, "name": "old inline",
                "conversation": [{"type": 1, "bubbleId": "i1", "text": q},
                                 {"type": 2, "bubbleId": "i2", "text": a}]}),
    );
    kv(
        &c,
        &format!("composerData:{COMPOSER_EMPTY}"),
        &json!({"_v": 10, "composerId": COMPOSER_EMPTY, "fullConversationHeadersOnly": []}),
    );

    // Composers in the other shapes readers meet: headers without a `type`, bubble text in
    // `rawText`, `content` or `message`, an unknown bubble type, epoch `timestamp`s, and the
    // workspace as a project dir, a file URI or a VS Code remote URI.
    for (id, title, bubbles) in [
        (
            "comp-shape-fields",
            "Shapes: text fields",
            vec![
                json!({"type": 1, "rawText": "shape-rawtext: where is the retry loop",
                       "timestamp": 1_700_000_000_000_i64, "workspaceProjectDir": "/workspace/retry-svc"}),
                json!({"type": 2, "content": "shape-content: in src/retry.rs, line 40",
                       "timestamp": 1_700_000_001_000_i64, "modelInfo": {"modelName": "claude-3.5-sonnet"}}),
                json!({"type": 99, "message": "shape-message: tool said 3 retries max",
                       "timestamp": 1_700_000_002_000_i64}),
            ],
        ),
        (
            "comp-shape-file-uri",
            "Shapes: file URI",
            vec![
                json!({"type": 1, "text": "shape-file-uri: open the workspace",
                        "timestamp": 1_700_000_100_000_i64,
                        "workspaceUris": ["file:///home/tester/retry%20svc"]}),
            ],
        ),
        (
            "comp-shape-remote-uri",
            "Shapes: remote URI",
            vec![
                json!({"type": 2, "text": "shape-remote-uri: answered over ssh",
                        "timestamp": 1_700_000_200_000_i64,
                        "workspaceUris": ["vscode-remote://ssh-remote+%7B%22host%22%3A%22build%22%7D/home/ubuntu/retry-svc"]}),
            ],
        ),
    ] {
        let d = format!("cursor/{id}");
        let headers: Vec<Value> = (0..bubbles.len())
            .map(|i| json!({"bubbleId": format!("{id}-b{i}")}))
            .collect();
        kv(
            &c,
            &format!("composerData:{id}"),
            &json!({"name": title, "createdAt": 1_700_000_000_000_i64,
                    "lastUpdatedAt": 1_700_000_003_000_i64, "fullConversationHeadersOnly": headers}),
        );
        for (i, b) in bubbles.iter().enumerate() {
            kv(&c, &format!("bubbleId:{id}:{id}-b{i}"), b);
            for field in ["text", "rawText", "content", "message"] {
                if let Some(t) = b[field].as_str() {
                    r.text(&d, t);
                }
            }
        }
        r.titles.push((d, title.to_string()));
    }
    drop(c);
    r.files.push(path.clone());
    r.ide_db = path;
}

// ---------------------------------------------------------------------------------------
// IDE workspace state.vscdb (User/workspaceStorage/<hash>/, ~/.cursor-server/data/User)

/// Planted in `ItemTable` of every workspace database; must never be shown.
pub const WS_SECRET: &str = "cursor-secret-workspace-token-93ad51";
pub const TAB_A: &str = "3f1a9c2e-aaaa-4b7d-8e21-00000000ab01";
pub const TAB_B: &str = "3f1a9c2e-bbbb-4b7d-8e21-00000000ab02";
pub const TAB_REMOTE: &str = "3f1a9c2e-cccc-4b7d-8e21-00000000ab03";
pub const WS_COMPOSER: &str = "7d0e4b1a-dddd-4c2f-9a10-0000000c0301";
pub const WS_HASH: &str = "5c2d0e6b9a7f41e3b0c1d2e3f4a5b6c7";
pub const WS_BROKEN_HASH: &str = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b";
pub const WS_REMOTE_HASH: &str = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";

fn item(c: &Connection, key: &str, v: &str) {
    c.execute(
        "INSERT INTO ItemTable (key, value) VALUES (?1, ?2)",
        params![key, v],
    )
    .unwrap();
}

/// A workspace dir: `state.vscdb` (WAL, the secret planted) and `workspace.json`.
fn workspace_db(dir: &Path, folder: &str, r: &mut Record) -> Connection {
    let path = dir.join("state.vscdb");
    let c = create(&path, Journal::Wal, IDE_DDL);
    item(&c, "cursorAuth/accessToken", WS_SECRET);
    let wj = dir.join("workspace.json");
    std::fs::write(&wj, json!({ "folder": folder }).to_string()).unwrap();
    r.files.extend([path.clone(), wj]);
    r.ws_dbs.push(path);
    c
}

fn write_workspaces(home: &Path, r: &mut Record) {
    let user = home.join(".config/Cursor/User/workspaceStorage");
    let c = workspace_db(&user.join(WS_HASH), "file:///home/dev/ws%20proj", r);

    // The chat panel: two tabs with bubbles, one without (not a session).
    let d = format!("cursor/{TAB_A}");
    r.titles
        .push((d.clone(), "Legacy chat about parsing".to_string()));
    let q1 = r.text(&d, "aichat-query: why does the parser stop at a BOM");
    let sel = r.text(&d, "aichat-selection: fn parse(bytes: &[u8])");
    let a1 = r.text(&d, "aichat-answer: skip the three BOM bytes first");
    let q2 = r.text(&d, "aichat-followup: and UTF-16?");
    let a2 = r.text(&d, "aichat-answer-2: detect it from the BOM too");
    r.order.push((d.clone(), q1.clone(), a1.clone()));
    r.order.push((d.clone(), a1.clone(), q2.clone()));
    r.order.push((d.clone(), q2.clone(), a2.clone()));
    let d = format!("cursor/{TAB_B}");
    let qb = r.text(&d, "aichat-b-query: rename the module");
    let ab = r.text(&d, "aichat-b-answer: renamed to loader");
    let chatdata = json!({"tabs": [
        {"tabId": TAB_A, "chatTitle": "Legacy chat about parsing\nwith a second line",
         "lastSendTime": 1_690_000_100_000_i64, "bubbles": [
            {"type": "user", "id": "u1", "text": q1, "selections": [{"text": sel}]},
            {"type": "ai", "id": "a1", "rawText": a1, "modelType": "gpt-4"},
            {"type": "user", "id": "u2", "text": q2},
            {"type": "ai", "id": "a2", "rawText": a2, "modelType": "gpt-4"}]},
        {"tabId": TAB_B, "chatTitle": "", "bubbles": [
            {"type": "user", "text": qb}, {"type": "ai", "text": ab}]},
        {"tabId": "3f1a9c2e-eeee-4b7d-8e21-00000000ab0e", "chatTitle": "New Chat", "bubbles": []}
    ]});
    item(
        &c,
        "workbench.panel.aichat.view.aichat.chatdata",
        &chatdata.to_string(),
    );

    // The composer list: one composer kept inline (a session), the global COMPOSER with a
    // stale inline copy (the global body wins: its text is never shown), a head only.
    let d = format!("cursor/{WS_COMPOSER}");
    r.titles
        .push((d.clone(), "Workspace inline composer".to_string()));
    let wq = r.text(&d, "ws-composer-query: split the config file");
    let wa = r.text(&d, "ws-composer-answer: split into three files");
    r.order.push((d.clone(), wq.clone(), wa.clone()));
    let stale = "ws-stale-copy: superseded by the global composer".to_string();
    r.hidden.push(stale.clone());
    let composers = json!({"allComposers": [
        {"composerId": WS_COMPOSER, "name": "Workspace inline composer",
         "createdAt": 1_720_000_000_000_i64, "lastUpdatedAt": 1_720_000_050_000_i64,
         "conversation": [{"type": 1, "bubbleId": "w1", "text": wq},
                          {"type": 2, "bubbleId": "w2", "text": wa}]},
        {"composerId": COMPOSER, "name": "IDE composer about caching",
         "conversation": [{"type": 1, "bubbleId": "x1", "text": stale}]},
        {"composerId": "7d0e4b1a-ffff-4c2f-9a10-0000000c03ff", "name": "head only",
         "createdAt": 1_720_000_000_000_i64}
    ], "selectedComposerId": WS_COMPOSER});
    item(&c, "composer.composerData", &composers.to_string());

    // Prompt and generation lists: no replies, no chat they belong to; not read.
    let p = "ws-prompt-list: an entry of aiService.prompts".to_string();
    let g = "ws-generation-list: an inline edit prompt".to_string();
    r.hidden.extend([p.clone(), g.clone()]);
    item(
        &c,
        "aiService.prompts",
        &json!([{"text": p, "commandType": 4}]).to_string(),
    );
    item(
        &c,
        "aiService.generations",
        &json!([{"unixMs": 1_720_000_010_000_i64, "generationUUID": "g-1", "type": "cmdk",
                 "textDescription": g}])
        .to_string(),
    );
    drop(c);

    // A chat panel value that is not JSON: one session, its text shown, a warning.
    let c = workspace_db(&user.join(WS_BROKEN_HASH), "file:///home/dev/broken", r);
    let d = format!("cursor/aichat-{WS_BROKEN_HASH}");
    let marker = r.text(&d, "broken-chatdata-marker");
    item(
        &c,
        "workbench.panel.aichat.view.aichat.chatdata",
        &format!("{{\"tabs\": [{{\"tabId\": \"{marker}"),
    );
    r.warned.push(d);
    drop(c);

    // The remote server's data dir: a window opened over SSH.
    let remote = home.join(".cursor-server/data/User/workspaceStorage");
    let c = workspace_db(
        &remote.join(WS_REMOTE_HASH),
        "vscode-remote://ssh-remote%2Bbuild/home/ubuntu/remote-proj",
        r,
    );
    let d = format!("cursor/{TAB_REMOTE}");
    let q = r.text(&d, "remote-aichat-query: tail the build log");
    let a = r.text(&d, "remote-aichat-answer: the log is in target/build.log");
    item(
        &c,
        "workbench.panel.aichat.view.aichat.chatdata",
        &json!({"tabs": [{"tabId": TAB_REMOTE, "chatTitle": "remote", "bubbles": [
            {"type": "user", "text": q}, {"type": "ai", "rawText": a}]}]})
        .to_string(),
    );
    drop(c);
}

// ---------------------------------------------------------------------------------------
// OpenClaw

pub const OC_FILE: &str = "0c1a0000-0000-4000-8000-00000000f11e";
pub const OC_BOTH: &str = "0c1a0000-0000-4000-8000-00000000b07h";
pub const OC_V1: &str = "0c1a0000-0000-4000-8000-0000000000v1";
pub const OC_LATEST: &str = "0c1a0000-0000-4000-8000-00000000late";
pub const OC_MID: &str = "0c1a0000-0000-4000-8000-000000000m1d";

/// A pi v3 session as OpenClaw writes it: header, user, assistant with a tool call, the tool
/// result, the final answer. Each line is one `transcript_events` row (or file line).
fn pi_lines(id: &str, tag: &str, dir: &str, r: &mut Record) -> Vec<String> {
    let q = r.text(dir, &format!("{tag}-query: check the gateway"));
    let a1 = r.text(dir, &format!("{tag}-answer: looking at the logs"));
    let out = r.tool(dir, &format!("{tag}-tool-output: gateway ok"));
    let a2 = r.text(dir, &format!("{tag}-answer: the gateway is healthy"));
    r.order.push((dir.to_string(), q.clone(), a2.clone()));
    let ts = "2026-07-10T08:00:00.000Z";
    let usage = json!({"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120,
                       "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003}});
    [
        json!({"type": "session", "version": 3, "id": id, "timestamp": ts, "cwd": "/srv/openclaw"}),
        json!({"type": "message", "id": "e1", "parentId": null, "timestamp": ts,
               "message": {"role": "user", "content": [{"type": "text", "text": q}], "timestamp": 1_783_670_400_000_i64}}),
        json!({"type": "message", "id": "e2", "parentId": "e1", "timestamp": ts,
               "message": {"role": "assistant", "content": [{"type": "text", "text": a1},
                   {"type": "toolCall", "id": "call_1|fc_1", "name": "exec", "arguments": {"command": "tail log"}}],
                   "api": "openai-responses", "provider": "openai", "model": "gpt-5", "usage": usage,
                   "stopReason": "toolUse", "timestamp": 1_783_670_401_000_i64}}),
        json!({"type": "message", "id": "e3", "parentId": "e2", "timestamp": ts,
               "message": {"role": "toolResult", "toolCallId": "call_1|fc_1", "toolName": "exec",
                   "content": [{"type": "text", "text": out}], "isError": false, "timestamp": 1_783_670_402_000_i64}}),
        json!({"type": "message", "id": "e4", "parentId": "e3", "timestamp": ts,
               "message": {"role": "assistant", "content": [{"type": "text", "text": a2}],
                   "api": "openai-responses", "provider": "openai", "model": "gpt-5", "usage": usage,
                   "stopReason": "stop", "timestamp": 1_783_670_403_000_i64}}),
    ]
    .iter()
    .map(Value::to_string)
    .collect()
}

/// Rows in a shuffled rowid order: sessfs must order by `seq`.
fn events(c: &Connection, id: &str, lines: &[String]) {
    let mut order: Vec<usize> = (0..lines.len()).collect();
    order.reverse();
    for i in order {
        c.execute(
            "INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![id, i as i64 + 1, lines[i], 1_783_670_400_000_i64 + i as i64],
        )
        .unwrap();
    }
}

fn write_openclaw(home: &Path, r: &mut Record) {
    let state = home.join(".openclaw");
    // File era, with its sessions.json index naming the session.
    let sessions = state.join("agents/main/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let d = format!("openclaw/{OC_FILE}");
    let lines = pi_lines(OC_FILE, "ocfile", &d, r);
    let p = sessions.join(format!("{OC_FILE}.jsonl"));
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    r.files.push(p);
    r.titles.push((d, "Telegram: ops chat".into()));
    // The same session in both eras: only the database's copy is shown.
    let mut stale = Record::default();
    let lines = pi_lines(OC_BOTH, "ocstale", "x", &mut stale);
    r.hidden.extend(stale.texts.into_iter().map(|(_, t)| t));
    let p = sessions.join(format!("{OC_BOTH}.jsonl"));
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    r.files.push(p);
    let index = json!({
        "agent:main:telegram:group:42": {"sessionId": OC_FILE, "displayName": "Telegram: ops chat",
                                          "updatedAt": 1_783_670_400_000_i64, "chatType": "group"},
        "agent:main:main": {"sessionId": OC_BOTH, "updatedAt": 1_783_670_400_000_i64}
    });
    let p = sessions.join("sessions.json");
    std::fs::write(&p, serde_json::to_string_pretty(&index).unwrap()).unwrap();
    r.files.push(p);

    // First schema: sessions + session_entries.
    let db = state.join("agents/main/agent/openclaw-agent.sqlite");
    let c = create(&db, Journal::Wal, OPENCLAW_V1);
    for (id, tag, title) in [
        (OC_V1, "ocv1", "Discord #ops"),
        (OC_BOTH, "ocboth", "main session"),
    ] {
        let d = format!("openclaw/{id}");
        let key = format!("agent:main:{tag}");
        c.execute(
            "INSERT INTO sessions (session_id, session_key, created_at, updated_at, display_name) VALUES (?1, ?2, 1, 2, NULL)",
            params![id, key],
        )
        .unwrap();
        c.execute(
            "INSERT INTO session_entries (session_key, session_id, entry_json, updated_at) VALUES (?1, ?2, ?3, 2)",
            params![key, id, json!({"sessionId": id, "displayName": title}).to_string()],
        )
        .unwrap();
        events(&c, id, &pi_lines(id, tag, &d, r));
        r.titles.push((d, title.into()));
    }
    // A session row without events: the files are the transcript (not listed from here).
    c.execute(
        "INSERT INTO sessions (session_id, session_key, created_at, updated_at) VALUES ('no-events', 'k', 1, 2)",
        [],
    )
    .unwrap();
    drop(c);
    r.files.push(db);

    // Latest schema: session_nodes + session_windows.
    let db = state.join("agents/work/agent/openclaw-agent.sqlite");
    let c = create(&db, Journal::Wal, OPENCLAW_LATEST);
    let d = format!("openclaw/{OC_LATEST}");
    c.execute_batch("PRAGMA foreign_keys = ON;").unwrap();
    c.execute(
        "INSERT INTO session_nodes (session_key, current_session_id, entry_json, updated_at, display_name, label)
         VALUES ('agent:work:main', ?1, ?2, 2, 'Slack #deploys', 'deploys')",
        params![OC_LATEST, json!({"sessionId": OC_LATEST}).to_string()],
    )
    .unwrap();
    c.execute(
        "INSERT INTO session_windows (session_id, session_key, reason, created_at, updated_at) VALUES (?1, 'agent:work:main', 'initial', 1, 2)",
        params![OC_LATEST],
    )
    .unwrap();
    events(&c, OC_LATEST, &pi_lines(OC_LATEST, "oclatest", &d, r));
    r.titles.push((d, "Slack #deploys".into()));
    drop(c);
    r.files.push(db);

    // Intermediate STRICT schema, in a profile state dir.
    let db = home.join(".openclaw-desk/agents/main/agent/openclaw-agent.sqlite");
    let c = create(&db, Journal::Delete, OPENCLAW_MID);
    let d = format!("openclaw/{OC_MID}");
    c.execute(
        "INSERT INTO sessions (session_id, session_key, created_at, updated_at, display_name) VALUES (?1, 'agent:main:main', 1, 2, 'Desk main')",
        params![OC_MID],
    )
    .unwrap();
    events(&c, OC_MID, &pi_lines(OC_MID, "ocmid", &d, r));
    r.titles.push((d, "Desk main".into()));
    drop(c);
    r.files.push(db);

    // A database that is not one: warnings, never the mount.
    let db = state.join("agents/broken/agent/openclaw-agent.sqlite");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    std::fs::write(&db, b"SQLite format 3\0 but truncated right here").unwrap();
    r.files.push(db);
}
