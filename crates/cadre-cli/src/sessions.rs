//! `cadre sessions`: list past sessions, remove one; and opening a session log
//! for a run, new or resumed.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Result, bail};
use cadre_core::config::data_dir;
use cadre_core::driver::{OpenError, OpenedLog, PendingResume, create_log};
use cadre_core::protocol::EventSink;
use cadre_core::session::{
    SessionError, SessionSummary, list_sessions, remove_session, session_path, sessions_dir,
    utc_datetime,
};
use clap::{Args, Subcommand};

use crate::UsageError;
use crate::approve::{StdinLines, stdin_is_terminal};
use crate::setup::Runtime;

/// Arguments of `cadre sessions`.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    command: Option<SessionsCommand>,
}

#[derive(Debug, Subcommand)]
enum SessionsCommand {
    /// List sessions, newest first (the default).
    List,
    /// Delete a session's log and its subagent logs.
    Rm {
        /// Session id.
        id: String,
        /// Don't ask for confirmation.
        #[arg(long, short = 'y')]
        yes: bool,
    },
}

fn one_line(s: &str, max: usize) -> String {
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

/// Writes sessions one a line: id, start time, directory, first prompt.
pub fn write_list(out: &mut impl Write, list: &[SessionSummary]) -> std::io::Result<()> {
    for s in list {
        writeln!(
            out,
            "{}  {}  {}  {}",
            s.id,
            utc_datetime(s.started_ms),
            s.cwd,
            one_line(&s.first_prompt, 60)
        )?;
    }
    Ok(())
}

fn session_usage(e: SessionError) -> anyhow::Error {
    match e {
        SessionError::NotFound(_) | SessionError::Internal | SessionError::BadId(_) => {
            UsageError(e.to_string()).into()
        }
        other => other.into(),
    }
}

/// Creates a new session log, or reopens `resume`'s after settling calls that
/// may have run: the user confirms (or `--accept-unknown`), and they are
/// recorded as `unknown` so nothing is re-run.
pub async fn open(
    runtime: &Runtime,
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
    let maybe_ran = pending.may_have_run();
    if !maybe_ran.is_empty() {
        let mut text = String::from(
            "cadre stopped while these calls were running; they may or may not have run:\n",
        );
        for c in &maybe_ran {
            text.push_str(&format!(
                "  {} {} ({})\n",
                c.tool,
                one_line(&c.input, 100),
                c.call_id
            ));
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
    pending.accept(events).map_err(open_usage)
}

fn open_usage(e: OpenError) -> anyhow::Error {
    match e {
        OpenError::Session(e) => session_usage(e),
        other => other.into(),
    }
}
