//! The session log a run writes: a new one, or one reopened to continue
//! (`--resume`). A resume happens in two steps, because calls that were
//! running when cadre stopped may or may not have run, and the user says
//! whether to go on: [`PendingResume::load`] holds the session and reads its
//! log, [`PendingResume::accept`] records those calls as `unknown` (never
//! run again) and hands over the conversation.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use thiserror::Error;

use crate::config::{ConfigError, ensure_private_dir};
use crate::model::Message;
use crate::protocol::{Event, EventSink};
use crate::session::{
    NOT_RUN_RESULT, Rebuilt, RecordBody, SessionError, SessionLock, SessionLog, UNKNOWN_RESULT,
    UnfinishedCall, locks_dir, new_session_id, read_log, rebuild, recover_torn_tail, session_path,
    sessions_dir,
};

/// Why a session log could not be opened.
#[derive(Debug, Error)]
pub enum OpenError {
    /// The log: missing, unreadable, in use, not writable.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The data directory.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// A session log ready for a run, held by this process.
pub struct OpenedLog {
    /// Session id.
    pub id: String,
    /// The log.
    pub log: Arc<SessionLog>,
    /// The conversation to continue (empty for a new session).
    pub messages: Vec<Message>,
    /// This process's hold on the session: keep it for the whole run.
    pub lock: SessionLock,
}

/// The sessions and locks directories under `home`, made if missing (0700).
fn dirs(home: &Path) -> Result<(PathBuf, PathBuf), ConfigError> {
    let dir = sessions_dir(home);
    ensure_private_dir(&dir)?;
    let locks = locks_dir(home);
    ensure_private_dir(&locks)?;
    Ok((dir, locks))
}

/// Creates the log of a new session and holds the session.
pub fn create_log(
    home: &Path,
    cwd: &Path,
    provider: &str,
    model: &str,
) -> Result<OpenedLog, OpenError> {
    create_log_as(home, cwd, provider, model, None)
}

/// [`create_log`] under a chosen id (`--session-id`), which must be free.
pub fn create_log_as(
    home: &Path,
    cwd: &Path,
    provider: &str,
    model: &str,
    id: Option<&str>,
) -> Result<OpenedLog, OpenError> {
    let (dir, locks) = dirs(home)?;
    let id = match id {
        Some(given) => {
            if !crate::session::is_valid_session_id(given) {
                return Err(SessionError::BadId(given.to_string()).into());
            }
            if dir.join(format!("{given}.jsonl")).exists() {
                return Err(SessionError::Exists(given.to_string()).into());
            }
            given.to_string()
        }
        None => new_session_id(),
    };
    let lock = SessionLock::acquire(&locks, &id)?;
    let log = SessionLog::create(&dir.join(format!("{id}.jsonl")))?;
    log.append_now(RecordBody::SessionStart {
        session_id: id.clone(),
        cwd: cwd.display().to_string(),
        provider: provider.to_string(),
        model: model.to_string(),
    })?;
    Ok(OpenedLog {
        id,
        log: Arc::new(log),
        messages: Vec::new(),
        lock,
    })
}

/// A session being resumed: held and read, not written yet.
pub struct PendingResume {
    id: String,
    path: PathBuf,
    lock: SessionLock,
    rebuilt: Rebuilt,
}

impl PendingResume {
    /// Holds session `id` (before anything is read: another process may be
    /// using it) and rebuilds its conversation; lines of the log that had
    /// to be skipped are reported as warnings.
    pub fn load(home: &Path, id: &str, events: &EventSink) -> Result<PendingResume, OpenError> {
        let path = session_path(home, id)?;
        let (_, locks) = dirs(home)?;
        let lock = SessionLock::acquire(&locks, id)?;
        // Held: a torn last line can move aside before anything reads it.
        if let Some(moved) = recover_torn_tail(&path)? {
            events.emit(Event::Warning {
                message: format!(
                    "session {id}: its last line was cut off mid-write (a crash or a full disk); its {} bytes were moved to {} and the log now ends at its last whole record",
                    moved.bytes,
                    moved.file.display()
                ),
            });
        }
        let loaded = read_log(&path)?;
        for w in &loaded.warnings {
            events.emit(Event::Warning {
                message: format!("session {id}: {w}"),
            });
        }
        let rebuilt = rebuild(&loaded.records);
        // A log whose session record was lost (a torn first line) resumes
        // from the records that remain; the warnings say what was skipped.
        if rebuilt.session_id.is_none() && loaded.records.is_empty() {
            return Err(SessionError::Empty(path).into());
        }
        Ok(PendingResume {
            id: id.to_string(),
            path,
            lock,
            rebuilt,
        })
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Calls that were running when cadre stopped: they may or may not have
    /// run. When there are any, the user should agree before [`Self::accept`].
    pub fn may_have_run(&self) -> Vec<&UnfinishedCall> {
        self.rebuilt
            .unfinished
            .iter()
            .filter(|c| c.started)
            .collect()
    }

    /// Starts a new session (`id`, or a fresh one) from this one's
    /// conversation, its unfinished calls settled as [`Self::accept`] would
    /// settle them; the original log is left as it was.
    pub async fn fork(
        self,
        home: &Path,
        cwd: &Path,
        provider: &str,
        model: &str,
        id: Option<&str>,
        events: &EventSink,
    ) -> Result<OpenedLog, OpenError> {
        let opened = create_log_as(home, cwd, provider, model, id)?;
        opened.log.append_messages(&self.rebuilt.messages).await?;
        events.emit(Event::SessionResumed {
            session_id: opened.id.clone(),
            messages: self.rebuilt.messages.len(),
            unknown_calls: Vec::new(),
        });
        Ok(OpenedLog {
            messages: self.rebuilt.messages,
            ..opened
        })
    }

    /// Reopens the log, records every unfinished call (`unknown` when it may
    /// have run, `not_run` otherwise: neither runs again) and the resume, and
    /// reports `session_resumed`.
    pub fn accept(self, events: &EventSink) -> Result<OpenedLog, OpenError> {
        let log = SessionLog::reopen(&self.path)?.with_counted(self.rebuilt.counted);
        for c in &self.rebuilt.unfinished {
            let (content, status) = if c.started {
                (UNKNOWN_RESULT, crate::session::CallStatus::Unknown)
            } else {
                (NOT_RUN_RESULT, crate::session::CallStatus::NotRun)
            };
            log.append_now(RecordBody::ToolResult {
                call_id: c.call_id.clone(),
                content: content.to_string(),
                is_error: true,
                status,
                images: Vec::new(),
            })?;
        }
        let unknown_calls: Vec<String> = self
            .may_have_run()
            .iter()
            .map(|c| c.call_id.clone())
            .collect();
        log.append_now(RecordBody::Resumed {
            unknown_calls: unknown_calls.clone(),
        })?;
        events.emit(Event::SessionResumed {
            session_id: self.id.clone(),
            messages: self.rebuilt.messages.len(),
            unknown_calls,
        });
        Ok(OpenedLog {
            id: self.id,
            log: Arc::new(log),
            messages: self.rebuilt.messages,
            lock: self.lock,
        })
    }
}
