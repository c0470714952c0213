//! Reading the small text files a project or user hands cadre (config,
//! instructions, agent definitions): only regular files (after following
//! symlinks), only up to a limit the caller states. A file committed as a
//! symlink to `/dev/zero` or as a FIFO must give an error, not a 2 GB read or
//! a hang. Each caller decides what an error means (fatal, or a warning).

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use thiserror::Error;

/// Why a small file could not be read.
#[derive(Debug, Error)]
pub enum SmallFileError {
    /// Nothing at that path (or a dangling symlink).
    #[error("{} does not exist", path.display())]
    NotFound {
        /// File path.
        path: PathBuf,
    },
    /// A directory, FIFO, socket or device.
    #[error("cannot read {}: not a regular file (it is {kind})", path.display())]
    NotRegular {
        /// File path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// Over the caller's limit.
    #[error("cannot read {}: larger than {limit} bytes", path.display())]
    TooLarge {
        /// File path.
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },
    /// Not UTF-8 text.
    #[error("cannot read {}: not valid UTF-8", path.display())]
    NotUtf8 {
        /// File path.
        path: PathBuf,
    },
    /// Any other I/O failure.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// File path.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

impl SmallFileError {
    /// True when nothing exists at the path (callers usually treat that as "no file").
    pub fn is_not_found(&self) -> bool {
        matches!(self, SmallFileError::NotFound { .. })
    }
}

fn kind_name(ft: std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else {
        "not a file"
    }
}

/// Reads `path` as UTF-8 text if it is a regular file (symlinks followed) of
/// at most `limit` bytes.
pub fn read_small_text(path: &Path, limit: u64) -> Result<String, SmallFileError> {
    let bytes = read_small(path, limit)?;
    String::from_utf8(bytes).map_err(|_| SmallFileError::NotUtf8 {
        path: path.to_path_buf(),
    })
}

/// Reads `path` if it is a regular file (symlinks followed) of at most `limit` bytes.
pub fn read_small(path: &Path, limit: u64) -> Result<Vec<u8>, SmallFileError> {
    let io = |source: std::io::Error| match source.kind() {
        ErrorKind::NotFound => SmallFileError::NotFound {
            path: path.to_path_buf(),
        },
        _ => SmallFileError::Io {
            path: path.to_path_buf(),
            source,
        },
    };
    let not_regular = |ft: std::fs::FileType| SmallFileError::NotRegular {
        path: path.to_path_buf(),
        kind: kind_name(ft),
    };
    // Checked before opening: opening some devices has effects of its own.
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.file_type().is_file() {
        return Err(not_regular(meta.file_type()));
    }
    // O_NONBLOCK: if the path was swapped for a FIFO since the check, the
    // open returns at once instead of waiting for a writer.
    let file: File = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(io)?;
    // What was opened is what counts.
    let meta = file.metadata().map_err(io)?;
    if !meta.file_type().is_file() {
        return Err(not_regular(meta.file_type()));
    }
    let too_large = || SmallFileError::TooLarge {
        path: path.to_path_buf(),
        limit,
    };
    if meta.size() > limit {
        return Err(too_large());
    }
    // The file may grow while it is read: never take more than limit + 1.
    let mut bytes = Vec::with_capacity(meta.size() as usize);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Writes a small file of cadre's own (an answer store in the data directory)
/// atomically and privately: a temp file beside it, 0600, never through a link,
/// synced, then renamed over `path`, so a crash leaves the old file or the new.
pub fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Writes `text` to `path`, making its folders first: the fixture writer
/// of the core's unit tests.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn write_with_dirs(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_within_the_limit_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.toml");
        std::fs::write(&p, "x = 1\n").unwrap();
        assert_eq!(read_small_text(&p, 6).unwrap(), "x = 1\n");
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert_eq!(read_small_text(&link, 6).unwrap(), "x = 1\n");
        assert!(matches!(
            read_small_text(&p, 5),
            Err(SmallFileError::TooLarge { limit: 5, .. })
        ));
    }

    #[test]
    fn devices_directories_and_missing_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let err = read_small(&zero, 10).unwrap_err();
        assert!(err.to_string().contains("character device"), "{err}");
        assert!(matches!(
            read_small(dir.path(), 10),
            Err(SmallFileError::NotRegular { .. })
        ));
        assert!(
            read_small(&dir.path().join("none"), 10)
                .unwrap_err()
                .is_not_found()
        );
        std::fs::write(dir.path().join("bad"), [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read_small_text(&dir.path().join("bad"), 10),
            Err(SmallFileError::NotUtf8 { .. })
        ));
    }
}
