//! The `cadre` binary: parses arguments and hands each subcommand to its module.
//! Exit codes: 0 success, 1 a model or I/O error, 2 bad usage.

mod acp;
mod agents;
mod approve;
mod child_calls;
mod commands;
mod config_cmd;
mod descriptors;
mod doctor;
mod eval;
mod exec;
mod interactive;
mod keys;
mod mcp_cmd;
mod mcp_serve;
mod plugin_cmd;
mod print;
mod prompt_tool;
mod render;
mod run_flags;
mod session_choice;
mod sessions;
mod setup;
mod signals;
mod skills_cmd;
mod stream_input;
mod tasks;
mod tui;
mod tui_agents;
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
    /// With -p: text (the answer), json (one result object) or stream-json (JSON lines)
    #[arg(long, value_enum, value_name = "FORMAT", requires = "print")]
    output_format: Option<print::OutputFormat>,
    #[command(flatten)]
    stream: print::StreamArgs,
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
#[command(next_help_heading = "Model")]
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
#[command(next_help_heading = "Permissions and settings")]
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
    /// Claude Code's allow rules: calls they match run without asking (space- or comma-separated)
    #[arg(long = "allowedTools", visible_alias = "allowed-tools", global = true, value_name = "RULES", num_args = 1..)]
    pub allowed_tools: Vec<String>,
    /// Claude Code's deny rules: a bare tool name removes the tool, a scoped rule denies the calls it matches
    #[arg(long = "disallowedTools", visible_alias = "disallowed-tools", global = true, value_name = "RULES", num_args = 1..)]
    pub disallowed_tools: Vec<String>,
    /// The built-in tools the main agent has ("Bash,Edit,Read"; "" none, "default" all); MCP tools stay
    #[arg(long, global = true, value_name = "TOOLS")]
    pub tools: Option<String>,
    /// Same as --permission-mode bypassPermissions
    #[arg(long, global = true)]
    pub dangerously_skip_permissions: bool,
    /// An extra settings layer for this run: a JSON file or inline JSON (above local settings, below managed)
    #[arg(long, global = true, value_name = "FILE_OR_JSON")]
    pub settings: Option<String>,
    /// Which settings files load: a comma list of user, project, local (managed always loads)
    #[arg(long, global = true, value_name = "SOURCES")]
    pub setting_sources: Option<String>,
    /// Tools removed by bare names in --disallowedTools (filled in by `absorb_claude_flags`)
    #[arg(skip)]
    pub removed_tools: Vec<String>,
}

impl PermissionArgs {
    /// Folds Claude Code's spellings into cadre's: `--allowedTools` into
    /// allow rules, `--disallowedTools` into deny rules (bare names also
    /// remove the tool), `--dangerously-skip-permissions` into the mode.
    pub fn absorb_claude_flags(&mut self) -> Result<(), UsageError> {
        for rule in self
            .allowed_tools
            .iter()
            .flat_map(|t| run_flags::split_rules(t))
        {
            self.allow.push(rule);
        }
        for rule in self
            .disallowed_tools
            .iter()
            .flat_map(|t| run_flags::split_rules(t))
        {
            if !rule.contains('(') {
                self.removed_tools.push(rule.clone());
            }
            self.deny.push(rule);
        }
        if self.dangerously_skip_permissions {
            match self.permission_mode {
                None | Some(cadre_core::permissions::PermissionMode::BypassPermissions) => {
                    self.permission_mode =
                        Some(cadre_core::permissions::PermissionMode::BypassPermissions)
                }
                Some(other) => {
                    return Err(UsageError(format!(
                        "--dangerously-skip-permissions conflicts with --permission-mode {other}"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Agent definitions given on the command line, and the one the main session runs as.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "Agents and MCP")]
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
    #[command(flatten)]
    pub run: run_flags::RunFlags,
}

/// Continuing an earlier session, or naming and keeping a new one.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "Sessions")]
pub struct ResumeArgs {
    /// Continue the session with this id (see `cadre sessions`); without one, pick it (full screen)
    #[arg(short = 'r', long, global = true, value_name = "SESSION_ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    /// Continue the most recent session of this folder
    #[arg(
        short = 'c',
        long = "continue",
        global = true,
        conflicts_with = "resume"
    )]
    pub continue_last: bool,
    /// With --resume or --continue: go on in a new session (a copy), leaving the original untouched
    #[arg(long, global = true)]
    pub fork_session: bool,
    /// The new session's id (a UUID)
    #[arg(long, global = true, value_name = "UUID")]
    pub session_id: Option<String>,
    /// Keep nothing of this run's session once it ends (it cannot be resumed)
    #[arg(long, global = true)]
    pub no_session_persistence: bool,
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
    /// Serve editors over the Agent Client Protocol on stdin and stdout (Zed, JetBrains, Neovim, Emacs).
    Acp,
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
    /// List, show, add and remove MCP servers; serve cadre's tools over MCP.
    Mcp(mcp_cmd::McpArgs),
    /// List and show skills.
    Skills(skills_cmd::SkillsArgs),
    /// List, install, enable and update plugins; manage marketplaces.
    Plugin(plugin_cmd::PluginArgs),
    /// List, diff, merge and remove the git worktrees agents worked in.
    Worktrees(worktrees_cmd::WorktreesArgs),
    /// Check settings, agents, skills, MCP servers, hooks and the sandbox (read-only).
    Doctor(doctor::DoctorArgs),
}

fn main() -> ExitCode {
    // An editor's terminal running a sandboxed command: become it, before
    // anything else (the sandbox wants a process of one thread).
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new("__sandbox-exec")) {
        return sandbox_exec();
    }
    // First, while there is one thread: the keys leave the environment,
    // and the descriptor table is grown (later, that stalls every thread).
    keys::take_from_environment();
    descriptors::reserve_table();
    let mut cli = Cli::parse();
    if let Err(e) = cli
        .permissions
        .absorb_claude_flags()
        .and_then(|()| setup::set_run_settings(&cli.permissions))
    {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
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
            Some(Command::Acp) => acp::run(&cli.model, &cli.permissions, &cli.agent).await,
            Some(Command::Sessions(args)) => sessions::run(args),
            Some(Command::Agents(args)) => agents::run(&cli.permissions, &cli.agent, args),
            Some(Command::Eval(args)) => eval::run(args).await,
            Some(Command::Tasks(args)) => tasks::run(args).await,
            Some(Command::Config(args)) => config_cmd::run(&cli.permissions, args),
            Some(Command::Mcp(args)) => {
                mcp_cmd::run(&cli.model, &cli.permissions, &cli.agent, args).await
            }
            Some(Command::Skills(args)) => skills_cmd::run(args),
            Some(Command::Plugin(args)) => plugin_cmd::run(&cli.permissions, args),
            Some(Command::Worktrees(args)) => worktrees_cmd::run(args),
            Some(Command::Doctor(args)) => doctor::run(&cli.permissions, &cli.agent, args).await,
            None if cli.print => {
                cli.stream.validate(cli.output_format)?;
                let prompt = if cli.stream.input_format == Some(print::InputFormat::StreamJson) {
                    if cli.prompt.is_some() {
                        anyhow::bail!(UsageError(
                            "--input-format stream-json reads the messages on stdin: give no prompt argument".into()
                        ));
                    }
                    String::new()
                } else {
                    print::prompt(cli.prompt)?
                };
                let options = exec::RunOptions {
                    prompt,
                    output: exec::Output::Print(
                        cli.output_format.unwrap_or(print::OutputFormat::Text),
                    ),
                    no_wait: false,
                    stream: cli.stream.clone(),
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

/// `cadre __sandbox-exec POLICY COMMAND`: replaces this process with
/// `bash -c COMMAND` under the sandbox POLICY (JSON), as `Bash` would run
/// it; for commands cadre hands to an editor's terminal. Not for people.
fn sandbox_exec() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(2).collect();
    let [policy, command] = args.as_slice() else {
        eprintln!("error: __sandbox-exec takes a policy and a command");
        return ExitCode::from(2);
    };
    let policy: cadre_core::sandbox::SandboxPolicy = match serde_json::from_str(policy) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: bad sandbox policy: {e}");
            return ExitCode::from(2);
        }
    };
    let e = cadre_core::sandbox::exec_sandboxed(&policy, command);
    eprintln!("error: cannot run the command sandboxed: {e}");
    ExitCode::from(126)
}
