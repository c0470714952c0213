//! Compaction: the request that asks the model for a summary, the
//! conversation that replaces the old one (built by one function for the
//! live session and for `--resume`, so both send the same bytes), and
//! inputs cut before they are sent because alone they would not fit.

use std::borrow::Cow;

use super::estimate::estimate_message_tokens;
use crate::model::{ContentBlock, Message, ModelError, Role};

/// The tag that wraps a compaction summary in the conversation.
pub const SUMMARY_TAG: &str = "<compaction-summary>";
const SUMMARY_END: &str = "</compaction-summary>";

/// What the model is asked for when a conversation is compacted. Written for
/// cadre: the summary replaces everything before it, so it must carry what
/// the agent needs to go on without asking again.
pub const COMPACTION_INSTRUCTIONS: &str = "\
<compaction-request>
The conversation has grown too long for the model's context window. Write a summary of it that \
will replace every message above; only the summary and the last few messages will remain. Do not \
call any tool: answer with the summary text alone.

Write these sections, in this order, each as short as it can be without losing facts:
1. Task: what the user asked for, and the goal as it stands now.
2. The user's instructions: every explicit instruction, preference and constraint the user gave, \
quoted exactly.
3. Decisions: what was decided and why, including approaches tried and rejected.
4. Files: each file read, created or changed, with what was done to it and why (exact paths).
5. State: what has been done and verified, commands run and their results that still matter, \
errors met and how they were resolved.
6. Still to do: the remaining steps, the next one first.
7. Open questions: anything unresolved or waiting for the user.

Keep exact names: paths, functions, commands, identifiers, error messages, task and agent ids.
</compaction-request>";

/// Told to the model after a reply that was cut off by the context limit and
/// then compacted, so the reply is continued rather than lost.
pub const CONTINUE_AFTER_CUT: &str = "<system-reminder>Your previous reply was cut off because \
the conversation reached the model's context limit. The conversation has been compacted; \
continue the reply from where it stopped, without repeating what was already said.</system-reminder>";

/// The messages of the summary request: the conversation as it is (so the
/// request reads the prompt cache), then the instructions as the last user
/// text, with the user's focus and a hook's additions.
pub fn summary_request_messages(
    conversation: &[Message],
    focus: Option<&str>,
    extra: Option<&str>,
) -> Vec<Message> {
    let mut text = COMPACTION_INSTRUCTIONS.to_string();
    for (label, add) in [
        ("The user asks the summary to keep, above all", focus),
        ("Further instructions for the summary", extra),
    ] {
        if let Some(add) = add.map(str::trim).filter(|a| !a.is_empty()) {
            text.push_str(&format!("\n{label}: {add}"));
        }
    }
    let mut messages = conversation.to_vec();
    match messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.push(ContentBlock::Text { text }),
        _ => messages.push(Message::user_text(text)),
    }
    messages
}

/// The conversation after a compaction: the summary as a user message marked
/// as one, then the kept messages verbatim.
pub fn compacted_conversation(summary: &str, kept: &[Message]) -> Vec<Message> {
    let text = format!(
        "{SUMMARY_TAG}\nThis session was compacted to fit the model's context window. The summary \
         below replaces the earlier conversation; the most recent messages follow it verbatim. \
         Continue the work from where it stopped, without asking the user to repeat anything.\n\n\
         {}\n{SUMMARY_END}",
        summary.trim()
    );
    let mut out = Vec::with_capacity(kept.len() + 1);
    out.push(Message::user_text(text));
    for m in kept {
        push_alternating(&mut out, m);
    }
    out
}

/// Appends `m`, joining it to the last message when both are the user's
/// (roles must alternate).
pub fn push_alternating(out: &mut Vec<Message>, m: &Message) {
    match out.last_mut() {
        Some(last) if last.role == Role::User && m.role == Role::User => {
            for b in &m.content {
                last.content.push(b.clone());
            }
        }
        _ => out.push(m.clone()),
    }
}

/// Where the verbatim tail of `conversation` starts: the earliest assistant
/// message from which the rest fits in `budget` tokens (a tail that starts
/// with an assistant message never separates a tool result from its call).
/// `conversation.len()` when nothing fits.
pub fn kept_tail(conversation: &[Message], budget: u64) -> usize {
    let mut used = 0u64;
    let mut start = conversation.len();
    for i in (1..conversation.len()).rev() {
        used += estimate_message_tokens(&conversation[i]);
        if used > budget {
            break;
        }
        if conversation[i].role == Role::Assistant {
            start = i;
        }
    }
    start
}

/// `message` with each text and tool result cut to about `max_tokens`.
pub fn message_cut_to(message: &Message, max_tokens: u64) -> Message {
    let blocks = message
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => ContentBlock::Text {
                text: cut_to_tokens(text, max_tokens).into_owned(),
            },
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } => ContentBlock::ToolResult {
                tool_use_id: tool_use_id.clone(),
                content: cut_to_tokens(content, max_tokens).into_owned(),
                is_error: *is_error,
                images: Vec::new(),
            },
            other => other.clone(),
        })
        .collect();
    Message {
        role: message.role,
        content: blocks,
    }
}

/// The most recent part of `conversation` that fits `budget` tokens once
/// each of its texts and results is cut to `per_part` tokens (see
/// [`kept_tail`]: it starts at one of the model's messages).
pub fn recent_cut_to(conversation: &[Message], budget: u64, per_part: u64) -> Vec<Message> {
    let capped: Vec<Message> = conversation
        .iter()
        .map(|m| message_cut_to(m, per_part))
        .collect();
    let start = kept_tail(&capped, budget);
    capped[start..].to_vec()
}

/// True when the provider refused a request because it does not fit the
/// model's context window.
pub fn is_context_length_error(e: &ModelError) -> bool {
    let text = match e {
        ModelError::Status { status, message } => {
            if *status == 413 {
                return true;
            }
            message
        }
        ModelError::Api { kind, message } => {
            if matches!(
                kind.as_str(),
                "request_too_large" | "exceed_context_size_error" | "context_length_exceeded"
            ) {
                return true;
            }
            message
        }
        ModelError::RetriesExhausted { message, .. } => message,
        _ => return false,
    };
    let t = text.to_ascii_lowercase();
    [
        "prompt is too long",
        "context_length_exceeded",
        "context length",
        "context window",
        "maximum context",
        "exceed_context_size",
        "exceeds the context",
        "too many tokens",
        "input is too long",
        "prompt too long",
        // Anthropic: "input length and `max_tokens` exceed context limit".
        "exceed context limit",
        // llama.cpp: "the request exceeds the available context size".
        "context size",
    ]
    .iter()
    .any(|p| t.contains(p))
}

/// The context window a length error states, when it states one:
/// Anthropic's `… > 200000 maximum`, OpenAI's `maximum context length is 8192
/// tokens`, llama.cpp's `n_ctx = 4096`.
pub fn window_from_length_error(e: &ModelError) -> Option<u64> {
    let text = match e {
        ModelError::Status { message, .. }
        | ModelError::Api { message, .. }
        | ModelError::RetriesExhausted { message, .. } => message.to_ascii_lowercase(),
        _ => return None,
    };
    let number_after = |marker: &str| -> Option<u64> {
        let rest = &text[text.find(marker)? + marker.len()..];
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    let number_before = |marker: &str| -> Option<u64> {
        let head = &text[..text.find(marker)?];
        let digits: String = head
            .trim_end()
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        digits.parse().ok()
    };
    number_after("maximum context length is")
        .or_else(|| number_after("n_ctx ="))
        .or_else(|| number_before("maximum"))
        .or_else(|| number_after("context size of"))
        .filter(|n| *n >= 256)
}

/// `text` cut to about `max_tokens`: its head and its tail with a marker
/// between that says what was cut. Unchanged when it fits.
pub fn cut_to_tokens(text: &str, max_tokens: u64) -> Cow<'_, str> {
    let max_bytes = usize::try_from(max_tokens.saturating_mul(4)).unwrap_or(usize::MAX);
    if text.len() <= max_bytes {
        return Cow::Borrowed(text);
    }
    let keep = max_bytes.saturating_sub(200);
    let floor = |mut i: usize| {
        while i > 0 && !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let head_end = floor(keep * 3 / 4);
    let mut tail_start = text.len() - (keep - keep * 3 / 4);
    while tail_start < text.len() && !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let cut = tail_start - head_end;
    Cow::Owned(format!(
        "{}\n[… {cut} bytes cut here by cadre: this input alone would not fit in the model's context window …]\n{}",
        &text[..head_end],
        &text[tail_start..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assistant(text: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text { text: text.into() }].into(),
        }
    }

    #[test]
    fn the_tail_starts_at_an_assistant_message_within_budget() {
        let conv = vec![
            Message::user_text("task"),
            assistant(&"a".repeat(400)),
            Message::user_text("b".repeat(400)),
            assistant("c"),
            Message::user_text("d"),
        ];
        assert_eq!(kept_tail(&conv, 10_000), 1);
        assert_eq!(kept_tail(&conv, 30), 3);
        assert_eq!(kept_tail(&conv, 5), conv.len());
    }

    #[test]
    fn the_compacted_conversation_alternates_and_is_marked() {
        let kept = vec![assistant("x"), Message::user_text("y")];
        let c = compacted_conversation("  the summary ", &kept);
        assert_eq!(c.len(), 3);
        assert!(c[0].text().starts_with(SUMMARY_TAG));
        assert!(c[0].text().contains("\n\nthe summary\n"));
        let joined = compacted_conversation("s", &[Message::user_text("u")]);
        assert_eq!(joined.len(), 1);
        assert_eq!(joined[0].content.len(), 2);
    }

    #[test]
    fn the_summary_request_ends_with_the_instructions() {
        let conv = vec![Message::user_text("task"), assistant("done")];
        let m = summary_request_messages(&conv, Some("the parser"), None);
        assert_eq!(m.len(), 3);
        let last = m[2].text();
        assert!(last.starts_with("<compaction-request>"));
        assert!(last.ends_with("above all: the parser"));
        let after_results = summary_request_messages(&[Message::user_text("t")], None, Some(" "));
        assert_eq!(after_results.len(), 1);
        assert_eq!(after_results[0].content.len(), 2);
    }

    #[test]
    fn length_errors_of_both_providers_are_recognised() {
        let anthropic = ModelError::Status {
            status: 400,
            message: "invalid_request_error: prompt is too long: 210000 tokens > 200000 maximum"
                .into(),
        };
        let openai = ModelError::Status {
            status: 400,
            message: "context_length_exceeded: This model's maximum context length is 8192 tokens"
                .into(),
        };
        let llama = ModelError::Api {
            kind: "exceed_context_size_error".into(),
            message: "the request exceeds the available context size".into(),
        };
        // llama.cpp over HTTP: the OpenAI wire keeps only the message.
        let llama_http = ModelError::Status {
            status: 400,
            message: "the request exceeds the available context size, try increasing it".into(),
        };
        for e in [anthropic, openai, llama, llama_http] {
            assert!(is_context_length_error(&e), "{e}");
        }
        let other = ModelError::Status {
            status: 400,
            message: "invalid_request_error: messages: roles must alternate".into(),
        };
        assert!(!is_context_length_error(&other));
    }

    #[test]
    fn the_window_a_length_error_states_is_read() {
        let cases = [
            (
                "prompt is too long: 210000 tokens > 200000 maximum",
                Some(200_000),
            ),
            (
                "This model's maximum context length is 8,192 tokens. However, you requested 9000",
                Some(8192),
            ),
            (
                "the request exceeds the available context size, try increasing it (n_ctx = 4096)",
                Some(4096),
            ),
            ("prompt is too long", None),
        ];
        for (message, want) in cases {
            let e = ModelError::Status {
                status: 400,
                message: message.into(),
            };
            assert_eq!(window_from_length_error(&e), want, "{message}");
        }
    }

    #[test]
    fn a_long_input_is_cut_with_a_marker_on_char_boundaries() {
        let text = "é".repeat(5000);
        let cut = cut_to_tokens(&text, 500);
        assert!(cut.len() <= 2000 + 200, "{}", cut.len());
        assert!(cut.contains("bytes cut here by cadre"));
        assert!(matches!(cut_to_tokens("short", 500), Cow::Borrowed(_)));
    }
}
