//! Going back: the conversation returns to just before one of the user's
//! earlier messages (Esc twice in the TUI), and the model switched for the
//! next requests (`/model NAME`). Going back is logged, so `--resume`
//! rebuilds the same conversation; files the turns changed are not changed back.

use super::{Agent, LogFailure};
use crate::context::{apply_cut, find_prompt};
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
