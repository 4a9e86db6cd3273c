//! Octofriend's node decoders: a `sqlite.db` from the DDL in fixtures/schema with one session
//! tree whose `llm_irs.json` rows come from the input (split at `0xFF 0xFE`), every fourth
//! part a notification and every fifth node hung off the root instead of the node before (a
//! branch), each item's `model_json` the part before it, so the fuzzer drives what the
//! decoders and the tree walk see while the database stays valid.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rusqlite::params;
use sessfs::model::Agent;
use sessfs_fuzz::*;

const DDL: &str = include_str!("../../fixtures/schema/octofriend-0006.sql");

fuzz_target!(|data: &[u8]| {
    clear();
    {
        let c = database(".local/share/octofriend/sqlite.db", DDL);
        let _ = c.execute_batch(
            "INSERT INTO trees (id, name, cwd, updated_at) VALUES (1, 'f0f0f0f0-fuzz', '/', 1);
             INSERT INTO local_launches (id, config, unchained) VALUES (1, NULL, 0);
             INSERT INTO launches (id, local_launch_id) VALUES (1, 1);",
        );
        let mut parent: Option<i64> = None;
        let mut root: Option<i64> = None;
        let mut model = String::new();
        for (i, part) in parts(data, 24).into_iter().enumerate() {
            let body = String::from_utf8_lossy(part).into_owned();
            let payload = if i % 4 == 3 {
                c.execute("INSERT INTO notifications (content) VALUES (?1)", [&body])
                    .map(|_| ("notification_id", c.last_insert_rowid()))
            } else {
                c.execute("INSERT INTO llm_irs (json) VALUES (?1)", [&body])
                    .map(|_| ("llm_ir_id", c.last_insert_rowid()))
            };
            let Ok((column, pid)) = payload else { continue };
            let sql = format!("INSERT INTO history_items (model_json, {column}) VALUES (?1, ?2)");
            if c.execute(&sql, params![model, pid]).is_err() {
                continue;
            }
            let item = c.last_insert_rowid();
            let under = if i % 5 == 4 { root } else { parent };
            if c.execute(
                "INSERT INTO tree_nodes (history_item_id, tree_id, parent_id, is_leaf, launch_id, created_at)
                 VALUES (?1, 1, ?2, 1, 1, ?3)",
                params![item, under, i as i64],
            )
            .is_ok()
            {
                parent = Some(c.last_insert_rowid());
                root = root.or(parent);
            }
            model = body;
        }
    }
    load_and_render(&[Agent::Octofriend]);
});
