//! Turns flags, environment and config files into a ready model client,
//! permission policy, approval gate and agent. Precedence: flag → environment →
//! project config → user config → default; permissions from a project file can
//! only narrow what the user allowed.

use cadre_core::context::ContextPolicy;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use cadre_core::agent::{
    Agent, AgentSetup, EventSink, TurnLimits, build_system_prompt, read_project_instructions,
};
use cadre_core::background::BackgroundWork;
use cadre_core::config::{
    DEFAULT_MANAGED_SETTINGS_DIR, Settings, SettingsPaths, TrustState, TrustStore, data_dir,
    ensure_private_dir,
};
use cadre_core::driver::{
    AgentParts, Lifetime, NoticeTiming, Session, SessionHandle, SessionSetup,
};
use cadre_core::hooks::{AgentHooks, HookSet, SessionHooks};
use cadre_core::mcp::{McpConfig, McpHub, McpPaths, McpTimeouts, McpToolFilter};
use cadre_core::model::{ClientConfig, Message, ModelClient, Provider};
use cadre_core::permissions::rules::{RuleKind, RuleSet, parse_rule};
use cadre_core::permissions::{ApprovalGate, ApprovalSource, PermissionMode, PermissionPolicy};
use cadre_core::sandbox::{SandboxPolicy, SandboxSupport, probe};
use cadre_core::session::{SessionLog, sessions_dir};
use cadre_core::skills::{SkillSet, SkillTool};
use cadre_core::subagents::catalog::{CatalogSources, DEFAULT_MANAGED_DIR, DefinitionCatalog};
use cadre_core::subagents::definition::IssueLevel;
use cadre_core::subagents::runtime::{Spawner, SubagentRuntime, SubagentSettings};
use cadre_core::subagents::{ChildCall, ChildSpec, ParentView};

use crate::web_tools::WebTools;
use cadre_core::tasks::TaskTable;
use cadre_core::tools::{AskUserQuestionTool, DEFAULT_OUTPUT_CAP, ToolContext};

use crate::{AgentArgs, ModelArgs, PermissionArgs, UsageError};
use cadre_core::protocol::MAIN_AGENT;

/// Tries per request for a transient failure (429/5xx, a broken or stalled
/// stream), first try included: five retries, like Codex's `stream_max_retries`.
pub const MAX_ATTEMPTS: u32 = 6;
/// Seconds of silence from the model server before a try is abandoned (as Codex's `stream_idle_timeout`).
const DEFAULT_STREAM_IDLE_TIMEOUT_S: u64 = 300;
/// Seconds one model request may take, every try and wait included: a dead
/// server fails a headless run in minutes, not tries × idle timeout.
const DEFAULT_REQUEST_DEADLINE_S: u64 = 600;
/// Output tokens per request when config says nothing.
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Everything a front end needs to start agents.
pub struct Runtime {
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
    mcp_started: std::sync::atomic::AtomicBool,
    /// The agent types the catalog held at start-up (print mode's `system/init`).
    pub agent_types: Vec<String>,
    /// The enabled plugins.
    pub plugins: Arc<cadre_core::plugins::PluginSet>,
    /// The skills found for this folder.
    pub skills: Arc<SkillSet>,
    /// `WebSearch` and `WebFetch` as the configuration sets them up.
    pub web: WebTools,
    /// What the run's flags change about the main agent.
    pub shape: MainShape,
}

/// What Claude Code's run flags change about the main agent.
#[derive(Debug, Default)]
pub struct MainShape {
    /// `--system-prompt[-file]`: replaces the default system prompt.
    pub system: Option<String>,
    /// `--append-system-prompt[-file]`: added after it.
    pub append: Option<String>,
    /// `--json-schema`: the form of the final answer.
    pub answer_schema: Option<Arc<cadre_core::structured::AnswerSchema>>,
    /// `--disallowedTools` bare names: tools taken away.
    pub removed_tools: Vec<String>,
    /// `--tools`: the only built-in tools kept (none when empty).
    pub only_tools: Option<Vec<String>>,
}

impl MainShape {
    fn from_flags(perms: &PermissionArgs, run: &crate::run_flags::RunFlags) -> Result<MainShape> {
        run.validate()?;
        let answer_schema = match run.json_schema()? {
            Some(schema) => Some(Arc::new(
                cadre_core::structured::AnswerSchema::new(schema).map_err(UsageError)?,
            )),
            None => None,
        };
        let only_tools = match perms.tools.as_deref().map(str::trim) {
            None | Some("default") => None,
            Some(list) => Some(crate::run_flags::split_rules(list)),
        };
        Ok(MainShape {
            system: run.system_prompt()?,
            append: run.appended_system_prompt()?,
            answer_schema,
            removed_tools: perms.removed_tools.clone(),
            only_tools,
        })
    }

    /// Whether the main agent keeps the built-in tool `name`.
    fn keeps(&self, name: &str) -> bool {
        let removed = self.removed_tools.iter().any(|r| {
            r == name || r == "*" || cadre_core::tool_names::canonical_tool_name(r) == name
        });
        let listed = self.only_tools.as_ref().is_none_or(|only| {
            only.iter()
                .any(|t| t == name || cadre_core::tool_names::canonical_tool_name(t) == name)
        });
        !removed && listed
    }
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

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Builds the runtime for the current directory.
pub fn prepare(args: &ModelArgs, perms: &PermissionArgs, agent: &AgentArgs) -> Result<Runtime> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    prepare_at(cwd, args, perms, agent)
}

/// Builds the runtime for the project folder `cwd` (an editor's session
/// names its own folder); asks nothing.
pub fn prepare_at(
    cwd: PathBuf,
    args: &ModelArgs,
    perms: &PermissionArgs,
    agent: &AgentArgs,
) -> Result<Runtime> {
    let home = data_dir()?;
    ensure_private_dir(&home)?;
    let mut warnings = Vec::new();
    let trusted = folder_trusted(&home, &cwd, perms, &mut warnings);
    if perms.trust {
        // `--trust` also approves instruction imports from outside the project.
        cadre_core::instructions::approve_outside_imports_for_this_run();
    }
    let shape = MainShape::from_flags(perms, &agent.run)?;
    let mut settings = Settings::load_with(&settings_paths(&home, &cwd, trusted))?;
    warnings.extend(settings.warnings.iter().cloned());
    warnings.extend(read_project_instructions(&cwd).1);
    // A copy: `settings` learns the endpoint below, while this is still read.
    let file = &settings.file.clone();

    // A project file may not pick the provider, and so the key, for a server
    // the user chose (their base URL may serve the other provider, and would
    // then receive a key that is not theirs); with the provider's own
    // endpoint, or a loopback one of the project's, it may.
    let user_chose_server = args.base_url.is_some()
        || env_nonempty("CADRE_BASE_URL").is_some()
        || file.base_url.is_some();
    let file_provider = if settings.project_provider_unbound
        && args.provider.is_none()
        && env_nonempty("CADRE_PROVIDER").is_none()
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
    let provider_name = env_nonempty("CADRE_PROVIDER").or(file_provider);
    let provider: Provider = match (args.provider, provider_name) {
        (Some(p), _) => p,
        (None, Some(p)) => p.parse().map_err(|e: String| UsageError(e))?,
        // With no choice made, follow whichever key is present.
        (None, None)
            if crate::keys::key("ANTHROPIC_API_KEY").is_none()
                && crate::keys::key("OPENAI_API_KEY").is_some() =>
        {
            Provider::OpenAI
        }
        (None, None) => Provider::Anthropic,
    };
    let base_url = args
        .base_url
        .clone()
        .or_else(|| env_nonempty("CADRE_BASE_URL"))
        .or_else(|| file.base_url.clone())
        .unwrap_or_else(|| provider.default_base_url().to_string());
    // Checked by the same parser the client uses (schemes are case-insensitive).
    if let Err(e) = cadre_core::model::parse_base_url(&base_url) {
        bail!(UsageError(format!("bad base URL: {e}")));
    }
    let asked_model = args.model.clone().or_else(|| env_nonempty("CADRE_MODEL"));
    // Managed settings win over the command line and the environment too.
    let model_name = match (&settings.managed_model, asked_model) {
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
    settings.custom_endpoint = !cadre_core::model::is_provider_api(provider, &base_url);
    let model = settings.resolve_model(provider, &model_name);
    let api_key = crate::keys::key(provider.key_env());

    let client = ModelClient::new(ClientConfig {
        provider,
        base_url,
        api_key,
        model,
        max_tokens: file.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        max_attempts: MAX_ATTEMPTS,
        stream_idle_timeout: Duration::from_secs(
            file.limits
                .stream_idle_timeout_s
                .unwrap_or(DEFAULT_STREAM_IDLE_TIMEOUT_S),
        ),
        request_deadline: Duration::from_secs(
            file.limits
                .request_deadline_s
                .unwrap_or(DEFAULT_REQUEST_DEADLINE_S),
        ),
    })?;
    // Every agent of the run spends against one cap, and falls back alike.
    let client = client
        .with_spend_cap(
            agent
                .run
                .max_budget_usd
                .map(|usd| Arc::new(cadre_core::model::SpendCap::new(usd))),
        )
        .with_fallbacks(agent.run.fallback_models());
    let defaults = TurnLimits::default();
    let limits = TurnLimits {
        max_requests: agent.run.max_turns.unwrap_or(
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

    let mut mode = permission_mode(perms, &settings, &mut warnings)?;
    let mut subagents = subagent_settings(&settings);
    subagents.project_trusted = trusted;
    let plugins = Arc::new(load_plugins(&home, &cwd, &settings, trusted, perms));
    warnings.extend(plugins.warnings.iter().cloned());
    let sources = catalog_sources(agent, &subagents, &cwd, &home, &plugins);
    let catalog = DefinitionCatalog::load(&sources).map_err(UsageError)?;
    let mut web = WebTools::from_settings(&settings, client.config(), &mut warnings);
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
    for dir in &perms.add_dir {
        let dir = cwd.join(dir);
        match dir.canonicalize() {
            Ok(real) if real.is_dir() => {
                if !additional.contains(&real) {
                    additional.push(real);
                }
            }
            _ => bail!(UsageError(format!(
                "--add-dir {}: not an existing folder",
                dir.display()
            ))),
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
            s.git_writable = cadre_core::worktrees::git_writable_at(&cwd);
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
    let mut main_spec = match &agent.agent {
        None => None,
        Some(name) => {
            let def = catalog.get(name).cloned().ok_or_else(|| {
                UsageError(format!(
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
                    project: &cadre_core::agent::ProjectContext::read_now(&cwd),
                    settings: &subagents,
                    models: &settings,
                },
            )
            .map_err(|e| UsageError(format!("--agent {}: {e}", def.name)))?;
            // MCP tools are not known yet: its lists decide them as servers get ready.
            let (tools_list, disallowed) = (def.tools.clone(), def.disallowed_tools.clone());
            mcp_keep = Some(Arc::new(move |tool: &str| {
                cadre_core::subagents::filter::lists_grant(tools_list.as_deref(), &disallowed, tool)
            }));
            // MCP servers are not connected yet, so their entries are not unresolved.
            spec.unresolved
                .retain(|e| !cadre_core::mcp::is_mcp_tool(e.trim()));
            warnings.extend(spec.warnings(name));
            initial_prompt = def
                .initial_prompt
                .as_deref()
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_string);
            // The definition's mode applies through the same ratchet, unless a flag set one.
            if perms.permission_mode.is_none() {
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
    let rules = permission_rules(perms, &settings)?;
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
            .map_err(|e| UsageError(format!("--agent: {e}")))?;
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
    let mut mcp_config = McpConfig::load(&mcp_paths(&home, &cwd, trusted, agent));
    if !agent.strict_mcp_config {
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
    let task_output_limit = file
        .limits
        .task_output_max_bytes
        .unwrap_or(cadre_core::tasks::DEFAULT_OUTPUT_LIMIT);
    Ok(Runtime {
        agent_types: catalog.names(),
        web,
        plugins,
        skills,
        mcp,
        mcp_keep,
        mcp_started: std::sync::atomic::AtomicBool::new(false),
        hooks,
        main_type: agent.agent.clone(),
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
        settings,
        main_spec,
        shape,
    })
}

/// The plugins of a session in `cwd` (see `cadre_core::plugins::loader`),
/// with `--plugin-dir` folders for this run.
pub fn load_plugins(
    home: &std::path::Path,
    cwd: &std::path::Path,
    settings: &Settings,
    trusted: bool,
    perms: &PermissionArgs,
) -> cadre_core::plugins::PluginSet {
    let home_dir = dirs_home();
    cadre_core::plugins::PluginSet::load(&cadre_core::plugins::LoadOptions {
        cadre_home: home,
        home_dir: home_dir.as_deref(),
        project: cwd,
        settings,
        trusted,
        plugin_dirs: &perms.plugin_dir,
    })
}

/// Where MCP servers are configured for a session in `cwd`.
pub fn mcp_paths(
    home: &std::path::Path,
    cwd: &std::path::Path,
    trusted: bool,
    agent: &AgentArgs,
) -> McpPaths {
    McpPaths {
        data_dir: home.to_path_buf(),
        project: cwd.to_path_buf(),
        home: dirs_home(),
        trusted,
        flag_files: agent.mcp_config.iter().map(|f| cwd.join(f)).collect(),
        strict: agent.strict_mcp_config,
        taken_vars: cadre_core::secrets::KEY_VARS
            .iter()
            .filter_map(|name| crate::keys::key(name).map(|v| (name.to_string(), v)))
            .collect(),
    }
}

/// Where MCP servers' stderr goes, one log per server (0600, in a 0700 folder).
pub fn mcp_log_dir(home: &std::path::Path) -> PathBuf {
    home.join("mcp-logs")
}

/// Start-up and call timeouts: Claude Code's `MCP_TIMEOUT` and
/// `MCP_TOOL_TIMEOUT` (milliseconds), else 30 s and 60 s.
pub fn mcp_timeouts(warnings: &mut Vec<String>) -> McpTimeouts {
    let mut timeouts = McpTimeouts::default();
    for (var, slot) in [
        ("MCP_TIMEOUT", &mut timeouts.startup),
        ("MCP_TOOL_TIMEOUT", &mut timeouts.call),
    ] {
        let Some(text) = env_nonempty(var) else {
            continue;
        };
        match text.trim().parse::<u64>() {
            Ok(ms) if (1..=86_400_000).contains(&ms) => *slot = Duration::from_millis(ms),
            _ => warnings.push(format!(
                "{var}={text} ignored: give milliseconds from 1 to 86400000"
            )),
        }
    }
    timeouts
}

/// Where definitions are read from. `CADRE_MANAGED_AGENTS_DIR` moves the
/// managed directory (for packaging and tests); it is as trusted as the
/// environment cadre runs in.
pub fn catalog_sources(
    agent: &AgentArgs,
    subagents: &SubagentSettings,
    cwd: &std::path::Path,
    home: &std::path::Path,
    plugins: &cadre_core::plugins::PluginSet,
) -> CatalogSources {
    CatalogSources {
        cwd: cwd.to_path_buf(),
        data_dir: home.to_path_buf(),
        plugin_agents: plugins.agent_paths(),
        home_dir: dirs_home(),
        managed_dir: std::env::var_os("CADRE_MANAGED_AGENTS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_MANAGED_DIR)),
        flag_json: agent.agents.clone(),
        enable_verification: subagents.enable_verification,
    }
}

/// Where the settings files are. `CADRE_MANAGED_SETTINGS_DIR` moves the
/// managed directory (as `CADRE_MANAGED_AGENTS_DIR` moves managed agents).
/// The settings flags of this process (`--settings`, `--setting-sources`),
/// set once from the command line before anything loads settings.
static RUN_SETTINGS: std::sync::OnceLock<(
    Option<cadre_core::config::ExtraSettings>,
    Option<Vec<cadre_core::config::SettingsScope>>,
)> = std::sync::OnceLock::new();

/// Most bytes of a `--settings` file (Claude Code's cap).
const MAX_SETTINGS_FLAG_BYTES: u64 = 2 * 1024 * 1024;

/// Reads `--settings` and `--setting-sources` for every later settings load.
pub fn set_run_settings(perms: &PermissionArgs) -> Result<(), UsageError> {
    use cadre_core::config::{ExtraSettings, SettingsScope};
    let extra = match perms.settings.as_deref() {
        None => None,
        Some(given) if given.trim_start().starts_with('{') => Some(ExtraSettings {
            label: PathBuf::from("--settings"),
            text: given.to_string(),
        }),
        Some(file) => {
            let path = PathBuf::from(file);
            let text = cadre_core::small_file::read_small_text(&path, MAX_SETTINGS_FLAG_BYTES)
                .map_err(|e| UsageError(format!("--settings {file}: {e}")))?;
            Some(ExtraSettings { label: path, text })
        }
    };
    if let Some(given) = &extra {
        // Checked here, so a mistake in it is bad usage, not a failed run.
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&given.text).map_err(
            |e| {
                UsageError(format!(
                    "--settings {}: not a JSON object: {e}",
                    given.label.display()
                ))
            },
        )?;
    }
    let sources = match perms.setting_sources.as_deref() {
        None => None,
        Some(list) => {
            let mut scopes = Vec::new();
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                scopes.push(match name {
                    "user" => SettingsScope::User,
                    "project" => SettingsScope::Project,
                    "local" => SettingsScope::Local,
                    other => {
                        return Err(UsageError(format!(
                            "--setting-sources: unknown source {other:?} (user, project, local)"
                        )));
                    }
                });
            }
            Some(scopes)
        }
    };
    let _ = RUN_SETTINGS.set((extra, sources));
    Ok(())
}

pub fn settings_paths(
    home: &std::path::Path,
    cwd: &std::path::Path,
    trusted: bool,
) -> SettingsPaths {
    let (extra, sources) = RUN_SETTINGS.get().cloned().unwrap_or_default();
    SettingsPaths {
        extra,
        sources,
        trusted,
        data_dir: home.to_path_buf(),
        home_dir: dirs_home(),
        project: cwd.to_path_buf(),
        managed_dir: Some(
            std::env::var_os("CADRE_MANAGED_SETTINGS_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(DEFAULT_MANAGED_SETTINGS_DIR)),
        ),
    }
}

/// Whether the folder's project settings may widen permissions and run
/// commands: `--trust`, or the user's recorded answer for it (or a folder
/// above it). A trust file that cannot be read counts as no answer, with a
/// warning.
pub fn folder_trusted(
    home: &std::path::Path,
    cwd: &std::path::Path,
    perms: &PermissionArgs,
    warnings: &mut Vec<String>,
) -> bool {
    if perms.trust {
        return true;
    }
    match TrustStore::load(home) {
        Ok(store) => store.is_trusted(cwd),
        Err(e) => {
            warnings.push(format!("{e}; the folder counts as not trusted"));
            false
        }
    }
}

/// Asks, before an interactive session starts, the questions of a folder
/// not answered yet: whether to trust it (when its project settings would
/// do more than the defaults allow), then whether its instruction files
/// may import the files outside the project they name. Only a person at a
/// terminal is asked; the answers are recorded in `$CADRE_HOME`.
pub fn ask_trust_if_needed(perms: &PermissionArgs) -> Result<()> {
    use std::io::IsTerminal;
    if perms.trust || !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(());
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let home = data_dir()?;
    ensure_private_dir(&home)?;
    ask_folder_trust(&cwd, &home)?;
    ask_outside_imports(&cwd, &home)
}

/// Reads one answer line from the terminal: yes for `y` or `yes`.
fn read_yes() -> Result<bool> {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(
        line.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// Asks once per outside file whether the project's instruction files may
/// import it; a yes may reveal the approved files' own outside imports,
/// which are asked about in turn.
fn ask_outside_imports(cwd: &std::path::Path, home: &std::path::Path) -> Result<()> {
    use cadre_core::instructions::approvals::ImportApprovals;
    use cadre_core::instructions::{InstructionSources, load, project_root};
    use std::io::Write;
    let root = project_root(cwd);
    loop {
        let Ok(mut answers) = ImportApprovals::load(home) else {
            // The start-up warning names the skipped files.
            return Ok(());
        };
        let loaded = load(&InstructionSources::for_session(
            cwd,
            Some(home.to_path_buf()),
        ));
        let new: Vec<_> = loaded
            .outside_skipped
            .iter()
            .filter(|f| !answers.answered(&root, &f.resolved))
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        let mut err = std::io::stderr().lock();
        writeln!(
            err,
            "The instruction files of {} import files from outside the project:",
            root.display()
        )?;
        for f in &new {
            writeln!(err, "  - {}", f.describe())?;
        }
        writeln!(
            err,
            "Their contents would be sent to the model with every request."
        )?;
        write!(err, "Allow these imports? [y/N] ")?;
        err.flush()?;
        drop(err);
        let yes = read_yes()?;
        let files: Vec<PathBuf> = new.iter().map(|f| f.resolved.clone()).collect();
        answers.record(&root, &files, yes)?;
        if !yes {
            eprintln!("Not imported: those files stay out of the prompt.");
            return Ok(());
        }
        eprintln!("Imported. The answer is kept in {}.", home.display());
    }
}

/// The workspace trust question, when the folder has not been answered and
/// its project files hold something that needs trust.
fn ask_folder_trust(cwd: &std::path::Path, home: &std::path::Path) -> Result<()> {
    use std::io::Write;
    let (cwd, home) = (cwd.to_path_buf(), home.to_path_buf());
    let Ok(mut store) = TrustStore::load(&home) else {
        // prepare() names the broken file.
        return Ok(());
    };
    if store.state(&cwd) != TrustState::Unknown {
        return Ok(());
    }
    let settings = Settings::load_with(&settings_paths(&home, &cwd, false))?;
    // The project's MCP servers would run as the user, like its hooks.
    let servers = McpConfig::load(&McpPaths {
        data_dir: home.clone(),
        project: cwd.clone(),
        trusted: false,
        ..McpPaths::default()
    })
    .needs_trust;
    let plugins_if = |trusted: bool| {
        cadre_core::plugins::PluginSet::load(&cadre_core::plugins::LoadOptions {
            cadre_home: &home,
            home_dir: dirs_home().as_deref(),
            project: &cwd,
            settings: &settings,
            trusted,
            plugin_dirs: &[],
        })
    };
    let plugins = plugins_if(false);
    // The plugins only the project's settings (or marketplaces) would load.
    let project_plugins: Vec<String> = plugins_if(true)
        .plugins
        .into_iter()
        .filter(|p| plugins.get(&p.name).is_none())
        .map(|p| p.id)
        .collect();
    let skills = SkillSet::load(&cwd, &home, dirs_home().as_deref(), &plugins).needing_trust();
    if settings.needs_trust.is_empty()
        && servers.is_empty()
        && skills.is_empty()
        && project_plugins.is_empty()
    {
        return Ok(());
    }
    let mut err = std::io::stderr().lock();
    writeln!(
        err,
        "Do you trust the files in {}?
Its project settings would, once trusted:",
        cwd.display()
    )?;
    for e in &settings.needs_trust {
        writeln!(err, "  - {} in {}", e.key, e.path.display())?;
    }
    for (path, name) in &servers {
        writeln!(err, "  - start the MCP server {name} of {}", path.display())?;
    }
    for (name, tools) in &skills {
        writeln!(
            err,
            "  - let the skill {name} run {} without asking",
            tools.join(", ")
        )?;
    }
    for id in &project_plugins {
        writeln!(
            err,
            "  - load the plugin {id} (its hooks, MCP servers, agents and skills)"
        )?;
    }
    writeln!(
        err,
        "Hooks, MCP servers and commands it sets run with your rights, outside the sandbox; servers it names get your keys and queries. Deny and ask rules apply either way."
    )?;
    write!(err, "Trust this folder? [y/N] ")?;
    err.flush()?;
    drop(err);
    let yes = read_yes()?;
    store.record(&cwd, yes)?;
    eprintln!(
        "{}",
        if yes {
            "Trusted. `cadre config untrust` takes it back."
        } else {
            "Not trusted: those entries stay ignored. `cadre config trust` changes that."
        }
    );
    Ok(())
}

/// `[subagents]` from config, with defaults and clamps.
pub fn subagent_settings(settings: &Settings) -> SubagentSettings {
    let f = &settings.file.subagents;
    let d = SubagentSettings::default();
    SubagentSettings {
        max_depth: f.max_depth.unwrap_or(d.max_depth).clamp(1, 3),
        max_concurrent: f
            .max_concurrent_subagents
            .unwrap_or(d.max_concurrent)
            .clamp(1, 32),
        max_per_turn: f.max_subagents_per_turn.unwrap_or(d.max_per_turn),
        max_running: f.max_running_subagents.unwrap_or(d.max_running),
        default_type: f.default_type.clone().unwrap_or(d.default_type),
        default_max_turns: f.default_max_turns.unwrap_or(d.default_max_turns),
        max_tool_calls_per_child: f
            .max_tool_calls_per_child
            .unwrap_or(d.max_tool_calls_per_child),
        enable_verification: f.enable_verification.unwrap_or(d.enable_verification),
        custom_deny: f.extra_deny.clone(),
        auto_background_after: f
            .auto_background_after_s
            // Range-checked on load; try_ keeps a bad value from ever panicking.
            .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
            .unwrap_or(d.auto_background_after),
        project_trusted: false,
        bypass_disabled: settings.bypass_disabled_by.is_some(),
    }
}

/// The flag, else the mode the settings files choose (see
/// [`Settings::file_mode`]). Managed settings win over the flag unless the
/// flag is at least as strict; a file that disables `bypassPermissions`
/// refuses it from the flag.
fn permission_mode(
    perms: &PermissionArgs,
    settings: &Settings,
    warnings: &mut Vec<String>,
) -> Result<PermissionMode> {
    let from_files = settings.file_mode(warnings).map_err(UsageError)?;
    let Some(flag) = perms.permission_mode else {
        return Ok(from_files.map_or(PermissionMode::Default, |c| c.mode));
    };
    if flag == PermissionMode::BypassPermissions
        && let Some(by) = &settings.bypass_disabled_by
    {
        bail!(UsageError(format!(
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

/// Rules from flags and every settings file (project allow rules were dropped on load).
fn permission_rules(perms: &PermissionArgs, settings: &Settings) -> Result<RuleSet> {
    let home = dirs_home();
    let mut set = RuleSet::new();
    let flags = [
        (RuleKind::Allow, &perms.allow),
        (RuleKind::Ask, &perms.ask),
        (RuleKind::Deny, &perms.deny),
    ];
    let flag_rules = flags
        .into_iter()
        .flat_map(|(kind, texts)| texts.iter().map(move |t| (kind, t.clone())));
    let file_rules = settings.rules().into_iter().map(|r| (r.kind, r.text));
    for (kind, text) in flag_rules.chain(file_rules) {
        let rule =
            parse_rule(kind, &text, home.as_deref()).map_err(|e| UsageError(e.to_string()))?;
        set.add(rule);
    }
    Ok(set)
}

fn dirs_home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

impl Runtime {
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
    ) -> Result<(Session, SessionHandle)> {
        let tasks = TaskTable::open(&self.home).await?;
        tasks.set_output_limit(self.task_output_limit);
        // The servers start with the first session, reported in its events.
        if !self
            .mcp_started
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
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
            },
            |parts: AgentParts| {
                self.main_agent(
                    parts.events,
                    parts.approvals,
                    Some(log),
                    Some(session_id),
                    parts.background,
                    asks_user,
                )
            },
        )
        .await
    }

    /// The top-level agent, sending its events to `events` and asking through
    /// `approvals`; its children's logs go beside `session_id`'s log. With
    /// `asks_user` it may ask the user questions (`AskUserQuestion`).
    pub fn main_agent(
        &self,
        events: EventSink,
        approvals: Arc<dyn ApprovalSource>,
        log: Option<Arc<SessionLog>>,
        session_id: Option<&str>,
        background: Option<Arc<BackgroundWork>>,
        asks_user: bool,
    ) -> Result<Agent> {
        let mut ctx = ToolContext::new(self.cwd.clone());
        ctx.output_cap = self.output_cap;
        ctx.sandbox = self.sandbox.clone();
        ctx.background = background.map(|w| w as Arc<dyn cadre_core::tools::BackgroundTasks>);
        ctx.policy = Some(self.policy.clone());
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
        let mut system = build_system_prompt(&self.cwd);
        if let Some(spec) = &self.main_spec {
            tools = spec.tools.clone();
            allowed_types = spec.agent_types.clone();
            ctx.sandbox = spec.sandbox.clone();
            system = spec.system.clone();
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
        // Questions to the user: only where someone answers; elsewhere the
        // model is told to decide itself.
        if asks_user {
            tools.insert(Arc::new(AskUserQuestionTool::new(gate.clone())));
        } else {
            system.push_str("\n\n");
            system.push_str(cadre_core::tools::ask_user::NO_ONE_TO_ASK);
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
                self.context.clone(),
            )
            .with_hooks(Some(self.hooks.clone()))
            .with_mcp(Some(self.mcp.clone()))
            .with_skills(self.skills.clone()),
        );
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
            context: self.context.clone(),
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
        .with_answer_schema(self.shape.answer_schema.clone()))
    }
}
