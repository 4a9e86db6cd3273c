use super::*;
use crate::model::Agent;
use std::collections::BTreeMap;

fn key(name: &str) -> SessionKey {
    SessionKey {
        agent: Agent::Pi,
        name: name.into(),
    }
}

/// A bundle as a render leaves it: a directory, files, a link.
fn bundle(text: &str) -> BTreeMap<String, Node> {
    let mut b = Bundle::default();
    b.file("meta.json", format!("{{\"title\":\"{text}\"}}\n"));
    b.file(
        "transcript.md",
        format!("# {text}\n\n{}\n", text.repeat(200)),
    );
    b.file("tools/001-bash.md", format!("output of {text}\n"));
    b.file("empty.txt", Vec::new());
    b.entries
        .insert("latest".into(), Node::Symlink("transcript.md".into()));
    b.entries
}

/// Every entry's kind and bytes as text, to compare bundles by.
fn flat(entries: &BTreeMap<String, Node>) -> Vec<(String, String)> {
    flat_bytes(entries)
        .into_iter()
        .map(|(p, v)| (p, String::from_utf8(v).unwrap()))
        .collect()
}

fn sources() -> Vec<PathBuf> {
    vec![PathBuf::from("/h/.pi/agent/sessions/x/a.jsonl")]
}

#[test]
fn a_written_session_comes_back_byte_for_byte_at_its_version_only() {
    let dir = tempfile::tempdir().unwrap();
    let c = DiskCache::open(dir.path(), 1 << 30, || {}).unwrap();
    let written = bundle("alpha");
    assert!(c.put(&key("a"), 7, &sources(), &written, true));
    c.flush();
    let got = c.get(&key("a"), 7, &sources(), None).expect("served");
    assert_eq!(flat(&got.entries), flat(&written));
    // Another version, other sources, another session: not served, and not damage.
    assert!(c.get(&key("a"), 8, &sources(), None).is_none());
    assert!(c
        .get(&key("a"), 7, &[PathBuf::from("/other")], None)
        .is_none());
    assert!(c.get(&key("b"), 7, &sources(), None).is_none());
    let s = c.stats();
    assert_eq!((s.writes, s.hits, s.misses, s.damaged), (1, 1, 3, 0));
    // The directory is private.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[test]
fn an_entry_survives_into_a_new_cache_over_the_same_directory() {
    let dir = tempfile::tempdir().unwrap();
    let written = bundle("beta");
    {
        let c = DiskCache::open(dir.path(), 1 << 30, || {}).unwrap();
        c.put(&key("b"), 1, &sources(), &written, true);
        c.flush();
    }
    let c = DiskCache::open(dir.path(), 1 << 30, || {}).unwrap();
    let got = c.get(&key("b"), 1, &sources(), None).expect("served");
    assert_eq!(flat(&got.entries), flat(&written));
    c.flush(); // the scan ran
    assert_eq!(c.stats().entries, 1);
}

#[test]
fn a_damaged_entry_is_deleted_and_never_served() {
    let dir = tempfile::tempdir().unwrap();
    let c = DiskCache::open(dir.path(), 1 << 30, || {}).unwrap();
    c.put(&key("c"), 1, &sources(), &bundle("gamma"), true);
    c.flush();
    let path = c.entry_path(&key("c"));
    let mut bytes = std::fs::read(&path).unwrap();
    // One byte in the compressed files, then one in the header: each is caught.
    let last = bytes.len() - 10;
    bytes[last] ^= 0x55;
    std::fs::write(&path, &bytes).unwrap();
    assert!(c.get(&key("c"), 1, &sources(), None).is_none());
    assert!(!path.exists(), "a damaged entry is deleted");
    c.put(&key("c"), 1, &sources(), &bundle("gamma"), true);
    c.flush();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[30] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    assert!(c.get(&key("c"), 1, &sources(), None).is_none());
    // Cut short.
    c.put(&key("c"), 1, &sources(), &bundle("gamma"), true);
    c.flush();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert!(c.get(&key("c"), 1, &sources(), None).is_none());
    assert_eq!(c.stats().damaged, 3);
}

/// Entries on both sides of [`WHOLE_UP_TO`] (read whole, or streamed), each read after a
/// damaged one cut off mid-frame on the same thread, whose decompression context is reused.
#[test]
fn entries_read_whole_or_streamed_come_back_after_a_damaged_one() {
    let dir = tempfile::tempdir().unwrap();
    let c = DiskCache::open(dir.path(), 1 << 30, || {}).unwrap();
    // Bytes zstd cannot shrink, so the big entry is more than WHOLE_UP_TO on disk.
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let noise: Vec<u8> = (0..(WHOLE_UP_TO as usize * 3 / 2))
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let mut big = bundle("big");
    big.insert(
        "tools/002-cat.md".into(),
        Node::File(Body::Mem(Arc::new(noise))),
    );
    for (name, written) in [("small", bundle("small")), ("big", big)] {
        c.put(&key("cut"), 1, &sources(), &bundle("cut"), true);
        c.put(&key(name), 1, &sources(), &written, true);
        c.flush();
        let cut = c.entry_path(&key("cut"));
        let bytes = std::fs::read(&cut).unwrap();
        std::fs::write(&cut, &bytes[..bytes.len() - 40]).unwrap();
        assert!(c.get(&key("cut"), 1, &sources(), None).is_none());
        let on_disk = std::fs::metadata(c.entry_path(&key(name))).unwrap().len();
        assert_eq!(
            on_disk > WHOLE_UP_TO,
            name == "big",
            "{name}: {on_disk} bytes"
        );
        let got = c.get(&key(name), 1, &sources(), None).expect(name);
        assert_eq!(flat_bytes(&got.entries), flat_bytes(&written), "{name}");
    }
}

/// Every entry's kind and bytes, for bundles whose files need not be text.
fn flat_bytes(entries: &BTreeMap<String, Node>) -> Vec<(String, Vec<u8>)> {
    entries
        .iter()
        .map(|(p, n)| {
            let v = match n {
                Node::Dir => b"dir".to_vec(),
                Node::Symlink(t) => format!("-> {t}").into_bytes(),
                Node::File(b) => b.to_vec().unwrap(),
            };
            (p.clone(), v)
        })
        .collect()
}

#[test]
fn a_directory_of_another_format_is_emptied_of_entries_only() {
    let dir = tempfile::tempdir().unwrap();
    {
        let c = DiskCache::open(dir.path(), 1 << 30, || {}).unwrap();
        c.put(&key("d"), 1, &sources(), &bundle("delta"), true);
        c.flush();
    }
    std::fs::write(dir.path().join(MARKER), "something else\n").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "kept").unwrap();
    let c = DiskCache::open(dir.path(), 1 << 30, || {}).unwrap();
    assert!(c.get(&key("d"), 1, &sources(), None).is_none());
    assert_eq!(
        std::fs::read_to_string(dir.path().join(MARKER)).unwrap(),
        MARKER_TEXT
    );
    assert!(dir.path().join("notes.txt").exists());
}

#[test]
fn the_budget_holds_and_the_least_recently_used_go_first() {
    let dir = tempfile::tempdir().unwrap();
    // Measure one entry, then allow three and a half of them.
    let one = {
        let c = DiskCache::open(&dir.path().join("probe"), 1 << 30, || {}).unwrap();
        c.put(&key("s0"), 1, &sources(), &bundle("s0"), true);
        c.flush();
        c.stats().bytes
    };
    let c = DiskCache::open(&dir.path().join("c"), one * 7 / 2, || {}).unwrap();
    for i in 0..3 {
        c.put(
            &key(&format!("s{i}")),
            1,
            &sources(),
            &bundle(&format!("s{i}")),
            true,
        );
        c.flush();
        std::thread::sleep(Duration::from_millis(20));
    }
    // s0 used again: s1 is now the least recently used.
    assert!(c.get(&key("s0"), 1, &sources(), None).is_some());
    for i in 3..10 {
        c.put(
            &key(&format!("s{i}")),
            1,
            &sources(),
            &bundle(&format!("s{i}")),
            true,
        );
        c.flush();
        assert!(c.stats().bytes <= one * 7 / 2, "{:?}", c.stats());
    }
    let on_disk: u64 = read_dir(&dir.path().join("c"))
        .into_iter()
        .filter(|p| is_shard(p))
        .flat_map(|s| read_dir(&s))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(
        on_disk <= one * 7 / 2,
        "{on_disk} on disk, budget {}",
        one * 7 / 2
    );
    assert!(c.get(&key("s9"), 1, &sources(), None).is_some());
    assert!(c.get(&key("s1"), 1, &sources(), None).is_none());
    assert!(c.stats().evicted >= 7);
}
