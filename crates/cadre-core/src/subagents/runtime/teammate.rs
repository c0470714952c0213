//! Teammates: the lead's named spawns in a session with a team. Each is a
//! child that outlives its turns: when a turn ends it goes idle (the lead
//! is told), and a message wakes it for the next. It ends when it is
//! stopped, shut down, or the session ends.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::{Prepared, SubagentRuntime};
use crate::agent::{ProjectContext, TurnOutcome};
use crate::protocol::{MAIN_AGENT, TeammateState, TurnStatus};
use crate::subagents::AgentDefinition;
use crate::teams::{LEAD, Team, TeammateControl, idle_notification, teammate_prompt_section};
use crate::tools::{Tool, ToolOutput, ToolRegistry};

/// The tools every teammate has beside its definition's: the mailbox, the
/// board and the roster.
const TEAM_TOOLS: [&str; 6] = [
    "SendMessage",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskUpdate",
    "ListAgents",
];

/// A teammate's system prompt: a session's own (cadre's base prompt, the
/// environment, the project's instructions), its definition's body
/// appended, then how its team works.
pub(super) fn teammate_system(
    def: &AgentDefinition,
    project: &ProjectContext,
    team: &Team,
    name: &str,
    plan_required: bool,
) -> String {
    let mut s = crate::agent::main_prompt_from(project);
    let body = def.prompt.trim();
    if !body.is_empty() {
        s.push_str("\n\n");
        s.push_str(body);
    }
    s.push_str("\n\n");
    s.push_str(&teammate_prompt_section(name, &team.name(), plan_required));
    s
}

/// Adds the team's tools (the lead's own objects) a definition's list left out.
pub(super) fn add_team_tools(tools: &mut ToolRegistry, lead: &ToolRegistry) {
    for name in TEAM_TOOLS {
        if tools.get(name).is_none()
            && let Some(tool) = lead.get(name)
        {
            tools.insert(tool.clone() as Arc<dyn Tool>);
        }
    }
}

impl SubagentRuntime {
    /// The team a spawn by `spawner` named `name` joins: only the lead's
    /// named spawns, in a session with a team.
    pub(super) fn team_for(&self, spawner: &str, name: Option<&str>) -> Option<Arc<Team>> {
        if spawner != MAIN_AGENT || name.is_none_or(|n| n.trim().is_empty()) {
            return None;
        }
        self.team.clone()
    }

    /// Starts a prepared teammate (its log and task exist): it joins the
    /// team and runs its first turn in its own task; the lead gets its name.
    pub(super) async fn launch_teammate(self: &Arc<Self>, p: Prepared) -> ToolOutput {
        let (Some(task_id), Some(cancel), Some(seat)) =
            (p.task_id.clone(), p.task_cancel.clone(), p.ctx.team.clone())
        else {
            return ToolOutput::error("cannot file a task for this teammate; nothing was started");
        };
        let plan_required = p.teammate.is_some_and(|(_, plan)| plan);
        let joined = seat
            .team
            .join(crate::teams::Teammate {
                name: seat.name.clone(),
                agent_id: p.tag.agent_id.to_string(),
                agent_type: p.tag.agent_type.clone(),
                state: TeammateState::Working,
                plan_required,
            })
            .await;
        if let Err(e) = joined {
            if let Some(work) = &self.base_ctx.background {
                work.finish(
                    &task_id,
                    crate::tasks::TaskStatus::Failed,
                    &e,
                    Some(&e),
                    false,
                )
                .await;
            }
            return ToolOutput::error(e);
        }
        let text = format!(
            "spawned teammate '{name}' ({ty}, agent {id}, task {task_id}). It works in its own session on the prompt you gave it. Its messages and an idle notification when its turn ends reach you as <teammate-message> blocks; message it with SendMessage(to: \"{name}\"), stop it with TaskStop(task_id: \"{task_id}\").{plan}",
            name = seat.name,
            ty = p.tag.agent_type,
            id = p.tag.agent_id,
            plan = if plan_required {
                " It works in plan mode until you approve its plan (it sends a plan_approval_request)."
            } else {
                ""
            }
        );
        let rt = self.clone();
        let first = p.prompt.clone();
        tokio::spawn(async move {
            rt.teammate_loop(p, cancel, Some(first)).await;
        });
        ToolOutput::ok(text)
    }

    /// A teammate's life: a turn for its first prompt (if any), then one
    /// each time mail waits for it, until it is stopped. Each turn's end
    /// tells the lead it is idle (or failed, with the error).
    pub(super) async fn teammate_loop(
        self: Arc<Self>,
        mut p: Prepared,
        cancel: CancellationToken,
        mut prompt: Option<String>,
    ) {
        let Some(seat) = p.ctx.team.clone() else {
            return;
        };
        let (team, name) = (seat.team.clone(), seat.name.clone());
        let control = Arc::new(TeammateControl {
            mode_switch: p.agent.mode_switch(),
            work_mode: p.teammate.map_or(p.mode, |(mode, _)| mode),
            stop: cancel.clone(),
            turn: std::sync::Mutex::new(None),
        });
        team.attach(&name, control.clone());
        let started = Instant::now();
        let mut last: Option<TurnOutcome> = None;
        let mut broken: Option<String> = None;
        let mut held = 0;
        loop {
            if prompt.is_none() && !self.wait_for_input(&p, &team, &cancel).await {
                break;
            }
            team.set_state(&name, TeammateState::Working, None).await;
            let turn = cancel.child_token();
            if let Ok(mut t) = control.turn.lock() {
                *t = Some(turn.clone());
            }
            let outcome = p
                .agent
                .run_turn(prompt.take().unwrap_or_default(), turn.clone())
                .await;
            if let Ok(mut t) = control.turn.lock() {
                *t = None;
            }
            if let Some(e) = &outcome.log_error {
                broken = Some(format!("teammate {name} could not write its log: {e}"));
                last = Some(outcome);
                break;
            }
            if cancel.is_cancelled() {
                last = Some(outcome);
                break;
            }
            // Its turn was cut short for a message (a shutdown request, or
            // the user): it reads it at once instead of going idle.
            if turn.is_cancelled() && team.has_mail(&name) {
                last = Some(outcome);
                continue;
            }
            let error = match outcome.status {
                TurnStatus::Failed | TurnStatus::LimitReached => Some(
                    outcome
                        .error
                        .clone()
                        .unwrap_or_else(|| "its turn failed".to_string()),
                ),
                _ => None,
            };
            // Hooks may hold it at work (their feedback is its next
            // prompt) or stop it, before it goes idle.
            if error.is_none() && held < MAX_HELD {
                match idle_hooks(&p, &seat, &turn).await {
                    IdleVerdict::Idle => {}
                    IdleVerdict::KeepWorking(feedback) => {
                        held += 1;
                        prompt = Some(feedback);
                        last = Some(outcome);
                        continue;
                    }
                    IdleVerdict::Stop(reason) => {
                        self.events.emit(crate::protocol::Event::Warning {
                            message: format!("a hook stopped teammate {name}: {reason}"),
                        });
                        cancel.cancel();
                        last = Some(outcome);
                        break;
                    }
                }
            }
            held = 0;
            let state = if error.is_some() {
                TeammateState::Failed
            } else {
                TeammateState::Idle
            };
            // The notice first: a session that sees every teammate at rest
            // and no mail for the lead ends, so the notice must be waiting.
            let _ = team
                .send(
                    &name,
                    LEAD,
                    None,
                    &idle_notification(&name, error.as_deref()),
                )
                .await;
            team.set_state(&name, state, error.clone()).await;
            last = Some(outcome);
        }
        team.detach(&name);
        team.set_state(&name, TeammateState::Ended, broken.clone())
            .await;
        // Clean-up as any child's: its shells, its worktree, its task.
        if let Some(work) = &self.base_ctx.background {
            work.stop_owned_by(&p.tag.agent_id).await;
        }
        let usage = p.agent.usage();
        let outcome = last.unwrap_or_else(|| TurnOutcome::empty(TurnStatus::Interrupted));
        let mut report = super::pool::child_report(&p, &outcome, usage, started.elapsed());
        if let Some(e) = broken {
            report.status = crate::subagents::report::ChildStatus::Failed;
            report.error = Some(e);
        }
        if let Some(worktree) = p.worktree.take() {
            report.worktree = worktree.end().await;
        }
        self.emit_ended(&p.tag, &report, usage);
        if let Some(task_id) = p.task_id.clone() {
            let text = report.final_text.clone();
            self.close_task(&task_id, &report, &text, false).await;
        }
    }
}

impl SubagentRuntime {
    /// Waits until a resting teammate has something to work on: mail, or
    /// the notice of its own background work that ended. `false`: stopped.
    async fn wait_for_input(&self, p: &Prepared, team: &Team, cancel: &CancellationToken) -> bool {
        let mut changes = team.subscribe();
        loop {
            if cancel.is_cancelled() {
                return false;
            }
            if p.agent.has_notices() {
                return true;
            }
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return false;
                    }
                }
                _ = async {
                    match &self.base_ctx.background {
                        Some(work) => work.changed().await,
                        None => std::future::pending().await,
                    }
                } => {}
                _ = cancel.cancelled() => return false,
            }
        }
    }
}

/// Turns in a row hooks may hold a teammate at work before it may go idle.
const MAX_HELD: u32 = 8;

/// What the hooks at a teammate's turn end decided.
enum IdleVerdict {
    /// It goes idle.
    Idle,
    /// It keeps working on this feedback.
    KeepWorking(String),
    /// It stops, for this reason.
    Stop(String),
}

/// `TaskCompleted` for each task it still has in progress, then
/// `TeammateIdle`: a block keeps it working with the hooks' words,
/// `continue: false` stops it.
async fn idle_hooks(
    p: &Prepared,
    seat: &crate::teams::TeamSeat,
    cancel: &CancellationToken,
) -> IdleVerdict {
    use crate::hooks::HookEvent;
    use crate::tools::board::{BoardVerdict, task_hook_input};
    let team = &seat.team;
    let mut feedback = Vec::new();
    let open = team
        .table()
        .board_list(team.key())
        .await
        .unwrap_or_default()
        .into_iter()
        .filter(|t| {
            t.status == crate::tasks::BoardStatus::InProgress
                && t.owner.as_deref() == Some(seat.name.as_str())
        });
    for task in open {
        let Some(outcome) = p
            .agent
            .fire_team_event(
                HookEvent::TaskCompleted,
                task_hook_input(seat, &task),
                cancel,
            )
            .await
        else {
            break;
        };
        match crate::agent::board_verdict(HookEvent::TaskCompleted, outcome) {
            BoardVerdict::Proceed => {}
            BoardVerdict::Block(reason) => feedback.push(format!(
                "TaskCompleted hook feedback on task #{} ({}):\n{reason}",
                task.id, task.subject
            )),
            BoardVerdict::Stop(reason) => return IdleVerdict::Stop(reason),
        }
    }
    let extra = serde_json::Map::from_iter([
        ("teammate_name".to_string(), serde_json::json!(seat.name)),
        ("team_name".to_string(), serde_json::json!(team.name())),
    ]);
    if let Some(outcome) = p
        .agent
        .fire_team_event(HookEvent::TeammateIdle, extra, cancel)
        .await
    {
        match crate::agent::board_verdict(HookEvent::TeammateIdle, outcome) {
            BoardVerdict::Proceed => {}
            BoardVerdict::Block(reason) => {
                feedback.push(format!("TeammateIdle hook feedback:\n{reason}"))
            }
            BoardVerdict::Stop(reason) => return IdleVerdict::Stop(reason),
        }
    }
    if feedback.is_empty() {
        IdleVerdict::Idle
    } else {
        IdleVerdict::KeepWorking(format!(
            "<system-reminder>You are not done yet: a hook kept you at work.\n\n{}\n</system-reminder>",
            feedback.join("\n\n")
        ))
    }
}

/// What a teammate that was working when its session stopped is told.
const RESUMED_WORKING: &str = "<system-reminder>The session was resumed after it stopped while you were working. Calls whose results are marked unknown may or may not have run: check before you repeat one. Look at the task board and your messages, then carry on where you left off.</system-reminder>";

impl SubagentRuntime {
    /// Starts again the teammates of an earlier run of this session (once
    /// per process): each from its own log, in its own task, working on
    /// where it was if it was working, else waiting for mail.
    pub(super) async fn resume_team(self: Arc<Self>) {
        let Some(team) = self.team.clone() else {
            return;
        };
        if self
            .team_resumed
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let Some(work) = self.base_ctx.background.clone() else {
            return;
        };
        let mates: Vec<crate::teams::Teammate> = team
            .teammates()
            .into_iter()
            .filter(|m| m.state != TeammateState::Ended)
            .collect();
        if mates.is_empty() {
            return;
        }
        self.load_earlier_children(work.as_ref()).await;
        for mate in mates {
            if let Err(e) = self.resume_teammate(&team, &work, &mate).await {
                team.set_state(
                    &mate.name,
                    TeammateState::Ended,
                    Some(format!("it could not be resumed: {e}")),
                )
                .await;
                self.events.emit(crate::protocol::Event::Warning {
                    message: format!("teammate {} could not be resumed: {e}", mate.name),
                });
            }
        }
    }

    async fn resume_teammate(
        self: &Arc<Self>,
        team: &Arc<Team>,
        work: &Arc<dyn crate::tools::BackgroundTasks>,
        mate: &crate::teams::Teammate,
    ) -> Result<(), String> {
        let (setup, spawner, work_mode) = {
            let children = self
                .children
                .lock()
                .map_err(|_| "the child registry is unavailable".to_string())?;
            let c = children
                .iter()
                .rev()
                .find(|c| c.agent_id == mate.agent_id)
                .ok_or("what it needs to resume was not saved")?;
            (c.setup.clone(), c.spawner.clone(), c.work_mode)
        };
        let dir = self
            .agents_dir
            .as_ref()
            .ok_or("this session keeps no subagent logs")?;
        let path = dir.join(format!("{}.jsonl", mate.agent_id));
        let loaded = crate::session::read_log(&path).map_err(|e| e.to_string())?;
        if loaded.records.is_empty() {
            return Err("its log holds no readable record".into());
        }
        let rebuilt = crate::session::rebuild(&loaded.records);
        let log = Arc::new(crate::session::SessionLog::reopen(&path).map_err(|e| e.to_string())?);
        let description = format!("teammate {} (resumed)", mate.name);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let (row, cancel) = work
            .start(
                crate::tasks::TaskSpec {
                    owner: MAIN_AGENT,
                    kind: crate::tasks::TaskKind::Subagent,
                    description: &description,
                    agent_type: Some(&mate.agent_type),
                    name: Some(&mate.name),
                    background: true,
                },
                Some(tx),
            )
            .await
            .map_err(|e| format!("cannot file its task: {e}"))?;
        let tag = super::ChildTag {
            index: 1,
            total: 1,
            agent_type: mate.agent_type.clone(),
            agent_id: mate.agent_id.clone().into(),
        };
        let mut setup = setup;
        setup.events = setup.events.retagged(tag.clone());
        setup.ctx.team = Some(team.seat(&mate.name));
        let work_mode = work_mode.unwrap_or(setup.policy.mode);
        // Still waiting for its plan's approval: still in plan mode.
        let mode = if mate.plan_required {
            crate::permissions::PermissionMode::Plan
        } else {
            work_mode
        };
        if mode != setup.policy.mode {
            let mut policy = (*setup.policy).clone();
            policy.mode = mode;
            setup.policy = Arc::new(policy);
        }
        let mut agent = crate::agent::Agent::new(setup.clone())
            .with_source(crate::agent::QuerySource::Subagent)
            .with_delegation(self.delegation_for(&spawner));
        agent.restore(rebuilt.messages);
        agent.set_log(log);
        agent.set_inbox(rx);
        agent.record_progress_in(row.id.clone());
        let worktree = super::isolation::ChildWorktree::resumed_for(
            &setup.policy.project_dir,
            &row.output_path,
        )
        .await
        .map_err(|e| format!("its worktree: {e}"))?;
        let prepared = Prepared {
            index: 1,
            tag,
            agent,
            prompt: String::new(),
            verification: false,
            mode,
            ctx: setup.ctx.clone(),
            description,
            name: Some(mate.name.clone()),
            background: true,
            task_id: Some(row.id.clone()),
            task_cancel: Some(cancel.clone()),
            setup,
            spawner,
            resumable: true,
            color: None,
            mcp_servers: Default::default(),
            worktree,
            teammate: Some((work_mode, mate.plan_required)),
        };
        self.emit_started(&prepared);
        let first = (mate.state == TeammateState::Working).then(|| RESUMED_WORKING.to_string());
        let rt = self.clone();
        tokio::spawn(async move {
            rt.teammate_loop(prepared, cancel, first).await;
        });
        Ok(())
    }
}
