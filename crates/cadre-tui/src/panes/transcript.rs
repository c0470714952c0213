//! A live, read-only view of one task from `/tasks`: a subagent's
//! transcript read from its log, or a background shell's output file's
//! tail, following new lines as they are written. It scrolls (↑/↓,
//! PgUp/PgDn; End follows again), `x` stops the task and Esc goes back to
//! the list. The files are read by a task of its own, which ends when the
//! pane is dropped.

use std::cell::{Cell, RefCell};
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::Duration;

use cadre_core::protocol::TaskKind;
use cadre_core::subagents::transcript::{TranscriptEntry, TranscriptFollower};
use cadre_core::tasks::TaskRow;
use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use tokio::sync::{mpsc, watch};

use crate::pane::{Pane, PaneOut, PaneStep};
use crate::panes::tasks::{Listing, stop_request};
use crate::sanitize::clean_line;
use crate::theme::Theme;
use crate::wrap::wrap_line;

/// How often the file is read for new lines.
pub const FOLLOW_POLL: Duration = Duration::from_millis(250);

/// Bytes of a shell's output read at first: its tail, not all of it.
pub const SHELL_TAIL_BYTES: u64 = 64 * 1024;

/// Lines kept at most: the oldest go first (the log keeps them all).
pub const MAX_LINES: usize = 20_000;

/// New text from the file being followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// Complete lines, and the line being written (not yet ended), if any.
    Lines {
        /// Lines ended since the last update.
        lines: Vec<String>,
        /// The unfinished last line, shown until it is complete.
        partial: String,
    },
    /// The file cannot be read (once; following stops).
    Problem(String),
}

/// What is followed: a child's log, or a shell's output.
enum Source {
    Transcript(TranscriptFollower),
    Output {
        path: PathBuf,
        offset: Option<u64>,
        partial: Vec<u8>,
    },
}

impl Source {
    /// What was written since the last read; `None` when nothing was.
    fn read(&mut self) -> std::io::Result<Option<Update>> {
        match self {
            Source::Transcript(follower) => {
                let lines: Vec<String> = follower
                    .read_new()?
                    .iter()
                    .flat_map(TranscriptEntry::lines)
                    .collect();
                Ok((!lines.is_empty()).then(|| Update::Lines {
                    lines,
                    partial: String::new(),
                }))
            }
            Source::Output {
                path,
                offset,
                partial,
            } => {
                let mut file = std::fs::File::open(&*path)?;
                let mut lines = Vec::new();
                let at = match *offset {
                    Some(at) => at,
                    None => {
                        // First read: the tail only, from a whole line.
                        let len = file.metadata()?.len();
                        let start = len.saturating_sub(SHELL_TAIL_BYTES);
                        if start > 0 {
                            lines.push(format!("… (the first {start} bytes are not shown)"));
                        }
                        start
                    }
                };
                file.seek(SeekFrom::Start(at))?;
                let mut bytes = Vec::new();
                let read = file.read_to_end(&mut bytes)?;
                let skip_first = offset.is_none() && at > 0;
                *offset = Some(at + read as u64);
                if read == 0 && lines.is_empty() {
                    return Ok(None);
                }
                partial.extend_from_slice(&bytes);
                if skip_first {
                    // The tail starts inside a line: drop its rest.
                    match partial.iter().position(|b| *b == b'\n') {
                        Some(end) => {
                            partial.drain(..=end);
                        }
                        None => partial.clear(),
                    }
                }
                if let Some(end) = partial.iter().rposition(|b| *b == b'\n') {
                    let complete: Vec<u8> = partial.drain(..=end).collect();
                    lines.extend(
                        String::from_utf8_lossy(&complete)
                            .lines()
                            .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string()),
                    );
                }
                Ok(Some(Update::Lines {
                    lines,
                    partial: String::from_utf8_lossy(partial).into_owned(),
                }))
            }
        }
    }
}

/// Reads `source` every [`FOLLOW_POLL`] into a channel until its receiver
/// is dropped. A file that does not exist yet (a queued child) is waited for.
fn follow(mut source: Source) -> mpsc::UnboundedReceiver<Update> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(FOLLOW_POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = tx.closed() => break,
                _ = tick.tick() => {}
            }
            let update = match source.read() {
                Ok(Some(update)) => update,
                Ok(None) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    let _ = tx.send(Update::Problem(e.to_string()));
                    break;
                }
            };
            if tx.send(update).is_err() {
                break;
            }
        }
    });
    rx
}

/// One task's transcript or output, followed live.
pub struct TranscriptPane {
    row: TaskRow,
    /// The task table as `/tasks` polls it (for the task's status now).
    rows: Option<watch::Receiver<Listing>>,
    updates: mpsc::UnboundedReceiver<Update>,
    lines: Vec<String>,
    partial: String,
    problem: Option<String>,
    /// The first row shown when scrolled; none while following the end.
    top: Option<usize>,
    /// What the last key did, said in the pane.
    said: Option<String>,
    /// Rows laid out and rows shown at the last draw (keys scroll by them).
    drawn: Cell<(usize, usize)>,
    /// The lines laid out at a width, so a draw wraps only what is new.
    laid_out: RefCell<LaidOut>,
    /// The teammate whose transcript this is, when it is one's.
    teammate: Option<String>,
}

/// [`TranscriptPane::lines`] wrapped at `width`: the rows of the first `lines`.
#[derive(Default)]
struct LaidOut {
    width: u16,
    lines: usize,
    rows: Vec<Line<'static>>,
}

impl TranscriptPane {
    /// Follows a subagent task's log at `log` (see
    /// [`child_log_path`](cadre_core::subagents::transcript::child_log_path)).
    pub fn subagent(row: TaskRow, log: PathBuf, rows: Option<watch::Receiver<Listing>>) -> Self {
        let updates = follow(Source::Transcript(TranscriptFollower::new(log)));
        TranscriptPane::with_updates(row, rows, updates)
    }

    /// Follows a shell task's output file from its tail.
    pub fn shell(row: TaskRow, rows: Option<watch::Receiver<Listing>>) -> Self {
        let updates = follow(Source::Output {
            path: row.output_path.clone(),
            offset: None,
            partial: Vec::new(),
        });
        TranscriptPane::with_updates(row, rows, updates)
    }

    /// A pane showing what `updates` brings (the followers above, or a test's).
    pub fn with_updates(
        row: TaskRow,
        rows: Option<watch::Receiver<Listing>>,
        updates: mpsc::UnboundedReceiver<Update>,
    ) -> Self {
        TranscriptPane {
            row,
            rows,
            updates,
            lines: Vec::new(),
            partial: String::new(),
            problem: None,
            top: None,
            said: None,
            drawn: Cell::new((0, 0)),
            laid_out: RefCell::default(),
            teammate: None,
        }
    }

    /// Follows teammate `name`'s log at `log`: typed text goes to it (see
    /// [`Pane::teammate`]).
    pub fn teammate(
        row: TaskRow,
        log: PathBuf,
        rows: Option<watch::Receiver<Listing>>,
        name: String,
    ) -> Self {
        TranscriptPane::subagent(row, log, rows).for_teammate(name)
    }

    /// The same pane, as teammate `name`'s.
    pub fn for_teammate(mut self, name: String) -> Self {
        self.teammate = Some(name);
        self
    }

    /// True while the view follows new lines (not scrolled up).
    pub fn following(&self) -> bool {
        self.top.is_none()
    }

    /// The lines read so far (without the unfinished one).
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    fn apply(&mut self, update: Update) {
        match update {
            Update::Lines { lines, partial } => {
                self.lines.extend(lines);
                self.partial = partial;
                let over = self.lines.len().saturating_sub(MAX_LINES);
                if over > 0 {
                    self.lines.drain(..over);
                    self.laid_out.get_mut().lines = usize::MAX;
                    // Rows shift up with them; a scrolled view stays roughly put.
                    self.top = self.top.map(|t| t.saturating_sub(over));
                }
            }
            Update::Problem(e) => self.problem = Some(e),
        }
    }

    /// The first row shown now, and how many rows a page has.
    fn view(&self) -> (usize, usize) {
        let (total, height) = self.drawn.get();
        let bottom = total.saturating_sub(height);
        (self.top.unwrap_or(bottom).min(bottom), height.max(1))
    }

    /// Scrolls up `rows` (nothing to scroll when everything fits: it keeps following).
    fn scroll_up(&mut self, top: usize, rows: usize) {
        let (total, height) = self.drawn.get();
        if total > height {
            self.top = Some(top.saturating_sub(rows));
        }
    }

    fn scroll_to(&mut self, top: usize) {
        let (total, height) = self.drawn.get();
        self.top = (top + height < total).then_some(top);
    }

    fn what(&self) -> &'static str {
        match self.row.kind {
            TaskKind::Subagent => "transcript",
            TaskKind::Bash => "output",
        }
    }
}

impl TranscriptPane {
    /// The task's row as the list last read it (as opened when never read again).
    fn current_row(&self) -> TaskRow {
        self.rows
            .as_ref()
            .and_then(|rows| {
                rows.borrow()
                    .rows
                    .iter()
                    .find(|r| r.id == self.row.id)
                    .cloned()
            })
            .unwrap_or_else(|| self.row.clone())
    }
}

impl Pane for TranscriptPane {
    fn title(&self) -> String {
        if let Some(name) = &self.teammate {
            return format!("teammate {name} · {} · {}", self.row.id, self.what());
        }
        let status = self.current_row().status;
        let who = match (&self.row.kind, &self.row.agent_type) {
            (TaskKind::Subagent, Some(t)) => format!("{t}: "),
            _ => String::new(),
        };
        format!(
            "{} {} · {who}{} · {status}",
            self.row.id,
            self.what(),
            self.row.description
        )
    }

    fn keys_help(&self) -> String {
        let follow = if self.following() {
            "following"
        } else {
            "End follows"
        };
        if let Some(name) = &self.teammate {
            return format!(
                "type to message {name}, Enter sends · Esc interrupts it (back when it rests) · x on an empty prompt stops it · ↑/↓ PgUp/PgDn scroll · {follow}"
            );
        }
        format!("↑/↓ PgUp/PgDn scroll · {follow} · x stop · Esc back")
    }

    fn key(&mut self, key: KeyEvent, out: &mut PaneOut) -> PaneStep {
        let (top, page) = self.view();
        match key.code {
            KeyCode::Esc => return PaneStep::Close,
            KeyCode::Up => self.scroll_up(top, 1),
            KeyCode::Down => self.scroll_to(top + 1),
            KeyCode::PageUp => self.scroll_up(top, page.saturating_sub(1).max(1)),
            KeyCode::PageDown => self.scroll_to(top + page.saturating_sub(1).max(1)),
            KeyCode::Home => self.scroll_up(top, top),
            KeyCode::End => self.top = None,
            KeyCode::Char('x') => {
                let status = self.current_row();
                self.said = Some(stop_request(&status, out));
            }
            _ => {}
        }
        PaneStep::Stay
    }

    fn render(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme) {
        let wrap =
            |text: &str, style| wrap_line(&Line::styled(clean_line(text), style), area.width);
        let mut laid_out = self.laid_out.borrow_mut();
        if laid_out.width != area.width || laid_out.lines > self.lines.len() {
            *laid_out = LaidOut {
                width: area.width,
                ..LaidOut::default()
            };
        }
        for line in &self.lines[laid_out.lines..] {
            let new = wrap(line, ratatui::style::Style::default());
            laid_out.rows.extend(new);
        }
        laid_out.lines = self.lines.len();
        // The laid-out rows, then what changes from one draw to the next.
        let mut rows: Vec<Line<'static>> = Vec::new();
        let mut push = |text: &str, style| rows.extend(wrap(text, style));
        if self.lines.is_empty() && self.partial.is_empty() && self.problem.is_none() {
            push(&format!("(no {} yet)", self.what()), theme.dim());
        }
        if !self.partial.is_empty() {
            push(&self.partial, ratatui::style::Style::default());
        }
        if let Some(problem) = &self.problem {
            push(
                &format!("cannot read the {}: {problem}", self.what()),
                theme.error(),
            );
        }
        // The last row says what the last key did.
        let height = usize::from(area.height).saturating_sub(usize::from(self.said.is_some()));
        self.drawn.set((laid_out.rows.len() + rows.len(), height));
        let (top, _) = self.view();
        let mut shown: Vec<Line<'static>> = laid_out
            .rows
            .iter()
            .chain(&rows)
            .skip(top)
            .take(height)
            .cloned()
            .collect();
        if let Some(said) = &self.said {
            shown.resize(height, Line::default());
            shown.push(Line::styled(clean_line(said), theme.warning()));
        }
        frame.render_widget(Paragraph::new(shown), area);
    }

    fn refresh(&mut self) -> bool {
        let mut changed = false;
        while let Ok(update) = self.updates.try_recv() {
            self.apply(update);
            changed = true;
        }
        if let Some(rows) = &mut self.rows {
            changed |= rows.has_changed().unwrap_or(false);
            rows.mark_unchanged();
        }
        changed
    }

    fn live(&self) -> bool {
        true
    }

    fn teammate(&self) -> Option<String> {
        self.teammate.clone()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::panes::tasks::tests::row;
    use cadre_core::protocol::{Op, TaskStatus};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::crossterm::event::KeyModifiers;

    fn key(pane: &mut TranscriptPane, code: KeyCode) -> (PaneOut, PaneStep) {
        let mut out = PaneOut::default();
        let step = pane.key(KeyEvent::new(code, KeyModifiers::NONE), &mut out);
        (out, step)
    }

    fn draw(pane: &TranscriptPane, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(40, height)).unwrap();
        terminal
            .draw(|f| pane.render(f, f.area(), &Theme { color: false }))
            .unwrap();
        let buffer = terminal.backend().buffer().clone();
        (0..height)
            .map(|y| {
                (0..40)
                    .map(|x| buffer[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn lines(n: std::ops::Range<usize>) -> Update {
        Update::Lines {
            lines: n.map(|i| format!("line {i}")).collect(),
            partial: String::new(),
        }
    }

    #[test]
    fn new_lines_are_followed_until_scrolled_and_end_follows_again() {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut pane = TranscriptPane::with_updates(
            row("t-1", TaskKind::Subagent, TaskStatus::Running),
            None,
            rx,
        );
        tx.send(lines(0..3)).unwrap();
        assert!(pane.refresh());
        draw(&pane, 4);
        key(&mut pane, KeyCode::Up);
        assert!(pane.following(), "all of it fits: nothing to scroll");
        tx.send(lines(3..10)).unwrap();
        assert!(pane.refresh());
        let screen = draw(&pane, 4);
        assert!(screen.ends_with("line 9"), "{screen}");
        // Scrolled up, new lines do not move the view.
        key(&mut pane, KeyCode::Up);
        assert!(!pane.following());
        tx.send(lines(10..12)).unwrap();
        pane.refresh();
        let screen = draw(&pane, 4);
        assert!(screen.starts_with("line 5"), "{screen}");
        assert!(!screen.contains("line 11"), "{screen}");
        key(&mut pane, KeyCode::PageUp);
        assert!(draw(&pane, 4).starts_with("line 2"));
        // ↓ to the bottom follows again; so does End.
        key(&mut pane, KeyCode::PageDown);
        key(&mut pane, KeyCode::PageDown);
        key(&mut pane, KeyCode::PageDown);
        assert!(pane.following());
        key(&mut pane, KeyCode::Home);
        assert!(draw(&pane, 4).starts_with("line 0"));
        key(&mut pane, KeyCode::End);
        assert!(pane.following());
        tx.send(lines(12..13)).unwrap();
        pane.refresh();
        assert!(draw(&pane, 4).ends_with("line 12"));
    }

    #[test]
    fn rows_are_laid_out_again_when_the_width_changes_or_old_lines_go() {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut pane = TranscriptPane::with_updates(
            row("t-1", TaskKind::Subagent, TaskStatus::Running),
            None,
            rx,
        );
        tx.send(Update::Lines {
            lines: vec!["alpha beta gamma delta epsilon zeta eta theta".into()],
            partial: String::new(),
        })
        .unwrap();
        pane.refresh();
        assert_eq!(draw(&pane, 4).lines().filter(|l| !l.is_empty()).count(), 2);
        let mut terminal = Terminal::new(TestBackend::new(20, 4)).unwrap();
        terminal
            .draw(|f| pane.render(f, f.area(), &Theme { color: false }))
            .unwrap();
        assert_eq!(pane.drawn.get().0, 3, "three rows at 20 columns");
        tx.send(lines(0..MAX_LINES)).unwrap();
        pane.refresh();
        assert_eq!(pane.lines().len(), MAX_LINES);
        assert_eq!(pane.lines()[0], "line 0", "the oldest line went");
        assert!(draw(&pane, 4).ends_with(&format!("line {}", MAX_LINES - 1)));
        assert_eq!(pane.drawn.get().0, MAX_LINES);
    }

    #[test]
    fn x_stops_the_task_and_esc_goes_back() {
        let (_tx, rx) = mpsc::unbounded_channel();
        let mut pane = TranscriptPane::with_updates(
            row("t-7", TaskKind::Subagent, TaskStatus::Running),
            None,
            rx,
        );
        let (out, step) = key(&mut pane, KeyCode::Char('x'));
        assert!(matches!(step, PaneStep::Stay));
        assert!(
            matches!(&out.ops[..], [Op::StopTask { task_id }] if task_id == "t-7"),
            "{:?}",
            out.ops
        );
        assert!(draw(&pane, 4).contains("stopping t-7"));
        let (out, step) = key(&mut pane, KeyCode::Esc);
        assert!(matches!(step, PaneStep::Close));
        assert!(out.ops.is_empty());
        // An ended task is not stopped again.
        let (_tx, rx) = mpsc::unbounded_channel();
        let mut pane = TranscriptPane::with_updates(
            row("t-8", TaskKind::Bash, TaskStatus::Succeeded),
            None,
            rx,
        );
        let (out, _) = key(&mut pane, KeyCode::Char('x'));
        assert!(out.ops.is_empty());
        assert!(draw(&pane, 4).contains("already ended"));
    }

    #[test]
    fn escapes_in_the_file_never_reach_the_terminal_and_the_partial_line_shows() {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut pane =
            TranscriptPane::with_updates(row("t-2", TaskKind::Bash, TaskStatus::Running), None, rx);
        tx.send(Update::Lines {
            lines: vec!["red \u{1b}[31mtext".into()],
            partial: "50%".into(),
        })
        .unwrap();
        pane.refresh();
        let screen = draw(&pane, 3);
        assert!(!screen.contains('\u{1b}'), "{screen}");
        assert!(screen.contains("red ␛text"), "{screen}");
        assert!(screen.contains("50%"), "{screen}");
    }

    #[tokio::test]
    async fn a_shell_output_is_read_from_its_tail_then_followed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("output.log");
        let mut text = "x".repeat(SHELL_TAIL_BYTES as usize);
        text.push_str("\nkept 1\nkept 2\nhalf");
        std::fs::write(&path, &text).unwrap();
        let mut source = Source::Output {
            path: path.clone(),
            offset: None,
            partial: Vec::new(),
        };
        let Some(Update::Lines { lines, partial }) = source.read().unwrap() else {
            panic!("lines expected");
        };
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].starts_with("… (the first"), "{lines:?}");
        assert_eq!(&lines[1..], ["kept 1", "kept 2"]);
        assert_eq!(partial, "half");
        assert_eq!(source.read().unwrap(), None);
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        write!(file, " done\nnext\n").unwrap();
        assert_eq!(
            source.read().unwrap(),
            Some(Update::Lines {
                lines: vec!["half done".into(), "next".into()],
                partial: String::new()
            })
        );
    }
}
