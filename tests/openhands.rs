//! OpenHands CLI: `~/.openhands/conversations/<id>/` written here as the SDK lays it out
//! (`base_state.json` with the LLM stats, one `events/event-<idx>-<id>.json` per event, a
//! branch, a damaged event file), with credentials in the state and beside it; rendered
//! with `sessfs render` and mounted once. Expected values are the writer's own record.

mod common;

use common::stores::{self, meta, put, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A credential-shaped string planted in the state's LLM config, its secret registry, a
/// state-update event and the CLI's settings.
const SECRET: &str = "sk-oh-PLANTEDopenhandsSECRETdoNotRead0000";

const A: &str = "a1a1a1a1a1a14aaa8aaa000000000001";
const B: &str = "b2b2b2b2b2b24bbb8bbb000000000002";
const C: &str = "c3c3c3c3c3c34ccc8ccc000000000003";
const CONV: &str = ".openhands/conversations";

struct Written {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
}

/// Write `events` as the SDK names them; each gets its index and, when it has none, the
/// event before it as parent.
fn events(h: &Path, conv: &str, events: &[Value]) {
    for (i, e) in events.iter().enumerate() {
        let id = e["id"].as_str().expect("id");
        put(
            h,
            &format!("{CONV}/{conv}/events/event-{i:05}-{id}.json"),
            serde_json::to_vec_pretty(e).expect("json"),
        );
    }
}

fn ev(kind: &str, id: &str, ts: &str, source: &str, rest: Value) -> Value {
    let mut v = json!({"kind": kind, "id": id, "timestamp": ts, "source": source});
    for (k, x) in rest.as_object().expect("object") {
        v[k] = x.clone();
    }
    v
}

fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

fn user(id: &str, ts: &str, t: &str) -> Value {
    ev(
        "MessageEvent",
        id,
        ts,
        "user",
        json!({"llm_message": {"role": "user", "content": text(t)}}),
    )
}

/// A usage record: prompt, completion, cache reads, cache writes, reasoning, response id.
fn usage(u: (u64, u64, u64, u64, u64), resp: &str) -> Value {
    json!({"model": "claude-sonnet-4-5-20250929", "prompt_tokens": u.0,
           "completion_tokens": u.1, "cache_read_tokens": u.2, "cache_write_tokens": u.3,
           "reasoning_tokens": u.4, "context_window": 200000, "per_turn_token": 1,
           "response_id": resp})
}

fn cost(c: f64) -> Value {
    json!({"model": "claude-sonnet-4-5-20250929", "cost": c, "timestamp": 1.0})
}

fn write() -> (Home, Vec<Written>) {
    let home = Home::empty();
    let h = home.path();
    let mut out = Vec::new();

    // --- A: system prompt, a prompt with skill context, two parallel actions from one
    // response, their observations (one an error), a reply with thinking, a condensation,
    // a rejected action, and records that are not shown.
    put(
        h,
        &format!("{CONV}/{A}/base_state.json"),
        json!({
            "id": "a1a1a1a1-a1a1-4aaa-8aaa-000000000001",
            "agent": {"kind": "Agent", "llm": {"model": "claude-sonnet-4-5-20250929",
                      "api_key": SECRET, "usage_id": "agent"}, "tools": []},
            "workspace": {"kind": "LocalWorkspace", "working_dir": "/home/dev/alpha"},
            "persistence_dir": format!("/home/dev/.openhands/conversations/{A}"),
            "execution_status": "finished",
            "leaf_event_id": "a-14",
            "secret_registry": {"secret_sources": {"GITHUB_TOKEN": {"kind": "StaticSecret", "value": SECRET}}},
            "stats": {"usage_to_metrics": {
                "agent": {"model_name": "claude-sonnet-4-5-20250929", "accumulated_cost": 0.035,
                          "costs": [cost(0.01), cost(0.02), cost(0.005)],
                          "response_latencies": [],
                          "token_usages": [usage((1000, 100, 600, 200, 20), "resp-1"),
                                           usage((1500, 50, 1200, 100, 0), "resp-2"),
                                           usage((1600, 40, 1500, 0, 0), "resp-3")]},
                // No cost recorded: estimated at list price.
                "condenser": {"model_name": "claude-sonnet-4-5-20250929", "costs": [],
                              "token_usages": [usage((2000, 300, 0, 0, 0), "resp-4")]},
                // A call no event names.
                "title": {"model_name": "claude-sonnet-4-5-20250929", "costs": [cost(0.001)],
                          "token_usages": [usage((50, 10, 0, 0, 0), "resp-5")]}}}
        })
        .to_string(),
    );
    let t = "2026-05-01T10:00:0";
    events(
        h,
        A,
        &[
            ev(
                "SystemPromptEvent",
                "a-0",
                &format!("{t}0.000000"),
                "agent",
                json!({"system_prompt": {"type": "text", "text": "Alpha system prompt: be careful"},
                      "tools": [{"name": "terminal"}, {"name": "file_editor"}]}),
            ),
            ev(
                "MessageEvent",
                "a-1",
                &format!("{t}1.000000"),
                "user",
                json!({"llm_message": {"role": "user", "content": text("Alpha prompt: list the files")},
                      "activated_skills": ["repo"],
                      "extended_content": text("Alpha skill context: the repo uses make")}),
            ),
            ev(
                "ActionEvent",
                "a-2",
                &format!("{t}2.000000"),
                "agent",
                json!({"thought": text("Alpha thought: list them and read the readme"),
                      "reasoning_content": "Alpha reasoning: ls first",
                      "tool_name": "terminal", "tool_call_id": "call_1",
                      "tool_call": {"id": "call_1", "name": "terminal", "arguments": "{\"command\": \"ls\"}", "origin": "completion"},
                      "action": {"kind": "TerminalAction", "command": "ls"},
                      "llm_response_id": "resp-1", "security_risk": "LOW"}),
            ),
            ev(
                "ActionEvent",
                "a-3",
                &format!("{t}2.100000"),
                "agent",
                json!({"thought": [], "tool_name": "file_editor", "tool_call_id": "call_2",
                      "tool_call": {"id": "call_2", "name": "file_editor", "arguments": "{\"command\": \"view\", \"path\": \"README\"}", "origin": "completion"},
                      "action": {"kind": "FileEditorAction", "command": "view", "path": "README"},
                      "llm_response_id": "resp-1"}),
            ),
            ev(
                "ObservationEvent",
                "a-4",
                &format!("{t}3.000000"),
                "environment",
                json!({"tool_name": "terminal", "tool_call_id": "call_1", "action_id": "a-2",
                      "observation": {"kind": "TerminalObservation", "content": text("alpha-output: Makefile README"),
                                      "is_error": false, "command": "ls", "exit_code": 0}}),
            ),
            ev(
                "ObservationEvent",
                "a-5",
                &format!("{t}3.500000"),
                "environment",
                json!({"tool_name": "file_editor", "tool_call_id": "call_2", "action_id": "a-3",
                      "observation": {"kind": "FileEditorObservation", "content": text("alpha-error: README is a directory"),
                                      "is_error": true}}),
            ),
            ev(
                "MessageEvent",
                "a-6",
                &format!("{t}4.000000"),
                "agent",
                json!({"llm_message": {"role": "assistant", "content": text("Alpha reply: there is a Makefile."),
                                      "thinking_blocks": [{"type": "thinking", "thinking": "Alpha thinking block: summarise", "signature": "c2ln"}]},
                      "llm_response_id": "resp-2"}),
            ),
            ev(
                "Condensation",
                "a-7",
                &format!("{t}5.000000"),
                "environment",
                json!({"forgotten_event_ids": ["a-2", "a-3"], "summary": "Alpha summary: the files were listed.",
                      "summary_offset": 1, "llm_response_id": "resp-4"}),
            ),
            user(
                "a-8",
                &format!("{t}6.000000"),
                "Alpha second prompt: delete the build dir",
            ),
            ev(
                "ActionEvent",
                "a-9",
                &format!("{t}7.000000"),
                "agent",
                json!({"thought": text("Alpha thought two: rm it"), "tool_name": "terminal", "tool_call_id": "call_3",
                      "tool_call": {"id": "call_3", "name": "terminal", "arguments": "{\"command\": \"rm -rf build\"}", "origin": "completion"},
                      "llm_response_id": "resp-3"}),
            ),
            ev(
                "UserRejectObservation",
                "a-10",
                &format!("{t}8.000000"),
                "user",
                json!({"tool_name": "terminal", "tool_call_id": "call_3", "action_id": "a-9",
                      "rejection_reason": "alpha-rejected: too risky", "rejection_source": "user"}),
            ),
            ev(
                "TokenEvent",
                "a-11",
                &format!("{t}8.100000"),
                "agent",
                json!({"prompt_token_ids": [1, 2], "response_token_ids": [3]}),
            ),
            ev(
                "LLMCompletionLogEvent",
                "a-12",
                &format!("{t}8.200000"),
                "environment",
                json!({"filename": "x.json", "log_data": "{}", "model_name": "m", "usage_id": "agent"}),
            ),
            ev(
                "ConversationStateUpdateEvent",
                "a-13",
                &format!("{t}8.300000"),
                "environment",
                json!({"key": "full_state", "value": {"secret_registry": {"value": SECRET}}}),
            ),
            ev(
                "PauseEvent",
                "a-14",
                &format!("{t}9.000000"),
                "user",
                json!({}),
            ),
        ],
    );
    out.push(Written {
        dir: format!("openhands/{A}"),
        lines: vec![
            "Alpha system prompt: be careful",
            "Alpha prompt: list the files",
            "Alpha skill context: the repo uses make",
            "Alpha thought: list them and read the readme",
            "Alpha reasoning: ls first",
            "Alpha reply: there is a Makefile.",
            "Alpha thinking block: summarise",
            "Alpha summary: the files were listed.",
            "Alpha second prompt: delete the build dir",
            "Alpha thought two: rm it",
        ],
        outputs: vec![
            "alpha-output: Makefile README",
            "alpha-error: README is a directory",
            "alpha-rejected: too risky",
        ],
    });

    // --- B: edited after the first reply (a branch), a damaged event file, an event kind
    // this reader does not know. No stats.
    put(
        h,
        &format!("{CONV}/{B}/base_state.json"),
        json!({"id": B, "agent": {"kind": "Agent", "llm": {"model": "gpt-5", "api_key": SECRET}},
               "workspace": {"kind": "LocalWorkspace", "working_dir": "/home/dev/bravo"},
               "leaf_event_id": "b-4"})
        .to_string(),
    );
    let t = "2026-05-02T09:00:0";
    let mut first = ev(
        "MessageEvent",
        "b-2",
        &format!("{t}2"),
        "agent",
        json!({"llm_message": {"role": "assistant", "content": text("Bravo first answer, later abandoned")}}),
    );
    first["parent_id"] = json!("b-1");
    let mut edited = user("b-3", &format!("{t}3"), "Bravo edited prompt");
    edited["parent_id"] = json!("b-0");
    let mut second = ev(
        "MessageEvent",
        "b-4",
        &format!("{t}4"),
        "agent",
        json!({"llm_message": {"role": "assistant", "content": text("Bravo second answer")}}),
    );
    second["parent_id"] = json!("b-3");
    let mut hologram = ev(
        "HologramEvent",
        "b-1",
        &format!("{t}1"),
        "agent",
        json!({"note": "Bravo hologram event"}),
    );
    hologram["parent_id"] = json!("b-0");
    events(
        h,
        B,
        &[
            user("b-0", &format!("{t}0"), "Bravo prompt: hello"),
            hologram,
            first,
            edited,
            second,
        ],
    );
    put(
        h,
        &format!("{CONV}/{B}/events/event-00005-b-5.json"),
        "{\"kind\": \"MessageEvent\", \"id\": \"b-5\", Bravo damaged event",
    );
    out.push(Written {
        dir: format!("openhands/{B}"),
        lines: vec![
            "Bravo prompt: hello",
            "Bravo hologram event",
            "Bravo first answer, later abandoned",
            "Bravo edited prompt",
            "Bravo second answer",
            "Bravo damaged event",
        ],
        outputs: vec![],
    });

    // --- C: events only (no state file), no parent ids, an ACP tool call, an agent error
    // on a call, a hook.
    let t = "2026-05-03T08:00:0";
    events(
        h,
        C,
        &[
            user("c-0", &format!("{t}0"), "Charlie prompt: run the linter"),
            ev(
                "ACPToolCallEvent",
                "c-1",
                &format!("{t}1"),
                "agent",
                json!({"tool_call_id": "acp_1", "title": "lint", "status": "completed",
                      "raw_input": {"cmd": "lint"}, "raw_output": "charlie-acp-output: 0 problems"}),
            ),
            ev(
                "ActionEvent",
                "c-2",
                &format!("{t}2"),
                "agent",
                json!({"thought": [], "tool_name": "terminal", "tool_call_id": "call_c",
                      "tool_call": {"id": "call_c", "name": "terminal", "arguments": "{not json", "origin": "completion"},
                      "llm_response_id": "resp-c"}),
            ),
            ev(
                "AgentErrorEvent",
                "c-3",
                &format!("{t}3"),
                "agent",
                json!({"tool_name": "terminal", "tool_call_id": "call_c", "error": "charlie-error: arguments are not JSON"}),
            ),
            ev(
                "HookExecutionEvent",
                "c-4",
                &format!("{t}4"),
                "hook",
                json!({"hook_event_type": "Stop", "hook_command": "./check.sh", "success": true,
                      "blocked": false, "exit_code": 0, "stdout": "Charlie hook stdout"}),
            ),
        ],
    );
    out.push(Written {
        dir: format!("openhands/{C}"),
        lines: vec!["Charlie prompt: run the linter", "Charlie hook stdout"],
        outputs: vec![
            "charlie-acp-output: 0 problems",
            "charlie-error: arguments are not JSON",
        ],
    });

    // Beside the conversations: the CLI's settings and MCP config.
    put(
        h,
        ".openhands/agent_settings.json",
        json!({"llm": {"api_key": SECRET}}).to_string(),
    );
    put(
        h,
        ".openhands/mcp.json",
        json!({"mcpServers": {"x": {"env": {"T": SECRET}}}}).to_string(),
    );

    let mut home = home;
    home.files = common::files_under(home.path());
    (home, out)
}

fn render(home: &Home) -> Rendered {
    stores::render(
        home,
        "sessfs-openhands",
        &["OPENHANDS_PERSISTENCE_DIR", "OPENHANDS_CONVERSATIONS_DIR"],
    )
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
    assert_eq!(stores::entries(&out.tree, "openhands"), 3);
}

/// Five LLM calls: three of the agent (with costs), the condenser's (no cost recorded:
/// estimated at claude-sonnet-4's 3/15 USD per million), and a title call no event names.
/// Input is the prompt count less cache reads and writes; output less reasoning.
#[test]
fn usage_and_cost_are_counted_once_per_llm_call() {
    let (home, _) = write();
    let out = render(&home);
    // input 200+200+100+2000+50, output 80+50+40+300+10, cache reads 600+1200+1500,
    // cache writes 200+100; USD 0.01+0.02+0.005+0.0105+0.001.
    stores::assert_cost(
        &out.tree,
        &format!("openhands/{A}"),
        (2550, 480, 3300, 300, 0.0465),
    );
    let c = &meta(&out.tree, &format!("openhands/{A}"))["cost"];
    assert_eq!(c["thinkingTokens"], 20, "{c}");
    let c = &meta(&out.tree, &format!("openhands/{B}"))["cost"];
    assert_eq!(c["inputTokens"], 0, "{c}");
}

#[test]
fn cwd_model_title_branches_and_damage_come_from_the_files() {
    let (home, _) = write();
    let out = render(&home);
    let t = &out.tree;
    let a = meta(t, &format!("openhands/{A}"));
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(a["title"], "Alpha prompt: list the files");
    let b = meta(t, &format!("openhands/{B}"));
    assert_eq!(b["title"], "Bravo prompt: hello");
    assert_eq!(b["branches"].as_array().map(Vec::len), Some(1), "{b}");
    let transcript = std::fs::read_to_string(t.join(format!("openhands/{B}/transcript.md")))
        .expect("transcript");
    assert!(!transcript.contains("Bravo first answer"), "{transcript}");
    let warnings = b["warnings"].to_string();
    assert!(warnings.contains("kind HologramEvent"), "{warnings}");
    assert!(warnings.contains("event-00005-b-5.json"), "{warnings}");
    let warnings = a["warnings"].to_string();
    assert!(warnings.contains("TokenEvent"), "{warnings}");
    assert!(warnings.contains("LLMCompletionLogEvent"), "{warnings}");
}

#[test]
fn credentials_in_the_state_and_beside_it_are_never_shown() {
    let (home, _) = write();
    let out = render(&home);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&home, SECRET, &[]);
}

#[test]
fn doctor_names_openhands_and_its_conversations() {
    let (home, _) = write();
    let text = stdout(&home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 3 sessions", "openhands")),
        "{text}"
    );
}

#[test]
fn mounted_conversations_grep_sizes_erofs_and_store_untouched() {
    let (home, written) = write();
    stores::mounted_untouched(&home, Home::snapshot, |m| {
        check_tree(m.path(), &written);
        stores::assert_mount_read_only(m, &["openhands"], 12, SECRET, &format!("openhands/{A}"));
    });
}

/// The SDK writes each event as a new file: a new event and a new conversation show
/// through the mount within a second.
#[test]
fn a_new_event_and_a_new_conversation_show_within_a_second() {
    let (home, _) = write();
    let m = Mount::new(&home, &[]);
    let session = m.path().join(format!("openhands/{C}/transcript.md"));
    assert!(stores::file_contains(&session, "Charlie prompt"));
    put(
        home.path(),
        &format!("{CONV}/{C}/events/event-00005-c-5.json"),
        user(
            "c-5",
            "2026-05-03T08:00:05",
            "Charlie prompt after the mount",
        )
        .to_string(),
    );
    stores::assert_within_a_second("new event", || {
        stores::file_contains(&session, "Charlie prompt after the mount")
    });
    let d = "d4d4d4d4d4d44ddd8ddd000000000004";
    events(
        home.path(),
        d,
        &[user(
            "d-0",
            "2026-05-04T00:00:00",
            "Delta: a new conversation",
        )],
    );
    stores::assert_within_a_second("new conversation", || {
        stores::file_contains(
            &m.path().join(format!("openhands/{d}/transcript.md")),
            "Delta: a new",
        )
    });
}

/// The OpenHands store's glance (the conversations directory and each directory in it):
/// with nothing changed a search lists no store; a new event, a conversation whose
/// `events/` appears in a directory made before it, and a deleted conversation are each
/// found by the next search.
#[test]
fn openhands_changes_are_found_by_the_next_search() {
    use common::{age, logged_search};
    use std::collections::BTreeSet;
    const ONE: &str = "e1e1e1e1e1e14eee8eee000000000001";
    const TWO: &str = "e1e1e1e1e1e14eee8eee000000000002";
    const THREE: &str = "e1e1e1e1e1e14eee8eee000000000003";
    let set = |ids: &[&str]| -> BTreeSet<String> {
        ids.iter().map(|id| format!("openhands/{id}")).collect()
    };
    let home = Home::empty();
    let h = home.path();
    let conv = h.join(CONV);
    for (id, word) in [(ONE, "ohone"), (TWO, "ohtwo")] {
        let prompt = format!("the {word} question");
        events(h, id, &[user("u-0", "2026-05-05T08:00:00", &prompt)]);
    }
    for d in [
        conv.join(ONE),
        conv.join(TWO),
        conv.clone(),
        h.join(".openhands"),
    ] {
        age(&d, 3600);
    }
    assert_eq!(logged_search(&home, "ohone"), (set(&[ONE]), false));
    assert_eq!(logged_search(&home, "ohtwo"), (set(&[TWO]), true));
    // A new event.
    let next = user("u-1", "2026-05-05T08:00:01", "an appendedoh prompt");
    put(
        h,
        &format!("{CONV}/{ONE}/events/event-00001-u-1.json"),
        next.to_string(),
    );
    assert_eq!(logged_search(&home, "appendedoh").0, set(&[ONE]));
    assert_eq!(logged_search(&home, "appendedoh"), (set(&[ONE]), true));
    // A directory made before its events: not a conversation yet, then one.
    std::fs::create_dir(conv.join(THREE)).expect("mkdir");
    age(&conv.join(THREE), 3000);
    age(&conv, 3000);
    assert_eq!(logged_search(&home, "ohthree").0, BTreeSet::new());
    assert_eq!(logged_search(&home, "ohthree"), (BTreeSet::new(), true));
    let prompt = user("u-0", "2026-05-05T09:00:00", "the ohthree question");
    events(h, THREE, &[prompt]);
    age(&conv.join(THREE), 2800);
    assert_eq!(logged_search(&home, "ohthree").0, set(&[THREE]));
    assert_eq!(logged_search(&home, "ohthree"), (set(&[THREE]), true));
    // A conversation deleted.
    std::fs::remove_dir_all(conv.join(TWO)).expect("remove");
    age(&conv, 2400);
    assert_eq!(logged_search(&home, "ohtwo").0, BTreeSet::new());
    assert_eq!(logged_search(&home, "question"), (set(&[ONE, THREE]), true));
}
