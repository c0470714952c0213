//! `cadre sessions`: list past sessions, remove one; and opening a session log
//! for a run, new or resumed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};
use cadre_core::archive::{self, ArchiveError};
use cadre_core::checkpoints::{
    CheckpointError, OfflineRewindError, rewind_session, session_checkpoints,
};
use cadre_core::config::data_dir;
use cadre_core::driver::{OpenError, OpenedLog, PendingResume, create_log};
use cadre_core::model::ContentBlock;
use cadre_core::protocol::EventSink;
use cadre_core::protocol::RewindAction;
use cadre_core::session::{
    LogRecord, RecordBody, SessionError, SessionSummary, SessionTotals, list_sessions, read_log,
    remove_session, session_path, session_totals, sessions_dir, utc_datetime,
};
use clap::{Args, Subcommand};

use crate::UsageError;
use crate::approve::{StdinLines, stdin_is_terminal};
use cadre_core::driver::SessionBuilder;

/// Arguments of `cadre sessions`.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    command: Option<SessionsCommand>,
}

#[derive(Debug, Subcommand)]
enum SessionsCommand {
    /// List sessions, newest first, with their tokens and cost (the default).
    List,
    /// Print a session's whole history, compactions marked, then its tokens and cost.
    Show {
        /// Session id.
        id: String,
        /// Print the log's records as JSON lines instead.
        #[arg(long)]
        json: bool,
    },
    /// Write a session to one archive file: its log, its subagents' logs, its
    /// task rows and files, and kept worktree branches as a git bundle.
    Export {
        /// Session id.
        id: String,
        /// The archive to write (default: cadre-session-ID.tar.gz here).
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<std::path::PathBuf>,
    },
    /// Restore a session from an archive written by `cadre sessions export`.
    Import {
        /// The archive.
        file: std::path::PathBuf,
        /// Replace a session with the same id that is already here.
        #[arg(long)]
        force: bool,
    },
    /// List a session's code checkpoints (one before each message): number,
    /// time, message and the files changed from it on.
    Checkpoints {
        /// Session id.
        id: String,
    },
    /// Go back to before checkpoint N of a session no process runs: the files
    /// the file tools changed since, the conversation, or both (the default).
    Rewind {
        /// Session id.
        id: String,
        /// The checkpoint's number (see `cadre sessions checkpoints ID`).
        number: u64,
        /// Restore the files only.
        #[arg(long, conflicts_with_all = ["conversation", "both"])]
        code: bool,
        /// Take the conversation back only; files stay as they are.
        #[arg(long, conflicts_with = "both")]
        conversation: bool,
        /// Restore the files and take the conversation back (the default).
        #[arg(long)]
        both: bool,
        /// Overwrite files changed outside cadre since cadre last wrote them.
        #[arg(long)]
        force: bool,
    },
    /// Delete a session's log, its subagent logs and its checkpoints.
    Rm {
        /// Session id.
        id: String,
        /// Don't ask for confirmation.
        #[arg(long, short = 'y')]
        yes: bool,
    },
}

/// `s` on one line (whitespace runs made one space), cut to `max` characters.
pub fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        format!("{}…", flat.chars().take(max).collect::<String>())
    } else {
        flat
    }
}

/// Runs `cadre sessions …`.
pub fn run(args: SessionsArgs) -> Result<ExitCode> {
    let home = data_dir()?;
    match args.command.unwrap_or(SessionsCommand::List) {
        SessionsCommand::List => {
            let list = list_sessions(&home);
            let mut out = std::io::stdout().lock();
            if list.is_empty() {
                eprintln!("no sessions yet");
            }
            for s in &list {
                if let Some(w) = &s.warning {
                    eprintln!("warning: session {}: {w}", s.id);
                }
            }
            write_list(&mut out, &list)?;
        }
        SessionsCommand::Show { id, json } => show(&home, &id, json)?,
        SessionsCommand::Export { id, output } => export(&home, &id, output)?,
        SessionsCommand::Import { file, force } => import(&home, &file, force)?,
        SessionsCommand::Checkpoints { id } => checkpoints(&home, &id)?,
        SessionsCommand::Rewind {
            id,
            number,
            code,
            conversation,
            both: _,
            force,
        } => {
            let action = if code {
                RewindAction::Code
            } else if conversation {
                RewindAction::Conversation
            } else {
                RewindAction::Both
            };
            return rewind(&home, &id, number, action, force);
        }
        SessionsCommand::Rm { id, yes } => {
            let path = session_path(&home, &id).map_err(session_usage)?;
            let agents = sessions_dir(&home).join(format!("{id}.agents"));
            let children = std::fs::read_dir(&agents).map(|d| d.count()).unwrap_or(0);
            if !yes {
                if !stdin_is_terminal() {
                    bail!(UsageError(format!(
                        "not deleting session {id} without confirmation: pass --yes"
                    )));
                }
                eprint!(
                    "Delete session {id} ({}) and its {children} subagent log(s)? [y/N] ",
                    path.display()
                );
                let mut answer = String::new();
                std::io::stdin().read_line(&mut answer)?;
                if !matches!(answer.trim(), "y" | "Y" | "yes") {
                    eprintln!("kept");
                    return Ok(ExitCode::SUCCESS);
                }
            }
            let removed = remove_session(&home, &id).map_err(session_usage)?;
            println!("deleted session {id} and its {removed} subagent log(s)");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `cadre sessions checkpoints ID`.
fn checkpoints(home: &Path, id: &str) -> Result<()> {
    let store = session_checkpoints(home, id).map_err(offline_usage)?;
    let list = store.list();
    if list.is_empty() {
        eprintln!("session {id} has no checkpoints");
    }
    let mut out = std::io::stdout().lock();
    for c in &list {
        writeln!(
            out,
            "{:>3}  {}  {}",
            c.number,
            utc_datetime(c.time_ms),
            one_line(&c.prompt, 60)
        )?;
        for f in &c.files {
            writeln!(out, "       {f}")?;
        }
    }
    Ok(())
}

/// `cadre sessions rewind ID N [--code|--conversation|--both] [--force]`.
fn rewind(
    home: &Path,
    id: &str,
    number: u64,
    action: RewindAction,
    force: bool,
) -> Result<ExitCode> {
    match rewind_session(home, id, number, action, force) {
        Ok(done) => {
            let mut out = std::io::stdout().lock();
            if let Some(code) = &done.code {
                let shown = |v: &[PathBuf]| -> Vec<String> {
                    v.iter().map(|p| p.display().to_string()).collect()
                };
                for line in crate::render::restored_lines(
                    &shown(&code.restored),
                    &shown(&code.removed),
                    &code.skipped,
                    &code.bash_commands,
                ) {
                    writeln!(out, "{line}")?;
                }
            }
            if let Some(kept) = done.messages {
                writeln!(
                    out,
                    "the conversation went back to before \"{}\" ({kept} messages kept)",
                    one_line(&done.prompt, 60)
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(OfflineRewindError::Checkpoint(CheckpointError::ChangedOutside(files))) => {
            eprintln!("these files changed outside cadre since cadre last wrote them:");
            for f in &files {
                eprintln!("  {}", f.display());
            }
            eprintln!("nothing was restored; pass --force to overwrite them");
            Ok(ExitCode::FAILURE)
        }
        Err(e) => Err(offline_usage(e)),
    }
}

fn offline_usage(e: OfflineRewindError) -> anyhow::Error {
    match e {
        OfflineRewindError::Session(e) => session_usage(e),
        e @ (OfflineRewindError::Checkpoint(CheckpointError::NotFound(_))
        | OfflineRewindError::Summarize) => UsageError(e.to_string()).into(),
        other => other.into(),
    }
}

/// `cadre sessions export ID [-o FILE]`.
fn export(home: &Path, id: &str, output: Option<PathBuf>) -> Result<()> {
    // The model keys are registered at start-up; a search service's key
    // only when a session sets up its tools, so here too.
    let mut names = cadre_core::secrets::secret_vars();
    names.extend(["BRAVE_API_KEY".to_string(), "TAVILY_API_KEY".to_string()]);
    for name in names {
        if let Some(value) = crate::keys::var(&name) {
            cadre_core::secrets::register(&value);
        }
    }
    let here = std::env::current_dir()?;
    let out = output.unwrap_or_else(|| here.join(format!("cadre-session-{id}.tar.gz")));
    let exported = archive::export(home, id, &out, &here).map_err(archive_usage)?;
    let m = &exported.manifest;
    for note in &m.notes {
        eprintln!("note: {note}");
    }
    println!(
        "wrote {}: session {id}, {}",
        exported.path.display(),
        contents(m)
    );
    Ok(())
}

/// What an archive holds, in a few words.
fn contents(m: &archive::Manifest) -> String {
    let count = |prefix: &str, suffix: &str| {
        m.entries
            .iter()
            .filter(|e| e.path.starts_with(prefix) && e.path.ends_with(suffix))
            .count()
    };
    let children = count(&format!("sessions/{}.agents/", m.session_id), ".jsonl");
    let tasks = m
        .entries
        .iter()
        .filter_map(|e| e.path.strip_prefix("tasks/"))
        .filter_map(|rest| rest.split('/').next())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let mut text = format!("{children} subagent log(s), {tasks} task folder(s)");
    if !m.branches.is_empty() {
        let names: Vec<String> = m.branches.iter().map(|b| format!("cadre/{b}")).collect();
        text.push_str(&format!(", branches {}", names.join(", ")));
    }
    text
}

/// `cadre sessions import FILE [--force]`.
fn import(home: &Path, file: &Path, force: bool) -> Result<()> {
    let here = std::env::current_dir()?;
    let imported = archive::import(home, file, &here, force).map_err(archive_usage)?;
    let m = &imported.manifest;
    let id = &m.session_id;
    println!(
        "imported session {id} (exported by cadre {} from {}): {}",
        m.cadre_version,
        if m.cwd.is_empty() { "?" } else { &m.cwd },
        contents(m)
    );
    if !imported.branches_fetched.is_empty() {
        println!(
            "fetched branches {} into the repository here",
            imported.branches_fetched.join(", ")
        );
    }
    if let Some((path, why)) = &imported.bundle_kept {
        eprintln!(
            "note: the worktree branches were not fetched ({why}); the bundle is kept at {} — in the repository, run: git fetch {} 'refs/heads/cadre/*:refs/heads/cadre/*'",
            path.display(),
            path.display()
        );
    }
    if !imported.tasks_lost.is_empty() {
        eprintln!(
            "note: {} task(s) were still active when exported and are recorded as lost: {}",
            imported.tasks_lost.len(),
            imported.tasks_lost.join(", ")
        );
    }
    println!("continue it with: cadre --resume {id}");
    Ok(())
}

fn archive_usage(e: ArchiveError) -> anyhow::Error {
    match e {
        ArchiveError::Session(e) => session_usage(e),
        ArchiveError::Exists(_) | ArchiveError::OutputExists(_) | ArchiveError::Refused { .. } => {
            UsageError(e.to_string()).into()
        }
        other => other.into(),
    }
}

/// Writes sessions one a line: id, start time, tokens, cost (when known),
/// directory, first prompt.
pub fn write_list(out: &mut impl Write, list: &[SessionSummary]) -> std::io::Result<()> {
    for s in list {
        writeln!(
            out,
            "{}  {}  {:>13}  {:>8}  {}  {}",
            s.id,
            utc_datetime(s.started_ms),
            format!("{} tok", s.totals.tokens()),
            s.totals.cost.map(|c| c.to_string()).unwrap_or_default(),
            s.cwd,
            one_line(&s.first_prompt, 60)
        )?;
    }
    Ok(())
}

/// `cadre sessions show ID`: reads the log (never locks it, so a session in
/// use can be shown) and prints it in order.
fn show(home: &std::path::Path, id: &str, json: bool) -> Result<()> {
    let path = session_path(home, id).map_err(session_usage)?;
    let log = read_log(&path).map_err(session_usage)?;
    for w in &log.warnings {
        eprintln!("warning: {w}");
    }
    let mut out = std::io::stdout().lock();
    if json {
        for r in &log.records {
            writeln!(out, "{}", serde_json::to_string(r)?)?;
        }
        return Ok(());
    }
    for r in &log.records {
        write_record(&mut out, r)?;
    }
    let totals = session_totals(home, id).map_err(session_usage)?;
    writeln!(out)?;
    writeln!(out, "{}", totals_line(&totals))?;
    Ok(())
}

/// `tokens: 4585 (input 3110, output 425, cache read 1000, cache write 50) · cost $0.0075`;
/// the cost only when known.
fn totals_line(t: &SessionTotals) -> String {
    let u = &t.usage;
    let mut line = format!(
        "tokens: {} (input {}, output {}, cache read {}, cache write {})",
        t.tokens(),
        u.input_tokens,
        u.output_tokens,
        u.cache_read_tokens,
        u.cache_write_tokens
    );
    if let Some(cost) = t.cost {
        line.push_str(&format!(" · cost {cost}"));
    }
    line
}

/// The first line of `text`, cut to `max` characters.
fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let more = text.trim().lines().nth(1).is_some();
    let cut = one_line(line, max);
    if more && !cut.ends_with('…') {
        format!("{cut} …")
    } else {
        cut
    }
}

/// A tool call's argument in a few words: its first string field (a command,
/// a path, a pattern), else the raw text, cut.
fn short_argument(input: &str) -> String {
    let value: Option<serde_json::Value> = serde_json::from_str(input).ok();
    let first_string = value.as_ref().and_then(|v| v.as_object()).and_then(|o| {
        o.values()
            .find_map(|v| v.as_str().filter(|s| !s.trim().is_empty()))
    });
    one_line(first_string.unwrap_or(input), 80)
}

fn write_record(out: &mut impl Write, r: &LogRecord) -> std::io::Result<()> {
    match &r.body {
        RecordBody::SessionStart {
            session_id,
            cwd,
            provider,
            model,
        } => writeln!(
            out,
            "session {session_id} · {} UTC · {provider} {model} · {cwd}",
            utc_datetime(r.time_ms)
        ),
        RecordBody::Resumed { unknown_calls } => {
            writeln!(out, "\n──── resumed {} UTC", utc_datetime(r.time_ms))?;
            if !unknown_calls.is_empty() {
                writeln!(
                    out,
                    "     {} call(s) recorded as unknown: {}",
                    unknown_calls.len(),
                    unknown_calls.join(", ")
                )?;
            }
            Ok(())
        }
        RecordBody::User { text } if text.starts_with("<system-reminder>") => {
            let inner = text
                .trim_start_matches("<system-reminder>")
                .trim_end()
                .trim_end_matches("</system-reminder>");
            writeln!(out, "  (reminder from cadre: {})", first_line(inner, 60))
        }
        RecordBody::User { text } => {
            writeln!(out)?;
            for line in text.lines() {
                writeln!(out, "> {line}")?;
            }
            Ok(())
        }
        RecordBody::Assistant { message, .. } => {
            for block in &message.content {
                match block {
                    ContentBlock::Text { text } if !text.trim().is_empty() => {
                        writeln!(out)?;
                        writeln!(out, "{}", text.trim_end())?;
                    }
                    ContentBlock::ToolUse { name, input, .. } => {
                        writeln!(out, "  → {name}({})", short_argument(input))?;
                    }
                    _ => {}
                }
            }
            // The provider's own searches: the query and what came back.
            for run in cadre_core::model::server_tool_runs(message) {
                let query = run.query.unwrap_or_default();
                match &run.error {
                    Some(code) => writeln!(out, "  ⌕ WebSearch({query:?}) → error: {code}")?,
                    None => {
                        writeln!(out, "  ⌕ WebSearch({query:?})")?;
                        for hit in &run.results {
                            writeln!(out, "      {} — {}", hit.title, hit.url)?;
                        }
                    }
                }
            }
            Ok(())
        }
        RecordBody::UserImage { image } => writeln!(out, "> [image {}]", image.media_type),
        RecordBody::ToolStart { .. } => Ok(()),
        RecordBody::ToolResult {
            content, status, ..
        } => {
            let status = serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            writeln!(out, "  ← {status}: {}", first_line(content, 100))
        }
        RecordBody::TurnEnd { status, reason } => match reason {
            Some(reason) => writeln!(out, "  · turn ended ({status}): {reason}"),
            None => writeln!(out, "  · turn ended ({status})"),
        },
        RecordBody::Rewind { messages, .. } => writeln!(
            out,
            "\n──── went back {} UTC: the conversation continues from its first {messages} message(s)",
            utc_datetime(r.time_ms)
        ),
        RecordBody::CompactBoundary {
            trigger,
            summary,
            kept,
            tokens_before,
            tokens_after,
            ..
        } => {
            writeln!(out)?;
            writeln!(
                out,
                "──── compacted ({}): {tokens_before} → {tokens_after} tokens, {} message{} kept ────",
                trigger.as_str(),
                kept.len(),
                if kept.len() == 1 { "" } else { "s" }
            )?;
            writeln!(out, "{}", summary.trim_end())?;
            writeln!(out, "──── end of summary ────")
        }
        RecordBody::Retry {
            attempt, reason, ..
        } => writeln!(out, "  (retry {attempt}: {})", first_line(reason, 100)),
    }
}

fn session_usage(e: SessionError) -> anyhow::Error {
    match e {
        SessionError::NotFound(_)
        | SessionError::Internal
        | SessionError::BadId(_)
        | SessionError::Exists(_) => UsageError(e.to_string()).into(),
        other => other.into(),
    }
}

/// Creates a new session log, or reopens `resume`'s after settling calls that
/// may have run: the user confirms (or `--accept-unknown`), and they are
/// recorded as `unknown` so nothing is re-run.
pub async fn open(
    runtime: &SessionBuilder,
    resume: Option<&str>,
    accept_unknown: bool,
    lines: Option<&StdinLines>,
    events: &EventSink,
) -> Result<OpenedLog> {
    let Some(id) = resume else {
        let config = runtime.client.config();
        return create_log(
            &runtime.home,
            &runtime.cwd,
            &config.provider.to_string(),
            &config.model,
        )
        .map_err(open_usage);
    };
    let pending = PendingResume::load(&runtime.home, id, events).map_err(open_usage)?;
    confirm_resume(&pending, accept_unknown, lines).await?;
    pending.accept(events).map_err(open_usage)
}

/// Says which calls of a session being resumed may have run, and goes on
/// only when the user agrees (on a terminal) or `--accept-unknown` was given.
pub async fn confirm_resume(
    pending: &PendingResume,
    accept_unknown: bool,
    lines: Option<&StdinLines>,
) -> Result<()> {
    let maybe_ran = may_have_run(pending);
    if !maybe_ran.is_empty() {
        let mut text = String::from(
            "cadre stopped while these calls were running; they may or may not have run:\n",
        );
        for call in &maybe_ran {
            text.push_str(&format!("  {call}\n"));
        }
        text.push_str("They will be recorded as `unknown` and not run again.");
        eprintln!("{text}");
        if !accept_unknown {
            let confirmed = match lines {
                Some(lines) if stdin_is_terminal() => {
                    eprint!("Continue the session? [y/N] ");
                    matches!(lines.next().await.as_deref().map(str::trim), Some("y" | "Y" | "yes"))
                }
                _ => bail!(UsageError(
                    "--resume of a session with calls that may have run needs confirmation; in a headless run pass --accept-unknown".into()
                )),
            };
            if !confirmed {
                bail!(UsageError("not resumed".into()));
            }
        }
    }
    Ok(())
}

/// The calls of a session being resumed that may have run, one line each
/// (`Bash {"command":"make"} (call-1)`).
fn may_have_run(pending: &PendingResume) -> Vec<String> {
    pending
        .may_have_run()
        .iter()
        .map(|c| format!("{} {} ({})", c.tool, one_line(&c.input, 100), c.call_id))
        .collect()
}

/// Reopens session `id` for a front end that asks its own way (the TUI):
/// when calls may have run, `ask` gets them (one line each) and says
/// whether to go on; nothing is printed. `None` when the answer was no.
/// The session stays held while the question is open.
pub async fn resume_asking<F, A>(
    runtime: &SessionBuilder,
    id: &str,
    events: &EventSink,
    ask: F,
) -> Result<Option<OpenedLog>>
where
    F: FnOnce(Vec<String>) -> A,
    A: std::future::Future<Output = bool>,
{
    let pending = PendingResume::load(&runtime.home, id, events).map_err(open_usage)?;
    let maybe_ran = may_have_run(&pending);
    if !maybe_ran.is_empty() && !ask(maybe_ran).await {
        return Ok(None);
    }
    Ok(Some(pending.accept(events).map_err(open_usage)?))
}

pub fn open_usage(e: OpenError) -> anyhow::Error {
    match e {
        OpenError::Session(e) => session_usage(e),
        other => other.into(),
    }
}
