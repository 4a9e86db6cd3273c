//! Gemini CLI and Copilot CLI shapes that real stores hold and sessfs once lost, each written
//! here by hand as the agent writes it, and checked through `sessfs list --json` and
//! `sessfs render` (no FUSE needed) against what the test wrote.
//!
//! - Gemini legacy subagent chats (`chats/<parent id>/<agent id>.json`, `kind: "subagent"`)
//!   and a folder no chat names (the memory service's `chats/skill-extraction-<id>/`).
//! - Two Gemini chats with one `sessionId` (the A2A server's `a2a-server`): a header-only
//!   file and one whose conversation is a `$set.messages` checkpoint.
//! - A Copilot session whose last CLI process wrote no `session.shutdown`.
//! - Records neither parser can read: a counted warning each, and their text in the session.

mod common;

use common::{stderr, Home};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write native file");
}

/// One JSON value per line, as Gemini CLI and Copilot CLI append records.
fn jsonl(records: &[Value]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}

fn list(home: &Home, agent: &str) -> Vec<Value> {
    let out = home.sessfs(&["list", agent, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("list --json parses")
}

/// `sessfs render` of the home into a fresh directory.
fn render(home: &Home) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("tree");
    let o = home.sessfs(&["render", out.to_str().expect("utf-8 path")]);
    assert!(o.status.success(), "{}", stderr(&o));
    (dir, out)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn ids(sessions: &[Value]) -> BTreeSet<String> {
    sessions
        .iter()
        .map(|s| s["sessionId"].as_str().expect("sessionId").to_string())
        .collect()
}

fn legacy_chat(id: &str, kind: &str, prompt: &str, reply: &str) -> String {
    serde_json::to_string_pretty(&json!({
        "sessionId": id,
        "projectHash": "0f0e",
        "startTime": "2026-04-16T22:40:00.000Z",
        "lastUpdated": "2026-04-16T22:41:00.000Z",
        "kind": kind,
        "messages": [
            {"id": format!("{id}-u"), "timestamp": "2026-04-16T22:40:00.000Z", "type": "user",
             "content": [{"text": prompt}]},
            {"id": format!("{id}-g"), "timestamp": "2026-04-16T22:41:00.000Z", "type": "gemini",
             "content": reply, "model": "gemini-2.5-pro",
             "tokens": {"input": 100, "output": 10, "cached": 0, "thoughts": 0, "total": 110}}
        ]
    }))
    .expect("json")
}

const MAIN: &str = "b1f0c0de-4b57-4337-8bc5-ac73580f752a";

#[test]
fn gemini_legacy_subagent_chats_and_a_folder_naming_no_chat_are_visible() {
    let home = Home::empty();
    let chats = home.path().join(".gemini/tmp/vault/chats");
    put(
        &chats.join("session-2026-04-16T22-38-b1f0c0de.json"),
        &legacy_chat(MAIN, "main", "MAIN-PROMPT-QUARTZ", "MAIN-REPLY-QUARTZ"),
    );
    // Subagents of that chat, in the folder named by its full id: two legacy documents and a
    // JSONL chat (Gemini CLI wrote `.json` before 2026-04-09, `.jsonl` after).
    put(
        &chats.join(MAIN).join("tl63m8.json"),
        &legacy_chat("tl63m8", "subagent", "SUB-PROMPT-OPAL", "SUB-REPLY-OPAL"),
    );
    put(
        &chats.join(MAIN).join("xs82vp.json"),
        &legacy_chat("xs82vp", "subagent", "SUB-PROMPT-JADE", "SUB-REPLY-JADE"),
    );
    put(
        &chats.join(MAIN).join("qq11rr.jsonl"),
        &jsonl(&[
            json!({"sessionId": "qq11rr", "projectHash": "0f0e", "kind": "subagent",
                   "startTime": "2026-04-16T22:50:00.000Z"}),
            json!({"id": "q1", "type": "user", "content": "SUB-PROMPT-ONYX"}),
            json!({"id": "q2", "type": "gemini", "content": "SUB-REPLY-ONYX"}),
        ]),
    );
    // The memory service's skill-extraction agent: its parent is a prompt id, never a chat.
    put(
        &chats.join("skill-extraction-3c4d8e0f").join("iy6d1l.json"),
        &legacy_chat(
            "iy6d1l",
            "subagent",
            "SKILL-PROMPT-BERYL",
            "SKILL-REPLY-BERYL",
        ),
    );

    let sessions = list(&home, "gemini");
    assert_eq!(
        ids(&sessions),
        BTreeSet::from([MAIN.to_string(), "skill-extraction-3c4d8e0f".to_string()]),
        "every chat is a session or a subagent, and subagents are not top-level"
    );

    let (_keep, tree) = render(&home);
    let main = tree.join("gemini").join(MAIN);
    for (sub, texts) in [
        ("tl63m8", ["SUB-PROMPT-OPAL", "SUB-REPLY-OPAL"]),
        ("xs82vp", ["SUB-PROMPT-JADE", "SUB-REPLY-JADE"]),
        ("qq11rr", ["SUB-PROMPT-ONYX", "SUB-REPLY-ONYX"]),
    ] {
        let t = read(&main.join("subagents").join(sub).join("transcript.md"));
        for text in texts {
            assert!(t.contains(text), "{sub}: {text} missing");
        }
    }
    assert!(read(&main.join("transcript.md")).contains("MAIN-REPLY-QUARTZ"));

    let folder = tree.join("gemini/skill-extraction-3c4d8e0f");
    let t = read(&folder.join("subagents/iy6d1l/transcript.md"));
    assert!(t.contains("SKILL-PROMPT-BERYL") && t.contains("SKILL-REPLY-BERYL"));
    let meta: Value = serde_json::from_str(&read(&folder.join("meta.json"))).expect("meta");
    assert_eq!(meta["orphaned"], true);
    assert!(read(&folder.join("transcript.md")).contains("subagents/iy6d1l/"));
}

#[test]
fn two_gemini_chats_with_one_session_id_are_both_visible_and_the_conversation_keeps_the_id() {
    let home = Home::empty();
    let chats = home.path().join(".gemini/tmp/server/chats");
    let header = |start: &str| {
        json!({"sessionId": "a2a-server", "projectHash": "a2a0", "startTime": start,
               "lastUpdated": start, "kind": "main"})
    };
    // Sorts first: the header alone.
    put(
        &chats.join("session-2026-05-19T06-06-a2a-serv.jsonl"),
        &jsonl(&[header("2026-05-19T06:06:00.000Z")]),
    );
    // The conversation, written as one checkpoint.
    put(
        &chats.join("session-2026-07-05T12-27-a2a-serv.jsonl"),
        &jsonl(&[
            header("2026-07-05T12:27:00.000Z"),
            json!({"$set": {"messages": [
                {"id": "m1", "timestamp": "2026-07-05T12:27:01.000Z", "type": "user",
                 "content": [{"text": "A2A-CHECKPOINT-PROMPT"}]},
                {"id": "m2", "timestamp": "2026-07-05T12:27:09.000Z", "type": "gemini",
                 "content": "A2A-CHECKPOINT-REPLY"}
            ]}}),
        ]),
    );

    let sessions = list(&home, "gemini");
    assert_eq!(
        ids(&sessions),
        BTreeSet::from([
            "a2a-server".to_string(),
            "a2a-server@2026-05-19T06-06".to_string()
        ])
    );
    let (_keep, tree) = render(&home);
    let t = read(&tree.join("gemini/a2a-server/transcript.md"));
    assert!(t.contains("A2A-CHECKPOINT-PROMPT") && t.contains("A2A-CHECKPOINT-REPLY"));
    let other = read(&tree.join("gemini/a2a-server@2026-05-19T06-06/transcript.md"));
    assert!(!other.contains("A2A-CHECKPOINT"));
}

fn event(ty: &str, n: usize, data: Value) -> Value {
    json!({"type": ty, "data": data, "id": format!("e{n}"),
           "timestamp": format!("2026-04-06T08:{:02}:00.000Z", n % 60),
           "parentId": if n == 0 { Value::Null } else { json!(format!("e{}", n - 1)) }})
}

fn reply(n: usize, text: &str, out: u64) -> Value {
    event(
        "assistant.message",
        n,
        json!({"messageId": format!("m{n}"), "content": text, "toolRequests": [],
               "outputTokens": out}),
    )
}

fn shutdown(n: usize, input: u64, output: u64, cache_read: u64) -> Value {
    event(
        "session.shutdown",
        n,
        json!({"shutdownType": "routine", "totalPremiumRequests": 1,
               "modelMetrics": {"gpt-5.4-mini": {"requests": {"count": 1, "cost": 1},
                   "usage": {"inputTokens": input, "outputTokens": output,
                             "cacheReadTokens": cache_read, "cacheWriteTokens": 0}}}}),
    )
}

#[test]
fn copilot_usage_without_a_shutdown_comes_from_the_replies_and_is_never_counted_twice() {
    let home = Home::empty();
    let state = home.path().join(".copilot/session-state");
    let start = |n| {
        event(
            "session.start",
            n,
            json!({"sessionId": "x", "version": 1, "selectedModel": "gpt-5.4-mini",
                   "startTime": "2026-04-06T08:00:00.000Z"}),
        )
    };
    let prompt = |n, text: &str| event("user.message", n, json!({"content": text}));
    // A process that exited (its shutdown sums its replies: 150 output tokens, not the 120
    // its one reply says plus 150), then a resumed process that was killed: 70 + 30.
    put(
        &state.join("c0ffee00-0000-4000-8000-000000000001/events.jsonl"),
        &jsonl(&[
            start(0),
            prompt(1, "first run"),
            reply(2, "first reply", 120),
            shutdown(3, 1000, 150, 200),
            event("session.resume", 4, json!({"eventCount": 4})),
            prompt(5, "second run"),
            reply(6, "second reply", 70),
            reply(7, "third reply", 30),
        ]),
    );
    // Still running: no shutdown at all.
    put(
        &state.join("c0ffee00-0000-4000-8000-000000000002/events.jsonl"),
        &jsonl(&[
            start(0),
            prompt(1, "only run"),
            reply(2, "a", 40),
            reply(3, "b", 60),
        ]),
    );
    // Exited cleanly: the shutdown alone.
    put(
        &state.join("c0ffee00-0000-4000-8000-000000000003/events.jsonl"),
        &jsonl(&[
            start(0),
            prompt(1, "clean run"),
            reply(2, "c", 25),
            shutdown(3, 500, 25, 100),
        ]),
    );

    // (input without cache reads, output, cache reads), from the events written above.
    let want = [
        ("c0ffee00-0000-4000-8000-000000000001", (800, 250, 200)),
        ("c0ffee00-0000-4000-8000-000000000002", (0, 100, 0)),
        ("c0ffee00-0000-4000-8000-000000000003", (400, 25, 100)),
    ];
    let sessions = list(&home, "copilot");
    for (id, (input, output, cached)) in want {
        let s = sessions
            .iter()
            .find(|s| s["sessionId"] == id)
            .unwrap_or_else(|| panic!("{id} not listed"));
        let c = &s["cost"];
        assert_eq!(
            (&c["inputTokens"], &c["outputTokens"], &c["cacheReadTokens"]),
            (&json!(input), &json!(output), &json!(cached)),
            "{id}"
        );
    }
}

#[test]
fn records_that_cannot_be_read_are_counted_in_warnings_and_stay_visible() {
    let home = Home::empty();
    let chats = home.path().join(".gemini/tmp/broken/chats");
    // No JSON at all in the middle, and a last line still being written (shown once whole).
    let mut lines = jsonl(&[
        json!({"sessionId": "dd00aa11-0000-4000-8000-000000000001", "projectHash": "p",
                   "startTime": "2026-05-01T10:00:00.000Z", "kind": "main"}),
        json!({"id": "u1", "type": "user", "content": "READABLE-PROMPT-GARNET"}),
        // A reply whose tokens are not an object, a message of a type from the future,
        // and a record of no known shape.
        json!({"id": "g1", "type": "gemini", "content": "TOKENS-ODD-GARNET", "tokens": "lots"}),
        json!({"id": "z1", "type": "hologram", "content": "HOLOGRAM-GARNET"}),
        json!({"id": "z2", "type": "hologram", "content": "HOLOGRAM-TWO-GARNET"}),
        json!({"$future": "SHAPELESS-GARNET"}),
        json!({"id": "g2", "type": "gemini", "content": "READABLE-REPLY-GARNET"}),
    ]);
    lines.insert_str(
        lines.find("{\"id\":\"g2\"").expect("g2 line"),
        "JUNK-LINE-GARNET {\n",
    );
    lines.push_str(r#"{"id":"g3","type":"gemini","content":"PARTIAL-TAIL-GAR"#);
    put(
        &chats.join("session-2026-05-01T10-00-dd00aa11.jsonl"),
        &lines,
    );
    // A legacy document with one message that cannot be read among readable ones.
    put(
        &chats.join("session-2026-03-01T10-00-ee00bb22.json"),
        &serde_json::to_string_pretty(&json!({
            "sessionId": "ee00bb22-0000-4000-8000-000000000001", "projectHash": "p",
            "startTime": "2026-03-01T10:00:00.000Z", "lastUpdated": "2026-03-01T10:05:00.000Z",
            "messages": [
                {"id": "a", "type": "user", "content": "LEGACY-PROMPT-TOPAZ"},
                {"id": "b", "type": "gemini", "content": "LEGACY-BROKEN-TOPAZ", "toolCalls": "oops"},
                {"id": "c", "type": "gemini", "content": "LEGACY-REPLY-TOPAZ"}
            ]
        }))
        .expect("json"),
    );
    let state = home.path().join(".copilot/session-state");
    put(
        &state.join("c0ffee00-0000-4000-8000-0000000000aa/events.jsonl"),
        &jsonl(&[
            event("session.start", 0, json!({"sessionId": "x", "version": 1})),
            event(
                "user.message",
                1,
                json!({"content": "COPILOT-PROMPT-AMBER"}),
            ),
            event(
                "user.message",
                2,
                json!({"content": ["COPILOT-ARRAY-AMBER"]}),
            ),
            event(
                "session.future_thing",
                3,
                json!({"note": "FUTURE-EVENT-AMBER"}),
            ),
            json!(["COPILOT-BARE-ARRAY-AMBER"]),
            json!("JUNK-EVENT-AMBER"),
            event("assistant.turn_start", 4, json!({"turnId": "0"})),
            reply(5, "COPILOT-REPLY-AMBER", 5),
        ])
        // A line that is no JSON at all.
        .replace("\"JUNK-EVENT-AMBER\"\n", "JUNK-EVENT-AMBER {\n"),
    );

    let (_keep, tree) = render(&home);
    // (session directory, texts that must show in transcript.md, texts of lines that hold no
    // JSON at all, which unparsed.txt keeps, kinds of problem: one counted warning each, plus
    // the one pointing at unparsed.txt)
    let cases = [
        (
            "gemini/dd00aa11-0000-4000-8000-000000000001",
            vec![
                "READABLE-PROMPT-GARNET",
                "TOKENS-ODD-GARNET",
                "HOLOGRAM-GARNET",
                "HOLOGRAM-TWO-GARNET",
                "SHAPELESS-GARNET",
                "READABLE-REPLY-GARNET",
            ],
            vec!["JUNK-LINE-GARNET"],
            6,
        ),
        (
            "gemini/ee00bb22-0000-4000-8000-000000000001",
            vec![
                "LEGACY-PROMPT-TOPAZ",
                "LEGACY-BROKEN-TOPAZ",
                "LEGACY-REPLY-TOPAZ",
            ],
            vec![],
            1,
        ),
        (
            "copilot/c0ffee00-0000-4000-8000-0000000000aa",
            vec![
                "COPILOT-PROMPT-AMBER",
                "COPILOT-ARRAY-AMBER",
                "FUTURE-EVENT-AMBER",
                "COPILOT-BARE-ARRAY-AMBER",
                "COPILOT-REPLY-AMBER",
            ],
            vec!["JUNK-EVENT-AMBER"],
            5,
        ),
    ];
    for (dir, texts, unread, warnings) in cases {
        let t = read(&tree.join(dir).join("transcript.md"));
        for text in texts {
            assert!(t.contains(text), "{dir}: {text} is not in transcript.md");
        }
        for text in unread {
            let u = read(&tree.join(dir).join("unparsed.txt"));
            assert!(u.contains(text), "{dir}: {text} is not in unparsed.txt");
        }
        assert!(
            !t.contains("PARTIAL-TAIL"),
            "{dir}: a line still being written shows"
        );
        let meta: Value =
            serde_json::from_str(&read(&tree.join(dir).join("meta.json"))).expect("meta");
        let w = meta["warnings"].as_array().expect("warnings");
        assert_eq!(w.len(), warnings, "{dir}: {w:?}");
        if dir.starts_with("gemini/dd00") {
            // Both holograms are one kind of problem, counted.
            assert!(
                w.iter().any(|w| w
                    .as_str()
                    .is_some_and(|w| w.starts_with("2 records could not be parsed"))),
                "{w:?}"
            );
        }
    }
}
