//! FUSE over io_uring: requests come through one queue per CPU instead of `/dev/fuse`.
//!
//! Why: on a cold walk nearly all time goes to round trips, and a `/dev/fuse` round trip
//! wakes a worker wherever the kernel finds one, usually on the other CPU, which then wakes
//! the reader back across CPUs (docs/BENCHMARKS.md, fifteenth and sixteenth stops). With
//! io_uring the kernel puts a request on the queue of the CPU its reader runs on, and that
//! queue's threads are pinned to the same CPU at idle policy, so both sides of a round trip
//! stay on one CPU: a walk of 10,000 rendered sessions takes about a third less time, a
//! cold one about a fifth less. Render-ahead then runs at idle policy too, so an answer
//! never waits for it.
//!
//! The kernel offers it only where an administrator switched it on
//! (`/sys/module/fuse/parameters/enable_uring`); elsewhere, or when a queue cannot be set up,
//! every request keeps coming through the `/dev/fuse` workers of [`super::serve`], which
//! also always get FORGET and INTERRUPT.
//!
//! The protocol (kernel `Documentation/filesystems/fuse/fuse-io-uring.rst`): each queue
//! entry is a header buffer and a payload buffer, registered with a
//! `FUSE_IO_URING_CMD_REGISTER` command; its completion means a request sits in the
//! buffers, and the reply goes back in the same buffers with a
//! `FUSE_IO_URING_CMD_COMMIT_AND_FETCH` command, whose completion is the next request.
//! Each thread here owns one ring with one entry, so a thread busy rendering a large session
//! holds only its own entry, and the queue's other thread answers the CPU's other requests.
//!
//! Once INIT grants io_uring the kernel holds every request until all queues have
//! registered, so every ring is made before INIT asks ([`prepare`]), and a queue that cannot
//! start after it sends a registration the kernel refuses, which sends it back to
//! `/dev/fuse` ([`start`]).
//!
//! Requests are answered by the same [`SessFs`] handlers as on `/dev/fuse`; this file
//! only decodes requests and encodes replies in the kernel's structure layouts.

use super::{errno, guarded, PushSlots, SessFs};
use crate::tree::FsError;
use fuser::{FileAttr, FileType};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The kernel's switch: FUSE offers io_uring queues only while it reads `Y`.
pub(super) const ENABLE_URING: &str = "/sys/module/fuse/parameters/enable_uring";

/// Threads (each with one queue entry) per CPU queue. Two, so that a request behind a slow
/// one (a large session's first render) waits for a free thread only when both are busy.
const THREADS_PER_QUEUE: usize = 2;

const CMD_REGISTER: u32 = 1;
const CMD_COMMIT_AND_FETCH: u32 = 2;

/// `struct fuse_uring_req_header`: the request or reply header, the operation's own
/// header, then `struct fuse_uring_ent_in_out`.
const IN_OUT: usize = 0;
const OP_IN: usize = 128;
const ENT_IN_OUT: usize = 256;
const HEADER_LEN: usize = 256 + 32;

// Operation codes (`enum fuse_opcode`) answered here.
const LOOKUP: u32 = 1;
const GETATTR: u32 = 3;
const SETATTR: u32 = 4;
const READLINK: u32 = 5;
const SYMLINK: u32 = 6;
const MKNOD: u32 = 8;
const MKDIR: u32 = 9;
const UNLINK: u32 = 10;
const RMDIR: u32 = 11;
const RENAME: u32 = 12;
const LINK: u32 = 13;
const READ: u32 = 15;
const WRITE: u32 = 16;
const STATFS: u32 = 17;
const RELEASE: u32 = 18;
const SETXATTR: u32 = 21;
const REMOVEXATTR: u32 = 24;
const RELEASEDIR: u32 = 29;
const ACCESS: u32 = 34;
const CREATE: u32 = 35;
const DESTROY: u32 = 38;
const IOCTL: u32 = 39;
const FALLOCATE: u32 = 43;
const READDIRPLUS: u32 = 44;
const RENAME2: u32 = 45;
const READDIR: u32 = 28;

/// The number of CPU queues the kernel expects: one per possible CPU.
fn possible_cpus() -> usize {
    // "0-1", "0-3,5": the highest number plus one.
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| {
            s.trim()
                .split([',', '-'])
                .filter_map(|n| n.parse::<usize>().ok())
                .max()
        })
        .map_or_else(crate::tree::cores, |max| max + 1)
}

/// What the queues' payload buffers may take together. Each entry's buffer must hold the
/// largest request or reply (`max_pages`), and there are [`THREADS_PER_QUEUE`] per possible
/// CPU: at 1 MiB each that would be 128 MiB on 64 CPUs beside the cache budget.
const PAYLOADS: usize = 32 << 20;

/// The smallest payload the queues take READs in (the kernel's own default size).
const MIN_PAYLOAD: usize = 128 << 10;

/// The largest READ (and so `max_pages`) a mount with queues on this machine asks for: up
/// to `largest`, less where the CPUs are so many that [`PAYLOADS`] would not hold them.
pub(super) fn payload_size(largest: usize) -> usize {
    payload_for(possible_cpus(), largest)
}

fn payload_for(cpus: usize, largest: usize) -> usize {
    let share = PAYLOADS / (cpus.max(1) * THREADS_PER_QUEUE);
    let pages = share.clamp(MIN_PAYLOAD, largest.max(MIN_PAYLOAD)) / 4096;
    // A power of two pages, as the kernel's defaults are.
    4096 << pages.ilog2()
}

type Ring = IoUring<squeue::Entry128, cqueue::Entry>;

/// Every queue entry and its ring, made before INIT is answered.
///
/// Once INIT grants io_uring, the kernel holds every request until all queues have
/// registered (or one registration fails, which makes it fall back to `/dev/fuse`), so
/// whatever can fail is done first: a kernel that refuses io_uring
/// (`kernel.io_uring_disabled`) or memory that cannot be had means INIT does not ask.
pub(super) struct Prepared(Vec<(Entry, Ring)>);

/// [`THREADS_PER_QUEUE`] entries per CPU queue, each with a payload of `payload` bytes (the
/// kernel's largest request or reply), each on a ring of its own.
pub(super) fn prepare(payload: usize) -> std::io::Result<Prepared> {
    let mut all = Vec::new();
    for qid in 0..possible_cpus() {
        for _ in 0..THREADS_PER_QUEUE {
            all.push((Entry::new(qid as u16, payload)?, Ring::builder().build(2)?));
        }
    }
    Ok(Prepared(all))
}

/// Start one thread per prepared entry on `dev`, the mounted `/dev/fuse`; returns how many
/// (they end when the mount goes away). Call after INIT
/// was answered with `FUSE_OVER_IO_URING`. Where a thread cannot be started, a registration
/// the kernel refuses is sent, so it stops waiting for the queues and every request comes
/// through `/dev/fuse`.
pub(super) fn start(
    sfs: SessFs,
    dev: BorrowedFd<'_>,
    prepared: Prepared,
) -> std::io::Result<usize> {
    let dev = match dev.try_clone_to_owned() {
        Ok(d) => Arc::new(d),
        Err(e) => {
            if let Some((_, ring)) = prepared.0.into_iter().next() {
                refuse(ring, dev.as_raw_fd());
            }
            return Err(e);
        }
    };
    let mut threads = 0;
    // At most one push per queue at a time: a push can wait for a READ that only this
    // queue's threads can answer (see [`PushSlots`]).
    let mut slots: std::collections::HashMap<u16, Arc<PushSlots>> = Default::default();
    let mut entries = prepared.0.into_iter();
    while let Some((mut entry, ring)) = entries.next() {
        let qid = entry.qid;
        let slots = slots
            .entry(qid)
            .or_insert_with(|| Arc::new(PushSlots::new(THREADS_PER_QUEUE - 1)))
            .clone();
        let (sfs, thread_dev) = (sfs.clone(), dev.clone());
        // The ring goes back out if the thread cannot be made.
        let spare = Arc::new(std::sync::Mutex::new(Some(ring)));
        let theirs = spare.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("sessfs-ring-{qid}.{}", threads % THREADS_PER_QUEUE))
            .spawn(move || {
                let Some(ring) = theirs.lock().ok().and_then(|mut r| r.take()) else {
                    return;
                };
                pin_to(qid as usize);
                // Idle policy: a reply wakes the reader while the thread that sent it still
                // runs, and a reader woken on a busy CPU is moved to an idle one, so at
                // normal policy every round trip crossed CPUs again (floor walks 5.2-5.6 s
                // against 4.1-4.9 s through /dev/fuse). A CPU that runs only idle-policy
                // threads counts as idle, so the reader stays, and preempts the thread at
                // once: floor walks 2.7-2.9 s. Switching to normal policy while answering
                // cost two system calls a request (floor walks 3.0-3.3 s); render-ahead
                // runs at idle policy instead ([`crate::tree::Fs::render_ahead_at_idle`]),
                // so answers never yield to it. Idle policy did not starve requests on a
                // busy machine here: with four busy loops at nice -10 on the reader's CPU,
                // a directory took 3.9 ms (median; slowest 16 ms), against 0.25 ms and
                // 50 ms through /dev/fuse.
                crate::tree::set_idle_policy();
                if let Err(e) = entry.serve(ring, &sfs, thread_dev.as_raw_fd(), &slots) {
                    log::warn!("io_uring queue {qid}: {e}");
                }
            });
        match spawned {
            Ok(_) => threads += 1,
            Err(e) => {
                let ring = spare.lock().ok().and_then(|mut r| r.take());
                if let Some(ring) = ring {
                    refuse(ring, dev.as_raw_fd());
                }
                drop(entries);
                return Err(e);
            }
        }
    }
    Ok(threads)
}

/// Send a registration for a queue that does not exist: the kernel refuses it, stops
/// waiting for the queues, and takes every request through `/dev/fuse` from then on.
fn refuse(mut ring: Ring, dev: i32) {
    let mut cmd = [0u8; 80];
    cmd[16..18].copy_from_slice(&u16::MAX.to_ne_bytes());
    let sqe = with_iovecs(
        opcode::UringCmd80::new(types::Fd(dev), CMD_REGISTER)
            .cmd(cmd)
            .build(),
    );
    // SAFETY: the command carries no buffer; the kernel refuses it before reading any.
    let pushed = unsafe { ring.submission().push(&sqe).is_ok() };
    if pushed {
        let _ = ring.submit_and_wait(1);
    }
    log::warn!("io_uring queues given up; requests come through /dev/fuse");
}

/// Run the calling thread on CPU `cpu` only; where that is not allowed (a narrower
/// cpuset), it runs where the scheduler puts it.
fn pin_to(cpu: usize) {
    // SAFETY: cpu_set_t is plain data set up here; the call only reads it.
    let r = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if r != 0 {
        log::debug!(
            "io_uring queue {cpu}: not pinned ({})",
            std::io::Error::last_os_error()
        );
    }
}

/// A page-aligned, zeroed buffer the kernel reads and writes.
struct Buf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

// SAFETY: the buffer is owned by one thread at a time and only reached through &/&mut.
unsafe impl Send for Buf {}

impl Buf {
    fn new(len: usize) -> std::io::Result<Buf> {
        let layout =
            std::alloc::Layout::from_size_align(len.max(1), 4096).map_err(std::io::Error::other)?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(std::io::ErrorKind::OutOfMemory.into());
        }
        Ok(Buf { ptr, layout })
    }

    fn get(&mut self) -> &mut [u8] {
        // SAFETY: ptr is a live allocation of layout.size() bytes, borrowed through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: allocated in Buf::new with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// One queue entry: its buffers, as registered with the kernel.
struct Entry {
    qid: u16,
    header: Buf,
    payload: Buf,
    /// The two buffers as the kernel reads them at registration.
    iov: Box<[libc::iovec; 2]>,
}

// SAFETY: the iovecs point into the entry's own buffers, which move with it.
unsafe impl Send for Entry {}

impl Entry {
    fn new(qid: u16, payload: usize) -> std::io::Result<Entry> {
        let mut header = Buf::new(4096)?;
        let mut payload = Buf::new(payload)?;
        let iov = Box::new([
            libc::iovec {
                iov_base: header.get().as_mut_ptr().cast(),
                iov_len: HEADER_LEN,
            },
            libc::iovec {
                iov_base: payload.get().as_mut_ptr().cast(),
                iov_len: payload.get().len(),
            },
        ]);
        Ok(Entry {
            qid,
            header,
            payload,
            iov,
        })
    }

    /// Register, then answer requests until the mount goes away.
    fn serve(
        &mut self,
        mut ring: IoUring<squeue::Entry128, cqueue::Entry>,
        sfs: &SessFs,
        dev: i32,
        slots: &PushSlots,
    ) -> std::io::Result<()> {
        // The last command sent, and whether it still has to go in.
        let mut last = self.command(dev, CMD_REGISTER, 0);
        let mut send = true;
        let mut retries = 0u32;
        loop {
            if send {
                // SAFETY: the command points at this entry's buffers and iovecs, which live
                // as long as `self`, and this loop waits for its completion before touching
                // them.
                unsafe {
                    ring.submission()
                        .push(&last)
                        .map_err(|_| std::io::Error::other("submission queue full"))?;
                }
                send = false;
            }
            match ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // A queue that stops answering would leave its CPU's readers waiting
                // forever: a failed wait is tried again, for a while.
                Err(e) if retries < 1000 => {
                    log::debug!("io_uring queue {}: {e}", self.qid);
                    retries += 1;
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
                Err(e) => return Err(e),
            }
            let Some(cqe) = ring.completion().next() else {
                continue;
            };
            match cqe.result() {
                0 => {
                    retries = 0;
                    let commit_id = self.answer(sfs, slots);
                    last = self.command(dev, CMD_COMMIT_AND_FETCH, commit_id);
                    send = true;
                }
                // Not taken yet (INIT still being processed) or interrupted: send it again.
                e if (e == -libc::EAGAIN || e == -libc::EINTR) && retries < 1000 => {
                    retries += 1;
                    std::thread::sleep(Duration::from_millis(1));
                    send = true;
                }
                // Unmounted: this thread is done.
                e if e == -libc::ENOTCONN || e == -libc::ECANCELED || e == -libc::ENODEV => {
                    return Ok(());
                }
                e => return Err(std::io::Error::from_raw_os_error(-e)),
            }
        }
    }

    /// The SQE of a `fuse_uring_cmd_req` for this entry. io-uring has no setter for an
    /// SQE's `len`, which a registration must set to the number of iovecs (2), so that one
    /// field is written into the 128-byte entry directly.
    fn command(&self, dev: i32, op: u32, commit_id: u64) -> squeue::Entry128 {
        let mut cmd = [0u8; 80];
        cmd[8..16].copy_from_slice(&commit_id.to_ne_bytes());
        cmd[16..18].copy_from_slice(&self.qid.to_ne_bytes());
        let sqe = opcode::UringCmd80::new(types::Fd(dev), op).cmd(cmd);
        if op != CMD_REGISTER {
            return sqe.build();
        }
        with_iovecs(sqe.addr(Some(self.iov.as_ptr() as u64)).build())
    }

    /// Answer the request in the buffers; returns its commit id.
    fn answer(&mut self, sfs: &SessFs, slots: &PushSlots) -> u64 {
        let h = self.header.get();
        let opcode = u32_at(h, IN_OUT + 4);
        let unique = u64_at(h, IN_OUT + 8);
        let nodeid = u64_at(h, IN_OUT + 16);
        let commit_id = u64_at(h, ENT_IN_OUT + 8);
        let in_len = u32_at(h, ENT_IN_OUT + 16) as usize;
        let mut op_in = [0u8; 128];
        op_in.copy_from_slice(&h[OP_IN..OP_IN + 128]);
        let payload = self.payload.get();
        // The rest of a request (a name) is small: copied out, so the reply can take its place.
        let input = payload[..in_len.min(payload.len())].to_vec();
        // The shape of fuser's request log, which tests count requests by.
        log::debug!(
            "FUSE({unique:3}) ino {nodeid:#018x} {} offset {} size {} queue={}",
            op_name(opcode),
            u64_at(&op_in, 8),
            u32_at(&op_in, 16),
            self.qid
        );
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            reply(sfs, slots, opcode, nodeid, &op_in, &input, payload)
        }))
        .unwrap_or_else(|p| {
            log::error!(
                "panic in request {opcode}: {}",
                crate::tree::panic_message(&p)
            );
            Err(libc::EIO)
        });
        let (error, len) = match result {
            Ok(len) => (0, len),
            Err(e) => (-e, 0),
        };
        let h = self.header.get();
        h[IN_OUT..IN_OUT + 4].copy_from_slice(&(16 + len as u32).to_ne_bytes());
        h[IN_OUT + 4..IN_OUT + 8].copy_from_slice(&error.to_ne_bytes());
        h[IN_OUT + 8..IN_OUT + 16].copy_from_slice(&unique.to_ne_bytes());
        h[ENT_IN_OUT + 16..ENT_IN_OUT + 20].copy_from_slice(&(len as u32).to_ne_bytes());
        commit_id
    }
}

/// A registration SQE with `len` set to the number of iovecs (2), which io-uring has no
/// setter for.
fn with_iovecs(sqe: squeue::Entry128) -> squeue::Entry128 {
    const _: () = assert!(std::mem::size_of::<squeue::Entry128>() == 128);
    // SAFETY: Entry128 is a repr(C) struct of two 64-byte plain-data halves, the first the
    // kernel's `struct io_uring_sqe`, whose `len` is the u32 at byte 24.
    unsafe {
        let mut raw: [u8; 128] = std::mem::transmute(sqe);
        raw[24..28].copy_from_slice(&2u32.to_ne_bytes());
        std::mem::transmute::<[u8; 128], squeue::Entry128>(raw)
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

/// A request's name in the log.
fn op_name(opcode: u32) -> &'static str {
    match opcode {
        LOOKUP => "LOOKUP",
        GETATTR => "GETATTR",
        READLINK => "READLINK",
        READ => "READ",
        STATFS => "STATFS",
        ACCESS => "ACCESS",
        READDIR => "READDIR",
        READDIRPLUS => "READDIRPLUS",
        RELEASE | RELEASEDIR => "RELEASE",
        IOCTL => "IOCTL",
        _ => "OTHER",
    }
}

/// Answer one request into `out`; the reply's length, or an errno. The same answers as
/// the fuser handlers in `mod.rs` give, operation by operation.
fn reply(
    sfs: &SessFs,
    slots: &PushSlots,
    opcode: u32,
    nodeid: u64,
    op_in: &[u8],
    input: &[u8],
    out: &mut [u8],
) -> Result<usize, i32> {
    let e = |e: FsError| errno(&e).code();
    let mut w = Writer { out, len: 0 };
    match opcode {
        LOOKUP => {
            use std::os::unix::ffi::OsStrExt;
            let name = input.split(|&b| b == 0).next().unwrap_or_default();
            let (ttl, attr) = sfs
                .lookup_entry(nodeid, std::ffi::OsStr::from_bytes(name))
                .map_err(e)?;
            w.entry(&ttl, &attr);
        }
        GETATTR => {
            let a = guarded("getattr", || sfs.fs.getattr(nodeid)).map_err(e)?;
            let ttl = sfs.ttl(a.ino);
            w.u64(ttl.as_secs());
            w.u32(ttl.subsec_nanos());
            w.u32(0);
            w.attr(&sfs.file_attr(&a));
        }
        READLINK => {
            let t = guarded("readlink", || sfs.fs.readlink(nodeid)).map_err(e)?;
            w.bytes(t.as_bytes());
        }
        READ => {
            let (offset, size) = (u64_at(op_in, 8), u32_at(op_in, 16));
            let mut r = Err(libc::EIO);
            sfs.read_part(nodeid, offset, size, slots, |part| {
                r = part.map(|p| w.bytes(p)).map_err(e);
            });
            r?;
        }
        READDIRPLUS | READDIR => {
            let (offset, size) = (u64_at(op_in, 8), u32_at(op_in, 16) as usize);
            let limit = size.min(w.out.len());
            let plus = opcode == READDIRPLUS;
            let add = |next: u64, name: &str, ttl: &Duration, attr: &FileAttr| {
                w.dirent(plus, next, name, ttl, attr, limit)
            };
            if plus {
                sfs.readdirplus_fill(nodeid, offset, slots, add)
                    .map_err(e)?;
            } else {
                let mut add = add;
                guarded("readdir", || {
                    sfs.fill_dir(nodeid, offset, |next, name, a| {
                        add(next, name, &Duration::ZERO, &sfs.file_attr(a))
                    })
                })
                .map_err(e)?;
            }
        }
        STATFS => {
            // What fuser answers for a filesystem without `statfs`.
            for v in [0u64; 5] {
                w.u64(v);
            }
            for v in [512u32, 255, 0, 0, 0, 0, 0, 0, 0, 0] {
                w.u32(v);
            }
        }
        ACCESS => sfs
            .access_check(nodeid, u32_at(op_in, 0) as i32)
            .map_err(|e| e.code())?,
        RELEASE | RELEASEDIR | DESTROY => {}
        IOCTL => return Err(libc::ENOTTY),
        SETATTR | SYMLINK | MKNOD | MKDIR | UNLINK | RMDIR | RENAME | LINK | WRITE | SETXATTR
        | REMOVEXATTR | CREATE | FALLOCATE | RENAME2 => return Err(libc::EROFS),
        // OPEN, OPENDIR, FLUSH, FSYNC, xattrs, locks, LSEEK...: see the fuser handlers.
        _ => return Err(libc::ENOSYS),
    }
    Ok(w.len)
}

/// Little-endian (native) fields written one after another, as the kernel's structures lay
/// them out.
struct Writer<'a> {
    out: &'a mut [u8],
    len: usize,
}

impl Writer<'_> {
    fn bytes(&mut self, b: &[u8]) {
        let n = b.len().min(self.out.len() - self.len);
        self.out[self.len..self.len + n].copy_from_slice(&b[..n]);
        self.len += n;
    }

    fn u32(&mut self, v: u32) {
        self.bytes(&v.to_ne_bytes());
    }

    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_ne_bytes());
    }

    /// `struct fuse_attr`.
    fn attr(&mut self, a: &FileAttr) {
        let t = |t: SystemTime| t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        let (at, mt, ct) = (t(a.atime), t(a.mtime), t(a.ctime));
        for v in [
            a.ino.0,
            a.size,
            a.blocks,
            at.as_secs(),
            mt.as_secs(),
            ct.as_secs(),
        ] {
            self.u64(v);
        }
        for v in [
            at.subsec_nanos(),
            mt.subsec_nanos(),
            ct.subsec_nanos(),
            mode(a),
            a.nlink,
            a.uid,
            a.gid,
            a.rdev,
            a.blksize,
            0,
        ] {
            self.u32(v);
        }
    }

    /// `struct fuse_entry_out`.
    fn entry(&mut self, ttl: &Duration, a: &FileAttr) {
        self.u64(a.ino.0);
        self.u64(0);
        self.u64(ttl.as_secs());
        self.u64(ttl.as_secs());
        self.u32(ttl.subsec_nanos());
        self.u32(ttl.subsec_nanos());
        self.attr(a);
    }

    /// One `struct fuse_direntplus` (or `fuse_dirent`) if it fits in `limit`; true when it
    /// did not, as fuser's `add` says the reply is full.
    fn dirent(
        &mut self,
        plus: bool,
        next: u64,
        name: &str,
        ttl: &Duration,
        a: &FileAttr,
        limit: usize,
    ) -> bool {
        let dirent = (24 + name.len()).next_multiple_of(8);
        let size = dirent + if plus { 128 } else { 0 };
        if self.len + size > limit {
            return true;
        }
        if plus {
            self.entry(ttl, a);
        }
        self.u64(a.ino.0);
        self.u64(next);
        self.u32(name.len() as u32);
        self.u32(mode(a) >> 12);
        self.bytes(name.as_bytes());
        let pad = dirent - 24 - name.len();
        self.bytes(&[0u8; 8][..pad]);
        false
    }
}

/// `st_mode`: the file type's bits and the permissions.
fn mode(a: &FileAttr) -> u32 {
    let kind = match a.kind {
        FileType::Directory => libc::S_IFDIR,
        FileType::Symlink => libc::S_IFLNK,
        _ => libc::S_IFREG,
    };
    kind | u32::from(a.perm)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1 MiB READs up to 16 CPUs, then less, so that all buffers stay within 32 MiB down
    /// to 128 KiB each, below which they are not cut.
    #[test]
    fn queue_buffers_shrink_with_many_cpus() {
        const MIB: usize = 1 << 20;
        let want = [
            (1, MIB),
            (2, MIB),
            (16, MIB),
            (24, 512 << 10),
            (32, 512 << 10),
            (64, 256 << 10),
            (128, 128 << 10),
            (1024, 128 << 10),
        ];
        for (cpus, size) in want {
            assert_eq!(payload_for(cpus, MIB), size, "{cpus} CPUs");
        }
        assert_eq!(
            payload_for(2, 256 << 10),
            256 << 10,
            "never above what is asked"
        );
    }

    /// The reply structures have the kernel's sizes: `fuse_attr` 88 bytes, `fuse_entry_out`
    /// 128, a `fuse_direntplus` for a 5-byte name 128 + 32.
    #[test]
    fn replies_have_the_kernel_structure_sizes() {
        let a = FileAttr {
            ino: fuser::INodeNo(7),
            size: 1,
            blocks: 1,
            atime: SystemTime::UNIX_EPOCH,
            mtime: SystemTime::UNIX_EPOCH,
            ctime: SystemTime::UNIX_EPOCH,
            crtime: SystemTime::UNIX_EPOCH,
            kind: FileType::RegularFile,
            perm: 0o444,
            nlink: 1,
            uid: 0,
            gid: 0,
            rdev: 0,
            flags: 0,
            blksize: 4096,
        };
        let mut buf = vec![0u8; 4096];
        let mut w = Writer {
            out: &mut buf,
            len: 0,
        };
        w.attr(&a);
        assert_eq!(w.len, 88);
        w.len = 0;
        w.entry(&Duration::from_secs(1), &a);
        assert_eq!(w.len, 128);
        w.len = 0;
        assert!(!w.dirent(true, 1, "hello", &Duration::ZERO, &a, 4096));
        assert_eq!(w.len, 128 + 32);
        assert!(w.dirent(true, 2, "hello", &Duration::ZERO, &a, 319), "full");
        assert_eq!(w.len, 160, "nothing written past the limit");
        assert_eq!(mode(&a), 0o100444);
        assert_eq!(mode(&a) >> 12, 8, "DT_REG");
    }
}
