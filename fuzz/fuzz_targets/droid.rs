//! Factory Droid: a session file, its settings file and a second session beside it (whose
//! header may name the first as its caller), split at `0xFF 0xFE`, in
//! `~/.factory/sessions/<slug>/`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 3);
    let dir = ".factory/sessions/-home-dev-project";
    put(&format!("{dir}/0d0d0d0d-0000-4000-8000-000000000001.jsonl"), p[0]);
    if !p[1].is_empty() {
        put(
            &format!("{dir}/0d0d0d0d-0000-4000-8000-000000000001.settings.json"),
            p[1],
        );
    }
    if !p[2].is_empty() {
        put(&format!("{dir}/0d0d0d0d-0000-4000-8000-000000000002.jsonl"), p[2]);
    }
    load_and_render(&[Agent::Droid]);
});
