use super::*;

const V2: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/hermes-v2.sql"
));
const V30: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/hermes-v30.sql"
));

fn store(home: &Path) -> HermesStore {
    HermesStore::new(vec![Root::new(Agent::Hermes, home, "test")])
}

#[test]
fn v2_and_v30_schemas_read_with_one_code_path() {
    let tmp = tempfile::tempdir().unwrap();
    let prof = tmp.path().join("profiles/work");
    std::fs::create_dir_all(&prof).unwrap();
    for (db, ddl) in [
        (tmp.path().join("state.db"), V2),
        (prof.join("state.db"), V30),
    ] {
        let c = Connection::open(&db).unwrap();
        c.execute_batch(ddl).unwrap();
        c.execute_batch(
            "INSERT INTO sessions (id, source, started_at, input_tokens) VALUES ('s1', 'cli', 1768172351.5, 10);
                 INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s1', 'user', 'hi there', 1768172352.0);
                 INSERT INTO messages (session_id, role, content, tool_calls, timestamp) VALUES ('s1', 'assistant', '',
                   '[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"terminal\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}}]', 1768172353.0);
                 INSERT INTO messages (session_id, role, content, tool_call_id, timestamp) VALUES ('s1', 'tool', 'a.txt', 'c1', 1768172354.0);",
        )
        .unwrap();
    }
    let st = store(tmp.path());
    let listed = st.list();
    assert_eq!(listed.len(), 2);
    for l in &listed {
        let s = st.load(l);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert_eq!(s.messages.len(), 3);
        assert_eq!(s.messages[1].tool_calls[0].input["command"], "ls");
        let r = s.messages[2].tool_result.as_ref().unwrap();
        assert_eq!(
            (r.tool_name.as_str(), r.output.as_str()),
            ("terminal", "a.txt")
        );
        assert_eq!(s.reported_usage.unwrap().input_tokens, 10);
    }
}

#[test]
fn lineage_stitches_continuations_nests_subagents_and_forks_branches() {
    let tmp = tempfile::tempdir().unwrap();
    let c = Connection::open(tmp.path().join("state.db")).unwrap();
    c.execute_batch(V30).unwrap();
    c.execute_batch(
        r#"INSERT INTO sessions (id, source, started_at, end_reason, actual_cost_usd, estimated_cost_usd) VALUES ('a', 'cli', 1, 'compression', 0.25, 9);
               INSERT INTO sessions (id, source, started_at, parent_session_id, end_reason, actual_cost_usd) VALUES ('a2', 'cli', 2, 'a', 'branched', 0.5);
               INSERT INTO sessions (id, source, started_at, parent_session_id, model_config) VALUES ('b', 'cli', 3, 'a2', '{"_branched_from":"a2"}');
               INSERT INTO sessions (id, source, started_at, parent_session_id, estimated_cost_usd) VALUES ('sub', 'subagent', 4, 'a', 0.1);
               INSERT INTO messages (session_id, role, content, timestamp) VALUES ('a', 'user', 'first segment', 1);
               INSERT INTO messages (session_id, role, content, timestamp, active) VALUES ('a', 'assistant', 'rewound answer', 2, 0);
               INSERT INTO messages (session_id, role, content, timestamp) VALUES ('a', 'assistant', 'kept answer', 3);
               INSERT INTO messages (session_id, role, content, timestamp, _compressed_summary) VALUES ('a2', 'user', '[CONTEXT COMPACTION — REFERENCE ONLY] summary', 4, 1);
               INSERT INTO messages (session_id, role, content, timestamp) VALUES ('a2', 'user', 'second segment', 5);
               INSERT INTO messages (session_id, role, content, timestamp) VALUES ('b', 'user', 'forked prompt', 6);
               INSERT INTO messages (session_id, role, content, timestamp) VALUES ('sub', 'user', 'delegated task', 7);"#,
    )
    .unwrap();
    let st = store(tmp.path());
    let mut ids: Vec<String> = st.list().into_iter().map(|l| l.id).collect();
    ids.sort();
    assert_eq!(ids, ["a", "b"]);
    let la = st.list().into_iter().find(|l| l.id == "a").unwrap();
    let a = st.load(&la);
    let texts: Vec<&str> = a.messages.iter().map(|m| m.text()).collect();
    assert_eq!(
        texts,
        [
            "first segment",
            "kept answer",
            "[continued after compression as session a2]",
            "[CONTEXT COMPACTION — REFERENCE ONLY] summary",
            "second segment"
        ]
    );
    assert_eq!(a.messages[3].kind, MessageKind::CompactionSummary);
    assert_eq!(a.branches.len(), 1);
    assert_eq!(a.branches[0].name, "rewound-2");
    assert_eq!(a.branches[0].fork_point.as_deref(), Some("1"));
    assert_eq!(
        a.branches[0].messages.last().unwrap().text(),
        "rewound answer"
    );
    assert_eq!(a.subagents.len(), 1);
    assert_eq!(
        a.subagents[0].session.as_ref().unwrap().messages[0].text(),
        "delegated task"
    );
    // Actual cost wins over estimates and segments add up.
    let cost = a.cost();
    assert_eq!((cost.total_usd, cost.estimated), (0.75, false));
    let lb = st.list().into_iter().find(|l| l.id == "b").unwrap();
    let b = st.load(&lb);
    assert_eq!(b.forked_from.as_deref(), Some("hermes:a"));
    let sub = a.subagents[0].session.as_ref().unwrap();
    assert_eq!((sub.cost().total_usd, sub.cost().estimated), (0.1, true));
    // A row flipped inactive changes the version; a write to another session does not.
    let v = st.versions(&[&la])[0].unwrap();
    c.execute(
        "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('b', 'user', 'x', 8)",
        [],
    )
    .unwrap();
    assert_eq!(st.versions(&[&la])[0], Some(v));
    c.execute(
        "UPDATE messages SET active = 0 WHERE content = 'kept answer'",
        [],
    )
    .unwrap();
    assert_ne!(st.versions(&[&la])[0], Some(v));
}

/// A database that holds fewer of a session's messages than its gateway transcript (an
/// older copy, rows lost) hides nothing: the transcript is listed as `<id>@gateway`,
/// forked from the database's session; one that holds as many lists the session once.
#[test]
fn a_gateway_transcript_longer_than_the_database_is_shown_too() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let id = "20260422_005427_9c1e2a40";
    // The sample holds 8 messages (2 user, 4 assistant, 2 tool) after its session_meta.
    let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/hermes/gateway-20260422_005427_9c1e2a40.jsonl");
    std::fs::copy(&sample, dir.join(format!("{id}.jsonl"))).unwrap();
    let c = Connection::open(tmp.path().join("state.db")).unwrap();
    c.execute_batch(V30).unwrap();
    let rows = |n: usize| {
        c.execute_batch(&format!("INSERT INTO sessions (id, source, started_at) VALUES ('{id}', 'telegram', 1776818067.0);
                 DELETE FROM messages;"))
            .ok();
        for i in 0..n {
            c.execute(
                "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?1, 'user', ?2, 1776818068.0)",
                rusqlite::params![id, format!("row {i}")],
            )
            .unwrap();
        }
    };
    rows(2);
    let st = store(tmp.path());
    let mut ids: Vec<String> = st.list().into_iter().map(|l| l.id).collect();
    ids.sort();
    assert_eq!(ids, [id.to_string(), format!("{id}@gateway")]);
    let l = st
        .list()
        .into_iter()
        .find(|l| l.id.ends_with("@gateway"))
        .unwrap();
    let g = st.load(&l);
    assert_eq!(g.forked_from.as_deref(), Some(&*format!("hermes:{id}")));
    assert_eq!(
        g.messages[0].text(),
        "[Dana] can you chart our build times?"
    );
    assert!(g.warnings.iter().any(|w| w.contains("the database lacks")));

    rows(8);
    let ids: Vec<String> = st.list().into_iter().map(|l| l.id).collect();
    assert_eq!(ids, [id.to_string()]);
}

#[test]
fn gateway_jsonl_reads_when_the_database_lacks_the_session() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    // Hand-written in the gateway mirror's shape (see fixtures/hermes/README.md).
    let sample = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/hermes/gateway-20260422_005427_9c1e2a40.jsonl");
    std::fs::copy(&sample, dir.join("20260422_005427_9c1e2a40.jsonl")).unwrap();
    let st = store(tmp.path());
    let l = st.list();
    assert_eq!(l.len(), 1);
    let s = st.load(&l[0]);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(
        s.messages[0].text(),
        "[Dana] can you chart our build times?"
    );
    let call = &s.messages[1].tool_calls[0];
    assert_eq!(call.tool_name, "skill_view");
    assert_eq!(call.input["name"], "plotting");
    let r = s.messages[2].tool_result.as_ref().unwrap();
    assert!(r.output.contains("\"success\": true"));
    assert!(r.output.contains("\"name\": \"plotting\""));
    assert_eq!(r.tool_name, "skill_view");
    assert!(s.messages[1]
        .thinking
        .as_deref()
        .unwrap()
        .starts_with("**Checking the plotting skill**"));
    assert_eq!(s.messages[1].model.as_deref(), Some("gpt-5.4"));
    assert!(s.messages[3].text().contains("빌드 시간"));
    assert!(s
        .messages
        .iter()
        .any(|m| m.tool_calls.iter().any(|c| c.tool_name == "delegate_task")));
    assert!(s.messages.iter().any(|m| m.text()
        == "They did: the median build grew from 6m10s to 7m40s across the last ten runs."));
}

/// The terminal tool's JSON result shows as its output with real newlines, an exit code or
/// error as a line after it; another tool's JSON, or an object with more keys, as stored.
#[test]
fn tool_results_show_their_text_and_rows_without_text_stay_as_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let c = Connection::open(tmp.path().join("state.db")).unwrap();
    c.execute_batch(V30).unwrap();
    let rows = [
        r#"{"output": "/home/u\n---\ntotal 8", "exit_code": 0, "error": null}"#,
        r#"{"output": "ls: cannot access 'x'", "exit_code": 2, "error": null}"#,
        r#"{"output": "", "exit_code": -1, "error": "Command denied: matches 'rm' pattern."}"#,
        r#"{"output": "Background process started", "session_id": "p1", "pid": 7, "exit_code": 0, "error": null}"#,
        r#"{"success": true, "target": "memory"}"#,
        r#"{"output": "not closed"#,
        "{\"output\": \"AGENTS.md\", \"exit_code\": 0, \"error\": null}\n\n[Subdirectory context discovered: a/AGENTS.md]",
        r#"{"output": "", "exit_code": 1, "error": null, "exit_code_meaning": "No matches found (not an error)"}"#,
        r#"{"output": "removed", "exit_code": 0, "error": null, "approval": "Command required approval (recursive delete) and was approved by the user."}"#,
        r#"{"content": "     1|# Notes\n     2|", "total_lines": 2, "file_size": 8, "truncated": false, "is_binary": false, "is_image": false}"#,
        r#"{"status": "error", "output": "\n--- stderr ---\nSyntaxError", "tool_calls_made": 0, "duration_seconds": 0.1, "error": "exit 1"}"#,
        r#"{"success": true, "diff": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", "files_modified": ["x"]}"#,
        r#"{"status": "timeout", "output": "partial", "tool_calls_made": 1, "duration_seconds": 300}"#,
        r#"{"error": "File not found: y"}"#,
        r#"{"results": [{"task_index": 0, "status": "completed", "summary": "Read 3 files.\n\n## Report", "api_calls": 2}, {"task_index": 1, "status": "failed", "summary": "", "error": "boom"}], "total_duration_seconds": 9.5}"#,
        r#"{"results": [{"task_index": 0, "status": "completed"}], "total_duration_seconds": 1}"#,
    ];
    let mut sql = String::from(
        "INSERT INTO sessions (id, source, started_at) VALUES ('s', 'cli', 1);
         INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s', 'user', 'go', 1);",
    );
    for (i, r) in rows.iter().enumerate() {
        sql.push_str(&format!(
            "INSERT INTO messages (session_id, role, content, tool_call_id, tool_name, timestamp)
             VALUES ('s', 'tool', '{}', 'c{i}', 'terminal', {});",
            r.replace('\'', "''"),
            i + 2
        ));
    }
    c.execute_batch(&sql).unwrap();
    let st = store(tmp.path());
    let s = st.load(&st.list()[0]);
    let got: Vec<(&str, bool)> = s
        .messages
        .iter()
        .filter_map(|m| m.tool_result.as_ref())
        .map(|r| (r.output.as_str(), r.is_error))
        .collect();
    assert_eq!(
        got,
        [
            ("/home/u\n---\ntotal 8", false),
            ("ls: cannot access 'x'\n\n[exit code 2]", true),
            (
                "[exit code -1]\n\n[error: Command denied: matches 'rm' pattern.]",
                true
            ),
            (
                "Background process started\n\n{\"session_id\":\"p1\",\"pid\":7,\"exit_code\":0,\"error\":null}",
                false
            ),
            (rows[4], false),
            (rows[5], false),
            (
                "AGENTS.md\n\n[Subdirectory context discovered: a/AGENTS.md]",
                false
            ),
            ("[exit code 1: No matches found (not an error)]", true),
            (
                "removed\n\n[approval: Command required approval (recursive delete) and was approved by the user.]",
                false
            ),
            (
                "     1|# Notes\n     2|\n\n{\"total_lines\":2,\"file_size\":8,\"truncated\":false,\"is_binary\":false,\"is_image\":false}",
                false
            ),
            (
                "\n--- stderr ---\nSyntaxError\n\n[error: exit 1]\n\n{\"status\":\"error\",\"tool_calls_made\":0,\"duration_seconds\":0.1}",
                true
            ),
            (
                "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n\n{\"success\":true,\"files_modified\":[\"x\"]}",
                false
            ),
            (
                "partial\n\n{\"status\":\"timeout\",\"tool_calls_made\":1,\"duration_seconds\":300}",
                true
            ),
            (rows[13], true),
            (
                "Read 3 files.\n\n## Report\n\n{\"task_index\":0,\"status\":\"completed\",\"api_calls\":2}\n\n{\"task_index\":1,\"status\":\"failed\",\"error\":\"boom\"}\n\n{\"total_duration_seconds\":9.5}",
                true
            ),
            (rows[15], false),
        ]
    );
}

#[test]
fn a_model_stored_as_the_text_null_is_no_model() {
    let tmp = tempfile::tempdir().unwrap();
    let c = Connection::open(tmp.path().join("state.db")).unwrap();
    c.execute_batch(V30).unwrap();
    c.execute_batch(
        "INSERT INTO sessions (id, source, model, started_at) VALUES ('cron_a', 'cron', 'null', 1768172351.5);
         INSERT INTO sessions (id, source, model, started_at) VALUES ('cron_b', 'cron', 'glm-5', 1768172351.5);
         INSERT INTO messages (session_id, role, content, timestamp) VALUES ('cron_a', 'user', 'brief me', 1768172352.0);
         INSERT INTO messages (session_id, role, content, timestamp) VALUES ('cron_a', 'assistant', 'done', 1768172353.0);
         INSERT INTO messages (session_id, role, content, timestamp) VALUES ('cron_b', 'user', 'brief me', 1768172352.0);
         INSERT INTO messages (session_id, role, content, timestamp) VALUES ('cron_b', 'assistant', 'done', 1768172353.0);
         INSERT INTO sessions (id, source, model, started_at) VALUES ('tg_empty', 'telegram', 'glm-5', 1768172351.5);",
    )
    .unwrap();
    let st = store(tmp.path());
    let mut models: Vec<(String, Vec<String>)> = st
        .list()
        .iter()
        .map(|l| {
            let s = st.load(l);
            (s.id.clone(), s.models())
        })
        .collect();
    models.sort();
    assert_eq!(
        models,
        [
            ("cron_a".to_string(), vec![]),
            ("cron_b".to_string(), vec!["glm-5".to_string()]),
            // No message row: the session row's model still names it.
            ("tg_empty".to_string(), vec!["glm-5".to_string()])
        ]
    );
}

/// The system prompt Hermes keeps per session: inline in `sessions.system_prompt` (v2), or
/// content-addressed in `system_prompts` by `system_prompt_hash` (v30). It is the first
/// context of its session, and again where a continuation's prompt differs.
#[test]
fn each_session_shows_its_system_prompt_first() {
    let tmp = tempfile::tempdir().unwrap();
    let prof = tmp.path().join("profiles/old");
    std::fs::create_dir_all(&prof).unwrap();
    let c = Connection::open(tmp.path().join("state.db")).unwrap();
    c.execute_batch(V30).unwrap();
    c.execute_batch(
        "PRAGMA foreign_keys = OFF; -- 'lost' names a prompt the table lacks
         INSERT INTO system_prompts (hash, prompt) VALUES ('h1', 'You are Hermes. Prompt one.');
         INSERT INTO system_prompts (hash, prompt) VALUES ('h2', 'You are Hermes. Prompt two, after compression.');
         INSERT INTO sessions (id, source, started_at, end_reason, system_prompt_hash) VALUES ('p', 'cli', 10, 'compression', 'h1');
         INSERT INTO sessions (id, source, started_at, parent_session_id, end_reason, system_prompt_hash) VALUES ('p2', 'cli', 20, 'p', 'compression', 'h1');
         INSERT INTO sessions (id, source, started_at, parent_session_id, system_prompt_hash) VALUES ('p3', 'cli', 30, 'p2', 'h2');
         INSERT INTO messages (session_id, role, content, timestamp) VALUES ('p', 'user', 'first prompt', 11);
         INSERT INTO messages (session_id, role, content, timestamp) VALUES ('p2', 'user', 'second prompt', 21);
         INSERT INTO messages (session_id, role, content, timestamp) VALUES ('p3', 'user', 'third prompt', 31);
         INSERT INTO sessions (id, source, started_at, system_prompt_hash) VALUES ('lost', 'cli', 40, 'h9');
         INSERT INTO messages (session_id, role, content, timestamp) VALUES ('lost', 'user', 'lost prompt', 41);",
    )
    .unwrap();
    let old = Connection::open(prof.join("state.db")).unwrap();
    old.execute_batch(V2).unwrap();
    old.execute_batch(
        "INSERT INTO sessions (id, source, started_at, system_prompt) VALUES ('v2', 'cli', 5, 'You are Hermes. Inline prompt.');
         INSERT INTO messages (session_id, role, content, timestamp) VALUES ('v2', 'user', 'old prompt', 6);",
    )
    .unwrap();
    let st = store(tmp.path());
    let by_id: HashMap<String, Session> = st
        .list()
        .iter()
        .map(|l| {
            let s = st.load(l);
            (s.id.clone(), s)
        })
        .collect();
    let shown = |id: &str| -> Vec<(Option<String>, String)> {
        by_id[id]
            .messages
            .iter()
            .map(|m| (m.label.clone(), m.content.clone()))
            .filter(|(l, c)| l.is_some() || !c.starts_with('['))
            .collect()
    };
    let sp = |t: &str| (Some("system prompt".to_string()), t.to_string());
    let text = |t: &str| (None, t.to_string());
    assert_eq!(
        shown("p"),
        [
            sp("You are Hermes. Prompt one."),
            text("first prompt"),
            text("second prompt"),
            sp("You are Hermes. Prompt two, after compression."),
            text("third prompt"),
        ]
    );
    assert_eq!(
        shown("v2"),
        [sp("You are Hermes. Inline prompt."), text("old prompt")]
    );
    assert_eq!(shown("lost"), [text("lost prompt")]);
    assert!(
        by_id["lost"].warnings.iter().any(|w| w.contains("h9")),
        "{:?}",
        by_id["lost"].warnings
    );
}
