//! `cadre mcp serve`: cadre as an MCP server on stdin and stdout, so that
//! Claude Code, Codex or any MCP client can use its tools and delegate to its
//! subagents. Every call goes through the agent loop's own dispatch (hooks,
//! permission policy, sandbox, output cap) on an agent built as a session's
//! main agent is; nobody here can answer a question, so a call that would
//! need one is refused with the reason and what to allow instead (the
//! client does its own confirming). Stdout is the protocol: warnings go to
//! stderr, and nothing is printed on start.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use cadre_core::agent::Agent;
use cadre_core::permissions::{ApprovalAnswer, ApprovalQuestion, ApprovalSource, PermissionMode};
use cadre_core::protocol::{Event, EventSink};
use cadre_core::tools::ROSTER_HEADER;
use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::{AgentArgs, ModelArgs, PermissionArgs, setup};

/// The tools a client sees, in this order: the file, search and shell tools
/// and `Agent`. Others (`TodoWrite`, task tools, `AskUserQuestion`…) only
/// make sense inside a conversation cadre holds itself.
const SERVED: [&str; 7] = ["Read", "Write", "Edit", "Glob", "Grep", "Bash", "Agent"];

/// Of [`SERVED`], the tools that never change anything.
const READ_ONLY: [&str; 3] = ["Read", "Glob", "Grep"];

/// What the client is told about the server in the handshake.
const INSTRUCTIONS: &str = "cadre's file, search and shell tools, and Agent, which runs one of cadre's subagents to completion and returns its report. Calls are decided by cadre's permission policy; a call that would need a confirmation is refused with the rule that would allow it.";

/// Runs `cadre mcp serve` until the client closes the connection.
pub async fn run(model: &ModelArgs, perms: &PermissionArgs, agent: &AgentArgs) -> Result<ExitCode> {
    let runtime = setup::prepare(model, perms, agent)?;
    for w in &runtime.warnings {
        warn(w);
    }
    let (events, rx) = EventSink::channel();
    tokio::spawn(report_warnings(rx));
    // The configured MCP servers are not started: a client reaches them
    // itself, and a cadre listed among its own servers would start itself
    // again and again. No log: the calls are the client's, not a
    // conversation `cadre sessions` could show or resume.
    let agent = runtime.main_agent(
        cadre_core::driver::AgentParts {
            events,
            approvals: Arc::new(ClientConfirms),
            background: None,
            team: None,
        },
        None,
        None,
        false,
    )?;
    let server = CadreServer {
        agent: Arc::new(agent),
    };
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .context("MCP handshake failed")?;
    running.waiting().await.context("MCP service failed")?;
    Ok(ExitCode::SUCCESS)
}

/// A warning on stderr, its control characters shown rather than obeyed.
fn warn(message: &str) {
    eprintln!(
        "warning: {}",
        cadre_tui::sanitize::visible_controls(message)
    );
}

/// Drains the agents' events: only warnings are for a person (on stderr).
async fn report_warnings(mut rx: mpsc::UnboundedReceiver<Event>) {
    while let Some(event) = rx.recv().await {
        if let Event::Warning { message } = event {
            warn(&message);
        }
    }
}

/// The approval source of a server: the MCP client confirms calls itself,
/// so cadre asks nobody and says what would let the call run.
struct ClientConfirms;

impl ApprovalSource for ClientConfirms {
    fn can_ask(&self) -> bool {
        false
    }

    fn ask<'a>(&'a self, _question: &'a ApprovalQuestion) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(async { ApprovalAnswer::No })
    }

    fn refusal(&self, question: &ApprovalQuestion, mode: PermissionMode) -> String {
        refusal_text(question, mode)
    }
}

/// `cadre refused Bash: needs approval under permission mode default (it
/// runs a command); allow it with --allow 'Bash(make test:*)' or a settings rule`.
fn refusal_text(question: &ApprovalQuestion, mode: PermissionMode) -> String {
    let allow = if question.session_rule.is_empty() {
        "an --allow rule".to_string()
    } else {
        format!("--allow '{}'", question.session_rule.replace('\'', r"'\''"))
    };
    format!(
        "cadre refused {}: needs approval under permission mode {mode} ({}); allow it with {allow} or a settings rule",
        question.tool, question.reason
    )
}

/// The MCP side: lists the served tools and runs calls on the agent.
#[derive(Clone)]
struct CadreServer {
    agent: Arc<Agent>,
}

impl CadreServer {
    /// The served tools with the schemas and descriptions the model gets;
    /// `Agent`'s description names the agent types (the model learns them
    /// from a reminder, which a client never sees).
    fn tools(&self) -> Vec<Tool> {
        let specs = self.agent.tool_specs();
        SERVED
            .iter()
            .filter_map(|name| specs.iter().find(|s| s.name == *name))
            .filter_map(|spec| {
                let Value::Object(schema) = spec.input_schema.clone() else {
                    return None;
                };
                let mut description = spec.description.clone();
                if spec.name == "Agent"
                    && let Some(roster) = self.agent.delegation().and_then(|d| d.roster())
                {
                    description.push_str("\n\n");
                    description.push_str(&roster_text(&roster));
                }
                let mut tool = Tool::new(spec.name.clone(), description, Arc::new(schema));
                if READ_ONLY.contains(&spec.name.as_str()) {
                    tool = tool.with_annotations(ToolAnnotations::new().read_only(true));
                }
                Some(tool)
            })
            .collect()
    }
}

/// The roster reminder as plain text: the agent types `subagent_type` takes.
fn roster_text(reminder: &str) -> String {
    reminder
        .lines()
        .filter(|l| !l.starts_with("<system-reminder>") && !l.starts_with("</system-reminder>"))
        .map(|l| {
            if l == ROSTER_HEADER {
                "Agent types (subagent_type):"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl ServerHandler for CadreServer {
    fn get_info(&self) -> ServerConfig {
        let mut config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        config.server_info = Implementation::new("cadre", env!("CARGO_PKG_VERSION"));
        config.instructions = Some(INSTRUCTIONS.to_string());
        config
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        let served =
            SERVED.contains(&name) && self.agent.tool_specs().iter().any(|s| s.name == name);
        if !served {
            return Err(ErrorData::invalid_params(
                format!("unknown tool: {name}; cadre serves {}", SERVED.join(", ")),
                None,
            ));
        }
        let input = request.arguments.unwrap_or_default();
        // A client that cancels its request stops the call, as Esc stops a model's.
        let output = self.agent.call_tool(name, &input, &context.ct).await;
        let mut content = vec![ContentBlock::text(output.content)];
        content.extend(
            output
                .images
                .into_iter()
                .map(|i| ContentBlock::image(i.data, i.media_type)),
        );
        let result = if output.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        Ok(CallToolResponse::from(result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_mode_the_reason_and_the_rule() {
        let question = ApprovalQuestion {
            agent: "main".into(),
            label: None,
            tool: "Bash".into(),
            call_id: None,
            input: "echo it's".into(),
            reason: "it runs a command".into(),
            sandbox: None,
            session_rule: "Bash(echo it's)".into(),
        };
        assert_eq!(
            refusal_text(&question, PermissionMode::Default),
            r"cadre refused Bash: needs approval under permission mode default (it runs a command); allow it with --allow 'Bash(echo it'\''s)' or a settings rule"
        );
    }

    #[test]
    fn the_roster_loses_its_reminder_tags() {
        let text = roster_text(&format!(
            "<system-reminder>\n{ROSTER_HEADER}\n- Explore: Searches.\n</system-reminder>"
        ));
        assert_eq!(text, "Agent types (subagent_type):\n- Explore: Searches.");
    }
}
