//! The context an agent's conversation uses, and its compaction: the model is
//! asked for a summary, the conversation becomes the summary plus the most
//! recent messages, and the log gets a boundary (nothing before is deleted).

use thiserror::Error;
use tokio_util::sync::CancellationToken;

use super::{Agent, FORK_TAG};
use crate::context::{
    self, Cost, PreCompactInput, compacted_conversation, estimate_messages_tokens,
    estimate_text_tokens, summary_request_messages,
};
use crate::model::{Message, ModelError, ModelRequest, Usage};
use crate::protocol::{CompactTrigger, Event};
use crate::session::RecordBody;

/// Why a compaction did not happen; the conversation and log are as they were.
#[derive(Debug, Error)]
pub enum CompactError {
    /// Nothing to summarise yet.
    #[error("there is nothing to compact yet")]
    Empty,
    /// A `PreCompact` hook refused.
    #[error("a PreCompact hook stopped the compaction: {0}")]
    Blocked(String),
    /// The summary request failed.
    #[error("the summary request failed: {0}")]
    Model(ModelError),
    /// The model answered without a summary.
    #[error("the model answered the summary request without any text")]
    NoSummary,
    /// The user interrupted it.
    #[error("interrupted by the user")]
    Cancelled,
    /// The boundary could not be written to the log.
    #[error("{0}")]
    Log(String),
}

/// A finished compaction, for the turn's counts.
pub(super) struct Compacted {
    pub(super) usage: Usage,
    pub(super) cost: Option<Cost>,
}

impl Agent {
    /// Estimated tokens of the system prompt and the tool list (made once).
    fn fixed_tokens(&mut self) -> u64 {
        if let Some(t) = self.fixed_tokens {
            return t;
        }
        let tools = serde_json::to_string(&self.tool_specs()).map_or(0, |s| s.len());
        let t = estimate_text_tokens(&self.system) + (tools as u64).div_ceil(4);
        self.fixed_tokens = Some(t);
        t
    }

    /// Tokens the next request would hold: the provider's count from the last
    /// reply plus an estimate of the messages added since, or an estimate of
    /// it all before any reply.
    pub fn context_in_use(&mut self) -> u64 {
        match self.counted {
            Some((tokens, upto)) if upto <= self.conversation.len() => {
                tokens + estimate_messages_tokens(&self.conversation[upto..])
            }
            _ => self.fixed_tokens() + estimate_messages_tokens(&self.conversation),
        }
    }

    /// Records the provider's count after a reply and reports it.
    pub(super) fn count_reply(&mut self, usage: &Usage) {
        // A server that reports no usage (some local ones) is estimated instead.
        if usage.total() == 0 {
            self.counted = None;
            let estimate = self.context_in_use();
            self.report_context(estimate, true);
            return;
        }
        self.counted = Some((usage.total(), self.conversation.len()));
        self.report_context(usage.total(), false);
    }

    pub(super) fn report_context(&mut self, tokens: u64, estimated: bool) {
        self.events.emit(Event::ContextUsage {
            agent: self.id.clone(),
            tokens,
            window: self.context.profile.context_window,
            percent: self.context.percent(tokens),
            estimated,
        });
        // What `/context` shows: the session's own agent only.
        if self.id == crate::protocol::AgentId::MAIN && self.source == super::QuerySource::Main {
            let categories = self.context_categories(tokens);
            self.events.emit(Event::ContextBreakdown {
                agent: self.id.clone(),
                categories,
                tokens,
                window: self.context.profile.context_window,
                estimated,
            });
        }
    }

    /// What `tokens` in use are made of, by category (they add up to it).
    fn context_categories(&mut self, tokens: u64) -> Vec<crate::protocol::ContextCategory> {
        let fixed = self.fixed_tokens();
        let parts = match &self.fixed_parts {
            Some(parts) => parts.clone(),
            None => {
                let parts =
                    super::breakdown::fixed_categories(&self.system, &self.tool_specs(), fixed);
                self.fixed_parts = Some(parts.clone());
                parts
            }
        };
        let rest = super::breakdown::message_categories(&self.conversation, &parts, tokens);
        parts.into_iter().chain(rest).collect()
    }

    /// True when the context in use has reached the automatic threshold.
    pub(super) fn wants_compaction(&mut self) -> bool {
        self.context.auto_compact_percent < 100
            && self.conversation.len() >= 2
            && self.context_in_use() >= self.context.threshold_tokens()
    }

    /// The cost of `usage` at this agent's model's prices, when known.
    pub(super) fn price(&self, usage: &Usage) -> Option<Cost> {
        self.context.profile.prices.map(|p| p.cost(usage))
    }

    /// Counts a request's `usage` and its cost against this agent (and the
    /// run's budget), tells the front ends, and returns the cost.
    pub(super) fn pay_for(&mut self, usage: Usage) -> Option<Cost> {
        self.usage.add(&usage);
        let cost = self.price(&usage);
        if let Some(c) = cost {
            self.client.record_spend(c.0);
            self.cost.add(c);
        }
        self.events.emit(Event::Usage {
            agent: self.id.clone(),
            usage,
            cost_usd: cost.map(|c| c.usd()),
        });
        cost
    }

    /// Compacts the conversation now (`/compact [focus]`); see [`CompactError`]
    /// for why it may not.
    pub async fn compact(
        &mut self,
        focus: Option<String>,
        cancel: &CancellationToken,
    ) -> Result<(), CompactError> {
        self.compact_for(CompactTrigger::Manual, focus, cancel)
            .await
            .map(|_| ())
    }

    /// Summarises the conversation and replaces it with the summary and the
    /// most recent messages, logging a boundary. On any failure the
    /// conversation and the log are untouched.
    pub(super) async fn compact_for(
        &mut self,
        trigger: CompactTrigger,
        focus: Option<String>,
        cancel: &CancellationToken,
    ) -> Result<Compacted, CompactError> {
        let tokens_before = self.context_in_use();
        self.events.emit(Event::CompactionStarted {
            agent: self.id.clone(),
            trigger,
            tokens_before,
        });
        let result = if self.conversation.is_empty() {
            Err(CompactError::Empty)
        } else {
            self.summarise_and_replace(trigger, focus, tokens_before, cancel)
                .await
        };
        match &result {
            Ok((done, kept)) => {
                let tokens_after = self.context_in_use();
                self.events.emit(Event::CompactionEnded {
                    agent: self.id.clone(),
                    trigger,
                    tokens_before,
                    tokens_after,
                    kept_messages: *kept,
                    error: None,
                    cost_usd: done.cost.map(|c| c.usd()),
                });
                self.report_context(tokens_after, true);
            }
            Err(e) => self.events.emit(Event::CompactionEnded {
                agent: self.id.clone(),
                trigger,
                tokens_before,
                tokens_after: tokens_before,
                kept_messages: 0,
                error: Some(e.to_string()),
                cost_usd: None,
            }),
        }
        result.map(|(done, _)| done)
    }

    async fn summarise_and_replace(
        &mut self,
        trigger: CompactTrigger,
        focus: Option<String>,
        tokens_before: u64,
        cancel: &CancellationToken,
    ) -> Result<(Compacted, usize), CompactError> {
        let mut extra = None;
        if let Some(hook) = self.context.pre_compact.clone() {
            let decision = hook
                .pre_compact(PreCompactInput {
                    agent_id: self.id.to_string(),
                    trigger,
                    custom_instructions: focus.clone(),
                })
                .await;
            if let Some(reason) = decision.block {
                return Err(CompactError::Blocked(reason));
            }
            extra = decision.extra_instructions;
        }
        let trigger_name = if trigger == CompactTrigger::Manual {
            "manual"
        } else {
            "auto"
        };
        let hook_input = serde_json::Map::from_iter([
            ("trigger".to_string(), serde_json::json!(trigger_name)),
            (
                "custom_instructions".to_string(),
                serde_json::json!(focus.clone().unwrap_or_default()),
            ),
        ]);
        if let Some(out) = self
            .fire(
                crate::hooks::HookEvent::PreCompact,
                Some(trigger_name),
                hook_input,
                cancel,
            )
            .await
            && let Some(reason) = out.stop.or(out.block)
        {
            return Err(CompactError::Blocked(reason));
        }
        // A conversation the provider refused as too long, or one that with
        // the instructions and room for the summary would not fit, is
        // summarised from its first message and its most recent part;
        // otherwise it is sent whole (the request then reads the prompt
        // cache), and trimmed only if that is refused.
        let window = self.context.profile.context_window;
        let reserve = u64::from(self.client.max_tokens()).min(window / 10);
        let would_fit =
            tokens_before + estimate_text_tokens(context::COMPACTION_INSTRUCTIONS) + reserve
                <= window;
        let mut trimmed = trigger == CompactTrigger::LengthError || !would_fit;
        // Refused again, the trimmed request is cut to half as much, a few times.
        let mut share = 2;
        let (response, usage) = loop {
            let source = if trimmed {
                self.trimmed_for_summary(self.context.profile.context_window / share)
            } else {
                self.conversation.clone()
            };
            let req = ModelRequest {
                model: self.client.config().model.clone(),
                system: self.system.clone(),
                messages: summary_request_messages(
                    &self.sendable(&source, &self.client.config().model),
                    focus.as_deref(),
                    extra.as_deref(),
                ),
                tools: self.tool_specs(),
                max_tokens: self.client.max_tokens(),
                cache_after: if trimmed { None } else { self.cache_after },
                // A summary needs no extra thinking.
                effort: None,
                web_search: self.tools.web_search(),
            };
            // The summary is not the agent's answer: its text is not shown.
            let mut on_delta = self.on_delta(false);
            match self.client.stream(&req, &mut on_delta, cancel).await {
                Ok(r) => {
                    let usage = r.usage;
                    break (r, usage);
                }
                Err(ModelError::Cancelled) => return Err(CompactError::Cancelled),
                Err(e) if context::is_context_length_error(&e) && share <= 16 => {
                    self.learn_window(&e);
                    if trimmed {
                        share *= 2;
                    }
                    trimmed = true;
                }
                Err(e) => return Err(CompactError::Model(e)),
            }
        };
        // The summary request is paid for whether or not a summary came back.
        let cost = self.pay_for(usage);
        let summary = response.message.text();
        if summary.trim().is_empty() {
            return Err(CompactError::NoSummary);
        }
        // A summary longer than a quarter of the window would leave little
        // room for the work it is meant to make room for.
        let mut summary =
            context::cut_to_tokens(&summary, self.context.profile.context_window / 4).into_owned();
        // A fork stays recognisable after its directive is summarised away
        // (and after a resume, which rebuilds from this summary).
        if self.is_fork() {
            summary.push_str(&format!(
                "\n\n(This agent is a fork {FORK_TAG}: it does its directive itself and cannot start subagents.)"
            ));
        }
        // The newest messages are kept verbatim, each part cut to half the
        // budget: one large result then stays, cut, instead of crowding out
        // everything after the summary.
        let keep = self.context.keep_recent_tokens();
        let kept = context::recent_cut_to(&self.conversation, keep, keep / 2);
        let conversation = compacted_conversation(&summary, &kept);
        let fixed = self.fixed_tokens();
        let tokens_after = fixed + estimate_messages_tokens(&conversation);
        if let Some(log) = &self.log {
            log.append(RecordBody::CompactBoundary {
                trigger,
                summary: summary.clone(),
                kept: kept.clone(),
                tokens_before,
                tokens_after,
                usage: Some(usage),
                cost_nanodollars: cost.map(|c| c.0),
            })
            .await
            .map_err(|e| CompactError::Log(e.to_string()))?;
        }
        self.conversation = conversation;
        self.counted = Some((tokens_after, self.conversation.len()));
        // The inherited prefix a fork's breakpoint marked is gone.
        self.cache_after = None;
        self.last_request = None;
        self.compactions += 1;
        Ok((Compacted { usage, cost }, kept.len()))
    }

    /// Learns from a length error that the window is smaller than assumed:
    /// the size the error states, or else three quarters of the refused
    /// request (a local server's context is often far below the default).
    pub(super) fn learn_window(&mut self, e: &ModelError) {
        let refused = self.context_in_use();
        let learned = context::window_from_length_error(e)
            .unwrap_or(refused * 3 / 4)
            .max(1024);
        if learned >= self.context.profile.context_window {
            return;
        }
        self.events.emit(Event::Warning {
            message: format!(
                "the model server refused a request of about {refused} tokens as too long; cadre now assumes a context window of {learned} tokens for {} (set `context_window` in `[models.{}.\"{}\"]` to say it)",
                self.client.config().model,
                self.client.config().provider,
                self.client.config().model,
            ),
        });
        self.context.profile.context_window = learned;
    }

    /// The conversation cut for a summary request that must fit: the first
    /// message (the task), cut to a tenth of the window, then the most recent
    /// messages that fit `budget` tokens.
    fn trimmed_for_summary(&self, budget: u64) -> Vec<Message> {
        let window = self.context.profile.context_window;
        let Some(first) = self.conversation.first() else {
            return Vec::new();
        };
        let task = context::cut_to_tokens(&first.text(), window / 10).into_owned();
        let mut out = vec![Message::user_text(format!(
            "{task}\n\n[cadre: messages between this one and the next were dropped from this summary request; they did not fit]"
        ))];
        // Each part is cut to a quarter of the budget, so the newest results
        // (often what made the request too long) still reach the summary.
        for m in &context::recent_cut_to(&self.conversation, budget, budget / 4) {
            context::push_alternating(&mut out, m);
        }
        out
    }
}
