//! The check that every tool call in a recorded request is answered by
//! exactly one result, in the place the real APIs require. Tests of cadre
//! run it on every request they record.

use std::collections::HashSet;

use serde_json::Value;

/// What is wrong with the pairing of tool calls and results in a request
/// body (Anthropic Messages or OpenAI Chat Completions), as the real APIs
/// check it: the results of an assistant message's calls come in the very
/// next message (Anthropic: a user message, results first) or the run of
/// `tool` messages right after it (OpenAI), one per call, none for a call
/// made elsewhere. Empty when the body is well formed.
pub fn tool_pairing_errors(body: &Value) -> Vec<String> {
    let Some(messages) = body["messages"].as_array() else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    // Ids of the calls the previous assistant message made and that the
    // results after it must answer, once each.
    let mut open: Vec<String> = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        let blocks = m["content"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        match m["role"].as_str() {
            Some("assistant") => {
                let mut calls: Vec<String> = blocks
                    .iter()
                    .filter(|b| b["type"] == "tool_use")
                    .map(|b| b["id"].as_str().unwrap_or("").to_string())
                    .collect();
                calls.extend(
                    m["tool_calls"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|c| c["id"].as_str().unwrap_or("").to_string()),
                );
                let mut seen = HashSet::new();
                for id in &calls {
                    if !seen.insert(id) {
                        errors.push(format!("message {i}: call id {id:?} used twice"));
                    }
                }
                open = calls;
                if !open.is_empty() && i + 1 == messages.len() {
                    errors.push(format!("message {i}: calls {open:?} are the last message"));
                }
                i += 1;
            }
            Some("tool") => {
                // OpenAI: the run of tool messages that follows the calls.
                let mut answered = Vec::new();
                while i < messages.len() && messages[i]["role"] == "tool" {
                    answered.push(
                        messages[i]["tool_call_id"]
                            .as_str()
                            .unwrap_or("")
                            .to_string(),
                    );
                    i += 1;
                }
                errors.extend(match_results(i, &std::mem::take(&mut open), &answered));
            }
            Some("user") => {
                let results: Vec<String> = blocks
                    .iter()
                    .filter(|b| b["type"] == "tool_result")
                    .map(|b| b["tool_use_id"].as_str().unwrap_or("").to_string())
                    .collect();
                if !results.is_empty() || !open.is_empty() {
                    errors.extend(match_results(i, &std::mem::take(&mut open), &results));
                }
                if let Some(first_other) = blocks.iter().position(|b| b["type"] != "tool_result")
                    && blocks[first_other..]
                        .iter()
                        .any(|b| b["type"] == "tool_result")
                {
                    errors.push(format!("message {i}: a tool_result after other content"));
                }
                i += 1;
            }
            _ => {
                errors.extend(match_results(i, &std::mem::take(&mut open), &[]));
                i += 1;
            }
        }
    }
    errors
}

/// Checks that `results` (ids, in the message at `at` or the tool run ending
/// there) answer the `calls` just made, each exactly once.
fn match_results(at: usize, calls: &[String], results: &[String]) -> Vec<String> {
    let mut errors = Vec::new();
    for id in calls {
        let n = results.iter().filter(|r| *r == id).count();
        if n != 1 {
            errors.push(format!("message {at}: call {id:?} has {n} results"));
        }
    }
    for id in results {
        if !calls.contains(id) {
            errors.push(format!(
                "message {at}: result for {id:?}, which the message before did not call"
            ));
        }
    }
    errors
}
