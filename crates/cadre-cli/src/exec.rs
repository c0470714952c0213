//! `cadre exec`: one task, progress on stderr and the answer on stdout (or
//! every event as JSON lines with `--json`). Questions are asked on the
//! terminal when stdin is one; otherwise they are denied.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use cadre_core::agent::{Event, EventSink, TurnStatus};
use cadre_core::background::{NOTICE_SETTLE, NOTICE_SETTLE_MAX, NoticeThrottle};
use cadre_core::permissions::{ApprovalSource, Headless};
use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::approve::{StdinLines, TerminalApprovals, stdin_is_terminal};
use crate::render::HumanRenderer;
use crate::{AgentArgs, ModelArgs, PermissionArgs, ResumeArgs, sessions, setup};

/// Arguments of `cadre exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The task.
    pub prompt: String,
    /// Print every event as one JSON object per line on stdout.
    #[arg(long)]
    pub json: bool,
    /// Exit when the task's own turn ends, stopping background work it started.
    #[arg(long)]
    pub no_wait: bool,
}

/// Waits between tries to deliver task notices when the model service fails:
/// quick retries, then a cool-down from 60 s doubling to 300 s.
const NOTICE_RETRY_S: [u64; 7] = [1, 2, 5, 60, 120, 240, 300];
/// How long stopped background work gets to wind down before exit.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Exit code for a run the user interrupted (128 + SIGINT), as shells expect.
const EXIT_INTERRUPTED: u8 = 130;

/// Runs the task and returns the process exit code.
pub async fn run(
    model: &ModelArgs,
    perms: &PermissionArgs,
    resume: &ResumeArgs,
    agent: &AgentArgs,
    args: ExecArgs,
) -> Result<ExitCode> {
    let runtime = setup::prepare(model, perms, agent)?;
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
    let finish = |sink: EventSink, printer: tokio::task::JoinHandle<()>| async move {
        drop(sink);
        let _ = printer.await;
    };

    let cancel = CancellationToken::new();
    // Ctrl+C, SIGTERM and SIGHUP stop the run; a second one leaves at once.
    let stop_signal = crate::signals::cancel_on_stop_signals(cancel.clone());
    let lines = stdin_is_terminal().then(StdinLines::start);
    let approvals: Arc<dyn ApprovalSource> = match &lines {
        Some(lines) => Arc::new(TerminalApprovals::new(lines.clone())),
        None => Arc::new(Headless),
    };
    let session = match sessions::open(
        &runtime,
        resume.resume.as_deref(),
        resume.accept_unknown,
        lines.as_ref(),
        &sink,
    )
    .await
    {
        Ok(s) => s,
        Err(e) => {
            finish(sink, printer).await;
            return Err(e);
        }
    };
    sink.emit(Event::SessionStarted {
        session_id: session.id.clone(),
        provider: runtime.client.config().provider.to_string(),
        model: runtime.client.config().model.clone(),
        cwd: runtime.cwd.display().to_string(),
    });
    for w in &runtime.warnings {
        sink.emit(Event::Warning { message: w.clone() });
    }

    let work = match runtime.background(&session.id, &sink) {
        Ok(w) => w,
        Err(e) => {
            finish(sink, printer).await;
            return Err(e);
        }
    };
    // After a resume, tasks that ended unannounced are announced now, once.
    work.note_logged_notices(&session.messages);
    work.requeue_unannounced("main");
    crate::signals::watch_external_stops(&work);
    let mut agent = match runtime.main_agent(
        sink.clone(),
        approvals,
        Some(session.log),
        Some(&session.id),
        Some(work.clone()),
    ) {
        Ok(a) => a,
        Err(e) => {
            finish(sink, printer).await;
            return Err(e);
        }
    };
    agent.restore(session.messages);
    crate::signals::background_on_sigusr1(agent.delegation());
    let mut outcome = agent.run_turn(args.prompt, cancel.clone()).await;

    // Background work this run started: wait for it, announcing each batch of
    // finished tasks in a new turn, unless told not to wait.
    let mut throttle = NoticeThrottle::default();
    while outcome.status == TurnStatus::Completed
        && !args.no_wait
        && (agent.active_tasks() > 0 || agent.has_notices())
    {
        if !agent.has_notices() {
            tokio::select! {
                _ = work.changed() => {}
                _ = cancel.cancelled() => break,
            }
            continue;
        }
        tokio::select! {
            _ = async {
                work.settle("main", NOTICE_SETTLE, NOTICE_SETTLE_MAX).await;
                throttle.wait().await;
            } => {}
            _ = cancel.cancelled() => break,
        }
        // The notices themselves join the turn's first request. A delivery
        // the model service fails is retried, then cools down.
        let mut retries = NOTICE_RETRY_S.iter();
        loop {
            outcome = agent.run_turn(String::new(), cancel.clone()).await;
            let failed = outcome.status == TurnStatus::Failed && outcome.model_error.is_some();
            let Some(wait) = retries.next().filter(|_| failed) else {
                break;
            };
            sink.emit(Event::Warning {
                message: format!(
                    "delivering task notices failed ({}); retrying in {wait} s",
                    outcome.error.clone().unwrap_or_default()
                ),
            });
            tokio::select! {
                _ = tokio::time::sleep(std::time::Duration::from_secs(*wait)) => {}
                _ = cancel.cancelled() => break,
            }
        }
    }
    if cancel.is_cancelled() {
        outcome.status = TurnStatus::Interrupted;
    }
    // Ctrl+C (or --no-wait) ends everything still running, recorded `cancelled`.
    if agent.active_tasks() > 0 {
        work.stop_all();
        work.wait_idle(STOP_GRACE).await;
    }
    // Every holder of the event sink must be gone for the printer to finish.
    drop(agent);
    drop(work);
    finish(sink, printer).await;

    if !json && !outcome.final_text.is_empty() {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", outcome.final_text.trim_end());
        let _ = out.flush();
    }
    Ok(match outcome.status {
        TurnStatus::Completed => ExitCode::SUCCESS,
        TurnStatus::Interrupted => {
            ExitCode::from(stop_signal.exit_code().unwrap_or(EXIT_INTERRUPTED))
        }
        TurnStatus::LimitReached | TurnStatus::Failed => ExitCode::from(1),
    })
}
