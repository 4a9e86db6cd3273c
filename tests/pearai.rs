//! PearAI sessions, written here the way PearAI's chat extension writes them
//! (trypear/pearai-submodule `03800f80`: `core/util/history.ts` `save`, a plain
//! `writeFileSync(JSON.stringify(session))` of `{history, perplexityHistory, title, sessionId,
//! workspaceDirectory}` built by `gui/src/hooks/useHistory.tsx` `saveSession`, into
//! `~/.pearai/sessions/<id>.json`, and the index `sessions.json`; the items as
//! `gui/src/redux/slices/stateSlice.ts` and `useChatHandler.ts` build them), rendered with
//! `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below or is written out by hand, never from
//! sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, shape, shapes, transcript, Rendered};
use common::{stderr, stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// An API key, planted in PearAI's config, `.env`, log and beside the sessions.
const SECRET: &str = "sk-PLANTED-pearai-key-doNotRead-0000";
const SESSIONS: &str = ".pearai/sessions";
const UNSET: &[&str] = &["CONTINUE_GLOBAL_DIR"];

const A: &str = "7e0a0000-0000-4000-8000-00000000000a";
const B: &str = "7e0a0000-0000-4000-8000-00000000000b";
const C: &str = "7e0a0000-0000-4000-8000-00000000000c";
const D: &str = "7e0a0000-0000-4000-8000-00000000000d";
const E: &str = "7e0a0000-0000-4000-8000-00000000000e";
const F: &str = "7e0a0000-0000-4000-8000-00000000000f";
const G: &str = "7e0a0000-0000-4000-8000-000000000010";
/// A Continue session in `~/.continue`: shown under `continue/`, never under `pearai/`.
const K: &str = "c0de0000-0000-4000-8000-00000000000c";

/// A-model: the chat's model, named by its prompt logs.
const A_MODEL: &str = "claude-3-5-sonnet-20241022";
const B_MODEL: &str = "perplexity-sonar";

/// What one written session must show.
struct Written {
    dir: String,
    lines: Vec<&'static str>,
}

struct Fixture {
    home: Home,
    sessions: Vec<Written>,
}

/// A prompt as `initNewActiveMessage` pushes it, its content set when sent.
fn prompt(content: Value) -> Value {
    json!({"message": {"role": "user", "content": content},
           "contextItems": [],
           "editorState": {"type": "doc", "content": [{"type": "paragraph"}]}})
}

/// A reply as streamed into the item `initNewActiveMessage` pushes, with the prompt log
/// `addPromptCompletionPair` adds.
fn reply(content: &str, model: &str) -> Value {
    json!({"message": {"role": "assistant", "content": content},
           "contextItems": [],
           "promptLogs": [{"completionOptions": {"model": model, "maxTokens": 4096},
                           "prompt": "<logged prompt>", "completion": content}]})
}

/// The document `saveSession` sends and `HistoryManager.save` writes, keys in its order:
/// one line of `JSON.stringify`.
fn doc(history: Vec<Value>, search: Vec<Value>, title: &str, id: &str, cwd: &str) -> Value {
    json!({"history": history, "perplexityHistory": search, "title": title,
           "sessionId": id, "workspaceDirectory": cwd})
}

fn file(id: &str) -> String {
    format!("{SESSIONS}/{id}.json")
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut sessions = Vec::new();

    // --- A: the chat view. A prompt with an attached file, a reply, a prompt with a
    // screenshot, a reply.
    let mut p1 = prompt(json!("Alpha prompt: why is the login form slow?"));
    p1["contextItems"] = json!([{"content": "alpha-context: export function Login() {}",
        "name": "Login.tsx", "description": "src/Login.tsx",
        "id": {"providerTitle": "file", "itemId": "a1"}}]);
    let p2 = prompt(json!([
        {"type": "text", "text": "Alpha prompt two: and this profile?"},
        {"type": "imageUrl", "imageUrl": {"url": format!("data:image/png;base64,{}", "A".repeat(800))}}
    ]));
    let a = doc(
        vec![
            p1,
            reply("Alpha reply: it re-renders on every keystroke.", A_MODEL),
            p2,
            reply("Alpha reply two: memoize the validator.", A_MODEL),
        ],
        vec![],
        "Alpha: the slow login form",
        A,
        "/home/dev/alpha",
    );
    put(&h, &file(A), a.to_string());
    sessions.push(Written {
        dir: format!("pearai/{A}"),
        lines: vec![
            "Alpha prompt: why is the login form slow?",
            "alpha-context: export function Login() {}",
            "Alpha reply: it re-renders on every keystroke.",
            "Alpha prompt two: and this profile?",
            "Alpha reply two: memoize the validator.",
        ],
    });

    // --- B: the search view (PearAI Search): `history` empty, the conversation in
    // `perplexityHistory`, the reply's cited URLs with the titles fetched for them.
    let mut q = prompt(json!("Bravo search: when was Rust 1.80 released?"));
    q["citations"] = json!([]);
    let mut r = reply("Bravo answer: on July 25, 2024 [1][2].", B_MODEL);
    r["citations"] = json!([
        {"url": "https://blog.rust-lang.org/2024/07/25/Rust-1.80.0.html",
         "title": "Announcing Rust 1.80.0 | Rust Blog"},
        {"url": "https://releases.rs/docs/1.80.0/", "title": "releases.rs"}
    ]);
    let b = doc(
        vec![],
        vec![q, r],
        "Bravo: the Rust release date",
        B,
        "/home/dev/bravo",
    );
    put(&h, &file(B), b.to_string());
    sessions.push(Written {
        dir: format!("pearai/{B}"),
        lines: vec![
            "Bravo search: when was Rust 1.80 released?",
            "Bravo answer: on July 25, 2024 [1][2].",
            "Announcing Rust 1.80.0 | Rust Blog: https://blog.rust-lang.org/2024/07/25/Rust-1.80.0.html",
            "releases.rs: https://releases.rs/docs/1.80.0/",
        ],
    });

    // --- C: PearAI Creator (aider), as versions before February 2025 saved it, with its
    // own list `aiderHistory`; the title is PearAI's placeholder, so the index's is taken.
    let c = json!({"history": [], "perplexityHistory": [],
        "aiderHistory": [prompt(json!("Charlie creator: make a todo app")),
                         reply("Charlie creator reply: scaffolded the app.", "aider")],
        "title": "New Session", "sessionId": C, "workspaceDirectory": "/home/dev/charlie"});
    put(&h, &file(C), c.to_string());
    sessions.push(Written {
        dir: format!("pearai/{C}"),
        lines: vec![
            "Charlie creator: make a todo app",
            "Charlie creator reply: scaffolded the app.",
        ],
    });

    // --- D: both lists hold a conversation (another writer, or a file edited by hand).
    let d = doc(
        vec![
            prompt(json!("Delta chat prompt")),
            reply("Delta chat reply", A_MODEL),
        ],
        vec![
            prompt(json!("Delta search prompt")),
            reply("Delta search reply", B_MODEL),
        ],
        "Delta: two conversations",
        D,
        "/home/dev/delta",
    );
    put(&h, &file(D), d.to_string());
    sessions.push(Written {
        dir: format!("pearai/{D}"),
        lines: vec![
            "Delta chat prompt",
            "Delta chat reply",
            "Delta search prompt",
            "Delta search reply",
        ],
    });

    // --- E: a search cut while PearAI rewrote it: the first question and answer are whole.
    let e = doc(
        vec![],
        vec![
            prompt(json!("Echo search: before the cut")),
            reply("Echo answer: before the cut", B_MODEL),
            prompt(json!("Echo lost question after the cut")),
        ],
        "Echo: cut mid-write",
        E,
        "/home/dev/echo",
    );
    let text = e.to_string();
    let cut = text.find("Echo lost question").expect("marker") - 10;
    put(&h, &file(E), &text.as_bytes()[..cut]);
    sessions.push(Written {
        dir: format!("pearai/{E}"),
        lines: vec!["Echo search: before the cut", "Echo answer: before the cut"],
    });

    // --- F: no JSON at all.
    put(&h, &file(F), "Foxtrot garbage, no JSON here\n");
    sessions.push(Written {
        dir: format!("pearai/{F}"),
        lines: vec!["Foxtrot garbage, no JSON here"],
    });

    // --- G: lists of the wrong shape, an item of a role no version writes, a citation
    // without a URL.
    let mut gr = reply("Golf reply", A_MODEL);
    gr["citations"] = json!(["https://example.com/golf-source", {"title": ""}]);
    let g = json!({"history": [prompt(json!("Golf prompt")), gr,
                               {"message": {"role": "narrator", "content": "Golf narrator line"},
                                "contextItems": []}],
                   "perplexityHistory": "Golf search list that is no list",
                   "title": "Golf: odd shapes", "sessionId": G,
                   "workspaceDirectory": "/home/dev/golf"});
    put(&h, &file(G), g.to_string());
    sessions.push(Written {
        dir: format!("pearai/{G}"),
        lines: vec![
            "Golf prompt",
            "Golf reply",
            "- https://example.com/golf-source",
            "Golf narrator line",
            "Golf search list that is no list",
        ],
    });

    // The index as `HistoryManager.save` keeps it.
    let index = json!([
        {"sessionId": A, "title": "Alpha: the slow login form", "dateCreated": "1730800000000",
         "workspaceDirectory": "/home/dev/alpha", "integrationType": "continue"},
        {"sessionId": B, "title": "Bravo: the Rust release date", "dateCreated": "1730900000000",
         "workspaceDirectory": "/home/dev/bravo", "integrationType": "perplexity"},
        {"sessionId": C, "title": "Charlie: from the index", "dateCreated": "1731000000000",
         "workspaceDirectory": "/home/dev/charlie", "integrationType": "aider"},
    ]);
    put(&h, &format!("{SESSIONS}/sessions.json"), index.to_string());

    // A Continue session beside it, in Continue's own directory.
    let k = json!({"sessionId": K, "title": "Kilo: a Continue chat",
        "workspaceDirectory": "/home/dev/kilo",
        "history": [prompt(json!("Kilo prompt in Continue"))]});
    put(&h, &format!(".continue/sessions/{K}.json"), k.to_string());
    sessions.push(Written {
        dir: format!("continue/{K}"),
        lines: vec!["Kilo prompt in Continue"],
    });

    // Beside the sessions: keys in the config and `.env`, a log, the indexing data.
    put(
        &h,
        ".pearai/config.json",
        json!({"models": [{"title": "PearAI", "provider": "pearai_server", "apiKey": SECRET}]})
            .to_string(),
    );
    put(&h, ".pearai/.env", format!("PEARAI_API_KEY={SECRET}\n"));
    put(
        &h,
        ".pearai/pearai.log",
        format!("token refreshed: {SECRET}\n"),
    );
    put(
        &h,
        ".pearai/index/globalContext.json",
        json!({"token": SECRET}).to_string(),
    );
    put(
        &h,
        ".pearai/dev_data/tokens_generated.jsonl",
        format!("{{\"model\": \"{SECRET}\"}}\n"),
    );

    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-pearai", UNSET)
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
    // The index is no session; the Continue session is Continue's.
    assert_eq!(stores::entries(&out.tree, "pearai"), 7);
    assert_eq!(stores::entries(&out.tree, "continue"), 1);
}

#[test]
fn every_list_and_record_kind_lands_in_messages_jsonl() {
    let fx = write();
    let out = render(&fx);
    let a = messages(&out.tree, &format!("pearai/{A}"));
    assert_eq!(
        shapes(&a),
        [
            shape("user", "", "Alpha prompt: why is the login form slow?"),
            shape(
                "system",
                "context",
                "Login.tsx (src/Login.tsx)\n\nalpha-context: export function Login() {}"
            ),
            shape(
                "assistant",
                "",
                "Alpha reply: it re-renders on every keystroke."
            ),
            shape(
                "user",
                "",
                "Alpha prompt two: and this profile?\n[image: image/png, 600 B]"
            ),
            shape("assistant", "", "Alpha reply two: memoize the validator."),
        ]
    );
    assert_eq!(a[2]["model"], A_MODEL);

    let b = messages(&out.tree, &format!("pearai/{B}"));
    assert_eq!(
        shapes(&b),
        [
            shape("user", "", "Bravo search: when was Rust 1.80 released?"),
            shape("assistant", "", "Bravo answer: on July 25, 2024 [1][2]."),
            shape(
                "system",
                "context",
                "- Announcing Rust 1.80.0 | Rust Blog: https://blog.rust-lang.org/2024/07/25/Rust-1.80.0.html\n\
                 - releases.rs: https://releases.rs/docs/1.80.0/"
            ),
        ]
    );
    assert_eq!(b[2]["label"], "citations");
    assert_eq!(b[1]["model"], B_MODEL);

    let c = messages(&out.tree, &format!("pearai/{C}"));
    assert_eq!(
        shapes(&c),
        [
            shape("user", "", "Charlie creator: make a todo app"),
            shape(
                "assistant",
                "",
                "Charlie creator reply: scaffolded the app."
            ),
        ]
    );

    let d = messages(&out.tree, &format!("pearai/{D}"));
    assert_eq!(
        shapes(&d),
        [
            shape("user", "", "Delta chat prompt"),
            shape("assistant", "", "Delta chat reply"),
            shape(
                "system",
                "event",
                "the session's `perplexityHistory` conversation"
            ),
            shape("user", "", "Delta search prompt"),
            shape("assistant", "", "Delta search reply"),
        ]
    );
    assert_eq!(
        (&d[1]["model"], &d[4]["model"]),
        (&json!(A_MODEL), &json!(B_MODEL))
    );
    let t = transcript(&out.tree, &format!("pearai/{B}"));
    assert!(
        t.contains("releases.rs: https://releases.rs/docs/1.80.0/"),
        "{t}"
    );
    let t = transcript(&out.tree, &format!("pearai/{A}"));
    assert!(t.contains("[image: image/png, 600 B]"), "{t}");
    assert!(!t.contains("AAAAAAAA"), "no base64 in a transcript");
}

#[test]
fn titles_cwd_models_tags_and_times_come_from_the_session_and_its_index() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("pearai/{A}"));
    assert_eq!(a["agent"], "pearai");
    assert_eq!(a["unifiedId"], format!("pearai:{A}"));
    assert_eq!(a["title"], "Alpha: the slow login form");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["model"], A_MODEL);
    // 1730800000000 ms.
    assert_eq!(a["createdAt"], "2024-11-05T09:46:40.000Z");
    assert_eq!(a["tags"], json!([]));
    assert_eq!(a["source"]["format"], "pearai-session-json");
    assert_eq!(a["warnings"], json!([]), "{}", a["warnings"]);
    // PearAI keeps no usage: nothing is counted.
    assert_eq!(
        stores::tokens(&a["cost"]),
        (Some(0), Some(0), Some(0), Some(0))
    );
    let b = meta(&out.tree, &format!("pearai/{B}"));
    assert_eq!(b["tags"], json!(["integration:perplexity"]));
    assert_eq!(b["model"], B_MODEL);
    assert_eq!(b["createdAt"], "2024-11-06T13:33:20.000Z");
    let c = meta(&out.tree, &format!("pearai/{C}"));
    assert_eq!(c["tags"], json!(["integration:aider"]));
    // The file's title is the placeholder: the index's is taken.
    assert_eq!(c["title"], "Charlie: from the index");
    assert_eq!(c["cwd"], "/home/dev/charlie");
    let d = meta(&out.tree, &format!("pearai/{D}"));
    assert_eq!(d["tags"], json!(["integration:perplexity"]));
    let k = meta(&out.tree, &format!("continue/{K}"));
    assert_eq!(k["agent"], "continue");
}

#[test]
fn a_cut_file_garbage_and_odd_shapes_cost_warnings_not_sessions() {
    let fx = write();
    let out = render(&fx);
    let e = meta(&out.tree, &format!("pearai/{E}"))["warnings"].to_string();
    assert!(
        e.contains(&format!("{E}.json: cut after 2 perplexityHistory items")),
        "{e}"
    );
    let em = messages(&out.tree, &format!("pearai/{E}"));
    assert_eq!(
        shapes(&em[..2]),
        [
            shape("user", "", "Echo search: before the cut"),
            shape("assistant", "", "Echo answer: before the cut"),
        ]
    );
    let f = meta(&out.tree, &format!("pearai/{F}"))["warnings"].to_string();
    assert!(f.contains("not a JSON object"), "{f}");
    let g = meta(&out.tree, &format!("pearai/{G}"))["warnings"].to_string();
    assert!(g.contains("`perplexityHistory` is not a list"), "{g}");
    assert!(g.contains("unknown role narrator"), "{g}");
    assert!(g.contains("citations") && g.contains("no url"), "{g}");
}

#[test]
fn keys_logs_and_the_index_data_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, UNSET);
}

/// `CONTINUE_GLOBAL_DIR` is Continue's variable, which PearAI honours too: where it names
/// `~/.pearai`, the sessions there are Continue's store's, shown once.
#[test]
fn a_shared_directory_is_read_once_as_continues() {
    let fx = write();
    let dir = tempfile::Builder::new()
        .prefix("sessfs-pearai-shared")
        .tempdir()
        .expect("tmp");
    let tree = dir.path().join("tree");
    let o = fx
        .home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("CONTINUE_GLOBAL_DIR", fx.home.path().join(".pearai"))
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!tree.join("pearai").exists());
    stores::assert_only_in(
        &tree,
        "Alpha reply two: memoize",
        ".",
        &format!("continue/{A}"),
    );
    assert_eq!(stores::entries(&tree, "continue"), 7);
}

#[test]
fn doctor_names_pearai_and_where_it_found_it() {
    let fx = write();
    let mut c = fx.home.command(&["doctor"]);
    c.env_remove("CONTINUE_GLOBAL_DIR");
    let text = stdout(&c.output().expect("doctor"));
    assert!(
        text.contains(&format!("{:<9} 7 sessions", "pearai")),
        "{text}"
    );
    assert!(text.contains(".pearai/sessions"), "{text}");
}

#[test]
fn mounted_sessions_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m: &Mount| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["pearai"], 20, SECRET, &format!("pearai/{A}"));
    });
}

/// PearAI rewrites a session's file whole after each reply and writes one per new session:
/// both show through the mount within a second.
#[test]
fn a_rewritten_session_and_a_new_session_show_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("pearai/{B}/transcript.md"));
    assert!(stores::file_contains(&t, "Bravo answer"), "{}", t.display());
    let path = fx.home.path().join(file(B));
    let mut d: Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    let list = d["perplexityHistory"].as_array_mut().expect("list");
    list.push(prompt(json!("Bravo fresh search after the mount")));
    list.push(reply("Bravo fresh answer", B_MODEL));
    std::fs::write(&path, d.to_string()).expect("write");
    stores::assert_within_a_second("rewritten session", || {
        stores::file_contains(&t, "Bravo fresh search after the mount")
    });
    let h = "7e0a0000-0000-4000-8000-000000000011";
    let new = doc(
        vec![prompt(json!("Hotel: started after the mount"))],
        vec![],
        "Hotel",
        h,
        "/home/dev/hotel",
    );
    put(fx.home.path(), &file(h), new.to_string());
    stores::assert_within_a_second("new session", || {
        stores::file_contains(
            &m.path().join(format!("pearai/{h}/transcript.md")),
            "Hotel: started after the mount",
        )
    });
}

/// The bundled sample (`fixtures/home/.pearai/sessions/`): a chat and a search, each line
/// in its one session, no warning. The lines are the sample's own text.
#[test]
fn bundled_samples_show_the_sessions() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-pearai-samples")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .env_remove("CONTINUE_GLOBAL_DIR")
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", stderr(&o));
    let chat = "pearai/3f6b1c2e-8d4a-4e7b-9c15-6a2d0e9f4b71";
    let search = "pearai/9a2e4d60-1b7c-4f3e-8a59-c4d2b7e1f083";
    stores::assert_session_holds(
        &tree,
        chat,
        &[
            "Save the draft when I press Ctrl+S in the editor.",
            "export function DraftEditor({ draft, onSave }) {",
            "call `event.preventDefault()` and `onSave(textarea.value)`",
            "Also show a short toast once the save has finished.",
            "toast.success('Draft saved')",
        ],
        &[] as &[&str],
    );
    stores::assert_session_holds(
        &tree,
        search,
        &[
            "Which key does KeyboardEvent.metaKey report on Windows?",
            "is true while the Windows logo key is held",
            "KeyboardEvent: metaKey property - Web APIs | MDN: https://developer.mozilla.org/en-US/docs/Web/API/KeyboardEvent/metaKey",
        ],
        &[] as &[&str],
    );
    for dir in [chat, search] {
        let m = meta(&tree, dir);
        assert_eq!(m["warnings"], json!([]), "{dir}: {}", m["warnings"]);
    }
    assert_eq!(meta(&tree, chat)["title"], "Ctrl+S saves the draft");
    assert_eq!(meta(&tree, chat)["model"], "claude-3-5-sonnet-20241022");
    assert_eq!(
        meta(&tree, search)["tags"],
        json!(["integration:perplexity"])
    );
    assert_eq!(stores::entries(&tree, "pearai"), 2);
}
