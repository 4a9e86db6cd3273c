//! Shared harness for the store fuzz targets.
//!
//! Each target writes the fuzzer's bytes where one agent keeps its sessions, inside a private
//! `$HOME` under /dev/shm, then lists, loads and renders every session exactly as the mount
//! would. Going through the public store API (not one parser function) keeps the targets
//! valid while the stores' insides change, and covers listing, parsing and rendering at once.
//! A target "finds" something when sessfs panics, hangs or runs out of memory on the input.

use sessfs::model::Agent;
use sessfs::stores::{self, Env};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A fresh empty home per process (targets run single-threaded).
pub fn home() -> &'static Path {
    static HOME: OnceLock<PathBuf> = OnceLock::new();
    HOME.get_or_init(|| {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("sessfs-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("fuzz home");
        dir
    })
}

/// Remove everything under the home but keep the home itself.
pub fn clear() {
    if let Ok(rd) = std::fs::read_dir(home()) {
        for e in rd.flatten() {
            let _ = std::fs::remove_dir_all(e.path()).or_else(|_| std::fs::remove_file(e.path()));
        }
    }
}

/// Write `bytes` at `rel` under the home, creating directories.
pub fn put(rel: &str, bytes: &[u8]) -> PathBuf {
    let p = home().join(rel);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).expect("fuzz dir");
    }
    std::fs::write(&p, bytes).expect("fuzz file");
    p
}

/// List, load and render every session of `agents`' stores found under the home, exactly as
/// the mount would. Only the named stores are opened, so an input costs one parse, not a
/// scan of every agent's places.
pub fn load_and_render(agents: &[Agent]) {
    load_and_render_in(&Env::at_home(home()), agents);
}

/// [`load_and_render`] with discovery reading `env` (a store whose default place is outside
/// the home, such as ShellGPT's temporary directory, is pointed into it by a variable).
pub fn load_and_render_in(env: &Env, agents: &[Agent]) {
    for &agent in agents {
        let Some(spec) = stores::spec(agent) else {
            continue;
        };
        let roots: Vec<_> = (spec.candidates)(env)
            .into_iter()
            .filter(|r| r.path.exists())
            .collect();
        if roots.is_empty() {
            continue;
        }
        let store = (spec.open)(roots);
        for listed in store.list() {
            let session = store.load(&listed);
            let bundle = sessfs::render::render_session(&session);
            std::hint::black_box(bundle.byte_size());
        }
    }
}

/// A fresh SQLite database at `rel` under the home, built from `ddl`.
pub fn database(rel: &str, ddl: &str) -> rusqlite::Connection {
    let db = home().join(rel);
    std::fs::create_dir_all(db.parent().expect("parent")).expect("dir");
    let c = rusqlite::Connection::open(&db).expect("db");
    c.execute_batch(ddl).expect("ddl");
    c
}

/// Split the input at `0xFF 0xFE` markers into at most `n` parts (missing parts are empty),
/// so one input can fill several files of a JSON-tree store.
pub fn parts(data: &[u8], n: usize) -> Vec<&[u8]> {
    let mut out = Vec::with_capacity(n);
    let mut rest = data;
    while out.len() + 1 < n {
        match rest.windows(2).position(|w| w == [0xFF, 0xFE]) {
            Some(i) => {
                out.push(&rest[..i]);
                rest = &rest[i + 2..];
            }
            None => break,
        }
    }
    out.push(rest);
    out.resize(n, &[]);
    out
}
