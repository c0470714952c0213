//! `cadre` with no subcommand: a line-based session. Each line is a turn;
//! Ctrl+C interrupts the running turn, `/exit` or Ctrl+D leaves, and the
//! slash commands (see `commands`) are answered here, never sent to the
//! model; `/clear` and `/resume ID` end the session and go on in another one
//! in the same process. Approval questions are answered on the same terminal.
//! The session (its turns, notices, retries and shutdown) is the core's: this
//! only reads lines, renders events and turns keys and signals into operations.

use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use cadre_core::driver::{Lifetime, OpenedLog, Phase, SessionHandle};
use cadre_core::protocol::{CompactTrigger, Event, EventSink, Op, RewindAction};
use tokio::sync::mpsc::UnboundedReceiver;

use cadre_tui::sanitize::visible_controls;
use cadre_tui::team::{self, TeamInput};

use crate::approve::{StdinLines, TerminalAnswers, stdin_is_terminal};
use crate::commands::{self, Action, CommandContext, Input, SessionView};
use crate::render::HumanRenderer;
use crate::{AgentArgs, ModelArgs, PermissionArgs, ResumeArgs, sessions, setup};
use cadre_core::driver::SessionBuilder;

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

/// What the prompt waits for before it comes back.
#[derive(Default)]
struct Owed {
    /// A turn of the main agent is running.
    running: bool,
    /// Messages submitted whose turn has not started yet.
    messages: usize,
    /// `/compact`s submitted that have not ended yet.
    compactions: usize,
    /// `!command`s submitted that have not run yet.
    shells: usize,
    /// Listings of checkpoints asked for and not shown yet.
    lists: usize,
    /// Rewinds submitted that have not ended yet, by what they restore.
    rewinds: std::collections::VecDeque<RewindAction>,
}

impl Owed {
    /// True while the prompt should wait.
    fn busy(&self) -> bool {
        self.running
            || self.messages > 0
            || self.compactions > 0
            || self.shells > 0
            || self.lists > 0
            || !self.rewinds.is_empty()
    }

    /// Keeps count: a submitted message's turn starts (it was owed), a turn
    /// ends, a submitted compaction ends (whether or not it succeeded).
    fn follow(&mut self, event: &Event) {
        match event {
            Event::TurnStarted { agent, .. } if agent == MAIN => {
                self.running = true;
                self.messages = self.messages.saturating_sub(1);
            }
            Event::TurnEnded { agent, .. } if agent == MAIN => self.running = false,
            Event::CompactionEnded {
                agent,
                trigger: CompactTrigger::Manual,
                ..
            } if agent == MAIN => self.compactions = self.compactions.saturating_sub(1),
            Event::ShellRan { .. } => self.shells = self.shells.saturating_sub(1),
            Event::Checkpoints { .. } => self.lists = self.lists.saturating_sub(1),
            // A rewind ends with its last event: asking first, the files
            // restored (code only), the conversation gone back, or a warning.
            Event::RewindNeedsConfirmation { .. } | Event::Rewound { .. } => {
                self.rewinds.pop_front();
            }
            Event::CodeRestored { .. } if self.rewinds.front() == Some(&RewindAction::Code) => {
                self.rewinds.pop_front();
            }
            Event::Warning { message } if message.starts_with("cannot go back") => {
                self.rewinds.pop_front();
            }
            _ => {}
        }
    }
}

/// The agent id of the top-level agent.
use cadre_core::protocol::MAIN_AGENT as MAIN;

/// True for the start of one of the main agent's turns.
fn main_turn_started(event: &Event) -> bool {
    matches!(event, Event::TurnStarted { agent, .. } if agent == MAIN)
}

/// The session running now, for the signal handlers: none between sessions.
#[derive(Clone, Default)]
struct Current(Arc<Mutex<Option<SessionHandle>>>);

impl Current {
    fn get(&self) -> Option<SessionHandle> {
        self.0.lock().ok().and_then(|h| h.clone())
    }

    fn set(&self, handle: Option<SessionHandle>) {
        if let Ok(mut h) = self.0.lock() {
            *h = handle;
        }
    }
}

/// Ctrl+C interrupts what the session is running; at the idle prompt it
/// only says how to leave.
fn interrupt_on_ctrl_c(current: Current) {
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            let Some(session) = current.get() else {
                continue;
            };
            match session.status().phase {
                Phase::Turn | Phase::RetryWait => {
                    session.submit(Op::Interrupt);
                }
                Phase::Ended | Phase::Ending => {}
                _ => {
                    eprintln!("\n(use /exit or Ctrl+D to leave)");
                    prompt();
                }
            }
        }
    });
}

/// A session's log, opened, and the channel its events will come on.
struct Opened {
    /// The runtime to run it with, when not the one of the session before.
    runtime: Option<SessionBuilder>,
    log: OpenedLog,
    sink: EventSink,
    rx: UnboundedReceiver<Event>,
}

/// How a session was left.
enum Leave {
    /// Leave cadre.
    Exit,
    /// Go on in this session.
    Switch(Box<Opened>),
}

/// Shows events and keeps what the commands need of them.
struct Shown {
    human: HumanRenderer,
    view: SessionView,
}

impl Shown {
    fn handle(&mut self, event: &Event) {
        self.view.follow(event);
        self.human.handle(event);
    }
}

/// The line front end across its sessions.
struct Front<'a> {
    model: &'a ModelArgs,
    perms: &'a PermissionArgs,
    agents: &'a AgentArgs,
    runtime: SessionBuilder,
    lines: StdinLines,
    current: Current,
    /// The model `/model NAME` chose: this session's now, and the next ones'.
    next_model: Option<String>,
    /// The `--agent` definition's `initialPrompt`, sent as the first message
    /// of the session the user started (taken once; not on `--resume`).
    first_message: Option<String>,
}

/// Runs sessions until the user leaves.
pub async fn run(
    model: &ModelArgs,
    perms: &PermissionArgs,
    resume: &ResumeArgs,
    agent_args: &AgentArgs,
    prompt: Option<String>,
) -> Result<ExitCode> {
    setup::ask_trust_if_needed(perms)?;
    let runtime = setup::prepare(model, perms, agent_args)?;
    for w in &runtime.warnings {
        eprintln!("warning: {}", visible_controls(w));
    }
    let lines = StdinLines::start();
    let current = Current::default();
    interrupt_on_ctrl_c(current.clone());
    // SIGTERM and SIGHUP end the session: the turn is interrupted and the
    // background work stopped as on leaving; a second one leaves at once.
    let on_stop = current.clone();
    let stop_signal = crate::signals::on_stop_signals(false, move |_| {
        if let Some(session) = on_stop.get() {
            session.submit(Op::Shutdown);
        }
    });
    let on_usr1 = current.clone();
    crate::signals::on_sigusr1(move || {
        if let Some(session) = on_usr1.get() {
            session.submit(Op::BackgroundBatch);
        }
        true
    });
    let (sink, rx) = EventSink::channel();
    let choice = crate::session_choice::choose(&runtime, resume)?;
    let log = crate::session_choice::open(
        &runtime,
        &choice,
        resume.accept_unknown,
        Some(&lines),
        &sink,
    )
    .await?;
    // A prompt given on the command line is the first message, after a
    // new session's `initialPrompt` (as `exec` puts them).
    let initial = runtime.initial_prompt.clone().filter(|_| !choice.resumes());
    let first_message = match (initial, prompt) {
        (Some(first), Some(prompt)) => Some(format!("{first}\n\n{prompt}")),
        (first, prompt) => prompt.or(first),
    };
    let mut front = Front {
        model,
        perms,
        agents: agent_args,
        runtime,
        lines,
        current,
        next_model: None,
        first_message,
    };
    let mut next = Opened {
        runtime: None,
        log,
        sink,
        rx,
    };
    loop {
        match front.drive(next).await? {
            Leave::Switch(opened) if stop_signal.exit_code().is_none() => next = *opened,
            _ => break,
        }
    }
    Ok(match stop_signal.exit_code() {
        Some(code) => ExitCode::from(code),
        None => ExitCode::SUCCESS,
    })
}

impl Front<'_> {
    /// Opens the log of the next session: a new one, or `resume`'s; with the
    /// model `/model` chose, when it chose one.
    async fn open_next(&self, resume: Option<&str>) -> Result<Opened> {
        let runtime = match &self.next_model {
            Some(name) => {
                let model = ModelArgs {
                    model: Some(name.clone()),
                    ..self.model.clone()
                };
                Some(setup::prepare(&model, self.perms, self.agents)?)
            }
            None => None,
        };
        let (sink, rx) = EventSink::channel();
        let log = sessions::open(
            runtime.as_ref().unwrap_or(&self.runtime),
            resume,
            false,
            Some(&self.lines),
            &sink,
        )
        .await?;
        Ok(Opened {
            runtime,
            log,
            sink,
            rx,
        })
    }

    /// Runs one session until the user leaves it or it ends.
    async fn drive(&mut self, opened: Opened) -> Result<Leave> {
        let Opened {
            runtime,
            log: mut open,
            sink,
            mut rx,
        } = opened;
        if let Some(runtime) = runtime {
            self.runtime = runtime;
        }
        eprintln!(
            "cadre · {} · {} · {} · session {}\n/exit or Ctrl+D to leave; Ctrl+C interrupts a turn; /help lists the commands",
            self.runtime.client.config().provider,
            self.runtime.client.config().model,
            self.runtime.cwd.display(),
            open.id,
        );
        let (session, handle) = self
            .runtime
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
        self.current.set(Some(handle.clone()));
        let mut answers =
            stdin_is_terminal().then(|| TerminalAnswers::new(self.lines.clone(), handle.clone()));
        let mut session = tokio::spawn(session.run());

        let mut shown = Shown {
            human: HumanRenderer::for_interactive(),
            view: SessionView::default(),
        };
        // Events that came while idle are shown when the next turn starts, so
        // they do not run into the prompt.
        let mut held: Vec<Event> = Vec::new();
        let mut owed = Owed::default();
        if let Some(text) = self.first_message.take() {
            // Shown as if typed at the prompt.
            eprintln!("› {}", visible_controls(&text));
            handle.submit(Op::UserMessage { text });
            owed.messages += 1;
        }
        let mut ended = false;
        let mut leave = Leave::Exit;
        'session: loop {
            // What came in meanwhile goes first, so the prompt comes last.
            while let Ok(event) = rx.try_recv() {
                if let Some(answers) = &mut answers {
                    answers.on_event(&event);
                }
                owed.follow(&event);
                shown.handle(&event);
            }
            if !owed.busy() {
                prompt();
                loop {
                    let next = tokio::select! {
                        line = self.lines.next_for_prompt(prompt) => Idle::Line(line),
                        event = rx.recv() => Idle::Event(event),
                    };
                    match next {
                        Idle::Line(None) => {
                            eprintln!();
                            break 'session;
                        }
                        Idle::Line(Some(line))
                            if team_line(&handle, &line, &self.runtime.cwd).await =>
                        {
                            prompt();
                        }
                        Idle::Line(Some(line)) => match commands::parse(&line) {
                            Input::Empty => prompt(),
                            Input::Unknown(name) => {
                                let menu = self.runtime.skills.menu();
                                if commands::session_runs(&name, &menu) {
                                    handle.submit(Op::UserMessage {
                                        text: line.trim().to_string(),
                                    });
                                    owed.messages += 1;
                                    break;
                                }
                                eprintln!(
                                    "unknown command {} (try /help)",
                                    visible_controls(&name)
                                );
                                prompt();
                            }
                            Input::Usage(usage) => {
                                eprintln!("{}", visible_controls(&usage));
                                prompt();
                            }
                            Input::Message(text) => {
                                handle.submit(Op::UserMessage { text });
                                owed.messages += 1;
                                break;
                            }
                            Input::Shell(command) => {
                                handle.submit(Op::Shell { command });
                                owed.shells += 1;
                                break;
                            }
                            Input::Command(command) => {
                                let outcome = commands::execute(
                                    command,
                                    &CommandContext {
                                        runtime: &self.runtime,
                                        perms: self.perms,
                                        agents: self.agents,
                                        session: &handle,
                                        view: &shown.view,
                                        next_model: self.next_model.as_deref(),
                                        full_screen: false,
                                    },
                                )
                                .await;
                                if !outcome.text.is_empty() {
                                    // Command output quotes tasks' results
                                    // and definitions: shown, never obeyed.
                                    eprintln!("{}", visible_controls(&outcome.text));
                                }
                                match outcome.action {
                                    Action::None => prompt(),
                                    Action::Exit => break 'session,
                                    Action::Submit(op) => {
                                        // The prompt waits for what answers it.
                                        let waits = match &op {
                                            Op::Compact { .. } => {
                                                owed.compactions += 1;
                                                true
                                            }
                                            Op::ListCheckpoints => {
                                                owed.lists += 1;
                                                true
                                            }
                                            Op::Rewind { action, .. } => {
                                                owed.rewinds.push_back(*action);
                                                true
                                            }
                                            _ => false,
                                        };
                                        handle.submit(op);
                                        if waits {
                                            break;
                                        }
                                        prompt();
                                    }
                                    Action::Model { name, id } => {
                                        handle.submit(Op::SetModel { model: id });
                                        self.next_model = Some(name);
                                        prompt();
                                    }
                                    Action::NewSession => match self.open_next(None).await {
                                        Ok(next) => {
                                            leave = Leave::Switch(Box::new(next));
                                            break 'session;
                                        }
                                        Err(e) => {
                                            eprintln!("cannot start a new session: {e:#}");
                                            prompt();
                                        }
                                    },
                                    Action::Resume(id) => match self.open_next(Some(&id)).await {
                                        Ok(next) => {
                                            leave = Leave::Switch(Box::new(next));
                                            break 'session;
                                        }
                                        Err(e) => {
                                            eprintln!(
                                                "cannot resume {id}: {e:#}; still in session {}",
                                                handle.session_id()
                                            );
                                            prompt();
                                        }
                                    },
                                }
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
                    shown.handle(&event);
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
                shown.handle(&event);
            }
        }
        // Leaving ends the background work this session started; what the
        // session reports while it winds down is still shown.
        if !ended {
            handle.submit(Op::Shutdown);
        }
        drop(answers);
        loop {
            tokio::select! {
                _ = &mut session => break,
                Some(event) = rx.recv() => shown.handle(&event),
            }
        }
        while let Ok(event) = rx.try_recv() {
            shown.handle(&event);
        }
        self.current.set(None);
        // The session's lock goes with its log: it can be resumed from here on.
        drop(open);
        if ended {
            // It ended by itself (a stop signal): nothing goes on.
            return Ok(Leave::Exit);
        }
        Ok(leave)
    }
}

/// `/team` and `@name message` in a session with a team; true when the
/// line was one of them (answered here).
async fn team_line(handle: &SessionHandle, line: &str, cwd: &std::path::Path) -> bool {
    if !handle.has_team() {
        if line.trim() == "/team" {
            eprintln!("{}", team::NO_TEAM);
            return true;
        }
        return false;
    }
    let teammates = handle.teammates();
    let names: Vec<String> = teammates.iter().map(|t| t.name.clone()).collect();
    let is_path = |word: &str| cwd.join(word).exists();
    let Some(input) = team::parse_team_input(line, &names, is_path) else {
        return false;
    };
    match input {
        TeamInput::Show => {
            let board = match handle.board().await {
                Ok(tasks) => {
                    let shown = team::TeamBoard::default();
                    shown.seed(&tasks);
                    shown.entries()
                }
                Err(e) => {
                    eprintln!("cannot read the board: {e}");
                    Vec::new()
                }
            };
            let members: Vec<team::Member> = teammates
                .into_iter()
                .map(|t| team::Member {
                    name: t.name,
                    agent_id: t.agent_id,
                    agent_type: t.agent_type,
                    state: t.state,
                    error: None,
                    tokens: None,
                    idle_since: None,
                })
                .collect();
            // Names and subjects are the agents' words: shown, never obeyed.
            eprintln!("{}", visible_controls(&team::describe(&members, &board)));
        }
        TeamInput::Message { name, text } => {
            handle.submit(Op::MessageTeammate {
                name: name.clone(),
                text,
            });
            eprintln!("(sent to {})", visible_controls(&name));
        }
        TeamInput::UnknownName(name) => {
            eprintln!(
                "{}",
                visible_controls(&team::unknown_name_error(&name, &names))
            );
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

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
