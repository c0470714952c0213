//! The unified diff an `Edit` or `Write` call makes, from the call's own
//! input (the TUI reads no files): coloured, and collapsed past a limit.

use ratatui::text::{Line, Span};
use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::sanitize::clean_line;
use crate::theme::Theme;

/// Diff lines shown before the rest is collapsed (Ctrl+O shows all).
pub const DIFF_COLLAPSED_LINES: usize = 20;

/// The diff lines of an `Edit` (old → new string) or `Write` (all added)
/// call; none for other tools or input without the fields.
pub fn call_diff(tool: &str, input: &Value, theme: &Theme) -> Option<Vec<Line<'static>>> {
    let (old, new) = match tool {
        "Edit" => (
            input.get("old_string")?.as_str()?,
            input.get("new_string")?.as_str()?,
        ),
        "Write" => ("", input.get("content")?.as_str()?),
        _ => return None,
    };
    let diff = TextDiff::from_lines(old, new);
    let mut lines = Vec::new();
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        lines.push(Line::styled(
            clean_line(&hunk.header().to_string()),
            theme.hunk(),
        ));
        for change in hunk.iter_changes() {
            let (sign, style) = match change.tag() {
                ChangeTag::Delete => ("-", theme.removed()),
                ChangeTag::Insert => ("+", theme.added()),
                ChangeTag::Equal => (" ", theme.dim()),
            };
            let text = change.value();
            let text = text.strip_suffix('\n').unwrap_or(text);
            lines.push(Line::from(vec![
                Span::styled(sign, style),
                Span::styled(clean_line(text), style),
            ]));
        }
    }
    Some(lines)
}

/// `lines` as shown: all of them when `expanded`, else the first
/// [`DIFF_COLLAPSED_LINES`] and a line saying how many more there are.
pub fn collapse(
    mut lines: Vec<Line<'static>>,
    expanded: bool,
    theme: &Theme,
) -> Vec<Line<'static>> {
    if expanded || lines.len() <= DIFF_COLLAPSED_LINES {
        return lines;
    }
    let hidden = lines.len() - DIFF_COLLAPSED_LINES;
    lines.truncate(DIFF_COLLAPSED_LINES);
    lines.push(Line::styled(
        format!("… {hidden} more diff lines (Ctrl+O to expand)"),
        theme.dim(),
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edit_shows_removed_and_added_lines() {
        let theme = Theme { color: true };
        let input =
            json!({"file_path": "a.rs", "old_string": "a\nb\nc\n", "new_string": "a\nB\nc\n"});
        let lines = call_diff("Edit", &input, &theme).unwrap();
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(text, ["@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"]);
        assert_eq!(lines[2].spans[0].style, theme.removed());
        assert_eq!(lines[3].spans[0].style, theme.added());
        assert!(call_diff("Read", &input, &theme).is_none());
        assert!(call_diff("Edit", &json!({"file_path": "a"}), &theme).is_none());
    }

    #[test]
    fn long_diffs_collapse_past_the_limit() {
        let theme = Theme { color: false };
        let content: String = (0..50).map(|i| format!("line {i}\n")).collect();
        let lines = call_diff(
            "Write",
            &json!({"file_path": "x", "content": content}),
            &theme,
        )
        .unwrap();
        assert_eq!(lines.len(), 51);
        let shown = collapse(lines.clone(), false, &theme);
        assert_eq!(shown.len(), DIFF_COLLAPSED_LINES + 1);
        assert_eq!(
            shown[DIFF_COLLAPSED_LINES].to_string(),
            "… 31 more diff lines (Ctrl+O to expand)"
        );
        assert_eq!(collapse(lines, true, &theme).len(), 51);
    }
}
