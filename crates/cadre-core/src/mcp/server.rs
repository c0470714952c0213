//! One MCP server: its connection through `rmcp` (a child process over
//! stdio, or streamable HTTP), its tools, and its calls. A server that
//! dies is started again on its next use, once.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientConfig, Implementation};
use rmcp::service::ClientInitializeError;
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::config::{ServerConfig, ServerTransport};
use super::content::{McpResult, convert_result};
use super::stdio::{ChildTransport, DEFAULT_LOG_CAP, StderrTail, TOO_LARGE, copy_stderr};
use crate::tools::untrusted_text::sanitize_report;

/// Most tools taken from one server: a server listing thousands would fill
/// the context window with their schemas.
pub const MAX_TOOLS_PER_SERVER: usize = 256;
/// Longest tool description kept, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 2048;
/// Largest input schema kept, in bytes of JSON; a larger one is replaced by
/// an open object schema.
pub const MAX_SCHEMA_BYTES: usize = 32 * 1024;
/// Largest reply read from an HTTP server.
const MAX_HTTP_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// How long cadre waits for a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpTimeouts {
    /// For it to start and list its tools.
    pub startup: Duration,
    /// For one tool call.
    pub call: Duration,
}

impl Default for McpTimeouts {
    fn default() -> Self {
        McpTimeouts {
            startup: Duration::from_secs(30),
            call: Duration::from_secs(60),
        }
    }
}

/// A tool a server offers, as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerTool {
    /// `mcp__<server>__<tool>`.
    pub full_name: String,
    /// The tool's own name on its server.
    pub name: String,
    /// Its description (capped, harness-like text escaped).
    pub description: String,
    /// Its input schema.
    pub schema: Value,
    /// The server marks it read-only (`readOnlyHint`).
    pub read_only: bool,
}

/// Where a server stands.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerState {
    /// Connecting.
    Starting,
    /// Connected, with its tools.
    Ready(Arc<Vec<ServerTool>>),
    /// It could not start, or died and could not start again: why.
    Failed(String),
    /// Closed by cadre.
    Closed,
}

/// What the connection reports back: tool-list changes.
#[derive(Clone)]
struct Listener {
    changed: Arc<AtomicBool>,
}

impl ClientHandler for Listener {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.changed.store(true, Ordering::SeqCst);
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.client_info = Implementation::new("cadre", env!("CARGO_PKG_VERSION"));
        info
    }
}

type Connection = RunningService<RoleClient, Listener>;

/// One configured server and its connection.
pub struct McpServer {
    config: ServerConfig,
    cwd: PathBuf,
    log_path: PathBuf,
    timeouts: McpTimeouts,
    connection: tokio::sync::Mutex<Option<Arc<Connection>>>,
    state: Mutex<ServerState>,
    changed: Arc<AtomicBool>,
    restarted: AtomicBool,
    /// Bumped whenever the tools change (ready, relisted, failed).
    generation: Arc<AtomicU64>,
    /// Most bytes its log keeps.
    log_cap: AtomicU64,
}

impl McpServer {
    /// A server not yet started; its stderr will go to `log_dir/<name>.log`;
    /// `generation` is bumped whenever its tools change.
    pub fn new(
        config: ServerConfig,
        cwd: &Path,
        log_dir: &Path,
        timeouts: McpTimeouts,
        generation: Arc<AtomicU64>,
    ) -> McpServer {
        let log_path = log_dir.join(format!("{}.log", config.name));
        McpServer {
            config,
            cwd: cwd.to_path_buf(),
            log_path,
            timeouts,
            connection: tokio::sync::Mutex::new(None),
            state: Mutex::new(ServerState::Starting),
            changed: Arc::new(AtomicBool::new(false)),
            restarted: AtomicBool::new(false),
            generation,
            log_cap: AtomicU64::new(DEFAULT_LOG_CAP),
        }
    }

    /// Caps what its log keeps at `bytes` (8 MiB unless set).
    pub fn set_log_cap(&self, bytes: u64) {
        self.log_cap.store(bytes, Ordering::Relaxed);
    }

    /// Where its stderr goes.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// Its tools as the agent's tools, when it is ready.
    pub fn agent_tools(self: &Arc<Self>) -> Vec<Arc<dyn crate::tools::Tool>> {
        match self.state() {
            ServerState::Ready(tools) => tools
                .iter()
                .map(|t| {
                    Arc::new(super::tool::McpTool::new(self.clone(), t.clone()))
                        as Arc<dyn crate::tools::Tool>
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Its configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Where it stands now.
    pub fn state(&self) -> ServerState {
        self.state
            .lock()
            .map(|s| s.clone())
            .unwrap_or(ServerState::Closed)
    }

    fn set_state(&self, state: ServerState) {
        if let Ok(mut s) = self.state.lock() {
            *s = state;
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Connects and lists the tools, within the start-up timeout. `Ok`: the
    /// tool count.
    #[expect(
        clippy::await_holding_invalid_type,
        reason = "the slot stays locked while connecting so that two callers never start the same server twice"
    )]
    pub async fn start(&self) -> Result<usize, String> {
        let mut slot = self.connection.lock().await;
        self.start_locked(&mut slot).await
    }

    async fn start_locked(&self, slot: &mut Option<Arc<Connection>>) -> Result<usize, String> {
        if let Some(old) = slot.take() {
            old.cancellation_token().cancel();
        }
        let started = tokio::time::timeout(self.timeouts.startup, self.connect()).await;
        let result = match started {
            Ok(Ok((conn, tools))) => {
                let count = tools.len();
                *slot = Some(Arc::new(conn));
                self.set_state(ServerState::Ready(Arc::new(tools)));
                Ok(count)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(format!(
                "it did not answer within {} s (start-up timeout){}",
                self.timeouts.startup.as_secs_f64(),
                match self.config.transport {
                    ServerTransport::Stdio { .. } => {
                        format!(" (log: {})", self.log_path.display())
                    }
                    ServerTransport::Http { .. } => String::new(),
                }
            )),
        };
        if let Err(e) = &result {
            *slot = None;
            self.set_state(ServerState::Failed(e.clone()));
        }
        result
    }

    async fn connect(&self) -> Result<(Connection, Vec<ServerTool>), String> {
        let listener = Listener {
            changed: self.changed.clone(),
        };
        let conn = match &self.config.transport {
            ServerTransport::Stdio { command, args, env } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).current_dir(&self.cwd);
                // cadre's model keys reach a server only when its entry names them.
                for key in crate::secrets::secret_vars() {
                    if !env.contains_key(&key) {
                        cmd.env_remove(key);
                    }
                }
                cmd.envs(env);
                cmd.stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .kill_on_drop(true);
                // Its own process group: a ^C at the terminal is cadre's to handle.
                cmd.process_group(0);
                // SAFETY: the hook makes only async-signal-safe system calls (see reaper).
                unsafe {
                    cmd.pre_exec(crate::tools::bash::reaper::tie_tree_to_cadre());
                }
                let (log, budget) = self.open_log()?;
                let mut child = cmd
                    .spawn()
                    .map_err(|e| format!("{command} could not start: {e}"))?;
                let tail = copy_stderr(
                    child.stderr.take(),
                    log,
                    budget,
                    self.log_cap.load(Ordering::Relaxed),
                );
                let transport = ChildTransport::new(child)
                    .map_err(|e| format!("{command} could not start: {e}"))?;
                match listener.serve(transport).await {
                    Ok(conn) => conn,
                    Err(e) => return Err(self.start_failure(&e, &tail).await),
                }
            }
            ServerTransport::Http { url, headers } => {
                use rmcp::transport::StreamableHttpClientTransport;
                use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                let mut map = std::collections::HashMap::new();
                for (k, v) in headers {
                    let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                        .map_err(|e| format!("header {k}: {e}"))?;
                    let value = reqwest::header::HeaderValue::from_str(v)
                        .map_err(|e| format!("header {k}: {e}"))?;
                    map.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(map)
                    .max_json_response_size(MAX_HTTP_RESPONSE_BYTES);
                let transport =
                    StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
                listener
                    .serve(transport)
                    .await
                    .map_err(|e| format!("the MCP handshake with {url} failed: {e}"))?
            }
        };
        let tools = self.list(&conn).await?;
        Ok((conn, tools))
    }

    /// Its log, open for appending, and how many bytes it may still take:
    /// a log already at half its cap or more starts again empty, so it
    /// never holds much more than the cap.
    fn open_log(&self) -> Result<(std::fs::File, u64), String> {
        if let Some(dir) = self.log_path.parent() {
            let _ = crate::config::ensure_private_dir(dir);
        }
        let cap = self.log_cap.load(Ordering::Relaxed);
        let opened = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.log_path)
            .and_then(|f| {
                let len = f.metadata()?.len();
                if len >= cap / 2 {
                    f.set_len(0)?;
                    return Ok((f, cap));
                }
                Ok((f, cap - len))
            });
        opened.map_err(|e| {
            format!(
                "its log {} could not be opened: {e}",
                self.log_path.display()
            )
        })
    }

    /// Why a stdio server did not finish its handshake, from what it wrote
    /// last to stderr, naming its log.
    async fn start_failure(&self, error: &ClientInitializeError, tail: &StderrTail) -> String {
        let what = match error {
            ClientInitializeError::ConnectionClosed(_) => {
                "it ended before answering the MCP handshake".to_string()
            }
            other => format!("the MCP handshake failed: {other}"),
        };
        let lines = tail.last_lines(5, Duration::from_secs(1)).await;
        let said = if lines.is_empty() {
            String::from("; it wrote nothing to stderr")
        } else {
            let text: String = lines.join(" | ").chars().take(600).collect();
            format!("; its stderr ends: {}", sanitize_report(&text))
        };
        format!("{what}{said} (log: {})", self.log_path.display())
    }

    async fn list(&self, conn: &Connection) -> Result<Vec<ServerTool>, String> {
        self.changed.store(false, Ordering::SeqCst);
        let listed = conn
            .list_all_tools()
            .await
            .map_err(|e| format!("listing its tools failed: {e}"))?;
        let mut tools = Vec::new();
        for tool in listed {
            if tools.len() == MAX_TOOLS_PER_SERVER {
                break;
            }
            let Some(full_name) = tool_name(&self.config.name, &tool.name) else {
                continue;
            };
            let description = tool
                .description
                .as_deref()
                .map(|d| sanitize_report(&cap_text(d, MAX_DESCRIPTION_BYTES)))
                .unwrap_or_default();
            let mut schema = Value::Object((*tool.input_schema).clone());
            if schema.to_string().len() > MAX_SCHEMA_BYTES {
                schema = serde_json::json!({"type": "object"});
            }
            let read_only = tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false);
            tools.push(ServerTool {
                full_name,
                name: tool.name.to_string(),
                description,
                schema,
                read_only,
            });
        }
        Ok(tools)
    }

    /// Lists the tools again if the server said they changed.
    pub async fn refresh_if_changed(&self) {
        if !self.changed.load(Ordering::SeqCst) {
            return;
        }
        let current = self.connection.lock().await.clone();
        let Some(conn) = current else { return };
        if let Ok(tools) = self.list(&conn).await {
            self.set_state(ServerState::Ready(Arc::new(tools)));
        }
    }

    /// The live connection, started again once if the server died.
    #[expect(
        clippy::await_holding_invalid_type,
        reason = "a restart holds the slot so that concurrent calls wait for the one restart instead of each starting a server"
    )]
    async fn connection(&self) -> Result<Arc<Connection>, String> {
        let mut slot = self.connection.lock().await;
        if let Some(conn) = slot.as_ref()
            && !conn.is_closed()
        {
            return Ok(conn.clone());
        }
        if self.restarted.swap(true, Ordering::SeqCst) {
            let why = match self.state() {
                ServerState::Failed(why) => why,
                _ => "the server is not running".to_string(),
            };
            return Err(format!(
                "MCP server {} is not available: {why}",
                self.config.name
            ));
        }
        self.start_locked(&mut slot).await.map_err(|e| {
            format!(
                "MCP server {} died and could not restart: {e}",
                self.config.name
            )
        })?;
        slot.clone()
            .ok_or_else(|| format!("MCP server {} is not available", self.config.name))
    }

    /// Calls `tool` with `arguments`, within the call timeout, until `cancel`.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, Value>,
        cancel: &CancellationToken,
    ) -> McpResult {
        let conn = match self.connection().await {
            Ok(c) => c,
            Err(e) => return McpResult::error(e),
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let call = tokio::time::timeout(self.timeouts.call, conn.call_tool(params));
        let outcome = tokio::select! {
            r = call => r,
            () = cancel.cancelled() => return McpResult::error("interrupted".to_string()),
        };
        match outcome {
            Ok(Ok(result)) => match serde_json::to_value(&result) {
                Ok(v) => convert_result(&v),
                Err(e) => McpResult::error(format!("the result could not be read: {e}")),
            },
            Ok(Err(rmcp::ServiceError::McpError(e))) if e.message == TOO_LARGE => {
                McpResult::error(format!(
                    "the MCP tool {tool} answered, but the {TOO_LARGE}, more than one reply can carry; ask for less"
                ))
            }
            Ok(Err(e)) => {
                // Its tools stay listed: the next call starts it again.
                let died = conn.is_closed()
                    || matches!(
                        e,
                        rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
                    );
                if died {
                    self.forget(&conn).await;
                }
                McpResult::error(if died {
                    format!(
                        "MCP server {} exited during the call ({e}); it is started again on its next use",
                        self.config.name
                    )
                } else {
                    format!("MCP error: {e}")
                })
            }
            Err(_) => McpResult::error(format!(
                "the MCP tool {tool} did not answer within {} s (call timeout)",
                self.timeouts.call.as_secs_f64()
            )),
        }
    }

    /// Drops `conn` from the slot if it is still the current connection, so
    /// the next use starts the server again.
    async fn forget(&self, conn: &Arc<Connection>) {
        let mut slot = self.connection.lock().await;
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn))
            && let Some(old) = slot.take()
        {
            old.cancellation_token().cancel();
        }
    }

    /// Closes the connection (a stdio server's process ends).
    pub async fn close(&self) {
        let mut slot = self.connection.lock().await;
        if let Some(conn) = slot.take() {
            conn.cancellation_token().cancel();
        }
        self.set_state(ServerState::Closed);
    }
}

/// `mcp__<server>__<tool>`, with characters a model API refuses replaced;
/// `None` when it would be too long for one.
pub fn tool_name(server: &str, tool: &str) -> Option<String> {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let full = format!("mcp__{server}__{clean}");
    (!clean.is_empty() && full.len() <= 128).then_some(full)
}

/// `text` cut to `cap` bytes on a character boundary, marked when cut.
fn cap_text(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [description cut]", &text[..end])
}
