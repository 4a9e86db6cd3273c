//! Cursor (cursor-agent `store.db`, agent transcripts, IDE `state.vscdb`) and OpenClaw (file
//! and SQLite eras) through a real mount. Expectations come from what the fixture writer
//! wrote (`common::cursor::Record`), never from sessfs' parser.

mod common;

use common::cursor::{self, Record};
use common::{stderr, stdout, stores, Home, Mount};
use std::collections::BTreeSet;
use std::path::Path;

fn home() -> (Home, Record) {
    let mut h = Home::empty();
    let r = cursor::write(h.path());
    h.files.extend(r.files.iter().cloned());
    (h, r)
}

#[test]
fn every_message_and_tool_output_is_in_exactly_its_session() {
    let (home, rec) = home();
    let before = home.snapshot_stable();
    let m = Mount::new(&home, &[]);
    let mut dirs: BTreeSet<String> = rec.texts.iter().map(|(d, _)| d.clone()).collect();
    dirs.extend(rec.warned.iter().cloned());
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
    // Exactly these sessions: no empty composer, no superseded file, no event-less row.
    for agent in ["cursor", "openclaw"] {
        let listed: BTreeSet<String> = std::fs::read_dir(m.path().join(agent))
            .unwrap()
            .flatten()
            .map(|e| format!("{agent}/{}", e.file_name().to_string_lossy()))
            .collect();
        let want: BTreeSet<String> = dirs
            .iter()
            .filter(|d| d.starts_with(&format!("{agent}/")))
            .cloned()
            .collect();
        assert_eq!(listed, want);
    }
    for (dir, text) in &rec.texts {
        assert_eq!(
            m.sessions_holding(text, &["cursor", "openclaw"]),
            BTreeSet::from([dir.clone()]),
            "'{text}'"
        );
    }
    for text in &rec.hidden {
        assert_eq!(
            m.sessions_holding(text, &["cursor", "openclaw"]),
            BTreeSet::new(),
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
    for (dir, first, later) in &rec.order {
        let t = std::fs::read_to_string(m.path().join(dir).join("transcript.md")).unwrap();
        let (a, b) = (t.find(first.as_str()), t.find(later.as_str()));
        assert!(
            a.is_some() && b.is_some() && a < b,
            "{dir}: '{first}' before '{later}'"
        );
    }
    for (dir, title) in &rec.titles {
        assert_eq!(m.meta(dir)["title"], title.as_str(), "{dir}");
    }
    for dir in &rec.warned {
        let w = &m.meta(dir)["warnings"];
        assert!(
            w.as_array().is_some_and(|a| !a.is_empty()),
            "{dir}: no warning: {w}"
        );
    }
    // What each source gives beyond text.
    let cli = m.meta(&format!("cursor/{}", cursor::CLI_ID));
    assert_eq!(cli["cwd"], "/home/dev/cursor proj", "{cli}");
    let ide = m.meta(&format!("cursor/{}", cursor::COMPOSER));
    assert_eq!(ide["cwd"], "/home/dev/cursor proj", "{ide}");
    for (id, cwd) in [
        (cursor::TAB_A, "/home/dev/ws proj"),
        (cursor::WS_COMPOSER, "/home/dev/ws proj"),
        (cursor::TAB_REMOTE, "/home/ubuntu/remote-proj"),
    ] {
        let meta = m.meta(&format!("cursor/{id}"));
        assert_eq!(meta["cwd"], cwd, "{meta}");
    }
    assert!(m
        .path()
        .join("cursor")
        .join(cursor::NESTED_ID)
        .join("subagents/helper-1/transcript.md")
        .is_file());
    let oc = m.meta(&format!("openclaw/{}", cursor::OC_V1));
    assert!(oc["cost"]["totalUsd"].as_f64().unwrap() > 0.0, "{oc}");

    sizes_agree(&m);
    for d in [
        format!("cursor/{}", cursor::CLI_ID),
        format!("openclaw/{}", cursor::OC_LATEST),
    ] {
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
    common::assert_sizes_agree(m.path(), &["cursor", "openclaw"], 1);
}

#[test]
fn cursor_credentials_in_item_table_never_appear() {
    let (home, rec) = home();
    let mut bytes = std::fs::read(&rec.ide_db).unwrap();
    if let Ok(w) = std::fs::read(format!("{}-wal", rec.ide_db.display())) {
        bytes.extend(w);
    }
    for s in cursor::SECRETS {
        assert!(
            bytes.windows(s.len()).any(|w| w == s.as_bytes()),
            "{s} was not planted"
        );
    }
    for db in &rec.ws_dbs {
        let mut bytes = std::fs::read(db).unwrap();
        if let Ok(w) = std::fs::read(format!("{}-wal", db.display())) {
            bytes.extend(w);
        }
        let s = cursor::WS_SECRET.as_bytes();
        assert!(
            bytes.windows(s.len()).any(|w| w == s),
            "not planted in {}",
            db.display()
        );
    }
    let m = Mount::new(&home, &[]);
    assert!(m.path().join("cursor").join(cursor::COMPOSER).is_dir());
    assert!(m.path().join("cursor").join(cursor::TAB_A).is_dir());
    for s in cursor::SECRETS.iter().chain([&cursor::WS_SECRET]) {
        let out = m.sh(&format!("grep -rlF '{s}' ."));
        assert_eq!(stdout(&out), "", "{s} is in the mount");
        assert_eq!(out.status.code(), Some(1), "grep: {}", stderr(&out));
    }
}

#[test]
fn broken_cursor_and_openclaw_stores_warn_and_never_take_the_mount() {
    let (home, _rec) = home();
    let m = Mount::new(&home, &[]);
    let out = m.sh(
        "ls cursor openclaw && cat cursor/*/transcript.md openclaw/*/transcript.md > /dev/null",
    );
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let w = m.meta(&format!("cursor/{}", cursor::CLI_BAD_ROOT))["warnings"].to_string();
    assert!(w.contains("root blob"), "{w}");
    let w = m.meta(&format!("cursor/{}", cursor::CLI_TRUNCATED))["warnings"].to_string();
    assert!(w.contains("cannot read") || w.contains("malformed"), "{w}");
    drop(m);
    let doctor = home.sessfs(&["doctor"]);
    let text = stdout(&doctor);
    assert!(
        text.lines()
            .any(|l| l.contains("problem")
                && l.contains("agents/broken/agent/openclaw-agent.sqlite")),
        "{text}"
    );
}

#[test]
fn doctor_names_every_agent_and_supports_each() {
    let h = Home::empty();
    let out = h.sessfs(&["doctor"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let names: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("FUSE"))
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    // One string, so an agent with a long name does not reflow the list one per line.
    let expected = "claude codex gemini copilot cursor opencode pi omp openclaw hermes agentuse \
                    agsh indusagi atsf cline roo kilo crush amp qwen kimi aider continue zed \
                    copilot-chat droid openhands goose gptme kiro vibe grok forge mux neovate llxprt codebuff kode nanocoder interpreter cody void aichat codecompanion avante llm copilotchat gp fabric chatgptnvim parrot everycode ellama octofriend pearai jan sgpt oterm dyad mods iflow anythingllm ollama";
    assert_eq!(
        names,
        expected.split_whitespace().collect::<Vec<_>>(),
        "{text}"
    );
    assert!(!text.contains("not supported yet"), "{text}");
    assert!(Path::new(&common::bin()).exists());
}

/// A writer commits to Cursor's IDE database (a new bubble and its header, as the IDE does)
/// and to an OpenClaw agent database (a new transcript event) every 50 ms for 10 s while
/// `grep -r` loops over the mount: it never fails, its longest wait is printed, and the
/// last message shows.
#[test]
fn a_writer_never_fails_beside_grep_in_the_cursor_and_openclaw_databases() {
    let (home, _) = home();
    let ide = cursor::ide_db_path(home.path());
    let oc = home
        .path()
        .join(".openclaw/agents/main/agent/openclaw-agent.sqlite");
    let m = Mount::new(&home, &[]);
    let writer = r#"
import json, sqlite3, sys, time
ide, oc, comp, oc_sid, secs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
c1 = sqlite3.connect(ide, timeout=30, isolation_level=None)
c2 = sqlite3.connect(oc, timeout=30, isolation_level=None)
worst = {'cursor': 0.0, 'openclaw': 0.0}
n = 0
end = time.time() + secs
while time.time() < end:
    n += 1
    t = time.monotonic()
    c1.execute('BEGIN IMMEDIATE')
    key = 'composerData:' + comp
    data = json.loads(c1.execute('SELECT value FROM cursorDiskKV WHERE key = ?', (key,)).fetchone()[0])
    bid = 'b-live-%06d' % n
    data['fullConversationHeadersOnly'].append({'bubbleId': bid, 'type': 1})
    c1.execute('UPDATE cursorDiskKV SET value = ? WHERE key = ?', (json.dumps(data), key))
    c1.execute('INSERT INTO cursorDiskKV (key, value) VALUES (?, ?)',
               ('bubbleId:%s:%s' % (comp, bid),
                json.dumps({'_v': 3, 'type': 1, 'bubbleId': bid, 'text': 'cursor live message %06d' % n})))
    c1.execute('COMMIT')
    worst['cursor'] = max(worst['cursor'], time.monotonic() - t)
    t = time.monotonic()
    c2.execute('BEGIN IMMEDIATE')
    seq, last = c2.execute('SELECT seq, event_json FROM transcript_events WHERE session_id = ? ORDER BY seq DESC LIMIT 1', (oc_sid,)).fetchone()
    ev = {'type': 'message', 'id': 'live%06d' % n, 'parentId': json.loads(last)['id'],
          'timestamp': '2026-07-10T00:00:00.000Z',
          'message': {'role': 'user', 'content': [{'type': 'text', 'text': 'openclaw live message %06d' % n}],
                      'timestamp': 1783670400000 + n}}
    c2.execute('INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, ?, ?, ?)',
               (oc_sid, seq + 1, json.dumps(ev), 1783670400000 + n))
    c2.execute('COMMIT')
    worst['openclaw'] = max(worst['openclaw'], time.monotonic() - t)
    time.sleep(0.05)
print(json.dumps({'n': n, 'worst_ms': {k: round(v * 1000, 1) for k, v in worst.items()}}))
"#;
    let child = std::process::Command::new("python3")
        .arg("-c")
        .arg(writer)
        .arg(&ide)
        .arg(&oc)
        .arg(cursor::COMPOSER)
        .arg(cursor::OC_V1)
        .arg("10")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let start = std::time::Instant::now();
    let mut greps = 0;
    while start.elapsed() < std::time::Duration::from_secs(10) {
        let out = m.sh("grep -r -c live cursor openclaw > /dev/null; echo $?");
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
        "writer (WAL): {} commits per store, longest wait {} ms (cursor) / {} ms (openclaw); {greps} grep -r passes",
        report["n"], report["worst_ms"]["cursor"], report["worst_ms"]["openclaw"]
    );
    let n = report["n"].as_u64().expect("n");
    assert!(n > 20, "only {n} commits");
    for (agent, id, text) in [
        (
            "cursor",
            cursor::COMPOSER,
            format!("cursor live message {n:06}"),
        ),
        (
            "openclaw",
            cursor::OC_V1,
            format!("openclaw live message {n:06}"),
        ),
    ] {
        let t = m.path().join(agent).join(id).join("transcript.md");
        common::wait_until(&format!("last {agent} message"), || {
            std::fs::read_to_string(&t).is_ok_and(|s| s.contains(&text))
        });
        let s = std::fs::read_to_string(&t).expect("transcript");
        let live = format!("{agent} live message ");
        assert_eq!(
            s.matches(&live).count() as u64,
            n,
            "{agent}: every commit once"
        );
    }
}

/// `sessfs render` of the bundled samples (`fixtures/home` as `$HOME`) into a temporary tree.
fn render_samples(prefix: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home::empty();
    let tmp = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("tmp");
    let tree = tmp.path().join("tree");
    let o = home
        .command(&["render", tree.to_str().expect("utf-8")])
        .env("HOME", &samples)
        .output()
        .expect("render");
    assert!(o.status.success(), "{}", stderr(&o));
    (tmp, tree)
}

/// The OpenClaw sample written by hand in `fixtures/home/.openclaw/agents/main/sessions/`: a
/// Telegram prompt in OpenClaw's envelope, thinking, a file read and its output, the reply
/// with per-reply usage and cost, and the title `sessions.json` gives it. The lines below are
/// the sample's own text.
#[test]
fn bundled_sample_shows_the_openclaw_session() {
    let (_tmp, tree) = render_samples("sessfs-openclaw-samples");
    let dir = "openclaw/8e3b5d71-2c4a-4f96-b0d8-7a1e6c9f2b43";
    stores::assert_session_holds(
        &tree,
        dir,
        &[
            "Did last night's build of the webapp pass? Its log is ~/webapp/logs/nightly.log",
            "its last lines say whether the build and the tests passed.",
            "/home/demo/webapp/logs/nightly.log",
            "`applies a percentage coupon once` in src/checkout/coupon.test.ts. Shall I look at that test?",
        ],
        &[
            "[02:01:35] npm test: 212 passed, 1 failed",
            "[02:01:35] nightly: FAILED (exit 1)",
        ],
    );
    let meta = stores::meta(&tree, dir);
    assert_eq!(meta["title"], "Telegram: Demo (@demo_dev)");
    assert_eq!(meta["model"], "claude-sonnet-4-5");
    assert_eq!(meta["cwd"], "/home/demo/.openclaw/workspace");
    // 412 + 268 input, 142 + 96 output; 0.014541 + 0.003138 dollars.
    assert_eq!(meta["cost"]["inputTokens"], 680);
    assert_eq!(meta["cost"]["outputTokens"], 238);
    let usd = meta["cost"]["totalUsd"].as_f64().expect("cost");
    assert!((usd - 0.017679).abs() < 1e-9, "{usd}");
    assert_eq!(meta["warnings"], serde_json::json!([]));
}

/// The Cursor sample `scripts/make-samples` writes in the IDE's global state
/// (`fixtures/home/.config/Cursor/User/globalStorage/state.vscdb`): the composer's name and
/// model, the prompt, thinking, a file read and its result, the answer and each reply's token
/// counts. The lines below are the sample's own text, copied from the bubbles the script
/// writes.
#[test]
fn bundled_sample_shows_the_cursor_composer() {
    let (_tmp, tree) = render_samples("sessfs-cursor-samples");
    let dir = "cursor/5b7e1c9a-2d4f-4e83-9a60-1f3c8d2e7b45";
    stores::assert_session_holds(
        &tree,
        dir,
        &[
            "Can they load only when they are about to scroll into view?",
            "so no observer code is needed; first see how ProductCard renders the image.",
            "Let me look at how the product card renders its image.",
            "src/components/ProductCard.tsx",
            "Its `width` and `height` are already set, so the grid does not jump while the images arrive.",
        ],
        &["<img src={product.imageUrl} alt={product.name} width={320} height={240} />"],
    );
    let meta = stores::meta(&tree, dir);
    assert_eq!(meta["title"], "Lazy-load the catalog images");
    assert_eq!(meta["model"], "claude-4.5-sonnet");
    assert_eq!(meta["cwd"], "/home/demo/webapp");
    // 5210 + 6034 input, 88 + 141 output.
    assert_eq!(meta["cost"]["inputTokens"], 11244);
    assert_eq!(meta["cost"]["outputTokens"], 229);
    assert_eq!(meta["warnings"], serde_json::json!([]));
}
