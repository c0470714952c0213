//! Plugins through the binary: one installed Claude Code's way takes effect
//! whole (agent, skill, hook, MCP server, `bin/`), `enabledPlugins: false`
//! turns it off, a project's plugins wait for trust, and the `cadre plugin`
//! commands manage marketplaces and installs in Claude Code's layout.

use crate::common;

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
            .is_some_and(|d| d.ends_with(".claude/plugins/data/kit-tools")
                && Path::new(d).is_dir()),
        "{marker}"
    );
    // The command is the model's to run too, and the user's by both names.
    assert!(users.contains("- kit:ship: Ship it"), "{users}");
    let h = Harness::new(QUIET, Wire::Anthropic).await;
    install_claude_way(&h, true);
    for typed in ["/kit:ship today", "/ship today"] {
        let out = h.cadre(&["exec", typed]).await;
        assert!(out.status.success(), "{typed}: {}", stderr(&out));
        let text = user_texts(&h.records().last().unwrap().body);
        assert!(
            text.contains("Ship.\\n\\nARGUMENTS: today"),
            "{typed}: {text}"
        );
    }
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
    let out = h.cadre(&["exec", "/kit:ship"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("unknown command /kit:ship"),
        "{}",
        stderr(&out)
    );
    // Listed, not loaded.
    let list = h.cadre(&["plugin", "list"]).await;
    let text = stdout(&list);
    assert!(
        text.contains("kit@tools") && text.contains("disabled"),
        "{text}"
    );
    // `cadre config show` reads the plugin keys instead of calling them unknown.
    let show = stdout(&h.cadre(&["config", "show"]).await);
    assert!(show.contains("enabledPlugins.kit@tools = false"), "{show}");
    assert!(!show.contains("cadre does not read"), "{show}");
}

#[tokio::test]
async fn an_untrusted_project_cannot_turn_off_the_users_plugin() {
    let h = Harness::new(QUIET, Wire::Anthropic).await;
    install_claude_way(&h, true);
    h.write(
        ".claude/settings.local.json",
        r#"{"enabledPlugins": {"kit@tools": false}}"#,
    );
    let out = h.cadre(&["exec", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    // The hook still ran, and the warning names the entry held back.
    assert!(h.path("hook-marker").exists());
    let err = stderr(&out);
    assert!(err.contains("kit@tools") && err.contains("trust"), "{err}");
    // Trusted, the project's opt-out applies.
    std::fs::remove_file(h.path("hook-marker")).unwrap();
    let out = h.cadre(&["exec", "--trust", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!h.path("hook-marker").exists());
}

#[tokio::test]
async fn a_catalogue_entry_leaving_its_marketplace_is_refused() {
    let h = Harness::new(QUIET, Wire::Anthropic).await;
    let outside = tempfile::tempdir().unwrap();
    write_kit(&outside.path().join("kit"), "1.0.0");
    h.write(
        "market/.claude-plugin/marketplace.json",
        &json!({"name": "team", "owner": {"name": "t"}, "plugins": [
            {"name": "kit", "source": format!("../../{}/kit", outside.path().display())}]})
        .to_string(),
    );
    let add = h.cadre(&["plugin", "marketplace", "add", "market"]).await;
    assert!(add.status.success(), "{}", stderr(&add));
    let install = h.cadre(&["plugin", "install", "kit@team"]).await;
    assert!(!install.status.success());
    assert!(
        stderr(&install).contains("leaves the plugin root"),
        "{}",
        stderr(&install)
    );
    assert!(!h.data_dir().join("plugins/cache/team").exists());
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

/// Runs `git` in `dir` with a fixed identity; panics on failure.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A bare repository holding the marketplace `team` with `kit` at
/// `version`; returns (bare repo, work tree).
fn git_marketplace(base: &Path, version: &str) -> (PathBuf, PathBuf) {
    let bare = base.join("market.git");
    let work = base.join("work");
    std::fs::create_dir_all(&bare).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    git(&bare, &["init", "--quiet", "--bare"]);
    git(&work, &["init", "--quiet"]);
    write(
        &work.join(".claude-plugin/marketplace.json"),
        &json!({"name": "team", "owner": {"name": "t"},
                "plugins": [{"name": "kit", "source": "./plugins/kit"}]})
        .to_string(),
    );
    write_kit(&work.join("plugins/kit"), version);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "--quiet", "-m", "one"]);
    git(
        &work,
        &["push", "--quiet", bare.to_str().unwrap(), "HEAD:main"],
    );
    (bare, work)
}

fn json_file(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn a_git_marketplace_installs_lists_disables_updates_and_uninstalls() {
    let h = Harness::new(QUIET, Wire::Anthropic).await;
    let repos = tempfile::tempdir().unwrap();
    let (bare, work) = git_marketplace(repos.path(), "1.0.0");
    let run = |args: Vec<&str>| {
        let h = &h;
        let args: Vec<String> = args.into_iter().map(str::to_string).collect();
        async move {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = h.cadre(&refs).await;
            assert!(
                out.status.success(),
                "{refs:?}: {}{}",
                stdout(&out),
                stderr(&out)
            );
            stdout(&out)
        }
    };
    let added = run(vec!["plugin", "marketplace", "add", bare.to_str().unwrap()]).await;
    assert!(added.contains("team"), "{added}");
    let plugins = h.data_dir().join("plugins");
    let known = json_file(&plugins.join("known_marketplaces.json"));
    assert_eq!(known["team"]["source"]["source"], "git", "{known}");
    assert!(
        plugins
            .join("marketplaces/team/.claude-plugin/marketplace.json")
            .is_file()
    );

    let installed = run(vec!["plugin", "install", "kit@team"]).await;
    assert!(installed.contains("kit@team 1.0.0"), "{installed}");
    let cached = plugins.join("cache/team/kit/1.0.0");
    assert!(cached.join(".claude-plugin/plugin.json").is_file());
    let record = json_file(&plugins.join("installed_plugins.json"));
    assert_eq!(record["version"], 2);
    assert_eq!(record["plugins"]["kit@team"][0]["scope"], "user");
    assert_eq!(record["plugins"]["kit@team"][0]["version"], "1.0.0");
    let settings = json_file(&h.data_dir().join("settings.json"));
    assert_eq!(settings["enabledPlugins"]["kit@team"], true);
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&plugins.join("installed_plugins.json")), 0o600);
    assert_eq!(mode(&plugins), 0o700);

    let list = run(vec!["plugin", "list"]).await;
    assert!(list.contains("kit@team  1.0.0  enabled"), "{list}");
    run(vec!["plugin", "disable", "kit"]).await;
    let settings = json_file(&h.data_dir().join("settings.json"));
    assert_eq!(settings["enabledPlugins"]["kit@team"], false);
    let list = run(vec!["plugin", "list"]).await;
    assert!(list.contains("kit@team  1.0.0  disabled"), "{list}");

    // A new commit with a new version: the update copies it beside the old one.
    write_kit(&work.join("plugins/kit"), "1.1.0");
    git(&work, &["commit", "--quiet", "-am", "two"]);
    git(
        &work,
        &["push", "--quiet", bare.to_str().unwrap(), "HEAD:main"],
    );
    let head = git(&work, &["rev-parse", "HEAD"]);
    let updated = run(vec!["plugin", "update", "kit@team"]).await;
    assert!(updated.contains("from 1.0.0 to 1.1.0"), "{updated}");
    assert!(
        plugins
            .join("cache/team/kit/1.1.0/.claude-plugin/plugin.json")
            .is_file()
    );
    assert!(cached.is_dir(), "the running version stays");
    let record = json_file(&plugins.join("installed_plugins.json"));
    let r = &record["plugins"]["kit@team"][0];
    assert_eq!(r["version"], "1.1.0");
    assert_eq!(r["gitCommitSha"], head.as_str());
    assert!(
        r["installPath"]
            .as_str()
            .unwrap()
            .ends_with("cache/team/kit/1.1.0")
    );
    let again = run(vec!["plugin", "update", "kit@team"]).await;
    assert!(again.contains("up to date"), "{again}");

    run(vec!["plugin", "uninstall", "kit@team"]).await;
    let record = json_file(&plugins.join("installed_plugins.json"));
    assert!(record["plugins"].get("kit@team").is_none(), "{record}");
    assert!(!plugins.join("cache/team/kit").exists());
    let settings = json_file(&h.data_dir().join("settings.json"));
    assert!(settings["enabledPlugins"].get("kit@team").is_none());

    let markets = run(vec!["plugin", "marketplace", "list"]).await;
    assert!(markets.contains("team"), "{markets}");
    run(vec!["plugin", "marketplace", "remove", "team"]).await;
    assert!(!plugins.join("marketplaces/team").exists());
}

#[tokio::test]
async fn validate_names_the_broken_file_and_refuses_escaping_paths() {
    let h = Harness::new(QUIET, Wire::Anthropic).await;
    let check = |dir: &'static str, strict: bool| {
        let h = &h;
        async move {
            let mut args = vec!["plugin", "validate", dir];
            if strict {
                args.push("--strict");
            }
            let out = h.cadre(&args).await;
            (out.status.success(), stdout(&out))
        }
    };
    h.write(
        "broken/.claude-plugin/plugin.json",
        r#"{"name": "x", "keywords": "a"}"#,
    );
    let (ok, text) = check("broken", false).await;
    assert!(!ok, "{text}");
    assert!(
        text.contains("broken/.claude-plugin/plugin.json") && text.contains("keywords"),
        "{text}"
    );

    h.write(
        "odd/.claude-plugin/plugin.json",
        r#"{"name": "x", "colour": "red"}"#,
    );
    let (ok, text) = check("odd", false).await;
    assert!(
        ok && text.contains("warning") && text.contains("colour"),
        "{text}"
    );
    let (ok, text) = check("odd", true).await;
    assert!(
        !ok && text.contains("error") && text.contains("colour"),
        "{text}"
    );

    h.write(
        "escape/.claude-plugin/plugin.json",
        r#"{"name": "x", "skills": "../outside"}"#,
    );
    let (ok, text) = check("escape", false).await;
    assert!(!ok && text.contains("leaves the plugin root"), "{text}");

    h.write("linked/.claude-plugin/plugin.json", r#"{"name": "x"}"#);
    std::os::unix::fs::symlink("/etc", h.path("linked/agents")).unwrap();
    let (ok, text) = check("linked", false).await;
    assert!(!ok && text.contains("outside the plugin root"), "{text}");
}

#[tokio::test]
async fn a_plugin_dir_loads_for_one_session() {
    let h = Harness::new(QUIET, Wire::Anthropic).await;
    h.write(
        "mine/skills/tidy/SKILL.md",
        "---\nname: tidy\ndescription: Tidy the tree\n---\nTidy.\n",
    );
    h.write("mine/.lsp.json", "{}");
    let out = h.cadre(&["exec", "--plugin-dir", "mine", "go"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let users = user_texts(&h.records()[0].body);
    assert!(users.contains("mine:tidy"), "{users}");
    // What cadre does not apply is named at start-up.
    let err = stderr(&out);
    assert!(
        err.contains("mine@inline") && err.contains("LSP servers"),
        "{err}"
    );
}

#[tokio::test]
async fn slash_plugin_lists_and_switches_plugins_in_the_line_front_end() {
    let script = r#"
rules:
  - name: chat
    step_by: requests
    replies:
      - text: "Answer one."
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    install_claude_way(&h, true);
    let pty = common::Pty::open();
    let mut cadre = common::line_session::Interactive::start(&h, &pty, &[]);
    pty.type_line("/plugin");
    pty.type_line("/plugin disable kit");
    pty.type_line("hello");
    cadre.wait_for_stdout("Answer one.").await;
    pty.type_line("/exit");
    assert!(cadre.exit_status().await, "{}", cadre.stderr());
    let err = cadre.stderr();
    assert!(err.contains("kit@tools  1.0.0  enabled"), "{err}");
    assert!(err.contains("disabled kit@tools"), "{err}");
    let settings = json_file(&h.data_dir().join("settings.json"));
    assert_eq!(settings["enabledPlugins"]["kit@tools"], false);
    assert!(!h.records()[0].body.to_string().contains("/plugin"));
}

/// A plugin cadre installed lives in its data directory, which sandboxed
/// commands cannot see: its `bin/` still runs from `Bash`, and nothing
/// else of the data directory becomes readable.
#[tokio::test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
async fn a_plugin_cadre_installed_runs_its_bin_in_the_sandbox_and_hides_the_rest() {
    let script = r#"
rules:
  - name: main
    replies:
      - tool_calls:
          - { name: Bash, input: { command: "kit-hello" } }
          - { name: Bash, input: { command: "cat \"$CADRE_HOME_SEEN/settings.json\"" } }
      - text: "done"
"#;
    let h = Harness::new(script, Wire::Anthropic).await;
    let repos = tempfile::tempdir().unwrap();
    let (bare, _work) = git_marketplace(repos.path(), "1.0.0");
    for args in [
        vec!["plugin", "marketplace", "add", bare.to_str().unwrap()],
        vec!["plugin", "install", "kit@team"],
    ] {
        let out = h.cadre(&args).await;
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    let data = h.data_dir().display().to_string();
    let out = h
        .cadre_env(
            &["exec", "--json", "--allow", "Bash", "go"],
            &[("CADRE_HOME_SEEN", &data)],
        )
        .await;
    assert!(out.status.success(), "{}", stderr(&out));
    common::require_landlock(&common::events(&out));
    let results = tool_results(&h.records().last().unwrap().body);
    assert!(
        !results[0].1 && results[0].0.contains("hello-from-kit-bin"),
        "{results:?}"
    );
    assert!(
        results[1].1 && !results[1].0.contains("enabledPlugins"),
        "{results:?}"
    );
}
