//! oterm's `store.db`, built here from oterm's own DDL (`fixtures/schema/oterm-0.19.sql` and,
//! for a database from before the 0.15.0 upgrade, `oterm-0.14.sql`, both from ggozad/oterm
//! `src/oterm/store/store.py`) with rows written the way `Store.save_chat` and
//! `Store.save_message` write them (`json.dumps` of parameters, tools and images), rendered
//! with `sessfs render` and mounted once.
//!
//! Every expected value comes from the rows written below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, shape, shapes, Rendered};
use common::{stdout, Home, Mount};
use rusqlite::{params, Connection};
use std::path::Path;

const DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/oterm-0.19.sql"
));
const DDL_014: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/oterm-0.14.sql"
));

/// A key planted in oterm's `config.json` (an MCP server's environment) beside the database.
const SECRET: &str = "sk-PLANTEDotermMCPsecretDoNotRead0000000000";
const DB: &str = ".local/share/oterm/store.db";

/// `json.dumps` of a list of strings, as Python writes it (`", "` between items).
fn dumps(items: &[&str]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| serde_json::Value::from(*s).to_string())
        .collect();
    format!("[{}]", quoted.join(", "))
}

/// `Store.save_chat`: `INSERT OR REPLACE INTO chat(...)`, id left to SQLite.
#[allow(clippy::too_many_arguments)]
fn chat(
    c: &Connection,
    name: &str,
    model: &str,
    system: Option<&str>,
    provider: &str,
    parameters: &str,
    tools: &[&str],
    thinking: bool,
) -> i64 {
    c.execute(
        "INSERT OR REPLACE INTO chat(id, name, model, system, provider, parameters, tools, thinking)
         VALUES(NULL, ?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![name, model, system, provider, parameters, dumps(tools), thinking],
    )
    .expect("chat");
    c.last_insert_rowid()
}

/// `Store.save_message`.
fn message(c: &Connection, chat: i64, author: &str, text: &str, images: &str) {
    c.execute(
        "INSERT OR REPLACE INTO message(id, chat_id, author, text, images) VALUES(NULL, ?1, ?2, ?3, ?4)",
        params![chat, author, text, images],
    )
    .expect("message");
}

/// 300 bytes of a PNG, base64 (what oterm keeps of an attached image): 400 characters,
/// the signature's first six bytes then zeros.
fn png_b64() -> String {
    format!("iVBORw0K{}", "A".repeat(392))
}

struct Fixture {
    home: Home,
    a: i64,
    b: i64,
}

fn create(path: &Path, ddl: &str) -> Connection {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    let c = Connection::open(path).expect("db");
    c.execute_batch(ddl).expect("ddl");
    c
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let c = create(&h.join(DB), DDL);

    // --- A: system prompt, settings, an image, two turns.
    let a = chat(
        &c,
        "Alpha: sort the photos",
        "llama3.2",
        Some("Alpha system prompt: be brief"),
        "ollama",
        r#"{"temperature": 0.4}"#,
        &["date_time", "shell"],
        true,
    );
    message(
        &c,
        a,
        "user",
        "[Image #1] Alpha prompt: what is in this picture?",
        &dumps(&[&png_b64()]),
    );
    message(&c, a, "assistant", "Alpha reply: a cat on a sofa.", "[]");
    message(&c, a, "user", "Alpha second prompt: which colour?", "[]");
    message(&c, a, "assistant", "Alpha second reply: grey.", "[]");

    // --- B: no name (the first prompt names it), another provider, an unknown author, an
    // images field that is not JSON.
    let b = chat(&c, "", "gpt-4o-mini", None, "openai-chat", "{}", &[], false);
    message(&c, b, "user", "Bravo prompt: list three rivers", "[]");
    message(&c, b, "robot", "Bravo odd row", "[]");
    message(
        &c,
        b,
        "assistant",
        "Bravo reply: Nile, Danube, Amazon.",
        "not json [",
    );
    drop(c);

    put(
        &h,
        ".local/share/oterm/config.json",
        format!(
            r#"{{"theme": "textual-dark", "mcpServers": {{"x": {{"command": "x", "env": {{"API_KEY": "{SECRET}"}}}}}}}}"#
        ),
    );
    put(
        &h,
        ".local/share/oterm/.env",
        format!("OLLAMA_API_KEY={SECRET}\n"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, a, b }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-oterm", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    stores::assert_session_holds(
        tree,
        &format!("oterm/{}", fx.a),
        &[
            "Alpha system prompt: be brief",
            "Alpha prompt: what is in this picture?",
            "Alpha reply: a cat on a sofa.",
            "Alpha second reply: grey.",
        ],
        &[] as &[&str],
    );
    stores::assert_session_holds(
        tree,
        &format!("oterm/{}", fx.b),
        &[
            "Bravo prompt: list three rivers",
            "Bravo reply: Nile, Danube, Amazon.",
        ],
        &[] as &[&str],
    );
}

#[test]
fn every_chat_shows_its_settings_system_prompt_and_messages_in_order() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "oterm"), 2);
    let m = messages(&out.tree, &format!("oterm/{}", fx.a));
    assert_eq!(
        shapes(&m),
        [
            shape(
                "system",
                "event",
                "oterm chat: model llama3.2 (ollama); tools date_time, shell; thinking on; parameters temperature=0.4"
            ),
            shape("system", "context", "Alpha system prompt: be brief"),
            shape(
                "user",
                "",
                "[Image #1] Alpha prompt: what is in this picture?\n\n[image: 300 B]"
            ),
            shape("assistant", "", "Alpha reply: a cat on a sofa."),
            shape("user", "", "Alpha second prompt: which colour?"),
            shape("assistant", "", "Alpha second reply: grey."),
        ]
    );
    assert_eq!(m[1]["label"], "system prompt");
    assert_eq!(m[3]["model"], "llama3.2");
    let t = stores::transcript(&out.tree, &format!("oterm/{}", fx.a));
    assert!(!t.contains(&png_b64()[..40]), "image bytes shown");
}

#[test]
fn title_model_and_no_times_where_oterm_keeps_none() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("oterm/{}", fx.a));
    assert_eq!(a["title"], "Alpha: sort the photos");
    assert_eq!(a["model"], "llama3.2");
    assert_eq!(a["sessionId"], fx.a.to_string());
    assert_eq!(a["source"]["formatVersion"], "0.19.0");
    // oterm keeps no time, working directory or usage.
    assert!(a["createdAt"].is_null() && a["cwd"].is_null(), "{a}");
    let b = meta(&out.tree, &format!("oterm/{}", fx.b));
    assert_eq!(b["title"], "Bravo prompt: list three rivers");
    assert_eq!(b["model"], "gpt-4o-mini");
}

#[test]
fn unknown_authors_and_bad_images_cost_a_warning_and_keep_the_text() {
    let fx = write();
    let out = render(&fx);
    let dir = format!("oterm/{}", fx.b);
    let w = stores::warnings(&out.tree, &dir);
    assert!(w.contains("unknown author"), "{w}");
    assert!(w.contains("images fields"), "{w}");
    let t = stores::transcript(&out.tree, &dir);
    let (odd, reply) = (t.find("Bravo odd row"), t.find("Bravo reply"));
    assert!(odd.is_some() && odd < reply, "{t}");
    assert!(stores::warnings(&out.tree, &format!("oterm/{}", fx.a)) == "[]");
}

/// A database oterm 0.14 wrote and has not opened since: `format`, `keep_alive`, tools as
/// Ollama tool objects; its authors `me` and `ollama` (before 0.12).
#[test]
fn a_database_from_before_the_015_upgrade_reads_as_it_is() {
    let home = Home::empty();
    let c = create(&home.path().join(DB), DDL_014);
    c.execute(
        "INSERT INTO chat(id, name, model, system, format, parameters, keep_alive, tools, thinking)
         VALUES(NULL, 'Old chat', 'mistral', NULL, 'json', '{\"num_predict\": 64}', 5, ?1, 0)",
        [r#"[{"type": "function", "function": {"name": "date_time", "description": "now"}}]"#],
    )
    .expect("chat");
    message(&c, 1, "me", "Old prompt: what day is it?", "[]");
    message(&c, 1, "ollama", "Old reply: Tuesday.", "[]");
    drop(c);
    let out = stores::render(&home, "sessfs-oterm", &[]);
    let m = messages(&out.tree, "oterm/1");
    assert_eq!(
        shapes(&m),
        [
            shape(
                "system",
                "event",
                "oterm chat: model mistral; tools date_time; parameters num_predict=64; format json; keep_alive 5"
            ),
            shape("user", "", "Old prompt: what day is it?"),
            shape("assistant", "", "Old reply: Tuesday."),
        ]
    );
    assert_eq!(
        meta(&out.tree, "oterm/1")["source"]["formatVersion"],
        "0.14.7"
    );
}

/// A file in oterm's macOS place that is no database costs only itself: doctor names it,
/// and the chats of the real database still load.
#[test]
fn a_garbage_database_beside_a_good_one_hides_nothing() {
    let fx = write();
    put(
        fx.home.path(),
        "Library/Application Support/oterm/store.db",
        "SQLite format 3\0 torn garbage, not a database",
    );
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "oterm"), 2);
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(
        text.contains("problem: ")
            && text.contains("Library/Application Support/oterm/store.db: not a SQLite database"),
        "{text}"
    );
}

#[test]
fn the_config_and_env_beside_the_database_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn doctor_names_oterm_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 2 sessions", "oterm")),
        "{text}"
    );
    assert!(text.contains(".local/share/oterm/store.db"), "{text}");
}

#[test]
fn mounted_database_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["oterm"], 6, SECRET, &format!("oterm/{}", fx.a));
    });
}

/// oterm saves a turn's two rows when the reply ends: they show within a second, and a new
/// chat appears.
#[test]
fn a_new_turn_and_a_new_chat_show_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("oterm/{}/transcript.md", fx.a));
    assert!(stores::file_contains(&t, "Alpha second reply"));
    let c = Connection::open(fx.home.path().join(DB)).expect("db");
    message(&c, fx.a, "user", "Alpha fresh prompt after the mount", "[]");
    message(
        &c,
        fx.a,
        "assistant",
        "Alpha fresh reply after the mount",
        "[]",
    );
    stores::assert_within_a_second("new turn", || {
        stores::file_contains(&t, "Alpha fresh reply after the mount")
    });
    let n = chat(&c, "Charlie", "llama3.2", None, "ollama", "{}", &[], false);
    message(&c, n, "user", "Charlie prompt", "[]");
    let t = m.path().join(format!("oterm/{n}/transcript.md"));
    stores::assert_within_a_second("new chat", || stores::file_contains(&t, "Charlie prompt"));
}
