//! Running subagents: a reply's `Agent` calls form a batch that is admitted
//! (limits), resolved (definition, tools, model, mode), logged, and run
//! concurrently through a pool; the parent gets one report per call. What a
//! child may do is decided by `filter`, `ratchet` and the shared permission
//! policy; how its report reads, by `report`.
//!
//! Here: the settings, the runtime and what its parts share. `admission`:
//! an agent's place (its `Spawner`) and the per-turn cap; `preparation`: a
//! call resolved into a ready child; `pool`: children run and each run turned
//! into its report; `lifecycle`: a child's task row; `fork` and `messages`:
//! forks, and `SendMessage` (steering and resuming).

use crate::context::ContextPolicy;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio_util::sync::CancellationToken;

use super::agent_tool::{AgentArgs, roster_reminder};
use super::catalog::{CatalogCache, CatalogSources, DefinitionCatalog};
use super::report::ChildReport;
use crate::agent::{Agent, AgentSetup};
use crate::config::Settings;
use crate::model::ModelClient;
use crate::permissions::{ApprovalGate, PermissionMode, PermissionPolicy};
pub use crate::protocol::ChildTag;
use crate::protocol::{Event, EventSink};
use crate::tools::{Caller, ToolContext};

pub use super::spec::child_system_prompt;

/// `[subagents]` settings. Each limit has its reason next to it.
#[derive(Debug, Clone)]
pub struct SubagentSettings {
    /// Levels of nesting (1 = children cannot spawn; at most 3): deeper trees
    /// multiply cost and make reports second-hand.
    pub max_depth: u32,
    /// Children of one batch running at once (1–32): bounded so a provider's
    /// rate limit is not hit by one reply; the default equals `max_per_turn`,
    /// so one reply's whole batch runs at once.
    pub max_concurrent: usize,
    /// Children per parent turn: a runaway model cannot fan out without bound.
    pub max_per_turn: usize,
    /// Children running at once in the session, background included.
    pub max_running: usize,
    /// Type used when a call names none.
    pub default_type: String,
    /// Model requests per child when its definition gives no `maxTurns`.
    pub default_max_turns: u32,
    /// Tool calls per child: a child stuck in a loop ends as failed.
    pub max_tool_calls_per_child: u32,
    /// Offer the `Verification` built-in.
    pub enable_verification: bool,
    /// Extra tools denied to non-built-in definitions.
    pub custom_deny: Vec<String>,
    /// A foreground child still running after this long moves to the
    /// background, so one slow child never holds the parent's turn hostage.
    pub auto_background_after: std::time::Duration,
    /// The project folder is trusted: its definitions' `permissionMode`
    /// applies as a user definition's does, and their `memory: user` opens a
    /// folder of their own.
    pub project_trusted: bool,
    /// A settings file disables `bypassPermissions`: no definition gets it.
    pub bypass_disabled: bool,
}

impl SubagentSettings {
    /// What the ratchet allows definitions beyond their source.
    pub fn mode_limits(&self) -> super::ratchet::ModeLimits {
        super::ratchet::ModeLimits {
            project_trusted: self.project_trusted,
            bypass_disabled: self.bypass_disabled,
        }
    }
}

impl Default for SubagentSettings {
    fn default() -> Self {
        SubagentSettings {
            max_depth: 1,
            max_concurrent: 16,
            max_per_turn: 16,
            max_running: 20,
            default_type: "general-purpose".into(),
            default_max_turns: 50,
            max_tool_calls_per_child: 200,
            enable_verification: false,
            custom_deny: Vec::new(),
            auto_background_after: std::time::Duration::from_secs(120),
            project_trusted: false,
            bypass_disabled: false,
        }
    }
}

/// Everything children of a session share.
pub struct SubagentRuntime {
    /// Settings.
    pub settings: SubagentSettings,
    /// Where definitions are loaded from (re-read at every batch, so a file
    /// edited mid-run changes the next spawn, never a running child).
    pub definitions: CatalogCache,
    /// The session's model client.
    pub client: ModelClient,
    /// For resolving model aliases.
    pub model_settings: Settings,
    /// The session's permission policy.
    pub policy: Arc<PermissionPolicy>,
    /// The session's approval gate.
    pub gate: Arc<ApprovalGate>,
    /// The session's event sink.
    pub events: EventSink,
    /// `sessions/<id>.agents/`, where child logs go; none when not logging.
    pub agents_dir: Option<PathBuf>,
    /// Template for children's tool contexts (cwd, cap, sandbox).
    pub base_ctx: ToolContext,
    /// The session's hooks, which children fire too (with their definitions' own).
    pub hooks: Option<Arc<crate::hooks::SessionHooks>>,
    /// The session's MCP servers, which definitions' `mcpServers` name.
    pub mcp: Option<Arc<crate::mcp::McpHub>>,
    /// The skills a definition's `skills` preloads.
    pub skills: Arc<crate::skills::SkillSet>,
    /// The parent's context policy; a child's is the same for its own model.
    pub context: ContextPolicy,
    /// The session's team: the lead's named spawns join it.
    pub team: Option<Arc<crate::teams::Team>>,
    running: Arc<AtomicUsize>,
    background_now: latch::BackgroundRequests,
    children: std::sync::Mutex<Vec<ChildRecord>>,
    /// The last roster reminder made, with the catalog and the allowed types
    /// it was made for: an agent with `Agent` compares it every request.
    roster_made: std::sync::Mutex<Option<RosterMade>>,
    /// Whether the children of earlier runs of this session were loaded.
    earlier_loaded: std::sync::atomic::AtomicBool,
    /// Whether the team's teammates of earlier runs were started again.
    team_resumed: std::sync::atomic::AtomicBool,
    /// Definition warnings already given (each is given once a session).
    warned: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

/// What the runtime remembers of every child it made, to reach it later with
/// `SendMessage`: running, through its inbox; finished, by resuming it.
struct ChildRecord {
    agent_id: String,
    owner: String,
    name: Option<String>,
    agent_type: String,
    setup: AgentSetup,
    spawner: Option<(u32, Option<Vec<String>>)>,
    task_id: Option<String>,
    resumable: bool,
    /// Its report carries a parsed verdict.
    verdict: bool,
    /// The MCP servers of its own (closed after each of its runs).
    servers: Vec<Arc<crate::mcp::McpServer>>,
    /// A teammate: the mode it works in once its plan is approved.
    work_mode: Option<PermissionMode>,
}

/// How many children of the session are running (or admitted and queued).
impl SubagentRuntime {
    /// Children running now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    /// Moves the foreground batch now running (if any) to the background.
    /// The request is latched for the batch running now, even one that has
    /// not reached its wait yet; with no batch running it is dropped.
    pub fn background_now(&self) {
        self.background_now.request();
    }
}

mod admission;
mod fork;
mod isolation;
mod latch;
mod lifecycle;
mod mcp_servers;
mod messages;
mod pool;
mod preparation;
mod teammate;

pub use admission::Spawner;

pub use fork::fork_directive;
pub use isolation::settle_lost_worktree;

/// What a batch needs to know about the agent spawning it.
pub struct Parent<'a> {
    /// Its agent id (tasks are filed under it).
    pub agent_id: &'a str,
    /// Its tools, last request, model client and mode.
    pub caller: &'a Caller,
    /// Its spawner (depth, allowed types, per-turn count).
    pub spawner: &'a Spawner,
}

/// One `Agent` call of a batch, after the parent's permission check.
pub struct BatchCall {
    /// 1-based position among the reply's `Agent` calls.
    pub index: usize,
    /// The parsed arguments.
    pub args: AgentArgs,
}

/// A child ready to run (or to run again, when resumed).
struct Prepared {
    index: usize,
    tag: ChildTag,
    agent: Agent,
    prompt: String,
    verification: bool,
    mode: PermissionMode,
    ctx: ToolContext,
    description: String,
    name: Option<String>,
    background: bool,
    task_id: Option<String>,
    task_cancel: Option<CancellationToken>,
    setup: AgentSetup,
    spawner: Option<(u32, Option<Vec<String>>)>,
    resumable: bool,
    /// Its definition's display colour, for `SubagentStarted`.
    color: Option<String>,
    /// The MCP servers it started for itself, closed when it is dropped.
    mcp_servers: mcp_servers::DedicatedServers,
    /// Its git worktree (`isolation: worktree`), ended after its run.
    worktree: Option<isolation::ChildWorktree>,
    /// A teammate: the mode it works in once its plan is approved, and
    /// whether it needs that approval first.
    teammate: Option<(PermissionMode, bool)>,
}

/// A foreground child the batch is waiting for.
struct ForegroundChild {
    slot: usize,
    rx: tokio::sync::oneshot::Receiver<Result<ChildReport, BatchFailure>>,
    detached: Arc<std::sync::atomic::AtomicBool>,
    cancel: CancellationToken,
    task_id: Option<String>,
    tag: ChildTag,
    /// Its task: once its report is back, it files the child's end.
    run: tokio::task::JoinHandle<()>,
}

/// The log of a child could not be written: the batch and the turn stop.
#[derive(Debug)]
pub struct BatchFailure(pub String);

/// A roster reminder and what it was made from.
struct RosterMade {
    catalog: Arc<DefinitionCatalog>,
    allowed: Option<Vec<String>>,
    text: String,
}

/// Holds a slot of the session's running cap until dropped.
struct RunningSlot(Arc<AtomicUsize>);

impl Drop for RunningSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A fresh agent id: 16 random hex digits (the random tail of a UUIDv7, so
/// the first 8 digits shown in reports differ between siblings).
pub fn new_agent_id() -> String {
    let v = uuid::Uuid::now_v7().as_u128();
    format!("{:016x}", v & 0xffff_ffff_ffff_ffff)
}

fn first_chars(s: &str, n: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > n {
        flat.chars().take(n).collect()
    } else {
        flat
    }
}

impl SubagentRuntime {
    /// A runtime for a session.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        settings: SubagentSettings,
        sources: CatalogSources,
        client: ModelClient,
        model_settings: Settings,
        policy: Arc<PermissionPolicy>,
        gate: Arc<ApprovalGate>,
        events: EventSink,
        agents_dir: Option<PathBuf>,
        base_ctx: ToolContext,
        context: ContextPolicy,
    ) -> Self {
        SubagentRuntime {
            settings,
            definitions: CatalogCache::new(sources),
            client,
            model_settings,
            policy,
            gate,
            events,
            agents_dir,
            base_ctx,
            hooks: None,
            mcp: None,
            skills: Arc::default(),
            context,
            team: None,
            running: Arc::new(AtomicUsize::new(0)),
            background_now: latch::BackgroundRequests::default(),
            children: std::sync::Mutex::new(Vec::new()),
            roster_made: std::sync::Mutex::new(None),
            earlier_loaded: std::sync::atomic::AtomicBool::new(false),
            team_resumed: std::sync::atomic::AtomicBool::new(false),
            warned: std::sync::Mutex::new(Default::default()),
        }
    }

    /// Gives children the session's MCP servers (`mcpServers` names them)
    /// and where their own servers log.
    pub fn with_mcp(mut self, hub: Option<Arc<crate::mcp::McpHub>>) -> Self {
        self.mcp = hub;
        self
    }

    /// The skills definitions' `skills` name.
    pub fn with_skills(mut self, skills: Arc<crate::skills::SkillSet>) -> Self {
        self.skills = skills;
        self
    }

    /// Gives the session's team to the lead's named spawns.
    pub fn with_team(mut self, team: Option<Arc<crate::teams::Team>>) -> Self {
        self.team = team;
        self
    }

    /// Gives the session's hooks to every child.
    pub fn with_hooks(mut self, hooks: Option<Arc<crate::hooks::SessionHooks>>) -> Self {
        self.hooks = hooks;
        self
    }

    /// Takes up to `wanted` slots of the session's running cap, as many as
    /// are free; each is given back when dropped.
    fn reserve_slots(&self, wanted: usize) -> Vec<RunningSlot> {
        let cap = self.settings.max_running;
        let taken = self
            .running
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |running| {
                Some(running + wanted.min(cap.saturating_sub(running)))
            })
            .map_or(0, |before| wanted.min(cap.saturating_sub(before)));
        (0..taken)
            .map(|_| RunningSlot(self.running.clone()))
            .collect()
    }

    /// The error a spawn past the running cap gets.
    fn running_cap_reached(&self) -> String {
        format!(
            "concurrent subagent limit reached: {} subagents are already running in this session; do not retry this now — wait for running subagents to finish",
            self.settings.max_running
        )
    }

    /// Gives each definition warning once a session.
    fn warn_once(&self, message: String) {
        let new = self
            .warned
            .lock()
            .map(|mut w| w.insert(message.clone()))
            .unwrap_or(true);
        if new {
            self.events.emit(Event::Warning { message });
        }
    }

    /// The definitions as they are on disk now.
    pub fn catalog(&self) -> Result<Arc<DefinitionCatalog>, String> {
        self.definitions.get()
    }

    /// The roster reminder for an agent that has the `Agent` tool: made
    /// again only when the definitions or the allowed types differ from the
    /// last one's.
    pub fn roster(&self, allowed: Option<&[String]>) -> Option<String> {
        let catalog = self.catalog().ok()?;
        let mut made = self
            .roster_made
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(m) = made.as_ref()
            && Arc::ptr_eq(&m.catalog, &catalog)
            && m.allowed.as_deref() == allowed
        {
            return Some(m.text.clone());
        }
        let roster: Vec<(String, String)> = catalog
            .roster()
            .into_iter()
            .filter(|(name, _)| allowed.is_none_or(|a| a.iter().any(|t| t == name)))
            .collect();
        let text = roster_reminder(&roster);
        *made = Some(RosterMade {
            catalog,
            allowed: allowed.map(<[String]>::to_vec),
            text: text.clone(),
        });
        Some(text)
    }
}
