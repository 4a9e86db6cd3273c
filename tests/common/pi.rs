//! Native pi, omp, indusagi and OpenClaw stores for integration tests, in the agents' real
//! layouts: the project's shape fixtures (`fixtures/shapes/`) plus the hand-written sessions
//! in `fixtures/home/`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

const SHAPES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/shapes");
const HOME: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/home");

/// The line the agent was writing when `PARTIAL` was cut: appended to a copy of
/// `pi/branched.jsonl`, which then shares its header id with the original.
pub const PARTIAL: &str = r#"{"type":"message","id":"c3f0000e","parentId":"c3f0000d","timestamp":"2026-02-05T09:00:16.000Z","message":{"role":"user","content":[{"type":"te"#;

/// Lay out the stores under `home` and return every session file written.
///
/// - pi: every `shapes/pi/*.jsonl` in a `--<cwd>--` bucket named from its header, a copy of
///   `branched.jsonl` cut in its last line (same header id, next bucket), plus
///   `fixtures/home/.pi/...` (v3 with a branch, label and title).
/// - omp: the two v1 shape files in a `--<abs>--` and a `-tmp-<rel>` bucket, plus
///   `fixtures/home/.omp/.../-Projects-demo/` (home-relative bucket, 256-byte title slot).
/// - indusagi: the OpenClaw shape transcript (indusagi writes pi v3 verbatim), plus
///   `fixtures/home/.indusagi/...`.
/// - openclaw: the same transcript at `.openclaw/agents/main/sessions/<id>.jsonl`.
pub fn write_stores(home: &Path) -> Vec<String> {
    let mut out = Vec::new();

    let pi = home.join(".pi/agent/sessions");
    for src in jsonl_files(&Path::new(SHAPES).join("pi")) {
        let (bucket, name) = native_name(&src);
        out.push(place(&read(&src), &pi, &format!("--{bucket}--"), &name));
    }
    let branched = Path::new(SHAPES).join("pi/branched.jsonl");
    let (bucket, name) = native_name(&branched);
    let mut cut = read(&branched);
    cut.extend_from_slice(PARTIAL.as_bytes());
    out.push(place(&cut, &pi, &format!("--{bucket}--"), &name));

    let omp = home.join(".omp/agent/sessions");
    for (file, spelling) in [
        ("v1_slash_first.jsonl", Spelling::Absolute),
        ("v1_compaction.jsonl", Spelling::Tmp),
    ] {
        let src = Path::new(SHAPES).join("pi").join(file);
        let (bucket, name) = native_name(&src);
        let bucket = match spelling {
            Spelling::Absolute => format!("--{bucket}--"),
            Spelling::Tmp => format!("-tmp-{}", cwd_base(&src)),
        };
        out.push(place(&read(&src), &omp, &bucket, &name));
    }

    let claw = Path::new(SHAPES).join("openclaw/transcript.jsonl");
    let (bucket, name) = native_name(&claw);
    out.push(place(
        &read(&claw),
        &home.join(".indusagi/agent/sessions"),
        &format!("--{bucket}--"),
        &name,
    ));
    let id = header_id(&claw).unwrap_or_else(|| "openclaw-session".to_owned());
    out.push(place(
        &read(&claw),
        &home.join(".openclaw/agents/main/sessions"),
        "",
        &format!("{id}.jsonl"),
    ));

    copy_tree(Path::new(HOME), home, &mut out);
    out.sort();
    out
}

fn read(src: &Path) -> Vec<u8> {
    std::fs::read(src).expect("read fixture")
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

/// Write `bytes` to `<root>/<bucket>/<name>`; a taken path moves to bucket `<bucket>-2`, ….
fn place(bytes: &[u8], root: &Path, bucket: &str, name: &str) -> String {
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
    std::fs::write(&dst, bytes).expect("write fixture");
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
