//! Remembers what an agent has read, so `Edit` can refuse to change a file the
//! agent has not seen or that changed on disk since it was read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// What we knew about a file when the agent last read or wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FileStamp {
    /// Modification time then.
    pub modified: Option<SystemTime>,
    /// Length then.
    pub len: u64,
}

impl FileStamp {
    /// The stamp of the file at `path` now, if it exists.
    pub(super) fn of(path: &Path) -> Option<FileStamp> {
        let meta = std::fs::metadata(path).ok()?;
        Some(FileStamp {
            modified: meta.modified().ok(),
            len: meta.len(),
        })
    }
}

/// Per-agent cache of file stamps, keyed by absolute path, and the set of
/// files the agent changed (reported to a parent as `changed files:`).
#[derive(Debug, Default)]
pub struct FileStateCache {
    stamps: Mutex<HashMap<PathBuf, FileStamp>>,
    written: Mutex<std::collections::BTreeSet<PathBuf>>,
    /// Directories whose instruction files this agent has been given.
    instruction_dirs: Mutex<std::collections::HashSet<PathBuf>>,
    /// Set for agents that run without project instructions (Explore, Plan).
    no_instructions: std::sync::atomic::AtomicBool,
}

impl FileStateCache {
    /// Records that the agent has seen the current content of `path`.
    pub fn record(&self, path: &Path) {
        if let Some(stamp) = FileStamp::of(path)
            && let Ok(mut map) = self.stamps.lock()
        {
            map.insert(path.to_path_buf(), stamp);
        }
    }

    /// Records that the agent wrote `path` (and so has seen its new content).
    pub fn record_write(&self, path: &Path) {
        self.record(path);
        if let Ok(mut set) = self.written.lock() {
            set.insert(path.to_path_buf());
        }
    }

    /// Files this agent wrote or edited, sorted.
    pub fn written(&self) -> Vec<PathBuf> {
        self.written
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Why an edit of `path` must be refused, or `None` if it may proceed.
    pub fn check_fresh(&self, path: &Path) -> Option<String> {
        let known = self.stamps.lock().ok()?.get(path).cloned();
        match known {
            None => Some(format!(
                "{} has not been read by this agent; Read it before editing",
                path.display()
            )),
            Some(stamp) if FileStamp::of(path).as_ref() != Some(&stamp) => Some(format!(
                "{} changed on disk since it was read; Read it again before editing",
                path.display()
            )),
            Some(_) => None,
        }
    }

    /// Paths this agent has read or written.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.stamps
            .lock()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Stops this agent from being given subdirectories' instruction files.
    pub fn omit_instructions(&self) {
        self.no_instructions
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Of `dirs`, those whose instruction files this agent has not been
    /// offered yet, now marked as offered; none when it runs without them.
    pub fn claim_instruction_dirs(&self, dirs: Vec<PathBuf>) -> Vec<PathBuf> {
        if self
            .no_instructions
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return Vec::new();
        }
        match self.instruction_dirs.lock() {
            Ok(mut offered) => dirs
                .into_iter()
                .filter(|d| offered.insert(d.clone()))
                .collect(),
            Err(_) => Vec::new(),
        }
    }
}
