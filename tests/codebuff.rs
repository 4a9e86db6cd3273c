//! Codebuff chats, written here the way Codebuff's CLI writes them (CodebuffAI/codebuff
//! `cli/src/utils/run-state-storage.ts`: `chat-messages.json`, the UI's messages and
//! blocks, and `run-state.json`, the agent's state and message history, rewritten whole in
//! `~/.config/manicode/projects/<project>/chats/<chat id>/`, `chat-meta.json` beside them;
//! the older npm CLI's `messages.json`), rendered with `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, read, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// The auth token, planted where Codebuff keeps it.
const SECRET: &str = "codebuff-PLANTED-auth-token-doNotRead-0000";

const A_CHAT: &str = ".config/manicode/projects/alpha/chats/2026-03-01T10-00-00.000Z";
const A: &str = "codebuff/alpha-2026-03-01T10-00-00.000Z";
const B_CHAT: &str = ".config/manicode-dev/projects/bravo/chats/2026-03-02T11-30-00.000Z";
const B: &str = "codebuff/bravo-2026-03-02T11-30-00.000Z";
const C_CHAT: &str = ".config/manicode/projects/charlie/chats/2026-03-03T12-00-00.000Z";
const C: &str = "codebuff/charlie-2026-03-03T12-00-00.000Z";
const D_CHAT: &str = ".config/manicode/projects/delta/chats/2025-06-01T08-00-00.000Z";
const D: &str = "codebuff/delta-2025-06-01T08-00-00.000Z";

struct Session {
    dir: &'static str,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
}

struct Fixture {
    home: Home,
    sessions: Vec<Session>,
}

fn user_msg(id: &str, text: &str, ts: &str) -> Value {
    json!({"id": id, "variant": "user", "content": text, "timestamp": ts})
}

fn run_state(cwd: &str, system: &str, history: Value) -> Value {
    json!({
        "sessionState": {
            "fileContext": {"projectRoot": cwd, "cwd": cwd, "fileTree": [], "knowledgeFiles": {},
                            "gitChanges": {"status": "", "diff": "", "diffCached": "", "lastCommitMessages": ""}},
            "mainAgentState": {"agentId": "main-agent", "agentType": "base2", "agentContext": {},
                               "subagents": [], "childRunIds": [], "ancestorRunIds": [],
                               "messageHistory": history, "stepsRemaining": 20,
                               "creditsUsed": 0, "directCreditsUsed": 0, "systemPrompt": system,
                               "toolDefinitions": {}, "contextTokenCount": 100}
        },
        "output": {"type": "lastMessage", "value": []}
    })
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut sessions = Vec::new();

    // --- A: the whole of a chat, in both files.
    let ui = json!([
        {"id": "div-1", "variant": "ai", "content": "", "timestamp": "2026-03-01T10:00:00.000Z",
         "blocks": [{"type": "mode-divider", "mode": "MAX"}]},
        user_msg("u-1", "Alpha prompt: the tests hang", "2026-03-01T10:00:05.000Z"),
        {"id": "ai-1", "variant": "ai", "content": "", "timestamp": "2026-03-01T10:00:30.000Z",
         "isComplete": true, "credits": 12.5, "completionTime": "25s",
         "metadata": {"runState": {"output": {"type": "lastMessage"}}},
         "blocks": [
            {"type": "text", "textType": "reasoning", "content": "Alpha thinking: a test waits on a socket"},
            {"type": "text", "textType": "text", "content": "Alpha reply: running the suite"},
            {"type": "tool", "toolCallId": "call-a1", "toolName": "run_terminal_command",
             "input": {"command": "bun test"}, "output": "alpha terminal rendering"},
            {"type": "tool", "toolCallId": "call-a2", "toolName": "read_files",
             "input": {"paths": ["missing.ts"]}, "output": "alpha read rendering"},
            {"type": "agent", "agentId": "sub-7", "agentName": "File Picker", "agentType": "file-picker",
             "status": "complete", "spawnToolCallId": "call-a3",
             "initialPrompt": "Alpha subagent prompt: find the socket code",
             "blocks": [{"type": "text", "content": "Alpha subagent report: src/net.ts"}]},
            {"type": "text", "textType": "text", "content": "Alpha reply after the tools"}
         ]},
        {"id": "ai-2", "variant": "ai", "content": "", "timestamp": "2026-03-01T10:01:00.000Z",
         "blocks": [], "userError": "Alpha error: out of credits"}
    ]);
    let history = json!([
        {"role": "user", "tags": ["USER_PROMPT"], "sentAt": 1772358000000u64,
         "content": [{"type": "text", "text": "<user_message>Alpha early prompt the UI no longer keeps</user_message>"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Alpha early reply"}]},
        {"role": "user", "tags": ["USER_PROMPT"],
         "content": [{"type": "text", "text": "<user_message>Alpha prompt: the tests hang</user_message>"}]},
        {"role": "user", "tags": ["INSTRUCTIONS_PROMPT"],
         "content": [{"type": "text", "text": "Alpha instructions: read before editing"}]},
        {"role": "assistant", "content": [
            {"type": "reasoning", "text": "Alpha thinking: a test waits on a socket"},
            {"type": "text", "text": "Alpha reply: running the suite"},
            {"type": "tool-call", "toolCallId": "call-a1", "toolName": "run_terminal_command", "input": {"command": "bun test"}},
            {"type": "tool-call", "toolCallId": "call-a2", "toolName": "read_files", "input": {"paths": ["missing.ts"]}}]},
        {"role": "tool", "toolCallId": "call-a1", "toolName": "run_terminal_command",
         "content": [{"type": "json", "value": {"command": "bun test", "stdout": "alpha-output: 1 test timed out", "exitCode": 1}}]},
        {"role": "tool", "toolCallId": "call-a2", "toolName": "read_files",
         "content": [{"type": "json", "value": {"errorMessage": "alpha-failure: missing.ts does not exist"}}]},
        {"role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": "call-a3", "toolName": "spawn_agents", "input": {"agents": [{"agent_type": "file-picker"}]}}]},
        {"role": "tool", "toolCallId": "call-a3", "toolName": "spawn_agents",
         "content": [{"type": "json", "value": [{"agentType": "file-picker", "value": "src/net.ts"}]}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Alpha reply after the tools"}]}
    ]);
    put(&h, &format!("{A_CHAT}/chat-messages.json"), ui.to_string());
    put(
        &h,
        &format!("{A_CHAT}/run-state.json"),
        run_state(
            "/home/dev/alpha",
            "Alpha system prompt: you are Buffy",
            history,
        )
        .to_string(),
    );
    put(
        &h,
        &format!("{A_CHAT}/chat-meta.json"),
        json!({"messageCount": 4, "firstPrompt": "Alpha prompt: the tests hang",
               "messagesSize": 10, "messagesMtimeMs": 1, "name": "Alpha named chat"})
        .to_string(),
    );
    sessions.push(Session {
        dir: A,
        lines: vec![
            "Alpha system prompt: you are Buffy",
            "Alpha early prompt the UI no longer keeps",
            "Alpha early reply",
            "Alpha prompt: the tests hang",
            "Alpha instructions: read before editing",
            "Alpha thinking: a test waits on a socket",
            "Alpha reply: running the suite",
            "Alpha subagent prompt: find the socket code",
            "Alpha subagent report: src/net.ts",
            "Alpha reply after the tools",
            "Alpha error: out of credits",
        ],
        outputs: vec![
            "alpha-output: 1 test timed out",
            "alpha-failure: missing.ts does not exist",
        ],
    });

    // --- B: the dev channel; run-state.json torn, the previous save in run-state.json.bak.
    put(
        &h,
        &format!("{B_CHAT}/chat-messages.json"),
        json!([
            user_msg("u-1", "Bravo prompt: rename the flag", "2026-03-02T11:30:05.000Z"),
            {"id": "ai-1", "variant": "ai", "content": "", "timestamp": "2026-03-02T11:30:20.000Z",
             "credits": 3, "blocks": [{"type": "text", "content": "Bravo reply: renamed"}]}
        ])
        .to_string(),
    );
    put(
        &h,
        &format!("{B_CHAT}/run-state.json"),
        "{\"sessionState\": {\"mainAg",
    );
    put(
        &h,
        &format!("{B_CHAT}/run-state.json.bak"),
        run_state(
            "/home/dev/bravo",
            "Bravo system prompt from the backup",
            json!([{"role": "user", "tags": ["USER_PROMPT"],
                    "content": [{"type": "text", "text": "Bravo prompt: rename the flag"}]}]),
        )
        .to_string(),
    );
    sessions.push(Session {
        dir: B,
        lines: vec![
            "Bravo prompt: rename the flag",
            "Bravo reply: renamed",
            "Bravo system prompt from the backup",
        ],
        outputs: vec![],
    });

    // --- C: chat-messages.json cut off mid-write; the history still shows.
    put(
        &h,
        &format!("{C_CHAT}/chat-messages.json"),
        "[{\"id\": \"u-1\", \"variant\": \"user\", \"content\": \"Charlie cut",
    );
    put(
        &h,
        &format!("{C_CHAT}/run-state.json"),
        run_state(
            "/home/dev/charlie",
            "",
            json!([
                {"role": "user", "tags": ["USER_PROMPT"], "content": [{"type": "text", "text": "Charlie prompt from the history"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "Charlie reply from the history"}]}
            ]),
        )
        .to_string(),
    );
    sessions.push(Session {
        dir: C,
        lines: vec![
            "Charlie prompt from the history",
            "Charlie reply from the history",
        ],
        outputs: vec![],
    });

    // --- D: the older npm CLI's messages.json.
    put(
        &h,
        &format!("{D_CHAT}/messages.json"),
        json!({"id": "2025-06-01T08-00-00.000Z", "updatedAt": "2025-06-01T08:05:00.000Z", "messages": [
            {"role": "user", "content": "Delta prompt: from the npm CLI"},
            {"role": "assistant", "content": [{"type": "text", "text": "Delta reply: reading"},
                {"type": "tool-call", "toolCallId": "call-d1", "toolName": "read_files", "input": {"paths": ["a.ts"]}}]},
            {"role": "tool", "content": {"type": "tool-result", "toolCallId": "call-d1", "toolName": "read_files",
                "output": {"type": "json", "value": "delta-output: export const a = 1"}}}
        ]})
        .to_string(),
    );
    sessions.push(Session {
        dir: D,
        lines: vec!["Delta prompt: from the npm CLI", "Delta reply: reading"],
        outputs: vec!["delta-output: export const a = 1"],
    });

    put(
        &h,
        ".config/manicode/credentials.json",
        json!({"default": {"id": "u1", "email": "dev@example.com", "authToken": SECRET}})
            .to_string(),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-codebuff", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.sessions {
        stores::assert_session_holds(tree, s.dir, &s.lines, &s.outputs);
    }
}

#[test]
fn render_shows_every_chat_and_each_line_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "codebuff"), 4);
}

#[test]
fn what_both_files_hold_is_shown_once_and_what_only_the_history_holds_in_place() {
    let fx = write();
    let out = render(&fx);
    let t = read(&out.tree, &format!("{A}/transcript.md"));
    for once in [
        "Alpha prompt: the tests hang",
        "Alpha reply: running the suite",
        "Alpha reply after the tools",
        "Alpha thinking: a test waits on a socket",
    ] {
        assert_eq!(t.matches(once).count(), 1, "{once}:\n{t}");
    }
    let msgs = messages(&out.tree, A);
    let find = |s: &str| {
        msgs.iter()
            .position(|m| m["content"].as_str().is_some_and(|c| c.contains(s)))
            .unwrap_or_else(|| panic!("{s} not in messages.jsonl"))
    };
    // The history before the transcript's first message comes first; the instructions
    // stand after the prompt they follow, before the reply.
    let early = find("Alpha early prompt the UI no longer keeps");
    let prompt = find("Alpha prompt: the tests hang");
    let instr = find("Alpha instructions: read before editing");
    let reply = find("Alpha reply: running the suite");
    assert!(
        early < prompt && prompt < instr && instr < reply,
        "{msgs:?}"
    );
    assert_eq!(msgs[early]["role"], "user");
    assert_eq!(msgs[prompt]["role"], "user");
    assert_eq!(msgs[instr]["role"], "system");
    assert_eq!(msgs[instr]["kind"], "context");
    assert_eq!(msgs[instr]["label"], "instructions prompt");
    assert_eq!(msgs[0]["label"], "system prompt");
    assert_eq!(msgs[0]["content"], "Alpha system prompt: you are Buffy");
    assert_eq!(
        msgs[reply]["thinking"],
        "Alpha thinking: a test waits on a socket"
    );
    let mode = find("mode: MAX");
    assert_eq!(msgs[mode]["kind"], "event");
    let err = find("Alpha error: out of credits");
    assert_eq!(msgs[err]["kind"], "event");
}

#[test]
fn calls_pair_with_the_results_the_model_read_and_a_failure_is_flagged() {
    let fx = write();
    let out = render(&fx);
    let msgs = messages(&out.tree, A);
    let reply = msgs
        .iter()
        .find(|m| m["content"] == "Alpha reply: running the suite")
        .expect("reply");
    let calls = reply["toolCalls"].as_array().expect("calls");
    let ids: Vec<&str> = calls
        .iter()
        .filter_map(|c| c["toolCallId"].as_str())
        .collect();
    assert_eq!(ids, ["call-a1", "call-a2"], "{reply}");
    assert_eq!(calls[0]["toolName"], "run_terminal_command");
    assert_eq!(calls[0]["input"]["command"], "bun test");
    let result = |id: &str| {
        msgs.iter()
            .find(|m| m["toolResult"]["toolCallId"] == id)
            .unwrap_or_else(|| panic!("no result for {id}"))["toolResult"]
            .clone()
    };
    let ok = result("call-a1");
    assert_eq!(ok["isError"], false);
    assert!(ok["output"]
        .as_str()
        .is_some_and(|o| o.contains("alpha-output: 1 test timed out")));
    let bad = result("call-a2");
    assert_eq!(bad["isError"], true, "{bad}");
    assert!(bad["output"]
        .as_str()
        .is_some_and(|o| o.contains("alpha-failure: missing.ts does not exist")));
    // The terminal's rendering of a result the history holds is not shown a second time.
    let t = read(&out.tree, &format!("{A}/transcript.md"));
    assert!(!t.contains("alpha terminal rendering"), "{t}");
    // The sub-agent is nested, linked to the spawn call; its work is not in the parent.
    let m = meta(&out.tree, A);
    let sub = &m["subagents"][0];
    assert_eq!(sub["name"], "agent-sub-7", "{m}");
    assert_eq!(sub["toolCallId"], "call-a3");
    let st = read(
        &out.tree,
        &format!("{A}/subagents/agent-sub-7/transcript.md"),
    );
    assert!(st.contains("Alpha subagent report: src/net.ts"), "{st}");
    assert!(!t.contains("Alpha subagent report"), "{t}");
}

#[test]
fn title_cwd_project_agent_and_credits_come_from_the_chat() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, A);
    assert_eq!(a["title"], "Alpha named chat");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["createdAt"], "2026-03-01T10:00:00.000Z");
    let tags = a["tags"].to_string();
    assert!(
        tags.contains("project:alpha") && tags.contains("agent:base2"),
        "{tags}"
    );
    // 12.5 credits, a credit being a cent.
    stores::assert_usd(&a["cost"], 0.125, A);
    assert_eq!(a["model"], Value::Null);
    let b = meta(&out.tree, B);
    stores::assert_usd(&b["cost"], 0.03, B);
    assert_eq!(b["cwd"], "/home/dev/bravo");
    assert_eq!(b["title"], "Bravo prompt: rename the flag");
}

#[test]
fn a_torn_file_costs_a_warning_and_the_other_chats_still_load() {
    let fx = write();
    let out = render(&fx);
    let b = meta(&out.tree, B)["warnings"].to_string();
    assert!(b.contains("run-state.json: invalid JSON"), "{b}");
    assert!(b.contains("run-state.json.bak"), "{b}");
    let c = meta(&out.tree, C)["warnings"].to_string();
    assert!(c.contains("chat-messages.json: invalid JSON"), "{c}");
    assert!(meta(&out.tree, A)["warnings"]
        .as_array()
        .is_some_and(Vec::is_empty));
    let d = meta(&out.tree, D);
    assert_eq!(d["source"]["format"], "codebuff-messages-json");
    assert_eq!(d["updatedAt"], "2025-06-01T08:05:00.000Z");
}

#[test]
fn the_auth_token_is_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn doctor_names_codebuff_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 4 sessions", "codebuff")),
        "{text}"
    );
    assert!(text.contains(".config/manicode-dev"), "{text}");
}

#[test]
fn mounted_chats_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["codebuff"], 12, SECRET, A);
    });
}

/// Codebuff rewrites a chat's `chat-messages.json` whole after each message: the new
/// message shows within a second on a mount.
#[test]
fn a_rewritten_chat_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("{A}/transcript.md"));
    assert!(stores::file_contains(&t, "Alpha reply after the tools"));
    let path = fx.home.path().join(format!("{A_CHAT}/chat-messages.json"));
    let mut ui: Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    ui.as_array_mut().expect("array").push(user_msg(
        "u-9",
        "Alpha fresh prompt after the mount",
        "2026-03-01T10:05:00.000Z",
    ));
    std::fs::write(&path, ui.to_string()).expect("write");
    stores::assert_within_a_second("rewritten chat", || {
        stores::file_contains(&t, "Alpha fresh prompt after the mount")
    });
}
