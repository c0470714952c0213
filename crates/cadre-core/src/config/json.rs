//! Claude Code's JSON settings files (`settings.json`, `settings.local.json`,
//! `managed-settings.json`), read in Claude Code's format for cadre's own
//! files too. Only the keys cadre honours are kept; the rest are listed as
//! unknown so `cadre config show` can name them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{ConfigError, MAX_CONFIG_BYTES, PermissionsFile};
use crate::small_file::read_small_text;

/// Where a settings file sits, lowest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SettingsScope {
    /// The user's own files (trusted).
    User,
    /// A project's shared files (untrusted: may narrow, never widen).
    Project,
    /// A project's local files (`*.local.json`; as untrusted as the shared ones).
    Local,
    /// The administrator's managed file (wins over everything).
    Managed,
}

impl SettingsScope {
    /// How the scope is named in messages.
    pub fn label(self) -> &'static str {
        match self {
            SettingsScope::User => "user settings",
            SettingsScope::Project => "project settings",
            SettingsScope::Local => "local project settings",
            SettingsScope::Managed => "managed settings",
        }
    }

    /// Whether entries that widen permissions or run code apply from this
    /// scope whatever the folder; a project's apply once the folder is trusted.
    pub fn is_trusted(self) -> bool {
        matches!(self, SettingsScope::User | SettingsScope::Managed)
    }
}

/// The keys of one JSON settings file that cadre reads.
#[derive(Debug, Clone, Default)]
pub struct JsonSettings {
    /// `permissions.allow/ask/deny/defaultMode`.
    pub permissions: PermissionsFile,
    /// `permissions.additionalDirectories`.
    pub additional_directories: Vec<String>,
    /// `permissions.disableBypassPermissionsMode` is `"disable"`.
    pub disable_bypass: bool,
    /// `env`: variables for the commands cadre starts.
    pub env: BTreeMap<String, String>,
    /// `model`.
    pub model: Option<String>,
    /// Events named under `hooks`.
    pub hook_events: Vec<String>,
    /// The `hooks` value as written (the hooks module parses it; config only keeps it).
    pub hooks: Option<Value>,
    /// `disableAllHooks: true`.
    pub disable_all_hooks: bool,
    /// `enabledPlugins`: plugin id (`name@marketplace`) → on or off.
    pub enabled_plugins: BTreeMap<String, bool>,
    /// `extraKnownMarketplaces` (or its alias `additionalMarketplaces`):
    /// marketplace name → its entry as written (`{"source": {…}}`).
    pub extra_marketplaces: BTreeMap<String, Value>,
    /// `pluginConfigs`: plugin id → `{"options": {…}}` as written.
    pub plugin_configs: BTreeMap<String, Value>,
    /// `statusLine`: the command whose output replaces cadre's status line.
    pub status_line: Option<StatusLineSetting>,
    /// `outputStyle`: the name of the output style the main session uses.
    pub output_style: Option<String>,
    /// Dotted keys cadre does not read.
    pub unknown: Vec<String>,
}

/// `statusLine` as a settings file writes it:
/// `{"type": "command", "command": "…", "padding": N, "refreshInterval": S}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusLineSetting {
    /// The shell command (run with `sh -c`).
    pub command: String,
    /// Columns of blank space before the output.
    pub padding: u16,
    /// Seconds between runs on a timer (at least 1), if any.
    pub refresh_interval_s: Option<u64>,
}

impl StatusLineSetting {
    /// Reads the `statusLine` object; `type` must be `"command"`.
    fn parse(path: &Path, value: &Value) -> Result<StatusLineSetting, ConfigError> {
        let Value::Object(map) = value else {
            return Err(parse_error(path, "statusLine must be an object"));
        };
        match map.get("type").and_then(Value::as_str) {
            Some("command") | None => {}
            Some(other) => {
                return Err(parse_error(
                    path,
                    format!("statusLine.type must be \"command\", not \"{other}\""),
                ));
            }
        }
        let command = map
            .get("command")
            .and_then(Value::as_str)
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| parse_error(path, "statusLine.command must be a command"))?;
        let padding = map
            .get("padding")
            .and_then(Value::as_u64)
            .map_or(0, |p| p.min(u64::from(u16::MAX)) as u16);
        // Claude Code's minimum is one second.
        let refresh_interval_s = map
            .get("refreshInterval")
            .and_then(Value::as_f64)
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(|s| (s.ceil() as u64).max(1));
        Ok(StatusLineSetting {
            command: command.to_string(),
            padding,
            refresh_interval_s,
        })
    }
}

fn parse_error(path: &Path, message: impl Into<String>) -> ConfigError {
    ConfigError::Parse {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

fn strings(path: &Path, key: &str, v: &Value) -> Result<Vec<String>, ConfigError> {
    let err = || parse_error(path, format!("{key} must be a list of strings"));
    v.as_array()
        .ok_or_else(err)?
        .iter()
        .map(|s| s.as_str().map(str::to_string).ok_or_else(err))
        .collect()
}

impl JsonSettings {
    /// Reads one file; `None` when it does not exist.
    pub fn load(path: &Path) -> Result<Option<JsonSettings>, ConfigError> {
        let text = match read_small_text(path, MAX_CONFIG_BYTES) {
            Ok(t) => t,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        JsonSettings::parse(path, &text).map(Some)
    }

    /// Parses the text of the file at `path` (named in errors).
    pub fn parse(path: &Path, text: &str) -> Result<JsonSettings, ConfigError> {
        let root: Value =
            serde_json::from_str(text).map_err(|e| parse_error(path, e.to_string()))?;
        let Value::Object(root) = root else {
            return Err(parse_error(path, "a settings file holds one JSON object"));
        };
        let mut out = JsonSettings::default();
        for (key, value) in &root {
            match key.as_str() {
                "permissions" => out.read_permissions(path, value)?,
                "env" => {
                    let Value::Object(vars) = value else {
                        return Err(parse_error(path, "env must be an object of strings"));
                    };
                    for (name, v) in vars {
                        // Claude Code takes numbers and booleans as their text.
                        let text = match v {
                            Value::String(s) => s.clone(),
                            Value::Number(n) => n.to_string(),
                            Value::Bool(b) => b.to_string(),
                            _ => {
                                return Err(parse_error(
                                    path,
                                    format!("env.{name} must be a string"),
                                ));
                            }
                        };
                        out.env.insert(name.clone(), text);
                    }
                }
                "model" => {
                    let m = value
                        .as_str()
                        .ok_or_else(|| parse_error(path, "model must be a string"))?;
                    out.model = Some(m.to_string());
                }
                "hooks" => {
                    let Value::Object(events) = value else {
                        return Err(parse_error(path, "hooks must be an object of events"));
                    };
                    out.hook_events = events.keys().cloned().collect();
                    out.hooks = Some(value.clone());
                }
                "disableAllHooks" => out.disable_all_hooks = value.as_bool() == Some(true),
                "enabledPlugins" => {
                    let Value::Object(map) = value else {
                        return Err(parse_error(
                            path,
                            "enabledPlugins must be an object of plugin ids",
                        ));
                    };
                    for (id, on) in map {
                        // Claude Code also writes a list of versions here; any
                        // value other than `false` counts as on.
                        let on = !matches!(on, Value::Bool(false) | Value::Null);
                        out.enabled_plugins.insert(id.clone(), on);
                    }
                }
                "extraKnownMarketplaces" | "additionalMarketplaces" => {
                    let Value::Object(map) = value else {
                        return Err(parse_error(path, format!("{key} must be an object")));
                    };
                    for (name, entry) in map {
                        out.extra_marketplaces.insert(name.clone(), entry.clone());
                    }
                }
                "pluginConfigs" => {
                    let Value::Object(map) = value else {
                        return Err(parse_error(path, "pluginConfigs must be an object"));
                    };
                    for (id, entry) in map {
                        out.plugin_configs.insert(id.clone(), entry.clone());
                    }
                }
                "statusLine" => out.status_line = Some(StatusLineSetting::parse(path, value)?),
                "outputStyle" => {
                    let name = value
                        .as_str()
                        .ok_or_else(|| parse_error(path, "outputStyle must be a string"))?;
                    out.output_style = Some(name.to_string());
                }
                // The schema reference editors use; not a setting.
                "$schema" => {}
                other => out.unknown.push(other.to_string()),
            }
        }
        Ok(out)
    }

    fn read_permissions(&mut self, path: &Path, value: &Value) -> Result<(), ConfigError> {
        let Value::Object(map) = value else {
            return Err(parse_error(path, "permissions must be an object"));
        };
        for (key, v) in map {
            let dotted = format!("permissions.{key}");
            match key.as_str() {
                "allow" => self.permissions.allow = strings(path, &dotted, v)?,
                "ask" => self.permissions.ask = strings(path, &dotted, v)?,
                "deny" => self.permissions.deny = strings(path, &dotted, v)?,
                "additionalDirectories" => self.additional_directories = strings(path, &dotted, v)?,
                "defaultMode" => {
                    let m = v
                        .as_str()
                        .ok_or_else(|| parse_error(path, format!("{dotted} must be a string")))?;
                    self.permissions.default_mode = Some(m.to_string());
                }
                "disableBypassPermissionsMode" => {
                    self.disable_bypass = v.as_str() == Some("disable");
                }
                _ => self.unknown.push(dotted),
            }
        }
        Ok(())
    }
}

/// Where the JSON settings files are: the user's, the project's and the
/// managed one, each scope's files in the order they apply (later wins).
#[derive(Debug, Clone)]
pub struct SettingsPaths {
    /// cadre's data directory (`$CADRE_HOME`).
    pub data_dir: PathBuf,
    /// The user's home directory (for `~/.claude`), when there is one.
    pub home_dir: Option<PathBuf>,
    /// The project directory.
    pub project: PathBuf,
    /// The directory of `managed-settings.json` ([`DEFAULT_MANAGED_SETTINGS_DIR`] normally).
    pub managed_dir: Option<PathBuf>,
    /// The project folder is trusted (workspace trust, or `--trust`).
    pub trusted: bool,
    /// A settings layer given for this run (`--settings`): trusted like the
    /// user's, above the project's local files, below managed settings.
    pub extra: Option<ExtraSettings>,
    /// The scopes whose files load (`--setting-sources`); all when `None`.
    /// Managed settings always load.
    pub sources: Option<Vec<SettingsScope>>,
}

/// Settings given on the command line: a file's text, or inline JSON.
#[derive(Debug, Clone)]
pub struct ExtraSettings {
    /// How messages name it: the file, or `--settings`.
    pub label: PathBuf,
    /// The JSON text.
    pub text: String,
}

/// Where managed settings live unless `CADRE_MANAGED_SETTINGS_DIR` moves them.
pub const DEFAULT_MANAGED_SETTINGS_DIR: &str = "/etc/cadre";

impl SettingsPaths {
    /// The JSON files with their scopes, lowest precedence first: Claude
    /// Code's file of a scope before cadre's own, shared before local.
    pub fn json_files(&self) -> Vec<(SettingsScope, PathBuf)> {
        let mut files = Vec::new();
        if let Some(home) = &self.home_dir {
            files.push((
                SettingsScope::User,
                home.join(".claude").join("settings.json"),
            ));
        }
        files.push((SettingsScope::User, self.data_dir.join("settings.json")));
        let claude = self.project.join(".claude");
        let cadre = self.project.join(".cadre");
        files.push((SettingsScope::Project, claude.join("settings.json")));
        files.push((SettingsScope::Project, cadre.join("settings.json")));
        files.push((SettingsScope::Local, claude.join("settings.local.json")));
        files.push((SettingsScope::Local, cadre.join("settings.local.json")));
        if let Some(only) = &self.sources {
            files.retain(|(scope, _)| only.contains(scope));
        }
        if let Some(dir) = &self.managed_dir {
            files.push((SettingsScope::Managed, dir.join("managed-settings.json")));
        }
        files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_known_keys_and_lists_unknown_ones() {
        let s = JsonSettings::parse(
            Path::new("s.json"),
            r#"{"$schema": "x", "model": "opus", "env": {"A": "1", "N": 2},
                "permissions": {"allow": ["Read"], "deny": ["Bash"], "defaultMode": "plan",
                  "disableBypassPermissionsMode": "disable", "additionalDirectories": ["../x"],
                  "colour": 1},
                "hooks": {"PreToolUse": [], "Stop": []}, "spinnerTips": {},
                "statusLine": {"type": "command", "command": "s.sh", "padding": 2, "refreshInterval": 0.5},
                "outputStyle": "Explanatory"}"#,
        )
        .unwrap();
        assert_eq!(s.model.as_deref(), Some("opus"));
        assert_eq!(s.env.get("N").map(String::as_str), Some("2"));
        assert_eq!(s.permissions.allow, ["Read"]);
        assert_eq!(s.permissions.deny, ["Bash"]);
        assert_eq!(s.permissions.default_mode.as_deref(), Some("plan"));
        assert!(s.disable_bypass);
        assert_eq!(s.additional_directories, ["../x"]);
        assert_eq!(s.hook_events, ["PreToolUse", "Stop"]);
        assert_eq!(s.unknown, ["permissions.colour", "spinnerTips"]);
        assert_eq!(
            s.status_line,
            Some(StatusLineSetting {
                command: "s.sh".into(),
                padding: 2,
                refresh_interval_s: Some(1),
            })
        );
        assert_eq!(s.output_style.as_deref(), Some("Explanatory"));
    }

    #[test]
    fn wrong_shapes_name_the_file_and_key() {
        for (text, key) in [
            (r#"{"permissions": {"deny": "Bash"}}"#, "permissions.deny"),
            (r#"{"env": {"A": []}}"#, "env.A"),
            ("[1]", "one JSON object"),
            ("{", "EOF"),
        ] {
            let err = JsonSettings::parse(Path::new("p/settings.json"), text)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("p/settings.json") && err.contains(key),
                "{err}"
            );
        }
    }
}
