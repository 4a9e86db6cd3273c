use super::parse::load_file;
use super::*;
use crate::model::{MessageKind, Role, SEALED_THINKING};
use std::collections::BTreeMap;
use std::time::Instant;

/// Project-written sessions, each reproducing one real shape (fixtures/shapes/README.md).
const SHAPES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/shapes");
const HOME_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/home");

/// Copy a shape fixture into `dir` (tests never read fixtures in place).
fn copy_shape(rel: &str, dir: &Path) -> PathBuf {
    let src = Path::new(SHAPES).join(rel);
    let dst = dir.join(src.file_name().expect("fixture has a name"));
    std::fs::copy(&src, &dst).expect("copy fixture");
    dst
}

fn write(path: &Path, text: &str) -> PathBuf {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
    path.to_path_buf()
}

fn load(dialect: Dialect, path: &Path) -> Session {
    load_file(dialect, path, &id_from_file_name(path)).session
}

fn all_text(msgs: &[crate::model::Message]) -> String {
    msgs.iter().map(|m| m.text()).collect::<Vec<_>>().join("\n")
}

fn env_with(home: &Path, vars: &[(&str, &Path)]) -> Env {
    Env {
        home: home.to_path_buf(),
        vars: vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.display().to_string()))
            .collect::<BTreeMap<_, _>>(),
    }
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"sess-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;

fn entry(id: &str, parent: Option<&str>, body: &str) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(r#"{{"id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z",{body}}}"#)
}

fn user(text: &str) -> String {
    format!(
        r#""type":"message","message":{{"role":"user","content":"{text}","timestamp":1767225600000}}"#
    )
}

fn assistant(text: &str) -> String {
    format!(
        r#""type":"message","message":{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}],"model":"m1","usage":{{"input":10,"output":5,"cacheRead":3,"cacheWrite":2,"cost":{{"total":0.25}}}},"stopReason":"stop","timestamp":1767225601000}}"#
    )
}

fn file_of(lines: &[String]) -> String {
    let mut s = lines.join("\n");
    s.push('\n');
    s
}

// ---- shape fixtures ---------------------------------------------------------------------

/// Real files of every shape are read by the real-corpus suite (`tests/real.rs`, when
/// `SESSFS_REAL_SESSIONS` names them); here, every shape fixture in every dialect.
#[test]
fn every_shape_fixture_loads_non_empty() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut files = Vec::new();
    for dir in ["pi"] {
        for ent in std::fs::read_dir(Path::new(SHAPES).join(dir)).expect("fixture dir") {
            let p = ent.expect("entry").path();
            if p.extension().and_then(|e| e.to_str()) == Some("jsonl") {
                let sub = tmp.path().join(dir);
                std::fs::create_dir_all(&sub).expect("mkdir");
                files.push(copy_shape(
                    &format!("{dir}/{}", p.file_name().expect("name").to_string_lossy()),
                    &sub,
                ));
            }
        }
    }
    files.push(copy_shape("openclaw/transcript.jsonl", tmp.path()));
    assert_eq!(files.len(), 6, "{files:?}");
    for f in &files {
        for d in Dialect::ALL {
            let s = load(d, f);
            assert!(
                s.warnings.is_empty(),
                "{} as {d:?}: {:?}",
                f.display(),
                s.warnings
            );
            assert!(!s.messages.is_empty(), "{} as {d:?}", f.display());
            assert!(s.messages.iter().all(|m| m.native_id.is_some()));
            assert!(s.title.is_some(), "{}", f.display());
        }
    }
}

#[test]
fn branched_session_has_one_branch_with_the_abandoned_haiku() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let f = copy_shape("pi/branched.jsonl", tmp.path());
    let s = load(Dialect::Pi, &f);
    assert_eq!(s.id, "b4a7c3e2-5d1f-4e60-8a90-1c2d3e4f5a6b");
    assert_eq!(s.cwd.as_deref(), Some("/home/dev/poems"));
    let active = all_text(&s.messages);
    assert!(active.contains("instead write a riddle to riddle.txt"));
    assert!(!active.contains("now write a second poem"));
    assert_eq!(s.branches.len(), 1);
    let b = &s.branches[0];
    assert!(all_text(&b.messages).contains("now write a second poem"));
    assert!(!all_text(&b.messages).contains("riddle"));
    assert_eq!(b.fork_point.as_deref(), Some("c3f00004"));
    assert_eq!(b.leaf.as_deref(), Some("c3f00008"));
    assert_eq!(b.name, "branch-c3f00008");
    assert_eq!(
        s.title.as_deref(),
        Some("write a short poem about rivers to river.txt")
    );
    assert_eq!(s.source.format, "pi-jsonl");
    assert_eq!(s.source.format_version.as_deref(), Some("3"));
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    // The active path ends in the user's own shell command.
    let last = s.messages.last().expect("messages");
    assert_eq!(last.kind, MessageKind::Execution);
    assert_eq!(last.content, "rm -f river.txt lake.txt riddle.txt");
    assert_eq!(last.tool_calls.len(), 1);
    assert_eq!(last.tool_calls[0].output.as_deref(), Some(""));
    assert_eq!(last.tool_calls[0].is_error, Some(false));
    // Thinking, tool calls, tool results, model, usage.
    let a = s
        .messages
        .iter()
        .find(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
        .expect("assistant with tool call");
    assert!(a
        .thinking
        .as_deref()
        .is_some_and(|t| t.contains("river poem")));
    assert_eq!(a.tool_calls[0].tool_name, "write");
    assert!(a.tool_calls[0].input.get("path").is_some());
    assert!(a.model.is_some());
    let t = s
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .expect("tool");
    let r = t.tool_result.as_ref().expect("result");
    assert_eq!(r.tool_call_id, a.tool_calls[0].tool_call_id);
    assert!(r.output.starts_with("Successfully wrote"));
    assert_eq!(s.messages[0].kind, MessageKind::Event);
    assert_eq!(
        s.updated_at.map(|t| t.to_rfc3339()).as_deref(),
        Some("2026-02-05T09:00:15+00:00")
    );
}

#[test]
fn partial_last_line_is_a_warning() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let f = copy_shape("pi/branched.jsonl", tmp.path());
    let mut text = std::fs::read_to_string(&f).expect("read");
    text.push_str(r#"{"type":"message","id":"c3f0000e","parentId":"c3f0000d","timestamp":"2026-02-05T09:00:16.000Z","message":{"role":"user","content":[{"type":"te"#);
    std::fs::write(&f, text).expect("write");
    let s = load(Dialect::Pi, &f);
    assert_eq!(
        s.messages.last().map(|m| m.content.as_str()),
        Some("rm -f river.txt lake.txt riddle.txt")
    );
    assert!(
        s.warnings.iter().any(|w| w.contains("partial last line")),
        "{:?}",
        s.warnings
    );
}

#[test]
fn image_fixture_has_a_placeholder_and_no_base64() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let f = copy_shape("pi/image.jsonl", tmp.path());
    let s = load(Dialect::Pi, &f);
    let text = all_text(&s.messages);
    assert!(text.contains("[image: image/png"), "{text}");
    // The file holds 40 KB of base64; no message keeps it.
    assert!(s.messages.iter().all(|m| m.content.len() < 2_000));
    assert!(!text.contains(";base64,"));
}

#[test]
fn v1_migration_is_deterministic_and_never_writes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let f = copy_shape("pi/v1_compaction.jsonl", tmp.path());
    let before = std::fs::read(&f).expect("read");
    let mtime = std::fs::metadata(&f)
        .and_then(|m| m.modified())
        .expect("mtime");
    let start = Instant::now();
    let a = load_file(Dialect::Pi, &f, "x");
    let took = start.elapsed();
    let b = load_file(Dialect::Pi, &f, "x");
    assert_eq!(a.session, b.session);
    assert_eq!(a.kept, b.kept);
    assert_eq!(std::fs::read(&f).expect("read"), before);
    assert_eq!(
        std::fs::metadata(&f)
            .and_then(|m| m.modified())
            .expect("mtime"),
        mtime
    );
    assert!(took.as_secs_f64() < 2.0, "load took {took:?}");

    let s = a.session;
    assert_eq!(s.id, "aa11bb22-cc33-4d44-8e55-ff6677889900");
    assert_eq!(s.source.format_version.as_deref(), Some("1"));
    assert!(s.branches.is_empty(), "a v1 file is linear");
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    // Ids come from line numbers; the compactions' kept indexes map to them.
    assert_eq!(s.messages[0].native_id.as_deref(), Some("line-2"));
    assert_eq!(
        a.kept,
        vec![
            ("line-33".to_owned(), "line-21".to_owned()),
            ("line-50".to_owned(), "line-37".to_owned())
        ]
    );
    let compactions: Vec<_> = s
        .messages
        .iter()
        .filter(|m| m.kind == MessageKind::CompactionSummary)
        .collect();
    assert_eq!(compactions.len(), 2);
    assert!(compactions[0].content.starts_with("# Context Checkpoint"));
    assert_eq!(
        s.messages
            .iter()
            .filter(|m| m.kind == MessageKind::Execution)
            .count(),
        3
    );
    // v1 header `branchedFrom` is the parent; that file is absent, so its name gives the id.
    assert_eq!(
        s.forked_from.as_deref(),
        Some("pi:99887766-5544-4332-8110-aabbccddeeff")
    );
    // Every assistant message knows its model.
    assert!(s
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .all(|m| m.model.is_some()));
    assert!(s.cost().total_usd > 0.0);
}

#[test]
fn openclaw_transcript_shows_errors_and_parallel_tool_calls() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let f = copy_shape("openclaw/transcript.jsonl", tmp.path());
    let s = load(Dialect::Openclaw, &f);
    assert_eq!(s.id, "0c1a0c1a-7e57-4abc-9def-0123456789ab");
    assert_eq!(s.source.format, "openclaw-jsonl");
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert!(s
        .messages
        .iter()
        .any(|m| m.content.contains("[error: fetch failed]")));
    let calls = s
        .messages
        .iter()
        .map(|m| m.tool_calls.len())
        .max()
        .unwrap_or(0);
    assert_eq!(calls, 5);
    assert_eq!(
        s.messages.iter().filter(|m| m.role == Role::Tool).count(),
        5
    );
    // The title is what the user typed, without OpenClaw's sender envelope.
    assert_eq!(s.title.as_deref(), Some("good morning"));
    // The gateway's own error notice used to count as a reply of the model
    // "gateway-injected", which led the model list and the transcript header.
    assert_eq!(s.models(), ["qwen3:4b", "gpt-5.1"]);
    assert_eq!(
        (s.messages[0].role, s.messages[0].kind),
        (Role::System, MessageKind::Event)
    );
    assert!(s
        .messages
        .iter()
        .any(|m| m.content.starts_with("Sender (untrusted metadata)")));
}

// ---- corrupt input ------------------------------------------------------------------------

#[test]
fn corrupt_corpus_lists_and_loads_with_warnings() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("sessions");
    let bucket = root.join("--w--");
    let garbage = write(
        &bucket.join("2026-01-01T00-00-00-000Z_garbage.jsonl"),
        &format!(
            "{HEADER}\nnot json at all\n{}\n{{\"half\":\n{}\n",
            entry("a", None, &user("hello there")),
            entry("b", Some("a"), &assistant("hi"))
        ),
    );
    let empty = write(&bucket.join("2026-01-01T00-00-00-000Z_empty.jsonl"), "");
    let big = write(
        &bucket.join("2026-01-01T00-00-00-000Z_big.jsonl"),
        &format!("{{\"x\":\"{}", "y".repeat(5 * 1024 * 1024)),
    );
    let mut bad_utf8 = format!("{HEADER}\n").into_bytes();
    bad_utf8.extend_from_slice(entry("a", None, &user("caf\u{e9}")).as_bytes());
    bad_utf8.extend_from_slice(b"\n\xff\xfe\xfd\n");
    let tail = entry("b", Some("a"), &user("tail XX")).replace("XX", "\u{1}\u{2}");
    bad_utf8.extend(tail.bytes().map(|b| match b {
        1 => 0xff,
        2 => 0xfe,
        b => b,
    }));
    bad_utf8.push(b'\n');
    let bad_path = bucket.join("2026-01-01T00-00-00-000Z_badutf8.jsonl");
    write(&bad_path, "");
    std::fs::write(&bad_path, &bad_utf8).expect("write");
    let future = write(
        &bucket.join("2026-01-01T00-00-00-000Z_future.jsonl"),
        &file_of(&[
            r#"{"type":"session","version":99,"id":"fut","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}"#.to_owned(),
            entry("a", None, &user("from the future")),
            entry("b", Some("a"), r#""type":"hologram","payload":1"#),
            entry("c", Some("b"), r#""type":"hologram","payload":2"#),
        ]),
    );

    let store = PiStore::new(Dialect::Pi, vec![Root::new(Agent::Pi, &root, "test")]);
    let listed = store.list();
    assert_eq!(listed.len(), 5, "{listed:?}");
    let by_path = |p: &Path| listed.iter().find(|l| l.path == p).expect("listed").clone();
    assert_eq!(by_path(&empty).id, "empty");
    assert_eq!(by_path(&big).id, "big");
    assert_eq!(by_path(&future).id, "fut");

    let s = store.load(&by_path(&garbage));
    assert_eq!(s.messages.len(), 2);
    assert!(
        s.warnings.iter().any(|w| w.contains("skipped")),
        "{:?}",
        s.warnings
    );

    let s = store.load(&by_path(&empty));
    assert!(s.messages.is_empty());
    assert!(!s.warnings.is_empty());
    assert_eq!(s.id, "empty");

    let s = store.load(&by_path(&big));
    assert!(s.messages.is_empty());
    assert!(!s.warnings.is_empty());

    let s = store.load(&by_path(&bad_path));
    assert_eq!(s.messages.len(), 2, "{:?}", s.warnings);
    assert!(!s.warnings.is_empty());

    let s = store.load(&by_path(&future));
    assert!(s
        .warnings
        .iter()
        .any(|w| w.contains("unknown future version 99")));
    let unknown: Vec<_> = s
        .warnings
        .iter()
        .filter(|w| w.contains("hologram"))
        .collect();
    assert_eq!(
        unknown.len(),
        1,
        "one warning per unknown type: {:?}",
        s.warnings
    );
    assert_eq!(s.messages.len(), 1);
    assert_eq!(s.source.format_version.as_deref(), Some("99"));
}

#[test]
fn parent_cycles_and_orphans_do_not_hang() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let f = write(
        &tmp.path().join("c.jsonl"),
        &file_of(&[
            HEADER.to_owned(),
            entry("a", Some("b"), &user("one")),
            entry("b", Some("a"), &user("two")),
            entry("c", Some("zzz"), &user("three")),
            entry("d", Some("d"), &user("four")),
        ]),
    );
    let s = load(Dialect::Pi, &f);
    assert!(
        s.warnings.iter().any(|w| w.contains("cycle")),
        "{:?}",
        s.warnings
    );
    assert!(s.warnings.iter().any(|w| w.contains("missing parent")));
    assert_eq!(all_text(&s.messages), "four");
}

// ---- dialect features -------------------------------------------------------------------

#[test]
fn labels_name_branches_and_names_stay_unique() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let f = write(
        &tmp.path().join("l.jsonl"),
        &file_of(&[
            HEADER.to_owned(),
            entry("r", None, &user("root")),
            entry("x1", Some("r"), &assistant("first try")),
            entry("x2", Some("x1"), &user("abandoned one")),
            entry("y1", Some("r"), &assistant("second try")),
            entry("y2", Some("y1"), &user("abandoned two")),
            entry("z1", Some("r"), &assistant("third try")),
            entry(
                "l1",
                Some("z1"),
                r#""type":"label","targetId":"x1","label":"tries/a""#,
            ),
            entry(
                "l2",
                Some("l1"),
                r#""type":"label","targetId":"y2","label":"tries/a""#,
            ),
            entry(
                "s1",
                Some("l2"),
                r#""type":"session_info","name":"Named\nsession""#,
            ),
            entry("z2", Some("s1"), &user("kept")),
        ]),
    );
    let s = load(Dialect::Pi, &f);
    assert_eq!(all_text(&s.messages), "root\nthird try\nkept");
    assert_eq!(s.title.as_deref(), Some("Named session"));
    let names: Vec<_> = s.branches.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["tries%2Fa", "tries%2Fa~2"]);
    assert_eq!(s.branches[0].leaf.as_deref(), Some("x2"));
    assert_eq!(s.branches[1].fork_point.as_deref(), Some("r"));
    assert_eq!(
        all_text(&s.branches[1].messages),
        "root\nsecond try\nabandoned two"
    );
    // Usage and cost.
    let a = &s.messages[1];
    let u = a.token_usage.expect("usage");
    assert_eq!(
        (
            u.input_tokens,
            u.output_tokens,
            u.cached_tokens,
            u.cache_write_tokens
        ),
        (10, 5, 3, 2)
    );
    assert_eq!(a.cost, Some(0.25));
    assert_eq!(a.model.as_deref(), Some("m1"));
}

#[test]
fn leaf_entries_and_side_entries_choose_the_active_path() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let f = write(
        &tmp.path().join("leaf.jsonl"),
        &file_of(&[
            HEADER.to_owned(),
            entry("a", None, &user("start")),
            entry("b", Some("a"), &assistant("old answer")),
            entry("c", Some("a"), &assistant("new answer")),
            entry("n1", Some("b"), r#""type":"leaf","targetId":"c""#),
            entry(
                "b2",
                Some("b"),
                &format!("{},\"appendMode\":\"side\"", assistant("aside")),
            ),
        ]),
    );
    let s = load(Dialect::Openclaw, &f);
    assert_eq!(all_text(&s.messages), "start\nnew answer");
    assert_eq!(s.branches.len(), 1, "side entries are not branch leaves");
    assert_eq!(s.branches[0].leaf.as_deref(), Some("b"));
    assert_eq!(s.branches[0].fork_point.as_deref(), Some("a"));
}

#[test]
fn omp_title_slot_model_change_blobs_and_extras() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut slot =
        r#"{"type":"title","v":1,"title":"Fix the parser","source":"user","pad":""#.to_owned();
    while slot.len() < 253 {
        slot.push(' ');
    }
    slot.push_str("\"}");
    assert_eq!(slot.len() + 1, 256);
    write(
        &tmp.path().join("2026-01-01T00-00-00-000Z_omp-1.jsonl"),
        &file_of(&[
            slot,
            r#"{"type":"session","version":3,"id":"omp-1","timestamp":"2026-01-01T00:00:00Z","cwd":"/home/u/p","parentSession":"older-id"}"#.to_owned(),
            entry("m", None, r#""type":"model_change","model":"openrouter/anthropic/claude-x","role":"default""#),
            entry("u", Some("m"), r#""type":"message","message":{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","data":"blob:sha256:0123456789abcdef0123","mimeType":"image/png"},{"type":"image","data":"AAAAAAAA","mimeType":"image/jpeg"}],"timestamp":1767225600000}"#),
            entry("d", Some("u"), r#""type":"message","message":{"role":"developer","content":"be terse","timestamp":1767225600000}"#),
            entry("t", Some("d"), r#""type":"ttsr_injection","injectedRules":["r"]"#),
            entry("k", Some("t"), r#""type":"credential_pin","provider":"p","hash":"h""#),
            entry("a", Some("k"), r#""type":"message","message":{"role":"assistant","content":[{"type":"thinking","thinking":"","thinkingSignature":"sig"},{"type":"thinking","thinking":"","thinkingSignature":"sig2"},{"type":"text","text":"done"},{"type":"toolCall","id":"c1","name":"bash","arguments":{"cmd":"ls"}}],"stopReason":"toolUse","timestamp":1767225601000}"#),
            entry("r", Some("a"), r#""type":"message","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"a.txt"}],"isError":true,"timestamp":1767225602000}"#),
            entry("p", Some("r"), r#""type":"message","message":{"role":"pythonExecution","code":"x = 1\nprint(x)","output":"1\n","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1767225603000}"#),
            entry("h", Some("p"), r#""type":"custom","customType":"session_exit","data":{}"#),
            entry("cm", Some("h"), r#""type":"custom_message","customType":"note","content":"shown note","display":true"#),
            entry("cx", Some("cm"), r#""type":"custom_message","customType":"note","content":"hidden note","display":false"#),
            entry("hm", Some("cx"), r#""type":"message","message":{"role":"hookMessage","customType":"x","content":"hook text","display":true,"timestamp":1767225604000}"#),
            entry("bs", Some("hm"), r#""type":"branch_summary","fromId":"root","summary":"tried another way""#),
        ]),
    );
    let store = PiStore::new(
        Dialect::Omp,
        vec![Root::new(Agent::Omp, tmp.path(), "test")],
    );
    let listed = store.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, "omp-1");
    let s = store.load(&listed[0]);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.title.as_deref(), Some("Fix the parser"));
    assert_eq!(s.forked_from.as_deref(), Some("omp:older-id"));
    assert_eq!(s.source.format, "omp-jsonl");
    let m = &s.messages;
    assert_eq!(
        m[0].content,
        "Model changed to openrouter/anthropic/claude-x"
    );
    assert_eq!(
        m[1].content,
        "look\n\n[image: blob sha256:0123456789ab]\n\n[image: image/jpeg, 6 B]"
    );
    assert_eq!(
        (m[2].role, m[2].content.as_str()),
        (Role::System, "be terse")
    );
    assert_eq!(m[3].thinking.as_deref(), Some(SEALED_THINKING));
    assert_eq!(m[3].model.as_deref(), Some("anthropic/claude-x"));
    assert_eq!(m[3].tool_calls[0].input, serde_json::json!({"cmd": "ls"}));
    assert!(m[4].tool_result.as_ref().is_some_and(|r| r.is_error));
    assert_eq!(m[5].content, "x = 1\nprint(x)");
    assert_eq!(m[5].tool_calls[0].tool_name, "python");
    assert_eq!(m[5].tool_calls[0].output.as_deref(), Some("1"));
    assert_eq!(m[6].content, "shown note");
    assert_eq!(m[7].content, "hook text");
    assert_eq!(m[8].kind, MessageKind::BranchSummary);
    assert_eq!(m.len(), 9);
}

#[test]
fn fork_parent_path_is_resolved_through_its_header() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let parent = write(
        &tmp.path().join("2026-01-01T00-00-00-000Z_not-the-id.jsonl"),
        &file_of(&[HEADER.to_owned(), entry("a", None, &user("p"))]),
    );
    let child = write(
        &tmp.path().join("child.jsonl"),
        &file_of(&[
            format!(
                r#"{{"type":"session","version":3,"id":"kid","timestamp":"2026-01-02T00:00:00Z","cwd":"/w","parentSession":{}}}"#,
                serde_json::Value::String(parent.display().to_string())
            ),
            entry("a", None, &user("c")),
        ]),
    );
    let s = load(Dialect::Indusagi, &child);
    assert_eq!(s.forked_from.as_deref(), Some("indusagi:sess-1"));
    assert_eq!(s.source.format, "indusagi-jsonl");
}

// ---- listing and discovery ----------------------------------------------------------------

#[test]
fn omp_buckets_in_every_spelling_list_and_artifacts_do_not() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join(".omp/agent/sessions");
    let body = |id: &str| {
        file_of(&[
            format!(
                r#"{{"type":"session","version":3,"id":"{id}","timestamp":"2026-01-01T00:00:00Z","cwd":"/x"}}"#
            ),
            entry("a", None, &user("hi")),
        ])
    };
    let a = write(
        &root.join("--home-u-legacy--/2026-01-01T00-00-00-000Z_id-a.jsonl"),
        &body("id-a"),
    );
    write(
        &root.join("-Projects-foo/2026-01-02T00-00-00-000Z_id-b.jsonl"),
        &body("id-b"),
    );
    write(
        &root.join("-tmp-scratch/2026-01-03T00-00-00-000Z_id-c.jsonl"),
        &body("id-c"),
    );
    write(
        &root.join("2026-01-04T00-00-00-000Z_id-d.jsonl"),
        &body("id-d"),
    );
    // Artifacts of session a (a subagent's own session file) and of the flat session d.
    write(&a.with_extension("").join("0.task.jsonl"), &body("sub-1"));
    write(
        &root.join("2026-01-04T00-00-00-000Z_id-d/1.task.jsonl"),
        &body("sub-2"),
    );
    write(&root.join("-Projects-foo/notes.txt"), "x");
    write(&root.join("-Projects-foo/.hidden.jsonl"), &body("hidden"));
    let env = env_with(tmp.path(), &[]);
    let roots: Vec<Root> = candidates(&env, Dialect::Omp)
        .into_iter()
        .filter(|r| r.path.is_dir())
        .take(1)
        .collect();
    assert_eq!(roots[0].how, "default");
    let store = PiStore::new(Dialect::Omp, roots);
    let listed = store.list();
    let mut ids: Vec<_> = listed.iter().map(|l| l.id.clone()).collect();
    ids.sort();
    assert_eq!(ids, ["id-a", "id-b", "id-c", "id-d"]);
    // The subagent sessions hang under their parents and version them.
    let la = listed.iter().find(|l| l.id == "id-a").expect("a");
    assert_eq!(la.sources.len(), 2);
    let s = store.load(la);
    assert_eq!(s.subagents.len(), 1);
    assert_eq!(s.subagents[0].name, "0.task");
    let child = s.subagents[0].session.as_ref().expect("nested session");
    assert_eq!(child.id, "sub-1");
    assert_eq!(child.parent.as_deref(), Some("omp:id-a"));
}

#[test]
fn openclaw_lists_agents_and_archived_copies() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join(".openclaw-work");
    let s = state.join("agents/main/sessions");
    let body = file_of(&[HEADER.to_owned(), entry("a", None, &user("hi"))]);
    write(&s.join("u1.jsonl"), &body);
    write(&s.join("u2-topic-7.jsonl"), &body);
    write(&s.join("u1.jsonl.reset.2026-01-01T00-00-00"), &body);
    write(&s.join("u1.jsonl.bak"), &body);
    write(&s.join("u1.checkpoint.3.jsonl"), &body);
    write(&s.join("sessions.json"), "{}");
    write(&state.join("agents/other/sessions/u3.jsonl"), &body);
    let env = env_with(tmp.path(), &[]);
    let roots: Vec<Root> = candidates(&env, Dialect::Openclaw)
        .into_iter()
        .filter(|r| r.path.is_dir())
        .collect();
    assert_eq!(roots.len(), 1);
    assert_eq!(roots[0].how, "profile");
    let files: Vec<String> = session_files(Dialect::Openclaw, &roots[0].path)
        .iter()
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    // Archived copies are sessions of their own; what the user deleted stays hidden.
    assert_eq!(
        files,
        [
            "u1.checkpoint.3.jsonl",
            "u1.jsonl",
            "u1.jsonl.bak",
            "u1.jsonl.reset.2026-01-01T00-00-00",
            "u2-topic-7.jsonl",
            "u3.jsonl"
        ]
    );
}

#[test]
fn discovery_honours_each_agents_variables() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let h = tmp.path();
    let x = h.join("elsewhere");
    let find = |env: &Env, d: Dialect| -> Vec<(String, PathBuf)> {
        candidates(env, d)
            .into_iter()
            .map(|r| (r.how, r.path))
            .collect()
    };

    let env = env_with(h, &[("PI_CODING_AGENT_DIR", &x)]);
    let pi = find(&env, Dialect::Pi);
    assert_eq!(
        pi[0],
        ("PI_CODING_AGENT_DIR".to_owned(), x.join("sessions"))
    );
    assert_eq!(pi[1], ("default".to_owned(), h.join(".pi/agent/sessions")));
    assert_eq!(pi[2], ("spec".to_owned(), h.join(".pi/agent/sessions")));
    // PI_CODING_AGENT_DIR is pi's; omp does not take it.
    assert!(find(&env, Dialect::Omp)
        .iter()
        .all(|(how, _)| how != "PI_CODING_AGENT_DIR"));

    std::fs::create_dir_all(h.join(".omp/profiles/work")).expect("mkdir");
    let env = env_with(
        h,
        &[
            ("OMP_CODING_AGENT_DIR", &x),
            ("PI_CONFIG_DIR", &h.join("cfg")),
        ],
    );
    let omp = find(&env, Dialect::Omp);
    assert_eq!(
        omp[0],
        ("OMP_CODING_AGENT_DIR".to_owned(), x.join("sessions"))
    );
    assert_eq!(
        omp[1],
        ("PI_CONFIG_DIR".to_owned(), h.join("cfg/agent/sessions"))
    );
    assert_eq!(
        omp[2],
        ("default".to_owned(), h.join(".omp/agent/sessions"))
    );
    assert_eq!(
        omp[3],
        (
            "profile".to_owned(),
            h.join(".omp/profiles/work/agent/sessions")
        )
    );

    let env = env_with(
        h,
        &[
            ("INDUSAGI_CODING_AGENT_DIR", &x),
            ("INDUSAGI_DIR", &h.join("ind")),
        ],
    );
    let ind = find(&env, Dialect::Indusagi);
    assert_eq!(
        ind[0],
        ("INDUSAGI_CODING_AGENT_DIR".to_owned(), x.join("sessions"))
    );
    assert_eq!(
        ind[1],
        ("INDUSAGI_DIR".to_owned(), h.join("ind/agent/sessions"))
    );
    assert_eq!(
        ind[2],
        ("default".to_owned(), h.join(".indusagi/agent/sessions"))
    );
    let env = env_with(h, &[("INDUSAGI_AGENT_DIR", &x)]);
    assert_eq!(find(&env, Dialect::Indusagi)[0].0, "INDUSAGI_AGENT_DIR");

    std::fs::create_dir_all(h.join(".openclaw-desktop")).expect("mkdir");
    let env = env_with(
        h,
        &[
            ("OPENCLAW_STATE_DIR", &x),
            ("CLAWDBOT_STATE_DIR", &h.join("cb")),
        ],
    );
    let oc = find(&env, Dialect::Openclaw);
    assert_eq!(oc[0], ("OPENCLAW_STATE_DIR".to_owned(), x.clone()));
    assert_eq!(oc[1], ("CLAWDBOT_STATE_DIR".to_owned(), h.join("cb")));
    for name in [".openclaw", ".clawdbot", ".moldbot", ".moltbot"] {
        assert!(oc.contains(&("default".to_owned(), h.join(name))), "{name}");
    }
    assert!(oc.contains(&("profile".to_owned(), h.join(".openclaw-desktop"))));
    assert!(oc.contains(&("spec".to_owned(), h.join(".openclaw/sessions"))));

    // open_all picks the existing roots up, one store per agent.
    for d in [
        h.join(".pi/agent/sessions"),
        h.join(".omp/agent/sessions"),
        h.join(".indusagi/agent/sessions"),
        h.join(".openclaw/agents/main/sessions"),
    ] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    let stores = crate::stores::open_all(&env_with(h, &[]), &[]);
    let agents: Vec<Agent> = stores.iter().map(|s| s.agent()).collect();
    for a in [Agent::Pi, Agent::Omp, Agent::Indusagi, Agent::Openclaw] {
        assert!(agents.contains(&a), "{a}");
    }
    let pi_store = stores.iter().find(|s| s.agent() == Agent::Pi).expect("pi");
    assert_eq!(
        pi_store.roots().len(),
        1,
        "default and spec are one directory"
    );
}

#[test]
fn hand_written_home_fixtures_load() {
    let home = Path::new(HOME_FIXTURES);
    let env = env_with(home, &[]);
    let mut seen = 0;
    for d in [Dialect::Pi, Dialect::Omp, Dialect::Indusagi] {
        let mut roots: Vec<Root> = candidates(&env, d)
            .into_iter()
            .filter(|r| r.path.is_dir())
            .collect();
        roots.dedup_by(|a, b| a.path == b.path);
        let store = PiStore::new(d, roots);
        for l in store.list() {
            let s = store.load(&l);
            assert!(s.warnings.is_empty(), "{d:?}: {:?}", s.warnings);
            assert!(s.turn_count() >= 2, "{d:?}");
            assert!(s.title.is_some());
            assert!(s.messages.iter().any(|m| !m.tool_calls.is_empty()));
            if d == Dialect::Pi {
                assert_eq!(s.branches.len(), 1);
                assert!(s.messages.iter().any(|m| m.thinking.is_some()));
            }
            seen += 1;
        }
    }
    assert_eq!(seen, 3);
}

/// `bashExecution` used to become one text blob (`$ cmd`, output, `[exit code 0]`), which
/// the transcript showed as a single "Command" block with the output inside it. The command
/// is now the text and one call carries the output, so it renders as Command / Output with a
/// tool file; a failure is an error call that keeps its exit code.
#[test]
fn bash_execution_is_a_command_with_one_output_call() {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = write(
        &tmp.path().join("s.jsonl"),
        &file_of(&[
            HEADER.to_owned(),
            entry(
                "b1",
                None,
                r#""type":"message","message":{"role":"bashExecution","command":"ls","output":"a\nb\n","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1767225600000}"#,
            ),
            entry(
                "b2",
                Some("b1"),
                r#""type":"message","message":{"role":"bashExecution","command":"false","output":"","exitCode":1,"cancelled":false,"truncated":true,"timestamp":1767225601000}"#,
            ),
        ]),
    );
    let s = load(Dialect::Pi, &path);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let ok = &s.messages[0];
    assert_eq!((ok.role, ok.kind), (Role::User, MessageKind::Execution));
    assert_eq!(ok.content, "ls");
    assert_eq!(ok.tool_calls.len(), 1);
    let call = &ok.tool_calls[0];
    assert_eq!(call.tool_name, "bash");
    assert_eq!(call.input, serde_json::json!({"command": "ls"}));
    assert_eq!(call.output.as_deref(), Some("a\nb"));
    assert_eq!(call.is_error, Some(false));
    let failed = &s.messages[1].tool_calls[0];
    assert_eq!(
        failed.output.as_deref(),
        Some("[exit code 1]\n[output truncated]")
    );
    assert_eq!(failed.is_error, Some(true));
    let t = crate::render::transcript::render(&s);
    assert!(
        t.contains("**Command:**\n\n```\nls\n```\n\n**Output:** ok"),
        "{t}"
    );
    assert!(!t.contains("$ ls"));
}

/// A pi session that opens with a bare `/mode` sent as a prompt (a real shape) used to take
/// it as its title; the first real prompt names the session.
#[test]
fn bare_slash_command_does_not_title_the_session() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = load(
        Dialect::Pi,
        &copy_shape("pi/v1_slash_first.jsonl", tmp.path()),
    );
    assert_eq!(
        s.title.as_deref(),
        Some("read docs/colors.md and list every colour token it defines")
    );
    // Only a bare command: it is still the title.
    let path = write(
        &tmp.path().join("only.jsonl"),
        &file_of(&[HEADER.to_owned(), entry("u", None, &user("/mode"))]),
    );
    assert_eq!(load(Dialect::Pi, &path).title.as_deref(), Some("/mode"));
}

/// Extension messages (`custom_message`, `custom`/`hookMessage` roles), omp developer
/// messages and file mentions are context the harness injected: they showed as plain
/// system text, indistinguishable from the conversation.
#[test]
fn injected_messages_are_labelled_context_not_prompts() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let p = write(
        &tmp.path().join("2026-01-01T00-00-00-000Z_sess-1.jsonl"),
        &file_of(&[
            HEADER.to_owned(),
            entry("u", None, &user("hello")),
            entry(
                "cm",
                Some("u"),
                r#""type":"custom_message","customType":"plan-mode","content":"Plan mode is on: do not edit files.","display":true"#,
            ),
            entry(
                "hm",
                Some("cm"),
                r#""type":"message","message":{"role":"hookMessage","customType":"lint","content":"3 lint errors","display":true,"timestamp":1767225604000}"#,
            ),
            entry(
                "d",
                Some("hm"),
                r#""type":"message","message":{"role":"developer","content":"be terse","timestamp":1767225604000}"#,
            ),
            entry("a", Some("d"), &assistant("ok")),
        ]),
    );
    let s = load(Dialect::Pi, &p);
    let got: Vec<(Role, MessageKind, Option<&str>, &str)> = s
        .messages
        .iter()
        .map(|m| (m.role, m.kind, m.label.as_deref(), m.content.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (Role::User, MessageKind::Normal, None, "hello"),
            (
                Role::System,
                MessageKind::Context,
                Some("plan-mode"),
                "Plan mode is on: do not edit files."
            ),
            (
                Role::System,
                MessageKind::Context,
                Some("lint"),
                "3 lint errors"
            ),
            (
                Role::System,
                MessageKind::Context,
                Some("developer message"),
                "be terse"
            ),
            (Role::Assistant, MessageKind::Normal, None, "ok"),
        ]
    );
    assert_eq!(s.turn_count(), 1);
}

/// Fields of an unexpected type read as absent and a present `null` still counts, as when
/// lines were read as `Value` trees: a message that is no object is an unknown-role
/// message, a bare line with a `role` is a message, a `null` name clears the title, and
/// the last of two duplicate keys wins.
#[test]
fn odd_field_types_read_as_before() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let lines = [
        HEADER.to_owned(),
        entry("a1", None, &user("hello")),
        entry("a2", Some("a1"), r#""type":"message","message":null"#),
        entry(
            "a3",
            Some("a2"),
            r#""type":"message","message":{"role":"assistant","model":7,"content":[5,"bare",{"type":"text","text":["x"]},{"type":"toolCall","id":"c1","name":"bash","input":{"a":1},"arguments":null}],"usage":{"input":"9","output":4,"cost":{"total":"x"},"costUSD":0.5}}"#,
        ),
        entry("a4", Some("a3"), r#""type":"session_info","name":"Named""#),
        entry("a5", Some("a4"), r#""type":"session_info","name":null"#),
        entry(
            "a6",
            Some("a5"),
            r#""type":"message","message":{"role":"user","content":"first"},"message":{"role":"user","content":"last"}"#,
        ),
        r#"{"role":"user","content":"old bare line","id":"a7","parentId":"a6"}"#.to_owned(),
    ];
    let path = write(
        &tmp.path().join("s.jsonl"),
        &format!("{}\n", lines.join("\n")),
    );
    let s = load(Dialect::Pi, &path);
    let got: Vec<(Role, &str)> = s.messages.iter().map(|m| (m.role, m.text())).collect();
    assert_eq!(
        got,
        [
            (Role::User, "hello"),
            (Role::System, ""),
            (Role::Assistant, "bare"),
            (Role::User, "last"),
            (Role::User, "old bare line"),
        ]
    );
    let a = &s.messages[2];
    assert_eq!(a.model, None);
    assert_eq!(a.tool_calls[0].input, serde_json::Value::Null);
    let u = a.token_usage.expect("usage");
    assert_eq!((u.input_tokens, u.output_tokens), (0, 4));
    assert_eq!(a.cost, Some(0.5));
    assert_ne!(s.title.as_deref(), Some("Named"));
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("unknown message role \"\"")),
        "{:?}",
        s.warnings
    );
}

/// An append keeps a listed session as it was listed; a header written after the listing
/// (a file listed while still empty) can give another id, and then the store is listed
/// again.
#[test]
fn an_append_keeps_the_listing_until_a_header_names_another_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("sessions");
    let header = |id: &str| {
        format!(
            r#"{{"type":"session","version":3,"id":"{id}","timestamp":"2026-03-01T10:00:00.000Z","cwd":"/p"}}"#
        )
    };
    let full = write(
        &root.join("--p--/2026-03-01T10-00-00-000Z_aaaa.jsonl"),
        &format!("{}\n", header("aaaa")),
    );
    let empty = write(&root.join("--p--/2026-03-01T11-00-00-000Z_bbbb.jsonl"), "");
    let store = PiStore::new(Dialect::Pi, vec![Root::new(Agent::Pi, &root, "test")]);
    let listed = store.list();
    let of = |p: &Path| listed.iter().find(|l| l.path == p).expect("listed");
    let line = r#"{"type":"message","id":"m1","parentId":null,"timestamp":"2026-03-01T10:00:01.000Z","message":{"role":"user","content":"hi"}}"#;

    std::fs::write(&full, format!("{}\n{line}\n", header("aaaa"))).expect("append");
    assert!(store.keeps_listing(of(&full)));

    std::fs::write(&empty, format!("{}\n", header("bbbb"))).expect("header");
    assert!(
        store.keeps_listing(of(&empty)),
        "the header names the id the name gave"
    );
    std::fs::write(&empty, format!("{}\n", header("cccc"))).expect("header");
    assert!(
        !store.keeps_listing(of(&empty)),
        "the header names another id"
    );
}

/// An OpenClaw `web_fetch` result, stored as the tool's pretty JSON payload, shows the page
/// it fetched, then the other fields on one line; the same record read as pi (whose tools
/// return no such payload), and OpenClaw's other tools, stay as stored.
#[test]
fn openclaw_web_fetch_shows_the_page() {
    let payload = serde_json::to_string_pretty(&serde_json::json!({
        "url": "https://example.org/skill.md", "status": 200,
        "text": "---\nname: demo\n---\n\n# Demo \"quoted\"\n", "cached": true
    }))
    .unwrap();
    let result = |id: &str, tool: &str| {
        let msg = serde_json::json!({"role": "toolResult", "toolCallId": id, "toolName": tool,
            "content": [{"type": "text", "text": payload}], "isError": false,
            "timestamp": 1767225602000_i64});
        format!(r#""type":"message","message":{msg}"#)
    };
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        &tmp.path().join("s.jsonl"),
        &file_of(&[
            HEADER.to_owned(),
            entry("u", None, &user("fetch it")),
            entry("r1", Some("u"), &result("c1", "web_fetch")),
            entry("r2", Some("r1"), &result("c2", "web_search")),
        ]),
    );
    let outputs = |d: Dialect| -> Vec<String> {
        load(d, &f)
            .messages
            .iter()
            .filter_map(|m| m.tool_result.as_ref().map(|r| r.output.clone()))
            .collect()
    };
    let page = "---\nname: demo\n---\n\n# Demo \"quoted\"\n\n\
                {\"url\":\"https://example.org/skill.md\",\"status\":200,\"cached\":true}";
    assert_eq!(outputs(Dialect::Openclaw), [page, payload.as_str()]);
    assert_eq!(outputs(Dialect::Pi), [payload.as_str(), payload.as_str()]);
}

#[test]
fn openclaw_a_tool_that_threw_shows_its_error_and_failed() {
    // What OpenClaw stores when a tool throws: a result not marked as an error whose text is
    // the pretty JSON `{status: "error", tool, error}`.
    let payload = "{\n  \"status\": \"error\",\n  \"tool\": \"exec\",\n  \"error\": \"not allowed.\\nFix-it keys:\\n- tools.elevated.enabled\"\n}";
    let msg = serde_json::json!({"role": "toolResult", "toolCallId": "c1", "toolName": "exec",
        "content": [{"type": "text", "text": payload}], "isError": false,
        "timestamp": 1767225602000_i64});
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        &tmp.path().join("s.jsonl"),
        &file_of(&[
            HEADER.to_owned(),
            entry("u", None, &user("run it")),
            entry(
                "r1",
                Some("u"),
                &format!(r#""type":"message","message":{msg}"#),
            ),
        ]),
    );
    let result = |d: Dialect| {
        load(d, &f)
            .messages
            .iter()
            .find_map(|m| m.tool_result.clone())
            .expect("a result")
    };
    let r = result(Dialect::Openclaw);
    assert_eq!(
        r.output,
        "not allowed.\nFix-it keys:\n- tools.elevated.enabled\n\n{\"status\":\"error\",\"tool\":\"exec\"}"
    );
    assert!(r.is_error);
    // pi itself marks its errors; its results stay as stored.
    let r = result(Dialect::Pi);
    assert_eq!(r.output, payload);
    assert!(!r.is_error);
}
