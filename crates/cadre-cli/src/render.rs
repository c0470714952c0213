//! Human-readable progress on stderr: one line per tool call, retries,
//! warnings and errors, compactions, and after each turn of the main agent
//! the context it uses and what the session cost so far. JSON mode bypasses
//! this and prints events verbatim. Everything printed here goes through
//! [`visible_controls`]: text from a model or a tool never drives the
//! terminal (no title, clipboard, hyperlink or clear-screen sequences).

use std::collections::HashMap;
use std::io::Write;

use cadre_core::agent::{Event, TurnStatus};
use cadre_core::context::Cost;
use cadre_core::protocol::{
    CheckpointInfo, ChildTag, CompactTrigger, HookDecision, RewindAction, child_place,
};
use cadre_tui::children::format_tokens;
use cadre_tui::sanitize::visible_controls;

/// Prints events for a person.
#[derive(Default)]
pub struct HumanRenderer {
    /// Stream assistant text to stdout as it arrives (interactive mode).
    stream_text: bool,
    /// Print the text of replies that also call tools, as progress (exec mode).
    show_interim_text: bool,
    summaries: HashMap<String, String>,
    text_open: bool,
    /// The main agent's last `context_usage`.
    context: Option<ContextShown>,
    /// What the session's requests cost so far, when any price was known.
    cost: Option<Cost>,
    /// Each child's line prefix, by agent id (from `subagent_started`).
    child_prefixes: HashMap<String, String>,
}

/// The context figures of the status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ContextShown {
    tokens: u64,
    window: u64,
    percent: u64,
    estimated: bool,
}

/// The agent id of the top-level agent.
use cadre_core::protocol::MAIN_AGENT as MAIN;

/// `/rewind`'s listing: each checkpoint with its number, time and message,
/// and the files a code restore to it brings back.
pub fn checkpoint_lines(checkpoints: &[CheckpointInfo]) -> Vec<String> {
    if checkpoints.is_empty() {
        return vec!["no checkpoints yet: one is taken before each message".into()];
    }
    let mut out = Vec::new();
    for c in checkpoints {
        let first = c.prompt.lines().next().unwrap_or_default();
        let files = match c.files.len() {
            0 => "no file changes".to_string(),
            1 => "1 file changed since".to_string(),
            n => format!("{n} files changed since"),
        };
        out.push(format!(
            "{:>3}  {}  {}  ({files})",
            c.number,
            cadre_core::session::utc_datetime(c.time_ms),
            crate::sessions::one_line(first, 60)
        ));
    }
    out.push(
        "/rewind N [both|conversation|code|summarize] [force] goes back to before message N (both when not named)"
            .into(),
    );
    out
}

pub use cadre_tui::panes::rewind::restored_lines;

/// A team event in one line: `[team] alice (general-purpose): working`,
/// `[team] alice → team-lead: done`, `[team] task #1 in progress (alice): Write the schema`.
pub fn team_line(event: &Event) -> Option<String> {
    match event {
        Event::TeammateChanged {
            name,
            agent_type,
            state,
            error,
            ..
        } => Some(format!(
            "[team] {name} ({agent_type}): {}{}",
            state.as_str(),
            error
                .as_ref()
                .map(|e| format!(" · {e}"))
                .unwrap_or_default()
        )),
        Event::TeamMessageSent { from, to, summary } => Some(format!(
            "[team] {from} → {to}: {}",
            summary.as_deref().unwrap_or("(message)")
        )),
        Event::BoardTaskChanged {
            task_id,
            subject,
            status,
            owner,
            blocked_by,
        } => {
            let mut line = format!(
                "[team] task #{task_id} {}",
                cadre_tui::team::status_words(*status)
            );
            if let Some(owner) = owner {
                line.push_str(&format!(" ({owner})"));
            }
            line.push_str(&format!(": {subject}"));
            if !blocked_by.is_empty() {
                let ids: Vec<String> = blocked_by.iter().map(|b| format!("#{b}")).collect();
                line.push_str(&format!(" · blocked by {}", ids.join(", ")));
            }
            Some(line)
        }
        _ => None,
    }
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
        self.track(event);
        // Its stderr lines are gathered, then shown with their controls made
        // visible (stdout, written meanwhile, is cleaned where it is written).
        let mut err: Vec<u8> = Vec::new();
        self.render(event, &mut err);
        if !err.is_empty() {
            let text = String::from_utf8_lossy(&err);
            let mut stderr = std::io::stderr().lock();
            let _ = stderr.write_all(visible_controls(&text).as_bytes());
            let _ = stderr.flush();
        }
    }

    /// Writes what `event` shows: progress into `err`, streamed text to stdout.
    fn render(&mut self, event: &Event, err: &mut Vec<u8>) {
        match event {
            Event::TextDelta { text, .. } if self.stream_text => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(visible_controls(text).as_bytes());
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
            Event::ServerToolUsed {
                tool,
                query,
                results,
                error,
                ..
            } => {
                let outcome = match error {
                    Some(code) => format!("error: {code}"),
                    None => format!("{} results", results.len()),
                };
                let _ = writeln!(err, "  {tool} {query:?} → {outcome}");
                for hit in results {
                    let _ = writeln!(err, "    {} — {}", hit.title, hit.url);
                }
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
            Event::SubagentProgress { .. } => {
                if let Some(line) = progress_line(event) {
                    let _ = writeln!(err, "{line}");
                }
            }
            Event::SubagentEnded {
                index,
                total,
                agent_id,
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
                // A nested child's end carries the path its start gave.
                let prefix = self
                    .child_prefixes
                    .get(agent_id.as_str())
                    .cloned()
                    .unwrap_or_else(|| format!("  [subagent {index}/{total} {agent_type}] "));
                let _ = writeln!(
                    err,
                    "{prefix}{status} · {} · {} · {:.1}s{}",
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
            Event::Checkpoints { checkpoints, .. } => {
                for line in checkpoint_lines(checkpoints) {
                    let _ = writeln!(err, "{line}");
                }
            }
            Event::RewindNeedsConfirmation { files, .. } => {
                let _ = writeln!(
                    err,
                    "nothing restored: these files changed outside cadre since cadre last wrote them:"
                );
                for f in files {
                    let _ = writeln!(err, "  {f}");
                }
                let _ = writeln!(err, "add `force` to the /rewind command to overwrite them");
            }
            Event::CodeRestored {
                restored,
                removed,
                skipped,
                bash_commands,
                ..
            } => {
                for line in restored_lines(restored, removed, skipped, bash_commands) {
                    let _ = writeln!(err, "{line}");
                }
            }
            Event::Rewound {
                agent,
                prompt,
                action,
                ..
            } if agent == MAIN => {
                let what = match action {
                    RewindAction::Summarize => "the conversation from there is now a summary",
                    RewindAction::Both => "the conversation and the files went back",
                    _ => "the conversation went back (files stay as they are)",
                };
                let first = prompt.lines().next().unwrap_or_default();
                let _ = writeln!(err, "went back to before \"{first}\": {what}");
            }
            // What the user's own `!command` printed is the answer they
            // asked for: stdout, like a reply.
            Event::ShellRan {
                output, is_error, ..
            } => {
                if *is_error {
                    let _ = writeln!(err, "{}", output.trim_end());
                } else {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{}", visible_controls(output.trim_end()));
                    let _ = out.flush();
                }
            }
            Event::TeammateChanged { .. }
            | Event::TeamMessageSent { .. }
            | Event::BoardTaskChanged { .. } => {
                if let Some(line) = team_line(event) {
                    let _ = writeln!(err, "{line}");
                }
            }
            Event::McpServerStatus {
                server,
                status,
                tools,
                message,
            } => {
                if let Some(line) =
                    crate::commands::mcp_status_line(server, *status, *tools, message.as_deref())
                {
                    let _ = writeln!(err, "{line}");
                }
            }
            Event::HookEnded {
                event,
                command,
                decision,
                duration_ms,
                ..
            } if *decision != HookDecision::Continue => {
                let _ = writeln!(
                    err,
                    "{}",
                    crate::commands::hook_line(*event, command, *decision, *duration_ms)
                );
            }
            Event::CompactionStarted { .. } | Event::CompactionEnded { .. } => {
                if self.text_open {
                    println!();
                    self.text_open = false;
                }
                if let Some(line) = self.compaction_line(event) {
                    let _ = writeln!(err, "{line}");
                }
            }
            Event::TurnEnded {
                agent,
                status,
                error,
                ..
            } => {
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
                if agent == MAIN
                    && let Some(line) = self.status_line()
                {
                    let _ = writeln!(err, "{line}");
                }
            }
            _ => {}
        }
    }

    /// Keeps what the status and compaction lines need.
    fn track(&mut self, event: &Event) {
        match event {
            Event::ContextUsage {
                agent,
                tokens,
                window,
                percent,
                estimated,
            } if agent == MAIN => {
                self.context = Some(ContextShown {
                    tokens: *tokens,
                    window: *window,
                    percent: *percent,
                    estimated: *estimated,
                });
            }
            // A turn's cost holds its compactions' summary requests; a
            // child's usage events never reach the front end, its end does.
            Event::TurnEnded {
                agent,
                cost_usd: Some(usd),
                ..
            } if agent == MAIN => self.add_cost(*usd),
            Event::SubagentEnded {
                cost_usd: Some(usd),
                ..
            } => self.add_cost(*usd),
            // `/compact` runs outside any turn: its request is counted here.
            Event::CompactionEnded {
                agent,
                trigger: CompactTrigger::Manual,
                cost_usd: Some(usd),
                ..
            } if agent == MAIN => self.add_cost(*usd),
            Event::SubagentStarted {
                index,
                total,
                agent_id,
                agent_type,
                path,
                ..
            } => {
                let here = ChildTag {
                    index: *index,
                    total: *total,
                    agent_type: agent_type.clone(),
                    agent_id: agent_id.clone(),
                };
                self.child_prefixes.insert(
                    agent_id.to_string(),
                    format!("  {} ", child_label(path, &here)),
                );
            }
            _ => {}
        }
    }

    fn add_cost(&mut self, usd: f64) {
        // Events carry dollars; the sum is kept in whole billionths, as priced.
        let nanodollars = (usd * 1e9).round().max(0.0) as u64;
        self.cost.get_or_insert_default().add(Cost(nanodollars));
    }

    /// `ctx 61% (2.4k/4k tokens) · $0.0123`: the main agent's context (`~`
    /// when estimated) and the session's cost, each when known.
    fn status_line(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(c) = self.context {
            let about = if c.estimated { "~" } else { "" };
            parts.push(format!(
                "ctx {about}{}% ({}/{} tokens)",
                c.percent,
                format_tokens(c.tokens),
                format_tokens(c.window)
            ));
        }
        if let Some(cost) = self.cost {
            parts.push(cost.to_string());
        }
        (!parts.is_empty()).then(|| parts.join(" · "))
    }

    /// The line for a compaction's start or end; a child's carries its prefix.
    fn compaction_line(&self, event: &Event) -> Option<String> {
        let (agent, text) = match event {
            Event::CompactionStarted {
                agent,
                trigger,
                tokens_before,
            } => (
                agent,
                format!(
                    "compacting… ({}, {} tokens)",
                    trigger_label(*trigger),
                    format_tokens(*tokens_before)
                ),
            ),
            Event::CompactionEnded {
                agent,
                tokens_before,
                tokens_after,
                kept_messages,
                error,
                ..
            } => (
                agent,
                match error {
                    None => format!(
                        "compacted: {} → {} tokens, {} kept",
                        format_tokens(*tokens_before),
                        format_tokens(*tokens_after),
                        if *kept_messages == 1 {
                            "1 message".to_string()
                        } else {
                            format!("{kept_messages} messages")
                        }
                    ),
                    Some(e) => {
                        format!("compaction failed: {e}; the conversation is unchanged")
                    }
                },
            ),
            _ => return None,
        };
        if agent == MAIN {
            return Some(text);
        }
        let prefix = self
            .child_prefixes
            .get(agent.as_str())
            .cloned()
            .unwrap_or_else(|| format!("  [subagent {agent}] "));
        Some(format!("{prefix}{text}"))
    }
}

/// `[subagent 1/3 Explore > 2/2 Explore]`: a child's place, from the main
/// agent's child down; `here` when the path is unknown (an older event).
pub fn child_label(path: &[ChildTag], here: &ChildTag) -> String {
    let place = if path.is_empty() {
        child_place(std::slice::from_ref(here))
    } else {
        child_place(path)
    };
    format!("[subagent {place}]")
}

/// `  [subagent 1/3 Explore > 2/2 Explore] Grep "parse_config": completed`.
pub fn progress_line(event: &Event) -> Option<String> {
    let Event::SubagentProgress {
        index,
        total,
        agent_type,
        agent_id,
        tool,
        outcome,
        summary,
        path,
    } = event
    else {
        return None;
    };
    let here = ChildTag {
        index: *index,
        total: *total,
        agent_type: agent_type.clone(),
        agent_id: agent_id.clone(),
    };
    let call = if summary.is_empty() {
        tool.clone()
    } else {
        format!("{tool} {summary}")
    };
    Some(format!("  {} {call}: {outcome}", child_label(path, &here)))
}

/// Why a compaction was made, in a word or two.
fn trigger_label(trigger: CompactTrigger) -> &'static str {
    match trigger {
        CompactTrigger::Auto => "auto",
        CompactTrigger::Manual => "manual",
        CompactTrigger::LengthError => "after a length error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cadre_core::model::Usage;

    fn context(agent: &str, tokens: u64, window: u64, estimated: bool) -> Event {
        Event::ContextUsage {
            agent: agent.into(),
            tokens,
            window,
            percent: tokens * 100 / window,
            estimated,
        }
    }

    fn turn_ended(agent: &str, cost_usd: Option<f64>) -> Event {
        Event::TurnEnded {
            agent: agent.into(),
            status: TurnStatus::Completed,
            final_text: String::new(),
            error: None,
            requests: 1,
            tool_calls: 0,
            usage: Usage::default(),
            cost_usd,
        }
    }

    #[test]
    fn token_counts_are_short() {
        for (n, shown) in [
            (0, "0"),
            (900, "900"),
            (999, "999"),
            (1000, "1k"),
            (2440, "2.4k"),
            (4000, "4k"),
            (32_768, "32.8k"),
            (99_949, "99.9k"),
            (99_950, "100k"),
            (200_000, "200k"),
            (999_499, "999k"),
            (999_500, "1M"),
            (1_048_576, "1M"),
            (1_260_000, "1.3M"),
        ] {
            assert_eq!(format_tokens(n), shown, "{n}");
        }
    }

    #[test]
    fn the_status_line_shows_the_main_context_and_the_session_cost() {
        let mut r = HumanRenderer::default();
        assert_eq!(r.status_line(), None, "nothing known yet");
        r.track(&context("main", 2440, 4000, false));
        // A child's context is not the session's.
        r.track(&context("a1", 3900, 4000, false));
        assert_eq!(r.status_line().unwrap(), "ctx 61% (2.4k/4k tokens)");
        r.track(&turn_ended("main", Some(0.01)));
        r.track(&Event::SubagentEnded {
            index: 1,
            total: 1,
            agent_id: "a1".into(),
            agent_type: "Explore".into(),
            status: cadre_core::protocol::ChildStatus::Completed,
            requests: 1,
            tool_calls: 0,
            usage: Usage::default(),
            duration_ms: 5,
            error: None,
            cost_usd: Some(0.0023),
            compactions: 0,
            worktree: None,
        });
        assert_eq!(
            r.status_line().unwrap(),
            "ctx 61% (2.4k/4k tokens) · $0.0123"
        );
        r.track(&turn_ended("main", Some(0.0001)));
        r.track(&context("main", 900, 4000, true));
        assert_eq!(
            r.status_line().unwrap(),
            "ctx ~22% (900/4k tokens) · $0.0124"
        );
        // `/compact` is outside any turn: its summary request counts on its
        // own; an automatic one is already in its turn's cost.
        let compacted = |trigger, agent: &str| Event::CompactionEnded {
            agent: agent.into(),
            trigger,
            tokens_before: 3400,
            tokens_after: 900,
            kept_messages: 2,
            error: None,
            cost_usd: Some(0.0100),
        };
        r.track(&compacted(CompactTrigger::Auto, "main"));
        r.track(&compacted(CompactTrigger::Manual, "a1"));
        r.track(&compacted(CompactTrigger::Manual, "main"));
        assert_eq!(
            r.status_line().unwrap(),
            "ctx ~22% (900/4k tokens) · $0.0224"
        );
    }

    #[test]
    fn without_prices_the_cost_is_left_out() {
        let mut r = HumanRenderer::default();
        r.track(&context("main", 61_000, 128_000, false));
        r.track(&turn_ended("main", None));
        assert_eq!(r.status_line().unwrap(), "ctx 47% (61k/128k tokens)");
    }

    #[test]
    fn compaction_lines_say_how_it_went() {
        let mut r = HumanRenderer::default();
        let started = Event::CompactionStarted {
            agent: "main".into(),
            trigger: CompactTrigger::Auto,
            tokens_before: 3400,
        };
        assert_eq!(
            r.compaction_line(&started).unwrap(),
            "compacting… (auto, 3.4k tokens)"
        );
        let ended = |agent: &str, kept: usize, error: Option<&str>| Event::CompactionEnded {
            agent: agent.into(),
            trigger: CompactTrigger::Manual,
            tokens_before: 3400,
            tokens_after: if error.is_some() { 3400 } else { 900 },
            kept_messages: kept,
            error: error.map(str::to_string),
            cost_usd: None,
        };
        assert_eq!(
            r.compaction_line(&ended("main", 2, None)).unwrap(),
            "compacted: 3.4k → 900 tokens, 2 messages kept"
        );
        assert_eq!(
            r.compaction_line(&ended("main", 1, None)).unwrap(),
            "compacted: 3.4k → 900 tokens, 1 message kept"
        );
        assert_eq!(
            r.compaction_line(&ended("main", 0, Some("the summary request failed: 500")))
                .unwrap(),
            "compaction failed: the summary request failed: 500; the conversation is unchanged"
        );
        // A child's lines carry the prefix its other lines have.
        r.track(&Event::SubagentStarted {
            index: 2,
            total: 3,
            agent_id: "a7".into(),
            agent_type: "Explore".into(),
            description: "look".into(),
            model: "m".into(),
            mode: cadre_core::protocol::PermissionMode::Plan,
            path: Vec::new(),
            color: None,
        });
        assert_eq!(
            r.compaction_line(&ended("a7", 2, None)).unwrap(),
            "  [subagent 2/3 Explore] compacted: 3.4k → 900 tokens, 2 messages kept"
        );
        assert_eq!(
            r.compaction_line(&Event::CompactionStarted {
                agent: "a9".into(),
                trigger: CompactTrigger::LengthError,
                tokens_before: 5000,
            })
            .unwrap(),
            "  [subagent a9] compacting… (after a length error, 5k tokens)"
        );
    }

    fn tag(index: usize, total: usize, agent_type: &str, agent_id: &str) -> ChildTag {
        ChildTag {
            index,
            total,
            agent_type: agent_type.into(),
            agent_id: agent_id.into(),
        }
    }

    #[test]
    fn progress_lines_show_the_argument_and_the_nesting() {
        let progress = |summary: &str, path: Vec<ChildTag>| Event::SubagentProgress {
            index: 2,
            total: 2,
            agent_type: "Explore".into(),
            agent_id: "b2".into(),
            tool: "Grep".into(),
            outcome: cadre_core::protocol::ChildCallOutcome::Completed,
            summary: summary.into(),
            path,
        };
        assert_eq!(
            progress_line(&progress(
                "\"parse_config\"",
                vec![tag(2, 2, "Explore", "b2")]
            ))
            .unwrap(),
            "  [subagent 2/2 Explore] Grep \"parse_config\": completed"
        );
        assert_eq!(
            progress_line(&progress(
                "src/x.rs",
                vec![tag(1, 3, "Explore", "a1"), tag(2, 2, "Explore", "b2")]
            ))
            .unwrap(),
            "  [subagent 1/3 Explore > 2/2 Explore] Grep src/x.rs: completed"
        );
        // An older event: no summary, no path.
        assert_eq!(
            progress_line(&progress("", Vec::new())).unwrap(),
            "  [subagent 2/2 Explore] Grep: completed"
        );
    }
}
