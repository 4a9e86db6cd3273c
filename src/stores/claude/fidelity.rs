//! Golden files for what a Claude Code session holds beyond prompts and replies: injected
//! context, task notifications, slash-command sessions, titles, orphaned subagents and
//! spilled outputs, each from a small hand-made file in the shape Claude Code writes.

use super::*;
use crate::model::{MessageKind, Role};
use crate::render::{render_session, Node};

fn write(path: &Path, lines: &[&str]) {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(path, lines.join("\n") + "\n").expect("write");
}

fn file(s: &Session, path: &str) -> String {
    match render_session(s).entries.get(path) {
        Some(Node::File(b)) => String::from_utf8_lossy(&b.to_vec().unwrap()).into_owned(),
        other => panic!("{path}: {other:?}"),
    }
}

fn tree(s: &Session) -> String {
    render_session(s)
        .entries
        .iter()
        .map(|(p, n)| match n {
            Node::Dir => format!("{p}/\n"),
            Node::File(b) => format!("{p} ({} bytes)\n", b.len()),
            Node::Symlink(t) => format!("{p} -> {t}\n"),
        })
        .collect()
}

const CONTEXT: &[&str] = &[
    r##"{"type":"user","uuid":"u1","sessionId":"s","cwd":"/home/u/proj","version":"2.1.30","timestamp":"2026-01-01T10:00:00Z","message":{"role":"user","content":"<command-message>orchestrator</command-message>\n<command-name>/orchestrator</command-name>\n<command-args>build the thing</command-args>"}}"##,
    r##"{"type":"user","uuid":"u2","parentUuid":"u1","isMeta":true,"timestamp":"2026-01-01T10:00:00Z","message":{"role":"user","content":[{"type":"text","text":"# Orchestrator\nYou coordinate subagents.\n\nARGUMENTS: build the thing"}]}}"##,
    r##"{"type":"assistant","uuid":"a1","parentUuid":"u2","timestamp":"2026-01-01T10:00:05Z","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Starting the build."}],"usage":{"input_tokens":10,"output_tokens":5}}}"##,
    r##"{"type":"user","uuid":"u3","parentUuid":"a1","isMeta":true,"timestamp":"2026-01-01T10:00:06Z","message":{"role":"user","content":"Stop hook feedback:\n[~/.claude/hooks/check-git.sh]: Cannot exit with unstaged changes"}}"##,
    r##"{"type":"user","uuid":"u4","parentUuid":"u3","isMeta":true,"timestamp":"2026-01-01T10:00:07Z","message":{"role":"user","content":[{"type":"text","text":"Base directory for this skill: /home/u/.claude/skills/pdf\n\n# PDF\nUse pdftotext -layout for tables."}]}}"##,
    r##"{"type":"user","uuid":"u5","parentUuid":"u4","timestamp":"2026-01-01T10:00:08Z","message":{"role":"user","content":"<system-reminder>\nThe user opened src/main.rs in the IDE.\n</system-reminder>\nplease also fix the tests"}}"##,
    r##"{"type":"user","uuid":"u6","parentUuid":"u5","timestamp":"2026-01-01T10:00:09Z","message":{"role":"user","content":"<task-notification>\n<task-id>b7x2k</task-id>\n<output-file>/tmp/claude/tasks/b7x2k.output</output-file>\n<status>completed</status>\n<summary>Background command \"npm test\" completed (exit code 0)</summary>\n</task-notification>\nRead the output file to retrieve the result: /tmp/claude/tasks/b7x2k.output"}}"##,
    r##"{"type":"user","uuid":"u7","parentUuid":"u6","isMeta":true,"timestamp":"2026-01-01T10:00:10Z","message":{"role":"user","content":"<system-reminder>\nTodo list is empty.\n</system-reminder>"}}"##,
    r##"{"type":"assistant","uuid":"a2","parentUuid":"u7","timestamp":"2026-01-01T10:00:11Z","message":{"id":"m2","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Tests pass."}],"usage":{"input_tokens":20,"output_tokens":3}}}"##,
];

fn context_session() -> Session {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("s.jsonl");
    write(&p, CONTEXT);
    load_session(&p, "s")
}

/// Hook feedback, reminders, skill bodies and command expansions were dropped; a task
/// notification lost its status, id and the line after it.
#[test]
fn golden_injected_context_transcript() {
    insta::assert_snapshot!(file(&context_session(), "transcript.md"));
}

#[test]
fn golden_injected_context_messages() {
    insta::assert_snapshot!(file(&context_session(), "messages.jsonl"));
}

/// Context is never a prompt, a turn or the title; the slash command is all three.
#[test]
fn injected_context_is_no_turn_and_a_slash_command_is_one() {
    let s = context_session();
    assert_eq!(s.title.as_deref(), Some("/orchestrator build the thing"));
    assert_eq!(s.turn_count(), 2);
    let labels: Vec<&str> = s
        .messages
        .iter()
        .filter(|m| m.kind == MessageKind::Context)
        .map(|m| {
            assert_eq!(m.role, Role::System);
            m.label.as_deref().unwrap_or("")
        })
        .collect();
    assert_eq!(
        labels,
        [
            "command expansion",
            "hook feedback",
            "skill",
            "reminder",
            "task notification",
            "reminder"
        ]
    );
}

/// A session that starts with `/init` had no title and `turnCount` 0.
#[test]
fn golden_slash_command_session_meta() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("s.jsonl");
    write(
        &p,
        &[
            r##"{"type":"user","uuid":"u1","cwd":"/p","timestamp":"2026-01-01T10:00:00Z","message":{"role":"user","content":"<command-name>/init</command-name>\n<command-message>init is analyzing your codebase…</command-message>"}}"##,
            r##"{"type":"user","uuid":"u2","parentUuid":"u1","isMeta":true,"timestamp":"2026-01-01T10:00:00Z","message":{"role":"user","content":[{"type":"text","text":"Please analyze this codebase and create a CLAUDE.md file."}]}}"##,
            r##"{"type":"assistant","uuid":"a1","parentUuid":"u2","timestamp":"2026-01-01T10:00:05Z","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Created CLAUDE.md."}]}}"##,
            r##"{"type":"user","uuid":"u3","parentUuid":"a1","timestamp":"2026-01-01T10:00:06Z","message":{"role":"user","content":"<command-name>/clear</command-name>\n<command-message>clear</command-message>"}}"##,
        ],
    );
    let mut s = load_session(&p, "s");
    s.source.paths = vec![PathBuf::from("/tmp/s.jsonl")];
    insta::assert_snapshot!(file(&s, "meta.json"));
}

/// Title precedence: custom-title, then ai-title, then a summary of this conversation,
/// then the first real prompt.
#[test]
fn titles_follow_the_documented_precedence() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("s.jsonl");
    let body = [
        r##"{"type":"user","uuid":"u1","message":{"role":"user","content":"<command-name>/review</command-name>"}}"##,
        r##"{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"ok"}]}}"##,
    ];
    let mut lines: Vec<&str> = body.to_vec();
    write(&p, &lines);
    assert_eq!(load_session(&p, "s").title.as_deref(), Some("/review"));
    lines.insert(
        0,
        r##"{"type":"summary","summary":"Code review of the parser","leafUuid":"a1"}"##,
    );
    write(&p, &lines);
    assert_eq!(
        load_session(&p, "s").title.as_deref(),
        Some("Code review of the parser")
    );
    lines.push(r##"{"type":"ai-title","aiTitle":"Parser review"}"##);
    write(&p, &lines);
    assert_eq!(
        load_session(&p, "s").title.as_deref(),
        Some("Parser review")
    );
    lines.push(r##"{"type":"custom-title","customTitle":"My review"}"##);
    write(&p, &lines);
    assert_eq!(load_session(&p, "s").title.as_deref(), Some("My review"));
}

/// A `<uuid>/subagents/` set whose `<uuid>.jsonl` is gone was invisible.
#[test]
fn golden_orphaned_subagents() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let project = tmp.path().join("projects/-home-u-proj");
    let uuid = "0a1b2c3d-0000-4000-8000-00000000beef";
    let sub = project.join(uuid).join("subagents");
    write(
        &sub.join("agent-a1.jsonl"),
        &[
            r##"{"type":"user","uuid":"c1","isSidechain":true,"agentId":"a1","sessionId":"0a1b2c3d-0000-4000-8000-00000000beef","cwd":"/home/u/proj","timestamp":"2026-01-01T10:00:00Z","message":{"role":"user","content":"Find the flaky test"}}"##,
            r##"{"type":"assistant","uuid":"c2","parentUuid":"c1","isSidechain":true,"agentId":"a1","timestamp":"2026-01-01T10:00:05Z","message":{"id":"m1","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"It is test_retry_backoff."}]}}"##,
        ],
    );
    std::fs::write(
        sub.join("agent-a1.meta.json"),
        r##"{"agentType":"general-purpose","description":"Find the flaky test","toolUseId":"toolu_9"}"##,
    )
    .expect("write");
    write(
        &sub.join("agent-b2.jsonl"),
        &[
            r##"{"type":"user","uuid":"d1","isSidechain":true,"agentId":"b2","timestamp":"2026-01-01T10:01:00Z","message":{"role":"user","content":"Summarise the logs"}}"##,
        ],
    );
    // A live session beside it keeps its subagents to itself.
    write(
        &project.join("11111111-0000-4000-8000-000000000001.jsonl"),
        &[
            r##"{"type":"user","uuid":"x","timestamp":"2026-01-01T09:00:00Z","message":{"role":"user","content":"hello"}}"##,
        ],
    );
    let st = store(&tmp.path().join("projects"));
    let listed = st.list();
    let ids: Vec<&str> = listed.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "0a1b2c3d-0000-4000-8000-00000000beef",
            "11111111-0000-4000-8000-000000000001"
        ]
    );
    assert_eq!(listed.iter().filter(|l| l.path.is_dir()).count(), 1);
    let s = st.load(&listed[0]);
    let mut s = s;
    // Paths are the temp dir's; keep the golden file stable.
    let strip = |p: &PathBuf| {
        PathBuf::from(
            p.to_string_lossy()
                .replace(&tmp.path().display().to_string(), "/tmp"),
        )
    };
    s.source.paths = s.source.paths.iter().map(strip).collect();
    for sub in &mut s.subagents {
        if let Some(child) = sub.session.as_mut() {
            child.source.paths = child.source.paths.iter().map(strip).collect();
        }
    }
    s.warnings = s
        .warnings
        .iter()
        .map(|w| w.replace(&tmp.path().display().to_string(), "/tmp"))
        .collect();
    insta::assert_snapshot!(file(&s, "meta.json"));
    insta::assert_snapshot!("golden_orphaned_subagents_tree", tree(&s));
    insta::assert_snapshot!(
        "golden_orphaned_subagents_transcript",
        file(&s, "transcript.md")
    );
}

fn store(root: &Path) -> ClaudeStore {
    ClaudeStore::new(vec![Root::new(Agent::Claude, root, "test")])
}

/// A spilled output whose `tool-results/<id>.txt` is gone showed only its preview, silently.
#[test]
fn golden_missing_spilled_output() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("-p/s.jsonl");
    write(
        &p,
        &[
            r##"{"type":"user","uuid":"u1","timestamp":"2026-01-01T10:00:00Z","message":{"role":"user","content":"run the tests"}}"##,
            r##"{"type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2026-01-01T10:00:01Z","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"toolu_big","name":"Bash","input":{"command":"npm test"}}]}}"##,
            r##"{"type":"user","uuid":"r1","parentUuid":"a1","timestamp":"2026-01-01T10:00:09Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_big","content":"<persisted-output>\nOutput too large (52.1KB). Full output saved to: /home/u/.claude/projects/-p/s/tool-results/toolu_big.txt\n\nPreview (first 2KB):\nPASS src/a.test.ts\n</persisted-output>"}]},"toolUseResult":{"stdout":"","persistedOutputPath":"/home/u/.claude/projects/-p/s/tool-results/toolu_big.txt","persistedOutputSize":53350}}"##,
        ],
    );
    let s = load_session(&p, "s");
    insta::assert_snapshot!(file(&s, "tools/0001-Bash.md"));
    assert_eq!(
        s.warnings,
        ["spilled output of tool call toolu_big is missing: tool-results/toolu_big.txt not found; only the preview is shown"]
    );
}
