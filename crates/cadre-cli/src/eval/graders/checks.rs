//! The checks a case makes over its run's evidence. Each reports what it
//! saw, so a failure says why without re-running anything.

use grep_matcher::Matcher;
use grep_regex::RegexMatcher;
use serde::Serialize;

use super::spec::{
    BoardCheck, By, CallCheck, DenyCheck, FileText, Grader, MockRequestCheck, RequestCheck,
    RequestScope, StatusCheck, TaskCheck, regex,
};
use crate::eval::evidence::{Evidence, Who};

/// How one check went.
#[derive(Debug, Clone, Serialize)]
pub struct GradeResult {
    /// The check, in a few words.
    pub grader: String,
    /// Whether it held.
    pub passed: bool,
    /// Not applicable to this run (e.g. a mock check in a live run); not a failure.
    pub skipped: bool,
    /// What it saw.
    pub saw: String,
}

impl GradeResult {
    fn new(grader: String, passed: bool, saw: String) -> Self {
        GradeResult {
            grader,
            passed,
            skipped: false,
            saw,
        }
    }

    fn skipped(grader: String, why: &str) -> Self {
        GradeResult {
            grader,
            passed: true,
            skipped: true,
            saw: why.to_string(),
        }
    }
}

/// `min` as given; else 1 when no `max` is given ("at least once"), else 0.
fn default_min(min: Option<u64>, max: Option<u64>) -> u64 {
    min.unwrap_or(if max.is_some() { 0 } else { 1 })
}

fn within(n: u64, min: Option<u64>, max: Option<u64>) -> bool {
    min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m)
}

fn bound_text(min: Option<u64>, max: Option<u64>) -> String {
    match (min, max) {
        (Some(0), Some(b)) => format!("<= {b}"),
        (Some(a), Some(b)) if a == b => format!("= {a}"),
        (Some(a), Some(b)) => format!("{a}..={b}"),
        (Some(a), None) => format!(">= {a}"),
        (None, Some(b)) => format!("<= {b}"),
        (None, None) => "any".into(),
    }
}

fn who_matches(who: &Who, by: By, agent_type: Option<&str>) -> bool {
    match (who, agent_type) {
        (Who::Parent, Some(_)) => false,
        (Who::Parent, None) => by != By::Child,
        (Who::Child { agent_type: t, .. }, Some(want)) => {
            by != By::Parent && t.as_deref() == Some(want)
        }
        (Who::Child { .. }, None) => by != By::Parent,
    }
}

fn scope_text(by: By, agent_type: Option<&str>) -> String {
    match (by, agent_type) {
        (_, Some(t)) => format!(" by {t} children"),
        (By::Parent, None) => " by the parent".into(),
        (By::Child, None) => " by a child".into(),
        (By::Any, None) => String::new(),
    }
}

fn is_match(m: &RegexMatcher, text: &str) -> bool {
    m.is_match(text.as_bytes()).unwrap_or(false)
}

/// Quotes at most `n` characters of `text` for a message.
pub fn excerpt(text: &str, n: usize) -> String {
    let count = text.chars().count();
    if count <= n {
        format!("{text:?}")
    } else {
        let cut: String = text.chars().take(n).collect();
        format!("{cut:?}… ({count} chars)")
    }
}

fn tally(items: impl IntoIterator<Item = String>) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for i in items {
        match counts.iter_mut().find(|(k, _)| *k == i) {
            Some((_, n)) => *n += 1,
            None => counts.push((i, 1)),
        }
    }
    if counts.is_empty() {
        return "none".into();
    }
    counts
        .iter()
        .map(|(k, n)| {
            if *n == 1 {
                k.clone()
            } else {
                format!("{k} ×{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Grader {
    /// Runs the check.
    pub fn grade(&self, ev: &Evidence) -> GradeResult {
        match self {
            Grader::ExitCode(want) => GradeResult::new(
                format!("exit_code {want}"),
                ev.exit_code == Some(*want) && !ev.timed_out,
                ev.exit_description(),
            ),
            Grader::ToolCalled(c) => grade_calls(ev, c, false),
            Grader::ToolNotCalled(c) => grade_calls(ev, c, true),
            Grader::Requests(c) => grade_requests(ev, c),
            Grader::FileExists(p) => {
                let exists = ev.project.join(p).exists();
                GradeResult::new(
                    format!("file_exists {p}"),
                    exists,
                    if exists { "exists" } else { "missing" }.into(),
                )
            }
            Grader::FileMissing(p) => {
                let exists = ev.project.join(p).exists();
                GradeResult::new(
                    format!("file_missing {p}"),
                    !exists,
                    if exists { "exists" } else { "missing" }.into(),
                )
            }
            Grader::FileContains(f) => grade_file_text(ev, f, true),
            Grader::FileNotContains(f) => grade_file_text(ev, f, false),
            Grader::FileUnchanged(p) => grade_unchanged(ev, p),
            Grader::FinalTextMatches(pattern) => {
                let name = format!("final_text_matches {pattern:?}");
                let m = match regex(pattern) {
                    Ok(m) => m,
                    Err(e) => return GradeResult::new(name, false, e),
                };
                match ev.final_text() {
                    None => GradeResult::new(name, false, "no turn_ended event of main".into()),
                    Some(text) => GradeResult::new(name, is_match(&m, text), excerpt(text, 200)),
                }
            }
            Grader::SubagentStatus(c) => grade_status(ev, c),
            Grader::ApprovalAsked(c) => {
                let name = format!(
                    "approval_asked{}{} {}",
                    c.tool.as_ref().map(|t| format!(" {t}")).unwrap_or_default(),
                    scope_text(c.by, c.agent_type.as_deref()),
                    bound_text(Some(default_min(c.min, c.max)), c.max)
                );
                let all = ev.approvals();
                let n = all
                    .iter()
                    .filter(|(who, tool)| {
                        who_matches(who, c.by, c.agent_type.as_deref())
                            && c.tool.as_ref().is_none_or(|t| t == tool)
                    })
                    .count() as u64;
                let saw = format!(
                    "{n} matching; all questions: {}",
                    tally(all.iter().map(|(w, t)| format!("{t} by {}", w.describe())))
                );
                GradeResult::new(name, within(n, Some(default_min(c.min, c.max)), c.max), saw)
            }
            Grader::ToolDenied(c) => grade_denied(ev, c),
            Grader::TaskStatus(c) => grade_tasks(ev, c),
            Grader::Board(c) => grade_board(ev, c),
            Grader::ParentLogContains(text) => {
                let found = ev.parent_log_text.contains(text.as_str());
                GradeResult::new(
                    format!("parent_log_contains {text:?}"),
                    found,
                    log_saw(ev, found),
                )
            }
            Grader::ParentLogNotContains(text) => {
                let found = ev.parent_log_text.contains(text.as_str());
                let saw = match ev.parent_log_text.find(text.as_str()) {
                    Some(at) => {
                        let line = ev.parent_log_text[..at].matches('\n').count() + 1;
                        format!("found on line {line} of the parent's log")
                    }
                    None => log_saw(ev, false),
                };
                GradeResult::new(format!("parent_log_not_contains {text:?}"), !found, saw)
            }
            Grader::ReportContains(text) => {
                let reports = ev.reports();
                let found = reports.iter().any(|r| r.contains(text.as_str()));
                let saw = if reports.is_empty() {
                    "no Agent results in the parent's log".into()
                } else {
                    format!(
                        "{} reports; first: {}",
                        reports.len(),
                        excerpt(&reports[0], 300)
                    )
                };
                GradeResult::new(format!("report_contains {text:?}"), found, saw)
            }
            Grader::ReportBytes(b) => {
                let reports = ev.reports();
                let bodies: Vec<usize> = reports.iter().map(|r| kept_text(r).len()).collect();
                let total: usize = bodies.iter().sum();
                GradeResult::new(
                    format!("report_bytes {}", bound_text(b.min, b.max)),
                    !reports.is_empty() && within(total as u64, b.min, b.max),
                    format!("{total} bytes in {} reports {bodies:?}", reports.len()),
                )
            }
            Grader::Tokens(b) => {
                let n = ev.tokens();
                GradeResult::new(
                    format!("tokens {}", bound_text(b.min, b.max)),
                    within(n, b.min, b.max),
                    format!("{n} tokens"),
                )
            }
            Grader::MockRequest(c) => grade_mock_request(ev, c),
        }
    }
}

/// The child's text in one report: after the header block, without a
/// closing `[truncated N bytes]` line.
fn kept_text(report: &str) -> &str {
    let body = report.split_once("\n\n").map_or("", |(_, b)| b);
    match body.rfind("\n[truncated ") {
        Some(at) if body.ends_with(" bytes]") => &body[..at],
        _ => body,
    }
}

fn log_saw(ev: &Evidence, found: bool) -> String {
    match (&ev.session_id, found) {
        (None, _) => "no session (no session_started event)".into(),
        (Some(_), true) => "found".into(),
        (Some(_), false) if ev.parent_log_text.is_empty() => {
            "the parent's log is empty or missing".into()
        }
        (Some(_), false) => format!("not in the parent's log ({} records)", ev.parent_log.len()),
    }
}

fn grade_calls(ev: &Evidence, c: &CallCheck, negate: bool) -> GradeResult {
    let (min, max) = if negate {
        (None, Some(0))
    } else {
        (Some(default_min(c.min, c.max)), c.max)
    };
    let outcome = c
        .outcome
        .as_ref()
        .map(|o| format!(" ({o})"))
        .unwrap_or_default();
    let name = format!(
        "{} {}{}{}{}",
        if negate {
            "tool_not_called"
        } else {
            "tool_called"
        },
        c.tool,
        outcome,
        scope_text(c.by, c.agent_type.as_deref()),
        if negate {
            String::new()
        } else {
            format!(" {}", bound_text(min, max))
        }
    );
    let calls = ev.calls();
    let in_scope: Vec<_> = calls
        .iter()
        .filter(|k| who_matches(&k.who, c.by, c.agent_type.as_deref()))
        .collect();
    let n = in_scope
        .iter()
        .filter(|k| k.tool == c.tool && c.outcome.as_ref().is_none_or(|o| k.outcome == Some(*o)))
        .count() as u64;
    let saw = format!(
        "{n} matching; calls{}: {}",
        scope_text(c.by, c.agent_type.as_deref()),
        tally(in_scope.iter().map(|k| match &k.outcome {
            Some(o) => format!("{} ({o})", k.tool),
            None => k.tool.clone(),
        }))
    );
    GradeResult::new(name, within(n, min, max), saw)
}

fn grade_requests(ev: &Evidence, c: &RequestCheck) -> GradeResult {
    let bound = bound_text(c.min, c.max);
    if let Some(rule) = &c.rule {
        let name = format!("requests rule {rule} {bound}");
        return match ev.rule_requests(rule) {
            None => GradeResult::skipped(name, "live run: no mock record"),
            Some(rs) => {
                let n = rs.len() as u64;
                GradeResult::new(name, within(n, c.min, c.max), format!("{n} requests"))
            }
        };
    }
    let (parent, total) = ev.requests();
    let (label, n) = match c.by {
        RequestScope::Total => ("total", total),
        RequestScope::Parent => ("parent", parent),
        RequestScope::Children => ("children", total.saturating_sub(parent)),
    };
    GradeResult::new(
        format!("requests {label} {bound}"),
        within(n, c.min, c.max),
        format!("{n} {label} requests ({parent} parent, {total} total)"),
    )
}

fn grade_file_text(ev: &Evidence, f: &FileText, want: bool) -> GradeResult {
    let what = match (&f.text, &f.regex) {
        (Some(t), _) => format!("{t:?}"),
        (None, Some(r)) => format!("/{r}/"),
        (None, None) => String::new(),
    };
    let name = format!(
        "{} {} {what}",
        if want {
            "file_contains"
        } else {
            "file_not_contains"
        },
        f.path
    );
    if f.text.is_some() == f.regex.is_some() {
        return GradeResult::new(name, false, "give exactly one of text and regex".into());
    }
    let text = match std::fs::read(ev.project.join(&f.path)) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => return GradeResult::new(name, false, format!("cannot read it: {e}")),
    };
    let found = match (&f.text, &f.regex) {
        (Some(t), _) => text.contains(t.as_str()),
        (None, Some(r)) => match regex(r) {
            Ok(m) => is_match(&m, &text),
            Err(e) => return GradeResult::new(name, false, e),
        },
        (None, None) => false,
    };
    GradeResult::new(name, found == want, excerpt(&text, 200))
}

fn grade_unchanged(ev: &Evidence, p: &str) -> GradeResult {
    let name = format!("file_unchanged {p}");
    let before = std::fs::read(ev.fixture.join(p)).ok();
    let after = std::fs::read(ev.project.join(p)).ok();
    let saw = match (&before, &after) {
        (None, None) => "absent before and after".to_string(),
        (Some(_), None) => "deleted".to_string(),
        (None, Some(a)) => format!("created ({} bytes)", a.len()),
        (Some(b), Some(a)) if a == b => "unchanged".to_string(),
        (Some(b), Some(a)) => format!(
            "changed: {} bytes → {} bytes, now {}",
            b.len(),
            a.len(),
            excerpt(&String::from_utf8_lossy(a), 120)
        ),
    };
    GradeResult::new(name, before == after, saw)
}

fn grade_status(ev: &Evidence, c: &StatusCheck) -> GradeResult {
    let min = c.min.unwrap_or(1);
    let name = format!(
        "subagent_status {}{}{} {}",
        if c.all { "all " } else { "" },
        c.status.as_str(),
        c.agent_type
            .as_ref()
            .map(|t| format!(" ({t})"))
            .unwrap_or_default(),
        bound_text(Some(min), None)
    );
    let children: Vec<_> = ev
        .children()
        .into_iter()
        .filter(|ch| c.agent_type.as_ref().is_none_or(|t| *t == ch.agent_type))
        .collect();
    let with = children.iter().filter(|ch| ch.status == c.status).count() as u64;
    let passed = with >= min && (!c.all || with == children.len() as u64);
    let saw = if children.is_empty() {
        "no subagent_ended events".to_string()
    } else {
        children
            .iter()
            .map(|ch| {
                let id: String = ch.agent_id.chars().take(8).collect();
                let mut s = format!("{} {id} {}", ch.agent_type, ch.status.as_str());
                if let Some(e) = &ch.error {
                    s.push_str(&format!(" ({})", excerpt(e, 80)));
                }
                s
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    GradeResult::new(name, passed, saw)
}

fn grade_denied(ev: &Evidence, c: &DenyCheck) -> GradeResult {
    let min = default_min(c.min, c.max);
    let name = format!(
        "tool_denied{}{}{} {}",
        c.tool.as_ref().map(|t| format!(" {t}")).unwrap_or_default(),
        scope_text(c.by, c.agent_type.as_deref()),
        c.reason_contains
            .as_ref()
            .map(|r| format!(" with {r:?}"))
            .unwrap_or_default(),
        bound_text(Some(min), c.max)
    );
    let all = ev.denials();
    let n = all
        .iter()
        .filter(|d| {
            who_matches(&d.who, c.by, c.agent_type.as_deref())
                && c.tool.as_ref().is_none_or(|t| d.tool.as_ref() == Some(t))
                && c.reason_contains
                    .as_ref()
                    .is_none_or(|r| d.reason.as_ref().is_some_and(|x| x.contains(r.as_str())))
        })
        .count() as u64;
    let saw = format!(
        "{n} matching; all denials: {}",
        tally(all.iter().map(|d| {
            let mut s = format!(
                "{} by {}",
                d.tool.as_deref().unwrap_or("?"),
                d.who.describe()
            );
            if let Some(r) = &d.reason {
                s.push_str(&format!(": {}", excerpt(r, 80)));
            }
            s
        }))
    );
    GradeResult::new(name, within(n, Some(min), c.max), saw)
}

/// A status grader's name: `kind [all ]status[ (filters)] bounds`.
fn status_check_name<const N: usize>(
    kind: &str,
    all: bool,
    status: &str,
    filters: [Option<String>; N],
    bounds: String,
) -> String {
    let filters: Vec<String> = filters.into_iter().flatten().collect();
    let filters = if filters.is_empty() {
        String::new()
    } else {
        format!(" ({})", filters.join(" "))
    };
    let all = if all { "all " } else { "" };
    format!("{kind} {all}{status}{filters} {bounds}")
}

fn grade_tasks(ev: &Evidence, c: &TaskCheck) -> GradeResult {
    let min = c.min.unwrap_or(1);
    let name = status_check_name(
        "task_status",
        c.all,
        &c.status.to_string(),
        [
            c.kind.map(|k| k.to_string()),
            c.agent_type.clone(),
            c.description.as_ref().map(|d| format!("{d:?}")),
        ],
        bound_text(Some(min), None),
    );
    if let Some(e) = &ev.tasks_error {
        return GradeResult::new(name, false, format!("cannot read the task table: {e}"));
    }
    let rows: Vec<_> = ev
        .tasks
        .iter()
        .filter(|t| c.kind.is_none_or(|k| t.kind == k))
        .filter(|t| {
            c.agent_type
                .as_ref()
                .is_none_or(|a| t.agent_type.as_ref() == Some(a))
        })
        .filter(|t| {
            c.description
                .as_ref()
                .is_none_or(|d| t.description.contains(d.as_str()))
        })
        .collect();
    let with = rows.iter().filter(|t| t.status == c.status).count() as u64;
    let passed = with >= min && (!c.all || with == rows.len() as u64);
    let saw = if ev.tasks.is_empty() {
        "no rows in the task table".to_string()
    } else {
        tally(ev.tasks.iter().map(|t| {
            format!(
                "{} {} {}",
                t.kind,
                t.agent_type.as_deref().unwrap_or("-"),
                t.status
            )
        }))
    };
    GradeResult::new(name, passed, saw)
}

fn grade_board(ev: &Evidence, c: &BoardCheck) -> GradeResult {
    let min = default_min(c.min, c.max);
    let name = status_check_name(
        "board",
        c.all,
        &c.status.to_string(),
        [
            c.owner.as_ref().map(|o| format!("owner {o}")),
            c.subject.as_ref().map(|s| format!("{s:?}")),
        ],
        bound_text(Some(min), c.max),
    );
    if let Some(e) = &ev.board_error {
        return GradeResult::new(name, false, format!("cannot read the board: {e}"));
    }
    let rows: Vec<_> = ev
        .board
        .iter()
        .filter(|t| c.owner.as_ref().is_none_or(|o| t.owner.as_ref() == Some(o)))
        .filter(|t| {
            c.subject
                .as_ref()
                .is_none_or(|s| t.subject.contains(s.as_str()))
        })
        .collect();
    let with = rows.iter().filter(|t| t.status == c.status).count() as u64;
    let passed = within(with, Some(min), c.max) && (!c.all || with == rows.len() as u64);
    let saw = if ev.board.is_empty() {
        match &ev.session_id {
            None => "no session (no session_started event)".to_string(),
            Some(_) => "no tasks on the session's board".to_string(),
        }
    } else {
        ev.board
            .iter()
            .map(|t| {
                format!(
                    "#{} {} {}",
                    t.id,
                    t.status,
                    t.owner.as_deref().unwrap_or("-")
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    GradeResult::new(name, passed, saw)
}

fn tool_names(body: &serde_json::Value) -> Vec<String> {
    body.get("tools")
        .and_then(|t| t.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|t| {
                    t.get("name")
                        .or_else(|| t.get("function").and_then(|f| f.get("name")))
                        .and_then(|n| n.as_str())
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn grade_mock_request(ev: &Evidence, c: &MockRequestCheck) -> GradeResult {
    let name = format!("mock_request {} step {}", c.rule, c.step);
    let Some(records) = ev.rule_requests(&c.rule) else {
        return GradeResult::skipped(name, "live run: no mock record");
    };
    let Some(r) = records.iter().find(|r| r.step == c.step) else {
        let steps: Vec<usize> = records.iter().map(|r| r.step).collect();
        return GradeResult::new(
            name,
            false,
            format!("no such request; the rule answered steps {steps:?}"),
        );
    };
    let tools = tool_names(&r.body);
    let mut problems = Vec::new();
    for t in &c.tools_include {
        if !tools.contains(t) {
            problems.push(format!("{t} not offered"));
        }
    }
    for t in &c.tools_exclude {
        if tools.contains(t) {
            problems.push(format!("{t} offered"));
        }
    }
    if let Some(exact) = &c.tools_exact
        && exact != &tools
    {
        problems.push(format!("tools are not exactly {exact:?}"));
    }
    let mut saw = format!("tools offered: {tools:?}");
    if let Some(text) = &c.contains {
        if r.body.to_string().contains(text.as_str()) {
            saw.push_str(&format!("; body contains {text:?}"));
        } else {
            problems.push(format!("body does not contain {text:?}"));
        }
    }
    if !problems.is_empty() {
        saw = format!("{}; {saw}", problems.join("; "));
    }
    GradeResult::new(name, problems.is_empty(), saw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_bytes_count_the_kept_text_only() {
        assert_eq!(
            kept_text("[1/2] completed · x\n\nabc\n[truncated 10 bytes]"),
            "abc"
        );
        assert_eq!(
            kept_text("[1/2] completed · x\nverdict: fail\n\nabc\n"),
            "abc\n"
        );
        assert_eq!(kept_text("no body"), "");
    }

    #[test]
    fn regexes_anchor_at_lines() {
        let m = regex("^VERDICT: FAIL$").unwrap_or_else(|e| panic!("{e}"));
        assert!(is_match(&m, "checks\nVERDICT: FAIL\n"));
        assert!(!is_match(&m, "VERDICT: PASS"));
    }

    #[test]
    fn scopes_filter_by_parent_child_and_type() {
        let child = Who::Child {
            id: "x".into(),
            agent_type: Some("Explore".into()),
        };
        assert!(who_matches(&Who::Parent, By::Any, None));
        assert!(!who_matches(&Who::Parent, By::Child, None));
        assert!(who_matches(&child, By::Child, Some("Explore")));
        assert!(!who_matches(&child, By::Any, Some("Plan")));
        assert!(!who_matches(&child, By::Parent, None));
    }
}
