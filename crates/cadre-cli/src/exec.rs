//! `cadre exec`: one task, progress on stderr and the answer on stdout (or
//! every event as JSON lines with `--json`). Questions are asked on the
//! terminal when stdin is one; otherwise they are denied. The session (its
//! turns, notices, retries and shutdown) is the core's: this only renders
//! its events and turns signals and answers into operations.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Result;
use cadre_core::driver::Lifetime;
use cadre_core::protocol::{Event, EventSink, Op, TurnStatus};
use clap::Args;
use tokio::sync::mpsc;

use crate::approve::{StdinLines, TerminalAnswers, stdin_is_terminal};
use crate::render::HumanRenderer;
use crate::{AgentArgs, ModelArgs, PermissionArgs, ResumeArgs, session_choice, setup};

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

/// Exit code for a run the user interrupted (128 + SIGINT), as shells expect.
const EXIT_INTERRUPTED: u8 = 130;

/// What a headless run prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Progress on stderr, the answer on stdout (`exec`).
    Human,
    /// Every event as a JSON line (`exec --json`).
    Events,
    /// Claude Code's print mode (`-p`): the answer, or one `result` object.
    Print(crate::print::OutputFormat),
}

/// One headless run: the task, what to print, whether to wait for the
/// background work it starts.
pub struct RunOptions {
    /// The task (empty when the messages come on stdin as stream-json).
    pub prompt: String,
    /// What to print.
    pub output: Output,
    /// Exit when the task's own turn ends.
    pub no_wait: bool,
    /// Print mode's stream flags.
    pub stream: crate::print::StreamArgs,
}

/// Prints events as they come: JSON lines, progress for a person, or
/// (print mode) nothing but warnings until the result.
struct Printer {
    output: Output,
    human: HumanRenderer,
    summary: crate::print::ResultSummary,
    stream: crate::print::StreamRenderer,
}

impl Printer {
    fn print(&mut self, event: &Event) {
        self.summary.observe(event);
        match self.output {
            Output::Events => {
                if let Ok(line) = serde_json::to_string(event) {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{line}");
                    let _ = out.flush();
                }
            }
            Output::Human => self.human.handle(event),
            Output::Print(crate::print::OutputFormat::StreamJson) => {
                let lines = self.stream.lines(event);
                if !lines.is_empty() {
                    let mut out = std::io::stdout().lock();
                    for line in lines {
                        let _ = writeln!(out, "{line}");
                    }
                    let _ = out.flush();
                }
                if let Event::Warning { message } = event {
                    eprintln!(
                        "warning: {}",
                        cadre_tui::sanitize::visible_controls(message)
                    );
                }
            }
            // Stdout is the result's alone; what went wrong on the way is said on stderr.
            Output::Print(_) => {
                if let Event::Warning { message } = event {
                    eprintln!(
                        "warning: {}",
                        cadre_tui::sanitize::visible_controls(message)
                    );
                }
            }
        }
    }

    /// Prints one JSON line of the stream.
    fn line(&self, line: &serde_json::Value) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    /// Prints what was reported before a failure to start.
    fn drain(&mut self, rx: &mut mpsc::UnboundedReceiver<Event>) {
        while let Ok(event) = rx.try_recv() {
            self.print(&event);
        }
    }
}

/// Runs `cadre exec` and returns the process exit code.
pub async fn run(
    model: &ModelArgs,
    perms: &PermissionArgs,
    resume: &ResumeArgs,
    agent: &AgentArgs,
    args: ExecArgs,
) -> Result<ExitCode> {
    let options = RunOptions {
        prompt: args.prompt,
        output: if args.json {
            Output::Events
        } else {
            Output::Human
        },
        no_wait: args.no_wait,
        stream: Default::default(),
    };
    run_with(model, perms, resume, agent, options).await
}

/// Runs one headless task and returns the process exit code.
pub async fn run_with(
    model: &ModelArgs,
    perms: &PermissionArgs,
    resume: &ResumeArgs,
    agent: &AgentArgs,
    args: RunOptions,
) -> Result<ExitCode> {
    let runtime = setup::prepare(model, perms, agent)?;
    let choice = session_choice::choose(&runtime, resume)?;
    let (sink, mut rx) = EventSink::channel();
    let streaming = args.output == Output::Print(crate::print::OutputFormat::StreamJson);
    let stream_input = args.stream.input_format == Some(crate::print::InputFormat::StreamJson);
    let sink = if streaming {
        sink.with_transcripts()
    } else {
        sink
    };
    let mut printer = Printer {
        output: args.output,
        human: HumanRenderer::for_exec(),
        summary: Default::default(),
        stream: if streaming {
            crate::print::StreamRenderer::new(crate::print::init_line(&runtime), &args.stream)
        } else {
            Default::default()
        },
    };
    // Questions are asked on the terminal, or of the permission prompt tool.
    let prompt_tool = agent.run.permission_prompt_tool.clone();
    let lines = (stdin_is_terminal() && !stream_input).then(StdinLines::start);
    let mut open = match session_choice::open(
        &runtime,
        &choice,
        resume.accept_unknown,
        lines.as_ref(),
        &sink,
    )
    .await
    {
        Ok(s) => s,
        Err(e) => {
            drop(sink);
            printer.drain(&mut rx);
            return Err(e);
        }
    };
    let lifetime = if stream_input {
        Lifetime::UntilShutdown
    } else {
        Lifetime::AfterTask {
            wait_for_background: !args.no_wait,
        }
    };
    let opened = runtime
        .open_session(
            &open.id,
            open.log.clone(),
            std::mem::take(&mut open.messages),
            runtime.warnings.clone(),
            sink,
            lines.is_some() || prompt_tool.is_some(),
            lifetime,
        )
        .await;
    let (session, handle) = match opened {
        Ok(s) => s,
        Err(e) => {
            printer.drain(&mut rx);
            return Err(e.into());
        }
    };
    let mut prompt_answers = match prompt_tool.as_deref() {
        Some(name) => {
            match crate::prompt_tool::PromptToolAnswers::new(&runtime, name, handle.clone()) {
                Ok(a) => Some(a),
                Err(e) => {
                    handle.submit(Op::Shutdown);
                    drop(session);
                    return Err(e.into());
                }
            }
        }
        None => None,
    };
    // A new session under `--agent` starts with the definition's
    // `initialPrompt`, the task after it (Claude Code prepends it too).
    let first = runtime.initial_prompt.clone().filter(|_| !choice.resumes());
    let mut input = if stream_input {
        Some(crate::stream_input::StreamInput::start(
            first,
            args.stream.replay_user_messages,
        ))
    } else {
        let text = match first {
            Some(first) => format!("{first}\n\n{}", args.prompt),
            None => args.prompt,
        };
        handle.submit(Op::UserMessage { text });
        None
    };
    // Ctrl+C, SIGTERM and SIGHUP stop the run; a second one leaves at once.
    let stop_signal = crate::signals::shutdown_on_stop_signals(handle.clone());
    crate::signals::background_on_sigusr1(handle.clone());
    let mut answers = lines.map(|lines| TerminalAnswers::new(lines, handle.clone()));
    // The stream's own turns are driven from here; otherwise the session
    // ends by itself.
    let handle = input.is_some().then_some(handle);

    // The session runs first whenever it can: it has logged the task (and
    // sent its request) by the time the first events are printed.
    let session = session.run();
    tokio::pin!(session);
    let outcome = loop {
        tokio::select! {
            biased;
            outcome = &mut session => break outcome,
            Some(event) = rx.recv() => {
                printer.print(&event);
                if let Some(answers) = &mut answers {
                    answers.on_event(&event);
                }
                if let Some(prompt_answers) = &mut prompt_answers {
                    prompt_answers.on_event(&event);
                }
                if let (Some(input), Some(handle)) = (&mut input, &handle) {
                    let schema = runtime.shape.answer_schema.as_deref();
                    for line in input.on_event(&event, &mut printer.summary, schema) {
                        printer.line(&line);
                    }
                    if input.finished() {
                        handle.submit(Op::Shutdown);
                    }
                }
            }
            Some(read) = next_input(&mut input) => {
                if let (Some(input), Some(handle)) = (&mut input, &handle) {
                    for line in input.on_line(read, handle, &printer.stream) {
                        printer.line(&line);
                    }
                    if input.finished() {
                        handle.submit(Op::Shutdown);
                    }
                }
            }
        }
    };
    // Its senders are gone with it, but for work still winding down.
    while let Some(event) = rx.recv().await {
        printer.print(&event);
    }
    let session_id = open.id.clone();
    drop(open);
    if resume.no_session_persistence {
        // Nothing of the run is kept: its log, its children's, its tasks' output.
        let _ = cadre_core::session::remove_session(&runtime.home, &session_id);
    }
    if stream_input {
        // Each turn printed its own result.
        return Ok(match stop_signal.exit_code() {
            Some(code) => ExitCode::from(code),
            None => ExitCode::SUCCESS,
        });
    }

    let (status, final_text, error) = match outcome.last_turn {
        Some(turn) => (turn.status, turn.final_text, turn.error),
        None => (TurnStatus::Interrupted, String::new(), None),
    };
    let status = if outcome.shut_down {
        TurnStatus::Interrupted
    } else {
        status
    };
    let structured = crate::print::structured_output(&runtime, status, &final_text);
    let mut out = std::io::stdout().lock();
    match args.output {
        Output::Human if !final_text.is_empty() => {
            let answer = final_text.trim_end();
            // On a terminal the answer's controls are shown, never obeyed; into
            // a pipe or a file it goes byte for byte.
            let answer = if out.is_terminal() {
                cadre_tui::sanitize::visible_controls(answer)
            } else {
                std::borrow::Cow::Borrowed(answer)
            };
            let _ = writeln!(out, "{answer}");
        }
        Output::Human | Output::Events => {}
        // A run that failed prints its failure as the result, as Claude Code does.
        Output::Print(crate::print::OutputFormat::Text) => {
            let shown = match (status, &error) {
                (TurnStatus::Completed, _) => final_text.trim_end().to_string(),
                (_, Some(e)) => format!("Error: {e}"),
                (_, None) => "Error: the run did not complete".to_string(),
            };
            let shown = if out.is_terminal() {
                cadre_tui::sanitize::visible_controls(&shown).into_owned()
            } else {
                shown
            };
            if !shown.is_empty() {
                let _ = writeln!(out, "{shown}");
            }
        }
        Output::Print(
            crate::print::OutputFormat::Json | crate::print::OutputFormat::StreamJson,
        ) => {
            let result = printer
                .summary
                .result(status, &final_text, error.as_deref(), structured);
            let _ = writeln!(out, "{result}");
        }
    }
    let _ = out.flush();
    Ok(match status {
        TurnStatus::Completed => ExitCode::SUCCESS,
        TurnStatus::Interrupted => {
            ExitCode::from(stop_signal.exit_code().unwrap_or(EXIT_INTERRUPTED))
        }
        TurnStatus::LimitReached | TurnStatus::Failed => ExitCode::from(1),
    })
}

/// The next thing read on stdin in stream-json mode (never, otherwise).
async fn next_input(
    input: &mut Option<crate::stream_input::StreamInput>,
) -> Option<crate::stream_input::Read> {
    match input {
        Some(input) => input.next().await,
        None => std::future::pending().await,
    }
}
