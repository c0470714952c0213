//! One process per session: a run holds an exclusive `flock` on
//! `locks/<id>.lock` in the data directory (not among the logs) for as long as it uses the session, with its pid
//! written in the file, so a second `--resume` of the same session fails at
//! once, naming the holder, before it reads or writes anything. The kernel
//! drops the lock when the holder ends, however it ends.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::SessionError;

/// `$CADRE_HOME/locks`, where session locks live.
pub fn locks_dir(home: &Path) -> PathBuf {
    home.join("locks")
}

/// The lock file of session `id` in `dir` (the locks directory).
pub fn lock_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.lock"))
}

/// A held session lock; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct SessionLock {
    _file: File,
    path: PathBuf,
}

impl SessionLock {
    /// Takes session `id`'s lock in `dir`, or fails with
    /// [`SessionError::InUse`] naming the process that holds it.
    pub fn acquire(dir: &Path, id: &str) -> Result<SessionLock, SessionError> {
        let path = lock_path(dir, id);
        let write_err = |source| SessionError::Write {
            path: path.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(write_err)?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                return Err(SessionError::InUse {
                    id: id.to_string(),
                    pid: holder_pid(&mut file),
                });
            }
            return Err(write_err(err));
        }
        file.set_len(0).map_err(write_err)?;
        file.seek(SeekFrom::Start(0)).map_err(write_err)?;
        file.write_all(format!("{}\n", std::process::id()).as_bytes())
            .map_err(write_err)?;
        Ok(SessionLock { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SessionLock {
    /// Unlocks explicitly: the lock belongs to the open file, which a process
    /// forked meanwhile (a command starting, not yet exec'd) shares, so
    /// closing our descriptor alone could leave the session locked a while.
    fn drop(&mut self) {
        // SAFETY: flock on a descriptor we own.
        unsafe {
            libc::flock(self._file.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

/// The pid the holder wrote; it may still be writing it, so a few tries.
fn holder_pid(file: &mut File) -> Option<u32> {
    for _ in 0..20 {
        let mut text = String::new();
        if file.seek(SeekFrom::Start(0)).is_ok()
            && file.read_to_string(&mut text).is_ok()
            && let Ok(pid) = text.trim().parse()
        {
            return Some(pid);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid() {
        let dir = tempfile::tempdir().unwrap();
        let first = SessionLock::acquire(dir.path(), "s1").unwrap();
        // flock locks belong to the open file, so a second open in this
        // process conflicts as another process's would.
        let err = SessionLock::acquire(dir.path(), "s1").unwrap_err();
        assert!(
            matches!(&err, SessionError::InUse { id, pid: Some(p) } if id == "s1" && *p == std::process::id()),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .contains(&format!("in use by cadre process {}", std::process::id())),
            "{err}"
        );
        // Another session is free; the first is free once released.
        drop(SessionLock::acquire(dir.path(), "s2").unwrap());
        drop(first);
        assert!(SessionLock::acquire(dir.path(), "s1").is_ok());
    }
}
