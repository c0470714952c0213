//! What one run left behind, read back for the graders: the `--json` events,
//! the parent's session log, the children's logs, the mock's request record
//! (offline) and the project directory next to its fixture.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use cadre_core::protocol::MAIN_AGENT;
use cadre_core::protocol::{ChildCallOutcome, ChildStatus, Event, TurnStatus};
use cadre_core::tasks::{BoardTask, TaskFilter, TaskRow, TaskTable};
use cadre_mock::Record;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who made a call or was asked about one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    /// The top-level agent (`main`).
    Parent,
    /// A child: its agent id and type (when known).
    Child {
        /// Agent id.
        id: String,
        /// Definition name.
        agent_type: Option<String>,
    },
}

impl Who {
    fn of(agent: &str, types: &HashMap<String, String>) -> Who {
        if agent == MAIN_AGENT {
            Who::Parent
        } else {
            Who::Child {
                id: agent.to_string(),
                agent_type: types.get(agent).cloned(),
            }
        }
    }

    /// `parent`, or `child <type> <id8>`.
    pub fn describe(&self) -> String {
        match self {
            Who::Parent => "parent".into(),
            Who::Child { id, agent_type } => format!(
                "child {} {}",
                agent_type.as_deref().unwrap_or("?"),
                id.chars().take(8).collect::<String>()
            ),
        }
    }
}

/// How a tool call ended, as `tool_called.outcome` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallOutcome {
    /// It ran and succeeded.
    Completed,
    /// It ran and failed.
    Failed,
    /// It was denied without running.
    Denied,
}

impl CallOutcome {
    /// The outcome of a `tool_call_ended` event.
    fn of_ended(is_error: bool, outcome: &str) -> CallOutcome {
        // The core marks a denial only in the outcome line (as a child's
        // progress line does, see `EventSink::emit`).
        if outcome.starts_with("error: denied") {
            CallOutcome::Denied
        } else if is_error {
            CallOutcome::Failed
        } else {
            CallOutcome::Completed
        }
    }

    /// The outcome of a `subagent_progress` event.
    fn of_progress(outcome: ChildCallOutcome) -> CallOutcome {
        match outcome {
            ChildCallOutcome::Completed => CallOutcome::Completed,
            ChildCallOutcome::Failed => CallOutcome::Failed,
            ChildCallOutcome::Denied => CallOutcome::Denied,
        }
    }

    /// Its name in `case.yaml` and in reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            CallOutcome::Completed => "completed",
            CallOutcome::Failed => "failed",
            CallOutcome::Denied => "denied",
        }
    }
}

impl fmt::Display for CallOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One tool call seen in the evidence.
#[derive(Debug, Clone)]
pub struct Call {
    /// Who made it.
    pub who: Who,
    /// Canonical tool name.
    pub tool: String,
    /// How it ended, when it did.
    pub outcome: Option<CallOutcome>,
}

/// One denied call.
#[derive(Debug, Clone)]
pub struct Denial {
    /// Whose call.
    pub who: Who,
    /// Tool, when known.
    pub tool: Option<String>,
    /// The text the model was given, when known.
    pub reason: Option<String>,
}

/// A child's end, from `subagent_ended`.
#[derive(Debug, Clone)]
pub struct ChildEnd {
    /// Agent id.
    pub agent_id: String,
    /// Definition name.
    pub agent_type: String,
    /// How it ended.
    pub status: ChildStatus,
    /// Why it did not complete.
    pub error: Option<String>,
}

/// One child's log file.
#[derive(Debug, Clone)]
pub struct ChildLog {
    /// Agent id (the file stem).
    pub agent_id: String,
    /// Its records (lines that do not parse are skipped).
    pub records: Vec<Value>,
}

/// Everything the graders read.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// The task given to cadre.
    pub prompt: String,
    /// Exit status, if cadre exited on its own or after a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended cadre, if one did.
    pub signal: Option<i32>,
    /// Whether the runner killed it for running too long.
    pub timed_out: bool,
    /// The events cadre printed on stdout, in order.
    pub events: Vec<Event>,
    /// Stdout lines that were not events this build reads (the first few).
    pub unparsed: Vec<UnparsedLine>,
    /// How many stdout lines were not events.
    pub unparsed_count: u64,
    /// The tail of stderr.
    pub stderr_tail: String,
    /// The mock's record, sorted by arrival (offline only).
    pub records: Option<Vec<Record>>,
    /// The run's project directory.
    pub project: PathBuf,
    /// The fixture it was copied from.
    pub fixture: PathBuf,
    /// The run's `$CADRE_HOME`.
    pub data_dir: PathBuf,
    /// The session id from `session_started`.
    pub session_id: Option<String>,
    /// The parent's session log, as text.
    pub parent_log_text: String,
    /// Its records.
    pub parent_log: Vec<Value>,
    /// The children's logs, by agent id.
    pub child_logs: Vec<ChildLog>,
    /// Agent id → type, from `subagent_started`.
    pub child_types: HashMap<String, String>,
    /// The rows of `$CADRE_HOME/tasks.db`.
    pub tasks: Vec<TaskRow>,
    /// Why the task table could not be read (none when it was, or does not exist).
    pub tasks_error: Option<String>,
    /// The session's team board (the team is named by the session id).
    pub board: Vec<BoardTask>,
    /// Why the board could not be read (none when it was, or does not exist).
    pub board_error: Option<String>,
}

/// A stdout line of `cadre exec --json` that is not an [`Event`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnparsedLine {
    /// 1-based line number on stdout.
    pub line: u64,
    /// Why it is not an event.
    pub error: String,
    /// The line, cut short.
    pub text: String,
}

/// Stdout lines that are not events kept for the report; the rest are counted.
const UNPARSED_KEPT: usize = 5;

/// Characters of an unparsed line kept for the report.
const UNPARSED_CHARS: usize = 200;

/// Only the `type` of an event line, for lines that are not events this
/// build knows and for the interrupt trigger.
#[derive(Deserialize)]
struct EventType {
    #[serde(rename = "type")]
    kind: String,
}

/// One stdout line of `cadre exec --json`, read back.
#[derive(Debug)]
pub enum StdoutLine {
    /// An event (with the `type` it was printed with).
    Event(Box<Event>, String),
    /// Not an event: the type it claimed, if any, and why it does not parse.
    Unparsed(Option<String>, String),
}

impl StdoutLine {
    /// Reads one line.
    pub fn parse(line: &str) -> StdoutLine {
        let kind = serde_json::from_str::<EventType>(line).ok().map(|t| t.kind);
        match (serde_json::from_str::<Event>(line), kind) {
            (Ok(e), Some(kind)) => StdoutLine::Event(Box::new(e), kind),
            (Ok(_), None) => StdoutLine::Unparsed(None, "an event without a type".into()),
            (Err(e), kind) => StdoutLine::Unparsed(kind, e.to_string()),
        }
    }

    /// The `type` the line gives, whether or not it parsed.
    pub fn kind(&self) -> Option<&str> {
        match self {
            StdoutLine::Event(_, kind) => Some(kind),
            StdoutLine::Unparsed(kind, _) => kind.as_deref(),
        }
    }
}

/// The name `turn_ended.status` is printed with.
fn turn_status_name(status: TurnStatus) -> &'static str {
    match status {
        TurnStatus::Completed => "completed",
        TurnStatus::Interrupted => "interrupted",
        TurnStatus::LimitReached => "limit_reached",
        TurnStatus::Failed => "failed",
    }
}

fn read_jsonl(path: &Path) -> (String, Vec<Value>) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let records = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (text, records)
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

impl Evidence {
    /// Adds stdout line number `line_no` (1-based): an event, or a line
    /// reported as unparsed.
    pub fn push_line(&mut self, line_no: u64, line: StdoutLine, text: &str) {
        match line {
            StdoutLine::Event(e, _) => self.events.push(*e),
            StdoutLine::Unparsed(_, error) => {
                self.unparsed_count += 1;
                if self.unparsed.len() < UNPARSED_KEPT {
                    let mut kept: String = text.chars().take(UNPARSED_CHARS).collect();
                    if kept.len() < text.len() {
                        kept.push('…');
                    }
                    self.unparsed.push(UnparsedLine {
                        line: line_no,
                        error,
                        text: kept,
                    });
                }
            }
        }
    }

    /// Reads the task table and the session's board, if the run made them.
    /// Call after [`Self::read_logs`], which finds the session id.
    pub async fn read_tasks(&mut self) {
        if !self.data_dir.join("tasks.db").exists() {
            return;
        }
        let table = match TaskTable::open(&self.data_dir).await {
            Ok(t) => t,
            Err(e) => {
                self.tasks_error = Some(e.to_string());
                self.board_error = Some(e.to_string());
                return;
            }
        };
        match table.list(&TaskFilter::default()).await {
            Ok(rows) => self.tasks = rows,
            Err(e) => self.tasks_error = Some(e.to_string()),
        }
        // A resumed run keeps its session id, so this is the board of both runs.
        if let Some(team) = &self.session_id {
            match table.board_list(team).await {
                Ok(rows) => self.board = rows,
                Err(e) => self.board_error = Some(e.to_string()),
            }
        }
    }

    /// Reads the logs named by the events into `self`.
    pub fn read_logs(&mut self) {
        self.session_id = self.events.iter().find_map(|e| match e {
            Event::SessionStarted { session_id, .. } => Some(session_id.clone()),
            _ => None,
        });
        for e in &self.events {
            if let Event::SubagentStarted {
                agent_id,
                agent_type,
                ..
            } = e
            {
                self.child_types
                    .insert(agent_id.to_string(), agent_type.clone());
            }
        }
        let Some(id) = &self.session_id else { return };
        let sessions = self.data_dir.join("sessions");
        let (text, records) = read_jsonl(&sessions.join(format!("{id}.jsonl")));
        self.parent_log_text = text;
        self.parent_log = records;
        let mut files: Vec<PathBuf> = std::fs::read_dir(sessions.join(format!("{id}.agents")))
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        files.sort();
        for f in files {
            if f.extension().and_then(|x| x.to_str()) != Some("jsonl") {
                continue;
            }
            let Some(stem) = f.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
                continue;
            };
            let (_, records) = read_jsonl(&f);
            self.child_logs.push(ChildLog {
                agent_id: stem,
                records,
            });
        }
    }

    fn child(&self, id: &str) -> Who {
        Who::Child {
            id: id.to_string(),
            agent_type: self.child_types.get(id).cloned(),
        }
    }

    /// Every tool call: the parent's from `tool_call_started`/`ended`, the
    /// children's from `subagent_progress`, topped up from `tool_start`
    /// records in their logs (calls that never ended).
    pub fn calls(&self) -> Vec<Call> {
        let mut out = Vec::new();
        let mut outcomes: HashMap<(&str, &str), CallOutcome> = HashMap::new();
        // Agents whose calls have their own events (counted from those).
        let mut with_events: HashSet<&str> = HashSet::new();
        for e in &self.events {
            if let Event::ToolCallEnded {
                agent,
                call_id,
                is_error,
                outcome,
                ..
            } = e
            {
                outcomes.insert((agent, call_id), CallOutcome::of_ended(*is_error, outcome));
            }
        }
        for e in &self.events {
            if let Event::ToolCallStarted {
                agent,
                call_id,
                tool,
                ..
            } = e
            {
                with_events.insert(agent);
                out.push(Call {
                    who: Who::of(agent, &self.child_types),
                    tool: tool.clone(),
                    outcome: outcomes.get(&(agent.as_str(), call_id.as_str())).copied(),
                });
            }
        }
        // Children: progress lines, then log records the progress does not cover.
        let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
        for e in &self.events {
            let Event::SubagentProgress {
                agent_id,
                tool,
                outcome,
                ..
            } = e
            else {
                continue;
            };
            if with_events.contains(agent_id.as_str()) {
                continue;
            }
            *seen
                .entry((agent_id.to_string(), tool.clone()))
                .or_default() += 1;
            out.push(Call {
                who: self.child(agent_id),
                tool: tool.clone(),
                outcome: Some(CallOutcome::of_progress(*outcome)),
            });
        }
        for log in &self.child_logs {
            let mut started: BTreeMap<String, usize> = BTreeMap::new();
            for r in &log.records {
                if str_of(r, "type") == Some("tool_start")
                    && let Some(tool) = str_of(r, "tool")
                {
                    *started.entry(tool.to_string()).or_default() += 1;
                }
            }
            for (tool, n) in started {
                let have = seen
                    .get(&(log.agent_id.clone(), tool.clone()))
                    .copied()
                    .unwrap_or(0);
                for _ in have..n {
                    out.push(Call {
                        who: self.child(&log.agent_id),
                        tool: tool.clone(),
                        outcome: None,
                    });
                }
            }
        }
        out
    }

    /// Every denied call: `tool_call_denied` events, and `denied` results in
    /// the children's logs (with the text the child's model was given), or
    /// `denied` progress lines for a child without a log.
    pub fn denials(&self) -> Vec<Denial> {
        let mut out = Vec::new();
        let mut from_events: Vec<(&str, &str)> = Vec::new();
        for e in &self.events {
            if let Event::ToolCallDenied {
                agent,
                call_id,
                tool,
                reason,
            } = e
            {
                from_events.push((agent, call_id));
                out.push(Denial {
                    who: Who::of(agent, &self.child_types),
                    tool: Some(tool.clone()),
                    reason: Some(reason.clone()),
                });
            }
        }
        for log in &self.child_logs {
            let names = call_names(&log.records);
            for r in &log.records {
                if str_of(r, "type") != Some("tool_result") || str_of(r, "status") != Some("denied")
                {
                    continue;
                }
                let call_id = str_of(r, "call_id").unwrap_or("");
                if from_events
                    .iter()
                    .any(|(a, c)| *a == log.agent_id && *c == call_id)
                {
                    continue;
                }
                out.push(Denial {
                    who: self.child(&log.agent_id),
                    tool: names.get(call_id).cloned(),
                    reason: str_of(r, "content").map(str::to_string),
                });
            }
        }
        for e in &self.events {
            if let Event::SubagentProgress {
                agent_id,
                tool,
                outcome,
                ..
            } = e
                && *outcome == ChildCallOutcome::Denied
                && !self.child_logs.iter().any(|l| l.agent_id == *agent_id)
            {
                out.push(Denial {
                    who: self.child(agent_id),
                    tool: Some(tool.clone()),
                    reason: None,
                });
            }
        }
        out
    }

    /// Approval questions: (who asked, tool).
    pub fn approvals(&self) -> Vec<(Who, String)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::ApprovalRequested { question, .. } => Some((
                    Who::of(&question.agent, &self.child_types),
                    question.tool.clone(),
                )),
                _ => None,
            })
            .collect()
    }

    /// How each child ended.
    pub fn children(&self) -> Vec<ChildEnd> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::SubagentEnded {
                    agent_id,
                    agent_type,
                    status,
                    error,
                    ..
                } => Some(ChildEnd {
                    agent_id: agent_id.to_string(),
                    agent_type: agent_type.clone(),
                    status: *status,
                    error: error.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// The main agent's `turn_ended` events: (status, final text, error, requests).
    fn main_turns(&self) -> impl Iterator<Item = (TurnStatus, &str, Option<&str>, u32)> {
        self.events.iter().filter_map(|e| match e {
            Event::TurnEnded {
                agent,
                status,
                final_text,
                error,
                requests,
                ..
            } if agent == MAIN_AGENT => {
                Some((*status, final_text.as_str(), error.as_deref(), *requests))
            }
            _ => None,
        })
    }

    /// The final text of the main agent's last `turn_ended`, if it ended a turn.
    pub fn final_text(&self) -> Option<&str> {
        self.main_turns().last().map(|(_, text, _, _)| text)
    }

    /// How the main turn ended, when not `completed`: `<status>: <error>`.
    pub fn turn_problem(&self) -> Option<String> {
        let (status, _, error, _) = self.main_turns().last()?;
        if status == TurnStatus::Completed {
            return None;
        }
        let status = turn_status_name(status);
        Some(match error {
            Some(e) => format!("{status}: {e}"),
            None => status.to_string(),
        })
    }

    /// Whether a mock request is the parent's: its first user message is
    /// the case prompt (after the roster reminder, when there is one).
    fn is_parent_request(&self, r: &Record) -> bool {
        let info = cadre_mock::request_info(r.wire, &r.body);
        let first = info.first_user.trim_end();
        let prompt = self.prompt.trim();
        first == prompt || first.ends_with(&format!("\n{prompt}"))
    }

    /// Model requests: (parent, total). Offline from the mock's record; live
    /// from `turn_ended.requests` of main plus `subagent_ended.requests`.
    pub fn requests(&self) -> (u64, u64) {
        match &self.records {
            Some(records) => {
                let parent = records.iter().filter(|r| self.is_parent_request(r)).count();
                (parent as u64, records.len() as u64)
            }
            None => {
                let parent: u64 = self.main_turns().map(|(.., n)| u64::from(n)).sum();
                let children: u64 = self
                    .events
                    .iter()
                    .map(|e| match e {
                        Event::SubagentEnded { requests, .. } => u64::from(*requests),
                        _ => 0,
                    })
                    .sum();
                (parent, parent + children)
            }
        }
    }

    /// Mock requests answered by the rule `name`.
    pub fn rule_requests(&self, name: &str) -> Option<Vec<&Record>> {
        self.records.as_ref().map(|rs| {
            rs.iter()
                .filter(|r| r.rule.as_deref() == Some(name))
                .collect()
        })
    }

    /// Tokens: every `usage` event of main plus every child's `subagent_ended.usage`.
    pub fn tokens(&self) -> u64 {
        self.events
            .iter()
            .map(|e| match e {
                Event::Usage { agent, usage, .. } if agent == MAIN_AGENT => usage.total(),
                Event::SubagentEnded { usage, .. } => usage.total(),
                _ => 0,
            })
            .sum()
    }

    /// The reports the parent received: results of its `Agent` calls, from its log.
    pub fn reports(&self) -> Vec<String> {
        let names = call_names(&self.parent_log);
        self.parent_log
            .iter()
            .filter(|r| str_of(r, "type") == Some("tool_result"))
            .filter(|r| {
                str_of(r, "call_id")
                    .and_then(|id| names.get(id))
                    .map(String::as_str)
                    == Some("Agent")
            })
            .filter_map(|r| str_of(r, "content").map(str::to_string))
            .collect()
    }

    /// A short account of the run for failure messages.
    pub fn exit_description(&self) -> String {
        match (self.timed_out, self.exit_code, self.signal) {
            (true, _, _) => "killed: timed out".into(),
            (_, Some(c), _) => format!("exit {c}"),
            (_, None, Some(s)) => format!("killed by signal {s}"),
            _ => "did not run".into(),
        }
    }
}

/// call_id → tool name, from `tool_start` records and assistant messages.
fn call_names(records: &[Value]) -> HashMap<String, String> {
    let mut names = HashMap::new();
    for r in records {
        match str_of(r, "type") {
            Some("tool_start") => {
                if let (Some(id), Some(tool)) = (str_of(r, "call_id"), str_of(r, "tool")) {
                    names.insert(id.to_string(), tool.to_string());
                }
            }
            Some("assistant") => {
                let blocks = r
                    .get("message")
                    .and_then(|m| m.get("content"))
                    .and_then(Value::as_array);
                for b in blocks.into_iter().flatten() {
                    if str_of(b, "type") == Some("tool_use")
                        && let (Some(id), Some(name)) = (str_of(b, "id"), str_of(b, "name"))
                    {
                        names.entry(id.to_string()).or_insert(name.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    names
}

#[cfg(test)]
mod tests;
