//! A model that sends the same failing call again and again: after a few in
//! a row it is told so plainly, and after a few more the turn ends, instead
//! of the loop running until a request or tool-call limit.

use crate::model::{ContentBlock, ToolCall};
use crate::tools::parse_input;
use serde_json::Value;

/// Identical failed calls in a row after which the model is told.
pub(super) const TELL_AFTER: u32 = 3;
/// Identical failed calls in a row after which the turn ends.
pub(super) const STOP_AFTER: u32 = 5;

/// One call and how it failed: the same tool, the same arguments (as
/// parsed, so spacing and key order do not matter), the same error text.
#[derive(Debug, Clone, PartialEq)]
struct FailedCall {
    tool: String,
    arguments: Value,
    error: String,
}

/// The current run of identical failed calls within a turn.
#[derive(Debug, Default)]
pub(super) struct RepeatedFailures {
    last: Option<FailedCall>,
    count: u32,
}

/// What a reply's results did to the run.
#[derive(Debug, PartialEq)]
pub(super) enum Repeats {
    /// Nothing to say.
    None,
    /// The model should be told (the text to add after the results).
    Tell(String),
    /// The turn ends (the note for the model, and the turn's error).
    Stop { note: String, error: String },
}

impl RepeatedFailures {
    /// Takes a reply's calls and their results, in the order asked.
    pub(super) fn observe(&mut self, calls: &[ToolCall], results: &[ContentBlock]) -> Repeats {
        for (call, result) in calls.iter().zip(results) {
            let ContentBlock::ToolResult {
                content, is_error, ..
            } = result
            else {
                continue;
            };
            if !is_error {
                self.last = None;
                self.count = 0;
                continue;
            }
            let failed = FailedCall {
                tool: call.name.clone(),
                arguments: parse_input(&call.input)
                    .map(Value::Object)
                    .unwrap_or_else(|_| Value::String(call.input.clone())),
                error: content.clone(),
            };
            if self.last.as_ref() == Some(&failed) {
                self.count += 1;
            } else {
                self.last = Some(failed);
                self.count = 1;
            }
        }
        let Some(last) = &self.last else {
            return Repeats::None;
        };
        let n = self.count;
        if n >= STOP_AFTER {
            let error = format!(
                "the model made the same failing {} call {n} times in a row (same arguments, same error); the turn was stopped",
                last.tool
            );
            let note = format!(
                "<system-reminder>You made the same {} call with the same arguments {n} times in a row and it failed the same way each time, so the turn was stopped. Do not send it again: change the arguments, or take another approach.</system-reminder>",
                last.tool
            );
            Repeats::Stop { note, error }
        } else if n >= TELL_AFTER {
            Repeats::Tell(format!(
                "<system-reminder>You have made the same {} call with the same arguments {n} times in a row, and it failed the same way each time. Sending it again will fail again: change the arguments, or take another approach. After {STOP_AFTER} such calls the turn is stopped.</system-reminder>",
                last.tool
            ))
        } else {
            Repeats::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(input: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: "Read".into(),
            input: input.into(),
        }
    }

    fn result(text: &str, is_error: bool) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: "c".into(),
            content: text.into(),
            is_error,
            images: Vec::new(),
        }
    }

    #[test]
    fn three_identical_failures_tell_and_five_stop() {
        let mut r = RepeatedFailures::default();
        let c = [call(r#"{"file_path": "a", "limit": 1}"#)];
        let e = [result("no such file", true)];
        assert_eq!(r.observe(&c, &e), Repeats::None);
        // Key order and spacing are not a different call.
        let reordered = [call(r#"{"limit":1,"file_path":"a"}"#)];
        assert_eq!(r.observe(&reordered, &e), Repeats::None);
        assert!(matches!(r.observe(&c, &e), Repeats::Tell(t) if t.contains("3 times")));
        assert!(matches!(r.observe(&c, &e), Repeats::Tell(_)));
        assert!(
            matches!(r.observe(&c, &e), Repeats::Stop { error, .. } if error.contains("5 times"))
        );
    }

    #[test]
    fn a_success_another_error_or_other_arguments_break_the_run() {
        let mut r = RepeatedFailures::default();
        let c = call(r#"{"file_path": "a"}"#);
        let e = result("no such file", true);
        // Within one reply too: five identical failures, one success between.
        let calls = vec![c.clone(), c.clone(), call("{}"), c.clone(), c.clone()];
        let mut results = vec![e.clone(); 5];
        results[2] = result("ok", false);
        assert_eq!(r.observe(&calls, &results), Repeats::None);
        assert_eq!(
            r.observe(std::slice::from_ref(&c), &[result("another error", true)]),
            Repeats::None
        );
        assert_eq!(
            r.observe(&[call(r#"{"file_path": "b"}"#)], std::slice::from_ref(&e)),
            Repeats::None
        );
    }
}
