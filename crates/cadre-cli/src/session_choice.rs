//! Which session a run works in, from Claude Code's session flags:
//! `--resume ID`, `--continue` (this folder's latest), `--fork-session`
//! (a copy goes on, the original stays as it was), `--session-id` (a new
//! session's id) and `--no-session-persistence` (nothing kept).

use anyhow::{Result, bail};
use cadre_core::driver::{OpenedLog, PendingResume, create_log_as};
use cadre_core::protocol::EventSink;

use crate::approve::StdinLines;
use crate::sessions::{confirm_resume, open_usage};
use crate::{ResumeArgs, UsageError};
use cadre_core::driver::SessionBuilder;

/// The session the flags name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChoice {
    /// A new session, under a given id or a fresh one.
    New(Option<String>),
    /// An earlier session; with `fork`, a copy of it under a new id.
    Resume {
        /// The earlier session.
        id: String,
        /// `--fork-session`: the copy's id (a fresh one when `None`).
        fork: Option<Option<String>>,
    },
    /// `--resume` without an id: the user picks (full screen only).
    Pick,
}

impl SessionChoice {
    /// Whether the run starts with an earlier conversation.
    pub fn resumes(&self) -> bool {
        !matches!(self, SessionChoice::New(_))
    }
}

/// Reads the session flags; `--continue` finds this folder's latest session.
pub fn choose(runtime: &SessionBuilder, flags: &ResumeArgs) -> Result<SessionChoice> {
    if let Some(id) = &flags.session_id {
        uuid::Uuid::parse_str(id)
            .map_err(|_| UsageError(format!("--session-id must be a UUID, not {id:?}")))?;
    }
    let earlier = if flags.continue_last {
        Some(latest_here(runtime)?)
    } else {
        flags.resume.clone()
    };
    match earlier {
        None if flags.fork_session => {
            bail!(UsageError(
                "--fork-session goes with --resume or --continue".into()
            ))
        }
        None => Ok(SessionChoice::New(flags.session_id.clone())),
        Some(id) if id.is_empty() => Ok(SessionChoice::Pick),
        Some(_) if flags.session_id.is_some() && !flags.fork_session => bail!(UsageError(
            "--session-id with --resume or --continue needs --fork-session (the resumed session keeps its id)".into()
        )),
        Some(id) => Ok(SessionChoice::Resume {
            id,
            fork: flags.fork_session.then(|| flags.session_id.clone()),
        }),
    }
}

/// The most recent session started in this folder.
fn latest_here(runtime: &SessionBuilder) -> Result<String> {
    let here = runtime.cwd.display().to_string();
    cadre_core::session::list_sessions(&runtime.home)
        .into_iter()
        .filter(|s| s.cwd == here)
        .max_by_key(|s| s.started_ms)
        .map(|s| s.id)
        .ok_or_else(|| {
            UsageError(
                "--continue: no earlier session in this folder (see `cadre sessions`)".into(),
            )
            .into()
        })
}

/// Opens the chosen session's log: creates it, resumes it (after the user
/// agrees to calls that may have run) or forks it.
pub async fn open(
    runtime: &SessionBuilder,
    choice: &SessionChoice,
    accept_unknown: bool,
    lines: Option<&StdinLines>,
    events: &EventSink,
) -> Result<OpenedLog> {
    let config = runtime.client.config();
    let provider = config.provider.to_string();
    match choice {
        SessionChoice::New(id) => create_log_as(
            &runtime.home,
            &runtime.cwd,
            &provider,
            &config.model,
            id.as_deref(),
        )
        .map_err(open_usage),
        SessionChoice::Pick => bail!(UsageError(
            "--resume needs a session id here (`cadre sessions` lists them); only the full screen offers a picker".into()
        )),
        SessionChoice::Resume { id, fork } => {
            let pending = PendingResume::load(&runtime.home, id, events).map_err(open_usage)?;
            confirm_resume(&pending, accept_unknown, lines).await?;
            match fork {
                None => pending.accept(events).map_err(open_usage),
                Some(new_id) => pending
                    .fork(
                        &runtime.home,
                        &runtime.cwd,
                        &provider,
                        &config.model,
                        new_id.as_deref(),
                        events,
                    )
                    .await
                    .map_err(open_usage),
            }
        }
    }
}
