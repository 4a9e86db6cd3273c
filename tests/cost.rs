//! `sessfs cost`, checked against a recomputation from the raw native files that shares no
//! code with sessfs' parsers.

mod common;

use common::{stderr, stdout, Home};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Token totals `[input, output, cache read, cache write]` per model.
type PerModel = BTreeMap<String, [u64; 4]>;

fn jsonl_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            jsonl_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

/// Claude Code's usage straight from its JSONL files: every assistant line repeats its API
/// reply's `message.usage` (streamed replies are split over several lines), and a resumed
/// session copies earlier replies into its own file, so each reply, identified by
/// `message.id` and `requestId`, is counted once, with the usage of its last line.
fn claude_usage_from_raw_files(projects: &Path) -> PerModel {
    let mut files = Vec::new();
    jsonl_files(projects, &mut files);
    files.sort();
    let mut replies: BTreeMap<(String, String), (String, [u64; 4])> = BTreeMap::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read");
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue; // a half-written last line
            };
            if v["type"] != "assistant" {
                continue;
            }
            let msg = &v["message"];
            let (Some(id), Some(usage)) = (msg["id"].as_str(), msg["usage"].as_object()) else {
                continue;
            };
            let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
            let model = msg["model"].as_str().unwrap_or("unknown").to_string();
            let request = v["requestId"].as_str().unwrap_or("").to_string();
            replies.insert(
                (id.to_string(), request),
                (
                    model,
                    [
                        n("input_tokens"),
                        n("output_tokens"),
                        n("cache_read_input_tokens"),
                        n("cache_creation_input_tokens"),
                    ],
                ),
            );
        }
    }
    let mut out = PerModel::new();
    for (model, t) in replies.into_values() {
        let e = out.entry(model).or_default();
        for i in 0..4 {
            e[i] += t[i];
        }
    }
    out.retain(|_, t| t.iter().any(|&n| n > 0));
    out
}

fn cost_json(home: &Home, args: &[&str]) -> Value {
    let mut all = vec!["cost", "--json"];
    all.extend_from_slice(args);
    let out = home.sessfs(&all);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

#[test]
fn per_model_tokens_match_the_raw_claude_files() {
    let home = Home::spine();
    let want = claude_usage_from_raw_files(&home.path().join(".claude/projects"));
    assert!(want.len() >= 4, "the fixtures use several models: {want:?}");
    let report = cost_json(&home, &["--agent", "claude", "--group-by", "model"]);
    let mut got = PerModel::new();
    for g in report["groups"].as_array().expect("groups") {
        let n = |k: &str| g[k].as_u64().expect(k);
        let t = [
            n("inputTokens"),
            n("outputTokens"),
            n("cacheReadTokens"),
            n("cacheWriteTokens"),
        ];
        if t.iter().any(|&x| x > 0) {
            got.insert(g["key"].as_str().expect("key").to_string(), t);
        }
    }
    assert_eq!(got, want);
    // The total is the sum of the groups, and every Claude model here has a price.
    let total = &report["total"];
    let sum: u64 = want.values().map(|t| t[0]).sum();
    assert_eq!(total["inputTokens"].as_u64(), Some(sum));
    assert!(total["usd"].as_f64().expect("priced") > 0.0);
    assert_eq!(total["estimated"], true, "Claude Code records no cost");
    assert_eq!(report["pricesDate"].as_str().map(str::len), Some(10));
}

#[test]
fn groups_add_up_and_unpriced_models_are_never_zero_dollars() {
    let home = Home::spine();
    let by_agent = cost_json(&home, &["--group-by", "agent"]);
    let by_day = cost_json(&home, &["--group-by", "day"]);
    assert_eq!(by_agent["total"], {
        let mut t = by_day["total"].clone();
        t["key"] = "total".into();
        t
    });
    for report in [&by_agent, &by_day] {
        let sum: u64 = report["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["outputTokens"].as_u64().unwrap())
            .sum();
        assert_eq!(Some(sum), report["total"]["outputTokens"].as_u64());
    }
    // A price table without the fixtures' models: nothing is priced, nothing is $0.
    let prices = home.path().join("prices.json");
    std::fs::write(
        &prices,
        r#"{"date": "2020-01-01", "models": {"claude-sonnet-4": {"input": 1, "output": 1}}}"#,
    )
    .unwrap();
    let r = cost_json(
        &home,
        &[
            "--agent",
            "claude",
            "--prices",
            prices.to_str().unwrap(),
            "--model",
            "opus",
        ],
    );
    assert_eq!(r["pricesDate"], "2020-01-01");
    // Built-in prices stay under the file's: opus models keep theirs.
    assert!(r["total"]["usd"].as_f64().unwrap() > 0.0);
    let text = stdout(&home.sessfs(&["cost", "--group-by", "model"]));
    assert!(text.starts_with("MODEL"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("TOTAL")), "{text}");

    // A model no table knows: its tokens count, its cost is "unpriced", never $0.
    let home = Home::empty();
    let dir = home.path().join(".claude/projects/-tmp-acme");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("11111111-2222-4333-8444-555555555555.jsonl"),
        concat!(
            r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"11111111-2222-4333-8444-555555555555","timestamp":"2026-03-01T10:00:00Z","cwd":"/tmp/acme","message":{"role":"user","content":"hi"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"11111111-2222-4333-8444-555555555555","timestamp":"2026-03-01T10:00:01Z","requestId":"r1","message":{"id":"m1","role":"assistant","model":"acme-9000","content":[{"type":"text","text":"hello"}],"usage":{"input_tokens":100,"output_tokens":10}}}"#,
            "\n"
        ),
    )
    .unwrap();
    let r = cost_json(&home, &[]);
    assert_eq!(r["total"]["inputTokens"], 100);
    assert_eq!(r["total"]["usd"], Value::Null, "{r}");
    assert_eq!(
        r["total"]["unpricedModels"],
        serde_json::json!(["acme-9000"])
    );
    let text = stdout(&home.sessfs(&["cost"]));
    assert!(!text.contains("$0.00"), "{text}");
    assert!(text.contains("unpriced"), "{text}");
    let meta = stdout(&home.sessfs(&[
        "show",
        "claude:11111111-2222-4333-8444-555555555555",
        "--format",
        "json",
    ]));
    let meta: Value = serde_json::from_str(&meta).unwrap();
    assert_eq!(
        meta["cost"]["totalUsd"],
        Value::Null,
        "meta.json: null, not 0"
    );
    let list = stdout(&home.sessfs(&["list"]));
    assert!(list.contains(" unpriced "), "sessfs list: {list}");
}

/// An agent that keeps no usage (a Cursor agent transcript holds text only) spent an unknown
/// amount, not $0: `meta.json` says `totalUsd: null`, `usageRecorded: false`; `sessfs cost`
/// counts its replies apart as "not recorded" and `list` says "no usage". A session that
/// holds no reply yet spent nothing, and says $0.
#[test]
fn replies_whose_agent_records_no_usage_cost_unknown_not_zero() {
    let home = Home::empty();
    let t = home
        .path()
        .join(".cursor/projects/home-dev-acme/agent-transcripts");
    std::fs::create_dir_all(&t).unwrap();
    let cursor_id = "0a1b2c3d-0000-4000-8000-000000000001";
    // Two replies, written by hand.
    std::fs::write(
        t.join(format!("{cursor_id}.txt")),
        "user:\nrename the flag\n\nassistant:\nRenamed it.\n\nuser:\nand the docs\n\nassistant:\nDone.\n",
    )
    .unwrap();
    let dir = home.path().join(".claude/projects/-tmp-acme");
    std::fs::create_dir_all(&dir).unwrap();
    let priced = "11111111-2222-4333-8444-555555555555";
    let unanswered = "11111111-2222-4333-8444-666666666666";
    std::fs::write(
        dir.join(format!("{priced}.jsonl")),
        concat!(
            r#"{"type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-03-01T10:00:00Z","cwd":"/tmp/acme","message":{"role":"user","content":"hi"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2026-03-01T10:00:01Z","requestId":"r1","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"hello"}],"usage":{"input_tokens":1000,"output_tokens":100}}}"#,
            "\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join(format!("{unanswered}.jsonl")),
        concat!(
            r#"{"type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-03-01T11:00:00Z","cwd":"/tmp/acme","message":{"role":"user","content":"are you there?"}}"#,
            "\n"
        ),
    )
    .unwrap();
    let meta = |id: &str| -> Value {
        serde_json::from_str(&stdout(&home.sessfs(&["show", id, "--format", "json"])))
            .expect("meta.json")
    };
    let m = meta(&format!("cursor:{cursor_id}"));
    assert_eq!(m["cost"]["totalUsd"], Value::Null, "{m}");
    assert_eq!(m["cost"]["usageRecorded"], false, "{m}");
    let m = meta(&format!("claude:{priced}"));
    assert!(m["cost"]["totalUsd"].as_f64().expect("priced") > 0.0, "{m}");
    assert_eq!(m["cost"]["usageRecorded"], true, "{m}");
    let m = meta(&format!("claude:{unanswered}"));
    assert_eq!(m["cost"]["totalUsd"], 0.0, "no reply, nothing spent: {m}");
    assert_eq!(m["cost"]["usageRecorded"], true, "{m}");

    let r = cost_json(&home, &["--group-by", "agent"]);
    let group = |key: &str| {
        r["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["key"] == key)
            .unwrap_or_else(|| panic!("no {key} group: {r}"))
            .clone()
    };
    let cursor = group("cursor");
    assert_eq!(cursor["usd"], Value::Null, "{cursor}");
    assert_eq!(cursor["unrecordedReplies"], 2, "{cursor}");
    assert_eq!(cursor["unrecordedSessions"], 1, "{cursor}");
    assert_eq!(cursor["outputTokens"], 0, "{cursor}");
    assert_eq!(group("claude")["unrecordedReplies"], 0);
    assert_eq!(r["total"]["unrecordedReplies"], 2);
    assert!(r["total"]["usd"].as_f64().expect("the priced part") > 0.0);
    let text = stdout(&home.sessfs(&["cost", "--group-by", "agent"]));
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no {key} line: {text}"))
            .to_string()
    };
    assert!(line("cursor").ends_with("  not recorded"), "{text}");
    assert!(!line("cursor").contains('$'), "{text}");
    assert!(line("TOTAL").ends_with(" + not recorded"), "{text}");
    assert!(
        text.contains("not recorded: 2 replies in 1 session whose agent kept no usage"),
        "{text}"
    );
    let list = stdout(&home.sessfs(&["list"]));
    let row = list
        .lines()
        .find(|l| l.starts_with(&format!("cursor:{cursor_id}")))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(row.contains(" no usage "), "{row}");
    assert!(!row.contains('$'), "{row}");
    // Unknown is neither cheap nor dear: last under `--sort cost`, either way.
    let order = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["list", "--json", "--sort", "cost"];
        args.extend_from_slice(extra);
        let v: Value = serde_json::from_str(&stdout(&home.sessfs(&args))).expect("list");
        let ids = v.as_array().expect("list").iter();
        ids.map(|m| m["unifiedId"].as_str().expect("id").to_string())
            .collect()
    };
    let (c, p, u) = (
        format!("cursor:{cursor_id}"),
        format!("claude:{priced}"),
        format!("claude:{unanswered}"),
    );
    assert_eq!(order(&[]), [p.clone(), u.clone(), c.clone()]);
    assert_eq!(order(&["--asc"]), [u, p, c]);
}
