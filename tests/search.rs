//! `sessfs search` and the mount's `search/` directory, against the hand-written oracle of
//! what the test stores hold (`common::expected`), never against sessfs' own parser.

mod common;

use common::{age, expected, logged_search, stderr, stdout, Home, Mount};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The query that finds `line` as written: a phrase, quotes doubled.
fn phrase(line: &str) -> String {
    format!("\"{}\"", line.replace('"', "\"\""))
}

/// `<agent>/<name>` of every session `sessfs search --json` finds for `query`.
fn cli_sessions(home: &Home, query: &str) -> (Option<i32>, BTreeSet<String>) {
    let out = home.sessfs(&["search", "--json", "--limit", "100000", query]);
    let found = stdout(&out)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("one JSON object per hit");
            let path = v["path"].as_str().expect("path");
            let mut parts = path.split('/');
            format!(
                "{}/{}",
                parts.next().expect("agent"),
                parts.next().expect("name")
            )
        })
        .collect();
    (out.status.code(), found)
}

/// `<agent>/<name>` of the links in `search/<query>/`, each checked to lead to its session.
fn mount_sessions(m: &Mount, query: &str) -> BTreeSet<String> {
    let dir = m.path().join("search").join(query);
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(&dir)
        .expect("search/<query>/ opens")
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        let (agent, session) = name.split_once(':').expect("<agent>:<session>");
        let target = std::fs::read_link(e.path()).expect("a symlink");
        assert_eq!(
            target.to_str(),
            Some(format!("../../{agent}/{session}").as_str())
        );
        assert!(
            e.path().join("meta.json").is_file(),
            "{name} leads to its session"
        );
        out.insert(format!("{agent}/{session}"));
    }
    out
}

fn check_line(home: &Home, m: &Mount, line: &str, want: &BTreeSet<String>) {
    let q = phrase(line);
    let (code, found) = cli_sessions(home, &q);
    assert_eq!(code, Some(0), "sessfs search {q}");
    assert_eq!(&found, want, "sessfs search {q}");
    // A directory name cannot hold '/', and a name is at most 255 bytes.
    if !q.contains('/') && q.len() <= 255 {
        assert_eq!(&mount_sessions(m, &q), want, "ls search/{q}/");
    }
}

#[test]
fn every_message_line_is_found_in_exactly_its_session() {
    let home = Home::spine();
    let m = Mount::new(&home, &[]);
    for (dirs, line) in expected::SPINE_LINES {
        let want: BTreeSet<String> = dirs.split('|').map(str::to_string).collect();
        check_line(&home, &m, line, &want);
    }
}

#[test]
fn every_seed_store_line_is_found_in_exactly_its_session() {
    let home = Home::seeds();
    let m = Mount::new(&home, &[]);
    let mut seen = BTreeSet::new();
    for (agent, lines) in expected::SEED_GROUPS {
        let (_, first) = cli_sessions(&home, &phrase(lines[0]));
        assert_eq!(first.len(), 1, "'{}' is in {first:?}", lines[0]);
        let dir = first.iter().next().expect("one").clone();
        assert!(
            dir.starts_with(&format!("{agent}/")),
            "'{}' in {dir}",
            lines[0]
        );
        for line in *lines {
            check_line(&home, &m, line, &first);
        }
        assert!(seen.insert(dir.clone()), "two groups share {dir}");
    }
}

/// A pi session file with one user message, as in `tests/mounted.rs`.
fn pi_message(id: &str, parent: &str, text: &str) -> String {
    format!("{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}],\"timestamp\":1767225601000}}}}\n")
}

fn live_pi_session(home: &Home) -> PathBuf {
    let dir = home.path().join(".pi/agent/sessions/--tmp-live--");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("2026-01-01T00-00-00-000Z_33333333-0000-4000-8000-000000000001.jsonl");
    let mut text = String::from("{\"type\":\"session\",\"version\":3,\"id\":\"33333333-0000-4000-8000-000000000001\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/tmp/live\"}\n");
    text.push_str(&pi_message(
        "a0000001",
        "null",
        "the first liveprobe question",
    ));
    std::fs::write(&file, text).unwrap();
    file
}

const LIVE: &str = "pi/33333333-0000-4000-8000-000000000001";

#[test]
fn a_message_appended_while_mounted_is_found_within_a_second() {
    let home = Home::spine();
    let file = live_pi_session(&home);
    let m = Mount::new(&home, &[]);
    // Build the index first, so the append is an incremental update.
    assert_eq!(
        cli_sessions(&home, "liveprobe").1,
        BTreeSet::from([LIVE.to_string()])
    );
    assert!(mount_sessions(&m, "zebracornflake").is_empty());
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    use std::io::Write;
    f.write_all(pi_message("a0000002", "\"a0000001\"", "the zebracornflake question").as_bytes())
        .unwrap();
    drop(f);
    let want = BTreeSet::from([LIVE.to_string()]);
    common::wait_until("appended line in search/zebracornflake/", || {
        mount_sessions(&m, "zebracornflake") == want
    });
    common::wait_until("appended line in sessfs search", || {
        cli_sessions(&home, "zebracornflake").1 == want
    });
}

#[test]
fn an_unknown_word_finds_nothing_and_exits_1() {
    let home = Home::spine();
    let m = Mount::new(&home, &[]);
    let out = home.sessfs(&["search", "qqxyzzyunknownword"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert!(mount_sessions(&m, "qqxyzzyunknownword").is_empty());
    // search/ lists nothing, so walks never enter it.
    let listed: Vec<_> = std::fs::read_dir(m.path().join("search"))
        .unwrap()
        .collect();
    assert!(listed.is_empty());
    let out = m.sh("grep -rl 'Hello Claude! Can you help me' . | grep -c '^./search' || true");
    assert_eq!(stdout(&out).trim(), "0");
}

fn index_file(home: &Home) -> PathBuf {
    home.path().join(".cache/sessfs/index.sqlite3")
}

fn finds_sample(home: &Home) -> std::process::Output {
    let out = home.sessfs(&["search", "bounces back to /login"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with(&format!(
        "claude/{}/transcript.md:",
        common::claude::SAMPLE_ID
    )));
    out
}

#[test]
fn deleting_the_index_loses_nothing() {
    let home = Home::spine();
    finds_sample(&home);
    let ix = index_file(&home);
    assert!(ix.is_file());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(ix.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "the cache directory is private");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", ix.display()));
    }
    let out = finds_sample(&home);
    assert_eq!(stderr(&out), "");
}

#[test]
fn a_garbage_index_is_rebuilt_with_one_warning() {
    let home = Home::spine();
    let ix = index_file(&home);
    std::fs::create_dir_all(ix.parent().unwrap()).unwrap();
    std::fs::write(&ix, vec![0x5a_u8; 10_000]).unwrap();
    let out = finds_sample(&home);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("rebuilding"), "{err}");
    // Rebuilt for good: the next search is silent.
    assert_eq!(stderr(&finds_sample(&home)), "");
}

#[test]
fn output_is_rg_like_and_filters_apply() {
    let home = Home::spine();
    let out = home.sessfs(&["search", "Python decorators"]);
    let text = stdout(&out);
    let first = text.lines().next().expect("a hit");
    // path:line:[date · title] text, no colour on a pipe.
    let (path, rest) = first.split_once(':').unwrap();
    let (line, rest) = rest.split_once(':').unwrap();
    assert!(Path::new(path).starts_with("claude"), "{first}");
    assert!(line.parse::<u64>().is_ok(), "{first}");
    assert!(rest.starts_with("[20"), "{first}");
    assert!(!text.contains('\x1b'));
    // A prefix is a substring; a substring finds words it is inside of.
    let prefix = cli_sessions(&home, "decorat*").1;
    assert_eq!(prefix, cli_sessions(&home, "decorat").1);
    assert!(prefix.is_superset(&cli_sessions(&home, "ecorato").1));
    assert!(cli_sessions(&home, "ecorato")
        .1
        .contains("claude/representative"));
    // --agent narrows.
    assert_eq!(
        home.sessfs(&["search", "--agent", "pi", "Python decorators"])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn phrases_match_in_order_and_short_words_match_too() {
    let home = Home::spine();
    let session = "claude/representative".to_string();
    let (code, found) = cli_sessions(&home, r#""Can you help me understand""#);
    assert_eq!(code, Some(0));
    assert!(found.contains(&session), "{found:?}");
    // Every word of this phrase is in that line, in another order: no hit anywhere.
    let (code, found) = cli_sessions(&home, r#""understand me help you Can""#);
    assert_eq!((code, found), (Some(1), BTreeSet::new()));
    // Words too short for a trigram are still substrings that must occur.
    assert!(cli_sessions(&home, "he")
        .1
        .is_superset(&cli_sessions(&home, "Hello").1));
    assert!(cli_sessions(&home, "de Py").1.contains(&session));
    assert_eq!(cli_sessions(&home, "☃☃").0, Some(1));
}

// ---------------------------------------------------------------------------------------
// A search when nothing changed lists no store, and still finds every change

/// A Claude Code project of its own (no other store in the home).
fn glance_project(home: &Home) -> PathBuf {
    home.path().join(".claude/projects/-tmp-glance")
}

fn glance_id(n: u32) -> String {
    format!("61a4ce00-0000-4000-8000-{n:012}")
}

/// One Claude Code user record of session `n`, as Claude Code writes it.
fn glance_record(n: u32, i: u32, text: &str) -> String {
    let parent = if i == 0 {
        "null".to_string()
    } else {
        format!("\"u{n}-{}\"", i - 1)
    };
    format!(
        "{{\"type\":\"user\",\"uuid\":\"u{n}-{i}\",\"parentUuid\":{parent},\"sessionId\":\"{}\",\"cwd\":\"/tmp/glance\",\"version\":\"2.1.40\",\"timestamp\":\"2026-02-20T10:00:0{i}.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\"}}}}\n",
        glance_id(n)
    )
}

fn glance_file(home: &Home, n: u32) -> PathBuf {
    glance_project(home).join(format!("{}.jsonl", glance_id(n)))
}

/// Sessions 1-3, each with a word of its own (`glanceone`, `glancetwo`, `glancethree`);
/// with a pi session beside them when `pi` (a store listed at every search).
fn glance_home(pi: bool) -> Home {
    let home = Home::empty();
    if pi {
        let file = live_pi_session(&home);
        age(file.parent().unwrap(), 3600);
        age(&home.path().join(".pi/agent/sessions"), 3600);
    }
    let dir = glance_project(&home);
    std::fs::create_dir_all(&dir).unwrap();
    for (n, word) in [(1, "glanceone"), (2, "glancetwo"), (3, "glancethree")] {
        std::fs::write(
            glance_file(&home, n),
            glance_record(n, 0, &format!("the {word} question")),
        )
        .unwrap();
    }
    for d in [
        dir.as_path(),
        dir.parent().unwrap(),
        &home.path().join(".claude"),
    ] {
        age(d, 3600);
    }
    home
}

fn claude_set(ns: &[u32]) -> BTreeSet<String> {
    ns.iter()
        .map(|n| format!("claude/{}", glance_id(*n)))
        .collect()
}

/// Appending to a session, adding one and deleting one, each followed by a search; with a
/// mount running when `mounted` (its own searches write the index too), and a pi store
/// beside (listed at every search: the Claude store's glance spares it alone).
fn changes_are_found_by_the_next_search(mounted: bool) {
    let home = glance_home(mounted);
    let m = mounted.then(|| Mount::new(&home, &[]));
    // The first search lists and indexes; the next, nothing changed, lists no store.
    assert_eq!(logged_search(&home, "glanceone"), (claude_set(&[1]), false));
    assert_eq!(logged_search(&home, "glancetwo"), (claude_set(&[2]), true));
    // An appended message: no directory moves, the session file grows.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(glance_file(&home, 1))
        .unwrap();
    use std::io::Write;
    f.write_all(glance_record(1, 1, "an appendedglance answer").as_bytes())
        .unwrap();
    drop(f);
    assert_eq!(logged_search(&home, "appendedglance").0, claude_set(&[1]));
    if let Some(m) = &m {
        assert_eq!(mount_sessions(m, "appendedglance"), claude_set(&[1]));
    }
    assert_eq!(
        logged_search(&home, "appendedglance"),
        (claude_set(&[1]), true)
    );
    // A new session: its project directory moves (here to another time long ago, so the
    // glance taken after it is trusted at once).
    std::fs::write(
        glance_file(&home, 4),
        glance_record(4, 0, "the glancefour question"),
    )
    .unwrap();
    age(&glance_project(&home), 3000);
    assert_eq!(logged_search(&home, "glancefour").0, claude_set(&[4]));
    if let Some(m) = &m {
        assert_eq!(mount_sessions(m, "glancefour"), claude_set(&[4]));
    }
    assert_eq!(logged_search(&home, "glance").0, claude_set(&[1, 2, 3, 4]));
    // A deleted session.
    std::fs::remove_file(glance_file(&home, 2)).unwrap();
    age(&glance_project(&home), 2400);
    assert_eq!(logged_search(&home, "glancetwo").0, BTreeSet::new());
    assert_eq!(
        logged_search(&home, "glance"),
        (claude_set(&[1, 3, 4]), true)
    );
    if mounted {
        let live = BTreeSet::from([LIVE.to_string()]);
        assert_eq!(logged_search(&home, "liveprobe"), (live.clone(), true));
        // A message appended to the pi session: its store's glance moves too.
        let file = home
            .path()
            .join(".pi/agent/sessions/--tmp-live--/2026-01-01T00-00-00-000Z_33333333-0000-4000-8000-000000000001.jsonl");
        let mut f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
        f.write_all(pi_message("a0000002", "\"a0000001\"", "the piglance answer").as_bytes())
            .unwrap();
        drop(f);
        assert_eq!(logged_search(&home, "piglance").0, live);
        assert_eq!(logged_search(&home, "piglance"), (live, true));
    }
}

#[test]
fn changes_are_found_by_the_next_search_without_a_mount() {
    changes_are_found_by_the_next_search(false);
}

#[test]
fn changes_are_found_by_the_next_search_with_a_mount_running() {
    changes_are_found_by_the_next_search(true);
}

fn codex_id(n: u32) -> String {
    format!("0f0f0f0f-0000-7000-8000-{n:012}")
}

/// Rollout `n` of the Codex day directory `day` (`2026/02/20`), its first prompt saying
/// `text`.
fn codex_rollout(home: &Home, day: &str, n: u32, text: &str) -> PathBuf {
    let dir = home.path().join(".codex/sessions").join(day);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!(
        "rollout-2026-02-20T10-00-0{n}-{}.jsonl",
        codex_id(n)
    ));
    let meta = format!(
        "{{\"timestamp\":\"2026-02-20T10:00:00.000Z\",\"type\":\"session_meta\",\"payload\":{{\"id\":\"{}\",\"timestamp\":\"2026-02-20T10:00:00.000Z\",\"cwd\":\"/tmp/glance\",\"originator\":\"codex_cli_rs\",\"cli_version\":\"0.50.0\"}}}}\n",
        codex_id(n)
    );
    std::fs::write(&file, meta + &codex_prompt(text)).unwrap();
    file
}

fn codex_prompt(text: &str) -> String {
    format!("{{\"timestamp\":\"2026-02-20T10:00:01.000Z\",\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":\"{text}\"}}]}}}}\n")
}

fn codex_set(ns: &[u32]) -> BTreeSet<String> {
    ns.iter()
        .map(|n| format!("codex/{}", codex_id(*n)))
        .collect()
}

/// The Codex store's glance: with nothing changed a search lists no store; a message
/// appended to a rollout, a rollout in a new day directory and a deleted rollout are each
/// found by the next search.
#[test]
fn codex_changes_are_found_by_the_next_search() {
    let home = Home::empty();
    let mut files = Vec::new();
    for (n, word) in [(1, "codexone"), (2, "codextwo"), (3, "codexthree")] {
        files.push(codex_rollout(
            &home,
            "2026/02/20",
            n,
            &format!("the {word} question"),
        ));
    }
    let sessions = home.path().join(".codex/sessions");
    for d in ["2026/02/20", "2026/02", "2026", ""] {
        age(&sessions.join(d), 3600);
    }
    age(&home.path().join(".codex"), 3600);
    assert_eq!(logged_search(&home, "codexone"), (codex_set(&[1]), false));
    assert_eq!(logged_search(&home, "codextwo"), (codex_set(&[2]), true));
    // An appended message: no directory moves, the rollout grows.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&files[0])
        .unwrap();
    use std::io::Write;
    f.write_all(codex_prompt("an appendedcodex answer").as_bytes())
        .unwrap();
    drop(f);
    assert_eq!(logged_search(&home, "appendedcodex").0, codex_set(&[1]));
    assert_eq!(
        logged_search(&home, "appendedcodex"),
        (codex_set(&[1]), true)
    );
    // A rollout in a new day directory: only the month directory's mtime moves.
    codex_rollout(&home, "2026/02/21", 4, "the codexfour question");
    age(&sessions.join("2026/02/21"), 3000);
    age(&sessions.join("2026/02"), 3000);
    assert_eq!(logged_search(&home, "codexfour").0, codex_set(&[4]));
    assert_eq!(logged_search(&home, "codexfour"), (codex_set(&[4]), true));
    // A deleted rollout.
    std::fs::remove_file(&files[1]).unwrap();
    age(&sessions.join("2026/02/20"), 2400);
    assert_eq!(logged_search(&home, "codextwo").0, BTreeSet::new());
    assert_eq!(
        logged_search(&home, "question"),
        (codex_set(&[1, 3, 4]), true)
    );
}

/// Gemini CLI chat `n` of project `project` (under `~/.gemini/tmp/`), its prompt saying
/// `text`.
fn gemini_chat(home: &Home, project: &str, n: u32, text: &str) -> PathBuf {
    let dir = home.path().join(".gemini/tmp").join(project).join("chats");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("session-2026-02-20T10-0{n}-{}.jsonl", gemini_id(n)));
    let head = format!(
        "{{\"sessionId\":\"{}\",\"projectHash\":\"9f2b\",\"startTime\":\"2026-02-20T10:00:00.000Z\",\"lastUpdated\":\"2026-02-20T10:00:00.000Z\",\"kind\":\"main\"}}\n",
        gemini_id(n)
    );
    std::fs::write(&file, head + &gemini_prompt(n, 1, text)).unwrap();
    file
}

fn gemini_id(n: u32) -> String {
    format!("4f1c2d3e-0000-4000-8000-{n:012}")
}

fn gemini_prompt(n: u32, i: u32, text: &str) -> String {
    format!("{{\"id\":\"u{n}-{i}\",\"timestamp\":\"2026-02-20T10:00:0{i}.000Z\",\"type\":\"user\",\"content\":[{{\"text\":\"{text}\"}}]}}\n")
}

fn gemini_set(ns: &[u32]) -> BTreeSet<String> {
    ns.iter()
        .map(|n| format!("gemini/{}", gemini_id(*n)))
        .collect()
}

/// The Gemini CLI store's glance: with nothing changed a search lists no store; a message
/// appended to a chat, a chat of a new project and a deleted chat are each found by the
/// next search.
#[test]
fn gemini_changes_are_found_by_the_next_search() {
    let home = Home::empty();
    let mut files = Vec::new();
    for (n, word) in [(1, "geminione"), (2, "geminitwo"), (3, "geminithree")] {
        files.push(gemini_chat(
            &home,
            "webapp",
            n,
            &format!("the {word} question"),
        ));
    }
    let tmp = home.path().join(".gemini/tmp");
    for d in ["webapp/chats", "webapp", ""] {
        age(&tmp.join(d), 3600);
    }
    age(&home.path().join(".gemini"), 3600);
    assert_eq!(logged_search(&home, "geminione"), (gemini_set(&[1]), false));
    assert_eq!(logged_search(&home, "geminitwo"), (gemini_set(&[2]), true));
    // An appended message: no directory moves, the chat grows.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&files[0])
        .unwrap();
    use std::io::Write;
    f.write_all(gemini_prompt(1, 2, "an appendedgemini answer").as_bytes())
        .unwrap();
    drop(f);
    assert_eq!(logged_search(&home, "appendedgemini").0, gemini_set(&[1]));
    assert_eq!(
        logged_search(&home, "appendedgemini"),
        (gemini_set(&[1]), true)
    );
    // A chat of a new project: only `tmp/`'s mtime moves.
    gemini_chat(&home, "docsite", 4, "the geminifour question");
    age(&tmp.join("docsite/chats"), 3000);
    age(&tmp.join("docsite"), 3000);
    age(&tmp, 3000);
    assert_eq!(logged_search(&home, "geminifour").0, gemini_set(&[4]));
    assert_eq!(logged_search(&home, "geminifour"), (gemini_set(&[4]), true));
    // A deleted chat.
    std::fs::remove_file(&files[1]).unwrap();
    age(&tmp.join("webapp/chats"), 2400);
    assert_eq!(logged_search(&home, "geminitwo").0, BTreeSet::new());
    assert_eq!(
        logged_search(&home, "question"),
        (gemini_set(&[1, 3, 4]), true)
    );
}

/// `<agent>/<name>` of the OpenCode sessions a search found.
fn opencode_set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|id| format!("opencode/{id}")).collect()
}

/// The OpenCode store's glance (a database in WAL mode and the older JSON tree beside
/// it): with nothing changed a search lists neither; a message written to the database and
/// a new session row are each found by the next search. Hermes is beside it, listed at
/// every search.
#[test]
fn opencode_changes_are_found_by_the_next_search() {
    use common::dbstores::{self, Journal};
    let home = Home::empty();
    let r = dbstores::write(home.path(), Journal::Wal);
    let share = home.path().join(".local/share/opencode");
    for d in ["storage/session/prj", "storage/session", "storage", ""] {
        if share.join(d).is_dir() {
            age(&share.join(d), 3600);
        }
    }
    let live = dbstores::OC_LIVE;
    assert_eq!(
        logged_search(&home, "\"keep going\"").0,
        opencode_set(&[live])
    );
    assert_eq!(
        logged_search(&home, "\"keep going\""),
        (opencode_set(&[live]), true)
    );
    // A message written while OpenCode runs: the `-wal` grows.
    let c = rusqlite::Connection::open(&r.opencode_db).unwrap();
    dbstores::oc_message(
        &c,
        live,
        "msg_live_000001",
        serde_json::json!({"role": "user", "time": {"created": 1768172352000_i64}}),
        &[serde_json::json!({"type": "text", "text": "an appendedopencode prompt"})],
    );
    assert_eq!(
        logged_search(&home, "appendedopencode").0,
        opencode_set(&[live])
    );
    // A new session.
    c.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated)
         VALUES ('ses_glance00000000000000001', 'prj', 's', '/work/proj', 'glance', '1.2.3', 1768172353000, 1768172353000)",
        [],
    )
    .unwrap();
    dbstores::oc_message(
        &c,
        "ses_glance00000000000000001",
        "msg_glance_000001",
        serde_json::json!({"role": "user", "time": {"created": 1768172353000_i64}}),
        &[serde_json::json!({"type": "text", "text": "the newopencode question"})],
    );
    drop(c);
    assert_eq!(
        logged_search(&home, "newopencode").0,
        opencode_set(&["ses_glance00000000000000001"])
    );
}

fn copilot_id(n: u32) -> String {
    format!("7d8e9f00-2222-4222-8222-{n:012}")
}

/// A Copilot CLI event line (`user.message` unless `ty` says otherwise).
fn copilot_event(n: u32, ty: &str, data: serde_json::Value) -> String {
    let ev = serde_json::json!({
        "type": ty, "data": data, "id": format!("00000000-0000-4000-9000-{n:012}"),
        "timestamp": format!("2026-05-02T08:00:{:02}.000Z", n % 60), "parentId": null,
    });
    format!("{ev}\n")
}

/// Copilot CLI session `n` (`session-state/<id>/events.jsonl`), its prompt saying `text`.
fn copilot_session(home: &Home, n: u32, text: &str) -> PathBuf {
    let dir = home
        .path()
        .join(".copilot/session-state")
        .join(copilot_id(n));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("events.jsonl");
    let start = copilot_event(
        1,
        "session.start",
        serde_json::json!({"sessionId": copilot_id(n), "version": 1, "producer": "copilot-agent",
                           "startTime": "2026-05-02T08:00:00.000Z", "context": {"cwd": "/tmp/glance"}}),
    );
    let prompt = copilot_event(2, "user.message", serde_json::json!({"content": text}));
    std::fs::write(&file, start + &prompt).unwrap();
    file
}

fn copilot_set(ns: &[u32]) -> BTreeSet<String> {
    ns.iter()
        .map(|n| format!("copilot/{}", copilot_id(*n)))
        .collect()
}

/// The Copilot CLI store's glance: with nothing changed a search lists no store; an
/// appended message, a new session and a deleted one are each found by the next search.
#[test]
fn copilot_changes_are_found_by_the_next_search() {
    let home = Home::empty();
    let mut files = Vec::new();
    for (n, word) in [(1, "copilotone"), (2, "copilottwo"), (3, "copilotthree")] {
        files.push(copilot_session(&home, n, &format!("the {word} question")));
    }
    let state = home.path().join(".copilot/session-state");
    for n in 1..=3 {
        age(&state.join(copilot_id(n)), 3600);
    }
    age(&state, 3600);
    age(&home.path().join(".copilot"), 3600);
    assert_eq!(
        logged_search(&home, "copilotone"),
        (copilot_set(&[1]), false)
    );
    assert_eq!(
        logged_search(&home, "copilottwo"),
        (copilot_set(&[2]), true)
    );
    // An appended message: no directory moves, the events file grows.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&files[0])
        .unwrap();
    use std::io::Write;
    f.write_all(
        copilot_event(
            3,
            "user.message",
            serde_json::json!({"content": "an appendedcopilot prompt"}),
        )
        .as_bytes(),
    )
    .unwrap();
    drop(f);
    assert_eq!(logged_search(&home, "appendedcopilot").0, copilot_set(&[1]));
    assert_eq!(
        logged_search(&home, "appendedcopilot"),
        (copilot_set(&[1]), true)
    );
    // A new session.
    copilot_session(&home, 4, "the copilotfour question");
    age(&state.join(copilot_id(4)), 3000);
    age(&state, 3000);
    assert_eq!(logged_search(&home, "copilotfour").0, copilot_set(&[4]));
    assert_eq!(
        logged_search(&home, "copilotfour"),
        (copilot_set(&[4]), true)
    );
    // A deleted session.
    std::fs::remove_dir_all(state.join(copilot_id(2))).unwrap();
    age(&state, 2400);
    assert_eq!(logged_search(&home, "copilottwo").0, BTreeSet::new());
    assert_eq!(
        logged_search(&home, "question"),
        (copilot_set(&[1, 3, 4]), true)
    );
}

/// The Hermes store's glance (its `state.db` in WAL mode, a profile's, and gateway
/// transcripts): with nothing changed a search lists no store; a message written to the
/// database is found by the next search, and the one after lists no store again.
#[test]
fn hermes_changes_are_found_by_the_next_search() {
    use common::dbstores::{self, Journal};
    let home = Home::empty();
    dbstores::write(home.path(), Journal::Wal);
    let hermes = home.path().join(".hermes");
    let share = home.path().join(".local/share/opencode");
    for d in [
        hermes.join("profiles/work/sessions"),
        hermes.join("profiles/work"),
        hermes.join("profiles"),
        hermes.join("sessions"),
        hermes.clone(),
        share.join("storage/session/prj"),
        share.join("storage/session"),
        share.join("storage"),
        share.clone(),
    ] {
        if d.is_dir() {
            age(&d, 3600);
        }
    }
    let live = format!("hermes/{}", dbstores::HERMES_LIVE);
    assert!(!logged_search(&home, "hermesglance").1);
    // Both stores here have glances: the second search lists neither.
    assert!(no_store_listed(&home, "hermesglance"));
    let c = rusqlite::Connection::open(dbstores::hermes_db_path(home.path())).unwrap();
    dbstores::hermes_message(
        &c,
        dbstores::HERMES_LIVE,
        "user",
        "the hermesglance prompt",
        &[],
    );
    // Closing the last connection removes the journals: `~/.hermes` moves, here to a time
    // long ago (a directory that moved within two seconds of a listing is not glanced).
    drop(c);
    age(&hermes, 1800);
    assert_eq!(
        logged_search(&home, "hermesglance").0,
        BTreeSet::from([live.clone()])
    );
    assert_eq!(
        logged_search(&home, "hermesglance").0,
        BTreeSet::from([live])
    );
    assert!(no_store_listed(&home, "hermesglance"));
}

/// Whether `sessfs search` listed no store at all (every store's glance held).
fn no_store_listed(home: &Home, query: &str) -> bool {
    let out = home
        .command(&["search", "--json", query])
        .env("RUST_LOG", "sessfs=info")
        .output()
        .unwrap();
    stderr(&out).contains("no store listed")
}

/// The Cursor store's glance (the CLI's `store.db`, agent transcripts with a subagent, the
/// IDE's databases): with nothing changed a search lists it not; a subagent transcript
/// added to a session and a line appended to a plain-text transcript are each found by
/// the next search. OpenClaw is beside it, listed at every search.
#[test]
fn cursor_changes_are_found_by_the_next_search() {
    use common::cursor;
    let home = Home::empty();
    cursor::write(home.path());
    let transcripts = home
        .path()
        .join(".cursor/projects/home-dev-cursor-proj/agent-transcripts");
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut stack = vec![home.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
        dirs.push(d);
    }
    for d in &dirs {
        age(d, 3600);
    }
    let nested = BTreeSet::from([format!("cursor/{}", cursor::NESTED_ID)]);
    assert!(!logged_search(&home, "cursorglance").1);
    assert_eq!(
        logged_search(&home, "cursorglance"),
        (BTreeSet::new(), true)
    );
    // A subagent's transcript appears in a session's `subagents/`.
    let subagents = transcripts.join(cursor::NESTED_ID).join("subagents");
    std::fs::write(
        subagents.join("helper-2.jsonl"),
        format!(
            "{}\n",
            serde_json::json!({"role": "assistant", "message": {"content": [{"type": "text", "text": "the cursorglance subagent reply"}]}})
        ),
    )
    .unwrap();
    age(&subagents, 3000);
    assert_eq!(logged_search(&home, "cursorglance").0, nested);
    assert_eq!(logged_search(&home, "cursorglance"), (nested, true));
    // A plain-text transcript grows.
    let txt = transcripts.join(format!("{}.txt", cursor::TXT_ID));
    let mut f = std::fs::OpenOptions::new().append(true).open(&txt).unwrap();
    use std::io::Write;
    f.write_all(b"\nuser:\n<user_query>\nthe appendedcursor question\n</user_query>\n")
        .unwrap();
    drop(f);
    assert_eq!(
        logged_search(&home, "appendedcursor").0,
        BTreeSet::from([format!("cursor/{}", cursor::TXT_ID)])
    );
}

fn qwen_id(n: u32) -> String {
    format!("0c3f0000-0000-4000-8000-{n:012}")
}

/// A Qwen Code record line of chat `n`, a user prompt saying `text`.
fn qwen_line(n: u32, i: u32, text: &str) -> String {
    let line = serde_json::json!({"uuid": format!("{n}-{i}"), "parentUuid": null, "sessionId": qwen_id(n),
        "timestamp": format!("2026-04-07T02:00:{i:02}.000Z"), "type": "user", "cwd": "/tmp/glance",
        "version": "0.14.0", "message": {"role": "user", "parts": [{"text": text}]}});
    format!("{line}\n")
}

/// Qwen Code chat `n` of project `project` (`~/.qwen/projects/<project>/chats/`).
fn qwen_chat(home: &Home, project: &str, n: u32, text: &str) -> PathBuf {
    let dir = home
        .path()
        .join(".qwen/projects")
        .join(project)
        .join("chats");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{}.jsonl", qwen_id(n)));
    std::fs::write(&file, qwen_line(n, 0, text)).unwrap();
    file
}

fn qwen_set(ns: &[u32]) -> BTreeSet<String> {
    ns.iter().map(|n| format!("qwen/{}", qwen_id(*n))).collect()
}

/// The Qwen Code store's glance (Gemini CLI's tree): with nothing changed a search lists
/// no store; an appended prompt and a chat of a new project are each found by the next
/// search.
#[test]
fn qwen_changes_are_found_by_the_next_search() {
    let home = Home::empty();
    let one = qwen_chat(&home, "-tmp-glance", 1, "the qwenone question");
    qwen_chat(&home, "-tmp-glance", 2, "the qwentwo question");
    let projects = home.path().join(".qwen/projects");
    for d in ["-tmp-glance/chats", "-tmp-glance", ""] {
        age(&projects.join(d), 3600);
    }
    age(&home.path().join(".qwen"), 3600);
    assert_eq!(logged_search(&home, "qwenone"), (qwen_set(&[1]), false));
    assert!(no_store_listed(&home, "qwentwo"));
    let mut f = std::fs::OpenOptions::new().append(true).open(&one).unwrap();
    use std::io::Write;
    f.write_all(qwen_line(1, 1, "an appendedqwen prompt").as_bytes())
        .unwrap();
    drop(f);
    assert_eq!(logged_search(&home, "appendedqwen").0, qwen_set(&[1]));
    assert!(no_store_listed(&home, "appendedqwen"));
    qwen_chat(&home, "-tmp-other", 3, "the qwenthree question");
    age(&projects.join("-tmp-other/chats"), 3000);
    age(&projects.join("-tmp-other"), 3000);
    age(&projects, 3000);
    assert_eq!(logged_search(&home, "qwenthree").0, qwen_set(&[3]));
    assert!(no_store_listed(&home, "qwenthree"));
}
