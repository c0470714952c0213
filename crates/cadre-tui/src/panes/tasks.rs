//! `/tasks`: this session's subagents and background shells from the task
//! table, with kind, type, status, age and description, refreshed live.
//! ↑/↓ select, Enter opens a task's live transcript (a subagent) or output
//! (a shell), `x` stops it, Esc closes. The table is polled by a task of
//! its own into a watch channel while the pane (or a transcript opened from
//! it) exists.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cadre_core::driver::SessionHandle;
use cadre_core::protocol::{Op, TaskKind, TaskStatus};
use cadre_core::subagents::transcript::child_log_path;
use cadre_core::tasks::TaskRow;
use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use tokio::sync::watch;
use unicode_width::UnicodeWidthStr;

use crate::children::format_tokens;
use crate::pane::{Pane, PaneOut, PaneStep};
use crate::panes::transcript::TranscriptPane;
use crate::sanitize::clean_line;
use crate::theme::Theme;

/// How often the task table is read while the pane is open.
pub const POLL: Duration = Duration::from_millis(500);

/// Column widths: kind, type, status, age (the description takes the rest).
const KIND_W: usize = 10;
const TYPE_W: usize = 14;
const STATUS_W: usize = 11;
const AGE_W: usize = 12;

/// The task table as last read.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// This session's tasks, newest first.
    pub rows: Vec<TaskRow>,
    /// False until the first read is done.
    pub loaded: bool,
    /// Why the last read failed, if it did.
    pub error: Option<String>,
}

/// Reads `handle`'s tasks every [`POLL`] into a watch channel until every
/// receiver is gone.
pub fn poll_tasks(handle: SessionHandle) -> watch::Receiver<Listing> {
    let (tx, rx) = watch::channel(Listing::default());
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = tx.closed() => break,
                _ = tick.tick() => {}
            }
            let listing = match handle.tasks().await {
                Ok(rows) => Listing {
                    rows,
                    loaded: true,
                    error: None,
                },
                Err(e) => Listing {
                    rows: tx.borrow().rows.clone(),
                    loaded: true,
                    error: Some(e.to_string()),
                },
            };
            if tx.send(listing).is_err() {
                break;
            }
        }
    });
    rx
}

/// Asks to stop `row`'s task (unless it has ended) and says so: the text
/// for the pane; a notice for the transcript goes into `out`.
pub fn stop_request(row: &TaskRow, out: &mut PaneOut) -> String {
    if row.status.is_final() {
        return format!(
            "task {} already ended as {}; nothing to stop",
            row.id, row.status
        );
    }
    out.ops.push(Op::StopTask {
        task_id: row.id.clone(),
    });
    let said = format!("stopping {} ({})…", row.id, clean_line(&row.description));
    out.notices.push(said.clone());
    said
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `42s`, `5m 12s`, `3h 5m`, `2d 3h`.
pub fn span(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m {}s", s / 60, s % 60),
        s if s < 86_400 => format!("{}h {}m", s / 3600, s % 3600 / 60),
        s => format!("{}d {}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// How long a task has run, or how long ago it ended.
pub fn age(row: &TaskRow, now: u64) -> String {
    match row.ended_ms {
        Some(ended) if row.status.is_final() => format!("{} ago", span(now.saturating_sub(ended))),
        _ => span(now.saturating_sub(row.started_ms.unwrap_or(row.created_ms))),
    }
}

/// `text` cut to `width` columns less one, then padded: a column and the
/// one after it never touch.
fn column(text: &str, width: usize) -> String {
    let mut out = fit(text, width.saturating_sub(1));
    out.push(' ');
    out
}

/// `text` cut or padded to `width` columns.
fn fit(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    if text.width() > width {
        for c in text.chars() {
            let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if used + w + 1 > width {
                break;
            }
            out.push(c);
            used += w;
        }
        out.push('…');
        used += 1;
    } else {
        out.push_str(text);
        used = text.width();
    }
    out.push_str(&" ".repeat(width.saturating_sub(used)));
    out
}

fn status_style(status: TaskStatus, theme: &Theme) -> Style {
    match status {
        TaskStatus::Queued | TaskStatus::Running | TaskStatus::Stopping => theme.warning(),
        TaskStatus::Succeeded => theme.ok(),
        TaskStatus::Cancelled => theme.dim(),
        TaskStatus::Failed | TaskStatus::Lost => theme.error(),
    }
}

/// The `/tasks` list.
pub struct TasksPane {
    rows: watch::Receiver<Listing>,
    listing: Listing,
    /// The selected task's id (kept across refreshes).
    selected: Option<String>,
    home: PathBuf,
    /// What the last key did.
    said: Option<String>,
    /// A fixed clock (snapshots); none reads the system's.
    fixed_now: Option<u64>,
}

impl TasksPane {
    /// The list of `handle`'s session's tasks; `home` is the data directory
    /// (where the children's logs are).
    pub fn new(handle: SessionHandle, home: PathBuf) -> Self {
        TasksPane::with_rows(poll_tasks(handle), home)
    }

    /// The list of what `rows` brings (the poller above, or a test's).
    pub fn with_rows(mut rows: watch::Receiver<Listing>, home: PathBuf) -> Self {
        let listing = rows.borrow_and_update().clone();
        TasksPane {
            listing,
            rows,
            selected: None,
            home,
            said: None,
            fixed_now: None,
        }
    }

    /// Draws ages as at `now_ms` (for snapshots).
    pub fn at(mut self, now_ms: u64) -> Self {
        self.fixed_now = Some(now_ms);
        self
    }

    fn now(&self) -> u64 {
        self.fixed_now.unwrap_or_else(now_ms)
    }

    /// The index of the selected row.
    fn index(&self) -> Option<usize> {
        let rows = &self.listing.rows;
        if rows.is_empty() {
            return None;
        }
        Some(
            self.selected
                .as_ref()
                .and_then(|id| rows.iter().position(|r| &r.id == id))
                .unwrap_or(0),
        )
    }

    /// The selected task.
    pub fn selected(&self) -> Option<&TaskRow> {
        self.index().and_then(|i| self.listing.rows.get(i))
    }

    fn select(&mut self, index: usize) {
        self.selected = self.listing.rows.get(index).map(|r| r.id.clone());
    }

    /// Enter: the selected task's transcript or output.
    fn open(&mut self) -> PaneStep {
        let Some(row) = self.selected().cloned() else {
            return PaneStep::Stay;
        };
        let rows = Some(self.rows.clone());
        match row.kind {
            TaskKind::Bash => PaneStep::Open(Box::new(TranscriptPane::shell(row, rows))),
            TaskKind::Subagent => match child_log_path(&self.home, &row) {
                Some(log) => PaneStep::Open(Box::new(TranscriptPane::subagent(row, log, rows))),
                None => {
                    self.said = Some(format!(
                        "task {} has no transcript yet (its log is not filed)",
                        row.id
                    ));
                    PaneStep::Stay
                }
            },
        }
    }

    fn row_line(
        &self,
        row: &TaskRow,
        selected: bool,
        width: usize,
        theme: &Theme,
    ) -> Line<'static> {
        let mark = if selected { "› " } else { "  " };
        let used = 2 + KIND_W + TYPE_W + STATUS_W + AGE_W;
        let description = fit(&clean_line(&row.description), width.saturating_sub(used));
        let agent_type = row.agent_type.as_deref().map(clean_line);
        let mut spans = vec![
            Span::styled(mark, theme.user()),
            Span::raw(column(row.kind.as_str(), KIND_W)),
            match &agent_type {
                Some(t) => Span::styled(column(t, TYPE_W), theme.agent_type(t)),
                None => Span::styled(column("—", TYPE_W), theme.dim()),
            },
            Span::styled(
                column(row.status.as_str(), STATUS_W),
                status_style(row.status, theme),
            ),
            Span::styled(column(&age(row, self.now()), AGE_W), theme.dim()),
            Span::raw(description),
        ];
        if selected {
            for span in &mut spans {
                span.style = span.style.add_modifier(ratatui::style::Modifier::REVERSED);
            }
        }
        Line::from(spans)
    }

    /// One line about the selected task: id, progress, result or error.
    fn detail(&self, row: &TaskRow) -> String {
        let mut parts = vec![row.id.clone()];
        if row.kind == TaskKind::Subagent {
            parts.push(format!(
                "{} tool call{}",
                row.tool_calls,
                if row.tool_calls == 1 { "" } else { "s" }
            ));
            parts.push(format!("{} tok", format_tokens(row.tokens)));
        }
        if !row.background {
            parts.push("foreground".into());
        }
        // A result's or error's lines joined by spaces: one line, no
        // replacement marks where its newlines were.
        let one_line = |text: &str| {
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        };
        if let Some(e) = &row.error {
            parts.push(format!("error: {}", one_line(e)));
        } else if let Some(r) = &row.result_summary {
            parts.push(format!("result: {}", one_line(r)));
        }
        clean_line(&parts.join(" · "))
    }
}

impl Pane for TasksPane {
    fn title(&self) -> String {
        let running = self
            .listing
            .rows
            .iter()
            .filter(|r| r.status.is_active())
            .count();
        format!(
            "Tasks · {running} running · {} in all",
            self.listing.rows.len()
        )
    }

    fn keys_help(&self) -> String {
        "↑/↓ select · Enter transcript or output · x stop · Esc close".into()
    }

    fn key(&mut self, key: KeyEvent, out: &mut PaneOut) -> PaneStep {
        let at = self.index();
        match key.code {
            KeyCode::Esc => return PaneStep::Close,
            KeyCode::Up => {
                if let Some(i) = at {
                    self.select(i.saturating_sub(1));
                }
            }
            KeyCode::Down => {
                if let Some(i) = at {
                    self.select((i + 1).min(self.listing.rows.len().saturating_sub(1)));
                }
            }
            KeyCode::Home => self.select(0),
            KeyCode::End => self.select(self.listing.rows.len().saturating_sub(1)),
            KeyCode::Enter => return self.open(),
            KeyCode::Char('x') => {
                if let Some(row) = self.selected().cloned() {
                    self.said = Some(stop_request(&row, out));
                }
            }
            _ => {}
        }
        PaneStep::Stay
    }

    fn render(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let width = usize::from(area.width);
        let mut top: Vec<Line<'static>> = Vec::new();
        let mut bottom: Vec<Line<'static>> = Vec::new();
        if let Some(e) = &self.listing.error {
            bottom.push(Line::styled(
                clean_line(&format!("cannot read the task table: {e}")),
                theme.error(),
            ));
        }
        if let Some(row) = self.selected() {
            bottom.push(Line::styled(self.detail(row), theme.dim()));
        }
        if let Some(said) = &self.said {
            bottom.push(Line::styled(clean_line(said), theme.warning()));
        }
        if !self.listing.loaded {
            top.push(Line::styled("reading the task table…", theme.dim()));
        } else if self.listing.rows.is_empty() {
            top.push(Line::styled(
                "No subagents or background shells in this session yet.",
                theme.dim(),
            ));
        } else {
            top.push(Line::styled(
                format!(
                    "  {}{}{}{}DESCRIPTION",
                    column("KIND", KIND_W),
                    column("TYPE", TYPE_W),
                    column("STATUS", STATUS_W),
                    column("AGE", AGE_W)
                ),
                theme.bold(),
            ));
            // Keep the selected row in view.
            let room = usize::from(area.height)
                .saturating_sub(1 + bottom.len() + 1)
                .max(1);
            let at = self.index().unwrap_or(0);
            let first = (at + 1).saturating_sub(room);
            for (i, row) in self.listing.rows.iter().enumerate().skip(first).take(room) {
                top.push(self.row_line(row, i == at, width, theme));
            }
        }
        let gap = usize::from(area.height).saturating_sub(top.len() + bottom.len());
        top.extend(std::iter::repeat_n(Line::default(), gap));
        top.extend(bottom);
        frame.render_widget(Paragraph::new(top), area);
    }

    fn refresh(&mut self) -> bool {
        if !self.rows.has_changed().unwrap_or(false) {
            return false;
        }
        self.listing = self.rows.borrow_and_update().clone();
        // A selected task that left the list: back to the first.
        if self.index().is_some() && self.selected().map(|r| &r.id) != self.selected.as_ref() {
            self.select(0);
        }
        true
    }

    fn live(&self) -> bool {
        true
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use ratatui::crossterm::event::KeyModifiers;

    /// A row of the task table, created at 1 000 000 ms.
    pub(crate) fn row(id: &str, kind: TaskKind, status: TaskStatus) -> TaskRow {
        TaskRow {
            id: id.into(),
            kind,
            session_id: "s".into(),
            parent_agent: "main".into(),
            description: format!("job {id}"),
            agent_type: (kind == TaskKind::Subagent).then(|| "Explore".to_string()),
            name: None,
            status,
            background: true,
            created_ms: 1_000_000,
            started_ms: Some(1_000_000),
            ended_ms: status.is_final().then_some(1_010_000),
            output_path: PathBuf::from("/nonexistent/tasks")
                .join(id)
                .join("output.log"),
            result_summary: None,
            error: None,
            owner_pid: 1,
            owner_start: None,
            owner_boot: None,
            pgid: None,
            pgid_start: None,
            tool_calls: 0,
            tokens: 0,
            last_activity_ms: None,
            notified: false,
        }
    }

    fn pane(rows: Vec<TaskRow>) -> (watch::Sender<Listing>, TasksPane) {
        let (tx, rx) = watch::channel(Listing {
            rows,
            loaded: true,
            error: None,
        });
        let pane = TasksPane::with_rows(rx, PathBuf::from("/nonexistent"));
        (tx, pane)
    }

    fn key(pane: &mut TasksPane, code: KeyCode) -> (PaneOut, PaneStep) {
        let mut out = PaneOut::default();
        let step = pane.key(KeyEvent::new(code, KeyModifiers::NONE), &mut out);
        (out, step)
    }

    #[test]
    fn arrows_select_and_x_stops_the_selected_task_saying_so() {
        let (_tx, mut pane) = pane(vec![
            row("t-1", TaskKind::Subagent, TaskStatus::Running),
            row("t-2", TaskKind::Bash, TaskStatus::Running),
            row("t-3", TaskKind::Bash, TaskStatus::Succeeded),
        ]);
        assert_eq!(pane.selected().unwrap().id, "t-1");
        key(&mut pane, KeyCode::Up);
        assert_eq!(pane.selected().unwrap().id, "t-1", "stays at the top");
        key(&mut pane, KeyCode::Down);
        let (out, step) = key(&mut pane, KeyCode::Char('x'));
        assert!(matches!(step, PaneStep::Stay));
        assert!(
            matches!(&out.ops[..], [Op::StopTask { task_id }] if task_id == "t-2"),
            "{:?}",
            out.ops
        );
        assert_eq!(out.notices, ["stopping t-2 (job t-2)…"]);
        key(&mut pane, KeyCode::Down);
        key(&mut pane, KeyCode::Down);
        assert_eq!(pane.selected().unwrap().id, "t-3", "stays at the bottom");
        let (out, _) = key(&mut pane, KeyCode::Char('x'));
        assert!(out.ops.is_empty(), "an ended task is not stopped");
        assert_eq!(
            pane.said.as_deref(),
            Some("task t-3 already ended as succeeded; nothing to stop")
        );
        let (out, step) = key(&mut pane, KeyCode::Esc);
        assert!(matches!(step, PaneStep::Close));
        assert!(out.ops.is_empty() && out.notices.is_empty());
    }

    #[test]
    fn the_selection_follows_its_task_across_refreshes() {
        let (tx, mut pane) = pane(vec![
            row("t-1", TaskKind::Subagent, TaskStatus::Running),
            row("t-2", TaskKind::Bash, TaskStatus::Running),
        ]);
        key(&mut pane, KeyCode::Down);
        assert!(!pane.refresh(), "nothing new");
        tx.send(Listing {
            rows: vec![
                row("t-0", TaskKind::Bash, TaskStatus::Queued),
                row("t-1", TaskKind::Subagent, TaskStatus::Running),
                row("t-2", TaskKind::Bash, TaskStatus::Cancelled),
            ],
            loaded: true,
            error: None,
        })
        .unwrap();
        assert!(pane.refresh());
        assert_eq!(pane.selected().unwrap().id, "t-2");
        assert_eq!(pane.selected().unwrap().status, TaskStatus::Cancelled);
        assert_eq!(pane.title(), "Tasks · 2 running · 3 in all");
    }

    #[tokio::test]
    async fn enter_opens_a_shell_output_and_a_subagent_without_a_log_says_so() {
        let (_tx, mut pane) = pane(vec![
            row("t-1", TaskKind::Subagent, TaskStatus::Running),
            row("t-2", TaskKind::Bash, TaskStatus::Running),
        ]);
        let (out, step) = key(&mut pane, KeyCode::Enter);
        assert!(matches!(step, PaneStep::Stay));
        assert!(out.ops.is_empty());
        assert!(pane.said.as_deref().unwrap().contains("no transcript yet"));
        key(&mut pane, KeyCode::Down);
        let (_, step) = key(&mut pane, KeyCode::Enter);
        let PaneStep::Open(opened) = step else {
            panic!("a pane opens");
        };
        assert!(
            opened.title().starts_with("t-2 output"),
            "{}",
            opened.title()
        );
    }

    #[tokio::test]
    async fn enter_on_a_subagent_opens_its_transcript_from_its_log() {
        let home = tempfile::tempdir().unwrap();
        let mut child = row("t-1", TaskKind::Subagent, TaskStatus::Running);
        let task_dir = home.path().join("tasks").join("t-1");
        std::fs::create_dir_all(&task_dir).unwrap();
        child.output_path = task_dir.join("output.log");
        std::fs::write(task_dir.join("agent.json"), r#"{"agent_id":"a-1"}"#).unwrap();
        let (_tx, rx) = watch::channel(Listing {
            rows: vec![child.clone()],
            loaded: true,
            error: None,
        });
        let mut pane = TasksPane::with_rows(rx, home.path().to_path_buf());
        let (_, step) = key(&mut pane, KeyCode::Enter);
        let PaneStep::Open(opened) = step else {
            panic!("a transcript opens: {:?}", pane.said);
        };
        assert_eq!(
            opened.title(),
            "t-1 transcript · Explore: job t-1 · running"
        );
        assert!(child_log_path(home.path(), &child).is_some());
    }

    #[test]
    fn ages_are_running_times_or_ended_ago() {
        let running = row("t-1", TaskKind::Bash, TaskStatus::Running);
        assert_eq!(age(&running, 1_065_000), "1m 5s");
        let ended = row("t-2", TaskKind::Bash, TaskStatus::Failed);
        assert_eq!(age(&ended, 1_015_000), "5s ago");
        assert_eq!(span(3 * 3_600_000 + 120_000), "3h 2m");
        assert_eq!(span(2 * 86_400_000), "2d 0h");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("ab", 4), "ab  ");
    }
}
