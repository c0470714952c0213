//! The API keys, read once at start-up and then made unreachable through this
//! process: gone from its environment (so no child inherits them), wiped from
//! the environment block the kernel shows in `/proc/<pid>/environ`, and the
//! process made non-dumpable (no core dump; `/proc/<pid>/environ`, `mem` and
//! `maps` refused to other processes of a normal user).
//!
//! What was measured (Linux 6.18, Landlock ABI 7; reader: a Bash command):
//! - Sandboxed, as root: `/proc/<cadre>/environ` and `maps` were readable (so
//!   the key leaked), `mem` was refused. The sandbox keeps root's
//!   `CAP_SYS_PTRACE`, and with it the read-mode ptrace check `environ` makes
//!   passed although cadre lies outside the command's Landlock domain, while
//!   the attach-mode check `mem` makes did not. `PR_SET_DUMPABLE 0` changes
//!   nothing for such a reader. What protects the key there is that it has
//!   left the block: `std::env::remove_var` only edits libc's pointer array,
//!   the kernel shows the original strings, so their bytes are overwritten.
//! - Sandboxed, as a normal user (`setpriv --reuid=nobody`): `environ`,
//!   `mem` and `maps` were refused with or without `PR_SET_DUMPABLE 0`
//!   (Landlock's ptrace scoping holds).
//! - Unsandboxed (a command the user let run outside the sandbox), as a
//!   normal user: `environ` and `maps` were readable; with
//!   `PR_SET_DUMPABLE 0` they are refused (`/proc/<cadre>` becomes root's).
//! - Core dumps: a SIGABRT'd cadre wrote a core holding the key five times;
//!   with `PR_SET_DUMPABLE 0` no core is written, as root or not.
//! - `/proc/<pid>/cmdline` never held a key: no flag takes one.
//!
//! Not covered here: an ancestor of cadre with the key in its own environment
//! (the user's shell exporting it) stays readable through
//! `/proc/<ancestor>/environ` to a sandboxed command running as root.

use std::ffi::CStr;
use std::sync::OnceLock;

use cadre_core::secrets::KEY_VARS;

static KEYS: OnceLock<Vec<(&'static str, String)>> = OnceLock::new();

unsafe extern "C" {
    /// libc's environment pointer array (POSIX `environ`).
    static mut environ: *const *mut libc::c_char;
}

/// Reads the keys, wipes them from the environment, registers them for
/// redaction and makes the process non-dumpable. Must run first in `main`,
/// while the process has one thread (it edits the environment).
pub fn take_from_environment() {
    let mut keys = Vec::new();
    for name in KEY_VARS {
        if let Some(value) = std::env::var_os(name) {
            let value = value.to_string_lossy().into_owned();
            cadre_core::secrets::register(&value);
            keys.push((name, value));
        }
    }
    // SAFETY: called first thing in `main`, before any other thread exists,
    // so nothing reads or writes the environment concurrently.
    unsafe {
        wipe_environment_values(&KEY_VARS);
        for name in KEY_VARS {
            std::env::remove_var(name);
        }
    }
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    let _ = KEYS.set(keys);
}

/// Overwrites, in place, the value bytes of every `NAME=value` entry of the
/// environment whose name is in `names`.
///
/// # Safety
/// No other thread may touch the environment meanwhile.
unsafe fn wipe_environment_values(names: &[&str]) {
    // SAFETY: `environ` is a NULL-terminated array of NUL-terminated strings
    // owned by the process; before anything calls setenv they point into the
    // block the kernel set up at exec, which is writable stack memory.
    unsafe {
        let mut entry = environ;
        if entry.is_null() {
            return;
        }
        while !(*entry).is_null() {
            let s = *entry;
            let bytes = CStr::from_ptr(s).to_bytes();
            let len = bytes.len();
            let value_start = names.iter().find_map(|n| {
                let secret = bytes.len() > n.len()
                    && bytes.starts_with(n.as_bytes())
                    && bytes[n.len()] == b'=';
                secret.then_some(n.len() + 1)
            });
            // `bytes` is not used past here: the writes go through `s` alone.
            if let Some(start) = value_start {
                for i in start..len {
                    std::ptr::write_volatile(s.add(i), 0);
                }
            }
            entry = entry.add(1);
        }
    }
}

/// The key read at start-up from `name` (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`),
/// if it was set and not blank.
pub fn key(name: &str) -> Option<String> {
    KEYS.get()?
        .iter()
        .find(|(n, v)| *n == name && !v.trim().is_empty())
        .map(|(_, v)| v.clone())
}

/// `name` from the environment, or from the keys read at start-up for a key's name.
pub fn var(name: &str) -> Option<String> {
    if KEY_VARS.contains(&name) {
        return key(name);
    }
    std::env::var(name).ok()
}
