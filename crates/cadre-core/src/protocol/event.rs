//! The event half of the protocol between the core and its front ends. Every
//! behaviour a user can see is one of these; `exec --json` prints them as JSONL.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{
    AgentId, ApprovalAnswer, ApprovalQuestion, BoardTaskState, ChildCallOutcome, ChildStatus,
    ChildTag, CompactTrigger, HookDecision, HookEvent, McpStatus, PermissionMode, TaskKind,
    TaskStatus, TeammateState, TurnStatus,
};
use crate::model::Usage;

/// Something the core tells front ends.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A session began.
    SessionStarted {
        /// Session id.
        session_id: String,
        /// Provider.
        provider: crate::model::Provider,
        /// Model id.
        model: String,
        /// Working directory.
        cwd: String,
    },
    /// An agent began a turn.
    TurnStarted {
        /// Agent id (`main` for the top-level agent).
        agent: AgentId,
        /// True for a turn the session started itself to announce finished
        /// background tasks, with no message from the user.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        notices: bool,
    },
    /// An agent sent a model request.
    RequestStarted {
        /// Agent id.
        agent: AgentId,
        /// 1-based request number within the turn.
        request: u32,
    },
    /// Streamed assistant text.
    TextDelta {
        /// Agent id.
        agent: AgentId,
        /// The new text.
        text: String,
    },
    /// A transient model failure is being retried.
    Retrying {
        /// Agent id.
        agent: AgentId,
        /// The try about to be made.
        attempt: u32,
        /// HTTP status that caused it, if any.
        status: Option<u16>,
        /// Wait before the try.
        wait_ms: u64,
        /// What failed.
        reason: String,
        /// True when the failed try had streamed text: drop it, the reply starts over.
        discarded_text: bool,
    },
    /// A complete assistant message arrived.
    AssistantMessage {
        /// Agent id.
        agent: AgentId,
        /// Its text.
        text: String,
        /// How many tool calls it holds.
        tool_calls: usize,
    },
    /// A message an agent added to its conversation, whole: its reply, or
    /// the tool results sent back. Only a sink that asked for transcripts
    /// ([`EventSink::with_transcripts`]) gets these, children's included.
    Message {
        /// Agent id.
        agent: AgentId,
        /// The message (in the Anthropic shape).
        #[schemars(with = "serde_json::Value")]
        message: crate::model::Message,
        /// A reply's model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// A reply's stop reason (`end_turn`, `tool_use`, `max_tokens`, …).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<String>,
        /// A reply's tokens.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
    /// A tool call is about to run.
    ToolCallStarted {
        /// Agent id.
        agent: AgentId,
        /// Call id.
        call_id: String,
        /// Canonical tool name (or the unknown name the model used).
        tool: String,
        /// Arguments (the raw text when they are not a valid JSON object).
        input: Value,
        /// One-line argument summary.
        summary: String,
    },
    /// The provider ran one of its own tools for the model (Anthropic's web
    /// search): what it searched and what it found. Nothing ran locally.
    ServerToolUsed {
        /// Agent id.
        agent: AgentId,
        /// The server's call id.
        call_id: String,
        /// Canonical tool name (`WebSearch`).
        tool: String,
        /// The search query.
        query: String,
        /// The results' titles and URLs.
        results: Vec<crate::model::SearchHit>,
        /// The server's error code when the search failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A tool call finished.
    ToolCallEnded {
        /// Agent id.
        agent: AgentId,
        /// Call id.
        call_id: String,
        /// Canonical tool name.
        tool: String,
        /// One-line argument summary (as in `tool_call_started`).
        #[serde(default)]
        summary: String,
        /// Whether it failed.
        is_error: bool,
        /// One-line outcome.
        outcome: String,
        /// Bytes of result text sent to the model.
        output_bytes: usize,
        /// How long it ran.
        duration_ms: u64,
    },
    /// Tokens used by one model request.
    Usage {
        /// Agent id.
        agent: AgentId,
        /// Counts.
        #[serde(flatten)]
        usage: Usage,
        /// What the request cost in US dollars, when the model's prices are known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// How much of the model's context window an agent's conversation uses:
    /// after each reply (from the provider's counts), and estimated after a
    /// compaction or before the first reply.
    ContextUsage {
        /// Agent id.
        agent: AgentId,
        /// Tokens in use (input, cache read and write, and the reply's output).
        tokens: u64,
        /// The model's context window.
        window: u64,
        /// `tokens` as a whole percentage of `window`.
        percent: u64,
        /// True when `tokens` is cadre's estimate rather than the provider's count.
        estimated: bool,
    },
    /// An agent's conversation is being summarised to free its context.
    CompactionStarted {
        /// Agent id.
        agent: AgentId,
        /// Why.
        trigger: CompactTrigger,
        /// Tokens in use before.
        tokens_before: u64,
    },
    /// A compaction ended: the conversation is now the summary and the most
    /// recent messages, or (with `error`) it was left as it was.
    CompactionEnded {
        /// Agent id.
        agent: AgentId,
        /// Why it was made.
        trigger: CompactTrigger,
        /// Tokens in use before.
        tokens_before: u64,
        /// Estimated tokens of the next request (equal to `tokens_before` on failure).
        tokens_after: u64,
        /// Messages kept verbatim after the summary.
        kept_messages: usize,
        /// Why it failed, when it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// What the summary request cost in US dollars, when the prices are
        /// known (an automatic compaction's is also in its turn's cost).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// An agent's turn ended.
    TurnEnded {
        /// Agent id.
        agent: AgentId,
        /// How it ended.
        status: TurnStatus,
        /// The last assistant text.
        final_text: String,
        /// Why it did not complete, when it did not.
        error: Option<String>,
        /// Model requests made in the turn.
        requests: u32,
        /// Tool calls made in the turn.
        tool_calls: u32,
        /// Tokens used in the turn.
        usage: Usage,
        /// What the turn cost in US dollars, when the model's prices are known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// A question is put to the user; the front end's approval source answers it.
    ApprovalRequested {
        /// The question.
        question: ApprovalQuestion,
        /// Its id in this session (from 1), for `Op::ApprovalAnswer`; 0 when unknown.
        #[serde(default)]
        id: u64,
    },
    /// A question was answered.
    ApprovalAnswered {
        /// Agent id.
        agent: AgentId,
        /// Tool.
        tool: String,
        /// The answer.
        answer: ApprovalAnswer,
    },
    /// A tool call was denied without running (by a rule, the mode, the user, or because nobody could answer).
    ToolCallDenied {
        /// Agent id.
        agent: AgentId,
        /// Call id.
        call_id: String,
        /// Tool.
        tool: String,
        /// Why.
        reason: String,
    },
    /// A session was resumed from its log.
    SessionResumed {
        /// Session id.
        session_id: String,
        /// Messages restored.
        messages: usize,
        /// Calls recorded as `unknown` (they may have run).
        unknown_calls: Vec<String>,
    },
    /// A subagent was created (before it runs; it may still queue for the pool).
    SubagentStarted {
        /// 1-based position in its batch.
        index: usize,
        /// Batch size.
        total: usize,
        /// Child agent id (its log is `sessions/<session>.agents/<id>.jsonl`).
        agent_id: AgentId,
        /// Definition name.
        agent_type: String,
        /// The call's short description.
        description: String,
        /// Model it talks to.
        model: String,
        /// Its permission mode after the ratchet.
        mode: PermissionMode,
        /// Where it sits in the tree of children: from the main agent's
        /// child down to this one (a first-level child's path is itself).
        #[serde(default)]
        path: Vec<ChildTag>,
        /// Its definition's display colour (`red`, `blue`, `green`, `yellow`,
        /// `purple`, `orange`, `pink` or `cyan`), when it names one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        color: Option<String>,
    },
    /// A subagent's tool call finished (its text is never streamed).
    SubagentProgress {
        /// 1-based position in its batch.
        index: usize,
        /// Batch size.
        total: usize,
        /// Definition name.
        agent_type: String,
        /// Child agent id.
        agent_id: AgentId,
        /// Tool.
        tool: String,
        /// How the call ended.
        outcome: ChildCallOutcome,
        /// One-line argument summary of the call (`"parse_config" in src/`).
        #[serde(default)]
        summary: String,
        /// From the main agent's child down to the one that made the call
        /// (whose index, total, type and id are also the fields above).
        #[serde(default)]
        path: Vec<ChildTag>,
    },
    /// A foreground subagent was moved to the background mid-run.
    SubagentBackgrounded {
        /// 1-based position in its batch.
        index: usize,
        /// Batch size.
        total: usize,
        /// Child agent id.
        agent_id: AgentId,
        /// Its task id.
        task_id: String,
    },
    /// A subagent ended.
    SubagentEnded {
        /// 1-based position in its batch.
        index: usize,
        /// Batch size.
        total: usize,
        /// Child agent id.
        agent_id: AgentId,
        /// Definition name.
        agent_type: String,
        /// How it ended.
        status: ChildStatus,
        /// Model requests it made.
        requests: u32,
        /// Tool calls it made.
        tool_calls: u32,
        /// Tokens it used.
        usage: Usage,
        /// Wall time.
        duration_ms: u64,
        /// Why it did not complete.
        error: Option<String>,
        /// What it cost in US dollars, when its model's prices are known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        /// Times its conversation was compacted.
        #[serde(default)]
        compactions: u32,
        /// Its git worktree (`isolation: worktree`): where it is kept and on
        /// which branch, or that it was removed; absent without one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worktree: Option<String>,
    },
    /// A task (subagent or shell) was filed in the task table.
    TaskStarted {
        /// Task id.
        task_id: String,
        /// The agent that started it.
        owner: AgentId,
        /// `subagent` or `bash`.
        kind: TaskKind,
        /// What it is for.
        description: String,
        /// Whether it runs in the background.
        background: bool,
    },
    /// A task ended.
    TaskEnded {
        /// Task id.
        task_id: String,
        /// Final status.
        status: TaskStatus,
        /// What it was for.
        description: String,
    },
    /// Finished background tasks were announced to an agent.
    TasksNotified {
        /// The agent told.
        agent: AgentId,
        /// The tasks announced.
        task_ids: Vec<String>,
    },
    /// An agent's conversation went back to just before one of the user's
    /// messages (`Op::Rewind`).
    Rewound {
        /// Agent id.
        agent: AgentId,
        /// The message gone back before (the front end offers it for editing).
        prompt: String,
        /// Messages the conversation holds now.
        messages: usize,
        /// What went back: the conversation alone, with the files, or
        /// summarised from the message on.
        #[serde(default)]
        action: super::RewindAction,
    },
    /// The session's code checkpoints, oldest first (`Op::ListCheckpoints`).
    Checkpoints {
        /// Agent id (the main agent).
        agent: AgentId,
        /// The checkpoints kept (the last 100).
        checkpoints: Vec<super::CheckpointInfo>,
    },
    /// A code restore would overwrite files changed outside cadre since
    /// cadre last wrote them; nothing was changed. Sending the same
    /// `Op::Rewind` with `overwrite` goes ahead.
    RewindNeedsConfirmation {
        /// Agent id.
        agent: AgentId,
        /// The message asked to go back before.
        prompt: String,
        /// Later sends of it skipped.
        later_same: usize,
        /// What was asked for.
        action: super::RewindAction,
        /// The files changed outside cadre.
        files: Vec<String>,
    },
    /// Files the file tools changed were brought back to how they were
    /// before a message.
    CodeRestored {
        /// Agent id.
        agent: AgentId,
        /// The message gone back before.
        prompt: String,
        /// Files written back.
        restored: Vec<String>,
        /// Files the tools had created, removed.
        removed: Vec<String>,
        /// Files left as they are (symlinked, hard-linked).
        skipped: Vec<super::SkippedFile>,
        /// Bash commands run since, whose changes to files are not undone.
        bash_commands: Vec<String>,
    },
    /// What the session's own agent's context holds, by category (after
    /// each `context_usage` of the main agent): what `/context` shows.
    ContextBreakdown {
        /// Agent id (the main agent).
        agent: AgentId,
        /// The categories, which add up to `tokens`.
        categories: Vec<super::ContextCategory>,
        /// Tokens in use, as `context_usage` reported them.
        tokens: u64,
        /// The model's context window.
        window: u64,
        /// Whether `tokens` is cadre's estimate rather than the provider's count.
        estimated: bool,
    },
    /// A command the user typed in shell mode (`!command`, `Op::Shell`)
    /// ran, or was refused; its output is in the conversation for the next turn.
    ShellRan {
        /// The command as typed, without the `!`.
        command: String,
        /// What it printed (as `Bash` returns it), or why it did not run.
        output: String,
        /// Whether it failed or was refused.
        is_error: bool,
    },
    /// An agent talks to another model from its next request (`Op::SetModel`).
    ModelChanged {
        /// Agent id.
        agent: AgentId,
        /// The model id now in use.
        model: String,
    },
    /// An agent's permission mode changed (the user switched it).
    ModeChanged {
        /// Agent id.
        agent: AgentId,
        /// The mode now in force.
        mode: PermissionMode,
    },
    /// A warning for the user that does not stop anything.
    Warning {
        /// The text.
        message: String,
    },
    /// A hook command started (settings files' or a definition's `hooks`).
    HookStarted {
        /// Agent whose event it is.
        agent: AgentId,
        /// The hook event (`PreToolUse`, `Stop`, …).
        event: HookEvent,
        /// The command.
        command: String,
        /// Where the hook is configured.
        source: String,
    },
    /// A hook command ended.
    HookEnded {
        /// Agent whose event it is.
        agent: AgentId,
        /// The hook event.
        event: HookEvent,
        /// The command.
        command: String,
        /// What it decided.
        decision: HookDecision,
        /// Its exit code (none when it did not start, timed out or was killed).
        exit_code: Option<i32>,
        /// How long it ran.
        duration_ms: u64,
    },
    /// An MCP server's connection changed: `starting`, `ready` (with its
    /// tool count), `failed` (with why) or `closed`.
    McpServerStatus {
        /// The server's name.
        server: String,
        /// Where its connection stands.
        status: McpStatus,
        /// Tools it offers (when ready).
        tools: Option<usize>,
        /// Why it failed, or what else the user should know.
        message: Option<String>,
    },
    /// A teammate joined the team or its state changed.
    TeammateChanged {
        /// The name others address it by.
        name: String,
        /// Its agent id.
        agent_id: AgentId,
        /// The definition it was started from.
        agent_type: String,
        /// Where it stands now.
        state: TeammateState,
        /// Why it failed, when it did.
        error: Option<String>,
    },
    /// A team member sent a message (now persisted, waiting for its recipient).
    TeamMessageSent {
        /// The sender's name (`team-lead` for the lead, `system` for cadre).
        from: String,
        /// The recipient's name.
        to: String,
        /// Its preview.
        summary: Option<String>,
    },
    /// Messages reached their recipient's conversation.
    TeamMessagesDelivered {
        /// The recipient's name.
        to: String,
        /// How many.
        count: usize,
    },
    /// A task of the team's board was created, changed or deleted.
    BoardTaskChanged {
        /// Its id.
        task_id: String,
        /// Its subject.
        subject: String,
        /// Where it stands.
        status: BoardTaskState,
        /// Its owner, if any.
        owner: Option<String>,
        /// The open blockers it waits for.
        blocked_by: Vec<String>,
    },
}

/// A child's place in the tree, `1/3 Explore > 2/2 Explore`: each step from
/// the main agent's child down to it, as position in its batch and type.
pub fn child_place(path: &[ChildTag]) -> String {
    path.iter()
        .map(|t| format!("{}/{} {}", t.index, t.total, t.agent_type))
        .collect::<Vec<_>>()
        .join(" > ")
}

/// Where an agent sends its events. Cheap to clone; a closed receiver is ignored.
/// A child's sink turns its tool results into progress lines and drops the
/// rest of its stream (its text is never shown; its report is what counts).
/// It knows the child's place in the tree, so a grandchild's progress says
/// whose child it is.
#[derive(Clone, Debug)]
pub struct EventSink {
    tx: Option<mpsc::UnboundedSender<Event>>,
    /// The child's path from the main agent's child down; empty for the main agent.
    lineage: std::sync::Arc<Vec<ChildTag>>,
    /// Whether whole messages ([`Event::Message`]) are wanted, children's too.
    transcripts: bool,
}

impl EventSink {
    /// A sink and the receiver a front end reads.
    pub fn channel() -> (EventSink, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            EventSink {
                tx: Some(tx),
                lineage: Default::default(),
                transcripts: false,
            },
            rx,
        )
    }

    /// A sink that drops everything.
    pub fn discard() -> EventSink {
        EventSink {
            tx: None,
            lineage: Default::default(),
            transcripts: false,
        }
    }

    /// The sink of a child of this sink's agent, reporting into the same
    /// receiver: its path is this one's with `tag` added.
    pub fn for_child(&self, tag: ChildTag) -> EventSink {
        let mut lineage = self.lineage.as_ref().clone();
        lineage.push(tag);
        EventSink {
            tx: self.tx.clone(),
            lineage: std::sync::Arc::new(lineage),
            transcripts: self.transcripts,
        }
    }

    /// The same child under a new tag (a resumed run is a batch of its own),
    /// keeping its parents; for a sink that is not a child's, `for_child`.
    pub fn retagged(&self, tag: ChildTag) -> EventSink {
        let mut lineage = self.lineage.as_ref().clone();
        lineage.pop();
        lineage.push(tag);
        EventSink {
            tx: self.tx.clone(),
            lineage: std::sync::Arc::new(lineage),
            transcripts: self.transcripts,
        }
    }

    /// The same sink, also reporting every agent's whole messages
    /// ([`Event::Message`]) and nested children's starts.
    pub fn with_transcripts(mut self) -> EventSink {
        self.transcripts = true;
        self
    }

    /// Whether whole messages are wanted.
    pub fn wants_transcripts(&self) -> bool {
        self.transcripts
    }

    /// The child's path from the main agent's child down to it; empty for
    /// the main agent's sink.
    pub fn lineage(&self) -> &[ChildTag] {
        &self.lineage
    }

    /// Sends an event.
    pub fn emit(&self, event: Event) {
        let Some(tx) = &self.tx else { return };
        let event = match (self.lineage.last(), event) {
            (None, e) => e,
            (
                Some(tag),
                Event::ToolCallEnded {
                    tool,
                    summary,
                    is_error,
                    outcome,
                    ..
                },
            ) => Event::SubagentProgress {
                index: tag.index,
                total: tag.total,
                agent_type: tag.agent_type.clone(),
                agent_id: tag.agent_id.clone(),
                tool,
                outcome: if outcome.starts_with("error: denied") {
                    ChildCallOutcome::Denied
                } else if is_error {
                    ChildCallOutcome::Failed
                } else {
                    ChildCallOutcome::Completed
                },
                summary,
                path: self.lineage.as_ref().clone(),
            },
            (
                Some(_),
                // A child's compaction is shown too: it is why a child
                // pauses, and its agent id says whose it is.
                e @ (Event::Warning { .. }
                | Event::HookStarted { .. }
                | Event::HookEnded { .. }
                | Event::McpServerStatus { .. }
                | Event::ApprovalRequested { .. }
                | Event::ApprovalAnswered { .. }
                | Event::CompactionStarted { .. }
                | Event::CompactionEnded { .. }),
            ) => e,
            // Transcripts follow every agent, nested children included.
            (Some(_), e @ (Event::Message { .. } | Event::SubagentStarted { .. }))
                if self.transcripts =>
            {
                e
            }
            (Some(_), _) => return,
        };
        let _ = tx.send(event);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// `exec --json` lines read back as the same events (`cadre eval` relies on it).
    #[test]
    fn events_read_back_as_written() {
        let events = vec![
            Event::Usage {
                agent: "main".into(),
                usage: Usage {
                    input_tokens: 3,
                    output_tokens: 4,
                    ..Usage::default()
                },
                cost_usd: Some(0.25),
            },
            Event::ContextUsage {
                agent: "main".into(),
                tokens: 3400,
                window: 4000,
                percent: 85,
                estimated: false,
            },
            Event::CompactionEnded {
                agent: "main".into(),
                trigger: CompactTrigger::Auto,
                tokens_before: 3400,
                tokens_after: 900,
                kept_messages: 2,
                error: None,
                cost_usd: Some(0.01),
            },
            Event::SubagentStarted {
                index: 1,
                total: 2,
                agent_id: "a1".into(),
                agent_type: "Explore".into(),
                description: "look".into(),
                model: "m".into(),
                mode: PermissionMode::Plan,
                path: Vec::new(),
                color: Some("red".into()),
            },
            Event::TaskEnded {
                task_id: "t1".into(),
                status: TaskStatus::Lost,
                description: "d".into(),
            },
            Event::ApprovalAnswered {
                agent: "main".into(),
                tool: "Bash".into(),
                answer: ApprovalAnswer::Session,
            },
        ];
        for e in events {
            let line = serde_json::to_string(&e).unwrap();
            let back: Event = serde_json::from_str(&line).unwrap();
            assert_eq!(serde_json::to_string(&back).unwrap(), line);
        }
    }

    fn tag(index: usize, total: usize, agent_type: &str, agent_id: &str) -> ChildTag {
        ChildTag {
            index,
            total,
            agent_type: agent_type.into(),
            agent_id: agent_id.into(),
        }
    }

    fn ended(agent: &str, tool: &str, summary: &str, is_error: bool, outcome: &str) -> Event {
        Event::ToolCallEnded {
            agent: agent.into(),
            call_id: "c1".into(),
            tool: tool.into(),
            summary: summary.into(),
            is_error,
            outcome: outcome.into(),
            output_bytes: 1,
            duration_ms: 1,
        }
    }

    /// A grandchild's call is reported as its own, with the path through its parent.
    #[test]
    fn a_childs_calls_become_progress_with_their_summary_and_path() {
        let (root, mut rx) = EventSink::channel();
        let child = root.for_child(tag(1, 3, "Explore", "a1"));
        let grandchild = child.for_child(tag(2, 2, "Explore", "b2"));
        child.emit(ended("a1", "Grep", "\"parse_config\"", false, "ok"));
        grandchild.emit(ended("b2", "Read", "src/x.rs", true, "error: denied: no"));
        // Anything else of a child's stream is dropped.
        grandchild.emit(Event::TurnStarted {
            agent: "b2".into(),
            notices: false,
        });
        root.emit(ended("main", "Read", "a.txt", false, "ok"));
        let mut got = Vec::new();
        while let Ok(e) = rx.try_recv() {
            got.push(serde_json::to_value(&e).unwrap());
        }
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0]["type"], "subagent_progress");
        assert_eq!(got[0]["summary"], "\"parse_config\"");
        assert_eq!(got[0]["outcome"], "completed");
        assert_eq!(got[0]["path"].as_array().unwrap().len(), 1);
        assert_eq!(got[1]["index"], 2);
        assert_eq!(got[1]["agent_id"], "b2");
        assert_eq!(got[1]["outcome"], "denied");
        assert_eq!(got[1]["summary"], "src/x.rs");
        let path: Vec<_> = got[1]["path"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                format!(
                    "{}/{} {} {}",
                    t["index"], t["total"], t["agent_type"], t["agent_id"]
                )
            })
            .collect();
        assert_eq!(path, ["1/3 \"Explore\" \"a1\"", "2/2 \"Explore\" \"b2\""]);
        assert_eq!(got[2]["type"], "tool_call_ended");
        // A resumed child keeps its parents under its new tag.
        let resumed = grandchild.retagged(tag(1, 1, "Explore", "b2"));
        assert_eq!(resumed.lineage().len(), 2);
        assert_eq!(resumed.lineage()[0].agent_id, "a1");
        assert_eq!(resumed.lineage()[1].index, 1);
    }

    /// Progress events of older cadres, without the new fields, still read.
    #[test]
    fn progress_without_summary_or_path_reads() {
        let old = r#"{"type":"subagent_progress","index":1,"total":1,"agent_type":"Explore","agent_id":"a1","tool":"Read","outcome":"completed"}"#;
        let e: Event = serde_json::from_str(old).unwrap();
        assert!(
            matches!(e, Event::SubagentProgress { summary, path, .. } if summary.is_empty() && path.is_empty())
        );
    }
}
