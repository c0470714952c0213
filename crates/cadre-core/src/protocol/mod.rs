//! The protocol between the core and its front ends: the [`Event`]s the core
//! reports, the [`Op`]s a front end submits, approval questions and the
//! statuses of turns, children and tasks. It sits at the bottom of the core:
//! it depends on nothing in cadre but the model's usage counts, so every other
//! module can speak it without importing each other.

mod agent_id;
mod approval;
mod checkpoint;
mod command;
mod context_kinds;
mod event;
mod mode;
mod op;
#[cfg(test)]
mod schema_tests;
mod status;

pub use agent_id::AgentId;
pub use approval::{ApprovalAnswer, ApprovalQuestion, PendingApproval};
pub use checkpoint::{CheckpointInfo, RewindAction, SkipReason, SkippedFile};
pub use command::CommandEntry;
pub use context_kinds::{ContextCategory, ContextKind};
pub use event::{Event, EventSink, child_place};
pub use mode::{PermissionMode, RuleKind};
pub use op::Op;

/// The text of [`AgentId::MAIN`], the id of a session's top-level agent.
pub const MAIN_AGENT: &str = "main";
pub use status::{
    BoardTaskState, ChildCallOutcome, ChildStatus, ChildTag, CompactTrigger, HookDecision,
    HookEvent, McpStatus, TaskKind, TaskStatus, TeammateState, TurnStatus,
};
