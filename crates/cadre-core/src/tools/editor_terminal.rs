//! Commands in an editor's terminal. A front end that is an editor's agent
//! (`cadre acp`) can run `Bash`'s foreground commands in terminals the
//! editor shows live; cadre still decides each command, and a sandboxed one
//! runs under cadre's sandbox there (the terminal runs cadre's own launcher).

use std::path::Path;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

/// One command for the editor's terminal.
pub struct TerminalCall<'a> {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to its environment.
    pub env: Vec<(String, String)>,
    /// Where it runs.
    pub cwd: &'a Path,
    /// Most bytes of output kept.
    pub output_limit: usize,
    /// How long it may run.
    pub timeout: Duration,
    /// Fires when the turn is interrupted.
    pub cancel: &'a CancellationToken,
    /// The agent whose call it is.
    pub agent_id: &'a str,
    /// The tool call it runs for, shown with the terminal.
    pub call_id: Option<&'a str>,
}

/// How a command in the editor's terminal ended.
#[derive(Debug, Default)]
pub struct TerminalRun {
    /// What it printed (stdout and stderr, as the terminal shows them).
    pub output: String,
    /// The terminal dropped the start of the output to keep the limit.
    pub truncated: bool,
    /// Its exit code, when it exited.
    pub exit_code: Option<u32>,
    /// The signal that ended it, when one did.
    pub signal: Option<String>,
    /// It ran out of time and was killed.
    pub timed_out: bool,
    /// The turn was interrupted and it was killed.
    pub cancelled: bool,
}

/// Runs commands in the front end's terminals.
pub trait EditorTerminal: Send + Sync {
    /// Runs one command to its end (or until it times out or is cancelled).
    fn run<'a>(&'a self, call: TerminalCall<'a>) -> BoxFuture<'a, Result<TerminalRun, String>>;
}
