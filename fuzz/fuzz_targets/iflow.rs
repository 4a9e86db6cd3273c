//! iFlow CLI sessions: the fuzzer's bytes split at `0xFF 0xFE` into a JSONL session file in
//! `~/.iflow/projects/<project>/` and an ACP session file in `~/.iflow/acp/sessions/`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    put(
        ".iflow/projects/-home-dev-app/session-0a1b2c3d-0000-4000-8000-000000000001.jsonl",
        p[0],
    );
    if !p[1].is_empty() {
        put(
            ".iflow/acp/sessions/0a1b2c3d-0000-4000-8000-000000000002.json",
            p[1],
        );
    }
    load_and_render(&[Agent::Iflow]);
});
