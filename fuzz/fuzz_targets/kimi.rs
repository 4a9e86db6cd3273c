//! Kimi CLI: a session's `context.jsonl`, `wire.jsonl` and an old-style subagent context
//! `context_sub_1.jsonl`, split at `0xFF 0xFE`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 3);
    let dir = ".kimi/sessions/0123456789abcdef0123456789abcdef/3b1f2c7e";
    put(&format!("{dir}/context.jsonl"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{dir}/wire.jsonl"), p[1]);
    }
    if !p[2].is_empty() {
        put(&format!("{dir}/context_sub_1.jsonl"), p[2]);
    }
    load_and_render(&[Agent::Kimi]);
});
