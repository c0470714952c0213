//! What the `cadre plugin …` commands do to the install state: add, update
//! and remove marketplaces; install, update and uninstall plugin versions
//! (copied into `cache/<marketplace>/<plugin>/<version>/`, so an update
//! never changes a running session); enable and disable them in a scope's
//! settings file. Only cadre's own `$CADRE_HOME/plugins/` is written;
//! Claude Code's `~/.claude/plugins/` is read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::PluginError;
use super::manifest::{Manifest, valid_plugin_name};
use super::marketplace::{Marketplace, Source, copy_plugin, git, git_clone, git_update};
use super::state::{
    InstallRecord, InstalledPlugins, KnownMarketplaces, MarketplaceRecord, create_private_dir,
    data_dir_name, now_iso, set_enabled,
};

/// Where an install applies, and which settings file says it is enabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstallScope {
    /// Every project (`$CADRE_HOME/settings.json`).
    User,
    /// This project, shared (`.claude/settings.json`).
    Project,
    /// This project, for this user only (`.claude/settings.local.json`).
    Local,
}

impl InstallScope {
    /// `user`, `project` or `local`.
    pub fn as_str(self) -> &'static str {
        match self {
            InstallScope::User => "user",
            InstallScope::Project => "project",
            InstallScope::Local => "local",
        }
    }

    /// The settings file this scope's `enabledPlugins` is written to.
    pub fn settings_file(self, cadre_home: &Path, project: &Path) -> PathBuf {
        match self {
            InstallScope::User => cadre_home.join("settings.json"),
            InstallScope::Project => project.join(".claude").join("settings.json"),
            InstallScope::Local => project.join(".claude").join("settings.local.json"),
        }
    }
}

impl std::str::FromStr for InstallScope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "user" => Ok(InstallScope::User),
            "project" => Ok(InstallScope::Project),
            "local" => Ok(InstallScope::Local),
            other => Err(format!("unknown scope {other:?} (user, project or local)")),
        }
    }
}

/// cadre's plugins folder and the marketplaces it can install from.
#[derive(Debug, Clone)]
pub struct Installer {
    /// `$CADRE_HOME`.
    pub cadre_home: PathBuf,
    /// Marketplace name → its folder (or catalogue file), cadre's known
    /// ones over Claude Code's and the settings files'.
    pub marketplaces: BTreeMap<String, PathBuf>,
}

fn other(message: impl Into<String>) -> PluginError {
    PluginError::Other(message.into())
}

/// A plugin version that was installed or updated.
#[derive(Debug, Clone)]
pub struct Installed {
    /// `name@marketplace`.
    pub id: String,
    /// The version copied.
    pub version: String,
    /// Its folder in the cache.
    pub path: PathBuf,
    /// Its manifest, if it has one.
    pub manifest: Option<Manifest>,
    /// Files left out of the copy (links and such).
    pub skipped: Vec<String>,
    /// The git commit it was copied from, when it came from git.
    pub commit: Option<String>,
}

impl Installer {
    /// cadre's plugins folder.
    pub fn plugins_dir(&self) -> PathBuf {
        self.cadre_home.join("plugins")
    }

    /// Adds a marketplace: a git source is cloned into
    /// `marketplaces/<name>/`, a local folder or file is recorded where it
    /// is. A second marketplace of the same name replaces the first.
    /// Returns its name and the catalogue's warnings.
    pub fn add_marketplace(
        &mut self,
        source: &Source,
    ) -> Result<(String, Vec<String>), PluginError> {
        let dir = self.plugins_dir();
        let markets = dir.join("marketplaces");
        create_private_dir(&markets)?;
        let (location, catalogue) = match source {
            Source::Directory(p) | Source::File(p) => (p.clone(), Marketplace::read(p)?),
            Source::Git {
                url, git_ref, sha, ..
            } => {
                let tmp = markets.join(format!(".clone-{}", std::process::id()));
                let _ = std::fs::remove_dir_all(&tmp);
                git_clone(url, git_ref.as_deref(), sha.as_deref(), &tmp)?;
                let catalogue = match Marketplace::read(&tmp) {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = std::fs::remove_dir_all(&tmp);
                        return Err(e);
                    }
                };
                let dest = markets.join(&catalogue.name);
                let _ = std::fs::remove_dir_all(&dest);
                std::fs::rename(&tmp, &dest)
                    .map_err(|e| other(format!("{}: {e}", dest.display())))?;
                (dest.clone(), Marketplace::read(&dest)?)
            }
            Source::Relative(p) => return Err(other(format!("{p}: not a marketplace source"))),
        };
        let mut known = KnownMarketplaces::load(&dir)?;
        known.marketplaces.insert(
            catalogue.name.clone(),
            MarketplaceRecord {
                source: source.to_json(),
                install_location: location.clone(),
                last_updated: Some(now_iso()),
                auto_update: None,
                extra: Default::default(),
            },
        );
        known.save(&dir)?;
        self.marketplaces.insert(catalogue.name.clone(), location);
        Ok((catalogue.name, catalogue.warnings))
    }

    /// Removes a marketplace of cadre's (and its clone); plugins installed
    /// from it stay installed.
    pub fn remove_marketplace(&mut self, name: &str) -> Result<(), PluginError> {
        let dir = self.plugins_dir();
        let mut known = KnownMarketplaces::load(&dir)?;
        let Some(record) = known.marketplaces.remove(name) else {
            return Err(other(format!("no marketplace {name} was added with cadre")));
        };
        known.save(&dir)?;
        let clones = dir.join("marketplaces");
        if record.install_location.parent() == Some(clones.as_path()) {
            let _ = std::fs::remove_dir_all(&record.install_location);
        }
        self.marketplaces.remove(name);
        Ok(())
    }

    /// Fetches the newest catalogue of a git marketplace of cadre's;
    /// returns its commit (`None` for a local one, read where it is).
    pub fn update_marketplace(&self, name: &str) -> Result<Option<String>, PluginError> {
        let dir = self.plugins_dir();
        let mut known = KnownMarketplaces::load(&dir)?;
        let Some(record) = known.marketplaces.get_mut(name) else {
            return Err(other(format!("no marketplace {name} was added with cadre")));
        };
        let commit = match Source::from_json(&record.source).map_err(other)? {
            Source::Git { git_ref, .. } => {
                Some(git_update(&record.install_location, git_ref.as_deref())?)
            }
            _ => None,
        };
        Marketplace::read(&record.install_location)?;
        record.last_updated = Some(now_iso());
        known.save(&dir)?;
        Ok(commit)
    }

    /// The marketplace offering `name` (the one given, else the only one
    /// that has it), read.
    fn catalogue_for(&self, name: &str, market: Option<&str>) -> Result<Marketplace, PluginError> {
        if let Some(m) = market {
            let location = self.marketplaces.get(m).ok_or_else(|| {
                other(format!(
                    "no marketplace {m} is known; `cadre plugin marketplace add` adds it"
                ))
            })?;
            return Marketplace::read(location);
        }
        let mut found = Vec::new();
        for location in self.marketplaces.values() {
            if let Ok(c) = Marketplace::read(location)
                && c.entry(name).is_some()
            {
                found.push(c);
            }
        }
        match found.len() {
            0 => Err(other(format!(
                "no known marketplace offers a plugin {name}"
            ))),
            1 => Ok(found.remove(0)),
            _ => Err(other(format!(
                "several marketplaces offer {name} ({}); name one: {name}@<marketplace>",
                found
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// Copies the newest version the marketplace offers of `name` into the
    /// cache (unless that version is there already); returns it.
    fn fetch(&self, name: &str, market: Option<&str>) -> Result<Installed, PluginError> {
        if !valid_plugin_name(name) {
            return Err(other(format!("{name:?} is not a plugin name")));
        }
        let catalogue = self.catalogue_for(name, market)?;
        let entry = catalogue
            .entry(name)
            .ok_or_else(|| {
                other(format!(
                    "marketplace {} has no plugin {name}",
                    catalogue.name
                ))
            })?
            .clone();
        let id = format!("{name}@{}", catalogue.name);
        let dir = self.plugins_dir();
        let repos = dir.join("repos");
        let mut clone = None;
        let (source_dir, commit) = match &entry.source {
            Source::Relative(rel) => {
                let src = catalogue.local_dir(rel).map_err(other)?;
                let commit = git(&["rev-parse", "HEAD"], Some(&catalogue.root)).ok();
                (src, commit)
            }
            Source::Directory(p) => (p.clone(), None),
            Source::Git {
                url,
                git_ref,
                sha,
                subdir,
                ..
            } => {
                create_private_dir(&repos)?;
                let tmp = repos.join(format!(".{name}-{}", std::process::id()));
                let _ = std::fs::remove_dir_all(&tmp);
                let commit = git_clone(url, git_ref.as_deref(), sha.as_deref(), &tmp)?;
                clone = Some(tmp.clone());
                let src = match subdir {
                    Some(s) => super::manifest::resolve_under(&tmp, s)
                        .map_err(other)?
                        .ok_or_else(|| other(format!("{url}: no folder {s}")))?,
                    None => tmp,
                };
                (src, Some(commit))
            }
            Source::File(p) => {
                return Err(other(format!(
                    "{}: a plugin source is a folder",
                    p.display()
                )));
            }
        };
        let result = (|| {
            let manifest = Manifest::read(&source_dir)?;
            let version = manifest
                .as_ref()
                .and_then(|m| m.version.clone())
                .or(entry.version.clone())
                .or(commit.as_ref().map(|c| c.chars().take(12).collect()))
                .unwrap_or_else(|| "0.0.0-local".into());
            if !crate::path_segment::is_safe_segment(&version) {
                return Err(other(format!(
                    "{id}: version {version:?} cannot name a folder"
                )));
            }
            let path = dir
                .join("cache")
                .join(&catalogue.name)
                .join(name)
                .join(&version);
            let skipped = if path.is_dir() {
                Vec::new()
            } else {
                copy_plugin(&source_dir, &path)?
            };
            Ok(Installed {
                id: id.clone(),
                version,
                path,
                manifest,
                skipped,
                commit: commit.clone(),
            })
        })();
        if let Some(tmp) = clone {
            let _ = std::fs::remove_dir_all(tmp);
        }
        let mut installed = result?;
        installed.manifest = Manifest::read(&installed.path)?;
        Ok(installed)
    }

    /// Installs `name` (`name@marketplace`) for `scope` in `project`:
    /// copies it into the cache, records it, and enables it in the scope's
    /// settings file.
    pub fn install(
        &self,
        spec: &str,
        scope: InstallScope,
        project: &Path,
    ) -> Result<Installed, PluginError> {
        let (name, market) = split_id(spec);
        let installed = self.fetch(name, market)?;
        let dir = self.plugins_dir();
        let mut state = InstalledPlugins::load(&dir)?;
        let now = now_iso();
        let records = state.plugins.entry(installed.id.clone()).or_default();
        let project_path = (scope != InstallScope::User).then(|| project.to_path_buf());
        records.retain(|r| !(r.scope == scope.as_str() && r.project_path == project_path));
        records.push(InstallRecord {
            scope: scope.as_str().into(),
            install_path: installed.path.clone(),
            version: Some(installed.version.clone()),
            installed_at: Some(now.clone()),
            last_updated: Some(now),
            git_commit_sha: installed.commit.clone(),
            is_local: None,
            project_path,
            extra: Default::default(),
        });
        state.save(&dir)?;
        set_enabled(
            &scope.settings_file(&self.cadre_home, project),
            &installed.id,
            Some(true),
        )?;
        Ok(installed)
    }

    /// Brings every record of `id` to the newest version its marketplace
    /// offers (the marketplace is fetched first when it is cadre's git
    /// clone). Returns the old and new versions when it changed.
    pub fn update(&self, id: &str) -> Result<Option<(String, Installed)>, PluginError> {
        let (name, market) = split_id(id);
        let market = market.ok_or_else(|| other(format!("{id}: give name@marketplace")))?;
        let dir = self.plugins_dir();
        let mut state = InstalledPlugins::load(&dir)?;
        let Some(records) = state.plugins.get(id) else {
            return Err(other(format!("{id} is not installed with cadre")));
        };
        let old = records
            .iter()
            .find_map(|r| r.version.clone())
            .unwrap_or_default();
        // A git marketplace of cadre's is fetched; others are read as they are.
        if KnownMarketplaces::load(&dir)?
            .marketplaces
            .contains_key(market)
        {
            self.update_marketplace(market)?;
        }
        let installed = self.fetch(name, Some(market))?;
        let commit = installed.commit.clone();
        if installed.version == old {
            return Ok(None);
        }
        let now = now_iso();
        if let Some(records) = state.plugins.get_mut(id) {
            for r in records.iter_mut() {
                r.install_path = installed.path.clone();
                r.version = Some(installed.version.clone());
                r.last_updated = Some(now.clone());
                r.git_commit_sha = commit.clone();
            }
        }
        state.save(&dir)?;
        Ok(Some((old, installed)))
    }

    /// Removes `id`'s install for `scope` (any scope when `None`) and its
    /// `enabledPlugins` entry; when no install is left, its cached
    /// versions go, and its data folder unless `keep_data`.
    pub fn uninstall(
        &self,
        id: &str,
        scope: Option<InstallScope>,
        project: &Path,
        keep_data: bool,
    ) -> Result<Vec<InstallScope>, PluginError> {
        let dir = self.plugins_dir();
        let mut state = InstalledPlugins::load(&dir)?;
        let Some(records) = state.plugins.get_mut(id) else {
            return Err(other(format!("{id} is not installed with cadre")));
        };
        let mut removed = Vec::new();
        records.retain(|r| {
            let s: InstallScope = match r.scope.parse() {
                Ok(s) => s,
                Err(_) => return true,
            };
            let here = s == InstallScope::User
                || r.project_path
                    .as_deref()
                    .is_some_and(|p| super::state::same_folder(p, project));
            if here && scope.is_none_or(|want| want == s) {
                removed.push(s);
                false
            } else {
                true
            }
        });
        if removed.is_empty() {
            return Err(other(format!("{id} has no install for that scope here")));
        }
        let gone = records.is_empty();
        if gone {
            state.plugins.remove(id);
        }
        state.save(&dir)?;
        for s in &removed {
            set_enabled(&s.settings_file(&self.cadre_home, project), id, None)?;
        }
        if gone {
            let (name, market) = split_id(id);
            if let Some(market) = market
                && valid_plugin_name(name)
                && valid_plugin_name(market)
            {
                let _ = std::fs::remove_dir_all(dir.join("cache").join(market).join(name));
            }
            if !keep_data {
                let _ = std::fs::remove_dir_all(dir.join("data").join(data_dir_name(id)));
            }
        }
        Ok(removed)
    }
}

/// `name@marketplace` split in two (no marketplace when there is no `@`).
pub fn split_id(spec: &str) -> (&str, Option<&str>) {
    match spec.split_once('@') {
        Some((n, m)) => (n, Some(m)),
        None => (spec, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::small_file::write_with_dirs as write;

    #[test]
    fn install_update_and_uninstall_from_a_folder_marketplace() {
        let dir = tempfile::tempdir().unwrap();
        let market = dir.path().join("market");
        write(
            &market.join(".claude-plugin/marketplace.json"),
            r#"{"name": "tools", "plugins": [{"name": "fmt", "source": "./fmt"}]}"#,
        );
        write(
            &market.join("fmt/.claude-plugin/plugin.json"),
            r#"{"name": "fmt", "version": "1.0.0"}"#,
        );
        write(&market.join("fmt/skills/a/SKILL.md"), "x");
        let project = dir.path().join("proj");
        let mut installer = Installer {
            cadre_home: dir.path().join("cadre"),
            marketplaces: BTreeMap::new(),
        };
        installer
            .add_marketplace(&Source::Directory(market.clone()))
            .unwrap();
        let done = installer
            .install("fmt", InstallScope::User, &project)
            .unwrap();
        assert_eq!(done.id, "fmt@tools");
        assert!(done.path.ends_with("cache/tools/fmt/1.0.0"));
        assert!(done.path.join("skills/a/SKILL.md").is_file());
        let settings = std::fs::read_to_string(dir.path().join("cadre/settings.json")).unwrap();
        assert!(settings.contains("\"fmt@tools\": true"), "{settings}");
        assert!(installer.update("fmt@tools").unwrap().is_none());
        write(
            &market.join("fmt/.claude-plugin/plugin.json"),
            r#"{"name": "fmt", "version": "1.1.0"}"#,
        );
        let (old, new) = installer.update("fmt@tools").unwrap().unwrap();
        assert_eq!((old.as_str(), new.version.as_str()), ("1.0.0", "1.1.0"));
        // The old version stays for sessions still using it.
        assert!(
            dir.path()
                .join("cadre/plugins/cache/tools/fmt/1.0.0")
                .is_dir()
        );
        installer
            .uninstall("fmt@tools", None, &project, false)
            .unwrap();
        assert!(!dir.path().join("cadre/plugins/cache/tools/fmt").exists());
        let state = InstalledPlugins::load(&installer.plugins_dir()).unwrap();
        assert!(state.plugins.is_empty());
    }
}
