//! `tasks.db`: the SQLite table shared by every cadre process of a data
//! directory, and the output logs in `tasks/<task-id>/output.log`. The
//! handles here hand each call to the table's own thread, which runs it
//! against [`super::db::TaskDb`].

use std::fs::OpenOptions;
use std::future::Future;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::db::{Folders, TaskDb, io_err};
use super::folders::FolderThread;
use super::status::{LastWork, NewTask, TaskEnd, TaskError, TaskFilter, TaskRow, TaskStatus};

/// The schema version this build writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 3;

/// The error recorded on active rows whose cadre process is gone at start-up.
pub const TASK_LOST_ON_STARTUP: &str =
    "TASK_LOST_ON_STARTUP: its cadre process ended while it was active";

/// Default cap on what a task's `output.log` keeps, in bytes.
pub const DEFAULT_OUTPUT_LIMIT: u64 = 64 * 1024 * 1024;

/// Work for the table's thread.
struct Job {
    run: Box<dyn FnOnce(&mut TaskDb) + Send>,
    /// It files rows and touches no task's files: it need not wait for the
    /// folders of rows filed before it.
    filing: bool,
}

/// A handle on `tasks.db` for async code; cheap to clone, `Send + Sync`.
///
/// One thread per opened table owns the SQLite connection and runs the calls
/// of every handle one at a time, in the order they were made; a caller
/// awaits its reply while the runtime goes on with other work. A dedicated
/// thread rather than `spawn_blocking`: the runtime is single-threaded but
/// `spawn_blocking` would still fan calls out over a pool whose threads then
/// queue on one connection in no set order, whereas here the calls one
/// caller makes land in the order it made them (even the ones it does not
/// wait for, [`TaskTable::queue_output`]), the connection's statement cache
/// stays warm, and the same handle serves code outside any runtime
/// ([`BlockingTaskTable`]). The thread ends when the last handle is dropped,
/// after the calls already made.
#[derive(Clone)]
pub struct TaskTable {
    jobs: std::sync::mpsc::Sender<Job>,
    db_path: Arc<PathBuf>,
    /// The database did not exist when this handle started it: it holds no task.
    new: bool,
    /// Why the thread could not open the database, once it knows.
    open_error: Arc<std::sync::OnceLock<String>>,
}

/// The task table for code that runs outside the async runtime (`cadre
/// tasks`, evaluations, tests): the same calls as [`TaskTable`], each waiting
/// for its reply. Never use it on the runtime's thread.
#[derive(Clone, Debug)]
pub struct BlockingTaskTable(TaskTable);

impl std::fmt::Debug for TaskTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskTable")
            .field("path", &*self.db_path)
            .finish_non_exhaustive()
    }
}

impl TaskTable {
    /// Opens (creating if needed) `<data_dir>/tasks.db` (0600) and the
    /// `tasks/` directory (0700), in WAL mode with a 5 s busy timeout, and
    /// migrates the schema to the current version — on the table's own
    /// thread, started here.
    pub async fn open(data_dir: &Path) -> Result<TaskTable, TaskError> {
        let (table, opened) = TaskTable::start(data_dir)?;
        opened.await.map_err(|_| TaskError::Stopped)??;
        Ok(table)
    }

    /// As [`TaskTable::open`], but a database that does not exist yet is
    /// created on the table's thread without waiting for it: a first run's
    /// model request need not wait for the file's creation and its syncs.
    /// Calls queue behind the creation; if it fails, they fail saying why.
    pub async fn open_for_session(data_dir: &Path) -> Result<TaskTable, TaskError> {
        if data_dir.join("tasks.db").exists() {
            return TaskTable::open(data_dir).await;
        }
        let (table, _opened) = TaskTable::start(data_dir)?;
        Ok(table)
    }

    /// True when the database did not exist before this handle created it,
    /// so it holds no task from an earlier process.
    pub fn is_new(&self) -> bool {
        self.new
    }

    /// Starts the table's thread, which opens the database first; the
    /// receiver gets how that went.
    fn start(
        data_dir: &Path,
    ) -> Result<
        (
            TaskTable,
            tokio::sync::oneshot::Receiver<Result<(), TaskError>>,
        ),
        TaskError,
    > {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let (opened_tx, opened) = tokio::sync::oneshot::channel();
        let dir = data_dir.to_path_buf();
        let new = !data_dir.join("tasks.db").exists();
        let open_error = Arc::new(std::sync::OnceLock::new());
        let failed = open_error.clone();
        std::thread::Builder::new()
            .name("cadre-tasks-db".into())
            .spawn(move || match TaskDb::open(&dir) {
                Ok(mut db) => {
                    let _ = opened_tx.send(Ok(()));
                    let mut folders = FolderThread::new();
                    for job in queue {
                        if !job.filing {
                            folders.wait();
                        }
                        // A panicking call loses only its own reply (its
                        // transaction rolls back); the thread serves the next.
                        let run = job.run;
                        let _ =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&mut db)));
                        // Folders of rows just filed, after the filing replied.
                        folders.hand(std::mem::take(&mut db.unmade));
                    }
                }
                Err(e) => {
                    let _ = failed.set(e.to_string());
                    let _ = opened_tx.send(Err(e));
                }
            })
            .map_err(io_err(data_dir))?;
        let table = TaskTable {
            jobs,
            db_path: Arc::new(data_dir.join("tasks.db")),
            new,
            open_error,
        };
        Ok((table, opened))
    }

    /// Runs `f` on the table's thread and waits for its result.
    pub(super) fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut TaskDb) -> Result<R, TaskError> + Send + 'static,
    ) -> impl Future<Output = Result<R, TaskError>> + Send + 'static {
        self.call_as(false, f)
    }

    /// [`Self::call`]; a `filing` runs without waiting for the folders of
    /// rows filed before it.
    fn call_as<R: Send + 'static>(
        &self,
        filing: bool,
        f: impl FnOnce(&mut TaskDb) -> Result<R, TaskError> + Send + 'static,
    ) -> impl Future<Output = Result<R, TaskError>> + Send + 'static {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let sent = self.jobs.send(Job {
            run: Box::new(move |db: &mut TaskDb| {
                let _ = reply.send(f(db));
            }),
            filing,
        });
        let open_error = self.open_error.clone();
        // A thread that never opened the database says why, not only that it stopped.
        let stopped = move || match open_error.get() {
            Some(why) => TaskError::Sqlite(why.clone()),
            None => TaskError::Stopped,
        };
        async move {
            if sent.is_err() {
                return Err(stopped());
            }
            answer.await.map_err(|_| stopped())?
        }
    }

    /// Hands `f` to the table's thread without waiting: it runs after every
    /// call made before it and before every call made after it.
    fn queue(&self, f: impl FnOnce(&mut TaskDb) + Send + 'static) {
        let _ = self.jobs.send(Job {
            run: Box::new(f),
            filing: false,
        });
    }

    /// Caps what each task's `output.log` keeps at `bytes` from now on
    /// (64 MiB unless set).
    pub fn set_output_limit(&self, bytes: u64) {
        self.queue(move |db| db.output_limit = bytes);
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.db_path
    }

    /// Marks active rows whose owning process is gone as `lost` with
    /// [`TASK_LOST_ON_STARTUP`], stops what is left of their shells' process
    /// groups, and returns their ids. A process is "gone" when no process
    /// with its pid, start time and boot id exists, even if the pid now
    /// names another process. Rows owned by this process are left alone.
    pub async fn mark_lost_on_startup(&self) -> Result<Vec<String>, TaskError> {
        self.call(|db| db.mark_lost_on_startup()).await
    }

    /// Records the process group a task's shell runs in (its leader's pid
    /// and start time), so a later sweep can stop it if its owner dies.
    pub async fn set_group(
        &self,
        id: &str,
        pgid: u32,
        leader_start: Option<u64>,
    ) -> Result<(), TaskError> {
        let id = id.to_string();
        self.call(move |db| db.set_group(&id, pgid, leader_start))
            .await
    }

    /// [`Self::set_group`] without waiting for it (from code that cannot
    /// await, such as a process's spawn hook); a failure is not reported.
    pub fn queue_group(&self, id: &str, pgid: u32, leader_start: Option<u64>) {
        let id = id.to_string();
        self.queue(move |db| {
            let _ = db.set_group(&id, pgid, leader_start);
        });
    }

    /// Adds a `queued` row owned by this process, with its output directory
    /// (0700) and an empty `output.log` (0600).
    pub async fn create(&self, new: NewTask) -> Result<TaskRow, TaskError> {
        let mut rows = self.create_many(vec![new]).await?;
        rows.pop()
            .ok_or_else(|| TaskError::Sqlite("no row was created".into()))
    }

    /// Adds `queued` rows like [`Self::create`], all in one transaction:
    /// every row is added, or on an error none is. Rows come back in the
    /// order of `news`.
    pub async fn create_many(&self, news: Vec<NewTask>) -> Result<Vec<TaskRow>, TaskError> {
        self.call(move |db| db.insert_many(news, TaskStatus::Queued, Folders::First))
            .await
    }

    /// Adds rows that start `running` at once (a batch of children starting
    /// together), all in one transaction like [`Self::create_many`]: the same
    /// rows as creating each and moving it to running, in one write.
    ///
    /// The rows come back before their folders and `output.log`s are made
    /// (what starts them waits for the database alone, not for a slow
    /// disk's inodes: a thread of their own makes them, and later filings
    /// do not wait for it). Every later call of the table that is not a
    /// filing finds them made; anything else written beside a log goes
    /// through [`Self::write_beside`].
    pub async fn start_many(&self, news: Vec<NewTask>) -> Result<Vec<TaskRow>, TaskError> {
        self.call_as(true, move |db| {
            db.insert_many(news, TaskStatus::Running, Folders::After)
        })
        .await
    }

    /// Writes each `(path, bytes)` (0600, replacing what was there) on the
    /// table's thread after every call made before this one (so the folders
    /// of the rows filed so far exist); the future tells when. The job is
    /// handed over by this call: dropping the future does not cancel it.
    /// Best effort: a file that cannot be written is left out.
    pub fn write_beside(
        &self,
        files: Vec<(PathBuf, Vec<u8>)>,
    ) -> impl Future<Output = ()> + Send + 'static {
        let written = self.call(move |_| {
            for (path, bytes) in files {
                let _ = OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .mode(0o600)
                    .open(&path)
                    .and_then(|mut f| f.write_all(&bytes));
            }
            Ok(())
        });
        async move {
            let _ = written.await;
        }
    }

    /// Moves a task to `to` if [`check_transition`] allows it, in one write
    /// transaction (read, check, write) so processes can't race. Sets
    /// `started_ms` on the first move to running and `ended_ms` on a final
    /// status; `error` and `result_summary` replace the stored ones when given.
    pub async fn set_status(
        &self,
        id: &str,
        to: TaskStatus,
        error: Option<&str>,
        result_summary: Option<&str>,
    ) -> Result<TaskRow, TaskError> {
        let id = id.to_string();
        let error = error.map(str::to_string);
        let summary = result_summary.map(str::to_string);
        self.call(move |db| db.set_status(&id, to, error.as_deref(), summary.as_deref()))
            .await
    }

    /// Records how a task ended, in one call: a task stopped meanwhile
    /// (`stopping`) ends `cancelled`, one already final keeps its status, and
    /// either way a result (not a cancellation) goes to its log as late;
    /// otherwise it moves to `end.status`. With `end.notified` its notice
    /// counts as delivered. Returns the row as it ended.
    pub async fn record_end(&self, id: &str, end: TaskEnd<'_>) -> Result<TaskRow, TaskError> {
        self.record_end_after(id, None, end).await
    }

    /// [`Self::record_end`], first recording `last` (its final progress and
    /// the end of its output; their failures are not reported), all in one
    /// call to the table's thread.
    pub async fn record_end_after(
        &self,
        id: &str,
        last: Option<LastWork>,
        end: TaskEnd<'_>,
    ) -> Result<TaskRow, TaskError> {
        let id = id.to_string();
        let error = end.error.map(str::to_string);
        let (summary, report) = (end.summary.to_string(), end.report.to_string());
        let (status, notified) = (end.status, end.notified);
        self.call(move |db| {
            let end = TaskEnd {
                status,
                error: error.as_deref(),
                summary: &summary,
                report: &report,
                notified,
            };
            if let Some(last) = &last {
                let _ = db.progress(&id, last.tool_calls, last.tokens);
                let _ = db.append_output(&id, &last.output);
            }
            db.record_end(&id, &end)
        })
        .await
    }

    /// Appends a result that arrived after the task ended to its log, with a
    /// warning line; the status stays as it is.
    pub async fn record_late_result(&self, id: &str, text: &str) -> Result<(), TaskError> {
        let (id, text) = (id.to_string(), text.to_string());
        self.call(move |db| db.record_late_result(&id, &text)).await
    }

    /// Appends `text` to the task's `output.log`.
    pub async fn append_output(&self, id: &str, text: &str) -> Result<(), TaskError> {
        let (id, text) = (id.to_string(), text.to_string());
        self.call(move |db| db.append_output(&id, &text)).await
    }

    /// [`Self::append_output`] without waiting for it (a stream of output
    /// read by code that cannot await); pieces land in the order given, and
    /// before anything asked of the table afterwards. A failure is not reported.
    pub fn queue_output(&self, id: &str, text: String) {
        let id = id.to_string();
        self.queue(move |db| {
            let _ = db.append_output(&id, &text);
        });
    }

    /// Adds rows brought from another data directory (`cadre sessions
    /// import`) as they are, all or none; see the thread's side for when a
    /// taken id is refused.
    pub async fn import_rows(&self, rows: Vec<TaskRow>, replace: bool) -> Result<(), TaskError> {
        self.call(move |db| db.import_rows(rows, replace).map_err(|e| db.named(e)))
            .await
    }

    /// Records progress (tool calls, tokens so far) and the time of it.
    pub async fn progress(&self, id: &str, tool_calls: u64, tokens: u64) -> Result<(), TaskError> {
        let id = id.to_string();
        self.call(move |db| db.progress(&id, tool_calls, tokens))
            .await
    }

    /// Marks a task as running in the background (a foreground child moved there).
    pub async fn set_background(&self, id: &str) -> Result<(), TaskError> {
        let id = id.to_string();
        self.call(move |db| db.set_background(&id)).await
    }

    /// Hands a task to another process: its owner becomes process `pid` as
    /// it is now (pid, start time, boot). For a process taking over work, and
    /// for tests that need a row of a dead process.
    pub async fn set_owner_pid(&self, id: &str, pid: u32) -> Result<(), TaskError> {
        let id = id.to_string();
        self.call(move |db| db.set_owner_pid(&id, pid)).await
    }

    /// Records that completion notices for these tasks were delivered.
    /// Unknown ids are ignored.
    pub async fn mark_notified(&self, ids: &[String]) -> Result<(), TaskError> {
        let ids = ids.to_vec();
        self.call(move |db| db.mark_notified(&ids)).await
    }

    /// One row.
    pub async fn get(&self, id: &str) -> Result<TaskRow, TaskError> {
        let id = id.to_string();
        self.call(move |db| db.get(&id)).await
    }

    /// Rows matching `filter`, newest first.
    pub async fn list(&self, filter: &TaskFilter) -> Result<Vec<TaskRow>, TaskError> {
        let filter = filter.clone();
        self.call(move |db| db.list(&filter)).await
    }

    /// Reads at most `max` bytes of the task's log from byte `offset`, never
    /// splitting a character (see the rules on the thread's side). Returns
    /// the text (invalid UTF-8 replaced), the offset to read from next, and
    /// the log's size.
    pub async fn read_output(
        &self,
        id: &str,
        offset: u64,
        max: usize,
    ) -> Result<(String, u64, u64), TaskError> {
        let id = id.to_string();
        self.call(move |db| db.read_output(&id, offset, max)).await
    }
}

impl BlockingTaskTable {
    /// Opens the table like [`TaskTable::open`], waiting for it.
    pub fn open(data_dir: &Path) -> Result<BlockingTaskTable, TaskError> {
        let (table, opened) = TaskTable::start(data_dir)?;
        wait(opened).map_err(|_| TaskError::Stopped)??;
        Ok(BlockingTaskTable(table))
    }

    /// The async handle on the same table (and thread).
    pub fn table(&self) -> &TaskTable {
        &self.0
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// See [`TaskTable::mark_lost_on_startup`].
    pub fn mark_lost_on_startup(&self) -> Result<Vec<String>, TaskError> {
        wait(self.0.mark_lost_on_startup())
    }

    /// See [`TaskTable::set_group`].
    pub fn set_group(&self, id: &str, pgid: u32, start: Option<u64>) -> Result<(), TaskError> {
        wait(self.0.set_group(id, pgid, start))
    }

    /// See [`TaskTable::create`].
    pub fn create(&self, new: NewTask) -> Result<TaskRow, TaskError> {
        wait(self.0.create(new))
    }

    /// See [`TaskTable::create_many`].
    pub fn create_many(&self, news: Vec<NewTask>) -> Result<Vec<TaskRow>, TaskError> {
        wait(self.0.create_many(news))
    }

    /// See [`TaskTable::set_status`].
    pub fn set_status(
        &self,
        id: &str,
        to: TaskStatus,
        error: Option<&str>,
        result_summary: Option<&str>,
    ) -> Result<TaskRow, TaskError> {
        wait(self.0.set_status(id, to, error, result_summary))
    }

    /// See [`TaskTable::record_late_result`].
    pub fn record_late_result(&self, id: &str, text: &str) -> Result<(), TaskError> {
        wait(self.0.record_late_result(id, text))
    }

    /// See [`TaskTable::set_output_limit`].
    pub fn set_output_limit(&self, bytes: u64) {
        self.0.set_output_limit(bytes);
    }

    /// See [`TaskTable::append_output`].
    pub fn append_output(&self, id: &str, text: &str) -> Result<(), TaskError> {
        wait(self.0.append_output(id, text))
    }

    /// See [`TaskTable::import_rows`].
    pub fn import_rows(&self, rows: Vec<TaskRow>, replace: bool) -> Result<(), TaskError> {
        wait(self.0.import_rows(rows, replace))
    }

    /// See [`TaskTable::progress`].
    pub fn progress(&self, id: &str, tool_calls: u64, tokens: u64) -> Result<(), TaskError> {
        wait(self.0.progress(id, tool_calls, tokens))
    }

    /// See [`TaskTable::set_background`].
    pub fn set_background(&self, id: &str) -> Result<(), TaskError> {
        wait(self.0.set_background(id))
    }

    /// See [`TaskTable::set_owner_pid`].
    pub fn set_owner_pid(&self, id: &str, pid: u32) -> Result<(), TaskError> {
        wait(self.0.set_owner_pid(id, pid))
    }

    /// See [`TaskTable::mark_notified`].
    pub fn mark_notified(&self, ids: &[String]) -> Result<(), TaskError> {
        wait(self.0.mark_notified(ids))
    }

    /// See [`TaskTable::get`].
    pub fn get(&self, id: &str) -> Result<TaskRow, TaskError> {
        wait(self.0.get(id))
    }

    /// See [`TaskTable::list`].
    pub fn list(&self, filter: &TaskFilter) -> Result<Vec<TaskRow>, TaskError> {
        wait(self.0.list(filter))
    }

    /// See [`TaskTable::read_output`].
    pub fn read_output(
        &self,
        id: &str,
        offset: u64,
        max: usize,
    ) -> Result<(String, u64, u64), TaskError> {
        wait(self.0.read_output(id, offset, max))
    }
}

/// Blocks this thread until `f` is done, for [`BlockingTaskTable`]. It
/// needs no runtime (the table's thread answers), so it cannot deadlock, but
/// on the runtime's thread it would stall every task while it waits.
fn wait<F: Future>(f: F) -> F::Output {
    futures::executor::block_on(f)
}
