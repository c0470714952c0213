//! Where MCP servers are configured, in Claude Code's formats: the user's
//! `$CADRE_HOME/mcp.json` and `~/.claude.json` (its `mcpServers`, and the
//! ones it keeps for this project), the project's `.mcp.json` (which needs
//! workspace trust: its servers run with the user's rights), and files named
//! on the command line. A later scope wins for a name: user, then project,
//! then local, then the command line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::UNTRUSTED_WHY;
use crate::small_file::read_small_text;

/// Largest MCP configuration file read (`~/.claude.json` grows with history).
const MAX_MCP_CONFIG_BYTES: u64 = 16 * 1024 * 1024;

/// How cadre reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerTransport {
    /// A process cadre starts, speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to its environment (the only way a key reaches it).
        env: BTreeMap<String, String>,
    },
    /// A remote server over streamable HTTP.
    Http {
        /// Its endpoint.
        url: String,
        /// Headers sent with every request (`Authorization`, …).
        headers: BTreeMap<String, String>,
    },
}

/// Where a server's configuration comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ServerScope {
    /// The user's files.
    User,
    /// The project's `.mcp.json`.
    Project,
    /// `~/.claude.json`'s entry for this project.
    Local,
    /// `--mcp-config`.
    Flag,
    /// An inline entry of an agent definition's `mcpServers`.
    Definition,
    /// An enabled plugin's `.mcp.json` or manifest `mcpServers`.
    Plugin,
}

impl ServerScope {
    /// Its name as shown (`user`, `project`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ServerScope::User => "user",
            ServerScope::Project => "project",
            ServerScope::Local => "local",
            ServerScope::Flag => "command line",
            ServerScope::Definition => "definition",
            ServerScope::Plugin => "plugin",
        }
    }
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Its name (`github` in `mcp__github__search`).
    pub name: String,
    /// How to reach it, variables expanded.
    pub transport: ServerTransport,
    /// Which scope configured it.
    pub scope: ServerScope,
    /// The file it comes from.
    pub path: PathBuf,
}

/// Where to look.
#[derive(Debug, Clone, Default)]
pub struct McpPaths {
    /// `$CADRE_HOME`.
    pub data_dir: PathBuf,
    /// The project folder (`.mcp.json` lives here).
    pub project: PathBuf,
    /// The user's home directory (`~/.claude.json`), when known.
    pub home: Option<PathBuf>,
    /// The project folder is trusted: its servers may start.
    pub trusted: bool,
    /// `--mcp-config` files.
    pub flag_files: Vec<PathBuf>,
    /// `--strict-mcp-config`: only the flag files count.
    pub strict: bool,
    /// Variables cadre took out of its own environment at start-up (the
    /// model keys): an entry reaches them only by naming them, `${VAR}`.
    pub taken_vars: BTreeMap<String, String>,
}

/// The servers in force, with what the user should know.
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    /// By name.
    pub servers: BTreeMap<String, ServerConfig>,
    /// Entries that could not be used, each naming its file.
    pub warnings: Vec<String>,
    /// Project servers held back until the folder is trusted: (file, name).
    pub needs_trust: Vec<(PathBuf, String)>,
}

impl McpConfig {
    /// Reads every file `paths` names; a broken file is a warning, not an error.
    pub fn load(paths: &McpPaths) -> McpConfig {
        let mut config = McpConfig::default();
        let env = |name: &str| {
            paths
                .taken_vars
                .get(name)
                .cloned()
                .or_else(|| std::env::var(name).ok())
        };
        if !paths.strict {
            config.read_file(&paths.data_dir.join("mcp.json"), ServerScope::User, &env);
            // Read once (it can be large): its own servers now, this
            // folder's "local" ones after the project's, which they beat.
            let claude = paths.home.as_ref().and_then(|h| {
                let path = h.join(".claude.json");
                config.read_json(&path).map(|json| (path, json))
            });
            if let Some((path, json)) = &claude
                && let Some(servers) = json.get("mcpServers")
            {
                config.add_servers(servers, path, ServerScope::User, &env);
            }
            let project = paths.project.join(".mcp.json");
            if paths.trusted {
                config.read_file(&project, ServerScope::Project, &env);
            } else {
                let mut held = McpConfig::default();
                held.read_file(&project, ServerScope::Project, &env);
                config.warnings.append(&mut held.warnings);
                config
                    .needs_trust
                    .extend(held.servers.into_keys().map(|n| (project.clone(), n)));
            }
            let key = paths.project.to_string_lossy();
            if let Some((path, json)) = &claude
                && let Some(servers) = json
                    .get("projects")
                    .and_then(|p| p.get(key.as_ref()))
                    .and_then(|p| p.get("mcpServers"))
            {
                config.add_servers(servers, path, ServerScope::Local, &env);
            }
        }
        for file in &paths.flag_files {
            if !file.exists() {
                config
                    .warnings
                    .push(format!("--mcp-config {}: no such file", file.display()));
                continue;
            }
            config.read_file(file, ServerScope::Flag, &env);
        }
        config
    }

    /// Adds the servers of the enabled plugins, each named
    /// `plugin_<plugin>_<server>` (so its tools are
    /// `mcp__plugin_<plugin>_<server>__<tool>`), with `${CLAUDE_PLUGIN_ROOT}`,
    /// `${CLAUDE_PLUGIN_DATA}`, `${CLAUDE_PROJECT_DIR}` and
    /// `${user_config.KEY}` substituted, and the first two set in a stdio
    /// server's environment. cadre's model keys are not offered to them.
    pub fn add_plugin_servers(&mut self, plugins: &crate::plugins::PluginSet, project: &Path) {
        use crate::plugins::ComponentConfig;
        for plugin in &plugins.plugins {
            let env = |name: &str| -> Option<String> {
                match name {
                    "CLAUDE_PLUGIN_ROOT" => Some(plugin.root.to_string_lossy().into_owned()),
                    "CLAUDE_PLUGIN_DATA" => Some(plugin.data_dir.to_string_lossy().into_owned()),
                    "CLAUDE_PROJECT_DIR" => Some(project.to_string_lossy().into_owned()),
                    _ => match name.strip_prefix("user_config.") {
                        Some(key) => plugin
                            .user_config
                            .iter()
                            .find(|(k, _)| k == key)
                            .map(|(_, v)| v.clone()),
                        None if crate::secrets::secret_vars().iter().any(|s| s == name) => None,
                        None => std::env::var(name).ok(),
                    },
                }
            };
            for config in &plugin.mcp_servers {
                let (json, path) = match config {
                    ComponentConfig::File(path) => match self.read_json(path) {
                        Some(v) => (v, path.clone()),
                        None => continue,
                    },
                    ComponentConfig::Inline(v) => (
                        v.clone(),
                        plugin.root.join(crate::plugins::manifest::MANIFEST_PATH),
                    ),
                };
                // `.mcp.json` holds `{"mcpServers": {…}}`; a manifest's may be the servers.
                let servers = match json.get("mcpServers") {
                    Some(inner) => inner.clone(),
                    None => json,
                };
                let Some(map) = servers.as_object() else {
                    self.warnings
                        .push(format!("{}: `mcpServers` is not an object", path.display()));
                    continue;
                };
                for (name, entry) in map {
                    let full = format!("plugin_{}_{name}", plugin.name);
                    if !valid_server_name(name) || !valid_server_name(&full) {
                        self.warnings.push(format!(
                            "{}: MCP server {name:?} of plugin {} not used: a server name is letters, digits, `-` and `_` (no `__`)",
                            path.display(),
                            plugin.id
                        ));
                        continue;
                    }
                    // First come wins: a plugin's server never replaces one of
                    // yours or another plugin's (`a`'s `b_c` and `a_b`'s `c` meet).
                    if let Some(taken) = self.servers.get(&full) {
                        self.warnings.push(format!(
                            "{}: MCP server {name:?} of plugin {} not used: the name {full} is taken by {}",
                            path.display(),
                            plugin.id,
                            taken.path.display()
                        ));
                        continue;
                    }
                    match parse_server(name, entry, &env) {
                        Ok(mut transport) => {
                            if let ServerTransport::Stdio { env: vars, .. } = &mut transport {
                                for (k, v) in plugin.env() {
                                    vars.entry(k).or_insert(v);
                                }
                            }
                            self.servers.insert(
                                full.clone(),
                                ServerConfig {
                                    name: full,
                                    transport,
                                    scope: ServerScope::Plugin,
                                    path: path.clone(),
                                },
                            );
                        }
                        Err(why) => self.warnings.push(format!(
                            "{}: MCP server {name:?} of plugin {} not used: {why}",
                            path.display(),
                            plugin.id
                        )),
                    }
                }
            }
        }
    }

    /// The warning about project servers held back, if any.
    pub fn trust_warning(&self) -> Option<String> {
        let (path, _) = self.needs_trust.first()?;
        let names: Vec<&str> = self.needs_trust.iter().map(|(_, n)| n.as_str()).collect();
        Some(format!(
            "MCP servers of {} not started: {} ({UNTRUSTED_WHY}; `cadre config trust` or --trust)",
            path.display(),
            names.join(", ")
        ))
    }

    fn read_file(&mut self, path: &Path, scope: ServerScope, env: &dyn Fn(&str) -> Option<String>) {
        let Some(json) = self.read_json(path) else {
            return;
        };
        match json.get("mcpServers") {
            None => {}
            Some(servers) => self.add_servers(servers, path, scope, env),
        }
    }

    fn read_json(&mut self, path: &Path) -> Option<Value> {
        let text = match read_small_text(path, MAX_MCP_CONFIG_BYTES) {
            Ok(t) => t,
            Err(e) if e.is_not_found() => return None,
            Err(e) => {
                self.warnings.push(format!("{}: {e}", path.display()));
                return None;
            }
        };
        match serde_json::from_str(&text) {
            Ok(v) => Some(v),
            Err(e) => {
                self.warnings.push(format!(
                    "{}: not valid JSON ({e}); its MCP servers are ignored",
                    path.display()
                ));
                None
            }
        }
    }

    fn add_servers(
        &mut self,
        servers: &Value,
        path: &Path,
        scope: ServerScope,
        env: &dyn Fn(&str) -> Option<String>,
    ) {
        let Some(map) = servers.as_object() else {
            self.warnings
                .push(format!("{}: `mcpServers` is not an object", path.display()));
            return;
        };
        for (name, entry) in map {
            match parse_server(name, entry, env) {
                Ok(transport) => {
                    self.servers.insert(
                        name.clone(),
                        ServerConfig {
                            name: name.clone(),
                            transport,
                            scope,
                            path: path.to_path_buf(),
                        },
                    );
                }
                Err(why) => self.warnings.push(format!(
                    "{}: MCP server {name:?} not used: {why}",
                    path.display()
                )),
            }
        }
    }
}

/// Whether `name` can be a server name (it becomes part of tool names).
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !name.contains("__")
}

/// One `mcpServers` entry, variables expanded with `env`.
pub fn parse_server(
    name: &str,
    entry: &Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerTransport, String> {
    if !valid_server_name(name) {
        return Err("a server name is letters, digits, `-` and `_` (no `__`)".into());
    }
    let Some(obj) = entry.as_object() else {
        return Err("the entry is not an object".into());
    };
    let str_field = |key: &str| -> Result<Option<String>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => expand_vars(s, env).map(Some),
            Some(_) => Err(format!("`{key}` is not a string")),
        }
    };
    let map_field = |key: &str| -> Result<BTreeMap<String, String>, String> {
        let mut out = BTreeMap::new();
        match obj.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (k, v) in m {
                    let Some(v) = v.as_str() else {
                        return Err(format!("`{key}.{k}` is not a string"));
                    };
                    out.insert(k.clone(), expand_vars(v, env)?);
                }
            }
            Some(_) => return Err(format!("`{key}` is not an object")),
        }
        Ok(out)
    };
    let kind = str_field("type")?;
    match kind.as_deref() {
        None | Some("stdio") => {
            let Some(command) = str_field("command")? else {
                return Err(if obj.contains_key("url") {
                    "a server with a `url` needs `\"type\": \"http\"`".into()
                } else {
                    "no `command`".into()
                });
            };
            let args = match obj.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|a| match a.as_str() {
                        Some(s) => expand_vars(s, env),
                        None => Err("`args` holds a value that is not a string".into()),
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err("`args` is not a list".into()),
            };
            Ok(ServerTransport::Stdio {
                command,
                args,
                env: map_field("env")?,
            })
        }
        Some("http") | Some("streamable-http") => {
            let Some(url) = str_field("url")? else {
                return Err("no `url`".into());
            };
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("`url` {url:?} is not an http(s) address"));
            }
            Ok(ServerTransport::Http {
                url,
                headers: map_field("headers")?,
            })
        }
        Some("sse") => Err(
            "the legacy SSE transport is not supported; most servers also speak streamable HTTP (`\"type\": \"http\"`)"
                .into(),
        ),
        Some(other) => Err(format!("unknown `type` {other:?} (stdio or http)")),
    }
}

/// `text` with `${VAR}` and `${VAR:-default}` replaced from `env`; a variable
/// that is unset and has no default is an error naming it.
pub fn expand_vars(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match (
            env(name).filter(|v| !v.is_empty() || default.is_none()),
            default,
        ) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(format!("the variable {name} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `transport` as an `mcpServers` entry (for `cadre mcp add`).
pub fn server_entry(transport: &ServerTransport) -> Value {
    match transport {
        ServerTransport::Stdio { command, args, env } => {
            let mut v = serde_json::json!({"type": "stdio", "command": command, "args": args});
            if !env.is_empty() {
                v["env"] = serde_json::json!(env);
            }
            v
        }
        ServerTransport::Http { url, headers } => {
            let mut v = serde_json::json!({"type": "http", "url": url});
            if !headers.is_empty() {
                v["headers"] = serde_json::json!(headers);
            }
            v
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn plugin_servers_are_namespaced_and_get_the_plugins_variables() {
        use crate::plugins::{ComponentConfig, Plugin, PluginSet};
        let mut plugin =
            Plugin::default_layout("kit", "kit@m", Path::new("/p/kit"), Path::new("/d/kit"));
        plugin.user_config = vec![("REGION".into(), "eu".into())];
        plugin.mcp_servers = vec![ComponentConfig::Inline(serde_json::json!({
            "db": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/db", "args": ["--region", "${user_config.REGION}"]},
            "bad__name": {"command": "x"},
            "keyed": {"command": "x", "env": {"K": "${ANTHROPIC_API_KEY}"}}
        }))];
        let set = PluginSet {
            plugins: vec![plugin],
            ..PluginSet::default()
        };
        let mut config = McpConfig::default();
        config.add_plugin_servers(&set, Path::new("/proj"));
        let server = &config.servers["plugin_kit_db"];
        assert_eq!(server.scope, ServerScope::Plugin);
        let ServerTransport::Stdio { command, args, env } = &server.transport else {
            panic!("stdio expected");
        };
        assert_eq!(command, "/p/kit/bin/db");
        assert_eq!(args, &["--region", "eu"]);
        assert_eq!(env["CLAUDE_PLUGIN_DATA"], "/d/kit");
        assert!(!config.servers.contains_key("plugin_kit_bad__name"));
        // cadre's model keys are not offered to a plugin's servers.
        assert!(!config.servers.contains_key("plugin_kit_keyed"));
        assert_eq!(config.warnings.len(), 2, "{:?}", config.warnings);
    }

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("t0k".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_expand_with_defaults_and_unset_ones_are_named() {
        assert_eq!(expand_vars("a ${TOKEN} b", &env).unwrap(), "a t0k b");
        assert_eq!(expand_vars("${NOPE:-dflt}/x", &env).unwrap(), "dflt/x");
        assert_eq!(expand_vars("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(expand_vars("${EMPTY}", &env).unwrap(), "");
        assert_eq!(expand_vars("no vars $HOME", &env).unwrap(), "no vars $HOME");
        assert_eq!(
            expand_vars("${NOPE}", &env).unwrap_err(),
            "the variable NOPE is not set"
        );
    }

    #[test]
    fn entries_parse_in_claude_codes_shapes() {
        let stdio = serde_json::json!({"command": "npx", "args": ["-y", "srv", "${TOKEN}"], "env": {"K": "${TOKEN}"}});
        assert_eq!(
            parse_server("s", &stdio, &env).unwrap(),
            ServerTransport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "srv".into(), "t0k".into()],
                env: BTreeMap::from([("K".into(), "t0k".into())]),
            }
        );
        let http = serde_json::json!({"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}});
        assert!(matches!(
            parse_server("h", &http, &env).unwrap(),
            ServerTransport::Http { headers, .. } if headers["Authorization"] == "Bearer t0k"
        ));
        for (name, bad, why) in [
            ("a__b", serde_json::json!({"command": "x"}), "no `__`"),
            (
                "s",
                serde_json::json!({"url": "https://x"}),
                "\"type\": \"http\"",
            ),
            (
                "s",
                serde_json::json!({"type": "sse", "url": "https://x"}),
                "SSE",
            ),
            (
                "s",
                serde_json::json!({"command": "x", "args": "y"}),
                "not a list",
            ),
            ("s", serde_json::json!({"command": "${NOPE}"}), "NOPE"),
        ] {
            let err = parse_server(name, &bad, &env).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn scopes_layer_and_project_servers_wait_for_trust() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let data = dir.path().join("data");
        let project = dir.path().join("proj");
        for d in [&home, &data, &project] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(
            data.join("mcp.json"),
            r#"{"mcpServers": {"a": {"command": "user-a"}, "b": {"command": "user-b"}}}"#,
        )
        .unwrap();
        std::fs::write(
            project.join(".mcp.json"),
            r#"{"mcpServers": {"b": {"command": "project-b"}, "c": {"command": "project-c"}}}"#,
        )
        .unwrap();
        let claude = serde_json::json!({
            "mcpServers": {"d": {"command": "claude-d"}},
            "projects": {project.to_string_lossy(): {"mcpServers": {"c": {"command": "local-c"}}}}
        });
        std::fs::write(home.join(".claude.json"), claude.to_string()).unwrap();
        let mut paths = McpPaths {
            data_dir: data,
            project: project.clone(),
            home: Some(home),
            trusted: false,
            ..McpPaths::default()
        };
        let command = |c: &McpConfig, n: &str| match &c.servers[n].transport {
            ServerTransport::Stdio { command, .. } => command.clone(),
            ServerTransport::Http { url, .. } => url.clone(),
        };
        let untrusted = McpConfig::load(&paths);
        assert_eq!(command(&untrusted, "b"), "user-b");
        assert_eq!(command(&untrusted, "c"), "local-c");
        assert_eq!(command(&untrusted, "d"), "claude-d");
        let warning = untrusted.trust_warning().unwrap();
        assert!(warning.contains("b, c"), "{warning}");
        paths.trusted = true;
        let trusted = McpConfig::load(&paths);
        assert_eq!(command(&trusted, "b"), "project-b");
        assert_eq!(command(&trusted, "c"), "local-c", "local beats project");
        assert!(trusted.trust_warning().is_none());
        let flag = project.join("only.json");
        std::fs::write(&flag, r#"{"mcpServers": {"f": {"command": "flag-f"}}}"#).unwrap();
        paths.flag_files = vec![flag];
        paths.strict = true;
        let strict = McpConfig::load(&paths);
        assert_eq!(strict.servers.keys().collect::<Vec<_>>(), ["f"]);
    }
}
