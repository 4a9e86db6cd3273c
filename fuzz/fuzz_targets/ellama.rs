//! ellama sessions: the fuzzer's bytes (split at `0xFF 0xFE`) as a chat file in
//! `~/.emacs.d/ellama-sessions/`, the `.session.el` beside it, and a session file whose chat
//! is missing.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 3);
    let dir = ".emacs.d/ellama-sessions";
    put(&format!("{dir}/ellama chat (llama3).org"), p[0]);
    put(&format!("{dir}/.ellama chat (llama3).org.session.el"), p[1]);
    if !p[2].is_empty() {
        put(&format!("{dir}/.ellama gone (llama3).md.session.el"), p[2]);
    }
    load_and_render(&[Agent::Ellama]);
});
