//! Continue sessions, written here the way Continue's editor extension (the GUI) and its
//! `cn` CLI write them (`core/util/history.ts`, `core/index.d.ts`,
//! `extensions/cli/src/services/ChatHistoryService.ts` of continuedev/continue), rendered
//! with `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below ([`Written`]), never from sessfs' parser.

mod common;

use common::stores::{self, meta, put, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A string that looks like a credential, planted in Continue's config and `.env`.
const SECRET: &str = "sk-ant-PLANTEDcontinueSECRETdoNotRead0000";

const SESSIONS: &str = ".continue/sessions";
const UNSET: &[&str] = &["CONTINUE_GLOBAL_DIR"];

const A: &str = "0a1b2c3d-0000-4000-8000-00000000000a";
const B: &str = "0a1b2c3d-0000-4000-8000-00000000000b";
const C: &str = "0a1b2c3d-0000-4000-8000-00000000000c";
const D: &str = "0a1b2c3d-0000-4000-8000-00000000000d";
const E: &str = "0a1b2c3d-0000-4000-8000-00000000000e";

/// What the writer put in one session, for the checks.
#[derive(Default)]
struct Written {
    /// `continue/<id>`.
    dir: String,
    /// Lines that must be in this session's files and no other session's.
    lines: Vec<&'static str>,
    /// Tool outputs: must be under this session's `tools/`.
    outputs: Vec<&'static str>,
    /// Expected tokens: input, output, cache reads, cache writes.
    tokens: (u64, u64, u64, u64),
    /// Expected USD; `None` for an unpriced session, NaN for one whose usage was not
    /// recorded ([`stores::NOT_RECORDED`]).
    usd: Option<f64>,
}

struct Fixture {
    home: Home,
    sessions: Vec<Written>,
}

fn item(message: Value) -> Value {
    json!({"message": message, "contextItems": []})
}

fn user(id: &str, text: &str) -> Value {
    json!({"message": {"role": "user", "content": text, "id": id},
           "contextItems": [], "editorState": {"type": "doc", "content": []}})
}

fn call(id: &str, name: &str, args: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
}

fn state(id: &str, name: &str, args: &str, status: &str, output: Option<&str>) -> Value {
    let mut s = json!({"toolCallId": id, "toolCall": call(id, name, args), "status": status,
                       "parsedArgs": serde_json::from_str::<Value>(args).unwrap_or(Value::Null)});
    if let Some(o) = output {
        s["output"] = json!([{"content": o, "name": "Tool Result",
                              "description": "Tool execution result"}]);
    }
    s
}

fn usage(prompt: u64, completion: u64, cached: u64, written: u64) -> Value {
    json!({"promptTokens": prompt, "completionTokens": completion,
           "promptTokensDetails": {"cachedTokens": cached, "cacheWriteTokens": written}})
}

fn session(id: &str, title: &str, cwd: &str, history: Vec<Value>) -> Value {
    json!({"sessionId": id, "title": title, "workspaceDirectory": cwd, "history": history})
}

/// Continue's store as the extension and the CLI lay it out, with secrets beside it.
fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut sessions = Vec::new();

    // --- A: the editor. Context items, reasoning, a thinking item, two calls whose outputs
    // are both in `tool` items and in the call states, a model in the prompt log.
    let mut prompt = user("a-u1", "Alpha prompt: why does the build fail?");
    prompt["contextItems"] = json!([{"content": "alpha-context: fn main() { broken }",
        "name": "main.rs", "description": "src/main.rs",
        "id": {"providerTitle": "file", "itemId": "x1"}}]);
    let mut thinking = item(
        json!({"role": "thinking", "content": "Alpha thinking: read main.rs first.",
                                   "signature": "c2ln", "id": "a-t1"}),
    );
    thinking["contextItems"] = json!([]);
    let mut reply = item(
        json!({"role": "assistant", "content": "Alpha reply: reading the files.",
        "id": "a-r1",
        "toolCalls": [call("call_a1", "read_file", "{\"filepath\":\"src/main.rs\"}"),
                      call("call_a2", "run_terminal_command", "{\"command\":\"cargo build\"}")]}),
    );
    reply["reasoning"] = json!({"active": false, "text": "Alpha reasoning: the brace is missing.",
                                "startAt": 1_772_359_201_000_i64, "endAt": 1_772_359_202_000_i64});
    reply["toolCallStates"] = json!([
        state(
            "call_a1",
            "read_file",
            "{\"filepath\":\"src/main.rs\"}",
            "done",
            Some("alpha-output: fn main() { broken }")
        ),
        state(
            "call_a2",
            "run_terminal_command",
            "{\"command\":\"cargo build\"}",
            "done",
            Some("alpha-build: error[E0308] mismatched types")
        ),
    ]);
    let tool1 = item(
        json!({"role": "tool", "content": "alpha-output: fn main() { broken }",
                            "toolCallId": "call_a1", "id": "a-o1"}),
    );
    let tool2 = item(
        json!({"role": "tool", "content": "alpha-build: error[E0308] mismatched types",
                            "toolCallId": "call_a2", "id": "a-o2"}),
    );
    let mut last = item(
        json!({"role": "assistant", "content": "Alpha reply two: add the brace.",
                               "id": "a-r2"}),
    );
    last["promptLogs"] = json!([{"modelTitle": "Claude Sonnet", "modelProvider": "anthropic",
        "completionOptions": {"model": "claude-sonnet-4-5-20250929", "maxTokens": 4096},
        "prompt": "<user>Alpha prompt</user>", "completion": "Alpha reply two: add the brace."}]);
    let a = session(
        A,
        "Alpha: the failing build",
        "file:///home/dev/alpha%20proj",
        vec![prompt, thinking, reply, tool1, tool2, last],
    );
    put(
        &h,
        &format!("{SESSIONS}/{A}.json"),
        serde_json::to_vec_pretty(&a).expect("json"),
    );
    sessions.push(Written {
        dir: format!("continue/{A}"),
        lines: vec![
            "Alpha prompt: why does the build fail?",
            "alpha-context: fn main() { broken }",
            "Alpha thinking: read main.rs first.",
            "Alpha reasoning: the brace is missing.",
            "Alpha reply: reading the files.",
            "Alpha reply two: add the brace.",
        ],
        outputs: vec!["alpha-build: error[E0308] mismatched types"],
        tokens: (0, 0, 0, 0),
        // Replies without usage: unknown, not $0.
        usd: Some(stores::NOT_RECORDED.4),
    });

    // --- B: the CLI. Outputs only in the call states, usage on the replies and the
    // session's total (which also holds a request that left no reply): the total counts.
    let mut b1 = item(
        json!({"role": "assistant", "content": "Bravo reply: listing the tests.",
        "toolCalls": [call("call_b1", "Bash", "{\"command\":\"cargo test\"}"),
                      call("call_b2", "Write", "{\"filepath\":\"x\"}")],
        "usage": usage(1000, 100, 800, 100)}),
    );
    b1["toolCallStates"] = json!([
        state(
            "call_b1",
            "Bash",
            "{\"command\":\"cargo test\"}",
            "done",
            Some("bravo-output: test result: ok. 12 passed")
        ),
        state("call_b2", "Write", "{\"filepath\":\"x\"}", "canceled", None),
    ]);
    let b2 = item(
        json!({"role": "assistant", "content": "Bravo reply two: all green.",
                         "usage": usage(400, 150, 200, 100)}),
    );
    let mut b = session(
        B,
        "Untitled Session",
        "/home/dev/bravo",
        vec![user("b-u1", "Bravo prompt: run the tests"), b1, b2],
    );
    b["mode"] = json!("agent");
    b["usage"] = json!({"totalCost": 0.0123, "promptTokens": 1500, "completionTokens": 300,
                        "promptTokensDetails": {"cachedTokens": 1000, "cacheWriteTokens": 200}});
    put(
        &h,
        &format!("{SESSIONS}/{B}.json"),
        serde_json::to_vec_pretty(&b).expect("json"),
    );
    sessions.push(Written {
        dir: format!("continue/{B}"),
        lines: vec![
            "Bravo prompt: run the tests",
            "Bravo reply: listing the tests.",
            "Bravo reply two: all green.",
        ],
        outputs: vec!["bravo-output: test result: ok. 12 passed"],
        tokens: (1500, 300, 1000, 200),
        usd: Some(0.0123),
    });

    // --- C: usage only on the replies (no session total), a model no price table knows;
    // cut while Continue rewrote it: the first three items are whole.
    let mut c1 = item(
        json!({"role": "assistant", "content": "Charlie reply: before the cut",
                             "usage": usage(30, 10, 0, 0)}),
    );
    c1["promptLogs"] = json!([{"modelTitle": "local-charlie-model", "modelProvider": "ollama",
                               "prompt": "p", "completion": "c"}]);
    let c2 = item(
        json!({"role": "assistant", "content": "Charlie reply two: before the cut",
                         "usage": usage(40, 20, 5, 0)}),
    );
    let c3 = item(
        json!({"role": "assistant", "content": "Charlie lost reply after the cut",
                         "usage": usage(999, 999, 0, 0)}),
    );
    let c = session(
        C,
        "Charlie: cut mid-write",
        "/home/dev/charlie",
        vec![user("c-u1", "Charlie prompt: before the cut"), c1, c2, c3],
    );
    let text = serde_json::to_string(&c).expect("json");
    let cut = text.find("Charlie lost reply").expect("marker") - 10;
    put(&h, &format!("{SESSIONS}/{C}.json"), &text.as_bytes()[..cut]);
    sessions.push(Written {
        dir: format!("continue/{C}"),
        lines: vec![
            "Charlie prompt: before the cut",
            "Charlie reply: before the cut",
            "Charlie reply two: before the cut",
        ],
        tokens: (70, 30, 5, 0),
        usd: None,
        ..Written::default()
    });

    // --- D: an older editor build: one `toolCallState`, no `tool` item, `[prompt,
    // completion]` logs, redacted thinking, an image, a compaction summary, applied rules
    // and a role this reader does not know.
    let mut d_prompt = json!({"message": {"role": "user", "content": [
        {"type": "text", "text": "Delta prompt: what is in this screenshot?"},
        {"type": "imageUrl", "imageUrl": {"url": format!("data:image/png;base64,{}", "A".repeat(400))}}]},
        "contextItems": []});
    d_prompt["appliedRules"] = json!([{"name": "delta-rule-name", "source": "rules-block",
                                       "sourceFile": "/home/dev/delta/.continue/rules/style.md"}]);
    let redacted = item(json!({"role": "thinking",
        "content": "internal reasoning is hidden due to safety reasons",
        "redactedThinking": "ZW5jcnlwdGVk"}));
    let mut d1 = item(
        json!({"role": "assistant", "content": "Delta reply: it shows a chart.",
        "toolCalls": [call("call_d1", "view_image", "{\"path\":\"chart.png\"}")]}),
    );
    d1["toolCallState"] = state(
        "call_d1",
        "view_image",
        "{\"path\":\"chart.png\"}",
        "done",
        Some("delta-output: a bar chart of sales"),
    );
    d1["promptLogs"] = json!([["Delta logged prompt", "Delta logged completion"]]);
    d1["conversationSummary"] = json!("Delta summary: the user asked about a chart.");
    let odd = item(json!({"role": "narrator", "content": "Delta narrator line"}));
    let d = session(
        D,
        "Delta: a screenshot",
        "/home/dev/delta",
        vec![d_prompt, redacted, d1, odd],
    );
    put(
        &h,
        &format!("{SESSIONS}/{D}.json"),
        serde_json::to_vec(&d).expect("json"),
    );
    sessions.push(Written {
        dir: format!("continue/{D}"),
        lines: vec![
            "Delta prompt: what is in this screenshot?",
            "delta-rule-name",
            "Delta reply: it shows a chart.",
            "Delta summary: the user asked about a chart.",
            "Delta narrator line",
        ],
        outputs: vec!["delta-output: a bar chart of sales"],
        tokens: (0, 0, 0, 0),
        usd: Some(stores::NOT_RECORDED.4),
    });

    // --- E: a file whose `history` is no list (a format Continue no longer reads).
    let e = json!({"session_id": E, "title": "Echo", "history": {"timeline": [
        {"step": {"name": "UserInputStep", "description": "Echo old-format prompt"}}]}});
    put(
        &h,
        &format!("{SESSIONS}/{E}.json"),
        serde_json::to_vec(&e).expect("json"),
    );
    sessions.push(Written {
        dir: format!("continue/{E}"),
        lines: vec!["Echo old-format prompt"],
        tokens: (0, 0, 0, 0),
        usd: Some(0.0),
        ..Written::default()
    });

    // The index: titles for sessions whose file has only a placeholder, creation times.
    let index = json!([
        {"session_id": "0000-old", "title": "pre-2024 entry", "date_created": "1"},
        {"sessionId": A, "title": "Alpha: the failing build", "dateCreated": "1772359200000",
         "workspaceDirectory": "file:///home/dev/alpha%20proj", "messageCount": 3},
        {"sessionId": B, "title": "Bravo: from the index", "dateCreated": "1772359300000",
         "workspaceDirectory": "/home/dev/bravo", "messageCount": 2},
    ]);
    put(
        &h,
        &format!("{SESSIONS}/sessions.json"),
        serde_json::to_vec_pretty(&index).expect("json"),
    );

    // Beside the sessions: API keys in the config and `.env`.
    put(
        &h,
        ".continue/config.yaml",
        format!("models:\n  - name: Claude\n    provider: anthropic\n    apiKey: {SECRET}\n"),
    );
    put(
        &h,
        ".continue/config.json",
        json!({"models": [{"apiKey": SECRET}]}).to_string(),
    );
    put(
        &h,
        ".continue/.env",
        format!("ANTHROPIC_API_KEY={SECRET}\n"),
    );

    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-continue", UNSET)
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
    let tree = &out.tree;
    check_tree(tree, &fx);
    // The index is no session.
    assert_eq!(stores::entries(tree, "continue"), 5);
}

#[test]
fn each_output_is_shown_once_though_the_editor_keeps_it_twice() {
    let fx = write();
    let out = render(&fx);
    let tools = out.tree.join(format!("continue/{A}/tools"));
    let n = std::fs::read_dir(&tools).expect("tools").count();
    assert_eq!(n, 2, "one file per call");
    let transcript = std::fs::read_to_string(out.tree.join(format!("continue/{A}/transcript.md")))
        .expect("transcript");
    assert_eq!(
        transcript.matches("alpha-build: error[E0308]").count(),
        1,
        "{transcript}"
    );
}

#[test]
fn usage_is_counted_once_per_request() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    for s in &fx.sessions {
        let c = &meta(tree, &s.dir)["cost"];
        let (i, o, cr, cw) = s.tokens;
        assert_eq!(
            stores::tokens(c),
            (Some(i), Some(o), Some(cr), Some(cw)),
            "{}: {c}",
            s.dir
        );
        match s.usd {
            Some(usd) => stores::assert_usd(c, usd, &s.dir),
            None => assert!(c["totalUsd"].is_null(), "{}: {c}", s.dir),
        }
    }
}

#[test]
fn titles_cwd_models_and_times_come_from_the_session_and_its_index() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    let a = meta(tree, &format!("continue/{A}"));
    assert_eq!(a["title"], "Alpha: the failing build");
    assert_eq!(a["cwd"], "/home/dev/alpha proj");
    assert_eq!(a["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(a["createdAt"], "2026-03-01T10:00:00.000Z");
    let b = meta(tree, &format!("continue/{B}"));
    // The file's title is Continue's placeholder: the index's title wins.
    assert_eq!(b["title"], "Bravo: from the index");
    assert_eq!(b["cwd"], "/home/dev/bravo");
    assert!(b["tags"].to_string().contains("mode:agent"), "{b}");
    let c = meta(tree, &format!("continue/{C}"));
    assert_eq!(c["model"], "local-charlie-model");
    let d = meta(tree, &format!("continue/{D}"));
    assert!(
        d["warnings"].to_string().contains("unknown role narrator"),
        "{d}"
    );
    let transcript = std::fs::read_to_string(tree.join(format!("continue/{D}/transcript.md")))
        .expect("transcript");
    assert!(transcript.contains("sealed reasoning"), "{transcript}");
    assert!(
        transcript.contains("[image: image/png, 300 B]"),
        "{transcript}"
    );
    assert!(
        !transcript.contains("AAAAAAAA"),
        "no base64 in the transcript"
    );
    let e = meta(tree, &format!("continue/{E}"));
    assert!(e["warnings"].to_string().contains("is not a list"), "{e}");
}

#[test]
fn a_half_written_session_keeps_what_came_before_the_cut_and_says_so() {
    let fx = write();
    let out = render(&fx);
    let warnings = meta(&out.tree, &format!("continue/{C}"))["warnings"].to_string();
    assert!(
        warnings.contains(&format!("{C}.json")) && warnings.contains("cut after 3 history items"),
        "{warnings}"
    );
}

#[test]
fn config_and_env_keys_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, UNSET);
}

#[test]
fn doctor_names_continue_and_where_it_found_it() {
    let fx = write();
    let o = fx.home.sessfs(&["doctor"]);
    let text = stdout(&o);
    assert!(
        text.contains(&format!("{:<9} 5 sessions", "continue")),
        "{text}"
    );
    assert!(text.contains(".continue/sessions"), "{text}");
}

#[test]
fn mounted_sessions_grep_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["continue"], 15, SECRET, &format!("continue/{A}"));
    });
}

/// Continue rewrites a session file whole on every change and writes one per new session:
/// both show through the mount within a second, without a remount.
#[test]
fn a_rewritten_session_and_a_new_session_show_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let transcript = m.path().join(format!("continue/{B}/transcript.md"));
    assert!(std::fs::read_to_string(&transcript)
        .expect("transcript")
        .contains("Bravo reply two"));
    let file = fx.home.path().join(SESSIONS).join(format!("{B}.json"));
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
    doc["history"]
        .as_array_mut()
        .expect("history")
        .push(user("b-u2", "Bravo fresh prompt after the mount"));
    std::fs::write(&file, serde_json::to_vec_pretty(&doc).expect("json")).expect("write");
    stores::assert_within_a_second("rewritten session", || {
        stores::file_contains(&transcript, "Bravo fresh prompt after the mount")
    });
    let f = "0a1b2c3d-0000-4000-8000-00000000000f";
    let new = session(
        f,
        "Foxtrot",
        "/home/dev/f",
        vec![user("f-u1", "Foxtrot: started after the mount")],
    );
    put(
        fx.home.path(),
        &format!("{SESSIONS}/{f}.json"),
        new.to_string(),
    );
    stores::assert_within_a_second("new session", || {
        m.path()
            .join(format!("continue/{f}/transcript.md"))
            .exists()
    });
}

/// A session renamed in the index alone (its file untouched) shows its new title through
/// the mount within a second; the index going away takes the title with it.
#[test]
fn a_title_changed_in_the_index_alone_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let meta = m.path().join(format!("continue/{B}/meta.json"));
    assert!(stores::file_contains(&meta, "Bravo: from the index"));
    let index = json!([
        {"sessionId": A, "title": "Alpha: the failing build", "dateCreated": "1772359200000",
         "workspaceDirectory": "file:///home/dev/alpha%20proj", "messageCount": 3},
        {"sessionId": B, "title": "Bravo: renamed in the index", "dateCreated": "1772359300000",
         "workspaceDirectory": "/home/dev/bravo", "messageCount": 2},
    ]);
    put(
        fx.home.path(),
        &format!("{SESSIONS}/sessions.json"),
        serde_json::to_vec_pretty(&index).expect("json"),
    );
    stores::assert_within_a_second("renamed in the index", || {
        stores::file_contains(&meta, "Bravo: renamed in the index")
    });
    std::fs::remove_file(fx.home.path().join(SESSIONS).join("sessions.json")).expect("rm");
    stores::assert_within_a_second("index gone", || {
        !stores::file_contains(&meta, "Bravo: renamed in the index")
    });
}

/// The Continue store's glance (the sessions directory and the directory above it): with
/// nothing changed a search lists no store; a rewritten session, a new session file and a
/// deleted one are each found by the next search.
#[test]
fn continue_changes_are_found_by_the_next_search() {
    use common::{age, logged_search};
    use std::collections::BTreeSet;
    let home = Home::empty();
    let h = home.path();
    let ids = [
        "5c0e0000-0000-4000-8000-000000000001",
        "5c0e0000-0000-4000-8000-000000000002",
        "5c0e0000-0000-4000-8000-000000000003",
    ];
    let doc = |id: &str, prompts: &[&str]| {
        let history = prompts
            .iter()
            .enumerate()
            .map(|(i, p)| user(&format!("u{i}"), p))
            .collect();
        session(id, "Glance", "/home/dev/glance", history).to_string()
    };
    let found = |ns: &[usize]| -> BTreeSet<String> {
        ns.iter().map(|&n| format!("continue/{}", ids[n])).collect()
    };
    put(
        h,
        &format!("{SESSIONS}/{}.json", ids[0]),
        doc(ids[0], &["the glancecontinueone prompt"]),
    );
    put(
        h,
        &format!("{SESSIONS}/{}.json", ids[1]),
        doc(ids[1], &["the glancecontinuetwo prompt"]),
    );
    put(
        h,
        &format!("{SESSIONS}/sessions.json"),
        json!([{"sessionId": ids[0], "title": "Glance one", "dateCreated": "1767400000000",
                "workspaceDirectory": "/home/dev/glance", "messageCount": 1}])
        .to_string(),
    );
    let sessions = h.join(SESSIONS);
    age(&sessions, 3600);
    age(&h.join(".continue"), 3600);
    assert_eq!(logged_search(&home, "prompt"), (found(&[0, 1]), false));
    assert_eq!(logged_search(&home, "prompt"), (found(&[0, 1]), true));
    // Continue rewrites a session's file whole: no directory moves, the file does.
    put(
        h,
        &format!("{SESSIONS}/{}.json", ids[0]),
        doc(
            ids[0],
            &["the glancecontinueone prompt", "an appendedcontinue prompt"],
        ),
    );
    assert_eq!(logged_search(&home, "appendedcontinue").0, found(&[0]));
    assert_eq!(
        logged_search(&home, "appendedcontinue"),
        (found(&[0]), true)
    );
    // A new session file: only `sessions/` moves.
    put(
        h,
        &format!("{SESSIONS}/{}.json", ids[2]),
        doc(ids[2], &["the glancecontinuethree prompt"]),
    );
    age(&sessions, 3000);
    assert_eq!(logged_search(&home, "glancecontinuethree").0, found(&[2]));
    assert_eq!(
        logged_search(&home, "glancecontinuethree"),
        (found(&[2]), true)
    );
    // A deleted session.
    std::fs::remove_file(sessions.join(format!("{}.json", ids[1]))).expect("rm");
    age(&sessions, 2400);
    assert_eq!(logged_search(&home, "glancecontinuetwo").0, BTreeSet::new());
    assert_eq!(logged_search(&home, "prompt"), (found(&[0, 2]), true));
}
