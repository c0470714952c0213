//! Hook events as an agent fires them: the session's start and end, a
//! submitted prompt, before and after each tool call, a child's start, and
//! the moment the agent would stop.

use super::{Agent, QuerySource};
use crate::hooks::AgentHooks;
use crate::hooks::{FireAt, HookEvent, HookOutcome, PermissionVerdict};
use crate::model::ToolCall;
use crate::permissions::PermissionMode;
use crate::protocol::EventSink;
use crate::tasks::BoardTask;
use crate::teams::TeamSeat;
use crate::tools::board::{BoardHooks, BoardVerdict, task_hook_input};
use crate::tools::{ToolInput, ToolOutput};
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// Stop (or SubagentStop) hooks may keep an agent going this many times in a row.
pub(super) const MAX_STOP_BLOCKS: u32 = 8;

/// What the PreToolUse hooks made of a call.
pub(super) enum PreToolVerdict {
    /// No hook decided: the policy alone.
    None,
    /// A hook allowed it: like an allow rule (deny and ask rules still win).
    Allow,
    /// A hook asks the user, with its reason.
    Ask(String),
}

impl Agent {
    fn fire_at<'a>(&'a self, cancel: &'a CancellationToken) -> FireAt<'a> {
        FireAt {
            agent: &self.id,
            cwd: &self.ctx.cwd,
            mode: self.policy.mode,
            events: &self.events,
            cancel,
        }
    }

    /// Fires `event` when this agent has hooks for it.
    pub(super) async fn fire(
        &self,
        event: HookEvent,
        subject: Option<&str>,
        extra: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Option<HookOutcome> {
        let hooks = self.hooks.as_ref().filter(|h| h.has(event))?;
        Some(
            hooks
                .fire(event, subject, extra, self.fire_at(cancel))
                .await,
        )
    }

    /// A child has an `agent_id` in its hook inputs; the main agent none.
    pub(super) fn is_child(&self) -> bool {
        self.source != QuerySource::Main
            || self.hooks.as_ref().is_some_and(|h| h.agent_id.is_some())
    }

    /// `SessionStart` (`source`: startup, resume, clear): records the
    /// session for every hook input; context the hooks give joins the
    /// first message of the next turn.
    pub async fn session_start(&mut self, session_id: &str, source: &str) {
        let Some(hooks) = &self.hooks else {
            return;
        };
        if let Some(log) = &self.log {
            hooks.set_session(session_id, log.path());
        }
        let cancel = CancellationToken::new();
        let extra = Map::from_iter([("source".to_string(), json!(source))]);
        if let Some(out) = self
            .fire(HookEvent::SessionStart, Some(source), extra, &cancel)
            .await
        {
            self.pending_context.extend(
                out.additional_context
                    .into_iter()
                    .map(|c| reminder("SessionStart hook additional context", &c)),
            );
        }
    }

    /// `SessionEnd` (`reason`: prompt_input_exit, clear, other).
    pub async fn session_end(&self, reason: &str) {
        let extra = Map::from_iter([("reason".to_string(), json!(reason))]);
        self.fire(
            HookEvent::SessionEnd,
            Some(reason),
            extra,
            &CancellationToken::new(),
        )
        .await;
    }

    /// `UserPromptSubmit` for a user's prompt to the main agent. `Err`: a
    /// hook blocked it (the reason, for the user); `Ok`: context to add.
    pub(super) async fn user_prompt_submit(
        &self,
        prompt: &str,
        cancel: &CancellationToken,
    ) -> Result<Vec<String>, String> {
        if self.is_child() || prompt.is_empty() {
            return Ok(Vec::new());
        }
        let extra = Map::from_iter([("prompt".to_string(), json!(prompt))]);
        let Some(out) = self
            .fire(HookEvent::UserPromptSubmit, None, extra, cancel)
            .await
        else {
            return Ok(Vec::new());
        };
        if let Some(reason) = out.stop.or(out.block) {
            return Err(reason);
        }
        Ok(out
            .additional_context
            .into_iter()
            .map(|c| reminder("UserPromptSubmit hook additional context", &c))
            .collect())
    }

    /// `SubagentStart` for a child's first turn: context to add to its first message.
    pub(super) async fn subagent_start(&self, cancel: &CancellationToken) -> Vec<String> {
        if !self.is_child() {
            return Vec::new();
        }
        let hooks_type = self.hooks.as_ref().and_then(|h| h.agent_type.clone());
        self.fire(
            HookEvent::SubagentStart,
            hooks_type.as_deref(),
            Map::new(),
            cancel,
        )
        .await
        .map(|out| {
            out.additional_context
                .into_iter()
                .map(|c| reminder("SubagentStart hook additional context", &c))
                .collect()
        })
        .unwrap_or_default()
    }

    /// `Stop` (main agent) or `SubagentStop` (a child) when the model
    /// answered without tools: `Some(reason)` keeps the agent going.
    pub(super) async fn stop_hook(
        &self,
        last_message: &str,
        active: bool,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let mut extra = Map::from_iter([
            ("stop_hook_active".to_string(), json!(active)),
            ("last_assistant_message".to_string(), json!(last_message)),
        ]);
        let (event, subject) = if self.is_child() {
            if let Some(log) = &self.log {
                extra.insert(
                    "agent_transcript_path".into(),
                    json!(log.path().display().to_string()),
                );
            }
            (
                HookEvent::SubagentStop,
                self.hooks.as_ref().and_then(|h| h.agent_type.clone()),
            )
        } else {
            (HookEvent::Stop, None)
        };
        let out = self.fire(event, subject.as_deref(), extra, cancel).await?;
        if out.stop.is_some() {
            return None;
        }
        out.block
    }

    /// `PreToolUse`: `Err` is the denial the model sees; `Ok` the input to
    /// decide on and run (a hook may have replaced it) and what the hooks said.
    pub(super) async fn pre_tool_use(
        &self,
        call: &ToolCall,
        tool: &str,
        input: ToolInput,
        cancel: &CancellationToken,
    ) -> Result<(ToolInput, PreToolVerdict), String> {
        let extra = Map::from_iter([
            ("tool_name".to_string(), json!(tool)),
            ("tool_input".to_string(), Value::Object(input.clone())),
            ("tool_use_id".to_string(), json!(call.id)),
        ]);
        let Some(out) = self
            .fire(HookEvent::PreToolUse, Some(tool), extra, cancel)
            .await
        else {
            return Ok((input, PreToolVerdict::None));
        };
        if let Some(reason) = out.stop {
            return Err(format!(
                "denied: a PreToolUse hook stopped the agent: {reason}"
            ));
        }
        if let Some(reason) = out.block {
            return Err(format!("denied by a PreToolUse hook: {reason}"));
        }
        let input = match out.updated_input {
            Some(Value::Object(updated)) => updated,
            _ => input,
        };
        let verdict = match out.permission {
            Some((PermissionVerdict::Deny, reason)) => {
                return Err(format!(
                    "denied by a PreToolUse hook: {}",
                    reason.unwrap_or_else(|| "no reason given".into())
                ));
            }
            Some((PermissionVerdict::Ask, reason)) => {
                PreToolVerdict::Ask(reason.unwrap_or_else(|| "a PreToolUse hook asks".into()))
            }
            Some((PermissionVerdict::Allow, _)) => PreToolVerdict::Allow,
            None => PreToolVerdict::None,
        };
        Ok((input, verdict))
    }

    /// `PostToolUse` after a call ran: its feedback (a block's reason, more
    /// context) is added to the result the model gets.
    pub(super) async fn post_tool_use(
        &self,
        call: &ToolCall,
        tool: &str,
        input: &ToolInput,
        output: ToolOutput,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let extra = Map::from_iter([
            ("tool_name".to_string(), json!(tool)),
            ("tool_input".to_string(), Value::Object(input.clone())),
            ("tool_use_id".to_string(), json!(call.id)),
            (
                "tool_response".to_string(),
                json!({"content": output.content, "is_error": output.is_error}),
            ),
        ]);
        let Some(out) = self
            .fire(HookEvent::PostToolUse, Some(tool), extra, cancel)
            .await
        else {
            return output;
        };
        let mut content = output.content;
        if let Some(reason) = out.block {
            content.push_str(&format!("\n\nPostToolUse hook feedback:\n{reason}"));
        }
        for c in out.additional_context {
            content.push_str("\n\n");
            content.push_str(&reminder("PostToolUse hook additional context", &c));
        }
        ToolOutput {
            content,
            is_error: output.is_error,
            images: output.images,
        }
    }

    /// `Notification` when a question waits for the user; run in the
    /// background so the question is not held up.
    pub(super) fn notify(&self, notification_type: &str, message: String) {
        let Some(hooks) = self
            .hooks
            .clone()
            .filter(|h| h.has(HookEvent::Notification))
        else {
            return;
        };
        let agent = self.id.clone();
        let cwd = self.ctx.cwd.clone();
        let mode = self.policy.mode;
        let events = self.events.clone();
        let kind = notification_type.to_string();
        tokio::spawn(async move {
            let extra = Map::from_iter([
                ("message".to_string(), json!(message)),
                ("notification_type".to_string(), json!(kind)),
            ]);
            let cancel = CancellationToken::new();
            hooks
                .fire(
                    HookEvent::Notification,
                    Some(&kind),
                    extra,
                    FireAt {
                        agent: &agent,
                        cwd: &cwd,
                        mode,
                        events: &events,
                        cancel: &cancel,
                    },
                )
                .await;
        });
    }

    /// The board's hooks as this agent fires them, when it sits in a team
    /// and `TaskCreated` or `TaskCompleted` hooks are configured.
    pub(super) fn board_hooks(
        &self,
        cancel: &CancellationToken,
    ) -> Option<std::sync::Arc<dyn BoardHooks>> {
        self.ctx.team.as_ref()?;
        let hooks = self
            .hooks
            .clone()
            .filter(|h| h.has(HookEvent::TaskCreated) || h.has(HookEvent::TaskCompleted))?;
        Some(std::sync::Arc::new(AgentBoardHooks {
            hooks,
            agent: self.id.to_string(),
            cwd: self.ctx.cwd.clone(),
            mode: self.policy.mode,
            events: self.events.clone(),
            cancel: cancel.clone(),
        }))
    }

    /// Fires a team event (`TeammateIdle`, or `TaskCompleted` for a task
    /// still in progress as a teammate's turn ends) with `extra` inputs;
    /// `None` when no hook is configured for it.
    pub async fn fire_team_event(
        &self,
        event: HookEvent,
        extra: Map<String, Value>,
        cancel: &CancellationToken,
    ) -> Option<HookOutcome> {
        self.fire(event, None, extra, cancel).await
    }

    /// Context hooks gave for the next message (SessionStart's), taken.
    pub(super) fn take_pending_context(&mut self) -> Vec<String> {
        std::mem::take(&mut self.pending_context)
    }
}

/// Hook context as the model sees it.
fn reminder(what: &str, text: &str) -> String {
    format!(
        "<system-reminder>\n{what}:\n{}\n</system-reminder>",
        text.trim()
    )
}

/// `TaskCreated` and `TaskCompleted` as fired from a board tool's call.
struct AgentBoardHooks {
    hooks: AgentHooks,
    agent: String,
    cwd: std::path::PathBuf,
    mode: PermissionMode,
    events: EventSink,
    cancel: CancellationToken,
}

impl BoardHooks for AgentBoardHooks {
    fn fire<'a>(
        &'a self,
        event: HookEvent,
        seat: &'a TeamSeat,
        task: &'a BoardTask,
    ) -> BoxFuture<'a, BoardVerdict> {
        Box::pin(async move {
            if !self.hooks.has(event) {
                return BoardVerdict::Proceed;
            }
            let at = FireAt {
                agent: &self.agent,
                cwd: &self.cwd,
                mode: self.mode,
                events: &self.events,
                cancel: &self.cancel,
            };
            let outcome = self
                .hooks
                .fire(event, None, task_hook_input(seat, task), at)
                .await;
            board_verdict(event, outcome)
        })
    }
}

/// The verdict of `event`'s hooks on a board task (`continue: false`
/// counts for `TaskCompleted` and `TeammateIdle`, not `TaskCreated`, as in
/// Claude Code).
pub fn board_verdict(event: HookEvent, outcome: HookOutcome) -> BoardVerdict {
    if let Some(reason) = outcome.block {
        return BoardVerdict::Block(reason);
    }
    match outcome.stop {
        Some(reason) if event != HookEvent::TaskCreated => BoardVerdict::Stop(reason),
        _ => BoardVerdict::Proceed,
    }
}
