//! Tool lists as written in a definition (`tools`, `disallowedTools`):
//! splitting, and mapping legacy tool names to cadre's.

use serde_json::Value;

use crate::tool_names::canonical_tool_name;

/// Maps legacy and alternative tool names to cadre's (`MultiEdit` → `Edit`,
/// `LS` → `Glob`, `Task` → `Agent`, …). A `Name(args)` form keeps its
/// arguments (`Task(Explore)` → `Agent(Explore)`); anything else, including
/// `mcp__server__tool`, is returned unchanged (trimmed).
pub fn normalize_tool_name(name: &str) -> String {
    let name = name.trim();
    let (head, rest) = match name.find('(') {
        Some(i) => (&name[..i], &name[i..]),
        None => (name, ""),
    };
    let head = head.trim_end();
    let mapped = canonical_tool_name(head);
    if mapped == head {
        return name.to_string();
    }
    format!("{mapped}{rest}")
}

/// A list field as written: a YAML/JSON list, or one string separated by
/// commas and/or spaces. Returns the entries (trimmed, empty ones dropped)
/// and complaints about entries that are clearly not names.
pub(super) fn split_list(value: &Value) -> (Vec<String>, Vec<String>) {
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    match value {
        Value::String(s) => entries = crate::tool_names::split_tool_list(s),
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::String(s) => {
                        let entry = s.trim();
                        if entry.is_empty() {
                            problems.push("empty entry (dropped)".to_string());
                        } else {
                            if entry.contains(char::is_whitespace) && !entry.contains('(') {
                                problems.push(format!("`{entry}` does not look like a tool name"));
                            }
                            entries.push(entry.to_string());
                        }
                    }
                    other => problems.push(format!("entry `{other}` is not a string (dropped)")),
                }
            }
        }
        Value::Null => {}
        other => problems.push(format!(
            "expected a list or a comma-separated string, found `{other}` (ignored)"
        )),
    }
    (entries, problems)
}

/// A `tools`-style list: a YAML/JSON list, a comma string (`Read, Grep, Glob`),
/// a space-separated string (`Read Grep Glob`) or `*`. Commas inside
/// parentheses do not split; entries are trimmed and normalised
/// ([`normalize_tool_name`]); empty entries are dropped. Entries that are not
/// known tools are kept: the filter reports them.
pub fn parse_tool_list(value: &Value) -> Vec<String> {
    split_list(value)
        .0
        .iter()
        .map(|entry| normalize_tool_name(entry))
        .collect()
}
