//! `cadre mcp list | get | add | remove | serve`, as `claude mcp` has them:
//! the configured MCP servers with their state, one server's entry, adding or
//! removing an entry in cadre's own files (`$CADRE_HOME/mcp.json` for the
//! user, `.mcp.json` for the project), and cadre itself as a server
//! (`mcp_serve`). `/mcp` shows the same list for the running session.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use cadre_core::config::{data_dir, ensure_private_dir};
use cadre_core::mcp::config::server_entry;
use cadre_core::mcp::{McpConfig, McpHub, ServerConfig, ServerState, ServerTransport};
use cadre_core::protocol::EventSink;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Map, Value};

use crate::setup::{folder_trusted, mcp_log_dir, mcp_paths, mcp_timeouts};
use crate::{AgentArgs, ModelArgs, PermissionArgs, UsageError};

/// Arguments of `cadre mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

/// Which file `add` and `remove` change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Scope {
    /// `$CADRE_HOME/mcp.json`: every project of yours.
    User,
    /// `.mcp.json` in this folder: shared with the project (needs trust to run).
    Project,
}

/// How `add` reaches the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Transport {
    /// A program cadre starts, speaking MCP on stdin and stdout.
    Stdio,
    /// A remote server over streamable HTTP.
    Http,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Every configured server: starts each (as a session would) and shows
    /// whether it connected and how many tools it offers.
    List,
    /// One server's entry: where it is configured and how it is reached.
    Get {
        /// The server's name.
        name: String,
    },
    /// Adds a server: `cadre mcp add NAME -- CMD ARGS…`, or
    /// `cadre mcp add --transport http NAME URL`.
    Add {
        /// Which file to write.
        #[arg(long, short = 's', value_enum, default_value = "user")]
        scope: Scope,
        /// stdio (a command) or http (a URL).
        #[arg(long, short = 't', value_enum, default_value = "stdio")]
        transport: Transport,
        /// A variable for the server's environment, KEY=VALUE (repeatable).
        #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// An HTTP header, "Name: value" (repeatable).
        #[arg(long = "header", short = 'H', value_name = "HEADER")]
        headers: Vec<String>,
        /// The server's name (`github` in `mcp__github__search`).
        name: String,
        /// The command and its arguments (stdio), or the URL (http).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        target: Vec<String>,
    },
    /// Removes a server from cadre's user or project file.
    Remove {
        /// Which file to change (default: the one that has it).
        #[arg(long, short = 's', value_enum)]
        scope: Option<Scope>,
        /// The server's name.
        name: String,
    },
    /// Serves cadre's tools (Read, Write, Edit, Glob, Grep, Bash and Agent,
    /// which runs a subagent) to an MCP client over stdio, under the same
    /// permission rules and mode; a call that would need a question is refused.
    Serve,
}

/// Runs `cadre mcp …`.
pub async fn run(
    model: &ModelArgs,
    perms: &PermissionArgs,
    agent: &AgentArgs,
    args: McpArgs,
) -> Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let home = data_dir()?;
    match args.command {
        McpCommand::List => {
            let mut warnings = Vec::new();
            let trusted = folder_trusted(&home, &cwd, perms, &mut warnings);
            let mut config = McpConfig::load(&mcp_paths(&home, &cwd, trusted, agent));
            if !agent.strict_mcp_config {
                // The enabled plugins' servers, as a session starts them.
                let settings = cadre_core::config::Settings::load_with(
                    &crate::setup::settings_paths(&home, &cwd, trusted),
                )?;
                let plugins = crate::setup::load_plugins(&home, &cwd, &settings, trusted, perms);
                config.add_plugin_servers(&plugins, &cwd);
            }
            warnings.extend(config.warnings.iter().cloned());
            warnings.extend(config.trust_warning());
            for w in &warnings {
                eprintln!("warning: {w}");
            }
            if config.servers.is_empty() && config.needs_trust.is_empty() {
                println!(
                    "No MCP servers configured. Add one with `cadre mcp add NAME -- CMD ARGS…`."
                );
                return Ok(ExitCode::SUCCESS);
            }
            ensure_private_dir(&home)?;
            let hub = McpHub::new(
                &config,
                &cwd,
                &mcp_log_dir(&home),
                mcp_timeouts(&mut Vec::new()),
            );
            hub.start_all(&EventSink::discard());
            hub.settled().await;
            // Only servers held back by trust: no "none configured" before them.
            if !hub.is_empty() || config.needs_trust.is_empty() {
                println!("{}", describe_servers(&hub));
            }
            for (_, name) in &config.needs_trust {
                println!("{name}: not started (the folder is not trusted)");
            }
            hub.close_all().await;
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Get { name } => {
            let trusted = folder_trusted(&home, &cwd, perms, &mut Vec::new());
            let config = McpConfig::load(&mcp_paths(&home, &cwd, true, agent));
            let Some(server) = config.servers.get(&name) else {
                bail!(UsageError(format!(
                    "no MCP server named {name}; configured: {}",
                    names(&config)
                )));
            };
            print!("{}", describe_entry(server, trusted));
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Add {
            scope,
            transport,
            env,
            headers,
            name,
            target,
        } => {
            let transport = new_transport(transport, &target, &env, &headers)?;
            let file = scope_file(scope, &home, &cwd)?;
            if !cadre_core::mcp::config::valid_server_name(&name) {
                bail!(UsageError(format!(
                    "bad server name {name:?}: letters, digits, `-` and `_` (no `__`)"
                )));
            }
            let mut json = read_entries(&file)?;
            let servers = servers_of(&mut json, &file)?;
            if servers.contains_key(&name) {
                bail!(UsageError(format!(
                    "{} already has a server named {name}; remove it first (`cadre mcp remove {name}`)",
                    file.display()
                )));
            }
            servers.insert(name.clone(), server_entry(&transport));
            write_entries(&file, &json, scope)?;
            println!("Added MCP server {name} to {}", file.display());
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Remove { scope, name } => {
            let scopes = match scope {
                Some(s) => vec![s],
                None => vec![Scope::User, Scope::Project],
            };
            for scope in scopes {
                let file = scope_file(scope, &home, &cwd)?;
                if !file.exists() {
                    continue;
                }
                let mut json = read_entries(&file)?;
                let servers = servers_of(&mut json, &file)?;
                if servers.remove(&name).is_some() {
                    write_entries(&file, &json, scope)?;
                    println!("Removed MCP server {name} from {}", file.display());
                    return Ok(ExitCode::SUCCESS);
                }
            }
            let config = McpConfig::load(&mcp_paths(&home, &cwd, true, agent));
            match config.servers.get(&name) {
                Some(server) => bail!(UsageError(format!(
                    "MCP server {name} is configured in {}, which cadre does not change; edit that file",
                    server.path.display()
                ))),
                None => bail!(UsageError(format!("no MCP server named {name}"))),
            }
        }
        McpCommand::Serve => crate::mcp_serve::run(model, perms, agent).await,
    }
}

/// The servers of `hub` with their state, one line each
/// (`github: npx -y server-github · ready · 26 tools · 2 prompts`), then
/// a ready one's tools, prompt commands and resources (`@server:uri`).
pub fn describe_servers(hub: &McpHub) -> String {
    if hub.is_empty() {
        return "No MCP servers configured.".to_string();
    }
    let mut lines = Vec::new();
    for server in hub.servers() {
        let target = target_text(&server.config().transport);
        let state = match server.state() {
            ServerState::Starting => "starting".to_string(),
            ServerState::Ready(tools) => {
                let count =
                    |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
                let mut text = format!("ready · {}", count(tools.len(), "tool"));
                for (n, what) in [
                    (server.prompts().len(), "prompt"),
                    (server.resources().len(), "resource"),
                ] {
                    if n > 0 {
                        text.push_str(&format!(" · {}", count(n, what)));
                    }
                }
                text
            }
            ServerState::Failed(why) => format!("failed: {why}"),
            ServerState::Closed => "closed".to_string(),
        };
        lines.push(format!("{}: {target} · {state}", server.name()));
        if let ServerState::Ready(tools) = server.state() {
            for tool in tools.iter() {
                lines.push(format!("  {}", tool.full_name));
            }
            for prompt in server.prompts().iter() {
                let command = cadre_core::mcp::prompts::command_name(server.name(), &prompt.name);
                lines.push(format!(
                    "  {}",
                    cadre_core::mcp::prompts::usage(&command, &prompt.arguments)
                ));
            }
            for resource in server.resources().iter() {
                lines.push(format!("  @{}:{}", server.name(), resource.uri));
            }
        }
    }
    lines.join("\n")
}

/// How a server is reached, in a few words (never its variables' or headers' values).
fn target_text(transport: &ServerTransport) -> String {
    match transport {
        ServerTransport::Stdio { command, args, .. } => std::iter::once(command)
            .chain(args)
            .map(|w| quoted(w))
            .collect::<Vec<_>>()
            .join(" "),
        ServerTransport::Http { url, .. } => format!("{url} (http)"),
    }
}

/// A word as a shell would need it to stay one word.
fn quoted(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@,+%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn describe_entry(server: &ServerConfig, trusted: bool) -> String {
    let mut out = format!(
        "{}:\n  scope: {}\n  file: {}\n",
        server.name,
        server.scope.as_str(),
        server.path.display()
    );
    if server.scope == cadre_core::mcp::ServerScope::Project && !trusted {
        out.push_str("  not started: the folder is not trusted (`cadre config trust`)\n");
    }
    match &server.transport {
        ServerTransport::Stdio { command, args, env } => {
            out.push_str("  type: stdio\n");
            out.push_str(&format!("  command: {command}\n"));
            let args: Vec<String> = args.iter().map(|a| quoted(a)).collect();
            out.push_str(&format!("  args: {}\n", args.join(" ")));
            if !env.is_empty() {
                let keys: Vec<&str> = env.keys().map(String::as_str).collect();
                out.push_str(&format!("  env: {}\n", keys.join(", ")));
            }
        }
        ServerTransport::Http { url, headers } => {
            out.push_str("  type: http\n");
            out.push_str(&format!("  url: {url}\n"));
            if !headers.is_empty() {
                let keys: Vec<&str> = headers.keys().map(String::as_str).collect();
                out.push_str(&format!("  headers: {}\n", keys.join(", ")));
            }
        }
    }
    out
}

fn names(config: &McpConfig) -> String {
    if config.servers.is_empty() {
        return "none".into();
    }
    config
        .servers
        .keys()
        .cloned()
        .collect::<Vec<_>>()
        .join(", ")
}

fn new_transport(
    kind: Transport,
    target: &[String],
    env: &[String],
    headers: &[String],
) -> Result<ServerTransport> {
    match kind {
        Transport::Stdio => {
            let Some((command, args)) = target.split_first() else {
                bail!(UsageError("give the command after --".into()));
            };
            let mut vars = BTreeMap::new();
            for pair in env {
                let Some((k, v)) = pair.split_once('=') else {
                    bail!(UsageError(format!("--env {pair}: give KEY=VALUE")));
                };
                vars.insert(k.to_string(), v.to_string());
            }
            Ok(ServerTransport::Stdio {
                command: command.clone(),
                args: args.to_vec(),
                env: vars,
            })
        }
        Transport::Http => {
            let [url] = target else {
                bail!(UsageError("give one URL after the name".into()));
            };
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                bail!(UsageError(format!("{url} is not an http(s) address")));
            }
            let mut map = BTreeMap::new();
            for header in headers {
                let Some((k, v)) = header.split_once(':') else {
                    bail!(UsageError(format!(
                        "--header {header}: give \"Name: value\""
                    )));
                };
                map.insert(k.trim().to_string(), v.trim().to_string());
            }
            Ok(ServerTransport::Http {
                url: url.clone(),
                headers: map,
            })
        }
    }
}

fn scope_file(scope: Scope, home: &Path, cwd: &Path) -> Result<PathBuf> {
    Ok(match scope {
        Scope::User => {
            ensure_private_dir(home)?;
            home.join("mcp.json")
        }
        Scope::Project => cwd.join(".mcp.json"),
    })
}

fn read_entries(file: &Path) -> Result<Value> {
    match std::fs::read_to_string(file) {
        Ok(text) => serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON; fix it first", file.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Value::Object(Map::new())),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", file.display())),
    }
}

fn servers_of<'a>(json: &'a mut Value, file: &Path) -> Result<&'a mut Map<String, Value>> {
    let Some(obj) = json.as_object_mut() else {
        bail!("{} is not a JSON object; fix it first", file.display());
    };
    obj.entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .with_context(|| format!("{}: `mcpServers` is not an object", file.display()))
}

/// Writes through a temporary file, so a failed write leaves the old file;
/// the user's file is 0600 (its entries may hold tokens).
fn write_entries(file: &Path, json: &Value, scope: Scope) -> Result<()> {
    let text = serde_json::to_string_pretty(json)? + "\n";
    let dir = file.parent().unwrap_or(Path::new("."));
    let tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    std::fs::write(tmp.path(), text)?;
    if scope == Scope::Project {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.persist(file)
        .with_context(|| format!("cannot write {}", file.display()))?;
    Ok(())
}
