//! The styles of the screen. With `NO_COLOR` set every style keeps its
//! emphasis (bold, reversed) and drops its colour.

use ratatui::style::{Color, Modifier, Style};

/// Which styles to draw with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// False under `NO_COLOR`.
    pub color: bool,
}

impl Theme {
    /// Colours unless the `NO_COLOR` environment variable is set and not empty.
    pub fn from_env() -> Theme {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Theme { color: !no_color }
    }

    fn fg(&self, color: Color) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new()
        }
    }

    /// The user's own messages.
    pub fn user(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
    /// Headings in Markdown.
    pub fn heading(&self) -> Style {
        self.fg(Color::Magenta).add_modifier(Modifier::BOLD)
    }
    /// Code blocks and inline code.
    pub fn code(&self) -> Style {
        self.fg(Color::Yellow)
    }
    /// Secondary text: outcomes, hints, list bullets.
    pub fn dim(&self) -> Style {
        if self.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new()
        }
    }
    /// Tool call lines.
    pub fn tool(&self) -> Style {
        self.fg(Color::Blue).add_modifier(Modifier::BOLD)
    }
    /// Failures and denials.
    pub fn error(&self) -> Style {
        self.fg(Color::Red)
    }
    /// Warnings.
    pub fn warning(&self) -> Style {
        self.fg(Color::Yellow)
    }
    /// Success marks.
    pub fn ok(&self) -> Style {
        self.fg(Color::Green)
    }
    /// Added lines of a diff.
    pub fn added(&self) -> Style {
        self.fg(Color::Green)
    }
    /// Removed lines of a diff.
    pub fn removed(&self) -> Style {
        self.fg(Color::Red)
    }
    /// Hunk headers of a diff.
    pub fn hunk(&self) -> Style {
        self.fg(Color::Cyan)
    }
    /// The status line.
    pub fn status(&self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }
    /// Borders of panels and dialogs.
    pub fn border(&self) -> Style {
        self.fg(Color::Yellow)
    }
    /// Emphasis (bold) without colour.
    pub fn bold(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }
    /// A child's agent type in the panel: its definition's colour is not in
    /// the events yet, so a stable colour per type name.
    pub fn agent_type(&self, name: &str) -> Style {
        const PALETTE: [Color; 6] = [
            Color::Cyan,
            Color::Magenta,
            Color::Green,
            Color::Yellow,
            Color::Blue,
            Color::LightRed,
        ];
        let sum: usize = name.bytes().map(usize::from).sum();
        self.fg(PALETTE[sum % PALETTE.len()])
            .add_modifier(Modifier::BOLD)
    }
}
