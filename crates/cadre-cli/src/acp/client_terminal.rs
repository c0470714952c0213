//! The editor's terminals (`terminal/*`) for `Bash`'s foreground commands
//! in a session whose editor offers them: the command shows live in the
//! call, and its timeout and the turn's interrupt are cadre's to enforce
//! (wait, then kill, read the output, release).

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, EnvVariable, KillTerminalRequest, ReleaseTerminalRequest,
    SessionNotification, SessionUpdate, Terminal, TerminalOutputRequest, ToolCallContent,
    ToolCallUpdate, ToolCallUpdateFields, WaitForTerminalExitRequest,
};
use cadre_core::protocol::MAIN_AGENT;
use cadre_core::tools::{EditorTerminal, TerminalCall, TerminalRun};
use futures::future::BoxFuture;

/// One session's terminals in its editor.
pub struct ClientTerminal {
    /// The connection to the editor.
    pub cx: ConnectionTo<Client>,
    /// The main session's id.
    pub session_id: String,
    /// Children are child sessions (their calls are shown there).
    pub child_sessions: bool,
}

impl ClientTerminal {
    /// The session an agent's calls are shown in.
    fn session_of(&self, agent: &str) -> String {
        if self.child_sessions && agent != MAIN_AGENT {
            super::updates::child_session_id(&self.session_id, agent)
        } else {
            self.session_id.clone()
        }
    }
}

impl EditorTerminal for ClientTerminal {
    fn run<'a>(&'a self, call: TerminalCall<'a>) -> BoxFuture<'a, Result<TerminalRun, String>> {
        Box::pin(async move {
            let session = self.session_of(call.agent_id);
            let env = call
                .env
                .iter()
                .map(|(k, v)| EnvVariable::new(k.clone(), v.clone()))
                .collect();
            let create = CreateTerminalRequest::new(session.clone(), call.program.clone())
                .args(call.args.clone())
                .env(env)
                .cwd(call.cwd.to_path_buf())
                .output_byte_limit(call.output_limit as u64);
            let id = self
                .cx
                .send_request(create)
                .block_task()
                .await
                .map_err(|e| format!("the editor could not start a terminal: {e}"))?
                .terminal_id;
            if let Some(call_id) = call.call_id {
                let fields = ToolCallUpdateFields::new()
                    .content(vec![ToolCallContent::Terminal(Terminal::new(id.clone()))]);
                let _ = self.cx.send_notification(SessionNotification::new(
                    session.clone(),
                    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id.to_string(), fields)),
                ));
            }
            let wait = self
                .cx
                .send_request(WaitForTerminalExitRequest::new(session.clone(), id.clone()))
                .block_task();
            let mut run = TerminalRun::default();
            tokio::select! {
                exited = wait => {
                    if let Ok(exit) = exited {
                        run.exit_code = exit.exit_status.exit_code;
                        run.signal = exit.exit_status.signal;
                    }
                }
                _ = tokio::time::sleep(call.timeout) => run.timed_out = true,
                _ = call.cancel.cancelled() => run.cancelled = true,
            }
            if run.timed_out || run.cancelled {
                let _ = self
                    .cx
                    .send_request(KillTerminalRequest::new(session.clone(), id.clone()))
                    .block_task()
                    .await;
            }
            let output = self
                .cx
                .send_request(TerminalOutputRequest::new(session.clone(), id.clone()))
                .block_task()
                .await;
            // Every terminal is released, whatever happened before.
            let _ = self
                .cx
                .send_request(ReleaseTerminalRequest::new(session, id))
                .block_task()
                .await;
            let output =
                output.map_err(|e| format!("the editor lost the terminal's output: {e}"))?;
            run.output = output.output;
            run.truncated = output.truncated;
            if let Some(status) = output.exit_status
                && run.exit_code.is_none()
                && run.signal.is_none()
                && !run.timed_out
                && !run.cancelled
            {
                run.exit_code = status.exit_code;
                run.signal = status.signal;
            }
            Ok(run)
        })
    }
}
