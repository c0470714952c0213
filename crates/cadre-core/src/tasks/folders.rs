//! The thread that makes started rows' folders and `output.log`s, so a
//! filing on the table's thread never waits behind an inode allocation (a
//! few milliseconds on a slow disk, for every child after it in a batch).
//! The table's thread waits for it only before a call that uses the files.

use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::db::make_folders;

/// How many hand-overs the folder thread has finished.
type Progress = Arc<(Mutex<u64>, Condvar)>;

/// The table thread's side of the folder thread: hands it folders to make,
/// and waits until everything handed over is made.
pub(super) struct FolderThread {
    work: Option<Sender<Vec<PathBuf>>>,
    progress: Progress,
    handed: u64,
    thread: Option<JoinHandle<()>>,
}

impl FolderThread {
    /// The table thread's side; the thread itself starts with the first
    /// folders handed over (a run that starts no child has none).
    pub(super) fn new() -> FolderThread {
        FolderThread {
            work: None,
            progress: Arc::default(),
            handed: 0,
            thread: None,
        }
    }

    /// Starts the thread; without one (the system refused it) folders are
    /// made in place, on the caller's thread.
    fn start(&mut self) {
        let (work, queue) = std::sync::mpsc::channel::<Vec<PathBuf>>();
        let done = self.progress.clone();
        self.thread = std::thread::Builder::new()
            .name("cadre-task-folders".into())
            .spawn(move || {
                for paths in queue {
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        make_folders(paths)
                    }));
                    let (count, changed) = &*done;
                    let mut count = count.lock().unwrap_or_else(|e| e.into_inner());
                    *count += 1;
                    changed.notify_all();
                }
            })
            .ok();
        if self.thread.is_some() {
            self.work = Some(work);
        }
    }

    /// Has the folders of `output_paths` made, after those handed over before.
    pub(super) fn hand(&mut self, output_paths: Vec<PathBuf>) {
        if output_paths.is_empty() {
            return;
        }
        if self.thread.is_none() {
            self.start();
        }
        let unsent = match &self.work {
            Some(work) => work.send(output_paths).err().map(|e| e.0),
            None => Some(output_paths),
        };
        match unsent {
            Some(paths) => make_folders(paths),
            None => self.handed += 1,
        }
    }

    /// Returns once every folder handed over so far is made (or given up).
    pub(super) fn wait(&self) {
        let (count, changed) = &*self.progress;
        let mut count = count.lock().unwrap_or_else(|e| e.into_inner());
        while *count < self.handed {
            count = changed.wait(count).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for FolderThread {
    /// Finishes what was handed over before the table's thread ends.
    fn drop(&mut self) {
        self.work = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &std::path::Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn what_is_handed_over_is_made_by_the_time_wait_returns() {
        let dir = tempfile::tempdir().unwrap();
        let logs: Vec<PathBuf> = (0..40)
            .map(|i| dir.path().join(format!("t-{i}")).join("output.log"))
            .collect();
        let mut folders = FolderThread::new();
        for chunk in logs.chunks(7) {
            folders.hand(chunk.to_vec());
        }
        // A folder that cannot be made (its parent is a file) is given up,
        // and the ones after it are still made.
        std::fs::write(dir.path().join("file"), "x").unwrap();
        folders.hand(vec![
            dir.path().join("file").join("t-x").join("output.log"),
            dir.path().join("t-last").join("output.log"),
        ]);
        folders.wait();
        for log in &logs {
            assert_eq!(mode(log.parent().unwrap()), 0o700);
            assert_eq!(mode(log), 0o600);
        }
        assert!(dir.path().join("t-last").join("output.log").exists());
        // Nothing handed over: wait returns at once; dropping ends the thread.
        folders.wait();
        drop(folders);
    }
}
