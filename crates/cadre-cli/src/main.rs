//! The `cadre` binary: parses arguments and hands each subcommand to its module.
//! Exit codes: 0 success, 1 a model or I/O error, 2 bad usage.

mod exec;
mod interactive;
mod render;
mod setup;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// A terminal coding agent that delegates to subagents.
#[derive(Debug, Parser)]
#[command(name = "cadre", version, about, propagate_version = true)]
struct Cli {
    #[command(flatten)]
    model: ModelArgs,
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

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one task headless: progress on stderr, the final answer on stdout.
    Exec(exec::ExecArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Some(Command::Exec(args)) => exec::run(&cli.model, args).await,
            None => interactive::run(&cli.model).await,
        }
    });
    // Don't wait for stray blocking reads of stdin on the way out.
    runtime.shutdown_background();
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
