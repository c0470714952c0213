//! The event schema has no free strings where a closed set of values
//! belongs: every string field of every event is either an enum in the
//! schema or one of the free-text fields listed here (ids, names, paths,
//! text for people and models). A new string field fails this test until
//! it is made an enum or added to the list on purpose.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{Event, Op};

/// `variant.field` of every string field that holds free text.
const FREE_TEXT: &[&str] = &[
    "board_task_changed.blocked_by",
    "board_task_changed.subject",
    "board_task_changed.task_id",
    "team_message_sent.from",
    "team_message_sent.summary",
    "team_message_sent.to",
    "team_messages_delivered.to",
    "teammate_changed.agent_type",
    "teammate_changed.error",
    "teammate_changed.name",
    "interrupt_teammate.name",
    "message_teammate.name",
    "message_teammate.text",
    "stop_teammate.name",
    "shell.command",
    "shell_ran.command",
    "shell_ran.output",
    "approval_requested.question.input",
    "approval_requested.question.label",
    "approval_requested.question.reason",
    "approval_requested.question.sandbox",
    "approval_requested.question.session_rule",
    "approval_requested.question.tool",
    "approval_requested.question.call_id",
    "approval_answered.tool",
    "approval_answered.answer.instead",
    "assistant_message.text",
    "compaction_ended.error",
    "hook_ended.command",
    "hook_started.command",
    "hook_started.source",
    "mcp_server_status.message",
    "mcp_server_status.server",
    "message.model",
    "message.stop_reason",
    "model_changed.model",
    "retrying.reason",
    "rewound.prompt",
    "checkpoints.checkpoints.prompt",
    "checkpoints.checkpoints.files",
    "rewind_needs_confirmation.prompt",
    "rewind_needs_confirmation.files",
    "code_restored.prompt",
    "code_restored.restored",
    "code_restored.removed",
    "code_restored.skipped.path",
    "code_restored.bash_commands",
    "server_tool_used.call_id",
    "server_tool_used.error",
    "server_tool_used.query",
    "server_tool_used.results.title",
    "server_tool_used.results.url",
    "server_tool_used.tool",
    "session_resumed.session_id",
    "session_resumed.unknown_calls",
    "session_started.cwd",
    "session_started.model",
    "session_started.session_id",
    "subagent_backgrounded.task_id",
    "subagent_ended.agent_type",
    "subagent_ended.error",
    "subagent_ended.worktree",
    "subagent_progress.agent_type",
    "subagent_progress.summary",
    "subagent_progress.tool",
    "subagent_progress.path.agent_type",
    "subagent_started.agent_type",
    "subagent_started.color",
    "subagent_started.description",
    "subagent_started.model",
    "subagent_started.path.agent_type",
    "task_ended.description",
    "task_ended.task_id",
    "task_started.description",
    "task_started.task_id",
    "tasks_notified.task_ids",
    "text_delta.text",
    "tool_call_denied.call_id",
    "tool_call_denied.reason",
    "tool_call_denied.tool",
    "tool_call_ended.call_id",
    "tool_call_ended.outcome",
    "tool_call_ended.summary",
    "tool_call_ended.tool",
    "tool_call_started.call_id",
    "tool_call_started.summary",
    "tool_call_started.tool",
    "turn_ended.error",
    "turn_ended.final_text",
    "warning.message",
    // Ops.
    "user_message.text",
    "user_message_with_images.images",
    "user_message_with_images.text",
    "stop_task.task_id",
    "compact.focus",
    "rewind.prompt",
    "set_model.model",
    "approval_answer.answer.instead",
];

/// Follows `$ref`s into the schema's definitions.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.rsplit('/').next().unwrap_or_default();
            root.get("$defs")
                .and_then(|d| d.get(name))
                .unwrap_or(schema)
        }
        None => schema,
    }
}

/// Whether a (resolved) schema is a string with no closed set of values.
fn free_string(schema: &Value) -> bool {
    let is_string = match schema.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
        _ => false,
    };
    is_string && schema.get("enum").is_none() && schema.get("const").is_none()
}

/// Collects `prefix.field` for each free string under `schema`.
fn walk(root: &Value, schema: &Value, prefix: &str, out: &mut BTreeSet<String>, depth: usize) {
    if depth > 8 {
        return;
    }
    let schema = resolve(root, schema);
    if free_string(schema) {
        out.insert(prefix.to_string());
        return;
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        for s in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            walk(root, s, prefix, out, depth + 1);
        }
    }
    if let Some(items) = schema.get("items") {
        walk(root, items, prefix, out, depth + 1);
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, s) in props {
            // An internally tagged enum's tag is a constant, not a field.
            if name == "type" || name == "op" {
                continue;
            }
            walk(root, s, &format!("{prefix}.{name}"), out, depth + 1);
        }
    }
}

/// Every variant's free strings, as `variant.field`.
fn free_strings(schema: &Value, tag: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for variant in schema
        .get("oneOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let variant = resolve(schema, variant);
        let name = variant
            .pointer(&format!("/properties/{tag}/const"))
            .and_then(Value::as_str)
            .unwrap_or("?");
        walk(schema, variant, name, &mut out, 0);
    }
    out
}

#[test]
fn no_event_or_op_field_is_a_free_string_unless_it_is_free_text() {
    let events = serde_json::to_value(schemars::schema_for!(Event)).unwrap_or_default();
    let ops = serde_json::to_value(schemars::schema_for!(Op)).unwrap_or_default();
    let mut found = free_strings(&events, "type");
    found.extend(free_strings(&ops, "op"));
    // Agent ids are AgentId: a string on the wire, checked by its type.
    found.retain(|f| !f.ends_with(".agent") && !f.ends_with(".agent_id") && !f.ends_with(".owner"));
    let allowed: BTreeSet<String> = FREE_TEXT.iter().map(|s| s.to_string()).collect();
    let unexpected: Vec<&String> = found.difference(&allowed).collect();
    assert!(
        unexpected.is_empty(),
        "string fields that should be enums (or listed as free text): {unexpected:#?}"
    );
    // The list names only fields that exist, so it stays the exact set.
    let stale: Vec<&String> = allowed.difference(&found).collect();
    assert!(
        stale.is_empty(),
        "listed as free text but not in the schema: {stale:#?}"
    );
}

#[test]
fn agent_ids_statuses_and_decisions_are_typed_in_the_schema() {
    let events = serde_json::to_value(schemars::schema_for!(Event)).unwrap_or_default();
    let text = events.to_string();
    for name in [
        "AgentId",
        "HookDecision",
        "HookEvent",
        "McpStatus",
        "TurnStatus",
        "ChildCallOutcome",
        "PermissionMode",
        "Provider",
    ] {
        assert!(text.contains(name), "{name} is in the event schema");
    }
}
