//! The team in the full screen: the panel's teammate rows (idle ones hidden
//! after a while, many folded into a count) and the board Ctrl+T opens,
//! drawn on ratatui's `TestBackend` from session events and compared with
//! snapshot files (`snapshots/`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use cadre_core::model::Usage;
use cadre_core::protocol::{AgentId, BoardTaskState, Event, TeammateState};
use cadre_tui::app::{App, SessionInfo};
use cadre_tui::theme::Theme;
use cadre_tui::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn app() -> App {
    App::new(SessionInfo {
        model: "claude-sonnet-4-5".into(),
        permission_mode: cadre_core::protocol::PermissionMode::Default,
        cwd: "~/src/cadre".into(),
        git_branch: Some("main".into()),
        ..SessionInfo::default()
    })
}

fn draw(app: &App, now: Instant) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(90, 24)).unwrap();
    terminal
        .draw(|f| view::render(f, app, now, &Theme { color: false }))
        .unwrap();
    terminal
}

fn screen(terminal: &Terminal<TestBackend>) -> String {
    let buffer = terminal.backend().buffer();
    let width = usize::from(buffer.area.width);
    buffer
        .content
        .chunks(width)
        .map(|row| row.iter().map(|c| c.symbol()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The panel's rows as text (the transcript also names teammates as they join).
fn panel(app: &App, now: Instant) -> String {
    view::panel_lines(app, now, &Theme { color: false }, 90)
        .iter()
        .map(|l| l.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn teammate(name: &str, agent_type: &str, state: TeammateState) -> Event {
    Event::TeammateChanged {
        name: name.into(),
        agent_id: AgentId::new(format!("{name}-id")),
        agent_type: agent_type.into(),
        state,
        error: None,
    }
}

fn task(id: &str, subject: &str, status: BoardTaskState, owner: Option<&str>) -> Event {
    Event::BoardTaskChanged {
        task_id: id.into(),
        subject: subject.into(),
        status,
        owner: owner.map(str::to_string),
        blocked_by: if id == "3" {
            vec!["1".into()]
        } else {
            Vec::new()
        },
    }
}

/// A lead with two working teammates and one idle, a board of three tasks.
fn team_app(now: Instant) -> App {
    let mut app = app();
    app.apply(
        &teammate("alice", "researcher", TeammateState::Working),
        now,
    );
    app.apply(
        &teammate("bob", "general-purpose", TeammateState::Working),
        now,
    );
    app.apply(&teammate("carol", "reviewer", TeammateState::Idle), now);
    app.apply(
        &task(
            "1",
            "Map the schema",
            BoardTaskState::InProgress,
            Some("alice"),
        ),
        now,
    );
    app.apply(
        &task(
            "2",
            "Write the migration",
            BoardTaskState::Completed,
            Some("bob"),
        ),
        now,
    );
    app.apply(
        &task("3", "Review the API", BoardTaskState::Pending, None),
        now,
    );
    app.apply(
        &Event::Usage {
            agent: AgentId::new("alice-id"),
            usage: Usage {
                input_tokens: 12_000,
                output_tokens: 400,
                ..Usage::default()
            },
            cost_usd: None,
        },
        now,
    );
    app
}

#[test]
fn the_panel_lists_each_teammate_with_state_task_and_tokens() {
    let now = Instant::now();
    let app = team_app(now);
    let terminal = draw(&app, now);
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn an_idle_teammate_leaves_the_panel_after_30_seconds_and_selecting_shows_it() {
    let now = Instant::now();
    let mut app = team_app(now);
    assert!(panel(&app, now).contains("carol"));
    let later = now + Duration::from_secs(31);
    let text = panel(&app, later);
    assert!(!text.contains("carol"), "{text}");
    assert!(text.contains("1 idle agent"), "{text}");
    // Selecting the panel (↓ on an empty prompt) lists every teammate.
    app.key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE), later);
    let text = panel(&app, later);
    assert!(text.contains("carol"), "{text}");
    assert!(!text.contains("idle agent"), "{text}");
}

#[test]
fn more_than_three_idle_teammates_fold_into_one_row() {
    let now = Instant::now();
    let mut app = app();
    app.apply(
        &teammate("alice", "researcher", TeammateState::Working),
        now,
    );
    for name in ["bob", "carol", "dave", "erin"] {
        app.apply(&teammate(name, "general-purpose", TeammateState::Idle), now);
    }
    let terminal = draw(&app, now);
    insta::assert_snapshot!(terminal.backend());
    let text = panel(&app, now);
    assert!(text.contains("4 idle agents"), "{text}");
    assert!(!text.contains("dave"), "{text}");
}

#[test]
fn ctrl_t_shows_the_board_with_owners_and_blockers() {
    let now = Instant::now();
    let mut app = team_app(now);
    app.key(
        KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL),
        now,
    );
    let terminal = draw(&app, now);
    insta::assert_snapshot!(terminal.backend());
    let text = screen(&terminal);
    for expected in ["Map the schema", "alice", "blocked by #1", "completed"] {
        assert!(text.contains(expected), "{expected} missing:\n{text}");
    }
}
