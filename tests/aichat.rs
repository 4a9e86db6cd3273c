//! AIChat sessions, written here the way AIChat's `Session::save` writes them (sigoden/aichat
//! `src/config/session.rs`: the `Session` struct through serde_yaml, `<name>.yaml` in the
//! sessions directory, an agent's in `agents/<agent>/sessions/`, autonamed temporary ones in
//! `sessions/_/`), rendered with `sessfs render` and mounted once.
//!
//! Every expected value comes from the YAML written below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, Rendered};
use common::{stdout, Home};
use serde_json::{json, Value};
use std::path::Path;

/// A credential, planted where AIChat keeps its provider configuration.
const SECRET: &str = "aichat-PLANTED-api-key-doNotRead-0000";
const CONFIG: &str = ".config/aichat";

const A: &str = "alpha";
const B: &str = "agents%2Fcoder%2Fbravo";
const C: &str = "_%2F20260302T090000-charlie-cut";
const D: &str = "work%2Fdelta";

/// A session after `/compress`: settings, a role, compressed history, the summary, a prompt
/// with an image, a `tool` message with three calls, a reply, an unknown role and field.
const ALPHA: &str = r#"model: openai:gpt-4o
temperature: 0.3
save_session: true
role_name: reviewer
extra_field: alpha-unknown-field
compressed_messages:
- role: system
  content: Alpha system prompt, review carefully.
- role: user
  content: Alpha old prompt before compress
- role: assistant
  content: Alpha old reply before compress
messages:
- role: system
  content: |-
    Alpha system prompt, review carefully.

    Alpha summary: the old turn is summed up here.
- role: user
  content:
  - type: text
    text: Alpha prompt with a screenshot
  - type: image_url
    image_url:
      url: data:image/png;base64,AAAAAAAA
- role: tool
  content:
    tool_results:
    - call:
        name: fs_cat
        arguments:
          path: alpha.txt
        id: call_a1
      output:
        output: alpha-output one
    - call:
        name: web_search
        arguments: '{"q": "alpha"}'
      output:
        hits:
        - alpha-output-json
    - call:
        name: notify
        arguments: {}
        id: call_a3
      output: DONE
    text: Alpha calling text
    sequence: true
- role: assistant
  content: Alpha final reply
- role: critic
  content: Alpha unknown role
data_urls:
  0a1b2c3d: /home/dev/alpha/screen.png
"#;

const BRAVO: &str = r#"model: ollama:qwen3
agent_variables:
  project: bravo-var-project
agent_instructions: Bravo agent instructions
messages:
- role: user
  content: Bravo prompt from the agent
- role: assistant
  content: Bravo reply
"#;

struct Fixture {
    home: Home,
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    put(&h, &format!("{CONFIG}/sessions/alpha.yaml"), ALPHA);
    put(
        &h,
        &format!("{CONFIG}/agents/coder/sessions/bravo.yaml"),
        BRAVO,
    );
    // Cut in the middle of its second message's double-quoted string.
    let charlie = "model: openai:gpt-4o\nmessages:\n- role: user\n  content: Charlie prompt before the cut\n- role: assistant\n  content: \"Charlie torn reply that never";
    put(
        &h,
        &format!("{CONFIG}/sessions/_/20260302T090000-charlie-cut.yaml"),
        charlie,
    );
    put(
        &h,
        &format!("{CONFIG}/sessions/work/delta.yaml"),
        "Delta garbage, no mapping here\n",
    );
    // Keys and agent configuration: never read.
    put(
        &h,
        &format!("{CONFIG}/config.yaml"),
        format!("model: openai:gpt-4o\nclients:\n- type: openai\n  api_key: {SECRET}\n"),
    );
    put(
        &h,
        &format!("{CONFIG}/.env"),
        format!("OPENAI_API_KEY={SECRET}\n"),
    );
    put(
        &h,
        &format!("{CONFIG}/agents/coder/config.yaml"),
        format!("api_key: {SECRET}\n"),
    );
    put(
        &h,
        &format!("{CONFIG}/messages.md"),
        format!("# chat\n{SECRET}\n"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-aichat", &[])
}

fn dir(id: &str) -> String {
    format!("aichat/{id}")
}

fn check_tree(tree: &Path) {
    stores::assert_session_holds(
        tree,
        &dir(A),
        &[
            "Alpha old prompt before compress",
            "Alpha old reply before compress",
            "Alpha summary: the old turn is summed up here.",
            "Alpha prompt with a screenshot",
            "Alpha calling text",
            "Alpha final reply",
            "Alpha unknown role",
            "alpha-unknown-field",
            "/home/dev/alpha/screen.png",
        ],
        &["alpha-output one", "alpha-output-json"],
    );
    stores::assert_session_holds(
        tree,
        &dir(B),
        &[
            "Bravo prompt from the agent",
            "Bravo reply",
            "Bravo agent instructions",
            "bravo-var-project",
        ],
        &[] as &[&str],
    );
    stores::assert_session_holds(
        tree,
        &dir(C),
        &["Charlie prompt before the cut"],
        &[] as &[&str],
    );
    stores::assert_session_holds(
        tree,
        &dir(D),
        &["Delta garbage, no mapping here"],
        &[] as &[&str],
    );
}

#[test]
fn render_shows_every_message_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree);
    assert_eq!(stores::entries(&out.tree, "aichat"), 4);
}

#[test]
fn compressed_history_comes_before_the_summary_then_the_rest() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, &dir(A));
    let seq: Vec<(String, String, String)> = m
        .iter()
        .map(|x| {
            (
                x["role"].as_str().unwrap_or("").to_string(),
                x["kind"].as_str().unwrap_or("").to_string(),
                x["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let find = |text: &str| {
        seq.iter()
            .position(|(_, _, c)| c == text)
            .unwrap_or_else(|| panic!("{text} not in {seq:?}"))
    };
    let sys = find("Alpha system prompt, review carefully.");
    let old = find("Alpha old prompt before compress");
    let old_reply = find("Alpha old reply before compress");
    let summary = find(
        "Alpha system prompt, review carefully.\n\nAlpha summary: the old turn is summed up here.",
    );
    let prompt = find("Alpha prompt with a screenshot\n\n[image: image/png, 6 B]");
    let calling = find("Alpha calling text");
    let last = find("Alpha final reply");
    assert!(sys < old && old < old_reply && old_reply < summary && summary < prompt);
    assert!(prompt < calling && calling < last);
    assert_eq!(seq[sys].0, "system");
    assert_eq!(seq[sys].1, "context");
    assert_eq!(m[sys]["label"], "system prompt");
    assert_eq!(seq[old].0, "user");
    assert_eq!(seq[old_reply].0, "assistant");
    assert_eq!(seq[summary].1, "compactionSummary");
    assert_eq!(seq[prompt].0, "user");
    assert_eq!(seq[last].0, "assistant");
}

#[test]
fn tool_calls_pair_with_their_results_and_none_failed() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, &dir(A));
    let call = m
        .iter()
        .find(|x| x["content"] == "Alpha calling text")
        .expect("calling reply");
    assert_eq!(call["role"], "assistant");
    assert_eq!(
        call["toolCalls"][0],
        json!({"toolCallId": "call_a1", "toolName": "fs_cat", "input": {"path": "alpha.txt"}})
    );
    assert_eq!(call["toolCalls"][1]["toolName"], "web_search");
    assert_eq!(call["toolCalls"][1]["input"], json!({"q": "alpha"}));
    let second_id = call["toolCalls"][1]["toolCallId"].as_str().expect("id");
    assert!(!second_id.is_empty());
    let results: Vec<(String, String, String, bool)> = m
        .iter()
        .filter(|x| x["role"] == "tool")
        .map(|x| {
            let r = &x["toolResult"];
            (
                r["toolCallId"].as_str().expect("id").to_string(),
                r["toolName"].as_str().expect("name").to_string(),
                r["output"].as_str().expect("output").to_string(),
                r["isError"].as_bool().expect("flag"),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            (
                "call_a1".to_string(),
                "fs_cat".to_string(),
                "alpha-output one".to_string(),
                false
            ),
            (
                second_id.to_string(),
                "web_search".into(),
                "{\n  \"hits\": [\n    \"alpha-output-json\"\n  ]\n}".into(),
                false
            ),
            ("call_a3".into(), "notify".into(), "DONE".into(), false),
        ]
    );
}

#[test]
fn model_role_agent_and_settings_come_from_the_session_file() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &dir(A));
    assert_eq!(a["sessionId"], "alpha");
    assert_eq!(a["model"], "openai:gpt-4o");
    assert_eq!(a["tags"], json!(["role:reviewer"]));
    assert_eq!(a["title"], "Alpha old prompt before compress");
    assert!(a["updatedAt"].is_string());
    // AIChat keeps no usage in a session.
    assert_eq!(stores::tokens(&a["cost"]).0, Some(0));
    let m = messages(&out.tree, &dir(A));
    let settings = m
        .iter()
        .find(|x| x["label"] == "session settings")
        .expect("settings");
    assert_eq!(settings["content"], "temperature: 0.3\nsave_session: true");
    let b = meta(&out.tree, &dir(B));
    assert_eq!(b["sessionId"], "agents/coder/bravo");
    assert_eq!(b["model"], "ollama:qwen3");
    assert_eq!(b["tags"], json!(["agent:coder"]));
    let bm = messages(&out.tree, &dir(B));
    let vars = bm
        .iter()
        .find(|x| x["label"] == "agent variables")
        .expect("variables");
    assert_eq!(vars["content"], "project: bravo-var-project");
    // An autonamed session: its name is its title.
    let c = meta(&out.tree, &dir(C));
    assert_eq!(c["sessionId"], "_/20260302T090000-charlie-cut");
    assert_eq!(c["title"], "charlie cut");
    assert!(c["createdAt"]
        .as_str()
        .is_some_and(|t| t.starts_with("2026-03-0")));
}

#[test]
fn odd_messages_a_cut_file_and_garbage_cost_warnings_not_sessions() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &dir(A));
    let w = a["warnings"].to_string();
    assert!(w.contains("unknown role critic"), "{w}");
    assert!(w.contains("unknown field extra_field"), "{w}");
    let c = meta(&out.tree, &dir(C));
    let w = c["warnings"].to_string();
    assert!(
        w.contains("20260302T090000-charlie-cut.yaml: stops parsing"),
        "{w}"
    );
    let cm = messages(&out.tree, &dir(C));
    assert_eq!(cm[0]["role"], "user");
    assert_eq!(cm[0]["content"], "Charlie prompt before the cut");
    let d = meta(&out.tree, &dir(D));
    assert!(
        d["warnings"].to_string().contains("not a YAML mapping"),
        "{}",
        d["warnings"]
    );
}

#[test]
fn keys_env_and_agent_configs_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn aichat_sessions_dir_moves_the_sessions() {
    let fx = write();
    let moved = fx.home.path().join("elsewhere");
    std::fs::create_dir_all(&moved).expect("mkdir");
    std::fs::write(moved.join("echo.yaml"), BRAVO).expect("copy");
    let o = fx
        .home
        .command(&["list", "--json"])
        .env("AICHAT_SESSIONS_DIR", &moved)
        .env("AICHAT_CONFIG_DIR", fx.home.path().join("nowhere"))
        .output()
        .expect("list");
    let list: Value = serde_json::from_str(&stdout(&o)).expect("list json");
    let ids: Vec<&str> = list
        .as_array()
        .expect("array")
        .iter()
        .filter(|s| s["agent"] == "aichat")
        .filter_map(|s| s["sessionId"].as_str())
        .collect();
    assert_eq!(ids, ["echo"]);
}

#[test]
fn mounted_sessions_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path());
        stores::assert_mount_read_only(m, &["aichat"], 8, SECRET, &dir(A));
    });
}

/// The bundled sample (`fixtures/home/.config/aichat/sessions/webapp-refactor.yaml`, written
/// by hand): each line in exactly its session. The lines are the sample file's own text.
#[test]
fn bundled_sample_shows_the_aichat_session() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-aichat-samples")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let s = "aichat/webapp-refactor";
    stores::assert_session_holds(
        &tree,
        s,
        &[
            "Where is the login form validated?",
            "the login form is validated in src/forms/login.ts on submit.",
            "Move the validation to a shared helper; here is the current screen.",
            "Reading the form first.",
            "Moved `validate` to `src/forms/shared.ts` and imported it in the login form.",
            "/home/demo/webapp/screen.png",
        ],
        &["export function validate(form) { return form.user !== \"\"; }"],
    );
    let m = meta(&tree, s);
    assert_eq!(m["model"], "openai:gpt-4o");
    assert_eq!(m["tags"], json!(["role:coder"]));
}

/// The AIChat store's glance: with nothing changed a search lists no store; a saved message,
/// a new session in a subdirectory and a deleted session are each found by the next search.
#[test]
fn aichat_changes_are_found_by_the_next_search() {
    use common::{age, logged_search};
    use std::collections::BTreeSet;
    let home = Home::empty();
    let sessions = home.path().join(".config/aichat/sessions");
    let write_session = |rel: &str, prompt: &str| {
        put(
            home.path(),
            &format!(".config/aichat/sessions/{rel}"),
            format!("model: openai:gpt-4o\nmessages:\n- role: user\n  content: {prompt}\n- role: assistant\n  content: ok\n"),
        );
    };
    write_session("alpha.yaml", "the aichatone question");
    write_session("bravo.yaml", "the aichattwo question");
    age(&sessions, 3600);
    age(&home.path().join(".config/aichat"), 3600);
    let set = |ids: &[&str]| -> BTreeSet<String> {
        ids.iter().map(|id| format!("aichat/{id}")).collect()
    };
    assert_eq!(logged_search(&home, "aichatone"), (set(&["alpha"]), false));
    assert_eq!(logged_search(&home, "aichattwo"), (set(&["bravo"]), true));
    // A message saved into a session: the file is rewritten whole.
    write_session("alpha.yaml", "the aichatone question, appendedaichat");
    assert_eq!(logged_search(&home, "appendedaichat").0, set(&["alpha"]));
    assert_eq!(
        logged_search(&home, "appendedaichat"),
        (set(&["alpha"]), true)
    );
    // A new session one directory down.
    write_session("_/20260301T100000-charlie.yaml", "the aichatthree question");
    age(&sessions.join("_"), 2400);
    age(&sessions, 2400);
    assert_eq!(
        logged_search(&home, "aichatthree").0,
        set(&["_%2F20260301T100000-charlie"])
    );
    // A deleted session.
    std::fs::remove_file(sessions.join("bravo.yaml")).expect("rm");
    age(&sessions, 1800);
    assert_eq!(logged_search(&home, "aichattwo").0, BTreeSet::new());
}

/// AIChat rewrites a session's file whole when it saves: the new reply shows within a
/// second, in its session only.
#[test]
fn a_saved_reply_shows_within_a_second() {
    let fx = write();
    let m = common::Mount::new(&fx.home, &[]);
    let t = m.path().join("aichat/alpha/transcript.md");
    assert!(stores::file_contains(&t, "Alpha"), "alpha transcript");
    let saved = ALPHA.replace(
        "  content: Alpha unknown role\n",
        "  content: Alpha unknown role\n- role: user\n  content: Alpha late prompt after the mount\n- role: assistant\n  content: Alpha late reply after the mount\n",
    );
    assert_ne!(saved, ALPHA);
    put(
        fx.home.path(),
        &format!("{CONFIG}/sessions/alpha.yaml"),
        saved,
    );
    stores::assert_within_a_second("saved reply", || {
        stores::file_contains(&t, "Alpha late reply after the mount")
    });
    let other = m.path().join("aichat/agents%2Fcoder%2Fbravo/transcript.md");
    let bravo = std::fs::read_to_string(&other).expect("bravo");
    assert!(!bravo.contains("Alpha late reply"), "{bravo}");
}
