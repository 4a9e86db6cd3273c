//! The Kilo CLI's `~/.local/share/kilo/kilo.db`, built here from Kilo's own DDL
//! (`fixtures/schema/kilo-2026-08.sql`, from Kilo-Org/kilocode
//! `packages/core/src/database/schema.gen.ts`) with rows in the shapes Kilo writes them
//! (OpenCode's: `message.data` and `part.data` are the message and part JSON without ids),
//! beside a Kilo Code extension task, rendered with `sessfs render` and mounted once.
//!
//! Every expected value comes from the rows written below, never from sessfs' parser.

mod common;

use common::stores::{self, meta, put, Rendered};
use common::{stdout, Home, Mount};
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::path::Path;

const DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/kilo-2026-08.sql"
));

const DATA: &str = ".local/share/kilo";
const DB: &str = ".local/share/kilo/kilo.db";
/// A development channel's database under its older name.
const CHANNEL_DB: &str = ".local/share/kilo/opencode-local.db";
const TASKS: &str = ".config/Code/User/globalStorage/kilocode.kilo-code/tasks";

/// Planted credentials: provider keys beside the database, and the database's own
/// credential, account and share-secret rows.
const AUTH_SECRET: &str = "kilo-PLANTEDauthJSONsecret000000000000";
const CREDENTIAL_SECRET: &str = "kilo-PLANTEDcredentialROW0000000000000";
const ACCOUNT_SECRET: &str = "kilo-PLANTEDaccessTOKEN000000000000000";
const SHARE_SECRET: &str = "kilo-PLANTEDshareSECRET000000000000000";
const SECRETS: [&str; 4] = [AUTH_SECRET, CREDENTIAL_SECRET, ACCOUNT_SECRET, SHARE_SECRET];

const A: &str = "ses_2b7e01c4affeKiloAlpha0000001";
const A_CHILD: &str = "ses_2b7e01d9bffeKiloAlphaChild01";
const B: &str = "ses_2b7e02a1cffeKiloBravo0000002";
const C: &str = "ses_2b7e03f0dffeKiloCharlie00003";
const TASK: &str = "5d2c8e10-4444-4eee-8fff-000000000004";
const T0: i64 = 1_780_000_000_000;

/// `(input, output, cache read, cache write, USD)` of one session's own replies.
type Usage = (u64, u64, u64, u64, f64);

struct Session {
    dir: String,
    lines: Vec<&'static str>,
    outputs: Vec<&'static str>,
    usage: Usage,
}

struct Fixture {
    home: Home,
    sessions: Vec<Session>,
}

fn tokens(i: u64, o: u64, cr: u64, cw: u64) -> Value {
    json!({"input": i, "output": o, "reasoning": 0, "cache": {"read": cr, "write": cw}})
}

fn step_finish(t: &Value, cost: f64) -> Value {
    json!({"type": "step-finish", "reason": "stop", "snapshot": "4e1f", "cost": cost, "tokens": t})
}

fn tool(call: &str, name: &str, input: Value, state: Value) -> Value {
    let mut s = state;
    s["input"] = input;
    json!({"type": "tool", "callID": call, "tool": name, "state": s})
}

fn done(output: &str, metadata: Value) -> Value {
    json!({"status": "completed", "output": output, "title": "t", "metadata": metadata,
           "time": {"start": T0, "end": T0 + 250}})
}

fn session(c: &Connection, id: &str, parent: Option<&str>, title: &str, cwd: &str) {
    c.execute(
        "INSERT OR IGNORE INTO project (id, worktree, vcs, time_created, time_updated, sandboxes)
         VALUES ('prj_kilo', ?1, 'git', ?2, ?2, '[]')",
        params![cwd, T0],
    )
    .expect("project");
    c.execute(
        "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated)
         VALUES (?1, 'prj_kilo', ?2, 'slug', ?3, ?4, '7.5.12', ?5, ?5)",
        params![id, parent, cwd, title, T0],
    )
    .expect("session");
}

/// One message and its parts, ids ascending in the order given.
fn message(c: &Connection, sid: &str, n: usize, info: Value, parts: &[Value]) {
    let mid = format!("msg_{}{n:03}", &sid[4..16]);
    let at = T0 + n as i64 * 1000;
    c.execute(
        "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
        params![mid, sid, at, info.to_string()],
    )
    .expect("message");
    for (i, p) in parts.iter().enumerate() {
        c.execute(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            params![format!("prt_{}{n:03}{i:02}", &sid[4..16]), mid, sid, at, p.to_string()],
        )
        .expect("part");
    }
}

fn user(text: &str) -> (Value, Vec<Value>) {
    (
        json!({"role": "user", "time": {"created": T0}, "agent": "code",
               "model": {"providerID": "kilo", "modelID": "anthropic/claude-sonnet-4.5"},
               "editorContext": {"activeFile": "src/app.ts", "openTabs": ["src/app.ts"]}}),
        vec![json!({"type": "text", "text": text})],
    )
}

/// An assistant message as Kilo leaves it: `tokens` overwritten by the last step, `cost` the
/// sum of the steps.
fn assistant(last: &Value, cost: f64) -> Value {
    json!({"role": "assistant", "time": {"created": T0, "completed": T0 + 900},
           "parentID": "msg_x", "modelID": "anthropic/claude-sonnet-4.5", "providerID": "kilo",
           "mode": "code", "agent": "code", "path": {"cwd": "/home/dev/alpha", "root": "/home/dev/alpha"},
           "cost": cost, "tokens": last, "finish": "stop"})
}

fn new_db(path: &Path) -> Connection {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    let c = Connection::open(path).expect("db");
    c.execute_batch("PRAGMA journal_mode = WAL").expect("wal");
    c.execute_batch(DDL).expect("ddl");
    c
}

fn write() -> Fixture {
    let home = Home::empty();
    let h = home.path().to_path_buf();
    let c = new_db(&h.join(DB));
    let mut sessions = Vec::new();

    // --- A: reasoning, a shell call, a `task` subagent with its own tool call, two steps.
    session(&c, A, None, "Alpha: fix the flaky test", "/home/dev/alpha");
    let (u, p) = user("Alpha prompt: the login test fails one run in five");
    message(&c, A, 1, u, &p);
    let (s1, s2) = (tokens(1200, 80, 300, 40), tokens(1500, 60, 900, 0));
    message(
        &c,
        A,
        2,
        assistant(&s2, 0.0125),
        &[
            json!({"type": "step-start", "snapshot": "4e1f"}),
            json!({"type": "reasoning", "text": "Alpha thinking: a race on the session cookie",
                   "time": {"start": T0, "end": T0 + 10}}),
            tool(
                "call_alpha_bash",
                "bash",
                json!({"command": "npm test -- login"}),
                done("alpha-output: 1 failing (timeout)", json!({})),
            ),
            step_finish(&s1, 0.0075),
            json!({"type": "step-start", "snapshot": "4e1f"}),
            tool(
                "call_alpha_task",
                "task",
                json!({"description": "Alpha: find the cookie writer", "prompt": "Alpha child prompt: who writes the cookie?", "subagent_type": "explore"}),
                done(
                    "Alpha child found it in auth.ts",
                    json!({"sessionId": A_CHILD}),
                ),
            ),
            json!({"type": "text", "text": "Alpha reply: the cookie is written after the redirect; awaiting it fixes the race."}),
            step_finish(&s2, 0.005),
        ],
    );
    session(
        &c,
        A_CHILD,
        Some(A),
        "Alpha: find the cookie writer (@explore subagent)",
        "/home/dev/alpha",
    );
    let (u, p) = user("Alpha child prompt: who writes the cookie?");
    message(&c, A_CHILD, 1, u, &p);
    let sc = tokens(400, 30, 0, 0);
    message(
        &c,
        A_CHILD,
        2,
        assistant(&sc, 0.001),
        &[
            tool(
                "call_alpha_child_grep",
                "grep",
                json!({"pattern": "setCookie"}),
                done(CHILD_OUTPUT, json!({})),
            ),
            json!({"type": "text", "text": "Alpha child reply: src/auth.ts line 42"}),
            step_finish(&sc, 0.001),
        ],
    );
    sessions.push(Session {
        dir: format!("kilo/{A}"),
        lines: vec![
            "Alpha prompt: the login test fails one run in five",
            "Alpha thinking: a race on the session cookie",
            "Alpha reply: the cookie is written after the redirect",
            "Alpha child prompt: who writes the cookie?",
            "Alpha child reply: src/auth.ts line 42",
        ],
        outputs: vec!["alpha-output: 1 failing (timeout)"],
        usage: (2700, 140, 1200, 40, 0.0125),
    });

    // --- B: a failed tool call, then a reply.
    session(&c, B, None, "Bravo: rename the module", "/home/dev/bravo");
    let (u, p) = user("Bravo prompt: rename utils to helpers");
    message(&c, B, 1, u, &p);
    let sb = tokens(700, 45, 0, 120);
    message(
        &c,
        B,
        2,
        assistant(&sb, 0.0031),
        &[
            tool(
                "call_bravo_mv",
                "bash",
                json!({"command": "git mv src/utils src/helpers"}),
                json!({"status": "error", "error": "bravo-error: src/utils does not exist",
                       "time": {"start": T0, "end": T0 + 5}}),
            ),
            json!({"type": "text", "text": "Bravo reply: there is no src/utils to rename."}),
            step_finish(&sb, 0.0031),
        ],
    );
    sessions.push(Session {
        dir: format!("kilo/{B}"),
        lines: vec![
            "Bravo prompt: rename utils to helpers",
            "Bravo reply: there is no src/utils to rename.",
        ],
        outputs: vec!["bravo-error: src/utils does not exist"],
        usage: (700, 45, 0, 120, 0.0031),
    });

    // Credentials in the same database.
    c.execute(
        "INSERT INTO credential (id, label, value, time_created, time_updated) VALUES ('cred1', 'kilo', ?1, 1, 1)",
        params![CREDENTIAL_SECRET],
    )
    .expect("credential");
    c.execute(
        "INSERT INTO account (id, email, url, access_token, refresh_token, time_created, time_updated)
         VALUES ('acc1', 'dev@example.com', 'https://app.kilo.ai', ?1, 'r', 1, 1)",
        params![ACCOUNT_SECRET],
    )
    .expect("account");
    c.execute(
        "INSERT INTO session_share (session_id, id, secret, url, time_created, time_updated)
         VALUES (?1, 'sh1', ?2, 'https://app.kilo.ai/s/sh1', 1, 1)",
        params![A, SHARE_SECRET],
    )
    .expect("share");
    drop(c);

    // --- C: a development channel's database (`opencode-<channel>.db` in Kilo's data dir).
    let c = new_db(&h.join(CHANNEL_DB));
    session(&c, C, None, "Charlie: dev build", "/home/dev/charlie");
    let (u, p) = user("Charlie prompt: on the dev channel");
    message(&c, C, 1, u, &p);
    let st = tokens(90, 9, 0, 0);
    message(
        &c,
        C,
        2,
        assistant(&st, 0.0002),
        &[
            json!({"type": "text", "text": "Charlie reply: read from the channel database"}),
            step_finish(&st, 0.0002),
        ],
    );
    drop(c);
    sessions.push(Session {
        dir: format!("kilo/{C}"),
        lines: vec![
            "Charlie prompt: on the dev channel",
            "Charlie reply: read from the channel database",
        ],
        outputs: vec![],
        usage: (90, 9, 0, 0, 0.0002),
    });

    // --- The extension's task beside the CLI's sessions.
    let t = T0 / 1000 * 1000;
    put(
        &h,
        &format!("{TASKS}/{TASK}/api_conversation_history.json"),
        json!([
            {"role": "user", "ts": t, "content": [{"type": "text", "text": "<task>\nDelta: extension task prompt\n</task>"}]},
            {"role": "assistant", "ts": t + 1000, "content": [{"type": "text", "text": "Delta reply: from the extension."}]}
        ])
        .to_string(),
    );
    put(
        &h,
        &format!("{TASKS}/{TASK}/ui_messages.json"),
        json!([
            {"ts": t, "type": "say", "say": "text", "text": "Delta: extension task prompt"},
            {"ts": t + 100, "type": "say", "say": "api_req_started",
             "text": json!({"request": "<task>", "tokensIn": 50, "tokensOut": 5, "cacheReads": 0, "cacheWrites": 0, "cost": 0.0001}).to_string(),
             "conversationHistoryIndex": 0}
        ])
        .to_string(),
    );
    sessions.push(Session {
        dir: format!("kilo/{TASK}"),
        lines: vec![
            "Delta: extension task prompt",
            "Delta reply: from the extension.",
        ],
        outputs: vec![],
        usage: (50, 5, 0, 0, 0.0001),
    });

    put(
        &h,
        &format!("{DATA}/auth.json"),
        json!({"kilo": {"type": "api", "key": AUTH_SECRET}}).to_string(),
    );
    let mut home = home;
    home.files = common::files_under(home.path());
    Fixture { home, sessions }
}

fn render(fx: &Fixture) -> Rendered {
    stores::render(&fx.home, "sessfs-kilo", &[])
}

/// The subagent's tool output, in its own `tools/` inside its parent.
const CHILD_OUTPUT: &str = "alpha-child-output: src/auth.ts:42 setCookie(res)";

fn check_tree(tree: &Path, fx: &Fixture) {
    for s in &fx.sessions {
        stores::assert_session_holds(tree, &s.dir, &s.lines, &s.outputs);
    }
    stores::assert_only_in(tree, CHILD_OUTPUT, ".", &format!("kilo/{A}"));
    let child_tools = format!("kilo/{A}/subagents/{A_CHILD}/tools");
    assert_eq!(
        stores::holding(tree, CHILD_OUTPUT, &child_tools).len(),
        1,
        "not under {child_tools}"
    );
}

#[test]
fn render_shows_every_prompt_reply_and_output_in_exactly_its_session() {
    let fx = write();
    let out = render(&fx);
    check_tree(&out.tree, &fx);
    // Three CLI sessions (the subagent nested in its parent) and the extension's task.
    assert_eq!(stores::entries(&out.tree, "kilo"), 4);
    assert!(out
        .tree
        .join(format!("kilo/{A}/subagents/{A_CHILD}/transcript.md"))
        .is_file());
}

#[test]
fn usage_is_each_step_once() {
    let fx = write();
    let out = render(&fx);
    for s in &fx.sessions {
        stores::assert_cost(&out.tree, &s.dir, s.usage);
    }
}

#[test]
fn titles_cwd_model_and_format_come_from_the_rows() {
    let fx = write();
    let out = render(&fx);
    let a = meta(&out.tree, &format!("kilo/{A}"));
    assert_eq!(a["title"], "Alpha: fix the flaky test");
    assert_eq!(a["cwd"], "/home/dev/alpha");
    assert_eq!(a["model"], "anthropic/claude-sonnet-4.5");
    assert!(a.to_string().contains("kilo-sqlite"), "{a}");
    let child = meta(&out.tree, &format!("kilo/{A}/subagents/{A_CHILD}"));
    assert_eq!(
        child["title"],
        "Alpha: find the cookie writer (@explore subagent)"
    );
}

#[test]
fn credentials_beside_and_inside_the_database_are_never_shown() {
    let fx = write();
    let out = render(&fx);
    for s in SECRETS {
        stores::assert_nowhere(&out.tree, s);
        stores::assert_list_hides(&fx.home, s, &[]);
    }
}

#[test]
fn doctor_names_kilo_and_both_places() {
    let fx = write();
    let text = stdout(&fx.home.sessfs(&["doctor"]));
    assert!(
        text.contains(&format!("{:<9} 4 sessions", "kilo")),
        "{text}"
    );
    assert!(
        text.contains(".local/share/kilo (default (Kilo CLI))"),
        "{text}"
    );
    assert!(text.contains("kilocode.kilo-code"), "{text}");
}

#[test]
fn kilo_db_names_a_database_elsewhere() {
    let fx = write();
    let elsewhere = fx.home.path().join("elsewhere/k.db");
    std::fs::create_dir_all(elsewhere.parent().expect("parent")).expect("dir");
    std::fs::rename(fx.home.path().join(CHANNEL_DB), &elsewhere).expect("move");
    let list = |with: bool| {
        let mut c = fx.home.command(&["list", "--json"]);
        if with {
            c.env("KILO_DB", &elsewhere);
        }
        stdout(&c.output().expect("list"))
    };
    assert!(!list(false).contains(C));
    assert!(list(true).contains(C));
}

#[test]
fn mounted_database_sizes_erofs_and_store_untouched() {
    let fx = write();
    stores::mounted_untouched(&fx.home, Home::snapshot_stable, |m| {
        check_tree(m.path(), &fx);
        for s in SECRETS {
            stores::assert_nowhere(m.path(), s);
        }
        stores::assert_mount_read_only(m, &["kilo"], 8, AUTH_SECRET, &format!("kilo/{A}"));
    });
}

/// Kilo writes each part as a row while the session runs (WAL): it shows within a second.
#[test]
fn a_new_row_shows_within_a_second() {
    let fx = write();
    let m = Mount::new(&fx.home, &[]);
    let t = m.path().join(format!("kilo/{B}/transcript.md"));
    assert!(stores::file_contains(&t, "Bravo reply"));
    let c = Connection::open(fx.home.path().join(DB)).expect("db");
    let (u, p) = user("Bravo fresh prompt after the mount");
    message(&c, B, 3, u, &p);
    stores::assert_within_a_second("new row", || {
        stores::file_contains(&t, "Bravo fresh prompt after the mount")
    });
}

/// The bundled samples (`fixtures/home`, what `scripts/demo` mounts on a machine without
/// stores): the Kilo CLI's session and Cline's SDK-era session, each line in exactly its
/// session. The lines are the samples' own text, read from the files by hand.
#[test]
fn bundled_samples_show_the_kilo_cli_and_cline_sdk_sessions() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let dir = tempfile::Builder::new()
        .prefix("sessfs-kilo-samples")
        .tempdir()
        .expect("tmp");
    let tree = dir.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let kilo = "kilo/ses_2c91a4e07ffeR3vQ8mK1tZ6wNp";
    stores::assert_session_holds(
        &tree,
        kilo,
        &[
            "Requests to /api/orders time out after exactly 10 seconds.",
            "Ten seconds flat sounds like a client default",
            "The axios client in src/api/client.ts sets `timeout: 10000`",
        ],
        &["Line 7: timeout: 10000,"],
    );
    stores::assert_cost(&tree, kilo, (3412, 158, 2816, 384, 0.0094));
    let sdk = "cline/1776400000000_k3m9p";
    stores::assert_session_holds(
        &tree,
        sdk,
        &[
            "npm run dev says port 5173 is already in use",
            "Ask the system which process listens on 5173 before guessing.",
            "A leftover Vite process (node, PID 48213)",
        ],
        &["node    48213 demo   23u  IPv6 0x1f2e      0t0  TCP *:5173 (LISTEN)"],
    );
    stores::assert_cost(&tree, sdk, (4530, 170, 3584, 512, 0.0073));
    assert_eq!(
        meta(&tree, sdk)["title"],
        "Why the dev server port is taken"
    );
}
