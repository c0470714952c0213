//! The agent loop: send the conversation, stream the reply, run the tools it
//! asks for, and loop until the model answers without tools. Which tools exist
//! is the registry's business; what the user sees is the front end's.

mod prompt;
mod summary;

use std::sync::Arc;
use std::time::Instant;

use futures::future::join_all;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::protocol::{Event, EventSink, TurnStatus};
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
use crate::session::{CallStatus, RecordBody, SessionLog};
use crate::tools::{
    BatchPosition, Caller, Delegation, Refusal, Scheduling, Tool, ToolContext, ToolInput,
    ToolOutput, ToolRegistry, canonical_tool_name, cap_output, parse_input,
};

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
    source: QuerySource,
    cache_after: Option<usize>,
    last_request: Option<Arc<ModelRequest>>,
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
            // Only an agent that can read them is pointed to them.
            if !unread.is_empty() && self.tools.get("TaskOutput").is_some() {
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
        if let Some(delegation) = &self.ctx.delegation {
            delegation.turn_started();
        }
        // Tools' reminders (the roster of agent types) go in once, before the
        // first message, so the tool list stays the same whatever exists.
        if self.conversation.is_empty() {
            let reminders: Vec<String> = self
                .tools
                .tools()
                .iter()
                .filter_map(|t| t.first_reminder(&self.ctx))
                .collect();
            for text in reminders {
                if logged.is_ok() {
                    logged = self.write_log(RecordBody::User { text: text.clone() });
                }
                self.push_user_text(text);
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
            self.last_request = Some(Arc::new(req));
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
                content: results,
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

    /// How `call` may be scheduled: as its tool says; an unknown tool's
    /// call runs alone (it only gets an error back).
    fn scheduling(&self, call: &ToolCall) -> Scheduling {
        self.tools
            .get(&call.name)
            .map_or(Scheduling::Exclusive, |t| t.scheduling())
    }

    /// Runs a reply's tool calls: consecutive shared and batch calls together
    /// (the neighbouring calls of a batch tool handed to it at once), each
    /// exclusive call alone; results come back in the order the model asked.
    async fn run_tools(
        &self,
        calls: &[ToolCall],
        cancel: &CancellationToken,
    ) -> (Vec<ContentBlock>, Option<LogFailure>) {
        let mut results = Vec::with_capacity(calls.len());
        let mut failure: Option<LogFailure> = None;
        let scheduling: Vec<Scheduling> = calls.iter().map(|c| self.scheduling(c)).collect();
        // A batch's calls are numbered among the reply's calls to their tool:
        // (1-based number, how many) for each batch call.
        let batch_tool = |k: usize| {
            (scheduling[k] == Scheduling::Batch)
                .then(|| self.tools.get(&calls[k].name))
                .flatten()
        };
        let tool_of: Vec<Option<&'static str>> = (0..calls.len())
            .map(|k| batch_tool(k).map(|t| t.name()))
            .collect();
        let numbering: Vec<(usize, usize)> = (0..calls.len())
            .map(|k| {
                let same = |m: &usize| tool_of[*m].is_some() && tool_of[*m] == tool_of[k];
                (
                    (0..=k).filter(same).count(),
                    (0..calls.len()).filter(same).count(),
                )
            })
            .collect();
        let mut i = 0;
        while i < calls.len() {
            let mut j = i + 1;
            if scheduling[i] != Scheduling::Exclusive {
                while j < calls.len() && scheduling[j] != Scheduling::Exclusive {
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
                // The group's batch calls, by tool, in the order asked.
                let mut batches: Vec<(Arc<dyn Tool>, Vec<usize>)> = Vec::new();
                for k in i..j {
                    if let Some(tool) = batch_tool(k) {
                        match batches.iter_mut().find(|(t, _)| t.name() == tool.name()) {
                            Some((_, ks)) => ks.push(k - i),
                            None => batches.push((tool, vec![k - i])),
                        }
                    }
                }
                let in_batch = |k: usize| batches.iter().any(|(_, ks)| ks.contains(&k));
                let singles = group
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| !in_batch(*k))
                    .map(|(k, c)| async move { vec![(k, self.run_one(c, cancel).await)] });
                let mut runs: Vec<futures::future::BoxFuture<'_, _>> =
                    singles.map(|f| Box::pin(f) as _).collect();
                for (tool, ks) in &batches {
                    let (first_index, total) = numbering[i + ks[0]];
                    let position = BatchPosition { first_index, total };
                    let members: Vec<&ToolCall> = ks.iter().map(|&k| &group[k]).collect();
                    let tool = tool.clone();
                    let ks = ks.clone();
                    runs.push(Box::pin(async move {
                        let outs = self
                            .run_batch(tool.as_ref(), &members, position, cancel)
                            .await;
                        ks.into_iter().zip(outs).collect::<Vec<_>>()
                    }));
                }
                let mut done: Vec<(usize, Result<ToolOutput, LogFailure>)> =
                    join_all(runs).await.into_iter().flatten().collect();
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
    fn denied(&self, call: &ToolCall, tool: &str, reason: String) -> (ToolOutput, CallStatus) {
        self.events.emit(Event::ToolCallDenied {
            agent: self.id.clone(),
            call_id: call.id.clone(),
            tool: tool.to_string(),
            reason: reason.clone(),
        });
        (ToolOutput::error(reason), CallStatus::Denied)
    }

    /// Caps, logs and announces a call's result.
    fn finish_call(
        &self,
        call: &ToolCall,
        tool: String,
        output: ToolOutput,
        status: CallStatus,
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
            status,
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

    /// The status of a call that ran.
    fn ran(output: ToolOutput) -> (ToolOutput, CallStatus) {
        let status = if output.is_error {
            CallStatus::Error
        } else {
            CallStatus::Ok
        };
        (output, status)
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
                CallStatus::NotRun,
            ),
            (None, _) => (
                ToolOutput::error(format!(
                    "unknown tool '{}'; available tools: {}",
                    call.name,
                    self.tools.names().join(", ")
                )),
                CallStatus::Error,
            ),
            // Malformed arguments never reach the policy or the tool.
            (Some(_), Err(out)) => (out, CallStatus::Error),
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
                        Self::ran(tool.execute(&ctx, &input).await)
                    }
                }
            }
        };
        self.finish_call(call, tool_name, output, status, started)
    }

    /// The calling agent as a batch tool sees it.
    fn caller(&self) -> Caller {
        Caller {
            agent_id: self.id.clone(),
            tools: self.tools.clone(),
            last_request: self.last_request.clone(),
            client: self.client.clone(),
            mode: self.policy.mode,
            fork: self.is_fork(),
        }
    }

    /// Runs one batch tool's calls of a group: the tool admits them first
    /// (before anything is asked or started), each admitted call then passes
    /// the permission policy and gets its `tool_start`, and the tool runs
    /// those together; one `tool_result` per call goes to this agent's log.
    async fn run_batch(
        &self,
        tool: &dyn Tool,
        calls: &[&ToolCall],
        position: BatchPosition,
        cancel: &CancellationToken,
    ) -> Vec<Result<ToolOutput, LogFailure>> {
        let started = Instant::now();
        let mut ctx = self.ctx.clone();
        ctx.cancel = cancel.child_token();
        ctx.caller = Some(Arc::new(self.caller()));
        let begun: Vec<(String, Result<ToolInput, ToolOutput>)> =
            calls.iter().map(|c| self.begin_call(c)).collect();
        let mut outcome: Vec<Option<(ToolOutput, CallStatus)>> = vec![None; calls.len()];
        // The calls whose arguments parsed, in order, with their slot.
        let (mut slots, mut inputs): (Vec<usize>, Vec<ToolInput>) = begun
            .iter()
            .enumerate()
            .filter_map(|(k, (_, input))| input.as_ref().ok().map(|i| (k, i.clone())))
            .unzip();
        for (k, (_, input)) in begun.iter().enumerate() {
            if let Err(out) = input {
                outcome[k] = Some((out.clone(), CallStatus::Error));
            }
        }
        let refusals = tool.admit_batch(&ctx, &mut inputs);
        let mut admitted: Vec<(usize, ToolInput)> = Vec::new();
        for ((k, input), refusal) in slots.drain(..).zip(inputs).zip(refusals) {
            match refusal {
                Some(Refusal::Invalid(out)) => outcome[k] = Some((out, CallStatus::Error)),
                Some(Refusal::Denied(reason)) => {
                    outcome[k] = Some(self.denied(calls[k], tool.name(), reason))
                }
                None => admitted.push((k, input)),
            }
        }
        let mut ready: Vec<(usize, ToolInput)> = Vec::new();
        for (k, input) in admitted {
            if cancel.is_cancelled() {
                outcome[k] = Some((
                    ToolOutput::error("not run: interrupted by the user"),
                    CallStatus::NotRun,
                ));
                continue;
            }
            let decided = crate::permissions::decided_path(tool.name(), &input, &self.ctx.cwd);
            match self
                .permit(tool.name(), &input, decided.as_deref(), cancel)
                .await
            {
                Err(reason) => outcome[k] = Some(self.denied(calls[k], tool.name(), reason)),
                Ok(()) => {
                    if let Err(e) = self.write_log(RecordBody::ToolStart {
                        call_id: calls[k].id.clone(),
                        tool: tool.name().to_string(),
                        input: calls[k].input.clone(),
                    }) {
                        return calls.iter().map(|_| Err(LogFailure(e.0.clone()))).collect();
                    }
                    ready.push((k, input));
                }
            }
        }
        if !ready.is_empty() {
            let (slots, inputs): (Vec<usize>, Vec<ToolInput>) = ready.into_iter().unzip();
            match tool.execute_batch(&ctx, position, &inputs).await {
                Ok(outs) => {
                    for (k, out) in slots.into_iter().zip(outs) {
                        outcome[k] = Some(Self::ran(out));
                    }
                }
                Err(e) => {
                    // This agent's own log still works: record why nothing
                    // usable came back, then stop the turn.
                    for ((call, (name, _)), out) in calls.iter().zip(begun).zip(outcome) {
                        let (out, status) = out.unwrap_or_else(|| {
                            (
                                ToolOutput::error(format!("not run: {e}")),
                                CallStatus::Error,
                            )
                        });
                        if let Err(f) = self.finish_call(call, name, out, status, started) {
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
            .map(|((call, (name, _)), out)| {
                let (output, status) =
                    out.unwrap_or_else(|| (ToolOutput::error("not run"), CallStatus::NotRun));
                self.finish_call(call, name, output, status, started)
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
