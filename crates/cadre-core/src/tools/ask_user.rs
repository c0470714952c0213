//! `AskUserQuestion`: the main agent asks the user one to four questions,
//! each with two to four options and room for an answer of the user's own.
//! Only an interactive session offers it (children and `exec` never get it).
//!
//! Each question goes through the session's approval gate, so it queues with
//! approval questions and reaches every front end the same way; its
//! `input` is an [`AskedQuestion`] as JSON, which front ends show as a choice
//! and answer with `Instead(text)`.

use std::sync::Arc;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ToolContext, ToolOutput, TypedTool};
use crate::permissions::{ApprovalGate, ToolEffect};
use crate::protocol::{ApprovalAnswer, ApprovalQuestion};

/// The tool's name.
pub const ASK_USER_QUESTION: &str = "AskUserQuestion";

/// What the main agent of a session nobody answers is told instead.
pub const NO_ONE_TO_ASK: &str = "Nobody answers questions in this run: when something is unclear, make the most reasonable choice yourself, say which, and go on.";

/// Asks the user through the approval gate.
pub struct AskUserQuestionTool {
    gate: Arc<ApprovalGate>,
}

impl AskUserQuestionTool {
    /// The tool, asking through `gate`.
    pub fn new(gate: Arc<ApprovalGate>) -> Self {
        AskUserQuestionTool { gate }
    }
}

/// The arguments of a `AskUserQuestion` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// One to four questions, asked in order
    questions: Vec<QuestionArg>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct QuestionArg {
    /// The question, complete and ending with a question mark
    question: String,
    /// A very short label for it (at most 12 characters), e.g. "Database"
    #[serde(default)]
    header: String,
    /// Two to four choices; the user may always answer in their own words instead
    options: Vec<OptionArg>,
    /// Whether several options may be chosen
    #[serde(default, rename = "multiSelect")]
    multi_select: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct OptionArg {
    /// The choice, in one to five words
    label: String,
    /// What choosing it means
    #[serde(default)]
    description: String,
}

/// One question as a front end shows it (the approval question's `input`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct AskedQuestion {
    /// The question.
    pub question: String,
    /// Its short label.
    pub header: String,
    /// The choices: `(label, description)`.
    pub options: Vec<(String, String)>,
    /// Whether several may be chosen.
    pub multi_select: bool,
    /// Its place among the call's questions (1-based) and how many there are.
    pub position: (usize, usize),
}

impl AskedQuestion {
    /// The question an approval question's `input` carries, when its tool
    /// is this one.
    pub fn from_approval(question: &ApprovalQuestion) -> Option<AskedQuestion> {
        if question.tool != ASK_USER_QUESTION {
            return None;
        }
        serde_json::from_str(&question.input).ok()
    }

    /// The answer a typed line gives: option numbers (`2`, or `1,3` where
    /// several may be chosen) become their labels; anything else is the
    /// user's own answer. `None` for an empty line.
    pub fn answer_for(&self, line: &str) -> Option<String> {
        let line = line.trim();
        if line.is_empty() {
            return None;
        }
        let picks: Option<Vec<usize>> = line
            .split([',', ' '])
            .filter(|p| !p.is_empty())
            .map(|p| p.parse::<usize>().ok())
            .collect();
        match picks {
            Some(p)
                if !p.is_empty()
                    && (self.multi_select || p.len() == 1)
                    && p.iter().all(|&n| n >= 1 && n <= self.options.len()) =>
            {
                let labels: Vec<&str> = p.iter().map(|&n| self.options[n - 1].0.as_str()).collect();
                Some(labels.join(", "))
            }
            _ => Some(line.to_string()),
        }
    }
}

impl TypedTool for AskUserQuestionTool {
    type Input = Args;
    const NAME: &'static str = ASK_USER_QUESTION;
    const DESCRIPTION: &'static str = "Ask the user one to four questions when you need their decision to go on: a choice \
         between approaches, a preference, a requirement that is unclear. Each question has two \
         to four options; the user may also answer in their own words. Do not ask what you can \
         find out yourself, and do not ask for permission to use tools (that is asked for you).";
    const EFFECT: ToolEffect = ToolEffect::ReadOnly;

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: Args) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            if let Err(why) = check(&args) {
                return ToolOutput::invalid_arguments(why);
            }
            if !self.gate.can_ask() {
                return ToolOutput::error(NO_ONE_TO_ASK);
            }
            let total = args.questions.len();
            let mut answers = Vec::with_capacity(total);
            for (i, q) in args.questions.iter().enumerate() {
                let shown = AskedQuestion {
                    question: q.question.clone(),
                    header: q.header.clone(),
                    options: q
                        .options
                        .iter()
                        .map(|o| (o.label.clone(), o.description.clone()))
                        .collect(),
                    multi_select: q.multi_select,
                    position: (i + 1, total),
                };
                let question = ApprovalQuestion {
                    agent: ctx.agent_id.clone().into(),
                    label: None,
                    tool: ASK_USER_QUESTION.into(),
                    call_id: None,
                    input: serde_json::to_string(&shown).unwrap_or_default(),
                    reason: "the agent asks you".into(),
                    sandbox: None,
                    session_rule: String::new(),
                };
                let answer = match self.gate.ask(question, &ctx.cancel).await {
                    ApprovalAnswer::Instead(text) if !text.trim().is_empty() => text,
                    // A plain yes takes the first choice.
                    ApprovalAnswer::Once | ApprovalAnswer::Session => q.options[0].label.clone(),
                    ApprovalAnswer::No | ApprovalAnswer::Instead(_) => {
                        return ToolOutput::error(
                            "The user declined to answer. Go on with your best judgement, or ask in your reply.",
                        );
                    }
                };
                answers.push(format!("{:?}={:?}", q.question, answer));
            }
            ToolOutput::ok(format!(
                "The user answered your questions: {}. Go on with these answers in mind.",
                answers.join(", ")
            ))
        })
    }
}

/// The counts the schema cannot say: 1–4 questions of 2–4 options each.
fn check(args: &Args) -> Result<(), String> {
    if args.questions.is_empty() || args.questions.len() > 4 {
        return Err(format!(
            "ask one to four questions, not {}",
            args.questions.len()
        ));
    }
    for q in &args.questions {
        if q.question.trim().is_empty() {
            return Err("a question is empty".into());
        }
        if q.options.len() < 2 || q.options.len() > 4 {
            return Err(format!(
                "{:?} has {} options; give two to four",
                q.question,
                q.options.len()
            ));
        }
        if q.options.iter().any(|o| o.label.trim().is_empty()) {
            return Err(format!("{:?} has an option without a label", q.question));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(multi: bool) -> AskedQuestion {
        AskedQuestion {
            question: "Which?".into(),
            header: "Pick".into(),
            options: vec![
                ("Red".into(), String::new()),
                ("Blue".into(), String::new()),
            ],
            multi_select: multi,
            position: (1, 1),
        }
    }

    #[test]
    fn numbers_pick_options_and_other_text_is_the_users_own_answer() {
        assert_eq!(asked(false).answer_for("2").as_deref(), Some("Blue"));
        assert_eq!(asked(false).answer_for(" 1 ").as_deref(), Some("Red"));
        assert_eq!(asked(true).answer_for("1,2").as_deref(), Some("Red, Blue"));
        // Two picks where one is allowed, or a number out of range, are text.
        assert_eq!(asked(false).answer_for("1,2").as_deref(), Some("1,2"));
        assert_eq!(asked(false).answer_for("3").as_deref(), Some("3"));
        assert_eq!(
            asked(false).answer_for("green, please").as_deref(),
            Some("green, please")
        );
        assert_eq!(asked(false).answer_for("  "), None);
    }

    #[test]
    fn counts_are_checked() {
        let parse = |v: serde_json::Value| serde_json::from_value::<Args>(v).unwrap();
        let one =
            serde_json::json!({"question": "Q?", "options": [{"label": "a"}, {"label": "b"}]});
        assert!(check(&parse(serde_json::json!({"questions": [one.clone()]}))).is_ok());
        assert!(check(&parse(serde_json::json!({"questions": []}))).is_err());
        let five = vec![one.clone(); 5];
        assert!(check(&parse(serde_json::json!({ "questions": five }))).is_err());
        let lone = serde_json::json!({"question": "Q?", "options": [{"label": "a"}]});
        assert!(check(&parse(serde_json::json!({"questions": [lone]}))).is_err());
    }
}
