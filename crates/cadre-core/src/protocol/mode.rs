//! Permission modes, with Claude Code's names and meanings.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How much runs without a question.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
pub enum PermissionMode {
    /// Ask before edits and commands.
    #[default]
    #[serde(rename = "default", alias = "manual")]
    Default,
    /// Edits inside the project and sandboxed commands run, shown.
    #[serde(rename = "acceptEdits")]
    AcceptEdits,
    /// Read-only: nothing that changes anything runs.
    #[serde(rename = "plan")]
    Plan,
    /// Whatever a rule does not allow is denied; nothing is asked.
    #[serde(rename = "dontAsk")]
    DontAsk,
    /// Everything runs, shown.
    #[serde(rename = "bypassPermissions")]
    BypassPermissions,
}

impl PermissionMode {
    /// The name used in flags, config and definition files.
    pub fn as_str(&self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::BypassPermissions => "bypassPermissions",
        }
    }

    /// Higher is stricter (lets less run unasked): plan, dontAsk, default, acceptEdits, bypass.
    pub fn strictness(&self) -> u8 {
        match self {
            PermissionMode::BypassPermissions => 0,
            PermissionMode::AcceptEdits => 1,
            PermissionMode::Default => 2,
            PermissionMode::DontAsk => 3,
            PermissionMode::Plan => 4,
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PermissionMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "default" | "manual" => PermissionMode::Default,
            "acceptEdits" => PermissionMode::AcceptEdits,
            "plan" => PermissionMode::Plan,
            "dontAsk" => PermissionMode::DontAsk,
            "bypassPermissions" => PermissionMode::BypassPermissions,
            other => {
                return Err(format!(
                    "unknown permission mode '{other}' (expected default, acceptEdits, plan, dontAsk or bypassPermissions)"
                ));
            }
        })
    }
}

/// Which list a rule belongs to.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RuleKind {
    Allow,
    Ask,
    Deny,
}

impl RuleKind {
    /// The lowercase name, as in settings (`allow`, `ask`, `deny`).
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Allow => "allow",
            RuleKind::Ask => "ask",
            RuleKind::Deny => "deny",
        }
    }
}

impl fmt::Display for RuleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
