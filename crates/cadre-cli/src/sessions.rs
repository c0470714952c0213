//! `cadre sessions`: list past sessions, remove one; and opening a session log
//! for a run, new or resumed.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Result, bail};
use cadre_core::agent::{Event, EventSink};
use cadre_core::config::{data_dir, ensure_private_dir};
use cadre_core::model::Message;
use cadre_core::session::{
    CallStatus, RecordBody, SessionError, SessionLock, SessionLog, list_sessions, locks_dir,
    new_session_id, read_log, rebuild, remove_session, session_path, sessions_dir, utc_datetime,
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
            for s in list {
                if let Some(w) = &s.warning {
                    eprintln!("warning: session {}: {w}", s.id);
                }
                writeln!(
                    out,
                    "{}  {}  {}  {}",
                    s.id,
                    utc_datetime(s.started_ms),
                    s.cwd,
                    one_line(&s.first_prompt, 60)
                )?;
            }
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

fn session_usage(e: SessionError) -> anyhow::Error {
    match e {
        SessionError::NotFound(_) | SessionError::Internal | SessionError::BadId(_) => {
            UsageError(e.to_string()).into()
        }
        other => other.into(),
    }
}

/// A session log ready for a run, and the conversation to continue from.
pub struct OpenSession {
    /// Session id.
    pub id: String,
    /// The log.
    pub log: Arc<SessionLog>,
    /// Messages to restore (empty for a new session).
    pub messages: Vec<Message>,
    /// This process's hold on the session, kept (not read) for the whole run.
    pub _lock: SessionLock,
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
) -> Result<OpenSession> {
    let dir = sessions_dir(&runtime.home);
    ensure_private_dir(&dir)?;
    let locks = locks_dir(&runtime.home);
    ensure_private_dir(&locks)?;
    let Some(id) = resume else {
        let id = new_session_id();
        let lock = SessionLock::acquire(&locks, &id)?;
        let log = SessionLog::create(&dir.join(format!("{id}.jsonl")))?;
        log.append(RecordBody::SessionStart {
            session_id: id.clone(),
            cwd: runtime.cwd.display().to_string(),
            provider: runtime.client.config().provider.to_string(),
            model: runtime.client.config().model.clone(),
        })?;
        return Ok(OpenSession {
            id,
            log: Arc::new(log),
            messages: Vec::new(),
            _lock: lock,
        });
    };

    let path = session_path(&runtime.home, id).map_err(session_usage)?;
    // Before anything is read or written: another process may be using it.
    let lock = SessionLock::acquire(&locks, id)?;
    let loaded = read_log(&path)?;
    for w in &loaded.warnings {
        events.emit(Event::Warning {
            message: format!("session {id}: {w}"),
        });
    }
    let rebuilt = rebuild(&loaded.records);
    // A log whose session record was lost (a torn first line) resumes from
    // the records that remain; the warnings above say what was skipped.
    if rebuilt.session_id.is_none() && loaded.records.is_empty() {
        bail!(SessionError::Empty(path));
    }
    let maybe_ran: Vec<_> = rebuilt.unfinished.iter().filter(|c| c.started).collect();
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
    let log = SessionLog::reopen(&path)?;
    for c in &rebuilt.unfinished {
        let (content, status) = if c.started {
            (cadre_core::session::UNKNOWN_RESULT, CallStatus::Unknown)
        } else {
            (cadre_core::session::NOT_RUN_RESULT, CallStatus::NotRun)
        };
        log.append(RecordBody::ToolResult {
            call_id: c.call_id.clone(),
            content: content.to_string(),
            is_error: true,
            status,
        })?;
    }
    let unknown_calls: Vec<String> = maybe_ran.iter().map(|c| c.call_id.clone()).collect();
    log.append(RecordBody::Resumed {
        unknown_calls: unknown_calls.clone(),
    })?;
    events.emit(Event::SessionResumed {
        session_id: id.to_string(),
        messages: rebuilt.messages.len(),
        unknown_calls,
    });
    Ok(OpenSession {
        id: id.to_string(),
        log: Arc::new(log),
        messages: rebuilt.messages,
        _lock: lock,
    })
}
