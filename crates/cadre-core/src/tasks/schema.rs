//! The schema of `tasks.db`: opening a connection at the current version,
//! and the migrations that bring an older file there.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use super::status::TaskError;
use super::table::SCHEMA_VERSION;

/// How long a statement waits for another process's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

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
pub(super) fn open_connection(db_path: &Path) -> Result<Connection, TaskError> {
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
