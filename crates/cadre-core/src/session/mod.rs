//! Session logs: the append-only JSONL record of a conversation that makes
//! `--resume` possible after a crash, and the listing and removal of sessions.
//! What goes into a record is decided here; when to write one is the agent loop's call.

mod lock;
mod log;
mod log_writer;
mod rebuild;
mod store;

pub use lock::{SessionLock, lock_path, locks_dir};
pub use log::{
    CallStatus, LOG_VERSION, LoadedLog, LogRecord, NOT_RUN_RESULT, RecordBody, RecoveredTail,
    SessionLog, UNKNOWN_RESULT, images_dir, now_ms, read_log, recover_torn_tail, recovery_path,
};
pub use rebuild::{Rebuilt, UnfinishedCall, rebuild};
pub use store::{
    LogUsage, SessionSummary, SessionTotals, civil_from_days, is_valid_session_id, list_sessions,
    log_usage, remove_session, session_path, session_totals, sessions_dir, utc_datetime,
};

/// A new session id: a UUIDv7, so ids sort by creation time.
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

use thiserror::Error;

/// A session log that cannot be written, read or found.
#[derive(Debug, Error)]
pub enum SessionError {
    /// Writing failed (full disk, permissions…); the session cannot go on safely.
    #[error("cannot write the session log {path}: {source}")]
    Write {
        /// Log path.
        path: std::path::PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// Reading failed.
    #[error("cannot read the session log {path}: {source}")]
    Read {
        /// Log path.
        path: std::path::PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// No session with that id.
    #[error("no session '{0}' (see `cadre sessions`)")]
    NotFound(String),
    /// The id names a subagent's log, which is internal.
    #[error("subagent sessions are internal and cannot be opened")]
    Internal,
    /// The id has characters no session id has.
    #[error("'{0}' is not a session id")]
    BadId(String),
    /// A new session was asked for under an id that is taken.
    #[error("a session '{0}' exists already (resume it with --resume, or pick another id)")]
    Exists(String),
    /// Another process is using the session.
    #[error("{}", in_use_message(id, *pid))]
    InUse {
        /// Session id.
        id: String,
        /// The holder's pid, when it could be read.
        pid: Option<u32>,
    },
    /// The log has no usable records.
    #[error("the session log {0} holds no session record")]
    Empty(std::path::PathBuf),
}

fn in_use_message(id: &str, pid: Option<u32>) -> String {
    let who = match pid {
        Some(pid) => format!("cadre process {pid}"),
        None => "another cadre process".to_string(),
    };
    format!("session {id} is in use by {who}; resume it once that process has ended")
}
