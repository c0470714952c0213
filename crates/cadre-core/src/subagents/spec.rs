//! The one child builder: what an agent made from a definition gets — tools,
//! permission mode, model, system prompt and sandbox — from the definition,
//! the call that starts it and the parent it starts from. The subagent
//! runtime, `--agent` and `cadre agents show` all go through
//! [`ChildSpec::resolve`], so what they show is what a child gets.

use std::path::Path;
use std::sync::Arc;

use super::filter::{FilterError, FilterInput, resolve_tools};
use super::ratchet::{ChildMode, child_mode};
use super::{AgentDefinition, DefinitionSource, SubagentSettings};
use crate::agent::{environment_facts, project_instructions};
use crate::config::Settings;
use crate::model::Provider;
use crate::permissions::PermissionMode;
use crate::sandbox::SandboxPolicy;
use crate::tools::{TaskListTool, TaskOutputTool, TaskStopTool, Tool, ToolRegistry};

use super::agent_tool::{AgentTool, SendMessageTool};

/// What the call asks for, beyond its definition.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChildCall<'a> {
    /// `run_in_background: true`.
    pub background: bool,
    /// The call's `model` override.
    pub model: Option<&'a str>,
    /// The session's own agent run as the definition (`--agent`): it stays
    /// at depth 0 and the extra deny list for children does not apply.
    pub as_main: bool,
}

/// Where the parent stands, and the session's settings for children.
#[derive(Clone, Copy)]
pub struct ParentView<'a> {
    /// The parent's tools, in its order: a child's are a subset of these objects.
    pub tools: &'a ToolRegistry,
    /// The parent's permission mode (the ratchet's starting point).
    pub mode: PermissionMode,
    /// The parent's depth (main = 0).
    pub depth: u32,
    /// The provider model aliases are resolved for.
    pub provider: Provider,
    /// The parent's sandbox for `Bash`, if any.
    pub sandbox: Option<&'a Arc<SandboxPolicy>>,
    /// The project directory (environment facts and instructions).
    pub cwd: &'a Path,
    /// `[subagents]` settings (depth limit, extra deny list).
    pub settings: &'a SubagentSettings,
    /// Model aliases.
    pub models: &'a Settings,
}

/// A child as its definition, call and parent make it.
#[derive(Clone)]
pub struct ChildSpec {
    /// The child's tools: the parent's own objects, in the parent's order.
    pub tools: ToolRegistry,
    /// With `Agent(a, b)`: the only agent types the child may start.
    pub agent_types: Option<Vec<String>>,
    /// The child's depth (main = 0).
    pub depth: u32,
    /// Its permission mode, with a note when the definition's was not applied.
    pub mode: ChildMode,
    /// The model id it runs on when not the parent's; `None` = inherit.
    pub model: Option<String>,
    /// Its system prompt.
    pub system: String,
    /// Its sandbox for `Bash` (write-denying for read-only definitions).
    pub sandbox: Option<Arc<SandboxPolicy>>,
    /// Whether it runs in the background.
    pub background: bool,
    /// Entries of `tools` that name no tool of the parent's.
    pub unresolved: Vec<String>,
    /// Tools named by both `tools` and `disallowedTools` (removed).
    pub removed_by_both: Vec<String>,
}

impl ChildSpec {
    /// Resolves `def` started by `call` from `parent`. `Err`: the child
    /// cannot start (its `tools` list resolves to no tool).
    pub fn resolve(
        def: &AgentDefinition,
        call: &ChildCall<'_>,
        parent: &ParentView<'_>,
    ) -> Result<ChildSpec, FilterError> {
        let depth = if call.as_main { 0 } else { parent.depth + 1 };
        let background = !call.as_main && (call.background || def.background);
        let available: Vec<String> = parent.tools.names().iter().map(|n| n.to_string()).collect();
        let filtered = resolve_tools(&FilterInput {
            available: &available,
            agent_allowed: depth < parent.settings.max_depth.clamp(1, 3),
            builtin_definition: call.as_main || def.source == DefinitionSource::Builtin,
            custom_deny: &parent.settings.custom_deny,
            background,
            tools: def.tools.as_deref(),
            disallowed: &def.disallowed_tools,
        })?;
        let names: Vec<&str> = filtered.tools.iter().map(String::as_str).collect();
        // The parent's own objects, each fitted to the tools beside it.
        let tools: Vec<Arc<dyn Tool>> = parent
            .tools
            .tools()
            .iter()
            .filter(|t| names.contains(&t.name()))
            .map(|t| t.among(&names).unwrap_or_else(|| t.clone()))
            .collect();
        let requested = def
            .permission_mode
            .as_deref()
            .and_then(|m| m.parse::<PermissionMode>().ok());
        let model = match call.model.or(def.model.as_deref()) {
            None | Some("inherit") | Some("") => None,
            Some(name) => Some(parent.models.resolve_model(parent.provider, name)),
        };
        let sandbox = parent.sandbox.map(|s| {
            if def.read_only {
                Arc::new(SandboxPolicy::clone(s).read_only())
            } else {
                s.clone()
            }
        });
        Ok(ChildSpec {
            tools: ToolRegistry::from_tools(tools),
            agent_types: filtered.agent_types,
            depth,
            mode: child_mode(parent.mode, requested, def.source),
            model,
            system: child_system_prompt(def, parent.cwd),
            sandbox,
            background,
            unresolved: filtered.unresolved,
            removed_by_both: filtered.removed_by_both,
        })
    }

    /// What the user should be told about this child's definition: entries
    /// that resolved to nothing, tools listed twice, a mode not applied.
    pub fn warnings(&self, def_name: &str) -> Vec<String> {
        let mut out = Vec::new();
        if !self.unresolved.is_empty() {
            out.push(format!(
                "{def_name}: `tools` entries that name no tool: {}",
                self.unresolved.join(", ")
            ));
        }
        if !self.removed_by_both.is_empty() {
            out.push(format!(
                "{def_name}: in both `tools` and `disallowedTools`, so removed: {}",
                self.removed_by_both.join(", ")
            ));
        }
        if let Some(note) = &self.mode.note {
            out.push(format!("{def_name}: {note}"));
        }
        out
    }

    /// Whether the child needs a place in the subagent runtime: it may start
    /// children or message them.
    pub fn delegates(&self) -> bool {
        self.tools.get("Agent").is_some() || self.tools.get("SendMessage").is_some()
    }
}

/// The main agent's tools: the built-ins, `Agent`, the task tools and
/// `SendMessage`. Every other agent's tools are a subset of these objects.
pub fn session_tools() -> ToolRegistry {
    let mut tools = ToolRegistry::builtin();
    tools.insert(Arc::new(AgentTool::default()));
    tools.insert(Arc::new(TaskListTool));
    tools.insert(Arc::new(TaskOutputTool));
    tools.insert(Arc::new(TaskStopTool));
    tools.insert(Arc::new(SendMessageTool));
    tools
}

/// A child's system prompt: its definition body, then environment facts, then
/// (unless the definition omits them) the project's instructions.
pub fn child_system_prompt(def: &AgentDefinition, cwd: &Path) -> String {
    let mut s = def.prompt.trim().to_string();
    s.push_str("\n\n");
    s.push_str(&environment_facts(cwd));
    if def.include_project_instructions
        && let Some(instr) = project_instructions(cwd)
    {
        s.push_str("\n\n# Project instructions\n\n");
        s.push_str(&instr);
    }
    s
}
