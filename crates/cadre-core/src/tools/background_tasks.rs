//! What tools (and the agent running them) need of the session's background
//! work, as a trait the tool context holds: `background::BackgroundWork`
//! implements it, so tools never import the layer above them.

use futures::future::BoxFuture;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::protocol::TaskStatus;
use crate::tasks::{Finished, LastWork, TaskError, TaskRow, TaskSpec, TaskTable};

/// The session's background work as a tool context reaches it.
pub trait BackgroundTasks: Send + Sync {
    /// The session id tasks are filed under.
    fn session_id(&self) -> &str;

    /// The task table.
    fn table(&self) -> &TaskTable;

    /// Files a task for `spec.owner` (created running) and registers its
    /// handle; the token is cancelled by a stop, never by the owner's turn
    /// ending. `inbox` receives messages sent to it while it runs.
    fn start<'a>(
        &'a self,
        spec: TaskSpec<'a>,
        inbox: Option<UnboundedSender<String>>,
    ) -> BoxFuture<'a, Result<(TaskRow, CancellationToken), TaskError>>;

    /// [`Self::start`] for a batch, all rows in one transaction: every task
    /// is filed, or none is. Results come in the order of `specs`.
    fn start_many<'a>(
        &'a self,
        specs: Vec<(TaskSpec<'a>, Option<UnboundedSender<String>>)>,
    ) -> BoxFuture<'a, Result<Vec<(TaskRow, CancellationToken)>, TaskError>>;

    /// Records how a task ended; with `announce` it is queued for its
    /// owner's next notice. A task stopped meanwhile stays `cancelled`.
    fn finish<'a>(
        &'a self,
        task_id: &'a str,
        status: TaskStatus,
        report: &'a str,
        error: Option<&'a str>,
        announce: bool,
    ) -> BoxFuture<'a, ()> {
        self.finish_after(task_id, None, status, report, error, announce)
    }

    /// [`Self::finish`], recording `last` (the task's final counts and the
    /// end of its output) in the same call to the task table.
    fn finish_after<'a>(
        &'a self,
        task_id: &'a str,
        last: Option<LastWork>,
        status: TaskStatus,
        report: &'a str,
        error: Option<&'a str>,
        announce: bool,
    ) -> BoxFuture<'a, ()>;

    /// Stops a task `owner` started; the error says why it cannot.
    fn stop<'a>(
        &'a self,
        owner: &'a str,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<TaskRow, String>>;

    /// Stops every task `owner` started.
    fn stop_owned_by<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, ()>;

    /// Resolves when some task ends or is stopped.
    fn changed(&self) -> BoxFuture<'_, ()>;

    /// Where `agent` last stopped reading `task_id`'s output.
    fn cursor(&self, agent: &str, task_id: &str) -> u64;

    /// Moves `agent`'s read cursor on `task_id`; `at_end` on a finished
    /// task's output counts as having read it.
    fn set_cursor(&self, agent: &str, task_id: &str, offset: u64, at_end: bool);

    /// Delivers a message to a running task's inbox; false if it has none.
    fn send_to_running(&self, task_id: &str, message: String) -> bool;

    /// Tasks `owner` started that are still running.
    fn active_for(&self, owner: &str) -> usize;

    /// True when `owner` has finished tasks waiting to be announced.
    fn has_finished(&self, owner: &str) -> bool;

    /// Takes the next finished tasks of `owner` to announce, without
    /// marking them; [`Self::mark_announced`] once the notice is logged.
    fn take_unmarked(&self, owner: &str) -> Vec<Finished>;

    /// Records tasks as announced.
    fn mark_announced<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, ()>;

    /// Announced tasks of `owner` whose long output it has not read yet.
    fn unread_of(&self, owner: &str) -> Vec<String>;
}
