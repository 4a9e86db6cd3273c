//! CopilotChat.nvim chats: the fuzzer's bytes as one saved chat in
//! `~/.local/share/nvim/copilotchat_history/`, and (split at `0xFF 0xFE`) a second one saved
//! without a name.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    let history = ".local/share/nvim/copilotchat_history";
    put(&format!("{history}/chat.json"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{history}/default.json"), p[1]);
    }
    load_and_render(&[Agent::Copilotchat]);
});
