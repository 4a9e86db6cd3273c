//! Fabric sessions: the fuzzer's bytes as one session file in `~/.config/fabric/sessions/`,
//! and (split at `0xFF 0xFE`) a second one.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    let sessions = ".config/fabric/sessions";
    put(&format!("{sessions}/chat.json"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{sessions}/second.json"), p[1]);
    }
    load_and_render(&[Agent::Fabric]);
});
