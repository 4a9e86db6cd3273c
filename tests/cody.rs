//! Sourcegraph Cody's chats in VS Code's global state: `state.vscdb` databases built here from
//! VS Code's `ItemTable` (`fixtures/schema/vscode-state.sql`), the `sourcegraph.cody-ai` row
//! holding the JSON Cody's `LocalStorageProvider` writes (per-account
//! `cody-local-chatHistory-v2`, beside `cody-config` with a planted access token), a
//! profile's database with the unkeyed history of old builds, and an Insiders database whose
//! row is not JSON; rendered with `sessfs render` and mounted once.
//!
//! Every expected value comes from the rows written below, never from sessfs' parser.

mod common;

use common::stores::{self, meta, Rendered};
use common::{stdout, Home, Mount};
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::path::Path;

const DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/vscode-state.sql"
));

/// Cody's access token, planted in `cody-config` inside the very row the chats are in.
const TOKEN: &str = "sgp_PLANTEDcodyCONFIGtokenDoNotRead0000000000";
/// The same token as VS Code's secret storage keeps it, in its own row.
const SECRET: &str = "PLANTEDsecretStorageCODYrowDoNotRead11111";

const CODE: &str = ".config/Code/User/globalStorage/state.vscdb";
const PROFILE: &str = ".config/Code/User/profiles/5e1a2b3c/globalStorage/state.vscdb";
const INSIDERS: &str = ".config/Code - Insiders/User/globalStorage/state.vscdb";

const A: &str = "Tue, 04 Mar 2025 10:00:00 GMT";
const B: &str = "Wed, 05 Mar 2025 11:30:00 GMT";
const C: &str = "Thu, 06 Mar 2025 12:00:00 GMT";
const BAD: &str = "Fri, 07 Mar 2025 08:00:00 GMT";
const D: &str = "Thu, 02 Nov 2023 09:00:00 GMT";

const MODEL: &str = "anthropic::2024-10-22::claude-3-5-sonnet-latest";
const AGENT_MODEL: &str = "anthropic::2024-10-22::claude-sonnet-4-latest";

fn db(home: &Path, rel: &str, rows: &[(&str, String)]) {
    let p = home.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("dir");
    let c = Connection::open(p).expect("db");
    c.execute_batch(DDL).expect("ddl");
    for (k, v) in rows {
        c.execute(
            "INSERT INTO ItemTable (key, value) VALUES (?1, ?2)",
            params![k, v],
        )
        .expect("row");
    }
}

fn uri(path: &str) -> Value {
    json!({"$mid": 1, "fsPath": path, "external": format!("file://{path}"), "path": path, "scheme": "file"})
}

fn chat_a() -> Value {
    json!({
        "id": A,
        "chatTitle": "Alpha: explain the parser",
        "lastInteractionTimestamp": A,
        "interactions": [
            {
                "humanMessage": {
                    "speaker": "human",
                    "text": "Alpha prompt: explain parse()",
                    "intent": "chat",
                    "editorState": {"v": "lexical-v1", "minReaderV": "lexical-v1"},
                    "contextFiles": [{
                        "type": "file", "uri": uri("/home/dev/alpha/src/parse.ts"), "source": "user",
                        "range": {"start": {"line": 9, "character": 0}, "end": {"line": 19, "character": 0}},
                        "content": "alpha-file-body"
                    }]
                },
                "assistantMessage": {"speaker": "assistant", "model": MODEL, "text": "Alpha reply: it tokenizes first",
                                      "futureField": "Alpha future value"}
            },
            {
                "humanMessage": {"speaker": "human", "text": "Alpha second prompt: make it faster",
                                 "intent": "edit", "manuallySelectedIntent": "edit"},
                "assistantMessage": {"speaker": "assistant", "model": MODEL,
                    "error": {"name": "RateLimitError", "message": "Alpha error: rate limited",
                              "isChatErrorGuard": "isChatErrorGuard"}}
            }
        ]
    })
}

fn chat_b() -> Value {
    let states = json!([
        {"type": "tool-state", "uri": uri(""), "toolId": "toolu_b1", "toolName": "run_terminal_command",
         "status": "done", "outputType": "terminal-output", "content": "bravo-output: 12 passed"},
        {"type": "tool-state", "uri": uri(""), "toolId": "toolu_b2", "toolName": "get_file",
         "status": "error", "outputType": "status", "content": "bravo-error: file not found"}
    ]);
    json!({
        "id": B,
        "lastInteractionTimestamp": B,
        "interactions": [
            {
                "humanMessage": {"speaker": "human", "text": "Bravo prompt: run the tests", "intent": "agentic",
                                 "manuallySelectedIntent": "agentic"},
                "assistantMessage": {
                    "speaker": "assistant", "model": AGENT_MODEL, "text": "Bravo plan: run them",
                    "content": [
                        {"type": "text", "text": "Bravo plan: run them"},
                        {"type": "tool_call", "tool_call": {"id": "toolu_b1", "name": "run_terminal_command",
                                                             "arguments": "{\"command\":\"npm test\"}"}},
                        {"type": "tool_call", "tool_call": {"id": "toolu_b2", "name": "get_file",
                                                             "arguments": "{\"name\":\"missing.ts\"}"}}
                    ],
                    "contextFiles": states
                }
            },
            {
                "humanMessage": {
                    "speaker": "human", "intent": "agentic",
                    "content": [
                        {"type": "tool_result", "tool_result": {"id": "toolu_b1", "content": "bravo-output: 12 passed"}},
                        {"type": "tool_result", "tool_result": {"id": "toolu_b2", "content": "bravo-error: file not found"}}
                    ],
                    "contextFiles": states
                },
                "assistantMessage": {"speaker": "assistant", "model": AGENT_MODEL, "text": "Bravo reply: the tests pass"}
            }
        ]
    })
}

fn chat_c() -> Value {
    json!({
        "id": C, "lastInteractionTimestamp": C,
        "interactions": [{
            "humanMessage": {"speaker": "human", "text": "Charlie prompt: waiting for a reply",
                             "processes": [{"type": "step", "id": "search", "title": "Charlie step: searching",
                                            "content": "Charlie step content", "state": "success"}]},
            "assistantMessage": null
        }]
    })
}

/// The unkeyed history of builds before the per-account migration, in a profile.
fn chat_d() -> Value {
    json!({
        "id": D,
        "chatModel": "openai/gpt-4",
        "lastInteractionTimestamp": "2023-11-02T09:05:00.000Z",
        "interactions": [{
            "humanMessage": {"speaker": "human", "text": "Delta sent: what does main do? with context",
                             "displayText": "Delta prompt: what does main do?"},
            "assistantMessage": {"speaker": "assistant", "text": "Delta reply: it starts the server",
                                 "displayText": "Delta reply: it starts the server"},
            "fullContext": [
                {"speaker": "human", "text": "Delta context: package main", "file": {"uri": "file:///home/dev/delta/main.go"}},
                {"speaker": "assistant", "text": "Ok."}
            ],
            "usedContextFiles": [{"type": "file", "uri": "file:///home/dev/delta/main.go"}],
            "usedPreciseContext": [],
            "timestamp": "2023-11-02T09:00:00.000Z"
        }]
    })
}

struct Fixture {
    home: Home,
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let cody = json!({
        "cody-config": {"auth": {"serverEndpoint": "https://sourcegraph.com/",
                                  "credentials": {"token": TOKEN, "source": "paste"}}},
        "SOURCEGRAPH_CODY_ENDPOINT": "https://sourcegraph.com/",
        "sourcegraphAnonymousUid": "0d6f9f1e-anon",
        "cody-local-chatHistory-v2": {
            "https://sourcegraph.com/-alice": {"chat": {A: chat_a(), B: chat_b(), BAD: "Bad chat: not a transcript"}},
            "https://sg.example.com/-bob": {"chat": {C: chat_c()}}
        }
    });
    db(
        &h,
        CODE,
        &[
            ("sourcegraph.cody-ai", cody.to_string()),
            (
                "secret://{\"extensionId\":\"sourcegraph.cody-ai\",\"key\":\"cody.access-token\"}",
                json!({"type": "Buffer", "data": SECRET}).to_string(),
            ),
            ("workbench.panel.width", "300".into()),
        ],
    );
    let old = json!({"cody-local-chatHistory-v2": {"chat": {D: chat_d()}, "input": ["Delta input-history line"]}});
    db(&h, PROFILE, &[("sourcegraph.cody-ai", old.to_string())]);
    db(
        &h,
        INSIDERS,
        &[(
            "sourcegraph.cody-ai",
            "{\"cody-local-chatHistory-v2\": {torn".into(),
        )],
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-cody", &[])
}

fn dir(id: &str) -> String {
    format!("cody/{id}")
}

fn transcript(tree: &Path, id: &str) -> String {
    stores::transcript(tree, &dir(id))
}

fn messages(tree: &Path, id: &str) -> Vec<Value> {
    stores::messages(tree, &dir(id))
}

fn check_tree(tree: &Path) {
    stores::assert_session_holds(
        tree,
        &dir(A),
        &[
            "Alpha prompt: explain parse()",
            "Alpha reply: it tokenizes first",
            "Alpha second prompt: make it faster",
            "Alpha error: rate limited",
            "/home/dev/alpha/src/parse.ts:10-20",
        ],
        &[] as &[&str],
    );
    stores::assert_session_holds(
        tree,
        &dir(B),
        &[
            "Bravo prompt: run the tests",
            "Bravo plan: run them",
            "Bravo reply: the tests pass",
        ],
        &["bravo-output: 12 passed", "bravo-error: file not found"],
    );
    stores::assert_session_holds(
        tree,
        &dir(C),
        &[
            "Charlie prompt: waiting for a reply",
            "Charlie step: searching",
        ],
        &[] as &[&str],
    );
    stores::assert_session_holds(
        tree,
        &dir(D),
        &[
            "Delta prompt: what does main do?",
            "Delta sent: what does main do? with context",
            "Delta reply: it starts the server",
            "Delta context: package main",
        ],
        &[] as &[&str],
    );
}

#[test]
fn every_chat_of_every_account_and_profile_is_a_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree);
    assert_eq!(stores::entries(&out.tree, "cody"), 5);
    let a = meta(&out.tree, &dir(A));
    assert_eq!(a["title"], "Alpha: explain the parser");
    assert_eq!(a["createdAt"], "2025-03-04T10:00:00.000Z");
    assert_eq!(a["model"], MODEL);
    assert!(
        a["tags"]
            .to_string()
            .contains("account:https://sourcegraph.com/-alice"),
        "{}",
        a["tags"]
    );
    let c = meta(&out.tree, &dir(C));
    assert!(
        c["tags"]
            .to_string()
            .contains("account:https://sg.example.com/-bob"),
        "{}",
        c["tags"]
    );
    // An untitled chat is named by its first prompt.
    assert_eq!(
        meta(&out.tree, &dir(B))["title"],
        "Bravo prompt: run the tests"
    );
    let d = meta(&out.tree, &dir(D));
    assert_eq!(d["createdAt"], "2023-11-02T09:00:00.000Z");
    assert_eq!(d["updatedAt"], "2023-11-02T09:05:00.000Z");
    assert_eq!(d["model"], "openai/gpt-4");
}

#[test]
fn prompts_replies_context_and_events_in_order() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, A);
    let roles: Vec<&str> = m.iter().map(|x| x["role"].as_str().unwrap_or("")).collect();
    // context files, prompt, the reply's unknown field, reply, intent event, prompt, error
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "system",
            "assistant",
            "system",
            "user",
            "system"
        ],
        "{m:?}"
    );
    assert_eq!(m[1]["content"], "Alpha prompt: explain parse()");
    assert_eq!(m[2]["label"], "unparsed futureField");
    assert_eq!(m[3]["content"], "Alpha reply: it tokenizes first");
    assert_eq!(m[3]["model"], MODEL);
    // A field sessfs does not know is shown raw where it stands and named in a warning.
    assert!(
        meta(&out.tree, &dir(A))["warnings"]
            .to_string()
            .contains("unknown field"),
        "{}",
        meta(&out.tree, &dir(A))["warnings"]
    );
    assert!(transcript(&out.tree, A).contains("Alpha future value"));
    assert_eq!(
        m[0]["content"],
        "file /home/dev/alpha/src/parse.ts:10-20 (user)"
    );
    assert!(
        m[4]["content"]
            .as_str()
            .unwrap_or("")
            .contains("intent: edit"),
        "{}",
        m[4]
    );
    assert!(
        m[6]["content"]
            .as_str()
            .unwrap_or("")
            .contains("RateLimitError: Alpha error: rate limited"),
        "{}",
        m[6]
    );
    let t = transcript(&out.tree, A);
    let (p1, r1, p2, e) = (
        t.find("Alpha prompt"),
        t.find("Alpha reply"),
        t.find("Alpha second prompt"),
        t.find("Alpha error"),
    );
    assert!(p1 < r1 && r1 < p2 && p2 < e, "{t}");
    // The rich editor's copy of the prompt is not shown; the attached file's body is not
    // either (only its name and lines).
    assert!(
        !t.contains("lexical-v1") && !t.contains("alpha-file-body"),
        "{t}"
    );
    // Old builds: the text shown, the text sent as context, the context messages.
    let d = messages(&out.tree, D);
    let users: Vec<&Value> = d.iter().filter(|x| x["role"] == "user").collect();
    assert_eq!(users.len(), 1, "{d:?}");
    assert_eq!(users[0]["content"], "Delta prompt: what does main do?");
    assert_eq!(users[0]["timestamp"], "2023-11-02T09:00:00.000Z");
}

#[test]
fn agent_mode_tool_calls_pair_with_results_and_a_failure_is_an_error() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, B);
    let calls: Vec<&Value> = m
        .iter()
        .flat_map(|x| x["toolCalls"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(calls.len(), 2, "{m:?}");
    assert_eq!(calls[0]["toolName"], "run_terminal_command");
    assert_eq!(calls[0]["input"]["command"], "npm test");
    let results: Vec<&Value> = m
        .iter()
        .filter_map(|x| x.get("toolResult").filter(|r| !r.is_null()))
        .collect();
    assert_eq!(results.len(), 2, "{m:?}");
    assert_eq!(results[0]["toolCallId"], "toolu_b1");
    assert_eq!(results[0]["toolName"], "run_terminal_command");
    assert_eq!(results[0]["isError"], false);
    assert_eq!(results[1]["toolCallId"], "toolu_b2");
    assert_eq!(results[1]["toolName"], "get_file");
    assert_eq!(results[1]["isError"], true);
    // The message that carries the results is not a prompt.
    let prompts = m.iter().filter(|x| x["role"] == "user").count();
    assert_eq!(prompts, 1, "{m:?}");
}

#[test]
fn a_chat_that_is_no_transcript_and_a_torn_database_cost_a_warning_only() {
    let fx = write();
    let out = render(&fx);
    let bad = meta(&out.tree, &dir(BAD));
    assert!(
        bad["warnings"]
            .to_string()
            .contains("not a transcript object"),
        "{}",
        bad["warnings"]
    );
    assert!(transcript(&out.tree, BAD).contains("Bad chat: not a transcript"));
    // The Insiders database is unreadable; every other chat still loads (checked above) and
    // doctor names it.
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(text.contains("Code - Insiders"), "{text}");
    assert!(text.contains("is not JSON"), "{text}");
}

#[test]
fn the_access_token_and_secret_storage_are_never_read() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, TOKEN);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_nowhere(&out.tree, "0d6f9f1e-anon");
    // The prompt box's recall list is not a chat.
    stores::assert_nowhere(&out.tree, "Delta input-history line");
    stores::assert_list_hides(&fx.home, TOKEN, &[]);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn doctor_names_cody_and_its_databases() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 5 sessions", "cody")),
        "{text}"
    );
    assert!(text.contains(CODE), "{text}");
    assert!(text.contains(PROFILE), "{text}");
}

#[test]
fn mounted_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path());
        stores::assert_mount_read_only(m, &["cody"], 10, TOKEN, &dir(A));
    });
}

/// VS Code rewrites the extension's row when Cody saves a chat: the new reply shows
/// within a second, and only in its chat.
#[test]
fn a_saved_reply_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(dir(C)).join("transcript.md");
    assert!(stores::file_contains(&t, "Charlie prompt"));
    let mut chat = chat_c();
    chat["interactions"][0]["assistantMessage"] = json!({"speaker": "assistant", "model": MODEL, "text": "Charlie late reply after the mount"});
    let cody = json!({
        "cody-config": {"auth": {"credentials": {"token": TOKEN}}},
        "cody-local-chatHistory-v2": {
            "https://sourcegraph.com/-alice": {"chat": {A: chat_a(), B: chat_b(), BAD: "Bad chat: not a transcript"}},
            "https://sg.example.com/-bob": {"chat": {C: chat}}
        }
    });
    let c = Connection::open(fx.home.path().join(CODE)).expect("db");
    c.execute(
        "INSERT INTO ItemTable (key, value) VALUES ('sourcegraph.cody-ai', ?1)",
        params![cody.to_string()],
    )
    .expect("update");
    stores::assert_within_a_second("saved reply", || {
        stores::file_contains(&t, "Charlie late reply after the mount")
    });
}

/// The bundled samples (`fixtures/home`, written by `scripts/make-samples`): Cody's chat, each
/// line in exactly its session. The lines are the sample's own text, read from the script.
#[test]
fn bundled_sample_shows_the_cody_chat() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-cody-samples")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let chat = "cody/Mon, 02 Mar 2026 09:00:00 GMT";
    stores::assert_session_holds(
        &tree,
        chat,
        &[
            "Why does the cart total test fail after my change?",
            "Let me run the cart tests first.",
            "the rounding in `cartTotal` was fixed by your last edit",
            "/home/demo/webapp/src/cart.ts:12-28",
        ],
        &["Tests: 14 passed, 14 total"],
    );
    assert_eq!(meta(&tree, chat)["title"], "Why does the cart test fail?");
}

/// Every VS Code user has the global-state databases Cody's chats live in. A machine whose
/// databases hold no Cody chat (another extension's rows only, or Cody's settings without a
/// chat) shows no `cody/` directory and `doctor` says none was found; `--store` still opens
/// the database by hand. A Fabric session keeps the render from falling back to the samples.
#[test]
fn an_editor_without_cody_chats_shows_no_cody_directory() {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    db(
        &h,
        CODE,
        &[
            ("workbench.panel.width", "300".into()),
            ("github.copilot-chat", json!({"seen": true}).to_string()),
        ],
    );
    db(
        &h,
        PROFILE,
        &[(
            "sourcegraph.cody-ai",
            json!({"cody-config": {"auth": {"credentials": {"token": TOKEN}}}}).to_string(),
        )],
    );
    let fabric = h.join(".config/fabric/sessions/keep.json");
    std::fs::create_dir_all(fabric.parent().expect("parent")).expect("dir");
    std::fs::write(
        &fabric,
        r#"[{"role":"user","content":"keep the render real"}]"#,
    )
    .expect("fabric");
    let out = stores::render(&home, "sessfs-cody-none", &[]);
    assert!(out.tree.join("fabric").is_dir(), "the render fell back");
    assert!(!out.tree.join("cody").exists(), "an empty cody/ was made");
    let text = stdout(&home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} none found; looked in:", "cody")),
        "{text}"
    );
    assert!(text.contains(CODE), "{text}");
    // Given by hand, the database is read: an empty directory, no error.
    let store = format!("cody={}", h.join(CODE).display());
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-cody-given")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", "--store", &store, tree.to_str().expect("utf-8")])
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(tree.join("cody").is_dir());
    assert_eq!(std::fs::read_dir(tree.join("cody")).expect("ls").count(), 0);
}
