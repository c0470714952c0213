//! The team board: an agent team's shared task list (`TaskCreate`, `TaskGet`,
//! `TaskList`, `TaskUpdate`) in `tasks.db`, with dependencies between tasks.
//!
//! Every change is one `IMMEDIATE` write transaction that reads, checks and
//! writes, so two teammates (in one process or two) can never both claim a
//! task: the second one's transaction starts after the first committed and
//! sees its owner.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::db::{TaskDb, now_ms, to_sql};
use super::status::TaskError;
use super::table::{BlockingTaskTable, TaskTable};

/// Where a board task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoardStatus {
    /// Not started (new, or reopened).
    Pending,
    /// Claimed and being worked on.
    InProgress,
    /// Done; it no longer blocks anything.
    Completed,
}

impl BoardStatus {
    /// The stored and shown name: `pending`, `in_progress` or `completed`.
    pub fn as_str(self) -> &'static str {
        match self {
            BoardStatus::Pending => "pending",
            BoardStatus::InProgress => "in_progress",
            BoardStatus::Completed => "completed",
        }
    }

    /// The status named `s` (as [`Self::as_str`] writes it).
    pub fn parse(s: &str) -> Option<BoardStatus> {
        match s {
            "pending" => Some(BoardStatus::Pending),
            "in_progress" => Some(BoardStatus::InProgress),
            "completed" => Some(BoardStatus::Completed),
            _ => None,
        }
    }
}

impl std::fmt::Display for BoardStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task of a team's board, as the board tools show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BoardTask {
    /// Decimal id, unique within the team (`"1"`, `"2"`, …).
    pub id: String,
    /// What to do, in a short imperative line.
    pub subject: String,
    /// The details.
    pub description: String,
    /// What the spinner says while it is in progress ("Running tests").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
    /// Where it stands.
    pub status: BoardStatus,
    /// The teammate working on it (or assigned it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Free-form data the agents attach.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Ids of the tasks this one blocks, in id order.
    pub blocks: Vec<String>,
    /// Ids of the tasks blocking this one that are not completed yet, in id order.
    pub blocked_by: Vec<String>,
    /// Milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// When it last changed.
    pub updated_ms: u64,
}

/// The status a `TaskUpdate` asks for; `Deleted` removes the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoardUpdateStatus {
    /// Back to pending (reopen); the owner stays.
    Pending,
    /// Claim it (see [`TaskTable::board_update`]).
    InProgress,
    /// Mark it done.
    Completed,
    /// Remove it and its dependencies.
    Deleted,
}

/// What a `TaskUpdate` changes; `None` and empty lists leave things as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BoardUpdate {
    /// The new status.
    pub status: Option<BoardUpdateStatus>,
    /// A new subject.
    pub subject: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// A new spinner text; `""` clears it.
    pub active_form: Option<String>,
    /// Ids of tasks this one is to block.
    pub add_blocks: Vec<String>,
    /// Ids of tasks that are to block this one.
    pub add_blocked_by: Vec<String>,
    /// A new owner; `""` clears it.
    pub owner: Option<String>,
    /// Keys to merge into the metadata (a `null` value removes its key).
    pub metadata: Option<Value>,
}

/// What a [`TaskTable::board_update`] did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BoardChange {
    /// The task changed.
    pub task_id: String,
    /// The fields that changed, by their tool names (`status`, `owner`, `blockedBy`, …).
    pub updated_fields: Vec<String>,
    /// The status before and after (`deleted` after a deletion), if it changed.
    #[serde(
        serialize_with = "serialize_status_change",
        skip_serializing_if = "Option::is_none"
    )]
    pub status_change: Option<(String, String)>,
    /// The task after the change; `None` once deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<BoardTask>,
    /// Pending tasks this change left with no open blocker (it was their last one).
    pub unblocked: Vec<String>,
}

/// `statusChange` as `{"from": …, "to": …}`, the shape Claude Code's tool shows.
fn serialize_status_change<S: serde::Serializer>(
    v: &Option<(String, String)>,
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct FromTo<'a> {
        from: &'a str,
        to: &'a str,
    }
    v.as_ref()
        .map(|(from, to)| FromTo { from, to })
        .serialize(s)
}

fn refused(text: String) -> TaskError {
    TaskError::Board(text)
}

/// The number in `"3"` (or `"#3"`, as models sometimes write it).
fn parse_id(id: &str) -> Option<i64> {
    let id = id.trim();
    let id = id.strip_prefix('#').unwrap_or(id);
    id.parse::<i64>().ok().filter(|n| *n > 0)
}

fn non_empty(s: String) -> Option<String> {
    Some(s).filter(|s| !s.is_empty())
}

fn hashes(ids: &[i64]) -> String {
    ids.iter()
        .map(|i| format!("#{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The stored columns of one task, before its dependencies are added.
struct StoredTask {
    id: i64,
    subject: String,
    description: String,
    active_form: Option<String>,
    status: String,
    owner: Option<String>,
    metadata: Option<String>,
    created_ms: i64,
    updated_ms: i64,
}

/// The team's tasks (only `only` when given), in id order, with their
/// dependencies.
fn read_tasks(
    conn: &Connection,
    team: &str,
    only: Option<i64>,
) -> Result<Vec<BoardTask>, TaskError> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, subject, description, active_form, status, owner, metadata, created_ms, \
         updated_ms FROM team_tasks WHERE team = ?1 AND (?2 IS NULL OR id = ?2) ORDER BY id",
    )?;
    let stored = stmt
        .query_map(params![team, only], |r| {
            Ok(StoredTask {
                id: r.get(0)?,
                subject: r.get(1)?,
                description: r.get(2)?,
                active_form: r.get(3)?,
                status: r.get(4)?,
                owner: r.get(5)?,
                metadata: r.get(6)?,
                created_ms: r.get(7)?,
                updated_ms: r.get(8)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    // Both ends joined: a dependency on a task deleted by an older cadre (or
    // by hand) is not shown.
    let mut stmt = conn.prepare_cached(
        "SELECT d.blocker, d.blocked, b.status FROM team_task_deps d \
         JOIN team_tasks b ON b.team = d.team AND b.id = d.blocker \
         JOIN team_tasks c ON c.team = d.team AND c.id = d.blocked \
         WHERE d.team = ?1 AND (?2 IS NULL OR d.blocker = ?2 OR d.blocked = ?2) \
         ORDER BY d.blocker, d.blocked",
    )?;
    let mut blocks: HashMap<i64, Vec<String>> = HashMap::new();
    let mut blocked_by: HashMap<i64, Vec<String>> = HashMap::new();
    let edges = stmt
        .query_map(params![team, only], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    for (blocker, blocked, blocker_status) in edges {
        blocks.entry(blocker).or_default().push(blocked.to_string());
        if blocker_status != BoardStatus::Completed.as_str() {
            blocked_by
                .entry(blocked)
                .or_default()
                .push(blocker.to_string());
        }
    }
    stored
        .into_iter()
        .map(|t| {
            let status = BoardStatus::parse(&t.status).ok_or_else(|| {
                TaskError::Schema(format!(
                    "team task {} has status {:?}, not known to this cadre",
                    t.id, t.status
                ))
            })?;
            let metadata = t
                .metadata
                .as_deref()
                .map(serde_json::from_str::<Value>)
                .transpose()
                .map_err(|e| {
                    TaskError::Schema(format!("team task {} has unreadable metadata: {e}", t.id))
                })?;
            Ok(BoardTask {
                id: t.id.to_string(),
                subject: t.subject,
                description: t.description,
                active_form: t.active_form,
                status,
                owner: t.owner,
                metadata,
                blocks: blocks.remove(&t.id).unwrap_or_default(),
                blocked_by: blocked_by.remove(&t.id).unwrap_or_default(),
                created_ms: t.created_ms.max(0) as u64,
                updated_ms: t.updated_ms.max(0) as u64,
            })
        })
        .collect()
}

fn read_task(conn: &Connection, team: &str, id: i64) -> Result<Option<BoardTask>, TaskError> {
    Ok(read_tasks(conn, team, Some(id))?.pop())
}

/// The blockers of `id` that are not completed, in id order.
fn open_blockers(conn: &Connection, team: &str, id: i64) -> Result<Vec<i64>, TaskError> {
    let mut stmt = conn.prepare_cached(
        "SELECT d.blocker FROM team_task_deps d \
         JOIN team_tasks b ON b.team = d.team AND b.id = d.blocker \
         WHERE d.team = ?1 AND d.blocked = ?2 AND b.status != 'completed' ORDER BY d.blocker",
    )?;
    let ids = stmt
        .query_map(params![team, id], |r| r.get(0))?
        .collect::<Result<Vec<i64>, _>>()?;
    Ok(ids)
}

/// The tasks `id` blocks.
fn blocked_by_it(conn: &Connection, team: &str, id: i64) -> Result<Vec<i64>, TaskError> {
    let mut stmt = conn.prepare_cached(
        "SELECT blocked FROM team_task_deps WHERE team = ?1 AND blocker = ?2 ORDER BY blocked",
    )?;
    let ids = stmt
        .query_map(params![team, id], |r| r.get(0))?
        .collect::<Result<Vec<i64>, _>>()?;
    Ok(ids)
}

/// Those of `candidates` that are pending with no open blocker left.
fn free_pending(
    conn: &Connection,
    team: &str,
    candidates: &[i64],
) -> Result<Vec<String>, TaskError> {
    let mut free = Vec::new();
    for &id in candidates {
        let status: Option<String> = conn
            .query_row(
                "SELECT status FROM team_tasks WHERE team = ?1 AND id = ?2",
                params![team, id],
                |r| r.get(0),
            )
            .optional()?;
        if status.as_deref() == Some(BoardStatus::Pending.as_str())
            && open_blockers(conn, team, id)?.is_empty()
        {
            free.push(id.to_string());
        }
    }
    Ok(free)
}

fn task_exists(conn: &Connection, team: &str, id: i64) -> Result<bool, TaskError> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM team_tasks WHERE team = ?1 AND id = ?2",
            params![team, id],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Whether `from` blocks `to`, directly or through other tasks.
fn reaches(conn: &Connection, team: &str, from: i64, to: i64) -> Result<bool, TaskError> {
    let mut seen = HashSet::from([from]);
    let mut queue = VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        for next in blocked_by_it(conn, team, at)? {
            if next == to {
                return Ok(true);
            }
            if seen.insert(next) {
                queue.push_back(next);
            }
        }
    }
    Ok(false)
}

/// Records that `blocker` blocks `blocked`, refusing a cycle; false if it
/// already did.
fn add_dep(conn: &Connection, team: &str, blocker: i64, blocked: i64) -> Result<bool, TaskError> {
    if blocker == blocked {
        return Err(refused(format!("task {blocker} cannot depend on itself")));
    }
    if reaches(conn, team, blocked, blocker)? {
        return Err(refused(format!(
            "#{blocker} cannot block #{blocked}: #{blocked} already blocks #{blocker} \
             (directly or through other tasks), so that would be a cycle"
        )));
    }
    let n = conn.execute(
        "INSERT OR IGNORE INTO team_task_deps (team, blocker, blocked) VALUES (?1, ?2, ?3)",
        params![team, blocker, blocked],
    )?;
    Ok(n > 0)
}

/// `patch` merged into `old`: an object's keys are merged (a `null` value
/// removes its key), anything else replaces it, `null` clears it all.
fn merge_metadata(old: Option<Value>, patch: Value) -> Option<Value> {
    let merged = match (old, patch) {
        (_, Value::Null) => return None,
        (Some(Value::Object(mut map)), Value::Object(patch)) => {
            for (k, v) in patch {
                if v.is_null() {
                    map.remove(&k);
                } else {
                    map.insert(k, v);
                }
            }
            map
        }
        (_, Value::Object(patch)) => patch.into_iter().filter(|(_, v)| !v.is_null()).collect(),
        (_, other) => return Some(other),
    };
    (!merged.is_empty()).then_some(Value::Object(merged))
}

impl TaskDb {
    fn board_create(
        &mut self,
        team: &str,
        subject: &str,
        description: &str,
        active_form: Option<String>,
        metadata: Option<Value>,
    ) -> Result<BoardTask, TaskError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Under the write lock, so two creators never take the same id.
        let id: i64 = tx.query_row(
            "SELECT COALESCE(MAX(id), 0) + 1 FROM team_tasks WHERE team = ?1",
            params![team],
            |r| r.get(0),
        )?;
        let metadata = metadata
            .and_then(|m| merge_metadata(None, m))
            .map(|m| m.to_string());
        let now = to_sql(now_ms());
        tx.execute(
            "INSERT INTO team_tasks (team, id, subject, description, active_form, status, owner, \
             metadata, created_ms, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, ?7, ?8, ?8)",
            params![
                team,
                id,
                subject,
                description,
                active_form.and_then(non_empty),
                BoardStatus::Pending.as_str(),
                metadata,
                now
            ],
        )?;
        let task = read_task(&tx, team, id)?
            .ok_or_else(|| TaskError::Sqlite(format!("team task {id} was not created")))?;
        tx.commit()?;
        Ok(task)
    }

    fn board_update(
        &mut self,
        team: &str,
        id: &str,
        actor: &str,
        actor_is_lead: bool,
        update: BoardUpdate,
    ) -> Result<BoardChange, TaskError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let missing = || refused(format!("task {id} does not exist"));
        let n = parse_id(id).ok_or_else(missing)?;
        let before = read_task(&tx, team, n)?.ok_or_else(missing)?;

        if update.status == Some(BoardUpdateStatus::Deleted) {
            // Tasks it held back while open are free once it is gone.
            let held = if before.status == BoardStatus::Completed {
                Vec::new()
            } else {
                blocked_by_it(&tx, team, n)?
            };
            tx.execute(
                "DELETE FROM team_task_deps WHERE team = ?1 AND (blocker = ?2 OR blocked = ?2)",
                params![team, n],
            )?;
            tx.execute(
                "DELETE FROM team_tasks WHERE team = ?1 AND id = ?2",
                params![team, n],
            )?;
            let unblocked = free_pending(&tx, team, &held)?;
            tx.commit()?;
            return Ok(BoardChange {
                task_id: n.to_string(),
                updated_fields: vec!["status".into()],
                status_change: Some((before.status.as_str().into(), "deleted".into())),
                task: None,
                unblocked,
            });
        }

        let mut fields: Vec<&str> = Vec::new();
        let mut subject = before.subject.clone();
        if let Some(s) = update.subject
            && s != subject
        {
            subject = s;
            fields.push("subject");
        }
        let mut description = before.description.clone();
        if let Some(d) = update.description
            && d != description
        {
            description = d;
            fields.push("description");
        }
        let mut active_form = before.active_form.clone();
        if let Some(a) = update.active_form.map(non_empty)
            && a != active_form
        {
            active_form = a;
            fields.push("activeForm");
        }

        // Only the lead or the current owner may take a task from its owner.
        let may_take = |cur: &str| actor_is_lead || cur == actor;
        let owner_given = update.owner.is_some();
        let mut owner = before.owner.clone();
        if let Some(o) = update.owner.map(non_empty)
            && o != owner
        {
            if let Some(cur) = &before.owner
                && !may_take(cur)
            {
                return Err(refused(format!("task {n} is owned by {cur}")));
            }
            owner = o;
        }

        // Dependencies first, so a claim in the same update sees them.
        let mut blocks_added = false;
        let mut blocked_by_added = false;
        let resolve = |other: &str| -> Result<i64, TaskError> {
            match parse_id(other) {
                Some(k) if task_exists(&tx, team, k)? => Ok(k),
                _ => Err(refused(format!("task {other} does not exist"))),
            }
        };
        for other in &update.add_blocks {
            let k = resolve(other)?;
            blocks_added |= add_dep(&tx, team, n, k)?;
        }
        for other in &update.add_blocked_by {
            let k = resolve(other)?;
            blocked_by_added |= add_dep(&tx, team, k, n)?;
        }

        let mut status = before.status;
        match update.status {
            // Deleted returned above.
            None | Some(BoardUpdateStatus::Deleted) => {}
            Some(BoardUpdateStatus::InProgress) => {
                if before.status == BoardStatus::Completed {
                    return Err(refused(format!(
                        "task {n} is completed; set it to pending first to reopen it"
                    )));
                }
                let open = open_blockers(&tx, team, n)?;
                if !open.is_empty() {
                    return Err(refused(format!(
                        "task {n} is blocked by {}; it can be claimed once they are completed",
                        hashes(&open)
                    )));
                }
                if let Some(cur) = &before.owner
                    && !may_take(cur)
                {
                    return Err(refused(format!("task {n} is owned by {cur}")));
                }
                if owner.is_none() && !owner_given {
                    owner = Some(actor.to_string());
                }
                status = BoardStatus::InProgress;
            }
            Some(BoardUpdateStatus::Completed) => status = BoardStatus::Completed,
            Some(BoardUpdateStatus::Pending) => status = BoardStatus::Pending,
        }
        if status != before.status {
            fields.push("status");
        }
        if owner != before.owner {
            fields.push("owner");
        }
        if blocks_added {
            fields.push("blocks");
        }
        if blocked_by_added {
            fields.push("blockedBy");
        }
        let mut metadata = before.metadata.clone();
        if let Some(patch) = update.metadata {
            let merged = merge_metadata(metadata.clone(), patch);
            if merged != metadata {
                metadata = merged;
                fields.push("metadata");
            }
        }

        if !fields.is_empty() {
            tx.execute(
                "UPDATE team_tasks SET subject = ?3, description = ?4, active_form = ?5, \
                 status = ?6, owner = ?7, metadata = ?8, updated_ms = ?9 \
                 WHERE team = ?1 AND id = ?2",
                params![
                    team,
                    n,
                    subject,
                    description,
                    active_form,
                    status.as_str(),
                    owner,
                    metadata.as_ref().map(Value::to_string),
                    to_sql(now_ms())
                ],
            )?;
        }
        let unblocked =
            if status == BoardStatus::Completed && before.status != BoardStatus::Completed {
                let held = blocked_by_it(&tx, team, n)?;
                free_pending(&tx, team, &held)?
            } else {
                Vec::new()
            };
        let after = read_task(&tx, team, n)?;
        tx.commit()?;
        Ok(BoardChange {
            task_id: n.to_string(),
            updated_fields: fields.into_iter().map(str::to_string).collect(),
            status_change: (status != before.status)
                .then(|| (before.status.as_str().into(), status.as_str().into())),
            task: after,
            unblocked,
        })
    }

    fn board_claim_next(
        &mut self,
        team: &str,
        actor: &str,
    ) -> Result<Option<BoardTask>, TaskError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let next: Option<i64> = tx
            .query_row(
                "SELECT t.id FROM team_tasks t WHERE t.team = ?1 AND t.status = 'pending' \
                 AND (t.owner IS NULL OR t.owner = '') AND NOT EXISTS ( \
                     SELECT 1 FROM team_task_deps d \
                     JOIN team_tasks b ON b.team = d.team AND b.id = d.blocker \
                     WHERE d.team = t.team AND d.blocked = t.id AND b.status != 'completed') \
                 ORDER BY t.id LIMIT 1",
                params![team],
                |r| r.get(0),
            )
            .optional()?;
        let Some(id) = next else {
            return Ok(None);
        };
        tx.execute(
            "UPDATE team_tasks SET owner = ?3, status = ?4, updated_ms = ?5 \
             WHERE team = ?1 AND id = ?2",
            params![
                team,
                id,
                actor,
                BoardStatus::InProgress.as_str(),
                to_sql(now_ms())
            ],
        )?;
        let task = read_task(&tx, team, id)?;
        tx.commit()?;
        Ok(task)
    }
}

impl TaskTable {
    /// Adds a pending, unowned task to `team`'s board with the next id
    /// (one more than the team's highest).
    pub async fn board_create(
        &self,
        team: &str,
        subject: &str,
        description: &str,
        active_form: Option<String>,
        metadata: Option<Value>,
    ) -> Result<BoardTask, TaskError> {
        let (team, subject, description) = (
            team.to_string(),
            subject.to_string(),
            description.to_string(),
        );
        self.call(move |db| db.board_create(&team, &subject, &description, active_form, metadata))
            .await
    }

    /// One task of `team`'s board; `None` if there is no such task.
    pub async fn board_get(&self, team: &str, id: &str) -> Result<Option<BoardTask>, TaskError> {
        let team = team.to_string();
        let Some(n) = parse_id(id) else {
            return Ok(None);
        };
        // One read transaction: the row and its dependencies from one snapshot.
        self.call(move |db| {
            let tx = db.conn.transaction()?;
            read_task(&tx, &team, n)
        })
        .await
    }

    /// Every task of `team`'s board, in id order.
    pub async fn board_list(&self, team: &str) -> Result<Vec<BoardTask>, TaskError> {
        let team = team.to_string();
        self.call(move |db| {
            let tx = db.conn.transaction()?;
            read_tasks(&tx, &team, None)
        })
        .await
    }

    /// Applies `update` to task `id` for `actor`, all in one write
    /// transaction (read, check, write), so concurrent callers in any process
    /// never both win. Refused ([`TaskError::Board`]) when: the task does not
    /// exist; `actor` (not the lead) would take it from another owner; a
    /// claim (`InProgress`) meets a completed task, open blockers, or another
    /// owner; a dependency names a missing task, the task itself, or would
    /// make a cycle. A claim of an unowned task with no `owner` given makes
    /// `actor` the owner. `Deleted` removes the task and its dependencies.
    pub async fn board_update(
        &self,
        team: &str,
        id: &str,
        actor: &str,
        actor_is_lead: bool,
        update: BoardUpdate,
    ) -> Result<BoardChange, TaskError> {
        let (team, id, actor) = (team.to_string(), id.to_string(), actor.to_string());
        self.call(move |db| db.board_update(&team, &id, &actor, actor_is_lead, update))
            .await
    }

    /// Claims for `actor` the lowest-id pending task with no owner and no
    /// open blocker (owner `actor`, status in progress), in one write
    /// transaction; `None` if there is none.
    pub async fn board_claim_next(
        &self,
        team: &str,
        actor: &str,
    ) -> Result<Option<BoardTask>, TaskError> {
        let (team, actor) = (team.to_string(), actor.to_string());
        self.call(move |db| db.board_claim_next(&team, &actor))
            .await
    }
}

/// Blocks until `f` is done (the table's thread answers; no runtime needed).
fn wait<F: Future>(f: F) -> F::Output {
    futures::executor::block_on(f)
}

impl BlockingTaskTable {
    /// See [`TaskTable::board_create`].
    pub fn board_create(
        &self,
        team: &str,
        subject: &str,
        description: &str,
        active_form: Option<String>,
        metadata: Option<Value>,
    ) -> Result<BoardTask, TaskError> {
        wait(
            self.table()
                .board_create(team, subject, description, active_form, metadata),
        )
    }

    /// See [`TaskTable::board_get`].
    pub fn board_get(&self, team: &str, id: &str) -> Result<Option<BoardTask>, TaskError> {
        wait(self.table().board_get(team, id))
    }

    /// See [`TaskTable::board_list`].
    pub fn board_list(&self, team: &str) -> Result<Vec<BoardTask>, TaskError> {
        wait(self.table().board_list(team))
    }

    /// See [`TaskTable::board_update`].
    pub fn board_update(
        &self,
        team: &str,
        id: &str,
        actor: &str,
        actor_is_lead: bool,
        update: BoardUpdate,
    ) -> Result<BoardChange, TaskError> {
        wait(
            self.table()
                .board_update(team, id, actor, actor_is_lead, update),
        )
    }

    /// See [`TaskTable::board_claim_next`].
    pub fn board_claim_next(
        &self,
        team: &str,
        actor: &str,
    ) -> Result<Option<BoardTask>, TaskError> {
        wait(self.table().board_claim_next(team, actor))
    }
}
