//! `SendMessage`: reaching a child after it was started — through its inbox
//! while it runs, or by resuming it from its log once it has ended.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use super::{ChildRecord, Spawner, SubagentRuntime};
use crate::agent::{Agent, AgentSetup, QuerySource, TurnStatus};
use crate::session::SessionLog;
use crate::subagents::report::{ChildReport, ChildStatus, render_batch};
use crate::tasks::TaskKind;
use crate::tools::{ToolInput, ToolOutput};

impl SubagentRuntime {
    /// `SendMessage(to, message)` from `owner`: to a running child it joins
    /// the child's next request; a finished or stopped one is resumed with its
    /// full history, in the background.
    pub async fn send_message(self: &Arc<Self>, owner: &str, input: &ToolInput) -> ToolOutput {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Args {
            to: String,
            message: String,
        }
        let args: Args = match crate::tools::parse_args(input) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let Some(work) = self.base_ctx.background.clone() else {
            return ToolOutput::error("messages to subagents are not available in this session");
        };
        let (record_index, record) = {
            let Ok(children) = self.children.lock() else {
                return ToolOutput::error("internal error: child registry unavailable");
            };
            let mine: Vec<(usize, &ChildRecord)> = children
                .iter()
                .enumerate()
                .filter(|(_, c)| c.owner == owner)
                .collect();
            if let Some((i, c)) = mine.iter().find(|(_, c)| c.agent_id == args.to) {
                (*i, c.setup.clone())
            } else {
                let named: Vec<&(usize, &ChildRecord)> = mine
                    .iter()
                    .filter(|(_, c)| c.name.as_deref() == Some(args.to.as_str()))
                    .collect();
                match named.as_slice() {
                    [] => {
                        let known: Vec<String> = mine
                            .iter()
                            .map(|(_, c)| match &c.name {
                                Some(n) => format!("{} ({n}, {})", c.agent_id, c.agent_type),
                                None => format!("{} ({})", c.agent_id, c.agent_type),
                            })
                            .collect();
                        return ToolOutput::error(format!(
                            "no subagent '{}' started by this agent; known: {}",
                            args.to,
                            if known.is_empty() {
                                "none".into()
                            } else {
                                known.join(", ")
                            }
                        ));
                    }
                    [(i, c)] => (*i, c.setup.clone()),
                    [.., (_, newest)] => {
                        return ToolOutput::error(format!(
                            "the name '{}' was reused: it now reaches agent {} (the newest); address the agent you mean by its id",
                            args.to, newest.agent_id
                        ));
                    }
                }
            }
        };
        let (agent_id, agent_type, task_id, resumable, spawner, name) = {
            let Ok(children) = self.children.lock() else {
                return ToolOutput::error("internal error: child registry unavailable");
            };
            let c = &children[record_index];
            (
                c.agent_id.clone(),
                c.agent_type.clone(),
                c.task_id.clone(),
                c.resumable,
                c.spawner.clone(),
                c.name.clone(),
            )
        };
        // Running: deliver to its inbox.
        if let Some(task) = &task_id
            && work.send_to_running(task, args.message.clone())
        {
            return ToolOutput::ok(format!(
                "delivered to running agent {agent_id} ({agent_type}); it sees the message with its next request"
            ));
        }
        if !resumable {
            return ToolOutput::error(format!(
                "agent {agent_id} is a one-shot {agent_type} and cannot be resumed; start a new one with Agent"
            ));
        }
        self.resume(
            &work,
            record_index,
            record,
            owner,
            &agent_id,
            &agent_type,
            spawner,
            name,
            args.message,
        )
    }

    /// Resumes a finished child from its log, in the background.
    #[allow(clippy::too_many_arguments)]
    fn resume(
        self: &Arc<Self>,
        work: &Arc<crate::background::BackgroundWork>,
        record_index: usize,
        setup: AgentSetup,
        owner: &str,
        agent_id: &str,
        agent_type: &str,
        spawner: Option<(u32, Option<Vec<String>>)>,
        name: Option<String>,
        message: String,
    ) -> ToolOutput {
        let Some(dir) = &self.agents_dir else {
            return ToolOutput::error(
                "this session keeps no subagent logs, so none can be resumed",
            );
        };
        let path = dir.join(format!("{agent_id}.jsonl"));
        let loaded = match crate::session::read_log(&path) {
            Ok(l) => l,
            Err(e) => return ToolOutput::error(format!("cannot resume {agent_id}: {e}")),
        };
        let rebuilt = crate::session::rebuild(&loaded.records);
        let log = match SessionLog::reopen(&path) {
            Ok(l) => Arc::new(l),
            Err(e) => return ToolOutput::error(format!("cannot resume {agent_id}: {e}")),
        };
        let spec = crate::background::TaskSpec {
            owner,
            kind: TaskKind::Subagent,
            description: &format!("resumed {agent_type} {agent_id}"),
            agent_type: Some(agent_type),
            name: name.as_deref(),
            background: true,
        };
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let (row, cancel) = match work.start(spec, Some(tx)) {
            Ok(r) => r,
            Err(e) => {
                return ToolOutput::error(format!("cannot file a task for the resumed agent: {e}"));
            }
        };
        if let Ok(mut children) = self.children.lock()
            && let Some(c) = children.get_mut(record_index)
        {
            c.task_id = Some(row.id.clone());
        }
        // Its query source is not carried over: a resumed fork is still
        // recognised as one by the directive in its history.
        let mut agent = Agent::new(setup)
            .with_source(QuerySource::Subagent)
            .with_spawner(spawner.map(|(depth, allowed)| Spawner {
                runtime: self.clone(),
                depth,
                allowed_types: allowed,
                started_this_turn: AtomicUsize::new(0),
            }));
        agent.restore(rebuilt.messages);
        agent.set_log(log);
        agent.set_inbox(rx);
        let task_id = row.id.clone();
        let rt = self.clone();
        let started = Instant::now();
        let tag_type = agent_type.to_string();
        let tag_id = agent_id.to_string();
        tokio::spawn(async move {
            let outcome = agent.run_turn(message, cancel).await;
            let status = match outcome.status {
                TurnStatus::Completed => ChildStatus::Completed,
                TurnStatus::Interrupted => ChildStatus::Cancelled,
                _ => ChildStatus::Failed,
            };
            let report = ChildReport {
                index: 1,
                total: 1,
                status,
                agent_type: tag_type,
                agent_id: tag_id,
                requests: outcome.requests,
                tool_calls: outcome.tool_calls,
                tokens: outcome.usage.total(),
                duration: started.elapsed(),
                final_text: outcome.final_text,
                error: outcome.error,
                changed_files: Vec::new(),
                verdict: None,
                worktree: None,
            };
            let text = render_batch(std::slice::from_ref(&report))
                .into_iter()
                .next()
                .unwrap_or_default();
            rt.close_task(&task_id, &report, &text, true);
        });
        ToolOutput::ok(format!(
            "resumed agent {agent_id} ({agent_type}) with its history, in the background as task {}; you will get a <task-notification> when it answers",
            row.id
        ))
    }
}
