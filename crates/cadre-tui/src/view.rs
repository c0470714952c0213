//! Drawing the model: pure functions from an [`App`] (and the time, for
//! elapsed clocks) to a frame. Nothing here changes state, so every screen
//! can be drawn on ratatui's `TestBackend` and compared with a snapshot.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use unicode_width::UnicodeWidthStr;

use crate::app::App;
use crate::children::{Batch, ChildState, format_tokens};
use crate::pane::Pane;
use crate::sanitize::{clean_line, clean_lines};
use crate::theme::Theme;
use crate::wrap::wrap_line;
use cadre_core::protocol::{ApprovalQuestion, TeammateState};
use cadre_core::tools::ask_user::AskedQuestion;

/// The smallest terminal the screen is drawn in; below it one line says so.
pub const MIN_WIDTH: u16 = 40;
/// See [`MIN_WIDTH`].
pub const MIN_HEIGHT: u16 = 10;

/// Rows of the prompt's text shown at most (it scrolls past that).
const PROMPT_ROWS: usize = 8;
/// Lines of a question's input shown in the dialog at most.
const DIALOG_INPUT_LINES: usize = 12;

/// Where each part of the screen goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    /// The transcript.
    pub transcript: Rect,
    /// The subagent panel, while children run.
    pub panel: Option<Rect>,
    /// The prompt, its top rule included.
    pub prompt: Rect,
    /// The status line.
    pub status: Rect,
}

/// Splits the screen; none when it is too small to draw.
pub fn areas(area: Rect, app: &App, now: Instant, theme: &Theme) -> Option<Areas> {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        return None;
    }
    let status_h = app
        .status_rows
        .as_ref()
        .map_or(1, |rows| rows.len().clamp(1, 3)) as u16;
    let status = Rect::new(area.x, area.bottom() - status_h, area.width, status_h);
    let prompt_rows = prompt_rows(app, area.width).len().clamp(1, PROMPT_ROWS) as u16;
    let prompt_h = (prompt_rows + 1).min(area.height / 2);
    let prompt = Rect::new(area.x, status.y - prompt_h, area.width, prompt_h);
    let rest = prompt.y - area.y;
    let panel_lines = panel_lines(app, now, theme, area.width).len() as u16;
    let panel = (panel_lines > 0).then(|| {
        let h = (panel_lines + 1).min(rest / 2);
        Rect::new(area.x, prompt.y - h, area.width, h)
    });
    let top = panel.map_or(prompt.y, |p| p.y);
    let transcript = Rect::new(area.x, area.y, area.width, top - area.y);
    Some(Areas {
        transcript,
        panel,
        prompt,
        status,
    })
}

/// Draws the whole screen.
pub fn render(frame: &mut Frame<'_>, app: &App, now: Instant, theme: &Theme) {
    let area = frame.area();
    let Some(a) = areas(area, app, now, theme) else {
        let notice = format!("terminal too small: {MIN_WIDTH}×{MIN_HEIGHT} needed");
        frame.render_widget(
            Paragraph::new(Line::styled(notice, theme.warning())),
            Rect::new(area.x, area.y, area.width, area.height.min(1)),
        );
        return;
    };
    render_transcript(frame, app, a.transcript, theme);
    if let Some(panel) = a.panel {
        render_panel(frame, app, panel, now, theme);
    }
    render_prompt(frame, app, a.prompt, now, theme);
    render_status(frame, app, a.status, theme);
    if let Some(popup) = &app.completion.popup
        && app.panes.is_empty()
        && app.open_question().is_none()
    {
        let over = Rect::new(area.x, area.y, area.width, a.prompt.y - area.y);
        crate::completion::render_popup(frame, popup, over, theme);
    }
    if let Some(pane) = app.panes.top() {
        let over = Rect::new(area.x, area.y, area.width, a.prompt.y - area.y);
        render_pane(frame, pane, over, theme);
    }
    if app.open_question().is_some() {
        let over = Rect::new(area.x, area.y, area.width, a.prompt.y - area.y);
        render_dialog(frame, app, over, now, theme);
    }
}

/// The transcript's rows that fit `area`, `app.scroll` rows up from the end.
pub fn render_transcript(frame: &mut Frame<'_>, app: &App, area: Rect, theme: &Theme) {
    let height = usize::from(area.height);
    let want = height + app.scroll;
    let entries = app.transcript.entries();
    // Walk back from the newest entry, counting rows, until the window is
    // covered: entries further up are never laid out (their row counts are
    // cached once they were), and only the rows shown are copied.
    let mut first = entries.len();
    let mut total = 0usize;
    while first > 0 && total < want {
        first -= 1;
        total += entries[first].rows(area.width, app.verbose, theme).len();
    }
    // Scrolled past the top: show the first page.
    let skip = app.scroll.min(total.saturating_sub(height));
    let end = total - skip;
    let begin = end.saturating_sub(height);
    let mut visible: Vec<Line<'static>> = Vec::with_capacity(end - begin);
    let mut at = 0usize;
    for entry in &entries[first..] {
        let rows = entry.rows(area.width, app.verbose, theme);
        let next = at + rows.len();
        if next > begin && at < end {
            let from = begin.saturating_sub(at);
            let to = (end - at).min(rows.len());
            visible.extend(rows[from..to].iter().cloned());
        }
        at = next;
        if at >= end {
            break;
        }
    }
    // Short transcripts sit at the bottom, next to the prompt.
    let pad = height.saturating_sub(visible.len()) as u16;
    let inner = Rect::new(area.x, area.y + pad, area.width, area.height - pad);
    frame.render_widget(Paragraph::new(visible), inner);
}

/// The panel's lines: per batch either its children (nested batches under
/// their parent) or, once it is done, its summary.
pub fn panel_lines(app: &App, now: Instant, theme: &Theme, width: u16) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if app.children.any_running() {
        children_lines(app, now, theme, width, &mut lines);
    }
    team_lines(app, now, theme, width, &mut lines);
    lines
}

/// One row per teammate: name, type, state, the board task it works on,
/// its tokens; the selected one marked while the panel has the keys. With
/// the keys elsewhere, long-idle teammates are hidden and many idle ones
/// fold into one row ([`crate::team::Team::panel_rows`]); selecting shows
/// them all again.
fn team_lines(app: &App, now: Instant, theme: &Theme, width: u16, lines: &mut Vec<Line<'static>>) {
    let rows = if app.team_focus.is_some() {
        crate::team::PanelRows {
            shown: (0..app.team.members.len()).collect(),
            idle_folded: 0,
        }
    } else {
        app.team.panel_rows(now)
    };
    for &i in &rows.shown {
        let Some(m) = app.team.members.get(i) else {
            continue;
        };
        let selected = app.team_focus == Some(i);
        let (mark, style) = match m.state {
            TeammateState::Working => ("◐", theme.warning()),
            TeammateState::Idle => ("○", theme.dim()),
            TeammateState::Failed => ("✗", theme.error()),
            TeammateState::Ended => ("●", theme.dim()),
        };
        let task = crate::team::task_label(app.team.board.current_task(&m.name).as_ref());
        let tokens = m
            .tokens
            .map_or_else(String::new, |t| format!(" · {} tok", format_tokens(t)));
        let spans = vec![
            Span::raw(if selected { "› " } else { "  " }),
            Span::styled(format!("{mark} "), style),
            Span::styled(clean_line(&m.name), theme.bold()),
            Span::raw(" "),
            Span::styled(
                clean_line(&m.agent_type),
                theme.agent_type_in(&m.agent_type, None),
            ),
            Span::styled(format!(" · {}", m.state.as_str()), style),
            Span::raw(format!(" · {}", clean_line(&task))),
            Span::styled(tokens, theme.dim()),
        ];
        let mut line = truncate(Line::from(spans), width);
        if selected {
            line = line.style(
                ratatui::style::Style::new().add_modifier(ratatui::style::Modifier::REVERSED),
            );
        }
        lines.push(line);
    }
    if rows.idle_folded > 0 {
        let n = rows.idle_folded;
        let noun = if n == 1 { "agent" } else { "agents" };
        lines.push(Line::from(vec![
            Span::raw("  "),
            Span::styled(format!("○ {n} idle {noun} · ↓ to show"), theme.dim()),
        ]));
    }
}

/// The children's rows (nested batches under their parent).
fn children_lines(
    app: &App,
    now: Instant,
    theme: &Theme,
    width: u16,
    lines: &mut Vec<Line<'static>>,
) {
    let batches = &app.children.batches;
    for (i, batch) in batches.iter().enumerate() {
        let top_level = batch.parent.as_ref().is_none_or(|p| {
            !batches
                .iter()
                .any(|b| b.children.iter().any(|c| &c.agent_id == p))
        });
        if top_level {
            batch_lines(batches, i, 0, now, theme, width, lines);
        }
    }
}

fn batch_lines(
    batches: &[Batch],
    at: usize,
    depth: usize,
    now: Instant,
    theme: &Theme,
    width: u16,
    lines: &mut Vec<Line<'static>>,
) {
    let Some(batch) = batches.get(at) else { return };
    let indent = "  ".repeat(depth);
    if batch.is_done() {
        // ✓ only when every child of it completed (or goes on in the background).
        let (mark, style) = if batch.any_failed() {
            ("✗", theme.error())
        } else {
            ("✓", theme.dim())
        };
        lines.push(Line::from(vec![
            Span::raw(indent),
            Span::styled(format!("{mark} {}", batch.summary()), style),
        ]));
        return;
    }
    for child in &batch.children {
        let (mark, status, style) = match &child.state {
            ChildState::Running => ("◐", "running".to_string(), theme.warning()),
            ChildState::Background(task) => ("↗", format!("background {task}"), theme.dim()),
            ChildState::Ended(s) => {
                let style = match s {
                    cadre_core::protocol::ChildStatus::Completed => theme.ok(),
                    _ => theme.error(),
                };
                ("●", s.as_str().to_string(), style)
            }
        };
        let elapsed = child.elapsed(now).as_secs_f64();
        let tokens = child
            .tokens
            .map_or_else(|| "—".to_string(), |t| format!("{} tok", format_tokens(t)));
        let activity = child
            .last_activity
            .as_deref()
            .map(clean_line)
            .unwrap_or_default();
        let spans = vec![
            Span::raw(format!("{indent}{mark} ")),
            Span::styled(
                clean_line(&child.agent_type),
                theme.agent_type_in(&child.agent_type, child.color.as_deref()),
            ),
            Span::raw(format!(" {}/{} ", child.index, child.total)),
            Span::raw(clean_line(&child.description)),
            Span::styled(format!(" · {status}"), style),
            Span::styled(
                format!(
                    " · {} call{} · {tokens} · {elapsed:.1}s",
                    child.tool_calls,
                    if child.tool_calls == 1 { "" } else { "s" }
                ),
                theme.dim(),
            ),
            Span::styled(
                if activity.is_empty() {
                    String::new()
                } else {
                    format!(" · {activity}")
                },
                theme.dim(),
            ),
        ];
        lines.push(truncate(Line::from(spans), width));
        for (j, nested) in batches.iter().enumerate() {
            if nested.parent.as_deref() == Some(child.agent_id.as_str()) {
                batch_lines(batches, j, depth + 1, now, theme, width, lines);
            }
        }
    }
}

/// `line` cut to `width` columns with an ellipsis.
fn truncate(line: Line<'static>, width: u16) -> Line<'static> {
    let width = usize::from(width);
    if line.width() <= width {
        return line;
    }
    let mut rows = wrap_line(&line, width.saturating_sub(1) as u16);
    let mut first = rows.swap_remove(0);
    first.spans.push(Span::raw("…"));
    first
}

fn render_panel(frame: &mut Frame<'_>, app: &App, area: Rect, now: Instant, theme: &Theme) {
    let running = app
        .children
        .batches
        .iter()
        .flat_map(|b| &b.children)
        .filter(|c| c.is_running())
        .count();
    let mut parts = Vec::new();
    if app.children.any_running() {
        parts.push(format!(
            "Subagents · {running} running · Esc stop · Ctrl+B background"
        ));
    }
    if !app.team.members.is_empty() {
        let keys = if app.team_focus.is_some() {
            "Enter open · Esc interrupt · x stop · ↑ back"
        } else {
            "↓ select"
        };
        parts.push(format!("Team · {} · {keys}", app.team.counts()));
    }
    let title = format!(" {} ", parts.join(" │ "));
    let block = Block::new()
        .borders(Borders::TOP)
        .border_style(theme.border())
        .title(Span::styled(title, theme.bold()));
    let lines = panel_lines(app, now, theme, area.width);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    // The newest rows matter most when they do not all fit, but the
    // selected teammate stays in view.
    let height = usize::from(inner.height);
    let mut skip = lines.len().saturating_sub(height);
    if let Some(i) = app.team_focus {
        let row = lines.len() - app.team.members.len() + i;
        skip = skip.min(row);
    }
    frame.render_widget(
        Paragraph::new(lines.into_iter().skip(skip).collect::<Vec<_>>()),
        inner,
    );
}

/// The prompt's text as rows, the first marked `› `.
fn prompt_rows(app: &App, width: u16) -> Vec<Line<'static>> {
    let text_width = width.saturating_sub(2).max(1);
    let mut rows = Vec::new();
    for line in app.prompt.text().split('\n') {
        for row in wrap_line(&Line::raw(line.replace('\t', "    ")), text_width) {
            rows.push(row);
        }
    }
    rows
}

/// Where the cursor goes: (row, column) within the prompt's rows.
fn cursor_cell(app: &App, width: u16) -> (usize, usize) {
    let text_width = usize::from(width.saturating_sub(2).max(1));
    let before = &app.prompt.text()[..app.prompt.cursor()];
    let mut row = 0usize;
    let lines: Vec<&str> = before.split('\n').collect();
    let full_lines = &app.prompt.text().split('\n').collect::<Vec<_>>();
    for (i, l) in lines.iter().enumerate() {
        if i + 1 < lines.len() {
            let w = full_lines
                .get(i)
                .map_or(0, |f| f.replace('\t', "    ").width());
            row += w.max(1).div_ceil(text_width).max(1);
            continue;
        }
        let w = l.replace('\t', "    ").width();
        row += w / text_width;
        return (row, w % text_width);
    }
    (row, 0)
}

/// Seconds of silence from the model before the prompt's rule says it waits.
const WAIT_SHOWN_AFTER_S: u64 = 2;

fn render_prompt(frame: &mut Frame<'_>, app: &App, area: Rect, now: Instant, theme: &Theme) {
    if area.height == 0 {
        return;
    }
    let mut rule = String::from("─");
    if let Some(hint) = &app.hint {
        rule.push_str(&format!(" {hint} "));
    } else if let Some(name) = app.panes.top().and_then(|p| p.teammate()) {
        rule.push_str(&format!(" message to {} · Enter sends ", clean_line(&name)));
    } else if app.scroll > 0 {
        rule.push_str(&format!(" ↑ {} rows up · Ctrl+End returns ", app.scroll));
    } else if app.busy() {
        // A silent wait for the model's first word is named, with its clock.
        let waited = app
            .waiting_since
            .map(|since| now.saturating_duration_since(since).as_secs())
            .filter(|secs| *secs >= WAIT_SHOWN_AFTER_S);
        match waited {
            Some(secs) => rule.push_str(&format!(
                " waiting for the model ({secs} s) · Esc to interrupt "
            )),
            None => rule.push_str(" working… Esc to interrupt "),
        }
    }
    let rule_width = rule.width();
    rule.push_str(&"─".repeat(usize::from(area.width).saturating_sub(rule_width)));
    frame.render_widget(
        Paragraph::new(Line::styled(rule, theme.dim())),
        Rect::new(area.x, area.y, area.width, 1),
    );
    let rows = prompt_rows(app, area.width);
    let shown = usize::from(area.height - 1);
    let (cursor_row, cursor_col) = cursor_cell(app, area.width);
    // Keep the cursor's row in view.
    let first = (cursor_row + 1).saturating_sub(shown);
    let lines: Vec<Line<'static>> = rows
        .into_iter()
        .enumerate()
        .skip(first)
        .take(shown)
        .map(|(i, mut row)| {
            let mark = if i == 0 { "› " } else { "  " };
            row.spans.insert(0, Span::styled(mark, theme.user()));
            row
        })
        .collect();
    let text_area = Rect::new(area.x, area.y + 1, area.width, area.height - 1);
    frame.render_widget(Paragraph::new(lines), text_area);
    if app.open_question().is_none() {
        let x = area.x + 2 + cursor_col as u16;
        let y = text_area.y + (cursor_row - first) as u16;
        frame.set_cursor_position((x.min(area.right().saturating_sub(1)), y));
    }
}

/// The status line's text; `with_place` adds the cwd and branch.
pub fn status_text(app: &App, with_place: bool) -> String {
    status_line(app, with_place, true)
}

/// `Tasks: 2 running, 1 unread — /tasks` (the hint with `with_hint`), when
/// there is background work to tell of.
pub fn tasks_status(app: &App, with_hint: bool) -> Option<String> {
    let mut counts = Vec::new();
    if !app.background.is_empty() {
        counts.push(format!("{} running", app.background.len()));
    }
    if !app.unread.is_empty() {
        counts.push(format!("{} unread", app.unread.len()));
    }
    if counts.is_empty() {
        return None;
    }
    let hint = if with_hint { " — /tasks" } else { "" };
    Some(format!("Tasks: {}{hint}", counts.join(", ")))
}

fn status_line(app: &App, with_place: bool, with_hint: bool) -> String {
    let mut parts = vec![
        clean_line(&app.info.model),
        app.info.permission_mode.to_string(),
    ];
    if let Some(c) = app.context {
        let about = if c.estimated { "~" } else { "" };
        parts.push(format!("ctx {about}{}%", c.percent));
    }
    if app.tokens > 0 {
        parts.push(format!("{} tok", format_tokens(app.tokens)));
    }
    if let Some(n) = app.cost_nanos {
        parts.push(cadre_core::context::Cost(n).to_string());
    }
    // Background work before the place: on a narrow terminal the end is cut.
    if let Some(tasks) = tasks_status(app, with_hint) {
        parts.push(tasks);
    }
    let mut place = clean_line(&app.info.cwd);
    if let Some(branch) = &app.info.git_branch {
        place.push_str(&format!(" ({})", clean_line(branch)));
    }
    if with_place {
        parts.push(place);
    }
    parts.retain(|p| !p.is_empty());
    parts.join(" · ")
}

fn render_status(frame: &mut Frame<'_>, app: &App, area: Rect, theme: &Theme) {
    if let Some(rows) = &app.status_rows {
        render_custom_status(frame, app, rows, area);
        return;
    }
    let width = usize::from(area.width);
    let mut text = format!(" {}", status_text(app, true));
    if text.width() > width {
        // The place goes first when it does not all fit.
        text = format!(" {}", status_text(app, false));
    }
    if text.width() > width {
        // Then the `/tasks` hint; what still does not fit is cut.
        text = format!(" {}", status_line(app, false, false));
    }
    if text.width() < width {
        text.push_str(&" ".repeat(width - text.width()));
    }
    let line = truncate(Line::styled(text, theme.status()), area.width);
    frame.render_widget(Paragraph::new(line), area);
}

/// The user's status line: its rows (already made safe, colours kept),
/// after its padding, each cut at the screen's edge.
fn render_custom_status(
    frame: &mut Frame<'_>,
    app: &App,
    rows: &[crate::status_line::StatusRow],
    area: Rect,
) {
    let padding = " ".repeat(usize::from(app.status_padding()));
    for (i, row) in rows.iter().take(usize::from(area.height)).enumerate() {
        let mut spans = vec![Span::raw(padding.clone())];
        spans.extend(row.iter().map(|s| Span::styled(s.text.clone(), s.style)));
        let line = truncate(Line::from(spans), area.width);
        let at = Rect::new(area.x, area.y + i as u16, area.width, 1);
        frame.render_widget(Paragraph::new(line), at);
    }
}

/// Where the user's status line's links are on the screen: (column, row,
/// text, link) for each linked span that is shown whole, for a front end
/// that writes them as OSC 8 links over the drawn text.
pub fn status_links(
    app: &App,
    area: Rect,
) -> Vec<(u16, u16, String, String, ratatui::style::Style)> {
    let Some(rows) = &app.status_rows else {
        return Vec::new();
    };
    let height = rows.len().clamp(1, 3) as u16;
    let top = area.bottom().saturating_sub(height);
    let mut out = Vec::new();
    for (i, row) in rows.iter().take(usize::from(height)).enumerate() {
        let mut x = area.x + app.status_padding();
        for span in row {
            let w = span.text.width() as u16;
            if let Some(link) = &span.link
                && x + w <= area.right()
            {
                out.push((
                    x,
                    top + i as u16,
                    span.text.clone(),
                    link.clone(),
                    span.style,
                ));
            }
            x = x.saturating_add(w);
        }
    }
    out
}

/// A pane over the transcript and the panel: its border, title and keys.
pub fn render_pane(frame: &mut Frame<'_>, pane: &dyn Pane, over: Rect, theme: &Theme) {
    let block = Block::bordered()
        .border_style(theme.border())
        .title(Span::styled(
            format!(" {} ", clean_line(&pane.title())),
            theme.bold(),
        ))
        .title_bottom(Span::styled(
            format!(" {} ", clean_line(&pane.keys_help())),
            theme.dim(),
        ));
    let inner = block.inner(over);
    frame.render_widget(Clear, over);
    frame.render_widget(block, over);
    pane.render(frame, inner, theme);
}

/// The approval dialog, centred over `over`.
pub fn render_dialog(frame: &mut Frame<'_>, app: &App, over: Rect, now: Instant, theme: &Theme) {
    let Some((q, more)) = app.open_question() else {
        return;
    };
    let q = &q.question;
    let mut lines: Vec<Line<'static>> = Vec::new();
    let asked = AskedQuestion::from_approval(q);
    match &asked {
        Some(asked) => asked_lines(&mut lines, asked, app, now, theme),
        None => approval_lines(&mut lines, q, app, now, theme),
    }
    if more > 0 {
        lines.push(Line::styled(
            format!(
                "{more} more question{} waiting",
                if more == 1 { "" } else { "s" }
            ),
            theme.dim(),
        ));
    }
    let width = over.width.saturating_sub(4).clamp(20, 100);
    let inner_width = width.saturating_sub(2).max(1);
    let rows: u16 = lines
        .iter()
        .map(|l| wrap_line(l, inner_width).len() as u16)
        .sum();
    let height = (rows + 2).min(over.height);
    let x = over.x + (over.width.saturating_sub(width)) / 2;
    let y = over.y + (over.height.saturating_sub(height)) / 2;
    let area = Rect::new(x, y, width.min(over.width), height);
    let block = Block::bordered()
        .border_style(theme.border())
        .title(Span::styled(
            if asked.is_some() {
                " The agent asks "
            } else {
                " Permission needed "
            },
            theme.bold(),
        ));
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block),
        area,
    );
}

/// The lines of an approval question: who, the tool, its input (a diff for
/// an edit), the sandbox, why, and the choices once keys count.
fn approval_lines(
    lines: &mut Vec<Line<'static>>,
    q: &ApprovalQuestion,
    app: &App,
    now: Instant,
    theme: &Theme,
) {
    if let Some(label) = &q.label {
        lines.push(Line::styled(clean_line(label), theme.bold()));
    }
    lines.push(Line::from(vec![
        Span::styled("Tool: ", theme.dim()),
        Span::styled(clean_line(&q.tool), theme.tool()),
    ]));
    // An edit is shown as the diff it makes (its path first); anything
    // else as its exact input.
    let parsed: Option<serde_json::Value> = serde_json::from_str(&q.input).ok();
    let diff = parsed
        .as_ref()
        .and_then(|v| Some((v, crate::diff::call_diff(&q.tool, v, theme)?)));
    let input: Vec<Line<'static>> = match diff {
        Some((v, diff)) => {
            let path = v.get("file_path").and_then(|p| p.as_str()).unwrap_or("");
            std::iter::once(Line::styled(clean_line(path), theme.bold()))
                .chain(diff)
                .collect()
        }
        None => clean_lines(&q.input)
            .into_iter()
            .map(|l| Line::styled(l, theme.code()))
            .collect(),
    };
    let total = input.len();
    for mut line in input.into_iter().take(DIALOG_INPUT_LINES) {
        line.spans.insert(0, Span::raw("  "));
        lines.push(line);
    }
    if total > DIALOG_INPUT_LINES {
        lines.push(Line::styled(
            format!("  … {} more lines", total - DIALOG_INPUT_LINES),
            theme.dim(),
        ));
    }
    if let Some(sandbox) = &q.sandbox {
        lines.push(Line::styled(clean_line(sandbox), theme.dim()));
    }
    lines.push(Line::styled(
        format!("why: {}", clean_line(&q.reason)),
        theme.dim(),
    ));
    lines.push(Line::default());
    // The choices show once keys answer (see `DIALOG_GRACE`).
    if !app.dialog_armed(now) {
        lines.push(Line::styled("…", theme.dim()));
    } else {
        lines.push(Line::from(vec![
            Span::styled("[y]", theme.ok()),
            Span::raw(" Yes   "),
            Span::styled("[a]", theme.ok()),
            Span::raw(format!(
                " Yes, and don't ask again for {}   ",
                clean_line(&q.session_rule)
            )),
            Span::styled("[n]", theme.error()),
            Span::raw(" No   "),
            Span::styled("[i]", theme.error()),
            Span::raw(" No, and tell the model what to do instead"),
        ]));
    }
    if let Some(text) = &app.instead {
        lines.push(Line::from(vec![
            Span::styled("instead: ", theme.bold()),
            Span::raw(clean_line(text)),
            Span::styled("▏", theme.dim()),
        ]));
        lines.push(Line::styled(
            "Enter sends it to the model · Esc goes back",
            theme.dim(),
        ));
    }
}

/// The lines of the agent's own question: the question, its numbered
/// options, and what the user typed.
fn asked_lines(
    lines: &mut Vec<Line<'static>>,
    asked: &AskedQuestion,
    app: &App,
    now: Instant,
    theme: &Theme,
) {
    let mut title = format!("Question {}/{}", asked.position.0, asked.position.1);
    if !asked.header.is_empty() {
        title.push_str(&format!(" · {}", clean_line(&asked.header)));
    }
    lines.push(Line::styled(title, theme.bold()));
    lines.push(Line::raw(clean_line(&asked.question)));
    for (i, (label, description)) in asked.options.iter().enumerate() {
        let mut spans = vec![
            Span::styled(format!("  {}. ", i + 1), theme.ok()),
            Span::styled(clean_line(label), theme.bold()),
        ];
        if !description.is_empty() {
            spans.push(Span::styled(
                format!(" — {}", clean_line(description)),
                theme.dim(),
            ));
        }
        lines.push(Line::from(spans));
    }
    lines.push(Line::default());
    if !app.dialog_armed(now) {
        lines.push(Line::styled("…", theme.dim()));
        return;
    }
    let pick = if asked.multi_select {
        "numbers (1,3)"
    } else {
        "a number"
    };
    lines.push(Line::from(vec![
        Span::styled("answer: ", theme.bold()),
        Span::raw(clean_line(app.instead.as_deref().unwrap_or(""))),
        Span::styled("▏", theme.dim()),
    ]));
    lines.push(Line::styled(
        format!("Type {pick} or your own answer · Enter sends · an empty answer declines"),
        theme.dim(),
    ));
}
