//! The Anthropic Messages wire format: request bodies with prompt-cache
//! breakpoints, and the streamed event sequence.

use serde::Serialize;
use serde_json::{Value, json};

use super::reply::ReplyBuilder;
use super::{ContentBlock, ModelError, ModelRequest, Role, StopReason, StreamDelta};

/// The API version header value the client sends.
pub(crate) const API_VERSION: &str = "2023-06-01";

/// Tool-call input must be a JSON object on this wire; text the model produced
/// that is not one (it was malformed) is sent back as an empty object.
fn input_object(raw: &str) -> Value {
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

/// `{"type": "ephemeral"}`: a prompt-cache breakpoint.
#[derive(Serialize)]
struct CacheMark {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: Option<CacheMark> = Some(CacheMark { kind: "ephemeral" });

/// A content block as sent, borrowing the conversation (no copy per request).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockOut<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheMark>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheMark>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheMark>,
    },
}

impl BlockOut<'_> {
    fn mark(&mut self) {
        match self {
            BlockOut::Text { cache_control, .. }
            | BlockOut::ToolUse { cache_control, .. }
            | BlockOut::ToolResult { cache_control, .. } => *cache_control = EPHEMERAL,
        }
    }
}

#[derive(Serialize)]
struct MessageOut<'a> {
    role: &'static str,
    content: Vec<BlockOut<'a>>,
}

#[derive(Serialize)]
struct SystemOut<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    cache_control: Option<CacheMark>,
}

#[derive(Serialize)]
struct ToolOut<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheMark>,
}

#[derive(Serialize)]
struct BodyOut<'a> {
    model: &'a str,
    max_tokens: u32,
    messages: Vec<MessageOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<[SystemOut<'a>; 1]>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolOut<'a>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

/// An empty message still needs one block on this wire.
const EMPTY_TEXT: &str = "(empty)";

fn body_out(req: &ModelRequest, stream: bool) -> BodyOut<'_> {
    let mut messages: Vec<MessageOut<'_>> = Vec::with_capacity(req.messages.len());
    for m in &req.messages {
        let mut blocks: Vec<BlockOut<'_>> = Vec::with_capacity(m.content.len());
        for b in &m.content {
            match b {
                ContentBlock::Text { text } if text.is_empty() => {}
                ContentBlock::Text { text } => blocks.push(BlockOut::Text {
                    text,
                    cache_control: None,
                }),
                ContentBlock::ToolUse { id, name, input } => blocks.push(BlockOut::ToolUse {
                    id,
                    name,
                    input: input_object(input),
                    cache_control: None,
                }),
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => blocks.push(BlockOut::ToolResult {
                    tool_use_id,
                    content,
                    is_error: *is_error,
                    cache_control: None,
                }),
            }
        }
        if blocks.is_empty() {
            blocks.push(BlockOut::Text {
                text: EMPTY_TEXT,
                cache_control: None,
            });
        }
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        messages.push(MessageOut {
            role,
            content: blocks,
        });
    }
    // Breakpoints: the conversation tail, and (for a fork) the end of what it
    // inherited; the system prompt and the tool list get theirs below.
    let tail = messages.len().checked_sub(1);
    for index in [req.cache_after, tail].into_iter().flatten() {
        if let Some(last) = messages.get_mut(index).and_then(|m| m.content.last_mut()) {
            last.mark();
        }
    }
    let n_tools = req.tools.len();
    let tools = req
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| ToolOut {
            name: &t.name,
            description: &t.description,
            input_schema: &t.input_schema,
            cache_control: if i + 1 == n_tools { EPHEMERAL } else { None },
        })
        .collect();
    BodyOut {
        model: &req.model,
        max_tokens: req.max_tokens,
        messages,
        system: (!req.system.is_empty()).then(|| {
            [SystemOut {
                kind: "text",
                text: &req.system,
                cache_control: EPHEMERAL,
            }]
        }),
        tools,
        stream,
    }
}

/// The JSON body of a Messages request, with cache breakpoints on the system
/// prompt, the tool list and the conversation tail.
#[cfg(test)]
pub(crate) fn request_body(req: &ModelRequest, stream: bool) -> Value {
    serde_json::to_value(body_out(req, stream)).unwrap_or(Value::Null)
}

/// The encoded body of a Messages request, serialised straight from the
/// conversation without building an intermediate tree.
pub(crate) fn request_bytes(
    req: &ModelRequest,
    stream: bool,
) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&body_out(req, stream))
}

fn stop_reason(s: &str) -> StopReason {
    match s {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_string()),
    }
}

fn u64_at(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// Decodes the Messages event stream.
#[derive(Debug, Default)]
pub(crate) struct AnthropicDecoder {
    reply: ReplyBuilder,
    started: bool,
    stopped: bool,
    events: usize,
}

impl AnthropicDecoder {
    /// Handles one SSE event.
    pub(crate) fn on_event(
        &mut self,
        data: &str,
        emit: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<(), ModelError> {
        self.events += 1;
        let v: Value = serde_json::from_str(data)
            .map_err(|e| ModelError::Protocol(format!("event is not JSON ({e})")))?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "message_start" => {
                self.started = true;
                if let Some(u) = v.pointer("/message/usage") {
                    self.apply_usage(u);
                }
            }
            "content_block_start" => {
                let index = u64_at(&v, "index").unwrap_or(0);
                let block = v.get("content_block").cloned().unwrap_or(Value::Null);
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        let id = block.get("id").and_then(Value::as_str).unwrap_or("");
                        let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                        self.reply.start_tool(index, id, name);
                        emit(StreamDelta::ToolCallStarted {
                            id: id.to_string(),
                            name: name.to_string(),
                        });
                    }
                    Some("text") => {
                        let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                        self.reply.push_text(index, text);
                        if !text.is_empty() {
                            emit(StreamDelta::Text(text.to_string()));
                        }
                    }
                    // Thinking and other block kinds are not part of the conversation we keep.
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = u64_at(&v, "index").unwrap_or(0);
                let delta = v.get("delta").cloned().unwrap_or(Value::Null);
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = delta.get("text").and_then(Value::as_str).unwrap_or("");
                        self.reply.push_text(index, text);
                        emit(StreamDelta::Text(text.to_string()));
                    }
                    Some("input_json_delta") => {
                        let frag = delta
                            .get("partial_json")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        self.reply.push_tool_args(index, frag);
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.reply.stop_reason = Some(stop_reason(reason));
                }
                if let Some(u) = v.get("usage") {
                    self.apply_usage(u);
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let kind = v
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or("error");
                let message = v
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                return Err(ModelError::Api {
                    kind: kind.to_string(),
                    message: message.to_string(),
                });
            }
            _ => {}
        }
        Ok(())
    }

    fn apply_usage(&mut self, u: &Value) {
        let usage = &mut self.reply.usage;
        if let Some(n) = u64_at(u, "input_tokens") {
            usage.input_tokens = n;
        }
        if let Some(n) = u64_at(u, "output_tokens") {
            usage.output_tokens = n;
        }
        if let Some(n) = u64_at(u, "cache_read_input_tokens") {
            usage.cache_read_tokens = n;
        }
        if let Some(n) = u64_at(u, "cache_creation_input_tokens") {
            usage.cache_write_tokens = n;
        }
    }

    /// The complete reply, or the reason the stream was not complete.
    pub(crate) fn finish(self) -> Result<super::ModelResponse, ModelError> {
        if !self.stopped {
            return Err(ModelError::StreamEndedEarly {
                detail: format!(
                    "connection closed after {} events without message_stop{}",
                    self.events,
                    if self.started {
                        ""
                    } else {
                        " or message_start"
                    }
                ),
            });
        }
        Ok(self.reply.finish())
    }
}

/// Decodes a non-streamed Messages response.
pub(crate) fn decode_full(v: &Value) -> Result<super::ModelResponse, ModelError> {
    let mut reply = ReplyBuilder::default();
    let blocks = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| ModelError::Protocol("response has no content array".into()))?;
    for (i, b) in blocks.iter().enumerate() {
        let i = i as u64;
        match b.get("type").and_then(Value::as_str) {
            Some("text") => reply.push_text(i, b.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => {
                reply.start_tool(
                    i,
                    b.get("id").and_then(Value::as_str).unwrap_or(""),
                    b.get("name").and_then(Value::as_str).unwrap_or(""),
                );
                let input = b.get("input").cloned().unwrap_or_else(|| json!({}));
                reply.push_tool_args(i, &input.to_string());
            }
            _ => {}
        }
    }
    let mut dec = AnthropicDecoder {
        reply,
        ..Default::default()
    };
    if let Some(u) = v.get("usage") {
        dec.apply_usage(u);
    }
    if let Some(r) = v.get("stop_reason").and_then(Value::as_str) {
        dec.reply.stop_reason = Some(stop_reason(r));
    }
    Ok(dec.reply.finish())
}

/// The error text in an error response body, if it has one.
pub(crate) fn error_message(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    let kind = v
        .pointer("/error/type")
        .and_then(Value::as_str)
        .unwrap_or("error");
    let msg = v.pointer("/error/message").and_then(Value::as_str)?;
    Some(format!("{kind}: {msg}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Message, ToolSpec};

    #[test]
    fn body_has_three_cache_breakpoints() {
        let req = ModelRequest {
            model: "m".into(),
            system: "sys".into(),
            messages: vec![Message::user_text("hi")],
            tools: vec![ToolSpec {
                name: "Read".into(),
                description: "d".into(),
                input_schema: json!({"type": "object"}),
            }],
            max_tokens: 100,
            cache_after: None,
        };
        let body = request_body(&req, true);
        let s = body.to_string();
        assert_eq!(s.matches("cache_control").count(), 3);
        assert_eq!(body["stream"], json!(true));
        assert!(
            body.pointer("/messages/0/content/0/cache_control")
                .is_some()
        );
    }

    #[test]
    fn decoder_reassembles_tool_args_and_requires_stop() {
        let mut d = AnthropicDecoder::default();
        let mut sink = |_d: StreamDelta| {};
        for ev in [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":10,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"Read","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"file_pa"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"th\":\"é\"}"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}"#,
        ] {
            d.on_event(ev, &mut sink).unwrap();
        }
        let mut cut = AnthropicDecoder::default();
        cut.on_event(r#"{"type":"message_start","message":{}}"#, &mut sink)
            .unwrap();
        assert!(matches!(
            cut.finish(),
            Err(ModelError::StreamEndedEarly { .. })
        ));
        d.on_event(r#"{"type":"message_stop"}"#, &mut sink).unwrap();
        let r = d.finish().unwrap();
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        assert_eq!(r.usage.output_tokens, 7);
        assert_eq!(r.message.tool_calls()[0].input, r#"{"file_path":"é"}"#);
    }
}
