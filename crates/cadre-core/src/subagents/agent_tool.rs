//! The `Agent` tool as the model sees it: one stable spec whatever definitions
//! exist (the roster of types travels in a system reminder instead, so adding
//! a definition file never changes the tool list and the prompt cache holds).
//! A reply's calls come here as one batch and go on to the subagent runtime
//! through the tool context's [`Delegation`](crate::tools::Delegation).

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::tools::{
    BatchPosition, Refusal, Scheduling, SpawnCall, Tool, ToolContext, ToolInput, ToolOutput,
    input_schema, parse_args, with_description,
};

/// What the model is taught about delegating.
const DESCRIPTION: &str = "Start a subagent: a separate agent with its own clean context that works on one task and returns only its final report.

When to use it: open-ended searches and investigations that would take many reads and greps, independent pieces of work that can run side by side, and specialised work for which an agent type exists (see the list of available agent types in the system reminder). Don't delegate what one or two direct Read/Grep/Glob calls answer, and don't delegate understanding: never write \"based on your findings, fix it\" — read the report, decide, then act or delegate a precise change.

Write the prompt as a complete brief for a capable colleague who has seen nothing of this conversation: the goal and why it matters, what is already known or ruled out, the scope (files, directories, what not to touch), and exactly what to return and how long (e.g. \"file paths with line numbers and a two-sentence explanation; under 200 words\"). The subagent cannot ask you questions.

Send independent tasks as several Agent calls in ONE reply: they run at the same time. Subagents share the file system, so don't give two parallel tasks the same files to change. Their reports are not shown to the user; relay what matters.";

/// Arguments of one `Agent` call, parsed strictly.
/// (Field docs are the descriptions the model is shown.)
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentArgs {
    /// A short (3-5 word) title for the task
    pub description: String,
    /// The complete, self-contained task for the subagent
    pub prompt: String,
    /// The agent type to use (see the available agent types); omit for the default
    pub subagent_type: Option<String>,
    /// Model override (sonnet, opus, haiku or an id); only when the user asked for one
    pub model: Option<String>,
    /// Return a task id at once and be notified when it finishes
    pub run_in_background: Option<bool>,
    /// A name to address this subagent later with SendMessage
    pub name: Option<String>,
    /// Run in a fresh git worktree
    #[schemars(extend("enum" = ["worktree"]))]
    pub isolation: Option<String>,
    /// Teammates only: it works read-only in plan mode until you approve its plan
    pub plan_mode_required: Option<bool>,
    /// Accepted and ignored, as Claude Code does (deprecated there)
    #[schemars(skip)]
    pub mode: Option<String>,
    /// Accepted and ignored, as Claude Code does (a session has one team)
    #[schemars(skip)]
    pub team_name: Option<String>,
}

/// Arguments of one `SendMessage` call, parsed strictly. (Field docs are
/// the descriptions the model is shown.)
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessageArgs {
    /// The recipient: a subagent's id or name; in a team, a teammate's name or team-lead
    pub to: String,
    /// What to tell it: text, or a team protocol message ({"type": "shutdown_request", ...})
    pub message: MessageBody,
    /// A 5-10 word preview, shown to a team member (its first line if omitted)
    pub summary: Option<String>,
}

pub use crate::teams::messages::MessageBody;

/// The `Agent` tool.
pub struct AgentTool {
    /// Whether the agent has `SendMessage` (the `name` argument points to it).
    send_message: bool,
}

impl Default for AgentTool {
    fn default() -> Self {
        AgentTool { send_message: true }
    }
}

/// Why a fork's `Agent` call is refused.
const FORK_REFUSAL: &str = "denied: a forked worker cannot start subagents or forks; do the work yourself with your other tools";

impl Tool for AgentTool {
    fn name(&self) -> &'static str {
        "Agent"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> serde_json::Value {
        static SCHEMA: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
        let schema = SCHEMA.get_or_init(input_schema::<AgentArgs>).clone();
        if self.send_message {
            schema
        } else {
            with_description(
                schema,
                "name",
                "A name for this subagent, shown in its task",
            )
        }
    }

    fn is_read_only(&self) -> bool {
        false
    }
    // Starting a child changes nothing by itself; each of its calls is decided.
    fn effect(&self) -> crate::permissions::ToolEffect {
        crate::permissions::ToolEffect::ReadOnly
    }

    fn validate(&self, input: &ToolInput) -> Result<(), ToolOutput> {
        crate::tools::validate_as::<AgentArgs>(self, input)
    }

    fn scheduling(&self) -> Scheduling {
        Scheduling::Batch
    }

    fn execute<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a ToolInput,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            // Alone, a call still goes the batch's way: admitted, then spawned.
            let mut inputs = [input.clone()];
            match self.admit_batch(ctx, &mut inputs).pop().flatten() {
                Some(Refusal::Invalid(out)) => return out,
                Some(Refusal::Denied(reason)) => return ToolOutput::error(reason),
                None => {}
            }
            let position = BatchPosition {
                first_index: 1,
                total: 1,
            };
            match self.execute_batch(ctx, position, &inputs).await {
                Ok(mut outs) => outs.pop().unwrap_or_else(|| ToolOutput::error("not run")),
                Err(e) => ToolOutput::error(format!("not run: {e}")),
            }
        })
    }

    /// Parses each call, names the default type where none is given (so a
    /// rule naming that type applies), then refuses the whole batch for a
    /// fork or past the per-turn cap, before anything is asked or started.
    fn admit_batch(&self, ctx: &ToolContext, inputs: &mut [ToolInput]) -> Vec<Option<Refusal>> {
        let Some(delegation) = &ctx.delegation else {
            let out = ToolOutput::error("subagents are not available to this agent");
            return vec![Some(Refusal::Invalid(out)); inputs.len()];
        };
        if ctx.caller.as_ref().is_some_and(|c| c.fork) {
            // A fork keeps `Agent` in its tool list (so its prefix matches its
            // parent's), but a fork never forks or spawns.
            return vec![Some(Refusal::Denied(FORK_REFUSAL.into())); inputs.len()];
        }
        let mut refusals: Vec<Option<Refusal>> = inputs
            .iter_mut()
            .map(|input| match parse_args::<AgentArgs>(input) {
                Ok(args) => {
                    let kind = args
                        .subagent_type
                        .filter(|t| !t.trim().is_empty())
                        .unwrap_or_else(|| delegation.default_type());
                    input.insert("subagent_type".into(), Value::String(kind));
                    None
                }
                Err(out) => Some(Refusal::Invalid(out)),
            })
            .collect();
        let parsed = refusals.iter().filter(|r| r.is_none()).count();
        if let Err(reason) = delegation.check_turn_cap(parsed) {
            for r in refusals.iter_mut().filter(|r| r.is_none()) {
                *r = Some(Refusal::Denied(reason.clone()));
            }
        }
        refusals
    }

    fn execute_batch<'a>(
        &'a self,
        ctx: &'a ToolContext,
        position: BatchPosition,
        inputs: &'a [ToolInput],
    ) -> BoxFuture<'a, Result<Vec<ToolOutput>, String>> {
        Box::pin(async move {
            let (Some(delegation), Some(caller)) = (&ctx.delegation, &ctx.caller) else {
                let out = ToolOutput::error("subagents are not available to this agent");
                return Ok(vec![out; inputs.len()]);
            };
            let calls = inputs
                .iter()
                .enumerate()
                .map(|(k, input)| SpawnCall {
                    index: position.first_index + k,
                    input: input.clone(),
                })
                .collect();
            delegation
                .spawn(caller, calls, position.total, &ctx.cancel)
                .await
        })
    }

    fn first_reminder(&self, ctx: &ToolContext) -> Option<String> {
        // The roster of agent types goes in once, before the first message,
        // so the tool list stays the same whatever definitions exist.
        ctx.delegation.as_ref().and_then(|d| d.roster())
    }

    fn among(&self, tools: &[&str]) -> Option<Arc<dyn Tool>> {
        let send_message = tools.contains(&"SendMessage");
        (send_message != self.send_message)
            .then(|| Arc::new(AgentTool { send_message }) as Arc<dyn Tool>)
    }
}

/// The `SendMessage` tool: carried out by the subagent runtime, reached
/// through the tool context.
pub struct SendMessageTool;

impl Tool for SendMessageTool {
    fn name(&self) -> &'static str {
        "SendMessage"
    }

    fn description(&self) -> &'static str {
        "Send a message to a subagent you started, by its agent id or the `name` you gave it. A running subagent sees it with its next request (use this to steer it). A finished or stopped one is resumed in the background with its full history and answers by <task-notification>. Explore and Plan are one-shot and cannot be resumed. In an agent team, `to` may name any member (a teammate, or team-lead); the message is kept until it reaches the member's conversation."
    }

    fn input_schema(&self) -> serde_json::Value {
        static SCHEMA: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
        SCHEMA.get_or_init(input_schema::<SendMessageArgs>).clone()
    }

    fn is_read_only(&self) -> bool {
        false
    }
    fn effect(&self) -> crate::permissions::ToolEffect {
        crate::permissions::ToolEffect::ReadOnly
    }

    fn validate(&self, input: &ToolInput) -> Result<(), ToolOutput> {
        crate::tools::validate_as::<SendMessageArgs>(self, input)
    }

    fn execute<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a ToolInput,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            // A team member's message goes to the team when it names a member.
            if let Some(seat) = &ctx.team {
                let args: SendMessageArgs = match crate::tools::parse_args(input) {
                    Ok(a) => a,
                    Err(e) => return e,
                };
                let to_member = seat.team.recipient(&args.to);
                if to_member.is_ok() || ctx.delegation.is_none() {
                    use crate::teams::messages::{NotSent, send};
                    return match send(seat, to_member, &args.message, args.summary.as_deref()).await
                    {
                        Ok(text) => ToolOutput::ok(text),
                        Err(NotSent::Arguments(e)) => ToolOutput::invalid_arguments(e),
                        Err(NotSent::Refused(e)) => ToolOutput::error(e),
                    };
                }
            }
            match &ctx.delegation {
                Some(d) => d.send_message(&ctx.agent_id, input).await,
                None => ToolOutput::error("messages to subagents are not available to this agent"),
            }
        })
    }
}

/// The system reminder listing the agent types (name and description only).
pub fn roster_reminder(roster: &[(String, String)]) -> String {
    let mut s = format!("<system-reminder>\n{}\n", crate::tools::ROSTER_HEADER);
    for (name, description) in roster {
        let one_line: String = description.split_whitespace().collect::<Vec<_>>().join(" ");
        s.push_str(&format!("- {name}: {one_line}\n"));
    }
    s.push_str("</system-reminder>");
    s
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::schema::testing::check_tool;

    #[test]
    fn agent_and_send_message_schemas_are_their_parsers() {
        check_tool::<AgentArgs>(
            &AgentTool::default(),
            &[
                json!({"description": "d", "prompt": "p"}),
                json!({
                    "description": "d", "prompt": "p", "subagent_type": "Explore",
                    "model": "haiku", "run_in_background": true, "name": "scout",
                    "isolation": "worktree"
                }),
            ],
            &[
                json!({"prompt": "p"}),
                json!({"description": "d", "prompt": "p", "team": "x"}),
                json!({"description": "d", "prompt": "p", "run_in_background": "yes"}),
            ],
        );
        check_tool::<SendMessageArgs>(
            &SendMessageTool,
            &[json!({"to": "scout", "message": "more"})],
            &[
                json!({"to": "scout"}),
                json!({"to": "a", "message": "m", "cc": "b"}),
            ],
        );
    }
}
