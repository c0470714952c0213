//! A conversation rebuilt from its log's records, for `--resume`: every
//! call the log shows without a result gets one (`unknown` if it was
//! started, `not run` otherwise), so the messages are valid to send.

use std::collections::{HashMap, HashSet};

use super::log::{LogRecord, NOT_RUN_RESULT, RecordBody, UNKNOWN_RESULT};
use crate::model::{ContentBlock, Message, Role, ToolImage};

/// A call the log shows as started, or asked for, but never finished.
#[derive(Debug, Clone, PartialEq)]
pub struct UnfinishedCall {
    /// Call id.
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// Raw arguments.
    pub input: String,
    /// True if a `tool_start` was logged: the call may have run.
    pub started: bool,
}

/// A conversation rebuilt from a log.
#[derive(Debug, Clone, Default)]
pub struct Rebuilt {
    /// Session id from the first record.
    pub session_id: Option<String>,
    /// Working directory from the first record.
    pub cwd: Option<String>,
    /// Messages, valid to send: every tool call has a result.
    pub messages: Vec<Message>,
    /// Calls without a logged result; results were filled in (unknown / not run).
    pub unfinished: Vec<UnfinishedCall>,
    /// The tokens the provider last counted for the conversation, and how
    /// many of `messages` that count covers, as the live session had them:
    /// from the last reply's usage, or a compaction's estimate after it.
    /// The resumed agent then decides when to compact as the live one would.
    pub counted: Option<(u64, usize)>,
}

/// Rebuilds the conversation. Calls without a result get one: `unknown` if
/// they were started (they may have run), `not run` otherwise.
pub fn rebuild(records: &[LogRecord]) -> Rebuilt {
    let mut out = Rebuilt::default();
    let mut results: HashMap<&str, (&str, bool, &[ToolImage])> = HashMap::new();
    let mut started: HashSet<&str> = HashSet::new();
    for r in records {
        match &r.body {
            RecordBody::ToolResult {
                call_id,
                content,
                is_error,
                images,
                ..
            } => {
                results.insert(call_id, (content, *is_error, images));
            }
            RecordBody::ToolStart { call_id, .. } => {
                started.insert(call_id);
            }
            _ => {}
        }
    }
    for r in records {
        match &r.body {
            RecordBody::SessionStart {
                session_id, cwd, ..
            } => {
                out.session_id.get_or_insert_with(|| session_id.clone());
                out.cwd.get_or_insert_with(|| cwd.clone());
            }
            RecordBody::User { text } => match out.messages.last_mut() {
                Some(last) if last.role == Role::User => {
                    last.content.push(ContentBlock::Text { text: text.clone() })
                }
                _ => out.messages.push(Message::user_text(text.clone())),
            },
            RecordBody::UserImage { image } => {
                let block = ContentBlock::Image(image.clone());
                match out.messages.last_mut() {
                    Some(last) if last.role == Role::User => last.content.push(block),
                    _ => out.messages.push(Message {
                        role: Role::User,
                        content: vec![block].into(),
                    }),
                }
            }
            RecordBody::CompactBoundary {
                summary,
                kept,
                tokens_after,
                ..
            } => {
                // Everything before is replaced by the summary, exactly as the
                // live session replaced it; calls left open before it are gone
                // with the messages that held them.
                out.messages = crate::context::compacted_conversation(summary, kept);
                out.unfinished.clear();
                out.counted = Some((*tokens_after, out.messages.len()));
            }
            RecordBody::Rewind { messages, blocks } => {
                crate::context::apply_cut(
                    &mut out.messages,
                    crate::context::Cut {
                        messages: *messages,
                        blocks: *blocks,
                    },
                );
                // What was counted belonged to the longer conversation.
                out.counted = None;
                // Calls cut away with their messages are no longer unfinished.
                let kept: HashSet<String> = out
                    .messages
                    .iter()
                    .flat_map(|m| m.tool_calls())
                    .map(|c| c.id)
                    .collect();
                out.unfinished.retain(|u| kept.contains(&u.call_id));
            }
            RecordBody::Assistant { message, usage, .. } => {
                let calls = message.tool_calls();
                out.messages.push(message.clone());
                // As the live agent counts a reply (a server that reports
                // no usage is estimated instead).
                out.counted = usage
                    .as_ref()
                    .filter(|u| u.total() > 0)
                    .map(|u| (u.total(), out.messages.len()));
                if calls.is_empty() {
                    continue;
                }
                let mut blocks = Vec::with_capacity(calls.len());
                for call in calls {
                    let (content, is_error, images) = match results.get(call.id.as_str()) {
                        Some((c, e, i)) => ((*c).to_string(), *e, i.to_vec()),
                        None => {
                            let was_started = started.contains(call.id.as_str());
                            out.unfinished.push(UnfinishedCall {
                                call_id: call.id.clone(),
                                tool: call.name.clone(),
                                input: call.input.clone(),
                                started: was_started,
                            });
                            let text = if was_started {
                                UNKNOWN_RESULT
                            } else {
                                NOT_RUN_RESULT
                            };
                            (text.to_string(), true, Vec::new())
                        }
                    };
                    blocks.push(ContentBlock::ToolResult {
                        tool_use_id: call.id,
                        content,
                        is_error,
                        images,
                    });
                }
                out.messages.push(Message {
                    role: Role::User,
                    content: blocks.into(),
                });
            }
            _ => {}
        }
    }
    out
}
