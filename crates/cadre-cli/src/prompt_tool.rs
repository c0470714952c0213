//! `--permission-prompt-tool mcp__server__tool`: an MCP tool answers the
//! permission questions a person would. It gets Claude Code's input
//! (`tool_name`, `input`, `tool_use_id`) and answers with JSON text:
//! `{"behavior":"allow"}` runs the call, `{"behavior":"deny","message":…}`
//! refuses it and tells the model why. Anything else is a refusal.

use std::collections::BTreeMap;
use std::sync::Arc;

use cadre_core::driver::SessionHandle;
use cadre_core::mcp::McpServer;
use cadre_core::protocol::{ApprovalAnswer, ApprovalQuestion, Event, Op};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::UsageError;
use cadre_core::driver::SessionBuilder;

/// Answers questions through an MCP tool.
pub struct PromptToolAnswers {
    server: Arc<McpServer>,
    tool: String,
    handle: SessionHandle,
    /// Each agent's latest call of each tool: its id and arguments.
    last_call: BTreeMap<(String, String), (String, Value)>,
}

impl PromptToolAnswers {
    /// The answerer for `name` (`mcp__server__tool`), among the session's servers.
    pub fn new(
        runtime: &SessionBuilder,
        name: &str,
        handle: SessionHandle,
    ) -> Result<PromptToolAnswers, UsageError> {
        let found = runtime.mcp.servers().iter().find_map(|s| {
            name.strip_prefix(&format!("mcp__{}__", s.name()))
                .filter(|t| !t.is_empty())
                .map(|t| (s.clone(), t.to_string()))
        });
        let Some((server, tool)) = found else {
            return Err(UsageError(format!(
                "--permission-prompt-tool {name}: no configured MCP server offers it (see `cadre mcp list`)"
            )));
        };
        Ok(PromptToolAnswers {
            server,
            tool,
            handle,
            last_call: BTreeMap::new(),
        })
    }

    /// Takes in one event: notes calls, and answers questions.
    pub fn on_event(&mut self, event: &Event) {
        match event {
            Event::ToolCallStarted {
                agent,
                call_id,
                tool,
                input,
                ..
            } => {
                self.last_call.insert(
                    (agent.to_string(), tool.clone()),
                    (call_id.clone(), input.clone()),
                );
            }
            Event::ApprovalRequested { question, id } => {
                let (call_id, input) = self
                    .last_call
                    .get(&(question.agent.to_string(), question.tool.clone()))
                    .cloned()
                    .unwrap_or_else(|| (String::new(), input_of(question)));
                let server = self.server.clone();
                let tool = self.tool.clone();
                let handle = self.handle.clone();
                let id = *id;
                let tool_name = question.tool.clone();
                tokio::spawn(async move {
                    let mut args = serde_json::Map::new();
                    args.insert("tool_name".into(), json!(tool_name));
                    args.insert("input".into(), input);
                    args.insert("tool_use_id".into(), json!(call_id));
                    let result = server.call(&tool, args, &CancellationToken::new()).await;
                    let answer = if result.is_error {
                        ApprovalAnswer::Instead(format!(
                            "the permission prompt tool failed, so the call was refused: {}",
                            result.text
                        ))
                    } else {
                        answer_of(&result.text)
                    };
                    handle.submit(Op::ApprovalAnswer {
                        id: (id > 0).then_some(id),
                        answer,
                    });
                });
            }
            _ => {}
        }
    }
}

/// The arguments of a question's call when its start was not seen (a
/// child's): the JSON shown, or Bash's command.
fn input_of(question: &ApprovalQuestion) -> Value {
    serde_json::from_str(&question.input).unwrap_or_else(|_| json!({"command": question.input}))
}

/// The answer the tool's reply gives.
fn answer_of(text: &str) -> ApprovalAnswer {
    let reply: Value = serde_json::from_str(text.trim()).unwrap_or(Value::Null);
    match reply.get("behavior").and_then(Value::as_str) {
        Some("allow") => ApprovalAnswer::Once,
        Some("deny") => match reply.get("message").and_then(Value::as_str) {
            Some(m) if !m.trim().is_empty() => ApprovalAnswer::Instead(m.to_string()),
            _ => ApprovalAnswer::No,
        },
        _ => ApprovalAnswer::Instead(format!(
            "the permission prompt tool's reply is not {{\"behavior\": \"allow\"|\"deny\"}}, so the call was refused: {}",
            text.chars().take(200).collect::<String>()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_map_to_answers() {
        assert_eq!(
            answer_of(r#"{"behavior":"allow","updatedInput":{}}"#),
            ApprovalAnswer::Once
        );
        assert_eq!(
            answer_of(r#"{"behavior":"deny","message":"not today"}"#),
            ApprovalAnswer::Instead("not today".into())
        );
        assert_eq!(answer_of(r#"{"behavior":"deny"}"#), ApprovalAnswer::No);
        assert!(matches!(answer_of("yes"), ApprovalAnswer::Instead(_)));
    }
}
