//! Void's chat threads in its application storage: `state.vscdb` databases built here from
//! VS Code's `ItemTable` (`fixtures/schema/vscode-state.sql`), the `void.chatThreadStorageII`
//! row holding the JSON Void's chat thread service writes, beside the settings row with a
//! planted API key, and a profile's database whose thread row is not JSON.
//!
//! Every expected value comes from the rows written below, never from sessfs' parser.

mod common;

use common::stores::{self, meta, transcript};
use common::{stdout, Home, Mount};
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::path::Path;

const DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/vscode-state.sql"
));

const API_KEY: &str = "sk-ant-PLANTEDvoidSETTINGSkeyDoNotRead000000";
const MAIN: &str = ".config/Void/User/globalStorage/state.vscdb";
const TORN: &str = ".config/Void/User/profiles/7a1b/globalStorage/state.vscdb";
const A: &str = "3f0e4a52-aaaa-4b1e-9d3c-000000000001";
const B: &str = "3f0e4a52-bbbb-4b1e-9d3c-000000000002";
const BAD: &str = "3f0e4a52-cccc-4b1e-9d3c-000000000003";

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

fn threads() -> Value {
    let sel = json!({"type": "CodeSelection", "range": [4, 12], "uri": uri("/home/dev/alpha/src/cart.ts"),
                     "language": "typescript", "state": {"wasAddedAsCurrentFile": false}});
    json!({
        A: {
            "id": A, "createdAt": "2025-06-01T10:00:00.000Z", "lastModified": "2025-06-01T10:05:00.000Z",
            "messages": [
                {"role": "user", "content": "Alpha prompt: fix the cart\n\nSELECTIONS\n/home/dev/alpha/src/cart.ts",
                 "displayContent": "Alpha prompt: fix the cart", "selections": [sel],
                 "state": {"stagingSelections": [], "isBeingEdited": false}},
                {"role": "checkpoint", "type": "user_edit", "voidFileSnapshotOfURI": {"/home/dev/alpha/src/cart.ts": {"snapshottedDiffAreaOfId": {}, "entireFileCode": "alpha-file-body"}},
                 "userModifications": {"voidFileSnapshotOfURI": {}}},
                {"role": "assistant", "displayContent": "Alpha reply: reading the file", "reasoning": "Alpha thinking: look first",
                 "anthropicReasoning": null},
                {"role": "tool", "type": "success", "id": "call_a1", "name": "read_file",
                 "params": {"uri": uri("/home/dev/alpha/src/cart.ts"), "startLine": null},
                 "rawParams": {"uri": "/home/dev/alpha/src/cart.ts"}, "mcpServerName": null,
                 "result": {"fileContents": "alpha-result-body"}, "content": "alpha tool output: export function total"},
                {"role": "tool", "type": "tool_error", "id": "call_a2", "name": "run_command",
                 "params": {"command": "npm test"}, "rawParams": {"command": "npm test"}, "mcpServerName": null,
                 "result": "alpha tool error: exit code 1", "content": "alpha tool error: exit code 1"},
                {"role": "tool", "type": "rejected", "id": "call_a3", "name": "delete_file_or_folder",
                 "params": {"uri": uri("/home/dev/alpha/tmp")}, "rawParams": {}, "mcpServerName": null,
                 "result": null, "content": "Tool call was rejected by the user."},
                {"role": "interrupted_streaming_tool", "name": "edit_file", "mcpServerName": null},
                {"role": "assistant", "displayContent": "Alpha final reply: done", "reasoning": "", "anthropicReasoning": null}
            ],
            "filesWithUserChanges": {},
            "state": {"currCheckpointIdx": null, "stagingSelections": [{"type": "File", "uri": uri("/home/dev/alpha/README.md"),
                      "language": "markdown", "state": {"wasAddedAsCurrentFile": true}}],
                      "focusedMessageIdx": null, "linksOfMessageIdx": {}}
        },
        B: {
            "id": B, "createdAt": "2025-06-02T09:00:00.000Z", "lastModified": "2025-06-02T09:01:00.000Z",
            "messages": [
                {"role": "user", "content": "Bravo prompt: hello", "displayContent": "Bravo prompt: hello", "selections": null,
                 "state": {"stagingSelections": [], "isBeingEdited": false}},
                {"role": "summoner", "text": "Bravo unknown record"}
            ],
            "filesWithUserChanges": {}, "state": {"stagingSelections": []}
        },
        BAD: "Bad thread: not an object"
    })
}

fn write() -> Home {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let settings = json!({"settingsOfProvider": {"anthropic": {"apiKey": API_KEY}}});
    db(
        &h,
        MAIN,
        &[
            ("void.chatThreadStorageII", threads().to_string()),
            ("void.settingsServiceStorageII", settings.to_string()),
        ],
    );
    db(&h, TORN, &[("void.chatThreadStorageII", "{\"torn".into())]);
    let mut home = home;
    home.files = common::files_under(home.path());
    home
}

fn messages(tree: &Path, id: &str) -> Vec<Value> {
    stores::messages(tree, &format!("void/{id}"))
}

#[test]
fn every_thread_is_a_session_with_its_times_and_title() {
    let home = write();
    let out = stores::render(&home, "sessfs-void", &[]);
    assert_eq!(stores::entries(&out.tree, "void"), 3);
    let a = meta(&out.tree, &format!("void/{A}"));
    assert_eq!(a["title"], "Alpha prompt: fix the cart");
    assert_eq!(a["createdAt"], "2025-06-01T10:00:00.000Z");
    assert_eq!(a["updatedAt"], "2025-06-01T10:05:00.000Z");
    assert_eq!(
        meta(&out.tree, &format!("void/{B}"))["title"],
        "Bravo prompt: hello"
    );
}

#[test]
fn prompts_replies_reasoning_checkpoints_and_tools() {
    let home = write();
    let out = stores::render(&home, "sessfs-void", &[]);
    let m = messages(&out.tree, A);
    let text = |x: &Value| x["content"].as_str().unwrap_or("").to_string();
    assert_eq!(m[0]["label"], "selections");
    assert_eq!(
        text(&m[0]),
        "CodeSelection /home/dev/alpha/src/cart.ts:4-12"
    );
    assert_eq!(m[1]["role"], "user");
    assert_eq!(text(&m[1]), "Alpha prompt: fix the cart");
    assert_eq!(m[2]["label"], "prompt as sent");
    assert_eq!(
        text(&m[3]),
        "checkpoint (user_edit): /home/dev/alpha/src/cart.ts"
    );
    assert_eq!(text(&m[4]), "Alpha reply: reading the file");
    assert_eq!(m[4]["thinking"], "Alpha thinking: look first");
    let calls: Vec<&Value> = m
        .iter()
        .flat_map(|x| x["toolCalls"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(calls.len(), 3, "{m:?}");
    assert_eq!(calls[1]["toolName"], "run_command");
    assert_eq!(calls[1]["input"]["command"], "npm test");
    let results: Vec<&Value> = m
        .iter()
        .filter_map(|x| x.get("toolResult").filter(|r| !r.is_null()))
        .collect();
    assert_eq!(results.len(), 3, "{m:?}");
    assert_eq!(results[0]["toolCallId"], "call_a1");
    assert_eq!(results[0]["isError"], false);
    assert_eq!(results[1]["toolCallId"], "call_a2");
    assert_eq!(results[1]["isError"], true);
    assert_eq!(results[2]["toolName"], "delete_file_or_folder");
    assert_eq!(results[2]["isError"], true);
    let t = transcript(&out.tree, &format!("void/{A}"));
    for s in [
        "alpha tool output: export function total",
        "alpha tool error: exit code 1",
        "tool edit_file interrupted while streaming",
        "Alpha final reply: done",
        "File /home/dev/alpha/README.md",
    ] {
        assert!(t.contains(s), "{s}\n{t}");
    }
    // Checkpoints name their files, not their contents.
    assert!(!t.contains("alpha-file-body"), "{t}");
}

#[test]
fn unknown_records_a_bad_thread_and_a_torn_row_cost_warnings_only() {
    let home = write();
    let out = stores::render(&home, "sessfs-void", &[]);
    let b = meta(&out.tree, &format!("void/{B}"));
    assert!(b["warnings"].to_string().contains("unknown role"), "{b}");
    let bad = meta(&out.tree, &format!("void/{BAD}"));
    assert!(
        bad["warnings"].to_string().contains("not a thread object"),
        "{bad}"
    );
    let text = stdout(&home.sessfs(&["doctor"]));
    assert!(text.contains(TORN), "{text}");
    assert!(text.contains("is not a JSON object"), "{text}");
}

#[test]
fn the_settings_and_their_api_keys_are_never_read() {
    let home = write();
    let out = stores::render(&home, "sessfs-void", &[]);
    stores::assert_nowhere(&out.tree, API_KEY);
    stores::assert_list_hides(&home, API_KEY, &[]);
}

#[test]
fn mounted_sizes_erofs_and_store_untouched() {
    let home = write();
    stores::mounted_untouched(&home, Home::snapshot, |m| {
        let t = m.path().join(format!("void/{A}/transcript.md"));
        assert!(stores::file_contains(&t, "Alpha prompt: fix the cart"));
        stores::assert_mount_read_only(m, &["void"], 6, API_KEY, &format!("void/{A}"));
    });
}

/// Void rewrites its thread row when a thread changes: the new reply shows within a second,
/// in its thread only.
#[test]
fn a_saved_reply_shows_within_a_second() {
    let home = write();
    let m = Mount::new(&home, &[]);
    let t = m.path().join(format!("void/{B}/transcript.md"));
    assert!(stores::file_contains(&t, "Bravo prompt: hello"));
    let mut all = threads();
    all[B]["messages"].as_array_mut().expect("messages").push(
        json!({"role": "assistant", "displayContent": "Bravo late reply after the mount",
                     "reasoning": "", "anthropicReasoning": null}),
    );
    let c = Connection::open(home.path().join(MAIN)).expect("db");
    c.execute(
        "UPDATE ItemTable SET value = ?1 WHERE key = 'void.chatThreadStorageII'",
        params![all.to_string()],
    )
    .expect("update");
    stores::assert_within_a_second("saved reply", || {
        stores::file_contains(&t, "Bravo late reply after the mount")
    });
    let a = transcript(m.path(), &format!("void/{A}"));
    assert!(!a.contains("Bravo late reply"), "{a}");
}

/// The bundled samples (`fixtures/home`, written by `scripts/make-samples`): Void's thread,
/// each line in exactly its session. The lines are the sample's own text, read from the
/// script.
#[test]
fn bundled_sample_shows_the_void_thread() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-void-samples")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let thread = "void/8d2e6f40-5a1c-4b7e-9c3d-5e0f1a2b3c4d";
    stores::assert_session_holds(
        &tree,
        thread,
        &[
            "Round the cart total to cents",
            "The total is summed in floats; rounding belongs at the end.",
            "I will read `cartTotal` first.",
            "There is no test script; `cartTotal` now rounds with `Math.round(s * 100) / 100`.",
        ],
        &[
            "return items.reduce((s, i) => s + i.price, 0);",
            "npm ERR! missing script: test",
        ],
    );
    let m = meta(&tree, thread);
    assert_eq!(m["title"], "Round the cart total to cents");
    assert_eq!(m["createdAt"], "2026-03-03T14:00:00.000Z");
}
