//! An MCP server's tool as one of the agent's tools: `mcp__<server>__<tool>`,
//! decided on by the permission policy like any other call and run through
//! the server's shared connection.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use futures::future::BoxFuture;
use serde_json::Value;

use super::server::{McpServer, ServerTool};
use crate::model::ToolSpec;
use crate::permissions::ToolEffect;
use crate::tools::{Tool, ToolContext, ToolInput, ToolOutput};

/// `name` as a `&'static str`: tool names are `'static` in the registry, and
/// a server's names are few and repeat across refreshes, so each distinct
/// one is kept once for the life of the process.
fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = match NAMES.get_or_init(Mutex::default).lock() {
        Ok(n) => n,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(known) = names.get(name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// One tool of one server.
pub struct McpTool {
    server: Arc<McpServer>,
    tool: ServerTool,
    name: &'static str,
}

impl McpTool {
    /// `tool` of `server`.
    pub fn new(server: Arc<McpServer>, tool: ServerTool) -> McpTool {
        let name = intern(&tool.full_name);
        McpTool { server, tool, name }
    }
}

impl Tool for McpTool {
    fn name(&self) -> &'static str {
        self.name
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
