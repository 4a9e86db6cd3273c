//! Claude Code stores for integration tests: the project's shape fixtures laid out the way
//! Claude Code lays out `~/.claude/projects/`, plus the hand-written samples.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

const SHAPES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/shapes/claude");
const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/home/.claude");

/// The project directory of the shape tree (main file + `subagents/`).
pub const TREE_PROJECT: &str = "-home-dev-projects-atlas";
/// The session id of the shape tree.
pub const TREE_ID: &str = "5e551f5e-0000-4000-8000-00000000a7a5";
/// The session id of the hand-written sample in `fixtures/home/.claude`.
pub const SAMPLE_ID: &str = "7f3c2a1e-5b4d-4c6e-9a8b-0d1e2f3a4b5c";
/// The top-level shape files, each mounted as the session named by its stem.
pub const TOP: &[&str] = &[
    "images",
    "manual_compact",
    "representative",
    "rewind_compact",
    "sidechain",
    "streamed_parallel",
];

fn copy_file(from: &Path, to: &Path, out: &mut Vec<String>) {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).expect("create fixture dir");
    }
    std::fs::copy(from, to).expect("copy fixture");
    out.push(to.display().to_string());
}

fn copy_tree(from: &Path, to: &Path, out: &mut Vec<String>) {
    if from.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(from)
            .expect("read fixture dir")
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for e in entries {
            let name = e.file_name().expect("entry name");
            copy_tree(&e, &to.join(name), out);
        }
    } else {
        copy_file(from, to, out);
    }
}

/// Lay out `home/.claude/projects/<dashed cwd>/...` and return every file written.
///
/// - each top-level shape file as `-tmp-sessfs-fixtures/<its name>.jsonl` (session id =
///   the file stem, e.g. `rewind_compact`);
/// - the shape tree intact (session [`TREE_ID`] with two nested subagents);
/// - a long generated session ([`LONG_ID`], [`long_session`]);
/// - the hand-written samples of `fixtures/home/.claude` (session [`SAMPLE_ID`]).
pub fn write_stores(home: &Path) -> Vec<String> {
    let projects = home.join(".claude/projects");
    let mut out = Vec::new();
    let shapes = Path::new(SHAPES);
    for stem in TOP {
        let name = format!("{stem}.jsonl");
        copy_file(
            &shapes.join(&name),
            &projects.join("-tmp-sessfs-fixtures").join(name),
            &mut out,
        );
    }
    copy_tree(
        &shapes.join("tree").join(TREE_PROJECT),
        &projects.join(TREE_PROJECT),
        &mut out,
    );
    let big = projects
        .join("-home-dev-projects-long")
        .join(format!("{LONG_ID}.jsonl"));
    std::fs::create_dir_all(big.parent().expect("project dir")).expect("mkdir");
    std::fs::write(&big, long_session()).expect("write long session");
    out.push(big.display().to_string());
    copy_tree(Path::new(SAMPLES), &home.join(".claude"), &mut out);
    out
}

/// The session id of [`long_session`].
pub const LONG_ID: &str = "10a90000-0000-4000-8000-00000000b16f";

/// A long Claude Code session (about 3 MB, as long sessions are): 400 rounds of a prompt and
/// a reply streamed over three lines (thinking, text, a Read call) with its result. Round
/// `i`'s prompt is `long session round {i}: …`.
pub fn long_session() -> String {
    let filler = "the quick brown fox jumps over the lazy dog ".repeat(40);
    let mut out = String::new();
    let mut prev = String::from("null");
    for i in 0..400 {
        let ts = format!("2026-02-20T10:{:02}:{:02}.000Z", i / 60 % 60, i % 60);
        let head = format!(
            r#""sessionId":"{LONG_ID}","cwd":"/home/dev/projects/long","version":"2.1.40","timestamp":"{ts}""#
        );
        out.push_str(&format!(r#"{{"type":"user","uuid":"lu{i}","parentUuid":{prev},{head},"message":{{"role":"user","content":"long session round {i}: read part {i}"}}}}"#));
        out.push('\n');
        let usage =
            r#""usage":{"input_tokens":50,"cache_read_input_tokens":4000,"output_tokens":30}"#;
        out.push_str(&format!(r#"{{"type":"assistant","uuid":"lt{i}","parentUuid":"lu{i}",{head},"message":{{"id":"lm{i}","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{{"type":"thinking","thinking":"round {i}: {filler}","signature":"c2ln"}}],{usage}}}}}"#));
        out.push('\n');
        out.push_str(&format!(r#"{{"type":"assistant","uuid":"lx{i}","parentUuid":"lt{i}",{head},"message":{{"id":"lm{i}","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{{"type":"text","text":"Reading part {i} now."}}],{usage}}}}}"#));
        out.push('\n');
        out.push_str(&format!(r#"{{"type":"assistant","uuid":"lc{i}","parentUuid":"lx{i}",{head},"message":{{"id":"lm{i}","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{{"type":"tool_use","id":"toolu_long_{i}","name":"Read","input":{{"file_path":"/home/dev/projects/long/part{i}.txt"}}}}],{usage}}}}}"#));
        out.push('\n');
        out.push_str(&format!(r#"{{"type":"user","uuid":"lr{i}","parentUuid":"lc{i}",{head},"message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_long_{i}","content":"part {i}: {filler}"}}]}}}}"#));
        out.push('\n');
        prev = format!("\"lr{i}\"");
    }
    out
}
