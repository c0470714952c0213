//! The shape of an agent definition once loaded, whatever its source.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::protocol::PermissionMode;

/// Where a definition came from. Order of the variants is precedence, highest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DefinitionSource {
    /// `/etc/cadre/agents/` (administrator-managed).
    Managed,
    /// The `--agents` JSON flag.
    Flag,
    /// `.cadre/agents/` or `.claude/agents/` in the working directory or a parent up to the repository root.
    Project,
    /// `~/.cadre/agents/` or `~/.claude/agents/`.
    User,
    /// A plugin (namespaced `plugin:name`).
    Plugin,
    /// Embedded in the binary.
    Builtin,
}

impl DefinitionSource {
    /// The lower-case name shown to users.
    pub fn as_str(&self) -> &'static str {
        match self {
            DefinitionSource::Managed => "managed",
            DefinitionSource::Flag => "flag",
            DefinitionSource::Project => "project",
            DefinitionSource::User => "user",
            DefinitionSource::Plugin => "plugin",
            DefinitionSource::Builtin => "built-in",
        }
    }

    /// Sources whose `permissionMode` may widen the parent's (the ratchet's exception).
    pub fn is_trusted(&self) -> bool {
        matches!(
            self,
            DefinitionSource::Managed
                | DefinitionSource::Flag
                | DefinitionSource::User
                | DefinitionSource::Builtin
        )
    }
}

/// A tool list as written: `None` = not given (all tools).
pub type ToolList = Option<Vec<String>>;

/// One agent definition, parsed and normalised (legacy tool names mapped).
#[derive(Debug, Clone, Serialize)]
pub struct AgentDefinition {
    /// `name`: the agent type.
    pub name: String,
    /// `description`: when to use it (shown in the roster).
    pub description: String,
    /// The body: the child's system prompt.
    pub prompt: String,
    /// `tools`: allow list (`*` = all); `None` = all.
    pub tools: ToolList,
    /// `disallowedTools`.
    pub disallowed_tools: Vec<String>,
    /// `model`: alias (`inherit`, `sonnet`, `opus`, `haiku`) or id; `None` = inherit.
    pub model: Option<String>,
    /// `permissionMode`, parsed when the definition is read (an unknown value is a warning and unset).
    pub permission_mode: Option<PermissionMode>,
    /// `maxTurns`.
    pub max_turns: Option<u32>,
    /// `background`.
    pub background: bool,
    /// `isolation` (`worktree`).
    pub isolation: Option<String>,
    /// `initialPrompt`: the first user message of a new `--agent` session.
    pub initial_prompt: Option<String>,
    /// `color` (one of Claude Code's eight): how the TUI shows its children.
    pub color: Option<String>,
    /// `effort` (`low` … `max`): sent with its requests.
    pub effort: Option<String>,
    /// `skills`.
    pub skills: Vec<String>,
    /// `mcpServers`, kept as written.
    pub mcp_servers: Option<serde_json::Value>,
    /// `hooks`, kept as written.
    pub hooks: Option<serde_json::Value>,
    /// `memory`, kept as written.
    pub memory: Option<serde_json::Value>,
    /// Whether project instructions (AGENTS.md/CLAUDE.md) go into its prompt.
    pub include_project_instructions: bool,
    /// Read-only on project files (built-in `Explore`, `Plan`, `Verification`):
    /// its `Bash` runs in a write-denying sandbox (scratch files under /tmp only).
    pub read_only: bool,
    /// One-shot: its answer is the whole point, so `SendMessage` does not resume
    /// it (built-in `Explore` and `Plan`; not settable from a file).
    pub one_shot: bool,
    /// Its final text ends with a `VERDICT:` line that goes into its report
    /// (built-in `Verification`; not settable from a file).
    pub reports_verdict: bool,
    /// Fields cadre does not know, kept as written.
    pub unknown_fields: BTreeMap<String, serde_json::Value>,
    /// Where it came from.
    pub source: DefinitionSource,
    /// The file, for file-based sources.
    pub path: Option<PathBuf>,
}
