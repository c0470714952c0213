//! Hard wrapping of styled lines to a width, by display width (wide
//! characters count two), preferring to break after a space.

use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// `line` cut into rows no wider than `width` (at least one row, even for
/// an empty line). A row breaks after the last space that fits, or mid-word
/// when a word is longer than the row.
pub fn wrap_line(line: &Line<'static>, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    // Characters with their span's style, then cut into rows.
    let mut cells: Vec<(char, usize, ratatui::style::Style)> = Vec::new();
    let mut total = 0usize;
    for span in &line.spans {
        let style = line.style.patch(span.style);
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            total += w;
            cells.push((c, w, style));
        }
    }
    if total <= width {
        return vec![line.clone()];
    }
    let mut rows = Vec::new();
    let mut start = 0usize;
    while start < cells.len() {
        let mut used = 0usize;
        let mut end = start;
        let mut last_space = None;
        while end < cells.len() && used + cells[end].1 <= width {
            used += cells[end].1;
            if cells[end].0 == ' ' {
                last_space = Some(end);
            }
            end += 1;
        }
        if end == start {
            // A character wider than the row: put it on a row of its own.
            end = start + 1;
        } else if end < cells.len()
            && let Some(space) = last_space
            && space > start
        {
            end = space + 1;
        }
        rows.push(row(&cells[start..end]));
        start = end;
    }
    rows
}

/// One row's cells as spans, joining runs of the same style.
fn row(cells: &[(char, usize, ratatui::style::Style)]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style = None;
    for (c, _, s) in cells {
        if style.is_some_and(|st| st != *s) {
            spans.push(Span::styled(
                std::mem::take(&mut text),
                style.unwrap_or_default(),
            ));
        }
        style = Some(*s);
        text.push(*c);
    }
    if !text.is_empty() {
        spans.push(Span::styled(text, style.unwrap_or_default()));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(rows: &[Line<'_>]) -> Vec<String> {
        rows.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn rows_break_after_spaces_and_inside_long_words() {
        let line = Line::from("alpha beta gamma");
        assert_eq!(texts(&wrap_line(&line, 11)), ["alpha beta ", "gamma"]);
        assert_eq!(
            texts(&wrap_line(&Line::from("abcdefgh"), 3)),
            ["abc", "def", "gh"]
        );
        assert_eq!(texts(&wrap_line(&Line::default(), 5)), [""]);
        // Wide characters count two columns.
        assert_eq!(texts(&wrap_line(&Line::from("日本語"), 4)), ["日本", "語"]);
    }
}
