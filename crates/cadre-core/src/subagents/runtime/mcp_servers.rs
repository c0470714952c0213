//! A child's MCP servers, from its definition's `mcpServers`: an entry naming
//! a configured server gives it that server's tools through the session's
//! connection; an inline entry (`- name: {command: …}`) starts a server of
//! its own when the child starts, closed when the child ends, whichever way.
//! The child's tool filter then applies to these tools like to any other.

use std::sync::Arc;

use serde_json::Value;

use super::SubagentRuntime;
use crate::mcp::config::{ServerConfig, ServerScope, parse_server};
use crate::mcp::{McpServer, ServerState};
use crate::subagents::{AgentDefinition, DefinitionSource};
use crate::tools::ToolRegistry;

/// The servers a child started for itself: closed when dropped, so a child
/// that completes, fails, is cancelled or panics leaves no server behind.
#[derive(Default)]
pub(super) struct DedicatedServers(Vec<Arc<McpServer>>);

impl DedicatedServers {
    /// The servers, for a resumed run of the same child: it starts them
    /// again on use, and they close again when that run ends.
    pub(super) fn handles(&self) -> Vec<Arc<McpServer>> {
        self.0.clone()
    }

    /// Takes charge of `servers` (closed when dropped).
    pub(super) fn adopt(servers: Vec<Arc<McpServer>>) -> Self {
        DedicatedServers(servers)
    }
}

impl Drop for DedicatedServers {
    fn drop(&mut self) {
        for server in self.0.drain(..) {
            if server.close_now() {
                continue;
            }
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    handle.spawn(async move { server.close().await });
                }
                // No runtime left: dropping the connection ends the process.
                Err(_) => drop(server),
            }
        }
    }
}

/// One entry of `mcpServers`.
enum Entry {
    /// The name of a configured server.
    Named(String),
    /// A server of the child's own.
    Inline(String, Value),
}

/// The entries of a definition's `mcpServers` (a list of names and one-key
/// maps, or one map of inline servers); what cannot be read is named in
/// `problems`.
fn entries(value: &Value, problems: &mut Vec<String>) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut inline = |map: &serde_json::Map<String, Value>| {
        for (name, config) in map {
            out.push(Entry::Inline(name.clone(), config.clone()));
        }
    };
    match value {
        Value::Array(items) => {
            let mut named = Vec::new();
            for item in items {
                match item {
                    Value::String(name) => named.push(Entry::Named(name.trim().to_string())),
                    Value::Object(map) => inline(map),
                    other => problems.push(format!(
                        "an entry that is neither a name nor a map: {other}"
                    )),
                }
            }
            out.extend(named);
        }
        Value::String(list) => out.extend(
            list.split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(|n| Entry::Named(n.to_string())),
        ),
        Value::Object(map) => inline(map),
        Value::Null => {}
        other => problems.push(format!("`mcpServers` is not a list: {other}")),
    }
    out
}

impl SubagentRuntime {
    /// `parent_tools` with the MCP tools `def`'s `mcpServers` gives the
    /// child: named servers' tools (if the parent lacks them) and the tools
    /// of the servers it starts for itself, which it owns.
    pub(super) async fn child_mcp_tools(
        &self,
        def: &AgentDefinition,
        parent_tools: &ToolRegistry,
    ) -> (ToolRegistry, DedicatedServers) {
        let mut tools = parent_tools.clone();
        let mut own = DedicatedServers::default();
        let Some(value) = &def.mcp_servers else {
            return (tools, own);
        };
        let mut problems = Vec::new();
        let listed = entries(value, &mut problems);
        let trusted = def.source != DefinitionSource::Project
            || self.hooks.as_ref().is_some_and(|h| h.project_trusted());
        let mut starting = Vec::new();
        for entry in listed {
            match entry {
                Entry::Named(name) => {
                    match self.mcp.as_ref().and_then(|hub| hub.server(&name)) {
                        Some(server) => {
                            for tool in server.agent_tools() {
                                if tools.get(tool.name()).is_none() {
                                    tools.insert(tool);
                                }
                            }
                            if let ServerState::Failed(why) = server.state() {
                                problems.push(format!("the MCP server {name} is not available: {why}"));
                            }
                        }
                        None => problems.push(format!(
                            "`mcpServers` names {name}, which is not a configured MCP server (see `cadre mcp list`)"
                        )),
                    }
                }
                Entry::Inline(name, config) => {
                    if !trusted {
                        problems.push(format!(
                            "its inline MCP server {name} does not start: this folder is not trusted (`cadre config trust` or --trust)"
                        ));
                        continue;
                    }
                    let Some(hub) = &self.mcp else { continue };
                    let env = |n: &str| std::env::var(n).ok();
                    match parse_server(&name, &config, &env) {
                        Ok(transport) => starting.push(hub.dedicated(ServerConfig {
                            name,
                            transport,
                            scope: ServerScope::Definition,
                            path: def.path.clone().unwrap_or_default(),
                        })),
                        Err(why) => problems.push(format!("its MCP server {name} is not used: {why}")),
                    }
                }
            }
        }
        // The child's own servers start together, each within its start-up timeout.
        let started = futures::future::join_all(starting.iter().map(|s| s.start())).await;
        for (server, result) in starting.into_iter().zip(started) {
            match result {
                Ok(_) => {
                    for tool in server.agent_tools() {
                        tools.insert(tool);
                    }
                }
                Err(why) => problems.push(format!(
                    "its MCP server {} could not start: {why}",
                    server.name()
                )),
            }
            // Kept even when it failed: whatever it started is closed with the child.
            own.0.push(server);
        }
        for problem in problems {
            self.warn_once(format!("agent definition {}: {problem}", def.name));
        }
        (tools, own)
    }
}
