//! ForgeCode's row decoder: a `.forge.db` from the DDL in fixtures/schema whose
//! `conversations.context` come from the input (split at `0xFF 0xFE`), every third part a
//! `metrics` column instead, so the fuzzer drives what the decoder sees while the database
//! stays valid. The first conversation names the others as sub-agents' answers.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::params;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/forge-2026-02-16.sql");

fuzz_target!(|data: &[u8]| {
    clear();
    {
        let c = database(".forge/.forge.db", DDL);
        let mut metrics: Option<String> = None;
        for (i, part) in parts(data, 24).into_iter().enumerate() {
            let body = String::from_utf8_lossy(part).into_owned();
            if i % 3 == 2 {
                metrics = Some(body);
                continue;
            }
            let _ = c.execute(
                "INSERT INTO conversations (conversation_id, title, workspace_id, context, created_at, updated_at, metrics)
                 VALUES (?1, 'fuzz', 1, ?2, '2026-01-01 00:00:00', ?3, ?4)",
                params![format!("c{i}"), body, i.to_string(), metrics.take()],
            );
        }
    }
    load_and_render(&[Agent::Forge]);
});
