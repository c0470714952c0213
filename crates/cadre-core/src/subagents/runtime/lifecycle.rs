//! A child's task life cycle: filed in the task table when it is prepared,
//! closed with its report (announced when it ended in the background).

use super::{BatchFailure, ChildRecord, Parent, Prepared, SubagentRuntime};
use crate::subagents::report::{ChildReport, ChildStatus, render_batch};
use crate::tasks::{TaskKind, TaskRow, TaskStatus};
use tokio_util::sync::CancellationToken;

/// A child's row as the task table filed it, with the child's inbox.
pub(super) struct FiledTask {
    row: Option<(TaskRow, CancellationToken)>,
    inbox: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl SubagentRuntime {
    /// Files a child in the task table (foreground children too, so every
    /// child has an id and a log there). If the table refuses, the child has
    /// no task. The future owns what it needs, so the row is filed on the
    /// table's thread while the child's log opens.
    pub(super) fn file_task(
        &self,
        parent: &Parent<'_>,
        p: &Prepared,
    ) -> impl std::future::Future<Output = FiledTask> + use<> {
        let work = self.base_ctx.background.clone();
        let owner = parent.agent_id.to_string();
        let (description, agent_type, name, background) = (
            p.description.clone(),
            p.tag.agent_type.clone(),
            p.name.clone(),
            p.background,
        );
        async move {
            let (tx, inbox) = tokio::sync::mpsc::unbounded_channel();
            let Some(work) = work else {
                return FiledTask { row: None, inbox };
            };
            let spec = crate::tasks::TaskSpec {
                owner: &owner,
                kind: TaskKind::Subagent,
                description: &description,
                agent_type: Some(&agent_type),
                name: name.as_deref(),
                background,
            };
            let row = work
                .start_many(vec![(spec, Some(tx))])
                .await
                .ok()
                .and_then(|mut rows| rows.pop());
            FiledTask { row, inbox }
        }
    }

    /// Gives a child its filed task (its id, inbox and cancel) and
    /// remembers it; returns its saved record to write beside the task's
    /// output once its folder is made (nothing waits for it). A worktree
    /// child's worktree is named there at once, on the table's thread right
    /// after the folder, so a later process can settle it if this one dies.
    /// Best effort: without them the child only cannot be resumed or its
    /// worktree settled after a crash.
    pub(super) fn open_task(
        &self,
        parent: &Parent<'_>,
        p: &mut Prepared,
        filed: FiledTask,
    ) -> Option<(std::path::PathBuf, Vec<u8>)> {
        let mut save = None;
        let mut output_path = None;
        if let Some((row, cancel)) = filed.row {
            p.agent.set_inbox(filed.inbox);
            p.agent.record_progress_in(row.id.clone());
            p.task_id = Some(row.id);
            p.task_cancel = Some(cancel);
            output_path = Some(row.output_path);
        }
        let record = ChildRecord {
            agent_id: p.tag.agent_id.to_string(),
            owner: parent.agent_id.to_string(),
            name: p.name.clone(),
            agent_type: p.tag.agent_type.clone(),
            setup: p.setup.clone(),
            spawner: p.spawner.clone(),
            task_id: p.task_id.clone(),
            resumable: p.resumable,
            verdict: p.verification,
            servers: p.mcp_servers.handles(),
            work_mode: p.teammate.map(|(mode, _)| mode),
        };
        if let Some(path) = &output_path {
            if let Some(bytes) = self.saved_child(&record) {
                save = Some((super::messages::saved_child_path(path), bytes));
            }
            if let (Some(named), Some(work)) = (
                p.worktree.as_ref().and_then(|w| w.record_file(path)),
                &self.base_ctx.background,
            ) {
                // Handed over now, in order after the folder; not waited for.
                drop(work.table().write_beside(vec![named]));
            }
        }
        if let Ok(mut children) = self.children.lock() {
            children.push(record);
        }
        save
    }

    /// Ends the task of a child that was filed but never ran (its batch
    /// stopped first), so no row is left running.
    pub(super) async fn end_unstarted(&self, p: &Prepared, why: &str) {
        if let (Some(work), Some(task)) = (&self.base_ctx.background, &p.task_id) {
            work.finish(task, TaskStatus::Failed, why, Some(why), false)
                .await;
        }
    }

    /// Files a child's end in its task: its report, or why there is none.
    /// `announce`: it ended in the background, and its parent gets a notice
    /// with the rendered report (a failure without report too).
    pub(super) async fn file_result(
        &self,
        task_id: &str,
        result: &Result<ChildReport, BatchFailure>,
        announce: bool,
    ) {
        match result {
            Ok(r) => {
                let text = if announce {
                    render_batch(std::slice::from_ref(r))
                        .into_iter()
                        .next()
                        .unwrap_or_default()
                } else {
                    r.final_text.clone()
                };
                self.close_task(task_id, r, &text, announce).await;
            }
            Err(BatchFailure(e)) if announce => {
                if let Some(work) = &self.base_ctx.background {
                    work.finish(task_id, TaskStatus::Failed, e, Some(e), true)
                        .await;
                }
            }
            Err(_) => {}
        }
    }

    /// Records a child's end in the task table; background ones are announced.
    pub(super) async fn close_task(
        &self,
        task_id: &str,
        r: &ChildReport,
        report: &str,
        announce: bool,
    ) {
        let Some(work) = &self.base_ctx.background else {
            return;
        };
        let status = match r.status {
            ChildStatus::Completed => TaskStatus::Succeeded,
            ChildStatus::Failed => TaskStatus::Failed,
            ChildStatus::Cancelled => TaskStatus::Cancelled,
        };
        // One call to the table for the child's last counts, its report in
        // its output and its end: the parent's next request waits on it.
        let last = crate::tasks::LastWork {
            tool_calls: u64::from(r.tool_calls),
            tokens: r.tokens,
            output: report.to_string(),
        };
        work.finish_after(
            task_id,
            Some(last),
            status,
            report,
            r.error.as_deref(),
            announce,
        )
        .await;
    }
}
