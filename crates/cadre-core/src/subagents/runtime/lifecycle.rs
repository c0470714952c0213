//! A child's task life cycle: filed in the task table when it is prepared,
//! closed with its report (announced when it ended in the background).

use super::{BatchFailure, ChildRecord, Parent, Prepared, SubagentRuntime};
use crate::subagents::report::{ChildReport, ChildStatus, render_batch};
use crate::tasks::{TaskKind, TaskStatus};

impl SubagentRuntime {
    /// Files the child in the task table (foreground children too, so every
    /// child has an id and a log there).
    pub(super) fn open_task(&self, parent: &Parent<'_>, p: &mut Prepared) {
        let Some(work) = &self.base_ctx.background else {
            return;
        };
        let spec = crate::tasks::TaskSpec {
            owner: parent.agent_id,
            kind: TaskKind::Subagent,
            description: &p.description,
            agent_type: Some(&p.tag.agent_type),
            name: p.name.as_deref(),
            background: p.background,
        };
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let mut output_path = None;
        if let Ok((row, cancel)) = work.start(spec, Some(tx)) {
            p.agent.set_inbox(rx);
            p.task_id = Some(row.id);
            p.task_cancel = Some(cancel);
            output_path = Some(row.output_path);
        }
        let record = ChildRecord {
            agent_id: p.tag.agent_id.clone(),
            owner: parent.agent_id.to_string(),
            name: p.name.clone(),
            agent_type: p.tag.agent_type.clone(),
            setup: p.setup.clone(),
            spawner: p.spawner.clone(),
            task_id: p.task_id.clone(),
            resumable: p.resumable,
            verdict: p.verification,
        };
        if let Some(path) = &output_path {
            self.save_child(path, &record);
        }
        if let Ok(mut children) = self.children.lock() {
            children.push(record);
        }
    }

    /// Files a child's end in its task: its report, or why there is none.
    /// `announce`: it ended in the background, and its parent gets a notice
    /// with the rendered report (a failure without report too).
    pub(super) fn file_result(
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
                self.close_task(task_id, r, &text, announce);
            }
            Err(BatchFailure(e)) if announce => {
                if let Some(work) = &self.base_ctx.background {
                    work.finish(task_id, TaskStatus::Failed, e, Some(e), true);
                }
            }
            Err(_) => {}
        }
    }

    /// Records a child's end in the task table; background ones are announced.
    pub(super) fn close_task(&self, task_id: &str, r: &ChildReport, report: &str, announce: bool) {
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
            .progress(task_id, u64::from(r.tool_calls), r.tokens);
        let _ = work.table().append_output(task_id, report);
        work.finish(task_id, status, report, r.error.as_deref(), announce);
    }
}
