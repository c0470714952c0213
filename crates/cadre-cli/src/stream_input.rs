//! `-p --input-format stream-json`: the messages of a run come on stdin,
//! one JSON object per line, and each becomes a turn of one session (a
//! message sent while a turn runs waits for its own turn). The line
//! `{"type":"user","message":{"role":"user","content":…}}` is Claude Code's;
//! `shouldQuery: false` adds a message without a turn (it goes with the
//! next one), and `control_request`s (`interrupt`, `set_permission_mode`,
//! `set_model`, `initialize`) are answered with `control_response` lines.
//! A line that cannot be read is reported, and the session goes on.

use std::io::{BufRead, Read as _};

use cadre_core::driver::SessionHandle;
use cadre_core::protocol::{Event, Op, PermissionMode};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::print::{ResultSummary, StreamRenderer};
use cadre_core::protocol::MAIN_AGENT;

/// Most bytes of one input line.
const MAX_LINE_BYTES: usize = 10 * 1024 * 1024;

/// What the reader saw on stdin.
#[derive(Debug)]
pub enum Read {
    /// A line (1-based number, text).
    Line(usize, String),
    /// A line that could not be taken (too long, not UTF-8).
    Bad(usize, String),
    /// Stdin ended.
    Closed,
}

/// The stdin side of a stream-json run.
pub struct StreamInput {
    rx: mpsc::UnboundedReceiver<Read>,
    replay: bool,
    /// A new session's `initialPrompt`, put before the first message.
    first: Option<String>,
    /// Messages sent with `shouldQuery: false`, for the next turn.
    appended: Vec<String>,
    submitted: u64,
    ended: u64,
    closed: bool,
}

impl StreamInput {
    /// Starts reading stdin on a thread of its own.
    pub fn start(first: Option<String>, replay: bool) -> StreamInput {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            let mut reader = stdin.lock();
            let mut number = 0;
            loop {
                number += 1;
                let mut bytes = Vec::new();
                let read = (&mut reader)
                    .take(MAX_LINE_BYTES as u64 + 1)
                    .read_until(b'\n', &mut bytes);
                let sent = match read {
                    Ok(0) => break,
                    Ok(_) if bytes.len() > MAX_LINE_BYTES && !bytes.ends_with(b"\n") => {
                        // Skip the rest of the oversized line.
                        let mut rest = Vec::new();
                        let _ = reader.read_until(b'\n', &mut rest);
                        tx.send(Read::Bad(
                            number,
                            format!("the line is over {} MB", MAX_LINE_BYTES / (1024 * 1024)),
                        ))
                    }
                    Ok(_) => match String::from_utf8(bytes) {
                        Ok(text) => tx.send(Read::Line(number, text)),
                        Err(_) => tx.send(Read::Bad(number, "the line is not UTF-8".into())),
                    },
                    Err(e) => {
                        let _ = tx.send(Read::Bad(number, format!("stdin failed: {e}")));
                        break;
                    }
                };
                if sent.is_err() {
                    return;
                }
            }
            let _ = tx.send(Read::Closed);
        });
        StreamInput {
            rx,
            replay,
            first,
            appended: Vec::new(),
            submitted: 0,
            ended: 0,
            closed: false,
        }
    }

    /// The next thing read; never returns once stdin has ended.
    pub async fn next(&mut self) -> Option<Read> {
        if self.closed {
            return std::future::pending().await;
        }
        self.rx.recv().await
    }

    /// Whether the run is over: stdin ended and every message's turn ended.
    pub fn finished(&self) -> bool {
        self.closed && self.ended >= self.submitted
    }

    /// Acts on what was read; returns the lines to print.
    pub fn on_line(
        &mut self,
        read: Read,
        handle: &SessionHandle,
        stream: &StreamRenderer,
    ) -> Vec<Value> {
        let (number, text) = match read {
            Read::Closed => {
                self.closed = true;
                return Vec::new();
            }
            Read::Bad(number, why) => return vec![input_error(stream, number, &why)],
            Read::Line(number, text) => (number, text),
        };
        if text.trim().is_empty() {
            return Vec::new();
        }
        let line: Value = match serde_json::from_str(text.trim()) {
            Ok(v) => v,
            Err(e) => return vec![input_error(stream, number, &format!("not JSON: {e}"))],
        };
        match line.get("type").and_then(Value::as_str) {
            Some("user") => self.user(number, &line, handle, stream),
            Some("control_request") => vec![control(&line, handle)],
            // Replies to requests cadre does not make, and keep-alives.
            Some("control_response" | "keep_alive") => Vec::new(),
            other => vec![input_error(
                stream,
                number,
                &format!(
                    "unknown line type {}: expected \"user\" or \"control_request\"",
                    other.map_or_else(|| "(none)".to_string(), |t| format!("{t:?}"))
                ),
            )],
        }
    }

    fn user(
        &mut self,
        number: usize,
        line: &Value,
        handle: &SessionHandle,
        stream: &StreamRenderer,
    ) -> Vec<Value> {
        let message = line.get("message").cloned().unwrap_or(Value::Null);
        let Some(text) = message_text(&message) else {
            return vec![input_error(
                stream,
                number,
                "a user line needs \"message\": {\"role\": \"user\", \"content\": \"…\" or [{\"type\": \"text\", \"text\": \"…\"}]}",
            )];
        };
        if text.trim().is_empty() {
            return vec![input_error(
                stream,
                number,
                "the message is empty: nothing was sent",
            )];
        }
        let mut out = Vec::new();
        if self.replay {
            out.push(json!({
                "type": "user",
                "message": message,
                "parent_tool_use_id": null,
                "session_id": stream.session_id(),
                "isReplay": true,
                "uuid": line.get("uuid").cloned().unwrap_or_else(|| json!(uuid::Uuid::now_v7().to_string())),
            }));
        }
        if line.get("shouldQuery").and_then(Value::as_bool) == Some(false) {
            self.appended.push(text);
            return out;
        }
        let mut parts: Vec<String> = self.first.take().into_iter().collect();
        parts.append(&mut self.appended);
        parts.push(text);
        handle.submit(Op::UserMessage {
            text: parts.join("\n\n"),
        });
        self.submitted += 1;
        out
    }

    /// Notes the main agent's turn ends; each gets its `result` line.
    pub fn on_event(
        &mut self,
        event: &Event,
        summary: &mut ResultSummary,
        runtime_schema: Option<&cadre_core::structured::AnswerSchema>,
    ) -> Vec<Value> {
        let Event::TurnEnded {
            agent,
            status,
            final_text,
            error,
            ..
        } = event
        else {
            return Vec::new();
        };
        if agent != MAIN_AGENT {
            return Vec::new();
        }
        self.ended += 1;
        let structured = runtime_schema
            .filter(|_| *status == cadre_core::protocol::TurnStatus::Completed)
            .and_then(|s| s.check(final_text).ok());
        vec![summary.result(*status, final_text, error.as_deref(), structured)]
    }
}

/// The text of a user message: a string, or its text blocks joined.
fn message_text(message: &Value) -> Option<String> {
    match message.get("content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty() || blocks.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// The `system/input_error` line for a line that could not be used (also on stderr).
fn input_error(stream: &StreamRenderer, number: usize, why: &str) -> Value {
    eprintln!("error: stdin line {number}: {why}");
    stream.system("input_error", json!({"line": number, "error": why}))
}

/// Carries out a `control_request` and says how it went.
fn control(line: &Value, handle: &SessionHandle) -> Value {
    let id = line.get("request_id").cloned().unwrap_or(Value::Null);
    let request = line.get("request").cloned().unwrap_or(Value::Null);
    let subtype = request.get("subtype").and_then(Value::as_str).unwrap_or("");
    let done: Result<Value, String> = match subtype {
        "initialize" => Ok(json!({})),
        "interrupt" => {
            handle.submit(Op::Interrupt);
            Ok(json!({}))
        }
        "set_permission_mode" => match request
            .get("mode")
            .and_then(Value::as_str)
            .map(str::parse::<PermissionMode>)
        {
            Some(Ok(mode)) => {
                handle.submit(Op::SetMode { mode });
                Ok(json!({"mode": mode.to_string()}))
            }
            Some(Err(e)) => Err(e),
            None => Err("set_permission_mode needs \"mode\"".into()),
        },
        "set_model" => match request.get("model").and_then(Value::as_str) {
            Some(model) if !model.trim().is_empty() => {
                handle.submit(Op::SetModel {
                    model: model.to_string(),
                });
                Ok(json!({"model": model}))
            }
            _ => Err("set_model needs \"model\"".into()),
        },
        other => Err(format!("unsupported control request {other:?}")),
    };
    match done {
        Ok(response) => json!({
            "type": "control_response",
            "response": {"subtype": "success", "request_id": id, "response": response},
        }),
        Err(error) => json!({
            "type": "control_response",
            "response": {"subtype": "error", "request_id": id, "error": error},
        }),
    }
}
