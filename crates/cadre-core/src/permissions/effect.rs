//! What a tool's calls can do, as each tool declares it: the permission
//! policy decides by this, never by a tool's name.

use std::fmt;

/// The effect of a tool's calls, declared by the tool (`Tool::effect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolEffect {
    /// Changes nothing outside cadre's own state: reading and searching
    /// files, the todo list, cadre's own tasks and messages, and starting a
    /// child (whose every call is decided on its own).
    ReadOnly,
    /// Writes files.
    Edit,
    /// Runs commands.
    Execute,
    /// Reaches the network.
    Network,
    /// Calls a tool of an MCP server, which runs outside the sandbox: asks
    /// unless a rule allows it, and plan mode refuses it.
    Mcp,
    /// Calls an MCP tool its server annotates read-only (`readOnlyHint`):
    /// asks like [`ToolEffect::Mcp`], but plan mode lets it run.
    McpReadOnly,
}

impl ToolEffect {
    /// Every effect, for tables that must cover them all.
    pub const ALL: [ToolEffect; 6] = [
        ToolEffect::ReadOnly,
        ToolEffect::Edit,
        ToolEffect::Execute,
        ToolEffect::Network,
        ToolEffect::Mcp,
        ToolEffect::McpReadOnly,
    ];

    /// A short name (`read-only`, `edit`, `execute`, `network`, `mcp`, `mcp-read-only`).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolEffect::ReadOnly => "read-only",
            ToolEffect::Edit => "edit",
            ToolEffect::Execute => "execute",
            ToolEffect::Network => "network",
            ToolEffect::Mcp => "mcp",
            ToolEffect::McpReadOnly => "mcp-read-only",
        }
    }
}

impl fmt::Display for ToolEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
