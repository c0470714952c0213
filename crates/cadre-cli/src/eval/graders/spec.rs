//! Grader specs: the checks a case asks for, as written in `case.yaml`
//! (`docs/evals.md`). Parsing only; `checks` runs them over a run's evidence.

use cadre_core::protocol::{ChildStatus, TaskKind, TaskStatus};
use cadre_core::tasks::BoardStatus;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use serde::Deserialize;

use crate::eval::evidence::CallOutcome;

/// Which agents a check looks at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum By {
    /// The parent or any child.
    #[default]
    Any,
    /// The top-level agent.
    Parent,
    /// Any child (or, with `agent_type`, children of that type).
    Child,
}

/// Which requests `requests` counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestScope {
    /// Every model request of the run.
    #[default]
    Total,
    /// The parent's.
    Parent,
    /// The children's.
    Children,
}

/// A numeric bound: `min` and/or `max`, both inclusive.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bound {
    /// At least.
    #[serde(default)]
    pub min: Option<u64>,
    /// At most.
    #[serde(default)]
    pub max: Option<u64>,
}

/// `tool_called` / `tool_not_called`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallCheck {
    /// Canonical tool name.
    pub tool: String,
    /// Whose calls.
    #[serde(default)]
    pub by: By,
    /// Only children of this type (implies `by: child`).
    #[serde(default)]
    pub agent_type: Option<String>,
    /// Only calls that ended so: `completed`, `failed` or `denied`.
    #[serde(default)]
    pub outcome: Option<CallOutcome>,
    /// At least this many (default 1 for `tool_called`).
    #[serde(default)]
    pub min: Option<u64>,
    /// At most this many.
    #[serde(default)]
    pub max: Option<u64>,
}

/// `requests`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestCheck {
    /// Whose requests (default: all).
    #[serde(default)]
    pub by: RequestScope,
    /// Offline only: count the mock requests answered by this rule instead.
    #[serde(default)]
    pub rule: Option<String>,
    /// At least.
    #[serde(default)]
    pub min: Option<u64>,
    /// At most.
    #[serde(default)]
    pub max: Option<u64>,
}

/// `file_contains` / `file_not_contains`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileText {
    /// Path in the project.
    pub path: String,
    /// A substring.
    #[serde(default)]
    pub text: Option<String>,
    /// A regular expression (`^`/`$` match at line ends).
    #[serde(default)]
    pub regex: Option<String>,
}

/// `subagent_status`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusCheck {
    /// `completed`, `failed` or `cancelled`.
    pub status: ChildStatus,
    /// Only children of this type.
    #[serde(default)]
    pub agent_type: Option<String>,
    /// Every such child must have it (not just `min` of them).
    #[serde(default)]
    pub all: bool,
    /// At least this many children with the status (default 1).
    #[serde(default)]
    pub min: Option<u64>,
}

/// `approval_asked`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskCheck {
    /// Only questions about this tool.
    #[serde(default)]
    pub tool: Option<String>,
    /// Whose questions.
    #[serde(default)]
    pub by: By,
    /// Only children of this type.
    #[serde(default)]
    pub agent_type: Option<String>,
    /// At least (default 1).
    #[serde(default)]
    pub min: Option<u64>,
    /// At most.
    #[serde(default)]
    pub max: Option<u64>,
}

/// `tool_denied`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenyCheck {
    /// Only calls of this tool.
    #[serde(default)]
    pub tool: Option<String>,
    /// Whose calls.
    #[serde(default)]
    pub by: By,
    /// Only children of this type.
    #[serde(default)]
    pub agent_type: Option<String>,
    /// Only denials whose text (as the model saw it) contains this.
    #[serde(default)]
    pub reason_contains: Option<String>,
    /// At least (default 1).
    #[serde(default)]
    pub min: Option<u64>,
    /// At most.
    #[serde(default)]
    pub max: Option<u64>,
}

/// `task_status`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskCheck {
    /// `queued`, `running`, `stopping`, `succeeded`, `failed`, `cancelled` or `lost`.
    pub status: TaskStatus,
    /// `subagent` or `bash`.
    #[serde(default)]
    pub kind: Option<TaskKind>,
    /// Only subagent tasks of this type.
    #[serde(default)]
    pub agent_type: Option<String>,
    /// Only tasks whose description contains this.
    #[serde(default)]
    pub description: Option<String>,
    /// Every such task must have the status (not just `min` of them).
    #[serde(default)]
    pub all: bool,
    /// At least this many tasks with the status (default 1).
    #[serde(default)]
    pub min: Option<u64>,
}

/// `board`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoardCheck {
    /// `pending`, `in_progress` or `completed`.
    pub status: BoardStatus,
    /// Only tasks this agent owns (`team-lead` or a teammate's name).
    #[serde(default)]
    pub owner: Option<String>,
    /// Only tasks whose subject contains this.
    #[serde(default)]
    pub subject: Option<String>,
    /// Every such task must have the status (not just `min` of them).
    #[serde(default)]
    pub all: bool,
    /// At least this many tasks with the status (default 1, or 0 with `max`).
    #[serde(default)]
    pub min: Option<u64>,
    /// At most this many.
    #[serde(default)]
    pub max: Option<u64>,
}

/// `mock_request` (offline only).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockRequestCheck {
    /// The mock rule that answered it.
    pub rule: String,
    /// Its step (assistant turns already in it; default 0, the first request).
    #[serde(default)]
    pub step: usize,
    /// Tools that must be offered.
    #[serde(default)]
    pub tools_include: Vec<String>,
    /// Tools that must not be offered.
    #[serde(default)]
    pub tools_exclude: Vec<String>,
    /// The exact tool list, in order.
    #[serde(default)]
    pub tools_exact: Option<Vec<String>>,
    /// A substring of the request body (JSON text; the system prompt and messages).
    #[serde(default)]
    pub contains: Option<String>,
}

/// One check. In `case.yaml` each is a one-key mapping, e.g.
/// `- tool_not_called: { tool: Read, by: parent }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Grader {
    /// cadre's exit status.
    ExitCode(i32),
    /// A tool was called (at least `min`, default 1, at most `max`).
    ToolCalled(CallCheck),
    /// A tool was not called.
    ToolNotCalled(CallCheck),
    /// Model requests within bounds.
    Requests(RequestCheck),
    /// A file exists in the project after the run.
    FileExists(String),
    /// A file does not exist after the run.
    FileMissing(String),
    /// A file contains a text or matches a regex.
    FileContains(FileText),
    /// A file contains neither the text nor the regex.
    FileNotContains(FileText),
    /// A file is byte-for-byte as in the fixture (or still absent).
    FileUnchanged(String),
    /// The parent's final text matches a regex.
    FinalTextMatches(String),
    /// Children ended with a status.
    SubagentStatus(StatusCheck),
    /// Approval questions were put to the user.
    ApprovalAsked(AskCheck),
    /// Calls were denied.
    #[serde(alias = "approval_denied")]
    ToolDenied(DenyCheck),
    /// The task table (`$CADRE_HOME/tasks.db`) holds rows with a status.
    TaskStatus(TaskCheck),
    /// The session's team board holds tasks with a status.
    Board(BoardCheck),
    /// The parent's session log contains a text.
    ParentLogContains(String),
    /// The parent's session log does not contain a text.
    ParentLogNotContains(String),
    /// A report (result of an `Agent` call, in the parent's log) contains a text.
    ReportContains(String),
    /// Bytes of the children's final texts in the reports (headers excluded).
    ReportBytes(Bound),
    /// Tokens used, children included.
    Tokens(Bound),
    /// What the mock received in one request (offline only).
    MockRequest(MockRequestCheck),
}

/// A regex matcher where `^`/`$` match at line ends.
pub fn regex(pattern: &str) -> Result<RegexMatcher, String> {
    RegexMatcherBuilder::new()
        .multi_line(true)
        .build(pattern)
        .map_err(|e| format!("bad regex {pattern:?}: {e}"))
}

/// `min` above `max`: a bound nothing meets.
fn check_bound(min: Option<u64>, max: Option<u64>) -> Result<(), String> {
    match (min, max) {
        (Some(a), Some(b)) if a > b => Err(format!("min {a} is above max {b}")),
        _ => Ok(()),
    }
}

impl Grader {
    /// Checks what serde cannot, so a mistake in `case.yaml` is reported as
    /// one rather than as a check that can never hold: regexes compile,
    /// `file_contains` gives exactly one of `text` and `regex`, and no bound
    /// has its `min` above its `max`.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Grader::FinalTextMatches(pattern) => regex(pattern).map(drop),
            Grader::FileContains(f) | Grader::FileNotContains(f) => match (&f.text, &f.regex) {
                (Some(_), None) => Ok(()),
                (None, Some(r)) => regex(r).map(drop),
                _ => Err(format!("{}: give exactly one of text and regex", f.path)),
            },
            Grader::ToolCalled(c) => check_bound(c.min, c.max),
            Grader::Requests(c) => check_bound(c.min, c.max),
            Grader::ApprovalAsked(c) => check_bound(c.min, c.max),
            Grader::ToolDenied(c) => check_bound(c.min, c.max),
            Grader::Board(c) => check_bound(c.min, c.max),
            Grader::ReportBytes(b) | Grader::Tokens(b) => check_bound(b.min, b.max),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graders(yaml: &str) -> Vec<Grader> {
        serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn graders_parse_from_one_key_mappings() {
        let g = graders(
            "- exit_code: 0\n- tool_not_called: { tool: Read, by: parent }\n- requests: { by: parent, max: 2 }\n- file_unchanged: a.txt\n- approval_denied: { tool: Bash }\n- tokens: { max: 100 }\n",
        );
        assert_eq!(g.len(), 6);
        assert!(matches!(
            g[1],
            Grader::ToolNotCalled(CallCheck { by: By::Parent, .. })
        ));
        assert!(matches!(g[4], Grader::ToolDenied(_)));
        let bad: Result<Vec<Grader>, _> = serde_saphyr::from_str("- tool_called: { tol: Read }\n");
        assert!(bad.is_err());
    }

    #[test]
    fn statuses_and_outcomes_are_read_as_their_types() {
        let g = graders(
            "- tool_called: { tool: Edit, outcome: denied }\n- subagent_status: { status: cancelled }\n- task_status: { status: lost, kind: bash }\n",
        );
        assert!(matches!(
            &g[0],
            Grader::ToolCalled(CallCheck {
                outcome: Some(CallOutcome::Denied),
                ..
            })
        ));
        assert!(matches!(
            &g[1],
            Grader::SubagentStatus(StatusCheck {
                status: ChildStatus::Cancelled,
                ..
            })
        ));
        assert!(matches!(
            &g[2],
            Grader::TaskStatus(TaskCheck {
                status: TaskStatus::Lost,
                kind: Some(TaskKind::Bash),
                ..
            })
        ));
        // A misspelt status is an error in the case file, not a check that never holds.
        for bad in [
            "- tool_called: { tool: Edit, outcome: done }\n",
            "- subagent_status: { status: complete }\n",
            "- task_status: { status: succeeded, kind: shell }\n",
            "- board: { status: done }\n",
            "- board: { status: completed, owners: alice }\n",
        ] {
            let parsed: Result<Vec<Grader>, _> = serde_saphyr::from_str(bad);
            assert!(parsed.is_err(), "{bad}");
        }
    }

    #[test]
    fn board_checks_parse_with_their_filters() {
        let g = graders(
            "- board: { status: completed, all: true, min: 6 }\n- board: { status: in_progress, owner: alice, subject: schema, max: 0 }\n",
        );
        assert!(matches!(
            &g[0],
            Grader::Board(BoardCheck {
                status: BoardStatus::Completed,
                all: true,
                min: Some(6),
                ..
            })
        ));
        match &g[1] {
            Grader::Board(c) => {
                assert_eq!(c.status, BoardStatus::InProgress);
                assert_eq!(c.owner.as_deref(), Some("alice"));
                assert_eq!(c.subject.as_deref(), Some("schema"));
                assert_eq!(c.max, Some(0));
            }
            other => panic!("{other:?}"),
        }
        let bad = graders("- board: { status: pending, min: 2, max: 1 }\n");
        assert_eq!(bad[0].validate(), Err("min 2 is above max 1".into()));
    }

    #[test]
    fn validation_catches_what_serde_cannot() {
        let ok = graders(
            "- final_text_matches: \"(?i)^done$\"\n- file_contains: { path: a, regex: \"b+\" }\n- file_not_contains: { path: a, text: x }\n- tokens: { min: 3, max: 3 }\n- tool_not_called: { tool: Read }\n",
        );
        for g in &ok {
            assert_eq!(g.validate(), Ok(()), "{g:?}");
        }
        let errors: Vec<String> = graders(
            "- final_text_matches: \"(\"\n- file_contains: { path: a }\n- file_contains: { path: a, text: x, regex: y }\n- file_not_contains: { path: a, regex: \"[\" }\n- requests: { min: 3, max: 2 }\n- report_bytes: { min: 10, max: 1 }\n",
        )
        .iter()
        .map(|g| g.validate().unwrap_err())
        .collect();
        assert!(errors[0].starts_with("bad regex \"(\""), "{errors:?}");
        assert_eq!(errors[1], "a: give exactly one of text and regex");
        assert_eq!(errors[2], "a: give exactly one of text and regex");
        assert!(errors[3].starts_with("bad regex \"[\""), "{errors:?}");
        assert_eq!(errors[4], "min 3 is above max 2");
        assert_eq!(errors[5], "min 10 is above max 1");
    }
}
