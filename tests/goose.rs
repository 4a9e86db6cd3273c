//! Goose stores, written here the way Goose writes them: `sessions.db` from Goose's own DDL
//! (`fixtures/schema/goose-v13.sql`), messages as `Message` serializes them (`content` items
//! tagged by `type`, `metadata` with `userVisible`/`agentVisible`), and an older
//! `<id>.jsonl` file (a `SessionMetadata` line, then one message per line), rendered with
//! `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below ([`Sess`]), never from sessfs' parser.

mod common;

use common::stores::{self, meta, put, Rendered};
use common::{Home, Mount};
use rusqlite::Connection;
use serde_json::{json, Value};
use std::path::Path;

const DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/goose-v13.sql"
));

/// A string that looks like a credential: in Goose's config and secrets files, and in the
/// session columns sessfs never selects (`extension_data`, `user_recipe_values_json`).
const SECRET: &str = "sk-ant-api03-PLANTEDgooseSECRETdoNotRead000000";

const ALPHA: &str = "20260110_1";
const BRAVO: &str = "20260110_2";
const CHARLIE: &str = "20260111_1";
const DELTA: &str = "20250301_101500";

const SESSIONS: &str = ".local/share/goose/sessions";

/// What the writer put in one session, for the checks.
struct Sess {
    /// `goose/<id>`.
    dir: String,
    /// Lines that must be in this session's files and no other session's.
    lines: Vec<&'static str>,
    /// Tool outputs: must be under this session's `tools/`.
    outputs: Vec<&'static str>,
    /// Expected usage: input tokens, output tokens, USD (`None`: none recorded).
    usage: (u64, u64, Option<f64>),
}

struct Fixture {
    home: Home,
    sessions: Vec<Sess>,
}

fn text(t: &str) -> Value {
    json!({ "type": "text", "text": t })
}

fn request(id: &str, name: &str, args: Value) -> Value {
    json!({ "type": "toolRequest", "id": id,
            "toolCall": { "status": "success", "value": { "name": name, "arguments": args } } })
}

/// A `toolResponse` as `call_tool_result` serializes it: a `CallToolResult`.
fn response(id: &str, out: &str) -> Value {
    json!({ "type": "toolResponse", "id": id,
            "toolResult": { "status": "success", "value": {
                "content": [{ "type": "text", "text": out, "annotations": { "audience": ["assistant"] } }],
                "isError": false } } })
}

/// The older shape: the value is the list of content items.
fn old_response(id: &str, out: &str) -> Value {
    json!({ "type": "toolResponse", "id": id,
            "toolResult": { "status": "success", "value": [{ "type": "text", "text": out }] } })
}

fn vis(user: bool, agent: bool) -> Value {
    json!({ "userVisible": user, "agentVisible": agent })
}

fn new_db(path: &Path) -> Connection {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let c = Connection::open(path).expect("open");
    c.pragma_update(None, "journal_mode", "wal").expect("wal");
    c.execute_batch(DDL).expect("ddl");
    c
}

struct Row<'a> {
    id: &'a str,
    name: &'a str,
    kind: &'a str,
    cwd: &'a str,
    last: (i64, i64),
    acc: Option<(i64, i64, f64)>,
}

fn session(c: &Connection, r: Row<'_>) {
    let (acc_in, acc_out, cost) = match r.acc {
        Some((i, o, c)) => (Some(i), Some(o), Some(c)),
        None => (None, None, None),
    };
    c.execute(
        "INSERT INTO sessions (id, name, user_set_name, session_type, working_dir, created_at, \
         updated_at, extension_data, total_tokens, input_tokens, output_tokens, \
         accumulated_total_tokens, accumulated_input_tokens, accumulated_output_tokens, \
         accumulated_cost, user_recipe_values_json, provider_name, model_config_json, goose_mode) \
         VALUES (?1, ?2, FALSE, ?3, ?4, '2026-01-10 09:00:00', '2026-01-10 09:30:00', ?5, \
         ?6 + ?7, ?6, ?7, ?8 + ?9, ?8, ?9, ?10, ?11, 'anthropic', ?12, 'auto')",
        rusqlite::params![
            r.id,
            r.name,
            r.kind,
            r.cwd,
            json!({ "developer": { "env": { "ANTHROPIC_API_KEY": SECRET } } }).to_string(),
            r.last.0,
            r.last.1,
            acc_in,
            acc_out,
            cost,
            json!({ "token": SECRET }).to_string(),
            json!({ "model_name": "claude-sonnet-4-5", "context_limit": 200000 }).to_string(),
        ],
    )
    .expect("session");
}

/// One row as `add_message` inserts it.
fn message(c: &Connection, sid: &str, n: usize, role: &str, content: &str, meta: &Value, at: i64) {
    c.execute(
        "INSERT INTO messages (message_id, session_id, role, content_json, created_timestamp, \
         metadata_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        rusqlite::params![
            format!("msg_{sid}_{n}"),
            sid,
            role,
            content,
            at,
            meta.to_string()
        ],
    )
    .expect("message");
}

fn msg(c: &Connection, sid: &str, n: usize, role: &str, items: Vec<Value>, meta: Value, at: i64) {
    message(c, sid, n, role, &Value::Array(items).to_string(), &meta, at);
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path();
    put(
        h,
        ".config/goose/config.yaml",
        format!("GOOSE_PROVIDER: anthropic\nANTHROPIC_API_KEY: {SECRET}\n"),
    );
    put(
        h,
        ".config/goose/secrets.yaml",
        format!("ANTHROPIC_API_KEY: {SECRET}\n"),
    );
    let t = 1_768_035_600;
    let c = new_db(&h.join(SESSIONS).join("sessions.db"));
    session(
        &c,
        Row {
            id: ALPHA,
            name: "Alpha: fix the build",
            kind: "user",
            cwd: "/work/alpha",
            last: (900, 50),
            acc: Some((2400, 310, 0.0123)),
        },
    );
    let compacted = vis(true, false);
    msg(
        &c,
        ALPHA,
        1,
        "user",
        vec![text("Alpha prompt one")],
        compacted.clone(),
        t,
    );
    msg(
        &c,
        ALPHA,
        2,
        "assistant",
        vec![
            json!({ "type": "thinking", "thinking": "Alpha thinking aloud", "signature": "sig" }),
            text("Alpha reply one"),
            request(
                "toolu_1",
                "developer__shell",
                json!({ "command": "cargo build" }),
            ),
        ],
        compacted.clone(),
        t + 1,
    );
    msg(
        &c,
        ALPHA,
        3,
        "user",
        vec![response("toolu_1", "Alpha shell output line")],
        compacted.clone(),
        t + 2,
    );
    msg(
        &c,
        ALPHA,
        4,
        "assistant",
        vec![
            text("Alpha reply two"),
            request(
                "toolu_2",
                "developer__text_editor",
                json!({ "path": "/work/alpha/x.rs" }),
            ),
        ],
        compacted.clone(),
        t + 3,
    );
    msg(
        &c,
        ALPHA,
        5,
        "user",
        vec![old_response("toolu_2", "Alpha old-shape output")],
        compacted,
        t + 3,
    );
    // A row whose content was cut mid-write: shown as stored, and counted.
    message(
        &c,
        ALPHA,
        6,
        "assistant",
        r#"[{"type":"text","text":"Alpha cut reply"#,
        &vis(true, false),
        t + 4,
    );
    // The compaction: the summary and the continuation prompt only the agent sees, the
    // notice only the user sees.
    msg(
        &c,
        ALPHA,
        7,
        "user",
        vec![text("Alpha summary of the work so far")],
        vis(false, true),
        t + 5,
    );
    msg(
        &c,
        ALPHA,
        8,
        "assistant",
        vec![text("Alpha continuation prompt")],
        vis(false, true),
        t + 5,
    );
    msg(
        &c,
        ALPHA,
        9,
        "assistant",
        vec![
            json!({ "type": "systemNotification", "notificationType": "inlineMessage",
                     "msg": "Alpha conversation compacted notice" }),
        ],
        vis(true, false),
        t + 5,
    );
    msg(
        &c,
        ALPHA,
        10,
        "user",
        vec![text("Alpha prompt after compaction")],
        vis(true, true),
        t + 6,
    );
    msg(
        &c,
        ALPHA,
        11,
        "assistant",
        vec![text("Alpha final reply")],
        vis(true, true),
        t + 7,
    );

    // A subagent session: Goose records no parent for it. No accumulated counters: the
    // last call's are what there is.
    session(
        &c,
        Row {
            id: BRAVO,
            name: "Bravo subagent task",
            kind: "sub_agent",
            cwd: "/work/alpha",
            last: (100, 20),
            acc: None,
        },
    );
    msg(
        &c,
        BRAVO,
        1,
        "user",
        vec![text("Bravo prompt")],
        vis(true, true),
        t + 10,
    );
    msg(
        &c,
        BRAVO,
        2,
        "assistant",
        vec![text("Bravo reply")],
        vis(true, true),
        t + 11,
    );

    // A session Goose imported from its JSONL file: the file stays beside the database.
    session(
        &c,
        Row {
            id: CHARLIE,
            name: "Charlie imported",
            kind: "user",
            cwd: "/work/charlie",
            last: (10, 2),
            acc: Some((10, 2, 0.0)),
        },
    );
    msg(
        &c,
        CHARLIE,
        1,
        "user",
        vec![text("Charlie prompt")],
        vis(true, true),
        t + 20,
    );
    msg(
        &c,
        CHARLIE,
        2,
        "assistant",
        vec![text("Charlie reply")],
        vis(true, true),
        t + 21,
    );
    drop(c);
    let charlie_file = [
        json!({ "working_dir": "/work/charlie", "description": "Charlie imported",
                "message_count": 2, "input_tokens": 10, "output_tokens": 2 }),
        json!({ "role": "user", "created": t + 20, "content": [text("Charlie prompt")] }),
        json!({ "role": "assistant", "created": t + 21,
                "content": [text("Charlie file-only line")] }),
    ];
    put(
        h,
        &format!("{SESSIONS}/{CHARLIE}.jsonl"),
        jsonl(&charlie_file),
    );

    // A session from before the database: metadata first, then the messages; one line
    // that is not JSON.
    let delta = [
        json!({ "working_dir": "/work/delta", "description": "Delta legacy session",
                "schedule_id": null, "message_count": 4, "total_tokens": 540,
                "input_tokens": 500, "output_tokens": 40, "accumulated_total_tokens": 1300,
                "accumulated_input_tokens": 1200, "accumulated_output_tokens": 100 }),
        json!({ "role": "user", "created": 1_740_822_900, "content": [text("Delta prompt")] }),
        json!({ "role": "assistant", "created": 1_740_822_901, "content": [
            text("Delta reply one"),
            request("toolu_d1", "developer__shell", json!({ "command": "ls delta" })) ] }),
        json!({ "role": "user", "created": 1_740_822_902,
                "content": [old_response("toolu_d1", "Delta tool output")] }),
    ];
    let mut d = jsonl(&delta);
    d.push_str("{Delta broken line\n");
    d.push_str(&jsonl(&[
        json!({ "role": "assistant", "created": 1_740_822_903,
                                "content": [text("Delta reply two")] }),
    ]));
    put(h, &format!("{SESSIONS}/{DELTA}.jsonl"), d);

    let sessions = vec![
        Sess {
            dir: format!("goose/{ALPHA}"),
            lines: vec![
                "Alpha prompt one",
                "Alpha thinking aloud",
                "Alpha reply one",
                "Alpha reply two",
                "Alpha cut reply",
                "Alpha summary of the work so far",
                "Alpha continuation prompt",
                "Alpha conversation compacted notice",
                "Alpha prompt after compaction",
                "Alpha final reply",
                "cargo build",
            ],
            outputs: vec!["Alpha shell output line", "Alpha old-shape output"],
            usage: (2400, 310, Some(0.0123)),
        },
        Sess {
            dir: format!("goose/{BRAVO}"),
            lines: vec!["Bravo prompt", "Bravo reply"],
            outputs: vec![],
            usage: (100, 20, None),
        },
        Sess {
            dir: format!("goose/{CHARLIE}"),
            lines: vec!["Charlie prompt", "Charlie reply"],
            outputs: vec![],
            usage: (10, 2, None),
        },
        Sess {
            dir: format!("goose/{DELTA}"),
            lines: vec![
                "Delta prompt",
                "Delta reply one",
                "Delta reply two",
                "Delta broken line",
                "ls delta",
            ],
            outputs: vec!["Delta tool output"],
            usage: (1200, 100, None),
        },
    ];
    Fixture { home, sessions }
}

fn jsonl(lines: &[Value]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(
        &fx.home,
        "sessfs-goose",
        &["GOOSE_PATH_ROOT", "XDG_DATA_HOME"],
    )
}

fn check_tree(tree: &Path, fx: &Fixture) {
    assert_eq!(
        stores::entries(tree, "goose"),
        fx.sessions.len(),
        "goose sessions"
    );
    for s in &fx.sessions {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &s.outputs);
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
}

#[test]
fn usage_is_the_accumulated_counters_counted_once() {
    let fx = write();
    let out = render(&fx);
    for s in &fx.sessions {
        let m = meta(&out.tree, &s.dir);
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
}

#[test]
fn titles_cwd_models_compaction_and_the_imported_file_come_from_the_store() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    let a = meta(tree, &format!("goose/{ALPHA}"));
    assert_eq!(a["title"], "Alpha: fix the build");
    assert_eq!(a["cwd"], "/work/alpha");
    assert_eq!(a["model"], "claude-sonnet-4-5");
    assert_eq!(a["createdAt"], "2026-01-10T09:00:00.000Z");
    assert_eq!(a["source"]["formatVersion"], "13");
    let warnings = a["warnings"].to_string();
    assert!(
        warnings.contains("1 messages could not be parsed: content_json is not JSON"),
        "{warnings}"
    );
    let transcript =
        std::fs::read_to_string(tree.join(format!("goose/{ALPHA}/transcript.md"))).expect("t");
    let summary = transcript
        .find("Alpha summary of the work so far")
        .expect("summary");
    assert!(
        transcript[..summary].to_lowercase().contains("compaction"),
        "no compaction marker before the summary"
    );
    let b = meta(tree, &format!("goose/{BRAVO}"));
    assert!(b["tags"].to_string().contains("sub_agent"), "{}", b["tags"]);
    let c = meta(tree, &format!("goose/{CHARLIE}"));
    assert!(
        c["warnings"]
            .to_string()
            .contains(&format!("{CHARLIE}.jsonl")),
        "the imported file is not named: {}",
        c["warnings"]
    );
    let d = meta(tree, &format!("goose/{DELTA}"));
    assert_eq!(d["title"], "Delta legacy session");
    assert_eq!(d["cwd"], "/work/delta");
}

#[test]
fn secrets_beside_and_inside_the_database_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    assert_eq!(stores::entries(&out.tree, "goose"), 4);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &["GOOSE_PATH_ROOT", "XDG_DATA_HOME"]);
}

#[test]
fn goose_path_root_replaces_the_default_data_directory() {
    let fx = write();
    let root = fx.home.path().join("alt");
    put(
        &root,
        &format!("data/sessions/{DELTA}.jsonl"),
        std::fs::read(fx.home.path().join(SESSIONS).join(format!("{DELTA}.jsonl"))).expect("r"),
    );
    let o = fx
        .home
        .command(&["list"])
        .env("GOOSE_PATH_ROOT", &root)
        .output()
        .expect("list");
    let text = common::stdout(&o);
    assert!(text.contains(DELTA), "{text}");
    assert!(!text.contains(ALPHA), "{text}");
}

#[test]
fn mounted_goose_greps_sizes_erofs_and_stores_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot_stable, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["goose"], 8, SECRET, &format!("goose/{ALPHA}"));
    });
}

/// Goose writes while the mount is up (WAL, a second connection open): a new message
/// shows within a second, without a remount.
#[test]
fn a_message_written_while_mounted_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("goose/{BRAVO}/transcript.md"));
    assert!(std::fs::read_to_string(&t)
        .expect("t")
        .contains("Bravo reply"));
    let c = Connection::open(fx.home.path().join(SESSIONS).join("sessions.db")).expect("open");
    msg(
        &c,
        BRAVO,
        3,
        "user",
        vec![text("Bravo written after the mount")],
        vis(true, true),
        1_768_036_000,
    );
    stores::assert_within_a_second("new message", || {
        stores::file_contains(&t, "Bravo written after the mount")
    });
    drop(c);
}

/// The Goose store's glance (the sessions directory, `sessions.db` and its journals): with
/// nothing changed a search lists no store; a message written, a session made, a line
/// appended to a JSONL session and a session deleted are each found by the next search.
#[test]
fn goose_changes_are_found_by_the_next_search() {
    use common::{age, logged_search};
    use std::collections::BTreeSet;
    const ONE: &str = "20260201_1";
    const TWO: &str = "20260201_2";
    const THREE: &str = "20260201_3";
    const OLD: &str = "20250101_120000";
    let set =
        |ids: &[&str]| -> BTreeSet<String> { ids.iter().map(|id| format!("goose/{id}")).collect() };
    let home = Home::empty();
    let h = home.path();
    let dir = h.join(SESSIONS);
    let db = dir.join("sessions.db");
    let t = 1_769_936_400;
    let row = |id| Row {
        id,
        name: "glance",
        kind: "user",
        cwd: "/work/glance",
        last: (10, 5),
        acc: None,
    };
    let c = new_db(&db);
    for (id, word) in [(ONE, "gooseone"), (TWO, "goosetwo")] {
        session(&c, row(id));
        let prompt = vec![text(&format!("the {word} question"))];
        msg(&c, id, 0, "user", prompt, vis(true, true), t);
    }
    drop(c);
    let old = put(
        h,
        &format!("{SESSIONS}/{OLD}.jsonl"),
        jsonl(&[
            json!({ "working_dir": "/work/old", "description": "Old", "message_count": 1 }),
            json!({ "role": "user", "created": t, "content": [text("the gooseold question")] }),
        ]),
    );
    // Closing the last connection removes the journals: the directory is aged after it.
    let aged = || {
        for d in dir.ancestors().take(3) {
            age(d, 3600);
        }
    };
    aged();
    assert_eq!(logged_search(&home, "gooseone"), (set(&[ONE]), false));
    assert_eq!(logged_search(&home, "goosetwo"), (set(&[TWO]), true));
    // A message written to a session.
    let c = Connection::open(&db).expect("open");
    let answer = vec![text("an appendedgoose answer")];
    msg(&c, ONE, 1, "assistant", answer, vis(true, true), t + 1);
    drop(c);
    aged();
    assert_eq!(logged_search(&home, "appendedgoose").0, set(&[ONE]));
    assert_eq!(logged_search(&home, "appendedgoose"), (set(&[ONE]), true));
    // A session made: a new row.
    let c = Connection::open(&db).expect("open");
    session(&c, row(THREE));
    let prompt = vec![text("the goosethree question")];
    msg(&c, THREE, 0, "user", prompt, vis(true, true), t + 2);
    drop(c);
    aged();
    assert_eq!(logged_search(&home, "goosethree").0, set(&[THREE]));
    assert_eq!(logged_search(&home, "goosethree"), (set(&[THREE]), true));
    // A line appended to the JSONL session.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&old)
        .expect("open");
    let line = json!({ "role": "assistant", "created": t + 3,
                       "content": [text("an appendedold answer")] });
    std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).expect("append");
    drop(f);
    assert_eq!(logged_search(&home, "appendedold").0, set(&[OLD]));
    assert_eq!(logged_search(&home, "appendedold"), (set(&[OLD]), true));
    // A session deleted.
    let c = Connection::open(&db).expect("open");
    c.execute("DELETE FROM messages WHERE session_id = ?1", [TWO])
        .expect("delete");
    c.execute("DELETE FROM sessions WHERE id = ?1", [TWO])
        .expect("delete");
    drop(c);
    aged();
    assert_eq!(logged_search(&home, "goosetwo").0, BTreeSet::new());
    assert_eq!(
        logged_search(&home, "question"),
        (set(&[ONE, THREE, OLD]), true)
    );
}

/// The legacy file of a session Goose imported, removed or put back alone (the database
/// untouched), shows through the mount within a second: `meta.json` names it while it is
/// there.
#[test]
fn an_imported_legacy_file_removed_alone_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let meta = m.path().join(format!("goose/{CHARLIE}/meta.json"));
    let named = format!("{CHARLIE}.jsonl");
    assert!(stores::file_contains(&meta, &named));
    let file = fx.home.path().join(SESSIONS).join(&named);
    let bytes = std::fs::read(&file).expect("read");
    std::fs::remove_file(&file).expect("rm");
    stores::assert_within_a_second("the legacy file gone", || {
        std::fs::read_to_string(&meta).is_ok_and(|t| !t.contains(&named))
    });
    std::fs::write(&file, bytes).expect("put back");
    stores::assert_within_a_second("the legacy file back", || {
        stores::file_contains(&meta, &named)
    });
}
