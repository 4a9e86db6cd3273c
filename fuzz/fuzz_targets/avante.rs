//! avante.nvim chats: the fuzzer's bytes split at `0xFF 0xFE` into a history file, its
//! project's `metadata.json` and a pre-2025-03 project file, in `~/.local/state/nvim/avante/`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 3);
    let store = ".local/state/nvim/avante";
    put(&format!("{store}/projects/__w/history/0.json"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{store}/projects/__w/history/metadata.json"), p[1]);
    }
    if !p[2].is_empty() {
        put(&format!("{store}/__v.json"), p[2]);
    }
    load_and_render(&[Agent::Avante]);
});
