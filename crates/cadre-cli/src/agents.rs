//! `cadre agents list|show|validate`: what definitions exist, where each came
//! from, what it overrides, and what a child of it would actually get.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use cadre_core::config::{Settings, data_dir};
use cadre_core::model::Provider;
use cadre_core::permissions::PermissionMode;
use cadre_core::subagents::catalog::{CatalogSources, DefinitionCatalog, validate_path};
use cadre_core::subagents::definition::{DefinitionIssue, IssueLevel};
use cadre_core::subagents::filter::FilterError;
use cadre_core::subagents::{AgentDefinition, ChildCall, ChildSpec, ParentView, session_tools};
use clap::{Args, Subcommand};

use crate::{AgentArgs, PermissionArgs, UsageError};

/// Arguments of `cadre agents`.
#[derive(Debug, Args)]
pub struct AgentsArgs {
    #[command(subcommand)]
    command: Option<AgentsCommand>,
}

#[derive(Debug, Subcommand)]
enum AgentsCommand {
    /// Every definition, its source, and what it overrides (the default).
    List,
    /// One definition as a child would get it: tools, model, mode, file.
    Show {
        /// Definition name.
        name: String,
    },
    /// Report files that are skipped or odd, with reasons; exit 1 on any error.
    Validate {
        /// A file or directory to check instead of every source.
        path: Option<PathBuf>,
        /// List every file of a repeated warning instead of one line with a count.
        #[arg(long)]
        verbose: bool,
    },
}

fn where_from(def: &AgentDefinition) -> String {
    match &def.path {
        Some(p) => format!("{} ({})", def.source.as_str(), p.display()),
        None => def.source.as_str().to_string(),
    }
}

fn print_issue(out: &mut impl Write, i: &DefinitionIssue) -> std::io::Result<()> {
    let place = match (&i.path, i.line) {
        (Some(p), Some(l)) => format!("{}:{l}", p.display()),
        (Some(p), None) => p.display().to_string(),
        (None, _) => "--agents".to_string(),
    };
    writeln!(out, "{:<7} {place}: {}", i.level.as_str(), i.message)
}

/// Writes validation issues: warnings and notes first, a message repeated
/// across files as one line with the count (each file under `verbose`), then
/// every error on its own line, so that errors stand out at the end.
fn write_issues(
    out: &mut impl Write,
    issues: &[DefinitionIssue],
    verbose: bool,
) -> std::io::Result<()> {
    let mut groups: Vec<(IssueLevel, &str, Vec<&DefinitionIssue>)> = Vec::new();
    for issue in issues.iter().filter(|i| i.level != IssueLevel::Error) {
        match groups
            .iter_mut()
            .find(|(level, message, _)| *level == issue.level && *message == issue.message)
        {
            Some((_, _, members)) => members.push(issue),
            None => groups.push((issue.level, &issue.message, vec![issue])),
        }
    }
    for (level, message, members) in &groups {
        if members.len() == 1 || verbose {
            for issue in members {
                print_issue(out, issue)?;
            }
        } else {
            writeln!(
                out,
                "{:<7} ({} files): {message} — `cadre agents validate --verbose` lists them",
                level.as_str(),
                members.len()
            )?;
        }
    }
    for issue in issues.iter().filter(|i| i.level == IssueLevel::Error) {
        print_issue(out, issue)?;
    }
    Ok(())
}

/// Runs `cadre agents …`.
pub fn run(perms: &PermissionArgs, agent: &AgentArgs, args: AgentsArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let home = data_dir()?;
    let settings = Settings::load(&home, &cwd)?;
    let subagents = crate::setup::subagent_settings(&settings);
    let full = Settings::load_with(&crate::setup::settings_paths(
        &home,
        &cwd,
        crate::setup::folder_trusted(&home, &cwd, perms, &mut Vec::new()),
    ))?;
    let plugins = crate::setup::load_plugins(&home, &cwd, &full, full.project_trusted, perms);
    let src = crate::setup::catalog_sources(agent, &subagents, &cwd, &home, &plugins);
    let mut out = std::io::stdout().lock();
    match args.command.unwrap_or(AgentsCommand::List) {
        AgentsCommand::List => {
            let errors = write_list(&mut out, &src)?;
            if errors > 0 {
                eprintln!("{}", skipped_note(errors));
            }
        }
        AgentsCommand::Show { name } => {
            write_show(&mut out, &name, &src, perms, &settings)?;
        }
        AgentsCommand::Validate { path, verbose } => {
            let issues: Vec<DefinitionIssue> = match path {
                Some(p) => {
                    if !p.exists() {
                        return Err(UsageError(format!("{} does not exist", p.display())).into());
                    }
                    let (defs, issues) = validate_path(&p);
                    for d in &defs {
                        writeln!(out, "ok      {}: {}", where_from(d), d.name)?;
                    }
                    issues
                }
                None => match DefinitionCatalog::load(&src) {
                    Ok(c) => {
                        for e in c.entries() {
                            writeln!(
                                out,
                                "ok      {}: {}",
                                where_from(&e.definition),
                                e.definition.name
                            )?;
                        }
                        c.issues().to_vec()
                    }
                    Err(e) => {
                        writeln!(out, "error   --agents: {e}")?;
                        return Ok(ExitCode::from(1));
                    }
                },
            };
            write_issues(&mut out, &issues, verbose)?;
            if issues.iter().any(|i| i.level == IssueLevel::Error) {
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes every definition, its source and what it overrides, one a line;
/// returns how many definition files were skipped as errors.
pub fn write_list(out: &mut impl Write, src: &CatalogSources) -> Result<usize> {
    let catalog = DefinitionCatalog::load(src).map_err(UsageError)?;
    let entries = catalog.entries();
    // The name column fits the longest name, so the columns stay aligned.
    let width = entries
        .iter()
        .map(|e| e.definition.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(24);
    for entry in entries {
        let d = &entry.definition;
        write!(
            out,
            "{:<width$} {:<9} {}",
            d.name,
            d.source.as_str(),
            where_from(d).trim_start_matches(d.source.as_str()).trim()
        )?;
        if !entry.shadows.is_empty() {
            let shadowed: Vec<String> = entry.shadows.iter().map(where_from).collect();
            write!(out, "  overrides: {}", shadowed.join(", "))?;
        }
        writeln!(out)?;
    }
    Ok(catalog
        .issues()
        .iter()
        .filter(|i| i.level == IssueLevel::Error)
        .count())
}

/// True for a `tools` entry naming a tool only a running session has: `Skill`
/// (when it has skills) and an MCP server's tools, the resource tools
/// included (when the server runs).
fn given_at_run_time(entry: &str) -> bool {
    entry == "Skill" || cadre_core::mcp::is_mcp_tool(entry)
}

/// The `tools` entries a running session gives the child, when there are any.
fn write_at_run_time(out: &mut impl Write, entries: &[&String]) -> std::io::Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "at run time: {} (given when the session has them: its skills, its running MCP servers)",
        join(entries)
    )
}

fn join(entries: &[&String]) -> String {
    entries
        .iter()
        .map(|e| e.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the list says when definition files were skipped.
pub fn skipped_note(errors: usize) -> String {
    format!("{errors} definition file(s) skipped; see `cadre agents validate`")
}

/// Writes the definition `name` as a child would get it; a usage error
/// naming the known ones when there is none.
pub fn write_show(
    out: &mut impl Write,
    name: &str,
    src: &CatalogSources,
    perms: &PermissionArgs,
    settings: &Settings,
) -> Result<()> {
    let catalog = DefinitionCatalog::load(src).map_err(UsageError)?;
    let Some(entry) = catalog
        .entries()
        .into_iter()
        .find(|e| e.definition.name == name)
    else {
        return Err(UsageError(format!(
            "no agent definition named '{name}'; known: {}",
            catalog.names().join(", ")
        ))
        .into());
    };
    show(
        out,
        entry.definition.clone(),
        &entry.shadows,
        perms,
        settings,
    )
}

fn show(
    out: &mut impl Write,
    def: AgentDefinition,
    shadows: &[AgentDefinition],
    perms: &PermissionArgs,
    settings: &Settings,
) -> Result<()> {
    writeln!(out, "name:        {}", def.name)?;
    writeln!(out, "source:      {}", where_from(&def))?;
    if !shadows.is_empty() {
        let s: Vec<String> = shadows.iter().map(where_from).collect();
        writeln!(out, "overrides:   {}", s.join(", "))?;
    }
    writeln!(
        out,
        "description: {}",
        def.description.lines().next().unwrap_or("")
    )?;
    // What a first-level child would get from the main session's tools,
    // built by the runtime's own builder.
    let session_mode = perms.permission_mode.unwrap_or_else(|| {
        settings
            .user_permissions
            .default_mode
            .as_deref()
            .and_then(|m| m.parse().ok())
            .unwrap_or(PermissionMode::Default)
    });
    let mut subagents = crate::setup::subagent_settings(settings);
    let tools = session_tools();
    let cwd = std::env::current_dir()?;
    // A trusted folder's definitions may widen the mode, as in a session.
    subagents.project_trusted =
        crate::setup::folder_trusted(&data_dir()?, &cwd, perms, &mut Vec::new());
    let resolved = ChildSpec::resolve(
        &def,
        &ChildCall::default(),
        &ParentView {
            tools: &tools,
            mode: session_mode,
            depth: 0,
            // Only the model line's alias needs it, and that line shows the
            // definition's own words.
            provider: Provider::Anthropic,
            sandbox: None,
            project: &cadre_core::agent::ProjectContext::read_now(&cwd),
            settings: &subagents,
            models: settings,
        },
    );
    match &resolved {
        Ok(spec) => {
            writeln!(out, "tools:       {}", spec.tools.names().join(", "))?;
            let (at_run_time, unknown): (Vec<&String>, Vec<&String>) = spec
                .unresolved
                .iter()
                .partition(|entry| given_at_run_time(entry));
            write_at_run_time(out, &at_run_time)?;
            if !unknown.is_empty() {
                writeln!(out, "unresolved:  {} (name no tool)", join(&unknown))?;
            }
            if !spec.removed_by_both.is_empty() {
                writeln!(
                    out,
                    "removed:     {} (in both tools and disallowedTools)",
                    spec.removed_by_both.join(", ")
                )?;
            }
        }
        // Only tools the session adds when it runs: none can be listed here.
        Err(FilterError::NoTools { unresolved })
            if !unresolved.is_empty() && unresolved.iter().all(|e| given_at_run_time(e)) =>
        {
            writeln!(out, "tools:       none built in")?;
            write_at_run_time(out, &unresolved.iter().collect::<Vec<_>>())?;
        }
        Err(e) => writeln!(out, "tools:       NONE — a child would not start: {e}")?,
    }
    let model = match def.model.as_deref() {
        None | Some("inherit") => "inherit (the parent's model)".to_string(),
        Some(m) => m.to_string(),
    };
    writeln!(out, "model:       {model}")?;
    // The ratchet does not depend on the tools: shown even when none resolve.
    let decided = match &resolved {
        Ok(spec) => spec.mode.clone(),
        Err(_) => cadre_core::subagents::ratchet::child_mode(
            session_mode,
            def.permission_mode,
            def.source,
            subagents.mode_limits(),
        ),
    };
    write!(
        out,
        "mode:        {} (session: {session_mode}",
        decided.mode
    )?;
    if let Some(m) = &def.permission_mode {
        write!(out, "; definition asks for {m}")?;
    }
    writeln!(out, ")")?;
    if let Some(note) = decided.note {
        writeln!(out, "             {note}")?;
    }
    if let Some(t) = def.max_turns {
        writeln!(out, "maxTurns:    {t}")?;
    }
    if def.background {
        writeln!(out, "background:  true")?;
    }
    if let Some(effort) = &def.effort {
        writeln!(out, "effort:      {effort}")?;
    }
    if def.isolation.is_some() {
        writeln!(
            out,
            "isolation:   worktree (runs in .cadre/worktrees/<agent id> on branch cadre/<agent id>)"
        )?;
    }
    if let Some(color) = &def.color {
        writeln!(out, "color:       {color}")?;
    }
    if let Some(first) = &def.initial_prompt {
        // Its first line: the rest can be read in the file.
        let line = first.lines().next().unwrap_or("");
        let more = if first.trim_end().contains('\n') {
            " …"
        } else {
            ""
        };
        writeln!(
            out,
            "initialPrompt: {line}{more} (sent first under --agent)"
        )?;
    }
    if !def.unknown_fields.is_empty() {
        let keys: Vec<&String> = def.unknown_fields.keys().collect();
        writeln!(out, "unknown:     {keys:?} (kept, ignored)")?;
    }
    Ok(())
}
