//! The `cadre` binary: parses arguments and hands each subcommand to its module.
//! Exit codes: 0 success, 1 a model or I/O error, 2 bad usage.

mod agents;
mod approve;
mod commands;
mod config_cmd;
mod eval;
mod exec;
mod interactive;
mod keys;
mod mcp_cmd;
mod plugin_cmd;
mod print;
mod render;
mod sessions;
mod setup;
mod signals;
mod skills_cmd;
mod tasks;
mod tui;
mod tui_agents;
mod web_tools;
mod worktrees_cmd;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// A terminal coding agent that delegates to subagents.
#[derive(Debug, Parser)]
#[command(name = "cadre", version, about, propagate_version = true)]
struct Cli {
    /// Print mode (Claude Code's -p): run PROMPT (and what is piped on stdin) headless, print the answer, exit
    #[arg(short = 'p', long = "print")]
    print: bool,
    /// With -p: text (the answer) or json (one result object)
    #[arg(long, value_enum, value_name = "FORMAT", requires = "print")]
    output_format: Option<print::OutputFormat>,
    /// The prompt: with -p the task; without, the first message of the interactive session
    #[arg(value_name = "PROMPT")]
    prompt: Option<String>,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    permissions: PermissionArgs,
    #[command(flatten)]
    resume: ResumeArgs,
    #[command(flatten)]
    agent: AgentArgs,
    /// Use the line-based front end even on a terminal
    #[arg(long)]
    no_tui: bool,
    /// Work in a new git worktree, .cadre/worktrees/NAME on branch cadre/NAME (a fresh name without one); kept at the end only if it has changes
    #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "")]
    worktree: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

/// Where the model is and which one to use; flags beat env beat config.
#[derive(Debug, Clone, Args, Default)]
pub struct ModelArgs {
    /// Provider wire format: anthropic or openai [env: CADRE_PROVIDER]
    #[arg(long, global = true)]
    pub provider: Option<cadre_core::model::Provider>,
    /// Endpoint base URL (Anthropic's without /v1, OpenAI's with it) [env: CADRE_BASE_URL]
    #[arg(long, global = true)]
    pub base_url: Option<String>,
    /// Model id or alias (sonnet, opus, haiku) [env: CADRE_MODEL]
    #[arg(long, global = true)]
    pub model: Option<String>,
}

/// What may run without asking.
#[derive(Debug, Clone, Args, Default)]
pub struct PermissionArgs {
    /// default (alias manual), acceptEdits, plan, dontAsk or bypassPermissions
    #[arg(long, global = true)]
    pub permission_mode: Option<cadre_core::permissions::PermissionMode>,
    /// A rule whose calls run without asking, e.g. 'Bash(cargo test:*)' (repeatable)
    #[arg(long, global = true, value_name = "RULE")]
    pub allow: Vec<String>,
    /// A rule whose calls always ask (repeatable)
    #[arg(long, global = true, value_name = "RULE")]
    pub ask: Vec<String>,
    /// A rule whose calls never run, e.g. 'Bash(rm:*)' (repeatable)
    #[arg(long, global = true, value_name = "RULE")]
    pub deny: Vec<String>,
    /// A folder that counts as part of the project: readable, and writable as the project is (repeatable)
    #[arg(long = "add-dir", global = true, value_name = "DIR")]
    pub add_dir: Vec<std::path::PathBuf>,
    /// Load the plugin in this folder for this session only (repeatable)
    #[arg(long = "plugin-dir", global = true, value_name = "DIR")]
    pub plugin_dir: Vec<std::path::PathBuf>,
    /// Trust this folder's project settings for this run (their allow rules, wider modes, env and hooks)
    #[arg(long, global = true)]
    pub trust: bool,
}

/// Agent definitions given on the command line, and the one the main session runs as.
#[derive(Debug, Clone, Args, Default)]
pub struct AgentArgs {
    /// Agent definitions as JSON: {"name": {"description": "...", "prompt": "...", "tools": [...]}}
    #[arg(long, global = true, value_name = "JSON")]
    pub agents: Option<String>,
    /// Run the main session as this agent definition
    #[arg(long, global = true, value_name = "NAME")]
    pub agent: Option<String>,
    /// MCP servers from this JSON file (Claude Code's `{"mcpServers": …}`; repeatable)
    #[arg(long = "mcp-config", global = true, value_name = "FILE")]
    pub mcp_config: Vec<std::path::PathBuf>,
    /// Use only the servers of --mcp-config files, none of the configured ones
    #[arg(long = "strict-mcp-config", global = true)]
    pub strict_mcp_config: bool,
}

/// Continuing an earlier session.
#[derive(Debug, Clone, Args, Default)]
pub struct ResumeArgs {
    /// Continue the session with this id (see `cadre sessions`)
    #[arg(short = 'r', long, global = true, value_name = "SESSION_ID")]
    pub resume: Option<String>,
    /// When resuming, record calls that may have run as `unknown` without asking
    #[arg(long, global = true)]
    pub accept_unknown: bool,
}

/// A mistake in how cadre was called or configured: exit code 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one task headless: progress on stderr, the final answer on stdout.
    Exec(exec::ExecArgs),
    /// List past sessions with their tokens and cost, show one, or remove one.
    Sessions(sessions::SessionsArgs),
    /// List, show and validate agent definitions.
    Agents(agents::AgentsArgs),
    /// List, show and stop background tasks.
    Tasks(tasks::TasksArgs),
    /// Run evaluation cases (offline against the scripted model, or --live).
    Eval(eval::EvalArgs),
    /// Show the settings in force, each with the file it comes from.
    Config(config_cmd::ConfigArgs),
    /// List, show, add and remove MCP servers.
    Mcp(mcp_cmd::McpArgs),
    /// List and show skills.
    Skills(skills_cmd::SkillsArgs),
    /// List, install, enable and update plugins; manage marketplaces.
    Plugin(plugin_cmd::PluginArgs),
    /// List, diff, merge and remove the git worktrees agents worked in.
    Worktrees(worktrees_cmd::WorktreesArgs),
}

fn main() -> ExitCode {
    // First, while there is one thread: the keys leave the environment.
    keys::take_from_environment();
    let cli = Cli::parse();
    // reqwest is built without a default TLS provider (to avoid a C build);
    // ring is installed once, before any client (model or MCP) is built.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // One thread: the work is waiting on the network and on children, and
    // handing it between threads cost more than it saved (bench/overhead);
    // blocking file and process work goes to tokio's blocking pool.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // Before anything reads the folder: the session works in the worktree.
    let worktree = match cli.worktree.as_deref() {
        Some(name) => match worktrees_cmd::SessionWorktree::enter(name) {
            Ok(w) => Some(w),
            Err(e) => {
                eprintln!("error: {e:#}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Some(Command::Exec(args)) => {
                exec::run(&cli.model, &cli.permissions, &cli.resume, &cli.agent, args).await
            }
            Some(Command::Sessions(args)) => sessions::run(args),
            Some(Command::Agents(args)) => agents::run(&cli.permissions, &cli.agent, args),
            Some(Command::Eval(args)) => eval::run(args).await,
            Some(Command::Tasks(args)) => tasks::run(args).await,
            Some(Command::Config(args)) => config_cmd::run(&cli.permissions, args),
            Some(Command::Mcp(args)) => mcp_cmd::run(&cli.permissions, &cli.agent, args).await,
            Some(Command::Skills(args)) => skills_cmd::run(args),
            Some(Command::Plugin(args)) => plugin_cmd::run(&cli.permissions, args),
            Some(Command::Worktrees(args)) => worktrees_cmd::run(args),
            None if cli.print => {
                let prompt = print::prompt(cli.prompt)?;
                let options = exec::RunOptions {
                    prompt,
                    output: exec::Output::Print(
                        cli.output_format.unwrap_or(print::OutputFormat::Text),
                    ),
                    no_wait: false,
                };
                exec::run_with(
                    &cli.model,
                    &cli.permissions,
                    &cli.resume,
                    &cli.agent,
                    options,
                )
                .await
            }
            None if tui::wanted(cli.no_tui) => {
                tui::run(
                    &cli.model,
                    &cli.permissions,
                    &cli.resume,
                    &cli.agent,
                    cli.prompt,
                )
                .await
            }
            None => {
                interactive::run(
                    &cli.model,
                    &cli.permissions,
                    &cli.resume,
                    &cli.agent,
                    cli.prompt,
                )
                .await
            }
        }
    });
    // Don't wait for stray blocking reads of stdin on the way out.
    runtime.shutdown_background();
    if let Some(w) = worktree {
        w.leave();
    }
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
