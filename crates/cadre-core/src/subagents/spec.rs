//! The one child builder: what an agent made from a definition gets — tools,
//! permission mode, model, system prompt and sandbox — from the definition,
//! the call that starts it and the parent it starts from. The subagent
//! runtime, `--agent` and `cadre agents show` all go through
//! [`ChildSpec::resolve`], so what they show is what a child gets.

use std::sync::Arc;

use super::filter::{FilterError, FilterInput, resolve_tools};
use super::ratchet::{ChildMode, child_mode, teammate_mode};
use super::{AgentDefinition, DefinitionSource, SubagentSettings};
use crate::agent::ProjectContext;
use crate::config::{ModelName, Settings};
use crate::model::Provider;
use crate::protocol::PermissionMode;
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
    /// at depth 0 and none of the layers for children applies (7.5, 1–3).
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
    /// The project's environment facts and instructions, read once (per
    /// batch, off the runtime's thread).
    pub project: &'a ProjectContext,
    /// `[subagents]` settings (depth limit, extra deny list).
    pub settings: &'a SubagentSettings,
    /// Model aliases.
    pub models: &'a Settings,
}

/// `texts` parsed as one layer of tool rules (none when empty).
pub fn tool_rule_layer(
    texts: &[String],
) -> Result<Option<Vec<crate::permissions::rules::Rule>>, String> {
    if texts.is_empty() {
        return Ok(None);
    }
    texts
        .iter()
        .map(|text| {
            crate::permissions::rules::parse_rule(
                crate::permissions::rules::RuleKind::Allow,
                text,
                None,
            )
            .map_err(|e| format!("tools entry {text}: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
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
    /// An alias it asked for that names no model at this endpoint (so it inherits).
    pub unmapped_model: Option<String>,
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
    /// Rules (`Bash(git:*)`) its `tools` granted some tools by: calls of
    /// those tools outside them are denied.
    pub tool_rules: Vec<String>,
    /// The reasoning effort its requests ask for; `None` = the provider's default.
    pub effort: Option<String>,
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
            builtin_definition: def.source == DefinitionSource::Builtin,
            custom_deny: &parent.settings.custom_deny,
            background,
            tools: def.tools.as_deref(),
            disallowed: &def.disallowed_tools,
            main_session: call.as_main,
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
        let (model, unmapped_model) = match call.model.or(def.model.as_deref()) {
            None | Some("inherit") | Some("") => (None, None),
            Some(name) => match parent.models.model_alias(parent.provider, name) {
                ModelName::Id(id) => (Some(id), None),
                // Sending the alias, or a hosted model's id, to a server that
                // serves neither would fail the child (or price it wrongly).
                ModelName::Unmapped(alias) => (None, Some(alias)),
            },
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
            mode: if call.as_main {
                teammate_mode(
                    parent.mode,
                    def.permission_mode,
                    def.source,
                    parent.settings.mode_limits(),
                )
            } else {
                child_mode(
                    parent.mode,
                    def.permission_mode,
                    def.source,
                    parent.settings.mode_limits(),
                )
            },
            model,
            unmapped_model,
            system: child_system_prompt(def, parent.project),
            sandbox,
            background,
            unresolved: filtered.unresolved,
            removed_by_both: filtered.removed_by_both,
            tool_rules: filtered.scoped,
            effort: def.effort.clone(),
        })
    }

    /// Read, Write and Edit for its memory folder `dir`, as Claude Code
    /// gives them to an agent with a memory, but only there: a tool the
    /// child lacks (from `parent`'s, in its order) or has only by rules
    /// gets a rule for the folder. A tool its lists grant whole stays so;
    /// everywhere else its `tools` and `disallowedTools` decide.
    pub fn grant_memory(&mut self, parent: &ToolRegistry, dir: &std::path::Path) {
        let rule_tool = |rule: &str| rule.split('(').next().map(str::trim).map(str::to_string);
        let mut added = Vec::new();
        for tool in MEMORY_TOOLS {
            let scoped = self
                .tool_rules
                .iter()
                .any(|r| rule_tool(r).as_deref() == Some(tool));
            let has = self.tools.get(tool).is_some();
            if has && !scoped {
                continue;
            }
            if !has {
                if parent.get(tool).is_none() {
                    continue;
                }
                added.push(tool);
            }
            let glob = globset::escape(&dir.to_string_lossy());
            // `//` makes the rule's path absolute.
            self.tool_rules.push(format!("{tool}(/{glob}/**)"));
        }
        if added.is_empty() {
            return;
        }
        let kept: Vec<Arc<dyn Tool>> = parent
            .tools()
            .iter()
            .filter_map(|t| match self.tools.get(t.name()) {
                Some(own) => Some(own),
                None => added.contains(&t.name()).then(|| t.clone()),
            })
            .collect();
        self.tools = ToolRegistry::from_tools(kept);
    }

    /// `policy` with this child's tool rules (calls outside them denied);
    /// a rule that does not parse is named in the error.
    pub fn restrict(
        &self,
        policy: &mut crate::permissions::PermissionPolicy,
    ) -> Result<(), String> {
        if let Some(layer) = tool_rule_layer(&self.tool_rules)? {
            policy.only.push(layer);
        }
        Ok(())
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
        if let Some(alias) = &self.unmapped_model {
            out.push(format!(
                "{def_name}: model alias '{alias}' names no model at this endpoint (map it in [models.<provider>], e.g. {alias} = \"your-model\"); the child runs on the session's model"
            ));
        }
        out
    }
}

/// The tools a memory brings, for its folder only.
const MEMORY_TOOLS: [&str; 3] = ["Read", "Write", "Edit"];

/// Whether an agent with `tools` needs a place in the subagent runtime: it
/// may start children or message them.
pub fn delegates(tools: &ToolRegistry) -> bool {
    tools.get("Agent").is_some() || tools.get("SendMessage").is_some()
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
/// (unless the definition omits them) the project's instructions, as
/// `context` read them.
pub fn child_system_prompt(def: &AgentDefinition, context: &ProjectContext) -> String {
    let mut s = def.prompt.trim().to_string();
    s.push_str("\n\n");
    s.push_str(&context.environment);
    if def.include_project_instructions
        && let Some(instr) = &context.instructions
    {
        s.push_str("\n\n# Project instructions\n\n");
        s.push_str(instr);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subagents::builtin::builtin_definitions;
    use crate::tools::{ToolContext, ToolInput, ToolOutput};
    use futures::future::BoxFuture;

    /// An MCP tool as the parent would hold it.
    struct McpTool;

    impl Tool for McpTool {
        fn name(&self) -> &'static str {
            "mcp__github__get_issue"
        }
        fn description(&self) -> &'static str {
            "Reads a GitHub issue."
        }
        fn input_schema(&self) -> serde_json::Value {
            serde_json::json!({"type": "object"})
        }
        fn is_read_only(&self) -> bool {
            true
        }
        fn effect(&self) -> crate::permissions::ToolEffect {
            crate::permissions::ToolEffect::ReadOnly
        }
        fn execute<'a>(
            &'a self,
            _ctx: &'a ToolContext,
            _input: &'a ToolInput,
        ) -> BoxFuture<'a, ToolOutput> {
            Box::pin(async { ToolOutput::ok("issue") })
        }
    }

    /// The main session's tools plus one MCP tool.
    fn main_tools() -> ToolRegistry {
        let mut tools = session_tools();
        tools.insert(Arc::new(McpTool));
        tools
    }

    /// A parent without background work: built-ins and `Agent` only.
    fn plain_tools() -> ToolRegistry {
        let mut tools = ToolRegistry::builtin();
        tools.insert(Arc::new(AgentTool::default()));
        tools
    }

    fn general_purpose() -> AgentDefinition {
        builtin_definitions(false)
            .into_iter()
            .find(|d| d.name == "general-purpose")
            .expect("built in")
    }

    fn explore() -> AgentDefinition {
        builtin_definitions(false)
            .into_iter()
            .find(|d| d.name == "Explore")
            .expect("built in")
    }

    /// A project definition with `tools` and `disallowedTools`.
    fn custom(tools: Option<&[&str]>, disallowed: &[&str]) -> AgentDefinition {
        let mut def = general_purpose();
        def.name = "custom".into();
        def.source = DefinitionSource::Project;
        def.tools = tools.map(|t| t.iter().map(|s| s.to_string()).collect());
        def.disallowed_tools = disallowed.iter().map(|s| s.to_string()).collect();
        def
    }

    struct Case {
        name: &'static str,
        def: AgentDefinition,
        background: bool,
        as_main: bool,
        parent: ToolRegistry,
        parent_depth: u32,
        max_depth: u32,
        custom_deny: &'static [&'static str],
        expect: &'static [&'static str],
        agent_types: Option<&'static [&'static str]>,
        unresolved: &'static [&'static str],
        removed_by_both: &'static [&'static str],
    }

    fn case(name: &'static str, def: AgentDefinition, expect: &'static [&'static str]) -> Case {
        Case {
            name,
            def,
            background: false,
            as_main: false,
            parent: main_tools(),
            parent_depth: 0,
            max_depth: 1,
            custom_deny: &[],
            expect,
            agent_types: None,
            unresolved: &[],
            removed_by_both: &[],
        }
    }

    const FOREGROUND: &[&str] = &[
        "Read",
        "Write",
        "Edit",
        "NotebookEdit",
        "Glob",
        "Grep",
        "Bash",
        "TodoWrite",
        "WebFetch",
        "TaskList",
        "TaskStop",
        "SendMessage",
        "mcp__github__get_issue",
    ];

    const BACKGROUND: &[&str] = &[
        "Read",
        "Write",
        "Edit",
        "NotebookEdit",
        "Glob",
        "Grep",
        "Bash",
        "TodoWrite",
        "WebFetch",
        "TaskStop",
        "SendMessage",
        "mcp__github__get_issue",
    ];

    fn cases() -> Vec<Case> {
        vec![
            case(
                "foreground child of main gets the task tools it is allowed",
                general_purpose(),
                FOREGROUND,
            ),
            Case {
                background: true,
                ..case(
                    "background child keeps TaskStop and SendMessage",
                    general_purpose(),
                    BACKGROUND,
                )
            },
            Case {
                max_depth: 2,
                ..case(
                    "below the depth limit a child keeps Agent, in the parent's order",
                    general_purpose(),
                    &[
                        "Read",
                        "Write",
                        "Edit",
                        "NotebookEdit",
                        "Glob",
                        "Grep",
                        "Bash",
                        "TodoWrite",
                        "WebFetch",
                        "Agent",
                        "TaskList",
                        "TaskStop",
                        "SendMessage",
                        "mcp__github__get_issue",
                    ],
                )
            },
            Case {
                max_depth: 2,
                parent_depth: 1,
                ..case(
                    "at the depth limit a grandchild loses Agent",
                    general_purpose(),
                    FOREGROUND,
                )
            },
            Case {
                max_depth: 2,
                background: true,
                ..case(
                    "a background child never spawns",
                    general_purpose(),
                    BACKGROUND,
                )
            },
            Case {
                parent: plain_tools(),
                ..case(
                    "a parent without task tools passes none on",
                    general_purpose(),
                    &[
                        "Read",
                        "Write",
                        "Edit",
                        "NotebookEdit",
                        "Glob",
                        "Grep",
                        "Bash",
                        "TodoWrite",
                        "WebFetch",
                    ],
                )
            },
            Case {
                unresolved: &["NoSuchTool"],
                ..case(
                    "a definition's list, with a denied and an unknown entry",
                    custom(Some(&["Bash", "Read", "TaskOutput", "NoSuchTool"]), &[]),
                    &["Read", "Bash"],
                )
            },
            Case {
                removed_by_both: &["Bash"],
                ..case(
                    "a tool listed in both lists is removed",
                    custom(Some(&["Bash", "Read"]), &["Bash"]),
                    &["Read"],
                )
            },
            Case {
                custom_deny: &["Bash", "mcp__github"],
                ..case(
                    "the extra deny list binds project definitions",
                    custom(None, &[]),
                    &[
                        "Read",
                        "Write",
                        "Edit",
                        "NotebookEdit",
                        "Glob",
                        "Grep",
                        "TodoWrite",
                        "WebFetch",
                        "TaskList",
                        "TaskStop",
                        "SendMessage",
                    ],
                )
            },
            Case {
                custom_deny: &["Bash", "mcp__github"],
                ..case("but not built-in ones", general_purpose(), FOREGROUND)
            },
            Case {
                max_depth: 2,
                agent_types: Some(&["Explore"]),
                ..case(
                    "Agent(Explore) without SendMessage",
                    custom(Some(&["Agent(Explore)", "Read"]), &[]),
                    &["Read", "Agent"],
                )
            },
            case(
                "a built-in's own list",
                explore(),
                &["Read", "Glob", "Grep", "Bash"],
            ),
            Case {
                as_main: true,
                agent_types: Some(&["Explore", "Plan"]),
                custom_deny: &["Read"],
                ..case(
                    "--agent: the main session keeps Agent, TaskOutput and its types",
                    custom(Some(&["Agent(Explore, Plan)", "Read", "TaskOutput"]), &[]),
                    &["Read", "Agent", "TaskOutput"],
                )
            },
            Case {
                as_main: true,
                background: true,
                ..case(
                    "--agent is never a background child",
                    general_purpose(),
                    &[
                        "Read",
                        "Write",
                        "Edit",
                        "NotebookEdit",
                        "Glob",
                        "Grep",
                        "Bash",
                        "TodoWrite",
                        "WebFetch",
                        "Agent",
                        "TaskList",
                        "TaskOutput",
                        "TaskStop",
                        "SendMessage",
                        "mcp__github__get_issue",
                    ],
                )
            },
        ]
    }

    /// True when `text` names `tool` as a word.
    fn mentions(text: &str, tool: &str) -> bool {
        text.match_indices(tool).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + tool.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    }

    #[test]
    fn child_tool_resolution_table() {
        let cwd = std::env::temp_dir();
        let models = Settings::default();
        for c in cases() {
            let settings = SubagentSettings {
                max_depth: c.max_depth,
                custom_deny: c.custom_deny.iter().map(|s| s.to_string()).collect(),
                ..SubagentSettings::default()
            };
            let spec = ChildSpec::resolve(
                &c.def,
                &ChildCall {
                    background: c.background,
                    model: None,
                    as_main: c.as_main,
                },
                &ParentView {
                    tools: &c.parent,
                    mode: PermissionMode::Default,
                    depth: c.parent_depth,
                    provider: Provider::Anthropic,
                    sandbox: None,
                    project: &ProjectContext::read_now(&cwd),
                    settings: &settings,
                    models: &models,
                },
            )
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
            let names = spec.tools.names();
            assert_eq!(names, c.expect, "{}", c.name);
            assert_eq!(
                spec.agent_types,
                c.agent_types
                    .map(|t| t.iter().map(|s| s.to_string()).collect()),
                "{}",
                c.name
            );
            assert_eq!(spec.unresolved, c.unresolved, "{}", c.name);
            assert_eq!(spec.removed_by_both, c.removed_by_both, "{}", c.name);
            assert_eq!(spec.background, c.background && !c.as_main, "{}", c.name);
            let depth = if c.as_main { 0 } else { c.parent_depth + 1 };
            assert_eq!(spec.depth, depth, "{}", c.name);
            // The child's tools are the parent's own objects, unless a tool
            // had to be fitted to what is missing beside it.
            for tool in spec.tools.tools() {
                let own = c.parent.tools().iter().find(|t| t.name() == tool.name());
                let own =
                    own.unwrap_or_else(|| panic!("{}: {} not the parent's", c.name, tool.name()));
                let fitted = own.among(&names).is_some();
                assert_eq!(
                    !Arc::ptr_eq(own, tool),
                    fitted,
                    "{}: {}",
                    c.name,
                    tool.name()
                );
            }
            // Nothing the child is offered points to a tool it lacks.
            let offered = serde_json::to_string(&spec.tools.specs()).expect("specs serialise");
            for tool in ["Agent", "TaskList", "TaskOutput", "TaskStop", "SendMessage"] {
                if !names.contains(&tool) {
                    assert!(
                        !mentions(&offered, tool),
                        "{}: mentions {tool}: {offered}",
                        c.name
                    );
                }
            }
        }
    }

    #[test]
    fn mode_model_prompt_and_sandbox_come_with_the_tools() {
        let cwd = std::env::temp_dir();
        let models = Settings::default();
        let settings = SubagentSettings::default();
        let tools = main_tools();
        let sandbox = Arc::new(SandboxPolicy::new(cwd.clone(), cwd.join("data"), false));
        let project = ProjectContext::read_now(&cwd);
        let parent = ParentView {
            tools: &tools,
            mode: PermissionMode::AcceptEdits,
            depth: 0,
            provider: Provider::Anthropic,
            sandbox: Some(&sandbox),
            project: &project,
            settings: &settings,
            models: &models,
        };
        let mut def = explore();
        def.permission_mode = Some(PermissionMode::Plan);
        let spec = ChildSpec::resolve(&def, &ChildCall::default(), &parent).expect("resolves");
        // The session's acceptEdits wins over the definition's request, with a note.
        assert_eq!(spec.mode.mode, PermissionMode::AcceptEdits);
        assert!(
            spec.warnings("Explore")
                .iter()
                .any(|w| w.contains("takes precedence"))
        );
        assert_eq!(spec.model.as_deref(), Some("claude-haiku-4-5"));
        assert!(spec.system.starts_with(def.prompt.trim()));
        assert!(spec.sandbox.as_ref().is_some_and(|s| s.read_only_project));
        // The call's model wins over the definition's; `inherit` is the parent's.
        let call = ChildCall {
            model: Some("opus"),
            ..ChildCall::default()
        };
        let spec = ChildSpec::resolve(&def, &call, &parent).expect("resolves");
        assert_eq!(spec.model.as_deref(), Some("claude-opus-4-1"));
        let call = ChildCall {
            model: Some("inherit"),
            ..ChildCall::default()
        };
        assert_eq!(
            ChildSpec::resolve(&def, &call, &parent)
                .expect("resolves")
                .model,
            None
        );
        // A writing definition keeps the parent's sandbox as it is.
        let spec = ChildSpec::resolve(&general_purpose(), &ChildCall::default(), &parent)
            .expect("resolves");
        assert!(
            spec.sandbox
                .as_ref()
                .is_some_and(|s| Arc::ptr_eq(s, &sandbox))
        );
        // No tool at all: the child is not started.
        let none = custom(Some(&["NoSuchTool"]), &[]);
        assert!(ChildSpec::resolve(&none, &ChildCall::default(), &parent).is_err());
    }
}
