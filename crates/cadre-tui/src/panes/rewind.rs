//! Esc twice on an empty prompt, or `/rewind` (`/undo`, `/checkpoint`):
//! pick one of the messages sent in this screen, then what goes back to
//! before it: the code and the conversation, the conversation, the code, or
//! a summary from there (`Op::Rewind`). After the conversation goes back
//! the message returns to the prompt for editing. A code restore that would
//! overwrite files changed outside cadre asks first, listing them.

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::pane::{Pane, PaneOut, PaneStep};
use crate::sanitize::clean_line;
use crate::theme::Theme;
use cadre_core::protocol::{Op, RewindAction, SkippedFile};

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
        "↑/↓ choose · Enter choose what goes back · Esc cancel".into()
    }

    fn key(&mut self, key: KeyEvent, _out: &mut PaneOut) -> PaneStep {
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
            KeyCode::Enter => match self.choice() {
                Some((prompt, later_same)) => {
                    PaneStep::Open(Box::new(RewindActions::new(prompt, later_same)))
                }
                None => PaneStep::CloseAll,
            },
            _ => PaneStep::Stay,
        }
    }

    fn render(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let mut lines = vec![
            Line::styled(
                "Pick the message to go back to before; then choose whether the code, the conversation or both go back.",
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

/// The choices after a message is picked, in the order shown.
const ACTIONS: [(Option<RewindAction>, &str); 5] = [
    (Some(RewindAction::Both), "Restore code and conversation"),
    (Some(RewindAction::Conversation), "Restore conversation"),
    (Some(RewindAction::Code), "Restore code"),
    (Some(RewindAction::Summarize), "Summarize from here"),
    (None, "Never mind"),
];

/// What goes back to before the picked message.
pub struct RewindActions {
    prompt: String,
    later_same: usize,
    selected: usize,
}

impl RewindActions {
    /// The choices for going back to before `prompt` (`later_same` later sends skipped).
    pub fn new(prompt: String, later_same: usize) -> RewindActions {
        RewindActions {
            prompt,
            later_same,
            selected: 0,
        }
    }
}

impl Pane for RewindActions {
    fn title(&self) -> String {
        "Rewind".into()
    }

    fn keys_help(&self) -> String {
        "↑/↓ choose · Enter do it · Esc back".into()
    }

    fn key(&mut self, key: KeyEvent, out: &mut PaneOut) -> PaneStep {
        match key.code {
            KeyCode::Esc => PaneStep::Close,
            KeyCode::Up => {
                self.selected = self.selected.saturating_sub(1);
                PaneStep::Stay
            }
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(ACTIONS.len() - 1);
                PaneStep::Stay
            }
            KeyCode::Char(c @ '1'..='5') => {
                self.selected = usize::from(c as u8 - b'1');
                self.key(KeyEvent::from(KeyCode::Enter), out)
            }
            KeyCode::Enter => {
                if let Some((Some(action), _)) = ACTIONS.get(self.selected) {
                    out.ops.push(Op::Rewind {
                        prompt: self.prompt.clone(),
                        later_same: self.later_same,
                        action: *action,
                        overwrite: false,
                    });
                }
                PaneStep::CloseAll
            }
            _ => PaneStep::Stay,
        }
    }

    fn render(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let first = clean_line(self.prompt.lines().next().unwrap_or_default());
        let mut lines = vec![
            Line::styled(format!("Go back to before: {first}"), theme.dim()),
            Line::default(),
        ];
        for (i, (_, label)) in ACTIONS.iter().enumerate() {
            let style = if i == self.selected {
                ratatui::style::Style::new().add_modifier(ratatui::style::Modifier::REVERSED)
            } else {
                ratatui::style::Style::new()
            };
            let mark = if i == self.selected { "› " } else { "  " };
            lines.push(Line::styled(format!("{mark}{}. {label}", i + 1), style));
        }
        lines.push(Line::default());
        lines.push(Line::styled(
            "Only the file tools' changes are restored: not what Bash commands changed, nor symlinked or hard-linked files.",
            theme.dim(),
        ));
        frame.render_widget(
            Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false }),
            area,
        );
    }
}

/// A code restore would overwrite files changed outside cadre: overwrite
/// them, or leave everything as it is.
pub struct RewindConfirm {
    prompt: String,
    later_same: usize,
    action: RewindAction,
    files: Vec<String>,
}

impl RewindConfirm {
    /// The question for a `rewind_needs_confirmation` event.
    pub fn new(
        prompt: String,
        later_same: usize,
        action: RewindAction,
        files: Vec<String>,
    ) -> RewindConfirm {
        RewindConfirm {
            prompt,
            later_same,
            action,
            files,
        }
    }
}

impl Pane for RewindConfirm {
    fn title(&self) -> String {
        "Files changed outside cadre".into()
    }

    fn keys_help(&self) -> String {
        "y overwrite them · n/Esc keep everything as it is".into()
    }

    fn key(&mut self, key: KeyEvent, out: &mut PaneOut) -> PaneStep {
        match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') => {
                out.ops.push(Op::Rewind {
                    prompt: self.prompt.clone(),
                    later_same: self.later_same,
                    action: self.action,
                    overwrite: true,
                });
                PaneStep::CloseAll
            }
            KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc => {
                out.notices
                    .push("nothing was restored: the files changed outside cadre are kept".into());
                PaneStep::CloseAll
            }
            _ => PaneStep::Stay,
        }
    }

    fn render(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let mut lines = vec![
            Line::from(
                "These files changed outside cadre since cadre last wrote them; restoring the code overwrites them:",
            ),
            Line::default(),
        ];
        for f in &self.files {
            lines.push(Line::from(format!("  {}", clean_line(f))));
        }
        lines.push(Line::default());
        lines.push(Line::styled(
            "Overwrite them? y restores the code anyway · n keeps everything as it is",
            theme.dim(),
        ));
        frame.render_widget(
            Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false }),
            area,
        );
    }
}

/// What a code restore did, in lines: the files written back and removed,
/// and what it could not bring back. Both front ends show these.
pub fn restored_lines(
    restored: &[String],
    removed: &[String],
    skipped: &[SkippedFile],
    bash_commands: &[String],
) -> Vec<String> {
    let mut out = Vec::new();
    if restored.is_empty() && removed.is_empty() {
        out.push("restored the code: no file needed changing".to_string());
    } else {
        out.push(format!(
            "restored the code: {} file(s) written back, {} removed",
            restored.len(),
            removed.len()
        ));
    }
    out.extend(restored.iter().map(|f| format!("  restored {f}")));
    out.extend(removed.iter().map(|f| format!("  removed  {f}")));
    if !skipped.is_empty() {
        out.push(format!(
            "restored the code, but skipped {} file(s):",
            skipped.len()
        ));
        out.extend(
            skipped
                .iter()
                .map(|s| format!("  {} ({})", s.path, s.reason)),
        );
    }
    if !bash_commands.is_empty() {
        out.push("not restored: what these Bash commands changed (Bash is not tracked):".into());
        out.extend(bash_commands.iter().map(|c| format!("  $ {c}")));
    }
    out
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
        let PaneStep::Open(mut actions) = picker.key(key(KeyCode::Enter), &mut out) else {
            panic!("the actions open");
        };
        assert!(out.ops.is_empty());
        // The third choice: the code only.
        actions.key(key(KeyCode::Down), &mut out);
        actions.key(key(KeyCode::Down), &mut out);
        assert!(matches!(
            actions.key(key(KeyCode::Enter), &mut out),
            PaneStep::CloseAll
        ));
        assert_eq!(
            out.ops,
            [Op::Rewind {
                prompt: "fix".into(),
                later_same: 1,
                action: RewindAction::Code,
                overwrite: false,
            }]
        );
        // Never mind sends nothing.
        let mut out = PaneOut::default();
        let mut actions = RewindActions::new("fix".into(), 0);
        assert!(matches!(
            actions.key(key(KeyCode::Char('5')), &mut out),
            PaneStep::CloseAll
        ));
        assert!(out.ops.is_empty());
        // The question after it sends the same rewind, overwriting.
        let mut confirm = RewindConfirm::new("fix".into(), 0, RewindAction::Both, vec!["a".into()]);
        confirm.key(key(KeyCode::Char('y')), &mut out);
        assert_eq!(
            out.ops,
            [Op::Rewind {
                prompt: "fix".into(),
                later_same: 0,
                action: RewindAction::Both,
                overwrite: true,
            }]
        );
        let mut out = PaneOut::default();
        let mut picker = RewindPicker::new(vec!["fix".into()]);
        assert!(matches!(
            picker.key(key(KeyCode::Esc), &mut out),
            PaneStep::Close
        ));
        assert!(out.ops.is_empty());
    }
}
