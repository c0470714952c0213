//! Steering the team from the full screen: `/team` and `@name message`,
//! the panel's teammate rows (select, open, interrupt, stop), and what the
//! keys do while a teammate's transcript is on top.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;

impl App {
    /// `/team` and `@name message` (a session with a team); true when the
    /// line was one of them (the prompt is then cleared).
    pub(super) fn team_line(&mut self, text: &str) -> bool {
        let names: Vec<String> = self.team.members.iter().map(|m| m.name.clone()).collect();
        let root = self.info.root.clone();
        let is_path = |word: &str| !root.as_os_str().is_empty() && root.join(word).exists();
        let Some(input) = crate::team::parse_team_input(text, &names, is_path) else {
            return false;
        };
        self.remember(text);
        match input {
            TeamInput::Show => {
                self.transcript.notice(Level::Info, "/team");
                let text = crate::team::describe(&self.team.members, &self.team.board.entries());
                self.transcript.notice(Level::Info, text);
            }
            TeamInput::Message { name, text } => self.message_teammate(&name, text),
            TeamInput::UnknownName(name) => self.transcript.notice(
                Level::Warning,
                crate::team::unknown_name_error(&name, &names),
            ),
        }
        self.prompt.take();
        self.scroll = 0;
        true
    }

    /// Keeps a submitted line in ↑'s history.
    pub(super) fn remember(&mut self, text: &str) {
        if !text.trim().is_empty() && self.history.last().map(String::as_str) != Some(text) {
            self.history.push(text.to_string());
            self.history_added.push(text.to_string());
        }
        self.history_at = None;
        self.draft.clear();
    }

    /// Sends the user's words to teammate `name` (its next input; it wakes if resting).
    pub fn message_teammate(&mut self, name: &str, text: String) {
        self.transcript
            .notice(Level::Info, format!("✉ you → {name}: {text}"));
        self.outbox.push(Op::MessageTeammate {
            name: name.to_string(),
            text,
        });
    }

    /// Keeps the panel's selection on a row that exists.
    pub(super) fn clamp_team_focus(&mut self) {
        let len = self.team.members.len();
        self.team_focus = match self.team_focus {
            _ if len == 0 => None,
            Some(i) => Some(i.min(len - 1)),
            None => None,
        };
    }

    /// The teammate selected in the panel.
    pub fn focused_teammate(&self) -> Option<&crate::team::Member> {
        self.team_focus.and_then(|i| self.team.members.get(i))
    }

    /// A key while the panel has them; true when it took the key. ↑/↓
    /// select (↑ from the first row back to the prompt), Enter opens the
    /// teammate's transcript, Esc interrupts its turn, `x` stops it; any
    /// other key goes back to the prompt.
    pub(super) fn panel_key(&mut self, key: KeyEvent) -> bool {
        let Some(member) = self.focused_teammate().cloned() else {
            self.team_focus = None;
            return false;
        };
        let at = self.team_focus.unwrap_or(0);
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Up if at == 0 => self.team_focus = None,
            KeyCode::Up => self.team_focus = Some(at - 1),
            KeyCode::Down => {
                self.team_focus = Some((at + 1).min(self.team.members.len().saturating_sub(1)))
            }
            KeyCode::Enter => {
                self.host_pending += 1;
                self.requests.push(HostRequest::Teammate(member.name));
            }
            KeyCode::Esc => self.interrupt_teammate(&member),
            KeyCode::Char('x') if !ctrl => self.stop_teammate(&member.name),
            _ => {
                self.team_focus = None;
                return false;
            }
        }
        true
    }

    /// Esc on a teammate: its turn stops (it rests until its next message).
    pub(super) fn interrupt_teammate(&mut self, member: &crate::team::Member) {
        if member.state == TeammateState::Working {
            self.outbox.push(Op::InterruptTeammate {
                name: member.name.clone(),
            });
            self.hint = Some(format!("interrupting {}…", member.name));
        } else {
            self.hint = Some(format!(
                "{} is {}: nothing to interrupt",
                member.name,
                member.state.as_str()
            ));
        }
    }

    /// `x` on a teammate: it ends (and takes no more messages).
    pub(super) fn stop_teammate(&mut self, name: &str) {
        if self
            .team
            .member(name)
            .is_some_and(|m| m.state == TeammateState::Ended)
        {
            self.hint = Some(format!("{name} has ended already"));
            return;
        }
        self.outbox.push(Op::StopTeammate {
            name: name.to_string(),
        });
        self.transcript
            .notice(Level::Info, format!("stopping teammate {name}…"));
        self.hint = Some(format!("stopping {name}…"));
    }

    /// A key while teammate `name`'s transcript is on top; true when taken
    /// here (typing goes to the prompt, Enter sends it to the teammate, Esc
    /// interrupts it, `x` on an empty prompt stops it), false for the pane
    /// (scrolling; Esc back once it rests).
    pub(super) fn teammate_key(&mut self, name: &str, key: KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let member = self.team.member(name).cloned();
        match key.code {
            KeyCode::Esc => match member {
                Some(m) if m.state == TeammateState::Working => {
                    self.interrupt_teammate(&m);
                    true
                }
                _ => false,
            },
            KeyCode::Enter
                if key
                    .modifiers
                    .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) =>
            {
                self.prompt.insert("\n");
                true
            }
            KeyCode::Enter => {
                self.submit_to_teammate(name);
                true
            }
            KeyCode::Char('x') if !ctrl && self.prompt.is_empty() => {
                self.stop_teammate(name);
                true
            }
            KeyCode::Char('j') if ctrl => {
                self.prompt.insert("\n");
                true
            }
            KeyCode::Char('a') if ctrl => {
                self.prompt.home();
                true
            }
            KeyCode::Char('e') if ctrl => {
                self.prompt.end();
                true
            }
            KeyCode::Char('u') if ctrl => {
                self.prompt.kill_to_line_start();
                true
            }
            KeyCode::Char('w') if ctrl => {
                self.prompt.delete_word();
                true
            }
            KeyCode::Char(c) if !ctrl => {
                self.prompt.insert(c.encode_utf8(&mut [0; 4]));
                true
            }
            KeyCode::Backspace => {
                self.prompt.backspace();
                true
            }
            KeyCode::Delete => {
                self.prompt.delete();
                true
            }
            KeyCode::Left => {
                self.prompt.left();
                true
            }
            KeyCode::Right => {
                self.prompt.right();
                true
            }
            _ => false,
        }
    }

    /// Enter while a teammate's transcript is on top: built-in commands
    /// still run in the lead's session; anything else (skills too) goes to
    /// the teammate.
    pub(super) fn submit_to_teammate(&mut self, name: &str) {
        let text = self.prompt.expanded();
        if self.team_line(&text) {
            return;
        }
        match parse(&text) {
            Input::Empty => {}
            Input::Command(_) | Input::Usage(_) | Input::Shell(_) => {
                // Run where it runs without a pane (the pane stays open).
                self.submit();
                return;
            }
            Input::Message(_) | Input::Unknown(_) => {
                self.remember(&text);
                self.message_teammate(name, text.trim().to_string());
                self.hint = Some(format!("sent to {name}"));
            }
        }
        self.prompt.take();
    }
}
