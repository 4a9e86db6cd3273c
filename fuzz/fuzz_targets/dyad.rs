//! Dyad's row decoders and tag reader: a `sqlite.db` from the DDL in fixtures/schema whose rows
//! come from the input (split at `0xFF 0xFE`): the first part the chat's `model_selection`,
//! then message parts taking turns as `content` and `approval_state`, each message's `role`
//! chosen by its index (user, assistant, a role Dyad never writes), so the fuzzer drives the
//! tags the reader cuts while the database stays valid.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::params;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/dyad-0049.sql");
const ROLES: [&str; 5] = ["user", "assistant", "assistant", "user", "system"];

fuzz_target!(|data: &[u8]| {
    clear();
    {
        let c = database(".config/dyad/sqlite.db", DDL);
        let ps = parts(data, 26);
        let text = |i: usize| String::from_utf8_lossy(ps.get(i).copied().unwrap_or(b"")).into_owned();
        let _ = c.execute(
            "INSERT INTO apps(id, name, path) VALUES(1, 'fuzz', 'fuzz')",
            [],
        );
        let _ = c.execute(
            "INSERT INTO chats(id, app_id, title, chat_mode, model_selection, initial_commit_hash)
             VALUES(1, 1, NULL, 'build', ?1, 'abc')",
            params![text(0)],
        );
        for (n, i) in (1..ps.len()).step_by(2).enumerate() {
            let _ = c.execute(
                "INSERT INTO messages(chat_id, role, content, approval_state, commit_hash, created_at)
                 VALUES(1, ?1, ?2, ?3, ?4, ?5)",
                params![ROLES[n % ROLES.len()], text(i), text(i + 1), (n % 3 == 1).then_some("def"), n as i64],
            );
        }
    }
    load_and_render(&[Agent::Dyad]);
});
