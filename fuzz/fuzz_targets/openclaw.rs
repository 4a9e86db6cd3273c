//! OpenClaw file-era transcripts (`agents/<agent>/sessions/<id>.jsonl`).
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    put(".openclaw/agents/main/sessions/fuzz-session.jsonl", data);
    load_and_render(&[Agent::Openclaw]);
});
