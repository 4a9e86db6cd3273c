//! Aider: `.aider.chat.history.md` in each project, one session per `# aider chat started at`.
//!
//! Learnt from Aider's own source, github.com/Aider-AI/aider at commit
//! `5dc9490bb35f9729ef2c95d00a19ccd30c26339c`: `aider/io.py` (`InputOutput.__init__` writes
//! the heading, `user_input`, `ai_output`, `tool_output`, `_tool_message`, `confirm_ask`,
//! `prompt_ask` and `append_chat_history`, which shape every line), `aider/coders/base_coder.py`
//! (`get_announcements` for `Main model:`/`Model:` lines, `calculate_and_show_tokens_and_cost`
//! and `show_usage_report` for the `Tokens:` line, one per API call, reset after each),
//! `aider/utils.py` (`format_tokens`: `999`, `3.2k`, `13k`), `aider/coders/editblock_coder.py`
//! (SEARCH/REPLACE markers) and `aider/reasoning_tags.py` (the reasoning tag).
//!
//! **Where.** Aider writes the history to the directory it runs in (the git root), and keeps
//! no index of projects. Projects are found by a bounded scan of `$HOME` for the history
//! file (the limits of [`super::atsf`]'s scan: depth 5, hidden and dependency directories
//! skipped, FUSE mounts never entered, 20,000 directories, 0.8 s), plus the git worktrees of
//! each project found, `$AIDER_CHAT_HISTORY_FILE`, and `--store aider=<path>` (a history
//! file, a project, or a directory scanned for projects).
//!
//! **Lines.** Every write ends a line with two spaces except a reply: a prompt is `#### `
//! lines (`####   ` for a blank line of it), Aider's own output is a `> ` line, or for a
//! multi-line message written at once, a `> ` first line and plain lines up to the one that
//! ends with two spaces. A reply is written as `\n<text>\n\n`, and is every other line, so
//! a reply's own `#### heading` or `> quote` (no two spaces) stays in the reply.
//!
//! **Ids.** Aider writes none: a session is `<project dir name>-<start time>`
//! (`webapp-2025-05-04T17-02-36`, the heading's local time), `~2` after a second session of
//! the same name. Listing reads only the headings (cached per file size and mtime); a
//! session's version is its own byte range, so an append re-renders the last session only.
//!
//! **Messages.** Prompts are user messages, timed from `.aider.input.history` (each entry
//! `# <time>` then `+<line>`) where an entry of the session's time span holds the same text.
//! Replies are assistant messages; a leading `<think>` (or Aider's `thinking-content-…`) block
//! is their reasoning; each SEARCH/REPLACE block is an `edit` call (`path`, `old_str`,
//! `new_str`: shown as a diff) whose output is the matching `Applied edit to` line. Each run
//! of Aider's output lines is one `aider` call on the reply it follows (a reply of its own
//! when none does), output before the first prompt the session's start-up event. A
//! `Tokens: … sent, … received. Cost: $… message, …` line is the usage and cost of the reply
//! before it (one line per API call), kept in the output too. The model is the last
//! `Main model:`/`Model:` line. Text before the first heading goes to `unparsed.txt`.
//!
//! Not read: `.aider.llm.history` (every request with whole files: the same conversation as
//! the model saw it) and Aider's config and `.env` files (keys).

use super::atsf::ScanBudget;
use super::jsonl;
use super::kit::{self, SessionBuilder};
use super::{Base, Env, Glance, Listed, Root, Store};
use crate::model::{Agent, Message, Role, Session, TokenUsage, ToolCall};
use chrono::{DateTime, Local, NaiveDateTime, TimeZone, Utc};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

const AGENT: Agent = Agent::Aider;
/// Aider's default `--chat-history-file`.
pub const HISTORY: &str = ".aider.chat.history.md";
/// Aider's default `--input-history-file`.
pub const INPUT_HISTORY: &str = ".aider.input.history";
const HEADING: &str = "# aider chat started at ";
/// Longest session read; the rest is named in a warning.
const MAX_SESSION_BYTES: u64 = 64 << 20;
/// Larger input histories are not read for prompt times.
const MAX_INPUT_HISTORY: u64 = 32 << 20;
/// Lines a multi-line output message may span before its closing two spaces.
const MAX_RECORD_LINES: usize = 4096;
/// Directory names the project scan never enters (besides hidden ones).
const SKIP_DIRS: &[&str] = &[
    "node_modules",
    "target",
    "venv",
    "Library",
    "__pycache__",
    "site-packages",
    "bower_components",
];

/// `$AIDER_CHAT_HISTORY_FILE`, then every project under `$HOME` holding a history file.
pub fn candidates(env: &Env) -> Vec<Root> {
    let mut out = Vec::new();
    if let Some(f) = env.path_var("AIDER_CHAT_HISTORY_FILE") {
        out.push(Root::new(AGENT, f, "AIDER_CHAT_HISTORY_FILE"));
    }
    push_new(
        &mut out,
        scan(&env.home, &ScanBudget::default(), "home-scan"),
    );
    out
}

/// `--store aider=<path>`: a history file or a project as given, any other directory
/// scanned for projects.
pub fn given_roots(roots: Vec<Root>) -> Vec<Root> {
    let mut out = Vec::new();
    for r in roots {
        if r.path.is_file() || r.path.join(HISTORY).is_file() {
            let wt = worktrees(&r.path);
            push_new(&mut out, vec![r]);
            push_new(&mut out, wt);
        } else {
            let found = scan(&r.path, &ScanBudget::default(), &r.how);
            if found.is_empty() {
                push_new(&mut out, vec![r]);
            }
            push_new(&mut out, found);
        }
    }
    out
}

fn push_new(out: &mut Vec<Root>, add: Vec<Root>) {
    for r in add {
        if !out.iter().any(|x| x.path == r.path) {
            out.push(r);
        }
    }
}

/// Projects holding a history file under `base`, breadth first within `budget`, with the
/// git worktrees of each.
fn scan(base: &Path, budget: &ScanBudget, how: &str) -> Vec<Root> {
    let start = Instant::now();
    let mut out = Vec::new();
    let mut queue = VecDeque::from([(base.to_path_buf(), 0usize)]);
    let mut visited = 0usize;
    while let Some((dir, depth)) = queue.pop_front() {
        if start.elapsed() >= budget.time || visited >= budget.max_dirs {
            log::info!("aider: project scan stopped after {visited} directories; use --store aider=<project> for projects not found");
            break;
        }
        visited += 1;
        if dir.join(HISTORY).is_file() {
            let wt = worktrees(&dir);
            push_new(&mut out, vec![Root::new(AGENT, dir.clone(), how)]);
            push_new(&mut out, wt);
        }
        if depth >= budget.max_depth {
            continue;
        }
        let mut children: Vec<PathBuf> = kit::subdirs(&dir)
            .into_iter()
            .filter(|p| !SKIP_DIRS.contains(&kit::file_name(p)))
            .filter(|p| !budget.exclude.iter().any(|x| p.starts_with(x)))
            .collect();
        children.sort();
        queue.extend(children.into_iter().map(|c| (c, depth + 1)));
    }
    out
}

/// Linked git worktrees of `project` holding a history file: git records each in
/// `<project>/.git/worktrees/<name>/gitdir` as `<worktree>/.git`.
fn worktrees(project: &Path) -> Vec<Root> {
    let mut out = Vec::new();
    for e in kit::subdirs(&project.join(".git").join("worktrees")) {
        let Ok(gitdir) = std::fs::read_to_string(e.join("gitdir")) else {
            continue;
        };
        if let Some(w) = Path::new(gitdir.trim()).parent() {
            if w.join(HISTORY).is_file() {
                out.push(Root::new(AGENT, w.to_path_buf(), "git-worktree"));
            }
        }
    }
    out
}

/// One session's place in its history file.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Head {
    /// Byte range; the first session also holds any text before its heading.
    start: u64,
    end: u64,
    /// The heading's time as written (`2025-05-04 17:02:36`), `None` for a file without one.
    when: Option<String>,
}

#[derive(Clone, Debug)]
struct Index {
    len: u64,
    mtime: Option<SystemTime>,
    heads: Vec<Head>,
}

pub struct AiderStore {
    base: Base,
    index: Mutex<HashMap<PathBuf, Index>>,
}

impl AiderStore {
    pub fn new(roots: Vec<Root>) -> AiderStore {
        AiderStore {
            base: Base::new(AGENT, roots),
            index: Mutex::new(HashMap::new()),
        }
    }

    /// The sessions of a history file, read again only when its size or mtime changed; a
    /// file that grew is read from its last session's heading on (Aider only appends).
    fn heads(&self, file: &Path) -> Vec<Head> {
        let Ok(meta) = std::fs::metadata(file) else {
            return Vec::new();
        };
        let (len, mtime) = (meta.len(), meta.modified().ok());
        let mut cache = self.index.lock().unwrap_or_else(|e| e.into_inner());
        let mut prior = Vec::new();
        if let Some(i) = cache.get(file) {
            if i.len == len && i.mtime == mtime {
                return i.heads.clone();
            }
            if i.len < len && i.heads.len() > 1 {
                prior = i.heads.clone();
            }
        }
        let scanned = kit::open_file(file).and_then(|f| {
            let mut r = BufReader::new(f);
            let last = prior.pop();
            let base = last.as_ref().map_or(0, |h| h.start);
            r.seek(SeekFrom::Start(base))?;
            let mut first = Vec::new();
            next_line(&mut r, &mut first, 128)?;
            if base > 0 && !first.starts_with(HEADING.as_bytes()) {
                // Not the heading it was: the file was rewritten, read it all again.
                prior.clear();
                r.seek(SeekFrom::Start(0))?;
                return Ok(scan_heads(r, 0, prior));
            }
            r.seek(SeekFrom::Start(base))?;
            Ok(scan_heads(r, base, prior))
        });
        let heads = match scanned {
            Ok(h) => h,
            Err(e) => {
                log::warn!("aider: cannot read {}: {e}", file.display());
                return Vec::new();
            }
        };
        cache.insert(
            file.to_path_buf(),
            Index {
                len,
                mtime,
                heads: heads.clone(),
            },
        );
        heads
    }
}

/// The history file a root stands for.
fn history_file(root: &Path) -> PathBuf {
    if root.is_dir() {
        root.join(HISTORY)
    } else {
        root.to_path_buf()
    }
}

/// The project directory's name (the history file's directory).
fn project_name(file: &Path) -> String {
    file.parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "aider".into())
}

/// `webapp-2025-05-04T17-02-36` from the project and the heading's time.
pub fn session_id(project: &str, when: Option<&str>) -> String {
    match when.map(str::trim).filter(|w| !w.is_empty()) {
        Some(w) => format!("{project}-{}", w.replacen(' ', "T", 1).replace(':', "-")),
        None => project.to_string(),
    }
}

impl Store for AiderStore {
    fn base(&self) -> &Base {
        &self.base
    }

    fn list(&self) -> Vec<Listed> {
        let mut out = Vec::new();
        let mut taken = HashSet::new();
        for (i, root) in self.base.roots.iter().enumerate() {
            let file = history_file(&root.path);
            let project = project_name(&file);
            let input = file.with_file_name(INPUT_HISTORY);
            for h in self.heads(&file) {
                let id = kit::unique_name(&mut taken, &session_id(&project, h.when.as_deref()));
                out.push(Listed {
                    id,
                    path: file.clone(),
                    sources: vec![file.clone(), input.clone()],
                    key: Some(h.start.to_string()),
                    root: i,
                });
            }
        }
        out
    }

    /// Each root's history file: the listing reads its headings, and a file with none
    /// (or none yet: missing) lists no session, so it is no session's source. No
    /// directory is read: the projects are found when the store is opened (the scan of
    /// `$HOME`), and a project found or lost changes the roots, which lists the store.
    fn glance(&self, _listed: &[Listed]) -> Option<Glance> {
        let mut g = Glance::default();
        for root in &self.base.roots {
            g.files.push(history_file(&root.path));
        }
        Some(g)
    }

    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        listed
            .iter()
            .map(|l| {
                let heads = self.heads(&l.path);
                let start: u64 = l.key.as_deref()?.parse().ok()?;
                let n = heads.iter().position(|h| h.start == start)?;
                let mut v = format!("{start}-{}", heads[n].end);
                if n + 1 == heads.len() {
                    // The last session also takes its prompts' times from the input history.
                    if let Some((len, t)) =
                        super::stat_version(&l.path.with_file_name(INPUT_HISTORY))
                    {
                        v.push_str(&format!("-{len}-{t:?}"));
                    }
                }
                Some(crate::names::fnv1a(v.as_bytes()))
            })
            .collect()
    }

    fn load(&self, listed: &Listed) -> Session {
        let file = &listed.path;
        let mut b = SessionBuilder::new(AGENT, &listed.id);
        b.s.source.paths = vec![file.clone()];
        b.s.source.format = "aider-chat-history".into();
        if kit::file_name(file) == HISTORY {
            b.s.cwd = file.parent().map(|p| p.to_string_lossy().into_owned());
        }
        let heads = self.heads(file);
        let start: Option<u64> = listed.key.as_deref().and_then(|k| k.parse().ok());
        let Some(n) = heads.iter().position(|h| Some(h.start) == start) else {
            b.warn(format!(
                "{}: this session is no longer in the file",
                file.display()
            ));
            return b.finish();
        };
        let head = &heads[n];
        let (text, cut) = match read_range(file, head.start, head.end) {
            Ok(t) => t,
            Err(e) => {
                b.warn(format!("cannot read {}: {e}", file.display()));
                return b.finish();
            }
        };
        if cut {
            b.warn(format!(
                "{}: session of {} bytes, only the first {MAX_SESSION_BYTES} read",
                file.display(),
                head.end - head.start
            ));
        }
        let from = head.when.as_deref().and_then(naive_time);
        let to = heads
            .get(n + 1)
            .and_then(|h| h.when.as_deref())
            .and_then(naive_time);
        let input = file.with_file_name(INPUT_HISTORY);
        let inputs = match from {
            Some(from) if input.is_file() => {
                b.s.source.paths.push(input.clone());
                read_inputs(&input, from, to, &mut b)
            }
            _ => Vec::new(),
        };
        b.s.created_at = from.and_then(local_utc);
        parse_session(&text, inputs, &mut b);
        b.finish()
    }
}

/// Read one line of at most `cap` bytes kept (the rest of a longer line is consumed);
/// returns the bytes consumed, 0 at the end.
fn next_line<R: BufRead>(r: &mut R, line: &mut Vec<u8>, cap: usize) -> std::io::Result<u64> {
    line.clear();
    let mut total = 0u64;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(total);
        }
        let (take, done) = match buf.iter().position(|&c| c == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = cap.saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        r.consume(take);
        total += take as u64;
        if done {
            return Ok(total);
        }
    }
}

/// Where each session of a history file starts and ends, reading from byte `base` (where
/// `r` stands) after the sessions `heads` already known before it.
fn scan_heads<R: BufRead>(mut r: R, base: u64, mut heads: Vec<Head>) -> Vec<Head> {
    let mut line = Vec::new();
    let mut off = base;
    let mut any_text = false;
    loop {
        let n = match next_line(&mut r, &mut line, 128) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some(rest) = line.strip_prefix(HEADING.as_bytes()) {
            let when = String::from_utf8_lossy(rest).trim().to_string();
            if let Some(last) = heads.last_mut() {
                last.end = off;
            }
            heads.push(Head {
                start: if heads.is_empty() { 0 } else { off },
                end: off + n,
                when: Some(when),
            });
        } else {
            any_text |= line.iter().any(|c| !c.is_ascii_whitespace());
        }
        off += n;
    }
    match heads.last_mut() {
        Some(last) => last.end = off,
        None if any_text => heads.push(Head {
            start: 0,
            end: off,
            when: None,
        }),
        None => {}
    }
    heads
}

/// The text of `[start, end)`, at most [`MAX_SESSION_BYTES`] of it, and whether it was cut.
fn read_range(file: &Path, start: u64, end: u64) -> std::io::Result<(String, bool)> {
    let mut f = kit::open_file(file)?;
    f.seek(SeekFrom::Start(start))?;
    let want = end.saturating_sub(start);
    let mut buf = Vec::new();
    f.take(want.min(MAX_SESSION_BYTES)).read_to_end(&mut buf)?;
    let text = match String::from_utf8(buf) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok((text, want > MAX_SESSION_BYTES))
}

fn naive_time(s: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(s.trim(), "%Y-%m-%d %H:%M:%S%.f").ok()
}

/// Aider writes local time without a zone: read as the local time of this machine.
fn local_utc(t: NaiveDateTime) -> Option<DateTime<Utc>> {
    Local
        .from_local_datetime(&t)
        .earliest()
        .map(|d| d.with_timezone(&Utc))
}

/// Entries of the input history within `[from, to)`: `(time, text)`.
fn read_inputs(
    path: &Path,
    from: NaiveDateTime,
    to: Option<NaiveDateTime>,
    b: &mut SessionBuilder,
) -> Vec<(NaiveDateTime, String)> {
    let bytes = match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_INPUT_HISTORY => {
            b.warn(format!(
                "{}: too large, prompt times not read",
                path.display()
            ));
            return Vec::new();
        }
        _ => match kit::read_file(path) {
            Ok(v) => v,
            Err(e) => {
                b.warn(format!("cannot read {}: {e}", path.display()));
                return Vec::new();
            }
        },
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut out: Vec<(NaiveDateTime, String)> = Vec::new();
    let mut cur: Option<(NaiveDateTime, Vec<&str>)> = None;
    let mut flush = |cur: &mut Option<(NaiveDateTime, Vec<&str>)>| {
        if let Some((t, lines)) = cur.take() {
            if t >= from && to.is_none_or(|to| t < to) {
                out.push((t, lines.join("\n")));
            }
        }
    };
    for l in text.split('\n') {
        let l = l.strip_suffix('\r').unwrap_or(l);
        if let Some(t) = l.strip_prefix("# ").and_then(naive_time) {
            flush(&mut cur);
            cur = Some((t, Vec::new()));
        } else if let (Some(rest), Some((_, lines))) = (l.strip_prefix('+'), cur.as_mut()) {
            lines.push(rest);
        }
    }
    flush(&mut cur);
    out
}

// ---------------------------------------------------------------------------------------
// Parsing one session's text

/// A piece of the history, with the 1-based line (within the session) it starts on.
#[derive(Debug)]
enum Block<'a> {
    Preamble(usize, Vec<&'a str>),
    Prompt(usize, String),
    /// Aider's output: one entry per message written, prefixes and closing spaces removed.
    Output(usize, Vec<String>),
    Reply(usize, Vec<&'a str>),
}

/// The text of a prompt line (`#### text  `).
fn prompt_line(l: &str) -> Option<&str> {
    l.strip_suffix("  ")?.strip_prefix("#### ")
}

fn quote_start(l: &str) -> bool {
    l.starts_with("> ") || l == ">  "
}

/// Split a session's text into blocks (see the module doc for the line rules).
fn blocks(text: &str) -> Vec<Block<'_>> {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut out: Vec<Block> = Vec::new();
    let heading = lines.iter().position(|l| l.starts_with(HEADING));
    let mut i = match heading {
        Some(h) => {
            if lines[..h].iter().any(|l| !l.trim().is_empty()) {
                out.push(Block::Preamble(1, lines[..h].to_vec()));
            }
            h + 1
        }
        None => 0,
    };
    while i < lines.len() {
        let l = lines[i];
        if prompt_line(l).is_some() {
            let start = i;
            let mut text = Vec::new();
            while let Some(t) = lines.get(i).and_then(|l| prompt_line(l)) {
                text.push(t);
                i += 1;
            }
            out.push(Block::Prompt(start + 1, text.join("\n")));
            continue;
        }
        if let Some(end) = record_end(&lines, i) {
            let mut rec = lines[i..=end].join("\n");
            rec.truncate(rec.len() - 2);
            let rec = if rec == ">" {
                String::new()
            } else {
                rec[2..].to_string()
            };
            match out.last_mut() {
                Some(Block::Output(_, recs)) if !lines[i - 1].is_empty() => recs.push(rec),
                _ => out.push(Block::Output(i + 1, vec![rec])),
            }
            i = end + 1;
            continue;
        }
        if l.trim().is_empty() && !matches!(out.last(), Some(Block::Reply(..))) {
            i += 1;
            continue;
        }
        match out.last_mut() {
            Some(Block::Reply(_, ls)) => ls.push(l),
            _ => out.push(Block::Reply(i + 1, vec![l])),
        }
        i += 1;
    }
    for b in &mut out {
        if let Block::Reply(_, ls) = b {
            while ls.last().is_some_and(|l| l.trim().is_empty()) {
                ls.pop();
            }
        }
    }
    out
}

/// The last line of the output message starting at `i`, if one does.
fn record_end(lines: &[&str], i: usize) -> Option<usize> {
    if !quote_start(lines[i]) {
        return None;
    }
    if lines[i].ends_with("  ") {
        return Some(i);
    }
    for (j, l) in lines.iter().enumerate().skip(i + 1).take(MAX_RECORD_LINES) {
        // Another `> ` line starts a message of its own: this one was a reply's quote.
        if l.starts_with(HEADING) || prompt_line(l).is_some() || quote_start(l) {
            return None;
        }
        if l.ends_with("  ") {
            return Some(j);
        }
    }
    None
}

/// The model of a `Main model: X with …` / `Model: X with …` line.
fn model_line(rec: &str) -> Option<&str> {
    let rest = rec
        .strip_prefix("Main model: ")
        .or_else(|| rec.strip_prefix("Model: "))?;
    let name = rest.split(" with ").next()?.trim();
    (!name.is_empty()).then_some(name)
}

/// `3.2k` -> 3200.
fn count(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mul) = match s.strip_suffix(['k', 'K']) {
        Some(n) => (n, 1_000.0),
        None => match s.strip_suffix('M') {
            Some(n) => (n, 1_000_000.0),
            None => (s, 1.0),
        },
    };
    let v: f64 = num.trim().replace(',', "").parse().ok()?;
    (v >= 0.0).then(|| (v * mul).round() as u64)
}

/// Usage and cost of a `Tokens: …` output line; `Err` names what could not be read.
fn usage_line(rec: &str) -> Option<Result<(TokenUsage, Option<f64>), String>> {
    let rest = rec.strip_prefix("Tokens: ")?;
    let (tokens, cost) = match rest.split_once("Cost: $") {
        Some((t, c)) => (t, Some(c)),
        None => (rest, None),
    };
    let mut u = TokenUsage::default();
    let mut sent = None;
    for part in tokens.split(',') {
        let part = part.trim().trim_end_matches('.');
        let read = |suffix: &str| part.strip_suffix(suffix).and_then(count);
        if let Some(n) = read(" sent") {
            sent = Some(n);
        } else if let Some(n) = read(" received") {
            u.output_tokens = n;
        } else if let Some(n) = read(" cache write") {
            u.cache_write_tokens = n;
        } else if let Some(n) = read(" cache hit") {
            u.cached_tokens = n;
        } else if !part.is_empty() {
            return Some(Err(format!("unknown part {part:?}")));
        }
    }
    let Some(sent) = sent else {
        return Some(Err("no tokens sent".into()));
    };
    // `sent` holds the cache writes (base_coder adds them in); cache hits are apart.
    u.input_tokens = sent.saturating_sub(u.cache_write_tokens);
    let cost = match cost.map(|c| c.split(' ').next().unwrap_or("").parse::<f64>()) {
        Some(Ok(c)) => Some(c),
        Some(Err(e)) => return Some(Err(format!("cost: {e}"))),
        None => None,
    };
    Some(Ok((u, cost)))
}

fn is_fence(l: &str) -> bool {
    l.trim_start().starts_with("```")
}

/// `<<<<<<< SEARCH`, `=======`, `>>>>>>> REPLACE` as editblock_coder matches them.
fn marker(l: &str, c: char, word: &str) -> bool {
    let l = l.trim_end();
    let n = l.chars().take_while(|&x| x == c).count();
    if !(5..=9).contains(&n) {
        return false;
    }
    let rest = &l[n..];
    if word.is_empty() {
        rest.is_empty()
    } else {
        rest == format!(" {word}") || rest == format!(" {word}>")
    }
}

/// A reply's text split into reasoning, text and SEARCH/REPLACE edit calls; `first` is
/// the 1-based line of `lines[0]` in the session, for call ids.
fn reply(all: &[&str], first: usize) -> (String, Option<String>, Vec<ToolCall>) {
    let mut lines = all;
    while lines.first().is_some_and(|l| l.trim().is_empty()) {
        lines = &lines[1..];
    }
    let mut thinking = None;
    if let Some(tag) = lines.first().map(|l| l.trim()).and_then(|l| {
        let name = l.strip_prefix('<')?.strip_suffix('>')?;
        let known = ["think", "thinking", "reasoning"].contains(&name)
            || name.starts_with("thinking-content-");
        known.then(|| format!("</{name}>"))
    }) {
        if let Some(end) = lines.iter().position(|l| l.trim() == tag) {
            thinking = Some(lines[1..end].join("\n").trim().to_string());
            lines = &lines[end + 1..];
        }
    }
    let first = first + (all.len() - lines.len());
    let mut keep: Vec<&str> = Vec::new();
    let mut calls = Vec::new();
    let mut path = String::new();
    let (mut i, mut floor) = (0, 0);
    while i < lines.len() {
        let Some((start, div, end, close)) = edit_at(lines, i, floor) else {
            keep.push(lines[i]);
            i += 1;
            continue;
        };
        // The path and fence lines before the marker were kept; they belong to the block.
        keep.truncate(keep.len() - (i - start));
        if let Some(p) = lines[start..i]
            .iter()
            .map(|l| l.trim())
            .find(|l| !is_fence(l))
        {
            path = p.trim_matches(['*', '`']).to_string();
        }
        calls.push(ToolCall {
            tool_call_id: format!("line-{}", first + i),
            tool_name: "edit".into(),
            input: json!({
                "path": path,
                "old_str": lines[i + 1..div].join("\n"),
                "new_str": lines[div + 1..end].join("\n"),
            }),
            ..ToolCall::default()
        });
        i = close + 1;
        // The blank lines around a block taken out: one is enough.
        while keep.last().is_none_or(|l| l.trim().is_empty())
            && lines.get(i).is_some_and(|l| l.trim().is_empty())
        {
            i += 1;
        }
        floor = i;
    }
    let content = keep.join("\n").trim().to_string();
    (content, thinking, calls)
}

/// A path line before a SEARCH marker: not blank, not a fence, not a marker.
fn path_like(l: &str) -> bool {
    let t = l.trim();
    !t.is_empty() && !is_fence(t) && !marker(t, '>', "REPLACE") && !marker(t, '=', "")
}

/// A SEARCH/REPLACE block whose marker is line `i`: `(first line, divider, REPLACE line,
/// last line)`. It starts at its path and opening fence (`diff`: path then fence;
/// `diff-fenced`: fence then path), never before `floor`, and ends at the closing fence
/// when it opened one.
fn edit_at(lines: &[&str], i: usize, floor: usize) -> Option<(usize, usize, usize, usize)> {
    if !marker(lines[i], '<', "SEARCH") {
        return None;
    }
    let mut div = None;
    let mut end = None;
    for (j, l) in lines.iter().enumerate().skip(i + 1) {
        if marker(l, '<', "SEARCH") {
            return None;
        }
        if div.is_none() && marker(l, '=', "") {
            div = Some(j);
        } else if div.is_some() && marker(l, '>', "REPLACE") {
            end = Some(j);
            break;
        }
    }
    let (div, end) = (div?, end?);
    let back = |k: usize| (i >= floor + k).then(|| lines[i - k]);
    let (p1, p2) = (back(1), back(2));
    let fence = |l: Option<&str>| l.is_some_and(is_fence);
    let path = |l: Option<&str>| l.is_some_and(path_like);
    let (start, fenced) = if (path(p1) && fence(p2)) || (fence(p1) && path(p2)) {
        (i - 2, true)
    } else if path(p1) || fence(p1) {
        (i - 1, fence(p1))
    } else {
        (i, false)
    };
    let close = if fenced && lines.get(end + 1).is_some_and(|l| l.trim() == "```") {
        end + 1
    } else {
        end
    };
    Some((start, div, end, close))
}

/// Fill the builder from one session's text; `inputs` are the input history's entries of
/// the session's time span, for prompt times.
pub fn parse_session(text: &str, inputs: Vec<(NaiveDateTime, String)>, b: &mut SessionBuilder) {
    let mut model: Option<String> = None;
    let mut prompted = false;
    let mut input_at = 0usize;
    // Index of the assistant message of the current turn, if any.
    let mut turn_reply: Option<usize> = None;
    let mut title: Option<String> = None;
    // The turn's prompt when it is a command (`/add x`, `!ls`): what Aider's output answers.
    let mut command = String::new();
    for block in blocks(text) {
        match block {
            Block::Preamble(line, ls) => {
                let s = jsonl::Scanned {
                    warnings: Vec::new(),
                    unparsed: vec![jsonl::Unparsed {
                        line,
                        reason: "text before the session's heading".into(),
                        text: ls.join("\n"),
                    }],
                };
                s.into_session(&mut b.s);
            }
            Block::Prompt(line, text) => {
                prompted = true;
                turn_reply = None;
                command = if text.starts_with(['/', '!']) {
                    text.clone()
                } else {
                    String::new()
                };
                let at = inputs[input_at.min(inputs.len())..]
                    .iter()
                    .position(|(_, t)| *t == text)
                    .map(|k| input_at + k);
                let timestamp = at.and_then(|k| {
                    input_at = k + 1;
                    local_utc(inputs[k].0)
                });
                if title.is_none() && !text.starts_with('/') {
                    title = kit::title_from_text(&text);
                }
                b.push(Message {
                    role: Role::User,
                    content: text,
                    timestamp,
                    native_id: Some(format!("line-{line}")),
                    ..Message::default()
                });
            }
            Block::Reply(line, ls) => {
                let (content, thinking, calls) = reply(&ls, line);
                turn_reply = Some(b.s.messages.len());
                b.push(Message {
                    role: Role::Assistant,
                    content,
                    thinking,
                    tool_calls: calls,
                    model: model.clone(),
                    native_id: Some(format!("line-{line}")),
                    ..Message::default()
                });
            }
            Block::Output(line, recs) => {
                let mut kept: Vec<String> = Vec::new();
                for rec in recs {
                    if let Some(m) = model_line(&rec) {
                        model = Some(m.to_string());
                    }
                    if let Some(u) = usage_line(&rec) {
                        match u {
                            Ok((usage, cost)) => {
                                let at = match turn_reply {
                                    Some(k) if b.s.messages[k].token_usage.is_none() => k,
                                    _ => {
                                        turn_reply = Some(b.s.messages.len());
                                        b.push(Message {
                                            role: Role::Assistant,
                                            model: model.clone(),
                                            ..Message::default()
                                        });
                                        b.s.messages.len() - 1
                                    }
                                };
                                let m = &mut b.s.messages[at];
                                m.token_usage = Some(usage);
                                m.cost = cost;
                            }
                            Err(e) => b.unparsed.note(
                                "usage lines",
                                "not a usage report as Aider writes it (kept in the output)",
                                || format!("line {line}: {e}: {rec}"),
                            ),
                        }
                    }
                    if let Some(p) = rec.strip_prefix("Applied edit to ") {
                        let done = turn_reply.and_then(|k| {
                            let m = &mut b.s.messages[k];
                            let c = m.tool_calls.iter_mut().filter(|c| {
                                c.tool_name == "edit"
                                    && c.output.is_none()
                                    && c.input.get("path").and_then(Value::as_str) == Some(p)
                            });
                            let mut any = false;
                            for c in c {
                                c.output = Some(rec.clone());
                                c.is_error = Some(false);
                                any = true;
                            }
                            any.then_some(())
                        });
                        if done.is_some() {
                            continue;
                        }
                    }
                    kept.push(rec);
                }
                if kept.is_empty() {
                    continue;
                }
                let out = kept.join("\n");
                if !prompted {
                    b.event(out, None);
                    continue;
                }
                let call = ToolCall {
                    tool_call_id: format!("line-{line}"),
                    tool_name: "aider".into(),
                    input: if command.is_empty() {
                        json!({})
                    } else {
                        Value::String(command.clone())
                    },
                    output: Some(out),
                    is_error: Some(false),
                    duration_ms: None,
                };
                match turn_reply {
                    Some(k) => b.s.messages[k].tool_calls.push(call),
                    None => {
                        turn_reply = Some(b.s.messages.len());
                        b.push(Message {
                            role: Role::Assistant,
                            tool_calls: vec![call],
                            model: model.clone(),
                            ..Message::default()
                        });
                    }
                }
            }
        }
    }
    if b.s.title.is_none() {
        b.s.title = title;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_split_a_file_at_each_heading() {
        let text = "stray\n\n# aider chat started at 2025-01-02 03:04:05\n\n#### hi  \n\n# Heading of a reply\n\n# aider chat started at 2025-01-02 04:00:00\n";
        let heads = scan_heads(text.as_bytes(), 0, Vec::new());
        let second = text.rfind("# aider chat").unwrap() as u64;
        assert_eq!(heads.len(), 2);
        assert_eq!((heads[0].start, heads[0].end), (0, second));
        assert_eq!((heads[1].start, heads[1].end), (second, text.len() as u64));
        assert_eq!(heads[0].when.as_deref(), Some("2025-01-02 03:04:05"));
        assert_eq!(
            session_id("web", heads[0].when.as_deref()),
            "web-2025-01-02T03-04-05"
        );
    }

    #[test]
    fn tokens_lines_read_as_aider_formats_them() {
        let (u, c) = usage_line("Tokens: 3.2k sent, 1.0k cache write, 12k cache hit, 222 received. Cost: $0.0014 message, $0.01 session.")
            .unwrap()
            .unwrap();
        assert_eq!(
            (
                u.input_tokens,
                u.cache_write_tokens,
                u.cached_tokens,
                u.output_tokens
            ),
            (2200, 1000, 12000, 222)
        );
        assert_eq!(c, Some(0.0014));
        assert!(usage_line("Tokens: lots").unwrap().is_err());
        assert!(usage_line("Applied edit to a").is_none());
    }

    fn parsed(text: &str) -> Session {
        let mut b = SessionBuilder::new(AGENT, "t");
        parse_session(text, Vec::new(), &mut b);
        b.finish()
    }

    #[test]
    fn both_edit_formats_become_edit_calls_and_quotes_stay_in_replies() {
        let text = "\n# aider chat started at 2025-01-02 03:04:05\n\n> Model: m1 with diff edit format  \n\n#### fix it  \n####   \n#### please  \n\n<think>\nponder\n</think>\n\nIntro.\n\na.py\n```python\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n\n```\nb.py\n<<<<<<< SEARCH\n=======\nfresh\n>>>>>>> REPLACE\n```\n\n> a quote\n\n> Tokens: 1.5k sent, 20 received.  \n> Applied edit to a.py  \n> # 1 block failed\n\ndetail  \n";
        let s = parsed(text);
        let roles: Vec<Role> = s.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::System, Role::User, Role::Assistant]);
        assert_eq!(s.messages[1].content, "fix it\n\nplease");
        let r = &s.messages[2];
        assert_eq!(r.thinking.as_deref(), Some("ponder"));
        assert_eq!(r.content, "Intro.\n\n> a quote");
        assert_eq!(r.model.as_deref(), Some("m1"));
        assert_eq!(
            r.token_usage.map(|u| (u.input_tokens, u.output_tokens)),
            Some((1500, 20))
        );
        let calls: Vec<(&str, &Value, Option<&str>)> = r
            .tool_calls
            .iter()
            .map(|c| (c.tool_name.as_str(), &c.input, c.output.as_deref()))
            .collect();
        assert_eq!(calls.len(), 3, "{calls:?}");
        assert_eq!(
            calls[0].1,
            &json!({"path": "a.py", "old_str": "old", "new_str": "new"})
        );
        assert_eq!(calls[0].2, Some("Applied edit to a.py"));
        assert_eq!(
            calls[1].1,
            &json!({"path": "b.py", "old_str": "", "new_str": "fresh"})
        );
        assert_eq!(calls[1].2, None);
        assert_eq!(
            calls[2].2,
            Some("Tokens: 1.5k sent, 20 received.\n# 1 block failed\n\ndetail")
        );
    }

    #[test]
    fn a_grown_file_is_indexed_as_a_full_read_would() {
        let dir = tempfile::tempdir().expect("tmp");
        let file = dir.path().join(HISTORY);
        let one = "\n# aider chat started at 2025-01-02 03:04:05\n\n#### a  \n";
        let two = "\n# aider chat started at 2025-01-02 04:00:00\n\n#### b  \n";
        std::fs::write(&file, format!("{one}{two}")).expect("write");
        let store = AiderStore::new(vec![Root::new(AGENT, dir.path(), "test")]);
        assert_eq!(store.heads(&file).len(), 2);
        let three = "reply\n\n# aider chat started at 2025-01-02 05:00:00\n\n#### c  \n";
        std::fs::write(&file, format!("{one}{two}{three}")).expect("write");
        let full = scan_heads(
            std::fs::read(&file).expect("read").as_slice(),
            0,
            Vec::new(),
        );
        assert_eq!(store.heads(&file), full);
        assert_eq!(full.len(), 3);
    }
}
