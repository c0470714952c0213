//! Work that outlives the turn that started it: background shells and
//! subagents of one session. This module keeps the in-process handles (cancel
//! tokens, inboxes, read cursors) and the queue of finished tasks waiting to be
//! announced; the persistent record of every task is the task table (`tasks`).

mod notice;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

pub use notice::{
    NOTICE_MAX_TASKS, NOTICE_REPORT_MAX, NOTICE_SETTLE, NOTICE_SETTLE_MAX, NoticeThrottle,
    notification_text,
};

use futures::future::BoxFuture;

use crate::protocol::{Event, EventSink};
use crate::secrets::redact;
pub use crate::tasks::{Finished, TaskSpec};
use crate::tasks::{TaskError, TaskRow, TaskStatus, TaskTable};
use crate::tools::BackgroundTasks;

/// Waits before each new try to record a task's end that the task table
/// refused; each try may itself wait the table's busy timeout.
const FINISH_RETRY: [std::time::Duration; 3] = [
    std::time::Duration::from_millis(250),
    std::time::Duration::from_secs(1),
    std::time::Duration::from_secs(4),
];

/// How a task ended, as it is being recorded (possibly over several tries).
struct Ending {
    task_id: String,
    status: TaskStatus,
    report: String,
    error: Option<String>,
    announce: bool,
    /// Recorded with the first try only.
    last: Option<crate::tasks::LastWork>,
}

/// An in-process handle on a running task.
struct Running {
    owner: String,
    cancel: CancellationToken,
    inbox: Option<mpsc::UnboundedSender<String>>,
}

#[derive(Default)]
struct Inner {
    running: HashMap<String, Running>,
    finished: HashMap<String, Vec<Finished>>,
    cursors: HashMap<(String, String), u64>,
    /// Announced tasks whose report was too long to inline and that their
    /// owner has not read yet: (owner, task id).
    unread: std::collections::BTreeSet<(String, String)>,
}

/// The session's background work. Shared (`Arc`) by every agent of the session.
pub struct BackgroundWork {
    /// Itself, for the retries of a task end the table refused.
    me: std::sync::Weak<BackgroundWork>,
    table: TaskTable,
    session_id: String,
    events: EventSink,
    root: CancellationToken,
    inner: Mutex<Inner>,
    changed: Notify,
    endings: std::sync::atomic::AtomicU64,
}

impl BackgroundWork {
    /// The background work of session `session_id`, recorded in `table`.
    pub fn new(table: TaskTable, session_id: String, events: EventSink) -> Arc<Self> {
        Arc::new_cyclic(|me| BackgroundWork {
            me: me.clone(),
            table,
            session_id,
            events,
            root: CancellationToken::new(),
            inner: Mutex::new(Inner::default()),
            changed: Notify::new(),
            endings: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The task table.
    pub fn table(&self) -> &TaskTable {
        &self.table
    }

    /// The session id tasks are filed under.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Files a task (its row created running) and registers its handle;
    /// the returned token is cancelled by `stop`/`stop_all`, never by the
    /// owner's turn ending.
    pub async fn start(
        &self,
        spec: TaskSpec<'_>,
        inbox: Option<mpsc::UnboundedSender<String>>,
    ) -> Result<(TaskRow, CancellationToken), TaskError> {
        let mut started = self.start_many(vec![(spec, inbox)]).await?;
        started
            .pop()
            .ok_or_else(|| TaskError::Sqlite("no task was filed".into()))
    }

    /// Files a batch of tasks in one transaction of the task table (all or
    /// none) and registers their handles, in the order of `specs`.
    pub async fn start_many(
        &self,
        specs: Vec<(TaskSpec<'_>, Option<mpsc::UnboundedSender<String>>)>,
    ) -> Result<Vec<(TaskRow, CancellationToken)>, TaskError> {
        let news = specs
            .iter()
            .map(|(spec, _)| spec.new_task(&self.session_id))
            .collect();
        let rows = self.table.start_many(news).await?;
        let mut started = Vec::with_capacity(rows.len());
        for (row, (spec, inbox)) in rows.into_iter().zip(specs) {
            self.events.emit(Event::TaskStarted {
                task_id: row.id.clone(),
                owner: spec.owner.to_string().into(),
                kind: spec.kind,
                description: spec.description.to_string(),
                background: spec.background,
            });
            let cancel = self.root.child_token();
            if let Ok(mut inner) = self.inner.lock() {
                inner.running.insert(
                    row.id.clone(),
                    Running {
                        owner: spec.owner.to_string(),
                        cancel: cancel.clone(),
                        inbox,
                    },
                );
            }
            started.push((row, cancel));
        }
        Ok(started)
    }

    /// Records how a task ended. A task stopped meanwhile stays `cancelled`
    /// and its late result goes to its log. Background tasks are queued for
    /// their owner's next notice.
    pub async fn finish(
        &self,
        task_id: &str,
        status: TaskStatus,
        report: &str,
        error: Option<&str>,
        announce: bool,
    ) {
        self.finish_after(task_id, None, status, report, error, announce)
            .await;
    }

    /// [`Self::finish`], recording `last` (the task's final counts and the
    /// end of its output) in the same call to the table.
    pub async fn finish_after(
        &self,
        task_id: &str,
        last: Option<crate::tasks::LastWork>,
        status: TaskStatus,
        report: &str,
        error: Option<&str>,
        announce: bool,
    ) {
        let (report, error) = (redact(report), error.map(redact));
        let (report, error) = (report.as_ref(), error.as_deref());
        // The whole report is kept beside the task's output, so a notice
        // rebuilt after a crash reads exactly like the live one.
        if announce && let Ok(row) = self.table.get(task_id).await {
            write_report(row.output_path, report.to_string()).await;
        }
        let ending = Ending {
            task_id: task_id.to_string(),
            status,
            report: report.to_string(),
            error: error.map(str::to_string),
            announce,
            last,
        };
        self.finish_try(ending, 0).await;
    }

    /// One try at recording a task's end. Boxed: a refused try schedules the
    /// next from inside it.
    fn finish_try(&self, ending: Ending, attempt: usize) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.finish_try_inner(ending, attempt).await })
    }

    async fn finish_try_inner(&self, mut ending: Ending, attempt: usize) {
        let last = ending.last.take();
        let Ending {
            task_id,
            status,
            report,
            error,
            announce,
            ..
        } = &ending;
        let (task_id, status, report, error, announce) = (
            task_id.as_str(),
            *status,
            report.as_str(),
            error.as_deref(),
            *announce,
        );
        let summary: String = report.chars().take(SUMMARY_CHARS).collect();
        // Without `announce` the report went back to its owner directly (a
        // foreground child's tool result): nothing is left to announce, now
        // or after a resume.
        let end = crate::tasks::TaskEnd {
            status,
            error,
            summary: &summary,
            report,
            notified: !announce,
        };
        let row = match self.table.record_end_after(task_id, last, end).await {
            Ok(row) => row,
            Err(e) => {
                self.retry_finish(ending, attempt, e).await;
                return;
            }
        };
        let item = Finished {
            task_id: task_id.to_string(),
            status: row.status,
            description: row.description,
            kind_label: row.agent_type.unwrap_or_else(|| "bash".to_string()),
            report: report.to_string(),
        };
        self.hand_over(item, announce);
    }

    /// Tries again later to record a task's end the table refused (another
    /// process holding `tasks.db` locked, a failing disk); after the last try
    /// the task ends `failed` in this process with a warning, so nothing
    /// waits for it forever.
    async fn retry_finish(&self, ending: Ending, attempt: usize, cause: TaskError) {
        let me = self.me.upgrade();
        if let (Some(delay), Some(me)) = (FINISH_RETRY.get(attempt), me) {
            let delay = *delay;
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                me.finish_try(ending, attempt + 1).await;
            });
            return;
        }
        let Ending {
            task_id,
            status,
            report,
            announce,
            ..
        } = ending;
        let message = format!(
            "could not record the end of task {task_id} ({status}): {cause}; it is reported as failed"
        );
        self.events.emit(Event::Warning {
            message: message.clone(),
        });
        let (description, kind_label) = self
            .table
            .get(&task_id)
            .await
            .map(|r| (r.description, r.agent_type.unwrap_or_else(|| "bash".into())))
            .unwrap_or_else(|_| (format!("task {task_id}"), "task".into()));
        let item = Finished {
            task_id,
            status: TaskStatus::Failed,
            description,
            kind_label,
            report: format!("{message}\n{report}"),
        };
        self.hand_over(item, announce);
    }

    /// The end of a task, recorded: it leaves the running set, is queued for
    /// its owner's next notice when `announce`, and `task_ended` goes out.
    fn hand_over(&self, item: Finished, announce: bool) {
        let owner = self
            .inner
            .lock()
            .ok()
            .and_then(|mut inner| inner.running.remove(&item.task_id).map(|r| r.owner));
        let ended = Event::TaskEnded {
            task_id: item.task_id.clone(),
            status: item.status,
            description: item.description.clone(),
        };
        if announce
            && let Some(owner) = owner
            && let Ok(mut inner) = self.inner.lock()
        {
            inner.finished.entry(owner).or_default().push(item);
        }
        self.events.emit(ended);
        self.endings
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    /// Tasks `owner` started that are still running.
    pub fn active_for(&self, owner: &str) -> usize {
        self.inner
            .lock()
            .map(|i| i.running.values().filter(|r| r.owner == owner).count())
            .unwrap_or(0)
    }

    /// True when `owner` has finished tasks waiting to be announced.
    pub fn has_finished(&self, owner: &str) -> bool {
        self.inner
            .lock()
            .map(|i| i.finished.get(owner).is_some_and(|f| !f.is_empty()))
            .unwrap_or(false)
    }

    /// Takes up to `NOTICE_MAX_TASKS` finished tasks of `owner` and records
    /// them as announced, so none is announced twice.
    pub async fn take_finished(&self, owner: &str) -> Vec<Finished> {
        let items = self.take_unmarked(owner);
        let ids: Vec<String> = items.iter().map(|f| f.task_id.clone()).collect();
        self.mark_announced(&ids).await;
        items
    }

    /// Records tasks as announced once their notice is in the session log
    /// (marking them before would lose the notice to a crash in between).
    pub async fn mark_announced(&self, ids: &[String]) {
        if !ids.is_empty() {
            let _ = self.table.mark_notified(ids).await;
        }
    }

    /// After a resume: marks as announced the tasks whose notice the
    /// restored conversation already holds (a crash came after the log write
    /// but before the mark), so they are not announced again.
    pub async fn note_logged_notices(&self, messages: &[crate::model::Message]) {
        let ids: Vec<String> = messages
            .iter()
            .filter(|m| m.role == crate::model::Role::User)
            .flat_map(|m| m.content.iter())
            .filter_map(|b| match b {
                crate::model::ContentBlock::Text { text } => Some(text),
                _ => None,
            })
            .filter(|t| t.contains("<task-notification>"))
            .flat_map(|t| notice::announced_ids(t))
            .collect();
        self.mark_announced(&ids).await;
    }

    /// Takes up to `NOTICE_MAX_TASKS` finished tasks of `owner` without
    /// marking them announced; call [`Self::mark_announced`] once delivered.
    pub fn take_unmarked(&self, owner: &str) -> Vec<Finished> {
        let items: Vec<Finished> = match self.inner.lock() {
            Ok(mut inner) => match inner.finished.get_mut(owner) {
                Some(list) => {
                    let n = list.len().min(NOTICE_MAX_TASKS);
                    list.drain(..n).collect()
                }
                None => Vec::new(),
            },
            Err(_) => Vec::new(),
        };
        if !items.is_empty()
            && let Ok(mut inner) = self.inner.lock()
        {
            for f in items.iter().filter(|f| f.report.len() > NOTICE_REPORT_MAX) {
                inner.unread.insert((owner.to_string(), f.task_id.clone()));
            }
        }
        items
    }

    /// Announced tasks of `owner` whose long output it has not read yet.
    pub fn unread_of(&self, owner: &str) -> Vec<String> {
        self.inner
            .lock()
            .map(|i| {
                i.unread
                    .iter()
                    .filter(|(o, _)| o == owner)
                    .map(|(_, t)| t.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits until no task of `owner` has ended for `quiet` (at most
    /// `limit`), so tasks finishing together are announced together. With
    /// nothing of `owner` still running there is nothing to wait for.
    pub async fn settle(
        &self,
        owner: &str,
        quiet: std::time::Duration,
        limit: std::time::Duration,
    ) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if self.active_for(owner) == 0 {
                return;
            }
            let before = self.endings.load(std::sync::atomic::Ordering::SeqCst);
            let until = (tokio::time::Instant::now() + quiet).min(deadline);
            tokio::time::sleep_until(until).await;
            let after = self.endings.load(std::sync::atomic::Ordering::SeqCst);
            if after == before || tokio::time::Instant::now() >= deadline {
                return;
            }
        }
    }

    /// Waits until some task ends (or is stopped).
    pub async fn changed(&self) {
        self.changed.notified().await;
    }

    /// Stops a task `owner` started: marks it `stopping` and cancels it; it
    /// records `cancelled` when its work has wound down.
    pub async fn stop(&self, owner: &str, task_id: &str) -> Result<TaskRow, String> {
        let token = {
            let inner = self.inner.lock().map_err(|_| "lock poisoned".to_string())?;
            match inner.running.get(task_id) {
                Some(r) if r.owner == owner => Some(r.cancel.clone()),
                Some(_) => return Err(format!("task {task_id} was not started by this agent")),
                None => None,
            }
        };
        let Some(token) = token else {
            return match self.table.get(task_id).await {
                Ok(row) => Err(format!(
                    "task {task_id} is not running (status {})",
                    row.status.as_str()
                )),
                Err(_) => Err(format!("no task {task_id}")),
            };
        };
        let row = self
            .table
            .set_status(task_id, TaskStatus::Stopping, Some("stopped"), None)
            .await
            .map_err(|e| e.to_string())?;
        token.cancel();
        self.changed.notify_waiters();
        Ok(row)
    }

    /// Stops everything (Ctrl+C in `exec`, or leaving with `--no-wait`).
    pub async fn stop_all(&self) {
        let ids: Vec<String> = self
            .inner
            .lock()
            .map(|i| i.running.keys().cloned().collect())
            .unwrap_or_default();
        for id in ids {
            let _ = self
                .table
                .set_status(
                    &id,
                    TaskStatus::Stopping,
                    Some("stopped with the whole run"),
                    None,
                )
                .await;
        }
        self.root.cancel();
    }

    /// Stops every task `owner` started (a child's shells when the child ends).
    pub async fn stop_owned_by(&self, owner: &str) {
        for id in self.running_of(owner) {
            let _ = self.stop(owner, &id).await;
        }
    }

    /// Applies stops requested from outside this process (`cadre tasks stop`
    /// marks the row `stopping`; the owner notices here and winds the work down).
    pub async fn apply_external_stops(&self) {
        let running: Vec<(String, CancellationToken)> = self
            .inner
            .lock()
            .map(|i| {
                i.running
                    .iter()
                    .map(|(id, r)| (id.clone(), r.cancel.clone()))
                    .collect()
            })
            .unwrap_or_default();
        for (id, token) in running {
            if !token.is_cancelled()
                && self
                    .table
                    .get(&id)
                    .await
                    .is_ok_and(|r| r.status == TaskStatus::Stopping)
            {
                token.cancel();
            }
        }
    }

    /// Queues the finished, never-announced tasks `owner` started in this
    /// session (after `--resume`), so each is announced exactly once.
    pub async fn requeue_unannounced(&self, owner: &str) {
        let rows = self
            .table
            .list(&crate::tasks::TaskFilter {
                session_id: Some(self.session_id.clone()),
                parent_agent: Some(owner.to_string()),
                ..Default::default()
            })
            .await
            .unwrap_or_default();
        let mut items: Vec<Finished> = Vec::new();
        for r in rows
            .into_iter()
            .filter(|r| r.status.is_final() && !r.notified)
        {
            let report = match read_report(r.output_path.clone()).await {
                Some(report) => report,
                None => summary_report(&r),
            };
            items.push(Finished {
                task_id: r.id.clone(),
                status: r.status,
                description: r.description.clone(),
                kind_label: r.agent_type.clone().unwrap_or_else(|| "bash".into()),
                report,
            });
        }
        if items.is_empty() {
            return;
        }
        if let Ok(mut inner) = self.inner.lock() {
            inner
                .finished
                .entry(owner.to_string())
                .or_default()
                .extend(items);
        }
    }

    /// Waits (bounded) until no task is registered as running.
    pub async fn wait_idle(&self, limit: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let busy = self
                .inner
                .lock()
                .map(|i| !i.running.is_empty())
                .unwrap_or(false);
            if !busy {
                return;
            }
            let notified = self.changed.notified();
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return;
            }
        }
    }

    /// The running tasks of `owner`: (id, description).
    pub fn running_of(&self, owner: &str) -> Vec<String> {
        self.inner
            .lock()
            .map(|i| {
                i.running
                    .iter()
                    .filter(|(_, r)| r.owner == owner)
                    .map(|(id, _)| id.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Delivers a message to a running task's inbox. False if it has none.
    pub fn send_to_running(&self, task_id: &str, message: String) -> bool {
        self.inner
            .lock()
            .ok()
            .and_then(|i| i.running.get(task_id).and_then(|r| r.inbox.clone()))
            .is_some_and(|tx| tx.send(message).is_ok())
    }

    /// Where `agent` last stopped reading `task_id`'s output.
    pub fn cursor(&self, agent: &str, task_id: &str) -> u64 {
        self.inner
            .lock()
            .ok()
            .and_then(|i| {
                i.cursors
                    .get(&(agent.to_string(), task_id.to_string()))
                    .copied()
            })
            .unwrap_or(0)
    }

    /// Moves `agent`'s read cursor on `task_id`; reading to the end of a
    /// finished task's output counts as having read it.
    pub fn set_cursor(&self, agent: &str, task_id: &str, offset: u64, at_end: bool) {
        if let Ok(mut i) = self.inner.lock() {
            i.cursors
                .insert((agent.to_string(), task_id.to_string()), offset);
            if at_end {
                i.unread.remove(&(agent.to_string(), task_id.to_string()));
            }
        }
    }

    /// Updates a task's progress (tool calls, tokens, last activity).
    pub async fn progress(&self, task_id: &str, tool_calls: u64, tokens: u64) {
        let _ = self.table.progress(task_id, tool_calls, tokens).await;
    }
}

impl BackgroundTasks for BackgroundWork {
    fn session_id(&self) -> &str {
        BackgroundWork::session_id(self)
    }

    fn table(&self) -> &TaskTable {
        BackgroundWork::table(self)
    }

    fn start<'a>(
        &'a self,
        spec: TaskSpec<'a>,
        inbox: Option<mpsc::UnboundedSender<String>>,
    ) -> BoxFuture<'a, Result<(TaskRow, CancellationToken), TaskError>> {
        Box::pin(BackgroundWork::start(self, spec, inbox))
    }

    fn start_many<'a>(
        &'a self,
        specs: Vec<(TaskSpec<'a>, Option<mpsc::UnboundedSender<String>>)>,
    ) -> BoxFuture<'a, Result<Vec<(TaskRow, CancellationToken)>, TaskError>> {
        Box::pin(BackgroundWork::start_many(self, specs))
    }

    fn finish_after<'a>(
        &'a self,
        task_id: &'a str,
        last: Option<crate::tasks::LastWork>,
        status: TaskStatus,
        report: &'a str,
        error: Option<&'a str>,
        announce: bool,
    ) -> BoxFuture<'a, ()> {
        Box::pin(BackgroundWork::finish_after(
            self, task_id, last, status, report, error, announce,
        ))
    }

    fn stop<'a>(
        &'a self,
        owner: &'a str,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<TaskRow, String>> {
        Box::pin(BackgroundWork::stop(self, owner, task_id))
    }

    fn stop_owned_by<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(BackgroundWork::stop_owned_by(self, owner))
    }

    fn changed(&self) -> BoxFuture<'_, ()> {
        Box::pin(BackgroundWork::changed(self))
    }

    fn cursor(&self, agent: &str, task_id: &str) -> u64 {
        BackgroundWork::cursor(self, agent, task_id)
    }

    fn set_cursor(&self, agent: &str, task_id: &str, offset: u64, at_end: bool) {
        BackgroundWork::set_cursor(self, agent, task_id, offset, at_end)
    }

    fn send_to_running(&self, task_id: &str, message: String) -> bool {
        BackgroundWork::send_to_running(self, task_id, message)
    }

    fn active_for(&self, owner: &str) -> usize {
        BackgroundWork::active_for(self, owner)
    }

    fn has_finished(&self, owner: &str) -> bool {
        BackgroundWork::has_finished(self, owner)
    }

    fn take_unmarked(&self, owner: &str) -> Vec<Finished> {
        BackgroundWork::take_unmarked(self, owner)
    }

    fn mark_announced<'a>(&'a self, ids: &'a [String]) -> BoxFuture<'a, ()> {
        Box::pin(BackgroundWork::mark_announced(self, ids))
    }

    fn unread_of(&self, owner: &str) -> Vec<String> {
        BackgroundWork::unread_of(self, owner)
    }
}

/// Characters of a report kept in the task table's summary.
const SUMMARY_CHARS: usize = 500;

/// A report from the task table alone (no kept report: a row written by an
/// older cadre): the summary, marked when it was cut, with where the rest is.
fn summary_report(row: &TaskRow) -> String {
    match &row.result_summary {
        Some(summary) if summary.chars().count() >= SUMMARY_CHARS => format!(
            "{summary}\n[cut to its first {SUMMARY_CHARS} characters; read the whole output with TaskOutput(task_id: \"{}\")]",
            row.id
        ),
        Some(summary) => summary.clone(),
        None => row.error.clone().unwrap_or_default(),
    }
}

/// Where a finished task's whole report is kept: beside its output log.
fn report_path(output_path: &std::path::Path) -> std::path::PathBuf {
    output_path.with_file_name("report.txt")
}

/// Keeps `report` for a notice that may have to be rebuilt after a crash
/// (0600, like the output log), off the runtime's thread. Best effort:
/// without it the notice falls back to the stored summary.
async fn write_report(output_path: std::path::PathBuf, report: String) {
    let _ = tokio::task::spawn_blocking(move || write_report_now(&output_path, &report)).await;
}

fn write_report_now(output_path: &std::path::Path, report: &str) {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    if let Ok(mut f) = opts.open(report_path(output_path)) {
        let _ = f.write_all(report.as_bytes());
    }
}

/// The whole report kept by `write_report`, if there is one, read off the
/// runtime's thread.
async fn read_report(output_path: std::path::PathBuf) -> Option<String> {
    tokio::task::spawn_blocking(move || read_report_now(&output_path))
        .await
        .ok()
        .flatten()
}

fn read_report_now(output_path: &std::path::Path) -> Option<String> {
    let bytes = std::fs::read(report_path(output_path)).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::TaskKind;

    async fn work_with_task(dir: &std::path::Path) -> (Arc<BackgroundWork>, TaskRow) {
        let table = TaskTable::open(dir).await.unwrap();
        let work = BackgroundWork::new(table, "s1".into(), EventSink::discard());
        let spec = TaskSpec {
            owner: "main",
            kind: TaskKind::Subagent,
            description: "job",
            agent_type: Some("helper"),
            name: None,
            background: true,
        };
        let (row, _) = work.start(spec, None).await.unwrap();
        (work, row)
    }

    #[tokio::test]
    async fn a_requeued_notice_has_the_whole_report() {
        let dir = tempfile::tempdir().unwrap();
        let (work, row) = work_with_task(dir.path()).await;
        let report = format!("START {} END", "x".repeat(3000));
        work.finish(&row.id, TaskStatus::Succeeded, &report, None, true)
            .await;
        // A new process of the same session: nothing in memory.
        let again = BackgroundWork::new(
            TaskTable::open(dir.path()).await.unwrap(),
            "s1".into(),
            EventSink::discard(),
        );
        again.requeue_unannounced("main").await;
        let items = again.take_finished("main").await;
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].report, report);
    }

    #[tokio::test]
    async fn without_a_kept_report_the_cut_summary_is_marked() {
        let dir = tempfile::tempdir().unwrap();
        let (work, row) = work_with_task(dir.path()).await;
        let report = "y".repeat(3000);
        work.finish(&row.id, TaskStatus::Succeeded, &report, None, true)
            .await;
        std::fs::remove_file(report_path(&row.output_path)).unwrap();
        let again = BackgroundWork::new(
            TaskTable::open(dir.path()).await.unwrap(),
            "s1".into(),
            EventSink::discard(),
        );
        again.requeue_unannounced("main").await;
        let items = again.take_finished("main").await;
        assert!(items[0].report.starts_with(&"y".repeat(500)));
        assert!(
            items[0]
                .report
                .contains(&format!("TaskOutput(task_id: \"{}\")", row.id)),
            "{}",
            items[0].report
        );
    }

    #[tokio::test]
    async fn a_report_returned_directly_is_never_announced_later() {
        let dir = tempfile::tempdir().unwrap();
        let (work, row) = work_with_task(dir.path()).await;
        work.finish(&row.id, TaskStatus::Succeeded, "done", None, false)
            .await;
        assert!(work.table().get(&row.id).await.unwrap().notified);
        work.requeue_unannounced("main").await;
        assert!(!work.has_finished("main"));
    }
}
