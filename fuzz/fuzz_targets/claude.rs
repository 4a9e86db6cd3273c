//! Claude Code transcripts, with a nested subagent file and a spilled tool output.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 3);
    let id = "0f0f0f0f-0000-4000-8000-000000000004";
    put(&format!(".claude/projects/-tmp-fuzz/{id}.jsonl"), p[0]);
    if !p[1].is_empty() {
        put(&format!(".claude/projects/-tmp-fuzz/{id}/subagents/agent-a1.jsonl"), p[1]);
    }
    if !p[2].is_empty() {
        put(&format!(".claude/projects/-tmp-fuzz/{id}/tool-results/toolu_1.txt"), p[2]);
    }
    load_and_render(&[Agent::Claude]);
});
