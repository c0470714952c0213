//! The agent loop: send the conversation, stream the reply, run the tools it
//! asks for, and loop until the model answers without tools. Which tools exist
//! is the registry's business; what the user sees is the front end's.

mod events;
mod prompt;
mod summary;

use std::sync::Arc;
use std::time::Instant;

use futures::future::join_all;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use events::{Event, EventSink, TurnStatus};
pub(crate) use prompt::civil_from_days;
pub use prompt::{
    SystemPromptParts, build_system_prompt, environment_facts, project_instructions,
    read_project_instructions,
};

use crate::model::{
    ContentBlock, Message, ModelClient, ModelError, ModelRequest, Role, StreamDelta, ToolCall,
    Usage,
};
use crate::permissions::{
    ApprovalAnswer, ApprovalGate, ApprovalQuestion, Decision, HEADLESS_DENIAL, PermissionPolicy,
    PermissionTracker,
};
use crate::session::{RecordBody, SessionLog};
use crate::subagents::{AgentArgs, BatchCall, BatchFailure, Parent, Spawner};
use crate::tools::{ToolContext, ToolOutput, ToolRegistry, canonical_tool_name, cap_output};
use crate::tools::{ToolInput, parse_args, parse_input};
use std::sync::atomic::Ordering;

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
}

/// One agent: a conversation with a model, its tools, and its own state.
pub struct Agent {
    id: String,
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
    spawner: Option<Spawner>,
    source: QuerySource,
    cache_after: Option<usize>,
    last_request: Option<ModelRequest>,
    inbox: Option<tokio::sync::mpsc::UnboundedReceiver<String>>,
    replies_since_reminder: u32,
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
        Agent {
            id: setup.id,
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
            spawner: None,
            source: QuerySource::Main,
            cache_after: None,
            last_request: None,
            inbox: None,
            replies_since_reminder: 0,
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
        self.last_request.as_ref()
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

    /// Lets this agent start subagents through `spawner`.
    pub fn with_spawner(mut self, spawner: Option<Spawner>) -> Self {
        self.spawner = spawner;
        self
    }

    /// The runtime this agent spawns subagents through, if it may.
    pub fn subagent_runtime(&self) -> Option<Arc<crate::subagents::SubagentRuntime>> {
        self.spawner.as_ref().map(|s| s.runtime.clone())
    }

    /// The model this agent talks to.
    pub fn model(&self) -> &str {
        &self.client.config().model
    }

    /// Sets the log this agent appends to.
    pub fn set_log(&mut self, log: Arc<SessionLog>) {
        self.log = Some(log);
    }

    /// Joins finished background tasks' notice to the next request.
    fn deliver_notices(&mut self) -> Result<(), LogFailure> {
        let mut messages = Vec::new();
        if let Some(inbox) = &mut self.inbox {
            while let Ok(m) = inbox.try_recv() {
                messages.push(m);
            }
        }
        for m in messages {
            let text = format!("<message from=\"parent\">\n{m}\n</message>");
            self.write_log(RecordBody::User { text: text.clone() })?;
            self.push_user_text(text);
        }
        let Some(work) = self.ctx.background.clone() else {
            return Ok(());
        };
        // Every so many replies, tasks whose long output was never read are
        // pointed out again, so a finished result is not silently forgotten.
        self.replies_since_reminder += 1;
        if self.replies_since_reminder >= UNREAD_REMINDER_EVERY {
            self.replies_since_reminder = 0;
            let unread = work.unread_of(&self.id);
            if !unread.is_empty() {
                let text = format!(
                    "<system-reminder>Finished background tasks whose output you have not read yet: {}. Read them with TaskOutput if they matter to the task.</system-reminder>",
                    unread.join(", ")
                );
                self.write_log(RecordBody::User { text: text.clone() })?;
                self.push_user_text(text);
            }
        }
        let items = work.take_unmarked(&self.id);
        if items.is_empty() {
            return Ok(());
        }
        let text = crate::background::notification_text(&items);
        self.events.emit(Event::TasksNotified {
            agent: self.id.clone(),
            task_ids: items.iter().map(|f| f.task_id.clone()).collect(),
        });
        self.write_log(RecordBody::User { text: text.clone() })?;
        // Only once the notice is logged: a crash before this re-announces
        // after a resume instead of losing the notice.
        work.mark_announced(&items.iter().map(|f| f.task_id.clone()).collect::<Vec<_>>());
        self.push_user_text(text);
        Ok(())
    }

    /// True when finished background tasks of this agent wait to be announced.
    pub fn has_notices(&self) -> bool {
        self.ctx
            .background
            .as_ref()
            .is_some_and(|w| w.has_finished(&self.id))
    }

    /// Background tasks this agent started that are still running.
    pub fn active_tasks(&self) -> usize {
        self.ctx
            .background
            .as_ref()
            .map_or(0, |w| w.active_for(&self.id))
    }

    /// Replaces the conversation (used when resuming from a log).
    pub fn restore(&mut self, messages: Vec<Message>) {
        self.conversation = messages;
    }

    fn write_log(&self, body: RecordBody) -> Result<(), LogFailure> {
        match &self.log {
            Some(log) => log.append(body).map_err(|e| LogFailure(e.to_string())),
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

    /// The system prompt.
    pub fn system_prompt(&self) -> &str {
        &self.system
    }

    /// Adds user text: a new message, or joined to a pending user message (after
    /// an interrupted request) so roles keep alternating.
    fn push_user_text(&mut self, text: String) {
        if let Some(last) = self.conversation.last_mut()
            && last.role == Role::User
        {
            last.content.push(ContentBlock::Text { text });
            return;
        }
        self.conversation.push(Message::user_text(text));
    }

    /// Runs one turn for `user_text` until the model answers without tools, a
    /// limit or error stops it, or `cancel` fires. An empty `user_text` runs a
    /// turn on the waiting task notices alone.
    pub async fn run_turn(&mut self, user_text: String, cancel: CancellationToken) -> TurnOutcome {
        let mut logged = Ok(());
        if let Some(spawner) = &self.spawner {
            spawner.started_this_turn.store(0, Ordering::SeqCst);
            // The roster of agent types goes in once, as a reminder before the
            // first message, so the tool list stays the same whatever exists.
            if self.conversation.is_empty()
                && self.tools.get("Agent").is_some()
                && let Some(roster) = spawner.runtime.roster(spawner.allowed_types.as_deref())
            {
                logged = self.write_log(RecordBody::User {
                    text: roster.clone(),
                });
                self.push_user_text(roster);
            }
        }
        // An empty text continues the conversation with whatever notices wait.
        if !user_text.is_empty() {
            if logged.is_ok() {
                logged = self.write_log(RecordBody::User {
                    text: user_text.clone(),
                });
            }
            self.push_user_text(user_text);
        }
        self.events.emit(Event::TurnStarted {
            agent: self.id.clone(),
        });
        let mut outcome = match logged {
            Ok(()) => self.turn_loop(&cancel).await,
            Err(LogFailure(e)) => TurnOutcome {
                status: TurnStatus::Failed,
                final_text: String::new(),
                error: Some(e.clone()),
                model_error: None,
                log_error: Some(e),
                requests: 0,
                tool_calls: 0,
                usage: Usage::default(),
            },
        };
        let status = serde_json::to_value(outcome.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        if let Err(LogFailure(e)) = self.write_log(RecordBody::TurnEnd { status })
            && outcome.error.is_none()
        {
            outcome.status = TurnStatus::Failed;
            outcome.error = Some(e.clone());
            outcome.log_error = Some(e);
        }
        self.events.emit(Event::TurnEnded {
            agent: self.id.clone(),
            status: outcome.status,
            final_text: outcome.final_text.clone(),
            error: outcome.error.clone(),
            requests: outcome.requests,
            tool_calls: outcome.tool_calls,
            usage: outcome.usage,
        });
        outcome
    }

    async fn turn_loop(&mut self, cancel: &CancellationToken) -> TurnOutcome {
        let mut out = TurnOutcome {
            status: TurnStatus::Completed,
            final_text: String::new(),
            error: None,
            model_error: None,
            log_error: None,
            requests: 0,
            tool_calls: 0,
            usage: Usage::default(),
        };
        loop {
            if out.requests >= self.limits.max_requests {
                out.status = TurnStatus::LimitReached;
                out.error = Some(format!(
                    "the turn reached its limit of {} model requests; stopped to avoid a runaway loop",
                    self.limits.max_requests
                ));
                return out;
            }
            if let Err(LogFailure(e)) = self.deliver_notices() {
                out.status = TurnStatus::Failed;
                out.error = Some(e.clone());
                out.log_error = Some(e);
                return out;
            }
            out.requests += 1;
            self.events.emit(Event::RequestStarted {
                agent: self.id.clone(),
                request: out.requests,
            });
            let req = ModelRequest {
                model: self.client.config().model.clone(),
                system: self.system.clone(),
                messages: self.conversation.clone(),
                tools: self.tools.specs(),
                max_tokens: self.client.config().max_tokens,
                cache_after: self.cache_after,
            };
            let events = self.events.clone();
            let agent = self.id.clone();
            let log = self.log.clone();
            let mut on_delta = move |d: StreamDelta| match d {
                StreamDelta::Text(text) => events.emit(Event::TextDelta {
                    agent: agent.clone(),
                    text,
                }),
                StreamDelta::Retrying {
                    attempt,
                    status,
                    wait_ms,
                    reason,
                    discarded_text,
                } => {
                    // A diagnostic record: failing to write it must not fail the request.
                    if let Some(log) = &log {
                        let _ = log.append(RecordBody::Retry {
                            attempt,
                            reason: reason.clone(),
                            discarded_text,
                        });
                    }
                    events.emit(Event::Retrying {
                        agent: agent.clone(),
                        attempt,
                        status,
                        wait_ms,
                        reason,
                        discarded_text,
                    })
                }
                StreamDelta::ToolCallStarted { .. } => {}
            };
            let mut resp = match self.client.stream(&req, &mut on_delta, cancel).await {
                Ok(r) => r,
                Err(ModelError::Cancelled) => {
                    out.status = TurnStatus::Interrupted;
                    out.error = Some("interrupted by the user".into());
                    return out;
                }
                Err(e) => {
                    out.status = TurnStatus::Failed;
                    out.error = Some(e.to_string());
                    out.model_error = Some(e);
                    return out;
                }
            };
            drop(on_delta);
            crate::model::unique_call_ids(&mut resp.message, &self.conversation);
            self.last_request = Some(req);
            out.usage.add(&resp.usage);
            self.usage.add(&resp.usage);
            self.events.emit(Event::Usage {
                agent: self.id.clone(),
                usage: resp.usage,
            });
            let calls = resp.message.tool_calls();
            let text = resp.message.text();
            self.events.emit(Event::AssistantMessage {
                agent: self.id.clone(),
                text: text.clone(),
                tool_calls: calls.len(),
            });
            if !text.is_empty() {
                out.final_text = text;
            }
            let logged = self.write_log(RecordBody::Assistant {
                message: resp.message.clone(),
            });
            self.conversation.push(resp.message);
            if let Err(LogFailure(e)) = logged {
                out.status = TurnStatus::Failed;
                out.error = Some(e.clone());
                out.log_error = Some(e);
                return out;
            }
            if calls.is_empty() {
                return out;
            }

            let budget = self.limits.max_tool_calls.saturating_sub(out.tool_calls) as usize;
            let (run, refused) = calls.split_at(calls.len().min(budget));
            out.tool_calls += run.len() as u32;
            let (mut results, log_failure) = self.run_tools(run, cancel).await;
            for call in refused {
                results.push(ContentBlock::ToolResult {
                    tool_use_id: call.id.clone(),
                    content: "not run: the turn reached its tool-call limit".into(),
                    is_error: true,
                });
            }
            self.conversation.push(Message {
                role: Role::User,
                content: results.into(),
            });
            if let Some(LogFailure(e)) = log_failure {
                out.status = TurnStatus::Failed;
                out.error = Some(e.clone());
                out.log_error = Some(e);
                return out;
            }
            if cancel.is_cancelled() {
                out.status = TurnStatus::Interrupted;
                out.error = Some("interrupted by the user".into());
                return out;
            }
            if !refused.is_empty() {
                out.status = TurnStatus::LimitReached;
                out.error = Some(format!(
                    "the turn reached its limit of {} tool calls; stopped to avoid a runaway loop",
                    self.limits.max_tool_calls
                ));
                return out;
            }
        }
    }

    /// True when this agent runs `call` as a subagent spawn.
    fn is_spawn(&self, call: &ToolCall) -> bool {
        self.spawner.is_some()
            && canonical_tool_name(&call.name) == "Agent"
            && self.tools.get("Agent").is_some()
    }

    /// Runs a reply's tool calls: consecutive read-only and `Agent` calls
    /// together (the `Agent` ones as one batch), the rest one at a time;
    /// results come back in the order the model asked.
    async fn run_tools(
        &self,
        calls: &[ToolCall],
        cancel: &CancellationToken,
    ) -> (Vec<ContentBlock>, Option<LogFailure>) {
        let mut results = Vec::with_capacity(calls.len());
        let mut failure: Option<LogFailure> = None;
        let total_spawns = calls.iter().filter(|c| self.is_spawn(c)).count();
        let mut spawns_before = 0;
        let concurrent = |c: &ToolCall| {
            self.is_spawn(c) || self.tools.get(&c.name).is_some_and(|t| t.is_read_only())
        };
        let mut i = 0;
        while i < calls.len() {
            let mut j = i + 1;
            if concurrent(&calls[i]) {
                while j < calls.len() && concurrent(&calls[j]) {
                    j += 1;
                }
            }
            let group = &calls[i..j];
            let outputs: Vec<Result<ToolOutput, LogFailure>> = if failure.is_some() {
                group
                    .iter()
                    .map(|_| {
                        Ok(ToolOutput::error(
                            "not run: the session log could not be written",
                        ))
                    })
                    .collect()
            } else {
                let spawns: Vec<(usize, &ToolCall)> = group
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| self.is_spawn(c))
                    .collect();
                let first_index = spawns_before + 1;
                spawns_before += spawns.len();
                let others = group
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| !self.is_spawn(c))
                    .map(|(k, c)| async move { (k, self.run_one(c, cancel).await) });
                let batch = async {
                    if spawns.is_empty() {
                        return Vec::new();
                    }
                    let calls: Vec<&ToolCall> = spawns.iter().map(|(_, c)| *c).collect();
                    let outs = self
                        .run_spawns(&calls, first_index, total_spawns, cancel)
                        .await;
                    spawns.iter().map(|(k, _)| *k).zip(outs).collect::<Vec<_>>()
                };
                let (mut done, batch_done) = futures::join!(join_all(others), batch);
                done.extend(batch_done);
                done.sort_by_key(|(k, _)| *k);
                done.into_iter().map(|(_, r)| r).collect()
            };
            for (call, output) in group.iter().zip(outputs) {
                let output = output.unwrap_or_else(|e| {
                    let text = format!("not run: {}", e.0);
                    failure.get_or_insert(e);
                    ToolOutput::error(text)
                });
                results.push(ContentBlock::ToolResult {
                    tool_use_id: call.id.clone(),
                    content: output.content,
                    is_error: output.is_error,
                });
            }
            i = j;
        }
        (results, failure)
    }

    /// Announces a call: the canonical name, and the arguments parsed once
    /// (an object, or the `invalid_arguments` result the model gets instead);
    /// the policy decides on exactly that object and the tool runs it.
    fn begin_call(&self, call: &ToolCall) -> (String, Result<ToolInput, ToolOutput>) {
        let tool_name = self.tools.get(&call.name).map_or_else(
            || canonical_tool_name(&call.name).to_string(),
            |t| t.name().to_string(),
        );
        let parsed = parse_input(&call.input);
        let shown = match &parsed {
            Ok(args) => Value::Object(args.clone()),
            Err(_) => Value::String(call.input.clone()),
        };
        self.events.emit(Event::ToolCallStarted {
            agent: self.id.clone(),
            call_id: call.id.clone(),
            tool: tool_name.clone(),
            summary: summary::argument_summary(&tool_name, &shown),
            input: shown,
        });
        (tool_name, parsed)
    }

    /// Records a denial.
    fn denied(&self, call: &ToolCall, tool: &str, reason: String) -> (ToolOutput, &'static str) {
        self.events.emit(Event::ToolCallDenied {
            agent: self.id.clone(),
            call_id: call.id.clone(),
            tool: tool.to_string(),
            reason: reason.clone(),
        });
        (ToolOutput::error(reason), "denied")
    }

    /// Caps, logs and announces a call's result.
    fn finish_call(
        &self,
        call: &ToolCall,
        tool: String,
        output: ToolOutput,
        status: &str,
        started: Instant,
    ) -> Result<ToolOutput, LogFailure> {
        let output = ToolOutput {
            // Redacted before the cap, so a key cut in two cannot slip through.
            content: cap_output(
                crate::secrets::redact(&output.content).into_owned(),
                self.ctx.output_cap,
            ),
            is_error: output.is_error,
        };
        self.write_log(RecordBody::ToolResult {
            call_id: call.id.clone(),
            content: output.content.clone(),
            is_error: output.is_error,
            status: status.to_string(),
        })?;
        self.events.emit(Event::ToolCallEnded {
            agent: self.id.clone(),
            call_id: call.id.clone(),
            tool,
            is_error: output.is_error,
            outcome: summary::outcome_summary(&output),
            output_bytes: output.content.len(),
            duration_ms: started.elapsed().as_millis() as u64,
        });
        Ok(output)
    }

    /// Decides, asks if needed, logs and runs one call.
    async fn run_one(
        &self,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, LogFailure> {
        let (tool_name, input) = self.begin_call(call);
        let started = Instant::now();
        let (output, status) = match (self.tools.get(&call.name), input) {
            _ if cancel.is_cancelled() => (
                ToolOutput::error("not run: interrupted by the user"),
                "not_run",
            ),
            (None, _) => (
                ToolOutput::error(format!(
                    "unknown tool '{}'; available tools: {}",
                    call.name,
                    self.tools.names().join(", ")
                )),
                "error",
            ),
            // Malformed arguments never reach the policy or the tool.
            (Some(_), Err(out)) => (out, "error"),
            (Some(tool), Ok(input)) => {
                // Resolved with the same function the policy uses, at the same moment.
                let decided = crate::permissions::decided_path(&tool_name, &input, &self.ctx.cwd);
                match self
                    .permit(&tool_name, &input, decided.as_deref(), cancel)
                    .await
                {
                    Err(reason) => self.denied(call, &tool_name, reason),
                    Ok(()) => {
                        self.write_log(RecordBody::ToolStart {
                            call_id: call.id.clone(),
                            tool: tool_name.clone(),
                            input: call.input.clone(),
                        })?;
                        let mut ctx = self.ctx.clone();
                        ctx.cancel = cancel.child_token();
                        ctx.decided_path = decided;
                        let out = match &self.spawner {
                            // Messages reach children through the runtime that made them.
                            Some(sp) if tool.name() == "SendMessage" => {
                                sp.runtime.send_message(&self.id, &input).await
                            }
                            _ => tool.execute(&ctx, &input).await,
                        };
                        let status = if out.is_error { "error" } else { "ok" };
                        (out, status)
                    }
                }
            }
        };
        self.finish_call(call, tool_name, output, status, started)
    }

    /// Runs the `Agent` calls of one group as a batch: the per-turn cap is
    /// checked before anything is asked or started; each spawn then passes
    /// the permission policy; one `tool_start` and one `tool_result` per call
    /// go to this agent's log, none of the children's work does.
    async fn run_spawns(
        &self,
        calls: &[&ToolCall],
        first_index: usize,
        total: usize,
        cancel: &CancellationToken,
    ) -> Vec<Result<ToolOutput, LogFailure>> {
        let Some(spawner) = &self.spawner else {
            return calls
                .iter()
                .map(|_| {
                    Ok(ToolOutput::error(
                        "subagents are not available to this agent",
                    ))
                })
                .collect();
        };
        if self.is_fork() {
            // A fork keeps `Agent` in its tool list (so its prefix matches its
            // parent's), but a fork never forks or spawns.
            let started = Instant::now();
            return calls
                .iter()
                .map(|c| {
                    let (tool, _) = self.begin_call(c);
                    let (out, status) = self.denied(
                        c,
                        &tool,
                        "denied: a forked worker cannot start subagents or forks; do the work yourself with your other tools".into(),
                    );
                    self.finish_call(c, tool, out, status, started)
                })
                .collect();
        }
        let started = Instant::now();
        let mut begun: Vec<(String, Result<ToolInput, ToolOutput>)> =
            calls.iter().map(|c| self.begin_call(c)).collect();
        let mut outcome: Vec<Option<(ToolOutput, &'static str)>> = vec![None; calls.len()];
        let mut parsed: Vec<(usize, BatchCall)> = Vec::new();
        for (k, (_, input)) in begun.iter_mut().enumerate() {
            match input
                .as_ref()
                .map_err(Clone::clone)
                .and_then(parse_args::<AgentArgs>)
            {
                Ok(mut args) => {
                    // A call naming no type runs the default type: decide on
                    // that type, so a rule naming it applies.
                    let kind = args
                        .subagent_type
                        .clone()
                        .filter(|t| !t.trim().is_empty())
                        .unwrap_or_else(|| spawner.runtime.settings.default_type.clone());
                    if let Ok(input) = input {
                        input.insert("subagent_type".into(), Value::String(kind.clone()));
                    }
                    args.subagent_type = Some(kind);
                    parsed.push((
                        k,
                        BatchCall {
                            index: first_index + k,
                            args,
                        },
                    ))
                }
                Err(out) => outcome[k] = Some((out, "error")),
            }
        }
        let cap = spawner.runtime.settings.max_per_turn;
        let already = spawner.started_this_turn.load(Ordering::SeqCst);
        if already + parsed.len() > cap {
            let reason = format!(
                "denied: this reply asks for {} subagents, which would exceed the limit of {cap} per turn; {already} were already started this turn, and nothing from this batch was started",
                parsed.len()
            );
            for (k, _) in parsed.drain(..) {
                outcome[k] = Some(self.denied(calls[k], "Agent", reason.clone()));
            }
        }
        let mut admitted: Vec<(usize, BatchCall)> = Vec::new();
        for (k, call) in parsed {
            if cancel.is_cancelled() {
                outcome[k] = Some((
                    ToolOutput::error("not run: interrupted by the user"),
                    "not_run",
                ));
                continue;
            }
            // Only calls whose arguments parsed got here.
            let Ok(input) = &begun[k].1 else { continue };
            match self.permit("Agent", input, None, cancel).await {
                Err(reason) => outcome[k] = Some(self.denied(calls[k], "Agent", reason)),
                Ok(()) => {
                    if let Err(e) = self.write_log(RecordBody::ToolStart {
                        call_id: calls[k].id.clone(),
                        tool: "Agent".into(),
                        input: calls[k].input.clone(),
                    }) {
                        return calls.iter().map(|_| Err(LogFailure(e.0.clone()))).collect();
                    }
                    admitted.push((k, call));
                }
            }
        }
        if !admitted.is_empty() {
            let (slots, batch): (Vec<usize>, Vec<BatchCall>) = admitted.into_iter().unzip();
            let tool_names: Vec<String> =
                self.tools.names().iter().map(|n| n.to_string()).collect();
            match spawner
                .runtime
                .run_batch(
                    &Parent {
                        agent_id: &self.id,
                        registry: &self.tools,
                        last_request: self.last_request.as_ref(),
                        spawner,
                        client: &self.client,
                        mode: self.policy.mode,
                        tools: &tool_names,
                    },
                    batch,
                    total,
                    cancel,
                )
                .await
            {
                Ok(outs) => {
                    for (k, out) in slots.into_iter().zip(outs) {
                        let status = if out.is_error { "error" } else { "ok" };
                        outcome[k] = Some((out, status));
                    }
                }
                Err(BatchFailure(e)) => {
                    // This agent's own log still works: record why nothing
                    // usable came back, then stop the turn.
                    for ((call, (tool, _)), out) in calls.iter().zip(begun).zip(outcome) {
                        let (out, status) = out.unwrap_or_else(|| {
                            (ToolOutput::error(format!("not run: {e}")), "error")
                        });
                        if let Err(f) = self.finish_call(call, tool, out, status, started) {
                            return calls.iter().map(|_| Err(LogFailure(f.0.clone()))).collect();
                        }
                    }
                    return calls.iter().map(|_| Err(LogFailure(e.clone()))).collect();
                }
            }
        }
        calls
            .iter()
            .zip(begun)
            .zip(outcome)
            .map(|((call, (tool, _)), out)| {
                let (output, status) =
                    out.unwrap_or_else(|| (ToolOutput::error("not run"), "not_run"));
                self.finish_call(call, tool, output, status, started)
            })
            .collect()
    }

    /// Applies the permission policy, asking through the gate when it says so.
    /// `Err` holds the denial text the model sees.
    async fn permit(
        &self,
        tool: &str,
        input: &ToolInput,
        path: Option<&std::path::Path>,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        let (reason, session_rule) = match self.policy.decide_at(&self.tracker, tool, input, path) {
            Decision::Allow => return Ok(()),
            Decision::Deny(reason) => return Err(format!("denied: {reason}")),
            Decision::Ask {
                reason,
                session_rule,
            } => (reason, session_rule),
        };
        if !self.gate.can_ask() {
            return Err(HEADLESS_DENIAL.to_string());
        }
        let shown = match (tool, input.get("command").and_then(Value::as_str)) {
            ("Bash", Some(cmd)) => cmd.to_string(),
            _ => serde_json::to_string_pretty(input).unwrap_or_default(),
        };
        let sandbox = (tool == "Bash").then(|| self.ctx.sandbox_line(input));
        let question = ApprovalQuestion {
            agent: self.id.clone(),
            label: self.label.clone(),
            tool: tool.to_string(),
            input: shown,
            reason,
            sandbox,
            session_rule: session_rule.clone(),
        };
        match self.gate.ask(question, cancel).await {
            ApprovalAnswer::Once => Ok(()),
            ApprovalAnswer::Session => {
                if let Some(rule) = PermissionPolicy::parse_session_rule(&session_rule) {
                    self.tracker.allow(rule);
                }
                Ok(())
            }
            ApprovalAnswer::No if cancel.is_cancelled() => {
                Err("not run: interrupted by the user".to_string())
            }
            ApprovalAnswer::No => Err("denied: the user declined this call".to_string()),
        }
    }
}
