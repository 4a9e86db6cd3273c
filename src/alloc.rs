//! The process's memory allocator: big buffers in mappings of their own, the rest in
//! mimalloc.
//!
//! A cold walk parses and renders every session once: millions of short-lived strings and
//! vectors, freed by the thousand per session. glibc's malloc spent about a fifth of the
//! render threads' time on them (splitting and merging free chunks, `malloc_consolidate`);
//! mimalloc's per-thread free lists take a fraction of that.
//!
//! Rendered files are the other kind of allocation: buffers of 32 KiB and more that the
//! cache keeps for a while and then drops in no particular order. In an allocator's heap
//! they leave holes too small for the next file, and resident memory drifts far above the
//! cache budget (mimalloc alone peaked at 525 MB on the 1 GB bench corpus with a 256 MiB
//! cache). Each such buffer gets a mapping of its own instead, as glibc does above its
//! mmap threshold: dropping it gives its pages back at once, and growing it moves pages,
//! not bytes (`mremap`). mimalloc is built without transparent huge pages, which held
//! about 25 MB more resident in half-used 2 MiB pages, and gives freed pages back after
//! 10 ms instead of a second ([`configure`]). With 64 KiB as the threshold, or freed pages
//! kept a second, the 1 GB corpus peaked 5 MB higher each.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicPtr, Ordering};

/// Allocations of this size or more get a mapping of their own.
pub const MAP_FROM: usize = 32 * 1024;

/// Mappings are page-aligned, so they can serve any alignment up to this.
const PAGE: usize = 4096;

pub struct Alloc;

/// How many freed mappings of exactly [`MAP_FROM`] bytes are kept for the next block of
/// that size. Growing vectors pass through that size, and one of them is made and dropped
/// over and over: fuser's reply buffer for a directory listing grows to exactly 32 KiB in
/// each of the ~60 replies to an `ls` of 10,000 sessions through `/dev/fuse`, and each time
/// cost a fresh mapping, eight page faults and an unmapping (which flushes other CPUs'
/// TLBs). Four spares hold 128 KiB.
const SPARES: usize = 4;

static SPARE: Spares = Spares([const { AtomicPtr::new(std::ptr::null_mut()) }; SPARES]);

/// Slots for mappings no one uses, taken and filled without a lock.
struct Spares([AtomicPtr<u8>; SPARES]);

impl Spares {
    /// A kept mapping, or null.
    fn take(&self) -> *mut u8 {
        for slot in &self.0 {
            if !slot.load(Ordering::Relaxed).is_null() {
                let p = slot.swap(std::ptr::null_mut(), Ordering::Acquire);
                if !p.is_null() {
                    return p;
                }
            }
        }
        std::ptr::null_mut()
    }

    /// Keep `p` if a slot is free.
    fn keep(&self, p: *mut u8) -> bool {
        self.0.iter().any(|slot| {
            let empty = std::ptr::null_mut();
            slot.compare_exchange(empty, p, Ordering::Release, Ordering::Relaxed)
                .is_ok()
        })
    }
}

fn mapped(size: usize, align: usize) -> bool {
    size >= MAP_FROM && align <= PAGE
}

fn pages(size: usize) -> usize {
    size.div_ceil(PAGE) * PAGE
}

// SAFETY: every block is freed or resized by the allocator that made it: Rust passes the
// layout a block was allocated (or last resized) with, and `mapped` of that layout says
// which allocator that was.
unsafe impl GlobalAlloc for Alloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if mapped(l.size(), l.align()) {
            mapping(l.size()).0
        } else {
            // SAFETY: the caller's contract for `alloc`, passed on.
            unsafe { mimalloc::MiMalloc.alloc(l) }
        }
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if mapped(l.size(), l.align()) {
            let (p, kept) = mapping(l.size());
            if kept {
                // SAFETY: a kept mapping of MAP_FROM bytes, now owned by this call. Fresh
                // anonymous pages are zero already.
                unsafe { std::ptr::write_bytes(p, 0, MAP_FROM) };
            }
            p
        } else {
            // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
            unsafe { mimalloc::MiMalloc.alloc_zeroed(l) }
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        if mapped(l.size(), l.align()) {
            if l.size() == MAP_FROM && SPARE.keep(p) {
                return;
            }
            // SAFETY: `p` is a mapping of `pages(l.size())` bytes made by `map` or `mremap`.
            unsafe { libc::munmap(p.cast(), pages(l.size())) };
        } else {
            // SAFETY: `p` came from mimalloc with this layout.
            unsafe { mimalloc::MiMalloc.dealloc(p, l) }
        }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        let was = mapped(l.size(), l.align());
        let will = mapped(new_size, l.align());
        #[cfg(target_os = "linux")]
        if was && will {
            // SAFETY: `p` is a mapping of `pages(l.size())` bytes; the kernel moves its pages.
            let q = unsafe {
                libc::mremap(
                    p.cast(),
                    pages(l.size()),
                    pages(new_size),
                    libc::MREMAP_MAYMOVE,
                )
            };
            return if q == libc::MAP_FAILED {
                std::ptr::null_mut()
            } else {
                q.cast()
            };
        }
        if !was && !will {
            // SAFETY: `p` came from mimalloc with this layout.
            return unsafe { mimalloc::MiMalloc.realloc(p, l, new_size) };
        }
        // Crossing the threshold (or, without `mremap`, growing a mapping): a new block, the
        // bytes copied over.
        // SAFETY: Rust's contract for `realloc`: `new_size` is non-zero and, rounded up to
        // `l.align()`, does not overflow.
        let new = unsafe { Layout::from_size_align_unchecked(new_size, l.align()) };
        // SAFETY: both blocks are live and distinct; `p` is freed with its own layout.
        unsafe {
            let q = self.alloc(new);
            if !q.is_null() {
                std::ptr::copy_nonoverlapping(p, q, l.size().min(new_size));
                self.dealloc(p, l);
            }
            q
        }
    }
}

/// mimalloc's `mi_option_purge_delay` (libmimalloc-sys names no constant for it).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Set mimalloc's options; call first thing in `main`.
pub fn configure() {
    // SAFETY: setting an option is thread-safe and takes effect at the next purge.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 10) };
}

/// Bytes a block of `size` bytes really takes: whole pages for a mapping, mimalloc's size
/// class below that. The cache counts this, not the bytes asked for: on 10,000 small
/// sessions, counting the bytes asked for let the cache hold about 30 MB past its budget.
pub fn footprint(size: usize) -> usize {
    if size >= MAP_FROM {
        pages(size)
    } else {
        // SAFETY: a pure function of its argument.
        unsafe { libmimalloc_sys::mi_good_size(size) }
    }
}

/// A mapping for a block of `size` bytes: a kept one when the size is [`MAP_FROM`] and a
/// spare is there (then `true`: its bytes are what its last user left), else a fresh one.
fn mapping(size: usize) -> (*mut u8, bool) {
    if size == MAP_FROM {
        let p = SPARE.take();
        if !p.is_null() {
            return (p, true);
        }
    }
    (map(size), false)
}

fn map(size: usize) -> *mut u8 {
    // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            pages(size),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        std::ptr::null_mut()
    } else {
        p.cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes survive growing and shrinking across the threshold both ways, and within it.
    #[test]
    fn bytes_survive_every_resize() {
        let pattern = |v: &[u8]| v.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8);
        let mut v: Vec<u8> = Vec::with_capacity(100);
        for size in [
            1000,
            MAP_FROM - 1,
            MAP_FROM,
            3 * MAP_FROM + 17,
            40 * MAP_FROM,
        ] {
            while v.len() < size {
                v.push((v.len() % 251) as u8);
            }
            assert!(pattern(&v), "growing to {size}");
        }
        for size in [5 * MAP_FROM, MAP_FROM, MAP_FROM - 1, 10] {
            v.truncate(size);
            v.shrink_to_fit();
            assert_eq!(v.capacity(), size);
            assert!(pattern(&v), "shrinking to {size}");
        }
    }

    /// The option number is mimalloc's: its default is the documented one second.
    #[test]
    fn purge_delay_is_the_option_configure_sets() {
        // SAFETY: reading an option.
        let get = || unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        assert_eq!(get(), 1000);
        configure();
        assert_eq!(get(), 10);
    }

    /// A slot keeps a mapping until it is taken, and no more are kept than there are slots.
    #[test]
    fn spares_hand_back_what_they_keep_up_to_their_slots() {
        let spares = Spares([const { AtomicPtr::new(std::ptr::null_mut()) }; SPARES]);
        assert!(spares.take().is_null());
        let blocks: Vec<*mut u8> = (0..=SPARES).map(|_| map(MAP_FROM)).collect();
        for &b in &blocks[..SPARES] {
            assert!(spares.keep(b));
        }
        assert!(!spares.keep(blocks[SPARES]), "all slots full");
        let mut back: Vec<*mut u8> = (0..SPARES).map(|_| spares.take()).collect();
        assert!(spares.take().is_null());
        back.sort();
        let mut kept = blocks[..SPARES].to_vec();
        kept.sort();
        assert_eq!(back, kept);
        for b in blocks {
            // SAFETY: each is a mapping of MAP_FROM bytes made above and used no more.
            unsafe { libc::munmap(b.cast(), MAP_FROM) };
        }
    }

    /// Blocks of exactly MAP_FROM bytes, which may come from a slot, are zeroed when asked
    /// and grow and shrink as mappings.
    #[test]
    fn threshold_blocks_used_again_are_zeroed_and_resize() {
        for _ in 0..3 * SPARES {
            let a = vec![7u8; MAP_FROM];
            drop(a);
            let mut b = vec![0u8; MAP_FROM];
            assert!(b.iter().all(|&x| x == 0));
            b.resize(3 * MAP_FROM, 1);
            assert_eq!((b[0], b[MAP_FROM]), (0, 1));
            b.truncate(MAP_FROM);
            b.shrink_to_fit();
            assert!(b[..16].iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn footprint_counts_whole_pages_and_size_classes() {
        assert_eq!(footprint(MAP_FROM), MAP_FROM);
        assert_eq!(footprint(MAP_FROM + 1), MAP_FROM + PAGE);
        let small = footprint(1000);
        assert!((1000..1250).contains(&small), "{small}");
    }

    #[test]
    fn big_blocks_are_zeroed_and_page_aligned() {
        let v = vec![0u8; 2 * MAP_FROM + 5];
        assert!(v.iter().all(|&b| b == 0));
        let words = vec![0u64; MAP_FROM];
        assert_eq!(words.as_ptr() as usize % PAGE, 0);
        assert!(words.iter().all(|&w| w == 0));
    }
}
