//! The table's thread's side of `tasks.db`: the connection and every
//! statement, the schema and its migrations, and the task folders and
//! `output.log`s. [`super::table::TaskTable`] hands it jobs.

use std::fs::{DirBuilder, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use super::proc_id::{self, ProcessId};
use super::schema::open_connection;
use super::status::{
    NewTask, TaskEnd, TaskError, TaskFilter, TaskKind, TaskRow, TaskStatus, check_transition,
};
use super::table::{DEFAULT_OUTPUT_LIMIT, TASK_LOST_ON_STARTUP};

const COLUMNS: &str = "id, kind, session_id, parent_agent, description, agent_type, name, \
     status, background, created_ms, started_ms, ended_ms, output_path, result_summary, \
     error, owner_pid, tool_calls, tokens, last_activity_ms, notified, owner_start, owner_boot, \
     pgid, pgid_start";

/// The placeholders for every one of [`COLUMNS`], in its order.
const VALUES: &str = "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, \
     ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)";

/// Inserts `row` whole with `insert`, a statement of [`COLUMNS`] and [`VALUES`].
fn insert_row(insert: &mut rusqlite::Statement<'_>, row: &TaskRow) -> rusqlite::Result<usize> {
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
    ])
}

/// The connection and the directories, owned by the table's thread: every
/// statement runs there, never on the async runtime's thread.
pub(super) struct TaskDb {
    pub(super) conn: Connection,
    db_path: PathBuf,
    tasks_dir: PathBuf,
    /// Most bytes of output a task's `output.log` keeps.
    pub(super) output_limit: u64,
    /// `output.log` paths of rows filed whose folder and log are made once
    /// the filing job has replied, off the table's thread, before any later
    /// job that is not a filing.
    pub(super) unmade: Vec<PathBuf>,
}

/// When a filed row's folder and `output.log` are made.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Folders {
    /// Before the row comes back.
    First,
    /// Just after, on the folder thread ([`super::table`]), before the
    /// table's next job that is not a filing.
    After,
}

pub(super) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TaskError + '_ {
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
    pub(super) fn open(data_dir: &Path) -> Result<TaskDb, TaskError> {
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
    pub(super) fn named(&self, e: TaskError) -> TaskError {
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
    pub(super) fn mark_lost_on_startup(&mut self) -> Result<Vec<String>, TaskError> {
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
    pub(super) fn set_group(
        &self,
        id: &str,
        pgid: u32,
        leader_start: Option<u64>,
    ) -> Result<(), TaskError> {
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
    pub(super) fn insert_many(
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

    pub(super) fn try_insert_many(
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
            let mut insert =
                tx.prepare_cached(&format!("INSERT INTO tasks ({COLUMNS}) {VALUES}"))?;
            for row in rows.iter() {
                insert_row(&mut insert, row)?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Adds `rows` as they are (ids, statuses and times kept), in one write
    /// transaction: all of them or none. A row whose id is taken is refused
    /// unless `replace` and the row there is of the same session.
    pub(super) fn import_rows(
        &mut self,
        rows: Vec<TaskRow>,
        replace: bool,
    ) -> Result<(), TaskError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut existing = tx.prepare("SELECT session_id FROM tasks WHERE id = ?1")?;
            let mut insert = tx.prepare(&format!(
                "INSERT OR REPLACE INTO tasks ({COLUMNS}) {VALUES}"
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
                insert_row(&mut insert, row)?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// A new task's directory `tasks/<id>/` (0700, under a fresh id) with an
    /// empty `output.log` (0600), whose path is returned. Made here, when the
    /// task is filed, rather than at its first output: that is often its end,
    /// whose report the parent waits for.
    pub(super) fn new_output_log(&self) -> Result<PathBuf, TaskError> {
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
    pub(super) fn unused_output_path(&self) -> PathBuf {
        let mut dir = self.tasks_dir.join(new_task_id());
        for _ in 0..8 {
            if std::fs::symlink_metadata(&dir).is_err() {
                break;
            }
            dir = self.tasks_dir.join(new_task_id());
        }
        dir.join("output.log")
    }

    /// Moves a task to `to` if [`check_transition`] allows it, in one write
    /// transaction (read, check, write) so processes can't race. Sets
    /// `started_ms` on the first move to running and `ended_ms` on a final
    /// status; `error` and `result_summary` replace the stored ones when given.
    pub(super) fn set_status(
        &mut self,
        id: &str,
        to: TaskStatus,
        error: Option<&str>,
        result_summary: Option<&str>,
    ) -> Result<TaskRow, TaskError> {
        self.try_set_status(id, to, error, result_summary)
            .map_err(|e| self.named(e))
    }

    pub(super) fn try_set_status(
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
    pub(super) fn record_late_result(&self, id: &str, text: &str) -> Result<(), TaskError> {
        let row = self.get(id)?;
        let entry = format!(
            "\n[warning: a result arrived after the task ended as {}; recorded here only]\n{text}\n",
            row.status
        );
        append_to(&row.output_path, &entry)
    }

    /// See [`TaskTable::record_end`].
    pub(super) fn record_end(&mut self, id: &str, end: &TaskEnd<'_>) -> Result<TaskRow, TaskError> {
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
    pub(super) fn append_output(&self, id: &str, text: &str) -> Result<(), TaskError> {
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

    pub(super) fn output_path(&self, id: &str) -> Result<PathBuf, TaskError> {
        let path: Option<String> = self
            .conn
            .prepare_cached("SELECT output_path FROM tasks WHERE id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?;
        path.map(PathBuf::from)
            .ok_or_else(|| TaskError::NotFound(id.to_string()))
    }

    /// Records progress (tool calls, tokens so far) and the time of it.
    pub(super) fn progress(&self, id: &str, tool_calls: u64, tokens: u64) -> Result<(), TaskError> {
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
    pub(super) fn set_background(&self, id: &str) -> Result<(), TaskError> {
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
    pub(super) fn set_owner_pid(&self, id: &str, pid: u32) -> Result<(), TaskError> {
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
    pub(super) fn mark_notified(&mut self, ids: &[String]) -> Result<(), TaskError> {
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
    pub(super) fn get(&self, id: &str) -> Result<TaskRow, TaskError> {
        get_row(&self.conn, id)
    }

    /// Rows matching `filter`, newest first.
    pub(super) fn list(&self, filter: &TaskFilter) -> Result<Vec<TaskRow>, TaskError> {
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
    pub(super) fn read_output(
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

/// Makes the folders (0700) and empty `output.log`s (0600) of rows filed
/// with [`Folders::After`]. A folder that cannot be made is left out: what
/// is later written there fails and says why, as it would if the folder had
/// been removed.
pub(super) fn make_folders(output_paths: Vec<PathBuf>) {
    for output_path in output_paths {
        let Some(dir) = output_path.parent() else {
            continue;
        };
        let made = match DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).is_ok(),
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
