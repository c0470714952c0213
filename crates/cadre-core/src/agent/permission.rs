//! Permission checks: the policy's decision for a call, and the question
//! through the approval gate when it says to ask.

use super::Agent;
use super::hooks::PreToolVerdict;
use crate::permissions::{
    ApprovalAnswer, ApprovalQuestion, Decision, PermissionMode, PermissionPolicy,
};
use crate::tools::ToolInput;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The call a permission is decided for.
pub(super) struct CallToPermit<'a> {
    /// Its id (a question names it).
    pub call_id: &'a str,
    /// The canonical tool name.
    pub tool: &'a str,
    /// What the tool does.
    pub effect: crate::permissions::ToolEffect,
    /// Its arguments, as they will run.
    pub input: &'a ToolInput,
    /// The path the policy decides on, when the call has one.
    pub path: Option<&'a std::path::Path>,
}

impl Agent {
    /// Applies the permission policy, asking through the gate when it says so.
    /// `Err` holds the denial text the model sees.
    pub(super) async fn permit(
        &self,
        call: CallToPermit<'_>,
        hook: PreToolVerdict,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        let CallToPermit {
            call_id,
            tool,
            effect,
            input,
            path,
        } = call;
        let decision = self.policy.decide_pre_approved(
            &self.tracker,
            tool,
            effect,
            input,
            path,
            matches!(hook, PreToolVerdict::Allow),
            &self.ctx.grants.rules(),
        );
        let (reason, session_rule) = match (decision, hook) {
            (Decision::Deny(reason), _) => return Err(format!("denied: {reason}")),
            // A hook's question is asked even where the policy would allow.
            (_, PreToolVerdict::Ask(why)) => {
                if matches!(
                    self.policy.mode,
                    PermissionMode::Plan | PermissionMode::DontAsk
                ) {
                    return Err(format!(
                        "denied: a PreToolUse hook asks ({why}), and the {} mode does not ask",
                        self.policy.mode
                    ));
                }
                (format!("a PreToolUse hook asks: {why}"), String::new())
            }
            (Decision::Allow, _) => return Ok(()),
            (
                Decision::Ask {
                    reason,
                    session_rule,
                },
                _,
            ) => (reason, session_rule),
        };
        let shown = match (tool, input.get("command").and_then(Value::as_str)) {
            ("Bash", Some(cmd)) => cmd.to_string(),
            _ => serde_json::to_string_pretty(input).unwrap_or_default(),
        };
        let sandbox = (tool == "Bash").then(|| self.ctx.sandbox_line(input));
        let question = ApprovalQuestion {
            agent: self.id.clone(),
            label: self.label.clone(),
            tool: tool.to_string(),
            call_id: Some(call_id.to_string()),
            input: shown,
            reason,
            sandbox,
            session_rule: session_rule.clone(),
        };
        if !self.gate.can_ask() {
            return Err(self.gate.refusal(&question, self.policy.mode));
        }
        self.notify(
            "permission_prompt",
            format!("cadre needs your permission to use {tool}"),
        );
        match self.gate.ask(question, cancel).await {
            ApprovalAnswer::Once => Ok(()),
            ApprovalAnswer::Session => {
                if let Some(rule) = PermissionPolicy::parse_session_rule(&session_rule) {
                    self.tracker.allow(rule);
                }
                Ok(())
            }
            ApprovalAnswer::No if cancel.is_cancelled() => {
                Err("not run: interrupted by the user".to_string())
            }
            ApprovalAnswer::No => Err("denied: the user declined this call".to_string()),
            ApprovalAnswer::Instead(text) => Err(format!(
                "denied: the user declined this call and said what to do instead:\n{}",
                text.trim()
            )),
        }
    }
}
