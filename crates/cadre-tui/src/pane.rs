//! Panes: the screens a command opens over the transcript (`/tasks`, a
//! child's live transcript, `/agents`, `/resume`'s picker…). Panes stack:
//! the top one takes the keys and Esc closes it, back to the one below or
//! the conversation. A pane is a plain object, drawn from its own state; one
//! that shows live data refreshes itself when the loop asks.

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;

use crate::commands::Command;
use crate::theme::Theme;
use cadre_core::protocol::Op;

/// What a pane asks for after a key, beyond changing itself.
#[derive(Default)]
pub struct PaneOut {
    /// Operations for the session.
    pub ops: Vec<Op>,
    /// Commands to run as if typed (e.g. `/resume ID` from a picker).
    pub commands: Vec<Command>,
    /// Lines for the transcript, once the pane is closed.
    pub notices: Vec<String>,
    /// Text for the prompt (replacing what is typed).
    pub prompt: Option<String>,
}

/// What happens to the pane after a key.
pub enum PaneStep {
    /// It stays on top.
    Stay,
    /// It closes.
    Close,
    /// Another opens over it (Esc comes back here).
    Open(Box<dyn Pane>),
    /// Every pane closes (back to the conversation).
    CloseAll,
}

/// A screen over the transcript.
pub trait Pane: Send {
    /// Its title, drawn in its border.
    fn title(&self) -> String;
    /// The keys it takes, for its bottom line (`Enter open · x stop · Esc back`).
    fn keys_help(&self) -> String;
    /// Handles a key (Esc is the pane's to handle too: most close).
    fn key(&mut self, key: KeyEvent, out: &mut PaneOut) -> PaneStep;
    /// Draws its content inside `area` (the border is drawn around it).
    fn render(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme);
    /// Picks up live data; true when what it shows changed. Called on the
    /// loop's ticks while it is on top.
    fn refresh(&mut self) -> bool {
        false
    }
    /// True while it shows data that can change (the loop ticks for it).
    fn live(&self) -> bool {
        false
    }
    /// The teammate it shows, if it shows one: while it is on top, what the
    /// user types goes to that teammate (the app handles those keys).
    fn teammate(&self) -> Option<String> {
        None
    }
}

/// The stack of open panes, the top last.
#[derive(Default)]
pub struct Panes {
    stack: Vec<Box<dyn Pane>>,
}

impl std::fmt::Debug for Panes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.stack.iter().map(|p| p.title()))
            .finish()
    }
}

impl Panes {
    /// The pane on top.
    pub fn top(&self) -> Option<&dyn Pane> {
        self.stack.last().map(|p| p.as_ref())
    }

    /// The pane on top, to change.
    pub fn top_mut(&mut self) -> Option<&mut Box<dyn Pane>> {
        self.stack.last_mut()
    }

    /// Opens a pane over the others.
    pub fn open(&mut self, pane: Box<dyn Pane>) {
        self.stack.push(pane);
    }

    /// True when none is open.
    pub fn is_empty(&self) -> bool {
        self.stack.is_empty()
    }

    /// How many are open.
    pub fn len(&self) -> usize {
        self.stack.len()
    }

    /// Closes every pane.
    pub fn clear(&mut self) {
        self.stack.clear();
    }

    /// Gives the top pane a key and applies its step.
    pub fn key(&mut self, key: KeyEvent, out: &mut PaneOut) {
        let Some(top) = self.stack.last_mut() else {
            return;
        };
        match top.key(key, out) {
            PaneStep::Stay => {}
            PaneStep::Close => {
                self.stack.pop();
            }
            PaneStep::Open(pane) => self.stack.push(pane),
            PaneStep::CloseAll => self.stack.clear(),
        }
    }
}
