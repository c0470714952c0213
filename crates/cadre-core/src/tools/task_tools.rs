//! `TaskList`, `TaskOutput` and `TaskStop`: how an agent looks after the
//! background tasks it started. Each agent sees only its own tasks.

use std::time::Duration;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{BackgroundTasks, ToolContext, ToolOutput, TypedTool};
use crate::permissions::ToolEffect;
use crate::tasks::{TaskFilter, TaskRow, TaskStatus};

/// Bytes per `TaskOutput` read: the tool-output cap, so one read always fits.
pub(super) const TASK_OUTPUT_READ: usize = 64 * 1024;
/// Longest `TaskOutput` waits for new output or completion.
pub(super) const TASK_OUTPUT_MAX_WAIT_MS: u64 = 30_000;

fn work(ctx: &ToolContext) -> Result<&std::sync::Arc<dyn BackgroundTasks>, ToolOutput> {
    ctx.background
        .as_ref()
        .ok_or_else(|| ToolOutput::error("background tasks are not available to this agent"))
}

async fn own_tasks(
    ctx: &ToolContext,
    w: &dyn BackgroundTasks,
    status: Option<TaskStatus>,
) -> Vec<TaskRow> {
    w.table()
        .list(&TaskFilter {
            session_id: Some(w.session_id().to_string()),
            parent_agent: Some(ctx.agent_id.clone()),
            status,
            ..Default::default()
        })
        .await
        .unwrap_or_default()
}

async fn unknown_task(ctx: &ToolContext, w: &dyn BackgroundTasks, id: &str) -> ToolOutput {
    let running: Vec<String> = own_tasks(ctx, w, None)
        .await
        .into_iter()
        .filter(|r| r.status.is_active())
        .map(|r| format!("{} ({})", r.id, r.description))
        .collect();
    ToolOutput::error(format!(
        "no task {id} started by this agent; running tasks: {}",
        if running.is_empty() {
            "none".to_string()
        } else {
            running.join(", ")
        }
    ))
}

/// One line per task this agent started (with `status` only those), as
/// `TaskList` shows them.
async fn task_lines(
    ctx: &ToolContext,
    w: &dyn BackgroundTasks,
    status: Option<TaskStatus>,
) -> Vec<String> {
    let rows = own_tasks(ctx, w, status).await;
    let now = crate::session::now_ms();
    rows.iter()
        .map(|r| {
            let idle = r
                .last_activity_ms
                .map(|t| format!("{}s ago", now.saturating_sub(t) / 1000))
                .unwrap_or_else(|| "-".into());
            format!(
                "{} · {} · {} · {} · {} tool calls · {} tokens · last activity {idle}",
                r.id,
                r.status.as_str(),
                r.agent_type.as_deref().unwrap_or("bash"),
                r.description,
                r.tool_calls,
                r.tokens
            )
        })
        .collect()
}

/// The lines `TaskList` shows for the tasks this agent started; none where
/// it has no background work.
pub async fn background_lines(ctx: &ToolContext) -> Vec<String> {
    match work(ctx) {
        Ok(w) => task_lines(ctx, w.as_ref(), None).await,
        Err(_) => Vec::new(),
    }
}

/// Lists this agent's tasks with their progress.
pub struct TaskListTool;

/// The arguments of a `TaskList` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    // Parsed by `TaskStatus::parse`; a test holds the two together.
    #[schemars(extend("enum" = LIST_STATUSES))]
    status: Option<String>,
}

/// The statuses `TaskList` filters on.
const LIST_STATUSES: [&str; 7] = [
    "queued",
    "running",
    "stopping",
    "succeeded",
    "failed",
    "cancelled",
    "lost",
];

impl TypedTool for TaskListTool {
    type Input = ListArgs;
    const NAME: &'static str = "TaskList";
    const DESCRIPTION: &'static str = "List the background tasks you started (subagents and shell commands): id, status, description, tool calls, tokens and last activity. Optional `status` filter: queued, running, stopping, succeeded, failed, cancelled, lost.";
    const EFFECT: ToolEffect = ToolEffect::ReadOnly;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: ListArgs) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let w = match work(ctx) {
                Ok(w) => w,
                Err(e) => return e,
            };
            let status = match args.status.as_deref() {
                None => None,
                Some(s) => match TaskStatus::parse(s) {
                    Some(st) => Some(st),
                    None => return ToolOutput::invalid_arguments(format!("unknown status '{s}'")),
                },
            };
            let lines = task_lines(ctx, w.as_ref(), status).await;
            if lines.is_empty() {
                return ToolOutput::ok("No tasks.");
            }
            ToolOutput::ok(lines.join("\n"))
        })
    }
}

/// Reads a task's output log.
pub struct TaskOutputTool;

/// The arguments of a `TaskOutput` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputArgs {
    task_id: String,
    offset: Option<u64>,
    #[schemars(range(max = TASK_OUTPUT_MAX_WAIT_MS))]
    wait_ms: Option<u64>,
}

impl TypedTool for TaskOutputTool {
    type Input = OutputArgs;
    const NAME: &'static str = "TaskOutput";
    const DESCRIPTION: &'static str = "Read the output of a background task you started, 64 KiB at a time. Without `offset` it continues where you last read; `offset` is a byte offset. `wait_ms` (at most 30000) waits for new output or for the task to end. Don't read a running fork's output unless the user asks: its notice will bring the result.";
    const EFFECT: ToolEffect = ToolEffect::ReadOnly;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: OutputArgs) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let w = match work(ctx) {
                Ok(w) => w,
                Err(e) => return e,
            };
            let own = |row: &TaskRow| {
                row.parent_agent == ctx.agent_id && row.session_id == w.session_id()
            };
            let row = match w.table().get(&args.task_id).await {
                Ok(r) if own(&r) => r,
                _ => return unknown_task(ctx, w.as_ref(), &args.task_id).await,
            };
            let offset = args
                .offset
                .unwrap_or_else(|| w.cursor(&ctx.agent_id, &row.id));
            let wait =
                Duration::from_millis(args.wait_ms.unwrap_or(0).min(TASK_OUTPUT_MAX_WAIT_MS));
            let deadline = tokio::time::Instant::now() + wait;
            loop {
                let (text, next, total) = match w
                    .table()
                    .read_output(&row.id, offset, TASK_OUTPUT_READ)
                    .await
                {
                    Ok(r) => r,
                    Err(e) => {
                        return ToolOutput::error(format!("cannot read task output: {e}"));
                    }
                };
                let status = w
                    .table()
                    .get(&row.id)
                    .await
                    .map(|r| r.status)
                    .unwrap_or(row.status);
                let waiting =
                    text.is_empty() && status.is_active() && tokio::time::Instant::now() < deadline;
                if !waiting {
                    w.set_cursor(
                        &ctx.agent_id,
                        &row.id,
                        next,
                        next >= total && status.is_final(),
                    );
                    let mut out = format!(
                        "task {} · {} · bytes {offset}-{next} of {total}",
                        row.id,
                        status.as_str()
                    );
                    if next < total {
                        out.push_str(&format!(" (more: call again, or offset {next})"));
                    }
                    out.push('\n');
                    out.push_str(if text.is_empty() {
                        "(no new output)"
                    } else {
                        &text
                    });
                    return ToolOutput::ok(out);
                }
                // Poll: output arrives through the log file, possibly from a shell.
                let _ = tokio::time::timeout_at(
                    deadline.min(tokio::time::Instant::now() + Duration::from_millis(100)),
                    w.changed(),
                )
                .await;
            }
        })
    }
}

/// Stops a task this agent started.
pub struct TaskStopTool;

/// The arguments of a `TaskStop` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopArgs {
    task_id: String,
}

impl TypedTool for TaskStopTool {
    type Input = StopArgs;
    const NAME: &'static str = "TaskStop";
    const DESCRIPTION: &'static str =
        "Stop a background task you started (a subagent or a shell command). It ends as cancelled.";
    const EFFECT: ToolEffect = ToolEffect::ReadOnly;
    // It ends a task: not beside calls that may read or message it.
    const READ_ONLY: bool = false;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: StopArgs) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let w = match work(ctx) {
                Ok(w) => w,
                Err(e) => return e,
            };
            match w.stop(&ctx.agent_id, &args.task_id).await {
                Ok(row) => ToolOutput::ok(format!(
                    "stopping task {} ({}); it ends as cancelled",
                    row.id, row.description
                )),
                Err(e) if e.starts_with("no task") => {
                    unknown_task(ctx, w.as_ref(), &args.task_id).await
                }
                Err(e) => ToolOutput::error(e),
            }
        })
    }
}
