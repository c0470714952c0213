//! Ctrl+T: the main agent's todo list, as its latest `TodoWrite` call set
//! it. The list lives on a board the app updates from events; the pane only
//! reads it, so it shows a new list as soon as the agent writes one.

use std::sync::{Arc, Mutex};

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use serde_json::Value;

use crate::pane::{Pane, PaneOut, PaneStep};
use crate::sanitize::clean_line;
use crate::theme::Theme;

/// One entry of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Todo {
    /// What to do.
    pub content: String,
    /// `pending`, `in_progress` or `completed` (anything else shows as pending).
    pub status: String,
}

/// The entries of a `TodoWrite` call's input (`{"todos": [{content, status, …}]}`);
/// none when it is not that shape (the tool rejects such a call too).
pub fn todos_from_input(input: &Value) -> Option<Vec<Todo>> {
    input
        .get("todos")?
        .as_array()?
        .iter()
        .map(|item| {
            Some(Todo {
                content: item.get("content")?.as_str()?.to_string(),
                status: item.get("status")?.as_str()?.to_string(),
            })
        })
        .collect()
}

/// The main agent's latest todo list, shared by the app (which writes it)
/// and the pane (which shows it). None until the agent writes one.
#[derive(Debug, Clone, Default)]
pub struct TodoBoard(Arc<Mutex<Option<Vec<Todo>>>>);

impl TodoBoard {
    /// Takes the list from a `TodoWrite` call's input; an input of another shape changes nothing.
    pub fn write(&self, input: &Value) {
        if let Some(todos) = todos_from_input(input)
            && let Ok(mut list) = self.0.lock()
        {
            *list = Some(todos);
        }
    }

    /// The list now.
    pub fn list(&self) -> Option<Vec<Todo>> {
        self.0.lock().ok().and_then(|l| l.clone())
    }

    /// Forgets the list (a new session has none yet).
    pub fn clear(&self) {
        if let Ok(mut list) = self.0.lock() {
            *list = None;
        }
    }
}

/// The pane Ctrl+T opens.
pub struct TodosPane {
    board: TodoBoard,
    /// Rows scrolled down from the top.
    offset: usize,
}

impl TodosPane {
    /// A pane showing `board`.
    pub fn new(board: TodoBoard) -> TodosPane {
        TodosPane { board, offset: 0 }
    }
}

/// The mark and style of a status.
fn mark(status: &str, theme: &Theme) -> (&'static str, Style) {
    match status {
        "completed" => ("●", theme.ok()),
        "in_progress" => ("◐", theme.warning()),
        _ => ("○", theme.dim()),
    }
}

impl Pane for TodosPane {
    fn title(&self) -> String {
        match self.board.list() {
            Some(list) if !list.is_empty() => {
                let done = list.iter().filter(|t| t.status == "completed").count();
                format!("Todos · {done}/{} done", list.len())
            }
            _ => "Todos".to_string(),
        }
    }

    fn keys_help(&self) -> String {
        "↑/↓ scroll · Ctrl+T or Esc closes".to_string()
    }

    fn key(&mut self, key: KeyEvent, _out: &mut PaneOut) -> PaneStep {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => PaneStep::Close,
            KeyCode::Char('t') if ctrl => PaneStep::Close,
            KeyCode::Up => {
                self.offset = self.offset.saturating_sub(1);
                PaneStep::Stay
            }
            KeyCode::Down => {
                let len = self.board.list().map_or(0, |l| l.len());
                self.offset = (self.offset + 1).min(len.saturating_sub(1));
                PaneStep::Stay
            }
            _ => PaneStep::Stay,
        }
    }

    fn render(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let lines: Vec<Line<'static>> = match self.board.list() {
            None => vec![Line::styled(
                "No todo list yet: the agent has not written one.",
                theme.dim(),
            )],
            Some(list) if list.is_empty() => {
                vec![Line::styled("The todo list is empty.", theme.dim())]
            }
            Some(list) => list
                .iter()
                .skip(self.offset)
                .map(|todo| {
                    let (mark, style) = mark(&todo.status, theme);
                    let text_style = if todo.status == "completed" {
                        theme.dim()
                    } else {
                        Style::default()
                    };
                    Line::from(vec![
                        Span::styled(format!("{mark} "), style),
                        Span::styled(clean_line(&todo.content), text_style),
                    ])
                })
                .collect(),
        };
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_board_takes_todowrite_input_and_ignores_other_shapes() {
        let board = TodoBoard::default();
        assert_eq!(board.list(), None);
        board.write(&json!({"todos": [
            {"content": "Read the code", "status": "completed"},
            {"content": "Fix it", "status": "in_progress", "activeForm": "Fixing it"},
        ]}));
        let list = board.list().unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[1].content, "Fix it");
        assert_eq!(list[1].status, "in_progress");
        board.write(&json!({"todos": [{"content": 3}]}));
        board.write(&json!("not an object"));
        assert_eq!(
            board.list().unwrap().len(),
            2,
            "a bad input changes nothing"
        );
        board.write(&json!({"todos": []}));
        assert_eq!(board.list(), Some(Vec::new()));
        board.clear();
        assert_eq!(board.list(), None);
    }
}
