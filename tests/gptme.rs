//! gptme conversations, written here the way gptme writes them: a directory per
//! conversation under `~/.local/share/gptme/logs/` with `conversation.jsonl` (one
//! `Message.to_dict()` a line), `branches/<name>.jsonl` (a whole other branch) and
//! `config.toml` (`[chat]` settings and an `[env]` table of secrets), rendered with
//! `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below ([`Sess`]), never from sessfs' parser.

mod common;

use common::stores::{self, meta, put, Rendered};
use common::{Home, Mount};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

/// A string that looks like a credential, in each conversation's `[env]` table and in
/// gptme's own config.
const SECRET: &str = "sk-proj-PLANTEDgptmeSECRETdoNotRead0000000000";

const ALPHA: &str = "2026-01-10-alpha-blue-fox";
const BRAVO: &str = "subagent-explore-1-ab12";
const CHARLIE: &str = "2026-01-12-charlie-red-owl";

const LOGS: &str = ".local/share/gptme/logs";

/// What the writer put in one conversation, for the checks.
struct Sess {
    /// `gptme/<id>`.
    dir: String,
    /// Lines that must be in this session's files and no other session's.
    lines: Vec<&'static str>,
    /// Tool outputs: must be under this session's `tools/`.
    outputs: Vec<&'static str>,
    /// Expected usage: input, output, cache reads, cache writes, USD.
    usage: Option<(u64, u64, u64, u64, f64)>,
}

struct Fixture {
    home: Home,
    sessions: Vec<Sess>,
}

fn at(s: u32) -> String {
    format!("2026-01-10T09:{:02}:{:02}+00:00", s / 60, s % 60)
}

fn m(role: &str, content: &str, s: u32) -> Value {
    json!({ "role": role, "content": content, "timestamp": at(s) })
}

/// An assistant message with its API call's usage, as `MessageMetadata` nests it.
fn reply(content: &str, s: u32, usage: Value, cost: f64) -> Value {
    json!({ "role": "assistant", "content": content, "timestamp": at(s),
            "metadata": { "model": "anthropic/claude-sonnet-4-5", "cost": cost, "usage": usage } })
}

fn jsonl(lines: &[Value]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path();
    put(
        h,
        ".config/gptme/config.toml",
        format!("[prompt]\nabout_user = \"demo\"\n\n[env]\nOPENAI_API_KEY = \"{SECRET}\"\n"),
    );

    // Alpha: the system prompt, two shell/save rounds (nested and the older flat usage),
    // a branch that forked after the second round, a line that is not JSON.
    let shared = vec![
        json!({ "role": "system", "content": "Alpha system prompt text", "timestamp": at(0),
                "pinned": true }),
        m("user", "Alpha prompt one", 1),
        reply(
            "Alpha reply one\n```shell\npytest --durations=3\n```",
            2,
            json!({ "input_tokens": 1000, "output_tokens": 50, "cache_read_tokens": 200,
                    "cache_creation_tokens": 30 }),
            0.0021,
        ),
        m(
            "system",
            "Ran command: `pytest --durations=3`\n```stdout\nAlpha shell output line\n```",
            3,
        ),
        json!({ "role": "assistant", "timestamp": at(4),
                "content": "Alpha reply two\n```save tests/conftest.py\nAlpha saved file body\n```",
                "metadata": { "model": "anthropic/claude-sonnet-4-5", "cost": 0.003,
                              "input_tokens": 1300, "output_tokens": 80 } }),
        m("system", "Alpha saved output notice", 5),
    ];
    let mut main = shared.clone();
    main.push(m("user", "Alpha prompt on main after the fork", 6));
    main.push(reply(
        "Alpha final reply",
        7,
        json!({ "input_tokens": 1500, "output_tokens": 20 }),
        0.001,
    ));
    let mut text = jsonl(&main);
    text.push_str("{Alpha broken line\n");
    text.push_str(&jsonl(&[m("system", "Alpha notice without a call", 8)]));
    put(h, &format!("{LOGS}/{ALPHA}/conversation.jsonl"), text);
    let mut alt = shared;
    alt.push(m("user", "Alpha branch-only prompt", 9));
    alt.push(reply(
        "Alpha branch-only reply",
        10,
        json!({ "input_tokens": 9999, "output_tokens": 9999 }),
        9.0,
    ));
    put(
        h,
        &format!("{LOGS}/{ALPHA}/branches/alt.jsonl"),
        jsonl(&alt),
    );
    put(
        h,
        &format!("{LOGS}/{ALPHA}/config.toml"),
        format!(
            "[chat]\nname = \"Alpha: speed up the tests\"\nmodel = \"anthropic/claude-sonnet-4-5\"\n\
             tools = [\"shell\", \"save\"]\nworkspace = \"/work/alpha\"\n\n[env]\n\
             OPENAI_API_KEY = \"{SECRET}\"\nname = \"{SECRET}\"\n"
        ),
    );

    // Bravo: a subagent in tool mode; the result carries the call's id.
    let bravo = [
        m("user", "Bravo prompt", 20),
        reply(
            "Bravo looks first.\n@read(call_b1): {\"path\": \"README.md\"}",
            21,
            json!({ "input_tokens": 400, "output_tokens": 12 }),
            0.0004,
        ),
        json!({ "role": "system", "content": "Bravo read output", "timestamp": at(22),
                "call_id": "call_b1", "metadata": { "tool": "read" } }),
        reply(
            "Bravo reply",
            23,
            json!({ "input_tokens": 500, "output_tokens": 30 }),
            0.0006,
        ),
    ];
    put(
        h,
        &format!("{LOGS}/{BRAVO}/conversation.jsonl"),
        jsonl(&bravo),
    );

    // Charlie: an older log without usage, and a hidden message.
    let charlie = [
        m("user", "Charlie prompt", 30),
        json!({ "role": "system", "content": "Charlie hidden note", "timestamp": at(31),
                "hide": true }),
        m("assistant", "Charlie reply", 32),
    ];
    put(
        h,
        &format!("{LOGS}/{CHARLIE}/conversation.jsonl"),
        jsonl(&charlie),
    );

    let sessions = vec![
        Sess {
            dir: format!("gptme/{ALPHA}"),
            lines: vec![
                "Alpha system prompt text",
                "Alpha prompt one",
                "Alpha reply one",
                "Alpha reply two",
                "Alpha saved file body",
                "Alpha prompt on main after the fork",
                "Alpha final reply",
                "Alpha broken line",
                "Alpha notice without a call",
                "Alpha branch-only prompt",
                "Alpha branch-only reply",
            ],
            outputs: vec!["Alpha shell output line", "Alpha saved output notice"],
            usage: Some((3800, 150, 200, 30, 0.0061)),
        },
        Sess {
            dir: format!("gptme/{BRAVO}"),
            lines: vec!["Bravo prompt", "Bravo looks first.", "Bravo reply"],
            outputs: vec!["Bravo read output"],
            usage: Some((900, 42, 0, 0, 0.001)),
        },
        Sess {
            dir: format!("gptme/{CHARLIE}"),
            lines: vec!["Charlie prompt", "Charlie hidden note", "Charlie reply"],
            outputs: vec![],
            usage: None,
        },
    ];
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(
        &fx.home,
        "sessfs-gptme",
        &["GPTME_LOGS_HOME", "XDG_DATA_HOME"],
    )
}

fn check_tree(tree: &Path, fx: &Fixture) {
    assert_eq!(
        stores::entries(tree, "gptme"),
        fx.sessions.len(),
        "gptme sessions"
    );
    for s in &fx.sessions {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &s.outputs);
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
}

#[test]
fn usage_is_counted_once_per_reply_of_the_main_branch() {
    let fx = write();
    let out = render(&fx);
    for s in &fx.sessions {
        let Some(want) = s.usage else { continue };
        stores::assert_cost(&out.tree, &s.dir, want);
    }
}

#[test]
fn titles_cwd_models_branches_and_subagents_come_from_the_conversation() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    let a = meta(tree, &format!("gptme/{ALPHA}"));
    assert_eq!(a["title"], "Alpha: speed up the tests");
    assert_eq!(a["cwd"], "/work/alpha");
    assert_eq!(a["model"], "anthropic/claude-sonnet-4-5");
    assert_eq!(a["createdAt"], "2026-01-10T09:00:00.000Z");
    let branches = a["branches"].to_string();
    assert!(branches.contains("branch-alt"), "{branches}");
    let b = meta(tree, &format!("gptme/{BRAVO}"));
    assert!(b["tags"].to_string().contains("subagent"), "{}", b["tags"]);
    let c = meta(tree, &format!("gptme/{CHARLIE}"));
    assert_eq!(c["title"], "Charlie prompt");
}

#[test]
fn secrets_in_config_toml_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    assert_eq!(stores::entries(&out.tree, "gptme"), 3);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &["GPTME_LOGS_HOME", "XDG_DATA_HOME"]);
}

#[test]
fn gptme_logs_home_replaces_the_default_directory() {
    let fx = write();
    let logs = fx.home.path().join("alt-logs");
    let src = fx.home.path().join(LOGS).join(CHARLIE);
    put(
        &logs,
        &format!("{CHARLIE}/conversation.jsonl"),
        std::fs::read(src.join("conversation.jsonl")).expect("r"),
    );
    let o = fx
        .home
        .command(&["list"])
        .env("GPTME_LOGS_HOME", &logs)
        .output()
        .expect("list");
    let text = common::stdout(&o);
    assert!(text.contains(CHARLIE), "{text}");
    assert!(!text.contains(ALPHA), "{text}");
}

#[test]
fn mounted_gptme_greps_sizes_erofs_and_stores_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["gptme"], 6, SECRET, &format!("gptme/{ALPHA}"));
    });
}

/// gptme appends to `conversation.jsonl` while the mount is up: the new message shows
/// within a second, without a remount.
#[test]
fn a_message_appended_while_mounted_shows_within_a_second() {
    let fx = write();
    let mnt = Mount::new(&fx.home, &[]);
    let t = mnt.path().join(format!("gptme/{CHARLIE}/transcript.md"));
    assert!(std::fs::read_to_string(&t)
        .expect("t")
        .contains("Charlie reply"));
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(
            fx.home
                .path()
                .join(LOGS)
                .join(CHARLIE)
                .join("conversation.jsonl"),
        )
        .expect("open");
    f.write_all(jsonl(&[m("user", "Charlie written after the mount", 40)]).as_bytes())
        .expect("append");
    drop(f);
    stores::assert_within_a_second("new message", || {
        stores::file_contains(&t, "Charlie written after the mount")
    });
}

/// The gptme store's glance: with nothing changed a search lists no store; a message
/// appended to a conversation, a branch added to one, a new conversation and a deleted
/// conversation are each found by the next search.
#[test]
fn gptme_changes_are_found_by_the_next_search() {
    use common::{age, logged_search};
    use std::collections::BTreeSet;
    let home = Home::empty();
    let h = home.path();
    let set =
        |ids: &[&str]| -> BTreeSet<String> { ids.iter().map(|id| format!("gptme/{id}")).collect() };
    let conv = |id: &str, text: &str| {
        put(
            h,
            &format!("{LOGS}/{id}/conversation.jsonl"),
            jsonl(&[m("system", "You are gptme.", 0), m("user", text, 1)]),
        )
    };
    let a = conv(ALPHA, "the gptmeone question");
    let b = conv(CHARLIE, "the gptmetwo question");
    let logs = h.join(LOGS);
    for d in [logs.join(ALPHA), logs.join(CHARLIE), logs.clone()] {
        age(&d, 3600);
    }
    assert_eq!(logged_search(&home, "gptmeone"), (set(&[ALPHA]), false));
    assert_eq!(logged_search(&home, "gptmetwo"), (set(&[CHARLIE]), true));
    // An appended message: no directory moves, the conversation grows.
    let mut f = std::fs::OpenOptions::new().append(true).open(&a).unwrap();
    f.write_all(jsonl(&[m("user", "an appendedgptme answer", 2)]).as_bytes())
        .unwrap();
    drop(f);
    assert_eq!(logged_search(&home, "appendedgptme").0, set(&[ALPHA]));
    assert_eq!(logged_search(&home, "appendedgptme"), (set(&[ALPHA]), true));
    // A branch: the conversation's directory moves (its `branches/` appears).
    put(
        h,
        &format!("{LOGS}/{ALPHA}/branches/retry.jsonl"),
        jsonl(&[m("user", "the branchedgptme question", 1)]),
    );
    age(&logs.join(ALPHA).join("branches"), 3000);
    age(&logs.join(ALPHA), 3000);
    assert_eq!(logged_search(&home, "branchedgptme").0, set(&[ALPHA]));
    assert_eq!(logged_search(&home, "branchedgptme"), (set(&[ALPHA]), true));
    // A new conversation.
    conv(BRAVO, "the gptmethree question");
    age(&logs.join(BRAVO), 3000);
    age(&logs, 3000);
    assert_eq!(logged_search(&home, "gptmethree").0, set(&[BRAVO]));
    assert_eq!(logged_search(&home, "gptmethree"), (set(&[BRAVO]), true));
    // A deleted conversation.
    std::fs::remove_dir_all(b.parent().unwrap()).unwrap();
    age(&logs, 2400);
    assert_eq!(logged_search(&home, "gptmetwo").0, BTreeSet::new());
    assert_eq!(
        logged_search(&home, "question"),
        (set(&[ALPHA, BRAVO]), true)
    );
}
