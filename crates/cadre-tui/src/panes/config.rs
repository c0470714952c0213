//! `/config`'s pane: the settings cadre honours, each with its value and
//! where it comes from. Enter on one that can be changed opens a picker of
//! its values (output style, permission mode) or puts `/config set KEY ` in
//! the prompt to type the value; the choice is written by
//! `/config set KEY VALUE`, which the host runs.

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use unicode_width::UnicodeWidthStr;

use crate::commands::{Command, ConfigCommand};
use crate::pane::{Pane, PaneOut, PaneStep};
use crate::sanitize::clean_line;
use crate::theme::Theme;

/// How a setting is changed from the pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingEdit {
    /// Not from here.
    None,
    /// By picking one of these (value, description).
    Choice(Vec<(String, String)>),
    /// By typing the value after `/config set KEY `.
    Typed,
}

/// One setting as the pane shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingRow {
    /// Its key (`outputStyle`).
    pub key: String,
    /// Its value now.
    pub value: String,
    /// Where the value comes from (a file, a flag, the default).
    pub source: String,
    /// How it is changed.
    pub edit: SettingEdit,
}

/// The settings list.
pub struct ConfigPane {
    rows: Vec<SettingRow>,
    selected: usize,
    /// The file `/config set` writes, for the pane's last line.
    user_file: String,
}

impl ConfigPane {
    /// A pane over `rows`; changes go to `user_file`.
    pub fn new(rows: Vec<SettingRow>, user_file: String) -> ConfigPane {
        ConfigPane {
            rows,
            selected: 0,
            user_file,
        }
    }
}

impl Pane for ConfigPane {
    fn title(&self) -> String {
        "Settings".to_string()
    }

    fn keys_help(&self) -> String {
        "↑/↓ move · Enter change · Esc back".to_string()
    }

    fn key(&mut self, key: KeyEvent, out: &mut PaneOut) -> PaneStep {
        let last = self.rows.len().saturating_sub(1);
        match key.code {
            KeyCode::Esc => return PaneStep::Close,
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(last),
            KeyCode::Enter => {
                let Some(row) = self.rows.get(self.selected) else {
                    return PaneStep::Stay;
                };
                match &row.edit {
                    SettingEdit::None => {}
                    SettingEdit::Typed => {
                        out.prompt = Some(format!("/config set {} ", row.key));
                        return PaneStep::CloseAll;
                    }
                    SettingEdit::Choice(choices) => {
                        let selected = choices
                            .iter()
                            .position(|(v, _)| *v == row.value)
                            .unwrap_or(0);
                        return PaneStep::Open(Box::new(ChoicePane {
                            key: row.key.clone(),
                            choices: choices.clone(),
                            selected,
                        }));
                    }
                }
            }
            _ => {}
        }
        PaneStep::Stay
    }

    fn render(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let key_w = self.rows.iter().map(|r| r.key.width()).max().unwrap_or(0);
        let value_w = self
            .rows
            .iter()
            .map(|r| clean_line(&r.value).width().min(30))
            .max()
            .unwrap_or(0);
        let mut lines: Vec<Line<'static>> = Vec::new();
        for (i, row) in self.rows.iter().enumerate() {
            let mark = if i == self.selected { "› " } else { "  " };
            let value: String = clean_line(&row.value).chars().take(30).collect();
            let pad = value_w.saturating_sub(value.width());
            let style = if i == self.selected {
                theme.bold()
            } else {
                ratatui::style::Style::default()
            };
            let edit = match row.edit {
                SettingEdit::None => "",
                _ => " ✎",
            };
            lines.push(Line::from(vec![
                Span::styled(format!("{mark}{:<key_w$}  ", row.key), style),
                Span::styled(format!("{value}{}", " ".repeat(pad)), theme.bold()),
                Span::styled(format!("  {}{edit}", clean_line(&row.source)), theme.dim()),
            ]));
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            format!(
                "changes are written to {} and apply from cadre's next start",
                clean_line(&self.user_file)
            ),
            theme.dim(),
        ));
        let height = usize::from(area.height);
        let skip = (self.selected + 1).saturating_sub(height.saturating_sub(2));
        let shown: Vec<Line<'static>> = lines.into_iter().skip(skip).collect();
        frame.render_widget(Paragraph::new(shown), area);
    }
}

/// A picker of one setting's values; Enter runs `/config set KEY VALUE`.
pub struct ChoicePane {
    key: String,
    choices: Vec<(String, String)>,
    selected: usize,
}

impl Pane for ChoicePane {
    fn title(&self) -> String {
        format!("{} ({})", self.key, self.choices.len())
    }

    fn keys_help(&self) -> String {
        "↑/↓ move · Enter choose · Esc back".to_string()
    }

    fn key(&mut self, key: KeyEvent, out: &mut PaneOut) -> PaneStep {
        let last = self.choices.len().saturating_sub(1);
        match key.code {
            KeyCode::Esc => return PaneStep::Close,
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(last),
            KeyCode::Enter => {
                if let Some((value, _)) = self.choices.get(self.selected) {
                    out.commands.push(Command::Config(ConfigCommand::Set(
                        self.key.clone(),
                        value.clone(),
                    )));
                    return PaneStep::CloseAll;
                }
            }
            _ => {}
        }
        PaneStep::Stay
    }

    fn render(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let name_w = self
            .choices
            .iter()
            .map(|(v, _)| clean_line(v).width())
            .max()
            .unwrap_or(0);
        let lines: Vec<Line<'static>> = self
            .choices
            .iter()
            .enumerate()
            .map(|(i, (value, description))| {
                let chosen = i == self.selected;
                let mark = if chosen { "› " } else { "  " };
                let style = if chosen {
                    theme.bold()
                } else {
                    ratatui::style::Style::default()
                };
                Line::from(vec![
                    Span::styled(format!("{mark}{:<name_w$}", clean_line(value)), style),
                    Span::styled(format!("  {}", clean_line(description)), theme.dim()),
                ])
            })
            .collect();
        let height = usize::from(area.height);
        let skip = (self.selected + 1).saturating_sub(height);
        let shown: Vec<Line<'static>> = lines.into_iter().skip(skip).collect();
        frame.render_widget(Paragraph::new(shown), area);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::KeyModifiers;

    fn press(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn a_choice_runs_config_set() {
        let mut pane = ConfigPane::new(
            vec![
                SettingRow {
                    key: "model".into(),
                    value: "m".into(),
                    source: "the default".into(),
                    edit: SettingEdit::Typed,
                },
                SettingRow {
                    key: "outputStyle".into(),
                    value: "Default".into(),
                    source: "the default".into(),
                    edit: SettingEdit::Choice(vec![
                        ("Default".into(), String::new()),
                        ("Explanatory".into(), "insights".into()),
                    ]),
                },
            ],
            "settings.json".into(),
        );
        let mut out = PaneOut::default();
        pane.key(press(KeyCode::Down), &mut out);
        let PaneStep::Open(mut picker) = pane.key(press(KeyCode::Enter), &mut out) else {
            panic!("no picker");
        };
        picker.key(press(KeyCode::Down), &mut out);
        assert!(matches!(
            picker.key(press(KeyCode::Enter), &mut out),
            PaneStep::CloseAll
        ));
        assert_eq!(
            out.commands,
            [Command::Config(ConfigCommand::Set(
                "outputStyle".into(),
                "Explanatory".into()
            ))]
        );
    }
}
