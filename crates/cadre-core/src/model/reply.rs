//! Assembles a streamed reply from its fragments, whatever the wire format.

use std::collections::BTreeMap;

use super::{ContentBlock, Message, ModelResponse, Role, StopReason, Usage};

/// One content block being streamed.
#[derive(Debug)]
enum PartialBlock {
    Text(String),
    Tool {
        id: String,
        name: String,
        args: String,
    },
}

/// Collects text and tool-call fragments by block index, in index order.
#[derive(Debug, Default)]
pub(crate) struct ReplyBuilder {
    blocks: BTreeMap<u64, PartialBlock>,
    pub(crate) usage: Usage,
    pub(crate) stop_reason: Option<StopReason>,
}

impl ReplyBuilder {
    /// Appends text to the text block at `index`.
    pub(crate) fn push_text(&mut self, index: u64, text: &str) {
        match self
            .blocks
            .entry(index)
            .or_insert_with(|| PartialBlock::Text(String::new()))
        {
            PartialBlock::Text(t) => t.push_str(text),
            PartialBlock::Tool { .. } => {}
        }
    }

    /// Starts (or names) the tool call at `index`. Returns true if it is new.
    pub(crate) fn start_tool(&mut self, index: u64, id: &str, name: &str) -> bool {
        match self.blocks.get_mut(&index) {
            Some(PartialBlock::Tool { id: i, name: n, .. }) => {
                if i.is_empty() {
                    *i = id.to_string();
                }
                if n.is_empty() {
                    *n = name.to_string();
                }
                false
            }
            _ => {
                self.blocks.insert(
                    index,
                    PartialBlock::Tool {
                        id: id.to_string(),
                        name: name.to_string(),
                        args: String::new(),
                    },
                );
                true
            }
        }
    }

    /// Appends a fragment of argument JSON to the tool call at `index`.
    pub(crate) fn push_tool_args(&mut self, index: u64, fragment: &str) {
        if let Some(PartialBlock::Tool { args, .. }) = self.blocks.get_mut(&index) {
            args.push_str(fragment);
        } else {
            self.blocks.insert(
                index,
                PartialBlock::Tool {
                    id: String::new(),
                    name: String::new(),
                    args: fragment.to_string(),
                },
            );
        }
    }

    /// The finished reply.
    pub(crate) fn finish(self) -> ModelResponse {
        let mut content = Vec::with_capacity(self.blocks.len());
        for (index, block) in self.blocks {
            match block {
                PartialBlock::Text(text) if text.is_empty() => {}
                PartialBlock::Text(text) => content.push(ContentBlock::Text { text }),
                PartialBlock::Tool { id, name, args } => {
                    let id = if id.is_empty() {
                        format!("call_{index}")
                    } else {
                        id
                    };
                    let input = if args.trim().is_empty() {
                        "{}".to_string()
                    } else {
                        args
                    };
                    content.push(ContentBlock::ToolUse { id, name, input });
                }
            }
        }
        let has_tools = content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolUse { .. }));
        let stop_reason = self.stop_reason.unwrap_or(if has_tools {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        });
        ModelResponse {
            message: Message {
                role: Role::Assistant,
                content,
            },
            stop_reason,
            usage: self.usage,
        }
    }
}
