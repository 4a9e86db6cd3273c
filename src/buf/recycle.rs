//! Big rendered-file buffers, used again.
//!
//! A rendered file of [`EXACT_COPY_BELOW`] bytes or more lives in a mapping of its own, so
//! that evicting it gives the memory back to the system ([`crate::alloc`]). Once a walk has filled the cache, that made every big file cost twice: the
//! render mapped a fresh buffer and faulted it in page by page, and the eviction that made
//! room unmapped one of about the same size. Evicted buffers now wait here, up to
//! [`KEEP_BYTES`], and the next render writes into their pages.

use super::EXACT_COPY_BELOW;
use std::sync::{Mutex, MutexGuard};

/// At most this many bytes of buffers wait to be used again. They are outside the cache
/// budget, part of the small constant beside it.
pub const KEEP_BYTES: usize = 4 << 20;

struct Free {
    bufs: Vec<Vec<u8>>,
    bytes: usize,
    keep: usize,
}

static FREE: Mutex<Free> = Mutex::new(Free::new(KEEP_BYTES));

fn free() -> MutexGuard<'static, Free> {
    FREE.lock().unwrap_or_else(|e| e.into_inner())
}

/// An empty buffer with room for `expected` bytes: a waiting one when `expected` is big.
pub fn take(expected: usize) -> Vec<u8> {
    let waiting = if expected >= EXACT_COPY_BELOW {
        free().pop()
    } else {
        None
    };
    match waiting {
        Some(mut b) => {
            b.clear();
            b.reserve(expected);
            b
        }
        None => Vec::with_capacity(expected),
    }
}

/// Keep `b` for a later [`take`] when it is big and there is room; free it otherwise.
pub fn give(b: Vec<u8>) {
    if b.capacity() < EXACT_COPY_BELOW {
        return;
    }
    let refused = free().push(b);
    // Unmapping takes a while; not under the lock.
    drop(refused);
}

impl Free {
    const fn new(keep: usize) -> Free {
        Free {
            bufs: Vec::new(),
            bytes: 0,
            keep,
        }
    }

    fn pop(&mut self) -> Option<Vec<u8>> {
        let b = self.bufs.pop()?;
        self.bytes -= b.capacity();
        Some(b)
    }

    /// Keeps `b` if there is room; gives it back otherwise.
    fn push(&mut self, b: Vec<u8>) -> Option<Vec<u8>> {
        if self.bytes + b.capacity() > self.keep {
            return Some(b);
        }
        self.bytes += b.capacity();
        self.bufs.push(b);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_at_most_its_share() {
        let mut f = Free::new(4 << 20);
        let kept = (0..8)
            .filter(|_| f.push(vec![7u8; 1 << 20]).is_none())
            .count();
        assert_eq!((kept, f.bytes), (4, 4 << 20));
        assert_eq!(f.pop().map(|b| b.capacity()), Some(1 << 20));
        assert_eq!(f.bytes, 3 << 20);
    }

    /// A big request gets a buffer with room for it, empty; a small file is never kept.
    #[test]
    fn big_requests_get_empty_buffers_with_room() {
        give(vec![1u8; 100]);
        give(vec![9u8; EXACT_COPY_BELOW]);
        let b = take(3 * EXACT_COPY_BELOW);
        assert!(b.is_empty() && b.capacity() >= 3 * EXACT_COPY_BELOW);
        let small = take(100);
        assert!(small.is_empty() && small.capacity() >= 100);
    }
}
