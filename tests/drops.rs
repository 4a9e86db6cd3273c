//! Nothing a store holds is dropped silently: a record sessfs cannot parse costs a counted
//! warning in `meta.json` and its raw text stays in the session, and the text Claude Code
//! wraps around a slash command stays in `transcript.md`.
//!
//! Each test writes its store by hand (a Hermes `state.db` from the project's DDL in `fixtures/schema/`, a Claude
//! Code JSONL written line by line), runs `sessfs render` with that store as `$HOME`, and
//! checks the rendered files against the strings it wrote.

use rusqlite::{params, Connection};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `sessfs render <out>` with `home` as `$HOME` and no agent variable from outside.
fn render(home: &Path) -> PathBuf {
    let out = home.join("rendered");
    let run = Command::new(env!("CARGO_BIN_EXE_sessfs"))
        .arg("render")
        .arg(&out)
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUST_LOG", "warn")
        .output()
        .expect("run sessfs render");
    assert!(
        run.status.success(),
        "sessfs render failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    out
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn warnings(meta: &Path) -> Vec<String> {
    let v: Value = serde_json::from_str(&read(meta)).expect("meta.json is JSON");
    v["warnings"]
        .as_array()
        .expect("warnings is a list")
        .iter()
        .map(|w| w.as_str().expect("a warning is text").to_string())
        .collect()
}

/// Hermes' schema v30, as the project writes it for every Hermes test.
const HERMES_DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/hermes-v30.sql"
));

const HERMES_ID: &str = "20260301_090000_dddd0001";

/// Two assistant rows whose `tool_calls` JSON was cut off mid-write, one whose call
/// arguments were: each row's text, and the cut JSON verbatim, must be in the transcript.
#[test]
fn hermes_rows_with_truncated_tool_calls_are_counted_and_shown() {
    let home = tempfile::tempdir().expect("temp home");
    let db = home.path().join(".hermes/state.db");
    std::fs::create_dir_all(db.parent().expect("parent")).expect("mkdir");
    let c = Connection::open(&db).expect("create state.db");
    c.execute_batch(HERMES_DDL).expect("schema");
    c.execute(
        "INSERT INTO sessions (id, source, model, started_at, cwd) VALUES (?1, 'cli', 'gpt-5', 1772355600.0, '/p')",
        [HERMES_ID],
    )
    .expect("session");
    let cut_a = r#"[{"id": "call_cut_a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"conf"#;
    let cut_b =
        r#"[{"id": "call_cut_b", "type": "function", "function": {"name": "terminal", "argu"#;
    let cut_args = r#"{"command": "cat /etc/hos"#;
    let whole_with_cut_args = serde_json::json!([{"id": "call_args", "type": "function",
        "function": {"name": "terminal", "arguments": cut_args}}])
    .to_string();
    let rows: [(&str, &str, Option<&str>, Option<&str>); 7] = [
        ("user", "drops prompt: where is the port set", None, None),
        (
            "assistant",
            "drops reply one: reading the config",
            Some(cut_a),
            None,
        ),
        (
            "tool",
            "drops tool output: port = 8080",
            None,
            Some("call_cut_a"),
        ),
        (
            "assistant",
            "drops reply two: checking the shell",
            Some(cut_b),
            None,
        ),
        (
            "assistant",
            "drops reply three: and the hosts file",
            Some(&whole_with_cut_args),
            None,
        ),
        (
            "tool",
            "drops tool output: 127.0.0.1 localhost",
            None,
            Some("call_args"),
        ),
        ("assistant", "drops answer: port 8080", None, None),
    ];
    for (i, (role, content, calls, call_id)) in rows.iter().enumerate() {
        c.execute(
            "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id, timestamp) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![HERMES_ID, role, content, calls, call_id, 1772355601.0 + i as f64],
        )
        .expect("message");
    }
    drop(c);

    let out = render(home.path());
    let dir = out.join("hermes").join(HERMES_ID);
    let transcript = read(&dir.join("transcript.md"));
    for (_, content, _, _) in &rows {
        assert!(
            transcript.contains(content),
            "{content:?} is missing from transcript.md:\n{transcript}"
        );
    }
    for raw in [cut_a, cut_b, cut_args] {
        assert!(
            transcript.contains(raw),
            "the unparsable JSON {raw:?} is not shown verbatim:\n{transcript}"
        );
    }
    let w = warnings(&dir.join("meta.json"));
    let counted = |prefix: &str| w.iter().filter(|w| w.starts_with(prefix)).count();
    assert_eq!(
        counted("2 messages rows could not be parsed: tool_calls is not JSON"),
        1,
        "one counted warning for the two cut tool_calls: {w:#?}"
    );
    assert_eq!(
        counted("1 messages rows could not be parsed: tool call arguments are not JSON"),
        1,
        "one counted warning for the cut arguments: {w:#?}"
    );
}

const CLAUDE_ID: &str = "5e1f0c2a-7b3d-4c8e-9f10-2a3b4c5d6e7f";

/// Every text a slash command's wrappers carry: the command with its arguments, the status
/// line Claude Code shows while it runs (`<command-message>`), and a local command's output.
#[test]
fn claude_slash_command_wrappers_keep_their_text() {
    let home = tempfile::tempdir().expect("temp home");
    let dir = home.path().join(".claude/projects/-p");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let lines = [
        r#"{"type":"user","uuid":"u1","sessionId":"5e1f0c2a-7b3d-4c8e-9f10-2a3b4c5d6e7f","cwd":"/p","timestamp":"2026-03-01T09:00:00Z","message":{"role":"user","content":"<command-message>init is analyzing your codebase…</command-message>\n<command-name>/init</command-name>"}}"#,
        r#"{"type":"user","uuid":"u2","parentUuid":"u1","isMeta":true,"timestamp":"2026-03-01T09:00:00Z","message":{"role":"user","content":[{"type":"text","text":"Please analyze this codebase and create a CLAUDE.md file."}]}}"#,
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u2","timestamp":"2026-03-01T09:00:05Z","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Created CLAUDE.md for the drops fixture."}],"usage":{"input_tokens":10,"output_tokens":5}}}"#,
        r#"{"type":"user","uuid":"u3","parentUuid":"a1","timestamp":"2026-03-01T09:01:00Z","message":{"role":"user","content":"<command-message>orchestrator is running…</command-message>\n<command-name>/orchestrator</command-name>\n<command-args>build the drops fixture</command-args>"}}"#,
        r#"{"type":"assistant","uuid":"a2","parentUuid":"u3","timestamp":"2026-03-01T09:01:05Z","message":{"id":"m2","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Built it."}],"usage":{"input_tokens":10,"output_tokens":5}}}"#,
        r#"{"type":"user","uuid":"u4","parentUuid":"a2","timestamp":"2026-03-01T09:02:00Z","message":{"role":"user","content":"<command-name>/cost</command-name>\n<command-message>cost</command-message>\n<command-args></command-args>"}}"#,
        r#"{"type":"user","uuid":"u5","parentUuid":"u4","timestamp":"2026-03-01T09:02:00Z","message":{"role":"user","content":"<local-command-stdout>Total cost: $0.0042\nTotal duration (API): 9s</local-command-stdout>"}}"#,
    ];
    let mut body = lines.join("\n");
    body.push('\n');
    std::fs::write(dir.join(format!("{CLAUDE_ID}.jsonl")), body).expect("write jsonl");

    let out = render(home.path());
    let transcript = read(&out.join("claude").join(CLAUDE_ID).join("transcript.md"));
    for text in [
        "/init",
        "init is analyzing your codebase…",
        "Please analyze this codebase and create a CLAUDE.md file.",
        "/orchestrator build the drops fixture",
        "orchestrator is running…",
        "/cost",
        "Total cost: $0.0042",
        "Total duration (API): 9s",
    ] {
        assert!(
            transcript.contains(text),
            "{text:?} is missing from transcript.md:\n{transcript}"
        );
    }
}
