//! Fabric sessions, written here the way `fabric --session <name>` writes them
//! (danielmiessler/fabric `internal/plugins/db/fsdb/sessions.go` `SaveSession`: `json.Marshal`
//! of the session's messages, a bare array on one line, in `~/.config/fabric/sessions/
//! <name>.json`; `internal/core/chatter.go` for what each run appends), rendered with `sessfs
//! render` and mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, shape, shapes, transcript, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// An API key, planted in Fabric's `.env` and OAuth token file.
const SECRET: &str = "sk-PLANTED-fabric-key-doNotRead-0000";
/// Text of a pattern template: not a session, never listed.
const PATTERN: &str = "PLANTED pattern template, not a session";
const SESSIONS: &str = ".config/fabric/sessions";
/// 2026-03-01T10:30:00Z, the modification time given to session A.
const A_SAVED: u64 = 1_772_361_000;
const A: &str = "summarize-article";

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

fn file(name: &str) -> String {
    format!("{SESSIONS}/{name}.json")
}

/// One line, as Go's `json.Marshal` writes it.
fn encode(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("json")
}

/// Session A: three runs of the CLI, as `Chatter.BuildSession` and `Send` append them.
fn alpha() -> Value {
    json!([
        // A pattern run: the input went into the pattern, so no user message.
        {"role": "meta", "content": "--session summarize-article --pattern summarize"},
        {"role": "system", "content": "Alpha pattern: summarize the input in one sentence.\n\nINPUT:\nAlpha article text"},
        {"role": "assistant", "content": "Alpha reply: the article argues for smaller pull requests."},
        // A follow-up with a message of its own.
        {"role": "meta", "content": "--session summarize-article -m gpt-4o make it shorter"},
        {"role": "user", "content": "Alpha follow-up: make it shorter"},
        {"role": "assistant", "content": "Alpha reply two: keep pull requests small."},
        // A run with no input: Fabric sends a one-space prompt.
        {"role": "meta", "content": "--session summarize-article"},
        {"role": "user", "content": " "},
        {"role": "assistant", "content": "Alpha reply three: nothing new was asked."}
    ])
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut sessions = Vec::new();

    let pa = put(&h, &file(A), encode(&alpha()));
    let f = std::fs::File::options()
        .write(true)
        .open(&pa)
        .expect("open");
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(A_SAVED))
        .expect("mtime");
    sessions.push(Written {
        dir: format!("fabric/{A}"),
        lines: vec![
            "fabric --session summarize-article --pattern summarize",
            "Alpha pattern: summarize the input in one sentence.",
            "Alpha article text",
            "Alpha reply: the article argues for smaller pull requests.",
            "fabric --session summarize-article -m gpt-4o make it shorter",
            "Alpha follow-up: make it shorter",
            "Alpha reply two: keep pull requests small.",
            "Alpha reply three: nothing new was asked.",
        ],
        outputs: vec![],
    });

    // --- B: a raw run with an attached image (`-a`), the content an array of parts.
    let png = format!("data:image/png;base64,{}", "A".repeat(4000));
    let b = json!([
        {"role": "meta", "content": "--session bravo-image --raw -a shot.png describe it"},
        {"role": "user", "content": [
            {"type": "text", "text": "Bravo prompt: describe the screenshot"},
            {"type": "image_url", "image_url": {"url": png}}
        ]},
        {"role": "assistant", "content": "Bravo reply: a login form with two fields."}
    ]);
    put(&h, &file("bravo-image"), encode(&b));
    sessions.push(Written {
        dir: "fabric/bravo-image".into(),
        lines: vec![
            "Bravo prompt: describe the screenshot",
            "[image: image/png, 3.0 KB]",
            "Bravo reply: a login form with two fields.",
        ],
        outputs: vec![],
    });

    // --- C: the OpenAI fields Fabric's message type carries, as another writer (the REST
    // API's POST /sessions/:name) may save them, and what no version writes.
    let c = json!([
        {"role": "user", "content": "Charlie prompt: list the files"},
        {"role": "assistant", "content": "", "reasoning_content": "Charlie thinking: ls will do",
         "tool_calls": [{"id": "call_c1", "type": "function",
                         "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}}]},
        {"role": "tool", "tool_call_id": "call_c1", "name": "ls",
         "content": "charlie-output: README.md"},
        {"role": "assistant", "refusal": "Charlie refusal: I will not delete them"},
        {"role": "developer", "content": "Charlie developer note"},
        "Charlie stray element",
        {"role": "critic", "content": "Charlie unknown role"},
        {"role": "assistant", "content": "Charlie reply: done", "format": "markdown"}
    ]);
    put(&h, &file("charlie"), encode(&c));
    sessions.push(Written {
        dir: "fabric/charlie".into(),
        lines: vec![
            "Charlie prompt: list the files",
            "Charlie thinking: ls will do",
            "Charlie refusal: I will not delete them",
            "Charlie developer note",
            "Charlie stray element",
            "Charlie unknown role",
            "Charlie reply: done",
        ],
        outputs: vec!["charlie-output: README.md"],
    });

    // --- D: cut in the middle of its third message (`os.WriteFile` truncates, then writes).
    let d = json!([
        {"role": "user", "content": "Delta prompt: before the cut"},
        {"role": "assistant", "content": "Delta reply: also before the cut"},
        {"role": "user", "content": "Delta torn prompt that never ends"}
    ]);
    let text = String::from_utf8(encode(&d)).expect("utf-8");
    let cut = text.find("Delta torn prompt").expect("torn") + "Delta torn".len();
    put(&h, &file("delta"), &text[..cut]);
    sessions.push(Written {
        dir: "fabric/delta".into(),
        lines: vec![
            "Delta prompt: before the cut",
            "Delta reply: also before the cut",
        ],
        outputs: vec![],
    });

    // --- E: not JSON at all.
    put(&h, &file("echo"), "Echo garbage, no JSON here\n");
    sessions.push(Written {
        dir: "fabric/echo".into(),
        lines: vec!["Echo garbage, no JSON here"],
        outputs: vec![],
    });

    // --- F: Go's empty list.
    put(&h, &file("foxtrot"), "null");

    // Beside the sessions: API keys, an OAuth token, settings, patterns and contexts.
    put(
        &h,
        ".config/fabric/.env",
        format!("DEFAULT_VENDOR=OpenAI\nDEFAULT_MODEL=gpt-4o\nOPENAI_API_KEY={SECRET}\n"),
    );
    put(
        &h,
        ".config/fabric/.anthropic_oauth",
        format!("{{\"access_token\": \"{SECRET}\"}}"),
    );
    put(
        &h,
        ".config/fabric/config.yaml",
        format!("model: {SECRET}\n"),
    );
    put(
        &h,
        ".config/fabric/patterns/summarize/system.md",
        format!("# IDENTITY\n{PATTERN}\n"),
    );
    put(
        &h,
        ".config/fabric/contexts/rust.json",
        format!("[\"{PATTERN}\"]"),
    );
    put(
        &h,
        ".config/fabric/strategies/cot.json",
        format!("{{\"prompt\": \"{PATTERN}\"}}"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-fabric", &[])
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
    assert_eq!(stores::entries(&out.tree, "fabric"), 6);
}

#[test]
fn names_are_titles_and_the_mtime_is_the_only_time() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("fabric/{A}"));
    // The name given to `--session` is the id and the title.
    assert_eq!(a["title"], A);
    // Fabric saves no time: the file's modification time is the update time.
    assert_eq!(a["updatedAt"], "2026-03-01T10:30:00.000Z");
    assert_eq!(a["createdAt"], Value::Null);
    // Nor a cwd, a model or usage.
    assert_eq!(a["cwd"], Value::Null);
    assert_eq!(a["model"], Value::Null);
    assert_eq!(stores::tokens(&a["cost"]).0, Some(0));
    assert_eq!(a["warnings"], json!([]), "{}", a["warnings"]);
    let b = meta(&out.tree, "fabric/bravo-image");
    assert_eq!(b["title"], "bravo-image");
}

#[test]
fn every_message_kind_lands_in_messages_jsonl() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, &format!("fabric/{A}"));
    assert_eq!(
        shapes(&m),
        [
            shape(
                "system",
                "event",
                "fabric --session summarize-article --pattern summarize"
            ),
            shape(
                "system",
                "context",
                "Alpha pattern: summarize the input in one sentence.\n\nINPUT:\nAlpha article text"
            ),
            shape(
                "assistant",
                "",
                "Alpha reply: the article argues for smaller pull requests."
            ),
            shape(
                "system",
                "event",
                "fabric --session summarize-article -m gpt-4o make it shorter"
            ),
            shape("user", "", "Alpha follow-up: make it shorter"),
            shape(
                "assistant",
                "",
                "Alpha reply two: keep pull requests small."
            ),
            shape("system", "event", "fabric --session summarize-article"),
            // The one-space prompt shows nothing.
            shape("assistant", "", "Alpha reply three: nothing new was asked."),
        ]
    );
    assert_eq!(m[1]["label"], "system prompt");
    let t = transcript(&out.tree, &format!("fabric/{A}"));
    assert!(t.contains("### System · context"), "{t}");
    assert!(
        t.contains("Alpha reply three: nothing new was asked."),
        "{t}"
    );

    let b = messages(&out.tree, "fabric/bravo-image");
    assert_eq!(
        b[1]["content"],
        "Bravo prompt: describe the screenshot\n[image: image/png, 3.0 KB]"
    );
    assert!(
        !std::fs::read_to_string(out.tree.join("fabric/bravo-image/messages.jsonl"))
            .expect("messages")
            .contains("AAAAAAAA")
    );

    let c = messages(&out.tree, "fabric/charlie");
    assert_eq!(c[1]["thinking"], "Charlie thinking: ls will do");
    assert_eq!(
        c[1]["toolCalls"][0],
        json!({"toolCallId": "call_c1", "toolName": "ls", "input": {"path": "."}})
    );
    let r = &c[2]["toolResult"];
    assert_eq!(
        (&r["toolCallId"], &r["toolName"], &r["isError"]),
        (&json!("call_c1"), &json!("ls"), &json!(false))
    );
    assert_eq!(
        c[3]["content"],
        "Refusal: Charlie refusal: I will not delete them"
    );
    assert_eq!(
        (&c[4]["kind"], &c[4]["label"], &c[4]["content"]),
        (
            &json!("context"),
            &json!("developer message"),
            &json!("Charlie developer note")
        )
    );
}

#[test]
fn odd_elements_a_cut_file_and_garbage_cost_warnings_not_sessions() {
    let fx = write();
    let out = render(&fx);
    let c = meta(&out.tree, "fabric/charlie");
    let w = c["warnings"].to_string();
    assert!(w.contains("not an object"), "{w}");
    assert!(w.contains("unknown role critic"), "{w}");
    assert!(w.contains("does not read: format"), "{w}");
    let d = meta(&out.tree, "fabric/delta");
    let w = d["warnings"].to_string();
    assert!(w.contains("delta.json: cut after 2 messages"), "{w}");
    let dm = messages(&out.tree, "fabric/delta");
    assert_eq!(dm[0]["content"], "Delta prompt: before the cut");
    assert_eq!(dm[1]["content"], "Delta reply: also before the cut");
    let e = meta(&out.tree, "fabric/echo");
    assert!(
        e["warnings"].to_string().contains("not a JSON array"),
        "{}",
        e["warnings"]
    );
    let f = meta(&out.tree, "fabric/foxtrot");
    assert_eq!(f["warnings"], json!([]), "{}", f["warnings"]);
    assert_eq!(messages(&out.tree, "fabric/foxtrot").len(), 0);
}

#[test]
fn keys_settings_and_patterns_are_never_read() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_nowhere(&out.tree, PATTERN);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
    stores::assert_list_hides(&fx.home, PATTERN, &[]);
}

/// A run appends to the array and Fabric rewrites the file: the transcript only grows.
#[test]
fn another_run_only_appends_to_the_transcript() {
    let fx = write();
    let before = render(&fx);
    let t0 = transcript(&before.tree, &format!("fabric/{A}"));
    let mut more = alpha();
    let list = more.as_array_mut().expect("array");
    list.push(json!({"role": "meta", "content": "--session summarize-article in French"}));
    list.push(json!({"role": "user", "content": "Alpha prompt four: in French"}));
    list.push(json!({"role": "assistant", "content": "Alpha reply four: gardez-les petites."}));
    put(fx.home.path(), &file(A), encode(&more));
    let after = render(&fx);
    let t1 = transcript(&after.tree, &format!("fabric/{A}"));
    assert!(t1.contains("Alpha reply four: gardez-les petites."), "{t1}");
    let first = t0.find("### ").expect("a message");
    assert!(t1[first..].starts_with(&t0[first..]), "{t1}");
}

#[test]
fn doctor_names_fabric_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(text.contains("fabric"), "{text}");
    assert!(text.contains("6 sessions"), "{text}");
    assert!(text.contains(".config/fabric/sessions"), "{text}");
}

#[test]
fn mounted_sessions_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m: &Mount| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["fabric"], 8, SECRET, &format!("fabric/{A}"));
    });
}

/// The bundled sample (`fixtures/home/.config/fabric/sessions/`): a pattern run and a
/// follow-up, each line in the one session, its name as title and no warning. The lines are
/// the sample's own text.
#[test]
fn bundled_sample_shows_the_session() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-fabric-samples")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let dir = "fabric/release-notes";
    stores::assert_session_holds(
        &tree,
        dir,
        &[
            "fabric --session release-notes --pattern write_release_notes",
            "You write short release notes for developers from a list of changes.",
            "feat: add --dry-run to the sync command",
            "- Uploads are retried when the connection drops.",
            "add a title line",
            "## Release 2.4",
        ],
        &[] as &[&str],
    );
    let m = meta(&tree, dir);
    assert_eq!(m["title"], "release-notes");
    assert_eq!(m["warnings"], json!([]), "{}", m["warnings"]);
    assert_eq!(stores::entries(&tree, "fabric"), 1);
}

/// Fabric rewrites a session's file whole at each run: the new prompt shows within a second
/// on a mount.
#[test]
fn a_rewritten_session_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("fabric/{A}/transcript.md"));
    assert!(t.exists(), "{}", t.display());
    let path = fx.home.path().join(file(A));
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    doc.as_array_mut()
        .expect("array")
        .push(json!({"role": "user", "content": "Alpha fresh prompt after the mount"}));
    std::fs::write(&path, encode(&doc)).expect("write");
    stores::assert_within_a_second("rewritten session", || {
        stores::file_contains(&t, "Alpha fresh prompt after the mount")
    });
}
