//! `/context`: what fills the main agent's context window, by category,
//! from the session's last `context_breakdown` event: a table in the line
//! front end, a grid of the window (one cell a percent) in the full screen.

use cadre_core::protocol::{ContextCategory, ContextKind};
use cadre_tui::children::format_tokens;

/// The last breakdown the session reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breakdown {
    /// The categories (they add up to `tokens`).
    pub categories: Vec<ContextCategory>,
    /// Tokens in use.
    pub tokens: u64,
    /// The window.
    pub window: u64,
    /// Whether `tokens` is cadre's estimate.
    pub estimated: bool,
}

/// What `/context` says before the session reported anything.
const NOTHING_YET: &str = "nothing to show yet: the context is measured with the first request (send a message, then /context)";

/// The table: each category with its tokens and share of the window, then
/// the free space.
pub fn table(b: Option<&Breakdown>) -> String {
    let Some(b) = b else {
        return NOTHING_YET.into();
    };
    let mut lines = vec![header(b)];
    for c in b.categories.iter().filter(|c| c.tokens > 0) {
        lines.push(row(c.kind.label(), c.tokens, b.window));
    }
    lines.push(row(
        "Free space",
        b.window.saturating_sub(b.tokens),
        b.window,
    ));
    lines.push(advice(b));
    lines.retain(|l| !l.is_empty());
    lines.join("\n")
}

/// The grid: ten rows of ten cells, each a percent of the window, marked by
/// what fills it; the legend beside the rows.
pub fn grid(b: Option<&Breakdown>) -> String {
    let Some(b) = b else {
        return NOTHING_YET.into();
    };
    let mut cells: Vec<char> = Vec::with_capacity(100);
    let window = b.window.max(1);
    // Cells by cumulative share, so rounding never loses or adds a cell.
    let mut before = 0u64;
    for c in &b.categories {
        let after = before + c.tokens;
        let from = (before * 100).div_ceil(window).min(100) as usize;
        let to = (after * 100).div_ceil(window).min(100) as usize;
        cells.extend(std::iter::repeat_n(glyph(c.kind), to.saturating_sub(from)));
        before = after;
    }
    cells.resize(100, '·');
    let mut legend = vec![header(b), String::new()];
    for c in b.categories.iter().filter(|c| c.tokens > 0) {
        legend.push(format!(
            "{} {}",
            glyph(c.kind),
            row(c.kind.label(), c.tokens, b.window).trim_start()
        ));
    }
    legend.push(format!(
        "· {}",
        row("Free space", b.window.saturating_sub(b.tokens), b.window).trim_start()
    ));
    let mut lines = Vec::new();
    for (i, chunk) in cells.chunks(10).enumerate() {
        let cells: String = chunk.iter().map(|c| format!("{c} ")).collect::<String>();
        let beside = legend.get(i).cloned().unwrap_or_default();
        lines.push(
            format!("{}  {beside}", cells.trim_end())
                .trim_end()
                .to_string(),
        );
    }
    for rest in legend.iter().skip(10) {
        lines.push(format!("{:21}{rest}", ""));
    }
    let advice = advice(b);
    if !advice.is_empty() {
        lines.push(advice);
    }
    lines.join("\n")
}

/// `Context: 12.3k of 200k tokens (6%) · estimated`.
fn header(b: &Breakdown) -> String {
    format!(
        "Context: {} of {} tokens ({}%){}",
        format_tokens(b.tokens),
        format_tokens(b.window),
        percent(b.tokens, b.window),
        if b.estimated { " · estimated" } else { "" }
    )
}

fn row(label: &str, tokens: u64, window: u64) -> String {
    format!(
        "  {label:<18} {:>7} tokens  {:>3}%",
        format_tokens(tokens),
        percent(tokens, window)
    )
}

fn percent(tokens: u64, window: u64) -> u64 {
    (tokens * 100).checked_div(window).unwrap_or(0)
}

/// A hint when the window is mostly full, or most of it is listings.
fn advice(b: &Breakdown) -> String {
    if percent(b.tokens, b.window) >= 80 {
        return "The window is nearly full: /compact [focus] summarises the conversation now."
            .into();
    }
    let mcp = b
        .categories
        .iter()
        .find(|c| c.kind == ContextKind::McpTools)
        .map_or(0, |c| c.tokens);
    if b.tokens > 0 && mcp * 2 > b.tokens {
        return "MCP tools take most of the context: /mcp lists them; a server not needed here can be turned off in its settings."
            .into();
    }
    String::new()
}

/// How a category's cells look in the grid.
fn glyph(kind: ContextKind) -> char {
    match kind {
        ContextKind::SystemPrompt => '▓',
        ContextKind::InstructionFiles => '▒',
        ContextKind::Tools => '█',
        ContextKind::McpTools => '◆',
        ContextKind::Skills => '◇',
        ContextKind::Agents => '○',
        ContextKind::Messages => '■',
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Breakdown {
        let c = |kind, tokens| ContextCategory { kind, tokens };
        Breakdown {
            categories: vec![
                c(ContextKind::SystemPrompt, 3_000),
                c(ContextKind::InstructionFiles, 1_000),
                c(ContextKind::Tools, 12_000),
                c(ContextKind::McpTools, 0),
                c(ContextKind::Skills, 500),
                c(ContextKind::Agents, 500),
                c(ContextKind::Messages, 23_000),
            ],
            tokens: 40_000,
            window: 200_000,
            estimated: false,
        }
    }

    #[test]
    fn the_table_lists_the_categories_in_use_and_the_free_space() {
        let text = table(Some(&sample()));
        assert!(
            text.starts_with("Context: 40k of 200k tokens (20%)"),
            "{text}"
        );
        assert!(text.contains("Tools"), "{text}");
        assert!(
            !text.contains("MCP tools"),
            "an empty category is left out: {text}"
        );
        assert!(text.contains("Free space"), "{text}");
        assert!(text.contains("160k"), "{text}");
        assert_eq!(table(None), NOTHING_YET);
    }

    #[test]
    fn the_grid_has_a_cell_a_percent_marked_by_category() {
        let text = grid(Some(&sample()));
        let cells: String = text
            .lines()
            .take(10)
            .map(|l| l.chars().take(19).filter(|c| *c != ' ').collect::<String>())
            .collect();
        assert_eq!(cells.chars().count(), 100, "{text}");
        assert_eq!(cells.matches('█').count(), 6, "{text}");
        assert_eq!(cells.matches('■').count(), 11, "{text}");
        assert_eq!(cells.matches('◇').count(), 1, "{text}");
        assert_eq!(cells.matches('·').count(), 80, "{text}");
    }
}
