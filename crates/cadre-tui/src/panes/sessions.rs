//! `/resume`'s panes: the picker of past sessions (this project's first;
//! Enter resumes one) and the question asked before resuming a session
//! whose calls may have run when it stopped.

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use tokio::sync::oneshot;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::children::format_tokens;
use crate::commands::Command;
use crate::pane::{Pane, PaneOut, PaneStep};
use crate::sanitize::{clean_line, clean_lines};
use crate::theme::Theme;

/// A past session as the picker lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    /// Session id.
    pub id: String,
    /// Start time, ms since the Unix epoch.
    pub started_ms: u64,
    /// When it started, as shown (`2026-12-01 05:40`, UTC).
    pub started: String,
    /// Its first prompt (empty when it has none).
    pub first_prompt: String,
    /// Tokens it used, subagents included.
    pub tokens: u64,
    /// What it cost, when known (`$0.0123`).
    pub cost: Option<String>,
    /// The directory it ran in.
    pub cwd: String,
    /// True when it ran in this project's directory.
    pub this_project: bool,
}

/// The picker: typing narrows the list (by first prompt, id or
/// directory), ↑/↓ move, Enter resumes the selected session, Esc closes.
pub struct SessionPicker {
    rows: Vec<SessionRow>,
    /// What was typed to search.
    query: String,
    /// Indexes into `rows` of the sessions that match `query`, in order.
    shown: Vec<usize>,
    /// The selected one, as an index into `shown`.
    selected: usize,
    now_ms: u64,
}

impl SessionPicker {
    /// A picker over `rows` (the session shown now is left out by the
    /// caller): this project's sessions first, each group newest first.
    /// `now_ms` is the time ages are counted from.
    pub fn new(mut rows: Vec<SessionRow>, now_ms: u64) -> SessionPicker {
        rows.sort_by(|a, b| {
            b.this_project
                .cmp(&a.this_project)
                .then(b.started_ms.cmp(&a.started_ms))
                .then(b.id.cmp(&a.id))
        });
        SessionPicker {
            shown: (0..rows.len()).collect(),
            rows,
            query: String::new(),
            selected: 0,
            now_ms,
        }
    }

    /// The sessions shown (those matching the search), in order.
    pub fn rows(&self) -> Vec<&SessionRow> {
        self.shown
            .iter()
            .filter_map(|&i| self.rows.get(i))
            .collect()
    }

    /// The index of the selected session among those shown.
    pub fn selected(&self) -> usize {
        self.selected
    }

    /// Narrows the list to the sessions matching the search (any case).
    fn search(&mut self) {
        let query = self.query.to_lowercase();
        self.shown = (0..self.rows.len())
            .filter(|&i| {
                let r = &self.rows[i];
                query.is_empty()
                    || [&r.first_prompt, &r.id, &r.cwd]
                        .iter()
                        .any(|field| field.to_lowercase().contains(&query))
            })
            .collect();
        self.selected = 0;
    }

    /// The lines one session takes, each cut to `width`: its first prompt,
    /// then when, tokens, where (another directory) and its id.
    fn session_lines(
        &self,
        row: &SessionRow,
        selected: bool,
        width: usize,
        theme: &Theme,
    ) -> [Line<'static>; 2] {
        let marker = if selected { "› " } else { "  " };
        let room = width.saturating_sub(2);
        let prompt = if row.first_prompt.trim().is_empty() {
            Span::styled("(no messages)", theme.dim())
        } else {
            let flat = row.first_prompt.split_whitespace().collect::<Vec<_>>();
            Span::styled(
                cut(&clean_line(&flat.join(" ")), room),
                if selected { theme.bold() } else { theme.user() },
            )
        };
        // The date goes first when the line is too long: the age says enough.
        let about = [true, false]
            .into_iter()
            .map(|with_date| self.about(row, with_date))
            .find(|a| a.width() <= room)
            .unwrap_or_else(|| self.about(row, false));
        [
            Line::from(vec![Span::styled(marker, theme.bold()), prompt]),
            Line::from(vec![
                Span::raw("  "),
                Span::styled(cut(&about, room), theme.dim()),
            ]),
        ]
    }
}

impl SessionPicker {
    /// `5m ago · 2026-12-01 05:40 · 12.3k tokens · $0.01 · in DIR · ID`.
    fn about(&self, row: &SessionRow, with_date: bool) -> String {
        let mut about = age(self.now_ms.saturating_sub(row.started_ms));
        if with_date {
            about.push_str(&format!(" · {}", row.started));
        }
        about.push_str(&format!(" · {} tokens", format_tokens(row.tokens)));
        if let Some(cost) = &row.cost {
            about.push_str(&format!(" · {cost}"));
        }
        if !row.this_project {
            about.push_str(&format!(" · in {}", row.cwd));
        }
        about.push_str(&format!(" · {}", row.id));
        clean_line(&about)
    }
}

/// `text` cut to `width` columns, ending in `…` when cut.
fn cut(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// `just now`, `5m ago`, `3h ago`, `2d ago`.
fn age(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0..60 => "just now".to_string(),
        60..3600 => format!("{}m ago", secs / 60),
        3600..86_400 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

/// Lines a session takes in the picker.
const ROWS_PER_SESSION: usize = 2;

impl Pane for SessionPicker {
    fn title(&self) -> String {
        if self.query.is_empty() {
            format!("Resume a session ({})", self.rows.len())
        } else {
            format!(
                "Resume a session ({} of {})",
                self.shown.len(),
                self.rows.len()
            )
        }
    }

    fn keys_help(&self) -> String {
        "type to search · ↑/↓ move · Enter resume · Esc back".to_string()
    }

    fn key(&mut self, key: KeyEvent, out: &mut PaneOut) -> PaneStep {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let last = self.shown.len().saturating_sub(1);
        match key.code {
            KeyCode::Esc => return PaneStep::Close,
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Char('p') if ctrl => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(last),
            KeyCode::Char('n') if ctrl => self.selected = (self.selected + 1).min(last),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = last,
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(5),
            KeyCode::PageDown => self.selected = (self.selected + 5).min(last),
            KeyCode::Char('u') if ctrl => {
                self.query.clear();
                self.search();
            }
            KeyCode::Char(c) if !ctrl => {
                self.query.push(c);
                self.search();
            }
            KeyCode::Backspace if self.query.pop().is_some() => self.search(),
            KeyCode::Enter => {
                let chosen = self
                    .shown
                    .get(self.selected)
                    .and_then(|&i| self.rows.get(i));
                if let Some(row) = chosen {
                    out.commands.push(Command::Resume(Some(row.id.clone())));
                    return PaneStep::Close;
                }
            }
            _ => {}
        }
        PaneStep::Stay
    }

    fn render(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let mut lines: Vec<Line<'static>> = Vec::new();
        if !self.query.is_empty() {
            lines.push(Line::from(vec![
                Span::styled("search: ", theme.dim()),
                Span::styled(
                    cut(
                        &clean_line(&self.query),
                        usize::from(area.width).saturating_sub(8),
                    ),
                    theme.bold(),
                ),
            ]));
        }
        if self.shown.is_empty() {
            let none = if self.rows.is_empty() {
                "no other sessions to resume"
            } else {
                "no session matches"
            };
            lines.push(Line::styled(none, theme.dim()));
            frame.render_widget(Paragraph::new(lines), area);
            return;
        }
        // Whole sessions, scrolled so the selected one is always in view.
        let room = usize::from(area.height).saturating_sub(lines.len());
        let fits = (room / ROWS_PER_SESSION).max(1);
        let first = self.selected.saturating_sub(fits - 1);
        lines.extend(
            self.rows()
                .into_iter()
                .enumerate()
                .skip(first)
                .take(fits)
                // Long lines are cut at the edge: a session stays two rows.
                .flat_map(|(i, row)| {
                    self.session_lines(row, i == self.selected, usize::from(area.width), theme)
                }),
        );
        frame.render_widget(Paragraph::new(lines), area);
    }
}

/// Asked before resuming a session whose calls may have run: `y` resumes
/// (they are recorded as `unknown`, never run again), `n` or Esc stays in
/// the session shown now. The answer goes back to whoever asked.
pub struct ResumeConfirm {
    id: String,
    calls: Vec<String>,
    answer: Option<oneshot::Sender<bool>>,
}

impl ResumeConfirm {
    /// Asks about resuming `id`, listing `calls` (one line each); the answer
    /// is sent on `answer` (closing the pane any other way says no).
    pub fn new(id: String, calls: Vec<String>, answer: oneshot::Sender<bool>) -> ResumeConfirm {
        ResumeConfirm {
            id,
            calls,
            answer: Some(answer),
        }
    }

    fn answer(&mut self, yes: bool) -> PaneStep {
        if let Some(tx) = self.answer.take() {
            // The asker may be gone (cadre is leaving): nothing to tell then.
            let _ = tx.send(yes);
        }
        PaneStep::Close
    }
}

impl Pane for ResumeConfirm {
    fn title(&self) -> String {
        format!("Resume session {}?", self.id)
    }

    fn keys_help(&self) -> String {
        "y resume · n or Esc stay in this session".to_string()
    }

    fn key(&mut self, key: KeyEvent, _out: &mut PaneOut) -> PaneStep {
        match key.code {
            KeyCode::Char('y' | 'Y') => self.answer(true),
            KeyCode::Char('n' | 'N') | KeyCode::Esc => self.answer(false),
            _ => PaneStep::Stay,
        }
    }

    fn render(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let mut lines = vec![Line::from(
            "cadre stopped while these calls were running; they may or may not have run:",
        )];
        for call in &self.calls {
            for line in clean_lines(call) {
                lines.push(Line::styled(format!("  {line}"), theme.code()));
            }
        }
        lines.push(Line::from(
            "They will be recorded as `unknown` and not run again.",
        ));
        lines.push(Line::from(""));
        lines.push(Line::styled(
            "Continue that session? [y] yes · [n] no, stay in this one",
            theme.bold(),
        ));
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), area);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_cut_lines() {
        assert_eq!(age(59_000), "just now");
        assert_eq!(age(61_000), "1m ago");
        assert_eq!(age(2 * 3_600_000), "2h ago");
        assert_eq!(age(3 * 86_400_000), "3d ago");
        assert_eq!(cut("abcdef", 6), "abcdef");
        assert_eq!(cut("abcdefg", 6), "abcde…");
        // Wide characters count two columns.
        assert_eq!(cut("日本語です", 6), "日本…");
    }
}
