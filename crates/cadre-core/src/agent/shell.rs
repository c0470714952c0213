//! Shell mode: a prompt starting with `!` runs the rest as a command, as the
//! user. It goes through `Bash` itself (its sandbox, its output cap) and
//! through the deny rules, but asks no question: the user typed it. Its
//! output is shown and joins the conversation, so the next turn's request
//! holds it; the model is not asked anything until the user writes.

use tokio_util::sync::CancellationToken;

use super::Agent;
use crate::model::ToolInput;
use crate::permissions::{Decision, PermissionMode};
use crate::protocol::Event;

/// What the model reads of a shell-mode command: the command and its output
/// in the tags Claude Code uses, after a line saying the user ran it.
pub(super) fn shell_block(command: &str, output: &str, is_error: bool) -> String {
    let stream = if is_error {
        "bash-stderr"
    } else {
        "bash-stdout"
    };
    format!(
        "The user ran this command themselves (shell mode); its output is for your information.\n<bash-input>{command}</bash-input>\n<{stream}>{output}</{stream}>"
    )
}

impl Agent {
    /// Runs `command` as the user typed it after `!`, and keeps what it
    /// printed for the next turn. Its `shell_ran` event says how it went.
    pub async fn run_user_shell(&mut self, command: &str, cancel: CancellationToken) {
        let command = command.trim();
        let ran = match self.shell_refusal(command) {
            Some(why) => (why, true),
            None => {
                let (tool, input) = self.shell_call(command);
                let mut ctx = self.ctx.clone();
                ctx.cancel = cancel;
                let out = match tool {
                    Some(tool) => tool.execute(&ctx, &input).await,
                    None => crate::tools::ToolOutput::error("Bash is not available"),
                };
                (out.content, out.is_error)
            }
        };
        let (output, is_error) = ran;
        self.events.emit(Event::ShellRan {
            command: command.to_string(),
            output: output.clone(),
            is_error,
        });
        let block = shell_block(command, &output, is_error);
        // Before the first message the block waits with the other context
        // that comes before it (hooks' SessionStart), so the first turn's
        // reminders still go first.
        if self.conversation.is_empty() {
            self.pending_context.push(block);
        } else if let Err(super::LogFailure(e)) = self.log_user_text(block).await {
            self.events.emit(Event::Warning {
                message: format!("the shell command's output was not logged: {e}"),
            });
        }
    }

    /// The `Bash` call the command becomes.
    fn shell_call(
        &self,
        command: &str,
    ) -> (Option<std::sync::Arc<dyn crate::tools::Tool>>, ToolInput) {
        let mut input = ToolInput::new();
        input.insert("command".into(), command.into());
        input.insert("description".into(), "shell mode (!)".into());
        (self.tools.get("Bash"), input)
    }

    /// Why the command may not run: an empty one, a session without `Bash`,
    /// or a deny rule (which holds whoever typed the command). The mode and
    /// ask rules do not apply: the user is the one asking.
    fn shell_refusal(&self, command: &str) -> Option<String> {
        if command.is_empty() {
            return Some("nothing to run: type a command after `!`".into());
        }
        let (tool, input) = self.shell_call(command);
        let Some(tool) = tool else {
            return Some(
                "shell mode needs the Bash tool, which this session does not offer".into(),
            );
        };
        let mut policy = (*self.policy).clone();
        policy.mode = PermissionMode::BypassPermissions;
        match policy.decide(&self.tracker, "Bash", tool.effect(), &input, &self.ctx.cwd) {
            Decision::Deny(why) => Some(format!("not run: {why}")),
            Decision::Allow | Decision::Ask { .. } => None,
        }
    }
}
