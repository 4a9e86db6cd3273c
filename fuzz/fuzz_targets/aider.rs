//! Aider: a project's `.aider.chat.history.md` and `.aider.input.history`, split at
//! `0xFF 0xFE`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    put("projects/app/.aider.chat.history.md", p[0]);
    if !p[1].is_empty() {
        put("projects/app/.aider.input.history", p[1]);
    }
    load_and_render(&[Agent::Aider]);
});
