//! Parsing one agent definition: a Markdown file with YAML frontmatter, in
//! Claude Code's `.claude/agents/*.md` format (a user's existing files must
//! load unchanged), or the JSON object of the `--agents` flag.
//!
//! Parsing never fails as a whole: problems become [`DefinitionIssue`]s and a
//! file is either loaded (possibly with warnings) or skipped with its reason.

mod fields;
mod frontmatter;
mod tool_list;

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

use super::AgentDefinition;

pub(crate) use fields::blank_definition;
pub use fields::{COLORS, EFFORTS, PERMISSION_MODES};
pub use frontmatter::{definitions_from_json, parse_definition};
pub use tool_list::{normalize_tool_name, parse_tool_list};

/// How serious an issue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IssueLevel {
    /// The file is skipped.
    Error,
    /// The file is loaded, but something in it is odd or ignored.
    Warning,
    /// The file is skipped silently at start-up (no `name`: documentation),
    /// but listed by `cadre agents validate`.
    Info,
}

impl IssueLevel {
    /// The lower-case name shown to users.
    pub fn as_str(&self) -> &'static str {
        match self {
            IssueLevel::Error => "error",
            IssueLevel::Warning => "warning",
            IssueLevel::Info => "info",
        }
    }
}

/// One problem found in a definition.
#[derive(Debug, Clone, Serialize)]
pub struct DefinitionIssue {
    /// The file, when there is one.
    pub path: Option<PathBuf>,
    /// How serious it is.
    pub level: IssueLevel,
    /// The 1-based line in the file, when known.
    pub line: Option<usize>,
    /// What is wrong, for a human.
    pub message: String,
}

impl fmt::Display for DefinitionIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = &self.path {
            write!(f, "{}", path.display())?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
            }
            write!(f, ": ")?;
        } else if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        write!(f, "{}: {}", self.level.as_str(), self.message)
    }
}

/// The result of parsing one file: the definition unless it was skipped,
/// and every issue found either way.
#[derive(Debug, Clone)]
pub struct ParseOutcome {
    /// `None` when the file is skipped (an `Error` or `Info` issue says why).
    pub definition: Option<AgentDefinition>,
    /// Everything worth telling, in file order where possible.
    pub issues: Vec<DefinitionIssue>,
}

#[cfg(test)]
mod tests;
