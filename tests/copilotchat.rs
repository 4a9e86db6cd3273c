//! CopilotChat.nvim chats, written here the way `:CopilotChatSave <name>` writes them
//! (CopilotC-Nvim/CopilotChat.nvim `lua/CopilotChat/init.lua` `M.save`: `vim.json.encode` of
//! the chat's messages, a bare array on one line, in `stdpath("data")/copilotchat_history/
//! <name>.json`), rendered with `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, transcript, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// A GitHub token, planted where CopilotChat and copilot.vim keep them.
const SECRET: &str = "gho_PLANTED-copilot-token-doNotRead-0000";
const HISTORY: &str = ".local/share/nvim/copilotchat_history";
/// 2026-03-01T10:30:00Z, the modification time given to chat A.
const A_SAVED: u64 = 1_772_361_000;

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

fn file(name: &str) -> String {
    format!("{HISTORY}/{name}.json")
}

/// One line, as `vim.json.encode` writes it.
fn encode(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("json")
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut chats = Vec::new();

    // --- A (v4.7 shape): a prompt with a sticky line, a reply with reasoning, model and two
    // calls, a result and a call CopilotChat could not run, a skipped call, a system message,
    // an error reply, an element that is no message, an unknown role, an unknown field, and
    // the empty prompt left waiting at the end.
    let a = json!([
        {"id": "u-a1", "role": "user",
         "content": "> #buffer:active\n\nAlpha prompt: why is the parser slow?"},
        {"id": "r-a1", "role": "assistant", "content": "\nAlpha reply: reading the parser\n",
         "reasoning": "Alpha thinking: the lexer allocates per token",
         "model": "gpt-4.1",
         "tool_calls": [
            {"id": "call_a1", "index": 0, "name": "file", "arguments": "{\"path\":\"src/parser.lua\"}"},
            {"id": "call_a2", "index": 1, "name": "rm_rf", "arguments": "{}"}]},
        {"id": "call_a1", "role": "tool", "tool_call_id": "call_a1",
         "content": "\nalpha-output: local function lex(s)\n"},
        {"id": "call_a2", "role": "tool", "tool_call_id": "call_a2",
         "content": "\nTool not found: rm_rf\n"},
        {"id": "r-a2", "role": "assistant", "content": "\nAlpha reply two: searching the callers\n",
         "model": "gpt-4.1",
         "tool_calls": [{"id": "call_a3", "index": 0, "name": "grep", "arguments": "{\"pattern\":\"lex(\""}]},
        {"id": "call_a3", "role": "tool", "tool_call_id": "call_a3",
         "content": "\nUser skipped this function call.\n"},
        {"id": "s-a1", "role": "system", "content": "Alpha system note: be brief"},
        {"id": "r-a3", "role": "assistant", "content": "\n```error\nAlpha error: rate limited\n```\n"},
        "Alpha stray element",
        {"id": "x-a1", "role": "critic", "content": "Alpha unknown role"},
        {"id": "r-a4", "role": "assistant", "content": "Alpha reply three: cache the tokens",
         "model": "claude-sonnet-4", "pinned": true},
        {"id": "u-a2", "role": "user", "content": ""}
    ]);
    let pa = put(&h, &file("refactor-parser"), encode(&a));
    let f = std::fs::File::options()
        .write(true)
        .open(&pa)
        .expect("open");
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(A_SAVED))
        .expect("mtime");
    chats.push(Written {
        dir: "copilotchat/refactor-parser".into(),
        lines: vec![
            "Alpha prompt: why is the parser slow?",
            "Alpha thinking: the lexer allocates per token",
            "Alpha reply: reading the parser",
            "Alpha reply two: searching the callers",
            "Alpha system note: be brief",
            "Alpha error: rate limited",
            "Alpha stray element",
            "Alpha unknown role",
            "Alpha reply three: cache the tokens",
        ],
        outputs: vec![
            "alpha-output: local function lex(s)",
            "Tool not found: rm_rf",
            "User skipped this function call.",
        ],
    });

    // --- B (v3 shape, saved without a name): `{content, role}` only.
    let b = json!([
        {"content": "Bravo prompt: explain this function\nwith a second line", "role": "user"},
        {"content": "Bravo reply: it folds the list", "role": "assistant"}
    ]);
    put(&h, &file("default"), encode(&b));
    chats.push(Written {
        dir: "copilotchat/default".into(),
        lines: vec![
            "Bravo prompt: explain this function",
            "Bravo reply: it folds the list",
        ],
        outputs: vec![],
    });

    // --- C: cut in the middle of its third message.
    let c = json!([
        {"id": "u-c1", "role": "user", "content": "Charlie prompt: before the cut"},
        {"id": "r-c1", "role": "assistant", "content": "Charlie reply: also before the cut"},
        {"id": "u-c2", "role": "user", "content": "Charlie torn prompt that never ends"}
    ]);
    let text = String::from_utf8(encode(&c)).expect("utf-8");
    let cut = text.find("Charlie torn prompt").expect("torn") + "Charlie torn".len();
    put(&h, &file("charlie"), &text[..cut]);
    chats.push(Written {
        dir: "copilotchat/charlie".into(),
        lines: vec![
            "Charlie prompt: before the cut",
            "Charlie reply: also before the cut",
        ],
        outputs: vec![],
    });

    // --- D: not JSON at all.
    put(&h, &file("delta"), "Delta garbage, no JSON here\n");
    chats.push(Written {
        dir: "copilotchat/delta".into(),
        lines: vec!["Delta garbage, no JSON here"],
        outputs: vec![],
    });

    // Tokens: CopilotChat's cache beside the history, and copilot.vim's logins.
    put(
        &h,
        ".local/share/nvim/copilot_chat/tokens.json",
        format!("{{\"github_copilot\": \"{SECRET}\"}}"),
    );
    put(
        &h,
        ".config/github-copilot/apps.json",
        format!("{{\"github.com:Iv1.b507a08c87ecfe98\": {{\"user\": \"dev\", \"oauth_token\": \"{SECRET}\"}}}}"),
    );
    put(
        &h,
        ".config/github-copilot/hosts.json",
        format!("{{\"github.com\": {{\"user\": \"dev\", \"oauth_token\": \"{SECRET}\"}}}}"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, chats }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-copilotchat", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.chats {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &s.outputs);
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "copilotchat"), 4);
}

#[test]
fn titles_times_and_models_come_from_the_file() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, "copilotchat/refactor-parser");
    // The name given to `:CopilotChatSave` is the title.
    assert_eq!(a["title"], "refactor-parser");
    // No time is saved: the file's modification time is the update time.
    assert_eq!(a["updatedAt"], "2026-03-01T10:30:00.000Z");
    assert_eq!(a["createdAt"], Value::Null);
    assert_eq!(a["cwd"], Value::Null);
    // CopilotChat keeps token counts in memory only.
    assert_eq!(stores::tokens(&a["cost"]).0, Some(0));
    // `default` is the name of a chat saved without one: the first prompt names it.
    let b = meta(&out.tree, "copilotchat/default");
    assert_eq!(b["title"], "Bravo prompt: explain this function");
}

#[test]
fn every_message_kind_lands_in_messages_jsonl() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, "copilotchat/refactor-parser");
    assert_eq!(m[0]["role"], "user");
    assert_eq!(
        m[0]["content"],
        "> #buffer:active\n\nAlpha prompt: why is the parser slow?"
    );
    assert_eq!(m[1]["role"], "assistant");
    assert_eq!(m[1]["content"], "\nAlpha reply: reading the parser\n");
    assert_eq!(
        m[1]["thinking"],
        "Alpha thinking: the lexer allocates per token"
    );
    assert_eq!(m[1]["model"], "gpt-4.1");
    assert_eq!(
        m[1]["toolCalls"][0],
        json!({"toolCallId": "call_a1", "toolName": "file",
               "input": {"path": "src/parser.lua"}})
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
            ("call_a1".to_string(), "file".to_string(), false),
            ("call_a2".into(), "rm_rf".into(), true),
            ("call_a3".into(), "grep".into(), true),
        ]
    );
    // Arguments cut short are kept verbatim.
    let grep = m
        .iter()
        .find(|x| x["toolCalls"][0]["toolCallId"] == "call_a3")
        .expect("grep call");
    assert_eq!(grep["toolCalls"][0]["input"], "{\"pattern\":\"lex(\"");
    let system = m
        .iter()
        .find(|x| x["content"] == "Alpha system note: be brief")
        .expect("system message");
    assert_eq!(
        (&system["role"], &system["kind"]),
        (&json!("system"), &json!("context"))
    );
    let last = m.last().expect("last");
    assert_eq!(last["content"], "Alpha reply three: cache the tokens");
    assert_eq!(last["model"], "claude-sonnet-4");
    // The empty prompt waiting at the end holds nothing and shows nothing.
    assert!(m.iter().all(|x| x["role"] != "user" || x["content"] != ""));
    let t = transcript(&out.tree, "copilotchat/refactor-parser");
    assert!(t.contains("Alpha reply three: cache the tokens"), "{t}");

    let b = messages(&out.tree, "copilotchat/default");
    assert_eq!(b.len(), 2);
    assert_eq!(
        (&b[0]["role"], &b[0]["content"]),
        (
            &json!("user"),
            &json!("Bravo prompt: explain this function\nwith a second line")
        )
    );
    assert_eq!(
        (&b[1]["role"], &b[1]["content"]),
        (
            &json!("assistant"),
            &json!("Bravo reply: it folds the list")
        )
    );
}

#[test]
fn odd_elements_a_cut_file_and_garbage_cost_warnings_not_sessions() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, "copilotchat/refactor-parser");
    let w = a["warnings"].to_string();
    assert!(w.contains("not an object"), "{w}");
    assert!(w.contains("unknown role critic"), "{w}");
    assert!(w.contains("does not read: pinned"), "{w}");
    assert!(w.contains("tool call arguments are not JSON"), "{w}");
    let c = meta(&out.tree, "copilotchat/charlie");
    let w = c["warnings"].to_string();
    assert!(w.contains("charlie.json: cut after 2 messages"), "{w}");
    let cm = messages(&out.tree, "copilotchat/charlie");
    assert_eq!(cm[0]["content"], "Charlie prompt: before the cut");
    assert_eq!(cm[1]["content"], "Charlie reply: also before the cut");
    let d = meta(&out.tree, "copilotchat/delta");
    assert!(
        d["warnings"].to_string().contains("not a JSON array"),
        "{}",
        d["warnings"]
    );
}

#[test]
fn tokens_are_never_read() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn nvim_appname_moves_the_store() {
    let fx = write();
    let moved = fx
        .home
        .path()
        .join(".local/share/astro/copilotchat_history");
    std::fs::create_dir_all(&moved).expect("mkdir");
    std::fs::copy(
        fx.home.path().join(file("default")),
        moved.join("bravo-copy.json"),
    )
    .expect("copy");
    let o = fx
        .home
        .command(&["list", "--json"])
        .env("NVIM_APPNAME", "astro")
        .output()
        .expect("list");
    let list: Value = serde_json::from_str(&stdout(&o)).expect("list json");
    let ids: Vec<&str> = list
        .as_array()
        .expect("array")
        .iter()
        .filter(|s| s["agent"] == "copilotchat")
        .filter_map(|s| s["sessionId"].as_str())
        .collect();
    assert_eq!(ids, ["bravo-copy"]);
}

#[test]
fn doctor_names_copilotchat_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(text.contains("copilotchat"), "{text}");
    assert!(text.contains("4 sessions"), "{text}");
    assert!(
        text.contains(".local/share/nvim/copilotchat_history"),
        "{text}"
    );
}

#[test]
fn mounted_sessions_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(
            m,
            &["copilotchat"],
            8,
            SECRET,
            "copilotchat/refactor-parser",
        );
    });
}

/// `:CopilotChatSave` rewrites the chat's file whole: the new prompt shows within a second on
/// a mount.
#[test]
fn a_saved_chat_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join("copilotchat/refactor-parser/transcript.md");
    assert!(t.exists(), "{}", t.display());
    let path = fx.home.path().join(file("refactor-parser"));
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    doc.as_array_mut()
        .expect("array")
        .push(json!({"id": "fresh-1", "role": "user", "content": "Fresh prompt after the mount"}));
    std::fs::write(&path, encode(&doc)).expect("write");
    stores::assert_within_a_second("saved chat", || {
        stores::file_contains(&t, "Fresh prompt after the mount")
    });
}
