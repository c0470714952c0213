//! The screen drawn on ratatui's `TestBackend` from a model built out of
//! session events, compared with snapshot files (`snapshots/`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use cadre_core::model::Usage;
use cadre_core::protocol::{ApprovalQuestion, ChildStatus, Event, PermissionMode, TurnStatus};
use cadre_tui::app::{App, SessionInfo};
use cadre_tui::children::{Child, ChildState};
use cadre_tui::theme::Theme;
use cadre_tui::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

fn app() -> App {
    App::new(SessionInfo {
        model: "claude-sonnet-4-5".into(),
        permission_mode: cadre_core::protocol::PermissionMode::Default,
        cwd: "~/src/cadre".into(),
        git_branch: Some("main".into()),
        ..SessionInfo::default()
    })
}

fn draw(app: &App, width: u16, height: u16, now: Instant) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|f| view::render(f, app, now, &Theme { color: true }))
        .unwrap();
    terminal
}

fn started(index: usize, total: usize, id: &str, agent_type: &str, description: &str) -> Event {
    Event::SubagentStarted {
        index,
        total,
        agent_id: id.into(),
        agent_type: agent_type.into(),
        description: description.into(),
        model: "m".into(),
        mode: PermissionMode::Default,
        path: Vec::new(),
        color: None,
    }
}

fn progress(id: &str, tool: &str) -> Event {
    Event::SubagentProgress {
        index: 1,
        total: 1,
        agent_type: "Explore".into(),
        agent_id: id.into(),
        tool: tool.into(),
        outcome: cadre_core::protocol::ChildCallOutcome::Completed,
        summary: String::new(),
        path: Vec::new(),
    }
}

fn ended(id: &str, status: ChildStatus, tool_calls: u32, tokens: u64, ms: u64) -> Event {
    Event::SubagentEnded {
        index: 1,
        total: 1,
        agent_id: id.into(),
        agent_type: "Explore".into(),
        status,
        requests: 2,
        tool_calls,
        usage: Usage {
            input_tokens: tokens,
            ..Usage::default()
        },
        duration_ms: ms,
        error: None,
        cost_usd: None,
        compactions: 0,
        worktree: None,
    }
}

fn main_call(
    app: &mut App,
    now: Instant,
    id: &str,
    tool: &str,
    input: serde_json::Value,
    summary: &str,
) {
    app.apply(
        &Event::ToolCallStarted {
            agent: "main".into(),
            call_id: id.into(),
            tool: tool.into(),
            input,
            summary: summary.into(),
        },
        now,
    );
}

fn main_call_ended(app: &mut App, now: Instant, id: &str, tool: &str, outcome: &str) {
    app.apply(
        &Event::ToolCallEnded {
            agent: "main".into(),
            call_id: id.into(),
            tool: tool.into(),
            summary: String::new(),
            is_error: false,
            outcome: outcome.into(),
            output_bytes: 10,
            duration_ms: 5,
        },
        now,
    );
}

#[test]
fn subagent_panel_with_a_nested_tree() {
    let t0 = Instant::now();
    let mut app = app();
    app.apply(
        &Event::TurnStarted {
            agent: "main".into(),
            notices: false,
        },
        t0,
    );
    app.apply(
        &started(1, 3, "a1", "Explore", "find the config parser"),
        t0,
    );
    app.apply(&started(2, 3, "a2", "Explore", "list the tests"), t0);
    app.apply(
        &started(3, 3, "a3", "general-purpose", "fix the parser"),
        t0,
    );
    app.apply(&progress("a1", "Grep"), t0 + Duration::from_secs(1));
    app.apply(&progress("a1", "Read"), t0 + Duration::from_secs(2));
    app.apply(&ended("a2", ChildStatus::Completed, 4, 12_300, 3_100), t0);
    // Two grandchildren under a3: the events do not carry the parent yet,
    // so the model is told directly, as it will be from the nesting path.
    for (i, (id, d)) in [("b1", "read the grammar"), ("b2", "read the lexer")]
        .into_iter()
        .enumerate()
    {
        app.children.start(
            Child {
                agent_id: id.into(),
                agent_type: "Explore".into(),
                color: None,
                description: d.into(),
                index: i + 1,
                total: 2,
                state: ChildState::Running,
                tool_calls: 0,
                tokens: None,
                started: t0 + Duration::from_secs(1),
                ran: None,
                last_activity: None,
            },
            Some("a3".into()),
        );
    }
    app.apply(&progress("b2", "Read"), t0 + Duration::from_secs(2));
    // A finished nested batch folds into one line.
    app.children.start(
        Child {
            agent_id: "c1".into(),
            agent_type: "Explore".into(),
            color: None,
            description: "done already".into(),
            index: 1,
            total: 1,
            state: ChildState::Running,
            tool_calls: 0,
            tokens: None,
            started: t0,
            ran: None,
            last_activity: None,
        },
        Some("a1".into()),
    );
    app.apply(&ended("c1", ChildStatus::Failed, 1, 900, 1_200), t0);
    let terminal = draw(&app, 100, 24, t0 + Duration::from_millis(4_500));
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn a_finished_batch_folds_into_one_summary_line() {
    let t0 = Instant::now();
    let mut app = app();
    app.apply(
        &Event::TurnStarted {
            agent: "main".into(),
            notices: false,
        },
        t0,
    );
    for i in 1..=3 {
        app.apply(&started(i, 3, &format!("a{i}"), "Explore", "look"), t0);
    }
    assert_eq!(
        view::panel_lines(&app, t0, &Theme { color: false }, 80).len(),
        3
    );
    app.apply(&ended("a1", ChildStatus::Completed, 2, 1000, 1000), t0);
    app.apply(&ended("a2", ChildStatus::Cancelled, 0, 0, 500), t0);
    app.apply(&ended("a3", ChildStatus::Completed, 1, 500, 2500), t0);
    let lines: Vec<String> = app
        .transcript
        .entries()
        .iter()
        .flat_map(|e| e.rows(80, false, &Theme { color: false }).clone())
        .map(|l| l.to_string())
        .collect();
    assert_eq!(
        lines,
        ["⎿ 3 subagents: 2 completed, 1 cancelled · 3 tool calls · 1.5k tokens · 2.5s"]
    );
    // Nothing runs: the panel is gone once the turn ends.
    app.apply(
        &Event::TurnEnded {
            agent: "main".into(),
            status: TurnStatus::Completed,
            final_text: String::new(),
            error: None,
            requests: 1,
            tool_calls: 3,
            usage: Usage::default(),
            cost_usd: None,
        },
        t0,
    );
    assert!(view::panel_lines(&app, t0, &Theme { color: false }, 80).is_empty());
}

#[test]
fn approval_dialog_for_a_child() {
    let t0 = Instant::now();
    let mut app = app();
    app.apply(
        &Event::TurnStarted {
            agent: "main".into(),
            notices: false,
        },
        t0,
    );
    app.apply(
        &started(2, 3, "a2", "Explore", "find the config parser"),
        t0,
    );
    let question = |cmd: &str| ApprovalQuestion {
        agent: "a2".into(),
        label: Some("Subagent: 2/3 Explore: \"find the config parser\"".into()),
        tool: "Bash".into(),
        call_id: None,
        input: cmd.into(),
        reason: "Bash needs approval in default mode".into(),
        sandbox: Some("sandbox: writes limited to the project; network off".into()),
        session_rule: "Bash(cargo test:*)".into(),
    };
    app.apply(
        &Event::ApprovalRequested {
            question: question("cargo test -p cadre-core \u{1b}[31m--lib\nsecond line"),
            id: 7,
        },
        t0,
    );
    app.apply(
        &Event::ApprovalRequested {
            question: question("ls"),
            id: 8,
        },
        t0,
    );
    // Drawn once the dialog's keys are live (its choices show).
    let terminal = draw(&app, 80, 24, t0 + cadre_tui::app::DIALOG_GRACE);
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn edit_and_write_calls_show_their_diffs() {
    let t0 = Instant::now();
    let mut app = app();
    main_call(
        &mut app,
        t0,
        "c1",
        "Edit",
        json!({"file_path": "src/config.rs", "old_string": "let window = 4096;\nlet cap = 64;\n", "new_string": "let window = 200_000;\nlet cap = 64;\n"}),
        "src/config.rs",
    );
    main_call_ended(&mut app, t0, "c1", "Edit", "edited src/config.rs");
    let content: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    main_call(
        &mut app,
        t0,
        "c2",
        "Write",
        json!({"file_path": "notes.md", "content": content}),
        "notes.md",
    );
    main_call_ended(&mut app, t0, "c2", "Write", "wrote 30 lines");
    let terminal = draw(&app, 80, 40, t0);
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn layout_80x24() {
    let t0 = Instant::now();
    let mut app = app();
    app.prompt.insert("and now the tests\nplease");
    app.apply(
        &Event::SessionStarted {
            session_id: "s".into(),
            provider: cadre_core::model::Provider::Anthropic,
            model: "claude-sonnet-4-5".into(),
            cwd: "/x".into(),
        },
        t0,
    );
    app.transcript.push(cadre_tui::transcript::EntryKind::User(
        "where is the config parsed?".into(),
    ));
    app.apply(
        &Event::TurnStarted {
            agent: "main".into(),
            notices: false,
        },
        t0,
    );
    for (text, id, tool, summary) in [
        ("Let me look.", "c1", "Grep", "\"parse_config\" in crates/"),
        ("", "c2", "Read", "crates/cadre-core/src/config.rs"),
        ("", "c3", "Bash", "cargo test -p cadre-core config"),
    ] {
        if !text.is_empty() {
            app.apply(
                &Event::TextDelta {
                    agent: "main".into(),
                    text: text.into(),
                },
                t0,
            );
        }
        main_call(&mut app, t0, id, tool, json!({}), summary);
        main_call_ended(&mut app, t0, id, tool, "ok");
    }
    app.apply(
        &Event::TextDelta {
            agent: "main".into(),
            text: "## Found it\n\nThe config is parsed in `config.rs`:\n\n1. `load()` reads the file\n2. `merge()` applies the flags\n\nA very long line that has to wrap because it is longer than the eighty columns of this terminal.".into(),
        },
        t0,
    );
    app.apply(
        &Event::ContextUsage {
            agent: "main".into(),
            tokens: 122_000,
            window: 200_000,
            percent: 61,
            estimated: false,
        },
        t0,
    );
    app.apply(
        &Event::Usage {
            agent: "main".into(),
            usage: Usage {
                input_tokens: 12_000,
                output_tokens: 345,
                ..Usage::default()
            },
            cost_usd: Some(0.0123),
        },
        t0,
    );
    app.apply(
        &Event::TaskStarted {
            task_id: "t1".into(),
            owner: "main".into(),
            kind: cadre_core::protocol::TaskKind::Bash,
            description: "dev server".into(),
            background: true,
        },
        t0,
    );
    app.apply(
        &Event::TurnEnded {
            agent: "main".into(),
            status: TurnStatus::Completed,
            final_text: String::new(),
            error: None,
            requests: 2,
            tool_calls: 3,
            usage: Usage::default(),
            cost_usd: Some(0.0123),
        },
        t0,
    );
    let terminal = draw(&app, 80, 24, t0);
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn a_terminal_below_40x10_gets_a_one_line_notice() {
    let t0 = Instant::now();
    let mut app = app();
    app.transcript
        .push(cadre_tui::transcript::EntryKind::User("hello".into()));
    let terminal = draw(&app, 39, 10, t0);
    insta::assert_snapshot!(terminal.backend());
    let terminal = draw(&app, 60, 9, t0);
    let first: String = (0..60)
        .map(|x| terminal.backend().buffer()[(x, 0)].symbol().to_string())
        .collect();
    assert!(first.starts_with("terminal too small"), "{first}");
}

#[test]
fn escapes_and_huge_lines_from_the_model_stay_inside_the_layout() {
    let t0 = Instant::now();
    let mut app = app();
    let nasty = format!(
        "\u{1b}[2J\u{1b}]0;pwned\u{7}start {} end\r\n\u{0}\u{8}",
        "y".repeat(100_000)
    );
    app.apply(
        &Event::TextDelta {
            agent: "main".into(),
            text: nasty,
        },
        t0,
    );
    let terminal = draw(&app, 80, 24, t0);
    let buffer = terminal.backend().buffer();
    for cell in buffer.content() {
        assert!(
            !cell.symbol().chars().any(|c| c.is_control()),
            "a control character reached the screen: {:?}",
            cell.symbol()
        );
    }
    // The status line is still where it belongs.
    let last: String = (0..80)
        .map(|x| buffer[(x, 23)].symbol().to_string())
        .collect();
    assert!(last.contains("claude-sonnet-4-5"), "{last}");
}

#[test]
fn an_edit_question_shows_the_diff_it_would_make() {
    let t0 = Instant::now();
    let mut app = app();
    app.apply(
        &Event::ApprovalRequested {
            question: ApprovalQuestion {
                agent: "main".into(),
                label: None,
                tool: "Edit".into(),
                call_id: None,
                input: serde_json::to_string_pretty(&json!({
                    "file_path": "src/config.rs",
                    "old_string": "let window = 4096;\n",
                    "new_string": "let window = 200_000;\n"
                }))
                .unwrap(),
                reason: "Edit needs approval in default mode".into(),
                sandbox: None,
                session_rule: "Edit(src/**)".into(),
            },
            id: 1,
        },
        t0,
    );
    let terminal = draw(&app, 80, 24, t0 + cadre_tui::app::DIALOG_GRACE);
    insta::assert_snapshot!(terminal.backend());
}

/// The foreground colour of the first cell of `word` on the screen.
fn fg_of(terminal: &Terminal<TestBackend>, word: &str) -> ratatui::style::Color {
    let buffer = terminal.backend().buffer();
    let area = buffer.area;
    for y in 0..area.height {
        let row: String = (0..area.width)
            .map(|x| buffer[(x, y)].symbol().to_string())
            .collect();
        if let Some(at) = row.find(word) {
            // Cells are one symbol each here (ASCII rows up to the word).
            let x = row[..at].chars().count() as u16;
            return buffer[(x, y)].fg;
        }
    }
    panic!("{word} is not on the screen");
}

#[test]
fn a_definitions_color_wins_over_the_hashed_one_in_the_panel() {
    use ratatui::style::Color;
    let t0 = Instant::now();
    let mut app = app();
    app.apply(
        &Event::TurnStarted {
            agent: "main".into(),
            notices: false,
        },
        t0,
    );
    let colored = |index, id: &str, agent_type: &str, color: Option<&str>| Event::SubagentStarted {
        index,
        total: 3,
        agent_id: id.into(),
        agent_type: agent_type.into(),
        description: format!("{agent_type} work"),
        model: "m".into(),
        mode: PermissionMode::Default,
        path: Vec::new(),
        color: color.map(str::to_string),
    };
    app.apply(&colored(1, "a1", "reviewer", Some("red")), t0);
    app.apply(&colored(2, "a2", "painter", Some("orange")), t0);
    // Not one of the eight: the hashed colour, as with none.
    app.apply(&colored(3, "a3", "scout", Some("teal")), t0);
    let terminal = draw(&app, 80, 20, t0);
    assert_eq!(fg_of(&terminal, "reviewer"), Color::Red);
    assert_eq!(fg_of(&terminal, "painter"), Color::Indexed(208));
    assert_eq!(
        fg_of(&terminal, "scout"),
        Theme { color: true }.agent_type("scout").fg.unwrap()
    );
    // Without colours (NO_COLOR) the type is plain.
    let mut plain = Terminal::new(TestBackend::new(80, 20)).unwrap();
    plain
        .draw(|f| view::render(f, &app, t0, &Theme { color: false }))
        .unwrap();
    assert_eq!(fg_of(&plain, "reviewer"), Color::Reset);
}

#[test]
fn the_agents_own_question_shows_its_options_and_the_answer_typed() {
    use cadre_core::tools::ask_user::AskedQuestion;
    let t0 = Instant::now();
    let mut app = app();
    let asked = AskedQuestion {
        question: "Which database should the service use?".into(),
        header: "Database".into(),
        options: vec![
            ("Postgres".into(), "relational, already in the stack".into()),
            ("SQLite".into(), String::new()),
        ],
        multi_select: false,
        position: (1, 2),
    };
    app.apply(
        &Event::ApprovalRequested {
            question: ApprovalQuestion {
                agent: "main".into(),
                label: None,
                tool: "AskUserQuestion".into(),
                call_id: None,
                input: serde_json::to_string(&asked).unwrap(),
                reason: "the agent asks you".into(),
                sandbox: None,
                session_rule: String::new(),
            },
            id: 3,
        },
        t0,
    );
    app.instead = Some("2".into());
    let terminal = draw(&app, 80, 24, t0 + cadre_tui::app::DIALOG_GRACE);
    insta::assert_snapshot!(terminal.backend());
}
