//! `cadre` with no subcommand: a line-based session. Each line is a turn;
//! Ctrl+C interrupts the running turn, `/exit` or Ctrl+D leaves. Approval
//! questions are answered on the same terminal. The session (its turns,
//! notices, retries and shutdown) is the core's: this only reads lines,
//! renders events and turns keys and signals into operations.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use cadre_core::driver::{Lifetime, Phase, SessionHandle};
use cadre_core::protocol::{Event, EventSink, Op};

use crate::approve::{StdinLines, TerminalAnswers, stdin_is_terminal};
use crate::render::HumanRenderer;
use crate::{AgentArgs, ModelArgs, PermissionArgs, ResumeArgs, sessions, setup};

fn prompt() {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "› ");
    let _ = err.flush();
}

/// What the idle prompt got.
enum Idle {
    /// A line, or the end of input.
    Line(Option<String>),
    /// An event, or none when the session has ended.
    Event(Option<Event>),
}

/// True for the start (or end) of one of the main agent's turns.
fn main_turn(event: &Event) -> (bool, bool) {
    match event {
        Event::TurnStarted { agent } => (agent == "main", false),
        Event::TurnEnded { agent, .. } => (false, agent == "main"),
        _ => (false, false),
    }
}

/// Keeps count of the main agent's turns: one submitted starts (it was
/// owed), one ends.
fn follow_turns(event: &Event, running: &mut bool, submitted: &mut usize) {
    match main_turn(event) {
        (true, _) => {
            *running = true;
            *submitted = submitted.saturating_sub(1);
        }
        (_, true) => *running = false,
        _ => {}
    }
}

/// Ctrl+C interrupts what the session is running; at the idle prompt it
/// only says how to leave.
fn interrupt_on_ctrl_c(session: SessionHandle) {
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            match session.status().phase {
                Phase::Turn | Phase::RetryWait => {
                    session.submit(Op::Interrupt);
                }
                Phase::Ended => break,
                _ => {
                    eprintln!("\n(use /exit or Ctrl+D to leave)");
                    prompt();
                }
            }
        }
    });
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
    let mut open = sessions::open(
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
        open.id,
    );
    let (session, handle) = runtime
        .open_session(
            &open.id,
            open.log.clone(),
            std::mem::take(&mut open.messages),
            Vec::new(),
            sink,
            stdin_is_terminal(),
            Lifetime::UntilShutdown,
        )
        .await?;
    interrupt_on_ctrl_c(handle.clone());
    // SIGTERM and SIGHUP end the session: the turn is interrupted and the
    // background work stopped as on leaving; a second one leaves at once.
    let on_stop = handle.clone();
    let stop_signal = crate::signals::on_stop_signals(false, move |_| {
        on_stop.submit(Op::Shutdown);
    });
    crate::signals::background_on_sigusr1(handle.clone());
    let mut answers =
        stdin_is_terminal().then(|| TerminalAnswers::new(lines.clone(), handle.clone()));
    let session = tokio::spawn(session.run());

    let mut human = HumanRenderer::for_interactive();
    // Events that came while idle are shown when the next turn starts, so
    // they do not run into the prompt.
    let mut held: Vec<Event> = Vec::new();
    // Messages submitted whose turn has not started yet, and whether a turn
    // of the main agent is running: the prompt waits for both.
    let mut submitted = 0usize;
    let mut running = false;
    let mut ended = false;
    'session: loop {
        // What came in meanwhile goes first, so the prompt comes last.
        while let Ok(event) = rx.try_recv() {
            if let Some(answers) = &mut answers {
                answers.on_event(&event);
            }
            follow_turns(&event, &mut running, &mut submitted);
            human.handle(&event);
        }
        if !running && submitted == 0 {
            prompt();
            loop {
                let next = tokio::select! {
                    line = lines.next_for_prompt(prompt) => Idle::Line(line),
                    event = rx.recv() => Idle::Event(event),
                };
                match next {
                    Idle::Line(None) => {
                        eprintln!();
                        break 'session;
                    }
                    Idle::Line(Some(line)) => {
                        let line = line.trim().to_string();
                        if line == "/exit" || line == "/quit" {
                            break 'session;
                        }
                        if line.is_empty() {
                            prompt();
                            continue;
                        }
                        handle.submit(Op::UserMessage { text: line });
                        submitted += 1;
                        break;
                    }
                    Idle::Event(None) => {
                        ended = true;
                        break 'session;
                    }
                    Idle::Event(Some(event)) => {
                        if let Some(answers) = &mut answers {
                            answers.on_event(&event);
                        }
                        let (started, _) = main_turn(&event);
                        held.push(event);
                        if started {
                            // A turn of its own: finished background tasks' notices.
                            eprintln!("\n(background task finished)");
                            break;
                        }
                    }
                }
            }
            for event in held.drain(..) {
                follow_turns(&event, &mut running, &mut submitted);
                human.handle(&event);
            }
        }
        // Render while turns run, until none is running or owed.
        while running || submitted > 0 {
            let Some(event) = rx.recv().await else {
                ended = true;
                break 'session;
            };
            if let Some(answers) = &mut answers {
                answers.on_event(&event);
            }
            follow_turns(&event, &mut running, &mut submitted);
            human.handle(&event);
        }
    }
    // Leaving ends the background work this session started; what the
    // session reports while it winds down is still shown.
    if !ended {
        handle.submit(Op::Shutdown);
    }
    drop(answers);
    let mut session = session;
    loop {
        tokio::select! {
            _ = &mut session => break,
            Some(event) = rx.recv() => human.handle(&event),
        }
    }
    while let Ok(event) = rx.try_recv() {
        human.handle(&event);
    }
    drop(open);
    Ok(match stop_signal.exit_code() {
        Some(code) => ExitCode::from(code),
        None => ExitCode::SUCCESS,
    })
}
