//! The results of an eval run: one row per case, as a table for people or a
//! JSON document for machines.

use std::fmt::Write;

use serde::Serialize;

use super::evidence::UnparsedLine;
use super::graders::GradeResult;

/// A case's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Every grader held.
    Pass,
    /// A grader failed, or the run itself did.
    Fail,
    /// Not run (not marked `live` in a `--live` run).
    Skipped,
}

/// Model requests of a run.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Requests {
    /// The parent's.
    pub parent: u64,
    /// All, children included.
    pub total: u64,
}

/// One case's row.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    /// Folder name.
    pub name: String,
    /// Folder path.
    pub path: String,
    /// `description` from case.yaml.
    pub description: Option<String>,
    /// Pass, fail or skipped.
    pub result: Outcome,
    /// Why the run itself failed (bad case, set-up, time limit).
    pub error: Option<String>,
    /// cadre's exit status.
    pub exit_code: Option<i32>,
    /// How the main turn ended when it did not complete (`failed: …`, `interrupted`).
    pub turn: Option<String>,
    /// Model requests.
    pub requests: Option<Requests>,
    /// Tool calls, the children's included.
    pub tool_calls: u64,
    /// Tokens, the children's included.
    pub tokens: u64,
    /// Start, ms since the Unix epoch.
    pub started_ms: u64,
    /// Wall time.
    pub duration_ms: u64,
    /// The run's temp directory, when kept (`--keep`).
    pub workdir: Option<String>,
    /// The session id.
    pub session_id: Option<String>,
    /// Every grader's result, in `case.yaml` order.
    pub graders: Vec<GradeResult>,
    /// The end of cadre's stderr, for a failed case.
    pub stderr_tail: Option<String>,
    /// How many of cadre's stdout lines were not events `cadre eval` reads.
    pub unparsed_lines: u64,
    /// The first of them.
    pub unparsed: Vec<UnparsedLine>,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// `offline` or `live`.
    pub mode: &'static str,
    /// Cases passed.
    pub passed: usize,
    /// Cases failed.
    pub failed: usize,
    /// Cases skipped.
    pub skipped: usize,
    /// Wall time of the whole run.
    pub duration_ms: u64,
    /// One entry per case, in name order.
    pub cases: Vec<CaseResult>,
}

impl Summary {
    /// Counts the results.
    pub fn new(live: bool, cases: Vec<CaseResult>, duration_ms: u64) -> Summary {
        let count = |o| cases.iter().filter(|c| c.result == o).count();
        Summary {
            mode: if live { "live" } else { "offline" },
            passed: count(Outcome::Pass),
            failed: count(Outcome::Fail),
            skipped: count(Outcome::Skipped),
            duration_ms,
            cases,
        }
    }
}

fn tokens_text(n: u64) -> String {
    if n >= 10_000 {
        format!("{:.0}k", n as f64 / 1000.0)
    } else if n >= 1000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    }
}

fn time_text(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

/// The human table, then each failure's details.
pub fn table(s: &Summary) -> String {
    let header = ["case", "result", "requests", "tool calls", "tokens", "time"];
    let rows: Vec<[String; 6]> = s
        .cases
        .iter()
        .map(|c| {
            let ran = c.result != Outcome::Skipped && c.requests.is_some();
            [
                c.name.clone(),
                match c.result {
                    Outcome::Pass => "pass",
                    Outcome::Fail => "FAIL",
                    Outcome::Skipped => "skip",
                }
                .to_string(),
                c.requests
                    .filter(|_| ran)
                    .map(|r| format!("{} ({} parent)", r.total, r.parent))
                    .unwrap_or_else(|| "-".into()),
                if ran {
                    c.tool_calls.to_string()
                } else {
                    "-".into()
                },
                if ran {
                    tokens_text(c.tokens)
                } else {
                    "-".into()
                },
                if c.result == Outcome::Skipped {
                    "-".into()
                } else {
                    time_text(c.duration_ms)
                },
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &[String]| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            let pad = w.saturating_sub(cell.chars().count());
            if i >= 2 {
                // Numbers right-aligned.
                l.push_str(&" ".repeat(pad));
                l.push_str(cell);
            } else {
                l.push_str(cell);
                l.push_str(&" ".repeat(pad));
            }
            l.push_str("  ");
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&mut out, &header.map(String::from));
    for r in &rows {
        line(&mut out, r);
    }
    for c in s.cases.iter().filter(|c| c.result == Outcome::Fail) {
        let _ = writeln!(out, "\nFAIL {} ({})", c.name, c.path);
        if let Some(e) = &c.error {
            let _ = writeln!(out, "  error: {e}");
        }
        if let Some(t) = &c.turn {
            let _ = writeln!(out, "  turn: {t}");
        }
        for g in c.graders.iter().filter(|g| !g.passed) {
            let _ = writeln!(out, "  ✗ {}: saw {}", g.grader, g.saw);
        }
        if let Some(dir) = &c.workdir {
            let _ = writeln!(out, "  kept: {dir}");
        }
        if let Some(tail) = c.stderr_tail.as_deref().filter(|t| !t.trim().is_empty()) {
            let _ = writeln!(out, "  cadre stderr (end):");
            for l in tail
                .lines()
                .rev()
                .take(12)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
            {
                let _ = writeln!(out, "    {l}");
            }
        }
    }
    // Lines graders could not see, passed or failed: the events and this
    // reader have drifted apart.
    for c in s.cases.iter().filter(|c| c.unparsed_lines > 0) {
        let _ = writeln!(
            out,
            "\n{}: {} stdout line{} of cadre not read as events",
            c.name,
            c.unparsed_lines,
            if c.unparsed_lines == 1 { "" } else { "s" }
        );
        for u in &c.unparsed {
            let _ = writeln!(out, "  line {}: {}: {}", u.line, u.error, u.text);
        }
    }
    let _ = writeln!(
        out,
        "\n{} passed, {} failed{} ({} run, {})",
        s.passed,
        s.failed,
        if s.skipped > 0 {
            format!(", {} skipped", s.skipped)
        } else {
            String::new()
        },
        s.mode,
        time_text(s.duration_ms)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, result: Outcome) -> CaseResult {
        CaseResult {
            name: name.into(),
            path: format!("evals/{name}"),
            description: None,
            result,
            error: None,
            exit_code: Some(0),
            turn: None,
            requests: Some(Requests {
                parent: 2,
                total: 4,
            }),
            tool_calls: 3,
            tokens: 12_345,
            started_ms: 0,
            duration_ms: 1500,
            workdir: None,
            session_id: None,
            graders: vec![GradeResult {
                grader: "exit_code 0".into(),
                passed: result != Outcome::Fail,
                skipped: false,
                saw: "exit 1".into(),
            }],
            stderr_tail: None,
            unparsed_lines: 0,
            unparsed: Vec::new(),
        }
    }

    #[test]
    fn the_table_lists_every_case_and_explains_failures() {
        let s = Summary::new(
            false,
            vec![case("a-case", Outcome::Pass), case("b", Outcome::Fail)],
            2000,
        );
        let t = table(&s);
        assert!(t.starts_with("case"), "{t}");
        assert!(t.contains("a-case  pass"), "{t}");
        assert!(t.contains("4 (2 parent)"), "{t}");
        assert!(t.contains("12k"), "{t}");
        assert!(t.contains("✗ exit_code 0: saw exit 1"), "{t}");
        assert!(t.contains("1 passed, 1 failed"), "{t}");
        assert!(!t.contains("not read as events"), "{t}");
    }

    #[test]
    fn lines_that_are_not_events_are_reported_even_for_a_passing_case() {
        let mut c = case("drift", Outcome::Pass);
        c.unparsed_lines = 2;
        c.unparsed = vec![UnparsedLine {
            line: 3,
            error: "unknown variant `brand_new`".into(),
            text: "{\"type\":\"brand_new\"}".into(),
        }];
        let t = table(&Summary::new(false, vec![c], 10));
        assert!(
            t.contains("drift: 2 stdout lines of cadre not read as events\n  line 3: unknown variant `brand_new`: {\"type\":\"brand_new\"}"),
            "{t}"
        );
        assert!(t.contains("1 passed, 0 failed"), "{t}");
    }
}
