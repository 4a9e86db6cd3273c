//! Amp threads, written here the way the Amp CLI and its editor extension write them
//! (shapes taken from real `~/.local/share/amp/threads/T-*.json` files and from public
//! readers of them), rendered with `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below ([`Thread`]), never from sessfs' parser.

mod common;

use common::stores::{self, meta, put, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A string that looks like a credential, planted in Amp's secrets, settings and history.
const SECRET: &str = "sgamp_user_PLANTEDampSECRETdoNotRead0000";

const THREADS: &str = ".local/share/amp/threads";
const LEGACY: &str = ".config/Code/User/globalStorage/sourcegraph.amp/threads3";

const A: &str = "T-aaaaaaaa-1111-4aaa-8aaa-000000000001";
const B: &str = "T-bbbbbbbb-2222-4bbb-8bbb-000000000002";
const C: &str = "T-cccccccc-3333-4ccc-8ccc-000000000003";
const D: &str = "T-dddddddd-4444-4ddd-8ddd-000000000004";

/// What the writer put in one thread, for the checks.
#[derive(Default)]
struct Thread {
    /// `amp/<id>`.
    dir: String,
    /// Lines that must be in this session's files and no other session's.
    lines: Vec<&'static str>,
    /// Tool outputs: must be under this session's `tools/`.
    outputs: Vec<&'static str>,
    /// Expected usage: input, output, cache reads, cache writes, USD.
    usage: (u64, u64, u64, u64, f64),
}

struct Fixture {
    home: Home,
    threads: Vec<Thread>,
}

fn user(id: u64, text: &str, sent: i64) -> Value {
    json!({"role": "user", "messageId": id, "content": [{"type": "text", "text": text}],
           "userState": {"currentlyVisibleFiles": []}, "agentMode": "smart",
           "meta": {"sentAt": sent}})
}

fn results(id: u64, blocks: Vec<Value>) -> Value {
    json!({"role": "user", "messageId": id, "content": blocks})
}

/// An assistant reply with its usage: input, output, cache writes, cache reads, credits.
fn reply(id: u64, content: Vec<Value>, u: (u64, u64, u64, u64, f64)) -> Value {
    json!({"role": "assistant", "messageId": id, "content": content,
           "state": {"type": "complete", "stopReason": "end_turn"},
           "usage": {"model": "claude-sonnet-4-5-20250929", "maxInputTokens": 968000,
                     "inputTokens": u.0, "outputTokens": u.1,
                     "cacheCreationInputTokens": u.2, "cacheReadInputTokens": u.3,
                     "totalInputTokens": u.0 + u.2 + u.3, "credits": u.4,
                     "creditsSinceLastUserMessage": u.4 * 3.0}})
}

fn ledger(op: &str, to: u64, input: u64, output: u64, credits: f64) -> Value {
    json!({"id": format!("ev-{op}-{to}"), "timestamp": "2026-03-01T10:00:00.000Z",
           "model": "claude-3-5-haiku-20241022", "credits": credits,
           "tokens": {"input": input, "output": output}, "operationType": op,
           "fromMessageId": to, "toMessageId": to})
}

fn thread(
    id: &str,
    v: u64,
    title: &str,
    cwd: &str,
    messages: Vec<Value>,
    events: Vec<Value>,
) -> Value {
    json!({"v": v, "id": id, "created": 1_772_359_200_000_i64, "messages": messages,
           "nextMessageId": 9, "agentMode": "smart",
           "env": {"initial": {"trees": [{"displayName": "p", "uri": format!("file://{cwd}"),
                    "repository": {"type": "git", "url": "https://example.invalid/p"}}],
                   "platform": {"os": "linux", "client": "CLI", "clientType": "cli"},
                   "tags": ["model:claude-sonnet-4-5-20250929"]}},
           "title": title,
           "usageLedger": {"events": events},
           "~debug": {"lastInferenceUsage": {"model": "claude-sonnet-4-5-20250929",
                      "inputTokens": 777_000, "outputTokens": 777_000, "credits": 7777.0}}})
}

/// Amp's store as the CLI and the extension lay it out, with secrets beside it.
fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut threads = Vec::new();
    let t0 = 1_772_359_200_000_i64;

    // --- A: two turns, thinking, three tool result shapes, a title-generation call.
    let a = thread(
        A,
        194,
        "Alpha: tidy the widget module",
        "/home/dev/alpha%20proj",
        vec![
            user(0, "Alpha prompt: tidy the widget module", t0 + 1000),
            reply(
                1,
                vec![
                    json!({"type": "thinking", "thinking": "Alpha thinking: list the files first.", "signature": "c2ln"}),
                    json!({"type": "text", "text": "Alpha reply: looking at the module."}),
                    json!({"type": "tool_use", "id": "toolu_a1", "name": "Bash", "input": {"cmd": "ls src/widget"}}),
                    json!({"type": "tool_use", "id": "toolu_a2", "name": "Grep", "input": {"pattern": "fn widget"}}),
                    json!({"type": "tool_use", "id": "toolu_a3", "name": "read_web_page", "input": {"url": "https://example.invalid"}}),
                ],
                (10, 100, 1000, 5000, 2.5),
            ),
            results(
                2,
                vec![
                    json!({"type": "tool_result", "toolUseID": "toolu_a1", "run": {"status": "done", "result": {"output": "alpha-output: mod.rs\nalpha-output: parts.rs", "exitCode": 0}}}),
                    json!({"type": "tool_result", "toolUseID": "toolu_a2", "run": {"status": "done", "progress": ["alpha-grep: src/widget/mod.rs:3"], "result": ["alpha-grep: src/widget/mod.rs:3"]}}),
                    json!({"type": "tool_result", "toolUseID": "toolu_a3", "run": {"status": "done", "result": "alpha-web: the page says hello"}}),
                ],
            ),
            reply(
                3,
                vec![json!({"type": "text", "text": "Alpha reply two: the module is tidy."})],
                (5, 50, 200, 6000, 1.25),
            ),
            user(4, "Alpha second prompt: and the tests?", t0 + 60_000),
            reply(
                5,
                vec![json!({"type": "text", "text": "Alpha reply three: tests pass."})],
                (7, 70, 300, 6200, 1.0),
            ),
        ],
        vec![
            ledger("title-generation", 0, 600, 30, 0.06),
            // Inference calls the replies carry: never counted twice.
            ledger("inference", 1, 10, 100, 2.5),
            ledger("inference", 3, 5, 50, 1.25),
            ledger("inference", 5, 7, 70, 1.0),
        ],
    );
    put(
        &h,
        &format!("{THREADS}/{A}.json"),
        serde_json::to_vec_pretty(&a).expect("json"),
    );
    threads.push(Thread {
        dir: format!("amp/{A}"),
        lines: vec![
            "Alpha prompt: tidy the widget module",
            "Alpha thinking: list the files first.",
            "Alpha reply: looking at the module.",
            "Alpha reply two: the module is tidy.",
            "Alpha second prompt: and the tests?",
            "Alpha reply three: tests pass.",
        ],
        outputs: vec![
            "alpha-output: parts.rs",
            "alpha-grep: src/widget/mod.rs:3",
            "alpha-web: the page says hello",
        ],
        // 22 + 600 in, 220 + 30 out, 17200 read, 1500 written; (4.75 + 0.06) cents.
        usage: (622, 250, 17_200, 1500, 0.0481),
    });

    // --- B: handed off from A; compaction summary, sealed thinking, a failed and a
    // cancelled run, a block type this reader does not know.
    let mut b = thread(
        B,
        30,
        "Bravo: continue the widget work",
        "/home/dev/bravo",
        vec![
            json!({"role": "info", "messageId": 0, "content": [{"type": "summary", "summary": {"type": "message", "summary": "Bravo summary: the widget module was tidied."}}]}),
            user(1, "Bravo prompt: now rename it", t0 + 200_000),
            reply(
                2,
                vec![
                    json!({"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"}),
                    json!({"type": "tool_use", "id": "toolu_b1", "name": "edit_file", "input": {"path": "src/widget/mod.rs"}}),
                    json!({"type": "tool_use", "id": "toolu_b2", "name": "Bash", "input": {"cmd": "cargo test"}}),
                    json!({"type": "hologram", "note": "Bravo hologram block"}),
                ],
                (3, 30, 0, 900, 0.5),
            ),
            results(
                3,
                vec![
                    json!({"type": "tool_result", "toolUseID": "toolu_b1", "run": {"status": "error", "error": {"message": "bravo-error: file is read-only"}}}),
                    json!({"type": "tool_result", "toolUseID": "toolu_b2", "run": {"status": "cancelled", "progress": {"output": "bravo-partial: running 12 tests"}}}),
                ],
            ),
        ],
        vec![],
    );
    b["relationships"] = json!([{"threadID": A, "type": "handoff", "role": "child"}]);
    put(
        &h,
        &format!("{THREADS}/{B}.json"),
        serde_json::to_vec(&b).expect("json"),
    );
    threads.push(Thread {
        dir: format!("amp/{B}"),
        lines: vec![
            "Bravo summary: the widget module was tidied.",
            "Bravo prompt: now rename it",
            "Bravo hologram block",
        ],
        outputs: vec![
            "bravo-error: file is read-only",
            "bravo-partial: running 12 tests",
        ],
        usage: (3, 30, 900, 0, 0.005),
    });

    // --- C: cut while Amp rewrote it: the first two messages are whole.
    let c = thread(
        C,
        12,
        "Charlie: cut mid-write",
        "/home/dev/charlie",
        vec![
            user(0, "Charlie prompt: before the cut", t0 + 300_000),
            reply(
                1,
                vec![json!({"type": "text", "text": "Charlie reply: before the cut"})],
                (1, 10, 0, 0, 0.02),
            ),
            reply(
                2,
                vec![json!({"type": "text", "text": "Charlie lost reply after the cut"})],
                (1, 10, 0, 0, 0.02),
            ),
        ],
        vec![],
    );
    let text = serde_json::to_string(&c).expect("json");
    let cut = text.find("Charlie lost reply").expect("marker") - 10;
    put(&h, &format!("{THREADS}/{C}.json"), &text.as_bytes()[..cut]);
    threads.push(Thread {
        dir: format!("amp/{C}"),
        lines: vec![
            "Charlie prompt: before the cut",
            "Charlie reply: before the cut",
        ],
        usage: (1, 10, 0, 0, 0.0002),
        ..Thread::default()
    });

    // --- D: the editor extension's older store.
    let d = thread(
        D,
        3,
        "Delta: from the extension",
        "/home/dev/delta",
        vec![
            user(0, "Delta prompt: from VS Code", t0 + 400_000),
            reply(
                1,
                vec![json!({"type": "text", "text": "Delta reply: hello from the extension"})],
                (2, 20, 0, 0, 0.03),
            ),
        ],
        vec![],
    );
    put(
        &h,
        &format!("{LEGACY}/{D}.json"),
        serde_json::to_vec(&d).expect("json"),
    );
    threads.push(Thread {
        dir: format!("amp/{D}"),
        lines: vec![
            "Delta prompt: from VS Code",
            "Delta reply: hello from the extension",
        ],
        usage: (2, 20, 0, 0, 0.0003),
        ..Thread::default()
    });

    // Beside the threads: the API key, settings and the prompt box's history.
    put(
        &h,
        ".local/share/amp/secrets.json",
        json!({"apiKey@https://ampcode.com/": SECRET})
            .to_string()
            .as_bytes(),
    );
    put(
        &h,
        ".config/amp/settings.json",
        json!({"amp.apiKey": SECRET}).to_string().as_bytes(),
    );
    put(
        &h,
        ".local/share/amp/history.jsonl",
        format!("\"{SECRET}\"\n").as_bytes(),
    );

    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, threads }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-amp", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for t in &fx.threads {
        stores::assert_session_holds(tree, &t.dir, &t.lines, &t.outputs);
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    check_tree(tree, &fx);
    assert_eq!(stores::entries(tree, "amp"), 4);
}

#[test]
fn usage_and_cost_are_counted_once_per_api_call() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    for t in &fx.threads {
        stores::assert_cost(tree, &t.dir, t.usage);
    }
}

#[test]
fn titles_cwd_models_and_handoffs_come_from_the_thread() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    let a = meta(tree, &format!("amp/{A}"));
    assert_eq!(a["title"], "Alpha: tidy the widget module");
    assert_eq!(a["cwd"], "/home/dev/alpha proj");
    assert_eq!(a["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(a["createdAt"], "2026-03-01T10:00:00.000Z");
    let b = meta(tree, &format!("amp/{B}"));
    assert_eq!(b["parent"], format!("amp:{A}"));
    let warnings = b["warnings"].to_string();
    assert!(
        warnings.contains("unknown block type hologram"),
        "{warnings}"
    );
    let transcript =
        std::fs::read_to_string(tree.join(format!("amp/{B}/transcript.md"))).expect("transcript");
    assert!(transcript.contains("sealed reasoning"), "{transcript}");
}

#[test]
fn a_half_written_thread_keeps_what_came_before_the_cut_and_says_so() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    let warnings = meta(tree, &format!("amp/{C}"))["warnings"].to_string();
    assert!(
        warnings.contains(&format!("{C}.json")) && warnings.contains("cut after 2 messages"),
        "{warnings}"
    );
}

#[test]
fn secrets_settings_and_prompt_history_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    stores::assert_nowhere(tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn doctor_names_amp_and_where_it_found_it() {
    let fx = write();
    let o = fx.home.sessfs(&["doctor"]);
    let text = stdout(&o);
    assert!(text.contains(&format!("{:<9} 4 sessions", "amp")), "{text}");
    assert!(text.contains("sourcegraph.amp/threads3"), "{text}");
}

#[test]
fn mounted_threads_grep_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["amp"], 12, SECRET, &format!("amp/{A}"));
    });
}

/// Amp rewrites a thread file whole on every change and creates one per thread: both show
/// through the mount within a second, without a remount.
#[test]
fn a_rewritten_thread_and_a_new_thread_show_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let session = m.path().join(format!("amp/{A}/transcript.md"));
    assert!(std::fs::read_to_string(&session)
        .expect("transcript")
        .contains("Alpha reply three"));
    let file = fx.home.path().join(THREADS).join(format!("{A}.json"));
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
    doc["messages"].as_array_mut().expect("messages").push(user(
        6,
        "Alpha fresh prompt after the mount",
        1_772_359_300_000,
    ));
    std::fs::write(&file, serde_json::to_vec_pretty(&doc).expect("json")).expect("write");
    stores::assert_within_a_second("rewritten thread", || {
        stores::file_contains(&session, "Alpha fresh prompt after the mount")
    });
    let e = "T-eeeeeeee-5555-4eee-8eee-000000000005";
    let new = thread(
        e,
        1,
        "Echo",
        "/home/dev/echo",
        vec![user(0, "Echo: a thread started after the mount", 1)],
        vec![],
    );
    put(
        fx.home.path(),
        &format!("{THREADS}/{e}.json"),
        new.to_string().as_bytes(),
    );
    stores::assert_within_a_second("new thread", || {
        m.path().join(format!("amp/{e}/transcript.md")).exists()
    });
}

/// The Amp store's glance (each threads directory): with nothing changed a search lists
/// no store; a rewritten thread, a new thread and a deleted thread are each found by the
/// next search.
#[test]
fn amp_changes_are_found_by_the_next_search() {
    use common::{age, logged_search};
    use std::collections::BTreeSet;
    const ONE: &str = "T-e1e1e1e1-0000-4eee-8eee-000000000001";
    const TWO: &str = "T-e1e1e1e1-0000-4eee-8eee-000000000002";
    const THREE: &str = "T-e1e1e1e1-0000-4eee-8eee-000000000003";
    let set =
        |ids: &[&str]| -> BTreeSet<String> { ids.iter().map(|id| format!("amp/{id}")).collect() };
    let home = Home::empty();
    let h = home.path();
    let doc = |id: &str, texts: &[&str]| {
        let messages = texts
            .iter()
            .enumerate()
            .map(|(n, t)| user(n as u64, t, 1_772_359_200_000 + n as i64))
            .collect();
        thread(id, 1, "Glance", "/home/dev/glance", messages, vec![])
            .to_string()
            .into_bytes()
    };
    let one = put(
        h,
        &format!("{THREADS}/{ONE}.json"),
        doc(ONE, &["the ampone question"]),
    );
    let two = put(
        h,
        &format!("{THREADS}/{TWO}.json"),
        doc(TWO, &["the amptwo question"]),
    );
    let dir = h.join(THREADS);
    for d in dir.ancestors().take(4) {
        age(d, 3600);
    }
    assert_eq!(logged_search(&home, "ampone"), (set(&[ONE]), false));
    assert_eq!(logged_search(&home, "amptwo"), (set(&[TWO]), true));
    // A thread rewritten whole, a message longer.
    let texts = ["the ampone question", "an appendedamp prompt"];
    std::fs::write(&one, doc(ONE, &texts)).expect("write");
    assert_eq!(logged_search(&home, "appendedamp").0, set(&[ONE]));
    assert_eq!(logged_search(&home, "appendedamp"), (set(&[ONE]), true));
    // A new thread.
    put(
        h,
        &format!("{THREADS}/{THREE}.json"),
        doc(THREE, &["the ampthree question"]),
    );
    age(&dir, 3000);
    assert_eq!(logged_search(&home, "ampthree").0, set(&[THREE]));
    assert_eq!(logged_search(&home, "ampthree"), (set(&[THREE]), true));
    // A thread deleted.
    std::fs::remove_file(&two).expect("remove");
    age(&dir, 2400);
    assert_eq!(logged_search(&home, "amptwo").0, BTreeSet::new());
    assert_eq!(logged_search(&home, "question"), (set(&[ONE, THREE]), true));
}
