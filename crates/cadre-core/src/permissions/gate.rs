//! The approval gate: one per session, shared by every agent in it. Questions
//! are asked one at a time; who answers (a terminal, a UI, nobody) is the
//! front end's `ApprovalSource`.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::protocol::{ApprovalAnswer, ApprovalQuestion, Event, EventSink, PermissionMode};

/// Whoever answers approval questions for a front end.
pub trait ApprovalSource: Send + Sync {
    /// False when nobody can answer (headless); calls needing a question are then denied.
    fn can_ask(&self) -> bool;
    /// Asks one question and waits for the answer.
    fn ask<'a>(&'a self, question: &'a ApprovalQuestion) -> BoxFuture<'a, ApprovalAnswer>;
    /// Asks question `id`, the id its `ApprovalRequested` event carries (a
    /// source answered through operations matches answers by it); by default `ask`.
    fn ask_numbered<'a>(
        &'a self,
        id: u64,
        question: &'a ApprovalQuestion,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        let _ = id;
        self.ask(question)
    }
    /// What the agent is told when `question` cannot be asked (`can_ask` is
    /// false) under `mode`; by default [`HEADLESS_DENIAL`]. A front end whose
    /// caller confirms calls itself (an MCP client) says what to allow instead.
    fn refusal(&self, question: &ApprovalQuestion, mode: PermissionMode) -> String {
        let _ = (question, mode);
        HEADLESS_DENIAL.to_string()
    }
}

/// Nobody is there: every question is denied.
#[derive(Debug, Default)]
pub struct Headless;

impl ApprovalSource for Headless {
    fn can_ask(&self) -> bool {
        false
    }
    fn ask<'a>(&'a self, _q: &'a ApprovalQuestion) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(async { ApprovalAnswer::No })
    }
}

/// What the model is told when a question could not be asked.
pub const HEADLESS_DENIAL: &str =
    "denied: no one can approve this in a headless run; allow it with --allow or a permission mode";

/// Serialises questions from every agent of a session.
pub struct ApprovalGate {
    source: Arc<dyn ApprovalSource>,
    turn: tokio::sync::Mutex<()>,
    events: EventSink,
    /// The id of the next question (1-based; 0 means "no id" on the wire).
    next_id: std::sync::atomic::AtomicU64,
}

impl ApprovalGate {
    /// A gate over `source`, reporting questions and answers to `events`.
    pub fn new(source: Arc<dyn ApprovalSource>, events: EventSink) -> Self {
        ApprovalGate {
            source,
            turn: tokio::sync::Mutex::new(()),
            events,
            next_id: std::sync::atomic::AtomicU64::new(1),
        }
    }

    /// True when someone can answer.
    pub fn can_ask(&self) -> bool {
        self.source.can_ask()
    }

    /// The denial for `question` when nobody can answer it (see [`ApprovalSource::refusal`]).
    pub fn refusal(&self, question: &ApprovalQuestion, mode: PermissionMode) -> String {
        self.source.refusal(question, mode)
    }

    /// Asks `question` once every earlier question is answered. An interrupt
    /// while waiting (or asking) is a no.
    #[expect(
        clippy::await_holding_invalid_type,
        reason = "by design: the turn is held while a person answers, so questions come one at a time"
    )]
    pub async fn ask(
        &self,
        question: ApprovalQuestion,
        cancel: &CancellationToken,
    ) -> ApprovalAnswer {
        if !self.source.can_ask() {
            return ApprovalAnswer::No;
        }
        let _turn = tokio::select! {
            g = self.turn.lock() => g,
            _ = cancel.cancelled() => return ApprovalAnswer::No,
        };
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.events.emit(Event::ApprovalRequested {
            question: question.clone(),
            id,
        });
        let answer = tokio::select! {
            a = self.source.ask_numbered(id, &question) => a,
            _ = cancel.cancelled() => ApprovalAnswer::No,
        };
        self.events.emit(Event::ApprovalAnswered {
            agent: question.agent.clone(),
            tool: question.tool.clone(),
            answer: answer.clone(),
        });
        answer
    }
}
