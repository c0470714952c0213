//! The TUI's state: a plain model updated from the session's events and the
//! user's keys. Keys never act on the session directly: they leave
//! operations in [`App::outbox`] for the loop to submit, so the whole model
//! is testable without a terminal or a session.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use cadre_core::protocol::{
    ApprovalAnswer, ApprovalQuestion, CompactTrigger, Event, HookDecision, McpStatus, Op,
    PermissionMode, RewindAction, TeammateState, TurnStatus,
};
use cadre_core::tools::ask_user::AskedQuestion;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::children::{Child, ChildState, Children, format_tokens};
use crate::commands::{COMMANDS_HELP, Command, Input, TasksCommand, parse};
use crate::completion::Completer;
use crate::host::{HostReply, HostRequest};
use crate::pane::{PaneOut, Panes};
use crate::panes::board::BoardPane;
use crate::panes::todos::{TodoBoard, TodosPane};
use crate::prompt::Prompt;
use crate::team::{Team, TeamInput};
use crate::transcript::{CallOutcome, Level, Transcript};

mod team_keys;

/// The agent id of the top-level agent.
pub use cadre_core::protocol::MAIN_AGENT as MAIN;

/// Rows one notch of the mouse wheel scrolls.
pub const WHEEL_ROWS: usize = 3;

/// How soon a second Ctrl+C must follow the first to leave.
pub const DOUBLE_CTRL_C: Duration = Duration::from_secs(2);

/// How soon a second Esc on an empty prompt must follow the first to open
/// the picker of messages to go back to.
pub const DOUBLE_ESC: Duration = Duration::from_secs(1);

/// How long a newly shown question ignores keys: what was being typed when
/// it appeared must not answer it.
pub const DIALOG_GRACE: Duration = Duration::from_millis(300);

/// What the status line says about the session that events do not.
#[derive(Debug, Clone, Default)]
pub struct SessionInfo {
    /// Model id.
    pub model: String,
    /// Permission mode.
    pub permission_mode: PermissionMode,
    /// Working directory, as shown (`~` for home).
    pub cwd: String,
    /// The git branch of the working directory, if any.
    pub git_branch: Option<String>,
    /// The working directory itself, whose files `@` completes (none: no file completion).
    pub root: std::path::PathBuf,
    /// The user's status line command (`statusLine`), if one applies.
    pub status_line: Option<crate::status_line::StatusLineSetup>,
}

/// The main agent's context use, from its last `context_usage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextShown {
    /// Percent of the window.
    pub percent: u64,
    /// True when estimated.
    pub estimated: bool,
}

/// A question waiting for the user.
#[derive(Debug, Clone)]
pub struct Question {
    /// Its id, for `Op::ApprovalAnswer`.
    pub id: u64,
    /// The question.
    pub question: ApprovalQuestion,
    /// Answered here; waiting for the session to say so.
    pub answered: bool,
}

/// Everything the screen shows.
#[derive(Debug)]
pub struct App {
    /// Model, mode, cwd, branch.
    pub info: SessionInfo,
    /// The conversation.
    pub transcript: Transcript,
    /// Subagents running now (and their batches).
    pub children: Children,
    /// The prompt being typed.
    pub prompt: Prompt,
    /// Questions, oldest first; the dialog shows the first unanswered one.
    pub questions: Vec<Question>,
    /// What the user is typing to tell the model what to do instead (after `i` in the dialog).
    pub instead: Option<String>,
    /// True while a turn of the main agent runs.
    pub turn_running: bool,
    /// Messages sent whose turn has not started yet.
    pub messages_owed: usize,
    /// `/compact`s sent that have not ended yet.
    pub compactions_owed: usize,
    /// Diffs expanded and tool inputs shown (Ctrl+O).
    pub verbose: bool,
    /// Transcript rows scrolled up from the bottom.
    pub scroll: usize,
    /// Rows a page scroll moves (set by the view from the transcript's height).
    pub page: usize,
    /// The main agent's context use.
    pub context: Option<ContextShown>,
    /// Tokens the session used (the main agent's requests and ended children).
    pub tokens: u64,
    /// What the session cost in billionths of a dollar, when any price was known.
    pub cost_nanos: Option<u64>,
    /// Background tasks running now.
    pub background: BTreeSet<String>,
    /// Background tasks that ended since the user last opened `/tasks`.
    pub unread: BTreeSet<String>,
    /// `/tasks` was opened and its pane (or one over it) is still open: what ends is seen.
    tasks_open: bool,
    /// A one-line hint over the prompt (`Press Ctrl+C again to leave`).
    pub hint: Option<String>,
    /// When Ctrl+C was last pressed.
    last_ctrl_c: Option<Instant>,
    /// When Esc was last pressed on an empty, idle prompt.
    last_esc: Option<Instant>,
    /// When the main agent's model request went out, until its reply starts
    /// (a local server may process a prompt for minutes, silently).
    pub waiting_since: Option<Instant>,
    /// The question the dialog shows and since when (keys wait [`DIALOG_GRACE`]).
    question_shown: Option<(u64, Instant)>,
    /// A rewind asked for: (message, later sends of it skipped), until the session says it happened.
    rewinding: Option<(String, usize)>,
    /// What a code restore did, held until the conversation goes back too
    /// (the cut would take it off the transcript).
    restored_note: Option<String>,
    /// What was submitted at the prompt, oldest first (this session only).
    history: Vec<String>,
    /// Entries sent since the loop last saved them (to the project's history file).
    pub history_added: Vec<String>,
    /// The history entry shown, while walking it with ↑/↓.
    history_at: Option<usize>,
    /// The prompt as typed before walking the history.
    draft: String,
    /// Operations for the session, in order.
    pub outbox: Vec<Op>,
    /// Requests for the host (commands the TUI does not answer itself), in order.
    pub requests: Vec<HostRequest>,
    /// Screens open over the transcript (`/tasks`, `/agents`…), the top one taking the keys.
    pub panes: Panes,
    /// `@path` and `/` completion: the popup and the project's files.
    pub completion: Completer,
    /// The main agent's latest todo list (Ctrl+T shows it).
    pub todos: TodoBoard,
    /// The session's team, if it has one (the panel lists it, Ctrl+T shows its board).
    pub team: Team,
    /// The teammate selected in the panel while the panel has the keys (↓
    /// from the prompt's last line gives them to it, ↑ from its first row
    /// gives them back).
    pub team_focus: Option<usize>,
    /// Host requests not answered in full yet ([`HostReply::Done`] not seen).
    pub host_pending: usize,
    /// Messages typed while the host was busy (a session switch waits for
    /// the old session to wind down): sent when it is done, to the session shown then.
    pub held: Vec<String>,
    /// The image files attached to each held message, in step with `held`.
    pub held_images: Vec<Vec<String>>,
    /// The user asked to leave.
    pub exit: bool,
    /// The skills and commands the session runs for `/name`.
    pub commands: Vec<cadre_core::protocol::CommandEntry>,
    /// The user's status line's last output, shown instead of cadre's own.
    pub status_rows: Option<Vec<crate::status_line::StatusRow>>,
}

/// Lines of a `!command`'s output the transcript shows (the model gets it all).
const SHELL_LINES_SHOWN: usize = 40;

/// A `!command`'s output as the transcript shows it: the first lines, then
/// how many more there were.
fn shell_output_shown(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    if lines.len() <= SHELL_LINES_SHOWN {
        return if output.is_empty() {
            "(no output)".to_string()
        } else {
            output.to_string()
        };
    }
    format!(
        "{}\n… {} more lines",
        lines[..SHELL_LINES_SHOWN].join("\n"),
        lines.len() - SHELL_LINES_SHOWN
    )
}

impl App {
    /// An empty screen for a session.
    /// The skills and commands the session runs for `/name`.
    pub fn with_commands(mut self, commands: Vec<cadre_core::protocol::CommandEntry>) -> App {
        self.commands = commands;
        self
    }

    /// Starts ↑'s history with `entries` (oldest first), e.g. earlier sessions' prompts.
    pub fn with_history(mut self, entries: Vec<String>) -> App {
        self.history = entries;
        self
    }

    /// A model with nothing shown yet.
    pub fn new(info: SessionInfo) -> App {
        App {
            info,
            transcript: Transcript::default(),
            children: Children::default(),
            prompt: Prompt::default(),
            questions: Vec::new(),
            turn_running: false,
            messages_owed: 0,
            compactions_owed: 0,
            verbose: false,
            scroll: 0,
            page: 10,
            context: None,
            tokens: 0,
            cost_nanos: None,
            background: BTreeSet::new(),
            unread: BTreeSet::new(),
            tasks_open: false,
            hint: None,
            instead: None,
            last_ctrl_c: None,
            last_esc: None,
            waiting_since: None,
            question_shown: None,
            rewinding: None,
            restored_note: None,
            history: Vec::new(),
            history_added: Vec::new(),
            history_at: None,
            draft: String::new(),
            outbox: Vec::new(),
            requests: Vec::new(),
            panes: Panes::default(),
            completion: Completer::default(),
            todos: TodoBoard::default(),
            team: Team::default(),
            team_focus: None,
            host_pending: 0,
            held: Vec::new(),
            held_images: Vec::new(),
            exit: false,
            commands: Vec::new(),
            status_rows: None,
        }
    }

    /// Columns of blank space before the user's status line's rows.
    pub fn status_padding(&self) -> u16 {
        self.info.status_line.as_ref().map_or(0, |s| s.padding)
    }

    /// The question the dialog shows, and how many more wait behind it.
    pub fn open_question(&self) -> Option<(&Question, usize)> {
        let mut waiting = self.questions.iter().filter(|q| !q.answered);
        let first = waiting.next()?;
        Some((first, waiting.count()))
    }

    fn add_cost(&mut self, usd: f64) {
        let nanos = (usd * 1e9).round().max(0.0) as u64;
        *self.cost_nanos.get_or_insert(0) += nanos;
    }

    /// Updates the model from one event of the session.
    pub fn apply(&mut self, event: &Event, now: Instant) {
        self.apply_event(event, now);
        self.track_question(now);
    }

    /// True once the open question has shown for [`DIALOG_GRACE`]: its keys answer it.
    pub fn dialog_armed(&self, now: Instant) -> bool {
        self.question_shown
            .is_some_and(|(_, since)| now.saturating_duration_since(since) >= DIALOG_GRACE)
    }

    /// Notes when the question the dialog shows changed.
    fn track_question(&mut self, now: Instant) {
        let open = self.open_question().map(|(q, _)| q.id);
        if open != self.question_shown.map(|(id, _)| id) {
            self.question_shown = open.map(|id| (id, now));
        }
    }

    fn apply_event(&mut self, event: &Event, now: Instant) {
        match event {
            Event::SessionStarted {
                session_id, model, ..
            } => {
                self.info.model = model.clone();
                self.transcript.notice(
                    Level::Info,
                    format!(
                        "cadre · session {session_id} · /help lists commands and keys · Ctrl+C twice leaves"
                    ),
                );
            }
            Event::Rewound {
                agent,
                prompt,
                action,
                ..
            } if agent == MAIN => {
                let later_same = match self.rewinding.take() {
                    Some((p, later)) if p == *prompt => later,
                    _ => 0,
                };
                self.transcript.cut_before_user(prompt, later_same);
                let said = match action {
                    RewindAction::Summarize => {
                        "summarized: the conversation from this message on is now a summary"
                    }
                    RewindAction::Both => {
                        "went back: the code and the conversation are as they were before this message"
                    }
                    _ => {
                        "went back: the conversation continues from before this message (files were not changed back)"
                    }
                };
                self.transcript.notice(Level::Info, said);
                if let Some(note) = self.restored_note.take() {
                    self.transcript.notice(Level::Info, note);
                }
                // A summary keeps what the message asked; otherwise it returns for editing.
                if *action != RewindAction::Summarize {
                    self.prompt.take();
                    self.prompt.insert(prompt);
                }
            }
            Event::CodeRestored {
                agent,
                restored,
                removed,
                skipped,
                bash_commands,
                ..
            } if agent == MAIN => {
                let lines = crate::panes::rewind::restored_lines(
                    restored,
                    removed,
                    skipped,
                    bash_commands,
                );
                if self.rewinding.is_some() {
                    self.restored_note = Some(lines.join("\n"));
                } else {
                    self.transcript.notice(Level::Info, lines.join("\n"));
                }
            }
            Event::RewindNeedsConfirmation {
                agent,
                prompt,
                later_same,
                action,
                files,
            } if agent == MAIN => {
                // Nothing went back; the answer sends the rewind again.
                self.rewinding = None;
                self.panes
                    .open(Box::new(crate::panes::rewind::RewindConfirm::new(
                        prompt.clone(),
                        *later_same,
                        *action,
                        files.clone(),
                    )));
            }
            Event::ModelChanged { agent, model } if agent == MAIN => {
                self.info.model = model.clone();
                self.transcript
                    .notice(Level::Info, format!("model: {model} from the next request on"));
            }
            Event::ModeChanged { agent, mode } if agent == MAIN => {
                self.info.permission_mode = *mode;
                self.transcript
                    .notice(Level::Info, format!("permission mode: {mode}"));
            }
            Event::TurnStarted { agent, .. } if agent == MAIN => {
                self.turn_running = true;
                self.messages_owed = self.messages_owed.saturating_sub(1);
            }
            Event::RequestStarted { agent, .. } if agent == MAIN => {
                self.waiting_since = Some(Instant::now());
            }
            Event::TextDelta { agent, text } if agent == MAIN => {
                self.waiting_since = None;
                self.transcript.stream(text)
            }
            Event::Retrying {
                agent,
                attempt,
                wait_ms,
                reason,
                discarded_text,
                ..
            } if agent == MAIN => {
                if *discarded_text {
                    self.transcript.discard_stream();
                }
                self.transcript.notice(
                    Level::Warning,
                    format!(
                        "model request failed ({reason}); retrying in {:.1}s (try {attempt})",
                        *wait_ms as f64 / 1000.0
                    ),
                );
            }
            Event::AssistantMessage { agent, text, .. } if agent == MAIN => {
                self.waiting_since = None;
                self.transcript.finish_message(text)
            }
            Event::ToolCallStarted {
                agent,
                call_id,
                tool,
                input,
                summary,
            } if agent == MAIN => {
                if tool == "TodoWrite" {
                    self.todos.write(input);
                }
                self.transcript.call_started(call_id, tool, summary, input)
            }
            Event::ToolCallEnded {
                agent,
                call_id,
                is_error,
                outcome,
                ..
            } if agent == MAIN => {
                self.transcript.call_ended(
                    call_id,
                    CallOutcome {
                        is_error: *is_error,
                        text: outcome.clone(),
                    },
                );
            }
            // The provider's own search: shown as a call that has already ended.
            Event::ServerToolUsed {
                agent,
                call_id,
                tool,
                query,
                results,
                error,
            } if agent == MAIN => {
                let input = serde_json::json!({ "query": query });
                self.transcript
                    .call_started(call_id, tool, &format!("{query:?}"), &input);
                let text = match error {
                    Some(code) => format!("error: {code}"),
                    None => results
                        .iter()
                        .map(|hit| format!("{} — {}", hit.title, hit.url))
                        .collect::<Vec<_>>()
                        .join("\n"),
                };
                self.transcript.call_ended(
                    call_id,
                    CallOutcome {
                        is_error: error.is_some(),
                        text,
                    },
                );
            }
            Event::Usage {
                agent,
                usage,
                cost_usd,
            } if agent == MAIN => {
                self.tokens += usage.total();
                // The turn's cost is added at its end (it holds compactions too).
                let _ = cost_usd;
            }
            Event::ContextUsage {
                agent,
                percent,
                estimated,
                ..
            } if agent == MAIN => {
                self.context = Some(ContextShown {
                    percent: *percent,
                    estimated: *estimated,
                })
            }
            Event::CompactionStarted { agent, .. } => {
                let who = self.who(agent);
                self.transcript
                    .notice(Level::Info, format!("{who}compacting…"));
            }
            Event::CompactionEnded {
                agent,
                trigger,
                tokens_before,
                tokens_after,
                error,
                cost_usd,
                ..
            } => {
                let who = self.who(agent);
                let text = match error {
                    None => format!(
                        "{who}compacted: {} → {} tokens",
                        format_tokens(*tokens_before),
                        format_tokens(*tokens_after)
                    ),
                    Some(e) => format!("{who}compaction failed: {e}"),
                };
                let level = if error.is_some() {
                    Level::Warning
                } else {
                    Level::Info
                };
                self.transcript.notice(level, text);
                if agent == MAIN && *trigger == CompactTrigger::Manual {
                    if let Some(usd) = cost_usd {
                        self.add_cost(*usd);
                    }
                    self.compactions_owed = self.compactions_owed.saturating_sub(1);
                }
            }
            Event::TurnEnded {
                agent,
                status,
                error,
                cost_usd,
                ..
            } if agent == MAIN => {
                self.turn_running = false;
                self.waiting_since = None;
                self.transcript.close_stream();
                if let Some(usd) = cost_usd {
                    self.add_cost(*usd);
                }
                match (status, error) {
                    (TurnStatus::Completed, _) => {}
                    (TurnStatus::Interrupted, _) => {
                        self.transcript.notice(Level::Warning, "interrupted")
                    }
                    (_, Some(e)) => self.transcript.notice(Level::Error, format!("error: {e}")),
                    (_, None) => {}
                }
                self.children.clear_when_idle();
            }
            Event::ApprovalRequested { question, id } => self.questions.push(Question {
                id: *id,
                question: question.clone(),
                answered: false,
            }),
            Event::ApprovalAnswered { agent, tool, .. } => {
                let same = |q: &Question| q.question.agent == *agent && q.question.tool == *tool;
                let at = self
                    .questions
                    .iter()
                    .position(|q| q.answered && same(q))
                    .or_else(|| self.questions.iter().position(same));
                if let Some(i) = at {
                    self.questions.remove(i);
                }
            }
            Event::SessionResumed {
                session_id,
                messages,
                unknown_calls,
            } => self.transcript.notice(
                Level::Info,
                format!(
                    "resumed session {session_id}: {messages} messages, {} call(s) recorded as unknown",
                    unknown_calls.len()
                ),
            ),
            Event::SubagentStarted {
                index,
                total,
                agent_id,
                agent_type,
                description,
                path,
                color,
                ..
            } => self.children.start(
                Child {
                    agent_id: agent_id.to_string(),
                    agent_type: agent_type.clone(),
                    color: color.clone(),
                    description: description.clone(),
                    index: *index,
                    total: *total,
                    state: ChildState::Running,
                    tool_calls: 0,
                    tokens: None,
                    started: now,
                    ran: None,
                    last_activity: None,
                },
                // A nested child hangs under the child that started it.
                path.len()
                    .checked_sub(2)
                    .and_then(|i| path.get(i))
                    .map(|parent| parent.agent_id.to_string()),
            ),
            Event::SubagentProgress {
                agent_id,
                tool,
                outcome,
                summary,
                ..
            } => self.children.progress(
                agent_id,
                if summary.is_empty() {
                    format!("{tool}: {outcome}")
                } else {
                    format!("{tool} {summary}: {outcome}")
                },
            ),
            Event::SubagentBackgrounded {
                agent_id, task_id, ..
            } => {
                self.background.insert(task_id.clone());
                if let Some(summary) = self.children.backgrounded(agent_id, task_id, now) {
                    self.transcript.notice(Level::Info, format!("⎿ {summary}"));
                }
            }
            Event::SubagentEnded {
                agent_id,
                status,
                tool_calls,
                usage,
                duration_ms,
                cost_usd,
                error,
                ..
            } => {
                let tokens = usage.total();
                self.tokens += tokens;
                if let Some(usd) = cost_usd {
                    self.add_cost(*usd);
                }
                if let Some(e) = error
                    && self.children.get_mut(agent_id).is_none()
                {
                    self.transcript
                        .notice(Level::Warning, format!("subagent {agent_id}: {e}"));
                }
                if let Some(summary) = self.children.end(
                    agent_id,
                    *status,
                    *tool_calls,
                    tokens,
                    Duration::from_millis(*duration_ms),
                ) {
                    self.transcript.notice(Level::Info, format!("⎿ {summary}"));
                }
                if !self.turn_running {
                    self.children.clear_when_idle();
                }
            }
            Event::TaskStarted {
                task_id,
                background,
                ..
            } if *background => {
                self.background.insert(task_id.clone());
            }
            Event::TaskEnded {
                task_id,
                status,
                description,
            } if self.background.remove(task_id) => {
                if !self.tasks_open {
                    self.unread.insert(task_id.clone());
                }
                self.transcript.notice(
                    Level::Info,
                    format!("background task {task_id} ({description}) {status}"),
                );
            }
            Event::ShellRan {
                output, is_error, ..
            } => {
                let level = if *is_error {
                    Level::Warning
                } else {
                    Level::Info
                };
                self.transcript
                    .notice(level, shell_output_shown(output.trim_end()));
            }
            Event::Warning { message } => self
                .transcript
                .notice(Level::Warning, format!("warning: {message}")),
            Event::TeammateChanged {
                name,
                agent_id,
                agent_type,
                state,
                error,
            } => {
                let joined = self.team.member(name).is_none();
                self.team
                    .changed(name, agent_id, agent_type, *state, error.as_deref(), now);
                // Working and idle alternate every turn: the panel shows
                // those; the transcript tells of a start, a failure, an end.
                let said = match (state, error) {
                    (TeammateState::Failed, Some(e)) => {
                        Some((Level::Warning, format!("teammate {name} failed: {e}")))
                    }
                    (TeammateState::Failed, None) => {
                        Some((Level::Warning, format!("teammate {name} failed")))
                    }
                    (TeammateState::Ended, _) => {
                        Some((Level::Info, format!("teammate {name} ended")))
                    }
                    _ if joined => Some((
                        Level::Info,
                        format!("teammate {name} ({agent_type}) joined the team"),
                    )),
                    _ => None,
                };
                if let Some((level, text)) = said {
                    self.transcript.notice(level, text);
                }
                self.clamp_team_focus();
            }
            Event::TeamMessageSent { from, to, summary } => {
                self.team.enabled = true;
                let about = summary.as_deref().unwrap_or("(message)");
                self.transcript
                    .notice(Level::Info, format!("✉ {from} → {to}: {about}"));
            }
            Event::BoardTaskChanged {
                task_id,
                subject,
                status,
                owner,
                blocked_by,
            } => {
                self.team.enabled = true;
                self.team.board.change(crate::team::BoardEntry {
                    id: task_id.clone(),
                    subject: subject.clone(),
                    status: *status,
                    owner: owner.clone(),
                    blocked_by: blocked_by.clone(),
                });
            }
            Event::Usage { agent, usage, .. } => {
                if let Some(member) = self.team.by_agent(agent) {
                    *member.tokens.get_or_insert(0) += usage.total();
                }
            }
            Event::McpServerStatus {
                server,
                status,
                tools,
                message,
            } => {
                let level = if *status == McpStatus::Failed {
                    Level::Warning
                } else {
                    Level::Info
                };
                if let Some(line) =
                    crate::commands::mcp_status_line(server, *status, *tools, message.as_deref())
                {
                    self.transcript.notice(level, line);
                }
            }
            // A hook that decided something is shown; one that only ran is not.
            Event::HookEnded {
                event,
                command,
                decision,
                duration_ms,
                ..
            } if *decision != HookDecision::Continue => {
                let level = if matches!(decision, HookDecision::Error | HookDecision::Timeout) {
                    Level::Warning
                } else {
                    Level::Info
                };
                self.transcript.notice(
                    level,
                    crate::commands::hook_line(*event, command, *decision, *duration_ms),
                );
            }
            _ => {}
        }
    }

    /// Rows the whole transcript takes at `width` (each entry's layout is cached).
    pub fn transcript_rows(&self, width: u16, theme: &crate::theme::Theme) -> usize {
        self.transcript
            .entries()
            .iter()
            .map(|e| e.rows(width, self.verbose, theme).len())
            .sum()
    }

    /// True while the main agent works on something the user asked for.
    pub fn busy(&self) -> bool {
        self.turn_running || self.messages_owed > 0 || self.compactions_owed > 0
    }

    /// `[subagent 2/3 Explore] ` for a child, nothing for the main agent.
    fn who(&mut self, agent: &str) -> String {
        if agent == MAIN {
            return String::new();
        }
        match self.children.get_mut(agent) {
            Some(c) => format!("[subagent {}/{} {}] ", c.index, c.total, c.agent_type),
            None => format!("[subagent {agent}] "),
        }
    }

    /// A question the session withdrew (an interrupt, or it was answered elsewhere).
    pub fn withdraw(&mut self, id: u64) {
        if self.open_question().is_some_and(|(q, _)| q.id == id) {
            self.instead = None;
        }
        self.questions.retain(|q| q.id != id);
    }

    /// Shift+Tab: default → acceptEdits → plan → default, as Claude Code
    /// cycles; from any other mode it goes to default. The status line
    /// changes when the session says the mode changed.
    fn cycle_mode(&mut self) {
        let next = match self.info.permission_mode {
            PermissionMode::Default => PermissionMode::AcceptEdits,
            PermissionMode::AcceptEdits => PermissionMode::Plan,
            _ => PermissionMode::Default,
        };
        self.outbox.push(Op::SetMode { mode: next });
    }

    /// Handles one key.
    pub fn key(&mut self, key: KeyEvent, now: Instant) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if !(ctrl && key.code == KeyCode::Char('c')) {
            self.hint = None;
        }
        // The dialog is modal: its keys first, and typing waits. Keys in
        // its first moments are swallowed (they were meant for the prompt).
        self.track_question(now);
        if self.open_question().is_some() {
            let passes = matches!(key.code, KeyCode::Esc | KeyCode::PageUp | KeyCode::PageDown)
                || (ctrl && key.code == KeyCode::Char('c'));
            if !self.dialog_armed(now) && !passes {
                return;
            }
            if self.dialog_key(key) {
                self.track_question(now);
                return;
            }
        }
        // A pane takes every key but Ctrl+C (which still clears and leaves);
        // a teammate's transcript leaves typing to the prompt.
        let ctrl_c = ctrl && key.code == KeyCode::Char('c');
        if let Some(name) = self.panes.top().and_then(|p| p.teammate())
            && !ctrl_c
            && self.teammate_key(&name, key)
        {
            return;
        }
        if !self.panes.is_empty() && !ctrl_c {
            let mut out = PaneOut::default();
            self.panes.key(key, &mut out);
            self.pane_out(out);
            self.tasks_open &= !self.panes.is_empty();
            return;
        }
        // No pane is open (so neither is `/tasks`).
        self.tasks_open = false;
        if self.team_focus.is_some() && self.panel_key(key) {
            return;
        }
        if self.completion_key(key, now) {
            return;
        }
        match (key.code, ctrl) {
            (KeyCode::Char('c'), true) => self.ctrl_c(now),
            (KeyCode::Esc, _) if self.busy() || self.children.any_running() => {
                self.outbox.push(Op::Interrupt)
            }
            (KeyCode::Esc, _) if self.prompt.is_empty() => self.esc_on_empty(now),
            (KeyCode::Char('b'), true) if self.children.any_running() => {
                self.outbox.push(Op::BackgroundBatch)
            }
            (KeyCode::Char('o'), true) => self.verbose = !self.verbose,
            (KeyCode::Char('t'), true) if self.team.enabled => self
                .panes
                .open(Box::new(BoardPane::new(self.team.board.clone()))),
            (KeyCode::Char('t'), true) => self
                .panes
                .open(Box::new(TodosPane::new(self.todos.clone()))),
            (KeyCode::BackTab, _) => self.cycle_mode(),
            (KeyCode::Char('j'), true) => self.prompt.insert("\n"),
            (KeyCode::Char('v'), true) => self.paste_clipboard_image(),
            (KeyCode::Enter, _)
                if key
                    .modifiers
                    .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) =>
            {
                self.prompt.insert("\n")
            }
            (KeyCode::Enter, _) => self.submit(),
            (KeyCode::Char('a'), true) => self.prompt.home(),
            (KeyCode::Char('e'), true) => self.prompt.end(),
            (KeyCode::Char('u'), true) => self.prompt.kill_to_line_start(),
            (KeyCode::Char('w'), true) => self.prompt.delete_word(),
            (KeyCode::Char(c), false) => self.prompt.insert(c.encode_utf8(&mut [0; 4])),
            (KeyCode::Tab, _) => self.prompt.insert("\t"),
            (KeyCode::Backspace, _) => self.prompt.backspace(),
            (KeyCode::Delete, _) => self.prompt.delete(),
            (KeyCode::Left, _) => self.prompt.left(),
            (KeyCode::Right, _) => self.prompt.right(),
            (KeyCode::Home, _) => self.prompt.home(),
            (KeyCode::End, true) => self.scroll = 0,
            (KeyCode::End, false) => self.prompt.end(),
            // On the first or last line, ↑ and ↓ walk through what was sent before.
            (KeyCode::Up, _) => self.arrow_up(),
            (KeyCode::Down, _) => self.arrow_down(),
            (KeyCode::PageUp, _) => self.scroll += self.page.max(1),
            (KeyCode::PageDown, _) => self.scroll = self.scroll.saturating_sub(self.page.max(1)),
            _ => {}
        }
        // Typing opens the popup; moving (a prompt recalled with ↑) only updates an open one.
        let edits = matches!(
            key.code,
            KeyCode::Char(_) | KeyCode::Backspace | KeyCode::Delete
        );
        if edits || self.completion.popup.is_some() {
            self.refresh_completion(now);
        }
    }

    /// Pasted text goes into the prompt as one piece (newlines kept; a
    /// large paste as one block, see [`Prompt::paste`]).
    /// A pasted (or dropped) path of an image file becomes an `[Image #N]`
    /// chip whose image is sent with the message.
    pub fn paste(&mut self, text: &str) {
        let to_prompt =
            self.panes.is_empty() || self.panes.top().and_then(|p| p.teammate()).is_some();
        if self.open_question().is_none() && to_prompt {
            match crate::clipboard::pasted_image_path(text, &self.info.root) {
                Some(path) if self.panes.is_empty() => {
                    self.prompt.attach_image(path.display().to_string());
                }
                _ => self.prompt.paste(text),
            }
            self.refresh_completion(Instant::now());
        }
    }

    /// Ctrl+V: the clipboard's image as an `[Image #N]` chip, or a hint
    /// saying why not.
    fn paste_clipboard_image(&mut self) {
        match crate::clipboard::paste_image() {
            Ok(path) => {
                self.prompt.attach_image(path.display().to_string());
            }
            Err(why) => self.transcript.notice(Level::Warning, why),
        }
    }

    /// The mouse wheel (when capture is on): the transcript scrolls [`WHEEL_ROWS`].
    pub fn wheel(&mut self, up: bool) {
        if !self.panes.is_empty() {
            // The transcript is under the pane: scrolling it would go unseen.
        } else if up {
            self.scroll += WHEEL_ROWS;
        } else {
            self.scroll = self.scroll.saturating_sub(WHEEL_ROWS);
        }
    }

    /// A key while the dialog shows; true when the dialog took it.
    fn dialog_key(&mut self, key: KeyEvent) -> bool {
        // The agent's own question: an option's number or an answer of the
        // user's own, typed until Enter (an empty one declines).
        if let Some(asked) = self
            .open_question()
            .and_then(|(q, _)| AskedQuestion::from_approval(&q.question))
        {
            let text = self.instead.get_or_insert_with(String::new);
            match key.code {
                KeyCode::Enter => {
                    let typed = std::mem::take(text);
                    self.instead = None;
                    let answer = match asked.answer_for(&typed) {
                        Some(answer) => ApprovalAnswer::Instead(answer),
                        None => ApprovalAnswer::No,
                    };
                    self.answer_open(answer);
                }
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                    return false;
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => text.push(c),
                KeyCode::Esc | KeyCode::PageUp | KeyCode::PageDown => return false,
                _ => {}
            }
            return true;
        }
        // Typing what to do instead: text until Enter; Esc goes back to the choices.
        if let Some(text) = &mut self.instead {
            match key.code {
                KeyCode::Enter if !text.trim().is_empty() => {
                    let text = std::mem::take(text);
                    self.instead = None;
                    self.answer_open(ApprovalAnswer::Instead(text));
                }
                KeyCode::Esc => self.instead = None,
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => text.push(c),
                KeyCode::Char('c') => return false,
                _ => {}
            }
            return true;
        }
        let answer = match key.code {
            KeyCode::Char('y' | 'Y') => ApprovalAnswer::Once,
            KeyCode::Char('a' | 'A') => ApprovalAnswer::Session,
            KeyCode::Char('n' | 'N') => ApprovalAnswer::No,
            KeyCode::Char('i' | 'I') => {
                self.instead = Some(String::new());
                return true;
            }
            // Esc, Ctrl+C and scrolling still work over the dialog.
            KeyCode::Esc | KeyCode::PageUp | KeyCode::PageDown => return false,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => return false,
            _ => return true,
        };
        self.answer_open(answer);
        true
    }

    /// Answers the question the dialog shows.
    fn answer_open(&mut self, answer: ApprovalAnswer) {
        if let Some(q) = self.questions.iter_mut().find(|q| !q.answered) {
            q.answered = true;
            self.outbox.push(Op::ApprovalAnswer {
                id: Some(q.id),
                answer,
            });
        }
    }

    /// Esc on an empty, idle prompt: twice opens the picker of messages to go back to.
    fn esc_on_empty(&mut self, now: Instant) {
        let twice = self
            .last_esc
            .is_some_and(|t| now.saturating_duration_since(t) < DOUBLE_ESC);
        if !twice {
            self.last_esc = Some(now);
            self.hint = Some("Esc again to go back to an earlier message".into());
            return;
        }
        self.last_esc = None;
        self.open_rewind();
    }

    /// Opens the picker of messages to go back to (Esc twice, `/rewind`).
    fn open_rewind(&mut self) {
        let sent: Vec<String> = self
            .transcript
            .entries()
            .iter()
            .filter_map(|e| match &e.kind {
                crate::transcript::EntryKind::User(text) => Some(text.clone()),
                _ => None,
            })
            .collect();
        if sent.is_empty() {
            self.hint = Some("no message to go back to yet".into());
            return;
        }
        self.panes
            .open(Box::new(crate::panes::rewind::RewindPicker::new(sent)));
    }

    fn ctrl_c(&mut self, now: Instant) {
        let twice = self
            .last_ctrl_c
            .is_some_and(|t| now.saturating_duration_since(t) < DOUBLE_CTRL_C);
        if twice {
            self.exit = true;
            return;
        }
        self.last_ctrl_c = Some(now);
        self.prompt.take();
        self.hint = Some("Press Ctrl+C again to leave".into());
    }

    fn arrow_up(&mut self) {
        if !self.prompt.up() {
            self.history_back();
        }
    }

    fn arrow_down(&mut self) {
        if self.prompt.down() {
            return;
        }
        // Past the newest entry: down into the team's rows, when there are some.
        if self.history_at.is_none() && !self.team.members.is_empty() {
            self.team_focus = Some(0);
            return;
        }
        self.history_forward();
    }

    /// ↑ past the first line: the previous entry of the history (the
    /// prompt being typed is kept to come back to).
    fn history_back(&mut self) {
        let at = self.history_at.unwrap_or(self.history.len());
        if at == 0 {
            return;
        }
        if self.history_at.is_none() {
            self.draft = self.prompt.take();
        }
        self.history_at = Some(at - 1);
        self.prompt.take();
        self.prompt.insert(&self.history[at - 1]);
    }

    /// ↓ past the last line: the next entry, then the prompt that was being typed.
    fn history_forward(&mut self) {
        let Some(at) = self.history_at else { return };
        self.prompt.take();
        if at + 1 < self.history.len() {
            self.history_at = Some(at + 1);
            self.prompt.insert(&self.history[at + 1]);
        } else {
            self.history_at = None;
            let draft = std::mem::take(&mut self.draft);
            self.prompt.insert(&draft);
        }
    }

    /// Enter: a command runs here, a message goes to the session.
    fn submit(&mut self) {
        let text = self.prompt.expanded();
        let images = self.prompt.image_paths();
        if self.team.enabled && self.team_line(&text) {
            return;
        }
        if text.trim() == "/team" {
            self.remember(&text);
            self.transcript.notice(Level::Info, crate::team::NO_TEAM);
            self.prompt.take();
            return;
        }
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
            self.history_added.push(text.clone());
        }
        self.history_at = None;
        self.draft.clear();
        match parse(&text) {
            Input::Empty => return,
            Input::Message(message) => self.send_with_images(message, images),
            Input::Command(command) => {
                self.transcript.notice(Level::Info, text.trim().to_string());
                self.command(command);
            }
            Input::Usage(usage) => self.transcript.notice(Level::Warning, usage),
            Input::Shell(command) => {
                self.transcript.notice(Level::Info, format!("! {command}"));
                self.outbox.push(Op::Shell { command });
            }
            Input::Unknown(name) => {
                if crate::commands::session_runs(&name, &self.commands) {
                    self.send(text.trim().to_string());
                } else {
                    self.transcript.notice(
                        Level::Warning,
                        format!("unknown command {name} (try /help)"),
                    );
                }
            }
        }
        self.prompt.take();
        self.scroll = 0;
    }

    /// Sends `message` to the session as if typed: shown in the transcript,
    /// held while a host command runs.
    pub fn send(&mut self, message: String) {
        self.send_with_images(message, Vec::new());
    }

    /// [`Self::send`] with image files attached (the prompt's chips).
    pub fn send_with_images(&mut self, message: String, images: Vec<String>) {
        self.transcript
            .push(crate::transcript::EntryKind::User(message.clone()));
        if self.host_pending > 0 {
            self.held.push(message);
            self.held_images.push(images);
        } else {
            self.outbox.push(message_op(message, images));
            self.messages_owed += 1;
        }
    }

    /// Runs a command: the few the screen answers itself here, the rest by the host.
    pub fn command(&mut self, command: Command) {
        match command {
            Command::Help => self.transcript.notice(
                Level::Info,
                format!(
                    "{COMMANDS_HELP}{}\n{TUI_KEYS}",
                    crate::commands::menu_help(&self.commands)
                ),
            ),
            Command::Exit => self.exit = true,
            Command::Rewind(None) => self.open_rewind(),
            Command::Compact(focus) => {
                self.outbox.push(Op::Compact { focus });
                self.compactions_owed += 1;
            }
            Command::Tasks(TasksCommand::List) => {
                // Opening the list is seeing what ended.
                self.unread.clear();
                self.tasks_open = true;
                self.host_pending += 1;
                self.requests
                    .push(HostRequest::Command(Command::Tasks(TasksCommand::List)));
            }
            other => {
                self.host_pending += 1;
                self.requests.push(HostRequest::Command(other));
            }
        }
    }

    /// One host request is answered in full (or can never be): once none
    /// is left, the messages held meanwhile go to the session.
    pub fn host_done(&mut self) {
        self.host_pending = self.host_pending.saturating_sub(1);
        if self.host_pending == 0 {
            let mut images = std::mem::take(&mut self.held_images).into_iter();
            for text in std::mem::take(&mut self.held) {
                self.outbox
                    .push(message_op(text, images.next().unwrap_or_default()));
                self.messages_owed += 1;
            }
        }
    }

    /// Applies what a pane asked for.
    fn pane_out(&mut self, out: PaneOut) {
        for op in &out.ops {
            // Only a rewind of the conversation is followed by `rewound`.
            if let Op::Rewind {
                prompt,
                later_same,
                action,
                ..
            } = op
                && *action != RewindAction::Code
            {
                self.rewinding = Some((prompt.clone(), *later_same));
            }
        }
        self.outbox.extend(out.ops);
        for notice in out.notices {
            self.transcript.notice(Level::Info, notice);
        }
        if let Some(text) = out.prompt {
            self.prompt.take();
            self.prompt.insert(&text);
        }
        for command in out.commands {
            self.command(command);
        }
    }

    /// Applies an answer of the host (all but a session switch, which the loop makes).
    pub fn host_reply(&mut self, reply: HostReply) {
        match reply {
            HostReply::Text(text) if !text.is_empty() => self.transcript.notice(Level::Info, text),
            HostReply::Text(_) => {}
            HostReply::Warning(text) => self.transcript.notice(Level::Warning, text),
            HostReply::Submit(op) => {
                if matches!(op, Op::Compact { .. }) {
                    self.compactions_owed += 1;
                }
                self.outbox.push(op);
            }
            HostReply::Open(pane) => self.panes.open(pane),
            HostReply::Exit => self.exit = true,
            HostReply::Switching => {
                self.hint = Some("switching sessions… (stopping what still runs)".into());
            }
            HostReply::Switched(_) => {}
            HostReply::Done => self.host_done(),
        }
    }

    /// Starts over for another session: the conversation, children, questions
    /// and counters go; the prompt, its history and the settings stay.
    pub fn switch_session(&mut self, info: SessionInfo) {
        let fresh = App::new(info);
        self.info = fresh.info;
        self.transcript = fresh.transcript;
        self.children = fresh.children;
        self.questions.clear();
        self.instead = None;
        self.turn_running = false;
        self.messages_owed = 0;
        self.compactions_owed = 0;
        self.scroll = 0;
        self.context = None;
        self.tokens = 0;
        self.cost_nanos = None;
        self.background.clear();
        self.unread.clear();
        self.tasks_open = false;
        self.hint = None;
        self.panes.clear();
        self.todos.clear();
        self.team.clear();
        self.team_focus = None;
        self.status_rows = None;
        // Messages typed during the switch are the new session's.
        for text in &self.held {
            self.transcript
                .push(crate::transcript::EntryKind::User(text.clone()));
        }
    }
}

/// The operation that sends `text`, with `images` when there are any.
fn message_op(text: String, images: Vec<String>) -> Op {
    if images.is_empty() {
        Op::UserMessage { text }
    } else {
        Op::UserMessageWithImages { text, images }
    }
}

/// The TUI's keys, after the commands in `/help`.
pub const TUI_KEYS: &str = "\
Keys: Enter sends · Shift+Enter or Ctrl+J new line · Esc interrupts the turn · Ctrl+B sends the
running subagents to the background · Ctrl+O verbose tool output · Shift+Tab permission mode ·
PgUp/PgDn scroll (the mouse wheel too with CADRE_TUI_MOUSE=1) · Ctrl+T the todo list ·
@ completes a project path and / a command (↑/↓ choose, Tab or Enter takes, Esc closes) ·
a large paste stays one block · Ctrl+V pastes an image (a pasted image path too) as [Image #N] ·
Ctrl+C clears the prompt, twice leaves
Teams: ↓ past the prompt selects a teammate in the panel (↑/↓ move, ↑ on the first goes back) ·
Enter opens its transcript, where what you type goes to it · Esc interrupts its turn · x stops it ·
Ctrl+T shows the team's task board instead of the todo list";
