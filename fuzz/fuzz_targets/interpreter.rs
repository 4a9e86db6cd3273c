//! Open Interpreter's conversations: the fuzzer's bytes split at `0xFF 0xFE` into a
//! conversation file of the current directory (`~/.config/open-interpreter/conversations/`)
//! and one of the 0.1 releases' (`~/.config/Open Interpreter/conversations/`).
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 2);
    put(
        ".config/open-interpreter/conversations/Fix_the__January_01_2026_00-00-00.json",
        p[0],
    );
    if !p[1].is_empty() {
        put(
            ".config/Open Interpreter/conversations/January_01_2024_00-00-00.json",
            p[1],
        );
    }
    load_and_render(&[Agent::Interpreter]);
});
