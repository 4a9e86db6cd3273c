//! The Codex store end to end: a store laid out as Codex lays it out, mounted, read with
//! the real tools, and checked against what the fixture writer recorded.

mod common;

use common::codex::{self, Written};
use common::{stderr, stdout, Home, Mount};
use std::collections::BTreeSet;

fn codex_home() -> (Home, Written) {
    let mut home = Home::empty();
    let w = codex::write_store(home.path());
    home.files.extend(w.files.iter().cloned());
    (home, w)
}

#[test]
fn codex_sessions_mount_with_their_files() {
    let (home, w) = codex_home();
    let m = Mount::new(&home, &[]);
    let listed: BTreeSet<String> = std::fs::read_dir(m.path().join("codex"))
        .expect("codex dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let want: BTreeSet<String> = w
        .threads
        .iter()
        .filter(|t| t.subagent_of.is_none())
        .map(|t| t.id.clone())
        .collect();
    assert_eq!(listed, want, "the subagent is nested, not listed");
    for id in &want {
        let dir = m.path().join("codex").join(id);
        for f in ["meta.json", "transcript.md", "messages.jsonl"] {
            let md = std::fs::metadata(dir.join(f)).unwrap_or_else(|e| panic!("{id}/{f}: {e}"));
            assert!(md.len() > 0, "{id}/{f} is empty");
        }
        assert!(dir.join("tools").is_dir(), "{id}/tools");
        assert_eq!(m.meta(&format!("codex/{id}"))["agent"], "codex");
    }
    // Titles: the newest index line, else the first real prompt.
    assert_eq!(
        m.meta(&format!("codex/{}", codex::MAIN))["title"],
        "Widget forge rename"
    );
    assert_eq!(
        m.meta(&format!("codex/{}", codex::ZST))["title"],
        "Why is the zstd rollout still readable after compression"
    );
    // The subagent sits under its parent.
    let sub = m.path().join("codex").join(codex::MAIN).join("subagents");
    let names: Vec<String> = std::fs::read_dir(&sub)
        .expect("subagents dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["Euclid"]);
}

#[test]
fn every_written_text_is_in_exactly_its_session() {
    let (home, w) = codex_home();
    let m = Mount::new(&home, &[]);
    for t in &w.threads {
        for text in &t.texts {
            let mut want = BTreeSet::from([format!("codex/{}", t.holder)]);
            for other in &w.threads {
                if other.inherited.contains(text) {
                    want.insert(format!("codex/{}", other.id));
                }
            }
            assert_eq!(m.sessions_holding(text, &[]), want, "'{text}' of {}", t.id);
        }
        for out in &t.outputs {
            let found = m.sh(&format!(
                "grep -rlF -e '{}' {}/",
                out.replace('\'', r"'\''"),
                t.tools
            ));
            assert!(
                !stdout(&found).is_empty(),
                "tool output '{out}' of {} not under {}/",
                t.id,
                t.tools
            );
        }
    }
    // Each prompt once: not also from the event_msg copy.
    let transcript = std::fs::read_to_string(
        m.path()
            .join("codex")
            .join(codex::MAIN)
            .join("transcript.md"),
    )
    .expect("transcript");
    let prompt = &w.thread(codex::MAIN).texts[0];
    assert_eq!(transcript.matches(prompt.as_str()).count(), 1, "{prompt}");
    // Codex's prompt history is not a transcript.
    assert!(m.sessions_holding("history only", &[]).is_empty());
}

#[test]
fn codex_sizes_agree_between_stat_read_and_mmap() {
    let (home, _) = codex_home();
    let m = Mount::new(&home, &[]);
    common::assert_sizes_agree(m.path(), &["codex"], 20);
}

#[test]
fn writes_fail_and_the_store_stays_byte_identical() {
    let (home, _) = codex_home();
    let before = home.snapshot();
    let m = Mount::new(&home, &[]);
    let out = m.sh("grep -r -c . codex > /dev/null; cat codex/*/meta.json > /dev/null");
    assert!(out.status.success() || out.status.code() == Some(1));
    let out = m.sh(&format!("echo x > codex/{}/meta.json", codex::MAIN));
    assert!(
        stderr(&out).contains("Read-only file system"),
        "{}",
        stderr(&out)
    );
    let out = m.sh(&format!("touch codex/{}/new-file", codex::MAIN));
    assert!(
        stderr(&out).contains("Read-only file system"),
        "{}",
        stderr(&out)
    );
    drop(m);
    let after = home.snapshot();
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    assert!(before == after, "native files changed");
}

#[test]
fn tokens_are_the_last_cumulative_total_and_a_fork_counts_its_prefix_once() {
    let (home, w) = codex_home();
    let m = Mount::new(&home, &[]);
    for t in w.threads.iter().filter(|t| t.subagent_of.is_none()) {
        let (input, cached, output, thinking) = t.tokens.expect("tokens written");
        let c = &m.meta(&format!("codex/{}", t.id))["cost"];
        assert_eq!(
            (
                c["inputTokens"].as_u64(),
                c["cachedTokens"].as_u64(),
                c["outputTokens"].as_u64(),
                c["thinkingTokens"].as_u64()
            ),
            (Some(input), Some(cached), Some(output), Some(thinking)),
            "{}: {c}",
            t.id
        );
    }
    drop(m);
    // `sessfs list --json`: the fork's cost is only what the fork added, priced as the
    // parent's model (gpt-5.1-codex: 1.25 / 10 / 0.125 per million).
    let out = home.sessfs(&["list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let all: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("list --json");
    let cost_of = |id: &str| {
        all.iter()
            .find(|s| s["unifiedId"] == format!("codex:{id}"))
            .unwrap_or_else(|| panic!("{id} not in list --json"))["cost"]
            .clone()
    };
    let fork = w.thread(codex::FORK);
    let (i, c, o, r) = fork.tokens.expect("fork tokens");
    assert_eq!(
        (i, c, o, r),
        (400, 9200, 50, 20),
        "the writer's own arithmetic"
    );
    let fc = cost_of(codex::FORK);
    assert_eq!(fc["inputTokens"].as_u64(), Some(i), "{fc}");
    let want = (i as f64 * 1.25 + (o + r) as f64 * 10.0 + c as f64 * 0.125) / 1e6;
    let got = fc["totalUsd"].as_f64().expect("totalUsd");
    assert!((got - want).abs() < 1e-4, "fork cost {got} vs {want}");
    let pc = cost_of(codex::MAIN);
    assert!(
        pc["totalUsd"].as_f64().expect("parent cost") > got * 5.0,
        "parent {pc} vs fork {fc}"
    );
}

/// An agent appending to a thread: the thread shows the new message, and a fork of it,
/// which reads the thread for `parent.diff`, follows too; both within the freshness bound.
#[test]
fn an_append_to_a_thread_shows_in_it_and_in_its_fork() {
    let (home, w) = codex_home();
    let main = w
        .files
        .iter()
        .find(|p| {
            let n = p.file_name().unwrap_or_default().to_string_lossy();
            n.contains(codex::MAIN) && n.ends_with(".jsonl")
        })
        .expect("the main thread's rollout")
        .clone();
    let m = Mount::new(&home, &[]);
    let transcript = m
        .path()
        .join("codex")
        .join(codex::MAIN)
        .join("transcript.md");
    let parent_diff = m.path().join("codex").join(codex::FORK).join("parent.diff");
    // Both read first, so the kernel holds them and only a pushed invalidation updates them.
    let marker = "appended while mounted, only in the parent";
    for file in [&transcript, &parent_diff] {
        let before = std::fs::read_to_string(file).expect("read before");
        assert!(!before.contains(marker));
    }
    let line = serde_json::json!({"timestamp": "2026-03-02T10:00:00.000Z", "type": "response_item",
        "payload": {"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": marker}]}});
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&main)
        .expect("open");
    use std::io::Write;
    writeln!(f, "{line}").expect("append");
    drop(f);
    for (file, what) in [
        (&transcript, "the thread"),
        (&parent_diff, "the fork's parent.diff"),
    ] {
        let start = std::time::Instant::now();
        loop {
            let now = std::fs::read_to_string(file).expect("read");
            if now.contains(marker) {
                assert_eq!(
                    std::fs::metadata(file).expect("stat").len() as usize,
                    now.len()
                );
                break;
            }
            assert!(
                start.elapsed().as_secs() < 3,
                "{what} did not follow the append: {now}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}
