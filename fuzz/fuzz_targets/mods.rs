//! mods conversations: the fuzzer's bytes as one conversation file (a gob stream) in
//! `~/.local/share/mods/conversations/`, and (split at `0xFF 0xFE`) a second one beside it;
//! an index from mods' DDL (fixtures/schema) names the first and a conversation whose file
//! is missing, so the decoder, the message reader and the index rows are all driven.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/mods.sql");
const DIR: &str = ".local/share/mods/conversations";
const FIRST: &str = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    put(&format!("{DIR}/{FIRST}.gob"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{DIR}/b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2.gob"), p[1]);
    }
    {
        let c = database(&format!("{DIR}/mods.db"), DDL);
        let _ = c.execute(
            "INSERT INTO conversations (id, title, api, model) VALUES (?1, 'fuzz', 'openai', 'gpt-4o')",
            [FIRST],
        );
        let _ = c.execute(
            "INSERT INTO conversations (id, title) VALUES ('c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3', 'gone')",
            [],
        );
    }
    load_and_render(&[Agent::Mods]);
});
