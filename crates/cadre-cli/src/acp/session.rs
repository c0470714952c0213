//! One editor session: a cadre session driven through its handle, with a
//! task that turns its events into `session/update` notifications and its
//! questions into `session/request_permission` requests.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionNotification, StopReason, ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::{Client, Error};
use cadre_core::driver::{Lifetime, OpenedLog, SessionHandle};
use cadre_core::permissions::{ApprovalAnswer, ApprovalQuestion};
use cadre_core::protocol::{Event, EventSink, MAIN_AGENT, Op, TurnStatus};
use cadre_core::session::SessionLock;
use tokio::sync::{mpsc, oneshot};

use super::updates::{Translator, commands_update, kind_of};
use cadre_core::driver::SessionBuilder;

/// How a prompt's turn ended.
type TurnEnd = Result<StopReason, Error>;

/// An open editor session.
pub struct LiveSession {
    /// The session id (cadre's, also the editor's).
    pub id: String,
    /// What the session was built from.
    pub runtime: Arc<SessionBuilder>,
    /// The session's operations.
    handle: SessionHandle,
    /// Prompts waiting for their turn to end, oldest first.
    waiters: Arc<Mutex<VecDeque<oneshot::Sender<TurnEnd>>>>,
    /// This process's hold on the session's log.
    _lock: SessionLock,
}

impl LiveSession {
    /// Opens the session over `opened` and starts showing its events on
    /// `cx`; `replay` runs first, before any event of the new run.
    pub async fn open(
        runtime: Arc<SessionBuilder>,
        mut opened: OpenedLog,
        cx: ConnectionTo<Client>,
        child_sessions: bool,
        replay: Vec<SessionNotification>,
    ) -> anyhow::Result<Arc<LiveSession>> {
        let (sink, rx) = EventSink::channel();
        let sink = sink.with_transcripts();
        let (session, handle) = runtime
            .open_session(
                &opened.id,
                opened.log.clone(),
                std::mem::take(&mut opened.messages),
                runtime.warnings.clone(),
                sink,
                true,
                Lifetime::UntilShutdown,
            )
            .await?;
        for n in replay {
            let _ = cx.send_notification(n);
        }
        tokio::spawn(session.run());
        let live = Arc::new(LiveSession {
            id: opened.id.clone(),
            runtime: runtime.clone(),
            handle: handle.clone(),
            waiters: Arc::new(Mutex::new(VecDeque::new())),
            _lock: opened.lock,
        });
        let translator = Translator::new(&opened.id, &runtime.cwd, child_sessions);
        tokio::spawn(pump(
            rx,
            translator,
            cx,
            handle,
            live.waiters.clone(),
            runtime.clone(),
        ));
        Ok(live)
    }

    /// The slash-command menu, as a notification of this session.
    pub fn commands(&self) -> SessionNotification {
        command_menu(&self.id, &self.runtime)
    }

    /// Runs one prompt: its turn, and how it ended.
    pub async fn prompt(&self, text: String) -> TurnEnd {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut w) = self.waiters.lock() {
            w.push_back(tx);
        }
        if !self.handle.submit(Op::UserMessage { text }) {
            return Err(Error::internal_error().data("the session has ended"));
        }
        rx.await
            .unwrap_or_else(|_| Err(Error::internal_error().data("the session has ended")))
    }

    /// The teammate whose child session is `child` (`<session>/<agent id>`).
    pub fn teammate_at(&self, child: &str) -> Option<String> {
        let agent_id = child.strip_prefix(&format!("{}/", self.id))?;
        self.handle
            .teammates()
            .into_iter()
            .find(|m| m.agent_id == agent_id)
            .map(|m| m.name)
    }

    /// The editor's words to a teammate: its next input (it wakes if idle).
    pub fn message_teammate(&self, name: &str, text: String) -> bool {
        self.handle.submit(Op::MessageTeammate {
            name: name.to_string(),
            text,
        })
    }

    /// Stops a teammate's running turn (it stays in the team).
    pub fn interrupt_teammate(&self, name: &str) {
        self.handle.submit(Op::InterruptTeammate {
            name: name.to_string(),
        });
    }

    /// Stops the running turn and its foreground children.
    pub fn cancel(&self) {
        self.handle.submit(Op::Interrupt);
    }

    /// Switches the permission mode from the next request.
    pub fn set_mode(&self, mode: cadre_core::permissions::PermissionMode) {
        self.handle.submit(Op::SetMode { mode });
    }

    /// Ends the session (the editor went away).
    pub fn shutdown(&self) {
        self.handle.submit(Op::Shutdown);
    }
}

/// Shows a session's events until it ends, answering prompts' waits at the
/// ends of their turns and passing questions to the editor.
async fn pump(
    mut rx: mpsc::UnboundedReceiver<Event>,
    mut translator: Translator,
    cx: ConnectionTo<Client>,
    handle: SessionHandle,
    waiters: Arc<Mutex<VecDeque<oneshot::Sender<TurnEnd>>>>,
    runtime: Arc<SessionBuilder>,
) {
    let session_id = handle.session_id().to_string();
    // Whether the running turn of the main agent is a prompt's (and not
    // one the session started to announce finished tasks).
    let mut prompt_turn = false;
    while let Some(event) = rx.recv().await {
        match &event {
            Event::TurnStarted { agent, notices } if agent == MAIN_AGENT => {
                prompt_turn = !notices && waiters.lock().is_ok_and(|w| !w.is_empty());
            }
            Event::TurnEnded {
                agent,
                status,
                error,
                ..
            } if agent == MAIN_AGENT && std::mem::take(&mut prompt_turn) => {
                let end = match status {
                    TurnStatus::Completed => Ok(StopReason::EndTurn),
                    TurnStatus::Interrupted => Ok(StopReason::Cancelled),
                    TurnStatus::LimitReached => Ok(StopReason::MaxTurnRequests),
                    TurnStatus::Failed => Err(Error::internal_error()
                        .data(error.clone().unwrap_or_else(|| "the turn failed".into()))),
                };
                // Everything the turn showed goes out before its answer.
                for n in translator.translate(&event) {
                    let _ = cx.send_notification(n);
                }
                if let Some(waiter) = waiters.lock().ok().and_then(|mut w| w.pop_front()) {
                    let _ = waiter.send(end);
                }
                continue;
            }
            Event::ApprovalRequested { question, id } => {
                let session = translator.session_of(&question.agent);
                tokio::spawn(ask(
                    cx.clone(),
                    handle.clone(),
                    session,
                    question.clone(),
                    *id,
                ));
            }
            Event::Warning { message } => super::warn(message),
            // A server that is ready brings its prompts: the menu grows.
            Event::McpServerStatus {
                status: cadre_core::protocol::McpStatus::Ready,
                ..
            } => {
                let _ = cx.send_notification(command_menu(&session_id, &runtime));
            }
            _ => {}
        }
        for n in translator.translate(&event) {
            let _ = cx.send_notification(n);
        }
    }
    // The session is over: prompts still waiting get an error.
    if let Ok(mut w) = waiters.lock() {
        for waiter in w.drain(..) {
            let _ = waiter.send(Err(Error::internal_error().data("the session has ended")));
        }
    }
}

/// Skills, custom commands and the ready MCP servers' prompts, as the
/// session's slash-command menu.
fn command_menu(session_id: &str, runtime: &SessionBuilder) -> SessionNotification {
    let mut menu = runtime.skills.menu();
    menu.extend(runtime.mcp.prompt_commands().into_iter().map(|p| {
        cadre_core::protocol::CommandEntry {
            name: p.command,
            description: p.description,
            argument_hint: (!p.arguments.is_empty()).then(|| p.arguments.join(" ")),
            label: "mcp".into(),
        }
    }));
    SessionNotification::new(session_id.to_string(), commands_update(&menu))
}

/// Puts one question to the editor and gives the session its answer.
async fn ask(
    cx: ConnectionTo<Client>,
    handle: SessionHandle,
    session: String,
    question: ApprovalQuestion,
    id: u64,
) {
    let choices = Choices::for_question(&question);
    let call_id = question
        .call_id
        .clone()
        .unwrap_or_else(|| format!("question-{id}"));
    let title = match &question.label {
        Some(label) => format!("{label}: {} {}", question.tool, first_line(&question.input)),
        None => format!("{} {}", question.tool, first_line(&question.input)),
    };
    let fields = ToolCallUpdateFields::new()
        .title(title)
        .kind(kind_of(&question.tool))
        .raw_input(serde_json::json!({
            "input": question.input,
            "reason": question.reason,
            "sandbox": question.sandbox,
            "agent": question.agent,
        }));
    let request = RequestPermissionRequest::new(
        session,
        ToolCallUpdate::new(call_id, fields),
        choices.options.clone(),
    );
    let answer = match cx.send_request(request).block_task().await {
        Ok(response) => match response.outcome {
            RequestPermissionOutcome::Selected(selected) => {
                choices.answer(&selected.option_id.to_string())
            }
            _ => ApprovalAnswer::No,
        },
        Err(_) => ApprovalAnswer::No,
    };
    handle.submit(Op::ApprovalAnswer {
        id: Some(id),
        answer,
    });
}

/// The options offered for one question, and what each means.
struct Choices {
    /// As sent.
    options: Vec<PermissionOption>,
    /// Option id → answer.
    answers: Vec<(String, ApprovalAnswer)>,
}

impl Choices {
    /// Allow once, allow for the session (when a rule can say so) or
    /// reject; for the agent's own question, one option per choice.
    fn for_question(question: &ApprovalQuestion) -> Choices {
        let mut choices = Choices {
            options: Vec::new(),
            answers: Vec::new(),
        };
        if question.tool == cadre_core::tools::ask_user::ASK_USER_QUESTION {
            let asked: serde_json::Value =
                serde_json::from_str(&question.input).unwrap_or_default();
            let labels = asked
                .get("options")
                .and_then(|o| o.as_array())
                .map(|options| {
                    options
                        .iter()
                        .filter_map(|o| o.get(0).and_then(|l| l.as_str()).map(str::to_string))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            for (i, label) in labels.into_iter().enumerate() {
                choices.add(
                    &format!("choice-{i}"),
                    &label,
                    PermissionOptionKind::AllowOnce,
                    ApprovalAnswer::Instead(label.clone()),
                );
            }
            choices.add(
                "decline",
                "Decline to answer",
                PermissionOptionKind::RejectOnce,
                ApprovalAnswer::No,
            );
            return choices;
        }
        choices.add(
            "allow-once",
            "Allow",
            PermissionOptionKind::AllowOnce,
            ApprovalAnswer::Once,
        );
        if !question.session_rule.is_empty() {
            choices.add(
                "allow-always",
                &format!("Always allow {}", question.session_rule),
                PermissionOptionKind::AllowAlways,
                ApprovalAnswer::Session,
            );
        }
        choices.add(
            "reject-once",
            "Reject",
            PermissionOptionKind::RejectOnce,
            ApprovalAnswer::No,
        );
        choices
    }

    fn add(&mut self, id: &str, name: &str, kind: PermissionOptionKind, answer: ApprovalAnswer) {
        self.options.push(PermissionOption::new(
            id.to_string(),
            name.to_string(),
            kind,
        ));
        self.answers.push((id.to_string(), answer));
    }

    /// The answer an option id stands for (an unknown one is a no).
    fn answer(&self, option_id: &str) -> ApprovalAnswer {
        self.answers
            .iter()
            .find(|(id, _)| id == option_id)
            .map(|(_, a)| a.clone())
            .unwrap_or(ApprovalAnswer::No)
    }
}

/// The first line of a question's input, for its title.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut end = line.len().min(120);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_string()
}
