//! Crush in the real sets: layout and an independent reading of `crush.db`.
//!
//! A set's `crush/<project>/.crush/crush.db{,-wal}` (gzip or plain) is placed at
//! `$HOME/projects/<project>/.crush/` and named in `~/.local/share/crush/projects.json`,
//! the registry Crush keeps; `-shm` is not copied (it is the WAL's index, rebuilt by any
//! reader). The reader uses `rusqlite` and `serde_json` only: prompts are `user` text
//! parts, replies `assistant` text parts, thinking `reasoning` parts, tool output
//! `tool_result` content; tokens are the session row's `prompt_tokens` and
//! `completion_tokens` (Crush keeps no per-message usage).

use super::layout::{files_under, place, plain_name, slug, subdirs};
use super::read::{Ctx, Kind, Match, Raw, Tokens};
use serde_json::Value;
use std::path::{Path, PathBuf};

pub fn layout(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let mut placed = Vec::new();
    let mut projects = Vec::new();
    for project in subdirs(dir) {
        let name = slug(&project.file_name().unwrap_or_default().to_string_lossy());
        let root = home.join("projects").join(&name);
        let mut db = None;
        for f in files_under(&project) {
            let n = plain_name(&f);
            if !(n == "crush.db" || n == "crush.db-wal") {
                continue;
            }
            let p = place(&f, &root.join(".crush").join(&n));
            if n == "crush.db" {
                db = Some(p);
            }
        }
        if let Some(db) = db {
            placed.push(db);
            projects.push(serde_json::json!({
                "path": root.to_string_lossy(),
                "data_dir": root.join(".crush").to_string_lossy(),
                "last_accessed": "2025-08-01T00:00:00Z",
            }));
        }
    }
    let reg = home.join(".local/share/crush/projects.json");
    std::fs::create_dir_all(reg.parent().expect("parent")).expect("mkdir");
    let text = serde_json::to_string_pretty(&serde_json::json!({ "projects": projects }));
    std::fs::write(reg, text.expect("json")).expect("write projects.json");
    placed
}

pub fn read(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    let mut out = Vec::new();
    for db in files {
        let Ok(c) = rusqlite::Connection::open_with_flags(
            cx.copy_of(db),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        ) else {
            continue;
        };
        let Ok(mut st) =
            c.prepare("SELECT id, prompt_tokens, completion_tokens FROM sessions ORDER BY id")
        else {
            continue;
        };
        let sessions: Vec<(String, i64, i64)> = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map(|it| it.flatten().collect())
            .unwrap_or_default();
        for (id, p, o) in sessions {
            let matcher = Match::Id {
                id: id.clone(),
                source: Some(db.clone()),
            };
            let mut raw = Raw::new("crush", id.clone(), db.clone(), matcher);
            raw.tokens = Some(Tokens {
                input: Some(p.max(0) as u64),
                output: o.max(0) as u64,
            });
            let Ok(mut m) = c.prepare("SELECT role, parts FROM messages WHERE session_id = ?1")
            else {
                continue;
            };
            let msgs: Vec<(String, String)> = m
                .query_map([&id], |r| Ok((r.get(0)?, r.get(1)?)))
                .map(|it| it.flatten().collect())
                .unwrap_or_default();
            for (role, parts) in msgs {
                let parts: Value = serde_json::from_str(&parts).unwrap_or(Value::Null);
                for part in parts.as_array().into_iter().flatten() {
                    let d = &part["data"];
                    let t = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("");
                    match part["type"].as_str() {
                        Some("text") if role == "user" => raw.text(Kind::Prompt, t("text")),
                        Some("text") => raw.text(Kind::Reply, t("text")),
                        Some("reasoning") => raw.text(Kind::Thinking, t("thinking")),
                        Some("tool_result") => raw.text(Kind::ToolOutput, t("content")),
                        _ => {}
                    }
                }
            }
            out.push(raw);
        }
    }
    out
}
