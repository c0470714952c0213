//! Subagents: definitions and where they come from, the `Agent` tool, and
//! running a reply's `Agent` calls as a batch of children. Tool filtering,
//! the permission ratchet and the report format each live in one file.

pub mod agent_tool;
pub mod builtin;
pub mod catalog;
pub mod definition;
pub mod filter;
pub mod memory;
pub mod ratchet;
pub mod report;
pub mod runtime;
pub mod spec;
pub mod transcript;
mod types;

pub use agent_tool::{AgentArgs, AgentTool, SendMessageTool, roster_reminder};
pub use report::{ChildReport, ChildStatus, Verdict};
pub use runtime::{
    BatchCall, BatchFailure, ChildTag, Parent, Spawner, SubagentRuntime, SubagentSettings,
    new_agent_id, settle_lost_worktree,
};
pub use spec::{ChildCall, ChildSpec, ParentView, session_tools};
pub use types::*;
