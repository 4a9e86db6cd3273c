//! Search at a glance for OpenClaw, agsh/meka, agentuse and ATSF threads: with nothing
//! changed a search lists no store; a message appended to a session, a new session (a new
//! file, directory or row, as each agent makes one) and a deleted session are each found
//! by the next search. Every store is written here in its agent's layout, under a home of
//! its own; expected ids are the writer's.

mod common;

use common::{age, logged_search, logged_search_with, Home};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

fn set(agent: &str, ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|id| format!("{agent}/{id}")).collect()
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Every directory from `dir` up to `home`, aged `secs`.
fn age_up(home: &Home, dir: &Path, secs: u64) {
    let mut d = Some(dir);
    while let Some(p) = d.filter(|p| p.starts_with(home.path()) && *p != home.path()) {
        age(p, secs);
        d = p.parent();
    }
}

// ---------------------------------------------------------------------------------------
// OpenClaw

const CLAW: [&str; 5] = [
    "0c1a0c1a-0000-4abc-9def-000000000001",
    "0c1a0c1a-0000-4abc-9def-000000000002",
    "0c1a0c1a-0000-4abc-9def-000000000003",
    "0c1a0c1a-0000-4abc-9def-000000000004",
    "0c1a0c1a-0000-4abc-9def-000000000005",
];

const OPENCLAW_V1: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/openclaw-v1.sql"
));

/// One `transcript_events` row of session `n`: line `seq` of its transcript.
fn claw_event(c: &rusqlite::Connection, n: usize, seq: i64, line: &str) {
    c.execute(
        "INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?1, ?2, ?3, 2)",
        rusqlite::params![CLAW[n - 1], seq, line.trim_end()],
    )
    .unwrap();
}

fn claw_user(n: usize, i: usize, text: &str) -> String {
    let parent = if i == 1 {
        "null".to_string()
    } else {
        format!("\"m{n}-{}\"", i - 1)
    };
    format!(
        "{{\"type\":\"message\",\"id\":\"m{n}-{i}\",\"parentId\":{parent},\"timestamp\":\"2026-03-09T07:00:0{i}.000Z\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}],\"timestamp\":1773039601000}}}}\n"
    )
}

/// OpenClaw transcript `n` of agent `agent`: `~/.openclaw/agents/<agent>/sessions/<id>.jsonl`.
fn claw_session(home: &Home, agent: &str, n: usize, text: &str) -> PathBuf {
    let id = CLAW[n - 1];
    let file = home
        .path()
        .join(".openclaw/agents")
        .join(agent)
        .join("sessions")
        .join(format!("{id}.jsonl"));
    let head = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-03-09T07:00:00.000Z\",\"cwd\":\"/home/dev/clawbox\"}}\n"
    );
    write(&file, &(head + &claw_user(n, 1, text)));
    file
}

/// The OpenClaw store's glance: a message appended to a transcript, a transcript of a new
/// agent, a deleted transcript, an agent's database appearing and a row written to it are
/// each found by the next search.
#[test]
fn openclaw_changes_are_found_by_the_next_search() {
    let home = Home::empty();
    let mut files = Vec::new();
    for (n, word) in [(1, "clawone"), (2, "clawtwo"), (3, "clawthree")] {
        files.push(claw_session(
            &home,
            "main",
            n,
            &format!("the {word} question"),
        ));
    }
    let agents = home.path().join(".openclaw/agents");
    age_up(&home, &agents.join("main/sessions"), 3600);
    assert_eq!(
        logged_search(&home, "clawone"),
        (set("openclaw", &CLAW[..1]), false)
    );
    assert_eq!(
        logged_search(&home, "clawtwo"),
        (set("openclaw", &CLAW[1..2]), true)
    );
    // An appended message: no directory moves, the transcript grows.
    append(&files[0], &claw_user(1, 2, "an appendedclaw answer"));
    assert_eq!(
        logged_search(&home, "appendedclaw").0,
        set("openclaw", &CLAW[..1])
    );
    assert_eq!(
        logged_search(&home, "appendedclaw"),
        (set("openclaw", &CLAW[..1]), true)
    );
    // A transcript of a new agent: only `agents/` moves.
    claw_session(&home, "ops", 4, "the clawfour question");
    age_up(&home, &agents.join("ops/sessions"), 3000);
    assert_eq!(
        logged_search(&home, "clawfour").0,
        set("openclaw", &CLAW[3..4])
    );
    assert_eq!(
        logged_search(&home, "clawfour"),
        (set("openclaw", &CLAW[3..4]), true)
    );
    // A deleted transcript.
    std::fs::remove_file(&files[1]).unwrap();
    age(&agents.join("main/sessions"), 2400);
    assert_eq!(logged_search(&home, "clawtwo").0, BTreeSet::new());
    assert_eq!(
        logged_search(&home, "question"),
        (set("openclaw", &[CLAW[0], CLAW[2], CLAW[3]]), true)
    );
    // The agent's database appears (`agents/main/agent/` moves), holding a session.
    let db = agents.join("main/agent/openclaw-agent.sqlite");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(OPENCLAW_V1).unwrap();
    c.execute(
        "INSERT INTO sessions (session_id, session_key, created_at, updated_at) VALUES (?1, 'agent:main:db', 1, 2)",
        [CLAW[4]],
    )
    .unwrap();
    let head = format!(
        "{{\"type\":\"session\",\"version\":3,\"id\":\"{}\",\"timestamp\":\"2026-03-09T07:00:00.000Z\",\"cwd\":\"/home/dev/clawbox\"}}",
        CLAW[4]
    );
    claw_event(&c, 5, 1, &head);
    claw_event(&c, 5, 2, &claw_user(5, 1, "the clawfive question"));
    drop(c);
    age_up(&home, db.parent().unwrap(), 2000);
    assert_eq!(
        logged_search(&home, "clawfive").0,
        set("openclaw", &CLAW[4..])
    );
    assert_eq!(
        logged_search(&home, "clawfive"),
        (set("openclaw", &CLAW[4..]), true)
    );
    // A row written to the database.
    let c = rusqlite::Connection::open(&db).unwrap();
    claw_event(&c, 5, 3, &claw_user(5, 2, "an appendedclawdb answer"));
    drop(c);
    age(db.parent().unwrap(), 1800);
    assert_eq!(
        logged_search(&home, "appendedclawdb").0,
        set("openclaw", &CLAW[4..])
    );
    assert_eq!(
        logged_search(&home, "appendedclawdb"),
        (set("openclaw", &CLAW[4..]), true)
    );
}

// ---------------------------------------------------------------------------------------
// agsh / meka

/// The agsh store's glance over both databases (agsh's rollback `sessions.db`, meka's WAL
/// `meka.db`): a message row, a new session's rows and a deleted session are each found
/// by the next search.
#[test]
fn agsh_changes_are_found_by_the_next_search() {
    use common::agsh::{self, AGSH_COMPACTED, AGSH_TOOLS, MEKA_CHILD, MEKA_PARENT};
    let home = Home::empty();
    agsh::write_agsh(home.path());
    let (adb, mdb) = (
        agsh::agsh_db_path(home.path()),
        agsh::meka_db_path(home.path()),
    );
    agsh::append_agsh_message(&adb, AGSH_TOOLS, "the agshone answer");
    agsh::append_agsh_message(&adb, AGSH_COMPACTED, "the agshtwo answer");
    agsh::append_agsh_message(&mdb, MEKA_CHILD, "the mekathree answer");
    for db in [&adb, &mdb] {
        age_up(&home, db.parent().unwrap(), 3600);
    }
    assert_eq!(
        logged_search(&home, "agshone"),
        (set("agsh", &[AGSH_TOOLS]), false)
    );
    assert_eq!(
        logged_search(&home, "agshtwo"),
        (set("agsh", &[AGSH_COMPACTED]), true)
    );
    // A row written to meka's database (WAL).
    agsh::append_agsh_message(&mdb, MEKA_PARENT, "an appendedmeka answer");
    age(mdb.parent().unwrap(), 1800);
    assert_eq!(
        logged_search(&home, "appendedmeka").0,
        set("agsh", &[MEKA_PARENT])
    );
    assert_eq!(
        logged_search(&home, "appendedmeka"),
        (set("agsh", &[MEKA_PARENT]), true)
    );
    // A new session in agsh's database.
    let new = "4f2a9c1e-3b7d-4e21-9a0c-5d6e7f809199";
    agsh::append_agsh_message(&adb, new, "the agshfour answer");
    age(adb.parent().unwrap(), 1800);
    assert_eq!(logged_search(&home, "agshfour").0, set("agsh", &[new]));
    assert_eq!(
        logged_search(&home, "agshfour"),
        (set("agsh", &[new]), true)
    );
    // A deleted session.
    let c = rusqlite::Connection::open(&adb).unwrap();
    c.execute(
        "DELETE FROM messages WHERE session_id = ?1",
        [AGSH_COMPACTED],
    )
    .unwrap();
    c.execute("DELETE FROM sessions WHERE id = ?1", [AGSH_COMPACTED])
        .unwrap();
    drop(c);
    age(adb.parent().unwrap(), 1200);
    assert_eq!(logged_search(&home, "agshtwo").0, BTreeSet::new());
    assert_eq!(
        logged_search(&home, "answer"),
        (
            set("agsh", &[AGSH_TOOLS, MEKA_CHILD, MEKA_PARENT, new]),
            true
        )
    );
}

// ---------------------------------------------------------------------------------------
// agentuse

/// A ULID for milliseconds `ms` (Crockford base32 time, a fixed random part ending `n`).
fn ulid(ms: u64, n: u64) -> String {
    const A: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let mut s: String = (0..10)
        .rev()
        .map(|i| A[((ms >> (5 * i)) & 31) as usize] as char)
        .collect();
    s.push_str("0000000000000000");
    s.pop();
    s.push(A[(n & 31) as usize] as char);
    s
}

const T0: u64 = 1_767_225_600_000;

/// One agentuse exchange `m` of `session_dir`: `message.json` with the prompt and a text
/// part, each written as agentuse writes them (pretty JSON).
fn agentuse_exchange(session_dir: &Path, sid: &str, m: u64, text: &str) {
    let mid = ulid(T0 + m * 1000, m);
    let msg = serde_json::json!({
        "id": mid, "sessionID": sid,
        "time": {"created": T0 + m * 1000, "completed": T0 + m * 1000 + 500},
        "user": {"prompt": {"task": text}},
        "assistant": {"modelID": "claude-sonnet-4-0", "providerID": "anthropic",
                      "tokens": {"input": 10, "output": 5}}
    });
    write(
        &session_dir.join(&mid).join("message.json"),
        &serde_json::to_string_pretty(&msg).unwrap(),
    );
    let pid = ulid(T0 + m * 1000 + 100, m + 16);
    let part = serde_json::json!({"id": pid, "sessionID": sid, "messageID": mid,
                                  "type": "text", "text": "Done."});
    write(
        &session_dir
            .join(&mid)
            .join("part")
            .join(format!("{pid}.json")),
        &serde_json::to_string_pretty(&part).unwrap(),
    );
}

/// agentuse session `n` under `~/.local/share/agentuse/project/<hash>/session/`: its id.
fn agentuse_session(home: &Home, hash: &str, n: u64, text: &str) -> (String, PathBuf) {
    let sid = ulid(T0 + n * 60_000, n);
    let dir = home
        .path()
        .join(".local/share/agentuse/project")
        .join(hash)
        .join("session")
        .join(format!("{sid}-reviewer"));
    let info = serde_json::json!({
        "id": sid, "status": "completed", "trigger": "manual",
        "agent": {"id": "reviewer", "name": "Reviewer", "isSubAgent": false},
        "model": "anthropic:claude-sonnet-4-0", "version": "0.15.0",
        "project": {"root": "/home/dev/app", "cwd": "/home/dev/app"},
        "time": {"created": T0 + n * 60_000, "updated": T0 + n * 60_000 + 9_000}
    });
    write(
        &dir.join("session.json"),
        &serde_json::to_string_pretty(&info).unwrap(),
    );
    agentuse_exchange(&dir, &sid, n * 10 + 1, text);
    (sid, dir)
}

/// The agentuse store's glance: a new exchange directory in a session, a session in a new
/// project and a deleted session are each found by the next search.
#[test]
fn agentuse_changes_are_found_by_the_next_search() {
    let home = Home::empty();
    let (hash, other) = ("5d41402abc4b2a76", "7e2b9c3d4f5a6b70");
    let (one, one_dir) = agentuse_session(&home, hash, 1, "the useone task");
    let (two, two_dir) = agentuse_session(&home, hash, 2, "the usetwo task");
    let container = two_dir.parent().unwrap().to_path_buf();
    age_up(&home, &container, 3600);
    assert_eq!(
        logged_search(&home, "useone"),
        (set("agentuse", &[&one]), false)
    );
    assert_eq!(
        logged_search(&home, "usetwo"),
        (set("agentuse", &[&two]), true)
    );
    // A new exchange: the session's directory moves.
    agentuse_exchange(&one_dir, &one, 15, "an appendeduse task");
    assert_eq!(
        logged_search(&home, "appendeduse").0,
        set("agentuse", &[&one])
    );
    assert_eq!(
        logged_search(&home, "appendeduse"),
        (set("agentuse", &[&one]), true)
    );
    // A session of a new project: only `project/` moves.
    let (three, three_dir) = agentuse_session(&home, other, 3, "the usethree task");
    age_up(&home, three_dir.parent().unwrap(), 3000);
    assert_eq!(
        logged_search(&home, "usethree").0,
        set("agentuse", &[&three])
    );
    assert_eq!(
        logged_search(&home, "usethree"),
        (set("agentuse", &[&three]), true)
    );
    // A deleted session.
    std::fs::remove_dir_all(&two_dir).unwrap();
    age(&container, 2400);
    assert_eq!(logged_search(&home, "usetwo").0, BTreeSet::new());
    assert_eq!(
        logged_search(&home, "task"),
        (set("agentuse", &[&one, &three]), true)
    );
}

// ---------------------------------------------------------------------------------------
// ATSF threads

const THREADS: [&str; 4] = [
    "3b1f6c2e-8a4d-4f1e-9c7b-000000000001",
    "3b1f6c2e-8a4d-4f1e-9c7b-000000000002",
    "3b1f6c2e-8a4d-4f1e-9c7b-000000000003",
    "3b1f6c2e-8a4d-4f1e-9c7b-000000000004",
];

fn atsf_message(n: usize, i: usize, text: &str) -> String {
    format!(
        "{{\"id\":\"m{n}-{i}\",\"role\":\"user\",\"timestamp\":\"2026-02-17T10:0{i}:00.000Z\",\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}}\n"
    )
}

/// ATSF thread `n` of `project`: `<project>/.agent/threads/<id>/`; its `messages.jsonl`.
fn atsf_thread(project: &Path, n: usize, text: &str) -> PathBuf {
    let id = THREADS[n - 1];
    let dir = project.join(".agent/threads").join(id);
    write(
        &dir.join("thread.json"),
        &format!(
            "{{\"specVersion\":\"1.0\",\"threadId\":\"{id}\",\"title\":\"Thread {n}\",\"createdAt\":\"2026-02-17T10:00:00.000Z\",\"updatedAt\":\"2026-02-17T10:01:00.000Z\"}}"
        ),
    );
    let messages = dir.join("messages.jsonl");
    write(&messages, &atsf_message(n, 1, text));
    messages
}

/// `sessfs search --threads-root <root>` with its log: the sessions found and whether it
/// listed no store (as [`logged_search`]).
fn threads_search(home: &Home, root: &Path, query: &str) -> (BTreeSet<String>, bool) {
    logged_search_with(home, &["--threads-root".as_ref(), root.as_os_str()], query)
}

/// The ATSF store's glance over a project the `$HOME` scan finds and one given with
/// `--threads-root` (a hidden directory the scan skips): a line appended to a thread, a new
/// thread, a new project and a deleted thread are each found by the next search.
#[test]
fn atsf_changes_are_found_by_the_next_search() {
    let home = Home::empty();
    let scanned = home.path().join("projects/webapp");
    let given = home.path().join(".work/api");
    let one = atsf_thread(&scanned, 1, "the threadone question");
    atsf_thread(&given, 2, "the threadtwo question");
    for p in [&scanned, &given] {
        age_up(&home, &p.join(".agent/threads"), 3600);
    }
    let s = |q: &str| threads_search(&home, &given, q);
    let t = |ids: &[usize]| -> BTreeSet<String> {
        ids.iter()
            .map(|n| format!("atsf/{}", THREADS[n - 1]))
            .collect()
    };
    assert_eq!(s("threadone"), (t(&[1]), false));
    assert_eq!(s("threadtwo"), (t(&[2]), true));
    // An appended line: no directory moves.
    append(&one, &atsf_message(1, 2, "an appendedthread answer"));
    assert_eq!(s("appendedthread").0, t(&[1]));
    assert_eq!(s("appendedthread"), (t(&[1]), true));
    // A new thread in the given project.
    atsf_thread(&given, 3, "the threadthree question");
    age(&given.join(".agent/threads"), 3000);
    assert_eq!(s("threadthree").0, t(&[3]));
    assert_eq!(s("threadthree"), (t(&[3]), true));
    // A project the scan finds anew: a root of its own.
    let newer = home.path().join("projects/mobile");
    atsf_thread(&newer, 4, "the threadfour question");
    age_up(&home, &newer.join(".agent/threads"), 3000);
    assert_eq!(s("threadfour").0, t(&[4]));
    assert_eq!(s("threadfour"), (t(&[4]), true));
    // A deleted thread.
    std::fs::remove_dir_all(given.join(".agent/threads").join(THREADS[1])).unwrap();
    age(&given.join(".agent/threads"), 2400);
    assert_eq!(s("threadtwo").0, BTreeSet::new());
    assert_eq!(s("question"), (t(&[1, 3, 4]), true));
}
