//! Amp threads: the fuzzer's bytes as one thread file, and (split at `0xFF 0xFE`) a second
//! one, in `~/.local/share/amp/threads/`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    let threads = ".local/share/amp/threads";
    put(
        &format!("{threads}/T-00000000-0000-4000-8000-000000000001.json"),
        p[0],
    );
    if !p[1].is_empty() {
        put(
            &format!("{threads}/T-00000000-0000-4000-8000-000000000002.json"),
            p[1],
        );
    }
    load_and_render(&[Agent::Amp]);
});
