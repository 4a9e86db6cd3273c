//! Octofriend's `~/.local/share/octofriend/sqlite.db`, built here from Octofriend's own DDL
//! (`fixtures/schema/octofriend-0006.sql`, from synthetic-lab/octofriend `drizzle/` @
//! 3b171999) with rows written the way `insertHistoryItems`
//! (`source/session-history/index.ts`) writes them: per call one transaction, the tree and a
//! launch created on the first, then per item its payload row, its `history_items` row with
//! the model's JSON, the preview of a user message and a leaf node under the previous one.
//! Rendered with `sessfs render` and mounted once.
//!
//! Every expected value comes from the writer below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, read, Rendered};
use common::{stdout, Home, Mount};
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::path::Path;

const DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/octofriend-0006.sql"
));

/// A credential, planted in Octofriend's key files, in a model's `auth` command and in a
/// `docker run` launch's arguments.
const SECRET: &str = "syn_PLANTEDoctofriendSECRETdoNotRead0000";
/// A line of the prompt box's recall list (`input_history`): not a session.
const RECALL: &str = "PLANTED recall line, not a session";
const DB: &str = ".local/share/octofriend/sqlite.db";
const MODEL: &str = "hf:moonshotai/Kimi-K2-Instruct";
/// 2026-08-10T09:00:00Z.
const T0: i64 = 1_786_352_400_000;

const A: &str = "0f3c2b1a-1111-4a5b-8c7d-aaaaaaaaaaaa";
const B: &str = "1e4d3c2b-2222-4b6c-9d8e-bbbbbbbbbbbb";
const C: &str = "2d5e4d3c-3333-4c7d-ae9f-cccccccccccc";

/// One history item, as `HistoryItem` in `source/session-history/index.ts`.
enum Item {
    Ir(Value),
    Note(&'static str),
    RequestFailed,
    CompactionFailed,
}

/// `serializeModelJson` of a model config whose key comes from a command.
fn model_json(model: &str) -> String {
    json!({"version": "octo-model/v1", "model": {
        "nickname": "Kimi K2", "model": model, "baseUrl": "https://api.synthetic.new/v1",
        "context": 131072, "auth": {"type": "command", "command": ["echo", SECRET]}}})
    .to_string()
}

/// Octofriend's writes to one database, with a clock that moves a second per node.
struct Writer {
    c: Connection,
    clock: i64,
}

/// A tree, its launch, and the last node written.
struct Tree {
    id: i64,
    launch: i64,
    last: Option<i64>,
}

impl Writer {
    fn open(home: &Path) -> Writer {
        let path = home.join(DB);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        let fresh = !path.exists();
        let c = Connection::open(path).expect("db");
        // As `db()` in `source/db/db.ts`.
        c.execute_batch("PRAGMA foreign_keys = ON").expect("fk");
        if fresh {
            c.execute_batch(DDL).expect("ddl");
        }
        Writer { c, clock: T0 }
    }

    fn tick(&mut self) -> i64 {
        self.clock += 1000;
        self.clock
    }

    /// `createTree` and `createLaunch` (a local launch, or a `docker run` one with `args`).
    fn tree(&mut self, name: &str, cwd: &str, docker_args: Option<Value>) -> Tree {
        let now = self.clock;
        self.c
            .execute(
                "INSERT INTO trees (name, cwd, updated_at) VALUES (?1, ?2, ?3)",
                params![name, cwd, now],
            )
            .expect("tree");
        let id = self.c.last_insert_rowid();
        let launch = match docker_args {
            None => {
                self.c
                    .execute(
                        "INSERT INTO local_launches (config, unchained) VALUES (NULL, 0)",
                        [],
                    )
                    .expect("local");
                let l = self.c.last_insert_rowid();
                self.c
                    .execute("INSERT INTO launches (local_launch_id) VALUES (?1)", [l])
                    .expect("launch");
                self.c.last_insert_rowid()
            }
            Some(args) => {
                self.c
                    .execute(
                        "INSERT INTO docker_launches (kind, docker_run_args_json, unchained) VALUES ('run', ?1, 1)",
                        [args.to_string()],
                    )
                    .expect("docker");
                let d = self.c.last_insert_rowid();
                self.c
                    .execute("INSERT INTO launches (docker_launch_id) VALUES (?1)", [d])
                    .expect("launch");
                self.c.last_insert_rowid()
            }
        };
        Tree {
            id,
            launch,
            last: None,
        }
    }

    /// `insertHistoryItems(session, parent, items, modelJson)`: a chain of leaves under
    /// `parent`; returns the new node ids and leaves the tree's last node at the chain's end.
    fn append(
        &mut self,
        t: &mut Tree,
        name: &str,
        parent: Option<i64>,
        items: Vec<Item>,
        model: &str,
    ) -> Vec<i64> {
        let mut ids = Vec::new();
        let mut parent = parent;
        for item in items {
            let (mut rf, mut cf, mut nt, mut ir) = (None, None, None, None);
            match item {
                Item::Ir(v) => {
                    let body = json!({"version": "octo-llm-ir/v1", "ir": v});
                    self.c
                        .execute("INSERT INTO llm_irs (json) VALUES (?1)", [body.to_string()])
                        .expect("ir");
                    ir = Some(self.c.last_insert_rowid());
                    if v["role"] == "user" {
                        let text = v["content"][0]["content"].as_str().unwrap_or_default();
                        self.c
                            .execute(
                                "INSERT INTO previews (session_id, preview, preview_type, updated_at)
                                 VALUES (?1, ?2, 'latest-user-message', ?3)
                                 ON CONFLICT (session_id) DO UPDATE SET preview = excluded.preview",
                                params![name, text, self.clock],
                            )
                            .expect("preview");
                    }
                }
                Item::Note(text) => {
                    self.c
                        .execute("INSERT INTO notifications (content) VALUES (?1)", [text])
                        .expect("note");
                    nt = Some(self.c.last_insert_rowid());
                }
                Item::RequestFailed => {
                    self.c
                        .execute("INSERT INTO request_failed_items DEFAULT VALUES", [])
                        .expect("rf");
                    rf = Some(self.c.last_insert_rowid());
                }
                Item::CompactionFailed => {
                    self.c
                        .execute("INSERT INTO compaction_failed_items DEFAULT VALUES", [])
                        .expect("cf");
                    cf = Some(self.c.last_insert_rowid());
                }
            }
            self.c
                .execute(
                    "INSERT INTO history_items (model_json, request_failed_id, compaction_failed_id, notification_id, llm_ir_id)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![model, rf, cf, nt, ir],
                )
                .expect("item");
            let item = self.c.last_insert_rowid();
            let now = self.tick();
            self.c
                .execute(
                    "INSERT INTO tree_nodes (history_item_id, tree_id, parent_id, is_leaf, launch_id, created_at)
                     VALUES (?1, ?2, ?3, 1, ?4, ?5)",
                    params![item, t.id, parent, t.launch, now],
                )
                .expect("node");
            let node = self.c.last_insert_rowid();
            ids.push(node);
            parent = Some(node);
        }
        self.c
            .execute(
                "UPDATE trees SET updated_at = ?1 WHERE id = ?2",
                params![self.clock, t.id],
            )
            .expect("updated");
        t.last = parent;
        ids
    }
}

fn user(text: &str) -> Item {
    Item::Ir(json!({"role": "user", "content": [{"type": "text", "content": text}]}))
}

/// `{input: {cached, uncached, total}, output}`.
fn usage(cached: u64, uncached: u64, output: u64) -> Value {
    json!({"input": {"cached": cached, "uncached": uncached, "total": cached + uncached}, "output": output})
}

fn reply(text: &str, u: Value) -> Item {
    Item::Ir(json!({"role": "assistant", "content": text, "usage": u}))
}

fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"type": "tool-call", "name": name, "toolCallId": id, "original": args,
           "parsed": {"PLANTEDparsed": "not shown"}})
}

/// What a session written below must show.
struct Written {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
}

struct Fixture {
    home: Home,
    sessions: Vec<Written>,
    /// Node ids of B: (the failed prompt's request-failed leaf, the node it forked after).
    b_branch: (i64, i64),
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let mut w = Writer::open(&h);
    let m = model_json(MODEL);
    let mut sessions = Vec::new();

    // --- A: one turn through every tool answer Octofriend writes.
    let mut a = w.tree(A, "/home/dev/alpha", None);
    let png = "A".repeat(4000);
    let items = vec![
        Item::Ir(json!({"role": "user", "content": [
            {"type": "text", "content": "Alpha prompt: fix the failing test"},
            {"type": "image", "image": {"mimeType": "image/png", "base64Data": png,
              "dataUrl": format!("data:image/png;base64,{png}"), "filePath": "/home/dev/alpha/shot.png",
              "sizeBytes": 3000}}]})),
        Item::Ir(
            json!({"role": "assistant", "content": "Alpha reply: running the tests",
            "reasoningContent": "Alpha thinking: run them first",
            "toolCalls": [call("call_a1", "shell", json!({"cmd": "cargo test", "timeout": 60000})),
                          call("call_a2", "read", json!({"filePath": "src/lib.rs"}))],
            "usage": usage(100, 1000, 50)}),
        ),
        Item::Ir(
            json!({"role": "tool-output", "toolCall": call("call_a1", "shell", json!({"cmd": "cargo test"})),
            "content": [{"type": "text", "content": "alpha-output: 1 test failed"}]}),
        ),
        Item::Ir(
            json!({"role": "file-read", "toolCall": call("call_a2", "read", json!({"filePath": "src/lib.rs"})),
            "path": "src/lib.rs", "content": "alpha-file: fn add(a: i32) -> i32"}),
        ),
        Item::Ir(
            json!({"role": "assistant", "content": "Alpha reply two: editing",
            "anthropic": {"thinkingBlocks": [
                {"type": "thinking", "thinking": "Alpha anthropic thinking", "signature": "sig"},
                {"type": "redacted_thinking", "data": "zzz"}]},
            "toolCalls": [call("call_a3", "edit", json!({"filePath": "src/lib.rs", "search": "a: i32", "replace": "a: i64"})),
                          {"type": "malformed-tool-request", "error": "alpha-malformed: bad JSON",
                           "call": {"original": {"name": "create", "arguments": "{\"filePath\": "}},
                           "toolCallId": "call_a4"}],
            "usage": usage(1100, 200, 40)}),
        ),
        Item::Ir(
            json!({"role": "file-mutate", "toolCall": call("call_a3", "edit", json!({})),
            "path": "src/lib.rs", "content": "alpha-mutate: src/lib.rs edited"}),
        ),
        Item::Ir(json!({"role": "tool-parse-error", "malformedRequest":
            {"type": "malformed-tool-request", "error": "alpha-malformed: bad JSON",
             "call": {"original": {"name": "create", "arguments": "{\"filePath\": "}}, "toolCallId": "call_a4"}})),
        Item::Ir(json!({"role": "assistant", "content": "",
            "openai": {"encryptedReasoningContent": "gAAAAB-sealed", "reasoningId": "rs_1"},
            "toolCalls": [call("call_a5", "shell", json!({"cmd": "rm -rf target"})),
                          call("call_a6", "shell", json!({"cmd": "cargo test"})),
                          call("call_a7", "fetch", json!({"url": "https://example.com"})),
                          call("call_a8", "grep", json!({"pattern": "TODO"}))],
            "usage": usage(0, 300, 30)})),
        Item::Ir(
            json!({"role": "tool-runtime-error", "toolCall": call("call_a7", "fetch", json!({})),
            "error": "alpha-runtime: connection refused"}),
        ),
        Item::Ir(
            json!({"role": "tool-validation-error", "toolCall": call("call_a8", "grep", json!({})),
            "error": "alpha-validation: pattern too broad", "aborted": false}),
        ),
        Item::Ir(json!({"role": "tool-reject", "toolCall": call("call_a5", "shell", json!({}))})),
        Item::Ir(
            json!({"role": "tool-skip-output", "toolCall": call("call_a6", "shell", json!({})),
            "reason": "alpha-skip: a previous tool call was rejected"}),
        ),
        reply("Alpha reply three: done", usage(0, 10, 5)),
    ];
    w.append(&mut a, A, None, items, &m);
    sessions.push(Written {
        dir: format!("octofriend/{A}"),
        lines: vec![
            "Alpha prompt: fix the failing test",
            "[image: image/png, 3.0 KB] /home/dev/alpha/shot.png",
            "Alpha thinking: run them first",
            "Alpha reply: running the tests",
            "Alpha anthropic thinking",
            "Alpha reply two: editing",
            "Alpha reply three: done",
        ],
        outputs: vec![
            "alpha-output: 1 test failed",
            "alpha-file: fn add(a: i32) -> i32",
            "alpha-mutate: src/lib.rs edited",
            "alpha-malformed: bad JSON",
            "alpha-runtime: connection refused",
            "alpha-validation: pattern too broad",
            "Rejected by the user.",
            "alpha-skip: a previous tool call was rejected",
        ],
    });

    // --- B: a failed request edited and retried (a branch), items from before 0006 (no
    // model), a notification, a failed and a done compaction; launched with `docker run`.
    let no = "octo-no-model-recorded";
    let docker = json!(["-e", format!("SYNTHETIC_API_KEY={SECRET}"), "node:22"]);
    let mut b = w.tree(B, "/home/dev/bravo", Some(docker));
    let first = w.append(
        &mut b,
        B,
        None,
        vec![
            user("Bravo first prompt"),
            reply("Bravo first reply", usage(0, 20, 10)),
        ],
        no,
    );
    let failed = w.append(
        &mut b,
        B,
        Some(first[1]),
        vec![
            user("Bravo second prompt, before the edit"),
            Item::RequestFailed,
        ],
        &m,
    );
    // `editAndRetryFrom`: the history is cut back before the failed prompt.
    w.append(
        &mut b,
        B,
        Some(first[1]),
        vec![
            user("Bravo second prompt, edited"),
            reply("Bravo edited reply", usage(0, 30, 15)),
            Item::Note("Bravo note: switched to Vim mode"),
            user("Bravo third prompt"),
            Item::CompactionFailed,
            Item::Ir(json!({"role": "checkpoint", "content": [
                {"type": "text", "content": "Bravo summary: the earlier work"}]})),
            reply("Bravo final reply", usage(0, 40, 20)),
        ],
        &m,
    );
    sessions.push(Written {
        dir: format!("octofriend/{B}"),
        lines: vec![
            "Bravo first prompt",
            "Bravo first reply",
            "Bravo second prompt, before the edit",
            "Bravo second prompt, edited",
            "Bravo edited reply",
            "Bravo note: switched to Vim mode",
            "Bravo third prompt",
            "Bravo summary: the earlier work",
            "Bravo final reply",
        ],
        outputs: vec![],
    });

    // --- C: rows no version of Octofriend writes: torn JSON, a future version, an unknown
    // role, an item whose payload row is gone, a model JSON that is not JSON.
    let mut c = w.tree(C, "/home/dev/charlie", None);
    let ok = w.append(&mut c, C, None, vec![user("Charlie prompt before")], &m);
    let torn_at = w.tick();
    w.c.execute(
        "INSERT INTO llm_irs (json) VALUES ('{\"version\":\"octo-llm-ir/v1\",\"ir\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"content\":\"Charlie torn')",
        [],
    )
    .expect("torn");
    let torn = w.c.last_insert_rowid();
    w.c.execute(
        "INSERT INTO history_items (model_json, llm_ir_id) VALUES ('not json {', ?1)",
        [torn],
    )
    .expect("item");
    let item = w.c.last_insert_rowid();
    w.c.execute(
        "INSERT INTO tree_nodes (history_item_id, tree_id, parent_id, is_leaf, launch_id, created_at) VALUES (?1, ?2, ?3, 1, ?4, ?5)",
        params![item, c.id, ok[0], c.launch, torn_at],
    )
    .expect("node");
    let torn_node = w.c.last_insert_rowid();
    // A future version and an unknown role, after the torn row.
    for body in [
        json!({"version": "octo-llm-ir/v9", "ir": {"role": "user", "content": [{"type": "text", "content": "Charlie future prompt"}]}}),
        json!({"version": "octo-llm-ir/v1", "ir": {"role": "trajectory", "name": "explore", "ir": [{"role": "user", "content": [{"type": "text", "content": "Charlie trajectory text"}]}]}}),
    ] {
        w.c.execute("INSERT INTO llm_irs (json) VALUES (?1)", [body.to_string()])
            .expect("ir");
        let ir = w.c.last_insert_rowid();
        w.c.execute(
            "INSERT INTO history_items (model_json, llm_ir_id) VALUES (?1, ?2)",
            params![m, ir],
        )
        .expect("item");
        let item = w.c.last_insert_rowid();
        let parent = c.last.unwrap_or(torn_node).max(torn_node);
        let now = w.tick();
        w.c.execute(
            "INSERT INTO tree_nodes (history_item_id, tree_id, parent_id, is_leaf, launch_id, created_at) VALUES (?1, ?2, ?3, 1, ?4, ?5)",
            params![item, c.id, parent, c.launch, now],
        )
        .expect("node");
        c.last = Some(w.c.last_insert_rowid());
    }
    // An item pointing at an `llm_irs` row that is gone: another writer without Octofriend's
    // `PRAGMA foreign_keys = ON`.
    w.c.execute_batch("PRAGMA foreign_keys = OFF")
        .expect("fk off");
    w.c.execute(
        "INSERT INTO history_items (model_json, llm_ir_id) VALUES (?1, 999999)",
        [&m],
    )
    .expect("item");
    w.c.execute_batch("PRAGMA foreign_keys = ON")
        .expect("fk on");
    let item = w.c.last_insert_rowid();
    let now = w.tick();
    w.c.execute(
        "INSERT INTO tree_nodes (history_item_id, tree_id, parent_id, is_leaf, launch_id, created_at) VALUES (?1, ?2, ?3, 1, ?4, ?5)",
        params![item, c.id, c.last, c.launch, now],
    )
    .expect("node");
    c.last = Some(w.c.last_insert_rowid());
    let parent = c.last;
    w.append(
        &mut c,
        C,
        parent,
        vec![reply("Charlie reply after", usage(0, 5, 5))],
        &m,
    );
    sessions.push(Written {
        dir: format!("octofriend/{C}"),
        lines: vec![
            "Charlie prompt before",
            "Charlie torn",
            "Charlie future prompt",
            "Charlie trajectory text",
            "Charlie reply after",
        ],
        outputs: vec![],
    });

    w.c.execute("INSERT INTO input_history (input) VALUES (?1)", [RECALL])
        .expect("recall");
    drop(w);

    // Beside the database: keys, OAuth tokens and the configuration.
    let conf = ".config/octofriend";
    put(
        &h,
        &format!("{conf}/keys.json5"),
        format!("{{synthetic: \"{SECRET}\"}}"),
    );
    put(
        &h,
        &format!("{conf}/oauth.json5"),
        format!("{{access_token: \"{SECRET}\"}}"),
    );
    put(
        &h,
        &format!("{conf}/octofriend.json5"),
        format!("{{yourName: \"dev\", models: [], defaultApiKeyOverrides: {{x: \"{SECRET}\"}}}}"),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture {
        home,
        sessions,
        b_branch: (failed[1], first[1]),
    }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-octofriend", &[])
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
    assert_eq!(stores::entries(&out.tree, "octofriend"), 3);
}

#[test]
fn every_answer_is_paired_with_its_call_and_failures_are_marked() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, &format!("octofriend/{A}"));
    let calls: Vec<(Value, Value, Value)> = m
        .iter()
        .flat_map(|x| x["toolCalls"].as_array().cloned().unwrap_or_default())
        .map(|c| {
            (
                c["toolCallId"].clone(),
                c["toolName"].clone(),
                c["input"].clone(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            (
                json!("call_a1"),
                json!("shell"),
                json!({"cmd": "cargo test", "timeout": 60000})
            ),
            (
                json!("call_a2"),
                json!("read"),
                json!({"filePath": "src/lib.rs"})
            ),
            (
                json!("call_a3"),
                json!("edit"),
                json!({"filePath": "src/lib.rs", "search": "a: i32", "replace": "a: i64"})
            ),
            // A malformed request keeps the name and the arguments the model sent.
            (json!("call_a4"), json!("create"), json!("{\"filePath\": ")),
            (
                json!("call_a5"),
                json!("shell"),
                json!({"cmd": "rm -rf target"})
            ),
            (
                json!("call_a6"),
                json!("shell"),
                json!({"cmd": "cargo test"})
            ),
            (
                json!("call_a7"),
                json!("fetch"),
                json!({"url": "https://example.com"})
            ),
            (json!("call_a8"), json!("grep"), json!({"pattern": "TODO"})),
        ]
    );
    let results: Vec<(Value, Value, Value)> = m
        .iter()
        .filter(|x| x["role"] == "tool")
        .map(|x| {
            let r = &x["toolResult"];
            (
                r["toolCallId"].clone(),
                r["toolName"].clone(),
                r["isError"].clone(),
            )
        })
        .collect();
    let r = |id: &str, name: &str, err: bool| (json!(id), json!(name), json!(err));
    assert_eq!(
        results,
        [
            r("call_a1", "shell", false),
            r("call_a2", "read", false),
            r("call_a3", "edit", false),
            r("call_a4", "create", true),
            r("call_a7", "fetch", true),
            r("call_a8", "grep", true),
            r("call_a5", "shell", true),
            r("call_a6", "shell", true),
        ]
    );
    // The parsed form of a call (which may hold whole files) is never shown.
    stores::assert_nowhere(&out.tree, "PLANTEDparsed");
    // Reasoning: visible, Anthropic blocks, and sealed.
    let thinking: Vec<&Value> = m
        .iter()
        .filter(|x| x["role"] == "assistant")
        .map(|x| &x["thinking"])
        .collect();
    assert_eq!(thinking[0], "Alpha thinking: run them first");
    // A redacted block beside a visible one: the text, then the placeholder.
    let t1 = thinking[1].as_str().unwrap_or_default();
    assert!(
        t1.starts_with("Alpha anthropic thinking\n\n[sealed reasoning"),
        "{t1}"
    );
    assert!(
        thinking[2]
            .as_str()
            .unwrap_or_default()
            .starts_with("[sealed reasoning"),
        "{}",
        thinking[2]
    );
    assert_eq!(*thinking[3], Value::Null);
    // The image is a placeholder, never its bytes.
    assert!(!read(&out.tree, &format!("octofriend/{A}/messages.jsonl")).contains("AAAAAAAA"));
    stores::assert_nowhere(&out.tree, "AAAAAAAAAAAAAAAA");
}

#[test]
fn title_cwd_times_model_and_usage() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("octofriend/{A}"));
    // Octofriend names no session: the first prompt does.
    assert_eq!(a["title"], "Alpha prompt: fix the failing test");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    // Thirteen nodes written a second apart from T0 + 1 s.
    assert_eq!(a["createdAt"], "2026-08-10T09:00:01.000Z");
    assert_eq!(a["updatedAt"], "2026-08-10T09:00:13.000Z");
    assert_eq!(a["model"], MODEL);
    assert_eq!(a["models"], json!([MODEL]));
    // Input less cache reads, cache reads, output: the four replies.
    let c = &a["cost"];
    assert_eq!(
        stores::tokens(c),
        (Some(1510), Some(125), Some(1200), Some(0)),
        "{c}"
    );
    assert_eq!(a["turnCount"], 1);
    assert_eq!(a["warnings"], json!([]), "{}", a["warnings"]);
    assert_eq!(a["source"]["format"], "octofriend-sqlite");
    assert_eq!(a["source"]["formatVersion"], "octo-llm-ir/v1");
    // Before 0006 no model was recorded: those replies name none.
    let bm = messages(&out.tree, &format!("octofriend/{B}"));
    assert_eq!(bm[1]["content"], "Bravo first reply");
    assert_eq!(bm[1]["model"], Value::Null);
    let bravo_final = bm.last().expect("a message");
    assert_eq!(bravo_final["model"], MODEL);
}

#[test]
fn an_edited_retry_is_the_active_path_and_the_failed_request_a_branch() {
    let fx = write();
    let out = render(&fx);
    let dir = format!("octofriend/{B}");
    let (leaf, fork) = fx.b_branch;
    let b = meta(&out.tree, &dir);
    let branches = b["branches"].as_array().expect("branches");
    assert_eq!(branches.len(), 1, "{}", b["branches"]);
    assert_eq!(branches[0]["name"], format!("branch-{leaf}"));
    assert_eq!(branches[0]["forkPoint"], fork.to_string());
    assert_eq!(branches[0]["leaf"], leaf.to_string());
    let t = read(&out.tree, &format!("{dir}/transcript.md"));
    assert!(!t.contains("Bravo second prompt, before the edit"), "{t}");
    assert!(t.contains("Bravo second prompt, edited"), "{t}");
    let bt = read(
        &out.tree,
        &format!("{dir}/branches/branch-{leaf}/transcript.md"),
    );
    assert!(bt.contains("Bravo first reply"), "{bt}");
    assert!(bt.contains("Bravo second prompt, before the edit"), "{bt}");
    assert!(bt.contains("Request failed."), "{bt}");
    assert!(!bt.contains("Bravo edited reply"), "{bt}");
    // Events, the compaction summary and the order they came in.
    let kinds: Vec<(String, String, String)> = messages(&out.tree, &dir)
        .iter()
        .map(|x| {
            let s = |k: &str| x[k].as_str().unwrap_or_default().to_string();
            (s("role"), s("kind"), s("content"))
        })
        .collect();
    let k = |r: &str, kind: &str, c: &str| (r.to_string(), kind.to_string(), c.to_string());
    assert_eq!(
        kinds,
        [
            k("user", "", "Bravo first prompt"),
            k("assistant", "", "Bravo first reply"),
            k("user", "", "Bravo second prompt, edited"),
            k("assistant", "", "Bravo edited reply"),
            k("system", "event", "Bravo note: switched to Vim mode"),
            k("user", "", "Bravo third prompt"),
            k("system", "event", "Compaction failed."),
            k(
                "system",
                "compactionSummary",
                "Bravo summary: the earlier work"
            ),
            k("assistant", "", "Bravo final reply"),
        ]
    );
    // The abandoned reply counts once; the shared prefix not again.
    let c = &b["cost"];
    assert_eq!(stores::tokens(c).0, Some(90), "{c}");
    assert_eq!(stores::tokens(c).1, Some(45), "{c}");
}

#[test]
fn odd_rows_cost_warnings_not_the_session() {
    let fx = write();
    let out = render(&fx);
    let dir = format!("octofriend/{C}");
    let c = meta(&out.tree, &dir);
    let w = c["warnings"].to_string();
    assert!(
        w.contains("1 llm_irs rows could not be parsed: json is not JSON"),
        "{w}"
    );
    assert!(
        w.contains("1 llm_irs rows could not be parsed: unknown role"),
        "{w}"
    );
    assert!(w.contains("its history item has no payload"), "{w}");
    assert!(
        w.contains("model_json values could not be parsed: not JSON"),
        "{w}"
    );
    assert!(
        w.contains("1 llm_irs rows of unknown version \\\"octo-llm-ir/v9\\\""),
        "{w}"
    );
    let m = messages(&out.tree, &dir);
    assert_eq!(m[0]["content"], "Charlie prompt before");
    assert_eq!(m[1]["label"], "unparsed llm_ir");
    assert_eq!(m[2]["content"], "Charlie future prompt");
    assert_eq!(m[3]["label"], "unparsed llm_ir");
    assert_eq!(
        m.last().expect("a message")["content"],
        "Charlie reply after"
    );
    // The other sessions carry none of it.
    let a = meta(&out.tree, &format!("octofriend/{A}"));
    assert_eq!(a["warnings"], json!([]), "{}", a["warnings"]);
}

/// A second database that is no database (given with `--store`) is one line in `doctor`;
/// the sessions of the first still render.
#[test]
fn a_garbage_database_costs_its_own_sessions_only() {
    let fx = write();
    let bad = fx.home.path().join("elsewhere");
    put(
        &bad,
        DB_FILE,
        "this is not a SQLite database at all, just text\n".repeat(100),
    );
    let store = format!("octofriend={}", bad.display());
    let tmp = tempfile::tempdir().expect("tmp");
    let tree = tmp.path().join("tree");
    let o = fx
        .home
        .command(&["render", tree.to_str().expect("utf-8"), "--store", &store])
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    check_tree(&tree, &fx);
    let text = stdout(&fx.home.sessfs(&["doctor", "--store", &store]));
    assert!(
        text.contains(&format!(
            "{}: not a SQLite database",
            bad.join(DB_FILE).display()
        )),
        "{text}"
    );
}

const DB_FILE: &str = "sqlite.db";

#[test]
fn keys_launch_arguments_and_the_recall_list_are_never_read() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_nowhere(&out.tree, RECALL);
    stores::assert_nowhere(&out.tree, "api.synthetic.new");
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

/// A new node under the active leaf only appends to the transcript.
#[test]
fn a_new_turn_only_appends_to_the_transcript() {
    let fx = write();
    let dir = format!("octofriend/{A}");
    let before = render(&fx);
    let t0 = read(&before.tree, &format!("{dir}/transcript.md"));
    append_prompt(&fx, "Alpha prompt four: and the docs");
    let after = render(&fx);
    let t1 = read(&after.tree, &format!("{dir}/transcript.md"));
    assert!(t1.contains("Alpha prompt four: and the docs"), "{t1}");
    let first = t0.find("### ").expect("a message");
    assert!(t1[first..].starts_with(&t0[first..]), "{t1}");
}

/// A prompt node under A's newest node, as the next `insertHistoryItems` writes it.
fn append_prompt(fx: &Fixture, text: &str) {
    let mut w = Writer::open(fx.home.path());
    w.clock = T0 + 3_600_000;
    let (tid, launch, last): (i64, i64, i64) = w
        .c
        .query_row(
            "SELECT t.id, n.launch_id, max(n.id) FROM trees t JOIN tree_nodes n ON n.tree_id = t.id WHERE t.name = ?1",
            [A],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("tree");
    let mut t = Tree {
        id: tid,
        launch,
        last: Some(last),
    };
    let m = model_json(MODEL);
    w.append(&mut t, A, Some(last), vec![user(text)], &m);
}

#[test]
fn doctor_names_octofriend_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(text.contains("octofriend 3 sessions"), "{text}");
    assert!(text.contains(".local/share/octofriend/sqlite.db"), "{text}");
}

#[test]
fn mounted_database_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot, |m: &Mount| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["octofriend"], 9, SECRET, &format!("octofriend/{A}"));
    });
}

/// Octofriend writes each turn's nodes as it goes: a new prompt shows within a second.
#[test]
fn a_new_node_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("octofriend/{A}/transcript.md"));
    assert!(stores::file_contains(&t, "Alpha reply three: done"));
    append_prompt(&fx, "Alpha fresh prompt after the mount");
    stores::assert_within_a_second("new node", || {
        stores::file_contains(&t, "Alpha fresh prompt after the mount")
    });
}

/// The bundled sample (`fixtures/home/.local/share/octofriend/sqlite.db`, written by
/// `scripts/make-samples`): its lines in the one session, no warning.
#[test]
fn bundled_sample_shows_the_session() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-octofriend-samples")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(stores::entries(&tree, "octofriend"), 1);
    let dir = std::fs::read_dir(tree.join("octofriend"))
        .expect("dir")
        .flatten()
        .next()
        .expect("a session")
        .file_name();
    let dir = format!("octofriend/{}", dir.to_string_lossy());
    stores::assert_session_holds(
        &tree,
        &dir,
        &[
            "Which endpoints of the API have no tests?",
            "The router lists the endpoints; the tests import them by name.",
            "Two endpoints have no tests: `DELETE /orders/:id` and `GET /health`.",
        ],
        &["src/routes/orders.ts", "tests/orders.test.ts"],
    );
    let m = meta(&tree, &dir);
    assert_eq!(m["warnings"], json!([]), "{}", m["warnings"]);
    assert_eq!(m["cwd"], "/home/demo/shop-api");
}
