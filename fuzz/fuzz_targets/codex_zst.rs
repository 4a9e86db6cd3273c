//! The zstd reader: the fuzzer's bytes as a compressed rollout (`.jsonl.zst`), so damaged
//! frames, truncated streams and huge declared sizes reach the decoder.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    put(
        ".codex/sessions/2026/01/01/rollout-2026-01-01T00-00-00-0f0f0f0f-0000-7000-8000-000000000001.jsonl.zst",
        data,
    );
    load_and_render(&[Agent::Codex]);
});
