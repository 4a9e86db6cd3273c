//! LLxprt Code's sessions: the fuzzer's bytes split at `0xFF 0xFE` into a session event log
//! and a 0.8.x session document, in one project's `chats/` under `~/.llxprt/tmp`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    let chats = ".llxprt/tmp/0a1b2c3d/chats";
    put(&format!("{chats}/session-2026-03-01T10-00-00-0a1b2c3d.jsonl"), p[0]);
    if !p[1].is_empty() {
        put(
            &format!("{chats}/persisted-session-2026-01-20T16-45-00-000Z.json"),
            p[1],
        );
    }
    load_and_render(&[Agent::Llxprt]);
});
