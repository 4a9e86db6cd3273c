//! Codebuff's chat directories: the fuzzer's bytes split at `0xFF 0xFE` into a chat's
//! `chat-messages.json`, `run-state.json`, `chat-meta.json` and the older `messages.json`,
//! in `~/.config/manicode/projects/<project>/chats/<chat id>/`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 4);
    let chat = ".config/manicode/projects/app/chats/2026-01-01T00-00-00.000Z";
    put(&format!("{chat}/chat-messages.json"), p[0]);
    for (i, name) in [(1, "run-state.json"), (2, "chat-meta.json"), (3, "messages.json")] {
        if !p[i].is_empty() {
            put(&format!("{chat}/{name}"), p[i]);
        }
    }
    load_and_render(&[Agent::Codebuff]);
});
