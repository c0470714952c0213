//! Going back in a session that no process runs (`cadre sessions rewind`):
//! the files from its checkpoints, and the conversation by a cut appended to
//! its log, the same record a live session writes.

use std::path::Path;

use thiserror::Error;

use super::{CheckpointError, CheckpointStore, Restored, checkpoints_dir};
use crate::protocol::RewindAction;
use crate::session::{
    RecordBody, SessionError, SessionLock, SessionLog, locks_dir, read_log, rebuild, session_path,
};

/// Why an offline rewind did not happen.
#[derive(Debug, Error)]
pub enum OfflineRewindError {
    /// The session cannot be found, locked, read or written.
    #[error("{0}")]
    Session(#[from] SessionError),
    /// The checkpoints refused (a file changed outside cadre, no such checkpoint).
    #[error("{0}")]
    Checkpoint(#[from] CheckpointError),
    /// The message is no longer in the conversation (a compaction summarised it).
    #[error(
        "checkpoint {0}'s message is no longer in the conversation (a compaction summarised it); restore the code alone"
    )]
    NotInConversation(u64),
    /// Summaries need the model: they are made in a running session.
    #[error("summarising needs the model: use /rewind in the session")]
    Summarize,
}

/// What an offline rewind did.
#[derive(Debug, Clone, Default)]
pub struct OfflineRewind {
    /// The message gone back before.
    pub prompt: String,
    /// The files, when code was restored.
    pub code: Option<Restored>,
    /// Messages the conversation holds now, when it went back.
    pub messages: Option<usize>,
}

/// The checkpoints of session `id` (which must exist).
pub fn session_checkpoints(home: &Path, id: &str) -> Result<CheckpointStore, OfflineRewindError> {
    session_path(home, id)?;
    Ok(CheckpointStore::open(checkpoints_dir(home, id))?)
}

/// Goes back to before checkpoint `number` of session `id` as `action` says;
/// files changed outside cadre since stop it unless `force`.
pub fn rewind_session(
    home: &Path,
    id: &str,
    number: u64,
    action: RewindAction,
    force: bool,
) -> Result<OfflineRewind, OfflineRewindError> {
    if action == RewindAction::Summarize {
        return Err(OfflineRewindError::Summarize);
    }
    let path = session_path(home, id)?;
    // No running session may write the log or the files meanwhile.
    let locks = locks_dir(home);
    std::fs::create_dir_all(&locks).map_err(|source| SessionError::Write {
        path: locks.clone(),
        source,
    })?;
    let _held = SessionLock::acquire(&locks, id)?;
    let store = CheckpointStore::open(checkpoints_dir(home, id))?;
    let all = store.checkpoints();
    let at = all
        .iter()
        .position(|c| c.number == number)
        .ok_or(CheckpointError::NotFound(number))?;
    let prompt = all[at].prompt.clone();
    let later_same = all[at + 1..].iter().filter(|c| c.prompt == prompt).count();
    let cut = if action.restores_conversation() {
        let loaded = read_log(&path)?;
        let messages = rebuild(&loaded.records).messages;
        let cut = crate::context::find_prompt(&messages, &prompt, later_same)
            .ok_or(OfflineRewindError::NotInConversation(number))?;
        let mut after = messages;
        crate::context::apply_cut(&mut after, cut);
        Some((cut, after.len()))
    } else {
        None
    };
    let code = if action.restores_code() {
        Some(store.restore(number, force)?)
    } else {
        None
    };
    let mut messages = None;
    if let Some((cut, kept)) = cut {
        let log = SessionLog::reopen(&path)?;
        log.append_now(RecordBody::Rewind {
            messages: cut.messages,
            blocks: cut.blocks,
        })?;
        messages = Some(kept);
        if action == RewindAction::Both {
            store.forget_from(number)?;
        } else {
            store.fold_into_previous(number)?;
        }
    }
    Ok(OfflineRewind {
        prompt,
        code,
        messages,
    })
}
