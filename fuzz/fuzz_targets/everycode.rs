//! Every Code rollouts: a session, a second one archived in its date directories, and the
//! session catalog (`sessions/index/catalog.jsonl`), split at `0xFF 0xFE`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 3);
    put(
        ".code/sessions/2026/01/01/rollout-2026-01-01T00-00-00-0f0f0f0f-0000-7000-8000-00000000ec01.jsonl",
        p[0],
    );
    if !p[1].is_empty() {
        put(
            ".code/archived_sessions/2026/01/01/rollout-2026-01-01T00-01-00-0f0f0f0f-0000-7000-8000-00000000ec02.jsonl",
            p[1],
        );
    }
    if !p[2].is_empty() {
        put(".code/sessions/index/catalog.jsonl", p[2]);
    }
    load_and_render(&[Agent::Everycode]);
});
