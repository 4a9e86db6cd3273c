//! Kode sessions, written here the way Kode writes them (shareAI-lab/Kode-CLI
//! `src/utils/protocol/kodeAgentSessionLog.ts`: Claude Code's JSONL under
//! `~/.kode/projects/<project>/`; `src/utils/log/index.ts`: JSON-array logs under
//! `~/.kode/<project>/messages/` and, before 2.0.2, `~/.cache/kode-nodejs/`), rendered with
//! `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, meta, put, read, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A credential, planted where Kode keeps its model profiles.
const SECRET: &str = "kode-PLANTED-provider-key-doNotRead-0000";

const A: &str = "4f1c2a9e-0b7d-4c3e-9a51-6d2e8f0a1b23";
const BAD: &str = "0d0d0d0d-0000-4000-8000-000000000000";
const SUB: &str = "c9d0e1f2";
const LOG: &str = "2026-03-05T10-00-00-000Z";
const OLD: &str = "2025-09-01T08-00-00-000Z";
const TORN: &str = "2026-03-06T11-30-00-000Z";

/// One user or assistant line as `appendSessionJsonlFromMessage` writes it.
fn line(ty: &str, uuid: &str, parent: Option<&str>, sec: u32, message: Value) -> String {
    let m = json!({
        "parentUuid": parent, "isSidechain": false, "userType": "external",
        "cwd": "/home/dev/alpha", "sessionId": A, "version": "2.0.2", "gitBranch": "main",
        "agentId": "main", "slug": "brave-writing-otter", "type": ty, "message": message,
        "uuid": uuid, "timestamp": format!("2026-03-04T09:15:{sec:02}.000Z"),
    });
    format!("{m}\n")
}

fn assistant(id: &str, content: Value, tokens: (u64, u64)) -> Value {
    json!({"id": id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
           "content": content, "stop_reason": "tool_use", "stop_sequence": null,
           "usage": {"input_tokens": tokens.0, "output_tokens": tokens.1,
                     "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}})
}

fn tool_result(id: &str, out: &str, is_error: bool) -> Value {
    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id,
           "content": out, "is_error": is_error}]})
}

/// One element of a JSON-array log as `overwriteLog` writes it: the in-memory message and
/// the metadata stamped on at every rewrite (the same `timestamp` on every element).
fn element(mut m: Value, cwd: &str, written: &str) -> Value {
    for (k, v) in [
        ("cwd", json!(cwd)),
        ("sessionId", json!("9e8d7c6b-aaaa-4bbb-8ccc-000000000001")),
        ("timestamp", json!(written)),
        ("version", json!("1.0.76")),
    ] {
        m[k] = v;
    }
    m
}

fn write() -> Home {
    let home = Home::empty();
    let h = home.path().to_path_buf();

    // --- A: the JSONL store, with reasoning, a call and its result, a failed call, a
    // title, a tag, and a subagent file beside it.
    let snapshot = json!({"type": "file-history-snapshot", "messageId": "u1",
        "snapshot": {"messageId": "u1", "trackedFileBackups": {}, "timestamp": "2026-03-04T09:15:01.000Z"},
        "isSnapshotUpdate": false});
    let mut a = format!("{snapshot}\n");
    a += &line(
        "user",
        "u1",
        None,
        1,
        json!({"role": "user", "content": "Alpha prompt: fix the parser"}),
    );
    a += &line(
        "assistant",
        "a1",
        Some("u1"),
        2,
        assistant(
            "msg_a1",
            json!([{"type": "thinking", "thinking": "Alpha thinking: the tests say where", "signature": "s"},
                   {"type": "text", "text": "Alpha reply: running the tests"},
                   {"type": "tool_use", "id": "toolu_a1", "name": "Bash", "input": {"command": "cargo test"}}]),
            (1200, 80),
        ),
    );
    a += &line(
        "user",
        "t1",
        Some("a1"),
        3,
        tool_result("toolu_a1", "alpha-output: 3 tests failed", false),
    );
    a += &line(
        "assistant",
        "a2",
        Some("t1"),
        4,
        assistant(
            "msg_a2",
            json!([{"type": "tool_use", "id": "toolu_a2", "name": "View", "input": {"file_path": "nope.rs"}}]),
            (1300, 20),
        ),
    );
    a += &line(
        "user",
        "t2",
        Some("a2"),
        5,
        tool_result("toolu_a2", "alpha-error: no such file", true),
    );
    a += &line(
        "assistant",
        "a3",
        Some("t2"),
        6,
        assistant(
            "msg_a3",
            json!([{"type": "text", "text": "Alpha reply two: fixed"}]),
            (1400, 30),
        ),
    );
    a += &format!(
        "{}\n",
        json!({"type": "custom-title", "sessionId": A, "customTitle": "Alpha: fix the parser"})
    );
    a += &format!(
        "{}\n",
        json!({"type": "tag", "sessionId": A, "tag": "bugfix"})
    );
    put(&h, &format!(".kode/projects/-home-dev-alpha/{A}.jsonl"), a);

    let side = |ty: &str, uuid: &str, parent: Option<&str>, message: Value| {
        let m = json!({"parentUuid": parent, "isSidechain": true, "userType": "external",
            "cwd": "/home/dev/alpha", "sessionId": A, "version": "2.0.2", "agentId": SUB,
            "slug": "brave-writing-otter", "type": ty, "message": message, "uuid": uuid,
            "timestamp": "2026-03-04T09:15:09.000Z"});
        format!("{m}\n")
    };
    let sub = side(
        "user",
        "x1",
        None,
        json!({"role": "user", "content": "Subagent prompt: list the modules"}),
    ) + &side(
        "assistant",
        "x2",
        Some("x1"),
        assistant(
            "msg_x2",
            json!([{"type": "text", "text": "Subagent reply: two modules"}]),
            (90, 9),
        ),
    );
    put(
        &h,
        &format!(".kode/projects/-home-dev-alpha/agent-{SUB}.jsonl"),
        sub,
    );

    // --- A JSONL file that is no JSONL at all.
    put(
        &h,
        &format!(".kode/projects/-home-dev-gamma/{BAD}.jsonl"),
        b"\x00\xff garbage\nnot json either\n",
    );

    // --- LOG: a JSON-array log with a Task call and its sidechain file.
    let w = "2026-03-05T10:07:30.000Z";
    let cwd = "/home/dev/beta";
    let log = json!([
        element(
            json!({"type": "user", "uuid": "l1",
            "message": {"role": "user", "content": "Bravo prompt: explore the crate"}}),
            cwd,
            w
        ),
        element(
            json!({"type": "assistant", "uuid": "l2", "costUSD": 0.0125, "durationMs": 900,
            "message": assistant("msg_l2", json!([{"type": "tool_use", "id": "toolu_l1", "name": "Task",
                "input": {"description": "Map modules", "prompt": "List the modules"}}]), (500, 10))}),
            cwd,
            w
        ),
        element(
            json!({"type": "user", "uuid": "l3",
            "toolUseResult": {"data": [{"type": "text", "text": "Bravo subagent report"}], "resultForAssistant": "x"},
            "message": tool_result("toolu_l1", "Bravo subagent report: two modules", false)}),
            cwd,
            w
        ),
        element(
            json!({"type": "assistant", "uuid": "l4", "costUSD": 0.0042, "durationMs": 400,
            "message": assistant("msg_l4", json!([{"type": "text", "text": "Bravo reply: src and tests"}]), (600, 20))}),
            cwd,
            w
        ),
    ]);
    put(
        &h,
        &format!(".kode/-home-dev-beta/messages/{LOG}.json"),
        serde_json::to_vec_pretty(&log).expect("json"),
    );
    let sidechain = json!([
        element(
            json!({"type": "user", "uuid": "s1",
            "message": {"role": "user", "content": "List the modules"}}),
            cwd,
            w
        ),
        element(
            json!({"type": "assistant", "uuid": "s2", "costUSD": 0.001, "durationMs": 100,
            "message": assistant("msg_s2", json!([{"type": "text", "text": "Sidechain reply: src and tests dirs"}]), (70, 7))}),
            cwd,
            w
        ),
    ]);
    put(
        &h,
        &format!(".kode/-home-dev-beta/messages/{LOG}-sidechain-1.json"),
        serde_json::to_vec_pretty(&sidechain).expect("json"),
    );

    // --- OLD: a log of a release before 2.0.2, in the cache, with a `-p` run's progress.
    let w = "2025-09-01T08:01:00.000Z";
    let cwd = "/home/dev/delta";
    let old = json!([
        element(
            json!({"type": "user", "uuid": "o1",
            "message": {"role": "user", "content": "Delta prompt: summarise the README"}}),
            cwd,
            w
        ),
        element(
            json!({"type": "progress", "uuid": "o2", "toolUseID": "toolu_o1",
            "siblingToolUseIDs": {}, "tools": [], "normalizedMessages": [],
            "content": {"type": "assistant", "uuid": "o2c", "costUSD": 0, "durationMs": 0,
                "message": assistant("msg_o2", json!([{"type": "text", "text": "Delta progress"}]), (0, 0))}}),
            cwd,
            w
        ),
        element(
            json!({"type": "assistant", "uuid": "o3", "costUSD": 0.002, "durationMs": 300,
            "message": assistant("msg_o3", json!([{"type": "text", "text": "Delta reply: it is a CLI"}]), (300, 15))}),
            cwd,
            w
        ),
    ]);
    put(
        &h,
        &format!(".cache/kode-nodejs/-home-dev-delta/messages/{OLD}.json"),
        serde_json::to_vec_pretty(&old).expect("json"),
    );

    // --- TORN: a log cut while Kode rewrote it.
    let torn = format!(
        "[\n  {},\n  {{\"type\": \"assistant\", \"uuid\": \"z2\", \"message\": {{\"content\": [{{\"type\": \"te",
        element(
            json!({"type": "user", "uuid": "z1",
                "message": {"role": "user", "content": "Echo prompt before the cut"}}),
            "/home/dev/echo",
            "2026-03-06T11:31:00.000Z"
        )
    );
    put(
        &h,
        &format!(".kode/-home-dev-echo/messages/{TORN}.json"),
        torn,
    );

    // --- What is never shown.
    let profile = format!("{{\"modelProfiles\": [{{\"name\": \"x\", \"apiKey\": \"{SECRET}\"}}]}}");
    put(&h, ".kode.json", &profile);
    put(&h, ".kode/config.json", &profile);
    put(
        &h,
        &format!(".kode/-home-dev-beta/errors/{LOG}.txt"),
        format!("[{{\"error\": \"{SECRET}\"}}]"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    home
}

fn render(home: &Home) -> Rendered {
    stores::render(
        home,
        "sessfs-kode",
        &[
            "KODE_CONFIG_DIR",
            "KODE_LOG_ROOT",
            "KODE_LEGACY_CACHE_ROOT",
            "XDG_CACHE_HOME",
        ],
    )
}

fn messages(tree: &Path, dir: &str) -> Vec<Value> {
    read(tree, &format!("{dir}/messages.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).expect("messages.jsonl line"))
        .collect()
}

fn find<'a>(ms: &'a [Value], text: &str) -> &'a Value {
    ms.iter()
        .find(|m| m.to_string().contains(text))
        .unwrap_or_else(|| panic!("{text} not in messages.jsonl"))
}

#[test]
fn every_session_is_listed_with_its_title_cwd_and_times() {
    let home = write();
    let out = render(&home);
    assert_eq!(stores::entries(&out.tree, "kode"), 5);
    let a = meta(&out.tree, &format!("kode/{A}"));
    assert_eq!(a["title"], "Alpha: fix the parser");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["createdAt"], "2026-03-04T09:15:01.000Z");
    assert_eq!(a["updatedAt"], "2026-03-04T09:15:06.000Z");
    assert_eq!(a["tags"], json!(["bugfix"]));
    let l = meta(&out.tree, &format!("kode/{LOG}"));
    assert_eq!(l["title"], "Bravo prompt: explore the crate");
    assert_eq!(l["cwd"], "/home/dev/beta");
    // The start is the file name's; the update the rewrite time every element carries.
    assert_eq!(l["createdAt"], "2026-03-05T10:00:00.000Z");
    assert_eq!(l["updatedAt"], "2026-03-05T10:07:30.000Z");
    let o = meta(&out.tree, &format!("kode/{OLD}"));
    assert_eq!(o["cwd"], "/home/dev/delta");
}

#[test]
fn prompts_replies_reasoning_and_tool_results_land_in_their_session() {
    let home = write();
    let out = render(&home);
    stores::assert_session_holds(
        &out.tree,
        &format!("kode/{A}"),
        &[
            "Alpha prompt: fix the parser",
            "Alpha thinking: the tests say where",
            "Alpha reply: running the tests",
            "Alpha reply two: fixed",
            "Subagent prompt: list the modules",
            "Subagent reply: two modules",
        ],
        &["alpha-output: 3 tests failed", "alpha-error: no such file"],
    );
    stores::assert_session_holds(
        &out.tree,
        &format!("kode/{LOG}"),
        &[
            "Bravo prompt: explore the crate",
            "Bravo reply: src and tests",
            "Sidechain reply: src and tests dirs",
        ],
        &["Bravo subagent report: two modules"],
    );
    stores::assert_session_holds(
        &out.tree,
        &format!("kode/{OLD}"),
        &[
            "Delta prompt: summarise the README",
            "Delta reply: it is a CLI",
        ],
        &[] as &[&str],
    );
    // Each array element is a record of its own, once, in order.
    let t = read(&out.tree, &format!("kode/{LOG}/transcript.md"));
    let at = |s: &str| t.find(s).unwrap_or_else(|| panic!("{s} not in {t}"));
    assert!(at("Bravo prompt: explore the crate") < at("Bravo reply: src and tests"));
    assert_eq!(t.matches("Bravo reply: src and tests").count(), 1, "{t}");
}

#[test]
fn messages_keep_their_kinds_and_calls_pair_with_results() {
    let home = write();
    let out = render(&home);
    let a = messages(&out.tree, &format!("kode/{A}"));
    let r1 = find(&a, "Alpha reply: running the tests");
    assert_eq!(r1["role"], "assistant");
    assert_eq!(r1["thinking"], "Alpha thinking: the tests say where");
    assert_eq!(r1["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(r1["toolCalls"][0]["toolName"], "Bash");
    assert_eq!(r1["toolCalls"][0]["input"]["command"], "cargo test");
    let failed = find(&a, "alpha-error: no such file");
    assert_eq!(failed["toolResult"]["toolCallId"], "toolu_a2");
    assert_eq!(failed["toolResult"]["toolName"], "View");
    assert_eq!(failed["toolResult"]["isError"], true);
    let ok = find(&a, "alpha-output: 3 tests failed");
    assert_eq!(ok["toolResult"]["isError"], false);
    let l = messages(&out.tree, &format!("kode/{LOG}"));
    let res = find(&l, "Bravo subagent report: two modules");
    assert_eq!(res["toolResult"]["toolCallId"], "toolu_l1");
    assert_eq!(res["toolResult"]["toolName"], "Task");
    assert_eq!(find(&l, "Bravo prompt")["role"], "user");
}

#[test]
fn usage_model_and_cost_are_per_reply() {
    let home = write();
    let out = render(&home);
    let a = meta(&out.tree, &format!("kode/{A}"));
    assert_eq!(
        stores::tokens(&a["cost"]).0,
        Some(1200 + 1300 + 1400),
        "{}",
        a["cost"]
    );
    assert_eq!(
        stores::tokens(&a["cost"]).1,
        Some(80 + 20 + 30),
        "{}",
        a["cost"]
    );
    assert_eq!(a["model"], "claude-sonnet-4-5-20250929");
    let l = messages(&out.tree, &format!("kode/{LOG}"));
    assert_eq!(find(&l, "Bravo reply: src and tests")["cost"], 0.0042);
    let lm = meta(&out.tree, &format!("kode/{LOG}"));
    assert_eq!(
        stores::tokens(&lm["cost"]).0,
        Some(500 + 600),
        "{}",
        lm["cost"]
    );
}

#[test]
fn subagents_hang_off_their_session() {
    let home = write();
    let out = render(&home);
    let a = meta(&out.tree, &format!("kode/{A}"));
    assert!(
        a["subagents"].to_string().contains(SUB),
        "{}",
        a["subagents"]
    );
    let l = meta(&out.tree, &format!("kode/{LOG}"));
    let subs = l["subagents"].to_string();
    assert!(subs.contains("sidechain-1"), "{subs}");
    assert!(subs.contains("toolu_l1"), "{subs}");
    assert!(subs.contains("Map modules"), "{subs}");
}

#[test]
fn corrupt_torn_and_progress_records_cost_warnings() {
    let home = write();
    let out = render(&home);
    let bad = meta(&out.tree, &format!("kode/{BAD}"));
    assert!(
        !bad["warnings"].as_array().expect("warnings").is_empty(),
        "{bad}"
    );
    let torn = meta(&out.tree, &format!("kode/{TORN}"));
    let w = torn["warnings"].to_string();
    assert!(w.contains("cut after 1 records"), "{w}");
    assert!(read(&out.tree, &format!("kode/{TORN}/transcript.md"))
        .contains("Echo prompt before the cut"));
    assert!(read(&out.tree, &format!("kode/{TORN}/unparsed.txt")).contains("\"z2\""));
    let old = meta(&out.tree, &format!("kode/{OLD}"));
    let w = old["warnings"].to_string();
    assert!(w.contains("1 progress records"), "{w}");
}

#[test]
fn keys_and_error_logs_are_never_shown() {
    let home = write();
    let out = render(&home);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&home, SECRET, &[]);
}

#[test]
fn doctor_names_kode_and_where_it_found_it() {
    let home = write();
    let text = stdout(&home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 5 sessions", "kode")),
        "{text}"
    );
    assert!(text.contains(".kode"), "{text}");
}

#[test]
fn mounted_sessions_sizes_erofs_and_store_untouched() {
    let home = write();
    stores::mounted_untouched(&home, Home::snapshot, |m| {
        stores::assert_session_holds(
            m.path(),
            &format!("kode/{A}"),
            &["Alpha prompt: fix the parser", "Alpha reply two: fixed"],
            &["alpha-output: 3 tests failed"],
        );
        stores::assert_mount_read_only(m, &["kode"], 9, SECRET, &format!("kode/{LOG}"));
    });
}

/// Kode 2.0.2 and later write a REPL conversation twice: as JSONL and as a JSON-array log
/// whose records carry the JSONL session's id. The log is linked to it and what they share
/// counts once.
#[test]
fn a_log_of_a_conversation_also_in_jsonl_is_linked_and_counted_once() {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let sid = "1a2b3c4d-0000-4000-8000-00000000beef";
    let user = json!({"role": "user", "content": "Gamma prompt: rename the module"});
    let reply = assistant(
        "msg_g1",
        json!([{"type": "text", "text": "Renamed it."}]),
        (300, 40),
    );
    let jsonl_line = |ty: &str, uuid: &str, parent: Option<&str>, message: &Value| {
        let m = json!({"parentUuid": parent, "isSidechain": false, "userType": "external",
            "cwd": "/home/dev/gamma", "sessionId": sid, "version": "2.0.2", "type": ty,
            "message": message, "uuid": uuid, "timestamp": "2026-03-07T08:00:01.000Z"});
        format!("{m}\n")
    };
    put(
        &h,
        &format!(".kode/projects/-home-dev-gamma/{sid}.jsonl"),
        jsonl_line("user", "g1", None, &user) + &jsonl_line("assistant", "g2", Some("g1"), &reply),
    );
    let el = |ty: &str, uuid: &str, message: &Value| {
        json!({"type": ty, "uuid": uuid, "message": message, "cwd": "/home/dev/gamma",
               "sessionId": sid, "timestamp": "2026-03-07T08:00:09.000Z", "version": "2.0.2"})
    };
    let log = json!([
        el("user", "g1", &user),
        el("assistant", "g2", &reply),
        el(
            "user",
            "g3",
            &json!({"role": "user",
            "content": "<local-command-stdout>Gamma local output</local-command-stdout>"})
        ),
    ]);
    put(
        &h,
        ".kode/-home-dev-gamma/messages/2026-03-07T08-00-00-000Z.json",
        log.to_string(),
    );
    let out = stores::render(&home, "sessfs-kode", &[]);
    let jsonl = meta(&out.tree, &format!("kode/{sid}"));
    let logm = meta(&out.tree, "kode/2026-03-07T08-00-00-000Z");
    assert_eq!(jsonl["forkedFrom"], Value::Null);
    assert_eq!(logm["forkedFrom"], format!("kode:{sid}"));
    assert_eq!(jsonl["cost"]["inputTokens"], 300);
    assert_eq!(logm["cost"]["inputTokens"], 0, "{}", logm["cost"]);
    assert!(
        read(&out.tree, "kode/2026-03-07T08-00-00-000Z/transcript.md")
            .contains("Gamma local output")
    );
}

/// Kode appends to a session's JSONL and rewrites a log's JSON array whole at each turn:
/// both show within a second on a mount.
#[test]
fn an_appended_line_and_a_rewritten_log_show_within_a_second() {
    let home = write();
    let m = Mount::new(&home, &[]);
    let jsonl = m.path().join(format!("kode/{A}/transcript.md"));
    let logged = m.path().join(format!("kode/{LOG}/transcript.md"));
    assert!(stores::file_contains(
        &jsonl,
        "Alpha prompt: fix the parser"
    ));
    assert!(stores::file_contains(&logged, "Bravo reply: src and tests"));

    let path = home
        .path()
        .join(format!(".kode/projects/-home-dev-alpha/{A}.jsonl"));
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    std::io::Write::write_all(
        &mut f,
        line(
            "user",
            "u9",
            Some("a2"),
            9,
            json!({"role": "user", "content": "Alpha fresh prompt after the mount"}),
        )
        .as_bytes(),
    )
    .expect("append");
    drop(f);
    stores::assert_within_a_second("appended line", || {
        stores::file_contains(&jsonl, "Alpha fresh prompt after the mount")
    });

    let path = home
        .path()
        .join(format!(".kode/-home-dev-beta/messages/{LOG}.json"));
    let mut log: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    let mut last = log.as_array().expect("array").last().expect("last").clone();
    last["uuid"] = json!("l9");
    last["message"] = assistant(
        "msg_l9",
        json!([{"type": "text", "text": "Bravo fresh reply after the mount"}]),
        (700, 30),
    );
    log.as_array_mut().expect("array").push(last);
    std::fs::write(&path, serde_json::to_vec_pretty(&log).expect("json")).expect("write");
    stores::assert_within_a_second("rewritten log", || {
        stores::file_contains(&logged, "Bravo fresh reply after the mount")
    });
}
