//! MCP resources: what servers list, a read's contents as text, and the two
//! tools (Claude Code's names) that let the model list and read them:
//! `ListMcpResourcesTool` and `ReadMcpResourceTool`. Both are decided on by
//! the permission policy like an MCP tool that reads; a deny rule on a
//! whole server (`mcp__server`) covers its resources too.

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::server::{McpServer, ServerState};
use crate::permissions::ToolEffect;
use crate::permissions::rules::{CallFacts, RuleKind};
use crate::tools::untrusted_text::sanitize_report;
use crate::tools::{ToolContext, ToolOutput, TypedTool};

/// The tool that lists the servers' resources.
pub const LIST_RESOURCES_TOOL: &str = "ListMcpResourcesTool";
/// The tool that reads one resource.
pub const READ_RESOURCE_TOOL: &str = "ReadMcpResourceTool";

/// A resource a server lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// Its URI (`file:///…`, `mem://note`).
    pub uri: String,
    /// Its name.
    pub name: String,
    /// What the server says it is (capped, harness-like text escaped).
    pub description: Option<String>,
    /// Its MIME type, when the server gives one.
    pub mime_type: Option<String>,
}

/// The text of a `ReadResourceResult` (as JSON): one text content as it is;
/// several, each under its URI; binary contents described (type and size),
/// never dumped. Harness-like markup is escaped.
pub fn resource_text(result: &Value) -> String {
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let one = contents.len() == 1;
    let parts: Vec<String> = contents
        .iter()
        .map(|c| {
            let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
            match c.get("text").and_then(Value::as_str) {
                Some(text) if one => text.to_string(),
                Some(text) => format!("[resource {}]\n{text}", s("uri")),
                None => {
                    let mime = match s("mimeType") {
                        "" => "binary",
                        m => m,
                    };
                    format!(
                        "[resource {}: {mime} data, {} bytes, not shown]",
                        s("uri"),
                        s("blob").len() / 4 * 3
                    )
                }
            }
        })
        .collect();
    if parts.is_empty() {
        return "[the resource has no contents]".to_string();
    }
    sanitize_report(&parts.join("\n"))
}

/// The deny rule, if any, that covers every tool of `server`
/// (`mcp__server`, `mcp__server__*`): it covers its resources too.
pub fn server_denied(ctx: &ToolContext, server: &str) -> Option<String> {
    let policy = ctx.policy.as_ref()?;
    let tool = format!("mcp__{server}");
    let facts = CallFacts {
        tool: &tool,
        effect: Some(ToolEffect::McpReadOnly),
        command: None,
        path: None,
        agent_type: None,
        domain: None,
    };
    match policy.rules.evaluate(&facts, &policy.project_dir) {
        Some((RuleKind::Deny, text)) => Some(text),
        _ => None,
    }
}

/// The servers that are ready, by name.
fn ready(servers: &[Arc<McpServer>]) -> Vec<&Arc<McpServer>> {
    servers
        .iter()
        .filter(|s| matches!(s.state(), ServerState::Ready(_)))
        .collect()
}

/// The ready server named `name`, or an error naming the ready ones.
fn find<'a>(servers: &'a [Arc<McpServer>], name: &str) -> Result<&'a Arc<McpServer>, ToolOutput> {
    let ready = ready(servers);
    ready
        .iter()
        .find(|s| s.name() == name)
        .copied()
        .ok_or_else(|| {
            let names: Vec<&str> = ready.iter().map(|s| s.name()).collect();
            ToolOutput::error(format!(
                "no connected MCP server named {name}; connected: {}",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ))
        })
}

/// Lists the resources of the session's servers.
pub struct ListMcpResourcesTool {
    servers: Vec<Arc<McpServer>>,
}

impl ListMcpResourcesTool {
    /// Over `servers` (the session's).
    pub fn new(servers: Vec<Arc<McpServer>>) -> Self {
        ListMcpResourcesTool { servers }
    }
}

/// The arguments of a `ListMcpResourcesTool` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Only this server's resources (all servers' when left out).
    server: Option<String>,
}

impl TypedTool for ListMcpResourcesTool {
    type Input = ListArgs;
    const NAME: &'static str = LIST_RESOURCES_TOOL;
    const DESCRIPTION: &'static str = "List the resources the connected MCP servers offer (files, documents, records a server exposes): a JSON array of {server, uri, name, mimeType, description}. Optional `server` lists only that server's. Read one with ReadMcpResourceTool.";
    const EFFECT: ToolEffect = ToolEffect::McpReadOnly;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: ListArgs) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let servers = match &args.server {
                Some(name) => match find(&self.servers, name) {
                    Ok(s) => vec![s],
                    Err(e) => return e,
                },
                None => ready(&self.servers),
            };
            let mut listed = Vec::new();
            for server in servers {
                if let Some(rule) = server_denied(ctx, server.name()) {
                    if args.server.is_some() {
                        return ToolOutput::error(format!("denied by the rule {rule}"));
                    }
                    continue;
                }
                for r in server.resources().iter() {
                    let mut entry = json!({"server": server.name(), "uri": r.uri, "name": r.name});
                    if let Some(m) = &r.mime_type {
                        entry["mimeType"] = json!(m);
                    }
                    if let Some(d) = &r.description {
                        entry["description"] = json!(d);
                    }
                    listed.push(entry);
                }
            }
            if listed.is_empty() {
                return ToolOutput::ok("No resources found.");
            }
            ToolOutput::ok(sanitize_report(&Value::Array(listed).to_string()))
        })
    }
}

/// Reads one resource of one server.
pub struct ReadMcpResourceTool {
    servers: Vec<Arc<McpServer>>,
}

impl ReadMcpResourceTool {
    /// Over `servers` (the session's).
    pub fn new(servers: Vec<Arc<McpServer>>) -> Self {
        ReadMcpResourceTool { servers }
    }
}

/// The arguments of a `ReadMcpResourceTool` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// The MCP server's name.
    server: String,
    /// The resource's URI, as ListMcpResourcesTool gives it.
    uri: String,
}

impl TypedTool for ReadMcpResourceTool {
    type Input = ReadArgs;
    const NAME: &'static str = READ_RESOURCE_TOOL;
    const DESCRIPTION: &'static str = "Read a resource of a connected MCP server by its URI (from ListMcpResourcesTool): its text; binary contents are described, not shown.";
    const EFFECT: ToolEffect = ToolEffect::McpReadOnly;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: ReadArgs) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let server = match find(&self.servers, &args.server) {
                Ok(s) => s,
                Err(e) => return e,
            };
            if let Some(rule) = server_denied(ctx, server.name()) {
                return ToolOutput::error(format!("denied by the rule {rule}"));
            }
            // Capped once, with every other result, when the call is finished.
            match server.read_resource(&args.uri, &ctx.cancel).await {
                Ok(text) => ToolOutput::ok(text),
                Err(e) => ToolOutput::error(e),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_text_is_itself_several_are_labelled_and_blobs_are_described() {
        assert_eq!(
            resource_text(&json!({"contents": [{"uri": "mem://a", "text": "hello"}]})),
            "hello"
        );
        assert_eq!(
            resource_text(&json!({"contents": [
                {"uri": "mem://a", "text": "hello"},
                {"uri": "mem://b", "blob": "AAAA", "mimeType": "image/png"}
            ]})),
            "[resource mem://a]\nhello\n[resource mem://b: image/png data, 3 bytes, not shown]"
        );
        assert_eq!(
            resource_text(&json!({"contents": []})),
            "[the resource has no contents]"
        );
    }
}
