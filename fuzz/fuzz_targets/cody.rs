//! Sourcegraph Cody's chat decoder: a VS Code `state.vscdb` from the DDL in fixtures/schema
//! whose `sourcegraph.cody-ai` row holds a history of chats that come from the input (split
//! at `0xFF 0xFE`, each part one chat's JSON under an account, the last part also tried as
//! the whole value), so the fuzzer drives both SQLite's JSON functions and the transcript
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
        let mut chats = String::from("{");
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                chats.push(',');
            }
            chats.push_str(&format!("\"chat {i}\":{}", String::from_utf8_lossy(part)));
        }
        chats.push('}');
        let value = format!(
            "{{\"cody-local-chatHistory-v2\":{{\"https://x/-u\":{{\"chat\":{chats}}},\"chat\":{chats}}}}}"
        );
        let c = database(".config/Code/User/globalStorage/state.vscdb", DDL);
        let _ = c.execute(
            "INSERT INTO ItemTable (key, value) VALUES ('sourcegraph.cody-ai', ?1)",
            params![value],
        );
        if let Some(last) = parts.last() {
            let d = database(".config/VSCodium/User/globalStorage/state.vscdb", DDL);
            let _ = d.execute(
                "INSERT INTO ItemTable (key, value) VALUES ('sourcegraph.cody-ai', ?1)",
                params![String::from_utf8_lossy(last)],
            );
        }
    }
    load_and_render(&[Agent::Cody]);
});
