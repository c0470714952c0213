//! Small helpers shared by the built-in tools: blocking work, path display,
//! line cutting, atomic writes.

use std::borrow::Cow;
use std::fs::OpenOptions;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::ToolOutput;

/// Runs blocking work on tokio's blocking pool; a panic becomes an error result.
pub(crate) async fn blocking<F>(work: F) -> ToolOutput
where
    F: FnOnce() -> ToolOutput + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(out) => out,
        Err(e) => ToolOutput::error(format!("internal error: {e}")),
    }
}

/// `path` relative to `cwd` when it lies under it, else as given.
pub(crate) fn display_path(cwd: &Path, path: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// Cuts `line` to at most `max` characters, noting how many were dropped.
pub(crate) fn cut_line(line: &str, max: usize) -> Cow<'_, str> {
    // Fast path: byte length bounds the char count.
    if line.len() <= max {
        return Cow::Borrowed(line);
    }
    match line.char_indices().nth(max) {
        None => Cow::Borrowed(line),
        Some((end, _)) => {
            let dropped = line[end..].chars().count();
            Cow::Owned(format!(
                "{}… [line cut, {dropped} more chars]",
                &line[..end]
            ))
        }
    }
}

/// Position of the first `\n` in `bytes` (memchr-backed via grep-searcher).
pub(crate) fn find_newline(bytes: &[u8]) -> Option<usize> {
    let mut step = grep_searcher::LineStep::new(b'\n', 0, bytes.len());
    match step.next(bytes) {
        Some((_, end)) if end > 0 && bytes[end - 1] == b'\n' => Some(end - 1),
        _ => None,
    }
}

/// A gitignore-aware walker over `root`: hidden files included, `.git`
/// skipped, `.gitignore` honoured even outside a git repository, entries in
/// file-name order.
pub(crate) fn walker(root: &Path) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b));
    builder
}

/// Creates `path`'s missing parent directories, then writes it atomically;
/// the error is a message for the model.
pub(crate) fn write_creating_dirs(path: &Path, data: &[u8]) -> Result<(), String> {
    if let Some(parent) = path.parent()
        && let Err(e) = std::fs::create_dir_all(parent)
    {
        return Err(format!("cannot create directory {}: {e}", parent.display()));
    }
    atomic_write(path, data).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Writes `data` to `path` atomically: a temporary file in the same directory,
/// then a rename over the target. An existing file's permissions are kept; a
/// symlink is written through to its target.
pub(crate) fn atomic_write(path: &Path, data: &[u8]) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);

    let target: PathBuf = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => match std::fs::canonicalize(path) {
            Ok(real) => real,
            // A dangling symlink: write through it the ordinary way.
            Err(_) => return std::fs::write(path, data),
        },
        _ => path.to_path_buf(),
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_string());
    let perms = std::fs::metadata(&target).ok().map(|m| m.permissions());

    let mut attempt = 0;
    let (tmp, mut file) = loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.cadre-{}-{n}.tmp", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
            Err(e) => return Err(e),
        }
    };
    let result = (|| {
        file.write_all(data)?;
        if let Some(perms) = perms {
            file.set_permissions(perms)?;
        }
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, &target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::super::ToolContext;

    /// A context rooted in a fresh temporary directory (kept alive by the guard).
    pub(crate) fn ctx() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        // Canonical, so paths compare equal with what the walkers report.
        let root = dir.path().canonicalize().unwrap();
        (dir, ToolContext::new(root))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_line_counts_chars() {
        assert_eq!(cut_line("abc", 3), "abc");
        assert_eq!(cut_line("ééé", 3), "ééé");
        assert_eq!(cut_line("abcdef", 3), "abc… [line cut, 3 more chars]");
    }

    #[test]
    fn find_newline_works() {
        assert_eq!(find_newline(b"ab\ncd"), Some(2));
        assert_eq!(find_newline(b"abcd"), None);
        assert_eq!(find_newline(b""), None);
        assert_eq!(find_newline(b"\n"), Some(0));
    }

    #[cfg(unix)]
    #[test]
    fn atomic_write_keeps_permissions_and_symlinks() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.sh");
        std::fs::write(&f, "old").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o750)).unwrap();
        atomic_write(&f, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o750);

        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        atomic_write(&link, b"via link").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "via link");
        // No temporary files left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
