//! GitHub Copilot Chat in VS Code, written here the way the editor writes its chat session
//! files (shapes from VS Code's `chatModel.ts`, `chatSessionStore.ts`,
//! `objectMutationLog.ts` and the Copilot Chat extension's result metadata): every
//! generation of the flat file (no version, version 2, version 3) and the 1.109 session log,
//! in Code, Insiders and VSCodium, a workspace window and an empty window; rendered with
//! `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below ([`Chat`]), never from sessfs' parser.
#![recursion_limit = "256"]

mod common;

use common::stores::{self, meta, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A string that looks like a credential, planted in the editor's state and settings files.
const SECRET: &str = "ghu_PLANTEDcopilotCHATsecretDoNotRead0000";

const CODE: &str = ".config/Code/User";
const INSIDERS: &str = ".config/Code - Insiders/User";
const CODIUM: &str = ".config/VSCodium/User";

/// What the writer put in one session, for the checks.
#[derive(Default)]
struct Chat {
    /// `copilot-chat/<id>`.
    dir: String,
    /// Lines that must be in this session's files and no other session's.
    lines: Vec<&'static str>,
    /// Tool outputs and edits: must be under this session's `tools/`.
    outputs: Vec<&'static str>,
    /// Lines that must be in no session at all (a superseded file's text).
    absent: Vec<&'static str>,
    /// Expected usage: input, output, cache reads, cache writes; `None` when the file holds
    /// none.
    usage: Option<(u64, u64, u64, u64)>,
}

struct Fixture {
    home: Home,
    chats: Vec<Chat>,
}

fn put(home: &Path, rel: &str, v: &Value) -> PathBuf {
    stores::put(home, rel, serde_json::to_string_pretty(v).expect("json"))
}

fn uri(path: &str) -> Value {
    json!({"$mid": 1, "fsPath": path, "external": format!("file://{path}"), "path": path, "scheme": "file"})
}

fn md(text: &str) -> Value {
    json!({"value": text, "supportThemeIcons": false, "supportHtml": false})
}

fn message(text: &str) -> Value {
    json!({"text": text, "parts": [{"range": {"start": 0, "endExclusive": text.len()},
           "editorRange": {"startLineNumber": 1, "startColumn": 1, "endLineNumber": 1, "endColumn": text.len() + 1},
           "text": text, "kind": "text"}]})
}

fn agent(id: &str) -> Value {
    json!({"extensionId": {"value": "GitHub.copilot-chat", "_lower": "github.copilot-chat"},
           "id": id, "name": "agent", "fullName": "GitHub Copilot", "isDefault": true,
           "metadata": {"themeIcon": {"id": "copilot"}}, "locations": ["panel"]})
}

/// Every generation of the session file, as the editors lay them out, with secrets beside.
fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut chats = Vec::new();
    let t0 = 1_767_400_000_000_i64;

    // Secrets and state VS Code keeps beside the sessions: never read.
    for user in [CODE, INSIDERS] {
        stores::put(
            &h,
            &format!("{user}/globalStorage/state.vscdb"),
            format!("SQLite format 3\0{SECRET}").as_bytes(),
        );
        put(
            &h,
            &format!("{user}/settings.json"),
            &json!({"github.copilot.token": SECRET}),
        );
    }
    put(
        &h,
        &format!("{CODE}/globalStorage/github.copilot-chat/copilotCli/state.json"),
        &json!({"apiKey": SECRET}),
    );
    put(
        &h,
        &format!("{CODE}/globalStorage/storage.json"),
        &json!({"token": SECRET}),
    );

    // --- Workspace A in Code: the oldest file (no version, the message a plain string, an
    // old error field) and a version 2 file with the extension's metadata.
    let ws_a = format!("{CODE}/workspaceStorage/1a2b3c4d5e6f708192a3b4c5d6e7f809");
    put(
        &h,
        &format!("{ws_a}/workspace.json"),
        &json!({"folder": "file:///home/dev/alpha%20app"}),
    );
    stores::put(
        &h,
        &format!("{ws_a}/state.vscdb"),
        format!("SQLite format 3\0{SECRET}").as_bytes(),
    );
    let a = "11111111-aaaa-4bbb-8ccc-000000000001";
    put(
        &h,
        &format!("{ws_a}/chatSessions/{a}.json"),
        &json!({
            "requesterUsername": "dev", "responderUsername": "GitHub Copilot",
            "sessionId": a, "creationDate": t0, "initialLocation": "panel",
            "requests": [
                {"message": "Alpha: why does the widget test fail?",
                 "variableData": {"variables": []},
                 "response": [md("Alpha reply: the fixture path is relative.")],
                 "isCanceled": false,
                 "agent": {"id": "github.copilot.default"}},
                {"message": "Alpha second prompt",
                 "variableData": {"variables": []},
                 "response": [],
                 "responseErrorDetails": {"message": "Alpha error: rate limited"},
                 "isCanceled": true}
            ]
        }),
    );
    chats.push(Chat {
        dir: format!("copilot-chat/{a}"),
        lines: vec![
            "Alpha: why does the widget test fail?",
            "Alpha reply: the fixture path is relative.",
            "Alpha second prompt",
            "Alpha error: rate limited",
        ],
        usage: None,
        ..Chat::default()
    });

    let b = "22222222-bbbb-4bbb-8ccc-000000000002";
    put(
        &h,
        &format!("{ws_a}/chatSessions/{b}.json"),
        &json!({
            "version": 2, "sessionId": b, "creationDate": t0 + 100_000,
            "computedTitle": "Bravo: list the routes", "responderUsername": "GitHub Copilot",
            "initialLocation": "panel",
            "requests": [{
                "requestId": "request_b1", "timestamp": t0 + 100_000,
                "message": message("Bravo: list the routes in the server"),
                "variableData": {"variables": [
                    {"id": "vscode.file", "name": "file:routes.ts", "value": uri("/home/dev/alpha app/src/routes.ts"), "kind": "file"}]},
                "agent": agent("github.copilot.workspace"),
                "slashCommand": {"name": "explain"},
                "response": [
                    md("Bravo reply: I will search the routes."),
                    {"kind": "toolInvocationSerialized", "toolCallId": "6b1f0d2e-0000-4000-8000-00000000b001",
                     "toolId": "copilot_searchCodebase", "invocationMessage": md("Searching the codebase"),
                     "pastTenseMessage": md("Searched the codebase"), "isConfirmed": true, "isComplete": true,
                     "resultDetails": [uri("/home/dev/alpha app/src/routes.ts")]},
                    md("Bravo reply two: there are three routes.")
                ],
                "result": {"timings": {"firstProgress": 900, "totalElapsed": 4000},
                    "metadata": {
                        "modelMessageId": "m-b1", "responseId": "r-b1", "sessionId": b, "agentId": "github.copilot.workspace",
                        "toolCallRounds": [
                            {"response": "Bravo reply: I will search the routes.", "id": "round-b1",
                             "toolCalls": [{"name": "search_codebase", "arguments": "{\"query\":\"bravo routes\"}", "id": "toolu_bravo_1"}]},
                            {"response": "Bravo reply two: there are three routes.", "id": "round-b2", "toolCalls": []}
                        ],
                        "toolCallResults": {"toolu_bravo_1": {"$mid": 20, "content": [
                            {"$mid": 22, "value": {"node": {"type": 1, "ctor": 2, "ctorName": "Tag", "children": [
                                {"type": 2, "priority": 1, "text": "bravo-output: GET /users\n"},
                                {"type": 2, "priority": 1, "text": "bravo-output: POST /users\n"}]}}}]}},
                        "promptTokens": 2400, "outputTokens": 310
                    }},
                "modelState": {"value": 1, "completedAt": t0 + 104_000},
                "followups": [], "isHidden": false, "contentReferences": [], "codeCitations": []
            }]
        }),
    );
    chats.push(Chat {
        dir: format!("copilot-chat/{b}"),
        lines: vec![
            "Bravo: list the routes in the server",
            "Bravo reply: I will search the routes.",
            "Bravo reply two: there are three routes.",
            "bravo-output: GET /users",
            "bravo routes",
        ],
        outputs: vec!["bravo-output: GET /users", "bravo-output: POST /users"],
        usage: Some((2400, 310, 0, 0)),
        ..Chat::default()
    });

    // --- Workspace C in Insiders: a version 3 flat file with reasoning, a terminal call, an
    // edit group, code block links and per-call usage in the rounds.
    let ws_c = format!("{INSIDERS}/workspaceStorage/c0ffee00c0ffee00c0ffee00c0ffee00");
    put(
        &h,
        &format!("{ws_c}/workspace.json"),
        &json!({"folder": "file:///home/dev/charlie"}),
    );
    let c = "33333333-cccc-4bbb-8ccc-000000000003";
    put(
        &h,
        &format!("{ws_c}/chatSessions/{c}.json"),
        &json!({
            "version": 3, "sessionId": c, "creationDate": t0 + 200_000,
            "customTitle": "Charlie custom title", "responderUsername": "GitHub Copilot",
            "initialLocation": "panel", "hasPendingEdits": false,
            "inputState": {"inputText": "Charlie draft never sent", "attachments": [], "mode": {"id": "agent", "kind": "agent"}, "selections": [], "contrib": {}},
            "requests": [{
                "requestId": "request_c1", "timestamp": t0 + 200_000, "modelId": "copilot/gpt-4.1",
                "message": message("Charlie: rename parse to parse_config"),
                "variableData": {"variables": []},
                "agent": agent("github.copilot.editsAgent"),
                "response": [
                    {"kind": "thinking", "value": "Charlie thinking: find the callers ", "id": "th1"},
                    {"kind": "thinking", "value": "first.", "id": "th1"},
                    md("Charlie reply: renaming now."),
                    {"kind": "toolInvocationSerialized", "toolCallId": "call_charlie_run",
                     "toolId": "run_in_terminal", "invocationMessage": md("Running `cargo build`"),
                     "pastTenseMessage": md("Ran `cargo build`"),
                     "isConfirmed": {"type": 4}, "isComplete": true, "source": {"type": "internal", "label": "Built-In"},
                     "toolSpecificData": {"kind": "terminal", "language": "sh",
                        "commandLine": {"original": "cargo build --charlie"},
                        "terminalCommandOutput": {"text": "charlie-output: Compiling charlie v0.1.0\ncharlie-output: Finished", "lineCount": 2},
                        "terminalCommandState": {"exitCode": 0, "duration": 1234}}},
                    {"kind": "codeblockUri", "uri": uri("/home/dev/charlie/src/config.rs"), "isEdit": true},
                    {"kind": "textEditGroup", "uri": uri("/home/dev/charlie/src/config.rs"), "done": true,
                     "edits": [[{"text": "pub fn parse_config_charlie_edit() {}", "range": {"startLineNumber": 3, "startColumn": 1, "endLineNumber": 3, "endColumn": 15}}], []]},
                    {"kind": "undoStop", "id": "stop-1"},
                    md("Charlie reply two: see "),
                    {"kind": "inlineReference", "inlineReference": uri("/home/dev/charlie/src/config.rs"), "name": "charlie_config.rs"},
                    md(" for the result.")
                ],
                "result": {"metadata": {
                    "toolCallRounds": [
                        {"response": "", "id": "round-c1", "toolCalls": [
                            {"name": "run_in_terminal", "arguments": "{\"command\":\"cargo build --charlie\",\"isBackground\":false}", "id": "call_charlie_run"}],
                         "usage": {"prompt_tokens": 5000, "completion_tokens": 200, "total_tokens": 5200,
                                   "prompt_tokens_details": {"cached_tokens": 4000}}},
                        {"response": "Charlie round text the reply never showed", "id": "round-c2", "toolCalls": [
                            {"name": "insert_edit_into_file", "arguments": "{\"filePath\":\"/home/dev/charlie/src/config.rs\"}", "id": "call_charlie_edit"}],
                         "usage": {"prompt_tokens": 6000, "completion_tokens": 300, "total_tokens": 6300,
                                   "prompt_tokens_details": {"cached_tokens": 5000}}}
                    ],
                    "toolCallResults": {
                        "call_charlie_run": {"$mid": 20, "content": [{"$mid": 21, "value": "charlie-model-output: build ok"}]},
                        "call_charlie_edit": {"$mid": 20, "content": [{"$mid": 21, "value": "charlie-model-output: edit applied"}]}
                    },
                    "promptTokens": 99999, "outputTokens": 99999}},
                "promptTokens": 88888, "completionTokens": 88888,
                "modelState": {"value": 1, "completedAt": t0 + 260_000}
            }]
        }),
    );
    chats.push(Chat {
        dir: format!("copilot-chat/{c}"),
        lines: vec![
            "Charlie: rename parse to parse_config",
            "Charlie thinking: find the callers first.",
            "Charlie reply: renaming now.",
            "cargo build --charlie",
            "charlie-model-output: build ok",
            "pub fn parse_config_charlie_edit() {}",
            "Charlie reply two: see",
            "charlie_config.rs",
            "Charlie round text the reply never showed",
            "charlie-model-output: edit applied",
        ],
        outputs: vec![
            "charlie-model-output: build ok",
            "charlie-model-output: edit applied",
            "pub fn parse_config_charlie_edit() {}",
            "charlie-output: Compiling charlie v0.1.0",
        ],
        absent: vec!["Charlie draft never sent"],
        // Rounds: (5000-4000) + (6000-5000) in, 200+300 out, 4000+5000 cached.
        usage: Some((2000, 500, 9000, 0)),
    });

    // --- Workspace D in VSCodium: the session log (1.109), with a stale flat file beside it
    // that the log supersedes.
    let ws_d = format!("{CODIUM}/workspaceStorage/d00dd00dd00dd00dd00dd00dd00dd00d");
    put(
        &h,
        &format!("{ws_d}/workspace.json"),
        &json!({"workspace": "file:///home/dev/delta/delta.code-workspace"}),
    );
    let d = "44444444-dddd-4bbb-8ccc-000000000004";
    let initial = json!({"kind": 0, "v": {
        "version": 3, "sessionId": d, "creationDate": t0 + 300_000, "responderUsername": "GitHub Copilot",
        "initialLocation": "panel", "requests": [], "pendingRequests": []}});
    let req = json!({
        "requestId": "request_d1", "timestamp": t0 + 300_000, "modelId": "copilot/claude-sonnet-4",
        "message": message("Delta: add a health endpoint"),
        "variableData": {"variables": []}, "response": [], "responseId": "response_d1"});
    let log = [
        initial,
        json!({"kind": 2, "k": ["requests"], "v": [req]}),
        json!({"kind": 2, "k": ["requests", 0, "response"], "v": [md("Delta reply: adding /health.")]}),
        json!({"kind": 2, "k": ["requests", 0, "response"], "v": [
            {"kind": "toolInvocationSerialized", "toolCallId": "tool-d1", "toolId": "copilot_createFile",
             "invocationMessage": "Creating health.rs", "pastTenseMessage": "Created health.rs",
             "isConfirmed": {"type": 1}, "isComplete": true,
             "toolSpecificData": {"kind": "input", "rawInput": {"filePath": "/home/dev/delta/src/health.rs", "content": "fn delta_health() {}"}},
             "resultDetails": {"input": "{}", "output": [{"type": "embed", "isText": true, "value": "delta-output: file created"}]}}]}),
        json!({"kind": 1, "k": ["requests", 0, "promptTokens"], "v": 7000}),
        json!({"kind": 1, "k": ["requests", 0, "completionTokens"], "v": 450}),
        json!({"kind": 1, "k": ["requests", 0, "modelState"], "v": {"value": 1, "completedAt": t0 + 330_000}}),
        json!({"kind": 1, "k": ["customTitle"], "v": "Delta health endpoint"}),
    ]
    .iter()
    .map(|e| e.to_string() + "\n")
    .collect::<String>();
    stores::put(&h, &format!("{ws_d}/chatSessions/{d}.jsonl"), log);
    put(
        &h,
        &format!("{ws_d}/chatSessions/{d}.json"),
        &json!({"version": 3, "sessionId": d, "creationDate": t0 + 300_000, "requests": [
            {"requestId": "request_d0", "message": message("Delta stale flat prompt"), "response": [], "variableData": {"variables": []}}]}),
    );
    chats.push(Chat {
        dir: format!("copilot-chat/{d}"),
        lines: vec![
            "Delta: add a health endpoint",
            "Delta reply: adding /health.",
            "fn delta_health() {}",
            "delta-output: file created",
        ],
        outputs: vec!["delta-output: file created"],
        absent: vec!["Delta stale flat prompt"],
        usage: Some((7000, 450, 0, 0)),
    });

    // --- An empty window in Code: globalStorage/emptyWindowChatSessions, usage as the agent
    // host's per-model totals.
    let e = "55555555-eeee-4bbb-8ccc-000000000005";
    put(
        &h,
        &format!("{CODE}/globalStorage/emptyWindowChatSessions/{e}.json"),
        &json!({
            "version": 3, "sessionId": e, "creationDate": t0 + 400_000, "responderUsername": "GitHub Copilot",
            "requests": [{
                "requestId": "request_e1", "timestamp": t0 + 400_000, "modelId": "copilot/gpt-5",
                "message": message("Echo: explain closures"), "variableData": {"variables": []},
                "response": [md("Echo reply: a closure captures its environment.")],
                "modelTotals": [
                    {"model": "gpt-5", "inputTokens": 1200, "cachedTokens": 200, "outputTokens": 90},
                    {"model": "gpt-5-mini", "inputTokens": 300, "cachedTokens": 0, "outputTokens": 10}],
                "promptTokens": 5555, "completionTokens": 5555,
                "modelState": {"value": 1, "completedAt": t0 + 410_000}
            }]
        }),
    );
    chats.push(Chat {
        dir: format!("copilot-chat/{e}"),
        lines: vec![
            "Echo: explain closures",
            "Echo reply: a closure captures its environment.",
        ],
        usage: Some((1300, 100, 200, 0)),
        ..Chat::default()
    });

    // --- A flat file cut mid-write: the complete request before the cut is kept.
    let f = "66666666-ffff-4bbb-8ccc-000000000006";
    let whole = serde_json::to_string(&json!({
        "version": 3, "sessionId": f, "creationDate": t0 + 500_000, "requests": [
            {"requestId": "request_f1", "timestamp": t0 + 500_000, "message": message("Foxtrot: complete request"),
             "variableData": {"variables": []}, "response": [md("Foxtrot reply kept.")]},
            {"requestId": "request_f2", "timestamp": t0 + 510_000, "message": message("Foxtrot: cut request"),
             "variableData": {"variables": []}, "response": [md("Foxtrot reply never finished")]}]
    }))
    .expect("json");
    let cut = &whole[..whole.find("Foxtrot reply never").expect("marker") + 12];
    stores::put(&h, &format!("{ws_a}/chatSessions/{f}.json"), cut);
    chats.push(Chat {
        dir: format!("copilot-chat/{f}"),
        lines: vec!["Foxtrot: complete request", "Foxtrot reply kept."],
        usage: None,
        ..Chat::default()
    });

    Fixture { home, chats }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-copilot-chat", &["XDG_CONFIG_HOME"])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for c in &fx.chats {
        stores::assert_session_holds(tree, &c.dir, &c.lines, &c.outputs);
        for line in &c.absent {
            assert!(
                stores::holding(tree, line, ".").is_empty(),
                "'{line}' is shown"
            );
        }
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    assert_eq!(stores::entries(&out.tree, "copilot-chat"), fx.chats.len());
    check_tree(&out.tree, &fx);
}

#[test]
fn usage_is_counted_once_per_request_from_one_source() {
    let fx = write();
    let out = render(&fx);
    for c in &fx.chats {
        let cost = &meta(&out.tree, &c.dir)["cost"];
        let got = stores::tokens(cost);
        match c.usage {
            Some((i, o, cr, cw)) => {
                assert_eq!(
                    got,
                    (Some(i), Some(o), Some(cr), Some(cw)),
                    "{}: {cost}",
                    c.dir
                )
            }
            None => assert_eq!(
                (got.0.unwrap_or(0), got.1.unwrap_or(0)),
                (0, 0),
                "{}: {cost}",
                c.dir
            ),
        }
    }
}

#[test]
fn titles_cwd_and_models_come_from_the_session_files() {
    let fx = write();
    let out = render(&fx);
    let t = &out.tree;
    let m = |id: &str| meta(t, &format!("copilot-chat/{id}"));
    let a = m("11111111-aaaa-4bbb-8ccc-000000000001");
    assert_eq!(a["title"], "Alpha: why does the widget test fail?");
    assert_eq!(a["cwd"], "/home/dev/alpha app");
    assert_eq!(a["source"]["formatVersion"], "1");
    let b = m("22222222-bbbb-4bbb-8ccc-000000000002");
    assert_eq!(b["title"], "Bravo: list the routes");
    let c = m("33333333-cccc-4bbb-8ccc-000000000003");
    assert_eq!(c["title"], "Charlie custom title");
    assert_eq!(c["cwd"], "/home/dev/charlie");
    assert_eq!(c["model"], "gpt-4.1");
    let d = m("44444444-dddd-4bbb-8ccc-000000000004");
    assert_eq!(d["title"], "Delta health endpoint");
    assert_eq!(d["cwd"], "/home/dev/delta/delta.code-workspace");
    assert_eq!(d["model"], "claude-sonnet-4");
    assert_eq!(d["source"]["format"], "vscode-chat-log");
    let e = m("55555555-eeee-4bbb-8ccc-000000000005");
    assert_eq!(e["model"], "gpt-5");
    assert!(e["cwd"].is_null(), "{e}");
}

#[test]
fn a_file_cut_mid_write_keeps_what_came_before_and_says_so() {
    let fx = write();
    let out = render(&fx);
    let f = meta(
        &out.tree,
        "copilot-chat/66666666-ffff-4bbb-8ccc-000000000006",
    );
    let w = f["warnings"].to_string();
    assert!(w.contains("cut mid-write"), "{w}");
}

#[test]
fn secrets_and_editor_state_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &["XDG_CONFIG_HOME"]);
}

#[test]
fn doctor_names_copilot_chat_and_where_it_looked() {
    let fx = write();
    let o = fx.home.sessfs(&["doctor"]);
    let text = stdout(&o);
    let n = fx.chats.len();
    assert!(
        text.contains(&format!("copilot-chat {n} sessions")),
        "{text}"
    );
    assert!(text.contains("Code - Insiders/User"), "{text}");
}

#[test]
fn mounted_sessions_grep_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(
            m,
            &["copilot-chat"],
            12,
            SECRET,
            "copilot-chat/33333333-cccc-4bbb-8ccc-000000000003",
        );
    });
}

/// VS Code appends to a session log and replaces a flat file while it runs: both show
/// through the mount within a second.
#[test]
fn an_appended_log_and_a_replaced_file_show_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let h = fx.home.path();
    let log = h.join(CODIUM).join(
        "workspaceStorage/d00dd00dd00dd00dd00dd00dd00dd00d/chatSessions/44444444-dddd-4bbb-8ccc-000000000004.jsonl",
    );
    let transcript = m
        .path()
        .join("copilot-chat/44444444-dddd-4bbb-8ccc-000000000004/transcript.md");
    assert!(stores::file_contains(
        &transcript,
        "Delta reply: adding /health."
    ));
    let mut text = std::fs::read_to_string(&log).expect("log");
    text.push_str(
        &(json!({"kind": 2, "k": ["requests", 0, "response"], "v": [md("Delta fresh reply after the mount")]})
            .to_string()
            + "\n"),
    );
    std::fs::write(&log, text).expect("append");
    stores::assert_within_a_second("appended session log", || {
        stores::file_contains(&transcript, "Delta fresh reply after the mount")
    });
    let flat = h
        .join(CODE)
        .join("globalStorage/emptyWindowChatSessions/55555555-eeee-4bbb-8ccc-000000000005.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&flat).expect("flat")).expect("json");
    v["requests"][0]["response"]
        .as_array_mut()
        .expect("response")
        .push(md("Echo fresh reply after the mount"));
    std::fs::write(&flat, serde_json::to_vec(&v).expect("json")).expect("replace");
    let echo = m
        .path()
        .join("copilot-chat/55555555-eeee-4bbb-8ccc-000000000005/transcript.md");
    stores::assert_within_a_second("replaced session file", || {
        stores::file_contains(&echo, "Echo fresh reply after the mount")
    });
}

/// A log line that is not JSON costs that line (shown raw, one warning); a log with no
/// readable state falls back to the flat file beside it; a `chatSessions` directory or a
/// `workspaceStorage` directory elsewhere can be given by hand.
#[test]
fn broken_logs_and_stores_given_by_hand() {
    let home = Home::empty();
    let h = home.path();
    let initial = |id: &str, prompt: &str| {
        json!({"kind": 0, "v": {"version": 3, "sessionId": id, "creationDate": 1_767_500_000_000_i64,
            "requests": [{"requestId": "r1", "timestamp": 1_767_500_000_000_i64, "message": message(prompt),
                          "variableData": {"variables": []}, "response": [md(&format!("reply to {prompt}"))]}]}})
        .to_string()
    };
    // Backup copies outside any editor directory.
    let dir = "backup/ws1/chatSessions";
    let g = "77777777-0000-4000-8000-000000000007";
    stores::put(
        h,
        &format!("{dir}/{g}.jsonl"),
        format!(
            "{}\n{{\"kind\": 1, \"k\": [\"customTitle\"], golf-broken-line\n{}\n",
            initial(g, "Golf: a log with a broken line"),
            json!({"kind": 2, "k": ["requests", 0, "response"], "v": [md("Golf reply after the broken line")]})
        ),
    );
    let k = "88888888-0000-4000-8000-000000000008";
    stores::put(h, &format!("{dir}/{k}.jsonl"), "not a log at all\n");
    put(
        h,
        &format!("{dir}/{k}.json"),
        &json!({"version": 3, "sessionId": k, "creationDate": 1_767_500_000_000_i64, "requests": [
            {"requestId": "r1", "message": message("Kilo: only the flat file is readable"),
             "variableData": {"variables": []}, "response": [md("Kilo flat reply")]}]}),
    );
    let l = "99999999-0000-4000-8000-000000000009";
    stores::put(
        h,
        &format!("elsewhere/workspaceStorage/abc/chatSessions/{l}.jsonl"),
        initial(l, "Lima: from a workspaceStorage directory") + "\n",
    );
    let out = tempfile::tempdir().expect("tmp");
    let tree = out.path().join("tree");
    let arg = |p: &str| format!("copilot-chat={}", h.join(p).display());
    let o = home.sessfs(&[
        "render",
        "--store",
        &arg(dir),
        "--store",
        &arg("elsewhere/workspaceStorage"),
        tree.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let dg = format!("copilot-chat/{g}");
    stores::assert_session_holds(
        &tree,
        &dg,
        &[
            "Golf: a log with a broken line",
            "Golf reply after the broken line",
            "golf-broken-line",
        ],
        &[] as &[&str],
    );
    let w = meta(&tree, &dg)["warnings"].to_string();
    assert!(w.contains("1 log lines could not be parsed"), "{w}");
    let dk = format!("copilot-chat/{k}");
    stores::assert_session_holds(
        &tree,
        &dk,
        &["Kilo: only the flat file is readable", "Kilo flat reply"],
        &[] as &[&str],
    );
    let w = meta(&tree, &dk)["warnings"].to_string();
    assert!(
        w.contains(&format!("read the older {k}.json instead")),
        "{w}"
    );
    stores::assert_only_in(
        &tree,
        "reply to Lima: from a workspaceStorage directory",
        ".",
        &format!("copilot-chat/{l}"),
    );
}

/// A session log as VS Code 1.109 starts it: the whole state, one request saying `prompt`.
fn glance_log(id: &str, prompt: &str) -> String {
    json!({"kind": 0, "v": {"version": 3, "sessionId": id, "creationDate": 1_767_600_000_000_i64,
        "requests": [{"requestId": "r1", "timestamp": 1_767_600_000_000_i64, "message": message(prompt),
                      "variableData": {"variables": []}, "response": [md("a glance reply")]}]}})
    .to_string()
        + "\n"
}

/// The Copilot Chat store's glance (`workspaceStorage`, each workspace's `chatSessions/` or
/// the workspace itself while it has none, the empty window's directory): with nothing
/// changed a search lists no store; an appended log, a workspace's first session, a new
/// empty-window session and a deleted one are each found by the next search.
#[test]
fn copilot_chat_changes_are_found_by_the_next_search() {
    use common::{age, logged_search};
    use std::collections::BTreeSet;
    let home = Home::empty();
    let h = home.path();
    let ids = [
        "c0c0c0c0-0000-4000-8000-000000000001",
        "c0c0c0c0-0000-4000-8000-000000000002",
        "c0c0c0c0-0000-4000-8000-000000000003",
        "c0c0c0c0-0000-4000-8000-000000000004",
    ];
    let found = |ns: &[usize]| -> BTreeSet<String> {
        ns.iter()
            .map(|&n| format!("copilot-chat/{}", ids[n]))
            .collect()
    };
    let storage = h.join(CODE).join("workspaceStorage");
    let (ws_a, ws_b) = (storage.join("aaaa0001"), storage.join("bbbb0002"));
    let empty = h.join(CODE).join("globalStorage/emptyWindowChatSessions");
    for ws in [&ws_a, &ws_b] {
        put(
            h,
            &format!(
                "{}/workspace.json",
                ws.strip_prefix(h).expect("in home").display()
            ),
            &json!({"folder": "file:///home/dev/glance"}),
        );
        stores::put(
            h,
            &format!(
                "{}/state.vscdb",
                ws.strip_prefix(h).expect("in home").display()
            ),
            b"",
        );
    }
    let log_a = ws_a.join(format!("chatSessions/{}.jsonl", ids[0]));
    std::fs::create_dir_all(log_a.parent().expect("parent")).expect("mkdir");
    std::fs::write(&log_a, glance_log(ids[0], "the glancechatone prompt")).expect("write");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let flat = |id: &str, prompt: &str| {
        json!({"version": 3, "sessionId": id, "creationDate": 1_767_600_000_000_i64, "requests": [
            {"requestId": "r1", "message": message(prompt), "variableData": {"variables": []},
             "response": [md("a glance reply")]}]})
        .to_string()
    };
    std::fs::write(
        empty.join(format!("{}.json", ids[1])),
        flat(ids[1], "the glancechattwo prompt"),
    )
    .expect("write");
    for d in [
        log_a.parent().expect("parent"),
        &ws_a,
        &ws_b,
        &storage,
        &empty,
        &h.join(CODE).join("globalStorage"),
    ] {
        age(d, 3600);
    }
    assert_eq!(logged_search(&home, "prompt"), (found(&[0, 1]), false));
    assert_eq!(logged_search(&home, "prompt"), (found(&[0, 1]), true));
    // An appended log entry: no directory moves, the log grows.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&log_a)
        .expect("open");
    use std::io::Write;
    f.write_all(
        (json!({"kind": 2, "k": ["requests", 0, "response"], "v": [md("an appendedchat reply")]})
            .to_string()
            + "\n")
            .as_bytes(),
    )
    .expect("append");
    drop(f);
    assert_eq!(logged_search(&home, "appendedchat").0, found(&[0]));
    assert_eq!(logged_search(&home, "appendedchat"), (found(&[0]), true));
    // A workspace's first session: only the workspace's own directory moves.
    let log_b = ws_b.join(format!("chatSessions/{}.jsonl", ids[2]));
    std::fs::create_dir_all(log_b.parent().expect("parent")).expect("mkdir");
    std::fs::write(&log_b, glance_log(ids[2], "the glancechatthree prompt")).expect("write");
    age(log_b.parent().expect("parent"), 3000);
    age(&ws_b, 3000);
    assert_eq!(logged_search(&home, "glancechatthree").0, found(&[2]));
    assert_eq!(logged_search(&home, "glancechatthree"), (found(&[2]), true));
    // A new empty-window session, then a deleted one.
    std::fs::write(
        empty.join(format!("{}.json", ids[3])),
        flat(ids[3], "the glancechatfour prompt"),
    )
    .expect("write");
    age(&empty, 3000);
    assert_eq!(logged_search(&home, "glancechatfour").0, found(&[3]));
    std::fs::remove_file(empty.join(format!("{}.json", ids[1]))).expect("rm");
    age(&empty, 2400);
    assert_eq!(logged_search(&home, "glancechattwo").0, BTreeSet::new());
    assert_eq!(logged_search(&home, "prompt"), (found(&[0, 2, 3]), true));
}
