//! OpenCode and Hermes through a real mount: databases built from the agents' own DDL, the
//! expectations taken from what the fixture writer wrote (`common::dbstores::Record`).

mod common;

use common::dbstores::{self, Journal, Record};
use common::{stderr, stdout, stores, Home, Mount};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

fn home(mode: Journal) -> (Home, Record) {
    let mut h = Home::empty();
    let r = dbstores::write(h.path(), mode);
    h.files.extend(r.files.iter().cloned());
    (h, r)
}

#[test]
fn every_message_and_tool_output_is_in_exactly_its_session() {
    let (home, rec) = home(Journal::Wal);
    assert!(
        dbstores::hermes_db_path(home.path())
            .with_file_name("state.db-wal")
            .exists(),
        "the WAL is left as a running agent leaves it"
    );
    let before = home.snapshot_stable();
    let m = Mount::new(&home, &[]);
    let dirs: BTreeSet<&str> = rec.texts.iter().map(|(d, _)| d.as_str()).collect();
    for d in &dirs {
        for f in ["meta.json", "transcript.md", "messages.jsonl"] {
            let p = m.path().join(d).join(f);
            let len = std::fs::metadata(&p)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
                .len();
            assert!(len > 0, "{} is empty", p.display());
        }
        assert!(m.path().join(d).join("tools").is_dir(), "{d}/tools");
    }
    // Nothing else is listed: subagents and continuations are inside their sessions.
    for agent in ["opencode", "hermes"] {
        let listed: BTreeSet<String> = std::fs::read_dir(m.path().join(agent))
            .unwrap()
            .flatten()
            .map(|e| format!("{agent}/{}", e.file_name().to_string_lossy()))
            .collect();
        let want: BTreeSet<String> = dirs
            .iter()
            .filter(|d| d.starts_with(&format!("{agent}/")))
            .map(|d| d.to_string())
            .collect();
        assert_eq!(listed, want);
    }
    for (dir, text) in &rec.texts {
        assert_eq!(
            m.sessions_holding(text, &["opencode", "hermes"]),
            BTreeSet::from([dir.clone()]),
            "'{text}'"
        );
    }
    for (dir, out) in &rec.tool_outputs {
        let o = m.sh(&format!(
            "grep -rlF -e '{}' '{dir}/tools'",
            out.replace('\'', "'\\''")
        ));
        assert!(
            o.status.success(),
            "'{out}' not under {dir}/tools: {}",
            stderr(&o)
        );
    }
    // Links.
    let oc1 = "opencode/ses_oc1000000000000000000001";
    assert!(m
        .path()
        .join(oc1)
        .join("subagents/ses_oc1child00000000000000001/transcript.md")
        .is_file());
    assert!(m
        .path()
        .join("opencode/ses_oc2000000000000000000002/branches/reverted/transcript.md")
        .is_file());
    assert_eq!(
        m.meta("opencode/ses_oc3000000000000000000003")["forkedFrom"],
        "opencode:ses_oc1000000000000000000001"
    );
    let h1 = "hermes/20260101_080000_aaaa0001";
    assert!(m
        .path()
        .join(h1)
        .join("subagents/20260101_082000_aaaa0003/transcript.md")
        .is_file());
    let branches: Vec<String> = std::fs::read_dir(m.path().join(h1).join("branches"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        branches.iter().any(|b| b.starts_with("rewound-")),
        "{branches:?}"
    );
    assert_eq!(
        m.meta("hermes/20260101_083000_aaaa0004")["forkedFrom"],
        "hermes:20260101_080000_aaaa0001"
    );
    let cost = &m.meta(h1)["cost"];
    assert_eq!(cost["estimated"], false, "{cost}");
    assert!(cost["totalUsd"].as_f64().unwrap() > 0.0, "{cost}");

    sizes_agree(&m);
    for d in [oc1, h1] {
        let out = m.sh(&format!("echo x > '{d}/meta.json'"));
        assert!(
            stderr(&out).contains("Read-only file system"),
            "{}",
            stderr(&out)
        );
        let out = m.sh(&format!("touch '{d}/new'"));
        assert!(stderr(&out).contains("Read-only file system"));
    }
    drop(m);
    let after = home.snapshot_stable();
    let changed: Vec<_> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    assert!(changed.is_empty(), "native files changed: {changed:?}");
}

/// `stat` size = bytes read = bytes mapped, for every file.
fn sizes_agree(m: &Mount) {
    common::assert_sizes_agree(m.path(), &["opencode", "hermes"], 1);
}

#[test]
fn credentials_in_the_same_databases_never_appear() {
    let (home, rec) = home(Journal::Wal);
    // The secrets really are in the files sessfs reads (else this test proves nothing).
    let bytes = |p: &Path| {
        let mut b = std::fs::read(p).unwrap();
        if let Ok(w) = std::fs::read(dbstores::hermes_db_path(home.path()).with_extension("db-wal"))
        {
            b.extend(w);
        }
        if let Ok(w) = std::fs::read(p.with_extension("db-wal")) {
            b.extend(w);
        }
        b
    };
    let all = [bytes(&rec.opencode_db), bytes(&rec.hermes_db)].concat();
    for s in dbstores::SECRETS {
        assert!(
            all.windows(s.len()).any(|w| w == s.as_bytes()),
            "{s} was not planted"
        );
    }
    let m = Mount::new(&home, &[]);
    for s in dbstores::SECRETS {
        let out = m.sh(&format!("grep -rlF '{s}' ."));
        assert_eq!(stdout(&out), "", "{s} is in the mount");
        assert_eq!(out.status.code(), Some(1), "grep: {}", stderr(&out));
    }
}

/// A writer commits a message to each store every 50 ms for 10 s while `grep -r` loops over
/// the mount; it must never fail, and its longest wait is printed.
fn writer_runs_beside_the_mount(mode: Journal) {
    let (home, rec) = home(mode);
    let m = Mount::new(&home, &[]);
    let writer = r#"
import json, sqlite3, sys, time
oc, he, oc_sid, he_sid, secs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
c1 = sqlite3.connect(oc, timeout=30, isolation_level=None)
c2 = sqlite3.connect(he, timeout=30, isolation_level=None)
for c in (c1, c2):
    c.execute('PRAGMA busy_timeout = 30000')
worst = {'opencode': 0.0, 'hermes': 0.0}
n = 0
end = time.time() + secs
while time.time() < end:
    n += 1
    ms = 1768172351000 + 1000 + n
    t = time.monotonic()
    c1.execute('BEGIN IMMEDIATE')
    mid = 'msg_live_%06d' % n
    c1.execute('INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?,?,?,?,?)',
               (mid, oc_sid, ms, ms, json.dumps({'role': 'user', 'time': {'created': ms}})))
    c1.execute('INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?,?,?,?,?,?)',
               ('prt_live_%06d' % n, mid, oc_sid, ms, ms, json.dumps({'type': 'text', 'text': 'oc live message %06d' % n})))
    c1.execute('UPDATE session SET time_updated = ? WHERE id = ?', (ms, oc_sid))
    c1.execute('COMMIT')
    worst['opencode'] = max(worst['opencode'], time.monotonic() - t)
    t = time.monotonic()
    c2.execute('BEGIN IMMEDIATE')
    c2.execute('INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)',
               (he_sid, 'user', 'hermes live message %06d' % n, ms / 1000.0))
    c2.execute('UPDATE sessions SET message_count = message_count + 1 WHERE id = ?', (he_sid,))
    c2.execute('COMMIT')
    worst['hermes'] = max(worst['hermes'], time.monotonic() - t)
    time.sleep(0.05)
print(json.dumps({'n': n, 'worst_ms': {k: round(v * 1000, 1) for k, v in worst.items()}}))
"#;
    let child = std::process::Command::new("python3")
        .arg("-c")
        .arg(writer)
        .arg(&rec.opencode_db)
        .arg(&rec.hermes_db)
        .arg(dbstores::OC_LIVE)
        .arg(dbstores::HERMES_LIVE)
        .arg("10")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let start = Instant::now();
    let mut greps = 0;
    while start.elapsed() < Duration::from_secs(10) {
        let out = m.sh("grep -r -c live opencode hermes > /dev/null; echo $?");
        let code = stdout(&out).trim().to_string();
        assert!(code == "0" || code == "1", "grep -r failed: {code}");
        greps += 1;
    }
    let out = child.wait_with_output().expect("writer");
    assert!(
        out.status.success(),
        "the writer failed: {}{}",
        stdout(&out),
        stderr(&out)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("writer report");
    eprintln!(
        "writer ({:?} journal): {} commits per store, longest wait {} ms (opencode) / {} ms (hermes); {greps} grep -r passes",
        mode, report["n"], report["worst_ms"]["opencode"], report["worst_ms"]["hermes"]
    );
    let n = report["n"].as_u64().expect("n");
    assert!(n > 20, "only {n} commits");
    let oc_last = format!("oc live message {n:06}");
    let he_last = format!("hermes live message {n:06}");
    let oc_t = m
        .path()
        .join("opencode")
        .join(dbstores::OC_LIVE)
        .join("transcript.md");
    let he_t = m
        .path()
        .join("hermes")
        .join(dbstores::HERMES_LIVE)
        .join("transcript.md");
    common::wait_until("last opencode message", || {
        std::fs::read_to_string(&oc_t).is_ok_and(|t| t.contains(&oc_last))
    });
    common::wait_until("last hermes message", || {
        std::fs::read_to_string(&he_t).is_ok_and(|t| t.contains(&he_last))
    });
    // Every committed message is there, in order, once.
    let t = std::fs::read_to_string(&oc_t).unwrap();
    assert_eq!(t.matches("oc live message ").count() as u64, n);
}

#[test]
fn a_writer_never_fails_beside_grep_in_wal_mode() {
    writer_runs_beside_the_mount(Journal::Wal);
}

#[test]
fn a_writer_never_fails_beside_grep_in_rollback_journal_mode() {
    writer_runs_beside_the_mount(Journal::Delete);
}

#[test]
fn broken_and_future_databases_warn_and_never_take_the_mount() {
    let h = Home::empty();
    let p = h.path();
    let oc_dir = p.join(".local/share/opencode");
    std::fs::create_dir_all(&oc_dir).unwrap();
    std::fs::write(
        oc_dir.join("opencode.db"),
        b"this is not a database at all\n".repeat(300),
    )
    .unwrap();
    // A schema from the future: extra tables, extra columns, an unknown part type.
    let c = dbstores::create(
        &oc_dir.join("opencode-dev.db"),
        Journal::Delete,
        dbstores::OPENCODE_DDL,
    );
    c.execute_batch(
        "ALTER TABLE session ADD COLUMN quantum_state TEXT;
         ALTER TABLE part ADD COLUMN hologram BLOB;
         CREATE TABLE wormhole (id TEXT PRIMARY KEY, data TEXT);
         PRAGMA user_version = 999;
         INSERT INTO project (id, worktree, time_created, time_updated, sandboxes) VALUES ('prj', '/w', 1, 1, '[]');
         INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated, quantum_state)
           VALUES ('ses_future0000000000000001', 'prj', 's', '/w', 'future', '9.0.0', 1768172351000, 1768172351000, 'superposed');",
    )
    .unwrap();
    dbstores::oc_message(
        &c,
        "ses_future0000000000000001",
        "msg_future_0001",
        serde_json::json!({"role": "user", "time": {"created": 1768172351000_i64}}),
        &[
            serde_json::json!({"type": "text", "text": "oc future text survives"}),
            serde_json::json!({"type": "hologram", "payload": 1}),
        ],
    );
    drop(c);
    // Hermes: a truncated database, and a profile from a future schema version.
    let hdb = p.join(".hermes/state.db");
    let c = dbstores::create(&hdb, Journal::Delete, dbstores::HERMES_V30);
    dbstores::hermes_session(&c, "20260101_000000_trunc001", None, "cli", None, None);
    for i in 0..200 {
        dbstores::hermes_message(
            &c,
            "20260101_000000_trunc001",
            "user",
            &format!("truncated row {i} {}", "x".repeat(500)),
            &[],
        );
    }
    drop(c);
    let bytes = std::fs::read(&hdb).unwrap();
    std::fs::write(&hdb, &bytes[..bytes.len() / 3]).unwrap();
    let fdb = p.join(".hermes/profiles/future/state.db");
    let c = dbstores::create(&fdb, Journal::Delete, dbstores::HERMES_V30);
    c.execute_batch(
        "ALTER TABLE sessions ADD COLUMN warp_factor REAL;
         ALTER TABLE messages ADD COLUMN hologram BLOB;
         CREATE TABLE tachyons (x);
         INSERT INTO schema_version VALUES (99);",
    )
    .unwrap();
    dbstores::hermes_session(&c, "20990101_000000_future01", None, "cli", None, None);
    dbstores::hermes_message(
        &c,
        "20990101_000000_future01",
        "user",
        "hermes future text survives",
        &[],
    );
    dbstores::hermes_message(
        &c,
        "20990101_000000_future01",
        "oracle",
        "an unknown role",
        &[],
    );
    drop(c);

    let m = Mount::new(&h, &[]);
    let out = m.sh("ls opencode hermes && grep -rl 'future text survives' opencode hermes");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let found = stdout(&out);
    assert!(
        found.contains("opencode/ses_future0000000000000001/"),
        "{found}"
    );
    assert!(
        found.contains("hermes/20990101_000000_future01/"),
        "{found}"
    );
    let w = m.meta("opencode/ses_future0000000000000001")["warnings"].to_string();
    assert!(w.contains("hologram"), "{w}");
    let w = m.meta("hermes/20990101_000000_future01")["warnings"].to_string();
    assert!(w.contains("oracle"), "{w}");
    // Whatever the truncated database still lists renders, with a warning or not at all.
    let out = m.sh("cat hermes/*/transcript.md > /dev/null && grep -r -c . . > /dev/null; echo $?");
    assert!(matches!(stdout(&out).trim(), "0" | "1"), "{}", stderr(&out));
    drop(m);
    let doctor = h.sessfs(&["doctor"]);
    let text = stdout(&doctor);
    assert!(text.contains("not a SQLite database"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("problem") && l.contains(".hermes/state.db")),
        "{text}"
    );
}

/// The Hermes sample `scripts/make-samples` writes (`fixtures/home/.hermes/state.db`): its
/// system prompt, the prompt, the reasoning, the terminal call and its output, the answer,
/// and the session's usage and estimated cost. The lines below are the sample's own text,
/// copied from the rows the script writes.
#[test]
fn bundled_sample_shows_the_hermes_session() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix("sessfs-hermes-samples")
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = "hermes/20260414_091502_7c2e4a1f";
    stores::assert_session_holds(
        &tree,
        dir,
        &[
            "You are Hermes Agent, a helpful assistant running in the user's terminal.",
            "but I closed the terminal it was running in. What is still holding the port?",
            "a leftover Vite dev server is the usual suspect",
            "Let me see which process is listening on 5173.",
            "lsof -nP -iTCP:5173 -sTCP:LISTEN",
            "or start this one on another port with `npm run dev -- --port 5174`.",
        ],
        &["node    48213 demo   23u  IPv6 412877      0t0  TCP *:5173 (LISTEN)"],
    );
    let meta = stores::meta(&tree, dir);
    assert_eq!(meta["title"], "Port 5173 already in use");
    assert_eq!(meta["model"], "anthropic/claude-sonnet-4.5");
    assert_eq!(meta["cwd"], "/home/demo/webapp");
    assert_eq!(meta["cost"]["totalUsd"], 0.0121);
    assert_eq!(meta["cost"]["estimated"], true);
    assert_eq!(meta["cost"]["inputTokens"], 6120);
    assert_eq!(meta["cost"]["outputTokens"], 231);
    assert_eq!(meta["warnings"], serde_json::json!([]));
}
