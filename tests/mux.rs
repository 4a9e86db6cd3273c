//! Mux workspaces, written here the way Mux's `HistoryService` writes them (coder/mux
//! `src/node/services/historyService.ts`: one `MuxMessage` per line of
//! `sessions/<workspace>/chat.jsonl`, older epochs in `chat-archive.jsonl`, the reply still
//! streaming in `partial.json`; workspaces listed in the home's `config.json`), rendered
//! with `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, meta, put, read, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A credential, planted where Mux keeps its keys and its governor token.
const SECRET: &str = "mux-PLANTED-provider-key-doNotRead-0000";

const A: &str = "a1b2c3d4e5";
const B: &str = "b2c3d4e5f6";
const C: &str = "c3d4e5f6a7";
/// A finished sub-agent of A whose workspace is gone: its chat kept under A.
const D: &str = "d4e5f6a7b8";

const SONNET: &str = "anthropic:claude-sonnet-4-5";

struct Session {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
}

struct Fixture {
    home: Home,
    sessions: Vec<Session>,
}

fn lines(rows: &[Value], ws: &str) -> String {
    rows.iter()
        .map(|m| {
            let mut m = m.clone();
            m["workspaceId"] = json!(ws);
            format!("{m}\n")
        })
        .collect()
}

fn user(id: &str, seq: u64, text: &str) -> Value {
    json!({"id": id, "role": "user", "parts": [{"type": "text", "text": text}],
           "metadata": {"historySequence": seq, "timestamp": 1772440000000u64 + seq * 1000}})
}

fn assistant(id: &str, seq: u64, parts: Value, extra: Value) -> Value {
    let mut md = json!({"historySequence": seq, "timestamp": 1772440000000u64 + seq * 1000,
                        "model": SONNET, "duration": 1200});
    for (k, v) in extra.as_object().expect("object") {
        md[k] = v.clone();
    }
    json!({"id": id, "role": "assistant", "parts": parts, "metadata": md})
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut sessions = Vec::new();

    // --- config.json: A and B, with the governor token beside them.
    put(
        &h,
        ".mux/config.json",
        serde_json::to_vec_pretty(&json!({
            "projects": [
                ["/home/dev/alpha", {"workspaces": [
                    {"path": "/home/dev/.mux/src/alpha/fix-flaky", "id": A, "name": "fix-flaky",
                     "title": "Alpha: fix the flaky test", "createdAt": "2026-03-02T08:00:00.000Z",
                     "runtimeConfig": {"type": "worktree"}},
                    {"path": "/home/dev/.mux/src/alpha/docs", "id": B, "name": "docs",
                     "title": "Bravo: after compaction", "createdAt": "2026-03-02T09:00:00.000Z"}
                ]}]
            ],
            "muxGovernorToken": SECRET,
            "defaultModel": SONNET
        }))
        .expect("json"),
    );

    // --- A: reasoning and text streamed as deltas, a tool call that worked and one that
    // failed, an image, a skill snapshot, a model call made by a tool, a torn line.
    let a = format!(".mux/sessions/{A}");
    let mut text = lines(
        &[
            json!({"id": "a-skill", "role": "user", "parts": [{"type": "text", "text": "Alpha skill body: run tests with --runInBand"}],
                   "metadata": {"historySequence": 0, "synthetic": true,
                                "agentSkillSnapshot": {"skillName": "tests", "scope": "project", "sha256": "00"}}}),
            json!({"id": "a-u1", "role": "user", "parts": [
                {"type": "text", "text": "Alpha prompt: the login test fails one run in three"},
                {"type": "file", "mediaType": "image/png", "url": format!("data:image/png;base64,{}", "A".repeat(400)), "filename": "ci.png"}],
                "metadata": {"historySequence": 1, "timestamp": 1772440001000u64}}),
            assistant(
                "a-r1",
                2,
                json!([
                    {"type": "reasoning", "text": "Alpha thinking: a race "},
                    {"type": "reasoning", "text": "between two fixtures"},
                    {"type": "text", "text": "Alpha reply: "},
                    {"type": "text", "text": "running the suite"},
                    {"type": "dynamic-tool", "toolCallId": "call_a1", "toolName": "bash",
                     "input": {"script": "npm test -- login", "timeout_secs": 60},
                     "state": "output-available",
                     "output": {"success": true, "output": "alpha-output: 1 failed, 11 passed", "exitCode": 0}},
                    {"type": "dynamic-tool", "toolCallId": "call_a2", "toolName": "file_read",
                     "input": {"filePath": "test/missing.ts"},
                     "state": "output-available",
                     "output": {"success": false, "error": "alpha-error: ENOENT test/missing.ts"}},
                    {"type": "text", "text": "Alpha reply after the tools"}
                ]),
                json!({"usage": {"inputTokens": 1000, "outputTokens": 300, "reasoningTokens": 100,
                                 "cachedInputTokens": 600, "totalTokens": 1300},
                       "providerMetadata": {"anthropic": {"cacheCreationInputTokens": 150}}}),
            ),
            user("a-u2", 3, "Alpha second prompt: ask the advisor"),
            assistant(
                "a-r2",
                4,
                json!([{"type": "text", "text": "Alpha reply two: the advisor agrees"}]),
                json!({"usage": {"inputTokens": 500, "outputTokens": 50},
                       "toolModelUsages": [{"toolName": "advisor", "model": "openai:gpt-5",
                                            "usage": {"inputTokens": 100, "outputTokens": 20}}]}),
            ),
        ],
        A,
    );
    text.push_str("Alpha torn line {not json\n");
    put(&h, &format!("{a}/chat.jsonl"), text);
    put(
        &h,
        &format!("{a}/subagent-transcripts/{D}/chat.jsonl"),
        lines(
            &[
                user("d-u1", 0, "Delta subagent task: list the fixtures"),
                assistant(
                    "d-r1",
                    1,
                    json!([{"type": "text", "text": "Delta subagent report: two fixtures"}]),
                    json!({}),
                ),
            ],
            D,
        ),
    );
    put(
        &h,
        &format!("{a}/subagent-transcripts/{D}/metadata.json"),
        json!({"id": D, "name": "explore-d4", "projectName": "alpha", "projectPath": "/home/dev/alpha",
               "parentWorkspaceId": A})
        .to_string(),
    );
    sessions.push(Session {
        dir: format!("mux/{A}"),
        lines: vec![
            "Alpha skill body: run tests with --runInBand",
            "Alpha prompt: the login test fails one run in three",
            "Alpha thinking: a race between two fixtures",
            "Alpha reply: running the suite",
            "Alpha reply after the tools",
            "Alpha reply two: the advisor agrees",
            "Alpha torn line",
            "Delta subagent task: list the fixtures",
            "Delta subagent report: two fixtures",
        ],
        outputs: vec![
            "alpha-output: 1 failed, 11 passed",
            "alpha-error: ENOENT test/missing.ts",
        ],
    });

    // --- B: compacted; the old epoch in the archive, a reply still streaming.
    let b = format!(".mux/sessions/{B}");
    put(
        &h,
        &format!("{b}/chat-archive.jsonl"),
        lines(
            &[
                user("b-u0", 0, "Bravo old prompt: before compaction"),
                assistant(
                    "b-r0",
                    1,
                    json!([{"type": "text", "text": "Bravo old reply"}]),
                    json!({"usage": {"inputTokens": 200, "outputTokens": 40}}),
                ),
            ],
            B,
        ),
    );
    put(
        &h,
        &format!("{b}/chat.jsonl"),
        lines(
            &[
                assistant(
                    "b-sum",
                    2,
                    json!([{"type": "text", "text": "Bravo summary: the parser was fixed"}]),
                    json!({"compacted": "user", "compactionBoundary": true, "compactionEpoch": 1,
                           "muxMetadata": {"type": "compaction-summary"},
                           "usage": {"inputTokens": 300, "outputTokens": 60}}),
                ),
                user("b-u1", 3, "Bravo prompt: now the docs"),
            ],
            B,
        ),
    );
    let mut streaming = assistant(
        "b-r1",
        4,
        json!([{"type": "text", "text": "Bravo streaming reply so far"}]),
        json!({"partial": true}),
    );
    streaming["workspaceId"] = json!(B);
    put(
        &h,
        &format!("{b}/partial.json"),
        serde_json::to_vec_pretty(&streaming).expect("json"),
    );
    sessions.push(Session {
        dir: format!("mux/{B}"),
        lines: vec![
            "Bravo old prompt: before compaction",
            "Bravo old reply",
            "Bravo summary: the parser was fixed",
            "Bravo prompt: now the docs",
            "Bravo streaming reply so far",
        ],
        outputs: vec![],
    });

    // --- C: a cmux-era workspace (legacy metadata.json, cmuxMetadata), its partial.json cut
    // off mid-write.
    let c = format!(".cmux/sessions/{C}");
    put(
        &h,
        &format!("{c}/chat.jsonl"),
        lines(
            &[
                user("c-u1", 0, "Charlie prompt: from the cmux days"),
                assistant(
                    "c-r1",
                    1,
                    json!([{"type": "text", "text": "Charlie reply: hello from cmux"}]),
                    json!({"cmuxMetadata": {"type": "normal"}}),
                ),
            ],
            C,
        ),
    );
    put(
        &h,
        &format!("{c}/metadata.json"),
        json!({"id": C, "name": "charlie-branch", "projectName": "charlie",
               "projectPath": "/home/dev/charlie", "parentWorkspaceId": A})
        .to_string(),
    );
    put(
        &h,
        &format!("{c}/partial.json"),
        "{\n  \"id\": \"c-r2\",\n  \"role\": \"assistant\",\n  \"parts\": [",
    );
    sessions.push(Session {
        dir: format!("mux/{C}"),
        lines: vec![
            "Charlie prompt: from the cmux days",
            "Charlie reply: hello from cmux",
        ],
        outputs: vec![],
    });

    put(
        &h,
        ".mux/providers.jsonc",
        format!("{{\"anthropic\": {{\"apiKey\": \"{SECRET}\"}}}}\n"),
    );
    put(
        &h,
        ".mux/secrets.json",
        format!("{{\"GITHUB_TOKEN\": \"{SECRET}\"}}\n"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-mux", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.sessions {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &s.outputs);
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "mux"), 3);
}

/// The rows of `messages.jsonl`, each as JSON.
fn messages(tree: &Path, dir: &str) -> Vec<Value> {
    read(tree, &format!("{dir}/messages.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).expect("messages.jsonl line"))
        .collect()
}

#[test]
fn each_part_lands_in_order_with_calls_paired_and_the_failure_flagged() {
    let fx = write();
    let out = render(&fx);
    let msgs = messages(&out.tree, &format!("mux/{A}"));
    let find = |text: &str| {
        msgs.iter()
            .position(|m| m.to_string().contains(text))
            .unwrap_or_else(|| panic!("{text} not in messages.jsonl"))
    };
    // The skill snapshot is context, not a prompt.
    let skill = &msgs[find("Alpha skill body")];
    assert_eq!(skill["role"], "system", "{skill}");
    assert_eq!(skill["kind"], "context", "{skill}");
    // Deltas joined; text after the tool calls is its own message, after both results.
    let reply = &msgs[find("Alpha reply: running the suite")];
    assert_eq!(reply["content"], "Alpha reply: running the suite");
    assert_eq!(
        reply["thinking"],
        "Alpha thinking: a race between two fixtures"
    );
    assert_eq!(reply["model"], SONNET);
    let calls = reply["toolCalls"].as_array().expect("calls");
    assert_eq!(calls.len(), 2, "{reply}");
    assert_eq!(calls[0]["toolName"], "bash");
    assert_eq!(calls[0]["input"]["script"], "npm test -- login");
    let ok = find("alpha-output: 1 failed");
    let bad = find("alpha-error: ENOENT");
    let after = find("Alpha reply after the tools");
    assert!(find("Alpha reply: running") < ok && ok < bad && bad < after);
    assert_eq!(msgs[ok]["toolResult"]["toolCallId"], "call_a1");
    assert_eq!(msgs[ok]["toolResult"]["isError"], false);
    assert_eq!(msgs[bad]["toolResult"]["toolCallId"], "call_a2");
    assert_eq!(msgs[bad]["toolResult"]["toolName"], "file_read");
    assert_eq!(msgs[bad]["toolResult"]["isError"], true);
    // The image is a placeholder, never its bytes.
    let prompt = &msgs[find("Alpha prompt")]["content"];
    assert_eq!(
        prompt,
        "Alpha prompt: the login test fails one run in three\n[image: image/png, 300 B] ci.png"
    );
    // The model call a tool made is counted where it happened.
    let advisor = &msgs[find("model call by tool advisor")];
    assert_eq!(advisor["model"], "openai:gpt-5");
    let t = read(&out.tree, &format!("mux/{A}/transcript.md"));
    assert!(t.contains("Alpha reply after the tools"), "{t}");
    assert!(
        !t.contains(&"A".repeat(100)),
        "image bytes in the transcript"
    );
}

#[test]
fn compaction_archive_and_streaming_reply_are_shown_in_order() {
    let fx = write();
    let out = render(&fx);
    let msgs = messages(&out.tree, &format!("mux/{B}"));
    let texts: Vec<String> = msgs
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    let at = |t: &str| {
        texts
            .iter()
            .position(|x| x == t)
            .unwrap_or_else(|| panic!("{t} not in {texts:?}"))
    };
    assert!(at("Bravo old prompt: before compaction") < at("Bravo old reply"));
    assert!(at("Bravo old reply") < at("Bravo summary: the parser was fixed"));
    assert!(at("Bravo prompt: now the docs") < at("Bravo streaming reply so far"));
    assert_eq!(
        msgs[at("Bravo summary: the parser was fixed")]["kind"],
        "compactionSummary"
    );
    let b = meta(&out.tree, &format!("mux/{B}"));
    assert!(
        b["warnings"].to_string().contains("partial.json"),
        "{}",
        b["warnings"]
    );
}

#[test]
fn titles_cwd_links_and_usage_come_from_config_and_rows() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("mux/{A}"));
    assert_eq!(a["title"], "Alpha: fix the flaky test");
    assert_eq!(a["cwd"], "/home/dev/.mux/src/alpha/fix-flaky");
    assert_eq!(a["model"], SONNET);
    assert!(a["tags"].to_string().contains("branch:fix-flaky"), "{a}");
    assert!(
        a["tags"].to_string().contains("project:/home/dev/alpha"),
        "{a}"
    );
    assert!(
        a["warnings"].to_string().contains("unparsed.txt"),
        "{}",
        a["warnings"]
    );
    // Two replies (cache reads and writes and reasoning taken out of input and output)
    // and the advisor's gpt-5 call: input 250 + 500 + 100, output 200 + 50 + 20.
    // USD: sonnet 750 in x 3, 350 out (reasoning included) x 15, 600 x 0.3, 150 x 3.75;
    // gpt-5 100 x 1.25, 20 x 10; per million: 0.0085675, which meta.json shows to six places.
    stores::assert_cost(
        &out.tree,
        &format!("mux/{A}"),
        (850, 270, 600, 150, 0.008568),
    );
    // B: archive, summary, and nothing from the streaming reply.
    let bc = &meta(&out.tree, &format!("mux/{B}"))["cost"];
    assert_eq!(stores::tokens(bc).0, Some(500), "{bc}");
    assert_eq!(stores::tokens(bc).1, Some(100), "{bc}");
    // C: the cmux home, its legacy metadata.json, a child of A; the cut partial.json warned.
    let c = meta(&out.tree, &format!("mux/{C}"));
    assert_eq!(c["cwd"], "/home/dev/charlie");
    assert_eq!(c["parent"], format!("mux:{A}"));
    assert!(
        c["warnings"].to_string().contains("partial.json"),
        "{}",
        c["warnings"]
    );
    assert_eq!(c["title"], "Charlie prompt: from the cmux days");
    // D: under A's subagents, not a session of its own.
    let d = read(&out.tree, &format!("mux/{A}/subagents/{D}/transcript.md"));
    assert!(d.contains("Delta subagent report: two fixtures"), "{d}");
}

#[test]
fn keys_settings_and_the_governor_token_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn mux_root_moves_the_home() {
    let fx = write();
    let moved = tempfile::tempdir().expect("tmp");
    put(
        moved.path(),
        "sessions/e5f6a7b8c9/chat.jsonl",
        lines(
            &[user("e-u1", 0, "Echo prompt under MUX_ROOT")],
            "e5f6a7b8c9",
        ),
    );
    let o = fx
        .home
        .command(&["list", "--json"])
        .env("MUX_ROOT", moved.path())
        .output()
        .expect("list");
    let list = stdout(&o);
    assert!(list.contains("e5f6a7b8c9"), "{list}");
    assert!(!list.contains(A), "{list}");
}

#[test]
fn doctor_names_mux_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(text.contains(&format!("{:<9} 3 sessions", "mux")), "{text}");
    assert!(text.contains(".mux/sessions"), "{text}");
    assert!(text.contains(".cmux/sessions"), "{text}");
}

#[test]
fn mounted_chats_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["mux"], 9, SECRET, &format!("mux/{A}"));
    });
}

/// Mux appends a prompt to `chat.jsonl`: it shows within a second.
#[test]
fn an_appended_row_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("mux/{A}/transcript.md"));
    assert!(stores::file_contains(&t, "Alpha reply two"));
    let file = fx.home.path().join(format!(".mux/sessions/{A}/chat.jsonl"));
    let mut text = std::fs::read_to_string(&file).expect("read");
    text.push_str(&lines(
        &[user("a-u9", 9, "Alpha fresh prompt after the mount")],
        A,
    ));
    std::fs::write(&file, text).expect("write");
    stores::assert_within_a_second("appended row", || {
        stores::file_contains(&t, "Alpha fresh prompt after the mount")
    });
}

/// A finished sub-agent's chat kept under its parent grows, with nothing else written: the
/// parent's nested sub-agent shows it within a second.
#[test]
fn a_subagent_transcript_written_alone_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m
        .path()
        .join(format!("mux/{A}/subagents/{D}/transcript.md"));
    assert!(stores::file_contains(&t, "Delta subagent report"));
    let file = fx.home.path().join(format!(
        ".mux/sessions/{A}/subagent-transcripts/{D}/chat.jsonl"
    ));
    let mut text = std::fs::read_to_string(&file).expect("read");
    text.push_str(&lines(
        &[user("d-u9", 9, "Delta follow-up written after the mount")],
        D,
    ));
    std::fs::write(&file, text).expect("write");
    stores::assert_within_a_second("the sub-agent's new row", || {
        stores::file_contains(&t, "Delta follow-up written after the mount")
    });
}
