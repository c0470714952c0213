//! Esc twice on an empty prompt: pick one of the messages sent in this
//! screen to go back to. The conversation returns to just before it
//! (`Op::Rewind`) and the message comes back into the prompt for editing;
//! files changed since are not changed back, and the pane says so.

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::pane::{Pane, PaneOut, PaneStep};
use crate::sanitize::clean_line;
use crate::theme::Theme;
use cadre_core::protocol::Op;

/// The picker: the messages sent, the most recent first.
pub struct RewindPicker {
    /// Messages sent, oldest first.
    sent: Vec<String>,
    /// Index into `sent` of the one selected.
    selected: usize,
}

impl RewindPicker {
    /// A picker over `sent` (oldest first; at least one), the most recent selected.
    pub fn new(sent: Vec<String>) -> RewindPicker {
        let selected = sent.len().saturating_sub(1);
        RewindPicker { sent, selected }
    }

    /// The selected message and how many later sends of the same text there are.
    pub fn choice(&self) -> Option<(String, usize)> {
        let text = self.sent.get(self.selected)?;
        let later_same = self.sent[self.selected + 1..]
            .iter()
            .filter(|t| *t == text)
            .count();
        Some((text.clone(), later_same))
    }
}

impl Pane for RewindPicker {
    fn title(&self) -> String {
        "Go back to before a message".into()
    }

    fn keys_help(&self) -> String {
        "↑/↓ choose · Enter go back · Esc cancel".into()
    }

    fn key(&mut self, key: KeyEvent, out: &mut PaneOut) -> PaneStep {
        match key.code {
            KeyCode::Esc => PaneStep::Close,
            KeyCode::Up => {
                self.selected = self.selected.saturating_sub(1);
                PaneStep::Stay
            }
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(self.sent.len().saturating_sub(1));
                PaneStep::Stay
            }
            KeyCode::Enter => {
                if let Some((prompt, later_same)) = self.choice() {
                    out.ops.push(Op::Rewind { prompt, later_same });
                }
                PaneStep::CloseAll
            }
            _ => PaneStep::Stay,
        }
    }

    fn render(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let mut lines = vec![
            Line::styled(
                "The conversation goes back to just before the message you pick; it returns to the prompt to edit. Files changed since stay as they are.",
                theme.dim(),
            ),
            Line::default(),
        ];
        let rows = usize::from(area.height.saturating_sub(2)).max(1);
        // Newest at the top, the selection kept in view.
        let order: Vec<usize> = (0..self.sent.len()).rev().collect();
        let at = order.iter().position(|i| *i == self.selected).unwrap_or(0);
        let first = (at + 1).saturating_sub(rows);
        for &i in order.iter().skip(first).take(rows) {
            let text = self.sent.get(i).map(String::as_str).unwrap_or_default();
            let first_line = clean_line(text.lines().next().unwrap_or_default());
            let more = text.lines().count().saturating_sub(1);
            let mark = if i == self.selected { "› " } else { "  " };
            let style = if i == self.selected {
                ratatui::style::Style::new().add_modifier(ratatui::style::Modifier::REVERSED)
            } else {
                ratatui::style::Style::new()
            };
            let mut spans = vec![Span::styled(format!("{mark}{first_line}"), style)];
            if more > 0 {
                spans.push(Span::styled(format!("  (+{more} lines)"), theme.dim()));
            }
            lines.push(Line::from(spans));
        }
        frame.render_widget(
            Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false }),
            area,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::KeyModifiers;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn enter_goes_back_to_the_chosen_send() {
        let mut picker = RewindPicker::new(vec!["fix".into(), "test".into(), "fix".into()]);
        let mut out = PaneOut::default();
        // The most recent is selected; ↑ goes to older ones.
        picker.key(key(KeyCode::Up), &mut out);
        picker.key(key(KeyCode::Up), &mut out);
        assert!(matches!(
            picker.key(key(KeyCode::Enter), &mut out),
            PaneStep::CloseAll
        ));
        assert_eq!(
            out.ops,
            [Op::Rewind {
                prompt: "fix".into(),
                later_same: 1
            }]
        );
        let mut out = PaneOut::default();
        assert!(matches!(
            picker.key(key(KeyCode::Esc), &mut out),
            PaneStep::Close
        ));
        assert!(out.ops.is_empty());
    }
}
