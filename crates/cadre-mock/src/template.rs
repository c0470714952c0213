//! Placeholders in scripted tool-call arguments that stand for values only
//! known at run time: `{{task_id}}` is the newest task id (`t-` and 12 hex
//! digits) in the request, `{{task_id:N}}` the N-th distinct one (from 0) in
//! order of first appearance. Lets a script stop or read a task it started.

use std::borrow::Cow;

use serde_json::Value;

use crate::script::Reply;

/// Task ids in `body`, distinct, in order of first appearance.
fn task_ids(body: &Value) -> Vec<String> {
    let text = body.to_string();
    let bytes = text.as_bytes();
    let mut ids: Vec<String> = Vec::new();
    let mut i = 0;
    while i + 14 <= bytes.len() {
        let boundary = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if boundary
            && &bytes[i..i + 2] == b"t-"
            && bytes[i + 2..i + 14]
                .iter()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            && bytes.get(i + 14).is_none_or(|b| !b.is_ascii_alphanumeric())
        {
            let id = &text[i..i + 14];
            if !ids.iter().any(|x| x == id) {
                ids.push(id.to_string());
            }
            i += 14;
        } else {
            i += 1;
        }
    }
    ids
}

fn fill(text: &str, ids: &[String]) -> String {
    let mut out = text.to_string();
    if let Some(last) = ids.last() {
        out = out.replace("{{task_id}}", last);
    }
    for (n, id) in ids.iter().enumerate() {
        out = out.replace(&format!("{{{{task_id:{n}}}}}"), id);
    }
    out
}

/// `reply` with its placeholders filled from `body`; unchanged when it has none.
pub fn with_task_ids<'a>(reply: &'a Reply, body: &Value) -> Cow<'a, Reply> {
    let uses = reply.tool_calls.iter().any(|tc| {
        tc.input_raw
            .as_deref()
            .is_some_and(|r| r.contains("{{task_id"))
            || tc
                .input
                .as_ref()
                .is_some_and(|v| v.to_string().contains("{{task_id"))
    });
    if !uses {
        return Cow::Borrowed(reply);
    }
    let ids = task_ids(body);
    let mut filled = reply.clone();
    for tc in &mut filled.tool_calls {
        if let Some(raw) = &tc.input_raw {
            tc.input_raw = Some(fill(raw, &ids));
        }
        if let Some(v) = &tc.input
            && let Ok(new) = serde_json::from_str(&fill(&v.to_string(), &ids))
        {
            tc.input = Some(new);
        }
    }
    Cow::Owned(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::ToolCall;

    #[test]
    fn placeholders_take_ids_from_the_request() {
        let body = serde_json::json!({"messages": [
            {"content": "launched in background: task t-0123456789ab (x)"},
            {"content": "task t-ba9876543210 and again t-0123456789ab; not t-123"}
        ]});
        let reply = Reply {
            tool_calls: vec![ToolCall {
                name: "TaskStop".into(),
                input: Some(
                    serde_json::json!({"task_id": "{{task_id}}", "other": "{{task_id:0}}"}),
                ),
                ..Default::default()
            }],
            ..Default::default()
        };
        let filled = with_task_ids(&reply, &body);
        let input = filled.tool_calls[0].input.clone().unwrap();
        assert_eq!(input["task_id"], "t-ba9876543210");
        assert_eq!(input["other"], "t-0123456789ab");
    }
}
