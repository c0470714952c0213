//! Code checkpoints: before each user message a checkpoint opens, and the
//! first time a file tool (`Write`, `Edit`, `NotebookEdit`) is about to
//! change a file during it, the file's content (or its absence) is saved,
//! stored once by its sha256 under `sessions/<id>.checkpoints/`. Going back
//! to a checkpoint writes those contents back. The index is on disk, so a
//! resumed session can go back too; the last [`KEEP`] checkpoints are kept.
//!
//! Only what the file tools change is tracked: `Bash` commands are noted by
//! their text (their effects cannot be undone), and symlinked or hard-linked
//! files are named as skipped rather than restored through the link.

mod offline;
#[cfg(test)]
mod tests;

pub use offline::{OfflineRewind, OfflineRewindError, rewind_session, session_checkpoints};

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::protocol::{CheckpointInfo, SkipReason, SkippedFile};

/// How many checkpoints a session keeps (the oldest go first).
pub const KEEP: usize = 100;

/// Version of the index format.
const INDEX_VERSION: u32 = 1;

/// The longest `Bash` command text kept in a checkpoint.
const BASH_TEXT_MAX: usize = 200;

/// `sessions/<id>.checkpoints`, beside the session's log.
pub fn checkpoints_dir(home: &Path, session_id: &str) -> PathBuf {
    crate::session::sessions_dir(home).join(format!("{session_id}.checkpoints"))
}

/// Why checkpoints could not be kept or restored.
#[derive(Debug, Error)]
pub enum CheckpointError {
    /// The folder, the index or a saved content could not be read or written.
    #[error("checkpoints: cannot use {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// The index is not what cadre writes.
    #[error("checkpoints: the index {0} is unreadable")]
    BadIndex(PathBuf),
    /// No checkpoint has that number (or it was pruned).
    #[error("no checkpoint {0} (see the list of checkpoints)")]
    NotFound(u64),
    /// No checkpoint was taken before that message.
    #[error("no checkpoint was taken before that message")]
    NoCheckpointFor,
    /// Files changed outside cadre since cadre last wrote them; restoring
    /// would overwrite them.
    #[error("these files changed outside cadre since cadre last wrote them: {}", list(.0))]
    ChangedOutside(Vec<PathBuf>),
    /// A saved content is missing.
    #[error("checkpoints: the saved content {0} is missing")]
    MissingContent(String),
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A file's content before a checkpoint's first change to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedFile {
    /// The file (the real path the tool wrote).
    pub path: PathBuf,
    /// sha256 of its content then; none when it did not exist.
    pub before: Option<String>,
    /// Its permission bits then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
}

/// One checkpoint: taken before a user message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Its number in the session, from 1.
    pub number: u64,
    /// The message.
    pub prompt: String,
    /// When, ms since the Unix epoch.
    pub time_ms: u64,
    /// Files changed during it, with their content before.
    #[serde(default)]
    pub files: Vec<SavedFile>,
    /// Files changed during it that a restore leaves alone.
    #[serde(default)]
    pub skipped: Vec<SkippedFile>,
    /// `Bash` commands run during it.
    #[serde(default)]
    pub bash: Vec<String>,
}

impl Checkpoint {
    fn touches(&self, path: &Path) -> bool {
        self.files.iter().any(|f| f.path == path)
            || self.skipped.iter().any(|s| Path::new(&s.path) == path)
    }
}

/// The index file: the checkpoints kept and what cadre last wrote where.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Index {
    v: u32,
    checkpoints: Vec<Checkpoint>,
    /// sha256 of the content cadre last left in each file (none: it removed
    /// the file), to tell changes made outside cadre.
    #[serde(default)]
    last_written: BTreeMap<PathBuf, Option<String>>,
}

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// Files written back.
    pub restored: Vec<PathBuf>,
    /// Files the tools had created, removed.
    pub removed: Vec<PathBuf>,
    /// Files left alone.
    pub skipped: Vec<SkippedFile>,
    /// `Bash` commands run since, not undone.
    pub bash_commands: Vec<String>,
}

/// A session's checkpoints: the index in memory and on disk, and the saved
/// contents. Shared by the main agent and its foreground children.
#[derive(Debug)]
pub struct CheckpointStore {
    dir: PathBuf,
    keep: usize,
    index: Mutex<Index>,
}

/// sha256 of `bytes`, in hex.
pub fn content_hash(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for b in digest {
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

/// The file's content now (none when it does not exist or is no file).
fn read_file(path: &Path) -> Result<Option<(Vec<u8>, u32)>, std::io::Error> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => {
            let bytes = std::fs::read(path)?;
            Ok(Some((bytes, meta.permissions().mode() & 0o7777)))
        }
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Creates `dir` readable by the user only.
fn private_dir(dir: &Path) -> Result<(), CheckpointError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io(dir))
}

/// Writes `bytes` to `path` through a temporary file beside it, mode `mode`.
fn write_private(path: &Path, bytes: &[u8], mode: u32) -> Result<(), std::io::Error> {
    write_private_as(path, bytes, mode, true)
}

/// As [`write_private`]; without `sync` the bytes are not flushed to disk
/// first (the rename still replaces the file whole for every reader).
fn write_private_as(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    sync: bool,
) -> Result<(), std::io::Error> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)?;
    f.write_all(bytes)?;
    if sync {
        f.sync_all()?;
    }
    drop(f);
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
    std::fs::rename(&tmp, path)
}

impl CheckpointStore {
    /// Opens the checkpoints in `dir` (the folder is made on first use).
    pub fn open(dir: PathBuf) -> Result<CheckpointStore, CheckpointError> {
        Self::open_keeping(dir, KEEP)
    }

    /// As [`CheckpointStore::open`], keeping the last `keep` checkpoints.
    pub fn open_keeping(dir: PathBuf, keep: usize) -> Result<CheckpointStore, CheckpointError> {
        let path = dir.join("index.json");
        let index = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice::<Index>(&bytes)
                .ok()
                .filter(|i| i.v <= INDEX_VERSION)
                .ok_or_else(|| CheckpointError::BadIndex(path.clone()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Index {
                v: INDEX_VERSION,
                ..Index::default()
            },
            Err(e) => return Err(io(&path)(e)),
        };
        Ok(CheckpointStore {
            dir,
            keep: keep.max(1),
            index: Mutex::new(index),
        })
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Index> {
        // A panic while holding it leaves an index that is still whole.
        self.index.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn save(&self, index: &Index) -> Result<(), CheckpointError> {
        self.save_as(index, true)
    }

    /// Writes the index; `sync` waits for the disk.
    fn save_as(&self, index: &Index, sync: bool) -> Result<(), CheckpointError> {
        private_dir(&self.dir)?;
        let path = self.dir.join("index.json");
        let bytes = serde_json::to_vec(index).map_err(|e| io(&path)(e.into()))?;
        write_private_as(&path, &bytes, 0o600, sync).map_err(io(&path))
    }

    fn object_path(&self, hash: &str) -> PathBuf {
        self.dir.join("objects").join(hash)
    }

    /// Stores `bytes` once, by their hash; returns the hash.
    fn put_object(&self, bytes: &[u8]) -> Result<String, CheckpointError> {
        let hash = content_hash(bytes);
        let objects = self.dir.join("objects");
        private_dir(&self.dir)?;
        private_dir(&objects)?;
        let path = self.object_path(&hash);
        if !path.is_file() {
            write_private(&path, bytes, 0o600).map_err(io(&path))?;
        }
        Ok(hash)
    }

    fn get_object(&self, hash: &str) -> Result<Vec<u8>, CheckpointError> {
        let path = self.object_path(hash);
        std::fs::read(&path).map_err(|_| CheckpointError::MissingContent(hash.to_string()))
    }

    /// Opens a checkpoint before the user message `prompt`; the oldest go
    /// past [`KEEP`]. Returns its number.
    pub fn begin(&self, prompt: &str) -> Result<u64, CheckpointError> {
        let mut index = self.lock();
        let number = index.checkpoints.last().map_or(1, |c| c.number + 1);
        index.checkpoints.push(Checkpoint {
            number,
            prompt: prompt.to_string(),
            time_ms: crate::session::now_ms(),
            files: Vec::new(),
            skipped: Vec::new(),
            bash: Vec::new(),
        });
        let excess = index.checkpoints.len().saturating_sub(self.keep);
        let pruned = excess > 0;
        index.checkpoints.drain(..excess);
        // A checkpoint holds nothing yet: no reason to wait for the disk
        // before the message's model request (the first saved file syncs).
        self.save_as(&index, pruned)?;
        if pruned {
            self.collect_garbage(&index);
        }
        Ok(number)
    }

    /// Removes saved contents no checkpoint refers to.
    fn collect_garbage(&self, index: &Index) {
        let used: BTreeSet<&str> = index
            .checkpoints
            .iter()
            .flat_map(|c| c.files.iter().filter_map(|f| f.before.as_deref()))
            .collect();
        let Ok(entries) = std::fs::read_dir(self.dir.join("objects")) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if !used.contains(name.to_string_lossy().as_ref()) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    /// Before a file tool changes `real` (the resolved path it writes;
    /// `given` is the path as named, symlinks not followed): saves its
    /// content the first time in the open checkpoint. A symlinked or
    /// hard-linked file is noted as skipped instead.
    pub fn before_change(&self, given: &Path, real: &Path) {
        let mut index = self.lock();
        let Some(open) = index.checkpoints.last() else {
            return;
        };
        if open.touches(real) {
            return;
        }
        let skip = |reason| SkippedFile {
            path: real.display().to_string(),
            reason,
        };
        let link = std::fs::symlink_metadata(given).is_ok_and(|m| m.file_type().is_symlink());
        let outcome = if link {
            Err(skip(SkipReason::Symlink))
        } else if std::fs::symlink_metadata(real).is_ok_and(|m| m.is_file() && m.nlink() > 1) {
            Err(skip(SkipReason::HardLink))
        } else {
            match read_file(real) {
                Ok(None) => Ok(SavedFile {
                    path: real.to_path_buf(),
                    before: None,
                    mode: None,
                }),
                Ok(Some((bytes, mode))) => match self.put_object(&bytes) {
                    Ok(hash) => Ok(SavedFile {
                        path: real.to_path_buf(),
                        before: Some(hash),
                        mode: Some(mode),
                    }),
                    Err(_) => Err(skip(SkipReason::NotSaved)),
                },
                Err(_) => Err(skip(SkipReason::NotSaved)),
            }
        };
        if let Some(open) = index.checkpoints.last_mut() {
            match outcome {
                Ok(saved) => open.files.push(saved),
                Err(skipped) => open.skipped.push(skipped),
            }
        }
        // An index that cannot be written keeps the snapshot in memory for
        // this process; the write itself must not fail because of it.
        let _ = self.save(&index);
    }

    /// After a file tool changed `real`: remembers what cadre left there.
    pub fn after_change(&self, real: &Path) {
        let hash = read_file(real)
            .ok()
            .flatten()
            .map(|(b, _)| content_hash(&b));
        let mut index = self.lock();
        index.last_written.insert(real.to_path_buf(), hash);
        let _ = self.save(&index);
    }

    /// Notes a `Bash` command run in the open checkpoint (its changes are not tracked).
    pub fn note_bash(&self, command: &str) {
        let mut index = self.lock();
        let Some(open) = index.checkpoints.last_mut() else {
            return;
        };
        let mut text: String = command.trim().chars().take(BASH_TEXT_MAX).collect();
        if text.len() < command.trim().len() {
            text.push('…');
        }
        if !open.bash.contains(&text) {
            open.bash.push(text);
            let _ = self.save(&index);
        }
    }

    /// Every checkpoint kept, oldest first.
    pub fn checkpoints(&self) -> Vec<Checkpoint> {
        self.lock().checkpoints.clone()
    }

    /// The checkpoints as front ends list them.
    pub fn list(&self) -> Vec<CheckpointInfo> {
        let (all, written) = {
            let index = self.lock();
            (index.checkpoints.clone(), index.last_written.clone())
        };
        all.iter()
            .enumerate()
            .map(|(i, c)| CheckpointInfo {
                number: c.number,
                prompt: c.prompt.clone(),
                later_same: all[i + 1..].iter().filter(|l| l.prompt == c.prompt).count(),
                time_ms: c.time_ms,
                // A file whose change failed was saved but never written.
                files: changed_from(&all[i..])
                    .into_iter()
                    .filter(|f| written.contains_key(&f.path))
                    .map(|f| f.path.display().to_string())
                    .collect(),
            })
            .collect()
    }

    /// The number of the checkpoint taken before `prompt`, `later_same`
    /// later checkpoints of the same text skipped.
    pub fn find(&self, prompt: &str, later_same: usize) -> Option<u64> {
        self.lock()
            .checkpoints
            .iter()
            .rev()
            .filter(|c| c.prompt == prompt)
            .nth(later_same)
            .map(|c| c.number)
    }

    /// Files a restore to checkpoint `number` would overwrite though they
    /// changed outside cadre since cadre last wrote them.
    pub fn changed_outside(&self, number: u64) -> Result<Vec<PathBuf>, CheckpointError> {
        let index = self.lock();
        let from = position(&index, number)?;
        Ok(changed_from(&index.checkpoints[from..])
            .into_iter()
            .filter(|f| outside_change(&index, f))
            .map(|f| f.path)
            .collect())
    }

    /// Brings every file changed from checkpoint `number` on back to how it
    /// was before it. Files changed outside cadre since stop it unless `force`.
    pub fn restore(&self, number: u64, force: bool) -> Result<Restored, CheckpointError> {
        let mut index = self.lock();
        let from = position(&index, number)?;
        let since = &index.checkpoints[from..];
        let files = changed_from(since);
        if !force {
            let changed: Vec<PathBuf> = files
                .iter()
                .filter(|f| outside_change(&index, f))
                .map(|f| f.path.clone())
                .collect();
            if !changed.is_empty() {
                return Err(CheckpointError::ChangedOutside(changed));
            }
        }
        let mut out = Restored::default();
        let mut seen = BTreeSet::new();
        for c in since {
            for s in &c.skipped {
                if seen.insert(s.path.clone()) {
                    out.skipped.push(s.clone());
                }
            }
            for b in &c.bash {
                if !out.bash_commands.contains(b) {
                    out.bash_commands.push(b.clone());
                }
            }
        }
        // Every content is read before any file is written: a missing one
        // stops the restore with nothing changed.
        let mut contents = Vec::new();
        for f in &files {
            let bytes = match &f.before {
                Some(hash) => Some(self.get_object(hash)?),
                None => None,
            };
            contents.push(bytes);
        }
        for (f, bytes) in files.iter().zip(contents) {
            let now = read_file(&f.path).map_err(io(&f.path))?;
            match bytes {
                None => {
                    if now.is_some() {
                        std::fs::remove_file(&f.path).map_err(io(&f.path))?;
                        out.removed.push(f.path.clone());
                    }
                }
                Some(bytes) => {
                    let mode = f.mode.unwrap_or(0o644);
                    if now.as_ref().map(|(b, m)| (b.as_slice(), *m))
                        != Some((bytes.as_slice(), mode))
                    {
                        if let Some(parent) = f.path.parent() {
                            std::fs::create_dir_all(parent).map_err(io(parent))?;
                        }
                        write_private(&f.path, &bytes, mode).map_err(io(&f.path))?;
                        out.restored.push(f.path.clone());
                    }
                }
            }
            index.last_written.insert(f.path.clone(), f.before.clone());
        }
        self.save(&index)?;
        Ok(out)
    }

    /// After the conversation went back to before checkpoint `number` with
    /// the files: it and the later ones are gone with their messages.
    pub fn forget_from(&self, number: u64) -> Result<(), CheckpointError> {
        let mut index = self.lock();
        let from = position(&index, number)?;
        index.checkpoints.truncate(from);
        self.save(&index)?;
        self.collect_garbage(&index);
        Ok(())
    }

    /// After the conversation alone went back to before checkpoint
    /// `number`: its messages are gone but their changes to files stay, so
    /// the checkpoint before takes them over (a later restore to it still
    /// brings those files back).
    pub fn fold_into_previous(&self, number: u64) -> Result<(), CheckpointError> {
        let mut index = self.lock();
        let from = position(&index, number)?;
        let gone: Vec<Checkpoint> = index.checkpoints.drain(from..).collect();
        if let Some(previous) = index.checkpoints.last_mut() {
            for c in gone {
                for f in c.files {
                    if !previous.touches(&f.path) {
                        previous.files.push(f);
                    }
                }
                for s in c.skipped {
                    if !previous.touches(Path::new(&s.path)) {
                        previous.skipped.push(s);
                    }
                }
                for b in c.bash {
                    if !previous.bash.contains(&b) {
                        previous.bash.push(b);
                    }
                }
            }
        }
        self.save(&index)?;
        self.collect_garbage(&index);
        Ok(())
    }
}

fn position(index: &Index, number: u64) -> Result<usize, CheckpointError> {
    index
        .checkpoints
        .iter()
        .position(|c| c.number == number)
        .ok_or(CheckpointError::NotFound(number))
}

/// Each file changed in `since`, with its content before the first of them.
fn changed_from(since: &[Checkpoint]) -> Vec<SavedFile> {
    let mut out: Vec<SavedFile> = Vec::new();
    for c in since {
        for f in &c.files {
            if !out.iter().any(|o| o.path == f.path) {
                out.push(f.clone());
            }
        }
    }
    out
}

/// Whether the file no longer holds what cadre last left in it.
fn outside_change(index: &Index, f: &SavedFile) -> bool {
    let Some(expected) = index.last_written.get(&f.path) else {
        // Never written by cadre (the tool failed): nothing of cadre's to
        // compare; its content before is what it should still hold.
        return false;
    };
    let now = read_file(&f.path)
        .ok()
        .flatten()
        .map(|(b, _)| content_hash(&b));
    now != *expected
}
