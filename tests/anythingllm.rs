//! AnythingLLM's `anythingllm.db`, built here from AnythingLLM's own DDL
//! (`fixtures/schema/anythingllm-20260520160208.sql`, from Mintplex-Labs/anything-llm
//! `server/prisma/migrations`) in the desktop app's storage folder, with rows written the way
//! its Prisma models write them (`server/models/workspaceChats.js`, `workspaceThread.js`):
//! times in epoch milliseconds, booleans 0/1, `response` the JSON text of what a chat handler
//! saved (`stream.js`, `apiChatHandler.js`, the agents' `chat-history.js`); rendered with
//! `sessfs render` and mounted once.
//!
//! Every expected value comes from the rows written below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, shape, shapes, Rendered};
use common::{stdout, Home, Mount};
use rusqlite::types::Value as Sql;
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::path::Path;

const DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/anythingllm-20260520160208.sql"
));

/// A key planted in the database's secret tables and in the files beside it.
const SECRET: &str = "sk-PLANTEDanythingllmKeyDoNotRead0000000";
const STORAGE: &str = ".config/anythingllm-desktop/storage";
const DB: &str = ".config/anythingllm-desktop/storage/anythingllm.db";
/// 2026-05-28T20:26:40Z, in milliseconds as Prisma keeps `DateTime` in SQLite.
const T0: i64 = 1_780_000_000_000;

const ALPHA_PROMPT: &str = "Alpha system prompt: answer from the docs.";
const ALPHA_EVENT: &str = "AnythingLLM workspace \"Alpha Docs\" (alpha-docs)";
const ALPHA_SETTINGS: &str =
    "chat mode query; chat model openai gpt-4o-mini; agent model anthropic claude-sonnet-4-5";
const HIDDEN: &str = "Hidden in AnythingLLM (include = false): cleared with /reset or deleted, \
                      a refusal, or an unfinished @agent turn; the model no longer sees it";
const NO_REPLY: &str = "AnythingLLM saved no reply to this prompt";
const THREAD_ONE: &str = "alpha-docs@thread-t-one";
const THREAD_TWO: &str = "alpha-docs@thread-t-two";
const USER_TWO: &str = "alpha-docs@user-2";
const API: &str = "alpha-docs@api-sess-42";
const ORPHAN: &str = "bravo-lab@thread#99";

fn create(path: &Path) -> Connection {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    let c = Connection::open(path).expect("db");
    c.execute_batch(DDL).expect("ddl");
    c
}

fn workspace(c: &Connection, id: i64, name: &str, slug: &str, settings: bool) {
    c.execute(
        "INSERT INTO workspaces(id, name, slug, createdAt, lastUpdatedAt) VALUES(?1, ?2, ?3, ?4, ?4)",
        params![id, name, slug, T0],
    )
    .expect("workspace");
    if settings {
        c.execute(
            "UPDATE workspaces SET openAiPrompt = ?1, chatProvider = 'openai', chatModel = 'gpt-4o-mini',
             chatMode = 'query', agentProvider = 'anthropic', agentModel = 'claude-sonnet-4-5' WHERE id = ?2",
            params![ALPHA_PROMPT, id],
        )
        .expect("settings");
    }
}

fn thread(c: &Connection, id: i64, ws: i64, name: &str, slug: &str, user: Option<i64>, at: i64) {
    c.execute(
        "INSERT INTO workspace_threads(id, name, slug, workspace_id, user_id, createdAt, lastUpdatedAt)
         VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?6)",
        params![id, name, slug, ws, user, at],
    )
    .expect("thread");
}

/// Where a row belongs: its workspace, thread, user and API session.
#[derive(Clone, Copy, Default)]
struct In<'a> {
    ws: i64,
    thread: Option<i64>,
    user: Option<i64>,
    api: Option<&'a str>,
}

/// `WorkspaceChats.new`: one row, `response` the JSON text (or anything, for a torn one).
fn row(
    c: &Connection,
    at: In<'_>,
    prompt: &str,
    response: &str,
    include: bool,
    created: Sql,
) -> i64 {
    c.execute(
        "INSERT INTO workspace_chats(workspaceId, prompt, response, include, user_id, thread_id,
         api_session_id, createdAt, lastUpdatedAt) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
        params![at.ws, prompt, response, include, at.user, at.thread, at.api, created],
    )
    .expect("chat");
    c.last_insert_rowid()
}

fn ms(t: i64) -> Sql {
    Sql::Integer(t)
}

/// `updateFeedbackScore`.
fn rate(c: &Connection, id: i64, good: bool) {
    c.execute(
        "UPDATE workspace_chats SET feedbackScore = ?1 WHERE id = ?2",
        params![good, id],
    )
    .expect("feedback");
}

/// An `@agent` turn as `chat-history.js` saves it: the prompt's row first (`include` false,
/// `response` `{}`), then the reply upserted into it.
fn agent_turn(c: &Connection, at: In<'_>, prompt: &str, response: &Value, created: i64) -> i64 {
    let id = row(c, at, prompt, "{}", false, ms(created));
    c.execute(
        "UPDATE workspace_chats SET response = ?1, include = 1, lastUpdatedAt = ?2 WHERE id = ?3",
        params![response.to_string(), created + 9_000, id],
    )
    .expect("upsert");
    id
}

fn metrics(prompt: u64, completion: u64, model: &str, cost: Option<f64>) -> Value {
    let mut m = json!({"prompt_tokens": prompt, "completion_tokens": completion,
        "total_tokens": prompt + completion, "outputTps": 20.5, "duration": 2.1, "model": model,
        "provider": "OpenAiLLM"});
    if let Some(c) = cost {
        m["totalCost"] = json!(c);
    }
    m
}

fn image() -> String {
    format!("data:image/png;base64,{}", "A".repeat(4000))
}

fn write() -> Home {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let c = create(&h.join(DB));
    // Multi-user mode's second user (foreign keys hold: AnythingLLM's Prisma enforces them).
    c.execute(
        "INSERT INTO users(id, username, password, role) VALUES(2, 'bob', ?1, 'default')",
        [format!("{SECRET}-hash")],
    )
    .expect("user");
    workspace(&c, 1, "Alpha Docs", "alpha-docs", true);
    workspace(&c, 2, "Bravo Lab", "bravo-lab", false);
    let alpha = In {
        ws: 1,
        ..In::default()
    };

    // --- Alpha's default chat: a row cleared by /reset, a query answered from a chunk with
    // reasoning, usage, model and AnythingLLM's cost, rated good; a prompt with a screenshot
    // whose reply has tokens but no cost, rated bad, timed by SQLite's own text default.
    let r =
        json!({"text": "Alpha cleared answer", "sources": [], "type": "chat", "attachments": []});
    row(
        &c,
        alpha,
        "Alpha cleared prompt",
        &r.to_string(),
        false,
        ms(T0 - 60_000),
    );
    let r = json!({
        "text": "<think>Alpha reasoning about backups</think>\n\nAlpha answer one: back up nightly.",
        "sources": [{"id": "d1", "title": "guide.md", "chunkSource": "localfile://guide.md",
                     "url": "file:///docs/guide.md", "score": 0.9123,
                     "text": "Alpha chunk: nightly backups at 02:00.", "wordCount": 6}],
        "type": "query", "attachments": [],
        "metrics": {"prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280,
                    "outputTps": 40, "duration": 2, "model": "gpt-4o-mini", "provider": "OpenAiLLM",
                    "timestamp": "2026-05-28T20:26:43.500Z", "inputCost": 0.00018,
                    "outputCost": 0.000048, "totalCost": 0.000228}});
    let a1 = row(
        &c,
        alpha,
        "Alpha prompt one: what does the guide say about backups?",
        &r.to_string(),
        true,
        ms(T0),
    );
    rate(&c, a1, true);
    let r = json!({"text": "Alpha answer two.", "sources": [], "type": "query",
        "attachments": [{"name": "shot.png", "mime": "image/png", "contentString": image()}],
        "metrics": metrics(900, 20, "gpt-4o-mini", None)});
    let a2 = row(
        &c,
        alpha,
        "Alpha prompt two: and this screenshot?",
        &r.to_string(),
        true,
        Sql::Text("2026-05-28 20:30:00".into()),
    );
    rate(&c, a2, false);

    // --- Thread one, never renamed: an @agent chart, a clarifying-question survey, and an
    // @agent turn that never finished (its pre-registered row only).
    thread(&c, 1, 1, "Thread", "t-one", None, T0 + 600_000);
    let t1 = In {
        ws: 1,
        thread: Some(1),
        ..In::default()
    };
    let chart = json!({"type": "bar", "dataset": "[{\"month\":\"Jan\",\"sales\":3}]",
        "title": "Alpha sales", "caption": "Alpha chart caption"});
    let r = json!({"sources": [], "text": chart.to_string(), "type": "rechartVisualize",
        "attachments": [], "metrics": metrics(5000, 300, "claude-sonnet-4-5", Some(0.0195))});
    agent_turn(
        &c,
        t1,
        "Alpha chart prompt: plot the sales",
        &r,
        T0 + 610_000,
    );
    let r = json!({"text": "Alpha survey answer.", "sources": [], "type": "chat", "attachments": [],
        "metrics": metrics(400, 40, "claude-sonnet-4-5", Some(0.0018)),
        "clarifyingQuestions": [{"id": "s1",
            "questions": [{"question": "Which region?", "options": ["North", "South", "East"]},
                          {"question": "Which year?"}],
            "result": {"answers": [{"answer": ["North", "South"]}, {"skipped": true}]}}]});
    agent_turn(&c, t1, "Alpha survey prompt", &r, T0 + 620_000);
    row(
        &c,
        t1,
        "@agent Alpha unfinished",
        "{}",
        false,
        ms(T0 + 630_000),
    );

    // --- Thread two, of user 2 (multi-user mode): an @agent turn with a web citation, a
    // generated file and a scheduled job.
    thread(
        &c,
        2,
        1,
        "Alpha release thread",
        "t-two",
        Some(2),
        T0 + 700_000,
    );
    let t2 = In {
        ws: 1,
        thread: Some(2),
        user: Some(2),
        ..In::default()
    };
    let r = json!({"text": "Alpha release reply.", "type": "chat", "attachments": [],
        "sources": [{"id": "web-1", "title": "Changelog", "chunkSource": "link://https://example.test/changelog",
                     "text": "Alpha citation text", "score": null}],
        "metrics": metrics(7000, 500, "claude-sonnet-4-5", Some(0.0285)),
        "outputs": [
            {"type": "DocxFileDownload", "payload": {"filename": "notes.docx",
             "storageFilename": "docx-1b2c.docx", "fileSize": 2048}},
            {"type": "scheduledJobCreated", "payload": {"jobId": 4, "jobName": "Weekly notes",
             "schedule": "0 9 * * 1", "nextRun": "2026-06-01T09:00:00.000Z"}}]});
    agent_turn(
        &c,
        t2,
        "@agent Alpha release: draft the notes",
        &r,
        T0 + 710_000,
    );

    // --- User 2's default chat: a reply without metrics.
    let u2 = In {
        ws: 1,
        user: Some(2),
        ..In::default()
    };
    let r = json!({"text": "Alpha user two reply", "sources": [], "type": "chat",
        "attachments": [], "metrics": {}});
    row(
        &c,
        u2,
        "Alpha user two prompt",
        &r.to_string(),
        true,
        ms(T0 + 800_000),
    );

    // --- A developer-API session's agent turn (apiChatHandler.js): thoughts and a file.
    let api = In {
        ws: 1,
        api: Some("sess-42"),
        ..In::default()
    };
    let r = json!({"text": "Alpha api reply", "sources": [], "attachments": [], "type": "chat",
        "thoughts": ["Alpha thought: searching the docs", "Alpha thought: reading guide.md"],
        "outputs": [{"filename": "api.csv", "storageFilename": "csv-9f.csv", "fileSize": 100}],
        "metrics": metrics(300, 30, "gpt-4o-mini", Some(0.000063))});
    row(
        &c,
        api,
        "@agent Alpha api prompt",
        &r.to_string(),
        true,
        ms(T0 + 900_000),
    );

    // --- Bravo: a good exchange and a torn response in its default chat; chats of a thread
    // whose row is gone.
    let bravo = In {
        ws: 2,
        ..In::default()
    };
    let r = json!({"text": "Bravo good reply", "sources": [], "type": "chat", "attachments": []});
    row(
        &c,
        bravo,
        "Bravo good prompt",
        &r.to_string(),
        true,
        ms(T0 + 1_000_000),
    );
    row(
        &c,
        bravo,
        "Bravo torn prompt",
        "{\"text\": \"Bravo torn respo",
        true,
        ms(T0 + 1_010_000),
    );
    let lost = In {
        ws: 2,
        thread: Some(99),
        ..In::default()
    };
    let r = json!({"text": "Bravo orphan reply", "sources": [], "type": "chat", "attachments": []});
    row(
        &c,
        lost,
        "Bravo orphan prompt",
        &r.to_string(),
        true,
        ms(T0 + 1_100_000),
    );

    // Secrets AnythingLLM keeps in the same file.
    c.execute_batch(&format!(
        "INSERT INTO api_keys(name, secret) VALUES('dev', '{SECRET}-api');
         INSERT INTO system_settings(label, value) VALUES('OpenAiKey', '{SECRET}-setting');
         INSERT INTO browser_extension_api_keys(key, user_id, lastUpdatedAt) VALUES('{SECRET}-ext', 2, {T0});
         INSERT INTO temporary_auth_tokens(token, userId, expiresAt) VALUES('{SECRET}-tmp', 2, {T0});
         INSERT INTO recovery_codes(user_id, code_hash) VALUES(2, '{SECRET}-recovery');
         INSERT INTO password_reset_tokens(user_id, token, expiresAt) VALUES(2, '{SECRET}-reset', {T0});
         INSERT INTO desktop_mobile_devices(deviceOs, deviceName, token) VALUES('ios', 'phone', '{SECRET}-device');"
    ))
    .expect("secrets");
    drop(c);
    // ... and beside it: the server's .env, the signing keys, the MCP servers.
    put(
        &h,
        &format!("{STORAGE}/.env"),
        format!("OPEN_AI_KEY='{SECRET}'\n"),
    );
    put(&h, &format!("{STORAGE}/comkey/ipc-priv.pem"), SECRET);
    put(
        &h,
        &format!("{STORAGE}/plugins/anythingllm_mcp_servers.json"),
        json!({"mcpServers": {"x": {"command": "x", "env": {"TOKEN": SECRET}}}}).to_string(),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    home
}

fn render(home: &Home) -> Rendered {
    stores::render(home, "sessfs-anythingllm", &[])
}

fn dir(id: &str) -> String {
    format!("anythingllm/{id}")
}

fn check_tree(tree: &Path) {
    stores::assert_session_holds(
        tree,
        &dir("alpha-docs"),
        &[
            "Alpha prompt one: what does the guide say about backups?",
            "Alpha reasoning about backups",
            "Alpha answer two.",
        ],
        &[] as &[&str],
    );
    stores::assert_session_holds(
        tree,
        &dir(THREAD_TWO),
        &["Alpha release reply.", "Alpha citation text"],
        &[] as &[&str],
    );
    stores::assert_session_holds(
        tree,
        &dir("bravo-lab"),
        &["Bravo good reply"],
        &[] as &[&str],
    );
}

#[test]
fn the_default_chat_shows_prompts_sources_reasoning_usage_and_ratings() {
    let home = write();
    let out = render(&home);
    check_tree(&out.tree);
    assert_eq!(stores::entries(&out.tree, "anythingllm"), 7);
    let m = messages(&out.tree, &dir("alpha-docs"));
    assert_eq!(
        shapes(&m),
        [
            shape("system", "event", &format!("{ALPHA_EVENT}; {ALPHA_SETTINGS}")),
            shape("system", "context", ALPHA_PROMPT),
            shape("user", "", "Alpha cleared prompt"),
            shape("assistant", "", "Alpha cleared answer"),
            shape("system", "event", HIDDEN),
            shape(
                "user",
                "",
                "Alpha prompt one: what does the guide say about backups?"
            ),
            shape(
                "system",
                "context",
                "**guide.md** · localfile://guide.md · score 0.91\n\nAlpha chunk: nightly backups at 02:00."
            ),
            shape("assistant", "", "Alpha answer one: back up nightly."),
            shape("system", "event", "The user rated this reply good"),
            shape(
                "user",
                "",
                "Alpha prompt two: and this screenshot?\n\n[image: shot.png, image/png, 3.0 KB]"
            ),
            shape("assistant", "", "Alpha answer two."),
            shape("system", "event", "The user rated this reply bad"),
        ]
    );
    assert_eq!(m[1]["label"], "system prompt");
    assert_eq!(m[6]["label"], "sources");
    assert_eq!(m[7]["thinking"], "Alpha reasoning about backups");
    assert_eq!(m[7]["model"], "gpt-4o-mini");
    assert_eq!(m[5]["timestamp"], "2026-05-28T20:26:40.000Z");
    assert_eq!(m[7]["timestamp"], "2026-05-28T20:26:43.500Z");
    assert_eq!(m[8]["timestamp"], "2026-05-28T20:26:43.500Z");
    assert_eq!(m[9]["timestamp"], "2026-05-28T20:30:00.000Z");
    assert_eq!(m[7]["tokenUsage"]["inputTokens"], 1200);
    assert_eq!(m[7]["tokenUsage"]["outputTokens"], 80);
    assert_eq!(m[7]["cost"], 0.000228);
    assert_eq!(m[10]["tokenUsage"]["inputTokens"], 900);
    assert!(m[10]["cost"].is_null());
    assert!(m[3]["tokenUsage"].is_null());
    // The screenshot is measured, never kept.
    stores::assert_nowhere(&out.tree, &"A".repeat(200));
    let t = stores::transcript(&out.tree, &dir("alpha-docs"));
    assert!(
        !t.contains("think>") && !t.contains("think&gt;"),
        "a tag left raw:\n{t}"
    );

    let a = meta(&out.tree, &dir("alpha-docs"));
    assert_eq!(a["title"], "Alpha Docs");
    assert_eq!(a["sessionId"], "alpha-docs");
    assert_eq!(a["createdAt"], "2026-05-28T20:25:40.000Z");
    assert_eq!(a["updatedAt"], "2026-05-28T20:30:00.000Z");
    assert_eq!(a["model"], "gpt-4o-mini");
    assert_eq!(a["tags"], json!(["workspace:Alpha Docs"]));
    assert!(a["cwd"].is_null());
    assert_eq!(a["warnings"], json!([]));
    // AnythingLLM's own cost of the first reply, the second priced from the model's list
    // price (900 in, 20 out at $0.15 and $0.60 per million).
    stores::assert_cost(
        &out.tree,
        &dir("alpha-docs"),
        (2100, 100, 0, 0, 0.000228 + 0.000135 + 0.000012),
    );
    assert_eq!(a["cost"]["estimated"], true);
}

#[test]
fn threads_are_titled_by_name_or_first_prompt_and_keep_charts_and_questions() {
    let home = write();
    let out = render(&home);
    let m = messages(&out.tree, &dir(THREAD_ONE));
    assert_eq!(
        shapes(&m),
        [
            shape(
                "system",
                "event",
                &format!("{ALPHA_EVENT}; thread \"Thread\"; {ALPHA_SETTINGS}")
            ),
            shape("system", "context", ALPHA_PROMPT),
            shape("user", "", "Alpha chart prompt: plot the sales"),
            shape(
                "assistant",
                "",
                "Alpha chart caption\n\n**Chart** · bar · Alpha sales\n\n```json\n[{\"month\":\"Jan\",\"sales\":3}]\n```"
            ),
            shape("user", "", "Alpha survey prompt"),
            shape(
                "assistant",
                "",
                "Alpha survey answer.\n\n**Clarifying questions**\n\n\
                 Q: Which region?\nA: North, South\nQ: Which year?\nA: [user skipped]"
            ),
            shape("user", "", "@agent Alpha unfinished"),
            shape("system", "event", NO_REPLY),
            shape("system", "event", HIDDEN),
        ]
    );
    assert_eq!(m[3]["model"], "claude-sonnet-4-5");
    let t = meta(&out.tree, &dir(THREAD_ONE));
    // `Thread` is the name of a thread never renamed: its first prompt names it.
    assert_eq!(t["title"], "Alpha chart prompt: plot the sales");
    assert_eq!(t["createdAt"], "2026-05-28T20:36:40.000Z");
    stores::assert_cost(&out.tree, &dir(THREAD_ONE), (5400, 340, 0, 0, 0.0213));
    assert_eq!(t["cost"]["estimated"], false);
}

#[test]
fn an_agent_reply_shows_its_citations_outputs_and_the_runs_usage() {
    let home = write();
    let out = render(&home);
    let m = messages(&out.tree, &dir(THREAD_TWO));
    assert_eq!(
        shapes(&m),
        [
            shape(
                "system",
                "event",
                &format!("{ALPHA_EVENT}; thread \"Alpha release thread\"; {ALPHA_SETTINGS}")
            ),
            shape("system", "context", ALPHA_PROMPT),
            shape("user", "", "@agent Alpha release: draft the notes"),
            shape(
                "system",
                "context",
                "**Changelog** · link://https://example.test/changelog\n\nAlpha citation text"
            ),
            shape(
                "assistant",
                "",
                "Alpha release reply.\n\n**Output** · DocxFileDownload: notes.docx (2.0 KB)\n\n\
                 **Output** · scheduledJobCreated: Weekly notes (job #4) · schedule: 0 9 * * 1 · \
                 next run: 2026-06-01T09:00:00.000Z"
            ),
        ]
    );
    assert!(m[4]["toolCalls"].as_array().is_none_or(|c| c.is_empty()));
    let t = meta(&out.tree, &dir(THREAD_TWO));
    assert_eq!(t["title"], "Alpha release thread");
    assert_eq!(t["tags"], json!(["workspace:Alpha Docs", "user:2"]));
    assert_eq!(t["model"], "claude-sonnet-4-5");
    stores::assert_cost(&out.tree, &dir(THREAD_TWO), (7000, 500, 0, 0, 0.0285));
}

#[test]
fn api_sessions_and_each_users_default_chat_are_sessions_of_their_own() {
    let home = write();
    let out = render(&home);
    let m = messages(&out.tree, &dir(API));
    assert_eq!(
        shapes(&m),
        [
            shape(
                "system",
                "event",
                &format!("{ALPHA_EVENT}; API session sess-42; {ALPHA_SETTINGS}")
            ),
            shape("system", "context", ALPHA_PROMPT),
            shape("user", "", "@agent Alpha api prompt"),
            shape(
                "assistant",
                "",
                "Alpha api reply\n\n**Output** · file: api.csv (100 B)"
            ),
        ]
    );
    assert_eq!(
        m[3]["thinking"],
        "Alpha thought: searching the docs\nAlpha thought: reading guide.md"
    );
    let a = meta(&out.tree, &dir(API));
    assert_eq!(a["title"], "@agent Alpha api prompt");
    assert_eq!(a["tags"], json!(["workspace:Alpha Docs", "api-session"]));
    stores::assert_cost(&out.tree, &dir(API), (300, 30, 0, 0, 0.000063));

    let m = messages(&out.tree, &dir(USER_TWO));
    assert_eq!(
        shapes(&m),
        [
            shape(
                "system",
                "event",
                &format!("{ALPHA_EVENT}; user 2; {ALPHA_SETTINGS}")
            ),
            shape("system", "context", ALPHA_PROMPT),
            shape("user", "", "Alpha user two prompt"),
            shape("assistant", "", "Alpha user two reply"),
        ]
    );
    let u = meta(&out.tree, &dir(USER_TWO));
    assert_eq!(u["title"], "Alpha Docs");
    assert_eq!(u["tags"], json!(["workspace:Alpha Docs", "user:2"]));
    // The reply keeps no token counts: what it cost is unknown, not $0.
    stores::assert_cost(&out.tree, &dir(USER_TWO), stores::NOT_RECORDED);
    // The workspace's model is the session's model when no reply names one.
    assert_eq!(u["model"], "gpt-4o-mini");
}

#[test]
fn a_torn_response_and_a_lost_thread_cost_warnings_while_the_rest_loads() {
    let home = write();
    let out = render(&home);
    let m = messages(&out.tree, &dir("bravo-lab"));
    assert_eq!(
        shapes(&m),
        [
            shape(
                "system",
                "event",
                "AnythingLLM workspace \"Bravo Lab\" (bravo-lab); chat mode chat"
            ),
            shape("user", "", "Bravo good prompt"),
            shape("assistant", "", "Bravo good reply"),
            shape("user", "", "Bravo torn prompt"),
            shape("system", "context", "{\"text\": \"Bravo torn respo"),
        ]
    );
    assert_eq!(m[4]["label"], "unparsed response");
    let w = stores::warnings(&out.tree, &dir("bravo-lab"));
    assert!(w.contains("response is not JSON"), "{w}");
    let m = messages(&out.tree, &dir(ORPHAN));
    assert_eq!(
        shapes(&m),
        [
            shape(
                "system",
                "event",
                "AnythingLLM workspace \"Bravo Lab\" (bravo-lab); chat mode chat"
            ),
            shape("user", "", "Bravo orphan prompt"),
            shape("assistant", "", "Bravo orphan reply"),
        ]
    );
    let w = stores::warnings(&out.tree, &dir(ORPHAN));
    assert!(w.contains("thread 99 not found"), "{w}");
    for id in ["alpha-docs", THREAD_ONE, THREAD_TWO, USER_TWO, API] {
        assert_eq!(meta(&out.tree, &dir(id))["warnings"], json!([]), "{id}");
    }
}

/// A file in the macOS place that is no database costs only itself: doctor names it, and the
/// chats of the real database still load.
#[test]
fn a_garbage_database_beside_a_good_one_hides_nothing() {
    let home = write();
    put(
        home.path(),
        "Library/Application Support/anythingllm-desktop/storage/anythingllm.db",
        "SQLite format 3\0 torn garbage, not a database",
    );
    let out = render(&home);
    check_tree(&out.tree);
    assert_eq!(stores::entries(&out.tree, "anythingllm"), 7);
    let text = stdout(&home.sessfs(&["doctor"]));
    assert!(
        text.contains("problem: ")
            && text.contains(
                "Library/Application Support/anythingllm-desktop/storage/anythingllm.db: not a SQLite database"
            ),
        "{text}"
    );
}

/// The server's `STORAGE_DIR` is read where the database sits there; `XDG_CONFIG_HOME` moves
/// the desktop app's folder.
#[test]
fn storage_dir_and_xdg_config_home_are_followed() {
    let home = write();
    let server = home.path().join("srv/storage");
    std::fs::create_dir_all(&server).expect("dir");
    std::fs::rename(home.path().join(DB), server.join("anythingllm.db")).expect("move");
    let tmp = tempfile::tempdir().expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("STORAGE_DIR", &server)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(stores::entries(&tree, "anythingllm"), 7);
    check_tree(&tree);
    let from = server.join("anythingllm.db").display().to_string();
    assert_eq!(
        meta(&tree, &dir("alpha-docs"))["source"]["paths"],
        json!([from])
    );

    let xdg = home.path().join("xdg");
    std::fs::create_dir_all(xdg.join("anythingllm-desktop/storage")).expect("dir");
    std::fs::rename(
        server.join("anythingllm.db"),
        xdg.join("anythingllm-desktop/storage/anythingllm.db"),
    )
    .expect("move");
    let tree = tmp.path().join("tree2");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("XDG_CONFIG_HOME", &xdg)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(stores::entries(&tree, "anythingllm"), 7);
}

#[test]
fn secret_tables_and_the_files_beside_the_database_are_never_shown() {
    let home = write();
    let out = render(&home);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_nowhere(&out.tree, "bob");
    stores::assert_list_hides(&home, SECRET, &[]);
}

#[test]
fn doctor_names_anythingllm_and_where_it_found_it() {
    let home = write();
    let text = stdout(&home.sessfs(&["doctor"]));
    assert!(text.contains("anythingllm 7 sessions"), "{text}");
    assert!(text.contains(DB), "{text}");
}

#[test]
fn mounted_database_sizes_erofs_and_store_untouched() {
    let home = write();
    stores::mounted_untouched(&home, Home::snapshot_stable, |m| {
        check_tree(m.path());
        stores::assert_mount_read_only(m, &["anythingllm"], 20, SECRET, &dir("alpha-docs"));
    });
}

/// While AnythingLLM runs: a new exchange, a `/reset` (every row of the chat set hidden) and
/// a new thread each show within a second.
#[test]
fn a_new_exchange_a_reset_and_a_new_thread_show_within_a_second() {
    let home = write();
    let m = Mount::new(&home, &[]);
    let t = m.path().join(dir("alpha-docs")).join("transcript.md");
    assert!(stores::file_contains(&t, "Alpha answer two."));
    let c = Connection::open(home.path().join(DB)).expect("db");
    let r = json!({"text": "Alpha fresh reply after the mount", "sources": [], "type": "chat",
        "attachments": []});
    let alpha = In {
        ws: 1,
        ..In::default()
    };
    row(
        &c,
        alpha,
        "Alpha fresh prompt",
        &r.to_string(),
        true,
        ms(T0 + 2_000_000),
    );
    stores::assert_within_a_second("new exchange", || {
        stores::file_contains(&t, "Alpha fresh reply after the mount")
    });
    let hidden = || {
        std::fs::read_to_string(&t)
            .map(|s| s.matches("Hidden in AnythingLLM").count())
            .unwrap_or(0)
    };
    assert_eq!(hidden(), 1);
    c.execute(
        "UPDATE workspace_chats SET include = 0 WHERE workspaceId = 1 AND thread_id IS NULL
         AND user_id IS NULL AND api_session_id IS NULL",
        [],
    )
    .expect("reset");
    stores::assert_within_a_second("reset", || hidden() == 4);
    thread(
        &c,
        3,
        1,
        "Alpha late thread",
        "t-three",
        None,
        T0 + 3_000_000,
    );
    let t3 = In {
        ws: 1,
        thread: Some(3),
        ..In::default()
    };
    row(
        &c,
        t3,
        "Alpha late prompt",
        &r.to_string(),
        true,
        ms(T0 + 3_000_000),
    );
    let t = m
        .path()
        .join(dir("alpha-docs@thread-t-three"))
        .join("transcript.md");
    stores::assert_within_a_second("new thread", || {
        stores::file_contains(&t, "Alpha late prompt")
    });
}

/// The bundled sample (`fixtures/home/.config/anythingllm-desktop/storage/anythingllm.db`,
/// written by `scripts/make-samples`): its lines in its two chats, no warning. The lines are
/// the sample's own text, copied from the rows the script writes.
#[test]
fn bundled_sample_shows_the_default_chat_and_the_thread() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::tempdir().expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(stores::entries(&tree, "anythingllm"), 2);
    let thread = "garden-planner@thread-8c1f4e2a-6b3d-4f7a-9e05-2d7c1b9a4f60";
    stores::assert_session_holds(
        &tree,
        &dir("garden-planner"),
        &[
            "When can I plant the tomatoes outside?",
            "Tomatoes go out after the last frost, around mid-May here.",
            "[image: bed.jpg, image/jpeg, 3.9 KB]",
            "The photo shows the bed against a south wall with no shade at noon.",
            "The user rated this reply good",
        ],
        &[] as &[&str],
    );
    stores::assert_session_holds(
        &tree,
        &dir(thread),
        &[
            "How much did the seeds cost last year?",
            "I found a supplier with cherry tomato seeds in stock",
            "**Output** · ExcelFileDownload: seed-order.xlsx (6.1 KB)",
        ],
        &[] as &[&str],
    );
    for id in ["garden-planner", thread] {
        let m = meta(&tree, &dir(id));
        assert_eq!(m["warnings"], json!([]), "{}", m["warnings"]);
    }
    assert_eq!(meta(&tree, &dir(thread))["title"], "Seed order");
    assert_eq!(
        meta(&tree, &dir("garden-planner"))["title"],
        "Garden Planner"
    );
}
