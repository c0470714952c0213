//! What the protocol says about code checkpoints: the ways of going back to
//! before a message, the checkpoints a front end lists, and the files a
//! restore could not bring back.

use serde::{Deserialize, Serialize};

/// What going back to before a message restores (`Op::Rewind`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RewindAction {
    /// The files the file tools changed since, and the conversation.
    Both,
    /// The conversation only; files stay as they are.
    #[default]
    Conversation,
    /// The files only; the conversation stays as it is.
    Code,
    /// The conversation from the message on becomes a summary of it.
    Summarize,
}

impl RewindAction {
    /// Whether files are restored.
    pub fn restores_code(self) -> bool {
        matches!(self, RewindAction::Both | RewindAction::Code)
    }

    /// Whether the conversation goes back.
    pub fn restores_conversation(self) -> bool {
        matches!(self, RewindAction::Both | RewindAction::Conversation)
    }
}

/// Why a file a tool changed cannot be brought back by a restore.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// The path the tool was given is a symbolic link.
    Symlink,
    /// The file has other hard links, which a restore would not follow.
    HardLink,
    /// Its earlier content could not be saved (the disk refused).
    NotSaved,
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SkipReason::Symlink => "symlinked",
            SkipReason::HardLink => "hard-linked",
            SkipReason::NotSaved => "its earlier content could not be saved",
        })
    }
}

/// A file a restore leaves as it is, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkippedFile {
    /// The file.
    pub path: String,
    /// Why.
    pub reason: SkipReason,
}

/// One checkpoint as a front end lists it: taken before a user message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckpointInfo {
    /// Its number in the session (1 for the first message), shown to pick it.
    pub number: u64,
    /// The message it was taken before.
    pub prompt: String,
    /// Later checkpoints of the same message text: with `prompt`, what `Op::Rewind` names.
    pub later_same: usize,
    /// When it was taken, ms since the Unix epoch.
    pub time_ms: u64,
    /// Files the file tools changed from this message on, which a code restore brings back.
    pub files: Vec<String>,
}
