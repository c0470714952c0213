//! Keys and events turned into operations for the session, on the model
//! alone: what each key leaves in the outbox, and when it leaves nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use cadre_core::protocol::{ApprovalAnswer, ApprovalQuestion, Event, Op, PermissionMode};
use cadre_tui::app::{App, DIALOG_GRACE, DOUBLE_CTRL_C, DOUBLE_ESC, SessionInfo};
use cadre_tui::theme::Theme;
use cadre_tui::view;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Color;

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn typed(app: &mut App, text: &str, now: Instant) {
    for c in text.chars() {
        app.key(key(KeyCode::Char(c)), now);
    }
}

fn question(id: u64, agent: &str) -> Event {
    Event::ApprovalRequested {
        question: ApprovalQuestion {
            agent: agent.into(),
            label: None,
            tool: "Bash".into(),
            call_id: None,
            input: "ls".into(),
            reason: "r".into(),
            sandbox: None,
            session_rule: "Bash(ls:*)".into(),
        },
        id,
    }
}

#[test]
fn enter_sends_a_message_and_newline_keys_do_not() {
    let now = Instant::now();
    let mut app = App::new(SessionInfo::default());
    typed(&mut app, "first", now);
    app.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT), now);
    typed(&mut app, "second", now);
    app.key(ctrl('j'), now);
    typed(&mut app, "third", now);
    assert!(app.outbox.is_empty());
    assert_eq!(app.prompt.text(), "first\nsecond\nthird");
    app.key(key(KeyCode::Enter), now);
    assert_eq!(
        app.outbox,
        [Op::UserMessage {
            text: "first\nsecond\nthird".into()
        }]
    );
    assert!(app.prompt.is_empty());
    assert!(app.busy(), "waiting for the message's turn");
}

#[test]
fn commands_run_here_and_unknown_ones_are_never_sent() {
    let now = Instant::now();
    let mut app = App::new(SessionInfo::default());
    for text in ["/help", "/foo bar", "  "] {
        typed(&mut app, text, now);
        app.key(key(KeyCode::Enter), now);
    }
    assert!(app.outbox.is_empty(), "{:?}", app.outbox);
    typed(&mut app, "/compact keep the API notes", now);
    app.key(key(KeyCode::Enter), now);
    assert_eq!(
        app.outbox,
        [Op::Compact {
            focus: Some("keep the API notes".into())
        }]
    );
    typed(&mut app, "/exit", now);
    app.key(key(KeyCode::Enter), now);
    assert!(app.exit);
}

#[test]
fn esc_interrupts_only_while_something_runs_and_ctrl_b_backgrounds_a_batch() {
    let now = Instant::now();
    let mut app = App::new(SessionInfo::default());
    app.key(key(KeyCode::Esc), now);
    app.key(ctrl('b'), now);
    assert!(app.outbox.is_empty(), "nothing runs: {:?}", app.outbox);
    app.apply(
        &Event::TurnStarted {
            agent: "main".into(),
            notices: false,
        },
        now,
    );
    app.key(key(KeyCode::Esc), now);
    assert_eq!(app.outbox.drain(..).collect::<Vec<_>>(), [Op::Interrupt]);
    app.key(ctrl('b'), now);
    assert!(app.outbox.is_empty(), "no children yet");
    app.apply(
        &Event::SubagentStarted {
            index: 1,
            total: 1,
            agent_id: "a1".into(),
            agent_type: "Explore".into(),
            description: "d".into(),
            model: "m".into(),
            mode: PermissionMode::Default,
            path: Vec::new(),
            color: None,
        },
        now,
    );
    app.key(ctrl('b'), now);
    assert_eq!(app.outbox, [Op::BackgroundBatch]);
}

#[test]
fn ctrl_c_clears_the_prompt_and_twice_leaves() {
    let now = Instant::now();
    let mut app = App::new(SessionInfo::default());
    typed(&mut app, "draft", now);
    app.key(ctrl('c'), now);
    assert!(app.prompt.is_empty());
    assert!(!app.exit);
    // Too late for a double press: it only arms again.
    let later = now + DOUBLE_CTRL_C + Duration::from_millis(1);
    app.key(ctrl('c'), later);
    assert!(!app.exit);
    app.key(ctrl('c'), later + Duration::from_millis(300));
    assert!(app.exit);
}

#[test]
fn the_dialog_answers_by_id_and_shows_the_next_question() {
    let now = Instant::now();
    let mut app = App::new(SessionInfo::default());
    typed(&mut app, "half", now);
    app.apply(&question(4, "a1"), now);
    app.apply(&question(5, "a2"), now);
    assert_eq!(
        app.open_question().map(|(q, more)| (q.id, more)),
        Some((4, 1))
    );
    // Keys typed as it appears were meant for the prompt: swallowed.
    app.key(key(KeyCode::Char('y')), now);
    assert!(app.outbox.is_empty());
    // Typing waits while the dialog shows; other keys are swallowed.
    let now = now + DIALOG_GRACE;
    app.key(key(KeyCode::Char('x')), now);
    app.key(key(KeyCode::Char('a')), now);
    assert_eq!(
        app.outbox.drain(..).collect::<Vec<_>>(),
        [Op::ApprovalAnswer {
            id: Some(4),
            answer: ApprovalAnswer::Session
        }]
    );
    assert_eq!(app.open_question().map(|(q, _)| q.id), Some(5));
    // The next question has its own moment before keys answer it.
    app.key(key(KeyCode::Char('n')), now);
    assert!(app.outbox.is_empty());
    let now = now + DIALOG_GRACE;
    app.key(key(KeyCode::Char('n')), now);
    assert_eq!(
        app.outbox,
        [Op::ApprovalAnswer {
            id: Some(5),
            answer: ApprovalAnswer::No
        }]
    );
    assert!(app.open_question().is_none());
    assert_eq!(app.prompt.text(), "half");
    // A withdrawn question goes away without an answer.
    app.apply(&question(6, "main"), now);
    app.withdraw(6);
    assert!(app.open_question().is_none());
}

#[test]
fn ctrl_o_expands_diffs() {
    let now = Instant::now();
    let mut app = App::new(SessionInfo::default());
    assert!(!app.verbose);
    app.key(ctrl('o'), now);
    assert!(app.verbose);
}

#[test]
fn no_color_draws_without_colours() {
    let now = Instant::now();
    let mut app = App::new(SessionInfo {
        model: "m".into(),
        ..SessionInfo::default()
    });
    app.apply(
        &Event::TurnStarted {
            agent: "main".into(),
            notices: false,
        },
        now,
    );
    app.apply(
        &Event::TextDelta {
            agent: "main".into(),
            text: "# Title\n\n```\ncode\n```".into(),
        },
        now,
    );
    app.apply(&question(1, "main"), now);
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal
        .draw(|f| view::render(f, &app, now, &Theme { color: false }))
        .unwrap();
    for cell in terminal.backend().buffer().content() {
        assert_eq!(cell.fg, Color::Reset, "{cell:?}");
        assert_eq!(cell.bg, Color::Reset, "{cell:?}");
    }
}

#[test]
fn page_up_shows_earlier_rows_and_says_so() {
    let now = Instant::now();
    let theme = Theme { color: false };
    let mut app = App::new(SessionInfo::default());
    for i in 0..100 {
        app.transcript
            .push(cadre_tui::transcript::EntryKind::Notice(
                cadre_tui::transcript::Level::Info,
                format!("row {i}"),
            ));
    }
    let row = |app: &App, y: u16| {
        let mut terminal = Terminal::new(TestBackend::new(40, 12)).unwrap();
        terminal
            .draw(|f| view::render(f, app, now, &theme))
            .unwrap();
        let buffer = terminal.backend().buffer().clone();
        (0..40)
            .map(|x| buffer[(x, y)].symbol().to_string())
            .collect::<String>()
    };
    // 12 rows: transcript 9, rule, prompt, status.
    assert_eq!(row(&app, 8).trim_end(), "row 99");
    app.page = 8;
    app.key(key(KeyCode::PageUp), now);
    assert_eq!(row(&app, 8).trim_end(), "row 91");
    assert!(row(&app, 9).contains("8 rows up"), "{}", row(&app, 9));
    app.key(key(KeyCode::PageDown), now);
    assert_eq!(row(&app, 8).trim_end(), "row 99");
    // Far past the top shows the first page.
    app.scroll = 10_000;
    assert_eq!(row(&app, 0).trim_end(), "row 0");
    app.key(KeyEvent::new(KeyCode::End, KeyModifiers::CONTROL), now);
    assert_eq!(app.scroll, 0);
}

#[test]
fn up_and_down_walk_the_history_and_come_back_to_the_draft() {
    let now = Instant::now();
    let mut app = App::new(SessionInfo::default());
    for text in ["first", "/help"] {
        typed(&mut app, text, now);
        app.key(key(KeyCode::Enter), now);
    }
    typed(&mut app, "draft", now);
    app.key(key(KeyCode::Up), now);
    assert_eq!(app.prompt.text(), "/help");
    app.key(key(KeyCode::Up), now);
    assert_eq!(app.prompt.text(), "first");
    app.key(key(KeyCode::Up), now);
    assert_eq!(app.prompt.text(), "first", "no further back");
    app.key(key(KeyCode::Down), now);
    assert_eq!(app.prompt.text(), "/help");
    app.key(key(KeyCode::Down), now);
    assert_eq!(app.prompt.text(), "draft");
    // Inside a multi-line prompt the arrows move between its lines first.
    app.key(ctrl('j'), now);
    typed(&mut app, "more", now);
    app.key(key(KeyCode::Up), now);
    assert_eq!(app.prompt.text(), "draft\nmore");
}

#[test]
fn shift_tab_asks_for_the_next_mode_and_the_status_follows_the_session() {
    let now = Instant::now();
    let mut app = App::new(SessionInfo {
        permission_mode: cadre_core::protocol::PermissionMode::Default,
        ..SessionInfo::default()
    });
    app.key(key(KeyCode::BackTab), now);
    assert_eq!(
        app.outbox,
        [Op::SetMode {
            mode: PermissionMode::AcceptEdits
        }]
    );
    // Nothing changes until the session says so.
    assert_eq!(app.info.permission_mode, PermissionMode::Default);
    app.apply(
        &Event::ModeChanged {
            agent: "main".into(),
            mode: PermissionMode::AcceptEdits,
        },
        now,
    );
    assert_eq!(app.info.permission_mode, PermissionMode::AcceptEdits);
    app.outbox.clear();
    app.key(key(KeyCode::BackTab), now);
    assert_eq!(
        app.outbox,
        [Op::SetMode {
            mode: PermissionMode::Plan
        }]
    );
    app.apply(
        &Event::ModeChanged {
            agent: "main".into(),
            mode: PermissionMode::Plan,
        },
        now,
    );
    app.outbox.clear();
    app.key(key(KeyCode::BackTab), now);
    assert_eq!(
        app.outbox,
        [Op::SetMode {
            mode: PermissionMode::Default
        }]
    );
}

#[test]
fn i_in_the_dialog_takes_what_to_do_instead_and_enter_sends_it() {
    let now = Instant::now();
    let mut app = App::new(SessionInfo::default());
    app.apply(&question(7, "main"), now);
    let now = now + DIALOG_GRACE;
    app.key(key(KeyCode::Char('i')), now);
    typed(&mut app, "use rg", now);
    app.key(key(KeyCode::Backspace), now);
    typed(&mut app, "g!", now);
    // Typing here answers nothing and leaves the prompt alone.
    assert!(app.outbox.is_empty());
    assert_eq!(app.prompt.text(), "");
    app.key(key(KeyCode::Enter), now);
    assert_eq!(
        app.outbox,
        [Op::ApprovalAnswer {
            id: Some(7),
            answer: ApprovalAnswer::Instead("use rg!".into()),
        }]
    );
    assert!(app.instead.is_none());
}

#[test]
fn a_nested_child_hangs_under_its_parent_and_rows_show_the_calls_argument() {
    use cadre_core::protocol::ChildTag;
    let now = Instant::now();
    let mut app = App::new(SessionInfo::default());
    let tag = |id: &str, t: &str| ChildTag {
        index: 1,
        total: 1,
        agent_type: t.into(),
        agent_id: id.into(),
    };
    let started = |id: &str, t: &str, path: Vec<ChildTag>| Event::SubagentStarted {
        index: 1,
        total: 1,
        agent_id: id.into(),
        agent_type: t.into(),
        description: format!("{t} work"),
        model: "m".into(),
        mode: PermissionMode::Default,
        path,
        color: None,
    };
    app.apply(&started("p1", "scout", vec![tag("p1", "scout")]), now);
    app.apply(
        &started("c1", "leaf", vec![tag("p1", "scout"), tag("c1", "leaf")]),
        now,
    );
    let parents: Vec<Option<String>> = app
        .children
        .batches
        .iter()
        .map(|b| b.parent.clone())
        .collect();
    assert_eq!(parents, [None, Some("p1".to_string())]);
    app.apply(
        &Event::SubagentProgress {
            index: 1,
            total: 1,
            agent_type: "leaf".into(),
            agent_id: "c1".into(),
            tool: "Grep".into(),
            outcome: cadre_core::protocol::ChildCallOutcome::Completed,
            summary: "\"parse_config\" in src".into(),
            path: vec![tag("p1", "scout"), tag("c1", "leaf")],
        },
        now,
    );
    let child = &app.children.batches[1].children[0];
    assert_eq!(
        child.last_activity.as_deref(),
        Some("Grep \"parse_config\" in src: completed")
    );
}

#[test]
fn esc_twice_on_an_empty_prompt_picks_a_message_to_go_back_to() {
    let now = Instant::now();
    let mut app = App::new(SessionInfo::default());
    // Nothing sent yet: nothing to pick.
    app.key(key(KeyCode::Esc), now);
    app.key(key(KeyCode::Esc), now);
    assert!(app.panes.is_empty());
    for text in ["first", "second"] {
        typed(&mut app, text, now);
        app.key(key(KeyCode::Enter), now);
        app.apply(
            &Event::TurnStarted {
                agent: "main".into(),
                notices: false,
            },
            now,
        );
        app.apply(
            &Event::TurnEnded {
                agent: "main".into(),
                status: cadre_core::protocol::TurnStatus::Completed,
                final_text: String::new(),
                error: None,
                requests: 1,
                tool_calls: 0,
                usage: Default::default(),
                cost_usd: None,
            },
            now,
        );
    }
    app.outbox.clear();
    // Too slow a second Esc only arms again.
    app.key(key(KeyCode::Esc), now);
    let later = now + DOUBLE_ESC + Duration::from_millis(1);
    app.key(key(KeyCode::Esc), later);
    assert!(app.panes.is_empty());
    app.key(key(KeyCode::Esc), later + Duration::from_millis(100));
    assert_eq!(app.panes.len(), 1);
    // ↑ to the first message, Enter, then "Restore conversation".
    app.key(key(KeyCode::Up), later);
    app.key(key(KeyCode::Enter), later);
    assert_eq!(app.panes.len(), 2);
    app.key(key(KeyCode::Down), later);
    app.key(key(KeyCode::Enter), later);
    assert!(app.panes.is_empty());
    assert_eq!(
        app.outbox,
        [Op::Rewind {
            prompt: "first".into(),
            later_same: 0,
            action: cadre_core::protocol::RewindAction::Conversation,
            overwrite: false,
        }]
    );
    // When the session says it went back, the transcript is cut there and
    // the message is in the prompt to edit.
    app.apply(
        &Event::Rewound {
            agent: "main".into(),
            prompt: "first".into(),
            messages: 1,
            action: cadre_core::protocol::RewindAction::Conversation,
        },
        later,
    );
    assert_eq!(app.prompt.text(), "first");
    assert!(!app.transcript.entries().iter().any(|e| matches!(
        &e.kind,
        cadre_tui::transcript::EntryKind::User(t) if t == "second"
    )));
}

/// A model whose project walk found `files` (as the loop hands it over).
fn with_files(files: &[&str], now: Instant) -> App {
    let mut app = App::new(SessionInfo {
        root: std::path::PathBuf::from("/project"),
        ..SessionInfo::default()
    });
    app.files_walked(files.iter().map(|f| f.to_string()).collect::<Vec<_>>(), now);
    app
}

fn popup_texts(app: &App) -> Vec<String> {
    app.completion
        .popup
        .as_ref()
        .map(|p| p.candidates.iter().map(|c| c.text.clone()).collect())
        .unwrap_or_default()
}

#[test]
fn at_completes_a_project_path_with_tab_and_sends_it() {
    let now = Instant::now();
    let mut app = with_files(
        &["README.md", "src/", "src/main.rs", "src/map.rs", "docs/"],
        now,
    );
    typed(&mut app, "look at @src/ma", now);
    assert_eq!(popup_texts(&app), ["src/map.rs", "src/main.rs"]);
    app.key(key(KeyCode::Up), now);
    assert_eq!(
        app.completion.popup.as_ref().unwrap().selected,
        1,
        "↑ wraps"
    );
    app.key(key(KeyCode::Down), now);
    app.key(key(KeyCode::Down), now);
    assert_eq!(app.completion.popup.as_ref().unwrap().selected, 1);
    assert_eq!(
        app.prompt.text(),
        "look at @src/ma",
        "the arrows chose, they walked no history"
    );
    app.key(key(KeyCode::Tab), now);
    assert_eq!(app.prompt.text(), "look at @src/main.rs ");
    assert!(app.completion.popup.is_none(), "a file ends the word");
    typed(&mut app, "please", now);
    app.key(key(KeyCode::Enter), now);
    assert_eq!(
        app.outbox,
        [Op::UserMessage {
            text: "look at @src/main.rs please".into()
        }]
    );
}

#[test]
fn enter_takes_a_directory_and_its_entries_show_next() {
    let now = Instant::now();
    let mut app = with_files(&["src/", "src/main.rs", "srclib.txt"], now);
    typed(&mut app, "@sr", now);
    assert_eq!(popup_texts(&app), ["src/", "srclib.txt", "src/main.rs"]);
    app.key(key(KeyCode::Enter), now);
    assert_eq!(app.prompt.text(), "@src/");
    assert!(
        app.outbox.is_empty(),
        "Enter took the path, it sent nothing"
    );
    assert_eq!(popup_texts(&app), ["src/main.rs"]);
}

#[test]
fn esc_closes_the_popup_without_interrupting() {
    let now = Instant::now();
    let mut app = with_files(&["src/main.rs"], now);
    app.apply(
        &Event::TurnStarted {
            agent: "main".into(),
            notices: false,
        },
        now,
    );
    typed(&mut app, "@main", now);
    assert_eq!(popup_texts(&app), ["src/main.rs"]);
    app.key(key(KeyCode::Esc), now);
    assert!(app.completion.popup.is_none());
    assert!(app.outbox.is_empty(), "no interrupt: {:?}", app.outbox);
    // It stays closed while the same word is typed; Tab is a tab again.
    typed(&mut app, ".", now);
    assert!(app.completion.popup.is_none());
    app.key(key(KeyCode::Esc), now);
    assert_eq!(app.outbox, [Op::Interrupt], "with no popup Esc interrupts");
    // A new word opens it again.
    typed(&mut app, " @src", now);
    assert_eq!(popup_texts(&app), ["src/main.rs"]);
}

#[test]
fn the_popup_is_drawn_above_the_prompt_and_the_walk_is_asked_for() {
    let now = Instant::now();
    let mut app = App::new(SessionInfo {
        root: std::path::PathBuf::from("/project"),
        ..SessionInfo::default()
    });
    typed(&mut app, "@", now);
    assert_eq!(
        app.take_walk(),
        Some(std::path::PathBuf::from("/project")),
        "the first @ asks for a walk"
    );
    assert_eq!(app.take_walk(), None, "one walk at a time");
    app.files_walked(vec!["Cargo.toml".to_string(), "src/".to_string()], now);
    assert_eq!(popup_texts(&app), ["src/", "Cargo.toml"]);
    typed(&mut app, "C", now);
    assert_eq!(app.take_walk(), None, "a fresh list is used as it is");
    let mut terminal = Terminal::new(TestBackend::new(60, 14)).unwrap();
    terminal
        .draw(|f| view::render(f, &app, now, &Theme { color: false }))
        .unwrap();
    let buffer = terminal.backend().buffer().clone();
    let row = |y: u16| {
        (0..60)
            .map(|x| buffer[(x, y)].symbol().to_string())
            .collect::<String>()
    };
    // 14 rows: the prompt's rule at 11, its text at 12; the popup just above.
    assert!(row(8).contains("files"), "{}", row(8));
    assert!(row(9).starts_with("› Cargo.toml"), "{}", row(9));
    assert!(row(10).starts_with("  src/"), "{}", row(10));
    assert!(row(12).starts_with("› @C"), "{}", row(12));
    // Without a root (no project) nothing is walked and nothing offered.
    let mut bare = App::new(SessionInfo::default());
    typed(&mut bare, "@", now);
    assert_eq!(bare.take_walk(), None);
    assert!(bare.completion.popup.is_none());
}

#[test]
fn slash_completes_command_names_and_enter_runs_a_complete_one() {
    let now = Instant::now();
    let mut app = App::new(SessionInfo::default());
    typed(&mut app, "/he", now);
    let popup = app.completion.popup.as_ref().unwrap();
    assert_eq!(popup.candidates[0].text, "/help");
    assert_eq!(popup.candidates[0].detail, "commands and keys");
    app.key(key(KeyCode::Enter), now);
    assert_eq!(app.prompt.text(), "/help ", "Enter completed the name");
    assert!(app.completion.popup.is_none());
    app.prompt.take();
    app.refresh_completion(now);
    typed(&mut app, "/exit", now);
    assert!(app.completion.popup.is_some());
    app.key(key(KeyCode::Enter), now);
    assert!(app.exit, "a complete name runs as typed");
    // Not after a word, and not for `//`.
    let mut app = App::new(SessionInfo::default());
    typed(&mut app, "say /he", now);
    assert!(app.completion.popup.is_none());
}

#[test]
fn a_large_paste_is_one_block_backspace_takes_it_and_enter_sends_it_all() {
    let now = Instant::now();
    let mut app = App::new(SessionInfo::default());
    let pasted: String = (1..=120).map(|i| format!("row {i}\n")).collect();
    typed(&mut app, "see ", now);
    app.paste(&pasted);
    assert_eq!(app.prompt.text(), "see [Pasted text #1 +120 lines]");
    app.key(key(KeyCode::Backspace), now);
    assert_eq!(app.prompt.text(), "see ", "one backspace took the block");
    app.paste(&pasted);
    assert_eq!(app.prompt.text(), "see [Pasted text #2 +120 lines]");
    // The placeholder is what the prompt shows: one row.
    let mut terminal = Terminal::new(TestBackend::new(60, 14)).unwrap();
    terminal
        .draw(|f| view::render(f, &app, now, &Theme { color: false }))
        .unwrap();
    let screen: String = terminal
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    assert!(screen.contains("› see [Pasted text #2 +120 lines]"));
    assert!(!screen.contains("row 1"), "{screen}");
    app.key(key(KeyCode::Enter), now);
    let [Op::UserMessage { text }] = app.outbox.as_slice() else {
        panic!("{:?}", app.outbox);
    };
    assert!(text.starts_with("see row 1\nrow 2\n"), "{text}");
    assert_eq!(text.lines().count(), 120);
    assert!(text.ends_with("row 120"), "sent trimmed, in full: {text}");
    // A small paste is typed text; escapes in a paste never reach the prompt raw.
    app.paste("two\nlines \u{1b}[2J\u{7}done");
    assert_eq!(app.prompt.text(), "two\nlines [2Jdone");
}

#[test]
fn ctrl_t_shows_the_main_agents_latest_todo_list() {
    let now = Instant::now();
    let mut app = App::new(SessionInfo::default());
    let todo_call = |agent: &str, todos: serde_json::Value| Event::ToolCallStarted {
        agent: agent.into(),
        call_id: "t".into(),
        tool: "TodoWrite".into(),
        input: serde_json::json!({ "todos": todos }),
        summary: String::new(),
    };
    app.key(ctrl('t'), now);
    assert_eq!(app.panes.len(), 1);
    let text = |app: &App| {
        let mut terminal = Terminal::new(TestBackend::new(60, 14)).unwrap();
        terminal
            .draw(|f| view::render(f, app, now, &Theme { color: false }))
            .unwrap();
        terminal
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect::<String>()
    };
    assert!(text(&app).contains("No todo list yet"), "{}", text(&app));
    app.apply(
        &todo_call(
            "main",
            serde_json::json!([
                {"content": "Read the parser", "status": "completed"},
                {"content": "Fix the bug", "status": "in_progress"},
                {"content": "Run the tests", "status": "pending"}
            ]),
        ),
        now,
    );
    // A child's list is its own, not the main agent's.
    app.apply(
        &todo_call(
            "child-1",
            serde_json::json!([{"content": "child work", "status": "pending"}]),
        ),
        now,
    );
    let shown = text(&app);
    assert!(shown.contains("● Read the parser"), "{shown}");
    assert!(shown.contains("◐ Fix the bug"), "{shown}");
    assert!(shown.contains("○ Run the tests"), "{shown}");
    assert!(shown.contains("1/3 done"), "{shown}");
    assert!(!shown.contains("child work"), "{shown}");
    typed(&mut app, "x", now);
    assert!(app.prompt.is_empty(), "the pane takes the keys");
    app.key(ctrl('t'), now);
    assert!(app.panes.is_empty(), "Ctrl+T closes it");
    app.key(ctrl('t'), now);
    app.key(key(KeyCode::Esc), now);
    assert!(app.panes.is_empty(), "Esc closes it");
    assert!(app.outbox.is_empty());
    app.apply(&todo_call("main", serde_json::json!([])), now);
    app.key(ctrl('t'), now);
    assert!(text(&app).contains("The todo list is empty."));
}

#[test]
fn the_wheel_scrolls_three_rows() {
    let mut app = App::new(SessionInfo::default());
    app.wheel(true);
    app.wheel(true);
    assert_eq!(app.scroll, 6);
    app.wheel(false);
    assert_eq!(app.scroll, 3);
    app.wheel(false);
    app.wheel(false);
    assert_eq!(app.scroll, 0);
}
