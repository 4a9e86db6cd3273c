//! omp sessions: the pi lineage with a title slot, plus one artifact subagent file.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    let main = "2026-01-01T00-00-00-000Z_0f0f0f0f-0000-4000-8000-000000000003";
    put(&format!(".omp/agent/sessions/-tmp-fuzz/{main}.jsonl"), p[0]);
    if !p[1].is_empty() {
        put(&format!(".omp/agent/sessions/-tmp-fuzz/{main}/0-task.jsonl"), p[1]);
    }
    load_and_render(&[Agent::Omp]);
});
