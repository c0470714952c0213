//! Anthropic replies: the streamed event sequence, read into a typed shape
//! (a tree where the shape does not fit), and a whole reply's body.

use serde::Deserialize;
use serde_json::{Value, json};
use std::borrow::Cow;

use crate::model::reply::ReplyBuilder;
use crate::model::{ModelError, ModelResponse, StopReason, StreamDelta, is_server_block};

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

/// A stream event as sent, read without building a tree: the fields cadre
/// uses, its strings borrowed where they hold no escapes; others ignored.
/// An event this shape does not fit is read as a tree instead.
#[derive(Deserialize)]
struct StreamEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    index: Option<u64>,
    #[serde(borrow)]
    delta: Option<EventPart<'a>>,
    #[serde(borrow)]
    content_block: Option<EventPart<'a>>,
    message: Option<EventMessage>,
    usage: Option<EventUsage>,
}

impl<'a> StreamEvent<'a> {
    /// The event read leniently from its tree: a field of another type
    /// than expected is left out.
    fn from_tree(v: &'a Value) -> StreamEvent<'a> {
        StreamEvent {
            kind: v
                .get("type")
                .and_then(Value::as_str)
                .map(Cow::Borrowed)
                .unwrap_or_default(),
            index: u64_at(v, "index"),
            delta: v.get("delta").map(EventPart::from_tree),
            content_block: v.get("content_block").map(EventPart::from_tree),
            message: v.get("message").map(|m| EventMessage {
                usage: m.get("usage").map(EventUsage::from_tree),
            }),
            usage: v.get("usage").map(EventUsage::from_tree),
        }
    }
}

impl<'a> EventPart<'a> {
    /// The part read leniently from a tree.
    fn from_tree(v: &'a Value) -> EventPart<'a> {
        let text = |key: &str| v.get(key).and_then(Value::as_str).map(Cow::Borrowed);
        EventPart {
            kind: text("type"),
            text: text("text"),
            partial_json: text("partial_json"),
            stop_reason: text("stop_reason"),
            id: text("id"),
            name: text("name"),
        }
    }
}

impl EventUsage {
    /// The counts read leniently from a tree.
    fn from_tree(u: &Value) -> EventUsage {
        EventUsage {
            input_tokens: u64_at(u, "input_tokens"),
            output_tokens: u64_at(u, "output_tokens"),
            cache_read_input_tokens: u64_at(u, "cache_read_input_tokens"),
            cache_creation_input_tokens: u64_at(u, "cache_creation_input_tokens"),
        }
    }
}

/// The `delta` of a block delta or of `message_delta`, or the
/// `content_block` of `content_block_start`: each uses some of these.
#[derive(Deserialize)]
struct EventPart<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(borrow)]
    stop_reason: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
}

/// The `message` of `message_start`: only its usage is read.
#[derive(Deserialize)]
struct EventMessage {
    usage: Option<EventUsage>,
}

/// Token counts as the wire names them.
#[derive(Deserialize)]
struct EventUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
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
    /// Handles one SSE event. `Ok(true)` when it carried reply content (a
    /// block, a fragment, the end of the message), which alone restarts the
    /// stream's idle clock: a `ping`, or an event cadre does not know, does not.
    pub(crate) fn on_event(
        &mut self,
        data: &str,
        emit: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<bool, ModelError> {
        self.events += 1;
        // Events are read into a typed shape, without building a tree; one
        // it does not fit (a server tool's block, an error) is read as a tree.
        if let Ok(event) = serde_json::from_str::<StreamEvent<'_>>(data)
            && let Some(progress) = self.on_typed(&event, emit)
        {
            return Ok(progress);
        }
        let v: Value = serde_json::from_str(data)
            .map_err(|e| ModelError::Protocol(format!("event is not JSON ({e})")))?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "error" {
            let field = |name: &str| v.pointer(&format!("/error/{name}")).and_then(Value::as_str);
            return Err(ModelError::Api {
                kind: field("type").unwrap_or("error").to_string(),
                message: field("message").unwrap_or("").to_string(),
            });
        }
        // A server tool's call (its input follows as JSON deltas) or its
        // result (whole here): kept as sent, not run here.
        if kind == "content_block_start"
            && let Some(block) = v.get("content_block")
            && block
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(is_server_block)
        {
            self.reply
                .start_server(u64_at(&v, "index").unwrap_or(0), block.clone());
            return Ok(true);
        }
        // Anything else the typed shape did not fit (a count sent as a
        // float, say) is read leniently from the tree.
        Ok(self
            .on_typed(&StreamEvent::from_tree(&v), emit)
            .unwrap_or(false))
    }

    /// [`Self::on_event`] for an event read into its typed shape; `None`
    /// when it must be read as a tree.
    fn on_typed(
        &mut self,
        event: &StreamEvent<'_>,
        emit: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Option<bool> {
        let index = event.index.unwrap_or(0);
        Some(match event.kind.as_ref() {
            "message_start" => {
                // Only the first one starts anything.
                let first = !self.started;
                self.started = true;
                if let Some(u) = event.message.as_ref().and_then(|m| m.usage.as_ref()) {
                    self.apply_typed_usage(u);
                }
                first
            }
            "content_block_start" => {
                let block = event.content_block.as_ref()?;
                match block.kind.as_deref().unwrap_or("") {
                    "tool_use" => {
                        let id = block.id.as_deref().unwrap_or("");
                        let name = block.name.as_deref().unwrap_or("");
                        self.reply.start_tool(index, id, name);
                        emit(StreamDelta::ToolCallStarted {
                            id: id.to_string(),
                            name: name.to_string(),
                        });
                    }
                    "text" => {
                        let text = block.text.as_deref().unwrap_or("");
                        self.reply.push_text(index, text);
                        if !text.is_empty() {
                            emit(StreamDelta::Text(text.to_string()));
                        }
                    }
                    // A server tool's block is kept whole, as sent: the tree.
                    kind if is_server_block(kind) => return None,
                    // Thinking and other block kinds are not part of the conversation we keep.
                    _ => {}
                }
                true
            }
            "content_block_delta" => {
                let Some(delta) = &event.delta else {
                    return Some(false);
                };
                match delta.kind.as_deref() {
                    Some("text_delta") => {
                        let text = delta.text.as_deref().unwrap_or("");
                        self.reply.push_text(index, text);
                        emit(StreamDelta::Text(text.to_string()));
                        !text.is_empty()
                    }
                    Some("input_json_delta") => {
                        let frag = delta.partial_json.as_deref().unwrap_or("");
                        self.reply.push_tool_args(index, frag);
                        !frag.is_empty()
                    }
                    // Thinking and its signature: the model is working.
                    Some(_) => true,
                    None => false,
                }
            }
            "content_block_stop" => true,
            "message_delta" => {
                if let Some(reason) = event.delta.as_ref().and_then(|d| d.stop_reason.as_deref()) {
                    self.reply.stop_reason = Some(stop_reason(reason));
                }
                if let Some(u) = &event.usage {
                    self.apply_typed_usage(u);
                }
                true
            }
            "message_stop" => {
                self.stopped = true;
                true
            }
            "ping" => false,
            // An error and anything unknown: the tree.
            _ => return None,
        })
    }

    fn apply_typed_usage(&mut self, u: &EventUsage) {
        let usage = &mut self.reply.usage;
        if let Some(n) = u.input_tokens {
            usage.input_tokens = n;
        }
        if let Some(n) = u.output_tokens {
            usage.output_tokens = n;
        }
        if let Some(n) = u.cache_read_input_tokens {
            usage.cache_read_tokens = n;
        }
        if let Some(n) = u.cache_creation_input_tokens {
            usage.cache_write_tokens = n;
        }
    }

    fn apply_usage(&mut self, u: &Value) {
        self.apply_typed_usage(&EventUsage::from_tree(u));
    }

    /// Whether `message_stop` arrived: nothing after it belongs to the reply.
    pub(crate) fn is_complete(&self) -> bool {
        self.stopped
    }

    /// The complete reply, or the reason the stream was not complete.
    pub(crate) fn finish(self) -> Result<ModelResponse, ModelError> {
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
pub(crate) fn decode_full(v: &Value) -> Result<ModelResponse, ModelError> {
    let mut reply = ReplyBuilder::default();
    let blocks = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| ModelError::Protocol("response has no content array".into()))?;
    for (i, b) in blocks.iter().enumerate() {
        let i = i as u64;
        match b.get("type").and_then(Value::as_str) {
            Some("text") => reply.push_text(i, b.get("text").and_then(Value::as_str).unwrap_or("")),
            Some(kind) if is_server_block(kind) => reply.start_server(i, b.clone()),
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

    #[test]
    fn events_outside_the_typed_shape_are_read_from_the_tree() {
        let mut d = AnthropicDecoder::default();
        let mut texts = Vec::new();
        let mut sink = |delta: StreamDelta| {
            if let StreamDelta::Text(t) = delta {
                texts.push(t);
            }
        };
        for ev in [
            // A count sent as a float: the typed shape does not fit it.
            r#"{"type":"message_start","message":{"usage":{"input_tokens":10.0,"output_tokens":1}}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"line\n\"quoted\""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"s1","name":"web_search","input":{}}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9.0,"input_tokens":12}}"#,
            r#"{"type":"message_stop"}"#,
        ] {
            d.on_event(ev, &mut sink).unwrap();
        }
        assert_eq!(texts, ["line\n\"quoted\""]);
        let r = d.finish().unwrap();
        assert_eq!(r.stop_reason, StopReason::EndTurn);
        // The float counts are left out; the others are read.
        assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (12, 1));
        let json = serde_json::to_string(&r.message).unwrap();
        assert!(json.contains("server_tool_use"), "{json}");

        let mut e = AnthropicDecoder::default();
        let err = e
            .on_event(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#,
                &mut |_| {},
            )
            .unwrap_err();
        assert!(
            matches!(&err, ModelError::Api { kind, message } if kind == "overloaded_error" && message == "busy"),
            "{err:?}"
        );
    }
}
