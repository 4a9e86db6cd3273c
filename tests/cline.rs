//! Cline, Roo Code and Kilo Code tasks, written here the way the extensions write them
//! (shapes taken from real `ui_messages.json` and `api_conversation_history.json` files and
//! from the extensions' source), rendered with `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below ([`Task`]), never from sessfs' parser.

mod common;

use common::stores::{self, holding, meta, Rendered};
use common::{stderr, stdout, Home, Mount};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A string that looks like a credential, planted in every settings and secrets file.
const SECRET: &str = "sk-ant-api03-PLANTEDclineSECRETdoNotRead0000";

const CODE: &str = ".config/Code/User/globalStorage";
const CODIUM: &str = ".config/VSCodium/User/globalStorage";
const MAC_CODE: &str = "Library/Application Support/Code/User/globalStorage";

/// What the writer put in one task, for the checks.
#[derive(Default)]
struct Task {
    /// `<agent>/<id>`.
    dir: String,
    /// Lines that must be in this session's files and no other session's.
    lines: Vec<&'static str>,
    /// Lines that are in this session and in the named others (a child's task text is its
    /// parent's tool input).
    shared: Vec<(&'static str, &'static str)>,
    /// Tool outputs: must be under this session's `tools/`.
    outputs: Vec<&'static str>,
    /// Prompts and replies the two files both hold: exactly once in `transcript.md`.
    once: Vec<&'static str>,
    /// Expected usage: input, output, cache reads, cache writes, USD.
    usage: (u64, u64, u64, u64, f64),
}

struct Fixture {
    home: Home,
    tasks: Vec<Task>,
}

fn put(home: &Path, rel: &str, v: &Value) -> PathBuf {
    stores::put(home, rel, serde_json::to_string_pretty(v).expect("json"))
}

fn usage_text(request: &str, i: u64, o: u64, cr: u64, cw: u64, cost: f64) -> String {
    json!({"request": request, "tokensIn": i, "tokensOut": o, "cacheWrites": cw,
           "cacheReads": cr, "cost": cost})
    .to_string()
}

fn say(ts: i64, say: &str, text: &str, h: i64) -> Value {
    json!({"ts": ts, "type": "say", "say": say, "text": text,
           "modelInfo": {"providerId": "cline", "modelId": "anthropic/claude-sonnet-4.5", "mode": "act"},
           "conversationHistoryIndex": h})
}

fn ask(ts: i64, ask: &str, text: &str, h: i64) -> Value {
    json!({"ts": ts, "type": "ask", "ask": ask, "text": text, "conversationHistoryIndex": h})
}

fn env_details(cwd: &str) -> Value {
    json!({"type": "text", "text": format!(
        "<environment_details>\n# Visual Studio Code Visible Files\n(No visible files)\n\n# Current Working Directory ({cwd}) Files\nsrc/\n</environment_details>")})
}

/// Every store of the family, as the extensions lay them out, with secrets beside them.
fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut tasks = Vec::new();
    let model =
        json!({"modelId": "anthropic/claude-sonnet-4.5", "providerId": "cline", "mode": "act"});

    // --- Cline in VS Code, native tool calls, both files.
    let a = "1767000000001";
    let ext = format!("{CODE}/saoudrizwan.claude-dev");
    let t0 = 1_767_000_000_001_i64;
    let api = json!([
        {"role": "user", "ts": t0 + 10, "content": [
            {"type": "text", "text": "<task>\nAlpha: rename the widget parser\n</task>"},
            env_details("/home/dev/alpha")]},
        {"role": "assistant", "ts": t0 + 2000, "modelInfo": model, "id": "resp_a1",
         "metrics": {"tokens": {"prompt": 99_000, "completion": 9_000, "cached": 0}, "cost": 9.0},
         "content": [
            {"type": "text", "text": "Alpha reply: I will read the parser first.", "call_id": "resp_a1"},
            {"type": "tool_use", "id": "toolu_a1", "name": "read_file",
             "input": {"path": "src/parser.rs"}, "call_id": "resp_a1"}]},
        {"role": "user", "ts": t0 + 3000, "content": [
            {"type": "text", "text": "[read_file for 'src/parser.rs'] Result:\nalpha-output: fn parse_widget() {}\nalpha-output line two"},
            env_details("/home/dev/alpha")]},
        {"role": "assistant", "ts": t0 + 5000, "modelInfo": model, "content": [
            {"type": "tool_use", "id": "toolu_a2", "name": "attempt_completion",
             "input": {"result": "Alpha completion: parser renamed to widget_parser."}}]},
        {"role": "user", "ts": t0 + 60_000, "content": [
            {"type": "text", "text": "[attempt_completion] Result:"},
            {"type": "text", "text": "The user has provided feedback on the results. Consider their input to continue the task, and then attempt completion again."},
            {"type": "text", "text": "<feedback>\nAlpha feedback: also update the docs\n</feedback>"},
            env_details("/home/dev/alpha")]},
        {"role": "assistant", "ts": t0 + 62_000, "modelInfo": model, "content": [
            {"type": "text", "text": "Alpha reply two: docs updated."}]}
    ]);
    let ui = json!([
        {"ts": t0, "type": "say", "say": "text", "text": "Alpha: rename the widget parser",
         "images": [], "files": [], "conversationHistoryIndex": -1},
        {"ts": t0 + 5, "type": "say", "say": "checkpoint_created", "conversationHistoryIndex": -1,
         "lastCheckpointHash": "aaaa1111checkpoint", "isCheckpointCheckedOut": false},
        say(t0 + 20, "api_req_started", &usage_text("<task>\nAlpha: rename the widget parser\n</task>", 1000, 80, 200, 0, 0.0042), -1),
        say(t0 + 900, "reasoning", "Alpha thinking: the parser lives in src.", 0),
        say(t0 + 1000, "text", "Alpha reply: I will read the parser first.", 0),
        say(t0 + 1500, "tool", &json!({"tool": "readFile", "path": "src/parser.rs", "content": "/home/dev/alpha/src/parser.rs"}).to_string(), 0),
        say(t0 + 3500, "api_req_started", &usage_text("[read_file for 'src/parser.rs'] Result:", 1500, 60, 0, 300, 0.0061), 2),
        say(t0 + 4000, "completion_result", "Alpha completion: parser renamed to widget_parser.", 2),
        ask(t0 + 4100, "completion_result", "", 3),
        json!({"ts": t0 + 60_000, "type": "say", "say": "user_feedback",
               "text": "Alpha feedback: also update the docs", "images": [], "files": [],
               "conversationHistoryIndex": 3}),
        say(t0 + 60_100, "api_req_started", &usage_text("[attempt_completion] Result:", 900, 40, 1000, 0, 0.002), 3),
        say(t0 + 61_000, "error", "Alpha error: diff failed to apply", 4),
        say(t0 + 62_000, "text", "Alpha reply two: docs updated.", 4),
        ask(t0 + 70_000, "resume_completed_task", "", 5),
        json!({"ts": t0 + 80_000, "type": "say", "say": "user_feedback",
               "text": "Alpha late feedback only in the ui", "images": [], "files": [],
               "conversationHistoryIndex": 5}),
        say(t0 + 80_100, "deleted_api_reqs", &json!({"tokensIn": 50, "tokensOut": 5, "cost": 0.0001}).to_string(), 5)
    ]);
    let dir = format!("{ext}/tasks/{a}");
    put(&h, &format!("{dir}/api_conversation_history.json"), &api);
    put(&h, &format!("{dir}/ui_messages.json"), &ui);
    put(
        &h,
        &format!("{dir}/task_metadata.json"),
        &json!({
        "files_in_context": [{"path": "src/parser.rs", "record_state": "active", "record_source": "read_tool",
                              "cline_read_date": t0 + 3000, "cline_edit_date": null}],
        "model_usage": [{"ts": t0 + 20, "model_id": "anthropic/claude-sonnet-4.5", "model_provider_id": "cline", "mode": "act"}],
        "environment_history": []}),
    );
    put(
        &h,
        &format!("{dir}/settings.json"),
        &json!({"apiKey": SECRET}),
    );
    put(
        &h,
        &format!("{ext}/state/taskHistory.json"),
        &json!([
        {"id": a, "ts": t0 + 80_000, "task": "Alpha: rename the widget parser", "tokensIn": 1, "tokensOut": 1,
         "cacheWrites": 0, "cacheReads": 0, "totalCost": 77.0, "size": 4096,
         "cwdOnTaskInitialization": "/home/dev/alpha", "isFavorited": false,
         "modelId": "anthropic/claude-sonnet-4.5"}]),
    );
    put(
        &h,
        &format!("{ext}/settings/cline_mcp_settings.json"),
        &json!({"mcpServers": {"x": {"env": {"TOKEN": SECRET}}}}),
    );
    stores::put(
        &h,
        &format!("{CODE}/state.vscdb"),
        format!("SQLite format 3\0{SECRET}").as_bytes(),
    );
    tasks.push(Task {
        dir: format!("cline/{a}"),
        lines: vec![
            "Alpha: rename the widget parser",
            "Alpha reply: I will read the parser first.",
            "Alpha thinking: the parser lives in src.",
            "alpha-output: fn parse_widget() {}",
            "alpha-output line two",
            "Alpha completion: parser renamed to widget_parser.",
            "Alpha feedback: also update the docs",
            "Alpha error: diff failed to apply",
            "Alpha reply two: docs updated.",
            "Alpha late feedback only in the ui",
            "aaaa1111checkpoint",
        ],
        outputs: vec![
            "alpha-output: fn parse_widget() {}",
            "alpha-output line two",
        ],
        once: vec![
            "Alpha: rename the widget parser",
            "Alpha reply: I will read the parser first.",
            "Alpha feedback: also update the docs",
            "Alpha reply two: docs updated.",
            "Alpha thinking: the parser lives in src.",
        ],
        usage: (3450, 185, 1200, 300, 0.0124),
        ..Task::default()
    });

    // --- Cline CLI (~/.cline/data), tools called in XML, no ui_messages.json: usage from
    // the API messages' metrics.
    let b = "1767000000002";
    let t0 = 1_767_000_000_002_i64;
    let api = json!([
        {"role": "user", "ts": t0, "content": [{"type": "text", "text": "<task>\nBravo: list the files\n</task>"}]},
        {"role": "assistant", "ts": t0 + 1000, "content": [{"type": "text",
            "text": "Bravo reply: listing now.\n<list_files>\n<path>.</path>\n<recursive>false</recursive>\n</list_files>"}],
         "metrics": {"tokens": {"prompt": 500, "completion": 20, "cached": 100}, "cost": 0.001}},
        {"role": "user", "ts": t0 + 2000, "content": [{"type": "text",
            "text": "[list_files for '.'] Result:\nbravo-output: Cargo.toml\nbravo-output: src/"}]},
        {"role": "assistant", "ts": t0 + 3000, "content": [{"type": "text",
            "text": "<attempt_completion>\n<result>\nBravo completion: two entries.\n</result>\n</attempt_completion>"}],
         "metrics": {"tokens": {"prompt": 700, "completion": 30, "cached": 0}, "cost": 0.002}}
    ]);
    put(
        &h,
        &format!(".cline/data/tasks/{b}/api_conversation_history.json"),
        &api,
    );
    put(
        &h,
        ".cline/data/secrets.json",
        &json!({"apiKey": SECRET, "openRouterApiKey": SECRET}),
    );
    put(
        &h,
        ".cline/data/globalState.json",
        &json!({"apiProvider": "anthropic", "note": SECRET}),
    );
    put(
        &h,
        ".cline/data/state/taskHistory.json",
        &json!([
        {"id": b, "ts": t0, "task": "Bravo: list the files", "tokensIn": 0, "tokensOut": 0, "totalCost": 0,
         "cwdOnTaskInitialization": "/home/dev/bravo"}]),
    );
    tasks.push(Task {
        dir: format!("cline/{b}"),
        lines: vec![
            "Bravo: list the files",
            "Bravo reply: listing now.",
            "bravo-output: Cargo.toml",
            "Bravo completion: two entries.",
        ],
        outputs: vec!["bravo-output: Cargo.toml", "bravo-output: src/"],
        usage: (1100, 50, 100, 0, 0.003),
        ..Task::default()
    });

    // --- Cline in VSCodium, its API history cut while the editor rewrote it.
    let c = "1767000000003";
    let t0 = 1_767_000_000_003_i64;
    let whole = serde_json::to_string_pretty(&json!([
        {"role": "user", "ts": t0, "content": [{"type": "text", "text": "<task>\nCharlie: first prompt\n</task>"}]},
        {"role": "assistant", "ts": t0 + 1000, "content": [{"type": "text", "text": "Charlie reply before the cut"}]}
    ]))
    .expect("json");
    let cut = format!(
        "{},\n  {{\"role\": \"user\", \"ts\": {}, \"content\": [{{\"type\": \"text\", \"text\": \"Charlie cut tail",
        whole.trim_end().trim_end_matches(']').trim_end(),
        t0 + 2000
    );
    stores::put(
        &h,
        &format!("{CODIUM}/saoudrizwan.claude-dev/tasks/{c}/api_conversation_history.json"),
        cut.as_bytes(),
    );
    tasks.push(Task {
        dir: format!("cline/{c}"),
        lines: vec![
            "Charlie: first prompt",
            "Charlie reply before the cut",
            "Charlie cut tail",
        ],
        // No `ui_messages.json`: no usage was written.
        usage: stores::NOT_RECORDED,
        ..Task::default()
    });

    // --- Roo Code: a parent task that delegated to a child task.
    let d = "0b5e6c1a-1111-4aaa-8bbb-000000000001";
    let e = "0b5e6c1a-2222-4aaa-8bbb-000000000002";
    let ext = format!("{CODE}/rooveterinaryinc.roo-cline");
    let t0 = 1_767_100_000_000_i64;
    put(
        &h,
        &format!("{ext}/tasks/{d}/api_conversation_history.json"),
        &json!([
            {"role": "user", "ts": t0, "content": [{"type": "text", "text": "<task>\nDelta: split the config loader\n</task>"}]},
            {"type": "reasoning", "ts": t0 + 500, "summary": [{"type": "summary_text", "text": "Delta reasoning summary: delegate"}],
             "encrypted_content": "gAAAAB-opaque"},
            {"role": "assistant", "ts": t0 + 1000, "content": [
                {"type": "text", "text": "Delta reply: delegating the loader."},
                {"type": "tool_use", "id": "call_d1", "name": "new_task",
                 "input": {"mode": "code", "message": "Echo: move the loader into its own module"}}]},
            {"role": "user", "ts": t0 + 9000, "content": [
                {"type": "tool_result", "tool_use_id": "call_d1",
                 "content": [{"type": "text", "text": "delta-output: child finished the loader move"}]}]}
        ]),
    );
    put(
        &h,
        &format!("{ext}/tasks/{d}/ui_messages.json"),
        &json!([
            {"ts": t0, "type": "say", "say": "text", "text": "Delta: split the config loader", "images": []},
            say(t0 + 100, "api_req_started", &usage_text("<task>", 2000, 100, 0, 0, 0.01), 0),
            say(t0 + 1000, "text", "Delta reply: delegating the loader.", 1)
        ]),
    );
    put(
        &h,
        &format!("{ext}/tasks/{d}/history_item.json"),
        &json!({
        "id": d, "number": 1, "ts": t0, "task": "Delta: split the config loader", "tokensIn": 2000,
        "tokensOut": 100, "totalCost": 0.01, "workspace": "/home/dev/delta", "mode": "orchestrator",
        "status": "completed", "childIds": [e], "delegatedToId": e}),
    );
    put(
        &h,
        &format!("{ext}/tasks/{e}/api_conversation_history.json"),
        &json!([
            {"role": "user", "ts": t0 + 2000, "content": [{"type": "text", "text": "<task>\nEcho: move the loader into its own module\n</task>"}]},
            {"role": "assistant", "ts": t0 + 3000, "content": [{"type": "text", "text": "Echo reply: moved it."}],
             "reasoning_content": "Echo thinking: one file is enough"}
        ]),
    );
    put(
        &h,
        &format!("{ext}/tasks/{e}/ui_messages.json"),
        &json!([
            {"ts": t0 + 2000, "type": "say", "say": "text", "text": "Echo: move the loader into its own module"},
            say(t0 + 2100, "api_req_started", &usage_text("<task>", 300, 30, 0, 0, 0.001), 0)
        ]),
    );
    put(
        &h,
        &format!("{ext}/tasks/{e}/history_item.json"),
        &json!({
        "id": e, "number": 2, "ts": t0 + 2000, "task": "Echo: move the loader into its own module",
        "tokensIn": 300, "tokensOut": 30, "totalCost": 0.001, "workspace": "/home/dev/delta",
        "parentTaskId": d, "rootTaskId": d}),
    );
    put(
        &h,
        &format!("{ext}/settings/mcp_settings.json"),
        &json!({"mcpServers": {"y": {"env": {"KEY": SECRET}}}}),
    );
    tasks.push(Task {
        dir: format!("roo/{d}"),
        lines: vec![
            "Delta: split the config loader",
            "Delta reasoning summary: delegate",
            "Delta reply: delegating the loader.",
            "delta-output: child finished the loader move",
        ],
        outputs: vec!["delta-output: child finished the loader move"],
        once: vec![
            "Delta reply: delegating the loader.",
            "Delta: split the config loader",
        ],
        usage: (2000, 100, 0, 0, 0.01),
        ..Task::default()
    });
    tasks.push(Task {
        dir: format!("roo/{e}"),
        lines: vec!["Echo reply: moved it.", "Echo thinking: one file is enough"],
        shared: vec![(
            "Echo: move the loader into its own module",
            "roo/0b5e6c1a-1111-4aaa-8bbb-000000000001",
        )],
        usage: (300, 30, 0, 0, 0.001),
        ..Task::default()
    });

    // --- Kilo Code on macOS.
    let f = "7c1f0d2e-3333-4ccc-9ddd-000000000003";
    let t0 = 1_767_200_000_000_i64;
    let dir = format!("{MAC_CODE}/kilocode.kilo-code/tasks/{f}");
    put(
        &h,
        &format!("{dir}/api_conversation_history.json"),
        &json!([
            {"role": "user", "ts": t0, "content": [{"type": "text", "text": "<task>\nFoxtrot: add a retry\n</task>"}]},
            {"role": "assistant", "ts": t0 + 1000, "content": [{"type": "text", "text": "Foxtrot reply: retry added."}]}
        ]),
    );
    put(
        &h,
        &format!("{dir}/ui_messages.json"),
        &json!([
            {"ts": t0, "type": "say", "say": "text", "text": "Foxtrot: add a retry"},
            say(t0 + 100, "api_req_started", &usage_text("<task>", 400, 20, 0, 0, 0.0005), 0)
        ]),
    );
    stores::put(
        &h,
        &format!("{MAC_CODE}/kilocode.kilo-code/settings/custom_modes.yaml"),
        format!("key: {SECRET}\n").as_bytes(),
    );
    tasks.push(Task {
        dir: format!("kilo/{f}"),
        lines: vec!["Foxtrot: add a retry", "Foxtrot reply: retry added."],
        usage: (400, 20, 0, 0, 0.0005),
        ..Task::default()
    });

    // --- Roo Code of the versions that kept the task list in VS Code's global state: the
    // `taskHistory` of the `ItemTable` row keyed by the extension id in the editor's
    // `state.vscdb` (beside settings of the same value and an auth row, never shown).
    let hid = "0b5e6c1a-3333-4aaa-8bbb-000000000003";
    let gs = ".config/Cursor/User/globalStorage";
    put(
        &h,
        &format!("{gs}/rooveterinaryinc.roo-cline/tasks/{hid}/api_conversation_history.json"),
        &json!([
            {"role": "user", "ts": 1_767_200_000_000_i64, "content": [{"type": "text", "text": "<task>\nHotel: bump the version\n</task>"}]},
            {"role": "assistant", "ts": 1_767_200_001_000_i64, "content": [{"type": "text", "text": "Hotel reply: bumped to 2.1."}]}
        ]),
    );
    let db = h.join(gs).join("state.vscdb");
    let c = rusqlite::Connection::open(&db).expect("state.vscdb");
    c.execute_batch("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);")
        .expect("ddl");
    let state = json!({"apiProvider": "anthropic", "customInstructions": SECRET,
        "taskHistory": [{"id": hid, "number": 1, "ts": 1_767_200_001_000_i64,
                         "task": "Hotel (state.vscdb): bump the version", "workspace": "/home/dev/hotel",
                         "tokensIn": 300, "tokensOut": 12, "totalCost": 0.0009}]});
    for (k, v) in [
        ("rooveterinaryinc.roo-cline", state.to_string()),
        (
            "secret://rooveterinaryinc.roo-cline/openAiApiKey",
            SECRET.to_string(),
        ),
    ] {
        c.execute("INSERT INTO ItemTable (key, value) VALUES (?1, ?2)", (k, v))
            .expect("row");
    }
    drop(c);
    tasks.push(Task {
        dir: format!("roo/{hid}"),
        lines: vec!["Hotel reply: bumped to 2.1."],
        usage: (300, 12, 0, 0, 0.0009),
        ..Task::default()
    });

    // --- Cline's SDK-era session (cline/cline sdk: `sessions/<id>/<id>.messages.json` and
    // its manifest `<id>.json`), content blocks with metrics per response, a fork.
    let g = "1784000000001_abcde";
    let dir = format!(".cline/data/sessions/{g}");
    put(
        &h,
        &format!("{dir}/{g}.json"),
        &json!({"version": 1, "session_id": g, "source": "cli", "pid": 4242,
                "started_at": "2026-07-14T10:00:00.000Z", "ended_at": "2026-07-14T10:05:00.000Z",
                "status": "completed", "interactive": true, "provider": "anthropic",
                "model": "claude-sonnet-4-5", "cwd": "/home/dev/golf", "workspace_root": "/home/dev/golf",
                "enable_tools": true, "enable_spawn": false, "enable_teams": false,
                "metadata": {"title": "Golf: count the widgets",
                             "fork": {"forkedFromSessionId": "1783999999999_zzzzz"}},
                "messages_path": format!("/home/dev/{dir}/{g}.messages.json")}),
    );
    let mi = json!({"id": "claude-sonnet-4-5", "provider": "anthropic"});
    put(
        &h,
        &format!("{dir}/{g}.messages.json"),
        &json!({"version": 1, "updated_at": "2026-07-14T10:05:00.000Z", "agent": "lead",
                "sessionId": g, "messages": [
            {"id": "m1", "role": "user", "ts": 1_784_000_000_100_i64, "content": [
                {"type": "text", "text": "Golf: count the widgets in src"},
                {"type": "file", "path": "/home/dev/golf/src/w.rs", "content": "golf-attached: struct Widget;"}]},
            {"id": "m2", "role": "assistant", "ts": 1_784_000_001_000_i64, "modelInfo": mi,
             "metrics": {"inputTokens": 900, "outputTokens": 70, "cacheReadTokens": 100,
                         "cacheWriteTokens": 50, "cost": 0.0031},
             "content": [
                {"type": "thinking", "thinking": "Golf thinking: grep is enough."},
                {"type": "text", "text": "Golf reply: searching."},
                {"type": "tool_use", "id": "toolu_g1", "name": "run_commands",
                 "input": {"commands": ["grep -c Widget src"]}}]},
            {"id": "m3", "role": "user", "ts": 1_784_000_002_000_i64, "content": [
                {"type": "tool_result", "tool_use_id": "toolu_g1", "name": "run_commands",
                 "content": [{"type": "text", "text": "golf-output: 7 widgets"}]}]},
            {"id": "m4", "role": "assistant", "ts": 1_784_000_003_000_i64, "modelInfo": mi,
             "metrics": {"inputTokens": 1000, "outputTokens": 30, "cost": 0.0012},
             "content": "Golf reply two: there are 7 widgets."}
        ]}),
    );
    put(
        &h,
        ".cline/data/settings/providers.json",
        &json!({"providers": {"anthropic": {"apiKey": SECRET}}}),
    );
    tasks.push(Task {
        dir: format!("cline/{g}"),
        lines: vec![
            "Golf: count the widgets in src",
            "golf-attached: struct Widget;",
            "Golf thinking: grep is enough.",
            "Golf reply: searching.",
            "Golf reply two: there are 7 widgets.",
        ],
        outputs: vec!["golf-output: 7 widgets"],
        usage: (1900, 100, 100, 50, 0.0043),
        ..Task::default()
    });

    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, tasks }
}

/// Variables naming a Cline store, kept out of the test's environment.
const CLINE_VARS: &[&str] = &["CLINE_DATA_DIR", "CLINE_DIR", "CLINE_SESSION_DATA_DIR"];

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-cline", CLINE_VARS)
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for t in &fx.tasks {
        for line in &t.lines {
            stores::assert_only_in(tree, line, ".", &t.dir);
        }
        for (line, other) in &t.shared {
            assert_eq!(
                holding(tree, line, "."),
                BTreeSet::from([t.dir.clone(), other.to_string()]),
                "'{line}'"
            );
        }
        for out in &t.outputs {
            stores::assert_tool_output(tree, out, &t.dir);
        }
        let transcript =
            std::fs::read_to_string(tree.join(&t.dir).join("transcript.md")).expect("transcript");
        // The title line repeats the first prompt by design.
        let transcript = transcript.split_once('\n').map_or("", |(_, rest)| rest);
        for line in &t.once {
            assert_eq!(
                transcript.matches(line).count(),
                1,
                "'{line}' in {}:\n{transcript}",
                t.dir
            );
        }
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    for agent in ["cline", "roo", "kilo"] {
        assert!(tree.join(agent).is_dir(), "no {agent}/");
    }
    check_tree(tree, &fx);
}

#[test]
fn usage_and_cost_are_counted_once_per_api_request() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    for t in &fx.tasks {
        stores::assert_cost(tree, &t.dir, t.usage);
    }
}

#[test]
fn titles_cwd_models_and_child_tasks_come_from_the_task_files() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    let a = meta(tree, "cline/1767000000001");
    assert_eq!(a["title"], "Alpha: rename the widget parser");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["model"], "anthropic/claude-sonnet-4.5");
    assert_eq!(a["createdAt"], "2025-12-29T09:20:00.001Z");
    assert_eq!(meta(tree, "cline/1767000000002")["cwd"], "/home/dev/bravo");
    let hotel = meta(tree, "roo/0b5e6c1a-3333-4aaa-8bbb-000000000003");
    assert_eq!(hotel["title"], "Hotel (state.vscdb): bump the version");
    assert_eq!(hotel["cwd"], "/home/dev/hotel");
    let g = meta(tree, "cline/1784000000001_abcde");
    assert_eq!(g["title"], "Golf: count the widgets");
    assert_eq!(g["cwd"], "/home/dev/golf");
    assert_eq!(g["model"], "claude-sonnet-4-5");
    assert_eq!(g["createdAt"], "2026-07-14T10:00:00.000Z");
    assert_eq!(g["forkedFrom"], "cline:1783999999999_zzzzz", "{g}");
    let d = meta(tree, "roo/0b5e6c1a-1111-4aaa-8bbb-000000000001");
    assert_eq!(d["cwd"], "/home/dev/delta");
    assert_eq!(
        d["subagents"][0]["unifiedId"],
        "roo:0b5e6c1a-2222-4aaa-8bbb-000000000002"
    );
    let e = meta(tree, "roo/0b5e6c1a-2222-4aaa-8bbb-000000000002");
    assert_eq!(e["parent"], "roo:0b5e6c1a-1111-4aaa-8bbb-000000000001");
    let link = tree.join("roo/0b5e6c1a-1111-4aaa-8bbb-000000000001/subagents");
    assert!(link.is_dir(), "no subagents/ under the parent");
}

#[test]
fn a_half_written_history_keeps_what_came_before_the_cut_and_says_so() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    let m = meta(tree, "cline/1767000000003");
    let warnings = m["warnings"].to_string();
    assert!(
        warnings.contains("api_conversation_history.json") && warnings.contains("cut after 2"),
        "{warnings}"
    );
}

#[test]
fn secrets_and_settings_beside_the_tasks_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    stores::assert_nowhere(tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &["CLINE_DATA_DIR"]);
    for dir in ["cline", "roo", "kilo"] {
        let n = stores::entries(tree, dir);
        let want = fx.tasks.iter().filter(|t| t.dir.starts_with(dir)).count();
        assert_eq!(n, want, "{dir}: settings or state files listed as tasks");
    }
}

#[test]
fn doctor_names_the_three_agents_and_where_it_found_them() {
    let fx = write();
    let o = fx.home.sessfs(&["doctor"]);
    let text = stdout(&o);
    for (agent, n) in [("cline", 4), ("roo", 3), ("kilo", 1)] {
        assert!(
            text.contains(&format!("{agent:<9} {n} sessions")),
            "{agent}: {text}"
        );
    }
    assert!(text.contains("saoudrizwan.claude-dev"), "{text}");
    assert!(text.contains("kilocode.kilo-code"), "{text}");
}

#[test]
fn mounted_family_greps_sizes_erofs_and_stores_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        let tops = ["cline", "roo", "kilo"];
        stores::assert_mount_read_only(m, &tops, 12, SECRET, "cline/1767000000001");
    });
}

#[test]
fn a_store_given_by_hand_may_be_a_tasks_directory_or_one_task() {
    let home = Home::empty();
    let h = home.path();
    let task = |dir: &str, words: &str| {
        put(
            h,
            &format!("{dir}/api_conversation_history.json"),
            &json!([
                {"role": "user", "ts": 1_767_300_000_000_i64, "content": [{"type": "text", "text": format!("<task>\n{words}\n</task>")}]},
                {"role": "assistant", "ts": 1_767_300_001_000_i64, "content": [{"type": "text", "text": format!("reply to {words}")}]}
            ]),
        );
    };
    task(
        "backup/roo-tasks/11111111-aaaa-4bbb-8ccc-000000000001",
        "Golf: from a tasks directory",
    );
    task(
        "elsewhere/one-task/22222222-aaaa-4bbb-8ccc-000000000002",
        "Hotel: one task alone",
    );
    let out = tempfile::tempdir().expect("tmp");
    let tree = out.path().join("tree");
    let tasks = h.join("backup/roo-tasks");
    let one = h.join("elsewhere/one-task/22222222-aaaa-4bbb-8ccc-000000000002");
    let o = home.sessfs(&[
        "render",
        "--store",
        &format!("roo={}", tasks.display()),
        "--store",
        &format!("kilo={}", one.display()),
        tree.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    stores::assert_only_in(
        &tree,
        "reply to Golf: from a tasks directory",
        ".",
        "roo/11111111-aaaa-4bbb-8ccc-000000000001",
    );
    stores::assert_only_in(
        &tree,
        "reply to Hotel: one task alone",
        ".",
        "kilo/22222222-aaaa-4bbb-8ccc-000000000002",
    );
}

/// Real Cline tasks, where `SESSFS_REAL_SESSIONS` names directories holding them
/// (`<dir>/cline/<set>/api_conversation_history.json[.gz]`, `ui_messages.json`): each set is
/// laid out as a task of its own, rendered, and checked against this test's own reading of
/// the raw files: every line of every prompt, reply, reasoning, tool input and tool output
/// in the session's `transcript.md` or `tools/`, and usage equal to a recount.
#[test]
fn real_cline_tasks_lose_no_line_and_count_usage_once() {
    let Some(dirs) = std::env::var_os("SESSFS_REAL_SESSIONS") else {
        println!("skipped: SESSFS_REAL_SESSIONS is not set (no real Cline tasks to check)");
        return;
    };
    let home = Home::empty();
    let tasks = home
        .path()
        .join(".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks");
    let mut sets = Vec::new();
    for dir in std::env::split_paths(&dirs) {
        let Ok(rd) = std::fs::read_dir(dir.join("cline")) else {
            continue;
        };
        let mut found: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        found.sort();
        for set in found {
            let id = (1_700_000_000_000_u64 + sets.len() as u64).to_string();
            let task = tasks.join(&id);
            std::fs::create_dir_all(&task).expect("mkdir");
            for name in ["api_conversation_history.json", "ui_messages.json"] {
                let plain = set.join(name);
                let gz = set.join(format!("{name}.gz"));
                let bytes = if plain.is_file() {
                    std::fs::read(&plain).expect("read")
                } else if gz.is_file() {
                    let o = Command::new("gzip")
                        .arg("-dc")
                        .arg(&gz)
                        .output()
                        .expect("gzip");
                    assert!(o.status.success());
                    o.stdout
                } else {
                    continue;
                };
                std::fs::write(task.join(name), bytes).expect("write");
            }
            sets.push((set, id));
        }
    }
    if sets.is_empty() {
        println!("skipped: no cline/ directory under SESSFS_REAL_SESSIONS");
        return;
    }
    let out = tempfile::tempdir().expect("tmp");
    let tree = out.path().join("tree");
    let o = home.sessfs(&["render", tree.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", stderr(&o));
    for (set, id) in &sets {
        let dir = tree.join("cline").join(id);
        let mut rendered = std::fs::read_to_string(dir.join("transcript.md")).expect("transcript");
        for f in common::files_under(&dir.join("tools")) {
            rendered.push_str(&std::fs::read_to_string(f).expect("tool file"));
        }
        let rendered = rendered
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&");
        let task = tasks.join(id);
        let read = |name: &str| -> Option<Value> {
            let bytes = std::fs::read(task.join(name)).ok()?;
            Some(serde_json::from_slice(&bytes).expect("real file parses"))
        };
        let api = read("api_conversation_history.json");
        let ui = read("ui_messages.json");
        let mut texts: Vec<String> = Vec::new();
        let mut want = (0u64, 0u64, 0u64, 0u64);
        for m in api
            .iter()
            .flat_map(|a| a.as_array().cloned().unwrap_or_default())
        {
            let blocks = match &m["content"] {
                Value::String(s) => vec![json!({"type": "text", "text": s})],
                Value::Array(a) => a.clone(),
                _ => Vec::new(),
            };
            for b in blocks {
                match b["type"].as_str() {
                    Some("text") => texts.extend(b["text"].as_str().map(str::to_string)),
                    Some("thinking") => texts.extend(b["thinking"].as_str().map(str::to_string)),
                    Some("tool_use") => strings(&b["input"], &mut texts),
                    Some("tool_result") => strings(&b["content"], &mut texts),
                    _ => {}
                }
            }
            let t = &m["metrics"]["tokens"];
            let (p, c) = (
                t["prompt"].as_u64().unwrap_or(0),
                t["cached"].as_u64().unwrap_or(0),
            );
            want.0 += p - c;
            want.1 += t["completion"].as_u64().unwrap_or(0);
            want.2 += c;
        }
        let mut ui_usage = (0u64, 0u64, 0u64, 0u64);
        let mut any_ui_usage = false;
        for r in ui
            .iter()
            .flat_map(|a| a.as_array().cloned().unwrap_or_default())
        {
            let text = r["text"].as_str().unwrap_or("");
            match r["say"].as_str() {
                Some("api_req_started" | "deleted_api_reqs" | "subagent_usage") => {
                    any_ui_usage = true;
                    let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
                    let n = |k: &str| v[k].as_u64().unwrap_or(0);
                    ui_usage.0 += n("tokensIn");
                    ui_usage.1 += n("tokensOut");
                    ui_usage.2 += n("cacheReads");
                    ui_usage.3 += n("cacheWrites");
                    if api.is_none() {
                        texts.extend(v["request"].as_str().map(str::to_string));
                    }
                }
                Some("tool") => strings(
                    &serde_json::from_str::<Value>(text).unwrap_or(Value::Null),
                    &mut texts,
                ),
                _ => {
                    if r["ask"].as_str() == Some("followup") {
                        let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
                        strings(&v, &mut texts);
                    } else {
                        texts.push(text.to_string());
                    }
                }
            }
        }
        if any_ui_usage {
            want = ui_usage;
        }
        // Whole rendered lines first: a substring search per line is slow in a debug build.
        let whole: std::collections::HashSet<&str> = rendered.lines().map(str::trim).collect();
        let (mut lines, mut missing) = (0, Vec::new());
        for t in &texts {
            for line in t.lines().map(strip_ansi) {
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                lines += 1;
                let escaped = serde_json::to_string(line).expect("json");
                if !whole.contains(line)
                    && !rendered.contains(line)
                    && !rendered.contains(&escaped[1..escaped.len() - 1])
                {
                    missing.push(line.to_string());
                }
            }
        }
        println!(
            "{}: {lines} lines, {} missing",
            set.display(),
            missing.len()
        );
        assert!(
            missing.is_empty(),
            "{}: {:?}",
            set.display(),
            &missing[..missing.len().min(5)]
        );
        let c = meta(&tree, &format!("cline/{id}"))["cost"].clone();
        let got = (
            c["inputTokens"].as_u64().unwrap_or(0),
            c["outputTokens"].as_u64().unwrap_or(0),
            c["cachedTokens"].as_u64().unwrap_or(0),
            c["cacheWriteTokens"].as_u64().unwrap_or(0),
        );
        assert_eq!(got, want, "{}", set.display());
    }
}

/// Every string inside a JSON value.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o
            .iter()
            .filter(|(k, _)| k.as_str() != "data")
            .for_each(|(_, x)| strings(x, out)),
        _ => {}
    }
}

/// A line without its terminal escape sequences, as the renderer shows it.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() || c == '~' {
                        break;
                    }
                }
            }
            Some(']') => {
                for c in chars.by_ref() {
                    if c == '\u{7}' {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The extension rewrites `ui_messages.json` whole and creates a task directory per task:
/// both show through the mount within a second, without a remount.
#[test]
fn a_rewritten_task_and_a_new_task_show_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let session = m.path().join("cline/1767000000001/transcript.md");
    assert!(std::fs::read_to_string(&session)
        .expect("transcript")
        .contains("Alpha reply two"));
    let ui = fx
        .home
        .path()
        .join(CODE)
        .join("saoudrizwan.claude-dev/tasks/1767000000001/ui_messages.json");
    let mut records: Vec<Value> =
        serde_json::from_slice(&std::fs::read(&ui).expect("ui")).expect("ui parses");
    records.push(
        json!({"ts": 1_767_000_090_000_i64, "type": "say", "say": "user_feedback",
        "text": "Alpha fresh feedback after the mount", "images": [], "files": [],
        "conversationHistoryIndex": 5}),
    );
    // As the extension writes it: the whole file replaced in place.
    std::fs::write(&ui, serde_json::to_vec_pretty(&records).expect("json")).expect("write");
    stores::assert_within_a_second("rewritten ui_messages.json", || {
        stores::file_contains(&session, "Alpha fresh feedback after the mount")
    });
    let new = fx
        .home
        .path()
        .join(CODE)
        .join("saoudrizwan.claude-dev/tasks/1767000000099");
    std::fs::create_dir_all(&new).expect("mkdir");
    std::fs::write(
        new.join("api_conversation_history.json"),
        json!([{"role": "user", "ts": 1_767_000_099_000_i64,
                "content": [{"type": "text", "text": "<task>\nIndia: a task started after the mount\n</task>"}]}])
        .to_string(),
    )
    .expect("write");
    stores::assert_within_a_second("new task directory", || {
        m.path().join("cline/1767000000099/transcript.md").exists()
    });
}

/// A task's API history holding `words` as its prompt, then one reply per entry of
/// `replies`, as the extensions write it.
fn glance_api(words: &str, replies: &[&str]) -> Value {
    let mut api = vec![json!({"role": "user", "ts": 1_767_400_000_000_i64,
        "content": [{"type": "text", "text": format!("<task>\n{words}\n</task>")}]})];
    for (i, r) in replies.iter().enumerate() {
        api.push(
            json!({"role": "assistant", "ts": 1_767_400_001_000_i64 + i as i64,
            "content": [{"type": "text", "text": r}]}),
        );
    }
    Value::Array(api)
}

/// A Cline SDK session `id` under `~/.cline/data/sessions/`, its prompt saying `words`.
fn glance_sdk(h: &Path, id: &str, words: &str) {
    let dir = format!(".cline/data/sessions/{id}");
    put(
        h,
        &format!("{dir}/{id}.messages.json"),
        &json!({"version": 1, "messages": [
            {"role": "user", "content": words, "ts": 1_767_400_000_000_i64}]}),
    );
    put(
        h,
        &format!("{dir}/{id}.json"),
        &json!({"started_at": "2026-01-03T00:00:00Z", "metadata": {"title": words}}),
    );
}

/// `sessfs search` with its log: the sessions found, and whether no store at all was
/// listed (the family is three stores: each must be vouched for by its glance).
fn glance_search(home: &Home, query: &str) -> (BTreeSet<String>, bool) {
    let out = home
        .command(&["search", "--json", query])
        .env("RUST_LOG", "sessfs=info")
        .output()
        .expect("search");
    let found = stdout(&out)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("json line");
            let path = v["path"].as_str().expect("path").to_string();
            path.split('/').take(2).collect::<Vec<_>>().join("/")
        })
        .collect();
    (found, stderr(&out).contains("no store listed"))
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

/// The glances of Cline, Roo Code and Kilo Code (task directories, their task lists, Cline's
/// SDK sessions): with nothing changed a search lists no store; a rewritten task file, a new
/// task directory, a directory that becomes a task, a new SDK session and deleted tasks are
/// each found by the next search.
#[test]
fn cline_family_changes_are_found_by_the_next_search() {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let cline = format!("{CODE}/saoudrizwan.claude-dev");
    let roo = format!("{CODE}/rooveterinaryinc.roo-cline");
    let kilo = format!("{CODE}/kilocode.kilo-code");
    let (c1, c2) = ("1767400000001", "1767400000002");
    let (r1, r2) = (
        "7a1c0000-0000-4000-8000-000000000001",
        "7a1c0000-0000-4000-8000-000000000002",
    );
    let k1 = "7b1c0000-0000-4000-8000-000000000001";
    let s1 = "sdk-glance-0001";
    put(
        &h,
        &format!("{cline}/tasks/{c1}/api_conversation_history.json"),
        &glance_api("the glanceclineone task", &["a glanceclineone reply"]),
    );
    put(
        &h,
        &format!("{cline}/tasks/{c2}/api_conversation_history.json"),
        &glance_api("the glanceclinetwo task", &[]),
    );
    put(
        &h,
        &format!("{cline}/state/taskHistory.json"),
        &json!([{"id": c1, "ts": 1_767_400_000_001_i64, "task": "the glanceclineone task"}]),
    );
    put(
        &h,
        &format!("{roo}/tasks/{r1}/api_conversation_history.json"),
        &glance_api("the glancerooone task", &[]),
    );
    put(
        &h,
        &format!("{roo}/tasks/{r1}/history_item.json"),
        &json!({"id": r1, "task": "the glancerooone task", "workspace": "/home/dev/roo"}),
    );
    // Not a task yet: a directory with no conversation file.
    put(
        &h,
        &format!("{roo}/tasks/{r2}/task_metadata.json"),
        &json!({"files_in_context": []}),
    );
    put(
        &h,
        &format!("{roo}/tasks/_index.json"),
        &json!({"version": 1, "entries": [{"id": r1, "task": "the glancerooone task"}]}),
    );
    put(
        &h,
        &format!("{kilo}/tasks/{k1}/api_conversation_history.json"),
        &glance_api("the glancekiloone task", &[]),
    );
    put(
        &h,
        &format!("{kilo}/task_history.json"),
        &json!([{"id": k1, "task": "the glancekiloone task"}]),
    );
    glance_sdk(&h, s1, "the glancesdkone task");
    let mut dirs = vec![h.clone()];
    let mut i = 0;
    while i < dirs.len() {
        for e in std::fs::read_dir(&dirs[i]).expect("read_dir").flatten() {
            if e.file_type().expect("type").is_dir() {
                dirs.push(e.path());
            }
        }
        i += 1;
    }
    for d in &dirs {
        common::age(d, 3600);
    }
    let all = set(&[
        &format!("cline/{c1}"),
        &format!("cline/{c2}"),
        &format!("cline/{s1}"),
        &format!("roo/{r1}"),
        &format!("kilo/{k1}"),
    ]);
    assert_eq!(glance_search(&home, "task"), (all.clone(), false));
    assert_eq!(glance_search(&home, "task"), (all, true));
    // The extensions rewrite a task file whole: no directory moves, the file does.
    let c1_api = h.join(format!("{cline}/tasks/{c1}/api_conversation_history.json"));
    put(
        &h,
        &format!("{cline}/tasks/{c1}/api_conversation_history.json"),
        &glance_api(
            "the glanceclineone task",
            &["a glanceclineone reply", "an appendedcline reply"],
        ),
    );
    assert!(c1_api.is_file());
    assert_eq!(
        glance_search(&home, "appendedcline").0,
        set(&[&format!("cline/{c1}")])
    );
    assert_eq!(
        glance_search(&home, "appendedcline"),
        (set(&[&format!("cline/{c1}")]), true)
    );
    put(
        &h,
        &format!("{kilo}/tasks/{k1}/api_conversation_history.json"),
        &glance_api("the glancekiloone task", &["an appendedkilo reply"]),
    );
    assert_eq!(
        glance_search(&home, "appendedkilo").0,
        set(&[&format!("kilo/{k1}")])
    );
    assert_eq!(
        glance_search(&home, "appendedkilo"),
        (set(&[&format!("kilo/{k1}")]), true)
    );
    // A new task directory: only `tasks/` moves.
    let c3 = "1767400000003";
    put(
        &h,
        &format!("{cline}/tasks/{c3}/api_conversation_history.json"),
        &glance_api("the glanceclinethree task", &[]),
    );
    common::age(&h.join(format!("{cline}/tasks/{c3}")), 3000);
    common::age(&h.join(format!("{cline}/tasks")), 3000);
    assert_eq!(
        glance_search(&home, "glanceclinethree"),
        (set(&[&format!("cline/{c3}")]), false)
    );
    assert!(glance_search(&home, "glanceclinethree").1);
    // A directory that becomes a task: only its own mtime moves.
    put(
        &h,
        &format!("{roo}/tasks/{r2}/api_conversation_history.json"),
        &glance_api("the glanceklootwo task", &[]),
    );
    common::age(&h.join(format!("{roo}/tasks/{r2}")), 3000);
    assert_eq!(
        glance_search(&home, "glanceklootwo").0,
        set(&[&format!("roo/{r2}")])
    );
    // A new SDK session: only `sessions/` moves.
    let s2 = "sdk-glance-0002";
    glance_sdk(&h, s2, "the glancesdktwo task");
    common::age(&h.join(format!(".cline/data/sessions/{s2}")), 3000);
    common::age(&h.join(".cline/data/sessions"), 3000);
    assert_eq!(
        glance_search(&home, "glancesdktwo").0,
        set(&[&format!("cline/{s2}")])
    );
    assert!(glance_search(&home, "glancesdktwo").1);
    // Deleted: a task directory, and an SDK session.
    std::fs::remove_dir_all(h.join(format!("{cline}/tasks/{c2}"))).expect("rm");
    common::age(&h.join(format!("{cline}/tasks")), 2400);
    assert_eq!(glance_search(&home, "glanceclinetwo").0, BTreeSet::new());
    std::fs::remove_dir_all(h.join(format!(".cline/data/sessions/{s1}"))).expect("rm");
    common::age(&h.join(".cline/data/sessions"), 2400);
    assert_eq!(glance_search(&home, "glancesdkone").0, BTreeSet::new());
    assert_eq!(
        glance_search(&home, "task"),
        (
            set(&[
                &format!("cline/{c1}"),
                &format!("cline/{c3}"),
                &format!("cline/{s2}"),
                &format!("roo/{r1}"),
                &format!("roo/{r2}"),
                &format!("kilo/{k1}"),
            ]),
            true
        )
    );
}

/// A title changed in an older build's task list in VS Code's `state.vscdb` alone (the task
/// files untouched) shows through the mount within a second.
#[test]
fn a_title_changed_in_the_state_db_alone_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let hid = "0b5e6c1a-3333-4aaa-8bbb-000000000003";
    let meta = m.path().join(format!("roo/{hid}/meta.json"));
    assert!(stores::file_contains(
        &meta,
        "Hotel (state.vscdb): bump the version"
    ));
    let db = fx
        .home
        .path()
        .join(".config/Cursor/User/globalStorage/state.vscdb");
    let c = rusqlite::Connection::open(&db).expect("state.vscdb");
    let state = json!({"apiProvider": "anthropic", "customInstructions": SECRET,
        "taskHistory": [{"id": hid, "number": 1, "ts": 1_767_200_001_000_i64,
                         "task": "Hotel (state.vscdb): renamed in the list", "workspace": "/home/dev/hotel",
                         "tokensIn": 300, "tokensOut": 12, "totalCost": 0.0009}]});
    c.execute(
        "INSERT INTO ItemTable (key, value) VALUES (?1, ?2)",
        ("rooveterinaryinc.roo-cline", state.to_string()),
    )
    .expect("row");
    drop(c);
    stores::assert_within_a_second("renamed in state.vscdb", || {
        stores::file_contains(&meta, "Hotel (state.vscdb): renamed in the list")
    });
}
