//! `/agents`: every agent definition with its source and what it overrides,
//! the files that did not load with their error, one definition as a child
//! would get it (Enter), and a short form to create one (`n`).
//!
//! The data comes from the program that runs the TUI through
//! [`AgentCatalog`]: the pane knows nothing of where definitions live
//! beyond the two directories the form may write to.

mod form;

use std::cell::Cell;
use std::sync::{Arc, Mutex, PoisonError};

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

pub use form::{AgentForm, FormField, NewAgent, NewAgentPlaces, Place, Written};

use crate::pane::{Pane, PaneOut, PaneStep};
use crate::sanitize::{clean_line, clean_lines};
use crate::theme::Theme;
use crate::wrap::wrap_line;

/// One definition in effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentEntry {
    /// Its name (the `subagent_type`).
    pub name: String,
    /// Where it comes from: `built-in`, `user`, `project`, `plugin`, `flag`, `managed`.
    pub source: String,
    /// Its file, as shown, for file-based sources.
    pub file: Option<String>,
    /// The first line of its description.
    pub description: String,
    /// Its `color`, if it names one.
    pub color: Option<String>,
    /// The definitions of the same name it overrides, highest first, as
    /// shown (`built-in`, `user (~/.cadre/agents/x.md)`).
    pub overrides: Vec<String>,
}

/// A definition file that was skipped, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenDefinition {
    /// The file (and line, when known), as shown.
    pub place: String,
    /// What is wrong.
    pub message: String,
}

/// Everything the list shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentsListing {
    /// The definitions in effect, sorted by name.
    pub entries: Vec<AgentEntry>,
    /// Files that did not load.
    pub broken: Vec<BrokenDefinition>,
    /// Why nothing could be listed (a bad `--agents` JSON), if so.
    pub error: Option<String>,
}

/// The definitions, as the program running the TUI knows them.
pub trait AgentCatalog: Send {
    /// The listing, when it changed since the last call (the first call
    /// always gives it): files added, edited or removed show up.
    fn changed(&mut self) -> Option<AgentsListing>;
    /// One definition as a child would get it (tools, model, mode, prompt).
    fn show(&self, name: &str) -> String;
}

/// The `/agents` list.
pub struct AgentsPane {
    catalog: Box<dyn AgentCatalog>,
    places: NewAgentPlaces,
    listing: AgentsListing,
    selected: usize,
    /// The name the form just wrote, to select once the list shows it.
    created: Arc<Mutex<Option<String>>>,
    /// What happened last (`created x`), shown under the list.
    message: Option<String>,
    /// Rows the list had when last drawn (for PgUp/PgDn).
    page: Cell<usize>,
}

impl AgentsPane {
    /// The list over `catalog`; the form writes to `places`.
    pub fn new(mut catalog: Box<dyn AgentCatalog>, places: NewAgentPlaces) -> AgentsPane {
        let listing = catalog.changed().unwrap_or_default();
        AgentsPane {
            catalog,
            places,
            listing,
            selected: 0,
            created: Arc::default(),
            message: None,
            page: Cell::new(10),
        }
    }

    /// The listing shown.
    pub fn listing(&self) -> &AgentsListing {
        &self.listing
    }

    /// The name of the selected definition.
    pub fn selected(&self) -> Option<&str> {
        self.listing
            .entries
            .get(self.selected)
            .map(|e| e.name.as_str())
    }

    fn select_name(&mut self, name: &str) -> bool {
        match self.listing.entries.iter().position(|e| e.name == name) {
            Some(i) => {
                self.selected = i;
                true
            }
            None => false,
        }
    }

    fn move_by(&mut self, delta: isize) {
        let last = self.listing.entries.len().saturating_sub(1);
        self.selected = self.selected.saturating_add_signed(delta).min(last);
    }

    fn lines(&self, theme: &Theme, width: u16) -> (Vec<Line<'static>>, usize) {
        let mut lines = Vec::new();
        if let Some(error) = &self.listing.error {
            lines.push(Line::styled(clean_line(error), theme.error()));
        }
        let name_width = self
            .listing
            .entries
            .iter()
            .map(|e| e.name.chars().count())
            .max()
            .unwrap_or(4)
            .clamp(4, 28);
        let mut selected_row = 0;
        for (i, entry) in self.listing.entries.iter().enumerate() {
            let chosen = i == self.selected;
            if chosen {
                selected_row = lines.len();
            }
            let mut spans = vec![
                Span::raw(if chosen { "▸ " } else { "  " }),
                Span::styled(
                    format!("{:<name_width$}", clean_line(&entry.name)),
                    theme.agent_type_in(&entry.name, entry.color.as_deref()),
                ),
                Span::raw("  "),
                Span::styled(format!("{:<9}", entry.source), theme.dim()),
                Span::raw(" "),
                Span::raw(clean_line(&entry.description)),
            ];
            if !entry.overrides.is_empty() {
                spans.push(Span::styled(
                    format!("  (overrides {})", sources_only(&entry.overrides)),
                    theme.warning(),
                ));
            }
            let mut line = Line::from(spans);
            if chosen {
                line = line.style(Style::new().add_modifier(Modifier::REVERSED));
            }
            lines.push(truncated(line, width));
        }
        if self.listing.entries.is_empty() && self.listing.error.is_none() {
            lines.push(Line::styled("no agent definitions", theme.dim()));
        }
        if let Some(entry) = self.listing.entries.get(self.selected) {
            lines.push(Line::raw(""));
            if let Some(file) = &entry.file {
                lines.push(detail("file", file, theme));
            }
            for overridden in &entry.overrides {
                lines.push(detail("overrides", overridden, theme));
            }
        }
        if !self.listing.broken.is_empty() {
            lines.push(Line::raw(""));
            lines.push(Line::styled(
                format!("{} definition file(s) skipped:", self.listing.broken.len()),
                theme.error(),
            ));
            for broken in &self.listing.broken {
                lines.push(Line::from(vec![
                    Span::raw("  "),
                    Span::styled(clean_line(&broken.place), theme.dim()),
                    Span::raw(": "),
                    Span::styled(clean_line(&broken.message), theme.error()),
                ]));
            }
        }
        if let Some(message) = &self.message {
            lines.push(Line::raw(""));
            lines.push(Line::styled(clean_line(message), theme.ok()));
        }
        (lines, selected_row)
    }
}

/// `user, built-in` from `user (path), built-in`.
fn sources_only(overrides: &[String]) -> String {
    overrides
        .iter()
        .map(|o| o.split(" (").next().unwrap_or(o))
        .collect::<Vec<_>>()
        .join(", ")
}

fn detail(label: &str, value: &str, theme: &Theme) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("  {label:<10} "), theme.dim()),
        Span::raw(clean_line(value)),
    ])
}

/// `line` cut to `width` columns (the list is one row per definition).
fn truncated(line: Line<'static>, width: u16) -> Line<'static> {
    let mut rows = wrap_line(&line, width.max(1));
    if rows.len() > 1 {
        rows.truncate(1);
    }
    rows.pop().unwrap_or(line)
}

impl Pane for AgentsPane {
    fn title(&self) -> String {
        format!("Agents ({})", self.listing.entries.len())
    }

    fn keys_help(&self) -> String {
        "↑/↓ select · Enter show · n new · Esc back".into()
    }

    fn key(&mut self, key: KeyEvent, _out: &mut PaneOut) -> PaneStep {
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return PaneStep::Close,
            KeyCode::Up | KeyCode::Char('k') => self.move_by(-1),
            KeyCode::Down | KeyCode::Char('j') => self.move_by(1),
            KeyCode::PageUp => self.move_by(-(self.page.get() as isize)),
            KeyCode::PageDown => self.move_by(self.page.get() as isize),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.move_by(isize::MAX),
            KeyCode::Enter => {
                if let Some(name) = self.selected().map(str::to_string) {
                    let text = self.catalog.show(&name);
                    return PaneStep::Open(Box::new(TextPane::new(format!("Agent {name}"), &text)));
                }
            }
            KeyCode::Char('n') if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.message = None;
                // The form says when a name is taken, as the list is now.
                let places = NewAgentPlaces {
                    existing: self.listing.entries.clone(),
                    ..self.places.clone()
                };
                return PaneStep::Open(Box::new(AgentForm::new(places, self.created.clone())));
            }
            _ => {}
        }
        PaneStep::Stay
    }

    fn render(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let (lines, selected_row) = self.lines(theme, area.width);
        let height = usize::from(area.height);
        self.page.set(height.saturating_sub(1).max(1));
        // The selected row stays in view, a little context under it.
        let top = (selected_row + 1).saturating_sub(height);
        let shown: Vec<Line<'static>> = lines.into_iter().skip(top).take(height).collect();
        frame.render_widget(Paragraph::new(shown), area);
    }

    fn refresh(&mut self) -> bool {
        let Some(listing) = self.catalog.changed() else {
            return false;
        };
        let keep = self.selected().map(str::to_string);
        self.listing = listing;
        let created = self
            .created
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match created {
            Some(name) if self.select_name(&name) => {
                self.message = Some(format!("created {name}; Enter shows it"));
            }
            // Not listed yet (written a moment ago): looked for next time.
            Some(name) => {
                *self.created.lock().unwrap_or_else(PoisonError::into_inner) = Some(name);
            }
            None => {
                if let Some(name) = keep
                    && !self.select_name(&name)
                {
                    self.move_by(0);
                }
            }
        }
        true
    }

    fn live(&self) -> bool {
        // Files change under it (the form writes one; an editor may too).
        true
    }
}

/// Read-only text that scrolls (a definition as a child gets it).
pub struct TextPane {
    title: String,
    lines: Vec<String>,
    scroll: usize,
    /// The last scroll position that still fills the area, as last drawn.
    max_scroll: Cell<usize>,
    page: Cell<usize>,
}

impl TextPane {
    /// `text` under `title`.
    pub fn new(title: String, text: &str) -> TextPane {
        TextPane {
            title,
            lines: clean_lines(text.trim_end()),
            scroll: 0,
            max_scroll: Cell::new(usize::MAX),
            page: Cell::new(10),
        }
    }

    /// The first row shown.
    pub fn scroll(&self) -> usize {
        self.scroll
    }
}

impl Pane for TextPane {
    fn title(&self) -> String {
        self.title.clone()
    }

    fn keys_help(&self) -> String {
        "↑/↓ PgUp/PgDn scroll · Esc back".into()
    }

    fn key(&mut self, key: KeyEvent, _out: &mut PaneOut) -> PaneStep {
        let page = self.page.get();
        let max = self.max_scroll.get();
        self.scroll = match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return PaneStep::Close,
            KeyCode::Up | KeyCode::Char('k') => self.scroll.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.scroll + 1,
            KeyCode::PageUp => self.scroll.saturating_sub(page),
            KeyCode::PageDown | KeyCode::Char(' ') => self.scroll + page,
            KeyCode::Home => 0,
            KeyCode::End => max,
            _ => self.scroll,
        }
        .min(max);
        PaneStep::Stay
    }

    fn render(&self, frame: &mut Frame<'_>, area: Rect, _theme: &Theme) {
        let rows: Vec<Line<'static>> = self
            .lines
            .iter()
            .flat_map(|l| wrap_line(&Line::raw(l.clone()), area.width))
            .collect();
        let height = usize::from(area.height);
        let max = rows.len().saturating_sub(height);
        self.max_scroll.set(max);
        self.page.set(height.saturating_sub(1).max(1));
        let shown: Vec<Line<'static>> = rows
            .into_iter()
            .skip(self.scroll.min(max))
            .take(height)
            .collect();
        frame.render_widget(Paragraph::new(shown), area);
    }
}
