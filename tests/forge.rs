//! ForgeCode's `.forge.db`, built here from ForgeCode's own DDL
//! (`fixtures/schema/forge-2026-02-16.sql`, from antinomyhq/forge
//! `crates/forge_repo/src/database/migrations/`) with `conversations` rows written the way
//! `ConversationRecord::new` writes them (`context` the `ContextRecord` JSON), rendered with
//! `sessfs render` and mounted once.
//!
//! Every expected value comes from the rows written below, never from sessfs' parser.

mod common;

use common::stores::{self, meta, put, Rendered};
use common::{stdout, Home, Mount};
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::path::Path;

const DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/forge-2026-02-16.sql"
));

/// The indexing service's token, planted in the `indexing_auth` table builds of November
/// 2025 kept in the same database.
const TOKEN: &str = "forge-idx-PLANTEDtokenDoNotRead000000000";
/// A provider key, planted in `.credentials.json` beside the database.
const KEY: &str = "sk-or-PLANTEDforgeKEYdoNotRead00000000000";
const DB: &str = ".forge/.forge.db";
const LEGACY_DB: &str = "forge/.forge.db";

const A: &str = "0a1b2c3d-0000-4000-8000-00000000000a";
const B: &str = "0a1b2c3d-0000-4000-8000-00000000000b";
const C: &str = "0a1b2c3d-0000-4000-8000-00000000000c";
const D: &str = "0a1b2c3d-0000-4000-8000-00000000000d";
const E: &str = "0a1b2c3d-0000-4000-8000-00000000000e";
const F: &str = "0a1b2c3d-0000-4000-8000-00000000000f";

struct Session {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
}

struct Fixture {
    home: Home,
    sessions: Vec<Session>,
}

fn open(h: &Path, rel: &str) -> Connection {
    std::fs::create_dir_all(h.join(rel).parent().expect("parent")).expect("dir");
    let c = Connection::open(h.join(rel)).expect("db");
    c.execute_batch(DDL).expect("ddl");
    c.execute_batch("PRAGMA journal_mode = WAL").expect("wal");
    c
}

fn row(c: &Connection, id: &str, title: Option<&str>, context: Option<String>, minute: u32) {
    c.execute(
        "INSERT INTO conversations (conversation_id, title, workspace_id, context, created_at, updated_at, metrics)
         VALUES (?1, ?2, 42, ?3, ?4, ?5, ?6)",
        params![
            id,
            title,
            context,
            format!("2026-03-02 10:{minute:02}:00.250000"),
            format!("2026-03-02 10:{:02}:30.750000", minute + 1),
            json!({"started_at": "2026-03-02T10:00:00Z", "files_changed": {"src/lib.rs": {"lines_added": 3, "lines_removed": 1, "tool": "patch"}}, "files_accessed": ["src/lib.rs"]}).to_string()
        ],
    )
    .expect("conversation");
}

fn msg(kind: &str, body: Value) -> Value {
    json!({"message": {kind: body}})
}

fn usage(prompt: u64, completion: u64, cached: u64, cost: f64) -> Value {
    json!({"prompt_tokens": {"actual": prompt}, "completion_tokens": {"actual": completion},
           "total_tokens": {"actual": prompt + completion}, "cached_tokens": {"actual": cached},
           "cost": cost})
}

fn prompt(text: &str, sent: &str) -> Value {
    msg(
        "text",
        json!({"role": "User", "content": sent, "raw_content": {"Text": text}, "model": "anthropic/claude-sonnet-4"}),
    )
}

fn system(cwd: &str) -> Value {
    msg(
        "text",
        json!({"role": "System", "content": format!("You are Forge.\n<system_information>\n<current_working_directory>{cwd}</current_working_directory>\n</system_information>")}),
    )
}

fn context(initiator: Option<&str>, messages: Vec<Value>) -> String {
    let mut v = json!({"messages": messages, "tool_choice": "Auto"});
    if let Some(i) = initiator {
        v["initiator"] = json!(i);
    }
    v.to_string()
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let c = open(&h, DB);
    let mut sessions = Vec::new();

    // --- A: reasoning, three tool calls: a text output, a failed one, a sub-agent (C).
    let mut reply = msg(
        "text",
        json!({"role": "Assistant", "content": "Alpha reply: checking", "model": "anthropic/claude-sonnet-4",
               "reasoning_details": [{"text": "Alpha thinking: read the file first", "type_of": "reasoning.text"}],
               "tool_calls": [
                   {"name": "read", "call_id": "call_a1", "arguments": {"path": "src/lib.rs"}},
                   {"name": "shell", "call_id": "call_a2", "arguments": {"command": "cargo build"}},
                   {"name": "sage", "call_id": "call_a3", "arguments": {"tasks": ["find the tests"]}}]}),
    );
    reply["usage"] = usage(1000, 50, 400, 0.01);
    let mut last = msg(
        "text",
        json!({"role": "Assistant", "content": "Alpha reply two: done", "model": "anthropic/claude-sonnet-4"}),
    );
    last["usage"] = usage(1500, 30, 1000, 0.02);
    row(
        &c,
        A,
        Some("Alpha: fix the build"),
        Some(context(
            None,
            vec![
                system("/home/dev/alpha"),
                prompt(
                    "Alpha prompt: fix the build",
                    "<task>Alpha prompt: fix the build</task>\n<system_date>2026-03-02</system_date>",
                ),
                reply,
                msg(
                    "tool",
                    json!({"name": "read", "call_id": "call_a1", "output": {"is_error": false, "values": [{"text": "alpha-output: fn main"}]}}),
                ),
                msg(
                    "tool",
                    json!({"name": "shell", "call_id": "call_a2", "output": {"is_error": true, "values": [{"text": "alpha-error: linker not found"}]}}),
                ),
                msg(
                    "tool",
                    json!({"name": "sage", "call_id": "call_a3", "output": {"is_error": false, "values": [
                        {"aI": {"value": "alpha-subagent-answer: tests in tests/", "conversation_id": C}}, "empty"]}}),
                ),
                last,
            ],
        )),
        0,
    );
    sessions.push(Session {
        dir: format!("forge/{A}"),
        lines: vec![
            "Alpha prompt: fix the build",
            "Alpha thinking: read the file first",
            "Alpha reply: checking",
            "Alpha reply two: done",
        ],
        outputs: vec![
            "alpha-output: fn main",
            "alpha-error: linker not found",
            "alpha-subagent-answer: tests in tests/",
        ],
    });

    // --- B: compaction summary (carrying the replaced messages' usage), an old-format
    // entry, an attachment, a reminder, a command, an image, a kind sessfs does not know.
    let mut summary = msg(
        "text",
        json!({"role": "User", "content": "Use the following summary frames as the authoritative reference.\n\nBravo summary: the early work"}),
    );
    summary["usage"] = usage(5000, 300, 0, 0.05);
    let mut reply = msg(
        "text",
        json!({"role": "Assistant", "content": "Bravo reply: reviewed", "model": "anthropic/claude-sonnet-4"}),
    );
    reply["usage"] = usage(200, 10, 0, 0.001);
    row(
        &c,
        B,
        Some("Bravo: long session"),
        Some(context(
            None,
            vec![
                system("/home/dev/bravo"),
                summary,
                json!({"text": {"role": "User", "content": "Bravo old prompt without raw content"}}),
                msg(
                    "text",
                    json!({"role": "User", "content": "<file_content path=\"notes.md\">Bravo attached notes</file_content>", "droppable": true}),
                ),
                msg(
                    "text",
                    json!({"role": "User", "content": "<system_reminder>Bravo reminder: todos pending</system_reminder>"}),
                ),
                msg(
                    "text",
                    json!({"role": "User", "content": "Bravo rendered command text",
                           "raw_content": {"Command": {"name": "review", "template": "x", "parameters": ["src/"]}}}),
                ),
                msg(
                    "image",
                    json!({"url": "data:image/png;base64,AAAAAAAA", "mime_type": "image/png"}),
                ),
                msg("mystery", json!({"bravo": "mystery kind"})),
                reply,
            ],
        )),
        5,
    );
    sessions.push(Session {
        dir: format!("forge/{B}"),
        lines: vec![
            "Bravo summary: the early work",
            "Bravo old prompt without raw content",
            "Bravo attached notes",
            "Bravo reminder: todos pending",
            "/review src/",
            "Bravo rendered command text",
            "Bravo reply: reviewed",
        ],
        outputs: vec![],
    });

    // --- C: the sub-agent A started (initiator "agent", title its task).
    row(
        &c,
        C,
        Some("Charlie: find the tests"),
        Some(context(
            Some("agent"),
            vec![
                prompt(
                    "Charlie task: find the tests",
                    "Charlie task: find the tests",
                ),
                msg(
                    "text",
                    json!({"role": "Assistant", "content": "Charlie answer: tests live in tests/", "model": "anthropic/claude-haiku-4.5"}),
                ),
            ],
        )),
        10,
    );
    sessions.push(Session {
        dir: format!("forge/{C}"),
        lines: vec![
            "Charlie task: find the tests",
            "Charlie answer: tests live in tests/",
        ],
        outputs: vec![],
    });

    // --- D: a context cut mid-write.
    row(
        &c,
        D,
        Some("Delta"),
        Some(
            r#"{"messages":[{"message":{"text":{"role":"User","content":"Delta cut prompt"#.into(),
        ),
        15,
    );
    sessions.push(Session {
        dir: format!("forge/{D}"),
        lines: vec!["Delta cut prompt"],
        outputs: vec![],
    });

    // --- E: a conversation without context (ForgeCode lists none such).
    row(&c, E, Some("Echo never listed"), None, 20);

    // The indexing token of November 2025 builds.
    c.execute_batch(
        "CREATE TABLE indexing_auth (user_id TEXT PRIMARY KEY, token TEXT NOT NULL, created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)",
    )
    .expect("auth");
    c.execute(
        "INSERT INTO indexing_auth (user_id, token) VALUES ('u1', ?1)",
        [TOKEN],
    )
    .expect("token");
    drop(c);

    // --- F: the legacy base, ~/forge.
    let c = open(&h, LEGACY_DB);
    row(
        &c,
        F,
        None,
        Some(context(
            None,
            vec![prompt(
                "Foxtrot prompt in the legacy base",
                "Foxtrot prompt in the legacy base",
            )],
        )),
        30,
    );
    drop(c);
    sessions.push(Session {
        dir: format!("forge/{F}"),
        lines: vec!["Foxtrot prompt in the legacy base"],
        outputs: vec![],
    });

    put(
        &h,
        ".forge/.credentials.json",
        json!([{"id": "open_router", "auth_details": {"api_key": KEY}}]).to_string(),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-forge", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.sessions {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &s.outputs);
    }
}

/// The JSON lines of a session's `messages.jsonl`.
fn lines(tree: &Path, id: &str) -> Vec<Value> {
    std::fs::read_to_string(tree.join(format!("forge/{id}/messages.jsonl")))
        .expect("messages.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    // A, B, C, D and F; E has no context.
    assert_eq!(stores::entries(&out.tree, "forge"), 5);
    assert!(!out.tree.join(format!("forge/{E}")).exists());
}

#[test]
fn titles_cwd_times_model_and_usage() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("forge/{A}"));
    assert_eq!(a["title"], "Alpha: fix the build");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["createdAt"], "2026-03-02T10:00:00.250Z");
    assert_eq!(a["updatedAt"], "2026-03-02T10:01:30.750Z");
    assert_eq!(a["model"], "anthropic/claude-sonnet-4");
    // Prompt tokens include the cached ones.
    stores::assert_cost(
        &out.tree,
        &format!("forge/{A}"),
        (600 + 500, 80, 400 + 1000, 0, 0.03),
    );
    // The summary's usage is that of the messages it replaced.
    stores::assert_cost(&out.tree, &format!("forge/{B}"), (5200, 310, 0, 0, 0.051));
    let f = meta(&out.tree, &format!("forge/{F}"));
    assert_eq!(f["title"], "Foxtrot prompt in the legacy base");
    let metrics = std::fs::read_to_string(out.tree.join(format!("forge/{A}/metrics.json")))
        .expect("metrics.json");
    assert!(metrics.contains("\"lines_added\": 3"), "{metrics}");
}

#[test]
fn every_message_kind_lands_where_it_belongs() {
    let fx = write();
    let out = render(&fx);
    let a = lines(&out.tree, A);
    let find = |ls: &[Value], f: &dyn Fn(&Value) -> bool| -> Value {
        ls.iter().find(|l| f(l)).cloned().unwrap_or(Value::Null)
    };
    let sys = find(&a, &|l| l["label"] == "system prompt");
    assert_eq!(sys["role"], "system");
    assert_eq!(sys["kind"], "context");
    let user = find(&a, &|l| l["role"] == "user");
    assert_eq!(user["content"], "Alpha prompt: fix the build");
    let sent = find(&a, &|l| l["label"] == "prompt as sent");
    assert_eq!(
        sent["content"],
        "<task>Alpha prompt: fix the build</task>\n<system_date>2026-03-02</system_date>"
    );
    let reply = find(&a, &|l| l["content"] == "Alpha reply: checking");
    assert_eq!(reply["thinking"], "Alpha thinking: read the file first");
    assert_eq!(reply["toolCalls"][1]["toolName"], "shell");
    assert_eq!(
        reply["toolCalls"][1]["input"],
        json!({"command": "cargo build"})
    );
    let ok = find(&a, &|l| l["toolResult"]["toolCallId"] == "call_a1");
    assert_eq!(ok["toolResult"]["isError"], false);
    assert_eq!(ok["toolResult"]["output"], "alpha-output: fn main");
    let failed = find(&a, &|l| l["toolResult"]["toolCallId"] == "call_a2");
    assert_eq!(failed["toolResult"]["isError"], true);
    assert_eq!(failed["toolResult"]["toolName"], "shell");

    let b = lines(&out.tree, B);
    let summary = find(&b, &|l| l["kind"] == "compactionSummary");
    assert!(
        summary["content"]
            .as_str()
            .is_some_and(|s| s.ends_with("Bravo summary: the early work")),
        "{summary}"
    );
    let labelled = |label: &str| find(&b, &|l| l["label"] == label)["content"].clone();
    assert_eq!(
        labelled("attachment"),
        "<file_content path=\"notes.md\">Bravo attached notes</file_content>"
    );
    assert_eq!(
        labelled("reminder"),
        "<system_reminder>Bravo reminder: todos pending</system_reminder>"
    );
    let prompts: Vec<&Value> = b.iter().filter(|l| l["role"] == "user").collect();
    assert_eq!(prompts.len(), 2, "{b:?}");
    assert_eq!(
        prompts[0]["content"],
        "Bravo old prompt without raw content"
    );
    assert_eq!(prompts[1]["content"], "/review src/");
    assert!(b
        .iter()
        .any(|l| l["content"] == "[image: image/png, 6 B]" && l["kind"] == "context"));
    let m = meta(&out.tree, &format!("forge/{B}"));
    assert!(
        m["warnings"].to_string().contains("unknown kind"),
        "{}",
        m["warnings"]
    );
    assert!(b.iter().any(|l| l["label"] == "unparsed message"
        && l["content"]
            .as_str()
            .is_some_and(|c| c.contains("mystery kind"))));
}

#[test]
fn a_sub_agent_is_linked_both_ways() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("forge/{A}"));
    assert!(
        a["subagents"].to_string().contains(&format!("forge:{C}")),
        "{}",
        a["subagents"]
    );
    let c = meta(&out.tree, &format!("forge/{C}"));
    assert_eq!(c["parent"], format!("forge:{A}"));
    assert_eq!(c["title"], "Charlie: find the tests");
    assert_eq!(c["tags"], json!(["subagent"]));
    assert_eq!(a["parent"], Value::Null);
}

#[test]
fn a_cut_context_costs_a_warning_and_nothing_else() {
    let fx = write();
    let out = render(&fx);
    let d = meta(&out.tree, &format!("forge/{D}"));
    assert!(
        d["warnings"].to_string().contains("context is not JSON"),
        "{}",
        d["warnings"]
    );
    assert_eq!(d["title"], "Delta");
    // The other sessions of the same database load whole.
    assert_eq!(
        meta(&out.tree, &format!("forge/{A}"))["warnings"],
        json!([])
    );
}

#[test]
fn credentials_in_and_beside_the_database_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    for secret in [TOKEN, KEY] {
        stores::assert_nowhere(&out.tree, secret);
        stores::assert_list_hides(&fx.home, secret, &[]);
    }
}

#[test]
fn forge_config_moves_the_base() {
    let fx = write();
    let moved = fx.home.path().join("elsewhere");
    std::fs::create_dir_all(&moved).expect("dir");
    std::fs::rename(fx.home.path().join(DB), moved.join(".forge.db")).expect("move");
    let mut c = fx.home.command(&["list", "--json"]);
    c.env("FORGE_CONFIG", &moved);
    let list = stdout(&c.output().expect("list"));
    assert!(list.contains(A), "{list}");
    // A set FORGE_CONFIG replaces the defaults, as in ForgeCode.
    assert!(!list.contains(F), "{list}");
}

#[test]
fn doctor_names_forge_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 5 sessions", "forge")),
        "{text}"
    );
    assert!(text.contains(".forge/.forge.db"), "{text}");
}

#[test]
fn mounted_database_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        for secret in [TOKEN, KEY] {
            stores::assert_mount_read_only(m, &["forge"], 6, secret, &format!("forge/{A}"));
        }
    });
}

/// ForgeCode upserts the whole row after each message (WAL): the new message shows within
/// a second.
#[test]
fn an_upserted_row_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("forge/{C}/transcript.md"));
    assert!(stores::file_contains(&t, "Charlie answer"));
    let c = Connection::open(fx.home.path().join(DB)).expect("db");
    let ctx = context(
        Some("agent"),
        vec![
            prompt(
                "Charlie task: find the tests",
                "Charlie task: find the tests",
            ),
            msg(
                "text",
                json!({"role": "Assistant", "content": "Charlie answer: tests live in tests/"}),
            ),
            prompt("Charlie fresh prompt after the mount", "x"),
        ],
    );
    c.execute(
        "UPDATE conversations SET context = ?2, updated_at = '2026-03-02 11:00:00.000000' WHERE conversation_id = ?1",
        params![C, ctx],
    )
    .expect("update");
    stores::assert_within_a_second("upserted row", || {
        stores::file_contains(&t, "Charlie fresh prompt after the mount")
    });
}
