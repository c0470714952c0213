//! An MCP server's tool as one of the agent's tools: `mcp__<server>__<tool>`,
//! decided on by the permission policy like any other call and run through
//! the server's shared connection.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::server::{McpServer, ServerTool};
use crate::model::ToolSpec;
use crate::permissions::ToolEffect;
use crate::tools::{Tool, ToolContext, ToolInput, ToolOutput};

/// One tool of one server.
pub struct McpTool {
    server: Arc<McpServer>,
    tool: ServerTool,
    /// `mcp__<server>__<tool>`, shared with the registry's lookups; freed
    /// with the tool when the server renames or drops it.
    name: Arc<str>,
}

impl McpTool {
    /// `tool` of `server`.
    pub fn new(server: Arc<McpServer>, tool: ServerTool) -> McpTool {
        let name = Arc::from(tool.full_name.as_str());
        McpTool { server, tool, name }
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &'static str {
        // The real description is the server's, given in `spec`.
        ""
    }

    fn input_schema(&self) -> Value {
        self.tool.schema.clone()
    }

    fn is_read_only(&self) -> bool {
        self.tool.read_only
    }

    fn effect(&self) -> ToolEffect {
        if self.tool.read_only {
            ToolEffect::McpReadOnly
        } else {
            ToolEffect::Mcp
        }
    }

    fn execute<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a ToolInput,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let result = self
                .server
                .call(&self.tool.name, input.clone(), &ctx.cancel)
                .await;
            // Capped once, with every other result, when the call is finished.
            ToolOutput {
                content: result.text,
                is_error: result.is_error,
                images: result
                    .images
                    .into_iter()
                    .map(|i| crate::model::ToolImage {
                        media_type: i.mime_type,
                        data: i.data,
                    })
                    .collect(),
            }
        })
    }

    fn spec(&self) -> ToolSpec {
        let description = if self.tool.description.is_empty() {
            format!(
                "Tool {} of the MCP server {}.",
                self.tool.name,
                self.server.name()
            )
        } else {
            self.tool.description.clone()
        };
        ToolSpec {
            name: self.name.to_string(),
            description,
            input_schema: self.tool.schema.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::*;
    use crate::mcp::config::{ServerConfig, ServerScope, ServerTransport};
    use crate::mcp::server::McpTimeouts;

    fn server() -> Arc<McpServer> {
        let config = ServerConfig {
            name: "demo".into(),
            transport: ServerTransport::Stdio {
                command: "true".into(),
                args: Vec::new(),
                env: BTreeMap::new(),
            },
            scope: ServerScope::User,
            path: PathBuf::new(),
        };
        let dir = std::env::temp_dir();
        let timeouts = McpTimeouts::default();
        Arc::new(McpServer::new(config, &dir, &dir, timeouts, Arc::default()))
    }

    #[test]
    fn a_dropped_tool_frees_its_name() {
        // A name made at run time, as a server that keeps renaming its tools makes them.
        let full_name = format!("mcp__demo__tool_{}", std::process::id());
        let tool = McpTool::new(
            server(),
            ServerTool {
                full_name: full_name.clone(),
                name: "tool".into(),
                description: String::new(),
                schema: serde_json::json!({"type": "object"}),
                read_only: false,
            },
        );
        assert_eq!(Tool::name(&tool), full_name);
        let name = Arc::downgrade(&tool.name);
        drop(tool);
        assert!(name.upgrade().is_none(), "the name outlived its tool");
    }
}
