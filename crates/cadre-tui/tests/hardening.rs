//! Issue 23, item 17: what a user found in the full-screen UI. A finished
//! nested batch with a failed child is not marked done well; a batch moved
//! to the background sums what is known of it; `/tasks` shows a result's
//! newlines as spaces; single newlines in an answer stay line breaks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use cadre_core::model::Usage;
use cadre_core::protocol::{ChildStatus, ChildTag, Event, PermissionMode, TaskKind, TaskStatus};
use cadre_core::tasks::TaskRow;
use cadre_tui::app::{App, SessionInfo};
use cadre_tui::host::HostReply;
use cadre_tui::markdown::render_markdown;
use cadre_tui::panes::tasks::{Listing, TasksPane};
use cadre_tui::theme::Theme;
use cadre_tui::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::watch;

fn app() -> App {
    App::new(SessionInfo {
        model: "claude-sonnet-4-5".into(),
        permission_mode: cadre_core::protocol::PermissionMode::Default,
        cwd: "~/src/cadre".into(),
        git_branch: Some("main".into()),
        ..SessionInfo::default()
    })
}

fn tag(index: usize, total: usize, id: &str) -> ChildTag {
    ChildTag {
        index,
        total,
        agent_type: "Explore".into(),
        agent_id: id.into(),
    }
}

fn started(path: Vec<ChildTag>) -> Event {
    let here = path.last().unwrap().clone();
    Event::SubagentStarted {
        index: here.index,
        total: here.total,
        agent_id: here.agent_id,
        agent_type: here.agent_type,
        description: "look around".into(),
        model: "m".into(),
        mode: PermissionMode::Default,
        path,
        color: None,
    }
}

fn progress(id: &str) -> Event {
    Event::SubagentProgress {
        index: 1,
        total: 1,
        agent_type: "Explore".into(),
        agent_id: id.into(),
        tool: "Read".into(),
        outcome: cadre_core::protocol::ChildCallOutcome::Completed,
        summary: "a.txt".into(),
        path: vec![tag(1, 1, id)],
    }
}

fn ended(id: &str, status: ChildStatus) -> Event {
    Event::SubagentEnded {
        index: 1,
        total: 1,
        agent_id: id.into(),
        agent_type: "Explore".into(),
        status,
        requests: 1,
        tool_calls: 1,
        usage: Usage {
            input_tokens: 900,
            ..Usage::default()
        },
        duration_ms: 1_200,
        error: Some("failed: the model API failed".into()),
        cost_usd: None,
        compactions: 0,
        worktree: None,
    }
}

fn turn_started() -> Event {
    Event::TurnStarted {
        agent: "main".into(),
        notices: false,
    }
}

fn transcript_lines(app: &App) -> Vec<String> {
    app.transcript
        .entries()
        .iter()
        .flat_map(|e| e.rows(100, false, &Theme { color: false }).clone())
        .map(|l| l.to_string())
        .collect()
}

fn screen_text(terminal: &Terminal<TestBackend>) -> String {
    let buffer = terminal.backend().buffer();
    let area = buffer.area;
    (0..area.height)
        .map(|y| {
            (0..area.width)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_finished_nested_batch_with_a_failed_child_is_not_ticked() {
    let t0 = Instant::now();
    let mut app = app();
    app.apply(&turn_started(), t0);
    app.apply(&started(vec![tag(1, 1, "a1")]), t0);
    for (id, status) in [("b1", ChildStatus::Failed), ("c1", ChildStatus::Completed)] {
        app.apply(&started(vec![tag(1, 1, "a1"), tag(1, 1, id)]), t0);
        app.apply(&ended(id, status), t0);
    }
    let lines: Vec<String> = view::panel_lines(&app, t0, &Theme { color: false }, 100)
        .iter()
        .map(|l| l.to_string())
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l.trim_start() == "✗ 1 subagent: 1 failed · 1 tool call · 900 tokens · 1.2s"),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(
            |l| l.trim_start() == "✓ 1 subagent: 1 completed · 1 tool call · 900 tokens · 1.2s"
        ),
        "{lines:#?}"
    );
    let mut terminal = Terminal::new(TestBackend::new(100, 12)).unwrap();
    terminal
        .draw(|f| view::render(f, &app, t0, &Theme { color: true }))
        .unwrap();
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn a_batch_moved_to_the_background_keeps_its_calls_and_time() {
    let t0 = Instant::now();
    let mut app = app();
    app.apply(&turn_started(), t0);
    app.apply(&started(vec![tag(1, 1, "a1")]), t0);
    app.apply(&progress("a1"), t0 + Duration::from_secs(2));
    app.apply(&progress("a1"), t0 + Duration::from_secs(4));
    app.apply(
        &Event::SubagentBackgrounded {
            index: 1,
            total: 1,
            agent_id: "a1".into(),
            task_id: "t-00000000000a".into(),
        },
        t0 + Duration::from_millis(6_500),
    );
    // Its tokens are not known until it ends: none are claimed.
    assert_eq!(
        transcript_lines(&app),
        ["⎿ 1 subagent: 1 in the background · 2 tool calls · 6.5s"]
    );
}

fn row(result: &str) -> TaskRow {
    const NOW: u64 = 1_800_000_000_000;
    TaskRow {
        id: "t-00000000000c".into(),
        kind: TaskKind::Subagent,
        session_id: "s-1".into(),
        parent_agent: "main".into(),
        description: "write the notes".into(),
        agent_type: Some("general-purpose".into()),
        name: None,
        status: TaskStatus::Succeeded,
        background: true,
        created_ms: NOW - 300_000,
        started_ms: Some(NOW - 300_000),
        ended_ms: Some(NOW - 42_000),
        output_path: PathBuf::from("tasks").join("c").join("output.log"),
        result_summary: Some(result.into()),
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

#[test]
fn the_tasks_result_preview_shows_newlines_as_spaces() {
    let (_tx, rx) = watch::channel(Listing {
        rows: vec![row("Wrote the notes.\nThree files\r\nchanged.")],
        loaded: true,
        error: None,
    });
    let mut app = app();
    app.host_reply(HostReply::Open(Box::new(
        TasksPane::with_rows(rx, PathBuf::from("home")).at(1_800_000_000_000),
    )));
    let mut terminal = Terminal::new(TestBackend::new(120, 24)).unwrap();
    terminal
        .draw(|f| view::render(f, &app, Instant::now(), &Theme { color: false }))
        .unwrap();
    let text = screen_text(&terminal);
    assert!(!text.contains('�'), "{text}");
    assert!(
        text.contains("result: Wrote the notes. Three files changed."),
        "{text}"
    );
}

#[test]
fn single_newlines_in_an_answer_stay_line_breaks() {
    let lines: Vec<String> = render_markdown(
        "First line\nsecond line\n\nA new paragraph.\n- item one\n  still item one",
        &Theme { color: false },
    )
    .iter()
    .map(|l| l.to_string())
    .collect();
    assert_eq!(
        lines,
        [
            "First line",
            "second line",
            "",
            "A new paragraph.",
            "",
            "• item one",
            "  still item one",
        ]
    );
}
