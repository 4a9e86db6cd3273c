//! parrot.nvim chats: the fuzzer's bytes as one chat file in
//! `~/.local/share/nvim/parrot/chats/`, and (split at `0xFF 0xFE`) a second one.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    let chats = ".local/share/nvim/parrot/chats";
    put(&format!("{chats}/2026-01-01.00-00-00.001.md"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{chats}/2024-05-01.00-00-00.002.md"), p[1]);
    }
    load_and_render(&[Agent::Parrot]);
});
