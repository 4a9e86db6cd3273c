//! What the threads sessfs starts share: how many there are, the idle policy of those
//! that only guess ahead, and the message of a panic caught in one.
//!
//! Used by the tree, the FUSE adapter and the search index alike; it holds no state.

/// The text of a caught panic (its `&str` or `String` payload), for the warning or the log
/// line that stands for it.
pub fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

/// Put the calling thread at `SCHED_IDLE`: it runs only on time no other thread wants.
/// (Linux's policy; elsewhere the thread keeps its priority.)
#[cfg(not(target_os = "linux"))]
pub fn set_idle_policy() {}

/// Put the calling thread at `SCHED_IDLE`: it runs only on time no other thread wants.
#[cfg(target_os = "linux")]
pub fn set_idle_policy() {
    // SAFETY: sched_param is plain data; the call only reads it.
    let r = unsafe {
        let p = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &p)
    };
    if r != 0 {
        log::debug!("no idle policy: {}", std::io::Error::last_os_error());
    }
}

/// The machine's cores (at least 1): render-ahead threads and FUSE workers scale with it.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
