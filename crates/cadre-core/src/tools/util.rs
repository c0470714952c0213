//! Small helpers shared by the built-in tools: blocking work, path display,
//! line cutting, search scopes, atomic writes.

use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{ToolContext, ToolOutput, exact};
use crate::permissions::{PermissionPolicy, resolve_real};

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

/// What a search (`Glob`, `Grep`) may see below its root: not the data
/// directory, nothing a `Read` deny rule covers, and no symlink leading out of
/// both the search root and the project.
pub(crate) struct SearchScope {
    tool: &'static str,
    /// The resolved search root.
    pub(crate) root: PathBuf,
    project: PathBuf,
    policy: Option<Arc<PermissionPolicy>>,
}

impl SearchScope {
    /// The scope of a `tool` search from the resolved `root`.
    pub(crate) fn new(ctx: &ToolContext, tool: &'static str, root: PathBuf) -> Arc<Self> {
        let project = ctx
            .policy
            .as_ref()
            .map_or_else(|| ctx.cwd.clone(), |p| p.project_dir.clone());
        Arc::new(SearchScope {
            tool,
            root,
            project,
            policy: ctx.policy.clone(),
        })
    }

    fn skips(&self, path: &Path) -> bool {
        self.policy
            .as_ref()
            .is_some_and(|p| p.search_skips(self.tool, &self.root, path))
    }

    /// The path to open for a file the walk found (a symlink's resolved
    /// target), or `None` when the search must not see it.
    pub(crate) fn file(&self, entry: &ignore::DirEntry) -> Option<PathBuf> {
        let kind = entry.file_type()?;
        let path = entry.path();
        if kind.is_file() {
            return (!self.skips(path)).then(|| path.to_path_buf());
        }
        if !kind.is_symlink() || self.skips(path) {
            return None;
        }
        let real = resolve_real(Path::new("/"), path);
        let reachable = real.starts_with(&self.root) || real.starts_with(&self.project);
        if !reachable || self.skips(&real) {
            return None;
        }
        std::fs::symlink_metadata(&real)
            .is_ok_and(|m| m.is_file())
            .then_some(real)
    }

    /// A gitignore-aware walker over the root: hidden files included, `.git`
    /// and whatever the scope hides skipped (directories are not entered),
    /// `.gitignore` honoured even outside a git repository, entries in
    /// file-name order.
    pub(crate) fn walker(self: &Arc<Self>) -> ignore::WalkBuilder {
        let mut builder = ignore::WalkBuilder::new(&self.root);
        let scope = Arc::clone(self);
        builder
            .hidden(false)
            .require_git(false)
            .filter_entry(move |entry| entry.file_name() != ".git" && !scope.skips(entry.path()))
            .sort_by_file_name(|a, b| a.cmp(b));
        builder
    }
}

/// Writes `data` to the resolved `path` atomically (a temporary file beside
/// it, then a rename), following no symlink; an existing file's permissions
/// are kept.
pub(crate) fn atomic_write(path: &Path, data: &[u8]) -> io::Result<()> {
    exact::write_atomic(path, data, false)
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

    /// Whether `pid` is dead (or a zombie) within a second.
    #[cfg(target_os = "linux")]
    pub(crate) async fn gone_soon(pid: i32) -> bool {
        for _ in 0..20 {
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => return true,
                Ok(stat) => {
                    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
                    if state.starts_with('Z') || state.starts_with('X') {
                        return true;
                    }
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        false
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
    fn atomic_write_keeps_permissions_and_refuses_symlinks() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let f = root.join("a.sh");
        std::fs::write(&f, "old").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o750)).unwrap();
        atomic_write(&f, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o750);

        // The tools resolve a link first and write its target; a link met
        // here means the tree changed since, and is not followed.
        let link = root.join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert!(atomic_write(&link, b"via link").is_err());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
        // No temporary files left behind.
        assert_eq!(std::fs::read_dir(&root).unwrap().count(), 2);
    }
}
