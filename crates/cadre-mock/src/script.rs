//! The script format: which rule answers a request and what each reply looks like.

use serde::Deserialize;
use serde_json::Value;

use crate::MockError;

/// Default number of chars per text delta.
pub const DEFAULT_TEXT_CHUNK_CHARS: usize = 20;
/// Default number of chars per tool-argument delta.
pub const DEFAULT_ARGS_CHUNK_CHARS: usize = 16;

/// A parsed script: an ordered list of rules.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Rules, tried in order; the first whose `when` holds answers the request.
    pub rules: Vec<Rule>,
    /// What the server says of itself, as local model servers do.
    #[serde(default)]
    pub server: ServerInfo,
}

/// A local model server's self-description endpoints.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerInfo {
    /// Served at `GET /props` (llama.cpp's), when given; else 404.
    pub props: Option<Value>,
    /// Served at `POST /api/show` (Ollama's), when given; else 404.
    pub show: Option<Value>,
}

/// One conversation script.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Name used in records, error messages and generated ids. Defaults to `rule<N>` (0-based index).
    #[serde(default)]
    pub name: String,
    /// Conditions; every given one must hold. Omitted = matches any request.
    #[serde(default)]
    pub when: When,
    /// Reply k answers a request whose messages already hold k assistant
    /// turns (or, with `step_by: requests`, the k-th request this rule answered).
    pub replies: Vec<Reply>,
    /// How the reply is chosen.
    #[serde(default)]
    pub step_by: StepBy,
}

/// How a rule counts its steps.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StepBy {
    /// By the assistant turns in the request (a conversation's own position).
    #[default]
    AssistantTurns,
    /// By the requests this rule has answered with a reply, failures not
    /// counted (a retried request gets the same step): for conversations that
    /// shrink, as a compacted one does.
    Requests,
}

/// Matching conditions of a rule (all substring matches, except `tool`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct When {
    /// Substring of the system prompt.
    pub system: Option<String>,
    /// Substring of the first user message's text.
    pub first_user: Option<String>,
    /// Substring of the last user message's text.
    pub last_user: Option<String>,
    /// Substring of any user message's text.
    pub any_user: Option<String>,
    /// A tool with exactly this name is offered in the request.
    pub tool: Option<String>,
    /// The request asks for exactly this model.
    pub model: Option<String>,
}

/// One scripted assistant turn.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// Wait this long before the first byte of the response.
    #[serde(default)]
    pub latency_ms: u64,
    /// Assistant text (a text block is emitted only when this is given).
    pub text: Option<String>,
    /// Tool calls, emitted after the text.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// A tool the provider runs itself (Anthropic's web search), emitted
    /// before the text as a `server_tool_use` block and its result block.
    /// Anthropic wire only; the OpenAI wire leaves it out.
    pub server_tool: Option<ServerTool>,
    /// Chars per text delta (default 20).
    pub text_chunk_chars: Option<usize>,
    /// Chars per tool-argument delta (default 16).
    pub args_chunk_chars: Option<usize>,
    /// Split the response body into HTTP chunks of at most this many bytes (anywhere, even inside UTF-8 chars).
    pub chunk_bytes: Option<usize>,
    /// Sleep this long between body chunks (default 0: just yield).
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// Token usage to report; missing fields get rough defaults.
    #[serde(default)]
    pub usage: Usage,
    /// Override the stop reason (Anthropic and OpenAI names are translated for the other wire).
    pub stop_reason: Option<String>,
    /// The first request reaching this (rule, step) fails; later ones get the reply.
    pub fail_once: Option<Failure>,
    /// Every request reaching this step fails.
    pub fail: Option<Failure>,
}

/// A scripted tool call.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// Tool name.
    pub name: String,
    /// Call id; default `toolu_<rule>_<step>_<i>` (Anthropic) / `call_<rule>_<step>_<i>` (OpenAI).
    pub id: Option<String>,
    /// Arguments object (default `{}`).
    pub input: Option<Value>,
    /// Arguments text sent verbatim instead of `input` (may be invalid JSON).
    pub input_raw: Option<String>,
}

/// A scripted server-tool call and its result.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerTool {
    /// Tool name (default `web_search`).
    pub name: Option<String>,
    /// Call id; default `srvtoolu_<rule>_<step>`.
    pub id: Option<String>,
    /// The call's input (default `{}`), streamed as `input_json_delta`.
    pub input: Option<Value>,
    /// Results: each `{ url, title, page_age? }` becomes a `web_search_result`
    /// with an `encrypted_content` of `enc_<rule>_<step>_<i>`.
    #[serde(default)]
    pub results: Vec<SearchResult>,
    /// Instead of results, a `web_search_tool_result_error` with this `error_code`.
    pub error_code: Option<String>,
}

/// One scripted search result.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SearchResult {
    /// The page address.
    pub url: String,
    /// The page title.
    pub title: String,
    /// How old the page is (`"2 days ago"`), sent when given.
    pub page_age: Option<String>,
}

/// Token usage overrides.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Default: request body bytes / 4.
    pub input_tokens: Option<u64>,
    /// Default: reply chars / 4 (at least 1).
    pub output_tokens: Option<u64>,
    /// Default 0.
    pub cache_read_input_tokens: Option<u64>,
    /// Default 0.
    pub cache_creation_input_tokens: Option<u64>,
}

/// An injected failure: an error status, or a stream cut after some bytes.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    /// HTTP status to serve (default 500 unless `cut_after_bytes` is given).
    pub status: Option<u16>,
    /// Adds a `retry-after` header with this many seconds.
    pub retry_after_s: Option<u64>,
    /// Error message inside the wire's JSON error body.
    pub message: Option<String>,
    /// Response body sent verbatim instead of the JSON error body.
    pub body: Option<String>,
    /// Serve status 200 and the normal body, but only its first N bytes, then end it.
    pub cut_after_bytes: Option<usize>,
    /// With `cut_after_bytes`: abort the connection (body error) instead of ending the body cleanly.
    #[serde(default)]
    pub cut_abort: bool,
    /// Accept the request and never answer: no status, no headers.
    #[serde(default)]
    pub stall: bool,
    /// Serve status 200 and the first N stream events, then send nothing more (the connection stays open).
    pub stall_after_events: Option<usize>,
    /// Serve status 200 and the first N stream events, then an error event in the wire's format, then end.
    pub error_after_events: Option<usize>,
    /// With `error_after_events`: the error type (default `overloaded_error` / `server_error`).
    pub error_type: Option<String>,
    /// Serve status 200 and the first stream event, then one `data:` line of N bytes.
    pub oversized_event_bytes: Option<usize>,
    /// Serve status 200 and the first N stream events, then only `event: ping` events, forever.
    pub ping_after_events: Option<usize>,
    /// With `ping_after_events`: milliseconds between pings (default 100).
    pub ping_every_ms: Option<u64>,
}

impl Reply {
    /// Chars per text delta.
    pub fn text_chunk(&self) -> usize {
        self.text_chunk_chars.unwrap_or(DEFAULT_TEXT_CHUNK_CHARS)
    }

    /// Chars per tool-argument delta.
    pub fn args_chunk(&self) -> usize {
        self.args_chunk_chars.unwrap_or(DEFAULT_ARGS_CHUNK_CHARS)
    }
}

impl ToolCall {
    /// The arguments text as sent on the wire.
    pub fn args_text(&self) -> String {
        if let Some(raw) = &self.input_raw {
            return raw.clone();
        }
        match &self.input {
            Some(v) => v.to_string(),
            None => "{}".to_string(),
        }
    }

    /// The arguments as a JSON value (for non-streaming Anthropic `input`).
    /// Unparseable `input_raw` is returned as a JSON string.
    pub fn input_value(&self) -> Value {
        if let Some(raw) = &self.input_raw {
            return serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.clone()));
        }
        self.input
            .clone()
            .unwrap_or_else(|| Value::Object(Default::default()))
    }
}

impl Failure {
    /// The HTTP status this failure serves (200 for a cut).
    pub fn effective_status(&self) -> u16 {
        match (self.status, self.in_body()) {
            (Some(s), _) => s,
            (None, true) => 200,
            (None, false) if self.stall => 0,
            (None, false) => 500,
        }
    }

    /// True when the failure happens inside a 200 response body.
    pub fn in_body(&self) -> bool {
        self.cut_after_bytes.is_some()
            || self.stall_after_events.is_some()
            || self.error_after_events.is_some()
            || self.oversized_event_bytes.is_some()
            || self.ping_after_events.is_some()
    }
}

/// Parses and validates a script.
pub fn parse_script(yaml: &str) -> Result<Script, MockError> {
    let mut script: Script = serde_saphyr::from_str(yaml).map_err(MockError::Yaml)?;
    script.fill_defaults();
    script.validate()?;
    Ok(script)
}

impl Script {
    /// Gives unnamed rules their default name `rule<N>`.
    pub fn fill_defaults(&mut self) {
        for (i, rule) in self.rules.iter_mut().enumerate() {
            if rule.name.is_empty() {
                rule.name = format!("rule{i}");
            }
        }
    }

    /// Checks constraints serde cannot express.
    pub fn validate(&self) -> Result<(), MockError> {
        let bad = |msg: String| Err(MockError::Invalid(msg));
        for (ri, rule) in self.rules.iter().enumerate() {
            let rname = if rule.name.is_empty() {
                format!("rule{ri}")
            } else {
                rule.name.clone()
            };
            for (si, reply) in rule.replies.iter().enumerate() {
                let at = format!("rule \"{rname}\", reply {si}");
                if reply.text_chunk_chars == Some(0) {
                    return bad(format!("{at}: text_chunk_chars must be > 0"));
                }
                if reply.args_chunk_chars == Some(0) {
                    return bad(format!("{at}: args_chunk_chars must be > 0"));
                }
                if reply.chunk_bytes == Some(0) {
                    return bad(format!("{at}: chunk_bytes must be > 0"));
                }
                for (ti, tc) in reply.tool_calls.iter().enumerate() {
                    if tc.input.is_some() && tc.input_raw.is_some() {
                        return bad(format!(
                            "{at}, tool call {ti}: give either input or input_raw, not both"
                        ));
                    }
                    if tc.name.is_empty() {
                        return bad(format!("{at}, tool call {ti}: name is empty"));
                    }
                }
                for (key, f) in [("fail_once", &reply.fail_once), ("fail", &reply.fail)] {
                    let Some(f) = f else { continue };
                    let kinds = [
                        f.status.is_some(),
                        f.stall,
                        f.cut_after_bytes.is_some(),
                        f.stall_after_events.is_some(),
                        f.error_after_events.is_some(),
                        f.oversized_event_bytes.is_some(),
                        f.ping_after_events.is_some(),
                    ];
                    if kinds.iter().filter(|k| **k).count() > 1 {
                        return bad(format!(
                            "{at}: {key} takes one of status, stall, cut_after_bytes, \
                             stall_after_events, error_after_events, oversized_event_bytes, \
                             ping_after_events"
                        ));
                    }
                    if f.error_type.is_some() && f.error_after_events.is_none() {
                        return bad(format!("{at}: {key}.error_type needs error_after_events"));
                    }
                    if let Some(s) = f.status
                        && !(100..=999).contains(&s)
                    {
                        return bad(format!("{at}: {key} status {s} is not a valid HTTP status"));
                    }
                    if f.ping_every_ms.is_some() && f.ping_after_events.is_none() {
                        return bad(format!("{at}: {key}.ping_every_ms needs ping_after_events"));
                    }
                    if f.ping_every_ms == Some(0) {
                        return bad(format!("{at}: {key}.ping_every_ms must be > 0"));
                    }
                    if f.cut_abort && f.cut_after_bytes.is_none() {
                        return bad(format!("{at}: {key}.cut_abort needs cut_after_bytes"));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
rules:
  - name: parent
    when:
      system: "You are"
      first_user: "fix"
      tool: Agent
    replies:
      - latency_ms: 500
        text: "Reading it."
        tool_calls:
          - { name: Read, input: { file_path: "src/main.rs", limit: 3 } }
          - { name: Bash, input_raw: '{"command": "ls' , id: my_id }
        args_chunk_chars: 4
      - text: "Done."
        fail_once: { status: 429, retry_after_s: 0 }
      - text: "..."
        fail: { cut_after_bytes: 200 }
        usage: { input_tokens: 7, cache_read_input_tokens: 3 }
        stop_reason: max_tokens
  - replies:
      - text: hi
"#;

    #[test]
    fn parses_good_script() {
        let s = parse_script(GOOD).unwrap();
        assert_eq!(s.rules.len(), 2);
        let r = &s.rules[0];
        assert_eq!(r.name, "parent");
        assert_eq!(r.when.tool.as_deref(), Some("Agent"));
        assert_eq!(r.replies[0].latency_ms, 500);
        assert_eq!(r.replies[0].args_chunk(), 4);
        assert_eq!(r.replies[0].text_chunk(), DEFAULT_TEXT_CHUNK_CHARS);
        let tc = &r.replies[0].tool_calls[0];
        assert_eq!(tc.args_text(), r#"{"file_path":"src/main.rs","limit":3}"#);
        let raw = &r.replies[0].tool_calls[1];
        assert_eq!(raw.args_text(), r#"{"command": "ls"#);
        assert_eq!(raw.id.as_deref(), Some("my_id"));
        assert_eq!(raw.input_value(), Value::String(raw.args_text()));
        let f = r.replies[1].fail_once.as_ref().unwrap();
        assert_eq!(f.status, Some(429));
        assert_eq!(f.retry_after_s, Some(0));
        assert_eq!(
            r.replies[2].fail.as_ref().unwrap().cut_after_bytes,
            Some(200)
        );
        assert_eq!(r.replies[2].fail.as_ref().unwrap().effective_status(), 200);
        assert_eq!(r.replies[2].usage.input_tokens, Some(7));
        assert_eq!(s.rules[1].name, "rule1");
        assert_eq!(s.rules[1].when, When::default());
    }

    #[test]
    fn bad_yaml_mentions_line() {
        let yaml = "rules:\n  - name: a\n    replies:\n      - text: [unclosed\n";
        let err = parse_script(yaml).unwrap_err().to_string();
        assert!(err.contains("line"), "{err}");
    }

    #[test]
    fn unknown_key_is_rejected_with_line() {
        let yaml = "rules:\n  - name: a\n    replies:\n      - text: x\n        txet: y\n";
        let err = parse_script(yaml).unwrap_err().to_string();
        assert!(err.contains("txet"), "{err}");
        assert!(err.contains("line 5") || err.contains('5'), "{err}");
    }

    #[test]
    fn wrong_type_is_rejected() {
        let yaml = "rules:\n  - replies:\n      - latency_ms: soon\n";
        assert!(parse_script(yaml).is_err());
    }

    #[test]
    fn validation_errors() {
        let both =
            "rules:\n  - replies:\n      - tool_calls: [{name: X, input: {}, input_raw: '{}'}]\n";
        let e = parse_script(both).unwrap_err().to_string();
        assert!(e.contains("input_raw"), "{e}");
        let zero = "rules:\n  - replies:\n      - { text: a, chunk_bytes: 0 }\n";
        assert!(parse_script(zero).is_err());
        let fail = "rules:\n  - replies:\n      - { text: a, fail: { status: 500, cut_after_bytes: 3 } }\n";
        assert!(parse_script(fail).is_err());
    }
}
