//! Zed's thread decoder: a `threads.db` from the DDL in fixtures/schema with two rows whose
//! `data` come from the input (split at `0xFF 0xFE`): the first stored as `json`, the second
//! as `zstd` (so arbitrary bytes reach the zstd decoder), the second a child of the first.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::params;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/zed-threads.sql");

fuzz_target!(|data: &[u8]| {
    clear();
    {
        let c = database(".local/share/zed/threads/threads.db", DDL);
        let p = parts(data, 2);
        for (i, (id, parent, kind)) in [
            ("a0000000-0000-4000-8000-000000000001", None, "json"),
            ("a0000000-0000-4000-8000-000000000002", Some("a0000000-0000-4000-8000-000000000001"), "zstd"),
        ]
        .into_iter()
        .enumerate()
        {
            let _ = c.execute(
                "INSERT INTO threads (id, parent_id, summary, updated_at, data_type, data, created_at)
                 VALUES (?1, ?2, 'fuzz', '2026-01-01T00:00:00Z', ?3, ?4, '2026-01-01T00:00:00Z')",
                params![id, parent, kind, p[i]],
            );
        }
    }
    load_and_render(&[Agent::Zed]);
});
