//! Golden files for the rendered session directory.
//!
//! One hand-built session exercises every rendering rule (title, thinking, sealed thinking,
//! tool calls and results, a failed tool, HTML and backticks in text, a compaction summary,
//! an execution, an image placeholder, usage and cost, a branch, a nested and a linked
//! subagent). Review the `.snap` files as Markdown: they are what users will read.

use super::{render_session, Node};
use crate::model::*;
use crate::spill::{Body, SpillTo};
use chrono::{TimeZone, Utc};
use serde_json::json;

fn at(sec: u32) -> Option<chrono::DateTime<Utc>> {
    Utc.with_ymd_and_hms(2026, 2, 3, 22, 3, sec).single()
}

fn user(sec: u32, text: &str) -> Message {
    Message {
        role: Role::User,
        content: text.into(),
        timestamp: at(sec),
        ..Default::default()
    }
}

fn assistant(sec: u32, model: &str, text: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: text.into(),
        timestamp: at(sec),
        model: Some(model.into()),
        ..Default::default()
    }
}

fn call(id: &str, name: &str, input: serde_json::Value) -> ToolCall {
    ToolCall {
        tool_call_id: id.into(),
        tool_name: name.into(),
        input,
        ..Default::default()
    }
}

fn result(sec: u32, id: &str, name: &str, output: &str, is_error: bool) -> Message {
    Message {
        role: Role::Tool,
        content: output.into(),
        timestamp: at(sec),
        tool_result: Some(ToolResult {
            tool_call_id: id.into(),
            tool_name: name.into(),
            output: output.into(),
            is_error,
        }),
        ..Default::default()
    }
}

fn usage(input: u64, output: u64, cached: u64) -> Option<TokenUsage> {
    Some(TokenUsage {
        input_tokens: input,
        output_tokens: output,
        cached_tokens: cached,
        ..Default::default()
    })
}

/// The sample session the golden files and the prefix-stability tests render.
pub(super) fn sample() -> Session {
    let mut s = Session::new(Agent::Claude, "5f1c-demo");
    s.title = Some("Fix the <parser> & its tests".into());
    s.created_at = at(0);
    s.updated_at = at(40);
    s.cwd = Some("/home/ana/proj".into());
    s.tags = vec!["demo".into()];
    s.source = Source {
        paths: vec!["/home/ana/.claude/projects/-home-ana-proj/5f1c-demo.jsonl".into()],
        format: "claude-jsonl".into(),
        format_version: Some("1.0.40".into()),
    };

    let file: String = (1..=30)
        .map(|i| format!("line {i} of parser.rs\n"))
        .collect();
    let mut m1 = assistant(10, "claude-sonnet-4-5", "I'll read the file first.");
    m1.thinking = Some("The bug is probably in **parser.rs**.\nCheck `<u8>` handling.".into());
    m1.tool_calls = vec![call(
        "toolu_01",
        "Read",
        json!({"file_path": "src/parser.rs"}),
    )];
    m1.token_usage = usage(1234, 56, 7890);
    m1.cost = Some(0.0123);

    let mut m3 = assistant(
        13,
        "claude-sonnet-4-5",
        "Here is the fix:\n```rust\nfn parse(s: &str) -> Vec<u8> { s.bytes().collect() }\n```\nRunning the tests now.",
    );
    m3.thinking = Some(SEALED_THINKING.into());
    m3.tool_calls = vec![call(
        "toolu_02",
        "Bash",
        json!({"command": "cargo test", "description": "Run tests"}),
    )];
    m3.token_usage = usage(2000, 120, 0);
    m3.cost = Some(0.02);

    let compaction = Message {
        role: Role::System,
        kind: MessageKind::CompactionSummary,
        content: "Summary: the user asked to fix the parser; the first test run failed.".into(),
        timestamp: at(20),
        ..Default::default()
    };

    let mut exec = user(21, "ls src");
    exec.kind = MessageKind::Execution;
    exec.tool_calls = vec![ToolCall {
        output: Some("main.rs\nparser.rs\n".into()),
        is_error: Some(false),
        ..call("", "bash", json!({"command": "ls src"}))
    }];

    let mut m7 = assistant(
        30,
        "claude-opus-4-1",
        "A fence in text: ```` ``` ```` and a block:\n````\n```\nnested\n```\n````\nI'll ask a subagent to review.",
    );
    m7.tool_calls = vec![ToolCall {
        output: Some("Review done: looks good.".into()),
        is_error: Some(false),
        duration_ms: Some(4200),
        ..call(
            "toolu_03",
            "Task",
            json!({"description": "Review the fix", "prompt": "Review src/parser.rs"}),
        )
    }];
    m7.token_usage = usage(300, 40, 1000);

    s.messages = vec![
        user(
            5,
            "Please fix the parser.\nIt fails on `Vec<u8>` input & <div> tags.\n[image: image/png, 12.3 KB]",
        ),
        m1,
        result(11, "toolu_01", "Read", &file, false),
        m3,
        result(
            14,
            "toolu_02",
            "Bash",
            "error[E0308]: mismatched types\n  --> src/parser.rs:3:5",
            true,
        ),
        compaction,
        exec,
        m7,
        assistant(40, "claude-opus-4-1", "All done. <b>Tests pass.</b>"),
    ];

    let mut alt = s.messages[..3].to_vec();
    alt.push(assistant(
        12,
        "claude-sonnet-4-5",
        "I'll rewrite the parser from scratch.",
    ));
    s.branches = vec![Branch {
        name: "branch-a1b2".into(),
        fork_point: Some("uuid-2".into()),
        leaf: Some("uuid-a1b2".into()),
        messages: alt,
    }];

    let mut child = Session::new(Agent::Claude, "agent-a881341");
    child.parent = Some(s.unified_id());
    child.messages = vec![
        user(31, "Review src/parser.rs"),
        assistant(35, "claude-haiku-4-5", "Looks good."),
    ];
    s.subagents = vec![
        Subagent {
            name: "agent-a881341".into(),
            unified_id: None,
            description: Some("Review the fix".into()),
            tool_call_id: Some("toolu_03".into()),
            session: Some(Box::new(child)),
        },
        Subagent {
            name: "review".into(),
            unified_id: Some("claude:9e2d/child".into()),
            description: None,
            tool_call_id: None,
            session: None,
        },
    ];
    s.warnings = vec!["line 42: unknown record type \"x-future\"".into()];
    s
}

fn file(path: &str) -> String {
    let b = render_session(&sample());
    match b.entries.get(path) {
        Some(Node::File(bytes)) => String::from_utf8_lossy(&bytes.to_vec().unwrap()).into_owned(),
        other => panic!("{path}: {other:?}"),
    }
}

#[test]
fn golden_transcript() {
    insta::assert_snapshot!(file("transcript.md"));
}

#[test]
fn golden_messages() {
    insta::assert_snapshot!(file("messages.jsonl"));
}

#[test]
fn golden_meta() {
    insta::assert_snapshot!(file("meta.json"));
}

#[test]
fn golden_tool_read() {
    insta::assert_snapshot!(file("tools/0001-Read.md"));
}

#[test]
fn golden_tool_failed() {
    insta::assert_snapshot!(file("tools/0002-Bash.md"));
}

#[test]
fn golden_branch_diff() {
    insta::assert_snapshot!(file("branches/branch-a1b2.diff"));
}

#[test]
fn golden_tree() {
    let b = render_session(&sample());
    let listing: String = b
        .entries
        .iter()
        .map(|(path, node)| match node {
            Node::Dir => format!("{path}/\n"),
            Node::File(bytes) => format!("{path} ({} bytes)\n", bytes.len()),
            Node::Symlink(t) => format!("{path} -> {t}\n"),
        })
        .collect();
    insta::assert_snapshot!(listing);
}

#[test]
fn rendering_is_deterministic() {
    assert_eq!(
        render_session(&sample()).entries,
        render_session(&sample()).entries
    );
}

/// Every message line survives `grep -F` unless it holds a character that must be escaped.
#[test]
fn message_lines_are_greppable() {
    let s = sample();
    let t = file("transcript.md");
    for m in &s.messages {
        if m.role == Role::Tool {
            continue; // shown as a preview; the full text is in tools/
        }
        for line in m.content.lines() {
            if !line.contains(['<', '>', '&']) {
                assert!(t.contains(line), "missing: {line}");
            }
        }
    }
}

/// A tool message whose text is its result's output is written once, in
/// `toolResult.output`; its `content` is empty, as in the `SessionMessage` shape.
#[test]
fn a_tool_output_is_written_once_in_messages_jsonl() {
    let m = file("messages.jsonl");
    assert_eq!(m.matches("line 17 of parser.rs").count(), 1);
    let tool_lines: Vec<&str> = m
        .lines()
        .filter(|l| l.contains(r#""role":"tool""#))
        .collect();
    assert_eq!(tool_lines.len(), 2);
    for l in tool_lines {
        assert!(l.contains(r#""content":"","#), "{l}");
    }
}

/// Tool I/O as a reader wants it: terminal escapes gone from the Markdown (kept in
/// `messages.jsonl`), file contents a tool writes shown as code with real newlines, edits
/// as a unified diff.
fn tool_io() -> Session {
    let mut s = Session::new(Agent::Claude, "tool-io");
    s.title = Some("Tool I/O".into());
    let mut a = assistant(1, "claude-sonnet-4-5", "Writing, editing, testing.");
    a.tool_calls = vec![
        call(
            "t1",
            "Write",
            json!({"file_path": "src/greet.rs", "content": "pub fn greet() {\n    println!(\"hi\");\n}\n"}),
        ),
        call(
            "t2",
            "Edit",
            json!({"file_path": "src/greet.rs", "old_string": "    println!(\"hi\");", "new_string": "    println!(\"hello\");\n    log::info!(\"greeted\");", "replace_all": false}),
        ),
        call(
            "t3",
            "MultiEdit",
            json!({"file_path": "app.py", "edits": [
                {"old_string": "import os", "new_string": "import os\nimport sys"},
                {"old_string": "x = 1", "new_string": "x = 2", "replace_all": true}
            ]}),
        ),
        call(
            "t4",
            "apply_patch",
            json!("*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n*** End Patch\n"),
        ),
        call(
            "t5",
            "write",
            json!({"path": "notes/todo.md", "content": "# Todo\n\n- ship it\n"}),
        ),
        call(
            "t6",
            "edit",
            json!({"path": "Makefile", "oldText": "all:\n\tcc main.c", "newText": "all:\n\tcc -O2 main.c"}),
        ),
        call("t7", "Bash", json!({"command": "npm test"})),
        call(
            "t8",
            "Bash",
            json!({"command": "cd app &&\n  cargo test -- --nocapture \"x\"", "description": "Run tests"}),
        ),
        call(
            "t9",
            "Task",
            json!({"description": "Look around", "prompt": "Read these:\n- src/a.rs\n- src/b.rs"}),
        ),
        call(
            "t10",
            "shell",
            json!({"command": ["bash", "-lc", "set -e\necho \"hi\""], "workdir": "/w"}),
        ),
        call(
            "t11",
            "edit",
            json!({"filePath": "a.ts", "oldString": "let a = 1;", "newString": "const a = 1;"}),
        ),
        call(
            "t12",
            "StrReplaceFile",
            json!({"path": "b.py", "edit": {"old": "x = 1", "new": "x = 2", "replace_all": true}}),
        ),
        call(
            "t13",
            "create",
            json!({"path": "c.md", "file_text": "# C\n\nsee `b.py`\n"}),
        ),
        call(
            "t14",
            "apply_patch",
            json!({"patchText": "*** Begin Patch\n*** Add File: d.txt\n+d\n*** End Patch"}),
        ),
    ];
    let out = "\u{1b}[1m\u{1b}[46m RUN \u{1b}[49m\u{1b}[22m \u{1b}[36mv1.6.0\u{1b}[39m\n\u{1b}]0;vitest\u{7}\u{1b}[32m✓\u{1b}[39m src/a.test.ts (3)\r\nbell\u{7} and null\u{0} and tab\tkept\n\u{1b}(Bdone\u{1b}[0m\n";
    s.messages = vec![
        user(0, "go"),
        a,
        result(2, "t1", "Write", "File created", false),
        result(3, "t7", "Bash", out, false),
    ];
    s
}

fn tool_io_file(path: &str) -> String {
    match render_session(&tool_io()).entries.get(path) {
        Some(Node::File(bytes)) => String::from_utf8_lossy(&bytes.to_vec().unwrap()).into_owned(),
        other => panic!("{path}: {other:?}"),
    }
}

#[test]
fn golden_tool_io_transcript() {
    let t = tool_io_file("transcript.md");
    assert!(!t.contains('\u{1b}'), "ESC in transcript.md");
    insta::assert_snapshot!(t);
}

#[test]
fn golden_tool_io_tool_files() {
    let b = render_session(&tool_io());
    let mut all = String::new();
    for (path, node) in &b.entries {
        if let (true, Node::File(bytes)) = (path.starts_with("tools/"), node) {
            let t = bytes.to_vec().unwrap();
            let t = String::from_utf8_lossy(&t);
            assert!(!t.contains('\u{1b}'), "ESC in {path}");
            all.push_str(&format!("===== {path}\n{t}"));
        }
    }
    insta::assert_snapshot!(all);
}

/// Arguments of several lines read as written, one line each, in both the transcript and
/// the tool files: the lines below are written out by hand from the inputs above.
#[test]
fn arguments_of_several_lines_read_as_written() {
    let t = tool_io_file("transcript.md");
    let lines: Vec<&str> = t.lines().collect();
    for want in [
        "cd app &&",
        "  cargo test -- --nocapture \"x\"",
        "`prompt`:",
        "- src/b.rs",
        "`command[2]`:",
        "echo \"hi\"",
        "-let a = 1;",
        "+const a = 1;",
        "-x = 1",
        "+x = 2",
        "see `b.py`",
        "+d",
    ] {
        assert!(lines.contains(&want), "{want:?} is not a line of\n{t}");
    }
    for gone in [
        "\\n",
        "\"prompt\"",
        "\"file_text\"",
        "\"patchText\"",
        "\"old\"",
    ] {
        assert!(!t.contains(gone), "{gone} still in the transcript");
    }
    // What stays JSON: the other arguments, and the edit's own option.
    for kept in [
        "\"description\": \"Run tests\"",
        "\"workdir\": \"/w\"",
        "\"replace_all\": true",
    ] {
        assert!(t.contains(kept), "{kept} is missing");
    }
    let tool = tool_io_file("tools/0008-Bash.md");
    assert!(
        tool.contains("\n`command`:\n\n```bash\ncd app &&\n"),
        "{tool}"
    );
    let m = tool_io_file("messages.jsonl");
    assert!(m.contains(r#""prompt":"Read these:\n- src/a.rs"#), "{m}");
}

#[test]
fn tool_io_messages_keep_the_bytes() {
    let m = tool_io_file("messages.jsonl");
    assert!(m.contains("\\u001b[1m\\u001b[46m RUN"), "{m}");
}

#[test]
fn files_spilled_to_disk_hold_the_same_bytes_as_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    for s in [sample(), tool_io()] {
        let mem = render_session(&s);
        // A threshold this small sends every streamed file to disk.
        let disk = super::render_session_to(&s, Some(SpillTo::new(dir.path().into(), 16)));
        assert!(matches!(
            disk.entries["messages.jsonl"],
            Node::File(Body::Disk(_))
        ));
        assert_eq!(mem.entries.len(), disk.entries.len());
        for ((path, a), (_, b)) in mem.entries.iter().zip(&disk.entries) {
            match (a, b) {
                (Node::File(a), Node::File(b)) => {
                    assert_eq!(a.to_vec().unwrap(), b.to_vec().unwrap(), "{path}")
                }
                (a, b) => assert_eq!(a, b, "{path}"),
            }
        }
    }
}

#[test]
fn an_unwritable_spill_directory_keeps_files_in_memory_with_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    // A regular file where the spill directory should be: creating it fails.
    let blocked = dir.path().join("not-a-dir");
    std::fs::write(&blocked, "x").unwrap();
    let s = tool_io();
    let mem = render_session(&s);
    let fallback = super::render_session_to(&s, Some(SpillTo::new(blocked.join("sub"), 16)));
    assert!(matches!(
        fallback.entries["messages.jsonl"],
        Node::File(Body::Mem(_))
    ));
    assert_eq!(mem.entries, fallback.entries);
}
