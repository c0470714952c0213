//! The session's approval source: a question becomes an `approval_requested`
//! event (the gate emits it) and waits for the `Op::ApprovalAnswer` that
//! names it, so whoever renders events can answer, whatever else it is doing.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use tokio::sync::watch;

use super::{OpenQuestion, SessionStatus};
use crate::permissions::ApprovalSource;
use crate::protocol::{ApprovalAnswer, ApprovalQuestion, PendingApproval};

/// Answers questions with the answers front ends submit as operations.
/// Questions come one at a time (the session's approval gate sees to it).
pub struct SessionApprovals {
    answers_questions: bool,
    pending: Mutex<Option<(u64, PendingApproval)>>,
    status: Arc<watch::Sender<SessionStatus>>,
}

impl SessionApprovals {
    /// A source whose questions are answered by operations when
    /// `answers_questions` (someone is there); otherwise every call that
    /// needs a question is denied without one.
    pub(super) fn new(answers_questions: bool, status: Arc<watch::Sender<SessionStatus>>) -> Self {
        SessionApprovals {
            answers_questions,
            pending: Mutex::new(None),
            status,
        }
    }

    /// Answers question `id` (or the open one, with no id). False when no
    /// such question is open: it was withdrawn or answered already.
    pub(super) fn answer(&self, id: Option<u64>, answer: ApprovalAnswer) -> bool {
        let taken = match self.pending.lock() {
            Ok(mut pending) => match pending.take() {
                Some((open, p)) if id.is_none_or(|id| id == open) => Some(p),
                other => {
                    *pending = other;
                    None
                }
            },
            Err(_) => None,
        };
        match taken {
            Some(p) => {
                p.answer(answer);
                true
            }
            None => false,
        }
    }

    /// Withdraws the open question, if it is still `id`.
    fn withdraw(&self, id: u64) {
        if let Ok(mut pending) = self.pending.lock()
            && pending.as_ref().is_some_and(|(open, _)| *open == id)
        {
            *pending = None;
        }
        self.status.send_modify(|s| {
            if s.question.as_ref().is_some_and(|q| q.id == id) {
                s.question = None;
            }
        });
    }
}

/// Withdraws a question whose asker stopped waiting (answered, interrupted).
struct Withdraw<'a>(&'a SessionApprovals, u64);

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.0.withdraw(self.1);
    }
}

impl ApprovalSource for SessionApprovals {
    fn can_ask(&self) -> bool {
        self.answers_questions
    }

    fn ask<'a>(&'a self, question: &'a ApprovalQuestion) -> BoxFuture<'a, ApprovalAnswer> {
        self.ask_numbered(0, question)
    }

    fn ask_numbered<'a>(
        &'a self,
        id: u64,
        question: &'a ApprovalQuestion,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(async move {
            let (pending, answer) = PendingApproval::new(question.clone());
            if let Ok(mut slot) = self.pending.lock() {
                *slot = Some((id, pending));
            }
            self.status.send_modify(|s| {
                s.question = Some(OpenQuestion {
                    id,
                    question: question.clone(),
                })
            });
            let _withdraw = Withdraw(self, id);
            // A front end that goes away without answering is a no.
            answer.await.unwrap_or(ApprovalAnswer::No)
        })
    }
}
