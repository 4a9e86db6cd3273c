//! Mux's workspace chats: the fuzzer's bytes split at `0xFF 0xFE` into a workspace's
//! `chat.jsonl`, `chat-archive.jsonl` and `partial.json`, and the home's `config.json`, in
//! `~/.mux/`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 4);
    let ws = ".mux/sessions/0123456789";
    put(&format!("{ws}/chat.jsonl"), p[0]);
    for (i, name) in [(1, "chat-archive.jsonl"), (2, "partial.json")] {
        if !p[i].is_empty() {
            put(&format!("{ws}/{name}"), p[i]);
        }
    }
    if !p[3].is_empty() {
        put(".mux/config.json", p[3]);
    }
    load_and_render(&[Agent::Mux]);
});
