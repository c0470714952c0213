//! A child's transcript read from its log, for people: what it was asked,
//! what it said, each tool call with its argument summary and the first
//! line of its result. A [`TranscriptFollower`] reads a log that is still
//! being written, complete lines only, so a front end can follow a running
//! child. Nothing here prints.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::agent::argument_summary;
use crate::model::ContentBlock;
use crate::session::{LOG_VERSION, LogRecord, RecordBody, sessions_dir};
use crate::tasks::TaskRow;
use crate::tool_names::canonical_tool_name;

/// What a transcript line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// Text the child was given (its task, a message sent to it).
    User,
    /// Text the child wrote.
    Assistant,
    /// A tool call it made.
    ToolCall,
    /// A tool call's result.
    ToolResult,
    /// Something else worth a line: a compaction, a retry, a turn's end.
    Note,
}

/// One entry of a transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptEntry {
    /// What it is.
    pub kind: EntryKind,
    /// Its text: whole for user and assistant text, one line otherwise.
    pub text: String,
}

impl TranscriptEntry {
    /// The entry as plain lines for a person: `user:`/`assistant:` text
    /// (continued lines indented), `→` a tool call, `←` its result, notes in
    /// parentheses. Control characters but tabs are replaced, so a log
    /// cannot drive a terminal.
    pub fn lines(&self) -> Vec<String> {
        let text: String = self
            .text
            .chars()
            .map(|c| {
                if c.is_control() && c != '\n' && c != '\t' {
                    char::REPLACEMENT_CHARACTER
                } else {
                    c
                }
            })
            .collect();
        let labelled = |label: &str| {
            let indent = " ".repeat(label.len() + 1);
            let mut lines = text.lines();
            let mut out = vec![format!("{label} {}", lines.next().unwrap_or(""))];
            out.extend(lines.map(|line| format!("{indent}{line}")));
            out
        };
        match self.kind {
            EntryKind::User => labelled("user:"),
            EntryKind::Assistant => labelled("assistant:"),
            EntryKind::ToolCall => vec![format!("  → {text}")],
            EntryKind::ToolResult => vec![format!("    ← {text}")],
            EntryKind::Note => vec![format!("  ({text})")],
        }
    }
}

/// The log of the child a subagent task ran, when its task folder names it
/// (`agent.json`, written when the child was filed).
pub fn child_log_path(home: &Path, row: &TaskRow) -> Option<PathBuf> {
    #[derive(serde::Deserialize)]
    struct Saved {
        agent_id: String,
    }
    let saved = row.output_path.with_file_name("agent.json");
    let bytes = std::fs::read(saved).ok()?;
    let id = serde_json::from_slice::<Saved>(&bytes).ok()?.agent_id;
    // An id names a file: nothing but what cadre's ids are made of.
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return None;
    }
    Some(
        sessions_dir(home)
            .join(format!("{}.agents", row.session_id))
            .join(format!("{id}.jsonl")),
    )
}

/// The first line of `s`, marked when more follows.
fn first_line(s: &str) -> String {
    let mut lines = s.trim().lines();
    let first = lines.next().unwrap_or("").to_string();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first
    }
}

/// The entries of one record.
pub fn entries(body: &RecordBody) -> Vec<TranscriptEntry> {
    let entry = |kind, text: String| TranscriptEntry { kind, text };
    match body {
        RecordBody::User { text } if !text.trim().is_empty() => {
            vec![entry(EntryKind::User, text.trim().to_string())]
        }
        RecordBody::Assistant { message, .. } => {
            let mut out = Vec::new();
            for block in message.content.iter() {
                match block {
                    ContentBlock::Text { text } if !text.trim().is_empty() => {
                        out.push(entry(EntryKind::Assistant, text.trim().to_string()));
                    }
                    ContentBlock::ToolUse { name, input, .. } => {
                        let tool = canonical_tool_name(name).to_string();
                        let args = serde_json::from_str::<Value>(input)
                            .ok()
                            .filter(Value::is_object)
                            .unwrap_or_else(|| Value::String(input.clone()));
                        let summary = argument_summary(&tool, &args);
                        out.push(entry(
                            EntryKind::ToolCall,
                            if summary.is_empty() {
                                tool.clone()
                            } else {
                                format!("{tool} {summary}")
                            },
                        ));
                    }
                    _ => {}
                }
            }
            // What the provider searched for the model, with what it found.
            for run in crate::model::server_tool_runs(message) {
                let found = match &run.error {
                    Some(code) => format!("error: {code}"),
                    None => format!("{} results", run.results.len()),
                };
                out.push(entry(
                    EntryKind::ToolCall,
                    format!("WebSearch {:?} → {found}", run.query.unwrap_or_default()),
                ));
            }
            out
        }
        RecordBody::ToolResult {
            content, is_error, ..
        } => {
            let line = first_line(content);
            let text = if *is_error {
                format!("error: {line}")
            } else {
                line
            };
            vec![entry(EntryKind::ToolResult, text)]
        }
        RecordBody::CompactBoundary {
            tokens_before,
            tokens_after,
            ..
        } => vec![entry(
            EntryKind::Note,
            format!("conversation compacted: {tokens_before} → {tokens_after} tokens"),
        )],
        RecordBody::Retry {
            attempt, reason, ..
        } => vec![entry(
            EntryKind::Note,
            format!("model request failed ({reason}); try {attempt}"),
        )],
        RecordBody::TurnEnd { status, .. } => {
            vec![entry(EntryKind::Note, format!("turn ended: {status}"))]
        }
        _ => Vec::new(),
    }
}

/// Reads a log as it grows: each call returns the entries of the complete
/// lines written since the last one (a line being written waits).
#[derive(Debug)]
pub struct TranscriptFollower {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

impl TranscriptFollower {
    /// Follows the log at `path` from its start.
    pub fn new(path: PathBuf) -> Self {
        TranscriptFollower {
            path,
            offset: 0,
            partial: Vec::new(),
        }
    }

    /// The entries of the lines written since the last call.
    pub fn read_new(&mut self) -> std::io::Result<Vec<TranscriptEntry>> {
        let mut file = std::fs::File::open(&self.path)?;
        file.seek(SeekFrom::Start(self.offset))?;
        let mut bytes = Vec::new();
        let read = file.read_to_end(&mut bytes)?;
        self.offset += read as u64;
        self.partial.extend_from_slice(&bytes);
        let Some(end) = self.partial.iter().rposition(|b| *b == b'\n') else {
            return Ok(Vec::new());
        };
        let complete: Vec<u8> = self.partial.drain(..=end).collect();
        let mut out = Vec::new();
        for line in String::from_utf8_lossy(&complete).lines() {
            if line.trim().is_empty() {
                continue;
            }
            // A line this cadre cannot read is skipped, as a resume skips it.
            match serde_json::from_str::<LogRecord>(line) {
                Ok(record) if record.v <= LOG_VERSION => {
                    out.extend(entries(&record.body));
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::model::Message;
    use crate::session::CallStatus;
    use std::io::Write;

    fn line(body: RecordBody) -> String {
        let record = LogRecord {
            v: LOG_VERSION,
            time_ms: 1,
            body,
        };
        format!("{}\n", serde_json::to_string(&record).unwrap())
    }

    #[test]
    fn entries_read_as_labelled_safe_lines() {
        let entry = |kind, text: &str| TranscriptEntry {
            kind,
            text: text.into(),
        };
        assert_eq!(
            entry(EntryKind::User, "find it\nin src").lines(),
            ["user: find it", "      in src"]
        );
        assert_eq!(
            entry(EntryKind::Assistant, "done \u{1b}[2J").lines(),
            ["assistant: done \u{fffd}[2J"]
        );
        assert_eq!(
            entry(EntryKind::ToolCall, "Read src/x.rs").lines(),
            ["  → Read src/x.rs"]
        );
        assert_eq!(
            entry(EntryKind::ToolResult, "error: no such file").lines(),
            ["    ← error: no such file"]
        );
        assert_eq!(
            entry(EntryKind::Note, "turn ended: completed").lines(),
            ["  (turn ended: completed)"]
        );
    }

    #[test]
    fn a_log_reads_as_a_transcript_complete_lines_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        let mut file = std::fs::File::create(&path).unwrap();
        let mut follower = TranscriptFollower::new(path.clone());
        write!(
            file,
            "{}",
            line(RecordBody::User {
                text: "find the parser".into()
            })
        )
        .unwrap();
        let call = Message {
            role: crate::model::Role::Assistant,
            content: vec![
                ContentBlock::Text {
                    text: "Looking.".into(),
                },
                ContentBlock::ToolUse {
                    id: "c1".into(),
                    name: "Grep".into(),
                    input: r#"{"pattern":"parse_config","path":"src"}"#.into(),
                },
            ]
            .into(),
        };
        let result = line(RecordBody::ToolResult {
            call_id: "c1".into(),
            content: "src/config.rs:12: fn parse_config\nsrc/main.rs:3: parse_config()".into(),
            is_error: false,
            status: CallStatus::Ok,
            images: Vec::new(),
        });
        write!(
            file,
            "{}",
            line(RecordBody::Assistant {
                message: call,
                usage: None,
                cost_nanodollars: None,
            })
        )
        .unwrap();
        // Half a line: not read until it is whole.
        let (head, tail) = result.split_at(20);
        write!(file, "{head}").unwrap();
        let got = follower.read_new().unwrap();
        let kinds: Vec<_> = got.iter().map(|e| (e.kind, e.text.as_str())).collect();
        assert_eq!(
            kinds,
            [
                (EntryKind::User, "find the parser"),
                (EntryKind::Assistant, "Looking."),
                (EntryKind::ToolCall, "Grep \"parse_config\" in src"),
            ]
        );
        writeln!(file, "{tail}not json").unwrap();
        let got = follower.read_new().unwrap();
        assert_eq!(
            got,
            [TranscriptEntry {
                kind: EntryKind::ToolResult,
                text: "src/config.rs:12: fn parse_config …".into()
            }]
        );
        assert!(follower.read_new().unwrap().is_empty());
    }
}
