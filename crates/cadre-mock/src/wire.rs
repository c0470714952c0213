//! Response bodies in the Anthropic Messages and OpenAI Chat Completions formats.

use axum::body::Bytes;
use serde_json::{Value, json};

use crate::Wire;
use crate::script::Reply;

/// Everything besides the reply that goes into a response.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// Rule name (sanitized for ids).
    pub rule: String,
    /// Step index.
    pub step: usize,
    /// Model echoed from the request.
    pub model: String,
    /// Message / completion id.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// Request body length in bytes (for the default input token count).
    pub request_bytes: usize,
    /// OpenAI `stream_options.include_usage`.
    pub include_usage: bool,
}

/// Resolved token usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_creation: u64,
}

/// Applies defaults to the reply's usage.
pub fn tokens(reply: &Reply, ctx: &Ctx) -> Tokens {
    let chars: usize = reply.text.as_deref().map_or(0, |t| t.chars().count())
        + reply
            .tool_calls
            .iter()
            .map(|c| c.name.chars().count() + c.args_text().chars().count())
            .sum::<usize>();
    let u = &reply.usage;
    Tokens {
        input: u.input_tokens.unwrap_or((ctx.request_bytes / 4) as u64),
        output: u.output_tokens.unwrap_or(((chars / 4) as u64).max(1)),
        cache_read: u.cache_read_input_tokens.unwrap_or(0),
        cache_creation: u.cache_creation_input_tokens.unwrap_or(0),
    }
}

/// Splits `s` into pieces of at most `n` chars (on char boundaries).
pub fn char_chunks(s: &str, n: usize) -> Vec<String> {
    let n = n.max(1);
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// Keeps only `[A-Za-z0-9_-]` so a rule name can go into an id.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// OpenAI-compatible servers may send a tool call without an id: `id: ""` in a script does that.
fn without_empty_id(mut call: Value) -> Value {
    if call["id"] == ""
        && let Some(obj) = call.as_object_mut()
    {
        obj.remove("id");
    }
    call
}

fn tool_id(reply: &Reply, ctx: &Ctx, i: usize, prefix: &str) -> String {
    reply.tool_calls[i]
        .id
        .clone()
        .unwrap_or_else(|| format!("{prefix}_{}_{}_{i}", ctx.rule, ctx.step))
}

/// The Anthropic stop reason for this reply.
pub fn anthropic_stop_reason(reply: &Reply) -> String {
    match reply.stop_reason.as_deref() {
        Some("stop") => "end_turn".into(),
        Some("tool_calls") => "tool_use".into(),
        Some("length") => "max_tokens".into(),
        Some(other) => other.into(),
        None if reply.tool_calls.is_empty() => "end_turn".into(),
        None => "tool_use".into(),
    }
}

/// The OpenAI finish reason for this reply.
pub fn openai_finish_reason(reply: &Reply) -> String {
    match reply.stop_reason.as_deref() {
        Some("end_turn" | "stop_sequence") => "stop".into(),
        Some("tool_use") => "tool_calls".into(),
        Some("max_tokens") => "length".into(),
        Some(other) => other.into(),
        None if reply.tool_calls.is_empty() => "stop".into(),
        None => "tool_calls".into(),
    }
}

/// The server tool's two blocks: its call (input as given) and its result.
fn server_blocks(reply: &Reply, ctx: &Ctx) -> Option<(Value, Value)> {
    let tool = reply.server_tool.as_ref()?;
    let id = tool
        .id
        .clone()
        .unwrap_or_else(|| format!("srvtoolu_{}_{}", ctx.rule, ctx.step));
    let call = json!({
        "type": "server_tool_use",
        "id": id,
        "name": tool.name.as_deref().unwrap_or("web_search"),
        "input": tool.input.clone().unwrap_or_else(|| json!({})),
    });
    let content = match &tool.error_code {
        Some(code) => json!({"type": "web_search_tool_result_error", "error_code": code}),
        None => Value::Array(
            tool.results
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let mut v = json!({
                        "type": "web_search_result",
                        "url": r.url,
                        "title": r.title,
                        "encrypted_content": format!("enc_{}_{}_{i}", ctx.rule, ctx.step),
                    });
                    if let Some(age) = &r.page_age {
                        v["page_age"] = json!(age);
                    }
                    v
                })
                .collect(),
        ),
    };
    let result = json!({"type": "web_search_tool_result", "tool_use_id": id, "content": content});
    Some((call, result))
}

fn anthropic_usage(t: Tokens, output: u64) -> Value {
    json!({
        "input_tokens": t.input,
        "output_tokens": output,
        "cache_creation_input_tokens": t.cache_creation,
        "cache_read_input_tokens": t.cache_read,
    })
}

fn openai_usage(t: Tokens) -> Value {
    let prompt = t.input + t.cache_read + t.cache_creation;
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": t.output,
        "total_tokens": prompt + t.output,
        "prompt_tokens_details": { "cached_tokens": t.cache_read },
    })
}

/// A complete (non-streaming) response body.
pub fn full_body(wire: Wire, reply: &Reply, ctx: &Ctx) -> Value {
    let t = tokens(reply, ctx);
    match wire {
        Wire::Anthropic => {
            let mut content = Vec::new();
            if let Some((call, result)) = server_blocks(reply, ctx) {
                content.push(call);
                content.push(result);
            }
            if let Some(text) = &reply.text {
                content.push(json!({"type": "text", "text": text}));
            }
            for (i, c) in reply.tool_calls.iter().enumerate() {
                content.push(json!({
                    "type": "tool_use",
                    "id": tool_id(reply, ctx, i, "toolu"),
                    "name": c.name,
                    "input": c.input_value(),
                }));
            }
            json!({
                "id": ctx.id,
                "type": "message",
                "role": "assistant",
                "model": ctx.model,
                "content": content,
                "stop_reason": anthropic_stop_reason(reply),
                "stop_sequence": null,
                "usage": anthropic_usage(t, t.output),
            })
        }
        Wire::Openai => {
            let mut message = json!({
                "role": "assistant",
                "content": reply.text,
            });
            if !reply.tool_calls.is_empty() {
                let calls: Vec<Value> = reply
                    .tool_calls
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        without_empty_id(json!({
                            "id": tool_id(reply, ctx, i, "call"),
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.args_text()},
                        }))
                    })
                    .collect();
                message["tool_calls"] = Value::Array(calls);
            }
            json!({
                "id": ctx.id,
                "object": "chat.completion",
                "created": ctx.created,
                "model": ctx.model,
                "choices": [{
                    "index": 0,
                    "message": message,
                    "finish_reason": openai_finish_reason(reply),
                }],
                "usage": openai_usage(t),
            })
        }
    }
}

fn anthropic_event(name: &str, data: Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// One content block as Anthropic streams it: its start, its deltas, its stop.
fn push_anthropic_block(
    out: &mut Vec<Bytes>,
    index: usize,
    block: Value,
    deltas: impl IntoIterator<Item = Value>,
) {
    out.push(anthropic_event(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": block}),
    ));
    for delta in deltas {
        out.push(anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        ));
    }
    out.push(anthropic_event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    ));
}

fn openai_event(data: &Value) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

/// The SSE events of a streamed response, one `Bytes` per event.
pub fn stream_events(wire: Wire, reply: &Reply, ctx: &Ctx) -> Vec<Bytes> {
    match wire {
        Wire::Anthropic => anthropic_events(reply, ctx),
        Wire::Openai => openai_events(reply, ctx),
    }
}

fn anthropic_events(reply: &Reply, ctx: &Ctx) -> Vec<Bytes> {
    let t = tokens(reply, ctx);
    let mut out = vec![
        anthropic_event(
            "message_start",
            json!({
                "type": "message_start",
                "message": {
                    "id": ctx.id,
                    "type": "message",
                    "role": "assistant",
                    "model": ctx.model,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": anthropic_usage(t, 1),
                }
            }),
        ),
        anthropic_event("ping", json!({"type": "ping"})),
    ];
    let mut index = 0usize;
    if let Some((mut call, result)) = server_blocks(reply, ctx) {
        // The call starts with an empty input; the input follows as deltas.
        let input = call["input"].take().to_string();
        call["input"] = json!({});
        let deltas = char_chunks(&input, reply.args_chunk())
            .into_iter()
            .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}));
        push_anthropic_block(&mut out, index, call, deltas);
        index += 1;
        push_anthropic_block(&mut out, index, result, []);
        index += 1;
    }
    if let Some(text) = &reply.text {
        let deltas = char_chunks(text, reply.text_chunk())
            .into_iter()
            .map(|piece| json!({"type": "text_delta", "text": piece}));
        push_anthropic_block(&mut out, index, json!({"type": "text", "text": ""}), deltas);
        index += 1;
    }
    for (i, call) in reply.tool_calls.iter().enumerate() {
        let block = json!({"type": "tool_use", "id": tool_id(reply, ctx, i, "toolu"), "name": call.name, "input": {}});
        let mut pieces = vec![String::new()];
        pieces.extend(char_chunks(&call.args_text(), reply.args_chunk()));
        let deltas = pieces
            .into_iter()
            .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}));
        push_anthropic_block(&mut out, index, block, deltas);
        index += 1;
    }
    out.push(anthropic_event(
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": {"stop_reason": anthropic_stop_reason(reply), "stop_sequence": null},
            "usage": message_delta_usage(reply, t),
        }),
    ));
    out.push(anthropic_event(
        "message_stop",
        json!({"type": "message_stop"}),
    ));
    out
}

/// The closing usage: output tokens, and the searches a server tool made.
fn message_delta_usage(reply: &Reply, t: Tokens) -> Value {
    let mut usage = json!({"output_tokens": t.output});
    if reply.server_tool.is_some() {
        usage["server_tool_use"] = json!({"web_search_requests": 1});
    }
    usage
}

fn openai_events(reply: &Reply, ctx: &Ctx) -> Vec<Bytes> {
    let chunk = |delta: Value, finish: Value| {
        openai_event(&json!({
            "id": ctx.id,
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }))
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    if let Some(text) = &reply.text {
        for piece in char_chunks(text, reply.text_chunk()) {
            out.push(chunk(json!({"content": piece}), Value::Null));
        }
    }
    for (j, call) in reply.tool_calls.iter().enumerate() {
        out.push(chunk(
            json!({"tool_calls": [without_empty_id(json!({
                "index": j,
                "id": tool_id(reply, ctx, j, "call"),
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }))]}),
            Value::Null,
        ));
        for piece in char_chunks(&call.args_text(), reply.args_chunk()) {
            out.push(chunk(
                json!({"tool_calls": [{"index": j, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    out.push(chunk(json!({}), Value::String(openai_finish_reason(reply))));
    if ctx.include_usage {
        out.push(openai_event(&json!({
            "id": ctx.id,
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [],
            "usage": openai_usage(tokens(reply, ctx)),
        })));
    }
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out
}

/// An error event sent in the middle of a stream, as the servers send them:
/// Anthropic's `event: error`, and llama.cpp's `data: {"error": {…}}` on the
/// OpenAI wire (e.g. `server_error` when a model's tool call cannot be parsed).
/// A keep-alive `event: ping` as Anthropic sends it; sent the same way on
/// the OpenAI wire (as some proxies do). It carries no reply content.
pub fn ping_event() -> Bytes {
    anthropic_event("ping", json!({"type": "ping"}))
}

pub fn stream_error_event(wire: Wire, kind: Option<&str>, message: &str) -> Bytes {
    match wire {
        Wire::Anthropic => anthropic_event(
            "error",
            json!({"type": "error", "error": {"type": kind.unwrap_or("overloaded_error"), "message": message}}),
        ),
        Wire::Openai => openai_event(
            &json!({"error": {"code": 500, "message": message, "type": kind.unwrap_or("server_error")}}),
        ),
    }
}

/// Error type name for a status on the given wire.
pub fn error_type(wire: Wire, status: u16) -> &'static str {
    match (wire, status) {
        (_, 429) => "rate_limit_error",
        (Wire::Anthropic, 401) => "authentication_error",
        (Wire::Anthropic, 403) => "permission_error",
        (Wire::Anthropic, 404) => "not_found_error",
        (Wire::Anthropic, 413) => "request_too_large",
        (Wire::Anthropic, 529) => "overloaded_error",
        (Wire::Anthropic, s) if s >= 500 => "api_error",
        (Wire::Openai, 401) => "authentication_error",
        (Wire::Openai, s) if s >= 500 => "server_error",
        _ => "invalid_request_error",
    }
}

/// A JSON error body in the wire's format.
pub fn error_body(wire: Wire, status: u16, message: &str) -> Value {
    let kind = error_type(wire, status);
    match wire {
        Wire::Anthropic => json!({"type": "error", "error": {"type": kind, "message": message}}),
        Wire::Openai => {
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_split_on_char_boundaries() {
        assert_eq!(char_chunks("héllo", 2), vec!["hé", "ll", "o"]);
        assert!(char_chunks("", 3).is_empty());
        assert_eq!(sanitize("my rule/1"), "my_rule_1");
    }

    #[test]
    fn stop_reason_translation() {
        let mut r = Reply::default();
        assert_eq!(anthropic_stop_reason(&r), "end_turn");
        assert_eq!(openai_finish_reason(&r), "stop");
        r.stop_reason = Some("max_tokens".into());
        assert_eq!(openai_finish_reason(&r), "length");
        r.stop_reason = Some("length".into());
        assert_eq!(anthropic_stop_reason(&r), "max_tokens");
    }
}
