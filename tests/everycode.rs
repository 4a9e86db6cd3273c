//! Every Code sessions, written here the way the fork writes them (just-every/code
//! `6ad6d5c9`, `code-rs/core/src/rollout/recorder.rs`: one `{timestamp, type, payload}` line
//! per rollout item in `~/.code/sessions/YYYY/MM/DD/rollout-<ts>-<id>.jsonl`;
//! `protocol/src/protocol.rs` for the `event` lines, `core/src/codex.rs` for the status items,
//! `rollout/catalog.rs` for `sessions/index/catalog.jsonl`), rendered with `sessfs render` and
//! mounted.
//!
//! Every expected value comes from the writer below or is written out by hand, never from
//! sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, shape, warnings, Rendered};
use common::{stderr, stdout, Home, Mount};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

/// An API key and tokens, planted in Every Code's auth files and configuration.
const SECRET: &str = "sk-PLANTED-everycode-key-doNotRead-0000";
/// The TUI's drawing of a session (`.snapshot.json`): a copy, never read.
const SNAPSHOT: &str = "PLANTED snapshot text, a copy of the history";
/// A line of the prompt history across sessions (`history.jsonl`): not a session.
const HISTORY: &str = "PLANTED history line, not a session";

const A: &str = "019d1a00-0000-7000-8000-00000000e00a";
const B: &str = "019d1a00-0000-7000-8000-00000000e00b";
const C: &str = "019d1a00-0000-7000-8000-00000000e00c";
const D: &str = "019d1a00-0000-7000-8000-00000000e00d";
const E: &str = "019d1a00-0000-7000-8000-00000000e00e";
/// A Codex CLI thread in the legacy `~/.codex`, which Every Code may list but never writes.
const K: &str = "019d1a00-0000-7000-8000-00000000c0de";

/// Session A's cumulative token counts: two replies, then (after a compaction) a restarted
/// counter. `(input, cached input, output, reasoning output)`.
const A_T1: (u64, u64, u64, u64) = (1000, 200, 50, 10);
const A_T2: (u64, u64, u64, u64) = (2500, 900, 120, 30);
const A_LAST2: (u64, u64, u64, u64) = (1500, 700, 70, 20);
const A_T3: (u64, u64, u64, u64) = (800, 100, 40, 0);
const A_MODEL: &str = "gpt-5.4-2026-04-01";
const A_TITLE: &str = "Orbit rename";
const A_STATUS: &str =
    "== System Status ==\n [automatic message added by system]\n\n cwd: /home/dev/orbit\n branch: main\n reasoning: Medium";
const A_BUDGET: &str = "== System Status ==\n [automatic message added by system]\n\n time_budget: 600s\n elapsed: 320s\n remaining: 280s\n\n Guidance: Past 50% of the time budget: start converging.";

/// One rollout, its lines as the recorder writes them.
struct Rollout {
    id: String,
    lines: Vec<String>,
    clock: u32,
    seq: u64,
}

fn usage(t: (u64, u64, u64, u64)) -> Value {
    json!({"input_tokens": t.0, "cached_input_tokens": t.1, "cache_write_input_tokens": 0,
        "output_tokens": t.2, "reasoning_output_tokens": t.3, "total_tokens": t.0 + t.2})
}

impl Rollout {
    /// The first line: `session_meta` (`SessionMetaLine`, `git` beside the meta's fields).
    fn new(id: &str, cwd: &str, source: &str) -> Rollout {
        let mut r = Rollout {
            id: id.to_string(),
            lines: Vec::new(),
            clock: 0,
            seq: 0,
        };
        r.line(
            "session_meta",
            json!({"id": id, "timestamp": "2026-04-02T09:15:00.000Z", "cwd": cwd,
                "originator": "code_cli_rs", "cli_version": "0.6.172", "source": source,
                "model_provider": null,
                "base_instructions": {"text": "You are Code, a coding agent."},
                "git": {"commit_hash": "a1b2c3d4", "branch": "main"}}),
        );
        r
    }

    /// One second per line from 09:15:00.
    fn ts(&mut self) -> String {
        let t = format!(
            "2026-04-02T09:{:02}:{:02}.000Z",
            15 + self.clock / 60,
            self.clock % 60
        );
        self.clock += 1;
        t
    }

    /// The time of the last line written.
    fn last_ts(&self) -> String {
        let l = self.lines.last().expect("a line");
        l["{\"timestamp\":\"".len()..]
            .split('"')
            .next()
            .expect("ts")
            .to_string()
    }

    /// `RolloutLine`: the timestamp, then the item's `type` and `payload`, compact.
    fn line(&mut self, kind: &str, payload: Value) {
        let ts = self.ts();
        self.lines.push(format!(
            "{{\"timestamp\":\"{ts}\",\"type\":\"{kind}\",\"payload\":{payload}}}"
        ));
    }

    fn item(&mut self, payload: Value) {
        self.line("response_item", payload);
    }

    /// A `RecordedEvent`: the sub id, a per-turn sequence number, the `EventMsg`.
    fn event(&mut self, msg: Value) {
        self.seq += 1;
        let seq = self.seq;
        self.line("event", json!({"id": "1", "event_seq": seq, "msg": msg}));
    }

    fn user_item(&mut self, text: &str) {
        self.item(json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": text}]}));
    }

    /// A prompt: the UI's event, then the item the model sees.
    fn prompt(&mut self, text: &str) {
        self.event(
            json!({"type": "user_message", "message": text, "local_images": [],
            "text_elements": []}),
        );
        self.user_item(text);
    }

    fn tokens(&mut self, total: (u64, u64, u64, u64), last: (u64, u64, u64, u64), model: &str) {
        self.event(json!({"type": "token_count", "info": {
            "total_token_usage": usage(total), "last_token_usage": usage(last),
            "requested_model": "gpt-5.4", "latest_response_model": model,
            "model_context_window": 272000}, "rate_limits": null}));
    }

    fn reply(&mut self, text: &str) {
        self.item(json!({"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text}]}));
        self.event(json!({"type": "agent_message", "message": text}));
    }

    fn call(&mut self, call_id: &str, name: &str, args: Value) {
        self.item(json!({"type": "function_call", "name": name,
            "arguments": args.to_string(), "call_id": call_id}));
    }

    /// A shell command's output as the fork returns it: `{output, metadata}` as a string.
    fn shell_output(&mut self, call_id: &str, output: &str, exit_code: i32) {
        let out = json!({"output": format!("{output}\n"),
            "metadata": {"exit_code": exit_code, "duration_seconds": 0.1}});
        self.item(json!({"type": "function_call_output", "call_id": call_id,
            "output": out.to_string()}));
    }

    fn text(&self) -> String {
        self.lines.iter().map(|l| format!("{l}\n")).collect()
    }

    /// Where the recorder puts it: the local start time in the name, under its day.
    fn rel(&self, base: &str, day: &str) -> String {
        format!("{base}/{day}/rollout-2026-04-02T09-15-00-{}.jsonl", self.id)
    }
}

/// What a session written below must show.
struct Written {
    dir: String,
    lines: Vec<String>,
    outputs: Vec<String>,
}

struct Fixture {
    home: Home,
    sessions: Vec<Written>,
    a_path: std::path::PathBuf,
    /// The time of session A's last line.
    a_updated: String,
}

/// Session A: a turn with reasoning, a shell call and a reply; the fork's status items; a
/// notice and a compaction; a second turn with the counter restarted, an agent run, a failed
/// command, an error and an aborted turn.
fn alpha() -> Rollout {
    let mut r = Rollout::new(A, "/home/dev/orbit", "cli");
    r.event(json!({"type": "task_started"}));
    r.event(
        json!({"type": "user_message", "message": "Alpha prompt: rename the orbit module",
        "local_images": [], "text_elements": []}),
    );
    r.user_item(
        "<environment_context>\n  <cwd>/home/dev/orbit</cwd>\n  <shell>bash</shell>\n</environment_context>",
    );
    r.user_item(A_STATUS);
    r.user_item("Alpha prompt: rename the orbit module");
    r.event(json!({"type": "agent_reasoning", "text": "Alpha thinking: start from lib.rs"}));
    r.tokens(A_T1, A_T1, A_MODEL);
    r.item(
        json!({"type": "reasoning", "summary": [{"type": "summary_text",
        "text": "Alpha thinking: start from lib.rs"}], "encrypted_content": "gAAAAABsealed"}),
    );
    r.call(
        "call_a1",
        "shell",
        json!({"command": ["bash", "-lc", "ls src"], "workdir": "/home/dev/orbit"}),
    );
    r.event(
        json!({"type": "exec_command_begin", "call_id": "call_a1", "turn_id": "1",
        "command": ["bash", "-lc", "ls src"], "cwd": "/home/dev/orbit", "parsed_cmd": []}),
    );
    r.event(
        json!({"type": "exec_command_end", "call_id": "call_a1", "turn_id": "1",
        "command": ["bash", "-lc", "ls src"], "cwd": "/home/dev/orbit", "parsed_cmd": [],
        "stdout": "alpha-output: lib.rs orbit.rs\n", "stderr": "",
        "aggregated_output": "alpha-output: lib.rs orbit.rs\n", "exit_code": 0,
        "duration": "0.1s", "formatted_output": "alpha-output: lib.rs orbit.rs\n"}),
    );
    r.shell_output("call_a1", "alpha-output: lib.rs orbit.rs", 0);
    r.tokens(A_T2, A_LAST2, A_MODEL);
    r.reply("Alpha reply: orbit is now trajectory");
    r.event(json!({"type": "task_complete",
        "last_agent_message": "Alpha reply: orbit is now trajectory"}));
    // The status items of the next turn, kept once it was answered.
    let png = format!("data:image/png;base64,{}", "A".repeat(4000));
    r.item(
        json!({"type": "message", "id": format!("browser-context-{A}"), "role": "user",
        "content": [{"type": "input_image", "image_url": png}]}),
    );
    r.item(
        json!({"type": "message", "id": format!("run-budget-{A}"), "role": "user",
        "content": [{"type": "input_text", "text": A_BUDGET}]}),
    );
    r.event(json!({"type": "background_event", "message": "Alpha notice: history compacted"}));
    r.line(
        "compacted",
        json!({"message": "Alpha summary of the work so far"}),
    );
    r.prompt("Alpha prompt two: add a test for trajectory");
    r.tokens(A_T3, A_T3, A_MODEL);
    r.call(
        "call_a2",
        "agent",
        json!({"action": "create", "create": {
            "task": "Alpha agent task: write the trajectory tests",
            "models": ["claude", "code-gpt-5.4"]}}),
    );
    r.item(json!({"type": "function_call_output", "call_id": "call_a2",
        "output": "alpha-agent-output: batch ab12 started"}));
    r.call(
        "call_a3",
        "shell",
        json!({"command": ["bash", "-lc", "cargo test"], "workdir": "/home/dev/orbit"}),
    );
    r.shell_output("call_a3", "alpha-failed-output: 1 test failed", 101);
    r.event(json!({"type": "error", "message": "Alpha error: stream disconnected, retrying"}));
    r.event(json!({"type": "turn_aborted", "reason": "interrupted"}));
    r
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut sessions = Vec::new();

    let a = alpha();
    let a_path = put(&h, &a.rel(".code/sessions", "2026/04/02"), a.text());
    sessions.push(Written {
        dir: format!("everycode/{A}"),
        lines: [
            "Alpha prompt: rename the orbit module",
            "Alpha thinking: start from lib.rs",
            "Alpha reply: orbit is now trajectory",
            "Alpha notice: history compacted",
            "Alpha summary of the work so far",
            "Alpha prompt two: add a test for trajectory",
            "Alpha agent task: write the trajectory tests",
            "Alpha error: stream disconnected, retrying",
            "time_budget: 600s",
        ]
        .map(String::from)
        .to_vec(),
        outputs: [
            "alpha-output: lib.rs orbit.rs",
            "alpha-agent-output: batch ab12 started",
            "alpha-failed-output: 1 test failed",
        ]
        .map(String::from)
        .to_vec(),
    });

    // --- B: an `exec` session, archived: moved with its date directories.
    let mut b = Rollout::new(B, "/home/dev/bravo", "exec");
    b.prompt("Bravo prompt: summarize the changelog");
    b.event(json!({"type": "token_count", "info": {
        "total_token_usage": usage((300, 0, 20, 0)), "last_token_usage": usage((300, 0, 20, 0)),
        "requested_model": "gpt-5.4-mini", "model_context_window": 272000},
        "rate_limits": null}));
    b.reply("Bravo reply: three fixes and a feature");
    let bp = put(
        &h,
        &b.rel(".code/archived_sessions", "2026/04/01"),
        b.text(),
    );
    put(
        &h,
        &bp.with_extension("snapshot.json")
            .strip_prefix(&h)
            .expect("under home")
            .to_string_lossy(),
        json!({"records": [{"text": SNAPSHOT}], "next_id": 1}).to_string(),
    );
    sessions.push(Written {
        dir: format!("everycode/{B}"),
        lines: vec![
            "Bravo prompt: summarize the changelog".into(),
            "Bravo reply: three fixes and a feature".into(),
        ],
        outputs: vec![],
    });

    // --- C: prompt, reasoning and reply only as events; kinds sessfs does not show.
    let mut c = Rollout::new(C, "/home/dev/charlie", "cli");
    c.event(json!({"type": "user_message", "message": "Charlie prompt: only as an event"}));
    c.event(json!({"type": "agent_reasoning", "text": "Charlie thinking: only as an event"}));
    c.event(json!({"type": "agent_message", "message": "Charlie reply: only as an event"}));
    for _ in 0..2 {
        c.event(
            json!({"type": "agent_status_update", "agents": [], "context": null,
            "task": "Charlie agents"}),
        );
    }
    c.event(
        json!({"type": "browser_screenshot_update", "screenshot_path": "/tmp/s.png",
        "url": "https://example.test"}),
    );
    c.event(json!({"type": "warning", "message": "Charlie warning: model rerouted"}));
    put(&h, &c.rel(".code/sessions", "2026/04/02"), c.text());
    sessions.push(Written {
        dir: format!("everycode/{C}"),
        lines: [
            "Charlie prompt: only as an event",
            "Charlie thinking: only as an event",
            "Charlie reply: only as an event",
            "Charlie warning: model rerouted",
        ]
        .map(String::from)
        .to_vec(),
        outputs: vec![],
    });

    // --- D: a line of garbage in the middle, the last line cut mid-write.
    let mut d = Rollout::new(D, "/home/dev/delta", "cli");
    d.prompt("Delta prompt: before the garbage");
    d.reply("Delta reply: before the garbage");
    d.lines.push("Delta garbage line, not JSON".into());
    d.prompt("Delta prompt: after the garbage");
    d.reply("Delta torn reply that never ends");
    let text = d.text();
    let cut = text.find("Delta torn reply").expect("torn") + "Delta torn".len();
    put(&h, &d.rel(".code/sessions", "2026/04/02"), &text[..cut]);
    sessions.push(Written {
        dir: format!("everycode/{D}"),
        lines: [
            "Delta prompt: before the garbage",
            "Delta reply: before the garbage",
            "Delta prompt: after the garbage",
        ]
        .map(String::from)
        .to_vec(),
        outputs: vec![],
    });

    // --- E: no JSON at all.
    put(
        &h,
        &format!(".code/sessions/2026/04/03/rollout-2026-04-03T12-00-00-{E}.jsonl"),
        "Echo garbage: no JSON at all\n",
    );

    // The catalog: A named by the user, B not; rewritten after every write.
    let catalog = [
        json!({"session_id": A, "rollout_path": a.rel("sessions", "2026/04/02"),
            "created_at": "2026-04-02T09:15:00.000Z", "last_event_at": "2026-04-02T09:15:40.000Z",
            "cwd_real": "/home/dev/orbit", "cwd_display": "/home/dev/orbit",
            "session_source": "cli", "message_count": 30, "user_message_count": 2,
            "last_user_snippet": "Alpha prompt two", "nickname": A_TITLE, "sync_version": 0,
            "archived": false, "deleted": false}),
        json!({"session_id": B, "rollout_path": b.rel("archived_sessions", "2026/04/01"),
            "created_at": "2026-04-02T09:15:00.000Z", "last_event_at": "2026-04-02T09:15:05.000Z",
            "cwd_real": "/home/dev/bravo", "cwd_display": "/home/dev/bravo",
            "session_source": "exec", "message_count": 5, "user_message_count": 1,
            "sync_version": 0, "archived": true, "deleted": false}),
    ];
    let catalog: String = catalog.iter().map(|l| format!("{l}\n")).collect();
    put(&h, ".code/sessions/index/catalog.jsonl", catalog);

    // Beside the sessions: tokens and keys, settings, the prompt history, logs.
    put(
        &h,
        ".code/auth.json",
        json!({"OPENAI_API_KEY": SECRET, "tokens": {"access_token": SECRET,
            "refresh_token": SECRET}})
        .to_string(),
    );
    put(
        &h,
        ".code/auth_accounts.json",
        json!({"accounts": [{"id": "acct-1", "tokens": {"refresh_token": SECRET}}]}).to_string(),
    );
    put(
        &h,
        ".code/config.toml",
        format!("model = \"gpt-5.4\"\n[model_providers.x]\napi_key = \"{SECRET}\"\n"),
    );
    put(
        &h,
        ".code/history.jsonl",
        format!(
            "{}\n",
            json!({"session_id": A, "ts": 1775121300, "text": HISTORY})
        ),
    );
    put(&h, ".code/debug_logs/codex-tui.log", format!("{SECRET}\n"));

    // Codex CLI's own home, which Every Code may read but never writes: Codex's.
    let mut k = Rollout::new(K, "/home/dev/kilo", "cli");
    k.lines[0] = k.lines[0].replace("code_cli_rs", "codex_cli_rs");
    k.prompt("Kilo codex prompt: a thread of Codex itself");
    put(&h, &k.rel(".codex/sessions", "2026/03/30"), k.text());

    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture {
        home,
        sessions,
        a_path,
        a_updated: a.last_ts(),
    }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-everycode", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.sessions {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &s.outputs);
    }
}

/// `(role, kind, label or content)` of each message.
fn shapes(m: &[Value]) -> Vec<(String, String, String)> {
    m.iter()
        .map(|x| {
            let s = |k: &str| x[k].as_str().unwrap_or_default().to_string();
            let what = if s("kind") == "context" {
                s("label")
            } else {
                s("content")
            };
            (s("role"), s("kind"), what)
        })
        .collect()
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    // Five rollouts; the catalog, the snapshot and the history are none.
    assert_eq!(stores::entries(&out.tree, "everycode"), 5);
    // Codex's own thread stays Codex's.
    stores::assert_only_in(
        &out.tree,
        "Kilo codex prompt: a thread of Codex itself",
        ".",
        &format!("codex/{K}"),
    );
}

#[test]
fn every_record_kind_lands_in_messages_jsonl() {
    let fx = write();
    let out = render(&fx);
    let dir = format!("everycode/{A}");
    let m = messages(&out.tree, &dir);
    assert_eq!(
        shapes(&m),
        [
            shape("system", "context", "environment context"),
            shape("system", "context", "system status"),
            shape("user", "", "Alpha prompt: rename the orbit module"),
            shape("assistant", "", ""),
            shape("tool", "", ""),
            shape("assistant", "", "Alpha reply: orbit is now trajectory"),
            shape("system", "context", "browser context"),
            shape("system", "context", "time budget"),
            shape("system", "event", "notice: Alpha notice: history compacted"),
            shape(
                "system",
                "compactionSummary",
                "Alpha summary of the work so far"
            ),
            shape("user", "", "Alpha prompt two: add a test for trajectory"),
            shape("assistant", "", ""),
            shape("tool", "", ""),
            shape("assistant", "", ""),
            shape("tool", "", ""),
            shape(
                "system",
                "event",
                "error: Alpha error: stream disconnected, retrying"
            ),
            shape("system", "event", "turn aborted: interrupted"),
        ]
    );
    // The reasoning item is the reply's thinking (its event copy is not shown again), the
    // status texts are kept as written, the screenshot is a placeholder.
    assert_eq!(m[3]["thinking"], "Alpha thinking: start from lib.rs");
    assert_eq!(m[1]["content"], A_STATUS);
    assert_eq!(m[7]["content"], A_BUDGET);
    assert_eq!(m[6]["content"], "[image: image/png, 3.0 KB]");
    let rendered =
        std::fs::read_to_string(out.tree.join(&dir).join("messages.jsonl")).expect("messages");
    assert!(!rendered.contains("AAAAAAAA"));
    assert_eq!(
        rendered
            .matches("Alpha thinking: start from lib.rs")
            .count(),
        1
    );
    // Each reply carries the model its count named.
    assert_eq!(m[5]["model"], A_MODEL);
}

#[test]
fn tool_calls_pair_with_their_outputs_and_a_failed_command_is_an_error() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, &format!("everycode/{A}"));
    let call = |i: usize| m[i]["toolCalls"][0].clone();
    let result = |i: usize| m[i]["toolResult"].clone();
    assert_eq!(
        (call(3)["toolCallId"].clone(), call(3)["toolName"].clone()),
        (json!("call_a1"), json!("shell"))
    );
    assert_eq!(
        call(3)["input"],
        json!({"command": ["bash", "-lc", "ls src"], "workdir": "/home/dev/orbit"})
    );
    assert_eq!(
        (
            result(4)["toolCallId"].clone(),
            result(4)["toolName"].clone(),
            result(4)["isError"].clone()
        ),
        (json!("call_a1"), json!("shell"), json!(false))
    );
    // The shell's `{output, metadata}` is its output.
    assert_eq!(result(4)["output"], "alpha-output: lib.rs orbit.rs\n");
    assert_eq!(call(11)["toolName"], "agent");
    assert_eq!(
        call(11)["input"]["create"]["task"],
        "Alpha agent task: write the trajectory tests"
    );
    assert_eq!(
        (
            result(12)["toolCallId"].clone(),
            result(12)["output"].clone()
        ),
        (
            json!("call_a2"),
            json!("alpha-agent-output: batch ab12 started")
        )
    );
    assert_eq!(
        (
            result(14)["toolCallId"].clone(),
            result(14)["isError"].clone()
        ),
        (json!("call_a3"), json!(true))
    );
}

#[test]
fn title_cwd_times_model_and_the_restarted_counter() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("everycode/{A}"));
    assert_eq!(a["agent"], "everycode");
    assert_eq!(a["unifiedId"], format!("everycode:{A}"));
    // The name the user gave in the resume picker (the catalog's nickname).
    assert_eq!(a["title"], A_TITLE);
    assert_eq!(a["cwd"], "/home/dev/orbit");
    assert_eq!(a["createdAt"], "2026-04-02T09:15:00.000Z");
    // The last line's time.
    assert_eq!(a["updatedAt"], fx.a_updated);
    assert_eq!(a["model"], A_MODEL);
    assert_eq!(a["source"]["format"], "everycode-jsonl");
    assert_eq!(a["source"]["formatVersion"], "0.6.172");
    // The counter ran to T2, then started again after the compaction and ran to T3: the
    // session spent both runs. Cached input is inside input, reasoning inside output.
    let (input, cached, output, reasoning) = (
        A_T2.0 + A_T3.0,
        A_T2.1 + A_T3.1,
        A_T2.2 + A_T3.2,
        A_T2.3 + A_T3.3,
    );
    let c = &a["cost"];
    assert_eq!(
        stores::tokens(c),
        (
            Some(input - cached),
            Some(output - reasoning),
            Some(cached),
            Some(0)
        ),
        "{c}"
    );
    assert_eq!(c["thinkingTokens"], reasoning);
    assert_eq!(a["warnings"], json!([]), "{}", a["warnings"]);

    let b = meta(&out.tree, &format!("everycode/{B}"));
    assert_eq!(b["title"], "Bravo prompt: summarize the changelog");
    assert_eq!(b["cwd"], "/home/dev/bravo");
    // No response model: the model asked for.
    assert_eq!(b["model"], "gpt-5.4-mini");
    assert_eq!(stores::tokens(&b["cost"]).0, Some(300));
    assert_eq!(b["warnings"], json!([]), "{}", b["warnings"]);
}

#[test]
fn events_stand_in_when_no_item_holds_the_conversation() {
    let fx = write();
    let out = render(&fx);
    let dir = format!("everycode/{C}");
    let m = messages(&out.tree, &dir);
    assert_eq!(
        shapes(&m),
        [
            shape("user", "", "Charlie prompt: only as an event"),
            shape("assistant", "", ""),
            shape("assistant", "", "Charlie reply: only as an event"),
            shape(
                "system",
                "event",
                "warning: Charlie warning: model rerouted"
            ),
        ]
    );
    assert_eq!(m[1]["thinking"], "Charlie thinking: only as an event");
    // Kinds sessfs does not show are named, with their counts.
    let w = warnings(&out.tree, &dir);
    assert!(
        w.contains(
            "3 Every Code event records of kinds sessfs does not show: agent_status_update ×2, browser_screenshot_update ×1"
        ),
        "{w}"
    );
}

#[test]
fn garbage_and_a_torn_line_cost_warnings_not_sessions() {
    let fx = write();
    let out = render(&fx);
    let dir = format!("everycode/{D}");
    let m = messages(&out.tree, &dir);
    let texts: Vec<&str> = m.iter().filter_map(|x| x["content"].as_str()).collect();
    assert!(
        texts.contains(&"Delta prompt: after the garbage"),
        "{texts:?}"
    );
    assert!(
        !texts.iter().any(|t| t.contains("Delta torn reply")),
        "{texts:?}"
    );
    let w = warnings(&out.tree, &dir);
    assert!(w.contains("invalid JSON"), "{w}");
    assert!(w.contains("partial"), "{w}");
    let e = meta(&out.tree, &format!("everycode/{E}"));
    assert_eq!(e["sessionId"], E);
    assert!(
        e["warnings"].to_string().contains("invalid JSON"),
        "{}",
        e["warnings"]
    );
    // The others load whole.
    assert_eq!(
        meta(&out.tree, &format!("everycode/{A}"))["warnings"],
        json!([])
    );
}

#[test]
fn auth_files_settings_snapshots_and_history_are_never_read() {
    let fx = write();
    let out = render(&fx);
    for planted in [SECRET, SNAPSHOT, HISTORY] {
        stores::assert_nowhere(&out.tree, planted);
        stores::assert_list_hides(&fx.home, planted, &[]);
    }
}

/// With `CODE_HOME` set, Every Code's home is there and `~/.code` is not read.
#[test]
fn code_home_moves_the_store() {
    let fx = write();
    let elsewhere = fx.home.path().join("elsewhere");
    let mut r = Rollout::new("019d1a00-0000-7000-8000-00000000e0f0", "/w", "cli");
    r.prompt("Foxtrot prompt under CODE_HOME");
    let rel = r.rel("elsewhere/sessions", "2026/04/02");
    put(fx.home.path(), &rel, r.text());
    let tmp = tempfile::tempdir().expect("tmp");
    let tree = tmp.path().join("tree");
    let o = fx
        .home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("CODE_HOME", &elsewhere)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", stderr(&o));
    stores::assert_only_in(
        &tree,
        "Foxtrot prompt under CODE_HOME",
        ".",
        "everycode/019d1a00-0000-7000-8000-00000000e0f0",
    );
    assert_eq!(stores::entries(&tree, "everycode"), 1);
}

/// With `CODEX_HOME` set and `CODE_HOME` unset, Every Code writes into Codex's home. That
/// directory is Codex's: its Every Code rollouts show once, under `codex/`, read with the
/// fork's records (the catalog's title, the restarted counter, date-directory archives).
#[test]
fn a_shared_codex_home_shows_each_session_once_under_codex() {
    let home = Home::empty();
    let h = home.path();
    let shared = h.join("shared");
    let s_id = "019d1a00-0000-7000-8000-00000000e5a1";
    let mut s = Rollout::new(s_id, "/home/dev/shared", "cli");
    s.prompt("Sierra prompt in a shared home");
    s.tokens((100, 0, 10, 0), (100, 0, 10, 0), "gpt-5.4");
    s.reply("Sierra reply");
    // Resumed: the counter starts again, above where it stopped; the rollout's originator
    // says it is Every Code's, whose counter restarts.
    s.tokens((150, 0, 15, 0), (150, 0, 15, 0), "gpt-5.4");
    put(h, &s.rel("shared/sessions", "2026/04/02"), s.text());
    let t_id = "019d1a00-0000-7000-8000-00000000e5a2";
    let mut t = Rollout::new(t_id, "/home/dev/shared", "cli");
    t.prompt("Tango prompt archived in a shared home");
    put(
        h,
        &t.rel("shared/archived_sessions", "2026/04/01"),
        t.text(),
    );
    put(
        h,
        "shared/sessions/index/catalog.jsonl",
        format!(
            "{}\n",
            json!({"session_id": s_id, "nickname": "Sierra named", "archived": false})
        ),
    );
    // ~/.code holds a session Every Code wrote before CODEX_HOME was set.
    let mut u = Rollout::new("019d1a00-0000-7000-8000-00000000e5a3", "/w", "cli");
    u.prompt("Uniform prompt from before");
    put(h, &u.rel(".code/sessions", "2026/03/01"), u.text());

    let tmp = tempfile::tempdir().expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("CODEX_HOME", &shared)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", stderr(&o));
    stores::assert_only_in(
        &tree,
        "Sierra prompt in a shared home",
        ".",
        &format!("codex/{s_id}"),
    );
    stores::assert_only_in(
        &tree,
        "Tango prompt archived in a shared home",
        ".",
        &format!("codex/{t_id}"),
    );
    // The catalog is no session; ~/.code is still Every Code's.
    assert_eq!(stores::entries(&tree, "codex"), 2);
    assert_eq!(stores::entries(&tree, "everycode"), 1);
    let m = meta(&tree, &format!("codex/{s_id}"));
    assert_eq!(m["title"], "Sierra named");
    assert_eq!(stores::tokens(&m["cost"]).0, Some(100 + 150));
    assert_eq!(m["warnings"], json!([]), "{}", m["warnings"]);
}

#[test]
fn doctor_names_everycode_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(text.contains("everycode"), "{text}");
    assert!(text.contains("5 sessions"), "{text}");
    assert!(text.contains(".code"), "{text}");
}

#[test]
fn mounted_sessions_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m: &Mount| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["everycode"], 15, SECRET, &format!("everycode/{A}"));
    });
}

/// Every Code appends a line per item: a new prompt shows within a second on a mount, and
/// only after what was there.
#[test]
fn an_appended_prompt_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("everycode/{A}/transcript.md"));
    let before = std::fs::read_to_string(&t).expect("transcript");
    let mut more = Rollout::new(A, "/home/dev/orbit", "cli");
    more.lines.clear();
    more.clock = 600;
    more.prompt("Alpha fresh prompt after the mount");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&fx.a_path)
        .expect("open");
    f.write_all(more.text().as_bytes()).expect("append");
    drop(f);
    stores::assert_within_a_second("appended prompt", || {
        stores::file_contains(&t, "Alpha fresh prompt after the mount")
    });
    let after = std::fs::read_to_string(&t).expect("transcript");
    let first = before.find("### ").expect("a message");
    let cost = before.rfind("\n## ").unwrap_or(before.len());
    assert!(after[first..].starts_with(&before[first..cost]), "{after}");
}

/// The bundled sample (`fixtures/home/.code/`): one session with its prompt, a shell call,
/// the reply and a status item, no warning. The lines are the sample's own text.
#[test]
fn bundled_sample_shows_the_session() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::tempdir().expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stores::entries(&tree, "everycode"), 1);
    let dir = "everycode/019c4e10-7a2b-7c3d-8e4f-0a1b2c3d4e5f";
    stores::assert_session_holds(
        &tree,
        dir,
        &[
            "Add a --json flag to the status command",
            "The status command takes --json now",
        ],
        &["status: 3 files changed"],
    );
    let m = meta(&tree, dir);
    assert_eq!(m["title"], "Status as JSON");
    assert_eq!(m["warnings"], json!([]), "{}", m["warnings"]);
}
