//! The process's descriptor table, grown once at start-up.
//!
//! Linux grows a process's table of open files when a descriptor past its
//! size is needed (first at 64), and in a process of more than one thread
//! it then waits for an RCU grace period: 10-20 ms on a virtual machine,
//! during which every thread that opens a file or a socket waits too. A
//! batch of 32 children crosses 64 descriptors halfway through its start.
//! Grown here, while there is one thread, it costs a few microseconds.

use std::os::fd::AsRawFd;

/// Highest descriptor the table is grown to hold (within the soft limit).
const RESERVED: libc::c_int = 1023;

/// Grows the descriptor table to hold [`RESERVED`]; best effort. Must run
/// while the process has one thread.
pub fn reserve_table() {
    let Ok(null) = std::fs::File::open("/dev/null") else {
        return;
    };
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return;
    }
    // The soft limit bounds every descriptor: the highest is one below it.
    let below_limit = libc::c_int::try_from(limit.rlim_cur.saturating_sub(1)).unwrap_or(RESERVED);
    let highest = RESERVED.min(below_limit);
    if highest <= 64 {
        return;
    }
    // SAFETY: duplicating a descriptor this function owns; the copy is
    // closed at once and nothing else knows of it.
    unsafe {
        let copy = libc::fcntl(null.as_raw_fd(), libc::F_DUPFD_CLOEXEC, highest);
        if copy >= 0 {
            libc::close(copy);
        }
    }
}
