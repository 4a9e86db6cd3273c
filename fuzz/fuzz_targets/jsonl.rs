//! The tolerant JSONL reader every line-oriented store shares, on raw bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut n = 0usize;
    let warnings = sessfs::stores::jsonl::read_from(data, "fuzz", &mut |_, v| {
        n += std::hint::black_box(v.is_object()) as usize;
    });
    std::hint::black_box((n, warnings));
});
