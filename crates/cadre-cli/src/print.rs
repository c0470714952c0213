//! `cadre -p [PROMPT]`: Claude Code's print mode. One headless run on the
//! same engine as `cadre exec`; the prompt is the argument and whatever is
//! piped on stdin (the piped text first, as Claude Code combines them);
//! stdout gets the final answer (`--output-format text`) or one `result`
//! object in Claude Code's shape (`json`). A failure inside the run is the
//! result, with exit status 1; bad usage is reported before the run, with 2.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Read};
use std::time::Instant;

use cadre_core::model::Usage;
use cadre_core::protocol::{Event, TurnStatus};
use serde_json::{Value, json};

use crate::UsageError;
use cadre_core::protocol::MAIN_AGENT;

/// Most bytes of piped stdin taken into the prompt (Claude Code's cap).
pub const MAX_STDIN_BYTES: usize = 10 * 1024 * 1024;

/// What `-p` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// The final answer.
    Text,
    /// One `result` object.
    Json,
    /// JSON lines: `system/init`, then every message (children's marked by
    /// `parent_tool_use_id`), retries, and the `result` last.
    StreamJson,
}

/// What `-p` reads on stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum InputFormat {
    /// The prompt, as text.
    #[default]
    Text,
    /// One JSON message per line (`{"type":"user","message":{…}}`), each a
    /// turn, and `control_request`s; the run ends when stdin closes.
    StreamJson,
}

/// Print mode's stream flags.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Print mode")]
pub struct StreamArgs {
    /// With -p: text (the prompt) or stream-json (JSON messages, one per line, a turn each)
    #[arg(long, value_enum, value_name = "FORMAT", requires = "print")]
    pub input_format: Option<InputFormat>,
    /// With --output-format stream-json: also the reply's stream as `stream_event` lines
    #[arg(long, requires = "print")]
    pub include_partial_messages: bool,
    /// With stream-json in and out: echo each message read on stdin
    #[arg(long, requires = "print")]
    pub replay_user_messages: bool,
    /// Subagents' messages are in the stream, marked by parent_tool_use_id (cadre's default; kept for Claude Code's scripts)
    #[arg(long)]
    pub forward_subagent_text: bool,
}

impl StreamArgs {
    /// Checks the combinations Claude Code refuses.
    pub fn validate(&self, output: Option<OutputFormat>) -> Result<(), UsageError> {
        let streaming_out = output == Some(OutputFormat::StreamJson);
        if self.input_format == Some(InputFormat::StreamJson) && !streaming_out {
            return Err(UsageError(
                "--input-format stream-json needs --output-format stream-json".into(),
            ));
        }
        if self.include_partial_messages && !streaming_out {
            return Err(UsageError(
                "--include-partial-messages needs --output-format stream-json".into(),
            ));
        }
        if self.replay_user_messages && self.input_format != Some(InputFormat::StreamJson) {
            return Err(UsageError(
                "--replay-user-messages needs --input-format stream-json and --output-format stream-json".into(),
            ));
        }
        Ok(())
    }

    /// Whether children's own messages go into the stream: always, unless
    /// `CLAUDE_CODE_FORWARD_SUBAGENT_TEXT` (or cadre's name for it) says `0`.
    pub fn forwards_children(&self) -> bool {
        if self.forward_subagent_text {
            return true;
        }
        [
            "CADRE_FORWARD_SUBAGENT_TEXT",
            "CLAUDE_CODE_FORWARD_SUBAGENT_TEXT",
        ]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .all(|v| !matches!(v.trim(), "0" | "false" | "no"))
    }
}

/// The prompt of a print-mode run: piped stdin (when it is not a
/// terminal) first, then the argument.
pub fn prompt(argument: Option<String>) -> Result<String, UsageError> {
    let stdin = std::io::stdin();
    let piped = if stdin.is_terminal() {
        None
    } else {
        let mut bytes = Vec::new();
        let read = stdin
            .lock()
            .take(MAX_STDIN_BYTES as u64 + 1)
            .read_to_end(&mut bytes);
        match read {
            Ok(_) if bytes.len() > MAX_STDIN_BYTES => {
                return Err(UsageError(format!(
                    "the input piped to -p is over {} MB; pass a file path in the prompt instead",
                    MAX_STDIN_BYTES / (1024 * 1024)
                )));
            }
            Ok(_) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            // Claude Code goes on with the argument when stdin cannot be read.
            Err(e) => {
                eprintln!("warning: stdin could not be read ({e}); using the prompt alone");
                None
            }
        }
    };
    let piped = piped.filter(|p| !p.trim().is_empty());
    match (piped, argument.filter(|a| !a.trim().is_empty())) {
        (Some(piped), Some(arg)) => Ok(format!("{}\n\n{arg}", piped.trim_end())),
        (Some(piped), None) => Ok(piped),
        (None, Some(arg)) => Ok(arg),
        (None, None) => Err(UsageError(
            "-p needs a prompt: give it as an argument or pipe it on stdin (cadre -p \"explain this\")"
                .into(),
        )),
    }
}

/// The figures a `result` object reports, gathered from the run's events.
#[derive(Debug)]
pub struct ResultSummary {
    started: Instant,
    session_id: String,
    main_model: String,
    /// The model each agent talks to (children from `subagent_started`).
    models: BTreeMap<String, String>,
    /// Tokens and cost by model, children included.
    by_model: BTreeMap<String, (Usage, f64)>,
    /// The main agent's own tokens.
    main_usage: Usage,
    total_cost: f64,
    num_turns: u32,
    api_ms: u128,
    requests_open: BTreeMap<String, Instant>,
    denials: Vec<Value>,
    /// Tool calls by id, for the denials' inputs.
    inputs: BTreeMap<String, Value>,
}

impl Default for ResultSummary {
    fn default() -> Self {
        ResultSummary {
            started: Instant::now(),
            session_id: String::new(),
            main_model: String::new(),
            models: BTreeMap::new(),
            by_model: BTreeMap::new(),
            main_usage: Usage::default(),
            total_cost: 0.0,
            num_turns: 0,
            api_ms: 0,
            requests_open: BTreeMap::new(),
            denials: Vec::new(),
            inputs: BTreeMap::new(),
        }
    }
}

impl ResultSummary {
    /// Takes in one event of the run.
    pub fn observe(&mut self, event: &Event) {
        match event {
            Event::SessionStarted {
                session_id, model, ..
            } => {
                self.session_id = session_id.clone();
                self.main_model = model.clone();
                self.models.insert(MAIN_AGENT.into(), model.clone());
            }
            Event::ModelChanged { agent, model } => {
                if agent == MAIN_AGENT {
                    self.main_model = model.clone();
                }
                self.models.insert(agent.to_string(), model.clone());
            }
            Event::SubagentStarted {
                agent_id, model, ..
            } => {
                self.models.insert(agent_id.to_string(), model.clone());
            }
            // A child's own requests are not reported one by one: its totals
            // come when it ends.
            Event::SubagentEnded {
                agent_id,
                usage,
                cost_usd,
                ..
            } => self.add(agent_id, usage, *cost_usd),
            Event::RequestStarted { agent, .. } => {
                if agent == MAIN_AGENT {
                    self.num_turns += 1;
                }
                self.requests_open.insert(agent.to_string(), Instant::now());
            }
            Event::Usage {
                agent,
                usage,
                cost_usd,
            } => {
                if let Some(t) = self.requests_open.remove(agent.as_str()) {
                    self.api_ms += t.elapsed().as_millis();
                }
                self.add(agent, usage, *cost_usd);
                if agent == MAIN_AGENT {
                    self.main_usage.add(usage);
                }
            }
            Event::ToolCallStarted { call_id, input, .. } => {
                self.inputs.insert(call_id.clone(), input.clone());
            }
            Event::ToolCallDenied {
                agent,
                call_id,
                tool,
                ..
            } if agent == MAIN_AGENT => {
                self.denials.push(json!({
                    "tool_name": tool,
                    "tool_use_id": call_id,
                    "tool_input": self.inputs.get(call_id).cloned().unwrap_or_else(|| json!({})),
                }));
            }
            _ => {}
        }
    }

    /// Counts `usage` and `cost` under the model `agent` talks to.
    fn add(&mut self, agent: &str, usage: &Usage, cost: Option<f64>) {
        let model = self
            .models
            .get(agent)
            .cloned()
            .unwrap_or_else(|| self.main_model.clone());
        let entry = self.by_model.entry(model).or_default();
        entry.0.add(usage);
        entry.1 += cost.unwrap_or(0.0);
        self.total_cost += cost.unwrap_or(0.0);
    }

    /// The `result` object for a run that ended with `status`, its final
    /// answer `text` and, when it failed, `error`.
    pub fn result(
        &self,
        status: TurnStatus,
        text: &str,
        error: Option<&str>,
        structured: Option<Value>,
    ) -> Value {
        let said = |start: &str| error.is_some_and(|e| e.starts_with(start));
        let (subtype, is_error) = match status {
            TurnStatus::Completed => ("success", false),
            TurnStatus::LimitReached if said(cadre_core::model::BUDGET_EXHAUSTED) => {
                ("error_max_budget_usd", true)
            }
            TurnStatus::LimitReached => ("error_max_turns", true),
            TurnStatus::Failed if said(cadre_core::structured::RETRIES_EXHAUSTED) => {
                ("error_max_structured_output_retries", true)
            }
            TurnStatus::Interrupted | TurnStatus::Failed => ("error_during_execution", true),
        };
        let usage = |u: &Usage| {
            json!({
                "input_tokens": u.input_tokens,
                "output_tokens": u.output_tokens,
                "cache_read_input_tokens": u.cache_read_tokens,
                "cache_creation_input_tokens": u.cache_write_tokens,
            })
        };
        let model_usage: serde_json::Map<String, Value> = self
            .by_model
            .iter()
            .map(|(model, (u, cost))| {
                (
                    model.clone(),
                    json!({
                        "inputTokens": u.input_tokens,
                        "outputTokens": u.output_tokens,
                        "cacheReadInputTokens": u.cache_read_tokens,
                        "cacheCreationInputTokens": u.cache_write_tokens,
                        "costUSD": round_usd(*cost),
                    }),
                )
            })
            .collect();
        let mut out = json!({
            "type": "result",
            "subtype": subtype,
            "is_error": is_error,
            "duration_ms": self.started.elapsed().as_millis() as u64,
            "duration_api_ms": self.api_ms as u64,
            "num_turns": self.num_turns,
            "session_id": self.session_id,
            "total_cost_usd": round_usd(self.total_cost),
            "usage": usage(&self.main_usage),
            "modelUsage": model_usage,
            "permission_denials": self.denials,
            "uuid": uuid::Uuid::now_v7().to_string(),
        });
        if is_error {
            // Claude Code's error results carry `errors` instead of `result`.
            out["errors"] = json!([error.unwrap_or("the run did not complete")]);
        } else {
            out["result"] = json!(text);
        }
        if let Some(value) = structured {
            out["structured_output"] = value;
        }
        out
    }
}

/// Claude Code's `stream-json` lines for a run's events. Every agent's
/// messages come in the Anthropic message shape whichever provider runs;
/// a child's carry the id of the `Agent` call that started it.
#[derive(Debug, Default)]
pub struct StreamRenderer {
    /// The `system/init` line, without its session id, until the session starts.
    init: Option<Value>,
    session_id: String,
    /// `--include-partial-messages`: the main agent's reply as it streams.
    partial: bool,
    /// Whether a text block of the reply now streaming was opened.
    block_open: bool,
    /// Leave children's own messages out (they are in by default).
    main_only: bool,
    /// Background tasks, whose ends are announced as `task_notification`s.
    background: std::collections::BTreeSet<String>,
    /// The main agent's model.
    model: String,
    /// The `Agent` calls of each agent's latest reply, in order.
    agent_calls: crate::child_calls::AgentCalls,
    /// The call that started each child.
    parent_call: BTreeMap<String, String>,
    /// Each teammate's name, by its agent id: its messages carry it.
    teammates: BTreeMap<String, String>,
}

impl StreamRenderer {
    /// A renderer whose `system/init` line is `init` (the session id is added).
    pub fn new(init: Value, args: &StreamArgs) -> StreamRenderer {
        StreamRenderer {
            init: Some(init),
            partial: args.include_partial_messages,
            main_only: !args.forwards_children(),
            ..StreamRenderer::default()
        }
    }

    /// The session's id (empty until it starts).
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// A line of kind `type` and `subtype` with `fields`, the session id and a uuid.
    pub fn system(&self, subtype: &str, fields: Value) -> Value {
        let mut line = json!({
            "type": "system",
            "subtype": subtype,
        });
        if let (Value::Object(out), Value::Object(add)) = (&mut line, fields) {
            out.extend(add);
        }
        line["session_id"] = json!(self.session_id);
        line["uuid"] = json!(uuid::Uuid::now_v7().to_string());
        line
    }

    /// A raw stream event of the main agent's reply (`stream_event`).
    fn stream_event(&self, event: Value) -> Value {
        json!({
            "type": "stream_event",
            "event": event,
            "parent_tool_use_id": null,
            "session_id": self.session_id,
            "uuid": uuid::Uuid::now_v7().to_string(),
        })
    }

    /// A child's start or end as a `system` line naming the call that
    /// started it (as `tool_use_id`, like Claude Code's task lines).
    fn child_line(&self, event: &Event, agent_id: &str) -> Vec<Value> {
        let mut lines = self.own_event(event);
        if let Some(line) = lines.first_mut() {
            line["tool_use_id"] = self
                .parent_call
                .get(agent_id)
                .map(|c| json!(c))
                .unwrap_or(Value::Null);
        }
        lines
    }

    /// The model the run started with (for `message_start`).
    fn init_model(&self) -> String {
        self.model.clone()
    }

    /// The lines of cadre's own events that Claude Code's stream has no kind
    /// for: `system` lines named after them.
    fn own_event(&self, event: &Event) -> Vec<Value> {
        let Ok(Value::Object(mut fields)) = serde_json::to_value(event) else {
            return Vec::new();
        };
        let kind = fields
            .remove("type")
            .and_then(|t| t.as_str().map(str::to_string))
            .unwrap_or_default();
        vec![self.system(&kind, Value::Object(fields))]
    }

    /// The lines `event` makes (none for most events).
    pub fn lines(&mut self, event: &Event) -> Vec<Value> {
        match event {
            Event::SessionStarted {
                session_id, model, ..
            } => {
                self.session_id = session_id.clone();
                self.model = model.clone();
                let Some(mut init) = self.init.take() else {
                    return Vec::new();
                };
                init["session_id"] = json!(session_id);
                vec![init]
            }
            Event::SubagentStarted {
                index,
                agent_id,
                path,
                ..
            } => {
                if let (_, Some(call)) = self.agent_calls.parent_of(*index, path) {
                    self.parent_call.insert(agent_id.to_string(), call);
                }
                self.child_line(event, agent_id)
            }
            Event::Message { agent, .. } if self.main_only && agent != MAIN_AGENT => Vec::new(),
            Event::Message {
                agent,
                message,
                model,
                stop_reason,
                usage,
            } => {
                let mut lines = Vec::new();
                if self.partial
                    && agent == MAIN_AGENT
                    && message.role == cadre_core::model::Role::Assistant
                {
                    if std::mem::take(&mut self.block_open) {
                        lines.push(self.stream_event(
                            json!({"type": "content_block_stop", "index": 0}),
                        ));
                    }
                    lines.push(self.stream_event(json!({
                        "type": "message_delta",
                        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                        "usage": {"output_tokens": usage.as_ref().map_or(0, |u| u.output_tokens)},
                    })));
                    lines.push(self.stream_event(json!({"type": "message_stop"})));
                }
                let parent = if agent == MAIN_AGENT {
                    Value::Null
                } else {
                    self.parent_call
                        .get(agent.as_str())
                        .map(|c| json!(c))
                        .unwrap_or(Value::Null)
                };
                let mut body = cadre_core::model::message_json(message);
                let kind = match message.role {
                    cadre_core::model::Role::Assistant => {
                        self.agent_calls.record(agent, message);
                        body["id"] = json!(format!("msg_{}", uuid::Uuid::now_v7().simple()));
                        body["type"] = json!("message");
                        body["model"] = json!(model);
                        body["stop_reason"] = json!(stop_reason);
                        body["stop_sequence"] = Value::Null;
                        if let Some(u) = usage {
                            body["usage"] = json!({
                                "input_tokens": u.input_tokens,
                                "output_tokens": u.output_tokens,
                                "cache_read_input_tokens": u.cache_read_tokens,
                                "cache_creation_input_tokens": u.cache_write_tokens,
                            });
                        }
                        "assistant"
                    }
                    cadre_core::model::Role::User => "user",
                };
                let mut line = json!({
                    "type": kind,
                    "message": body,
                    "parent_tool_use_id": parent,
                    "session_id": self.session_id,
                    "uuid": uuid::Uuid::now_v7().to_string(),
                });
                // cadre's mark: whose conversation a teammate's message is in.
                if let Some(name) = self.teammates.get(agent.as_str()) {
                    line["teammate"] = json!(name);
                }
                lines.push(line);
                lines
            }
            Event::TeammateChanged { name, agent_id, .. } => {
                self.teammates.insert(agent_id.to_string(), name.clone());
                self.own_event(event)
            }
            Event::TeamMessageSent { .. }
            | Event::TeamMessagesDelivered { .. }
            | Event::BoardTaskChanged { .. } => self.own_event(event),
            Event::RequestStarted { agent, .. } if self.partial && agent == MAIN_AGENT => {
                self.block_open = false;
                vec![self.stream_event(json!({
                    "type": "message_start",
                    "message": {
                        "id": format!("msg_{}", uuid::Uuid::now_v7().simple()),
                        "type": "message",
                        "role": "assistant",
                        "content": [],
                        "model": self.init_model(),
                        "stop_reason": null,
                        "stop_sequence": null,
                        "usage": {"input_tokens": 0, "output_tokens": 0},
                    },
                }))]
            }
            Event::TextDelta { agent, text } if self.partial && agent == MAIN_AGENT => {
                let mut lines = Vec::new();
                if !std::mem::replace(&mut self.block_open, true) {
                    lines.push(self.stream_event(json!({
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    })));
                }
                lines.push(self.stream_event(json!({
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                })));
                lines
            }
            Event::TaskStarted {
                task_id,
                kind,
                description,
                background,
                owner,
            } => {
                if *background {
                    self.background.insert(task_id.clone());
                }
                vec![self.system(
                    "task_started",
                    json!({
                        "task_id": task_id,
                        "description": description,
                        "task_type": kind,
                        "background": background,
                        "owner": owner,
                    }),
                )]
            }
            Event::TaskEnded {
                task_id,
                status,
                description,
            } if self.background.remove(task_id) => {
                use cadre_core::protocol::TaskStatus;
                let said = match status {
                    TaskStatus::Succeeded => "completed",
                    TaskStatus::Cancelled => "stopped",
                    _ => "failed",
                };
                vec![self.system(
                    "task_notification",
                    json!({
                        "task_id": task_id,
                        "status": said,
                        "summary": description,
                        "task_status": status,
                    }),
                )]
            }
            Event::HookStarted {
                agent,
                event,
                command,
                source,
            } => vec![self.system(
                "hook_started",
                json!({"hook_event": event, "hook_name": command, "agent": agent, "source": source}),
            )],
            Event::HookEnded {
                agent,
                event,
                command,
                decision,
                exit_code,
                duration_ms,
            } => vec![self.system(
                "hook_response",
                json!({
                    "hook_event": event,
                    "hook_name": command,
                    "agent": agent,
                    "decision": decision,
                    "exit_code": exit_code,
                    "duration_ms": duration_ms,
                }),
            )],
            Event::CompactionStarted { agent, .. } => vec![self.system(
                "status",
                json!({"status": "compacting", "agent": agent}),
            )],
            Event::CompactionEnded {
                agent,
                trigger,
                tokens_before,
                tokens_after,
                error: None,
                ..
            } => vec![self.system(
                "compact_boundary",
                json!({
                    "agent": agent,
                    "compact_metadata": {"trigger": trigger, "pre_tokens": tokens_before, "post_tokens": tokens_after},
                }),
            )],
            Event::SubagentEnded { agent_id, .. } => self.child_line(event, agent_id),
            Event::ModelChanged { agent, model } => {
                if agent == MAIN_AGENT {
                    self.model = model.clone();
                }
                self.own_event(event)
            }
            Event::CompactionEnded { .. }
            | Event::SubagentBackgrounded { .. }
            | Event::TasksNotified { .. }
            | Event::Rewound { .. }
            | Event::CodeRestored { .. }
            | Event::RewindNeedsConfirmation { .. }
            | Event::Checkpoints { .. }
            | Event::ModeChanged { .. }
            | Event::Warning { .. }
            | Event::McpServerStatus { .. }
            | Event::SessionResumed { .. }
            | Event::ApprovalRequested { .. }
            | Event::ApprovalAnswered { .. }
            | Event::ToolCallDenied { .. } => self.own_event(event),
            Event::Retrying {
                agent,
                attempt,
                status,
                wait_ms,
                reason,
                ..
            } if agent == MAIN_AGENT => vec![json!({
                "type": "system",
                "subtype": "api_retry",
                "attempt": attempt,
                "max_retries": crate::setup::MAX_ATTEMPTS.saturating_sub(1),
                "retry_delay_ms": wait_ms,
                "error_status": status,
                "error": reason,
                "session_id": self.session_id,
                "uuid": uuid::Uuid::now_v7().to_string(),
            })],
            _ => Vec::new(),
        }
    }
}

/// The final answer as `--json-schema`'s JSON value, when the run completed with one.
pub fn structured_output(
    runtime: &cadre_core::driver::SessionBuilder,
    status: TurnStatus,
    text: &str,
) -> Option<Value> {
    let schema = runtime.shape.answer_schema.as_ref()?;
    (status == TurnStatus::Completed)
        .then(|| schema.check(text).ok())
        .flatten()
}

/// The `system/init` line of a run on `runtime` (the session id is added
/// when the session starts): its tools, MCP servers, permission mode,
/// commands, skills, agents, plugins, model and folder.
pub fn init_line(runtime: &cadre_core::driver::SessionBuilder) -> Value {
    let mut tools: Vec<String> = runtime
        .web
        .session_tools()
        .names()
        .into_iter()
        .map(str::to_string)
        .collect();
    if runtime.skills.for_model().next().is_some() {
        tools.push("Skill".into());
    }
    let servers: Vec<Value> = runtime
        .mcp
        .servers()
        .iter()
        .map(|s| json!({"name": s.name(), "status": "pending"}))
        .collect();
    let skills: Vec<&str> = runtime
        .skills
        .skills
        .iter()
        .filter(|s| s.kind == cadre_core::skills::SkillKind::Skill)
        .map(|s| s.name.as_str())
        .collect();
    let commands: Vec<String> = runtime.skills.menu().into_iter().map(|c| c.name).collect();
    let plugins: Vec<Value> = runtime
        .plugins
        .plugins
        .iter()
        .map(|p| json!({"name": p.name, "path": p.root}))
        .collect();
    json!({
        "type": "system",
        "subtype": "init",
        "cwd": runtime.cwd,
        "session_id": "",
        "tools": tools,
        "mcp_servers": servers,
        "model": runtime.client.config().model,
        "permissionMode": runtime.policy.mode.to_string(),
        "slash_commands": commands,
        "skills": skills,
        "agents": runtime.agent_types,
        "plugins": plugins,
        "apiKeySource": if runtime.client.config().api_key.is_some() { "environment" } else { "none" },
        "output_style": "default",
        "claude_code_version": concat!("cadre ", env!("CARGO_PKG_VERSION")),
        "uuid": uuid::Uuid::now_v7().to_string(),
    })
}

/// Dollars to the nearest millionth, so sums print without float noise.
fn round_usd(usd: f64) -> f64 {
    (usd * 1_000_000.0).round() / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_and_cost_add_up_by_model_with_children() {
        let mut s = ResultSummary::default();
        s.observe(&Event::SessionStarted {
            session_id: "s1".into(),
            provider: cadre_core::model::Provider::Anthropic,
            model: "big".into(),
            cwd: "/p".into(),
        });
        let usage = |i, o| Usage {
            input_tokens: i,
            output_tokens: o,
            ..Usage::default()
        };
        s.observe(&Event::RequestStarted {
            agent: "main".into(),
            request: 1,
        });
        s.observe(&Event::Usage {
            agent: "main".into(),
            usage: usage(10, 2),
            cost_usd: Some(0.5),
        });
        s.observe(&Event::SubagentEnded {
            index: 1,
            total: 1,
            agent_id: "child-1".into(),
            agent_type: "Explore".into(),
            status: cadre_core::protocol::ChildStatus::Completed,
            requests: 1,
            tool_calls: 0,
            usage: usage(5, 1),
            duration_ms: 3,
            error: None,
            cost_usd: Some(0.25),
            compactions: 0,
            worktree: None,
        });
        let r = s.result(TurnStatus::Completed, "answer", None, None);
        assert_eq!(r["subtype"], "success");
        assert_eq!(r["result"], "answer");
        assert_eq!(r["num_turns"], 1);
        assert_eq!(r["total_cost_usd"], 0.75);
        assert_eq!(r["usage"]["input_tokens"], 10);
        assert_eq!(r["modelUsage"]["big"]["inputTokens"], 15);
        let failed = s.result(TurnStatus::LimitReached, "", Some("too many"), None);
        assert_eq!(failed["subtype"], "error_max_turns");
        assert_eq!(failed["is_error"], true);
        assert_eq!(failed["errors"][0], "too many");
        assert!(failed.get("result").is_none());
    }
}
