//! The prompt's popups and the todo pane drawn on ratatui's `TestBackend`,
//! compared with snapshot files (`snapshots/`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use cadre_core::protocol::Event;
use cadre_tui::app::{App, SessionInfo};
use cadre_tui::theme::Theme;
use cadre_tui::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde_json::json;

fn app() -> App {
    App::new(SessionInfo {
        model: "claude-sonnet-4-5".into(),
        permission_mode: cadre_core::protocol::PermissionMode::Default,
        cwd: "~/src/cadre".into(),
        git_branch: Some("main".into()),
        root: "/project".into(),
        ..SessionInfo::default()
    })
}

fn typed(app: &mut App, text: &str, now: Instant) {
    for c in text.chars() {
        app.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE), now);
    }
}

fn draw(app: &App, now: Instant) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal
        .draw(|f| view::render(f, app, now, &Theme { color: true }))
        .unwrap();
    terminal
}

#[test]
fn at_popup_over_the_prompt() {
    let now = Instant::now();
    let mut app = app();
    app.files_walked(
        [
            "Cargo.toml",
            "crates/",
            "crates/cadre-cli/src/main.rs",
            "crates/cadre-tui/src/",
            "crates/cadre-tui/src/app.rs",
            "crates/cadre-tui/src/main_loop.rs",
            "docs/maintenance.md",
            "src/",
            "src/main.rs",
            "src/domain.rs",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
        now,
    );
    typed(&mut app, "look at @ma", now);
    app.key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE), now);
    insta::assert_snapshot!(draw(&app, now).backend());
}

#[test]
fn slash_popup_lists_commands_with_what_they_do() {
    let now = Instant::now();
    let mut app = app();
    typed(&mut app, "/s", now);
    insta::assert_snapshot!(draw(&app, now).backend());
}

#[test]
fn todo_pane_with_each_status() {
    let now = Instant::now();
    let mut app = app();
    app.apply(
        &Event::ToolCallStarted {
            agent: "main".into(),
            call_id: "c1".into(),
            tool: "TodoWrite".into(),
            input: json!({"todos": [
                {"content": "Read the config parser", "status": "completed"},
                {"content": "Find where the context window is set", "status": "completed"},
                {"content": "Fix the off-by-one in the window check", "status": "in_progress",
                 "activeForm": "Fixing the off-by-one"},
                {"content": "Run the tests", "status": "pending"},
                {"content": "Write the changelog entry", "status": "pending"}
            ]}),
            summary: "5 todos".into(),
        },
        now,
    );
    app.key(
        KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL),
        now,
    );
    insta::assert_snapshot!(draw(&app, now).backend());
}
