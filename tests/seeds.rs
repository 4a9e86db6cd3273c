//! agentuse (JSON tree), agsh/meka (SQLite) and ATSF threads through the mount and the CLI.

mod common;

use common::{agsh, stderr, stdout, Home, Mount};
use std::time::{Duration, Instant};

fn meta(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path.join("meta.json")).expect("meta.json"))
        .expect("meta.json parses")
}

#[test]
fn corrupt_seed_stores_list_their_sessions_with_warnings() {
    let home = Home::seeds();
    let p = home.path();
    // agentuse: a part file that is not JSON, and an exchange without message.json.
    let sessions = p.join(".local/share/agentuse/project");
    let part = walk(&sessions)
        .into_iter()
        .find(|f| f.parent().is_some_and(|d| d.ends_with("part")))
        .expect("an agentuse part file");
    std::fs::write(&part, b"{ not json").unwrap();
    let msg = walk(&sessions)
        .into_iter()
        .rfind(|f| f.ends_with("message.json"))
        .expect("an agentuse message.json");
    std::fs::remove_file(&msg).unwrap();
    // ATSF: a truncated messages.jsonl and an unknown block type.
    let threads = walk(p)
        .into_iter()
        .filter(|f| f.ends_with("messages.jsonl"))
        .collect::<Vec<_>>();
    assert!(threads.len() >= 2);
    let text = std::fs::read(&threads[0]).unwrap();
    std::fs::write(&threads[0], &text[..text.len() * 2 / 3]).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&threads[1])
        .unwrap();
    use std::io::Write;
    writeln!(f, "{{\"id\":\"m-x\",\"role\":\"wizard\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"content\":[{{\"type\":\"hologram\"}}]}}").unwrap();
    drop(f);
    // agsh: an unknown role; a second database file that is not a database.
    let db = agsh::agsh_db_path(p);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "INSERT INTO messages (session_id, role, content, created_at) VALUES (?1, 'oracle', 'x', '2026-01-01T00:00:00Z')",
        [agsh::AGSH_TOOLS],
    )
    .unwrap();
    drop(conn);
    let bogus = p.join("bogus-db");
    std::fs::create_dir_all(&bogus).unwrap();
    std::fs::write(bogus.join("sessions.db"), b"this is not a database").unwrap();

    let before = home.snapshot_stable();
    let store = format!("agsh={}", bogus.display());
    let m = Mount::new(&home, &["--store", &store]);
    let mut warned = Vec::new();
    for agent in ["agentuse", "agsh", "atsf"] {
        let dirs: Vec<_> = std::fs::read_dir(m.path().join(agent))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(!dirs.is_empty(), "{agent} lists nothing");
        for d in dirs {
            std::fs::read(d.join("transcript.md")).expect("renders");
            if meta(&d)["warnings"]
                .as_array()
                .is_some_and(|w| !w.is_empty())
            {
                warned.push(format!(
                    "{agent}/{}",
                    d.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    for agent in ["agentuse", "agsh", "atsf"] {
        assert!(
            warned.iter().any(|w| w.starts_with(agent)),
            "no {agent} session carries a warning: {warned:?}"
        );
    }
    let doctor = home.sessfs(&["doctor", "--store", &store]);
    assert!(
        stdout(&doctor).contains("problem"),
        "doctor names the broken database: {}",
        stdout(&doctor)
    );
    drop(m);
    assert!(before == home.snapshot_stable(), "a native store changed");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// A separate process appends agsh messages every 100 ms for 10 s, the way agsh does, while
/// `grep -r` loops over the mount. The writer never fails and no read sees half a message.
#[test]
fn agsh_writer_is_never_blocked_and_readers_see_whole_messages() {
    let home = Home::seeds();
    let db = agsh::agsh_db_path(home.path());
    let m = Mount::new(&home, &[]);
    let writer = r#"
import sqlite3, sys, time, json, datetime
db, sid = sys.argv[1], sys.argv[2]
for i in range(100):
    c = sqlite3.connect(db, timeout=5)
    now = datetime.datetime.now(datetime.timezone.utc).isoformat()
    body = json.dumps([{"type": "text", "text": f"writer message {i} begins here and writer message {i} ends here"}])
    c.execute("BEGIN IMMEDIATE")
    c.execute("INSERT INTO messages (session_id, role, content, created_at) VALUES (?, 'assistant', ?, ?)", (sid, body, now))
    c.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, sid))
    c.execute("COMMIT")
    c.close()
    time.sleep(0.1)
"#;
    let mut child = std::process::Command::new("python3")
        .arg("-c")
        .arg(writer)
        .arg(&db)
        .arg(agsh::AGSH_TOOLS)
        .spawn()
        .expect("python3");
    let session = m.path().join("agsh").join(agsh::AGSH_TOOLS);
    let start = Instant::now();
    let mut passes = 0;
    let status = loop {
        let out = m.sh("grep -r -h 'writer message' agsh");
        for line in stdout(&out).lines() {
            // Every occurrence of a begin marker comes with its end marker.
            for (i, _) in line.match_indices("begins here") {
                let head = &line[..i];
                let n = head.rsplit("writer message ").next().unwrap_or("").trim();
                assert!(
                    line.contains(&format!("writer message {n} ends here")),
                    "half a message: {line}"
                );
            }
        }
        let jl = std::fs::read_to_string(session.join("messages.jsonl")).unwrap();
        for l in jl.lines() {
            serde_json::from_str::<serde_json::Value>(l).expect("whole JSON lines only");
        }
        passes += 1;
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "writer hangs");
    };
    eprintln!("{passes} read passes while the writer ran");
    assert!(
        status.success(),
        "the writer failed while sessfs was reading"
    );
    assert!(
        passes > 1,
        "reads must overlap the writes, got {passes} pass"
    );
    common::wait_until("the last write", || {
        std::fs::read_to_string(session.join("transcript.md"))
            .unwrap()
            .contains("writer message 99 ends here")
    });
}

#[test]
fn list_show_and_doctor_cover_the_seed_stores() {
    let home = Home::seeds();
    let out = home.sessfs(&["list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    for agent in ["agentuse", "agsh", "atsf"] {
        let one = list
            .iter()
            .find(|m| m["agent"] == agent)
            .unwrap_or_else(|| panic!("no {agent} in sessfs list"));
        let id = one["unifiedId"].as_str().unwrap();
        let show = home.sessfs(&["show", id]);
        assert!(show.status.success(), "show {id}: {}", stderr(&show));
        assert!(stdout(&show).starts_with("# "));
    }
    let text = stdout(&home.sessfs(&["doctor"]));
    for needle in ["agentuse", "sessions.db", "meka.db", ".agent/threads"] {
        assert!(
            text.contains(needle),
            "doctor does not name {needle}: {text}"
        );
    }
    let out_dir = tempfile::tempdir().unwrap();
    let tree = out_dir.path().join("tree");
    let r = home.sessfs(&["render", tree.to_str().unwrap()]);
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(tree.join("agsh").is_dir(), "render wrote the agsh sessions");
    let grep = std::process::Command::new("grep")
        .args(["-r", "-l", agsh::AGSH_SECRET])
        .arg(&tree)
        .output()
        .unwrap();
    assert_eq!(grep.status.code(), Some(1), "secret in {}", stdout(&grep));
}

#[test]
fn credentials_never_reach_the_mount() {
    let home = Home::seeds();
    let m = Mount::new(&home, &[]);
    let out = m.sh(&format!("grep -r -l '{}' .", agsh::AGSH_SECRET));
    assert_eq!(out.status.code(), Some(1), "found: {}", stdout(&out));
}
