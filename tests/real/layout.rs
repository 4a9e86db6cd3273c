//! Laying a real set out in a scratch `$HOME` the way each agent lays out its own store.
//!
//! A set (a directory `SESSFS_REAL_SESSIONS` names) holds `<agent>/…` folders in whatever
//! layout their source had. Each agent gets a function here that copies its files to the
//! places `src/stores/*::candidates` look in (gzip-compressed files are decompressed on
//! the way), and returns the scratch paths of the native session files it placed, with
//! the id and the match rule the checks use. The set itself is only ever read.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Agents the real sets hold that sessfs does not read yet: reported, not checked.
pub const NOT_READ_YET: &[&str] = &[];

/// Agents whose real sets another test checks the same way: `(folder, test)`.
pub const CHECKED_ELSEWHERE: &[(&str, &str)] = &[(
    "cline",
    "tests/cline.rs::real_cline_tasks_lose_no_line_and_count_usage_once",
)];

/// Folders of a set that hold no session data sessfs could show (schemas, notes).
pub const NO_SESSIONS: &[&str] = &["agentuse", "agsh", "indusagi"];

/// Read a file of the set, decompressing `.gz` with the system `gzip` (a reader that shares
/// no code with the LLxprt store's own gzip reading).
pub fn read_set_file(p: &Path) -> Vec<u8> {
    if p.extension().is_some_and(|e| e == "gz") {
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(p)
            .output()
            .unwrap_or_else(|e| panic!("gzip -dc {}: {e}", p.display()));
        assert!(out.status.success(), "gzip -dc {} failed", p.display());
        out.stdout
    } else {
        std::fs::read(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
    }
}

/// `name` without a trailing `.gz`.
pub fn plain_name(p: &Path) -> String {
    let n = p
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .to_string();
    n.strip_suffix(".gz").map(str::to_string).unwrap_or(n)
}

/// Copy `src` (decompressed) to `dst`, creating parents. Panics if `dst` exists: two
/// native files must never land on one path.
pub fn place(src: &Path, dst: &Path) -> PathBuf {
    assert!(
        !dst.exists(),
        "layout collision: {} and another file both map to {}",
        src.display(),
        dst.display()
    );
    std::fs::create_dir_all(dst.parent().expect("parent")).expect("mkdir");
    std::fs::write(dst, read_set_file(src)).expect("write scratch file");
    dst.to_path_buf()
}

/// Every file under `dir`, sorted, following no symlinks.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// Immediate subdirectories of `dir`, sorted.
pub fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The first JSON value of each line of a JSONL text that parses (for ids and headers).
pub fn first_values(bytes: &[u8]) -> impl Iterator<Item = Value> + '_ {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| {
            serde_json::Deserializer::from_slice(l)
                .into_iter::<Value>()
                .next()
        })
        .filter_map(Result::ok)
}

/// A name made safe as one path component.
pub fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Lay out every agent folder of `set` under `home`. Returns, per agent folder, the
/// native files placed (scratch paths), for the readers.
pub fn lay_out(set: &Path, home: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for dir in subdirs(set) {
        let agent = dir.file_name().unwrap().to_string_lossy().to_string();
        let placed = match agent.as_str() {
            "claude" => claude(&dir, home),
            "codex" => codex(&dir, home),
            "gemini" => gemini(&dir, home),
            "copilot" => copilot(&dir, home),
            "cursor" => cursor(&dir, home),
            "opencode" => opencode(&dir, home),
            "pi" => pi_like(&dir, &home.join(".pi/agent/sessions")),
            "omp" => pi_like(&dir, &home.join(".omp/agent/sessions")),
            "openclaw" => openclaw(&dir, home),
            "hermes" => hermes_db(&dir, home),
            "hermes-jsonl" => hermes_jsonl(&dir, home),
            "atsf" => atsf(&dir, home),
            "crush" => super::crush::layout(&dir, home),
            "amp" => crate::amp::lay_out(&dir, home),
            "qwen" => crate::qwen::layout(&dir, home),
            "kimi" => crate::kimi::lay_out(&dir, home),
            "aider" => crate::aider::lay_out(&dir, home),
            "factory" => crate::droid::lay_out(&dir, home),
            _ => continue,
        };
        out.entry(agent).or_default().extend(placed);
    }
    out
}

fn is_data(p: &Path) -> bool {
    let n = plain_name(p);
    !(n.ends_with(".md") || n.ends_with(".sql"))
}

/// The `sessionId` of a Claude transcript: the first record carrying one.
fn claude_session_id(bytes: &[u8]) -> Option<String> {
    first_values(bytes).find_map(|v| v.get("sessionId")?.as_str().map(str::to_string))
}

/// Claude Code: `~/.claude/projects/<dir>/<sessionId>.jsonl`, subagents in
/// `<sessionId>/subagents/`. A source folder whose files are named by their session ids
/// keeps its tree as one project directory; a loose file named otherwise gets a project
/// directory of its own and is renamed to its session id, as Claude Code names it (two
/// loose files of one session, such as a file and a copy cut short, then stay apart).
fn claude(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let projects = home.join(".claude/projects");
    let mut placed = Vec::new();
    let mut groups: Vec<(String, PathBuf)> = Vec::new();
    // Loose files directly in the agent folder: each its own project.
    for f in files_under(dir) {
        if f.parent() == Some(dir) && is_data(&f) {
            let bytes = read_set_file(&f);
            let id = claude_session_id(&bytes).unwrap_or_else(|| plain_name(&f));
            let stem = plain_name(&f).trim_end_matches(".jsonl").to_string();
            let dst = projects
                .join(format!("-real-{}", slug(&stem)))
                .join(format!("{id}.jsonl"));
            placed.push(place(&f, &dst));
        }
    }
    for src in subdirs(dir) {
        groups.push((src.file_name().unwrap().to_string_lossy().to_string(), src));
    }
    for (name, src) in groups {
        // A folder that already is a project directory (`-home-…`) inside a source folder.
        let nested_projects: Vec<PathBuf> = subdirs(&src)
            .into_iter()
            .filter(|d| d.file_name().unwrap().to_string_lossy().starts_with('-'))
            .collect();
        for p in &nested_projects {
            for f in files_under(p).into_iter().filter(|f| is_data(f)) {
                let rel = f.parent().unwrap().strip_prefix(p).unwrap().to_path_buf();
                let dst = projects
                    .join(p.file_name().unwrap())
                    .join(rel)
                    .join(plain_name(&f));
                placed.push(place(&f, &dst));
            }
        }
        let project = projects.join(format!("-real-{}", slug(&name)));
        for f in files_under(&src) {
            if !is_data(&f) || nested_projects.iter().any(|p| f.starts_with(p)) {
                continue;
            }
            let rel = f
                .parent()
                .unwrap()
                .strip_prefix(&src)
                .unwrap()
                .to_path_buf();
            let n = plain_name(&f);
            let top = rel.as_os_str().is_empty();
            let file_name = if top {
                let stem = n.trim_end_matches(".jsonl");
                let bytes = read_set_file(&f);
                match claude_session_id(&bytes) {
                    Some(id) if id != stem => {
                        // A file named otherwise: its own project, named by its session id.
                        let dst = projects
                            .join(format!("-real-{}-{}", slug(&name), slug(stem)))
                            .join(format!("{id}.jsonl"));
                        placed.push(place(&f, &dst));
                        continue;
                    }
                    _ => n,
                }
            } else {
                n
            };
            placed.push(place(&f, &project.join(rel).join(file_name)));
        }
    }
    placed
}

/// Codex: `~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`. Files already in that tree keep
/// it; loose files go under the date of their `session_meta` as `rollout-<stem>.jsonl`.
fn codex(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let root = home.join(".codex/sessions");
    let mut placed = Vec::new();
    for f in files_under(dir).into_iter().filter(|f| is_data(f)) {
        let rel = f.strip_prefix(dir).unwrap();
        let comps: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().to_string())
            .collect();
        // `<source>/sessions/YYYY/MM/DD/<file>` or `<folder>/YYYY/MM/DD/<file>`.
        let dated = comps.len() >= 4 && {
            let n = comps.len();
            comps[n - 4].len() == 4 && comps[n - 4].chars().all(|c| c.is_ascii_digit())
        };
        let n = plain_name(&f);
        let dst = if dated {
            let k = comps.len();
            root.join(&comps[k - 4])
                .join(&comps[k - 3])
                .join(&comps[k - 2])
                .join(&n)
        } else {
            let bytes = read_set_file(&f);
            let ts = first_values(&bytes)
                .find_map(|v| {
                    let t = v
                        .get("timestamp")
                        .or_else(|| v.pointer("/payload/timestamp"))?;
                    t.as_str().map(str::to_string)
                })
                .unwrap_or_else(|| "2025-01-01".to_string());
            let (y, m, d) = (&ts[0..4], &ts[5..7], &ts[8..10]);
            let stem = n.trim_end_matches(".jsonl");
            let name = if stem.starts_with("rollout-") {
                n.clone()
            } else {
                format!("rollout-{}.jsonl", slug(stem))
            };
            root.join(y).join(m).join(d).join(name)
        };
        placed.push(place(&f, &dst));
    }
    placed
}

/// Gemini CLI: `~/.gemini/tmp/<project>/chats/…` and `~/.gemini/projects.json`. Source
/// folders holding `tmp/` keep it; loose chat files go to a project directory of their own
/// as `session-<date>-<id8>.json[l]`.
fn gemini(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let g = home.join(".gemini");
    let mut placed = Vec::new();
    for f in files_under(dir).into_iter().filter(|f| is_data(f)) {
        let rel = f.strip_prefix(dir).unwrap();
        let comps: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().to_string())
            .collect();
        if let Some(i) = comps.iter().position(|c| c == "tmp") {
            let sub: PathBuf = comps[i..].iter().collect();
            placed.push(place(&f, &g.join(sub)));
        } else if comps.len() == 2 && comps[1] == "projects.json" {
            place(&f, &g.join("projects.json"));
        } else if comps.len() == 1 {
            let n = plain_name(&f);
            let ext = if n.ends_with(".jsonl") {
                "jsonl"
            } else {
                "json"
            };
            let stem = n.trim_end_matches(".jsonl").trim_end_matches(".json");
            let bytes = read_set_file(&f);
            let head = first_values(&bytes)
                .next()
                .or_else(|| serde_json::from_slice(&bytes).ok());
            let id = head
                .as_ref()
                .and_then(|v| v.get("sessionId")?.as_str().map(str::to_string))
                .unwrap_or_else(|| stem.to_string());
            let start = head
                .as_ref()
                .and_then(|v| v.get("startTime")?.as_str().map(str::to_string))
                .unwrap_or_else(|| "2026-01-01T00:00".to_string());
            let when = start
                .get(0..16)
                .unwrap_or("2026-01-01T00:00")
                .replace(':', "-");
            let id8: String = id.chars().take(8).collect();
            let dst = g
                .join("tmp")
                .join(format!("real-{}", slug(stem)))
                .join("chats")
                .join(format!("session-{when}-{id8}.{ext}"));
            placed.push(place(&f, &dst));
        }
    }
    placed
}

/// Copilot CLI: `~/.copilot/session-state/<id>/events.jsonl` (+ `workspace.yaml`); a
/// loose events file goes to `session-state/<id>/` by its `session.start` id (a second
/// file of one id to the flat `session-state/<id>.jsonl` of 0.0.342–0.0.377), a legacy
/// document to `history-session-state/session_<id>_<ms>.json`.
fn copilot(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let c = home.join(".copilot");
    let mut placed = Vec::new();
    for f in files_under(dir).into_iter().filter(|f| is_data(f)) {
        let rel = f.strip_prefix(dir).unwrap();
        let comps: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().to_string())
            .collect();
        let n = plain_name(&f);
        if comps.len() == 3 {
            // `<source>/<id>/<file>`
            let dst = c.join("session-state").join(&comps[1]).join(&n);
            let p = place(&f, &dst);
            if n == "events.jsonl" {
                placed.push(p);
            }
        } else if comps.len() == 1 && n.ends_with(".jsonl") {
            let bytes = read_set_file(&f);
            let id = first_values(&bytes)
                .find_map(|v| v.pointer("/data/sessionId")?.as_str().map(str::to_string))
                .unwrap_or_else(|| slug(n.trim_end_matches(".jsonl")));
            let nested = c.join("session-state").join(&id).join("events.jsonl");
            let dst = if nested.exists() {
                c.join("session-state").join(format!("{id}.jsonl"))
            } else {
                nested
            };
            placed.push(place(&f, &dst));
        } else if comps.len() == 1 && n.ends_with(".json") {
            let bytes = read_set_file(&f);
            let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let id = v
                .get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| slug(n.trim_end_matches(".json")));
            let ms = v
                .get("startTime")
                .and_then(Value::as_str)
                .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
                .map(|t| t.timestamp_millis())
                .unwrap_or(0);
            let dst = c
                .join("history-session-state")
                .join(format!("session_{id}_{ms}.json"));
            placed.push(place(&f, &dst));
        }
    }
    placed
}

/// Cursor agent transcripts: `~/.cursor/projects/<dir>/agent-transcripts/…` as stored.
/// (The set's Cursor IDE samples are peer-tool JSON, not databases: not laid out.)
fn cursor(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let mut placed = Vec::new();
    for f in files_under(dir).into_iter().filter(|f| is_data(f)) {
        let rel = f.strip_prefix(dir).unwrap();
        let comps: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().to_string())
            .collect();
        if let Some(i) = comps.iter().position(|c| c == "agent-transcripts") {
            if i >= 1 {
                let sub: PathBuf = comps[i - 1..].iter().collect();
                placed.push(place(&f, &home.join(".cursor/projects").join(sub)));
            }
        }
    }
    placed
}

/// OpenCode: `~/.local/share/opencode/opencode.db` for the first database, then
/// `opencode-<source>.db` (sessfs reads every channel database); a legacy `storage/` tree
/// as `~/.local/share/opencode/storage/`.
fn opencode(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let data = home.join(".local/share/opencode");
    let mut placed = Vec::new();
    let mut first = true;
    for f in files_under(dir) {
        let n = plain_name(&f);
        let rel = f.strip_prefix(dir).unwrap();
        let comps: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().to_string())
            .collect();
        if let Some(i) = comps.iter().position(|c| c == "storage") {
            let sub: PathBuf = comps[i..].iter().collect();
            place(&f, &data.join(sub));
            continue;
        }
        if !n.ends_with(".db") {
            continue;
        }
        let source = if comps.len() > 1 {
            comps[0].clone()
        } else {
            n.trim_end_matches(".db").to_string()
        };
        let name = if first {
            "opencode.db".to_string()
        } else {
            format!("opencode-{}.db", slug(&source))
        };
        first = false;
        placed.push(place(&f, &data.join(name)));
    }
    placed
}

/// pi and omp: `<root>/--<cwd>--/<ts>_<id>.jsonl`, each file in a cwd bucket of its own
/// (named after the file, so two files of one id stay two files).
fn pi_like(dir: &Path, root: &Path) -> Vec<PathBuf> {
    let mut placed = Vec::new();
    for f in files_under(dir) {
        let n = plain_name(&f);
        if !n.ends_with(".jsonl") {
            continue;
        }
        let bytes = read_set_file(&f);
        let head = first_values(&bytes).next().unwrap_or(Value::Null);
        let id = head
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| slug(n.trim_end_matches(".jsonl")));
        let ts = head
            .get("timestamp")
            .and_then(Value::as_str)
            .unwrap_or("2025-01-01T00:00:00.000Z")
            .replace([':', '.'], "-");
        let stem = n.trim_end_matches(".jsonl");
        let dst = root
            .join(format!("--real-{}--", slug(stem)))
            .join(format!("{ts}_{id}.jsonl"));
        placed.push(place(&f, &dst));
    }
    placed
}

/// OpenClaw: `~/.openclaw/agents/<agent>/sessions/…` for the first source, then
/// `~/.openclaw-<source>/…` (sessfs reads every profile state dir). A loose transcript goes
/// to `agents/main/sessions/<id>.jsonl` by its header id.
fn openclaw(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let mut placed = Vec::new();
    let mut first = true;
    let mut loose = Vec::new();
    for src in subdirs(dir) {
        if !src.join("agents").is_dir() {
            continue;
        }
        let state = if first {
            home.join(".openclaw")
        } else {
            home.join(format!(
                ".openclaw-{}",
                slug(&src.file_name().unwrap().to_string_lossy())
            ))
        };
        first = false;
        for f in files_under(&src) {
            let rel = f
                .parent()
                .unwrap()
                .strip_prefix(&src)
                .unwrap()
                .to_path_buf();
            let p = place(&f, &state.join(rel).join(plain_name(&f)));
            if plain_name(&f) != "sessions.json" {
                placed.push(p);
            }
        }
    }
    for f in files_under(dir) {
        if f.parent() == Some(dir) && plain_name(&f).ends_with(".jsonl") {
            loose.push(f);
        }
    }
    let state = if first {
        home.join(".openclaw")
    } else {
        home.join(".openclaw-loose")
    };
    for f in loose {
        let bytes = read_set_file(&f);
        let id = first_values(&bytes)
            .next()
            .and_then(|h| h.get("id")?.as_str().map(str::to_string))
            .unwrap_or_else(|| slug(plain_name(&f).trim_end_matches(".jsonl")));
        placed.push(place(
            &f,
            &state
                .join("agents/main/sessions")
                .join(format!("{id}.jsonl")),
        ));
    }
    placed
}

/// Hermes databases: the first `state.db` (with its `-wal`/`-shm`) as `~/.hermes/state.db`,
/// the next ones as `~/.hermes/profiles/<source>/state.db`.
fn hermes_db(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let mut placed = Vec::new();
    let mut sources: Vec<PathBuf> = subdirs(dir)
        .into_iter()
        .filter(|s| files_under(s).iter().any(|f| plain_name(f) == "state.db"))
        .collect();
    // The source whose gateway transcripts the set also holds goes first, as `~/.hermes`.
    sources.sort_by_key(|s| {
        let n = s.file_name().unwrap().to_owned();
        !dir.parent()
            .map(|p| p.join("hermes-jsonl").join(&n).is_dir())
            .unwrap_or(false)
    });
    for (i, src) in sources.iter().enumerate() {
        let base = if i == 0 {
            home.join(".hermes")
        } else {
            home.join(".hermes/profiles")
                .join(slug(&src.file_name().unwrap().to_string_lossy()))
        };
        for f in files_under(src) {
            let n = plain_name(&f);
            if n.starts_with("state.db") {
                let p = place(&f, &base.join(&n));
                if n == "state.db" {
                    placed.push(p);
                }
            }
        }
    }
    // Loose gateway transcripts directly in the folder (the samples set).
    for f in files_under(dir) {
        let n = plain_name(&f);
        if f.parent() == Some(dir) && n.ends_with(".jsonl") {
            // `gateway_transcript_<id>[.excerpt…].jsonl` -> `<id>.jsonl`
            let id = n
                .trim_start_matches("gateway_transcript_")
                .split('.')
                .next()
                .unwrap_or(&n)
                .to_string();
            placed.push(place(
                &f,
                &home.join(".hermes/sessions").join(format!("{id}.jsonl")),
            ));
        }
    }
    placed
}

/// Hermes gateway transcripts: `~/.hermes/sessions/<id>.jsonl`, beside the database of the
/// same source (see [`hermes_db`]).
fn hermes_jsonl(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let mut placed = Vec::new();
    for f in files_under(dir) {
        let n = plain_name(&f);
        if n.ends_with(".jsonl") {
            placed.push(place(&f, &home.join(".hermes/sessions").join(&n)));
        }
    }
    placed
}

/// ATSF: `<project>/.agent/threads/<id>/thread.json` in a project under the home (sessfs
/// scans the home for `.agent/threads`), with the project's `config.json`.
fn atsf(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let project = home.join("real-atsf-project/.agent");
    let mut placed = Vec::new();
    for f in files_under(dir) {
        let n = plain_name(&f);
        if n == "config.json" {
            place(&f, &project.join("config.json"));
        } else if let Some(id) = n
            .strip_prefix("thread.")
            .and_then(|s| s.strip_suffix(".json"))
        {
            placed.push(place(
                &f,
                &project.join("threads").join(id).join("thread.json"),
            ));
        }
    }
    placed
}
