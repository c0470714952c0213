//! `/usage` (alias `/cost`): the session's tokens and cost, read from its
//! logs (so a resumed session counts what it used before too): in all, by
//! model, and by subagent.

use std::collections::BTreeMap;
use std::path::Path;

use cadre_core::session::{LogUsage, SessionTotals, log_usage, session_path};
use cadre_core::subagents::transcript::child_log_path;
use cadre_core::tasks::{TaskKind, TaskRow};
use cadre_tui::children::format_tokens;

use super::CommandContext;

/// One agent's use: who it was and what its log says.
struct AgentUse {
    /// `main`, or the subagent's type and description.
    who: String,
    usage: LogUsage,
}

/// The report for the running session.
pub async fn describe(ctx: &CommandContext<'_>) -> String {
    let home = &ctx.runtime.home;
    let id = ctx.session.session_id();
    let main = match session_path(home, id) {
        Ok(path) => log_usage(&path),
        Err(e) => return format!("cannot read this session's log: {e}"),
    };
    let rows = ctx.session.tasks().await.unwrap_or_default();
    render(
        AgentUse {
            who: "main".into(),
            usage: main,
        },
        children(home, &rows),
    )
}

/// Each subagent task's use, from its own log, in the order they started.
fn children(home: &Path, rows: &[TaskRow]) -> Vec<AgentUse> {
    rows.iter()
        .filter(|r| r.kind == TaskKind::Subagent)
        .filter_map(|r| {
            let path = child_log_path(home, r)?;
            let who = match (&r.name, &r.agent_type) {
                (Some(name), _) => format!("{name} (teammate)"),
                (None, Some(t)) => format!("{t}: {}", r.description),
                (None, None) => r.description.clone(),
            };
            Some(AgentUse {
                who,
                usage: log_usage(&path),
            })
        })
        .collect()
}

fn render(main: AgentUse, children: Vec<AgentUse>) -> String {
    let mut all = SessionTotals::default();
    let mut by_model: BTreeMap<String, SessionTotals> = BTreeMap::new();
    for agent in std::iter::once(&main).chain(&children) {
        all.merge(&agent.usage.totals);
        let model = agent
            .usage
            .model
            .clone()
            .unwrap_or_else(|| "unknown".into());
        by_model
            .entry(model)
            .or_default()
            .merge(&agent.usage.totals);
    }
    let mut lines = vec![format!("Session: {}", figures(&all))];
    lines.push("By model:".into());
    for (model, totals) in &by_model {
        lines.push(format!("  {model:<28} {}", figures(totals)));
    }
    lines.push("By agent:".into());
    lines.push(format!("  {:<28} {}", "main", figures(&main.usage.totals)));
    for child in &children {
        let who: String = child.who.chars().take(28).collect();
        lines.push(format!("  {who:<28} {}", figures(&child.usage.totals)));
    }
    if children.is_empty() {
        lines.push("  (no subagents yet)".into());
    }
    lines.join("\n")
}

/// `12.3k tokens (in 10k, out 2.3k, cache 0/0) · $0.0412`.
fn figures(t: &SessionTotals) -> String {
    let u = &t.usage;
    let cost = t.cost.map_or_else(
        || "cost unknown".to_string(),
        |c| format!("${:.4}", c.usd()),
    );
    format!(
        "{} tokens (in {}, out {}, cache read {}, write {}) · {cost}",
        format_tokens(t.tokens()),
        format_tokens(u.input_tokens),
        format_tokens(u.output_tokens),
        format_tokens(u.cache_read_tokens),
        format_tokens(u.cache_write_tokens),
    )
}
