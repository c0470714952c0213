//! Ctrl+T in a session with a team: the team's task board, each task with
//! its id, status, owner and the open tasks it waits for. Like the todo
//! list it reads a board the app keeps up to date from events, so a change
//! shows as soon as it happens.

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use cadre_core::protocol::BoardTaskState;

use crate::pane::{Pane, PaneOut, PaneStep};
use crate::sanitize::clean_line;
use crate::team::{TeamBoard, status_words};
use crate::theme::Theme;
use crate::wrap::wrap_line;

/// The pane Ctrl+T opens when the session has a team.
pub struct BoardPane {
    board: TeamBoard,
    /// Rows scrolled down from the top.
    offset: usize,
}

impl BoardPane {
    /// A pane showing `board`.
    pub fn new(board: TeamBoard) -> BoardPane {
        BoardPane { board, offset: 0 }
    }
}

/// The mark and style of a status.
fn mark(status: BoardTaskState, theme: &Theme) -> (&'static str, Style) {
    match status {
        BoardTaskState::Completed => ("●", theme.ok()),
        BoardTaskState::InProgress => ("◐", theme.warning()),
        _ => ("○", theme.dim()),
    }
}

impl Pane for BoardPane {
    fn title(&self) -> String {
        let entries = self.board.entries();
        let done = entries
            .iter()
            .filter(|e| e.status == BoardTaskState::Completed)
            .count();
        if entries.is_empty() {
            "Team tasks".to_string()
        } else {
            format!("Team tasks · {done}/{} done", entries.len())
        }
    }

    fn keys_help(&self) -> String {
        "↑/↓ scroll · Ctrl+T or Esc closes".to_string()
    }

    fn key(&mut self, key: KeyEvent, _out: &mut PaneOut) -> PaneStep {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => return PaneStep::Close,
            KeyCode::Char('t') if ctrl => return PaneStep::Close,
            KeyCode::Up => self.offset = self.offset.saturating_sub(1),
            KeyCode::Down => {
                let len = self.board.entries().len();
                self.offset = (self.offset + 1).min(len.saturating_sub(1));
            }
            _ => {}
        }
        PaneStep::Stay
    }

    fn render(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let entries = self.board.entries();
        let mut lines: Vec<Line<'static>> = Vec::new();
        if entries.is_empty() {
            lines.push(Line::styled(
                "The board has no tasks yet (the lead creates them with TaskCreate).",
                theme.dim(),
            ));
        }
        let id_width = entries
            .iter()
            .map(|e| e.id.chars().count() + 1)
            .max()
            .unwrap_or(2);
        for entry in entries.iter().skip(self.offset) {
            let (mark, style) = mark(entry.status, theme);
            let mut spans = vec![
                Span::styled(format!("{mark} "), style),
                Span::styled(
                    format!("{:<id_width$} ", format!("#{}", clean_line(&entry.id))),
                    theme.bold(),
                ),
                Span::styled(format!("{:<11} ", status_words(entry.status)), style),
                Span::styled(
                    format!(
                        "{:<12} ",
                        entry.owner.as_deref().map_or("—".into(), clean_line)
                    ),
                    theme.tool(),
                ),
                Span::raw(clean_line(&entry.subject)),
            ];
            if !entry.blocked_by.is_empty() {
                let blockers: Vec<String> = entry
                    .blocked_by
                    .iter()
                    .map(|b| format!("#{}", clean_line(b)))
                    .collect();
                spans.push(Span::styled(
                    format!("  blocked by {}", blockers.join(", ")),
                    theme.warning(),
                ));
            }
            lines.extend(wrap_line(&Line::from(spans), area.width));
        }
        frame.render_widget(Paragraph::new(lines), area);
    }
}
