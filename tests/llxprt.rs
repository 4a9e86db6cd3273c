//! LLxprt Code sessions, written here the way LLxprt writes them (vybestack/llxprt-code
//! `packages/core/src/recording/SessionRecordingService.ts`: one `{v, seq, ts, type,
//! payload}` line per event in `tmp/<project hash>/chats/session-<time>-<id8>.jsonl`; the
//! 0.8.x `persisted-session-<time>.json` of `SessionPersistenceService.ts`), rendered with
//! `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, meta, put, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A credential, planted where LLxprt keeps its keys and tokens.
const SECRET: &str = "llxprt-PLANTED-provider-key-doNotRead-0000";
const HASH: &str = "9f0e1d2c3b4a59687766554433221100ffeeddccbbaa99887766554433221100";
const STATE: &str = ".local/state/llxprt-code/tmp";
const LEGACY: &str = ".llxprt/tmp";

const A: &str = "aaaa1111-0000-4000-8000-000000000001";
const B: &str = "bbbb2222-0000-4000-8000-000000000002";
const C: &str = "cccc3333-0000-4000-8000-000000000003";
const D: &str = "dddd4444-0000-4000-8000-000000000004";

fn chats(root: &str) -> String {
    format!("{root}/{HASH}/chats")
}

/// One event line; `seq` counts from 1.
fn ev(seq: u64, ts: &str, ty: &str, payload: Value) -> String {
    format!(
        "{}\n",
        json!({"v": 1, "seq": seq, "ts": ts, "type": ty, "payload": payload})
    )
}

fn start(id: &str, cwd: &str) -> Value {
    json!({"sessionId": id, "projectHash": HASH, "workspaceDirs": [cwd], "cwd": cwd,
           "provider": "anthropic", "model": "claude-sonnet-4-5",
           "startTime": "2026-03-01T10:00:00.000Z"})
}

fn human(text: &str, ms: i64) -> Value {
    json!({"content": {"speaker": "human", "blocks": [{"type": "text", "text": text}],
                       "metadata": {"timestamp": ms}}})
}

fn ai(blocks: Value, ms: i64, usage: Option<(u64, u64, u64)>) -> Value {
    let mut meta = json!({"timestamp": ms, "model": "claude-sonnet-4-5"});
    if let Some((p, c, read)) = usage {
        meta["usage"] = json!({"promptTokens": p, "completionTokens": c, "totalTokens": p + c,
                               "cache_read_input_tokens": read, "cache_creation_input_tokens": 0});
    }
    json!({"content": {"speaker": "ai", "blocks": blocks, "metadata": meta}})
}

fn tool(call: &str, name: &str, output: &str, error: Option<&str>, ms: i64) -> Value {
    let mut block = json!({"type": "tool_response", "callId": call, "toolName": name,
                           "result": {"output": output}});
    if let Some(e) = error {
        block["error"] = json!(e);
    }
    json!({"content": {"speaker": "tool", "blocks": [block], "metadata": {"timestamp": ms}}})
}

/// 2026-03-01T10:00:00Z in milliseconds, plus `s` seconds.
fn at(s: i64) -> i64 {
    1_772_359_200_000 + s * 1000
}

fn ts(s: i64) -> String {
    format!("2026-03-01T10:{:02}:{:02}.000Z", s / 60, s % 60)
}

fn a_file() -> String {
    let mut t = ev(1, &ts(0), "session_start", start(A, "/home/dev/alpha"));
    t += &ev(
        2,
        &ts(1),
        "content",
        human("Alpha prompt: why is the build red?", at(1)),
    );
    t += &ev(
        3,
        &ts(1),
        "session_metadata",
        json!({"title": "Alpha auto title"}),
    );
    t += &ev(
        4,
        &ts(5),
        "content",
        ai(
            json!([{"type": "thinking", "thought": "Alpha thinking: the log says where"},
                   {"type": "text", "text": "Alpha reply: reading the log"},
                   {"type": "tool_call", "id": "call_a1", "name": "read_file",
                    "parameters": {"absolute_path": "/home/dev/alpha/build.log"}}]),
            at(5),
            Some((1000, 100, 600)),
        ),
    );
    t += &ev(
        5,
        &ts(6),
        "content",
        tool(
            "call_a1",
            "read_file",
            "alpha-output: linker error",
            None,
            at(6),
        ),
    );
    t += &ev(
        6,
        &ts(8),
        "content",
        ai(
            json!([{"type": "tool_call", "id": "call_a2", "name": "run_shell_command",
                    "parameters": {"command": "make"}}]),
            at(8),
            Some((1200, 40, 1000)),
        ),
    );
    t += &ev(
        7,
        &ts(9),
        "content",
        tool(
            "call_a2",
            "run_shell_command",
            "alpha-failed-output: make exited",
            Some("Command exited with code 2"),
            at(9),
        ),
    );
    t += &ev(
        8,
        &ts(10),
        "session_named",
        json!({"name": "Alpha: red build"}),
    );
    t += &ev(9, &ts(11), "hologram", json!({"glow": 1}));
    t += &ev(
        10,
        &ts(12),
        "compressed",
        json!({"summary": {"speaker": "human",
                           "blocks": [{"type": "text", "text": "Alpha summary: the linker fails"}],
                           "metadata": {"isSummary": true, "timestamp": at(12)}},
               "itemsCompressed": 5}),
    );
    t += &ev(
        11,
        &ts(13),
        "session_event",
        json!({"severity": "error", "message": "Alpha provider timeout"}),
    );
    t += "Alpha torn line {not json\n";
    t
}

fn write() -> Home {
    let home = Home::empty();
    let h = home.path().to_path_buf();

    // --- A: the event log, in the state directory; an older copy in ~/.llxprt/tmp.
    let a = a_file();
    put(
        &h,
        &format!(
            "{}/session-2026-03-01T10-00-00-aaaa1111.jsonl",
            chats(STATE)
        ),
        &a,
    );
    let copy: String = a.lines().take(2).map(|l| format!("{l}\n")).collect();
    put(
        &h,
        &format!(
            "{}/session-2026-03-01T10-00-00-aaaa1111.jsonl",
            chats(LEGACY)
        ),
        copy,
    );

    // --- B: forked from A; its first two contents are the copy (older than the fork).
    let mut t = ev(1, &ts(30), "session_start", start(B, "/home/dev/alpha"));
    t += &ev(
        2,
        &ts(30),
        "session_forked",
        json!({"parentSessionId": A, "parentSequence": 5, "checkpointId": "ck1", "checkpointName": "alpha-ckpt"}),
    );
    t += &ev(
        3,
        &ts(30),
        "content",
        human("Alpha prompt: why is the build red?", at(1)),
    );
    t += &ev(
        4,
        &ts(30),
        "content",
        ai(
            json!([{"type": "text", "text": "Alpha reply: reading the log"}]),
            at(5),
            Some((1000, 100, 600)),
        ),
    );
    t += &ev(
        5,
        &ts(40),
        "content",
        human("Bravo prompt: try clang instead", at(40)),
    );
    t += &ev(
        6,
        &ts(45),
        "content",
        ai(
            json!([{"type": "text", "text": "Bravo reply: clang links it"}]),
            at(45),
            Some((300, 30, 0)),
        ),
    );
    put(
        &h,
        &format!(
            "{}/session-2026-03-01T10-00-30-bbbb2222.jsonl",
            chats(STATE)
        ),
        t,
    );

    // --- C: a rewind of the last two items.
    let mut t = ev(1, &ts(50), "session_start", start(C, "/home/dev/charlie"));
    t += &ev(2, &ts(51), "content", human("Charlie prompt one", at(51)));
    t += &ev(
        3,
        &ts(52),
        "content",
        ai(
            json!([{"type": "text", "text": "Charlie reply one"}]),
            at(52),
            None,
        ),
    );
    t += &ev(
        4,
        &ts(53),
        "content",
        human("Charlie dropped prompt", at(53)),
    );
    t += &ev(
        5,
        &ts(54),
        "content",
        ai(
            json!([{"type": "text", "text": "Charlie dropped reply"}]),
            at(54),
            None,
        ),
    );
    t += &ev(6, &ts(55), "rewind", json!({"itemsRemoved": 2}));
    t += &ev(
        7,
        &ts(56),
        "content",
        human("Charlie prompt after rewind", at(56)),
    );
    put(
        &h,
        &format!(
            "{}/session-2026-03-01T10-00-50-cccc3333.jsonl",
            chats(STATE)
        ),
        t,
    );

    // --- D: a 0.8.x document in ~/.llxprt/tmp, pretty-printed as LLxprt writes it.
    let doc = json!({
        "version": 1, "sessionId": D, "projectHash": HASH,
        "createdAt": "2026-01-20T16:40:00.000Z", "updatedAt": "2026-01-20T16:45:00.000Z",
        "history": [
            {"speaker": "human", "blocks": [{"type": "text", "text": "Delta prompt: add dark mode"}],
             "metadata": {"timestamp": 1_768_927_200_000_i64}},
            {"speaker": "ai", "blocks": [{"type": "text", "text": "Delta reply: done"}],
             "metadata": {"timestamp": 1_768_927_260_000_i64, "model": "gemini-2.5-pro",
                          "usage": {"promptTokens": 500, "completionTokens": 50, "totalTokens": 550}}}
        ],
        "uiHistory": [{"id": 1, "type": "user", "text": "Delta UI copy only"}],
        "metadata": {"provider": "gemini", "model": "gemini-2.5-pro", "tokenCount": 550}
    });
    put(
        &h,
        &format!(
            "{}/persisted-session-2026-01-20T16-45-00-000Z.json",
            chats(LEGACY)
        ),
        serde_json::to_vec_pretty(&doc).expect("json"),
    );
    // --- E: a document cut short mid-write.
    put(
        &h,
        &format!("{}/persisted-session-2026-01-21T08-00-00-000Z.json", chats(LEGACY)),
        "{\n  \"version\": 1,\n  \"sessionId\": \"eeee5555-torn\",\n  \"history\": [\n    {\"speaker\": \"hu",
    );

    // Credentials and files that are not sessions.
    put(
        &h,
        ".llxprt/oauth_creds.json",
        format!("{{\"access_token\": \"{SECRET}\"}}"),
    );
    put(&h, ".llxprt/keys/anthropic.key", SECRET);
    put(&h, ".llxprt/.env", format!("OPENAI_API_KEY={SECRET}\n"));
    put(
        &h,
        ".local/share/llxprt-code/provider_accounts.json",
        format!("{{\"key\": \"{SECRET}\"}}"),
    );
    put(
        &h,
        &format!("{LEGACY}/{HASH}/logs.json"),
        format!("[{{\"message\": \"{SECRET}\"}}]"),
    );
    put(&h, &format!("{}/{A}.lock", chats(STATE)), SECRET);
    let mut home = home;
    home.files = common::files_under(home.path());
    home
}

fn render(home: &Home) -> Rendered {
    stores::render(home, "sessfs-llxprt", &[])
}

fn transcript(tree: &Path, id: &str) -> String {
    stores::transcript(tree, &format!("llxprt/{id}"))
}

fn check_tree(tree: &Path) {
    stores::assert_session_holds(
        tree,
        &format!("llxprt/{A}"),
        &[
            "Alpha thinking: the log says where",
            "Alpha summary: the linker fails",
            "Alpha provider timeout",
            "Alpha torn line",
        ],
        &[
            "alpha-output: linker error",
            "alpha-failed-output: make exited",
        ],
    );
    stores::assert_session_holds(
        tree,
        &format!("llxprt/{B}"),
        &[
            "Bravo prompt: try clang instead",
            "Bravo reply: clang links it",
        ],
        &[] as &[&str],
    );
    stores::assert_session_holds(
        tree,
        &format!("llxprt/{D}"),
        &["Delta prompt: add dark mode", "Delta reply: done"],
        &[] as &[&str],
    );
}

#[test]
fn every_session_is_listed_once_with_its_messages() {
    let home = write();
    let out = render(&home);
    check_tree(&out.tree);
    // A, B, C, D and the torn E; A's copy in ~/.llxprt/tmp is not a second session.
    assert_eq!(stores::entries(&out.tree, "llxprt"), 5);
    let t = transcript(&out.tree, A);
    for line in [
        "Alpha prompt: why is the build red?",
        "Alpha reply: reading the log",
        "provider timeout",
    ] {
        assert!(t.contains(line), "{line}");
    }
    // The unknown event is kept where it stood, raw.
    assert!(t.contains(r#""glow":1"#), "{t}");
}

#[test]
fn calls_pair_with_results_and_a_failed_one_is_an_error() {
    let home = write();
    let out = render(&home);
    let dir = out.tree.join(format!("llxprt/{A}"));
    let lines: Vec<Value> = std::fs::read_to_string(dir.join("messages.jsonl"))
        .expect("messages")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    let results: Vec<(String, String, bool)> = lines
        .iter()
        .filter_map(|m| {
            let r = m.get("toolResult").filter(|r| !r.is_null())?;
            Some((
                r["toolCallId"].as_str()?.to_string(),
                r["toolName"].as_str()?.to_string(),
                r["isError"].as_bool()?,
            ))
        })
        .collect();
    assert_eq!(
        results,
        vec![
            ("call_a1".into(), "read_file".into(), false),
            ("call_a2".into(), "run_shell_command".into(), true),
        ]
    );
    let failed =
        std::fs::read_to_string(dir.join("tools/0002-run_shell_command.md")).expect("tool");
    assert!(failed.contains("Command exited with code 2"), "{failed}");
    assert!(
        failed.contains("alpha-failed-output: make exited"),
        "{failed}"
    );
}

#[test]
fn titles_cwd_model_usage_and_warnings_come_from_the_events() {
    let home = write();
    let out = render(&home);
    let a = meta(&out.tree, &format!("llxprt/{A}"));
    // session_named wins over session_metadata's title.
    assert_eq!(a["title"], "Alpha: red build");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["model"], "claude-sonnet-4-5");
    assert_eq!(a["createdAt"], "2026-03-01T10:00:00.000Z");
    // (1000 - 600) + (1200 - 1000) in, 100 + 40 out, 600 + 1000 cache reads.
    let (i, o, r, _) = stores::tokens(&a["cost"]);
    assert_eq!(
        (i, o, r),
        (Some(600), Some(140), Some(1600)),
        "{}",
        a["cost"]
    );
    let w = a["warnings"].to_string();
    assert!(w.contains("hologram"), "{w}");
    assert!(w.contains("unparsed.txt"), "{w}");

    // The fork: linked, and the copied reply counted in A only.
    let b = meta(&out.tree, &format!("llxprt/{B}"));
    assert_eq!(b["forkedFrom"], format!("llxprt:{A}"));
    let (i, o, _, _) = stores::tokens(&b["cost"]);
    assert_eq!((i, o), (Some(300), Some(30)), "{}", b["cost"]);

    let d = meta(&out.tree, &format!("llxprt/{D}"));
    assert_eq!(d["title"], "Delta prompt: add dark mode");
    assert_eq!(d["model"], "gemini-2.5-pro");
    assert_eq!(d["createdAt"], "2026-01-20T16:40:00.000Z");
    let (i, o, _, _) = stores::tokens(&d["cost"]);
    assert_eq!((i, o), (Some(500), Some(50)));
    // uiHistory repeats the turns for the terminal and is not read.
    stores::assert_nowhere(&out.tree, "Delta UI copy only");
}

#[test]
fn a_rewind_keeps_what_it_dropped_as_a_branch() {
    let home = write();
    let out = render(&home);
    let t = transcript(&out.tree, C);
    assert!(t.contains("Charlie prompt one") && t.contains("Charlie prompt after rewind"));
    assert!(!t.contains("Charlie dropped prompt"), "{t}");
    let c = meta(&out.tree, &format!("llxprt/{C}"));
    assert_eq!(
        c["branches"].as_array().map(Vec::len),
        Some(1),
        "{}",
        c["branches"]
    );
    let branch = format!("llxprt/{C}/branches");
    assert_eq!(
        stores::holding(&out.tree, "Charlie dropped reply", &branch),
        [format!("llxprt/{C}")].into()
    );
}

#[test]
fn a_torn_document_costs_a_warning_and_the_others_still_load() {
    let home = write();
    let out = render(&home);
    let e = meta(&out.tree, "llxprt/eeee5555-torn");
    assert!(
        !e["warnings"].as_array().expect("warnings").is_empty(),
        "{e}"
    );
    check_tree(&out.tree);
}

#[test]
fn keys_tokens_and_prompt_logs_are_never_shown() {
    let home = write();
    let out = render(&home);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&home, SECRET, &[]);
}

#[test]
fn doctor_names_llxprt_and_where_it_found_it() {
    let home = write();
    let text = stdout(&home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 5 sessions", "llxprt")),
        "{text}"
    );
    assert!(text.contains(STATE), "{text}");
    assert!(text.contains(LEGACY), "{text}");
}

#[test]
fn mounted_sessions_sizes_erofs_and_store_untouched() {
    let home = write();
    stores::mounted_untouched(&home, Home::snapshot, |m| {
        check_tree(m.path());
        stores::assert_mount_read_only(m, &["llxprt"], 9, SECRET, &format!("llxprt/{A}"));
    });
}

/// LLxprt appends an event per history item: a new one shows within a second.
#[test]
fn an_appended_event_shows_within_a_second() {
    let home = write();
    let m = Mount::new(&home, &[]);
    let t = m.path().join(format!("llxprt/{C}/transcript.md"));
    assert!(stores::file_contains(&t, "Charlie prompt after rewind"));
    let file = home
        .path()
        .join(chats(STATE))
        .join("session-2026-03-01T10-00-50-cccc3333.jsonl");
    let mut text = std::fs::read_to_string(&file).expect("read");
    text += &ev(
        8,
        &ts(58),
        "content",
        human("Charlie fresh prompt after the mount", at(58)),
    );
    std::fs::write(&file, text).expect("write");
    stores::assert_within_a_second("appended event", || {
        stores::file_contains(&t, "Charlie fresh prompt after the mount")
    });
}

/// `gzip -c`, the system's: the archive is written by a tool sessfs does not share code with.
fn gzip(bytes: &str) -> Vec<u8> {
    use std::io::Write;
    let mut child = std::process::Command::new("gzip")
        .arg("-c")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("gzip");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(bytes.as_bytes())
        .expect("gzip stdin");
    let out = child.wait_with_output().expect("gzip");
    assert!(out.status.success());
    out.stdout
}

/// The janitor's archives (`chats/archive/<file>.gz`, a byte-for-byte gzip of the session
/// file): one whose file is gone, one whose file was kept beside it, and one cut short.
#[test]
fn archived_sessions_are_read_and_a_kept_file_wins_over_its_archive() {
    const F: &str = "ffff6666-0000-4000-8000-000000000006";
    const G: &str = "9999aaaa-0000-4000-8000-000000000007";
    const H: &str = "hhhh8888-0000-4000-8000-000000000008";
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let archive = format!("{}/archive", chats(STATE));

    let mut f = ev(1, &ts(0), "session_start", start(F, "/home/dev/foxtrot"));
    f += &ev(
        2,
        &ts(1),
        "content",
        human("Foxtrot archived prompt", at(1)),
    );
    f += &ev(
        3,
        &ts(2),
        "content",
        ai(
            json!([{"type": "text", "text": "Foxtrot archived reply"}]),
            at(2),
            Some((200, 20, 0)),
        ),
    );
    put(
        &h,
        &format!("{archive}/session-2026-03-01T10-00-00-ffff6666.jsonl.gz"),
        gzip(&f),
    );

    // G's archive was made, then one more turn went to the kept file.
    let mut g = ev(1, &ts(0), "session_start", start(G, "/home/dev/golf"));
    g += &ev(2, &ts(1), "content", human("Golf first prompt", at(1)));
    put(
        &h,
        &format!("{archive}/session-2026-03-01T10-00-00-9999aaaa.jsonl.gz"),
        gzip(&g),
    );
    g += &ev(
        3,
        &ts(3),
        "content",
        human("Golf prompt only in the file", at(3)),
    );
    put(
        &h,
        &format!(
            "{}/session-2026-03-01T10-00-00-9999aaaa.jsonl",
            chats(STATE)
        ),
        &g,
    );

    // H's archive lost its second half.
    let mut t = ev(1, &ts(0), "session_start", start(H, "/home/dev/hotel"));
    t += &ev(2, &ts(1), "content", human("Hotel first prompt", at(1)));
    for i in 0..200 {
        t += &ev(
            3 + i,
            &ts(2),
            "content",
            human(
                &format!("Hotel filler {i} {}", "x".repeat(i as usize)),
                at(2),
            ),
        );
    }
    let whole = gzip(&t);
    put(
        &h,
        &format!("{archive}/session-2026-03-01T10-00-00-hhhh8888.jsonl.gz"),
        &whole[..whole.len() / 2],
    );

    let out = render(&home);
    assert_eq!(stores::entries(&out.tree, "llxprt"), 3);

    let ft = transcript(&out.tree, F);
    for line in ["Foxtrot archived prompt", "Foxtrot archived reply"] {
        assert!(ft.contains(line), "{line}: {ft}");
    }
    let fm = meta(&out.tree, &format!("llxprt/{F}"));
    assert_eq!(fm["cwd"], "/home/dev/foxtrot", "{fm}");
    assert_eq!(fm["warnings"], json!([]), "{fm}");

    let gt = transcript(&out.tree, G);
    assert!(gt.contains("Golf prompt only in the file"), "{gt}");
    // One session from the kept file, its two prompts once each (the archive is not
    // shown beside it).
    assert_eq!(gt.matches("### User").count(), 2, "{gt}");

    let ht = transcript(&out.tree, H);
    assert!(ht.contains("Hotel first prompt"), "{ht}");
    let hm = meta(&out.tree, &format!("llxprt/{H}"));
    assert!(
        !hm["warnings"].as_array().expect("warnings").is_empty(),
        "{hm}"
    );
}
