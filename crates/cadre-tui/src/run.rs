//! The TUI's loop: keys, the session's events and signals update the model;
//! the model's operations go to the session; the screen is redrawn when
//! something changed, at most [`MAX_FPS`] times a second.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use cadre_core::driver::SessionHandle;
use cadre_core::protocol::{Event, Op};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self as term, Event as TermEvent};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::app::{App, SessionInfo};
use crate::host::{Host, HostReply};
use crate::status_line::StatusLine;
use crate::terminal::TerminalGuard;
use crate::theme::Theme;
use crate::view;

/// Redraws per second at most: streaming text and 16 children reporting
/// at once must not turn into a redraw per event.
pub const MAX_FPS: u32 = 60;

/// How often running clocks (elapsed times) are redrawn while work runs.
const TICK: Duration = Duration::from_millis(250);

/// How the TUI ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The user left (or the session ended) once the session had wound down.
    Left,
    /// The user asked twice: left without waiting for running work to stop.
    LeftAtOnce,
    /// A signal ended it: the exit status a shell expects (128 + its number).
    Signal(u8),
}

/// What can stop the TUI.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// The terminal could not be set up or drawn on.
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// Runs the TUI over an open session until the user leaves and the session
/// has wound down (its event receiver ends). The terminal is restored on
/// the way out, whichever way that is. `first_message` is sent at once, as
/// if typed (a definition's `initialPrompt` under `--agent`); `commands`
/// are the skills and custom commands the session runs for `/name`.
pub async fn run(
    mut handle: SessionHandle,
    mut events: mpsc::UnboundedReceiver<Event>,
    info: SessionInfo,
    history: Option<PathBuf>,
    host: Host,
    first_message: Option<String>,
    commands: Vec<cadre_core::protocol::CommandEntry>,
) -> Result<Exit, TuiError> {
    let Host {
        requests,
        mut replies,
    } = host;
    let mut host_gone = false;
    // Between `Switching` and `Switched` the old session's events end
    // without the TUI ending.
    let mut switching = false;
    let mut events_done = false;
    let theme = Theme::from_env();
    let _guard = TerminalGuard::enter_with_mouse(crate::terminal::mouse_wanted())?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    terminal.clear()?;
    let mut keys = read_terminal_events();
    let mut app = App::new(info)
        .with_history(
            history
                .as_deref()
                .map(crate::history::load)
                .unwrap_or_default(),
        )
        .with_commands(commands);
    watch_team(&handle, &mut app);
    let mut status_line = app.info.status_line.clone().map(StatusLine::new);
    let mut refresh = refresh_timer(status_line.as_ref());
    if let Some(message) = first_message {
        // A built-in command runs as if typed (`cadre --resume` opens its
        // picker); anything else goes to the session.
        match crate::commands::parse(&message) {
            crate::commands::Input::Command(command) => app.command(command),
            _ => app.send(message),
        }
        for op in app.outbox.drain(..) {
            handle.submit(op);
        }
    }
    let mut history_failed = false;
    let mut status = handle.clone();
    let mut shown_question: Option<u64> = None;
    let mut stops = StopSignals::new();
    let frame = Duration::from_secs(1) / MAX_FPS;
    let mut last_draw: Option<Instant> = None;
    let mut dirty = true;
    let mut leaving = false;
    let mut exit = Exit::Left;
    let (walk_done, mut walked) = mpsc::unbounded_channel::<crate::completion::FileList>();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let now = Instant::now();
        if dirty && last_draw.is_none_or(|t| now.duration_since(t) >= frame) {
            let size = terminal.size()?;
            let area = ratatui::layout::Rect::new(0, 0, size.width, size.height);
            if let Some(a) = view::areas(area, &app, now, &theme) {
                let height = a.transcript.height;
                app.page = usize::from(height.saturating_sub(1)).max(1);
                if app.scroll > 0 {
                    // Not past the top: PgDn then moves at once.
                    let total = app.transcript_rows(size.width, &theme);
                    app.scroll = app.scroll.min(total.saturating_sub(usize::from(height)));
                }
            }
            terminal.draw(|f| view::render(f, &app, now, &theme))?;
            let links = view::status_links(
                &app,
                ratatui::layout::Rect::new(0, 0, size.width, size.height),
            );
            if !links.is_empty() {
                write_links(&links)?;
            }
            last_draw = Some(now);
            dirty = false;
        }
        let next_frame = last_draw.map_or(now, |t| t + frame);
        let pane_live = app.panes.top().is_some_and(|p| p.live());
        let ticking = app.busy() || app.children.any_running() || pane_live;
        let status_due = status_line.as_ref().and_then(StatusLine::due);
        tokio::select! {
            key = keys.recv() => match key {
                Some(TermEvent::Key(k)) => {
                    app.key(k, Instant::now());
                    dirty = true;
                }
                Some(TermEvent::Paste(text)) => {
                    app.paste(&text);
                    dirty = true;
                }
                Some(TermEvent::Mouse(m)) => match m.kind {
                    term::MouseEventKind::ScrollUp => {
                        app.wheel(true);
                        dirty = true;
                    }
                    term::MouseEventKind::ScrollDown => {
                        app.wheel(false);
                        dirty = true;
                    }
                    _ => {}
                },
                Some(TermEvent::Resize(..)) => dirty = true,
                Some(_) => {}
                // The terminal is gone: leave as on a hang-up.
                None => app.exit = true,
            },
            reply = replies.recv(), if !host_gone => match reply {
                Some(HostReply::Switched(next)) => {
                    let next = *next;
                    handle = next.handle;
                    status = handle.clone();
                    events = next.events;
                    shown_question = None;
                    switching = false;
                    events_done = false;
                    app.switch_session(next.info);
                    watch_team(&handle, &mut app);
                    match (&mut status_line, app.info.status_line.clone()) {
                        (Some(runner), Some(setup)) => runner.switch(setup),
                        (_, setup) => {
                            status_line = setup.map(StatusLine::new);
                            refresh = refresh_timer(status_line.as_ref());
                        }
                    }
                    dirty = true;
                }
                Some(reply) => {
                    if matches!(reply, HostReply::Switching) {
                        switching = true;
                    }
                    app.host_reply(reply);
                    dirty = true;
                    // The session ended while a command ran, and none replaced it.
                    if events_done && !switching && app.host_pending == 0 {
                        break;
                    }
                }
                None => {
                    host_gone = true;
                    // Nothing more will be answered: held messages go now.
                    while app.host_pending > 0 {
                        app.host_done();
                    }
                    if events_done && !switching {
                        break;
                    }
                }
            },
            event = events.recv(), if !events_done => match event {
                Some(e) => {
                    let now = Instant::now();
                    // Scrolled up, the view stays on what it shows while rows arrive below.
                    let width = terminal.size()?.width;
                    let before = (app.scroll > 0).then(|| app.transcript_rows(width, &theme));
                    app.apply(&e, now);
                    if let Some(runner) = &mut status_line && runner.observe(&e) {
                        runner.trigger(now);
                    }
                    // A burst (16 children reporting) is one redraw.
                    while let Ok(e) = events.try_recv() {
                        app.apply(&e, now);
                        if let Some(runner) = &mut status_line && runner.observe(&e) {
                            runner.trigger(now);
                        }
                    }
                    if let Some(before) = before {
                        let after = app.transcript_rows(width, &theme);
                        app.scroll += after.saturating_sub(before);
                    }
                    dirty = true;
                }
                // The old session wound down for the next one: wait for it.
                // A command still running may be such a switch (its
                // `Switching` can be read after this): wait for its end too.
                None if switching || (app.host_pending > 0 && !leaving) => events_done = true,
                None => break,
            },
            changed = status.status_changed() => {
                if changed {
                    let open = status.status().question.map(|q| q.id);
                    if let Some(id) = shown_question.filter(|id| Some(*id) != open) {
                        app.withdraw(id);
                        dirty = true;
                    }
                    shown_question = open;
                }
            }
            code = stops.next() => {
                if leaving {
                    return Ok(Exit::Signal(code));
                }
                exit = Exit::Signal(code);
                app.exit = true;
            }
            _ = tick.tick(), if ticking => {
                if let Some(pane) = app.panes.top_mut() {
                    pane.refresh();
                }
                dirty = true;
            }
            () = wait_until(status_due) => {
                if let Some(runner) = &mut status_line {
                    runner.run_due(&app);
                }
            }
            Some((generation, rows)) = status_output(&mut status_line) => {
                // A failed or timed-out run leaves the last good output up.
                if let Some(runner) = &status_line
                    && runner.is_current(generation)
                    && rows.is_some()
                {
                    app.status_rows = rows;
                    dirty = true;
                }
            }
            _ = tick_of(&mut refresh) => {
                if let Some(runner) = &mut status_line {
                    runner.trigger(Instant::now());
                }
            }
            Some(files) = walked.recv() => {
                app.files_walked(files, Instant::now());
                dirty = true;
            }
            _ = tokio::time::sleep_until(next_frame.into()), if dirty => {}
        }
        // The `@` popup's file list: walked off the loop, filled in when ready.
        if let Some(root) = app.take_walk() {
            let tx = walk_done.clone();
            tokio::task::spawn_blocking(move || {
                let paths = crate::completion::walk(&root, crate::completion::MAX_WALK_ENTRIES);
                let _ = tx.send(crate::completion::FileList::from(paths));
            });
        }
        for op in app.outbox.drain(..) {
            handle.submit(op);
        }
        for request in std::mem::take(&mut app.requests) {
            if requests.send(request).is_err() {
                app.host_done();
                app.transcript.notice(
                    crate::transcript::Level::Warning,
                    "this command cannot be run here",
                );
            }
        }
        if let Some(path) = &history {
            for entry in std::mem::take(&mut app.history_added) {
                if let Err(e) = crate::history::append(path, &entry)
                    && !std::mem::replace(&mut history_failed, true)
                {
                    app.transcript.notice(
                        crate::transcript::Level::Warning,
                        format!("the prompt history cannot be saved ({e}); this session's stays in memory"),
                    );
                }
            }
        }
        if app.exit {
            app.exit = false;
            if leaving {
                // Asked twice: leave without waiting for the wind-down.
                return Ok(match exit {
                    Exit::Left => Exit::LeftAtOnce,
                    other => other,
                });
            }
            leaving = true;
            handle.submit(Op::Shutdown);
            app.hint = Some("leaving… (stopping what still runs)".into());
            dirty = true;
        }
    }
    Ok(exit)
}

/// The status line's timer (`refreshInterval`), if it has one.
fn refresh_timer(runner: Option<&StatusLine>) -> Option<tokio::time::Interval> {
    let every = runner.and_then(StatusLine::refresh)?;
    let mut timer = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    Some(timer)
}

/// Sleeps until `due`; never returns without one.
async fn wait_until(due: Option<Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// The status line's next result; never returns without a status line.
async fn status_output(
    runner: &mut Option<StatusLine>,
) -> Option<(u64, Option<Vec<crate::status_line::StatusRow>>)> {
    match runner {
        Some(runner) => runner.output.recv().await,
        None => std::future::pending().await,
    }
}

/// The timer's next tick; never returns without a timer.
async fn tick_of(timer: &mut Option<tokio::time::Interval>) {
    match timer {
        Some(timer) => {
            timer.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// Writes the user's status line's links over the text just drawn there, as
/// OSC 8 hyperlinks in the same colours (ratatui's cells cannot hold a
/// link). The cursor is saved and put back, so the screen's own is kept.
fn write_links(links: &[(u16, u16, String, String, ratatui::style::Style)]) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = String::from("\u{1b}7");
    for (x, y, text, link, style) in links {
        out.push_str(&format!(
            "\u{1b}[{};{}H\u{1b}[0{}m\u{1b}]8;;{link}\u{1b}\\{text}\u{1b}]8;;\u{1b}\\\u{1b}[0m",
            y + 1,
            x + 1,
            crate::status_line::sgr_params(*style)
        ));
    }
    out.push_str("\u{1b}8");
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()
}

/// Terminal events, read on a thread of their own (reading blocks).
fn read_terminal_events() -> mpsc::UnboundedReceiver<TermEvent> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        while let Ok(event) = term::read() {
            if tx.send(event).is_err() {
                break;
            }
        }
    });
    rx
}

/// SIGTERM, SIGHUP and SIGINT, as the exit status each stands for.
struct StopSignals {
    rx: mpsc::UnboundedReceiver<u8>,
}

impl StopSignals {
    fn new() -> StopSignals {
        let (tx, rx) = mpsc::unbounded_channel();
        for (kind, code) in [
            (SignalKind::terminate(), 143u8),
            (SignalKind::hangup(), 129),
            (SignalKind::interrupt(), 130),
        ] {
            // Without a handler the default action would end cadre with the
            // terminal still raw.
            let Ok(mut stream) = signal(kind) else {
                continue;
            };
            let tx = tx.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    if tx.send(code).is_err() {
                        break;
                    }
                }
            });
        }
        StopSignals { rx }
    }

    async fn next(&mut self) -> u8 {
        match self.rx.recv().await {
            Some(code) => code,
            None => std::future::pending().await,
        }
    }
}

/// Tells the app whether the session has a team, and fills its board from
/// the table (a resumed session's tasks are there before any event).
fn watch_team(handle: &SessionHandle, app: &mut App) {
    if !handle.has_team() {
        return;
    }
    app.team.enabled = true;
    for t in handle.teammates() {
        app.team.changed(
            &t.name,
            &t.agent_id,
            &t.agent_type,
            t.state,
            None,
            Instant::now(),
        );
    }
    let board = app.team.board.clone();
    let handle = handle.clone();
    tokio::spawn(async move {
        if let Ok(tasks) = handle.board().await {
            board.seed(&tasks);
        }
    });
}
