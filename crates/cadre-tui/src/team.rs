//! The session's agent team as the screen knows it: its teammates (from
//! `teammate_changed`, their tokens from their `usage`) and its task board
//! (from `board_task_changed`, seeded from the table when the screen opens
//! a session that already has one). The panel lists the teammates, Ctrl+T
//! shows the board.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use cadre_core::protocol::{BoardTaskState, TeammateState};
use cadre_core::tasks::{BoardStatus, BoardTask};

/// One teammate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The name it is addressed by.
    pub name: String,
    /// Its agent id (its events carry it).
    pub agent_id: String,
    /// The definition it was started from.
    pub agent_type: String,
    /// Where it stands.
    pub state: TeammateState,
    /// Why its last turn failed, when it did.
    pub error: Option<String>,
    /// Tokens its requests used so far (none until its first usage report).
    pub tokens: Option<u64>,
    /// When it last went idle (`None` while it is not idle).
    pub idle_since: Option<Instant>,
}

/// How long an idle teammate stays in the panel before it is hidden.
pub const IDLE_SHOWN_FOR: Duration = Duration::from_secs(30);

/// More idle teammates than this fold into one "N idle agents" row.
pub const IDLE_ROWS_MAX: usize = 3;

/// What the panel shows of the team while it does not have the keys.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PanelRows {
    /// Indexes into `members` of the teammates shown, in order.
    pub shown: Vec<usize>,
    /// Idle teammates not shown: hidden after a while or folded.
    pub idle_folded: usize,
}

/// One task of the board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardEntry {
    /// Its id (`"1"`, `"2"`, …).
    pub id: String,
    /// What to do.
    pub subject: String,
    /// Where it stands (never `Deleted`: a deleted task leaves the board).
    pub status: BoardTaskState,
    /// Who works on it, if anyone.
    pub owner: Option<String>,
    /// The open tasks it waits for.
    pub blocked_by: Vec<String>,
}

/// The board, shared by the app (which writes it from events) and the
/// pane that shows it; sorted by id as numbers.
#[derive(Debug, Clone, Default)]
pub struct TeamBoard(Arc<Mutex<Vec<BoardEntry>>>);

/// Sort key of a board id: numbers in numeric order, anything else after.
fn id_key(id: &str) -> (u64, String) {
    (id.parse().unwrap_or(u64::MAX), id.to_string())
}

impl TeamBoard {
    /// A task was created, changed or deleted.
    pub fn change(&self, entry: BoardEntry) {
        let mut board = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        board.retain(|e| e.id != entry.id);
        if entry.status != BoardTaskState::Deleted {
            board.push(entry);
            board.sort_by_key(|e| id_key(&e.id));
        }
    }

    /// Adds what the table holds of tasks no event told of yet (an event is newer).
    pub fn seed(&self, tasks: &[BoardTask]) {
        let mut board = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for task in tasks {
            if board.iter().any(|e| e.id == task.id) {
                continue;
            }
            board.push(BoardEntry {
                id: task.id.clone(),
                subject: task.subject.clone(),
                status: match task.status {
                    BoardStatus::Pending => BoardTaskState::Pending,
                    BoardStatus::InProgress => BoardTaskState::InProgress,
                    BoardStatus::Completed => BoardTaskState::Completed,
                },
                owner: task.owner.clone(),
                blocked_by: task.blocked_by.clone(),
            });
        }
        board.sort_by_key(|e| id_key(&e.id));
    }

    /// The tasks now, by id.
    pub fn entries(&self) -> Vec<BoardEntry> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The task `name` works on now (the first it owns in progress).
    pub fn current_task(&self, name: &str) -> Option<BoardEntry> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|e| e.status == BoardTaskState::InProgress && e.owner.as_deref() == Some(name))
            .cloned()
    }

    /// Forgets every task (another session is shown).
    pub fn clear(&self) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

/// The team: whether the session has one, its teammates, its board.
#[derive(Debug, Clone, Default)]
pub struct Team {
    /// The session has a team (Ctrl+T shows the board instead of the todo list).
    pub enabled: bool,
    /// Its teammates, in the order they joined.
    pub members: Vec<Member>,
    /// Its task board.
    pub board: TeamBoard,
}

impl Team {
    /// A teammate joined or its state changed.
    pub fn changed(
        &mut self,
        name: &str,
        agent_id: &str,
        agent_type: &str,
        state: TeammateState,
        error: Option<&str>,
        now: Instant,
    ) {
        self.enabled = true;
        let idle_since = |was: Option<Instant>| match state {
            TeammateState::Idle => Some(was.unwrap_or(now)),
            _ => None,
        };
        match self.members.iter_mut().find(|m| m.name == name) {
            Some(m) => {
                m.agent_id = agent_id.to_string();
                m.agent_type = agent_type.to_string();
                m.state = state;
                m.error = error.map(str::to_string);
                m.idle_since = idle_since(m.idle_since);
            }
            None => self.members.push(Member {
                name: name.to_string(),
                agent_id: agent_id.to_string(),
                agent_type: agent_type.to_string(),
                state,
                error: error.map(str::to_string),
                tokens: None,
                idle_since: idle_since(None),
            }),
        }
    }

    /// The rows of an unfocused panel: every teammate that is not idle;
    /// idle ones for [`IDLE_SHOWN_FOR`] after they went idle, and only when
    /// at most [`IDLE_ROWS_MAX`] of them would show (else they fold into a
    /// count), so a large team's resting members do not crowd out the
    /// working ones.
    pub fn panel_rows(&self, now: Instant) -> PanelRows {
        let recent_idle = |m: &Member| {
            m.idle_since
                .is_some_and(|t| now.saturating_duration_since(t) < IDLE_SHOWN_FOR)
        };
        let idle_shown = self
            .members
            .iter()
            .filter(|m| m.state == TeammateState::Idle && recent_idle(m))
            .count();
        let mut rows = PanelRows::default();
        for (i, m) in self.members.iter().enumerate() {
            let show =
                m.state != TeammateState::Idle || (recent_idle(m) && idle_shown <= IDLE_ROWS_MAX);
            if show {
                rows.shown.push(i);
            } else {
                rows.idle_folded += 1;
            }
        }
        rows
    }

    /// The teammate with this agent id.
    pub fn by_agent(&mut self, agent_id: &str) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.agent_id == agent_id)
    }

    /// The teammate named `name`.
    pub fn member(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name == name)
    }

    /// `2 working, 1 idle`: how many stand where, in a fixed order.
    pub fn counts(&self) -> String {
        let mut parts = Vec::new();
        for state in [
            TeammateState::Working,
            TeammateState::Idle,
            TeammateState::Failed,
            TeammateState::Ended,
        ] {
            let n = self.members.iter().filter(|m| m.state == state).count();
            if n > 0 {
                parts.push(format!("{n} {}", state.as_str()));
            }
        }
        parts.join(", ")
    }

    /// Forgets everything (another session is shown).
    pub fn clear(&mut self) {
        self.enabled = false;
        self.members.clear();
        self.board.clear();
    }
}

/// `#1 Write the schema`, or `—` when no task is in progress.
pub fn task_label(entry: Option<&BoardEntry>) -> String {
    entry.map_or_else(|| "—".to_string(), |e| format!("#{} {}", e.id, e.subject))
}

/// `in progress` for `in_progress`: a board status in words.
pub fn status_words(status: BoardTaskState) -> &'static str {
    match status {
        BoardTaskState::Pending => "pending",
        BoardTaskState::InProgress => "in progress",
        BoardTaskState::Completed => "completed",
        BoardTaskState::Deleted => "deleted",
    }
}

/// What `/team` says in a session without a team.
pub const NO_TEAM: &str =
    "this session has no team (start cadre with --teams, or set [teams] enabled = true)";

/// What a typed line asks of the team, when it asks anything of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TeamInput {
    /// `/team`: show the members and the board.
    Show,
    /// `@name message`: send the message to teammate `name`.
    Message {
        /// The teammate.
        name: String,
        /// What to send.
        text: String,
    },
    /// `@name message` naming no teammate.
    UnknownName(String),
}

/// Reads `/team` and `@name message` in a session with a team. `members`
/// are the teammates' names; `is_path` says whether `@word` names a file
/// of the project (then the line is a message mentioning it, as without a
/// team). Only a plain word (no `/` or `.`) naming no teammate is an error:
/// anything else is left to be a message.
pub fn parse_team_input(
    line: &str,
    members: &[String],
    is_path: impl Fn(&str) -> bool,
) -> Option<TeamInput> {
    let line = line.trim();
    if line == "/team" {
        return Some(TeamInput::Show);
    }
    let rest = line.strip_prefix('@')?;
    let (name, text) = rest.split_once(char::is_whitespace)?;
    let text = text.trim();
    if name.is_empty() || text.is_empty() {
        return None;
    }
    if members.iter().any(|m| m == name) {
        return Some(TeamInput::Message {
            name: name.to_string(),
            text: text.to_string(),
        });
    }
    if name.contains(['/', '.']) || is_path(name) {
        return None;
    }
    Some(TeamInput::UnknownName(name.to_string()))
}

/// The error for `@name` naming no teammate: says who can be addressed.
pub fn unknown_name_error(name: &str, members: &[String]) -> String {
    if members.is_empty() {
        format!("no teammate named '{name}': the team has no teammates yet")
    } else {
        format!(
            "no teammate named '{name}'; the teammates are {}",
            members.join(", ")
        )
    }
}

/// `/team`'s text: each teammate with its type, state and current task,
/// then the board's tasks with status, owner and blockers.
pub fn describe(members: &[Member], board: &[BoardEntry]) -> String {
    let mut out = String::new();
    if members.is_empty() {
        out.push_str("Team: no teammates yet (the lead starts one with a named Agent call)\n");
    } else {
        out.push_str(&format!(
            "Team: team-lead and {} teammate(s)\n",
            members.len()
        ));
        let name_w = members
            .iter()
            .map(|m| m.name.chars().count())
            .max()
            .unwrap_or(4);
        let type_w = members
            .iter()
            .map(|m| m.agent_type.chars().count())
            .max()
            .unwrap_or(4);
        for m in members {
            let current = board.iter().find(|e| {
                e.status == BoardTaskState::InProgress && e.owner.as_deref() == Some(&m.name)
            });
            let mut line = format!(
                "  {:<name_w$}  {:<type_w$}  {:<7}  {}",
                m.name,
                m.agent_type,
                m.state.as_str(),
                task_label(current)
            );
            if let Some(tokens) = m.tokens {
                line.push_str(&format!(
                    " · {} tokens",
                    crate::children::format_tokens(tokens)
                ));
            }
            if let Some(e) = &m.error {
                line.push_str(&format!(" · error: {e}"));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    if board.is_empty() {
        out.push_str("Board: no tasks");
        return out;
    }
    out.push_str(&format!("Board: {} task(s)\n", board.len()));
    for e in board {
        let mut line = format!(
            "  #{:<3} {:<11}  {:<10}  {}",
            e.id,
            status_words(e.status),
            e.owner.as_deref().unwrap_or("—"),
            e.subject
        );
        if !e.blocked_by.is_empty() {
            let ids: Vec<String> = e.blocked_by.iter().map(|b| format!("#{b}")).collect();
            line.push_str(&format!(" (blocked by {})", ids.join(", ")));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec!["alice".into(), "bob".into()]
    }

    #[test]
    fn team_lines_are_read_only_when_they_address_the_team() {
        let none = |_: &str| false;
        assert_eq!(
            parse_team_input(" /team ", &names(), none),
            Some(TeamInput::Show)
        );
        assert_eq!(
            parse_team_input("@alice  check the tests ", &names(), none),
            Some(TeamInput::Message {
                name: "alice".into(),
                text: "check the tests".into()
            })
        );
        assert_eq!(
            parse_team_input("@carol hi", &names(), none),
            Some(TeamInput::UnknownName("carol".into()))
        );
        // File mentions stay messages.
        assert_eq!(
            parse_team_input("@src/main.rs explain", &names(), none),
            None
        );
        assert_eq!(parse_team_input("@README.md explain", &names(), none), None);
        assert_eq!(
            parse_team_input("@Makefile fix it", &names(), |w| w == "Makefile"),
            None
        );
        // Nothing to send.
        assert_eq!(parse_team_input("@alice", &names(), none), None);
        assert_eq!(parse_team_input("hello @alice there", &names(), none), None);
        assert!(unknown_name_error("carol", &names()).contains("alice, bob"));
    }

    #[test]
    fn idle_teammates_hide_after_a_while_and_many_fold_into_a_count() {
        let t0 = Instant::now();
        let mut team = Team::default();
        team.changed("alice", "a1", "general", TeammateState::Working, None, t0);
        team.changed("bob", "b1", "general", TeammateState::Idle, None, t0);
        assert_eq!(team.panel_rows(t0).shown, [0, 1]);
        // Idle for 30 s: hidden, counted.
        let later = t0 + IDLE_SHOWN_FOR;
        assert_eq!(
            team.panel_rows(later),
            PanelRows {
                shown: vec![0],
                idle_folded: 1
            }
        );
        // Another idle report keeps the first idle time.
        team.changed("bob", "b1", "general", TeammateState::Idle, None, later);
        assert_eq!(team.panel_rows(later).shown, [0]);
        // Working again: shown; idle again: a fresh 30 s.
        team.changed("bob", "b1", "general", TeammateState::Working, None, later);
        team.changed("bob", "b1", "general", TeammateState::Idle, None, later);
        assert_eq!(team.panel_rows(later).shown, [0, 1]);
        // Four idle at once fold into one count.
        for name in ["carol", "dave", "erin"] {
            team.changed(name, name, "general", TeammateState::Idle, None, later);
        }
        let rows = team.panel_rows(later);
        assert_eq!(rows.shown, [0]);
        assert_eq!(rows.idle_folded, 4);
    }

    #[test]
    fn the_board_keeps_numeric_order_and_deleted_tasks_leave_it() {
        let board = TeamBoard::default();
        for id in ["10", "2", "1"] {
            board.change(BoardEntry {
                id: id.into(),
                subject: format!("task {id}"),
                status: BoardTaskState::Pending,
                owner: None,
                blocked_by: Vec::new(),
            });
        }
        let ids: Vec<String> = board.entries().into_iter().map(|e| e.id).collect();
        assert_eq!(ids, ["1", "2", "10"]);
        board.change(BoardEntry {
            id: "2".into(),
            subject: "task 2".into(),
            status: BoardTaskState::InProgress,
            owner: Some("bob".into()),
            blocked_by: Vec::new(),
        });
        assert_eq!(board.current_task("bob").map(|e| e.id), Some("2".into()));
        board.change(BoardEntry {
            id: "10".into(),
            subject: String::new(),
            status: BoardTaskState::Deleted,
            owner: None,
            blocked_by: Vec::new(),
        });
        assert_eq!(board.entries().len(), 2);
    }
}
