//! Gemini CLI and Copilot CLI stores through a real FUSE mount, checked against the record
//! the fixture writer kept of what it wrote (`common::gemcop`).

mod common;

use common::gemcop::Written;
use common::{stderr, stdout, Home, Mount};
use std::collections::BTreeSet;

fn session_dir(m: &Mount, w: &Written) -> std::path::PathBuf {
    m.path().join(w.agent).join(&w.id)
}

#[test]
fn every_session_shows_with_its_files_and_subagents_are_not_top_level() {
    let (home, written) = Home::gemcop();
    let m = Mount::new(&home, &[]);
    for agent in ["gemini", "copilot"] {
        let listed: BTreeSet<String> = std::fs::read_dir(m.path().join(agent))
            .unwrap_or_else(|e| panic!("{agent}: {e}"))
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let want: BTreeSet<String> = written
            .iter()
            .filter(|w| w.agent == agent)
            .map(|w| w.id.clone())
            .collect();
        assert_eq!(listed, want, "{agent}");
    }
    for w in &written {
        let dir = session_dir(&m, w);
        for f in ["meta.json", "transcript.md", "messages.jsonl"] {
            let md = std::fs::metadata(dir.join(f))
                .unwrap_or_else(|e| panic!("{}/{f}: {e}", dir.display()));
            assert!(md.len() > 0, "{}/{f} is empty", dir.display());
        }
        assert!(dir.join("tools").is_dir(), "{}", dir.display());
        let meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("meta.json")).unwrap())
                .expect("meta.json parses");
        assert_eq!(meta["agent"], w.agent);
        assert_eq!(meta["sessionId"], w.id.as_str());
        let warnings = meta["warnings"].as_array().map_or(0, Vec::len);
        assert_eq!(warnings > 0, w.damaged, "{}: {}", w.id, meta["warnings"]);
    }
}

#[test]
fn every_written_text_is_found_in_exactly_its_session() {
    let (home, written) = Home::gemcop();
    let m = Mount::new(&home, &[]);
    for w in &written {
        let want = BTreeSet::from([format!("{}/{}", w.agent, w.id)]);
        for text in &w.texts {
            assert_eq!(
                m.grep(text, &["gemini", "copilot"]).0,
                want,
                "text '{text}'"
            );
        }
        for out in &w.tool_outputs {
            let (sessions, files) = m.grep(out, &["gemini", "copilot"]);
            assert_eq!(sessions, want, "tool output '{out}'");
            assert!(
                files.iter().any(|f| f.contains("/tools/")),
                "tool output '{out}' is in no tools/ file: {files:?}"
            );
        }
        for text in &w.gone {
            assert_eq!(
                m.grep(text, &["gemini", "copilot"]).0,
                BTreeSet::new(),
                "replaced text '{text}'"
            );
        }
    }
}

#[test]
fn sizes_agree_between_stat_read_and_mmap() {
    let (home, _) = Home::gemcop();
    let m = Mount::new(&home, &[]);
    common::assert_sizes_agree(m.path(), &["gemini", "copilot"], 40);
}

#[test]
fn writes_fail_with_erofs_and_stores_stay_byte_identical() {
    let (home, written) = Home::gemcop();
    let before = home.snapshot();
    assert!(home.files.iter().all(|f| before.contains_key(f)));
    let m = Mount::new(&home, &[]);
    let out = m.sh("grep -r -c . gemini copilot > /dev/null; cat */*/meta.json > /dev/null");
    assert!(out.status.success() || out.status.code() == Some(1));
    for w in written.iter().filter(|w| w.damaged) {
        let dir = session_dir(&m, w);
        for script in [
            format!("echo x > '{}/meta.json'", dir.display()),
            format!("touch '{}/new-file'", dir.display()),
            format!("mkdir '{}/tools/x'", dir.display()),
        ] {
            let out = m.sh(&script);
            assert!(!out.status.success(), "{script} succeeded");
            assert!(
                stderr(&out).contains("Read-only file system"),
                "{script}: {}",
                stderr(&out)
            );
        }
    }
    drop(m);
    assert!(before == home.snapshot(), "a native store changed");
}

#[test]
fn doctor_lists_where_gemini_and_copilot_were_looked_for() {
    let (home, _) = Home::gemcop();
    let out = home.sessfs(&["doctor"]);
    let text = stdout(&out);
    let h = home.path().display().to_string();
    assert!(
        text.contains(&format!("found {h}/.gemini/tmp (default)")),
        "{text}"
    );
    assert!(
        text.contains(&format!("found {h}/.copilot (default)")),
        "{text}"
    );
    let empty = Home::empty();
    let text = stdout(&empty.sessfs(&["doctor"]));
    let h = empty.path().display().to_string();
    assert!(
        text.contains(&format!("{h}/.gemini/tmp (default)")),
        "{text}"
    );
    assert!(
        text.contains(&format!("{h}/.gemini/sessions (spec)")),
        "{text}"
    );
    assert!(text.contains(&format!("{h}/.copilot (default)")), "{text}");
}
