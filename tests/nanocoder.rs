//! Nanocoder sessions, written here the way Nanocoder's `SessionManager.saveSession` writes
//! them (Nano-Collective/nanocoder `source/session/session-manager.ts`: `<id>.json` holding
//! the session's fields and its `Message[]`, indented by two spaces, and the index
//! `sessions.json` beside them, in `<app data>/sessions/`), rendered with `sessfs render` and
//! mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A credential, planted where Nanocoder keeps its provider configuration and logins.
const SECRET: &str = "nanocoder-PLANTED-provider-key-doNotRead-0000";
const SESSIONS: &str = ".local/share/nanocoder/sessions";

const A: &str = "aaaa1111-0000-4000-8000-000000000001";
const B: &str = "bbbb2222-0000-4000-8000-000000000002";
const C: &str = "cccc3333-0000-4000-8000-000000000003";
const D: &str = "dddd4444-0000-4000-8000-000000000004";

/// What a session written below must show.
struct Written {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
}

struct Fixture {
    home: Home,
    sessions: Vec<Written>,
}

/// A session document as `saveSession` writes it.
#[allow(clippy::too_many_arguments)]
fn session(
    id: &str,
    title: &str,
    created: &str,
    accessed: &str,
    provider: &str,
    model: &str,
    cwd: &str,
    messages: Value,
) -> Value {
    json!({
        "id": id, "title": title, "createdAt": created, "lastAccessedAt": accessed,
        "messageCount": messages.as_array().map_or(0, Vec::len),
        "provider": provider, "model": model, "workingDirectory": cwd,
        "messages": messages,
    })
}

fn pretty(v: &Value) -> Vec<u8> {
    serde_json::to_vec_pretty(v).expect("json")
}

fn file(id: &str) -> String {
    format!("{SESSIONS}/{id}.json")
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut sessions = Vec::new();

    // --- A: a prompt with an image, reasoning, a read, a failed shell call, a validation
    // failure, a system message, a tool result with structured content, an element that is no
    // message and one of an unknown role.
    let a = session(
        A,
        "Alpha: why does the build fail on CI only?",
        "2026-03-01T10:00:00.000Z",
        "2026-03-01T10:30:00.000Z",
        "OpenRouter",
        "anthropic/claude-sonnet-4.5",
        "/home/dev/alpha",
        json!([
            {"role": "user", "content": "Alpha prompt: the build fails on CI only",
             "images": [{"data": "AAAAAAAA", "mediaType": "image/png", "source": "ci-log.png"}]},
            {"role": "assistant", "content": "Alpha reply: reading the workflow",
             "reasoning": "Alpha thinking: CI differs in its Node version",
             "tool_calls": [{"id": "call_a1", "function": {"name": "read_file",
                             "arguments": {"path": ".github/workflows/ci.yml"}}}]},
            {"role": "tool", "content": "alpha-output: node-version: 18", "tool_call_id": "call_a1",
             "name": "read_file"},
            {"role": "assistant", "content": "Alpha reply two: running the build",
             "tool_calls": [
                {"id": "call_a2", "function": {"name": "execute_bash", "arguments": {"command": "npm run build"}}},
                {"id": "call_a3", "function": {"name": "write_file", "arguments": {"path": 7}}},
                {"id": "call_a4", "function": {"name": "lsp_get_diagnostics", "arguments": {}}}]},
            {"role": "tool", "content": "Error: alpha-failure: exit code 2", "tool_call_id": "call_a2",
             "name": "execute_bash"},
            {"role": "tool", "content": "⚒ Validation failed: alpha-invalid path\n  - `path`: expected string, received number",
             "tool_call_id": "call_a3", "name": "write_file"},
            {"role": "tool", "content": "alpha-diagnostics: 1 error", "tool_call_id": "call_a4",
             "name": "lsp_get_diagnostics",
             "structuredContent": {"diagnostics": [{"file": "alpha-structured.ts", "line": 4}]}},
            {"role": "system", "content": "Alpha system note: plan mode is on"},
            "Alpha stray element",
            {"role": "critic", "content": "Alpha unknown role"},
            {"role": "assistant", "content": "Alpha reply three: pin Node 20 in the workflow"}
        ]),
    );
    put(&h, &file(A), pretty(&a));
    sessions.push(Written {
        dir: format!("nanocoder/{A}"),
        lines: vec![
            "Alpha prompt: the build fails on CI only",
            "Alpha thinking: CI differs in its Node version",
            "Alpha reply: reading the workflow",
            "Alpha reply two: running the build",
            "Alpha system note: plan mode is on",
            "Alpha stray element",
            "Alpha unknown role",
            "Alpha reply three: pin Node 20 in the workflow",
        ],
        outputs: vec![
            "alpha-output: node-version: 18",
            "alpha-failure: exit code 2",
            "alpha-invalid path",
            "alpha-structured.ts",
        ],
    });

    // --- B: an editor (ACP) session after an LLM compaction, still named `New Session`,
    // with a call whose arguments are JSON text.
    let b = session(
        B,
        "New Session",
        "2026-03-02T09:00:00.000Z",
        "2026-03-02T09:45:00.000Z",
        "Ollama",
        "qwen3-coder:30b",
        "/home/dev/bravo",
        json!([
            {"role": "user", "content": "<conversation-summary>\nBravo summary: the parser was fixed.\n</conversation-summary>\n\n(The above is an automated summary of earlier conversation. Continue from the most recent message.)"},
            {"role": "user", "content": "Bravo prompt: now the docs\nwith a second line"},
            {"role": "assistant", "content": "Bravo reply: listing them",
             "tool_calls": [{"id": "call_b1", "function": {"name": "list_directory",
                             "arguments": "{\"path\": \"docs\"}"}}]},
            {"role": "tool", "content": "bravo-output: index.md", "tool_call_id": "call_b1",
             "name": "list_directory"}
        ]),
    );
    put(&h, &file(B), pretty(&b));
    sessions.push(Written {
        dir: format!("nanocoder/{B}"),
        lines: vec![
            "Bravo summary: the parser was fixed.",
            "Bravo prompt: now the docs",
            "Bravo reply: listing them",
        ],
        outputs: vec!["bravo-output: index.md"],
    });

    // --- C: cut in the middle of its third message.
    let c = session(
        C,
        "Charlie: cut short",
        "2026-03-03T08:00:00.000Z",
        "2026-03-03T08:10:00.000Z",
        "Ollama",
        "qwen3-coder:30b",
        "/home/dev/charlie",
        json!([
            {"role": "user", "content": "Charlie prompt: before the cut"},
            {"role": "assistant", "content": "Charlie reply: also before the cut"},
            {"role": "user", "content": "Charlie torn prompt that never ends"}
        ]),
    );
    let text = String::from_utf8(pretty(&c)).expect("utf-8");
    let cut = text.find("Charlie torn prompt").expect("torn") + "Charlie torn".len();
    put(&h, &file(C), &text[..cut]);
    sessions.push(Written {
        dir: format!("nanocoder/{C}"),
        lines: vec![
            "Charlie prompt: before the cut",
            "Charlie reply: also before the cut",
        ],
        outputs: vec![],
    });

    // --- D: not JSON at all.
    put(&h, &file(D), "Delta garbage, no JSON here\n");
    sessions.push(Written {
        dir: format!("nanocoder/{D}"),
        lines: vec!["Delta garbage, no JSON here"],
        outputs: vec![],
    });

    // The index, listing A and B only (C and D as if the index lagged behind).
    let index: Vec<Value> = [&a, &b]
        .iter()
        .map(|s| {
            let mut e = (*s).clone();
            e.as_object_mut().expect("object").remove("messages");
            e
        })
        .collect();
    put(
        &h,
        &format!("{SESSIONS}/sessions.json"),
        pretty(&json!(index)),
    );
    // A save in progress: the temporary file `atomicWriteFile` renames into place.
    put(
        &h,
        &format!("{SESSIONS}/{A}.json.0e0e0e0e-0000-4000-8000-000000000000.tmp"),
        "{\"id\": \"tmp\", \"messages\": [{\"role\": \"user\", \"content\": \"Echo temporary\"}]}",
    );

    // Provider configuration and logins: never read.
    put(
        &h,
        ".config/nanocoder/agents.config.json",
        format!(
            "{{\"nanocoder\": {{\"providers\": [{{\"name\": \"OpenRouter\", \"apiKey\": \"{SECRET}\"}}]}}}}"
        ),
    );
    put(
        &h,
        ".config/nanocoder/copilot-credentials.json",
        format!("{{\"token\": \"{SECRET}\"}}"),
    );
    put(
        &h,
        ".config/nanocoder/codex-credentials.json",
        format!("{{\"token\": \"{SECRET}\"}}"),
    );
    put(
        &h,
        ".local/share/nanocoder/usage.json",
        format!("{{\"sessions\": [], \"note\": \"{SECRET}\"}}"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-nanocoder", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.sessions {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &s.outputs);
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "nanocoder"), 4);
    // The index and the temporary file are no sessions.
    assert_eq!(
        stores::holding(&out.tree, "Echo temporary", "."),
        Default::default()
    );
}

#[test]
fn titles_cwd_times_model_and_provider_come_from_the_session_file() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("nanocoder/{A}"));
    assert_eq!(a["title"], "Alpha: why does the build fail on CI only?");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["createdAt"], "2026-03-01T10:00:00.000Z");
    assert_eq!(a["updatedAt"], "2026-03-01T10:30:00.000Z");
    assert_eq!(a["model"], "anthropic/claude-sonnet-4.5");
    assert_eq!(a["tags"], json!(["provider:OpenRouter"]));
    // Nanocoder keeps no usage in a session.
    assert_eq!(stores::tokens(&a["cost"]).0, Some(0));
    // `New Session` is the editor's placeholder: the first prompt's first line names it.
    let b = meta(&out.tree, &format!("nanocoder/{B}"));
    assert_eq!(b["title"], "Bravo prompt: now the docs");
    assert_eq!(b["model"], "qwen3-coder:30b");
    assert_eq!(b["cwd"], "/home/dev/bravo");
}

#[test]
fn every_message_kind_lands_in_messages_jsonl() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, &format!("nanocoder/{A}"));
    assert_eq!(m[0]["role"], "user");
    assert_eq!(
        m[0]["content"],
        "Alpha prompt: the build fails on CI only\n\n[image: image/png, 6 B] ci-log.png"
    );
    assert_eq!(m[1]["role"], "assistant");
    assert_eq!(m[1]["content"], "Alpha reply: reading the workflow");
    assert_eq!(
        m[1]["thinking"],
        "Alpha thinking: CI differs in its Node version"
    );
    assert_eq!(
        m[1]["toolCalls"][0],
        json!({"toolCallId": "call_a1", "toolName": "read_file",
               "input": {"path": ".github/workflows/ci.yml"}})
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
            ("call_a1".to_string(), "read_file".to_string(), false),
            ("call_a2".into(), "execute_bash".into(), true),
            ("call_a3".into(), "write_file".into(), true),
            ("call_a4".into(), "lsp_get_diagnostics".into(), false),
        ]
    );
    let diag = m
        .iter()
        .find(|x| x["toolResult"]["toolCallId"] == "call_a4")
        .expect("diagnostics");
    assert_eq!(
        diag["toolResult"]["output"],
        "alpha-diagnostics: 1 error\n\nstructured content: {\"diagnostics\":[{\"file\":\"alpha-structured.ts\",\"line\":4}]}"
    );
    let system = m
        .iter()
        .find(|x| x["content"] == "Alpha system note: plan mode is on")
        .expect("system message");
    assert_eq!(system["role"], "system");
    assert_eq!(system["kind"], "context");
    let last = m.last().expect("last");
    assert_eq!(
        last["content"],
        "Alpha reply three: pin Node 20 in the workflow"
    );

    let b = messages(&out.tree, &format!("nanocoder/{B}"));
    assert_eq!(b[0]["kind"], "compactionSummary");
    assert_eq!(b[0]["content"], "Bravo summary: the parser was fixed.");
    assert_eq!(b[1]["role"], "user");
    assert_eq!(
        b[1]["content"],
        "Bravo prompt: now the docs\nwith a second line"
    );
    assert_eq!(b[2]["toolCalls"][0]["input"], json!({"path": "docs"}));
    assert_eq!(b[3]["toolResult"]["output"], "bravo-output: index.md");
    assert_eq!(b[3]["toolResult"]["isError"], false);
}

#[test]
fn odd_elements_a_cut_file_and_garbage_cost_warnings_not_sessions() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("nanocoder/{A}"));
    let w = a["warnings"].to_string();
    assert!(w.contains("not an object"), "{w}");
    assert!(w.contains("unknown role critic"), "{w}");
    let c = meta(&out.tree, &format!("nanocoder/{C}"));
    let w = c["warnings"].to_string();
    assert!(
        w.contains(&format!("{C}.json: cut after 2 messages")),
        "{w}"
    );
    assert_eq!(c["title"], "Charlie: cut short");
    let cm = messages(&out.tree, &format!("nanocoder/{C}"));
    assert_eq!(cm[0]["content"], "Charlie prompt: before the cut");
    assert_eq!(cm[1]["content"], "Charlie reply: also before the cut");
    let d = meta(&out.tree, &format!("nanocoder/{D}"));
    assert!(
        d["warnings"].to_string().contains("not a JSON object"),
        "{}",
        d["warnings"]
    );
}

#[test]
fn keys_logins_and_usage_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn nanocoder_data_dir_moves_the_store() {
    let fx = write();
    let moved = fx.home.path().join("elsewhere");
    std::fs::create_dir_all(moved.join("sessions")).expect("mkdir");
    std::fs::copy(
        fx.home.path().join(file(B)),
        moved.join(format!("sessions/{B}.json")),
    )
    .expect("copy");
    let o = fx
        .home
        .command(&["list", "--json"])
        .env("NANOCODER_DATA_DIR", &moved)
        .output()
        .expect("list");
    let list: Value = serde_json::from_str(&stdout(&o)).expect("list json");
    let ids: Vec<&str> = list
        .as_array()
        .expect("array")
        .iter()
        .filter(|s| s["agent"] == "nanocoder")
        .filter_map(|s| s["sessionId"].as_str())
        .collect();
    assert_eq!(ids, [B]);
}

#[test]
fn doctor_names_nanocoder_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 4 sessions", "nanocoder")),
        "{text}"
    );
    assert!(text.contains(".local/share/nanocoder/sessions"), "{text}");
}

#[test]
fn mounted_sessions_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["nanocoder"], 8, SECRET, &format!("nanocoder/{A}"));
    });
}

/// Nanocoder rewrites a session's file whole at each autosave (a temporary file renamed
/// into place): the new message shows within a second.
#[test]
fn a_saved_message_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("nanocoder/{B}/transcript.md"));
    assert!(stores::file_contains(&t, "Bravo reply: listing them"));
    let path = fx.home.path().join(file(B));
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    doc["messages"]
        .as_array_mut()
        .expect("messages")
        .push(json!({"role": "user", "content": "Bravo fresh prompt after the mount"}));
    let tmp = path.with_extension("json.1f1f.tmp");
    std::fs::write(&tmp, pretty(&doc)).expect("write");
    std::fs::rename(&tmp, &path).expect("rename");
    stores::assert_within_a_second("saved message", || {
        stores::file_contains(&t, "Bravo fresh prompt after the mount")
    });
}
