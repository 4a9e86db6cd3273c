//! parrot.nvim chats, written here the way parrot.nvim's `_new_chat` and `_chat_respond`
//! leave them (frankroeder/parrot.nvim `lua/parrot/chat_handler.lua`, `config.lua`:
//! `<chat_dir>/<YYYY-MM-DD.HH-MM-SS.mmm>.md` under `~/.local/share/nvim/parrot/chats`, a
//! `# topic:` header (gp.nvim's longer one before June 2024) ended by `---`, then `🗨:`
//! prompts and `🦜:[<model> - <provider>]` replies), rendered with `sessfs render` and mounted
//! once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, transcript, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A credential, planted where parrot.nvim's configuration keeps the providers' keys.
const SECRET: &str = "parrot-PLANTED-anthropic-key-doNotRead-0000";
const CHATS: &str = ".local/share/nvim/parrot/chats";

/// File names, as `_new_chat` names them: the local time each chat started, then
/// `hrtime()` in milliseconds modulo 1000.
const A: &str = "2026-03-01.10-00-00.123";
const B: &str = "2024-05-10.14-20-00.777";
const C: &str = "2024-02-20.08-00-00.005";
const D: &str = "2026-03-04.12-00-00.900";
const E: &str = "2026-03-05.07-45-00.310";

struct Written {
    dir: String,
    lines: Vec<&'static str>,
}

struct Fixture {
    home: Home,
    sessions: Vec<Written>,
}

/// The header parrot.nvim wrote before 7b26bb2 (June 2024): gp.nvim's template with
/// parrot's prefix and `Prt` commands (`_` escaped as `\_`).
fn old_header(id: &str, optional: &str) -> String {
    format!(
        "# topic: ?\n\n- file: {id}.md\n{optional}\nWrite your queries after 🗨:. Use `<C-g><C-g>` or :PrtChatRespond to generate a response.\n\
         Response generation can be terminated by using `<C-g>s` or :PrtChatStop command.\n\
         Chats are saved automatically. To delete this chat, use `<C-g>d` or :PrtChatDelete.\n\
         Be cautious of very long chats. Start a fresh chat by using `<C-g>c` or :PrtChatNew.\n\n---\n\n"
    )
}

fn file(id: &str) -> String {
    format!("{CHATS}/{id}.md")
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut sessions = Vec::new();

    // --- A: today's template (`utils.trim` folds its blank lines) started with a custom
    // system prompt, a reply from Anthropic, a two-line prompt, a reply from OpenAI after the
    // provider was switched, and the empty prompt line parrot leaves for the next question.
    let a = "# topic: Alpha: quicksort in Lua\n- system: You are Alpha's reviewer. Answer briefly.\n\n---\n\
         🗨: Alpha prompt: write quicksort in Lua\n\n\
         🦜:[claude-sonnet-4-5 & custom system prompt - anthropic]\n\n\
         Alpha reply: here is quicksort\n\n\n\
         🗨: Alpha prompt two: make it in place\n\
         Alpha prompt two, second line\n\n\
         🦜:[gpt-4o & custom system prompt - openai]\n\n\
         Alpha reply two: swap in place\n\n\n🗨:\n";
    put(&h, &file(A), a);
    sessions.push(Written {
        dir: format!("parrot/{A}"),
        lines: vec![
            "You are Alpha's reviewer. Answer briefly.",
            "Alpha prompt: write quicksort in Lua",
            "Alpha reply: here is quicksort",
            "Alpha prompt two, second line",
            "Alpha reply two: swap in place",
        ],
    });

    // --- B: a May 2024 chat: the long header with a model and a role (newlines escaped), no
    // topic yet, a note typed after the `---`, and a reply from a model that streams its
    // reasoning inline.
    let b = old_header(
        B,
        "- model: llama3\n- role: You are Bravo.\\nBe terse.\n",
    ) + "Bravo note above the first prompt\n\n🗨: Bravo prompt: explain closures\n\n\
         🦜:[llama3 & custom role - ollama]\n\n\
         <think>Bravo thinking: upvalues</think>\n\nBravo reply: a closure keeps its upvalues\n\n\n🗨:\n";
    put(&h, &file(B), b);
    sessions.push(Written {
        dir: format!("parrot/{B}"),
        lines: vec![
            "You are Bravo.",
            "Bravo note above the first prompt",
            "Bravo prompt: explain closures",
            "Bravo thinking: upvalues",
            "Bravo reply: a closure keeps its upvalues",
        ],
    });

    // --- C: a February 2024 chat, replies still under gp.nvim's `🤖:[<agent>]`.
    let c = old_header(C, "")
        + "🗨: Charlie prompt: what is a coroutine\n\n🤖:[ChatGPT4]\n\nCharlie reply: a function that can yield\n\n\n🗨:\n";
    put(&h, &file(C), c);
    sessions.push(Written {
        dir: format!("parrot/{C}"),
        lines: vec![
            "Charlie prompt: what is a coroutine",
            "Charlie reply: a function that can yield",
        ],
    });

    // --- D: cut inside its second reply, with a byte that is no UTF-8.
    let mut d = "# topic: Delta: regex\n\n---\n🗨: Delta prompt: match an email\n\n🦜:[gpt-4o-mini - openai]\n\nDelta reply: use a library\n\n\n🗨: Delta prompt two\n\n🦜:[gpt-4o-mini - openai]\n\nDelta torn reply ".as_bytes().to_vec();
    d.extend_from_slice(&[0xff, b'\n']);
    put(&h, &file(D), d);
    sessions.push(Written {
        dir: format!("parrot/{D}"),
        lines: vec![
            "Delta prompt: match an email",
            "Delta reply: use a library",
            "Delta prompt two",
            "Delta torn reply",
        ],
    });

    // --- E: cut inside its header (no `---`).
    put(&h, &file(E), "# topic: Echo: cut short\n- system: Be bri");
    sessions.push(Written {
        dir: format!("parrot/{E}"),
        lines: vec!["- system: Be bri"],
    });

    // The symlink parrot.nvim kept to the last chat before July 2024: no session.
    std::os::unix::fs::symlink(h.join(file(A)), h.join(format!("{CHATS}/last.md")))
        .expect("symlink");
    // parrot.nvim's state: selected providers and models, cached model lists, the last chat.
    put(
        &h,
        ".local/share/nvim/parrot/persisted/state.json",
        format!(
            "{{\"current_provider\":{{\"chat\":\"anthropic\",\"command\":\"openai\"}},\"anthropic\":{{\"chat_model\":\"claude-sonnet-4-5\",\"cached_models\":{{}}}},\"last_chat\":\"{}\"}}",
            h.join(file(A)).display()
        ),
    );
    // The Neovim configuration, with the API key: never read.
    put(
        &h,
        ".config/nvim/lua/plugins/parrot.lua",
        format!("return {{ \"frankroeder/parrot.nvim\", opts = {{ providers = {{ anthropic = {{ api_key = \"{SECRET}\" }} }} }} }}"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-parrot", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.sessions {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &[] as &[&str]);
    }
}

/// (role, label, content, model) of each message.
fn rows(m: &[Value]) -> Vec<(Value, Value, Value, Value)> {
    m.iter()
        .map(|x| {
            (
                x["role"].clone(),
                x["label"].clone(),
                x["content"].clone(),
                x["model"].clone(),
            )
        })
        .collect()
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
    // A to E; `last.md` is no session.
    assert_eq!(stores::entries(&out.tree, "parrot"), 5);
}

#[test]
fn titles_times_models_and_providers_come_from_the_header_the_name_and_the_reply_lines() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("parrot/{A}"));
    assert_eq!(a["title"], "Alpha: quicksort in Lua");
    assert_eq!(a["createdAt"], local("2026-03-01 10:00:00"));
    // One reply from each model: the first one named is the session's.
    assert_eq!(a["model"], "claude-sonnet-4-5");
    assert_eq!(a["tags"], json!(["provider:anthropic", "provider:openai"]));
    assert_eq!(a["cwd"], Value::Null);
    // parrot.nvim keeps no usage.
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
    // `# topic: ?`: the first prompt names the chat; the old header's model.
    let b = meta(&out.tree, &format!("parrot/{B}"));
    assert_eq!(b["title"], "Bravo prompt: explain closures");
    assert_eq!(b["createdAt"], local("2024-05-10 14:20:00"));
    assert_eq!(b["model"], "llama3");
    assert_eq!(b["tags"], json!(["provider:ollama"]));
    let c = meta(&out.tree, &format!("parrot/{C}"));
    assert_eq!(c["model"], "ChatGPT4");
    assert_eq!(c["tags"], json!([]));
    let d = meta(&out.tree, &format!("parrot/{D}"));
    assert_eq!(d["title"], "Delta: regex");
    assert_eq!(d["model"], "gpt-4o-mini");
}

#[test]
fn every_record_kind_lands_in_messages_jsonl_and_the_transcript() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, &format!("parrot/{A}"));
    assert_eq!(
        rows(&m),
        [
            (
                json!("system"),
                json!("system prompt"),
                json!("You are Alpha's reviewer. Answer briefly."),
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
                json!("claude-sonnet-4-5")
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
                json!("gpt-4o")
            ),
        ]
    );
    assert_eq!(m[0]["kind"], "context");
    let t = transcript(&out.tree, &format!("parrot/{A}"));
    let p1 = t.find("Alpha prompt: write quicksort").expect("prompt");
    let r1 = t.find("Alpha reply: here is quicksort").expect("reply");
    let p2 = t.find("Alpha prompt two, second line").expect("prompt two");
    let r2 = t.find("Alpha reply two: swap in place").expect("reply two");
    assert!(p1 < r1 && r1 < p2 && p2 < r2, "{t}");

    let b = messages(&out.tree, &format!("parrot/{B}"));
    assert_eq!(
        rows(&b),
        [
            (
                json!("system"),
                json!("system prompt"),
                json!("You are Bravo.\nBe terse."),
                Value::Null
            ),
            (
                json!("system"),
                json!("chat header"),
                json!(format!(
                    "- file: {B}.md\n- model: llama3\n\nWrite your queries after 🗨:. Use `<C-g><C-g>` or :PrtChatRespond to generate a response.\nResponse generation can be terminated by using `<C-g>s` or :PrtChatStop command.\nChats are saved automatically. To delete this chat, use `<C-g>d` or :PrtChatDelete.\nBe cautious of very long chats. Start a fresh chat by using `<C-g>c` or :PrtChatNew."
                )),
                Value::Null
            ),
            (
                json!("system"),
                json!("text before the first prompt"),
                json!("Bravo note above the first prompt"),
                Value::Null
            ),
            (
                json!("user"),
                Value::Null,
                json!("Bravo prompt: explain closures"),
                Value::Null
            ),
            (
                json!("assistant"),
                Value::Null,
                json!("Bravo reply: a closure keeps its upvalues"),
                json!("llama3")
            ),
        ]
    );
    assert_eq!(b[4]["thinking"], "Bravo thinking: upvalues");

    let c = messages(&out.tree, &format!("parrot/{C}"));
    let got: Vec<(Value, Value)> = c
        .iter()
        .skip(1)
        .map(|x| (x["role"].clone(), x["content"].clone()))
        .collect();
    assert_eq!(
        got,
        [
            (json!("user"), json!("Charlie prompt: what is a coroutine")),
            (
                json!("assistant"),
                json!("Charlie reply: a function that can yield")
            ),
        ]
    );
    assert_eq!(c[0]["label"], "chat header");
}

#[test]
fn a_cut_header_a_torn_reply_and_bad_bytes_cost_warnings_not_chats() {
    let fx = write();
    let out = render(&fx);
    let e = meta(&out.tree, &format!("parrot/{E}"));
    let w = e["warnings"].to_string();
    assert!(w.contains("no `---` line ends the chat header"), "{w}");
    assert!(w.contains("parrot.nvim answers no such file"), "{w}");
    assert_eq!(e["title"], "Echo: cut short");
    let em = messages(&out.tree, &format!("parrot/{E}"));
    assert_eq!(
        em[0]["content"],
        "# topic: Echo: cut short\n- system: Be bri"
    );
    let d = meta(&out.tree, &format!("parrot/{D}"));
    let w = d["warnings"].to_string();
    assert!(w.contains("not valid UTF-8"), "{w}");
    assert!(w.contains("ends inside a reply"), "{w}");
    let dm = messages(&out.tree, &format!("parrot/{D}"));
    assert_eq!(
        dm.last().expect("last")["content"],
        "Delta torn reply \u{fffd}"
    );
    // The other chats are whole and warn of nothing.
    for id in [A, B, C] {
        let s = meta(&out.tree, &format!("parrot/{id}"));
        assert_eq!(s["warnings"], json!([]), "{id}: {}", s["warnings"]);
    }
}

#[test]
fn keys_and_parrot_state_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
    assert_eq!(
        stores::holding(&out.tree, "current_provider", "."),
        Default::default()
    );
}

#[test]
fn nvim_appname_moves_the_chat_dir() {
    let fx = write();
    let moved = fx.home.path().join(".local/share/lazyvim/parrot/chats");
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
        .filter(|s| s["agent"] == "parrot")
        .filter_map(|s| s["sessionId"].as_str())
        .collect();
    assert_eq!(ids, [B]);
}

#[test]
fn mounted_sessions_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["parrot"], 10, SECRET, &format!("parrot/{A}"));
    });
}

/// parrot.nvim writes the chat buffer as a reply streams in and a prompt is typed: what is
/// added at the end shows within a second and only appends to the transcript.
#[test]
fn a_streamed_reply_shows_within_a_second_and_only_appends() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("parrot/{A}/transcript.md"));
    let before = std::fs::read_to_string(&t).expect("transcript");
    let path = fx.home.path().join(file(A));
    let mut text = std::fs::read_to_string(&path).expect("chat");
    // The file ends with the empty `🗨:` line: the prompt is typed on it.
    text.truncate(text.trim_end().len());
    text.push_str(" Alpha prompt three: and in Rust?\n\n🦜:[gpt-4o & custom system prompt - openai]\n\nAlpha fresh reply\n");
    std::fs::write(&path, text).expect("write");
    stores::assert_within_a_second("streamed reply", || {
        stores::file_contains(&t, "Alpha fresh reply")
    });
    let after = std::fs::read_to_string(&t).expect("transcript");
    let first = before.find("### ").expect("a message");
    assert!(after[first..].starts_with(&before[first..]), "{after}");
}

/// The bundled sample (`fixtures/home/.local/share/nvim/parrot/chats/`): its system prompt,
/// prompts, the reply's thinking and text, each in the one session, the first reply's model,
/// both providers and no warning. The lines are the sample's own text.
#[test]
fn bundled_sample_shows_the_chat() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-parrot-samples")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let dir = "parrot/2026-01-03.16-40-12.207";
    stores::assert_session_holds(
        &tree,
        dir,
        &[
            "You are a senior TypeScript engineer. Keep answers short.",
            "fails now and then with a 503. How do I retry it?",
            "await new Promise((r) => setTimeout(r, baseMs * 2 ** i));",
            "Should it retry a 404 too?",
            "A 404 will not go away by waiting",
            "retry only 429, 502, 503 and 504",
        ],
        &[] as &[&str],
    );
    let m = meta(&tree, dir);
    assert_eq!(m["title"], "Retry a flaky fetch with backoff");
    assert_eq!(m["model"], "claude-sonnet-4-5");
    assert_eq!(m["tags"], json!(["provider:anthropic", "provider:ollama"]));
    assert_eq!(m["warnings"], json!([]), "{}", m["warnings"]);
    assert_eq!(stores::entries(&tree, "parrot"), 1);
}
