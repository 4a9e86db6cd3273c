//! Crush's row decoders: a `crush.db` from the DDL in fixtures/schema whose `messages.parts`
//! come from the input (split at `0xFF 0xFE`: a role, then its parts JSON, then the next
//! role...), with a child session, so the fuzzer drives what the decoders see while the
//! database stays valid.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::params;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/crush-20260127000000.sql");
const SID: &str = "a1000000-0000-4000-8000-0000000000f0";
const CHILD: &str = "call_fuzz_child";

fuzz_target!(|data: &[u8]| {
    clear();
    {
        let c = database(".local/share/crush/crush.db", DDL);
        for (id, parent, cost) in [(SID, None, 0.5), (CHILD, Some(SID), 0.25)] {
            let _ = c.execute(
                "INSERT INTO sessions (id, parent_session_id, title, prompt_tokens, completion_tokens, cost, updated_at, created_at)
                 VALUES (?1, ?2, 'fuzz', 10, 5, ?3, 1, 1)",
                params![id, parent, cost],
            );
        }
        let chunks = parts(data, 24);
        for (i, pair) in chunks.chunks(2).enumerate() {
            let role = String::from_utf8_lossy(pair[0]);
            let body = pair.get(1).map(|b| String::from_utf8_lossy(b)).unwrap_or_default();
            let sid = if i % 4 == 3 { CHILD } else { SID };
            let _ = c.execute(
                "INSERT INTO messages (id, session_id, role, parts, created_at, updated_at, is_summary_message)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)",
                params![format!("msg-{i}"), sid, role, body, i as i64, (i % 5 == 4) as i64],
            );
        }
    }
    load_and_render(&[Agent::Crush]);
});
