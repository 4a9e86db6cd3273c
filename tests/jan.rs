//! Jan threads, written here the way Jan writes them (janhq/jan @ dfcc2ad6
//! `src-tauri/src/core/threads/commands.rs`: `<data folder>/threads/<id>/thread.json` written
//! pretty with `serde_json::to_string_pretty`, `messages.jsonl` one `serde_json::to_string`
//! line per message with a newline; the message and thread shapes of `core/src/types/
//! message/messageEntity.ts`, `web-app/src/lib/messages.ts`, `web-app/src/services/threads/
//! default.ts` and, for the Electron releases, `extensions/conversational-extension/src/
//! index.ts`), rendered with `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below or is written by hand, never from
//! sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, shape, shapes, transcript, Rendered};
use common::{stdout, Home, Mount};
use serde_json::{json, Value};
use std::path::Path;

/// A key, planted in every file beside the threads that may hold one.
const SECRET: &str = "sk-PLANTED-jan-key-doNotRead-0000";
/// Text of files that are not threads (assistants, attachment copies): never shown.
const PLANTED: &str = "PLANTED not a thread, never shown";
/// The current data folder (Tauri releases, Linux).
const DATA: &str = ".local/share/Jan/data";
/// The Electron 0.5 data folder.
const DATA_05: &str = ".config/Jan/data";
/// The Electron 0.4 data folder.
const DATA_04: &str = "jan";
/// A data folder moved by the user: named only in `settings.json`.
const MOVED: &str = "Documents/jan-moved";

const A: &str = "0b9c2f4e-8d1a-4c7e-9f3a-5e6d7c8b9a01";
const B: &str = "7f3e2d1c-0b9a-4877-a665-544332211000";
const C: &str = "jan_1700000000";
/// 2026-03-01T10:30:00Z in milliseconds, when thread A's first prompt was sent.
const A_T0: u64 = 1_772_361_000_000;

/// What a thread written below must show.
struct Written {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
}

struct Fixture {
    home: Home,
    threads: Vec<Written>,
}

/// `thread.json`, as `serde_json::to_string_pretty` writes it.
fn thread_json(v: &Value) -> Vec<u8> {
    serde_json::to_vec_pretty(v).expect("json")
}

/// `messages.jsonl`: each message on one line, each line ended by a newline.
fn jsonl(lines: &[Value]) -> String {
    lines
        .iter()
        .map(|v| serde_json::to_string(v).expect("json") + "\n")
        .collect()
}

fn text(value: &str) -> Value {
    json!({"type": "text", "text": {"value": value, "annotations": []}})
}

/// A message as Jan stores it: `ThreadMessage` with the current web app's fields.
fn msg(thread: &str, id: &str, role: &str, content: Value, at: u64, metadata: Value) -> Value {
    json!({
        "type": "text", "role": role, "content": content, "id": id,
        "object": "thread.message", "thread_id": thread, "status": "ready",
        "created_at": at, "completed_at": at, "metadata": metadata
    })
}

/// Thread A's messages: the current web app (AI SDK parts saved as content items).
fn alpha_messages() -> Vec<Value> {
    let png = format!("data:image/png;base64,{}", "A".repeat(4000));
    vec![
        msg(
            A,
            "01JA1",
            "user",
            json!([
                text("Alpha prompt: what is in src?"),
                {"type": "image_url", "image_url": {"url": png, "detail": "auto"}}
            ]),
            A_T0,
            json!({"inline_file_contents": [
                {"name": "notes.txt", "content": "Alpha inline document text"}
            ]}),
        ),
        msg(
            A,
            "01JA2",
            "assistant",
            json!([
                {"type": "reasoning", "text": {"value": "Alpha reasoning: list the folder", "annotations": []}},
                text("Alpha first text: let me look."),
                {"type": "tool_call", "tool_call_id": "call_a1", "tool_name": "list_directory",
                 "input": {"path": "src"},
                 "output": {"content": [{"type": "text", "text": "alpha-output: main.rs lib.rs"}]}},
                {"type": "tool_call", "tool_call_id": "call_a2", "tool_name": "read_file",
                 "input": {"path": "src/missing.rs"},
                 "output": {"content": [{"type": "text", "text": "alpha-error: no such file"}], "isError": true}},
                text("Alpha final: two files.")
            ]),
            A_T0 + 20_000,
            json!({
                "usage": {"inputTokens": 1200, "outputTokens": 340, "totalTokens": 1540},
                "tokenSpeed": {"tokenSpeed": 41.5, "tokenCount": 340, "durationMs": 8200}
            }),
        ),
        msg(
            A,
            "01JA3",
            "system",
            json!([text("Alpha system note")]),
            A_T0 + 30_000,
            json!({}),
        ),
        {
            let mut e = msg(
                A,
                "01JA4",
                "assistant",
                json!([text("Alpha error: the model failed to load")]),
                A_T0 + 40_000,
                json!({}),
            );
            e["status"] = json!("error");
            e["error_code"] = json!("unknown");
            e
        },
    ]
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut threads = Vec::new();
    let at = |data: &str, id: &str, file: &str| format!("{data}/threads/{id}/{file}");

    // --- A: a thread of the current releases: favourite, a model, instructions.
    put(
        &h,
        &at(DATA, A, "thread.json"),
        thread_json(&json!({
            "id": A, "object": "thread", "title": "Alpha: read the sources",
            "assistants": [{"id": "jan", "name": "Jan",
                            "instructions": "Alpha instructions: answer briefly.",
                            "model": {"id": "qwen3-4b", "engine": "llamacpp"}}],
            "created": 1_772_361_300.5, "updated": 1_772_361_300.5,
            "metadata": {"is_favorite": true, "order": 1}
        })),
    );
    put(&h, &at(DATA, A, "messages.jsonl"), jsonl(&alpha_messages()));
    threads.push(Written {
        dir: format!("jan/{A}"),
        lines: vec![
            "Alpha instructions: answer briefly.",
            "Alpha prompt: what is in src?",
            "[image: image/png, 3.0 KB]",
            "Alpha inline document text",
            "Alpha reasoning: list the folder",
            "Alpha first text: let me look.",
            "Alpha final: two files.",
            "Alpha system note",
            "Alpha error: the model failed to load",
        ],
        outputs: vec!["alpha-output: main.rs lib.rs", "alpha-error: no such file"],
    });

    // --- B: the 0.6 releases: reasoning inline, calls in `metadata.tool_calls`, a call
    // whose result is a `tool` message, the placeholder title, no model, `updated` in ms.
    put(
        &h,
        &at(DATA, B, "thread.json"),
        thread_json(&json!({
            "id": B, "object": "thread", "title": "New Thread",
            "assistants": [{"id": "jan", "name": "Jan", "model": {"id": "*", "engine": "llamacpp"}}],
            "created": 1_772_400_000_000u64, "updated": 1_772_400_000_000u64, "metadata": {}
        })),
    );
    put(
        &h,
        &at(DATA, B, "messages.jsonl"),
        jsonl(&[
            msg(
                B,
                "01JB1",
                "user",
                json!([text("Bravo prompt: weather in Paris?")]),
                1_772_400_000_000,
                json!({}),
            ),
            msg(
                B,
                "01JB2",
                "assistant",
                json!([text(
                    "<think>Bravo thinking: call the tool</think>\n\nBravo reply: it is sunny."
                )]),
                1_772_400_005_000,
                json!({
                    "tool_calls": [{
                        "tool": {"id": "call_b1", "type": "function",
                                 "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                        "response": {"content": [{"type": "text", "text": "bravo-output: 21C sunny"}]},
                        "state": "ready"
                    }],
                    "tokenSpeed": {"tokenSpeed": 12.5, "tokenCount": 40, "lastTimestamp": 1_772_400_005_000u64}
                }),
            ),
            msg(
                B,
                "01JB3",
                "assistant",
                json!([
                    {"type": "tool_call", "tool_call_id": "call_b2", "tool_name": "search", "input": {"q": "Paris forecast"}}
                ]),
                1_772_400_006_000,
                json!({}),
            ),
            {
                let mut t = msg(
                    B,
                    "01JB4",
                    "tool",
                    json!([text("bravo-tool-message: rain tomorrow")]),
                    1_772_400_007_000,
                    json!({}),
                );
                t["tool_call_id"] = json!("call_b2");
                t
            },
        ]),
    );
    threads.push(Written {
        dir: format!("jan/{B}"),
        lines: vec![
            "Bravo prompt: weather in Paris?",
            "Bravo thinking: call the tool",
            "Bravo reply: it is sunny.",
        ],
        outputs: vec![
            "bravo-output: 21C sunny",
            "bravo-tool-message: rain tomorrow",
        ],
    });

    // --- C: the Electron 0.4 folder `~/jan`: times in seconds, an image copied to files/.
    put(
        &h,
        &at(DATA_04, C, "thread.json"),
        thread_json(&json!({
            "id": C, "object": "thread", "title": "Charlie old thread",
            "assistants": [{"assistant_id": "jan", "assistant_name": "Jan",
                            "model": {"id": "mistral-ins-7b-q4", "settings": {}, "parameters": {}, "engine": "nitro"}}],
            "created": 1_700_000_000_000u64, "updated": 1_700_000_100_000u64,
            "metadata": {"lastMessage": "Charlie reply"}
        })),
    );
    put(
        &h,
        &at(DATA_04, C, "messages.jsonl"),
        jsonl(&[
            json!({"id": "01HC1", "thread_id": C, "assistant_id": "jan", "role": "user",
               "content": [{"type": "image", "text": {"value": "Charlie prompt: what is in the picture?",
                   "annotations": [format!("threads/{C}/files/01HC1.png")]}}],
               "status": "ready", "created_at": 1_700_000_000, "object": "thread.message"}),
            json!({"id": "01HC2", "thread_id": C, "assistant_id": "jan", "role": "assistant",
               "content": [text("Charlie reply: a cat on a sofa.")],
               "status": "ready", "created_at": 1_700_000_060, "object": "thread.message"}),
        ]),
    );
    put(
        &h,
        &format!("{DATA_04}/threads/{C}/files/01HC1.png"),
        PLANTED,
    );
    threads.push(Written {
        dir: format!("jan/{C}"),
        lines: vec![
            "Charlie prompt: what is in the picture?",
            "[image: threads/jan_1700000000/files/01HC1.png]",
            "Charlie reply: a cat on a sofa.",
        ],
        outputs: vec![],
    });

    // --- D: the Electron 0.5 folder: odd lines and a last line cut mid-write.
    let good = msg(
        "delta",
        "01JD1",
        "user",
        json!([text("Delta prompt: before the odd lines")]),
        A_T0,
        json!({}),
    );
    let odd_part = msg(
        "delta",
        "01JD2",
        "assistant",
        json!([
            text("Delta reply: with an odd part"), {"type": "audio", "data": "zz"}
        ]),
        A_T0 + 1000,
        json!({}),
    );
    let mut odd_field = msg(
        "delta",
        "01JD3",
        "assistant",
        json!([text("Delta reply: with an odd field")]),
        A_T0 + 2000,
        json!({}),
    );
    odd_field["pinned"] = json!(true);
    let critic = msg(
        "delta",
        "01JD4",
        "critic",
        json!([text("Delta unknown role")]),
        A_T0 + 3000,
        json!({}),
    );
    let torn = serde_json::to_string(&msg(
        "delta",
        "01JD5",
        "user",
        json!([text("Delta torn prompt never finished")]),
        A_T0 + 4000,
        json!({}),
    ))
    .expect("json");
    let body = format!(
        "{}Delta garbage line, no JSON\n[\"Delta stray array\"]\n{}{}{}",
        jsonl(&[good]),
        jsonl(&[odd_part, odd_field, critic]),
        "",
        &torn[..torn.len() / 2]
    );
    put(
        &h,
        &at(DATA_05, "delta", "thread.json"),
        thread_json(&json!({
            "id": "delta", "object": "thread", "title": "Delta odd lines", "assistants": [],
            "created": 1_772_361_000, "updated": 1_772_361_000, "metadata": {}
        })),
    );
    put(&h, &at(DATA_05, "delta", "messages.jsonl"), body);
    threads.push(Written {
        dir: "jan/delta".into(),
        lines: vec![
            "Delta prompt: before the odd lines",
            "Delta reply: with an odd part",
            "Delta reply: with an odd field",
            "Delta unknown role",
            "Delta garbage line, no JSON",
            "Delta stray array",
        ],
        outputs: vec![],
    });

    // --- E: `thread.json` garbage; its messages still show.
    put(
        &h,
        &at(DATA, "echo", "thread.json"),
        "{\"id\": \"echo\", \"title\": ",
    );
    put(
        &h,
        &at(DATA, "echo", "messages.jsonl"),
        jsonl(&[msg(
            "echo",
            "01JE1",
            "user",
            json!([text("Echo prompt: the thread file is cut")]),
            A_T0,
            json!({}),
        )]),
    );
    threads.push(Written {
        dir: "jan/echo".into(),
        lines: vec!["Echo prompt: the thread file is cut"],
        outputs: vec![],
    });

    // --- F: messages without `thread.json`.
    put(
        &h,
        &at(DATA, "foxtrot", "messages.jsonl"),
        jsonl(&[msg(
            "foxtrot",
            "01JF1",
            "user",
            json!([text("Foxtrot prompt: no thread file")]),
            A_T0,
            json!({}),
        )]),
    );
    threads.push(Written {
        dir: "jan/foxtrot".into(),
        lines: vec!["Foxtrot prompt: no thread file"],
        outputs: vec![],
    });

    // A thread in a data folder the user moved, named only in `settings.json`.
    put(
        &h,
        &at(MOVED, "golf", "thread.json"),
        thread_json(&json!({
            "id": "golf", "object": "thread", "title": "Golf moved thread", "assistants": [],
            "created": 1_772_361_000, "updated": 1_772_361_000
        })),
    );
    put(
        &h,
        &at(MOVED, "golf", "messages.jsonl"),
        jsonl(&[msg(
            "golf",
            "01JG1",
            "user",
            json!([text("Golf prompt: in the moved folder")]),
            A_T0,
            json!({}),
        )]),
    );

    // Beside the threads: settings with tokens and keys, MCP servers' keys, extensions,
    // engines and assistants.
    let moved = h.join(MOVED).display().to_string();
    put(
        &h,
        ".local/share/Jan/settings.json",
        format!("{{\"data_folder\": \"{moved}\", \"modelscope_token\": \"{SECRET}\"}}"),
    );
    put(
        &h,
        ".config/Jan/settings.json",
        format!("{{\"data_folder\": \"{moved}\", \"quick_ask\": false, \"key\": \"{SECRET}\"}}"),
    );
    put(&h, &format!("{DATA}/settings.json"),
        format!("{{\"model-provider\": {{\"state\": {{\"providers\": [{{\"provider\": \"openai\", \"api_key\": \"{SECRET}\"}}]}}}}}}"));
    put(&h, &format!("{DATA}/mcp_config.json"),
        format!("{{\"mcpServers\": {{\"search\": {{\"command\": \"npx\", \"env\": {{\"API_KEY\": \"{SECRET}\"}}}}}}}}"));
    put(
        &h,
        &format!("{DATA}/extensions/@janhq/inference-openai-extension/settings.json"),
        format!(
            "[{{\"key\": \"openai-api-key\", \"controllerProps\": {{\"value\": \"{SECRET}\"}}}}]"
        ),
    );
    put(
        &h,
        &format!("{DATA_04}/engines/openai.json"),
        format!("{{\"api_key\": \"{SECRET}\"}}"),
    );
    put(
        &h,
        &format!("{DATA}/assistants/jan/assistant.json"),
        format!("{{\"id\": \"jan\", \"instructions\": \"{PLANTED}\"}}"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, threads }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-jan", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.threads {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &s.outputs);
    }
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_thread() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    // Six threads in three data folders; the moved folder is not found on its own.
    assert_eq!(stores::entries(&out.tree, "jan"), 6);
    assert!(stores::holding(&out.tree, "Golf prompt", ".").is_empty());
}

#[test]
fn title_model_tags_times_and_usage_come_from_the_thread() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("jan/{A}"));
    assert_eq!(a["title"], "Alpha: read the sources");
    assert_eq!(a["model"], "qwen3-4b");
    assert_eq!(a["tags"], json!(["provider:llamacpp", "favorite"]));
    assert_eq!(a["createdAt"], "2026-03-01T10:30:00.000Z");
    // `updated` (seconds, with a fraction) is newer than the last message.
    assert_eq!(a["updatedAt"], "2026-03-01T10:35:00.500Z");
    // Usage is counted; a local model has no price.
    assert_eq!(
        stores::tokens(&a["cost"]),
        (Some(1200), Some(340), Some(0), Some(0))
    );
    assert_eq!(a["cost"]["totalUsd"], Value::Null, "{}", a["cost"]);
    assert_eq!(a["warnings"], json!([]), "{}", a["warnings"]);

    let b = meta(&out.tree, &format!("jan/{B}"));
    // Jan's placeholder title gives way to the first prompt; `*` is no model.
    assert_eq!(b["title"], "Bravo prompt: weather in Paris?");
    assert_eq!(b["model"], Value::Null);
    // 1_772_400_000_000 ms is 39,000 s after A_T0.
    assert_eq!(b["createdAt"], "2026-03-01T21:20:00.000Z");
    assert_eq!(b["updatedAt"], "2026-03-01T21:20:07.000Z");
    // `tokenSpeed` is not usage.
    assert_eq!(stores::tokens(&b["cost"]).1, Some(0));
    assert_eq!(b["warnings"], json!([]), "{}", b["warnings"]);

    let c = meta(&out.tree, &format!("jan/{C}"));
    assert_eq!(c["title"], "Charlie old thread");
    assert_eq!(c["model"], "mistral-ins-7b-q4");
    assert_eq!(c["tags"], json!(["provider:nitro"]));
    // Seconds in the oldest files: 2023-11-14T22:13:20Z.
    assert_eq!(c["createdAt"], "2023-11-14T22:13:20.000Z");
    assert_eq!(c["updatedAt"], "2023-11-14T22:15:00.000Z");
}

#[test]
fn every_part_and_role_lands_in_messages_jsonl() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, &format!("jan/{A}"));
    assert_eq!(
        shapes(&m),
        [
            shape("system", "context", "Alpha instructions: answer briefly."),
            shape(
                "user",
                "",
                "Alpha prompt: what is in src?\n[image: image/png, 3.0 KB]"
            ),
            shape("system", "context", "Alpha inline document text"),
            // The text after the calls is a message of its own, so the order holds.
            shape("assistant", "", "Alpha first text: let me look."),
            shape("assistant", "", "Alpha final: two files."),
            shape("system", "context", "Alpha system note"),
            shape(
                "system",
                "event",
                "error (unknown): Alpha error: the model failed to load"
            ),
        ]
    );
    assert_eq!(m[0]["label"], "assistant instructions");
    assert_eq!(m[2]["label"], "attached file notes.txt");
    assert_eq!(m[5]["label"], "system prompt");
    assert_eq!(m[3]["thinking"], "Alpha reasoning: list the folder");
    assert_eq!(m[1]["timestamp"], "2026-03-01T10:30:00.000Z");
    let calls = &m[3]["toolCalls"];
    assert_eq!(
        (
            &calls[0]["toolCallId"],
            &calls[0]["toolName"],
            &calls[0]["input"]
        ),
        (
            &json!("call_a1"),
            &json!("list_directory"),
            &json!({"path": "src"})
        )
    );
    assert_eq!(calls[0]["output"], "alpha-output: main.rs lib.rs");
    assert_eq!(calls[1]["toolName"], "read_file");
    assert_eq!(calls[1]["output"], "alpha-error: no such file");
    assert_eq!(
        m[4]["tokenUsage"],
        json!({"inputTokens": 1200, "outputTokens": 340, "thinkingTokens": 0,
               "cachedTokens": 0, "cacheWriteTokens": 0})
    );
    let raw = std::fs::read_to_string(out.tree.join(format!("jan/{A}/messages.jsonl")))
        .expect("messages");
    assert!(!raw.contains("AAAAAAAA"), "an image's bytes were kept");
    // One tool file per call.
    let tools = std::fs::read_dir(out.tree.join(format!("jan/{A}/tools")))
        .expect("tools")
        .count();
    assert_eq!(tools, 2);
    let t = transcript(&out.tree, &format!("jan/{A}"));
    assert!(t.contains("<summary>Thinking</summary>"), "{t}");

    let b = messages(&out.tree, &format!("jan/{B}"));
    assert_eq!(
        shapes(&b),
        [
            shape("user", "", "Bravo prompt: weather in Paris?"),
            shape("assistant", "", "Bravo reply: it is sunny."),
            shape("assistant", "", ""),
            // A result that is only its output keeps it in `toolResult`.
            shape("tool", "", ""),
        ]
    );
    assert_eq!(
        b[3]["toolResult"]["output"],
        "bravo-tool-message: rain tomorrow"
    );
    assert_eq!(b[1]["thinking"], "Bravo thinking: call the tool");
    assert_eq!(
        b[1]["toolCalls"][0],
        json!({"toolCallId": "call_b1", "toolName": "get_weather", "input": {"city": "Paris"},
               "output": "bravo-output: 21C sunny", "isError": false})
    );
    assert_eq!(b[2]["toolCalls"][0]["toolName"], "search");
    assert_eq!(
        (
            &b[3]["toolResult"]["toolCallId"],
            &b[3]["toolResult"]["toolName"]
        ),
        (&json!("call_b2"), &json!("search"))
    );
}

#[test]
fn a_failed_mcp_call_is_marked_failed() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, &format!("jan/{A}"));
    let calls = &m[3]["toolCalls"];
    assert_eq!(
        (&calls[0]["isError"], &calls[1]["isError"]),
        (&json!(false), &json!(true))
    );
}

#[test]
fn odd_lines_a_torn_line_and_a_broken_thread_file_cost_warnings_not_threads() {
    let fx = write();
    let out = render(&fx);
    let d = meta(&out.tree, "jan/delta");
    let w = d["warnings"].to_string();
    assert!(w.contains("unknown part type audio"), "{w}");
    assert!(w.contains("does not read: pinned"), "{w}");
    assert!(w.contains("unknown role critic"), "{w}");
    assert!(w.contains("not an object"), "{w}");
    assert!(w.contains("line 2"), "the garbage line is named: {w}");
    let dm = messages(&out.tree, "jan/delta");
    assert_eq!(dm[0]["content"], "Delta prompt: before the odd lines");
    // The torn last line is no message; its text stays visible beside them.
    assert!(w.contains("partial last line ignored"), "{w}");
    assert!(!dm
        .iter()
        .any(|x| x["content"].to_string().contains("Delta torn")));
    stores::assert_only_in(&out.tree, "Delta torn prompt", ".", "jan/delta");

    let e = meta(&out.tree, "jan/echo");
    assert!(
        e["warnings"]
            .to_string()
            .contains("thread.json: invalid JSON"),
        "{}",
        e["warnings"]
    );
    assert_eq!(e["title"], "Echo prompt: the thread file is cut");
    let f = meta(&out.tree, "jan/foxtrot");
    assert!(
        f["warnings"].to_string().contains("thread.json missing"),
        "{}",
        f["warnings"]
    );
}

#[test]
fn settings_keys_extensions_and_attachments_are_never_read() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_nowhere(&out.tree, PLANTED);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
    stores::assert_list_hides(&fx.home, PLANTED, &[]);
}

#[test]
fn a_moved_data_folder_is_read_with_store_or_jan_data_folder() {
    let fx = write();
    let moved = fx.home.path().join(MOVED);
    let tmp = tempfile::tempdir().expect("tmp");
    let tree = tmp.path().join("tree");
    let arg = format!("jan={}", moved.display());
    let o = fx
        .home
        .command(&["render", tree.to_str().expect("utf-8"), "--store", &arg])
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    stores::assert_session_holds(
        &tree,
        "jan/golf",
        &["Golf prompt: in the moved folder"],
        &[] as &[&str],
    );
    assert_eq!(stores::entries(&tree, "jan"), 7);

    let tree2 = tmp.path().join("tree2");
    let o = fx
        .home
        .command(&["render", tree2.to_str().expect("utf-8")])
        .env("JAN_DATA_FOLDER", &moved)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    // The variable replaces the default folders, as it does for Jan's CLI.
    assert_eq!(stores::entries(&tree2, "jan"), 1);
    assert_eq!(meta(&tree2, "jan/golf")["title"], "Golf moved thread");
    stores::assert_nowhere(&tree, SECRET);
}

/// A new message is appended to `messages.jsonl`: the transcript only grows.
#[test]
fn an_appended_message_only_appends_to_the_transcript() {
    let fx = write();
    let before = render(&fx);
    let t0 = transcript(&before.tree, &format!("jan/{A}"));
    let mut more = alpha_messages();
    more.push(msg(
        A,
        "01JA5",
        "user",
        json!([text("Alpha prompt five: and tests?")]),
        A_T0 + 60_000,
        json!({}),
    ));
    put(
        fx.home.path(),
        &format!("{DATA}/threads/{A}/messages.jsonl"),
        jsonl(&more),
    );
    let after = render(&fx);
    let t1 = transcript(&after.tree, &format!("jan/{A}"));
    assert!(t1.contains("Alpha prompt five: and tests?"), "{t1}");
    let first = t0.find("### ").expect("a message");
    let end = t0.rfind("\n---").unwrap_or(t0.len());
    assert!(t1[first..].starts_with(&t0[first..end]), "{t1}");
}

#[test]
fn doctor_names_jan_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(text.contains("jan"), "{text}");
    assert!(text.contains("6 sessions"), "{text}");
    assert!(text.contains(".local/share/Jan/data/threads"), "{text}");
    assert!(text.contains(".config/Jan/data/threads"), "{text}");
}

#[test]
fn mounted_threads_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m: &Mount| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["jan"], 8, SECRET, &format!("jan/{A}"));
    });
}

/// Jan appends each message to `messages.jsonl`: it shows within a second on a mount.
#[test]
fn an_appended_message_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("jan/{A}/transcript.md"));
    assert!(t.exists(), "{}", t.display());
    let path = fx
        .home
        .path()
        .join(format!("{DATA}/threads/{A}/messages.jsonl"));
    let line = jsonl(&[msg(
        A,
        "01JA6",
        "user",
        json!([text("Alpha fresh prompt after the mount")]),
        A_T0 + 90_000,
        json!({}),
    )]);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    std::io::Write::write_all(&mut f, line.as_bytes()).expect("append");
    drop(f);
    stores::assert_within_a_second("appended message", || {
        stores::file_contains(&t, "Alpha fresh prompt after the mount")
    });
}

/// The bundled sample (`fixtures/home/.local/share/Jan/data/threads/`): each line in the one
/// thread, its title and no warning. The lines are the sample's own text.
#[test]
fn bundled_sample_shows_the_thread() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-jan-samples")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let dir = "jan/5d1e8c3a-2f47-4b9e-a0c6-71d2e9f4b3a8";
    stores::assert_session_holds(
        &tree,
        dir,
        &[
            "You are a concise assistant for a small web shop.",
            "Which of my products sold best last week?",
            "The sales report is a table of product, units and revenue.",
            "The mugs sold best: 48 units.",
            "Draft a short restock note for the mugs.",
            "Restock note: order 60 more mugs before Friday.",
        ],
        &["product,units,revenue"],
    );
    let m = meta(&tree, dir);
    assert_eq!(m["title"], "Best sellers last week");
    assert_eq!(m["warnings"], json!([]), "{}", m["warnings"]);
    assert_eq!(stores::entries(&tree, "jan"), 1);
}
