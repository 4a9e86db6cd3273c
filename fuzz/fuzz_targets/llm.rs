//! LLM's row decoders: a `logs.db` from the DDL in fixtures/schema holding a legacy
//! conversation and a 0.32 thread whose rows come from the input (split at `0xFF 0xFE`):
//! even parts are parts payloads of the thread's chain (each its own message, roles in
//! turn), odd parts are tool call arguments, tool result outputs and prompts of the legacy
//! responses, so the fuzzer drives what the decoders see while the database stays valid.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::params;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/llm-0.32.sql");
const ID: &str = "01kfuzz0conversation";
const ROLES: [&str; 5] = ["system", "user", "assistant", "tool", "x"];
const TYPES: [&str; 6] = ["text", "reasoning", "tool_call", "tool_result", "attachment", "y"];

fuzz_target!(|data: &[u8]| {
    clear();
    {
        let c = database(".config/io.datasette.llm/logs.db", DDL);
        let _ = c.execute(
            "INSERT INTO conversations VALUES (?1, 'fuzz', 'm')",
            params![ID],
        );
        let _ = c.execute(
            "INSERT INTO fragments (id, hash, content) VALUES (1, 'h', 'fragment text')",
            [],
        );
        let mut parent: Option<String> = None;
        for (i, part) in parts(data, 24).into_iter().enumerate() {
            let body = String::from_utf8_lossy(part).into_owned();
            if i % 2 == 0 {
                let hash = format!("b2:{i}");
                let _ = c.execute(
                    "INSERT INTO messages (hash, parent_hash, role) VALUES (?1, ?2, ?3)",
                    params![hash, parent, ROLES[i / 2 % ROLES.len()]],
                );
                let _ = c.execute(
                    "INSERT INTO parts (message_hash, position, type, payload) VALUES (?1, 0, ?2, ?3)",
                    params![hash, TYPES[i / 2 % TYPES.len()], body],
                );
                let _ = c.execute(
                    "INSERT INTO part_fragments SELECT id, 1, 0 FROM parts WHERE message_hash = ?1",
                    params![hash],
                );
                let _ = c.execute(
                    "INSERT INTO turns (id, thread_id, tip_message_hash, model, input_tokens, output_tokens, datetime_utc)
                     VALUES (?1, ?2, ?3, 'm', 3, 2, ?4)",
                    params![format!("t{i}"), ID, hash, i.to_string()],
                );
                parent = Some(hash);
            } else {
                let rid = format!("r{i}");
                let _ = c.execute(
                    "INSERT INTO responses (id, model, prompt, system, response, conversation_id, datetime_utc, input_tokens, output_tokens)
                     VALUES (?1, 'm', ?2, ?2, 'reply', ?3, ?4, 1, 1)",
                    params![rid, body, ID, i.to_string()],
                );
                let _ = c.execute(
                    "INSERT INTO tool_calls (response_id, name, arguments, tool_call_id) VALUES (?1, 'f', ?2, ?1)",
                    params![rid, body],
                );
                let _ = c.execute(
                    "INSERT INTO tool_results (response_id, name, output, tool_call_id, exception) VALUES (?1, 'f', ?2, ?1, ?2)",
                    params![rid, body],
                );
            }
        }
        let _ = c.execute(
            "INSERT INTO threads (id, name, tip_message_hash) VALUES (?1, 'fuzz', ?2)",
            params![ID, parent],
        );
        let _ = c.execute(
            "INSERT INTO responses (id, model, prompt, response) VALUES ('lone', 'm', 'p', 'r')",
            [],
        );
    }
    load_and_render(&[Agent::Llm]);
});
