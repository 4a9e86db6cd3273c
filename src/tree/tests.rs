//! The virtual tree driven through [`Fs`]'s calls, with no mount: a fake store of one file
//! per session, real files and mtimes in a temporary directory.

use super::versions::{fingerprint, lies_under, Stater};
use super::{
    Fs, FsError, Invalidations, Kind, Options, Searcher, BESIDE_GAP, DIFF_FILES, ROOT_INO,
    SEARCH_DIR, SEARCH_QUERIES, TTL,
};
use crate::cache::SessionKey;
use crate::model::{Agent, Message, Role, Session};
use crate::stores::{Listed, Store};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The byte comparison agrees with `Path::starts_with` on the paths sessfs builds.
#[test]
fn lies_under_is_starts_with_by_components() {
    let cases = [
        ("/h/.claude/projects/p/a.jsonl", "/h/.claude/projects", true),
        (
            "/h/.claude/projects/p/a.jsonl",
            "/h/.claude/projects/",
            true,
        ),
        ("/h/.claude/projects", "/h/.claude/projects", true),
        ("/h/.claude/projects2/a.jsonl", "/h/.claude/projects", false),
        ("/h/.claude/project", "/h/.claude/projects", false),
        (
            "/h/.pi/agent/sessions/x.jsonl",
            "/h/.claude/projects",
            false,
        ),
        ("/anything", "/", true),
    ];
    for (p, dir, want) in cases {
        assert_eq!(
            lies_under(Path::new(p), Path::new(dir)),
            want,
            "{p} under {dir}"
        );
    }
}

/// An agentuse part file rewritten in place kept the old render for the life of the
/// mount: the part directory (the version source) changes neither size nor mtime.
#[test]
fn a_file_rewritten_in_place_inside_a_directory_source_moves_the_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let part = dir.path().join("part");
    std::fs::create_dir(&part).expect("mkdir");
    let f = part.join("01.json");
    std::fs::write(&f, b"{\"text\":\"a\"}").expect("write");
    let sources = vec![part.clone()];
    let (before, _) = fingerprint(&sources, &mut Stater::default());
    // Same inode, new bytes: the directory itself does not change.
    std::fs::write(&f, b"{\"text\":\"a longer text\"}").expect("rewrite");
    let (after, _) = fingerprint(&sources, &mut Stater::default());
    assert_ne!(before, after);
}

/// A store of sessions whose content is one file each: the file's text is the message.
struct FakeStore {
    base: crate::stores::Base,
    dir: PathBuf,
}

impl Store for FakeStore {
    fn base(&self) -> &crate::stores::Base {
        &self.base
    }
    fn list(&self) -> Vec<Listed> {
        let mut v: Vec<Listed> = std::fs::read_dir(&self.dir)
            .unwrap()
            .flatten()
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                Listed::file(name, e.path(), 0)
            })
            .collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    }
    fn load(&self, l: &Listed) -> Session {
        let text = std::fs::read_to_string(&l.path).unwrap_or_default();
        if text == "panic" {
            panic!("store bug");
        }
        let mut s = Session::new(Agent::Pi, l.id.clone());
        // `link:<id>` lines link a top-level child, `usd:<n>` lines are replies costing n.
        for line in text.lines() {
            if let Some(child) = line.strip_prefix("link:") {
                s.subagents.push(crate::model::Subagent {
                    name: child.to_string(),
                    unified_id: Some(format!("pi:{child}")),
                    ..Default::default()
                });
            } else if let Some(usd) = line.strip_prefix("usd:") {
                s.messages.push(Message {
                    role: Role::Assistant,
                    cost: usd.parse().ok(),
                    ..Default::default()
                });
            }
        }
        s.messages.insert(
            0,
            Message {
                role: Role::User,
                content: text,
                ..Default::default()
            },
        );
        s
    }
}

fn fs_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Fs) {
    let dir = tempfile::tempdir().unwrap();
    for (n, t) in files {
        std::fs::write(dir.path().join(n), t).unwrap();
    }
    let store = FakeStore {
        base: crate::stores::Base::new(Agent::Pi, vec![]),
        dir: dir.path().to_path_buf(),
    };
    (dir, Fs::new(vec![Box::new(store)], Options::default()))
}

/// Give the `i`th named file in `dir` the mtime `when(i)`.
fn set_mtimes<'a>(
    dir: &std::path::Path,
    names: impl Iterator<Item = &'a str>,
    when: impl Fn(u64) -> SystemTime,
) {
    for (i, n) in names.enumerate() {
        let f = std::fs::File::options()
            .write(true)
            .open(dir.join(n))
            .unwrap();
        f.set_modified(when(i as u64)).unwrap();
    }
}

/// A listing versions its sessions on several threads and stores the results together;
/// each session directory must still get its own file's mtime.
#[test]
fn a_listing_gives_each_session_its_own_mtime() {
    let names: Vec<String> = (0..600).map(|i| format!("s{i:04}")).collect();
    let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "text")).collect();
    let (dir, fs) = fs_with(&files);
    let when = |i: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + 61 * i);
    set_mtimes(dir.path(), names.iter().map(|n| n.as_ref()), when);
    let pi = fs.readdir(ROOT_INO).unwrap()[0].1.ino;
    let listed = fs.readdir(pi).unwrap();
    assert_eq!(listed.len(), 600);
    for (i, (name, attr)) in listed.iter().enumerate() {
        assert_eq!(name, &names[i]);
        assert_eq!(attr.mtime, when(i as u64), "{name}");
        assert_eq!(
            fs.getattr(attr.ino).unwrap().mtime,
            when(i as u64),
            "{name}"
        );
    }
}

/// The warm-up versions every session before any request: the first listing then has
/// nothing left to `stat`.
#[test]
fn the_warm_up_gives_each_session_its_mtime_before_any_request() {
    let names = ["a", "b", "c"];
    let (dir, fs) = fs_with(&[("a", "x"), ("b", "y"), ("c", "z")]);
    let when = |i: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000 + 7 * i);
    set_mtimes(dir.path(), names.iter().map(|n| n.as_ref()), when);
    let fs = Arc::new(fs);
    fs.start_warm_up().unwrap().join().unwrap();
    let st = fs.state();
    let sessions = &st.agents[&Agent::Pi].sessions;
    assert_eq!(sessions.len(), 3);
    for (i, n) in names.iter().enumerate() {
        assert_eq!(sessions[*n].mtime, when(i as u64), "{n}");
        assert!(sessions[*n].checked.elapsed() < TTL, "{n}");
    }
}

/// The mount lists every store as it opens (and the warm-up may list and version them)
/// before its change watcher is in place; a session that appears or grows in between is
/// reported by no event. Watching must therefore not trust anything looked at before the
/// watches were in place: the first request after it lists and versions again.
#[test]
fn nothing_looked_at_before_the_watches_are_in_place_is_trusted_after() {
    let (dir, fs) = fs_with(&[("a", "one")]);
    let fs = Arc::new(fs);
    // As the mount opens: every store listed, and (a warm-up started early) versioned.
    assert_eq!(fs.sessions().len(), 1);
    fs.start_warm_up().unwrap().join().unwrap();
    // Before the watches exist: a new session, and an append to the old one.
    std::fs::write(dir.path().join("b"), "two").unwrap();
    std::fs::write(dir.path().join("a"), "one, then more").unwrap();
    let _watching = fs.watch();
    // The mount's first requests, well inside TTL of the listing and the checks above.
    let pi = fs.lookup(ROOT_INO, "pi").unwrap().ino;
    let names: Vec<String> = fs
        .readdir(pi)
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["a", "b"]);
    let t = String::from_utf8(fs.read_path("pi/a/transcript.md").unwrap()).unwrap();
    assert!(t.contains("one, then more"), "{t}");
}

/// A session's `costWithSubagents` holds the top-level children it links, their own
/// children in turn, each once (a cycle of links stops), and follows a child's change.
#[test]
fn linked_children_count_in_the_cost_with_subagents() {
    let (dir, fs) = fs_with(&[
        ("a", "link:b\nusd:1"),
        ("b", "link:c\nlink:c\nusd:10"),
        ("c", "link:a\nusd:100"),
        ("d", "usd:1000"),
    ]);
    let total = |name: &str| -> serde_json::Value {
        let meta = fs.read_path(&format!("pi/{name}/meta.json")).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&meta).unwrap();
        v["costWithSubagents"]["totalUsd"].clone()
    };
    assert_eq!(total("a"), 111.0);
    assert_eq!(total("b"), 110.0 + 1.0, "b links c, which links a");
    assert_eq!(total("d"), serde_json::Value::Null, "d spawned nothing");
    let own = fs.read_path("pi/a/meta.json").unwrap();
    let own: serde_json::Value = serde_json::from_slice(&own).unwrap();
    assert_eq!(own["cost"]["totalUsd"], 1.0);

    put(
        &dir.path().join("c"),
        "link:a\nusd:200",
        SystemTime::now() + Duration::from_secs(5),
    );
    std::thread::sleep(TTL + Duration::from_millis(100));
    assert_eq!(total("a"), 211.0, "a's meta.json follows its child c");
}

/// Write `text` to `p` and give it the mtime `when`.
fn put(p: &std::path::Path, text: &str, when: SystemTime) {
    std::fs::write(p, text).unwrap();
    let f = std::fs::File::options().write(true).open(p).unwrap();
    f.set_modified(when).unwrap();
}

/// [`fs_with`], the store's directory also its root (so the watches reach it), and a
/// count of its listings.
fn rooted_fs_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Arc<Fs>, Arc<AtomicU64>) {
    let dir = tempfile::tempdir().unwrap();
    for (n, t) in files {
        std::fs::write(dir.path().join(n), t).unwrap();
    }
    let lists = Arc::new(AtomicU64::new(0));
    let root = crate::stores::Root::new(Agent::Pi, dir.path(), "test");
    let store = RootedStore {
        inner: FakeStore {
            base: crate::stores::Base::new(Agent::Pi, vec![root]),
            dir: dir.path().to_path_buf(),
        },
        lists: lists.clone(),
    };
    let fs = Arc::new(Fs::new(vec![Box::new(store)], Options::default()));
    (dir, fs, lists)
}

/// [`FakeStore`] under a root the watches can reach, counting its listings.
struct RootedStore {
    inner: FakeStore,
    lists: Arc<AtomicU64>,
}

impl Store for RootedStore {
    fn base(&self) -> &crate::stores::Base {
        &self.inner.base
    }
    fn list(&self) -> Vec<Listed> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list()
    }
    fn load(&self, l: &Listed) -> Session {
        self.inner.load(l)
    }
}

/// With every root of a store watched, its listing is trusted past [`TTL`]: a cold
/// `ls` on a mount that has sat idle does not list the store again. An event that may
/// change the listing, and the slow poll, do.
#[test]
fn a_watched_store_is_listed_again_on_events_not_on_age() {
    let (dir, fs, lists) = rooted_fs_with(&[("a", "one")]);
    let _watching = fs.watch();
    let pi = fs.lookup(ROOT_INO, "pi").unwrap().ino;
    let names = |fs: &Arc<Fs>| -> Vec<String> {
        fs.readdir(pi)
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    };
    assert_eq!(names(&fs), ["a"]);
    let listed = lists.load(Ordering::SeqCst);
    std::thread::sleep(TTL + Duration::from_millis(50));
    assert_eq!(names(&fs), ["a"]);
    assert_eq!(
        lists.load(Ordering::SeqCst),
        listed,
        "listed again for its age"
    );

    let b = dir.path().join("b");
    std::fs::write(&b, "two").unwrap();
    fs.changes_for(&[b], true);
    assert_eq!(lists.load(Ordering::SeqCst), listed + 1);
    assert_eq!(names(&fs), ["a", "b"]);
    fs.poll_changes();
    assert_eq!(lists.load(Ordering::SeqCst), listed + 2);
}

/// Without watches the mount polls every [`POLL`], and a listing keeps its [`TTL`]
/// there: a poll inside it lists nothing again.
#[test]
fn an_unwatched_store_is_listed_again_by_age_not_by_every_poll() {
    let (_dir, fs, lists) = rooted_fs_with(&[("a", "one")]);
    let pi = fs.lookup(ROOT_INO, "pi").unwrap().ino;
    fs.readdir(pi).unwrap();
    let listed = lists.load(Ordering::SeqCst);
    fs.poll_changes();
    assert_eq!(lists.load(Ordering::SeqCst), listed);
    std::thread::sleep(TTL + Duration::from_millis(50));
    fs.poll_changes();
    assert_eq!(lists.load(Ordering::SeqCst), listed + 1);
}

/// With its store watched, a session's check stands past [`TTL`] (an idle mount's cold
/// `ls` costs no `stat` per session), until an event reports a change to its files:
/// then it is checked again at its next use, also when the kernel had not seen it yet
/// (versioned by the warm-up only), and after the slow poll.
#[test]
fn a_watched_session_is_checked_again_on_events_not_on_age() {
    let (dir, fs, _) = rooted_fs_with(&[]);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let t1 = t0 + Duration::from_secs(60);
    put(&a, "one", t0);
    put(&b, "uno", t0);
    let _watching = fs.watch();
    fs.start_warm_up().unwrap().join().unwrap();
    let text = |s: &str| {
        let bytes = fs.read_path(&format!("pi/{s}/messages.jsonl")).unwrap();
        String::from_utf8(bytes).unwrap()
    };
    assert!(text("b").contains("uno"));
    std::thread::sleep(TTL + Duration::from_millis(50));
    put(&a, "one two", t1);
    put(&b, "uno dos", t1);
    // An event for `a`, which the kernel has not seen yet; none for `b`.
    fs.changes_for(std::slice::from_ref(&a), false);
    let pi = fs.lookup(ROOT_INO, "pi").unwrap().ino;
    let mtimes = || -> Vec<(String, SystemTime)> {
        let listed = fs.readdir(pi).unwrap().into_iter();
        listed.map(|(n, attr)| (n, attr.mtime)).collect()
    };
    assert_eq!(mtimes(), [("a".to_string(), t1), ("b".to_string(), t0)]);
    assert!(!text("b").contains("dos"), "{}", text("b"));
    fs.poll_changes();
    assert_eq!(mtimes(), [("a".to_string(), t1), ("b".to_string(), t1)]);
    assert!(text("b").contains("uno dos"), "{}", text("b"));
}

/// The agent directory's kept listing goes with a new listing of the store: a session
/// that appears or goes shows at the next `ls`, with the inodes the others had.
#[test]
fn a_kept_agent_listing_follows_sessions_that_come_and_go() {
    let (dir, fs, _) = rooted_fs_with(&[]);
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    put(&dir.path().join("a"), "one", t0);
    put(&dir.path().join("b"), "uno", t0);
    let _watching = fs.watch();
    fs.start_warm_up().unwrap().join().unwrap();
    let pi = fs.lookup(ROOT_INO, "pi").unwrap().ino;
    let names = || -> Vec<(String, u64)> {
        let listed = fs.readdir(pi).unwrap().into_iter();
        listed.map(|(n, attr)| (n, attr.ino)).collect()
    };
    let before = names();
    assert_eq!(
        before.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    std::fs::remove_file(dir.path().join("a")).unwrap();
    fs.changes_for(&[dir.path().join("a")], false);
    assert_eq!(names(), [before[1].clone()]);
    put(&dir.path().join("c"), "eins", t0);
    fs.changes_for(&[dir.path().join("c")], false);
    let after = names();
    assert_eq!(
        after.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["b", "c"]
    );
    assert_eq!(after[0].1, before[1].1, "b keeps its inode");
}

/// A database given as a root itself (agsh's, `OPENCODE_DB`): its sessions' sources are
/// the database and its `-wal`, both watched through their directory.
struct DbRootStore {
    base: crate::stores::Base,
    db: PathBuf,
}

impl Store for DbRootStore {
    fn base(&self) -> &crate::stores::Base {
        &self.base
    }
    fn list(&self) -> Vec<Listed> {
        let mut l = Listed::file("a", self.db.clone(), 0);
        l.sources
            .push(crate::stores::sqlite::companion(&self.db, "-wal"));
        vec![l]
    }
    fn load(&self, l: &Listed) -> Session {
        let mut s = Session::new(Agent::Agsh, l.id.clone());
        s.messages.push(Message {
            role: Role::User,
            content: std::fs::read_to_string(&self.db).unwrap_or_default(),
            ..Default::default()
        });
        s
    }
}

/// A session whose sources are a database root and its `-wal` is trusted like one under
/// a watched directory: a write nobody reported leaves its check standing, and the
/// event for the `-wal` moves it.
#[test]
fn a_database_root_and_its_wal_are_watched_sources() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let wal = crate::stores::sqlite::companion(&db, "-wal");
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    put(&db, "one", t0);
    put(&wal, "", t0);
    let root = crate::stores::Root::new(Agent::Agsh, &db, "test");
    let store = DbRootStore {
        base: crate::stores::Base::new(Agent::Agsh, vec![root]),
        db: db.clone(),
    };
    let fs = Arc::new(Fs::new(vec![Box::new(store)], Options::default()));
    let _watching = fs.watch();
    fs.start_warm_up().unwrap().join().unwrap();
    std::thread::sleep(TTL + Duration::from_millis(50));
    put(&wal, "frames", t0 + Duration::from_secs(60));
    let agsh = fs.lookup(ROOT_INO, "agsh").unwrap().ino;
    let mtime = || fs.readdir(agsh).unwrap()[0].1.mtime;
    assert_eq!(mtime(), t0);
    fs.changes_for(std::slice::from_ref(&wal), false);
    assert_eq!(mtime(), t0 + Duration::from_secs(60));
}

#[test]
fn sizes_match_reads_and_inodes_are_stable() {
    let (_d, fs) = fs_with(&[("a", "hello"), ("b", "world")]);
    let root = fs.readdir(ROOT_INO).unwrap();
    assert_eq!(root.len(), 1);
    assert_eq!(root[0].0, "pi");
    let sessions = fs.readdir(root[0].1.ino).unwrap();
    assert_eq!(sessions.len(), 2);
    let files = fs.readdir(sessions[0].1.ino).unwrap();
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"transcript.md") && names.contains(&"diff"));
    for (_, a) in files.iter().filter(|(_, a)| a.kind == Kind::File) {
        let data = fs.read_ino(a.ino, 0, u32::MAX).unwrap();
        assert_eq!(data.len() as u64, a.size);
    }
    let again = fs.lookup(sessions[0].1.ino, "meta.json").unwrap();
    assert_eq!(
        Some(again.ino),
        files
            .iter()
            .find(|(n, _)| n == "meta.json")
            .map(|(_, a)| a.ino)
    );
}

/// What a listing pushes: the files it just sent, no directory, nothing over the size
/// limit, each with the bytes a read of its inode gives.
#[test]
fn a_listing_pushes_its_small_files_with_their_inodes() {
    let (_d, fs) = fs_with(&[("a", "hello")]);
    let dir = fs.resolve("pi/a").unwrap().ino;
    let listed = fs.readdir(dir).unwrap();
    let name_of = |ino: u64| {
        listed
            .iter()
            .find(|(_, a)| a.ino == ino)
            .map(|(n, _)| n.as_str())
            .unwrap()
    };
    let pushed = fs.pushable(dir, &listed, u64::MAX);
    let mut names: Vec<&str> = pushed.iter().map(|(ino, _)| name_of(*ino)).collect();
    names.sort();
    assert_eq!(names, ["messages.jsonl", "meta.json", "transcript.md"]);
    for (ino, bytes) in &pushed {
        assert_eq!(**bytes, fs.read_ino(*ino, 0, u32::MAX).unwrap());
    }
    for name in names {
        let size = listed.iter().find(|(n, _)| n == name).unwrap().1.size;
        let under = fs.pushable(dir, &listed, size - 1);
        assert!(under
            .iter()
            .all(|(ino, b)| name_of(*ino) != name && b.len() < size as usize));
        let at = fs.pushable(dir, &listed, size);
        assert!(at.iter().any(|(ino, _)| name_of(*ino) == name));
    }
    // A directory listed by its own inode pushes nothing for another's listing.
    assert!(fs.pushable(ROOT_INO, &listed, u64::MAX).is_empty());
}

/// What a READ of a lost file pushes: the other files of its directory the kernel has
/// inodes for, with the bytes a read of each gives; never the file itself.
#[test]
fn a_read_pushes_the_files_beside_it() {
    let (d, fs) = fs_with(&[("a", "hello")]);
    let dir = fs.resolve("pi/a").unwrap().ino;
    let listed = fs.readdir(dir).unwrap();
    let ino_of = |name: &str| listed.iter().find(|(n, _)| n == name).unwrap().1.ino;
    let transcript = ino_of("transcript.md");
    let pushed = fs.pushable_beside(transcript, u64::MAX);
    let mut inos: Vec<u64> = pushed.iter().map(|(ino, _)| *ino).collect();
    inos.sort();
    let mut want = vec![ino_of("messages.jsonl"), ino_of("meta.json")];
    want.sort();
    assert_eq!(inos, want);
    for (ino, bytes) in &pushed {
        assert_eq!(**bytes, fs.read_ino(*ino, 0, u32::MAX).unwrap());
    }
    let meta = listed.iter().find(|(n, _)| n == "meta.json").unwrap().1;
    assert!(fs
        .pushable_beside(transcript, meta.size - 1)
        .iter()
        .all(|(ino, _)| *ino != meta.ino));
    // Directories and the root push nothing.
    assert!(fs.pushable_beside(dir, u64::MAX).is_empty());
    assert!(fs.pushable_beside(ROOT_INO, u64::MAX).is_empty());
    // A version the kernel has not been told about yet pushes nothing: the sizes it
    // holds are the old version's.
    std::fs::write(d.path().join("a"), "hello and a longer reply").unwrap();
    std::thread::sleep(TTL + Duration::from_millis(50));
    fs.read_ino(transcript, 0, u32::MAX).unwrap();
    assert!(fs.pushable_beside(transcript, u64::MAX).is_empty());
    assert!(fs.poll_changes().files.contains(&transcript));
    assert_eq!(fs.pushable_beside(transcript, u64::MAX).len(), 2);
}

#[test]
fn files_beside_a_read_are_due_once_per_directory_a_second() {
    let (_d, fs) = fs_with(&[("a", "hello"), ("b", "world")]);
    let file = |path: &str| fs.resolve(path).unwrap().ino;
    let (a_meta, a_transcript) = (file("pi/a/meta.json"), file("pi/a/transcript.md"));
    assert!(fs.beside_due(a_meta));
    // The same directory, through any of its files, waits; another session does not.
    assert!(!fs.beside_due(a_transcript));
    assert!(!fs.beside_due(a_meta));
    assert!(fs.beside_due(file("pi/b/meta.json")));
    // Directories and the root have no files beside them.
    assert!(!fs.beside_due(file("pi/a")));
    assert!(!fs.beside_due(ROOT_INO));
    std::thread::sleep(BESIDE_GAP + Duration::from_millis(20));
    assert!(fs.beside_due(a_transcript));
}

#[test]
fn diff_dir_lists_nothing_and_renders_on_lookup() {
    let (_d, fs) = fs_with(&[("a", "hello"), ("b", "world")]);
    let diff = fs.resolve("pi/a/diff").unwrap();
    assert!(fs.readdir(diff.ino).unwrap().is_empty());
    let pi = fs.lookup(diff.ino, "pi").unwrap();
    assert!(fs.readdir(pi.ino).unwrap().is_empty());
    assert!(fs.lookup(pi.ino, "b.diff").is_ok());
    assert_eq!(fs.lookup(pi.ino, "zzz.diff"), Err(FsError::NotFound));
}

/// Every session whose id contains the query.
struct IdSearcher;

impl Searcher for IdSearcher {
    fn sessions(
        &self,
        fs: &Fs,
        query: &str,
        limit: usize,
    ) -> std::result::Result<Vec<SessionKey>, String> {
        let mut v: Vec<SessionKey> = fs
            .sessions()
            .into_iter()
            .filter(|k| k.name.contains(query))
            .collect();
        v.truncate(limit);
        Ok(v)
    }
}

#[test]
fn search_dir_lists_nothing_links_matches_and_forgets_old_queries() {
    let (_d, fs) = fs_with(&[("alpha", "x"), ("beta", "y")]);
    assert!(
        fs.lookup(ROOT_INO, SEARCH_DIR).is_err(),
        "no searcher, no search/"
    );
    fs.set_searcher(Box::new(IdSearcher));
    let root: Vec<String> = fs
        .readdir(ROOT_INO)
        .unwrap()
        .into_iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(root, vec!["pi", "search"]);
    let search = fs.lookup(ROOT_INO, SEARCH_DIR).unwrap();
    assert!(fs.readdir(search.ino).unwrap().is_empty());
    let q = fs.lookup(search.ino, "alp").unwrap();
    assert_eq!(q.kind, Kind::Dir);
    let links = fs.readdir(q.ino).unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].0, "pi:alpha");
    assert_eq!(fs.readlink(links[0].1.ino).unwrap(), "../../pi/alpha");
    assert_eq!(
        fs.resolve("search/alp/pi:alpha").unwrap().kind,
        Kind::Symlink
    );
    assert_eq!(fs.resolve("search/alp/pi:beta"), Err(FsError::NotFound));
    assert_eq!(fs.resolve("search/.gitignore"), Err(FsError::NotFound));
    // Many queries: the table stays bounded and the oldest query is forgotten.
    let permanent = fs.state().nodes.len();
    for i in 0..(3 * SEARCH_QUERIES) {
        let q = fs.lookup(search.ino, &format!("a{i}")).unwrap();
        fs.readdir(q.ino).unwrap();
    }
    assert!(fs.state().search.nodes.len() <= 2 * SEARCH_QUERIES);
    assert_eq!(
        fs.state().nodes.len(),
        permanent,
        "no permanent inode per query"
    );
    assert_eq!(fs.getattr(q.ino), Err(FsError::NotFound));
    // Looked up again, it works again.
    assert_eq!(
        fs.resolve("search/alp/pi:alpha").unwrap().kind,
        Kind::Symlink
    );
}

#[test]
fn diff_files_are_bounded_and_work_again_when_looked_up_again() {
    let names: Vec<String> = (0..40).map(|i| format!("s{i:02}")).collect();
    let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "text")).collect();
    let (_d, fs) = fs_with(&files);
    let first = fs.resolve("pi/s00/diff/pi/s01.diff").unwrap();
    let text = fs.read_ino(first.ino, 0, 4096).unwrap();
    let permanent = fs.state().nodes.len();
    // 40 × 40 pairs, more than DIFF_FILES.
    for a in &names {
        for b in &names {
            let f = fs.resolve(&format!("pi/{a}/diff/pi/{b}.diff")).unwrap();
            assert!(fs.read_ino(f.ino, 0, 10).is_ok());
        }
    }
    const { assert!(40 * 40 > DIFF_FILES) };
    assert!(fs.state().diffs.nodes.len() <= DIFF_FILES);
    // Per session: its directory, `diff/` and `diff/pi/`.
    assert!(
        fs.state().nodes.len() <= permanent + 40 * 3,
        "no permanent inode per pair"
    );
    assert!(fs.cache.stats().entries <= DIFF_FILES + 40 * 4);
    assert_eq!(fs.getattr(first.ino), Err(FsError::NotFound));
    let again = fs.resolve("pi/s00/diff/pi/s01.diff").unwrap();
    assert_eq!(fs.read_ino(again.ino, 0, 4096).unwrap(), text);
}

#[test]
fn a_panicking_store_costs_a_warning_not_the_tree() {
    let (_d, fs) = fs_with(&[("a", "panic"), ("b", "fine")]);
    let meta = fs.read_path("pi/a/meta.json").unwrap();
    assert!(String::from_utf8_lossy(&meta).contains("internal error"));
    assert!(fs.read_path("pi/b/transcript.md").is_ok());
}

/// [`FakeStore`] with its directory as its root, listing by name, counting listings.
struct NamedStore {
    inner: FakeStore,
    lists: Arc<std::sync::atomic::AtomicUsize>,
}

impl Store for NamedStore {
    fn base(&self) -> &crate::stores::Base {
        &self.inner.base
    }
    /// As [`FakeStore`]'s, and a session named `fork` also reads `a`.
    fn list(&self) -> Vec<Listed> {
        self.lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut v = self.inner.list();
        for l in v.iter_mut().filter(|l| l.id == "fork") {
            l.sources.push(self.inner.dir.join("a"));
        }
        v
    }
    fn load(&self, l: &Listed) -> Session {
        self.inner.load(l)
    }
    fn keeps_listing(&self, l: &Listed) -> bool {
        std::fs::read_to_string(&l.path).is_ok_and(|t| t != "rename me")
    }
}

/// A write to a session's own file re-checks that session, and the sessions that read
/// that file too, and lists nothing; a new file, a write the watcher cannot place, or
/// one after which the store would list the session differently, lists the store
/// again.
#[test]
fn a_write_to_one_session_lists_nothing_again() {
    let dir = tempfile::tempdir().unwrap();
    for (n, t) in [("a", "one"), ("b", "two"), ("fork", "four")] {
        std::fs::write(dir.path().join(n), t).unwrap();
    }
    let lists = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let root = crate::stores::Root::new(Agent::Pi, dir.path(), "test");
    let store = NamedStore {
        inner: FakeStore {
            base: crate::stores::Base::new(Agent::Pi, vec![root]),
            dir: dir.path().to_path_buf(),
        },
        lists: lists.clone(),
    };
    let fs = Fs::new(vec![Box::new(store)], Options::default());
    let listed = || lists.load(std::sync::atomic::Ordering::SeqCst);
    let a = fs.resolve("pi/a/transcript.md").unwrap();
    let b = fs.resolve("pi/b/transcript.md").unwrap();
    let fork = fs.resolve("pi/fork/transcript.md").unwrap();
    let before = listed();
    let lists_since = |n: usize, why: &str| assert_eq!(listed(), before + n, "{why}");

    let file_a = dir.path().join("a");
    std::fs::write(&file_a, "one and more").unwrap();
    let inv = fs.changes_for(std::slice::from_ref(&file_a), false);
    assert!(inv.files.contains(&a.ino), "{inv:?}");
    assert!(
        inv.files.contains(&fork.ino),
        "a session reading a: {inv:?}"
    );
    assert!(!inv.files.contains(&b.ino), "{inv:?}");
    lists_since(0, "a write to a session's own file lists the store");

    let file_c = dir.path().join("c");
    std::fs::write(&file_c, "three").unwrap();
    let inv = fs.changes_for(std::slice::from_ref(&file_c), false);
    lists_since(1, "a write to an unknown file lists the store");
    let pi = fs.resolve("pi").unwrap();
    assert_eq!(inv.entries, vec![(pi.ino, "c".to_string())]);

    std::fs::write(&file_a, "one, more and more").unwrap();
    fs.changes_for(std::slice::from_ref(&file_a), true);
    lists_since(2, "a batch with a create lists the store");

    std::fs::write(&file_a, "rename me").unwrap();
    fs.changes_for(std::slice::from_ref(&file_a), false);
    lists_since(3, "a write the store lists anew lists it");
}

/// The kernel keeps a file's cached pages while its size and mtime stay: a new version
/// whose sources kept their mtime (two writes in one tick of a coarse clock, a file put
/// back with an older mtime) still moves the session's mtime, and it never goes back.
#[test]
fn every_new_version_moves_the_mtime_forward() {
    let (d, fs) = fs_with(&[("a", "one")]);
    let f = d.path().join("a");
    let t = fs.resolve("pi/a/transcript.md").unwrap();
    let first = t.mtime;
    assert_eq!(first, std::fs::metadata(&f).unwrap().modified().unwrap());
    std::fs::write(&f, "one and more").unwrap();
    let file = std::fs::File::options().write(true).open(&f).unwrap();
    file.set_modified(first).unwrap();
    std::thread::sleep(TTL + Duration::from_millis(50));
    let t = fs.getattr(t.ino).unwrap();
    assert_eq!(
        t.size,
        fs.read_ino(t.ino, 0, u32::MAX).unwrap().len() as u64
    );
    assert!(t.mtime > first, "{:?} after {first:?}", t.mtime);
    let second = t.mtime;
    std::fs::write(&f, "one, more and more").unwrap();
    file.set_modified(first - Duration::from_secs(60)).unwrap();
    std::thread::sleep(TTL + Duration::from_millis(50));
    assert!(fs.getattr(t.ino).unwrap().mtime > second, "an older mtime");
}

#[test]
fn poll_changes_names_what_the_kernel_must_forget() {
    let (d, fs) = fs_with(&[("a", "one"), ("b", "two")]);
    let t = fs.resolve("pi/a/transcript.md").unwrap();
    let pi = fs.resolve("pi").unwrap();
    assert_eq!(fs.poll_changes(), Invalidations::default());
    std::fs::write(d.path().join("a"), "one and more").unwrap();
    std::fs::write(d.path().join("c"), "three").unwrap();
    std::thread::sleep(TTL + Duration::from_millis(50));
    let inv = fs.poll_changes();
    assert!(inv.files.contains(&t.ino), "{inv:?}");
    assert!(inv.inodes.contains(&pi.ino));
    assert_eq!(inv.entries, vec![(pi.ino, "c".to_string())]);
    assert!(inv.gone.is_empty(), "{inv:?}");
    assert_eq!(fs.poll_changes(), Invalidations::default());
    std::fs::remove_file(d.path().join("b")).unwrap();
    std::thread::sleep(TTL + Duration::from_millis(50));
    let inv = fs.poll_changes();
    assert_eq!(inv.gone, vec![(pi.ino, "b".to_string())]);
    assert!(inv.entries.is_empty(), "{inv:?}");
}

#[test]
fn a_change_is_seen_after_the_ttl() {
    let (d, fs) = fs_with(&[("a", "one")]);
    let before = fs.read_path("pi/a/messages.jsonl").unwrap();
    std::fs::write(d.path().join("a"), "one two three").unwrap();
    std::thread::sleep(TTL + Duration::from_millis(50));
    let after = fs.read_path("pi/a/messages.jsonl").unwrap();
    assert_ne!(before, after);
    assert_eq!(fs.render_count(), 2);
}

/// Sessions sharing one file (`id:text` lines), versioned by their own line, as a
/// SQLite store versions a session by its own rows.
struct SharedFileStore {
    base: crate::stores::Base,
    file: PathBuf,
}

impl SharedFileStore {
    fn line(&self, id: &str) -> Option<String> {
        std::fs::read_to_string(&self.file)
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{id}:")).map(str::to_string))
    }
}

impl Store for SharedFileStore {
    fn base(&self) -> &crate::stores::Base {
        &self.base
    }
    fn list(&self) -> Vec<Listed> {
        ["a", "b"]
            .iter()
            .map(|id| Listed::file(*id, self.file.clone(), 0))
            .collect()
    }
    fn load(&self, l: &Listed) -> Session {
        let mut s = Session::new(Agent::Pi, l.id.clone());
        s.messages.push(Message {
            role: Role::User,
            content: self.line(&l.id).unwrap_or_default(),
            ..Default::default()
        });
        s
    }
    fn versions(&self, listed: &[&Listed]) -> Vec<Option<u64>> {
        listed
            .iter()
            .map(|l| self.line(&l.id).map(|t| t.len() as u64))
            .collect()
    }
}

#[test]
fn a_store_version_rerenders_only_the_session_that_changed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shared");
    std::fs::write(&file, "a:one\nb:two\n").unwrap();
    let store = SharedFileStore {
        base: crate::stores::Base::new(Agent::Pi, vec![]),
        file: file.clone(),
    };
    let fs = Fs::new(vec![Box::new(store)], Options::default());
    fs.read_path("pi/a/transcript.md").unwrap();
    fs.read_path("pi/b/transcript.md").unwrap();
    assert_eq!(fs.render_count(), 2);
    assert_eq!(fs.poll_changes(), Invalidations::default());
    // The shared file changes (size and mtime) but only b's rows do.
    std::fs::write(&file, "a:one\nb:two and three\n").unwrap();
    std::thread::sleep(TTL + Duration::from_millis(50));
    let b = fs.resolve("pi/b/transcript.md").unwrap();
    let a = fs.resolve("pi/a/transcript.md").unwrap();
    // Sizes are known only by rendering: b renders again, a does not.
    assert_eq!(fs.render_count(), 3);
    let inv = fs.poll_changes();
    assert!(inv.files.contains(&b.ino), "{inv:?}");
    assert!(!inv.files.contains(&a.ino), "{inv:?}");
    fs.read_path("pi/a/transcript.md").unwrap();
    let t = fs.read_path("pi/b/transcript.md").unwrap();
    assert!(String::from_utf8_lossy(&t).contains("two and three"));
    assert_eq!(fs.render_count(), 3, "only b was rendered again");
}
