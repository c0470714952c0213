//! The agent loop: send the conversation, stream the reply, run the tools it
//! asks for, and loop until the model answers without tools. Which tools exist
//! is the registry's business; what the user sees is the front end's.
//!
//! Here: what an agent is made of. `turn`: one turn, request by request;
//! `dispatch`: a reply's tool calls scheduled and run; `permission`: the
//! policy's decision and the question it may ask; `compact`: the context in
//! use and its compaction.

mod breakdown;
mod compact;
mod dispatch;
mod hooks;
mod invoke;
mod permission;
mod prompt;
mod repeats;
mod rewind;
mod shell;
mod summary;
mod turn;

pub use hooks::board_verdict;
pub use rewind::RewindError;

use std::sync::Arc;

use crate::protocol::TeammateState;
pub use crate::protocol::{Event, EventSink, TurnStatus};
pub use prompt::{
    CODING_INSTRUCTIONS, COMPACT_CODING_INSTRUCTIONS, ProjectContext, SystemPromptParts,
    build_styled_system_prompt, build_system_prompt, environment_facts, main_prompt_from,
    project_instructions, read_project_instructions,
};

pub use compact::CompactError;
pub use summary::argument_summary;

use crate::context::{ContextPolicy, Cost};
use crate::model::{ContentBlock, Message, ModelClient, ModelError, ModelRequest, Role, Usage};
use crate::permissions::{
    ApprovalGate, ModeSwitch, PermissionMode, PermissionPolicy, PermissionTracker,
};
use crate::session::{RecordBody, SessionLog};
use crate::tools::{Delegation, ToolContext, ToolRegistry};

/// Per-turn ceilings that stop a runaway loop. The defaults are far above what
/// real work needs and well below what would burn a budget unnoticed.
#[derive(Debug, Clone, Copy)]
pub struct TurnLimits {
    /// Model requests per turn.
    pub max_requests: u32,
    /// Tool calls per turn.
    pub max_tool_calls: u32,
}

impl Default for TurnLimits {
    fn default() -> Self {
        TurnLimits {
            max_requests: 500,
            max_tool_calls: 1000,
        }
    }
}

/// How a turn ended, for the caller.
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// How it ended.
    pub status: TurnStatus,
    /// The last assistant text of the turn.
    pub final_text: String,
    /// Why it did not complete.
    pub error: Option<String>,
    /// The model error that ended it, if one did.
    pub model_error: Option<ModelError>,
    /// Set when the turn stopped because its log could not be written.
    pub log_error: Option<String>,
    /// Model requests made.
    pub requests: u32,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Tokens used in the turn.
    pub usage: Usage,
    /// What the turn cost, when the model's prices are known.
    pub cost: Option<Cost>,
    /// Times the conversation was compacted during the turn.
    pub compactions: u32,
}

impl TurnOutcome {
    /// An outcome with nothing done yet.
    pub(crate) fn empty(status: TurnStatus) -> TurnOutcome {
        TurnOutcome {
            status,
            final_text: String::new(),
            error: None,
            model_error: None,
            log_error: None,
            requests: 0,
            tool_calls: 0,
            usage: Usage::default(),
            cost: None,
            compactions: 0,
        }
    }

    /// This outcome, failed because the log could not be written (`e`).
    pub(crate) fn failed_on_log(mut self, e: String) -> TurnOutcome {
        self.status = TurnStatus::Failed;
        self.error = Some(e.clone());
        self.log_error = Some(e);
        self
    }
}

/// Everything an agent is made of; shared parts are `Arc`s. Kept by the
/// runtime so a finished child can be resumed as it was made.
#[derive(Clone)]
pub struct AgentSetup {
    /// Agent id (`main` for the top-level agent).
    pub id: String,
    /// `Subagent: …` label shown on this agent's questions; none for the main agent.
    pub label: Option<String>,
    /// Model client (shared).
    pub client: ModelClient,
    /// Tools this agent may call.
    pub tools: ToolRegistry,
    /// Tool context (own file cache and todos).
    pub ctx: ToolContext,
    /// System prompt.
    pub system: String,
    /// Per-turn ceilings.
    pub limits: TurnLimits,
    /// Where events go.
    pub events: EventSink,
    /// Session permission settings (shared).
    pub policy: Arc<PermissionPolicy>,
    /// The session's approval gate (shared).
    pub gate: Arc<ApprovalGate>,
    /// The log this agent appends to, if any.
    pub log: Option<Arc<SessionLog>>,
    /// The model's window and prices, and when to compact.
    pub context: ContextPolicy,
    /// The hooks this agent fires (none configured: `None`).
    pub hooks: Option<crate::hooks::AgentHooks>,
    /// The reasoning effort its requests ask for (a definition's `effort`).
    pub effort: Option<String>,
}

/// One agent: a conversation with a model, its tools, and its own state.
pub struct Agent {
    id: crate::protocol::AgentId,
    label: Option<String>,
    client: ModelClient,
    tools: ToolRegistry,
    ctx: ToolContext,
    system: String,
    conversation: Vec<Message>,
    limits: TurnLimits,
    events: EventSink,
    usage: Usage,
    policy: Arc<PermissionPolicy>,
    tracker: PermissionTracker,
    gate: Arc<ApprovalGate>,
    log: Option<Arc<SessionLog>>,
    /// The next turn's opening records go to the log writer without a wait
    /// (a batch child's first turn: its log file is still being made).
    opening_unawaited: bool,
    source: QuerySource,
    cache_after: Option<usize>,
    last_request: Option<Arc<ModelRequest>>,
    inbox: Option<tokio::sync::mpsc::UnboundedReceiver<String>>,
    replies_since_reminder: u32,
    context: ContextPolicy,
    /// Tokens in use as of the last reply (the provider's count) or the last
    /// compaction (an estimate), and how many messages that count covers.
    counted: Option<(u64, usize)>,
    /// Estimated tokens of the system prompt and the tool list.
    fixed_tokens: Option<u64>,
    /// The fixed part of a request by category, for `/context` (made with `fixed_tokens`).
    fixed_parts: Option<Vec<crate::protocol::ContextCategory>>,
    compactions: u32,
    cost: Cost,
    mode_switch: Arc<ModeSwitch>,
    /// Whether the session started in `bypassPermissions` (only then may it go back to it).
    bypass_allowed: bool,
    hooks: Option<crate::hooks::AgentHooks>,
    /// Hook context (SessionStart's) for the next turn's first message.
    pending_context: Vec<String>,
    /// Image files the user attached to their next message (pasted, dropped).
    pending_images: Vec<std::path::PathBuf>,
    effort: Option<String>,
    /// The session's MCP servers, whose tools this agent's list follows.
    mcp: Option<Arc<crate::mcp::McpHub>>,
    /// The hub's generation this agent's MCP tools were taken at.
    mcp_seen: Option<u64>,
    /// Bytes at the end of `system` that are the output style's text: later
    /// sections go before it, so the style stays last.
    style_tail: usize,
    /// Which of the servers' tools this agent takes (`--agent`'s `tools`).
    mcp_keep: Option<crate::mcp::McpToolFilter>,
    /// The task row this agent's progress goes to as it runs (a child's), so
    /// the task list is current while it runs, in the background too.
    progress_task: Option<String>,
    /// The session's skills and commands, for messages that start with `/name`.
    commands: Option<Arc<crate::skills::SkillSet>>,
    /// The session's id, for `${CLAUDE_SESSION_ID}`.
    session_id: String,
    /// The schema the final answer must match (`--json-schema`).
    answer_schema: Option<Arc<crate::structured::AnswerSchema>>,
}

/// Assistant replies between reminders of unread finished tasks.
const UNREAD_REMINDER_EVERY: u32 = 15;

/// Who an agent's requests are for: decides, among other things, that a fork
/// never forks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuerySource {
    /// The user's own agent.
    Main,
    /// A child made from a definition.
    Subagent,
    /// A child forked from its parent's conversation.
    Fork,
}

/// The tag that wraps a fork's directive; finding it in a conversation marks
/// the agent as a fork even when its query source was lost.
pub const FORK_TAG: &str = "<fork_boilerplate>";

/// A tool call that could not be logged: the turn must stop.
struct LogFailure(String);

impl Agent {
    /// A new agent with an empty conversation and its own permission tracker.
    pub fn new(setup: AgentSetup) -> Self {
        let bypass_allowed = setup.policy.mode == PermissionMode::BypassPermissions;
        Agent {
            id: setup.id.into(),
            label: setup.label,
            client: setup.client,
            tools: setup.tools,
            ctx: setup.ctx,
            system: setup.system,
            conversation: Vec::new(),
            limits: setup.limits,
            events: setup.events,
            usage: Usage::default(),
            policy: setup.policy,
            tracker: PermissionTracker::default(),
            gate: setup.gate,
            log: setup.log,
            opening_unawaited: false,
            source: QuerySource::Main,
            cache_after: None,
            last_request: None,
            inbox: None,
            replies_since_reminder: 0,
            context: setup.context,
            counted: None,
            fixed_tokens: None,
            fixed_parts: None,
            compactions: 0,
            cost: Cost::default(),
            mode_switch: Arc::default(),
            bypass_allowed,
            hooks: setup.hooks,
            pending_context: Vec::new(),
            pending_images: Vec::new(),
            effort: setup.effort,
            mcp: None,
            mcp_seen: None,
            style_tail: 0,
            mcp_keep: None,
            progress_task: None,
            commands: None,
            session_id: String::new(),
            answer_schema: None,
        }
    }

    /// Makes this agent's final answers JSON valid under `schema`: its
    /// system prompt says so, and a reply that is not is sent back.
    pub fn with_answer_schema(
        mut self,
        schema: Option<Arc<crate::structured::AnswerSchema>>,
    ) -> Self {
        if let Some(s) = &schema {
            self.system.push_str("\n\n");
            self.system.push_str(&s.instruction());
        }
        self.answer_schema = schema;
        self
    }

    /// Appends an output style's text to the end of this agent's system
    /// prompt (the main session's only; see [`crate::output_styles`]).
    pub fn with_output_style(mut self, text: Option<&str>) -> Self {
        if let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) {
            let before = self.system.len();
            self.system.push_str("\n\n");
            self.system.push_str(text);
            self.style_tail = self.system.len() - before;
        }
        self
    }

    /// Gives this agent the tools of the session's MCP servers that `keep`
    /// lets through (all of them without one): before each request its list
    /// follows the servers that are ready and the tools they list now.
    pub fn with_mcp(
        mut self,
        hub: Option<Arc<crate::mcp::McpHub>>,
        keep: Option<crate::mcp::McpToolFilter>,
    ) -> Self {
        self.mcp = hub.filter(|h| !h.is_empty());
        self.mcp_keep = keep;
        self
    }

    /// Where the user's mode changes for this agent are asked for.
    pub fn mode_switch(&self) -> Arc<ModeSwitch> {
        self.mode_switch.clone()
    }

    /// The permission mode in force.
    pub fn mode(&self) -> PermissionMode {
        self.policy.mode
    }

    /// Takes a mode change asked for since the last step, if any: the policy
    /// this agent decides with (and its tools see) gets the new mode.
    pub fn apply_mode_switch(&mut self) {
        let Some(mode) = self.mode_switch.take() else {
            return;
        };
        if mode == self.policy.mode {
            return;
        }
        // A session the user started stricter cannot be switched to
        // everything-runs from inside it.
        if mode == PermissionMode::BypassPermissions && !self.bypass_allowed {
            self.events.emit(Event::Warning {
                message: "bypassPermissions can only be chosen when the session starts (--permission-mode bypassPermissions); the mode is unchanged".into(),
            });
            return;
        }
        let mut policy = (*self.policy).clone();
        policy.mode = mode;
        let policy = Arc::new(policy);
        if self.ctx.policy.is_some() {
            self.ctx.policy = Some(policy.clone());
        }
        self.policy = policy;
        self.events.emit(Event::ModeChanged {
            agent: self.id.clone(),
            mode,
        });
    }

    /// Records this agent's tool calls and tokens in task `task_id` after
    /// each round of tool calls.
    pub fn record_progress_in(&mut self, task_id: String) {
        self.progress_task = Some(task_id);
    }

    /// Writes the turn's tool calls and the tokens so far to the task row.
    pub(crate) async fn record_progress(&self, tool_calls: u32) {
        if let (Some(task), Some(work)) = (&self.progress_task, &self.ctx.background) {
            let _ = work
                .table()
                .progress(task, u64::from(tool_calls), self.usage.total())
                .await;
        }
    }

    /// Messages sent to this agent while it runs join its next request.
    pub fn set_inbox(&mut self, inbox: tokio::sync::mpsc::UnboundedReceiver<String>) {
        self.inbox = Some(inbox);
    }

    /// Marks where this agent's requests come from.
    pub fn with_source(mut self, source: QuerySource) -> Self {
        self.source = source;
        self
    }

    /// Adds a prompt-cache breakpoint after message `index` of every request.
    pub fn with_cache_after(mut self, index: Option<usize>) -> Self {
        self.cache_after = index;
        self
    }

    /// The last request this agent sent (a fork starts from it, byte for byte).
    pub fn last_request(&self) -> Option<&ModelRequest> {
        self.last_request.as_deref()
    }

    /// True for a fork: by query source, or by the fork tag in its
    /// conversation when that marker was lost (e.g. after a resume).
    pub fn is_fork(&self) -> bool {
        self.source == QuerySource::Fork
            || self.conversation.iter().any(|m| {
                m.role == Role::User
                    && m.content.iter().any(
                        |b| matches!(b, ContentBlock::Text { text } if text.contains(FORK_TAG)),
                    )
            })
    }

    /// Gives this agent its place in the subagent runtime, which its
    /// `Agent` and `SendMessage` calls reach through the tool context.
    pub fn with_delegation(mut self, delegation: Option<Arc<dyn Delegation>>) -> Self {
        self.ctx.delegation = delegation;
        self
    }

    /// This agent's place in the subagent runtime, if it has one.
    pub fn delegation(&self) -> Option<Arc<dyn Delegation>> {
        self.ctx.delegation.clone()
    }

    /// The model this agent talks to.
    pub fn model(&self) -> &str {
        &self.client.config().model
    }

    /// Sets the log this agent appends to.
    pub fn set_log(&mut self, log: Arc<SessionLog>) {
        self.log = Some(log);
    }

    /// Sets a new child's log, whose file the log writer makes while the
    /// child sends its first request: that turn's opening records (its
    /// prompt) are handed over without a wait, and its first awaited write
    /// reports a file that could not be made.
    pub fn set_log_being_made(&mut self, log: Arc<SessionLog>) {
        self.log = Some(log);
        self.opening_unawaited = true;
    }

    /// True when finished background tasks of this agent wait to be announced.
    pub fn has_notices(&self) -> bool {
        self.ctx
            .background
            .as_ref()
            .is_some_and(|w| w.has_finished(&self.id))
            || self
                .ctx
                .team
                .as_ref()
                .is_some_and(|seat| seat.team.has_mail(&seat.name))
    }

    /// Background tasks this agent started that are still running.
    pub fn active_tasks(&self) -> usize {
        let Some(work) = self.ctx.background.as_ref() else {
            return 0;
        };
        let active = work.active_for(&self.id);
        // A resting teammate's task stays open, but nothing runs there
        // until a message wakes it, or its own background work ends.
        match &self.ctx.team {
            Some(seat) if seat.is_lead() => {
                let resting = seat
                    .team
                    .teammates()
                    .iter()
                    .filter(|m| {
                        matches!(m.state, TeammateState::Idle | TeammateState::Failed)
                            && work.active_for(&m.agent_id) == 0
                            && !work.has_finished(&m.agent_id)
                    })
                    .count();
                active.saturating_sub(resting)
            }
            _ => active,
        }
    }

    /// Replaces the conversation (used when resuming from a log).
    pub fn restore(&mut self, messages: Vec<Message>) {
        self.conversation = messages;
        // A resumed session's log says what the live one had counted, so
        // this agent compacts when the live one would have (not earlier,
        // from an estimate of the whole conversation).
        self.counted = self
            .log
            .as_ref()
            .and_then(|log| log.counted())
            .filter(|(_, upto)| *upto <= self.conversation.len());
        // Before the first reply the front end knows a resumed or inherited
        // conversation's context from an estimate.
        if !self.conversation.is_empty() {
            let estimate = self.context_in_use();
            self.report_context(estimate, true);
        }
    }

    /// Appends a record to this agent's log and waits until the OS has it
    /// (the write itself is made off the runtime's thread).
    async fn write_log(&self, body: RecordBody) -> Result<(), LogFailure> {
        match &self.log {
            Some(log) => log
                .append(body)
                .await
                .map_err(|e| LogFailure(e.to_string())),
            None => Ok(()),
        }
    }

    /// A turn's opening record (before its first request): awaited, or
    /// handed over without a wait when `unawaited`.
    async fn log_opening(&self, body: RecordBody, unawaited: bool) -> Result<(), LogFailure> {
        if unawaited {
            self.write_log_unawaited(body)
        } else {
            self.write_log(body).await
        }
    }

    /// Hands a record to this agent's log without waiting for it to be
    /// written; a failure is reported by the next record written.
    fn write_log_unawaited(&self, body: RecordBody) -> Result<(), LogFailure> {
        match &self.log {
            Some(log) => log
                .append_unawaited(body)
                .map_err(|e| LogFailure(e.to_string())),
            None => Ok(()),
        }
    }

    /// Waits until every record handed to this agent's log so far is
    /// written; a failure of any of them is reported.
    async fn log_written(&self) -> Result<(), LogFailure> {
        match &self.log {
            Some(log) => log.written().await.map_err(|e| LogFailure(e.to_string())),
            None => Ok(()),
        }
    }

    /// The agent's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The conversation so far.
    pub fn conversation(&self) -> &[Message] {
        &self.conversation
    }

    /// Tokens used over the agent's life.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// What the agent's requests cost over its life, when its model's prices are known.
    pub fn cost(&self) -> Option<Cost> {
        self.context.profile.prices.map(|_| self.cost)
    }

    /// Times the conversation was compacted over the agent's life.
    pub fn compactions(&self) -> u32 {
        self.compactions
    }

    /// How this agent keeps its conversation inside the window.
    pub fn context_policy(&self) -> &ContextPolicy {
        &self.context
    }

    /// The system prompt.
    pub fn system_prompt(&self) -> &str {
        &self.system
    }
}
