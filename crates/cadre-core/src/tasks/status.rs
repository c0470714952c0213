//! Task statuses and the one place their transitions are decided, plus the
//! row, error and filter types of the task table.

pub use crate::protocol::{TaskKind, TaskStatus};

use std::path::PathBuf;

/// The one place transitions are decided.
///
/// Allowed: `queued` → running, stopping, cancelled, failed, lost;
/// `running` → stopping, succeeded, failed, cancelled, lost;
/// `stopping` → cancelled, failed, lost (not succeeded: a stopped task ends
/// cancelled and a late result goes to its log); an active status to itself.
/// A final status never changes, not even to itself.
///
/// A [`TaskError::FinalStatus`] from here has an empty `id`; the table fills it in.
pub fn check_transition(from: TaskStatus, to: TaskStatus) -> Result<(), TaskError> {
    use TaskStatus::*;
    if from.is_final() {
        return Err(TaskError::FinalStatus {
            id: String::new(),
            from,
            to,
        });
    }
    let ok = from == to
        || matches!(
            (from, to),
            (Queued, Running | Stopping | Cancelled | Failed | Lost)
                | (Running, Stopping | Succeeded | Failed | Cancelled | Lost)
                | (Stopping, Cancelled | Failed | Lost)
        );
    if ok {
        Ok(())
    } else {
        Err(TaskError::BadTransition { from, to })
    }
}

/// One row of the task table.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TaskRow {
    /// `t-` and 12 hex digits.
    pub id: String,
    /// Subagent or Bash.
    pub kind: TaskKind,
    /// The session that started it.
    pub session_id: String,
    /// The agent that started it.
    pub parent_agent: String,
    /// What it is for, in a few words.
    pub description: String,
    /// The subagent type, for subagents.
    pub agent_type: Option<String>,
    /// A name to address it by (`SendMessage`), if given.
    pub name: Option<String>,
    /// Current status.
    pub status: TaskStatus,
    /// Runs in the background (else its parent waits for it).
    pub background: bool,
    /// Milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// Set when it first became running.
    pub started_ms: Option<u64>,
    /// Set when it reached a final status.
    pub ended_ms: Option<u64>,
    /// `tasks/<id>/output.log` in the data directory.
    pub output_path: PathBuf,
    /// A short summary of its result.
    pub result_summary: Option<String>,
    /// Why it failed, was cancelled or was lost.
    pub error: Option<String>,
    /// The cadre process that runs it.
    pub owner_pid: u32,
    /// That process's start time (clock ticks since boot), telling it from a
    /// later process with the same pid.
    pub owner_start: Option<u64>,
    /// The boot that process ran in.
    pub owner_boot: Option<String>,
    /// A shell's process group (its leader's pid), once started.
    pub pgid: Option<u32>,
    /// The start time of that group's leader.
    pub pgid_start: Option<u64>,
    /// Tool calls made so far (subagents).
    pub tool_calls: u64,
    /// Tokens used so far (subagents).
    pub tokens: u64,
    /// When progress was last recorded.
    pub last_activity_ms: Option<u64>,
    /// A completion notice for it was delivered.
    pub notified: bool,
}

impl TaskRow {
    /// The cadre process that owns it.
    pub fn owner(&self) -> super::ProcessId {
        super::ProcessId {
            pid: self.owner_pid,
            start: self.owner_start,
            boot: self.owner_boot.clone(),
        }
    }
}

/// What can go wrong with the task table.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// SQLite failed.
    #[error("task table: {0}")]
    Sqlite(String),
    /// A file or directory of the table could not be used.
    #[error("task table: {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// No row has this id.
    #[error("no task with id {0:?} (see `cadre tasks`)")]
    NotFound(String),
    /// The task already has a final status, which never changes.
    #[error("{}", final_status_message(id, *from, *to))]
    FinalStatus {
        /// The task (empty when it came straight from [`check_transition`]).
        id: String,
        /// Its final status.
        from: TaskStatus,
        /// The status asked for.
        to: TaskStatus,
    },
    /// A move the status rules don't allow.
    #[error("a task cannot go from {from} to {to}")]
    BadTransition {
        /// Current status.
        from: TaskStatus,
        /// The status asked for.
        to: TaskStatus,
    },
    /// The database is from a newer cadre, or holds something unreadable.
    #[error("task table: {0}")]
    Schema(String),
    /// The table's thread is gone (it could not open the database, or panicked).
    #[error("task table: its thread has stopped")]
    Stopped,
    /// A team board change was refused; the text is meant for the model.
    #[error("{0}")]
    Board(String),
}

fn final_status_message(id: &str, from: TaskStatus, to: TaskStatus) -> String {
    let who = if id.is_empty() {
        "the task".to_string()
    } else {
        format!("task {id}")
    };
    format!("{who} already ended as {from}, a final status; it cannot become {to}")
}

impl From<rusqlite::Error> for TaskError {
    fn from(e: rusqlite::Error) -> Self {
        TaskError::Sqlite(e.to_string())
    }
}

/// What [`TaskTable::create`](super::TaskTable::create) needs to add a row.
#[derive(Debug, Clone)]
pub struct NewTask {
    /// Subagent or Bash.
    pub kind: TaskKind,
    /// The session that starts it.
    pub session_id: String,
    /// The agent that starts it.
    pub parent_agent: String,
    /// What it is for.
    pub description: String,
    /// The subagent type, for subagents.
    pub agent_type: Option<String>,
    /// A name to address it by.
    pub name: Option<String>,
    /// Runs in the background.
    pub background: bool,
}

/// What a new task of a session is, as the agent starting it describes it.
#[derive(Debug, Clone, Copy)]
pub struct TaskSpec<'a> {
    /// The agent starting it (it alone sees and stops it, and is notified).
    pub owner: &'a str,
    /// Subagent or shell.
    pub kind: TaskKind,
    /// What it is for.
    pub description: &'a str,
    /// The agent type, for subagents.
    pub agent_type: Option<&'a str>,
    /// The name it can be addressed by.
    pub name: Option<&'a str>,
    /// Whether it runs in the background.
    pub background: bool,
}

impl TaskSpec<'_> {
    /// The row to add for it in session `session_id`.
    pub fn new_task(&self, session_id: &str) -> NewTask {
        NewTask {
            kind: self.kind,
            session_id: session_id.to_string(),
            parent_agent: self.owner.to_string(),
            description: self.description.to_string(),
            agent_type: self.agent_type.map(str::to_string),
            name: self.name.map(str::to_string),
            background: self.background,
        }
    }
}

/// How a task ended, as [`TaskTable::record_end`](super::TaskTable::record_end) records it.
#[derive(Debug, Clone, Copy)]
pub struct TaskEnd<'a> {
    /// The status it ended with.
    pub status: TaskStatus,
    /// Why it failed, if it did.
    pub error: Option<&'a str>,
    /// The start of its report, kept in the row.
    pub summary: &'a str,
    /// Its whole report (goes to its log if it arrives after the task ended).
    pub report: &'a str,
    /// Its notice counts as delivered (its report went back directly).
    pub notified: bool,
}

/// What a task did last, recorded in the same call as its end: its final
/// counts and the text that closes its output.
#[derive(Debug, Clone)]
pub struct LastWork {
    /// Tool calls it made in all.
    pub tool_calls: u64,
    /// Tokens it used in all.
    pub tokens: u64,
    /// Appended to its `output.log`.
    pub output: String,
}

/// A task that ended and has not been announced to its owner yet.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Task id.
    pub task_id: String,
    /// Final status.
    pub status: TaskStatus,
    /// What it was for.
    pub description: String,
    /// `bash` or the agent type.
    pub kind_label: String,
    /// Its report (a child's final text, a shell's exit and output tail).
    pub report: String,
}

/// Which rows [`TaskTable::list`](super::TaskTable::list) returns; the default is all.
#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    /// Only this session's tasks.
    pub session_id: Option<String>,
    /// Only tasks this agent started.
    pub parent_agent: Option<String>,
    /// Only tasks with this status.
    pub status: Option<TaskStatus>,
    /// Only queued, running and stopping tasks.
    pub active_only: bool,
    /// At most this many (the newest).
    pub limit: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::TaskStatus::*;
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in TaskStatus::ALL {
            assert_eq!(TaskStatus::parse(s.as_str()), Some(s));
            assert_eq!(
                serde_json::to_value(s).unwrap(),
                serde_json::Value::String(s.as_str().into())
            );
            assert_eq!(s.is_active(), !s.is_final());
        }
        assert_eq!(TaskStatus::parse("Running"), None);
        for k in [TaskKind::Subagent, TaskKind::Bash] {
            assert_eq!(TaskKind::parse(k.as_str()), Some(k));
        }
    }

    #[test]
    fn a_final_status_never_changes() {
        // (from, to, allowed); every one of the 49 pairs is listed.
        let table: &[(TaskStatus, &[TaskStatus])] = &[
            (
                Queued,
                &[Queued, Running, Stopping, Cancelled, Failed, Lost],
            ),
            (
                Running,
                &[Running, Stopping, Succeeded, Failed, Cancelled, Lost],
            ),
            (Stopping, &[Stopping, Cancelled, Failed, Lost]),
            (Succeeded, &[]),
            (Failed, &[]),
            (Cancelled, &[]),
            (Lost, &[]),
        ];
        assert_eq!(table.len(), TaskStatus::ALL.len());
        let mut checked = 0;
        for (from, allowed) in table {
            for to in TaskStatus::ALL {
                let got = check_transition(*from, to);
                checked += 1;
                if allowed.contains(&to) {
                    assert!(got.is_ok(), "{from} -> {to} should be allowed: {got:?}");
                } else if from.is_final() {
                    assert!(
                        matches!(got, Err(TaskError::FinalStatus { from: f, to: t, .. }) if f == *from && t == to),
                        "{from} -> {to}: {got:?}"
                    );
                } else {
                    assert!(
                        matches!(got, Err(TaskError::BadTransition { from: f, to: t }) if f == *from && t == to),
                        "{from} -> {to}: {got:?}"
                    );
                }
            }
        }
        assert_eq!(checked, 49);
    }

    #[test]
    fn a_stopped_task_cannot_succeed() {
        assert!(matches!(
            check_transition(Stopping, Succeeded),
            Err(TaskError::BadTransition { .. })
        ));
    }
}
