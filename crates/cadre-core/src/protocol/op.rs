//! The operation half of the protocol: what a front end asks of a session.

use serde::{Deserialize, Serialize};

use super::ApprovalAnswer;

/// Something a front end asks the session to do. A front end only submits
/// these and renders [`super::Event`]s; everything else is the core's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// The user's next message: starts a turn; sent while a turn runs, it
    /// waits and starts the next one (it never interrupts).
    UserMessage {
        /// The text.
        text: String,
    },
    /// The user's next message with image files attached (pasted or
    /// dropped in the full screen): as [`Op::UserMessage`], with each image
    /// sent after the text. The user chose the files: no permission is asked.
    UserMessageWithImages {
        /// The text.
        text: String,
        /// Paths of the image files (PNG, JPEG, GIF, WebP).
        images: Vec<String>,
    },
    /// The answer to a question (questions come one at a time).
    ApprovalAnswer {
        /// The question's id (from its `approval_requested` event): an answer
        /// that arrives after its question was withdrawn is then dropped
        /// instead of answering the next one. None answers the question now shown.
        #[serde(default)]
        id: Option<u64>,
        /// The answer.
        answer: ApprovalAnswer,
    },
    /// Stop the running turn and everything in its foreground; background work goes on.
    Interrupt,
    /// Move the running batch of foreground children to the background.
    BackgroundBatch,
    /// Stop one task.
    StopTask {
        /// Its id.
        task_id: String,
    },
    /// Stop every running task of this session.
    StopAll,
    /// Compact the main agent's conversation now (queued like a message
    /// while a turn runs).
    Compact {
        /// What the summary should keep above all (`/compact <focus>`).
        #[serde(default)]
        focus: Option<String>,
    },
    /// Change the main agent's permission mode (Shift+Tab): taken before
    /// its next request; `bypassPermissions` only in a session started in it.
    SetMode {
        /// The new mode.
        mode: super::PermissionMode,
    },
    /// Go back to just before the user sent `prompt` (queued like a message
    /// while a turn runs): the conversation, the files the file tools changed
    /// since (from the checkpoint taken before it), or both, or summarise the
    /// conversation from there. A code restore that would overwrite files
    /// changed outside cadre since stops with `rewind_needs_confirmation`
    /// unless `overwrite` is set.
    Rewind {
        /// The message, exactly as sent.
        prompt: String,
        /// Later sends of the same text to skip (0: the most recent send).
        #[serde(default)]
        later_same: usize,
        /// What goes back (the conversation only when absent).
        #[serde(default)]
        action: super::RewindAction,
        /// Overwrite files changed outside cadre since cadre last wrote them.
        #[serde(default)]
        overwrite: bool,
    },
    /// List the session's code checkpoints (answered by a `checkpoints` event).
    ListCheckpoints,
    /// Shell mode (`!command`): run the command as the user, through
    /// `Bash`'s deny rules and sandbox, show its output and add it to the
    /// conversation for the next turn, without asking the model anything
    /// (queued like a message while a turn runs).
    Shell {
        /// The command.
        command: String,
    },
    /// Talk to another model (an id) from the main agent's next turn on;
    /// children that inherit the model follow.
    SetModel {
        /// The model id.
        model: String,
    },
    /// The user's message to a teammate (typed in its view, or `@name
    /// text`): it reaches the teammate's conversation as the user's words,
    /// waking it if idle.
    MessageTeammate {
        /// The teammate's name.
        name: String,
        /// The text.
        text: String,
    },
    /// Stop the turn a teammate runs now (it stays on the team).
    InterruptTeammate {
        /// The teammate's name.
        name: String,
    },
    /// End a teammate.
    StopTeammate {
        /// The teammate's name.
        name: String,
    },
    /// Stop everything and end the session.
    Shutdown,
}
