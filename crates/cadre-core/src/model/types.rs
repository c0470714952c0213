//! Provider-neutral conversation types. The wire modules translate these to and
//! from each provider's JSON; nothing here knows about HTTP.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user, or the harness speaking for tool results.
    User,
    /// The model.
    Assistant,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call made by the model. `input` is the raw JSON text the model
    /// produced, kept verbatim so strict parsing can see duplicate keys and
    /// malformed text.
    ToolUse {
        /// Provider-assigned call id.
        id: String,
        /// Tool name as the model wrote it.
        name: String,
        /// Raw argument JSON text.
        input: String,
    },
    /// The harness's answer to a tool call.
    ToolResult {
        /// The call this answers.
        tool_use_id: String,
        /// Result text shown to the model.
        content: String,
        /// Whether the call failed.
        is_error: bool,
        /// Images the tool returned (`Read` of an image, an MCP tool's), sent
        /// beside the text: inside the result on Anthropic, in a user message
        /// after the results on OpenAI. A PDF (`application/pdf`) here goes
        /// as a document block where the provider takes one; its text is in
        /// `content` already.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ToolImage>,
    },
    /// An image the user attached to their message (`@shot.png`, a paste).
    Image(ToolImage),
    /// A block the provider's server made for a tool it runs itself
    /// (Anthropic's `server_tool_use`, `web_search_tool_result`): kept
    /// verbatim, because the API wants it back as it was (its
    /// `encrypted_content` included), and never run by cadre.
    ServerBlock {
        /// The block as the provider sent it.
        block: serde_json::Value,
    },
}

/// The media type of a PDF.
pub const PDF_MEDIA_TYPE: &str = "application/pdf";

/// An image (or a PDF) for the model, in a tool result or a user message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolImage {
    /// `image/png`, `image/jpeg`, `image/gif`, `image/webp`, `application/pdf`.
    pub media_type: String,
    /// The bytes, base64-encoded. In a session log: `sha256:<hex>`, the
    /// name of the copy stored beside the log.
    pub data: String,
}

impl ToolImage {
    /// True for a PDF document rather than an image.
    pub fn is_document(&self) -> bool {
        self.media_type == PDF_MEDIA_TYPE
    }
}

impl Message {
    /// True if any block holds an image or document.
    pub fn has_images(&self) -> bool {
        self.content.iter().any(|b| match b {
            ContentBlock::Image(_) => true,
            ContentBlock::ToolResult { images, .. } => !images.is_empty(),
            _ => false,
        })
    }

    /// This message for a model that takes no images: each image becomes a
    /// short text note, documents are left out (their text is in the result).
    pub fn without_images(&self, model: &str) -> Message {
        let note = |m: &ToolImage| {
            format!(
                "[{} not shown: the model {model} is configured to take no images (images = false)]",
                m.media_type
            )
        };
        let blocks: Vec<ContentBlock> = self
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Image(img) => ContentBlock::Text { text: note(img) },
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    images,
                } if !images.is_empty() => {
                    let mut content = content.clone();
                    for img in images.iter().filter(|i| !i.is_document()) {
                        content.push('\n');
                        content.push_str(&note(img));
                    }
                    ContentBlock::ToolResult {
                        tool_use_id: tool_use_id.clone(),
                        content,
                        is_error: *is_error,
                        images: Vec::new(),
                    }
                }
                other => other.clone(),
            })
            .collect();
        Message {
            role: self.role,
            content: blocks.into(),
        }
    }
}

/// A message in the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Speaker.
    pub role: Role,
    /// Content blocks, in order.
    pub content: ContentBlocks,
}

/// A message's content blocks, with the wire encodings of them kept once made,
/// so a request re-sends a conversation by copying bytes. Read as a slice
/// (`Deref`); every change goes through a method that drops the encodings
/// first, so a stale encoding can never be sent. Clones share the blocks and
/// the encodings until one of them changes.
#[derive(Clone, Default)]
pub struct ContentBlocks {
    blocks: Arc<Vec<ContentBlock>>,
    encoded: Arc<Encodings>,
}

/// The encodings of one message, made on first use, per wire format. Each is
/// kept with the role it was made for: `Message::role` is a public field, so
/// one made for another role is not used.
#[derive(Debug, Default)]
pub(crate) struct Encodings {
    /// Anthropic: the whole message object, without cache breakpoints.
    pub(crate) anthropic: OnceLock<(Role, Box<[u8]>)>,
    /// OpenAI: the wire messages it becomes, comma-separated (possibly none).
    pub(crate) openai: OnceLock<(Role, Box<[u8]>)>,
    /// OpenAI with tools in the prompt: the wire message it becomes, with
    /// calls and results written as text.
    pub(crate) openai_text: OnceLock<(Role, Box<[u8]>)>,
}

impl Encodings {
    /// The encoding in `cell` when it was made for `role`; else `encode`'s,
    /// kept in `cell` if it is still empty.
    pub(crate) fn get_or_encode<'a, E>(
        cell: &'a OnceLock<(Role, Box<[u8]>)>,
        role: Role,
        encode: impl FnOnce() -> Result<Vec<u8>, E>,
    ) -> Result<std::borrow::Cow<'a, [u8]>, E> {
        use std::borrow::Cow;
        if let Some((made_for, bytes)) = cell.get() {
            if *made_for == role {
                return Ok(Cow::Borrowed(bytes));
            }
            return encode().map(Cow::Owned);
        }
        let mut fresh = Some(encode()?);
        let (made_for, kept) =
            cell.get_or_init(|| (role, fresh.take().unwrap_or_default().into_boxed_slice()));
        // Kept for another role by a clone on another thread: use ours, unkept.
        match fresh {
            Some(bytes) if *made_for != role => Ok(Cow::Owned(bytes)),
            _ => Ok(Cow::Borrowed(kept)),
        }
    }
}

impl ContentBlocks {
    /// Blocks with no encodings yet.
    pub fn new(blocks: Vec<ContentBlock>) -> Self {
        ContentBlocks {
            blocks: Arc::new(blocks),
            encoded: Arc::default(),
        }
    }

    /// Appends a block.
    pub fn push(&mut self, block: ContentBlock) {
        self.blocks_mut().push(block);
    }

    /// The blocks, to change: the encodings are dropped first (and cannot be
    /// made again while the borrow lives).
    pub fn blocks_mut(&mut self) -> &mut Vec<ContentBlock> {
        self.encoded = Arc::default();
        Arc::make_mut(&mut self.blocks)
    }

    /// The blocks, owned.
    pub fn into_vec(self) -> Vec<ContentBlock> {
        Arc::unwrap_or_clone(self.blocks)
    }

    /// The encodings made so far.
    pub(crate) fn encodings(&self) -> &Encodings {
        &self.encoded
    }
}

impl Deref for ContentBlocks {
    type Target = [ContentBlock];
    fn deref(&self) -> &[ContentBlock] {
        &self.blocks
    }
}

impl std::fmt::Debug for ContentBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.blocks.iter()).finish()
    }
}

impl PartialEq for ContentBlocks {
    fn eq(&self, other: &Self) -> bool {
        self.blocks == other.blocks
    }
}

impl PartialEq<Vec<ContentBlock>> for ContentBlocks {
    fn eq(&self, other: &Vec<ContentBlock>) -> bool {
        *self.blocks == *other
    }
}

impl From<Vec<ContentBlock>> for ContentBlocks {
    fn from(blocks: Vec<ContentBlock>) -> Self {
        ContentBlocks::new(blocks)
    }
}

impl FromIterator<ContentBlock> for ContentBlocks {
    fn from_iter<I: IntoIterator<Item = ContentBlock>>(iter: I) -> Self {
        ContentBlocks::new(iter.into_iter().collect())
    }
}

impl<'a> IntoIterator for &'a ContentBlocks {
    type Item = &'a ContentBlock;
    type IntoIter = std::slice::Iter<'a, ContentBlock>;
    fn into_iter(self) -> Self::IntoIter {
        self.blocks.iter()
    }
}

impl Serialize for ContentBlocks {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.blocks.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ContentBlocks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<ContentBlock>::deserialize(deserializer).map(ContentBlocks::new)
    }
}

impl Message {
    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }].into(),
        }
    }

    /// The concatenated text blocks of this message.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }

    /// The tool calls in this message, in order.
    pub fn tool_calls(&self) -> Vec<ToolCall> {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolUse { id, name, input } => Some(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    input: input.clone(),
                }),
                _ => None,
            })
            .collect()
    }
}

/// A tool call extracted from an assistant message.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Provider-assigned call id.
    pub id: String,
    /// Tool name as the model wrote it.
    pub name: String,
    /// Raw argument JSON text.
    pub input: String,
}

/// What the model is told about one tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// Canonical name.
    pub name: String,
    /// Description for the model.
    pub description: String,
    /// JSON schema of the arguments.
    pub input_schema: serde_json::Value,
}

/// The tools of a request: shared by every request of an agent (a clone is a
/// reference), with the wire encodings of them made once, so a turn neither
/// rebuilds nor re-encodes its tools' schemas.
#[derive(Clone, Default)]
pub struct ToolSpecs {
    specs: Arc<Vec<ToolSpec>>,
    encoded: Arc<ToolEncodings>,
}

/// The encodings of a request's tools, made on first use.
#[derive(Debug, Default)]
pub(crate) struct ToolEncodings {
    /// Anthropic: the tool entries, comma-separated, the last one with its
    /// cache breakpoint (the provider's own tools follow them).
    pub(crate) anthropic: OnceLock<Box<[u8]>>,
    /// OpenAI: the whole `tools` array.
    pub(crate) openai: OnceLock<Box<[u8]>>,
}

impl ToolEncodings {
    /// The encoding kept in `cell`, made by `encode` the first time.
    pub(crate) fn get_or_encode<E>(
        cell: &OnceLock<Box<[u8]>>,
        encode: impl FnOnce() -> Result<Vec<u8>, E>,
    ) -> Result<&[u8], E> {
        if let Some(bytes) = cell.get() {
            return Ok(bytes);
        }
        let fresh = encode()?;
        Ok(cell.get_or_init(|| fresh.into_boxed_slice()))
    }
}

impl ToolSpecs {
    /// The encodings made so far.
    pub(crate) fn encodings(&self) -> &ToolEncodings {
        &self.encoded
    }

    /// The specs, owned.
    pub fn to_vec(&self) -> Vec<ToolSpec> {
        self.specs.as_ref().clone()
    }
}

impl From<Vec<ToolSpec>> for ToolSpecs {
    fn from(specs: Vec<ToolSpec>) -> Self {
        ToolSpecs {
            specs: Arc::new(specs),
            encoded: Arc::default(),
        }
    }
}

impl Deref for ToolSpecs {
    type Target = [ToolSpec];
    fn deref(&self) -> &[ToolSpec] {
        &self.specs
    }
}

impl std::fmt::Debug for ToolSpecs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.specs.iter()).finish()
    }
}

impl Serialize for ToolSpecs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.specs.serialize(s)
    }
}

/// One request to a model.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// Concrete model id.
    pub model: String,
    /// System prompt.
    pub system: String,
    /// Conversation so far.
    pub messages: Vec<Message>,
    /// Tools offered.
    pub tools: ToolSpecs,
    /// Output token ceiling.
    pub max_tokens: u32,
    /// An extra prompt-cache breakpoint after this message (a fork marks the
    /// end of what it inherited, so its requests read the parent's cache).
    pub cache_after: Option<usize>,
    /// Reasoning effort (`low` … `max`, as a definition's `effort`); `None`
    /// leaves it to the provider.
    pub effort: Option<String>,
    /// The provider's own web search, offered beside `tools` (Anthropic only).
    pub web_search: Option<super::ServerWebSearch>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Finished its reply.
    EndTurn,
    /// Wants tools run.
    ToolUse,
    /// Hit the output token ceiling.
    MaxTokens,
    /// Anything else the provider said.
    Other(String),
}

/// Token counts for one request, or summed over many.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Usage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Adds another count to this one.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }

    /// Every token counted, in and out.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

/// A complete model reply.
#[derive(Debug, Clone)]
pub struct ModelResponse {
    /// The assistant message.
    pub message: Message,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Tokens used.
    pub usage: Usage,
    /// The reply's text looks like a tool call written as text that could
    /// not be read: what is wrong with it, for the model to correct.
    pub text_call_problem: Option<String>,
}

/// Incremental pieces of a reply as they stream in, for display.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamDelta {
    /// More assistant text.
    Text(String),
    /// A tool call began.
    ToolCallStarted {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// The request is being retried after a transient failure.
    Retrying {
        /// Attempt about to be made (2 = first retry).
        attempt: u32,
        /// HTTP status that caused it, if any.
        status: Option<u16>,
        /// How long we wait first.
        wait_ms: u64,
        /// What went wrong (never holds the key).
        reason: String,
        /// Text the failed try already streamed is void: the retry starts the reply over.
        discarded_text: bool,
    },
}

/// A tool call's arguments once parsed: always one JSON object. The policy
/// decides on this value and the tool runs exactly it.
pub type ToolInput = serde_json::Map<String, serde_json::Value>;
