//! `tasks.db`: the SQLite table shared by every cadre process of a data
//! directory, and the output logs in `tasks/<task-id>/output.log`.

use std::fs::{DirBuilder, OpenOptions};
use std::future::Future;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use super::proc_id::{self, ProcessId};
use super::status::{
    LastWork, NewTask, TaskEnd, TaskError, TaskFilter, TaskKind, TaskRow, TaskStatus,
    check_transition,
};

/// The schema version this build writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 3;

/// The error recorded on active rows whose cadre process is gone at start-up.
pub const TASK_LOST_ON_STARTUP: &str =
    "TASK_LOST_ON_STARTUP: its cadre process ended while it was active";

/// How long a statement waits for another process's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Default cap on what a task's `output.log` keeps, in bytes.
pub const DEFAULT_OUTPUT_LIMIT: u64 = 64 * 1024 * 1024;

const COLUMNS: &str = "id, kind, session_id, parent_agent, description, agent_type, name, \
     status, background, created_ms, started_ms, ended_ms, output_path, result_summary, \
     error, owner_pid, tool_calls, tokens, last_activity_ms, notified, owner_start, owner_boot, \
     pgid, pgid_start";

/// The connection and the directories, owned by the table's thread: every
/// statement runs there, never on the async runtime's thread.
pub(super) struct TaskDb {
    pub(super) conn: Connection,
    db_path: PathBuf,
    tasks_dir: PathBuf,
    /// Most bytes of output a task's `output.log` keeps.
    output_limit: u64,
    /// `output.log` paths of rows filed whose folder and log are made once
    /// the filing job has replied, before the thread's next job.
    unmade: Vec<PathBuf>,
}

/// When a filed row's folder and `output.log` are made.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Folders {
    /// Before the row comes back.
    First,
    /// Just after, before the thread's next job.
    After,
}

/// Work for the table's thread.
type Job = Box<dyn FnOnce(&mut TaskDb) + Send>;

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

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TaskError + '_ {
    move |source| TaskError::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub(super) fn to_sql(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// Creates `dir` if needed (0700) and makes sure it is 0700.
fn private_dir(dir: &Path) -> Result<(), TaskError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io_err(dir))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io_err(dir))
}

/// Whether a process with this pid exists (`kill(pid, 0)` doesn't fail with ESRCH).
pub fn process_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        // 0 and negatives would address process groups, not a process.
        return false;
    }
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
        Ok(()) => true,
        Err(e) => e != nix::errno::Errno::ESRCH,
    }
}

/// Upgrades the schema step by step to [`SCHEMA_VERSION`]. Each step runs in
/// its own write transaction and re-reads the version under the lock, so two
/// processes opening a fresh database at once don't both run it.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), TaskError> {
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        match version {
            SCHEMA_VERSION => return Ok(()),
            0 => {
                tx.execute_batch(
                    "CREATE TABLE IF NOT EXISTS tasks (
                        id TEXT PRIMARY KEY NOT NULL,
                        kind TEXT NOT NULL,
                        session_id TEXT NOT NULL,
                        parent_agent TEXT NOT NULL,
                        description TEXT NOT NULL,
                        agent_type TEXT,
                        name TEXT,
                        status TEXT NOT NULL,
                        background INTEGER NOT NULL,
                        created_ms INTEGER NOT NULL,
                        started_ms INTEGER,
                        ended_ms INTEGER,
                        output_path TEXT NOT NULL,
                        result_summary TEXT,
                        error TEXT,
                        owner_pid INTEGER NOT NULL,
                        tool_calls INTEGER NOT NULL DEFAULT 0,
                        tokens INTEGER NOT NULL DEFAULT 0,
                        last_activity_ms INTEGER,
                        notified INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE INDEX IF NOT EXISTS tasks_by_created ON tasks (created_ms);
                    CREATE INDEX IF NOT EXISTS tasks_by_status ON tasks (status);
                    CREATE INDEX IF NOT EXISTS tasks_by_session ON tasks (session_id);",
                )?;
                tx.pragma_update(None, "user_version", 1)?;
            }
            // 2: who owns a row beyond its pid (start time, boot id), and a
            // shell's process group, so a reused pid is never taken for them.
            1 => {
                tx.execute_batch(
                    "ALTER TABLE tasks ADD COLUMN owner_start INTEGER;
                    ALTER TABLE tasks ADD COLUMN owner_boot TEXT;
                    ALTER TABLE tasks ADD COLUMN pgid INTEGER;
                    ALTER TABLE tasks ADD COLUMN pgid_start INTEGER;",
                )?;
                tx.pragma_update(None, "user_version", 2)?;
            }
            // 3: agent teams — the board, its dependencies, the mailbox and
            // the members, all keyed by the session whose team they are.
            2 => {
                tx.execute_batch(
                    "CREATE TABLE IF NOT EXISTS team_tasks (
                        team TEXT NOT NULL,
                        id INTEGER NOT NULL,
                        subject TEXT NOT NULL,
                        description TEXT NOT NULL,
                        active_form TEXT,
                        status TEXT NOT NULL,
                        owner TEXT,
                        metadata TEXT,
                        created_ms INTEGER NOT NULL,
                        updated_ms INTEGER NOT NULL,
                        PRIMARY KEY (team, id)
                    );
                    CREATE TABLE IF NOT EXISTS team_task_deps (
                        team TEXT NOT NULL,
                        blocker INTEGER NOT NULL,
                        blocked INTEGER NOT NULL,
                        PRIMARY KEY (team, blocker, blocked)
                    );
                    CREATE TABLE IF NOT EXISTS team_messages (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        team TEXT NOT NULL,
                        recipient TEXT NOT NULL,
                        sender TEXT NOT NULL,
                        summary TEXT,
                        body TEXT NOT NULL,
                        created_ms INTEGER NOT NULL,
                        delivered_ms INTEGER
                    );
                    CREATE INDEX IF NOT EXISTS team_messages_waiting
                        ON team_messages (team, recipient, delivered_ms);
                    CREATE TABLE IF NOT EXISTS team_members (
                        team TEXT NOT NULL,
                        name TEXT NOT NULL,
                        agent_id TEXT NOT NULL,
                        agent_type TEXT NOT NULL,
                        state TEXT NOT NULL,
                        plan_required INTEGER NOT NULL DEFAULT 0,
                        created_ms INTEGER NOT NULL,
                        PRIMARY KEY (team, name)
                    );",
                )?;
                tx.pragma_update(None, "user_version", 3)?;
            }
            v if v > SCHEMA_VERSION => {
                return Err(TaskError::Schema(format!(
                    "tasks.db has schema version {v}, newer than this cadre's {SCHEMA_VERSION}; \
                     upgrade cadre"
                )));
            }
            v => {
                return Err(TaskError::Schema(format!(
                    "tasks.db has unknown schema version {v}"
                )));
            }
        }
        tx.commit()?;
    }
}

/// Opens `db_path` in WAL mode with the busy timeout, at the current schema.
fn open_connection(db_path: &Path) -> Result<Connection, TaskError> {
    let mut conn = Connection::open(db_path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(TaskError::Sqlite(format!(
            "could not switch {} to WAL mode (got {mode})",
            db_path.display()
        )));
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    migrate(&mut conn)?;
    Ok(conn)
}

fn row_to_task(r: &Row<'_>) -> rusqlite::Result<Result<TaskRow, TaskError>> {
    let kind: String = r.get("kind")?;
    let status: String = r.get("status")?;
    let opt_ms = |name: &str| -> rusqlite::Result<Option<u64>> {
        Ok(r.get::<_, Option<i64>>(name)?.map(|v| v.max(0) as u64))
    };
    let id: String = r.get("id")?;
    let (Some(kind), Some(status)) = (TaskKind::parse(&kind), TaskStatus::parse(&status)) else {
        return Ok(Err(TaskError::Schema(format!(
            "task {id} has kind {kind:?} and status {status:?}, not known to this cadre"
        ))));
    };
    Ok(Ok(TaskRow {
        id,
        kind,
        session_id: r.get("session_id")?,
        parent_agent: r.get("parent_agent")?,
        description: r.get("description")?,
        agent_type: r.get("agent_type")?,
        name: r.get("name")?,
        status,
        background: r.get("background")?,
        created_ms: r.get::<_, i64>("created_ms")?.max(0) as u64,
        started_ms: opt_ms("started_ms")?,
        ended_ms: opt_ms("ended_ms")?,
        output_path: PathBuf::from(r.get::<_, String>("output_path")?),
        result_summary: r.get("result_summary")?,
        error: r.get("error")?,
        owner_pid: u32::try_from(r.get::<_, i64>("owner_pid")?).unwrap_or(0),
        owner_start: opt_ms("owner_start")?,
        owner_boot: r.get("owner_boot")?,
        pgid: r
            .get::<_, Option<i64>>("pgid")?
            .and_then(|v| u32::try_from(v).ok()),
        pgid_start: opt_ms("pgid_start")?,
        tool_calls: r.get::<_, i64>("tool_calls")?.max(0) as u64,
        tokens: r.get::<_, i64>("tokens")?.max(0) as u64,
        last_activity_ms: opt_ms("last_activity_ms")?,
        notified: r.get("notified")?,
    }))
}

fn get_row(conn: &Connection, id: &str) -> Result<TaskRow, TaskError> {
    // Cached: every task's start, progress and end reads its row, and
    // parsing the statement each time cost more than the read.
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"))?
        .query_row([id], row_to_task)
        .optional()?
        .ok_or_else(|| TaskError::NotFound(id.to_string()))?
}

fn new_task_id() -> String {
    let uuid = uuid::Uuid::now_v7().simple().to_string();
    // The tail of a v7 uuid is random (with a few counter bits before it).
    format!("t-{}", &uuid[uuid.len() - 12..])
}

fn is_continuation(b: u8) -> bool {
    b & 0b1100_0000 == 0b1000_0000
}

impl TaskDb {
    /// Opens (creating if needed) `<data_dir>/tasks.db` (0600) and the
    /// `tasks/` directory (0700), in WAL mode with a 5 s busy timeout, and
    /// migrates the schema to the current version.
    fn open(data_dir: &Path) -> Result<TaskDb, TaskError> {
        std::fs::create_dir_all(data_dir).map_err(io_err(data_dir))?;
        let tasks_dir = data_dir.join("tasks");
        private_dir(&tasks_dir)?;
        let db_path = data_dir.join("tasks.db");
        // Create the file ourselves so it is private from the first byte; the
        // -wal and -shm files SQLite makes take the database file's mode.
        OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&db_path)
            .map_err(io_err(&db_path))?;
        std::fs::set_permissions(&db_path, std::fs::Permissions::from_mode(0o600))
            .map_err(io_err(&db_path))?;
        let conn = open_connection(&db_path).map_err(|e| match e {
            TaskError::Sqlite(m) if !m.contains(&*db_path.to_string_lossy()) => {
                TaskError::Sqlite(format!("{}: {m}", db_path.display()))
            }
            other => other,
        })?;
        Ok(TaskDb {
            conn,
            db_path,
            tasks_dir,
            output_limit: DEFAULT_OUTPUT_LIMIT,
            unmade: Vec::new(),
        })
    }

    /// `e` with the database file named, for errors that reach a person.
    fn named(&self, e: TaskError) -> TaskError {
        match e {
            TaskError::Sqlite(m) => TaskError::Sqlite(format!("{}: {m}", self.db_path.display())),
            other => other,
        }
    }

    /// Marks active rows whose owning process is gone as `lost` with
    /// [`TASK_LOST_ON_STARTUP`], stops what is left of their shells' process
    /// groups, and returns their ids. A process is "gone" when no process
    /// with its pid, start time and boot id exists, even if the pid now
    /// names another process. Rows owned by this process are left alone.
    fn mark_lost_on_startup(&mut self) -> Result<Vec<String>, TaskError> {
        let candidates: Vec<TaskRow> = self.list(&TaskFilter {
            active_only: true,
            ..Default::default()
        })?;
        let mut lost = Vec::new();
        for row in candidates.into_iter().rev() {
            let owner = row.owner();
            if owner.is_current() || owner.alive() {
                continue;
            }
            match self.set_status(&row.id, TaskStatus::Lost, Some(TASK_LOST_ON_STARTUP), None) {
                Ok(_) => lost.push(row.id.clone()),
                // Another process settled it in the meantime.
                Err(TaskError::FinalStatus { .. } | TaskError::NotFound(_)) => continue,
                Err(e) => return Err(e),
            }
            if let (Some(pgid), Some(start)) = (row.pgid, row.pgid_start)
                && row.owner_boot.is_some()
                && row.owner_boot == proc_id::boot_id()
            {
                kill_stale_group(pgid, start);
            }
        }
        Ok(lost)
    }

    /// Records the process group a task's shell runs in (its leader's pid
    /// and start time), so a later sweep can stop it if its owner dies.
    fn set_group(&self, id: &str, pgid: u32, leader_start: Option<u64>) -> Result<(), TaskError> {
        let n = self
            .conn
            .execute(
                "UPDATE tasks SET pgid = ?2, pgid_start = ?3 WHERE id = ?1",
                params![id, i64::from(pgid), leader_start.map(to_sql)],
            )
            .map_err(|e| self.named(e.into()))?;
        if n == 0 {
            return Err(TaskError::NotFound(id.to_string()));
        }
        Ok(())
    }

    /// Adds rows owned by this process, all with status `status`, in one
    /// write transaction: all of them or, on an error, none (the output
    /// directories made for them are removed again). Each gets its output
    /// directory (0700) and an empty `output.log` (0600): before the rows
    /// come back with [`Folders::First`], right after with [`Folders::After`].
    fn insert_many(
        &mut self,
        news: Vec<NewTask>,
        status: TaskStatus,
        folders: Folders,
    ) -> Result<Vec<TaskRow>, TaskError> {
        let mut rows = Vec::with_capacity(news.len());
        let done = self.try_insert_many(news, status, folders, &mut rows);
        if let Err(e) = done {
            if folders == Folders::First {
                for row in &rows {
                    if let Some(dir) = row.output_path.parent() {
                        let _ = std::fs::remove_dir_all(dir);
                    }
                }
            }
            return Err(self.named(e));
        }
        if folders == Folders::After {
            self.unmade
                .extend(rows.iter().map(|r| r.output_path.clone()));
        }
        Ok(rows)
    }

    fn try_insert_many(
        &mut self,
        news: Vec<NewTask>,
        status: TaskStatus,
        folders: Folders,
        rows: &mut Vec<TaskRow>,
    ) -> Result<(), TaskError> {
        let me = ProcessId::current();
        let now = now_ms();
        for new in news {
            let output_path = match folders {
                Folders::First => self.new_output_log()?,
                Folders::After => self.unused_output_path(),
            };
            rows.push(TaskRow {
                id: output_path
                    .parent()
                    .and_then(Path::file_name)
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                kind: new.kind,
                session_id: new.session_id,
                parent_agent: new.parent_agent,
                description: new.description,
                agent_type: new.agent_type,
                name: new.name,
                status,
                background: new.background,
                created_ms: now,
                started_ms: (status == TaskStatus::Running).then_some(now),
                ended_ms: None,
                output_path,
                result_summary: None,
                error: None,
                owner_pid: me.pid,
                owner_start: me.start,
                owner_boot: me.boot.clone(),
                pgid: None,
                pgid_start: None,
                tool_calls: 0,
                tokens: 0,
                last_activity_ms: None,
                notified: false,
            });
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO tasks (id, kind, session_id, parent_agent, description, agent_type, \
                 name, status, background, created_ms, started_ms, output_path, owner_pid, \
                 owner_start, owner_boot) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            )?;
            for row in rows.iter() {
                insert.execute(params![
                    row.id,
                    row.kind.as_str(),
                    row.session_id,
                    row.parent_agent,
                    row.description,
                    row.agent_type,
                    row.name,
                    row.status.as_str(),
                    row.background,
                    to_sql(row.created_ms),
                    row.started_ms.map(to_sql),
                    row.output_path.to_string_lossy(),
                    i64::from(row.owner_pid),
                    row.owner_start.map(to_sql),
                    row.owner_boot,
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Adds `rows` as they are (ids, statuses and times kept), in one write
    /// transaction: all of them or none. A row whose id is taken is refused
    /// unless `replace` and the row there is of the same session.
    fn import_rows(&mut self, rows: Vec<TaskRow>, replace: bool) -> Result<(), TaskError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut existing = tx.prepare("SELECT session_id FROM tasks WHERE id = ?1")?;
            let mut insert = tx.prepare(&format!(
                "INSERT OR REPLACE INTO tasks ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, \
                 ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)"
            ))?;
            for row in &rows {
                let taken: Option<String> =
                    existing.query_row([&row.id], |r| r.get(0)).optional()?;
                if let Some(session) = taken
                    && !(replace && session == row.session_id)
                {
                    return Err(TaskError::Schema(format!(
                        "task {} already exists here (of session {session})",
                        row.id
                    )));
                }
                insert.execute(params![
                    row.id,
                    row.kind.as_str(),
                    row.session_id,
                    row.parent_agent,
                    row.description,
                    row.agent_type,
                    row.name,
                    row.status.as_str(),
                    row.background,
                    to_sql(row.created_ms),
                    row.started_ms.map(to_sql),
                    row.ended_ms.map(to_sql),
                    row.output_path.to_string_lossy(),
                    row.result_summary,
                    row.error,
                    i64::from(row.owner_pid),
                    to_sql(row.tool_calls),
                    to_sql(row.tokens),
                    row.last_activity_ms.map(to_sql),
                    row.notified,
                    row.owner_start.map(to_sql),
                    row.owner_boot,
                    row.pgid.map(i64::from),
                    row.pgid_start.map(to_sql),
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// A new task's directory `tasks/<id>/` (0700, under a fresh id) with an
    /// empty `output.log` (0600), whose path is returned. Made here, when the
    /// task is filed, rather than at its first output: that is often its end,
    /// whose report the parent waits for.
    fn new_output_log(&self) -> Result<PathBuf, TaskError> {
        let mut attempts = 0;
        let dir = loop {
            let dir = self.tasks_dir.join(new_task_id());
            // create_dir (not _all) fails on an existing directory: the id is taken.
            match DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempts < 8 => {
                    attempts += 1;
                }
                Err(e) => return Err(io_err(&dir)(e)),
            }
        };
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io_err(&dir))?;
        let output_path = dir.join("output.log");
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&output_path)
            .map_err(io_err(&output_path))?;
        Ok(output_path)
    }

    /// A fresh task id's `output.log` path, its folder not made yet. The id
    /// is the table's primary key, so a clash with a row fails the insert;
    /// one with a folder left by a lost row is avoided here.
    fn unused_output_path(&self) -> PathBuf {
        let mut dir = self.tasks_dir.join(new_task_id());
        for _ in 0..8 {
            if std::fs::symlink_metadata(&dir).is_err() {
                break;
            }
            dir = self.tasks_dir.join(new_task_id());
        }
        dir.join("output.log")
    }

    /// Makes the folders (0700) and empty `output.log`s (0600) of the rows
    /// filed with [`Folders::After`]. A folder that cannot be made is left
    /// out: what is later written there fails and says why, as it would if
    /// the folder had been removed.
    fn make_unmade_folders(&mut self) {
        for output_path in std::mem::take(&mut self.unmade) {
            let Some(dir) = output_path.parent() else {
                continue;
            };
            let made = match DirBuilder::new().mode(0o700).create(dir) {
                Ok(()) => {
                    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).is_ok()
                }
                Err(e) => e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir(),
            };
            if made {
                // Opened to append, as every write of the log is: one there is kept.
                let _ = OpenOptions::new()
                    .append(true)
                    .create(true)
                    .mode(0o600)
                    .open(&output_path);
            }
        }
    }

    /// Moves a task to `to` if [`check_transition`] allows it, in one write
    /// transaction (read, check, write) so processes can't race. Sets
    /// `started_ms` on the first move to running and `ended_ms` on a final
    /// status; `error` and `result_summary` replace the stored ones when given.
    fn set_status(
        &mut self,
        id: &str,
        to: TaskStatus,
        error: Option<&str>,
        result_summary: Option<&str>,
    ) -> Result<TaskRow, TaskError> {
        self.try_set_status(id, to, error, result_summary)
            .map_err(|e| self.named(e))
    }

    fn try_set_status(
        &mut self,
        id: &str,
        to: TaskStatus,
        error: Option<&str>,
        result_summary: Option<&str>,
    ) -> Result<TaskRow, TaskError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current = get_row(&tx, id)?;
        check_transition(current.status, to).map_err(|e| match e {
            TaskError::FinalStatus { from, to, .. } => TaskError::FinalStatus {
                id: id.to_string(),
                from,
                to,
            },
            other => other,
        })?;
        let now = to_sql(now_ms());
        tx.prepare_cached(
            "UPDATE tasks SET status = ?2, \
               started_ms = CASE WHEN ?3 AND started_ms IS NULL THEN ?4 ELSE started_ms END, \
               ended_ms = CASE WHEN ?5 THEN ?4 ELSE ended_ms END, \
               error = COALESCE(?6, error), \
               result_summary = COALESCE(?7, result_summary) \
             WHERE id = ?1",
        )?
        .execute(params![
            id,
            to.as_str(),
            to == TaskStatus::Running,
            now,
            to.is_final(),
            error,
            result_summary,
        ])?;
        let row = get_row(&tx, id)?;
        tx.commit()?;
        Ok(row)
    }

    /// Appends a result that arrived after the task ended to its log, with a
    /// warning line; the status stays as it is.
    fn record_late_result(&self, id: &str, text: &str) -> Result<(), TaskError> {
        let row = self.get(id)?;
        let entry = format!(
            "\n[warning: a result arrived after the task ended as {}; recorded here only]\n{text}\n",
            row.status
        );
        append_to(&row.output_path, &entry)
    }

    /// See [`TaskTable::record_end`].
    fn record_end(&mut self, id: &str, end: &TaskEnd<'_>) -> Result<TaskRow, TaskError> {
        let row = match self.get(id) {
            Ok(row) if row.status == TaskStatus::Stopping || row.status.is_final() => {
                let final_row = if row.status == TaskStatus::Stopping {
                    self.set_status(id, TaskStatus::Cancelled, Some("stopped"), None)
                        .ok()
                } else {
                    Some(row.clone())
                };
                if end.status != TaskStatus::Cancelled {
                    let _ = self.record_late_result(id, end.report);
                }
                final_row.unwrap_or(row)
            }
            _ => self.set_status(id, end.status, end.error, Some(end.summary))?,
        };
        if end.notified {
            let _ = self.mark_notified(&[id.to_string()]);
        }
        Ok(row)
    }

    /// Appends `text` to the task's `output.log`, up to its output limit;
    /// the piece that crosses it is cut, followed by a line saying where
    /// the log stopped, and later pieces are dropped.
    fn append_output(&self, id: &str, text: &str) -> Result<(), TaskError> {
        let path = self.output_path(id)?;
        let text = crate::secrets::redact(text);
        let mut f = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_err(&path))?;
        let len = f.metadata().map_err(io_err(&path))?.len();
        let room = self.output_limit.saturating_sub(len);
        if text.len() as u64 <= room {
            return f.write_all(text.as_bytes()).map_err(io_err(&path));
        }
        if len > self.output_limit {
            // The marker is already there.
            return Ok(());
        }
        let mut end = usize::try_from(room).unwrap_or(usize::MAX).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let marker = format!(
            "{}\n[cadre: output stopped at {} bytes; the rest was not kept]\n",
            &text[..end],
            self.output_limit
        );
        f.write_all(marker.as_bytes()).map_err(io_err(&path))
    }

    fn output_path(&self, id: &str) -> Result<PathBuf, TaskError> {
        let path: Option<String> = self
            .conn
            .prepare_cached("SELECT output_path FROM tasks WHERE id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?;
        path.map(PathBuf::from)
            .ok_or_else(|| TaskError::NotFound(id.to_string()))
    }

    /// Records progress (tool calls, tokens so far) and the time of it.
    fn progress(&self, id: &str, tool_calls: u64, tokens: u64) -> Result<(), TaskError> {
        let n = self
            .conn
            .prepare_cached(
                "UPDATE tasks SET tool_calls = ?2, tokens = ?3, last_activity_ms = ?4 WHERE id = ?1",
            )?
            .execute(params![id, to_sql(tool_calls), to_sql(tokens), to_sql(now_ms())])?;
        if n == 0 {
            return Err(TaskError::NotFound(id.to_string()));
        }
        Ok(())
    }

    /// Marks a task as running in the background (a foreground child moved there).
    fn set_background(&self, id: &str) -> Result<(), TaskError> {
        let n = self
            .conn
            .execute("UPDATE tasks SET background = 1 WHERE id = ?1", [id])?;
        if n == 0 {
            return Err(TaskError::NotFound(id.to_string()));
        }
        Ok(())
    }

    /// Hands a task to another process: its owner becomes process `pid` as
    /// it is now (pid, start time, boot). For a process taking over work, and
    /// for tests that need a row of a dead process.
    fn set_owner_pid(&self, id: &str, pid: u32) -> Result<(), TaskError> {
        let owner = ProcessId::of(pid);
        let n = self.conn.execute(
            "UPDATE tasks SET owner_pid = ?2, owner_start = ?3, owner_boot = ?4 WHERE id = ?1",
            params![id, i64::from(pid), owner.start.map(to_sql), owner.boot],
        )?;
        if n == 0 {
            return Err(TaskError::NotFound(id.to_string()));
        }
        Ok(())
    }

    /// Records that completion notices for these tasks were delivered.
    /// Unknown ids are ignored.
    fn mark_notified(&mut self, ids: &[String]) -> Result<(), TaskError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut stmt = tx.prepare_cached("UPDATE tasks SET notified = 1 WHERE id = ?1")?;
            for id in ids {
                stmt.execute([id])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// One row.
    fn get(&self, id: &str) -> Result<TaskRow, TaskError> {
        get_row(&self.conn, id)
    }

    /// Rows matching `filter`, newest first.
    fn list(&self, filter: &TaskFilter) -> Result<Vec<TaskRow>, TaskError> {
        let mut sql = format!("SELECT {COLUMNS} FROM tasks WHERE 1 = 1");
        let mut args: Vec<Value> = Vec::new();
        if let Some(s) = &filter.session_id {
            args.push(Value::Text(s.clone()));
            sql.push_str(&format!(" AND session_id = ?{}", args.len()));
        }
        if let Some(p) = &filter.parent_agent {
            args.push(Value::Text(p.clone()));
            sql.push_str(&format!(" AND parent_agent = ?{}", args.len()));
        }
        if let Some(st) = filter.status {
            args.push(Value::Text(st.as_str().to_string()));
            sql.push_str(&format!(" AND status = ?{}", args.len()));
        }
        if filter.active_only {
            sql.push_str(" AND status IN ('queued', 'running', 'stopping')");
        }
        // rowid breaks ties within a millisecond: later inserts are newer.
        sql.push_str(" ORDER BY created_ms DESC, rowid DESC");
        if let Some(limit) = filter.limit {
            args.push(Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
            sql.push_str(&format!(" LIMIT ?{}", args.len()));
        }
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args), row_to_task)?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row??);
        }
        Ok(out)
    }

    /// Reads at most `max` bytes of the task's log from byte `offset`, never
    /// splitting a character: a cut inside one backs off to its start, and an
    /// `offset` inside one moves forward to the next. If `max` is smaller than
    /// the character at `offset`, that whole character is returned so readers
    /// always progress. Returns the text (invalid UTF-8 replaced), the offset
    /// to read from next, and the log's size.
    fn read_output(
        &self,
        id: &str,
        offset: u64,
        max: usize,
    ) -> Result<(String, u64, u64), TaskError> {
        let path = self.output_path(id)?;
        let mut file = std::fs::File::open(&path).map_err(io_err(&path))?;
        let total = file.metadata().map_err(io_err(&path))?.len();
        let start = offset.min(total);
        if max == 0 || start == total {
            return Ok((String::new(), start, total));
        }
        file.seek(SeekFrom::Start(start)).map_err(io_err(&path))?;
        // A few bytes past `max` show whether the cut falls inside a character.
        let want = (total - start).min(max as u64 + 4);
        let mut buf = Vec::with_capacity(want as usize);
        file.take(want)
            .read_to_end(&mut buf)
            .map_err(io_err(&path))?;
        let mut s = 0;
        while s < buf.len() && s < 3 && is_continuation(buf[s]) {
            s += 1;
        }
        let mut e = (s + max).min(buf.len());
        if e < buf.len() {
            let mut back = 0;
            while e > s && back < 3 && is_continuation(buf[e]) {
                e -= 1;
                back += 1;
            }
            if e == s {
                // `max` is smaller than this one character: return all of it.
                e = s + 1;
                while e < buf.len() && e - s < 4 && is_continuation(buf[e]) {
                    e += 1;
                }
            }
        }
        let text = String::from_utf8_lossy(&buf[s..e]).into_owned();
        Ok((text, start + e as u64, total))
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
                    for job in queue {
                        // A panicking call loses only its own reply (its
                        // transaction rolls back); the thread serves the next.
                        let _ =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut db)));
                        // Folders of rows just filed, after the filing replied.
                        if !db.unmade.is_empty() {
                            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                db.make_unmade_folders()
                            }));
                        }
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
        let (reply, answer) = tokio::sync::oneshot::channel();
        let sent = self.jobs.send(Box::new(move |db: &mut TaskDb| {
            let _ = reply.send(f(db));
        }));
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
        let _ = self.jobs.send(Box::new(f));
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
    /// (what starts them waits for the database alone): every later call
    /// of the table finds them made; anything else written beside a log
    /// goes through [`Self::write_beside`].
    pub async fn start_many(&self, news: Vec<NewTask>) -> Result<Vec<TaskRow>, TaskError> {
        self.call(move |db| db.insert_many(news, TaskStatus::Running, Folders::After))
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

/// Stops what is left of a dead owner's shell group `pgid`, but only if it is
/// still that group: its leader is alive with the recorded start time, or,
/// the leader gone, every member started after it (a group id is only reused
/// once the old group is empty and a new process got the leader's pid).
fn kill_stale_group(pgid: u32, leader_start: u64) {
    let Ok(raw) = i32::try_from(pgid) else {
        return;
    };
    if raw <= 1 {
        return;
    }
    let ours = match proc_id::start_time(pgid) {
        Some(start) => start == leader_start,
        None => {
            let members = group_members(pgid);
            !members.is_empty() && members.iter().all(|(_, start)| *start >= leader_start)
        }
    };
    if ours {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(raw),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// The processes in group `pgid`, with their start times.
fn group_members(pgid: u32) -> Vec<(u32, u64)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| proc_id::process_group(*pid) == Some(pgid))
        .filter_map(|pid| Some((pid, proc_id::start_time(pid)?)))
        .collect()
}

fn append_to(path: &Path, text: &str) -> Result<(), TaskError> {
    // Task output is read back by TaskOutput and the user: never with a key in it.
    let text = crate::secrets::redact(text);
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
        .map_err(io_err(path))?;
    f.write_all(text.as_bytes()).map_err(io_err(path))
}
