//! MCP: the servers users already run (Claude Code's `.mcp.json` and
//! friends), connected through the official SDK, `rmcp`, and their tools
//! offered as `mcp__<server>__<tool>`.

pub mod config;
pub mod content;
pub mod hub;
pub mod prompts;
pub mod resources;
pub mod server;
pub mod stdio;
pub mod tool;

pub use config::{McpConfig, McpPaths, ServerConfig, ServerScope, ServerTransport};
pub use hub::{McpHub, PromptCommand};
pub use prompts::{PromptArg, ServerPrompt};
pub use resources::{
    LIST_RESOURCES_TOOL, ListMcpResourcesTool, READ_RESOURCE_TOOL, ReadMcpResourceTool,
    ResourceInfo,
};
pub use server::{McpServer, McpTimeouts, ServerState, ServerTool};
pub use tool::McpTool;

/// Which MCP tools (by full name) an agent takes.
pub type McpToolFilter = std::sync::Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// What every MCP tool's name starts with.
pub const MCP_TOOL_PREFIX: &str = "mcp__";

/// Whether `name` is a tool the session's MCP servers bring: theirs
/// (`mcp__…`) or the two resource tools.
pub fn is_mcp_tool(name: &str) -> bool {
    name.starts_with(MCP_TOOL_PREFIX) || name == LIST_RESOURCES_TOOL || name == READ_RESOURCE_TOOL
}
