//! Hooks in Claude Code's format: user commands run at points of a session
//! (before a tool call, when the agent stops, …) that can block, allow or add
//! context. This module is the engine only: it parses the `hooks` value of a
//! settings file or definition, picks the hooks for an event, runs them, and
//! folds their outputs into one [`HookOutcome`]. Firing them is the agent
//! loop's business.

mod config;
mod outcome;
mod run;
mod session;

use std::time::Duration;

pub use config::{HookConfigError, HookSet};
pub use outcome::{HookOutcome, PermissionVerdict};
pub use run::{HookRun, run_hooks};
pub use session::{AgentHooks, FireAt, SessionHooks};

/// The hook events cadre fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookEvent {
    /// A session starts (subject: "startup", "resume", "clear" or "compact").
    SessionStart,
    /// The user submitted a prompt.
    UserPromptSubmit,
    /// Before a tool call (subject: the tool name).
    PreToolUse,
    /// After a tool call (subject: the tool name).
    PostToolUse,
    /// The main agent is about to end its turn.
    Stop,
    /// A subagent starts (subject: its agent type).
    SubagentStart,
    /// A subagent is about to end (subject: its agent type).
    SubagentStop,
    /// Before the conversation is compacted (subject: "manual" or "auto").
    PreCompact,
    /// The session ends.
    SessionEnd,
    /// A notification is shown to the user (subject: its type).
    Notification,
}

impl HookEvent {
    /// Every event, in the order Claude Code documents them.
    pub const ALL: [HookEvent; 10] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::Stop,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::SessionEnd,
        HookEvent::Notification,
    ];

    /// The event's name as written in configuration and `hook_event_name`.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::Notification => "Notification",
        }
    }

    /// The event named exactly `name` (case matters, as in Claude Code).
    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Whether a hook can block at this event (exit 2 or `decision:
    /// "block"`). For `PostToolUse` the tool has run already; the reason
    /// still goes to the model.
    pub fn can_block(self) -> bool {
        matches!(
            self,
            HookEvent::UserPromptSubmit
                | HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::Stop
                | HookEvent::SubagentStop
                | HookEvent::PreCompact
        )
    }

    /// Whether plain (non-JSON) stdout of a successful hook becomes context
    /// for the model at this event.
    pub fn plain_stdout_is_context(self) -> bool {
        matches!(self, HookEvent::SessionStart | HookEvent::UserPromptSubmit)
    }
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One command hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCommand {
    /// The shell command, run with `bash -c`.
    pub command: String,
    /// How long it may run before its process group is killed.
    pub timeout: Duration,
    /// Where it was configured, e.g. "project settings (.claude/settings.json)".
    pub source: String,
    /// Variables added to its environment (a plugin's `CLAUDE_PLUGIN_ROOT`, …).
    pub env: Vec<(String, String)>,
}

/// Longest string taken from a hook's output, in characters (as Claude Code).
pub const OUTPUT_STRING_CAP: usize = 10_000;

/// `text` cut to [`OUTPUT_STRING_CAP`] characters.
fn cap_chars(text: &str) -> String {
    match text.char_indices().nth(OUTPUT_STRING_CAP) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_round_trip() {
        for event in HookEvent::ALL {
            assert_eq!(HookEvent::parse(event.name()), Some(event));
        }
        assert_eq!(HookEvent::parse("pretooluse"), None);
        assert_eq!(HookEvent::parse("PostToolUseFailure"), None);
    }

    #[test]
    fn long_strings_are_capped() {
        let long = "é".repeat(OUTPUT_STRING_CAP + 5);
        assert_eq!(cap_chars(&long).chars().count(), OUTPUT_STRING_CAP + 1);
        assert_eq!(cap_chars("short"), "short");
    }
}
