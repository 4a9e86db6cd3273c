//! Codex rollouts: a session, a second rollout that may fork from or be spawned by it (the
//! fuzzer writes its `session_meta`), and `session_index.jsonl`, split at `0xFF 0xFE`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 3);
    let day = ".codex/sessions/2026/01/01";
    put(
        &format!("{day}/rollout-2026-01-01T00-00-00-0f0f0f0f-0000-7000-8000-000000000001.jsonl"),
        p[0],
    );
    if !p[1].is_empty() {
        put(
            &format!("{day}/rollout-2026-01-01T00-01-00-0f0f0f0f-0000-7000-8000-000000000002.jsonl"),
            p[1],
        );
    }
    if !p[2].is_empty() {
        put(".codex/session_index.jsonl", p[2]);
    }
    load_and_render(&[Agent::Codex]);
});
