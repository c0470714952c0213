//! Human-readable progress on stderr: one line per tool call, retries,
//! warnings and errors. JSON mode bypasses this and prints events verbatim.

use std::collections::HashMap;
use std::io::Write;

use cadre_core::agent::{Event, TurnStatus};

/// Prints events for a person.
#[derive(Default)]
pub struct HumanRenderer {
    /// Stream assistant text to stdout as it arrives (interactive mode).
    stream_text: bool,
    /// Print the text of replies that also call tools, as progress (exec mode).
    show_interim_text: bool,
    summaries: HashMap<String, String>,
    text_open: bool,
}

impl HumanRenderer {
    /// For `exec`: the final answer is printed separately, so only progress here.
    pub fn for_exec() -> Self {
        HumanRenderer {
            show_interim_text: true,
            ..Default::default()
        }
    }

    /// For the interactive session: assistant text streams to stdout.
    pub fn for_interactive() -> Self {
        HumanRenderer {
            stream_text: true,
            ..Default::default()
        }
    }

    /// Handles one event.
    pub fn handle(&mut self, event: &Event) {
        let mut err = std::io::stderr().lock();
        match event {
            Event::TextDelta { text, .. } if self.stream_text => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
                self.text_open = true;
            }
            Event::AssistantMessage {
                text, tool_calls, ..
            } => {
                if self.text_open {
                    println!();
                    self.text_open = false;
                }
                if self.show_interim_text && *tool_calls > 0 && !text.trim().is_empty() {
                    let _ = writeln!(err, "{}", text.trim());
                }
            }
            Event::ToolCallStarted {
                call_id, summary, ..
            } => {
                self.summaries.insert(call_id.clone(), summary.clone());
            }
            Event::ToolCallEnded {
                call_id,
                tool,
                outcome,
                ..
            } => {
                let summary = self.summaries.remove(call_id).unwrap_or_default();
                let _ = if summary.is_empty() {
                    writeln!(err, "  {tool} → {outcome}")
                } else {
                    writeln!(err, "  {tool} {summary} → {outcome}")
                };
            }
            Event::Retrying {
                attempt,
                wait_ms,
                reason,
                discarded_text,
                ..
            } => {
                if self.text_open {
                    // The streamed text is void: mark where it stops, the retry starts over.
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, " [cut off; the reply is retried from the start]");
                    let _ = out.flush();
                    self.text_open = false;
                }
                let discarded = if *discarded_text {
                    "; the partial reply is discarded"
                } else {
                    ""
                };
                let _ = writeln!(
                    err,
                    "  model request failed ({reason}){discarded}; retrying in {:.1}s (try {attempt})",
                    *wait_ms as f64 / 1000.0
                );
            }
            Event::SessionResumed {
                session_id,
                messages,
                unknown_calls,
            } => {
                let _ = writeln!(
                    err,
                    "resumed session {session_id}: {messages} messages, {} call(s) recorded as unknown",
                    unknown_calls.len()
                );
            }
            Event::SubagentProgress {
                index,
                total,
                agent_type,
                tool,
                outcome,
                ..
            } => {
                let _ = writeln!(
                    err,
                    "  [subagent {index}/{total} {agent_type}] {tool}: {outcome}"
                );
            }
            Event::SubagentEnded {
                index,
                total,
                agent_type,
                status,
                requests,
                tool_calls,
                duration_ms,
                error,
                ..
            } => {
                let status = serde_json::to_value(status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                let plural = |n: u32, word: &str| {
                    if n == 1 {
                        format!("1 {word}")
                    } else {
                        format!("{n} {word}s")
                    }
                };
                let _ = writeln!(
                    err,
                    "  [subagent {index}/{total} {agent_type}] {status} · {} · {} · {:.1}s{}",
                    plural(*requests, "request"),
                    plural(*tool_calls, "tool call"),
                    *duration_ms as f64 / 1000.0,
                    error
                        .as_ref()
                        .map(|e| format!(" · {e}"))
                        .unwrap_or_default()
                );
            }
            Event::Warning { message } => {
                let _ = writeln!(err, "warning: {message}");
            }
            Event::TurnEnded { status, error, .. } => {
                if self.text_open {
                    println!();
                    self.text_open = false;
                }
                match (status, error) {
                    (TurnStatus::Completed, _) => {}
                    (TurnStatus::Interrupted, _) => {
                        let _ = writeln!(err, "interrupted");
                    }
                    (_, Some(e)) => {
                        let _ = writeln!(err, "error: {e}");
                    }
                    (_, None) => {}
                }
            }
            _ => {}
        }
    }
}
