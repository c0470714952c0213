//! Folding the runs of one event's hooks into one outcome, with Claude
//! Code's semantics: exit 0 (stdout JSON read), exit 2 (block, stderr is the
//! reason), any other code a non-blocking error shown to the user.

use serde_json::{Map, Value};

use super::run::HookRun;
use super::{HookEvent, cap_chars};
use crate::protocol::HookDecision;

/// Lines of a failing hook's stderr quoted in its message.
const STDERR_LINES: usize = 5;
/// Characters of a command quoted in messages.
const COMMAND_CHARS: usize = 80;

/// A `PreToolUse` hook's permission decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PermissionVerdict {
    /// Run the tool without asking (never overrides a deny or ask rule).
    Allow,
    /// Ask the user.
    Ask,
    /// Refuse the call.
    Deny,
}

/// The combined outcome of an event's runs (Claude Code's semantics).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookOutcome {
    /// Blocked (exit 2, `decision: "block"`, `PreToolUse` `permissionDecision:
    /// "deny"`): the reason (stderr of an exit-2 hook, or the JSON reason),
    /// one line per blocking hook. For `PreToolUse` a block is also a `Deny`
    /// in `permission`.
    pub block: Option<String>,
    /// `PreToolUse` only: the strongest decision (deny > ask > allow) with
    /// its reason; "defer" counts as none.
    pub permission: Option<(PermissionVerdict, Option<String>)>,
    /// `PreToolUse` `hookSpecificOutput.updatedInput` (the last hook's wins).
    pub updated_input: Option<Value>,
    /// `hookSpecificOutput.additionalContext` of every hook, plus plain stdout
    /// of successful hooks for `SessionStart` and `UserPromptSubmit`.
    pub additional_context: Vec<String>,
    /// `continue: false`: stop the agent, with the `stopReason` (for the user).
    pub stop: Option<String>,
    /// `systemMessage`s and non-blocking errors: for the user, never the model.
    pub messages: Vec<String>,
}

impl HookOutcome {
    /// Folds the runs of `event`'s hooks, in order.
    pub fn from_runs(event: HookEvent, runs: &[HookRun]) -> HookOutcome {
        let mut outcome = HookOutcome::default();
        let mut blocks = Vec::new();
        for run in runs {
            outcome.add(event, run, &mut blocks);
        }
        if !blocks.is_empty() {
            outcome.block = Some(blocks.join("\n"));
        }
        outcome
    }

    /// How one run is summarised for a `hook_ended` event: "allow", "deny",
    /// "ask", "block", "stop" (`continue: false`), "continue" (no decision),
    /// "error" or "timeout".
    pub fn decision_of(event: HookEvent, run: &HookRun) -> HookDecision {
        if run.timed_out {
            return HookDecision::Timeout;
        }
        if run.start_error.is_some() || run.cancelled {
            return HookDecision::Error;
        }
        let outcome = HookOutcome::from_runs(event, std::slice::from_ref(run));
        if outcome.stop.is_some() {
            return HookDecision::Stop;
        }
        match outcome.permission {
            Some((PermissionVerdict::Deny, _)) => return HookDecision::Deny,
            Some((PermissionVerdict::Ask, _)) => return HookDecision::Ask,
            Some((PermissionVerdict::Allow, _)) => return HookDecision::Allow,
            None => {}
        }
        if outcome.block.is_some() {
            return HookDecision::Block;
        }
        if run.exit_code != Some(0) || parse_stdout(run).is_err() {
            return HookDecision::Error;
        }
        HookDecision::Continue
    }

    /// Adds one run's effect; block reasons go to `blocks`.
    fn add(&mut self, event: HookEvent, run: &HookRun, blocks: &mut Vec<String>) {
        let name = short_command(&run.command);
        if let Some(e) = &run.start_error {
            self.messages
                .push(format!("hook `{name}` could not start: {e}"));
            return;
        }
        if run.timed_out {
            self.messages.push(format!(
                "hook `{name}` timed out after {} s and was stopped",
                run.timeout.as_secs_f64()
            ));
            return;
        }
        if run.cancelled {
            self.messages.push(format!("hook `{name}` was interrupted"));
            return;
        }
        let json = match parse_stdout(run) {
            Ok(json) => json,
            Err(e) => {
                self.messages
                    .push(format!("hook `{name}` printed invalid JSON: {e}"));
                None
            }
        };
        match run.exit_code {
            Some(0) => {
                let plain = run.stdout.trim();
                if !plain.is_empty() && !plain.starts_with('{') && event.plain_stdout_is_context() {
                    self.additional_context.push(cap_chars(plain));
                }
            }
            Some(2) => {
                let stderr = run.stderr.trim();
                let reason = if stderr.is_empty() {
                    format!("blocked by hook `{name}`")
                } else {
                    cap_chars(stderr)
                };
                if event.can_block() {
                    self.block_with(event, reason, blocks);
                } else {
                    self.messages.push(format!(
                        "hook `{name}` exited with code 2, but {event} cannot be blocked: {reason}"
                    ));
                }
            }
            code => {
                let how = match code {
                    Some(code) => format!("failed with exit code {code}"),
                    None => "failed".to_string(),
                };
                let head = first_lines(&run.stderr);
                self.messages.push(if head.is_empty() {
                    format!("hook `{name}` {how}")
                } else {
                    format!("hook `{name}` {how}: {head}")
                });
            }
        }
        if let Some(Value::Object(fields)) = json {
            self.apply_json(event, &name, &fields, blocks);
        }
    }

    /// Applies a hook's JSON output.
    fn apply_json(
        &mut self,
        event: HookEvent,
        name: &str,
        fields: &Map<String, Value>,
        blocks: &mut Vec<String>,
    ) {
        let text = |key: &str| {
            fields
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
                .map(cap_chars)
        };
        if fields.get("continue") == Some(&Value::Bool(false)) && self.stop.is_none() {
            self.stop =
                Some(text("stopReason").unwrap_or_else(|| format!("stopped by hook `{name}`")));
        }
        if let Some(message) = text("systemMessage") {
            self.messages.push(message);
        }
        match fields.get("decision").and_then(Value::as_str) {
            Some("block") if event.can_block() => {
                let reason = text("reason").unwrap_or_else(|| format!("blocked by hook `{name}`"));
                self.block_with(event, reason, blocks);
            }
            Some("block") => self.messages.push(format!(
                "hook `{name}` asked to block, but {event} cannot be blocked"
            )),
            // The deprecated spelling of a PreToolUse allow.
            Some("approve") if event == HookEvent::PreToolUse => {
                self.decide(PermissionVerdict::Allow, text("reason"));
            }
            _ => {}
        }
        let Some(specific) = fields.get("hookSpecificOutput") else {
            return;
        };
        let Some(specific) = specific.as_object() else {
            self.messages.push(format!(
                "hook `{name}`: `hookSpecificOutput` is not an object; ignored"
            ));
            return;
        };
        if specific.get("hookEventName").and_then(Value::as_str) != Some(event.name()) {
            self.messages.push(format!(
                "hook `{name}`: `hookSpecificOutput` ignored, its `hookEventName` is not \"{event}\""
            ));
            return;
        }
        let text = |key: &str| {
            specific
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
                .map(cap_chars)
        };
        if event == HookEvent::PreToolUse {
            let reason = text("permissionDecisionReason");
            match specific.get("permissionDecision").and_then(Value::as_str) {
                Some("allow") => self.decide(PermissionVerdict::Allow, reason),
                Some("ask") => self.decide(PermissionVerdict::Ask, reason),
                Some("deny") => {
                    let reason = reason.unwrap_or_else(|| format!("denied by hook `{name}`"));
                    self.block_with(event, reason, blocks);
                }
                // "defer" leaves the decision to the usual rules.
                None | Some("defer") => {}
                Some(other) => self.messages.push(format!(
                    "hook `{name}`: unknown permissionDecision \"{other}\"; ignored"
                )),
            }
            match specific.get("updatedInput") {
                None | Some(Value::Null) => {}
                Some(input @ Value::Object(_)) => self.updated_input = Some(input.clone()),
                Some(_) => self.messages.push(format!(
                    "hook `{name}`: `updatedInput` is not an object; ignored"
                )),
            }
        }
        if let Some(context) = text("additionalContext") {
            self.additional_context.push(context);
        }
    }

    /// Records a block; at `PreToolUse` it is a deny as well.
    fn block_with(&mut self, event: HookEvent, reason: String, blocks: &mut Vec<String>) {
        if event == HookEvent::PreToolUse {
            self.decide(PermissionVerdict::Deny, Some(reason.clone()));
        }
        blocks.push(reason);
    }

    /// Keeps the stronger of the current decision and `verdict` (the first
    /// of equal ones).
    fn decide(&mut self, verdict: PermissionVerdict, reason: Option<String>) {
        if self.permission.as_ref().is_none_or(|(v, _)| verdict > *v) {
            self.permission = Some((verdict, reason));
        }
    }
}

/// The run's stdout as JSON when it looks like JSON (starts with `{`);
/// `Err` when it looks like JSON but is not.
fn parse_stdout(run: &HookRun) -> Result<Option<Value>, String> {
    let out = run.stdout.trim();
    if !out.starts_with('{') {
        return Ok(None);
    }
    serde_json::from_str::<Value>(out)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// The command as quoted in messages: its first line, shortened.
fn short_command(command: &str) -> String {
    let line = command.trim().lines().next().unwrap_or("");
    let mut short: String = line.chars().take(COMMAND_CHARS).collect();
    if short.len() < command.trim().len() {
        short.push('…');
    }
    short
}

/// The first lines of a hook's stderr, for an error message.
fn first_lines(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.trim().lines().collect();
    let mut head = lines
        .iter()
        .take(STDERR_LINES)
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    if lines.len() > STDERR_LINES {
        head.push_str("\n…");
    }
    cap_chars(&head)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::hooks::run::tests::hook;
    use crate::hooks::run_hooks;

    /// A finished run of `command` (a name only) with this exit and output.
    fn ran(command: &str, code: i32, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            command: command.to_string(),
            source: "test".to_string(),
            exit_code: Some(code),
            stdout: stdout.to_string(),
            stderr: stderr.to_string(),
            timeout: Duration::from_secs(600),
            ..HookRun::default()
        }
    }

    fn pre(decision: &str, reason: &str) -> String {
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": decision, "permissionDecisionReason": reason}})
        .to_string()
    }

    #[test]
    fn exit_2_blocks_with_stderr() {
        let runs = [ran("guard", 2, "", "  no rm -rf please \n")];
        let o = HookOutcome::from_runs(HookEvent::PreToolUse, &runs);
        assert_eq!(o.block.as_deref(), Some("no rm -rf please"));
        assert_eq!(
            o.permission,
            Some((PermissionVerdict::Deny, Some("no rm -rf please".into())))
        );
        assert_eq!(
            HookOutcome::decision_of(HookEvent::PreToolUse, &runs[0]),
            HookDecision::Deny
        );

        let o = HookOutcome::from_runs(HookEvent::Stop, &[ran("guard", 2, "", "")]);
        assert_eq!(o.block.as_deref(), Some("blocked by hook `guard`"));
        assert_eq!(o.permission, None);
        assert_eq!(
            HookOutcome::decision_of(HookEvent::Stop, &ran("g", 2, "", "")),
            HookDecision::Block
        );

        // Events that cannot block only show it.
        let o = HookOutcome::from_runs(HookEvent::SessionStart, &[ran("g", 2, "", "nope")]);
        assert_eq!(o.block, None);
        assert_eq!(
            o.messages,
            ["hook `g` exited with code 2, but SessionStart cannot be blocked: nope"]
        );
        // A JSON allow does not override exit 2.
        let o = HookOutcome::from_runs(
            HookEvent::PreToolUse,
            &[ran("g", 2, &pre("allow", "fine"), "stop")],
        );
        assert_eq!(
            o.permission,
            Some((PermissionVerdict::Deny, Some("stop".into())))
        );
    }

    #[test]
    fn other_codes_are_messages() {
        let stderr = "line1\nline2\nline3\nline4\nline5\nline6\n";
        let run = ran("lint.sh", 1, "", stderr);
        let o = HookOutcome::from_runs(HookEvent::PostToolUse, std::slice::from_ref(&run));
        assert_eq!(o.block, None);
        assert_eq!(
            o.messages,
            ["hook `lint.sh` failed with exit code 1: line1\nline2\nline3\nline4\nline5\n…"]
        );
        assert_eq!(
            HookOutcome::decision_of(HookEvent::PostToolUse, &run),
            HookDecision::Error
        );

        let timed_out = HookRun {
            timed_out: true,
            exit_code: None,
            timeout: Duration::from_secs(2),
            ..ran("slow", 0, "", "")
        };
        let failed = HookRun {
            start_error: Some("no shell".into()),
            exit_code: None,
            ..ran("x", 0, "", "")
        };
        let bad_json = ran("j", 0, "{not json", "");
        let o = HookOutcome::from_runs(
            HookEvent::PreToolUse,
            &[timed_out.clone(), failed.clone(), bad_json.clone()],
        );
        assert_eq!(o.permission, None);
        assert_eq!(o.block, None);
        assert_eq!(o.messages.len(), 3, "{:?}", o.messages);
        assert_eq!(
            o.messages[0],
            "hook `slow` timed out after 2 s and was stopped"
        );
        assert_eq!(o.messages[1], "hook `x` could not start: no shell");
        assert!(o.messages[2].starts_with("hook `j` printed invalid JSON: "));
        assert_eq!(
            HookOutcome::decision_of(HookEvent::PreToolUse, &timed_out),
            HookDecision::Timeout
        );
        assert_eq!(
            HookOutcome::decision_of(HookEvent::PreToolUse, &failed),
            HookDecision::Error
        );
        assert_eq!(
            HookOutcome::decision_of(HookEvent::PreToolUse, &bad_json),
            HookDecision::Error
        );
    }

    #[test]
    fn permission_decisions_combine() {
        let event = HookEvent::PreToolUse;
        let allow = ran("a", 0, &pre("allow", "ok"), "");
        let ask = ran("b", 0, &pre("ask", "sure?"), "");
        let deny = ran("c", 0, &pre("deny", "never"), "");
        let defer = ran("d", 0, &pre("defer", ""), "");

        let o = HookOutcome::from_runs(event, &[allow.clone(), defer.clone()]);
        assert_eq!(
            o.permission,
            Some((PermissionVerdict::Allow, Some("ok".into())))
        );
        assert_eq!(o.block, None);
        let o = HookOutcome::from_runs(event, &[allow.clone(), ask.clone()]);
        assert_eq!(
            o.permission,
            Some((PermissionVerdict::Ask, Some("sure?".into())))
        );
        let o = HookOutcome::from_runs(event, &[deny.clone(), ask.clone(), allow.clone()]);
        assert_eq!(
            o.permission,
            Some((PermissionVerdict::Deny, Some("never".into())))
        );
        assert_eq!(o.block.as_deref(), Some("never"));
        let o = HookOutcome::from_runs(event, std::slice::from_ref(&defer));
        assert_eq!(o.permission, None);

        assert_eq!(HookOutcome::decision_of(event, &allow), HookDecision::Allow);
        assert_eq!(HookOutcome::decision_of(event, &ask), HookDecision::Ask);
        assert_eq!(HookOutcome::decision_of(event, &deny), HookDecision::Deny);
        assert_eq!(
            HookOutcome::decision_of(event, &defer),
            HookDecision::Continue
        );

        // The deprecated top-level decision.
        let old = ran("e", 0, r#"{"decision": "approve", "reason": "fine"}"#, "");
        let o = HookOutcome::from_runs(event, &[old]);
        assert_eq!(
            o.permission,
            Some((PermissionVerdict::Allow, Some("fine".into())))
        );
        let old = ran("e", 0, r#"{"decision": "block", "reason": "bad"}"#, "");
        let o = HookOutcome::from_runs(event, &[old]);
        assert_eq!(
            o.permission,
            Some((PermissionVerdict::Deny, Some("bad".into())))
        );
        assert_eq!(o.block.as_deref(), Some("bad"));
    }

    #[test]
    fn updated_input_and_context() {
        let event = HookEvent::PreToolUse;
        let first = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "updatedInput": {"command": "ls"}, "additionalContext": "ctx one"}});
        let second = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "allow", "updatedInput": {"command": "ls -la"}}});
        let wrong = json!({"hookSpecificOutput": {"hookEventName": "PostToolUse",
            "additionalContext": "not for here"}});
        let o = HookOutcome::from_runs(
            event,
            &[
                ran("a", 0, &first.to_string(), ""),
                ran("b", 0, &second.to_string(), ""),
                ran("c", 0, &wrong.to_string(), ""),
            ],
        );
        assert_eq!(o.updated_input, Some(json!({"command": "ls -la"})));
        assert_eq!(o.additional_context, ["ctx one"]);
        assert_eq!(
            o.messages,
            ["hook `c`: `hookSpecificOutput` ignored, its `hookEventName` is not \"PreToolUse\""]
        );

        // PostToolUse: block reason and context both kept.
        let post = json!({"decision": "block", "reason": "tests fail",
            "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "see log"}});
        let o = HookOutcome::from_runs(
            HookEvent::PostToolUse,
            &[ran("p", 0, &post.to_string(), "")],
        );
        assert_eq!(o.block.as_deref(), Some("tests fail"));
        assert_eq!(o.additional_context, ["see log"]);
        assert_eq!(o.permission, None);
    }

    #[test]
    fn plain_stdout_is_context_only_for_session_start_and_prompts() {
        let run = ran("a", 0, "branch: main\n", "");
        for event in HookEvent::ALL {
            let o = HookOutcome::from_runs(event, std::slice::from_ref(&run));
            let expected: &[&str] =
                if matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit) {
                    &["branch: main"]
                } else {
                    &[]
                };
            assert_eq!(o.additional_context, expected, "{event}");
            assert!(o.messages.is_empty());
            assert_eq!(
                HookOutcome::decision_of(event, &run),
                HookDecision::Continue
            );
        }
        // Not for failed hooks.
        let o = HookOutcome::from_runs(HookEvent::SessionStart, &[ran("a", 1, "ctx", "")]);
        assert!(o.additional_context.is_empty());
    }

    #[test]
    fn continue_false_and_system_message() {
        let out = json!({"continue": false, "stopReason": "budget spent",
            "systemMessage": "heads up", "suppressOutput": true});
        let run = ran("a", 0, &out.to_string(), "");
        let o = HookOutcome::from_runs(HookEvent::PostToolUse, std::slice::from_ref(&run));
        assert_eq!(o.stop.as_deref(), Some("budget spent"));
        assert_eq!(o.messages, ["heads up"]);
        assert_eq!(
            HookOutcome::decision_of(HookEvent::PostToolUse, &run),
            HookDecision::Stop
        );
        let o = HookOutcome::from_runs(
            HookEvent::Stop,
            &[ran("quit", 0, r#"{"continue": false}"#, "")],
        );
        assert_eq!(o.stop.as_deref(), Some("stopped by hook `quit`"));
    }

    #[test]
    fn output_strings_are_capped() {
        let long = "r".repeat(20_000);
        let out = json!({"decision": "block", "reason": long});
        let o = HookOutcome::from_runs(HookEvent::Stop, &[ran("a", 0, &out.to_string(), "")]);
        assert_eq!(o.block.map(|b| b.chars().count()), Some(10_001));
        let o = HookOutcome::from_runs(HookEvent::Stop, &[ran("a", 2, "", &long)]);
        assert_eq!(o.block.map(|b| b.chars().count()), Some(10_001));
    }

    /// Real processes through to the outcome.
    #[tokio::test]
    async fn end_to_end() {
        let dir = tempfile::tempdir().expect("tempdir");
        let script = dir.path().join("guard.sh");
        std::fs::write(
            &script,
            "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in\n  *rm*) echo 'no rm' >&2; exit 2;;\nesac\n\
             echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"allow\"}}'\n",
        )
        .expect("write script");
        let command = format!("sh {}", script.display());
        let hooks = [hook(&command, 10.0), hook("exit 1", 10.0)];
        let cancel = CancellationToken::new();
        let input = json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf x"}});
        let runs = run_hooks(&hooks, &input, dir.path(), dir.path(), &[], &cancel).await;
        let o = HookOutcome::from_runs(HookEvent::PreToolUse, &runs);
        assert_eq!(o.block.as_deref(), Some("no rm"));
        assert_eq!(o.messages, ["hook `exit 1` failed with exit code 1"]);

        let input = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}});
        let runs = run_hooks(&hooks[..1], &input, dir.path(), dir.path(), &[], &cancel).await;
        let o = HookOutcome::from_runs(HookEvent::PreToolUse, &runs);
        assert_eq!(o.permission, Some((PermissionVerdict::Allow, None)));
        assert_eq!(o.block, None);
    }
}
