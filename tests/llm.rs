//! LLM's `~/.config/io.datasette.llm/logs.db`, built here from the DDL written out of LLM's
//! migrations (`fixtures/schema/llm-0.32.sql`, from simonw/llm `llm/migrations.py`) with
//! rows written the way llm 0.31's `Response.log_to_db` (legacy tables) and 0.32's
//! `LogStore.log` (message store) write them, rendered with `sessfs render` and mounted.
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
    "/fixtures/schema/llm-0.32.sql"
));

/// A credential, planted in LLM's `keys.json` beside the database.
const SECRET: &str = "sk-PLANTEDllmKEYSjsonDoNotRead0000000000000";
const DIR: &str = ".config/io.datasette.llm";
const DB: &str = ".config/io.datasette.llm/logs.db";

/// Legacy conversation, a lone legacy response, a 0.32 thread, and a legacy conversation
/// continued as a thread of the same id.
const A: &str = "01jalpha0legacy0conversation";
const R: &str = "01jlone0response0no0conversation";
const T: &str = "01ktango0thread0only";
const B: &str = "01jbravo0continued0in0thread";

fn response(
    c: &Connection,
    (id, conv): (&str, Option<&str>),
    prompt: &str,
    system: &str,
    reply: &str,
    at: &str,
    tokens: (i64, i64),
) {
    c.execute(
        "INSERT INTO responses (id, model, prompt, system, options_json, response, conversation_id, duration_ms,
                                datetime_utc, input_tokens, output_tokens, resolved_model, reasoning)
         VALUES (?1, 'gpt-4.1-mini', ?2, ?3, '{}', ?4, ?5, 700, ?6, ?7, ?8, 'gpt-4.1-mini-2025-04-14', NULL)",
        params![id, prompt, Some(system).filter(|s| !s.is_empty()), reply, conv, at, tokens.0, tokens.1],
    )
    .expect("response");
}

/// One message of a chain with its parts `(type, text column, payload)`.
fn message(
    c: &Connection,
    hash: &str,
    parent: Option<&str>,
    role: &str,
    parts: &[(&str, Option<&str>, Option<Value>)],
) {
    c.execute(
        "INSERT INTO messages (hash, parent_hash, role) VALUES (?1, ?2, ?3)",
        params![hash, parent, role],
    )
    .expect("message");
    for (i, (kind, text, payload)) in parts.iter().enumerate() {
        c.execute(
            "INSERT INTO parts (message_hash, position, type, tool_name, text, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                hash,
                i as i64,
                kind,
                payload.as_ref().and_then(|p| p["name"].as_str().map(str::to_string)),
                text,
                payload.as_ref().map(Value::to_string)
            ],
        )
        .expect("part");
    }
}

fn turn(
    c: &Connection,
    id: &str,
    thread: &str,
    parent: &str,
    tip: &str,
    tokens: (i64, i64),
    at: &str,
) {
    c.execute(
        "INSERT INTO turns (id, thread_id, parent_message_hash, tip_message_hash, model, input_tokens, output_tokens, duration_ms, datetime_utc)
         VALUES (?1, ?2, ?3, ?4, 'claude-sonnet-4.5', ?5, ?6, 900, ?7)",
        params![id, thread, parent, tip, tokens.0, tokens.1, at],
    )
    .expect("turn");
}

fn write() -> Home {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    std::fs::create_dir_all(h.join(DIR)).expect("dir");
    let c = Connection::open(h.join(DB)).expect("db");
    c.execute_batch(DDL).expect("ddl");
    c.execute_batch("PRAGMA journal_mode = WAL").expect("wal");

    // --- A: legacy. System prompt (repeated unchanged on the second response), a prompt
    // fragment, an attachment, two tool calls, one result ok and one failed.
    c.execute(
        "INSERT INTO conversations VALUES (?1, 'Alpha: count the files', 'gpt-4.1-mini')",
        [A],
    )
    .expect("conv");
    response(
        &c,
        ("01jalpha0r1", Some(A)),
        "Alpha prompt: count the files",
        "Alpha system prompt",
        "",
        "2026-05-01T10:00:00.000000+00:00",
        (1000, 50),
    );
    response(
        &c,
        ("01jalpha0r2", Some(A)),
        "",
        "Alpha system prompt",
        "Alpha reply: 14 files",
        "2026-05-01T10:00:05.000000+00:00",
        (1200, 20),
    );
    c.execute(
        "UPDATE responses SET reasoning = 'Alpha thinking: use the tool' WHERE id = '01jalpha0r1'",
        [],
    )
    .expect("reasoning");
    c.execute(
        "INSERT INTO fragments (id, hash, content, datetime_utc, source) VALUES (7, 'h7', 'Alpha fragment body', '2026-05-01T10:00:00', 'alpha-notes.md')",
        [],
    )
    .expect("fragment");
    c.execute(
        "INSERT INTO prompt_fragments VALUES ('01jalpha0r1', 7, 0)",
        [],
    )
    .expect("prompt fragment");
    c.execute(
        "INSERT INTO attachments VALUES ('att1', 'image/png', '/home/dev/alpha/shot.png', NULL, NULL)",
        [],
    )
    .expect("attachment");
    c.execute(
        "INSERT INTO prompt_attachments VALUES ('01jalpha0r1', 'att1', 0)",
        [],
    )
    .expect("prompt attachment");
    for (name, args, call) in [
        ("count_files", json!({"glob": "*.py"}), "call_alpha_1"),
        ("read_file", json!({"path": "missing.txt"}), "call_alpha_2"),
    ] {
        c.execute(
            "INSERT INTO tool_calls (response_id, name, arguments, tool_call_id) VALUES ('01jalpha0r1', ?1, ?2, ?3)",
            params![name, args.to_string(), call],
        )
        .expect("call");
    }
    c.execute(
        "INSERT INTO tool_results (response_id, name, output, tool_call_id, exception) VALUES
         ('01jalpha0r2', 'count_files', 'alpha-output: 14', 'call_alpha_1', NULL),
         ('01jalpha0r2', 'read_file', '', 'call_alpha_2', 'alpha-error: FileNotFoundError missing.txt')",
        [],
    )
    .expect("results");

    // --- R: a response with no conversation.
    response(
        &c,
        (R, None),
        "Lone prompt without a conversation",
        "",
        "Lone reply",
        "2026-05-01T09:00:00.000000+00:00",
        (30, 3),
    );

    // --- T: a 0.32 thread: prompt borrowing a fragment, reasoning, a tool call, a failed
    // result, the reply; a part whose payload is not JSON.
    c.execute(
        "INSERT INTO fragments (id, hash, content, source) VALUES (8, 'h8', 'Tango fragment body', 'tango.txt')",
        [],
    )
    .expect("fragment");
    message(
        &c,
        "b2:t0",
        None,
        "system",
        &[("text", Some("Tango system prompt"), None)],
    );
    message(
        &c,
        "b2:t1",
        Some("b2:t0"),
        "user",
        &[(
            "text",
            None,
            Some(json!({"text_ref": [{"literal": "Tango prompt about "}, {"fragment": 8}]})),
        )],
    );
    c.execute(
        "INSERT INTO part_fragments SELECT id, 8, 0 FROM parts WHERE message_hash = 'b2:t1'",
        [],
    )
    .expect("part fragment");
    message(
        &c,
        "b2:t2",
        Some("b2:t1"),
        "assistant",
        &[
            ("reasoning", Some("Tango thinking: look first"), None),
            (
                "tool_call",
                None,
                Some(
                    json!({"name": "list_dir", "arguments": {"path": "."}, "tool_call_id": "call_tango_1"}),
                ),
            ),
        ],
    );
    message(
        &c,
        "b2:t3",
        Some("b2:t2"),
        "tool",
        &[(
            "tool_result",
            None,
            Some(
                json!({"name": "list_dir", "output": "", "tool_call_id": "call_tango_1", "exception": "tango-error: PermissionError"}),
            ),
        )],
    );
    message(
        &c,
        "b2:t4",
        Some("b2:t3"),
        "assistant",
        &[("text", Some("Tango reply: no access"), None)],
    );
    c.execute(
        "INSERT INTO parts (message_hash, position, type, payload) VALUES ('b2:t4', 1, 'tool_call', 'Tango torn {payload')",
        [],
    )
    .expect("torn part");
    c.execute(
        "INSERT INTO threads VALUES (?1, 'Tango: check access', 'b2:t4', NULL, '2026-05-02T08:00:00.000000+00:00')",
        [T],
    )
    .expect("thread");
    turn(
        &c,
        "turn_t1",
        T,
        "b2:t1",
        "b2:t2",
        (400, 40),
        "2026-05-02T08:00:00.000000+00:00",
    );
    turn(
        &c,
        "turn_t2",
        T,
        "b2:t3",
        "b2:t4",
        (500, 10),
        "2026-05-02T08:00:09.000000+00:00",
    );

    // --- B: a legacy conversation continued by 0.32: the thread has the conversation's id
    // and its chain holds the legacy history.
    c.execute(
        "INSERT INTO conversations VALUES (?1, 'Bravo first prompt', 'gpt-4.1-mini')",
        [B],
    )
    .expect("conv");
    response(
        &c,
        ("01jbravo0r1", Some(B)),
        "Bravo first prompt",
        "",
        "Bravo first reply",
        "2026-04-01T10:00:00.000000+00:00",
        (100, 10),
    );
    message(
        &c,
        "b2:b1",
        None,
        "user",
        &[("text", Some("Bravo first prompt"), None)],
    );
    message(
        &c,
        "b2:b2",
        Some("b2:b1"),
        "assistant",
        &[("text", Some("Bravo first reply"), None)],
    );
    message(
        &c,
        "b2:b3",
        Some("b2:b2"),
        "user",
        &[("text", Some("Bravo second prompt"), None)],
    );
    message(
        &c,
        "b2:b4",
        Some("b2:b3"),
        "assistant",
        &[("text", Some("Bravo second reply"), None)],
    );
    c.execute(
        "INSERT INTO threads VALUES (?1, 'Bravo first prompt', 'b2:b4', NULL, '2026-05-03T08:00:00.000000+00:00')",
        [B],
    )
    .expect("thread");
    turn(
        &c,
        "turn_b1",
        B,
        "b2:b3",
        "b2:b4",
        (200, 20),
        "2026-05-03T08:00:00.000000+00:00",
    );
    drop(c);

    put(
        &h,
        &format!("{DIR}/keys.json"),
        json!({"openai": SECRET}).to_string(),
    );
    put(&h, &format!("{DIR}/logs-off"), "");
    let mut home = home;
    home.files = common::files_under(home.path());
    home
}

fn render(home: &Home) -> Rendered {
    stores::render(home, "sessfs-llm", &[])
}

fn dir(id: &str) -> String {
    format!("llm/{id}")
}

/// The `messages.jsonl` lines of a session, the header line left out.
fn lines(tree: &Path, id: &str) -> Vec<Value> {
    std::fs::read_to_string(tree.join(dir(id)).join("messages.jsonl"))
        .expect("messages.jsonl")
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).expect("line"))
        .collect()
}

fn check_tree(tree: &Path) {
    stores::assert_session_holds(
        tree,
        &dir(A),
        &[
            "Alpha system prompt",
            "Alpha fragment body",
            "Alpha prompt: count the files",
            "Alpha thinking: use the tool",
            "Alpha reply: 14 files",
        ],
        &[
            "alpha-output: 14",
            "alpha-error: FileNotFoundError missing.txt",
        ],
    );
    stores::assert_session_holds(
        tree,
        &dir(R),
        &["Lone prompt without a conversation", "Lone reply"],
        &[] as &[&str],
    );
    stores::assert_session_holds(
        tree,
        &dir(T),
        &[
            "Tango system prompt",
            "Tango prompt about Tango fragment body",
            "Tango thinking: look first",
            "Tango reply: no access",
        ],
        &["tango-error: PermissionError"],
    );
    stores::assert_session_holds(
        tree,
        &dir(B),
        &[
            "Bravo first reply",
            "Bravo second prompt",
            "Bravo second reply",
        ],
        &[] as &[&str],
    );
}

#[test]
fn every_conversation_thread_and_lone_response_is_a_session() {
    let home = write();
    let out = render(&home);
    check_tree(&out.tree);
    assert_eq!(stores::entries(&out.tree, "llm"), 4);
    let a = meta(&out.tree, &dir(A));
    assert_eq!(a["title"], "Alpha: count the files");
    assert_eq!(a["createdAt"], "2026-05-01T10:00:00.000Z");
    assert_eq!(a["updatedAt"], "2026-05-01T10:00:05.000Z");
    assert_eq!(meta(&out.tree, &dir(T))["title"], "Tango: check access");
    assert_eq!(
        meta(&out.tree, &dir(R))["title"],
        "Lone prompt without a conversation"
    );
}

#[test]
fn legacy_messages_land_in_order_with_tools_paired() {
    let home = write();
    let out = render(&home);
    let l = lines(&out.tree, A);
    let shape: Vec<(&str, &str)> = l
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or(""),
                m["content"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("system", "Alpha system prompt"),
            ("system", "Alpha fragment body"),
            (
                "user",
                "Alpha prompt: count the files\n\n[image: image/png] /home/dev/alpha/shot.png"
            ),
            ("assistant", ""),
            ("tool", ""),
            ("tool", ""),
            ("assistant", "Alpha reply: 14 files"),
        ],
        "{l:#?}"
    );
    assert_eq!(l[3]["thinking"], "Alpha thinking: use the tool");
    assert_eq!(l[3]["toolCalls"][0]["toolCallId"], "call_alpha_1");
    assert_eq!(
        l[3]["toolCalls"][1]["input"],
        json!({"path": "missing.txt"})
    );
    assert_eq!(l[4]["toolResult"]["toolName"], "count_files");
    assert_eq!(l[4]["toolResult"]["isError"], false);
    assert_eq!(l[5]["toolResult"]["toolName"], "read_file");
    assert_eq!(l[5]["toolResult"]["isError"], true);
    assert_eq!(l[6]["model"], "gpt-4.1-mini-2025-04-14");
    let t = std::fs::read_to_string(out.tree.join(dir(A)).join("transcript.md")).expect("t");
    assert_eq!(t.matches("Alpha system prompt").count(), 1, "{t}");
    assert!(t.contains("fragment alpha-notes.md"), "{t}");
}

#[test]
fn thread_messages_land_in_order_with_tools_paired() {
    let home = write();
    let out = render(&home);
    let l = lines(&out.tree, T);
    let roles: Vec<&str> = l.iter().map(|m| m["role"].as_str().unwrap_or("")).collect();
    // system prompt, prompt, call, failed result, reply, the unparsed part as context.
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "system", "assistant"],
        "{l:#?}"
    );
    assert_eq!(l[1]["content"], "Tango prompt about Tango fragment body");
    assert_eq!(l[2]["thinking"], "Tango thinking: look first");
    assert_eq!(l[2]["toolCalls"][0]["toolName"], "list_dir");
    assert_eq!(l[3]["toolResult"]["toolCallId"], "call_tango_1");
    assert_eq!(l[3]["toolResult"]["isError"], true);
    assert_eq!(l[3]["timestamp"], "2026-05-02T08:00:09.000Z");
    assert_eq!(l[4]["content"], "Tango torn {payload");
    assert_eq!(l[5]["content"], "Tango reply: no access");
    let m = meta(&out.tree, &dir(T));
    assert!(
        m["warnings"].to_string().contains("payload is not JSON"),
        "{}",
        m["warnings"]
    );
}

#[test]
fn usage_and_model_are_each_model_call_once() {
    let home = write();
    let out = render(&home);
    for (id, i, o, model) in [
        (A, 2200, 70, "gpt-4.1-mini-2025-04-14"),
        (R, 30, 3, "gpt-4.1-mini-2025-04-14"),
        (T, 900, 50, "claude-sonnet-4.5"),
        // The legacy response's usage on the first reply, the turn's on the second.
        (B, 300, 30, "gpt-4.1-mini-2025-04-14"),
    ] {
        let m = meta(&out.tree, &dir(id));
        let c = &m["cost"];
        assert_eq!(stores::tokens(c).0, Some(i), "{id}: {c}");
        assert_eq!(stores::tokens(c).1, Some(o), "{id}: {c}");
        assert_eq!(m["models"][0], model, "{id}");
    }
    let b = lines(&out.tree, B);
    assert_eq!(b[1]["timestamp"], "2026-04-01T10:00:00.000Z", "{b:#?}");
    assert_eq!(b[3]["model"], "claude-sonnet-4.5");
}

#[test]
fn the_api_keys_beside_the_database_are_never_shown() {
    let home = write();
    let out = render(&home);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&home, SECRET, &[]);
}

#[test]
fn llm_user_path_moves_the_store_and_doctor_names_it() {
    let home = write();
    let text = stdout(&home.sessfs(&["doctor"]));
    assert!(text.contains(&format!("{:<9} 4 sessions", "llm")), "{text}");
    assert!(text.contains("io.datasette.llm/logs.db"), "{text}");
    let moved = home.path().join("elsewhere");
    std::fs::create_dir_all(&moved).expect("dir");
    std::fs::rename(home.path().join(DB), moved.join("logs.db")).expect("move");
    let o = home
        .command(&["doctor"])
        .env("LLM_USER_PATH", &moved)
        .output()
        .expect("doctor");
    assert!(
        stdout(&o).contains(&format!("{:<9} 4 sessions", "llm")),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_truncated_database_is_named_by_doctor_and_render_still_succeeds() {
    let home = write();
    let db = home.path().join(DB);
    let bytes = std::fs::read(&db).expect("db");
    // Only the header page and a little more: not a readable database.
    std::fs::write(&db, &bytes[..bytes.len().min(1500)]).expect("truncate");
    let _ = std::fs::remove_file(home.path().join(format!("{DB}-wal")));
    let out = render(&home);
    assert!(!out.tree.join(dir(A)).exists());
    let text = stdout(&home.sessfs(&["doctor"]));
    assert!(text.contains("logs.db:"), "{text}");
}

#[test]
fn mounted_database_sizes_erofs_and_store_untouched() {
    let home = write();
    stores::mounted_untouched(&home, Home::snapshot, |m| {
        check_tree(m.path());
        stores::assert_mount_read_only(m, &["llm"], 12, SECRET, &dir(A));
    });
}

/// LLM logs each response as it finishes (WAL): a new one shows within a second, and only
/// appends to the transcript.
#[test]
fn a_new_response_shows_within_a_second_and_only_appends() {
    let home = write();
    let m = Mount::new(&home, &[]);
    let t = m.path().join(format!("{}/transcript.md", dir(A)));
    let before = std::fs::read_to_string(&t).expect("transcript");
    let c = Connection::open(home.path().join(DB)).expect("db");
    response(
        &c,
        ("01jalpha0r3", Some(A)),
        "Alpha fresh prompt after the mount",
        "Alpha system prompt",
        "Alpha fresh reply",
        "2026-05-01T11:00:00.000000+00:00",
        (5, 5),
    );
    stores::assert_within_a_second("new response", || {
        stores::file_contains(&t, "Alpha fresh reply")
    });
    let after = std::fs::read_to_string(&t).expect("transcript");
    let first = before.find("### ").expect("a message");
    assert!(after[first..].starts_with(&before[first..]), "{after}");
}

/// The bundled samples (`fixtures/home`, written by `scripts/make-samples`): LLM's legacy
/// conversation and 0.32 thread, each line in exactly its session. The lines are the
/// sample's own text, read from the script.
#[test]
fn bundled_sample_shows_the_conversation_and_the_thread() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-llm-samples")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let conv = "llm/01k3demo0legacy0conversation";
    stores::assert_session_holds(
        &tree,
        conv,
        &[
            "You are a terse shell helper.",
            "Project layout: src/ holds the code.",
            "There are 14 Python files.",
        ],
        &[] as &[&str],
    );
    let thread = "llm/01k3demo0thread0message0store";
    stores::assert_session_holds(
        &tree,
        thread,
        &[
            "Reading the file answers this.",
            "There is no README.md to check.",
        ],
        &["FileNotFoundError: README.md"],
    );
    assert_eq!(
        meta(&tree, conv)["title"],
        "How many Python files are there?"
    );
    assert_eq!(stores::tokens(&meta(&tree, thread)["cost"]).0, Some(890));
}
