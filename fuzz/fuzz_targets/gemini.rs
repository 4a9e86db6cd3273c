//! Gemini CLI chats: a JSONL chat, a legacy JSON chat, a subagent chat under its parent's
//! id and `projects.json`, split at `0xFF 0xFE`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 4);
    let chats = ".gemini/tmp/fuzz/chats";
    put(&format!("{chats}/session-2026-01-01T00-00-0f0f0f0f.jsonl"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{chats}/session-2026-01-01T00-01-1e1e1e1e.json"), p[1]);
    }
    if !p[2].is_empty() {
        put(
            &format!("{chats}/0f0f0f0f-0000-4000-8000-000000000007/2d2d2d2d-0000-4000-8000-000000000008.jsonl"),
            p[2],
        );
    }
    if !p[3].is_empty() {
        put(".gemini/projects.json", p[3]);
    }
    load_and_render(&[Agent::Gemini]);
});
