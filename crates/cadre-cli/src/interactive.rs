//! `cadre` with no subcommand: a line-based session. Each line is a turn;
//! Ctrl+C interrupts the running turn, `/exit` or Ctrl+D leaves. Approval
//! questions are answered on the same terminal.

use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use cadre_core::agent::EventSink;
use cadre_core::background::{NOTICE_SETTLE, NOTICE_SETTLE_MAX, NoticeThrottle};
use cadre_core::permissions::{ApprovalSource, Headless};
use tokio_util::sync::CancellationToken;

use crate::approve::{StdinLines, TerminalApprovals, stdin_is_terminal};
use crate::render::HumanRenderer;
use crate::{AgentArgs, ModelArgs, PermissionArgs, ResumeArgs, sessions, setup};

fn prompt() {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "› ");
    let _ = err.flush();
}

/// Runs the session until the user leaves.
pub async fn run(
    model: &ModelArgs,
    perms: &PermissionArgs,
    resume: &ResumeArgs,
    agent_args: &AgentArgs,
) -> Result<ExitCode> {
    let runtime = setup::prepare(model, perms, agent_args)?;
    for w in &runtime.warnings {
        eprintln!("warning: {w}");
    }
    let lines = StdinLines::start();
    let (sink, mut rx) = EventSink::channel();
    let session = sessions::open(
        &runtime,
        resume.resume.as_deref(),
        resume.accept_unknown,
        Some(&lines),
        &sink,
    )
    .await?;
    eprintln!(
        "cadre · {} · {} · {} · session {}\n/exit or Ctrl+D to leave; Ctrl+C interrupts a turn",
        runtime.client.config().provider,
        runtime.client.config().model,
        runtime.cwd.display(),
        session.id,
    );
    let approvals: Arc<dyn ApprovalSource> = if stdin_is_terminal() {
        Arc::new(TerminalApprovals::new(lines.clone()))
    } else {
        Arc::new(Headless)
    };

    let current: Arc<Mutex<Option<CancellationToken>>> = Arc::new(Mutex::new(None));
    let on_signal = current.clone();
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            let running = on_signal.lock().ok().and_then(|g| g.clone());
            match running {
                Some(token) => token.cancel(),
                None => {
                    eprintln!("\n(use /exit or Ctrl+D to leave)");
                    prompt();
                }
            }
        }
    });
    // SIGTERM and SIGHUP end the session: the turn is interrupted and the
    // background work stopped as on leaving; a second one leaves at once.
    let quit = CancellationToken::new();
    let (on_quit, turn) = (quit.clone(), current.clone());
    let stop_signal = crate::signals::on_stop_signals(false, move |_| {
        on_quit.cancel();
        if let Some(token) = turn.lock().ok().and_then(|g| g.clone()) {
            token.cancel();
        }
    });

    let mut human = HumanRenderer::for_interactive();
    let mut throttle = NoticeThrottle::default();
    let work = runtime.background(&session.id, &sink)?;
    work.note_logged_notices(&session.messages);
    work.requeue_unannounced("main");
    crate::signals::watch_external_stops(&work);
    let mut agent = runtime.main_agent(
        sink,
        approvals,
        Some(session.log),
        Some(&session.id),
        Some(work.clone()),
    )?;
    agent.restore(session.messages);
    crate::signals::background_on_sigusr1(agent.delegation());
    loop {
        while let Ok(event) = rx.try_recv() {
            human.handle(&event);
        }
        prompt();
        // While idle, a finished background task starts a turn of its own.
        let next = tokio::select! {
            l = lines.next_for_prompt(prompt) => Some(l),
            _ = quit.cancelled() => break,
            _ = async {
                while !agent.has_notices() {
                    work.changed().await;
                }
            } => None,
        };
        let line = match next {
            Some(None) => {
                eprintln!();
                break;
            }
            Some(Some(line)) => line.trim().to_string(),
            None => {
                // Notice-started turns are throttled and batched as in `exec`.
                work.settle("main", NOTICE_SETTLE, NOTICE_SETTLE_MAX).await;
                throttle.wait().await;
                eprintln!("\n(background task finished)");
                String::new()
            }
        };
        if line == "/exit" || line == "/quit" || quit.is_cancelled() {
            break;
        }
        if line.is_empty() && !agent.has_notices() {
            continue;
        }
        let token = CancellationToken::new();
        if let Ok(mut g) = current.lock() {
            *g = Some(token.clone());
        }
        // Render while the turn runs, then drain, so the next prompt comes last.
        let turn = agent.run_turn(line, token);
        tokio::pin!(turn);
        loop {
            tokio::select! {
                Some(event) = rx.recv() => human.handle(&event),
                _ = &mut turn => break,
            }
        }
        while let Ok(event) = rx.try_recv() {
            human.handle(&event);
        }
        if let Ok(mut g) = current.lock() {
            *g = None;
        }
        if quit.is_cancelled() {
            break;
        }
    }
    // Leaving ends the background work this session started.
    if agent.active_tasks() > 0 {
        work.stop_all();
        work.wait_idle(std::time::Duration::from_secs(5)).await;
    }
    Ok(match stop_signal.exit_code() {
        Some(code) => ExitCode::from(code),
        None => ExitCode::SUCCESS,
    })
}
