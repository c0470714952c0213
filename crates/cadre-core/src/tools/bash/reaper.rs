//! Nothing a command started outlives cadre, however cadre ends (SIGKILL too).
//!
//! Each command runs in its own process group led by its shell. Two things
//! tie that group to cadre's life, both set up in the shell's `pre_exec`:
//!
//! - The shell gets a parent-death signal (`PR_SET_PDEATHSIG`, SIGKILL). It
//!   reaches only that one process, and it fires when the *thread* that
//!   forked it ends: commands are spawned from the async runtime's own
//!   threads (never from `spawn_blocking`, whose idle threads exit), which
//!   live as long as cadre.
//! - A watchdog: a second fork of the not-yet-exec'd shell, in a group of its
//!   own, that keeps no descriptor but the read end of a "lifeline" pipe whose
//!   write end only cadre holds (close-on-exec, so no command inherits it).
//!   When cadre ends in any way the kernel closes that write end, the
//!   watchdog's `poll` wakes on the hang-up, and it kills the whole group
//!   (grandchildren such as `sleep 300 &` included, which the parent-death
//!   signal alone leaves running: measured, they are re-parented and run on).
//!   Otherwise it checks twice a second whether the group is empty and then
//!   leaves. Being outside the group, it is not hit when cadre stops the
//!   group, and its probe `kill(-pgid, 0)` sees only the command's processes.
//!
//! The watchdog runs between `fork` and `exec` of a multi-threaded process, so
//! it only makes async-signal-safe system calls: no allocation, no locks.
//! A process that leaves the group (`setsid`, `setpgid`) escapes it; the
//! sandbox's signal scope does not matter here, as the watchdog is forked
//! before the sandbox is applied.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

/// How often the watchdog checks whether its group is empty, in ms.
const PROBE_MS: i32 = 500;

/// Both ends of the lifeline pipe, kept open for cadre's whole life.
static LIFELINE: OnceLock<Option<(OwnedFd, OwnedFd)>> = OnceLock::new();

/// The read end of the lifeline, created on first use; `None` if no pipe
/// could be made (commands then run with the parent-death signal only).
fn lifeline() -> Option<RawFd> {
    LIFELINE
        .get_or_init(|| {
            let mut fds = [0 as libc::c_int; 2];
            // SAFETY: pipe2 fills two new descriptors, which we then own.
            unsafe {
                if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                    return None;
                }
                Some((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
            }
        })
        .as_ref()
        .map(|(r, _)| r.as_raw_fd())
}

/// The `pre_exec` hook that ties a command's process group to cadre's life.
/// Call it after the child is in its own group.
pub(crate) fn tie_to_cadre() -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
    let parent = std::process::id() as libc::pid_t;
    let read_fd = lifeline();
    move || {
        // SAFETY: only async-signal-safe system calls on plain integers.
        unsafe {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // cadre may have died before the signal was armed.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            if let Some(fd) = read_fd {
                let group = libc::getpgrp();
                // A failed fork leaves the parent-death signal on its own.
                if libc::fork() == 0 {
                    watchdog(fd, group);
                }
            }
        }
        Ok(())
    }
}

/// The watchdog's whole life; never returns.
///
/// # Safety
/// Only to be called in a freshly forked child.
unsafe fn watchdog(lifeline: RawFd, group: libc::pid_t) -> ! {
    // SAFETY: async-signal-safe system calls only, on our own descriptors.
    unsafe {
        libc::setpgid(0, 0);
        close_all_but(lifeline);
        loop {
            let mut pfd = libc::pollfd {
                fd: lifeline,
                events: libc::POLLIN,
                revents: 0,
            };
            let n = libc::poll(&mut pfd, 1, PROBE_MS);
            if n > 0 {
                // Nothing is ever written: readable or hung up means cadre is gone.
                libc::kill(-group, libc::SIGKILL);
                libc::_exit(0);
            }
            if n < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(1);
            }
            if libc::kill(-group, 0) != 0 && *libc::__errno_location() == libc::ESRCH {
                libc::_exit(0);
            }
        }
    }
}

/// Closes every descriptor except `keep`, so the watchdog holds neither the
/// command's output pipe (its reader would never see the end) nor the
/// lifeline's write end (cadre's death would go unnoticed).
///
/// # Safety
/// Only in a forked child that owns nothing else.
unsafe fn close_all_but(keep: RawFd) {
    // SAFETY: closing descriptors of this process only.
    unsafe {
        let keep = keep as libc::c_uint;
        let below = keep == 0 || libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32) == 0;
        let above = libc::syscall(libc::SYS_close_range, keep + 1, libc::c_uint::MAX, 0u32) == 0;
        if !(below && above) {
            // Kernels before 5.9 have no close_range.
            for fd in 0..65_536 {
                if fd != keep as libc::c_int {
                    libc::close(fd);
                }
            }
        }
    }
}
