//! A session whose requests all failed (or that has no answer yet) still names the model it
//! was set to use in `meta.json`, for every agent that records that model apart from its
//! replies. Each store is written here by hand the way its agent writes it; the expected
//! model is the one the writer put in the settings, never read back through sessfs.

mod common;

use common::stores::{self, meta, put};
use common::Home;
use rusqlite::Connection;
use serde_json::json;

const CRUSH_DDL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/schema/crush-20260127000000.sql"
));

fn jsonl(v: &[serde_json::Value]) -> String {
    v.iter().map(|x| format!("{x}\n")).collect()
}

#[test]
fn a_session_without_an_answer_names_the_model_it_was_set_to() {
    let home = Home::empty();
    let h = home.path();

    // Codex: the model is in each turn's context; the request failed before any reply.
    let codex = "019d0000-0000-7000-8000-00000000c0de";
    put(
        h,
        &format!(".codex/sessions/2026/04/19/rollout-2026-04-19T21-55-01-{codex}.jsonl"),
        jsonl(&[
            json!({"timestamp": "2026-04-20T03:55:01.000Z", "type": "session_meta",
                   "payload": {"id": codex, "timestamp": "2026-04-20T03:55:01.000Z",
                               "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.121.0"}}),
            json!({"timestamp": "2026-04-20T03:55:02.000Z", "type": "turn_context",
                   "payload": {"cwd": "/w", "model": "mistral:7b-instruct"}}),
            json!({"timestamp": "2026-04-20T03:55:03.000Z", "type": "event_msg",
                   "payload": {"type": "user_message", "message": "Good evening"}}),
            json!({"timestamp": "2026-04-20T03:55:04.000Z", "type": "event_msg",
                   "payload": {"type": "error", "message": "model does not support tools"}}),
        ]),
    );

    // Copilot CLI: selected at the start, changed once, then every request failed.
    let copilot = "3f000000-0000-4000-8000-00000000c0de";
    put(
        h,
        &format!(".copilot/session-state/{copilot}/events.jsonl"),
        jsonl(&[
            json!({"type": "session.start", "id": "e0", "parentId": null,
                   "timestamp": "2026-03-29T22:35:31.000Z",
                   "data": {"sessionId": copilot, "version": 1, "selectedModel": "gpt-5.1-codex-mini",
                            "startTime": "2026-03-29T22:35:31.000Z"}}),
            json!({"type": "session.model_change", "id": "e1", "parentId": "e0",
                   "timestamp": "2026-03-29T22:35:32.000Z",
                   "data": {"previousModel": "gpt-5.1-codex-mini", "newModel": "claude-haiku-4.5"}}),
            json!({"type": "user.message", "id": "e2", "parentId": "e1",
                   "timestamp": "2026-03-29T22:35:33.000Z", "data": {"content": "hello?"}}),
            json!({"type": "session.error", "id": "e3", "parentId": "e2",
                   "timestamp": "2026-03-29T22:35:34.000Z",
                   "data": {"errorType": "quota", "message": "quota exceeded"}}),
        ]),
    );

    // Crush: the reply row names its model but holds only the error that ended the turn.
    let crush = "87000000-0000-4000-8000-00000000c0de";
    let project = h.join("work/p");
    put(
        h,
        ".local/share/crush/projects.json",
        json!({"projects": [{"path": project.to_string_lossy(),
                             "data_dir": project.join(".crush").to_string_lossy(),
                             "last_accessed": "2026-01-01T10:00:00Z"}]})
        .to_string(),
    );
    std::fs::create_dir_all(project.join(".crush")).expect("mkdir");
    let c = Connection::open(project.join(".crush/crush.db")).expect("open");
    c.execute_batch(CRUSH_DDL).expect("ddl");
    let t = 1_754_564_000;
    c.execute(
        "INSERT INTO sessions (id, title, updated_at, created_at) VALUES (?1, 'New Session', ?2, ?2)",
        rusqlite::params![crush, t],
    )
    .expect("session");
    let parts = |v: serde_json::Value| v.to_string();
    c.execute(
        "INSERT INTO messages (id, session_id, role, parts, model, provider, created_at, updated_at) \
         VALUES ('m1', ?1, 'user', ?2, NULL, NULL, ?3, ?3), \
                ('m2', ?1, 'assistant', ?4, 'claude-opus-4-1-20250805', 'anthropic', ?5, ?5)",
        rusqlite::params![
            crush,
            parts(json!([{"type": "text", "data": {"text": "analyze this"}}])),
            t,
            parts(json!([{"type": "finish", "data": {"reason": "error", "time": t + 1,
                                                     "message": "API Error", "details": "credit balance too low"}}])),
            t + 1
        ],
    )
    .expect("messages");
    drop(c);

    // Factory Droid: the model is in the settings file beside a session with no reply.
    let droid = "1e000000-0000-4000-8000-00000000c0de";
    let dir = ".factory/sessions/-home-dev-p";
    put(
        h,
        &format!("{dir}/{droid}.jsonl"),
        jsonl(&[
            json!({"type": "session_start", "id": droid, "title": "t", "sessionTitle": "t",
                   "owner": "dev", "version": 2, "cwd": "/home/dev/p"}),
            json!({"type": "message", "id": "u1", "parentId": null,
                   "timestamp": "2026-05-01T10:00:00.000Z",
                   "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}),
        ]),
    );
    put(
        h,
        &format!("{dir}/{droid}.settings.json"),
        json!({"model": "claude-opus-4-7", "reasoningEffort": "high"}).to_string(),
    );

    let r = stores::render(&home, "sessfs-set-model", &[]);
    for (dir, model) in [
        (format!("codex/{codex}"), "mistral:7b-instruct"),
        (format!("copilot/{copilot}"), "claude-haiku-4.5"),
        (format!("crush/{crush}"), "claude-opus-4-1-20250805"),
        (format!("droid/{droid}"), "claude-opus-4-7"),
    ] {
        let m = meta(&r.tree, &dir);
        assert_eq!(m["model"], model, "{dir}: {m:#}");
        assert_eq!(m["models"], json!([model]), "{dir}");
        // Nothing was used, so nothing is estimated.
        assert_eq!(m["cost"]["totalUsd"], 0.0, "{dir}");
        assert_eq!(m["cost"]["estimated"], false, "{dir}");
    }
}
