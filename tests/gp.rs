//! gp.nvim chats, written here the way gp.nvim's `new_chat` and `chat_respond` leave them
//! (Robitx/gp.nvim `lua/gp/init.lua`, `defaults.lua`: `<chat_dir>/<YYYY-MM-DD.HH-MM-SS.mmm>.md`
//! under `~/.local/share/nvim/gp/chats`, a `# topic:`/`- file:` header ended by `---`, then
//! `💬:` prompts and `🤖:[agent]` replies), rendered with `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, transcript, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A credential, planted where gp.nvim's configuration and its vault state keep keys.
const SECRET: &str = "gp-PLANTED-openai-key-doNotRead-0000";
const CHATS: &str = ".local/share/nvim/gp/chats";

/// File names, as `logger.now()` (and before September 2023 `os.date("%Y-%m-%d_%H-%M-%S")`
/// with `hrtime() % 1000`) names them: the local time each chat started.
const A: &str = "2026-03-01.10-00-00.123";
const B: &str = "2023-07-01_09-30-00.5";
const C: &str = "2026-03-03.08-15-00.042";
const D: &str = "2026-03-04.12-00-00.900";

struct Written {
    dir: String,
    lines: Vec<&'static str>,
}

struct Fixture {
    home: Home,
    sessions: Vec<Written>,
}

/// The header `new_chat` writes from the default `chat_template` (`_` escaped as `\_`).
fn header(topic: &str, id: &str, optional: &str) -> String {
    format!(
        "# topic: {topic}\n\n- file: {}.md\n{optional}Write your queries after 💬:. Use `<C-g><C-g>` or :GpChatRespond to generate a response.\n\
         Response generation can be terminated by using `<C-g>s` or :GpChatStop command.\n\
         Chats are saved automatically. To delete this chat, use `<C-g>d` or :GpChatDelete.\n\
         Be cautious of very long chats. Start a fresh chat by using `<C-g>c` or :GpChatNew.\n\n---\n\n",
        id.replace('_', "\\_")
    )
}

fn file(id: &str) -> String {
    format!("{CHATS}/{id}.md")
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut sessions = Vec::new();

    // --- A: an agent whose model has parameters (the header's JSON table), a custom role,
    // a prompt, a reply with Anthropic thinking, a two-line prompt, a reply, and the empty
    // prompt line gp leaves for the next question.
    let a = header(
        "Alpha: quicksort in Lua",
        A,
        "- model: {\"model\":\"claude-sonnet-4-20250514\",\"max\\_tokens\":4096}\n- provider: anthropic\n- role: You are Alpha's reviewer.\\nAnswer briefly.\n",
    ) + "💬: Alpha prompt: write quicksort in Lua\n\n\
         🤖:[claude-sonnet-4-20250514 & custom role]\n\
         <think>Alpha thinking: partition around a pivot</think>\n\n\
         Alpha reply: here is quicksort\n\n\n\
         💬: Alpha prompt two: make it in place\n\
         Alpha prompt two, second line\n\n\
         🤖:[claude-sonnet-4-20250514 & custom role]\n\n\
         Alpha reply two: swap in place\n\n\n💬:\n";
    put(&h, &file(A), a);
    sessions.push(Written {
        dir: format!("gp/{A}"),
        lines: vec![
            "You are Alpha's reviewer.",
            "Alpha prompt: write quicksort in Lua",
            "Alpha thinking: partition around a pivot",
            "Alpha reply: here is quicksort",
            "Alpha prompt two, second line",
            "Alpha reply two: swap in place",
        ],
    });

    // --- B: a chat of the first gp.nvim (June 2023): `🗨:` prompts, a bare `🤖:` line, no
    // topic yet, and a note typed after the `---` before the first prompt.
    let b = format!(
        "# topic: ?\n- file: {}.md\n---\n\nBravo note above the first prompt\n\n🗨: Bravo prompt: explain closures\n\n🤖:\nBravo reply: a closure keeps its upvalues\n\n\n🗨:\n",
        B.replace('_', "\\_")
    );
    put(&h, &file(B), b);
    sessions.push(Written {
        dir: format!("gp/{B}"),
        lines: vec![
            "Bravo note above the first prompt",
            "Bravo prompt: explain closures",
            "Bravo reply: a closure keeps its upvalues",
        ],
    });

    // --- C: cut inside its header (no `---`).
    put(
        &h,
        &file(C),
        format!("# topic: Charlie: cut short\n\n- file: {C}.md\n- model: gpt-4"),
    );
    sessions.push(Written {
        dir: format!("gp/{C}"),
        lines: vec!["- model: gpt-4"],
    });

    // --- D: a default agent's chat (no optional headers) cut inside its second reply, with
    // a byte that is no UTF-8.
    let mut d = header("Delta: regex", D, "").into_bytes();
    d.extend_from_slice(
        "💬: Delta prompt: match an email\n\n🤖:[ChatGPT4o]\n\nDelta reply: use a library\n\n\n💬: Delta prompt two\n\n🤖:[ChatGPT4o]\n\nDelta torn reply ".as_bytes(),
    );
    d.extend_from_slice(&[0xff, b'\n']);
    put(&h, &file(D), d);
    sessions.push(Written {
        dir: format!("gp/{D}"),
        lines: vec![
            "Delta prompt: match an email",
            "Delta reply: use a library",
            "Delta prompt two",
            "Delta torn reply",
        ],
    });

    // The symlink older gp.nvim kept to the last chat: not a session of its own.
    std::os::unix::fs::symlink(h.join(file(A)), h.join(format!("{CHATS}/last.md")))
        .expect("symlink");
    // gp.nvim's state: the last chat and agents, and the vault's Copilot bearer token.
    put(
        &h,
        ".local/share/nvim/gp/persisted/state.json",
        format!(
            "{{\"chat_agent\":\"ChatGPT4o\",\"last_chat\":\"{}\",\"updated\":1772359200}}",
            h.join(file(A)).display()
        ),
    );
    put(
        &h,
        ".local/share/nvim/gp/persisted/vault_state.json",
        format!("{{\"copilot_bearer\":{{\"token\":\"{SECRET}\",\"expires_at\":1772359200}}}}"),
    );
    // The Neovim configuration, with the API key: never read.
    put(
        &h,
        ".config/nvim/lua/plugins/gp.lua",
        format!("return {{ \"Robitx/gp.nvim\", opts = {{ openai_api_key = \"{SECRET}\" }} }}"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-gp", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.sessions {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &[] as &[&str]);
    }
}

/// `YYYY-MM-DD HH:MM:SS` of this machine's local time, as the mount shows it in UTC.
fn local(t: &str) -> String {
    chrono::NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S")
        .expect("time")
        .and_local_timezone(chrono::Local)
        .earliest()
        .expect("local")
        .with_timezone(&chrono::Utc)
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

#[test]
fn render_shows_every_chat_and_line_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    // A, B, C, D; `last.md` is no session.
    assert_eq!(stores::entries(&out.tree, "gp"), 4);
}

#[test]
fn titles_times_and_models_come_from_the_header_the_name_and_the_reply_lines() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("gp/{A}"));
    assert_eq!(a["title"], "Alpha: quicksort in Lua");
    assert_eq!(a["createdAt"], local("2026-03-01 10:00:00"));
    assert_eq!(a["model"], "claude-sonnet-4-20250514");
    assert_eq!(a["tags"], json!(["provider:anthropic"]));
    assert_eq!(a["cwd"], Value::Null);
    // gp.nvim keeps no usage.
    assert_eq!(stores::tokens(&a["cost"]).0, Some(0));
    let mtime = std::fs::metadata(fx.home.path().join(file(A)))
        .and_then(|m| m.modified())
        .expect("mtime");
    assert_eq!(
        a["updatedAt"],
        chrono::DateTime::<chrono::Utc>::from(mtime)
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string()
    );
    // `# topic: ?`: the first prompt names the chat.
    let b = meta(&out.tree, &format!("gp/{B}"));
    assert_eq!(b["title"], "Bravo prompt: explain closures");
    assert_eq!(b["createdAt"], local("2023-07-01 09:30:00"));
    assert_eq!(b["model"], Value::Null);
    let d = meta(&out.tree, &format!("gp/{D}"));
    assert_eq!(d["title"], "Delta: regex");
    assert_eq!(d["model"], "ChatGPT4o");
}

#[test]
fn every_record_kind_lands_in_messages_jsonl_and_the_transcript() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, &format!("gp/{A}"));
    let got: Vec<(Value, Value, Value, Value)> = m
        .iter()
        .map(|x| {
            (
                x["role"].clone(),
                x["label"].clone(),
                x["content"].clone(),
                x["model"].clone(),
            )
        })
        .collect();
    let model = json!("claude-sonnet-4-20250514");
    assert_eq!(
        got,
        [
            (
                json!("system"),
                json!("system prompt"),
                json!("You are Alpha's reviewer.\nAnswer briefly."),
                Value::Null
            ),
            (
                json!("system"),
                json!("chat header"),
                json!(format!(
                    "- file: {A}.md\n- model: {{\"model\":\"claude-sonnet-4-20250514\",\"max\\_tokens\":4096}}\n- provider: anthropic\nWrite your queries after 💬:. Use `<C-g><C-g>` or :GpChatRespond to generate a response.\nResponse generation can be terminated by using `<C-g>s` or :GpChatStop command.\nChats are saved automatically. To delete this chat, use `<C-g>d` or :GpChatDelete.\nBe cautious of very long chats. Start a fresh chat by using `<C-g>c` or :GpChatNew."
                )),
                Value::Null
            ),
            (
                json!("user"),
                Value::Null,
                json!("Alpha prompt: write quicksort in Lua"),
                Value::Null
            ),
            (
                json!("assistant"),
                Value::Null,
                json!("Alpha reply: here is quicksort"),
                model.clone()
            ),
            (
                json!("user"),
                Value::Null,
                json!("Alpha prompt two: make it in place\nAlpha prompt two, second line"),
                Value::Null
            ),
            (
                json!("assistant"),
                Value::Null,
                json!("Alpha reply two: swap in place"),
                model
            ),
        ]
    );
    assert_eq!(m[3]["thinking"], "Alpha thinking: partition around a pivot");
    assert_eq!(m[0]["kind"], "context");
    let t = transcript(&out.tree, &format!("gp/{A}"));
    let p1 = t.find("Alpha prompt: write quicksort").expect("prompt");
    let r1 = t.find("Alpha reply: here is quicksort").expect("reply");
    let p2 = t.find("Alpha prompt two, second line").expect("prompt two");
    assert!(p1 < r1 && r1 < p2, "{t}");

    let b = messages(&out.tree, &format!("gp/{B}"));
    let got: Vec<(Value, Value, Value)> = b
        .iter()
        .map(|x| (x["role"].clone(), x["label"].clone(), x["content"].clone()))
        .collect();
    assert_eq!(
        got,
        [
            (
                json!("system"),
                json!("chat header"),
                json!("- file: 2023-07-01\\_09-30-00.5.md")
            ),
            (
                json!("system"),
                json!("text before the first prompt"),
                json!("Bravo note above the first prompt")
            ),
            (
                json!("user"),
                Value::Null,
                json!("Bravo prompt: explain closures")
            ),
            (
                json!("assistant"),
                Value::Null,
                json!("Bravo reply: a closure keeps its upvalues")
            ),
        ]
    );
}

#[test]
fn a_cut_header_a_torn_reply_and_bad_bytes_cost_warnings_not_chats() {
    let fx = write();
    let out = render(&fx);
    let c = meta(&out.tree, &format!("gp/{C}"));
    let w = c["warnings"].to_string();
    assert!(w.contains("no `---` line ends the chat header"), "{w}");
    assert_eq!(c["title"], "Charlie: cut short");
    let cm = messages(&out.tree, &format!("gp/{C}"));
    assert_eq!(
        cm[0]["content"],
        format!("# topic: Charlie: cut short\n\n- file: {C}.md\n- model: gpt-4")
    );
    let d = meta(&out.tree, &format!("gp/{D}"));
    let w = d["warnings"].to_string();
    assert!(w.contains("not valid UTF-8"), "{w}");
    assert!(w.contains("ends inside a reply"), "{w}");
    let dm = messages(&out.tree, &format!("gp/{D}"));
    assert_eq!(
        dm.last().expect("last")["content"],
        "Delta torn reply \u{fffd}"
    );
    // The other chats are whole and warn of nothing.
    let a = meta(&out.tree, &format!("gp/{A}"));
    assert_eq!(a["warnings"], json!([]), "{}", a["warnings"]);
}

#[test]
fn keys_and_gp_state_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
    assert_eq!(
        stores::holding(&out.tree, "ChatGPT4o\",\"last_chat", "."),
        Default::default()
    );
}

#[test]
fn nvim_appname_moves_the_chat_dir() {
    let fx = write();
    let moved = fx.home.path().join(".local/share/lazyvim/gp/chats");
    std::fs::create_dir_all(&moved).expect("mkdir");
    std::fs::copy(fx.home.path().join(file(B)), moved.join(format!("{B}.md"))).expect("copy");
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
        .filter(|s| s["agent"] == "gp")
        .filter_map(|s| s["sessionId"].as_str())
        .collect();
    assert_eq!(ids, [B]);
}

#[test]
fn mounted_sessions_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["gp"], 8, SECRET, &format!("gp/{A}"));
    });
}

/// gp.nvim writes the chat buffer as a reply streams in and a prompt is typed: what is added
/// at the end shows within a second and only appends to the transcript.
#[test]
fn a_streamed_reply_shows_within_a_second_and_only_appends() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("gp/{A}/transcript.md"));
    let before = std::fs::read_to_string(&t).expect("transcript");
    let path = fx.home.path().join(file(A));
    let mut text = std::fs::read_to_string(&path).expect("chat");
    // The file ends with the empty `💬:` line: the prompt is typed on it.
    text.truncate(text.trim_end().len());
    text.push_str(" Alpha prompt three: and in Rust?\n\n🤖:[claude-sonnet-4-20250514 & custom role]\n\nAlpha fresh reply\n");
    std::fs::write(&path, text).expect("write");
    stores::assert_within_a_second("streamed reply", || {
        stores::file_contains(&t, "Alpha fresh reply")
    });
    let after = std::fs::read_to_string(&t).expect("transcript");
    let first = before.find("### ").expect("a message");
    assert!(after[first..].starts_with(&before[first..]), "{after}");
}

/// The bundled sample (`fixtures/home/.local/share/nvim/gp/chats/`): its prompts, the reply's
/// thinking and text, each in the one session, the header's model and no warning. The lines
/// are the sample's own text.
#[test]
fn bundled_sample_shows_the_chat() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-gp-samples")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let dir = "gp/2026-01-02.09-15-30.482";
    stores::assert_session_holds(
        &tree,
        dir,
        &[
            "fires a request on every keystroke",
            "A small generic debounce helper with a timer is enough",
            "timer = setTimeout(() => fn(...args), ms);",
            "And cancel the pending call when the component unmounts?",
            "Return a `cancel` function beside the wrapper",
        ],
        &[] as &[&str],
    );
    let m = meta(&tree, dir);
    assert_eq!(m["title"], "Debounce a search box in TypeScript");
    assert_eq!(m["model"], "claude-sonnet-4-20250514");
    assert_eq!(m["warnings"], json!([]), "{}", m["warnings"]);
    assert_eq!(stores::entries(&tree, "gp"), 1);
}
