//! Void's thread decoder: a VS Code `state.vscdb` from the DDL in fixtures/schema whose
//! `void.chatThreadStorageII` row holds threads that come from the input (split at
//! `0xFF 0xFE`, each part one thread's JSON by id, the last part also tried as the whole
//! value in a second database), so the fuzzer drives both SQLite's `json_each` and the thread
//! decoder while the database stays valid.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::params;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/vscode-state.sql");

fuzz_target!(|data: &[u8]| {
    clear();
    {
        let parts = parts(data, 24);
        let mut threads = String::from("{");
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                threads.push(',');
            }
            threads.push_str(&format!("\"t{i}\":{}", String::from_utf8_lossy(part)));
        }
        threads.push('}');
        let c = database(".config/Void/User/globalStorage/state.vscdb", DDL);
        let _ = c.execute(
            "INSERT INTO ItemTable (key, value) VALUES ('void.chatThreadStorageII', ?1)",
            params![threads],
        );
        if let Some(last) = parts.last() {
            let d = database(".config/Void/User/profiles/p/globalStorage/state.vscdb", DDL);
            let _ = d.execute(
                "INSERT INTO ItemTable (key, value) VALUES ('void.chatThreadStorageII', ?1)",
                params![String::from_utf8_lossy(last)],
            );
        }
    }
    load_and_render(&[Agent::Void]);
});
