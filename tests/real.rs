//! The real-corpus suite: sessions real agents wrote on real machines, mounted and checked
//! against the suite's own reading of the raw files.
//!
//! `SESSFS_REAL_SESSIONS` names the directories holding the real sets (`:`-separated); the
//! project ships no real data, so without it the suite prints one line saying it was
//! skipped and passes. For each set it:
//!
//! 1. lays the set out in a scratch `$HOME` the way each agent lays out its store
//!    (`real/layout.rs`; the set itself is only read), and keeps a private copy for the
//!    suite's readers;
//! 2. reads every native session itself (`real/read.rs`, `serde_json` and `rusqlite`,
//!    never sessfs' parsers): its id, every prompt, reply, thinking and tool output line,
//!    and a token recount (once per API reply);
//! 3. mounts the scratch home with the real `sessfs` binary and walks the mount;
//! 4. checks that every native session is visible (a mounted session, top level or nested,
//!    whose `meta.json` names the native file, or the id for database stores), that every
//!    line is in that session's `transcript.md`, `tools/`, `branches/` or nested
//!    `subagents/` (compared after the normalisation `real/read.rs` documents), and that
//!    `meta.json` token totals equal the recount (a session's total includes the
//!    subagents nested under it);
//! 5. unmounts and checks the scratch stores are byte-identical.
//!
//! It prints a per-agent table and fails listing every mismatch. Agents the sets hold that
//! sessfs does not read yet are named and skipped; a new agent is one layout function and
//! one row of `read::READERS`.

#[path = "real/aider.rs"]
mod aider;
#[path = "real/amp.rs"]
mod amp;
#[path = "real/crush.rs"]
mod crush;
#[path = "real/droid.rs"]
mod droid;
#[path = "real/kimi.rs"]
mod kimi;
#[path = "real/layout.rs"]
mod layout;
#[path = "real/qwen.rs"]
mod qwen;
#[path = "real/read.rs"]
mod read;

use read::{Expect, Kind, Match, Raw, Tokens};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Agent variables that must not leak from the developer's environment into the mount.
const AGENT_VARS: &[&str] = &[
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "CODEX_SQLITE_HOME",
    "GEMINI_CLI_HOME",
    "COPILOT_HOME",
    "CURSOR_CONFIG_DIR",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "OPENCODE_DB",
    "PI_CODING_AGENT_DIR",
    "PI_CONFIG_DIR",
    "OMP_CODING_AGENT_DIR",
    "OPENCLAW_STATE_DIR",
    "OPENCLAW_HOME",
    "CLAWDBOT_STATE_DIR",
    "HERMES_HOME",
    "AGSH_DATA_DIR",
    "MEKA_DATA_DIR",
    "INDUSAGI_DIR",
    "QWEN_RUNTIME_DIR",
    "OPENHANDS_PERSISTENCE_DIR",
    "OPENHANDS_CONVERSATIONS_DIR",
    "INDUSAGI_AGENT_DIR",
    "INDUSAGI_CODING_AGENT_DIR",
    "CRUSH_GLOBAL_DATA",
    "AIDER_CHAT_HISTORY_FILE",
];

/// Written straight to the process's stderr, past the test harness's capture, so the skip
/// line and the table show in a plain `cargo test` run too.
fn say(s: &str) {
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{s}");
}

#[test]
fn real_sessions_are_all_visible_with_every_line_and_token() {
    let Some(var) = std::env::var_os("SESSFS_REAL_SESSIONS").filter(|v| !v.is_empty()) else {
        say("real suite skipped: SESSFS_REAL_SESSIONS is not set (.ci/run sets it to the real session sets kept beside the repository)");
        return;
    };
    let started = Instant::now();
    let mut failures: Vec<String> = Vec::new();
    let mut table: BTreeMap<String, Row> = BTreeMap::new();
    for set in std::env::split_paths(&var) {
        if !set.is_dir() {
            failures.push(format!(
                "SESSFS_REAL_SESSIONS names {}, which is no directory",
                set.display()
            ));
            continue;
        }
        check_set(&set, &mut table, &mut failures);
    }
    print_table(&table);
    say(&format!(
        "real suite: {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    if !failures.is_empty() {
        say(&format!("\nreal suite: {} problem(s):", failures.len()));
        for f in &failures {
            say(&format!("- {f}"));
        }
        panic!("real suite: {} problem(s), listed above", failures.len());
    }
}

/// One line of the summary table.
#[derive(Default)]
struct Row {
    raw: usize,
    visible: usize,
    lines: usize,
    missing: usize,
    tok_raw: u64,
    tok_mnt: u64,
    tok_sessions: usize,
    tok_bad: usize,
}

fn print_table(t: &BTreeMap<String, Row>) {
    say(&format!(
        "\n{:<32} {:>9} {:>8} {:>9} {:>8} {:>14} {:>14} {:>8}",
        "set/agent",
        "sessions",
        "visible",
        "lines",
        "missing",
        "tokens raw",
        "tokens mount",
        "tok bad"
    ));
    for (k, r) in t {
        say(&format!(
            "{:<32} {:>9} {:>8} {:>9} {:>8} {:>14} {:>14} {:>8}",
            k,
            r.raw,
            r.visible,
            r.lines,
            r.missing,
            r.tok_raw,
            r.tok_mnt,
            format!("{}/{}", r.tok_bad, r.tok_sessions)
        ));
    }
}

/// A mounted session directory and what its `meta.json` says.
struct Dir {
    path: PathBuf,
    agent: String,
    session_id: String,
    sources: HashSet<String>,
    tokens: Tokens,
    /// `costWithSubagents`, where sessfs writes it.
    tokens_with_subagents: Option<Tokens>,
    has_branches: bool,
}

fn check_set(set: &Path, table: &mut BTreeMap<String, Row>, failures: &mut Vec<String>) {
    let set_name = set
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let scratch = tempfile::Builder::new()
        .prefix("sessfs-real")
        .tempdir()
        .expect("temp dir");
    // `SESSFS_REAL_KEEP=1` keeps the scratch home for a look by hand.
    let home = scratch.path().join("home");
    let copy = scratch.path().join("copy");
    std::fs::create_dir_all(&home).expect("mkdir home");

    for d in layout::subdirs(set) {
        let a = d.file_name().unwrap().to_string_lossy().to_string();
        if layout::NOT_READ_YET.contains(&a.as_str()) {
            say(&format!("{set_name}/{a}: not read yet by sessfs, skipped"));
        } else if let Some((_, test)) = layout::CHECKED_ELSEWHERE.iter().find(|(f, _)| *f == a) {
            say(&format!("{set_name}/{a}: checked by {test}"));
        } else if layout::NO_SESSIONS.contains(&a.as_str()) {
            say(&format!(
                "{set_name}/{a}: no session data in this set, skipped"
            ));
        } else if !read::READERS.iter().any(|(folder, _, _)| *folder == a) {
            say(&format!("{set_name}/{a}: no reader in this suite, skipped"));
        }
    }
    let placed = layout::lay_out(set, &home);
    let status = Command::new("cp")
        .arg("-a")
        .arg(&home)
        .arg(&copy)
        .status()
        .expect("cp");
    assert!(status.success(), "copy of the scratch home failed");
    let before = snapshot(&home);
    check_glances(&set_name, &home, &scratch.path().join("cache"), failures);

    let cx = read::Ctx {
        home: home.clone(),
        copy: copy.clone(),
    };
    let mut raws: Vec<Raw> = Vec::new();
    for (folder, _agent, reader) in read::READERS {
        if let Some(files) = placed.get(*folder) {
            let found = reader(&cx, files);
            if found.is_empty() {
                say(&format!(
                    "{set_name}/{folder}: no native session files in this set, skipped"
                ));
            }
            raws.extend(found);
        }
    }

    // Mount.
    let mnt = scratch.path().join("mnt");
    std::fs::create_dir_all(&mnt).expect("mkdir mnt");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sessfs"));
    cmd.arg("mount")
        .arg(&mnt)
        .env("HOME", &home)
        .env("XDG_CACHE_HOME", scratch.path().join("cache"))
        .env("RUST_LOG", "warn");
    for v in AGENT_VARS {
        cmd.env_remove(v);
    }
    let t0 = Instant::now();
    let out = cmd.output().expect("run sessfs mount");
    assert!(
        out.status.success(),
        "sessfs mount of {set_name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _guard = Unmount(mnt.clone());

    let dirs = walk_mount(&mnt);
    let mut lines_cache: HashMap<PathBuf, HashSet<String>> = HashMap::new();
    let mut primary: Vec<Option<usize>> = Vec::new();

    for r in &raws {
        let key = format!("{set_name}/{}", r.agent);
        let row = table.entry(key).or_default();
        if r.hidden {
            primary.push(None);
            continue;
        }
        row.raw += 1;
        let matched = match_dirs(r, &dirs);
        let Some(&p) = matched
            .iter()
            .max_by_key(|&&i| dirs[i].path.components().count())
        else {
            failures.push(format!(
                "{set_name}/{}: session {} ({}) is not visible in the mount",
                r.agent,
                r.id,
                rel(&r.file, &home)
            ));
            primary.push(None);
            row.missing += r.lines.len();
            row.lines += r.lines.len();
            continue;
        };
        row.visible += 1;
        primary.push(Some(p));
        let have = lines_cache
            .entry(dirs[p].path.clone())
            .or_insert_with(|| rendered_lines(&dirs[p].path));
        let missing: Vec<&Expect> = r
            .lines
            .iter()
            .filter(|e| !e.alts.iter().any(|a| have.contains(a)))
            .collect();
        row.lines += r.lines.len();
        row.missing += missing.len();
        if !missing.is_empty() {
            let mut by_kind: BTreeMap<Kind, usize> = BTreeMap::new();
            for m in &missing {
                *by_kind.entry(m.kind).or_default() += 1;
            }
            let kinds: Vec<String> = by_kind
                .iter()
                .map(|(k, n)| format!("{n} {}", k.name()))
                .collect();
            let examples: Vec<String> = missing
                .iter()
                .take(3)
                .map(|m| format!("{:?}", cut(&m.alts[0], 100)))
                .collect();
            failures.push(format!(
                "{set_name}/{}: {} of {} lines of session {} ({}) missing from {} [{}], e.g. {}",
                r.agent,
                missing.len(),
                r.lines.len(),
                r.id,
                rel(&r.file, &home),
                rel(&dirs[p].path, &mnt),
                kinds.join(", "),
                examples.join(" | ")
            ));
        }
    }

    // Tokens: per mounted session that is the home of a raw session with a recount, the
    // recount of every raw session shown in it or nested below it.
    let shared: HashSet<usize> = raws
        .iter()
        .zip(&primary)
        .filter(|(r, _)| !r.archive && !r.hidden)
        .filter_map(|(_, p)| *p)
        .collect();
    let counts = |r: &Raw, p: usize| !(r.hidden || r.archive && shared.contains(&p));
    let mut compared: BTreeSet<usize> = BTreeSet::new();
    for (r, p) in raws.iter().zip(&primary) {
        if let Some(p) = *p {
            if counts(r, p) && (r.tokens.is_some() || r.token_note.is_none()) {
                compared.insert(p);
            }
        }
    }
    for d in compared {
        let under: Vec<&Raw> = raws
            .iter()
            .zip(&primary)
            .filter_map(|(r, p)| {
                let p = (*p)?;
                (counts(r, p) && dirs[p].path.starts_with(&dirs[d].path)).then_some(r)
            })
            .collect();
        if under.iter().any(|r| r.tokens.is_none()) {
            continue;
        }
        // A raw session's own share (its active branch where the mounted session has
        // branches; without the side chains a Claude file keeps inline, which sessfs
        // nests as subagents), and its total with those side chains.
        let own_of = |r: &Raw| -> Tokens {
            let p = raws
                .iter()
                .position(|x| std::ptr::eq(x, r))
                .and_then(|i| primary[i]);
            match (p, r.active_tokens) {
                (Some(p), Some(a)) if dirs[p].has_branches => a,
                _ => {
                    let t = r.tokens.unwrap_or_default();
                    Tokens {
                        input: t.input.map(|i| i - r.side_tokens.input.unwrap_or(0)),
                        output: t.output - r.side_tokens.output,
                    }
                }
            }
        };
        let total_of = |r: &Raw| -> Tokens {
            let o = own_of(r);
            Tokens {
                input: o.input.map(|i| i + r.side_tokens.input.unwrap_or(0)),
                output: o.output + r.side_tokens.output,
            }
        };
        let sum = |rs: &[&Raw], f: &dyn Fn(&Raw) -> Tokens| Tokens {
            input: rs.iter().map(|r| f(r).input).sum(),
            output: rs.iter().map(|r| f(r).output).sum(),
        };
        let here: Vec<&Raw> = raws
            .iter()
            .zip(&primary)
            .filter(|(r, p)| **p == Some(d) && counts(r, d))
            .map(|(r, _)| r)
            .collect();
        let own = sum(&here, &own_of);
        let total = sum(&under, &total_of);
        let agrees = |want: Tokens, got: Tokens| {
            want.input.is_none_or(|i| Some(i) == got.input) && want.output == got.output
        };
        let show = |t: Tokens| {
            format!(
                "in {} out {}",
                t.input.map(|x| x.to_string()).unwrap_or_else(|| "-".into()),
                t.output
            )
        };
        let row = table
            .entry(format!("{set_name}/{}", dirs[d].agent))
            .or_default();
        row.tok_sessions += 1;
        row.tok_raw += total.input.unwrap_or(0) + total.output;
        let nested = under.len() - here.len();
        let branches = if dirs[d].has_branches {
            " (session has branches)"
        } else {
            ""
        };
        // `cost` is the session's own share and `costWithSubagents` the session with all
        // it spawned, where sessfs writes that field (a session with subagents); before it
        // did, `cost` had to hold the whole.
        let problem = match dirs[d].tokens_with_subagents {
            Some(with) => {
                row.tok_mnt += with.input.unwrap_or(0) + with.output;
                let mut p = Vec::new();
                if !agrees(own, dirs[d].tokens) {
                    p.push(format!(
                        "own recount {} but cost {}",
                        show(own),
                        show(dirs[d].tokens)
                    ));
                }
                if !agrees(total, with) {
                    p.push(format!(
                        "recount with {nested} nested session(s) {} but costWithSubagents {}",
                        show(total),
                        show(with)
                    ));
                }
                (!p.is_empty()).then(|| p.join("; "))
            }
            None => {
                row.tok_mnt += dirs[d].tokens.input.unwrap_or(0) + dirs[d].tokens.output;
                let side = here.iter().any(|r| r.side_tokens.output > 0);
                (!agrees(total, dirs[d].tokens)).then(|| {
                    if nested > 0 || side {
                        format!(
                            "recount {} with {nested} nested session(s){} but meta.json cost {} and no costWithSubagents",
                            show(total),
                            if side { " and inline side chains" } else { "" },
                            show(dirs[d].tokens)
                        )
                    } else {
                        format!("recount {} but meta.json cost {}", show(total), show(dirs[d].tokens))
                    }
                })
            }
        };
        if let Some(p) = problem {
            row.tok_bad += 1;
            failures.push(format!(
                "{set_name}/{}: tokens of {}: {p}{branches}",
                dirs[d].agent,
                rel(&dirs[d].path, &mnt)
            ));
        }
    }
    say(&format!(
        "{set_name}: {} native sessions, mounted and checked in {:.1} s",
        raws.iter().filter(|r| !r.hidden).count(),
        t0.elapsed().as_secs_f64()
    ));
    drop(_guard);
    if std::env::var_os("SESSFS_REAL_KEEP").is_some() {
        say(&format!(
            "{set_name}: scratch home kept at {}",
            home.display()
        ));
        std::mem::forget(scratch);
    }

    let after = snapshot(&home);
    for (p, h) in &before {
        match after.get(p) {
            Some(h2) if h2 == h => {}
            Some(_) => failures.push(format!(
                "{set_name}: {} changed while mounted",
                rel(p, &home)
            )),
            None => failures.push(format!(
                "{set_name}: {} vanished while mounted",
                rel(p, &home)
            )),
        }
    }
    for p in after.keys().filter(|p| !before.contains_key(*p)) {
        failures.push(format!(
            "{set_name}: {} appeared in the store while mounted",
            rel(p, &home)
        ));
    }
}

/// The mounted sessions a raw session is shown in.
fn match_dirs(r: &Raw, dirs: &[Dir]) -> Vec<usize> {
    let file = r.file.to_string_lossy().to_string();
    let agent_dirs = || dirs.iter().enumerate().filter(|(_, d)| d.agent == r.agent);
    match &r.matcher {
        Match::Path => {
            let by_path: Vec<usize> = agent_dirs()
                .filter(|(_, d)| d.sources.contains(&file))
                .map(|(i, _)| i)
                .collect();
            let by_id: Vec<usize> = by_path
                .iter()
                .copied()
                .filter(|&i| dirs[i].session_id == r.id)
                .collect();
            if by_id.is_empty() {
                by_path
            } else {
                by_id
            }
        }
        Match::Id { id, source } => {
            let src = source.as_ref().map(|s| s.to_string_lossy().to_string());
            agent_dirs()
                .filter(|(_, d)| {
                    &d.session_id == id && src.as_ref().is_none_or(|s| d.sources.contains(s))
                })
                .map(|(i, _)| i)
                .collect()
        }
    }
}

/// Every session directory of the mount, top level and nested under `subagents/`.
fn walk_mount(mnt: &Path) -> Vec<Dir> {
    let mut out = Vec::new();
    for agent in layout::subdirs(mnt) {
        let a = agent.file_name().unwrap().to_string_lossy().to_string();
        let mut stack: Vec<PathBuf> = layout::subdirs(&agent);
        while let Some(d) = stack.pop() {
            let Ok(bytes) = std::fs::read(d.join("meta.json")) else {
                continue;
            };
            let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let tokens_in = |c: &Value| {
                let n = |k: &str| c.get(k).and_then(Value::as_u64).unwrap_or(0);
                Tokens {
                    input: Some(n("inputTokens") + n("cacheReadTokens") + n("cacheWriteTokens")),
                    output: n("outputTokens") + n("thinkingTokens"),
                }
            };
            out.push(Dir {
                path: d.clone(),
                agent: a.clone(),
                session_id: v
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                sources: v
                    .pointer("/source/paths")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p.as_str().map(str::to_string))
                    .collect(),
                tokens: tokens_in(v.get("cost").unwrap_or(&Value::Null)),
                tokens_with_subagents: v
                    .get("costWithSubagents")
                    .filter(|c| c.is_object())
                    .map(tokens_in),
                has_branches: v
                    .get("branches")
                    .and_then(Value::as_array)
                    .is_some_and(|b| !b.is_empty()),
            });
            // Nested subagents are directories (a symlink names a top-level session).
            let subs = d.join("subagents");
            if let Ok(rd) = std::fs::read_dir(&subs) {
                for e in rd.flatten() {
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        stack.push(e.path());
                    }
                }
            }
        }
    }
    out
}

/// Every line of the Markdown files of a session directory and below it (`transcript.md`,
/// `tools/`, `branches/`, nested `subagents/`), normalised as the raw lines are, each also
/// with the renderer's HTML escaping undone. Diff files quote other sessions: left out.
fn rendered_lines(dir: &Path) -> HashSet<String> {
    let mut out = HashSet::new();
    for f in layout::files_under(dir) {
        if f.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for l in text.lines() {
            if let Some(n) = read::norm_line(l) {
                if n.contains('&') {
                    if let Some(u) = read::norm_line(&read::unescape(&n)) {
                        out.insert(u);
                    }
                }
                out.insert(n);
            }
        }
    }
    out
}

/// Content of every file under `home`, `-shm` files left out: every reader of a WAL
/// database maps and may update its shared-memory index by design.
/// Every store's search glance on real data: with the set laid out and left alone (its
/// directories aged an hour, as a store at rest), a first `sessfs search` lists and
/// indexes, and a later one, nothing changed, must list no store at all. A store whose
/// glance does not hold on its real files is named by the searches' debug log.
fn check_glances(set_name: &str, home: &Path, cache: &Path, failures: &mut Vec<String>) {
    let age_dirs = || {
        let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
        for d in walkdirs(home) {
            if let Ok(f) = std::fs::File::open(&d) {
                let _ = f.set_times(std::fs::FileTimes::new().set_modified(hour_ago));
            }
        }
    };
    age_dirs();
    let search = || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sessfs"));
        cmd.args(["search", "zzqxglancecheck"])
            .env("HOME", home)
            .env("XDG_CACHE_HOME", cache)
            .env("RUST_LOG", "sessfs=debug");
        for v in AGENT_VARS {
            cmd.env_remove(v);
        }
        let out = cmd.output().expect("run sessfs search");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // The first search may create a WAL database's `-shm` (SQLite does, even read-only),
    // which moves that database's directory: a search within two seconds of that records
    // no glance for the store, a later one does. The directories are aged again, as
    // that later time, so the check does not hang on how fast the searches run.
    let _ = search();
    age_dirs();
    let first = search();
    let log = search();
    if log.contains("no store listed") {
        say(&format!(
            "{set_name}: a search with nothing changed listed no store"
        ));
    } else {
        let why: Vec<&str> = first
            .lines()
            .filter(|l| l.contains("no glance,"))
            .chain(
                log.lines()
                    .filter(|l| l.contains("glance") || l.contains("listed")),
            )
            .take(12)
            .collect();
        failures.push(format!(
            "{set_name}: a search with nothing changed listed stores again:\n  {}",
            why.join("\n  ")
        ));
    }
}

/// `dir` and every directory below it, symlinks not followed.
fn walkdirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        let below = layout::subdirs(&out[i]);
        out.extend(below);
        i += 1;
    }
    out
}

fn snapshot(home: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    layout::files_under(home)
        .into_iter()
        .filter(|p| !p.to_string_lossy().ends_with("-shm"))
        .filter_map(|p| std::fs::read(&p).ok().map(|b| (p, b)))
        .collect()
}

fn rel(p: &Path, base: &Path) -> String {
    p.strip_prefix(base).unwrap_or(p).display().to_string()
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

/// Unmounts on drop, also when a check panics.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let ok = Command::new(env!("CARGO_BIN_EXE_sessfs"))
            .arg("umount")
            .arg(&self.0)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !ok {
            let _ = Command::new("fusermount3").arg("-uz").arg(&self.0).output();
        }
        let start = Instant::now();
        let p = self.0.to_string_lossy().to_string();
        while std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|m| m.contains(&p))
            && start.elapsed() < Duration::from_secs(5)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
