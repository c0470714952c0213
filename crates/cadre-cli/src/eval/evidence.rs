//! What one run left behind, read back for the graders: the `--json` events,
//! the parent's session log, the children's logs, the mock's request record
//! (offline) and the project directory next to its fixture.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use cadre_core::tasks::{TaskFilter, TaskRow, TaskTable};
use cadre_mock::Record;
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
        if agent == "main" {
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

/// One tool call seen in the evidence.
#[derive(Debug, Clone)]
pub struct Call {
    /// Who made it.
    pub who: Who,
    /// Canonical tool name.
    pub tool: String,
    /// `completed`, `failed` or `denied`, when it ended.
    pub outcome: Option<String>,
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
    /// `completed`, `failed`, `cancelled`.
    pub status: String,
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
    /// A live run (no mock record).
    pub live: bool,
    /// The task given to cadre.
    pub prompt: String,
    /// Exit status, if cadre exited on its own or after a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended cadre, if one did.
    pub signal: Option<i32>,
    /// Whether the runner killed it for running too long.
    pub timed_out: bool,
    /// Parsed stdout lines.
    pub events: Vec<Value>,
    /// Stdout lines that were not JSON.
    pub stray_stdout: Vec<String>,
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

fn u64_of(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Tokens in a `usage` object (every kind counted).
fn usage_tokens(v: &Value) -> u64 {
    [
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
    ]
    .iter()
    .map(|k| u64_of(v, k))
    .sum()
}

impl Evidence {
    /// Reads the task table, if the run made one.
    pub fn read_tasks(&mut self) {
        if !self.data_dir.join("tasks.db").exists() {
            return;
        }
        match TaskTable::open(&self.data_dir).and_then(|t| t.list(&TaskFilter::default())) {
            Ok(rows) => self.tasks = rows,
            Err(e) => self.tasks_error = Some(e.to_string()),
        }
    }

    /// Reads the logs named by the events into `self`.
    pub fn read_logs(&mut self) {
        self.session_id = self
            .events
            .iter()
            .find(|e| str_of(e, "type") == Some("session_started"))
            .and_then(|e| str_of(e, "session_id"))
            .map(str::to_string);
        for e in &self.events {
            if str_of(e, "type") == Some("subagent_started")
                && let (Some(id), Some(t)) = (str_of(e, "agent_id"), str_of(e, "agent_type"))
            {
                self.child_types.insert(id.to_string(), t.to_string());
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

    fn events_of<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.events
            .iter()
            .filter(move |e| str_of(e, "type") == Some(kind))
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
        let mut outcomes: HashMap<(&str, &str), String> = HashMap::new();
        for e in self.events_of("tool_call_ended") {
            let (Some(agent), Some(id)) = (str_of(e, "agent"), str_of(e, "call_id")) else {
                continue;
            };
            let outcome = str_of(e, "outcome").unwrap_or("");
            let is_error = e.get("is_error").and_then(Value::as_bool).unwrap_or(false);
            let word = if outcome.starts_with("error: denied") {
                "denied"
            } else if is_error {
                "failed"
            } else {
                "completed"
            };
            outcomes.insert((agent, id), word.to_string());
        }
        for e in self.events_of("tool_call_started") {
            let (Some(agent), Some(tool)) = (str_of(e, "agent"), str_of(e, "tool")) else {
                continue;
            };
            let outcome = str_of(e, "call_id").and_then(|id| outcomes.get(&(agent, id)).cloned());
            out.push(Call {
                who: Who::of(agent, &self.child_types),
                tool: tool.to_string(),
                outcome,
            });
        }
        // Children: progress lines, then log records the progress does not cover.
        let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
        for e in self.events_of("subagent_progress") {
            let (Some(id), Some(tool)) = (str_of(e, "agent_id"), str_of(e, "tool")) else {
                continue;
            };
            if self.events_of("tool_call_started").any(|s| {
                str_of(s, "agent") == Some(id) // already counted from its own events
            }) {
                continue;
            }
            *seen.entry((id.to_string(), tool.to_string())).or_default() += 1;
            out.push(Call {
                who: self.child(id),
                tool: tool.to_string(),
                outcome: str_of(e, "outcome").map(str::to_string),
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
        let mut from_events: Vec<(String, String)> = Vec::new();
        for e in self.events_of("tool_call_denied") {
            let Some(agent) = str_of(e, "agent") else {
                continue;
            };
            from_events.push((
                agent.to_string(),
                str_of(e, "call_id").unwrap_or("").to_string(),
            ));
            out.push(Denial {
                who: Who::of(agent, &self.child_types),
                tool: str_of(e, "tool").map(str::to_string),
                reason: str_of(e, "reason").map(str::to_string),
            });
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
                    .any(|(a, c)| a == &log.agent_id && c == call_id)
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
        for e in self.events_of("subagent_progress") {
            let Some(id) = str_of(e, "agent_id") else {
                continue;
            };
            if str_of(e, "outcome") == Some("denied")
                && !self.child_logs.iter().any(|l| l.agent_id == id)
            {
                out.push(Denial {
                    who: self.child(id),
                    tool: str_of(e, "tool").map(str::to_string),
                    reason: None,
                });
            }
        }
        out
    }

    /// Approval questions: (who asked, tool).
    pub fn approvals(&self) -> Vec<(Who, String)> {
        self.events_of("approval_requested")
            .filter_map(|e| {
                let q = e.get("question")?;
                Some((
                    Who::of(str_of(q, "agent")?, &self.child_types),
                    str_of(q, "tool").unwrap_or("").to_string(),
                ))
            })
            .collect()
    }

    /// How each child ended.
    pub fn children(&self) -> Vec<ChildEnd> {
        self.events_of("subagent_ended")
            .map(|e| ChildEnd {
                agent_id: str_of(e, "agent_id").unwrap_or("").to_string(),
                agent_type: str_of(e, "agent_type").unwrap_or("").to_string(),
                status: str_of(e, "status").unwrap_or("").to_string(),
                error: str_of(e, "error").map(str::to_string),
            })
            .collect()
    }

    /// The main agent's last `turn_ended`.
    pub fn final_turn(&self) -> Option<&Value> {
        self.events_of("turn_ended")
            .filter(|e| str_of(e, "agent") == Some("main"))
            .last()
    }

    /// How the main turn ended, when not `completed`: `<status>: <error>`.
    pub fn turn_problem(&self) -> Option<String> {
        let t = self.final_turn()?;
        let status = str_of(t, "status").unwrap_or("?");
        if status == "completed" {
            return None;
        }
        Some(match str_of(t, "error") {
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
                let parent: u64 = self
                    .events_of("turn_ended")
                    .filter(|e| str_of(e, "agent") == Some("main"))
                    .map(|e| u64_of(e, "requests"))
                    .sum();
                let children: u64 = self
                    .events_of("subagent_ended")
                    .map(|e| u64_of(e, "requests"))
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
        let main: u64 = self
            .events_of("usage")
            .filter(|e| str_of(e, "agent") == Some("main"))
            .map(usage_tokens)
            .sum();
        let children: u64 = self
            .events_of("subagent_ended")
            .filter_map(|e| e.get("usage"))
            .map(usage_tokens)
            .sum();
        main + children
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
