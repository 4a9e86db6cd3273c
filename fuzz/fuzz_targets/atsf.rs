//! Agent Thread Storage Format threads: thread.json and messages.jsonl.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    let t = "projects/demo/.agent/threads/0f0f0f0f-0000-4000-8000-000000000005";
    put(&format!("{t}/thread.json"), p[0]);
    put(&format!("{t}/messages.jsonl"), p[1]);
    load_and_render(&[Agent::Atsf]);
});
