//! iFlow CLI sessions, written here the way iFlow CLI 0.5.19 writes them (its npm package,
//! read in The-Sunder-islands/iflow-cli-ce @ 0d24a6e7: `modules/app/auth/vUi_iflow-auth.js`,
//! the history manager appending Claude Code-shaped records to
//! `~/.iflow/projects/<project>/session-<uuid>.jsonl`; `entry_code.js`, what the interactive
//! UI and `iflow -p` put in them, and the ACP server's `~/.iflow/acp/sessions/<id>.json`),
//! rendered with `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, read, shape, shapes, transcript, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A credential, planted in every file of iFlow's home that holds keys or tokens.
const SECRET: &str = "sk-PLANTED-iflow-key-doNotRead-0000";
/// Text of files beside the sessions that are no session (prompt log, `/chat save` copy).
const NOT_A_SESSION: &str = "PLANTED text of a file that is no session";

const PROJECT: &str = ".iflow/projects/-home-dev-webshop";
/// An interactive session.
const A: &str = "session-0a1b2c3d-1111-4aaa-8bbb-000000000001";
/// An `iflow -p` run.
const B: &str = "session-0a1b2c3d-2222-4aaa-8bbb-000000000002";
/// A session with a garbage line and a torn last line.
const C: &str = "session-0a1b2c3d-3333-4aaa-8bbb-000000000003";
/// A file that is no JSONL at all.
const D: &str = "session-0a1b2c3d-4444-4aaa-8bbb-000000000004";
/// ACP sessions: a whole one, a cut one, and one whose id session A has too.
const E: &str = "7f3e2d1c-5555-4ccc-9ddd-000000000005";
const F: &str = "7f3e2d1c-6666-4ccc-9ddd-000000000006";

const CWD: &str = "/home/dev/webshop";
const VERSION: &str = "0.5.19";

/// A record's time: 2026-02-10 09:`min`:`sec`.
fn at(min: u32, sec: u32) -> String {
    format!("2026-02-10T09:{min:02}:{sec:02}.000Z")
}

/// What `collectContext` stamps on user records.
fn context(r: &mut Value) {
    r["cwd"] = json!(CWD);
    r["gitBranch"] = json!("main");
    r["version"] = json!(VERSION);
}

/// `createUserMessage`: a prompt (string, or blocks when it holds images).
fn user(sid: &str, uuid: &str, parent: Option<&str>, ts: &str, content: Value) -> Value {
    let mut r = json!({"uuid": uuid, "parentUuid": parent, "sessionId": sid, "timestamp": ts,
        "type": "user", "isSidechain": false, "userType": "external",
        "message": {"role": "user", "content": content}});
    context(&mut r);
    r
}

/// `createAssistantMessage`: no cwd; `message` is the response object the caller built
/// ([`reply`]).
fn assistant(sid: &str, uuid: &str, parent: Option<&str>, ts: &str, message: Value) -> Value {
    json!({"uuid": uuid, "parentUuid": parent, "sessionId": sid, "timestamp": ts,
        "type": "assistant", "isSidechain": false, "userType": "external", "message": message})
}

/// The response object a writer hands `recordAssistantResponse`.
fn reply(id: &str, content: Value, model: &str, usage: (u64, u64)) -> Value {
    json!({"id": id, "type": "message", "role": "assistant", "content": content,
        "model": model, "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": usage.0, "output_tokens": usage.1}})
}

/// `createToolResultMessage`: `content` is `JSON.parse` of what the caller passed, when it
/// parses.
fn tool_result(
    sid: &str,
    uuid: &str,
    parent: &str,
    ts: &str,
    call: &str,
    tool: &str,
    content: Value,
) -> Value {
    let mut r = json!({"uuid": uuid, "parentUuid": parent, "sessionId": sid, "timestamp": ts,
        "type": "user", "isSidechain": false, "userType": "external",
        "message": {"role": "user", "content": [{"tool_use_id": call, "type": "tool_result",
            "content": content}]},
        "toolUseResult": {"toolName": tool, "status": "success", "timestamp": 1_770_714_000_000u64}});
    context(&mut r);
    r
}

/// A tool's whole response as the interactive UI stores it (`ToolCallResponseInfo`).
fn response_info(call: &str, tool: &str, output: &str, display: Value) -> Value {
    json!({"callId": call, "responseParts": {"functionResponse": {"id": call, "name": tool,
        "response": {"output": output}}}, "resultDisplay": display})
}

fn jsonl(records: &[Value]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}

/// Session A, the interactive UI: parents as the recording hook sets them (every reply of a
/// turn hangs off its prompt, results off the last reply), the reply recorded at each tool
/// call with that call carried into the next record, thinking inline, a slash command and
/// its output, an image prompt and a compression.
fn alpha() -> String {
    let s = A;
    let model = "glm-4.6";
    let slash = json!({"slashCommandOutput": {"type": "stats", "duration": "2m 5s"}}).to_string();
    let image = json!([{"type": "text", "text": "Alpha image prompt: what is on this screenshot?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAAAAAA"},
         "imageId": "1"}]);
    jsonl(&[
        user(
            s,
            "u1",
            None,
            &at(0, 1),
            json!("Alpha prompt: why does checkout fail?"),
        ),
        assistant(
            s,
            "a1",
            Some("u1"),
            &at(0, 3),
            reply(
                "response-1770714003000-tool-call_1",
                json!([{"type": "text", "text": "<think>Alpha thinking: read the logs first</think>Alpha reply: looking at the logs."},
                   {"type": "tool_use", "id": "call_1", "name": "run_shell_command",
                    "input": {"command": "tail -n 5 app.log"}}]),
                model,
                (0, 0),
            ),
        ),
        assistant(
            s,
            "a2",
            Some("u1"),
            &at(0, 4),
            reply(
                "response-1770714004000-tool-call_2",
                json!([{"type": "tool_use", "id": "call_1", "name": "run_shell_command",
                    "input": {"command": "tail -n 5 app.log"}},
                   {"type": "tool_use", "id": "call_2", "name": "read_file",
                    "input": {"absolute_path": "/home/dev/webshop/cart.py"}}]),
                model,
                (0, 0),
            ),
        ),
        tool_result(
            s,
            "r1",
            "a2",
            &at(0, 5),
            "call_1",
            "run_shell_command",
            response_info(
                "call_1",
                "run_shell_command",
                "alpha-output: KeyError: 'price'",
                json!("KeyError: 'price'"),
            ),
        ),
        tool_result(
            s,
            "r2",
            "a2",
            &at(0, 6),
            "call_2",
            "read_file",
            response_info(
                "call_2",
                "read_file",
                "alpha-output: def total(cart): ...",
                json!(""),
            ),
        ),
        assistant(
            s,
            "a3",
            Some("u1"),
            &at(0, 8),
            reply(
                "response-1770714008000",
                json!([{"type": "text", "text": "Alpha reply two: the cart has no price key."}]),
                model,
                (0, 0),
            ),
        ),
        user(s, "u2", Some("a3"), &at(1, 0), json!("/stats")),
        assistant(
            s,
            "a4",
            Some("u2"),
            &at(1, 1),
            reply(
                "slash-response-1770714061000-0.5",
                json!([{"type": "text", "text": slash}]),
                "slash-command",
                (0, 0),
            ),
        ),
        user(s, "u3", Some("a4"), &at(2, 0), image),
        assistant(
            s,
            "a5",
            Some("u3"),
            &at(2, 2),
            reply(
                "response-1770714122000",
                json!([{"type": "text", "text": "Alpha reply three: a stack trace."}]),
                model,
                (0, 0),
            ),
        ),
        json!({"uuid": "c1", "parentUuid": null, "sessionId": s, "timestamp": at(3, 0),
            "type": "user", "isSidechain": false, "userType": "external",
            "message": {"role": "user", "content": "Alpha summary: checkout fails on a missing price."},
            "cwd": CWD, "gitBranch": "main", "version": VERSION, "isCompactSummary": true,
            "compressionInfo": {"originalTokenCount": 48213, "newTokenCount": 1532,
                "summary": "Alpha summary: checkout fails on a missing price."}}),
        json!({"uuid": "m1", "parentUuid": "c1", "sessionId": s, "timestamp": at(3, 0),
            "type": "user", "isSidechain": false, "userType": "external",
            "message": {"role": "user", "content": "Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to."},
            "isMeta": true}),
        user(
            s,
            "u4",
            Some("m1"),
            &at(4, 0),
            json!("Alpha prompt two: fix it"),
        ),
        assistant(
            s,
            "a6",
            Some("u4"),
            &at(4, 2),
            reply(
                "response-1770714242000",
                json!([{"type": "text", "text": "Alpha reply four: fixed."}]),
                model,
                (0, 0),
            ),
        ),
    ])
}

/// Session B, `iflow -p`: one text block per streamed chunk, usage from the run, results as
/// the functionResponse parts the model was sent (one part parsed back to an object, two
/// parts as lines of JSON text), a failed call.
fn bravo() -> String {
    let s = B;
    let model = "qwen3-coder-plus";
    let two_parts = format!(
        "{}\n{}",
        json!({"functionResponse": {"id": "call_b2", "name": "read_many_files",
            "response": {"output": "Tool execution succeeded."}}}),
        json!({"text": "bravo-output: two files read"})
    );
    jsonl(&[
        user(
            s,
            "bu1",
            None,
            &at(10, 0),
            json!("Bravo prompt: list the TODOs"),
        ),
        assistant(
            s,
            "ba1",
            Some("bu1"),
            &at(10, 3),
            reply(
                "8c1d0e2f-aaaa-4bbb-8ccc-000000000001",
                json!([{"type": "text", "text": "Bravo reply: "},
                   {"type": "text", "text": "searching "},
                   {"type": "text", "text": "now."},
                   {"type": "tool_use", "id": "call_b1", "name": "search_file_content",
                    "input": {"pattern": "TODO"}},
                   {"type": "tool_use", "id": "call_b2", "name": "read_many_files",
                    "input": {"paths": ["a.py", "b.py"]}}]),
                model,
                (1200, 80),
            ),
        ),
        tool_result(
            s,
            "br1",
            "ba1",
            &at(10, 4),
            "call_b1",
            "search_file_content",
            json!({"functionResponse": {"id": "call_b1", "name": "search_file_content",
                "response": {"error": "bravo-error: ripgrep not found"}}}),
        ),
        tool_result(
            s,
            "br2",
            "ba1",
            &at(10, 5),
            "call_b2",
            "read_many_files",
            json!(two_parts),
        ),
        assistant(
            s,
            "ba2",
            Some("bu1"),
            &at(10, 9),
            reply(
                "8c1d0e2f-aaaa-4bbb-8ccc-000000000002",
                json!([{"type": "text", "text": "Bravo reply two: "}, {"type": "text", "text": "no TODOs."}]),
                model,
                (1500, 40),
            ),
        ),
    ])
}

/// Session C: a line of garbage between two records, and a last line cut mid-write.
fn charlie() -> String {
    let s = C;
    let mut out = jsonl(&[user(
        s,
        "cu1",
        None,
        &at(20, 0),
        json!("Charlie prompt before the garbage"),
    )]);
    out += "this line is no JSON\n";
    out += &jsonl(&[assistant(
        s,
        "ca1",
        Some("cu1"),
        &at(20, 2),
        reply(
            "response-1",
            json!([{"type": "text", "text": "Charlie reply after the garbage"}]),
            "unknown",
            (0, 0),
        ),
    )]);
    out += "{\"uuid\": \"cu2\", \"type\": \"user\", \"message\": {\"role\": \"user\", \"content\": \"Charlie torn";
    out
}

/// `saveSessionState`: the ACP session and its Gemini API history.
fn acp(id: &str, history: Value) -> String {
    let doc = json!({"sessionId": id, "cwd": "/home/dev/ide-project",
        "createdAt": "2026-02-11T15:30:00.000Z", "lastActivity": "2026-02-11T15:30:00.000Z",
        "chatHistory": history});
    serde_json::to_string_pretty(&doc).expect("json")
}

fn echo() -> Value {
    json!([
        {"role": "user", "parts": [{"text": "Echo prompt: explain main.rs"},
            {"inlineData": {"mimeType": "image/jpeg", "data": "AAAAAAAAAAAA"}}]},
        {"role": "model", "parts": [{"text": "Echo thinking: open the file", "thought": true},
            {"text": "Echo reply: reading it."},
            {"functionCall": {"id": "read_file-1", "name": "read_file",
                "args": {"absolute_path": "/home/dev/ide-project/main.rs"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "read_file-1", "name": "read_file",
            "response": {"output": "echo-output: fn main() {}"}}}]},
        {"role": "model", "parts": [{"functionCall": {"name": "list_directory", "args": {"path": "."}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "list_directory",
            "response": {"error": "echo-error: permission denied"}}}]},
        {"role": "model", "parts": [{"text": "Echo reply two: it does nothing."}]},
    ])
}

fn write() -> Home {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    put(&h, &format!("{PROJECT}/{A}.jsonl"), alpha());
    put(&h, &format!("{PROJECT}/{B}.jsonl"), bravo());
    put(
        &h,
        &format!(".iflow/projects/-home-dev-other/{C}.jsonl"),
        charlie(),
    );
    put(
        &h,
        &format!(".iflow/projects/-home-dev-other/{D}.jsonl"),
        b"\x00\xff garbage\nnot json either\n",
    );
    put(&h, &format!(".iflow/acp/sessions/{E}.json"), acp(E, echo()));
    let cut = acp(
        F,
        json!([{"role": "user", "parts": [{"text": "Foxtrot prompt before the cut"}]}]),
    );
    // `writeFile` truncates first: a reader can see the file cut after the prompt.
    let text = "Foxtrot prompt before the cut";
    let cut_at = cut.find(text).expect("prompt") + text.len() + 2;
    put(&h, &format!(".iflow/acp/sessions/{F}.json"), &cut[..cut_at]);
    put(
        &h,
        &format!(".iflow/acp/sessions/{A}.json"),
        acp(
            A,
            json!([{"role": "user", "parts": [{"text": "Golf prompt: same id as alpha"}]},
            {"role": "model", "parts": [{"text": "Golf reply"}]}]),
        ),
    );

    // What is never shown: credentials, settings and files that are no session.
    for f in [
        "settings.json",
        "oauth_creds.json",
        "iflow_accounts.json",
        "google_accounts.json",
        "mcp-oauth-tokens.json",
        "aone_token.json",
        ".env",
    ] {
        put(
            &h,
            &format!(".iflow/{f}"),
            format!("{{\"apiKey\": \"{SECRET}\"}}"),
        );
    }
    put(
        &h,
        ".iflow/config/projects.json",
        format!(
            "{{\"-home-dev-webshop\": {{\"name\": \"{NOT_A_SESSION}\", \"sessions\": [\"{A}\"]}}}}"
        ),
    );
    let tmp = ".iflow/tmp/4f0c0d5b1a7e9c3b2d6f8a0e1c3b5d7f9a1c3e5b7d9f1a3c5e7b9d1f3a5c7e9b";
    put(
        &h,
        &format!("{tmp}/logs.json"),
        json!([{"sessionId": A, "messageId": 0, "type": "user", "message": NOT_A_SESSION,
            "timestamp": at(0, 1)}])
        .to_string(),
    );
    put(
        &h,
        &format!("{tmp}/checkpoint-before-fix.json"),
        json!([{"role": "user", "parts": [{"text": NOT_A_SESSION}]}]).to_string(),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    home
}

fn render(home: &Home) -> Rendered {
    stores::render(home, "sessfs-iflow", &["IFLOW_HOME"])
}

fn dir(id: &str) -> String {
    format!("iflow/{id}")
}

fn find<'a>(ms: &'a [Value], text: &str) -> &'a Value {
    ms.iter()
        .find(|m| m.to_string().contains(text))
        .unwrap_or_else(|| panic!("{text} not in messages.jsonl"))
}

#[test]
fn every_session_is_listed_with_its_title_cwd_times_and_format() {
    let home = write();
    let out = render(&home);
    assert_eq!(stores::entries(&out.tree, "iflow"), 7);
    let a = meta(&out.tree, &dir(A));
    assert_eq!(a["title"], "Alpha prompt: why does checkout fail?");
    assert_eq!(a["cwd"], CWD);
    assert_eq!(a["createdAt"], at(0, 1));
    assert_eq!(a["updatedAt"], at(4, 2));
    assert_eq!(a["source"]["format"], "iflow-jsonl");
    assert_eq!(a["source"]["formatVersion"], VERSION);
    // The parents iFlow writes (every reply of a turn off its prompt) are no branches.
    assert_eq!(a["branches"], json!([]));
    let b = meta(&out.tree, &dir(B));
    assert_eq!(b["title"], "Bravo prompt: list the TODOs");
    assert_eq!(b["createdAt"], at(10, 0));
    assert_eq!(b["updatedAt"], at(10, 9));
    let e = meta(&out.tree, &dir(E));
    assert_eq!(e["title"], "Echo prompt: explain main.rs");
    assert_eq!(e["cwd"], "/home/dev/ide-project");
    assert_eq!(e["updatedAt"], "2026-02-11T15:30:00.000Z");
    // `createdAt` is rewritten at every save: no creation time is known.
    assert_eq!(e["createdAt"], Value::Null);
    assert_eq!(e["source"]["format"], "iflow-acp-json");
    // An ACP id a JSONL session has too is told apart.
    let g = meta(&out.tree, &dir(&format!("{A}@acp")));
    assert_eq!(g["title"], "Golf prompt: same id as alpha");
}

#[test]
fn prompts_replies_thinking_and_tool_results_land_in_their_session() {
    let home = write();
    let out = render(&home);
    stores::assert_session_holds(
        &out.tree,
        &dir(A),
        &[
            "Alpha prompt: why does checkout fail?",
            "Alpha thinking: read the logs first",
            "Alpha reply: looking at the logs.",
            "Alpha reply two: the cart has no price key.",
            "Alpha image prompt: what is on this screenshot?",
            "Alpha reply three: a stack trace.",
            "Alpha summary: checkout fails on a missing price.",
            "Alpha reply four: fixed.",
        ],
        &[
            "alpha-output: KeyError: 'price'",
            "alpha-output: def total(cart): ...",
        ],
    );
    stores::assert_session_holds(
        &out.tree,
        &dir(B),
        &["Bravo prompt: list the TODOs"],
        &[
            "bravo-error: ripgrep not found",
            "bravo-output: two files read",
        ],
    );
    stores::assert_session_holds(
        &out.tree,
        &dir(E),
        &[
            "Echo prompt: explain main.rs",
            "Echo thinking: open the file",
            "Echo reply: reading it.",
            "Echo reply two: it does nothing.",
        ],
        &["echo-output: fn main() {}", "echo-error: permission denied"],
    );
    let t = transcript(&out.tree, &dir(A));
    assert!(t.contains("[image: image/png, 6 B]"), "{t}");
    assert!(!t.contains("AAAAAAAA"), "{t}");
    let raw = read(&out.tree, &format!("{}/messages.jsonl", dir(A)));
    assert!(!raw.contains("<think>"), "{raw}");
    let e = transcript(&out.tree, &dir(E));
    assert!(e.contains("[image: image/jpeg, 9 B]"), "{e}");
}

#[test]
fn every_record_kind_in_file_order() {
    let home = write();
    let out = render(&home);
    let a = messages(&out.tree, &dir(A));
    let caveat = "Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to.";
    assert_eq!(
        shapes(&a),
        [
            shape("user", "", "Alpha prompt: why does checkout fail?"),
            shape("assistant", "", "Alpha reply: looking at the logs."),
            // The call carried into the next record is shown once.
            shape("assistant", "", ""),
            shape("tool", "", ""),
            shape("tool", "", ""),
            shape(
                "assistant",
                "",
                "Alpha reply two: the cart has no price key."
            ),
            shape("user", "event", "/stats"),
            shape("system", "event", "stats: {\"duration\":\"2m 5s\"}"),
            shape(
                "user",
                "",
                "Alpha image prompt: what is on this screenshot?\n\n[image: image/png, 6 B]"
            ),
            shape("assistant", "", "Alpha reply three: a stack trace."),
            shape(
                "system",
                "event",
                "Conversation compressed (48,213 → 1,532 tokens)"
            ),
            shape(
                "user",
                "compactionSummary",
                "Alpha summary: checkout fails on a missing price."
            ),
            shape("system", "context", caveat),
            shape("user", "", "Alpha prompt two: fix it"),
            shape("assistant", "", "Alpha reply four: fixed."),
        ]
    );
    // Stream chunks join as streamed.
    let b = messages(&out.tree, &dir(B));
    assert_eq!(
        shapes(&b)
            .into_iter()
            .filter(|s| s.0 == "assistant")
            .map(|s| s.2)
            .collect::<Vec<_>>(),
        ["Bravo reply: searching now.", "Bravo reply two: no TODOs."]
    );
}

#[test]
fn calls_pair_with_results_once_with_names_and_errors() {
    let home = write();
    let out = render(&home);
    let a = messages(&out.tree, &dir(A));
    let calls: Vec<(&str, &str)> = a
        .iter()
        .flat_map(|m| m["toolCalls"].as_array().into_iter().flatten())
        .map(|c| {
            (
                c["toolCallId"].as_str().unwrap_or(""),
                c["toolName"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [("call_1", "run_shell_command"), ("call_2", "read_file")]
    );
    let r1 = find(&a, "alpha-output: KeyError");
    assert_eq!(r1["toolResult"]["toolCallId"], "call_1");
    assert_eq!(r1["toolResult"]["toolName"], "run_shell_command");
    assert_eq!(r1["toolResult"]["isError"], false);
    let first = find(&a, "Alpha reply: looking at the logs.");
    assert_eq!(first["thinking"], "Alpha thinking: read the logs first");
    assert_eq!(
        first["toolCalls"][0]["input"]["command"],
        "tail -n 5 app.log"
    );

    let b = messages(&out.tree, &dir(B));
    let failed = find(&b, "bravo-error: ripgrep not found");
    assert_eq!(failed["toolResult"]["toolCallId"], "call_b1");
    assert_eq!(failed["toolResult"]["toolName"], "search_file_content");
    assert_eq!(failed["toolResult"]["isError"], true);
    let two = find(&b, "bravo-output: two files read");
    assert_eq!(
        two["toolResult"]["output"],
        "Tool execution succeeded.\nbravo-output: two files read"
    );
    assert_eq!(two["toolResult"]["isError"], false);

    let e = messages(&out.tree, &dir(E));
    let read_ok = find(&e, "echo-output: fn main() {}");
    assert_eq!(read_ok["toolResult"]["toolCallId"], "read_file-1");
    assert_eq!(read_ok["toolResult"]["isError"], false);
    // A response without an id answers the open call of its name.
    let denied = find(&e, "echo-error: permission denied");
    assert_eq!(denied["toolResult"]["toolName"], "list_directory");
    assert_eq!(denied["toolResult"]["isError"], true);
    let call = e
        .iter()
        .flat_map(|m| m["toolCalls"].as_array().into_iter().flatten())
        .find(|c| c["toolName"] == "list_directory")
        .expect("list_directory call");
    assert_eq!(call["toolCallId"], denied["toolResult"]["toolCallId"]);
    assert_eq!(
        find(&e, "Echo reply: reading it.")["thinking"],
        "Echo thinking: open the file"
    );
}

#[test]
fn model_and_usage_where_recorded() {
    let home = write();
    let out = render(&home);
    let b = meta(&out.tree, &dir(B));
    assert_eq!(b["model"], "qwen3-coder-plus");
    assert_eq!(
        stores::tokens(&b["cost"]).0,
        Some(1200 + 1500),
        "{}",
        b["cost"]
    );
    assert_eq!(stores::tokens(&b["cost"]).1, Some(80 + 40), "{}", b["cost"]);
    let bm = messages(&out.tree, &dir(B));
    let r = find(&bm, "Bravo reply two: no TODOs.");
    assert_eq!(r["tokenUsage"]["inputTokens"], 1500, "{r}");
    assert_eq!(r["model"], "qwen3-coder-plus");
    // The interactive UI writes zero usage on every reply: none is recorded.
    let a = meta(&out.tree, &dir(A));
    assert_eq!(a["model"], "glm-4.6");
    assert_eq!(a["models"], json!(["glm-4.6"]));
    let am = messages(&out.tree, &dir(A));
    assert!(
        am.iter().all(|m| m["tokenUsage"].is_null()),
        "{}",
        read(&out.tree, &format!("{}/messages.jsonl", dir(A)))
    );
    // `iflow -p` without a configured model writes `unknown`: no model is known.
    let c = meta(&out.tree, &dir(C));
    assert_eq!(c["model"], Value::Null, "{c}");
    assert_eq!(c["models"], json!([]), "{c}");
}

#[test]
fn garbage_torn_and_cut_files_cost_warnings_while_the_rest_loads() {
    let home = write();
    let out = render(&home);
    let c = meta(&out.tree, &dir(C));
    let w = c["warnings"].to_string();
    assert!(w.contains("line 2"), "{w}");
    assert!(w.contains("partial last line"), "{w}");
    stores::assert_session_holds(
        &out.tree,
        &dir(C),
        &[
            "Charlie prompt before the garbage",
            "Charlie reply after the garbage",
        ],
        &[] as &[&str],
    );
    let unparsed = read(&out.tree, &format!("{}/unparsed.txt", dir(C)));
    assert!(unparsed.contains("this line is no JSON"), "{unparsed}");
    assert!(unparsed.contains("Charlie torn"), "{unparsed}");
    let d = meta(&out.tree, &dir(D));
    assert!(
        !d["warnings"].as_array().expect("warnings").is_empty(),
        "{d}"
    );
    let f = meta(&out.tree, &dir(F));
    let w = f["warnings"].to_string();
    assert!(w.contains("not JSON"), "{w}");
    assert!(transcript(&out.tree, &dir(F)).contains("Foxtrot prompt before the cut"));
    // The whole sessions beside them are all there.
    assert_eq!(meta(&out.tree, &dir(A))["warnings"], json!([]));
    assert_eq!(meta(&out.tree, &dir(E))["warnings"], json!([]));
}

#[test]
fn credentials_settings_and_logs_are_never_shown() {
    let home = write();
    let out = render(&home);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_nowhere(&out.tree, NOT_A_SESSION);
    stores::assert_list_hides(&home, SECRET, &["IFLOW_HOME"]);
    // No session comes from a file other than a session file.
    let iflow = home.path().join(".iflow");
    for e in std::fs::read_dir(out.tree.join("iflow")).expect("iflow") {
        let m = meta(
            &out.tree,
            &format!("iflow/{}", e.expect("entry").file_name().to_string_lossy()),
        );
        for p in m["source"]["paths"].as_array().expect("paths") {
            let p = Path::new(p.as_str().expect("path"));
            assert!(
                p.starts_with(iflow.join("projects")) || p.starts_with(iflow.join("acp/sessions")),
                "{}",
                p.display()
            );
        }
    }
}

#[test]
fn iflow_home_replaces_the_default() {
    let home = write();
    let moved = home.path().join("elsewhere");
    put(
        &moved,
        &format!("projects/-srv/{}.jsonl", "session-moved"),
        jsonl(&[user(
            "session-moved",
            "x1",
            None,
            &at(30, 0),
            json!("Moved prompt under IFLOW_HOME"),
        )]),
    );
    let tree = home.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("IFLOW_HOME", &moved)
        .output()
        .expect("render");
    assert!(o.status.success());
    let listed: Vec<String> = std::fs::read_dir(tree.join("iflow"))
        .expect("iflow")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed, ["session-moved"]);
}

#[test]
fn doctor_names_iflow_and_where_it_found_it() {
    let home = write();
    let text = stdout(&home.sessfs(&["doctor"]));
    assert!(text.contains("iflow"), "{text}");
    assert!(text.contains("7 sessions"), "{text}");
    assert!(text.contains(".iflow"), "{text}");
}

#[test]
fn mounted_sessions_sizes_erofs_and_store_untouched() {
    let home = write();
    stores::mounted_untouched(&home, Home::snapshot, |m| {
        stores::assert_session_holds(
            m.path(),
            &dir(A),
            &[
                "Alpha prompt: why does checkout fail?",
                "Alpha reply four: fixed.",
            ],
            &["alpha-output: KeyError: 'price'"],
        );
        stores::assert_mount_read_only(m, &["iflow"], 20, SECRET, &dir(E));
    });
}

/// iFlow appends a record per message and rewrites an ACP session whole after each prompt:
/// both show within a second on a mount.
#[test]
fn an_appended_record_and_a_rewritten_acp_session_show_within_a_second() {
    let home = write();
    let m = Mount::new(&home, &[]);
    let a = m.path().join(format!("{}/transcript.md", dir(A)));
    let e = m.path().join(format!("{}/transcript.md", dir(E)));
    assert!(stores::file_contains(&a, "Alpha reply four: fixed."));
    assert!(stores::file_contains(
        &e,
        "Echo reply two: it does nothing."
    ));

    let path = home.path().join(format!("{PROJECT}/{A}.jsonl"));
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    let line = jsonl(&[user(
        A,
        "u9",
        Some("a6"),
        &at(9, 0),
        json!("Alpha fresh prompt after the mount"),
    )]);
    std::io::Write::write_all(&mut f, line.as_bytes()).expect("append");
    drop(f);
    stores::assert_within_a_second("appended record", || {
        stores::file_contains(&a, "Alpha fresh prompt after the mount")
    });

    let mut history = echo();
    history
        .as_array_mut()
        .expect("array")
        .push(json!({"role": "model", "parts": [{"text": "Echo fresh reply after the mount"}]}));
    put(
        home.path(),
        &format!(".iflow/acp/sessions/{E}.json"),
        acp(E, history),
    );
    stores::assert_within_a_second("rewritten ACP session", || {
        stores::file_contains(&e, "Echo fresh reply after the mount")
    });
}

/// The bundled samples (`fixtures/home/.iflow/`): an interactive session (thinking, a search
/// and an edit with their results, the call carried into the next record shown once, a
/// `/stats` command) and an ACP session, each line in its session and no warning. The lines
/// are the samples' own text.
#[test]
fn bundled_samples_show_both_sessions() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-iflow-samples")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let jsonl = "iflow/session-5d2c8e41-7a3b-4f0e-9c61-2b8d4e6f1a07";
    stores::assert_session_holds(
        &tree,
        jsonl,
        &[
            "The login form accepts an empty password. Can you find where it is validated?",
            "The form lives in src/auth; search for the validator before reading files.",
            "I'll look for the password check.",
            "The check only rejects a missing password, not an empty one. I'll fix it.",
            "now rejects an empty password as well as a missing one.",
            "stats: {\"duration\":\"57s\"}",
        ],
        &[
            "L12: if (password === undefined) return 'password required';",
            "Successfully modified file: /home/demo/webapp/src/auth/validate.ts (1 replacements).",
        ],
    );
    let calls = messages(&tree, jsonl)
        .iter()
        .flat_map(|m| m["toolCalls"].as_array().cloned().unwrap_or_default())
        .count();
    assert_eq!(calls, 2);
    let acp = "iflow/3e9f1c7a-2b4d-4c6e-8f0a-1b3d5f7a9c2e";
    stores::assert_session_holds(
        &tree,
        acp,
        &[
            "What does the retry helper in src/net do?",
            "Reading the helper first.",
            "then makes one last call whose error is not caught.",
        ],
        &["export async function retry(fn, attempts = 3) {"],
    );
    for dir in [jsonl, acp] {
        let m = meta(&tree, dir);
        assert_eq!(m["warnings"], json!([]), "{dir}: {}", m["warnings"]);
        assert_eq!(m["cwd"], "/home/demo/webapp", "{dir}");
    }
    assert_eq!(stores::entries(&tree, "iflow"), 2);
}
