//! The transcript: what the user said, the main agent's streamed text, its
//! tool calls with their outcomes and diffs, and notices. Each entry keeps
//! its wrapped rows for the width last drawn, so a frame only lays out the
//! entries it shows (the cost of a frame does not grow with the transcript).

use std::cell::{Ref, RefCell};
use std::collections::HashMap;

use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::diff::{call_diff, collapse};
use crate::markdown::render_markdown;
use crate::sanitize::{clean_line, clean_lines};
use crate::theme::Theme;
use crate::wrap::wrap_line;

/// How much a notice matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Plain information.
    Info,
    /// Something went wrong, nothing stopped.
    Warning,
    /// Something failed.
    Error,
}

/// How a tool call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOutcome {
    /// True when it failed or was denied.
    pub is_error: bool,
    /// One line saying how.
    pub text: String,
}

/// One thing in the transcript.
#[derive(Debug, Clone)]
pub enum EntryKind {
    /// A message the user sent.
    User(String),
    /// The main agent's text (Markdown), possibly still streaming.
    Assistant(String),
    /// A tool call of the main agent.
    Tool {
        /// Canonical tool name.
        tool: String,
        /// One-line argument summary.
        summary: String,
        /// Its arguments.
        input: Value,
        /// None while it runs.
        outcome: Option<CallOutcome>,
    },
    /// A line from cadre itself.
    Notice(Level, String),
}

/// An entry and its laid-out rows.
#[derive(Debug)]
pub struct Entry {
    /// What it is.
    pub kind: EntryKind,
    cache: RefCell<Option<Layout>>,
}

#[derive(Debug)]
struct Layout {
    width: u16,
    verbose: bool,
    rows: Vec<Line<'static>>,
}

impl Entry {
    fn new(kind: EntryKind) -> Entry {
        Entry {
            kind,
            cache: RefCell::new(None),
        }
    }

    /// The entry's rows at `width`, laid out again only when the entry, the
    /// width or the verbosity changed since last time.
    pub fn rows(&self, width: u16, verbose: bool, theme: &Theme) -> Ref<'_, Vec<Line<'static>>> {
        let fresh = self
            .cache
            .borrow()
            .as_ref()
            .is_some_and(|l| l.width == width && l.verbose == verbose);
        if !fresh {
            let rows = self
                .lines(verbose, theme)
                .iter()
                .flat_map(|l| wrap_line(l, width))
                .collect();
            *self.cache.borrow_mut() = Some(Layout {
                width,
                verbose,
                rows,
            });
        }
        Ref::map(self.cache.borrow(), |c| match c {
            Some(layout) => &layout.rows,
            None => &EMPTY,
        })
    }

    fn changed(&mut self) {
        *self.cache.get_mut() = None;
    }

    /// The entry's lines before wrapping.
    fn lines(&self, verbose: bool, theme: &Theme) -> Vec<Line<'static>> {
        match &self.kind {
            EntryKind::User(text) => {
                let mut lines = vec![Line::default()];
                for (i, line) in clean_lines(text).into_iter().enumerate() {
                    let mark = if i == 0 { "› " } else { "  " };
                    lines.push(Line::styled(format!("{mark}{line}"), theme.user()));
                }
                lines
            }
            EntryKind::Assistant(text) => {
                let mut lines = vec![Line::default()];
                lines.extend(render_markdown(text, theme));
                lines
            }
            EntryKind::Tool {
                tool,
                summary,
                input,
                outcome,
            } => {
                let mut head = vec![
                    Span::styled("● ", theme.tool()),
                    Span::styled(clean_line(tool), theme.tool()),
                ];
                if !summary.is_empty() {
                    head.push(Span::raw(format!(" {}", clean_line(summary))));
                }
                match outcome {
                    None => head.push(Span::styled(" …", theme.dim())),
                    Some(o) => {
                        let style = if o.is_error {
                            theme.error()
                        } else {
                            theme.dim()
                        };
                        head.push(Span::styled(format!(" → {}", clean_line(&o.text)), style));
                    }
                }
                let mut lines = vec![Line::from(head)];
                if let Some(diff) = call_diff(tool, input, theme) {
                    lines.extend(collapse(diff, verbose, theme).into_iter().map(indent));
                }
                if verbose {
                    let pretty = serde_json::to_string_pretty(input).unwrap_or_default();
                    for line in clean_lines(&pretty) {
                        lines.push(Line::styled(format!("    {line}"), theme.dim()));
                    }
                }
                lines
            }
            EntryKind::Notice(level, text) => {
                let style = match level {
                    Level::Info => theme.dim(),
                    Level::Warning => theme.warning(),
                    Level::Error => theme.error(),
                };
                clean_lines(text)
                    .into_iter()
                    .map(|l| Line::styled(l, style))
                    .collect()
            }
        }
    }
}

static EMPTY: Vec<Line<'static>> = Vec::new();

/// Indents a diff line under its call.
fn indent(mut line: Line<'static>) -> Line<'static> {
    line.spans.insert(0, Span::raw("    "));
    line
}

/// The transcript's entries, with where streamed text and running calls go.
#[derive(Debug, Default)]
pub struct Transcript {
    entries: Vec<Entry>,
    /// The assistant entry text is streaming into.
    streaming: Option<usize>,
    /// Running calls by call id.
    calls: HashMap<String, usize>,
}

impl Transcript {
    /// The entries, oldest first.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Adds an entry.
    pub fn push(&mut self, kind: EntryKind) {
        if !matches!(kind, EntryKind::Assistant(_)) {
            self.streaming = None;
        }
        self.entries.push(Entry::new(kind));
    }

    /// Removes everything from the user's message `text` on (`later_same`
    /// later sends of the same text skipped), as the conversation went back
    /// to before it. Nothing changes when it is not shown.
    pub fn cut_before_user(&mut self, text: &str, later_same: usize) {
        let at = self
            .entries
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, e)| matches!(&e.kind, EntryKind::User(t) if t == text))
            .nth(later_same)
            .map(|(i, _)| i);
        if let Some(at) = at {
            self.entries.truncate(at);
            self.streaming = None;
            self.calls.retain(|_, i| *i < at);
        }
    }

    /// Adds a notice.
    pub fn notice(&mut self, level: Level, text: impl Into<String>) {
        self.push(EntryKind::Notice(level, text.into()));
    }

    /// Appends streamed text to the open assistant entry (opening one).
    pub fn stream(&mut self, text: &str) {
        match self.streaming.and_then(|i| self.entries.get_mut(i)) {
            Some(entry) => {
                if let EntryKind::Assistant(t) = &mut entry.kind {
                    t.push_str(text);
                }
                entry.changed();
            }
            None => {
                self.push(EntryKind::Assistant(text.to_string()));
                self.streaming = Some(self.entries.len() - 1);
            }
        }
    }

    /// The streamed reply is void (a retry starts over): drops its text.
    pub fn discard_stream(&mut self) {
        if let Some(i) = self.streaming.take()
            && i + 1 == self.entries.len()
        {
            self.entries.pop();
        }
    }

    /// A complete assistant message: shown unless it was streamed already.
    pub fn finish_message(&mut self, text: &str) {
        if self.streaming.take().is_none() && !text.trim().is_empty() {
            self.push(EntryKind::Assistant(text.to_string()));
            self.streaming = None;
        }
    }

    /// Ends streaming into the open entry.
    pub fn close_stream(&mut self) {
        self.streaming = None;
    }

    /// A tool call starts.
    pub fn call_started(&mut self, call_id: &str, tool: &str, summary: &str, input: &Value) {
        self.push(EntryKind::Tool {
            tool: tool.to_string(),
            summary: summary.to_string(),
            input: input.clone(),
            outcome: None,
        });
        self.calls
            .insert(call_id.to_string(), self.entries.len() - 1);
    }

    /// A tool call ended (or was denied); false when it was never shown.
    pub fn call_ended(&mut self, call_id: &str, outcome: CallOutcome) -> bool {
        let Some(i) = self.calls.remove(call_id) else {
            return false;
        };
        if let Some(entry) = self.entries.get_mut(i)
            && let EntryKind::Tool { outcome: o, .. } = &mut entry.kind
        {
            *o = Some(outcome);
            entry.changed();
        }
        true
    }
}
