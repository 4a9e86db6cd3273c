//! Grok CLI's `~/.grok/grok.db`, built here from Grok CLI's own DDL
//! (`fixtures/schema/grok-v3.sql`, from superagent-ai/grok-cli `src/storage/migrations.ts`)
//! with rows written the way `appendMessages`, `appendCompaction` and `recordUsageEvent`
//! write them, rendered with `sessfs render` and mounted once.
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
    "/fixtures/schema/grok-v3.sql"
));

/// A credential, planted in Grok's settings beside the database.
const SECRET: &str = "xai-PLANTEDgrokSECRETdoNotRead000000000000";
const DB: &str = ".grok/grok.db";

const A: &str = "a1b2c3d4e5f6";
const B: &str = "b2c3d4e5f6a1";

struct Session {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
    /// input, output, USD (from `cost_micros`).
    usage: (u64, u64, f64),
}

struct Fixture {
    home: Home,
    sessions: Vec<Session>,
}

fn session(c: &Connection, id: &str, title: &str, cwd: &str) {
    c.execute(
        "INSERT OR IGNORE INTO workspaces (id, scope_key, canonical_path, display_name, last_seen_at)
         VALUES ('w1', ?1, ?1, 'p', '2026-03-01T10:00:00.000Z')",
        params![cwd],
    )
    .expect("workspace");
    c.execute(
        "INSERT INTO sessions (id, workspace_id, title, model, mode, cwd_at_start, cwd_last, status, created_at, updated_at)
         VALUES (?1, 'w1', ?2, 'grok-code-fast-1', 'agent', ?3, ?3, 'active', '2026-03-01T10:00:00.000Z', '2026-03-01T10:05:00.000Z')",
        params![id, title, cwd],
    )
    .expect("session");
}

fn messages(c: &Connection, id: &str, msgs: &[Value]) {
    for (i, m) in msgs.iter().enumerate() {
        c.execute(
            "INSERT INTO messages (session_id, seq, role, message_json, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, i as i64 + 1, m["role"].as_str().unwrap_or("x"), m.to_string(), format!("2026-03-01T10:0{i}:00.000Z")],
        )
        .expect("message");
    }
}

fn usage(c: &Connection, id: &str, source: &str, i: i64, o: i64, micros: i64) {
    c.execute(
        "INSERT INTO usage_events (session_id, source, model, input_tokens, output_tokens, total_tokens, cost_micros, created_at)
         VALUES (?1, ?2, 'grok-code-fast-1', ?3, ?4, ?5, ?6, '2026-03-01T10:00:00.000Z')",
        params![id, source, i, o, i + o, micros],
    )
    .expect("usage");
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    std::fs::create_dir_all(h.join(".grok")).expect("dir");
    let c = Connection::open(h.join(DB)).expect("db");
    c.execute_batch(DDL).expect("ddl");
    c.execute_batch("PRAGMA journal_mode = WAL").expect("wal");
    let mut sessions = Vec::new();

    // --- A: reasoning, two tool calls with a text and a json (failed) output, a title call.
    session(&c, A, "Alpha: fix the build", "/home/dev/alpha");
    messages(
        &c,
        A,
        &[
            json!({"role": "system", "content": "Alpha system prompt"}),
            json!({"role": "user", "content": "Alpha prompt: fix the build"}),
            json!({"role": "assistant", "content": [
            {"type": "reasoning", "text": "Alpha thinking: check the compiler"},
            {"type": "text", "text": "Alpha reply: building now"},
            {"type": "tool-call", "toolCallId": "call_a1", "toolName": "bash", "input": {"command": "cargo build"}},
            {"type": "tool-call", "toolCallId": "call_a2", "toolName": "read_file", "input": {"path": "src/lib.rs"}}]}),
            json!({"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "call_a1", "toolName": "bash", "output": {"type": "text", "value": "alpha-output: build ok"}},
            {"type": "tool-result", "toolCallId": "call_a2", "toolName": "read_file",
             "output": {"type": "json", "value": {"success": false, "error": "alpha-error: no such file"}}}]}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "Alpha reply two: done"}]}),
        ],
    );
    usage(&c, A, "title", 100, 10, 30);
    usage(&c, A, "message", 1000, 200, 500);
    usage(&c, A, "message", 1500, 100, 450);
    sessions.push(Session {
        dir: format!("grok/{A}"),
        lines: vec![
            "Alpha prompt: fix the build",
            "Alpha thinking: check the compiler",
            "Alpha reply: building now",
            "Alpha reply two: done",
        ],
        outputs: vec!["alpha-output: build ok", "alpha-error: no such file"],
        usage: (2600, 310, 0.00098),
    });

    // --- B: compacted (every row kept, summary before the first kept seq), a row that is
    // not JSON.
    session(&c, B, "Bravo: long session", "/home/dev/bravo");
    messages(
        &c,
        B,
        &[
            json!({"role": "user", "content": "Bravo early prompt"}),
            json!({"role": "assistant", "content": "Bravo early reply"}),
            json!({"role": "user", "content": [{"type": "text", "text": "Bravo kept prompt"}]}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "Bravo kept reply"}]}),
        ],
    );
    c.execute(
        "INSERT INTO messages (session_id, seq, role, message_json, created_at) VALUES (?1, 9, 'user', 'Bravo torn {row', '2026-03-01T10:09:00.000Z')",
        params![B],
    )
    .expect("torn");
    c.execute(
        "INSERT INTO compactions (session_id, first_kept_seq, summary, tokens_before, created_at)
         VALUES (?1, 3, 'Bravo summary: the early work', 9000, '2026-03-01T10:02:30.000Z')",
        params![B],
    )
    .expect("compaction");
    usage(&c, B, "message", 40, 4, 0);
    sessions.push(Session {
        dir: format!("grok/{B}"),
        lines: vec![
            "Bravo early prompt",
            "Bravo early reply",
            "Bravo summary: the early work",
            "Bravo kept prompt",
            "Bravo kept reply",
            "Bravo torn {row",
        ],
        outputs: vec![],
        usage: (40, 4, 0.0),
    });
    drop(c);

    put(
        &h,
        ".grok/user-settings.json",
        json!({"apiKey": SECRET}).to_string(),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-grok", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.sessions {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &s.outputs);
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "grok"), 2);
}

#[test]
fn usage_is_every_model_call_once() {
    let fx = write();
    let out = render(&fx);
    for s in &fx.sessions {
        let c = &meta(&out.tree, &s.dir)["cost"];
        assert_eq!(stores::tokens(c).0, Some(s.usage.0), "{}: {c}", s.dir);
        assert_eq!(stores::tokens(c).1, Some(s.usage.1), "{}: {c}", s.dir);
        if s.usage.2 > 0.0 {
            stores::assert_usd(c, s.usage.2, &s.dir);
        }
    }
}

#[test]
fn titles_cwd_model_compaction_and_bad_rows() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("grok/{A}"));
    assert_eq!(a["title"], "Alpha: fix the build");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["model"], "grok-code-fast-1");
    let b = meta(&out.tree, &format!("grok/{B}"));
    assert!(
        b["warnings"]
            .to_string()
            .contains("message_json is not JSON"),
        "{}",
        b["warnings"]
    );
    let t = std::fs::read_to_string(out.tree.join(format!("grok/{B}/transcript.md"))).expect("t");
    let (early, summary, kept) = (
        t.find("Bravo early reply"),
        t.find("Bravo summary"),
        t.find("Bravo kept prompt"),
    );
    assert!(early < summary && summary < kept, "{t}");
}

#[test]
fn the_api_key_beside_the_database_is_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn doctor_names_grok_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 2 sessions", "grok")),
        "{text}"
    );
    assert!(text.contains(".grok/grok.db"), "{text}");
}

#[test]
fn mounted_database_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["grok"], 6, SECRET, &format!("grok/{A}"));
    });
}

/// Grok writes each message as a row while the session runs (WAL): it shows within a
/// second.
#[test]
fn a_new_row_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("grok/{A}/transcript.md"));
    assert!(stores::file_contains(&t, "Alpha reply two"));
    let c = Connection::open(fx.home.path().join(DB)).expect("db");
    c.execute(
        "INSERT INTO messages (session_id, seq, role, message_json, created_at) VALUES (?1, 50, 'user', ?2, '2026-03-01T11:00:00.000Z')",
        params![A, json!({"role": "user", "content": "Alpha fresh prompt after the mount"}).to_string()],
    )
    .expect("insert");
    stores::assert_within_a_second("new row", || {
        stores::file_contains(&t, "Alpha fresh prompt after the mount")
    });
}

/// The Grok CLI store's glance: with nothing changed a search lists no store; a message row,
/// a new session's rows and a deleted session are each found by the next search.
#[test]
fn grok_changes_are_found_by_the_next_search() {
    use common::{age, logged_search};
    use std::collections::BTreeSet;
    let home = Home::empty();
    let grok = home.path().join(".grok");
    std::fs::create_dir_all(&grok).expect("dir");
    let open = || Connection::open(grok.join("grok.db")).expect("db");
    let c = open();
    c.execute_batch(DDL).expect("ddl");
    c.execute_batch("PRAGMA journal_mode = WAL").expect("wal");
    let user = |text: &str| json!({"role": "user", "content": text});
    session(&c, A, "Alpha", "/home/dev/alpha");
    messages(&c, A, &[user("the grokone question")]);
    session(&c, B, "Bravo", "/home/dev/bravo");
    messages(&c, B, &[user("the groktwo question")]);
    // Closing the last connection removes the WAL: `~/.grok` moves, here to long ago.
    drop(c);
    age(&grok, 3600);
    let set =
        |ids: &[&str]| -> BTreeSet<String> { ids.iter().map(|id| format!("grok/{id}")).collect() };
    assert_eq!(logged_search(&home, "grokone"), (set(&[A]), false));
    assert_eq!(logged_search(&home, "groktwo"), (set(&[B]), true));
    // A message row.
    let c = open();
    c.execute(
        "INSERT INTO messages (session_id, seq, role, message_json, created_at) VALUES (?1, 2, 'user', ?2, '2026-03-01T11:00:00.000Z')",
        params![A, user("an appendedgrok answer").to_string()],
    )
    .expect("insert");
    drop(c);
    age(&grok, 3000);
    assert_eq!(logged_search(&home, "appendedgrok").0, set(&[A]));
    assert_eq!(logged_search(&home, "appendedgrok"), (set(&[A]), true));
    // A new session.
    let new = "c3d4e5f6a1b2";
    let c = open();
    session(&c, new, "Charlie", "/home/dev/charlie");
    messages(&c, new, &[user("the grokthree question")]);
    drop(c);
    age(&grok, 2400);
    assert_eq!(logged_search(&home, "grokthree").0, set(&[new]));
    assert_eq!(logged_search(&home, "grokthree"), (set(&[new]), true));
    // A deleted session.
    let c = open();
    c.execute("DELETE FROM messages WHERE session_id = ?1", [B])
        .expect("delete messages");
    c.execute("DELETE FROM sessions WHERE id = ?1", [B])
        .expect("delete session");
    drop(c);
    age(&grok, 1800);
    assert_eq!(logged_search(&home, "groktwo").0, BTreeSet::new());
    assert_eq!(logged_search(&home, "question"), (set(&[A, new]), true));
}
