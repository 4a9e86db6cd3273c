//! ChatGPT.nvim sessions, written here the way ChatGPT.nvim's `Session:save` writes them
//! (jackMort/ChatGPT.nvim `lua/chatgpt/flows/chat/session.lua`: `vim.json.encode` of `{name,
//! updated_at, settings, conversation}` into `stdpath("state")/chatgpt/<os.time()>.json`; before
//! 2023-01, `<local date>.json` without `updated_at`), rendered with `sessfs render` and
//! mounted.
//!
//! Every expected value comes from the writer below, never from sessfs' parser. ChatGPT.nvim
//! writes local times without a zone: the renders run with `TZ=UTC`.

mod common;

use common::stores::{self, messages, meta, put, transcript};
use common::{stderr, Home, Mount};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use tempfile::TempDir;

/// An OpenAI key, planted in the Neovim configuration and in the environment.
const SECRET: &str = "sk-PLANTED-chatgptnvim-key-doNotRead-0000";
const STORE: &str = ".local/state/nvim/chatgpt";
/// 2026-03-01T10:30:00Z: session A's file name.
const A: &str = "1772361000";
/// The oldest layout's file name, a local time.
const B: &str = "2022-12-27_18:05:00";
/// 2022-12-27T18:20:00Z, the modification time given to B (it has no `updated_at`).
const B_SAVED: u64 = 1_672_165_200;
const C: &str = "1772364600";
const D: &str = "1772368200";

/// What a session written below must show.
struct Written {
    dir: String,
    lines: Vec<&'static str>,
}

struct Fixture {
    home: Home,
    sessions: Vec<Written>,
}

fn file(id: &str) -> String {
    format!("{STORE}/{id}.json")
}

/// One line, as `vim.json.encode` writes it.
fn encode(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("json")
}

/// Session A as ChatGPT.nvim writes it, with `extra` items appended to its conversation.
fn session_a(extra: &[Value]) -> Value {
    let mut conversation = vec![
        json!({"type": 3, "text": "Alpha system: answer in Lua", "usage": {}}),
        json!({"type": 1, "text": "Alpha prompt: why is @src/parser.lua:12 slow?", "usage": {},
               "api_text": "# lex (src/parser.lua:12)\n```\nAlpha referenced code: local function lex(s)\n```\n\n---\n\nAlpha prompt: why is @src/parser.lua:12 slow?"}),
        json!({"type": 2, "text": "Alpha reply: the lexer allocates per token", "usage": []}),
        json!({"type": 1, "text": "Alpha prompt two: and the fix?", "usage": {}}),
        json!({"type": 2, "text": "Rate limit reached for gpt-4o", "usage": {}}),
        json!("Alpha stray element"),
        json!({"type": 7, "text": "Alpha unknown type", "usage": {}}),
        json!({"type": 2, "text": "Alpha reply three: cache the tokens", "usage": {}, "pinned": true}),
    ];
    conversation.extend(extra.iter().cloned());
    json!({
        "name": "Alpha prompt: why is @src/parser.lua:12 slow?",
        "updated_at": "2026-03-01_10:42:00",
        "settings": [],
        "conversation": conversation,
    })
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut sessions = Vec::new();

    // --- A (current layout): the system message first, a prompt with referenced code, a
    // streamed reply, an API error saved as a reply, an element that is no item, an unknown
    // type and an unknown field.
    put(&h, &file(A), encode(&session_a(&[])));
    sessions.push(Written {
        dir: format!("chatgptnvim/{A}"),
        lines: vec![
            "Alpha system: answer in Lua",
            "Alpha referenced code: local function lex(s)",
            "Alpha prompt: why is @src/parser.lua:12 slow?",
            "Alpha reply: the lexer allocates per token",
            "Alpha prompt two: and the fix?",
            "Rate limit reached for gpt-4o",
            "Alpha stray element",
            "Alpha unknown type",
            "Alpha reply three: cache the tokens",
        ],
    });

    // --- B (December 2022 layout): named by its local creation time, no `updated_at`, the
    // name still the date, a reply of the non-streamed API with its usage.
    let b = json!({
        "name": B,
        "settings": {},
        "conversation": [
            {"type": 1, "text": "Bravo prompt: explain this function\nwith a second line", "usage": {}},
            {"type": 2, "text": "Bravo reply: it folds the list",
             "usage": {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27}}
        ]
    });
    let pb = put(&h, &file(B), encode(&b));
    std::fs::File::options()
        .write(true)
        .open(&pb)
        .expect("open")
        .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(B_SAVED))
        .expect("mtime");
    sessions.push(Written {
        dir: format!("chatgptnvim/{B}"),
        lines: vec![
            "Bravo prompt: explain this function",
            "Bravo reply: it folds the list",
        ],
    });

    // --- C: an "awesome prompt" session named by its act, cut in its third item: the fields
    // after `conversation` (its name and time) are lost with the cut.
    let c = json!({
        "conversation": [
            {"type": 3, "text": "Charlie system: act as a Linux terminal", "usage": {}},
            {"type": 1, "text": "Charlie prompt: pwd", "usage": {}},
            {"type": 2, "text": "Charlie torn reply that never ends", "usage": {}}
        ],
        "name": "Linux Terminal",
        "updated_at": "2026-03-01_11:31:00"
    });
    let text = String::from_utf8(encode(&c)).expect("utf-8");
    let cut = text.find("Charlie torn reply").expect("torn") + "Charlie torn".len();
    put(&h, &file(C), &text[..cut]);
    sessions.push(Written {
        dir: format!("chatgptnvim/{C}"),
        lines: vec![
            "Charlie system: act as a Linux terminal",
            "Charlie prompt: pwd",
        ],
    });

    // --- D: not JSON at all.
    put(&h, &file(D), "Delta garbage, no JSON here\n");
    sessions.push(Written {
        dir: format!("chatgptnvim/{D}"),
        lines: vec!["Delta garbage, no JSON here"],
    });

    // The key, where a user's configuration would hold it (`api_key_cmd`).
    put(
        &h,
        ".config/nvim/lua/plugins/chatgpt.lua",
        format!("require('chatgpt').setup({{ api_key_cmd = 'echo {SECRET}' }})\n"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, sessions }
}

struct Rendered {
    _dir: TempDir,
    tree: PathBuf,
}

/// `sessfs render` with the home as `$HOME`, in UTC, the key in the environment.
fn render(fx: &Fixture) -> Rendered {
    let dir = tempfile::Builder::new()
        .prefix("sessfs-chatgptnvim")
        .tempdir()
        .expect("tmp");
    let tree = dir.path().join("tree");
    let o = fx
        .home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("TZ", "UTC")
        .env("OPENAI_API_KEY", SECRET)
        .output()
        .expect("run");
    assert!(o.status.success(), "{}", stderr(&o));
    Rendered { _dir: dir, tree }
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.sessions {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &[] as &[&str]);
    }
}

#[test]
fn render_shows_every_prompt_and_reply_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "chatgptnvim"), 4);
}

#[test]
fn ids_titles_times_and_usage_come_from_the_file() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("chatgptnvim/{A}"));
    assert_eq!(a["sessionId"], A);
    assert_eq!(a["title"], "Alpha prompt: why is @src/parser.lua:12 slow?");
    // The file name is the creation time, `updated_at` (local time) the update time.
    assert_eq!(a["createdAt"], "2026-03-01T10:30:00.000Z");
    assert_eq!(a["updatedAt"], "2026-03-01T10:42:00.000Z");
    assert_eq!(a["cwd"], Value::Null);
    // The model is the configuration's: no session names one. Streamed replies keep no usage.
    assert_eq!(a["model"], Value::Null);
    assert_eq!(stores::tokens(&a["cost"]).0, Some(0));

    let b = meta(&out.tree, &format!("chatgptnvim/{B}"));
    // A name that is still the date gives way to the first prompt.
    assert_eq!(b["title"], "Bravo prompt: explain this function");
    assert_eq!(b["createdAt"], "2022-12-27T18:05:00.000Z");
    // No `updated_at` in the oldest layout: the file's modification time.
    assert_eq!(b["updatedAt"], "2022-12-27T18:20:00.000Z");
    let (input, output, _, _) = stores::tokens(&b["cost"]);
    assert_eq!((input, output), (Some(20), Some(7)));

    // C's name was cut off: its first prompt names it.
    let c = meta(&out.tree, &format!("chatgptnvim/{C}"));
    assert_eq!(c["title"], "Charlie prompt: pwd");
    assert_eq!(c["createdAt"], "2026-03-01T11:30:00.000Z");
}

#[test]
fn every_item_kind_lands_in_messages_jsonl_and_the_transcript() {
    let fx = write();
    let out = render(&fx);
    let dir = format!("chatgptnvim/{A}");
    let m = messages(&out.tree, &dir);
    let got: Vec<(&str, &str, &str)> = m
        .iter()
        .map(|x| {
            (
                x["role"].as_str().unwrap_or(""),
                // `kind` is left out for a normal message.
                x["kind"].as_str().unwrap_or("normal"),
                x["content"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        got[..6],
        [
            ("system", "context", "Alpha system: answer in Lua"),
            (
                "system",
                "context",
                "# lex (src/parser.lua:12)\n```\nAlpha referenced code: local function lex(s)\n```"
            ),
            (
                "user",
                "normal",
                "Alpha prompt: why is @src/parser.lua:12 slow?"
            ),
            (
                "assistant",
                "normal",
                "Alpha reply: the lexer allocates per token"
            ),
            ("user", "normal", "Alpha prompt two: and the fix?"),
            ("assistant", "normal", "Rate limit reached for gpt-4o"),
        ]
    );
    assert_eq!(m[0]["label"], "system message");
    assert_eq!(m[1]["label"], "referenced code");
    let last = m.last().expect("last");
    assert_eq!(
        (&last["role"], &last["content"]),
        (
            &json!("assistant"),
            &json!("Alpha reply three: cache the tokens")
        )
    );
    let t = transcript(&out.tree, &dir);
    assert!(t.contains("\nAlpha prompt two: and the fix?\n"), "{t}");
    assert!(t.contains("\nAlpha reply three: cache the tokens\n"), "{t}");

    let b = messages(&out.tree, &format!("chatgptnvim/{B}"));
    assert_eq!(b.len(), 2);
    assert_eq!(
        b[0]["content"],
        "Bravo prompt: explain this function\nwith a second line"
    );
    assert_eq!(b[1]["content"], "Bravo reply: it folds the list");
    assert_eq!(
        (
            &b[1]["tokenUsage"]["inputTokens"],
            &b[1]["tokenUsage"]["outputTokens"]
        ),
        (&json!(20), &json!(7))
    );
}

#[test]
fn odd_items_a_cut_file_and_garbage_cost_warnings_not_sessions() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("chatgptnvim/{A}"));
    let w = a["warnings"].to_string();
    assert!(w.contains("not an object"), "{w}");
    assert!(w.contains("unknown type 7"), "{w}");
    assert!(w.contains("does not read: pinned"), "{w}");
    let c = meta(&out.tree, &format!("chatgptnvim/{C}"));
    let w = c["warnings"].to_string();
    assert!(w.contains(&format!("{C}.json: cut after 2 items")), "{w}");
    let cm = messages(&out.tree, &format!("chatgptnvim/{C}"));
    assert_eq!(cm[0]["content"], "Charlie system: act as a Linux terminal");
    assert_eq!(cm[1]["content"], "Charlie prompt: pwd");
    let d = meta(&out.tree, &format!("chatgptnvim/{D}"));
    assert!(
        d["warnings"].to_string().contains("not a JSON object"),
        "{}",
        d["warnings"]
    );
    let b = meta(&out.tree, &format!("chatgptnvim/{B}"));
    assert_eq!(b["warnings"], json!([]), "{}", b["warnings"]);
}

#[test]
fn the_api_key_is_never_read() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn xdg_state_home_and_nvim_appname_move_the_store() {
    let fx = write();
    let moved = fx.home.path().join("st/astro/chatgpt");
    std::fs::create_dir_all(&moved).expect("mkdir");
    std::fs::copy(fx.home.path().join(file(B)), moved.join("1700000000.json")).expect("copy");
    let o = fx
        .home
        .command(&["list", "--json"])
        .env("NVIM_APPNAME", "astro")
        .env("XDG_STATE_HOME", fx.home.path().join("st"))
        .output()
        .expect("list");
    let list: Value = serde_json::from_str(&common::stdout(&o)).expect("list json");
    let ids: Vec<&str> = list
        .as_array()
        .expect("array")
        .iter()
        .filter(|s| s["agent"] == "chatgptnvim")
        .filter_map(|s| s["sessionId"].as_str())
        .collect();
    assert_eq!(ids, ["1700000000"]);
}

#[test]
fn doctor_names_chatgptnvim_and_where_it_found_it() {
    let fx = write();
    let text = common::stdout(&fx.home.sessfs(&["doctor"]));
    assert!(text.contains("chatgptnvim"), "{text}");
    assert!(text.contains("4 sessions"), "{text}");
    assert!(text.contains(".local/state/nvim/chatgpt"), "{text}");
}

#[test]
fn mounted_sessions_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["chatgptnvim"], 8, SECRET, &format!("chatgptnvim/{A}"));
    });
}

/// ChatGPT.nvim rewrites the whole file when a reply is added: it shows within a second and
/// only appends to the transcript.
#[test]
fn an_added_reply_shows_within_a_second_and_only_appends() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("chatgptnvim/{A}/transcript.md"));
    let before = std::fs::read_to_string(&t).expect("transcript");
    let mut doc = session_a(&[
        json!({"type": 1, "text": "Alpha prompt three: and in Rust?", "usage": {}}),
        json!({"type": 2, "text": "Alpha fresh reply", "usage": {}}),
    ]);
    doc["updated_at"] = json!("2026-03-01_10:50:00");
    std::fs::write(fx.home.path().join(file(A)), encode(&doc)).expect("write");
    stores::assert_within_a_second("added reply", || {
        stores::file_contains(&t, "Alpha fresh reply")
    });
    let after = std::fs::read_to_string(&t).expect("transcript");
    let first = before.find("### ").expect("a message");
    assert!(after[first..].starts_with(&before[first..]), "{after}");
}

/// The bundled sample (`fixtures/home/.local/state/nvim/chatgpt/`): its system message,
/// prompts and replies, each in the one session, its name and times, and no warning. The lines
/// are the sample's own text.
#[test]
fn bundled_sample_shows_the_session() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-chatgptnvim-samples")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .env("TZ", "UTC")
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = "chatgptnvim/1767345330";
    stores::assert_session_holds(
        &tree,
        dir,
        &[
            "You are a concise senior Go reviewer.",
            "The upstream drops one call in twenty.",
            "Loop a few times and double the wait after each failure:",
            "time.Sleep(base << attempt)",
            "Should the wait be randomised too?",
            "add jitter (a random part of the wait)",
        ],
        &[] as &[&str],
    );
    let m = meta(&tree, dir);
    assert_eq!(
        m["title"],
        "How do I retry an HTTP request with backoff in Go?"
    );
    assert_eq!(m["createdAt"], "2026-01-02T09:15:30.000Z");
    assert_eq!(m["updatedAt"], "2026-01-02T09:18:05.000Z");
    assert_eq!(m["warnings"], json!([]), "{}", m["warnings"]);
    assert_eq!(stores::entries(&tree, "chatgptnvim"), 1);
}
