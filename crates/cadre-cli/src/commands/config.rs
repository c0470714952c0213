//! `/config`: the settings cadre honours, each with its value and where it
//! comes from (a table in the line front end, a pane in the full screen),
//! and `/config set KEY VALUE`, which writes one to the user's settings
//! file (`$CADRE_HOME/settings.json`), keeping the rest of it.

use std::path::PathBuf;

use cadre_core::config::json::SettingsScope;
use cadre_core::permissions::PermissionMode;
use cadre_tui::panes::config::{SettingEdit, SettingRow};
use serde_json::{Value, json};

use super::CommandContext;

/// The settings `/config` shows, in order.
pub fn rows(ctx: &CommandContext<'_>) -> Vec<SettingRow> {
    let runtime = ctx.runtime;
    let settings = &runtime.settings;
    let config = runtime.client.config();
    let model_source = match (&settings.managed_model, ctx.next_model) {
        (Some((_, path)), _) => format!("managed settings ({})", path.display()),
        (None, Some(_)) => "/model in this session".to_string(),
        (None, None) => match (&settings.file.model, &settings.model_source) {
            (Some(m), Some(path)) if settings.resolve_model(config.provider, m) == config.model => {
                path.display().to_string()
            }
            (Some(_), Some(_)) => "--model or CADRE_MODEL".to_string(),
            _ if config.model == config.provider.default_model() => "the default".to_string(),
            _ => "--model or CADRE_MODEL".to_string(),
        },
    };
    let (mode, mode_source) = super::permissions::started_mode(ctx);
    let (mode, mode_source) = match ctx.view.mode() {
        Some(now) if now != mode => (now, "changed in this session".to_string()),
        _ => (mode, mode_source),
    };
    let style_name = runtime
        .applied_style()
        .map_or_else(|| "Default".to_string(), |s| s.name.clone());
    let style_source = match (&runtime.output_style, &settings.output_style) {
        (Some(style), _) if style.force_for_plugin => format!("forced by {}", style.source),
        (_, Some((_, path))) if runtime.applied_style().is_some() => path.display().to_string(),
        (Some(_), Some((_, path))) => format!(
            "{} (not applied: --agent or --system-prompt replaces the prompt)",
            path.display()
        ),
        _ => "the default".to_string(),
    };
    let status = match (&settings.status_line, settings.status_line()) {
        (Some((line, path, _)), Some(_)) => (line.command.clone(), path.display().to_string()),
        (Some((line, path, _)), None) => (
            line.command.clone(),
            format!("{} (off: disableAllHooks)", path.display()),
        ),
        (None, _) => match settings.needs_trust.iter().find(|e| e.key == "statusLine") {
            Some(held) => (
                "(none)".to_string(),
                format!(
                    "{} sets one; it runs once the folder is trusted",
                    held.path.display()
                ),
            ),
            None => ("(none)".to_string(), "not set".to_string()),
        },
    };
    let theme = if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        ("no colour", "NO_COLOR is set")
    } else {
        ("colour", "the default (NO_COLOR turns colour off)")
    };
    vec![
        SettingRow {
            key: "model".into(),
            value: config.model.clone(),
            source: model_source,
            edit: SettingEdit::Typed,
        },
        SettingRow {
            key: "permissions.defaultMode".into(),
            value: mode.to_string(),
            source: mode_source,
            edit: SettingEdit::Choice(
                [
                    (PermissionMode::Default, "ask before edits and commands"),
                    (
                        PermissionMode::AcceptEdits,
                        "edits in the project run unasked",
                    ),
                    (PermissionMode::Plan, "read-only"),
                    (PermissionMode::DontAsk, "deny what no rule allows"),
                    (PermissionMode::BypassPermissions, "everything runs"),
                ]
                .iter()
                .map(|(m, what)| (m.to_string(), (*what).to_string()))
                .collect(),
            ),
        },
        SettingRow {
            key: "outputStyle".into(),
            value: style_name,
            source: style_source,
            edit: SettingEdit::Choice(
                runtime
                    .output_styles
                    .styles
                    .iter()
                    .map(|s| (s.name.clone(), s.description.clone()))
                    .collect(),
            ),
        },
        SettingRow {
            key: "statusLine".into(),
            value: status.0,
            source: status.1,
            edit: SettingEdit::Typed,
        },
        SettingRow {
            key: "theme".into(),
            value: theme.0.into(),
            source: theme.1.into(),
            edit: SettingEdit::None,
        },
        SettingRow {
            key: "context.auto_compact_percent".into(),
            value: settings.auto_compact_percent().to_string(),
            source: match settings.file.context.auto_compact_percent {
                Some(_) => "config.toml".to_string(),
                None => "the default".to_string(),
            },
            edit: SettingEdit::None,
        },
    ]
}

/// The line front end's table: key, value, source; then how to change one.
pub fn table(rows: &[SettingRow], user_file: &std::path::Path) -> String {
    let key_w = rows.iter().map(|r| r.key.len()).max().unwrap_or(0);
    let value_w = rows
        .iter()
        .map(|r| r.value.chars().count().min(40))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for r in rows {
        let value: String = r.value.chars().take(40).collect();
        out.push_str(&format!(
            "{:<key_w$}  {:<value_w$}  {}\n",
            r.key, value, r.source
        ));
    }
    out.push_str(&format!(
        "/config set KEY VALUE writes model, permissions.defaultMode, outputStyle or statusLine to {} (used from cadre's next start; statusLine off removes it)",
        user_file.display()
    ));
    out
}

/// The user settings file `/config set` writes.
pub fn user_file(ctx: &CommandContext<'_>) -> PathBuf {
    ctx.runtime.home.join("settings.json")
}

/// `/config set KEY VALUE`: checks the value, writes it, says where.
pub fn set(ctx: &CommandContext<'_>, key: &str, value: &str) -> String {
    let runtime = ctx.runtime;
    let (keys, written): (&[&str], Option<Value>) = match key {
        "model" => (&["model"], Some(json!(value))),
        "outputStyle" | "output-style" | "outputstyle" => {
            let Some(style) = runtime.output_styles.get(value) else {
                return format!(
                    "no output style named {value}; known: {}",
                    runtime.output_styles.names().join(", ")
                );
            };
            (&["outputStyle"], Some(json!(style.name)))
        }
        "permissions.defaultMode" | "defaultMode" | "permissionMode" | "mode" => {
            match value.parse::<PermissionMode>() {
                Ok(mode) => (&["permissions", "defaultMode"], Some(json!(mode.as_str()))),
                Err(e) => return e,
            }
        }
        "statusLine" | "statusline" => match value {
            "off" | "none" => (&["statusLine"], None),
            command => (
                &["statusLine"],
                Some(json!({"type": "command", "command": command})),
            ),
        },
        other => {
            return format!(
                "cannot set {other} here: /config set takes model, permissions.defaultMode, outputStyle or statusLine"
            );
        }
    };
    let file = user_file(ctx);
    if let Err(e) = cadre_core::plugins::state::set_setting(&file, keys, written.clone()) {
        return format!("cannot write {}: {e}", file.display());
    }
    let dotted = keys.join(".");
    let shown = match &written {
        None => format!("{dotted} removed from {}", file.display()),
        Some(v) => format!(
            "{dotted} = {} written to {}",
            v.as_str().map_or_else(|| value.to_string(), str::to_string),
            file.display()
        ),
    };
    let mut text =
        format!("{shown}; cadre uses it from its next start (this process keeps its settings)");
    // A later file of the project's (or the managed one) still wins.
    if let Some(over) = runtime
        .settings
        .json
        .iter()
        .filter(|j| j.scope > SettingsScope::User)
        .rfind(|j| sets(&j.settings, keys[0]))
    {
        text.push_str(&format!(
            "\nnote: {} ({}) sets {dotted} too, and wins over your user settings",
            over.path.display(),
            over.scope.label()
        ));
    }
    text
}

/// Whether a settings file sets the top-level `key`.
fn sets(settings: &cadre_core::config::json::JsonSettings, key: &str) -> bool {
    match key {
        "model" => settings.model.is_some(),
        "outputStyle" => settings.output_style.is_some(),
        "statusLine" => settings.status_line.is_some(),
        "permissions" => settings.permissions.default_mode.is_some(),
        _ => false,
    }
}
