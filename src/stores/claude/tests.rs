use super::*;
use crate::model::{MessageKind, Role, SEALED_THINKING};
use std::time::{Duration, Instant};

/// Project-written Claude Code files, each reproducing one real shape (fixtures/shapes/README.md).
const SHAPES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/shapes/claude");
const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/home/.claude/projects"
);
const TREE_DIR: &str = "-home-dev-projects-atlas";
const TREE_ID: &str = "5e551f5e-0000-4000-8000-00000000a7a5";

fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).expect("mkdir");
        for e in std::fs::read_dir(from).expect("read_dir").flatten() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        }
    } else {
        std::fs::copy(from, to).expect("copy");
    }
}

/// `<tmp>/projects/<project>/<name>` holding a copy of a shape fixture.
fn one_file(fixture: &str, name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("projects/-tmp-proj");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let dst = dir.join(name);
    std::fs::copy(Path::new(SHAPES).join(fixture), &dst).expect("copy");
    (tmp, dst)
}

fn load_fixture(fixture: &str) -> Session {
    let (_tmp, path) = one_file(fixture, "00000000-0000-4000-8000-000000000001.jsonl");
    load_session(&path, "s")
}

fn write(path: &Path, lines: &[&str]) {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(path, lines.join("\n") + "\n").expect("write");
}

fn contents(msgs: &[crate::model::Message]) -> Vec<String> {
    msgs.iter().map(|m| m.content.clone()).collect()
}

fn store(root: &Path) -> ClaudeStore {
    ClaudeStore::new(vec![Root::new(Agent::Claude, root, "test")])
}

#[test]
fn discovery_honours_config_dir_list() {
    let mut env = Env {
        home: PathBuf::from("/home/u"),
        ..Env::default()
    };
    let d = candidates(&env);
    assert_eq!(d[0].path, PathBuf::from("/home/u/.claude/projects"));
    assert_eq!(d[1].path, PathBuf::from("/home/u/.config/claude/projects"));
    assert!(d.iter().all(|r| r.how == "default"));
    env.vars
        .insert("CLAUDE_CONFIG_DIR".into(), "/a, ~/b ,".into());
    let d = candidates(&env);
    assert_eq!(
        d.iter().map(|r| r.path.clone()).collect::<Vec<_>>(),
        [
            PathBuf::from("/a/projects"),
            PathBuf::from("/home/u/b/projects")
        ]
    );
    assert!(d.iter().all(|r| r.how == "CLAUDE_CONFIG_DIR"));
}

#[test]
fn project_tree_lists_one_session_with_its_subagents() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let projects = tmp.path().join("projects");
    copy_tree(
        &Path::new(SHAPES).join("tree").join(TREE_DIR),
        &projects.join(TREE_DIR),
    );
    let st = store(&projects);
    let listed = st.list();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].id, TREE_ID);
    assert_eq!(listed[0].sources.len(), 3, "{:?}", listed[0].sources);

    let s = st.load(&listed[0]);
    let names: Vec<&str> = s.subagents.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(names, ["agent-a4f1c9e", "agent-acompact-5d3e21"]);
    let a = &s.subagents[0];
    assert_eq!(a.tool_call_id.as_deref(), Some("toolu_atlas_task"));
    let child = a.session.as_ref().expect("child session");
    assert_eq!(
        contents(&child.messages)
            .iter()
            .filter(|c| c.contains("additionalContext field"))
            .count(),
        1
    );
    assert_eq!(child.parent.as_deref(), Some(&*format!("claude:{TREE_ID}")));
    assert!(child.id.starts_with(TREE_ID));
    assert_eq!(s.cwd.as_deref(), Some("/home/dev/projects/atlas"));
    // Compaction keeps the earlier history, with a marker and the summary.
    assert!(s
        .messages
        .iter()
        .any(|m| m.role == Role::System && m.content.starts_with("Conversation compacted (auto")));
    let summary = s
        .messages
        .iter()
        .position(|m| m.kind == MessageKind::CompactionSummary)
        .expect("compaction summary");
    // The writer put 110 messages before the compaction: a prompt, 36 call/result/reply
    // rounds and the Task call with its result.
    assert!(
        summary >= 110,
        "history before the compaction is kept: {summary}"
    );
    assert!(contents(&s.messages)
        .iter()
        .any(|c| c == "Part 0 now reads line by line."));
    assert_eq!(
        s.messages.last().map(|m| m.content.as_str()),
        Some("The importer now shows a progress bar.")
    );
    assert_eq!(s.source.format, "claude-jsonl");
    assert_eq!(s.source.format_version.as_deref(), Some("2.1.39"));
}

#[test]
fn parallel_tool_calls_keep_both_results_and_make_no_branch() {
    let s = load_fixture("streamed_parallel.jsonl");
    assert!(s.branches.is_empty(), "{:?}", s.branches);
    let results: Vec<&str> = s
        .messages
        .iter()
        .filter_map(|m| m.tool_result.as_ref())
        .map(|r| r.tool_call_id.as_str())
        .collect();
    assert_eq!(results, ["toolu_shop_bash", "toolu_shop_glob"]);
    let tools: Vec<&str> = s
        .messages
        .iter()
        .filter_map(|m| m.tool_result.as_ref())
        .map(|r| r.tool_name.as_str())
        .collect();
    assert_eq!(tools, ["Bash", "Glob"]);
    // The five lines of the reply (blank text, thinking, text, two calls) are one message.
    let asst: Vec<_> = s
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    assert_eq!(asst.len(), 1);
    assert_eq!(asst[0].tool_calls.len(), 2);
    assert_eq!(
        asst[0].thinking.as_deref(),
        Some("Port 4000 may be taken, or the config is wrong.")
    );
    assert!(asst[0].content.starts_with("Let me look"));
    assert_eq!(
        s.title.as_deref(),
        Some("the shop server will not start on port 4000")
    );
    for f in [
        "sidechain.jsonl",
        "representative.jsonl",
        "images.jsonl",
        &format!("tree/{TREE_DIR}/{TREE_ID}.jsonl"),
    ] {
        let s = load_fixture(f);
        assert!(s.branches.is_empty(), "{f}: {:?}", s.branches.len());
        let calls: usize = s.messages.iter().map(|m| m.tool_calls.len()).sum();
        let results = s
            .messages
            .iter()
            .filter(|m| m.tool_result.is_some())
            .count();
        assert!(calls > 0, "{f}");
        assert_eq!(calls, results, "{f}");
    }
}

#[test]
fn rewind_becomes_a_branch_and_compaction_keeps_history() {
    let s = load_fixture("rewind_compact.jsonl");
    let c = contents(&s.messages);
    let pos = |needle: &str| {
        c.iter()
            .position(|m| m.contains(needle))
            .unwrap_or_else(|| panic!("{needle} missing from {c:#?}"))
    };
    let order = [
        pos("Open the garden notebook"),
        pos("Notebook is open"),
        pos("Plant beans first"),
        pos("Beans planted"),
        pos("Water the beds"),
        pos("Beds watered"),
        pos("Harvest what is ripe"),
        pos("Harvest done"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    assert!(!c.iter().any(|m| m.contains("Plant tomatoes first")));
    assert_eq!(s.branches.len(), 1);
    let b = &s.branches[0];
    let bc = contents(&b.messages);
    assert!(bc.iter().any(|m| m.contains("Plant tomatoes first")));
    assert!(bc.iter().any(|m| m.contains("Tomatoes planted")));
    assert_eq!(
        bc.first().map(String::as_str),
        Some("Open the garden notebook")
    );
    assert_eq!(b.fork_point.as_deref(), Some("r1"));
    assert_eq!(b.leaf.as_deref(), Some("r2a"));
    assert_eq!(b.name, "branch-r2a");
    assert!(s
        .messages
        .iter()
        .any(|m| m.kind == MessageKind::CompactionSummary));
}

#[test]
fn inline_sidechains_become_subagents() {
    let s = load_fixture("sidechain.jsonl");
    let side = "warm and holding at nine hundred degrees";
    // The sidechain's records stay out; its answer reaches the parent only as the Task
    // tool result.
    assert!(!s
        .messages
        .iter()
        .any(|m| m.role != Role::Tool && m.content.contains(side)));
    assert!(!s
        .messages
        .iter()
        .any(|m| matches!(m.native_id.as_deref(), Some("k1" | "k2"))));
    assert_eq!(s.subagents.len(), 1);
    let child = s.subagents[0].session.as_ref().expect("child");
    assert!(child.messages.iter().any(|m| m.content.contains(side)));
    assert_eq!(
        s.subagents[0].tool_call_id.as_deref(),
        Some("toolu_kiln_task")
    );
    // The Task result is still in the parent.
    assert!(s.messages.iter().any(|m| m
        .tool_result
        .as_ref()
        .is_some_and(|r| r.output.contains(side))));
}

/// Every shape fixture loads into a non-empty transcript without base64 or giant messages.
/// Real files of every shape are read by the real-corpus suite (`tests/real.rs`, when
/// `SESSFS_REAL_SESSIONS` names them).
#[test]
fn every_shape_fixture_loads() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(Path::new(SHAPES), &mut files);
    assert_eq!(files.len(), 9, "{files:?}");
    for f in files {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dst = tmp.path().join("s.jsonl");
        std::fs::copy(&f, &dst).expect("copy");
        let s = load_session(&dst, "s");
        assert!(!s.messages.is_empty(), "{}", f.display());
        assert!(s.warnings.is_empty(), "{}: {:?}", f.display(), s.warnings);
        assert!(s.created_at.is_some(), "{}", f.display());
        for m in &s.messages {
            assert!(!m.content.contains(";base64,"), "{}", f.display());
            assert!(
                m.content.len() < 200_000 || m.role == Role::Tool,
                "{}",
                f.display()
            );
        }
    }
}

#[test]
fn images_are_placeholders() {
    let s = load_fixture("images.jsonl");
    let all: String = s
        .messages
        .iter()
        .map(|m| m.text())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(all.contains("[image: image/png"), "{all}");
    assert!(all.contains("[image: image/jpeg"), "{all}");
    // The file holds 80 KB of base64; the transcript keeps none of it.
    assert!(all.len() < 5_000, "{}", all.len());
}

#[test]
fn partial_last_line_is_a_warning() {
    let (_tmp, path) = one_file("representative.jsonl", "s.jsonl");
    let mut text = std::fs::read_to_string(&path).expect("read");
    text.push_str(r#"{"type":"assistant","uuid":"v7","parentUuid":"v6","message":{"id":"msg_py3","content":[{"type":"text","text":"You are"#);
    std::fs::write(&path, text).expect("write");
    let s = load_session(&path, "s");
    assert!(
        s.warnings.iter().any(|w| w.contains("partial last line")),
        "{:?}",
        s.warnings
    );
    assert_eq!(
        s.messages.last().map(|m| m.content.as_str()),
        Some("Thanks, that makes the wrapping clear")
    );
}

/// A 3 MB session of streamed replies (each reply over three lines, with a call and its
/// result) loads in well under the deadline.
#[test]
fn big_file_loads_quickly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = tmp.path().join("big.jsonl");
    let filler = "lorem ipsum dolor sit amet ".repeat(40);
    let mut lines =
        vec![r#"{"type":"user","uuid":"u0","message":{"content":"start"}}"#.to_string()];
    let mut prev = "u0".to_string();
    let n = 700;
    for i in 0..n {
        lines.push(format!(r#"{{"type":"assistant","uuid":"t{i}","parentUuid":"{prev}","message":{{"id":"m{i}","content":[{{"type":"thinking","thinking":"{filler}"}}]}}}}"#));
        lines.push(format!(r#"{{"type":"assistant","uuid":"x{i}","parentUuid":"t{i}","message":{{"id":"m{i}","content":[{{"type":"text","text":"{filler}"}}]}}}}"#));
        lines.push(format!(r#"{{"type":"assistant","uuid":"c{i}","parentUuid":"x{i}","message":{{"id":"m{i}","content":[{{"type":"tool_use","id":"k{i}","name":"Read","input":{{}}}}]}}}}"#));
        lines.push(format!(r#"{{"type":"user","uuid":"r{i}","parentUuid":"c{i}","message":{{"content":[{{"type":"tool_result","tool_use_id":"k{i}","content":"{filler}"}}]}}}}"#));
        prev = format!("r{i}");
    }
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    write(&path, &refs);
    assert!(std::fs::metadata(&path).expect("meta").len() > 2_500_000);
    let t = Instant::now();
    let s = load_session(&path, "big");
    let took = t.elapsed();
    assert_eq!(s.messages.len(), 1 + 2 * n);
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn corrupt_inputs_give_warnings_not_panics() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("garbage", b"not json\n{{{{\n\x00\x01\x02\n".to_vec()),
        ("empty", Vec::new()),
        ("utf8", b"{\"type\":\"user\",\"uuid\":\"u\",\"message\":{\"content\":\"a\xff\xfeb\"}}\n\xff\xfe\xfd\n".to_vec()),
        ("huge", {
            let mut v = b"{\"type\":\"user\",\"uuid\":\"u\",\"message\":{\"content\":\"".to_vec();
            v.extend(vec![b'x'; 5 * 1024 * 1024]);
            v.extend(b"\"}}\n{\"type\":\"assistant\",\"uuid\":\"a\",\"parentUuid\":\"u\",\"message\":{\"content\":[{\"type\":\"text\"");
            v
        }),
        ("shapes", br#"{"type":"user","message":"error"}
{"type":"assistant","uuid":"x","message":{"content":[null,1,"s",{"type":"tool_use"}]}}
{"type":"user","uuid":"y","parentUuid":"x","message":{"content":[{"type":"tool_result"}]}}
{"type":"system","uuid":"z","parentUuid":"z"}
[1,2]
42
"#.to_vec()),
    ];
    for (name, bytes) in cases {
        let p = dir.join(format!("{name}.jsonl"));
        std::fs::write(&p, &bytes).expect("write");
        let s = load_session(&p, name);
        match name {
            "garbage" | "huge" => assert!(!s.warnings.is_empty(), "{name}"),
            "utf8" => assert!(s.messages[0].content.contains('\u{fffd}')),
            _ => {}
        }
        if name == "huge" {
            assert_eq!(s.messages.len(), 1);
        }
    }
    let s = load_session(&dir.join("missing.jsonl"), "missing");
    assert!(!s.warnings.is_empty());
}

#[test]
fn reply_lines_merge_and_usage_counts_once() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("s.jsonl");
    write(
        &p,
        &[
            r#"{"type":"user","uuid":"u","message":{"role":"user","content":"go"},"timestamp":"2026-01-01T00:00:00Z"}"#,
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u","message":{"id":"m","model":"claude-opus-4-6","content":[{"type":"thinking","thinking":"","signature":"sig"}],"usage":{"input_tokens":10,"output_tokens":1}}}"#,
            r#"{"type":"assistant","uuid":"a2","parentUuid":"a1","message":{"id":"m","model":"claude-opus-4-6","content":[{"type":"text","text":"hello"}],"usage":{"input_tokens":10,"output_tokens":1}}}"#,
            r#"{"type":"assistant","uuid":"a3","parentUuid":"a2","message":{"id":"m","model":"claude-opus-4-6","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/x"}}],"usage":{"input_tokens":10,"output_tokens":30,"cache_read_input_tokens":5}}}"#,
            r#"{"type":"user","uuid":"r","parentUuid":"a3","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"short","is_error":true}]},"toolUseResult":{"persistedOutputPath":"/elsewhere/tool-results/t1.txt"}}"#,
            r#"{"type":"system","subtype":"turn_duration","uuid":"d","parentUuid":"r","durationMs":5}"#,
            r#"{"type":"custom-title","customTitle":"Merged"}"#,
            r#"{"type":"ai-title","aiTitle":"Ignored"}"#,
            r#"{"type":"tag","tag":"demo"}"#,
        ],
    );
    let spill = tmp.path().join("s/tool-results");
    std::fs::create_dir_all(&spill).expect("mkdir");
    std::fs::write(spill.join("t1.txt"), "the whole output").expect("write");
    let s = load_session(&p, "s");
    assert_eq!(s.messages.len(), 3, "{:#?}", s.messages);
    let a = &s.messages[1];
    assert_eq!(a.native_id.as_deref(), Some("a1"));
    assert_eq!(a.content, "hello");
    assert_eq!(a.thinking.as_deref(), Some(SEALED_THINKING));
    assert_eq!(a.tool_calls.len(), 1);
    assert!(a.cost.is_none());
    let u = a.token_usage.expect("usage");
    assert_eq!(
        (u.input_tokens, u.output_tokens, u.cached_tokens),
        (10, 30, 5)
    );
    assert_eq!(s.cost().output_tokens, 30);
    let r = s.messages[2].tool_result.as_ref().expect("result");
    assert_eq!(r.output, "the whole output");
    assert!(r.is_error);
    assert_eq!(r.tool_name, "Read");
    assert_eq!(s.title.as_deref(), Some("Merged"));
    assert_eq!(s.tags, ["demo"]);
    assert_eq!(s.models(), ["claude-opus-4-6"]);
}

#[test]
fn flat_agent_files_are_subagents_not_sessions() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let proj = tmp.path().join("projects/-p");
    let sid = "11111111-1111-4111-8111-111111111111";
    write(
        &proj.join(format!("{sid}.jsonl")),
        &[
            &format!(
                r#"{{"type":"user","uuid":"u","sessionId":"{sid}","message":{{"content":"parent prompt"}},"forkedFrom":{{"sessionId":"other","messageUuid":"q"}}}}"#
            ),
            r#"{"type":"assistant","uuid":"a","parentUuid":"u","message":{"id":"m","content":[{"type":"tool_use","id":"tk","name":"Task","input":{"description":"Look around","prompt":"look"}}]}}"#,
            r#"{"type":"user","uuid":"r","parentUuid":"a","message":{"content":[{"type":"tool_result","tool_use_id":"tk","content":"done"}]},"toolUseResult":{"agentId":"abc123","status":"completed"}}"#,
        ],
    );
    write(
        &proj.join("agent-abc123.jsonl"),
        &[&format!(
            r#"{{"type":"user","uuid":"c1","isSidechain":true,"agentId":"abc123","sessionId":"{sid}","message":{{"content":"look"}}}}"#
        )],
    );
    write(
        &proj.join("agent-zzz.jsonl"),
        &[
            r#"{"type":"user","uuid":"c1","isSidechain":true,"sessionId":"someone-else","message":{"content":"x"}}"#,
        ],
    );
    let st = store(&tmp.path().join("projects"));
    let listed = st.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].sources.len(), 2);
    let s = st.load(&listed[0]);
    assert_eq!(s.subagents.len(), 1);
    let a = &s.subagents[0];
    assert_eq!(a.name, "agent-abc123");
    assert_eq!(a.tool_call_id.as_deref(), Some("tk"));
    assert_eq!(a.description.as_deref(), Some("Look around"));
    assert_eq!(s.forked_from.as_deref(), Some("claude:other"));
}

#[test]
fn hand_written_sample_loads() {
    let tmp = tempfile::tempdir().expect("tempdir");
    copy_tree(Path::new(SAMPLE), &tmp.path().join("projects"));
    let st = store(&tmp.path().join("projects"));
    let listed = st.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].sources.len(), 3);
    let s = st.load(&listed[0]);
    assert_eq!(s.title.as_deref(), Some("Fix flaky login redirect"));
    assert_eq!(s.cwd.as_deref(), Some("/home/demo/webapp"));
    assert!(s.branches.is_empty());
    let a: Vec<_> = s
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    assert!(a[0].thinking.is_some());
    assert!(a[0].tool_calls.len() >= 2);
    assert_eq!(s.subagents.len(), 1);
    let sub = &s.subagents[0];
    assert!(sub.description.is_some());
    assert!(sub.tool_call_id.is_some());
    let child = sub.session.as_ref().expect("child");
    assert!(child.messages.iter().any(|m| m.role == Role::Assistant));
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
}

#[test]
fn summaries_of_other_sessions_do_not_title_this_one() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("s.jsonl");
    write(
        &p,
        &[
            r#"{"type":"summary","summary":"Someone else's work","leafUuid":"elsewhere"}"#,
            r#"{"type":"user","uuid":"u","message":{"content":"<command-name>/review</command-name><command-args>the parser</command-args>"}}"#,
            r#"{"type":"user","uuid":"v","parentUuid":"u","message":{"content":"then fix it"}}"#,
        ],
    );
    let s = load_session(&p, "s");
    assert_eq!(s.title.as_deref(), Some("/review the parser"));
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&p)
        .expect("open");
    std::io::Write::write_all(
        &mut f,
        b"{\"type\":\"summary\",\"summary\":\"Parser review\",\"leafUuid\":\"v\"}\n",
    )
    .expect("append");
    let s = load_session(&p, "s");
    assert_eq!(s.title.as_deref(), Some("Parser review"));
}

#[test]
fn long_session_with_parallel_calls_stays_linear() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("s.jsonl");
    let mut lines =
        vec![r#"{"type":"user","uuid":"u0","message":{"content":"start"}}"#.to_string()];
    let mut prev = "u0".to_string();
    let n = 4000;
    for i in 0..n {
        // One reply as two lines, each with a call; the first result hangs off line one.
        lines.push(format!(r#"{{"type":"assistant","uuid":"a{i}","parentUuid":"{prev}","message":{{"id":"m{i}","content":[{{"type":"tool_use","id":"x{i}","name":"Read","input":{{}}}}]}}}}"#));
        lines.push(format!(r#"{{"type":"assistant","uuid":"b{i}","parentUuid":"a{i}","message":{{"id":"m{i}","content":[{{"type":"tool_use","id":"y{i}","name":"Grep","input":{{}}}}]}}}}"#));
        lines.push(format!(r#"{{"type":"user","uuid":"rx{i}","parentUuid":"a{i}","message":{{"content":[{{"type":"tool_result","tool_use_id":"x{i}","content":"ok"}}]}}}}"#));
        lines.push(format!(r#"{{"type":"user","uuid":"ry{i}","parentUuid":"b{i}","message":{{"content":[{{"type":"tool_result","tool_use_id":"y{i}","content":"ok"}}]}}}}"#));
        prev = format!("ry{i}");
    }
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    write(&p, &refs);
    let t = Instant::now();
    let s = load_session(&p, "s");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(s.branches.is_empty());
    assert_eq!(s.messages.len(), 1 + 3 * n);
    assert_eq!(
        s.messages
            .iter()
            .filter(|m| m.tool_result.is_some())
            .count(),
        2 * n
    );
}

/// A `!` shell command used to become two messages (`$ ls` as user text, the output as a
/// separate system text), so the transcript showed the output as a second "Command" block.
/// Now the command is the text of one execution and its one call holds the output.
#[test]
fn shell_command_and_its_output_are_one_execution() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("s.jsonl");
    write(
        &p,
        &[
            r#"{"type":"user","uuid":"i","message":{"role":"user","content":"<bash-input>ls src</bash-input>"},"timestamp":"2026-01-01T00:00:00Z"}"#,
            r#"{"type":"user","uuid":"o","parentUuid":"i","message":{"role":"user","content":"<bash-stdout>main.rs\nlib.rs</bash-stdout><bash-stderr></bash-stderr>"},"timestamp":"2026-01-01T00:00:01Z"}"#,
            r#"{"type":"user","uuid":"x","parentUuid":"o","message":{"role":"user","content":"<bash-stdout></bash-stdout><bash-stderr>oops</bash-stderr>"},"timestamp":"2026-01-01T00:00:02Z"}"#,
        ],
    );
    let s = load_session(&p, "s");
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.messages.len(), 2, "{:#?}", s.messages);
    let m = &s.messages[0];
    assert_eq!((m.role, m.kind), (Role::User, MessageKind::Execution));
    assert_eq!(m.content, "ls src");
    assert_eq!(m.tool_calls.len(), 1);
    assert_eq!(m.tool_calls[0].output.as_deref(), Some("main.rs\nlib.rs"));
    // Output with no command before it stands alone.
    let lone = &s.messages[1];
    assert_eq!(
        (lone.role, lone.kind),
        (Role::System, MessageKind::Execution)
    );
    assert_eq!(lone.tool_calls[0].output.as_deref(), Some("oops"));
    assert_eq!(s.title, None);
    let t = crate::render::transcript::render(&s);
    assert!(
        t.contains("**Command:**\n\n```\nls src\n```\n\n**Output:** ok"),
        "{t}"
    );
}

/// `/clear` printed an empty `<local-command-stdout>`, which used to show as a system
/// "(no output)" message (and Claude Code's own "(no content)" likewise); and a 2.1
/// `system/local_command` slash command was shown as the system's, not the user's; and the
/// "Caveat:" note for the model showed as a user prompt when not marked `isMeta`.
#[test]
fn command_noise_is_dropped_and_slash_commands_are_the_users() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = tmp.path().join("s.jsonl");
    write(
        &p,
        &[
            r#"{"type":"user","uuid":"v","message":{"role":"user","content":"Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages."},"timestamp":"2026-01-01T00:00:00Z"}"#,
            r#"{"type":"user","uuid":"c","parentUuid":"v","message":{"role":"user","content":"<command-name>/clear</command-name>\n<command-message>clear</command-message>"},"timestamp":"2026-01-01T00:00:00Z"}"#,
            r#"{"type":"user","uuid":"o","parentUuid":"c","message":{"role":"user","content":"<local-command-stdout></local-command-stdout>"},"timestamp":"2026-01-01T00:00:00Z"}"#,
            r#"{"type":"user","uuid":"n","parentUuid":"o","message":{"role":"user","content":"<local-command-stdout>(no content)</local-command-stdout>"},"timestamp":"2026-01-01T00:00:00Z"}"#,
            r#"{"type":"system","subtype":"local_command","uuid":"m","parentUuid":"n","content":"<command-name>/model</command-name>\n<command-args></command-args>","timestamp":"2026-01-01T00:00:01Z"}"#,
            r#"{"type":"system","subtype":"local_command","uuid":"k","parentUuid":"m","content":"<local-command-stdout>Kept model</local-command-stdout>","timestamp":"2026-01-01T00:00:02Z"}"#,
            r#"{"type":"system","subtype":"local_command","uuid":"e","parentUuid":"k","content":"<local-command-stdout></local-command-stdout>","timestamp":"2026-01-01T00:00:03Z"}"#,
        ],
    );
    let s = load_session(&p, "s");
    // The caveat is context for the model, never a prompt.
    assert_eq!(s.messages[0].kind, MessageKind::Context);
    assert_eq!(s.messages[0].label.as_deref(), Some("command caveat"));
    let shown: Vec<(Role, &str)> = s
        .messages
        .iter()
        .filter(|m| m.kind != MessageKind::Context)
        .map(|m| (m.role, m.content.as_str()))
        .collect();
    assert_eq!(
        shown,
        [
            (Role::User, "/clear"),
            (Role::User, "/model"),
            (Role::System, "Kept model")
        ]
    );
}

/// The compaction boundary is a system event read like the rest of the transcript (token
/// count grouped), and the summary follows it; `/clear`'s empty output no longer shows.
#[test]
fn compaction_shows_a_marker_then_the_summary() {
    let s = load_fixture("manual_compact.jsonl");
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let at = s
        .messages
        .iter()
        .position(|m| m.kind == MessageKind::CompactionSummary)
        .expect("a summary");
    let marker = &s.messages[at - 1];
    assert_eq!(
        (marker.role, marker.kind),
        (Role::System, MessageKind::Event)
    );
    assert_eq!(
        marker.content,
        "Conversation compacted (manual, 12,345 tokens before)"
    );
    assert!(!contents(&s.messages).iter().any(|c| c == "(no output)"));
    let t = crate::render::transcript::render(&s);
    let m = t.find("Conversation compacted").expect("marker");
    let sum = t.find("· compaction summary").expect("summary");
    assert!(m < sum);
}
