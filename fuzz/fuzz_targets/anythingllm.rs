//! AnythingLLM's row decoders: an `anythingllm.db` from the DDL in fixtures/schema whose rows
//! come from the input (split at `0xFF 0xFE`): the first part the workspace's system prompt,
//! then parts taking turns as a row's `prompt` and `response`, each row's place chosen by its
//! index (the default chat, a thread, an API session, a thread whose row is gone) and its
//! `include` and rating too, so the fuzzer drives the response JSON while the database stays
//! valid.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::params;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/anythingllm-20260520160208.sql");
/// `(thread_id, api_session_id)` of the row at each index, in turn.
const PLACES: [(Option<i64>, Option<&str>); 4] =
    [(None, None), (Some(1), None), (None, Some("s1")), (Some(9), None)];

fuzz_target!(|data: &[u8]| {
    clear();
    {
        let c = database(".config/anythingllm-desktop/storage/anythingllm.db", DDL);
        let ps = parts(data, 25);
        let text = |i: usize| String::from_utf8_lossy(ps.get(i).copied().unwrap_or(b"")).into_owned();
        let _ = c.execute(
            "INSERT INTO workspaces(id, name, slug, openAiPrompt, chatModel) VALUES(1, 'fuzz', 'fuzz', ?1, 'm')",
            params![text(0)],
        );
        let _ = c.execute(
            "INSERT INTO workspace_threads(id, name, slug, workspace_id) VALUES(1, 'Thread', 't1', 1)",
            [],
        );
        for (n, i) in (1..ps.len()).step_by(2).enumerate() {
            let (thread, api) = PLACES[n % PLACES.len()];
            let _ = c.execute(
                "INSERT INTO workspace_chats(workspaceId, prompt, response, include, thread_id, api_session_id,
                 feedbackScore, createdAt) VALUES(1, ?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![text(i), text(i + 1), n % 3 != 2, thread, api, (n % 4 == 1).then_some(n % 2 == 0), n as i64],
            );
        }
    }
    load_and_render(&[Agent::Anythingllm]);
});
