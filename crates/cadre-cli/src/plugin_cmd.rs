//! `cadre plugin …`, as `claude plugin` has it: list the plugins found and
//! whether they load here; install, update, uninstall, enable and disable
//! them; add, list, update and remove marketplaces; validate a plugin or
//! marketplace folder. State goes to `$CADRE_HOME/plugins/` in Claude
//! Code's layout, `enabledPlugins` to the chosen scope's settings file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use cadre_core::config::{Settings, data_dir, ensure_private_dir};
use cadre_core::plugins::install::{InstallScope, Installer, split_id};
use cadre_core::plugins::manifest::{Manifest, ManifestConfig, resolve_under};
use cadre_core::plugins::marketplace::{MARKETPLACE_PATH, Marketplace, Source};
use cadre_core::plugins::state::{
    KnownMarketplaces, save_secrets, set_enabled, set_plugin_options,
};
use cadre_core::plugins::{LoadOptions, Plugin, PluginSet, loader};
use clap::{Args, Subcommand};

use crate::{PermissionArgs, UsageError};

/// Arguments of `cadre plugin`.
#[derive(Debug, Args)]
pub struct PluginArgs {
    #[command(subcommand)]
    command: PluginCommand,
}

#[derive(Debug, Subcommand)]
enum PluginCommand {
    /// Every plugin found, whether it loads in this folder, and what of it cadre does not apply.
    List,
    /// Installs a plugin from a known marketplace and enables it.
    Install {
        /// `name` or `name@marketplace`.
        plugin: String,
        /// user (every project), project (.claude/settings.json) or local (.claude/settings.local.json).
        #[arg(long, short = 's', default_value = "user")]
        scope: InstallScope,
        /// A userConfig value, KEY=VALUE (repeatable).
        #[arg(long = "config", value_name = "KEY=VALUE")]
        config: Vec<String>,
    },
    /// Removes a plugin's install (and, when none is left, its cached copies and data).
    Uninstall {
        /// `name@marketplace`.
        plugin: String,
        /// Only this scope's install.
        #[arg(long, short = 's')]
        scope: Option<InstallScope>,
        /// Keep its data folder.
        #[arg(long)]
        keep_data: bool,
    },
    /// Enables a plugin in a scope's settings file.
    Enable {
        /// `name` or `name@marketplace`.
        plugin: String,
        /// Which settings file to write.
        #[arg(long, short = 's', default_value = "user")]
        scope: InstallScope,
        /// A userConfig value, KEY=VALUE (repeatable).
        #[arg(long = "config", value_name = "KEY=VALUE")]
        config: Vec<String>,
    },
    /// Disables a plugin in a scope's settings file.
    Disable {
        /// `name` or `name@marketplace`.
        plugin: String,
        /// Which settings file to write.
        #[arg(long, short = 's', default_value = "user")]
        scope: InstallScope,
    },
    /// Updates installed plugins (one, or all of cadre's) to their marketplace's newest version.
    Update {
        /// `name@marketplace`; all when left out.
        plugin: Option<String>,
    },
    /// Checks a plugin or marketplace folder.
    Validate {
        /// The folder.
        dir: PathBuf,
        /// Warnings count as errors.
        #[arg(long)]
        strict: bool,
    },
    /// Adds, lists, updates and removes marketplaces.
    Marketplace {
        #[command(subcommand)]
        command: MarketplaceCommand,
    },
}

#[derive(Debug, Subcommand)]
enum MarketplaceCommand {
    /// Adds a marketplace: a local folder or marketplace.json, a git URL (`#ref`), or owner/repo[@ref].
    Add {
        /// Where it is.
        source: String,
    },
    /// The known marketplaces.
    List,
    /// Removes a marketplace added with cadre.
    Remove {
        /// Its name.
        name: String,
    },
    /// Fetches the newest catalogue of one marketplace, or of all of cadre's.
    Update {
        /// Its name.
        name: Option<String>,
    },
}

/// What every subcommand needs: where things are, and the settings in force.
struct Context_ {
    cwd: PathBuf,
    home: PathBuf,
    settings: Settings,
    trusted: bool,
}

impl Context_ {
    fn load(perms: &PermissionArgs) -> Result<Context_> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let home = data_dir()?;
        ensure_private_dir(&home)?;
        let trusted = crate::setup::folder_trusted(&home, &cwd, perms, &mut Vec::new());
        let settings = Settings::load_with(&crate::setup::settings_paths(&home, &cwd, trusted))?;
        Ok(Context_ {
            cwd,
            home,
            settings,
            trusted,
        })
    }

    fn plugins(&self, perms: &PermissionArgs) -> PluginSet {
        crate::setup::load_plugins(&self.home, &self.cwd, &self.settings, self.trusted, perms)
    }

    fn installer(&self) -> Installer {
        let home_dir = std::env::var_os("HOME").map(PathBuf::from);
        let opts = LoadOptions {
            cadre_home: &self.home,
            home_dir: home_dir.as_deref(),
            project: &self.cwd,
            settings: &self.settings,
            trusted: self.trusted,
            plugin_dirs: &[],
        };
        let mut ignored = Vec::new();
        Installer {
            cadre_home: self.home.clone(),
            marketplaces: loader::marketplaces(&opts, &mut ignored)
                .into_iter()
                .map(|(name, (location, _))| (name, location))
                .collect(),
        }
    }
}

/// Runs `cadre plugin …`.
pub fn run(perms: &PermissionArgs, args: PluginArgs) -> Result<ExitCode> {
    let cx = Context_::load(perms)?;
    match args.command {
        PluginCommand::List => {
            print!("{}", list_text(&cx.plugins(perms)));
            Ok(ExitCode::SUCCESS)
        }
        PluginCommand::Install {
            plugin,
            scope,
            config,
        } => {
            let installer = cx.installer();
            let done = installer.install(&plugin, scope, &cx.cwd)?;
            for s in &done.skipped {
                eprintln!("warning: {s}: not a file or folder; left out of the copy");
            }
            if let Some(m) = &done.manifest {
                configure(&cx, &done.id, m, &config)?;
            }
            println!(
                "Installed {} {} ({} scope) in {}.",
                done.id,
                done.version,
                scope.as_str(),
                done.path.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        PluginCommand::Uninstall {
            plugin,
            scope,
            keep_data,
        } => {
            let id = resolve_id(&cx.plugins(perms), &plugin)?;
            let removed = cx.installer().uninstall(&id, scope, &cx.cwd, keep_data)?;
            let scopes: Vec<&str> = removed.iter().map(|s| s.as_str()).collect();
            println!("Uninstalled {id} ({}).", scopes.join(", "));
            Ok(ExitCode::SUCCESS)
        }
        PluginCommand::Enable {
            plugin,
            scope,
            config,
        } => {
            let set = cx.plugins(perms);
            let id = resolve_id(&set, &plugin)?;
            let file = scope.settings_file(&cx.home, &cx.cwd);
            set_enabled(&file, &id, Some(true))?;
            if let Some(listed) = set.listed.iter().find(|l| l.id == id)
                && let Ok(Some(m)) = Manifest::read(&listed.root)
            {
                configure(&cx, &id, &m, &config)?;
            }
            println!("Enabled {id} in {}.", file.display());
            Ok(ExitCode::SUCCESS)
        }
        PluginCommand::Disable { plugin, scope } => {
            let id = resolve_id(&cx.plugins(perms), &plugin)?;
            let file = scope.settings_file(&cx.home, &cx.cwd);
            set_enabled(&file, &id, Some(false))?;
            println!("Disabled {id} in {}.", file.display());
            Ok(ExitCode::SUCCESS)
        }
        PluginCommand::Update { plugin } => {
            let installer = cx.installer();
            let ids = match plugin {
                Some(p) => vec![resolve_id(&cx.plugins(perms), &p)?],
                None => {
                    cadre_core::plugins::state::InstalledPlugins::load(&installer.plugins_dir())?
                        .plugins
                        .into_keys()
                        .collect()
                }
            };
            let mut failed = false;
            for id in ids {
                match installer.update(&id) {
                    Ok(Some((old, new))) => println!(
                        "Updated {id} from {old} to {} ({}); new sessions use it.",
                        new.version,
                        new.path.display()
                    ),
                    Ok(None) => println!("{id} is up to date."),
                    Err(e) => {
                        failed = true;
                        eprintln!("error: {id}: {e}");
                    }
                }
            }
            Ok(if failed {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        PluginCommand::Validate { dir, strict } => Ok(validate(&cx.cwd.join(dir), strict)),
        PluginCommand::Marketplace { command } => marketplace(&cx, command),
    }
}

fn marketplace(cx: &Context_, command: MarketplaceCommand) -> Result<ExitCode> {
    let mut installer = cx.installer();
    match command {
        MarketplaceCommand::Add { source } => {
            let source = Source::parse_arg(&source, &cx.cwd).map_err(UsageError)?;
            let (name, warnings) = installer.add_marketplace(&source)?;
            for w in warnings {
                eprintln!("warning: {w}");
            }
            println!("Added marketplace {name}.");
        }
        MarketplaceCommand::List => {
            let mut warnings = Vec::new();
            let home_dir = std::env::var_os("HOME").map(PathBuf::from);
            let known = loader::marketplaces(
                &LoadOptions {
                    cadre_home: &cx.home,
                    home_dir: home_dir.as_deref(),
                    project: &cx.cwd,
                    settings: &cx.settings,
                    trusted: cx.trusted,
                    plugin_dirs: &[],
                },
                &mut warnings,
            );
            if known.is_empty() {
                println!(
                    "No marketplaces. `cadre plugin marketplace add <path | git URL | owner/repo>` adds one."
                );
            }
            for (name, (location, from)) in known {
                let count = Marketplace::read(&location)
                    .map(|m| format!("{} plugins", m.plugins.len()))
                    .unwrap_or_else(|e| format!("unreadable: {e}"));
                println!("{name}  {}  ({count}; from {from})", location.display());
            }
            for w in warnings {
                eprintln!("warning: {w}");
            }
        }
        MarketplaceCommand::Remove { name } => {
            installer.remove_marketplace(&name)?;
            println!("Removed marketplace {name}.");
        }
        MarketplaceCommand::Update { name } => {
            let names = match name {
                Some(n) => vec![n],
                None => KnownMarketplaces::load(&installer.plugins_dir())?
                    .marketplaces
                    .into_keys()
                    .collect(),
            };
            for name in names {
                match installer.update_marketplace(&name)? {
                    Some(commit) => println!("Updated marketplace {name} to {commit}."),
                    None => println!("Marketplace {name} is a local folder; read as it is."),
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The id a user means by `spec`: an id found, or `name` of exactly one.
fn resolve_id(set: &PluginSet, spec: &str) -> Result<String> {
    if set.listed.iter().any(|l| l.id == spec) || spec.contains('@') {
        return Ok(spec.to_string());
    }
    let fits: Vec<&str> = set
        .listed
        .iter()
        .map(|l| l.id.as_str())
        .filter(|id| split_id(id).0 == spec)
        .collect();
    match fits.as_slice() {
        [one] => Ok(one.to_string()),
        [] => bail!(UsageError(format!(
            "no plugin {spec} found; `cadre plugin list` shows them"
        ))),
        many => bail!(UsageError(format!(
            "several plugins are named {spec}: {}; give name@marketplace",
            many.join(", ")
        ))),
    }
}

/// Stores `KEY=VALUE` options of plugin `id` (sensitive ones in cadre's
/// private file, the others in the user's `pluginConfigs`), asking at a
/// terminal for required ones still without a value.
fn configure(cx: &Context_, id: &str, manifest: &Manifest, given: &[String]) -> Result<()> {
    use std::io::IsTerminal;
    let mut values: Vec<(String, String)> = Vec::new();
    for kv in given {
        let Some((k, v)) = kv.split_once('=') else {
            bail!(UsageError(format!("--config {kv}: give KEY=VALUE")));
        };
        if !manifest.user_config.iter().any(|o| o.key == k) {
            bail!(UsageError(format!("--config {k}: {id} has no such option")));
        }
        values.push((k.to_string(), v.to_string()));
    }
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    for option in &manifest.user_config {
        if !option.required
            || option.default.is_some()
            || values.iter().any(|(k, _)| *k == option.key)
            || !interactive
        {
            continue;
        }
        eprint!("{} ({}) for {id}: ", option.title, option.key);
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        values.push((
            option.key.clone(),
            line.trim_end_matches(['\r', '\n']).to_string(),
        ));
    }
    let (secret, plain): (Vec<_>, Vec<_>) = values.into_iter().partition(|(k, _)| {
        manifest
            .user_config
            .iter()
            .any(|o| o.key == *k && o.sensitive)
    });
    if !plain.is_empty() {
        set_plugin_options(&cx.home.join("settings.json"), id, &plain)?;
    }
    if !secret.is_empty() {
        save_secrets(&cx.home.join("plugins"), id, &secret)?;
    }
    Ok(())
}

/// `/plugin enable|disable NAME`: writes `enabledPlugins` in the user's
/// settings; the running session keeps its plugins (as Claude Code's
/// without `/reload-plugins`).
pub fn switch(runtime: &cadre_core::driver::SessionBuilder, name: &str, on: bool) -> String {
    let id = match resolve_id(&runtime.plugins, name) {
        Ok(id) => id,
        Err(e) => return e.to_string(),
    };
    let file = InstallScope::User.settings_file(&runtime.home, &runtime.cwd);
    match set_enabled(&file, &id, Some(on)) {
        Ok(()) => format!(
            "{} {id} in {}; new sessions {} it",
            if on { "enabled" } else { "disabled" },
            file.display(),
            if on { "load" } else { "leave out" }
        ),
        Err(e) => format!("cannot change {id}: {e}"),
    }
}

/// The text of `cadre plugin list` (and `/plugin`).
pub fn list_text(set: &PluginSet) -> String {
    let mut out = String::new();
    if set.listed.is_empty() {
        out.push_str("No plugins. `cadre plugin marketplace add` then `cadre plugin install` adds one; --plugin-dir DIR loads a folder for one session.\n");
    }
    for l in &set.listed {
        out.push_str(&format!(
            "{}  {}  {}  {}\n",
            l.id,
            l.version.as_deref().unwrap_or("-"),
            if l.enabled { "enabled" } else { "disabled" },
            l.origin
        ));
        if let Some(note) = &l.note {
            out.push_str(&format!("    {note}\n"));
        }
        if let Some(p) = set.plugins.iter().find(|p| p.id == l.id)
            && !p.unsupported.is_empty()
        {
            out.push_str(&format!(
                "    not applied by cadre: {}\n",
                p.unsupported.join(", ")
            ));
        }
    }
    if !set.warnings.is_empty() {
        out.push_str("warnings:\n");
        for w in &set.warnings {
            out.push_str(&format!("  {w}\n"));
        }
    }
    out
}

/// `cadre plugin validate DIR`: exit 1 on errors (and on warnings with `strict`).
fn validate(dir: &Path, strict: bool) -> ExitCode {
    let mut errors: Vec<String> = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    let mut checked = false;
    if dir.join(MARKETPLACE_PATH).is_file() {
        checked = true;
        match Marketplace::read(dir) {
            Ok(m) => {
                warnings.extend(m.warnings.iter().cloned());
                for entry in &m.plugins {
                    if let Source::Relative(rel) = &entry.source
                        && let Err(why) = m.local_dir(rel)
                    {
                        errors.push(format!(
                            "{}: plugin {}: {why}",
                            dir.join(MARKETPLACE_PATH).display(),
                            entry.name
                        ));
                    }
                }
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    if !checked
        || dir
            .join(cadre_core::plugins::manifest::MANIFEST_PATH)
            .is_file()
    {
        match Manifest::read(dir) {
            Err(e) => errors.push(e.to_string()),
            Ok(manifest) => {
                if let Some(m) = &manifest {
                    warnings.extend(m.warnings.iter().cloned());
                    let mut paths: Vec<&str> = m.skills.iter().map(String::as_str).collect();
                    for list in [&m.commands, &m.agents, &m.output_styles]
                        .into_iter()
                        .flatten()
                    {
                        paths.extend(list.iter().map(String::as_str));
                    }
                    for c in m.hooks.iter().chain(&m.mcp_servers) {
                        if let ManifestConfig::Path(p) = c {
                            paths.push(p);
                        }
                    }
                    for p in paths {
                        match resolve_under(dir, p) {
                            Err(why) => errors.push(format!("{}: {why}", m.path.display())),
                            Ok(None) => {
                                warnings.push(format!("{}: `{p}` does not exist", m.path.display()))
                            }
                            Ok(Some(_)) => {}
                        }
                    }
                    if !m.unsupported.is_empty() {
                        warnings.push(format!(
                            "{}: cadre does not apply {}",
                            m.path.display(),
                            m.unsupported.join(", ")
                        ));
                    }
                }
                // The default folders: a link out of the plugin is refused too.
                let data = std::env::temp_dir().join("cadre-validate-data");
                match Plugin::read(dir, None, "validate", &data) {
                    Ok((_, _, w)) => {
                        for w in w {
                            if w.contains("refused") {
                                if !errors.iter().any(|e| w.contains(e.as_str())) {
                                    errors.push(w);
                                }
                            } else if !warnings.contains(&w) {
                                warnings.push(w);
                            }
                        }
                    }
                    Err(e) => {
                        let e = e.to_string();
                        if !errors.contains(&e) {
                            errors.push(e);
                        }
                    }
                }
            }
        }
    }
    for e in &errors {
        println!("error: {e}");
    }
    for w in &warnings {
        println!("{}: {w}", if strict { "error" } else { "warning" });
    }
    if errors.is_empty() && (warnings.is_empty() || !strict) {
        println!("{} is valid.", dir.display());
        ExitCode::SUCCESS
    } else {
        println!("Validation failed.");
        ExitCode::from(1)
    }
}
