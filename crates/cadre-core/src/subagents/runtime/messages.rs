//! `SendMessage`: reaching a child after it was started — through its inbox
//! while it runs, or by resuming it from its log once it has ended.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::isolation::ChildWorktree;
use super::{ChildRecord, ChildTag, Prepared, SubagentRuntime};
use crate::agent::{Agent, AgentSetup, QuerySource};
use crate::session::SessionLog;
use crate::tasks::TaskKind;
use crate::tools::{ToolInput, ToolOutput, ToolRegistry};

impl SubagentRuntime {
    /// `SendMessage(to, message)` from `owner`: to a running child it joins
    /// the child's next request; a finished or stopped one is resumed with its
    /// full history, in the background.
    pub async fn send_message(self: &Arc<Self>, owner: &str, input: &ToolInput) -> ToolOutput {
        let args: crate::subagents::agent_tool::SendMessageArgs =
            match crate::tools::parse_args(input) {
                Ok(a) => a,
                Err(e) => return e,
            };
        let Some(work) = self.base_ctx.background.clone() else {
            return ToolOutput::error("messages to subagents are not available in this session");
        };
        self.load_earlier_children(work.as_ref()).await;
        let (record_index, record) = {
            let Ok(children) = self.children.lock() else {
                return ToolOutput::error("internal error: child registry unavailable");
            };
            let mine: Vec<(usize, &ChildRecord)> = children
                .iter()
                .enumerate()
                .filter(|(_, c)| c.owner == owner)
                .collect();
            if let Some((i, c)) = mine.iter().find(|(_, c)| c.agent_id == args.to) {
                (*i, c.setup.clone())
            } else {
                let named: Vec<&(usize, &ChildRecord)> = mine
                    .iter()
                    .filter(|(_, c)| c.name.as_deref() == Some(args.to.as_str()))
                    .collect();
                match named.as_slice() {
                    [] => {
                        let known: Vec<String> = mine
                            .iter()
                            .map(|(_, c)| match &c.name {
                                Some(n) => format!("{} ({n}, {})", c.agent_id, c.agent_type),
                                None => format!("{} ({})", c.agent_id, c.agent_type),
                            })
                            .collect();
                        return ToolOutput::error(format!(
                            "no subagent '{}' started by this agent; known: {}",
                            args.to,
                            if known.is_empty() {
                                "none".into()
                            } else {
                                known.join(", ")
                            }
                        ));
                    }
                    [(i, c)] => (*i, c.setup.clone()),
                    [.., (_, newest)] => {
                        return ToolOutput::error(format!(
                            "the name '{}' was reused: it now reaches agent {} (the newest); address the agent you mean by its id",
                            args.to, newest.agent_id
                        ));
                    }
                }
            }
        };
        let (agent_id, agent_type, task_id, resumable, spawner, name, verdict, servers) = {
            let Ok(children) = self.children.lock() else {
                return ToolOutput::error("internal error: child registry unavailable");
            };
            let c = &children[record_index];
            (
                c.agent_id.clone(),
                c.agent_type.clone(),
                c.task_id.clone(),
                c.resumable,
                c.spawner.clone(),
                c.name.clone(),
                c.verdict,
                c.servers.clone(),
            )
        };
        // Running: deliver to its inbox.
        if let Some(task) = &task_id
            && work.send_to_running(task, args.message.text())
        {
            return ToolOutput::ok(format!(
                "delivered to running agent {agent_id} ({agent_type}); it sees the message with its next request"
            ));
        }
        if !resumable {
            return ToolOutput::error(format!(
                "agent {agent_id} is a one-shot {agent_type} and cannot be resumed; start a new one with Agent"
            ));
        }
        self.resume(
            &work,
            record_index,
            record,
            owner,
            Resumed {
                agent_id,
                agent_type,
                spawner,
                name,
                verdict,
                servers,
            },
            args.message.text(),
        )
        .await
    }

    /// Resumes a finished child from its log, in the background: it runs
    /// and reports the way a first run in the background does.
    async fn resume(
        self: &Arc<Self>,
        work: &Arc<dyn crate::tools::BackgroundTasks>,
        record_index: usize,
        setup: AgentSetup,
        owner: &str,
        child: Resumed,
        message: String,
    ) -> ToolOutput {
        let Resumed {
            agent_id,
            agent_type,
            spawner,
            name,
            verdict,
            servers,
        } = child;
        let Some(dir) = &self.agents_dir else {
            return ToolOutput::error(
                "this session keeps no subagent logs, so none can be resumed",
            );
        };
        let path = dir.join(format!("{agent_id}.jsonl"));
        let loaded = match crate::session::read_log(&path) {
            Ok(l) => l,
            Err(e) => return ToolOutput::error(format!("cannot resume {agent_id}: {e}")),
        };
        // Nothing readable: resuming would pass a fresh agent off as the old one.
        if loaded.records.is_empty() {
            return ToolOutput::error(format!(
                "cannot resume {agent_id}: its log holds no readable record"
            ));
        }
        // A resumed child runs like any other: it takes a slot of the
        // session's running cap, and past the cap it is not started.
        let Some(slot) = self.reserve_slots(1).pop() else {
            return ToolOutput::error(self.running_cap_reached());
        };
        let rebuilt = crate::session::rebuild(&loaded.records);
        let log = match SessionLog::reopen(&path) {
            Ok(l) => Arc::new(l),
            Err(e) => return ToolOutput::error(format!("cannot resume {agent_id}: {e}")),
        };
        let description = format!("resumed {agent_type} {agent_id}");
        let spec = crate::tasks::TaskSpec {
            owner,
            kind: TaskKind::Subagent,
            description: &description,
            agent_type: Some(&agent_type),
            name: name.as_deref(),
            background: true,
        };
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let (row, cancel) = match work.start(spec, Some(tx)).await {
            Ok(r) => r,
            Err(e) => {
                return ToolOutput::error(format!("cannot file a task for the resumed agent: {e}"));
            }
        };
        if let Ok(mut children) = self.children.lock()
            && let Some(c) = children.get_mut(record_index)
        {
            c.task_id = Some(row.id.clone());
        }
        // The resumed run is a batch of one: its events say 1/1 throughout.
        let tag = ChildTag {
            index: 1,
            total: 1,
            agent_type: agent_type.clone(),
            agent_id: agent_id.clone().into(),
        };
        let mut setup = setup;
        // Under its parents still, when this process started it.
        setup.events = setup.events.retagged(tag.clone());
        // Its query source is not carried over: a resumed fork is still
        // recognised as one by the directive in its history.
        let mut agent = Agent::new(setup.clone())
            .with_source(QuerySource::Subagent)
            .with_delegation(self.delegation_for(&spawner));
        agent.restore(rebuilt.messages);
        agent.set_log(log);
        agent.set_inbox(rx);
        agent.record_progress_in(row.id.clone());
        // Its worktree again: still there, or made anew if it was removed.
        let worktree = match ChildWorktree::resumed_for(&setup.policy.project_dir, &row.output_path)
            .await
        {
            Ok(w) => w,
            Err(e) => {
                return ToolOutput::error(format!("cannot resume {agent_id}: its worktree: {e}"));
            }
        };
        let prepared = Prepared {
            index: 1,
            tag,
            agent,
            prompt: message,
            verification: verdict,
            mode: setup.policy.mode,
            ctx: setup.ctx.clone(),
            description,
            name,
            background: true,
            task_id: Some(row.id.clone()),
            task_cancel: Some(cancel),
            setup,
            spawner,
            resumable: true,
            color: None,
            mcp_servers: super::mcp_servers::DedicatedServers::adopt(servers),
            worktree,
            teammate: None,
        };
        self.emit_started(&prepared);
        let launched = self.launch_background(prepared, Some(slot));
        if launched.is_error {
            return launched;
        }
        ToolOutput::ok(format!(
            "resumed agent {agent_id} ({agent_type}) with its history, in the background as task {}; you will get a <task-notification> when it answers",
            row.id
        ))
    }
}

/// The child a `SendMessage` resumes, as its record knows it.
struct Resumed {
    agent_id: String,
    agent_type: String,
    spawner: Option<(u32, Option<Vec<String>>)>,
    name: Option<String>,
    verdict: bool,
    /// Its own MCP servers, closed again when the resumed run ends.
    servers: Vec<Arc<crate::mcp::McpServer>>,
}

/// What is kept on disk of a child, beside its task's output, so `SendMessage`
/// can reach it after a resume (the conversation itself is its log).
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedChild {
    agent_id: String,
    owner: String,
    name: Option<String>,
    agent_type: String,
    resumable: bool,
    label: Option<String>,
    provider: String,
    model: String,
    tools: Vec<String>,
    system: String,
    max_requests: u32,
    max_tool_calls: u32,
    mode: crate::permissions::PermissionMode,
    read_only: bool,
    spawner: Option<(u32, Option<Vec<String>>)>,
    /// Its report carries a parsed verdict (absent in files of older cadres).
    #[serde(default)]
    verdict: bool,
    /// Its layers of tool rules (`Bash(git:*)`) beyond the session's.
    #[serde(default)]
    tool_rules: Vec<Vec<String>>,
    /// Its definition's reasoning effort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    effort: Option<String>,
    /// A teammate: the mode it works in once its plan is approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    work_mode: Option<crate::permissions::PermissionMode>,
}

/// The file a child's `SavedChild` is kept in, in its task's folder.
pub(super) fn saved_child_path(output_path: &std::path::Path) -> std::path::PathBuf {
    output_path.with_file_name("agent.json")
}

/// A saved child file is small; a bigger one is not ours and is not read.
const SAVED_CHILD_MAX: u64 = 4 * 1024 * 1024;

/// The tools named `names`, as a registry: the session's own tool objects,
/// each fitted to the tools beside it (a child of an earlier process has no
/// parent here to filter from).
fn registry_of(names: &[String]) -> ToolRegistry {
    let kept: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut all = crate::subagents::spec::session_tools();
    // A teammate's tools: the board's `TaskList`, not the task listing.
    if kept.contains(&"TaskCreate") {
        crate::tools::board::add_lead_tools(&mut all);
    }
    let tools = all
        .tools()
        .iter()
        .filter(|t| kept.contains(&t.name()))
        .map(|t| t.among(&kept).unwrap_or_else(|| t.clone()))
        .collect();
    ToolRegistry::from_tools(tools)
}

impl SubagentRuntime {
    /// What it takes to resume `record`'s child in a later process, encoded.
    /// Best effort: without it the child cannot be messaged after a resume.
    pub(super) fn saved_child(&self, record: &ChildRecord) -> Option<Vec<u8>> {
        let setup = &record.setup;
        let saved = SavedChild {
            agent_id: record.agent_id.clone(),
            owner: record.owner.clone(),
            name: record.name.clone(),
            agent_type: record.agent_type.clone(),
            resumable: record.resumable,
            label: setup.label.clone(),
            provider: setup.client.config().provider.to_string(),
            model: setup.client.config().model.clone(),
            tools: setup.tools.names().iter().map(|n| n.to_string()).collect(),
            system: setup.system.clone(),
            max_requests: setup.limits.max_requests,
            max_tool_calls: setup.limits.max_tool_calls,
            mode: setup.policy.mode,
            read_only: setup
                .ctx
                .sandbox
                .as_ref()
                .is_some_and(|s| s.read_only_project),
            spawner: record.spawner.clone(),
            verdict: record.verdict,
            tool_rules: setup
                .policy
                .only
                .iter()
                .skip(self.policy.only.len())
                .map(|layer| layer.iter().map(|r| r.text.clone()).collect())
                .collect(),
            effort: setup.effort.clone(),
            work_mode: record.work_mode,
        };
        serde_json::to_vec(&saved).ok()
    }

    /// After a resume, the children of earlier runs of this session become
    /// known again (once per process), older than any started since.
    pub(super) async fn load_earlier_children(
        self: &Arc<Self>,
        work: &dyn crate::tools::BackgroundTasks,
    ) {
        if self.earlier_loaded.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut rows = work
            .table()
            .list(&crate::tasks::TaskFilter {
                session_id: Some(work.session_id().to_string()),
                ..Default::default()
            })
            .await
            .unwrap_or_default();
        rows.reverse();
        let mut earlier: Vec<ChildRecord> = Vec::new();
        for row in rows.iter().filter(|r| r.kind == TaskKind::Subagent) {
            let path = saved_child_path(&row.output_path);
            let fits = std::fs::symlink_metadata(&path)
                .is_ok_and(|m| m.is_file() && m.len() <= SAVED_CHILD_MAX);
            let Some(saved) = fits
                .then(|| std::fs::read(&path).ok())
                .flatten()
                .and_then(|b| serde_json::from_slice::<SavedChild>(&b).ok())
            else {
                continue;
            };
            if earlier.iter().any(|c| c.agent_id == saved.agent_id) {
                continue;
            }
            earlier.push(self.rebuild_child(saved));
        }
        if let Ok(mut children) = self.children.lock() {
            earlier.retain(|e| !children.iter().any(|c| c.agent_id == e.agent_id));
            children.splice(0..0, earlier);
        }
    }

    /// A child record from what an earlier process saved. Its permission mode
    /// is never wider than this session's now: a resume in a stricter mode
    /// binds the children it reaches too.
    fn rebuild_child(&self, saved: SavedChild) -> ChildRecord {
        let tag = super::ChildTag {
            index: 1,
            total: 1,
            agent_type: saved.agent_type.clone(),
            agent_id: saved.agent_id.clone().into(),
        };
        let client = if saved.provider == self.client.config().provider.to_string()
            && saved.model != self.client.config().model
        {
            self.client.with_model(&saved.model)
        } else {
            self.client.clone()
        };
        let mut ctx = self.base_ctx.clone();
        ctx.agent_id = saved.agent_id.clone();
        ctx.file_state = Arc::new(Default::default());
        ctx.grants = Arc::default();
        ctx.todos = Arc::new(Default::default());
        if saved.read_only {
            ctx.sandbox = ctx
                .sandbox
                .as_ref()
                .map(|s| Arc::new(crate::sandbox::SandboxPolicy::clone(s).read_only()));
        }
        let mut policy = (*self.policy).clone();
        if saved.mode.strictness() > policy.mode.strictness() {
            policy.mode = saved.mode;
        }
        // A rule that no longer parses denies the tool altogether (fail closed).
        for layer in &saved.tool_rules {
            match crate::subagents::spec::tool_rule_layer(layer) {
                Ok(Some(rules)) => policy.only.push(rules),
                Ok(None) => {}
                Err(_) => {
                    for text in layer {
                        let tool = text.split('(').next().unwrap_or(text).trim();
                        if let Ok(rule) = crate::permissions::rules::parse_rule(
                            crate::permissions::rules::RuleKind::Deny,
                            tool,
                            None,
                        ) {
                            policy.rules.add(rule);
                        }
                    }
                }
            }
        }
        let setup = AgentSetup {
            id: saved.agent_id.clone(),
            label: saved.label,
            client: client.clone(),
            tools: registry_of(&saved.tools),
            ctx,
            system: saved.system,
            limits: crate::agent::TurnLimits {
                max_requests: saved.max_requests,
                max_tool_calls: saved.max_tool_calls,
            },
            events: self.events.for_child(tag),
            policy: Arc::new(policy),
            gate: self.gate.clone(),
            log: None,
            effort: saved.effort.clone(),
            hooks: self.hooks.clone().map(|h| {
                crate::hooks::AgentHooks::new(
                    h,
                    None,
                    Some(saved.agent_id.clone()),
                    Some(saved.agent_type.clone()),
                )
            }),
            context: self
                .context
                .for_model(client.config().provider, &client.config().model),
        };
        ChildRecord {
            agent_id: saved.agent_id,
            owner: saved.owner,
            name: saved.name,
            agent_type: saved.agent_type,
            setup,
            spawner: saved.spawner,
            task_id: None,
            resumable: saved.resumable,
            verdict: saved.verdict,
            // A child of an earlier process starts its own servers afresh.
            servers: Vec::new(),
            // Never wider than this session's mode now, as its own mode.
            work_mode: saved.work_mode.map(|m| {
                if m.strictness() > self.policy.mode.strictness() {
                    m
                } else {
                    self.policy.mode
                }
            }),
        }
    }
}
