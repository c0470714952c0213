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

/// Why a line was quoted by [`quote_colon_values`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuoteReason {
    /// The value contains `: ` (or ends with `:`).
    Colon,
    /// The value contains a character YAML gives a meaning (`*`, `#`, `@`, …).
    Special(char),
}

/// The characters whose presence in a plain value makes Claude Code's retry
/// quote it (with `: `).
const SPECIAL_CHARS: &[char] = &[
    '{', '}', '[', ']', '*', '&', '#', '!', '|', '>', '%', '@', '`',
];

/// Why Claude Code's retry would quote this plain value, if it would.
fn quote_reason(value: &str) -> Option<QuoteReason> {
    if value.contains(": ") || value.ends_with(':') {
        return Some(QuoteReason::Colon);
    }
    value
        .chars()
        .find(|c| SPECIAL_CHARS.contains(c))
        .map(QuoteReason::Special)
}

/// Claude Code's quote-and-retry rule: every one-line `key: value` whose
/// value contains `: ` (or ends with `:`) or any of
/// `` { } [ ] * & # ! | > % @ ` `` is rewritten as a single-quoted scalar
/// (so `description: **ROLE**: …` reads as text, not an alias). Values
/// already quoted are left alone. Where Claude Code would break a valid
/// construct, cadre keeps it: block scalars (`key: |` / `key: >`, and their
/// indented lines) and flow collections that parse on their own
/// (`tools: [Read, Grep]`). Nested `key: value` lines are treated like
/// top-level ones. Returns the rewritten frontmatter (same line count) and
/// the 0-based indices of rewritten lines with the reason.
pub fn quote_colon_values(frontmatter: &str) -> (String, Vec<(usize, QuoteReason)>) {
    let mut out = Vec::new();
    let mut rewritten = Vec::new();
    let mut block_indent: Option<usize> = None;
    for (index, line) in frontmatter.split('\n').enumerate() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if let Some(parent) = block_indent {
            if line.trim().is_empty() || indent > parent {
                out.push(line.to_string());
                continue;
            }
            block_indent = None;
        }
        let rest = &line[indent..];
        let Some((key, value)) = rest.split_once(':') else {
            out.push(line.to_string());
            continue;
        };
        let key_ok = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !key_ok || !(value.is_empty() || value.starts_with([' ', '\t'])) {
            out.push(line.to_string());
            continue;
        }
        let value = value.trim();
        let block_header = value
            .strip_prefix(['|', '>'])
            .is_some_and(|rest| rest.chars().all(|c| matches!(c, '-' | '+' | '0'..='9')));
        if block_header {
            block_indent = Some(indent);
            out.push(line.to_string());
            continue;
        }
        let already_quoted = value.len() >= 2
            && ((value.starts_with('"') && value.ends_with('"'))
                || (value.starts_with('\'') && value.ends_with('\'')));
        let flow_collection =
            value.starts_with(['[', '{']) && parse_yaml(&format!("v: {value}")).is_ok();
        let reason = match already_quoted || flow_collection {
            true => None,
            false => quote_reason(value),
        };
        match reason {
            Some(reason) => {
                out.push(format!(
                    "{}{key}: '{}'",
                    &line[..indent],
                    value.replace('\'', "''")
                ));
                rewritten.push((index, reason));
            }
            None => out.push(line.to_string()),
        }
    }
    (out.join("\n"), rewritten)
}

/// The keys agent definitions, skills and commands use: a line that starts
/// with one of them (then `:`) begins a field; any other line under a
/// one-line value continues it.
const FIELD_KEYS: &[&str] = &[
    "name",
    "description",
    "tools",
    "disallowedTools",
    "disallowed_tools",
    "disallowed-tools",
    "allowed-tools",
    "model",
    "permissionMode",
    "permission_mode",
    "maxTurns",
    "max_turns",
    "skills",
    "mcpServers",
    "hooks",
    "memory",
    "background",
    "isolation",
    "effort",
    "color",
    "initialPrompt",
    "argument-hint",
    "arguments",
    "when_to_use",
    "disable-model-invocation",
    "user-invocable",
    "context",
    "agent",
    "paths",
    "shell",
    "license",
    "metadata",
    "compatibility",
    "version",
];

/// Real files (Claude Code's own plugins among them) write a long
/// `description` over several lines without indenting them, with example
/// dialogues (`user: "…"`) inside: not YAML, but Claude Code reads the
/// lines as part of the value. Each one-line field followed by such lines
/// is rewritten as a literal block holding all of them; `None` when there
/// is none.
pub fn fold_unindented_continuations(frontmatter: &str) -> Option<String> {
    let lines: Vec<&str> = frontmatter.split('\n').collect();
    let starts_field = |line: &str| {
        line.split_once(':').is_some_and(|(key, rest)| {
            FIELD_KEYS.contains(&key) && (rest.is_empty() || rest.starts_with([' ', '\t']))
        })
    };
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut changed = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let mut end = i + 1;
        while end < lines.len() && !starts_field(lines[end]) {
            end += 1;
        }
        let value = line.split_once(':').map(|(_, v)| v.trim()).unwrap_or("");
        let plain = starts_field(line)
            && !value.is_empty()
            && !value.starts_with(['|', '>', '[', '{', '"', '\'', '&', '*']);
        let unindented = lines[i + 1..end]
            .iter()
            .any(|l| !l.trim().is_empty() && !l.starts_with([' ', '\t']));
        if plain && unindented {
            let key = line.split_once(':').map(|(k, _)| k).unwrap_or("");
            out.push(format!("{key}: |-"));
            out.push(format!("  {value}"));
            for next in &lines[i + 1..end] {
                out.push(if next.trim().is_empty() {
                    String::new()
                } else {
                    format!("  {next}")
                });
            }
            changed = true;
            i = end;
        } else {
            out.push(line.to_string());
            i += 1;
        }
    }
    changed.then(|| out.join("\n"))
}

/// The frontmatter's YAML as JSON, parsed as Claude Code does: as it is;
/// failing that, with its one-line values quoted ([`quote_colon_values`],
/// so `argument-hint: [pr] [priority]` reads as text); failing that, with
/// unindented continuation lines folded into their field
/// ([`fold_unindented_continuations`]).
pub fn parse_yaml_lenient(frontmatter: &str) -> Result<Value, serde_saphyr::Error> {
    let first = match parse_yaml(frontmatter) {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    let (quoted, lines) = quote_colon_values(frontmatter);
    if !lines.is_empty()
        && let Ok(value) = parse_yaml(&quoted)
    {
        return Ok(value);
    }
    match fold_unindented_continuations(frontmatter) {
        Some(folded) => parse_yaml(&folded),
        None => Err(first),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unindented_description_lines_with_dialogue_stay_in_the_description() {
        let fm = "name: agent-creator\ndescription: Use this agent when asked. Examples:\n\n<example>\nuser: \"Create an agent\"\nassistant: \"I'll use it.\"\n</example>\nmodel: inherit\ncolor: magenta\ntools: [\"Write\", \"Read\"]";
        assert!(parse_yaml(fm).is_err());
        let value = parse_yaml_lenient(fm).unwrap();
        assert_eq!(value["name"], "agent-creator");
        let description = value["description"].as_str().unwrap();
        assert!(description.starts_with("Use this agent when asked. Examples:"));
        assert!(
            description.contains("user: \"Create an agent\""),
            "{description}"
        );
        assert!(description.ends_with("</example>"), "{description}");
        assert_eq!(value["model"], "inherit");
        assert_eq!(value["tools"][1], "Read");
        assert_eq!(
            fold_unindented_continuations("name: a\ndescription: b"),
            None
        );
    }
}
