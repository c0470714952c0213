//! The task table: subagent tasks and `Bash` commands (background and
//! foreground alike) in `$CADRE_HOME/tasks.db`, shared by every cadre process,
//! with each task's output in `$CADRE_HOME/tasks/<task-id>/output.log`.
//!
//! Statuses move only through [`check_transition`]; a final status never
//! changes, and a result that arrives after one goes to the log
//! ([`TaskTable::record_late_result`]).

mod board;
mod db;
mod folders;
mod mailbox;
pub(crate) mod proc_id;
mod schema;
mod status;
mod table;

pub use board::{BoardChange, BoardStatus, BoardTask, BoardUpdate, BoardUpdateStatus};
pub use db::process_alive;
pub use mailbox::{TeamMail, TeamMemberRow};
pub use proc_id::ProcessId;
pub use status::{
    Finished, LastWork, NewTask, TaskEnd, TaskError, TaskFilter, TaskKind, TaskRow, TaskSpec,
    TaskStatus, check_transition,
};
pub use table::{
    BlockingTaskTable, DEFAULT_OUTPUT_LIMIT, SCHEMA_VERSION, TASK_LOST_ON_STARTUP, TaskTable,
};

#[cfg(test)]
mod board_tests;
#[cfg(test)]
mod tests;
