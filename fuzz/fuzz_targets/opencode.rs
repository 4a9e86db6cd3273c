//! OpenCode's row decoders: a database from the DDL in fixtures/schema whose `message.data` and
//! `part.data` JSON come from the input (split at `0xFF 0xFE`: a message, then its parts,
//! then the next message...), so the fuzzer drives what the decoders see while the database
//! stays valid.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::params;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/opencode-2026-08.sql");
const SID: &str = "ses_fuzz0000000000000000000001";

fuzz_target!(|data: &[u8]| {
    clear();
    {
        let c = database(".local/share/opencode/opencode.db", DDL);
        let _ = c.execute(
            "INSERT INTO project (id, worktree, time_created, time_updated, sandboxes) VALUES ('prj', '/w', 1, 1, '[]')",
            [],
        );
        let _ = c.execute(
            "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated)
             VALUES (?1, 'prj', 'slug', '/w', 'fuzz', '1.0.0', 1, 1)",
            [SID],
        );
        let mut mid = String::new();
        for (i, chunk) in parts(data, 24).into_iter().enumerate() {
            if chunk.is_empty() {
                continue;
            }
            let text = String::from_utf8_lossy(chunk);
            if i % 3 == 0 {
                mid = format!("msg_fuzz{i:020}");
                let _ = c.execute(
                    "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
                    params![mid, SID, i as i64, text],
                );
            } else {
                let _ = c.execute(
                    "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                    params![format!("prt_fuzz{i:020}"), mid, SID, i as i64, text],
                );
            }
        }
    }
    load_and_render(&[Agent::Opencode]);
});
