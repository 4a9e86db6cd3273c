//! The render cache on disk, end to end: a new `Fs` (as a remount makes) over the same
//! stores and cache serves every unchanged session from disk without parsing it, renders a
//! changed one again, rebuilds damaged entries, and a real mount leaves its sessions there
//! for the next one. Sessions are written here; expected texts come from this file's lists.

mod common;

use common::{Home, Mount};
use sessfs::diskcache::DiskCache;
use sessfs::stores::{self, Env};
use sessfs::tree::{Fs, Kind, Options};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const PROJECT: &str = ".pi/agent/sessions/--tmp-disk--";

/// The prompts of each session, by session id: what must come back.
fn sessions() -> Vec<(String, Vec<String>)> {
    (1..=5)
        .map(|i| {
            let id = format!("88888888-0000-4000-8000-00000000000{i}");
            let prompts = (1..=3)
                .map(|j| format!("session {i} prompt {j} about ledger{i}x{j}"))
                .collect();
            (id, prompts)
        })
        .collect()
}

fn line(id: &str, parent: Option<&str>, text: &str) -> String {
    let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-03-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\",\"timestamp\":1772323201000}}}}\n"
    )
}

fn session_path(home: &Path, id: &str) -> PathBuf {
    home.join(PROJECT)
        .join(format!("2026-03-01T00-00-00-000Z_{id}.jsonl"))
}

fn write_sessions(home: &Path) {
    std::fs::create_dir_all(home.join(PROJECT)).unwrap();
    for (id, prompts) in sessions() {
        let mut text = format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-03-01T00:00:00.000Z\",\"cwd\":\"/tmp/disk\"}}\n"
        );
        let mut parent: Option<String> = None;
        for (j, p) in prompts.iter().enumerate() {
            let mid = format!("d000000{j}");
            text += &line(&mid, parent.as_deref(), p);
            parent = Some(mid);
        }
        std::fs::write(session_path(home, &id), text).unwrap();
    }
}

fn append(home: &Path, id: &str, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(session_path(home, id))
        .unwrap();
    f.write_all(line("d0000009", Some("d0000002"), text).as_bytes())
        .unwrap();
}

/// An `Fs` over `home`'s stores with its render cache at `disk`: what a mount opens.
fn open(home: &Path, disk: &Path, budget: u64) -> Fs {
    let env = Env {
        home: home.to_path_buf(),
        vars: Default::default(),
    };
    let fs = Fs::new(stores::open_all(&env, &[]), Options::default());
    fs.use_disk_cache(DiskCache::open(disk, budget, || {}).unwrap());
    fs
}

/// Every file and link of the tree by path, as a walk reads it.
fn walk(fs: &Fs) -> BTreeMap<String, Vec<u8>> {
    fn go(fs: &Fs, ino: u64, at: &str, out: &mut BTreeMap<String, Vec<u8>>) {
        for (name, attr) in fs.readdir(ino).unwrap() {
            let path = format!("{at}/{name}");
            match attr.kind {
                Kind::Dir => go(fs, attr.ino, &path, out),
                Kind::File => {
                    let bytes = fs.contents(attr.ino).unwrap().to_vec().unwrap();
                    assert_eq!(bytes.len() as u64, attr.size, "{path}: size and bytes");
                    out.insert(path, bytes);
                }
                Kind::Symlink => {
                    out.insert(path, fs.readlink(attr.ino).unwrap().into_bytes());
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    go(fs, 1, "", &mut out);
    out
}

fn transcript<'a>(tree: &'a BTreeMap<String, Vec<u8>>, id: &str) -> &'a str {
    let bytes = tree
        .get(&format!("/pi/{id}/transcript.md"))
        .unwrap_or_else(|| panic!("no transcript for {id}"));
    std::str::from_utf8(bytes).unwrap()
}

/// The entry files of a render cache directory.
fn entry_files(disk: &Path) -> Vec<PathBuf> {
    let Ok(shards) = std::fs::read_dir(disk) else {
        return Vec::new();
    };
    shards
        .flatten()
        .filter(|s| s.path().is_dir())
        .flat_map(|s| std::fs::read_dir(s.path()).unwrap().flatten())
        .map(|e| e.path())
        .collect()
}

/// The sessions written, walked once by an `Fs` with a render cache at `<home>/cache`,
/// whose writes are then all on disk: what the first mount leaves.
fn first_mount(home: &Home) -> (PathBuf, BTreeMap<String, Vec<u8>>) {
    write_sessions(home.path());
    let disk = home.path().join("cache");
    let fs = open(home.path(), &disk, 1 << 30);
    let tree = walk(&fs);
    assert_eq!(fs.render_count(), 5);
    fs.flush_disk_cache();
    assert_eq!(fs.disk_stats().unwrap().writes, 5);
    (disk, tree)
}

#[test]
fn a_remount_serves_every_unchanged_session_from_disk_without_parsing_it() {
    let home = Home::empty();
    let (disk, first) = first_mount(&home);
    for (id, prompts) in sessions() {
        for p in prompts {
            assert!(transcript(&first, &id).contains(&p), "{id}: {p}");
        }
    }
    let fs = open(home.path(), &disk, 1 << 30);
    let again = walk(&fs);
    assert_eq!(fs.render_count(), 0, "no session parsed or rendered");
    assert_eq!(fs.disk_stats().unwrap().hits, 5);
    assert_eq!(again, first);
}

/// A walk faster than the writer: with a write queue that holds one session, the others
/// are turned away (owed), and the idle writer renders and writes them once the mount is
/// quiet. A new mount then serves all five from disk without a render.
#[test]
fn sessions_a_full_queue_turned_away_are_written_once_the_mount_is_idle() {
    use std::time::{Duration, Instant};
    let home = Home::empty();
    write_sessions(home.path());
    let disk = home.path().join("cache");
    let first = {
        let env = Env {
            home: home.path().to_path_buf(),
            vars: Default::default(),
        };
        let fs = std::sync::Arc::new(Fs::new(stores::open_all(&env, &[]), Options::default()));
        let cache = DiskCache::open(&disk, 1 << 30, || {}).unwrap();
        cache.set_queue_bytes(1);
        cache.write_when_quiet(Duration::from_millis(300));
        fs.use_disk_cache(cache);
        fs.fill_disk_cache_when_idle();
        let tree = walk(&fs);
        assert_eq!(fs.render_count(), 5);
        assert!(
            fs.disk_stats().unwrap().skipped >= 1,
            "the queue turned none away: {:?}",
            fs.disk_stats()
        );
        let start = Instant::now();
        while fs.disk_stats().unwrap().writes < 5 {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "owed sessions were not written: {:?}",
                fs.disk_stats()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(fs.disk_stats().unwrap().owed, 0);
        tree
    };
    assert_eq!(entry_files(&disk).len(), 5);
    let fs = open(home.path(), &disk, 1 << 30);
    let again = walk(&fs);
    assert_eq!(fs.render_count(), 0, "no session parsed or rendered");
    assert_eq!(again, first);
}

#[test]
fn a_session_changed_between_mounts_is_rendered_again_and_never_served_stale() {
    let home = Home::empty();
    let (disk, _) = first_mount(&home);
    let (changed, _) = sessions()[1].clone();
    append(home.path(), &changed, "appended between mounts zephyr");
    let fs = open(home.path(), &disk, 1 << 30);
    let tree = walk(&fs);
    assert!(transcript(&tree, &changed).contains("appended between mounts zephyr"));
    assert_eq!(fs.render_count(), 1, "only the changed session renders");
    assert_eq!(fs.disk_stats().unwrap().hits, 4);
    // And while mounted: a change after the disk served the session is seen too.
    let (other, _) = sessions()[3].clone();
    append(home.path(), &other, "appended while mounted quokka");
    let start = std::time::Instant::now();
    while !transcript(&walk(&fs), &other).contains("appended while mounted quokka") {
        assert!(start.elapsed().as_secs() < 3, "the change did not show");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn damaged_entries_are_rendered_again_and_rewritten() {
    let home = Home::empty();
    let (disk, first) = first_mount(&home);
    let entries = entry_files(&disk);
    assert_eq!(entries.len(), 5);
    for (i, e) in entries.iter().enumerate() {
        let mut bytes = std::fs::read(e).unwrap();
        let at = if i % 2 == 0 { bytes.len() - 6 } else { 25 };
        bytes[at] ^= 0x20;
        std::fs::write(e, bytes).unwrap();
    }
    let fs = open(home.path(), &disk, 1 << 30);
    assert_eq!(walk(&fs), first, "damage is never served");
    assert_eq!(fs.render_count(), 5);
    assert_eq!(fs.disk_stats().unwrap().damaged, 5);
    fs.flush_disk_cache();
    let fs = open(home.path(), &disk, 1 << 30);
    assert_eq!(walk(&fs), first);
    assert_eq!(fs.render_count(), 0, "rewritten after the damage");
}

#[test]
fn the_disk_budget_holds() {
    let home = Home::empty();
    write_sessions(home.path());
    let disk = home.path().join("cache");
    let budget = 2_500;
    let fs = open(home.path(), &disk, budget);
    walk(&fs);
    fs.flush_disk_cache();
    let stats = fs.disk_stats().unwrap();
    assert_eq!(stats.writes, 5);
    let on_disk: u64 = entry_files(&disk)
        .iter()
        .map(|e| std::fs::metadata(e).unwrap().len())
        .sum();
    assert!(
        on_disk <= budget,
        "{on_disk} bytes on disk, budget {budget}"
    );
    assert!(stats.evicted > 0, "{stats:?}");
}

#[test]
fn a_real_mount_leaves_its_sessions_for_the_next_and_no_disk_cache_leaves_none() {
    let home = Home::empty();
    write_sessions(home.path());
    let render = home.path().join(".cache/sessfs/render");
    let before = home.snapshot();
    let first = {
        let m = Mount::new(&home, &[]);
        let out = m.sh("cat pi/*/transcript.md pi/*/messages.jsonl");
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    // The serving process writes its last renders once quiet, after the unmount.
    let start = std::time::Instant::now();
    while entry_files(&render).len() < 5 && start.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        entry_files(&render).len(),
        5,
        "every rendered session is on disk after the unmount"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&render).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    {
        let m = Mount::new(&home, &[]);
        let out = m.sh("cat pi/*/transcript.md pi/*/messages.jsonl");
        assert_eq!(String::from_utf8(out.stdout).unwrap(), first);
        for (id, prompts) in sessions() {
            let (found, files) = m.grep(&prompts[2], &["pi"]);
            assert_eq!(found.into_iter().collect::<Vec<_>>(), [format!("pi/{id}")]);
            assert_eq!(files.len(), 2, "{files:?}"); // transcript.md, messages.jsonl
        }
    }
    assert_eq!(home.snapshot(), before, "the stores are byte-identical");
    let bare = Home::empty();
    write_sessions(bare.path());
    {
        let m = Mount::new(&bare, &["--no-disk-cache"]);
        assert!(m.sh("cat pi/*/transcript.md").status.success());
    }
    assert!(!bare.path().join(".cache/sessfs/render").exists());
}
