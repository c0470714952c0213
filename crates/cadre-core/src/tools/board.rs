//! The team's tools, with Claude Code's inputs and outputs: the task board
//! (`TaskCreate`, `TaskGet`, `TaskList`, `TaskUpdate`) and `ListAgents`.
//! `SendMessage` is the subagents' tool, which reaches team members first
//! (`teams::messages`).

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::permissions::ToolEffect;
use crate::protocol::{BoardTaskState, Event, HookEvent, TeammateState};
use crate::tasks::{BoardChange, BoardStatus, BoardTask, BoardUpdate, BoardUpdateStatus};
use crate::teams::{LEAD, Team, TeamSeat};
use crate::tools::{ToolContext, ToolOutput, TypedTool};

fn seat(ctx: &ToolContext) -> Result<&TeamSeat, ToolOutput> {
    ctx.team.as_ref().ok_or_else(|| {
        ToolOutput::error("the task board belongs to agent teams, which this session does not have")
    })
}

/// What the board's hooks made of a task's creation or completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoardVerdict {
    /// Go ahead.
    Proceed,
    /// Exit 2 or `decision: "block"`: the reason, for the model.
    Block(String),
    /// `continue: false` (`TaskCompleted` only): the change is made and the
    /// teammate stops, with the reason.
    Stop(String),
}

/// The board's hooks (`TaskCreated`, `TaskCompleted`) as the calling agent
/// fires them.
pub trait BoardHooks: Send + Sync {
    /// Runs `event`'s hooks for `task`, changed by the member at `seat`.
    fn fire<'a>(
        &'a self,
        event: HookEvent,
        seat: &'a TeamSeat,
        task: &'a BoardTask,
    ) -> BoxFuture<'a, BoardVerdict>;
}

/// A hook's input fields for a board task (Claude Code's names).
pub fn task_hook_input(seat: &TeamSeat, task: &BoardTask) -> serde_json::Map<String, Value> {
    let mut extra = serde_json::Map::new();
    extra.insert("task_id".into(), json!(task.id));
    extra.insert("task_subject".into(), json!(task.subject));
    if !task.description.is_empty() {
        extra.insert("task_description".into(), json!(task.description));
    }
    if !seat.is_lead() {
        extra.insert("teammate_name".into(), json!(seat.name));
    }
    extra.insert("team_name".into(), json!(seat.team.name()));
    extra
}

async fn hook_verdict(
    ctx: &ToolContext,
    event: HookEvent,
    seat: &TeamSeat,
    task: &BoardTask,
) -> BoardVerdict {
    match &ctx.board_hooks {
        Some(h) => h.fire(event, seat, task).await,
        None => BoardVerdict::Proceed,
    }
}

/// A board answer as the JSON text the model reads.
fn answer(value: Value) -> ToolOutput {
    ToolOutput::ok(value.to_string())
}

/// Tells front ends how a board task stands now.
fn board_changed(team: &Team, task: &BoardTask) {
    team.emit(Event::BoardTaskChanged {
        task_id: task.id.clone(),
        subject: task.subject.clone(),
        status: match task.status {
            BoardStatus::Pending => BoardTaskState::Pending,
            BoardStatus::InProgress => BoardTaskState::InProgress,
            BoardStatus::Completed => BoardTaskState::Completed,
        },
        owner: task.owner.clone(),
        blocked_by: task.blocked_by.clone(),
    });
}

fn board_deleted(team: &Team, id: &str, subject: &str) {
    team.emit(Event::BoardTaskChanged {
        task_id: id.to_string(),
        subject: subject.to_string(),
        status: BoardTaskState::Deleted,
        owner: None,
        blocked_by: Vec::new(),
    });
}

/// `TaskCreate`.
pub struct TaskCreateTool;

/// The arguments of a `TaskCreate` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateArgs {
    /// A short title, in the imperative ("Add the login form")
    subject: String,
    /// What is to be done, in enough detail for whoever picks it up
    description: String,
    /// The present-continuous form shown while it is worked on ("Adding the login form")
    #[serde(rename = "activeForm")]
    active_form: Option<String>,
    /// Anything else to keep with the task
    metadata: Option<Value>,
}

impl TypedTool for TaskCreateTool {
    type Input = CreateArgs;
    const NAME: &'static str = "TaskCreate";
    const DESCRIPTION: &'static str = "Create a task on the team's shared task board. It starts pending and unowned; teammates claim it with TaskUpdate, or the lead assigns an owner. Set dependencies with TaskUpdate (addBlockedBy / addBlocks).";
    const EFFECT: ToolEffect = ToolEffect::ReadOnly;
    const READ_ONLY: bool = false;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: CreateArgs) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let seat = match seat(ctx) {
                Ok(s) => s,
                Err(e) => return e,
            };
            if args.subject.trim().is_empty() {
                return ToolOutput::invalid_arguments("subject is empty");
            }
            let team = &seat.team;
            match team
                .table()
                .board_create(
                    team.key(),
                    args.subject.trim(),
                    &args.description,
                    args.active_form,
                    args.metadata,
                )
                .await
            {
                Ok(task) => {
                    board_changed(team, &task);
                    if let BoardVerdict::Block(reason) =
                        hook_verdict(ctx, HookEvent::TaskCreated, seat, &task).await
                    {
                        // As in Claude Code: the hook's veto deletes the task.
                        let deleted = BoardUpdate {
                            status: Some(BoardUpdateStatus::Deleted),
                            ..BoardUpdate::default()
                        };
                        let _ = team
                            .table()
                            .board_update(team.key(), &task.id, LEAD, true, deleted)
                            .await;
                        board_deleted(team, &task.id, &task.subject);
                        return ToolOutput::error(format!(
                            "the task was not created: a TaskCreated hook refused it: {reason}"
                        ));
                    }
                    answer(json!({"task": {"id": task.id, "subject": task.subject}}))
                }
                Err(e) => ToolOutput::error(format!("the task was not created: {e}")),
            }
        })
    }
}

/// `TaskGet`.
pub struct TaskGetTool;

/// The arguments of a `TaskGet` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// The task's id
    #[serde(rename = "taskId")]
    task_id: String,
}

impl TypedTool for TaskGetTool {
    type Input = GetArgs;
    const NAME: &'static str = "TaskGet";
    const DESCRIPTION: &'static str = "Read one task of the team's task board in full: subject, description, status, owner, and the tasks it blocks and is blocked by.";
    const EFFECT: ToolEffect = ToolEffect::ReadOnly;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: GetArgs) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let seat = match seat(ctx) {
                Ok(s) => s,
                Err(e) => return e,
            };
            let team = &seat.team;
            match team
                .table()
                .board_get(team.key(), args.task_id.trim())
                .await
            {
                Ok(Some(t)) => answer(json!({"task": {
                    "id": t.id,
                    "subject": t.subject,
                    "description": t.description,
                    "status": t.status.as_str(),
                    "owner": t.owner,
                    "blocks": t.blocks,
                    "blockedBy": t.blocked_by,
                }})),
                Ok(None) => answer(json!({"task": null})),
                Err(e) => ToolOutput::error(format!("cannot read the board: {e}")),
            }
        })
    }
}

/// `TaskList` in a team: the board, then the agent's own background tasks.
pub struct BoardListTool;

/// The arguments of the board's `TaskList` (none).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BoardListArgs {}

impl TypedTool for BoardListTool {
    type Input = BoardListArgs;
    const NAME: &'static str = "TaskList";
    const DESCRIPTION: &'static str = "List the team's task board: each task's id, subject, status, owner and the open tasks it is blocked by. A pending task with no owner and no blockers is free to claim. Your own background tasks (shells, subagents), if any, follow under `backgroundTasks`.";
    const EFFECT: ToolEffect = ToolEffect::ReadOnly;

    fn run<'a>(&'a self, ctx: &'a ToolContext, _args: BoardListArgs) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let seat = match seat(ctx) {
                Ok(s) => s,
                Err(e) => return e,
            };
            let team = &seat.team;
            let tasks = match team.table().board_list(team.key()).await {
                Ok(t) => t,
                Err(e) => return ToolOutput::error(format!("cannot read the board: {e}")),
            };
            let tasks: Vec<Value> = tasks
                .into_iter()
                .map(|t| {
                    let mut v = json!({
                        "id": t.id,
                        "subject": t.subject,
                        "status": t.status.as_str(),
                        "blockedBy": t.blocked_by,
                    });
                    if let Some(owner) = t.owner {
                        v["owner"] = Value::String(owner);
                    }
                    v
                })
                .collect();
            let mut out = json!({ "tasks": tasks });
            let background = crate::tools::background_lines(ctx).await;
            if !background.is_empty() {
                out["backgroundTasks"] = json!(background);
            }
            answer(out)
        })
    }
}

/// `TaskUpdate`.
pub struct TaskUpdateTool;

/// The arguments of a `TaskUpdate` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateArgs {
    /// The task's id
    #[serde(rename = "taskId")]
    task_id: String,
    /// pending, in_progress (claims it), completed, or deleted (removes it)
    #[schemars(extend("enum" = ["pending", "in_progress", "completed", "deleted"]))]
    status: Option<String>,
    /// A new title
    subject: Option<String>,
    /// A new description
    description: Option<String>,
    /// A new present-continuous form
    #[serde(rename = "activeForm")]
    active_form: Option<String>,
    /// Tasks that cannot start until this one is completed
    #[serde(rename = "addBlocks", default)]
    add_blocks: Vec<String>,
    /// Tasks that must be completed before this one can start
    #[serde(rename = "addBlockedBy", default)]
    add_blocked_by: Vec<String>,
    /// The member who owns it (a teammate's name, or team-lead); "" clears it
    owner: Option<String>,
    /// Replaces the task's metadata
    metadata: Option<Value>,
}

impl TypedTool for TaskUpdateTool {
    type Input = UpdateArgs;
    const NAME: &'static str = "TaskUpdate";
    const DESCRIPTION: &'static str = "Change a task of the team's board. status \"in_progress\" claims it (you become its owner if it has none; a blocked task or one owned by another member cannot be claimed), \"completed\" finishes it and unblocks the tasks waiting on it, \"deleted\" removes it. The lead may assign or reassign `owner`. addBlocks / addBlockedBy add dependencies.";
    const EFFECT: ToolEffect = ToolEffect::ReadOnly;
    const READ_ONLY: bool = false;

    fn check(&self, args: &UpdateArgs) -> Result<(), ToolOutput> {
        match args.status.as_deref() {
            None | Some("pending" | "in_progress" | "completed" | "deleted") => Ok(()),
            Some(other) => Err(ToolOutput::invalid_arguments(format!(
                "status '{other}' is unknown: use pending, in_progress, completed or deleted"
            ))),
        }
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: UpdateArgs) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let seat = match seat(ctx) {
                Ok(s) => s,
                Err(e) => return e,
            };
            let team = &seat.team;
            let task_id = args.task_id.trim().to_string();
            // An owner is a member: its name as the team spells it.
            let owner = match args.owner.as_deref().map(str::trim) {
                None => None,
                Some("") => Some(String::new()),
                Some(name) => match team.recipient(name) {
                    Ok(n) => Some(n),
                    Err(e) => return failed(&task_id, e),
                },
            };
            let status = match args.status.as_deref() {
                None => None,
                Some("pending") => Some(BoardUpdateStatus::Pending),
                Some("in_progress") => Some(BoardUpdateStatus::InProgress),
                Some("completed") => Some(BoardUpdateStatus::Completed),
                Some(_) => Some(BoardUpdateStatus::Deleted),
            };
            let before = team
                .table()
                .board_get(team.key(), &task_id)
                .await
                .ok()
                .flatten();
            // A TaskCompleted hook may keep the task open, or stop its teammate.
            let mut stop_after = None;
            if status == Some(BoardUpdateStatus::Completed)
                && let Some(task) = before
                    .as_ref()
                    .filter(|t| t.status != BoardStatus::Completed)
            {
                match hook_verdict(ctx, HookEvent::TaskCompleted, seat, task).await {
                    BoardVerdict::Proceed => {}
                    BoardVerdict::Block(reason) => {
                        return failed(
                            &task_id,
                            format!("a TaskCompleted hook kept the task open: {reason}"),
                        );
                    }
                    BoardVerdict::Stop(reason) => stop_after = Some(reason),
                }
            }
            let update = BoardUpdate {
                status,
                subject: args.subject,
                description: args.description,
                active_form: args.active_form,
                add_blocks: args.add_blocks,
                add_blocked_by: args.add_blocked_by,
                owner: owner.clone(),
                metadata: args.metadata,
            };
            let change = match team
                .table()
                .board_update(team.key(), &task_id, &seat.name, seat.is_lead(), update)
                .await
            {
                Ok(c) => c,
                Err(e) => return failed(&task_id, e.to_string()),
            };
            report_change(seat, &change, before.as_ref()).await;
            if let Some(reason) = stop_after
                && !seat.is_lead()
            {
                team.emit(Event::Warning {
                    message: format!(
                        "a TaskCompleted hook stopped teammate {}: {reason}",
                        seat.name
                    ),
                });
                team.stop(&seat.name);
            }
            let mut out = json!({
                "success": true,
                "taskId": change.task_id,
                "updatedFields": change.updated_fields,
            });
            if let Some((from, to)) = &change.status_change {
                out["statusChange"] = json!({"from": from, "to": to});
            }
            if !change.unblocked.is_empty() {
                out["unblocked"] = json!(change.unblocked);
            }
            answer(out)
        })
    }
}

fn failed(task_id: &str, error: String) -> ToolOutput {
    ToolOutput::error(
        json!({"success": false, "taskId": task_id, "updatedFields": [], "error": error})
            .to_string(),
    )
}

/// Tells front ends about a change, and a member the lead gave a task to.
async fn report_change(seat: &TeamSeat, change: &BoardChange, before: Option<&BoardTask>) {
    let team = &seat.team;
    match &change.task {
        Some(task) => board_changed(team, task),
        None => board_deleted(
            team,
            &change.task_id,
            before.map(|b| b.subject.as_str()).unwrap_or_default(),
        ),
    }
    for id in &change.unblocked {
        if let Ok(Some(t)) = team.table().board_get(team.key(), id).await {
            board_changed(team, &t);
        }
    }
    // A task given to another member: it hears of it (and wakes if idle).
    if let Some(task) = &change.task
        && change.updated_fields.iter().any(|f| f == "owner")
        && let Some(owner) = &task.owner
        && *owner != seat.name
        && *owner != LEAD
        && team
            .teammate(owner)
            .is_some_and(|m| m.state != TeammateState::Ended)
    {
        let body = json!({
            "type": "task_assignment",
            "taskId": task.id,
            "subject": task.subject,
            "description": task.description,
            "assignedBy": seat.name,
        })
        .to_string();
        let summary = format!("task #{} assigned to you", task.id);
        let _ = team.send(&seat.name, owner, Some(&summary), &body).await;
    }
}

/// `ListAgents`.
pub struct ListAgentsTool;

/// The arguments of a `ListAgents` call (none).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListAgentsArgs {}

impl TypedTool for ListAgentsTool {
    type Input = ListAgentsArgs;
    const NAME: &'static str = "ListAgents";
    const DESCRIPTION: &'static str = "List the members of your team (the lead and every teammate) with the name to address each by with SendMessage, its agent type and whether it is working, idle or ended.";
    const EFFECT: ToolEffect = ToolEffect::ReadOnly;

    fn run<'a>(&'a self, ctx: &'a ToolContext, _args: ListAgentsArgs) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let seat = match seat(ctx) {
                Ok(s) => s,
                Err(e) => return e,
            };
            let team = &seat.team;
            let mut members = vec![
                json!({"name": LEAD, "agentType": "team-lead", "state": "lead", "you": seat.is_lead()}),
            ];
            for m in team.teammates() {
                members.push(json!({
                    "name": m.name,
                    "agentType": m.agent_type,
                    "agentId": m.agent_id,
                    "state": m.state.as_str(),
                    "you": m.name == seat.name,
                }));
            }
            answer(json!({"team": team.name(), "members": members}))
        })
    }
}

/// Gives the lead the team's tools: the board (whose `TaskList` takes the
/// place of the background-task listing, which it includes) and the roster.
pub fn add_lead_tools(tools: &mut crate::tools::ToolRegistry) {
    use std::sync::Arc;
    tools.insert(Arc::new(TaskCreateTool));
    tools.insert(Arc::new(TaskGetTool));
    tools.insert(Arc::new(BoardListTool));
    tools.insert(Arc::new(TaskUpdateTool));
    tools.insert(Arc::new(ListAgentsTool));
}
