//! Converting frontmatter/JSON fields into an [`AgentDefinition`], shared by
//! the file and JSON parsers.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::tool_list::{normalize_tool_name, split_list};
use crate::protocol::PermissionMode;
use crate::subagents::{AgentDefinition, DefinitionSource};

/// The accepted `permissionMode` values.
pub const PERMISSION_MODES: &[&str] = &[
    "default",
    "manual",
    "acceptEdits",
    "plan",
    "dontAsk",
    "bypassPermissions",
];

/// The accepted `effort` values, as Claude Code's.
pub const EFFORTS: &[&str] = &["low", "medium", "high", "xhigh", "max"];

/// The accepted `color` values: Claude Code's eight.
pub const COLORS: &[&str] = &[
    "red", "blue", "green", "yellow", "purple", "orange", "pink", "cyan",
];

/// A blank definition (every optional field unset), for the parsers and the built-ins.
pub(crate) fn blank_definition(
    name: &str,
    description: &str,
    prompt: &str,
    source: DefinitionSource,
    path: Option<PathBuf>,
) -> AgentDefinition {
    AgentDefinition {
        name: name.to_string(),
        description: description.to_string(),
        prompt: prompt.to_string(),
        tools: None,
        disallowed_tools: Vec::new(),
        model: None,
        permission_mode: None,
        max_turns: None,
        background: false,
        isolation: None,
        initial_prompt: None,
        color: None,
        effort: None,
        skills: Vec::new(),
        mcp_servers: None,
        hooks: None,
        memory: None,
        include_project_instructions: true,
        read_only: false,
        one_shot: false,
        reports_verdict: false,
        unknown_fields: BTreeMap::new(),
        source,
        path,
    }
}

/// A problem with one field's value.
pub(super) struct FieldProblem {
    pub(super) field: String,
    pub(super) message: String,
}

/// Collects field problems while converting a map of fields.
#[derive(Default)]
pub(super) struct FieldReader {
    pub(super) problems: Vec<FieldProblem>,
}

impl FieldReader {
    fn problem(&mut self, field: &str, message: impl Into<String>) {
        self.problems.push(FieldProblem {
            field: field.to_string(),
            message: message.into(),
        });
    }

    /// Removes the first of `keys` present (the canonical spelling first); a
    /// second spelling also present is reported and dropped. `null` counts as
    /// absent.
    fn take(&mut self, map: &mut Map<String, Value>, keys: &[&str]) -> Option<(String, Value)> {
        let mut found: Option<(String, Value)> = None;
        for key in keys {
            if let Some(value) = map.remove(*key) {
                match &found {
                    None => found = Some((key.to_string(), value)),
                    Some((first, _)) => {
                        let message = format!("ignored: `{first}` is also set");
                        self.problem(key, message);
                    }
                }
            }
        }
        found.filter(|(_, value)| !value.is_null())
    }

    /// A scalar field as a string (numbers and booleans are written out); an
    /// empty string counts as absent.
    fn string(&mut self, map: &mut Map<String, Value>, keys: &[&str]) -> Option<String> {
        let (key, value) = self.take(map, keys)?;
        match scalar_string(&value) {
            Some(s) if s.trim().is_empty() => None,
            Some(s) => Some(s),
            None => {
                self.problem(&key, "expected a string (ignored)");
                None
            }
        }
    }

    /// A string that must be one of `allowed` (compared ignoring case); any
    /// other value is dropped with a warning, as Claude Code drops it.
    fn one_of(
        &mut self,
        map: &mut Map<String, Value>,
        key: &str,
        allowed: &[&str],
    ) -> Option<String> {
        let raw = self.string(map, &[key])?;
        let value = raw.trim();
        let lower = value.to_ascii_lowercase();
        if allowed.contains(&lower.as_str()) {
            Some(lower)
        } else {
            self.problem(
                key,
                format!(
                    "unknown {key} `{value}` (ignored; expected one of {})",
                    allowed.join(", ")
                ),
            );
            None
        }
    }

    fn tools(&mut self, map: &mut Map<String, Value>, keys: &[&str]) -> Option<Vec<String>> {
        let (key, value) = self.take(map, keys)?;
        if !matches!(value, Value::String(_) | Value::Array(_)) {
            self.problem(
                &key,
                "expected a list or a comma-separated string (ignored)",
            );
            return None;
        }
        let (entries, problems) = split_list(&value);
        for problem in problems {
            self.problem(&key, problem);
        }
        if entries.is_empty() && matches!(value, Value::String(_)) {
            self.problem(&key, "empty: the agent gets no tools");
        }
        Some(entries.iter().map(|e| normalize_tool_name(e)).collect())
    }

    fn names(&mut self, map: &mut Map<String, Value>, keys: &[&str]) -> Vec<String> {
        let Some((key, value)) = self.take(map, keys) else {
            return Vec::new();
        };
        let (entries, problems) = split_list(&value);
        for problem in problems {
            self.problem(&key, problem);
        }
        entries
    }

    fn raw(&mut self, map: &mut Map<String, Value>, keys: &[&str]) -> Option<Value> {
        self.take(map, keys).map(|(_, value)| value)
    }

    fn bool(&mut self, map: &mut Map<String, Value>, keys: &[&str]) -> bool {
        let Some((key, value)) = self.take(map, keys) else {
            return false;
        };
        match &value {
            Value::Bool(b) => *b,
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" => true,
                "false" | "no" | "off" | "" => false,
                _ => {
                    self.problem(
                        &key,
                        format!("expected true or false, found `{s}` (ignored)"),
                    );
                    false
                }
            },
            other => {
                self.problem(
                    &key,
                    format!("expected true or false, found `{other}` (ignored)"),
                );
                false
            }
        }
    }

    fn max_turns(&mut self, map: &mut Map<String, Value>, keys: &[&str]) -> Option<u32> {
        let (key, value) = self.take(map, keys)?;
        let parsed = match &value {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        match parsed
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
        {
            Some(n) => Some(n),
            None => {
                self.problem(
                    &key,
                    format!("expected a positive integer, found `{value}` (ignored)"),
                );
                None
            }
        }
    }

    fn permission_mode(
        &mut self,
        map: &mut Map<String, Value>,
        keys: &[&str],
    ) -> Option<PermissionMode> {
        let (key, value) = self.take(map, keys)?;
        match scalar_string(&value).and_then(|mode| mode.trim().parse::<PermissionMode>().ok()) {
            Some(mode) => Some(mode),
            None => {
                self.problem(
                    &key,
                    format!(
                        "unknown permission mode `{}` (ignored; expected one of {})",
                        display_value(&value),
                        PERMISSION_MODES.join(", ")
                    ),
                );
                None
            }
        }
    }

    /// Converts every field but `name`, `description` and the prompt (which
    /// the caller has taken out). Unknown fields end up in `unknown_fields`;
    /// the caller decides whether to report them.
    pub(super) fn fill(&mut self, def: &mut AgentDefinition, map: &mut Map<String, Value>) {
        def.tools = self.tools(map, &["tools"]);
        def.disallowed_tools = self
            .tools(map, &["disallowedTools", "disallowed_tools"])
            .unwrap_or_default();
        def.model = self.string(map, &["model"]).map(|m| m.trim().to_string());
        def.permission_mode = self.permission_mode(map, &["permissionMode", "permission_mode"]);
        def.max_turns = self.max_turns(map, &["maxTurns", "max_turns"]);
        def.skills = self.names(map, &["skills"]);
        def.mcp_servers = self.raw(map, &["mcpServers"]);
        def.hooks = self.raw(map, &["hooks"]);
        // Checked now so `cadre agents validate` names a broken hooks map;
        // like Claude Code, the agent still loads, without those hooks.
        if let Some(value) = &def.hooks {
            match crate::hooks::HookSet::parse(value, "hooks") {
                Ok((_, warnings)) => {
                    for w in warnings {
                        self.problem("hooks", w);
                    }
                }
                Err(e) => {
                    self.problem("hooks", format!("{e}; these hooks will not run"));
                    def.hooks = None;
                }
            }
        }
        def.memory = self.raw(map, &["memory"]);
        def.background = self.bool(map, &["background"]);
        def.isolation = self
            .string(map, &["isolation"])
            .map(|s| s.trim().to_string());
        if let Some(isolation) = &def.isolation
            && isolation != "worktree"
        {
            let message = format!("unknown isolation `{isolation}` (only `worktree` is supported)");
            self.problem("isolation", message);
        }
        def.effort = self.one_of(map, "effort", EFFORTS);
        def.color = self.one_of(map, "color", COLORS);
        def.initial_prompt = self.string(map, &["initialPrompt"]);
        def.unknown_fields = std::mem::take(map).into_iter().collect();
    }
}

/// A scalar as a string: strings as they are, numbers and booleans written out.
pub(super) fn scalar_string(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn display_value(value: &Value) -> String {
    scalar_string(value).unwrap_or_else(|| value.to_string())
}

/// Why a name is refused, if it is.
pub(super) fn name_problem(name: &str) -> Option<String> {
    if name.starts_with('-') {
        Some(format!("invalid name `{name}`: must not start with `-`"))
    } else if name.contains(':') {
        Some(format!("invalid name `{name}`: must not contain `:`"))
    } else {
        None
    }
}
