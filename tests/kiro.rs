//! Kiro CLI's and Amazon Q Developer CLI's `data.sqlite3`, built here from the agent's own
//! migrations (`fixtures/schema/kiro-q-007.sql`, aws/amazon-q-developer-cli
//! `crates/chat-cli/src/database/sqlite_migrations/`) with `conversations` rows written the
//! way `set_conversation_by_path` serializes a `ConversationState`, rendered with
//! `sessfs render` and mounted once.
//!
//! Every expected value comes from the rows written below, never from sessfs' parser.

mod common;

use common::stores::{self, meta, Rendered};
use common::{stdout, Home, Mount};
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::path::Path;

const DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/kiro-q-007.sql"
));

/// A credential, planted in the tables beside the conversations.
const SECRET: &str = "aoaPLANTEDkiroSSOtokenDoNotRead0000000000";
const KIRO_DB: &str = ".local/share/kiro-cli/data.sqlite3";
const Q_DB: &str = ".local/share/amazon-q/data.sqlite3";

const A: &str = "a0a0a0a0-1111-4aaa-8aaa-000000000001";
const B: &str = "b0b0b0b0-2222-4bbb-8bbb-000000000002";
const C: &str = "c0c0c0c0-3333-4ccc-8ccc-000000000003";

struct Conv {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
}

struct Fixture {
    home: Home,
    convs: Vec<Conv>,
}

fn user(content: Value, at: &str, context: &str) -> Value {
    json!({"additional_context": context, "env_context": {"env_state": {"operating_system": "linux",
           "current_working_directory": "/home/dev"}}, "content": content, "timestamp": at, "images": null})
}

fn meta_of(model: &str, end_ms: i64) -> Value {
    json!({"request_id": "r1", "message_id": "m1", "request_start_timestamp_ms": end_ms - 2000,
           "stream_end_timestamp_ms": end_ms, "time_to_first_chunk": null, "time_between_chunks": [],
           "user_prompt_length": 10, "response_size": 20, "chat_conversation_type": null,
           "tool_use_ids_and_names": [], "model_id": model, "message_meta_tags": []})
}

fn state(id: &str, history: Vec<Value>, summary: Option<&str>) -> Value {
    json!({"conversation_id": id, "next_message": null, "history": history,
           "valid_history_range": [0, 2], "transcript": ["> transcript copy"], "tools": {},
           "context_manager": null, "context_message_length": null,
           "latest_summary": summary.map(|s| json!([s, meta_of("claude-sonnet-4", 1_772_359_000_000_i64)])),
           "model_info": {"model_name": "claude-sonnet-4", "model_id": "claude-sonnet-4"},
           "file_line_tracker": {}, "checkpoint_manager": null, "mcp_enabled": true})
}

fn db(h: &Path, rel: &str) -> Connection {
    let p = h.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
    let c = Connection::open(p).expect("db");
    c.execute_batch(DDL).expect("ddl");
    c.execute(
        "INSERT INTO auth_kv VALUES ('codewhisperer:odic:token', ?1)",
        params![format!("{{\"access_token\":\"{SECRET}\"}}")],
    )
    .expect("auth");
    c.execute(
        "INSERT INTO state VALUES ('auth.idc.start-url', ?1)",
        params![SECRET.as_bytes()],
    )
    .expect("state");
    c
}

fn conv(c: &Connection, key: &str, v: &Value) {
    c.execute(
        "INSERT INTO conversations VALUES (?1, ?2)",
        params![key, v.to_string()],
    )
    .expect("conversation");
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let k = db(&h, KIRO_DB);
    let mut convs = Vec::new();

    // --- A: a prompt, a tool call, its result in the next user message, a reply.
    conv(
        &k,
        "/home/dev/alpha",
        &state(
            A,
            vec![
                json!({"user": user(json!({"Prompt": {"prompt": "Alpha prompt: what is in src?"}}), "2026-03-01T10:00:00+01:00", ""),
               "assistant": {"ToolUse": {"message_id": "ma1", "content": "Alpha reply: let me look",
                   "tool_uses": [{"id": "tooluse_a1", "name": "fs_read", "orig_name": "fs_read",
                                  "args": {"path": "src"}, "orig_args": {"path": "src"}}]}},
               "request_metadata": meta_of("claude-sonnet-4", 1_772_359_210_000_i64)}),
                json!({"user": user(json!({"ToolUseResults": {"tool_use_results": [
                    {"tool_use_id": "tooluse_a1", "content": [{"Text": "alpha-output: main.rs lib.rs"}], "status": "Success"}]}}),
                   "2026-03-01T10:00:15+01:00", ""),
               "assistant": {"Response": {"message_id": "ma2", "content": "Alpha reply two: two files"}},
               "request_metadata": meta_of("claude-sonnet-4", 1_772_359_220_000_i64)}),
            ],
            None,
        ),
    );
    convs.push(Conv {
        dir: format!("kiro/{A}"),
        lines: vec![
            "Alpha prompt: what is in src?",
            "Alpha reply: let me look",
            "Alpha reply two: two files",
        ],
        outputs: vec!["alpha-output: main.rs lib.rs"],
    });

    // --- B: compacted (the summary opens it), context files, an older build's pair entry,
    // a failed tool result.
    conv(
        &k,
        "/home/dev/bravo",
        &state(
            B,
            vec![
                json!([user(json!({"Prompt": {"prompt": "Bravo prompt: run the tests"}}), "2026-03-01T11:00:00Z", "Bravo context file: README says hi"),
               {"ToolUse": {"message_id": "mb1", "content": "Bravo reply: running",
                            "tool_uses": [{"id": "tooluse_b1", "name": "execute_bash", "orig_name": "execute_bash",
                                           "args": {"command": "cargo test"}, "orig_args": {"command": "cargo test"}}]}}]),
                json!({"user": user(json!({"CancelledToolUses": {"prompt": "Bravo stop that", "tool_use_results": [
                    {"tool_use_id": "tooluse_b1", "content": [{"Json": {"stderr": "bravo-error: interrupted"}}], "status": "Error"}]}}),
                   "2026-03-01T11:00:30Z", ""),
               "assistant": {"Response": {"message_id": "mb2", "content": "Bravo reply two: stopped"}}}),
            ],
            Some("Bravo summary: the earlier talk about tests"),
        ),
    );
    convs.push(Conv {
        dir: format!("kiro/{B}"),
        lines: vec![
            "Bravo summary: the earlier talk about tests",
            "Bravo context file: README says hi",
            "Bravo prompt: run the tests",
            "Bravo reply: running",
            "Bravo stop that",
            "Bravo reply two: stopped",
        ],
        outputs: vec!["bravo-error: interrupted"],
    });
    drop(k);

    // --- C: Amazon Q Developer CLI's own database.
    let q = db(&h, Q_DB);
    conv(
        &q,
        "/home/dev/charlie",
        &state(
            C,
            vec![
                json!({"user": user(json!({"Prompt": {"prompt": "Charlie prompt: from Amazon Q"}}), "2026-02-01T09:00:00Z", ""),
               "assistant": {"Response": {"message_id": "mc1", "content": "Charlie reply: hello from q"}},
               "request_metadata": null}),
            ],
            None,
        ),
    );
    drop(q);
    convs.push(Conv {
        dir: format!("kiro/{C}"),
        lines: vec![
            "Charlie prompt: from Amazon Q",
            "Charlie reply: hello from q",
        ],
        outputs: vec![],
    });

    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, convs }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-kiro", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for c in &fx.convs {
        stores::assert_session_holds(tree, &c.dir, &c.lines, &c.outputs);
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_conversation() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "kiro"), 3);
}

#[test]
fn cwd_model_times_and_no_usage_come_from_the_row() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("kiro/{A}"));
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["model"], "claude-sonnet-4");
    assert_eq!(a["title"], "Alpha prompt: what is in src?");
    assert_eq!(a["createdAt"], "2026-03-01T09:00:00.000Z");
    for c in &fx.convs {
        let cost = &meta(&out.tree, &c.dir)["cost"];
        assert_eq!(stores::tokens(cost).0.unwrap_or(0), 0, "{}: {cost}", c.dir);
    }
}

#[test]
fn sso_tokens_and_state_beside_the_conversations_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn doctor_names_kiro_where_it_found_it_and_what_it_cannot_read() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 3 sessions", "kiro")),
        "{text}"
    );
    assert!(text.contains("kiro-cli/data.sqlite3"), "{text}");
    assert!(
        text.contains("not readable: Kiro CLI's own formats"),
        "{text}"
    );
}

#[test]
fn mounted_database_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["kiro"], 6, SECRET, &format!("kiro/{A}"));
    });
}

/// The agent rewrites a directory's row after every turn: the change shows within a second.
#[test]
fn a_rewritten_row_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("kiro/{C}/transcript.md"));
    assert!(stores::file_contains(&t, "Charlie reply"));
    let c = Connection::open(fx.home.path().join(Q_DB)).expect("db");
    let v = state(
        C,
        vec![
            json!({"user": user(json!({"Prompt": {"prompt": "Charlie fresh prompt after the mount"}}), "2026-02-01T09:05:00Z", ""),
                                 "assistant": {"Response": {"message_id": "mc2", "content": "ok"}}}),
        ],
        None,
    );
    c.execute(
        "UPDATE conversations SET value = ?1 WHERE key = '/home/dev/charlie'",
        params![v.to_string()],
    )
    .expect("update");
    stores::assert_within_a_second("rewritten row", || {
        stores::file_contains(&t, "Charlie fresh prompt after the mount")
    });
}

/// The Kiro store's glance (each database with its journals): with nothing changed a search
/// lists no store; a conversation grown by a prompt and a new working directory's
/// conversation (a new row) are each found by the next search, and a deleted row is gone.
#[test]
fn kiro_changes_are_found_by_the_next_search() {
    use common::{age, logged_search};
    use std::collections::BTreeSet;
    let home = Home::empty();
    let h = home.path();
    let ids = [
        "d0d0d0d0-0000-4000-8000-000000000001",
        "d0d0d0d0-0000-4000-8000-000000000002",
        "d0d0d0d0-0000-4000-8000-000000000003",
    ];
    let found = |ns: &[usize]| -> BTreeSet<String> {
        ns.iter().map(|&n| format!("kiro/{}", ids[n])).collect()
    };
    let entry = |prompt: &str| {
        json!({"user": user(json!({"Prompt": {"prompt": prompt}}), "2026-03-01T10:00:00Z", ""),
               "assistant": {"Response": {"message_id": "m1", "content": "a glance reply"}},
               "request_metadata": meta_of("claude-sonnet-4", 1_772_359_210_000_i64)})
    };
    let k = db(h, KIRO_DB);
    conv(
        &k,
        "/home/dev/one",
        &state(ids[0], vec![entry("the glancekiroone prompt")], None),
    );
    conv(
        &k,
        "/home/dev/two",
        &state(ids[1], vec![entry("the glancekirotwo prompt")], None),
    );
    drop(k);
    let dir = h.join(KIRO_DB);
    let dir = dir.parent().expect("parent");
    age(dir, 3600);
    assert_eq!(logged_search(&home, "prompt"), (found(&[0, 1]), false));
    assert_eq!(logged_search(&home, "prompt"), (found(&[0, 1]), true));
    // Kiro rewrites a conversation's row as it grows.
    let k = Connection::open(h.join(KIRO_DB)).expect("db");
    let grown = state(
        ids[0],
        vec![
            entry("the glancekiroone prompt"),
            entry("an appendedkiro prompt"),
        ],
        None,
    );
    k.execute(
        "UPDATE conversations SET value = ?1 WHERE key = '/home/dev/one'",
        params![grown.to_string()],
    )
    .expect("update");
    assert_eq!(logged_search(&home, "appendedkiro").0, found(&[0]));
    assert_eq!(logged_search(&home, "appendedkiro"), (found(&[0]), true));
    // A conversation in a new working directory: a new row.
    conv(
        &k,
        "/home/dev/three",
        &state(ids[2], vec![entry("the glancekirothree prompt")], None),
    );
    assert_eq!(logged_search(&home, "glancekirothree").0, found(&[2]));
    assert_eq!(logged_search(&home, "glancekirothree"), (found(&[2]), true));
    // A deleted row.
    k.execute("DELETE FROM conversations WHERE key = '/home/dev/two'", [])
        .expect("delete");
    assert_eq!(logged_search(&home, "glancekirotwo").0, BTreeSet::new());
    assert_eq!(logged_search(&home, "prompt"), (found(&[0, 2]), true));
}
