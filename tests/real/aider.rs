//! Aider in the real sets: layout and an independent reading of `.aider.chat.history.md`.
//!
//! A set's `aider/<project>/` holds a project's `.aider.chat.history.md` and
//! `.aider.input.history` (and `.aider.llm.history`, not a session, not placed). They go to
//! `$HOME/aider-projects/<project>/`, where sessfs' scan of the home finds them.
//!
//! The reader splits the file at each `# aider chat started at <time>` line (text before
//! the first belongs to the first session) and names each session as SEMANTICS "Aider"
//! says: `<project>-<date>T<HH-MM-SS>`, `~2` for a second of one name. Lines are read by
//! Aider's own writing rules: `#### ` lines are prompts, `> ` lines Aider's output, every
//! other non-empty line reply text. Markup is not expected: the heading, `<think>` tag
//! lines, SEARCH/REPLACE markers and the path and fence lines around a block; a line
//! inside a block is found as itself or as the diff line (`-`/`+`) sessfs shows it as.
//! Tokens: each `> Tokens: N sent, [W cache write,] [H cache hit,] R received.` line once
//! (`3.2k` is 3200): input is `N + H`, output `R`.

use super::layout::{files_under, place, plain_name, slug, subdirs};
use super::read::{norm_line, Ctx, Expect, Kind, Match, Raw, Tokens};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

const HISTORY: &str = ".aider.chat.history.md";
const HEADING: &str = "# aider chat started at ";

pub fn lay_out(dir: &Path, home: &Path) -> Vec<PathBuf> {
    let mut placed = Vec::new();
    for project in subdirs(dir) {
        let name = slug(&project.file_name().unwrap_or_default().to_string_lossy());
        let root = home.join("aider-projects").join(&name);
        for f in files_under(&project) {
            let n = plain_name(&f);
            if n == HISTORY {
                placed.push(place(&f, &root.join(&n)));
            } else if n == ".aider.input.history" {
                place(&f, &root.join(&n));
            }
        }
    }
    placed
}

/// `3.2k` -> 3200, `13k` -> 13000, `999` -> 999.
fn tokens(s: &str) -> u64 {
    let s = s.trim();
    match s.strip_suffix('k') {
        Some(n) => (n.parse::<f64>().unwrap_or(0.0) * 1000.0).round() as u64,
        None => s.parse().unwrap_or(0),
    }
}

fn marker(l: &str, prefix: &str) -> bool {
    let t = l.trim_end();
    let c = prefix.chars().next().unwrap_or(' ');
    let n = t.chars().take_while(|&x| x == c).count();
    (5..=9).contains(&n) && t[n..].trim().trim_end_matches('>') == &prefix[1..]
}

fn add(r: &mut Raw, kind: Kind, text: &str, diff: bool) {
    let mut lines = Vec::new();
    let mut e = Raw::new("aider", String::new(), PathBuf::new(), Match::Path);
    e.text(kind, text);
    for x in e.lines {
        let mut alts = x.alts.clone();
        if diff {
            // A diff line keeps the line's own indentation after its `-`/`+`.
            for sign in ['-', '+'] {
                alts.extend(norm_line(&format!("{sign}{text}")));
            }
        }
        lines.push(Expect { kind, alts });
    }
    r.lines.extend(lines);
}

pub fn read(cx: &Ctx, files: &[PathBuf]) -> Vec<Raw> {
    let mut out = Vec::new();
    let mut taken = HashSet::new();
    for f in files {
        let bytes = cx.bytes(f);
        let text = String::from_utf8_lossy(&bytes);
        let project = f
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let lines: Vec<&str> = text.split('\n').collect();
        // Session starts: line indices of headings (the first session from line 0).
        let mut sessions: Vec<(String, Vec<&str>)> = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if let Some(when) = l.strip_prefix(HEADING) {
                let when = when.trim().replacen(' ', "T", 1).replace(':', "-");
                let mut id = format!("{project}-{when}");
                let mut n = 2;
                while !taken.insert(id.clone()) {
                    id = format!("{project}-{when}~{n}");
                    n += 1;
                }
                if sessions.is_empty() {
                    sessions.push((id, lines[..i].to_vec()));
                } else {
                    sessions.push((id, Vec::new()));
                }
            } else if let Some((_, body)) = sessions.last_mut() {
                body.push(l);
            }
        }
        for (id, body) in sessions {
            let mut r = Raw::new(
                "aider",
                id.clone(),
                f.clone(),
                Match::Id {
                    id,
                    source: Some(f.clone()),
                },
            );
            let (mut input, mut output) = (0, 0);
            let mut in_block = false;
            for (i, l) in body.iter().enumerate() {
                let l = l.strip_suffix('\r').unwrap_or(l);
                let t = l.trim();
                if marker(t, "<SEARCH") {
                    in_block = true;
                    continue;
                }
                if marker(t, "=") && in_block {
                    continue;
                }
                if marker(t, ">REPLACE") {
                    in_block = false;
                    continue;
                }
                let next_search =
                    (1..=2).any(|k| body.get(i + k).is_some_and(|n| marker(n.trim(), "<SEARCH")));
                let after_replace = i > 0 && marker(body[i - 1].trim(), ">REPLACE");
                if !in_block
                    && ((next_search && !t.starts_with("> "))
                        || (after_replace && t.starts_with("```")))
                {
                    continue;
                }
                if ["<think>", "</think>"].contains(&t)
                    || t.starts_with("<thinking-content-")
                    || t.starts_with("</thinking-content-")
                {
                    continue;
                }
                if let Some(p) = l.strip_prefix("#### ") {
                    add(&mut r, Kind::Prompt, p, false);
                } else if let Some(o) = l.strip_prefix("> ") {
                    if let Some(rest) = o.strip_prefix("Tokens: ") {
                        for part in rest.split("Cost:").next().unwrap_or("").split(',') {
                            let part = part.trim().trim_end_matches('.');
                            if let Some(n) = part.strip_suffix(" sent") {
                                input += tokens(n);
                            } else if let Some(n) = part.strip_suffix(" cache hit") {
                                input += tokens(n);
                            } else if let Some(n) = part.strip_suffix(" received") {
                                output += tokens(n);
                            }
                        }
                    }
                    add(&mut r, Kind::ToolOutput, o, in_block);
                } else {
                    add(&mut r, Kind::Reply, l, in_block);
                }
            }
            r.tokens = Some(Tokens {
                input: Some(input),
                output,
            });
            out.push(r);
        }
    }
    out
}
