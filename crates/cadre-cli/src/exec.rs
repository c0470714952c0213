//! `cadre exec`: one task, no questions, progress on stderr and the answer on
//! stdout (or every event as JSON lines with `--json`).

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use cadre_core::agent::{Event, EventSink, TurnStatus};
use cadre_core::session::new_session_id;
use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::ModelArgs;
use crate::render::HumanRenderer;
use crate::setup;

/// Arguments of `cadre exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The task.
    pub prompt: String,
    /// Print every event as one JSON object per line on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Exit code for a run the user interrupted (128 + SIGINT), as shells expect.
const EXIT_INTERRUPTED: u8 = 130;

/// Runs the task and returns the process exit code.
pub async fn run(model: &ModelArgs, args: ExecArgs) -> Result<ExitCode> {
    let runtime = setup::prepare(model)?;
    let (sink, mut rx) = EventSink::channel();
    let json = args.json;
    let printer = tokio::spawn(async move {
        let mut human = HumanRenderer::for_exec();
        while let Some(event) = rx.recv().await {
            if json {
                if let Ok(line) = serde_json::to_string(&event) {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{line}");
                    let _ = out.flush();
                }
            } else {
                human.handle(&event);
            }
        }
    });

    let session_id = new_session_id();
    sink.emit(Event::SessionStarted {
        session_id,
        provider: runtime.client.config().provider.to_string(),
        model: runtime.client.config().model.clone(),
        cwd: runtime.cwd.display().to_string(),
    });
    for w in &runtime.settings.warnings {
        sink.emit(Event::Warning { message: w.clone() });
    }

    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_signal.cancel();
        }
        // A second Ctrl+C leaves at once.
        if tokio::signal::ctrl_c().await.is_ok() {
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
    });

    let mut agent = runtime.main_agent(sink.clone());
    let outcome = agent.run_turn(args.prompt, cancel).await;
    drop(agent);
    drop(sink);
    let _ = printer.await;

    if !json && !outcome.final_text.is_empty() {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", outcome.final_text.trim_end());
        let _ = out.flush();
    }
    Ok(match outcome.status {
        TurnStatus::Completed => ExitCode::SUCCESS,
        TurnStatus::Interrupted => ExitCode::from(EXIT_INTERRUPTED),
        TurnStatus::LimitReached | TurnStatus::Failed => ExitCode::from(1),
    })
}
