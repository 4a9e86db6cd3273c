//! Branches, forks, subagents and diffs (issue 4), checked on the project's shape fixtures
//! (which reproduce real stores' shapes) laid out in the agents' own store layouts and read
//! through a real FUSE mount or the `sessfs` binary.

mod common;

use common::{shapes, stderr, stdout, Foreground, Home, Mount};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const PI_BUCKET: &str = "--tmp-sessfs-branches--";
const CLAUDE_PROJECT: &str = "-tmp-sessfs-branches";
const TREE_PROJECT: &str = common::claude::TREE_PROJECT;
const TREE_ID: &str = common::claude::TREE_ID;

/// The branched pi fixture: its header id, the entry both branches hang off, the
/// abandoned leaf.
const PI_BRANCHED_ID: &str = "b4a7c3e2-5d1f-4e60-8a90-1c2d3e4f5a6b";
const PI_CRUD_ID: &str = "c7d0e1f2-3a4b-4c5d-8e6f-708192a3b4c5";
const PI_FORK_ID: &str = "f0f0f0f0-1111-4222-8333-444455556666";
/// The Claude rewind fixture placed under a uuid name, and a Claude fork of it.
const CLAUDE_DAG_ID: &str = "c1a0de00-0000-4000-8000-000000000001";
const CLAUDE_FORK_ID: &str = "c1a0de00-0000-4000-8000-000000000002";

// ----- helpers -------------------------------------------------------------------------

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn meta(dir: &Path) -> Value {
    serde_json::from_str(&read(&dir.join("meta.json"))).expect("meta.json parses")
}

fn fixture(rel: &str) -> String {
    read(&shapes().join(rel))
}

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("fixture line parses"))
        .collect()
}

fn to_jsonl(values: &[Value]) -> String {
    values.iter().map(|v| format!("{v}\n")).collect()
}

/// Write a pi session file as pi names it: `sessions/--<cwd>--/<ts>_<id>.jsonl`.
fn put_pi(home: &Path, id: &str, text: &str) -> PathBuf {
    let dir = home.join(".pi/agent/sessions").join(PI_BUCKET);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let p = dir.join(format!("2026-02-03T22-00-00-000Z_{id}.jsonl"));
    std::fs::write(&p, text).expect("write pi session");
    p
}

/// Write a Claude Code session file: `projects/<dashed cwd>/<session id>.jsonl`.
fn put_claude(home: &Path, project: &str, id: &str, text: &str) -> PathBuf {
    let dir = home.join(".claude/projects").join(project);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let p = dir.join(format!("{id}.jsonl"));
    std::fs::write(&p, text).expect("write claude session");
    p
}

fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).expect("mkdir");
        for e in std::fs::read_dir(from).expect("read fixture dir").flatten() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        }
    } else {
        std::fs::copy(from, to).expect("copy fixture");
    }
}

fn put_tree(home: &Path) {
    copy_tree(
        &shapes().join("claude/tree").join(TREE_PROJECT),
        &home.join(".claude/projects").join(TREE_PROJECT),
    );
}

/// Names in a directory, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The `-` and `+` lines of a unified diff, without the `---`/`+++` file lines.
fn changed_lines(diff: &str) -> (Vec<&str>, Vec<&str>) {
    let body = diff
        .lines()
        .filter(|l| !l.starts_with("--- ") && !l.starts_with("+++ "));
    let (mut minus, mut plus) = (Vec::new(), Vec::new());
    for l in body {
        if let Some(r) = l.strip_prefix('-') {
            minus.push(r);
        } else if let Some(a) = l.strip_prefix('+') {
            plus.push(a);
        }
    }
    (minus, plus)
}

/// Apply `diff` to `from` with `patch` and return the result: a unified diff that `patch`
/// accepts and that turns one text into the other is the proof it is what it claims.
fn patched(from: &str, diff: &str) -> String {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (src, out, d) = (
        tmp.path().join("a.md"),
        tmp.path().join("b.md"),
        tmp.path().join("x.diff"),
    );
    std::fs::write(&src, from).expect("write");
    std::fs::write(&d, diff).expect("write");
    let o = Command::new("patch")
        .arg("-s")
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .arg(&d)
        .output()
        .expect("run patch (apt-get install patch)");
    assert!(
        o.status.success(),
        "patch refused the diff: {}{}",
        stdout(&o),
        stderr(&o)
    );
    read(&out)
}

/// Byte offsets of each needle, in the order given; panics on a missing one.
fn positions(text: &str, needles: &[&str]) -> Vec<usize> {
    needles
        .iter()
        .map(|n| {
            text.find(n)
                .unwrap_or_else(|| panic!("{n:?} is missing from:\n{text}"))
        })
        .collect()
}

// ----- 1. pi in-file branches ------------------------------------------------------------

#[test]
fn pi_branch_is_a_directory_with_its_diff() {
    let home = Home::empty();
    put_pi(home.path(), PI_BRANCHED_ID, &fixture("pi/branched.jsonl"));
    let m = Mount::new(&home, &[]);
    let s = m.path().join("pi").join(PI_BRANCHED_ID);

    let active = read(&s.join("transcript.md"));
    assert!(active.contains("\ninstead write a riddle to riddle.txt\n"));
    assert!(!active.contains("now write a second poem"));

    let entries = names(&s.join("branches"));
    assert_eq!(
        entries.len(),
        2,
        "one branch = a directory and its .diff: {entries:?}"
    );
    let name = entries[0].clone();
    assert_eq!(entries[1], format!("{name}.diff"));
    let bdir = s.join("branches").join(&name);
    assert!(bdir.is_dir());
    assert_eq!(names(&bdir), ["messages.jsonl", "transcript.md"]);

    let branch = read(&bdir.join("transcript.md"));
    assert!(branch.contains("\nnow write a second poem to lake.txt\n"));
    assert!(!branch.contains("riddle"));
    // The branch's messages.jsonl holds the whole path, shared prefix included.
    let msgs = read(&bdir.join("messages.jsonl"));
    assert!(msgs.contains("write a short poem about rivers to river.txt"));
    assert!(msgs.contains("now write a second poem to lake.txt"));

    let diff = read(&s.join("branches").join(format!("{name}.diff")));
    assert!(diff.starts_with("# sessfs diff: "), "{diff}");
    assert!(diff.contains("\n--- a/transcript.md\n"));
    assert!(diff.contains(&format!("\n+++ b/branches/{name}/transcript.md\n")));
    let (minus, plus) = changed_lines(&diff);
    for gone in [
        "instead write a riddle to riddle.txt",
        "I run but never walk",
        "I have a bed but never sleep",
    ] {
        assert!(minus.contains(&gone), "{gone:?} not removed in:\n{diff}");
    }
    for added in [
        "now write a second poem to lake.txt",
        "Still glass at noon",
        "A heron counts the reeds",
    ] {
        assert!(plus.contains(&added), "{added:?} not added in:\n{diff}");
    }
    assert!(!plus.iter().any(|l| l.contains("riddle")), "{diff}");
    assert_eq!(patched(&active, &diff), branch);

    let meta = meta(&s);
    let branches = meta["branches"].as_array().expect("branches array");
    assert_eq!(branches.len(), 1, "{branches:?}");
    assert_eq!(branches[0]["name"], name.as_str());
    // Both prompts hang off the first poem's answer.
    assert_eq!(branches[0]["forkPoint"], "c3f00004");
    assert_eq!(branches[0]["leaf"], "c3f00008");
}

// ----- 2. Claude rewinds -----------------------------------------------------------------

#[test]
fn claude_rewind_is_one_branch_and_a_plain_session_has_none() {
    let home = Home::empty();
    put_claude(
        home.path(),
        CLAUDE_PROJECT,
        "rewind_compact",
        &fixture("claude/rewind_compact.jsonl"),
    );
    put_claude(
        home.path(),
        CLAUDE_PROJECT,
        "streamed_parallel",
        &fixture("claude/streamed_parallel.jsonl"),
    );
    let m = Mount::new(&home, &[]);
    let s = m.path().join("claude/rewind_compact");

    let active = read(&s.join("transcript.md"));
    let order = [
        "\nOpen the garden notebook\n",
        "\nNotebook is open\n",
        "\nPlant beans first\n",
        "\nBeans planted\n",
        "\nWater the beds\n",
        "\nBeds watered\n",
        "\nHarvest what is ripe\n",
        "\nHarvest done\n",
    ];
    let at = positions(&active, &order);
    assert!(at.windows(2).all(|w| w[0] < w[1]), "out of order: {at:?}");
    assert!(!active.contains("Plant tomatoes first") && !active.contains("Tomatoes planted"));

    let entries = names(&s.join("branches"));
    assert_eq!(entries.len(), 2, "{entries:?}");
    let name = &entries[0];
    assert_eq!(entries[1], format!("{name}.diff"));
    let branch = read(&s.join("branches").join(name).join("transcript.md"));
    let at = positions(
        &branch,
        &[
            "\nOpen the garden notebook\n",
            "\nNotebook is open\n",
            "\nPlant tomatoes first\n",
            "\nTomatoes planted\n",
        ],
    );
    assert!(at.windows(2).all(|w| w[0] < w[1]));
    assert!(!branch.contains("Plant beans first"));
    let diff = read(&s.join("branches").join(format!("{name}.diff")));
    assert_eq!(patched(&active, &diff), branch);

    let meta = meta(&s);
    assert_eq!(meta["branches"].as_array().map(Vec::len), Some(1));
    assert_eq!(meta["branches"][0]["forkPoint"], "r1");

    let short = m.path().join("claude/streamed_parallel");
    assert!(short.join("transcript.md").is_file());
    assert!(
        !short.join("branches").exists(),
        "a linear session has no branches/"
    );
    assert_eq!(meta_branch_count(&short), 0);
}

fn meta_branch_count(dir: &Path) -> usize {
    meta(dir)["branches"].as_array().map_or(0, Vec::len)
}

// ----- 3. Claude subagents ---------------------------------------------------------------

#[test]
fn tree_subagents_are_nested_directories_named_at_their_call() {
    let home = Home::empty();
    put_tree(home.path());
    let m = Mount::new(&home, &[]);
    let s = m.path().join("claude").join(TREE_ID);
    let parent_uid = format!("claude:{TREE_ID}");

    for name in ["agent-a4f1c9e", "agent-acompact-5d3e21"] {
        let d = s.join("subagents").join(name);
        let ft = std::fs::symlink_metadata(&d)
            .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
            .file_type();
        assert!(
            ft.is_dir() && !ft.is_symlink(),
            "{name} is a nested directory"
        );
        for f in ["meta.json", "transcript.md", "messages.jsonl"] {
            let len = std::fs::metadata(d.join(f)).expect("child file").len();
            assert!(len > 0, "{name}/{f} is empty");
        }
        assert!(d.join("tools").is_dir());
        assert_eq!(meta(&d)["parent"], parent_uid.as_str());
    }
    // The subagent made two calls: WebFetch and Grep.
    assert_eq!(names(&s.join("subagents/agent-a4f1c9e/tools")).len(), 2);

    let meta = meta(&s);
    let subs = meta["subagents"].as_array().expect("subagents");
    let listed: BTreeSet<&str> = subs.iter().filter_map(|x| x["name"].as_str()).collect();
    assert_eq!(
        listed,
        BTreeSet::from(["agent-a4f1c9e", "agent-acompact-5d3e21"])
    );

    // The transcript names the subagent right under the tool call that spawned it.
    let sub = subs
        .iter()
        .find(|x| x["name"] == "agent-a4f1c9e")
        .expect("agent-a4f1c9e");
    let call_id = sub["toolCallId"].as_str().expect("spawning call is known");
    let tools = s.join("tools");
    let call_file = names(&tools)
        .into_iter()
        .find(|f| read(&tools.join(f)).contains(&format!("`{call_id}`")))
        .expect("tool file of the spawning call");
    let transcript = read(&s.join("transcript.md"));
    let call_at = transcript
        .find(&format!(
            "**Tool call:** `Task` · [tools/{call_file}](tools/{call_file})"
        ))
        .expect("the Task call in the transcript");
    let line = "**Subagent:** [subagents/agent-a4f1c9e/](subagents/agent-a4f1c9e/transcript.md)";
    let line_at = transcript.find(line).expect("subagent line");
    assert!(line_at > call_at);
    assert!(
        !transcript[call_at..line_at].contains("\n### "),
        "the subagent line belongs to the call's message"
    );
    assert_eq!(transcript.matches(line).count(), 1);
    // The compaction agent has no spawning call, so no line names it.
    assert!(!transcript.contains("[subagents/agent-acompact-5d3e21/]"));
    // The link resolves from the session directory.
    assert!(s.join("subagents/agent-a4f1c9e/transcript.md").is_file());
}

// ----- 4. sessfs diff --------------------------------------------------------------------

/// The crud fixture with one user message inserted after the first tool result, under a new
/// id: the next entry is re-parented onto the inserted one, as pi itself would chain it.
fn crud_with_one_insert(id: &str) -> String {
    let mut v = json_lines(&fixture("pi/crud.jsonl"));
    v[0]["id"] = json!(id);
    let after = "d1000003";
    let pos = v
        .iter()
        .position(|e| e["id"] == after)
        .expect("entry to insert after");
    for e in v.iter_mut() {
        if e["parentId"] == after {
            e["parentId"] = json!("1a5e7e00");
        }
    }
    v.insert(
        pos + 1,
        json!({"type": "message", "id": "1a5e7e00", "parentId": after,
               "timestamp": "2026-02-05T08:00:05.500Z",
               "message": {"role": "user", "timestamp": 1770278405500u64,
                           "content": [{"type": "text", "text": "sessfs inserted: keep the footer"}]}}),
    );
    to_jsonl(&v)
}

#[test]
fn sessfs_diff_aligns_by_lcs_and_prints_a_unified_diff() {
    let home = Home::empty();
    let other = "b0b0b0b0-1111-4222-8333-444455556666";
    put_pi(home.path(), PI_CRUD_ID, &fixture("pi/crud.jsonl"));
    put_pi(home.path(), other, &crud_with_one_insert(other));
    let (a, b) = (format!("pi:{PI_CRUD_ID}"), format!("pi:{other}"));
    let run = |args: &[&str]| {
        let o = home.sessfs(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };

    let same: Value = serde_json::from_str(&run(&["diff", &a, &a, "--json"])).expect("json");
    let ops = same["operations"].as_array().expect("operations");
    assert!(ops.len() >= 10, "{ops:?}");
    assert!(ops.iter().all(|o| o["type"] == "unchanged"), "{same}");
    assert_eq!(same["stats"]["unchanged"], ops.len());
    for k in ["additions", "removals", "modifications"] {
        assert_eq!(same["stats"][k], 0, "{k}");
    }
    assert_eq!(same["sessionA"], a.as_str());

    let one: Value = serde_json::from_str(&run(&["diff", &a, &b, "--json"])).expect("json");
    let ops = one["operations"].as_array().expect("operations");
    let added: Vec<&Value> = ops.iter().filter(|o| o["type"] == "addition").collect();
    assert_eq!(added.len(), 1, "{one}");
    assert_eq!(added[0]["content"], "sessfs inserted: keep the footer");
    assert_eq!(added[0]["role"], "user");
    // Around the addition, positions pair up straight before it and shifted by one after.
    let at = ops
        .iter()
        .position(|o| o["type"] == "addition")
        .expect("addition");
    assert!(at > 0 && at + 1 < ops.len(), "inserted in the middle");
    for (i, o) in ops.iter().enumerate().filter(|(i, _)| *i != at) {
        let (ia, ib) = (o["indexA"].as_u64(), o["indexB"].as_u64());
        let shift = u64::from(i > at);
        assert_eq!(ia.map(|x| x + shift), ib, "{o}");
    }
    assert_eq!(
        ops.iter().filter(|o| o["type"] == "unchanged").count(),
        ops.len() - 1,
        "everything else is unchanged, not a cascade of modifications: {one}"
    );
    assert_eq!(one["stats"]["additions"], 1);
    assert_eq!(one["stats"]["modifications"], 0);
    assert_eq!(one["stats"]["removals"], 0);

    let text = run(&["diff", &a, &b]);
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .is_some_and(|l| l.starts_with("# sessfs diff: ")),
        "{text}"
    );
    assert!(
        text.contains(&format!("\n--- a/pi/{PI_CRUD_ID}/transcript.md\n")),
        "{text}"
    );
    assert!(
        text.contains(&format!("\n+++ b/pi/{other}/transcript.md\n")),
        "{text}"
    );
    assert!(text.contains("\n@@ -"), "{text}");
    let (_, plus) = changed_lines(&text);
    assert!(plus.contains(&"sessfs inserted: keep the footer"), "{text}");
    let ta = run(&["show", &a]);
    let tb = run(&["show", &b]);
    assert_eq!(patched(&ta, &text), tb);
    // A session against itself: stats only, no hunk.
    let same_text = run(&["diff", &a, &a]);
    assert!(!same_text.contains("\n@@ "), "{same_text}");
}

// ----- 5. one pass over everything ------------------------------------------------------

/// Seed stores (agentuse with nested subagents, agsh and a meka parent/child, ATSF) plus
/// pi (branched, a session and its `/fork`) and Claude (a rewind, a fork of it, the shape
/// tree with its nested subagents).
fn full_home() -> Home {
    let home = Home::seeds();
    let h = home.path();
    put_pi(h, PI_BRANCHED_ID, &fixture("pi/branched.jsonl"));
    let crud = put_pi(h, PI_CRUD_ID, &fixture("pi/crud.jsonl"));

    // pi `/fork`: a new file whose header names the parent file and which copies the
    // parent's entries up to the fork, then goes on with one paid exchange of its own.
    let mut fork: Vec<Value> = json_lines(&fixture("pi/crud.jsonl"))
        .into_iter()
        .take(6)
        .collect();
    fork[0]["id"] = json!(PI_FORK_ID);
    fork[0]["timestamp"] = json!("2026-02-05T08:05:00.000Z");
    fork[0]["parentSession"] = json!(crud.display().to_string());
    let last = fork[5]["id"].clone();
    fork.push(
        json!({"type": "message", "id": "f0000001", "parentId": last,
        "timestamp": "2026-02-05T08:05:01.000Z",
        "message": {"role": "user", "timestamp": 1770278701000u64,
                    "content": [{"type": "text", "text": "fork: keep only the title"}]}}),
    );
    fork.push(json!({"type": "message", "id": "f0000002", "parentId": "f0000001",
        "timestamp": "2026-02-05T08:05:02.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "fork: done"}],
                    "api": "anthropic-messages", "provider": "anthropic", "model": "claude-opus-4-5",
                    "usage": {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0,
                              "totalTokens": 110,
                              "cost": {"input": 0.25, "output": 0.25, "cacheRead": 0,
                                       "cacheWrite": 0, "total": 0.5}},
                    "stopReason": "stop", "timestamp": 1770278702000u64}}));
    put_pi(h, PI_FORK_ID, &to_jsonl(&fork));

    // Claude: the rewind fixture under a session uuid, and a fork of it that copies its
    // first exchange (records carry `forkedFrom`) and adds one of its own.
    let dag = fixture("claude/rewind_compact.jsonl").replace(
        "\"sessionId\":\"rewind-s1\"",
        &format!("\"sessionId\":\"{CLAUDE_DAG_ID}\""),
    );
    put_claude(h, CLAUDE_PROJECT, CLAUDE_DAG_ID, &dag);
    let mut cfork: Vec<Value> = json_lines(&dag).into_iter().take(2).collect();
    let a1 = cfork[1]["uuid"].clone();
    cfork.push(
        json!({"type": "user", "timestamp": "2025-07-02T09:00:00.000Z",
        "parentUuid": a1, "isSidechain": false, "userType": "external", "cwd": "/tmp",
        "sessionId": CLAUDE_FORK_ID, "version": "2.1.0", "uuid": "fu1",
        "message": {"role": "user", "content": [{"type": "text", "text": "Fork prompt"}]}}),
    );
    cfork.push(
        json!({"type": "assistant", "timestamp": "2025-07-02T09:01:00.000Z",
        "parentUuid": "fu1", "isSidechain": false, "userType": "external", "cwd": "/tmp",
        "sessionId": CLAUDE_FORK_ID, "version": "2.1.0", "uuid": "fa1", "requestId": "req_fa1",
        "message": {"id": "msg_fa1", "type": "message", "role": "assistant",
                    "model": "claude-sonnet-4-20250514",
                    "content": [{"type": "text", "text": "Fork answer"}],
                    "stop_reason": "end_turn", "usage": {"input_tokens": 7, "output_tokens": 3}}}),
    );
    for r in &mut cfork {
        r["sessionId"] = json!(CLAUDE_FORK_ID);
        r["forkedFrom"] = json!({"sessionId": CLAUDE_DAG_ID, "messageUuid": a1});
    }
    put_claude(h, CLAUDE_PROJECT, CLAUDE_FORK_ID, &to_jsonl(&cfork));

    put_tree(h);
    home
}

/// Every session directory of the mount as `<agent>/<name>`.
fn session_dirs(mnt: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for agent in names(mnt) {
        for s in names(&mnt.join(&agent)) {
            out.insert(format!("{agent}/{s}"));
        }
    }
    out
}

#[test]
fn grep_and_find_walk_everything_once_and_skip_diff_and_links() {
    let home = full_home();
    let m = Foreground::new(&home);

    // One `grep -r` pass over a fresh mount: reads every file, follows no symlink.
    let grep = m.sh("timeout 300 grep -r -l -F '| Agent |' .");
    assert_eq!(grep.status.code(), Some(0), "{}", stderr(&grep));
    let sessions = session_dirs(m.path());
    for agent in ["pi", "claude", "agentuse", "agsh", "atsf"] {
        assert!(
            sessions.iter().any(|s| s.starts_with(&format!("{agent}/"))),
            "no {agent} sessions: {sessions:?}"
        );
    }
    let renders = m.renders();
    let expected: BTreeMap<String, usize> = sessions.iter().map(|s| (s.clone(), 1)).collect();
    assert_eq!(
        renders, expected,
        "each session rendered exactly once by one grep -r pass"
    );

    let hits = stdout(&grep);
    let hits: Vec<&str> = hits.lines().collect();
    assert!(hits.iter().all(|p| !p.contains("/diff/")), "{hits:?}");
    let meka_child = format!("agsh/{}/transcript.md", common::agsh::MEKA_CHILD);
    assert_eq!(
        hits.iter().filter(|p| p.ends_with(&meka_child)).count(),
        1,
        "the meka child is read once, at its own directory, not through the parent's link"
    );
    assert!(hits.contains(
        &"./claude/5e551f5e-0000-4000-8000-00000000a7a5/subagents/agent-a4f1c9e/transcript.md"
    ));

    // `find` terminates, never lists below diff/ and never descends into a symlink.
    let find = m.sh("timeout 300 find .");
    assert_eq!(find.status.code(), Some(0), "{}", stderr(&find));
    let found = stdout(&find);
    let found: Vec<&str> = found.lines().collect();
    assert!(
        found.iter().all(|p| !p.contains("/diff/")),
        "find went below diff/"
    );
    assert!(
        found.iter().any(|p| p.ends_with("/diff")),
        "diff/ itself is listed"
    );
    let links = m.sh("find . -type l");
    let links = stdout(&links);
    let links: Vec<&str> = links.lines().collect();
    assert!(
        links
            .iter()
            .any(|l| l.starts_with("./agsh/") && l.contains("/subagents/")),
        "the meka child is a symlink under its parent: {links:?}"
    );
    for l in &links {
        let below = format!("{l}/");
        assert!(
            !found.iter().any(|p| p.starts_with(&below)),
            "find descended into the symlink {l}"
        );
    }
    assert_eq!(m.renders(), expected, "find re-rendered nothing");

    // The pi fork: lineage, parent.diff, and cost counted once (in the parent).
    let fork = m.path().join("pi").join(PI_FORK_ID);
    let fmeta = meta(&fork);
    assert_eq!(fmeta["forkedFrom"], format!("pi:{PI_CRUD_ID}"));
    let pdiff = read(&fork.join("parent.diff"));
    assert!(pdiff.starts_with("# sessfs diff: "), "{pdiff}");
    assert!(pdiff.contains(&format!("--- a/pi/{PI_CRUD_ID}/transcript.md")));
    let (_, plus) = changed_lines(&pdiff);
    assert!(plus.contains(&"fork: keep only the title"), "{pdiff}");
    let cost = fmeta["cost"]["totalUsd"].as_f64().expect("cost");
    assert!(
        (cost - 0.5).abs() < 1e-9,
        "fork cost {cost} counts copied messages"
    );
    assert_eq!(fmeta["cost"]["inputTokens"], 100);
    // The parent still counts its own messages, and is no fork.
    let pmeta = meta(&m.path().join("pi").join(PI_CRUD_ID));
    assert!(pmeta["cost"]["totalUsd"].as_f64().unwrap_or(0.0) > 0.05);
    assert!(pmeta["forkedFrom"].is_null());
    assert!(!m
        .path()
        .join("pi")
        .join(PI_CRUD_ID)
        .join("parent.diff")
        .exists());
}

// ----- 6. lineage as unified ids, links that resolve -------------------------------------

#[test]
fn lineage_is_unified_ids_and_child_links_resolve() {
    let home = full_home();
    let m = Mount::new(&home, &[]);
    let mnt = std::fs::canonicalize(m.path()).expect("mount path");
    let sessions = session_dirs(&mnt);
    let is_session = |uid: &str| {
        uid.split_once(':').is_some_and(|(agent, id)| {
            sessions.contains(&format!("{agent}/{}", sessfs::names::escape(id)))
        })
    };

    // Claude fork: forkedFrom on its records becomes a unified id, with parent.diff and
    // the copied exchange not counted again.
    let cf = mnt.join("claude").join(CLAUDE_FORK_ID);
    let cmeta = meta(&cf);
    assert_eq!(cmeta["forkedFrom"], format!("claude:{CLAUDE_DAG_ID}"));
    assert!(cf.join("parent.diff").is_file());
    assert_eq!(cmeta["cost"]["inputTokens"], 7);
    assert_eq!(cmeta["cost"]["outputTokens"], 3);
    let cdiff = read(&cf.join("parent.diff"));
    assert!(changed_lines(&cdiff).1.contains(&"Fork prompt"), "{cdiff}");

    // diff/ lists nothing and renders any session against this one on lookup, across
    // agents, the same text `sessfs diff` prints.
    let crud = mnt.join("pi").join(PI_CRUD_ID);
    assert!(names(&crud.join("diff")).is_empty());
    let looked_up = read(&crud.join("diff/pi").join(format!("{PI_FORK_ID}.diff")));
    let cli = home.sessfs(&[
        "diff",
        &format!("pi:{PI_CRUD_ID}"),
        &format!("pi:{PI_FORK_ID}"),
    ]);
    assert!(cli.status.success(), "{}", stderr(&cli));
    assert_eq!(looked_up, stdout(&cli));
    let across = read(
        &crud
            .join("diff/claude")
            .join(format!("{CLAUDE_DAG_ID}.diff")),
    );
    assert!(across.starts_with("# sessfs diff: "), "{across}");
    assert!(across.contains(&format!("\n+++ b/claude/{CLAUDE_DAG_ID}/transcript.md\n")));

    // Every top-level forkedFrom / parent names a session of the mount by unified id.
    let mut lineage = 0;
    for s in &sessions {
        let meta = meta(&mnt.join(s));
        for k in ["forkedFrom", "parent"] {
            if let Some(uid) = meta[k].as_str() {
                lineage += 1;
                assert!(
                    is_session(uid),
                    "{s}: {k} {uid} is not a session of the mount"
                );
            }
        }
    }
    assert!(lineage >= 3, "pi fork, Claude fork, meka child");

    // meka: the child is its own session, linked from the parent by a relative symlink.
    let parent = mnt.join("agsh").join(common::agsh::MEKA_PARENT);
    let child = mnt.join("agsh").join(common::agsh::MEKA_CHILD);
    assert_eq!(
        meta(&child)["parent"],
        format!("agsh:{}", common::agsh::MEKA_PARENT)
    );
    let mut links = 0;
    for s in &sessions {
        let subs = mnt.join(s).join("subagents");
        if !subs.is_dir() {
            continue;
        }
        for name in names(&subs) {
            let p = subs.join(&name);
            let md = std::fs::symlink_metadata(&p).expect("lstat");
            if !md.file_type().is_symlink() {
                continue;
            }
            links += 1;
            let target = std::fs::read_link(&p).expect("readlink");
            assert!(
                target.is_relative(),
                "{}: {}",
                p.display(),
                target.display()
            );
            let resolved = std::fs::canonicalize(&p).expect("link resolves");
            assert_eq!(
                resolved.parent().and_then(Path::parent),
                Some(mnt.as_path())
            );
            let rel = resolved.strip_prefix(&mnt).expect("inside the mount");
            assert!(
                sessions.contains(&rel.display().to_string()),
                "{}",
                rel.display()
            );
            assert_eq!(meta(&resolved)["parent"], meta(&mnt.join(s))["unifiedId"]);
        }
    }
    assert!(links >= 1);
    let out = m.sh(&format!(
        "readlink -f agsh/{}/subagents/*",
        common::agsh::MEKA_PARENT
    ));
    assert_eq!(stdout(&out).trim(), child.display().to_string());
    assert!(parent.join("subagents").is_dir());

    // Nested children (agentuse, Claude) carry their parent's unified id.
    let mut nested = 0;
    for s in sessions
        .iter()
        .filter(|s| s.starts_with("agentuse/") || s.starts_with("claude/"))
    {
        let subs = mnt.join(s).join("subagents");
        if !subs.is_dir() {
            continue;
        }
        let uid = meta(&mnt.join(s))["unifiedId"].clone();
        for name in names(&subs) {
            let d = subs.join(&name);
            if std::fs::symlink_metadata(&d).is_ok_and(|m| m.is_dir()) {
                nested += 1;
                assert_eq!(meta(&d)["parent"], uid, "{}", d.display());
            }
        }
    }
    assert!(nested >= 3, "agentuse and shape tree children: {nested}");
}
