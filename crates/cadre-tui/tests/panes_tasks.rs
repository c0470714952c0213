//! `/tasks`: the list drawn over the screen (a snapshot on ratatui's
//! `TestBackend`) and the status line's `Tasks: N running, M unread`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Instant;

use cadre_core::protocol::{Event, TaskKind, TaskStatus};
use cadre_core::tasks::TaskRow;
use cadre_tui::app::{App, SessionInfo};
use cadre_tui::commands::{Command, TasksCommand};
use cadre_tui::host::{HostReply, HostRequest};
use cadre_tui::panes::tasks::{Listing, TasksPane};
use cadre_tui::theme::Theme;
use cadre_tui::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tokio::sync::watch;

/// The clock the snapshot is drawn at (ms since the epoch).
const NOW: u64 = 1_800_000_000_000;

fn app() -> App {
    App::new(SessionInfo {
        model: "claude-sonnet-4-5".into(),
        permission_mode: cadre_core::protocol::PermissionMode::Default,
        cwd: "~/src/cadre".into(),
        git_branch: Some("main".into()),
        ..SessionInfo::default()
    })
}

/// A task row started `ran_s` seconds before [`NOW`], ended `ended_s` ago if given.
fn row(
    id: &str,
    kind: TaskKind,
    agent_type: Option<&str>,
    description: &str,
    status: TaskStatus,
    ran_s: u64,
    ended_s: Option<u64>,
) -> TaskRow {
    TaskRow {
        id: id.into(),
        kind,
        session_id: "s-1".into(),
        parent_agent: "main".into(),
        description: description.into(),
        agent_type: agent_type.map(str::to_string),
        name: None,
        status,
        background: true,
        created_ms: NOW - ran_s * 1000,
        started_ms: Some(NOW - ran_s * 1000),
        ended_ms: ended_s.map(|s| NOW - s * 1000),
        output_path: PathBuf::from("tasks").join(id).join("output.log"),
        result_summary: None,
        error: None,
        owner_pid: 1,
        owner_start: None,
        owner_boot: None,
        pgid: None,
        pgid_start: None,
        tool_calls: 4,
        tokens: 12_300,
        last_activity_ms: None,
        notified: false,
    }
}

fn key(app: &mut App, code: KeyCode) {
    app.key(KeyEvent::new(code, KeyModifiers::NONE), Instant::now());
}

fn task_started(id: &str) -> Event {
    Event::TaskStarted {
        task_id: id.into(),
        owner: "main".into(),
        kind: TaskKind::Subagent,
        description: format!("job {id}"),
        background: true,
    }
}

fn task_ended(id: &str) -> Event {
    Event::TaskEnded {
        task_id: id.into(),
        status: TaskStatus::Succeeded,
        description: format!("job {id}"),
    }
}

fn status_line(app: &App, width: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, 24)).unwrap();
    terminal
        .draw(|f| view::render(f, app, Instant::now(), &Theme { color: false }))
        .unwrap();
    let buffer = terminal.backend().buffer();
    (0..width)
        .map(|x| buffer[(x, 23)].symbol().to_string())
        .collect::<String>()
        .trim_end()
        .to_string()
}

#[test]
fn the_tasks_list() {
    let rows = vec![
        row(
            "t-00000000000a",
            TaskKind::Subagent,
            Some("Explore"),
            "find where the config is parsed",
            TaskStatus::Running,
            75,
            None,
        ),
        row(
            "t-00000000000b",
            TaskKind::Bash,
            None,
            "dev server",
            TaskStatus::Running,
            3_700,
            None,
        ),
        row(
            "t-00000000000c",
            TaskKind::Subagent,
            Some("general-purpose"),
            "write the migration notes for the new settings file",
            TaskStatus::Succeeded,
            300,
            Some(42),
        ),
        row(
            "t-00000000000d",
            TaskKind::Bash,
            None,
            "cargo test \u{1b}[2J",
            TaskStatus::Failed,
            20,
            Some(7),
        ),
    ];
    let (_tx, rx) = watch::channel(Listing {
        rows,
        loaded: true,
        error: None,
    });
    let mut app = app();
    for id in ["t-00000000000a", "t-00000000000b"] {
        app.apply(&task_started(id), Instant::now());
    }
    app.host_reply(HostReply::Open(Box::new(
        TasksPane::with_rows(rx, PathBuf::from("home")).at(NOW),
    )));
    key(&mut app, KeyCode::Down);
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal
        .draw(|f| view::render(f, &app, Instant::now(), &Theme { color: true }))
        .unwrap();
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn the_status_line_counts_running_and_unread_and_opening_tasks_reads_them() {
    let now = Instant::now();
    let mut app = app();
    assert!(!status_line(&app, 80).contains("Tasks:"));
    app.apply(&task_started("t-1"), now);
    app.apply(&task_started("t-2"), now);
    assert!(
        status_line(&app, 100).contains("Tasks: 2 running — /tasks"),
        "{}",
        status_line(&app, 100)
    );
    app.apply(&task_ended("t-1"), now);
    assert!(
        status_line(&app, 100).contains("Tasks: 1 running, 1 unread — /tasks"),
        "{}",
        status_line(&app, 100)
    );
    // A task that was not in the background is not counted.
    app.apply(&task_ended("t-9"), now);
    assert_eq!(app.unread.len(), 1);
    // `/tasks` reads them: it goes to the host, which opens the pane.
    app.command(Command::Tasks(TasksCommand::List));
    assert_eq!(
        app.requests,
        [HostRequest::Command(Command::Tasks(TasksCommand::List))]
    );
    let (_tx, rx) = watch::channel(Listing::default());
    app.host_reply(HostReply::Open(Box::new(TasksPane::with_rows(
        rx,
        PathBuf::from("home"),
    ))));
    assert!(status_line(&app, 100).contains("Tasks: 1 running — /tasks"));
    // What ends while the list is open is seen there.
    app.apply(&task_ended("t-2"), now);
    assert!(!status_line(&app, 100).contains("Tasks:"));
    key(&mut app, KeyCode::Esc);
    assert!(app.panes.is_empty());
    // Once it is closed, endings are unread again.
    app.apply(&task_started("t-3"), now);
    app.apply(&task_ended("t-3"), now);
    assert!(
        status_line(&app, 100).contains("Tasks: 1 unread — /tasks"),
        "{}",
        status_line(&app, 100)
    );
}

#[test]
fn a_narrow_status_line_drops_the_place_then_the_hint_and_stays_one_line() {
    let now = Instant::now();
    let mut app = app();
    app.apply(&task_started("t-1"), now);
    app.apply(&task_started("t-2"), now);
    app.apply(&task_ended("t-2"), now);
    let wide = status_line(&app, 100);
    assert!(wide.contains("~/src/cadre (main)"), "{wide}");
    let medium = status_line(&app, 70);
    assert!(
        medium.contains("Tasks: 1 running, 1 unread — /tasks") && !medium.contains("~/src"),
        "{medium}"
    );
    let narrow = status_line(&app, 60);
    assert!(narrow.ends_with("Tasks: 1 running, 1 unread"), "{narrow:?}");
    let tiny = status_line(&app, 40);
    assert!(tiny.ends_with('…'), "{tiny:?}");
    assert!(
        unicode_width::UnicodeWidthStr::width(tiny.as_str()) <= 40,
        "{tiny:?}"
    );
}
