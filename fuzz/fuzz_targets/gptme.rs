//! gptme: a conversation's `conversation.jsonl`, a branch `branches/alt.jsonl` and its
//! `config.toml`, split at `0xFF 0xFE`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 3);
    let dir = ".local/share/gptme/logs/2025-03-02-fuzz";
    put(&format!("{dir}/conversation.jsonl"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{dir}/branches/alt.jsonl"), p[1]);
    }
    if !p[2].is_empty() {
        put(&format!("{dir}/config.toml"), p[2]);
    }
    load_and_render(&[Agent::Gptme]);
});
