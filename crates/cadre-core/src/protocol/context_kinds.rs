//! What fills an agent's context window, by category, as `/context` shows
//! it (the agent measures them; see `agent::breakdown`).

use serde::{Deserialize, Serialize};

/// One category of what the context holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextCategory {
    /// What it is.
    pub kind: ContextKind,
    /// Tokens it takes.
    pub tokens: u64,
}

/// The kinds of what a context holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContextKind {
    /// cadre's own prompt (and an output style's).
    SystemPrompt,
    /// The project's CLAUDE.md/AGENTS.md and their imports.
    InstructionFiles,
    /// cadre's tools.
    Tools,
    /// MCP servers' tools and instructions.
    McpTools,
    /// The skills listing.
    Skills,
    /// The agent types listing.
    Agents,
    /// The conversation.
    Messages,
}

impl ContextKind {
    /// How it is named on screen.
    pub fn label(self) -> &'static str {
        match self {
            ContextKind::SystemPrompt => "System prompt",
            ContextKind::InstructionFiles => "Instruction files",
            ContextKind::Tools => "Tools",
            ContextKind::McpTools => "MCP tools",
            ContextKind::Skills => "Skills",
            ContextKind::Agents => "Agents",
            ContextKind::Messages => "Messages",
        }
    }
}
