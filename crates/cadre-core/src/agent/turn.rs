//! The turn: notices and messages joined to the next request, the request
//! streamed, the reply recorded, its tool calls run, until the model answers
//! without tools or a limit stops it.

use super::compact::{CompactError, Compacted};
use super::repeats::{RepeatedFailures, Repeats};
use super::{Agent, LogFailure, TurnOutcome, UNREAD_REMINDER_EVERY};
use crate::context::{self, CONTINUE_AFTER_CUT};
use crate::mcp::is_mcp_tool;
use crate::model::{
    ContentBlock, Message, ModelError, ModelRequest, Role, StopReason, StreamDelta,
};
use crate::protocol::{CompactTrigger, Event, TurnStatus};
use crate::session::RecordBody;
use crate::tools::ROSTER_HEADER;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

impl Agent {
    /// Brings this agent's MCP tools up to date before a request: waits
    /// (until `cancel`) for servers still starting, each within its start-up
    /// timeout, lists again the tools of servers that said theirs changed,
    /// and takes the ready servers' tools in place of the old ones. `Err`:
    /// cancelled while waiting.
    async fn follow_mcp_tools(&mut self, cancel: &CancellationToken) -> Result<(), ()> {
        let Some(hub) = self.mcp.clone() else {
            return Ok(());
        };
        tokio::select! {
            () = async { hub.settled().await; hub.refresh().await } => {}
            () = cancel.cancelled() => return Err(()),
        }
        // The servers' instructions join the system prompt once, before its
        // first request (every server is ready or failed by then): it stays
        // the same bytes afterwards, so the prompt cache holds.
        if self.mcp_seen.is_none()
            && let Some(section) = super::prompt::mcp_instructions_section(&hub.instructions())
        {
            // Before the output style's text, which stays last.
            let at = self.system.len() - self.style_tail;
            self.system.insert_str(at, &format!("\n\n{section}"));
        }
        let now = hub.generation();
        if self.mcp_seen == Some(now) {
            return Ok(());
        }
        self.mcp_seen = Some(now);
        self.tools.retain(|t| !is_mcp_tool(t.name()));
        for tool in hub.tools() {
            if self.mcp_keep.as_ref().is_none_or(|keep| keep(tool.name())) {
                self.tools.insert(tool);
            }
        }
        // The tool list is part of the fixed cost of every request.
        self.fixed_tokens = None;
        self.fixed_parts = None;
        Ok(())
    }

    /// Tells the model of agent types added, changed or removed since the
    /// roster it last saw (a definition written mid-session, say): the
    /// current roster joins the next request.
    async fn refresh_roster(&mut self) -> Result<(), LogFailure> {
        if self.tools.get("Agent").is_none() {
            return Ok(());
        }
        let Some(now) = self.ctx.delegation.as_ref().and_then(|d| d.roster()) else {
            return Ok(());
        };
        let told = self.conversation.iter().rev().find_map(|m| {
            (m.role == Role::User)
                .then(|| {
                    m.content.iter().rev().find_map(|b| match b {
                        ContentBlock::Text { text } if is_roster(text) => Some(text.clone()),
                        _ => None,
                    })
                })
                .flatten()
        });
        // No roster in the conversation (a compaction summarised it away):
        // it goes in again as it is.
        let text = match told {
            None => now,
            Some(told) if roster_entries(&told) == roster_entries(&now) => return Ok(()),
            Some(_) => now.replacen(ROSTER_HEADER, ROSTER_CHANGED_HEADER, 1),
        };
        self.log_user_text(text).await?;
        Ok(())
    }

    /// Puts other tools' first reminders (the skills there are) back when
    /// the conversation no longer holds them (a compaction summarised them
    /// away). The roster of agent types has its own refresh, above.
    async fn restore_tool_reminders(&mut self) -> Result<(), LogFailure> {
        let missing: Vec<String> = self
            .tools
            .tools()
            .iter()
            .filter(|t| t.name() != "Agent")
            .filter_map(|t| t.first_reminder(&self.ctx))
            .filter(|text| !self.holds_user_text(text))
            .collect();
        for text in missing {
            self.log_user_text(text).await?;
        }
        Ok(())
    }

    /// Whether a user message of the conversation holds exactly `text`.
    fn holds_user_text(&self, text: &str) -> bool {
        self.conversation.iter().any(|m| {
            m.role == Role::User
                && m.content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::Text { text: t } if t == text))
        })
    }

    /// Joins finished background tasks' notice to the next request.
    pub(super) async fn deliver_notices(&mut self) -> Result<(), LogFailure> {
        self.refresh_roster().await?;
        self.restore_tool_reminders().await?;
        let mut messages = Vec::new();
        if let Some(inbox) = &mut self.inbox {
            while let Ok(m) = inbox.try_recv() {
                messages.push(m);
            }
        }
        for m in messages {
            let text = format!("<message from=\"parent\">\n{m}\n</message>");
            self.log_user_text(text).await?;
        }
        self.deliver_team_mail().await?;
        let Some(work) = self.ctx.background.clone() else {
            return Ok(());
        };
        // Every so many replies, tasks whose long output was never read are
        // pointed out again, so a finished result is not silently forgotten.
        self.replies_since_reminder += 1;
        if self.replies_since_reminder >= UNREAD_REMINDER_EVERY {
            self.replies_since_reminder = 0;
            let unread = work.unread_of(&self.id);
            // Only an agent that can read them is pointed to them.
            if !unread.is_empty() && self.tools.get("TaskOutput").is_some() {
                let text = format!(
                    "<system-reminder>Finished background tasks whose output you have not read yet: {}. Read them with TaskOutput if they matter to the task.</system-reminder>",
                    unread.join(", ")
                );
                self.log_user_text(text).await?;
            }
        }
        let items = work.take_unmarked(&self.id);
        if items.is_empty() {
            return Ok(());
        }
        let text = crate::background::notification_text(&items);
        self.events.emit(Event::TasksNotified {
            agent: self.id.clone(),
            task_ids: items.iter().map(|f| f.task_id.clone()).collect(),
        });
        self.write_log(RecordBody::User { text: text.clone() })
            .await?;
        // Only once the notice is logged: a crash before this re-announces
        // after a resume instead of losing the notice.
        let ids: Vec<String> = items.iter().map(|f| f.task_id.clone()).collect();
        work.mark_announced(&ids).await;
        self.push_user_text(text);
        Ok(())
    }

    /// Joins the team messages waiting for this agent to the next request,
    /// as one user turn. Marked delivered only once logged; a message the
    /// log already holds (a crash came between the two) is not given again.
    async fn deliver_team_mail(&mut self) -> Result<(), LogFailure> {
        let Some(seat) = self.ctx.team.clone() else {
            return Ok(());
        };
        if !seat.team.has_mail(&seat.name) {
            return Ok(());
        }
        let mails = seat.team.waiting_for(&seat.name).await;
        let new: Vec<crate::tasks::TeamMail> = mails
            .iter()
            .filter(|m| {
                let text = crate::teams::render_mail(m);
                // The user's words are plain text: only a whole block of
                // them counts, not the same words inside another message.
                if m.sender == crate::teams::USER_SENDER {
                    !self.holds_user_text(&text)
                } else {
                    !self.holds_user_text_part(&text)
                }
            })
            .cloned()
            .collect();
        let (from_user, from_agents): (Vec<_>, Vec<_>) = new
            .into_iter()
            .partition(|m| m.sender == crate::teams::USER_SENDER);
        if !from_agents.is_empty() {
            self.log_user_text(crate::teams::render_batch(&from_agents))
                .await?;
        }
        // The user's words, each a text of its own.
        for m in from_user {
            self.log_user_text(m.body).await?;
        }
        seat.team.delivered(&seat.name, &mails).await;
        Ok(())
    }

    /// Whether a user message of the conversation holds `part` in a text.
    fn holds_user_text_part(&self, part: &str) -> bool {
        self.conversation.iter().any(|m| {
            m.role == Role::User
                && m.content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::Text { text } if text.contains(part)))
        })
    }

    /// Logs user text, then adds it to the conversation.
    pub(super) async fn log_user_text(&mut self, text: String) -> Result<(), LogFailure> {
        self.write_log(RecordBody::User { text: text.clone() })
            .await?;
        self.push_user_text(text);
        Ok(())
    }

    /// `messages` as sent to `model`: as they are, or with a note in place
    /// of each image for a model configured to take none.
    pub(super) fn sendable(&self, messages: &[Message], model: &str) -> Vec<Message> {
        if self.context.profile.images {
            return messages.to_vec();
        }
        messages
            .iter()
            .map(|m| {
                if m.has_images() {
                    m.without_images(model)
                } else {
                    m.clone()
                }
            })
            .collect()
    }

    /// Adds user text: a new message, or joined to a pending user message (after
    /// an interrupted request) so roles keep alternating.
    pub(super) fn push_user_text(&mut self, text: String) {
        self.push_user_block(ContentBlock::Text { text });
    }

    /// Adds a block to the user message at the end of the conversation (a
    /// new one when the last message is the model's).
    pub(super) fn push_user_block(&mut self, block: ContentBlock) {
        if let Some(last) = self.conversation.last_mut()
            && last.role == Role::User
        {
            last.content.push(block);
            return;
        }
        self.conversation.push(Message {
            role: Role::User,
            content: vec![block].into(),
        });
    }

    /// Runs one turn for `user_text` until the model answers without tools, a
    /// limit or error stops it, or `cancel` fires. An empty `user_text` runs a
    /// turn on the waiting task notices alone.
    pub async fn run_turn(&mut self, user_text: String, cancel: CancellationToken) -> TurnOutcome {
        let mut logged = Ok(());
        let unawaited = std::mem::take(&mut self.opening_unawaited);
        let user_text_was_empty = user_text.is_empty();
        if let Some(delegation) = &self.ctx.delegation {
            delegation.turn_started();
        }
        // A skill's `allowed-tools` hold for the turn that loaded it only.
        self.ctx.grants.clear();
        for tool in self.tools.tools() {
            tool.user_message(&self.ctx, &user_text);
        }
        // Tools' reminders (the roster of agent types) go in once, before the
        // first message, so the tool list stays the same whatever exists.
        if self.conversation.is_empty() {
            let reminders: Vec<String> = self
                .tools
                .tools()
                .iter()
                .filter_map(|t| t.first_reminder(&self.ctx))
                .collect();
            for text in reminders {
                if logged.is_ok() {
                    logged = self
                        .log_opening(RecordBody::User { text: text.clone() }, unawaited)
                        .await;
                }
                self.push_user_text(text);
            }
        }
        // Hooks' context: a child's SubagentStart, the session's SessionStart;
        // a user's prompt passes UserPromptSubmit first.
        let mut before = if self.conversation.is_empty() {
            self.subagent_start(&cancel).await
        } else {
            Vec::new()
        };
        before.extend(self.take_pending_context());
        let after = match self.user_prompt_submit(&user_text, &cancel).await {
            Ok(context) => Some(context),
            Err(reason) => {
                self.events.emit(Event::Warning {
                    message: format!("a UserPromptSubmit hook blocked the prompt: {reason}"),
                });
                None
            }
        };
        // A message that starts with `/name` brings the skill's text; one
        // whose use fails (a command refused or failing) is not sent.
        let expansion = match &after {
            Some(_) => self.expand_message(&user_text, &cancel).await,
            None => Ok((Vec::new(), Vec::new())),
        };
        let attached = self.take_attached_images().await;
        for text in before {
            if logged.is_ok() {
                logged = self
                    .log_opening(RecordBody::User { text: text.clone() }, unawaited)
                    .await;
            }
            self.push_user_text(text);
        }
        // An empty text continues the conversation with whatever notices wait.
        // A message too long for the window alone is cut before it is sent.
        let user_text =
            context::cut_to_tokens(&user_text, self.context.single_input_tokens()).into_owned();
        if !user_text.is_empty() && after.is_some() && expansion.is_ok() {
            if logged.is_ok() {
                logged = self
                    .log_opening(
                        RecordBody::User {
                            text: user_text.clone(),
                        },
                        unawaited,
                    )
                    .await;
            }
            self.push_user_text(user_text);
            let (texts, images) = match &expansion {
                Ok((texts, images)) => (texts.as_slice(), images.as_slice()),
                Err(_) => (&[][..], &[][..]),
            };
            for text in texts {
                if logged.is_ok() {
                    logged = self
                        .log_opening(RecordBody::User { text: text.clone() }, unawaited)
                        .await;
                }
                self.push_user_text(text.clone());
            }
            // Images after the text: pasted ones, then mentioned ones.
            for image in attached.iter().chain(images) {
                if logged.is_ok() {
                    logged = self
                        .log_opening(
                            RecordBody::UserImage {
                                image: image.clone(),
                            },
                            unawaited,
                        )
                        .await;
                }
                self.push_user_block(ContentBlock::Image(image.clone()));
            }
        }
        for text in after.iter().flatten().filter(|_| expansion.is_ok()) {
            if logged.is_ok() {
                logged = self
                    .log_opening(RecordBody::User { text: text.clone() }, unawaited)
                    .await;
            }
            self.push_user_text(text.clone());
        }
        self.events.emit(Event::TurnStarted {
            agent: self.id.clone(),
            notices: user_text_was_empty,
        });
        let mut outcome = match logged {
            // The blocked prompt was never added: nothing to send.
            Ok(()) if after.is_none() => TurnOutcome {
                error: Some("the prompt was blocked by a UserPromptSubmit hook".into()),
                ..TurnOutcome::empty(TurnStatus::Failed)
            },
            Ok(()) if expansion.is_err() => TurnOutcome {
                error: expansion.clone().err(),
                ..TurnOutcome::empty(TurnStatus::Failed)
            },
            Ok(()) => self.turn_loop(&cancel).await,
            Err(LogFailure(e)) => TurnOutcome {
                error: Some(e.clone()),
                log_error: Some(e),
                ..TurnOutcome::empty(TurnStatus::Failed)
            },
        };
        let status = serde_json::to_value(outcome.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        // The children it started have their ends filed before it ends.
        if let Some(delegation) = &self.ctx.delegation {
            delegation.turn_ending().await;
        }
        // A turn that did not complete says why in the log too.
        let reason = outcome.error.clone();
        if let Err(LogFailure(e)) = self.write_log(RecordBody::TurnEnd { status, reason }).await
            && outcome.error.is_none()
        {
            outcome.status = TurnStatus::Failed;
            outcome.error = Some(e.clone());
            outcome.log_error = Some(e);
        }
        self.events.emit(Event::TurnEnded {
            agent: self.id.clone(),
            status: outcome.status,
            final_text: outcome.final_text.clone(),
            error: outcome.error.clone(),
            requests: outcome.requests,
            tool_calls: outcome.tool_calls,
            usage: outcome.usage,
            cost_usd: outcome.cost.map(|c| c.usd()),
        });
        outcome
    }

    /// What a request's stream deltas become: text deltas (when `show_text`),
    /// and retries, reported and logged.
    pub(super) fn on_delta(&self, show_text: bool) -> impl FnMut(StreamDelta) + Send + 'static {
        let events = self.events.clone();
        let agent = self.id.clone();
        let log = self.log.clone();
        move |d: StreamDelta| match d {
            StreamDelta::Text(text) if show_text => events.emit(Event::TextDelta {
                agent: agent.clone(),
                text,
            }),
            StreamDelta::Retrying {
                attempt,
                status,
                wait_ms,
                reason,
                discarded_text,
            } => {
                // A diagnostic record: failing to write it must not fail the request.
                if let Some(log) = &log {
                    log.queue(RecordBody::Retry {
                        attempt,
                        reason: reason.clone(),
                        discarded_text,
                    });
                }
                events.emit(Event::Retrying {
                    agent: agent.clone(),
                    attempt,
                    status,
                    wait_ms,
                    reason,
                    discarded_text,
                })
            }
            StreamDelta::Text(_) | StreamDelta::ToolCallStarted { .. } => {}
        }
    }

    /// Adds a compaction's request to the turn's counts.
    fn count_compaction(&self, out: &mut TurnOutcome, done: &Compacted) {
        out.usage.add(&done.usage);
        out.compactions += 1;
        if let Some(c) = done.cost {
            out.cost.get_or_insert_default().add(c);
        }
    }

    /// Compacts within a turn. `Err` holds the outcome that ends the turn.
    async fn compact_in_turn(
        &mut self,
        trigger: CompactTrigger,
        out: &mut TurnOutcome,
        cancel: &CancellationToken,
        cause: Option<&ModelError>,
    ) -> Result<(), ()> {
        match self.compact_for(trigger, None, cancel).await {
            Ok(done) => {
                self.count_compaction(out, &done);
                Ok(())
            }
            // A hook may refuse an automatic compaction: the turn goes on
            // (a request the provider then refuses ends it with that error).
            Err(CompactError::Blocked(_)) if trigger == CompactTrigger::Auto => Ok(()),
            Err(CompactError::Cancelled) => {
                out.status = TurnStatus::Interrupted;
                out.error = Some("interrupted by the user".into());
                Err(())
            }
            Err(e) => {
                out.status = TurnStatus::Failed;
                out.error = Some(match cause {
                    Some(cause) => format!(
                        "the model refused the request as too long for its context window ({cause}), and compacting the conversation failed: {e}; the conversation and its log are unchanged"
                    ),
                    None => format!(
                        "the conversation reached {}% of the model's context window and compacting it failed: {e}; the conversation and its log are unchanged",
                        self.context.auto_compact_percent
                    ),
                });
                if let CompactError::Log(e) = &e {
                    out.log_error = Some(e.clone());
                }
                Err(())
            }
        }
    }

    pub(super) async fn turn_loop(&mut self, cancel: &CancellationToken) -> TurnOutcome {
        let mut out = TurnOutcome::empty(TurnStatus::Completed);
        // At most one automatic compaction, and one retry after a length
        // error, between two replies: a conversation that still does not fit
        // fails instead of looping.
        let mut compacted_since_reply = false;
        let mut length_retried = false;
        // Times a Stop hook kept this turn going (a cap, so two hooks that
        // disagree cannot loop forever).
        let mut stop_blocks = 0;
        // Replies sent back for not matching the answer schema.
        let mut answer_retries = 0u32;
        // Times the provider paused its own tool loop this turn.
        let mut pauses = 0u32;
        // The same call failing the same way, reply after reply.
        let mut repeated = RepeatedFailures::default();
        // The last reply was a call written as text that could not be read,
        // and the model was told: the next such reply is taken as it is.
        let mut text_call_corrected = false;
        loop {
            if out.requests >= self.limits.max_requests {
                out.status = TurnStatus::LimitReached;
                out.error = Some(format!(
                    "the turn reached its limit of {} model requests; stopped to avoid a runaway loop",
                    self.limits.max_requests
                ));
                return out;
            }
            self.apply_mode_switch();
            if let Err(LogFailure(e)) = self.deliver_notices().await {
                return out.failed_on_log(e);
            }
            if !compacted_since_reply
                && self.wants_compaction()
                && self
                    .compact_in_turn(CompactTrigger::Auto, &mut out, cancel, None)
                    .await
                    .is_err()
            {
                return out;
            }
            if self.follow_mcp_tools(cancel).await.is_err() {
                out.status = TurnStatus::Interrupted;
                out.error = Some("interrupted by the user".into());
                return out;
            }
            if let Some(cap) = self.client.budget_exhausted() {
                out.status = TurnStatus::LimitReached;
                out.error = Some(format!(
                    "{} (${cap:.2}); stopped before the next model request",
                    crate::model::BUDGET_EXHAUSTED
                ));
                return out;
            }
            out.requests += 1;
            self.events.emit(Event::RequestStarted {
                agent: self.id.clone(),
                request: out.requests,
            });
            // An active skill's `model` holds for the rest of the turn.
            let client = match self.ctx.grants.model() {
                Some(m) if m != self.client.config().model => self.client.with_model(&m),
                _ => self.client.clone(),
            };
            let messages = self.sendable(&self.conversation, &client.config().model);
            let req = ModelRequest {
                model: client.config().model.clone(),
                system: self.system.clone(),
                messages,
                tools: self.tool_specs(),
                max_tokens: client.max_tokens(),
                cache_after: self.cache_after,
                effort: self.effort.clone(),
                web_search: self.tools.web_search(),
            };
            let mut on_delta = self.on_delta(true);
            let mut resp = match client.stream(&req, &mut on_delta, cancel).await {
                Ok(r) => r,
                Err(ModelError::Cancelled) => {
                    out.status = TurnStatus::Interrupted;
                    out.error = Some("interrupted by the user".into());
                    return out;
                }
                Err(e) if context::is_context_length_error(&e) => {
                    if length_retried {
                        out.status = TurnStatus::Failed;
                        out.error = Some(format!(
                            "the conversation does not fit in the model's context window even after compacting it: {e}"
                        ));
                        out.model_error = Some(e);
                        return out;
                    }
                    length_retried = true;
                    compacted_since_reply = true;
                    self.learn_window(&e);
                    if self
                        .compact_in_turn(CompactTrigger::LengthError, &mut out, cancel, Some(&e))
                        .await
                        .is_err()
                    {
                        out.model_error = Some(e);
                        return out;
                    }
                    continue;
                }
                Err(e) => {
                    // An overloaded or unknown model hands over to the next fallback.
                    if let Some(next) = self.client.fallback_after(&e)
                        && !cancel.is_cancelled()
                    {
                        self.events.emit(Event::Warning {
                            message: format!(
                                "{}: {e}; falling back to {next}",
                                self.client.config().model
                            ),
                        });
                        self.client = self.client.with_model(&next);
                        self.events.emit(Event::ModelChanged {
                            agent: self.id.clone(),
                            model: next,
                        });
                        continue;
                    }
                    out.status = TurnStatus::Failed;
                    out.error = Some(e.to_string());
                    out.model_error = Some(e);
                    return out;
                }
            };
            drop(on_delta);
            crate::model::unique_call_ids(&mut resp.message, &self.conversation);
            self.last_request = Some(Arc::new(req));
            compacted_since_reply = false;
            length_retried = false;
            out.usage.add(&resp.usage);
            let cost = self.pay_for(resp.usage);
            if let Some(c) = cost {
                out.cost.get_or_insert_default().add(c);
            }
            let calls = resp.message.tool_calls();
            let text = resp.message.text();
            self.events.emit(Event::AssistantMessage {
                agent: self.id.clone(),
                text: text.clone(),
                tool_calls: calls.len(),
            });
            for run in crate::model::server_tool_runs(&resp.message) {
                self.events.emit(Event::ServerToolUsed {
                    agent: self.id.clone(),
                    call_id: run.id,
                    tool: server_tool_name(&run.name),
                    query: run.query.unwrap_or_default(),
                    results: run.results,
                    error: run.error,
                });
            }
            if !text.is_empty() {
                out.final_text = text;
            }
            // Not waited for: its calls' `ToolStart`, awaited before any of
            // them runs, lands after it (or the turn's end does).
            let logged = self.write_log_unawaited(RecordBody::Assistant {
                message: resp.message.clone(),
                usage: Some(resp.usage),
                cost_nanodollars: cost.map(|c| c.0),
            });
            if self.events.wants_transcripts() {
                self.events.emit(Event::Message {
                    agent: self.id.clone(),
                    message: resp.message.clone(),
                    model: Some(client.config().model.clone()),
                    stop_reason: Some(stop_name(&resp.stop_reason)),
                    usage: Some(resp.usage),
                });
            }
            self.conversation.push(resp.message);
            self.count_reply(&resp.usage);
            if let Err(LogFailure(e)) = logged {
                return out.failed_on_log(e);
            }
            if calls.is_empty() {
                // A call written as text that cannot be read goes back once
                // with what is wrong, rather than ending the turn as an answer.
                if let Some(problem) = resp.text_call_problem.take()
                    && !text_call_corrected
                    && !cancel.is_cancelled()
                {
                    text_call_corrected = true;
                    self.events.emit(Event::Warning {
                        message: format!(
                            "{}: the reply looks like a tool call that cannot be read ({problem}); asking the model to write it again",
                            client.config().model
                        ),
                    });
                    let text = format!(
                        "Your reply looks like a tool call, but it could not be read: {problem}. To call a tool, write the call again exactly in the format the instructions show, with valid JSON. To answer instead, reply in plain text."
                    );
                    if let Err(LogFailure(e)) = self.log_user_text(text).await {
                        return out.failed_on_log(e);
                    }
                    continue;
                }
                // The provider paused its own tool loop (a long server-side
                // search): the reply goes back as it is, and it goes on.
                if matches!(&resp.stop_reason, StopReason::Other(r) if r == "pause_turn")
                    && pauses < MAX_PAUSES
                    && !cancel.is_cancelled()
                {
                    pauses += 1;
                    continue;
                }
                // A reply the context limit cut off is continued after a
                // compaction, not lost.
                let cut_by_context = match &resp.stop_reason {
                    StopReason::MaxTokens => self.wants_compaction(),
                    StopReason::Other(r) => r.contains("context"),
                    _ => false,
                };
                if !cut_by_context {
                    if stop_blocks >= super::hooks::MAX_STOP_BLOCKS || cancel.is_cancelled() {
                        return out;
                    }
                    let Some(reason) = self
                        .stop_hook(&out.final_text, stop_blocks > 0, cancel)
                        .await
                    else {
                        // A structured answer that does not validate goes back
                        // with what is wrong, a bounded number of times.
                        let Some(schema) = self.answer_schema.clone() else {
                            return out;
                        };
                        let Err(problem) = schema.check(&out.final_text) else {
                            return out;
                        };
                        if answer_retries >= crate::structured::MAX_RETRIES {
                            out.status = TurnStatus::Failed;
                            out.error = Some(format!(
                                "{} after {} tries: {problem}",
                                crate::structured::RETRIES_EXHAUSTED,
                                answer_retries + 1
                            ));
                            return out;
                        }
                        answer_retries += 1;
                        let text = schema.retry_message(&problem);
                        if let Err(LogFailure(e)) = self.log_user_text(text).await {
                            return out.failed_on_log(e);
                        }
                        continue;
                    };
                    stop_blocks += 1;
                    let text = format!("Stop hook feedback:\n{}", reason.trim());
                    if let Err(LogFailure(e)) = self.log_user_text(text).await {
                        return out.failed_on_log(e);
                    }
                    continue;
                }
                compacted_since_reply = true;
                if self
                    .compact_in_turn(CompactTrigger::Auto, &mut out, cancel, None)
                    .await
                    .is_err()
                {
                    return out;
                }
                let text = CONTINUE_AFTER_CUT.to_string();
                if let Err(LogFailure(e)) = self.log_user_text(text).await {
                    return out.failed_on_log(e);
                }
                continue;
            }

            text_call_corrected = false;
            let budget = self.limits.max_tool_calls.saturating_sub(out.tool_calls) as usize;
            let (run, refused) = calls.split_at(calls.len().min(budget));
            out.tool_calls += run.len() as u32;
            let (mut results, log_failure) = self.run_tools(run, cancel).await;
            self.record_progress(out.tool_calls).await;
            let repeats = repeated.observe(run, &results);
            for call in refused {
                results.push(ContentBlock::ToolResult {
                    tool_use_id: call.id.clone(),
                    content: "not run: the turn reached its tool-call limit".into(),
                    is_error: true,
                    images: Vec::new(),
                });
            }
            self.conversation.push(Message {
                role: Role::User,
                content: results.into(),
            });
            if self.events.wants_transcripts()
                && let Some(sent) = self.conversation.last()
            {
                self.events.emit(Event::Message {
                    agent: self.id.clone(),
                    message: sent.clone(),
                    model: None,
                    stop_reason: None,
                    usage: None,
                });
            }
            if let Some(LogFailure(e)) = log_failure {
                return out.failed_on_log(e);
            }
            // Told after the results, in the same user message (and the log).
            let (note, stop) = match repeats {
                Repeats::None => (None, None),
                Repeats::Tell(note) => (Some(note), None),
                Repeats::Stop { note, error } => (Some(note), Some(error)),
            };
            if let Some(note) = note
                && let Err(LogFailure(e)) = self.log_user_text(note).await
            {
                return out.failed_on_log(e);
            }
            if let Some(error) = stop {
                out.status = TurnStatus::LimitReached;
                out.error = Some(error);
                return out;
            }
            if cancel.is_cancelled() {
                out.status = TurnStatus::Interrupted;
                out.error = Some("interrupted by the user".into());
                return out;
            }
            if !refused.is_empty() {
                out.status = TurnStatus::LimitReached;
                out.error = Some(format!(
                    "the turn reached its limit of {} tool calls; stopped to avoid a runaway loop",
                    self.limits.max_tool_calls
                ));
                return out;
            }
        }
    }
}

/// Paused server-tool loops continued in one turn before it ends as it is.
const MAX_PAUSES: u32 = 8;

/// The roster reminder's first line when it replaces an earlier roster.
const ROSTER_CHANGED_HEADER: &str =
    "The agent types changed. Agent types available to the Agent tool (subagent_type) now:";

/// Whether `text` is a roster reminder (first or changed).
fn is_roster(text: &str) -> bool {
    text.starts_with("<system-reminder>")
        && (text.contains(ROSTER_HEADER) || text.contains(ROSTER_CHANGED_HEADER))
}

/// The `- name: description` lines of a roster reminder.
fn roster_entries(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.starts_with("- ")).collect()
}

/// The name cadre gives a server tool: `web_search` is its `WebSearch`.
fn server_tool_name(name: &str) -> String {
    match name {
        "web_search" => "WebSearch".into(),
        other => other.to_string(),
    }
}

/// A stop reason as the Anthropic wire names it.
fn stop_name(reason: &StopReason) -> String {
    match reason {
        StopReason::EndTurn => "end_turn".into(),
        StopReason::ToolUse => "tool_use".into(),
        StopReason::MaxTokens => "max_tokens".into(),
        StopReason::Other(other) => other.clone(),
    }
}
