//! The OpenAI Chat Completions wire format, which local servers (Ollama, vLLM,
//! llama.cpp) speak too: request bodies and the streamed chunk sequence.

use serde_json::{Value, json};

use std::collections::HashMap;

use super::reply::ReplyBuilder;
use super::text_calls::{self, CallFamily};
use super::types::Encodings;
use super::{ContentBlock, Message, ModelError, ModelRequest, Role, StopReason, StreamDelta};

/// The wire messages one message becomes (none, one, or several).
fn message_values(m: &Message, messages: &mut Vec<Value>) {
    match m.role {
        Role::Assistant => {
            let text = m.text();
            let calls: Vec<Value> = m
                .tool_calls()
                .into_iter()
                .map(|c| {
                    json!({"id": c.id, "type": "function",
                           "function": {"name": c.name, "arguments": c.input}})
                })
                .collect();
            let mut msg = json!({
                "role": "assistant",
                "content": if text.is_empty() { Value::Null } else { Value::String(text) },
            });
            if !calls.is_empty()
                && let Some(obj) = msg.as_object_mut()
            {
                obj.insert("tool_calls".into(), Value::Array(calls));
            }
            messages.push(msg);
        }
        Role::User => {
            // Tool results become `tool` messages, which must directly follow
            // the assistant message; any text goes in a user message after
            // them. A tool message holds text only, so the results' images
            // go in that user message too, as `image_url` parts.
            let mut text = String::new();
            let mut images: Vec<&super::ToolImage> = Vec::new();
            for b in &m.content {
                match b {
                    ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                        images: result_images,
                    } => {
                        let content = if *is_error {
                            format!("Error: {content}")
                        } else {
                            content.clone()
                        };
                        messages.push(
                            json!({"role": "tool", "tool_call_id": tool_use_id, "content": content}),
                        );
                        // Documents stay behind: their text is in the result.
                        images.extend(result_images.iter().filter(|i| !i.is_document()));
                    }
                    ContentBlock::Text { text: t } => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(t);
                    }
                    ContentBlock::Image(image) => images.push(image),
                    ContentBlock::ToolUse { .. } | ContentBlock::ServerBlock { .. } => {}
                }
            }
            if !images.is_empty() {
                messages.push(json!({"role": "user", "content": text_and_images(text, &images)}));
            } else if !text.is_empty() {
                messages.push(json!({"role": "user", "content": text}));
            }
        }
    }
}

/// The one wire message a message becomes when tools travel in the prompt
/// (`tool_calls = "text"`): calls written back in the family's syntax after
/// the assistant's text, results as wrapped text in a user message.
fn text_mode_value(m: &Message, family: CallFamily, names: &HashMap<&str, &str>) -> Option<Value> {
    let mut parts: Vec<String> = Vec::new();
    let mut images: Vec<&super::ToolImage> = Vec::new();
    for b in &m.content {
        match b {
            ContentBlock::Text { text } if !text.is_empty() => parts.push(text.clone()),
            ContentBlock::Text { .. } | ContentBlock::ServerBlock { .. } => {}
            ContentBlock::ToolUse { name, input, .. } => {
                parts.push(text_calls::render_call(family, name, input));
            }
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
                images: result_images,
            } => {
                let name = names.get(tool_use_id.as_str()).copied().unwrap_or("tool");
                parts.push(text_calls::render_result(family, name, content, *is_error));
                images.extend(result_images.iter().filter(|i| !i.is_document()));
            }
            ContentBlock::Image(image) => images.push(image),
        }
    }
    let role = match m.role {
        Role::Assistant => "assistant",
        Role::User => "user",
    };
    let text = parts.join("\n\n");
    if images.is_empty() || m.role == Role::Assistant {
        return (!text.is_empty()).then(|| json!({"role": role, "content": text}));
    }
    Some(json!({"role": role, "content": text_and_images(text, &images)}))
}

/// A user message's content parts: its text, then each image as an `image_url`.
fn text_and_images(text: String, images: &[&super::ToolImage]) -> Value {
    let mut parts = Vec::with_capacity(images.len() + 1);
    if !text.is_empty() {
        parts.push(json!({"type": "text", "text": text}));
    }
    for image in images {
        let url = format!("data:{};base64,{}", image.media_type, image.data);
        parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
    }
    Value::Array(parts)
}

/// Call ids to tool names across the request, to name each result.
fn call_names(req: &ModelRequest) -> HashMap<&str, &str> {
    req.messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, name, .. } => Some((id.as_str(), name.as_str())),
            _ => None,
        })
        .collect()
}

/// One message's wire messages, comma-separated (empty when it becomes none).
fn encode_message(m: &Message) -> Result<Vec<u8>, serde_json::Error> {
    let mut values = Vec::new();
    message_values(m, &mut values);
    let mut out = Vec::new();
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, v)?;
    }
    Ok(out)
}

fn system_value(req: &ModelRequest) -> Option<Value> {
    (!req.system.is_empty()).then(|| json!({"role": "system", "content": req.system}))
}

fn tool_values(req: &ModelRequest) -> Vec<Value> {
    req.tools
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.input_schema}})
        })
        .collect()
}

/// Which body key carries the output token ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenLimitKey {
    /// `max_completion_tokens`: OpenAI's own API (its reasoning models refuse `max_tokens`).
    MaxCompletionTokens,
    /// `max_tokens`: every other Chat Completions server (llama.cpp, vLLM, Ollama…).
    MaxTokens,
}

impl TokenLimitKey {
    fn as_str(self) -> &'static str {
        match self {
            TokenLimitKey::MaxCompletionTokens => "max_completion_tokens",
            TokenLimitKey::MaxTokens => "max_tokens",
        }
    }
}

/// The whole body built as one tree, re-serialising every message: the
/// reference the cached encoding must match byte for byte.
#[cfg(test)]
fn body_tree(req: &ModelRequest, stream: bool, limit_key: TokenLimitKey) -> Value {
    let mut messages: Vec<Value> = Vec::with_capacity(req.messages.len() + 1);
    messages.extend(system_value(req));
    for m in &req.messages {
        message_values(m, &mut messages);
    }
    let tools = tool_values(req);
    let mut body = json!({"model": req.model, "messages": messages});
    if let Some(obj) = body.as_object_mut() {
        if !tools.is_empty() {
            obj.insert("tools".into(), Value::Array(tools));
        }
        obj.insert(limit_key.as_str().into(), Value::from(req.max_tokens));
        if let Some(effort) = reasoning_effort(req) {
            obj.insert("reasoning_effort".into(), Value::from(effort));
        }
        if stream {
            obj.insert("stream".into(), Value::Bool(true));
            obj.insert("stream_options".into(), json!({"include_usage": true}));
        }
    }
    body
}

/// `reasoning_effort` for the request's effort: this wire knows only low,
/// medium and high, so Claude's higher levels ask for its highest.
fn reasoning_effort(req: &ModelRequest) -> Option<&str> {
    req.effort.as_deref().map(|e| match e {
        "xhigh" | "max" => "high",
        other => other,
    })
}

/// The JSON body of a Chat Completions request.
#[cfg(test)]
pub(crate) fn request_body(req: &ModelRequest, stream: bool) -> Value {
    request_bytes(req, stream, TokenLimitKey::MaxTokens)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

/// The encoded body of a Chat Completions request. Each message's encoding is
/// made once and kept with it (see `ContentBlocks`), so a request copies the
/// conversation's bytes. Keys in the order `body_tree` inserts them.
#[cfg(test)]
pub(crate) fn request_bytes(
    req: &ModelRequest,
    stream: bool,
    limit_key: TokenLimitKey,
) -> Result<Vec<u8>, serde_json::Error> {
    request_bytes_as(req, stream, limit_key, None)
}

/// The encoded body, with the tools in the system prompt and calls and
/// results as text when `text_calls` names the model's call syntax.
pub(crate) fn request_bytes_as(
    req: &ModelRequest,
    stream: bool,
    limit_key: TokenLimitKey,
    text_calls: Option<CallFamily>,
) -> Result<Vec<u8>, serde_json::Error> {
    // Room for the conversation's kept encodings, so the body is not copied
    // as it grows.
    let kept: usize = req
        .messages
        .iter()
        .filter_map(|m| {
            let e = m.content.encodings();
            let cell = if text_calls.is_some() {
                &e.openai_text
            } else {
                &e.openai
            };
            cell.get().map(|(_, b)| b.len() + 1)
        })
        .sum();
    let mut out: Vec<u8> = Vec::with_capacity(kept + req.system.len() + 8192);
    out.extend_from_slice(b"{\"model\":");
    serde_json::to_writer(&mut out, &req.model)?;
    out.extend_from_slice(b",\"messages\":[");
    let mut first = true;
    match text_calls {
        Some(family) if !req.tools.is_empty() => {
            let mut system = req.system.clone();
            if !system.is_empty() {
                system.push_str("\n\n");
            }
            system.push_str(&text_calls::tools_prompt(&req.tools, family));
            serde_json::to_writer(&mut out, &json!({"role": "system", "content": system}))?;
            first = false;
        }
        _ => {
            if let Some(system) = system_value(req) {
                serde_json::to_writer(&mut out, &system)?;
                first = false;
            }
        }
    }
    let names = match text_calls {
        Some(_) => call_names(req),
        None => HashMap::new(),
    };
    for m in &req.messages {
        let bytes = match text_calls {
            Some(family) => {
                let cell = &m.content.encodings().openai_text;
                Encodings::get_or_encode(cell, m.role, || {
                    text_mode_value(m, family, &names)
                        .map(|v| serde_json::to_vec(&v))
                        .unwrap_or_else(|| Ok(Vec::new()))
                })?
            }
            None => {
                let cell = &m.content.encodings().openai;
                Encodings::get_or_encode(cell, m.role, || encode_message(m))?
            }
        };
        if bytes.is_empty() {
            continue;
        }
        if !first {
            out.push(b',');
        }
        out.extend_from_slice(&bytes);
        first = false;
    }
    out.push(b']');
    if text_calls.is_none() && !req.tools.is_empty() {
        // The same in every request of the tool set: encoded once, kept with it.
        let tools =
            super::types::ToolEncodings::get_or_encode(&req.tools.encodings().openai, || {
                serde_json::to_vec(&tool_values(req))
            })?;
        out.extend_from_slice(b",\"tools\":");
        out.extend_from_slice(tools);
    }
    out.extend_from_slice(b",\"");
    out.extend_from_slice(limit_key.as_str().as_bytes());
    out.extend_from_slice(b"\":");
    serde_json::to_writer(&mut out, &req.max_tokens)?;
    if let Some(effort) = reasoning_effort(req) {
        out.extend_from_slice(b",\"reasoning_effort\":");
        serde_json::to_writer(&mut out, effort)?;
    }
    if stream {
        out.extend_from_slice(b",\"stream\":true,\"stream_options\":{\"include_usage\":true}");
    }
    out.push(b'}');
    Ok(out)
}

fn stop_reason(s: &str) -> StopReason {
    match s {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_string()),
    }
}

fn apply_usage(reply: &mut ReplyBuilder, u: &Value) {
    let prompt = u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0);
    let cached = u
        .pointer("/prompt_tokens_details/cached_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    reply.usage.input_tokens = prompt.saturating_sub(cached);
    reply.usage.cache_read_tokens = cached;
    reply.usage.output_tokens = u
        .get("completion_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
}

/// Decodes the Chat Completions chunk stream.
#[derive(Debug, Default)]
pub(crate) struct OpenAiDecoder {
    reply: ReplyBuilder,
    finished: bool,
    done: bool,
    chunks: usize,
}

/// Block indexes: text at 0, tool call j at j + 1, so text comes first.
const TOOL_INDEX_BASE: u64 = 1;

impl OpenAiDecoder {
    /// Handles one SSE `data:` payload. `Ok(true)` when it carried reply
    /// content (text, reasoning, a tool call, the finish reason, the usage),
    /// which alone restarts the stream's idle clock: an empty delta does not.
    pub(crate) fn on_event(
        &mut self,
        data: &str,
        emit: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<bool, ModelError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        self.chunks += 1;
        let v: Value = serde_json::from_str(data)
            .map_err(|e| ModelError::Protocol(format!("chunk is not JSON ({e})")))?;
        if let Some(err) = v.get("error") {
            return Err(ModelError::Api {
                kind: err
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("error")
                    .to_string(),
                message: err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            });
        }
        let mut progress = false;
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            apply_usage(&mut self.reply, u);
            progress = true;
        }
        let Some(choice) = v.get("choices").and_then(|c| c.get(0)) else {
            return Ok(progress);
        };
        if let Some(delta) = choice.get("delta") {
            if let Some(text) = delta.get("content").and_then(Value::as_str)
                && !text.is_empty()
            {
                self.reply.push_text(0, text);
                emit(StreamDelta::Text(text.to_string()));
                progress = true;
            }
            // A reasoning model's thinking (llama.cpp, vLLM: `reasoning_content`;
            // Ollama, OpenRouter: `reasoning`) is not kept, but it is work.
            progress |= ["reasoning_content", "reasoning"].iter().any(|k| {
                delta
                    .get(*k)
                    .and_then(Value::as_str)
                    .is_some_and(|t| !t.is_empty())
            });
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                progress |= !calls.is_empty();
                for (pos, call) in calls.iter().enumerate() {
                    let j = call
                        .get("index")
                        .and_then(Value::as_u64)
                        .unwrap_or(pos as u64);
                    let index = TOOL_INDEX_BASE + j;
                    let id = call.get("id").and_then(Value::as_str).unwrap_or("");
                    let name = call
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    if (!id.is_empty() || !name.is_empty())
                        && self.reply.start_tool(index, id, name)
                    {
                        emit(StreamDelta::ToolCallStarted {
                            id: id.to_string(),
                            name: name.to_string(),
                        });
                    }
                    if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str)
                    {
                        self.reply.push_tool_args(index, args);
                    }
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.reply.stop_reason = Some(stop_reason(reason));
            self.finished = true;
            progress = true;
        }
        Ok(progress)
    }

    /// Whether `[DONE]` arrived after a finish reason: nothing after it belongs
    /// to the reply.
    pub(crate) fn is_complete(&self) -> bool {
        self.finished && self.done
    }

    /// The complete reply, or the reason the stream was not complete. A stream
    /// is complete once a finish reason arrived; `[DONE]` alone without one is not.
    pub(crate) fn finish(self) -> Result<super::ModelResponse, ModelError> {
        if !self.finished {
            return Err(ModelError::StreamEndedEarly {
                detail: format!(
                    "connection closed after {} chunks without a finish_reason{}",
                    self.chunks,
                    if self.done { " (got [DONE])" } else { "" }
                ),
            });
        }
        Ok(self.reply.finish())
    }
}

/// Decodes a non-streamed Chat Completions response.
pub(crate) fn decode_full(v: &Value) -> Result<super::ModelResponse, ModelError> {
    let msg = v
        .pointer("/choices/0/message")
        .ok_or_else(|| ModelError::Protocol("response has no choices[0].message".into()))?;
    let mut reply = ReplyBuilder::default();
    if let Some(text) = msg.get("content").and_then(Value::as_str) {
        reply.push_text(0, text);
    }
    if let Some(calls) = msg.get("tool_calls").and_then(Value::as_array) {
        for (j, call) in calls.iter().enumerate() {
            let index = TOOL_INDEX_BASE + j as u64;
            reply.start_tool(
                index,
                call.get("id").and_then(Value::as_str).unwrap_or(""),
                call.pointer("/function/name")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            );
            reply.push_tool_args(
                index,
                call.pointer("/function/arguments")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            );
        }
    }
    if let Some(u) = v.get("usage") {
        apply_usage(&mut reply, u);
    }
    if let Some(r) = v
        .pointer("/choices/0/finish_reason")
        .and_then(Value::as_str)
    {
        reply.stop_reason = Some(stop_reason(r));
    }
    Ok(reply.finish())
}

/// The error text in an error response body, if it has one.
pub(crate) fn error_message(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    let msg = v.pointer("/error/message").and_then(Value::as_str)?;
    // llama.cpp gives the context size beside its message; it says how far
    // to cut when the request was too long.
    match v.pointer("/error/n_ctx").and_then(Value::as_u64) {
        Some(n_ctx) => Some(format!("{msg} (n_ctx = {n_ctx})")),
        None => Some(msg.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;

    #[test]
    fn images_follow_the_tool_messages_as_image_url_parts_and_pdfs_stay_behind() {
        let png = crate::model::ToolImage {
            media_type: "image/png".into(),
            data: "AAAA".into(),
        };
        let pdf = crate::model::ToolImage {
            media_type: "application/pdf".into(),
            data: "BBBB".into(),
        };
        let m = Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "c1".into(),
                    content: "[image]".into(),
                    is_error: false,
                    images: vec![png.clone(), pdf],
                },
                ContentBlock::Text {
                    text: "look".into(),
                },
                ContentBlock::Image(png),
            ]
            .into(),
        };
        let mut out = Vec::new();
        message_values(&m, &mut out);
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[0]["role"], "tool");
        assert_eq!(out[0]["content"], "[image]");
        assert_eq!(
            out[1],
            json!({"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ]})
        );
    }

    #[test]
    fn a_llama_cpp_context_error_keeps_its_context_size() {
        let body = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}"#;
        assert_eq!(
            error_message(body).unwrap(),
            "the request exceeds the available context size, try increasing it (n_ctx = 4096)"
        );
        assert_eq!(
            error_message(r#"{"error":{"message":"plain"}}"#).unwrap(),
            "plain"
        );
    }

    #[test]
    fn tool_results_become_tool_messages_before_text() {
        let req = ModelRequest {
            model: "m".into(),
            system: "s".into(),
            messages: vec![
                Message::user_text("go"),
                Message {
                    role: Role::Assistant,
                    content: vec![ContentBlock::ToolUse {
                        id: "c1".into(),
                        name: "Read".into(),
                        input: "{}".into(),
                    }]
                    .into(),
                },
                Message {
                    role: Role::User,
                    content: vec![
                        ContentBlock::ToolResult {
                            tool_use_id: "c1".into(),
                            content: "x".into(),
                            is_error: false,
                            images: Vec::new(),
                        },
                        ContentBlock::Text {
                            text: "note".into(),
                        },
                    ]
                    .into(),
                },
            ],
            tools: Default::default(),
            max_tokens: 10,
            cache_after: None,
            effort: None,
            web_search: None,
        };
        let body = request_body(&req, false);
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
        assert!(body.get("stream").is_none());
        assert_eq!(body["max_tokens"], 10);
        assert!(body.get("max_completion_tokens").is_none());
        let own: Value = serde_json::from_slice(
            &request_bytes(&req, true, TokenLimitKey::MaxCompletionTokens).unwrap(),
        )
        .unwrap();
        assert_eq!(own["max_completion_tokens"], 10);
        assert!(own.get("max_tokens").is_none());
    }

    #[test]
    fn effort_maps_to_reasoning_effort() {
        for (effort, want) in [
            ("low", "low"),
            ("medium", "medium"),
            ("high", "high"),
            ("xhigh", "high"),
            ("max", "high"),
        ] {
            let req = ModelRequest {
                model: "m".into(),
                system: String::new(),
                messages: vec![Message::user_text("go")],
                tools: Default::default(),
                max_tokens: 10,
                cache_after: None,
                effort: Some(effort.into()),
                web_search: None,
            };
            assert_eq!(request_body(&req, true)["reasoning_effort"], want);
        }
    }

    #[test]
    fn kept_encodings_give_the_same_bytes_as_a_fresh_encoding() {
        let all = vec![
            Message::user_text("fix \"it\" é"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text { text: "ok".into() },
                    ContentBlock::ToolUse {
                        id: "c1".into(),
                        name: "Read".into(),
                        input: r#"{"file_path": "a.rs"}"#.into(),
                    },
                ]
                .into(),
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "c1".into(),
                    content: "bad".into(),
                    is_error: true,
                    images: Vec::new(),
                }]
                .into(),
            },
            // Becomes no wire message at all.
            Message {
                role: Role::User,
                content: vec![ContentBlock::Text {
                    text: String::new(),
                }]
                .into(),
            },
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::Text {
                    text: "done".into(),
                }]
                .into(),
            },
        ];
        for system in ["", "sys"] {
            let mut messages: Vec<Message> = Vec::new();
            for m in &all {
                messages.push(m.clone());
                let req = ModelRequest {
                    model: "m".into(),
                    system: system.into(),
                    messages: messages.clone(),
                    tools: vec![crate::model::ToolSpec {
                        name: "Read".into(),
                        description: "d".into(),
                        input_schema: json!({"type": "object"}),
                    }]
                    .into(),
                    max_tokens: 10,
                    cache_after: None,
                    effort: (system == "sys").then(|| "max".to_string()),
                    web_search: None,
                };
                for (stream, key) in [
                    (true, TokenLimitKey::MaxTokens),
                    (false, TokenLimitKey::MaxCompletionTokens),
                ] {
                    let want = serde_json::to_vec(&body_tree(&req, stream, key)).unwrap();
                    assert_eq!(request_bytes(&req, stream, key).unwrap(), want);
                    assert_eq!(request_bytes(&req, stream, key).unwrap(), want);
                }
            }
        }
        // A role changed after encoding is not sent with the old encoding.
        let mut m = all[4].clone();
        let req = |m: &Message| ModelRequest {
            model: "m".into(),
            system: String::new(),
            messages: vec![m.clone()],
            tools: Default::default(),
            max_tokens: 10,
            cache_after: None,
            effort: None,
            web_search: None,
        };
        let key = TokenLimitKey::MaxTokens;
        request_bytes(&req(&m), true, key).unwrap();
        m.role = Role::User;
        let r = req(&m);
        assert_eq!(
            request_bytes(&r, true, key).unwrap(),
            serde_json::to_vec(&body_tree(&r, true, key)).unwrap()
        );
    }

    #[test]
    fn decoder_joins_fragments_and_detects_cut() {
        let mut d = OpenAiDecoder::default();
        let mut sink = |_d: StreamDelta| {};
        for ev in [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"Read","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
        ] {
            d.on_event(ev, &mut sink).unwrap();
        }
        let mut d2 = OpenAiDecoder::default();
        d2.on_event("[DONE]", &mut sink).unwrap();
        assert!(d2.finish().is_err());
        d.on_event(
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            &mut sink,
        )
        .unwrap();
        d.on_event(
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":4}}}"#,
            &mut sink,
        )
        .unwrap();
        let r = d.finish().unwrap();
        assert_eq!(r.message.text(), "Hi");
        assert_eq!(
            r.message.tool_calls(),
            vec![ToolCall {
                id: "c1".into(),
                name: "Read".into(),
                input: r#"{"a":1}"#.into()
            }]
        );
        assert_eq!(r.usage.input_tokens, 6);
        assert_eq!(r.usage.cache_read_tokens, 4);
    }
}
