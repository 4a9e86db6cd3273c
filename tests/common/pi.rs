//! Native pi, omp, indusagi and OpenClaw stores for integration tests, in the agents' real
//! layouts: real sample sessions from fixtures/real plus the hand-written sessions in
//! `fixtures/home/`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

const REAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/real");
const HOME: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/home");

/// Lay out the stores under `home` and return every session file written.
///
/// - pi: every `pi/*.jsonl` fixture in a `--<cwd>--` bucket named from its header, plus
///   `fixtures/home/.pi/...` (v3 with a branch, label and title).
/// - omp: the two real `omp/*.jsonl` files in a `--<abs>--` and a `-tmp-<rel>` bucket, plus
///   `fixtures/home/.omp/.../-Projects-demo/` (home-relative bucket, 256-byte title slot).
/// - indusagi: the real OpenClaw v3 transcript (indusagi writes pi v3 verbatim), plus
///   `fixtures/home/.indusagi/...`.
/// - openclaw: the same transcript at `.openclaw/agents/main/sessions/<id>.jsonl`.
///
/// Two pi fixtures share a header id (`derived_partial_last_line.jsonl` is cut from
/// `agentlogs_branched.jsonl`); they land in different buckets.
pub fn write_stores(home: &Path) -> Vec<String> {
    let mut out = Vec::new();

    let pi = home.join(".pi/agent/sessions");
    for src in jsonl_files(&Path::new(REAL).join("pi")) {
        let (bucket, name) = native_name(&src);
        out.push(place(&src, &pi, &format!("--{bucket}--"), &name));
    }

    let omp = home.join(".omp/agent/sessions");
    for (file, spelling) in [
        ("large-session.jsonl", Spelling::Absolute),
        ("before-compaction.jsonl", Spelling::Tmp),
    ] {
        let src = Path::new(REAL).join("omp").join(file);
        let (bucket, name) = native_name(&src);
        let bucket = match spelling {
            Spelling::Absolute => format!("--{bucket}--"),
            Spelling::Tmp => format!("-tmp-{}", cwd_base(&src)),
        };
        out.push(place(&src, &omp, &bucket, &name));
    }

    let claw = Path::new(REAL).join("openclaw/real_v3_transcript_8555a0a4_first18lines.jsonl");
    let (bucket, name) = native_name(&claw);
    out.push(place(
        &claw,
        &home.join(".indusagi/agent/sessions"),
        &format!("--{bucket}--"),
        &name,
    ));
    let id = header_id(&claw).unwrap_or_else(|| "openclaw-session".to_owned());
    out.push(place(
        &claw,
        &home.join(".openclaw/agents/main/sessions"),
        "",
        &format!("{id}.jsonl"),
    ));

    copy_tree(Path::new(HOME), home, &mut out);
    out.sort();
    out
}

enum Spelling {
    Absolute,
    Tmp,
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("fixture dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("jsonl"))
        .collect();
    v.sort();
    v
}

fn header(src: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(src).expect("read fixture");
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "session")
        .unwrap_or(serde_json::Value::Null)
}

/// The last component of the header cwd (`pi-mono` for `/Users/x/pi-mono`).
fn cwd_base(src: &Path) -> String {
    let h = header(src);
    let cwd = h["cwd"].as_str().unwrap_or("x");
    cwd.rsplit(['/', '\\']).next().unwrap_or("x").to_owned()
}

fn header_id(src: &Path) -> Option<String> {
    header(src)["id"].as_str().map(str::to_owned)
}

/// `(bucket body, file name)` as the agent would pick them: the header cwd with `/ \ :`
/// turned into `-`, and `<timestamp with : . as ->_<id>.jsonl`.
fn native_name(src: &Path) -> (String, String) {
    let h = header(src);
    let cwd = h["cwd"].as_str().unwrap_or("/unknown");
    let bucket: String = cwd
        .trim_start_matches(['/', '\\'])
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    let ts: String = h["timestamp"]
        .as_str()
        .unwrap_or("2026-01-01T00:00:00.000Z")
        .chars()
        .map(|c| if matches!(c, ':' | '.') { '-' } else { c })
        .collect();
    let id = h["id"].as_str().unwrap_or("no-id");
    (bucket, format!("{ts}_{id}.jsonl"))
}

/// Copy `src` to `<root>/<bucket>/<name>`; a taken path moves to bucket `<bucket>-2`, ….
fn place(src: &Path, root: &Path, bucket: &str, name: &str) -> String {
    let mut dir = root.join(bucket);
    let mut n = 2;
    while dir.join(name).exists() {
        let b = match bucket.strip_suffix("--") {
            Some(body) => format!("{body}-{n}--"),
            None => format!("{bucket}-{n}"),
        };
        dir = root.join(b);
        n += 1;
    }
    std::fs::create_dir_all(&dir).expect("mkdir");
    let dst = dir.join(name);
    std::fs::copy(src, &dst).expect("copy fixture");
    dst.display().to_string()
}

fn copy_tree(src: &Path, dst: &Path, out: &mut Vec<String>) {
    for ent in std::fs::read_dir(src).expect("fixtures/home") {
        let p = ent.expect("dir entry").path();
        let target = dst.join(p.file_name().expect("name"));
        if p.is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_tree(&p, &target, out);
        } else {
            std::fs::copy(&p, &target).expect("copy");
            out.push(target.display().to_string());
        }
    }
}
