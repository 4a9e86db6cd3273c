//! Qwen Code chats, written here the way Qwen Code's `ChatRecordingService` writes them
//! (shapes taken from real `~/.qwen/projects/<cwd>/chats/<id>.jsonl` files and from Qwen
//! Code's source), rendered with `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below ([`Chat`]), never from sessfs' parser.

mod common;

use common::stores::{self, meta, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A string that looks like a credential, planted in the files Qwen Code keeps beside its
/// chats.
const SECRET: &str = "sk-PLANTEDqwenSECRETdoNotRead000000000000";

/// What the writer put in one chat, for the checks.
#[derive(Default)]
struct Chat {
    /// `qwen/<id>`.
    dir: String,
    path: PathBuf,
    /// Lines that must be in this session's files and no other session's.
    lines: Vec<String>,
    /// Tool outputs: must be under this session's `tools/`.
    outputs: Vec<String>,
    /// Expected usage of the main conversation: uncached input, output (reasoning out),
    /// reasoning, cache reads.
    usage: (u64, u64, u64, u64),
    /// The same, of the subagents' calls (nested under the session).
    sub_usage: (u64, u64, u64, u64),
    cwd: String,
    records: Vec<Value>,
}

impl Chat {
    fn new(id: &str, cwd: &str, path: PathBuf) -> Chat {
        Chat {
            dir: format!("qwen/{id}"),
            path,
            cwd: cwd.to_string(),
            ..Chat::default()
        }
    }

    fn id(&self) -> &str {
        self.dir.trim_start_matches("qwen/")
    }

    fn rec(&mut self, ty: &str, minute: u32, extra: Value) {
        let n = self.records.len();
        let mut r = json!({
            "uuid": format!("{}-{n:03}", self.id()),
            "parentUuid": n.checked_sub(1).map(|p| format!("{}-{p:03}", self.id())),
            "sessionId": self.id(),
            "timestamp": format!("2026-04-07T02:{minute:02}:{:02}.000Z", n % 60),
            "type": ty,
            "cwd": self.cwd,
            "version": "0.14.0",
        });
        if let (Some(o), Value::Object(e)) = (r.as_object_mut(), extra) {
            o.extend(e);
        }
        self.records.push(r);
    }

    fn user(&mut self, minute: u32, text: &str) {
        self.rec(
            "user",
            minute,
            json!({"message": {"role": "user", "parts": [{"text": text}]}}),
        );
        self.lines.push(text.to_string());
    }

    /// One API reply: its telemetry record, then the assistant record repeating its
    /// counts. `calls` are `(id, name, args)`. Reasoning is inside `out`, as an
    /// OpenAI-compatible provider counts it.
    #[allow(clippy::too_many_arguments)]
    fn reply(
        &mut self,
        minute: u32,
        thought: &str,
        text: &str,
        calls: &[(&str, &str, Value)],
        prompt: u64,
        cached: u64,
        out: u64,
        thoughts: u64,
    ) {
        self.api_response(
            minute,
            &format!("{}########0", self.id()),
            prompt,
            cached,
            out,
            thoughts,
        );
        let mut parts = vec![
            json!({"text": thought, "thought": true}),
            json!({"text": text}),
        ];
        for (id, name, args) in calls {
            parts.push(json!({"functionCall": {"id": id, "name": name, "args": args}}));
        }
        self.rec(
            "assistant",
            minute,
            json!({"model": "coder-model", "message": {"role": "model", "parts": parts},
                   "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": out,
                   "thoughtsTokenCount": thoughts, "totalTokenCount": prompt + out,
                   "cachedContentTokenCount": cached}}),
        );
        self.lines.push(thought.to_string());
        self.lines.push(text.to_string());
    }

    /// An `api_response` telemetry record, counted once by the expectation.
    fn api_response(
        &mut self,
        minute: u32,
        prompt_id: &str,
        prompt: u64,
        cached: u64,
        out: u64,
        thoughts: u64,
    ) {
        self.rec(
            "system",
            minute,
            json!({"subtype": "ui_telemetry", "systemPayload": {"uiEvent": {
                "event.name": "qwen-code.api_response", "model": "coder-model",
                "response_id": format!("chatcmpl-{}-{}", self.id(), self.records.len()),
                "status_code": 200, "duration_ms": 900, "input_token_count": prompt,
                "output_token_count": out, "cached_content_token_count": cached,
                "thoughts_token_count": thoughts, "tool_token_count": 0,
                "total_token_count": prompt + out, "prompt_id": prompt_id,
                "auth_type": "openai"}}}),
        );
        let u = if prompt_id.starts_with(&format!("{}########", self.id())) {
            &mut self.usage
        } else {
            &mut self.sub_usage
        };
        u.0 += prompt - cached;
        u.1 += out - thoughts;
        u.2 += thoughts;
        u.3 += cached;
    }

    fn result(&mut self, minute: u32, id: &str, name: &str, output: &str, error: bool) {
        let response = if error {
            json!({"error": output})
        } else {
            json!({"output": output})
        };
        self.rec(
            "tool_result",
            minute,
            json!({"message": {"role": "user", "parts": [{"functionResponse":
                {"id": id, "name": name, "response": response}}]},
                "toolCallResult": {"callId": id, "status": if error { "error" } else { "success" },
                "resultDisplay": "shown to the user"}}),
        );
        self.outputs.push(output.to_string());
    }

    fn tool_telemetry(&mut self, minute: u32, prompt_id: &str, name: &str, args: Value) {
        self.rec(
            "system",
            minute,
            json!({"subtype": "ui_telemetry", "systemPayload": {"uiEvent": {
                "event.name": "qwen-code.tool_call", "function_name": name,
                "function_args": args, "duration_ms": 132, "status": "success",
                "success": true, "decision": "auto_accept", "prompt_id": prompt_id}}}),
        );
    }

    fn write(&self, tail: &str) {
        let mut text = String::new();
        for r in &self.records {
            text.push_str(&r.to_string());
            text.push('\n');
        }
        text.push_str(tail);
        std::fs::create_dir_all(self.path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&self.path, text).expect("write");
    }
}

struct Fixture {
    home: Home,
    chats: Vec<Chat>,
}

fn write() -> Fixture {
    let mut home = Home::empty();
    let h = home.path().to_path_buf();
    let projects = h.join(".qwen/projects");

    // Alpha: a prompt, a reply with two tool calls (one fails), a subagent run only
    // telemetry records, a slash command, and a closing reply.
    let id = "0a1f0000-0000-4000-8000-00000000a1fa";
    let mut a = Chat::new(
        id,
        "/home/dev/alpha",
        projects
            .join("-home-dev-alpha/chats")
            .join(format!("{id}.jsonl")),
    );
    a.rec(
        "system",
        10,
        json!({"subtype": "slash_command", "systemPayload": {"phase": "invocation", "rawCommand": "/alpha-init"}}),
    );
    a.rec(
        "system",
        10,
        json!({"subtype": "slash_command", "systemPayload": {"phase": "result", "rawCommand": "/alpha-init",
               "outputHistoryItems": [{"type": "info", "text": "Alpha slash command output line"}]}}),
    );
    a.lines.push("Alpha slash command output line".into());
    a.user(11, "Alpha prompt: list the widget parsers");
    a.reply(
        12,
        "Alpha thinking: look at the parser directory first",
        "Alpha reply one: reading two files",
        &[
            (
                "call_alpha_1",
                "read_file",
                json!({"file_path": "/home/dev/alpha/parse.rs"}),
            ),
            (
                "call_alpha_2",
                "read_file",
                json!({"file_path": "/home/dev/alpha/missing.rs"}),
            ),
        ],
        1000,
        0,
        120,
        20,
    );
    a.tool_telemetry(
        12,
        &format!("{id}########0"),
        "read_file",
        json!({"file_path": "/home/dev/alpha/parse.rs"}),
    );
    a.result(
        12,
        "call_alpha_1",
        "read_file",
        "Alpha tool output: fn parse_widget() {}",
        false,
    );
    a.result(
        12,
        "call_alpha_2",
        "read_file",
        "Alpha tool error: file not found",
        true,
    );
    a.reply(
        13,
        "Alpha thinking: hand the review to a subagent",
        "Alpha reply two: asking the reviewer",
        &[(
            "call_alpha_3",
            "agent",
            json!({"description": "review", "prompt": "Alpha review the parser"}),
        )],
        1500,
        900,
        80,
        10,
    );
    let sub = format!("{id}#code-reviewer-x1#0");
    a.api_response(14, &sub, 600, 0, 50, 5);
    a.tool_telemetry(
        14,
        &sub,
        "grep_search",
        json!({"pattern": "alpha_subagent_pattern"}),
    );
    a.lines.push("alpha_subagent_pattern".into());
    a.api_response(14, &format!("{id}#code-reviewer-x1#1"), 700, 500, 60, 6);
    a.result(
        14,
        "call_alpha_3",
        "agent",
        "Alpha subagent report: the parser is fine",
        false,
    );
    a.reply(
        15,
        "Alpha thinking: wrap up",
        "Alpha reply three: all done",
        &[],
        2000,
        1400,
        40,
        4,
    );
    a.write("");

    // Bravo: an older layout (`tmp/<hash>/chats`), a half-written last line.
    let id = "0b2f0000-0000-4000-8000-00000000b2fb";
    let mut b = Chat::new(
        id,
        "/home/dev/bravo",
        h.join(".qwen/tmp/5d41402abc4b2a76b9719d911017c592/chats")
            .join(format!("{id}.jsonl")),
    );
    b.user(20, "Bravo prompt: explain the build");
    b.reply(
        21,
        "Bravo thinking: it is cargo",
        "Bravo reply: cargo builds it",
        &[],
        300,
        0,
        30,
        3,
    );
    // A turn the user rewound (`/rewind`): it stays in the file, out of the active branch
    // and its usage, and the chat goes on from the reply above.
    let kept = b.usage;
    let rewound_to = format!("{id}-002");
    b.user(22, "Bravo abandoned prompt: try make instead");
    b.reply(
        23,
        "Bravo abandoned thinking: there is no Makefile",
        "Bravo abandoned reply: make is not set up",
        &[],
        400,
        300,
        20,
        2,
    );
    b.usage = kept;
    b.rec(
        "system",
        24,
        json!({"subtype": "rewind", "parentUuid": rewound_to, "systemPayload": {"truncatedCount": 2}}),
    );
    b.user(25, "Bravo prompt after the rewind: and the tests?");
    b.reply(
        26,
        "Bravo thinking: cargo test",
        "Bravo reply after the rewind: cargo test runs them",
        &[],
        500,
        300,
        40,
        4,
    );
    b.write("{\"uuid\":\"cut\",\"type\":\"user\",\"message\":{\"role\":\"us");

    // What Qwen Code keeps beside its chats: never read, never shown.
    for (rel, body) in [
        (
            ".qwen/oauth_creds.json",
            format!("{{\"access_token\":\"{SECRET}\"}}"),
        ),
        (
            ".qwen/settings.json",
            format!("{{\"apiKey\":\"{SECRET}\"}}"),
        ),
        (".qwen/.env", format!("OPENAI_API_KEY={SECRET}\n")),
        (
            ".qwen/projects/-home-dev-alpha/notes.txt",
            format!("{SECRET}\n"),
        ),
    ] {
        stores::put(&h, rel, body);
    }
    home.files.extend([a.path.clone(), b.path.clone()]);
    Fixture {
        home,
        chats: vec![a, b],
    }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-qwen", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for c in &fx.chats {
        stores::assert_session_holds(tree, &c.dir, &c.lines, &c.outputs);
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    assert_eq!(stores::entries(tree, "qwen"), fx.chats.len());
    check_tree(tree, &fx);
}

#[test]
fn usage_is_counted_once_per_api_reply() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    let got = |cost: &Value| {
        (
            cost["inputTokens"].as_u64(),
            cost["outputTokens"].as_u64(),
            cost["thinkingTokens"].as_u64(),
            cost["cachedTokens"].as_u64(),
        )
    };
    for c in &fx.chats {
        let m = meta(tree, &c.dir);
        let (i, o, t, cr) = c.usage;
        assert_eq!(
            got(&m["cost"]),
            (Some(i), Some(o), Some(t), Some(cr)),
            "{}: {m}",
            c.dir
        );
        if c.sub_usage != (0, 0, 0, 0) {
            let (si, so, st, scr) = c.sub_usage;
            let with = (Some(i + si), Some(o + so), Some(t + st), Some(cr + scr));
            assert_eq!(got(&m["costWithSubagents"]), with, "{}: {m}", c.dir);
        }
    }
    // The subagent's calls are its own, in the nested session the `agent` call ran.
    let a = meta(tree, &fx.chats[0].dir);
    assert_eq!(a["subagents"][0]["name"], "code-reviewer-x1");
    assert_eq!(a["subagents"][0]["toolCallId"], "call_alpha_3");
    let sub = meta(
        tree,
        &format!("{}/subagents/code-reviewer-x1", fx.chats[0].dir),
    );
    let (si, so, st, scr) = fx.chats[0].sub_usage;
    assert_eq!(got(&sub["cost"]), (Some(si), Some(so), Some(st), Some(scr)));
}

#[test]
fn cwd_model_titles_and_errors_come_from_the_chat_records() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    for c in &fx.chats {
        let m = meta(tree, &c.dir);
        assert_eq!(m["cwd"], c.cwd.as_str());
        assert_eq!(m["model"], "coder-model");
        assert_eq!(
            m["source"]["paths"][0],
            c.path.to_str().expect("utf-8"),
            "{}",
            c.dir
        );
    }
    let a = meta(tree, &fx.chats[0].dir);
    assert_eq!(a["title"], "Alpha prompt: list the widget parsers");
    let tools = tree.join(&fx.chats[0].dir).join("tools");
    let failed: Vec<String> = std::fs::read_dir(&tools)
        .expect("tools")
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .filter(|t| t.contains("Alpha tool error"))
        .collect();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].to_lowercase().contains("error"), "{}", failed[0]);
}

#[test]
fn a_rewound_turn_is_a_branch_and_out_of_the_usage() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    let b = &fx.chats[1];
    let m = meta(tree, &b.dir);
    assert_eq!(m["branches"].as_array().map(Vec::len), Some(1), "{m}");
    let transcript =
        std::fs::read_to_string(tree.join(&b.dir).join("transcript.md")).expect("transcript");
    assert!(transcript.contains("Bravo reply after the rewind"));
    assert!(
        !transcript.contains("Bravo abandoned reply"),
        "{transcript}"
    );
    let branches = tree.join(&b.dir).join("branches");
    stores::assert_only_in(
        tree,
        "Bravo abandoned reply: make is not set up",
        &b.dir,
        &b.dir,
    );
    assert!(branches.is_dir());
}

#[test]
fn a_half_written_last_line_is_kept_and_named() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    let b = &fx.chats[1];
    let warnings = meta(tree, &b.dir)["warnings"].to_string();
    assert!(warnings.contains("unparsed.txt"), "{warnings}");
    let kept = std::fs::read_to_string(tree.join(&b.dir).join("unparsed.txt")).expect("unparsed");
    assert!(kept.contains("\"uuid\":\"cut\""), "{kept}");
}

#[test]
fn secrets_and_settings_beside_the_chats_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    let tree = &out.tree;
    stores::assert_nowhere(tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn doctor_names_qwen_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(text.contains("qwen"), "{text}");
    assert!(text.contains(".qwen/projects"), "{text}");
}

#[test]
fn mounted_greps_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["qwen"], 6, SECRET, &fx.chats[0].dir);
    });
}

#[test]
fn a_growing_chat_and_a_new_chat_show_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let a = &fx.chats[0];
    let transcript = m.path().join(&a.dir).join("transcript.md");
    assert!(std::fs::read_to_string(&transcript)
        .expect("transcript")
        .contains("Alpha reply three"));
    let line = json!({"uuid": "late", "parentUuid": null, "sessionId": a.id(),
        "timestamp": "2026-04-07T02:59:00.000Z", "type": "user", "cwd": a.cwd,
        "version": "0.14.0", "message": {"role": "user",
        "parts": [{"text": "Alpha prompt typed after the mount"}]}});
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&a.path)
        .expect("open");
    std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).expect("append");
    stores::assert_within_a_second("appended prompt", || {
        stores::file_contains(&transcript, "Alpha prompt typed after the mount")
    });
    // A chat started after the mount, as Qwen starts one: an empty file, then a record.
    let id = "0c3f0000-0000-4000-8000-00000000c3fc";
    let path = a.path.with_file_name(format!("{id}.jsonl"));
    std::fs::write(&path, "").expect("touch");
    let line = json!({"uuid": "new", "parentUuid": null, "sessionId": id,
        "timestamp": "2026-04-07T03:00:00.000Z", "type": "user", "cwd": a.cwd,
        "version": "0.14.0", "message": {"role": "user",
        "parts": [{"text": "Charlie prompt in a chat started after the mount"}]}});
    std::fs::write(&path, format!("{line}\n")).expect("write");
    let fresh = m.path().join(format!("qwen/{id}/transcript.md"));
    stores::assert_within_a_second("new chat", || {
        stores::file_contains(&fresh, "Charlie prompt in a chat started after the mount")
    });
}
