//! Plugins through the binary: one installed Claude Code's way takes effect
//! whole (agent, skill, hook, MCP server, `bin/`), `enabledPlugins: false`
//! turns it off, a project's plugins wait for trust, and the `cadre plugin`
//! commands manage marketplaces and installs in Claude Code's layout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{Harness, Wire, mcp_fixture, stderr, stdout, tool_results, user_texts};
use serde_json::{Value, json};

/// A model that runs the plugin's `bin/` tool and its MCP tool, then ends.
const SCRIPT: &str = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "kit-hello" } }
          - { name: mcp__plugin_kit_fixture__echo, input: { text: "via plugin" } }
      - text: "done"
"#;

/// A model that only answers.
const QUIET: &str = r#"
rules:
  - name: main
    replies:
      - text: "done"
"#;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The plugin `kit` in `root`: an agent, a skill, a command, a SessionStart
/// hook that records `${CLAUDE_PLUGIN_ROOT}` and `${CLAUDE_PLUGIN_DATA}`
/// in `<project>/hook-marker`, the MCP fixture server, and `bin/kit-hello`.
fn write_kit(root: &Path, version: &str) {
    write(
        &root.join(".claude-plugin/plugin.json"),
        &json!({"name": "kit", "version": version, "description": "A test kit"}).to_string(),
    );
    write(
        &root.join("agents/reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews diffs for the kit\n---\nReview.\n",
    );
    write(
        &root.join("skills/lint/SKILL.md"),
        "---\nname: lint\ndescription: Lint with the kit's rules\n---\nRun the linter.\n",
    );
    write(
        &root.join("commands/ship.md"),
        "---\ndescription: Ship it\n---\nShip.\n",
    );
    write(
        &root.join("hooks/hooks.json"),
        r#"{"hooks": {"SessionStart": [{"hooks": [{"type": "command",
            "command": "bash \"${CLAUDE_PLUGIN_ROOT}/hooks/start.sh\""}]}]}}"#,
    );
    write(
        &root.join("hooks/start.sh"),
        "printf '%s\\n%s\\n' \"$CLAUDE_PLUGIN_ROOT\" \"$CLAUDE_PLUGIN_DATA\" > \"$CLAUDE_PROJECT_DIR/hook-marker\"\n",
    );
    write(
        &root.join(".mcp.json"),
        &json!({"mcpServers": {"fixture": {
            "command": mcp_fixture().display().to_string(),
            "env": {"KIT_ROOT": "${CLAUDE_PLUGIN_ROOT}"},
        }}})
        .to_string(),
    );
    let bin = root.join("bin/kit-hello");
    write(&bin, "#!/bin/sh\necho hello-from-kit-bin\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Installs `kit` as Claude Code does: copied under
/// `~/.claude/plugins/cache/`, recorded in `installed_plugins.json`, and
/// `enabledPlugins` in `~/.claude/settings.json` set to `enabled`.
fn install_claude_way(h: &Harness, enabled: bool) -> PathBuf {
    let plugins = h.home.path().join(".claude/plugins");
    let root = plugins.join("cache/tools/kit/1.0.0");
    write_kit(&root, "1.0.0");
    write(
        &plugins.join("installed_plugins.json"),
        &json!({"version": 2, "plugins": {"kit@tools": [{
            "scope": "user", "installPath": root, "version": "1.0.0",
            "installedAt": "2026-01-01T00:00:00.000Z", "lastUpdated": "2026-01-01T00:00:00.000Z"
        }]}})
        .to_string(),
    );
    write(
        &h.home.path().join(".claude/settings.json"),
        &json!({"enabledPlugins": {"kit@tools": enabled}}).to_string(),
    );
    root
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn a_plugin_installed_claude_codes_way_takes_effect_whole() {
    let h = Harness::new(SCRIPT, Wire::Anthropic).await;
    let root = install_claude_way(&h, true);
    let out = h
        .cadre(&[
            "exec",
            "--allow",
            "Bash",
            "--allow",
            "mcp__plugin_kit_fixture",
            "go",
        ])
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let records = h.records();
    let first = &records[0].body;
    let users = user_texts(first);
    // The agent joins the roster under the plugin's namespace.
    assert!(users.contains("kit:reviewer"), "{users}");
    // The skill joins the skills reminder, namespaced too.
    assert!(users.contains("kit:lint"), "{users}");
    // The MCP server's tools are named after the plugin.
    let last = &records.last().unwrap().body;
    let names = tool_names(last);
    assert!(
        names.iter().any(|n| n == "mcp__plugin_kit_fixture__echo"),
        "{names:?}"
    );
    let results = tool_results(last);
    // `bin/` is on the Bash tool's PATH.
    assert!(
        results
            .iter()
            .any(|(t, _)| t.contains("hello-from-kit-bin")),
        "{results:?}"
    );
    assert!(
        results
            .iter()
            .any(|(t, err)| !err && t.contains("via plugin")),
        "{results:?}"
    );
    // The SessionStart hook ran with the plugin's variables.
    let marker = h.read("hook-marker");
    let mut lines = marker.lines();
    assert_eq!(lines.next(), Some(root.to_str().unwrap()), "{marker}");
    assert!(
        lines
            .next()
            .is_some_and(|d| d.ends_with(".claude/plugins/data/kit-tools")),
        "{marker}"
    );
    // LEAD: the command assertion goes here (`commands/ship.md` as `/kit:ship`).
}

#[tokio::test]
async fn a_plugin_disabled_in_settings_does_nothing() {
    let h = Harness::new(QUIET, Wire::Anthropic).await;
    install_claude_way(&h, false);
    let out = h.cadre(&["exec", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let body = &h.records()[0].body;
    let users = user_texts(body);
    assert!(
        !users.contains("kit:reviewer") && !users.contains("kit:lint"),
        "{users}"
    );
    assert!(
        !tool_names(body).iter().any(|n| n.contains("plugin_kit")),
        "{:?}",
        tool_names(body)
    );
    assert!(!h.path("hook-marker").exists());
}

/// A project that registers a marketplace in its own folder and enables
/// its plugin, as a shared `.claude/settings.json` would.
fn project_marketplace(h: &Harness) {
    write(
        &h.path("market/.claude-plugin/marketplace.json"),
        &json!({"name": "team", "owner": {"name": "t"},
                "plugins": [{"name": "kit", "source": "./plugins/kit"}]})
        .to_string(),
    );
    write_kit(&h.path("market/plugins/kit"), "1.0.0");
    h.write(
        ".claude/settings.json",
        &json!({
            "extraKnownMarketplaces": {"team": {"source": {"source": "directory", "path": "./market"}}},
            "enabledPlugins": {"kit@team": true}
        })
        .to_string(),
    );
}

#[tokio::test]
async fn a_project_enabled_plugin_waits_for_trust() {
    let h = Harness::new(QUIET, Wire::Anthropic).await;
    project_marketplace(&h);
    let out = h.cadre(&["exec", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("kit@team") && err.contains("trust"), "{err}");
    assert!(!h.path("hook-marker").exists());
    let users = user_texts(&h.records()[0].body);
    assert!(!users.contains("kit:lint"), "{users}");

    let out = h.cadre(&["exec", "--trust", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(h.path("hook-marker").exists());
    let users = user_texts(&h.records()[1].body);
    assert!(users.contains("kit:lint"), "{users}");
}
