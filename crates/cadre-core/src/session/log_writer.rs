//! The thread that writes every session log's lines, in order, off the async
//! runtime's thread; and the log files it writes to.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::sync::{Arc, OnceLock};

use super::SessionError;

/// Lines for the log writer: the file, the lines in order, and who waits
/// for them to be written (no one, for diagnostics).
pub(super) struct LineWrite {
    pub(super) file: Arc<LogFile>,
    pub(super) lines: Vec<Vec<u8>>,
    pub(super) done: Option<tokio::sync::oneshot::Sender<std::io::Result<()>>>,
    /// Where a failure is kept when no one waits for the lines.
    pub(super) failure: Option<Arc<OnceLock<String>>>,
}

/// The thread that writes the lines of every log of this process, started on
/// first use; `None` if it could not be started (lines are then written in place).
pub(super) fn log_writer() -> Option<&'static Sender<LineWrite>> {
    static WRITER: OnceLock<Option<Sender<LineWrite>>> = OnceLock::new();
    WRITER
        .get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<LineWrite>();
            std::thread::Builder::new()
                .name("cadre-log-writer".into())
                .spawn(move || {
                    for job in rx {
                        let written = write_lines(&job.file, &job.lines);
                        if let (Err(e), Some(failure)) = (&written, &job.failure) {
                            let _ = failure.set(e.to_string());
                        }
                        if let Some(done) = job.done {
                            let _ = done.send(written);
                        }
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
}

/// A log's file: open from the start, or created (0600, new) by its first
/// write, on the writer's thread, so that a file system slow to make a file
/// does not hold up the async runtime's thread.
pub(super) struct LogFile {
    path: PathBuf,
    file: OnceLock<File>,
    /// Held while the file is being created, so it is created once.
    creating: std::sync::Mutex<()>,
}

impl std::fmt::Debug for LogFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogFile")
            .field("path", &self.path)
            .field("open", &self.file.get().is_some())
            .finish()
    }
}

impl LogFile {
    pub(super) fn opened(path: &Path, file: File) -> LogFile {
        LogFile {
            path: path.to_path_buf(),
            file: OnceLock::from(file),
            creating: std::sync::Mutex::new(()),
        }
    }

    pub(super) fn on_first_write(path: &Path) -> LogFile {
        LogFile {
            path: path.to_path_buf(),
            file: OnceLock::new(),
            creating: std::sync::Mutex::new(()),
        }
    }

    pub(super) fn get(&self) -> std::io::Result<&File> {
        if let Some(f) = self.file.get() {
            return Ok(f);
        }
        let _creating = self
            .creating
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(f) = self.file.get() {
            return Ok(f);
        }
        let file = open_private(&self.path, true).map_err(|e| match e {
            SessionError::Write { source, .. } => source,
            other => std::io::Error::other(other.to_string()),
        })?;
        Ok(self.file.get_or_init(|| file))
    }
}

/// Writes each line in one `write` (`O_APPEND`: it lands whole at the end).
pub(super) fn write_lines(file: &LogFile, lines: &[Vec<u8>]) -> std::io::Result<()> {
    let mut file = file.get()?;
    for line in lines {
        file.write_all(line)?;
    }
    file.flush()
}

/// Opens a log for appending (0600), as a new file when `create_new`.
pub(super) fn open_private(path: &Path, create_new: bool) -> Result<File, SessionError> {
    let mut opts = OpenOptions::new();
    opts.append(true);
    if create_new {
        opts.create_new(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path).map_err(|source| SessionError::Write {
        path: path.to_path_buf(),
        source,
    })
}
