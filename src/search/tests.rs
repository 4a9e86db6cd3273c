use super::*;

#[test]
fn queries_read_words_phrases_and_prefixes() {
    let q = Query::parse(r#"cache "bug in ""x""" refact* a"#);
    assert_eq!(q.terms, vec!["cache", r#"bug in "x""#, "refact", "a"]);
    assert_eq!(
        q.grams().as_deref(),
        Some(
            r#""cac" AND "ach" AND "che" AND "bug" AND """x""" AND "ref" AND "efa" AND "fac" AND "act""#
        )
    );
    assert_eq!(Query::parse("a bc").grams(), None);
    assert_eq!(Query::parse("  ").terms, Vec::<String>::new());
}

#[test]
fn highlights_are_case_insensitive_and_merged() {
    let q = Query::parse("cache ach");
    assert_eq!(q.highlights("A Cache, a cache"), vec![(2, 7), (11, 16)]);
}

/// A store whose listing is one directory's `*.jsonl` files, each a session.
struct DirStore(crate::stores::Base);

impl crate::stores::Store for DirStore {
    fn base(&self) -> &crate::stores::Base {
        &self.0
    }
    fn list(&self) -> Vec<crate::stores::Listed> {
        crate::stores::walk_files(&self.0.roots[0].path, ".jsonl", 0)
            .into_iter()
            .map(|p| crate::stores::Listed::file("s", p, 0))
            .collect()
    }
    fn load(&self, l: &crate::stores::Listed) -> crate::model::Session {
        crate::model::Session::new(Agent::Pi, &l.id)
    }
    fn glance(&self, listed: &[crate::stores::Listed]) -> Option<crate::stores::Glance> {
        Some(crate::stores::Glance {
            dirs: vec![self.0.roots[0].path.clone()],
            files: listed.iter().map(|l| l.path.clone()).collect(),
        })
    }
}

fn dir_store(dir: &Path) -> DirStore {
    let root = crate::stores::Root::new(Agent::Pi, dir, "test");
    DirStore(crate::stores::Base::new(Agent::Pi, vec![root]))
}

fn set_mtime(p: &Path, ago: Duration) {
    std::fs::File::open(p)
        .unwrap()
        .set_times(std::fs::FileTimes::new().set_modified(SystemTime::now() - ago))
        .unwrap();
}

/// A directory that moved within [`RACY`] of the listing may hide an entry added in the
/// same tick of its mtime: no glance is taken of it. Once older, one is.
#[test]
fn a_directory_that_just_moved_is_not_vouched_for() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("a.jsonl"), "{}").unwrap();
    let store = dir_store(d.path());
    let listed = crate::stores::Store::list(&store);
    assert!(take_glance(&store, &listed, SystemTime::now()).is_none());
    set_mtime(d.path(), Duration::from_secs(3));
    let g = take_glance(&store, &listed, SystemTime::now()).expect("a glance");
    assert_eq!(g.sessions, 1);
    // What it stamps reads back as written.
    let bytes = zstd::stream::decode_all(g.paths.as_slice()).unwrap();
    let p = decode_paths(&bytes).unwrap();
    assert_eq!(p.parents.len(), 2, "{:?}", p.parents);
    assert_eq!(p.dirs.iter().filter(|d| **d).count(), 1);
    assert_eq!(encode_paths(&p), bytes);
    assert_eq!(
        fold(stamp_all(&p.parents, &p.entries).iter().map(|s| s.0)),
        g.stamp
    );
    // A file growing changes the stamp; nothing else does.
    std::fs::write(d.path().join("a.jsonl"), "{}\n").unwrap();
    assert_ne!(
        fold(stamp_all(&p.parents, &p.entries).iter().map(|s| s.0)),
        g.stamp
    );
}

#[test]
fn a_garbage_file_is_rebuilt() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("sub/index.sqlite3");
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(
        &p,
        b"this is not a database, just some bytes of garbage....",
    )
    .unwrap();
    let ix = Index::open(&p).expect("rebuilt");
    assert!(ix
        .search(&Query::parse("garbage"), &Options::default())
        .unwrap()
        .is_empty());
    // A foreign SQLite database is replaced too.
    drop(ix);
    std::fs::remove_file(&p).unwrap();
    let c = Connection::open(&p).unwrap();
    c.execute_batch("CREATE TABLE other(x);").unwrap();
    drop(c);
    assert!(Index::open(&p).is_ok());
}
