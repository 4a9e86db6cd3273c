//! `sessfs export --format parquet`: the tables read back with DuckDB (the `duckdb` Python
//! package, installed by scripts/setup) hold what `sessfs list` and `sessfs cost` show and
//! every text the fixture writer wrote; a re-run rewrites only what moved; a failed export
//! leaves the previous one as it was.

mod common;

use common::{codex, stdout, Home};
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use tempfile::TempDir;

/// Run a DuckDB query over the export in `dir` (`{t}` stands for a table's files, with
/// hive partitions) and return its rows as JSON arrays.
fn duck(dir: &Path, sql: &str, params: &[&str]) -> Vec<Vec<Value>> {
    const SCRIPT: &str = r#"
import json, sys
try:
    import duckdb
except ImportError:
    sys.exit("the duckdb Python package is missing; run scripts/setup")
d, sql, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
for t in ["sessions", "messages", "tool_calls", "usage"]:
    sql = sql.replace("{" + t + "}", f"read_parquet('{d}/{t}/**/*.parquet', hive_partitioning=true)")
rows = duckdb.connect().execute(sql, params).fetchall()
print(json.dumps([list(r) for r in rows], default=str))
"#;
    let out = Command::new("python3")
        .args([
            "-c",
            SCRIPT,
            &dir.to_string_lossy(),
            sql,
            &serde_json::to_string(params).expect("params"),
        ])
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "duckdb: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout(&out)).expect("duckdb rows as JSON")
}

fn export(home: &Home, dir: &Path) -> std::process::Output {
    home.sessfs(&["export", "--format", "parquet", &dir.to_string_lossy()])
}

fn export_ok(home: &Home, dir: &Path) {
    let out = export(home, dir);
    assert!(
        out.status.success(),
        "export failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn json_of(home: &Home, args: &[&str]) -> Value {
    let out = home.sessfs(args);
    assert!(out.status.success(), "sessfs {args:?}");
    serde_json::from_str(&stdout(&out)).expect("json")
}

/// Sessions as `sessfs list --json` lists them, and tokens and USD per agent as `sessfs
/// cost --json --group-by agent` counts them, equal what the export holds.
fn assert_export_agrees_with_list_and_cost(home: &Home, dir: &Path) {
    let listed = json_of(home, &["list", "--json"]);
    let mut want: Vec<String> = listed
        .as_array()
        .expect("list")
        .iter()
        .map(|m| m["unifiedId"].as_str().expect("id").to_string())
        .collect();
    want.sort();
    let got: Vec<String> = duck(dir, "SELECT session FROM {sessions} ORDER BY session", &[])
        .into_iter()
        .map(|r| r[0].as_str().expect("session").to_string())
        .collect();
    assert_eq!(got, want, "sessions");
    assert!(!want.is_empty());

    let cost = json_of(home, &["cost", "--json", "--group-by", "agent"]);
    let rows = duck(
        dir,
        "SELECT agent, sum(input_tokens)::BIGINT, sum(output_tokens)::BIGINT, \
         sum(cache_read_tokens)::BIGINT, sum(cache_write_tokens)::BIGINT, \
         sum(reasoning_tokens)::BIGINT, sum(usd), count(DISTINCT session)::BIGINT \
         FROM {usage} GROUP BY agent",
        &[],
    );
    let got: BTreeMap<String, &Vec<Value>> = rows
        .iter()
        .map(|r| (r[0].as_str().expect("agent").to_string(), r))
        .collect();
    let groups: Vec<&Value> = cost["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter(|g| recorded_any(g))
        .collect();
    assert_eq!(got.len(), groups.len(), "agents with usage");
    for g in groups {
        let key = g["key"].as_str().expect("key");
        let r = got
            .get(key)
            .unwrap_or_else(|| panic!("no usage rows of {key}"));
        for (i, field) in [
            "inputTokens",
            "outputTokens",
            "cacheReadTokens",
            "cacheWriteTokens",
            "reasoningTokens",
        ]
        .iter()
        .enumerate()
        {
            assert_eq!(r[i + 1].as_u64(), g[*field].as_u64(), "{key} {field}");
        }
        match g["usd"].as_f64() {
            Some(usd) => {
                let sum = r[6].as_f64().expect("usd sum");
                assert!((sum - usd).abs() < 1e-6, "{key} usd {sum} vs {usd}");
            }
            // Every record of an unpriced-only group has a NULL usd.
            None => assert!(r[6].is_null(), "{key} usd {:?}", r[6]),
        }
        if g["unrecordedReplies"] == 0 {
            assert_eq!(r[7].as_u64(), g["sessions"].as_u64(), "{key} sessions");
        } else {
            assert!(r[7].as_u64() <= g["sessions"].as_u64(), "{key} sessions");
        }
    }
}

/// Whether a `sessfs cost` group holds usage the agent recorded: one made only of replies
/// whose agent kept no usage (`unrecordedReplies`) has no usage rows in an export.
fn recorded_any(g: &Value) -> bool {
    let none = g["usd"].is_null()
        && g["unpricedModels"].as_array().is_some_and(|m| m.is_empty())
        && g["unrecordedReplies"].as_u64() > Some(0);
    if none {
        assert_eq!(g["inputTokens"], 0, "{g}");
        assert_eq!(g["outputTokens"], 0, "{g}");
    }
    !none
}

#[test]
fn bundled_samples_export_what_list_and_cost_show() {
    let home = Home::empty();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/home");
    let home = Home {
        dir: home.dir,
        files: Vec::new(),
    };
    let run = |args: &[&str]| {
        let mut c = home.command(args);
        c.env("HOME", &samples);
        c.output().expect("run sessfs")
    };
    let out = TempDir::new().expect("tmp");
    let o = run(&[
        "export",
        "--format",
        "parquet",
        &out.path().to_string_lossy(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // list and cost over the same samples (HOME points at them).
    let list: Value = serde_json::from_str(&stdout(&run(&["list", "--json"]))).expect("list");
    let n = list.as_array().expect("list").len();
    let got = duck(out.path(), "SELECT count(*) FROM {sessions}", &[]);
    assert_eq!(got[0][0].as_u64(), Some(n as u64));
    let cost: Value =
        serde_json::from_str(&stdout(&run(&["cost", "--json", "--group-by", "agent"])))
            .expect("cost");
    let sums = duck(
        out.path(),
        "SELECT agent, (sum(input_tokens) + sum(output_tokens) + sum(cache_read_tokens) \
         + sum(cache_write_tokens) + sum(reasoning_tokens))::BIGINT, sum(usd) FROM {usage} \
         GROUP BY agent",
        &[],
    );
    let sums: BTreeMap<&str, (u64, Option<f64>)> = sums
        .iter()
        .map(|r| {
            (
                r[0].as_str().expect("agent"),
                (r[1].as_u64().expect("n"), r[2].as_f64()),
            )
        })
        .collect();
    let groups: Vec<&Value> = cost["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter(|g| recorded_any(g))
        .collect();
    assert_eq!(sums.len(), groups.len());
    for g in groups {
        let key = g["key"].as_str().expect("key");
        let tokens: u64 = [
            "inputTokens",
            "outputTokens",
            "cacheReadTokens",
            "cacheWriteTokens",
            "reasoningTokens",
        ]
        .iter()
        .map(|f| g[*f].as_u64().expect("tokens"))
        .sum();
        let (t, usd) = sums[key];
        assert_eq!(t, tokens, "{key} tokens");
        match (usd, g["usd"].as_f64()) {
            (Some(a), Some(b)) => assert!((a - b).abs() < 1e-6, "{key} usd {a} vs {b}"),
            (a, b) => assert_eq!(a, b, "{key} usd"),
        }
    }
    // Every session's messages are there: as many rows on its active path as meta.json's
    // messageCount (a fork's copied messages are its parent's rows).
    let counts = duck(
        out.path(),
        "SELECT s.session, s.message_count, s.forked_from IS NOT NULL, \
         (SELECT count(*) FROM {messages} m WHERE m.session = s.session AND m.subagent IS NULL \
          AND m.branch IS NULL) FROM {sessions} s",
        &[],
    );
    for r in &counts {
        if r[2] == Value::Bool(false) {
            assert_eq!(r[1], r[3], "messages of {}", r[0]);
        }
    }
}

/// A Claude Code exchange whose reply has the provider ids `msg-<reply>` / `req-<reply>`.
fn claude_exchange(session: &str, tag: &str, reply: &str, at: &str) -> String {
    format!(
        concat!(
            r#"{{"parentUuid":null,"isSidechain":false,"type":"user","sessionId":"{s}","cwd":"/work/shop","uuid":"{t}-u","timestamp":"{at}","message":{{"role":"user","content":"prompt {t}"}}}}"#,
            "\n",
            r#"{{"parentUuid":"{t}-u","isSidechain":false,"type":"assistant","sessionId":"{s}","cwd":"/work/shop","uuid":"{t}-a","timestamp":"{at}","requestId":"req-{r}","message":{{"id":"msg-{r}","role":"assistant","model":"claude-sonnet-4-6","content":[{{"type":"text","text":"reply {r}"}}],"usage":{{"input_tokens":1200,"output_tokens":300,"cache_read_input_tokens":5000,"cache_creation_input_tokens":700}}}}}}"#,
            "\n"
        ),
        s = session,
        t = tag,
        r = reply,
        at = at
    )
}

/// Codex (with a fork and a subagent), pi, omp, indusagi and Claude Code, as the fixture
/// writers lay them out, and a resumed Claude session that replays its first session's
/// reply (the same API reply in two files, which `sessfs cost` counts once).
fn corpus() -> (Home, codex::Written) {
    let mut home = Home::spine();
    let w = codex::write_store(home.path());
    home.files.extend(w.files.iter().cloned());
    let dir = home.path().join(".claude/projects/-work-shop");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let first = "5e55e000-0000-4000-8000-000000000001";
    let resumed = "5e55e000-0000-4000-8000-000000000002";
    let at = "2026-06-01T10:00:00Z";
    std::fs::write(
        dir.join(format!("{first}.jsonl")),
        claude_exchange(first, "a", "one", at),
    )
    .expect("write");
    std::fs::write(
        dir.join(format!("{resumed}.jsonl")),
        claude_exchange(resumed, "b", "one", "2026-06-02T09:00:00Z")
            + &claude_exchange(resumed, "c", "two", "2026-06-02T09:05:00Z"),
    )
    .expect("write");
    (home, w)
}

#[test]
fn generated_corpus_holds_every_written_text_once() {
    let (home, w) = corpus();
    let out = TempDir::new().expect("tmp");
    export_ok(&home, out.path());
    assert_export_agrees_with_list_and_cost(&home, out.path());
    for t in &w.threads {
        // A fork's copied texts are its parent's; a subagent's are its parent's, named.
        for text in &t.texts {
            let rows = duck(
                out.path(),
                "SELECT session, subagent FROM {messages} \
                 WHERE contains(text, ?) OR contains(coalesce(thinking, ''), ?)",
                &[text, text],
            );
            assert_eq!(rows.len(), 1, "'{text}' of {}: {rows:?}", t.id);
            assert_eq!(rows[0][0], format!("codex:{}", t.holder), "'{text}'");
            assert_eq!(
                rows[0][1].is_null(),
                t.subagent_of.is_none(),
                "'{text}' subagent"
            );
        }
        // Each line the writer expects in the session's tools/ files is a call's output
        // or, for an edit shown as a diff, part of its input.
        for output in &t.outputs {
            let rows = duck(
                out.path(),
                "SELECT name FROM {tool_calls} WHERE contains(output, ?) OR contains(input, ?)",
                &[output, output],
            );
            assert!(!rows.is_empty(), "tool output '{output}' of {}", t.id);
        }
    }
    // One machine, named in every table.
    for t in ["sessions", "messages", "tool_calls", "usage"] {
        let ids = duck(
            out.path(),
            &format!("SELECT DISTINCT machine_id FROM {{{t}}}"),
            &[],
        );
        assert_eq!(ids.len(), 1, "{t}");
        assert_eq!(ids[0][0].as_str().map(str::len), Some(16), "{t}");
    }
}

/// Every Parquet file under the export, with its inode and mtime.
fn files(dir: &Path) -> BTreeMap<PathBuf, (u64, i64, i64)> {
    common::files_under(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .map(|p| {
            let m = std::fs::metadata(&p).expect("stat");
            (p, (m.ino(), m.mtime(), m.mtime_nsec()))
        })
        .collect()
}

/// The files whose inode or mtime differ between two listings, and those in one only.
fn changed(
    before: &BTreeMap<PathBuf, (u64, i64, i64)>,
    after: &BTreeMap<PathBuf, (u64, i64, i64)>,
) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = after
        .iter()
        .filter(|(p, v)| before.get(*p) != Some(*v))
        .map(|(p, _)| p.clone())
        .collect();
    out.extend(before.keys().filter(|p| !after.contains_key(*p)).cloned());
    out
}

/// The file of `codex::MAIN`, and one line more for it.
fn main_rollout(w: &codex::Written) -> PathBuf {
    w.files
        .iter()
        .find(|p| p.to_string_lossy().contains(codex::MAIN))
        .expect("main rollout")
        .clone()
}

fn append_prompt(path: &Path, text: &str) {
    use std::io::Write;
    let line = serde_json::json!({
        "timestamp": "2026-04-02T12:30:00.000Z",
        "type": "response_item",
        "payload": {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": text}]},
    });
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open rollout");
    writeln!(f, "{line}").expect("append");
}

#[test]
fn a_second_export_rewrites_only_the_appended_sessions_partitions() {
    let (home, w) = corpus();
    let out = TempDir::new().expect("tmp");
    export_ok(&home, out.path());
    let before = files(out.path());
    assert!(before.len() > 8, "several partitions: {}", before.len());

    // Nothing changed: nothing is written.
    std::thread::sleep(std::time::Duration::from_millis(20));
    export_ok(&home, out.path());
    assert_eq!(
        changed(&before, &files(out.path())),
        Vec::<PathBuf>::new(),
        "an export of unchanged sessions"
    );

    append_prompt(
        &main_rollout(&w),
        "one more line, appended after the export",
    );
    export_ok(&home, out.path());
    let after = files(out.path());
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    let changed: Vec<String> = changed(&before, &after)
        .iter()
        .map(|p| {
            p.strip_prefix(out.path())
                .expect("under")
                .parent()
                .expect("partition")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let part = "agent=codex/month=2026-04";
    assert_eq!(
        changed,
        ["messages", "sessions", "tool_calls", "usage"].map(|t| format!("{t}/{part}")),
    );
    let rows = duck(
        out.path(),
        "SELECT session FROM {messages} WHERE text = 'one more line, appended after the export'",
        &[],
    );
    assert_eq!(
        rows,
        vec![vec![Value::from(format!("codex:{}", codex::MAIN))]]
    );
}

#[test]
fn a_failed_export_leaves_the_previous_files_and_manifest() {
    let (home, w) = corpus();
    let out = TempDir::new().expect("tmp");
    export_ok(&home, out.path());
    let manifest: Vec<PathBuf> = std::fs::read_dir(out.path())
        .expect("ls")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".json"))
        .collect();
    assert_eq!(manifest.len(), 1, "{manifest:?}");
    let manifest_bytes = std::fs::read(&manifest[0]).expect("manifest");
    let before = files(out.path());
    let contents: BTreeMap<PathBuf, Vec<u8>> = before
        .keys()
        .map(|p| (p.clone(), std::fs::read(p).expect("read")))
        .collect();

    // The partition's third file cannot be written: a directory stands at its temporary
    // name (even root cannot create a file there).
    append_prompt(&main_rollout(&w), "a line the failed export never shows");
    let tool_file = before
        .keys()
        .find(|p| {
            p.to_string_lossy()
                .contains("tool_calls/agent=codex/month=2026-04")
        })
        .expect("codex tool_calls file");
    let name = tool_file.file_name().expect("name").to_string_lossy();
    let blocker = tool_file.with_file_name(format!(".{name}.tmp"));
    std::fs::create_dir(&blocker).expect("blocker");

    let o = export(&home, out.path());
    assert!(!o.status.success(), "the export should fail");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot write"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        changed(&before, &files(out.path())),
        Vec::<PathBuf>::new(),
        "files replaced by a failed export"
    );
    for (p, bytes) in &contents {
        assert_eq!(&std::fs::read(p).expect("read"), bytes, "{}", p.display());
    }
    assert_eq!(
        std::fs::read(&manifest[0]).expect("manifest"),
        manifest_bytes
    );
    // No temporary file is left behind (only the blocking directory).
    let stray: Vec<PathBuf> = common::files_under(out.path())
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");

    // Once it can write, the export goes through.
    std::fs::remove_dir(&blocker).expect("rm blocker");
    export_ok(&home, out.path());
    let rows = duck(
        out.path(),
        "SELECT count(*) FROM {messages} WHERE text = 'a line the failed export never shows'",
        &[],
    );
    assert_eq!(rows[0][0].as_u64(), Some(1));
}
