//! Dyad's `sqlite.db`, built here from Dyad's own DDL (`fixtures/schema/dyad-0049.sql`, from
//! dyad-sh/dyad `drizzle/0000` .. `0049`) in WAL mode as Dyad opens it, with rows written the
//! way a turn writes them: the prompt (`chat_turn_acceptance.ts`), the reply's placeholder
//! with its model and source commit, its content, then the approval and the commit
//! (`chat_stream_handlers.ts`, `response_processor.ts`); rendered with `sessfs render` and
//! mounted once.
//!
//! Every expected value comes from the rows written below, never from sessfs' parser.

mod common;

use common::stores::{self, messages, meta, put, shape, shapes, Rendered};
use common::{stdout, Home, Mount};
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::path::Path;

const DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/dyad-0049.sql"
));

/// A key planted in Dyad's `user-settings.json` and in the database's secret columns.
const SECRET: &str = "sk-PLANTEDdyadProviderKeyDoNotRead00000000";
const DB: &str = ".config/dyad/sqlite.db";
/// 2026-05-28T20:26:40Z, in seconds as Dyad's `unixepoch()` keeps times.
const T0: i64 = 1_780_000_000;

fn create(path: &Path) -> Connection {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    let c = Connection::open(path).expect("db");
    c.execute_batch(DDL).expect("ddl");
    c.pragma_update(None, "journal_mode", "WAL").expect("wal");
    c
}

fn app(c: &Connection, name: &str, path: &str) -> i64 {
    c.execute(
        "INSERT INTO apps(name, path, created_at, updated_at, neon_production_auth_cookie_secret)
         VALUES(?1, ?2, ?3, ?3, ?4)",
        params![name, path, T0, SECRET],
    )
    .expect("app");
    c.last_insert_rowid()
}

#[allow(clippy::too_many_arguments)]
fn chat(
    c: &Connection,
    app: i64,
    title: Option<&str>,
    created: i64,
    mode: Option<&str>,
    model_selection: Option<&str>,
    initial_commit: Option<&str>,
    favorite: bool,
) -> i64 {
    c.execute(
        "INSERT INTO chats(app_id, title, created_at, chat_mode, model_selection, initial_commit_hash, is_favorite)
         VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![app, title, created, mode, model_selection, initial_commit, favorite],
    )
    .expect("chat");
    c.last_insert_rowid()
}

/// The prompt row a turn accepts.
fn prompt(c: &Connection, chat: i64, content: &str, at: i64) -> i64 {
    c.execute(
        "INSERT INTO messages(chat_id, role, content, created_at) VALUES(?1, 'user', ?2, ?3)",
        params![chat, content, at],
    )
    .expect("prompt");
    c.last_insert_rowid()
}

/// The reply: its placeholder (empty content, the model, the app's commit), then its content.
fn reply(c: &Connection, chat: i64, content: &str, model: &str, source: &str, at: i64) -> i64 {
    c.execute(
        "INSERT INTO messages(chat_id, role, content, model, source_commit_hash, created_at)
         VALUES(?1, 'assistant', '', ?2, ?3, ?4)",
        params![chat, model, source, at],
    )
    .expect("placeholder");
    let id = c.last_insert_rowid();
    set(c, id, "content", content);
    id
}

fn set(c: &Connection, id: i64, column: &str, value: &str) {
    c.execute(
        &format!("UPDATE messages SET {column} = ?1 WHERE id = ?2"),
        params![value, id],
    )
    .expect("update");
}

struct Fixture {
    home: Home,
    a: i64,
    b: i64,
    c: i64,
    d: i64,
}

const ALPHA_REPLY: &str = "<think>Alpha thinking: a form with two fields</think>\n\n\
Alpha reply: adding the page.\n\n\
<dyad-write path=\"src/pages/Login.tsx\" description=\"Login page\">\n```tsx\n\
export const Login = () => <form>alpha-login-form</form>;\n```\n</dyad-write>\n\
<dyad-rename from=\"src/old.tsx\" to=\"src/new.tsx\"></dyad-rename>\n\
<dyad-delete path=\"src/unused.tsx\"></dyad-delete>\n\
<dyad-copy from=\"/m/.dyad/media/mock.png\" to=\"public/mock.png\" description=\"Upload mock\"></dyad-copy>\n\
<dyad-add-dependency packages=\"zod react-hook-form\"></dyad-add-dependency>\n\n\
Alpha after the changes.\n\n\
<dyad-chat-summary>Alpha summary line</dyad-chat-summary>";

const ALPHA_SQL: &str = "Alpha SQL reply.\n\n\
<dyad-execute-sql description=\"Create users\">\nCREATE TABLE alpha_users (id int);\n</dyad-execute-sql>\n\
<dyad-command type=\"rebuild\"></dyad-command>";

const BRAVO_REPLY: &str = "Bravo looking.\n\n\
<dyad-grep query=\"items\" include=\"src\">src/List.tsx:3: bravo-grep-hit &amp; more</dyad-grep>\n\
<dyad-read path=\"src/List.tsx\"></dyad-read>\n\
<dyad-mcp-tool-call server=\"docs\" tool=\"lookup\" call-id=\"call_b1\">\n{\"topic\":\"lists\"}\n</dyad-mcp-tool-call>\n\
<dyad-mcp-tool-result server=\"docs\" tool=\"lookup\" call-id=\"call_b1\">\nbravo-mcp-output\n</dyad-mcp-tool-result>\n\
<dyad-mcp-tool-call server=\"docs\" tool=\"fetch\" call-id=\"call_b2\">\n{\"url\":\"https://x\"}\n</dyad-mcp-tool-call>\n\
<dyad-mcp-tool-result server=\"docs\" tool=\"fetch\" call-id=\"call_b2\" is-error=\"true\">\nbravo-mcp-error\n</dyad-mcp-tool-result>\n\
<dyad-web-search query=\"bravo query\"></dyad-web-search>\n\
<dyad-web-search-result>bravo-web-result</dyad-web-search-result>\n\n\
<dyad-output type=\"error\" message=\"Tool 'run_build' failed: exit 1\">bravo build log</dyad-output>\n\n\
<dyad-status title=\"Running production build\" state=\"finished\">bravo-status-body</dyad-status>\n\n\
Bravo unfinished: <dyad-write path=\"src/cut.tsx\" description=\"cut\">\nexport const Cut";

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let c = create(&h.join(DB));

    // --- A: build mode; attachments, reasoning, every change a reply proposes, approved and
    // committed; then a SQL change the user rejected and a suggested command.
    let alpha = app(&c, "alpha-app", "alpha-app");
    let a = chat(
        &c,
        alpha,
        Some("Alpha: add a login page"),
        T0,
        Some("build"),
        Some(r#"{"name":"claude-sonnet-4-5","provider":"anthropic","effortLevel":"medium"}"#),
        Some("a0a0a0a"),
        true,
    );
    prompt(
        &c,
        a,
        "Alpha prompt: add a login page\n\n\
         <dyad-attachment name=\"mock.png\" type=\"image/png\" url=\"dyad-media://media/alpha-app/.dyad/media/mock.png\" \
         path=\"/m/.dyad/media/mock.png\" attachment-type=\"chat-context\"></dyad-attachment>\n\
         <dyad-attachment name=\"notes.txt\" type=\"text/plain\" url=\"dyad-media://media/alpha-app/.dyad/media/notes.txt\" \
         path=\"/m/.dyad/media/notes.txt\" attachment-type=\"chat-context\"></dyad-attachment>",
        T0 + 10,
    );
    let r = reply(&c, a, ALPHA_REPLY, "claude-sonnet-4-5", "a0a0a0a", T0 + 40);
    set(&c, r, "commit_hash", "a1a1a1a");
    set(&c, r, "approval_state", "approved");
    prompt(
        &c,
        a,
        "Alpha second prompt: store users in the database",
        T0 + 100,
    );
    let r = reply(&c, a, ALPHA_SQL, "claude-sonnet-4-5", "a1a1a1a", T0 + 130);
    set(&c, r, "approval_state", "rejected");

    // --- B: agent mode, an app at an absolute path, no title; searches, an MCP call and a
    // failed one with their results, Dyad's notes, a reply cut off inside a write.
    let bravo = app(&c, "bravo-app", "/srv/bravo");
    let b = chat(
        &c,
        bravo,
        None,
        T0 + 1000,
        Some("local-agent"),
        None,
        None,
        false,
    );
    prompt(&c, b, "Bravo prompt: why is the list empty?", T0 + 1000);
    reply(&c, b, BRAVO_REPLY, "gpt-5", "b0b0b0b", T0 + 1020);

    // --- C: a compaction summary, a row of a role Dyad never writes, a model selection and
    // an approval state that cannot be read.
    let charlie = app(&c, "charlie-app", "charlie-app");
    let cc = chat(
        &c,
        charlie,
        Some("Charlie"),
        T0 + 2000,
        Some("build"),
        Some("not json {"),
        None,
        false,
    );
    prompt(&c, cc, "Charlie prompt", T0 + 2000);
    let r = reply(
        &c,
        cc,
        "<dyad-compaction title=\"Conversation compacted\" state=\"finished\">Charlie summary of the early work</dyad-compaction>",
        "claude-sonnet-4-5",
        "c0c0c0c",
        T0 + 2010,
    );
    set(&c, r, "is_compaction_summary", "1");
    c.execute(
        "INSERT INTO messages(chat_id, role, content, created_at) VALUES(?1, 'system', 'Charlie odd row', ?2)",
        params![cc, T0 + 2020],
    )
    .expect("odd row");
    let r = reply(
        &c,
        cc,
        "Charlie reply <dyad-write path=\"c.txt\">charlie file</dyad-write>",
        "claude-sonnet-4-5",
        "c0c0c0c",
        T0 + 2030,
    );
    set(&c, r, "approval_state", "maybe");

    // --- D: a chat opened and never used: only its model selection names a model.
    let d = chat(
        &c,
        alpha,
        Some("Delta"),
        T0 + 3000,
        Some("ask"),
        Some(r#"{"name":"gemini-2.5-pro","provider":"google","effortLevel":"low"}"#),
        None,
        false,
    );

    // Secrets Dyad keeps beside the chats: MCP server environments and OAuth secrets.
    c.execute(
        "INSERT INTO mcp_servers(name, transport, env_json, oauth_client_secret) VALUES('x', 'stdio', ?1, ?2)",
        params![json!({ "API_KEY": SECRET }).to_string(), SECRET],
    )
    .expect("mcp");
    drop(c);

    put(
        &h,
        ".config/dyad/user-settings.json",
        json!({"providerSettings": {"openai": {"apiKey": {"value": SECRET}}}, "githubAccessToken": {"value": SECRET}})
            .to_string(),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture {
        home,
        a,
        b,
        c: cc,
        d,
    }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-dyad", &[])
}

fn check_tree(tree: &Path, fx: &Fixture) {
    stores::assert_session_holds(
        tree,
        &format!("dyad/{}", fx.a),
        &[
            "Alpha prompt: add a login page",
            "Alpha thinking: a form with two fields",
            "Alpha reply: adding the page.",
            "alpha-login-form",
            "Alpha SQL reply.",
        ],
        &["rejected: not applied"],
    );
    stores::assert_session_holds(
        tree,
        &format!("dyad/{}", fx.b),
        &["Bravo prompt: why is the list empty?", "Bravo looking."],
        &[
            "bravo-grep-hit & more",
            "bravo-mcp-output",
            "bravo-web-result",
        ],
    );
}

/// `(toolName, input, output, isError)` of every call of `m`.
fn calls(m: &Value) -> Vec<(String, Value, Value, Value)> {
    m["toolCalls"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    (
                        c["toolName"].as_str().unwrap_or_default().to_string(),
                        c["input"].clone(),
                        c["output"].clone(),
                        c["isError"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn call(name: &str, input: Value, output: Value, is_error: Value) -> (String, Value, Value, Value) {
    (name.to_string(), input, output, is_error)
}

#[test]
fn a_build_chat_shows_its_prompts_reasoning_and_the_changes_it_proposed() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "dyad"), 4);
    let m = messages(&out.tree, &format!("dyad/{}", fx.a));
    assert_eq!(
        shapes(&m),
        [
            shape(
                "system",
                "event",
                "Dyad chat: app alpha-app (alpha-app); mode build; model claude-sonnet-4-5 (anthropic, effort medium); started at commit a0a0a0a"
            ),
            shape(
                "user",
                "",
                "Alpha prompt: add a login page\n\n[image: mock.png, image/png]\n[attachment: notes.txt, text/plain]"
            ),
            shape("assistant", "", "Alpha reply: adding the page."),
            shape(
                "assistant",
                "",
                "Alpha after the changes.\n\n**chat summary**\n\nAlpha summary line"
            ),
            shape(
                "system",
                "event",
                "Dyad committed the changes as a1a1a1a (the app was at a0a0a0a)"
            ),
            shape(
                "user",
                "",
                "Alpha second prompt: store users in the database"
            ),
            shape("assistant", "", "Alpha SQL reply."),
            shape("assistant", "", "**command** · type: rebuild"),
        ]
    );
    assert_eq!(m[2]["thinking"], "Alpha thinking: a form with two fields");
    assert_eq!(m[2]["model"], "claude-sonnet-4-5");
    assert_eq!(m[2]["timestamp"], "2026-05-28T20:27:20.000Z");
    let ok = || (json!("approved"), json!(false));
    assert_eq!(
        calls(&m[2]),
        [
            call(
                "write",
                json!({"path": "src/pages/Login.tsx", "description": "Login page",
                       "content": "export const Login = () => <form>alpha-login-form</form>;"}),
                ok().0,
                ok().1
            ),
            call(
                "rename",
                json!({"from": "src/old.tsx", "to": "src/new.tsx"}),
                ok().0,
                ok().1
            ),
            call("delete", json!({"path": "src/unused.tsx"}), ok().0, ok().1),
            call(
                "copy",
                json!({"from": "/m/.dyad/media/mock.png", "to": "public/mock.png", "description": "Upload mock"}),
                ok().0,
                ok().1
            ),
            call(
                "add-dependency",
                json!({"packages": "zod react-hook-form"}),
                ok().0,
                ok().1
            ),
        ]
    );
    assert_eq!(
        calls(&m[6]),
        [call(
            "execute-sql",
            json!({"description": "Create users", "query": "CREATE TABLE alpha_users (id int);"}),
            json!("rejected: not applied"),
            json!(true)
        )]
    );
    // No tag is left as written (the transcript would show it escaped).
    let t = stores::transcript(&out.tree, &format!("dyad/{}", fx.a));
    assert!(
        !t.contains("dyad-attachment") && !t.contains("dyad-write") && !t.contains("think>"),
        "a tag left raw:\n{t}"
    );
    // The written file is shown as the file, in its language.
    let w = stores::read(&out.tree, &format!("dyad/{}/tools/0001-write.md", fx.a));
    assert!(
        w.contains("```tsx\nexport const Login = () => <form>alpha-login-form</form>;\n```\n")
            && !w.contains("````"),
        "{w}"
    );
}

#[test]
fn an_agent_reply_pairs_its_calls_with_their_results() {
    let fx = write();
    let out = render(&fx);
    let m = messages(&out.tree, &format!("dyad/{}", fx.b));
    assert_eq!(
        shapes(&m),
        [
            shape(
                "system",
                "event",
                "Dyad chat: app bravo-app (/srv/bravo); mode local-agent"
            ),
            shape("user", "", "Bravo prompt: why is the list empty?"),
            shape("assistant", "", "Bravo looking."),
            shape(
                "assistant",
                "",
                "**output** · type: error · message: Tool 'run_build' failed: exit 1\n\nbravo build log\n\n\
                 **status** · title: Running production build · state: finished\n\nbravo-status-body\n\n\
                 Bravo unfinished:"
            ),
        ]
    );
    assert_eq!(
        calls(&m[2]),
        [
            call(
                "grep",
                json!({"query": "items", "include": "src"}),
                json!("src/List.tsx:3: bravo-grep-hit & more"),
                json!(false)
            ),
            call(
                "read",
                json!({"path": "src/List.tsx"}),
                Value::Null,
                Value::Null
            ),
            call(
                "docs__lookup",
                json!({"topic": "lists"}),
                json!("bravo-mcp-output"),
                json!(false)
            ),
            call(
                "docs__fetch",
                json!({"url": "https://x"}),
                json!("bravo-mcp-error"),
                json!(true)
            ),
            call(
                "web-search",
                json!({"query": "bravo query"}),
                json!("bravo-web-result"),
                json!(false)
            ),
        ]
    );
    assert_eq!(m[2]["toolCalls"][2]["toolCallId"], "call_b1");
    assert_eq!(
        calls(&m[3]),
        [call(
            "write",
            json!({"path": "src/cut.tsx", "description": "cut", "content": "export const Cut"}),
            json!("[unfinished: the reply ended inside this tag]"),
            json!(true)
        )]
    );
    // No approval yet: the reply was cut off, and nothing was committed.
    assert!(!stores::transcript(&out.tree, &format!("dyad/{}", fx.b)).contains("committed"));
}

#[test]
fn title_times_model_tags_and_working_directory() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("dyad/{}", fx.a));
    assert_eq!(a["title"], "Alpha: add a login page");
    assert_eq!(a["sessionId"], fx.a.to_string());
    assert_eq!(a["createdAt"], "2026-05-28T20:26:40.000Z");
    assert_eq!(a["updatedAt"], "2026-05-28T20:28:50.000Z");
    assert_eq!(a["model"], "claude-sonnet-4-5");
    assert_eq!(
        a["tags"],
        json!(["app:alpha-app", "mode:build", "favorite"])
    );
    // A relative app path lives in ~/dyad-apps.
    let home = fx.home.path().display().to_string();
    assert_eq!(a["cwd"], format!("{home}/dyad-apps/alpha-app"));
    assert_eq!(a["warnings"], json!([]));
    let b = meta(&out.tree, &format!("dyad/{}", fx.b));
    assert_eq!(b["title"], "Bravo prompt: why is the list empty?");
    assert_eq!(b["cwd"], "/srv/bravo");
    assert_eq!(b["model"], "gpt-5");
    assert_eq!(b["tags"], json!(["app:bravo-app", "mode:local-agent"]));
    // No usage is kept: no tokens are counted.
    assert_eq!(b["cost"]["inputTokens"], 0);
    let d = meta(&out.tree, &format!("dyad/{}", fx.d));
    assert_eq!(d["title"], "Delta");
    assert_eq!(d["model"], "gemini-2.5-pro");
    assert_eq!(d["createdAt"], "2026-05-28T21:16:40.000Z");
}

#[test]
fn a_compaction_summary_is_marked_and_odd_rows_cost_a_warning() {
    let fx = write();
    let out = render(&fx);
    let dir = format!("dyad/{}", fx.c);
    let m = messages(&out.tree, &dir);
    assert_eq!(
        shapes(&m),
        [
            shape("system", "event", "Dyad chat: app charlie-app (charlie-app); mode build"),
            shape("user", "", "Charlie prompt"),
            shape(
                "assistant",
                "compactionSummary",
                "**compaction** · title: Conversation compacted · state: finished\n\nCharlie summary of the early work"
            ),
            shape("system", "context", "Charlie odd row"),
            shape("assistant", "", "Charlie reply"),
        ]
    );
    assert_eq!(
        calls(&m[4]),
        [call(
            "write",
            json!({"path": "c.txt", "content": "charlie file"}),
            Value::Null,
            Value::Null
        )]
    );
    let w = stores::warnings(&out.tree, &dir);
    assert!(w.contains("unknown role"), "{w}");
    assert!(w.contains("model_selection is not JSON"), "{w}");
    assert!(w.contains("unknown approval_state"), "{w}");
}

/// A file in Dyad's macOS place that is no database costs only itself: doctor names it, and
/// the chats of the real database still load.
#[test]
fn a_garbage_database_beside_a_good_one_hides_nothing() {
    let fx = write();
    put(
        fx.home.path(),
        "Library/Application Support/dyad/sqlite.db",
        "SQLite format 3\0 torn garbage, not a database",
    );
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    assert_eq!(stores::entries(&out.tree, "dyad"), 4);
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(
        text.contains("problem: ")
            && text.contains("Library/Application Support/dyad/sqlite.db: not a SQLite database"),
        "{text}"
    );
}

/// `XDG_CONFIG_HOME` moves Electron's userData directory, and Dyad's database with it.
#[test]
fn xdg_config_home_moves_the_database() {
    let fx = write();
    let moved = fx.home.path().join("xdg");
    std::fs::create_dir_all(moved.join("dyad")).expect("dir");
    std::fs::rename(fx.home.path().join(DB), moved.join("dyad/sqlite.db")).expect("move");
    let tmp = tempfile::tempdir().expect("tmp");
    let tree = tmp.path().join("tree");
    let o = fx
        .home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("XDG_CONFIG_HOME", &moved)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert_eq!(stores::entries(&tree, "dyad"), 4);
    check_tree(&tree, &fx);
    let a = meta(&tree, &format!("dyad/{}", fx.a));
    let from = moved.join("dyad/sqlite.db").display().to_string();
    assert_eq!(a["source"]["paths"], json!([from]));
    // The home is not known from there: a relative app path gives no directory.
    assert!(a["cwd"].is_null());
}

#[test]
fn settings_and_secret_columns_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    stores::assert_nowhere(&out.tree, SECRET);
    stores::assert_list_hides(&fx.home, SECRET, &[]);
}

#[test]
fn doctor_names_dyad_and_where_it_found_it() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 4 sessions", "dyad")),
        "{text}"
    );
    assert!(text.contains(".config/dyad/sqlite.db"), "{text}");
}

#[test]
fn mounted_database_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot_stable, |m| {
        check_tree(m.path(), &fx);
        stores::assert_mount_read_only(m, &["dyad"], 12, SECRET, &format!("dyad/{}", fx.a));
    });
}

/// While Dyad runs it keeps the database open in WAL mode: a new turn, the approval of a
/// reply and a new chat each show within a second.
#[test]
fn a_new_turn_an_approval_and_a_new_chat_show_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("dyad/{}/transcript.md", fx.a));
    assert!(stores::file_contains(&t, "Alpha SQL reply."));
    let c = Connection::open(fx.home.path().join(DB)).expect("db");
    c.pragma_update(None, "journal_mode", "WAL").expect("wal");
    prompt(&c, fx.a, "Alpha fresh prompt after the mount", T0 + 500);
    let r = reply(
        &c,
        fx.a,
        "Alpha fresh reply <dyad-write path=\"fresh.ts\">x</dyad-write>",
        "claude-sonnet-4-5",
        "a1a1a1a",
        T0 + 510,
    );
    stores::assert_within_a_second("new turn", || {
        stores::file_contains(&t, "Alpha fresh reply")
    });
    set(&c, r, "approval_state", "approved");
    set(&c, r, "commit_hash", "f2f2f2f");
    stores::assert_within_a_second("approval", || {
        stores::file_contains(&t, "Dyad committed the changes as f2f2f2f")
    });
    let n = chat(&c, 1, Some("Echo"), T0 + 600, None, None, None, false);
    prompt(&c, n, "Echo prompt", T0 + 600);
    let t = m.path().join(format!("dyad/{n}/transcript.md"));
    stores::assert_within_a_second("new chat", || stores::file_contains(&t, "Echo prompt"));
}

/// The bundled sample (`fixtures/home/.config/dyad/sqlite.db`, written by
/// `scripts/make-samples`): its lines in its two chats, no warning. The lines are the
/// sample's own text, copied from the rows the script writes.
#[test]
fn bundled_sample_shows_both_chats() {
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
    assert_eq!(stores::entries(&tree, "dyad"), 2);
    stores::assert_session_holds(
        &tree,
        "dyad/1",
        &[
            "Dyad chat: app recipe-box (recipe-box); mode build; model claude-sonnet-4-5 (anthropic, effort medium); started at commit 9f1c2e7",
            "Add a search box that filters the recipes by name",
            "[image: sketch.png, image/png]",
            "The list now shows only the recipes whose name matches what you type.",
            "Dyad committed the changes as b83d410 (the app was at 9f1c2e7)",
        ],
        &["rejected: not applied"],
    );
    stores::assert_session_holds(
        &tree,
        "dyad/2",
        &[
            "Why does the recipe list show Pancakes twice?",
            "Each card is now keyed by the recipe's id, so both pancakes show once each.",
        ],
        &["Keys must be unique among siblings and stable between renders."],
    );
    for id in ["1", "2"] {
        let m = meta(&tree, &format!("dyad/{id}"));
        assert_eq!(m["warnings"], json!([]), "{}", m["warnings"]);
    }
    assert_eq!(meta(&tree, "dyad/1")["title"], "Add recipe search");
}
