//! Workspace trust: whether a folder's project files may do more than narrow
//! the defaults (allow rules, wider modes, `env`, hooks). The user answers
//! once per folder; the answers live in `$CADRE_HOME/trust.json` (0600).
//! A folder inside a trusted folder is trusted too, unless it was itself
//! answered "no".

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ConfigError, MAX_CONFIG_BYTES};
use crate::small_file::read_small_text;

/// The file of answers inside the data directory.
pub const TRUST_FILE: &str = "trust.json";

/// One recorded answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustAnswer {
    /// Whether the folder is trusted.
    pub trusted: bool,
    /// When it was answered (seconds since the Unix epoch).
    #[serde(default)]
    pub answered_unix: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    #[serde(default)]
    folders: BTreeMap<PathBuf, TrustAnswer>,
}

/// The recorded answers.
#[derive(Debug)]
pub struct TrustStore {
    path: PathBuf,
    file: TrustFile,
}

/// How a folder stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustState {
    /// Trusted: this folder, or the named trusted folder above it.
    Trusted(PathBuf),
    /// Answered "no" for this folder.
    Refused,
    /// Never asked.
    Unknown,
}

/// A folder as recorded: absolute and canonical when it exists, so a
/// symlinked path and its target share one answer.
fn folder_key(folder: &Path) -> PathBuf {
    folder
        .canonicalize()
        .unwrap_or_else(|_| folder.to_path_buf())
}

impl TrustStore {
    /// Reads the answers of `data_dir` (none when the file does not exist).
    pub fn load(data_dir: &Path) -> Result<TrustStore, ConfigError> {
        let path = data_dir.join(TRUST_FILE);
        let file = match read_small_text(&path, MAX_CONFIG_BYTES) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| ConfigError::Parse {
                path: path.clone(),
                message: e.to_string(),
            })?,
            Err(e) if e.is_not_found() => TrustFile::default(),
            Err(e) => return Err(e.into()),
        };
        Ok(TrustStore { path, file })
    }

    /// How `folder` stands: its own answer, else the nearest trusted folder above it.
    pub fn state(&self, folder: &Path) -> TrustState {
        let key = folder_key(folder);
        if let Some(a) = self.file.folders.get(&key) {
            return if a.trusted {
                TrustState::Trusted(key)
            } else {
                TrustState::Refused
            };
        }
        for above in key.ancestors().skip(1) {
            if let Some(a) = self.file.folders.get(above)
                && a.trusted
            {
                return TrustState::Trusted(above.to_path_buf());
            }
        }
        TrustState::Unknown
    }

    /// Whether `folder` is trusted.
    pub fn is_trusted(&self, folder: &Path) -> bool {
        matches!(self.state(folder), TrustState::Trusted(_))
    }

    /// Records an answer for `folder` and writes the file (0600, atomically).
    pub fn record(&mut self, folder: &Path, trusted: bool) -> Result<(), ConfigError> {
        let answered_unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.file.folders.insert(
            folder_key(folder),
            TrustAnswer {
                trusted,
                answered_unix,
            },
        );
        self.save()
    }

    /// Forgets the answer for `folder`; true when there was one.
    pub fn forget(&mut self, folder: &Path) -> Result<bool, ConfigError> {
        let had = self.file.folders.remove(&folder_key(folder)).is_some();
        if had {
            self.save()?;
        }
        Ok(had)
    }

    /// Every recorded answer.
    pub fn answers(&self) -> impl Iterator<Item = (&Path, TrustAnswer)> {
        self.file.folders.iter().map(|(p, a)| (p.as_path(), *a))
    }

    fn save(&self) -> Result<(), ConfigError> {
        let io = |source: std::io::Error| ConfigError::DataDir {
            path: self.path.clone(),
            source,
        };
        let text =
            serde_json::to_string_pretty(&self.file).map_err(|e| io(std::io::Error::other(e)))?;
        crate::small_file::write_private(&self.path, &text).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn answers_persist_and_cover_subfolders_unless_refused_there() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let repo = work.path().join("repo");
        let sub = repo.join("sub");
        let other = repo.join("other");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(&other).unwrap();

        let mut store = TrustStore::load(home.path()).unwrap();
        assert_eq!(store.state(&repo), TrustState::Unknown);
        store.record(&repo, true).unwrap();
        store.record(&other, false).unwrap();

        let store = TrustStore::load(home.path()).unwrap();
        assert!(store.is_trusted(&repo));
        assert!(store.is_trusted(&sub), "a subfolder of a trusted folder");
        assert_eq!(store.state(&other), TrustState::Refused);
        assert_eq!(store.state(work.path()), TrustState::Unknown);
        let mode = std::fs::metadata(home.path().join(TRUST_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn forgetting_and_a_broken_file() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let mut store = TrustStore::load(home.path()).unwrap();
        store.record(repo.path(), true).unwrap();
        assert!(store.forget(repo.path()).unwrap());
        assert!(!store.forget(repo.path()).unwrap());
        assert!(
            !TrustStore::load(home.path())
                .unwrap()
                .is_trusted(repo.path())
        );

        std::fs::write(home.path().join(TRUST_FILE), "{not json").unwrap();
        let err = TrustStore::load(home.path()).unwrap_err().to_string();
        assert!(err.contains(TRUST_FILE), "{err}");
    }
}
