//! The `/agents` pane drawn on ratatui's `TestBackend` (snapshot files in
//! `snapshots/`), and its keys: selection, Enter's definition view, `n`'s
//! form, and the list picking up a definition written meanwhile.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use cadre_tui::pane::{Pane, PaneOut, PaneStep, Panes};
use cadre_tui::panes::agents::{
    AgentCatalog, AgentEntry, AgentsListing, AgentsPane, BrokenDefinition, NewAgentPlaces,
};
use cadre_tui::theme::Theme;
use cadre_tui::view::render_pane;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;

fn entry(name: &str, source: &str, file: Option<&str>, description: &str) -> AgentEntry {
    AgentEntry {
        name: name.into(),
        source: source.into(),
        file: file.map(str::to_string),
        description: description.into(),
        color: None,
        overrides: Vec::new(),
    }
}

fn listing() -> AgentsListing {
    let mut explore = entry(
        "Explore",
        "project",
        Some(".cadre/agents/explore.md"),
        "Our own explorer.",
    );
    explore.overrides = vec!["built-in".into()];
    AgentsListing {
        entries: vec![
            explore,
            entry("Plan", "built-in", None, "Plans an implementation."),
            entry(
                "finder",
                "user",
                Some("~/.cadre/agents/finder.md"),
                "Finds things in the project.",
            ),
            entry(
                "general-purpose",
                "built-in",
                None,
                "General-purpose agent for multi-step tasks.",
            ),
        ],
        broken: vec![BrokenDefinition {
            place: ".cadre/agents/broken.md:1".into(),
            message: "frontmatter is not closed: no second `---` line".into(),
        }],
        error: None,
    }
}

/// A catalog whose listing the test changes; `show` says which name it was asked for.
#[derive(Clone, Default)]
struct FakeCatalog {
    next: Arc<Mutex<Option<AgentsListing>>>,
}

impl AgentCatalog for FakeCatalog {
    fn changed(&mut self) -> Option<AgentsListing> {
        self.next.lock().unwrap().take()
    }
    fn show(&self, name: &str) -> String {
        format!("name:        {name}\n\nsystem prompt:\n\nYou are {name}.")
    }
}

fn pane() -> (AgentsPane, FakeCatalog) {
    let catalog = FakeCatalog::default();
    *catalog.next.lock().unwrap() = Some(listing());
    let pane = AgentsPane::new(
        Box::new(catalog.clone()),
        NewAgentPlaces {
            project_shown: ".cadre/agents".into(),
            user_shown: "~/.cadre/agents".into(),
            ..NewAgentPlaces::default()
        },
    );
    (pane, catalog)
}

fn draw(pane: &dyn Pane, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|f| {
            render_pane(
                f,
                pane,
                Rect::new(0, 0, width, height),
                &Theme { color: true },
            )
        })
        .unwrap();
    terminal
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

#[test]
fn the_agents_list_shows_sources_overrides_and_broken_files() {
    let (mut pane, _) = pane();
    pane.key(key(KeyCode::Down), &mut PaneOut::default());
    pane.key(key(KeyCode::Up), &mut PaneOut::default());
    insta::assert_snapshot!(draw(&pane, 80, 16).backend());
}

#[test]
fn enter_shows_the_selected_definition_and_esc_comes_back() {
    let (pane, _) = pane();
    let mut panes = Panes::default();
    panes.open(Box::new(pane));
    let mut out = PaneOut::default();
    for _ in 0..2 {
        panes.key(key(KeyCode::Down), &mut out);
    }
    panes.key(key(KeyCode::Enter), &mut out);
    assert_eq!(panes.len(), 2);
    let top = panes.top().unwrap();
    assert_eq!(top.title(), "Agent finder");
    let screen = format!("{:?}", draw(top, 60, 10).backend());
    assert!(screen.contains("You are finder."), "{screen}");
    panes.key(key(KeyCode::Esc), &mut out);
    assert_eq!(panes.len(), 1);
    assert_eq!(panes.top().unwrap().title(), "Agents (4)");
    panes.key(key(KeyCode::Esc), &mut out);
    assert!(panes.is_empty());
}

/// A catalog whose every definition is the same long text.
struct Long(String);

impl AgentCatalog for Long {
    fn changed(&mut self) -> Option<AgentsListing> {
        Some(listing())
    }
    fn show(&self, _: &str) -> String {
        self.0.clone()
    }
}

#[test]
fn the_definition_view_scrolls_within_its_text() {
    let long: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    let mut pane = AgentsPane::new(Box::new(Long(long)), NewAgentPlaces::default());
    let PaneStep::Open(mut text) = pane.key(key(KeyCode::Enter), &mut PaneOut::default()) else {
        panic!("Enter opens the definition");
    };
    // Drawn 10 rows high (8 inside the border): 30 lines scroll 22 at most.
    draw(text.as_ref(), 40, 10);
    text.key(key(KeyCode::End), &mut PaneOut::default());
    let screen = format!("{:?}", draw(text.as_ref(), 40, 10).backend());
    assert!(
        screen.contains("line 30") && screen.contains("line 23"),
        "{screen}"
    );
    assert!(!screen.contains("line 22 "), "{screen}");
    for _ in 0..5 {
        text.key(key(KeyCode::Down), &mut PaneOut::default());
    }
    text.key(key(KeyCode::Up), &mut PaneOut::default());
    let screen = format!("{:?}", draw(text.as_ref(), 40, 10).backend());
    assert!(
        screen.contains("line 29") && screen.contains("line 22"),
        "{screen}"
    );
    text.key(key(KeyCode::Home), &mut PaneOut::default());
    let screen = format!("{:?}", draw(text.as_ref(), 40, 10).backend());
    assert!(
        screen.contains("line 1 ") && screen.contains("line 8"),
        "{screen}"
    );
}

#[test]
fn n_opens_the_form_and_the_list_selects_what_it_wrote_once_listed() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = FakeCatalog::default();
    *catalog.next.lock().unwrap() = Some(listing());
    let mut panes = Panes::default();
    panes.open(Box::new(AgentsPane::new(
        Box::new(catalog.clone()),
        NewAgentPlaces {
            project_dir: dir.path().join(".cadre/agents"),
            user_dir: dir.path().join("home/agents"),
            project_shown: ".cadre/agents".into(),
            user_shown: "~/.cadre/agents".into(),
            known_tools: vec!["Read".into()],
            existing: Vec::new(),
        },
    )));
    let mut out = PaneOut::default();
    panes.key(key(KeyCode::Char('n')), &mut out);
    assert_eq!(panes.top().unwrap().title(), "New agent");
    for c in "zeta".chars() {
        panes.key(key(KeyCode::Char(c)), &mut out);
    }
    panes.key(key(KeyCode::Tab), &mut out);
    for c in "Last one.".chars() {
        panes.key(key(KeyCode::Char(c)), &mut out);
    }
    panes.key(
        KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL),
        &mut out,
    );
    assert_eq!(panes.len(), 1, "written: the form closes");
    assert!(dir.path().join(".cadre/agents/zeta.md").exists());
    assert_eq!(out.notices.len(), 1, "{:?}", out.notices);

    // The catalog reloads the changed directory: the list selects the new one.
    let mut next = listing();
    next.entries.push(entry(
        "zeta",
        "project",
        Some(".cadre/agents/zeta.md"),
        "Last one.",
    ));
    *catalog.next.lock().unwrap() = Some(next);
    assert!(panes.top_mut().unwrap().refresh());
    let screen = format!("{:?}", draw(panes.top().unwrap(), 80, 16).backend());
    assert!(screen.contains("▸ zeta"), "{screen}");
    assert!(screen.contains("created zeta"), "{screen}");
    assert!(!panes.top_mut().unwrap().refresh(), "nothing new");
}
