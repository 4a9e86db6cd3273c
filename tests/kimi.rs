//! Kimi CLI: a `~/.kimi` written here as the agent lays it out (context and wire logs,
//! a rotated context, an old-style subagent context, a legacy context file, `kimi.json`,
//! credentials beside them), rendered and mounted. Expected values are the writer's own
//! record below; work-directory hashes come from the system `md5sum`.

mod common;

use common::stores::{self, meta, put, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// A credential-shaped string planted in the config and credentials files.
const SECRET: &str = "sk-kimi-PLANTEDkimiSECRETdoNotRead00000000";

const A: &str = "6f0c8e52-1111-4aaa-8bbb-000000000001";
const B: &str = "6f0c8e52-2222-4aaa-8bbb-000000000002";

fn md5(s: &str) -> String {
    let mut c = Command::new("md5sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("md5sum");
    use std::io::Write;
    c.stdin
        .take()
        .expect("stdin")
        .write_all(s.as_bytes())
        .expect("write");
    let o = c.wait_with_output().expect("md5sum");
    stdout(&o)
        .split_whitespace()
        .next()
        .expect("hash")
        .to_string()
}

fn jsonl(v: &[Value]) -> String {
    v.iter().map(|x| format!("{x}\n")).collect()
}

fn ev(ts: f64, ty: &str, payload: Value) -> Value {
    json!({"timestamp": ts, "message": {"type": ty, "payload": payload}})
}

fn usage(id: &str, i: u64, o: u64, cr: u64, cw: u64) -> Value {
    json!({"context_tokens": 1, "token_usage":
        {"input_other": i, "output": o, "input_cache_read": cr, "input_cache_creation": cw},
        "message_id": id})
}

fn write() -> Home {
    let home = Home::empty();
    let h = home.path();
    put(
        h,
        ".kimi/kimi.json",
        json!({"work_dirs": [
            {"path": "/home/dev/alpha", "kaos": "local", "last_session_id": A},
            {"path": "/home/dev/bravo", "kaos": "local", "last_session_id": null}]})
        .to_string(),
    );
    put(h, ".kimi/config.toml", format!("api_key = \"{SECRET}\"\n"));
    put(
        h,
        ".kimi/credentials/kimi-code.json",
        json!({"access_token": SECRET}).to_string(),
    );
    let a = format!(".kimi/sessions/{}/{A}", md5("/home/dev/alpha"));
    put(
        h,
        &format!("{a}/context.jsonl"),
        jsonl(&[
            json!({"role": "_system_prompt", "content": "You are Kimi. Alpha system prompt."}),
            json!({"role": "_checkpoint", "id": 0}),
            json!({"role": "user", "content": "Alpha: fix the loader"}),
            json!({"role": "_checkpoint", "id": 1}),
            json!({"role": "assistant", "content": [
                {"type": "think", "think": "Alpha thinking: look at the loader.", "encrypted": null},
                {"type": "text", "text": "Alpha first: running the tests."}],
              "tool_calls": [{"type": "function", "id": "call_sh",
                "function": {"name": "Shell", "arguments": "{\"command\": \"cargo test\"}"}},
                {"type": "function", "id": "call_task",
                "function": {"name": "Task", "arguments": "{\"description\": \"count widgets\", \"prompt\": \"Sub task: count the widgets\"}"}}]}),
            json!({"role": "_usage", "token_count": 5000}),
            json!({"role": "tool", "content": [{"type": "text", "text": "<system>Command executed successfully.</system>"},
                {"type": "text", "text": "ALPHA-TOOL-OUTPUT loader ok"}], "tool_call_id": "call_sh"}),
            json!({"role": "tool", "content": "SUB-RESULT 42 widgets", "tool_call_id": "call_task"}),
            json!({"role": "_checkpoint", "id": 2}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "Alpha reply: loader fixed."}]}),
            json!({"role": "_usage", "token_count": 6000}),
        ]),
    );
    put(
        h,
        &format!("{a}/wire.jsonl"),
        jsonl(&[
            json!({"type": "metadata", "protocol_version": "1.3"}),
            ev(
                1767000000.0,
                "TurnBegin",
                json!({"user_input": [{"type": "text", "text": "Alpha: fix the loader"}]}),
            ),
            ev(1767000001.0, "StepBegin", json!({"n": 1})),
            ev(
                1767000002.0,
                "ContentPart",
                json!({"type": "think", "think": "Alpha thinking: look at the loader."}),
            ),
            ev(
                1767000002.5,
                "ContentPart",
                json!({"type": "text", "text": "Alpha first: running the tests."}),
            ),
            ev(
                1767000003.0,
                "ToolCall",
                json!({"type": "function", "id": "call_sh", "function": {"name": "Shell", "arguments": "{\"command\": "}}),
            ),
            ev(
                1767000003.1,
                "ToolCallPart",
                json!({"arguments_part": "\"cargo test\"}"}),
            ),
            ev(
                1767000003.2,
                "ToolCall",
                json!({"type": "function", "id": "call_task", "function": {"name": "Task", "arguments": "{}"}}),
            ),
            ev(
                1767000004.0,
                "StatusUpdate",
                usage("msg-a1", 100, 10, 1000, 0),
            ),
            ev(
                1767000005.0,
                "ToolResult",
                json!({"tool_call_id": "call_sh", "return_value": {"is_error": false, "output": "ALPHA-TOOL-OUTPUT loader ok", "message": "Command executed successfully."}}),
            ),
            json!({"timestamp": 1767000006.0, "message": {"type": "SubagentEvent", "payload": {"task_tool_call_id": "call_task",
                "event": {"type": "TurnBegin", "payload": {"user_input": "Sub task: count the widgets"}}}}}),
            json!({"timestamp": 1767000006.5, "message": {"type": "SubagentEvent", "payload": {"task_tool_call_id": "call_task",
                "event": {"type": "StepBegin", "payload": {"n": 1}}}}}),
            json!({"timestamp": 1767000007.0, "message": {"type": "SubagentEvent", "payload": {"task_tool_call_id": "call_task",
                "event": {"type": "ContentPart", "payload": {"type": "text", "text": "Sub reply: 42 widgets found."}}}}}),
            json!({"timestamp": 1767000008.0, "message": {"type": "SubagentEvent", "payload": {"task_tool_call_id": "call_task",
                "event": {"type": "StatusUpdate", "payload": usage("msg-s1", 300, 30, 0, 0)}}}}),
            ev(
                1767000009.0,
                "ToolResult",
                json!({"tool_call_id": "call_task", "return_value": {"is_error": false, "output": "SUB-RESULT 42 widgets"}}),
            ),
            json!({"timestamp": 1767000015.5, "message": {"type": "SubagentEvent", "payload": {
                "parent_tool_call_id": "call_agent", "agent_id": "agent-x1", "subagent_type": "explore",
                "event": {"type": "StatusUpdate", "payload": usage("msg-n1", 70, 7, 0, 0)}}}}),
            ev(1767000010.0, "StepBegin", json!({"n": 2})),
            ev(
                1767000011.0,
                "ContentPart",
                json!({"type": "text", "text": "Alpha reply: loader fixed."}),
            ),
            ev(
                1767000012.0,
                "StatusUpdate",
                usage("msg-a2", 200, 20, 2000, 5),
            ),
            // The same call reported twice: counted once.
            ev(
                1767000012.5,
                "StatusUpdate",
                usage("msg-a2", 200, 20, 2000, 5),
            ),
            ev(1767000013.0, "TurnEnd", json!({})),
            // A turn interrupted before the context kept it: only the wire holds it.
            ev(
                1767000020.0,
                "TurnBegin",
                json!({"user_input": "Alpha: and the docs?"}),
            ),
            ev(1767000021.0, "StepBegin", json!({"n": 1})),
            ev(
                1767000022.0,
                "ContentPart",
                json!({"type": "text", "text": "Alpha wire-only reply: docs untouched."}),
            ),
            ev(1767000023.0, "StatusUpdate", usage("msg-a3", 50, 5, 0, 0)),
            ev(1767000024.0, "StepInterrupted", json!({})),
        ]),
    );
    put(
        h,
        &format!("{a}/context_1.jsonl"),
        jsonl(&[
            json!({"role": "_checkpoint", "id": 0}),
            json!({"role": "user", "content": "Alpha earlier: a cleared question"}),
            json!({"role": "assistant", "content": "Alpha earlier reply: cleared answer."}),
        ]),
    );
    put(
        h,
        &format!("{a}/context_sub_1.jsonl"),
        jsonl(&[
            json!({"role": "_checkpoint", "id": 0}),
            json!({"role": "user", "content": "Sub task: count the widgets"}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "Sub reply: 42 widgets found."}]}),
            json!({"role": "_usage", "token_count": 700}),
        ]),
    );
    // A newer subagent directory with its own logs; the parent's wire repeats its call.
    put(
        h,
        &format!("{a}/subagents/agent-x1/context.jsonl"),
        jsonl(&[
            json!({"role": "user", "content": "Newer sub: find the docs"}),
            json!({"role": "assistant", "content": "Newer sub reply: docs are in docs/."}),
        ]),
    );
    put(
        h,
        &format!("{a}/subagents/agent-x1/wire.jsonl"),
        jsonl(&[
            ev(
                1767000014.0,
                "TurnBegin",
                json!({"user_input": "Newer sub: find the docs"}),
            ),
            ev(1767000014.5, "StepBegin", json!({"n": 1})),
            ev(
                1767000015.0,
                "ContentPart",
                json!({"type": "text", "text": "Newer sub reply: docs are in docs/."}),
            ),
            ev(1767000015.5, "StatusUpdate", usage("msg-n1", 70, 7, 0, 0)),
        ]),
    );
    put(
        h,
        &format!("{a}/subagents/agent-x1/meta.json"),
        json!({"agent_id": "agent-x1", "subagent_type": "explore", "status": "completed",
                "description": "find docs", "created_at": 1767000014.0, "updated_at": 1767000016.0})
        .to_string(),
    );
    put(
        h,
        &format!("{a}/state.json"),
        json!({"version": 1, "approval": {"yolo": false}}).to_string(),
    );
    // A legacy context file, not yet moved into a directory.
    put(
        h,
        &format!(".kimi/sessions/{}/{B}.jsonl", md5("/home/dev/bravo")),
        jsonl(&[
            json!({"role": "user", "content": "Bravo: list the files"}),
            json!({"role": "assistant", "content": "Bravo reply: three files."}),
        ]),
    );
    put(
        h,
        ".kimi/user-history/x.jsonl",
        json!({"content": "Alpha: fix the loader"}).to_string(),
    );
    home
}

/// `(text, the one session directory holding it)`.
fn expected() -> Vec<(&'static str, String)> {
    let a = format!("kimi/{A}");
    let b = format!("kimi/{B}");
    [
        "Alpha: fix the loader",
        "Alpha thinking: look at the loader.",
        "Alpha first: running the tests.",
        "ALPHA-TOOL-OUTPUT loader ok",
        "Alpha reply: loader fixed.",
        "Alpha system prompt.",
        "Alpha: and the docs?",
        "Alpha wire-only reply: docs untouched.",
        "Alpha earlier: a cleared question",
        "Alpha earlier reply: cleared answer.",
        "Sub reply: 42 widgets found.",
        "SUB-RESULT 42 widgets",
        "Newer sub: find the docs",
        "Newer sub reply: docs are in docs/.",
    ]
    .into_iter()
    .map(|t| (t, a.clone()))
    .chain(
        ["Bravo: list the files", "Bravo reply: three files."]
            .into_iter()
            .map(|t| (t, b.clone())),
    )
    .collect()
}

fn check_tree(tree: &Path) {
    for (text, dir) in expected() {
        stores::assert_only_in(tree, text, ".", &dir);
    }
    let t = std::fs::read_to_string(tree.join(format!("kimi/{A}/transcript.md"))).expect("md");
    // Both logs hold these: shown once.
    for once in [
        "Alpha reply: loader fixed.",
        "Alpha first: running the tests.",
    ] {
        assert_eq!(t.matches(once).count(), 1, "'{once}' in:\n{t}");
    }
    // The wire-only turn stands after the context's, where its time puts it.
    let (x, y) = (
        t.find("Alpha reply: loader fixed.").expect("reply"),
        t.find("Alpha wire-only reply").expect("wire reply"),
    );
    assert!(x < y, "{t}");
    stores::assert_nowhere(tree, SECRET);
}

fn render(home: &Home) -> Rendered {
    stores::render(home, "sessfs-kimi", &["KIMI_SHARE_DIR"])
}

#[test]
fn render_shows_both_logs_once_each_line_in_exactly_its_session() {
    let home = write();
    let out = render(&home);
    let tree = &out.tree;
    check_tree(tree);
    let n = stores::entries(tree, "kimi");
    assert_eq!(n, 2, "config, credentials or history listed as sessions");
}

#[test]
fn usage_comes_from_the_wire_once_per_call_and_subagents_count_in_their_own() {
    let home = write();
    let out = render(&home);
    let tree = &out.tree;
    let m = meta(tree, &format!("kimi/{A}"));
    let c = &m["cost"];
    // msg-a1 + msg-a2 (reported twice) + msg-a3 (wire only); `_usage` lines are not usage.
    assert_eq!(
        stores::tokens(c),
        (Some(350), Some(35), Some(3000), Some(5)),
        "{c}"
    );
    let w = &m["costWithSubagents"];
    assert_eq!(
        (w["inputTokens"].as_u64(), w["outputTokens"].as_u64()),
        (Some(350 + 300 + 70), Some(35 + 30 + 7)),
        "{w}"
    );
    let sub = meta(tree, &format!("kimi/{A}/subagents/sub_1"));
    assert_eq!(sub["cost"]["inputTokens"], 300);
    let newer = meta(tree, &format!("kimi/{A}/subagents/agent-x1"));
    assert_eq!(newer["cost"]["inputTokens"], 70);
    assert_eq!(m["subagents"][1]["description"], "find docs");
    assert_eq!(m["subagents"][1]["toolCallId"], "call_agent");
    assert_eq!(m["subagents"][0]["toolCallId"], "call_task");
    assert_eq!(m["subagents"][0]["description"], "count widgets");
    assert_eq!(meta(tree, &format!("kimi/{B}"))["cost"]["inputTokens"], 0);
}

#[test]
fn cwd_title_times_and_branches_come_from_the_store() {
    let home = write();
    let out = render(&home);
    let tree = &out.tree;
    let a = meta(tree, &format!("kimi/{A}"));
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["title"], "Alpha: fix the loader");
    assert_eq!(a["createdAt"], "2025-12-29T09:20:00.000Z");
    assert_eq!(a["branches"][0]["name"], "context_1");
    assert_eq!(meta(tree, &format!("kimi/{B}"))["cwd"], "/home/dev/bravo");
}

#[test]
fn mounted_kimi_greps_sizes_erofs_and_store_untouched() {
    let home = write();
    {
        let m = Mount::new(&home, &[]);
        check_tree(m.path());
        common::assert_sizes_agree(m.path(), &["kimi"], 6);
        let before = home.snapshot();
        // A growing context shows within a second, without touching the store.
        let ctx = home.path().join(format!(
            ".kimi/sessions/{}/{A}/context.jsonl",
            md5("/home/dev/alpha")
        ));
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&ctx)
            .expect("open");
        use std::io::Write;
        writeln!(
            f,
            "{}",
            json!({"role": "user", "content": "Alpha live: one more thing"})
        )
        .expect("append");
        let transcript = m.path().join(format!("kimi/{A}/transcript.md"));
        let took = common::wait_until("the appended prompt", || {
            std::fs::read_to_string(&transcript).is_ok_and(|t| t.contains("Alpha live"))
        });
        assert!(took < std::time::Duration::from_secs(3), "{took:?}");
        stores::assert_erofs(&m, &format!("kimi/{A}/meta.json"));
        common::assert_sizes_agree(m.path(), &["kimi"], 6);
        let mut want = before;
        want.insert(ctx.clone(), std::fs::read(&ctx).expect("read"));
        assert!(want == home.snapshot(), "sessfs changed a native file");
    }
    let list = home.sessfs(&["list", "--json"]);
    assert!(!stdout(&list).contains(SECRET));
}

#[test]
fn lines_that_cannot_be_read_are_shown_raw_and_named_in_meta() {
    let home = Home::empty();
    let h = home.path();
    let d = format!(".kimi/sessions/{}/{A}", md5("/home/dev/alpha"));
    put(
        h,
        &format!("{d}/context.jsonl"),
        "{\"role\":\"user\",\"content\":\"Charlie: a prompt\"}\n{\"no role\": \"CHARLIE-ROLELESS\"}\n{\"role\":\"assistant\",\"content\":\"CHARLIE-CUT\n{\"role\":\"assistant\",\"content\":\"Charlie reply\"}\n",
    );
    put(
        h,
        &format!("{d}/wire.jsonl"),
        "{\"type\":\"metadata\"}\nCHARLIE-WIRE-GARBAGE\n",
    );
    let out = render(&home);
    let tree = &out.tree;
    let dir = format!("kimi/{A}");
    for text in [
        "Charlie: a prompt",
        "Charlie reply",
        "CHARLIE-ROLELESS",
        "CHARLIE-CUT",
        "CHARLIE-WIRE-GARBAGE",
    ] {
        stores::assert_only_in(tree, text, ".", &dir);
    }
    let w = meta(tree, &dir)["warnings"].to_string();
    assert!(w.contains("no role"), "{w}");
    assert!(w.contains("unparsed.txt"), "{w}");
    assert!(w.contains("unparsed-wire.txt"), "{w}");
}

/// The Kimi store's glance (the sessions directory, each work directory and each session
/// directory in it): with nothing changed a search lists no store; an appended message,
/// a session in a new work directory, a context written into a session directory made
/// empty before, and a deleted session are each found by the next search.
#[test]
fn kimi_changes_are_found_by_the_next_search() {
    use common::{age, logged_search};
    use std::collections::BTreeSet;
    const ONE: &str = "6f0c8e52-eeee-4aaa-8bbb-000000000001";
    const TWO: &str = "6f0c8e52-eeee-4aaa-8bbb-000000000002";
    const THREE: &str = "6f0c8e52-eeee-4aaa-8bbb-000000000003";
    const FOUR: &str = "6f0c8e52-eeee-4aaa-8bbb-000000000004";
    // Work directories by the MD5 of their paths (any name serves the listing).
    const X: &str = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
    const Y: &str = "f9e8d7c6b5a4938271605f4e3d2c1b0a";
    let set =
        |ids: &[&str]| -> BTreeSet<String> { ids.iter().map(|id| format!("kimi/{id}")).collect() };
    let home = Home::empty();
    let h = home.path();
    let sessions = h.join(".kimi/sessions");
    let context = |work: &str, id: &str, word: &str| {
        let line = json!({"role": "user", "content": format!("the {word} question")});
        put(
            h,
            &format!(".kimi/sessions/{work}/{id}/context.jsonl"),
            jsonl(&[line]),
        )
    };
    let one = context(X, ONE, "kimione");
    context(X, TWO, "kimitwo");
    let aged = |dirs: &[std::path::PathBuf], secs| {
        for d in dirs {
            age(d, secs);
        }
    };
    let x = sessions.join(X);
    aged(
        &[x.join(ONE), x.join(TWO), x.clone(), sessions.clone()],
        3600,
    );
    aged(&[h.join(".kimi")], 3600);
    assert_eq!(logged_search(&home, "kimione"), (set(&[ONE]), false));
    assert_eq!(logged_search(&home, "kimitwo"), (set(&[TWO]), true));
    // A message appended to a context.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&one)
        .expect("open");
    let line = json!({"role": "assistant", "content": "an appendedkimi answer"});
    std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).expect("append");
    drop(f);
    assert_eq!(logged_search(&home, "appendedkimi").0, set(&[ONE]));
    assert_eq!(logged_search(&home, "appendedkimi"), (set(&[ONE]), true));
    // A session in a new work directory.
    context(Y, THREE, "kimithree");
    let y = sessions.join(Y);
    aged(&[y.join(THREE), y.clone(), sessions.clone()], 3000);
    assert_eq!(logged_search(&home, "kimithree").0, set(&[THREE]));
    assert_eq!(logged_search(&home, "kimithree"), (set(&[THREE]), true));
    // A session directory made before its logs: not a session yet, then one.
    std::fs::create_dir(x.join(FOUR)).expect("mkdir");
    aged(&[x.join(FOUR), x.clone()], 3000);
    assert_eq!(logged_search(&home, "kimifour").0, BTreeSet::new());
    assert_eq!(logged_search(&home, "kimifour"), (BTreeSet::new(), true));
    context(X, FOUR, "kimifour");
    aged(&[x.join(FOUR)], 2800);
    assert_eq!(logged_search(&home, "kimifour").0, set(&[FOUR]));
    assert_eq!(logged_search(&home, "kimifour"), (set(&[FOUR]), true));
    // A session deleted.
    std::fs::remove_dir_all(x.join(TWO)).expect("remove");
    age(&x, 2400);
    assert_eq!(logged_search(&home, "kimitwo").0, BTreeSet::new());
    assert_eq!(
        logged_search(&home, "question"),
        (set(&[ONE, THREE, FOUR]), true)
    );
}

/// A subagent's `meta.json` rewritten in place, with nothing else written, shows through the
/// mount within a second: the parent's `meta.json` names the subagent by its description.
#[test]
fn a_subagent_meta_changed_alone_shows_within_a_second() {
    let home = write();
    let m = Mount::new(&home, &[]);
    let meta = m.path().join(format!("kimi/{A}/meta.json"));
    assert!(stores::file_contains(&meta, "\"find docs\""));
    let file = home.path().join(format!(
        ".kimi/sessions/{}/{A}/subagents/agent-x1/meta.json",
        md5("/home/dev/alpha")
    ));
    let v = json!({"agent_id": "agent-x1", "subagent_type": "explore", "status": "completed",
        "description": "find the docs again", "created_at": 1767000014.0,
        "updated_at": 1767000017.0});
    // In place, as a plain write does: the subagent's directory keeps its mtime.
    std::fs::write(&file, v.to_string()).expect("write");
    stores::assert_within_a_second("the new description", || {
        stores::file_contains(&meta, "find the docs again")
    });
}

/// `kimi.json` rewritten alone (a work directory dropped, then noted again) shows through
/// the mount within a second, in the session of that directory only.
#[test]
fn a_work_dir_changed_in_kimi_json_alone_shows_within_a_second() {
    let home = write();
    let m = Mount::new(&home, &[]);
    let a = m.path().join(format!("kimi/{A}/meta.json"));
    let b = m.path().join(format!("kimi/{B}/meta.json"));
    assert!(stores::file_contains(&b, "/home/dev/bravo"));
    let metadata = |dirs: Value| {
        put(
            home.path(),
            ".kimi/kimi.json",
            json!({ "work_dirs": dirs }).to_string(),
        );
    };
    metadata(json!([{"path": "/home/dev/alpha", "kaos": "local", "last_session_id": A}]));
    stores::assert_within_a_second("bravo's work dir gone", || {
        std::fs::read_to_string(&b).is_ok_and(|t| !t.contains("/home/dev/bravo"))
    });
    assert!(stores::file_contains(&a, "/home/dev/alpha"));
    metadata(json!([
        {"path": "/home/dev/alpha", "kaos": "local", "last_session_id": A},
        {"path": "/home/dev/bravo", "kaos": "local", "last_session_id": B}]));
    stores::assert_within_a_second("bravo's work dir back", || {
        stores::file_contains(&b, "/home/dev/bravo")
    });
}
