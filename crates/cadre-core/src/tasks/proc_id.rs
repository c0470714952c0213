//! Which process a pid really is: a pid alone is reused, so a task's owner
//! (and a shell's process group leader) is stored with its start time (field
//! 22 of `/proc/<pid>/stat`, clock ticks since boot) and the boot id
//! (`/proc/sys/kernel/random/boot_id`). A process is the recorded one only
//! if all three match.

use std::sync::OnceLock;

/// A process, named so that a reused pid is not mistaken for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessId {
    /// The pid.
    pub pid: u32,
    /// Its start time in clock ticks since boot; `None` when not known
    /// (rows written before it was recorded, or no `/proc`).
    pub start: Option<u64>,
    /// The boot it ran in; `None` when not known.
    pub boot: Option<String>,
}

/// The fields after the command name in `/proc/<pid>/stat`, starting with
/// field 3 (state). The name can hold spaces and parentheses, so the split is
/// at the last `)`.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Field `n` (1-based, as in proc(5)) of `/proc/<pid>/stat`, for n >= 3.
fn stat_field(pid: u32, n: usize) -> Option<String> {
    stat_fields(pid)?.into_iter().nth(n.checked_sub(3)?)
}

/// The start time of `pid` in clock ticks since boot, if it exists.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    stat_field(pid, 22)?.parse().ok()
}

/// The process group of `pid`, if it exists.
pub(crate) fn process_group(pid: u32) -> Option<u32> {
    stat_field(pid, 5)?.parse().ok()
}

/// This boot's id, read once.
pub(crate) fn boot_id() -> Option<String> {
    static BOOT: OnceLock<Option<String>> = OnceLock::new();
    BOOT.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    })
    .clone()
}

/// Whether `/proc` can tell us about processes at all.
fn have_procfs() -> bool {
    static HAVE: OnceLock<bool> = OnceLock::new();
    *HAVE.get_or_init(|| start_time(std::process::id()).is_some())
}

impl ProcessId {
    /// This process.
    pub fn current() -> ProcessId {
        static ME: OnceLock<ProcessId> = OnceLock::new();
        ME.get_or_init(|| ProcessId::of(std::process::id())).clone()
    }

    /// Process `pid` as it is now (start time `None` if it does not exist).
    pub fn of(pid: u32) -> ProcessId {
        ProcessId {
            pid,
            start: start_time(pid),
            boot: boot_id(),
        }
    }

    /// Whether this very process is still running: same boot, same pid and
    /// same start time. Without a recorded start time (or without `/proc`)
    /// only the pid can be checked.
    pub fn alive(&self) -> bool {
        if let (Some(then), Some(now)) = (&self.boot, boot_id())
            && *then != now
        {
            return false;
        }
        match self.start {
            // A zombie (killed, not yet reaped by its parent) keeps its pid
            // and start time but runs nothing.
            Some(start) if have_procfs() => match stat_fields(self.pid) {
                Some(f) => {
                    f.first().is_some_and(|s| s != "Z" && s != "X")
                        && f.get(19).and_then(|t| t.parse().ok()) == Some(start)
                }
                None => false,
            },
            _ => super::process_alive(self.pid),
        }
    }

    /// Whether this is the calling process.
    pub fn is_current(&self) -> bool {
        let me = ProcessId::current();
        self.pid == me.pid
            && (self.start.is_none() || self.start == me.start)
            && (self.boot.is_none() || self.boot == me.boot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let me = ProcessId::current();
        assert!(me.start.is_some());
        assert!(me.boot.as_deref().is_some_and(|b| b.len() == 36), "{me:?}");
        assert!(me.alive() && me.is_current());
        let wrong = ProcessId {
            start: me.start.map(|s| s + 1),
            ..me.clone()
        };
        assert!(!wrong.alive() && !wrong.is_current());
        let other_boot = ProcessId {
            boot: Some("00000000-0000-0000-0000-000000000000".into()),
            ..me.clone()
        };
        assert!(!other_boot.alive());
        // SAFETY: getpgrp has no preconditions.
        let pgrp = unsafe { libc::getpgrp() } as u32;
        assert_eq!(process_group(me.pid), Some(pgrp));
    }
}
