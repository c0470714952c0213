//! What front ends list, complete and check typed `/name`s against.

use serde::{Deserialize, Serialize};

/// A `/name` a user may type that the session runs (a skill, a custom
/// command, an MCP server's prompt), not one the front end answers itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandEntry {
    /// Without the slash.
    pub name: String,
    /// What it does.
    pub description: String,
    /// `argument-hint`: what to type after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    /// Where it comes from (`project`, `project:frontend`, `user`, a plugin's name, `mcp`).
    pub label: String,
}
