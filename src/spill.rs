//! Rendered files too big to hold in memory, kept on disk instead.
//!
//! A long session renders a `messages.jsonl` and a `transcript.md` of hundreds of MB. Held
//! in memory beside the parsed session they cost several copies of the session, and a cache
//! that evicts them must render the whole session again for the next `read`. So a file that
//! grows past a threshold while it is rendered moves, as it is written, into a spill file:
//! one unlinked temporary file per rendered session (`O_TMPFILE` in sessfs' cache directory,
//! gone when the last reader lets go of it, and on any exit), appended once and then only
//! read with `pread`. Memory then holds the parsed session and the small files; the kernel's
//! page cache holds what is hot of the big ones, as it would for any file on disk.
//!
//! Small files never touch the disk: the threshold is a fraction of the cache budget, so a
//! walk over ordinary sessions reads from memory exactly as before.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

/// Once a file on disk, it is written out in pieces of this size.
const CHUNK: usize = 1 << 20;

/// `size` bytes of `bytes` from `offset`, cut at the end (a READ reply).
pub fn slice(bytes: &[u8], offset: u64, size: u32) -> &[u8] {
    let len = bytes.len() as u64;
    let start = offset.min(len) as usize;
    let end = offset.saturating_add(size as u64).min(len) as usize;
    &bytes[start..end]
}

/// The bytes of one rendered file: in memory, or a range of a spill file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Mem(Arc<Vec<u8>>),
    Disk(Spilled),
}

impl Body {
    pub fn len(&self) -> usize {
        match self {
            Body::Mem(b) => b.len(),
            Body::Disk(s) => s.len as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of memory this body holds, as the allocator counts them (a spilled body
    /// holds none).
    pub fn memory(&self) -> usize {
        match self {
            Body::Mem(b) => crate::alloc::footprint(b.capacity()),
            Body::Disk(_) => 0,
        }
    }

    /// Bytes this body keeps in a spill file on disk.
    pub fn on_disk(&self) -> usize {
        match self {
            Body::Mem(_) => 0,
            Body::Disk(s) => s.len as usize,
        }
    }

    /// Up to `size` bytes from `offset` (fewer at the end, none past it).
    pub fn read(&self, offset: u64, size: u32) -> io::Result<Cow<'_, [u8]>> {
        match self {
            Body::Mem(b) => Ok(Cow::Borrowed(slice(b, offset, size))),
            Body::Disk(s) => {
                let start = offset.min(s.len);
                let end = offset.saturating_add(size as u64).min(s.len);
                let mut buf = vec![0; (end - start) as usize];
                s.file.read_exact_at(&mut buf, s.offset + start)?;
                Ok(Cow::Owned(buf))
            }
        }
    }

    /// The whole file as one slice: borrowed when in memory, read back when spilled.
    pub fn bytes(&self) -> io::Result<Cow<'_, [u8]>> {
        match self {
            Body::Mem(b) => Ok(Cow::Borrowed(b)),
            Body::Disk(_) => self.to_vec().map(Cow::Owned),
        }
    }

    /// The whole file, for writers that need it at once (`sessfs show`, tests).
    pub fn to_vec(&self) -> io::Result<Vec<u8>> {
        let mut v = Vec::with_capacity(self.len());
        self.write_to(&mut v)?;
        Ok(v)
    }

    /// Copy the whole file to `w` without holding it in memory.
    pub fn write_to(&self, w: &mut dyn Write) -> io::Result<()> {
        match self {
            Body::Mem(b) => w.write_all(b),
            Body::Disk(_) => {
                let mut at = 0;
                while at < self.len() as u64 {
                    let piece = self.read(at, CHUNK as u32)?;
                    w.write_all(&piece)?;
                    at += piece.len() as u64;
                }
                Ok(())
            }
        }
    }
}

/// A range of a spill file.
#[derive(Clone)]
pub struct Spilled {
    file: Arc<File>,
    offset: u64,
    len: u64,
}

impl std::fmt::Debug for Spilled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Spilled({} bytes at {})", self.len, self.offset)
    }
}

impl PartialEq for Spilled {
    fn eq(&self, o: &Spilled) -> bool {
        Arc::ptr_eq(&self.file, &o.file) && self.offset == o.offset && self.len == o.len
    }
}

impl Eq for Spilled {}

/// Where one render spills: a directory, and the session's spill file once one is needed.
#[derive(Clone, Debug)]
pub struct SpillTo {
    /// Files that grow past this many bytes go to disk.
    pub threshold: usize,
    dir: PathBuf,
    file: Option<(Arc<File>, u64)>,
}

impl SpillTo {
    pub fn new(dir: PathBuf, threshold: usize) -> SpillTo {
        SpillTo {
            threshold,
            dir,
            file: None,
        }
    }

    /// The spill file and its current end, created on first use.
    fn file(&mut self) -> io::Result<(Arc<File>, u64)> {
        if self.file.is_none() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)?;
            self.file = Some((Arc::new(tempfile::tempfile_in(&self.dir)?), 0));
        }
        Ok(self.file.clone().expect("just created"))
    }
}

/// Where a renderer writes one file: memory until the file passes the threshold, then the
/// spill file. Without a [`SpillTo`] everything stays in memory.
pub struct Sink<'a> {
    buf: Vec<u8>,
    to: Option<&'a mut SpillTo>,
    /// Spill file, where this file starts in it, and bytes written there so far.
    disk: Option<(Arc<File>, u64, u64)>,
}

impl<'a> Sink<'a> {
    pub fn new(to: Option<&'a mut SpillTo>) -> Sink<'a> {
        Sink::with_capacity(to, 0)
    }

    /// A sink with room for about `expected` bytes (no more than the spill threshold), so
    /// a file of the expected size is written without the buffer being copied as it grows.
    /// Room that goes unused is given back by [`Sink::finish`].
    pub fn with_capacity(to: Option<&'a mut SpillTo>, expected: usize) -> Sink<'a> {
        let room = to.as_ref().map_or(expected, |t| expected.min(t.threshold));
        Sink {
            buf: crate::buf::recycle::take(room),
            to,
            disk: None,
        }
    }

    fn spill(&mut self) -> io::Result<()> {
        if self.disk.is_none() {
            let Some(to) = self.to.as_deref_mut() else {
                return Ok(());
            };
            let (file, end) = to.file()?;
            self.disk = Some((file, end, 0));
        }
        let (file, start, written) = self.disk.as_mut().expect("set above");
        file.write_all_at(&self.buf, *start + *written)?;
        *written += self.buf.len() as u64;
        // Drop the large first buffer; later pieces are small.
        self.buf = Vec::with_capacity(CHUNK);
        Ok(())
    }

    /// The finished file.
    pub fn finish(mut self) -> io::Result<Body> {
        if self.disk.is_none() {
            let buf = std::mem::take(&mut self.buf);
            return Ok(Body::Mem(Arc::new(crate::buf::exact(buf))));
        }
        self.spill()?;
        let (file, offset, len) = self.disk.take().expect("spilled");
        if let Some(to) = self.to.as_deref_mut() {
            to.file = Some((file.clone(), offset + len));
        }
        Ok(Body::Disk(Spilled { file, offset, len }))
    }

    /// Up to `n` bytes of `r`, read straight into the buffer (no bounce buffer between, as
    /// `io::copy` into a [`Write`] has). Returns how many there were.
    pub fn fill_from(&mut self, r: &mut impl Read, mut n: u64) -> io::Result<u64> {
        let mut total = 0;
        while n > 0 {
            let limit = self.limit();
            let room = limit.saturating_sub(self.buf.len()).max(1) as u64;
            let want = n.min(room);
            let got = r.by_ref().take(want).read_to_end(&mut self.buf)? as u64;
            total += got;
            n -= got;
            if self.buf.len() >= limit {
                self.spill()?;
            }
            if got < want {
                break;
            }
        }
        Ok(total)
    }

    /// The buffer length at which it goes to the spill file.
    fn limit(&self) -> usize {
        match (&self.disk, &self.to) {
            (Some(_), _) => CHUNK,
            (None, Some(to)) => to.threshold,
            (None, None) => usize::MAX,
        }
    }
}

impl Write for Sink<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= self.limit() {
            self.spill()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(to: Option<&mut SpillTo>, text: &[u8]) -> Body {
        let mut sink = Sink::new(to);
        for piece in text.chunks(7) {
            sink.write_all(piece).unwrap();
        }
        sink.finish().unwrap()
    }

    #[test]
    fn small_files_stay_in_memory_and_big_ones_read_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let mut to = SpillTo::new(dir.path().to_path_buf(), 100);
        let small = write(Some(&mut to), b"short");
        assert!(matches!(small, Body::Mem(_)));
        let text: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let a = write(Some(&mut to), &text);
        let b = write(Some(&mut to), &text[..300]);
        assert!(matches!((&a, &b), (Body::Disk(_), Body::Disk(_))));
        assert_eq!((a.memory(), a.len(), b.len()), (0, 5000, 300));
        assert_eq!(a.to_vec().unwrap(), text);
        assert_eq!(b.to_vec().unwrap(), &text[..300]);
        assert_eq!(&*a.read(4990, 100).unwrap(), &text[4990..]);
        assert!(a.read(6000, 10).unwrap().is_empty());
        let mut out = Vec::new();
        b.write_to(&mut out).unwrap();
        assert_eq!(out, &text[..300]);
        // Nothing is left in the directory: the spill file has no name.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_file_filled_from_a_reader_is_the_file_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut to = SpillTo::new(dir.path().to_path_buf(), 100);
        let text: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        // Below, at and past the threshold, a spilled file longer than a chunk, and a
        // reader that has fewer bytes than asked for.
        for (len, asked) in [
            (0, 0),
            (99, 99),
            (100, 100),
            (101, 101),
            (5000, 5000),
            (40, 90),
        ] {
            let written = write(Some(&mut to), &text[..len]);
            let mut sink = Sink::new(Some(&mut to));
            let got = sink.fill_from(&mut &text[..len], asked).unwrap();
            let filled = sink.finish().unwrap();
            assert_eq!(got, len as u64);
            assert_eq!(filled.to_vec().unwrap(), written.to_vec().unwrap(), "{len}");
            assert_eq!(matches!(filled, Body::Mem(_)), len < 100, "{len}");
        }
        let mut sink = Sink::new(None);
        assert_eq!(sink.fill_from(&mut &text[..], 3000).unwrap(), 3000);
        assert_eq!(sink.finish().unwrap().to_vec().unwrap(), &text[..3000]);
    }

    #[test]
    fn without_a_place_to_spill_everything_stays_in_memory() {
        let body = write(None, &[b'x'; 10_000]);
        assert_eq!(body, Body::Mem(Arc::new(vec![b'x'; 10_000])));
    }
}
