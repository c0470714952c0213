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

pub use crate::protocol::HookEvent;
pub use config::{HookConfigError, HookSet};
pub use outcome::{HookOutcome, PermissionVerdict};
pub use run::{HookRun, run_hooks};
pub use session::{AgentHooks, FireAt, SessionHooks};

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
