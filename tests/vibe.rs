//! Mistral Vibe session logs, written here the way Vibe's `SessionLogger` writes them
//! (mistralai/mistral-vibe `vibe/core/session/session_logger.py`: a folder per session with
//! `messages.jsonl` and `meta.json`; the pre-2.0 single `session_*.json`), rendered with
//! `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, meta, put, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A credential, planted where Vibe keeps its keys and settings.
const SECRET: &str = "vibe-PLANTED-mistral-key-doNotRead-0000";
const LOGS: &str = ".vibe/logs/session";

const A: &str = "aaaa1111-0000-4000-8000-000000000001";
const B: &str = "bbbb2222-0000-4000-8000-000000000002";
const C: &str = "cccc3333-0000-4000-8000-000000000003";

struct Session {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
    usage: (u64, u64, u64, u64, f64),
}

struct Fixture {
    home: Home,
    sessions: Vec<Session>,
}

/// `meta.json` as `save_interaction` writes it; `stats` cumulative over the agent loop.
fn meta_json(
    id: &str,
    parent: Option<&str>,
    title: &str,
    cwd: &str,
    tokens: (u64, u64),
    cost: f64,
) -> Value {
    json!({
        "session_id": id, "parent_session_id": parent,
        "start_time": "2026-03-01T10:00:00+00:00", "end_time": "2026-03-01T10:30:00+00:00",
        "git_commit": "0123abcd", "git_branch": "main", "username": "dev",
        "environment": {"working_directory": cwd}, "loops": [], "title": title,
        "title_source": "auto", "experiments": null,
        "stats": {"steps": 3, "session_prompt_tokens": tokens.0, "session_completion_tokens": tokens.1,
                  "tool_calls_agreed": 1, "context_tokens": 900, "last_turn_prompt_tokens": 10,
                  "last_turn_completion_tokens": 5, "input_price_per_million": 0.4,
                  "output_price_per_million": 2.0, "session_total_llm_tokens": tokens.0 + tokens.1,
                  "last_turn_total_tokens": 15, "session_cost": cost},
        "total_messages": 4,
        "tools_available": [{"type": "function", "function": {"name": "bash", "description": "run", "parameters": {}}}],
        "config": {"active_model": "devstral", "models": [
            {"name": "mistral-vibe-cli-latest", "provider": "mistral", "alias": "devstral"}]},
        "agent_profile": {"name": "default", "overrides": {}},
        "system_prompt": {"role": "system", "content": format!("{title} system prompt"), "injected": false}
    })
}

fn lines(msgs: &[Value]) -> String {
    msgs.iter().map(|m| format!("{m}\n")).collect()
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut sessions = Vec::new();

    // --- A: reasoning, a tool call and its output, a line that is no message.
    let dir = format!("{LOGS}/session_20260301_100000_aaaa1111");
    put(
        &h,
        &format!("{dir}/meta.json"),
        serde_json::to_vec_pretty(&meta_json(
            A,
            None,
            "Alpha: fix the parser",
            "/home/dev/alpha",
            (1200, 300),
            0.00108,
        ))
        .expect("json"),
    );
    let mut text = lines(&[
        json!({"role": "user", "content": "Alpha prompt: fix the parser", "injected": false, "message_id": "m1"}),
        json!({"role": "assistant", "content": "Alpha reply: running the tests", "injected": false,
               "reasoning_content": "Alpha thinking: the tests say where",
               "tool_calls": [{"id": "call_a1", "index": 0, "type": "function",
                               "function": {"name": "bash", "arguments": "{\"command\": \"cargo test\"}"}}],
               "message_id": "m2"}),
        json!({"role": "tool", "content": "alpha-output: 3 tests failed", "injected": false,
               "name": "bash", "tool_call_id": "call_a1"}),
        json!({"role": "assistant", "content": "Alpha reply two: fixed", "injected": false, "message_id": "m3"}),
    ]);
    text.push_str("Alpha torn line {not json\n");
    put(&h, &format!("{dir}/messages.jsonl"), text);
    sessions.push(Session {
        dir: format!("vibe/{A}"),
        lines: vec![
            "Alpha prompt: fix the parser",
            "Alpha thinking: the tests say where",
            "Alpha reply: running the tests",
            "Alpha reply two: fixed",
            "Alpha torn line",
        ],
        outputs: vec!["alpha-output: 3 tests failed"],
        usage: (1200, 300, 0, 0, 0.00108),
    });

    // --- B: compacted from A; its stats go on from A's.
    let dir = format!("{LOGS}/session_20260301_102000_bbbb2222");
    put(
        &h,
        &format!("{dir}/meta.json"),
        serde_json::to_vec_pretty(&meta_json(
            B,
            Some(A),
            "Bravo: after compaction",
            "/home/dev/alpha",
            (1500, 420),
            0.00144,
        ))
        .expect("json"),
    );
    put(
        &h,
        &format!("{dir}/messages.jsonl"),
        lines(&[
            json!({"role": "user", "injected": true, "content": "You are continuing a trajectory after a context compaction.\n\nBravo summary: the parser was fixed."}),
            json!({"role": "user", "content": "Bravo prompt: now the docs", "injected": false}),
            json!({"role": "assistant", "content": "Bravo reply: docs updated", "injected": false}),
        ]),
    );
    sessions.push(Session {
        dir: format!("vibe/{B}"),
        lines: vec![
            "Bravo summary: the parser was fixed.",
            "Bravo prompt: now the docs",
            "Bravo reply: docs updated",
        ],
        outputs: vec![],
        usage: (300, 120, 0, 0, 0.00036),
    });

    // --- C: a pre-2.0 single file.
    let mut m = meta_json(
        C,
        None,
        "Charlie: old format",
        "/home/dev/charlie",
        (50, 20),
        0.0,
    );
    m["stats"]["session_cost"] = json!(0.0);
    put(
        &h,
        &format!("{LOGS}/session_20250101_090000_cccc3333.json"),
        serde_json::to_vec(&json!({"metadata": m, "messages": [
        {"role": "user", "content": "Charlie prompt: from Vibe one"},
        {"role": "assistant", "content": "Charlie reply: hello from one"}]}))
        .expect("json"),
    );
    sessions.push(Session {
        dir: format!("vibe/{C}"),
        lines: vec![
            "Charlie prompt: from Vibe one",
            "Charlie reply: hello from one",
        ],
        outputs: vec![],
        usage: (50, 20, 0, 0, 0.0),
    });

    put(&h, ".vibe/.env", format!("MISTRAL_API_KEY={SECRET}\n"));
    put(
        &h,
        ".vibe/config.toml",
        format!("[providers]\napi_key = \"{SECRET}\"\n"),
    );
    put(&h, ".vibe/vibehistory", format!("{SECRET}\n"));
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-vibe", &[])
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
    assert_eq!(stores::entries(&out.tree, "vibe"), 3);
}

#[test]
fn usage_is_counted_once_and_a_compacted_session_only_its_own() {
    let fx = write();
    let out = render(&fx);
    for s in &fx.sessions {
        let c = &meta(&out.tree, &s.dir)["cost"];
        let (i, o, _, _, usd) = s.usage;
        assert_eq!(stores::tokens(c).0, Some(i), "{}: {c}", s.dir);
        assert_eq!(stores::tokens(c).1, Some(o), "{}: {c}", s.dir);
        if usd > 0.0 {
            stores::assert_usd(c, usd, &s.dir);
        }
    }
}

#[test]
fn titles_cwd_model_links_and_unreadable_lines_come_from_the_logs() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("vibe/{A}"));
    assert_eq!(a["title"], "Alpha: fix the parser");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["model"], "mistral-vibe-cli-latest");
    assert!(
        a["warnings"].to_string().contains("unparsed.txt"),
        "{}",
        a["warnings"]
    );
    let b = meta(&out.tree, &format!("vibe/{B}"));
    assert_eq!(b["forkedFrom"], format!("vibe:{A}"));
}

#[test]
fn keys_settings_and_prompt_history_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn doctor_names_vibe_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 3 sessions", "vibe")),
        "{text}"
    );
    assert!(text.contains(".vibe/logs/session"), "{text}");
}

#[test]
fn mounted_logs_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["vibe"], 9, SECRET, &format!("vibe/{A}"));
    });
}

/// Vibe appends to `messages.jsonl` after each turn: the new line shows within a second.
#[test]
fn an_appended_message_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("vibe/{A}/transcript.md"));
    assert!(stores::file_contains(&t, "Alpha reply two"));
    let file = fx
        .home
        .path()
        .join(LOGS)
        .join("session_20260301_100000_aaaa1111/messages.jsonl");
    let mut text = std::fs::read_to_string(&file).expect("read");
    text.push_str(&format!(
        "{}\n",
        json!({"role": "user", "content": "Alpha fresh prompt after the mount"})
    ));
    std::fs::write(&file, text).expect("write");
    stores::assert_within_a_second("appended message", || {
        stores::file_contains(&t, "Alpha fresh prompt after the mount")
    });
}

/// The Vibe store's glance (the log directory, each session folder and its `meta.json`):
/// with nothing changed a search lists no store; an appended message, a session whose
/// logs appear in a folder made before them, and a deleted session are each found by the
/// next search.
#[test]
fn vibe_changes_are_found_by_the_next_search() {
    use common::{age, logged_search};
    use std::collections::BTreeSet;
    const ONE: &str = "eeee1111-0000-4000-8000-000000000001";
    const TWO: &str = "eeee2222-0000-4000-8000-000000000002";
    const THREE: &str = "eeee3333-0000-4000-8000-000000000003";
    let set =
        |ids: &[&str]| -> BTreeSet<String> { ids.iter().map(|id| format!("vibe/{id}")).collect() };
    let home = Home::empty();
    let h = home.path();
    let logs = h.join(LOGS);
    let folder = |id: &str| logs.join(format!("session_20260305_100000_{}", &id[..8]));
    let session = |id: &str, word: &str| {
        let dir = folder(id);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let meta = meta_json(id, None, "Glance", "/home/dev/glance", (10, 5), 0.0);
        std::fs::write(dir.join("meta.json"), meta.to_string()).expect("meta");
        let prompt = json!({"role": "user", "content": format!("the {word} question"),
                            "injected": false, "message_id": "m1"});
        let messages = dir.join("messages.jsonl");
        std::fs::write(&messages, lines(&[prompt])).expect("messages");
        messages
    };
    let one = session(ONE, "vibeone");
    session(TWO, "vibetwo");
    for d in [folder(ONE), folder(TWO), logs.clone()] {
        age(&d, 3600);
    }
    for d in logs.ancestors().skip(1).take(2) {
        age(d, 3600);
    }
    assert_eq!(logged_search(&home, "vibeone"), (set(&[ONE]), false));
    assert_eq!(logged_search(&home, "vibetwo"), (set(&[TWO]), true));
    // A message appended.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&one)
        .expect("open");
    let line = json!({"role": "assistant", "content": "an appendedvibe answer",
                      "injected": false, "message_id": "m2"});
    std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).expect("append");
    drop(f);
    assert_eq!(logged_search(&home, "appendedvibe").0, set(&[ONE]));
    assert_eq!(logged_search(&home, "appendedvibe"), (set(&[ONE]), true));
    // A session folder made before its logs: no session yet, then one.
    std::fs::create_dir(folder(THREE)).expect("mkdir");
    age(&folder(THREE), 3000);
    age(&logs, 3000);
    assert_eq!(logged_search(&home, "vibethree").0, BTreeSet::new());
    assert_eq!(logged_search(&home, "vibethree"), (BTreeSet::new(), true));
    // Vibe logs the first message before it writes `meta.json`: the folder names it.
    session(THREE, "vibethree");
    let meta = std::fs::read(folder(THREE).join("meta.json")).expect("meta");
    std::fs::remove_file(folder(THREE).join("meta.json")).expect("remove");
    age(&folder(THREE), 2800);
    let named = format!(
        "vibe/{}",
        folder(THREE).file_name().expect("name").to_string_lossy()
    );
    assert_eq!(logged_search(&home, "vibethree").0, BTreeSet::from([named]));
    std::fs::write(folder(THREE).join("meta.json"), meta).expect("meta");
    age(&folder(THREE), 2600);
    assert_eq!(logged_search(&home, "vibethree").0, set(&[THREE]));
    assert_eq!(logged_search(&home, "vibethree"), (set(&[THREE]), true));
    // A session deleted.
    std::fs::remove_dir_all(folder(TWO)).expect("remove");
    age(&logs, 2400);
    assert_eq!(logged_search(&home, "vibetwo").0, BTreeSet::new());
    assert_eq!(logged_search(&home, "question"), (set(&[ONE, THREE]), true));
}
