//! `cadre tasks`: list the task table, show one task with its output log, and
//! stop a task.

use std::io::Write;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Result;
use cadre_core::config::data_dir;
use cadre_core::session::utc_datetime;
use cadre_core::subagents::transcript::{TranscriptEntry, TranscriptFollower, child_log_path};
use cadre_core::tasks::{TaskError, TaskFilter, TaskKind, TaskRow, TaskStatus, TaskTable};
use clap::{Args, Subcommand};

use crate::UsageError;

/// The error recorded on a task stopped after its cadre process had ended.
const TASK_STOPPED_ORPHAN: &str =
    "TASK_STOPPED: stopped with `cadre tasks stop` after its cadre process had ended";

/// How much of the log `show` reads at a time.
const CHUNK: usize = 64 * 1024;

/// Arguments of `cadre tasks`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct TasksArgs {
    #[command(flatten)]
    list: ListArgs,
    #[command(subcommand)]
    command: Option<TasksCommand>,
}

#[derive(Debug, Subcommand)]
enum TasksCommand {
    /// List tasks, newest first (the default).
    List(ListArgs),
    /// Show a task: status, times, error, result summary, and its output log.
    Show {
        /// Task id (see `cadre tasks`).
        id: String,
        /// For a subagent: its transcript from its log instead (what it was
        /// asked, what it said, its tool calls and their results' first lines).
        #[arg(long)]
        transcript: bool,
        /// With --transcript: keep following the log of a running subagent until it ends.
        #[arg(long, requires = "transcript")]
        follow: bool,
    },
    /// A session's team: its members and its task board, as they stand
    /// (a past session's too: the board is kept with the session).
    Board {
        /// The session's id (see `cadre sessions`).
        session: String,
        /// Print the team as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop a task: its cadre process stops the work and records it as cancelled;
    /// if that process has ended, the task is cancelled at once.
    Stop {
        /// Task id (see `cadre tasks`).
        id: String,
    },
}

#[derive(Debug, Clone, Args, Default)]
struct ListArgs {
    /// Only queued, running and stopping tasks.
    #[arg(long)]
    active: bool,
    /// Only tasks with this status (queued, running, stopping, succeeded, failed, cancelled, lost).
    #[arg(long, value_parser = parse_status)]
    status: Option<TaskStatus>,
    /// Only this session's tasks.
    #[arg(long, value_name = "SESSION_ID")]
    session: Option<String>,
    /// At most this many tasks, the newest.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Print the rows as a JSON array.
    #[arg(long)]
    json: bool,
}

fn parse_status(s: &str) -> Result<TaskStatus, String> {
    TaskStatus::parse(&s.to_ascii_lowercase()).ok_or_else(|| {
        format!(
            "unknown status {s:?}; one of: {}",
            TaskStatus::ALL.map(|s| s.as_str()).join(", ")
        )
    })
}

/// Runs `cadre tasks …`.
pub async fn run(args: TasksArgs) -> Result<ExitCode> {
    let home = data_dir()?;
    let table = TaskTable::open(&home).await?;
    match args.command {
        None => {
            sweep(&table).await?;
            list(&table, &args.list).await?;
        }
        Some(TasksCommand::List(list_args)) => {
            sweep(&table).await?;
            list(&table, &list_args).await?;
        }
        Some(TasksCommand::Show {
            id,
            transcript: true,
            follow,
        }) => {
            sweep(&table).await?;
            show_transcript(&table, &home, &id, follow).await?;
        }
        Some(TasksCommand::Show { id, .. }) => {
            sweep(&table).await?;
            show(&table, &id).await?;
        }
        Some(TasksCommand::Board { session, json }) => {
            board(&table, &session, json).await?;
        }
        Some(TasksCommand::Stop { id }) => {
            // The target first: a row of a dead process is cancelled (the
            // user asked to stop it), not swept to lost.
            stop(&table, &id).await?;
            sweep(&table).await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn usage(e: TaskError) -> anyhow::Error {
    match e {
        TaskError::NotFound(_) => UsageError(e.to_string()).into(),
        other => other.into(),
    }
}

/// Start-up: active rows of cadre processes that are gone become `lost`.
async fn sweep(table: &TaskTable) -> Result<()> {
    let lost = table.mark_lost_on_startup().await?;
    if !lost.is_empty() {
        eprintln!(
            "marked {} task(s) lost, their cadre process having ended: {}",
            lost.len(),
            lost.join(", ")
        );
    }
    // A lost worktree child's worktree is settled as its end would have.
    for id in &lost {
        if let Ok(row) = table.get(id).await
            && let Some(said) = cadre_core::subagents::settle_lost_worktree(&row.output_path).await
        {
            eprintln!("task {id}: {said}");
        }
    }
    Ok(())
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `42s`, `5m`, `3h`, `2d`.
fn age(since_ms: u64, now: u64) -> String {
    let secs = now.saturating_sub(since_ms) / 1000;
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}

async fn list(table: &TaskTable, args: &ListArgs) -> Result<()> {
    let rows = table
        .list(&TaskFilter {
            session_id: args.session.clone(),
            parent_agent: None,
            status: args.status,
            active_only: args.active,
            limit: args.limit,
        })
        .await?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(());
    }
    if rows.is_empty() {
        eprintln!("no tasks");
        return Ok(());
    }
    write_rows(&mut out, &rows, now_ms())?;
    Ok(())
}

/// `cadre tasks board`: the team's members, then its board by id.
async fn board(table: &TaskTable, session: &str, json: bool) -> Result<()> {
    let members = table.members(session).await?;
    let tasks = table.board_list(session).await?;
    let mut out = std::io::stdout().lock();
    if json {
        let members: Vec<serde_json::Value> = members
            .iter()
            .map(|m| {
                serde_json::json!({
                    "name": m.name,
                    "agentId": m.agent_id,
                    "agentType": m.agent_type,
                    "state": m.state,
                })
            })
            .collect();
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"members": members, "tasks": tasks}))?
        )?;
        return Ok(());
    }
    if members.is_empty() && tasks.is_empty() {
        anyhow::bail!("session {session} has no team (no members, no board)");
    }
    writeln!(out, "{:<16}  {:<20}  STATE", "TEAMMATE", "AGENT TYPE")?;
    for m in &members {
        writeln!(
            out,
            "{:<16}  {:<20}  {}",
            one_line(&m.name, 16),
            one_line(&m.agent_type, 20),
            m.state
        )?;
    }
    writeln!(out)?;
    write_board(&mut out, &tasks)?;
    Ok(())
}

/// Writes board tasks as a table: id, status, owner, blockers, subject.
pub fn write_board(
    out: &mut impl Write,
    tasks: &[cadre_core::tasks::BoardTask],
) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<5}  {:<11}  {:<16}  {:<12}  SUBJECT",
        "TASK", "STATUS", "OWNER", "BLOCKED BY"
    )?;
    for t in tasks {
        let blocked: Vec<String> = t.blocked_by.iter().map(|b| format!("#{b}")).collect();
        writeln!(
            out,
            "{:<5}  {:<11}  {:<16}  {:<12}  {}",
            format!("#{}", t.id),
            t.status.as_str(),
            one_line(t.owner.as_deref().unwrap_or("-"), 16),
            one_line(&blocked.join(","), 12),
            one_line(&t.subject, 60)
        )?;
    }
    Ok(())
}

/// Writes task rows as a table with a header: id, kind, status,
/// description, agent type and age.
pub fn write_rows(out: &mut impl Write, rows: &[TaskRow], now: u64) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<14}  {:<8}  {:<9}  {:<48}  {:<16}  AGE",
        "ID", "KIND", "STATUS", "DESCRIPTION", "AGENT TYPE"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:<14}  {:<8}  {:<9}  {:<48}  {:<16}  {}",
            r.id,
            r.kind.as_str(),
            r.status.as_str(),
            one_line(&r.description, 48),
            one_line(r.agent_type.as_deref().unwrap_or("-"), 16),
            age(r.created_ms, now)
        )?;
    }
    Ok(())
}

fn when(ms: Option<u64>, now: u64) -> String {
    match ms {
        Some(ms) => format!("{} UTC ({} ago)", utc_datetime(ms), age(ms, now)),
        None => "-".to_string(),
    }
}

async fn show(table: &TaskTable, id: &str) -> Result<()> {
    let r: TaskRow = table.get(id).await.map_err(usage)?;
    let now = now_ms();
    let mut out = std::io::stdout().lock();
    let field = |out: &mut std::io::StdoutLock<'_>, name: &str, value: &str| {
        writeln!(out, "{name:<12} {value}")
    };
    field(&mut out, "id", &r.id)?;
    field(&mut out, "kind", r.kind.as_str())?;
    field(&mut out, "status", r.status.as_str())?;
    field(&mut out, "description", &r.description)?;
    field(
        &mut out,
        "agent type",
        r.agent_type.as_deref().unwrap_or("-"),
    )?;
    if let Some(name) = &r.name {
        field(&mut out, "name", name)?;
    }
    field(&mut out, "session", &r.session_id)?;
    field(&mut out, "parent", &r.parent_agent)?;
    field(
        &mut out,
        "background",
        if r.background { "yes" } else { "no" },
    )?;
    field(&mut out, "owner pid", &r.owner_pid.to_string())?;
    field(&mut out, "created", &when(Some(r.created_ms), now))?;
    field(&mut out, "started", &when(r.started_ms, now))?;
    field(&mut out, "ended", &when(r.ended_ms, now))?;
    if r.tool_calls > 0 || r.tokens > 0 || r.last_activity_ms.is_some() {
        let last = r
            .last_activity_ms
            .map(|ms| format!(", last activity {} ago", age(ms, now)))
            .unwrap_or_default();
        field(
            &mut out,
            "progress",
            &format!("{} tool calls, {} tokens{last}", r.tool_calls, r.tokens),
        )?;
    }
    field(&mut out, "error", r.error.as_deref().unwrap_or("-"))?;
    field(
        &mut out,
        "result",
        r.result_summary.as_deref().unwrap_or("-"),
    )?;
    field(&mut out, "output", &r.output_path.display().to_string())?;
    writeln!(out, "--- output ---")?;
    // Not held while the table reads: no lock is held across an await.
    drop(out);
    let mut offset = 0;
    let mut ends_with_newline = true;
    loop {
        let read = table.read_output(&r.id, offset, CHUNK).await;
        let mut out = std::io::stdout().lock();
        let (text, next, total) = match read {
            Ok(read) => read,
            Err(TaskError::Io { path, source }) if offset == 0 => {
                writeln!(out, "(no output log: {}: {source})", path.display())?;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        if !text.is_empty() {
            ends_with_newline = text.ends_with('\n');
            out.write_all(text.as_bytes())?;
        }
        if next >= total || next == offset {
            break;
        }
        offset = next;
    }
    let mut out = std::io::stdout().lock();
    if !ends_with_newline {
        writeln!(out)?;
    }
    writeln!(out, "--- end of output ---")?;
    Ok(())
}

async fn stop(table: &TaskTable, id: &str) -> Result<()> {
    let r = table.get(id).await.map_err(usage)?;
    if r.status.is_final() {
        println!(
            "task {} already ended as {}; nothing to stop",
            r.id, r.status
        );
        return Ok(());
    }
    // The owner is the recorded process itself, not whoever has its pid now.
    let owner_alive = !r.owner().is_current() && r.owner().alive();
    let result = if owner_alive {
        if r.status == TaskStatus::Stopping {
            println!(
                "task {} is already stopping; cadre process {} records it as cancelled once its work has stopped",
                r.id, r.owner_pid
            );
            return Ok(());
        }
        table
            .set_status(&r.id, TaskStatus::Stopping, None, None)
            .await
            .map(|_| {
                println!(
                    "task {} is now stopping; cadre process {} stops its work and records it as cancelled",
                    r.id, r.owner_pid
                );
            })
    } else {
        table
            .set_status(
                &r.id,
                TaskStatus::Cancelled,
                Some(TASK_STOPPED_ORPHAN),
                None,
            )
            .await
            .map(|_| {
                println!(
                    "task {} cancelled: its cadre process {} had already ended",
                    r.id, r.owner_pid
                );
            })
    };
    match result {
        Ok(()) => Ok(()),
        // It ended between our read and our write.
        Err(TaskError::FinalStatus { from, .. }) => {
            println!("task {} already ended as {from}; nothing to stop", r.id);
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// How often `--follow` looks for new lines in a running child's log.
const FOLLOW_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// Prints a subagent's transcript from its log; with `follow`, goes on
/// printing what a running one writes until its task ends.
async fn show_transcript(
    table: &TaskTable,
    home: &std::path::Path,
    id: &str,
    follow: bool,
) -> Result<()> {
    let r = table.get(id).await.map_err(usage)?;
    if r.kind != TaskKind::Subagent {
        return Err(UsageError(format!(
            "task {id} is a shell, which has no transcript; `cadre tasks show {id}` shows its output"
        ))
        .into());
    }
    let Some(path) = child_log_path(home, &r) else {
        return Err(anyhow::anyhow!(
            "task {id} names no subagent log (its agent.json is missing or unreadable)"
        ));
    };
    println!(
        "transcript of task {id} ({}: {}), {}",
        r.agent_type.as_deref().unwrap_or("subagent"),
        one_line(&r.description, 60),
        r.status
    );
    let mut follower = TranscriptFollower::new(path.clone());
    loop {
        // The status first: lines written before it ended are all read after.
        let status = table
            .get(id)
            .await
            .map(|row| row.status)
            .unwrap_or(r.status);
        let entries = match follower.read_new() {
            Ok(entries) => entries,
            // A child queued for the pool has no log yet.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && follow && !status.is_final() => {
                Vec::new()
            }
            Err(e) => {
                return Err(anyhow::anyhow!(
                    "cannot read the subagent log {}: {e}",
                    path.display()
                ));
            }
        };
        {
            let mut out = std::io::stdout().lock();
            for line in entries.iter().flat_map(TranscriptEntry::lines) {
                writeln!(out, "{line}")?;
            }
            out.flush()?;
        }
        if !follow {
            return Ok(());
        }
        if status.is_final() {
            println!("--- task {id} ended: {status} ---");
            return Ok(());
        }
        tokio::time::sleep(FOLLOW_POLL).await;
    }
}
