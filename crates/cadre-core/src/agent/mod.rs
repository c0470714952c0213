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
pub use prompt::{SystemPromptParts, build_system_prompt, environment_facts, project_instructions};

use crate::model::{
    ContentBlock, Message, ModelClient, ModelError, ModelRequest, Role, StreamDelta, ToolCall,
    Usage,
};
use crate::permissions::{
    ApprovalAnswer, ApprovalGate, ApprovalQuestion, Decision, HEADLESS_DENIAL, PermissionPolicy,
    PermissionTracker,
};
use crate::session::{RecordBody, SessionLog};
use crate::tools::{Tool, ToolContext, ToolOutput, ToolRegistry, canonical_tool_name, cap_output};

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
    /// Model requests made.
    pub requests: u32,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Tokens used in the turn.
    pub usage: Usage,
}

/// Everything an agent is made of; shared parts are `Arc`s.
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
}

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
        }
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
    /// limit or error stops it, or `cancel` fires.
    pub async fn run_turn(&mut self, user_text: String, cancel: CancellationToken) -> TurnOutcome {
        let logged = self.write_log(RecordBody::User {
            text: user_text.clone(),
        });
        self.push_user_text(user_text);
        self.events.emit(Event::TurnStarted {
            agent: self.id.clone(),
        });
        let mut outcome = match logged {
            Ok(()) => self.turn_loop(&cancel).await,
            Err(LogFailure(e)) => TurnOutcome {
                status: TurnStatus::Failed,
                final_text: String::new(),
                error: Some(e),
                model_error: None,
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
            outcome.error = Some(e);
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
            };
            let events = self.events.clone();
            let agent = self.id.clone();
            let mut on_delta = move |d: StreamDelta| match d {
                StreamDelta::Text(text) => events.emit(Event::TextDelta {
                    agent: agent.clone(),
                    text,
                }),
                StreamDelta::Retrying {
                    attempt,
                    status,
                    wait_ms,
                } => events.emit(Event::Retrying {
                    agent: agent.clone(),
                    attempt,
                    status,
                    wait_ms,
                }),
                StreamDelta::ToolCallStarted { .. } => {}
            };
            let resp = match self.client.stream(&req, &mut on_delta, cancel).await {
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
                out.error = Some(e);
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
                out.error = Some(e);
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

    /// Runs a reply's tool calls: consecutive read-only calls together, the
    /// rest one at a time; results come back in the order the model asked.
    async fn run_tools(
        &self,
        calls: &[ToolCall],
        cancel: &CancellationToken,
    ) -> (Vec<ContentBlock>, Option<LogFailure>) {
        let mut results = Vec::with_capacity(calls.len());
        let mut failure = None;
        let mut i = 0;
        while i < calls.len() {
            let read_only =
                |c: &ToolCall| self.tools.get(&c.name).is_some_and(|t| t.is_read_only());
            let mut j = i + 1;
            if read_only(&calls[i]) {
                while j < calls.len() && read_only(&calls[j]) {
                    j += 1;
                }
            }
            let group = calls[i..j].iter().map(|c| async {
                if failure.is_some() {
                    return Ok(ToolOutput::error(
                        "not run: the session log could not be written",
                    ));
                }
                self.run_one(c, cancel).await
            });
            for (call, output) in calls[i..j]
                .iter()
                .zip(join_all(group).await.into_iter().collect::<Vec<_>>())
            {
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

    /// Decides, asks if needed, logs and runs one call.
    async fn run_one(
        &self,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> Result<ToolOutput, LogFailure> {
        let tool: Option<Arc<dyn Tool>> = self.tools.get(&call.name);
        let tool_name = tool.as_ref().map_or_else(
            || canonical_tool_name(&call.name).to_string(),
            |t| t.name().to_string(),
        );
        let input: Value =
            serde_json::from_str(&call.input).unwrap_or_else(|_| Value::String(call.input.clone()));
        self.events.emit(Event::ToolCallStarted {
            agent: self.id.clone(),
            call_id: call.id.clone(),
            tool: tool_name.clone(),
            summary: summary::argument_summary(&tool_name, &input),
            input: input.clone(),
        });
        let started = Instant::now();
        let (output, status) = match &tool {
            _ if cancel.is_cancelled() => (
                ToolOutput::error("not run: interrupted by the user"),
                "not_run",
            ),
            None => (
                ToolOutput::error(format!(
                    "unknown tool '{}'; available tools: {}",
                    call.name,
                    self.tools.names().join(", ")
                )),
                "error",
            ),
            Some(tool) => match self.permit(&tool_name, &input, cancel).await {
                Err(reason) => {
                    self.events.emit(Event::ToolCallDenied {
                        agent: self.id.clone(),
                        call_id: call.id.clone(),
                        tool: tool_name.clone(),
                        reason: reason.clone(),
                    });
                    (ToolOutput::error(reason), "denied")
                }
                Ok(()) => {
                    self.write_log(RecordBody::ToolStart {
                        call_id: call.id.clone(),
                        tool: tool_name.clone(),
                        input: call.input.clone(),
                    })?;
                    let mut ctx = self.ctx.clone();
                    ctx.cancel = cancel.child_token();
                    let out = tool.execute(&ctx, &call.input).await;
                    let status = if out.is_error { "error" } else { "ok" };
                    (out, status)
                }
            },
        };
        let output = ToolOutput {
            content: cap_output(output.content, self.ctx.output_cap),
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
            tool: tool_name,
            is_error: output.is_error,
            outcome: summary::outcome_summary(&output),
            output_bytes: output.content.len(),
            duration_ms: started.elapsed().as_millis() as u64,
        });
        Ok(output)
    }

    /// Applies the permission policy, asking through the gate when it says so.
    /// `Err` holds the denial text the model sees.
    async fn permit(
        &self,
        tool: &str,
        input: &Value,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        let (reason, session_rule) =
            match self
                .policy
                .decide(&self.tracker, tool, input, &self.ctx.cwd)
            {
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
