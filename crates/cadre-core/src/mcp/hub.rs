//! The session's MCP servers: all started at once when the session starts,
//! each reported as it becomes ready or fails (a failed one never holds the
//! session up), their tools offered to the main agent and, through its
//! tools, to children.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::config::{McpConfig, ServerConfig};
use super::prompts::{command_name, map_arguments};
use super::resources::{ListMcpResourcesTool, ReadMcpResourceTool, ResourceInfo};
use super::server::{McpServer, McpTimeouts, ServerState};
use crate::protocol::{Event, EventSink, McpStatus};
use crate::tools::{DEFAULT_OUTPUT_CAP, Tool, cap_output};

/// An MCP server's prompt, offered as a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCommand {
    /// `mcp__<server>__<prompt>` (no slash).
    pub command: String,
    /// What the server says it does.
    pub description: String,
    /// Its arguments' names, in order (`argument-hint`).
    pub arguments: Vec<String>,
}

/// Why `server` is not connected, or `None` when it is.
fn not_connected(server: &McpServer) -> Option<String> {
    let why = match server.state() {
        ServerState::Ready(_) => return None,
        ServerState::Starting => "it has not started".to_string(),
        ServerState::Failed(why) => why,
        ServerState::Closed => "it is closed".to_string(),
    };
    Some(format!(
        "MCP server {} is not connected: {why}",
        server.name()
    ))
}

/// Counts one start down when dropped.
struct PendingGuard(tokio::sync::watch::Sender<usize>);

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// The session's servers.
pub struct McpHub {
    servers: Vec<Arc<McpServer>>,
    generation: Arc<AtomicU64>,
    pending: tokio::sync::watch::Sender<usize>,
    cwd: PathBuf,
    log_dir: PathBuf,
    timeouts: McpTimeouts,
    /// Most bytes each server's log keeps.
    log_cap: AtomicU64,
}

impl McpHub {
    /// The servers of `config`, not started; their logs go to `log_dir`.
    pub fn new(config: &McpConfig, cwd: &Path, log_dir: &Path, timeouts: McpTimeouts) -> McpHub {
        let generation = Arc::new(AtomicU64::new(0));
        let servers = config
            .servers
            .values()
            .map(|c| {
                Arc::new(McpServer::new(
                    c.clone(),
                    cwd,
                    log_dir,
                    timeouts,
                    generation.clone(),
                ))
            })
            .collect();
        McpHub {
            servers,
            generation,
            pending: tokio::sync::watch::Sender::new(0),
            cwd: cwd.to_path_buf(),
            log_dir: log_dir.to_path_buf(),
            timeouts,
            log_cap: AtomicU64::new(super::stdio::DEFAULT_LOG_CAP),
        }
    }

    /// Caps what each server's log keeps at `bytes`, for its servers and
    /// those made later with [`McpHub::dedicated`].
    pub fn set_log_cap(&self, bytes: u64) {
        self.log_cap.store(bytes, Ordering::Relaxed);
        for server in &self.servers {
            server.set_log_cap(bytes);
        }
    }

    /// Its servers.
    pub fn servers(&self) -> &[Arc<McpServer>] {
        &self.servers
    }

    /// Whether it has no server.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Starts every server at once, reporting each to `events`; returns at
    /// once (see [`McpHub::settled`]).
    pub fn start_all(&self, events: &EventSink) {
        self.pending.send_replace(self.servers.len());
        for server in &self.servers {
            let server = server.clone();
            let events = events.clone();
            let pending = self.pending.clone();
            events.emit(Event::McpServerStatus {
                server: server.name().to_string(),
                status: McpStatus::Starting,
                tools: None,
                message: None,
            });
            tokio::spawn(async move {
                // Counted down however the start ends, a panic included, so
                // `settled` never waits for a start that is gone.
                let _done = PendingGuard(pending);
                let result = server.start().await;
                let (status, tools, message) = match result {
                    Ok(n) => (McpStatus::Ready, Some(n), None),
                    Err(e) => (McpStatus::Failed, None, Some(e)),
                };
                events.emit(Event::McpServerStatus {
                    server: server.name().to_string(),
                    status,
                    tools,
                    message,
                });
            });
        }
    }

    /// Waits until every server started by [`McpHub::start_all`] is ready or
    /// has failed (each within its own start-up timeout).
    pub async fn settled(&self) {
        let mut rx = self.pending.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// Bumped whenever a server's tools change.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Lists again the tools of servers that said theirs changed.
    pub async fn refresh(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.refresh_if_changed())).await;
    }

    /// The tools of every ready server, in server then tool order, then
    /// `ListMcpResourcesTool` and `ReadMcpResourceTool` when a ready server
    /// lists resources.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> =
            self.servers.iter().flat_map(|s| s.agent_tools()).collect();
        if self.servers.iter().any(|s| !s.resources().is_empty()) {
            tools.push(Arc::new(ListMcpResourcesTool::new(self.servers.clone())));
            tools.push(Arc::new(ReadMcpResourceTool::new(self.servers.clone())));
        }
        tools
    }

    /// The server named `name`.
    pub fn server(&self, name: &str) -> Option<&Arc<McpServer>> {
        self.servers.iter().find(|s| s.name() == name)
    }

    /// A server of its own for one agent (a definition's inline
    /// `mcpServers` entry), not started, with the session's folder, log
    /// folder and timeouts; its tool changes are its own.
    pub fn dedicated(&self, config: ServerConfig) -> Arc<McpServer> {
        let server = McpServer::new(
            config,
            &self.cwd,
            &self.log_dir,
            self.timeouts,
            Arc::new(AtomicU64::new(0)),
        );
        server.set_log_cap(self.log_cap.load(Ordering::Relaxed));
        Arc::new(server)
    }

    /// Each ready server's `instructions` (from `initialize`, cut at 2 KiB
    /// on a character boundary and marked `[instructions cut]`), by server
    /// name, in server order.
    pub fn instructions(&self) -> Vec<(String, String)> {
        self.servers
            .iter()
            .filter_map(|s| s.instructions().map(|i| (s.name().to_string(), i)))
            .collect()
    }

    /// The prompts of every ready server, as `/mcp__<server>__<prompt>` commands.
    pub fn prompt_commands(&self) -> Vec<PromptCommand> {
        self.servers
            .iter()
            .flat_map(|s| {
                s.prompts()
                    .iter()
                    .map(|p| PromptCommand {
                        command: command_name(s.name(), &p.name),
                        description: p.description.clone(),
                        arguments: p.arguments.iter().map(|a| a.name.clone()).collect(),
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Runs the prompt command `name` (`mcp__<server>__<prompt>`, no slash)
    /// with `args` as typed after it: the text of the messages the server
    /// returns, to send as the user's message. Servers still starting are
    /// waited for first (each within its start-up timeout), and lists a
    /// server said changed are read again. `None` when no server has that
    /// prompt; an error when the server it names is not connected.
    ///
    /// The words are split like a shell's (quotes group) and given to the
    /// prompt's arguments in order, or by `name=value` (see
    /// [`map_arguments`]); a missing required argument is an error naming
    /// it. Messages are joined by a blank line whatever their role: text as
    /// it is, embedded resources as their text under their URI, images and
    /// audio as a placeholder naming them.
    pub async fn run_prompt_command(
        &self,
        name: &str,
        args: &str,
    ) -> Option<Result<String, String>> {
        // A command typed at once (`cadre exec "/mcp__s__p"`) comes before
        // the servers are ready.
        self.settled().await;
        self.refresh().await;
        let found = self.servers.iter().find_map(|s| {
            s.prompts()
                .iter()
                .find(|p| command_name(s.name(), &p.name) == name)
                .cloned()
                .map(|p| (s.clone(), p))
        });
        let Some((server, prompt)) = found else {
            return self.unconnected_server(name).map(Err);
        };
        let arguments = match map_arguments(name, &prompt.arguments, args) {
            Ok(a) => a,
            Err(e) => return Some(Err(format!("/{name}: {e}"))),
        };
        Some(
            server
                .get_prompt(&prompt.name, arguments)
                .await
                .map_err(|e| format!("/{name}: {e}")),
        )
    }

    /// Why the server a prompt command names (`mcp__<server>__…`) cannot
    /// run it: it is configured but not connected. `None` when no such
    /// server is configured or it is connected.
    fn unconnected_server(&self, command: &str) -> Option<String> {
        let rest = command.strip_prefix(super::MCP_TOOL_PREFIX)?;
        // Server names never hold `__`, so the first one ends the name.
        let (name, _) = rest.split_once("__")?;
        let server = self.server(name)?;
        not_connected(server).map(|why| format!("/{command}: {why}"))
    }

    /// Reads the resource `uri` of `server`, as text to attach to a message:
    /// its text contents, binary contents described (type and size), cut
    /// like a tool's output (64 KiB, marked). Servers still starting are
    /// waited for first (each within its start-up timeout).
    pub async fn read_resource_text(&self, server: &str, uri: &str) -> Result<String, String> {
        let Some(found) = self.server(server) else {
            return Err(format!("no MCP server named {server}"));
        };
        self.settled().await;
        if let Some(why) = not_connected(found) {
            return Err(why);
        }
        let cancel = tokio_util::sync::CancellationToken::new();
        let text = found.read_resource(uri, &cancel).await?;
        Ok(cap_output(text, DEFAULT_OUTPUT_CAP))
    }

    /// The resources every ready server lists, with its name, in server order.
    pub fn resources(&self) -> Vec<(String, ResourceInfo)> {
        self.servers
            .iter()
            .flat_map(|s| {
                s.resources()
                    .iter()
                    .map(|r| (s.name().to_string(), r.clone()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Closes every connection (stdio servers' processes end).
    pub async fn close_all(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.close())).await;
    }
}
