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

use super::SkillSet;
use crate::permissions::ToolEffect;
use crate::tools::{ToolContext, ToolOutput, TypedTool};

/// Loads a skill.
pub struct SkillTool {
    skills: Arc<SkillSet>,
    session_id: String,
}

impl SkillTool {
    /// The tool over `skills`, for the session `session_id` (`${CLAUDE_SESSION_ID}`).
    pub fn new(skills: Arc<SkillSet>, session_id: &str) -> SkillTool {
        SkillTool {
            skills,
            session_id: session_id.to_string(),
        }
    }
}

/// The arguments of a `Skill` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
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

impl TypedTool for SkillTool {
    type Input = Args;
    const NAME: &'static str = "Skill";
    const DESCRIPTION: &'static str = INTRO;
    const EFFECT: ToolEffect = ToolEffect::ReadOnly;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: Args) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let name = args.skill.trim().trim_start_matches('/');
            match self.skills.lookup(name).filter(|s| !s.user_only) {
                Some(skill) => {
                    let vars = super::render::Vars {
                        session_id: self.session_id.clone(),
                        project_dir: ctx.cwd.clone(),
                        effort: skill.effort.clone(),
                    };
                    let tracker = crate::permissions::PermissionTracker::default();
                    let args_text = args.args.unwrap_or_default();
                    let rendered =
                        super::invoke::render_for(skill, args_text.trim(), &vars, ctx, &tracker)
                            .await;
                    let (mut text, granted, skipped) = match rendered {
                        Ok(done) => done,
                        Err(message) => return ToolOutput::error(message),
                    };
                    // A `context: fork` skill's text is a child's task, and its
                    // report what the model gets.
                    if skill.fork_agent.is_some() {
                        return run_forked(ctx, skill, text).await;
                    }
                    if let Some(note) = grant_note(ctx, skill, granted, skipped, &vars) {
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

/// Runs a `context: fork` skill's rendered `prompt` as a child of its agent
/// type, in the foreground, as the `Agent` tool would.
async fn run_forked(ctx: &ToolContext, skill: &super::Skill, prompt: String) -> ToolOutput {
    let (Some(delegation), Some(caller), Some(policy)) =
        (&ctx.delegation, &ctx.caller, &ctx.policy)
    else {
        return ToolOutput::error(format!(
            "the skill {} runs as a subagent, and this agent cannot start one",
            skill.name
        ));
    };
    let input = super::invoke::fork_input(skill, prompt);
    let tracker = crate::permissions::PermissionTracker::default();
    if let Some(why) = super::invoke::fork_refusal(policy, &tracker, &input, &ctx.grants.rules()) {
        return ToolOutput::error(format!("the skill {}: {why}", skill.name));
    }
    if let Err(why) = delegation.check_turn_cap(1) {
        return ToolOutput::error(why);
    }
    let call = crate::tools::SpawnCall { index: 1, input };
    match delegation.spawn(caller, vec![call], 1, &ctx.cancel).await {
        Ok(mut outputs) => match outputs.pop() {
            Some(out) if !out.is_error => ToolOutput::ok(format!(
                "The skill {} ran as a {} subagent. Its report:\n\n{}",
                skill.name,
                skill.fork_agent.as_deref().unwrap_or_default(),
                out.content
            )),
            Some(out) => out,
            None => ToolOutput::error("the subagent did not run"),
        },
        Err(e) => ToolOutput::error(e),
    }
}

/// Grants `skill`'s `allowed-tools` (and its `disallowed-tools` as
/// refusals) to the calling agent for the rest of its turn; the note the
/// model gets about it (entries that are no rule are named and skipped).
pub(crate) fn grant_note(
    ctx: &ToolContext,
    skill: &super::Skill,
    granted: Vec<crate::permissions::rules::Rule>,
    skipped: Vec<String>,
    vars: &super::render::Vars,
) -> Option<String> {
    let denied = super::invoke::disallowed_rules(skill, vars);
    let names: Vec<String> = granted.iter().map(|r| r.text.clone()).collect();
    let refused: Vec<String> = denied.iter().map(|r| r.text.clone()).collect();
    ctx.grants.grant(granted.into_iter().chain(denied));
    let mut note = String::new();
    if !names.is_empty() {
        note.push_str(&format!(
            "\n\nWhile this skill is active (until your turn ends), these run without asking: {}.",
            names.join(", ")
        ));
    }
    if !refused.is_empty() {
        note.push_str(&format!(
            "\n\nWhile this skill is active, these are refused: {}.",
            refused.join(", ")
        ));
    }
    if !skipped.is_empty() {
        note.push_str(&format!(
            "\n\nNot granted (not a permission rule): {}.",
            skipped.join("; ")
        ));
    }
    (!note.is_empty()).then_some(note)
}
