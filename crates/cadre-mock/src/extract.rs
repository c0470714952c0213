//! Pulls the fields rules match on out of a request body.

use serde_json::Value;

use crate::Wire;
use crate::script::{Rule, Script};

/// What the matcher needs to know about a request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestInfo {
    /// System prompt text (blocks / system messages joined with "\n").
    pub system: String,
    /// Text of the first user message.
    pub first_user: String,
    /// Text of the last user message.
    pub last_user: String,
    /// Text of every user message, joined.
    pub all_user: String,
    /// Names of the offered tools.
    pub tools: Vec<String>,
    /// Number of assistant turns already in `messages`.
    pub step: usize,
    /// The model asked for.
    pub model: String,
}

/// Extracts [`RequestInfo`] from a request body of the given wire.
pub fn request_info(wire: Wire, body: &Value) -> RequestInfo {
    let messages: &[Value] = body
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let step = count_assistant_turns(messages);
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let first_user = messages
        .iter()
        .find(|m| role(m) == Some("user"))
        .map(|m| content_text(m.get("content")))
        .unwrap_or_default();
    let last_user = messages
        .iter()
        .rev()
        .find(|m| role(m) == Some("user"))
        .map(|m| content_text(m.get("content")))
        .unwrap_or_default();
    let all_user = messages
        .iter()
        .filter(|m| role(m) == Some("user"))
        .map(|m| content_text(m.get("content")))
        .collect::<Vec<_>>()
        .join("\n");
    match wire {
        Wire::Anthropic => RequestInfo {
            system: content_text(body.get("system")),
            first_user,
            last_user,
            all_user,
            tools: tool_names(body, |t| t.get("name")),
            step,
            model,
        },
        Wire::Openai => RequestInfo {
            system: messages
                .iter()
                .filter(|m| matches!(role(m), Some("system" | "developer")))
                .map(|m| content_text(m.get("content")))
                .collect::<Vec<_>>()
                .join("\n"),
            first_user,
            last_user,
            all_user,
            tools: tool_names(body, |t| t.get("function").and_then(|f| f.get("name"))),
            step,
            model,
        },
    }
}

/// Number of messages with role "assistant" (the step index).
pub fn count_assistant_turns(messages: &[Value]) -> usize {
    messages
        .iter()
        .filter(|m| role(m) == Some("assistant"))
        .count()
}

fn role(m: &Value) -> Option<&str> {
    m.get("role").and_then(Value::as_str)
}

fn tool_names(body: &Value, name: impl Fn(&Value) -> Option<&Value>) -> Vec<String> {
    body.get("tools")
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| name(t).and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Text of a content value: a string, or an array of blocks whose `text`
/// (and `tool_result` `content`) pieces are joined with "\n".
pub fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => {
                    if let Some(t) = o.get("text").and_then(Value::as_str) {
                        Some(t.to_string())
                    } else if o.get("type").and_then(Value::as_str) == Some("tool_result") {
                        Some(content_text(o.get("content")))
                    } else {
                        None
                    }
                }
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

impl RequestInfo {
    /// Whether `rule.when` holds for this request.
    pub fn matches(&self, rule: &Rule) -> bool {
        let w = &rule.when;
        w.system.as_ref().is_none_or(|s| self.system.contains(s))
            && w.first_user
                .as_ref()
                .is_none_or(|s| self.first_user.contains(s))
            && w.last_user
                .as_ref()
                .is_none_or(|s| self.last_user.contains(s))
            && w.any_user
                .as_ref()
                .is_none_or(|s| self.all_user.contains(s))
            && w.tool.as_ref().is_none_or(|t| self.tools.contains(t))
            && w.model.as_ref().is_none_or(|m| self.model == *m)
    }

    /// Index of the first matching rule.
    pub fn find_rule(&self, script: &Script) -> Option<usize> {
        script.rules.iter().position(|r| self.matches(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn anthropic_fields_and_steps() {
        let body = json!({
            "model": "m",
            "system": [{"type": "text", "text": "You are cadre."}, {"type": "text", "text": "Be brief."}],
            "tools": [{"name": "Read", "input_schema": {}}, {"name": "Agent"}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "fix the bug"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "ok"}]}]},
                {"role": "assistant", "content": "more"},
                {"role": "user", "content": "go on"}
            ]
        });
        let info = request_info(Wire::Anthropic, &body);
        assert_eq!(info.system, "You are cadre.\nBe brief.");
        assert_eq!(info.first_user, "fix the bug");
        assert_eq!(info.tools, vec!["Read", "Agent"]);
        assert_eq!(info.step, 2);
        let tr = json!([{"type": "tool_result", "content": "result text"}]);
        assert_eq!(content_text(Some(&tr)), "result text");
    }

    #[test]
    fn openai_fields_and_steps() {
        let body = json!({
            "messages": [
                {"role": "system", "content": "sys one"},
                {"role": "developer", "content": [{"type": "text", "text": "dev two"}]},
                {"role": "user", "content": [{"type": "text", "text": "hello"}]},
                {"role": "assistant", "content": null, "tool_calls": []},
                {"role": "tool", "tool_call_id": "c", "content": "x"}
            ],
            "tools": [{"type": "function", "function": {"name": "Bash"}}]
        });
        let info = request_info(Wire::Openai, &body);
        assert_eq!(info.system, "sys one\ndev two");
        assert_eq!(info.first_user, "hello");
        assert_eq!(info.tools, vec!["Bash"]);
        assert_eq!(info.step, 1);
        assert_eq!(request_info(Wire::Openai, &json!({})).step, 0);
    }

    #[test]
    fn rule_matching() {
        let script = crate::parse_script(
            "rules:\n  - name: a\n    when: { system: zzz }\n    replies: [{text: x}]\n  - name: b\n    when: { first_user: hel, tool: Bash }\n    replies: [{text: y}]\n",
        )
        .unwrap();
        let info = RequestInfo {
            system: "sys".into(),
            first_user: "hello".into(),
            last_user: "bye".into(),
            all_user: "hello\nbye".into(),
            tools: vec!["Bash".into()],
            step: 0,
            model: "m".into(),
        };
        assert_eq!(info.find_rule(&script), Some(1));
        let no_tool = RequestInfo {
            tools: vec!["Bas".into()],
            ..info
        };
        assert_eq!(no_tool.find_rule(&script), None);
    }
}
