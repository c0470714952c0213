//! Everything a session needs, built once per process from the merged
//! settings and what the front end decided ([`SessionOverrides`]): the model
//! client, limits, permission policy, sandbox, MCP servers, hooks, skills,
//! plugins and agent definitions. Precedence: override → project config →
//! user config → default; permissions from a project file can only narrow
//! what the user allowed. A front end turns its flags into overrides, calls
//! [`SessionBuilder::from_settings`], then opens sessions with
//! [`SessionBuilder::open_session`].

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::overrides::{BuildError, MainShape, SessionOverrides};
use super::sources::{
    catalog_sources, dirs_home, load_plugins, mcp_log_dir, mcp_paths, mcp_timeouts,
    subagent_settings,
};
use super::{
    AgentParts, Lifetime, NoticeTiming, Session, SessionHandle, SessionSetup, web_tools::WebTools,
};
use crate::agent::{
    Agent, AgentSetup, EventSink, ProjectContext, TurnLimits, build_styled_system_prompt,
    build_system_prompt, read_project_instructions,
};
use crate::config::Settings;
use crate::context::ContextPolicy;
use crate::hooks::{AgentHooks, HookSet, SessionHooks};
use crate::mcp::{McpConfig, McpHub, McpToolFilter};
use crate::model::{ClientConfig, Message, ModelClient, Provider, SpendCap};
use crate::output_styles::{OutputStyle, OutputStyles, StyleDirs};
use crate::permissions::rules::{RuleKind, RuleSet, parse_rule};
use crate::permissions::{ApprovalGate, PermissionMode, PermissionPolicy};
use crate::plugins::PluginSet;
use crate::protocol::MAIN_AGENT;
use crate::sandbox::{SandboxPolicy, SandboxSupport, probe};
use crate::session::{SessionLog, sessions_dir};
use crate::skills::{SkillSet, SkillTool};
use crate::subagents::catalog::{CatalogSources, DefinitionCatalog};
use crate::subagents::definition::IssueLevel;
use crate::subagents::runtime::{Spawner, SubagentRuntime, SubagentSettings};
use crate::subagents::{ChildCall, ChildSpec, ParentView};
use crate::tasks::TaskTable;
use crate::tools::{AskUserQuestionTool, DEFAULT_OUTPUT_CAP, ToolContext};

/// Tries per request for a transient failure (429/5xx, a broken or stalled
/// stream), first try included: five retries, like Codex's `stream_max_retries`.
pub const MAX_ATTEMPTS: u32 = 6;
/// Seconds of silence from the model server before a try is abandoned (as Codex's `stream_idle_timeout`).
const DEFAULT_STREAM_IDLE_TIMEOUT_S: u64 = 300;
/// Seconds one model request may take, every try and wait included: a dead
/// server fails a headless run in minutes, not tries × idle timeout.
const DEFAULT_REQUEST_DEADLINE_S: u64 = 600;
/// Seconds a loopback server may take before its first byte (prompt
/// processing of a small model on two CPU cores takes minutes).
const LOOPBACK_FIRST_BYTE_TIMEOUT_S: u64 = 900;
/// Seconds one request to a loopback server may take, every try included.
const LOOPBACK_REQUEST_DEADLINE_S: u64 = 1800;
/// Output tokens per request when config says nothing.
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Everything a front end needs to start agents.
pub struct SessionBuilder {
    /// The project directory.
    pub cwd: PathBuf,
    /// The data directory.
    pub home: PathBuf,
    /// The shared model client.
    pub client: ModelClient,
    /// Per-turn limits.
    pub limits: TurnLimits,
    /// Tool output cap.
    pub output_cap: usize,
    /// Most bytes a background task's output file keeps.
    pub task_output_limit: u64,
    /// Session permission policy.
    pub policy: Arc<PermissionPolicy>,
    /// How Bash commands are sandboxed (none where Landlock is missing).
    pub sandbox: Option<Arc<SandboxPolicy>>,
    /// Warnings to show once.
    pub warnings: Vec<String>,
    /// Where agent definitions come from.
    pub sources: CatalogSources,
    /// `[subagents]` settings.
    pub subagents: SubagentSettings,
    /// `[teams]` settings (with the switch and `--teams` applied).
    pub teams: crate::teams::TeamSettings,
    /// Merged config (for model aliases).
    pub settings: Settings,
    /// The main session as the definition it runs as (`--agent`).
    pub main_spec: Option<ChildSpec>,
    /// The main model's window and prices, and when to compact.
    pub context: ContextPolicy,
    /// The settings files' hooks, and what their inputs share.
    pub hooks: Arc<SessionHooks>,
    /// `--agent`: the definition's name (the main agent's `agent_type` in hook inputs).
    pub main_type: Option<String>,
    /// `--agent`: the definition's `initialPrompt`, the first user turn of a new session.
    pub initial_prompt: Option<String>,
    /// The configured MCP servers, shared by every session of the process
    /// (started with the first one).
    pub mcp: Arc<McpHub>,
    /// `--agent`: which MCP tools its `tools` and `disallowedTools` let through.
    pub mcp_keep: Option<McpToolFilter>,
    /// Whether a session has started the MCP servers yet.
    mcp_started: AtomicBool,
    /// The context window a local server said it serves the model with
    /// (asked once, by the first session).
    served_window: tokio::sync::OnceCell<Option<u64>>,
    /// The agent types the catalog held at start-up (print mode's `system/init`).
    pub agent_types: Vec<String>,
    /// The enabled plugins.
    pub plugins: Arc<PluginSet>,
    /// The skills found for this folder.
    pub skills: Arc<SkillSet>,
    /// `WebSearch` and `WebFetch` as the configuration sets them up.
    pub web: WebTools,
    /// What the run's flags change about the main agent.
    pub shape: MainShape,
    /// The editor serving file reads and writes (`cadre acp`), for every agent.
    pub editor_files: Option<Arc<dyn crate::tools::EditorFiles>>,
    /// The editor whose terminals run commands (`cadre acp`), for every agent.
    pub editor_terminal: Option<Arc<dyn crate::tools::EditorTerminal>>,
    /// Every output style found (for `/config`'s picker).
    pub output_styles: Arc<OutputStyles>,
    /// The output style the main session uses (none: `Default`).
    pub output_style: Option<OutputStyle>,
}

/// The context policy of the session's model: the built-in tables under the
/// configuration's `[models.<provider>.<id>]` entries and `[context]` settings.
fn context_policy(settings: &Settings, client: &ModelClient) -> ContextPolicy {
    let config = client.config();
    let mut table = settings.model_table();
    if !client.is_provider_api() {
        // A server other than the provider's own (a local one, a proxy)
        // bills nothing cadre knows: only configured prices hold there.
        table = table.without_builtin_prices();
    }
    let mut policy = ContextPolicy::new(Arc::new(table), config.provider, &config.model);
    policy.auto_compact_percent = settings.auto_compact_percent();
    policy
}

impl SessionBuilder {
    /// Builds everything a session in `overrides.cwd` needs from the merged
    /// `settings` (loaded for that folder, trusted as `overrides.trusted`
    /// says) and what the front end decided. Asks nothing and prints nothing:
    /// what the user should hear is in [`SessionBuilder::warnings`].
    pub fn from_settings(
        mut settings: Settings,
        overrides: SessionOverrides,
    ) -> Result<SessionBuilder, BuildError> {
        let SessionOverrides {
            cwd,
            home,
            trusted,
            mut warnings,
            provider: chosen_provider,
            base_url: chosen_base_url,
            model: chosen_model,
            keys,
            permission_mode: chosen_mode,
            allow,
            ask,
            deny,
            add_dirs,
            agent,
            agents_json,
            plugin_dirs,
            mcp_config: mcp_files,
            strict_mcp_config,
            shape,
            max_turns,
            max_budget_usd,
            fallback_models,
            teams: teams_forced,
        } = overrides;
        warnings.extend(settings.warnings.iter().cloned());
        warnings.extend(read_project_instructions(&cwd).1);
        // A copy: `settings` learns the endpoint below, while this is still read.
        let file = &settings.file.clone();

        // A project file may not pick the provider, and so the key, for a server
        // the user chose (their base URL may serve the other provider, and would
        // then receive a key that is not theirs); with the provider's own
        // endpoint, or a loopback one of the project's, it may.
        let user_chose_server = chosen_base_url.is_some() || file.base_url.is_some();
        let file_provider = if settings.project_provider_unbound
            && chosen_provider.is_none()
            && user_chose_server
            && file.provider != settings.user_provider
        {
            warnings.push(format!(
                "{}: provider ignored: a project file may only choose the provider together with a loopback base_url of its own (set the provider in your user config, CADRE_PROVIDER or --provider)",
                cwd.join(".cadre").join("config.toml").display()
            ));
            settings.user_provider.clone()
        } else {
            file.provider.clone()
        };
        let provider: Provider = match (chosen_provider, file_provider) {
            (Some(p), _) => p,
            (None, Some(p)) => p.parse().map_err(BuildError::Usage)?,
            // With no choice made, follow whichever key is present.
            (None, None)
                if keys.get("ANTHROPIC_API_KEY").is_none()
                    && keys.get("OPENAI_API_KEY").is_some() =>
            {
                Provider::OpenAI
            }
            (None, None) => Provider::Anthropic,
        };
        let base_url = chosen_base_url
            .or_else(|| file.base_url.clone())
            .unwrap_or_else(|| provider.default_base_url().to_string());
        // Checked by the same parser the client uses (schemes are case-insensitive).
        if let Err(e) = crate::model::parse_base_url(&base_url) {
            return Err(BuildError::Usage(format!("bad base URL: {e}")));
        }
        // Managed settings win over the command line and the environment too.
        let model_name = match (&settings.managed_model, chosen_model) {
            (Some((managed, path)), asked) => {
                if let Some(asked) = asked.filter(|a| a != managed) {
                    warnings.push(format!(
                        "model {asked} ignored: {} sets the model to {managed}",
                        path.display()
                    ));
                }
                managed.clone()
            }
            (None, Some(asked)) => asked,
            (None, None) => file
                .model
                .clone()
                .unwrap_or_else(|| provider.default_model().to_string()),
        };
        // OpenAI's built-in aliases and every built-in price hold only at the
        // provider's own API, not at a local server or a proxy.
        settings.custom_endpoint = !crate::model::is_provider_api(provider, &base_url);
        let model = settings.resolve_model(provider, &model_name);
        let api_key = keys.get(provider.key_env());

        // A local server on a slow machine processes a long prompt for
        // minutes before it sends a byte: loopback gets long waits by default.
        let loopback = crate::model::is_loopback_url(&base_url);
        // A configured idle timeout covers the first byte too, as it always did.
        let stream_idle_timeout_s = file
            .limits
            .stream_idle_timeout_s
            .unwrap_or(DEFAULT_STREAM_IDLE_TIMEOUT_S);
        let first_byte_timeout_s = match file.limits.stream_idle_timeout_s {
            None if loopback => LOOPBACK_FIRST_BYTE_TIMEOUT_S,
            _ => stream_idle_timeout_s,
        };
        let request_deadline_s = file.limits.request_deadline_s.unwrap_or(if loopback {
            LOOPBACK_REQUEST_DEADLINE_S
        } else {
            DEFAULT_REQUEST_DEADLINE_S
        });
        let client = ModelClient::new(ClientConfig {
            provider,
            base_url,
            api_key,
            model,
            max_tokens: file.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            max_attempts: MAX_ATTEMPTS,
            stream_idle_timeout: Duration::from_secs(stream_idle_timeout_s),
            request_deadline: Duration::from_secs(request_deadline_s),
            first_byte_timeout: Duration::from_secs(first_byte_timeout_s),
            models: Arc::new(settings.model_wire(provider)),
        })?;
        // Every agent of the run spends against one cap, and falls back alike.
        let client = client
            .with_spend_cap(max_budget_usd.map(|usd| Arc::new(SpendCap::new(usd))))
            .with_fallbacks(fallback_models);
        let defaults = TurnLimits::default();
        let limits = TurnLimits {
            max_requests: max_turns.unwrap_or(
                file.limits
                    .max_requests_per_turn
                    .unwrap_or(defaults.max_requests),
            ),
            max_tool_calls: file
                .limits
                .max_tool_calls_per_turn
                .unwrap_or(defaults.max_tool_calls),
        };
        let output_cap = file.tools.output_cap_bytes.unwrap_or(DEFAULT_OUTPUT_CAP);

        let mut mode = permission_mode(chosen_mode, &settings, &mut warnings)?;
        let mut subagents = subagent_settings(&settings);
        subagents.project_trusted = trusted;
        let teams = super::sources::team_settings(&settings, teams_forced);
        let plugins = Arc::new(load_plugins(&home, &cwd, &settings, trusted, &plugin_dirs));
        warnings.extend(plugins.warnings.iter().cloned());
        let sources = catalog_sources(agents_json, &subagents, &cwd, &home, &plugins);
        let catalog = DefinitionCatalog::load(&sources).map_err(BuildError::Usage)?;
        let mut web = WebTools::from_settings(&settings, client.config(), &keys, &mut warnings);
        // Skipped or odd definition files are announced at start-up (files
        // without a name are documentation and stay silent).
        for issue in catalog.issues() {
            if issue.level != IssueLevel::Info {
                warnings.push(format!("agent definition {issue}"));
            }
        }
        // Folders beside the project: settings files' `additionalDirectories`, then `--add-dir`.
        let mut additional: Vec<PathBuf> = settings
            .additional_dirs(dirs_home().as_deref(), &cwd, &mut warnings)
            .into_iter()
            .map(|(dir, _)| dir)
            .collect();
        for dir in &add_dirs {
            let dir = cwd.join(dir);
            match dir.canonicalize() {
                Ok(real) if real.is_dir() => {
                    if !additional.contains(&real) {
                        additional.push(real);
                    }
                }
                _ => {
                    return Err(BuildError::Usage(format!(
                        "--add-dir {}: not an existing folder",
                        dir.display()
                    )));
                }
            }
        }
        let support = probe();
        let sandbox = match support {
            SandboxSupport::Unavailable => None,
            _ => Some(Arc::new({
                let mut s = SandboxPolicy::new(
                    cwd.clone(),
                    home.clone(),
                    file.sandbox.network.unwrap_or(false),
                );
                s.additional_dirs = additional.clone();
                // A session in a cadre worktree (`--worktree`) commits on its branch.
                s.git_writable = crate::worktrees::git_writable_at(&cwd);
                // Enabled plugins cadre installed live in the data dir; their
                // `bin/` (on the PATH) and what it reads must be reachable.
                s.readable_in_data_dir = plugins.plugins.iter().map(|p| p.root.clone()).collect();
                s
            })),
        };
        // `--agent`: the main session is built from the definition by the same
        // builder as a child, from the session's own tools.
        let mut initial_prompt = None;
        let mut mcp_keep: Option<McpToolFilter> = None;
        let mut main_spec = match &agent {
            None => None,
            Some(name) => {
                let def = catalog.get(name).cloned().ok_or_else(|| {
                    BuildError::Usage(format!(
                        "no agent definition named '{name}'; known: {}",
                        catalog.names().join(", ")
                    ))
                })?;
                let tools = web.session_tools();
                let mut spec = ChildSpec::resolve(
                    &def,
                    &ChildCall {
                        as_main: true,
                        ..ChildCall::default()
                    },
                    &ParentView {
                        tools: &tools,
                        mode,
                        depth: 0,
                        provider,
                        sandbox: sandbox.as_ref(),
                        project: &ProjectContext::read_now(&cwd),
                        settings: &subagents,
                        models: &settings,
                    },
                )
                .map_err(|e| BuildError::Usage(format!("--agent {}: {e}", def.name)))?;
                // MCP tools are not known yet: its lists decide them as servers get ready.
                let (tools_list, disallowed) = (def.tools.clone(), def.disallowed_tools.clone());
                mcp_keep = Some(Arc::new(move |tool: &str| {
                    crate::subagents::filter::lists_grant(tools_list.as_deref(), &disallowed, tool)
                }));
                // MCP servers are not connected yet, so their entries are not unresolved.
                spec.unresolved
                    .retain(|e| !crate::mcp::is_mcp_tool(e.trim()));
                warnings.extend(spec.warnings(name));
                initial_prompt = def
                    .initial_prompt
                    .as_deref()
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(str::to_string);
                // The definition's mode applies through the same ratchet, unless a flag set one.
                if chosen_mode.is_none() {
                    match &settings.bypass_disabled_by {
                        Some(by) if spec.mode.mode == PermissionMode::BypassPermissions => {
                            warnings.push(format!(
                                "--agent {name}: permission mode bypassPermissions ignored: {} disables it",
                                by.display()
                            ));
                        }
                        _ => mode = spec.mode.mode,
                    }
                }
                Some(spec)
            }
        };
        let rules = permission_rules(&allow, &ask, &deny, &settings)?;
        let client = match main_spec.as_ref().and_then(|s| s.model.as_deref()) {
            Some(id) => client.with_model(id),
            None => client,
        };
        if support == SandboxSupport::Unavailable {
            warnings.push(
                "this kernel has no Landlock: Bash commands cannot be sandboxed and will be asked about"
                    .into(),
            );
        }
        let mut policy = PermissionPolicy::new(mode, rules, &cwd, &home, sandbox.is_some());
        policy.bypass_disabled = settings.bypass_disabled_by.is_some();
        policy.additional_dirs = additional;
        web.apply_policy(&policy, &cwd, &mut warnings);
        if web.search.is_none()
            && let Some(spec) = &mut main_spec
        {
            spec.tools.retain(|t| t.name() != "WebSearch");
        }
        warnings.extend(web.missing_search_warnings(&catalog, provider));
        // `--agent` with `tools: Bash(git:*)`: the session (and its children) keeps to it.
        if let Some(spec) = &main_spec {
            spec.restrict(&mut policy)
                .map_err(|e| BuildError::Usage(format!("--agent: {e}")))?;
        }
        let policy = Arc::new(policy);
        let context = context_policy(&settings, &client);
        let (mut hook_set, hook_warnings) = HookSet::from_settings(&settings);
        warnings.extend(hook_warnings);
        let (plugin_hooks, hook_warnings) = HookSet::from_plugins(&plugins, &settings);
        hook_set.extend(plugin_hooks);
        warnings.extend(hook_warnings);
        let hooks = Arc::new(SessionHooks::new(
            hook_set,
            cwd.clone(),
            settings
                .env
                .iter()
                .map(|(k, (v, _))| (k.clone(), v.clone()))
                .collect(),
            trusted,
        ));
        let mut skills = SkillSet::load(&cwd, &home, dirs_home().as_deref(), &plugins);
        // A skill's `model` (an alias or id) runs on this session's provider.
        let provider = client.config().provider;
        skills.resolve_models(|name| settings.resolve_model(provider, name));
        warnings.extend(skills.hold_back_untrusted(trusted));
        let skills = Arc::new(skills);
        warnings.extend(skills.warnings.iter().cloned());
        let mut mcp_config = McpConfig::load(&mcp_paths(
            &home,
            &cwd,
            trusted,
            &mcp_files,
            strict_mcp_config,
            &keys,
        ));
        if !strict_mcp_config {
            mcp_config.add_plugin_servers(&plugins, &cwd);
        }
        warnings.extend(mcp_config.warnings.iter().cloned());
        warnings.extend(mcp_config.trust_warning());
        let mcp = Arc::new(McpHub::new(
            &mcp_config,
            &cwd,
            &mcp_log_dir(&home),
            mcp_timeouts(&mut warnings),
        ));
        if let Some(bytes) = file.limits.mcp_log_max_bytes {
            mcp.set_log_cap(bytes);
        }
        let output_styles = OutputStyles::load(
            &StyleDirs {
                home_dir: dirs_home(),
                data_dir: home.clone(),
                cwd: cwd.clone(),
            },
            &plugins,
        );
        warnings.extend(output_styles.warnings.iter().cloned());
        let output_style = output_styles
            .choose(
                settings
                    .output_style
                    .as_ref()
                    .map(|(name, _)| name.as_str()),
                &mut warnings,
            )
            .cloned();
        let task_output_limit = file
            .limits
            .task_output_max_bytes
            .unwrap_or(crate::tasks::DEFAULT_OUTPUT_LIMIT);
        Ok(SessionBuilder {
            agent_types: catalog.names(),
            web,
            plugins,
            skills,
            mcp,
            mcp_keep,
            mcp_started: AtomicBool::new(false),
            served_window: tokio::sync::OnceCell::new(),
            hooks,
            main_type: agent,
            initial_prompt,
            context,
            cwd,
            home,
            client,
            limits,
            output_cap,
            task_output_limit,
            policy,
            sandbox,
            warnings,
            sources,
            subagents,
            teams,
            settings,
            main_spec,
            shape,
            editor_files: None,
            editor_terminal: None,
            output_styles: Arc::new(output_styles),
            output_style,
        })
    }

    /// The output style the main agent's prompt gets: none under `--agent`
    /// or `--system-prompt`, which replace cadre's own prompt.
    pub fn applied_style(&self) -> Option<&OutputStyle> {
        self.output_style
            .as_ref()
            .filter(|_| self.main_spec.is_none() && self.shape.system.is_none())
    }

    /// Opens the session `session_id` over its log: the task table, the
    /// background work and the main agent, continuing from `messages`.
    /// `warnings` are reported as the session's first events.
    #[allow(clippy::too_many_arguments)]
    pub async fn open_session(
        &self,
        session_id: &str,
        log: Arc<SessionLog>,
        messages: Vec<Message>,
        warnings: Vec<String>,
        events: EventSink,
        answers_questions: bool,
        lifetime: Lifetime,
    ) -> Result<(Session, SessionHandle), BuildError> {
        // A local server is asked its window while the task table opens:
        // the window decides the prompt, so it is known before the first request.
        let (tasks, _) = tokio::join!(
            TaskTable::open_for_session(&self.home),
            self.served_window()
        );
        let tasks = tasks?;
        tasks.set_output_limit(self.task_output_limit);
        // The servers start with the first session, reported in its events.
        if !self.mcp_started.swap(true, Ordering::SeqCst) {
            self.mcp.start_all(&events);
        }
        // Only an interactive session asks the user questions of its own.
        let asks_user = answers_questions && matches!(lifetime, Lifetime::UntilShutdown);
        Session::open(
            SessionSetup {
                session_id: session_id.to_string(),
                provider: self.client.config().provider,
                model: self.client.config().model.clone(),
                cwd: self.cwd.clone(),
                warnings,
                events,
                tasks: Some(tasks),
                messages,
                answers_questions,
                lifetime,
                notices: NoticeTiming::default(),
                team: Some(self.teams.clone()),
            },
            |parts: AgentParts| self.main_agent(parts, Some(log), Some(session_id), asks_user),
        )
        .await
    }

    /// The window the local server serves the model with, asked once when
    /// no configuration gives the model's window.
    async fn served_window(&self) -> Option<u64> {
        *self
            .served_window
            .get_or_init(|| async {
                let config = self.client.config();
                if self
                    .context
                    .models
                    .window_configured(config.provider, &config.model)
                {
                    return None;
                }
                self.client.served_context_window().await
            })
            .await
    }

    /// The session's context policy, with the window a local server said it
    /// serves the model with.
    pub fn session_context(&self) -> ContextPolicy {
        let mut context = self.context.clone();
        if let Some(Some(window)) = self.served_window.get() {
            let config = self.client.config();
            let mut table = (*context.models).clone();
            table.set_served_window(config.provider, &config.model, *window);
            context.models = Arc::new(table);
            context.profile = context.models.profile(config.provider, &config.model);
        }
        context
    }

    /// The top-level agent from the session's `parts` (its events, approval
    /// source, background work and team); its children's logs go beside
    /// `session_id`'s log. With `asks_user` it may ask the user questions
    /// (`AskUserQuestion`).
    pub fn main_agent(
        &self,
        parts: AgentParts,
        log: Option<Arc<SessionLog>>,
        session_id: Option<&str>,
        asks_user: bool,
    ) -> Result<Agent, BuildError> {
        let AgentParts {
            events,
            approvals,
            background,
            team,
        } = parts;
        let mut ctx = ToolContext::new(self.cwd.clone());
        ctx.output_cap = self.output_cap;
        ctx.sandbox = self.sandbox.clone();
        ctx.editor_files = self.editor_files.clone();
        ctx.editor_terminal = self.editor_terminal.clone();
        ctx.background = background.map(|w| w as Arc<dyn crate::tools::BackgroundTasks>);
        ctx.policy = Some(self.policy.clone());
        // A logged session keeps code checkpoints beside its log.
        if let (Some(id), Some(_)) = (session_id, &log) {
            match crate::checkpoints::CheckpointStore::open(crate::checkpoints::checkpoints_dir(
                &self.home, id,
            )) {
                Ok(store) => ctx.checkpoints = Some(Arc::new(store)),
                Err(e) => events.emit(crate::protocol::Event::Warning {
                    message: format!("{e}; file changes are not checkpointed in this session"),
                }),
            }
        }
        let mut command_env: Vec<(String, String)> = self
            .settings
            .env
            .iter()
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect();
        // The enabled plugins' `bin/` folders go on the Bash tool's PATH (after the rest).
        let base = self
            .settings
            .env
            .get("PATH")
            .map(|(v, _)| v.clone())
            .or_else(|| std::env::var("PATH").ok());
        if let Some(path) = self.plugins.command_path(base.as_deref()) {
            command_env.retain(|(k, _)| k != "PATH");
            command_env.push(("PATH".into(), path));
        }
        ctx.command_env = Arc::new(command_env);
        let gate = Arc::new(ApprovalGate::new(approvals, events.clone()));
        let mut tools = self.web.session_tools();
        let mut allowed_types = None;
        let style = self.applied_style();
        let mut system = match style {
            Some(style) => build_styled_system_prompt(&self.cwd, style.keep_coding_instructions),
            None => build_system_prompt(&self.cwd),
        };
        if let Some(spec) = &self.main_spec {
            tools = spec.tools.clone();
            allowed_types = spec.agent_types.clone();
            ctx.sandbox = spec.sandbox.clone();
            system = spec.system.clone();
        }
        let context = self.session_context();
        // A small window keeps cadre's own words short (a replaced or
        // styled prompt is the user's, and stays as it is).
        if context.profile.context_window < crate::tools::SMALL_WINDOW {
            system = system.replacen(
                crate::agent::CODING_INSTRUCTIONS,
                crate::agent::COMPACT_CODING_INSTRUCTIONS,
                1,
            );
        }
        if let Some(replaced) = &self.shape.system {
            system = replaced.clone();
        }
        if let Some(appended) = &self.shape.append {
            system.push_str("\n\n");
            system.push_str(appended);
        }
        tools.retain(|t| self.shape.keeps(t.name()));
        if self.skills.for_model().next().is_some() {
            tools.insert(Arc::new(SkillTool::new(
                self.skills.clone(),
                session_id.unwrap_or_default(),
            )));
        }
        // The lead of a team: the board, the roster, and how teams work.
        if team.is_some() {
            crate::tools::board::add_lead_tools(&mut tools);
            system.push_str("\n\n");
            system.push_str(crate::teams::LEAD_PROMPT);
        }
        // Questions to the user: only where someone answers; elsewhere the
        // model is told to decide itself.
        if asks_user {
            tools.insert(Arc::new(AskUserQuestionTool::new(gate.clone())));
        } else {
            system.push_str("\n\n");
            system.push_str(crate::tools::ask_user::NO_ONE_TO_ASK);
        }
        let runtime = Arc::new(
            SubagentRuntime::new(
                self.subagents.clone(),
                self.sources.clone(),
                self.client.clone(),
                self.settings.clone(),
                self.policy.clone(),
                gate.clone(),
                events.clone(),
                session_id.map(|id| sessions_dir(&self.home).join(format!("{id}.agents"))),
                ctx.clone(),
                context.clone(),
            )
            .with_hooks(Some(self.hooks.clone()))
            .with_mcp(Some(self.mcp.clone()))
            .with_skills(self.skills.clone())
            .with_team(team.clone()),
        );
        // The seat is the lead's alone: children start from the context
        // the runtime holds, which has none.
        ctx.team = team.map(|t| t.seat(crate::teams::LEAD));
        Ok(Agent::new(AgentSetup {
            id: MAIN_AGENT.into(),
            label: None,
            client: self.client.clone(),
            tools,
            ctx,
            system,
            limits: self.limits,
            gate,
            events,
            policy: self.policy.clone(),
            log,
            context,
            hooks: Some(AgentHooks::new(
                self.hooks.clone(),
                None,
                None,
                self.main_type.clone(),
            )),
            effort: self.main_spec.as_ref().and_then(|s| s.effort.clone()),
        })
        .with_delegation(Some(Arc::new(Spawner::main(runtime, allowed_types))))
        .with_mcp(Some(self.mcp.clone()), self.mcp_keep.clone())
        .with_commands(self.skills.clone(), session_id.unwrap_or_default())
        .with_answer_schema(self.shape.answer_schema.clone())
        .with_output_style(style.map(|s| s.prompt.as_str())))
    }
}

/// The chosen mode, else the mode the settings files choose (see
/// [`Settings::file_mode`]). Managed settings win over the choice unless it
/// is at least as strict; a file that disables `bypassPermissions` refuses
/// it from the choice.
fn permission_mode(
    chosen: Option<PermissionMode>,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> Result<PermissionMode, BuildError> {
    let from_files = settings.file_mode(warnings).map_err(BuildError::Usage)?;
    let Some(flag) = chosen else {
        return Ok(from_files.map_or(PermissionMode::Default, |c| c.mode));
    };
    if flag == PermissionMode::BypassPermissions
        && let Some(by) = &settings.bypass_disabled_by
    {
        return Err(BuildError::Usage(format!(
            "--permission-mode bypassPermissions is disabled by {}",
            by.display()
        )));
    }
    match from_files {
        Some(managed) if managed.managed && flag.strictness() < managed.mode.strictness() => {
            warnings.push(format!(
                "--permission-mode {flag} ignored: {} sets {}, and a flag may only narrow it",
                managed.source, managed.mode
            ));
            Ok(managed.mode)
        }
        _ => Ok(flag),
    }
}

/// Rules from the overrides and every settings file (project allow rules were dropped on load).
fn permission_rules(
    allow: &[String],
    ask: &[String],
    deny: &[String],
    settings: &Settings,
) -> Result<RuleSet, BuildError> {
    let home = dirs_home();
    let mut set = RuleSet::new();
    let chosen = [
        (RuleKind::Allow, allow),
        (RuleKind::Ask, ask),
        (RuleKind::Deny, deny),
    ];
    let chosen_rules = chosen
        .into_iter()
        .flat_map(|(kind, texts)| texts.iter().map(move |t| (kind, t.clone())));
    let file_rules = settings.rules().into_iter().map(|r| (r.kind, r.text));
    for (kind, text) in chosen_rules.chain(file_rules) {
        let rule = parse_rule(kind, &text, home.as_deref())
            .map_err(|e| BuildError::Usage(e.to_string()))?;
        set.add(rule);
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::super::overrides::ApiKeys;
    use super::*;
    use crate::config::SettingsPaths;
    use std::path::Path;

    #[test]
    fn keys_stay_out_of_debug_output() {
        let keys = ApiKeys::new()
            .with("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
            .with("OPENAI_API_KEY", "  ");
        assert_eq!(
            keys.get("ANTHROPIC_API_KEY").as_deref(),
            Some("sk-ant-test-0123456789")
        );
        assert_eq!(keys.get("OPENAI_API_KEY"), None, "a blank key is no key");
        let mut overrides = SessionOverrides::new("/p".into(), "/h".into());
        overrides.keys = keys;
        let shown = format!("{overrides:?}");
        assert!(shown.contains("ANTHROPIC_API_KEY"), "{shown}");
        assert!(!shown.contains("sk-ant-test"), "{shown}");
    }

    /// Settings for an untrusted project in `project`, with data in `home`.
    fn settings(home: &Path, project: &Path) -> Settings {
        let loaded = Settings::load_with(&SettingsPaths {
            data_dir: home.to_path_buf(),
            home_dir: None,
            project: project.to_path_buf(),
            managed_dir: None,
            trusted: false,
            extra: None,
            sources: None,
        });
        match loaded {
            Ok(s) => s,
            Err(e) => panic!("settings: {e}"),
        }
    }

    #[test]
    fn bad_requests_are_usage_errors() {
        // Building a model client needs the provider the binary installs.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (home, project) = (tempfile::tempdir(), tempfile::tempdir());
        let (Ok(home), Ok(project)) = (home, project) else {
            panic!("no temporary folders");
        };
        let build = |edit: &dyn Fn(&mut SessionOverrides)| {
            let mut o = SessionOverrides::new(project.path().into(), home.path().into());
            o.provider = Some(Provider::Anthropic);
            // A server on loopback needs no key.
            o.base_url = Some("http://127.0.0.1:9".into());
            edit(&mut o);
            SessionBuilder::from_settings(settings(home.path(), project.path()), o)
        };
        let usage = |r: Result<SessionBuilder, BuildError>| match r {
            Err(BuildError::Usage(m)) => m,
            Err(other) => panic!("not a usage error: {other}"),
            Ok(_) => panic!("built"),
        };
        let m = usage(build(&|o| o.add_dirs = vec!["no-such-folder".into()]));
        assert!(m.contains("not an existing folder"), "{m}");
        let m = usage(build(&|o| o.base_url = Some("ftp://example.com".into())));
        assert!(m.starts_with("bad base URL"), "{m}");
        let m = usage(build(&|o| o.agent = Some("no-such-agent".into())));
        assert!(m.contains("no agent definition named"), "{m}");
        // A missing key is no mistake of usage: the front end tells them apart.
        let no_key = build(&|o| o.base_url = Some("https://api.anthropic.com".into()));
        assert!(matches!(no_key, Err(BuildError::Model(_))), "a missing key");
        let built = build(&|o| o.model = Some("some-model".into()));
        let Ok(built) = built else {
            panic!("not built");
        };
        assert_eq!(built.client.config().model, "some-model");
        assert_eq!(built.cwd, project.path());
    }
}
