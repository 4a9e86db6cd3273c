use super::session::parse_flat_yaml;
use super::*;
use crate::model::{MessageKind, Role, TokenUsage, SEALED_THINKING};
use std::fs;
use std::path::PathBuf;

/// Project-written sessions, each reproducing one real shape (fixtures/shapes/README.md).
const SHAPES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/shapes/copilot");

fn env_for(home: &Path) -> Env {
    Env {
        home: home.to_path_buf(),
        vars: Default::default(),
    }
}

fn store(home: &Path) -> CopilotStore {
    CopilotStore::new(
        candidates(&env_for(home))
            .into_iter()
            .filter(|r| r.path.exists())
            .collect(),
    )
}

fn write(path: &Path, text: &str) -> PathBuf {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
    path.to_path_buf()
}

/// Events as the CLI writes them: each `parentId` is the previous event's id.
fn events(lines: &[(&str, &str)]) -> String {
    let mut out = String::new();
    let mut parent: Option<String> = None;
    for (i, (ty, data)) in lines.iter().enumerate() {
        let id = format!("e{i}");
        let p = parent
            .as_ref()
            .map_or("null".to_string(), |p| format!("\"{p}\""));
        out.push_str(&format!(
            r#"{{"type":"{ty}","data":{data},"id":"{id}","timestamp":"2026-05-01T10:00:{i:02}.000Z","parentId":{p}}}"#
        ));
        out.push('\n');
        parent = Some(id);
    }
    out
}

fn load_only(home: &Path) -> Session {
    let st = store(home);
    let l = st.list();
    assert_eq!(l.len(), 1, "{l:#?}");
    st.load(&l[0])
}

fn texts(s: &Session) -> Vec<String> {
    s.messages.iter().map(|m| m.text().to_string()).collect()
}

#[test]
fn candidates_honour_copilot_home_and_old_xdg_config_home() {
    let mut env = env_for(Path::new("/h"));
    assert_eq!(candidates(&env)[0].path, PathBuf::from("/h/.copilot"));
    env.vars.insert("COPILOT_HOME".into(), "/c".into());
    env.vars.insert("XDG_CONFIG_HOME".into(), "/x".into());
    let got: Vec<(PathBuf, String)> = candidates(&env)
        .into_iter()
        .map(|r| (r.path, r.how))
        .collect();
    assert_eq!(got[0], (PathBuf::from("/c"), "COPILOT_HOME".to_string()));
    assert!(got.contains(&(PathBuf::from("/x/.copilot"), "XDG_CONFIG_HOME".to_string())));
    assert!(got.iter().any(|(_, how)| how == "spec"));
}

/// `copilot/events.jsonl` reproduces a real autopilot session: mode and model changes, the
/// system prompt, four parallel calls in one reply, four events written off the parent chain,
/// a second system prompt with an empty nudge prompt, `task_complete` and the shutdown totals.
#[test]
fn events_fixture_pairs_tools_and_keeps_the_off_chain_events_as_a_branch() {
    let tmp = tempfile::tempdir().unwrap();
    let id = "6b7c8d9e-0f1a-4b2c-8d3e-4f5a6b7c8d9e";
    let dir = tmp.path().join(".copilot/session-state").join(id);
    fs::create_dir_all(&dir).unwrap();
    fs::copy(
        Path::new(SHAPES).join("events.jsonl"),
        dir.join("events.jsonl"),
    )
    .unwrap();
    let s = load_only(tmp.path());
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.id, id);
    // 6 opening events, 6 replies, 10 results, the second system prompt, the nudge and
    // the task_complete notice.
    assert_eq!(s.messages.len(), 25);
    assert_eq!(s.turn_count(), 1);
    assert!(s.messages[5]
        .content
        .starts_with("do not change any code: find out which documentation site generator"));
    assert_eq!(s.messages[4].kind, MessageKind::Context);
    assert_eq!(s.messages[4].label.as_deref(), Some("system prompt"));
    let asst = &s.messages[6];
    assert_eq!(asst.role, Role::Assistant);
    assert_eq!(asst.tool_calls.len(), 4);
    assert_eq!(asst.model.as_deref(), Some("claude-sonnet-4.6"));
    assert!(asst
        .thinking
        .as_deref()
        .unwrap()
        .starts_with("The user wants a survey only"));
    let r = s.messages[7].tool_result.as_ref().unwrap();
    assert_eq!(
        (
            r.tool_call_id.as_str(),
            r.tool_name.as_str(),
            r.output.as_str()
        ),
        ("call-intent-1", "report_intent", "Intent logged")
    );
    let results = s
        .messages
        .iter()
        .filter(|m| m.tool_result.is_some())
        .count();
    assert_eq!(results, 10);
    assert_eq!(s.cwd.as_deref(), Some("/home/dev/lantern"));
    assert_eq!(s.source.format_version.as_deref(), Some("1.0.36"));
    assert_eq!(
        s.messages[2].content,
        "model: claude-sonnet-4.6 -> claude-sonnet-4.6 (reasoning effort high)"
    );
    assert!(s.tags.contains(&"repository:dev/lantern".to_string()));
    assert!(s.tags.contains(&"premium-requests:3".to_string()));
    // Shutdown totals, input without cache reads; no USD.
    let u = s.reported_usage.unwrap();
    assert_eq!(
        (
            u.input_tokens,
            u.output_tokens,
            u.cached_tokens,
            u.thinking_tokens
        ),
        // outputTokens hold the reasoningTokens: 2,400 in all.
        (150_000 - 120_000, 2_400 - 900, 120_000, 900)
    );
    assert_eq!(s.cost().input_tokens, 150_000 - 120_000);
    assert!(s.messages.iter().all(|m| m.cost.is_none()));

    // Events 0ff0c4a1-0001..4 hang off the last result of turn 2; the next event's chain
    // skips them.
    assert_eq!(s.branches.len(), 1);
    let b = &s.branches[0];
    assert_eq!(b.name, "branch-0ff0c4a1-0004-4000-9000-000000000004");
    assert_eq!(
        b.fork_point.as_deref(),
        Some("ev31-0000-4000-8000-000000000031")
    );
    assert_eq!(b.messages.len(), 19);
    let last = b.messages[18].tool_result.as_ref().unwrap();
    assert_eq!(last.output, "rustdoc turns doc comments into HTML pages.");
    assert_eq!(last.tool_name, "web_fetch");
}

#[test]
fn partial_and_history_fixtures_load() {
    let tmp = tempfile::tempdir().unwrap();
    let c = tmp.path().join(".copilot");
    fs::create_dir_all(c.join("session-state")).unwrap();
    fs::create_dir_all(c.join("history-session-state")).unwrap();
    // The events with the shutdown line cut in the middle.
    let events = fs::read_to_string(Path::new(SHAPES).join("events.jsonl")).unwrap();
    let body = events.trim_end_matches('\n');
    let last = body.rfind('\n').unwrap() + 1;
    fs::write(
        c.join("session-state/6b7c8d9e-0f1a-4b2c-8d3e-4f5a6b7c8d9e.jsonl"),
        &body[..last + 60],
    )
    .unwrap();
    fs::copy(
        Path::new(SHAPES).join("history.json"),
        c.join(
            "history-session-state/session_2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a_1760259600000.json",
        ),
    )
    .unwrap();
    let st = store(tmp.path());
    let mut l = st.list();
    l.sort_by(|a, b| a.id.cmp(&b.id));
    let ids: Vec<&str> = l.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a",
            "6b7c8d9e-0f1a-4b2c-8d3e-4f5a6b7c8d9e"
        ]
    );

    let h = st.load(&l[0]);
    assert!(h.warnings.is_empty(), "{:?}", h.warnings);
    assert_eq!(h.source.format, "copilot-history-json");
    let kinds: Vec<(Role, usize)> = h
        .messages
        .iter()
        .map(|m| (m.role, m.tool_calls.len()))
        .collect();
    use Role::*;
    assert_eq!(
        kinds,
        [
            (System, 0),
            (System, 0),
            (User, 0),
            (Assistant, 4),
            (Assistant, 7),
            (Assistant, 2),
            (Assistant, 2),
            (Assistant, 0)
        ]
    );
    let first = &h.messages[3].tool_calls[0];
    assert_eq!(first.tool_call_id, "call-h1");
    assert_eq!(first.tool_name, "str_replace_editor");
    assert!(first
        .output
        .as_deref()
        .unwrap()
        .starts_with("\ndiff --git a/home/dev/lamp/Cargo.toml"));
    assert_eq!(
        h.messages[0].content,
        "info: Connected to the lamp MCP server"
    );

    let p = st.load(&l[1]);
    assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
    assert!(p.warnings[0].contains("partial last line"));
    assert!(p.warnings[1].contains("unparsed.txt"));
    assert_eq!(p.messages.len(), 25);
    // The shutdown line was cut: the output tokens come from the replies (1,200 in the
    // fixture's assistant.message events).
    assert_eq!(p.cost().output_tokens, 1200);
}

/// Real sessions of every shape are read by the real-corpus suite (`tests/real.rs`, when
/// `SESSFS_REAL_SESSIONS` names them); here, every shape fixture.
#[test]
fn every_shape_fixture_loads_into_a_transcript() {
    let mut n = 0;
    for f in kit::entries(Path::new(SHAPES)) {
        let name = kit::file_name(&f);
        let s = if name.ends_with(".jsonl") {
            load_events(&f, "x")
        } else if name.ends_with(".json") {
            load_history(&f, "2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a")
        } else {
            continue;
        };
        n += 1;
        assert!(s.warnings.is_empty(), "{name}: {:?}", s.warnings);
        assert!(!s.messages.is_empty(), "{name}");
        assert!(s.messages.iter().any(|m| m.role == Role::User), "{name}");
    }
    assert_eq!(n, 2);
}

#[test]
fn workspace_yaml_gives_title_cwd_repository_and_branch() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(".copilot/session-state/s-1");
    write(
        &dir.join("events.jsonl"),
        &events(&[
            (
                "session.start",
                r#"{"sessionId":"s-1","version":1,"selectedModel":"gpt-5","startTime":"2026-05-01T09:59:00.000Z","context":{"cwd":"/from/start"}}"#,
            ),
            ("user.message", r#"{"content":"fix the login page"}"#),
        ]),
    );
    write(
        &dir.join("workspace.yaml"),
        "id: s-1\ncwd: /home/dev/web app\ngit_root: /home/dev/web app\nrepository: acme/web\nbranch: 'fix/login'\nsummary: \"Fix the \\\"login\\\" page\"\ncreated_at: 2026-05-01T09:59:00.000Z\nupdated_at: 2026-05-01T11:00:00.000Z\n",
    );
    let st = store(tmp.path());
    let l = st.list();
    assert_eq!(
        l[0].sources,
        [dir.join("events.jsonl"), dir.join("workspace.yaml")]
    );
    let s = st.load(&l[0]);
    assert_eq!(s.title.as_deref(), Some("Fix the \"login\" page"));
    assert_eq!(s.cwd.as_deref(), Some("/home/dev/web app"));
    assert!(s.tags.contains(&"repository:acme/web".to_string()));
    assert!(s.tags.contains(&"branch:fix/login".to_string()));
    assert_eq!(s.updated_at, kit::parse_rfc3339("2026-05-01T11:00:00.000Z"));
    assert_eq!(s.created_at, kit::parse_rfc3339("2026-05-01T09:59:00.000Z"));
}

#[test]
fn flat_yaml_reads_block_scalars_and_skips_nesting() {
    let y = parse_flat_yaml("summary: |\n  line one\n  line two\nnested:\n  a: b\n# c\nlast: z\n");
    assert_eq!(y["summary"], "line one\nline two");
    assert!(!y.contains_key("nested"));
    assert!(!y.contains_key("a"));
    assert_eq!(y["last"], "z");
}

/// Every scalar style the YAML library writes; the values are folded by hand from the YAML
/// rules (a line break between lines is a space, each empty line a newline).
#[test]
fn flat_yaml_reads_quoted_scalars_over_several_lines() {
    let text = concat!(
        "id: abc\n",
        "summary: \"CLAUDE says: \\\"'Logan is here:\\r\n",
        "\n",
        "  \\r\n",
        "\n",
        "  Claude - me\\r\n",
        "  Logan - human\"\n",
        "list:\n",
        "  - x\n",
        "title: 'it''s\n",
        "  folded'\n",
        "block: |-\n",
        "  line one\n",
        "  line two\n",
        "folded: >\n",
        "  one\n",
        "  two\n",
        "cwd: c:\\Users\\dev\n",
    );
    let y = parse_flat_yaml(text);
    assert_eq!(
        y["summary"],
        "CLAUDE says: \"'Logan is here:\r\n\r\nClaude - me\r Logan - human"
    );
    assert_eq!(y["title"], "it's folded");
    assert_eq!(y["block"], "line one\nline two");
    assert_eq!(y["folded"], "one two");
    assert_eq!(y["cwd"], r"c:\Users\dev");
    assert_eq!(y["id"], "abc");
    assert!(!y.contains_key("list"));
    // A file cut short keeps what came before the fault.
    let cut = parse_flat_yaml("id: abc\nsummary: \"never closed\n");
    assert_eq!(cut.get("id").map(String::as_str), Some("abc"));
}

#[test]
fn tool_results_pair_by_call_id_and_errors_are_marked() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        &tmp.path().join(".copilot/session-state/flat-1.jsonl"),
        &events(&[
            ("session.start", r#"{"sessionId":"flat-1","version":1}"#),
            (
                "session.model_change",
                r#"{"newModel":"claude-sonnet-4.5"}"#,
            ),
            (
                "system.message",
                r#"{"role":"developer","content":"be brief"}"#,
            ),
            (
                "user.message",
                r#"{"content":"run the tests","attachments":[{"type":"file","path":"/r/a.rs","displayName":"a.rs"}]}"#,
            ),
            (
                "assistant.message",
                r#"{"messageId":"m1","content":"Running.","reasoningOpaque":"XXXX","toolRequests":[{"toolCallId":"t1","name":"bash","arguments":{"command":"cargo test"}},{"toolCallId":"t2","name":"view","arguments":{"path":"x"}}]}"#,
            ),
            (
                "tool.execution_start",
                r#"{"toolCallId":"t1","toolName":"bash","arguments":{}}"#,
            ),
            (
                "tool.execution_complete",
                r#"{"toolCallId":"t2","success":false,"error":{"message":"no such file","code":"ENOENT"}}"#,
            ),
            (
                "tool.execution_complete",
                r#"{"toolCallId":"t1","success":true,"result":{"content":"test result: ok"}}"#,
            ),
            (
                "session.compaction_complete",
                r#"{"success":true,"summaryContent":"We ran the tests."}"#,
            ),
            (
                "session.warning",
                r#"{"warningType":"x","message":"rate limited"}"#,
            ),
            ("hook.start", r#"{"anything":1}"#),
        ]),
    );
    let s = load_only(tmp.path());
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.source.format, "copilot-events-jsonl");
    assert_eq!(
        texts(&s),
        [
            "model: claude-sonnet-4.5",
            "be brief",
            "run the tests\n[attachment: /r/a.rs]",
            "Running.",
            "no such file (ENOENT)",
            "test result: ok",
            "We ran the tests.",
            "warning: rate limited",
        ]
    );
    assert_eq!(s.messages[1].label.as_deref(), Some("developer message"));
    let a = &s.messages[3];
    assert_eq!(a.thinking.as_deref(), Some(SEALED_THINKING));
    assert_eq!(a.model.as_deref(), Some("claude-sonnet-4.5"));
    assert_eq!(a.tool_calls[0].input["command"], "cargo test");
    let r4 = s.messages[4].tool_result.as_ref().unwrap();
    assert_eq!((r4.tool_name.as_str(), r4.is_error), ("view", true));
    let r5 = s.messages[5].tool_result.as_ref().unwrap();
    assert_eq!((r5.tool_name.as_str(), r5.is_error), ("bash", false));
    assert_eq!(s.messages[6].kind, MessageKind::CompactionSummary);
    assert_eq!(s.title.as_deref(), Some("run the tests"));
}

#[test]
fn subagent_events_nest_under_the_spawning_call() {
    let tmp = tempfile::tempdir().unwrap();
    let mut text = events(&[
        ("session.start", r#"{"sessionId":"s-2","version":1}"#),
        ("user.message", r#"{"content":"explore the repo"}"#),
        (
            "assistant.message",
            r#"{"messageId":"m1","content":"","toolRequests":[{"toolCallId":"task-1","name":"task","arguments":{"agent_type":"explore"}}]}"#,
        ),
        (
            "subagent.started",
            r#"{"toolCallId":"task-1","agentName":"explore","agentDisplayName":"Explore","agentDescription":"Fast codebase exploration"}"#,
        ),
    ]);
    // The subagent's own events: envelope agentId, data.parentToolCallId; still in the chain.
    for (i, (ty, data)) in [
        ("user.message", r#"{"content":"find the entry point","parentToolCallId":"task-1"}"#),
        (
            "assistant.message",
            r#"{"messageId":"c1","content":"main.rs holds it","toolRequests":[{"toolCallId":"c-t1","name":"grep","arguments":{}}],"parentToolCallId":"task-1"}"#,
        ),
        ("tool.execution_complete", r#"{"toolCallId":"c-t1","success":true,"result":{"content":"src/main.rs:1"},"parentToolCallId":"task-1"}"#),
    ]
    .iter()
    .enumerate()
    {
        let parent = if i == 0 { "e3".to_string() } else { format!("a{}", i - 1) };
        text.push_str(&format!(
            r#"{{"type":"{ty}","data":{data},"id":"a{i}","timestamp":"2026-05-01T10:01:0{i}.000Z","parentId":"{parent}","agentId":"agent-77"}}"#
        ));
        text.push('\n');
    }
    text.push_str(r#"{"type":"tool.execution_complete","data":{"toolCallId":"task-1","success":true,"result":{"content":"entry point: src/main.rs"}},"id":"e4","timestamp":"2026-05-01T10:02:00.000Z","parentId":"a2"}"#);
    text.push('\n');
    write(
        &tmp.path().join(".copilot/session-state/s-2/events.jsonl"),
        &text,
    );

    let s = load_only(tmp.path());
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert!(s.branches.is_empty());
    assert_eq!(
        texts(&s),
        ["explore the repo", "", "entry point: src/main.rs"]
    );
    assert_eq!(s.subagents.len(), 1);
    let sub = &s.subagents[0];
    assert_eq!(sub.name, "explore");
    assert_eq!(sub.tool_call_id.as_deref(), Some("task-1"));
    assert_eq!(
        sub.description.as_deref(),
        Some("Fast codebase exploration")
    );
    let child = sub.session.as_ref().unwrap();
    assert_eq!(child.id, "agent-77");
    assert_eq!(child.parent.as_deref(), Some("copilot:s-2"));
    assert_eq!(
        texts(child),
        ["find the entry point", "main.rs holds it", "src/main.rs:1"]
    );
}

#[test]
fn shutdown_metrics_sum_over_models_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        &tmp.path().join(".copilot/session-state/s-3/events.jsonl"),
        &events(&[
            (
                "session.start",
                r#"{"sessionId":"s-3","version":1,"selectedModel":"gpt-5"}"#,
            ),
            ("user.message", r#"{"content":"hi"}"#),
            (
                "assistant.message",
                r#"{"messageId":"m","content":"hello","outputTokens":5}"#,
            ),
            (
                "session.shutdown",
                r#"{"totalPremiumRequests":3,"modelMetrics":{"gpt-5":{"requests":{"count":2,"cost":1},"usage":{"inputTokens":1000,"outputTokens":100,"cacheReadTokens":400,"cacheWriteTokens":0,"reasoningTokens":10}},"claude-sonnet-4.5":{"requests":{"count":1,"cost":2},"usage":{"inputTokens":500,"outputTokens":50,"cacheReadTokens":0,"cacheWriteTokens":20,"reasoningTokens":0}}}}"#,
            ),
            ("session.resume", r#"{"eventCount":4}"#),
            (
                "session.shutdown",
                r#"{"modelMetrics":{"gpt-5":{"requests":{"count":1,"cost":1},"usage":{"inputTokens":300,"outputTokens":30,"cacheReadTokens":100}}}}"#,
            ),
        ]),
    );
    let s = load_only(tmp.path());
    assert_eq!(
        s.reported_usage,
        Some(TokenUsage {
            input_tokens: 600 + 500 + 200,
            // outputTokens hold the reasoning: 100 - 10 + 50 + 30.
            output_tokens: 170,
            thinking_tokens: 10,
            cached_tokens: 500,
            cache_write_tokens: 20,
        })
    );
    assert!(s.tags.contains(&"premium-requests:4".to_string()));
    assert_eq!(s.messages[1].model.as_deref(), Some("gpt-5"));
    assert!(s.messages[1].token_usage.is_none());
}

#[test]
fn corrupt_lines_a_future_version_and_a_broken_chain_cost_warnings() {
    let tmp = tempfile::tempdir().unwrap();
    let mut text = events(&[
        ("session.start", r#"{"sessionId":"s-4","version":7}"#),
        ("user.message", r#"{"content":"still readable"}"#),
    ]);
    text.push_str("not json at all\n");
    text.push_str(r#"{"type":"user.message","data":{"content":["not","a","string"]},"id":"x","parentId":"e1"}"#);
    text.push('\n');
    text.push_str(r#"{"type":"assistant.message","data":{"content":"answer"},"id":"e9","parentId":"missing"}"#);
    text.push('\n');
    text.push_str(r#"{"type":"assistant.mess"#);
    write(
        &tmp.path().join(".copilot/session-state/s-4/events.jsonl"),
        &text,
    );
    let s = load_only(tmp.path());
    // The event sessfs cannot read keeps its place, as stored.
    assert_eq!(
        texts(&s),
        [
            "still readable",
            r#"{"type":"user.message","data":{"content":["not","a","string"]},"id":"x","parentId":"e1"}"#,
            "answer"
        ]
    );
    let w = &s.warnings;
    assert_eq!(w.len(), 6, "{w:?}");
    assert!(w.iter().any(|w| w.contains("unparsed.txt")));
    assert!(w.iter().any(|w| w.contains("schema version 7 is newer")));
    assert!(w.iter().any(|w| w.contains("line 3: skipped")));
    assert!(w
        .iter()
        .any(|w| w.contains("(first: line 4: unexpected data")));
    assert!(w.iter().any(|w| w.contains("partial last line")));
    assert!(w.iter().any(|w| w.contains("parentId chain is broken")));

    // A history document that is not JSON lists by name and shows its text, with a warning.
    write(
        &tmp.path()
            .join(".copilot/history-session-state/session_h-1_1700000000000.json"),
        "{\"sessionId\": \"h-1\", \"timeline\": [",
    );
    let st = store(tmp.path());
    let l = st.list().into_iter().find(|l| l.id == "h-1").unwrap();
    let h = st.load(&l);
    assert_eq!(texts(&h), ["{\"sessionId\": \"h-1\", \"timeline\": ["]);
    assert!(h.warnings[0].contains("not a Copilot history session"));
}

#[test]
fn history_chat_messages_are_read_when_there_is_no_timeline() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        &tmp.path()
            .join(".copilot/history-session-state/session_h-2_1700000000000.json"),
        r#"{"sessionId":"h-2","startTime":"2025-09-01T10:00:00.000Z","chatMessages":[
            {"role":"system","content":"You are Copilot."},
            {"role":"user","content":[{"type":"text","text":"what is in src?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},
            {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls src\"}"}}]},
            {"role":"tool","tool_call_id":"call_1","content":"main.rs"},
            {"role":"assistant","content":"src holds main.rs."}
        ],"timeline":[]}"#,
    );
    let s = load_only(tmp.path());
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(
        texts(&s),
        [
            "You are Copilot.",
            "what is in src?\n[image: image/png, 3 B]",
            "",
            "main.rs",
            "src holds main.rs."
        ]
    );
    assert_eq!(s.messages[0].kind, MessageKind::Context);
    assert_eq!(s.messages[2].tool_calls[0].input["command"], "ls src");
    assert_eq!(
        s.messages[3].tool_result.as_ref().unwrap().tool_name,
        "bash"
    );
    assert_eq!(s.created_at, kit::parse_rfc3339("2025-09-01T10:00:00.000Z"));
}

/// A `web_search` result shows its answer as text, then its cited sources and searches; a
/// result of another shape stays as stored.
#[test]
fn a_web_search_result_shows_its_answer_sources_and_searches() {
    let answer = serde_json::json!({
        "type": "text",
        "text": {
            "value": "Two formats:\n\n- **.SRT**【3:0†source】\n- **.ZIP**【3:1†source】",
            "annotations": [
                {"text": "【3:0†source】", "start_index": 20, "end_index": 32,
                 "url_citation": {"title": "Substital", "url": "https://example.org/a"}},
                {"text": "【3:1†source】", "start_index": 44, "end_index": 56,
                 "url_citation": {"title": "Substital", "url": "https://example.org/a"}},
            ]
        },
        "bing_searches": [{"text": "substital formats", "url": "https://www.bing.com/search?q=substital"}],
        "annotations": null
    })
    .to_string();
    let other = r#"{"type":"text","text":{"value":"x"},"extra":1}"#;
    let done = |id: &str, content: &str| {
        serde_json::json!({"toolCallId": id, "success": true, "result": {"content": content, "detailedContent": content}})
            .to_string()
    };
    let tmp = tempfile::tempdir().unwrap();
    write(
        &tmp.path().join(".copilot/session-state/web-1.jsonl"),
        &events(&[
            ("session.start", r#"{"sessionId":"web-1","version":1}"#),
            ("user.message", r#"{"content":"formats?"}"#),
            (
                "assistant.message",
                r#"{"messageId":"m1","content":"","toolRequests":[{"toolCallId":"w1","name":"web_search","arguments":{"query":"substital"}},{"toolCallId":"w2","name":"web_search","arguments":{}}]}"#,
            ),
            ("tool.execution_complete", &done("w1", &answer)),
            ("tool.execution_complete", &done("w2", other)),
        ]),
    );
    let s = load_only(tmp.path());
    let outputs: Vec<&str> = s
        .messages
        .iter()
        .filter_map(|m| m.tool_result.as_ref())
        .map(|r| r.output.as_str())
        .collect();
    assert_eq!(
        outputs,
        [
            "Two formats:\n\n- **.SRT**【3:0†source】\n- **.ZIP**【3:1†source】\n\n\
             Sources:\n- Substital <https://example.org/a>\n\n\
             Searches:\n- substital formats <https://www.bing.com/search?q=substital>\n",
            other,
        ]
    );
}

/// The history format's timeline keeps a search result in `result.log`, the same JSON text
/// (the tool there is `github-mcp-server-web_search`): shown the same way.
#[test]
fn a_history_web_search_result_shows_its_answer() {
    let answer = r#"{"type":"text","text":{"value":"Use short names.\n\nKeep them lower case.","annotations":[{"text":"[1]","start_index":0,"end_index":3,"url_citation":{"title":"Guide","url":"https://example.org/g"}}]},"bing_searches":[],"annotations":null}"#;
    let entry = serde_json::json!({
        "type": "tool_call_completed", "timestamp": "2025-10-11T12:55:03.590Z",
        "callId": "toolu_1", "name": "github-mcp-server-web_search",
        "arguments": {"query": "naming"}, "result": {"type": "success", "log": answer}
    });
    let tmp = tempfile::tempdir().unwrap();
    write(
        &tmp.path()
            .join(".copilot/history-session-state/session_h-3_1700000000000.json"),
        &format!(
            r#"{{"sessionId":"h-3","startTime":"2025-10-11T12:55:00.000Z","chatMessages":[],"timeline":[{entry}]}}"#
        ),
    );
    let s = load_only(tmp.path());
    let call = &s.messages[0].tool_calls[0];
    assert_eq!(
        call.output.as_deref(),
        Some("Use short names.\n\nKeep them lower case.\n\nSources:\n- Guide <https://example.org/g>\n")
    );
    assert_eq!(call.is_error, Some(false));
}
