//! What an editor is shown of a session: cadre's events turned into ACP
//! `session/update` notifications. With the client's `subagents`
//! capability each child is a child session of the agent that started it
//! (announced with `subagent_update`, then its own messages and tool calls
//! under its own session id); without it, the `Agent` call is one tool call
//! whose content grows with the child's progress lines and ends with its
//! report, as Claude Code's adapter shows a `Task`, but live.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ContentBlock, ContentChunk,
    CurrentModeUpdate, Diff, IdleStateUpdate, IdleStopReason, Plan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, RunningStateUpdate, SessionNotification, SessionUpdate, StateUpdate,
    SubagentUpdate, TextContent, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind, UnstructuredCommandInput, UsageUpdate,
};
use cadre_core::model::{ContentBlock as Block, Message, Role};
use cadre_core::protocol::{
    ChildCallOutcome, ChildStatus, CommandEntry, Event, MAIN_AGENT, child_place,
};
use serde_json::Value;

/// Most bytes of a tool's result shown in the editor (the model got all of it).
const SHOWN_RESULT_MAX: usize = 16 * 1024;

/// Most progress lines an `Agent` call shows without child sessions (the latest).
const PROGRESS_LINES_MAX: usize = 40;

/// Turns one session's events into notifications, remembering what it
/// needs across them: which session each child is and which call started it.
pub struct Translator {
    /// The main agent's session.
    session_id: String,
    /// The project folder (relative paths in tool inputs are under it).
    cwd: PathBuf,
    /// The client shows child sessions.
    child_sessions: bool,
    /// Each known child's session id.
    children: HashMap<String, String>,
    /// Each known child's parent's session (where it was announced).
    parents: HashMap<String, String>,
    /// Each agent's `Agent` calls of its latest reply, in order (a batch's
    /// children are numbered as the calls are).
    agent_calls: crate::child_calls::AgentCalls,
    /// Without child sessions: the main agent's `Agent` call each child
    /// (nested ones included) reports its progress under.
    top_call: HashMap<String, String>,
    /// Without child sessions: the progress lines shown under each call.
    progress: HashMap<String, Vec<String>>,
    /// Calls shown as the plan rather than as tool calls (`TodoWrite`).
    plan_calls: Vec<String>,
}

impl Translator {
    /// A translator for the session `session_id` working in `cwd`.
    pub fn new(session_id: &str, cwd: &Path, child_sessions: bool) -> Translator {
        Translator {
            session_id: session_id.to_string(),
            cwd: cwd.to_path_buf(),
            child_sessions,
            children: HashMap::new(),
            parents: HashMap::new(),
            agent_calls: Default::default(),
            top_call: HashMap::new(),
            progress: HashMap::new(),
            plan_calls: Vec::new(),
        }
    }

    /// The ACP session an agent's work is shown in: its own child session,
    /// or the main one (without child sessions, or for an unknown agent).
    pub fn session_of(&self, agent: &str) -> String {
        if self.child_sessions
            && let Some(id) = self.children.get(agent)
        {
            return id.clone();
        }
        self.session_id.clone()
    }

    /// The notifications `event` makes, in order.
    pub fn translate(&mut self, event: &Event) -> Vec<SessionNotification> {
        let main = self.session_id.clone();
        let on_main = |update| vec![SessionNotification::new(main.clone(), update)];
        match event {
            Event::TextDelta { agent, text } if agent == MAIN_AGENT => {
                on_main(SessionUpdate::AgentMessageChunk(text_chunk(text)))
            }
            Event::ToolCallStarted {
                agent,
                call_id,
                tool,
                input,
                summary,
            } if agent == MAIN_AGENT => {
                if tool == "TodoWrite" {
                    self.plan_calls.push(call_id.clone());
                    return plan_of(input).map(on_main).unwrap_or_default();
                }
                on_main(SessionUpdate::ToolCall(self.tool_call(
                    call_id,
                    tool,
                    input,
                    summary,
                    ToolCallStatus::Pending,
                )))
            }
            Event::ToolCallEnded {
                agent,
                call_id,
                is_error,
                outcome,
                ..
            } if agent == MAIN_AGENT => {
                if self.plan_calls.contains(call_id) {
                    return Vec::new();
                }
                let fields = ToolCallUpdateFields::new()
                    .status(status_of(*is_error))
                    .raw_output(serde_json::json!({ "outcome": outcome }));
                on_main(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    call_id.clone(),
                    fields,
                )))
            }
            Event::ToolCallDenied {
                agent,
                call_id,
                reason,
                ..
            } if agent == MAIN_AGENT => {
                let fields = ToolCallUpdateFields::new()
                    .status(ToolCallStatus::Failed)
                    .content(vec![text_content(reason)]);
                on_main(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    call_id.clone(),
                    fields,
                )))
            }
            Event::Message { agent, message, .. } => self.message(agent, message),
            Event::SubagentStarted {
                index,
                agent_id,
                agent_type,
                description,
                path,
                ..
            } => self.child_started(*index, agent_id, agent_type, description, path),
            Event::SubagentProgress {
                agent_id,
                tool,
                outcome,
                summary,
                path,
                ..
            } if !self.child_sessions => {
                let mark = match outcome {
                    ChildCallOutcome::Completed => "✓",
                    _ => "✗",
                };
                let line = format!("{} · {tool} {summary} {mark}", child_place(path))
                    .trim()
                    .to_string();
                self.progress_line(agent_id, line)
            }
            Event::SubagentEnded {
                agent_id,
                status,
                error,
                ..
            } => self.child_ended(agent_id, *status, error.as_deref()),
            Event::TeammateChanged {
                name,
                agent_id,
                state,
                error,
                ..
            } => self.teammate_changed(name, agent_id, *state, error.as_deref()),
            Event::ContextUsage {
                agent,
                tokens,
                window,
                ..
            } if agent == MAIN_AGENT => on_main(SessionUpdate::UsageUpdate(UsageUpdate::new(
                *tokens, *window,
            ))),
            Event::ModeChanged { agent, mode } if agent == MAIN_AGENT => on_main(
                SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.as_str())),
            ),
            _ => Vec::new(),
        }
    }

    /// A call of a replayed log, shown as it was made (its result follows).
    pub fn replayed_call(
        &self,
        call_id: &str,
        tool: &str,
        input: &Value,
        summary: &str,
    ) -> ToolCall {
        self.tool_call(call_id, tool, input, summary, ToolCallStatus::InProgress)
    }

    /// A tool call as the editor first sees it.
    fn tool_call(
        &self,
        call_id: &str,
        tool: &str,
        input: &Value,
        summary: &str,
        status: ToolCallStatus,
    ) -> ToolCall {
        let title = match tool {
            "Agent" | "Task" => input
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("{tool} {summary}")),
            _ if summary.is_empty() => tool.to_string(),
            _ => format!("{tool} {summary}"),
        };
        // The tool's own name, for clients that group or filter by it.
        let mut meta = serde_json::Map::new();
        meta.insert("cadre".into(), serde_json::json!({ "toolName": tool }));
        let mut call = ToolCall::new(call_id.to_string(), title)
            .kind(kind_of(tool))
            .status(status)
            .raw_input(input.clone())
            .meta(meta);
        if let Some(path) = self.path_in(input) {
            call = call.locations(vec![ToolCallLocation::new(path.clone())]);
            if let Some(diff) = diff_of(tool, &path, input) {
                call = call.content(vec![ToolCallContent::Diff(diff)]);
            }
        }
        if matches!(tool, "Agent" | "Task")
            && let Some(prompt) = input.get("prompt").and_then(Value::as_str)
        {
            call = call.content(vec![text_content(prompt)]);
        }
        call
    }

    /// The absolute path a call works on, when its input names one.
    fn path_in(&self, input: &Value) -> Option<PathBuf> {
        let raw = ["file_path", "notebook_path", "path"]
            .iter()
            .find_map(|k| input.get(*k).and_then(Value::as_str))?;
        Some(self.cwd.join(raw))
    }

    /// A whole message an agent added: a child's text and calls (child
    /// sessions), and every agent's results shown under their calls.
    fn message(&mut self, agent: &str, message: &Message) -> Vec<SessionNotification> {
        let session = self.session_of(agent);
        let is_main = agent == MAIN_AGENT;
        let shown_here = is_main || self.child_sessions;
        let mut out = Vec::new();
        match message.role {
            Role::Assistant => {
                self.agent_calls.record(agent, message);
                // The main agent's text and calls were streamed as they came.
                if is_main || !self.child_sessions {
                    return out;
                }
                for block in message.content.iter() {
                    match block {
                        Block::Text { text } if !text.trim().is_empty() => {
                            out.push(SessionNotification::new(
                                session.clone(),
                                SessionUpdate::AgentMessageChunk(text_chunk(text)),
                            ));
                        }
                        Block::ToolUse { id, name, input } => {
                            let input: Value = serde_json::from_str(input)
                                .unwrap_or_else(|_| Value::String(input.clone()));
                            let summary = cadre_core::agent::argument_summary(name, &input);
                            let call = self.tool_call(
                                id,
                                name,
                                &input,
                                &summary,
                                ToolCallStatus::InProgress,
                            );
                            out.push(SessionNotification::new(
                                session.clone(),
                                SessionUpdate::ToolCall(call),
                            ));
                        }
                        _ => {}
                    }
                }
            }
            Role::User if shown_here => {
                for block in message.content.iter() {
                    let Block::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                        ..
                    } = block
                    else {
                        continue;
                    };
                    if self.plan_calls.contains(tool_use_id) {
                        continue;
                    }
                    let mut fields = ToolCallUpdateFields::new()
                        .content(vec![text_content(&shown_result(content))]);
                    // A child's calls end here; the main agent's with `tool_call_ended`.
                    if !is_main {
                        fields = fields.status(status_of(*is_error));
                    }
                    out.push(SessionNotification::new(
                        session.clone(),
                        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                            tool_use_id.clone(),
                            fields,
                        )),
                    ));
                }
            }
            Role::User => {}
        }
        out
    }

    /// A child was created: announced as a child session of its parent, or
    /// (without child sessions) tied to the call it reports under.
    fn child_started(
        &mut self,
        index: usize,
        agent_id: &str,
        agent_type: &str,
        description: &str,
        path: &[cadre_core::protocol::ChildTag],
    ) -> Vec<SessionNotification> {
        let (parent, call) = self.agent_calls.parent_of(index, path);
        if !self.child_sessions {
            // Nested children report under their first-level ancestor's call.
            let top = if parent == MAIN_AGENT {
                call
            } else {
                self.top_call.get(&parent).cloned()
            };
            if let Some(top) = top {
                self.top_call.insert(agent_id.to_string(), top);
            }
            return self.progress_line(agent_id, format!("{} started", child_place(path)));
        }
        let parent_session = self.session_of(&parent);
        let child_session = child_session_id(&self.session_id, agent_id);
        self.children
            .insert(agent_id.to_string(), child_session.clone());
        self.parents
            .insert(agent_id.to_string(), parent_session.clone());
        let mut meta = serde_json::Map::new();
        meta.insert("agentType".into(), Value::String(agent_type.to_string()));
        if let Some(call) = call {
            meta.insert("toolCallId".into(), Value::String(call));
        }
        let update = SubagentUpdate::new(child_session)
            .title(description.to_string())
            .description(format!("{agent_type} subagent"))
            .state(StateUpdate::Running(RunningStateUpdate::new()))
            .cwd(self.cwd.clone())
            .meta(meta);
        vec![SessionNotification::new(
            parent_session,
            SessionUpdate::SubagentUpdate(update),
        )]
    }

    /// A child ended: its session goes idle with why (child sessions).
    fn child_ended(
        &mut self,
        agent_id: &str,
        status: ChildStatus,
        error: Option<&str>,
    ) -> Vec<SessionNotification> {
        if !self.child_sessions {
            let line = match error {
                Some(e) => format!("ended: {} ({e})", status.as_str()),
                None => format!("ended: {}", status.as_str()),
            };
            return self.progress_line(agent_id, line);
        }
        let Some(child_session) = self.children.get(agent_id).cloned() else {
            return Vec::new();
        };
        let parent_session = self.parent_session_of(agent_id);
        let reason = match status {
            ChildStatus::Completed => IdleStopReason::EndTurn,
            ChildStatus::Cancelled => IdleStopReason::Cancelled,
            ChildStatus::Failed => error_stop(error.unwrap_or("failed")),
        };
        let update = SubagentUpdate::new(child_session).state(StateUpdate::Idle(
            IdleStateUpdate::new().stop_reason(reason),
        ));
        vec![SessionNotification::new(
            parent_session,
            SessionUpdate::SubagentUpdate(update),
        )]
    }

    /// A teammate's child session runs while it works and rests (idle,
    /// or failed with its error) between turns; its end is its child's end.
    /// Its name is in `_meta.teammate`, and prompts to its session reach it.
    fn teammate_changed(
        &mut self,
        name: &str,
        agent_id: &str,
        state: cadre_core::protocol::TeammateState,
        error: Option<&str>,
    ) -> Vec<SessionNotification> {
        use cadre_core::protocol::TeammateState;
        if !self.child_sessions {
            return Vec::new();
        }
        let Some(child_session) = self.children.get(agent_id).cloned() else {
            return Vec::new();
        };
        let state = match state {
            TeammateState::Working => StateUpdate::Running(RunningStateUpdate::new()),
            TeammateState::Idle => {
                StateUpdate::Idle(IdleStateUpdate::new().stop_reason(IdleStopReason::EndTurn))
            }
            TeammateState::Failed => StateUpdate::Idle(
                IdleStateUpdate::new().stop_reason(error_stop(error.unwrap_or("failed"))),
            ),
            // Its child's end says how it ended.
            TeammateState::Ended => return Vec::new(),
        };
        let mut meta = serde_json::Map::new();
        meta.insert("teammate".into(), Value::String(name.to_string()));
        let update = SubagentUpdate::new(child_session)
            .title(format!("teammate {name}"))
            .state(state)
            .meta(meta);
        vec![SessionNotification::new(
            self.parent_session_of(agent_id),
            SessionUpdate::SubagentUpdate(update),
        )]
    }

    /// The session a child was announced on (its parent's).
    fn parent_session_of(&self, agent_id: &str) -> String {
        self.parents
            .get(agent_id)
            .cloned()
            .unwrap_or_else(|| self.session_id.clone())
    }

    /// Without child sessions: one more line under the call a child reports
    /// under, sent as the call's whole content.
    fn progress_line(&mut self, agent_id: &str, line: String) -> Vec<SessionNotification> {
        let Some(call) = self.top_call.get(agent_id).cloned() else {
            return Vec::new();
        };
        let lines = self.progress.entry(call.clone()).or_default();
        lines.push(line);
        if lines.len() > PROGRESS_LINES_MAX {
            let extra = lines.len() - PROGRESS_LINES_MAX;
            lines.drain(..extra);
        }
        let text = lines.join("\n");
        let fields = ToolCallUpdateFields::new()
            .status(ToolCallStatus::InProgress)
            .content(vec![text_content(&text)]);
        vec![SessionNotification::new(
            self.session_id.clone(),
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call, fields)),
        )]
    }
}

/// The id of child `agent_id`'s session under the editor session `session`.
pub fn child_session_id(session: &str, agent_id: &str) -> String {
    format!("{session}/{agent_id}")
}

/// The slash-command menu of a session: skills, custom commands and MCP
/// prompts, without their slashes.
pub fn commands_update(menu: &[CommandEntry]) -> SessionUpdate {
    let commands = menu
        .iter()
        .map(|c| {
            let mut command = AvailableCommand::new(c.name.clone(), c.description.clone());
            if let Some(hint) = &c.argument_hint {
                command = command.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(hint.clone()),
                ));
            }
            command
        })
        .collect();
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands))
}

/// A streamed piece of text.
pub fn text_chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

/// Text as a tool call's content.
fn text_content(text: &str) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::Text(TextContent::new(text)))
}

/// A result as shown: cut at [`SHOWN_RESULT_MAX`] on a character boundary.
pub fn shown_result(content: &str) -> String {
    if content.len() <= SHOWN_RESULT_MAX {
        return content.to_string();
    }
    let mut end = SHOWN_RESULT_MAX;
    while !content.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… {} more bytes]",
        &content[..end],
        content.len() - end
    )
}

/// A failed child's stop reason, with the error's text.
fn error_stop(message: &str) -> IdleStopReason {
    serde_json::from_value(serde_json::json!({
        "stopReason": "error",
        "message": message,
    }))
    .unwrap_or(IdleStopReason::EndTurn)
}

/// `completed` or `failed`.
fn status_of(is_error: bool) -> ToolCallStatus {
    if is_error {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    }
}

/// The editor's icon and grouping for a tool.
pub fn kind_of(tool: &str) -> ToolKind {
    match tool {
        "Read" | "NotebookRead" | "ReadMcpResourceTool" => ToolKind::Read,
        "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => ToolKind::Edit,
        "Bash" | "BashOutput" | "KillShell" | "TaskStop" => ToolKind::Execute,
        "Glob" | "Grep" | "LS" | "ListMcpResourcesTool" => ToolKind::Search,
        "WebFetch" | "WebSearch" => ToolKind::Fetch,
        "Agent" | "Task" | "Skill" | "TodoWrite" | "TaskOutput" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// What an edit changes, as a diff the editor can show.
fn diff_of(tool: &str, path: &Path, input: &Value) -> Option<Diff> {
    let text = |k: &str| input.get(k).and_then(Value::as_str).map(str::to_string);
    match tool {
        "Write" => Some(Diff::new(path.to_path_buf(), text("content")?)),
        "Edit" => {
            Some(Diff::new(path.to_path_buf(), text("new_string")?).old_text(text("old_string")))
        }
        _ => None,
    }
}

/// `TodoWrite`'s list as the session's plan (each one replaces the last).
fn plan_of(input: &Value) -> Option<SessionUpdate> {
    let todos = input.get("todos")?.as_array()?;
    let entries = todos
        .iter()
        .filter_map(|t| {
            let content = t.get("content")?.as_str()?;
            let status = match t.get("status").and_then(Value::as_str) {
                Some("in_progress") => PlanEntryStatus::InProgress,
                Some("completed") => PlanEntryStatus::Completed,
                _ => PlanEntryStatus::Pending,
            };
            Some(PlanEntry::new(content, PlanEntryPriority::Medium, status))
        })
        .collect();
    Some(SessionUpdate::Plan(Plan::new(entries)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_are_diffs_at_their_absolute_path_and_bash_executes() {
        let t = Translator::new("s", Path::new("/proj"), true);
        let input =
            serde_json::json!({"file_path": "src/a.rs", "old_string": "a", "new_string": "b"});
        let call = t.tool_call("c1", "Edit", &input, "src/a.rs", ToolCallStatus::Pending);
        let json = serde_json::to_value(&call).unwrap_or_default();
        assert_eq!(json["kind"], "edit");
        assert_eq!(json["locations"][0]["path"], "/proj/src/a.rs");
        assert_eq!(json["content"][0]["type"], "diff");
        assert_eq!(json["content"][0]["oldText"], "a");
        assert_eq!(json["content"][0]["newText"], "b");
        assert_eq!(kind_of("Bash"), ToolKind::Execute);
        assert_eq!(kind_of("mcp__s__t"), ToolKind::Other);
    }

    #[test]
    fn todo_write_is_the_plan() {
        let input = serde_json::json!({"todos": [
            {"content": "Read", "status": "completed"},
            {"content": "Fix", "status": "in_progress"},
        ]});
        let json = serde_json::to_value(plan_of(&input)).unwrap_or_default();
        assert_eq!(json["sessionUpdate"], "plan");
        assert_eq!(json["entries"][1]["status"], "in_progress");
    }

    #[test]
    fn a_long_result_is_cut_on_a_character_boundary() {
        let long = "é".repeat(SHOWN_RESULT_MAX);
        let shown = shown_result(&long);
        assert!(shown.len() < long.len());
        assert!(shown.ends_with("more bytes]"));
    }
}
