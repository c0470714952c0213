//! Install state in Claude Code's layout: `installed_plugins.json`
//! (version 2: one record per scope), `known_marketplaces.json`, and the
//! settings keys that enable plugins. cadre reads Claude Code's
//! `~/.claude/plugins/` and writes only its own `$CADRE_HOME/plugins/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::PluginError;
use crate::small_file::{read_small_text, write_private};

/// Largest state file read.
const MAX_STATE_BYTES: u64 = 8 * 1024 * 1024;

/// One scope's install of a plugin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallRecord {
    /// `user`, `project` or `local`.
    pub scope: String,
    /// The copied plugin folder.
    pub install_path: PathBuf,
    /// The version copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// When it was installed (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_at: Option<String>,
    /// When it was last updated (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<String>,
    /// The commit it was copied from, for git sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit_sha: Option<String>,
    /// Installed from a local folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_local: Option<bool>,
    /// For `project` and `local` installs: the project they belong to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_path: Option<PathBuf>,
    /// Fields cadre does not know, kept as they were.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `installed_plugins.json`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InstalledPlugins {
    /// Plugin id → one record per scope.
    pub plugins: BTreeMap<String, Vec<InstallRecord>>,
}

fn state_error(path: &Path, message: impl Into<String>) -> PluginError {
    PluginError::State {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// A JSON object file; `None` when missing.
fn read_json(path: &Path) -> Result<Option<Value>, PluginError> {
    let text = match read_small_text(path, MAX_STATE_BYTES) {
        Ok(t) => t,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(state_error(path, e.to_string())),
    };
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| state_error(path, format!("not valid JSON: {e}")))?;
    if !v.is_object() {
        return Err(state_error(path, "expected a JSON object"));
    }
    Ok(Some(v))
}

/// Writes `value` atomically, 0600, creating the folder (0700) if needed.
fn write_json(path: &Path, value: &Value) -> Result<(), PluginError> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    let text = serde_json::to_string_pretty(value).map_err(|e| state_error(path, e.to_string()))?;
    write_private(path, &text).map_err(|e| state_error(path, e.to_string()))
}

/// Creates `dir` and its missing parents, each new one 0700.
pub fn create_private_dir(dir: &Path) -> Result<(), PluginError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| state_error(dir, e.to_string()))
}

impl InstalledPlugins {
    /// The file under a plugins folder.
    pub fn path(plugins_dir: &Path) -> PathBuf {
        plugins_dir.join("installed_plugins.json")
    }

    /// Reads `<plugins_dir>/installed_plugins.json` (empty when missing).
    /// Version 1 files (one record per id) are read too.
    pub fn load(plugins_dir: &Path) -> Result<InstalledPlugins, PluginError> {
        let path = InstalledPlugins::path(plugins_dir);
        let Some(v) = read_json(&path)? else {
            return Ok(InstalledPlugins::default());
        };
        let mut out = InstalledPlugins::default();
        let Some(plugins) = v.get("plugins") else {
            return Ok(out);
        };
        let Value::Object(plugins) = plugins else {
            return Err(state_error(&path, "`plugins` must be an object"));
        };
        for (id, records) in plugins {
            let list = match records {
                Value::Array(items) => items.clone(),
                one @ Value::Object(_) => vec![one.clone()],
                _ => return Err(state_error(&path, format!("`plugins.{id}` must be a list"))),
            };
            let mut parsed = Vec::new();
            for r in list {
                let mut r: InstallRecord = serde_json::from_value(r)
                    .map_err(|e| state_error(&path, format!("`plugins.{id}`: {e}")))?;
                if r.scope.is_empty() {
                    r.scope = "user".into();
                }
                parsed.push(r);
            }
            out.plugins.insert(id.clone(), parsed);
        }
        Ok(out)
    }

    /// Writes the file (version 2).
    pub fn save(&self, plugins_dir: &Path) -> Result<(), PluginError> {
        let path = InstalledPlugins::path(plugins_dir);
        let plugins =
            serde_json::to_value(&self.plugins).map_err(|e| state_error(&path, e.to_string()))?;
        write_json(
            &path,
            &serde_json::json!({"version": 2, "plugins": plugins}),
        )
    }

    /// The record of `id` that applies in `project`: a local or project
    /// install made for it, else a user install.
    pub fn record_for(&self, id: &str, project: &Path) -> Option<&InstallRecord> {
        let records = self.plugins.get(id)?;
        let here = |r: &&InstallRecord| {
            r.project_path
                .as_deref()
                .is_some_and(|p| same_folder(p, project))
        };
        records
            .iter()
            .filter(|r| r.scope == "local")
            .find(here)
            .or_else(|| records.iter().filter(|r| r.scope == "project").find(here))
            .or_else(|| records.iter().find(|r| r.scope == "user"))
    }
}

/// Whether two paths name the same folder.
pub fn same_folder(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// One `known_marketplaces.json` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MarketplaceRecord {
    /// Where it comes from, in Claude Code's source shape.
    pub source: Value,
    /// Its folder (a clone, or the local folder itself).
    pub install_location: PathBuf,
    /// When it was last fetched (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<String>,
    /// Refresh at start-up (not done by cadre; kept for Claude Code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_update: Option<bool>,
    /// Fields cadre does not know, kept as they were.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `known_marketplaces.json`: name → record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KnownMarketplaces {
    /// By name.
    pub marketplaces: BTreeMap<String, MarketplaceRecord>,
}

impl KnownMarketplaces {
    /// The file under a plugins folder.
    pub fn path(plugins_dir: &Path) -> PathBuf {
        plugins_dir.join("known_marketplaces.json")
    }

    /// Reads it (empty when missing).
    pub fn load(plugins_dir: &Path) -> Result<KnownMarketplaces, PluginError> {
        let path = KnownMarketplaces::path(plugins_dir);
        let Some(Value::Object(map)) = read_json(&path)? else {
            return Ok(KnownMarketplaces::default());
        };
        let mut out = KnownMarketplaces::default();
        for (name, v) in map {
            let record: MarketplaceRecord = serde_json::from_value(v)
                .map_err(|e| state_error(&path, format!("`{name}`: {e}")))?;
            out.marketplaces.insert(name, record);
        }
        Ok(out)
    }

    /// Writes it.
    pub fn save(&self, plugins_dir: &Path) -> Result<(), PluginError> {
        let path = KnownMarketplaces::path(plugins_dir);
        let v = serde_json::to_value(&self.marketplaces)
            .map_err(|e| state_error(&path, e.to_string()))?;
        write_json(&path, &v)
    }
}

/// The data folder name of a plugin id: characters outside `[A-Za-z0-9_-]` become `-`.
pub fn data_dir_name(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The current time as ISO 8601 UTC (`2026-01-02T03:04:05.000Z`).
pub fn now_iso() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let secs = ms / 1000;
    let (y, m, d) = crate::session::civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// Sets (or with `None` removes) `enabledPlugins[id]` in the settings file
/// at `path`, keeping the rest of the file as it is.
pub fn set_enabled(path: &Path, id: &str, on: Option<bool>) -> Result<(), PluginError> {
    edit_settings(path, |root| {
        let entry = root
            .entry("enabledPlugins")
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(map) = entry else {
            return Err("`enabledPlugins` is not an object".into());
        };
        match on {
            Some(on) => {
                map.insert(id.to_string(), Value::Bool(on));
            }
            None => {
                map.remove(id);
            }
        }
        Ok(())
    })
}

/// Sets (or with `None` removes) the value at `keys` (`["permissions",
/// "defaultMode"]`) in the settings file at `path`, keeping the rest of the
/// file as it is; the file is written 0600 (used by `/config set` too).
pub fn set_setting(path: &Path, keys: &[&str], value: Option<Value>) -> Result<(), PluginError> {
    let Some((last, parents)) = keys.split_last() else {
        return Err(state_error(path, "no key to set"));
    };
    edit_settings(path, |root| {
        let mut map = root;
        for (depth, key) in parents.iter().enumerate() {
            let entry = map
                .entry(key.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(inner) = entry else {
                return Err(format!("`{}` is not an object", keys[..=depth].join(".")));
            };
            map = inner;
        }
        match value {
            Some(v) => {
                map.insert(last.to_string(), v);
            }
            None => {
                map.remove(*last);
            }
        }
        Ok(())
    })
}

/// Sets `pluginConfigs[id].options[key]` in the settings file at `path`.
pub fn set_plugin_options(
    path: &Path,
    id: &str,
    values: &[(String, String)],
) -> Result<(), PluginError> {
    edit_settings(path, |root| {
        let configs = root
            .entry("pluginConfigs")
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(configs) = configs else {
            return Err("`pluginConfigs` is not an object".into());
        };
        let entry = configs
            .entry(id.to_string())
            .or_insert_with(|| serde_json::json!({"options": {}}));
        let Some(options) = entry
            .as_object_mut()
            .map(|e| {
                e.entry("options")
                    .or_insert_with(|| Value::Object(Map::new()))
            })
            .and_then(Value::as_object_mut)
        else {
            return Err(format!("`pluginConfigs.{id}.options` is not an object"));
        };
        for (k, v) in values {
            options.insert(k.clone(), Value::String(v.clone()));
        }
        Ok(())
    })
}

fn edit_settings(
    path: &Path,
    edit: impl FnOnce(&mut Map<String, Value>) -> Result<(), String>,
) -> Result<(), PluginError> {
    let mut root = match read_json(path)? {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    edit(&mut root).map_err(|m| state_error(path, m))?;
    write_json(path, &Value::Object(root))
}

/// The file holding sensitive `userConfig` values: `$CADRE_HOME/plugins/secrets.json`, 0600.
pub fn secrets_path(cadre_plugins: &Path) -> PathBuf {
    cadre_plugins.join("secrets.json")
}

/// Sensitive values of plugin `id`.
pub fn load_secrets(cadre_plugins: &Path, id: &str) -> Vec<(String, String)> {
    let Ok(Some(v)) = read_json(&secrets_path(cadre_plugins)) else {
        return Vec::new();
    };
    v.get(id)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Stores sensitive values of plugin `id`.
pub fn save_secrets(
    cadre_plugins: &Path,
    id: &str,
    values: &[(String, String)],
) -> Result<(), PluginError> {
    edit_settings(&secrets_path(cadre_plugins), |root| {
        let entry = root
            .entry(id.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        let Some(map) = entry.as_object_mut() else {
            return Err(format!("`{id}` is not an object"));
        };
        for (k, v) in values {
            map.insert(k.clone(), Value::String(v.clone()));
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installed_plugins_round_trip_in_version_2() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("installed_plugins.json"),
            r#"{"version": 2, "plugins": {"fmt@tools": [{"scope": "user", "installPath": "/x",
                "version": "1.0.0", "installedAt": "2026-01-01T00:00:00.000Z", "odd": 1}],
                "old@m": {"scope": "user", "installPath": "/y"}}}"#,
        )
        .unwrap();
        let state = InstalledPlugins::load(dir.path()).unwrap();
        assert_eq!(
            state.plugins["fmt@tools"][0].version.as_deref(),
            Some("1.0.0")
        );
        assert_eq!(state.plugins["old@m"].len(), 1);
        state.save(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join("installed_plugins.json")).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["version"], 2);
        assert_eq!(v["plugins"]["fmt@tools"][0]["installPath"], "/x");
        assert_eq!(v["plugins"]["fmt@tools"][0]["odd"], 1);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("installed_plugins.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn enabling_keeps_the_rest_of_the_settings_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, r#"{"model": "opus"}"#).unwrap();
        set_enabled(&path, "fmt@tools", Some(false)).unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["model"], "opus");
        assert_eq!(v["enabledPlugins"]["fmt@tools"], false);
        assert_eq!(data_dir_name("fmt@tools.x"), "fmt-tools-x");
        assert!(now_iso().ends_with('Z'));
    }
}
