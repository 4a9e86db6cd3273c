//! Kode's sessions: the fuzzer's bytes split at `0xFF 0xFE` into a JSONL session file, a
//! subagent's file beside it, a JSON-array log and its sidechain log, in `~/.kode/`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 4);
    let project = ".kode/projects/-home-dev-app";
    put(&format!("{project}/0a1b2c3d-0000-4000-8000-000000000001.jsonl"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{project}/agent-4e5f6a7b.jsonl"), p[1]);
    }
    let logs = ".kode/-home-dev-app/messages";
    if !p[2].is_empty() {
        put(&format!("{logs}/2026-01-01T00-00-00-000Z.json"), p[2]);
    }
    if !p[3].is_empty() {
        put(&format!("{logs}/2026-01-01T00-00-00-000Z-sidechain-1.json"), p[3]);
    }
    load_and_render(&[Agent::Kode]);
});
