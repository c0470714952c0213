//! `cadre` with no subcommand: a line-based session. Each line is a turn;
//! Ctrl+C interrupts the running turn, `/exit` or Ctrl+D leaves, `/compact`
//! summarises the conversation now, `/help` lists the commands. Approval
//! questions are answered on the same terminal. The session (its turns,
//! notices, retries and shutdown) is the core's: this only reads lines,
//! renders events and turns keys and signals into operations.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use cadre_core::driver::{Lifetime, Phase, SessionHandle};
use cadre_core::protocol::{CompactTrigger, Event, EventSink, Op};

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

/// What a line typed at the prompt asks for.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// Nothing (a blank line).
    Empty,
    /// A message for the model.
    Message(String),
    /// `/exit` or `/quit`.
    Exit,
    /// `/help`.
    Help,
    /// `/compact [focus]`.
    Compact(Option<String>),
    /// A `/word` that is no command.
    Unknown(String),
}

/// The commands, as `/help` lists them.
const HELP: &str = "\
/compact [focus]  summarise the conversation now to free context; the focus says what to keep above all
/help             this list
/exit, /quit      leave (Ctrl+D too); Ctrl+C interrupts a turn
A line starting with // is sent as a message starting with /.";

/// Reads a line typed at the prompt: a command when it starts with `/`
/// (`//` escapes one), otherwise a message.
fn parse_line(line: &str) -> Line {
    let line = line.trim();
    if line.is_empty() {
        return Line::Empty;
    }
    if let Some(escaped) = line.strip_prefix("//") {
        return Line::Message(format!("/{escaped}"));
    }
    let Some(command) = line.strip_prefix('/') else {
        return Line::Message(line.to_string());
    };
    let (name, rest) = command
        .split_once(char::is_whitespace)
        .unwrap_or((command, ""));
    match name {
        "exit" | "quit" => Line::Exit,
        "help" => Line::Help,
        "compact" => {
            let focus = rest.trim();
            Line::Compact((!focus.is_empty()).then(|| focus.to_string()))
        }
        _ => Line::Unknown(format!("/{name}")),
    }
}

/// What the prompt waits for before it comes back.
#[derive(Default)]
struct Owed {
    /// A turn of the main agent is running.
    running: bool,
    /// Messages submitted whose turn has not started yet.
    messages: usize,
    /// `/compact`s submitted that have not ended yet.
    compactions: usize,
}

impl Owed {
    /// True while the prompt should wait.
    fn busy(&self) -> bool {
        self.running || self.messages > 0 || self.compactions > 0
    }

    /// Keeps count: a submitted message's turn starts (it was owed), a turn
    /// ends, a submitted compaction ends (whether or not it succeeded).
    fn follow(&mut self, event: &Event) {
        match event {
            Event::TurnStarted { agent } if agent == MAIN => {
                self.running = true;
                self.messages = self.messages.saturating_sub(1);
            }
            Event::TurnEnded { agent, .. } if agent == MAIN => self.running = false,
            Event::CompactionEnded {
                agent,
                trigger: CompactTrigger::Manual,
                ..
            } if agent == MAIN => self.compactions = self.compactions.saturating_sub(1),
            _ => {}
        }
    }
}

/// The agent id of the top-level agent.
const MAIN: &str = "main";

/// True for the start of one of the main agent's turns.
fn main_turn_started(event: &Event) -> bool {
    matches!(event, Event::TurnStarted { agent } if agent == MAIN)
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
    let mut owed = Owed::default();
    let mut ended = false;
    'session: loop {
        // What came in meanwhile goes first, so the prompt comes last.
        while let Ok(event) = rx.try_recv() {
            if let Some(answers) = &mut answers {
                answers.on_event(&event);
            }
            owed.follow(&event);
            human.handle(&event);
        }
        if !owed.busy() {
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
                    Idle::Line(Some(line)) => match parse_line(&line) {
                        Line::Exit => break 'session,
                        Line::Empty => prompt(),
                        Line::Help => {
                            eprintln!("{HELP}");
                            prompt();
                        }
                        Line::Unknown(name) => {
                            eprintln!("unknown command {name} (try /help)");
                            prompt();
                        }
                        Line::Message(text) => {
                            handle.submit(Op::UserMessage { text });
                            owed.messages += 1;
                            break;
                        }
                        Line::Compact(focus) => {
                            handle.submit(Op::Compact { focus });
                            owed.compactions += 1;
                            break;
                        }
                    },
                    Idle::Event(None) => {
                        ended = true;
                        break 'session;
                    }
                    Idle::Event(Some(event)) => {
                        if let Some(answers) = &mut answers {
                            answers.on_event(&event);
                        }
                        let started = main_turn_started(&event);
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
                owed.follow(&event);
                human.handle(&event);
            }
        }
        // Render while turns or compactions run, until none is running or owed.
        while owed.busy() {
            let Some(event) = rx.recv().await else {
                ended = true;
                break 'session;
            };
            if let Some(answers) = &mut answers {
                answers.on_event(&event);
            }
            owed.follow(&event);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_starting_with_a_slash_are_commands() {
        assert_eq!(parse_line("  "), Line::Empty);
        assert_eq!(parse_line(" fix it "), Line::Message("fix it".into()));
        assert_eq!(parse_line("/exit"), Line::Exit);
        assert_eq!(parse_line("/quit "), Line::Exit);
        assert_eq!(parse_line("/help"), Line::Help);
        assert_eq!(parse_line("/compact"), Line::Compact(None));
        assert_eq!(parse_line("/compact   "), Line::Compact(None));
        assert_eq!(
            parse_line("/compact  keep the parser notes "),
            Line::Compact(Some("keep the parser notes".into()))
        );
        assert_eq!(
            parse_line("/compactly now"),
            Line::Unknown("/compactly".into())
        );
        assert_eq!(parse_line("/nonsense"), Line::Unknown("/nonsense".into()));
        assert_eq!(
            parse_line("/etc/hosts is empty"),
            Line::Unknown("/etc/hosts".into())
        );
        assert_eq!(
            parse_line("//etc/hosts is empty"),
            Line::Message("/etc/hosts is empty".into())
        );
    }

    fn compaction_ended(agent: &str, trigger: CompactTrigger) -> Event {
        Event::CompactionEnded {
            agent: agent.into(),
            trigger,
            tokens_before: 10,
            tokens_after: 5,
            kept_messages: 1,
            error: None,
            cost_usd: None,
        }
    }

    #[test]
    fn the_prompt_waits_for_a_submitted_compaction_to_end() {
        let mut owed = Owed {
            compactions: 1,
            ..Owed::default()
        };
        // Neither a child's nor an automatic one is the one asked for.
        owed.follow(&compaction_ended("a1", CompactTrigger::Manual));
        owed.follow(&compaction_ended(MAIN, CompactTrigger::Auto));
        assert!(owed.busy());
        owed.follow(&compaction_ended(MAIN, CompactTrigger::Manual));
        assert!(!owed.busy());
    }
}
