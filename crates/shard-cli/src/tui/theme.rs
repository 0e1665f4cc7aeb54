//! Colours, or none: `NO_COLOR` (any non-empty value) keeps bold, dim and reverse but
//! drops every colour, so the client stays readable on any terminal and in snapshots.

use ratatui::style::{Color, Modifier, Style};

/// How things are styled.
#[derive(Debug, Clone, Copy)]
pub struct Theme {
    color: bool,
}

impl Theme {
    /// From the environment (`NO_COLOR`).
    pub fn from_env() -> Theme {
        Theme {
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }

    /// False under `NO_COLOR`: colouring work (highlighting) can be skipped.
    pub fn coloured_output(&self) -> bool {
        self.color
    }

    /// A theme without colours (tests).
    #[cfg(test)]
    pub fn plain() -> Theme {
        Theme { color: false }
    }

    /// A theme with colours whatever the environment says (tests of colouring).
    #[cfg(test)]
    pub fn coloured() -> Theme {
        Theme { color: true }
    }

    /// A foreground colour, or nothing under `NO_COLOR`.
    pub fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    /// Secondary text.
    pub fn dim(&self) -> Style {
        self.fg(Color::DarkGray).add_modifier(Modifier::DIM)
    }

    /// Emphasis.
    pub fn bold(&self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }

    /// Errors.
    pub fn error(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    /// The user's own words.
    pub fn user(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    /// Code.
    pub fn code(&self) -> Style {
        self.fg(Color::Yellow)
    }

    /// Added diff lines.
    pub fn added(&self) -> Style {
        self.fg(Color::Green)
    }

    /// Removed diff lines.
    pub fn removed(&self) -> Style {
        self.fg(Color::Red)
    }

    /// Headings.
    pub fn heading(&self) -> Style {
        self.fg(Color::Magenta).add_modifier(Modifier::BOLD)
    }

    /// Tool names and accents.
    pub fn accent(&self) -> Style {
        self.fg(Color::Blue).add_modifier(Modifier::BOLD)
    }

    /// Keywords of highlighted code.
    pub fn keyword(&self) -> Style {
        self.fg(Color::Magenta)
    }

    /// String literals of highlighted code.
    pub fn string(&self) -> Style {
        self.fg(Color::Green)
    }

    /// Function and type names of highlighted code.
    pub fn name(&self) -> Style {
        self.fg(Color::Blue)
    }

    /// Selected item of a list.
    pub fn selected(&self) -> Style {
        Style::default().add_modifier(Modifier::REVERSED)
    }
}
