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
    /// An agent type with no colour of its own: a stable colour per name.
    pub fn agent_type(&self, name: &str) -> Style {
        self.agent_type_in(name, None)
    }

    /// An agent type shown in its definition's `color` when that is one of
    /// Claude Code's eight, otherwise in the colour its name hashes to.
    pub fn agent_type_in(&self, name: &str, color: Option<&str>) -> Style {
        if let Some(named) = color.and_then(definition_color) {
            return self.fg(named).add_modifier(Modifier::BOLD);
        }
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

/// The terminal colour for a definition's `color` (Claude Code's eight names).
pub fn definition_color(name: &str) -> Option<Color> {
    Some(match name {
        "red" => Color::Red,
        "blue" => Color::Blue,
        "green" => Color::Green,
        "yellow" => Color::Yellow,
        "purple" => Color::Magenta,
        // The 256-colour palette's orange and pink: the 16 basic colours have neither.
        "orange" => Color::Indexed(208),
        "pink" => Color::Indexed(211),
        "cyan" => Color::Cyan,
        _ => return None,
    })
}
