//! PearAI sessions: the fuzzer's bytes as one session file and (split at `0xFF 0xFE`) the
//! `sessions.json` index beside it, in `~/.pearai/sessions/`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    let sessions = ".pearai/sessions";
    put(
        &format!("{sessions}/00000000-0000-4000-8000-000000000001.json"),
        p[0],
    );
    if !p[1].is_empty() {
        put(&format!("{sessions}/sessions.json"), p[1]);
    }
    load_and_render(&[Agent::Pearai]);
});
