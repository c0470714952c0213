//! The `Skill` tool: the model loads a skill's full text when a task calls
//! for it. The skills it may load (name and description) reach the model in
//! a system reminder before the first message, so only their one-line
//! summaries cost context until one is used, and the tool list stays the
//! same whatever skills exist. A loaded skill's `allowed-tools` run without
//! asking until the agent's turn ends.

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::SkillSet;
use crate::tools::{Tool, ToolContext, ToolInput, ToolOutput, input_schema, parse_args};

/// Loads a skill.
pub struct SkillTool {
    skills: Arc<SkillSet>,
}

impl SkillTool {
    /// The tool over `skills`.
    pub fn new(skills: Arc<SkillSet>) -> SkillTool {
        SkillTool { skills }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The skill's name, as listed
    skill: String,
    /// What the skill is to work on, if it takes anything
    args: Option<String>,
}

const INTRO: &str = "Load a skill: instructions (and the files they come with) for a kind of \
task. When a task matches a skill's description, load it first and follow it. The skills \
there are, with what each is for, are listed in a system reminder.";

/// The first line of the skills reminder.
pub const SKILLS_HEADER: &str = "Skills available to the Skill tool (skill):";

impl Tool for SkillTool {
    fn name(&self) -> &'static str {
        "Skill"
    }

    fn description(&self) -> &'static str {
        INTRO
    }

    fn input_schema(&self) -> Value {
        static SCHEMA: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        SCHEMA.get_or_init(input_schema::<Args>).clone()
    }

    fn is_read_only(&self) -> bool {
        true
    }

    fn effect(&self) -> crate::permissions::ToolEffect {
        crate::permissions::ToolEffect::ReadOnly
    }

    fn validate(&self, input: &ToolInput) -> Result<(), ToolOutput> {
        crate::tools::validate_as::<Args>(self, input)
    }

    fn execute<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a ToolInput,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let args: Args = match parse_args(input) {
                Ok(a) => a,
                Err(e) => return e,
            };
            let name = args.skill.trim().trim_start_matches('/');
            match self.skills.for_model().find(|s| s.name == name) {
                Some(skill) => {
                    let mut text = skill.loaded_text();
                    if let Some(a) = args.args.filter(|a| !a.trim().is_empty()) {
                        text.push_str(&format!("\n\nArguments: {a}"));
                    }
                    if let Some(note) = grant_allowed_tools(ctx, skill) {
                        text.push_str(&note);
                    }
                    if let Some(model) = &skill.model {
                        ctx.grants.set_model(model);
                        text.push_str(&format!(
                            "\n\nThe rest of this turn runs on the model {model}, as the skill asks."
                        ));
                    }
                    ToolOutput::ok(text)
                }
                None => {
                    let known: Vec<&str> =
                        self.skills.for_model().map(|s| s.name.as_str()).collect();
                    ToolOutput::error(format!(
                        "no skill named {name:?}; available: {}",
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ))
                }
            }
        })
    }

    fn user_message(&self, ctx: &ToolContext, text: &str) {
        // `/NAME args` then the skill's text, as the front ends send it.
        let Some(first) = text.lines().next().and_then(|l| l.strip_prefix('/')) else {
            return;
        };
        let name = first.split_whitespace().next().unwrap_or("");
        let Some(skill) = self.skills.get(name) else {
            return;
        };
        let header = format!("Skill {}.", skill.name);
        if text.lines().nth(2).is_some_and(|l| l.starts_with(&header)) {
            grant_allowed_tools(ctx, skill);
            if let Some(model) = &skill.model {
                ctx.grants.set_model(model);
            }
        }
    }

    fn first_reminder(&self, _ctx: &ToolContext) -> Option<String> {
        let mut text = format!("<system-reminder>\n{SKILLS_HEADER}\n");
        let mut any = false;
        for skill in self.skills.for_model() {
            any = true;
            text.push_str(&format!("- {}: {}\n", skill.name, skill.description));
        }
        text.push_str("</system-reminder>");
        any.then_some(text)
    }
}

/// Grants `skill`'s `allowed-tools` to the calling agent for the rest of its
/// turn; the note the model gets about it (entries that are no rule are
/// named and skipped).
fn grant_allowed_tools(ctx: &ToolContext, skill: &super::Skill) -> Option<String> {
    use crate::permissions::rules::{RuleKind, parse_rule};
    if skill.allowed_tools.is_empty() {
        return None;
    }
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let mut granted = Vec::new();
    let mut skipped = Vec::new();
    let mut rules = Vec::new();
    for entry in &skill.allowed_tools {
        match parse_rule(RuleKind::Allow, entry, home.as_deref()) {
            Ok(rule) => {
                granted.push(entry.as_str());
                rules.push(rule);
            }
            Err(e) => skipped.push(format!("{entry} ({e})")),
        }
    }
    ctx.grants.grant(rules);
    let mut note = String::new();
    if !granted.is_empty() {
        note.push_str(&format!(
            "\n\nWhile this skill is active (until your turn ends), these run without asking: {}.",
            granted.join(", ")
        ));
    }
    if !skipped.is_empty() {
        note.push_str(&format!(
            "\n\nNot granted (not a permission rule): {}.",
            skipped.join("; ")
        ));
    }
    Some(note)
}
