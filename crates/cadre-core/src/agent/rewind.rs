//! Going back: the conversation returns to just before one of the user's
//! earlier messages (Esc twice in the TUI, `/rewind`), the files the file
//! tools changed since come back from the checkpoint taken before it, or
//! the conversation from there is summarised; and the model switched for
//! the next requests (`/model NAME`). Going back is logged, so `--resume`
//! rebuilds the same conversation.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{Agent, LogFailure};
use crate::checkpoints::{CheckpointError, CheckpointStore};
use crate::context::{apply_cut, find_prompt, summary_request_messages};
use crate::model::{ModelError, ModelRequest};
use crate::protocol::{Event, RewindAction};
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
    /// The files could not be restored.
    #[error("{0}")]
    Code(String),
    /// The summary could not be made.
    #[error("the summary request failed: {0}")]
    Summary(String),
}

/// What the summary of the conversation from a message on asks the model.
const SUMMARY_FOCUS: &str = "Summarise only the part of the conversation from the user's message quoted below to the end; what came before it stays as it is. Message:";

impl Agent {
    /// Takes the conversation back to just before the user sent `prompt`
    /// (the `later_same`+1-th send of it from the end). Returns how many
    /// messages remain.
    pub async fn rewind(&mut self, prompt: &str, later_same: usize) -> Result<usize, RewindError> {
        self.cut_back(prompt, later_same, RewindAction::Conversation)
            .await
    }

    /// Cuts the conversation back to before `prompt` and reports it as `action`.
    async fn cut_back(
        &mut self,
        prompt: &str,
        later_same: usize,
        action: RewindAction,
    ) -> Result<usize, RewindError> {
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
            action,
        });
        let estimate = self.context_in_use();
        self.report_context(estimate, true);
        Ok(kept)
    }

    /// The session's code checkpoints, when it keeps them.
    pub fn checkpoints(&self) -> Option<Arc<CheckpointStore>> {
        self.ctx.checkpoints.clone()
    }

    /// Goes back to before the user sent `prompt` (the `later_same`+1-th
    /// send from the end) as `action` says. A code restore that would
    /// overwrite files changed outside cadre reports
    /// `rewind_needs_confirmation` and changes nothing, unless `overwrite`.
    pub async fn rewind_as(
        &mut self,
        prompt: &str,
        later_same: usize,
        action: RewindAction,
        overwrite: bool,
        cancel: &CancellationToken,
    ) -> Result<(), RewindError> {
        let in_conversation = find_prompt(&self.conversation, prompt, later_same).is_some();
        if action != RewindAction::Code && !in_conversation {
            return Err(RewindError::NotFound);
        }
        let checkpoint = self
            .ctx
            .checkpoints
            .clone()
            .and_then(|store| store.find(prompt, later_same).map(|n| (store, n)));
        match action {
            RewindAction::Summarize => {
                return self.summarize_from(prompt, later_same, cancel).await;
            }
            RewindAction::Conversation => {
                self.cut_back(prompt, later_same, action).await?;
                if let Some((store, n)) = checkpoint {
                    store
                        .fold_into_previous(n)
                        .map_err(|e| RewindError::Code(e.to_string()))?;
                }
                return Ok(());
            }
            RewindAction::Both | RewindAction::Code => {}
        }
        let Some((store, number)) = checkpoint else {
            return Err(RewindError::Code(
                CheckpointError::NoCheckpointFor.to_string(),
            ));
        };
        match store.restore(number, overwrite) {
            Err(CheckpointError::ChangedOutside(files)) => {
                self.events.emit(Event::RewindNeedsConfirmation {
                    agent: self.id.clone(),
                    prompt: prompt.to_string(),
                    later_same,
                    action,
                    files: files.iter().map(|f| f.display().to_string()).collect(),
                });
                return Ok(());
            }
            Err(e) => return Err(RewindError::Code(e.to_string())),
            Ok(done) => {
                let shown = |v: &[std::path::PathBuf]| -> Vec<String> {
                    v.iter().map(|p| p.display().to_string()).collect()
                };
                self.events.emit(Event::CodeRestored {
                    agent: self.id.clone(),
                    prompt: prompt.to_string(),
                    restored: shown(&done.restored),
                    removed: shown(&done.removed),
                    skipped: done.skipped,
                    bash_commands: done.bash_commands,
                });
            }
        }
        if action == RewindAction::Both {
            self.cut_back(prompt, later_same, action).await?;
            store
                .forget_from(number)
                .map_err(|e| RewindError::Code(e.to_string()))?;
        }
        Ok(())
    }

    /// Replaces the conversation from `prompt` on with the model's summary
    /// of it; what came before stays. Logged as a cut and a user text, so a
    /// resume rebuilds the same.
    async fn summarize_from(
        &mut self,
        prompt: &str,
        later_same: usize,
        cancel: &CancellationToken,
    ) -> Result<(), RewindError> {
        let focus = format!("{SUMMARY_FOCUS}\n{prompt}");
        let req = ModelRequest {
            model: self.client.config().model.clone(),
            system: self.system.clone(),
            messages: summary_request_messages(&self.conversation, Some(&focus), None),
            tools: self.tool_specs(),
            max_tokens: self.client.max_tokens(),
            cache_after: self.cache_after,
            effort: None,
            web_search: self.tools.web_search(),
        };
        let mut on_delta = self.on_delta(false);
        let response = match self.client.stream(&req, &mut on_delta, cancel).await {
            Ok(r) => r,
            Err(ModelError::Cancelled) => {
                return Err(RewindError::Summary("interrupted by the user".into()));
            }
            Err(e) => return Err(RewindError::Summary(e.to_string())),
        };
        self.pay_for(response.usage);
        let summary = response.message.text();
        if summary.trim().is_empty() {
            return Err(RewindError::Summary(
                "the model answered without any text".into(),
            ));
        }
        self.cut_back(prompt, later_same, RewindAction::Summarize)
            .await?;
        let block = format!(
            "<rewind-summary>\nThe conversation from the user's message below on was summarised at the user's request; the summary replaces it.\nMessage: {prompt}\n\n{}\n</rewind-summary>",
            summary.trim()
        );
        self.log_user_text(block)
            .await
            .map_err(|LogFailure(e)| RewindError::Log(e))?;
        Ok(())
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
