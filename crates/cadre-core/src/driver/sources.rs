//! Where a session's parts come from: its plugins, MCP servers and their
//! timeouts and logs, agent definitions and `[subagents]` settings, read
//! for the project folder from settings and the environment.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::overrides::ApiKeys;
use crate::config::Settings;
use crate::mcp::{McpPaths, McpTimeouts};
use crate::plugins::{LoadOptions, PluginSet};
use crate::subagents::catalog::{CatalogSources, DEFAULT_MANAGED_DIR};
use crate::subagents::runtime::SubagentSettings;

/// The variable `name`, when set to something other than blanks.
pub(super) fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The user's home folder, from `HOME`.
pub(super) fn dirs_home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

/// The plugins of a session in `cwd` (see `crate::plugins::loader`), with
/// `plugin_dirs` loaded for this run (`--plugin-dir`).
pub fn load_plugins(
    home: &Path,
    cwd: &Path,
    settings: &Settings,
    trusted: bool,
    plugin_dirs: &[PathBuf],
) -> PluginSet {
    let home_dir = dirs_home();
    PluginSet::load(&LoadOptions {
        cadre_home: home,
        home_dir: home_dir.as_deref(),
        project: cwd,
        settings,
        trusted,
        plugin_dirs,
    })
}

/// Where MCP servers are configured for a session in `cwd`: the configured
/// ones, and `flag_files` (`--mcp-config`, relative to `cwd`); with `strict`
/// only those. A server's configuration may name the model keys in `keys`.
pub fn mcp_paths(
    home: &Path,
    cwd: &Path,
    trusted: bool,
    flag_files: &[PathBuf],
    strict: bool,
    keys: &ApiKeys,
) -> McpPaths {
    McpPaths {
        data_dir: home.to_path_buf(),
        project: cwd.to_path_buf(),
        home: dirs_home(),
        trusted,
        flag_files: flag_files.iter().map(|f| cwd.join(f)).collect(),
        strict,
        taken_vars: keys.taken_vars(),
    }
}

/// Where MCP servers' stderr goes, one log per server (0600, in a 0700 folder).
pub fn mcp_log_dir(home: &Path) -> PathBuf {
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

/// Where definitions are read from, with `flag_json` (`--agents`) on top.
/// `CADRE_MANAGED_AGENTS_DIR` moves the managed directory (for packaging
/// and tests); it is as trusted as the environment cadre runs in.
pub fn catalog_sources(
    flag_json: Option<String>,
    subagents: &SubagentSettings,
    cwd: &Path,
    home: &Path,
    plugins: &PluginSet,
) -> CatalogSources {
    CatalogSources {
        cwd: cwd.to_path_buf(),
        data_dir: home.to_path_buf(),
        plugin_agents: plugins.agent_paths(),
        home_dir: dirs_home(),
        managed_dir: std::env::var_os("CADRE_MANAGED_AGENTS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_MANAGED_DIR)),
        flag_json,
        enable_verification: subagents.enable_verification,
    }
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
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .unwrap_or(d.auto_background_after),
        project_trusted: false,
        bypass_disabled: settings.bypass_disabled_by.is_some(),
    }
}

/// `[teams]` from config, with `CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS` (in
/// the environment or a settings file's `env`) turning teams on (`1`) or
/// off (`0`), and `forced` (`--teams`) on whatever they say.
pub(super) fn team_settings(settings: &Settings, forced: bool) -> crate::teams::TeamSettings {
    const SWITCH: &str = "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS";
    let f = &settings.file.teams;
    let d = crate::teams::TeamSettings::default();
    let switch = settings
        .env
        .get(SWITCH)
        .map(|(v, _)| v.clone())
        .or_else(|| env_nonempty(SWITCH));
    let by_switch = match switch.as_deref().map(str::trim) {
        Some("0") | Some("false") => Some(false),
        Some(_) => Some(true),
        None => None,
    };
    crate::teams::TeamSettings {
        enabled: forced || by_switch.or(f.enabled).unwrap_or(d.enabled),
        max_teammates: f.max_teammates.unwrap_or(d.max_teammates).clamp(1, 16),
    }
}
