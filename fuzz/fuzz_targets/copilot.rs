//! Copilot CLI sessions in all three eras: `events.jsonl` with `workspace.yaml`, the flat
//! `<id>.jsonl`, and a `history-session-state` JSON file, split at `0xFF 0xFE`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 4);
    let state = ".copilot/session-state";
    put(
        &format!("{state}/0f0f0f0f-0000-4000-8000-000000000009/events.jsonl"),
        p[0],
    );
    if !p[1].is_empty() {
        put(
            &format!("{state}/0f0f0f0f-0000-4000-8000-000000000009/workspace.yaml"),
            p[1],
        );
    }
    if !p[2].is_empty() {
        put(&format!("{state}/0f0f0f0f-0000-4000-8000-00000000000a.jsonl"), p[2]);
    }
    if !p[3].is_empty() {
        put(
            ".copilot/history-session-state/session_0f0f0f0f-0000-4000-8000-00000000000b_1767225600000.json",
            p[3],
        );
    }
    load_and_render(&[Agent::Copilot]);
});
