//! Records the pi family's JSONL files hold in odd shapes, each kept whole and in place:
//! two records glued onto one line of an id-less (v1) file, OpenClaw's archived copies of a
//! transcript, and lines no parser can read.
//!
//! Every fixture is generated here, in the shapes real files have (a v1 file of entries
//! without ids, a line where one record follows another with no newline, an OpenClaw
//! sessions directory with `.reset.<ts>`, `.bak-…`, `.checkpoint.<n>.jsonl` and
//! `.deleted.<ts>` copies). Expected values come from the generator's own record, never
//! from sessfs' parser; the sessions are read through `sessfs render`, `list` and `show`.

mod common;

use common::{stderr, stdout, Home};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// Write `text` at `path`, creating its directories.
fn write(path: &Path, text: &[u8]) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write fixture");
}

/// `sessfs render` of the home (with `extra` arguments) into a fresh directory.
fn render(home: &Home, extra: &[&str]) -> TempDir {
    let out = tempfile::Builder::new()
        .prefix("sessfs-render")
        .tempdir()
        .expect("temp dir");
    let dir = out.path().join("tree");
    let mut args = vec!["render", dir.to_str().expect("utf-8")];
    args.extend_from_slice(extra);
    let o = home.sessfs(&args);
    assert!(o.status.success(), "render failed: {}", stderr(&o));
    out
}

fn tree(out: &TempDir) -> PathBuf {
    out.path().join("tree")
}

/// `sessfs list --json` of the home (with `extra` arguments).
fn list(home: &Home, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["list", "--json"];
    args.extend_from_slice(extra);
    let o = home.sessfs(&args);
    assert!(o.status.success(), "list failed: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("list --json")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn meta(dir: &Path) -> Value {
    serde_json::from_str(&read(&dir.join("meta.json"))).expect("meta.json")
}

/// Every file under `dir`, relative path → bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    common::files_under(dir)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("read rendered file");
            (p.strip_prefix(dir).expect("under dir").to_path_buf(), bytes)
        })
        .collect()
}

/// Each of `needles` occurs in `text`, in this order.
fn assert_in_order(text: &str, needles: &[String], what: &str) {
    let mut at = 0;
    for n in needles {
        match text[at..].find(n.as_str()) {
            Some(i) => at += i + n.len(),
            None => panic!(
                "{what}: {n:?} missing or out of order (found anywhere: {})",
                text.contains(n.as_str())
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Class 1: an id-less (v1) file where one line holds two records

/// What the v1 generator wrote: the text users and tools see, and the usage it recorded.
#[derive(Default)]
struct V1Record {
    /// Prompts, replies and tool output lines, in file order.
    texts: Vec<String>,
    prompts: usize,
    replies: usize,
    tool_results: usize,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    usd: f64,
}

/// A pi v1 session (header without `version`, entries without `id`/`parentId`) of `turns`
/// turns, each a prompt, a tool call, its result and a reply. Two lines hold two records
/// each, written back to back with no newline, as real files have them: a reply glued to
/// the next prompt (mid-file), and the last reply glued to a compaction (at the end).
fn v1_session(id: &str, turns: usize) -> (String, V1Record) {
    let mut rec = V1Record::default();
    let ts = |i: usize, k: usize| format!("2025-12-17T19:{:02}:{:02}.000Z", i % 60, k * 10);
    let mut lines: Vec<String> = vec![json!({
        "type": "session", "id": id, "timestamp": "2025-12-17T19:00:00.000Z",
        "cwd": "/work/proj", "provider": "anthropic", "modelId": "claude-opus-4-5",
        "thinkingLevel": "off"
    })
    .to_string()];
    let usage = |rec: &mut V1Record, i: usize, k: u64| {
        let (input, output, read, write) = (10 + i as u64, 20 + k, 1000 * i as u64, 7);
        let cost = 0.001 * (i as f64 + 1.0) + 0.0001 * k as f64;
        rec.input += input;
        rec.output += output;
        rec.cache_read += read;
        rec.cache_write += write;
        rec.usd += cost;
        json!({"input": input, "output": output, "cacheRead": read, "cacheWrite": write,
               "totalTokens": input + output + read + write,
               "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0,
                        "total": cost}})
    };
    let glue_after = turns / 2;
    for i in 0..turns {
        let prompt = format!("prompt {i}: please look at module {i}");
        let call = format!("toolu_{i:04}");
        let out1 = format!("tool output {i} first line");
        let out2 = format!("tool output {i} second line");
        let reply = format!("reply {i}: module {i} is fine");
        rec.texts
            .extend([prompt.clone(), out1.clone(), out2.clone(), reply.clone()]);
        rec.prompts += 1;
        rec.replies += 2;
        rec.tool_results += 1;
        let user = json!({"type": "message", "timestamp": ts(i, 0), "message": {
            "role": "user", "content": [{"type": "text", "text": prompt}], "timestamp": 1}});
        let u1 = usage(&mut rec, i, 1);
        let asked = json!({"type": "message", "timestamp": ts(i, 1), "message": {
            "role": "assistant", "content": [{"type": "toolCall", "id": call, "name": "bash",
            "arguments": {"command": format!("cat module{i}.rs")}}],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-opus-4-5",
            "usage": u1, "stopReason": "toolUse", "timestamp": 2}});
        let result = json!({"type": "message", "timestamp": ts(i, 2), "message": {
            "role": "toolResult", "toolCallId": call, "toolName": "bash",
            "content": [{"type": "text", "text": format!("{out1}\n{out2}")}],
            "isError": false, "timestamp": 3}});
        let u2 = usage(&mut rec, i, 2);
        let answered = json!({"type": "message", "timestamp": ts(i, 3), "message": {
            "role": "assistant", "content": [{"type": "text", "text": reply}],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-opus-4-5",
            "usage": u2, "stopReason": "stop", "timestamp": 4}});
        if i == glue_after + 1 {
            // The previous reply and this prompt share one line.
            let prev = lines.pop().expect("a reply before");
            lines.push(format!("{prev}{user}"));
        } else {
            lines.push(user.to_string());
        }
        lines.push(asked.to_string());
        lines.push(result.to_string());
        lines.push(answered.to_string());
        if i == 1 {
            lines.push(
                json!({"type": "thinking_level_change", "timestamp": ts(i, 4),
                       "thinkingLevel": "low"})
                .to_string(),
            );
        }
    }
    let summary = "# Summary of the whole session so far";
    rec.texts.push(summary.to_owned());
    let compaction = json!({"type": "compaction", "timestamp": "2025-12-17T21:00:00.000Z",
        "summary": summary, "firstKeptEntryIndex": 3, "tokensBefore": 12345});
    let last = lines.pop().expect("a last reply");
    lines.push(format!("{last}{compaction}"));
    (lines.join("\n") + "\n", rec)
}

/// A linear v1 file with two records on one line stays one linear transcript, in file
/// order, with every prompt, reply and tool output and the usage the file records.
#[test]
fn two_records_on_one_line_of_an_id_less_file_stay_linear_and_in_order() {
    let home = Home::empty();
    let turns = 8;
    let stores = [
        (
            "pi",
            ".pi/agent/sessions/--work-proj--",
            "11111111-0000-4000-8000-000000000001",
        ),
        (
            "omp",
            ".omp/agent/sessions/--work-proj--",
            "11111111-0000-4000-8000-000000000002",
        ),
        (
            "indusagi",
            ".indusagi/agent/sessions/--work-proj--",
            "11111111-0000-4000-8000-000000000003",
        ),
    ];
    let mut records = Vec::new();
    for (agent, dir, id) in stores {
        let (text, rec) = v1_session(id, turns);
        let path = home
            .path()
            .join(dir)
            .join(format!("2025-12-17T19-00-00-000Z_{id}.jsonl"));
        write(&path, text.as_bytes());
        records.push((agent, id, rec));
    }
    let out = render(&home, &[]);
    for (agent, id, rec) in &records {
        let dir = tree(&out).join(agent).join(id);
        let transcript = read(&dir.join("transcript.md"));
        assert_in_order(&transcript, &rec.texts, &format!("{agent} transcript.md"));
        assert!(
            !dir.join("branches").exists(),
            "{agent}: a linear file has no branches"
        );
        let m = meta(&dir);
        let warnings = m["warnings"].to_string();
        assert!(
            !warnings.contains("cycle") && !warnings.contains("duplicate"),
            "{agent}: {warnings}"
        );
        assert_eq!(m["turnCount"], rec.prompts, "{agent} turns");
        let c = &m["cost"];
        assert_eq!(c["inputTokens"], rec.input, "{agent} input");
        assert_eq!(c["outputTokens"], rec.output, "{agent} output");
        assert_eq!(c["cacheReadTokens"], rec.cache_read, "{agent} cache read");
        assert_eq!(
            c["cacheWriteTokens"], rec.cache_write,
            "{agent} cache write"
        );
        let usd = c["totalUsd"].as_f64().expect("priced");
        assert!(
            (usd - rec.usd).abs() < 1e-9,
            "{agent}: {usd} != {}",
            rec.usd
        );

        let mut roles: BTreeMap<String, usize> = BTreeMap::new();
        for l in read(&dir.join("messages.jsonl")).lines().skip(1) {
            let v: Value = serde_json::from_str(l).expect("messages.jsonl line");
            *roles
                .entry(v["role"].as_str().unwrap_or("").to_owned())
                .or_default() += 1;
        }
        assert_eq!(roles.get("user"), Some(&rec.prompts), "{agent} {roles:?}");
        assert_eq!(
            roles.get("assistant"),
            Some(&rec.replies),
            "{agent} {roles:?}"
        );
        assert_eq!(
            roles.get("tool"),
            Some(&rec.tool_results),
            "{agent} {roles:?}"
        );
        let tools = std::fs::read_dir(dir.join("tools"))
            .expect("tools/")
            .count();
        assert_eq!(tools, rec.tool_results, "{agent} tool files");
    }
    // The same bytes give the same ids, so the same files.
    let again = render(&home, &[]);
    assert_eq!(files(&tree(&out)), files(&tree(&again)));
}

// ---------------------------------------------------------------------------------------
// Class 4: OpenClaw's archived copies

/// An entry id for `text`: the same prompt gets the same id in every copy of a transcript
/// (a copy holds the same records), different prompts different ids (FNV-1a, 32 bits).
fn entry_id(text: &str) -> String {
    let h = text.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    format!("{h:08x}")
}

/// Tokens each generated OpenClaw reply records.
const REPLY_INPUT: u64 = 100;
const REPLY_OUTPUT: u64 = 10;

/// A pi v3 transcript with the given header id and prompts, each answered.
fn v3_session(id: &str, prompts: &[&str]) -> String {
    let turns: Vec<(&str, Option<&str>)> = prompts.iter().map(|p| (*p, None)).collect();
    v3_tree(id, &turns)
}

/// As [`v3_session`], each prompt following the answer to the prompt named beside it (a
/// branch), or the turn before it.
fn v3_tree(id: &str, turns: &[(&str, Option<&str>)]) -> String {
    let mut lines = vec![json!({"type": "session", "version": 3, "id": id,
        "timestamp": "2026-04-18T01:31:53.203Z", "cwd": "/home/u/.openclaw/workspace"})
    .to_string()];
    let mut parent = Value::Null;
    for (i, (p, after)) in turns.iter().enumerate() {
        if let Some(a) = after {
            parent = json!(entry_id(&format!("answer to: {a}")));
        }
        let uid = entry_id(p);
        let aid = entry_id(&format!("answer to: {p}"));
        lines.push(
            json!({"type": "message", "id": uid, "parentId": parent,
                "timestamp": format!("2026-04-18T01:{:02}:00.000Z", 32 + i),
                "message": {"role": "user", "content": [{"type": "text", "text": p}]}})
            .to_string(),
        );
        lines.push(
            json!({"type": "message", "id": aid, "parentId": uid,
                "timestamp": format!("2026-04-18T01:{:02}:30.000Z", 32 + i),
                "message": {"role": "assistant",
                    "content": [{"type": "text", "text": format!("answer to: {p}")}],
                    "provider": "ollama", "model": "gemma4:e4b", "stopReason": "stop",
                    "usage": {"input": REPLY_INPUT, "output": REPLY_OUTPUT, "cacheRead": 0,
                              "cacheWrite": 0, "totalTokens": REPLY_INPUT + REPLY_OUTPUT}}})
            .to_string(),
        );
        parent = json!(aid);
    }
    lines.join("\n") + "\n"
}

const LIVE: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const RESET: &str = "bbbbbbbb-0000-4000-8000-000000000002";
const AFTER_RESET: &str = "cccccccc-0000-4000-8000-000000000003";
const DELETED: &str = "dddddddd-0000-4000-8000-000000000004";
const ZST_RESET: &str = "eeeeeeee-0000-4000-8000-000000000005";
const CHECKPOINT: &str = "0f0f0f0f-1111-4222-8333-444444444444";

/// An OpenClaw sessions directory as a year of `/reset`, backups and deletes leaves it.
/// Returns the sessions directory and `(file name, listed id, prompt it holds, replies no
/// live session holds)` for every archived copy that must be visible.
fn openclaw_store(home: &Home) -> (PathBuf, Vec<(String, String, &'static str, u64)>) {
    let dir = home.path().join(".openclaw/agents/main/sessions");
    let first = "first prompt of the live session";
    let abandoned = "prompt the live session later branched away from";
    write(
        &dir.join(format!("{LIVE}.jsonl")),
        v3_tree(
            LIVE,
            &[
                (first, None),
                (abandoned, None),
                ("second prompt of the live session", Some(first)),
            ],
        )
        .as_bytes(),
    );
    // Copies of the live conversation: a backup taken while the abandoned turn was the
    // active one (the live file holds it on a branch), a checkpoint holding a turn the
    // live file lost.
    let bak = format!("{LIVE}.jsonl.bak-164503-1777924592329");
    write(
        &dir.join(&bak),
        v3_session(LIVE, &[first, abandoned]).as_bytes(),
    );
    let checkpoint = format!("{LIVE}.checkpoint.{CHECKPOINT}.jsonl");
    write(
        &dir.join(&checkpoint),
        v3_session(LIVE, &[first, "prompt only the checkpoint holds"]).as_bytes(),
    );
    // `/reset`: the earlier conversation is renamed; the live file name carries a new one.
    let reset = format!("{RESET}.jsonl.reset.2026-04-24T16-09-14.281Z");
    write(
        &dir.join(&reset),
        v3_session(RESET, &["prompt before the reset"]).as_bytes(),
    );
    write(
        &dir.join(format!("{RESET}.jsonl")),
        v3_session(AFTER_RESET, &["prompt after the reset"]).as_bytes(),
    );
    let zst = format!("{ZST_RESET}.jsonl.reset.2026-05-01T00-00-00.000Z.zst");
    let text = v3_session(ZST_RESET, &["prompt of a compressed reset copy"]);
    write(
        &dir.join(&zst),
        &zstd::encode_all(text.as_bytes(), 3).expect("zstd"),
    );
    write(
        &dir.join(format!("{DELETED}.jsonl.deleted.2026-04-29T13-33-00.652Z")),
        v3_session(DELETED, &["prompt the user deleted"]).as_bytes(),
    );
    write(&dir.join(format!("{LIVE}.jsonl.lock")), b"");
    let archived = vec![
        (
            bak,
            format!("{LIVE}.bak-164503-1777924592329"),
            "prompt the live session later branched away from",
            0,
        ),
        (
            checkpoint,
            format!("{LIVE}.checkpoint.{CHECKPOINT}"),
            "prompt only the checkpoint holds",
            1,
        ),
        (
            reset,
            format!("{RESET}.reset.2026-04-24T16-09-14.281Z"),
            "prompt before the reset",
            1,
        ),
        (
            zst,
            format!("{ZST_RESET}.reset.2026-05-01T00-00-00.000Z"),
            "prompt of a compressed reset copy",
            1,
        ),
    ];
    (dir, archived)
}

/// Archived copies are sessions of their own, each under a name no other session has;
/// deleted ones stay hidden unless named with `--store`.
#[test]
fn openclaw_archived_copies_are_sessions_and_deleted_ones_stay_hidden() {
    let home = Home::empty();
    let (dir, archived) = openclaw_store(&home);
    let listed = list(&home, &[]);
    let ids: Vec<&str> = listed
        .iter()
        .map(|m| m["sessionId"].as_str().expect("sessionId"))
        .collect();
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "one name per session: {ids:?}");
    let mut want: BTreeSet<String> = [LIVE, AFTER_RESET].map(String::from).into();
    want.extend(archived.iter().map(|(_, id, _, _)| id.clone()));
    assert_eq!(
        unique,
        want.iter().map(String::as_str).collect(),
        "listed sessions"
    );

    let out = render(&home, &[]);
    let rendered = std::fs::read_dir(tree(&out).join("openclaw"))
        .expect("openclaw/")
        .count();
    assert_eq!(rendered, want.len(), "one directory per session");
    for (file, id, prompt, own) in &archived {
        let d = tree(&out).join("openclaw").join(id);
        assert!(
            read(&d.join("transcript.md")).contains(prompt),
            "{file}: {prompt:?} not in its transcript"
        );
        let m = meta(&d);
        let kind = if file.contains(".reset.") {
            "reset"
        } else if file.contains(".bak") {
            "bak"
        } else {
            "checkpoint"
        };
        assert_eq!(m["tags"], json!([format!("archived:{kind}")]), "{file}");
        let title = m["title"].as_str().expect("title");
        assert!(title.starts_with(&format!("[{kind} ")), "{file}: {title}");
        // A backup or checkpoint of the live conversation links to it; a reset copy holds
        // a conversation no live session continues.
        let forked = if kind == "reset" {
            Value::Null
        } else {
            json!(format!("openclaw:{LIVE}"))
        };
        assert_eq!(m["forkedFrom"], forked, "{file}");
        // Replies the live session holds too count there, once.
        assert_eq!(m["cost"]["inputTokens"], own * REPLY_INPUT, "{file}");
    }
    // Live: three replies; after the reset: one; each copy: the replies only it holds.
    let replies = 3 + 1 + archived.iter().map(|a| a.3).sum::<u64>();
    let o = home.sessfs(&["cost", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let total: Value = serde_json::from_slice(&o.stdout).expect("cost --json");
    assert_eq!(total["total"]["inputTokens"], replies * REPLY_INPUT);
    assert_eq!(total["total"]["outputTokens"], replies * REPLY_OUTPUT);
    let everything: String = files(&tree(&out))
        .values()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect();
    assert!(!everything.contains("prompt the user deleted"));

    // Asked for by name, a deleted copy is read like any other.
    let deleted = dir.join(format!("{DELETED}.jsonl.deleted.2026-04-29T13-33-00.652Z"));
    let store = format!("openclaw={}", deleted.display());
    let id = format!("openclaw:{DELETED}.deleted.2026-04-29T13-33-00.652Z");
    assert!(list(&home, &["--store", &store])
        .iter()
        .any(|m| m["unifiedId"] == id.as_str()));
    let o = home.sessfs(&["show", "--store", &store, &id]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("prompt the user deleted"));
}

// ---------------------------------------------------------------------------------------
// Audit: no line of a pi-family file is dropped silently

/// Lines of a v3 file that no parser can read as a record, each with the text that must
/// stay visible; and the prompts around them, which must still be shown.
fn broken_v3(id: &str) -> (String, Vec<&'static str>, Vec<&'static str>) {
    let garbage = "this line is not JSON at all {";
    let scalar = "\"a JSON string, not a record\"";
    let future =
        r#"{"type":"future_entry","id":"f1","parentId":"m2","payload":"future payload text"}"#;
    let glued = concat!(
        r#"{"type":"message","id":"m3","parentId":"f1","message":{"role":"user","content":"second prompt"}}"#,
        "junk between two records",
        r#"{"type":"message","id":"m4","parentId":"m3","message":{"role":"assistant","content":[{"type":"text","text":"second reply"}]}}"#
    );
    let empty =
        r#"{"type":"message","id":"m5","parentId":"m4","note":"an entry with no message field"}"#;
    let partial = r#"{"type":"message","id":"m6","parentId":"m5","message":{"role":"user","content":"prompt cut off mid-write"#;
    let lines = [
        json!({"type": "session", "version": 3, "id": id,
               "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work/proj"})
        .to_string(),
        r#"{"type":"message","id":"m1","parentId":null,"message":{"role":"user","content":"first prompt"}}"#.to_owned(),
        garbage.to_owned(),
        scalar.to_owned(),
        r#"{"type":"message","id":"m2","parentId":"m1","message":{"role":"assistant","content":[{"type":"text","text":"first reply"}]}}"#.to_owned(),
        future.to_owned(),
        glued.to_owned(),
        empty.to_owned(),
    ];
    // The partial last line has no newline: the agent may still be writing it, or died.
    let text = lines.join("\n") + "\n" + partial;
    let unread = vec![
        garbage,
        scalar,
        "future payload text",
        "junk between two records",
        "an entry with no message field",
        "prompt cut off mid-write",
    ];
    let shown = vec![
        "first prompt",
        "first reply",
        "second prompt",
        "second reply",
    ];
    (text, unread, shown)
}

/// Every line of a pi, omp, indusagi or OpenClaw file that gives no shown record costs a
/// counted warning in `meta.json`, and its raw text is in the session's `unparsed.txt`.
#[test]
fn unreadable_lines_of_pi_family_files_are_counted_and_kept_visible() {
    let home = Home::empty();
    let stores = [
        (
            "pi",
            ".pi/agent/sessions/--work-proj--",
            "22222222-0000-4000-8000-000000000001",
        ),
        (
            "omp",
            ".omp/agent/sessions/--work-proj--",
            "22222222-0000-4000-8000-000000000002",
        ),
        (
            "indusagi",
            ".indusagi/agent/sessions/--work-proj--",
            "22222222-0000-4000-8000-000000000003",
        ),
        (
            "openclaw",
            ".openclaw/agents/main/sessions",
            "22222222-0000-4000-8000-000000000004",
        ),
    ];
    let mut expect = Vec::new();
    for (agent, dir, id) in stores {
        let (text, unread, shown) = broken_v3(id);
        let name = if agent == "openclaw" {
            format!("{id}.jsonl")
        } else {
            format!("2026-01-01T00-00-00-000Z_{id}.jsonl")
        };
        write(&home.path().join(dir).join(name), text.as_bytes());
        expect.push((agent, id, unread, shown));
    }
    let out = render(&home, &[]);
    for (agent, id, unread, shown) in expect {
        let dir = tree(&out).join(agent).join(id);
        let transcript = read(&dir.join("transcript.md"));
        let shown: Vec<String> = shown.into_iter().map(String::from).collect();
        assert_in_order(&transcript, &shown, &format!("{agent} transcript.md"));
        let kept = read(&dir.join("unparsed.txt"));
        let unread: Vec<String> = unread.into_iter().map(String::from).collect();
        assert_in_order(&kept, &unread, &format!("{agent} unparsed.txt"));
        let warnings = meta(&dir)["warnings"].clone();
        let warnings: Vec<&str> = warnings
            .as_array()
            .expect("warnings")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with(&format!("{} lines not", unread.len()))
                    && w.contains("unparsed.txt")),
            "{agent}: {warnings:#?}"
        );
        for line in [3, 4, 7, 9] {
            assert!(
                warnings
                    .iter()
                    .any(|w| w.contains(&format!("line {line}:"))),
                "{agent}: line {line} not named: {warnings:#?}"
            );
        }
        assert!(
            warnings.iter().any(|w| w.contains("future_entry")),
            "{agent}: {warnings:#?}"
        );
        assert!(
            warnings.iter().any(|w| w.contains("without a message")),
            "{agent}: {warnings:#?}"
        );
    }
}
