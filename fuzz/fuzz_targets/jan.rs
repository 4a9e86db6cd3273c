//! Jan threads: the fuzzer's bytes as one thread's `messages.jsonl` and (split at
//! `0xFF 0xFE`) its `thread.json`, and a second thread holding messages only.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    clear();
    let p = parts(data, 3);
    let threads = ".local/share/Jan/data/threads";
    put(&format!("{threads}/one/messages.jsonl"), p[0]);
    if !p[1].is_empty() {
        put(&format!("{threads}/one/thread.json"), p[1]);
    }
    if !p[2].is_empty() {
        put(&format!("{threads}/two/messages.jsonl"), p[2]);
    }
    load_and_render(&[Agent::Jan]);
});
