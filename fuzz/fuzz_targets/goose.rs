//! Goose: a `sessions.db` from the DDL in fixtures/schema whose `messages` rows come from
//! the input (split at `0xFF 0xFE`: a role, its `content_json`, its `metadata_json`, then
//! the next role...), and a legacy `<id>.jsonl` file from the last part, so the fuzzer
//! drives both readers while the database stays valid.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::params;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/goose-v13.sql");
const SID: &str = "20260110_1";
const DIR: &str = ".local/share/goose/sessions";

fuzz_target!(|data: &[u8]| {
    clear();
    let chunks = parts(data, 31);
    {
        let c = database(&format!("{DIR}/sessions.db"), DDL);
        let _ = c.execute(
            "INSERT INTO sessions (id, name, working_dir, input_tokens, output_tokens,
             accumulated_input_tokens, accumulated_output_tokens, accumulated_cost,
             model_config_json) VALUES (?1, 'fuzz', '/w', 10, 5, 30, 15, 0.5,
             '{\"model_name\":\"m\"}')",
            params![SID],
        );
        for (i, row) in chunks[..30].chunks(3).enumerate() {
            let role = String::from_utf8_lossy(row[0]);
            let content = row
                .get(1)
                .map(|b| String::from_utf8_lossy(b))
                .unwrap_or_default();
            let meta = row
                .get(2)
                .map(|b| String::from_utf8_lossy(b))
                .unwrap_or_default();
            let _ = c.execute(
                "INSERT INTO messages (message_id, session_id, role, content_json,
                 created_timestamp, metadata_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![format!("msg-{i}"), SID, role, content, i as i64, meta],
            );
        }
    }
    if !chunks[30].is_empty() {
        put(&format!("{DIR}/20250301_101500.jsonl"), chunks[30]);
    }
    load_and_render(&[Agent::Goose]);
});
