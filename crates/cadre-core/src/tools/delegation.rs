//! How `Agent` and `SendMessage` reach the subagent runtime: through a trait
//! in the tool context, defined here and implemented by the runtime, so that
//! neither the tools nor the agent loop depend on the runtime.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::{ToolInput, ToolOutput, ToolRegistry};
use crate::model::{ModelClient, ModelRequest};
use crate::protocol::PermissionMode;

/// The agent whose calls start children, as a batch of them sees it; the
/// agent loop sets it in the context of every batch.
#[derive(Clone)]
pub struct Caller {
    /// Its agent id (its children are filed under it).
    pub agent_id: String,
    /// Its tools, exactly (a fork gets the same list).
    pub tools: ToolRegistry,
    /// Its last request (a fork's first request starts from it, byte for byte).
    pub last_request: Option<Arc<ModelRequest>>,
    /// Its model client (children inherit the model by default).
    pub client: ModelClient,
    /// Its permission mode (the ratchet's starting point).
    pub mode: PermissionMode,
    /// Its layers of tool rules (`tools: Bash(git:*)`), which its children keep.
    pub tool_rules: Vec<Vec<crate::permissions::rules::Rule>>,
    /// True for a fork, which never starts children.
    pub fork: bool,
    /// Its event sink: its children's sinks hang under it, so their
    /// progress says whose children they are.
    pub events: crate::protocol::EventSink,
    /// Its folder, project root and sandbox, which its children start from
    /// (a child in a worktree has its children work there too).
    pub place: AgentPlace,
}

/// Where an agent works: its folder, the root its file tools count as the
/// project, and its `Bash` sandbox.
#[derive(Clone)]
pub struct AgentPlace {
    /// Its working folder.
    pub cwd: std::path::PathBuf,
    /// Its project root (canonical).
    pub project_dir: std::path::PathBuf,
    /// Its sandbox, if commands are sandboxed.
    pub sandbox: Option<Arc<crate::sandbox::SandboxPolicy>>,
}

/// One call of a batch handed to [`Delegation::spawn`].
pub struct SpawnCall {
    /// 1-based position among the reply's calls of the tool.
    pub index: usize,
    /// The arguments the permission policy decided on.
    pub input: ToolInput,
}

/// The first line of the roster reminder (after `<system-reminder>`).
pub const ROSTER_HEADER: &str = "Agent types available to the Agent tool (subagent_type):";

/// Where an agent stands in the subagent runtime: what it may start and
/// whom it may message. One per agent that has `Agent` or `SendMessage`.
pub trait Delegation: Send + Sync {
    /// The agent type a call naming none runs.
    fn default_type(&self) -> String;
    /// Whether `count` more children fit this agent's per-turn cap; `Err`
    /// holds the denial the model sees (nothing of the batch is started).
    fn check_turn_cap(&self, count: usize) -> Result<(), String>;
    /// Starts a batch of children; results come back in the order of
    /// `calls`. `Err`: a child's log could not be written; the turn stops.
    fn spawn<'a>(
        &'a self,
        caller: &'a Caller,
        calls: Vec<SpawnCall>,
        total: usize,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<ToolOutput>, String>>;
    /// `SendMessage` from `owner` to a child it started.
    fn send_message<'a>(
        &'a self,
        owner: &'a str,
        input: &'a ToolInput,
    ) -> BoxFuture<'a, ToolOutput>;
    /// The reminder listing the agent types this agent may start.
    fn roster(&self) -> Option<String>;
    /// A new turn of this agent begins (the per-turn count restarts).
    fn turn_started(&self);
    /// This agent's turn is about to end: returns once the ends of the
    /// children it started are filed, so their tasks end before the turn.
    fn turn_ending(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    /// Moves the foreground batch now running (if any) to the background.
    fn background_now(&self);
    /// Starts again the teammates a resumed session had (nothing without a team).
    fn resume_team(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
