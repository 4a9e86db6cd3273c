//! The buffers rendered files live in: allocations of exactly their length, and big
//! buffers used again.
//!
//! The renderers ([`crate::render`]) finish a file's buffer with [`exact`], the spill sink
//! ([`crate::spill`]) takes its buffers from [`recycle`] and finishes them the same way, and
//! the cache ([`crate::cache`]) hands evicted ones back to [`recycle`]. All three stand on
//! this module, which stands on [`crate::alloc`] alone.

pub mod recycle;

/// `v` in an allocation of exactly its length, as the cache budget counts it. A small file
/// is copied out rather than shrunk in place: shrinking leaves the unused tail as a hole
/// beside a file the cache may keep for long, and such holes, too small for the next
/// files, grew the heap by a third of the budget over a walk of 2,000 sessions.
pub fn exact(mut v: Vec<u8>) -> Vec<u8> {
    if v.capacity() == v.len() {
        v
    } else if v.len() < EXACT_COPY_BELOW {
        let copy = v.as_slice().to_vec();
        recycle::give(v);
        copy
    } else {
        // Big ones have a mapping of their own, which shrinks without a hole.
        v.shrink_to_fit();
        v
    }
}

/// Files smaller than this are copied into an exact allocation by [`exact`]; it is the
/// size from which a buffer gets a mapping of its own ([`crate::alloc`]).
pub const EXACT_COPY_BELOW: usize = crate::alloc::MAP_FROM;
