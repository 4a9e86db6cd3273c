//! Cursor: the cursor-agent root blob (hand-decoded protobuf) and `.txt` / `.jsonl` agent
//! transcripts. The root decoder is fed directly (it sits inside a database otherwise); the
//! transcripts go through the store like the mount reads them.
#![no_main]
use libfuzzer_sys::fuzz_target;
use sessfs::model::Agent;
use sessfs_fuzz::*;

fuzz_target!(|data: &[u8]| {
    let _ = std::hint::black_box(sessfs::stores::cursor::decode_root(data));
    clear();
    let parts = parts(data, 2);
    put(".cursor/projects/p/agent-transcripts/fuzz-a.txt", parts[0]);
    put(".cursor/projects/p/agent-transcripts/fuzz-b.jsonl", parts[1]);
    load_and_render(&[Agent::Cursor]);
});
