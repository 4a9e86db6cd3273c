//! Native Gemini CLI and Copilot CLI stores for integration tests, laid out as the agents lay
//! them out, plus the record of what was written: the test oracle.
//!
//! Each hand-written session uses phrases found nowhere else, one line each, so `grep -F`
//! can tell which session holds a text. The record is written here, next to the bytes, and
//! never read back from the store or computed by sessfs.
//!
//! - Gemini: a JSONL chat in a slug project registered in `projects.json` (a message
//!   appended twice, `$set`, a `$rewindTo`, a subagent chat under `chats/<id>/`, a partial
//!   last line), a legacy `.json` chat in a sha256 project, and the two shape fixtures of
//!   `fixtures/shapes/gemini/`.
//! - Copilot: a `session-state/<id>/` session with `workspace.yaml` and a subagent, a flat
//!   `session-state/<id>.jsonl` ending in a garbage line, a `history-session-state` document,
//!   and the two shape fixtures of `fixtures/shapes/copilot/`.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const SHAPES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/shapes");

/// What was written for one session.
#[derive(Debug, Default)]
pub struct Written {
    /// `gemini` or `copilot`.
    pub agent: &'static str,
    /// The native id, which is also the directory name under `<mnt>/<agent>/`.
    pub id: String,
    /// Message texts (single lines) that must be found in this session and no other.
    pub texts: Vec<String>,
    /// Tool outputs that must be found under this session's `tools/` (or a nested
    /// subagent's `tools/`).
    pub tool_outputs: Vec<String>,
    /// Texts the store holds but that must appear nowhere (a message version replaced by id).
    pub gone: Vec<String>,
    /// The session's source holds damage that must cost a warning in `meta.json`.
    pub damaged: bool,
}

pub struct Stores {
    /// Every native file written.
    pub files: Vec<PathBuf>,
    pub sessions: Vec<Written>,
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn put(files: &mut Vec<PathBuf>, path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write native file");
    files.push(path.to_path_buf());
}

fn copy(files: &mut Vec<PathBuf>, shape: &str, dst: &Path) {
    let bytes = std::fs::read(Path::new(SHAPES).join(shape)).expect("shape fixture");
    put(files, dst, &bytes);
}

/// One JSON value per line, as `appendFileSync(JSON.stringify(record) + '\n')` writes them.
fn lines(values: &[Value]) -> String {
    values.iter().map(|v| format!("{v}\n")).collect()
}

pub fn write_stores(home: &Path) -> Stores {
    let mut files = Vec::new();
    let mut sessions = Vec::new();
    sessions.extend(write_gemini(home, &mut files));
    sessions.extend(write_copilot(home, &mut files));
    files.sort();
    Stores { files, sessions }
}

fn write_gemini(home: &Path, files: &mut Vec<PathBuf>) -> Vec<Written> {
    let gem = home.join(".gemini");
    let tmp = gem.join("tmp");
    let mut out = Vec::new();

    // --- A JSONL chat in a slug project --------------------------------------------------
    put(
        files,
        &gem.join("projects.json"),
        br#"{"projects":{"/home/dev/webapp":"webapp"}}"#,
    );
    put(
        files,
        &tmp.join("webapp/.project_root"),
        b"/home/dev/webapp",
    );
    let id = "4f1c2d3e-0000-4000-8000-00000000aaaa";
    let sub = "4f1c2d3e-5555-4555-8555-00000000ffff";
    let ts = |s: u32| format!("2026-05-01T10:00:{s:02}.000Z");
    let mut chat = lines(&[
        json!({"sessionId": id, "projectHash": "9f2b", "startTime": ts(0), "lastUpdated": ts(0), "kind": "main"}),
        json!({"id": "i1", "timestamp": ts(1), "type": "info", "content": "gemini-alpha notice: project indexed quietly"}),
        json!({"id": "u1", "timestamp": ts(2), "type": "user", "content": [{"text": "gemini-alpha prompt: rename the widget factory"}]}),
        json!({"id": "g1", "timestamp": ts(3), "type": "gemini", "content": "gemini-alpha draft reply that gets replaced",
               "toolCalls": [{"id": "call-a1", "name": "read_file", "args": {"file_path": "src/widget_factory.rs"}, "status": "executing", "timestamp": ts(3)}],
               "tokens": {"input": 900, "output": 10, "cached": 0, "total": 910}, "model": "gemini-2.5-pro"}),
        json!({"$set": {"lastUpdated": ts(3)}}),
        json!({"id": "g1", "timestamp": ts(3), "type": "gemini", "content": "gemini-alpha final reply: renamed in three files",
               "thoughts": [{"subject": "Planning the rename", "description": "gemini-alpha thought: check every call site", "timestamp": ts(3)}],
               "toolCalls": [
                   {"id": "call-a1", "name": "read_file", "args": {"file_path": "src/widget_factory.rs"}, "status": "success", "timestamp": ts(3),
                    "result": [{"functionResponse": {"id": "call-a1", "name": "read_file", "response": {"output": "gemini-alpha tool output: widget_factory.rs has 42 lines"}}}],
                    "resultDisplay": "Read 42 lines"},
                   {"id": "call-a3", "name": "codebase_investigator", "args": {"objective": "call sites"}, "status": "success", "timestamp": ts(3), "agentId": sub,
                    "result": [{"functionResponse": {"id": "call-a3", "name": "codebase_investigator", "response": {"output": "gemini-alpha investigator finished"}}}]}
               ],
               "tokens": {"input": 1000, "output": 50, "cached": 200, "thoughts": 7, "total": 1057}, "model": "gemini-2.5-pro"}),
        json!({"id": "u2", "timestamp": ts(4), "type": "user", "content": "gemini-alpha prompt: now undo that"}),
        json!({"id": "g2", "timestamp": ts(5), "type": "gemini", "content": "gemini-alpha reply later rewound away"}),
        json!({"$rewindTo": "u2"}),
        json!({"id": "u3", "timestamp": ts(6), "type": "user", "content": "gemini-alpha prompt after the rewind: keep the rename"}),
        json!({"id": "g3", "timestamp": ts(7), "type": "gemini", "content": "gemini-alpha reply: the shell refused",
               "toolCalls": [{"id": "call-a2", "name": "run_shell_command", "args": {"command": "cargo fmt"}, "status": "error", "timestamp": ts(7),
                              "result": [{"functionResponse": {"id": "call-a2", "name": "run_shell_command", "response": {"error": "gemini-alpha tool error: permission denied"}}}]}]}),
        json!({"id": "w1", "timestamp": ts(8), "type": "warning", "content": "gemini-alpha warning: quota nearly used"}),
        json!({"$set": {"summary": "Gemini alpha: rename the widget factory", "lastUpdated": ts(8)}}),
    ]);
    // The agent was writing the next record.
    chat.push_str(r#"{"id":"g4","timestamp":"2026-05-01T10:00:09.000Z","type":"gem"#);
    let chats = tmp.join("webapp/chats");
    put(
        files,
        &chats.join("session-2026-05-01T10-00-4f1c2d3e.jsonl"),
        chat.as_bytes(),
    );
    let subchat = lines(&[
        json!({"sessionId": sub, "projectHash": "9f2b", "startTime": ts(3), "lastUpdated": ts(3), "kind": "subagent"}),
        json!({"id": "x1", "timestamp": ts(3), "type": "user", "content": "gemini-alpha subagent task: list the call sites"}),
        json!({"id": "x2", "timestamp": ts(3), "type": "gemini", "content": "gemini-alpha subagent reply: seven call sites found",
               "toolCalls": [{"id": "call-x1", "name": "grep_search", "args": {"pattern": "WidgetFactory"}, "status": "success",
                              "result": [{"functionResponse": {"id": "call-x1", "name": "grep_search", "response": {"output": "gemini-alpha subagent tool output: 7 call sites"}}}]}]}),
    ]);
    put(
        files,
        &chats.join(id).join(format!("{sub}.jsonl")),
        subchat.as_bytes(),
    );
    out.push(Written {
        agent: "gemini",
        id: id.into(),
        texts: s(&[
            "gemini-alpha notice: project indexed quietly",
            "gemini-alpha prompt: rename the widget factory",
            "gemini-alpha final reply: renamed in three files",
            "gemini-alpha thought: check every call site",
            "gemini-alpha prompt: now undo that",
            "gemini-alpha reply later rewound away",
            "gemini-alpha prompt after the rewind: keep the rename",
            "gemini-alpha reply: the shell refused",
            "gemini-alpha warning: quota nearly used",
            "Gemini alpha: rename the widget factory",
            "gemini-alpha subagent task: list the call sites",
            "gemini-alpha subagent reply: seven call sites found",
        ]),
        tool_outputs: s(&[
            "gemini-alpha tool output: widget_factory.rs has 42 lines",
            "gemini-alpha investigator finished",
            "gemini-alpha tool error: permission denied",
            "gemini-alpha subagent tool output: 7 call sites",
        ]),
        gone: s(&["gemini-alpha draft reply that gets replaced"]),
        damaged: true,
    });

    // --- A legacy JSON chat in a sha256 project ------------------------------------------
    let id = "5b6c7d8e-1111-4111-8111-bbbbbbbbbbbb";
    let hash = "3e1d6f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e";
    let doc = json!({
        "sessionId": id, "projectHash": hash, "startTime": "2026-03-01T09:00:00.000Z",
        "lastUpdated": "2026-03-01T09:01:00.000Z", "kind": "main",
        "messages": [
            {"id": "m1", "timestamp": "2026-03-01T09:00:01.000Z", "type": "user", "content": [{"text": "gemini-beta legacy prompt: summarise the changelog"}]},
            {"id": "m2", "timestamp": "2026-03-01T09:00:30.000Z", "type": "gemini", "content": "gemini-beta legacy reply: three releases",
             "toolCalls": [{"id": "call-b1", "name": "read_file", "args": {"file_path": "CHANGELOG.md"}, "status": "success",
                            "resultDisplay": "gemini-beta tool output: CHANGELOG.md read"}],
             "tokens": {"input": 300, "output": 20, "cached": 0, "total": 320}, "model": "gemini-2.5-flash"}
        ]
    });
    put(
        files,
        &tmp.join(hash)
            .join("chats/session-2026-03-01T09-00-5b6c7d8e.json"),
        serde_json::to_string_pretty(&doc).expect("json").as_bytes(),
    );
    out.push(Written {
        agent: "gemini",
        id: id.into(),
        texts: s(&[
            "gemini-beta legacy prompt: summarise the changelog",
            "gemini-beta legacy reply: three releases",
        ]),
        tool_outputs: s(&["gemini-beta tool output: CHANGELOG.md read"]),
        ..Written::default()
    });

    // --- The shape fixtures ----------------------------------------------------------------
    copy(
        files,
        "gemini/chat.jsonl",
        &tmp.join("bellbot/chats/session-2026-04-20T09-00-3c9d2e1f.jsonl"),
    );
    out.push(Written {
        agent: "gemini",
        id: "3c9d2e1f-7a6b-4c5d-9e8f-0a1b2c3d4e5f".into(),
        texts: s(&[
            "System: Please continue.",
            "small change: say that every command runs through uv run",
        ]),
        tool_outputs: s(&["A small chat bot that rings a bell."]),
        ..Written::default()
    });
    copy(
        files,
        "gemini/legacy.json",
        &tmp.join("c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3/chats/session-2026-03-28T11-00-7e8f9a0b.json"),
    );
    out.push(Written {
        agent: "gemini",
        id: "7e8f9a0b-1c2d-4e3f-8a4b-5c6d7e8f9a0b".into(),
        texts: s(&[
            "split the user docs from the contributor docs in README.md",
            "Done: the READMEs are for users now, and CONTRIBUTING.md holds the build steps.",
        ]),
        tool_outputs: s(&["Successfully created CONTRIBUTING.md."]),
        ..Written::default()
    });
    out
}

/// Events as the CLI appends them: `parentId` links each to the one before.
struct EventLog {
    text: String,
    last: Option<String>,
    n: u32,
}

impl EventLog {
    fn new() -> EventLog {
        EventLog {
            text: String::new(),
            last: None,
            n: 0,
        }
    }

    fn push(&mut self, ty: &str, data: Value, agent: Option<&str>) {
        self.n += 1;
        let id = format!("00000000-0000-4000-9000-{:012}", self.n);
        let mut ev = json!({
            "type": ty, "data": data, "id": id,
            "timestamp": format!("2026-05-02T08:{:02}:{:02}.000Z", self.n / 60, self.n % 60),
            "parentId": self.last,
        });
        if let Some(a) = agent {
            ev["agentId"] = json!(a);
        }
        self.text.push_str(&format!("{ev}\n"));
        self.last = Some(id);
    }
}

fn write_copilot(home: &Path, files: &mut Vec<PathBuf>) -> Vec<Written> {
    let root = home.join(".copilot");
    let mut out = Vec::new();

    // --- session-state/<id>/ with workspace.yaml and a subagent ---------------------------
    let id = "7d8e9f00-2222-4222-8222-cccccccccccc";
    let mut log = EventLog::new();
    log.push(
        "session.start",
        json!({"sessionId": id, "version": 1, "producer": "copilot-agent", "copilotVersion": "1.0.40",
               "startTime": "2026-05-02T08:00:00.000Z", "selectedModel": "gpt-5",
               "context": {"cwd": "/home/dev/api", "repository": "acme/api", "branch": "main"}}),
        None,
    );
    log.push(
        "system.message",
        json!({"role": "system", "content": "copilot-alpha system prompt: you are a terminal assistant"}),
        None,
    );
    log.push(
        "user.message",
        json!({"content": "copilot-alpha prompt: fix the flaky test", "transformedContent": "<current_datetime>x</current_datetime>\ncopilot-alpha prompt: fix the flaky test", "attachments": [], "interactionId": "i-1"}),
        None,
    );
    log.push(
        "assistant.turn_start",
        json!({"turnId": "0", "interactionId": "i-1"}),
        None,
    );
    log.push(
        "assistant.message",
        json!({"messageId": "m-1", "content": "copilot-alpha reply: running the test first",
               "reasoningText": "copilot-alpha reasoning: the test races the clock",
               "toolRequests": [
                   {"toolCallId": "t-a1", "name": "bash", "arguments": {"command": "cargo test flaky"}, "type": "function"},
                   {"toolCallId": "t-a2", "name": "task", "arguments": {"agent_type": "explore", "prompt": "find it"}, "type": "function"}
               ], "interactionId": "i-1", "requestId": "r-1", "outputTokens": 40}),
        None,
    );
    log.push(
        "tool.execution_start",
        json!({"toolCallId": "t-a1", "toolName": "bash", "arguments": {"command": "cargo test flaky"}}),
        None,
    );
    log.push(
        "tool.execution_complete",
        json!({"toolCallId": "t-a1", "success": true, "model": "gpt-5", "result": {"content": "copilot-alpha tool output: 1 failed, 41 passed"}}),
        None,
    );
    log.push(
        "subagent.started",
        json!({"toolCallId": "t-a2", "agentName": "explore", "agentDisplayName": "Explore", "agentDescription": "Fast exploration"}),
        None,
    );
    let agent = Some("explore-1");
    log.push(
        "user.message",
        json!({"content": "copilot-alpha subagent prompt: find the flaky test", "parentToolCallId": "t-a2"}),
        agent,
    );
    log.push(
        "assistant.message",
        json!({"messageId": "m-s1", "content": "copilot-alpha subagent reply: it is tests/clock.rs", "parentToolCallId": "t-a2",
               "toolRequests": [{"toolCallId": "s-1", "name": "grep", "arguments": {"pattern": "flaky"}}]}),
        agent,
    );
    log.push(
        "tool.execution_complete",
        json!({"toolCallId": "s-1", "success": true, "parentToolCallId": "t-a2", "result": {"content": "copilot-alpha subagent tool output: tests/clock.rs:12"}}),
        agent,
    );
    log.push(
        "subagent.completed",
        json!({"toolCallId": "t-a2", "agentName": "explore"}),
        None,
    );
    log.push(
        "tool.execution_complete",
        json!({"toolCallId": "t-a2", "success": true, "result": {"content": "copilot-alpha task output: found tests/clock.rs"}}),
        None,
    );
    log.push(
        "assistant.message",
        json!({"messageId": "m-2", "content": "copilot-alpha second reply: editing the test",
               "toolRequests": [{"toolCallId": "t-a3", "name": "edit", "arguments": {"path": "tests/clock.rs"}}]}),
        None,
    );
    log.push(
        "tool.execution_complete",
        json!({"toolCallId": "t-a3", "success": false, "error": {"message": "copilot-alpha tool error: file is read-only", "code": "EACCES"}}),
        None,
    );
    log.push(
        "session.compaction_complete",
        json!({"success": true, "summaryContent": "copilot-alpha compaction summary: we chased the clock test"}),
        None,
    );
    log.push(
        "assistant.message",
        json!({"messageId": "m-3", "content": "copilot-alpha final reply: fixed by freezing time"}),
        None,
    );
    log.push("assistant.turn_end", json!({"turnId": "0"}), None);
    log.push(
        "session.shutdown",
        json!({"shutdownType": "routine", "totalPremiumRequests": 1,
               "modelMetrics": {"gpt-5": {"requests": {"count": 3, "cost": 1},
                                          "usage": {"inputTokens": 5000, "outputTokens": 300, "cacheReadTokens": 1000, "cacheWriteTokens": 0, "reasoningTokens": 20}}}}),
        None,
    );
    let dir = root.join("session-state").join(id);
    put(files, &dir.join("events.jsonl"), log.text.as_bytes());
    put(
        files,
        &dir.join("workspace.yaml"),
        format!(
            "id: {id}\ncwd: /home/dev/api\ngit_root: /home/dev/api\nrepository: acme/api\nbranch: main\nsummary: Copilot alpha fixes the flaky clock test\ncreated_at: 2026-05-02T08:00:00.000Z\nupdated_at: 2026-05-02T08:10:00.000Z\n"
        )
        .as_bytes(),
    );
    out.push(Written {
        agent: "copilot",
        id: id.into(),
        texts: s(&[
            "copilot-alpha system prompt: you are a terminal assistant",
            "copilot-alpha prompt: fix the flaky test",
            "copilot-alpha reply: running the test first",
            "copilot-alpha reasoning: the test races the clock",
            "copilot-alpha subagent prompt: find the flaky test",
            "copilot-alpha subagent reply: it is tests/clock.rs",
            "copilot-alpha second reply: editing the test",
            "copilot-alpha compaction summary: we chased the clock test",
            "copilot-alpha final reply: fixed by freezing time",
            "Copilot alpha fixes the flaky clock test",
        ]),
        tool_outputs: s(&[
            "copilot-alpha tool output: 1 failed, 41 passed",
            "copilot-alpha subagent tool output: tests/clock.rs:12",
            "copilot-alpha task output: found tests/clock.rs",
            "copilot-alpha tool error: file is read-only",
        ]),
        ..Written::default()
    });

    // --- flat session-state/<id>.jsonl, ending in garbage ---------------------------------
    let id = "8e9f0011-3333-4333-8333-dddddddddddd";
    let mut log = EventLog::new();
    log.push(
        "session.start",
        json!({"sessionId": id, "version": 1, "producer": "copilot-agent", "copilotVersion": "0.0.350", "startTime": "2026-01-10T12:00:00.000Z", "context": {"cwd": "/home/dev/notes"}}),
        None,
    );
    log.push(
        "user.message",
        json!({"content": "copilot-beta prompt: list the todo items"}),
        None,
    );
    log.push(
        "assistant.message",
        json!({"messageId": "b-1", "content": "copilot-beta reply: two todos",
               "toolRequests": [{"toolCallId": "t-b1", "name": "grep", "arguments": {"pattern": "TODO"}}]}),
        None,
    );
    log.push(
        "tool.execution_complete",
        json!({"toolCallId": "t-b1", "success": true, "result": {"content": "copilot-beta tool output: TODO(parser), TODO(cache)"}}),
        None,
    );
    let mut text = log.text;
    text.push_str("this line is not an event\n");
    put(
        files,
        &root.join("session-state").join(format!("{id}.jsonl")),
        text.as_bytes(),
    );
    out.push(Written {
        agent: "copilot",
        id: id.into(),
        texts: s(&[
            "copilot-beta prompt: list the todo items",
            "copilot-beta reply: two todos",
        ]),
        tool_outputs: s(&["copilot-beta tool output: TODO(parser), TODO(cache)"]),
        damaged: true,
        ..Written::default()
    });

    // --- history-session-state/session_<id>_<ms>.json --------------------------------------
    let id = "9f001122-4444-4444-8444-eeeeeeeeeeee";
    let doc = json!({
        "sessionId": id, "startTime": "2025-09-20T07:00:00.000Z", "chatMessages": [],
        "timeline": [
            {"id": "h1", "timestamp": "2025-09-20T07:00:01.000Z", "type": "info", "text": "copilot-gamma info: connected to the MCP server"},
            {"id": "h2", "timestamp": "2025-09-20T07:00:02.000Z", "type": "user", "text": "copilot-gamma prompt: bump the version"},
            {"id": "h3", "timestamp": "2025-09-20T07:00:03.000Z", "type": "copilot", "text": "copilot-gamma reply: bumping to 0.2.0"},
            {"id": "h4", "timestamp": "2025-09-20T07:00:04.000Z", "type": "tool_call_completed", "callId": "toolu_g1", "name": "str_replace_editor",
             "toolTitle": "str_replace_editor", "intentionSummary": "edit Cargo.toml", "arguments": {"command": "str_replace", "path": "Cargo.toml"},
             "result": {"type": "success", "log": "copilot-gamma tool output: version = 0.2.0"}}
        ]
    });
    put(
        files,
        &root
            .join("history-session-state")
            .join(format!("session_{id}_1758351600000.json")),
        serde_json::to_string(&doc).expect("json").as_bytes(),
    );
    out.push(Written {
        agent: "copilot",
        id: id.into(),
        texts: s(&[
            "copilot-gamma info: connected to the MCP server",
            "copilot-gamma prompt: bump the version",
            "copilot-gamma reply: bumping to 0.2.0",
        ]),
        tool_outputs: s(&["copilot-gamma tool output: version = 0.2.0"]),
        ..Written::default()
    });

    // --- The shape fixtures ----------------------------------------------------------------
    let id = "6b7c8d9e-0f1a-4b2c-8d3e-4f5a6b7c8d9e";
    copy(
        files,
        "copilot/events.jsonl",
        &root.join("session-state").join(id).join("events.jsonl"),
    );
    out.push(Written {
        agent: "copilot",
        id: id.into(),
        texts: s(&[
            "do not change any code: find out which documentation site generator would suit this Rust crate",
            "Use rustdoc for the API and mdBook for guides, published by one Pages workflow.",
        ]),
        tool_outputs: s(&["Intent logged", "rustdoc and mdBook are the usual choices."]),
        ..Written::default()
    });
    let id = "2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a";
    copy(
        files,
        "copilot/history.json",
        &root
            .join("history-session-state")
            .join(format!("session_{id}_1760259600000.json")),
    );
    out.push(Written {
        agent: "copilot",
        id: id.into(),
        texts: s(&[
            "Connected to the lamp MCP server",
            "rename the project from Tiny Lamp to Small Lamp in the docs and the manifest",
        ]),
        tool_outputs: s(&["Created file /home/dev/lamp/CHANGELOG.md"]),
        ..Written::default()
    });
    out
}
