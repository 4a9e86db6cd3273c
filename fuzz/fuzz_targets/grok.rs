//! Grok CLI's row decoders: a `grok.db` from the DDL in fixtures/schema whose
//! `messages.message_json` come from the input (split at `0xFF 0xFE`), every fifth part a
//! compaction summary, so the fuzzer drives what the decoders see while the database stays
//! valid.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::params;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/grok-v3.sql");
const SID: &str = "f0f0f0f0f0f0";

fuzz_target!(|data: &[u8]| {
    clear();
    {
        let c = database(".grok/grok.db", DDL);
        let _ = c.execute(
            "INSERT INTO sessions (id, workspace_id, title, model, mode, cwd_at_start, cwd_last, status, created_at, updated_at)
             VALUES (?1, 'w', 'fuzz', 'grok-code-fast-1', 'agent', '/', '/', 'active', '1', '1')",
            params![SID],
        );
        let _ = c.execute(
            "INSERT INTO usage_events (session_id, source, model, input_tokens, output_tokens, total_tokens, cost_micros, created_at)
             VALUES (?1, 'message', 'm', 10, 5, 15, 7, '1')",
            params![SID],
        );
        for (i, part) in parts(data, 24).into_iter().enumerate() {
            let body = String::from_utf8_lossy(part);
            let _ = if i % 5 == 4 {
                c.execute(
                    "INSERT INTO compactions (session_id, first_kept_seq, summary, created_at) VALUES (?1, ?2, ?3, '1')",
                    params![SID, i as i64, body],
                )
            } else {
                c.execute(
                    "INSERT INTO messages (session_id, seq, role, message_json, created_at) VALUES (?1, ?2, 'x', ?3, ?4)",
                    params![SID, i as i64, body, i.to_string()],
                )
            };
        }
    }
    load_and_render(&[Agent::Grok]);
});
