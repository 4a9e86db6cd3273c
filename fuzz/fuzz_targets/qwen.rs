//! Qwen Code chats: two chat files of one project (the second under the older
//! `tmp/<hash>` layout), split at `0xFF 0xFE`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    put(
        ".qwen/projects/-home-fuzz/chats/0f0f0f0f-0000-4000-8000-000000000001.jsonl",
        p[0],
    );
    if !p[1].is_empty() {
        put(
            ".qwen/tmp/5d41402abc4b2a76b9719d911017c592/chats/1e1e1e1e-0000-4000-8000-000000000002.jsonl",
            p[1],
        );
    }
    load_and_render(&[Agent::Qwen]);
});
