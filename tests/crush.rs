//! Crush projects, written here the way Crush writes them: a `crush.db` per project from
//! the project's DDL (`fixtures/schema/crush-20260127000000.sql`, Crush's own migrations),
//! parts as `marshalParts` lays them out, a `projects.json` registry, rendered with
//! `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below ([`Sess`]), never from sessfs' parser.

mod common;

use common::stores::{self, meta, put, Rendered};
use common::{stderr, stdout, Home, Mount};
use rusqlite::Connection;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/crush-20260127000000.sql"
));

/// A string that looks like a credential, planted in every config file beside the stores.
const SECRET: &str = "sk-or-v1-PLANTEDcrushSECRETdoNotRead00000000";

const ALPHA: &str = "a1000000-0000-4000-8000-000000000001";
const CHILD: &str = "msg-a1-3$$call_agent_1";
const BRAVO: &str = "b2000000-0000-4000-8000-000000000002";
const CHARLIE: &str = "c3000000-0000-4000-8000-000000000003";
const DELTA: &str = "d4000000-0000-4000-8000-000000000004";

/// What the writer put in one top-level session, for the checks.
struct Sess {
    /// `crush/<id>`.
    dir: String,
    /// Lines that must be in this session's files and no other session's.
    lines: Vec<&'static str>,
    /// Tool outputs: must be under this session's `tools/` (or its subagents').
    outputs: Vec<&'static str>,
    /// Expected own usage: prompt tokens, completion tokens, USD (`None`: none recorded).
    usage: (u64, u64, Option<f64>),
}

struct Fixture {
    home: Home,
    sessions: Vec<Sess>,
}

fn part(kind: &str, data: Value) -> Value {
    json!({ "type": kind, "data": data })
}

fn text(t: &str) -> Value {
    part("text", json!({ "text": t }))
}

fn finish(reason: &str) -> Value {
    part("finish", json!({ "reason": reason, "time": 1_767_000_100 }))
}

fn call(id: &str, name: &str, input: Value) -> Value {
    part(
        "tool_call",
        json!({ "id": id, "name": name, "input": input.to_string(), "type": "function",
                "finished": true }),
    )
}

fn result(id: &str, content: &str, is_error: bool) -> Value {
    part(
        "tool_result",
        json!({ "tool_call_id": id, "name": "", "content": content, "metadata": "",
                "is_error": is_error }),
    )
}

fn new_db(path: &Path) -> Connection {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let c = Connection::open(path).expect("open");
    c.execute_batch(DDL).expect("ddl");
    c.pragma_update(None, "journal_mode", "wal").expect("wal");
    c
}

#[allow(clippy::too_many_arguments)]
fn session(
    c: &Connection,
    id: &str,
    parent: Option<&str>,
    title: &str,
    prompt: i64,
    completion: i64,
    cost: f64,
    at: i64,
) {
    c.execute(
        "INSERT INTO sessions (id, parent_session_id, title, prompt_tokens, completion_tokens, \
         cost, updated_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
        rusqlite::params![id, parent, title, prompt, completion, cost, at],
    )
    .expect("session");
}

fn message(c: &Connection, sid: &str, id: &str, role: &str, parts: &str, at: i64) {
    let model = (role == "assistant").then_some("claude-sonnet-4-5");
    c.execute(
        "INSERT INTO messages (id, session_id, role, parts, model, provider, created_at, \
         updated_at) VALUES (?1, ?2, ?3, ?4, ?5, 'anthropic', ?6, ?6)",
        rusqlite::params![id, sid, role, parts, model, at],
    )
    .expect("message");
}

fn msg(c: &Connection, sid: &str, id: &str, role: &str, parts: Vec<Value>, at: i64) {
    message(c, sid, id, role, &Value::Array(parts).to_string(), at);
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path();
    let alpha = h.join("work/alpha");
    let bravo = h.join("work/bravo");
    // The registry, and the global config beside it (provider keys: never read).
    let reg = json!({ "projects": [
        { "path": alpha.to_string_lossy(), "data_dir": alpha.join(".crush").to_string_lossy(),
          "last_accessed": "2026-01-01T10:00:00Z" },
        { "path": bravo.to_string_lossy(), "data_dir": "state",
          "last_accessed": "2026-01-01T11:00:00Z" },
    ]});
    put(h, ".local/share/crush/projects.json", reg.to_string());
    let key = json!({ "providers": { "openrouter": { "api_key": SECRET } } }).to_string();
    put(h, ".local/share/crush/crush.json", &key);
    put(h, "work/alpha/.crush/crush.json", &key);
    put(
        h,
        "work/alpha/.crush/.env",
        format!("OPENROUTER_API_KEY={SECRET}\n"),
    );

    let t = 1_767_000_000;
    let c = new_db(&alpha.join(".crush/crush.db"));
    // Cost 0.05: 0.03 its own calls, 0.02 the child's, added when the child finished.
    session(
        &c,
        ALPHA,
        None,
        "Alpha: rename the parser",
        1200,
        300,
        0.05,
        t,
    );
    session(
        &c,
        CHILD,
        Some(ALPHA),
        "Alpha child search",
        400,
        50,
        0.02,
        t + 3,
    );
    msg(
        &c,
        ALPHA,
        "msg-a1-1",
        "user",
        vec![text("Alpha prompt one"), finish("stop")],
        t,
    );
    msg(
        &c,
        ALPHA,
        "msg-a1-2",
        "assistant",
        vec![
            part(
                "reasoning",
                json!({ "thinking": "Alpha thinking aloud", "signature": "" }),
            ),
            text("Alpha reply one"),
            call(
                "call_view_1",
                "view",
                json!({ "file_path": "/src/parser.go" }),
            ),
            finish("tool_use"),
        ],
        t + 1,
    );
    msg(
        &c,
        ALPHA,
        "msg-a1-r1",
        "tool",
        vec![result("call_view_1", "Alpha view output line", false)],
        t + 2,
    );
    msg(
        &c,
        ALPHA,
        "msg-a1-3",
        "assistant",
        vec![
            call(
                "call_agent_1",
                "agent",
                json!({ "prompt": "find the callers" }),
            ),
            finish("tool_use"),
        ],
        t + 3,
    );
    msg(
        &c,
        CHILD,
        "msg-c-1",
        "user",
        vec![text("find the callers")],
        t + 3,
    );
    msg(
        &c,
        CHILD,
        "msg-c-2",
        "assistant",
        vec![
            call("call_grep_1", "grep", json!({ "pattern": "Parse" })),
            finish("tool_use"),
        ],
        t + 4,
    );
    msg(
        &c,
        CHILD,
        "msg-c-r1",
        "tool",
        vec![result("call_grep_1", "Alpha child grep output", false)],
        t + 5,
    );
    msg(
        &c,
        CHILD,
        "msg-c-3",
        "assistant",
        vec![text("Alpha child reply"), finish("end_turn")],
        t + 6,
    );
    msg(
        &c,
        ALPHA,
        "msg-a1-r2",
        "tool",
        vec![result("call_agent_1", "Alpha child reply", false)],
        t + 7,
    );
    msg(
        &c,
        ALPHA,
        "msg-a1-4",
        "assistant",
        vec![text("Alpha reply two"), finish("end_turn")],
        t + 8,
    );
    msg(
        &c,
        ALPHA,
        "msg-a1-5",
        "user",
        vec![part(
            "shell_command",
            json!({ "command": "ls alpha-dir", "output": "Alpha shell output", "exit_code": 0 }),
        )],
        t + 9,
    );
    // A row whose parts were cut mid-write: shown as stored, and counted.
    message(
        &c,
        ALPHA,
        "msg-a1-6",
        "assistant",
        r#"[{"type":"text","data":{"text":"Alpha cut reply"#,
        t + 10,
    );
    msg(
        &c,
        ALPHA,
        "msg-a1-7",
        "assistant",
        vec![text("Alpha summary of the work so far"), finish("end_turn")],
        t + 11,
    );
    c.execute(
        "UPDATE messages SET is_summary_message = 1 WHERE id = 'msg-a1-7'",
        [],
    )
    .expect("summary");
    drop(c);

    let c = new_db(&bravo.join("state/crush.db"));
    session(&c, BRAVO, None, "Bravo", 100, 20, 0.0, t + 100);
    msg(
        &c,
        BRAVO,
        "msg-b-1",
        "user",
        vec![text("Bravo prompt")],
        t + 100,
    );
    msg(
        &c,
        BRAVO,
        "msg-b-2",
        "assistant",
        vec![text("Bravo reply"), finish("end_turn")],
        t + 101,
    );
    drop(c);

    // Not in the registry: a project holding ATSF threads.
    std::fs::create_dir_all(h.join("work/charlie/.agent/threads")).expect("threads");
    let c = new_db(&h.join("work/charlie/.crush/crush.db"));
    session(&c, CHARLIE, None, "Charlie", 10, 2, 0.0, t + 200);
    msg(
        &c,
        CHARLIE,
        "msg-c3-1",
        "user",
        vec![text("Charlie prompt")],
        t + 200,
    );
    msg(
        &c,
        CHARLIE,
        "msg-c3-2",
        "assistant",
        vec![text("Charlie reply")],
        t + 201,
    );
    drop(c);

    // A git worktree of alpha, with its own `.crush`.
    let wt = h.join("work/alpha-wt");
    put(
        h,
        "work/alpha/.git/worktrees/alpha-wt/gitdir",
        format!("{}\n", wt.join(".git").display()),
    );
    put(
        h,
        "work/alpha-wt/.git",
        "gitdir: ../alpha/.git/worktrees/alpha-wt\n",
    );
    let c = new_db(&wt.join(".crush/crush.db"));
    session(&c, DELTA, None, "Delta", 0, 0, 0.0, t + 300);
    msg(
        &c,
        DELTA,
        "msg-d-1",
        "user",
        vec![text("Delta prompt in a worktree")],
        t + 300,
    );
    drop(c);

    let sessions = vec![
        Sess {
            dir: format!("crush/{ALPHA}"),
            lines: vec![
                "Alpha prompt one",
                "Alpha thinking aloud",
                "Alpha reply one",
                "Alpha reply two",
                "Alpha child reply",
                "Alpha cut reply",
                "Alpha summary of the work so far",
                "ls alpha-dir",
            ],
            outputs: vec![
                "Alpha view output line",
                "Alpha child grep output",
                "Alpha shell output",
            ],
            usage: (1200, 300, Some(0.03)),
        },
        Sess {
            dir: format!("crush/{BRAVO}"),
            lines: vec!["Bravo prompt", "Bravo reply"],
            outputs: vec![],
            usage: (100, 20, None),
        },
        Sess {
            dir: format!("crush/{CHARLIE}"),
            lines: vec!["Charlie prompt", "Charlie reply"],
            outputs: vec![],
            usage: (10, 2, None),
        },
        Sess {
            dir: format!("crush/{DELTA}"),
            lines: vec!["Delta prompt in a worktree"],
            outputs: vec![],
            usage: (0, 0, None),
        },
    ];
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-crush", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    assert_eq!(
        stores::entries(tree, "crush"),
        fx.sessions.len(),
        "top-level crush sessions"
    );
    for s in &fx.sessions {
        for line in s.lines.iter().chain(&s.outputs) {
            stores::assert_only_in(tree, line, "crush", &s.dir);
        }
        for out in &s.outputs {
            let o = Command::new("grep")
                .args(["-rlF", "-e", out, "."])
                .current_dir(tree.join(&s.dir))
                .output()
                .expect("grep");
            assert!(
                stdout(&o).lines().any(|p| p.contains("/tools/")),
                "'{out}' in no tools/ file of {}",
                s.dir
            );
        }
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
}

#[test]
fn usage_is_the_session_rows_and_cost_is_counted_once_with_the_child() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    for s in &fx.sessions {
        let m = meta(tree, &s.dir);
        let c = &m["cost"];
        let (i, o, usd) = s.usage;
        assert_eq!(
            (c["inputTokens"].as_u64(), c["outputTokens"].as_u64()),
            (Some(i), Some(o)),
            "{}: {c}",
            s.dir
        );
        if let Some(usd) = usd {
            stores::assert_usd(c, usd, &s.dir);
        }
    }
    let a = meta(tree, &format!("crush/{ALPHA}"));
    let all = &a["costWithSubagents"];
    assert_eq!(
        (all["inputTokens"].as_u64(), all["outputTokens"].as_u64()),
        (Some(1600), Some(350)),
        "{all}"
    );
    let total = all["totalUsd"].as_f64().unwrap_or(-1.0);
    assert!(
        (total - 0.05).abs() < 1e-9,
        "child cost counted twice or lost: {total}"
    );
}

#[test]
fn titles_cwd_models_children_and_broken_rows_come_from_the_database() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    let a = meta(tree, &format!("crush/{ALPHA}"));
    assert_eq!(a["title"], "Alpha: rename the parser");
    let cwd = fx.home.path().join("work/alpha");
    assert_eq!(a["cwd"], cwd.to_string_lossy().as_ref());
    assert_eq!(a["model"], "claude-sonnet-4-5");
    assert_eq!(a["createdAt"], "2025-12-29T09:20:00.000Z");
    assert_eq!(a["source"]["formatVersion"], "20260127000000");
    assert_eq!(
        a["subagents"][0]["toolCallId"], "call_agent_1",
        "{}",
        a["subagents"]
    );
    let warnings = a["warnings"].to_string();
    assert!(
        warnings.contains("1 messages could not be parsed: parts is not JSON"),
        "{warnings}"
    );
    let b = meta(tree, &format!("crush/{BRAVO}"));
    assert_eq!(
        b["cwd"],
        Value::Null,
        "a data_dir not named .crush names no project"
    );
    let transcript =
        std::fs::read_to_string(tree.join(format!("crush/{ALPHA}/transcript.md"))).expect("t");
    let summary = transcript
        .find("Alpha summary of the work so far")
        .expect("summary");
    assert!(
        transcript[..summary].to_lowercase().contains("compaction")
            || transcript[..summary].to_lowercase().contains("summary"),
        "no compaction marker before the summary"
    );
}

#[test]
fn secrets_and_config_beside_the_databases_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    assert_eq!(stores::entries(tree, "crush"), 4);
    stores::assert_nowhere(tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn a_store_given_by_hand_may_be_a_project_a_data_dir_or_a_database() {
    let fx = write();
    let h = fx.home.path();
    for given in [
        h.join("work/charlie"),
        h.join("work/charlie/.crush"),
        h.join("work/charlie/.crush/crush.db"),
    ] {
        let arg = format!("crush={}", given.display());
        let o = fx.home.sessfs(&["list", "--store", &arg]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(stdout(&o).contains(CHARLIE), "{arg}: {}", stdout(&o));
    }
}

#[test]
fn mounted_crush_greps_sizes_erofs_and_stores_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot_stable, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["crush"], 8, SECRET, &format!("crush/{ALPHA}"));
    });
}

/// Crush writes while the mount is up (WAL, a second connection open): a new message
/// shows within a second, without a remount.
#[test]
fn a_message_written_while_mounted_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("crush/{BRAVO}/transcript.md"));
    assert!(std::fs::read_to_string(&t)
        .expect("t")
        .contains("Bravo reply"));
    let c = Connection::open(fx.home.path().join("work/bravo/state/crush.db")).expect("open");
    msg(
        &c,
        BRAVO,
        "msg-b-3",
        "user",
        vec![text("Bravo written after the mount")],
        1_767_000_500,
    );
    stores::assert_within_a_second("new message", || {
        stores::file_contains(&t, "Bravo written after the mount")
    });
    drop(c);
}

/// The Crush store's glance (the registry, every database with its journals and the
/// directories they are in): with nothing changed a search lists no store; a message
/// written, a session made and a session deleted are each found by the next search.
#[test]
fn crush_changes_are_found_by_the_next_search() {
    use common::{age, logged_search};
    use std::collections::BTreeSet;
    const ONE: &str = "e5000000-0000-4000-8000-000000000001";
    const TWO: &str = "e5000000-0000-4000-8000-000000000002";
    const THREE: &str = "e5000000-0000-4000-8000-000000000003";
    let set =
        |ids: &[&str]| -> BTreeSet<String> { ids.iter().map(|id| format!("crush/{id}")).collect() };
    let home = Home::empty();
    let h = home.path();
    let echo = h.join("work/echo");
    let reg = json!({ "projects": [
        { "path": echo.to_string_lossy(), "data_dir": ".crush",
          "last_accessed": "2026-01-01T10:00:00Z" },
    ]});
    put(h, ".local/share/crush/projects.json", reg.to_string());
    let db = echo.join(".crush/crush.db");
    let t = 1_767_000_000;
    let c = new_db(&db);
    for (id, word) in [(ONE, "crushone"), (TWO, "crushtwo")] {
        session(&c, id, None, "Echo", 10, 5, 0.0, t);
        let prompt = format!("the {word} question");
        msg(&c, id, &format!("m-{word}"), "user", vec![text(&prompt)], t);
    }
    drop(c);
    // Closing the last connection removes the journals: every directory is aged after it.
    let aged = || {
        for d in [
            h.join(".local/share/crush"),
            echo.join(".crush"),
            echo.clone(),
        ] {
            age(&d, 3600);
        }
    };
    aged();
    assert_eq!(logged_search(&home, "crushone"), (set(&[ONE]), false));
    assert_eq!(logged_search(&home, "crushtwo"), (set(&[TWO]), true));
    // A message written to a session.
    let c = Connection::open(&db).expect("open");
    let answer = vec![text("an appendedcrush answer")];
    msg(&c, ONE, "m-append", "assistant", answer, t + 1);
    drop(c);
    aged();
    assert_eq!(logged_search(&home, "appendedcrush").0, set(&[ONE]));
    assert_eq!(logged_search(&home, "appendedcrush"), (set(&[ONE]), true));
    // A session made: a new row.
    let c = Connection::open(&db).expect("open");
    session(&c, THREE, None, "Echo", 10, 5, 0.0, t + 2);
    let prompt = vec![text("the crushthree question")];
    msg(&c, THREE, "m-crushthree", "user", prompt, t + 2);
    drop(c);
    aged();
    assert_eq!(logged_search(&home, "crushthree").0, set(&[THREE]));
    assert_eq!(logged_search(&home, "crushthree"), (set(&[THREE]), true));
    // A session deleted.
    let c = Connection::open(&db).expect("open");
    c.execute("DELETE FROM messages WHERE session_id = ?1", [TWO])
        .expect("delete");
    c.execute("DELETE FROM sessions WHERE id = ?1", [TWO])
        .expect("delete");
    drop(c);
    aged();
    assert_eq!(logged_search(&home, "crushtwo").0, BTreeSet::new());
    assert_eq!(logged_search(&home, "question"), (set(&[ONE, THREE]), true));
}

/// Crush names a session `New Session` when the TUI creates it and `Untitled Session` when
/// its title generation fails; neither is a title while a prompt can name the session.
#[test]
fn placeholder_titles_give_way_to_the_first_prompt() {
    let home = Home::empty();
    let h = home.path();
    let project = h.join("work/gamma");
    let reg = json!({ "projects": [
        { "path": project.to_string_lossy(), "data_dir": project.join(".crush").to_string_lossy(),
          "last_accessed": "2026-01-01T10:00:00Z" },
    ]});
    put(h, ".local/share/crush/projects.json", reg.to_string());
    let c = new_db(&project.join(".crush/crush.db"));
    let t = 1_767_000_000;
    let ids = [
        ("e5000000-0000-4000-8000-000000000005", "New Session"),
        ("e5000000-0000-4000-8000-000000000006", "Untitled Session"),
        ("e5000000-0000-4000-8000-000000000007", "New Session"),
        ("e5000000-0000-4000-8000-000000000008", "New Session plan"),
    ];
    for (id, title) in ids {
        session(&c, id, None, title, 0, 0, 0.0, t);
    }
    for (n, (id, _)) in ids.iter().enumerate().filter(|(n, _)| *n != 2) {
        msg(
            &c,
            id,
            &format!("msg-e-{n}"),
            "user",
            vec![
                text(&format!("Fix the flaky login test {n}\nplease")),
                finish("stop"),
            ],
            t,
        );
    }
    drop(c);
    let out = stores::render(&home, "sessfs-crush", &[]);
    let title = |id: &str| meta(&out.tree, &format!("crush/{id}"))["title"].clone();
    assert_eq!(title(ids[0].0), "Fix the flaky login test 0");
    assert_eq!(title(ids[1].0), "Fix the flaky login test 1");
    // No prompt to name it: the placeholder stays.
    assert_eq!(title(ids[2].0), "New Session");
    // A title the user or the model gave is kept, whatever it starts with.
    assert_eq!(title(ids[3].0), "New Session plan");
}
