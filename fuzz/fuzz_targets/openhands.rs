//! OpenHands CLI: a conversation's `base_state.json` and three event files (the third
//! with an index that sorts before the others), split at `0xFF 0xFE`, in
//! `~/.openhands/conversations/<id>/`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 4);
    let dir = ".openhands/conversations/0123456789abcdef0123456789abcdef";
    put(&format!("{dir}/events/event-00001-00000000-0000-4000-8000-000000000001.json"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{dir}/base_state.json"), p[1]);
    }
    if !p[2].is_empty() {
        put(&format!("{dir}/events/event-00002-00000000-0000-4000-8000-000000000002.json"), p[2]);
    }
    if !p[3].is_empty() {
        put(&format!("{dir}/events/event-00000-00000000-0000-4000-8000-000000000000.json"), p[3]);
    }
    load_and_render(&[Agent::Openhands]);
});
