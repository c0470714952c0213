//! Preparation: one `Agent` call resolved into a child ready to run (its
//! definition through the child builder), its log opened, its start announced.

use super::isolation::ChildWorktree;
use super::{
    BatchCall, ChildTag, Parent, Prepared, Spawner, SubagentRuntime, first_chars, new_agent_id,
};
use crate::agent::{Agent, AgentSetup, TurnLimits};
use crate::protocol::Event;
use crate::session::{RecordBody, SessionLog};
use crate::subagents::catalog::DefinitionCatalog;
use crate::subagents::spec::{ChildCall, ChildSpec, ParentView};
use crate::tools::{Delegation, ToolOutput};
use std::sync::Arc;

impl SubagentRuntime {
    /// Resolves one call into a ready child, or the error the model sees.
    pub(super) async fn prepare(
        self: &Arc<Self>,
        parent: &Parent<'_>,
        catalog: &DefinitionCatalog,
        project: &crate::agent::ProjectContext,
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
            return self.prepare_fork(parent, &args, call.index, total).await;
        }
        let background_requested = args.run_in_background == Some(true);
        check_isolation(args.isolation.as_deref())?;
        // The lead's named spawn, in a session with a team, is a teammate.
        let team = self.team_for(parent.agent_id, args.name.as_deref());
        if let (Some(team), Some(name)) = (&team, args.name.as_deref()) {
            team.can_join(name).map_err(ToolOutput::error)?;
        }
        let plan_required = team.is_some() && args.plan_mode_required == Some(true);
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

        // A worktree (DESIGN 7.11) is made before anything else is decided
        // from the folder: the child's project facts are the worktree's.
        let agent_id = new_agent_id();
        let place = &parent.caller.place;
        let worktree = match args.isolation.as_deref().or(def.isolation.as_deref()) {
            Some(_) => Some(ChildWorktree::add(&place.cwd, &agent_id, &def.name).await?),
            None => None,
        };
        let worktree_project;
        let project = match worktree.as_ref().and_then(ChildWorktree::worktree) {
            Some(wt) => {
                worktree_project =
                    crate::agent::ProjectContext::read(&wt.counterpart(&place.cwd)).await;
                &worktree_project
            }
            None => project,
        };

        // Tools (DESIGN 7.5), nesting (7.6), mode (the ratchet), model,
        // prompt and sandbox: one builder, shared with `--agent` and
        // `cadre agents show`.
        let caller = parent.caller;
        let (parent_tools, mcp_servers) = self.child_mcp_tools(&def, &caller.tools).await;
        let mut spec = ChildSpec::resolve(
            &def,
            &ChildCall {
                background: background_requested,
                model: args.model.as_deref(),
                // A teammate is a session of its own: the main agent's tools
                // and depth (it may start subagents, background ones too).
                as_main: team.is_some(),
            },
            &ParentView {
                tools: &parent_tools,
                mode: caller.mode,
                depth: spawner.depth,
                provider: caller.client.config().provider,
                sandbox: place.sandbox.as_ref(),
                project,
                settings: &self.settings,
                models: &self.model_settings,
            },
        )
        .map_err(|e| ToolOutput::error(format!("{} was not started: {e}", def.name)))?;
        for warning in spec.warnings(&def.name) {
            self.warn_once(warning);
        }
        // A memory: Read, Write and Edit in its folder only, before the
        // tool rules bind the policy.
        let memory = match &def.memory {
            Some(value) => self.child_memory(&def, value)?,
            None => None,
        };
        if let Some((dir, _)) = &memory {
            spec.grant_memory(&parent_tools, dir);
        }
        let mut policy = (*self.policy).clone();
        policy.mode = spec.mode.mode;
        if plan_required {
            policy.mode = crate::permissions::PermissionMode::Plan;
        }
        // The parent's tool rules hold for its children too.
        policy.only = caller.tool_rules.clone();
        spec.restrict(&mut policy)
            .map_err(|e| ToolOutput::error(format!("{} was not started: {e}", def.name)))?;
        let mut tools = spec.tools;
        let mut system = spec.system;
        if let (Some(team), Some(name)) = (&team, args.name.as_deref()) {
            system = super::teammate::teammate_system(&def, project, team, name, plan_required);
            super::teammate::add_team_tools(&mut tools, &caller.tools);
        }
        // `skills`: each one's full text, in the order listed.
        for name in &def.skills {
            match self.skills.get(name) {
                Some(skill) => {
                    system.push_str(&format!("\n\n# Skill: {}\n\n", skill.name));
                    system.push_str(&skill.loaded_text());
                }
                None => self.warn_once(format!(
                    "agent definition {}: `skills` names {name}, which is no skill here",
                    def.name
                )),
            }
        }
        if let Some((dir, section)) = memory {
            system.push_str("\n\n");
            system.push_str(&section);
            policy.memory_dir = Some(dir);
        }
        let mut sandbox = spec.sandbox.clone();
        // It works where its parent works (a worktree child's children too).
        let mut ctx = self.base_ctx.clone();
        ctx.cwd = place.cwd.clone();
        policy.project_dir = place.project_dir.clone();
        if let Some(wt) = &worktree {
            wt.confine(&mut ctx, &mut policy, &mut sandbox);
            system.push_str("\n\n");
            system.push_str(&wt.prompt_section());
        }
        let policy = Arc::new(policy);

        let client = match &spec.model {
            Some(id) if *id != caller.client.config().model => caller.client.with_model(id),
            _ => caller.client.clone(),
        };
        let tag = ChildTag {
            index: call.index,
            total,
            agent_type: def.name.clone(),
            agent_id: agent_id.clone().into(),
        };
        // A nested child's questions say whose child it is.
        let events = caller.events.for_child(tag.clone());
        // A teammate runs as a task of its own, as a background child does.
        let background = spec.background || team.is_some();
        // Checkpoints track the turn's own changes: a background child or a
        // teammate outlives the turn, and a worktree child writes elsewhere.
        if background || worktree.is_some() {
            ctx.checkpoints = None;
        }
        if background && self.base_ctx.background.is_none() {
            return Err(ToolOutput::error(
                "background subagents are not available in this session; call Agent without run_in_background",
            ));
        }
        ctx.agent_id = agent_id.clone();
        ctx.file_state = Arc::new(Default::default());
        ctx.grants = Arc::default();
        if !def.include_project_instructions {
            ctx.file_state.omit_instructions();
        }
        ctx.todos = Arc::new(Default::default());
        ctx.sandbox = sandbox;
        // Only the lead and its teammates sit in the team.
        ctx.team = match (&team, args.name.as_deref()) {
            (Some(team), Some(name)) => Some(team.seat(name)),
            _ => None,
        };
        // Its tools check paths again with its own policy (its memory folder).
        if ctx.policy.is_some() {
            ctx.policy = Some(policy.clone());
        }
        // A teammate is a session of its own: a session's turn limits.
        let limits = match &team {
            Some(_) => TurnLimits {
                max_requests: def.max_turns.unwrap_or(TurnLimits::default().max_requests),
                ..TurnLimits::default()
            },
            None => TurnLimits {
                max_requests: def.max_turns.unwrap_or(self.settings.default_max_turns),
                max_tool_calls: self.settings.max_tool_calls_per_child,
            },
        };
        let spawner_info = crate::subagents::spec::delegates(&tools)
            .then(|| (spec.depth, spec.agent_types.clone()));
        let prompt = args.prompt.clone();
        let hooks = self
            .hooks
            .clone()
            .map(|session| self.child_hooks(session, &def, &agent_id));
        let setup = AgentSetup {
            id: agent_id,
            // A teammate's questions reach the lead's screen under its name.
            label: Some(match (&team, args.name.as_deref()) {
                (Some(_), Some(name)) => format!("Teammate {name} ({})", def.name),
                _ => format!(
                    "Subagent: {}: \"{}\"",
                    crate::protocol::child_place(events.lineage()),
                    first_chars(&args.prompt, 60)
                ),
            }),
            client: client.clone(),
            tools,
            ctx: ctx.clone(),
            system,
            limits,
            events,
            policy,
            gate: self.gate.clone(),
            log: None,
            context: self
                .context
                .for_model(client.config().provider, &client.config().model),
            hooks,
            effort: spec.effort,
        };
        let agent = Agent::new(setup.clone()).with_delegation(self.delegation_for(&spawner_info));
        Ok(Prepared {
            index: call.index,
            tag,
            agent,
            prompt,
            verification: def.reports_verdict,
            mode: spec.mode.mode,
            ctx,
            description: args.description.clone(),
            name: args.name.clone(),
            background,
            task_id: None,
            task_cancel: None,
            setup,
            spawner: spawner_info,
            resumable: !def.one_shot,
            color: def.color.clone(),
            mcp_servers,
            worktree,
            teammate: team.map(|_| (spec.mode.mode, plan_required)),
        })
    }

    /// A child's memory folder (made if new, resolved) and the prompt
    /// section about it; `None`, with a warning, when it gets none (a name
    /// that is no path segment, a project's `memory: user` in a folder not
    /// trusted); `Err` when the definition's `memory` names no scope or its
    /// folder is refused (a symlink).
    fn child_memory(
        &self,
        def: &crate::subagents::AgentDefinition,
        value: &serde_json::Value,
    ) -> Result<Option<(std::path::PathBuf, String)>, ToolOutput> {
        use crate::subagents::memory::{self, MemoryBases, MemoryScope};
        let not_started =
            |why: String| ToolOutput::error(format!("{} was not started: {why}", def.name));
        let scope = MemoryScope::parse(value).map_err(not_started)?;
        let bases = MemoryBases {
            data_dir: &self.policy.data_dir,
            project: &self.base_ctx.cwd,
            project_trusted: self.settings.project_trusted,
        };
        match memory::place(def, scope, &bases).and_then(|place| memory::open(&place)) {
            Ok(opened) => Ok(Some(opened)),
            Err(e) if e.starts_without() => {
                let file = match &def.path {
                    Some(p) => p.display().to_string(),
                    None => def.source.as_str().to_string(),
                };
                self.warn_once(format!("agent definition {file}: {}: {e}", def.name));
                Ok(None)
            }
            Err(e) => Err(not_started(e.to_string())),
        }
    }

    /// A child's hooks: the session's, plus its definition's own (a project
    /// definition's only in a trusted folder).
    fn child_hooks(
        &self,
        session: Arc<crate::hooks::SessionHooks>,
        def: &crate::subagents::AgentDefinition,
        agent_id: &str,
    ) -> crate::hooks::AgentHooks {
        let own = def.hooks.as_ref().and_then(|value| {
            if def.source == crate::subagents::DefinitionSource::Project
                && !session.project_trusted()
            {
                self.warn_once(format!(
                    "the hooks of the project agent definition {} do not run: this folder is not trusted (answer yes when cadre asks, run `cadre config trust`, or pass --trust)",
                    def.name
                ));
                return None;
            }
            let source = match &def.path {
                Some(p) => format!("agent definition {} ({})", def.name, p.display()),
                None => format!("agent definition {}", def.name),
            };
            match crate::hooks::HookSet::parse(value, &source) {
                Ok((set, warnings)) => {
                    for w in warnings {
                        self.warn_once(w);
                    }
                    Some(set)
                }
                Err(e) => {
                    self.warn_once(format!("{e}; these hooks do not run"));
                    None
                }
            }
        });
        crate::hooks::AgentHooks::new(
            session,
            own,
            Some(agent_id.to_string()),
            Some(def.name.clone()),
        )
    }

    /// A child's place in the runtime from its (depth, allowed types); none
    /// for a child that may neither start nor message children.
    pub(super) fn delegation_for(
        self: &Arc<Self>,
        spawner: &Option<(u32, Option<Vec<String>>)>,
    ) -> Option<Arc<dyn Delegation>> {
        spawner.as_ref().map(|(depth, allowed)| {
            Arc::new(Spawner::child(self.clone(), *depth, allowed.clone())) as Arc<dyn Delegation>
        })
    }

    /// Announces a child whose log (and task row) exists.
    pub(super) fn emit_started(&self, p: &Prepared) {
        self.events.emit(Event::SubagentStarted {
            index: p.tag.index,
            total: p.tag.total,
            agent_id: p.tag.agent_id.clone(),
            agent_type: p.tag.agent_type.clone(),
            description: p.description.clone(),
            model: p.agent.model().to_string(),
            mode: p.mode,
            path: p.setup.events.lineage().to_vec(),
            color: p.color.clone(),
        });
    }

    /// Gives a child its log. The file is made by the log writer while the
    /// child sends its first request (a slow disk's inode allocation would
    /// otherwise hold up every child after it); a file that cannot be made
    /// fails the child's first awaited write, which stops its batch.
    pub(super) fn open_child_log(&self, p: &mut Prepared) -> Result<(), String> {
        let Some(dir) = &self.agents_dir else {
            return Ok(());
        };
        // The folder exists: the batch made it (once for all its children).
        let log = SessionLog::create_on_first_write(&dir.join(format!("{}.jsonl", p.tag.agent_id)));
        let start = RecordBody::SessionStart {
            session_id: p.tag.agent_id.to_string(),
            cwd: p.ctx.cwd.display().to_string(),
            provider: self.client.config().provider.to_string(),
            model: p.agent.model().to_string(),
        };
        // One hand-over to the log writer for the child's whole start.
        log.append_with_messages_unawaited(start, p.agent.conversation())
            .map_err(|e| format!("subagent {} log: {e}", p.tag.agent_id))?;
        p.agent.set_log_being_made(Arc::new(log));
        Ok(())
    }
}

/// `Err` for an `isolation` other than `worktree` (the only one there is).
pub(super) fn check_isolation(isolation: Option<&str>) -> Result<(), ToolOutput> {
    match isolation {
        None | Some("worktree") => Ok(()),
        Some(other) => Err(ToolOutput::invalid_arguments(format!(
            "isolation \"{other}\" is unknown: the only isolation is \"worktree\""
        ))),
    }
}
