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
//! before the sandbox is applied. Hooks and MCP servers go further
//! ([`tie_tree_to_cadre`]): a supervisor that is a child subreaper sits
//! between cadre and the command, so descendants that leave the group are
//! re-parented to it and stopped with the rest.

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
        close_all_but(&[lifeline]);
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

/// Closes every descriptor except those in `keep` (at most four), so a
/// watchdog holds neither the command's output pipe (its reader would never
/// see the end) nor the lifeline's write end (cadre's death would go
/// unnoticed).
///
/// # Safety
/// Only in a forked child that owns nothing else.
unsafe fn close_all_but(keep: &[RawFd]) {
    // Sorted, without allocating.
    let mut kept = [-1 as RawFd; 4];
    let n = keep.len().min(kept.len());
    kept[..n].copy_from_slice(&keep[..n]);
    let kept = &mut kept[..n];
    kept.sort_unstable();
    // SAFETY: closing descriptors of this process only.
    unsafe {
        let mut from: libc::c_uint = 0;
        let mut ranges_closed = true;
        for &k in kept.iter() {
            let Ok(k) = libc::c_uint::try_from(k) else {
                continue;
            };
            if k > from {
                ranges_closed &= libc::syscall(libc::SYS_close_range, from, k - 1, 0u32) == 0;
            }
            from = from.max(k + 1);
        }
        ranges_closed &= libc::syscall(libc::SYS_close_range, from, libc::c_uint::MAX, 0u32) == 0;
        if !ranges_closed {
            // Kernels before 5.9 have no close_range.
            for fd in 0..65_536 {
                if !kept.contains(&fd) {
                    libc::close(fd);
                }
            }
        }
    }
}

/// The `pre_exec` hook for a hook command or an MCP server: like
/// [`tie_to_cadre`], and what it starts in a session or group of its own
/// (`setsid`) is stopped with cadre too.
///
/// The process cadre spawned becomes a relay that execs nothing: it forks a
/// supervisor (in a group of its own, a child subreaper, so every orphaned
/// descendant of the command is re-parented to it rather than to init), and
/// the supervisor forks the command, which joins the relay's group and is
/// the only one of the three to exec. The supervisor passes the command's
/// wait status back to the relay, which ends the same way, so cadre sees the
/// command's own exit; the group cadre signals is the command's. When cadre
/// ends (the lifeline hangs up) or the relay is killed before the command
/// ends, the supervisor kills the group and then every descendant it holds,
/// round after round, until none is left. Otherwise it reaps the orphans as
/// they end and leaves once it has no child.
pub(crate) fn tie_tree_to_cadre() -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
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
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            let Some(lifeline) = read_fd else {
                return Ok(());
            };
            let group = libc::getpgrp();
            let mut status_pipe = [0 as libc::c_int; 2];
            if libc::pipe2(status_pipe.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                // Without the pipe, the plain watchdog.
                if libc::fork() == 0 {
                    watchdog(lifeline, group);
                }
                return Ok(());
            }
            let [status_read, status_write] = status_pipe;
            match libc::fork() {
                -1 => {
                    libc::close(status_read);
                    libc::close(status_write);
                    if libc::fork() == 0 {
                        watchdog(lifeline, group);
                    }
                    Ok(())
                }
                0 => {
                    libc::close(status_read);
                    libc::setpgid(0, 0);
                    libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
                    let supervisor = libc::getpid();
                    match libc::fork() {
                        0 => {
                            // The command: back in the relay's group, dying
                            // with its supervisor.
                            libc::close(status_write);
                            if libc::setpgid(0, group) != 0 {
                                return Err(io::Error::last_os_error());
                            }
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
                            if libc::getppid() != supervisor {
                                return Err(io::Error::from_raw_os_error(libc::ESRCH));
                            }
                            Ok(())
                        }
                        -1 => libc::_exit(126),
                        command => supervise(lifeline, status_write, group, command),
                    }
                }
                _ => relay(status_read, group),
            }
        }
    }
}

/// Every catchable signal back to its default action: a forked copy of
/// cadre that never execs must not run cadre's handlers (they write to
/// descriptors it has closed, whose numbers it may reuse).
///
/// # Safety
/// Only in a forked child that never returns to Rust code.
unsafe fn default_signals() {
    // SAFETY: sigaction with SIG_DFL on each signal number.
    unsafe {
        for sig in 1..32 {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
    }
}

/// The relay's whole life: waits for the command's wait status from the
/// supervisor and ends the same way; never returns.
///
/// # Safety
/// Only in the freshly forked relay.
unsafe fn relay(status_read: RawFd, group: libc::pid_t) -> ! {
    // SAFETY: async-signal-safe system calls only, on our own descriptors.
    unsafe {
        default_signals();
        // What cadre sends the group is for the command; its status comes back here.
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(sig, libc::SIG_IGN);
        }
        close_all_but(&[status_read]);
        let mut bytes = [0u8; 4];
        let mut got = 0;
        while got < bytes.len() {
            let n = libc::read(
                status_read,
                bytes[got..].as_mut_ptr().cast(),
                bytes.len() - got,
            );
            if n > 0 {
                got += n as usize;
            } else if n == 0 || *libc::__errno_location() != libc::EINTR {
                break;
            }
        }
        if got < bytes.len() {
            // The supervisor is gone without a word: take the group down too.
            libc::kill(-group, libc::SIGKILL);
            libc::_exit(125);
        }
        let status = libc::c_int::from_ne_bytes(bytes);
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            // Die of the same signal, without a core file of the relay.
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(libc::WEXITSTATUS(status));
    }
}

/// The supervisor's whole life; never returns.
///
/// # Safety
/// Only in the freshly forked supervisor.
unsafe fn supervise(
    lifeline: RawFd,
    status_write: RawFd,
    group: libc::pid_t,
    command: libc::pid_t,
) -> ! {
    // SAFETY: async-signal-safe system calls only, on our own descriptors.
    unsafe {
        default_signals();
        close_all_but(&[lifeline, status_write]);
        let mut status_write = status_write;
        loop {
            let mut pfds = [
                libc::pollfd {
                    fd: lifeline,
                    events: libc::POLLIN,
                    revents: 0,
                },
                // No events asked: a write end reports only the reader's end.
                libc::pollfd {
                    fd: status_write,
                    events: 0,
                    revents: 0,
                },
            ];
            let n = libc::poll(pfds.as_mut_ptr(), 2, PROBE_MS);
            if n < 0 && *libc::__errno_location() != libc::EINTR {
                stop_all(group);
            }
            if n > 0 && pfds[0].revents != 0 {
                // Nothing is ever written: readable or hung up means cadre is gone.
                stop_all(group);
            }
            if n > 0 && status_write >= 0 && pfds[1].revents & (libc::POLLERR | libc::POLLHUP) != 0
            {
                // The relay was killed before the command ended: so is the command.
                libc::kill(-group, libc::SIGKILL);
                libc::close(status_write);
                status_write = -1;
            }
            loop {
                let mut status = 0;
                let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
                if pid > 0 {
                    if pid == command && status_write >= 0 {
                        let bytes = status.to_ne_bytes();
                        libc::write(status_write, bytes.as_ptr().cast(), bytes.len());
                        libc::close(status_write);
                        status_write = -1;
                    }
                    continue;
                }
                if pid < 0 && *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                if pid < 0 {
                    // No child left: nothing of the command runs any more.
                    libc::_exit(0);
                }
                break;
            }
        }
    }
}

/// Kills the group, then every process re-parented to this supervisor (and
/// the group each leads), until none is left; never returns.
///
/// # Safety
/// Only in the supervisor.
unsafe fn stop_all(group: libc::pid_t) -> ! {
    // SAFETY: async-signal-safe system calls only.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
        // Bounded: a descendant forking faster than this kills is left after 10 s.
        for _ in 0..1000 {
            kill_children();
            loop {
                let mut status = 0;
                let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
                if pid > 0 || (pid < 0 && *libc::__errno_location() == libc::EINTR) {
                    continue;
                }
                if pid < 0 {
                    libc::_exit(0);
                }
                break;
            }
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 10_000_000,
            };
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
        libc::_exit(0);
    }
}

/// Sends SIGKILL to each child of this (single-threaded) process and to the
/// group each leads, read from `/proc/thread-self/children`.
///
/// # Safety
/// Only in the supervisor.
unsafe fn kill_children() {
    // SAFETY: open, read and close of one proc file, and kill.
    unsafe {
        let fd = libc::open(
            c"/proc/thread-self/children".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return;
        }
        let mut buf = [0u8; 512];
        let mut pid: libc::pid_t = 0;
        loop {
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            if n <= 0 {
                break;
            }
            for &b in &buf[..n as usize] {
                if b.is_ascii_digit() {
                    pid = pid
                        .saturating_mul(10)
                        .saturating_add(libc::pid_t::from(b - b'0'));
                } else if pid > 0 {
                    kill_tree_root(pid);
                    pid = 0;
                }
            }
        }
        if pid > 0 {
            kill_tree_root(pid);
        }
        libc::close(fd);
    }
}

/// SIGKILL to `pid` and to the group it leads, if it leads one.
///
/// # Safety
/// Only in the supervisor, for one of its children.
unsafe fn kill_tree_root(pid: libc::pid_t) {
    // SAFETY: kill on a child's pid; a pid is never reused while a group of
    // that id exists, so a group of this id is the child's own.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
        libc::kill(pid, libc::SIGKILL);
    }
}
