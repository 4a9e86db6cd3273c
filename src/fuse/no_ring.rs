//! FUSE over io_uring is Linux's alone. Elsewhere this stands in for `ring.rs` with the same
//! names: no queues are ever prepared, so every request comes through the FUSE device.

use super::SessFs;
use std::os::fd::BorrowedFd;

/// Where Linux says whether FUSE offers io_uring queues; absent here, so `doctor` says the
/// device is used.
pub(super) const ENABLE_URING: &str = "/sys/module/fuse/parameters/enable_uring";

/// The largest READ a mount asks for: with no queues, just the largest the device takes.
pub(super) fn payload_size(largest: usize) -> usize {
    largest
}

/// Queues made before INIT: never any here.
pub(super) struct Prepared;

fn unsupported() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "FUSE over io_uring is Linux-only",
    )
}

pub(super) fn prepare(_payload: usize) -> std::io::Result<Prepared> {
    Err(unsupported())
}

pub(super) fn start(
    _sfs: SessFs,
    _dev: BorrowedFd<'_>,
    _prepared: Prepared,
) -> std::io::Result<usize> {
    Err(unsupported())
}
