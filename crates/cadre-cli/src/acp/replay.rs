//! `session/load`: a session's whole history as the notifications an
//! editor needs to show it again: the user's messages, the replies, every
//! tool call with its result, where the conversation was compacted, and
//! (with child sessions) each child's own conversation under its own id.

use std::collections::HashMap;
use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentBlock as AcpBlock, IdleStateUpdate, IdleStopReason, SessionNotification, SessionUpdate,
    StateUpdate, SubagentUpdate, TextContent, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};
use cadre_core::model::ContentBlock;
use cadre_core::session::{LogRecord, RecordBody, read_log, session_path, sessions_dir};
use cadre_core::tasks::{TaskFilter, TaskKind, TaskTable};

use super::updates::{Translator, child_session_id, text_chunk};

/// The notifications that show session `id` as its logs hold it.
pub async fn history(
    home: &Path,
    id: &str,
    cwd: &Path,
    child_sessions: bool,
) -> anyhow::Result<Vec<SessionNotification>> {
    let main = read_log(&session_path(home, id)?)?;
    let translator = Translator::new(id, cwd, child_sessions);
    let mut out = records_on(&translator, id, &main.records);
    if !child_sessions {
        // Without child sessions a child's work is its report, already
        // shown as its call's result.
        return Ok(out);
    }
    // Each child's description and parent, from the task table.
    let mut known: HashMap<String, (String, String)> = HashMap::new();
    if let Ok(table) = TaskTable::open(home).await {
        let rows = table
            .list(&TaskFilter {
                session_id: Some(id.to_string()),
                ..Default::default()
            })
            .await
            .unwrap_or_default();
        for row in rows.into_iter().filter(|r| r.kind == TaskKind::Subagent) {
            if let Some(agent_id) = saved_agent_id(&row.output_path) {
                known.insert(agent_id, (row.description, row.parent_agent));
            }
        }
    }
    let dir = sessions_dir(home).join(format!("{id}.agents"));
    let mut children: Vec<(u64, String, Vec<LogRecord>)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let agent_id = path
                .file_name()?
                .to_str()?
                .strip_suffix(".jsonl")?
                .to_string();
            let records = read_log(&path).ok()?.records;
            let started = records.first().map_or(0, |r| r.time_ms);
            Some((started, agent_id, records))
        })
        .collect();
    children.sort_by_key(|c| c.0);
    for (_, agent_id, records) in children {
        let child_session = child_session_id(id, &agent_id);
        let (title, parent) = known
            .get(&agent_id)
            .cloned()
            .unwrap_or_else(|| (agent_id.clone(), cadre_core::protocol::MAIN_AGENT.into()));
        let parent_session = if parent == cadre_core::protocol::MAIN_AGENT {
            id.to_string()
        } else {
            child_session_id(id, &parent)
        };
        out.push(SessionNotification::new(
            parent_session,
            SessionUpdate::SubagentUpdate(
                SubagentUpdate::new(child_session.clone())
                    .title(title)
                    .cwd(cwd.to_path_buf())
                    .state(StateUpdate::Idle(
                        IdleStateUpdate::new().stop_reason(IdleStopReason::EndTurn),
                    )),
            ),
        ));
        out.extend(records_on(&translator, &child_session, &records));
    }
    Ok(out)
}

/// The id `cadre` saved beside a child task's output.
fn saved_agent_id(output_path: &Path) -> Option<String> {
    let bytes = std::fs::read(output_path.with_file_name("agent.json")).ok()?;
    let saved: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    saved
        .get("agent_id")
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

/// One log's records as notifications of `session`.
fn records_on(
    translator: &Translator,
    session: &str,
    records: &[LogRecord],
) -> Vec<SessionNotification> {
    let mut out = Vec::new();
    let mut push = |update| out.push(SessionNotification::new(session.to_string(), update));
    for record in records {
        match &record.body {
            RecordBody::User { text } => {
                push(SessionUpdate::UserMessageChunk(text_chunk(text)));
            }
            RecordBody::Assistant { message, .. } => {
                for block in message.content.iter() {
                    match block {
                        ContentBlock::Text { text } if !text.trim().is_empty() => {
                            push(SessionUpdate::AgentMessageChunk(text_chunk(text)));
                        }
                        ContentBlock::ToolUse { id, name, input } => {
                            let input: serde_json::Value = serde_json::from_str(input)
                                .unwrap_or_else(|_| serde_json::Value::String(input.clone()));
                            let summary = cadre_core::agent::argument_summary(name, &input);
                            push(SessionUpdate::ToolCall(
                                translator.replayed_call(id, name, &input, &summary),
                            ));
                        }
                        _ => {}
                    }
                }
            }
            RecordBody::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                let status = if *is_error {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                let fields = ToolCallUpdateFields::new().status(status).content(vec![
                    ToolCallContent::from(AcpBlock::Text(TextContent::new(
                        super::updates::shown_result(content),
                    ))),
                ]);
                push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    call_id.clone(),
                    fields,
                )));
            }
            RecordBody::CompactBoundary { summary, .. } => {
                push(SessionUpdate::AgentThoughtChunk(text_chunk(&format!(
                    "The conversation was compacted here. Its summary:\n{summary}"
                ))));
            }
            _ => {}
        }
    }
    out
}
