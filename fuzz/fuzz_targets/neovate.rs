//! Neovate Code's session logs: the fuzzer's bytes split at `0xFF 0xFE` into a session file,
//! a subagent's session file beside it and the global `data.json`, in `~/.neovate/`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 3);
    let project = ".neovate/projects/home-dev-app";
    put(&format!("{project}/0a1b2c3d.jsonl"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{project}/agent-4e5f6a7b.jsonl"), p[1]);
    }
    if !p[2].is_empty() {
        put(".neovate/data.json", p[2]);
    }
    load_and_render(&[Agent::Neovate]);
});
