//! Neovate Code sessions, written here the way Neovate writes them (neovateai/neovate-code
//! `src/jsonl.ts`, `src/session.ts`, `src/loop.ts`, `src/history.ts`: one JSONL file per
//! session under `~/.neovate/projects/<project>/`, messages linked by `uuid`/`parentUuid`,
//! a `config` line at the top), rendered with `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, meta, put, read, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A credential, planted where Neovate keeps its keys, prompt history and request logs.
const SECRET: &str = "neovate-PLANTED-provider-key-doNotRead-0000";
const PROJECTS: &str = ".neovate/projects";

const A: &str = "a1b2c3d4";
const B: &str = "b5e6f7a8";
const SUB: &str = "agent-c9d0e1f2";
const BAD: &str = "d0d0d0d0";

/// One message line as `JsonlLogger.addMessage` writes it.
fn msg(uuid: &str, parent: Option<&str>, sec: u32, body: Value) -> String {
    let mut m = json!({
        "parentUuid": parent, "uuid": uuid, "type": "message",
        "timestamp": format!("2026-03-01T10:00:{sec:02}.000Z"), "sessionId": "x",
    });
    for (k, v) in body.as_object().expect("object") {
        m[k] = v.clone();
    }
    format!("{m}\n")
}

fn reply(text: &str, parts: Value, tokens: (u64, u64)) -> Value {
    json!({"role": "assistant", "content": parts, "text": text,
           "model": "anthropic/claude-sonnet-4-20250514",
           "usage": {"input_tokens": tokens.0, "output_tokens": tokens.1}})
}

fn result(id: &str, name: &str, out: &str, is_error: bool) -> Value {
    json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": id, "toolName": name,
           "input": {}, "result": {"llmContent": out, "returnDisplay": "shown", "isError": is_error}}]})
}

fn write() -> Home {
    let home = Home::empty();
    let h = home.path().to_path_buf();

    // --- A: config, reasoning, a call and its result, a failed call, a `!` command, a
    // slash command's hidden prompt, an interruption, a fork, a line of an unknown type and
    // a torn last line.
    let mut a = format!(
        "{}\n",
        json!({"type": "config", "config": {"approvalMode": "default", "approvalTools": [],
               "summary": "Alpha: fix the parser", "pastedTextMap": {}, "pastedImageMap": {}}})
    );
    a += &msg(
        "u1",
        None,
        1,
        json!({"role": "user", "content": "Alpha prompt: fix the parser"}),
    );
    a += &msg(
        "r1",
        Some("u1"),
        2,
        reply(
            "Alpha reply: running the tests",
            json!([{"type": "reasoning", "text": "Alpha thinking: the tests say where"},
                   {"type": "text", "text": "Alpha reply: running the tests"},
                   {"type": "tool_use", "id": "call_a1", "name": "bash",
                    "input": {"command": "cargo test"}, "description": "cargo test"}]),
            (1200, 80),
        ),
    );
    a += &msg(
        "t1",
        Some("r1"),
        3,
        result("call_a1", "bash", "alpha-output: 3 tests failed", false),
    );
    a += &msg(
        "r2",
        Some("t1"),
        4,
        reply(
            "",
            json!([{"type": "tool_use", "id": "call_a2", "name": "read", "input": {"file_path": "nope.rs"}}]),
            (1300, 20),
        ),
    );
    a += &msg(
        "t2",
        Some("r2"),
        5,
        result("call_a2", "read", "alpha-error: no such file", true),
    );
    a += &msg(
        "r3",
        Some("t2"),
        6,
        reply(
            "Alpha reply two: fixed",
            json!([{"type": "text", "text": "Alpha reply two: fixed"}]),
            (1400, 30),
        ),
    );
    a += &msg(
        "s1",
        Some("r3"),
        7,
        json!({"role": "user", "content": "<bash-input>git status</bash-input>"}),
    );
    a += &msg(
        "s2",
        Some("s1"),
        8,
        json!({"role": "user", "uiContent": "clean", "content": "<bash-stdout>alpha-shell: nothing to commit</bash-stdout>"}),
    );
    a += &msg(
        "h1",
        Some("s2"),
        9,
        json!({"role": "user", "hidden": true, "content": [{"type": "text", "text": "Alpha command prompt: review the diff"}]}),
    );
    a += &msg(
        "c1",
        Some("h1"),
        10,
        json!({"role": "user", "content": "[Request interrupted by user]"}),
    );
    a += &msg(
        "p2",
        Some("c1"),
        11,
        json!({"role": "user", "content": "Alpha prompt three: old wording"}),
    );
    a += &msg(
        "r4",
        Some("p2"),
        12,
        reply(
            "Alpha branch reply",
            json!([{"type": "text", "text": "Alpha branch reply"}]),
            (1500, 40),
        ),
    );
    a += &format!(
        "{}\n",
        json!({"type": "checkpoint", "note": "Alpha unknown record"})
    );
    // The fork: the prompt edited, a sibling of p2.
    a += &msg(
        "p3",
        Some("c1"),
        13,
        json!({"role": "user", "content": "Alpha prompt three: new wording"}),
    );
    a += &msg(
        "r5",
        Some("p3"),
        14,
        reply(
            "Alpha active reply",
            json!([{"type": "text", "text": "Alpha active reply"}]),
            (1600, 50),
        ),
    );
    a += "{\"parentUuid\":\"r5\",\"uuid\":\"torn\",\"type\":\"mess";
    put(&h, &format!("{PROJECTS}/home-dev-alpha/{A}.jsonl"), a);

    // --- B: compacted, and a subagent run by the task tool.
    let mut b = msg(
        "b1",
        None,
        1,
        json!({"role": "user", "content": "Bravo prompt: explore the crate"}),
    );
    b += &msg(
        "b2",
        Some("b1"),
        2,
        reply(
            "",
            json!([{"type": "tool_use", "id": "call_b1", "name": "task",
                    "input": {"description": "Map modules", "prompt": "List the modules", "subagent_type": "explore"}}]),
            (500, 10),
        ),
    );
    b += &msg(
        "b3",
        Some("b2"),
        3,
        json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "call_b1", "toolName": "task",
               "input": {}, "result": {"llmContent": "Bravo subagent report: two modules", "isError": false,
               "returnDisplay": {"type": "agent_result", "agentId": "c9d0e1f2", "description": "Map modules"},
               "metadata": {"agentId": "c9d0e1f2", "agentType": "explore"}}}]}),
    );
    b += &msg(
        "b4",
        Some("b3"),
        4,
        reply(
            "Bravo reply before compaction",
            json!("Bravo reply before compaction"),
            (600, 20),
        ),
    );
    b += &msg(
        "b5",
        None,
        5,
        json!({"role": "user", "uiContent": "Chat history compacted successfully.",
               "content": [{"type": "text", "text": "Bravo summary: two modules were mapped"}]}),
    );
    b += &msg(
        "b6",
        Some("b5"),
        6,
        json!({"role": "user", "content": "Bravo prompt after compaction"}),
    );
    b += &msg(
        "b7",
        Some("b6"),
        7,
        reply(
            "Bravo reply after compaction",
            json!([{"type": "text", "text": "Bravo reply after compaction"}]),
            (700, 30),
        ),
    );
    put(&h, &format!("{PROJECTS}/home-dev-beta/{B}.jsonl"), b);

    let mut s = msg(
        "x1",
        None,
        1,
        json!({"role": "user", "content": "Subagent prompt: list the modules"}),
    );
    s += &msg(
        "x2",
        Some("x1"),
        2,
        reply(
            "Subagent reply: two modules",
            json!([{"type": "text", "text": "Subagent reply: two modules"}]),
            (90, 9),
        ),
    );
    put(&h, &format!("{PROJECTS}/home-dev-beta/{SUB}.jsonl"), s);

    // --- A file that is no JSONL at all.
    put(
        &h,
        &format!("{PROJECTS}/home-dev-gamma/{BAD}.jsonl"),
        b"\x00\xff garbage\nnot json either\n",
    );

    // --- What is never shown.
    put(
        &h,
        ".neovate/config.json",
        format!(
            "{{\"provider\": {{\"anthropic\": {{\"options\": {{\"apiKey\": \"{SECRET}\"}}}}}}}}"
        ),
    );
    put(
        &h,
        ".neovate/data.json",
        serde_json::to_vec(&json!({"projects": {
            "/home/dev/alpha": {"history": [SECRET]},
            "/home/dev/beta": {"history": []}}}))
        .expect("json"),
    );
    put(
        &h,
        &format!("{PROJECTS}/home-dev-alpha/requests/r1.jsonl"),
        format!(
            "{}\n",
            json!({"type": "metadata", "request": {"headers": {"x-api-key": SECRET}}})
        ),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    home
}

fn render(home: &Home) -> Rendered {
    stores::render(home, "sessfs-neovate", &[])
}

fn messages(tree: &Path, dir: &str) -> Vec<Value> {
    read(tree, &format!("{dir}/messages.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).expect("messages.jsonl line"))
        .collect()
}

#[test]
fn every_session_is_listed_with_its_title_cwd_and_times() {
    let home = write();
    let out = render(&home);
    assert_eq!(stores::entries(&out.tree, "neovate"), 4);
    let a = meta(&out.tree, &format!("neovate/{A}"));
    assert_eq!(a["title"], "Alpha: fix the parser");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["createdAt"], "2026-03-01T10:00:01.000Z");
    assert_eq!(a["updatedAt"], "2026-03-01T10:00:14.000Z");
    let b = meta(&out.tree, &format!("neovate/{B}"));
    assert_eq!(b["title"], "Bravo prompt: explore the crate");
    assert_eq!(b["cwd"], "/home/dev/beta");
}

#[test]
fn prompts_replies_reasoning_and_tool_results_land_in_their_session() {
    let home = write();
    let out = render(&home);
    stores::assert_session_holds(
        &out.tree,
        &format!("neovate/{A}"),
        &[
            "Alpha prompt: fix the parser",
            "Alpha thinking: the tests say where",
            "Alpha reply: running the tests",
            "Alpha reply two: fixed",
            "Alpha command prompt: review the diff",
            "Alpha prompt three: new wording",
            "Alpha active reply",
            "Alpha unknown record",
        ],
        &[
            "alpha-output: 3 tests failed",
            "alpha-error: no such file",
            "alpha-shell: nothing to commit",
        ],
    );
    stores::assert_session_holds(
        &out.tree,
        &format!("neovate/{B}"),
        &[
            "Bravo prompt: explore the crate",
            "Bravo reply before compaction",
            "Bravo summary: two modules were mapped",
            "Bravo reply after compaction",
        ],
        &["Bravo subagent report: two modules"],
    );
    stores::assert_session_holds(
        &out.tree,
        &format!("neovate/{SUB}"),
        &[
            "Subagent prompt: list the modules",
            "Subagent reply: two modules",
        ],
        &[] as &[&str],
    );
}

#[test]
fn messages_keep_their_kinds_and_calls_pair_with_results() {
    let home = write();
    let out = render(&home);
    let a = messages(&out.tree, &format!("neovate/{A}"));
    let find = |text: &str| -> &Value {
        a.iter()
            .find(|m| m.to_string().contains(text))
            .unwrap_or_else(|| panic!("{text} not in messages.jsonl"))
    };
    let r1 = find("Alpha reply: running the tests");
    assert_eq!(r1["role"], "assistant");
    assert_eq!(r1["thinking"], "Alpha thinking: the tests say where");
    assert_eq!(r1["model"], "anthropic/claude-sonnet-4-20250514");
    assert_eq!(r1["toolCalls"][0]["toolName"], "bash");
    assert_eq!(r1["toolCalls"][0]["input"]["command"], "cargo test");
    let failed = find("alpha-error: no such file");
    assert_eq!(failed["toolResult"]["toolCallId"], "call_a2");
    assert_eq!(failed["toolResult"]["toolName"], "read");
    assert_eq!(failed["toolResult"]["isError"], true);
    let ok = find("alpha-output: 3 tests failed");
    assert_eq!(ok["toolResult"]["isError"], false);
    assert_eq!(find("Alpha command prompt")["kind"], "context");
    assert_eq!(find("git status")["kind"], "execution");
    assert_eq!(find("[Request interrupted by user]")["kind"], "event");
    // The fork's old wording is a branch, not the active path.
    assert!(!a
        .iter()
        .any(|m| m.to_string().contains("Alpha prompt three: old wording")));
    let b = messages(&out.tree, &format!("neovate/{B}"));
    let summary = b
        .iter()
        .find(|m| m.to_string().contains("Bravo summary"))
        .expect("summary");
    assert_eq!(summary["kind"], "compactionSummary");
}

#[test]
fn a_fork_is_a_branch_from_the_message_it_left() {
    let home = write();
    let out = render(&home);
    let dir = out.tree.join(format!("neovate/{A}/branches"));
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".diff"))
        .collect();
    assert_eq!(names, ["branch-r4"], "{names:?}");
    let t = read(&dir, "branch-r4/transcript.md");
    assert!(t.contains("Alpha prompt three: old wording"), "{t}");
    assert!(t.contains("Alpha branch reply"), "{t}");
    let transcript = read(&out.tree, &format!("neovate/{A}/transcript.md"));
    let (fix, active) = (
        transcript
            .find("Alpha prompt: fix the parser")
            .expect("first prompt"),
        transcript.find("Alpha active reply").expect("active reply"),
    );
    assert!(fix < active);
}

#[test]
fn usage_is_per_reply_and_on_the_active_path_only() {
    let home = write();
    let out = render(&home);
    let c = &meta(&out.tree, &format!("neovate/{A}"))["cost"];
    // r1, r2, r3 and r5; r4 is on the branch.
    assert_eq!(stores::tokens(c).0, Some(1200 + 1300 + 1400 + 1600), "{c}");
    assert_eq!(stores::tokens(c).1, Some(80 + 20 + 30 + 50), "{c}");
    let b = meta(&out.tree, &format!("neovate/{B}"));
    assert_eq!(
        stores::tokens(&b["cost"]).0,
        Some(500 + 600 + 700),
        "{}",
        b["cost"]
    );
    assert_eq!(b["model"], "anthropic/claude-sonnet-4-20250514");
}

#[test]
fn the_task_tool_links_its_subagent() {
    let home = write();
    let out = render(&home);
    let b = meta(&out.tree, &format!("neovate/{B}"));
    let subs = b["subagents"].to_string();
    assert!(subs.contains(&format!("neovate:{SUB}")), "{subs}");
    assert!(subs.contains("call_b1"), "{subs}");
}

#[test]
fn a_corrupt_file_costs_a_warning_and_torn_or_unknown_lines_are_named() {
    let home = write();
    let out = render(&home);
    let bad = meta(&out.tree, &format!("neovate/{BAD}"));
    assert!(
        !bad["warnings"].as_array().expect("warnings").is_empty(),
        "{bad}"
    );
    let a = meta(&out.tree, &format!("neovate/{A}"));
    let w = a["warnings"].to_string();
    assert!(w.contains("unknown record type"), "{w}");
    assert!(w.contains("checkpoint"), "{w}");
}

#[test]
fn keys_prompt_history_and_request_logs_are_never_shown() {
    let home = write();
    let out = render(&home);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&home, SECRET, &[]);
}

#[test]
fn doctor_names_neovate_and_where_it_found_it() {
    let home = write();
    let text = stdout(&home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 4 sessions", "neovate")),
        "{text}"
    );
    let root = home.path().join(".neovate").display().to_string();
    assert!(text.contains(&root), "{text}");
}

#[test]
fn mounted_sessions_sizes_erofs_and_store_untouched() {
    let home = write();
    stores::mounted_untouched(&home, Home::snapshot, |m| {
        stores::assert_session_holds(
            m.path(),
            &format!("neovate/{A}"),
            &["Alpha prompt: fix the parser", "Alpha active reply"],
            &["alpha-output: 3 tests failed"],
        );
        stores::assert_mount_read_only(m, &["neovate"], 9, SECRET, &format!("neovate/{A}"));
    });
}

/// Neovate appends a line per message: the new one shows within a second.
#[test]
fn an_appended_message_shows_within_a_second() {
    let home = write();
    let m = Mount::new(&home, &[]);
    let t = m.path().join(format!("neovate/{B}/transcript.md"));
    assert!(stores::file_contains(&t, "Bravo reply after compaction"));
    let file = home
        .path()
        .join(PROJECTS)
        .join(format!("home-dev-beta/{B}.jsonl"));
    let mut text = std::fs::read_to_string(&file).expect("read");
    text += &msg(
        "b8",
        Some("b7"),
        8,
        json!({"role": "user", "content": "Bravo fresh prompt after the mount"}),
    );
    std::fs::write(&file, text).expect("write");
    stores::assert_within_a_second("appended message", || {
        stores::file_contains(&t, "Bravo fresh prompt after the mount")
    });
}

/// A session's cwd comes from `data.json`: when Neovate rewrites that file, the session's
/// `meta.json` follows within a second (found by the chaos test, which garbled the file).
#[test]
fn a_changed_data_json_moves_the_cwd_within_a_second() {
    let home = write();
    let m = Mount::new(&home, &[]);
    let meta_path = m.path().join(format!("neovate/{B}/meta.json"));
    let cwd = || -> Value {
        std::fs::read_to_string(&meta_path)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .map(|v| v["cwd"].clone())
            .unwrap_or(Value::Null)
    };
    assert_eq!(cwd(), "/home/dev/beta");
    put(
        home.path(),
        ".neovate/data.json",
        serde_json::to_vec(&json!({"projects": {"/home/dev/alpha": {"history": []}}}))
            .expect("json"),
    );
    stores::assert_within_a_second("cwd gone with its data.json key", || cwd().is_null());
}
