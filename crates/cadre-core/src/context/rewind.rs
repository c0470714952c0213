//! Going back in a conversation: where the user's earlier message was sent,
//! and the conversation cut to just before it. The live agent and a rebuild
//! from the log cut with the same functions, so both arrive at the same messages.

use crate::model::{ContentBlock, Message, Role};

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
pub fn find_prompt(conversation: &[Message], prompt: &str, later_same: usize) -> Option<Cut> {
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
pub fn apply_cut(conversation: &mut Vec<Message>, cut: Cut) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
