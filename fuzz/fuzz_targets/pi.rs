//! pi sessions (format v1-v3, migrated in memory) and indusagi, which writes pi's format.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    put(
        ".pi/agent/sessions/--tmp-fuzz--/2026-01-01T00-00-00-000Z_0f0f0f0f-0000-4000-8000-000000000001.jsonl",
        data,
    );
    put(
        ".indusagi/agent/sessions/--tmp-fuzz--/2026-01-01T00-00-00-000Z_0f0f0f0f-0000-4000-8000-000000000002.jsonl",
        data,
    );
    load_and_render(&[Agent::Pi, Agent::Indusagi]);
});
