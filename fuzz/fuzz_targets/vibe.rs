//! Mistral Vibe's session logs: the fuzzer's bytes split at `0xFF 0xFE` into a session
//! folder's `messages.jsonl` and `meta.json`, and a pre-2.0 single session file, in
//! `~/.vibe/logs/session/`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 3);
    let logs = ".vibe/logs/session";
    put(&format!("{logs}/session_20260101_000000_00000001/messages.jsonl"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{logs}/session_20260101_000000_00000001/meta.json"), p[1]);
    }
    if !p[2].is_empty() {
        put(&format!("{logs}/session_20250101_000000_00000002.json"), p[2]);
    }
    load_and_render(&[Agent::Vibe]);
});
