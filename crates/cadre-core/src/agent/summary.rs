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

/// The argument that best says what a call does (a path, a command, a pattern).
pub(crate) fn argument_summary(tool: &str, input: &Value) -> String {
    let key = match tool {
        "Read" | "Write" | "Edit" => "file_path",
        "Bash" => "command",
        "Glob" | "Grep" => "pattern",
        "Agent" => "description",
        _ => "",
    };
    match input.get(key).and_then(Value::as_str) {
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
