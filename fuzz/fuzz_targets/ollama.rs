//! The Ollama app's row decoders: a `db.sqlite` from the DDL in fixtures/schema whose rows come
//! from the input (split at `0xFF 0xFE`): the first part the chat's `created_at`, then
//! message parts four at a time as `content`, `created_at`, `tool_result` and the arguments of
//! a tool call on the row, each message's `role` chosen by its index and an attachment named
//! by the content on every third row, so the fuzzer drives the times, the tool pairing and
//! the argument decoding while the database stays valid.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::params;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/ollama-app-18.sql");
const ROLES: [&str; 5] = ["user", "assistant", "tool", "tool", "robot"];

fuzz_target!(|data: &[u8]| {
    clear();
    {
        let c = database(".ollama/db.sqlite", DDL);
        let ps = parts(data, 33);
        let text = |i: usize| String::from_utf8_lossy(ps.get(i).copied().unwrap_or(b"")).into_owned();
        let _ = c.execute(
            "INSERT INTO chats(id, title, created_at) VALUES('fuzz', '', ?1)",
            params![text(0)],
        );
        for (n, i) in (1..ps.len()).step_by(4).enumerate() {
            let role = ROLES[n % ROLES.len()];
            let result = (n % 2 == 0).then(|| text(i + 2));
            if c
                .execute(
                    "INSERT INTO messages(chat_id, role, content, thinking, model_name, created_at, updated_at, tool_result)
                     VALUES('fuzz', ?1, ?2, ?2, 'llama3.2', ?3, ?3, ?4)",
                    params![role, text(i), text(i + 1), result],
                )
                .is_err()
            {
                continue;
            }
            let id = c.last_insert_rowid();
            if role == "assistant" {
                let _ = c.execute(
                    "INSERT INTO tool_calls(message_id, type, function_name, function_arguments, function_result)
                     VALUES(?1, 'function', 'web_search', ?2, ?3)",
                    params![id, text(i + 3), result],
                );
            }
            if n % 3 == 0 {
                let _ = c.execute(
                    "INSERT INTO attachments(message_id, filename, data) VALUES(?1, ?2, ?3)",
                    params![id, text(i), text(i + 3).into_bytes()],
                );
            }
        }
    }
    load_and_render(&[Agent::Ollama]);
});
