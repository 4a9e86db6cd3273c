//! AIChat sessions: the fuzzer's bytes as one session file in `~/.config/aichat/sessions/`,
//! and (split at `0xFF 0xFE`) an agent's session in `agents/<agent>/sessions/`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    let config = ".config/aichat";
    put(&format!("{config}/sessions/fuzz.yaml"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{config}/agents/coder/sessions/fuzz.yaml"), p[1]);
    }
    load_and_render(&[Agent::Aichat]);
});
