//! avante.nvim chats, written here the way avante.nvim's `History.save` writes them
//! (yetone/avante.nvim `lua/avante/path.lua`: `vim.json.encode(history)` into
//! `<storage>/projects/<dir>/history/<n>.json`, `metadata.json` beside them; before 2025-03 one
//! `<storage>/<dir>.json` list of entries per project), rendered with `sessfs render` and
//! mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser. avante
//! writes local times without a zone: the commands run with `TZ=UTC`.

mod common;

use common::stores::{self, messages, meta, put};
use common::{stderr, stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// A credential, planted where avante keeps its provider logins.
const SECRET: &str = "avante-PLANTED-claude-token-doNotRead-0000";
const STORE: &str = ".local/state/nvim/avante";

const ALPHA: &str = "__home__dev__alpha";
const BRAVO: &str = "__home__dev__bravo";
const CHARLIE: &str = "__home__dev__charlie";

/// What a chat written below must show.
struct Written {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
}

struct Fixture {
    home: Home,
    chats: Vec<Written>,
}

fn history(project: &str, n: u32) -> String {
    format!("{STORE}/projects/{project}/history/{n}.json")
}

/// A `HistoryMessage` as `History.Message:new` makes it.
fn msg(role: &str, content: Value, uuid: &str, ts: &str, extra: Value) -> Value {
    let mut m = json!({
        "message": {"role": role, "content": content},
        "uuid": uuid, "state": "generated", "timestamp": ts,
        "is_user_submission": false, "visible": true,
    });
    if let (Some(m), Value::Object(x)) = (m.as_object_mut(), extra) {
        m.extend(x);
    }
    m
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut chats = Vec::new();

    // --- Alpha 0: a prompt with selected files and code, thinking, a reply, a read and its
    // result, a failed shell call, a declined edit, a sidebar notice, a hidden reminder, a
    // block of an unknown type, the memory of a `/compact`, the last request's usage, todos.
    put(
        &h,
        &format!("{STORE}/projects/{ALPHA}/history/metadata.json"),
        json!({"project_root": "/home/dev/alpha", "latest_filename": "1.json"}).to_string(),
    );
    let a = json!({
        "title": "Alpha: fix the parser",
        "timestamp": "2026-03-05 09:00:00",
        "filename": "0.json",
        "entries": [],
        "messages": [
            msg("user", json!("Alpha prompt: fix the parser"), "a1", "2026-03-01 10:00:00",
                json!({"is_user_submission": true, "provider": "claude", "model": "claude-sonnet-4-5",
                       "selected_filepaths": ["src/parser.rs"],
                       "selected_code": {"path": "src/parser.rs", "file_type": "rust", "content": "fn alpha_selected() {}"}})),
            msg("assistant", json!([{"type": "thinking", "thinking": "Alpha thinking: the tests say where", "signature": "sig"}]),
                "a2", "2026-03-01 10:00:05", json!({"turn_id": "t1"})),
            msg("assistant", json!("Alpha reply: reading the parser"), "a3", "2026-03-01 10:00:06", json!({"turn_id": "t1"})),
            msg("assistant", json!([{"type": "tool_use", "id": "toolu_a1", "name": "view", "input": {"path": "src/parser.rs"}}]),
                "a4", "2026-03-01 10:00:07", json!({"turn_id": "t1"})),
            msg("user", json!([{"type": "tool_result", "tool_use_id": "toolu_a1", "content": "alpha-output: fn parse() {}", "is_error": false}]),
                "a5", "2026-03-01 10:00:08", json!({})),
            msg("assistant", json!([{"type": "tool_use", "id": "toolu_a2", "name": "bash", "input": {"command": "cargo test"}}]),
                "a6", "2026-03-01 10:00:09", json!({})),
            msg("user", json!([{"type": "tool_result", "tool_use_id": "toolu_a2", "content": "alpha-failure: 3 tests failed", "is_error": true}]),
                "a7", "2026-03-01 10:00:10", json!({})),
            msg("assistant", json!([{"type": "tool_use", "id": "toolu_a3", "name": "replace_in_file", "input": {"path": "src/parser.rs"}}]),
                "a8", "2026-03-01 10:00:11", json!({})),
            msg("user", json!([{"type": "tool_result", "tool_use_id": "toolu_a3", "content": "User declined alpha-edit", "is_error": false, "is_user_declined": true}]),
                "a9", "2026-03-01 10:00:12", json!({})),
            msg("assistant", json!("\n\nError: Alpha notice: rate limited"), "a10", "2026-03-01 10:00:13",
                json!({"just_for_display": true})),
            msg("user", json!("<system-reminder>Alpha reminder: use attempt_completion</system-reminder>"), "a11",
                "2026-03-01 10:00:14", json!({"visible": false})),
            msg("assistant", json!([{"type": "hologram", "data": "Alpha unknown block"}]), "a12", "2026-03-01 10:00:15", json!({})),
            msg("assistant", json!("Alpha reply two: fixed"), "a13", "2026-03-01 10:00:16", json!({})),
        ],
        "todos": [
            {"id": "1", "content": "Alpha todo: fix parse()", "status": "done", "priority": "high"},
            {"id": "2", "content": "Alpha todo: add a test", "status": "todo", "priority": "low"}
        ],
        "memory": {"content": "Alpha summary: the parser was read.", "last_summarized_timestamp": "2026-03-01 10:00:08",
                   "last_message_uuid": "a5"},
        "tokens_usage": {"prompt_tokens": 1200, "completion_tokens": 300},
    });
    put(&h, &history(ALPHA, 0), a.to_string());
    chats.push(Written {
        dir: format!("avante/{ALPHA}-0"),
        lines: vec![
            "Alpha prompt: fix the parser",
            "fn alpha_selected() {}",
            "Alpha thinking: the tests say where",
            "Alpha reply: reading the parser",
            "Alpha summary: the parser was read.",
            "Alpha notice: rate limited",
            "Alpha reminder: use attempt_completion",
            "Alpha unknown block",
            "Alpha reply two: fixed",
        ],
        outputs: vec![
            "alpha-output: fn parse() {}",
            "alpha-failure: 3 tests failed",
            "User declined alpha-edit",
        ],
    });

    // --- Alpha 1: still `untitled`; entries avante copied into messages (shown once), an
    // image, an ACP tool call whose output lives in the call, and the ACP session.
    let b = json!({
        "title": "untitled",
        "timestamp": "2026-03-02 09:00:00",
        "filename": "1.json",
        "acp_session_id": "acp-bravo-1",
        "entries": [
            {"timestamp": "2026-03-02 09:00:00", "provider": "openai", "model": "gpt-4o",
             "request": "Bravo old prompt: explain the lexer", "response": "Bravo old reply: it splits tokens",
             "original_response": "Bravo old reply: it splits tokens"}
        ],
        "messages": [
            msg("user", json!("Bravo old prompt: explain the lexer"), "b1", "2026-03-02 09:00:00",
                json!({"is_user_submission": true})),
            msg("assistant", json!("Bravo old reply: it splits tokens"), "b2", "2026-03-02 09:00:00", json!({})),
            msg("user", json!([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAAAAAA"}}]),
                "b3", "2026-03-02 09:10:00", json!({"is_user_submission": true, "provider": "claude-code", "model": "default", "mode": "plan"})),
            msg("user", json!("Bravo prompt: what is on the screenshot"), "b4", "2026-03-02 09:10:01",
                json!({"is_user_submission": true, "provider": "claude-code", "model": "default"})),
            msg("assistant", json!([{"type": "tool_use", "id": "acp_b1", "name": "read", "input": {"path": "lexer.rs"}}]),
                "acp_b1", "2026-03-02 09:10:02",
                json!({"acp_tool_call": {"toolCallId": "acp_b1", "kind": "read", "status": "completed",
                        "content": [{"type": "content", "content": {"type": "text", "text": "bravo-acp-output: pub fn lex()"}}]}})),
            msg("assistant", json!([{"type": "tool_result", "tool_use_id": "acp_b1", "content": null, "is_error": false}]),
                "b6", "2026-03-02 09:10:03", json!({})),
            msg("assistant", json!("Bravo reply: a lexer"), "b7", "2026-03-02 09:10:04", json!({})),
        ],
        "todos": [],
    });
    put(&h, &history(ALPHA, 1), b.to_string());
    chats.push(Written {
        dir: format!("avante/{ALPHA}-1"),
        lines: vec![
            "Bravo old prompt: explain the lexer",
            "Bravo old reply: it splits tokens",
            "[image: image/png, 6 B]",
            "Bravo prompt: what is on the screenshot",
            "Bravo reply: a lexer",
        ],
        outputs: vec!["bravo-acp-output: pub fn lex()"],
    });

    // --- Bravo: a project file of the pre-2025-03 layout, a list of entries with a reset.
    put(
        &h,
        &format!("{STORE}/{BRAVO}.json"),
        json!([
            {"timestamp": "2026-01-10 08:00:00", "provider": "openai", "model": "gpt-4o",
             "request": "Charlie prompt: rename the module", "response": "Charlie reply: renamed",
             "original_response": "Charlie reply: renamed", "selected_file": {"filepath": "src/old.rs"}},
            {"timestamp": "2026-01-10 08:05:00", "provider": "openai", "model": "gpt-4o",
             "request": "", "response": "", "original_response": "", "reset_memory": true},
            {"timestamp": "2026-01-10 08:06:00", "provider": "openai", "model": "gpt-4o-mini",
             "request": "Charlie prompt two: and the tests", "response": "Charlie reply two: done",
             "original_response": "Charlie reply two: done"}
        ])
        .to_string(),
    );
    chats.push(Written {
        dir: format!("avante/{BRAVO}"),
        lines: vec![
            "Charlie prompt: rename the module",
            "Charlie reply: renamed",
            "Charlie prompt two: and the tests",
            "Charlie reply two: done",
        ],
        outputs: vec![],
    });

    // --- Charlie 0: cut in the middle of its third message; no metadata.json.
    let c = json!({
        "title": "Delta: cut short",
        "timestamp": "2026-03-03 08:00:00",
        "messages": [
            msg("user", json!("Delta prompt: before the cut"), "d1", "2026-03-03 08:00:00", json!({"is_user_submission": true})),
            msg("assistant", json!("Delta reply: also before the cut"), "d2", "2026-03-03 08:00:01", json!({})),
            msg("user", json!("Delta torn prompt that never ends"), "d3", "2026-03-03 08:00:02", json!({"is_user_submission": true})),
        ],
    });
    let text = c.to_string();
    let cut = text.find("Delta torn prompt").expect("torn") + "Delta torn".len();
    put(&h, &history(CHARLIE, 0), &text[..cut]);
    chats.push(Written {
        dir: format!("avante/{CHARLIE}-0"),
        lines: vec![
            "Delta prompt: before the cut",
            "Delta reply: also before the cut",
        ],
        outputs: vec![],
    });

    // --- Charlie 1: not JSON at all.
    put(&h, &history(CHARLIE, 1), "Echo garbage, no JSON here\n");
    chats.push(Written {
        dir: format!("avante/{CHARLIE}-1"),
        lines: vec!["Echo garbage, no JSON here"],
        outputs: vec![],
    });

    // Provider logins and the last model chosen: never read.
    put(
        &h,
        ".local/share/nvim/avante/claude-auth.json",
        format!("{{\"access_token\": \"{SECRET}\"}}"),
    );
    put(
        &h,
        ".local/share/nvim/avante/github-copilot.json",
        format!("{{\"token\": \"{SECRET}\"}}"),
    );
    put(
        &h,
        ".config/avante.nvim/config.json",
        format!("{{\"provider\": \"claude\", \"note\": \"{SECRET}\"}}"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, chats }
}

struct Rendered {
    _dir: TempDir,
    tree: PathBuf,
}

/// `sessfs render` with the home as `$HOME`, in UTC.
fn render(fx: &Fixture) -> Rendered {
    let dir = tempfile::Builder::new()
        .prefix("sessfs-avante")
        .tempdir()
        .expect("tmp");
    let tree = dir.path().join("tree");
    let o = fx
        .home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("TZ", "UTC")
        .output()
        .expect("run");
    assert!(o.status.success(), "{}", stderr(&o));
    Rendered { _dir: dir, tree }
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.chats {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &s.outputs);
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_chat() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "avante"), 5);
}

#[test]
fn ids_titles_cwd_times_model_and_usage() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("avante/{ALPHA}-0"));
    assert_eq!(a["title"], "Alpha: fix the parser");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["createdAt"], "2026-03-01T10:00:00.000Z");
    assert_eq!(a["updatedAt"], "2026-03-01T10:00:16.000Z");
    assert_eq!(a["model"], "claude-sonnet-4-5");
    assert_eq!(a["tags"], json!(["provider:claude"]));
    // The latest request's usage, the only usage avante keeps.
    assert_eq!(
        stores::tokens(&a["cost"]),
        (Some(1200), Some(300), Some(0), Some(0))
    );
    // `untitled` is avante's placeholder: the first prompt names the chat.
    let b = meta(&out.tree, &format!("avante/{ALPHA}-1"));
    assert_eq!(b["title"], "Bravo old prompt: explain the lexer");
    assert_eq!(b["cwd"], "/home/dev/alpha");
    assert_eq!(
        b["tags"],
        json!([
            "acp-session:acp-bravo-1",
            "provider:claude-code",
            "mode:plan"
        ])
    );
    // The pre-2025-03 project file: no project root anywhere.
    let c = meta(&out.tree, &format!("avante/{BRAVO}"));
    assert_eq!(c["title"], "Charlie prompt: rename the module");
    assert_eq!(c["cwd"], Value::Null);
    assert_eq!(c["createdAt"], "2026-01-10T08:00:00.000Z");
    assert_eq!(c["updatedAt"], "2026-01-10T08:06:00.000Z");
    assert_eq!(c["model"], "gpt-4o");
    assert_eq!(c["models"], json!(["gpt-4o", "gpt-4o-mini"]));
    let d = meta(&out.tree, &format!("avante/{CHARLIE}-0"));
    assert_eq!(d["title"], "Delta: cut short");
    assert_eq!(d["cwd"], Value::Null);
}

#[test]
fn every_message_kind_lands_in_messages_jsonl() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, &format!("avante/{ALPHA}-0"));
    assert_eq!(m[0]["role"], "user");
    assert_eq!(
        m[0]["content"],
        "Alpha prompt: fix the parser\n\nselected files: src/parser.rs\n\nselected code (src/parser.rs):\n```rust\nfn alpha_selected() {}\n```"
    );
    assert_eq!(m[1]["role"], "assistant");
    assert_eq!(m[1]["thinking"], "Alpha thinking: the tests say where");
    assert_eq!(m[2]["content"], "Alpha reply: reading the parser");
    assert_eq!(m[2]["model"], "claude-sonnet-4-5");
    assert_eq!(
        m[3]["toolCalls"][0],
        json!({"toolCallId": "toolu_a1", "toolName": "view", "input": {"path": "src/parser.rs"}})
    );
    let results: Vec<(String, String, bool)> = m
        .iter()
        .filter(|x| x["role"] == "tool")
        .map(|x| {
            let r = &x["toolResult"];
            (
                r["toolCallId"].as_str().expect("id").to_string(),
                r["toolName"].as_str().expect("name").to_string(),
                r["isError"].as_bool().expect("flag"),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("toolu_a1".to_string(), "view".to_string(), false),
            ("toolu_a2".into(), "bash".into(), true),
            ("toolu_a3".into(), "replace_in_file".into(), true),
        ]
    );
    // The memory stands right after the message it summarises to.
    assert_eq!(m[5]["kind"], "compactionSummary");
    assert_eq!(m[5]["content"], "Alpha summary: the parser was read.");
    let find = |text: &str| {
        m.iter()
            .find(|x| x["content"].as_str().is_some_and(|c| c.contains(text)))
            .unwrap_or_else(|| panic!("{text}"))
            .clone()
    };
    let notice = find("Alpha notice: rate limited");
    assert_eq!(
        (notice["role"].as_str(), notice["kind"].as_str()),
        (Some("system"), Some("event"))
    );
    let reminder = find("Alpha reminder");
    assert_eq!(reminder["kind"], "context");
    assert_eq!(reminder["label"], "hidden prompt");
    let last = m.last().expect("last");
    assert_eq!(last["content"], "Alpha reply two: fixed");
    assert_eq!(last["tokenUsage"]["inputTokens"], 1200);
    let todos = std::fs::read_to_string(out.tree.join(format!("avante/{ALPHA}-0/todos.md")))
        .expect("todos.md");
    assert_eq!(
        todos,
        "# Todos\n\n- [x] Alpha todo: fix parse() (done, high priority)\n- [ ] Alpha todo: add a test (todo, low priority)\n"
    );

    // Entries copied into messages are shown once; the ACP call's output is its result's.
    let b = messages(&out.tree, &format!("avante/{ALPHA}-1"));
    let prompts: Vec<&str> = b
        .iter()
        .filter(|x| x["role"] == "user")
        .filter_map(|x| x["content"].as_str())
        .collect();
    assert_eq!(
        prompts,
        [
            "Bravo old prompt: explain the lexer",
            "[image: image/png, 6 B]",
            "Bravo prompt: what is on the screenshot"
        ]
    );
    let r = b.iter().find(|x| x["role"] == "tool").expect("result");
    assert_eq!(r["toolResult"]["output"], "bravo-acp-output: pub fn lex()");
    assert_eq!(r["toolResult"]["toolName"], "read");

    // The old entries: a prompt with its file, a reply with its model, the reset.
    let c = messages(&out.tree, &format!("avante/{BRAVO}"));
    assert_eq!(
        c[0]["content"],
        "Charlie prompt: rename the module\n\nselected files: src/old.rs"
    );
    assert_eq!(c[1]["model"], "gpt-4o");
    assert_eq!(c[2]["kind"], "event");
    assert_eq!(c[4]["model"], "gpt-4o-mini");
}

#[test]
fn odd_blocks_a_cut_file_and_garbage_cost_warnings_not_chats() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("avante/{ALPHA}-0"));
    let w = a["warnings"].to_string();
    assert!(w.contains("unknown block type hologram"), "{w}");
    let d = meta(&out.tree, &format!("avante/{CHARLIE}-0"));
    let w = d["warnings"].to_string();
    assert!(w.contains("0.json: cut after 2 messages"), "{w}");
    let dm = messages(&out.tree, &format!("avante/{CHARLIE}-0"));
    assert_eq!(dm[0]["content"], "Delta prompt: before the cut");
    assert_eq!(dm[1]["content"], "Delta reply: also before the cut");
    let e = meta(&out.tree, &format!("avante/{CHARLIE}-1"));
    assert!(
        e["warnings"].to_string().contains("not a JSON object"),
        "{}",
        e["warnings"]
    );
}

#[test]
fn logins_and_settings_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn xdg_state_home_and_nvim_appname_move_the_store() {
    let fx = write();
    let moved = fx.home.path().join("state");
    let file = moved.join(format!("lazyvim/avante/projects/{ALPHA}/history/1.json"));
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    std::fs::copy(fx.home.path().join(history(ALPHA, 1)), &file).expect("copy");
    let o = fx
        .home
        .command(&["list", "--json"])
        .env("XDG_STATE_HOME", &moved)
        .env("NVIM_APPNAME", "lazyvim")
        .output()
        .expect("list");
    let list: Value = serde_json::from_str(&stdout(&o)).expect("list json");
    let ids: Vec<&str> = list
        .as_array()
        .expect("array")
        .iter()
        .filter(|s| s["agent"] == "avante")
        .filter_map(|s| s["sessionId"].as_str())
        .collect();
    assert_eq!(ids, [format!("{ALPHA}-1")]);
}

#[test]
fn mounted_chats_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["avante"], 8, SECRET, &format!("avante/{ALPHA}-0"));
    });
}

/// avante rewrites a chat's file whole at each save: the new message shows within a second.
#[test]
fn a_saved_message_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("avante/{ALPHA}-1/transcript.md"));
    assert!(stores::file_contains(&t, "Bravo reply: a lexer"));
    let path = fx.home.path().join(history(ALPHA, 1));
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    doc["messages"].as_array_mut().expect("messages").push(msg(
        "user",
        json!("Bravo fresh prompt after the mount"),
        "b8",
        "2026-03-02 09:20:00",
        json!({"is_user_submission": true}),
    ));
    std::fs::write(&path, doc.to_string()).expect("write");
    stores::assert_within_a_second("saved message", || {
        stores::file_contains(&t, "Bravo fresh prompt after the mount")
    });
}
