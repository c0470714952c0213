//! A child's task life cycle: filed in the task table when it is prepared,
//! closed with its report (announced when it ended in the background).

use super::{BatchFailure, ChildRecord, Parent, Prepared, SubagentRuntime};
use crate::subagents::report::{ChildReport, ChildStatus, render_batch};
use crate::tasks::{TaskKind, TaskRow, TaskStatus};
use tokio_util::sync::CancellationToken;

/// A batch's rows as the task table filed them, with the children's inboxes.
#[derive(Default)]
pub(super) struct FiledTasks {
    rows: Vec<(TaskRow, CancellationToken)>,
    inboxes: Vec<tokio::sync::mpsc::UnboundedReceiver<String>>,
}

/// Writes children's saved records (0600). Best effort, as before: a record
/// that cannot be written or read later only makes its child not resumable.
pub(super) fn write_saved_children(saves: &[(std::path::PathBuf, Vec<u8>)]) {
    for (path, bytes) in saves {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        if let Ok(mut f) = opts.open(path) {
            use std::io::Write;
            let _ = f.write_all(bytes);
        }
    }
}

impl SubagentRuntime {
    /// Files the batch's children in the task table, all rows in one
    /// transaction (foreground children too, so every child has an id and a
    /// log there). If the table refuses, no child has a task. The future owns
    /// what it needs, so the rows are filed while the children's logs open.
    pub(super) fn file_tasks(
        &self,
        parent: &Parent<'_>,
        prepared: &[(usize, Prepared)],
    ) -> impl std::future::Future<Output = FiledTasks> + use<> {
        let work = self.base_ctx.background.clone();
        let owner = parent.agent_id.to_string();
        let wanted: Vec<(String, String, Option<String>, bool)> = prepared
            .iter()
            .map(|(_, p)| {
                (
                    p.description.clone(),
                    p.tag.agent_type.clone(),
                    p.name.clone(),
                    p.background,
                )
            })
            .collect();
        async move {
            let Some(work) = work else {
                return FiledTasks::default();
            };
            let mut inboxes = Vec::with_capacity(wanted.len());
            let mut specs = Vec::with_capacity(wanted.len());
            for (description, agent_type, name, background) in &wanted {
                let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                inboxes.push(rx);
                let spec = crate::tasks::TaskSpec {
                    owner: &owner,
                    kind: TaskKind::Subagent,
                    description,
                    agent_type: Some(agent_type),
                    name: name.as_deref(),
                    background: *background,
                };
                specs.push((spec, Some(tx)));
            }
            FiledTasks {
                rows: work.start_many(specs).await.unwrap_or_default(),
                inboxes,
            }
        }
    }

    /// Gives each child its filed task (its id, inbox and cancel) and
    /// remembers it; returns the records to save beside the tasks' outputs
    /// (written off the runtime's thread: nothing waits for them).
    pub(super) fn open_tasks(
        &self,
        parent: &Parent<'_>,
        prepared: &mut [(usize, Prepared)],
        filed: FiledTasks,
    ) -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let mut saves = Vec::new();
        let mut filed_rows = filed.rows.into_iter();
        let mut inboxes = filed.inboxes.into_iter();
        for (_, p) in prepared.iter_mut() {
            let mut output_path = None;
            if let (Some((row, cancel)), Some(rx)) = (filed_rows.next(), inboxes.next()) {
                p.agent.set_inbox(rx);
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
                    saves.push((super::messages::saved_child_path(path), bytes));
                }
                if let Some(worktree) = &p.worktree {
                    worktree.record(path);
                }
            }
            if let Ok(mut children) = self.children.lock() {
                children.push(record);
            }
        }
        saves
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
        let _ = work
            .table()
            .progress(task_id, u64::from(r.tool_calls), r.tokens)
            .await;
        let _ = work.table().append_output(task_id, report).await;
        work.finish(task_id, status, report, r.error.as_deref(), announce)
            .await;
    }
}
