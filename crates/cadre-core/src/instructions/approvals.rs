//! The user's answers about instruction imports that leave a project: per
//! project root, each outside file asked about and whether it may be
//! imported. They live in `$CADRE_HOME/imports.json` (0600), beside the
//! workspace trust answers; a file never asked about is not imported.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::small_file::{SmallFileError, read_small_text};

/// The file of answers inside the data directory.
pub const APPROVALS_FILE: &str = "imports.json";
/// Largest answers file read (a few hundred bytes a project).
const MAX_APPROVALS_BYTES: u64 = 1 << 20;

/// The answers file cannot be read or written.
#[derive(Debug, Error)]
pub enum ApprovalsError {
    /// Not a regular file, too large, or not text.
    #[error(transparent)]
    File(#[from] SmallFileError),
    /// Not the JSON cadre writes.
    #[error("{path}: {message}")]
    Parse {
        /// File path.
        path: PathBuf,
        /// Parser message.
        message: String,
    },
    /// Writing it failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// File path.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

/// The answers for one project.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProjectAnswers {
    /// Each outside file asked about (resolved) and whether it was approved.
    #[serde(default)]
    pub files: BTreeMap<PathBuf, bool>,
    /// When last answered (seconds since the Unix epoch).
    #[serde(default)]
    pub answered_unix: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ApprovalsFile {
    #[serde(default)]
    projects: BTreeMap<PathBuf, ProjectAnswers>,
}

/// The recorded answers.
#[derive(Debug)]
pub struct ImportApprovals {
    path: PathBuf,
    file: ApprovalsFile,
}

impl ImportApprovals {
    /// Reads the answers of `data_dir` (none when the file does not exist).
    pub fn load(data_dir: &Path) -> Result<ImportApprovals, ApprovalsError> {
        let path = data_dir.join(APPROVALS_FILE);
        let file = match read_small_text(&path, MAX_APPROVALS_BYTES) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| ApprovalsError::Parse {
                path: path.clone(),
                message: e.to_string(),
            })?,
            Err(e) if e.is_not_found() => ApprovalsFile::default(),
            Err(e) => return Err(e.into()),
        };
        Ok(ImportApprovals { path, file })
    }

    /// The outside files approved for the project at `root`.
    pub fn approved(&self, root: &Path) -> BTreeSet<PathBuf> {
        self.file
            .projects
            .get(root)
            .map(|p| {
                p.files
                    .iter()
                    .filter(|(_, yes)| **yes)
                    .map(|(f, _)| f.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether the user already answered for `file` in the project at `root`.
    pub fn answered(&self, root: &Path, file: &Path) -> bool {
        self.file
            .projects
            .get(root)
            .is_some_and(|p| p.files.contains_key(file))
    }

    /// Records one answer for `files` of the project at `root`, and writes the file.
    pub fn record(
        &mut self,
        root: &Path,
        files: &[PathBuf],
        approved: bool,
    ) -> Result<(), ApprovalsError> {
        let project = self.file.projects.entry(root.to_path_buf()).or_default();
        for f in files {
            project.files.insert(f.clone(), approved);
        }
        project.answered_unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.save()
    }

    /// Writes the answers atomically, 0600, never through a link.
    fn save(&self) -> Result<(), ApprovalsError> {
        let err = |source: std::io::Error| ApprovalsError::Write {
            path: self.path.clone(),
            source,
        };
        let text =
            serde_json::to_string_pretty(&self.file).map_err(|e| err(std::io::Error::other(e)))?;
        crate::small_file::write_private(&self.path, &text).map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn answers_persist_per_project_and_file() {
        let data = tempfile::tempdir().unwrap();
        let root = Path::new("/p/repo");
        let mut a = ImportApprovals::load(data.path()).unwrap();
        assert!(a.approved(root).is_empty());
        a.record(root, &[PathBuf::from("/h/notes.md")], true)
            .unwrap();
        a.record(root, &[PathBuf::from("/h/.ssh/id_rsa")], false)
            .unwrap();
        let a = ImportApprovals::load(data.path()).unwrap();
        assert_eq!(
            a.approved(root),
            BTreeSet::from([PathBuf::from("/h/notes.md")])
        );
        assert!(a.answered(root, Path::new("/h/.ssh/id_rsa")));
        assert!(!a.answered(Path::new("/p/other"), Path::new("/h/notes.md")));
        let mode = std::fs::metadata(data.path().join(APPROVALS_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(data.path().join(APPROVALS_FILE), "{nope").unwrap();
        let err = ImportApprovals::load(data.path()).unwrap_err().to_string();
        assert!(err.contains(APPROVALS_FILE), "{err}");
    }
}
