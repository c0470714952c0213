//! `cadre skills list | show NAME`: the skills found for this folder, with
//! where each comes from, and one skill's full text as an agent gets it.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use cadre_core::config::data_dir;
use cadre_core::skills::{SkillKind, SkillSet};
use clap::{Args, Subcommand};

use crate::UsageError;

/// Arguments of `cadre skills`.
#[derive(Debug, Args)]
pub struct SkillsArgs {
    #[command(subcommand)]
    command: SkillsCommand,
}

#[derive(Debug, Subcommand)]
enum SkillsCommand {
    /// Every skill: name, where it is, what it is for.
    List,
    /// One skill's full text, as the Skill tool gives it.
    Show {
        /// The skill's name.
        name: String,
    },
}

/// Runs `cadre skills …`.
pub fn run(args: SkillsArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let data = data_dir()?;
    let perms = crate::PermissionArgs::default();
    let trusted = crate::setup::folder_trusted(&data, &cwd, &perms, &mut Vec::new());
    let settings = cadre_core::config::Settings::load_with(&crate::setup::settings_paths(
        &data, &cwd, trusted,
    ))?;
    let plugins = crate::setup::load_plugins(&data, &cwd, &settings, trusted, &perms);
    let set = SkillSet::load(&cwd, &data, home.as_deref(), &plugins);
    for w in &set.warnings {
        eprintln!("warning: {w}");
    }
    match args.command {
        SkillsCommand::List => {
            if set.skills.is_empty() {
                println!(
                    "No skills or commands. A skill is a folder with a SKILL.md in .claude/skills/ or ~/.claude/skills/; a command a Markdown file in .claude/commands/ or ~/.claude/commands/."
                );
            }
            for skill in &set.skills {
                let kind = match skill.kind {
                    SkillKind::Skill => "skill",
                    SkillKind::Command => "command",
                };
                let mut who = String::new();
                if skill.user_only {
                    who.push_str(" · user only");
                }
                if !skill.user_invocable {
                    who.push_str(" · model only");
                }
                if let Some(agent) = &skill.fork_agent {
                    who.push_str(&format!(" · runs as {agent}"));
                }
                let usage = match &skill.argument_hint {
                    Some(hint) => format!("/{} {hint}", skill.name),
                    None => format!("/{}", skill.name),
                };
                println!(
                    "{usage:<24} {kind} ({}){who} · {} · {}",
                    skill.label,
                    skill.file.display(),
                    skill.description
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        SkillsCommand::Show { name } => {
            let Some(skill) = set.lookup(name.trim_start_matches('/')) else {
                let known: Vec<&str> = set.skills.iter().map(|s| s.name.as_str()).collect();
                bail!(UsageError(format!(
                    "no skill named {name}; known: {}",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            };
            println!("{}", skill.loaded_text());
            if !skill.allowed_tools.is_empty() {
                println!(
                    "\nallowed-tools (run without asking while the skill is active, once the Skill tool loads it): {}",
                    skill.allowed_tools.join(", ")
                );
            }
            if let Some(model) = &skill.model {
                println!(
                    "\nmodel: {model} (the rest of the turn that loads it with the Skill tool runs on it)"
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
