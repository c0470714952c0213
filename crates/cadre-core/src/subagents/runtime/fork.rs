//! Forks: a child that starts from its parent's last request, byte for byte,
//! so the provider's prompt cache hits, and that never forks in turn.

use std::sync::Arc;

use super::isolation::ChildWorktree;
use super::preparation::check_isolation;
use super::{ChildTag, Parent, Prepared, SubagentRuntime, first_chars, new_agent_id};
use crate::agent::{Agent, AgentSetup, FORK_TAG, QuerySource, TurnLimits};
use crate::subagents::AgentArgs;
use crate::tools::ToolOutput;

impl SubagentRuntime {
    /// A fork: the parent's last request, byte for byte (system prompt, tool
    /// list, model, history), then the fork directive as a new user message.
    /// It always runs in the background, and it never forks.
    pub(super) async fn prepare_fork(
        self: &Arc<Self>,
        parent: &Parent<'_>,
        args: &AgentArgs,
        index: usize,
        total: usize,
    ) -> Result<Prepared, ToolOutput> {
        let caller = parent.caller;
        let Some(req) = caller.last_request.as_deref() else {
            return Err(ToolOutput::error("there is no conversation to fork yet"));
        };
        if self.base_ctx.background.is_none() {
            return Err(ToolOutput::error(
                "forks run in the background, which is not available in this session",
            ));
        }
        check_isolation(args.isolation.as_deref())?;
        let agent_id = new_agent_id();
        let worktree = match args.isolation {
            Some(_) => Some(ChildWorktree::add(&caller.place.cwd, &agent_id, "the fork").await?),
            None => None,
        };
        let tag = ChildTag {
            index,
            total,
            agent_type: "fork".into(),
            agent_id: agent_id.clone().into(),
        };
        let events = caller.events.for_child(tag.clone());
        let mut ctx = self.base_ctx.clone();
        // A copy of its parent, working where the parent works.
        ctx.cwd = caller.place.cwd.clone();
        ctx.sandbox = caller.place.sandbox.clone();
        ctx.agent_id = agent_id.clone();
        // A fork runs in the background, past the turn its checkpoint covers.
        ctx.checkpoints = None;
        ctx.file_state = Arc::new(Default::default());
        ctx.grants = Arc::default();
        ctx.todos = Arc::new(Default::default());
        let mut policy = (*self.policy).clone();
        policy.mode = caller.mode;
        policy.only = caller.tool_rules.clone();
        policy.project_dir = caller.place.project_dir.clone();
        let mut directive = fork_directive(&args.prompt);
        if let Some(wt) = &worktree {
            // Its history names the parent's paths: the note maps them.
            let mut sandbox = ctx.sandbox.clone();
            wt.confine(&mut ctx, &mut policy, &mut sandbox);
            ctx.sandbox = sandbox;
            directive.push_str("\n\n");
            directive.push_str(&wt.prompt_section());
        }
        let mut messages = req.messages.clone();
        let inherited = messages.len();
        messages.push(crate::model::Message::user_text(directive));
        let setup = AgentSetup {
            id: agent_id.clone(),
            label: Some(format!(
                "Subagent: {}: \"{}\"",
                crate::protocol::child_place(events.lineage()),
                first_chars(&args.prompt, 60)
            )),
            client: caller.client.clone(),
            tools: caller.tools.clone(),
            ctx: ctx.clone(),
            system: req.system.clone(),
            limits: TurnLimits {
                max_requests: self.settings.default_max_turns,
                max_tool_calls: self.settings.max_tool_calls_per_child,
            },
            events,
            policy: Arc::new(policy),
            gate: self.gate.clone(),
            log: None,
            hooks: self.hooks.clone().map(|h| {
                crate::hooks::AgentHooks::new(h, None, Some(agent_id.clone()), Some("fork".into()))
            }),
            // As the parent's request, so the fork's stays the same bytes.
            effort: req.effort.clone(),
            context: self.context.for_model(
                caller.client.config().provider,
                &caller.client.config().model,
            ),
        };
        let spawner = Some((parent.spawner.depth + 1, None));
        let mut agent = Agent::new(setup.clone())
            .with_source(QuerySource::Fork)
            .with_cache_after(inherited.checked_sub(1))
            .with_delegation(self.delegation_for(&spawner));
        agent.restore(messages);
        Ok(Prepared {
            index,
            tag,
            agent,
            prompt: String::new(),
            verification: false,
            mode: caller.mode,
            ctx,
            description: args.description.clone(),
            name: args.name.clone(),
            background: true,
            task_id: None,
            task_cancel: None,
            setup,
            spawner,
            resumable: true,
            color: None,
            mcp_servers: Default::default(),
            worktree,
            teammate: None,
        })
    }
}

/// The directive that turns a copy of the parent into a forked worker.
pub fn fork_directive(task: &str) -> String {
    format!(
        "{FORK_TAG}
You are a forked worker: a copy of the agent above, started to do one task in the background while it goes on. You are not the main agent.
Rules:
1. Do not fork or start subagents.
2. Do not converse, ask questions or wait for confirmation: nobody will answer.
3. Use your tools directly: read, search, edit, run commands.
4. Stay strictly within the task below.
5. End with a report of at most 500 words that starts with `Scope:` and has the fields `Result:`, `Key files:`, `Files changed:` and `Issues:`.
</fork_boilerplate>

Task: {task}"
    )
}
