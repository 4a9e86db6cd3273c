//! The mount under fire: while `grep -r`, `cat`, `find` and a checking reader walk it, the
//! native stores under it are appended to, rewritten in place, truncated, deleted and
//! recreated, replaced by garbage, made unreadable and turned into things that are not
//! regular files (directories, FIFOs, sockets, links to `/dev/zero`).
//!
//! What must hold: the mount never dies and never hangs, nothing panics, every read that
//! did not straddle a version change returns exactly `st_size` bytes, JSON files parse
//! (or the read was torn by the kernel race SEMANTICS names, and the next reads are
//! whole), every state the chaos leaves renders to JSON that parses, and once the stores
//! settle the mount equals `sessfs render` of them.
mod common;

use common::{Foreground, Home};
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the stores are shaken. Long enough for thousands of operations and dozens of
/// reader passes; the figures are printed, not asserted.
const CHAOS: Duration = Duration::from_secs(20);

/// A small deterministic generator, so a failing run can be repeated.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Op {
    Append,
    Rewrite,
    Truncate,
    Delete,
    Recreate,
    Garbage,
    Chmod000,
    Directory,
    Fifo,
    Socket,
    DevZero,
}

const OPS: [Op; 11] = [
    Op::Append,
    Op::Rewrite,
    Op::Truncate,
    Op::Delete,
    Op::Recreate,
    Op::Garbage,
    Op::Chmod000,
    Op::Directory,
    Op::Fifo,
    Op::Socket,
    Op::DevZero,
];

/// Whatever is at `p` goes, file or directory or special file.
fn clear(p: &Path) {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(p);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(p);
        }
        Err(_) => {}
    }
}

/// A regular file at `p` again (whatever it had become) holding `bytes`.
fn regular(p: &Path, bytes: &[u8]) {
    if !std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()) {
        clear(p);
    }
    let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644));
    let _ = std::fs::write(p, bytes);
}

fn apply(op: Op, p: &Path, original: &[u8], rng: &mut Lcg) {
    let lines: Vec<&[u8]> = original
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    match op {
        Op::Append => {
            use std::io::Write;
            if !std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()) {
                regular(p, original);
            }
            let line = lines
                .get(rng.below(lines.len().max(1)))
                .copied()
                .unwrap_or(b"{}");
            if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(p) {
                let _ = f.write_all(line);
                let _ = f.write_all(b"\n");
            }
        }
        Op::Rewrite => {
            // In place (same inode): the file's lines in another order, one dropped.
            let mut ls = lines.clone();
            if !ls.is_empty() {
                let i = rng.below(ls.len());
                ls.remove(i);
                ls.reverse();
            }
            let mut bytes = ls.join(&b'\n');
            bytes.push(b'\n');
            regular(p, &bytes);
        }
        Op::Truncate => {
            // Only a regular file: opening a FIFO for writing would block this thread.
            let is_file = std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file());
            if let Some(f) = is_file
                .then(|| std::fs::OpenOptions::new().write(true).open(p).ok())
                .flatten()
            {
                let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                let _ = f.set_len(len / 2);
            }
        }
        Op::Delete => clear(p),
        Op::Recreate => regular(p, original),
        Op::Garbage => {
            let bytes: Vec<u8> = (0..4096 + rng.below(60_000))
                .map(|_| rng.next() as u8)
                .collect();
            regular(p, &bytes);
        }
        Op::Chmod000 => {
            let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o000));
        }
        Op::Directory => {
            clear(p);
            let _ = std::fs::create_dir(p);
        }
        Op::Fifo => {
            clear(p);
            let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).expect("path");
            // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
            unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
        }
        Op::Socket => {
            clear(p);
            // Bound then dropped: the socket file stays, nothing listens.
            let _ = std::os::unix::net::UnixListener::bind(p);
        }
        Op::DevZero => {
            clear(p);
            let _ = std::os::unix::fs::symlink("/dev/zero", p);
        }
    }
}

/// Reads that went wrong, as `path: what`.
type Problems = Arc<Mutex<Vec<String>>>;

/// What identifies one rendered version of a file to a reader: size, mtime and inode.
type Version = (u64, i64, i64, u64);

fn version(m: &std::fs::Metadata) -> Version {
    (m.len(), m.mtime(), m.mtime_nsec(), m.ino())
}

/// `p` read whole between two `stat`s: its bytes and its version when both `stat`s agree
/// (the version did not change during the read), `Err(true)` when they did not, `Err(false)`
/// when it could not be read (gone, or not a regular file any more).
fn read_whole(p: &Path) -> Result<(Version, Vec<u8>), bool> {
    let m1 = std::fs::symlink_metadata(p).map_err(|_| false)?;
    if !m1.is_file() {
        return Err(false);
    }
    let data = std::fs::read(p).map_err(|_| false)?;
    let m2 = std::fs::symlink_metadata(p).map_err(|_| false)?;
    if version(&m1) != version(&m2) {
        return Err(true);
    }
    Ok((version(&m1), data))
}

/// What is wrong with `data` as one whole version of the file `name` of size `size`.
fn wrong(name: &std::ffi::OsStr, size: u64, data: &[u8]) -> Vec<String> {
    let mut bad = Vec::new();
    if data.len() as u64 != size {
        bad.push(format!("read {} bytes, st_size {size}", data.len()));
    }
    if name == "meta.json" && serde_json::from_slice::<serde_json::Value>(data).is_err() {
        bad.push("meta.json does not parse".into());
    }
    if name == "messages.jsonl" {
        for (i, line) in data.split(|&b| b == b'\n').enumerate() {
            if !line.is_empty() && serde_json::from_slice::<serde_json::Value>(line).is_err() {
                let zeros = data.iter().rev().take_while(|&&b| b == 0).count();
                bad.push(format!(
                    "messages.jsonl line {} does not parse ({} bytes, the last {zeros} zero)",
                    i + 1,
                    data.len()
                ));
                break;
            }
        }
    }
    bad
}

/// A read of one version whose JSON did not parse, looked at again: the kernel race that
/// SEMANTICS names under "returns bytes of one version" (a reader holding a page of the
/// previous version while the new size comes in) tears one read, and sessfs' repeated
/// invalidations drop that page within 200 ms, so a later read is whole. Returns `None`
/// for such a torn read, or what is wrong: the same version still bad when read again
/// (sessfs served those bytes), or no good read within 5 s.
fn look_again(p: &Path, first: Version, bad: &[String]) -> Option<String> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(250));
        match read_whole(p) {
            Ok((v, data)) => {
                let now = wrong(p.file_name().unwrap_or_default(), v.0, &data);
                if now.is_empty() {
                    return None;
                }
                if v == first {
                    return Some(format!(
                        "{} (the same version read again {} ms later: {})",
                        bad.join("; "),
                        start.elapsed().as_millis(),
                        now.join("; ")
                    ));
                }
            }
            Err(true) => {}
            Err(false) => return None,
        }
    }
    Some(format!("{} (no whole read within 5 s)", bad.join("; ")))
}

/// One pass of the checking reader: every regular file under `dir` (not following links,
/// never entering `diff/`), read whole between two `stat`s. When the two agree the version
/// did not change during the read, so the read must be exactly `st_size` bytes, and JSON
/// must parse; JSON that does not is read again ([`look_again`]), and a torn read that
/// the next reads show whole is counted apart. Returns (files checked, reads that
/// straddled a change, torn reads).
fn check_pass(dir: &Path, problems: &Problems) -> (usize, usize, usize) {
    let (mut checked, mut straddled, mut torn) = (0, 0, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if m.is_dir() {
                if e.file_name() != "diff" {
                    stack.push(p);
                }
                continue;
            }
            let (v, data) = match read_whole(&p) {
                Ok(read) => read,
                Err(moved) => {
                    straddled += usize::from(moved);
                    continue;
                }
            };
            checked += 1;
            let bad = wrong(&e.file_name(), v.0, &data);
            if bad.is_empty() {
                continue;
            }
            let size_wrong = data.len() as u64 != v.0;
            let verdict = if size_wrong {
                Some(bad.join("; "))
            } else {
                look_again(&p, v, &bad)
            };
            match verdict {
                None => torn += 1,
                Some(what) => problems
                    .lock()
                    .expect("problems")
                    .push(format!("{}: {what}", p.display())),
            }
        }
    }
    (checked, straddled, torn)
}

/// A shell loop that runs `cmd` until the stop file exists and prints its pass count.
fn reader(mnt: &Path, stop: &Path, cmd: &str) -> std::process::Child {
    let script = format!(
        "n=0; while [ ! -e '{}' ]; do {cmd} >/dev/null 2>&1; n=$((n+1)); done; echo $n",
        stop.display()
    );
    Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(mnt)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn reader")
}

/// Every store sessfs reads from files and databases, in one home.
fn home_with_every_store() -> Home {
    let mut h = Home::empty();
    let p = h.path().to_path_buf();
    let written = [
        common::pi::write_stores(&p),
        common::claude::write_stores(&p),
        common::seeds_json::write_agentuse(&p),
        common::seeds_json::write_atsf(&p),
        common::agsh::write_agsh(&p),
    ];
    h.files
        .extend(written.into_iter().flatten().map(PathBuf::from));
    h
}

#[test]
fn the_mount_survives_stores_changing_under_its_readers() {
    let home = home_with_every_store();
    let mut targets: Vec<(PathBuf, Vec<u8>)> = home
        .files
        .iter()
        .filter(|p| p.is_file())
        .map(|p| (p.clone(), std::fs::read(p).expect("fixture")))
        .collect();
    // Two files with one native id keep the names they had while mounted (`id`, `id~2`);
    // once one of them turns to garbage and back, a fresh render may hand the names out
    // the other way round. That is the documented naming rule, not staleness, so the
    // files whose header id another file shares are left alone.
    let header_id = |bytes: &[u8]| {
        let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
        serde_json::from_slice::<serde_json::Value>(first)
            .ok()
            .and_then(|v| v.get("id").and_then(|i| i.as_str()).map(str::to_string))
    };
    let mut ids: BTreeMap<String, usize> = BTreeMap::new();
    for (_, b) in &targets {
        if let Some(id) = header_id(b) {
            *ids.entry(id).or_default() += 1;
        }
    }
    targets.retain(|(_, b)| header_id(b).is_none_or(|id| ids[&id] == 1));
    assert!(targets.len() >= 20, "only {} store files", targets.len());
    let mut fg = Foreground::new(&home);
    let mnt = fg.path().to_path_buf();
    let ctl = tempfile::tempdir().expect("temp dir");
    let stop = ctl.path().join("stop");

    let readers = vec![
        ("grep -r", reader(&mnt, &stop, "grep -r -c -e . .")),
        (
            "cat",
            reader(&mnt, &stop, "find . -name '*.md' -exec cat {} +"),
        ),
        ("find", reader(&mnt, &stop, "find . -type f")),
    ];
    let problems: Problems = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let (checked, straddled, torn, passes) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let checker = {
        let (mnt, problems, done) = (mnt.clone(), problems.clone(), done.clone());
        let (checked, straddled, torn, passes) = (
            checked.clone(),
            straddled.clone(),
            torn.clone(),
            passes.clone(),
        );
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let (c, s, t) = check_pass(&mnt, &problems);
                checked.fetch_add(c, Ordering::Relaxed);
                straddled.fetch_add(s, Ordering::Relaxed);
                torn.fetch_add(t, Ordering::Relaxed);
                passes.fetch_add(1, Ordering::Relaxed);
            }
        })
    };

    // Shake the stores.
    let mut rng = Lcg(0x005e_55f5);
    let mut counts: BTreeMap<Op, usize> = BTreeMap::new();
    let start = Instant::now();
    while start.elapsed() < CHAOS {
        let (path, original) = &targets[rng.below(targets.len())];
        let op = OPS[rng.below(OPS.len())];
        apply(op, path, original, &mut rng);
        *counts.entry(op).or_default() += 1;
        std::thread::sleep(Duration::from_millis(2 + rng.below(8) as u64));
    }
    let total: usize = counts.values().sum();

    // Stop the readers; a reader that does not come back means the mount hung.
    std::fs::write(&stop, b"").expect("stop file");
    let mut reader_passes = Vec::new();
    for (name, mut child) in readers {
        let t = Instant::now();
        loop {
            if let Some(status) = child.try_wait().expect("reader status") {
                assert!(status.success(), "{name} reader failed: {status}");
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(120),
                "the {name} reader hung: the mount stopped answering"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut out = String::new();
        use std::io::Read;
        child
            .stdout
            .take()
            .expect("stdout")
            .read_to_string(&mut out)
            .expect("reader output");
        reader_passes.push(format!("{name} {} passes", out.trim()));
    }
    done.store(true, Ordering::Relaxed);
    checker.join().expect("checker thread");

    eprintln!(
        "chaos: {:.1} s, {total} operations {counts:?}; readers: {}; checking reader: {} passes, {} files checked, {} reads straddled a change, {} torn by the kernel and whole when read again",
        start.elapsed().as_secs_f64(),
        reader_passes.join(", "),
        passes.load(Ordering::Relaxed),
        checked.load(Ordering::Relaxed),
        straddled.load(Ordering::Relaxed),
        torn.load(Ordering::Relaxed),
    );

    // The mount is alive and nothing panicked.
    let status = fg.child.try_wait().expect("sessfs status");
    assert!(
        status.is_none(),
        "sessfs exited during the chaos: {status:?}"
    );
    let log = std::fs::read_to_string(&fg.log).unwrap_or_default();
    let panics: Vec<&str> = log
        .lines()
        .filter(|l| l.to_ascii_lowercase().contains("panic"))
        .collect();
    assert!(panics.is_empty(), "panics in the log: {panics:#?}");
    let problems = problems.lock().expect("problems").clone();
    assert!(
        problems.is_empty(),
        "{} inconsistent reads, e.g. {:#?}",
        problems.len(),
        &problems[..problems.len().min(10)]
    );
    assert!(
        checked.load(Ordering::Relaxed) > 100,
        "the checking reader hardly read anything"
    );

    // Once the stores settle, the mount shows what `sessfs render` writes from them.
    let out = tempfile::tempdir().expect("temp dir");
    let settle = Instant::now();
    let mut round = 0;
    loop {
        round += 1;
        let target = out.path().join(format!("render-{round}"));
        let r = home.sessfs(&["render", target.to_str().expect("utf-8")]);
        assert!(r.status.success(), "render failed: {}", common::stderr(&r));
        // A mount keeps the directory of every agent whose store it found, empty once the
        // store's files are gone (an Aider history or a Crush database the chaos removed);
        // a render writes the directories of the stores it finds (SEMANTICS, "Agent
        // directories"). An empty agent directory is the same in both.
        for e in std::fs::read_dir(&mnt).expect("mount root").flatten() {
            let empty = std::fs::read_dir(e.path()).is_ok_and(|mut d| d.next().is_none());
            if empty && !target.join(e.file_name()).exists() {
                std::fs::create_dir(target.join(e.file_name())).expect("mkdir");
            }
        }
        let d = Command::new("diff")
            .args(["-r", "--no-dereference", "-x", "diff"])
            .arg(&target)
            .arg(&mnt)
            .output()
            .expect("diff");
        if d.status.success() {
            break;
        }
        // A guard against a mount that never catches up, not a timing assertion.
        assert!(
            settle.elapsed() < Duration::from_secs(60),
            "the mount never came to equal sessfs render:\n{}",
            common::stdout(&d).chars().take(12000).collect::<String>()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "chaos: the mount equals sessfs render {:?} after the stores settled",
        settle.elapsed()
    );
    let status = fg.child.try_wait().expect("sessfs status");
    assert!(status.is_none(), "sessfs exited: {status:?}");
}

/// Every state the chaos leaves the stores in renders to JSON that parses: the checking
/// reader's JSON check without a mount, so without the kernel's torn reads, over a dozen
/// rounds of the same operations on a third of the stores' files at a time.
#[test]
fn every_state_the_chaos_leaves_renders_json_that_parses() {
    let home = home_with_every_store();
    let targets: Vec<(PathBuf, Vec<u8>)> = home
        .files
        .iter()
        .filter(|p| p.is_file())
        .map(|p| (p.clone(), std::fs::read(p).expect("fixture")))
        .collect();
    let out = tempfile::tempdir().expect("temp dir");
    let mut rng = Lcg(0x0c4a_05e5);
    let (mut files, mut problems) = (0, Vec::new());
    for round in 0..12 {
        for (path, original) in &targets {
            if rng.below(3) == 0 {
                let op = OPS[rng.below(OPS.len())];
                apply(op, path, original, &mut rng);
            }
        }
        let target = out.path().join(format!("render-{round}"));
        let r = home.sessfs(&["render", target.to_str().expect("utf-8")]);
        assert!(r.status.success(), "render failed: {}", common::stderr(&r));
        for p in common::files_under(&target) {
            let data = std::fs::read(&p).expect("rendered file");
            files += 1;
            for what in wrong(p.file_name().unwrap_or_default(), data.len() as u64, &data) {
                problems.push(format!("round {round}: {}: {what}", p.display()));
            }
        }
    }
    assert!(files > 500, "only {files} rendered files checked");
    assert!(problems.is_empty(), "{problems:#?}");
}
