//! Fidelity over the shape fixtures and the mount's log: what the agent saw is in the tree,
//! readable and greppable, and reading the whole mount leaves the log quiet. The same checks
//! over real stores are the real-corpus suite's (`tests/real.rs`, when
//! `SESSFS_REAL_SESSIONS` names them).
//!
//! The expected lines are read off the raw JSONL here, with a few lines of `serde_json`
//! walking the records, never through sessfs' parser.

mod common;

use common::{shapes, stderr, stdout, Foreground, Home};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Lines longer than this may be cut by a preview; the tests skip them.
const MAX_LINE: usize = 400;

fn render_spine() -> (Home, tempfile::TempDir) {
    let home = Home::spine();
    let out = tempfile::tempdir().expect("temp dir");
    let dir = out.path().join("tree");
    let o = home.sessfs(&["render", dir.to_str().expect("utf-8")]);
    assert!(o.status.success(), "render failed: {}", stderr(&o));
    (home, out)
}

/// Every file under `dir`, as text.
fn texts_under(dir: &Path) -> Vec<(PathBuf, String)> {
    common::files_under(dir)
        .into_iter()
        .map(|p| {
            let t = String::from_utf8_lossy(&std::fs::read(&p).expect("read")).into_owned();
            (p, t)
        })
        .collect()
}

/// Lines a reader must be able to `grep -F`: not holding what transcript.md escapes
/// (`<`, `&`), no control characters, not so long a preview may cut them.
fn keep(line: &str) -> bool {
    let l = line.trim();
    !l.is_empty()
        && l.len() <= MAX_LINE
        && !l.contains(['<', '&'])
        && !l.chars().any(|c| c.is_control() && c != '\t')
}

fn push_lines(text: &str, out: &mut Vec<String>) {
    out.extend(
        text.lines()
            .filter(|l| keep(l))
            .map(|l| l.trim().to_string()),
    );
}

/// Text of a content value: a string, or text blocks (and tool_result contents).
fn content_lines(c: Option<&Value>, out: &mut Vec<String>) {
    match c {
        Some(Value::String(s)) => push_lines(s, out),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        push_lines(b.get("text").and_then(Value::as_str).unwrap_or(""), out)
                    }
                    Some("tool_result") => content_lines(b.get("content"), out),
                    Some("tool_use") => {
                        // File contents a Write/Edit carries, shown with real newlines.
                        let name = b.get("name").and_then(Value::as_str).unwrap_or("");
                        let input = b.get("input");
                        if matches!(name, "Write" | "Edit") {
                            for k in ["content", "old_string", "new_string"] {
                                if let Some(s) =
                                    input.and_then(|i| i.get(k)).and_then(Value::as_str)
                                {
                                    push_lines(s, out);
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// Lines of the user, assistant and tool records of a Claude file, injected ones included.
fn claude_lines(path: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let text = String::from_utf8_lossy(&std::fs::read(path).expect("read")).into_owned();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if !matches!(
            v.get("type").and_then(Value::as_str),
            Some("user" | "assistant")
        ) {
            continue;
        }
        content_lines(v.get("message").and_then(|m| m.get("content")), &mut out);
    }
    out
}

/// Lines of the user, assistant, tool and custom messages of a pi-format file. In an
/// OpenClaw file, a tool result whose text is the payload of a tool that threw,
/// `{"status": "error", "error": …}`, is looked for as its error's lines (SEMANTICS,
/// "Tools that threw").
fn pi_lines(path: &Path, openclaw: bool) -> Vec<String> {
    let mut out = Vec::new();
    let text = String::from_utf8_lossy(&std::fs::read(path).expect("read")).into_owned();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let m = match v.get("type").and_then(Value::as_str) {
            Some("message") => v.get("message"),
            Some("custom_message") => Some(&v),
            _ => None,
        };
        let Some(m) = m else { continue };
        let result = m.get("role").and_then(Value::as_str) == Some("toolResult");
        if let Some(Value::Array(blocks)) = m.get("content") {
            for b in blocks {
                if let Some(t) = b.get("text").and_then(Value::as_str) {
                    let thrown = serde_json::from_str::<Value>(t)
                        .ok()
                        .filter(|p| p.get("status").and_then(Value::as_str) == Some("error"));
                    match thrown.as_ref().and_then(|p| p.get("error")?.as_str()) {
                        Some(error) if openclaw && result => push_lines(error, &mut out),
                        _ => push_lines(t, &mut out),
                    }
                }
            }
        } else {
            content_lines(m.get("content"), &mut out);
        }
    }
    out
}

fn header_id(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("read");
    let first: Value =
        serde_json::from_str(text.lines().next().unwrap_or("{}")).unwrap_or_default();
    first
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// `(raw file, session directories that may hold it)`.
fn claude_fixtures(tree: &Path) -> Vec<(PathBuf, Vec<PathBuf>)> {
    let dir = shapes().join("claude");
    let mut out = Vec::new();
    for stem in common::claude::TOP {
        out.push((
            dir.join(format!("{stem}.jsonl")),
            vec![tree.join("claude").join(stem)],
        ));
    }
    let project = dir.join("tree").join(common::claude::TREE_PROJECT);
    let sid = common::claude::TREE_ID;
    let session = tree.join("claude").join(sid);
    out.push((project.join(format!("{sid}.jsonl")), vec![session.clone()]));
    for e in std::fs::read_dir(project.join(sid).join("subagents"))
        .expect("read")
        .flatten()
    {
        if e.path().extension().is_some_and(|x| x == "jsonl") {
            out.push((e.path(), vec![session.clone()]));
        }
    }
    out.sort();
    out
}

/// The pi-format shape files laid out for `agent` by `common::pi::write_stores`.
fn pi_fixtures(tree: &Path, agent: &str, files: &[&str]) -> Vec<(PathBuf, Vec<PathBuf>)> {
    let mut out = Vec::new();
    let names: Vec<String> = std::fs::read_dir(tree.join(agent))
        .expect("read agent dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for f in files {
        let p = shapes().join(f);
        let id = header_id(&p);
        // The cut copy of a file shares its header id: they mount as `id` and `id~2`.
        let dirs = names
            .iter()
            .filter(|n| **n == id || n.starts_with(&format!("{id}~")))
            .map(|n| tree.join(agent).join(n))
            .collect();
        out.push((p, dirs));
    }
    out.sort();
    out
}

/// Every line of every record of the Claude, pi and omp shape fixtures is found, as written,
/// in its session's files; and no transcript.md holds a terminal escape.
#[test]
fn every_record_line_is_greppable_in_its_session_and_transcripts_hold_no_escapes() {
    let (_home, out) = render_spine();
    let tree = out.path().join("tree");
    let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut checked = 0;
    let mut fixtures = claude_fixtures(&tree);
    fixtures.extend(pi_fixtures(
        &tree,
        "pi",
        &[
            "pi/branched.jsonl",
            "pi/crud.jsonl",
            "pi/image.jsonl",
            "pi/v1_compaction.jsonl",
            "pi/v1_slash_first.jsonl",
        ],
    ));
    fixtures.extend(pi_fixtures(
        &tree,
        "omp",
        &["pi/v1_compaction.jsonl", "pi/v1_slash_first.jsonl"],
    ));
    fixtures.extend(pi_fixtures(
        &tree,
        "openclaw",
        &["openclaw/transcript.jsonl"],
    ));
    for (raw, dirs) in fixtures {
        let pi_format = !raw.starts_with(shapes().join("claude"));
        let lines = if pi_format {
            pi_lines(&raw, raw.starts_with(shapes().join("openclaw")))
        } else {
            claude_lines(&raw)
        };
        assert!(!dirs.is_empty(), "{} has no session", raw.display());
        let files: Vec<String> = dirs
            .iter()
            .flat_map(|d| texts_under(d))
            .map(|(_, t)| t)
            .collect();
        assert!(!files.is_empty(), "{:?} is empty", dirs);
        for l in lines {
            checked += 1;
            if !files.iter().any(|t| t.contains(&l)) {
                missing
                    .entry(raw.display().to_string())
                    .or_default()
                    .push(l);
            }
        }
    }
    // The shape fixtures hold 410 such lines; real stores' lines are the real-corpus suite's.
    assert!(checked >= 400, "only {checked} lines checked");
    let report: Vec<String> = missing
        .iter()
        .map(|(f, ls)| {
            format!(
                "{f}: {} lines missing, e.g. {:?}",
                ls.len(),
                &ls[..ls.len().min(5)]
            )
        })
        .collect();
    assert!(missing.is_empty(), "{}", report.join("\n"));

    for (p, t) in texts_under(&tree) {
        if p.file_name().is_some_and(|n| n == "transcript.md") {
            assert!(!t.contains('\u{1b}'), "ESC in {}", p.display());
        }
    }
}

/// One Python walk used to write thousands of `[Not Implemented] ioctl/flush/lseek` lines.
#[test]
fn grep_and_a_python_walk_leave_the_log_quiet() {
    let home = Home::spine();
    let m = Foreground::with_log(&home, "warn");
    let before = m.log_text().lines().count();
    let grep = Command::new("grep")
        .args(["-r", "-c", "--", "zzz-no-such-text"])
        .arg(m.dir.path())
        .output()
        .expect("grep");
    assert!(grep.status.code() == Some(1), "grep: {}", stderr(&grep));
    let py = Command::new("python3")
        .arg("-c")
        .arg(
            r#"
import os, sys
n = 0
for root, dirs, files in os.walk(sys.argv[1]):
    for f in files:
        p = os.path.join(root, f)
        with open(p, 'rb') as fh:
            fh.read()
            fh.seek(0, os.SEEK_END)
            fh.seek(0)
            fh.read(10)
            os.fstat(fh.fileno())
        with open(p, 'r', errors='replace') as fh:
            fh.readline()
        n += 1
print(n)
"#,
        )
        .arg(m.dir.path())
        .output()
        .expect("python3");
    assert!(py.status.success(), "python: {}", stderr(&py));
    let files: usize = stdout(&py).trim().parse().expect("a count");
    assert!(files > 100, "walked only {files} files");
    let log = m.log_text();
    let added: Vec<&str> = log.lines().skip(before).collect();
    assert!(
        added.len() <= 3,
        "{} log lines, e.g. {:?}",
        added.len(),
        &added[..added.len().min(5)]
    );
    assert!(!log.contains("[Not Implemented]"), "{log}");
}

const ORPHAN: &str = "0a1b2c3d-0000-4000-8000-00000000beef";

/// A `<uuid>/subagents/` directory whose `<uuid>.jsonl` is gone.
fn orphan_home() -> Home {
    let home = Home::empty();
    let dir = home
        .path()
        .join(".claude/projects/-home-u-proj")
        .join(ORPHAN)
        .join("subagents");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("agent-a1.jsonl"),
        concat!(
            r#"{"type":"user","uuid":"c1","isSidechain":true,"agentId":"a1","sessionId":"0a1b2c3d-0000-4000-8000-00000000beef","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"Find the flaky test"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"c2","parentUuid":"c1","isSidechain":true,"agentId":"a1","timestamp":"2026-01-01T00:00:05Z","message":{"id":"m1","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"It is test_retry_backoff."}]}}"#,
            "\n"
        ),
    )
    .expect("write");
    home
}

/// Orphan subagent sets were in no listing, no mount and no doctor line.
#[test]
fn orphan_subagents_are_listed_mounted_and_counted_by_doctor() {
    let home = orphan_home();
    let list = home.sessfs(&["list", "--json"]);
    assert!(list.status.success(), "{}", stderr(&list));
    let text = stdout(&list);
    assert!(text.contains(&format!("claude:{ORPHAN}")), "{text}");
    let doctor = stdout(&home.sessfs(&["doctor"]));
    assert!(
        doctor.contains("1 orphaned subagent set"),
        "doctor: {doctor}"
    );
    let out = tempfile::tempdir().expect("temp dir");
    let dir = out.path().join("tree");
    let o = home.sessfs(&["render", dir.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let session = dir.join("claude").join(ORPHAN);
    let meta = std::fs::read_to_string(session.join("meta.json")).expect("meta.json");
    assert!(meta.contains("\"orphaned\": true"), "{meta}");
    let child = std::fs::read_to_string(session.join("subagents/agent-a1/transcript.md"))
        .expect("child transcript");
    assert!(child.contains("It is test_retry_backoff."), "{child}");
}

/// `sessfs doctor` names the log file of every live mount.
#[test]
fn doctor_prints_the_log_of_each_live_mount() {
    let home = orphan_home();
    let m = common::Mount::new(&home, &[]);
    let doctor = stdout(&home.sessfs(&["doctor"]));
    let line = doctor
        .lines()
        .find(|l| l.contains(m.path().to_str().expect("utf-8")))
        .unwrap_or_else(|| panic!("no line for the mount: {doctor}"));
    let log = line
        .split("log: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no log path: {line}"))
        .trim();
    assert!(Path::new(log).is_file(), "{log}");
}

/// The stores added after the fidelity rules (Codex, Gemini CLI, Copilot CLI) follow them too:
/// their shape fixtures render with no terminal escape in any transcript or tool file.
#[test]
fn codex_gemini_and_copilot_transcripts_hold_no_escapes() {
    let (home, _) = Home::gemcop();
    common::codex::write_store(home.path());
    // The fixtures hold no escapes; this hand-made rollout has a test runner's colours.
    let day = home.path().join(".codex/sessions/2026/01/02");
    std::fs::create_dir_all(&day).expect("codex day dir");
    let rollout = [
        r#"{"timestamp":"2026-01-02T00:00:00.000Z","type":"session_meta","payload":{"id":"0f0f0f0f-0000-7000-8000-0000000000e5","timestamp":"2026-01-02T00:00:00.000Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.50.0"}}"#,
        r#"{"timestamp":"2026-01-02T00:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"run the tests"}]}}"#,
        r#"{"timestamp":"2026-01-02T00:00:02.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"npm\",\"test\"]}","call_id":"c1"}}"#,
        r#"{"timestamp":"2026-01-02T00:00:03.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"\u001b[1m\u001b[46m RUN \u001b[49m\u001b[22m v1.0 /w\n\u001b[32mall 12 passed\u001b[39m"}}"#,
    ];
    std::fs::write(
        day.join("rollout-2026-01-02T00-00-00-0f0f0f0f-0000-7000-8000-0000000000e5.jsonl"),
        rollout.join("\n") + "\n",
    )
    .expect("rollout");
    let out = tempfile::tempdir().expect("temp dir");
    let tree = out.path().join("tree");
    let o = home.sessfs(&["render", tree.to_str().expect("utf-8")]);
    assert!(o.status.success(), "render failed: {}", stderr(&o));
    let mut seen = BTreeMap::new();
    for (p, t) in texts_under(&tree) {
        let rel = p.strip_prefix(&tree).expect("under tree");
        let agent = rel.components().next().expect("agent dir");
        let agent = agent.as_os_str().to_string_lossy().into_owned();
        let name = p.file_name().expect("name").to_string_lossy();
        if name == "transcript.md" || p.parent().is_some_and(|d| d.ends_with("tools")) {
            *seen.entry(agent).or_insert(0) += 1;
            assert!(!t.contains('\u{1b}'), "ESC in {}", p.display());
        }
    }
    for agent in ["codex", "gemini", "copilot"] {
        assert!(
            seen.get(agent).is_some_and(|&n| n > 0),
            "no {agent} files: {seen:?}"
        );
    }
    // The text around the escapes stays, and messages.jsonl keeps the bytes verbatim.
    let s = tree.join("codex/0f0f0f0f-0000-7000-8000-0000000000e5");
    let tools: String = texts_under(&s.join("tools"))
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    assert!(
        tools.contains(" RUN  v1.0 /w") && tools.contains("all 12 passed"),
        "{tools}"
    );
    let jsonl = std::fs::read_to_string(s.join("messages.jsonl")).expect("messages.jsonl");
    assert!(jsonl.contains("\\u001b[46m"), "{jsonl}");
}

/// The text of a Gemini `content` or a Codex/Copilot content list: a string, or parts with
/// `text`.
fn part_lines(c: Option<&Value>, out: &mut Vec<String>) {
    match c {
        Some(Value::String(s)) => push_lines(s, out),
        Some(Value::Array(parts)) => {
            for p in parts {
                match p {
                    Value::String(s) => push_lines(s, out),
                    _ => push_lines(p.get("text").and_then(Value::as_str).unwrap_or(""), out),
                }
            }
        }
        _ => {}
    }
}

/// Codex: message texts and tool outputs of the `response_item` stream (the one shown).
fn codex_lines(raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    for v in raw
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        if v.get("type").and_then(Value::as_str) != Some("response_item") {
            continue;
        }
        let p = &v["payload"];
        match p.get("type").and_then(Value::as_str) {
            Some("message") => part_lines(p.get("content"), &mut out),
            Some("function_call_output" | "custom_tool_call_output") => {
                let o = p.get("output").and_then(Value::as_str).unwrap_or("");
                // Some builds store `{"output": …, "metadata": …}` as the output string.
                match serde_json::from_str::<Value>(o) {
                    Ok(Value::Object(m)) => push_lines(
                        m.get("output").and_then(Value::as_str).unwrap_or(""),
                        &mut out,
                    ),
                    _ => push_lines(o, &mut out),
                }
            }
            _ => {}
        }
    }
    out
}

/// Gemini: the last version of each message (a repeated id replaces), with tool results.
fn gemini_lines(records: &[Value]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    let mut by_id: BTreeMap<String, Value> = BTreeMap::new();
    for r in records {
        if let Some(Value::Array(all)) = r.get("$set").and_then(|s| s.get("messages")) {
            order.clear();
            by_id.clear();
            for m in all {
                let id = m
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                order.push(id.clone());
                by_id.insert(id, m.clone());
            }
            continue;
        }
        let Some(id) = r.get("id").and_then(Value::as_str) else {
            continue;
        };
        if r.get("type").is_none() {
            continue;
        }
        if !by_id.contains_key(id) {
            order.push(id.to_string());
        }
        by_id.insert(id.to_string(), r.clone());
    }
    let mut out = Vec::new();
    for m in order.iter().filter_map(|id| by_id.get(id)) {
        part_lines(m.get("content"), &mut out);
        for call in m
            .get("toolCalls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for res in call
                .get("result")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let r = &res["functionResponse"]["response"];
                push_lines(
                    r.get("output").and_then(Value::as_str).unwrap_or(""),
                    &mut out,
                );
            }
        }
    }
    out
}

/// Copilot: prompts, replies and tool results of `events.jsonl`, or the history era's
/// timeline.
fn copilot_lines(raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(doc) = serde_json::from_str::<Value>(raw) {
        for t in doc
            .get("timeline")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            push_lines(
                t.get("text").and_then(Value::as_str).unwrap_or(""),
                &mut out,
            );
        }
        return out;
    }
    for v in raw
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        let d = &v["data"];
        match v.get("type").and_then(Value::as_str) {
            Some("user.message" | "assistant.message") => part_lines(d.get("content"), &mut out),
            Some("tool.execution_complete") => {
                let c = d.get("result").and_then(|r| r.get("content"));
                part_lines(c, &mut out)
            }
            _ => {}
        }
    }
    out
}

/// Every message line of every Codex, Gemini CLI and Copilot CLI shape fixture is found in
/// the mount's files of that fixture's session. Each fixture is laid out alone in its own
/// home, where the agent keeps it, and rendered; lines are read off the raw file above.
#[test]
fn every_codex_gemini_and_copilot_shape_line_is_greppable_in_its_session() {
    let shapes = shapes();
    let mut cases: Vec<(PathBuf, String, Vec<String>)> = Vec::new();
    for f in common::files_under(&shapes.join("codex")) {
        if f.extension().is_some_and(|x| x == "jsonl") {
            let raw = String::from_utf8_lossy(&std::fs::read(&f).expect("read")).into_owned();
            let dst = ".codex/sessions/2026/01/01/rollout-2026-01-01T00-00-00-0f0f0f0f-0000-7000-8000-000000000001.jsonl";
            cases.push((f, dst.into(), codex_lines(&raw)));
        }
    }
    for f in common::files_under(&shapes.join("gemini")) {
        let raw = String::from_utf8_lossy(&std::fs::read(&f).expect("read")).into_owned();
        let (dst, records) = match f.extension().and_then(|x| x.to_str()) {
            Some("jsonl") => (
                ".gemini/tmp/proj/chats/session-2026-01-01T00-00-0f0f0f0f.jsonl",
                raw.lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .collect::<Vec<_>>(),
            ),
            Some("json") => {
                let doc: Value = serde_json::from_str(&raw).expect("legacy chat");
                (
                    ".gemini/tmp/proj/chats/session-2026-01-01T00-00-0f0f0f0f.json",
                    doc["messages"].as_array().cloned().unwrap_or_default(),
                )
            }
            _ => continue,
        };
        cases.push((f, dst.into(), gemini_lines(&records)));
    }
    for f in common::files_under(&shapes.join("copilot")) {
        let raw = String::from_utf8_lossy(&std::fs::read(&f).expect("read")).into_owned();
        let dst = match f.extension().and_then(|x| x.to_str()) {
            Some("jsonl") => ".copilot/session-state/0f0f0f0f-0000-4000-8000-000000000001/events.jsonl",
            Some("json") => ".copilot/history-session-state/session_0f0f0f0f-0000-4000-8000-000000000002_1760187292206.json",
            _ => continue,
        };
        cases.push((f, dst.into(), copilot_lines(&raw)));
    }
    assert!(cases.len() >= 9, "{} fixtures", cases.len());
    let mut missing = Vec::new();
    let mut checked = 0;
    for (f, dst, lines) in &cases {
        assert!(!lines.is_empty(), "no lines read off {}", f.display());
        let home = Home::empty();
        let p = home.path().join(dst);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::copy(f, &p).expect("copy fixture");
        let out = tempfile::tempdir().expect("temp dir");
        let tree = out.path().join("tree");
        let o = home.sessfs(&["render", tree.to_str().expect("utf-8")]);
        assert!(o.status.success(), "render failed: {}", stderr(&o));
        let files: Vec<String> = texts_under(&tree).into_iter().map(|(_, t)| t).collect();
        for l in lines {
            checked += 1;
            if !files.iter().any(|t| t.contains(l.as_str())) {
                missing.push(format!("{}: {l:?}", f.display()));
            }
        }
    }
    // The shape fixtures hold 110 such lines; real stores' lines are the real-corpus suite's.
    assert!(checked >= 100, "only {checked} lines checked");
    assert!(
        missing.is_empty(),
        "{} of {checked} lines missing, e.g. {:#?}",
        missing.len(),
        &missing[..missing.len().min(12)]
    );
}
