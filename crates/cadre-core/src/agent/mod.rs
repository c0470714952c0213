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
pub use prompt::{SystemPromptParts, build_system_prompt, environment_facts, project_instructions};

use crate::model::{
    ContentBlock, Message, ModelClient, ModelError, ModelRequest, Role, StreamDelta, ToolCall,
    Usage,
};
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

/// One agent: a conversation with a model, its tools, and its own state.
pub struct Agent {
    id: String,
    client: ModelClient,
    tools: ToolRegistry,
    ctx: ToolContext,
    system: String,
    conversation: Vec<Message>,
    limits: TurnLimits,
    events: EventSink,
    usage: Usage,
}

impl Agent {
    /// A new agent with an empty conversation.
    pub fn new(
        id: impl Into<String>,
        client: ModelClient,
        tools: ToolRegistry,
        ctx: ToolContext,
        system: String,
        limits: TurnLimits,
        events: EventSink,
    ) -> Self {
        Agent {
            id: id.into(),
            client,
            tools,
            ctx,
            system,
            conversation: Vec::new(),
            limits,
            events,
            usage: Usage::default(),
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
        self.push_user_text(user_text);
        self.events.emit(Event::TurnStarted {
            agent: self.id.clone(),
        });
        let outcome = self.turn_loop(&cancel).await;
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
            self.conversation.push(resp.message);
            if calls.is_empty() {
                return out;
            }

            let budget = self.limits.max_tool_calls.saturating_sub(out.tool_calls) as usize;
            let (run, refused) = calls.split_at(calls.len().min(budget));
            out.tool_calls += run.len() as u32;
            let mut results = self.run_tools(run, cancel).await;
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
    async fn run_tools(&self, calls: &[ToolCall], cancel: &CancellationToken) -> Vec<ContentBlock> {
        let mut results = Vec::with_capacity(calls.len());
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
            let group = calls[i..j].iter().map(|c| self.run_one(c, cancel));
            for (call, output) in calls[i..j].iter().zip(join_all(group).await) {
                results.push(ContentBlock::ToolResult {
                    tool_use_id: call.id.clone(),
                    content: output.content,
                    is_error: output.is_error,
                });
            }
            i = j;
        }
        results
    }

    async fn run_one(&self, call: &ToolCall, cancel: &CancellationToken) -> ToolOutput {
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
            input,
        });
        let started = Instant::now();
        let output = if cancel.is_cancelled() {
            ToolOutput::error("not run: interrupted by the user")
        } else {
            match &tool {
                None => ToolOutput::error(format!(
                    "unknown tool '{}'; available tools: {}",
                    call.name,
                    self.tools.names().join(", ")
                )),
                Some(tool) => {
                    let mut ctx = self.ctx.clone();
                    ctx.cancel = cancel.child_token();
                    tool.execute(&ctx, &call.input).await
                }
            }
        };
        let output = ToolOutput {
            content: cap_output(output.content, self.ctx.output_cap),
            is_error: output.is_error,
        };
        self.events.emit(Event::ToolCallEnded {
            agent: self.id.clone(),
            call_id: call.id.clone(),
            tool: tool_name,
            is_error: output.is_error,
            outcome: summary::outcome_summary(&output),
            output_bytes: output.content.len(),
            duration_ms: started.elapsed().as_millis() as u64,
        });
        output
    }
}
