//! CodeCompanion chats, written here the way the history extension's `Storage:save_chat`
//! writes them (ravitemer/codecompanion-history.nvim `storage.lua`: `chats/<save_id>.json`,
//! one line of `vim.json.encode`, the index `index.json` and `summaries/<save_id>.md` beside
//! them, under `~/.local/share/nvim/codecompanion-history`), rendered with `sessfs render`
//! and mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A credential, planted where a Neovim configuration would keep an adapter's API key.
const SECRET: &str = "codecompanion-PLANTED-adapter-key-doNotRead-0000";
const HISTORY: &str = ".local/share/nvim/codecompanion-history";

/// `save_id`s: `tostring(os.time())` when each chat started.
const A: &str = "1772359200"; // 2026-03-01T10:00:00Z
const B: &str = "1772445600"; // 2026-03-02T10:00:00Z
const C: &str = "1772532000"; // 2026-03-03T10:00:00Z
const D: &str = "1772618400"; // 2026-03-04T10:00:00Z
/// A chat deleted after its summary was generated: only `summaries/<E>.md` remains.
const E: &str = "1772704800";

struct Written {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
}

struct Fixture {
    home: Home,
    sessions: Vec<Written>,
}

/// A chat document as `save_chat` writes it.
fn chat(id: &str, title: &str, updated: i64, model: &str, cwd: &str, messages: Value) -> Value {
    json!({
        "save_id": id, "title": title, "messages": messages,
        "settings": {"model": model, "temperature": 0},
        "adapter": "copilot", "updated_at": updated,
        "context_items": [], "schemas": {}, "in_use": {}, "cycle": 3,
        "title_refresh_count": 0, "cwd": cwd, "project_root": cwd,
    })
}

fn file(id: &str) -> String {
    format!("{HISTORY}/chats/{id}.json")
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut sessions = Vec::new();

    // --- A (CodeCompanion v17): the system prompt, a context item's hidden message, a prompt,
    // a reply with reasoning, a hidden reply with two calls, an OpenAI-shaped result and an
    // Anthropic-shaped failed one, a tool system prompt, a final reply; and a summary.
    let mut a = chat(
        A,
        "Alpha: why does the build fail on CI only?",
        1772361000,
        "gpt-4.1",
        "/home/dev/alpha",
        json!([
            {"role": "system", "content": "Alpha system prompt: you are a coding assistant",
             "opts": {"visible": false, "tag": "from_config"}, "cycle": 1, "id": 101},
            {"role": "user", "content": "Alpha context: contents of ci.yml",
             "opts": {"visible": false, "context_id": "<file>ci.yml</file>"}, "cycle": 1, "id": 102},
            {"role": "user", "content": "Alpha prompt: the build fails on CI only",
             "opts": {"visible": true}, "cycle": 1, "id": 103},
            {"role": "llm", "content": "Alpha reply: reading the workflow",
             "reasoning": {"content": "Alpha thinking: CI differs in its Node version"},
             "opts": {"visible": true}, "cycle": 1, "id": 104},
            {"role": "llm", "tool_calls": [
                {"id": "call_a1", "type": "function",
                 "function": {"name": "read_file", "arguments": "{\"filepath\":\".github/workflows/ci.yml\"}"}},
                {"id": "call_a2", "type": "function",
                 "function": {"name": "cmd_runner", "arguments": "{\"cmd\":\"npm run build\"}"}}],
             "opts": {"visible": false}, "cycle": 1, "id": 105},
            {"role": "tool", "tool_call_id": "call_a1", "content": "alpha-output: node-version: 18",
             "opts": {"visible": true, "tag": "tool_output"}, "cycle": 1, "id": 106},
            {"role": "tool", "content": {"type": "tool_result", "tool_use_id": "call_a2",
             "content": "alpha-failure: exit code 2", "is_error": true},
             "opts": {"visible": true}, "cycle": 1, "id": 107},
            {"role": "system", "content": "Alpha tool instructions: use the tools",
             "opts": {"visible": false, "tag": "tool"}, "cycle": 1, "id": 108},
            "Alpha stray element",
            {"role": "critic", "content": "Alpha unknown role"},
            {"role": "llm", "content": "Alpha reply three: pin Node 20 in the workflow",
             "opts": {"visible": true}, "cycle": 2, "id": 109}
        ]),
    );
    a["context_items"] = json!([{"id": "<file>ci.yml</file>", "source": "codecompanion.strategies.chat.slash_commands.file",
                                 "opts": {"pinned": true, "visible": true}}]);
    put(&h, &file(A), serde_json::to_vec(&a).expect("json"));
    put(
        &h,
        &format!("{HISTORY}/summaries/{A}.md"),
        "Alpha summary: CI ran Node 18; pinning Node 20 fixed it.\n",
    );
    sessions.push(Written {
        dir: format!("codecompanion/{A}"),
        lines: vec![
            "Alpha system prompt: you are a coding assistant",
            "Alpha context: contents of ci.yml",
            "Alpha prompt: the build fails on CI only",
            "Alpha thinking: CI differs in its Node version",
            "Alpha reply: reading the workflow",
            "Alpha tool instructions: use the tools",
            "Alpha stray element",
            "Alpha unknown role",
            "Alpha reply three: pin Node 20 in the workflow",
            "Alpha summary: CI ran Node 18",
        ],
        outputs: vec![
            "alpha-output: node-version: 18",
            "alpha-failure: exit code 2",
        ],
    });

    // --- B (CodeCompanion v18): `_meta` tags, `tools.calls`/`tools.call_id`, message times, a
    // compaction summary, a failed result by `tools.is_error`, and a field from a newer version.
    let mut b = chat(
        B,
        "Bravo: docs",
        1772447400,
        "claude-sonnet-4",
        "/home/dev/bravo/docs",
        json!([
            {"role": "user", "content": "Bravo summary: the parser was fixed.",
             "opts": {"visible": true}, "_meta": {"tag": "compact_summary", "cycle": 1, "id": 201},
             "created_at": 1772445600},
            {"role": "user", "content": "Bravo prompt: now the docs", "opts": {"visible": true},
             "_meta": {"cycle": 2, "id": 202}, "created_at": 1772445660},
            {"role": "llm", "content": "Bravo reply: listing them", "opts": {"visible": true},
             "tools": {"calls": [{"id": "call_b1", "type": "function",
                                  "function": {"name": "list_files", "arguments": "{\"path\":\"docs\"}"}},
                                 {"id": "call_b2", "type": "function",
                                  "function": {"name": "delete_file", "arguments": "{\"path\":\"docs/x\"}"}}]},
             "_meta": {"cycle": 2, "id": 203}, "created_at": 1772445700},
            {"role": "tool", "content": "bravo-output: index.md", "opts": {"visible": true},
             "tools": {"call_id": "call_b1", "name": "list_files"},
             "_meta": {"cycle": 2, "id": 204}, "created_at": 1772445710},
            {"role": "tool", "content": "bravo-failure: no such file", "opts": {"visible": true},
             "tools": {"call_id": "call_b2", "name": "delete_file", "is_error": true},
             "_meta": {"cycle": 2, "id": 205}, "created_at": 1772445720}
        ]),
    );
    b["project_root"] = json!("/home/dev/bravo");
    b["acp_future_field"] = json!({"x": 1});
    put(&h, &file(B), serde_json::to_vec(&b).expect("json"));
    sessions.push(Written {
        dir: format!("codecompanion/{B}"),
        lines: vec![
            "Bravo summary: the parser was fixed.",
            "Bravo prompt: now the docs",
            "Bravo reply: listing them",
        ],
        outputs: vec!["bravo-output: index.md", "bravo-failure: no such file"],
    });

    // --- C: cut in the middle of its third message.
    let c = chat(
        C,
        "Charlie: cut short",
        1772532600,
        "gpt-4.1",
        "/home/dev/charlie",
        json!([
            {"role": "user", "content": "Charlie prompt: before the cut", "opts": {"visible": true}},
            {"role": "llm", "content": "Charlie reply: also before the cut", "opts": {"visible": true}},
            {"role": "user", "content": "Charlie torn prompt that never ends", "opts": {"visible": true}}
        ]),
    );
    let text = serde_json::to_string(&c).expect("json");
    let cut = text.find("Charlie torn prompt").expect("torn") + "Charlie torn".len();
    put(&h, &file(C), &text[..cut]);
    sessions.push(Written {
        dir: format!("codecompanion/{C}"),
        lines: vec![
            "Charlie prompt: before the cut",
            "Charlie reply: also before the cut",
        ],
        outputs: vec![],
    });

    // --- D: not JSON at all.
    put(&h, &file(D), "Delta garbage, no JSON here\n");
    sessions.push(Written {
        dir: format!("codecompanion/{D}"),
        lines: vec!["Delta garbage, no JSON here"],
        outputs: vec![],
    });

    // --- E: a summary whose chat was deleted.
    put(
        &h,
        &format!("{HISTORY}/summaries/{E}.md"),
        "Echo summary: the chat itself was deleted.\n",
    );
    sessions.push(Written {
        dir: format!("codecompanion/{E}"),
        lines: vec!["Echo summary: the chat itself was deleted."],
        outputs: vec![],
    });

    // A corrupt index (it lists only A, then breaks off): it must cost no chat.
    put(
        &h,
        &format!("{HISTORY}/index.json"),
        format!("{{\"{A}\":{{\"save_id\":\"{A}\",\"title\":\"Index-only title\""),
    );
    put(&h, &format!("{HISTORY}/summaries_index.json"), "{}");
    // The Neovim configuration, with an adapter's key: never read.
    put(
        &h,
        ".config/nvim/lua/plugins/codecompanion.lua",
        format!("return {{ adapters = {{ openai = {{ env = {{ api_key = \"{SECRET}\" }} }} }} }}"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-codecompanion", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.sessions {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &s.outputs);
    }
}

#[test]
fn render_shows_every_message_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "codecompanion"), 5);
    // The corrupt index's title is not a chat's.
    assert_eq!(
        stores::holding(&out.tree, "Index-only title", "."),
        Default::default()
    );
}

#[test]
fn titles_cwd_times_model_and_adapter_come_from_the_chat_file() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("codecompanion/{A}"));
    assert_eq!(a["title"], "Alpha: why does the build fail on CI only?");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["createdAt"], "2026-03-01T10:00:00.000Z");
    assert_eq!(a["updatedAt"], "2026-03-01T10:30:00.000Z");
    assert_eq!(a["model"], "gpt-4.1");
    assert_eq!(a["tags"], json!(["adapter:copilot"]));
    // CodeCompanion keeps no usage in a chat.
    assert_eq!(stores::tokens(&a["cost"]).0, Some(0));
    let b = meta(&out.tree, &format!("codecompanion/{B}"));
    assert_eq!(b["title"], "Bravo: docs");
    assert_eq!(b["model"], "claude-sonnet-4");
    assert_eq!(
        b["tags"],
        json!(["adapter:copilot", "project:/home/dev/bravo"])
    );
    assert_eq!(b["createdAt"], "2026-03-02T10:00:00.000Z");
    assert_eq!(b["updatedAt"], "2026-03-02T10:30:00.000Z");
}

#[test]
fn every_message_kind_lands_in_messages_jsonl() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, &format!("codecompanion/{A}"));
    let first = |role: &str, kind: &str| -> Vec<(Value, Value)> {
        m.iter()
            .filter(|x| x["role"] == role && x["kind"] == kind)
            .map(|x| (x["label"].clone(), x["content"].clone()))
            .collect()
    };
    assert_eq!(
        first("system", "context")[..4],
        [
            (
                json!("context items"),
                json!("- <file>ci.yml</file> (codecompanion.strategies.chat.slash_commands.file, pinned)")
            ),
            (
                json!("system prompt"),
                json!("Alpha system prompt: you are a coding assistant")
            ),
            (
                json!("context <file>ci.yml</file>"),
                json!("Alpha context: contents of ci.yml")
            ),
            (
                json!("tool instructions"),
                json!("Alpha tool instructions: use the tools")
            ),
        ]
    );
    let prompts: Vec<&Value> = m
        .iter()
        .filter(|x| x["role"] == "user")
        .map(|x| &x["content"])
        .collect();
    assert_eq!(
        prompts,
        [&json!("Alpha prompt: the build fails on CI only")]
    );
    let reply = m
        .iter()
        .find(|x| x["content"] == "Alpha reply: reading the workflow")
        .expect("reply");
    assert_eq!(reply["role"], "assistant");
    assert_eq!(
        reply["thinking"],
        "Alpha thinking: CI differs in its Node version"
    );
    let calls = m
        .iter()
        .find(|x| x["toolCalls"].as_array().is_some_and(|c| !c.is_empty()))
        .expect("calls");
    assert_eq!(
        calls["toolCalls"][0],
        json!({"toolCallId": "call_a1", "toolName": "read_file",
               "input": {"filepath": ".github/workflows/ci.yml"}})
    );
    let results = |m: &[Value]| -> Vec<(String, String, String, bool)> {
        m.iter()
            .filter(|x| x["role"] == "tool")
            .map(|x| {
                let r = &x["toolResult"];
                (
                    r["toolCallId"].as_str().expect("id").to_string(),
                    r["toolName"].as_str().expect("name").to_string(),
                    r["output"].as_str().expect("output").to_string(),
                    r["isError"].as_bool().expect("flag"),
                )
            })
            .collect()
    };
    assert_eq!(
        results(&m),
        [
            (
                "call_a1".to_string(),
                "read_file".to_string(),
                "alpha-output: node-version: 18".to_string(),
                false
            ),
            (
                "call_a2".into(),
                "cmd_runner".into(),
                "alpha-failure: exit code 2".into(),
                true
            ),
        ]
    );
    assert_eq!(
        m.last().expect("last")["content"],
        "Alpha reply three: pin Node 20 in the workflow"
    );
    // The summary is a file of the session.
    let summary = std::fs::read_to_string(out.tree.join(format!("codecompanion/{A}/summary.md")))
        .expect("summary.md");
    assert_eq!(
        summary,
        "Alpha summary: CI ran Node 18; pinning Node 20 fixed it.\n"
    );

    let b = messages(&out.tree, &format!("codecompanion/{B}"));
    assert_eq!(b[0]["kind"], "compactionSummary");
    assert_eq!(b[0]["content"], "Bravo summary: the parser was fixed.");
    assert_eq!(b[1]["role"], "user");
    assert_eq!(b[1]["content"], "Bravo prompt: now the docs");
    assert_eq!(b[1]["timestamp"], "2026-03-02T10:01:00.000Z");
    assert_eq!(b[2]["toolCalls"][1]["toolName"], "delete_file");
    assert_eq!(
        results(&b),
        [
            (
                "call_b1".to_string(),
                "list_files".to_string(),
                "bravo-output: index.md".to_string(),
                false
            ),
            (
                "call_b2".into(),
                "delete_file".into(),
                "bravo-failure: no such file".into(),
                true
            ),
        ]
    );
}

#[test]
fn odd_elements_a_cut_file_garbage_and_a_lost_chat_cost_warnings_not_sessions() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("codecompanion/{A}"));
    let w = a["warnings"].to_string();
    assert!(w.contains("not an object"), "{w}");
    assert!(w.contains("unknown role critic"), "{w}");
    let b = meta(&out.tree, &format!("codecompanion/{B}"));
    let w = b["warnings"].to_string();
    assert!(w.contains("does not read: acp_future_field"), "{w}");
    let c = meta(&out.tree, &format!("codecompanion/{C}"));
    let w = c["warnings"].to_string();
    assert!(
        w.contains(&format!("{C}.json: cut after 2 messages")),
        "{w}"
    );
    assert_eq!(c["title"], "Charlie: cut short");
    let cm = messages(&out.tree, &format!("codecompanion/{C}"));
    assert_eq!(cm[0]["content"], "Charlie prompt: before the cut");
    assert_eq!(cm[1]["content"], "Charlie reply: also before the cut");
    let d = meta(&out.tree, &format!("codecompanion/{D}"));
    assert!(
        d["warnings"].to_string().contains("not a JSON object"),
        "{}",
        d["warnings"]
    );
    let e = meta(&out.tree, &format!("codecompanion/{E}"));
    assert!(
        e["warnings"]
            .to_string()
            .contains(&format!("chats/{E}.json is gone")),
        "{}",
        e["warnings"]
    );
}

#[test]
fn the_neovim_configuration_is_never_shown() {
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
        .join(".local/share/lazyvim/codecompanion-history/chats");
    std::fs::create_dir_all(&moved).expect("mkdir");
    std::fs::copy(
        fx.home.path().join(file(B)),
        moved.join(format!("{B}.json")),
    )
    .expect("copy");
    let o = fx
        .home
        .command(&["list", "--json"])
        .env("NVIM_APPNAME", "lazyvim")
        .output()
        .expect("list");
    let list: Value = serde_json::from_str(&stdout(&o)).expect("list json");
    let ids: Vec<&str> = list
        .as_array()
        .expect("array")
        .iter()
        .filter(|s| s["agent"] == "codecompanion")
        .filter_map(|s| s["sessionId"].as_str())
        .collect();
    assert_eq!(ids, [B]);
}

#[test]
fn mounted_sessions_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(
            m,
            &["codecompanion"],
            10,
            SECRET,
            &format!("codecompanion/{A}"),
        );
    });
}

/// The history extension rewrites a chat's file whole at each save: the new prompt shows
/// within a second on a mount.
#[test]
fn a_saved_chat_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("codecompanion/{A}/transcript.md"));
    assert!(t.exists(), "{}", t.display());
    let path = fx.home.path().join(file(A));
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    doc["messages"]
        .as_array_mut()
        .expect("messages")
        .push(json!({
            "role": "user", "content": "Fresh prompt after the mount",
            "opts": {"visible": true}, "cycle": 4, "id": 99
        }));
    std::fs::write(&path, serde_json::to_vec(&doc).expect("json")).expect("write");
    stores::assert_within_a_second("saved chat", || {
        stores::file_contains(&t, "Fresh prompt after the mount")
    });
}
