//! The agent definitions embedded in the binary. Any other source may replace
//! one of them by defining the same name.

use super::definition::blank_definition;
use super::{AgentDefinition, DefinitionSource};

const EXPLORE_PROMPT: &str = include_str!("builtin/explore.md");
const PLAN_PROMPT: &str = include_str!("builtin/plan.md");
const GENERAL_PURPOSE_PROMPT: &str = include_str!("builtin/general-purpose.md");
const VERIFICATION_PROMPT: &str = include_str!("builtin/verification.md");

/// Read-only tools of `Explore` and `Plan` (their `Bash` runs in a write-denying sandbox).
const READ_ONLY_TOOLS: &[&str] = &["Read", "Grep", "Glob", "Bash"];

fn builtin(name: &str, description: &str, prompt: &str) -> AgentDefinition {
    blank_definition(
        name,
        description,
        prompt.trim(),
        DefinitionSource::Builtin,
        None,
    )
}

fn tool_list(tools: &[&str]) -> Option<Vec<String>> {
    Some(tools.iter().map(|t| t.to_string()).collect())
}

/// The built-in definitions: `Explore`, `Plan`, `general-purpose`, and
/// `Verification` when `enable_verification` (`subagents.enable_verification`).
pub fn builtin_definitions(enable_verification: bool) -> Vec<AgentDefinition> {
    let mut explore = builtin(
        "Explore",
        "Fast read-only search of the codebase: finding files, definitions, usages and answering \"where/how is X done\" questions. Say how thorough to be: `quick`, `medium` or `very thorough`.",
        EXPLORE_PROMPT,
    );
    explore.tools = tool_list(READ_ONLY_TOOLS);
    explore.model = Some("haiku".to_string());
    explore.include_project_instructions = false;
    explore.read_only = true;
    explore.one_shot = true;

    let mut plan = builtin(
        "Plan",
        "Read-only software architect: researches the codebase and designs an implementation plan for a change, ending with the most critical files. Use it before non-trivial changes.",
        PLAN_PROMPT,
    );
    plan.tools = tool_list(READ_ONLY_TOOLS);
    plan.model = Some("inherit".to_string());
    plan.include_project_instructions = false;
    plan.read_only = true;
    plan.one_shot = true;

    let general = builtin(
        "general-purpose",
        "General agent with all tools for multi-step research or changes that would take many steps in this conversation. Use it when no more specific agent type fits.",
        GENERAL_PURPOSE_PROMPT,
    );

    let mut out = vec![explore, plan, general];
    if enable_verification {
        let mut verification = builtin(
            "Verification",
            "Independently verifies a change just made by trying to break it: builds, runs tests, linters and targeted checks without modifying project files, and ends with VERDICT: PASS, FAIL or PARTIAL. Use it after non-trivial changes.",
            VERIFICATION_PROMPT,
        );
        verification.model = Some("inherit".to_string());
        verification.background = true;
        verification.read_only = true;
        verification.reports_verdict = true;
        verification.disallowed_tools = vec!["Agent".into(), "Edit".into(), "Write".into()];
        out.push(verification);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins() {
        let defs = builtin_definitions(false);
        let names: Vec<_> = defs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, vec!["Explore", "Plan", "general-purpose"]);
        for def in &defs {
            assert_eq!(def.source, DefinitionSource::Builtin);
            assert!(def.path.is_none());
            assert!(!def.prompt.is_empty() && !def.description.is_empty());
        }
        let explore = &defs[0];
        assert!(explore.read_only && !explore.include_project_instructions);
        assert!(explore.one_shot && !explore.reports_verdict);
        assert_eq!(explore.model.as_deref(), Some("haiku"));
        assert_eq!(
            explore.tools.as_deref(),
            Some(&["Read", "Grep", "Glob", "Bash"].map(String::from)[..])
        );
        assert!(explore.prompt.contains("very thorough"));
        let plan = &defs[1];
        assert!(plan.read_only && !plan.include_project_instructions);
        assert!(plan.one_shot && !plan.reports_verdict);
        assert_eq!(plan.model.as_deref(), Some("inherit"));
        assert!(plan.prompt.contains("Critical files"));
        let general = &defs[2];
        assert!(general.tools.is_none() && !general.read_only);
        assert!(general.include_project_instructions);
        assert!(!general.one_shot && !general.reports_verdict);

        let defs = builtin_definitions(true);
        let verification = &defs[3];
        assert_eq!(verification.name, "Verification");
        assert!(verification.background && verification.read_only);
        assert!(verification.reports_verdict && !verification.one_shot);
        assert_eq!(verification.model.as_deref(), Some("inherit"));
        assert_eq!(
            verification.disallowed_tools,
            vec!["Agent", "Edit", "Write"]
        );
        assert!(
            verification
                .prompt
                .ends_with("Write the VERDICT line only once.")
        );
        assert!(verification.prompt.contains("VERDICT: PARTIAL"));
    }
}
