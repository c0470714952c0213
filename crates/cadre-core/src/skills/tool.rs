//! The `Skill` tool: the model loads a skill's full text when a task calls
//! for it. The skills it may load (name and description) are listed in the
//! tool's description, so only their one-line summaries cost context until
//! one is used.

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::SkillSet;
use crate::model::ToolSpec;
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
task. When a task matches a skill's description, load it first and follow it. Available \
skills:";

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

    fn execute<'a>(
        &'a self,
        _ctx: &'a ToolContext,
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

    fn spec(&self) -> ToolSpec {
        let mut description = INTRO.to_string();
        for skill in self.skills.for_model() {
            description.push_str(&format!("\n- {}: {}", skill.name, skill.description));
        }
        ToolSpec {
            name: "Skill".into(),
            description,
            input_schema: self.input_schema(),
        }
    }
}
