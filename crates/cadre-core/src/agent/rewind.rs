//! Going back: the conversation returns to just before one of the user's
//! earlier messages (Esc twice in the TUI), and the model switched for the
//! next requests (`/model NAME`). Both are logged so `--resume` rebuilds the
//! same conversation; files the turns changed are not changed back.

use super::{Agent, LogFailure};
use crate::model::{ContentBlock, Role};
use crate::protocol::Event;
use crate::session::RecordBody;

/// Why a rewind did not happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewindError {
    /// The message is not in the conversation (never sent, or summarised by a compaction).
    #[error(
        "that message is no longer in the conversation (a compaction summarised it, or it was never sent)"
    )]
    NotFound,
    /// The log could not record it; the conversation is unchanged.
    #[error("the session log could not record going back: {0}")]
    Log(String),
}

/// Where the conversation is cut: whole messages kept, and blocks of the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// Messages kept whole.
    pub messages: usize,
    /// Blocks kept of the message after them (text joined before the prompt).
    pub blocks: usize,
}

/// Where the user text `prompt` was sent, `later_same` later sends of the
/// same text skipped (counting from the end).
pub fn find_prompt(
    conversation: &[crate::model::Message],
    prompt: &str,
    later_same: usize,
) -> Option<Cut> {
    let mut seen = 0usize;
    for (m, message) in conversation.iter().enumerate().rev() {
        if message.role != Role::User {
            continue;
        }
        for (b, block) in message.content.iter().enumerate().rev() {
            if matches!(block, ContentBlock::Text { text } if text == prompt) {
                if seen == later_same {
                    return Some(Cut {
                        messages: m,
                        blocks: b,
                    });
                }
                seen += 1;
            }
        }
    }
    None
}

/// Applies a cut to a conversation.
pub fn apply_cut(conversation: &mut Vec<crate::model::Message>, cut: Cut) {
    conversation.truncate(cut.messages + 1);
    if let Some(last) = conversation.get_mut(cut.messages) {
        let mut blocks: Vec<ContentBlock> = last.content.iter().take(cut.blocks).cloned().collect();
        if blocks.is_empty() {
            conversation.truncate(cut.messages);
        } else {
            last.content = std::mem::take(&mut blocks).into();
        }
    }
}

impl Agent {
    /// Takes the conversation back to just before the user sent `prompt`
    /// (the `later_same`+1-th send of it from the end). Returns how many
    /// messages remain.
    pub async fn rewind(&mut self, prompt: &str, later_same: usize) -> Result<usize, RewindError> {
        let cut =
            find_prompt(&self.conversation, prompt, later_same).ok_or(RewindError::NotFound)?;
        self.write_log(RecordBody::Rewind {
            messages: cut.messages,
            blocks: cut.blocks,
        })
        .await
        .map_err(|LogFailure(e)| RewindError::Log(e))?;
        apply_cut(&mut self.conversation, cut);
        // What was counted and cached belonged to the longer conversation.
        self.counted = None;
        self.last_request = None;
        if self
            .cache_after
            .is_some_and(|i| i >= self.conversation.len())
        {
            self.cache_after = None;
        }
        let kept = self.conversation.len();
        self.events.emit(Event::Rewound {
            agent: self.id.clone(),
            prompt: prompt.to_string(),
            messages: kept,
        });
        let estimate = self.context_in_use();
        self.report_context(estimate, true);
        Ok(kept)
    }

    /// Talks to `model` (an id) from the next request on; its window and
    /// prices come from the model table. Children that inherit follow.
    pub fn set_model(&mut self, model: &str) {
        if model == self.client.config().model {
            return;
        }
        self.client = self.client.with_model(model);
        self.context = self.context.for_model(self.client.config().provider, model);
        // The new model has another tokenizer and cache: count afresh.
        self.counted = None;
        self.last_request = None;
        self.cache_after = None;
        self.events.emit(Event::ModelChanged {
            agent: self.id.clone(),
            model: model.to_string(),
        });
        let estimate = self.context_in_use();
        self.report_context(estimate, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Message;

    fn answer(text: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text { text: text.into() }].into(),
        }
    }

    fn convo() -> Vec<Message> {
        let mut first = Message::user_text("<system-reminder>x</system-reminder>");
        first
            .content
            .push(ContentBlock::Text { text: "one".into() });
        vec![
            first,
            answer("a1"),
            Message::user_text("two"),
            answer("a2"),
            Message::user_text("one"),
            answer("a3"),
        ]
    }

    #[test]
    fn the_cut_is_before_the_chosen_send_of_the_prompt() {
        let c = convo();
        assert_eq!(
            find_prompt(&c, "one", 0),
            Some(Cut {
                messages: 4,
                blocks: 0
            })
        );
        assert_eq!(
            find_prompt(&c, "one", 1),
            Some(Cut {
                messages: 0,
                blocks: 1
            })
        );
        assert_eq!(find_prompt(&c, "one", 2), None);
        assert_eq!(find_prompt(&c, "a1", 0), None, "only user text counts");
        let mut back = c.clone();
        apply_cut(
            &mut back,
            find_prompt(&c, "two", 0).unwrap_or_else(|| panic!("found")),
        );
        assert_eq!(back.len(), 2);
        // Text joined before the prompt in the same message stays.
        let mut back = c.clone();
        apply_cut(
            &mut back,
            find_prompt(&c, "one", 1).unwrap_or_else(|| panic!("found")),
        );
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].content.len(), 1);
    }
}
