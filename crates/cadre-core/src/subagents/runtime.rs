//! Running subagents: a reply's `Agent` calls form a batch that is admitted
//! (limits), resolved (definition, tools, model, mode), logged, and run
//! concurrently through a pool; the parent gets one report per call. What a
//! child may do is decided by `filter`, `ratchet` and the shared permission
//! policy; how its report reads, by `report`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::agent_tool::{AgentArgs, AgentTool, roster_reminder};
use super::catalog::{CatalogSources, DefinitionCatalog};
use super::filter::{FilterInput, resolve_tools};
use super::ratchet::child_mode;
use super::report::{ChildReport, ChildStatus, parse_verdict, render_batch};
use super::{AgentDefinition, DefinitionSource};
use crate::agent::{
    Agent, AgentSetup, Event, EventSink, TurnLimits, TurnStatus, environment_facts,
    project_instructions,
};
use crate::config::Settings;
use crate::model::{ModelClient, ModelRequest, Usage};
use crate::permissions::{ApprovalGate, PermissionMode, PermissionPolicy};
use crate::sandbox::SandboxPolicy;
use crate::session::{RecordBody, SessionLog};
use crate::tasks::{TaskKind, TaskStatus};
use crate::tools::{ToolContext, ToolOutput, ToolRegistry};

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
        }
    }
}

/// Everything children of a session share.
pub struct SubagentRuntime {
    /// Settings.
    pub settings: SubagentSettings,
    /// Where definitions are loaded from (re-read at every batch, so a file
    /// edited mid-run changes the next spawn, never a running child).
    pub sources: CatalogSources,
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
    running: Arc<AtomicUsize>,
    background_now: tokio::sync::Notify,
    children: std::sync::Mutex<Vec<ChildRecord>>,
    /// Whether the children of earlier runs of this session were loaded.
    earlier_loaded: std::sync::atomic::AtomicBool,
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
}

/// How many children of the session are running (or admitted and queued).
impl SubagentRuntime {
    /// Children running now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    /// Moves the foreground batch now running (if any) to the background.
    pub fn background_now(&self) {
        self.background_now.notify_waiters();
    }
}

/// Where a parent stands when it spawns.
pub struct Spawner {
    /// The shared runtime.
    pub runtime: Arc<SubagentRuntime>,
    /// The parent's depth (main = 0).
    pub depth: u32,
    /// Types this parent may spawn (`tools: Agent(a, b)`); `None` = any.
    pub allowed_types: Option<Vec<String>>,
    /// Children started in the parent's current turn.
    pub started_this_turn: AtomicUsize,
}

impl Spawner {
    /// A spawner for the top-level agent.
    pub fn main(runtime: Arc<SubagentRuntime>, allowed_types: Option<Vec<String>>) -> Spawner {
        Spawner {
            runtime,
            depth: 0,
            allowed_types,
            started_this_turn: AtomicUsize::new(0),
        }
    }
}

mod fork;
mod messages;

pub use fork::fork_directive;

/// What a batch needs to know about the agent spawning it.
pub struct Parent<'a> {
    /// Its agent id (tasks are filed under it).
    pub agent_id: &'a str,
    /// Its tools, exactly (a fork gets the same list).
    pub registry: &'a ToolRegistry,
    /// Its last request (a fork's first request starts from it, byte for byte).
    pub last_request: Option<&'a ModelRequest>,
    /// Its spawner (depth, allowed types, per-turn count).
    pub spawner: &'a Spawner,
    /// Its model client (children inherit the model by default).
    pub client: &'a ModelClient,
    /// Its permission mode (the ratchet's starting point).
    pub mode: PermissionMode,
    /// Its tool names (children's tools are filtered from these).
    pub tools: &'a [String],
}

/// One `Agent` call of a batch, after the parent's permission check.
pub struct BatchCall {
    /// 1-based position among the reply's `Agent` calls.
    pub index: usize,
    /// The parsed arguments.
    pub args: AgentArgs,
}

/// Subagent events' payloads.
#[derive(Debug, Clone, Serialize)]
pub struct ChildTag {
    /// 1-based position in the batch.
    pub index: usize,
    /// Batch size.
    pub total: usize,
    /// Definition name.
    pub agent_type: String,
    /// Child agent id.
    pub agent_id: String,
}

/// A child ready to run.
struct Prepared {
    index: usize,
    tag: ChildTag,
    agent: Agent,
    prompt: String,
    verification: bool,
    ctx: ToolContext,
    description: String,
    name: Option<String>,
    background: bool,
    task_id: Option<String>,
    task_cancel: Option<CancellationToken>,
    setup: AgentSetup,
    spawner: Option<(u32, Option<Vec<String>>)>,
    resumable: bool,
}

/// A foreground child the batch is waiting for.
struct ForegroundChild {
    slot: usize,
    rx: tokio::sync::oneshot::Receiver<Result<ChildReport, BatchFailure>>,
    detached: Arc<std::sync::atomic::AtomicBool>,
    cancel: CancellationToken,
    task_id: Option<String>,
    tag: ChildTag,
}

/// The log of a child could not be written: the batch and the turn stop.
#[derive(Debug)]
pub struct BatchFailure(pub String);

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
    ) -> Self {
        SubagentRuntime {
            settings,
            sources,
            client,
            model_settings,
            policy,
            gate,
            events,
            agents_dir,
            base_ctx,
            running: Arc::new(AtomicUsize::new(0)),
            background_now: tokio::sync::Notify::new(),
            children: std::sync::Mutex::new(Vec::new()),
            earlier_loaded: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The definitions as they are on disk now.
    pub fn catalog(&self) -> Result<DefinitionCatalog, String> {
        DefinitionCatalog::load(&self.sources)
    }

    /// The roster reminder for an agent that has the `Agent` tool.
    pub fn roster(&self, allowed: Option<&[String]>) -> Option<String> {
        let catalog = self.catalog().ok()?;
        let roster: Vec<(String, String)> = catalog
            .roster()
            .into_iter()
            .filter(|(name, _)| allowed.is_none_or(|a| a.iter().any(|t| t == name)))
            .collect();
        Some(roster_reminder(&roster))
    }

    /// Model id for an alias or id; `inherit` (or nothing) is the parent's.
    fn resolve_model(&self, wanted: Option<&str>, parent: &ModelClient) -> ModelClient {
        match wanted {
            None | Some("inherit") | Some("") => parent.clone(),
            Some(name) => {
                let id = self
                    .model_settings
                    .resolve_model(parent.config().provider, name);
                if id == parent.config().model {
                    parent.clone()
                } else {
                    parent.with_model(&id)
                }
            }
        }
    }

    /// Runs a batch. `total` is the number of `Agent` calls in the reply;
    /// results come back in the order of `calls`.
    pub async fn run_batch(
        self: &Arc<Self>,
        parent: &Parent<'_>,
        calls: Vec<BatchCall>,
        total: usize,
        cancel: &CancellationToken,
    ) -> Result<Vec<ToolOutput>, BatchFailure> {
        let n = calls.len();
        let mut outputs: Vec<Option<ToolOutput>> = vec![None; n];

        // Resolve every call before anything runs.
        let catalog = match self.catalog() {
            Ok(c) => c,
            Err(e) => {
                let out = ToolOutput::error(format!("cannot load agent definitions: {e}"));
                return Ok(vec![out; n]);
            }
        };
        let mut prepared: Vec<(usize, Prepared)> = Vec::new();
        for (slot, call) in calls.into_iter().enumerate() {
            match self.prepare(parent, &catalog, call, total) {
                Ok(p) => prepared.push((slot, p)),
                Err(out) => outputs[slot] = Some(out),
            }
        }

        // The session's running cap: past it a spawn fails and says not to retry.
        let free = self
            .settings
            .max_running
            .saturating_sub(self.running.load(Ordering::SeqCst));
        if prepared.len() > free {
            for (slot, _) in prepared.drain(free..) {
                outputs[slot] = Some(ToolOutput::error(format!(
                    "concurrent subagent limit reached: {} subagents are already running in this session; do not retry this now — wait for running subagents to finish",
                    self.settings.max_running
                )));
            }
        }
        self.running.fetch_add(prepared.len(), Ordering::SeqCst);
        let mut slots: Vec<RunningSlot> = prepared
            .iter()
            .map(|_| RunningSlot(self.running.clone()))
            .collect();

        // Every child's log (and task row) exists before any child runs.
        for (_, p) in &mut prepared {
            if let Err(e) = self.open_child_log(p) {
                return Err(BatchFailure(e));
            }
            self.open_task(parent, p);
        }
        parent
            .spawner
            .started_this_turn
            .fetch_add(prepared.len(), Ordering::SeqCst);

        // Background children go their own way now; the parent gets their ids.
        let (background, foreground): (Vec<_>, Vec<_>) =
            prepared.into_iter().partition(|(_, p)| p.background);
        for (slot, p) in background {
            let slot_guard = slots.pop();
            outputs[slot] = Some(self.launch_background(p, slot_guard));
        }

        let pool = Arc::new(Semaphore::new(self.settings.max_concurrent.clamp(1, 32)));
        let batch_cancel = cancel.child_token();
        // Each foreground child runs as its own task so that it can be moved to
        // the background mid-run (after `auto_background_after` or on request)
        // without a restart: it keeps its progress and reports by notice.
        let mut waiting: Vec<ForegroundChild> = Vec::new();
        let mut slots = slots.into_iter();
        for (slot, p) in foreground {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let detached = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let child_cancel = p
                .task_cancel
                .clone()
                .unwrap_or_else(|| batch_cancel.child_token());
            waiting.push(ForegroundChild {
                slot,
                rx,
                detached: detached.clone(),
                cancel: child_cancel.clone(),
                task_id: p.task_id.clone(),
                tag: p.tag.clone(),
            });
            let rt = self.clone();
            let pool = pool.clone();
            let running_slot = slots.next();
            tokio::spawn(async move {
                let _running_slot = running_slot;
                let permit = tokio::select! {
                    p = pool.acquire_owned() => p.ok(),
                    _ = child_cancel.cancelled() => None,
                };
                let task = p.task_id.clone();
                let result = match permit {
                    Some(_permit) => {
                        let run = std::panic::AssertUnwindSafe(rt.run_child(p, &child_cancel));
                        match futures::FutureExt::catch_unwind(run).await {
                            Ok(r) => r,
                            Err(_) => Err(BatchFailure("the subagent panicked".into())),
                        }
                    }
                    None => Ok(rt.cancelled_before_start(p)),
                };
                let attached = !detached.load(Ordering::SeqCst);
                match (&task, &result) {
                    (Some(task), Ok(r)) => {
                        let text = if attached {
                            r.final_text.clone()
                        } else {
                            render_batch(std::slice::from_ref(r))
                                .into_iter()
                                .next()
                                .unwrap_or_default()
                        };
                        rt.close_task(task, r, &text, !attached);
                    }
                    (Some(task), Err(BatchFailure(e))) if !attached => {
                        if let Some(work) = &rt.base_ctx.background {
                            work.finish(task, TaskStatus::Failed, e, Some(e), true);
                        }
                    }
                    _ => {}
                }
                if attached {
                    let _ = tx.send(result);
                }
            });
        }

        let mut finished: Vec<(usize, Result<ChildReport, BatchFailure>)> = Vec::new();
        let auto = self.settings.auto_background_after;
        let deadline = tokio::time::Instant::now() + auto;
        while !waiting.is_empty() {
            let next = futures::future::select_all(waiting.iter_mut().map(|c| &mut c.rx));
            tokio::select! {
                (result, k, _) = next => {
                    let child = waiting.swap_remove(k);
                    let result = result.unwrap_or_else(|_| Err(BatchFailure("the subagent ended without a report".into())));
                    // A child whose log broke stops its siblings too.
                    if result.is_err() {
                        for c in &waiting {
                            c.cancel.cancel();
                        }
                    }
                    finished.push((child.slot, result));
                }
                _ = cancel.cancelled() => {
                    for c in &waiting {
                        c.cancel.cancel();
                    }
                    // Their reports still arrive (as cancelled) through the loop.
                    let grace = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
                    while !waiting.is_empty() {
                        let next = futures::future::select_all(waiting.iter_mut().map(|c| &mut c.rx));
                        match tokio::time::timeout_at(grace, next).await {
                            Ok((result, k, _)) => {
                                let child = waiting.swap_remove(k);
                                finished.push((child.slot, result.unwrap_or_else(|_| Err(BatchFailure("the subagent ended without a report".into())))));
                            }
                            Err(_) => break,
                        }
                    }
                    break;
                }
                _ = tokio::time::sleep_until(deadline), if self.base_ctx.background.is_some() => {
                    self.detach(&mut waiting, &mut outputs, "it ran longer than the auto-background limit");
                }
                _ = self.background_now.notified(), if self.base_ctx.background.is_some() => {
                    self.detach(&mut waiting, &mut outputs, "the user moved it to the background");
                }
            }
        }
        drop(slots);
        if finished.is_empty() {
            return Ok(outputs
                .into_iter()
                .map(|o| o.unwrap_or_else(|| ToolOutput::error("not run")))
                .collect());
        }

        let mut reports: Vec<(usize, ChildReport)> = Vec::new();
        let mut failure = None;
        for (slot, r) in finished {
            match r {
                Ok(report) => reports.push((slot, report)),
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
        if let Some(f) = failure {
            return Err(f);
        }
        reports.sort_by_key(|(_, r)| r.index);
        let only: Vec<ChildReport> = reports.iter().map(|(_, r)| r.clone()).collect();
        let texts = render_batch(&only);
        for ((slot, report), text) in reports.iter().zip(texts) {
            let out = if report.status == ChildStatus::Completed {
                ToolOutput::ok(text)
            } else {
                ToolOutput::error(text)
            };
            outputs[*slot] = Some(out);
        }
        Ok(outputs
            .into_iter()
            .map(|o| o.unwrap_or_else(|| ToolOutput::error("not run")))
            .collect())
    }

    /// Resolves one call into a ready child, or the error the model sees.
    fn prepare(
        self: &Arc<Self>,
        parent: &Parent<'_>,
        catalog: &DefinitionCatalog,
        call: BatchCall,
        total: usize,
    ) -> Result<Prepared, ToolOutput> {
        let spawner = parent.spawner;
        let args = call.args;
        if args.prompt.trim().is_empty() {
            return Err(ToolOutput::invalid_arguments("prompt is empty"));
        }
        let wanted = args
            .subagent_type
            .clone()
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| self.settings.default_type.clone());
        if wanted == "fork" {
            return self.prepare_fork(parent, &args, call.index, total);
        }
        let background_requested = args.run_in_background == Some(true);
        if let Some(iso) = &args.isolation {
            return Err(ToolOutput::error(format!(
                "isolation \"{iso}\" is not available yet; call Agent without isolation"
            )));
        }
        let Some(def) = catalog.get(&wanted).cloned() else {
            return Err(ToolOutput::error(format!(
                "unknown subagent_type '{wanted}'; nothing was started. Known types: {}",
                catalog.names().join(", ")
            )));
        };
        if let Some(allowed) = &spawner.allowed_types
            && !allowed.iter().any(|t| t == &def.name)
        {
            return Err(ToolOutput::error(format!(
                "this agent may only start these agent types: {}",
                allowed.join(", ")
            )));
        }

        // Tools (DESIGN 7.5) and nesting (7.6).
        let child_depth = spawner.depth + 1;
        let agent_allowed = child_depth < self.settings.max_depth.clamp(1, 3);
        let filtered = resolve_tools(&FilterInput {
            available: parent.tools,
            agent_allowed,
            builtin_definition: def.source == DefinitionSource::Builtin,
            custom_deny: &self.settings.custom_deny,
            background: background_requested || def.background,
            tools: def.tools.as_deref(),
            disallowed: &def.disallowed_tools,
        })
        .map_err(|e| ToolOutput::error(format!("{} was not started: {e}", def.name)))?;
        let mut registry = ToolRegistry::builtin();
        registry.retain(|t| filtered.tools.iter().any(|n| n == t.name()));
        let has_agent = filtered.tools.iter().any(|t| t == "Agent");
        if has_agent {
            registry.insert(Arc::new(AgentTool));
        }

        // Permission mode: the ratchet.
        let requested = def
            .permission_mode
            .as_deref()
            .and_then(|m| m.parse::<PermissionMode>().ok());
        let mode = child_mode(parent.mode, requested, def.source);
        if let Some(note) = &mode.note {
            self.events.emit(Event::Warning {
                message: format!("{}: {note}", def.name),
            });
        }
        let mut policy = (*self.policy).clone();
        policy.mode = mode.mode;

        let client = self.resolve_model(
            args.model.as_deref().or(def.model.as_deref()),
            parent.client,
        );
        let agent_id = new_agent_id();
        let tag = ChildTag {
            index: call.index,
            total,
            agent_type: def.name.clone(),
            agent_id: agent_id.clone(),
        };
        let background = background_requested || def.background;
        if background && self.base_ctx.background.is_none() {
            return Err(ToolOutput::error(
                "background subagents are not available in this session; call Agent without run_in_background",
            ));
        }
        let mut ctx = self.base_ctx.clone();
        ctx.agent_id = agent_id.clone();
        ctx.file_state = Arc::new(Default::default());
        ctx.todos = Arc::new(Default::default());
        if def.read_only {
            ctx.sandbox = ctx
                .sandbox
                .as_ref()
                .map(|s| Arc::new(SandboxPolicy::clone(s).read_only()));
        }
        let limits = TurnLimits {
            max_requests: def.max_turns.unwrap_or(self.settings.default_max_turns),
            max_tool_calls: self.settings.max_tool_calls_per_child,
        };
        let spawner_for_child = has_agent.then(|| Spawner {
            runtime: self.clone(),
            depth: child_depth,
            allowed_types: filtered.agent_types.clone(),
            started_this_turn: AtomicUsize::new(0),
        });
        let prompt = args.prompt.clone();
        let spawner_info = spawner_for_child
            .as_ref()
            .map(|s| (s.depth, s.allowed_types.clone()));
        let setup = AgentSetup {
            id: agent_id,
            label: Some(format!(
                "Subagent: {}/{} {}: \"{}\"",
                call.index,
                total,
                def.name,
                first_chars(&args.prompt, 60)
            )),
            client,
            tools: registry,
            ctx: ctx.clone(),
            system: child_system_prompt(&def, &ctx.cwd),
            limits,
            events: self.events.for_child(tag.clone()),
            policy: Arc::new(policy),
            gate: self.gate.clone(),
            log: None,
        };
        let agent = Agent::new(setup.clone()).with_spawner(spawner_for_child);
        self.events.emit(Event::SubagentStarted {
            index: tag.index,
            total,
            agent_id: tag.agent_id.clone(),
            agent_type: def.name.clone(),
            description: args.description.clone(),
            model: agent.model().to_string(),
            mode: mode.mode,
        });
        Ok(Prepared {
            index: call.index,
            tag,
            agent,
            prompt,
            verification: def.name == "Verification",
            ctx,
            description: args.description.clone(),
            name: args.name.clone(),
            background,
            task_id: None,
            task_cancel: None,
            setup,
            spawner: spawner_info,
            // Explore and Plan are one-shot: their answer is the whole point.
            resumable: !matches!(def.name.as_str(), "Explore" | "Plan"),
        })
    }

    fn open_child_log(&self, p: &mut Prepared) -> Result<(), String> {
        let Some(dir) = &self.agents_dir else {
            return Ok(());
        };
        crate::config::ensure_private_dir(dir).map_err(|e| e.to_string())?;
        let log = SessionLog::create(&dir.join(format!("{}.jsonl", p.tag.agent_id)))
            .map_err(|e| format!("subagent {} log: {e}", p.tag.agent_id))?;
        log.append(RecordBody::SessionStart {
            session_id: p.tag.agent_id.clone(),
            cwd: p.ctx.cwd.display().to_string(),
            provider: self.client.config().provider.to_string(),
            model: p.agent.model().to_string(),
        })
        .map_err(|e| format!("subagent {} log: {e}", p.tag.agent_id))?;
        log.append_messages(p.agent.conversation())
            .map_err(|e| format!("subagent {} log: {e}", p.tag.agent_id))?;
        p.agent.set_log(Arc::new(log));
        Ok(())
    }

    /// Files the child in the task table (foreground children too, so every
    /// child has an id and a log there).
    fn open_task(&self, parent: &Parent<'_>, p: &mut Prepared) {
        let Some(work) = &self.base_ctx.background else {
            return;
        };
        let spec = crate::background::TaskSpec {
            owner: parent.agent_id,
            kind: TaskKind::Subagent,
            description: &p.description,
            agent_type: Some(&p.tag.agent_type),
            name: p.name.as_deref(),
            background: p.background,
        };
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let mut output_path = None;
        if let Ok((row, cancel)) = work.start(spec, Some(tx)) {
            p.agent.set_inbox(rx);
            p.task_id = Some(row.id);
            p.task_cancel = Some(cancel);
            output_path = Some(row.output_path);
        }
        let record = ChildRecord {
            agent_id: p.tag.agent_id.clone(),
            owner: parent.agent_id.to_string(),
            name: p.name.clone(),
            agent_type: p.tag.agent_type.clone(),
            setup: p.setup.clone(),
            spawner: p.spawner.clone(),
            task_id: p.task_id.clone(),
            resumable: p.resumable,
        };
        if let Some(path) = &output_path {
            self.save_child(path, &record);
        }
        if let Ok(mut children) = self.children.lock() {
            children.push(record);
        }
    }

    /// Records a child's end in the task table; background ones are announced.
    fn close_task(&self, task_id: &str, r: &ChildReport, report: &str, announce: bool) {
        let Some(work) = &self.base_ctx.background else {
            return;
        };
        let status = match r.status {
            ChildStatus::Completed => TaskStatus::Succeeded,
            ChildStatus::Failed => TaskStatus::Failed,
            ChildStatus::Cancelled => TaskStatus::Cancelled,
        };
        let _ = work
            .table()
            .progress(task_id, u64::from(r.tool_calls), r.tokens);
        let _ = work.table().append_output(task_id, report);
        work.finish(task_id, status, report, r.error.as_deref(), announce);
    }

    /// Moves every child still running to the background: the batch stops
    /// waiting and their results become task ids; they report by notice.
    fn detach(
        &self,
        waiting: &mut Vec<ForegroundChild>,
        outputs: &mut [Option<ToolOutput>],
        why: &str,
    ) {
        for child in waiting.drain(..) {
            child.detached.store(true, Ordering::SeqCst);
            let id = child.task_id.unwrap_or_default();
            self.events.emit(Event::SubagentBackgrounded {
                index: child.tag.index,
                total: child.tag.total,
                agent_id: child.tag.agent_id.clone(),
                task_id: id.clone(),
            });
            outputs[child.slot] = Some(ToolOutput::ok(format!(
                "launched in background: task {id} · {} · agent {} ({why}; it keeps its progress). You will get a <task-notification> with its report when it ends; don't wait or poll for it.",
                child.tag.agent_type, child.tag.agent_id
            )));
        }
    }

    /// Starts a background child; the parent gets its task id at once.
    fn launch_background(self: &Arc<Self>, p: Prepared, slot: Option<RunningSlot>) -> ToolOutput {
        let (Some(task_id), Some(cancel)) = (p.task_id.clone(), p.task_cancel.clone()) else {
            return ToolOutput::error(
                "cannot file a background task for this subagent; nothing was started",
            );
        };
        let text = format!(
            "launched in background: task {task_id} · {} · agent {}. You will get a <task-notification> with its report when it ends; don't wait or poll for it.",
            p.tag.agent_type, p.tag.agent_id
        );
        let rt = self.clone();
        tokio::spawn(async move {
            let _slot = slot;
            // A panicking child ends as failed; it never takes the parent down.
            let run = std::panic::AssertUnwindSafe(rt.run_child(p, &cancel));
            let result = futures::FutureExt::catch_unwind(run)
                .await
                .unwrap_or_else(|_| Err(BatchFailure("the subagent panicked".into())));
            let report = match result {
                Ok(r) => r,
                Err(BatchFailure(e)) => {
                    if let Some(work) = &rt.base_ctx.background {
                        work.finish(&task_id, TaskStatus::Failed, &e, Some(&e), true);
                    }
                    return;
                }
            };
            let text = render_batch(std::slice::from_ref(&report))
                .into_iter()
                .next()
                .unwrap_or_default();
            rt.close_task(&task_id, &report, &text, true);
        });
        ToolOutput::ok(text)
    }

    fn cancelled_before_start(&self, p: Prepared) -> ChildReport {
        let report = ChildReport {
            index: p.index,
            total: p.tag.total,
            status: ChildStatus::Cancelled,
            agent_type: p.tag.agent_type.clone(),
            agent_id: p.tag.agent_id.clone(),
            requests: 0,
            tool_calls: 0,
            tokens: 0,
            duration: Duration::ZERO,
            final_text: String::new(),
            error: Some("cancelled before it started".into()),
            changed_files: Vec::new(),
            verdict: None,
            worktree: None,
        };
        self.emit_ended(&p.tag, &report, Usage::default());
        report
    }

    fn emit_ended(&self, tag: &ChildTag, r: &ChildReport, usage: Usage) {
        self.events.emit(Event::SubagentEnded {
            index: tag.index,
            total: tag.total,
            agent_id: tag.agent_id.clone(),
            agent_type: tag.agent_type.clone(),
            status: r.status,
            requests: r.requests,
            tool_calls: r.tool_calls,
            usage,
            duration_ms: r.duration.as_millis() as u64,
            error: r.error.clone(),
        });
    }

    /// Runs one child to completion and turns its outcome into a report.
    ///
    /// Boxed: a child may itself run batches, and naming the future's type
    /// here is what lets that recursion be spawned on other threads.
    fn run_child<'a>(
        &'a self,
        p: Prepared,
        cancel: &'a CancellationToken,
    ) -> futures::future::BoxFuture<'a, Result<ChildReport, BatchFailure>> {
        Box::pin(self.run_child_inner(p, cancel))
    }

    async fn run_child_inner(
        &self,
        mut p: Prepared,
        cancel: &CancellationToken,
    ) -> Result<ChildReport, BatchFailure> {
        let started = Instant::now();
        let outcome = p
            .agent
            .run_turn(p.prompt.clone(), cancel.child_token())
            .await;
        if let Some(e) = &outcome.log_error {
            return Err(BatchFailure(format!(
                "subagent {} could not write its log: {e}",
                p.tag.agent_id
            )));
        }
        let (status, final_text, error) = match outcome.status {
            TurnStatus::Completed => (ChildStatus::Completed, outcome.final_text, None),
            TurnStatus::Interrupted => (
                ChildStatus::Cancelled,
                outcome.final_text,
                Some("cancelled".to_string()),
            ),
            TurnStatus::LimitReached => (
                ChildStatus::Failed,
                outcome.final_text,
                outcome.error.map(|e| format!("failed: {e}")),
            ),
            TurnStatus::Failed => match (&outcome.model_error, outcome.final_text.is_empty()) {
                (Some(e), true) => (
                    ChildStatus::Failed,
                    String::new(),
                    Some(format!("failed: terminated early due to an API error: {e}")),
                ),
                (Some(e), false) => (
                    ChildStatus::Failed,
                    format!(
                        "{}\n\n[cut off: the model API failed before the subagent finished: {e}]",
                        outcome.final_text
                    ),
                    Some(format!("failed: cut off by an API error: {e}")),
                ),
                (None, _) => (
                    ChildStatus::Failed,
                    outcome.final_text,
                    outcome.error.map(|e| format!("failed: {e}")),
                ),
            },
        };
        let cwd = p.ctx.cwd.clone();
        let changed_files = p
            .ctx
            .file_state
            .written()
            .into_iter()
            .map(|f| {
                f.strip_prefix(&cwd)
                    .map(|r| r.display().to_string())
                    .unwrap_or_else(|_| f.display().to_string())
            })
            .collect();
        let verdict = p.verification.then(|| parse_verdict(&final_text));
        let usage = p.agent.usage();
        let report = ChildReport {
            index: p.index,
            total: p.tag.total,
            status,
            agent_type: p.tag.agent_type.clone(),
            agent_id: p.tag.agent_id.clone(),
            requests: outcome.requests,
            tool_calls: outcome.tool_calls,
            tokens: usage.total(),
            duration: started.elapsed(),
            final_text,
            error,
            changed_files,
            verdict,
            worktree: None,
        };
        self.emit_ended(&p.tag, &report, usage);
        // Clean-up, whichever way it ended: its background shells stop, and
        // dropping the child drops its caches and closes its log.
        if let Some(work) = &self.base_ctx.background {
            work.stop_owned_by(&p.tag.agent_id);
        }
        drop(p);
        Ok(report)
    }
}

/// A child's system prompt: its definition body, then environment facts, then
/// (unless the definition omits them) the project's instructions.
pub fn child_system_prompt(def: &AgentDefinition, cwd: &std::path::Path) -> String {
    let mut s = def.prompt.trim().to_string();
    s.push_str("\n\n");
    s.push_str(&environment_facts(cwd));
    if def.include_project_instructions
        && let Some(instr) = project_instructions(cwd)
    {
        s.push_str("\n\n# Project instructions\n\n");
        s.push_str(&instr);
    }
    s
}
