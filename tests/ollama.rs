//! The Ollama app's `db.sqlite`, built here from the app's own DDL
//! (`fixtures/schema/ollama-app-18.sql`, from ollama/ollama `app/store/database.go`, and for a
//! database of the first released schema `ollama-app-2.sql`, from `app/store/schema.sql`) in
//! WAL mode with foreign keys on, as the app opens it, with rows written the way the app's
//! `saveChat`, `appendMessage` and `updateLastMessage` write them (times as mattn/go-sqlite3
//! binds a Go `time.Time`); rendered with `sessfs render` and mounted once.
//!
//! Every expected value comes from the rows written below, never from sessfs' parser.

mod common;

use chrono::{DateTime, FixedOffset};
use common::stores::{self, messages, meta, put, shape, shapes, Rendered};
use common::{stdout, Home, Mount};
use rusqlite::{params, Connection};
use serde_json::json;
use std::path::Path;

const DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/ollama-app-18.sql"
));
const DDL_V2: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/ollama-app-2.sql"
));

/// Planted in the `settings` and `users` rows, the server's key pair, `server.json`, the
/// legacy `config.json` and the CLI's prompt history beside the database.
const SECRET: &str = "PLANTED-ollama-secret-do-not-read-0000000000";
/// Written into attachment bytes and `browser_state`, which are never shown.
const BYTES: &str = "ATTACHMENT-BYTES-NEVER-SHOWN";
const BROWSER: &str = "BROWSER-STATE-NEVER-SHOWN";
const DB: &str = ".ollama/db.sqlite";
/// 2026-05-28T20:26:40Z.
const T0: i64 = 1_780_000_000;

const A: &str = "0197f1a2-3b4c-7d5e-8f60-a1b2c3d4e5f6";
const B: &str = "0197f1a2-9c8b-7a69-8584-b1b2c3d4e5f6";
const C: &str = "0197f1a3-0000-7111-8222-c1c2c3d4e5f6";

/// A `time.Time` as mattn/go-sqlite3 binds it: `2006-01-02 15:04:05.999999999-07:00` (the
/// fraction without trailing zeros), in the writer's zone `hours` east of UTC.
fn go_time(secs: i64, nanos: u32, hours: i32) -> String {
    let zone = FixedOffset::east_opt(hours * 3600).expect("zone");
    let t = DateTime::from_timestamp(secs, nanos)
        .expect("time")
        .with_timezone(&zone);
    let frac = format!("{nanos:09}");
    let frac = frac.trim_end_matches('0');
    let frac = if frac.is_empty() {
        String::new()
    } else {
        format!(".{frac}")
    };
    format!("{}{frac}{}", t.format("%Y-%m-%d %H:%M:%S"), t.format("%:z"))
}

/// One `store.Message` as the app holds it before saving.
#[derive(Clone, Default)]
struct Msg {
    role: &'static str,
    content: String,
    thinking: String,
    model: Option<&'static str>,
    created: String,
    updated: String,
    thinking_start: Option<String>,
    thinking_end: Option<String>,
    tool_result: Option<String>,
    /// `(function name, arguments JSON text)`, as `ToolCall.Function` is saved.
    calls: Vec<(&'static str, String)>,
    /// `(filename, data)`.
    files: Vec<(&'static str, Vec<u8>)>,
}

fn msg(role: &'static str, content: &str, at: String) -> Msg {
    Msg {
        role,
        content: content.to_string(),
        created: at.clone(),
        updated: at,
        ..Msg::default()
    }
}

/// `insertMessage` (with its attachments) and the tool calls `saveChat`/`appendMessage`
/// insert after it; the new row's id.
fn insert_message(c: &Connection, chat: &str, m: &Msg) -> i64 {
    c.execute(
        "INSERT INTO messages (chat_id, role, content, thinking, stream, model_name, created_at, updated_at, thinking_time_start, thinking_time_end, tool_result)
         VALUES (?1, ?2, ?3, ?4, 0, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            chat,
            m.role,
            m.content,
            m.thinking,
            m.model,
            m.created,
            m.updated,
            m.thinking_start,
            m.thinking_end,
            m.tool_result
        ],
    )
    .expect("message");
    let id = c.last_insert_rowid();
    for (name, data) in &m.files {
        c.execute(
            "INSERT INTO attachments (message_id, filename, data) VALUES (?1, ?2, ?3)",
            params![id, name, data],
        )
        .expect("attachment");
    }
    for (name, args) in &m.calls {
        c.execute(
            "INSERT INTO tool_calls (message_id, type, function_name, function_arguments, function_result)
             VALUES (?1, 'function', ?2, ?3, NULL)",
            params![id, name, args],
        )
        .expect("tool call");
    }
    id
}

/// `saveChat`: the chat upserted (its `created_at` kept, `browser_state` kept unless given),
/// its messages deleted and inserted again, in one transaction. The new message ids.
fn save_chat(
    c: &mut Connection,
    id: &str,
    title: &str,
    created: &str,
    browser: Option<&str>,
    msgs: &[Msg],
) -> Vec<i64> {
    let tx = c.transaction().expect("tx");
    tx.execute(
        "INSERT INTO chats (id, title, created_at, browser_state) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(id) DO UPDATE SET title = excluded.title,
           browser_state = COALESCE(excluded.browser_state, chats.browser_state)",
        params![id, title, created, browser],
    )
    .expect("chat");
    tx.execute("DELETE FROM messages WHERE chat_id = ?1", [id])
        .expect("delete");
    let ids = msgs.iter().map(|m| insert_message(&tx, id, m)).collect();
    tx.commit().expect("commit");
    ids
}

/// `updateLastMessage`: the chat's last row rewritten in place, its attachments and calls
/// replaced.
fn update_last_message(c: &Connection, chat: &str, m: &Msg) {
    let id: i64 = c
        .query_row(
            "SELECT MAX(id) FROM messages WHERE chat_id = ?1",
            [chat],
            |r| r.get(0),
        )
        .expect("last");
    c.execute(
        "UPDATE messages SET content = ?1, thinking = ?2, model_name = ?3, updated_at = ?4,
         thinking_time_start = ?5, thinking_time_end = ?6, tool_result = ?7 WHERE id = ?8",
        params![
            m.content,
            m.thinking,
            m.model,
            m.updated,
            m.thinking_start,
            m.thinking_end,
            m.tool_result,
            id
        ],
    )
    .expect("update");
    c.execute("DELETE FROM attachments WHERE message_id = ?1", [id])
        .expect("files");
    c.execute("DELETE FROM tool_calls WHERE message_id = ?1", [id])
        .expect("calls");
}

fn create(path: &Path, ddl: &str) -> Connection {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    let c = Connection::open(path).expect("db");
    c.pragma_update(None, "journal_mode", "WAL").expect("wal");
    c.pragma_update(None, "foreign_keys", "ON").expect("fk");
    c.execute_batch(ddl).expect("ddl");
    c
}

/// A made-up file of `n` bytes that holds [`BYTES`].
fn bytes(n: usize) -> Vec<u8> {
    let mut v = BYTES.as_bytes().to_vec();
    v.resize(n, 0x2a);
    v
}

struct Fixture {
    home: Home,
    /// Alpha's message ids after its rename, and Bravo's.
    a: Vec<i64>,
    b: Vec<i64>,
    alpha: Vec<Msg>,
}

fn alpha_messages() -> Vec<Msg> {
    let at = |s: i64| go_time(T0 + s, 0, 2);
    let mut prompt = msg("user", "Alpha prompt: what should I pack for Oslo?", at(5));
    prompt.files = vec![("itinerary.pdf", bytes(2048)), ("photo.png", bytes(1500))];
    let mut think = msg("assistant", "", at(6));
    think.thinking = "Alpha thinking: look up the forecast".into();
    think.model = Some("gpt-oss:20b");
    think.thinking_start = Some(go_time(T0 + 6, 250_000_000, 2));
    think.thinking_end = Some(go_time(T0 + 8, 0, 2));
    think.updated = at(9);
    think.calls = vec![(
        "web_search",
        r#"{"max_results":3,"query":"Oslo weather next week"}"#.into(),
    )];
    let mut result = msg("tool", "Alpha search output: rain all week, 9 C", at(10));
    result.tool_result = Some(r#"{"results":[{"title":"Oslo","content":"rain"}]}"#.into());
    let mut reply = msg(
        "assistant",
        "Alpha reply: pack a raincoat and boots.",
        at(12),
    );
    reply.model = Some("gpt-oss:20b");
    reply.updated = at(20);
    let second = msg("user", "Alpha second prompt: and for the evenings?", at(60));
    let mut reply2 = msg("assistant", "Alpha second reply: a warm sweater.", at(61));
    reply2.thinking = "Alpha second thinking: evenings are cold".into();
    reply2.model = Some("gpt-oss:20b");
    reply2.updated = at(70);
    vec![prompt, think, result, reply, second, reply2]
}

fn bravo_messages() -> Vec<Msg> {
    let at = |s: i64| go_time(T0 + 1000 + s, 0, -5);
    let prompt = msg("user", "Bravo prompt: what changed in the release?", at(0));
    // The reply the app makes for calls that come before any text (`web_fetch`/`web_search`).
    let mut calls = msg("assistant", "", at(2));
    calls.model = Some("qwen3:8b");
    calls.calls = vec![
        (
            "web_fetch",
            r#"{"url":"https://example.com/changelog"}"#.into(),
        ),
        ("web_search", r#"{"query":"bravo release notes"}"#.into()),
    ];
    // A failed tool: `Error: ...`, no tool_result.
    let failed = msg("tool", "Error: bravo fetch failed: 404 Not Found", at(3));
    let mut found = msg("tool", "Bravo search output: v2 adds dark mode", at(4));
    found.tool_result = Some(r#""v2 adds dark mode""#.into());
    // A result whose call the app did not save (no text came before it); no content, only
    // the structured result.
    let mut later = msg("tool", "", at(5));
    later.tool_result = Some(r#"{"later":"Bravo later output"}"#.into());
    let mut reply = msg("assistant", "Bravo reply: dark mode.", at(6));
    reply.model = Some("qwen3:8b");
    let odd = msg("robot", "Bravo odd row", at(7));
    let mut cut = msg("assistant", "Bravo cut call", at(8));
    cut.model = Some("qwen3:8b");
    cut.calls = vec![("web_search", r#"{"query": "cut"#.into())];
    vec![prompt, calls, failed, found, later, reply, odd, cut]
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut c = create(&h.join(DB), DDL);
    c.execute(
        "UPDATE settings SET device_id = ?1, remote = ?1, working_dir = ?1",
        [SECRET],
    )
    .expect("settings");
    c.execute(
        "INSERT INTO users (name, email, plan, cached_at) VALUES (?1, ?1, 'pro', ?2)",
        params![SECRET, go_time(T0, 0, 0)],
    )
    .expect("user");

    // --- A: attachments, thinking, a web search and its result, two turns; renamed at the
    // end (`renameChat` saves the chat again, and its messages get new ids).
    let alpha = alpha_messages();
    let a_created = go_time(T0, 123_456_789, 2);
    save_chat(&mut c, A, "", &a_created, Some(BROWSER), &alpha);

    // --- B: untitled; two calls before any text, a failed one, a result with no call left,
    // a row of a role the app never writes, arguments cut off.
    let b = save_chat(
        &mut c,
        B,
        "",
        &go_time(T0 + 1000, 0, -5),
        None,
        &bravo_messages(),
    );

    // --- C: the reply row the app saves before pulling a model, left empty (the pull
    // failed).
    let mut empty = msg("assistant", "", go_time(T0 + 2001, 0, 0));
    empty.model = Some("llama3.2");
    save_chat(
        &mut c,
        C,
        "",
        &go_time(T0 + 2000, 0, 0),
        None,
        &[
            msg(
                "user",
                "Charlie prompt: hello llama",
                go_time(T0 + 2000, 0, 0),
            ),
            empty,
        ],
    );

    let a = save_chat(
        &mut c,
        A,
        "Alpha: packing for Oslo",
        &a_created,
        None,
        &alpha,
    );
    drop(c);

    put(
        &h,
        ".ollama/id_ed25519",
        format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n"),
    );
    put(
        &h,
        ".ollama/id_ed25519.pub",
        format!("ssh-ed25519 {SECRET}\n"),
    );
    put(&h, ".ollama/history", format!("what is {SECRET}\n"));
    put(
        &h,
        ".ollama/server.json",
        format!(r#"{{"token":"{SECRET}"}}"#),
    );
    put(&h, ".ollama/config.json", format!(r#"{{"id":"{SECRET}"}}"#));
    put(&h, &format!(".ollama/cache/images/{A}/photo.png"), SECRET);
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, a, b, alpha }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-ollama", &[])
}

fn check_tree(tree: &Path) {
    stores::assert_session_holds(
        tree,
        &format!("ollama/{A}"),
        &[
            "Alpha prompt: what should I pack for Oslo?",
            "Alpha thinking: look up the forecast",
            "Alpha reply: pack a raincoat and boots.",
            "Alpha second reply: a warm sweater.",
        ],
        &["Alpha search output: rain all week, 9 C"],
    );
    stores::assert_session_holds(
        tree,
        &format!("ollama/{B}"),
        &[
            "Bravo prompt: what changed in the release?",
            "Bravo reply: dark mode.",
        ],
        &[
            "Error: bravo fetch failed: 404 Not Found",
            "Bravo search output: v2 adds dark mode",
        ],
    );
    stores::assert_session_holds(
        tree,
        &format!("ollama/{C}"),
        &["Charlie prompt: hello llama"],
        &[] as &[&str],
    );
}

#[test]
fn every_chat_shows_its_prompts_replies_thinking_and_attachments_in_order() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree);
    assert_eq!(stores::entries(&out.tree, "ollama"), 3);
    let m = messages(&out.tree, &format!("ollama/{A}"));
    assert_eq!(
        shapes(&m),
        [
            shape(
                "user",
                "",
                "Alpha prompt: what should I pack for Oslo?\n\n\
                 [attachment: application/pdf, 2.0 KB] itinerary.pdf\n\n\
                 [image: image/png, 1.5 KB] photo.png"
            ),
            shape("assistant", "", ""),
            shape("tool", "", ""),
            shape("assistant", "", "Alpha reply: pack a raincoat and boots."),
            shape("user", "", "Alpha second prompt: and for the evenings?"),
            shape("assistant", "", "Alpha second reply: a warm sweater."),
        ]
    );
    assert_eq!(m[1]["thinking"], "Alpha thinking: look up the forecast");
    assert_eq!(m[5]["thinking"], "Alpha second thinking: evenings are cold");
    assert_eq!(m[3]["model"], "gpt-oss:20b");
    assert!(m[0]["model"].is_null() && m[2]["model"].is_null());
    assert_eq!(m[0]["timestamp"], "2026-05-28T20:26:45.000Z");
    assert_eq!(m[5]["timestamp"], "2026-05-28T20:27:41.000Z");
    let t = stores::transcript(&out.tree, &format!("ollama/{A}"));
    assert!(t.contains("<summary>Thinking</summary>"), "{t}");
}

#[test]
fn tool_results_pair_with_the_calls_before_them_in_order() {
    let fx = write();
    let out = render(&fx);
    let a = messages(&out.tree, &format!("ollama/{A}"));
    let call = format!("{}.1", fx.a[1]);
    assert_eq!(
        (
            &a[1]["toolCalls"][0]["toolCallId"],
            &a[1]["toolCalls"][0]["toolName"],
            &a[1]["toolCalls"][0]["input"]
        ),
        (
            &json!(call),
            &json!("web_search"),
            &json!({"max_results": 3, "query": "Oslo weather next week"})
        )
    );
    assert_eq!(
        (
            &a[2]["toolResult"]["toolCallId"],
            &a[2]["toolResult"]["toolName"],
            &a[2]["toolResult"]["output"],
            &a[2]["toolResult"]["isError"]
        ),
        (
            &json!(call),
            &json!("web_search"),
            &json!("Alpha search output: rain all week, 9 C"),
            &json!(false)
        )
    );

    let b = messages(&out.tree, &format!("ollama/{B}"));
    assert_eq!(
        shapes(&b),
        [
            shape("user", "", "Bravo prompt: what changed in the release?"),
            shape("assistant", "", ""),
            shape("tool", "", ""),
            shape("tool", "", ""),
            shape("tool", "", ""),
            shape("assistant", "", "Bravo reply: dark mode."),
            shape("system", "context", "Bravo odd row"),
            shape("assistant", "", "Bravo cut call"),
        ]
    );
    let (fetch, search) = (format!("{}.1", fx.b[1]), format!("{}.2", fx.b[1]));
    let result = |i: usize| {
        let r = &b[i]["toolResult"];
        (
            r["toolCallId"].as_str().unwrap_or("?").to_string(),
            r["toolName"].as_str().unwrap_or("?").to_string(),
            r["output"].as_str().unwrap_or("?").to_string(),
            r["isError"].as_bool(),
        )
    };
    assert_eq!(
        result(2),
        (
            fetch,
            "web_fetch".into(),
            "Error: bravo fetch failed: 404 Not Found".into(),
            Some(true)
        )
    );
    assert_eq!(
        result(3),
        (
            search,
            "web_search".into(),
            "Bravo search output: v2 adds dark mode".into(),
            Some(false)
        )
    );
    // No call left to answer: named after the last call, as the app names it.
    assert_eq!(
        result(4),
        (
            String::new(),
            "web_search".into(),
            r#"{"later":"Bravo later output"}"#.into(),
            Some(false)
        )
    );
    // Arguments that are not JSON are kept as written.
    assert_eq!(b[7]["toolCalls"][0]["input"], r#"{"query": "cut"#);
}

#[test]
fn title_times_and_models_as_the_app_keeps_them() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("ollama/{A}"));
    assert_eq!(a["title"], "Alpha: packing for Oslo");
    assert_eq!(a["sessionId"], A);
    assert_eq!(a["unifiedId"], format!("ollama:{A}"));
    assert_eq!(a["createdAt"], "2026-05-28T20:26:40.123Z");
    assert_eq!(a["updatedAt"], "2026-05-28T20:27:50.000Z");
    assert_eq!(a["model"], "gpt-oss:20b");
    assert!(a["cwd"].is_null(), "{a}");
    let b = meta(&out.tree, &format!("ollama/{B}"));
    assert_eq!(b["title"], "Bravo prompt: what changed in the release?");
    // Written at -05:00: 15:43:20 there.
    assert_eq!(b["createdAt"], "2026-05-28T20:43:20.000Z");
    assert_eq!(b["model"], "qwen3:8b");
    // The empty reply is left out; its model is still the chat's.
    let c = meta(&out.tree, &format!("ollama/{C}"));
    assert_eq!(c["model"], "llama3.2");
    assert_eq!(c["messageCount"], 1);
    assert_eq!(c["title"], "Charlie prompt: hello llama");
}

#[test]
fn the_app_records_no_usage_so_the_cost_is_unknown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_cost(&out.tree, &format!("ollama/{A}"), stores::NOT_RECORDED);
    stores::assert_cost(&out.tree, &format!("ollama/{B}"), stores::NOT_RECORDED);
}

#[test]
fn an_unknown_role_and_cut_arguments_cost_a_warning_each() {
    let fx = write();
    let out = render(&fx);
    let w = stores::warnings(&out.tree, &format!("ollama/{B}"));
    assert!(w.contains("unknown role"), "{w}");
    assert!(w.contains("tool call arguments are not JSON"), "{w}");
    assert_eq!(stores::warnings(&out.tree, &format!("ollama/{A}")), "[]");
    assert_eq!(stores::warnings(&out.tree, &format!("ollama/{C}")), "[]");
}

/// A database an app with the first released schema wrote and no newer app has opened: no
/// attachments table, no `tool_result`; a call's result kept on its `tool_calls` row.
#[test]
fn a_database_of_the_first_released_schema_reads_as_it_is() {
    let home = Home::empty();
    let c = create(&home.path().join(DB), DDL_V2);
    let at = |s: i64| go_time(T0 + s, 0, 1);
    c.execute(
        "INSERT INTO chats (id, title, created_at) VALUES ('delta', 'Delta chat', ?1)",
        [at(0)],
    )
    .expect("chat");
    let rows: [(&str, &str, Option<&str>); 3] = [
        ("user", "Delta prompt: what time is it?", None),
        ("assistant", "Delta reply: checking.", Some("llama3.1")),
        ("tool", "Delta tool row", None),
    ];
    let mut ids = Vec::new();
    for (i, (role, content, model)) in rows.iter().enumerate() {
        c.execute(
            "INSERT INTO messages (chat_id, role, content, thinking, stream, model_name, created_at, updated_at)
             VALUES ('delta', ?1, ?2, '', 0, ?3, ?4, ?4)",
            params![role, content, model, at(i as i64 + 1)],
        )
        .expect("message");
        ids.push(c.last_insert_rowid());
    }
    c.execute(
        "INSERT INTO tool_calls (message_id, type, function_name, function_arguments, function_result)
         VALUES (?1, 'function', 'get_time', '{}', '\"Delta result: 10:00\"')",
        [ids[1]],
    )
    .expect("call");
    drop(c);
    let out = stores::render(&home, "sessfs-ollama", &[]);
    let m = messages(&out.tree, "ollama/delta");
    assert_eq!(
        shapes(&m),
        [
            shape("user", "", "Delta prompt: what time is it?"),
            shape("assistant", "", "Delta reply: checking."),
            shape("tool", "", ""),
        ]
    );
    assert_eq!(m[1]["toolCalls"][0]["output"], "Delta result: 10:00");
    assert_eq!(m[2]["toolResult"]["output"], "Delta tool row");
    assert_eq!(m[2]["toolResult"]["toolName"], "get_time");
    assert_eq!(meta(&out.tree, "ollama/delta")["warnings"], json!([]));
}

/// A file in the app's macOS place that is no database costs only itself: doctor names it,
/// and the chats of the real database still load.
#[test]
fn a_garbage_database_beside_a_good_one_hides_nothing() {
    let fx = write();
    put(
        fx.home.path(),
        "Library/Application Support/Ollama/db.sqlite",
        "SQLite format 3\0 torn garbage, not a database",
    );
    let out = render(&fx);
    check_tree(&out.tree);
    assert_eq!(stores::entries(&out.tree, "ollama"), 3);
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(
        text.contains("problem: ")
            && text.contains("Library/Application Support/Ollama/db.sqlite: not a SQLite database"),
        "{text}"
    );
}

/// The app run with `-dev` keeps its chats at `$OLLAMA_APP_DB_PATH`.
#[test]
fn the_dev_database_path_is_read_too() {
    let fx = write();
    let moved = fx.home.path().join("dev/chats.sqlite");
    std::fs::create_dir_all(moved.parent().expect("parent")).expect("dir");
    std::fs::rename(fx.home.path().join(DB), &moved).expect("move");
    for j in ["-wal", "-shm"] {
        let from = fx.home.path().join(format!("{DB}{j}"));
        if from.exists() {
            std::fs::rename(&from, format!("{}{j}", moved.display())).expect("move journal");
        }
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let tree = tmp.path().join("tree");
    let o = fx
        .home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("OLLAMA_APP_DB_PATH", &moved)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(stores::entries(&tree, "ollama"), 3);
    check_tree(&tree);
    let a = meta(&tree, &format!("ollama/{A}"));
    assert_eq!(a["source"]["paths"], json!([moved.display().to_string()]));
}

#[test]
fn keys_history_settings_users_and_bytes_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    for text in [SECRET, BYTES, BROWSER] {
        stores::assert_nowhere(&out.tree, text);
    }
    stores::assert_list_hides(&fx.home, SECRET, &[]);
    // The CLI's prompt history is no session.
    assert_eq!(stores::entries(&out.tree, "ollama"), 3);
}

#[test]
fn doctor_names_ollama_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 3 sessions", "ollama")),
        "{text}"
    );
    assert!(text.contains(".ollama/db.sqlite"), "{text}");
}

#[test]
fn mounted_database_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot_stable, |m| {
        check_tree(m.path());
        stores::assert_mount_read_only(m, &["ollama"], 12, SECRET, &format!("ollama/{A}"));
        stores::assert_nowhere(m.path(), BYTES);
    });
}

/// A turn as the app saves it while mounted: the prompt with the whole chat saved again,
/// an empty reply appended, then streamed into in place token by token; and a new chat. Each shows within
/// a second.
#[test]
fn a_streamed_reply_and_a_new_chat_show_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("ollama/{A}/transcript.md"));
    assert!(stores::file_contains(&t, "Alpha second reply"));
    let mut c = Connection::open(fx.home.path().join(DB)).expect("db");
    c.pragma_update(None, "foreign_keys", "ON").expect("fk");
    let at = |s: i64| go_time(T0 + s, 0, 2);
    let mut all = fx.alpha.clone();
    all.push(msg("user", "Alpha fresh prompt after the mount", at(500)));
    save_chat(
        &mut c,
        A,
        "Alpha: packing for Oslo",
        &go_time(T0, 123_456_789, 2),
        None,
        &all,
    );
    stores::assert_within_a_second("prompt", || {
        stores::file_contains(&t, "Alpha fresh prompt after the mount")
    });
    let mut reply = msg("assistant", "", at(501));
    reply.model = Some("gpt-oss:20b");
    insert_message(&c, A, &reply);
    reply.content = "Alpha fresh reply,".into();
    reply.updated = at(502);
    update_last_message(&c, A, &reply);
    stores::assert_within_a_second("first tokens", || {
        stores::file_contains(&t, "Alpha fresh reply,")
    });
    // Only the row's content and update time change as the reply streams on.
    reply.content.push_str(" streamed on");
    reply.updated = at(503);
    update_last_message(&c, A, &reply);
    stores::assert_within_a_second("streamed reply", || {
        stores::file_contains(&t, "Alpha fresh reply, streamed on")
    });
    let n = "0197f1a4-1111-7222-8333-d1d2d3d4e5f6";
    save_chat(
        &mut c,
        n,
        "",
        &at(600),
        None,
        &[msg("user", "Echo prompt in a new chat", at(600))],
    );
    let t = m.path().join(format!("ollama/{n}/transcript.md"));
    stores::assert_within_a_second("new chat", || {
        stores::file_contains(&t, "Echo prompt in a new chat")
    });
}

/// The bundled sample (`fixtures/home/.ollama/db.sqlite`, written by `scripts/make-samples`):
/// its lines in its two chats, no warning. The lines are the sample's own text, copied from
/// the rows the script writes.
#[test]
fn bundled_sample_shows_both_chats() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::tempdir().expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(stores::entries(&tree, "ollama"), 2);
    let herbs = "ollama/0196a0f2-6c10-7e3a-9b1d-5f2c8e4a7d01";
    stores::assert_session_holds(
        &tree,
        herbs,
        &[
            "Which herbs will grow on this balcony? It faces north.",
            "[image: image/png, 2.4 KB] balcony.png",
            "I should check what grows in partial shade.",
            "Give it a pot of its own.",
        ],
        &["Basil and rosemary want six hours of sun."],
    );
    let butter = "ollama/0196a0f9-02d4-7b6e-8c35-1a9e0d6f2b47";
    stores::assert_session_holds(
        &tree,
        butter,
        &["200 g of butter is about 0.88 US cups"],
        &[] as &[&str],
    );
    for dir in [herbs, butter] {
        assert_eq!(meta(&tree, dir)["warnings"], json!([]), "{dir}");
    }
    assert_eq!(meta(&tree, herbs)["title"], "Herb garden on a balcony");
    assert_eq!(
        meta(&tree, butter)["title"],
        "Turn 200 g of butter into cups."
    );
}
