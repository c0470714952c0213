//! `/resume`'s panes on the model alone: the picker's keys and what they ask
//! for, the question asked before resuming a session whose calls may have
//! run, a snapshot of the picker, and messages typed while the host runs a
//! command (they wait for it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use cadre_core::protocol::Op;
use cadre_tui::app::{App, SessionInfo};
use cadre_tui::commands::Command;
use cadre_tui::host::{HostReply, HostRequest};
use cadre_tui::pane::{PaneOut, Panes};
use cadre_tui::panes::sessions::{ResumeConfirm, SessionPicker, SessionRow};
use cadre_tui::theme::Theme;
use cadre_tui::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;

/// 2026-12-01 06:00 UTC.
const NOW_MS: u64 = 1_796_104_800_000;
const MINUTE: u64 = 60_000;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn row(id: &str, ago_ms: u64, prompt: &str, this_project: bool) -> SessionRow {
    SessionRow {
        id: id.into(),
        started_ms: NOW_MS - ago_ms,
        started: started(ago_ms),
        first_prompt: prompt.into(),
        tokens: 12_345,
        cost: (!this_project).then(|| "$0.0123".to_string()),
        cwd: if this_project {
            "/home/u/src/cadre".into()
        } else {
            "/home/u/src/other".into()
        },
        this_project,
    }
}

/// The start time as the host shows it, for the few ages used here.
fn started(ago_ms: u64) -> String {
    match ago_ms / MINUTE {
        2 => "2026-12-01 05:58",
        5 => "2026-12-01 05:55",
        1560 => "2026-11-30 04:00",
        4320 => "2026-11-28 06:00",
        _ => "2026-12-01 00:00",
    }
    .to_string()
}

fn picker() -> SessionPicker {
    SessionPicker::new(
        vec![
            row("s-old-here", 3 * 24 * 60 * MINUTE, "fix the parser", true),
            row("s-new-elsewhere", 2 * MINUTE, "write docs", false),
            row("s-new-here", 5 * MINUTE, "add a test\nfor the lexer", true),
            row(
                "01a2303a-90e1-74b0-ab1c-146fcce57b6a",
                26 * 60 * MINUTE,
                "a session with a real id and a first prompt far too long to fit in eighty columns",
                true,
            ),
        ],
        NOW_MS,
    )
}

fn ids(p: &SessionPicker) -> Vec<&str> {
    p.rows().iter().map(|r| r.id.as_str()).collect()
}

/// Gives `keys` to a stack holding only `pane`; what they asked for, and
/// whether the pane is still open.
fn press(pane: Box<dyn cadre_tui::pane::Pane>, keys: &[KeyCode]) -> (PaneOut, bool) {
    let mut panes = Panes::default();
    panes.open(pane);
    let mut out = PaneOut::default();
    for k in keys {
        panes.key(key(*k), &mut out);
    }
    (out, !panes.is_empty())
}

#[test]
fn this_projects_sessions_come_first_newest_first() {
    let p = picker();
    assert_eq!(
        ids(&p),
        [
            "s-new-here",
            "01a2303a-90e1-74b0-ab1c-146fcce57b6a",
            "s-old-here",
            "s-new-elsewhere"
        ]
    );
    assert_eq!(p.selected(), 0);
}

#[test]
fn arrows_move_within_the_list_and_enter_resumes_the_selected_session() {
    use KeyCode::{Down, Enter, Up};
    let (out, open) = press(Box::new(picker()), &[Down, Down, Down, Down, Up, Enter]);
    assert!(!open, "Enter closes the picker");
    assert_eq!(
        out.commands,
        [Command::Resume(Some("s-old-here".into()))],
        "Down past the end stays on the last, Up goes back one"
    );
    let (out, _) = press(Box::new(picker()), &[Up, Enter]);
    assert_eq!(out.commands, [Command::Resume(Some("s-new-here".into()))]);
    let (out, _) = press(Box::new(picker()), &[KeyCode::End, Enter]);
    assert_eq!(
        out.commands,
        [Command::Resume(Some("s-new-elsewhere".into()))]
    );
}

#[test]
fn esc_closes_the_picker_without_resuming() {
    let (out, open) = press(Box::new(picker()), &[KeyCode::Down, KeyCode::Esc]);
    assert!(!open);
    assert!(out.commands.is_empty() && out.ops.is_empty());
    let (out, open) = press(Box::new(picker()), &[KeyCode::Tab, KeyCode::Left]);
    assert!(open, "other keys leave it open");
    assert!(out.commands.is_empty());
}

#[test]
fn typing_searches_prompts_ids_and_directories() {
    let typed = |text: &str| text.chars().map(KeyCode::Char).collect::<Vec<_>>();
    let mut keys = typed("PARSER");
    keys.push(KeyCode::Enter);
    let (out, open) = press(Box::new(picker()), &keys);
    assert!(!open);
    assert_eq!(out.commands, [Command::Resume(Some("s-old-here".into()))]);
    // By directory; Backspace widens the search again.
    let mut keys = typed("otherx");
    keys.extend([KeyCode::Backspace, KeyCode::Enter]);
    let (out, _) = press(Box::new(picker()), &keys);
    assert_eq!(
        out.commands,
        [Command::Resume(Some("s-new-elsewhere".into()))]
    );
    // Nothing matches: Enter resumes nothing.
    let mut keys = typed("zzz");
    keys.push(KeyCode::Enter);
    let (out, open) = press(Box::new(picker()), &keys);
    assert!(open);
    assert!(out.commands.is_empty());
    let mut p = picker();
    let mut out = PaneOut::default();
    for c in "01a2303a".chars() {
        cadre_tui::pane::Pane::key(&mut p, key(KeyCode::Char(c)), &mut out);
    }
    assert_eq!(
        cadre_tui::pane::Pane::title(&p),
        "Resume a session (1 of 4)"
    );
    assert_eq!(ids(&p), ["01a2303a-90e1-74b0-ab1c-146fcce57b6a"]);
}

#[test]
fn an_empty_picker_resumes_nothing() {
    let empty = SessionPicker::new(Vec::new(), NOW_MS);
    let (out, open) = press(Box::new(empty), &[KeyCode::Down, KeyCode::Enter]);
    assert!(open);
    assert!(out.commands.is_empty());
}

#[test]
fn enter_in_the_picker_asks_the_host_to_resume() {
    let mut app = App::new(SessionInfo::default());
    app.host_reply(HostReply::Open(Box::new(picker())));
    let now = Instant::now();
    app.key(key(KeyCode::Down), now);
    app.key(key(KeyCode::Enter), now);
    assert!(app.panes.is_empty());
    assert_eq!(
        app.requests,
        [HostRequest::Command(Command::Resume(Some(
            "01a2303a-90e1-74b0-ab1c-146fcce57b6a".into()
        )))]
    );
    assert!(app.outbox.is_empty(), "nothing for the session itself");
}

#[test]
fn the_picker_at_80_columns() {
    let mut terminal = Terminal::new(TestBackend::new(80, 12)).unwrap();
    let p = picker();
    terminal
        .draw(|f| view::render_pane(f, &p, Rect::new(0, 0, 80, 12), &Theme { color: false }))
        .unwrap();
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn the_picker_scrolls_to_keep_the_selected_session_in_view() {
    let rows: Vec<SessionRow> = (0..10)
        .map(|i| row(&format!("s-{i}"), i * MINUTE, &format!("prompt {i}"), true))
        .collect();
    let mut p = SessionPicker::new(rows, NOW_MS);
    let mut out = PaneOut::default();
    for _ in 0..7 {
        cadre_tui::pane::Pane::key(&mut p, key(KeyCode::Down), &mut out);
    }
    let mut terminal = Terminal::new(TestBackend::new(60, 8)).unwrap();
    terminal
        .draw(|f| view::render_pane(f, &p, Rect::new(0, 0, 60, 8), &Theme { color: false }))
        .unwrap();
    let shown = terminal.backend().to_string();
    assert!(shown.contains("› prompt 7"), "{shown}");
    assert!(!shown.contains("prompt 0"), "{shown}");
}

#[test]
fn the_resume_question_answers_yes_on_y_and_no_on_n_esc_or_closing() {
    for (keys, answer) in [
        (&[KeyCode::Char('y')][..], Ok(true)),
        (&[KeyCode::Char('n')][..], Ok(false)),
        (&[KeyCode::Char('x'), KeyCode::Esc][..], Ok(false)),
    ] {
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        let pane = ResumeConfirm::new("s-1".into(), vec!["Bash make (call-1)".into()], tx);
        let (out, open) = press(Box::new(pane), keys);
        assert!(!open, "{keys:?}");
        assert!(out.commands.is_empty());
        assert_eq!(rx.try_recv().map_err(|_| ()), answer, "{keys:?}");
    }
    // Closed some other way (a session switch clears the panes): no answer, a no.
    let (tx, mut rx) = tokio::sync::oneshot::channel::<bool>();
    drop(ResumeConfirm::new("s-1".into(), Vec::new(), tx));
    assert!(rx.try_recv().is_err());
}

#[test]
fn the_resume_question_lists_the_calls() {
    let (tx, _rx) = tokio::sync::oneshot::channel();
    let pane = ResumeConfirm::new(
        "s-1".into(),
        vec!["Bash {\"command\":\"make\"} (call-1)".into()],
        tx,
    );
    let mut terminal = Terminal::new(TestBackend::new(80, 10)).unwrap();
    terminal
        .draw(|f| view::render_pane(f, &pane, Rect::new(0, 0, 80, 10), &Theme { color: false }))
        .unwrap();
    let shown = terminal.backend().to_string();
    assert!(shown.contains("Resume session s-1?"), "{shown}");
    assert!(
        shown.contains("Bash {\"command\":\"make\"} (call-1)"),
        "{shown}"
    );
    assert!(shown.contains("[y] yes"), "{shown}");
}

#[test]
fn messages_typed_while_the_host_runs_a_command_wait_for_it() {
    let mut app = App::new(SessionInfo::default());
    let now = Instant::now();
    app.command(Command::Clear);
    assert_eq!(app.host_pending, 1);
    for c in "hello".chars() {
        app.key(key(KeyCode::Char(c)), now);
    }
    app.key(key(KeyCode::Enter), now);
    assert!(app.outbox.is_empty(), "held while the switch runs");
    assert!(!app.busy());
    app.host_reply(HostReply::Switching);
    // The next session's screen shows the held message again.
    app.switch_session(SessionInfo::default());
    let transcript = format!("{:?}", app.transcript.entries());
    assert!(transcript.contains("hello"), "{transcript}");
    app.host_reply(HostReply::Done);
    assert_eq!(
        app.outbox,
        [Op::UserMessage {
            text: "hello".into()
        }]
    );
    assert!(app.busy());
    // With nothing pending a message goes at once.
    app.outbox.clear();
    for c in "again".chars() {
        app.key(key(KeyCode::Char(c)), now);
    }
    app.key(key(KeyCode::Enter), now);
    assert_eq!(app.outbox.len(), 1);
}
