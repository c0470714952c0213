//! Turns flags and environment into [`SessionOverrides`], loads the settings
//! files, and hands both to [`SessionBuilder::from_settings`], which builds
//! the model client, permission policy and everything else a session needs.
//! Precedence: flag → environment → project config → user config → default.
//! The questions a folder may need before a session (trust, outside imports)
//! are asked here, on the terminal.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use cadre_core::config::{
    DEFAULT_MANAGED_SETTINGS_DIR, Settings, SettingsPaths, TrustState, TrustStore, data_dir,
    ensure_private_dir,
};
use cadre_core::driver::{ApiKeys, BuildError, MainShape, SessionBuilder, SessionOverrides};
use cadre_core::mcp::{McpConfig, McpPaths};
use cadre_core::model::Provider;
use cadre_core::skills::SkillSet;
use cadre_core::subagents::catalog::CatalogSources;
use cadre_core::subagents::runtime::SubagentSettings;

use crate::{AgentArgs, ModelArgs, PermissionArgs, UsageError};

pub use cadre_core::driver::{MAX_ATTEMPTS, mcp_log_dir, mcp_timeouts, subagent_settings};

/// The main agent's shape from the run flags: `--system-prompt`,
/// `--append-system-prompt`, `--json-schema`, `--disallowedTools`, `--tools`.
fn main_shape(perms: &PermissionArgs, run: &crate::run_flags::RunFlags) -> Result<MainShape> {
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

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The model keys read at start-up (see [`crate::keys`]).
pub fn api_keys() -> ApiKeys {
    cadre_core::secrets::KEY_VARS
        .iter()
        .fold(ApiKeys::new(), |keys, name| match crate::keys::key(name) {
            Some(key) => keys.with(*name, key),
            None => keys,
        })
}

/// A build error as the binary reports it: bad usage exits 2.
pub fn build_error(e: BuildError) -> anyhow::Error {
    match e {
        BuildError::Usage(message) => UsageError(message).into(),
        other => other.into(),
    }
}

/// Builds the sessions' builder for the current directory.
pub fn prepare(
    args: &ModelArgs,
    perms: &PermissionArgs,
    agent: &AgentArgs,
) -> Result<SessionBuilder> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    prepare_at(cwd, args, perms, agent)
}

/// Builds the sessions' builder for the project folder `cwd` (an editor's session
/// names its own folder); asks nothing.
pub fn prepare_at(
    cwd: PathBuf,
    args: &ModelArgs,
    perms: &PermissionArgs,
    agent: &AgentArgs,
) -> Result<SessionBuilder> {
    let home = data_dir()?;
    ensure_private_dir(&home)?;
    let mut warnings = Vec::new();
    let trusted = folder_trusted(&home, &cwd, perms, &mut warnings);
    if perms.trust {
        // `--trust` also approves instruction imports from outside the project.
        cadre_core::instructions::approve_outside_imports_for_this_run();
    }
    let shape = main_shape(perms, &agent.run)?;
    let settings = Settings::load_with(&settings_paths(&home, &cwd, trusted))?;
    // The flag, else the environment; a bad name in it is bad usage.
    let provider: Option<Provider> = match (args.provider, env_nonempty("CADRE_PROVIDER")) {
        (Some(p), _) => Some(p),
        (None, Some(name)) => Some(name.parse().map_err(|e: String| UsageError(e))?),
        (None, None) => None,
    };
    let overrides = SessionOverrides {
        cwd,
        home,
        trusted,
        warnings,
        provider,
        base_url: args
            .base_url
            .clone()
            .or_else(|| env_nonempty("CADRE_BASE_URL")),
        model: args.model.clone().or_else(|| env_nonempty("CADRE_MODEL")),
        keys: api_keys(),
        permission_mode: perms.permission_mode,
        allow: perms.allow.clone(),
        ask: perms.ask.clone(),
        deny: perms.deny.clone(),
        add_dirs: perms.add_dir.clone(),
        agent: agent.agent.clone(),
        agents_json: agent.agents.clone(),
        plugin_dirs: perms.plugin_dir.clone(),
        mcp_config: agent.mcp_config.clone(),
        strict_mcp_config: agent.strict_mcp_config,
        shape,
        max_turns: agent.run.max_turns,
        max_budget_usd: agent.run.max_budget_usd,
        fallback_models: agent.run.fallback_models(),
        teams: agent.run.teams,
    };
    SessionBuilder::from_settings(settings, overrides).map_err(build_error)
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
    cadre_core::driver::load_plugins(home, cwd, settings, trusted, &perms.plugin_dir)
}

/// Where MCP servers are configured for a session in `cwd`.
pub fn mcp_paths(
    home: &std::path::Path,
    cwd: &std::path::Path,
    trusted: bool,
    agent: &AgentArgs,
) -> McpPaths {
    cadre_core::driver::mcp_paths(
        home,
        cwd,
        trusted,
        &agent.mcp_config,
        agent.strict_mcp_config,
        &api_keys(),
    )
}

/// Where definitions are read from, `--agents` included.
pub fn catalog_sources(
    agent: &AgentArgs,
    subagents: &SubagentSettings,
    cwd: &std::path::Path,
    home: &std::path::Path,
    plugins: &cadre_core::plugins::PluginSet,
) -> CatalogSources {
    cadre_core::driver::catalog_sources(agent.agents.clone(), subagents, cwd, home, plugins)
}

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

/// Where the settings files are. `CADRE_MANAGED_SETTINGS_DIR` moves the
/// managed directory (as `CADRE_MANAGED_AGENTS_DIR` moves managed agents).
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

fn dirs_home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}
