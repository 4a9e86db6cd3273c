//! A session's cost with everything it spawned (CONTRACT §5): `meta.json`
//! `costWithSubagents`, `sessfs list` and `--sort cost`, while `sessfs cost` counts each reply
//! once. Expected numbers are the usage the fixture writes below, added by hand.

mod common;

use common::{stdout, Home};
use serde_json::Value;
use std::path::Path;

const PARENT: &str = "0c0570a1-1111-4aaa-8bbb-000000000001";
const LONE: &str = "0c0570a1-2222-4aaa-8bbb-000000000002";

/// One user prompt and one assistant reply with `usage`, as Claude Code writes them.
fn exchange(session: &str, tag: &str, sidechain: bool, input: u64, output: u64) -> String {
    let side = if sidechain {
        r#""isSidechain":true,"agentId":"a0c0570","#
    } else {
        r#""isSidechain":false,"#
    };
    format!(
        concat!(
            r#"{{"parentUuid":null,{side}"type":"user","sessionId":"{s}","cwd":"/work/shop","uuid":"{t}-u","timestamp":"2026-06-01T10:00:00Z","message":{{"role":"user","content":"prompt {t}"}}}}"#,
            "\n",
            r#"{{"parentUuid":"{t}-u",{side}"type":"assistant","sessionId":"{s}","cwd":"/work/shop","uuid":"{t}-a","timestamp":"2026-06-01T10:00:05Z","requestId":"req-{t}","message":{{"id":"msg-{t}","role":"assistant","model":"claude-sonnet-4-6","content":[{{"type":"text","text":"reply {t}"}}],"usage":{{"input_tokens":{i},"output_tokens":{o},"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}}}}"#,
            "\n"
        ),
        side = side,
        s = session,
        t = tag,
        i = input,
        o = output
    )
}

/// PARENT spends 1,000 in / 100 out itself and its subagent 200,000 in / 20,000 out; LONE
/// spends 50,000 in / 5,000 out and spawns nothing. By its own replies PARENT is the
/// cheaper session, with its subagent the dearer one.
fn write(home: &Path) {
    let dir = home.join(".claude/projects/-work-shop");
    std::fs::create_dir_all(dir.join(PARENT).join("subagents")).unwrap();
    std::fs::write(
        dir.join(format!("{PARENT}.jsonl")),
        exchange(PARENT, "p", false, 1_000, 100),
    )
    .unwrap();
    std::fs::write(
        dir.join(PARENT).join("subagents/agent-a0c0570.jsonl"),
        exchange(PARENT, "c", true, 200_000, 20_000),
    )
    .unwrap();
    std::fs::write(
        dir.join(format!("{LONE}.jsonl")),
        exchange(LONE, "l", false, 50_000, 5_000),
    )
    .unwrap();
}

fn meta(home: &Home, id: &str) -> Value {
    let out = home.sessfs(&["show", &format!("claude:{id}"), "--format", "json"]);
    assert!(out.status.success(), "{out:?}");
    serde_json::from_str(&stdout(&out)).unwrap()
}

#[test]
fn a_sessions_cost_includes_its_subagents_and_cost_counts_each_reply_once() {
    let home = Home::empty();
    write(home.path());

    let parent = meta(&home, PARENT);
    assert_eq!(parent["cost"]["inputTokens"], 1_000, "own share: {parent}");
    assert_eq!(parent["cost"]["outputTokens"], 100);
    let total = &parent["costWithSubagents"];
    assert_eq!(total["inputTokens"], 201_000, "with subagents: {parent}");
    assert_eq!(total["outputTokens"], 20_100);
    let (own, all) = (
        parent["cost"]["totalUsd"].as_f64().unwrap(),
        total["totalUsd"].as_f64().unwrap(),
    );
    assert!(all > 100.0 * own, "own ${own}, with subagents ${all}");

    let lone = meta(&home, LONE);
    assert_eq!(lone["cost"]["inputTokens"], 50_000);
    assert!(lone.get("costWithSubagents").is_none(), "{lone}");

    // `list --sort cost` ranks by the cost with subagents: PARENT first.
    let out = home.sessfs(&["list", "--sort", "cost", "--json"]);
    let list: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let order: Vec<&str> = list
        .iter()
        .filter_map(|m| m["sessionId"].as_str())
        .collect();
    assert_eq!(order, [PARENT, LONE]);
    // The table shows both: the total under COST, the session's own share under OWN.
    let table = stdout(&home.sessfs(&["list", "--sort", "cost"]));
    let row = table.lines().find(|l| l.contains(PARENT)).unwrap();
    assert!(
        row.contains(&format!("${all:.2}")) && row.contains(&format!("${own:.2}")),
        "{table}"
    );

    // `sessfs cost` counts every reply once: 1,000 + 200,000 + 50,000 input tokens.
    let out = home.sessfs(&["cost", "--json"]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["total"]["inputTokens"], 251_000, "{r}");
    assert_eq!(r["total"]["outputTokens"], 25_100, "{r}");
}
