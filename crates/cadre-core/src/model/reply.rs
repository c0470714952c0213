//! Assembles a streamed reply from its fragments, whatever the wire format.

use std::collections::{BTreeMap, HashSet};

use super::{ContentBlock, Message, ModelResponse, Role, StopReason, Usage};

/// A call id no server gave: unique in any session (servers may send none,
/// and ids made from a position repeat from one reply to the next).
fn fresh_call_id() -> String {
    format!("call_{}", uuid::Uuid::now_v7().simple())
}

/// Gives every tool call in `message` an id not used before in `history` nor
/// earlier in `message`, so results and resume match calls one to one. Ids the
/// server chose are kept when they are unique; the id recorded is the one sent back.
pub fn unique_call_ids(message: &mut Message, history: &[Message]) {
    let ids: Vec<&str> = message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    if ids.is_empty() {
        return;
    }
    // A reply holds a call or two and the history hundreds: each of its ids is
    // looked for in the history, rather than the history's ids hashed every turn.
    let used_before = |id: &str| {
        history.iter().any(|m| {
            m.content
                .iter()
                .any(|b| matches!(b, ContentBlock::ToolUse { id: old, .. } if old == id))
        })
    };
    let clash = ids
        .iter()
        .enumerate()
        .any(|(i, id)| id.is_empty() || ids[..i].contains(id) || used_before(id));
    if !clash {
        // Untouched: the message keeps whatever it has.
        return;
    }
    let mut seen: HashSet<String> = HashSet::new();
    for block in message.content.blocks_mut() {
        if let ContentBlock::ToolUse { id, .. } = block {
            if id.is_empty() || seen.contains(id.as_str()) || used_before(id) {
                *id = fresh_call_id();
            }
            seen.insert(id.clone());
        }
    }
}

/// One content block being streamed.
#[derive(Debug)]
enum PartialBlock {
    Text(String),
    Tool {
        id: String,
        name: String,
        args: String,
    },
    /// A server tool's block; `args` collects a call's streamed input.
    Server {
        block: serde_json::Value,
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
            PartialBlock::Tool { .. } | PartialBlock::Server { .. } => {}
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

    /// Starts the server tool block at `index`, as the server sent it.
    pub(crate) fn start_server(&mut self, index: u64, block: serde_json::Value) {
        self.blocks.insert(
            index,
            PartialBlock::Server {
                block,
                args: String::new(),
            },
        );
    }

    /// Appends a fragment of argument JSON to the tool call at `index`.
    pub(crate) fn push_tool_args(&mut self, index: u64, fragment: &str) {
        if let Some(PartialBlock::Tool { args, .. } | PartialBlock::Server { args, .. }) =
            self.blocks.get_mut(&index)
        {
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
        for block in self.blocks.into_values() {
            match block {
                PartialBlock::Text(text) if text.is_empty() => {}
                PartialBlock::Text(text) => content.push(ContentBlock::Text { text }),
                PartialBlock::Tool { id, name, args } => {
                    let id = if id.is_empty() { fresh_call_id() } else { id };
                    let input = if args.trim().is_empty() {
                        "{}".to_string()
                    } else {
                        args
                    };
                    content.push(ContentBlock::ToolUse { id, name, input });
                }
                PartialBlock::Server { mut block, args } => {
                    // The streamed input replaces the start event's empty one;
                    // input that does not parse leaves the block as it began.
                    if let (Ok(input), Some(fields)) = (
                        serde_json::from_str::<serde_json::Value>(&args),
                        block.as_object_mut(),
                    ) {
                        fields.insert("input".into(), input);
                    }
                    content.push(ContentBlock::ServerBlock { block });
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
                content: content.into(),
            },
            stop_reason,
            usage: self.usage,
            text_call_problem: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolUse {
            id: id.into(),
            name: "Read".into(),
            input: "{}".into(),
        }
    }

    fn ids(m: &Message) -> Vec<String> {
        m.tool_calls().into_iter().map(|c| c.id).collect()
    }

    #[test]
    fn missing_and_repeated_ids_are_replaced() {
        let earlier = Message {
            role: Role::Assistant,
            content: vec![call("a")].into(),
        };
        let mut m = Message {
            role: Role::Assistant,
            content: vec![call("a"), call("b"), call("b"), call("")].into(),
        };
        unique_call_ids(&mut m, std::slice::from_ref(&earlier));
        let got = ids(&m);
        assert_eq!(got[1], "b");
        let a = "a".to_string();
        let all: HashSet<&String> = got.iter().chain([&a]).collect();
        assert_eq!(all.len(), 5, "{got:?}");
        assert!(got.iter().all(|i| !i.is_empty()));
    }
}
