//! Approval questions put to the user and their answers.

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

/// The answer to one question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalAnswer {
    /// Run this call.
    Once,
    /// Run it, and allow calls matching the offered rule for the rest of the session (this agent only).
    Session,
    /// Don't run it.
    No,
    /// Don't run it, and tell the model what to do instead (`{"instead": "…"}`).
    Instead(String),
}

/// What the user is asked.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ApprovalQuestion {
    /// Agent id.
    pub agent: super::AgentId,
    /// `Subagent: …` label for a child's question; none for the main agent.
    pub label: Option<String>,
    /// Canonical tool name.
    pub tool: String,
    /// The call it is about, when it is about one (a hook's or a skill's
    /// question is not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The arguments exactly as they will run (pretty JSON, or the command for Bash).
    pub input: String,
    /// Why it asks.
    pub reason: String,
    /// For `Bash`: how it would be sandboxed.
    pub sandbox: Option<String>,
    /// The rule a "yes for the session" adds.
    pub session_rule: String,
}

/// A question on its way to a front end, with the channel its answer goes back on.
/// Dropping it unanswered is a "no".
#[derive(Debug)]
pub struct PendingApproval {
    /// The question.
    pub question: ApprovalQuestion,
    /// Where the answer goes.
    pub reply: oneshot::Sender<ApprovalAnswer>,
}

impl PendingApproval {
    /// A question and the receiver its answer arrives on.
    pub fn new(question: ApprovalQuestion) -> (PendingApproval, oneshot::Receiver<ApprovalAnswer>) {
        let (reply, rx) = oneshot::channel();
        (PendingApproval { question, reply }, rx)
    }

    /// Sends the answer; a front end that lost interest is ignored.
    pub fn answer(self, answer: ApprovalAnswer) {
        let _ = self.reply.send(answer);
    }
}
