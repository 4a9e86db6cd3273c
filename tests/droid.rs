//! Factory Droid: a `~/.factory/sessions` written here as Droid lays it out (per-cwd
//! directories, `<id>.jsonl` beside `<id>.settings.json`, a subagent's own session, a
//! header-only session, a damaged line), with credentials beside it; rendered with
//! `sessfs render` and mounted once. Every expected value is the writer's own record below.

mod common;

use common::stores::{self, meta, put, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A credential-shaped string planted in Droid's config, auth and a session's settings.
const SECRET: &str = "fk-PLANTEDdroidSECRETdoNotRead000000000000";

const A: &str = "0d0d0d0d-1111-4aaa-8aaa-000000000001";
/// A's subagent, a session of its own in the same directory.
const B: &str = "0d0d0d0d-2222-4bbb-8bbb-000000000002";
const C: &str = "0d0d0d0d-3333-4ccc-8ccc-000000000003";
/// Header only: Droid wrote the session before its first prompt.
const D: &str = "0d0d0d0d-4444-4ddd-8ddd-000000000004";

const ALPHA: &str = ".factory/sessions/-home-dev-alpha";
const CHARLIE: &str = ".factory/sessions/-home-dev-charlie-proj";

/// What the writer put in one session.
#[derive(Default)]
struct Written {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
    /// input, output, cache reads, cache writes, USD (at claude-sonnet-4's list price:
    /// 3, 15, 0.3 and 3.75 USD per million tokens; thinking billed as output).
    usage: (u64, u64, u64, u64, f64),
}

fn jsonl(v: &[Value]) -> String {
    v.iter().map(|x| format!("{x}\n")).collect()
}

fn header(id: &str, title: &str, cwd: &str) -> Value {
    json!({"type": "session_start", "id": id, "title": title, "sessionTitle": title,
           "owner": "dev", "version": 2, "cwd": cwd, "hostId": "host-1",
           "isSessionTitleManuallySet": false})
}

fn msg(id: &str, parent: Option<&str>, ts: &str, role: &str, content: Value) -> Value {
    json!({"type": "message", "id": id, "parentId": parent, "timestamp": ts,
           "message": {"role": role, "content": content}})
}

fn settings(model: &str, u: (u64, u64, u64, u64, u64)) -> String {
    json!({"assistantActiveTimeMs": 1234, "model": model, "reasoningEffort": "high",
           "interactionMode": "auto", "autonomyLevel": "medium", "autonomyMode": "normal",
           "providerLock": "anthropic", "apiProviderLock": SECRET,
           "tokenUsage": {"inputTokens": u.0, "outputTokens": u.1, "cacheReadTokens": u.2,
                          "cacheCreationTokens": u.3, "thinkingTokens": u.4,
                          "factoryCredits": 99},
           // The session with its subagents: never counted.
           "inclusiveTokenUsage": {"inputTokens": 777_777, "outputTokens": 777_777}})
    .to_string()
}

fn write() -> (Home, Vec<Written>) {
    let home = Home::empty();
    let h = home.path();
    let mut out = Vec::new();
    let model = "claude-sonnet-4-5-20250929";

    // --- A: context, a prompt, thinking, two tool calls (one a Task), results as text and
    // as blocks, a reminder, todo list, compaction, turn outcomes.
    put(
        h,
        &format!("{ALPHA}/{A}.jsonl"),
        jsonl(&[
            header(A, "Alpha: fix the parser", "/home/dev/alpha"),
            json!({"type": "message", "id": format!("context-{A}"), "timestamp": "2026-05-01T10:00:00.000Z",
                   "message": {"role": "user", "visibility": "llm_only",
                               "content": [{"type": "text", "text": "<environment>Alpha injected context</environment>"}]}}),
            msg(
                "a1",
                None,
                "2026-05-01T10:00:01.000Z",
                "user",
                json!([{"type": "text", "text": "Alpha prompt: fix the parser"},
                       {"type": "text", "text": "<system-reminder>Alpha reminder text</system-reminder>"}]),
            ),
            msg(
                "a2",
                Some("a1"),
                "2026-05-01T10:00:05.000Z",
                "assistant",
                json!([{"type": "thinking", "thinking": "Alpha thinking: run the tests first.", "signature": "c2ln"},
                       {"type": "text", "text": "Alpha reply: running the tests."},
                       {"type": "tool_use", "id": "toolu_a1", "name": "Execute", "input": {"command": "cargo test"}},
                       {"type": "tool_use", "id": "toolu_task", "name": "Task",
                        "input": {"subagent_type": "worker", "description": "Alpha subtask: read the grammar", "prompt": "Read it"}}]),
            ),
            msg(
                "a3",
                Some("a2"),
                "2026-05-01T10:00:30.000Z",
                "user",
                json!([{"type": "tool_result", "tool_use_id": "toolu_a1", "content": "alpha-output: 3 tests failed", "is_error": true},
                       {"type": "tool_result", "tool_use_id": "toolu_task",
                        "content": [{"type": "text", "text": "alpha-task-output: the grammar is LL(1)"}]}]),
            ),
            msg(
                "a4",
                Some("a3"),
                "2026-05-01T10:00:40.000Z",
                "assistant",
                json!([{"type": "text", "text": "Alpha reply two: fixed."}]),
            ),
            json!({"type": "agent_turn_outcome", "turnId": "t1", "reason": "completed", "resultKind": "text"}),
            json!({"type": "todo_state", "id": "td1", "timestamp": "2026-05-01T10:00:41.000Z",
                   "todos": {"todos": "1. [completed] Alpha todo: fix the parser"}, "messageIndex": 4}),
            json!({"type": "compaction_state", "id": "cs1", "timestamp": "2026-05-01T10:01:00.000Z",
                   "summaryText": "Alpha summary: the parser was fixed.", "summaryTokens": 12,
                   "summaryKind": "auto", "anchorMessage": "a4", "removedCount": 4}),
            msg(
                "a5",
                Some("a4"),
                "2026-05-01T10:02:00.000Z",
                "user",
                json!("Alpha second prompt: and the docs?"),
            ),
            json!({"type": "agent_turn_outcome", "turnId": "t2", "reason": "cancelled", "resultKind": "none"}),
        ]),
    );
    put(
        h,
        &format!("{ALPHA}/{A}.settings.json"),
        settings(model, (1000, 200, 5000, 300, 50)),
    );
    out.push(Written {
        dir: format!("droid/{A}"),
        lines: vec![
            "Alpha injected context",
            "Alpha prompt: fix the parser",
            "Alpha reminder text",
            "Alpha thinking: run the tests first.",
            "Alpha reply: running the tests.",
            "Alpha reply two: fixed.",
            "Alpha todo: fix the parser",
            "Alpha summary: the parser was fixed.",
            "Alpha second prompt: and the docs?",
        ],
        outputs: vec![
            "alpha-output: 3 tests failed",
            "alpha-task-output: the grammar is LL(1)",
        ],
        // 1000*3 + (200+50)*15 + 5000*0.3 + 300*3.75 = 9375 micro-USD.
        usage: (1000, 200, 5000, 300, 0.009375),
    });

    // --- B: A's subagent, in its own file beside A.
    let mut hb = header(
        B,
        "# Task Tool Invocation\nSubagent type: worker",
        "/home/dev/alpha",
    );
    hb["callingSessionId"] = json!(A);
    hb["callingToolUseId"] = json!("toolu_task");
    put(
        h,
        &format!("{ALPHA}/{B}.jsonl"),
        jsonl(&[
            hb,
            msg(
                "b1",
                None,
                "2026-05-01T10:00:06.000Z",
                "user",
                json!([{"type": "text", "text": "Bravo subagent prompt: read the grammar"}]),
            ),
            msg(
                "b2",
                Some("b1"),
                "2026-05-01T10:00:07.000Z",
                "assistant",
                json!([{"type": "tool_use", "id": "toolu_b1", "name": "Read", "input": {"file_path": "grammar.txt"}}]),
            ),
            msg(
                "b3",
                Some("b2"),
                "2026-05-01T10:00:08.000Z",
                "user",
                json!([{"type": "tool_result", "tool_use_id": "toolu_b1", "content": "bravo-output: S -> a S | b"}]),
            ),
            msg(
                "b4",
                Some("b3"),
                "2026-05-01T10:00:09.000Z",
                "assistant",
                json!([{"type": "text", "text": "Bravo reply: the grammar is LL(1)."}]),
            ),
        ]),
    );
    put(
        h,
        &format!("{ALPHA}/{B}.settings.json"),
        settings(model, (100, 40, 0, 0, 0)),
    );
    out.push(Written {
        dir: format!("droid/{B}"),
        lines: vec![
            "Bravo subagent prompt: read the grammar",
            "Bravo reply: the grammar is LL(1).",
        ],
        outputs: vec!["bravo-output: S -> a S | b"],
        usage: (100, 40, 0, 0, 0.0009),
    });

    // --- C: placeholder title, an image, a record type and a block type this reader
    // does not know, a line that is not JSON, no settings file.
    put(
        h,
        &format!("{CHARLIE}/{C}.jsonl"),
        format!(
            "{}{}\n{}",
            jsonl(&[
                header(C, "New Session", "/home/dev/charlie-proj"),
                msg(
                    "c1",
                    None,
                    "2026-05-02T09:00:00.000Z",
                    "user",
                    json!([{"type": "text", "text": "Charlie prompt: what is in this picture?"},
                           {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAAAAAA"}}])
                ),
                msg(
                    "c2",
                    Some("c1"),
                    "2026-05-02T09:00:02.000Z",
                    "assistant",
                    json!([{"type": "text", "text": "Charlie reply: a square."},
                           {"type": "hologram", "note": "Charlie hologram block"}])
                ),
                json!({"type": "weather_report", "id": "w1", "note": "Charlie unknown record"}),
            ]),
            "{\"type\":\"message\",\"id\":\"c3\", Charlie broken line",
            jsonl(&[msg(
                "c4",
                Some("c2"),
                "2026-05-02T09:01:00.000Z",
                "user",
                json!([{"type": "text", "text": "Charlie prompt after the damage"}])
            )]),
        ),
    );
    out.push(Written {
        dir: format!("droid/{C}"),
        lines: vec![
            "Charlie prompt: what is in this picture?",
            "Charlie reply: a square.",
            "Charlie hologram block",
            "Charlie unknown record",
            "Charlie broken line",
            "Charlie prompt after the damage",
        ],
        ..Written::default()
    });

    // --- D: a header and nothing else.
    put(
        h,
        &format!("{CHARLIE}/{D}.jsonl"),
        jsonl(&[header(D, "New Session", "/home/dev/charlie-proj")]),
    );
    put(
        h,
        &format!("{CHARLIE}/{D}.settings.json"),
        settings(model, (0, 0, 0, 0, 0)),
    );

    // Beside the sessions: Droid's own config and credentials.
    put(
        h,
        ".factory/settings.json",
        json!({"apiKey": SECRET}).to_string(),
    );
    put(
        h,
        ".factory/auth.json",
        json!({"access_token": SECRET}).to_string(),
    );
    put(
        h,
        ".factory/mcp.json",
        json!({"mcpServers": {"x": {"env": {"TOKEN": SECRET}}}}).to_string(),
    );

    let mut home = home;
    home.files = common::files_under(home.path());
    (home, out)
}

fn render(home: &Home) -> Rendered {
    stores::render(home, "sessfs-droid", &[])
}

fn check_tree(tree: &Path, written: &[Written]) {
    for w in written {
        stores::assert_session_holds(tree, &w.dir, &w.lines, &w.outputs);
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let (home, written) = write();
    let out = render(&home);
    check_tree(&out.tree, &written);
    assert_eq!(stores::entries(&out.tree, "droid"), 4);
}

#[test]
fn usage_is_the_settings_total_counted_once_per_session() {
    let (home, written) = write();
    let out = render(&home);
    for w in written.iter().filter(|w| w.usage.0 > 0) {
        stores::assert_cost(&out.tree, &w.dir, w.usage);
    }
    let c = &meta(&out.tree, &format!("droid/{C}"))["cost"];
    assert_eq!(stores::tokens(c).0.unwrap_or(0), 0, "{c}");
}

#[test]
fn titles_cwd_model_and_the_subagent_link_come_from_the_files() {
    let (home, _) = write();
    let out = render(&home);
    let t = &out.tree;
    let a = meta(t, &format!("droid/{A}"));
    assert_eq!(a["title"], "Alpha: fix the parser");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(a["createdAt"], "2026-05-01T10:00:00.000Z");
    let subs = a["subagents"].to_string();
    assert!(subs.contains(B) && subs.contains("toolu_task"), "{subs}");
    let b = meta(t, &format!("droid/{B}"));
    assert_eq!(b["parent"], format!("droid:{A}"));
    let c = meta(t, &format!("droid/{C}"));
    assert_eq!(c["title"], "Charlie prompt: what is in this picture?");
    let warnings = c["warnings"].to_string();
    assert!(
        warnings.contains("unknown block type hologram"),
        "{warnings}"
    );
    assert!(
        warnings.contains("record type weather_report"),
        "{warnings}"
    );
    let transcript =
        std::fs::read_to_string(t.join(format!("droid/{C}/transcript.md"))).expect("transcript");
    assert!(
        transcript.contains("[image: image/png, 6 B]"),
        "{transcript}"
    );
    assert!(!transcript.contains("AAAAAAAA"), "{transcript}");
    assert_eq!(meta(t, &format!("droid/{D}"))["title"], "New Session");
}

#[test]
fn credentials_and_settings_keys_beside_the_sessions_are_never_shown() {
    let (home, _) = write();
    let out = render(&home);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_nowhere(&out.tree, "777777");
    stores::assert_list_hides(&home, SECRET, &[]);
}

#[test]
fn doctor_names_droid_and_its_sessions() {
    let (home, _) = write();
    let text = stdout(&home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 4 sessions", "droid")),
        "{text}"
    );
    assert!(text.contains(".factory/sessions"), "{text}");
}

#[test]
fn mounted_sessions_grep_sizes_erofs_and_store_untouched() {
    let (home, written) = write();
    stores::mounted_untouched(&home, Home::snapshot, |m| {
        check_tree(m.path(), &written);
        stores::assert_mount_read_only(m, &["droid"], 12, SECRET, &format!("droid/{A}"));
    });
}

/// Droid appends to a session file while it runs and creates one per session: both show
/// through the mount within a second.
#[test]
fn an_appended_message_and_a_new_session_show_within_a_second() {
    let (home, _) = write();
    let m = Mount::new(&home, &[]);
    let session = m.path().join(format!("droid/{A}/transcript.md"));
    assert!(stores::file_contains(&session, "Alpha reply two"));
    let file = home.path().join(ALPHA).join(format!("{A}.jsonl"));
    let mut text = std::fs::read_to_string(&file).expect("read");
    text.push_str(&jsonl(&[msg(
        "a6",
        Some("a5"),
        "2026-05-01T11:00:00.000Z",
        "assistant",
        json!([{"type": "text", "text": "Alpha reply after the mount"}]),
    )]));
    std::fs::write(&file, text).expect("append");
    stores::assert_within_a_second("appended message", || {
        stores::file_contains(&session, "Alpha reply after the mount")
    });
    let e = "0d0d0d0d-5555-4eee-8eee-000000000005";
    put(
        home.path(),
        &format!("{ALPHA}/{e}.jsonl"),
        jsonl(&[
            header(e, "Echo", "/home/dev/alpha"),
            msg(
                "e1",
                None,
                "2026-05-03T00:00:00.000Z",
                "user",
                json!([{"type": "text", "text": "Echo: a session started after the mount"}]),
            ),
        ]),
    );
    stores::assert_within_a_second("new session", || {
        stores::file_contains(
            &m.path().join(format!("droid/{e}/transcript.md")),
            "Echo: a session",
        )
    });
}

/// Droid session `id` in cwd directory `dir` under `~/.factory/sessions/`, its prompt
/// saying `text`, with its settings beside it: the session file.
fn glance_session(home: &Home, dir: &str, id: &str, text: &str) -> std::path::PathBuf {
    let base = format!(".factory/sessions/{dir}");
    put(
        home.path(),
        &format!("{base}/{id}.settings.json"),
        settings("claude-sonnet-4-5-20250929", (10, 5, 0, 0, 0)),
    );
    put(
        home.path(),
        &format!("{base}/{id}.jsonl"),
        jsonl(&[
            header(id, "Glance", "/home/dev/glance"),
            msg(
                &format!("{id}-u1"),
                None,
                "2026-05-01T10:00:01.000Z",
                "user",
                json!([{"type": "text", "text": text}]),
            ),
        ]),
    );
    home.path().join(format!("{base}/{id}.jsonl"))
}

/// The Droid store's glance: with nothing changed a search lists no store; a message
/// appended to a session, a session in a new cwd directory and a deleted session are each
/// found by the next search.
#[test]
fn droid_changes_are_found_by_the_next_search() {
    use common::{age, logged_search};
    use std::collections::BTreeSet;
    let home = Home::empty();
    let set =
        |ids: &[&str]| -> BTreeSet<String> { ids.iter().map(|id| format!("droid/{id}")).collect() };
    let a = glance_session(&home, "-home-dev-alpha", A, "the droidone question");
    let b = glance_session(&home, "-home-dev-alpha", B, "the droidtwo question");
    let sessions = home.path().join(".factory/sessions");
    for d in [sessions.join("-home-dev-alpha"), sessions.clone()] {
        age(&d, 3600);
    }
    age(&home.path().join(".factory"), 3600);
    assert_eq!(logged_search(&home, "droidone"), (set(&[A]), false));
    assert_eq!(logged_search(&home, "droidtwo"), (set(&[B]), true));
    // An appended message: no directory moves, the session file grows.
    let line = msg(
        &format!("{A}-u2"),
        Some(&format!("{A}-u1")),
        "2026-05-01T10:00:02.000Z",
        "user",
        json!([{"type": "text", "text": "an appendeddroid answer"}]),
    );
    let mut f = std::fs::OpenOptions::new().append(true).open(&a).unwrap();
    std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).unwrap();
    drop(f);
    assert_eq!(logged_search(&home, "appendeddroid").0, set(&[A]));
    assert_eq!(logged_search(&home, "appendeddroid"), (set(&[A]), true));
    // A session in a new cwd directory: only `sessions/` moves.
    glance_session(
        &home,
        "-home-dev-charlie-proj",
        C,
        "the droidthree question",
    );
    age(&sessions.join("-home-dev-charlie-proj"), 3000);
    age(&sessions, 3000);
    assert_eq!(logged_search(&home, "droidthree").0, set(&[C]));
    assert_eq!(logged_search(&home, "droidthree"), (set(&[C]), true));
    // A deleted session.
    std::fs::remove_file(&b).unwrap();
    age(&sessions.join("-home-dev-alpha"), 2400);
    assert_eq!(logged_search(&home, "droidtwo").0, BTreeSet::new());
    assert_eq!(logged_search(&home, "question"), (set(&[A, C]), true));
}

/// A subagent's file appearing beside its parent, then its head rewritten to name no
/// caller, each alone (the parent's file untouched), shows in the parent's `meta.json`
/// through the mount within a second.
#[test]
fn a_subagent_file_alone_changes_its_parents_links_within_a_second() {
    let (home, _) = write();
    let m = Mount::new(&home, &[]);
    let meta = m.path().join(format!("droid/{A}/meta.json"));
    assert!(stores::file_contains(&meta, B));
    let f = "0d0d0d0d-6666-4fff-8fff-000000000006";
    let mut hf = header(f, "# Task Tool Invocation", "/home/dev/alpha");
    hf["callingSessionId"] = json!(A);
    hf["callingToolUseId"] = json!("toolu_task");
    let first = msg(
        "f1",
        None,
        "2026-05-01T10:00:10.000Z",
        "user",
        json!([{"type": "text", "text": "Foxtrot subagent prompt"}]),
    );
    let file = put(
        home.path(),
        &format!("{ALPHA}/{f}.jsonl"),
        jsonl(&[hf, first.clone()]),
    );
    stores::assert_within_a_second("the new subagent linked", || {
        stores::file_contains(&meta, f)
    });
    // In place, as a rewrite of the head does: the directory keeps its entries.
    std::fs::write(
        &file,
        jsonl(&[header(f, "Foxtrot", "/home/dev/alpha"), first]),
    )
    .expect("rewrite");
    stores::assert_within_a_second("the link gone", || {
        std::fs::read_to_string(&meta).is_ok_and(|t| !t.contains(f))
    });
    assert!(stores::file_contains(&meta, B));
}
