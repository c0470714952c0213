//! `cadre config show`: every setting in force with the file it comes from,
//! the entries that do not apply and why, and the keys cadre does not read.
//! `cadre config trust | untrust`: the folder's workspace trust.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use cadre_core::config::{
    ConfigError, Settings, TrustState, TrustStore, data_dir, ensure_private_dir,
};

use crate::PermissionArgs;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

/// Arguments of `cadre config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Every setting in force with its file, ignored entries and unknown keys.
    Show {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Trust a folder (default: this one): its project settings may widen
    /// permissions, set env and run hooks.
    Trust {
        /// The folder.
        path: Option<PathBuf>,
    },
    /// Record a folder (default: this one) as not trusted.
    Untrust {
        /// The folder.
        path: Option<PathBuf>,
    },
}

/// Runs `cadre config …`.
pub fn run(perms: &PermissionArgs, args: ConfigArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir()?;
    let home = data_dir()?;
    let trusted = matches!(args.command, ConfigCommand::Trust { .. });
    let json = match args.command {
        ConfigCommand::Show { json } => json,
        ConfigCommand::Trust { path } | ConfigCommand::Untrust { path } => {
            let folder = path.map_or_else(|| cwd.clone(), |p| cwd.join(p));
            if !folder.is_dir() {
                anyhow::bail!(crate::UsageError(format!(
                    "{} is not a folder",
                    folder.display()
                )));
            }
            ensure_private_dir(&home)?;
            let mut store = TrustStore::load(&home)?;
            store.record(&folder, trusted)?;
            println!(
                "{} {}",
                if trusted { "trusted:" } else { "not trusted:" },
                folder.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
    };
    let mut warnings = Vec::new();
    let trusted = crate::setup::folder_trusted(&home, &cwd, perms, &mut warnings);
    let mut settings = Settings::load_with(&crate::setup::settings_paths(&home, &cwd, trusted))?;
    settings.warnings.extend(warnings);
    // The plugins' problems and what of them cadre does not apply.
    let plugins = crate::setup::load_plugins(&home, &cwd, &settings, trusted, perms);
    settings.warnings.extend(plugins.warnings);
    let mut report = report(&settings)?;
    report["trust"] = json!(match TrustStore::load(&home).map(|s| s.state(&cwd)) {
        _ if perms.trust => "trusted for this run (--trust)".to_string(),
        Ok(TrustState::Trusted(by)) if by == cwd || cwd.canonicalize().ok() == Some(by.clone()) =>
            "trusted".to_string(),
        Ok(TrustState::Trusted(by)) => format!("trusted (through {})", by.display()),
        Ok(TrustState::Refused) => "not trusted (answered no)".to_string(),
        Ok(TrustState::Unknown) => "not trusted (never asked)".to_string(),
        Err(e) => format!("unknown: {e}"),
    });
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", text(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// One setting in force.
fn entry(key: &str, value: Value, source: &Path) -> Value {
    json!({"key": key, "value": value, "source": source.display().to_string()})
}

/// The report `show` prints, as JSON.
fn report(settings: &Settings) -> Result<Value, ConfigError> {
    let mut files = Vec::new();
    let mut in_force = Vec::new();
    // config.toml keys, the project's over the user's (permissions are listed below).
    let mut toml_keys: Vec<(String, Value, PathBuf)> = Vec::new();
    for (scope, path) in [
        ("user", &settings.user_config_path),
        ("project", &settings.project_config_path),
    ] {
        let Some(table) = read_toml(path)? else {
            continue;
        };
        files.push(json!({"path": path.display().to_string(), "scope": scope, "format": "toml"}));
        let mut flat = Vec::new();
        flatten("", &table, &mut flat);
        for (key, value) in flat {
            if key.starts_with("permissions.") || key == "model" {
                continue;
            }
            toml_keys.retain(|(k, _, _)| *k != key);
            toml_keys.push((key, value, path.clone()));
        }
    }
    for j in &settings.json {
        files.push(json!({
            "path": j.path.display().to_string(),
            "scope": j.scope.label().trim_end_matches(" settings"),
            "format": "json",
        }));
    }
    for (key, value, path) in toml_keys {
        in_force.push(entry(&key, value, &path));
    }
    if let (Some(model), Some(path)) = (&settings.file.model, &settings.model_source) {
        in_force.push(entry("model", json!(model), path));
    }
    if let Some((style, path)) = &settings.output_style {
        in_force.push(entry("outputStyle", json!(style), path));
    }
    if let (Some(line), Some((_, path, _))) = (settings.status_line(), &settings.status_line) {
        in_force.push(entry("statusLine.command", json!(line.command), path));
    }
    let mut warnings = Vec::new();
    if let Ok(Some(choice)) = settings.file_mode(&mut warnings) {
        in_force.push(json!({
            "key": "permissions.defaultMode",
            "value": choice.mode.as_str(),
            "source": choice.source,
        }));
    }
    if let Some(path) = &settings.bypass_disabled_by {
        in_force.push(entry(
            "permissions.disableBypassPermissionsMode",
            json!("disable"),
            path,
        ));
    }
    for rule in settings.rules() {
        in_force.push(json!({
            "key": format!("permissions.{}", rule.kind.as_str()),
            "value": rule.text,
            "source": rule.source,
        }));
    }
    // Values of `env` often hold tokens: names only.
    for (name, (_, path)) in &settings.env {
        in_force.push(entry(&format!("env.{name}"), Value::Null, path));
    }
    // Plugin keys, each as its file sets it (the plugin loader decides
    // precedence and trust; `cadre plugin list` shows the outcome).
    for j in &settings.json {
        for (id, on) in &j.settings.enabled_plugins {
            in_force.push(entry(&format!("enabledPlugins.{id}"), json!(on), &j.path));
        }
        for (name, v) in &j.settings.extra_marketplaces {
            let source = v.get("source").cloned().unwrap_or(Value::Null);
            in_force.push(entry(
                &format!("extraKnownMarketplaces.{name}"),
                source,
                &j.path,
            ));
        }
        // Options may hold values the user would not show: names only.
        for id in j.settings.plugin_configs.keys() {
            in_force.push(entry(&format!("pluginConfigs.{id}"), Value::Null, &j.path));
        }
    }
    let ignored: Vec<Value> = settings
        .ignored
        .iter()
        .map(|i| json!({"key": i.key, "source": i.path.display().to_string(), "why": i.why}))
        .collect();
    let unknown: Vec<Value> = settings
        .json
        .iter()
        .flat_map(|j| {
            j.settings.unknown.iter().map(|k| {
                json!({"key": k, "source": j.path.display().to_string(), "why": "cadre does not read this key"})
            })
        })
        .collect();
    let mut all_warnings = settings.warnings.clone();
    all_warnings.extend(warnings);
    Ok(json!({
        "files": files,
        "settings": in_force,
        "ignored": ignored,
        "unknown": unknown,
        "warnings": all_warnings,
    }))
}

/// A config.toml as a TOML table; `None` when missing.
fn read_toml(path: &Path) -> Result<Option<toml::Table>, ConfigError> {
    let text =
        match cadre_core::small_file::read_small_text(path, cadre_core::config::MAX_CONFIG_BYTES) {
            Ok(t) => t,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e.into()),
        };
    toml::from_str(&text)
        .map(Some)
        .map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
}

/// Dotted keys of `table` with their values as JSON (tables flattened, arrays kept whole).
fn flatten(prefix: &str, table: &toml::Table, out: &mut Vec<(String, Value)>) {
    for (k, v) in table {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            toml::Value::Table(t) => flatten(&key, t, out),
            other => out.push((key, serde_json::to_value(other).unwrap_or(Value::Null))),
        }
    }
}

/// The report as text.
fn text(report: &Value) -> String {
    let mut out = String::new();
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    out.push_str(&format!("this folder: {}\n", s(&report["trust"])));
    out.push_str("files read (lowest precedence first; managed settings win over all):\n");
    let files = list(&report["files"]);
    if files.is_empty() {
        out.push_str("  none\n");
    }
    for f in files {
        out.push_str(&format!("  {:<14} {}\n", s(&f["scope"]), s(&f["path"])));
    }
    out.push_str("settings in force:\n");
    let settings = list(&report["settings"]);
    if settings.is_empty() {
        out.push_str("  none (defaults)\n");
    }
    for e in settings {
        let value = match &e["value"] {
            Value::Null => "(value not shown)".to_string(),
            Value::String(t) => t.clone(),
            other => other.to_string(),
        };
        out.push_str(&format!(
            "  {} = {value}  from {}\n",
            s(&e["key"]),
            s(&e["source"])
        ));
    }
    for (title, key) in [
        ("ignored", "ignored"),
        ("unknown keys (ignored)", "unknown"),
    ] {
        let entries = list(&report[key]);
        if entries.is_empty() {
            continue;
        }
        out.push_str(&format!("{title}:\n"));
        for e in entries {
            out.push_str(&format!(
                "  {}  in {}: {}\n",
                s(&e["key"]),
                s(&e["source"]),
                s(&e["why"])
            ));
        }
    }
    let warnings = list(&report["warnings"]);
    if !warnings.is_empty() {
        out.push_str("warnings:\n");
        for w in warnings {
            out.push_str(&format!("  {}\n", s(&w)));
        }
    }
    out
}
