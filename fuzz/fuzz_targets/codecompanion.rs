//! CodeCompanion chats: the fuzzer's bytes as one chat file in
//! `~/.local/share/nvim/codecompanion-history/chats/`, and (split at `0xFF 0xFE`) its summary
//! and the index beside it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 3);
    let history = ".local/share/nvim/codecompanion-history";
    put(&format!("{history}/chats/1767261600.json"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{history}/summaries/1767261600.md"), p[1]);
    }
    if !p[2].is_empty() {
        put(&format!("{history}/index.json"), p[2]);
    }
    load_and_render(&[Agent::Codecompanion]);
});
