//! Which plugins a session loads, and what each holds. Candidates:
//! `--plugin-dir` folders, the installs recorded in Claude Code's
//! `~/.claude/plugins/` and cadre's `$CADRE_HOME/plugins/`, plugins enabled
//! from a known marketplace's local folder, and folders dropped into
//! `$CADRE_HOME/plugins/<name>/`. `enabledPlugins` of every settings scope
//! decides: project beats user, local beats project, managed `false`
//! blocks; a project's `true` (and a project's marketplaces) need trust.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::manifest::{Manifest, ManifestConfig, resolve_under, valid_plugin_name};
use super::marketplace::{Marketplace, Source};
use super::state::{InstalledPlugins, KnownMarketplaces, data_dir_name, load_secrets};
use super::{ComponentConfig, Plugin, PluginError, PluginSet, RESERVED_DIRS};
use crate::config::{Settings, SettingsScope};

/// Where to look, and what decides.
#[derive(Debug, Clone, Copy)]
pub struct LoadOptions<'a> {
    /// `$CADRE_HOME`.
    pub cadre_home: &'a Path,
    /// The user's home (`~/.claude/plugins/`), when known.
    pub home_dir: Option<&'a Path>,
    /// The project folder.
    pub project: &'a Path,
    /// The settings files, loaded.
    pub settings: &'a Settings,
    /// The folder is trusted (its settings may enable plugins).
    pub trusted: bool,
    /// `--plugin-dir` folders, for this session only.
    pub plugin_dirs: &'a [PathBuf],
}

/// One plugin found, loaded or not.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedPlugin {
    /// `name@marketplace` (a dropped-in folder: its name).
    pub id: String,
    /// Its folder.
    pub root: PathBuf,
    /// Its version, when known.
    pub version: Option<String>,
    /// Where it comes from (`cadre install (user)`, `--plugin-dir`, …).
    pub origin: String,
    /// It loads in this session.
    pub enabled: bool,
    /// Why it does not load, or what it lacks.
    pub note: Option<String>,
}

impl<'a> LoadOptions<'a> {
    /// cadre's own plugins folder.
    pub fn cadre_plugins(&self) -> PathBuf {
        self.cadre_home.join("plugins")
    }

    /// Claude Code's plugins folder.
    pub fn claude_plugins(&self) -> Option<PathBuf> {
        self.home_dir.map(|h| h.join(".claude").join("plugins"))
    }
}

/// A settings decision about one plugin id.
#[derive(Debug, Clone)]
struct Decision {
    on: bool,
    path: PathBuf,
}

/// The `enabledPlugins` decisions, and the project entries held back for
/// trust: in an untrusted folder a project's `true` would run its code, and
/// its `false` could turn off a plugin of the user's (a guard hook), as
/// `disableAllHooks` could; neither applies until the folder is trusted.
fn decisions(
    settings: &Settings,
    trusted: bool,
) -> (BTreeMap<String, Decision>, Vec<(String, PathBuf)>) {
    let mut out: BTreeMap<String, Decision> = BTreeMap::new();
    let mut held = Vec::new();
    let mut blocked = BTreeMap::new();
    for j in &settings.json {
        for (id, on) in &j.settings.enabled_plugins {
            let project = matches!(j.scope, SettingsScope::Project | SettingsScope::Local);
            if project && !trusted {
                held.push((id.clone(), j.path.clone()));
                continue;
            }
            if j.scope == SettingsScope::Managed && !on {
                blocked.insert(id.clone(), j.path.clone());
            }
            out.insert(
                id.clone(),
                Decision {
                    on: *on,
                    path: j.path.clone(),
                },
            );
        }
    }
    for (id, path) in blocked {
        out.insert(id, Decision { on: false, path });
    }
    (out, held)
}

/// The known marketplaces: cadre's, Claude Code's, then the settings files'
/// `extraKnownMarketplaces` (a project's only when trusted) → (location,
/// where it is recorded); what cannot be used goes to `warnings`.
pub fn marketplaces(
    opts: &LoadOptions,
    warnings: &mut Vec<String>,
) -> BTreeMap<String, (PathBuf, String)> {
    // Settings entries first, a later (higher-precedence) file winning a name
    // whole; the marketplaces you added (cadre's, Claude Code's) win over them.
    let mut out = BTreeMap::new();
    let mut held = Vec::new();
    for j in &opts.settings.json {
        for (name, entry) in &j.settings.extra_marketplaces {
            if j.scope.is_trusted() || opts.trusted {
                let location = match entry.get("source").map(Source::from_json) {
                    Some(Ok(Source::Directory(p))) => opts.project.join(p),
                    Some(Ok(Source::File(p))) => opts.project.join(p),
                    // Git sources are fetched by `cadre plugin marketplace add`.
                    _ => continue,
                };
                out.insert(name.clone(), (location, j.path.display().to_string()));
            } else {
                held.push(format!("{name} ({})", j.path.display()));
            }
        }
    }
    for (dir, label) in [
        (opts.claude_plugins(), "Claude Code"),
        (Some(opts.cadre_plugins()), "cadre"),
    ] {
        let Some(dir) = dir else { continue };
        match KnownMarketplaces::load(&dir) {
            Ok(known) => {
                for (name, r) in known.marketplaces {
                    out.insert(name, (r.install_location, label.to_string()));
                }
            }
            Err(e) => warnings.push(format!("{e}; its marketplaces are ignored")),
        }
    }
    if !held.is_empty() {
        warnings.push(format!(
            "marketplaces registered by project settings not used: {} ({}; `cadre config trust` or --trust)",
            held.join(", "),
            crate::config::UNTRUSTED_WHY
        ));
    }
    out
}

/// A candidate plugin folder.
struct Candidate {
    id: String,
    name: Option<String>,
    root: PathBuf,
    data_dir: PathBuf,
    version: Option<String>,
    origin: String,
    /// Loaded whatever the settings say (`--plugin-dir`).
    forced: bool,
}

impl PluginSet {
    /// The plugins a session in `opts.project` loads, with every plugin
    /// found listed and every problem a warning (never an error).
    pub fn load(opts: &LoadOptions) -> PluginSet {
        let mut set = PluginSet::default();
        let (decided, held) = decisions(opts.settings, opts.trusted);
        let known = marketplaces(opts, &mut set.warnings);
        let cadre_plugins = opts.cadre_plugins();
        let mut candidates: Vec<Candidate> = Vec::new();
        let mut seen_ids = BTreeSet::new();
        let mut pending = Vec::new();

        for dir in opts.plugin_dirs {
            let root = opts.project.join(dir);
            let name = root
                .canonicalize()
                .ok()
                .and_then(|r| r.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_default();
            let manifest_name = Manifest::read(&root).ok().flatten().map(|m| m.name);
            let name = manifest_name.unwrap_or(name);
            let id = format!("{name}@inline");
            candidates.push(Candidate {
                data_dir: cadre_plugins.join("data").join(data_dir_name(&id)),
                id,
                name: Some(name),
                root,
                version: None,
                origin: "--plugin-dir".into(),
                forced: true,
            });
        }

        // cadre's installs first: an id installed by both is cadre's.
        for (dir, label) in [
            (Some(cadre_plugins.clone()), "cadre"),
            (opts.claude_plugins(), "Claude Code"),
        ] {
            let Some(dir) = dir else { continue };
            let installed = match InstalledPlugins::load(&dir) {
                Ok(i) => i,
                Err(e) => {
                    set.warnings
                        .push(format!("{e}; the plugins it records are ignored"));
                    continue;
                }
            };
            for id in installed.plugins.keys() {
                let Some(record) = installed.record_for(id, opts.project) else {
                    continue;
                };
                if !seen_ids.insert(id.clone()) {
                    continue;
                }
                candidates.push(Candidate {
                    id: id.clone(),
                    name: id.split('@').next().map(str::to_string),
                    root: record.install_path.clone(),
                    data_dir: dir.join("data").join(data_dir_name(id)),
                    version: record.version.clone(),
                    origin: format!("{label} install ({})", record.scope),
                    forced: false,
                });
            }
        }

        // Enabled but not installed: loaded in place from a marketplace's folder.
        for (id, d) in &decided {
            if !d.on || seen_ids.contains(id) {
                continue;
            }
            let Some((name, market)) = id.split_once('@') else {
                continue;
            };
            let Some((location, _)) = known.get(market) else {
                if !RESERVED_DIRS.contains(&name) && !cadre_plugins.join(name).is_dir() {
                    set.warnings.push(format!(
                        "plugin {id} is enabled in {} but not installed, and no marketplace {market} is known; `cadre plugin install {id}` installs it",
                        d.path.display()
                    ));
                }
                continue;
            };
            let found = Marketplace::read(location).map_err(|e| e.to_string()).and_then(|m| {
                let entry = m
                    .entry(name)
                    .ok_or_else(|| format!("marketplace {market} has no plugin {name}"))?;
                match &entry.source {
                    Source::Relative(rel) => Ok((m.local_dir(rel)?, entry.version.clone())),
                    _ => Err(format!(
                        "its source is not a folder of the marketplace; `cadre plugin install {id}` installs it"
                    )),
                }
            });
            match found {
                Ok((root, version)) => {
                    seen_ids.insert(id.clone());
                    candidates.push(Candidate {
                        id: id.clone(),
                        name: Some(name.to_string()),
                        root,
                        data_dir: cadre_plugins.join("data").join(data_dir_name(id)),
                        version,
                        origin: format!("marketplace {market} (in place)"),
                        forced: false,
                    });
                }
                Err(why) => set.warnings.push(format!(
                    "plugin {id} (enabled in {}) not loaded: {why}",
                    d.path.display()
                )),
            }
        }

        // Folders dropped into $CADRE_HOME/plugins/<name>/ load as always.
        let mut dropped: Vec<PathBuf> = std::fs::read_dir(&cadre_plugins)
            .map(|entries| entries.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        dropped.sort();
        for dir in dropped.into_iter().filter(|d| d.is_dir()) {
            let Some(name) = dir.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
                continue;
            };
            if RESERVED_DIRS.contains(&name.as_str()) || name.starts_with('.') {
                continue;
            }
            candidates.push(Candidate {
                data_dir: cadre_plugins.join("data").join(&name),
                id: name.clone(),
                name: Some(name),
                root: dir,
                version: None,
                origin: "dropped into $CADRE_HOME/plugins".into(),
                forced: false,
            });
        }

        for c in candidates {
            let mut listed = ListedPlugin {
                id: c.id.clone(),
                root: c.root.clone(),
                version: c.version.clone(),
                origin: c.origin.clone(),
                enabled: false,
                note: None,
            };
            let read = Plugin::read(&c.root, c.name.as_deref(), &c.id, &c.data_dir);
            let (mut plugin, manifest, warnings) = match read {
                Ok(r) => r,
                Err(e) => {
                    set.warnings
                        .push(format!("plugin {} not loaded: {e}", c.id));
                    listed.note = Some(e.to_string());
                    set.listed.push(listed);
                    continue;
                }
            };
            if plugin.version.is_none() {
                plugin.version = c.version.clone();
            }
            listed.version = plugin.version.clone();
            let default_on = manifest
                .as_ref()
                .and_then(|m| m.default_enabled)
                .unwrap_or(true);
            let on = c.forced
                || match decided.get(&c.id) {
                    Some(d) => d.on,
                    None => default_on,
                };
            if !on {
                listed.note = Some(match decided.get(&c.id) {
                    Some(d) => format!("disabled by {}", d.path.display()),
                    None if held.iter().any(|(id, _)| *id == c.id) => {
                        "enabled only by the settings of an untrusted project".into()
                    }
                    None => "defaultEnabled is false".into(),
                });
                set.listed.push(listed);
                continue;
            }
            if let Some(other) = set.get(&plugin.name) {
                let why = format!(
                    "another plugin named {} ({}) is loaded",
                    plugin.name, other.id
                );
                set.warnings
                    .push(format!("plugin {} not loaded: {why}", c.id));
                listed.note = Some(why);
                set.listed.push(listed);
                continue;
            }
            plugin.user_config = user_config(opts, &c.id, manifest.as_ref(), &mut set.warnings);
            set.warnings.extend(warnings);
            if !plugin.unsupported.is_empty() {
                set.warnings.push(format!(
                    "plugin {}: cadre does not apply {}",
                    c.id,
                    plugin.unsupported.join(", ")
                ));
            }
            // `${CLAUDE_PLUGIN_DATA}` exists for the plugin's hooks and servers to write in.
            if let Err(e) = super::state::create_private_dir(&plugin.data_dir) {
                set.warnings.push(format!("plugin {}: {e}", c.id));
            }
            listed.enabled = true;
            set.listed.push(listed);
            let deps = manifest.map(|m| m.dependencies).unwrap_or_default();
            set.plugins.push(plugin);
            if !deps.is_empty() {
                pending.push((c.id.clone(), deps));
            }
        }
        set.check_dependencies(&pending);
        if !held.is_empty() {
            let names: Vec<String> = held
                .iter()
                .map(|(id, path)| format!("{id} ({})", path.display()))
                .collect();
            set.warnings.push(format!(
                "enabledPlugins of project settings not applied: {} ({}; `cadre config trust` or --trust)",
                names.join(", "),
                crate::config::UNTRUSTED_WHY
            ));
        }
        set
    }

    /// Drops plugins whose `dependencies` are not loaded (or not at a
    /// matching version), until none is left wanting.
    fn check_dependencies(&mut self, pending: &[(String, Vec<super::manifest::Dependency>)]) {
        loop {
            let mut dropped = None;
            'plugins: for (id, deps) in pending {
                let Some(plugin) = self.plugins.iter().find(|p| &p.id == id) else {
                    continue;
                };
                for dep in deps {
                    let name = dep.name.split('@').next().unwrap_or(&dep.name);
                    let why = match self.get(name) {
                        None => Some(format!(
                            "it needs the plugin {}, which is not loaded",
                            dep.name
                        )),
                        Some(found) => dep.version.as_deref().and_then(|want| {
                            version_problem(want, found.version.as_deref())
                                .map(|w| format!("it needs {} {want}: {w}", dep.name))
                        }),
                    };
                    if let Some(why) = why {
                        dropped = Some((plugin.id.clone(), why));
                        break 'plugins;
                    }
                }
            }
            let Some((id, why)) = dropped else { break };
            self.plugins.retain(|p| p.id != id);
            self.warnings.push(format!("plugin {id} not loaded: {why}"));
            for l in self.listed.iter_mut().filter(|l| l.id == id) {
                l.enabled = false;
                l.note = Some(why.clone());
            }
        }
    }
}

/// Why `have` does not meet the semver requirement `want`, if it does not.
fn version_problem(want: &str, have: Option<&str>) -> Option<String> {
    let Ok(req) = semver::VersionReq::parse(want) else {
        return Some(format!("`{want}` is not a version requirement"));
    };
    match have.map(semver::Version::parse) {
        Some(Ok(v)) if req.matches(&v) => None,
        Some(Ok(v)) => Some(format!("version {v} is loaded")),
        _ => Some("its version is not known".into()),
    }
}

/// The `userConfig` values of plugin `id`: user and managed settings'
/// `pluginConfigs[id].options` (never a project's), the sensitive ones
/// from cadre's private file, then the manifest's defaults.
fn user_config(
    opts: &LoadOptions,
    id: &str,
    manifest: Option<&Manifest>,
    warnings: &mut Vec<String>,
) -> Vec<(String, String)> {
    let Some(manifest) = manifest.filter(|m| !m.user_config.is_empty()) else {
        return Vec::new();
    };
    let mut values: BTreeMap<String, String> = BTreeMap::new();
    for j in opts.settings.json.iter().filter(|j| j.scope.is_trusted()) {
        let Some(Value::Object(options)) = j
            .settings
            .plugin_configs
            .get(id)
            .and_then(|c| c.get("options"))
        else {
            continue;
        };
        for (k, v) in options {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            values.insert(k.clone(), text);
        }
    }
    values.extend(load_secrets(&opts.cadre_plugins(), id));
    let mut out = Vec::new();
    for option in &manifest.user_config {
        match values.get(&option.key).cloned().or(option.default.clone()) {
            Some(v) => out.push((option.key.clone(), v)),
            None if option.required => warnings.push(format!(
                "plugin {id}: the option {} ({}) has no value; `cadre plugin enable {id} --config {}=…` sets it",
                option.key, option.title, option.key
            )),
            None => {}
        }
    }
    out
}

/// Components cadre reads but does not apply, found in a plugin's folder.
const UNSUPPORTED_PARTS: &[(&str, &str)] = &[
    (".lsp.json", "LSP servers (.lsp.json)"),
    ("themes", "themes"),
    ("monitors", "monitors"),
    ("workflows", "workflows"),
];

impl Plugin {
    /// Reads the plugin folder `root`: its manifest (if any) and every
    /// component in the folders the manifest names or the default ones.
    /// `name` (from the id or marketplace entry) wins over the manifest's.
    /// Paths leaving the root are refused with a warning; a manifest that
    /// breaks the schema is an `Err` naming the file.
    pub fn read(
        root: &Path,
        name: Option<&str>,
        id: &str,
        data_dir: &Path,
    ) -> Result<(Plugin, Option<Manifest>, Vec<String>), PluginError> {
        if !root.is_dir() {
            return Err(PluginError::Other(format!(
                "{} is not a folder",
                root.display()
            )));
        }
        let manifest = Manifest::read(root)?;
        let fallback = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = name
            .map(str::to_string)
            .or_else(|| manifest.as_ref().map(|m| m.name.clone()))
            .unwrap_or(fallback);
        if !valid_plugin_name(&name) {
            return Err(PluginError::Other(format!(
                "{}: {name:?} is not a plugin name (letters, digits, `-` and `_`)",
                root.display()
            )));
        }
        let mut warnings = manifest
            .as_ref()
            .map(|m| m.warnings.clone())
            .unwrap_or_default();
        let shown = manifest
            .as_ref()
            .map(|m| m.path.display().to_string())
            .unwrap_or_else(|| root.display().to_string());
        let resolve = |rel: &str, warnings: &mut Vec<String>| match resolve_under(root, rel) {
            Ok(found) => found,
            Err(why) => {
                warnings.push(format!("plugin {id}: {shown}: {why}; refused"));
                None
            }
        };
        let default = |rel: &str, warnings: &mut Vec<String>| -> Vec<PathBuf> {
            match resolve_under(root, rel) {
                Ok(found) => found.into_iter().collect(),
                Err(why) => {
                    warnings.push(format!("plugin {id}: {}: {why}; refused", root.display()));
                    Vec::new()
                }
            }
        };
        let listed =
            |given: &Option<Vec<String>>, fallback: &str, warnings: &mut Vec<String>| match given {
                Some(paths) => paths
                    .iter()
                    .filter_map(|p| resolve(p, warnings))
                    .collect::<Vec<_>>(),
                None => default(fallback, warnings),
            };
        let m = manifest.clone().unwrap_or_default();
        let agents = listed(&m.agents, "agents", &mut warnings);
        let commands = listed(&m.commands, "commands", &mut warnings);
        let output_styles = listed(&m.output_styles, "output-styles", &mut warnings);
        let mut skills = default("skills", &mut warnings);
        for p in &m.skills {
            if let Some(found) = resolve(p, &mut warnings)
                && !skills.contains(&found)
            {
                skills.push(found);
            }
        }
        if skills.is_empty() && m.skills.is_empty() && root.join("SKILL.md").is_file() {
            skills.push(root.to_path_buf());
        }
        let configs = |given: &[ManifestConfig], fallback: &str, warnings: &mut Vec<String>| {
            let mut out: Vec<ComponentConfig> = default(fallback, warnings)
                .into_iter()
                .filter(|p| p.is_file())
                .map(ComponentConfig::File)
                .collect();
            for c in given {
                let next = match c {
                    ManifestConfig::Inline(v) => ComponentConfig::Inline(v.clone()),
                    ManifestConfig::Path(p) => match resolve(p, warnings) {
                        Some(found) if found.is_file() => ComponentConfig::File(found),
                        _ => continue,
                    },
                };
                if !out.contains(&next) {
                    out.push(next);
                }
            }
            out
        };
        let hooks = configs(&m.hooks, "hooks/hooks.json", &mut warnings);
        let mcp_servers = configs(&m.mcp_servers, ".mcp.json", &mut warnings);
        let bin_dir = default("bin", &mut warnings)
            .into_iter()
            .find(|b| b.is_dir());
        let mut unsupported = m.unsupported.clone();
        for (part, label) in UNSUPPORTED_PARTS {
            if root.join(part).exists() && !unsupported.iter().any(|u| u.starts_with(label)) {
                unsupported.push((*label).to_string());
            }
        }
        if let Some(keys) = settings_keys(root) {
            unsupported.push(format!("settings.json ({keys})"));
        }
        let plugin = Plugin {
            name,
            id: id.to_string(),
            root: root.to_path_buf(),
            data_dir: data_dir.to_path_buf(),
            agents,
            skills,
            commands,
            hooks,
            mcp_servers,
            output_styles,
            bin_dir,
            user_config: Vec::new(),
            version: m.version.clone(),
            description: m.description.clone(),
            unsupported,
        };
        Ok((plugin, manifest, warnings))
    }

    /// `text` with `${CLAUDE_PLUGIN_ROOT}`, `${CLAUDE_PLUGIN_DATA}` and
    /// `${user_config.KEY}` replaced (other `${…}` are left for the shell).
    pub fn substitute(&self, text: &str) -> String {
        let mut out = self.substitute_paths(text);
        for (k, v) in &self.user_config {
            out = out.replace(&format!("${{user_config.{k}}}"), v);
        }
        out
    }

    /// `text` with `${CLAUDE_PLUGIN_ROOT}` and `${CLAUDE_PLUGIN_DATA}`
    /// replaced: what a shell-form hook command gets (user options never
    /// go into a shell command line).
    pub fn substitute_paths(&self, text: &str) -> String {
        text.replace("${CLAUDE_PLUGIN_ROOT}", &self.root.to_string_lossy())
            .replace("${CLAUDE_PLUGIN_DATA}", &self.data_dir.to_string_lossy())
    }

    /// The variables a plugin's hooks and servers get in their environment.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![
            (
                "CLAUDE_PLUGIN_ROOT".to_string(),
                self.root.to_string_lossy().into_owned(),
            ),
            (
                "CLAUDE_PLUGIN_DATA".to_string(),
                self.data_dir.to_string_lossy().into_owned(),
            ),
        ];
        for (k, v) in &self.user_config {
            env.push((
                format!("CLAUDE_PLUGIN_OPTION_{}", k.to_ascii_uppercase()),
                v.clone(),
            ));
        }
        env
    }
}

/// The keys of a plugin's own `settings.json`, which cadre does not apply.
fn settings_keys(root: &Path) -> Option<String> {
    let path = resolve_under(root, "settings.json").ok()??;
    let text = crate::small_file::read_small_text(&path, 1024 * 1024).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let keys: Vec<String> = v.as_object()?.keys().cloned().collect();
    Some(if keys.is_empty() {
        "empty".into()
    } else {
        keys.join(", ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{JsonSettings, LoadedJson};

    use crate::small_file::write_with_dirs as write;

    fn settings(files: &[(SettingsScope, &str)]) -> Settings {
        let mut s = Settings::default();
        for (i, (scope, text)) in files.iter().enumerate() {
            let path = PathBuf::from(format!("/s{i}.json"));
            s.json.push(LoadedJson {
                scope: *scope,
                settings: JsonSettings::parse(&path, text).unwrap(),
                path,
            });
        }
        s
    }

    /// A plugin installed Claude Code's way under `home/.claude/plugins`.
    fn install(home: &Path, name: &str, manifest: &str) -> PathBuf {
        let root = home.join(format!(".claude/plugins/cache/m/{name}/1.0.0"));
        write(&root.join(".claude-plugin/plugin.json"), manifest);
        let record = serde_json::json!({"version": 2, "plugins": {format!("{name}@m"): [
            {"scope": "user", "installPath": root, "version": "1.0.0"}]}});
        let state = home.join(".claude/plugins/installed_plugins.json");
        let mut all: Value = std::fs::read_to_string(&state)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(serde_json::json!({"version": 2, "plugins": {}}));
        all["plugins"][format!("{name}@m")] = record["plugins"][format!("{name}@m")].clone();
        write(&state, &all.to_string());
        root
    }

    fn load(home: &Path, settings: &Settings, trusted: bool) -> PluginSet {
        PluginSet::load(&LoadOptions {
            cadre_home: &home.join("cadre"),
            home_dir: Some(home),
            project: &home.join("proj"),
            settings,
            trusted,
            plugin_dirs: &[],
        })
    }

    #[test]
    fn scopes_decide_and_a_project_needs_trust() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        install(home, "fmt", r#"{"name": "fmt", "defaultEnabled": false}"#);
        let names = |set: &PluginSet| set.plugins.iter().map(|p| p.id.clone()).collect::<Vec<_>>();
        // Not enabled anywhere and defaultEnabled false: listed, not loaded.
        let set = load(home, &settings(&[]), false);
        assert!(set.plugins.is_empty());
        assert_eq!(set.listed.len(), 1);
        let user_on = (
            SettingsScope::User,
            r#"{"enabledPlugins": {"fmt@m": true}}"#,
        );
        let project_on = (
            SettingsScope::Project,
            r#"{"enabledPlugins": {"fmt@m": true}}"#,
        );
        let local_off = (
            SettingsScope::Local,
            r#"{"enabledPlugins": {"fmt@m": false}}"#,
        );
        let managed_off = (
            SettingsScope::Managed,
            r#"{"enabledPlugins": {"fmt@m": false}}"#,
        );
        assert_eq!(names(&load(home, &settings(&[user_on]), false)), ["fmt@m"]);
        assert!(names(&load(home, &settings(&[user_on, local_off]), true)).is_empty());
        assert!(names(&load(home, &settings(&[user_on, managed_off]), true)).is_empty());
        let untrusted = load(home, &settings(&[project_on]), false);
        assert!(untrusted.plugins.is_empty());
        assert!(
            untrusted
                .warnings
                .iter()
                .any(|w| w.contains("fmt@m") && w.contains("trust")),
            "{:?}",
            untrusted.warnings
        );
        assert_eq!(
            names(&load(home, &settings(&[project_on]), true)),
            ["fmt@m"]
        );
    }

    #[test]
    fn components_come_from_default_and_manifest_folders() {
        let dir = tempfile::tempdir().unwrap();
        let root = install(
            dir.path(),
            "kit",
            r#"{"name": "kit", "skills": "./more", "commands": ["./cmds/a.md"], "agents": "../../../x",
                "lspServers": {}, "userConfig": {"KEY": {"type": "string", "default": "d"}}}"#,
        );
        for d in ["skills/s", "more/t", "cmds", "agents", "bin", "hooks"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        write(&root.join("cmds/a.md"), "x");
        write(&root.join("hooks/hooks.json"), r#"{"hooks": {}}"#);
        write(&root.join(".mcp.json"), r#"{"mcpServers": {}}"#);
        write(&root.join("settings.json"), r#"{"agent": "x"}"#);
        let set = load(dir.path(), &settings(&[]), false);
        let p = &set.plugins[0];
        assert_eq!(p.name, "kit");
        assert_eq!(p.skills.len(), 2);
        assert_eq!(p.commands.len(), 1);
        assert!(p.agents.is_empty(), "the escaping path is refused");
        assert_eq!(p.hooks.len(), 1);
        assert_eq!(p.mcp_servers.len(), 1);
        assert!(p.bin_dir.is_some());
        assert_eq!(p.user_config, [("KEY".to_string(), "d".to_string())]);
        assert_eq!(
            p.substitute("${user_config.KEY}/${CLAUDE_PLUGIN_ROOT}"),
            format!("d/{}", root.display())
        );
        let all = set.warnings.join("\n");
        assert!(all.contains("leaves the plugin root"), "{all}");
        assert!(
            all.contains("LSP servers") && all.contains("settings.json (agent)"),
            "{all}"
        );
    }

    #[test]
    fn bin_folders_go_last_on_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = install(dir.path(), "kit", r#"{"name": "kit"}"#);
        std::fs::create_dir_all(root.join("bin")).unwrap();
        let set = load(dir.path(), &settings(&[]), false);
        let real = root.join("bin").canonicalize().unwrap();
        assert_eq!(
            set.command_path(Some("/usr/bin")),
            Some(format!("/usr/bin:{}", real.display()))
        );
        assert_eq!(PluginSet::default().command_path(Some("/usr/bin")), None);
    }

    #[test]
    fn dependencies_must_be_loaded() {
        let dir = tempfile::tempdir().unwrap();
        install(
            dir.path(),
            "app",
            r#"{"name": "app", "dependencies": [{"name": "lib", "version": "^2"}]}"#,
        );
        install(dir.path(), "lib", r#"{"name": "lib", "version": "1.0.0"}"#);
        let set = load(dir.path(), &settings(&[]), false);
        let ids: Vec<&str> = set.plugins.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["lib@m"]);
        assert!(
            set.warnings
                .iter()
                .any(|w| w.contains("app@m") && w.contains("lib ^2")),
            "{:?}",
            set.warnings
        );
        assert_eq!(version_problem("^1", Some("1.2.0")), None);
    }
}
