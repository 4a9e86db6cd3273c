//! Claude Code stores for integration tests: copies of the real fixtures laid out the way
//! Claude Code lays out `~/.claude/projects/`, plus the hand-written samples.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

const REAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/real/claude");
const SAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/home/.claude");

/// The project directory of the real spotter tree (main file + `subagents/`).
pub const SPOTTER_PROJECT: &str = "-home-marco-projects-spotter-worktrees-spotter-gqc";
/// The session id of the real spotter tree.
pub const SPOTTER_ID: &str = "258c7280-ae70-4798-800f-63464d01a85d";
/// The session id of the hand-written sample in `fixtures/home/.claude`.
pub const SAMPLE_ID: &str = "7f3c2a1e-5b4d-4c6e-9a8b-0d1e2f3a4b5c";

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
/// - each top-level real fixture as `-tmp-sessfs-fixtures/<its name>.jsonl` (session id =
///   the fixture's file stem, e.g. `claude-code-log_dag_compact_after_rewind`);
/// - `spotter/{short,tool_heavy,subagent}.jsonl` under `-home-USER-projects-spotter/`;
/// - the real spotter tree intact (session [`SPOTTER_ID`] with two nested subagents);
/// - the hand-written samples of `fixtures/home/.claude` (session [`SAMPLE_ID`]).
pub fn write_stores(home: &Path) -> Vec<String> {
    let projects = home.join(".claude/projects");
    let mut out = Vec::new();
    let real = Path::new(REAL);
    let mut top: Vec<PathBuf> = std::fs::read_dir(real)
        .expect("read real fixtures")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    top.sort();
    for f in top {
        let name = f.file_name().expect("fixture name");
        copy_file(
            &f,
            &projects.join("-tmp-sessfs-fixtures").join(name),
            &mut out,
        );
    }
    for name in ["short.jsonl", "tool_heavy.jsonl", "subagent.jsonl"] {
        copy_file(
            &real.join("spotter").join(name),
            &projects.join("-home-USER-projects-spotter").join(name),
            &mut out,
        );
    }
    copy_tree(
        &real.join("spotter").join(SPOTTER_PROJECT),
        &projects.join(SPOTTER_PROJECT),
        &mut out,
    );
    copy_tree(Path::new(SAMPLES), &home.join(".claude"), &mut out);
    out
}
