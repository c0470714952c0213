//! A child's task life cycle: filed in the task table when it is prepared,
//! closed with its report (announced when it ended in the background).

use super::{BatchFailure, ChildRecord, Parent, Prepared, SubagentRuntime};
use crate::subagents::report::{ChildReport, ChildStatus, render_batch};
use crate::tasks::{TaskKind, TaskStatus};

impl SubagentRuntime {
    /// Files the batch's children in the task table, all rows in one
    /// transaction (foreground children too, so every child has an id and a
    /// log there). If the table refuses, no child has a task.
    pub(super) async fn open_tasks(&self, parent: &Parent<'_>, prepared: &mut [(usize, Prepared)]) {
        let mut inboxes = Vec::with_capacity(prepared.len());
        let mut filed = Vec::new();
        if let Some(work) = &self.base_ctx.background {
            let mut specs = Vec::with_capacity(prepared.len());
            for (_, p) in prepared.iter() {
                let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                inboxes.push(rx);
                let spec = crate::tasks::TaskSpec {
                    owner: parent.agent_id,
                    kind: TaskKind::Subagent,
                    description: &p.description,
                    agent_type: Some(&p.tag.agent_type),
                    name: p.name.as_deref(),
                    background: p.background,
                };
                specs.push((spec, Some(tx)));
            }
            filed = work.start_many(specs).await.unwrap_or_default();
        }
        let mut filed = filed.into_iter();
        let mut inboxes = inboxes.into_iter();
        for (_, p) in prepared.iter_mut() {
            let mut output_path = None;
            if let (Some((row, cancel)), Some(rx)) = (filed.next(), inboxes.next()) {
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
                self.save_child(path, &record);
                if let Some(worktree) = &p.worktree {
                    worktree.record(path);
                }
            }
            if let Ok(mut children) = self.children.lock() {
                children.push(record);
            }
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
        let _ = work
            .table()
            .progress(task_id, u64::from(r.tool_calls), r.tokens)
            .await;
        let _ = work.table().append_output(task_id, report).await;
        work.finish(task_id, status, report, r.error.as_deref(), announce)
            .await;
    }
}
