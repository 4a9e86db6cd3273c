//! oterm's row decoders: a `store.db` from the DDL in fixtures/schema whose rows come from the
//! input (split at `0xFF 0xFE`): the first part the chat's `parameters`, the second its
//! `tools`, then message parts taking turns as `text` and `images`, each message's `author`
//! chosen by its index, so the fuzzer drives what the decoders see while the database stays
//! valid.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::params;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/oterm-0.19.sql");
const AUTHORS: [&str; 5] = ["user", "assistant", "me", "ollama", "tool"];

fuzz_target!(|data: &[u8]| {
    clear();
    {
        let c = database(".local/share/oterm/store.db", DDL);
        let ps = parts(data, 26);
        let text = |i: usize| String::from_utf8_lossy(ps.get(i).copied().unwrap_or(b"")).into_owned();
        let _ = c.execute(
            "INSERT INTO chat(id, name, model, system, provider, parameters, tools, thinking)
             VALUES(1, 'fuzz', 'llama3.2', 'sys', 'ollama', ?1, ?2, 1)",
            params![text(0), text(1)],
        );
        for (n, i) in (2..ps.len()).step_by(2).enumerate() {
            let _ = c.execute(
                "INSERT INTO message(chat_id, author, text, images) VALUES(1, ?1, ?2, ?3)",
                params![AUTHORS[n % AUTHORS.len()], text(i), text(i + 1)],
            );
        }
    }
    load_and_render(&[Agent::Oterm]);
});
