//! Claude Code's flags that shape one run: the system prompt, the turn and
//! budget limits, the structured answer, the permission prompt tool and the
//! fallback models. They hold in `-p`, `exec` and the interactive front ends
//! alike where they make sense.

use std::path::PathBuf;

use clap::Args;

use crate::UsageError;

/// The run-shaping flags (`cadre --help` groups them under "Run").
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "Run")]
pub struct RunFlags {
    /// Replace the whole default system prompt with this text
    #[arg(
        long,
        global = true,
        value_name = "TEXT",
        conflicts_with = "system_prompt_file"
    )]
    pub system_prompt: Option<String>,
    /// Replace the whole default system prompt with this file's text
    #[arg(long, global = true, value_name = "FILE")]
    pub system_prompt_file: Option<PathBuf>,
    /// Add this text at the end of the system prompt
    #[arg(long, global = true, value_name = "TEXT")]
    pub append_system_prompt: Option<String>,
    /// Add this file's text at the end of the system prompt
    #[arg(long, global = true, value_name = "FILE")]
    pub append_system_prompt_file: Option<PathBuf>,
    /// Stop after this many model requests of the main agent in a turn (error_max_turns)
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
    /// Stop when the run's estimated spend, children included, reaches this many US dollars (error_max_budget_usd)
    #[arg(long, global = true, value_name = "USD")]
    pub max_budget_usd: Option<f64>,
    /// The final answer must be JSON valid under this JSON Schema (inline or a file); returned as structured_output
    #[arg(long, global = true, value_name = "SCHEMA")]
    pub json_schema: Option<String>,
    /// An MCP tool (mcp__server__tool) that answers the permission questions a person would
    #[arg(long, global = true, value_name = "TOOL")]
    pub permission_prompt_tool: Option<String>,
    /// Models to try in order when the main one is overloaded or unavailable (a comma list)
    #[arg(long, global = true, value_name = "MODELS")]
    pub fallback_model: Option<String>,
    /// Accepted for Claude Code's scripts: cadre's stream is always turn by turn
    #[arg(long, global = true)]
    pub verbose: bool,
    /// Give the session an agent team: the lead's named Agent calls start teammates (as [teams] enabled or CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1)
    #[arg(long, global = true)]
    pub teams: bool,
}

impl RunFlags {
    /// The system prompt that replaces the default, read from its file if given.
    pub fn system_prompt(&self) -> Result<Option<String>, UsageError> {
        read_text(
            self.system_prompt.as_deref(),
            self.system_prompt_file.as_deref(),
        )
    }

    /// The text added after the system prompt: the flag's, then the file's.
    pub fn appended_system_prompt(&self) -> Result<Option<String>, UsageError> {
        let file = read_text(None, self.append_system_prompt_file.as_deref())?;
        Ok(match (self.append_system_prompt.clone(), file) {
            (Some(a), Some(b)) => Some(format!("{a}\n\n{b}")),
            (a, b) => a.or(b),
        })
    }

    /// The fallback models, in order.
    pub fn fallback_models(&self) -> Vec<String> {
        self.fallback_model
            .as_deref()
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// The JSON Schema of `--json-schema`, checked before the run.
    pub fn json_schema(&self) -> Result<Option<serde_json::Value>, UsageError> {
        let Some(given) = self.json_schema.as_deref() else {
            return Ok(None);
        };
        let text = if given.trim_start().starts_with('{') {
            given.to_string()
        } else {
            std::fs::read_to_string(given).map_err(|e| {
                UsageError(format!(
                    "--json-schema: {given} is neither JSON nor a readable file: {e}"
                ))
            })?
        };
        let schema: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| UsageError(format!("--json-schema is not valid JSON: {e}")))?;
        cadre_core::structured::AnswerSchema::new(schema.clone())
            .map_err(|e| UsageError(format!("--json-schema is not a usable JSON Schema: {e}")))?;
        Ok(Some(schema))
    }

    /// Checks what can be checked before the run starts.
    pub fn validate(&self) -> Result<(), UsageError> {
        self.system_prompt()?;
        self.appended_system_prompt()?;
        self.json_schema()?;
        if let Some(b) = self.max_budget_usd
            && !(b.is_finite() && b > 0.0)
        {
            return Err(UsageError(format!(
                "--max-budget-usd must be a positive number of dollars, not {b}"
            )));
        }
        if let Some(tool) = &self.permission_prompt_tool
            && (!tool.starts_with("mcp__") || tool.matches("__").count() < 2)
        {
            return Err(UsageError(format!(
                "--permission-prompt-tool takes an MCP tool's name (mcp__server__tool), not {tool:?}"
            )));
        }
        Ok(())
    }
}

fn read_text(
    text: Option<&str>,
    file: Option<&std::path::Path>,
) -> Result<Option<String>, UsageError> {
    if let Some(t) = text {
        return Ok(Some(t.to_string()));
    }
    let Some(path) = file else {
        return Ok(None);
    };
    std::fs::read_to_string(path)
        .map(Some)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", path.display())))
}

/// Splits Claude Code's rule lists: rules are separated by commas or spaces
/// outside parentheses (`"Bash(git diff *) Edit,Read"` is three rules).
pub fn split_rules(text: &str) -> Vec<String> {
    cadre_core::tool_names::split_tool_list(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_lists_split_outside_parentheses() {
        assert_eq!(
            split_rules("Bash(git diff *) Edit,Read, mcp__x"),
            ["Bash(git diff *)", "Edit", "Read", "mcp__x"]
        );
        assert_eq!(split_rules("Bash(a, b)"), ["Bash(a, b)"]);
        assert!(split_rules(" , ").is_empty());
    }
}
