//! One-line summaries of tool calls and their outcomes, for progress lines.

use serde_json::Value;

use crate::tools::ToolOutput;

const MAX_SUMMARY_CHARS: usize = 80;

fn clip(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() > MAX_SUMMARY_CHARS || s.contains('\n') {
        let cut: String = line.chars().take(MAX_SUMMARY_CHARS).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

/// A string argument, when the input has it and it is not blank.
fn text<'a>(input: &'a Value, key: &str) -> Option<&'a str> {
    input
        .get(key)
        .and_then(Value::as_str)
        .filter(|v| !v.trim().is_empty())
}

/// The argument that best says what a call does: a path, a command, a
/// quoted pattern and where it is searched (`"parse_config" in src/`), a
/// child's description, a URL.
pub fn argument_summary(tool: &str, input: &Value) -> String {
    // An MCP tool's arguments are its server's: the first one, by name
    // (`query="open bugs"`), unless it fetches a URL.
    if tool.starts_with("mcp__")
        && text(input, "url").is_none()
        && let Some((key, value)) = input.as_object().and_then(|m| m.iter().next())
    {
        return match value {
            Value::String(v) => format!("{key}=\"{}\"", clip(v)),
            Value::Number(_) | Value::Bool(_) => format!("{key}={value}"),
            _ => format!("{key}=…"),
        };
    }
    let key = match tool {
        "Read" | "Write" | "Edit" => "file_path",
        "NotebookEdit" => "notebook_path",
        "Bash" => "command",
        "Glob" | "Grep" => {
            if let Some(pattern) = text(input, "pattern") {
                let quoted = format!("\"{}\"", clip(pattern));
                return match text(input, "path") {
                    Some(path) => format!("{quoted} in {}", clip(path)),
                    None => quoted,
                };
            }
            "pattern"
        }
        "Agent" => "description",
        "TaskOutput" | "TaskStop" => "task_id",
        "SendMessage" => "to",
        "ReadMcpResourceTool" => "uri",
        "ListMcpResourcesTool" => "server",
        // Fetching tools (WebFetch, MCP ones) name their URL.
        _ => "url",
    };
    match text(input, key) {
        Some(v) => clip(v),
        None => match input {
            Value::String(raw) => clip(raw),
            _ => String::new(),
        },
    }
}

/// `ok`, or the first line of the error.
pub(crate) fn outcome_summary(output: &ToolOutput) -> String {
    if output.is_error {
        format!("error: {}", clip(&output.content))
    } else {
        "ok".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summaries_name_what_a_call_works_on() {
        let cases = [
            (
                "mcp__github__search_issues",
                json!({"query": "open bugs", "limit": 5}),
                "query=\"open bugs\"",
            ),
            ("mcp__calc__add", json!({"a": 2, "b": 3}), "a=2"),
            (
                "mcp__web__fetch",
                json!({"url": "https://x.dev", "n": 1}),
                "https://x.dev",
            ),
            ("Read", json!({"file_path": "src/x.rs"}), "src/x.rs"),
            (
                "Bash",
                json!({"command": "cargo test\n-p core"}),
                "cargo test…",
            ),
            (
                "Grep",
                json!({"pattern": "parse_config"}),
                "\"parse_config\"",
            ),
            (
                "Grep",
                json!({"pattern": "context_window", "path": "crates/"}),
                "\"context_window\" in crates/",
            ),
            (
                "Glob",
                json!({"pattern": "**/*.rs", "path": "src"}),
                "\"**/*.rs\" in src",
            ),
            ("Glob", json!({"pattern": "*.md", "path": " "}), "\"*.md\""),
            (
                "Agent",
                json!({"description": "find the parser", "prompt": "long"}),
                "find the parser",
            ),
            (
                "WebFetch",
                json!({"url": "https://example.com/a", "prompt": "x"}),
                "https://example.com/a",
            ),
            ("TaskStop", json!({"task_id": "t-1"}), "t-1"),
            (
                "ReadMcpResourceTool",
                json!({"server": "docs", "uri": "file://api/auth"}),
                "file://api/auth",
            ),
            ("ListMcpResourcesTool", json!({"server": "docs"}), "docs"),
            ("TodoWrite", json!({"todos": []}), ""),
            ("Read", json!("{not json"), "{not json"),
        ];
        for (tool, input, want) in cases {
            assert_eq!(argument_summary(tool, &input), want, "{tool} {input}");
        }
    }
}
