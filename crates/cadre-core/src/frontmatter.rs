//! A Markdown file's YAML frontmatter, split off and parsed within bounds:
//! shared by agent definitions and skills (`SKILL.md`).

use serde_json::{Map, Value};

/// The frontmatter split off a file.
pub enum Split {
    /// The file does not start with a `---` line.
    None,
    /// A `---` first line but no closing `---` line.
    Unclosed,
    /// The YAML between the `---` lines, and the body after them.
    Found {
        /// The YAML.
        frontmatter: String,
        /// The Markdown after it, trimmed.
        body: String,
    },
}

/// Splits the `---` block off the start of `text`.
pub fn split_frontmatter(text: &str) -> Split {
    let mut lines = text.split('\n');
    match lines.next() {
        Some(first) if first.trim_end() == "---" => {}
        _ => return Split::None,
    }
    let mut frontmatter = Vec::new();
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            let body = lines.collect::<Vec<_>>().join("\n");
            return Split::Found {
                frontmatter: frontmatter.join("\n"),
                body: body.trim().to_string(),
            };
        }
        frontmatter.push(line);
    }
    Split::Unclosed
}

/// Bounds for the frontmatter YAML: generous for real files, small enough
/// that a hostile file cannot exhaust memory or time.
fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_documents: 1,
            max_depth: 32,
            max_nodes: 20_000,
            max_events: 100_000,
            max_aliases: 1_000,
            max_anchors: 1_000,
            max_total_scalar_bytes: 4 << 20,
        },
        // YAML 1.2 booleans only (`yes`/`no` stay strings), as Claude Code reads them.
        strict_booleans: true,
    }
}

/// The frontmatter's YAML as JSON (empty: an empty object), within bounds.
pub fn parse_yaml(frontmatter: &str) -> Result<Value, serde_saphyr::Error> {
    if frontmatter.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_saphyr::from_str_with_options::<Value>(frontmatter, yaml_options())
}
