//! The Anthropic Messages wire format: request bodies with prompt-cache
//! breakpoints here, the replies (streamed or whole) in [`reply`].

mod reply;

pub(crate) use reply::{AnthropicDecoder, decode_full, error_message};

use serde::Serialize;
use serde_json::{Value, json};

use super::types::Encodings;
use super::{ContentBlock, Message, ModelRequest, Role};

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
        content: ResultContent<'a>,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheMark>,
    },
    /// An image the user attached.
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheMark>,
    },
    /// A server tool's block, sent back exactly as it came.
    #[serde(untagged)]
    Server(&'a Value),
}

/// A tool result's content: its text, or (with images) a text block and
/// image blocks.
#[derive(Serialize)]
#[serde(untagged)]
enum ResultContent<'a> {
    Text(&'a str),
    Blocks(Vec<ResultPart<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResultPart<'a> {
    Text { text: &'a str },
    Image { source: ImageSource<'a> },
    Document { source: ImageSource<'a> },
}

#[derive(Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

fn result_content<'a>(text: &'a str, images: &'a [crate::model::ToolImage]) -> ResultContent<'a> {
    if images.is_empty() {
        return ResultContent::Text(text);
    }
    let mut parts = vec![ResultPart::Text { text }];
    parts.extend(images.iter().map(|i| {
        let source = ImageSource {
            kind: "base64",
            media_type: &i.media_type,
            data: &i.data,
        };
        if i.is_document() {
            ResultPart::Document { source }
        } else {
            ResultPart::Image { source }
        }
    }));
    ResultContent::Blocks(parts)
}

impl BlockOut<'_> {
    fn mark(&mut self) {
        match self {
            BlockOut::Text { cache_control, .. }
            | BlockOut::ToolUse { cache_control, .. }
            | BlockOut::ToolResult { cache_control, .. }
            | BlockOut::Image { cache_control, .. } => *cache_control = EPHEMERAL,
            // Left as the server made it: the breakpoint falls on the block before.
            BlockOut::Server(_) => {}
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

/// Anthropic's web search tool as a request offers it.
#[derive(Serialize)]
struct WebSearchOut<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_uses: Option<u32>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    allowed_domains: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    blocked_domains: &'a [String],
}

/// The server tool's version cadre speaks.
pub(crate) const WEB_SEARCH_TYPE: &str = "web_search_20250305";

/// One entry of the request's `tools`: a client tool or a server tool.
#[derive(Serialize)]
#[serde(untagged)]
enum ToolEntry<'a> {
    Client(ToolOut<'a>),
    WebSearch(WebSearchOut<'a>),
}

#[cfg(test)]
#[derive(Serialize)]
struct BodyOut<'a> {
    model: &'a str,
    max_tokens: u32,
    messages: Vec<MessageOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<[SystemOut<'a>; 1]>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolEntry<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'a>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

/// `output_config` as sent: the request's reasoning effort.
#[derive(Serialize)]
struct OutputConfig<'a> {
    effort: &'a str,
}

/// The request's `output_config`, when it asks for an effort.
fn output_config(req: &ModelRequest) -> Option<OutputConfig<'_>> {
    req.effort.as_deref().map(|effort| OutputConfig { effort })
}

/// An empty message still needs one block on this wire.
const EMPTY_TEXT: &str = "(empty)";

/// A message as sent, without cache breakpoints.
fn message_out(m: &Message) -> MessageOut<'_> {
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
                images,
            } => blocks.push(BlockOut::ToolResult {
                tool_use_id,
                content: result_content(content, images),
                is_error: *is_error,
                cache_control: None,
            }),
            ContentBlock::Image(image) => blocks.push(BlockOut::Image {
                source: ImageSource {
                    kind: "base64",
                    media_type: &image.media_type,
                    data: &image.data,
                },
                cache_control: None,
            }),
            ContentBlock::ServerBlock { block } => blocks.push(BlockOut::Server(block)),
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
    MessageOut {
        role,
        content: blocks,
    }
}

/// A message in the Anthropic Messages API's shape (`role`, `content`
/// blocks), whichever provider it came from: what print mode's
/// stream-json shows.
pub fn message_json(m: &Message) -> Value {
    serde_json::to_value(message_out(m)).unwrap_or(Value::Null)
}

/// The tool list as sent, with a breakpoint after the last client tool,
/// then the server's web search when the request offers it.
#[cfg(test)]
fn tools_out(req: &ModelRequest) -> Vec<ToolEntry<'_>> {
    let n_tools = req.tools.len();
    let mut out: Vec<ToolEntry<'_>> = req
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| client_tool_out(t, i + 1 == n_tools))
        .collect();
    out.extend(web_search_out(req));
    out
}

/// A client tool's entry; the last one carries the breakpoint.
fn client_tool_out(t: &super::ToolSpec, last: bool) -> ToolEntry<'_> {
    ToolEntry::Client(ToolOut {
        name: &t.name,
        description: &t.description,
        input_schema: &t.input_schema,
        cache_control: if last { EPHEMERAL } else { None },
    })
}

/// The provider's web search entry, when the request offers it.
fn web_search_out(req: &ModelRequest) -> Option<ToolEntry<'_>> {
    req.web_search.as_ref().map(|search| {
        ToolEntry::WebSearch(WebSearchOut {
            kind: WEB_SEARCH_TYPE,
            name: "web_search",
            max_uses: search.max_uses,
            allowed_domains: &search.allowed_domains,
            blocked_domains: &search.blocked_domains,
        })
    })
}

/// The client tools' entries, comma-separated: encoded once per tool set
/// (kept with the specs), since they are the same in every request.
fn client_tools_bytes(tools: &super::ToolSpecs) -> Result<&[u8], serde_json::Error> {
    super::types::ToolEncodings::get_or_encode(&tools.encodings().anthropic, || {
        let mut out = Vec::new();
        for (i, t) in tools.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, &client_tool_out(t, i + 1 == tools.len()))?;
        }
        Ok(out)
    })
}

/// The system prompt as sent, with its breakpoint; none when it is empty.
fn system_out(req: &ModelRequest) -> Option<[SystemOut<'_>; 1]> {
    (!req.system.is_empty()).then(|| {
        [SystemOut {
            kind: "text",
            text: &req.system,
            cache_control: EPHEMERAL,
        }]
    })
}

/// The indexes of the messages whose last block carries a breakpoint: the
/// conversation tail, and (for a fork) the end of what it inherited.
fn marked(req: &ModelRequest) -> [Option<usize>; 2] {
    [req.cache_after, req.messages.len().checked_sub(1)]
}

/// The whole body built as one tree, re-serialising every message: the
/// reference the cached encoding must match byte for byte.
#[cfg(test)]
fn body_out(req: &ModelRequest, stream: bool) -> BodyOut<'_> {
    let mut messages: Vec<MessageOut<'_>> = req.messages.iter().map(message_out).collect();
    for index in marked(req).into_iter().flatten() {
        if let Some(last) = messages.get_mut(index).and_then(|m| m.content.last_mut()) {
            last.mark();
        }
    }
    BodyOut {
        model: &req.model,
        max_tokens: req.max_tokens,
        messages,
        system: system_out(req),
        tools: tools_out(req),
        output_config: output_config(req),
        stream,
    }
}

/// The JSON body of a Messages request, with cache breakpoints on the system
/// prompt, the tool list and the conversation tail.
#[cfg(test)]
pub(crate) fn request_body(req: &ModelRequest, stream: bool) -> Value {
    request_bytes(req, stream)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

/// The encoded body of a Messages request. Each message's encoding is made
/// once and kept with it (see `ContentBlocks`), so a request copies the
/// conversation's bytes; only the one or two messages with a breakpoint are
/// encoded afresh. Fields in `BodyOut`'s order, so the bytes are the same.
pub(crate) fn request_bytes(
    req: &ModelRequest,
    stream: bool,
) -> Result<Vec<u8>, serde_json::Error> {
    let marked = marked(req);
    // Room for the conversation's kept encodings, so the body is not copied
    // as it grows.
    let kept: usize = req
        .messages
        .iter()
        .filter_map(|m| {
            m.content
                .encodings()
                .anthropic
                .get()
                .map(|(_, b)| b.len() + 1)
        })
        .sum();
    let tools = client_tools_bytes(&req.tools)?;
    let mut out: Vec<u8> = Vec::with_capacity(kept + tools.len() + req.system.len() + 8192);
    out.extend_from_slice(b"{\"model\":");
    serde_json::to_writer(&mut out, &req.model)?;
    out.extend_from_slice(b",\"max_tokens\":");
    serde_json::to_writer(&mut out, &req.max_tokens)?;
    out.extend_from_slice(b",\"messages\":[");
    for (i, m) in req.messages.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if marked.contains(&Some(i)) {
            let mut message = message_out(m);
            if let Some(last) = message.content.last_mut() {
                last.mark();
            }
            serde_json::to_writer(&mut out, &message)?;
        } else {
            let cell = &m.content.encodings().anthropic;
            let bytes =
                Encodings::get_or_encode(cell, m.role, || serde_json::to_vec(&message_out(m)))?;
            out.extend_from_slice(&bytes);
        }
    }
    out.push(b']');
    if let Some(system) = system_out(req) {
        out.extend_from_slice(b",\"system\":");
        serde_json::to_writer(&mut out, &system)?;
    }
    if !req.tools.is_empty() || req.web_search.is_some() {
        out.extend_from_slice(b",\"tools\":[");
        out.extend_from_slice(tools);
        if let Some(search) = web_search_out(req) {
            if !req.tools.is_empty() {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, &search)?;
        }
        out.push(b']');
    }
    if let Some(config) = output_config(req) {
        out.extend_from_slice(b",\"output_config\":");
        serde_json::to_writer(&mut out, &config)?;
    }
    if stream {
        out.extend_from_slice(b",\"stream\":true");
    }
    out.push(b'}');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Message, ToolImage, ToolSpec};

    #[test]
    fn images_and_documents_are_blocks_in_results_and_user_messages() {
        let png = ToolImage {
            media_type: "image/png".into(),
            data: "AAAA".into(),
        };
        let pdf = ToolImage {
            media_type: "application/pdf".into(),
            data: "BBBB".into(),
        };
        let m = Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "c1".into(),
                    content: "pages".into(),
                    is_error: false,
                    images: vec![pdf],
                },
                ContentBlock::Image(png),
            ]
            .into(),
        };
        assert_eq!(
            message_json(&m),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "is_error": false, "content": [
                    {"type": "text", "text": "pages"},
                    {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "BBBB"}},
                ]},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            ]})
        );
    }

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
            }]
            .into(),
            max_tokens: 100,
            cache_after: None,
            effort: None,
            web_search: None,
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

    fn tool_use(id: &str, input: &str) -> ContentBlock {
        ContentBlock::ToolUse {
            id: id.into(),
            name: "Read".into(),
            input: input.into(),
        }
    }

    fn tool_result(id: &str, content: &str, is_error: bool) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: content.into(),
            is_error,
            images: Vec::new(),
        }
    }

    /// A conversation with every kind of block, an empty message and a
    /// malformed tool input.
    fn conversation() -> Vec<Message> {
        vec![
            Message::user_text("fix \"it\" é \u{1F600}"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text { text: "ok".into() },
                    tool_use("c1", r#"{"file_path": "a.rs", "n": 1}"#),
                    tool_use("c2", "{not json"),
                ]
                .into(),
            },
            Message {
                role: Role::User,
                content: vec![
                    tool_result("c1", "line\n", false),
                    tool_result("c2", "bad", true),
                ]
                .into(),
            },
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::Text {
                    text: String::new(),
                }]
                .into(),
            },
            Message::user_text("go on"),
        ]
    }

    fn request(messages: Vec<Message>, cache_after: Option<usize>) -> ModelRequest {
        ModelRequest {
            model: "m".into(),
            system: "sys".into(),
            messages,
            tools: vec![
                ToolSpec {
                    name: "Read".into(),
                    description: "d".into(),
                    input_schema: json!({"type": "object", "properties": {"b": {}, "a": {}}}),
                },
                ToolSpec {
                    name: "Bash".into(),
                    description: "e".into(),
                    input_schema: json!({"type": "object"}),
                },
            ]
            .into(),
            max_tokens: 100,
            cache_after,
            effort: None,
            web_search: None,
        }
    }

    fn fresh(req: &ModelRequest, stream: bool) -> Vec<u8> {
        serde_json::to_vec(&body_out(req, stream)).unwrap()
    }

    #[test]
    fn kept_encodings_give_the_same_bytes_as_a_fresh_encoding() {
        let all = conversation();
        // The conversation grows a message at a time, as turns do; each
        // request is sent twice (the second from kept encodings).
        for cache_after in [None, Some(1)] {
            let mut messages: Vec<Message> = Vec::new();
            for m in &all {
                messages.push(m.clone());
                let req = request(messages.clone(), cache_after);
                for stream in [true, false] {
                    assert_eq!(request_bytes(&req, stream).unwrap(), fresh(&req, stream));
                    assert_eq!(request_bytes(&req, stream).unwrap(), fresh(&req, stream));
                }
            }
        }
        let bare = ModelRequest {
            system: String::new(),
            tools: Default::default(),
            ..request(Vec::new(), None)
        };
        assert_eq!(request_bytes(&bare, true).unwrap(), fresh(&bare, true));
        let effort = ModelRequest {
            effort: Some("high".into()),
            ..request(all.clone(), None)
        };
        for stream in [true, false] {
            assert_eq!(
                request_bytes(&effort, stream).unwrap(),
                fresh(&effort, stream)
            );
        }
        assert_eq!(
            request_body(&effort, true)["output_config"],
            json!({"effort": "high"})
        );
        assert!(request_body(&bare, true).get("output_config").is_none());
    }

    #[test]
    fn a_changed_message_is_encoded_again() {
        let mut messages = conversation();
        let req = request(messages.clone(), None);
        let before = request_bytes(&req, true).unwrap();
        // The request's clones share their encodings with the conversation.
        assert!(messages[0].content.encodings().anthropic.get().is_some());
        messages[0].content.push(ContentBlock::Text {
            text: "joined".into(),
        });
        messages[2].role = Role::Assistant;
        if let Some(ContentBlock::ToolResult { content, .. }) =
            messages[2].content.blocks_mut().first_mut()
        {
            *content = "changed".into();
        }
        let req2 = request(messages, None);
        let after = request_bytes(&req2, true).unwrap();
        assert_eq!(after, fresh(&req2, true));
        let text = String::from_utf8(after).unwrap();
        assert!(
            text.contains("joined") && text.contains("changed"),
            "{text}"
        );
        // The first request's messages kept their own encodings.
        assert_eq!(request_bytes(&req, true).unwrap(), before);
    }
}
