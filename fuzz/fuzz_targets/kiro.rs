//! Kiro CLI / Amazon Q's conversation decoder: a `data.sqlite3` from the DDL in
//! fixtures/schema whose `conversations` values come from the input (split at `0xFF 0xFE`,
//! one row per part), so the fuzzer drives what the decoder sees while the database stays
//! valid.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::params;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/kiro-q-007.sql");

fuzz_target!(|data: &[u8]| {
    clear();
    {
        let c = database(".local/share/kiro-cli/data.sqlite3", DDL);
        for (i, part) in parts(data, 8).into_iter().enumerate() {
            let _ = c.execute(
                "INSERT INTO conversations (key, value) VALUES (?1, ?2)",
                params![format!("/home/fuzz/p{i}"), String::from_utf8_lossy(part)],
            );
        }
    }
    load_and_render(&[Agent::Kiro]);
});
