//! A team's mailbox and members in `tasks.db`: a message is a row before
//! `SendMessage` reports it sent, and stays waiting until its recipient's
//! log holds it; the members are what a resumed session starts again.

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::db::{now_ms, to_sql};
use super::status::TaskError;
use super::table::TaskTable;

/// One message of a team's mailbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamMail {
    /// Its row id: the order messages were sent in.
    pub id: i64,
    /// The member it is for.
    pub recipient: String,
    /// The member (or `system`) it is from.
    pub sender: String,
    /// A few words shown as its preview.
    pub summary: Option<String>,
    /// The message itself.
    pub body: String,
    /// When it was sent (ms since the epoch).
    pub created_ms: u64,
}

/// One member of a team as the table keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamMemberRow {
    /// The name others address it by.
    pub name: String,
    /// Its agent id (its log is `<agent_id>.jsonl`).
    pub agent_id: String,
    /// The definition it was started from.
    pub agent_type: String,
    /// `working`, `idle`, `failed` or `ended`.
    pub state: String,
    /// It works in plan mode until the lead approves its plan.
    pub plan_required: bool,
    /// When it joined (ms since the epoch).
    pub created_ms: u64,
}

fn mail_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<TeamMail> {
    Ok(TeamMail {
        id: r.get(0)?,
        recipient: r.get(1)?,
        sender: r.get(2)?,
        summary: r.get(3)?,
        body: r.get(4)?,
        created_ms: r.get::<_, i64>(5)?.max(0) as u64,
    })
}

fn member_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<TeamMemberRow> {
    Ok(TeamMemberRow {
        name: r.get(0)?,
        agent_id: r.get(1)?,
        agent_type: r.get(2)?,
        state: r.get(3)?,
        plan_required: r.get(4)?,
        created_ms: r.get::<_, i64>(5)?.max(0) as u64,
    })
}

impl TaskTable {
    /// Files a message for `recipient`; once this returns it survives a
    /// crash (the row is committed).
    pub async fn mail_send(
        &self,
        team: &str,
        recipient: &str,
        sender: &str,
        summary: Option<&str>,
        body: &str,
    ) -> Result<TeamMail, TaskError> {
        let (team, recipient, sender) =
            (team.to_string(), recipient.to_string(), sender.to_string());
        let (summary, body) = (summary.map(str::to_string), body.to_string());
        self.call(move |db| {
            let now = now_ms();
            db.conn.execute(
                "INSERT INTO team_messages (team, recipient, sender, summary, body, created_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![team, recipient, sender, summary, body, to_sql(now)],
            )?;
            Ok(TeamMail {
                id: db.conn.last_insert_rowid(),
                recipient,
                sender,
                summary,
                body,
                created_ms: now,
            })
        })
        .await
    }

    /// The messages still waiting in `team`, oldest first; only those for
    /// `recipient` when given.
    pub async fn mail_waiting(
        &self,
        team: &str,
        recipient: Option<&str>,
    ) -> Result<Vec<TeamMail>, TaskError> {
        let (team, recipient) = (team.to_string(), recipient.map(str::to_string));
        self.call(move |db| {
            let mut stmt = db.conn.prepare_cached(
                "SELECT id, recipient, sender, summary, body, created_ms FROM team_messages \
                 WHERE team = ?1 AND delivered_ms IS NULL AND (?2 IS NULL OR recipient = ?2) \
                 ORDER BY id",
            )?;
            let rows = stmt.query_map(params![team, recipient], mail_of)?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }

    /// Records messages as delivered (their recipient's log holds them).
    pub async fn mail_delivered(&self, team: &str, ids: &[i64]) -> Result<(), TaskError> {
        let (team, ids) = (team.to_string(), ids.to_vec());
        self.call(move |db| {
            let tx = db
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            {
                let mut stmt = tx.prepare_cached(
                    "UPDATE team_messages SET delivered_ms = ?3 \
                     WHERE team = ?1 AND id = ?2 AND delivered_ms IS NULL",
                )?;
                let now = to_sql(now_ms());
                for id in ids {
                    stmt.execute(params![team, id, now])?;
                }
            }
            tx.commit()?;
            Ok(())
        })
        .await
    }

    /// Adds `member` to `team`, or replaces the member of that name.
    pub async fn member_put(&self, team: &str, member: TeamMemberRow) -> Result<(), TaskError> {
        let team = team.to_string();
        self.call(move |db| {
            db.conn.execute(
                "INSERT OR REPLACE INTO team_members \
                 (team, name, agent_id, agent_type, state, plan_required, created_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    team,
                    member.name,
                    member.agent_id,
                    member.agent_type,
                    member.state,
                    member.plan_required,
                    to_sql(member.created_ms)
                ],
            )?;
            Ok(())
        })
        .await
    }

    /// Sets a member's state (and whether it still needs its plan approved).
    pub async fn member_set(
        &self,
        team: &str,
        name: &str,
        state: &str,
        plan_required: Option<bool>,
    ) -> Result<(), TaskError> {
        let (team, name, state) = (team.to_string(), name.to_string(), state.to_string());
        self.call(move |db| {
            db.conn.execute(
                "UPDATE team_members SET state = ?3, plan_required = COALESCE(?4, plan_required) \
                 WHERE team = ?1 AND name = ?2",
                params![team, name, state, plan_required],
            )?;
            Ok(())
        })
        .await
    }

    /// The members of `team`, in the order they joined.
    pub async fn members(&self, team: &str) -> Result<Vec<TeamMemberRow>, TaskError> {
        let team = team.to_string();
        self.call(move |db| {
            let mut stmt = db.conn.prepare_cached(
                "SELECT name, agent_id, agent_type, state, plan_required, created_ms \
                 FROM team_members WHERE team = ?1 ORDER BY created_ms, name",
            )?;
            let rows = stmt.query_map([team], member_of)?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }

    /// The member of `team` named `name`, if any.
    pub async fn member(&self, team: &str, name: &str) -> Result<Option<TeamMemberRow>, TaskError> {
        let (team, name) = (team.to_string(), name.to_string());
        self.call(move |db| {
            Ok(db
                .conn
                .query_row(
                    "SELECT name, agent_id, agent_type, state, plan_required, created_ms \
                     FROM team_members WHERE team = ?1 AND name = ?2",
                    params![team, name],
                    member_of,
                )
                .optional()?)
        })
        .await
    }
}
