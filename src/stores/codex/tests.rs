use super::*;
use crate::model::{MessageKind, Role, SEALED_THINKING};
use serde_json::json;

/// Project-written rollouts, each reproducing one real shape (fixtures/shapes/README.md).
const SHAPES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/shapes/codex");

const CRUD_ID: &str = "019bf700-1a2b-7c3d-8e4f-5a6b7c8d9e0f";

fn write(path: &Path, text: &str) -> PathBuf {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
    path.to_path_buf()
}

fn lines(records: &[serde_json::Value]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}

fn shape(name: &str) -> Parsed {
    let p = Path::new(SHAPES).join(name);
    parse_file(&p, &id_from_file_name(&p))
}

/// A shape fixture whose last line was cut in the middle, as when Codex is killed mid-write.
fn cut(name: &str) -> Parsed {
    let text = std::fs::read_to_string(Path::new(SHAPES).join(name)).expect("read");
    let body = text.trim_end_matches('\n');
    let last = body.rfind('\n').map_or(0, |i| i + 1);
    let keep = last + (body.len() - last) / 2;
    let dir = tempfile::tempdir().expect("tmp");
    let p = write(&dir.path().join(name), &body[..keep]);
    parse_file(&p, &id_from_file_name(&p))
}

fn line(ts: &str, kind: &str, payload: serde_json::Value) -> serde_json::Value {
    json!({"timestamp": ts, "type": kind, "payload": payload})
}

fn meta(id: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut p = json!({"id": id, "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/w",
        "originator": "codex_cli_rs", "cli_version": "0.99.0", "source": "cli"});
    if let (Some(p), Some(e)) = (p.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    line("2026-03-01T10:00:00.000Z", "session_meta", p)
}

fn user(text: &str) -> serde_json::Value {
    line(
        "2026-03-01T10:00:01.000Z",
        "response_item",
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}),
    )
}

fn assistant(text: &str) -> serde_json::Value {
    line(
        "2026-03-01T10:00:02.000Z",
        "response_item",
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}),
    )
}

fn tokens(input: u64, cached: u64, output: u64, reasoning: u64) -> serde_json::Value {
    let u = json!({"input_tokens": input, "cached_input_tokens": cached, "output_tokens": output,
        "reasoning_output_tokens": reasoning, "total_tokens": input + output});
    line(
        "2026-03-01T10:00:03.000Z",
        "event_msg",
        json!({"type": "token_count", "info": {"total_token_usage": u, "last_token_usage": u}}),
    )
}

fn texts(s: &Session, role: Role, kind: MessageKind) -> Vec<String> {
    s.messages
        .iter()
        .filter(|m| m.role == role && m.kind == kind)
        .map(|m| m.text().to_string())
        .collect()
}

fn store(root: &Path) -> CodexStore {
    CodexStore::new(vec![Root::new(Agent::Codex, root, "test")])
}

fn all_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for p in kit::entries(dir) {
        if p.is_dir() {
            all_files(&p, out);
        } else if kit::file_name(&p).ends_with(".jsonl") {
            out.push(p);
        }
    }
}

/// Every shape fixture loads with a prompt, a non-empty transcript and no warning; the cut
/// copy of one warns about its partial last line. Real rollouts of every shape are read by
/// the real-corpus suite (`tests/real.rs`, when `SESSFS_REAL_SESSIONS` names them).
#[test]
fn every_shape_fixture_loads() {
    let mut files = Vec::new();
    all_files(Path::new(SHAPES), &mut files);
    assert_eq!(files.len(), 5, "{files:?}");
    let mut parsed: Vec<(String, Parsed)> = files
        .iter()
        .map(|f| {
            (
                f.display().to_string(),
                parse_file(f, &id_from_file_name(f)),
            )
        })
        .collect();
    parsed.push(("cut exec_crud.jsonl".into(), cut("exec_crud.jsonl")));
    for (name, p) in parsed {
        let s = &p.session;
        assert!(
            s.messages.iter().any(|m| !m.text().is_empty()),
            "{name}: empty transcript"
        );
        assert!(s.turn_count() >= 1, "{name}: no prompt");
        let partial = name.starts_with("cut ");
        assert_eq!(
            s.warnings.iter().any(|w| w.contains("partial last line")),
            partial,
            "{name}: {:?}",
            s.warnings
        );
        if !partial {
            assert!(s.warnings.is_empty(), "{name}: {:?}", s.warnings);
        }
    }
}

#[test]
fn one_user_stream_and_injected_context() {
    let p = shape("exec_crud.jsonl");
    let s = &p.session;
    assert_eq!(s.id, "exec_crud");
    assert_eq!(p.head.id.as_deref(), Some(CRUD_ID));
    assert_eq!(
        texts(s, Role::User, MessageKind::Normal),
        ["write PUN.md with one pun and a footer line, show it, change the footer, then remove the file."]
    );
    let labels: Vec<&str> = s
        .messages
        .iter()
        .filter(|m| m.kind == MessageKind::Context)
        .filter_map(|m| m.label.as_deref())
        .collect();
    assert_eq!(
        labels,
        [
            "permissions instructions",
            "AGENTS.md instructions",
            "environment context"
        ]
    );
    assert!(s
        .messages
        .iter()
        .filter(|m| m.kind == MessageKind::Context)
        .all(|m| m.role == Role::System));
    // The reply, once (not also the event_msg agent_message copy).
    let replies = texts(s, Role::Assistant, MessageKind::Normal);
    let done =
        "Wrote `PUN.md`, showed it, changed the footer to a second draft, and removed the file.";
    assert_eq!(replies.iter().filter(|t| *t == done).count(), 1);
    assert_eq!(s.cwd.as_deref(), Some("/home/dev/jokes"));
    assert_eq!(s.models(), ["gpt-5.2-codex"]);
    assert_eq!(s.source.format_version.as_deref(), Some("0.91.0"));
}

#[test]
fn event_stream_is_the_fallback_only() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = write(
        &dir.path().join("rollout-x.jsonl"),
        &lines(&[
            meta("e1", json!({})),
            line(
                "2026-03-01T10:00:01.000Z",
                "event_msg",
                json!({"type": "user_message", "message": "only in events", "images": ["data:image/png;base64,AAAA"]}),
            ),
            line(
                "2026-03-01T10:00:02.000Z",
                "event_msg",
                json!({"type": "agent_message", "message": "reply in events"}),
            ),
        ]),
    );
    let s = parse_file(&f, "e1").session;
    assert_eq!(
        texts(&s, Role::User, MessageKind::Normal),
        ["only in events\n[image: image/png, 3 B]"]
    );
    assert_eq!(
        texts(&s, Role::Assistant, MessageKind::Normal),
        ["reply in events"]
    );
    assert_eq!(s.title.as_deref(), Some("only in events"));
}

#[test]
fn titles_from_the_index_newest_line_wins_else_first_prompt() {
    let dir = tempfile::tempdir().expect("tmp");
    let home = dir.path().join(".codex");
    let day = home.join("sessions/2026/03/01");
    write(
        &day.join("rollout-2026-03-01T10-00-00-00000000-0000-7000-8000-000000000001.jsonl"),
        &lines(&[
            meta("00000000-0000-7000-8000-000000000001", json!({})),
            user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
            user("fix the flaky test\nplease"),
        ]),
    );
    write(
        &day.join("rollout-2026-03-01T11-00-00-00000000-0000-7000-8000-000000000002.jsonl"),
        &lines(&[
            meta("00000000-0000-7000-8000-000000000002", json!({})),
            user("second thread"),
        ]),
    );
    write(
        &home.join(INDEX),
        &lines(&[
            json!({"id": "00000000-0000-7000-8000-000000000002", "thread_name": "Old name", "updated_at": "2026-03-01T11:00:00Z"}),
            json!({"id": "00000000-0000-7000-8000-000000000002", "thread_name": "New name", "updated_at": "2026-03-01T12:00:00Z"}),
        ]),
    );
    let st = store(&home);
    let listed = st.list();
    assert_eq!(listed.len(), 2);
    let title = |id: &str| {
        let l = listed.iter().find(|l| l.id == id).expect("listed");
        st.load(l).title
    };
    assert_eq!(
        title("00000000-0000-7000-8000-000000000001").as_deref(),
        Some("fix the flaky test")
    );
    assert_eq!(
        title("00000000-0000-7000-8000-000000000002").as_deref(),
        Some("New name")
    );
    // The VS Code extension's request, not its IDE context header.
    assert_eq!(
        shape("ide_rollout.jsonl").session.title.as_deref(),
        Some("why does go.mod ask for go 1.24? please lower it to 1.22")
    );
    // The prompt after an image wrapper titles the session, not the wrapper.
    let p = shape("images.jsonl");
    assert_eq!(
        p.session.title.as_deref(),
        Some("why is the legend cut off on the usage chart? [Image #1]")
    );
}

#[test]
fn tool_calls_pair_with_their_outputs() {
    let s = shape("exec_crud.jsonl").session;
    let results: Vec<(&str, &str, bool)> = s
        .messages
        .iter()
        .filter_map(|m| m.tool_result.as_ref())
        .map(|r| (r.tool_name.as_str(), r.tool_call_id.as_str(), r.is_error))
        .collect();
    assert_eq!(
        results,
        [
            ("exec_command", "call_pun_write", false),
            ("exec_command", "call_pun_cat", false),
            ("apply_patch", "call_pun_patch", false),
            ("exec_command", "call_pun_rm", false),
        ]
    );
    let calls: Vec<&ToolCall> = s.messages.iter().flat_map(|m| &m.tool_calls).collect();
    assert_eq!(calls[1].input, json!({"cmd": "cat /home/dev/jokes/PUN.md"}));
    // apply_patch keeps its raw patch text.
    assert!(calls[2]
        .input
        .as_str()
        .is_some_and(|t| t.starts_with("*** Begin Patch\n*** Update File:")));
    // The JSON-string output shows its `output` text.
    let patch = s
        .messages
        .iter()
        .filter_map(|m| m.tool_result.as_ref())
        .find(|r| r.tool_name == "apply_patch")
        .expect("patch result");
    assert_eq!(
        patch.output,
        "Success. Updated the following files:\nM /home/dev/jokes/PUN.md\n"
    );

    let dir = tempfile::tempdir().expect("tmp");
    let f = write(
        &dir.path().join("r.jsonl"),
        &lines(&[
            meta("t1", json!({})),
            user("go"),
            line(
                "2026-03-01T10:00:02.000Z",
                "response_item",
                json!({"type": "function_call", "name": "shell", "arguments": "not json {", "call_id": "c1"}),
            ),
            line(
                "2026-03-01T10:00:02.000Z",
                "response_item",
                json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"false\"]}", "call_id": "c2"}),
            ),
            line(
                "2026-03-01T10:00:03.000Z",
                "response_item",
                json!({"type": "function_call_output", "call_id": "c2", "output": "{\"output\":\"boom\\n\",\"metadata\":{\"exit_code\":1,\"duration_seconds\":0.1}}"}),
            ),
            line(
                "2026-03-01T10:00:03.000Z",
                "response_item",
                json!({"type": "function_call_output", "call_id": "c1", "output": {"content": "structured", "success": false}}),
            ),
            line(
                "2026-03-01T10:00:04.000Z",
                "response_item",
                json!({"type": "local_shell_call", "call_id": "c3", "status": "completed", "action": {"type": "exec", "command": ["ls"]}}),
            ),
            line(
                "2026-03-01T10:00:05.000Z",
                "response_item",
                json!({"type": "function_call_output", "call_id": "c3", "output": "Exit code: 2\nWall time: 0 seconds\nOutput:\nnope"}),
            ),
        ]),
    );
    let s = parse_file(&f, "t1").session;
    let calls: Vec<&ToolCall> = s.messages.iter().flat_map(|m| &m.tool_calls).collect();
    assert_eq!(calls[0].input, json!("not json {"));
    assert_eq!(calls[1].input, json!({"command": ["false"]}));
    assert_eq!(calls[2].tool_name, "local_shell");
    // The two calls of one reply are one message.
    assert_eq!(s.messages[1].tool_calls.len(), 2);
    let results: Vec<(&str, &str, &str, bool)> = s
        .messages
        .iter()
        .filter_map(|m| m.tool_result.as_ref())
        .map(|r| {
            (
                r.tool_call_id.as_str(),
                r.tool_name.as_str(),
                r.output.as_str(),
                r.is_error,
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("c2", "shell", "boom\n", true),
            ("c1", "shell", "structured", true),
            (
                "c3",
                "local_shell",
                "Exit code: 2\nWall time: 0 seconds\nOutput:\nnope",
                true
            ),
        ]
    );
}

#[test]
fn reasoning_summaries_are_thinking_and_encrypted_is_sealed() {
    let s = shape("exec_crud.jsonl").session;
    let thinking: Vec<&str> = s
        .messages
        .iter()
        .filter_map(|m| m.thinking.as_deref())
        .collect();
    assert_eq!(
        thinking,
        [
            "**Planning the four file steps**",
            SEALED_THINKING,
            "**Changing the footer**",
            "**Removing the file**",
        ]
    );
    // Reasoning with neither summary nor ciphertext (the VS Code extension) shows nothing.
    let v = shape("ide_rollout.jsonl").session;
    assert!(v.messages.iter().all(|m| m.thinking.is_none()));
}

#[test]
fn tokens_are_the_last_cumulative_total() {
    // Last `total_token_usage` of each file, as the fixture writer wrote it.
    let cases = [
        // input 42500 (39800 cached), output 275 (64 reasoning)
        (
            "exec_crud.jsonl",
            shape("exec_crud.jsonl"),
            (42500 - 39800, 39800, 275 - 64, 64),
        ),
        // input 39000 (30100 cached), output 610 (256 reasoning)
        (
            "images.jsonl",
            shape("images.jsonl"),
            (39000 - 30100, 30100, 610 - 256, 256),
        ),
        // input 27500 (13900 cached), output 1100 (750 reasoning)
        (
            "ide_rollout.jsonl",
            shape("ide_rollout.jsonl"),
            (27500 - 13900, 13900, 1100 - 750, 750),
        ),
        // the last line is cut; the last complete total: 33800 (31200), 240 (64)
        (
            "cut exec_crud.jsonl",
            cut("exec_crud.jsonl"),
            (33800 - 31200, 31200, 240 - 64, 64),
        ),
    ];
    for (file, p, (input, cached, output, thinking)) in cases {
        let s = resolve(CODEX, p, &[], &HashMap::new(), None, 0);
        let u = s.reported_usage.expect(file);
        assert_eq!(
            (
                u.input_tokens,
                u.cached_tokens,
                u.output_tokens,
                u.thinking_tokens
            ),
            (input, cached, output, thinking),
            "{file}"
        );
        let c = s.cost();
        assert_eq!(c.input_tokens, input, "{file}");
        assert!(s.messages.iter().all(|m| m.token_usage.is_none()));
    }
    // gpt-5.2-codex: 1.75 / 14 / 0.175 per million.
    let s = resolve(
        CODEX,
        shape("exec_crud.jsonl"),
        &[],
        &HashMap::new(),
        None,
        0,
    );
    let c = s.cost();
    let want = (2700.0 * 1.75 + 275.0 * 14.0 + 39800.0 * 0.175) / 1e6;
    assert!(
        (c.total_usd - want).abs() < 1e-9,
        "{} vs {want}",
        c.total_usd
    );
    assert!(c.estimated);
}

/// A Codex home with a parent, a fork of it and a subagent it spawned.
fn family(dir: &Path) -> PathBuf {
    let home = dir.join(".codex");
    let day = home.join("sessions/2026/03/01");
    let parent_id = "00000000-0000-7000-8000-00000000000a";
    let fork_id = "00000000-0000-7000-8000-00000000000b";
    let child_id = "00000000-0000-7000-8000-00000000000c";
    let parent_prefix = vec![
        meta(parent_id, json!({})),
        user("parent prompt one"),
        assistant("parent reply one"),
        tokens(1000, 200, 50, 10),
    ];
    let mut parent = parent_prefix.clone();
    parent.extend([
        user("parent prompt two"),
        assistant("parent reply two"),
        tokens(3000, 700, 120, 30),
    ]);
    write(
        &day.join(format!("rollout-2026-03-01T10-00-00-{parent_id}.jsonl")),
        &lines(&parent),
    );
    let mut fork = vec![meta(fork_id, json!({"forked_from_id": parent_id}))];
    fork.extend(parent_prefix);
    fork.extend([
        user("fork prompt"),
        assistant("fork reply"),
        tokens(1500, 400, 90, 20),
    ]);
    write(
        &day.join(format!("rollout-2026-03-01T11-00-00-{fork_id}.jsonl")),
        &lines(&fork),
    );
    let source = json!({"subagent": {"thread_spawn": {"parent_thread_id": parent_id, "depth": 1,
        "agent_nickname": "Scout", "agent_role": "explorer"}}});
    write(
        &day.join(format!("rollout-2026-03-01T10-30-00-{child_id}.jsonl")),
        &lines(&[
            meta(
                child_id,
                json!({"source": source, "agent_nickname": "Scout"}),
            ),
            user("child task"),
            assistant("child answer"),
            tokens(10, 0, 5, 0),
        ]),
    );
    home
}

#[test]
fn a_fork_counts_its_copied_prefix_once() {
    let dir = tempfile::tempdir().expect("tmp");
    let home = family(dir.path());
    let st = store(&home);
    let listed = st.list();
    let fork = listed
        .iter()
        .find(|l| l.id.ends_with('b'))
        .expect("fork listed");
    assert_eq!(fork.sources.len(), 2, "{:?}", fork.sources);
    let s = st.load(fork);
    assert_eq!(
        s.forked_from.as_deref(),
        Some("codex:00000000-0000-7000-8000-00000000000a")
    );
    let inherited: Vec<(bool, &str)> = s.messages.iter().map(|m| (m.inherited, m.text())).collect();
    assert_eq!(
        inherited,
        [
            (true, "parent prompt one"),
            (true, "parent reply one"),
            (false, "fork prompt"),
            (false, "fork reply"),
        ]
    );
    // 1500/400/90/20 cumulative, minus the parent's 1000/200/50/10 at the fork point.
    let u = s.reported_usage.expect("usage");
    assert_eq!(
        (
            u.input_tokens,
            u.cached_tokens,
            u.output_tokens,
            u.thinking_tokens
        ),
        (300, 200, 30, 10)
    );
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
}

#[test]
fn subagents_nest_under_their_parent() {
    let dir = tempfile::tempdir().expect("tmp");
    let home = family(dir.path());
    let st = store(&home);
    let listed = st.list();
    let ids: Vec<&str> = listed.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids.len(), 2, "the subagent is not listed: {ids:?}");
    assert!(!ids.iter().any(|i| i.ends_with('c')));
    let parent = listed.iter().find(|l| l.id.ends_with('a')).expect("parent");
    assert!(parent
        .sources
        .iter()
        .any(|p| kit::file_name(p).ends_with("c.jsonl")));
    let s = st.load(parent);
    assert_eq!(s.subagents.len(), 1);
    let sub = &s.subagents[0];
    assert_eq!(sub.name, "Scout");
    assert_eq!(sub.description.as_deref(), Some("explorer"));
    let child = sub.session.as_deref().expect("nested child");
    assert_eq!(
        texts(child, Role::User, MessageKind::Normal),
        ["child task"]
    );
    assert_eq!(
        child.parent.as_deref(),
        Some("codex:00000000-0000-7000-8000-00000000000a")
    );
    // Without its parent, the child is listed on its own, with a warning.
    std::fs::remove_file(
        home.join("sessions/2026/03/01/rollout-2026-03-01T10-00-00-00000000-0000-7000-8000-00000000000a.jsonl"),
    )
    .expect("rm parent");
    let listed = st.list();
    let orphan = listed
        .iter()
        .find(|l| l.id.ends_with('c'))
        .expect("orphan listed");
    let s = st.load(orphan);
    assert!(
        s.warnings.iter().any(|w| w.contains("subagent of")),
        "{:?}",
        s.warnings
    );
    // The fork of the missing parent warns that its tokens include the copy.
    let fork = listed.iter().find(|l| l.id.ends_with('b')).expect("fork");
    assert!(st
        .load(fork)
        .warnings
        .iter()
        .any(|w| w.contains("forked from")));
}

#[test]
fn zst_rollouts_load_and_a_plain_file_wins() {
    let dir = tempfile::tempdir().expect("tmp");
    let home = dir.path().join(".codex");
    let day = home.join("sessions/2026/03/02");
    let id = "00000000-0000-7000-8000-0000000000d1";
    let name = format!("rollout-2026-03-02T10-00-00-{id}.jsonl");
    let body = lines(&[
        meta(id, json!({})),
        user("compressed prompt"),
        assistant("compressed reply"),
    ]);
    std::fs::create_dir_all(&day).expect("mkdir");
    let zst = day.join(format!("{name}.zst"));
    std::fs::write(&zst, zstd::encode_all(body.as_bytes(), 3).expect("zstd")).expect("write");
    let st = store(&home);
    let listed = st.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, id);
    assert_eq!(listed[0].path, zst);
    let s = st.load(&listed[0]);
    assert_eq!(
        texts(&s, Role::User, MessageKind::Normal),
        ["compressed prompt"]
    );
    assert_eq!(s.source.format, "codex-jsonl-zst");

    // A plain file of the same name (Codex resumed the thread) wins.
    let plain = write(
        &day.join(&name),
        &lines(&[meta(id, json!({})), user("resumed prompt")]),
    );
    let listed = st.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].path, plain);
    assert_eq!(
        texts(&st.load(&listed[0]), Role::User, MessageKind::Normal),
        ["resumed prompt"]
    );

    // An unreadable .zst is a warning on its session, never a failure.
    let bad =
        day.join("rollout-2026-03-02T11-00-00-00000000-0000-7000-8000-0000000000d2.jsonl.zst");
    std::fs::write(&bad, b"this is not zstd").expect("write");
    let listed = st.list();
    assert_eq!(listed.len(), 2);
    let l = listed
        .iter()
        .find(|l| l.id.ends_with("d2"))
        .expect("bad zst listed");
    let s = st.load(l);
    assert!(!s.warnings.is_empty());
}

#[test]
fn corrupt_lines_are_warnings() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut text = lines(&[
        meta("c0", json!({})),
        user("first"),
        json!({"timestamp": "2026-03-01T10:00:02.000Z", "type": "world_state_v9", "payload": {"x": 1}}),
        line(
            "2026-03-01T10:00:02.000Z",
            "response_item",
            json!({"type": "hologram_call", "beam": true}),
        ),
        line(
            "2026-03-01T10:00:02.000Z",
            "event_msg",
            json!({"type": "token_count", "info": {"total_token_usage": {"input_tokens": "many"}}}),
        ),
        line(
            "2026-03-01T10:00:02.000Z",
            "response_item",
            json!({"type": "message", "role": "user", "content": 42}),
        ),
    ]);
    text.push_str("garbage that is not json\n");
    text.push_str("\u{0}\u{1}binary\n");
    text.push_str(&lines(&[assistant("still here")]));
    text.push_str("{\"timestamp\":\"2026-03-01T10:00:09.000Z\",\"type\":\"response_it");
    let f = write(&dir.path().join("r.jsonl"), &text);
    let s = parse_file(&f, "c0").session;
    assert_eq!(texts(&s, Role::User, MessageKind::Normal), ["first"]);
    assert_eq!(
        texts(&s, Role::Assistant, MessageKind::Normal),
        ["still here"]
    );
    // token_count with a wrong type, content 42, garbage, binary, partial last line, and
    // the pointer to the unread text; the unknown record and item types are silent.
    assert_eq!(s.warnings.len(), 6, "{:#?}", s.warnings);
    assert!(s.warnings[4].contains("partial last line"));
    assert!(s.warnings[5].contains("unparsed.txt"));
    let (name, unread) = &s.extra_files[0];
    assert_eq!(name, "unparsed.txt");
    assert!(unread.contains("garbage that is not json"), "{unread}");
}

#[test]
fn envelope_less_mid_2025_files_load() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = write(
        &dir.path()
            .join("rollout-2025-06-01T10-00-00-00000000-0000-4000-8000-0000000000e1.jsonl"),
        &lines(&[
            json!({"id": "00000000-0000-4000-8000-0000000000e1", "timestamp": "2025-06-01T10:00:00.000Z",
                "instructions": "Use tabs.", "git": {"branch": "main"}}),
            json!({"record_type": "state"}),
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text":
                "<environment_context>\n  <cwd>/Users/me/app</cwd>\n  <approval_policy>on-request</approval_policy>\n</environment_context>"}]}),
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "legacy prompt"}]}),
            json!({"type": "reasoning", "summary": [], "encrypted_content": "gAAAA"}),
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "legacy reply"}]}),
            json!({"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "l1"}),
            json!({"type": "function_call_output", "call_id": "l1", "output": "a\nb"}),
            json!({"record_type": "state"}),
        ]),
    );
    let p = parse_file(&f, &id_from_file_name(&f));
    let s = &p.session;
    assert_eq!(s.id, "00000000-0000-4000-8000-0000000000e1");
    assert_eq!(
        p.head.id.as_deref(),
        Some("00000000-0000-4000-8000-0000000000e1")
    );
    assert_eq!(s.source.format, "codex-legacy-jsonl");
    assert_eq!(texts(s, Role::User, MessageKind::Normal), ["legacy prompt"]);
    assert_eq!(texts(s, Role::System, MessageKind::Context)[0], "Use tabs.");
    // The envelope-less files keep the working directory only in the environment context.
    assert_eq!(s.cwd.as_deref(), Some("/Users/me/app"));
    let reply = &s.messages[3];
    assert_eq!(reply.text(), "legacy reply");
    assert_eq!(reply.thinking.as_deref(), Some(SEALED_THINKING));
    assert_eq!(reply.tool_calls.len(), 1);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.created_at, kit::parse_rfc3339("2025-06-01T10:00:00.000Z"));
}

#[test]
fn the_session_meta_cwd_wins_over_the_environment_context() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = write(
        &dir.path().join("r.jsonl"),
        &lines(&[
            meta("c1", json!({"cwd": "/from/meta"})),
            user("<environment_context>\n  <cwd>/from/context</cwd>\n</environment_context>"),
            user("hello"),
        ]),
    );
    let p = parse_file(&f, "c1");
    assert_eq!(p.session.cwd.as_deref(), Some("/from/meta"));
}

#[test]
fn mcp_text_blocks_show_their_text_and_other_outputs_stay_as_stored() {
    let dir = tempfile::tempdir().expect("tmp");
    let blocks = r#"[{"text":"1. First \"hit\"\n   https://a.example/","type":"text"},{"type":"text","text":"2. Second"}]"#;
    let annotated = r#"[{"type":"text","text":"x","annotations":{"audience":["user"]}}]"#;
    let image =
        r#"[{"type":"text","text":"x"},{"type":"image","data":"AA==","mimeType":"image/png"}]"#;
    let call = |id: &str| json!({"type": "function_call", "name": "search__query", "arguments": "{}", "call_id": id});
    let out =
        |id: &str, o: &str| json!({"type": "function_call_output", "call_id": id, "output": o});
    let f = write(
        &dir.path()
            .join("rollout-2025-08-30T10-00-00-00000000-0000-4000-8000-0000000000e2.jsonl"),
        &lines(&[
            json!({"id": "00000000-0000-4000-8000-0000000000e2", "timestamp": "2025-08-30T10:00:00.000Z"}),
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "search"}]}),
            call("a"),
            out("a", blocks),
            call("b"),
            out("b", annotated),
            call("c"),
            out("c", image),
            call("d"),
            out("d", "[]"),
        ]),
    );
    let p = parse_file(&f, "e2");
    let outputs: Vec<&str> = p
        .session
        .messages
        .iter()
        .filter_map(|m| m.tool_result.as_ref().map(|r| r.output.as_str()))
        .collect();
    assert_eq!(
        outputs,
        [
            "1. First \"hit\"\n   https://a.example/\n2. Second",
            annotated,
            image,
            "[]"
        ]
    );
}

#[test]
fn compaction_is_a_marker_and_its_history_is_not_repeated() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = write(
        &dir.path().join("r.jsonl"),
        &lines(&[
            meta("k1", json!({})),
            user("before compaction"),
            assistant("old reply"),
            line(
                "2026-03-01T10:05:00.000Z",
                "compacted",
                json!({"message": "Summary: we did things", "replacement_history": [
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "before compaction"}]},
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "old reply"}]}
                ]}),
            ),
            user("after compaction"),
        ]),
    );
    let s = parse_file(&f, "k1").session;
    let got: Vec<(MessageKind, &str)> = s.messages.iter().map(|m| (m.kind, m.text())).collect();
    assert_eq!(
        got,
        [
            (MessageKind::Normal, "before compaction"),
            (MessageKind::Normal, "old reply"),
            (MessageKind::CompactionSummary, "Summary: we did things"),
            (MessageKind::Normal, "after compaction"),
        ]
    );
}

#[test]
fn images_are_placeholders() {
    let s = shape("images.jsonl").session;
    let all: String = s.messages.iter().map(|m| m.text()).collect();
    assert!(!all.contains("base64"), "base64 kept");
    assert!(!all.contains("iVBORw0KGgo"), "image bytes kept");
    assert!(all.contains("[image: image/png, "), "no placeholder");
}

#[test]
fn discovery_and_file_names() {
    let env = Env {
        home: PathBuf::from("/h"),
        vars: Default::default(),
    };
    let got: Vec<(PathBuf, String)> = candidates(&env)
        .into_iter()
        .map(|r| (r.path, r.how))
        .collect();
    assert_eq!(
        got,
        [
            (PathBuf::from("/h/.codex"), "default".to_string()),
            (PathBuf::from("/h/.codex/sessions"), "spec".to_string()),
        ]
    );
    let env = Env {
        home: PathBuf::from("/h"),
        vars: [("CODEX_HOME".to_string(), "/c".to_string())].into(),
    };
    assert_eq!(candidates(&env)[0].path, PathBuf::from("/c"));
    assert_eq!(
        id_from_file_name(Path::new(
            "rollout-2025-01-01T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl.zst"
        )),
        "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    );
    assert_eq!(id_from_file_name(Path::new("rollout-test.jsonl")), "test");
    // The spec's flat directory and archived_sessions are listed, each file once.
    let dir = tempfile::tempdir().expect("tmp");
    let home = dir.path().join(".codex");
    write(
        &home.join("archived_sessions/rollout-2026-01-01T10-00-00-00000000-0000-7000-8000-0000000000f1.jsonl"),
        &lines(&[meta("00000000-0000-7000-8000-0000000000f1", json!({})), user("archived")]),
    );
    write(
        &home.join("sessions/flat-spec.jsonl"),
        &lines(&[meta("flat", json!({})), user("flat")]),
    );
    write(
        &home.join("history.jsonl"),
        "{\"session_id\":\"x\",\"ts\":1,\"text\":\"t\"}\n",
    );
    let st = CodexStore::new(vec![
        Root::new(Agent::Codex, &home, "default"),
        Root::new(Agent::Codex, home.join("sessions"), "spec"),
    ]);
    let mut ids: Vec<String> = st.list().into_iter().map(|l| l.id).collect();
    ids.sort();
    assert_eq!(ids, ["00000000-0000-7000-8000-0000000000f1", "flat"]);
}

/// A write keeps the listing while the written rollout's first line reads as it did when
/// listed; a first line written after the listing (a thread just started) does not.
#[test]
fn an_append_keeps_the_listing_until_the_first_line_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let day = dir.path().join("sessions/2026/03/01");
    let id = "019c0000-0000-7000-8000-000000000001";
    let done = write(
        &day.join(format!("rollout-2026-03-01T10-00-00-{id}.jsonl")),
        &lines(&[meta(id, json!({})), user("first")]),
    );
    let young = write(
        &day.join("rollout-2026-03-01T10-05-00-019c0000-0000-7000-8000-000000000002.jsonl"),
        "",
    );
    let s = store(dir.path());
    let listed = s.list();
    let of = |p: &Path| listed.iter().find(|l| l.path == p).expect("listed");
    assert_eq!(listed.len(), 2, "{listed:?}");

    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&done)
        .expect("open");
    use std::io::Write;
    f.write_all(lines(&[assistant("more")]).as_bytes())
        .expect("append");
    assert!(
        s.keeps_listing(of(&done)),
        "an append to a thread keeps it where it is"
    );

    let forked = meta(
        "019c0000-0000-7000-8000-000000000002",
        json!({"forked_from_id": id}),
    );
    std::fs::write(&young, lines(&[forked])).expect("first line");
    assert!(
        !s.keeps_listing(of(&young)),
        "a new first line may move the thread"
    );
    assert!(!s.keeps_listing(&Listed::file("x", day.join("unlisted.jsonl"), 0)));
}

/// Reasoning Codex kept only as an `agent_reasoning` event (no `reasoning` item) is shown,
/// before its reply; where the item exists, the event is its copy and is not shown twice.
#[test]
fn reasoning_kept_only_as_an_event_is_shown_once() {
    let dir = tempfile::tempdir().expect("tmp");
    let reasoning = |text: &str| {
        line(
            "2026-03-01T10:00:01.500Z",
            "event_msg",
            json!({"type": "agent_reasoning", "text": text}),
        )
    };
    let f = write(
        &dir.path().join("a.jsonl"),
        &lines(&[
            meta("c1", json!({})),
            user("plan it"),
            reasoning("Weighing the two plans"),
            assistant("Plan B."),
        ]),
    );
    let s = parse_file(&f, "c1").session;
    let thinking: Vec<(Option<&str>, &str)> = s
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| (m.thinking.as_deref(), m.text()))
        .collect();
    assert_eq!(
        thinking,
        [(Some("Weighing the two plans"), ""), (None, "Plan B.")]
    );

    let item = line(
        "2026-03-01T10:00:01.600Z",
        "response_item",
        json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Weighing the two plans"}]}),
    );
    let f = write(
        &dir.path().join("b.jsonl"),
        &lines(&[
            meta("c2", json!({})),
            user("plan it"),
            reasoning("Weighing the two plans"),
            item,
            assistant("Plan B."),
        ]),
    );
    let s = parse_file(&f, "c2").session;
    let shown = s
        .messages
        .iter()
        .filter(|m| m.thinking.as_deref() == Some("Weighing the two plans"))
        .count();
    assert_eq!(shown, 1);
}

/// Every way a record's envelope can be written reads the same: the compact line Codex
/// writes (read in place), and lines the in-place read passes to the full one (spaces, an
/// escape in the timestamp, a key after the payload, keys in another order), while a line
/// that is no JSON, compact envelope or not, is still refused.
#[test]
fn every_envelope_spelling_reads_the_same() {
    let payload = |t: &str| {
        format!(
            r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"{t}"}}]}}"#
        )
    };
    let text = [
        r#"{"timestamp":"2026-03-01T10:00:00.000Z","type":"session_meta","payload":{"id":"019bf700-0000-7000-8000-000000000001","timestamp":"2026-03-01T10:00:00.000Z","cwd":"/w","cli_version":"0.99.0"}}"#.to_string(),
        format!(r#"{{"timestamp":"2026-03-01T10:00:01.000Z","type":"response_item","payload":{}}}"#, payload("compact")),
        format!(r#"{{"timestamp": "2026-03-01T10:00:02.000Z", "type": "response_item", "payload": {}}}"#, payload("spaced")),
        format!(r#"{{"timestamp":"2026-03-01T10:00:03.000\u005a","type":"response_item","payload":{}}}"#, payload("escaped")),
        format!(r#"{{"timestamp":"2026-03-01T10:00:04.000Z","type":"response_item","payload":{},"extra":{{"x":"}}"}}}}"#, payload("key after")),
        format!(r#"{{"type":"response_item","timestamp":"2026-03-01T10:00:05.000Z","payload":{}}}"#, payload("reordered")),
        r#"{"timestamp":"2026-03-01T10:00:06.000Z","type":"world_state","payload":{"broken"}"#.to_string(),
        r#"{"timestamp":"2026-03-01T10:00:07.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"cut"}]"#.to_string(),
    ]
    .join("\n")
        + "\n";
    let dir = tempfile::tempdir().expect("tmp");
    let p = write(
        &dir.path()
            .join("rollout-2026-03-01T10-00-00-019bf700-0000-7000-8000-000000000001.jsonl"),
        &text,
    );
    let parsed = parse_file(&p, &id_from_file_name(&p));
    let s = &parsed.session;
    assert_eq!(
        texts(s, Role::User, MessageKind::Normal),
        ["compact", "spaced", "escaped", "key after", "reordered"]
    );
    let times: Vec<String> = s
        .messages
        .iter()
        .filter_map(|m| m.timestamp.map(|t| t.to_rfc3339()))
        .collect();
    assert_eq!(
        times,
        [
            "2026-03-01T10:00:01+00:00",
            "2026-03-01T10:00:02+00:00",
            "2026-03-01T10:00:03+00:00",
            "2026-03-01T10:00:04+00:00",
            "2026-03-01T10:00:05+00:00",
        ]
    );
    // The broken world_state line warns, and the last line, cut mid-write, is partial.
    assert!(
        s.warnings.iter().any(|w| w.contains("line 7")),
        "{:?}",
        s.warnings
    );
}

fn count(input: u64, output: u64, fresh: bool) -> Count {
    Count {
        total: Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        },
        fresh,
    }
}

#[test]
fn tokens_sum_the_runs_of_a_restarted_counter() {
    let io = |u: Usage| (u.input_tokens, u.output_tokens);
    // One run: the last total.
    assert_eq!(
        io(spent(&[count(10, 1, true), count(30, 3, false)])),
        (30, 3)
    );
    // Every Code restarts its counter at a compaction or a resume with the next reply's own
    // usage (fresh), even when that is above the old total; a total below the one before is
    // a restart too; an unchanged repeat (a rate-limit update) adds nothing.
    assert_eq!(
        io(spent(&[
            count(10, 1, true),
            count(10, 1, false),
            count(40, 4, true),
            count(5, 9, false),
        ])),
        (55, 14)
    );
    assert_eq!(io(spent(&[])), (0, 0));
}
