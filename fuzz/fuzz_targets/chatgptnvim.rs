//! ChatGPT.nvim sessions: the fuzzer's bytes as one session file in
//! `~/.local/state/nvim/chatgpt/`, and (split at `0xFF 0xFE`) a second one under the oldest
//! layout's local-time file name.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    let dir = ".local/state/nvim/chatgpt";
    put(&format!("{dir}/1767225600.json"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{dir}/2022-12-27_18:05:00.json"), p[1]);
    }
    load_and_render(&[Agent::Chatgptnvim]);
});
