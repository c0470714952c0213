//! The session every front end drives. A [`Session`] owns the main agent and
//! everything around its turns: the user's messages, notices of finished
//! background tasks (settled, throttled, and retried when the model service
//! fails), approval questions, interrupts, stopping tasks, resuming and
//! shutting down. A front end opens one, runs it, and from then on only
//! submits [`Op`]s through a [`SessionHandle`] and renders the [`Event`]s
//! of the sink it gave the session; it needs no other access to the core.
//!
//! ```text
//! front end ──Op──▶ SessionHandle ──▶ Session::run ──Event──▶ EventSink ──▶ front end
//! ```
//!
//! A front end: builds a [`SessionBuilder`] once from the settings and its
//! [`SessionOverrides`], opens the log ([`create_log`], or [`PendingResume`]
//! after asking the user about calls that may have run), makes an event
//! channel ([`EventSink::channel`]), calls [`SessionBuilder::open_session`]
//! (or [`Session::open`] with a closure that builds the main agent from the
//! session's [`AgentParts`]), spawns
//! [`Session::run`], and then loops: render each event; on
//! `approval_requested` show the question (whatever else is on screen) and
//! submit [`Op::ApprovalAnswer`] with its id; turn keys and signals into
//! [`Op::Interrupt`], [`Op::BackgroundBatch`], [`Op::StopTask`],
//! [`Op::Shutdown`]; submit [`Op::UserMessage`] at any time (during a turn
//! it waits for the next); read [`SessionHandle::status`] and
//! [`SessionHandle::tasks`] for what to show. The event receiver ends when
//! the session has ended and its work has wound down.

mod approvals;
mod builder;
mod overrides;
mod resume;
mod sources;
#[cfg(test)]
mod tests;
mod web_tools;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

pub use approvals::SessionApprovals;
pub use builder::{MAX_ATTEMPTS, SessionBuilder};
pub use overrides::{ApiKeys, BuildError, MainShape, SessionOverrides};
pub use resume::{OpenError, OpenedLog, PendingResume, create_log, create_log_as};
pub use sources::{
    catalog_sources, load_plugins, mcp_log_dir, mcp_paths, mcp_timeouts, subagent_settings,
};
pub use web_tools::WebTools;

use crate::agent::{Agent, TurnOutcome};
use crate::background::{BackgroundWork, NOTICE_SETTLE, NOTICE_SETTLE_MAX, NoticeThrottle};
use crate::model::Message;
use crate::permissions::ApprovalSource;
use crate::protocol::{ApprovalQuestion, Event, EventSink, Op, TurnStatus};
use crate::tasks::{TaskError, TaskFilter, TaskRow, TaskTable};

/// The main agent's id: the owner of the tasks the session stops and announces.
use crate::protocol::MAIN_AGENT as MAIN;

/// Waits between tries to deliver task notices when the model service fails:
/// quick retries, then a cool-down from 60 s doubling to 300 s.
pub const NOTICE_RETRY: [Duration; 7] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(5),
    Duration::from_secs(60),
    Duration::from_secs(120),
    Duration::from_secs(240),
    Duration::from_secs(300),
];

/// How long stopped background work gets to wind down when the session ends.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// How often stops requested by `cadre tasks stop` from another process are picked up.
const EXTERNAL_STOP_POLL: Duration = Duration::from_millis(500);

/// When a session ends by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifetime {
    /// Only on [`Op::Shutdown`], or once every [`SessionHandle`] is gone
    /// (an interactive front end).
    UntilShutdown,
    /// Once idle after its first turn (`cadre exec`). With
    /// `wait_for_background`, idle also means no task of the main agent runs
    /// and no notice waits: each batch of notices gets a turn of its own, and
    /// a turn that does not complete ends the session. Without it, what still
    /// runs is stopped.
    AfterTask {
        /// Wait for the background work the task started.
        wait_for_background: bool,
    },
}

/// When notices of finished background tasks go out.
#[derive(Debug, Clone)]
pub struct NoticeTiming {
    /// Quiet time after a task ends before its notice goes out.
    pub settle: Duration,
    /// Longest a notice is held back waiting for a burst to settle.
    pub settle_max: Duration,
    /// Waits before each new try of a delivery the model service failed.
    pub retry: Vec<Duration>,
}

impl Default for NoticeTiming {
    fn default() -> Self {
        NoticeTiming {
            settle: NOTICE_SETTLE,
            settle_max: NOTICE_SETTLE_MAX,
            retry: NOTICE_RETRY.to_vec(),
        }
    }
}

/// Everything a session is opened from. Its log comes first, from
/// [`create_log`] or, for a resume, [`PendingResume`] (the user may have to
/// agree to go on before the log is written).
pub struct SessionSetup {
    /// Session id.
    pub session_id: String,
    /// Provider, for `session_started`.
    pub provider: crate::model::Provider,
    /// Model id, for `session_started`.
    pub model: String,
    /// Working directory, for `session_started`.
    pub cwd: PathBuf,
    /// Warnings to report once, after `session_started`.
    pub warnings: Vec<String>,
    /// Where every event of the session goes. The session and its agents
    /// hold the only senders: the front end's receiver ends with the session.
    pub events: EventSink,
    /// The task table, for background work; none runs without one.
    pub tasks: Option<TaskTable>,
    /// The conversation to continue (a resume), or nothing.
    pub messages: Vec<Message>,
    /// True when a person can answer approval questions; otherwise calls
    /// that need one are denied without asking.
    pub answers_questions: bool,
    /// When the session ends by itself.
    pub lifetime: Lifetime,
    /// When notices go out.
    pub notices: NoticeTiming,
    /// The session's team, when it has one (it needs the task table).
    pub team: Option<crate::teams::TeamSettings>,
}

/// What the main agent is built with; see [`Session::open`].
pub struct AgentParts {
    /// The session's events.
    pub events: EventSink,
    /// The session's approval source (answered by [`Op::ApprovalAnswer`]).
    pub approvals: Arc<dyn ApprovalSource>,
    /// The session's background work, when it has a task table.
    pub background: Option<Arc<BackgroundWork>>,
    /// The session's team, when it has one: the main agent leads it.
    pub team: Option<Arc<crate::teams::Team>>,
}

/// What a session is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Phase {
    /// Waiting for a message (or for background work to end).
    #[default]
    Idle,
    /// A turn of the main agent runs.
    Turn,
    /// Finished tasks are about to be announced (letting a burst settle,
    /// or held back by the throttle).
    Notices,
    /// A delivery of notices failed; the next try waits.
    RetryWait,
    /// Stopping what still runs.
    Ending,
    /// Over: nothing more happens.
    Ended,
}

/// A question waiting for its answer.
#[derive(Debug, Clone)]
pub struct OpenQuestion {
    /// The id an [`Op::ApprovalAnswer`] names.
    pub id: u64,
    /// The question.
    pub question: ApprovalQuestion,
}

/// A session's state as front ends read it (see [`SessionHandle::status`]).
#[derive(Debug, Clone, Default)]
pub struct SessionStatus {
    /// What it is doing.
    pub phase: Phase,
    /// Messages submitted while a turn ran, waiting for their own turn.
    pub queued_messages: usize,
    /// The question waiting for an answer, if one does.
    pub question: Option<OpenQuestion>,
}

/// How a session ended.
#[derive(Debug, Clone)]
pub struct SessionOutcome {
    /// The last turn of the main agent, if there was one.
    pub last_turn: Option<TurnOutcome>,
    /// True when it ended by [`Op::Shutdown`] rather than by itself.
    pub shut_down: bool,
}

/// A front end's hold on a session: submit operations, read its state.
/// Cheap to clone; it keeps nothing of the session alive.
#[derive(Clone)]
pub struct SessionHandle {
    session_id: String,
    ops: mpsc::UnboundedSender<Op>,
    status: watch::Receiver<SessionStatus>,
    work: Option<Weak<BackgroundWork>>,
    team: Option<Weak<crate::teams::Team>>,
}

impl SessionHandle {
    /// Submits an operation; false once the session has ended.
    pub fn submit(&self, op: Op) -> bool {
        self.ops.send(op).is_ok()
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The session's state now.
    pub fn status(&self) -> SessionStatus {
        self.status.borrow().clone()
    }

    /// Waits until the state changes; false once the session is gone.
    pub async fn status_changed(&mut self) -> bool {
        self.status.changed().await.is_ok()
    }

    /// True while a turn of the main agent runs (an interrupt has something to stop).
    pub fn turn_running(&self) -> bool {
        self.status.borrow().phase == Phase::Turn
    }

    /// The session's teammates as they stand now (none without a team).
    pub fn teammates(&self) -> Vec<crate::teams::Teammate> {
        self.team
            .as_ref()
            .and_then(Weak::upgrade)
            .map(|t| t.teammates())
            .unwrap_or_default()
    }

    /// Whether the session has a team.
    pub fn has_team(&self) -> bool {
        self.team.is_some()
    }

    /// The team's task board, by id (empty without a team).
    pub async fn board(&self) -> Result<Vec<crate::tasks::BoardTask>, TaskError> {
        let Some(team) = self.team.as_ref().and_then(Weak::upgrade) else {
            return Ok(Vec::new());
        };
        team.table().board_list(team.key()).await
    }

    /// Every task of this session, newest first (empty without background work).
    pub async fn tasks(&self) -> Result<Vec<TaskRow>, TaskError> {
        let Some(work) = self.work.as_ref().and_then(Weak::upgrade) else {
            return Ok(Vec::new());
        };
        work.table()
            .list(&TaskFilter {
                session_id: Some(self.session_id.clone()),
                ..Default::default()
            })
            .await
    }
}

/// One session: the main agent and the loop that drives it. Open it with
/// [`Session::open`], run it with [`Session::run`] (usually in a task of
/// its own), and drive it through the [`SessionHandle`].
pub struct Session {
    agent: Agent,
    ctl: Control,
    /// Session id, and how it started (`startup` or `resume`) for SessionStart hooks.
    start: (String, &'static str),
}

/// Everything of the session but the agent, so ops can be applied while a
/// turn holds the agent.
struct Control {
    ops: mpsc::UnboundedReceiver<Op>,
    ops_open: bool,
    status: Arc<watch::Sender<SessionStatus>>,
    approvals: Arc<SessionApprovals>,
    work: Option<Arc<BackgroundWork>>,
    subagents: Option<Arc<dyn crate::tools::Delegation>>,
    /// The session's team, whose changes (mail, a teammate going idle) the
    /// idle session wakes for.
    team: Option<Arc<crate::teams::Team>>,
    events: EventSink,
    lifetime: Lifetime,
    timing: NoticeTiming,
    throttle: NoticeThrottle,
    queue: VecDeque<Queued>,
    /// Cancels what runs now: a turn, or the wait before a retry.
    current: Option<CancellationToken>,
    shutdown: CancellationToken,
    last_turn: Option<TurnOutcome>,
    /// The main agent's mode switch (`Op::SetMode`).
    mode_switch: Arc<crate::permissions::ModeSwitch>,
    /// The session's code checkpoints, when it keeps them.
    checkpoints: Option<Arc<crate::checkpoints::CheckpointStore>>,
}

impl Session {
    /// Opens a session: reports `session_started` and the warnings, opens
    /// the background work (tasks of dead processes are marked lost),
    /// builds the main agent with `build_agent` from the session's parts,
    /// and restores a resumed conversation, queueing the notices of tasks
    /// that ended unannounced so each is announced exactly once.
    pub async fn open<E: From<TaskError>>(
        setup: SessionSetup,
        build_agent: impl FnOnce(AgentParts) -> Result<Agent, E>,
    ) -> Result<(Session, SessionHandle), E> {
        let SessionSetup {
            session_id,
            provider,
            model,
            cwd,
            warnings,
            events,
            tasks,
            messages,
            answers_questions,
            lifetime,
            notices,
            team,
        } = setup;
        events.emit(Event::SessionStarted {
            session_id: session_id.clone(),
            provider,
            model,
            cwd: cwd.display().to_string(),
        });
        for message in warnings {
            events.emit(Event::Warning { message });
        }
        let team_table = tasks.clone();
        let work = match tasks {
            Some(table) => {
                // A table created just now holds no task of an earlier
                // process: nothing to sweep, and no reason to wait for it.
                let lost = if table.is_new() {
                    Vec::new()
                } else {
                    table.mark_lost_on_startup().await?
                };
                for id in lost {
                    let mut message =
                        format!("task {id} was lost: its cadre process ended while it was active");
                    // A worktree child's worktree is settled as its end would have.
                    if let Ok(row) = table.get(&id).await
                        && let Some(said) =
                            crate::subagents::settle_lost_worktree(&row.output_path).await
                    {
                        message.push_str("; ");
                        message.push_str(&said);
                    }
                    events.emit(Event::Warning { message });
                }
                let table_is_new = table.is_new();
                let work = BackgroundWork::new(table, session_id.clone(), events.clone());
                // After a resume, tasks that ended unannounced are announced now, once.
                if !table_is_new {
                    work.note_logged_notices(&messages).await;
                    work.requeue_unannounced(MAIN).await;
                }
                Some(work)
            }
            None => None,
        };
        // The team (its board, mail and members as the table keeps them).
        let team = match (team, team_table) {
            (Some(settings), Some(table)) if settings.enabled => {
                Some(crate::teams::Team::open(table, &session_id, events.clone(), settings).await?)
            }
            _ => None,
        };
        let status = Arc::new(watch::channel(SessionStatus::default()).0);
        let approvals = Arc::new(SessionApprovals::new(answers_questions, status.clone()));
        let mut agent = build_agent(AgentParts {
            events: events.clone(),
            approvals: approvals.clone(),
            background: work.clone(),
            team: team.clone(),
        })?;
        agent.restore(messages);
        let (ops_tx, ops) = mpsc::unbounded_channel();
        let start = (
            session_id.clone(),
            if agent.conversation().is_empty() {
                "startup"
            } else {
                "resume"
            },
        );
        let handle = SessionHandle {
            session_id,
            ops: ops_tx,
            status: status.subscribe(),
            work: work.as_ref().map(Arc::downgrade),
            team: team.as_ref().map(Arc::downgrade),
        };
        let ctl = Control {
            ops,
            ops_open: true,
            status,
            approvals,
            subagents: agent.delegation(),
            work,
            team,
            events,
            lifetime,
            timing: notices,
            throttle: NoticeThrottle::default(),
            queue: VecDeque::new(),
            current: None,
            shutdown: CancellationToken::new(),
            last_turn: None,
            mode_switch: agent.mode_switch(),
            checkpoints: agent.checkpoints(),
        };
        Ok((Session { agent, ctl, start }, handle))
    }

    /// Runs the session until it ends (see [`Lifetime`]): a turn for each
    /// message, a turn for each batch of finished tasks' notices while idle,
    /// operations applied whenever they arrive. On the way out whatever the
    /// main agent still runs is stopped (recorded `cancelled`) and given
    /// [`STOP_GRACE`] to wind down.
    pub async fn run(self) -> SessionOutcome {
        let Session {
            mut agent,
            mut ctl,
            start,
        } = self;
        if let Some(work) = &ctl.work {
            watch_external_stops(work);
        }
        agent.session_start(&start.0, start.1).await;
        // A resumed session's teammates come back before anything else runs.
        if let Some(delegation) = &ctl.subagents {
            delegation.resume_team().await;
        }
        let mut team_changes = ctl.team.as_ref().map(|t| t.subscribe());
        loop {
            // Operations already waiting come first: a message submitted
            // before the session started runs before any notice turn (and
            // carries the notices itself).
            ctl.apply_waiting().await;
            // A mode change asked for while idle shows at once.
            agent.apply_mode_switch();
            if ctl.shutdown.is_cancelled() {
                break;
            }
            if let Some(next) = ctl.queue.pop_front() {
                ctl.publish_queue();
                match next {
                    Queued::Message(text, images) => {
                        agent.attach_images(images);
                        // Files the turn's tools change are saved first.
                        if let Some(store) = &ctl.checkpoints
                            && let Err(e) = store.begin(&text)
                        {
                            ctl.events.emit(Event::Warning {
                                message: format!(
                                    "{e}; this message's file changes cannot be restored"
                                ),
                            });
                        }
                        run_turn(&mut agent, &mut ctl, text).await;
                    }
                    Queued::Compact(focus) => compact(&mut agent, &mut ctl, focus).await,
                    Queued::Rewind(rewind) => go_back(&mut agent, &mut ctl, rewind).await,
                    Queued::SetModel(model) => agent.set_model(&model),
                    Queued::Shell(command) => shell(&mut agent, &mut ctl, command).await,
                }
                continue;
            }
            if ctl.ends_now(&agent) {
                break;
            }
            if agent.has_notices() {
                deliver_notices(&mut agent, &mut ctl).await;
                continue;
            }
            ctl.set_phase(Phase::Idle);
            let work = ctl.work.clone();
            tokio::select! {
                op = ctl.next_op() => ctl.apply(op).await,
                // A task ended: a notice may wait, or exec may be done.
                _ = async {
                    match &work {
                        Some(w) => w.changed().await,
                        None => std::future::pending().await,
                    }
                } => {}
                // Mail for the lead, or a teammate went idle.
                _ = async {
                    match &mut team_changes {
                        Some(changes) => {
                            if changes.changed().await.is_err() {
                                std::future::pending::<()>().await;
                            }
                        }
                        None => std::future::pending().await,
                    }
                } => {}
            }
        }
        ctl.set_phase(Phase::Ending);
        // Teammates end with the session, resting ones too (their records
        // keep how they stood, for a resume).
        if let Some(team) = &ctl.team {
            team.close();
        }
        let teammates = ctl.team.as_ref().is_some_and(|t| t.alive() > 0);
        if (agent.active_tasks() > 0 || teammates)
            && let Some(work) = &ctl.work
        {
            work.stop_all().await;
            work.wait_idle(STOP_GRACE).await;
        }
        agent
            .session_end(if ctl.shutdown.is_cancelled() {
                "prompt_input_exit"
            } else {
                "other"
            })
            .await;
        ctl.set_phase(Phase::Ended);
        SessionOutcome {
            last_turn: ctl.last_turn,
            shut_down: ctl.shutdown.is_cancelled(),
        }
    }
}

/// What waits for the main agent, in the order it was asked for.
enum Queued {
    /// A user message, with the image files attached to it: a turn.
    Message(String, Vec<std::path::PathBuf>),
    /// `/compact [focus]`.
    Compact(Option<String>),
    /// Esc twice, `/rewind`: back to before a message.
    Rewind(Rewind),
    /// `/model NAME`.
    SetModel(String),
    /// `!command`.
    Shell(String),
}

/// What `Op::Rewind` asked for.
struct Rewind {
    /// The message.
    prompt: String,
    /// Later sends of it to skip.
    later_same: usize,
    /// What goes back.
    action: crate::protocol::RewindAction,
    /// Overwrite files changed outside cadre.
    overwrite: bool,
}

/// Goes back to before a message, applying operations meanwhile (an
/// interrupt stops a summary).
async fn go_back(agent: &mut Agent, ctl: &mut Control, r: Rewind) {
    let cancel = ctl.shutdown.child_token();
    ctl.current = Some(cancel.clone());
    ctl.set_phase(Phase::Turn);
    let run = agent.rewind_as(&r.prompt, r.later_same, r.action, r.overwrite, &cancel);
    tokio::pin!(run);
    let result = loop {
        tokio::select! {
            result = &mut run => break result,
            op = ctl.next_op() => ctl.apply(op).await,
        }
    };
    ctl.current = None;
    if let Err(e) = result {
        ctl.events.emit(Event::Warning {
            message: format!("cannot go back: {e}"),
        });
    }
}

/// Compacts the main agent's conversation, applying operations meanwhile
/// (an interrupt stops it). Its events say how it went.
async fn compact(agent: &mut Agent, ctl: &mut Control, focus: Option<String>) {
    let cancel = ctl.shutdown.child_token();
    ctl.current = Some(cancel.clone());
    ctl.set_phase(Phase::Turn);
    let run = agent.compact(focus, &cancel);
    tokio::pin!(run);
    loop {
        tokio::select! {
            _ = &mut run => break,
            op = ctl.next_op() => ctl.apply(op).await,
        }
    }
    ctl.current = None;
}

/// Runs a shell-mode command as the user, applying operations meanwhile
/// (an interrupt stops it).
async fn shell(agent: &mut Agent, ctl: &mut Control, command: String) {
    let cancel = ctl.shutdown.child_token();
    ctl.current = Some(cancel.clone());
    ctl.set_phase(Phase::Turn);
    let run = agent.run_user_shell(&command, cancel);
    tokio::pin!(run);
    loop {
        tokio::select! {
            _ = &mut run => break,
            op = ctl.next_op() => ctl.apply(op).await,
        }
    }
    ctl.current = None;
}

/// Runs one turn of the main agent, applying operations while it runs.
async fn run_turn(agent: &mut Agent, ctl: &mut Control, text: String) -> TurnOutcome {
    let cancel = ctl.shutdown.child_token();
    ctl.current = Some(cancel.clone());
    ctl.set_phase(Phase::Turn);
    let turn = agent.run_turn(text, cancel);
    tokio::pin!(turn);
    let outcome = loop {
        tokio::select! {
            outcome = &mut turn => break outcome,
            op = ctl.next_op() => ctl.apply(op).await,
        }
    };
    ctl.current = None;
    ctl.last_turn = Some(outcome.clone());
    outcome
}

/// Announces finished tasks in a turn of their own: once a burst settled
/// and the throttle allows, retrying a delivery the model service failed.
/// A message from the user (or a shutdown) comes first: its turn carries the
/// notices anyway.
async fn deliver_notices(agent: &mut Agent, ctl: &mut Control) {
    let Some(work) = ctl.work.clone() else { return };
    ctl.set_phase(Phase::Notices);
    let mut throttle = std::mem::take(&mut ctl.throttle);
    let (settle, settle_max) = (ctl.timing.settle, ctl.timing.settle_max);
    // Team mail alone is a conversation, not a burst of finished work: the
    // throttle on notice turns is for the latter.
    let team_mail_only = !work.has_finished(MAIN);
    let ready = {
        let wait = async {
            work.settle(MAIN, settle, settle_max).await;
            if !team_mail_only {
                throttle.wait().await;
            }
        };
        tokio::pin!(wait);
        loop {
            tokio::select! {
                _ = &mut wait => break true,
                op = ctl.next_op() => {
                    ctl.apply(op).await;
                    if ctl.preempted() {
                        break false;
                    }
                }
            }
        }
    };
    ctl.throttle = throttle;
    ctl.apply_waiting().await;
    if !ready || ctl.preempted() {
        return;
    }
    let mut retries = ctl.timing.retry.clone().into_iter();
    loop {
        // The notices themselves join the turn's first request.
        let outcome = run_turn(agent, ctl, String::new()).await;
        let failed = outcome.status == TurnStatus::Failed && outcome.model_error.is_some();
        if !failed || ctl.preempted() {
            return;
        }
        let Some(wait) = retries.next() else { return };
        ctl.events.emit(Event::Warning {
            message: format!(
                "delivering task notices failed ({}); retrying in {}",
                outcome.error.unwrap_or_default(),
                seconds(wait)
            ),
        });
        ctl.set_phase(Phase::RetryWait);
        let cancel = ctl.shutdown.child_token();
        ctl.current = Some(cancel.clone());
        let sleep = tokio::time::sleep(wait);
        tokio::pin!(sleep);
        let go_on = loop {
            tokio::select! {
                _ = &mut sleep => break true,
                // An interrupt gives up on this delivery; the notices are in
                // the conversation and go with the next turn.
                _ = cancel.cancelled() => break false,
                op = ctl.next_op() => {
                    ctl.apply(op).await;
                    if ctl.preempted() {
                        break false;
                    }
                }
            }
        };
        ctl.current = None;
        if !go_on {
            return;
        }
    }
}

/// `1 s`, or `250 ms` for a wait under a second.
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

impl Control {
    fn set_phase(&self, phase: Phase) {
        self.status.send_if_modified(|s| {
            let changed = s.phase != phase;
            s.phase = phase;
            changed
        });
    }

    fn publish_queue(&self) {
        let n = self.queue.len();
        self.status.send_if_modified(|s| {
            let changed = s.queued_messages != n;
            s.queued_messages = n;
            changed
        });
    }

    /// True when what the session waits on should give way: a shutdown, or
    /// a message from the user.
    fn preempted(&self) -> bool {
        self.shutdown.is_cancelled() || !self.queue.is_empty()
    }

    /// True when the session is done by its lifetime.
    fn ends_now(&self, agent: &Agent) -> bool {
        match self.lifetime {
            Lifetime::UntilShutdown => false,
            Lifetime::AfterTask {
                wait_for_background,
            } => match &self.last_turn {
                None => false,
                Some(last) if !wait_for_background || last.status != TurnStatus::Completed => true,
                // A team is done when no teammate works and no mail waits.
                Some(_) => {
                    agent.active_tasks() == 0
                        && !agent.has_notices()
                        && self.team.as_ref().is_none_or(|t| !t.any_mail())
                }
            },
        }
    }

    /// The next operation. Once every handle is gone it is a shutdown when
    /// nothing else could end the session; otherwise none comes again.
    async fn next_op(&mut self) -> Op {
        if self.ops_open {
            if let Some(op) = self.ops.recv().await {
                return op;
            }
            self.ops_open = false;
            if self.lifetime == Lifetime::UntilShutdown || self.last_turn.is_none() {
                return Op::Shutdown;
            }
        }
        std::future::pending().await
    }

    /// Applies the operations already submitted, without waiting.
    async fn apply_waiting(&mut self) {
        if !self.ops_open {
            return;
        }
        while let Ok(op) = self.ops.try_recv() {
            self.apply(op).await;
        }
    }

    async fn apply(&mut self, op: Op) {
        match op {
            Op::UserMessage { text } => {
                self.queue.push_back(Queued::Message(text, Vec::new()));
                self.publish_queue();
            }
            Op::UserMessageWithImages { text, images } => {
                let images = images.into_iter().map(std::path::PathBuf::from).collect();
                self.queue.push_back(Queued::Message(text, images));
                self.publish_queue();
            }
            Op::Compact { focus } => {
                self.queue.push_back(Queued::Compact(focus));
                self.publish_queue();
            }
            Op::ApprovalAnswer { id, answer } => {
                self.approvals.answer(id, answer);
            }
            Op::Interrupt => {
                if let Some(current) = &self.current {
                    current.cancel();
                }
            }
            Op::BackgroundBatch => {
                if let Some(runtime) = &self.subagents {
                    runtime.background_now();
                }
            }
            Op::StopTask { task_id } => self.stop_task(&task_id).await,
            Op::StopAll => {
                if let Some(work) = &self.work {
                    // A child's own tasks end with it.
                    for id in work.running_of(MAIN) {
                        let _ = work.stop(MAIN, &id).await;
                    }
                }
            }
            Op::SetMode { mode } => self.mode_switch.request(mode),
            Op::Rewind {
                prompt,
                later_same,
                action,
                overwrite,
            } => {
                self.queue.push_back(Queued::Rewind(Rewind {
                    prompt,
                    later_same,
                    action,
                    overwrite,
                }));
                self.publish_queue();
            }
            Op::ListCheckpoints => self.events.emit(Event::Checkpoints {
                agent: MAIN.into(),
                checkpoints: self
                    .checkpoints
                    .as_ref()
                    .map(|c| c.list())
                    .unwrap_or_default(),
            }),
            Op::SetModel { model } => {
                self.queue.push_back(Queued::SetModel(model));
                self.publish_queue();
            }
            Op::Shell { command } => {
                self.queue.push_back(Queued::Shell(command));
                self.publish_queue();
            }
            Op::MessageTeammate { name, text } => self.message_teammate(&name, &text).await,
            Op::InterruptTeammate { name } => {
                if let Some(team) = &self.team {
                    team.interrupt(&name);
                }
            }
            Op::StopTeammate { name } => {
                if let Some(team) = &self.team {
                    team.stop(&name);
                }
            }
            Op::Shutdown => self.shutdown.cancel(),
        }
    }

    /// The user's words to a teammate, through its mailbox (kept until they
    /// reach its conversation); a warning says why they could not go.
    async fn message_teammate(&self, name: &str, text: &str) {
        let sent = match &self.team {
            None => Err("this session has no team".to_string()),
            Some(team) => match team.recipient(name) {
                Ok(to) if to == crate::teams::LEAD => {
                    Err("the lead is the main agent: write to it directly".to_string())
                }
                Ok(to) => team
                    .send(crate::teams::USER_SENDER, &to, None, text)
                    .await
                    .map(|_| ()),
                Err(e) => Err(e),
            },
        };
        if let Err(e) = sent {
            self.events.emit(Event::Warning {
                message: format!("message to {name} not sent: {e}"),
            });
        }
    }

    /// Stops one task of this session, whichever agent started it.
    async fn stop_task(&self, task_id: &str) {
        let Some(work) = &self.work else {
            self.events.emit(Event::Warning {
                message: format!("no task {task_id}: this session runs no background work"),
            });
            return;
        };
        let owner = match work.table().get(task_id).await {
            Ok(row) if row.session_id == work.session_id() => row.parent_agent,
            Ok(_) => {
                self.events.emit(Event::Warning {
                    message: format!("task {task_id} belongs to another session"),
                });
                return;
            }
            Err(_) => MAIN.to_string(),
        };
        if let Err(message) = work.stop(&owner, task_id).await {
            self.events.emit(Event::Warning { message });
        }
    }
}

/// Applies `cadre tasks stop` requests from other processes to this
/// session's work, for as long as the work exists.
fn watch_external_stops(work: &Arc<BackgroundWork>) {
    let weak = Arc::downgrade(work);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EXTERNAL_STOP_POLL);
        loop {
            tick.tick().await;
            match weak.upgrade() {
                Some(w) => w.apply_external_stops().await,
                None => break,
            }
        }
    });
}
