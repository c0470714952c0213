//! `SendMessage` within a team: plain messages, and the structured ones of
//! Claude Code's team protocol (shutdown and plan approval), which act on
//! the teammate as well as reaching it.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{LEAD, TeamSeat};

/// A message: text, or one of a team's structured messages.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum MessageBody {
    /// Plain text.
    Text(String),
    /// A structured message (`type` says which).
    Structured(serde_json::Map<String, serde_json::Value>),
}

/// `string | object`, in one `type` rather than an `anyOf`, which some
/// providers' tool schemas do not take.
impl JsonSchema for MessageBody {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MessageBody".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": ["string", "object"] })
    }
}

impl MessageBody {
    /// The message as text (a structured one as its JSON).
    pub fn text(&self) -> String {
        match self {
            MessageBody::Text(t) => t.clone(),
            MessageBody::Structured(m) => serde_json::Value::Object(m.clone()).to_string(),
        }
    }
}

/// What a structured message does once it is sent.
enum Then {
    Nothing,
    /// A shutdown request: the recipient's current turn stops, so it reads
    /// the request now instead of after its tool call.
    InterruptRecipient,
    /// A shutdown the sender agreed to: it ends.
    StopSender,
    /// An approved plan: the recipient leaves plan mode.
    ApprovePlan,
}

/// Why a message was not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotSent {
    /// Its arguments are wrong (the model should fix the call).
    Arguments(String),
    /// It could not go (an unknown recipient, the table refused).
    Refused(String),
}

/// Sends `message` from `seat` to `to` (the member it resolved to, or why
/// it did not resolve), with `summary` as its preview (else its first line).
pub async fn send(
    seat: &TeamSeat,
    to: Result<String, String>,
    message: &MessageBody,
    summary: Option<&str>,
) -> Result<String, NotSent> {
    let team = &seat.team;
    let to = to.map_err(NotSent::Refused)?;
    if to == seat.name {
        return Err(NotSent::Refused(
            "you cannot send a message to yourself".into(),
        ));
    }
    let (body, then) = match message {
        MessageBody::Text(text) => (text.clone(), Then::Nothing),
        MessageBody::Structured(map) => structured(seat, &to, map).map_err(NotSent::Arguments)?,
    };
    if body.trim().is_empty() {
        return Err(NotSent::Arguments("message is empty".into()));
    }
    let summary = summary.map(str::to_string).or_else(|| match message {
        MessageBody::Text(t) => t.lines().find(|l| !l.trim().is_empty()).map(str::to_string),
        MessageBody::Structured(m) => m.get("type").and_then(Value::as_str).map(str::to_string),
    });
    team.send(&seat.name, &to, summary.as_deref(), &body)
        .await
        .map_err(NotSent::Refused)?;
    match then {
        Then::Nothing => {}
        Then::InterruptRecipient => {
            team.interrupt(&to);
        }
        Then::StopSender => {
            team.stop(&seat.name);
        }
        Then::ApprovePlan => team.approve_plan(&to).await,
    }
    Ok(format!(
        "message sent to {to}; it reaches {to}'s conversation with its next request (an idle member wakes for it)"
    ))
}

/// A structured message's body and what it does, or why it is refused.
fn structured(
    seat: &TeamSeat,
    to: &str,
    map: &serde_json::Map<String, Value>,
) -> Result<(String, Then), String> {
    let kind = map.get("type").and_then(Value::as_str).unwrap_or_default();
    let text = |key: &str| map.get(key).and_then(Value::as_str).map(str::to_string);
    let approve = || {
        map.get("approve")
            .and_then(Value::as_bool)
            .ok_or_else(|| format!("a {kind} needs `approve`: true or false"))
    };
    let lead_only = |what: &str| {
        if seat.is_lead() {
            Ok(())
        } else {
            Err(format!("only the lead sends a {what}"))
        }
    };
    let to_lead = |what: &str| {
        if !seat.is_lead() && to == LEAD {
            Ok(())
        } else {
            Err(format!("a {what} goes from a teammate to {LEAD}"))
        }
    };
    let from = seat.name.as_str();
    match kind {
        "shutdown_request" => {
            lead_only(kind)?;
            let body = json!({"type": kind, "from": from, "reason": text("reason")});
            Ok((body.to_string(), Then::InterruptRecipient))
        }
        "shutdown_response" => {
            to_lead(kind)?;
            let approved = approve()?;
            let body = json!({
                "type": if approved { "shutdown_approved" } else { "shutdown_rejected" },
                "from": from,
                "reason": text("reason"),
            });
            let then = if approved {
                Then::StopSender
            } else {
                Then::Nothing
            };
            Ok((body.to_string(), then))
        }
        "plan_approval_request" => {
            to_lead(kind)?;
            let plan = text("plan")
                .filter(|p| !p.trim().is_empty())
                .ok_or("a plan_approval_request needs `plan`: the plan, as text".to_string())?;
            Ok((
                json!({"type": kind, "from": from, "plan": plan}).to_string(),
                Then::Nothing,
            ))
        }
        "plan_approval_response" => {
            lead_only(kind)?;
            let approved = approve()?;
            let body = json!({
                "type": kind,
                "from": from,
                "approve": approved,
                "feedback": text("feedback"),
            });
            let then = if approved {
                Then::ApprovePlan
            } else {
                Then::Nothing
            };
            Ok((body.to_string(), then))
        }
        "" => Ok((Value::Object(map.clone()).to_string(), Then::Nothing)),
        other => Err(format!(
            "message type '{other}' is unknown: send text, or one of shutdown_request, shutdown_response, plan_approval_request, plan_approval_response"
        )),
    }
}
