//! Tool names: the one table of accepted aliases, used wherever a tool is
//! named (a model's call, a permission rule, a definition's tool list), so a
//! name means the same tool everywhere.
//!
//! A leaf: it imports nothing from cadre.

/// Accepted alias → canonical name. Claude Code's earlier names (so its
/// agent files and rules keep working) and snake_case forms (DESIGN 4).
/// Every target is a canonical name, never another alias.
pub const TOOL_ALIASES: &[(&str, &str)] = &[
    // Claude Code renamed Task to Agent (v2.1.63) and still accepts `Task`.
    ("Task", "Agent"),
    // Claude Code folded MultiEdit into Edit; `Edit` rules covered it.
    ("MultiEdit", "Edit"),
    // Claude Code's directory listing; cadre lists with Glob (and `Read` rules
    // covered LS as they cover Glob).
    ("LS", "Glob"),
    // Replaced by TaskOutput in Claude Code v2.0.64.
    ("BashOutput", "TaskOutput"),
    ("AgentOutputTool", "TaskOutput"),
    // Replaced by TaskStop (older builds called it KillBash).
    ("KillShell", "TaskStop"),
    ("KillBash", "TaskStop"),
    // snake_case forms some models use.
    ("read_file", "Read"),
    ("write_file", "Write"),
    ("edit_file", "Edit"),
    ("bash", "Bash"),
];

/// The canonical name for `name`: the alias's target, or `name` itself.
/// Exact match only (tool names are case-sensitive, as in Claude Code).
pub fn canonical_tool_name(name: &str) -> &str {
    TOOL_ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name, |(_, canonical)| canonical)
}

/// Splits `text` at `,` and whitespace outside parentheses, so that
/// `Agent(Explore, Plan)` or `Bash(git diff:*)` stay whole. Entries are
/// trimmed; empty ones are dropped.
pub fn split_tool_list(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            c if depth == 0 && (c == ',' || c.is_whitespace()) => {
                let entry = current.trim();
                if !entry.is_empty() {
                    out.push(entry.to_string());
                }
                current.clear();
            }
            c => current.push(c),
        }
    }
    let entry = current.trim();
    if !entry.is_empty() {
        out.push(entry.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_map_to_claude_code_names() {
        let cases = [
            ("Task", "Agent"),
            ("MultiEdit", "Edit"),
            ("LS", "Glob"),
            ("BashOutput", "TaskOutput"),
            ("AgentOutputTool", "TaskOutput"),
            ("KillShell", "TaskStop"),
            ("KillBash", "TaskStop"),
            ("read_file", "Read"),
            ("write_file", "Write"),
            ("edit_file", "Edit"),
            ("bash", "Bash"),
            // Canonical names and everything else pass through unchanged.
            ("Agent", "Agent"),
            ("Glob", "Glob"),
            ("mcp__srv__tool", "mcp__srv__tool"),
            ("ls", "ls"),
            ("Bash(ls:*)", "Bash(ls:*)"),
            ("", ""),
        ];
        for (name, expected) in cases {
            assert_eq!(canonical_tool_name(name), expected, "{name}");
        }
    }

    #[test]
    fn table_has_no_chains_or_duplicates() {
        for (i, (alias, target)) in TOOL_ALIASES.iter().enumerate() {
            assert_eq!(canonical_tool_name(target), *target, "{target} is an alias");
            assert!(
                TOOL_ALIASES[i + 1..].iter().all(|(a, _)| a != alias),
                "{alias} twice"
            );
        }
    }
}
