//! A Codex CLI store for integration tests, laid out the way Codex lays it out:
//! `.codex/sessions/YYYY/MM/DD/rollout-<local ts>-<thread id>.jsonl`, a `.jsonl.zst` written
//! by the compression worker, `archived_sessions/`, `session_index.jsonl`, a fork (which
//! copies its parent's items, `token_count` included, and continues its counter) and a
//! subagent spawned by a thread.
//!
//! The writer returns what it wrote — message texts, tool outputs, token totals — as the
//! test oracle: every expectation comes from here, never from sessfs' parser.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const SHAPES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/shapes/codex");

/// What one thread's rollout holds, as written.
#[derive(Clone, Debug, Default)]
pub struct Thread {
    pub id: String,
    /// The top-level session directory expected to hold this thread's texts (a subagent's
    /// texts live in its parent's directory, under `subagents/`).
    pub holder: String,
    /// Message texts only this thread wrote.
    pub texts: Vec<String>,
    /// Texts copied from a fork's parent: found in the parent and in the fork.
    pub inherited: Vec<String>,
    /// Tool outputs (one line each), expected under [`Thread::tools`].
    pub outputs: Vec<String>,
    /// Where the outputs are, relative to the mount: `codex/<holder>/tools`, or for a
    /// subagent `codex/<parent>/subagents/<nickname>/tools`.
    pub tools: String,
    pub title: Option<String>,
    /// The thread's own tokens as `(input without cache, cached, output without reasoning,
    /// reasoning)`, from the last cumulative total written (minus a fork's copied total).
    pub tokens: Option<(u64, u64, u64, u64)>,
    pub forked_from: Option<String>,
    pub subagent_of: Option<String>,
}

/// The store written, and the oracle.
pub struct Written {
    pub files: Vec<PathBuf>,
    pub threads: Vec<Thread>,
}

impl Written {
    pub fn thread(&self, id: &str) -> &Thread {
        self.threads
            .iter()
            .find(|t| t.id == id)
            .unwrap_or_else(|| panic!("no thread {id}"))
    }
}

pub const MAIN: &str = "019a0000-0000-7000-8000-000000000001";
pub const FORK: &str = "019a0000-0000-7000-8000-000000000002";
pub const CHILD: &str = "019a0000-0000-7000-8000-000000000003";
pub const ZST: &str = "019a0000-0000-7000-8000-000000000004";
pub const ARCHIVED: &str = "019a0000-0000-7000-8000-000000000005";
/// The `codex exec` shape rollout, `fixtures/shapes/codex/exec_crud.jsonl`.
pub const EXEC_CRUD: &str = "019bf700-1a2b-7c3d-8e4f-5a6b7c8d9e0f";

/// Lines of one rollout, with the oracle kept beside them.
struct Rollout {
    lines: Vec<Value>,
    t: Thread,
    /// The last cumulative total written: (input, cached, output, reasoning).
    total: (u64, u64, u64, u64),
    clock: u32,
}

impl Rollout {
    fn new(id: &str, extra_meta: Value) -> Rollout {
        let mut payload = json!({
            "id": id, "timestamp": "2026-04-02T09:15:00.000Z", "cwd": "/home/dev/widgets",
            "originator": "codex_cli_rs", "cli_version": "0.120.0", "source": "cli",
            "model_provider": "openai",
            "base_instructions": {"text": "You are Codex, based on GPT-5."},
            "git": {"commit_hash": "0123456789abcdef", "branch": "main"}
        });
        if let (Some(p), Some(e)) = (payload.as_object_mut(), extra_meta.as_object()) {
            p.extend(e.clone());
        }
        let mut r = Rollout {
            lines: Vec::new(),
            t: Thread {
                id: id.to_string(),
                holder: id.to_string(),
                tools: format!("codex/{id}/tools"),
                ..Thread::default()
            },
            total: (0, 0, 0, 0),
            clock: 0,
        };
        r.push("session_meta", payload);
        r
    }

    fn ts(&mut self) -> String {
        self.clock += 1;
        format!(
            "2026-04-02T09:{:02}:{:02}.000Z",
            15 + self.clock / 60,
            self.clock % 60
        )
    }

    fn push(&mut self, kind: &str, payload: Value) {
        let ts = self.ts();
        self.lines
            .push(json!({"timestamp": ts, "type": kind, "payload": payload}));
    }

    fn context(&mut self) {
        self.push(
            "response_item",
            json!({"type": "message", "role": "developer", "content": [{"type": "input_text",
                "text": "<permissions instructions>Sandbox: workspace-write.</permissions instructions>"}]}),
        );
        self.push(
            "response_item",
            json!({"type": "message", "role": "user", "content": [{"type": "input_text",
                "text": "# AGENTS.md instructions for /home/dev/widgets\n\n<INSTRUCTIONS>\nUse tabs.\n</INSTRUCTIONS>"}]}),
        );
        self.push(
            "response_item",
            json!({"type": "message", "role": "user", "content": [{"type": "input_text",
                "text": "<environment_context>\n  <cwd>/home/dev/widgets</cwd>\n  <shell>bash</shell>\n</environment_context>"}]}),
        );
    }

    fn turn(&mut self, model: &str) {
        self.push(
            "turn_context",
            json!({"cwd": "/home/dev/widgets", "approval_policy": "on-request",
                "sandbox_policy": {"type": "workspace-write"}, "model": model, "effort": "medium",
                "summary": "auto"}),
        );
    }

    /// A prompt, written twice as Codex does: the model-visible item and the UI event.
    fn prompt(&mut self, text: &str) {
        self.push(
            "response_item",
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}),
        );
        self.push(
            "event_msg",
            json!({"type": "user_message", "message": text, "images": [], "local_images": [], "text_elements": []}),
        );
        self.t.texts.push(text.to_string());
    }

    fn reasoning(&mut self, summary: &str) {
        self.push(
            "event_msg",
            json!({"type": "agent_reasoning", "text": summary}),
        );
        self.push(
            "response_item",
            json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}],
                "content": null, "encrypted_content": "gAAAAABsealed"}),
        );
        self.t.texts.push(summary.to_string());
    }

    fn reply(&mut self, text: &str) {
        self.push(
            "event_msg",
            json!({"type": "agent_message", "message": text}),
        );
        self.push(
            "response_item",
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}], "phase": "final_answer"}),
        );
        self.t.texts.push(text.to_string());
    }

    fn shell(&mut self, call_id: &str, cmd: &str, output: &str) {
        let args = json!({"cmd": cmd, "workdir": "/home/dev/widgets"}).to_string();
        self.push(
            "response_item",
            json!({"type": "function_call", "name": "exec_command", "arguments": args, "call_id": call_id}),
        );
        self.push(
            "response_item",
            json!({"type": "function_call_output", "call_id": call_id,
                "output": format!("Chunk ID: 1a2b3c\nWall time: 0.0510 seconds\nProcess exited with code 0\nOriginal token count: 9\nOutput:\n{output}\n")}),
        );
        self.t.outputs.push(output.to_string());
    }

    fn patch(&mut self, call_id: &str, file: &str, added: &str) {
        let patch = format!("*** Begin Patch\n*** Add File: {file}\n+{added}\n*** End Patch\n");
        self.push(
            "response_item",
            json!({"type": "custom_tool_call", "status": "completed", "call_id": call_id, "name": "apply_patch", "input": patch}),
        );
        let result = format!("Success. Updated the following files:\nA {file}\n");
        let out = json!({"output": result, "metadata": {"exit_code": 0, "duration_seconds": 0.0}});
        self.push(
            "response_item",
            json!({"type": "custom_tool_call_output", "call_id": call_id, "output": out.to_string()}),
        );
        self.t.outputs.push(format!("A {file}"));
        self.t.outputs.push(format!("+{added}"));
    }

    /// One model call's usage; the line carries the new cumulative total, as Codex writes it.
    fn tokens(&mut self, input: u64, cached: u64, output: u64, reasoning: u64) {
        let t = &mut self.total;
        *t = (t.0 + input, t.1 + cached, t.2 + output, t.3 + reasoning);
        let (i, c, o, r) = *t;
        self.push(
            "event_msg",
            json!({"type": "token_count", "info": {
                "total_token_usage": {"input_tokens": i, "cached_input_tokens": c, "output_tokens": o, "reasoning_output_tokens": r, "total_tokens": i + o},
                "last_token_usage": {"input_tokens": input, "cached_input_tokens": cached, "output_tokens": output, "reasoning_output_tokens": reasoning, "total_tokens": input + output},
                "model_context_window": 272000}, "rate_limits": null}),
        );
    }

    /// Expected own tokens: the last total written, minus `base` (a fork's copied total).
    fn close(mut self, base: (u64, u64, u64, u64)) -> (Vec<Value>, Thread) {
        let (i, c, o, r) = self.total;
        let (i, c, o, r) = (i - base.0, c - base.1, o - base.2, r - base.3);
        self.t.tokens = Some((i - c, c, o - r, r));
        (self.lines, self.t)
    }
}

fn to_text(lines: &[Value]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn write(path: &Path, bytes: &[u8], files: &mut Vec<PathBuf>) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write rollout");
    files.push(path.to_path_buf());
}

fn day(home: &Path, ymd: &str) -> PathBuf {
    home.join(".codex/sessions").join(ymd)
}

fn rollout_name(local_ts: &str, id: &str) -> String {
    format!("rollout-{local_ts}-{id}.jsonl")
}

/// Write the store under `home` and return it with the oracle.
pub fn write_store(home: &Path) -> Written {
    let mut files = Vec::new();
    let mut threads = Vec::new();

    // The parent: context, two turns, tools, reasoning.
    let mut main = Rollout::new(MAIN, json!({}));
    main.context();
    main.turn("gpt-5.1-codex");
    main.prompt("Rename the widget factory to WidgetForge across the crate");
    main.reasoning("**Scanning for factory call sites**");
    main.shell(
        "call_main_1",
        "rg -n WidgetFactory",
        "src/lib.rs:12: pub struct WidgetFactory;",
    );
    main.tokens(8200, 6100, 140, 64);
    main.patch(
        "call_main_2",
        "src/forge.rs",
        "pub struct WidgetForge; // renamed by codex",
    );
    main.tokens(9100, 8000, 90, 0);
    main.reply("Renamed WidgetFactory to WidgetForge in three files.");
    main.tokens(9400, 9000, 40, 0);
    // The fork copies everything up to here.
    let fork_point = main.lines.len();
    let fork_total = main.total;
    let copied_texts = main.t.texts.clone();
    main.prompt("Now add a doc comment on WidgetForge explaining the pattern");
    main.turn("gpt-5.1-codex");
    main.reply("Added a doc comment describing the forge pattern.");
    main.tokens(9900, 9300, 60, 12);
    let copied: Vec<Value> = main.lines[..fork_point].to_vec();
    let (main_lines, main_t) = main.close((0, 0, 0, 0));
    let main_path = day(home, "2026/04/02").join(rollout_name("2026-04-02T11-15-00", MAIN));
    write(&main_path, to_text(&main_lines).as_bytes(), &mut files);
    threads.push(Thread {
        title: Some("Widget forge rename".into()),
        ..main_t
    });

    // The fork: its own meta, the copied items (token_count included), then its own turn,
    // whose totals continue the parent's.
    let mut fork = Rollout::new(FORK, json!({"forked_from_id": MAIN}));
    fork.lines.extend(copied);
    fork.total = fork_total;
    fork.turn("gpt-5.1-codex");
    fork.prompt("Instead, keep the old name as a deprecated alias");
    fork.reply("Kept WidgetFactory as a deprecated type alias of WidgetForge.");
    fork.tokens(9600, 9200, 70, 20);
    let (fork_lines, mut fork_t) = fork.close(fork_total);
    fork_t.inherited = copied_texts;
    fork_t.forked_from = Some(MAIN.into());
    let fork_path = day(home, "2026/04/02").join(rollout_name("2026-04-02T11-40-00", FORK));
    write(&fork_path, to_text(&fork_lines).as_bytes(), &mut files);
    threads.push(fork_t);

    // A subagent the parent spawned.
    let source = json!({"subagent": {"thread_spawn": {"parent_thread_id": MAIN, "depth": 1,
        "agent_path": null, "agent_nickname": "Euclid", "agent_role": "explorer"}}});
    let mut child = Rollout::new(
        CHILD,
        json!({"source": source, "thread_source": "subagent", "agent_nickname": "Euclid", "agent_role": "explorer"}),
    );
    child.turn("gpt-5.1-codex-mini");
    child.prompt("List every file that mentions WidgetFactory");
    child.shell(
        "call_child_1",
        "rg -l WidgetFactory",
        "src/widgets/registry.rs",
    );
    child.reply("Three files mention WidgetFactory: lib.rs, forge.rs, registry.rs.");
    child.tokens(3000, 1000, 50, 10);
    let (child_lines, mut child_t) = child.close((0, 0, 0, 0));
    child_t.holder = MAIN.into();
    child_t.tools = format!("codex/{MAIN}/subagents/Euclid/tools");
    child_t.subagent_of = Some(MAIN.into());
    let child_path = day(home, "2026/04/02").join(rollout_name("2026-04-02T11-20-00", CHILD));
    write(&child_path, to_text(&child_lines).as_bytes(), &mut files);
    threads.push(child_t);

    // A rollout compressed by the idle worker.
    let mut z = Rollout::new(ZST, json!({}));
    z.turn("gpt-5-codex");
    z.prompt("Why is the zstd rollout still readable after compression");
    z.reply("Because the reader decompresses zstd frames as it streams.");
    z.tokens(1200, 0, 30, 0);
    let (z_lines, z_t) = z.close((0, 0, 0, 0));
    let bytes = zstd::encode_all(to_text(&z_lines).as_bytes(), 3).expect("zstd");
    let zst_path =
        day(home, "2026/03/20").join(format!("{}.zst", rollout_name("2026-03-20T08-00-00", ZST)));
    write(&zst_path, &bytes, &mut files);
    threads.push(z_t);

    // An archived thread.
    let mut a = Rollout::new(ARCHIVED, json!({}));
    a.turn("gpt-5-codex");
    a.prompt("An archived question about cargo workspaces");
    a.reply("An archived answer: use workspace inheritance.");
    a.tokens(700, 0, 20, 0);
    let (a_lines, a_t) = a.close((0, 0, 0, 0));
    let archived = home
        .join(".codex/archived_sessions")
        .join(rollout_name("2026-02-11T16-30-00", ARCHIVED));
    write(&archived, to_text(&a_lines).as_bytes(), &mut files);
    threads.push(a_t);

    // The `codex exec` shape rollout, in the place Codex would have written it.
    let shape = Path::new(SHAPES).join("exec_crud.jsonl");
    let shape_path = day(home, "2026/01/27").join(rollout_name("2026-01-27T10-00-00", EXEC_CRUD));
    write(
        &shape_path,
        &std::fs::read(&shape).expect("read shape fixture"),
        &mut files,
    );
    threads.push(Thread {
        id: EXEC_CRUD.into(),
        holder: EXEC_CRUD.into(),
        tools: format!("codex/{EXEC_CRUD}/tools"),
        // As written in the fixture.
        texts: vec![
            "write PUN.md with one pun and a footer line, show it, change the footer, then remove the file.".into(),
            "Wrote `PUN.md`, showed it, changed the footer to a second draft, and removed the file.".into(),
        ],
        outputs: vec!["I used to be a baker, but I could not make enough dough.".into()],
        // Last total_token_usage: input 42500 (cached 39800), output 275 (reasoning 64).
        tokens: Some((42500 - 39800, 39800, 275 - 64, 64)),
        ..Thread::default()
    });

    // Titles: an older name and a newer one for the parent; the newest line wins.
    let index = home.join(".codex/session_index.jsonl");
    let idx = [
        json!({"id": MAIN, "thread_name": "Widget rename (draft)", "updated_at": "2026-04-02T09:20:00Z"}),
        json!({"id": MAIN, "thread_name": "Widget forge rename", "updated_at": "2026-04-02T09:30:00Z"}),
    ];
    write(&index, to_text(&idx).as_bytes(), &mut files);
    // Codex's typed-prompt history: not a transcript.
    let history = home.join(".codex/history.jsonl");
    write(
        &history,
        b"{\"session_id\":\"019a0000-0000-7000-8000-000000000001\",\"ts\":1775121300,\"text\":\"history only\"}\n",
        &mut files,
    );

    Written { files, threads }
}
