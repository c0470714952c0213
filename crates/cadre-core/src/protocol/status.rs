//! Statuses of turns, children and tasks, as the core reports them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// The model gave its final answer.
    Completed,
    /// The user interrupted it.
    Interrupted,
    /// A per-turn limit stopped it.
    LimitReached,
    /// A model or I/O error stopped it.
    Failed,
}

/// Why a conversation was compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompactTrigger {
    /// The context in use reached the threshold.
    Auto,
    /// The user asked (`/compact`).
    Manual,
    /// The provider refused a request as too long.
    LengthError,
}

impl CompactTrigger {
    /// The snake_case name used in events and logs.
    pub fn as_str(&self) -> &'static str {
        match self {
            CompactTrigger::Auto => "auto",
            CompactTrigger::Manual => "manual",
            CompactTrigger::LengthError => "length_error",
        }
    }
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChildStatus {
    /// Ended with a final answer.
    Completed,
    /// Ended by an error or a limit.
    Failed,
    /// Cancelled by an interrupt.
    Cancelled,
}

impl ChildStatus {
    /// The lower-case name shown in reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            ChildStatus::Completed => "completed",
            ChildStatus::Failed => "failed",
            ChildStatus::Cancelled => "cancelled",
        }
    }
}

/// Subagent events' payloads.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChildTag {
    /// 1-based position in the batch.
    pub index: usize,
    /// Batch size.
    pub total: usize,
    /// Definition name.
    pub agent_type: String,
    /// Child agent id.
    pub agent_id: super::AgentId,
}

/// Where a task is in its life. `queued`, `running` and `stopping` are active;
/// `succeeded`, `failed`, `cancelled` and `lost` are final, and final is final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// Created, not started yet.
    Queued,
    /// Doing its work.
    Running,
    /// Asked to stop; the owning process stops the work and records `cancelled`.
    Stopping,
    /// Finished with a result.
    Succeeded,
    /// Finished with an error.
    Failed,
    /// Stopped before it finished.
    Cancelled,
    /// Its cadre process ended while it was active.
    Lost,
}

impl TaskStatus {
    /// Every status, active ones first.
    pub const ALL: [TaskStatus; 7] = [
        TaskStatus::Queued,
        TaskStatus::Running,
        TaskStatus::Stopping,
        TaskStatus::Succeeded,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
        TaskStatus::Lost,
    ];

    /// The lowercase name stored in the table.
    pub fn as_str(&self) -> &'static str {
        match self {
            TaskStatus::Queued => "queued",
            TaskStatus::Running => "running",
            TaskStatus::Stopping => "stopping",
            TaskStatus::Succeeded => "succeeded",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Lost => "lost",
        }
    }

    /// The status named `s` (lowercase, as stored), if any.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Succeeded, failed, cancelled or lost: it never changes again.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            TaskStatus::Succeeded | TaskStatus::Failed | TaskStatus::Cancelled | TaskStatus::Lost
        )
    }

    /// Queued, running or stopping.
    pub fn is_active(&self) -> bool {
        !self.is_final()
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a teammate stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TeammateState {
    /// Running a turn.
    Working,
    /// Its turn ended; a message wakes it.
    Idle,
    /// Its last turn ended on an error; a message wakes it.
    Failed,
    /// Shut down or stopped; it takes no more messages.
    Ended,
}

impl TeammateState {
    /// The lowercase name stored in the table.
    pub fn as_str(&self) -> &'static str {
        match self {
            TeammateState::Working => "working",
            TeammateState::Idle => "idle",
            TeammateState::Failed => "failed",
            TeammateState::Ended => "ended",
        }
    }

    /// The state named `s` (as [`Self::as_str`] writes it).
    pub fn parse(s: &str) -> Option<TeammateState> {
        [
            TeammateState::Working,
            TeammateState::Idle,
            TeammateState::Failed,
            TeammateState::Ended,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
    }
}

/// Where a task of a team's board stands, as its events say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BoardTaskState {
    /// Not started.
    Pending,
    /// Claimed and being worked on.
    InProgress,
    /// Done.
    Completed,
    /// Removed from the board.
    Deleted,
}

/// What a task runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskKind {
    /// A subagent.
    Subagent,
    /// A shell command of the `Bash` tool.
    Bash,
}

impl TaskKind {
    /// The lowercase name stored in the table.
    pub fn as_str(&self) -> &'static str {
        match self {
            TaskKind::Subagent => "subagent",
            TaskKind::Bash => "bash",
        }
    }

    /// The kind named `s`, if any.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "subagent" => Some(TaskKind::Subagent),
            "bash" => Some(TaskKind::Bash),
            _ => None,
        }
    }
}

impl fmt::Display for TaskKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a hook run decided (`hook_ended`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookDecision {
    /// It allowed the call.
    Allow,
    /// It denied the call.
    Deny,
    /// It asked for the user's answer.
    Ask,
    /// It blocked what its event was about.
    Block,
    /// It stopped the agent.
    Stop,
    /// It decided nothing: things go on.
    Continue,
    /// It failed to start, failed, or its output could not be read.
    Error,
    /// It ran past its timeout.
    Timeout,
}

impl HookDecision {
    /// The name used in events and on screen.
    pub fn as_str(self) -> &'static str {
        match self {
            HookDecision::Allow => "allow",
            HookDecision::Deny => "deny",
            HookDecision::Ask => "ask",
            HookDecision::Block => "block",
            HookDecision::Stop => "stop",
            HookDecision::Continue => "continue",
            HookDecision::Error => "error",
            HookDecision::Timeout => "timeout",
        }
    }
}

impl fmt::Display for HookDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an MCP server's connection stands (`mcp_server_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpStatus {
    /// Connecting.
    Starting,
    /// Connected, its tools listed.
    Ready,
    /// It could not start.
    Failed,
    /// Closed by cadre.
    Closed,
}

impl McpStatus {
    /// The name used in events and on screen.
    pub fn as_str(self) -> &'static str {
        match self {
            McpStatus::Starting => "starting",
            McpStatus::Ready => "ready",
            McpStatus::Failed => "failed",
            McpStatus::Closed => "closed",
        }
    }
}

impl fmt::Display for McpStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a child's tool call ended, as its progress line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChildCallOutcome {
    /// It ran and succeeded.
    Completed,
    /// It ran and failed, or its arguments were wrong.
    Failed,
    /// A rule, the mode or a person refused it.
    Denied,
}

impl ChildCallOutcome {
    /// The name used in events and on screen.
    pub fn as_str(self) -> &'static str {
        match self {
            ChildCallOutcome::Completed => "completed",
            ChildCallOutcome::Failed => "failed",
            ChildCallOutcome::Denied => "denied",
        }
    }
}

impl fmt::Display for ChildCallOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The hook events cadre fires.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
pub enum HookEvent {
    /// A session starts (subject: "startup", "resume", "clear" or "compact").
    SessionStart,
    /// The user submitted a prompt.
    UserPromptSubmit,
    /// Before a tool call (subject: the tool name).
    PreToolUse,
    /// After a tool call (subject: the tool name).
    PostToolUse,
    /// The main agent is about to end its turn.
    Stop,
    /// A subagent starts (subject: its agent type).
    SubagentStart,
    /// A subagent is about to end (subject: its agent type).
    SubagentStop,
    /// Before the conversation is compacted (subject: "manual" or "auto").
    PreCompact,
    /// The session ends.
    SessionEnd,
    /// A notification is shown to the user (subject: its type).
    Notification,
    /// A task was created on the team's board (no matcher).
    TaskCreated,
    /// A board task is being completed, or a teammate's turn ends with
    /// tasks in progress (no matcher).
    TaskCompleted,
    /// A teammate is about to go idle (no matcher).
    TeammateIdle,
}

impl HookEvent {
    /// Every event, in the order Claude Code documents them.
    pub const ALL: [HookEvent; 13] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::Stop,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::SessionEnd,
        HookEvent::Notification,
        HookEvent::TaskCreated,
        HookEvent::TaskCompleted,
        HookEvent::TeammateIdle,
    ];

    /// The event's name as written in configuration and `hook_event_name`.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::Notification => "Notification",
            HookEvent::TaskCreated => "TaskCreated",
            HookEvent::TaskCompleted => "TaskCompleted",
            HookEvent::TeammateIdle => "TeammateIdle",
        }
    }

    /// The event named exactly `name` (case matters, as in Claude Code).
    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Whether a hook can block at this event (exit 2 or `decision:
    /// "block"`). For `PostToolUse` the tool has run already; the reason
    /// still goes to the model.
    pub fn can_block(self) -> bool {
        matches!(
            self,
            HookEvent::UserPromptSubmit
                | HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::Stop
                | HookEvent::SubagentStop
                | HookEvent::PreCompact
                | HookEvent::TaskCreated
                | HookEvent::TaskCompleted
                | HookEvent::TeammateIdle
        )
    }

    /// Whether plain (non-JSON) stdout of a successful hook becomes context
    /// for the model at this event.
    pub fn plain_stdout_is_context(self) -> bool {
        matches!(self, HookEvent::SessionStart | HookEvent::UserPromptSubmit)
    }
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
