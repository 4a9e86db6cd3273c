//! Nanocoder sessions: the fuzzer's bytes as one session file in
//! `~/.local/share/nanocoder/sessions/`, and (split at `0xFF 0xFE`) a second one beside it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    let sessions = ".local/share/nanocoder/sessions";
    put(
        &format!("{sessions}/00000000-0000-4000-8000-000000000001.json"),
        p[0],
    );
    if !p[1].is_empty() {
        put(
            &format!("{sessions}/00000000-0000-4000-8000-000000000002.json"),
            p[1],
        );
    }
    load_and_render(&[Agent::Nanocoder]);
});
