//! Assistant text as terminal lines: Markdown (headings, lists, quotes,
//! emphasis, code) through pulldown-cmark, every piece of text sanitized.

use pulldown_cmark::{CodeBlockKind, Event as Md, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::sanitize::{clean_line, clean_lines};
use crate::theme::Theme;

/// Renders Markdown into unwrapped lines (wrapping is the transcript's job).
pub fn render_markdown(text: &str, theme: &Theme) -> Vec<Line<'static>> {
    let mut r = Renderer {
        theme: *theme,
        lines: Vec::new(),
        current: Vec::new(),
        styles: vec![Style::new()],
        lists: Vec::new(),
        quote_depth: 0,
        in_code: false,
        pending_item: None,
    };
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES;
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    r.flush();
    while r.lines.last().is_some_and(|l| l.spans.is_empty()) {
        r.lines.pop();
    }
    r.lines
}

struct Renderer {
    theme: Theme,
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    /// Inline styles in force, innermost last.
    styles: Vec<Style>,
    /// Open lists: the next number of an ordered one, none for bullets.
    lists: Vec<Option<u64>>,
    quote_depth: usize,
    in_code: bool,
    /// The marker of a list item whose first line has not started yet.
    pending_item: Option<String>,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, add: Style) {
        let s = self.style().patch(add);
        self.styles.push(s);
    }

    fn pop_style(&mut self) {
        if self.styles.len() > 1 {
            self.styles.pop();
        }
    }

    /// The indentation every line of the current block starts with.
    fn prefix(&mut self) -> Vec<Span<'static>> {
        let mut spans = Vec::new();
        for _ in 0..self.quote_depth {
            spans.push(Span::styled("│ ", self.theme.dim()));
        }
        let depth = self.lists.len();
        if depth > 0 {
            let indent = "  ".repeat(depth - 1);
            match self.pending_item.take() {
                Some(marker) => {
                    spans.push(Span::raw(indent));
                    spans.push(Span::styled(marker, self.theme.dim()));
                }
                None => spans.push(Span::raw(format!("{indent}  "))),
            }
        }
        spans
    }

    fn text(&mut self, text: &str) {
        if self.current.is_empty() {
            self.current = self.prefix();
        }
        let style = self.style();
        self.current.push(Span::styled(clean_line(text), style));
    }

    /// Ends the line being built, if any.
    fn flush(&mut self) {
        if !self.current.is_empty() {
            let spans = std::mem::take(&mut self.current);
            self.lines.push(Line::from(spans));
        }
    }

    /// Ends the block: its line, then one blank line between blocks (none inside lists).
    fn end_block(&mut self) {
        self.flush();
        if self.lists.is_empty() && self.lines.last().is_some_and(|l| !l.spans.is_empty()) {
            self.lines.push(Line::default());
        }
    }

    fn event(&mut self, event: Md<'_>) {
        match event {
            Md::Start(tag) => self.start(tag),
            Md::End(tag) => self.end(tag),
            Md::Text(text) => {
                if self.in_code {
                    let code = self.theme.code();
                    let body = text.strip_suffix('\n').unwrap_or(&text);
                    for line in clean_lines(body) {
                        let mut spans = self.prefix();
                        spans.push(Span::styled("  ", code));
                        spans.push(Span::styled(line, code));
                        self.lines.push(Line::from(spans));
                    }
                } else {
                    self.text(&text);
                }
            }
            Md::Code(code) => {
                if self.current.is_empty() {
                    self.current = self.prefix();
                }
                let style = self.style().patch(self.theme.code());
                self.current.push(Span::styled(clean_line(&code), style));
            }
            // A single newline stays a line break, as Claude Code shows it:
            // a model's lines are meant as lines.
            Md::SoftBreak => self.flush(),
            Md::HardBreak => self.flush(),
            Md::Rule => {
                self.flush();
                self.lines
                    .push(Line::styled("─".repeat(40), self.theme.dim()));
                self.lines.push(Line::default());
            }
            Md::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
            Md::Html(html) | Md::InlineHtml(html) => {
                for (i, line) in html.lines().enumerate() {
                    if i > 0 {
                        self.flush();
                    }
                    self.text(line);
                }
            }
            Md::FootnoteReference(name) => self.text(&format!("[{name}]")),
            Md::InlineMath(m) | Md::DisplayMath(m) => self.text(&m),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { level, .. } => {
                self.flush();
                let hashes = match level {
                    HeadingLevel::H1 => "# ",
                    HeadingLevel::H2 => "## ",
                    _ => "### ",
                };
                self.push_style(self.theme.heading());
                self.text(hashes);
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                self.in_code = true;
                if let CodeBlockKind::Fenced(lang) = kind
                    && !lang.is_empty()
                {
                    let mut spans = self.prefix();
                    spans.push(Span::styled(
                        format!("  {}", clean_line(&lang)),
                        self.theme.dim(),
                    ));
                    self.lines.push(Line::from(spans));
                }
            }
            Tag::List(first) => {
                self.flush();
                self.lists.push(first);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_string(),
                };
                self.pending_item = Some(marker);
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.quote_depth += 1;
            }
            Tag::Emphasis => self.push_style(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { .. } => self.push_style(Style::new().add_modifier(Modifier::UNDERLINED)),
            Tag::TableCell => self.text("│ "),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => {
                self.pop_style();
                self.end_block();
            }
            TagEnd::Paragraph => self.end_block(),
            TagEnd::CodeBlock => {
                self.in_code = false;
                self.end_block();
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.end_block();
                }
            }
            TagEnd::Item => self.flush(),
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote_depth = self.quote_depth.saturating_sub(1);
                self.end_block();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Link => {
                self.pop_style()
            }
            TagEnd::TableRow | TagEnd::TableHead => self.flush(),
            TagEnd::Table => self.end_block(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn headings_lists_and_code_blocks() {
        let theme = Theme { color: true };
        let md = "# Title\n\nSome *text* and `code`.\n\n- one\n- two\n  1. nested\n\n```rust\nfn main() {}\n```\n";
        let lines = render_markdown(md, &theme);
        assert_eq!(
            plain(&lines),
            [
                "# Title",
                "",
                "Some text and code.",
                "",
                "• one",
                "• two",
                "  1. nested",
                "",
                "  rust",
                "  fn main() {}",
            ]
        );
        assert_eq!(lines[0].spans[0].style, theme.heading());
        assert_eq!(lines[9].spans[1].style, theme.code());
    }

    #[test]
    fn escapes_inside_markdown_are_cleaned() {
        let lines = render_markdown(
            "a \u{1b}[31mred\n\n```\n\u{1b}]0;t\u{7}x\n```",
            &Theme { color: false },
        );
        assert!(plain(&lines).iter().all(|l| !l.contains('\u{1b}')));
    }
}
