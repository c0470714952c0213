//! `cadre doctor` and `/doctor`: read-only diagnostics of what a session
//! here would load — settings files that do not parse, keys that do not
//! apply, project entries waiting for trust, agent and skill files that
//! are broken or shadowed, MCP servers that fail to start, hooks (and, in a
//! session, the hooks that failed or timed out) and the kernel features the
//! sandbox is missing. Nothing is written and no hook runs.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use cadre_core::config::{ConfigFile, JsonSettings, Settings, data_dir, ensure_private_dir};
use cadre_core::hooks::HookSet;
use cadre_core::mcp::{McpConfig, McpHub, ServerState};
use cadre_core::protocol::EventSink;
use cadre_core::skills::SkillSet;
use cadre_core::subagents::catalog::DefinitionCatalog;
use cadre_core::subagents::definition::IssueLevel;
use clap::Args;
use serde::Serialize;

use crate::setup::{folder_trusted, mcp_log_dir, mcp_paths, mcp_timeouts, settings_paths};
use crate::{AgentArgs, PermissionArgs};

/// Arguments of `cadre doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing to fix.
    Ok,
    /// Works, but something does not apply or is missing.
    Warn,
    /// Broken: a file or a server the session cannot use.
    Fail,
}

impl Status {
    fn mark(self) -> &'static str {
        match self {
            Status::Ok => "✓",
            Status::Warn => "!",
            Status::Fail => "✗",
        }
    }
}

/// One diagnostic.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What it looks at (`settings`, `mcp`, …).
    pub area: &'static str,
    /// How it came out.
    pub status: Status,
    /// One line.
    pub summary: String,
    /// The entries behind it, one a line.
    pub details: Vec<String>,
}

fn check(area: &'static str, status: Status, summary: impl Into<String>) -> Check {
    Check {
        area,
        status,
        summary: summary.into(),
        details: Vec::new(),
    }
}

/// What a running session adds to the checks.
pub struct LiveSession<'a> {
    /// Its MCP servers, as they stand (not started again).
    pub mcp: &'a McpHub,
    /// Hook runs that failed or timed out so far, one line each.
    pub hook_failures: &'a [String],
}

/// Runs `cadre doctor`: exit 1 when a check failed.
pub async fn run(perms: &PermissionArgs, agent: &AgentArgs, args: DoctorArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let home = data_dir()?;
    let checks = checks(&home, &cwd, perms, agent, None).await;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&checks)?);
    } else {
        print!("{}", text(&checks));
    }
    Ok(if checks.iter().any(|c| c.status == Status::Fail) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The checks as lines: a mark, the area and the summary, then the details.
pub fn text(checks: &[Check]) -> String {
    let mut out = String::new();
    for c in checks {
        out.push_str(&format!("{} {}: {}\n", c.status.mark(), c.area, c.summary));
        for d in &c.details {
            out.push_str(&format!("    {d}\n"));
        }
    }
    let fails = checks.iter().filter(|c| c.status == Status::Fail).count();
    let warns = checks.iter().filter(|c| c.status == Status::Warn).count();
    out.push_str(&match (fails, warns) {
        (0, 0) => "Everything checked is in order.\n".to_string(),
        _ => format!("{fails} failed, {warns} to look at.\n"),
    });
    out
}

/// Every check for a session in `cwd`; with `live`, the MCP servers and
/// hooks of that running session instead of starting the servers.
pub async fn checks(
    home: &Path,
    cwd: &Path,
    perms: &PermissionArgs,
    agent: &AgentArgs,
    live: Option<LiveSession<'_>>,
) -> Vec<Check> {
    let mut out = Vec::new();
    let mut trust_warnings = Vec::new();
    let trusted = folder_trusted(home, cwd, perms, &mut trust_warnings);
    let paths = settings_paths(home, cwd, trusted);
    out.push(settings_files(home, cwd, &paths));
    let settings = match Settings::load_with(&paths) {
        Ok(mut s) => {
            s.warnings.extend(trust_warnings);
            out.extend(settings_entries(&s));
            Some(s)
        }
        Err(_) => None,
    };
    // With a settings file that does not parse, the rest is checked as a
    // session with no settings would see it.
    let settings = settings.unwrap_or_default();
    let plugins = crate::setup::load_plugins(home, cwd, &settings, trusted, perms);
    if !plugins.warnings.is_empty() {
        let mut c = check(
            "plugins",
            Status::Warn,
            format!("{} problem(s)", plugins.warnings.len()),
        );
        c.details = plugins.warnings.clone();
        out.push(c);
    }
    out.push(agents(cwd, home, agent, &settings, &plugins));
    out.push(skills(cwd, home, &plugins));
    match live {
        Some(live) => {
            out.push(mcp_servers(live.mcp, &[]));
            out.push(hooks(&settings, &plugins, Some(live.hook_failures)));
        }
        None => {
            let mut config = McpConfig::load(&mcp_paths(home, cwd, trusted, agent));
            if !agent.strict_mcp_config {
                config.add_plugin_servers(&plugins, cwd);
            }
            let held: Vec<String> = config.needs_trust.iter().map(|(_, n)| n.clone()).collect();
            let hub = McpHub::new(
                &config,
                cwd,
                &mcp_log_dir(home),
                mcp_timeouts(&mut Vec::new()),
            );
            if !hub.is_empty() && ensure_private_dir(home).is_ok() {
                hub.start_all(&EventSink::discard());
                hub.settled().await;
            }
            out.push(mcp_servers(&hub, &held));
            hub.close_all().await;
            out.push(hooks(&settings, &plugins, None));
        }
    }
    out.push(sandbox());
    out
}

/// Each settings file that exists, parsed on its own.
fn settings_files(home: &Path, cwd: &Path, paths: &cadre_core::config::SettingsPaths) -> Check {
    let mut read = 0;
    let mut broken = Vec::new();
    for path in [
        home.join("config.toml"),
        cwd.join(".cadre").join("config.toml"),
    ] {
        if !path.exists() {
            continue;
        }
        match ConfigFile::load(&path) {
            Ok(_) => read += 1,
            Err(e) => broken.push(e.to_string()),
        }
    }
    for (_, path) in paths.json_files() {
        match JsonSettings::load(&path) {
            Ok(Some(_)) => read += 1,
            Ok(None) => {}
            Err(e) => broken.push(e.to_string()),
        }
    }
    if broken.is_empty() {
        check("settings", Status::Ok, format!("{read} file(s) read"))
    } else {
        let mut c = check(
            "settings",
            Status::Fail,
            format!(
                "{} file(s) cannot be read; a session here stops until they are fixed",
                broken.len()
            ),
        );
        c.details = broken;
        c
    }
}

/// Entries that do not apply: unknown or ignored keys, and project entries
/// held back until the folder is trusted.
fn settings_entries(settings: &Settings) -> Vec<Check> {
    let mut out = Vec::new();
    let mut ignored: Vec<String> = settings
        .json
        .iter()
        .flat_map(|j| {
            j.settings
                .unknown
                .iter()
                .map(|key| format!("{}: {key} — cadre does not read this key", j.path.display()))
        })
        .collect();
    ignored.extend(
        settings
            .ignored
            .iter()
            .filter(|e| !settings.needs_trust.contains(e))
            .map(|e| format!("{}: {} — {}", e.path.display(), e.key, e.why)),
    );
    if !ignored.is_empty() {
        let mut c = check(
            "ignored keys",
            Status::Warn,
            format!("{} entr(ies) of settings files do not apply", ignored.len()),
        );
        c.details = ignored;
        out.push(c);
    }
    if !settings.needs_trust.is_empty() {
        let mut c = check(
            "workspace trust",
            Status::Warn,
            format!(
                "{} project entr(ies) wait for this folder to be trusted (`cadre config trust`)",
                settings.needs_trust.len()
            ),
        );
        c.details = settings
            .needs_trust
            .iter()
            .map(|e| format!("{}: {}", e.path.display(), e.key))
            .collect();
        out.push(c);
    }
    if !settings.warnings.is_empty() {
        let mut c = check(
            "settings warnings",
            Status::Warn,
            format!("{}", settings.warnings.len()),
        );
        c.details = settings.warnings.clone();
        out.push(c);
    }
    out
}

/// Agent definitions: files that do not load, and names defined twice.
fn agents(
    cwd: &Path,
    home: &Path,
    agent: &AgentArgs,
    settings: &Settings,
    plugins: &cadre_core::plugins::PluginSet,
) -> Check {
    let subagents = crate::setup::subagent_settings(settings);
    let src = crate::setup::catalog_sources(agent, &subagents, cwd, home, plugins);
    let catalog = match DefinitionCatalog::load(&src) {
        Ok(c) => c,
        Err(e) => {
            let mut c = check("agents", Status::Fail, "definitions cannot be loaded");
            c.details.push(e.to_string());
            return c;
        }
    };
    let mut details = Vec::new();
    let mut broken = 0;
    for issue in catalog.issues() {
        if issue.level == IssueLevel::Info {
            continue;
        }
        if issue.level == IssueLevel::Error {
            broken += 1;
        }
        let at = issue
            .path
            .as_ref()
            .map_or(String::new(), |p| format!("{}: ", p.display()));
        details.push(format!("{at}{}", issue.message));
    }
    let count = catalog.entries().len();
    let status = if details.is_empty() {
        Status::Ok
    } else {
        Status::Warn
    };
    let mut summary = format!("{count} definition(s)");
    if broken > 0 {
        summary.push_str(&format!(", {broken} file(s) skipped"));
    }
    let mut c = check("agents", status, summary);
    c.details = details;
    c
}

/// Skills and commands: files that do not load, and names a higher
/// precedence definition hides (cadre's own `/init` and `/review` too).
fn skills(cwd: &Path, home: &Path, plugins: &cadre_core::plugins::PluginSet) -> Check {
    let home_dir = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let set = SkillSet::load(cwd, home, home_dir.as_deref(), plugins);
    let mut details = set.warnings.clone();
    for (name, hidden, winner) in &set.shadowed {
        details.push(format!(
            "/{name}: {} is shadowed by {}",
            hidden.display(),
            winner.display()
        ));
    }
    let status = if details.is_empty() {
        Status::Ok
    } else {
        Status::Warn
    };
    let mut c = check(
        "skills",
        status,
        format!("{} skill(s) and command(s)", set.skills.len()),
    );
    c.details = details;
    c
}

/// MCP servers: each one's state; a failed server fails the check.
fn mcp_servers(hub: &McpHub, held_back: &[String]) -> Check {
    let mut details = Vec::new();
    let (mut ready, mut failed) = (0, 0);
    for server in hub.servers() {
        match server.state() {
            ServerState::Ready(tools) => {
                ready += 1;
                details.push(format!("{}: ready, {} tool(s)", server.name(), tools.len()));
            }
            ServerState::Failed(why) => {
                failed += 1;
                details.push(format!("{}: failed: {why}", server.name()));
            }
            ServerState::Starting => details.push(format!("{}: still starting", server.name())),
            ServerState::Closed => details.push(format!("{}: closed", server.name())),
        }
    }
    for name in held_back {
        details.push(format!("{name}: not started (the folder is not trusted)"));
    }
    let status = if failed > 0 {
        Status::Fail
    } else if !held_back.is_empty() {
        Status::Warn
    } else {
        Status::Ok
    };
    let summary = if details.is_empty() {
        "none configured".to_string()
    } else {
        format!("{ready} ready, {failed} failed")
    };
    let mut c = check("mcp", status, summary);
    c.details = details;
    c
}

/// Hooks configured (and, in a session, those that failed or timed out).
fn hooks(
    settings: &Settings,
    plugins: &cadre_core::plugins::PluginSet,
    failures: Option<&[String]>,
) -> Check {
    let (mut set, mut warnings) = HookSet::from_settings(settings);
    let (plugin_hooks, plugin_warnings) = HookSet::from_plugins(plugins, settings);
    set.extend(plugin_hooks);
    warnings.extend(plugin_warnings);
    let configured = set.commands();
    let mut details = warnings;
    if let Some(failures) = failures {
        details.extend(failures.iter().cloned());
    }
    let status = if details.is_empty() {
        Status::Ok
    } else {
        Status::Warn
    };
    let mut summary = format!("{} hook command(s) configured", configured.len());
    match failures {
        Some([]) => summary.push_str(", none failed or timed out in this session"),
        Some(f) => summary.push_str(&format!(
            ", {} failed or timed out in this session",
            f.len()
        )),
        None => {}
    }
    let mut c = check("hooks", status, summary);
    c.details = details;
    c
}

/// The kernel features the sandbox uses that this machine lacks.
fn sandbox() -> Check {
    let missing: Vec<String> = cadre_core::sandbox::kernel_support()
        .into_iter()
        .filter(|f| !f.present)
        .map(|f| format!("no {}: {}", f.name, f.without))
        .collect();
    if missing.is_empty() {
        check(
            "sandbox",
            Status::Ok,
            "every kernel feature it uses is here",
        )
    } else {
        let mut c = check(
            "sandbox",
            Status::Warn,
            format!("{} kernel feature(s) missing", missing.len()),
        );
        c.details = missing;
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_marks_each_check_and_counts_what_failed() {
        let mut bad = check("mcp", Status::Fail, "0 ready, 1 failed");
        bad.details.push("docs: failed: exited".into());
        let checks = vec![check("settings", Status::Ok, "2 file(s) read"), bad];
        let shown = text(&checks);
        assert!(shown.contains("✓ settings: 2 file(s) read\n"), "{shown}");
        assert!(shown.contains("✗ mcp: 0 ready, 1 failed\n    docs: failed: exited\n"));
        assert!(shown.ends_with("1 failed, 0 to look at.\n"), "{shown}");
        assert_eq!(
            text(&checks[..1]).lines().last(),
            Some("Everything checked is in order.")
        );
    }
}
