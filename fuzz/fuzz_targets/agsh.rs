//! agsh's SQLite row decoder: rows of a database from the DDL in fixtures/schema, filled
//! from the input.
//!
//! The input is split at `0xFF 0xFE` into `role, content` pairs, inserted as messages of one
//! session, so the fuzzer drives what the row decoder sees (roles, JSON block arrays, legacy
//! text) while the database itself stays valid.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::{params, Connection};
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/agsh-sessions.sql");
const SID: &str = "0f0f0f0f-0000-4000-8000-000000000006";

fuzz_target!(|data: &[u8]| {
    clear();
    let db = home().join(".local/share/agsh/sessions.db");
    std::fs::create_dir_all(db.parent().expect("parent")).expect("dir");
    {
        let c = Connection::open(&db).expect("db");
        c.execute_batch(DDL).expect("ddl");
        c.execute(
            "INSERT INTO sessions (id, created_at, updated_at) VALUES (?1, '2025-01-01T00:00:00Z', '2025-01-01T00:00:01Z')",
            [SID],
        )
        .expect("session");
        for pair in parts(data, 16).chunks(2) {
            let role = String::from_utf8_lossy(pair[0]);
            let content = String::from_utf8_lossy(pair.get(1).copied().unwrap_or(&[]));
            if role.is_empty() && content.is_empty() {
                continue;
            }
            let _ = c.execute(
                "INSERT INTO messages (session_id, role, content, created_at) VALUES (?1, ?2, ?3, '2025-01-01T00:00:00Z')",
                params![SID, role, content],
            );
        }
    }
    load_and_render(&[Agent::Agsh]);
});
