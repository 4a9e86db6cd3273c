//! Zed agent threads, written here into a `threads.db` built from Zed's own DDL
//! (`fixtures/schema/zed-threads.sql`, from `crates/agent/src/db.rs`), each thread a JSON
//! document shaped as Zed serializes `DbThread` (zstd-compressed) or the first agent's
//! `SerializedThread` (plain JSON), rendered with `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below ([`Written`]), never from sessfs' parser.

mod common;

use common::stores::{self, meta, Rendered};
use common::{stdout, Home, Mount};
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A string that looks like a credential, planted in Zed's settings and in another table
/// of the threads database.
const SECRET: &str = "sk-ant-PLANTEDzedSECRETdoNotRead000000";
const DB: &str = ".local/share/zed/threads/threads.db";
const UNSET: &[&str] = &["FLATPAK_XDG_DATA_HOME"];

const A: &str = "aaaaaaaa-0000-4000-8000-00000000000a";
const B: &str = "bbbbbbbb-0000-4000-8000-00000000000b";
const C: &str = "cccccccc-0000-4000-8000-00000000000c";
const D: &str = "dddddddd-0000-4000-8000-00000000000d";
const E: &str = "eeeeeeee-0000-4000-8000-00000000000e";
const F: &str = "ffffffff-0000-4000-8000-00000000000f";

#[derive(Default)]
struct Written {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
    /// input, output, cache reads, cache writes.
    tokens: (u64, u64, u64, u64),
}

struct Fixture {
    home: Home,
    threads: Vec<Written>,
}

fn usage(input: u64, output: u64, write: u64, read: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output,
           "cache_creation_input_tokens": write, "cache_read_input_tokens": read})
}

fn user(id: &str, content: Vec<Value>) -> Value {
    json!({"User": {"id": id, "content": content}})
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"ToolUse": {"id": id, "name": name, "raw_input": input.to_string(), "input": input,
                       "is_input_complete": true}})
}

fn result(id: &str, name: &str, content: Value, is_error: bool) -> Value {
    json!({"tool_use_id": id, "tool_name": name, "is_error": is_error, "content": content,
           "output": null})
}

fn db_thread(title: &str, messages: Vec<Value>) -> Value {
    json!({"title": title, "messages": messages, "updated_at": "2026-03-01T10:05:00Z",
           "detailed_summary": null, "initial_project_snapshot": null,
           "cumulative_token_usage": usage(0, 0, 0, 0), "request_token_usage": {},
           "model": {"provider": "zed.dev", "model": "zed-test-model"}, "profile": "write",
           "imported": false, "subagent_context": null, "version": "0.3.0"})
}

/// One row as Zed's `save_thread_sync` writes it.
#[allow(clippy::too_many_arguments)]
fn insert(
    c: &Connection,
    id: &str,
    parent: Option<&str>,
    folders: Option<&str>,
    summary: &str,
    data_type: &str,
    data: Vec<u8>,
) {
    c.execute(
        "INSERT INTO threads (id, parent_id, folder_paths, folder_paths_order, summary, \
         updated_at, data_type, data, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            id,
            parent,
            folders,
            folders.map(|_| "0"),
            summary,
            "2026-03-01T10:05:00+00:00",
            data_type,
            data,
            "2026-03-01T10:00:00+00:00"
        ],
    )
    .expect("insert");
}

fn zstd(doc: &Value) -> Vec<u8> {
    zstd::encode_all(doc.to_string().as_bytes(), 3).expect("zstd")
}

fn open_db(path: &Path) -> Connection {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let c = Connection::open(path).expect("open");
    c.pragma_update(None, "journal_mode", "WAL").expect("wal");
    c.execute_batch(include_str!("../fixtures/schema/zed-threads.sql"))
        .expect("ddl");
    c
}

fn write() -> Fixture {
    let home = Home::empty();
    let db = home.path().join(DB);
    let c = open_db(&db);
    // Not Zed's: a table beside `threads` holding a credential, never read.
    c.execute_batch("CREATE TABLE kv_store (key TEXT PRIMARY KEY, value TEXT)")
        .expect("kv");
    c.execute("INSERT INTO kv_store VALUES ('token', ?1)", [SECRET])
        .expect("kv row");
    let mut threads = Vec::new();

    // --- A: current format, zstd. A mention, thinking, two calls (one failed), sealed
    // thinking; usage only per prompt (no total): one request each.
    let mut a = db_thread(
        "Alpha: fix the parser",
        vec![
            user(
                "ua1",
                vec![
                    json!({"Text": "Alpha prompt: fix the parser"}),
                    json!({"Mention": {"uri": {"File": {"abs_path": "/home/dev/alpha/src/parser.rs"}},
                                   "content": "alpha-mention: fn parse() {}"}}),
                ],
            ),
            json!({"Agent": {"content": [
                    {"Thinking": {"text": "Alpha thinking: read the parser.", "signature": "c2ln"}},
                    {"Text": "Alpha reply: reading it."},
                    tool_use("tu_a1", "read_file", json!({"path": "src/parser.rs"})),
                    tool_use("tu_a2", "terminal", json!({"command": "cargo test"}))],
                "tool_results": {
                    "tu_a1": result("tu_a1", "read_file", json!({"Text": "alpha-output: fn parse() {}"}), false),
                    "tu_a2": result("tu_a2", "terminal", json!("alpha-error: 2 tests failed"), true)}}}),
            json!({"Agent": {"content": [{"Text": "Alpha reply two: fixed."}], "tool_results": {}}}),
            user("ua2", vec![json!({"Text": "Alpha second prompt: thanks"})]),
            json!({"Agent": {"content": [{"RedactedThinking": "ZW5j"}, {"Text": "Alpha reply three: welcome."}],
                             "tool_results": {}}}),
        ],
    );
    a["request_token_usage"] =
        json!({"ua1": usage(100, 50, 10, 1000), "ua2": usage(20, 5, 0, 1100)});
    insert(
        &c,
        A,
        None,
        Some("/home/dev/alpha"),
        "Alpha: fix the parser",
        "zstd",
        zstd(&a),
    );
    threads.push(Written {
        dir: format!("zed/{A}"),
        lines: vec![
            "Alpha prompt: fix the parser",
            "alpha-mention: fn parse() {}",
            "Alpha thinking: read the parser.",
            "Alpha reply: reading it.",
            "Alpha reply two: fixed.",
            "Alpha second prompt: thanks",
            "Alpha reply three: welcome.",
        ],
        outputs: vec!["alpha-output: fn parse() {}", "alpha-error: 2 tests failed"],
        tokens: (120, 55, 2100, 10),
    });

    // --- B: a total Zed kept (it counts; the per-prompt entry is inside it) and a
    // subagent thread C.
    let mut b = db_thread(
        "Bravo: delegate",
        vec![
            user(
                "ub1",
                vec![json!({"Text": "Bravo prompt: delegate the search"})],
            ),
            json!({"Agent": {"content": [{"Text": "Bravo reply: spawning a helper."},
                    tool_use("tu_b1", "spawn_agent", json!({"task": "search"}))],
                "tool_results": {"tu_b1": result("tu_b1", "spawn_agent",
                    json!([{"Text": "bravo-output: the helper found 3 files"}]), false)}}}),
        ],
    );
    b["cumulative_token_usage"] = usage(700, 70, 7, 7000);
    b["request_token_usage"] = json!({"ub1": usage(300, 30, 3, 3000)});
    insert(
        &c,
        B,
        None,
        Some("/home/dev/bravo"),
        "Bravo: delegate",
        "zstd",
        zstd(&b),
    );
    threads.push(Written {
        dir: format!("zed/{B}"),
        lines: vec![
            "Bravo prompt: delegate the search",
            "Bravo reply: spawning a helper.",
        ],
        outputs: vec!["bravo-output: the helper found 3 files"],
        tokens: (700, 70, 7000, 7),
    });
    let mut ch = db_thread(
        "Charlie: the helper",
        vec![
            user(
                "uc1",
                vec![json!({"Text": "Charlie prompt: search for the files"})],
            ),
            json!({"Agent": {"content": [{"Text": "Charlie reply: three files."}], "tool_results": {}}}),
        ],
    );
    ch["subagent_context"] = json!({"parent_thread_id": B, "tool_use_id": "tu_b1", "depth": 1});
    ch["request_token_usage"] = json!({"uc1": usage(40, 4, 0, 0)});
    insert(
        &c,
        C,
        Some(B),
        Some("/home/dev/bravo"),
        "Charlie: the helper",
        "zstd",
        zstd(&ch),
    );
    threads.push(Written {
        dir: format!("zed/{C}"),
        lines: vec![
            "Charlie prompt: search for the files",
            "Charlie reply: three files.",
        ],
        tokens: (40, 4, 0, 0),
        ..Written::default()
    });

    // --- D: the first agent's format 0.2.0, stored as JSON: segments, attached context,
    // tool uses and results, a per-message usage list that repeats (never summed) and the
    // total.
    let d = json!({"version": "0.2.0", "summary": "Delta: legacy thread",
        "updated_at": "2025-05-01T09:00:00Z",
        "messages": [
            {"id": 0, "role": "user", "segments": [{"type": "text", "text": "Delta prompt: list the crates"}],
             "tool_uses": [], "tool_results": [], "context": "delta-context: Cargo.toml says [workspace]",
             "creases": [], "is_hidden": false},
            {"id": 1, "role": "assistant", "segments": [
                {"type": "thinking", "text": "Delta thinking: look at the manifest.", "signature": "x"},
                {"type": "text", "text": "Delta reply: listing."},
                {"type": "RedactedThinking", "data": "abc"}],
             "tool_uses": [{"id": "tu_d1", "name": "list_directory", "input": {"path": "crates"}}],
             "tool_results": [{"tool_use_id": "tu_d1", "is_error": false,
                               "content": "delta-output: crates/a crates/b", "output": null}],
             "context": "", "creases": [], "is_hidden": false},
            {"id": 2, "role": "user", "segments": [{"type": "text", "text": "Delta hidden continue"}],
             "tool_uses": [], "tool_results": [], "context": "", "creases": [], "is_hidden": true}],
        "initial_project_snapshot": {"worktree_snapshots": [{"worktree_path": "/home/dev/delta", "git_state": null}],
                                     "unsaved_buffer_paths": [], "timestamp": "2025-05-01T08:00:00Z"},
        "cumulative_token_usage": usage(500, 60, 0, 400),
        "request_token_usage": [usage(500, 60, 0, 400), usage(500, 60, 0, 400), usage(500, 60, 0, 400)],
        "detailed_summary_state": "NotGenerated",
        "model": {"provider": "anthropic", "model": "zed-legacy-model"}});
    insert(
        &c,
        D,
        None,
        None,
        "Delta: legacy thread",
        "json",
        d.to_string().into_bytes(),
    );
    threads.push(Written {
        dir: format!("zed/{D}"),
        lines: vec![
            "Delta prompt: list the crates",
            "delta-context: Cargo.toml says [workspace]",
            "Delta thinking: look at the manifest.",
            "Delta reply: listing.",
            "Delta hidden continue",
        ],
        outputs: vec!["delta-output: crates/a crates/b"],
        tokens: (500, 60, 400, 0),
    });

    // --- E: format 0.1.0, the results in the next user message; and a message kind this
    // reader does not know.
    let e = json!({"version": "0.1.0", "summary": "Echo: oldest", "updated_at": "2025-03-01T09:00:00Z",
        "messages": [
            {"id": 0, "role": "user", "segments": [{"type": "text", "text": "Echo prompt: run it"}]},
            {"id": 1, "role": "assistant", "segments": [{"type": "text", "text": "Echo reply: running."}],
             "tool_uses": [{"id": "tu_e1", "name": "bash", "input": {"cmd": "make"}}]},
            {"id": 2, "role": "user", "segments": [],
             "tool_results": [{"tool_use_id": "tu_e1", "is_error": false,
                               "content": {"Text": "echo-output: make: nothing to do"}, "output": null}]},
            {"Narration": {"text": "Echo narration line"}}]});
    insert(
        &c,
        E,
        None,
        None,
        "Echo: oldest",
        "json",
        e.to_string().into_bytes(),
    );
    threads.push(Written {
        dir: format!("zed/{E}"),
        lines: vec![
            "Echo prompt: run it",
            "Echo reply: running.",
            "Echo narration line",
        ],
        outputs: vec!["echo-output: make: nothing to do"],
        tokens: (0, 0, 0, 0),
    });

    // --- F: a row whose data is no zstd frame: the thread shows, with a warning.
    insert(
        &c,
        F,
        None,
        None,
        "Foxtrot: broken row",
        "zstd",
        b"not a zstd frame".to_vec(),
    );
    threads.push(Written {
        dir: format!("zed/{F}"),
        tokens: (0, 0, 0, 0),
        ..Written::default()
    });
    drop(c);

    stores::put(
        home.path(),
        ".config/zed/settings.json",
        json!({"language_models": {"openai": {"api_key": SECRET}}}).to_string(),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, threads }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-zed", UNSET)
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for t in &fx.threads {
        stores::assert_session_holds(tree, &t.dir, &t.lines, &t.outputs);
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_thread() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "zed"), 6);
}

#[test]
fn usage_is_counted_once_per_request() {
    let fx = write();
    let out = render(&fx);
    for t in &fx.threads {
        let c = &meta(&out.tree, &t.dir)["cost"];
        let (i, o, cr, cw) = t.tokens;
        assert_eq!(
            stores::tokens(c),
            (Some(i), Some(o), Some(cr), Some(cw)),
            "{}: {c}",
            t.dir
        );
    }
}

#[test]
fn titles_cwd_models_subagents_and_broken_rows() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    let a = meta(tree, &format!("zed/{A}"));
    assert_eq!(a["title"], "Alpha: fix the parser");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["model"], "zed-test-model");
    assert_eq!(a["createdAt"], "2026-03-01T10:00:00.000Z");
    let transcript =
        std::fs::read_to_string(tree.join(format!("zed/{A}/transcript.md"))).expect("transcript");
    assert!(transcript.contains("sealed reasoning"), "{transcript}");
    let b = meta(tree, &format!("zed/{B}"));
    assert!(
        b["subagents"].to_string().contains(&format!("zed:{C}")),
        "{b}"
    );
    let c = meta(tree, &format!("zed/{C}"));
    assert_eq!(c["parent"], format!("zed:{B}"));
    let d = meta(tree, &format!("zed/{D}"));
    assert_eq!(d["cwd"], "/home/dev/delta");
    assert_eq!(d["model"], "zed-legacy-model");
    let e = meta(tree, &format!("zed/{E}"));
    assert!(
        e["warnings"].to_string().contains("unknown message kind"),
        "{e}"
    );
    let f = meta(tree, &format!("zed/{F}"));
    assert_eq!(f["title"], "Foxtrot: broken row");
    assert!(f["warnings"].to_string().contains("not zstd"), "{f}");
}

#[test]
fn settings_and_other_tables_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, UNSET);
}

#[test]
fn doctor_names_zed_and_where_it_found_it() {
    let fx = write();
    let o = fx.home.sessfs(&["doctor"]);
    let text = stdout(&o);
    assert!(text.contains(&format!("{:<9} 6 sessions", "zed")), "{text}");
    assert!(text.contains("zed/threads/threads.db"), "{text}");
}

#[test]
fn mounted_threads_grep_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot_stable, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["zed"], 18, SECRET, &format!("zed/{A}"));
    });
}

/// Zed rewrites a thread's row on every change, in WAL mode, while the mount reads: the
/// new message shows within a second, and a new thread too.
#[test]
fn a_rewritten_thread_and_a_new_thread_show_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let transcript = m.path().join(format!("zed/{C}/transcript.md"));
    assert!(stores::file_contains(
        &transcript,
        "Charlie reply: three files."
    ));
    let db: PathBuf = fx.home.path().join(DB);
    let c = Connection::open(&db).expect("open");
    let mut ch = db_thread(
        "Charlie: the helper",
        vec![
            user(
                "uc1",
                vec![json!({"Text": "Charlie prompt: search for the files"})],
            ),
            json!({"Agent": {"content": [{"Text": "Charlie reply: three files."}], "tool_results": {}}}),
            user(
                "uc2",
                vec![json!({"Text": "Charlie fresh prompt after the mount"})],
            ),
        ],
    );
    ch["subagent_context"] = json!({"parent_thread_id": B});
    c.execute(
        "UPDATE threads SET data = ?1, updated_at = ?2 WHERE id = ?3",
        params![zstd(&ch), "2026-03-01T11:00:00+00:00", C],
    )
    .expect("update");
    stores::assert_within_a_second("rewritten thread", || {
        stores::file_contains(&transcript, "Charlie fresh prompt after the mount")
    });
    let g = "99999999-0000-4000-8000-000000000009";
    let new = db_thread(
        "Golf",
        vec![user(
            "ug1",
            vec![json!({"Text": "Golf: a thread started after the mount"})],
        )],
    );
    insert(&c, g, None, None, "Golf", "zstd", zstd(&new));
    stores::assert_within_a_second("new thread", || {
        m.path().join(format!("zed/{g}/transcript.md")).exists()
    });
}

/// The Zed store's glance (`threads.db` with its journals): with nothing changed a search
/// lists no store; a thread grown by a prompt and a new thread (new rows, in the WAL while
/// Zed holds the database open) are each found by the next search, and a deleted thread is
/// gone.
#[test]
fn zed_changes_are_found_by_the_next_search() {
    use common::{age, logged_search};
    use std::collections::BTreeSet;
    let home = Home::empty();
    let ids = [
        "e0e0e0e0-0000-4000-8000-000000000001",
        "e0e0e0e0-0000-4000-8000-000000000002",
        "e0e0e0e0-0000-4000-8000-000000000003",
    ];
    let found = |ns: &[usize]| -> BTreeSet<String> {
        ns.iter().map(|&n| format!("zed/{}", ids[n])).collect()
    };
    let thread = |prompts: &[&str]| {
        let messages = prompts
            .iter()
            .enumerate()
            .map(|(i, p)| user(&format!("u{i}"), vec![json!({"Text": p})]))
            .collect();
        zstd(&db_thread("Glance", messages))
    };
    let db: PathBuf = home.path().join(DB);
    let c = open_db(&db);
    insert(
        &c,
        ids[0],
        None,
        None,
        "One",
        "zstd",
        thread(&["the glancezedone prompt"]),
    );
    insert(
        &c,
        ids[1],
        None,
        None,
        "Two",
        "zstd",
        thread(&["the glancezedtwo prompt"]),
    );
    // Zed holds the database open: its `-wal` and `-shm` stay beside it.
    for d in [
        ".local/share/zed/threads",
        ".local/share/zed",
        ".local/share",
    ] {
        age(&home.path().join(d), 3600);
    }
    assert_eq!(logged_search(&home, "prompt"), (found(&[0, 1]), false));
    assert_eq!(logged_search(&home, "prompt"), (found(&[0, 1]), true));
    c.execute(
        "UPDATE threads SET data = ?1, updated_at = ?2 WHERE id = ?3",
        params![
            thread(&["the glancezedone prompt", "an appendedzed prompt"]),
            "2026-03-01T11:00:00+00:00",
            ids[0]
        ],
    )
    .expect("update");
    assert_eq!(logged_search(&home, "appendedzed").0, found(&[0]));
    assert_eq!(logged_search(&home, "appendedzed"), (found(&[0]), true));
    insert(
        &c,
        ids[2],
        None,
        None,
        "Three",
        "zstd",
        thread(&["the glancezedthree prompt"]),
    );
    assert_eq!(logged_search(&home, "glancezedthree").0, found(&[2]));
    assert_eq!(logged_search(&home, "glancezedthree"), (found(&[2]), true));
    c.execute("DELETE FROM threads WHERE id = ?1", [ids[1]])
        .expect("delete");
    assert_eq!(logged_search(&home, "glancezedtwo").0, BTreeSet::new());
    assert_eq!(logged_search(&home, "prompt"), (found(&[0, 2]), true));
}
