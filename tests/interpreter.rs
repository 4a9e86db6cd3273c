//! Open Interpreter conversations, written here the way Open Interpreter writes them
//! (OpenInterpreter/open-interpreter `interpreter/core/core.py`: `json.dump(self.messages)`
//! into `<first words>__<%B_%d_%Y_%H-%M-%S>.json` under platformdirs'
//! `user_config_dir("open-interpreter")/conversations`; the 0.1 releases' flat messages under
//! `Open Interpreter/conversations` in the config or data directory), rendered with
//! `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser. Names are
//! written by hand the way `_streaming_chat` makes them from the first prompt.

mod common;

use common::stores::{self, meta, put, read, Rendered};
use common::{stderr, stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A credential, planted where Open Interpreter keeps its profiles and old config.
const SECRET: &str = "oi-PLANTED-openai-key-doNotRead-0000";

const NEW: &str = ".config/open-interpreter/conversations";
const MAC: &str = "Library/Application Support/open-interpreter/conversations";
const OLD_CONFIG: &str = ".config/Open Interpreter/conversations";
const OLD_DATA: &str = ".local/share/Open Interpreter/conversations";

/// "Alpha prompt: fix the parser"[:25] = "Alpha prompt: fix the par", split, last word dropped,
/// ':' removed.
const A: &str = "Alpha_prompt_fix_the__March_04_2026_09-15-00";
const B: &str = "Bravo_prompt_list_the__October_02_2023_14-30-00";
const D: &str = "Delta_prompt_before_the__March_05_2026_10-00-00";
const E: &str = "Echo_broken__March_06_2026_11-00-00";
/// 0.1.5 named a conversation by its time alone.
const F: &str = "September_23_2023_18-01-02";
const G: &str = "Golf_prompt_on_a__May_01_2025_08-00-00";

/// A tiny PNG's base64 (8 bytes decoded).
const PNG: &str = "iVBORw0KGgo=";

fn write() -> Home {
    let home = Home::empty();
    let h = home.path().to_path_buf();

    // --- A: LMC (0.2+): a prompt with an image path, a reply, a shell call whose output
    // comes in two console blocks around an image, a python call that raised, a call the
    // user declined, a final reply; an active_line record (never saved by current
    // releases, but harmless to meet).
    let a = json!([
        {"role": "user", "type": "message", "content": "Alpha prompt: fix the parser"},
        {"role": "user", "type": "image", "format": "path", "content": "/home/dev/alpha/screen.png"},
        {"role": "assistant", "type": "message", "content": "Alpha reply: running the tests"},
        {"role": "assistant", "type": "code", "format": "shell", "content": "cargo test --quiet"},
        {"role": "computer", "type": "console", "format": "active_line", "content": 1},
        {"role": "computer", "type": "console", "format": "output", "content": "alpha-output: 3 tests failed"},
        {"role": "computer", "type": "image", "format": "base64.png", "content": PNG, "recipient": "assistant"},
        {"role": "computer", "type": "console", "format": "output", "content": "alpha-output-tail: done"},
        {"role": "assistant", "type": "code", "format": "python", "content": "open('alpha.cfg')"},
        {"role": "computer", "type": "console", "format": "output",
         "content": "Traceback (most recent call last):\n  File \"<stdin>\", line 1\nFileNotFoundError: alpha-error: no such file"},
        {"role": "assistant", "type": "code", "format": "shell", "content": "rm -rf alpha-target"},
        {"role": "user", "type": "message", "content": "I have declined to run this code."},
        {"role": "assistant", "type": "message", "content": "Alpha reply two: fixed"}
    ]);
    put(&h, &format!("{NEW}/{A}.json"), a.to_string());
    // The copy 0.2.1's migration leaves in the old directory: hidden by the one above.
    put(
        &h,
        &format!("{OLD_CONFIG}/{A}.json"),
        json!([{"role": "user", "type": "message", "content": "Alpha stale copy"}]).to_string(),
    );

    // --- B: the 0.1 shape: code, language and output in the reply's own object.
    let b = json!([
        {"role": "user", "message": "Bravo prompt: list the files"},
        {"role": "assistant", "message": "Bravo reply: listing", "language": "shell",
         "code": "ls", "output": "bravo-output: Cargo.toml src"},
        {"role": "assistant", "message": "Bravo reply two: done"}
    ]);
    put(&h, &format!("{OLD_CONFIG}/{B}.json"), b.to_string());

    // --- D: cut mid-rewrite.
    let d = "[{\"role\": \"user\", \"type\": \"message\", \"content\": \"Delta prompt before the cut\"}, \
             {\"role\": \"assistant\", \"type\": \"message\", \"content\": \"Delta reply cut h";
    put(&h, &format!("{NEW}/{D}.json"), d);

    // --- E: not JSON at all.
    put(&h, &format!("{NEW}/{E}.json"), "{not json");

    // --- F: 0.1.5 in the data directory, named by its time alone.
    let f = json!([
        {"role": "user", "message": "Foxtrot prompt: the oldest release"},
        {"role": "assistant", "message": "Foxtrot reply: hello from 0.1.5"}
    ]);
    put(&h, &format!("{OLD_DATA}/{F}.json"), f.to_string());

    // --- G: macOS directory; a record of no known kind.
    let g = json!([
        {"role": "user", "type": "message", "content": "Golf prompt on a Mac"},
        {"role": "computer", "type": "confirmation", "format": "execution",
         "content": {"type": "code", "format": "shell", "content": "golf-unknown-kind"}},
        {"role": "assistant", "type": "message", "content": "Golf reply from macOS"}
    ]);
    put(&h, &format!("{MAC}/{G}.json"), g.to_string());

    put(
        &h,
        ".config/open-interpreter/profiles/default.yaml",
        format!("llm:\n  model: gpt-4o\n  api_key: {SECRET}\nversion: 0.2.5\n"),
    );
    put(
        &h,
        ".config/Open Interpreter/config.yaml",
        format!("api_key: {SECRET}\n"),
    );
    put(
        &h,
        ".cache/open-interpreter/contribute.json",
        format!("{{\"note\": \"{SECRET}\"}}"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    home
}

/// `sessfs render` in UTC, so the local times in the file names read as written.
fn render(home: &Home) -> Rendered {
    let dir = tempfile::Builder::new()
        .prefix("sessfs-interpreter")
        .tempdir()
        .expect("tmp");
    let tree = dir.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("TZ", "UTC")
        .output()
        .expect("run");
    assert!(o.status.success(), "{}", stderr(&o));
    Rendered { dir, tree }
}

fn messages(tree: &Path, id: &str) -> Vec<Value> {
    read(tree, &format!("interpreter/{id}/messages.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).expect("messages.jsonl line"))
        .collect()
}

fn find<'a>(ms: &'a [Value], text: &str) -> &'a Value {
    ms.iter()
        .find(|m| m.to_string().contains(text))
        .unwrap_or_else(|| panic!("{text} not in messages.jsonl"))
}

fn dir(id: &str) -> String {
    format!("interpreter/{id}")
}

#[test]
fn every_conversation_is_listed_with_its_title_and_times() {
    let home = write();
    let out = render(&home);
    // A, B, D, E, F, G; the stale copy of A is not a session of its own.
    assert_eq!(stores::entries(&out.tree, "interpreter"), 6);
    let a = meta(&out.tree, &dir(A));
    assert_eq!(a["title"], "Alpha prompt fix the");
    assert_eq!(a["createdAt"], "2026-03-04T09:15:00.000Z");
    assert_eq!(a["source"]["formatVersion"], "lmc");
    let b = meta(&out.tree, &dir(B));
    assert_eq!(b["title"], "Bravo prompt list the");
    assert_eq!(b["createdAt"], "2023-10-02T14:30:00.000Z");
    assert_eq!(b["source"]["formatVersion"], "0.1");
    let f = meta(&out.tree, &dir(F));
    // No words in the name: the first prompt names it.
    assert_eq!(f["title"], "Foxtrot prompt: the oldest release");
    assert_eq!(f["createdAt"], "2023-09-23T18:01:02.000Z");
    assert_eq!(meta(&out.tree, &dir(G))["title"], "Golf prompt on a");
}

#[test]
fn prompts_replies_and_outputs_land_in_their_conversation() {
    let home = write();
    let out = render(&home);
    let t = &out.tree;
    stores::assert_session_holds(
        t,
        &dir(A),
        &[
            "Alpha prompt: fix the parser",
            "/home/dev/alpha/screen.png",
            "Alpha reply: running the tests",
            "cargo test --quiet",
            "rm -rf alpha-target",
            "Alpha reply two: fixed",
        ],
        &[
            "alpha-output: 3 tests failed",
            "alpha-output-tail: done",
            "alpha-error: no such file",
        ],
    );
    stores::assert_session_holds(
        t,
        &dir(B),
        &[
            "Bravo prompt: list the files",
            "Bravo reply: listing",
            "Bravo reply two: done",
        ],
        &["bravo-output: Cargo.toml src"],
    );
    stores::assert_session_holds(
        t,
        &dir(F),
        &[
            "Foxtrot prompt: the oldest release",
            "Foxtrot reply: hello from 0.1.5",
        ],
        &[] as &[&str],
    );
    stores::assert_session_holds(
        t,
        &dir(G),
        &["Golf prompt on a Mac", "Golf reply from macOS"],
        &[] as &[&str],
    );
    stores::assert_nowhere(t, "Alpha stale copy");
    let tr = read(t, &format!("{}/transcript.md", dir(A)));
    let at = |s: &str| tr.find(s).unwrap_or_else(|| panic!("{s} not in {tr}"));
    assert!(at("Alpha prompt: fix the parser") < at("Alpha reply: running the tests"));
    assert!(at("alpha-output: 3 tests failed") < at("alpha-error: no such file"));
    assert!(at("alpha-error: no such file") < at("Alpha reply two: fixed"));
}

#[test]
fn code_is_an_execute_call_and_computer_output_its_result() {
    let home = write();
    let out = render(&home);
    let a = messages(&out.tree, A);
    let prompt = find(&a, "Alpha prompt: fix the parser");
    assert_eq!(prompt["role"], "user");
    assert!(
        prompt["content"]
            .as_str()
            .is_some_and(|c| c.contains("[image] /home/dev/alpha/screen.png")),
        "{prompt}"
    );
    // The reply and the code that follows it are one assistant message.
    let reply = find(&a, "Alpha reply: running the tests");
    assert_eq!(reply["role"], "assistant");
    let call = &reply["toolCalls"][0];
    assert_eq!(call["toolName"], "execute");
    assert_eq!(call["toolCallId"], "code-3");
    assert_eq!(
        call["input"],
        json!({"language": "shell", "code": "cargo test --quiet"})
    );
    // Both console blocks and the image between them are the one result of code-3.
    let ok = find(&a, "alpha-output: 3 tests failed");
    assert_eq!(ok["toolResult"]["toolCallId"], "code-3");
    assert_eq!(ok["toolResult"]["isError"], false);
    let output = ok["toolResult"]["output"].as_str().expect("output");
    assert!(output.contains("alpha-output-tail: done"), "{output}");
    assert!(output.contains("[image: image/png, 8 B]"), "{output}");
    let failed = find(&a, "alpha-error: no such file");
    assert_eq!(failed["toolResult"]["toolCallId"], "code-8");
    assert_eq!(failed["toolResult"]["toolName"], "execute");
    assert_eq!(failed["toolResult"]["isError"], true);
    // The declined call has no result; the next prompt says so.
    let declined = find(&a, "rm -rf alpha-target");
    assert_eq!(declined["toolCalls"][0]["toolCallId"], "code-10");
    assert!(!a.iter().any(|m| m["toolResult"]["toolCallId"] == "code-10"));
    assert_eq!(find(&a, "I have declined")["role"], "user");
    let tools = read(&out.tree, &format!("{}/tools/0003-execute.md", dir(A)));
    assert!(tools.contains("no result"), "{tools}");
    let tools = read(&out.tree, &format!("{}/tools/0002-execute.md", dir(A)));
    assert!(tools.contains("| Status | error |"), "{tools}");

    let b = messages(&out.tree, B);
    let reply = find(&b, "Bravo reply: listing");
    let call = &reply["toolCalls"][0];
    assert_eq!(call["toolCallId"], "code-1");
    assert_eq!(call["input"], json!({"language": "shell", "code": "ls"}));
    assert_eq!(call["output"], "bravo-output: Cargo.toml src");
    assert_eq!(call["isError"], false);
}

#[test]
fn no_model_or_usage_is_made_up() {
    let home = write();
    let out = render(&home);
    for id in [A, B] {
        let m = meta(&out.tree, &dir(id));
        assert!(m["model"].is_null(), "{m}");
        assert!(m["cwd"].is_null(), "{m}");
        assert_eq!(stores::tokens(&m["cost"]).0, Some(0), "{}", m["cost"]);
        assert_eq!(stores::tokens(&m["cost"]).1, Some(0), "{}", m["cost"]);
    }
}

#[test]
fn torn_corrupt_and_unknown_records_cost_warnings_not_sessions() {
    let home = write();
    let out = render(&home);
    let d = meta(&out.tree, &dir(D));
    let w = d["warnings"].to_string();
    assert!(w.contains("cut after 1 records"), "{w}");
    assert!(read(&out.tree, &format!("{}/transcript.md", dir(D)))
        .contains("Delta prompt before the cut"));
    assert!(read(&out.tree, &format!("{}/unparsed.txt", dir(D))).contains("Delta reply cut h"));
    let e = meta(&out.tree, &dir(E));
    let w = e["warnings"].to_string();
    assert!(w.contains("not a JSON array"), "{w}");
    let g = meta(&out.tree, &dir(G));
    let w = g["warnings"].to_string();
    assert!(w.contains("1 records could not be parsed"), "{w}");
    assert!(w.contains("computer/confirmation"), "{w}");
    assert!(read(&out.tree, &format!("{}/transcript.md", dir(G))).contains("golf-unknown-kind"));
    let a = meta(&out.tree, &dir(A));
    let w = a["warnings"].to_string();
    assert!(w.contains("1 active_line records"), "{w}");
}

#[test]
fn profiles_config_and_contribution_cache_are_never_shown() {
    let home = write();
    let out = render(&home);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&home, SECRET, &[]);
}

#[test]
fn doctor_names_interpreter_and_where_it_found_it() {
    let home = write();
    let text = stdout(&home.sessfs(&["doctor"]));
    assert!(text.contains("interpreter 6 sessions"), "{text}");
    assert!(
        text.contains(".config/open-interpreter/conversations"),
        "{text}"
    );
}

#[test]
fn mounted_conversations_sizes_erofs_and_store_untouched() {
    let home = write();
    stores::mounted_untouched(&home, Home::snapshot, |m| {
        stores::assert_session_holds(
            m.path(),
            &dir(A),
            &["Alpha prompt: fix the parser", "Alpha reply two: fixed"],
            &["alpha-output: 3 tests failed"],
        );
        stores::assert_mount_read_only(m, &["interpreter"], 9, SECRET, &dir(A));
    });
}

/// Open Interpreter rewrites the whole file after every exchange: the new turn shows within
/// a second, after the old ones.
#[test]
fn a_rewritten_conversation_shows_within_a_second() {
    let home = write();
    let m = Mount::new(&home, &[]);
    let t = m.path().join(format!("{}/transcript.md", dir(B)));
    assert!(stores::file_contains(&t, "Bravo reply two"));
    let file = home.path().join(format!("{OLD_CONFIG}/{B}.json"));
    let mut v: Value = serde_json::from_slice(&std::fs::read(&file).expect("read")).expect("json");
    if let Some(a) = v.as_array_mut() {
        a.push(json!({"role": "user", "message": "Bravo fresh prompt after the mount"}));
    }
    std::fs::write(&file, v.to_string()).expect("write");
    stores::assert_within_a_second("rewritten conversation", || {
        stores::file_contains(&t, "Bravo fresh prompt after the mount")
    });
}
