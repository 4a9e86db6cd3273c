//! Hermes' row decoders: a v30 `state.db` from the DDL in fixtures/schema whose `messages`
//! rows (role, content, tool calls) come from the input, split at `0xFF 0xFE` into triples.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::params;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/hermes-v30.sql");
const SID: &str = "20260101_000000_fuzz0001";

fuzz_target!(|data: &[u8]| {
    clear();
    {
        let c = database(".hermes/state.db", DDL);
        let _ = c.execute("INSERT INTO schema_version VALUES (30)", []);
        let _ = c.execute(
            "INSERT INTO sessions (id, source, started_at, model) VALUES (?1, 'cli', 1767225600.0, 'claude-sonnet-4')",
            [SID],
        );
        for t in parts(data, 24).chunks(3) {
            let role = String::from_utf8_lossy(t[0]);
            let content = String::from_utf8_lossy(t.get(1).copied().unwrap_or(&[]));
            let calls = String::from_utf8_lossy(t.get(2).copied().unwrap_or(&[]));
            if role.is_empty() && content.is_empty() && calls.is_empty() {
                continue;
            }
            let calls = (!calls.is_empty()).then_some(calls.into_owned());
            let _ = c.execute(
                "INSERT INTO messages (session_id, role, content, tool_calls, timestamp) VALUES (?1, ?2, ?3, ?4, 1767225601.0)",
                params![SID, role, content, calls],
            );
        }
    }
    load_and_render(&[Agent::Hermes]);
});
