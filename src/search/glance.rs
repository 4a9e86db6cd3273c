//! Glances: a search's freshness check without listing the stores. A store's glance names
//! the directories its listing reads and the files that version each session; the index
//! keeps a hash of their `stat`s, and a search that finds the same hash lists nothing.

use super::*;

/// A directory whose mtime is this close to the start of the listing it was stamped after,
/// or later, may hide an entry added in the same clock tick (mtimes move in ticks of a few
/// milliseconds, on some file systems of one or two seconds): its store is not vouched for
/// until a listing finds it older.
pub(super) const RACY: Duration = Duration::from_secs(2);

/// Below this many paths, stamps are taken on one thread.
pub(super) const STAMP_CHUNK: usize = 2048;

/// What [`Index::unchanged`] found: the stores whose glances still hold.
#[derive(Default)]
pub struct Glanced {
    /// Every store, and no session of another agent in the index: nothing changed.
    pub all: bool,
    /// Sessions of the stores whose glances hold.
    pub sessions: usize,
    pub(super) rows: Vec<GlanceRow>,
    /// The index's count of writes before the glances were read: a sync that keeps them
    /// records nothing if another process wrote since.
    pub(super) writes: i64,
}

impl Glanced {
    /// Whether the glance of `agent`'s store holds.
    pub fn holds(&self, agent: Agent) -> bool {
        self.rows.iter().any(|r| r.agent == agent.name())
    }
}

/// A store's glance as kept in the index: the paths to `stat` and the hash of their
/// stamps when the store was last listed.
pub(super) struct GlanceRow {
    pub(super) agent: String,
    pub(super) roots: Vec<u8>,
    pub(super) sessions: usize,
    pub(super) stamp: u64,
    /// zstd of [`encode_paths`].
    pub(super) paths: Vec<u8>,
}

/// One path to stamp: its parent directory's index in the group list and its name.
type Entry = (usize, std::ffi::OsString);

/// Paths grouped by parent directory: `stat` is then relative to one open directory per
/// group, a lookup of one name instead of a walk of every component.
#[derive(Default)]
pub(super) struct Paths {
    pub(super) parents: Vec<PathBuf>,
    pub(super) entries: Vec<Entry>,
    /// Whether each entry is a directory (its mtime is checked for [`RACY`]).
    pub(super) dirs: Vec<bool>,
}

/// The roots of a store as kept beside its glance: a store whose roots changed (a `--store`
/// given, a root made) is listed.
pub(super) fn roots_key(store: &dyn crate::stores::Store) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    for r in store.roots() {
        out.extend_from_slice(r.path.as_os_str().as_bytes());
        out.push(0);
    }
    out
}

/// `dirs` then `files`, grouped by parent (each group sorted by name); `None` when a path
/// is not absolute, has no parent or name, or holds a line break (the encoding's separator).
pub(super) fn group_paths(g: &crate::stores::Glance) -> Option<Paths> {
    use std::os::unix::ffi::OsStrExt;
    let mut all: Vec<(&Path, &std::ffi::OsStr, bool)> = Vec::new();
    for (list, is_dir) in [(&g.dirs, true), (&g.files, false)] {
        for p in list {
            if !p.is_absolute() || p.as_os_str().as_bytes().contains(&b'\n') {
                return None;
            }
            all.push((p.parent()?, p.file_name()?, is_dir));
        }
    }
    all.sort_unstable();
    all.dedup();
    let mut paths = Paths::default();
    for (parent, name, is_dir) in all {
        if paths.parents.last().map(PathBuf::as_path) != Some(parent) {
            paths.parents.push(parent.to_path_buf());
        }
        paths
            .entries
            .push((paths.parents.len() - 1, name.to_os_string()));
        paths.dirs.push(is_dir);
    }
    Some(paths)
}

/// A line per parent (`/…`, absolute) followed by a line per entry in it: `d name` for a
/// directory, `f name` for a file.
pub(super) fn encode_paths(p: &Paths) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    let mut last = usize::MAX;
    for ((parent, name), is_dir) in p.entries.iter().zip(&p.dirs) {
        if *parent != last {
            out.extend_from_slice(p.parents[*parent].as_os_str().as_bytes());
            out.push(b'\n');
            last = *parent;
        }
        out.extend_from_slice(if *is_dir { b"d " } else { b"f " });
        out.extend_from_slice(name.as_bytes());
        out.push(b'\n');
    }
    out
}

pub(super) fn decode_paths(bytes: &[u8]) -> Option<Paths> {
    use std::os::unix::ffi::OsStrExt;
    let mut p = Paths::default();
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        if line[0] == b'/' {
            p.parents
                .push(PathBuf::from(std::ffi::OsStr::from_bytes(line)));
            continue;
        }
        let parent = p.parents.len().checked_sub(1)?;
        let (kind, name) = (line.get(..2)?, &line[2..]);
        p.entries
            .push((parent, std::ffi::OsStr::from_bytes(name).to_os_string()));
        p.dirs.push(kind == b"d ");
    }
    Some(p)
}

/// The stamp of a path that cannot be `stat`ed.
pub(super) const MISSING: u64 = 0x6d69_7373_696e_6700;

/// A path's `stat` (following a symlink, as versions do), hashed: device, inode, type,
/// size and mtime; a path that cannot be read hashes as missing. With its mtime.
// `stat`'s field types differ between platforms (macOS: a 32-bit device, a 16-bit mode).
#[allow(clippy::unnecessary_cast)]
pub(super) fn stamp_at(
    dir: Option<&std::fs::File>,
    name: &std::ffi::OsStr,
) -> (u64, Option<SystemTime>) {
    use std::hash::{Hash, Hasher};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::AsRawFd;
    let (Some(dir), Ok(name)) = (dir, std::ffi::CString::new(name.as_bytes())) else {
        return (MISSING, None);
    };
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `name` is NUL-terminated, `dir` an open descriptor, and `st` is read only
    // when the call returned 0, having written it.
    if unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), st.as_mut_ptr(), 0) } != 0 {
        return (MISSING, None);
    }
    let st = unsafe { st.assume_init() };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (
        st.st_dev as u64,
        st.st_ino as u64,
        (st.st_mode & libc::S_IFMT) as u32,
        st.st_size,
        st.st_mtime,
        st.st_mtime_nsec,
    )
        .hash(&mut h);
    let mtime = Duration::new(st.st_mtime.max(0) as u64, st.st_mtime_nsec as u32);
    (h.finish(), Some(SystemTime::UNIX_EPOCH + mtime))
}

/// The stamps of `entries` (of `parents`), in order, on every core for many.
pub(super) fn stamp_all(parents: &[PathBuf], entries: &[Entry]) -> Vec<(u64, Option<SystemTime>)> {
    use std::os::unix::fs::OpenOptionsExt;
    let part = |part: &[Entry]| {
        let mut open: Option<(usize, Option<std::fs::File>)> = None;
        part.iter()
            .map(|(parent, name)| {
                if open.as_ref().map(|(p, _)| *p) != Some(*parent) {
                    let dir = std::fs::OpenOptions::new()
                        .read(true)
                        .custom_flags(DIR_HANDLE | libc::O_DIRECTORY)
                        .open(&parents[*parent])
                        .ok();
                    open = Some((*parent, dir));
                }
                stamp_at(open.as_ref().and_then(|(_, d)| d.as_ref()), name)
            })
            .collect::<Vec<_>>()
    };
    let threads = cores().min(entries.len() / STAMP_CHUNK).max(1);
    if threads == 1 {
        return part(entries);
    }
    std::thread::scope(|scope| {
        let parts: Vec<_> = entries
            .chunks(entries.len().div_ceil(threads))
            .map(|p| (p.len(), scope.spawn(move || part(p))))
            .collect();
        parts
            .into_iter()
            .flat_map(|(n, h)| h.join().unwrap_or_else(|_| vec![(0, None); n]))
            .collect()
    })
}

/// One hash of a store's stamps, in order.
pub(super) fn fold(stamps: impl Iterator<Item = u64>) -> u64 {
    use std::hash::Hasher;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for s in stamps {
        h.write_u64(s);
    }
    h.finish()
}

/// How a directory is opened only to `fstatat` inside it: `O_PATH` where Linux has it.
#[cfg(target_os = "linux")]
pub(super) const DIR_HANDLE: i32 = libc::O_PATH;
#[cfg(not(target_os = "linux"))]
pub(super) const DIR_HANDLE: i32 = 0;

/// The glance of `store` over what it listed (`listed`), stamped now; `None` when the
/// store has none or a directory moved too close to `since`, the start of the listing
/// ([`RACY`]).
pub(super) fn take_glance(
    store: &dyn crate::stores::Store,
    listed: &[crate::stores::Listed],
    since: SystemTime,
) -> Option<GlanceRow> {
    let mut g =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| store.glance(listed))).ok()??;
    // Every session is versioned by its sources, whatever else the listing read.
    g.files
        .extend(listed.iter().flat_map(|l| l.sources.iter().cloned()));
    let paths = group_paths(&g)?;
    let stamps = stamp_all(&paths.parents, &paths.entries);
    let settled = since.checked_sub(RACY)?;
    for (((parent, name), (_, mtime)), is_dir) in paths.entries.iter().zip(&stamps).zip(&paths.dirs)
    {
        if *is_dir && mtime.is_none_or(|m| m >= settled) {
            log::debug!(
                "{}: no glance, {} moved too recently or is gone",
                store.agent(),
                paths.parents[*parent].join(name).display()
            );
            return None;
        }
    }
    Some(GlanceRow {
        agent: store.agent().name().to_string(),
        roots: roots_key(store),
        sessions: listed.len(),
        stamp: fold(stamps.iter().map(|s| s.0)),
        paths: zstd::bulk::compress(&encode_paths(&paths), 3).ok()?,
    })
}
