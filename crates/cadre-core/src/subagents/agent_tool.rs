//! The `Agent` tool as the model sees it: one stable spec whatever definitions
//! exist (the roster of types travels in a system reminder instead, so adding
//! a definition file never changes the tool list and the prompt cache holds).
//! Calls are run by the agent loop as a batch (see `runtime`), not here.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::{Tool, ToolContext, ToolInput, ToolOutput, input_schema};

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
}

/// Arguments of one `SendMessage` call, parsed strictly. (Field docs are
/// the descriptions the model is shown.)
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessageArgs {
    /// Agent id or name
    pub to: String,
    /// What to tell it
    pub message: String,
}

/// The `Agent` tool's spec.
pub struct AgentTool;

impl Tool for AgentTool {
    fn name(&self) -> &'static str {
        "Agent"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> serde_json::Value {
        static SCHEMA: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
        SCHEMA.get_or_init(input_schema::<AgentArgs>).clone()
    }

    fn is_read_only(&self) -> bool {
        false
    }
    // Starting a child changes nothing by itself; each of its calls is decided.
    fn effect(&self) -> crate::permissions::ToolEffect {
        crate::permissions::ToolEffect::ReadOnly
    }

    fn execute<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        _input: &'a ToolInput,
    ) -> BoxFuture<'a, ToolOutput> {
        // Reached only by an agent that has the spec but no subagent runtime.
        Box::pin(async { ToolOutput::error("subagents are not available to this agent") })
    }
}

/// The `SendMessage` tool's spec; calls are carried out by the subagent
/// runtime through the agent loop.
pub struct SendMessageTool;

impl Tool for SendMessageTool {
    fn name(&self) -> &'static str {
        "SendMessage"
    }

    fn description(&self) -> &'static str {
        "Send a message to a subagent you started, by its agent id or the `name` you gave it. A running subagent sees it with its next request (use this to steer it). A finished or stopped one is resumed in the background with its full history and answers by <task-notification>. Explore and Plan are one-shot and cannot be resumed."
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

    fn execute<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        _input: &'a ToolInput,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async {
            ToolOutput::error("messages to subagents are not available to this agent")
        })
    }
}

/// The system reminder listing the agent types (name and description only).
pub fn roster_reminder(roster: &[(String, String)]) -> String {
    let mut s = String::from(
        "<system-reminder>\nAgent types available to the Agent tool (subagent_type):\n",
    );
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
            &AgentTool,
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
