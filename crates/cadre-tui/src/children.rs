//! The subagents the session runs, as the panel shows them: batches of
//! children, each child with its progress, nested batches under the child
//! that started them (when the events say which), and a batch folded into
//! one summary line once every child of it has ended.

use std::time::{Duration, Instant};

use cadre_core::protocol::ChildStatus;

/// Where a child is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChildState {
    /// Running in the foreground.
    Running,
    /// Moved to the background (its task id).
    Background(String),
    /// Ended.
    Ended(ChildStatus),
}

/// One child.
#[derive(Debug, Clone)]
pub struct Child {
    /// Agent id.
    pub agent_id: String,
    /// Definition name.
    pub agent_type: String,
    /// Its definition's display colour, if it names one.
    pub color: Option<String>,
    /// The call's short description.
    pub description: String,
    /// 1-based position in its batch.
    pub index: usize,
    /// Batch size.
    pub total: usize,
    /// Its state.
    pub state: ChildState,
    /// Tool calls finished so far.
    pub tool_calls: u32,
    /// Tokens used, once known (children's usage is reported when they end).
    pub tokens: Option<u64>,
    /// When it started.
    pub started: Instant,
    /// How long it ran, once ended.
    pub ran: Option<Duration>,
    /// Its last tool call and how it went (`Read: completed`).
    pub last_activity: Option<String>,
}

impl Child {
    /// Time since it started, or its run time once ended.
    pub fn elapsed(&self, now: Instant) -> Duration {
        self.ran
            .unwrap_or_else(|| now.saturating_duration_since(self.started))
    }

    /// True while it runs in the foreground.
    pub fn is_running(&self) -> bool {
        self.state == ChildState::Running
    }
}

/// Children started by one call of one agent, together.
#[derive(Debug, Clone)]
pub struct Batch {
    /// The child that started it, or none for the main agent (or when the
    /// events do not say).
    pub parent: Option<String>,
    /// Its size.
    pub total: usize,
    /// Its children, in the order they started.
    pub children: Vec<Child>,
}

impl Batch {
    /// True once every child of it has started and none runs in the foreground.
    pub fn is_done(&self) -> bool {
        self.children.len() >= self.total && self.children.iter().all(|c| !c.is_running())
    }

    /// True when a child of it ended other than completed (failed or cancelled).
    pub fn any_failed(&self) -> bool {
        self.children
            .iter()
            .any(|c| matches!(c.state, ChildState::Ended(s) if s != ChildStatus::Completed))
    }

    /// `3 subagents: 2 completed, 1 failed · 7 tool calls · 12.3k tokens · 4.2s`;
    /// the tokens only when some child's are known (a child moved to the
    /// background reports them when it ends), the time the longest ran in
    /// the foreground.
    pub fn summary(&self) -> String {
        let count = |want: &dyn Fn(&ChildState) -> bool| {
            self.children.iter().filter(|c| want(&c.state)).count()
        };
        let mut parts = Vec::new();
        for (n, word) in [
            (
                count(&|s| *s == ChildState::Ended(ChildStatus::Completed)),
                "completed",
            ),
            (
                count(&|s| *s == ChildState::Ended(ChildStatus::Failed)),
                "failed",
            ),
            (
                count(&|s| *s == ChildState::Ended(ChildStatus::Cancelled)),
                "cancelled",
            ),
            (
                count(&|s| matches!(s, ChildState::Background(_))),
                "in the background",
            ),
        ] {
            if n > 0 {
                parts.push(format!("{n} {word}"));
            }
        }
        let calls: u32 = self.children.iter().map(|c| c.tool_calls).sum();
        let known: Vec<u64> = self.children.iter().filter_map(|c| c.tokens).collect();
        let tokens = if known.is_empty() {
            String::new()
        } else {
            format!(" · {} tokens", format_tokens(known.iter().sum()))
        };
        let longest = self
            .children
            .iter()
            .filter_map(|c| c.ran)
            .max()
            .unwrap_or_default();
        let n = self.children.len();
        format!(
            "{n} subagent{}: {} · {} tool call{}{tokens} · {:.1}s",
            if n == 1 { "" } else { "s" },
            parts.join(", "),
            calls,
            if calls == 1 { "" } else { "s" },
            longest.as_secs_f64()
        )
    }
}

/// Every batch shown in the panel, oldest first.
#[derive(Debug, Default, Clone)]
pub struct Children {
    /// The batches.
    pub batches: Vec<Batch>,
}

impl Children {
    /// A child started. It joins the open batch of the same parent and size
    /// that lacks its position, or opens a new batch.
    pub fn start(&mut self, mut child: Child, parent: Option<String>) {
        let joins = self.batches.iter_mut().rev().find(|b| {
            b.parent == parent
                && b.total == child.total
                && b.children.len() < b.total
                && b.children.iter().all(|c| c.index != child.index)
        });
        child.state = ChildState::Running;
        match joins {
            Some(batch) => batch.children.push(child),
            None => self.batches.push(Batch {
                parent,
                total: child.total,
                children: vec![child],
            }),
        }
    }

    /// The child with this agent id.
    pub fn get_mut(&mut self, agent_id: &str) -> Option<&mut Child> {
        self.batches
            .iter_mut()
            .rev()
            .flat_map(|b| b.children.iter_mut())
            .find(|c| c.agent_id == agent_id)
    }

    /// A child's tool call finished.
    pub fn progress(&mut self, agent_id: &str, activity: String) {
        if let Some(c) = self.get_mut(agent_id) {
            c.tool_calls += 1;
            c.last_activity = Some(activity);
        }
    }

    /// A child ended; returns its batch's summary when that ends the batch.
    pub fn end(
        &mut self,
        agent_id: &str,
        status: ChildStatus,
        tool_calls: u32,
        tokens: u64,
        ran: Duration,
    ) -> Option<String> {
        let batch = self
            .batches
            .iter_mut()
            .rev()
            .find(|b| b.children.iter().any(|c| c.agent_id == agent_id))?;
        let was_done = batch.is_done();
        if let Some(c) = batch.children.iter_mut().find(|c| c.agent_id == agent_id) {
            c.state = ChildState::Ended(status);
            c.tool_calls = tool_calls;
            c.tokens = Some(tokens);
            c.ran = Some(ran);
        }
        (!was_done && batch.is_done()).then(|| batch.summary())
    }

    /// A child moved to the background at `now`; returns its batch's summary
    /// when nothing of the batch is left in the foreground. Its time so far is
    /// kept as its run time (the summary's), its tool calls stay counted.
    pub fn backgrounded(&mut self, agent_id: &str, task_id: &str, now: Instant) -> Option<String> {
        let batch = self
            .batches
            .iter_mut()
            .rev()
            .find(|b| b.children.iter().any(|c| c.agent_id == agent_id))?;
        let was_done = batch.is_done();
        if let Some(c) = batch.children.iter_mut().find(|c| c.agent_id == agent_id) {
            c.state = ChildState::Background(task_id.to_string());
            c.ran = Some(now.saturating_duration_since(c.started));
        }
        (!was_done && batch.is_done()).then(|| batch.summary())
    }

    /// True while any child runs in the foreground: the panel shows.
    pub fn any_running(&self) -> bool {
        self.batches
            .iter()
            .any(|b| b.children.iter().any(Child::is_running))
    }

    /// Forgets the batches once nothing runs: the panel closes, their
    /// summaries are in the transcript.
    pub fn clear_when_idle(&mut self) {
        if !self.any_running() {
            self.batches.clear();
        }
    }
}

/// A token count in a few characters: `900`, `2.4k`, `33k`, `1.2M`.
pub fn format_tokens(n: u64) -> String {
    let scaled = |value: f64, unit: &str| {
        let s = format!("{value:.1}");
        let s = s.strip_suffix(".0").unwrap_or(&s).to_string();
        format!("{s}{unit}")
    };
    if n < 1000 {
        n.to_string()
    } else if n < 99_950 {
        scaled(n as f64 / 1e3, "k")
    } else if n < 999_500 {
        format!("{}k", (n as f64 / 1e3).round())
    } else {
        scaled(n as f64 / 1e6, "M")
    }
}
