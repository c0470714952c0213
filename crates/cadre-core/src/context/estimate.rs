//! Token counts before the provider has given any: about four bytes a
//! token, which errs on the high side for code and English.

use crate::model::{ContentBlock, Message};

/// Bytes counted as one token.
const BYTES_PER_TOKEN: u64 = 4;
/// Tokens a message or block costs beyond its text (role, ids, framing).
const FRAMING_TOKENS: u64 = 4;

/// Tokens counted for one image: about what the APIs charge for one at the
/// largest size cadre sends.
const IMAGE_TOKENS: u64 = 1600;

/// Estimated tokens of an image or a document.
fn media_tokens(image: &crate::model::ToolImage) -> u64 {
    if image.is_document() {
        // Text and page images of a PDF: roughly its size.
        (image.data.len() as u64).div_ceil(BYTES_PER_TOKEN * 2)
    } else {
        IMAGE_TOKENS
    }
}

/// Estimated tokens of a text.
pub fn estimate_text_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(BYTES_PER_TOKEN)
}

/// Estimated tokens of one message.
pub fn estimate_message_tokens(message: &Message) -> u64 {
    let mut tokens = FRAMING_TOKENS;
    for block in &message.content {
        tokens += FRAMING_TOKENS
            + match block {
                ContentBlock::Text { text } => estimate_text_tokens(text),
                ContentBlock::ToolUse { id, name, input } => {
                    estimate_text_tokens(id)
                        + estimate_text_tokens(name)
                        + estimate_text_tokens(input)
                }
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    images,
                    ..
                } => {
                    estimate_text_tokens(tool_use_id)
                        + estimate_text_tokens(content)
                        + images.iter().map(media_tokens).sum::<u64>()
                }
                ContentBlock::Image(image) => media_tokens(image),
                ContentBlock::ServerBlock { block } => estimate_text_tokens(&block.to_string()),
            };
    }
    tokens
}

/// Estimated tokens of messages.
pub fn estimate_messages_tokens(messages: &[Message]) -> u64 {
    messages.iter().map(estimate_message_tokens).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_bytes_a_token_plus_framing() {
        assert_eq!(estimate_text_tokens(""), 0);
        assert_eq!(estimate_text_tokens("abcd"), 1);
        assert_eq!(estimate_text_tokens("abcde"), 2);
        let m = Message::user_text("x".repeat(400));
        assert_eq!(estimate_message_tokens(&m), 4 + 4 + 100);
    }
}
