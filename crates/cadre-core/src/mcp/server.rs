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

use rmcp::model::{
    CallToolRequestParams, ClientConfig, GetPromptRequestParams, Implementation,
    ReadResourceRequestParams,
};
use rmcp::service::ClientInitializeError;
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::config::{ServerConfig, ServerTransport};
use super::content::{McpResult, convert_result};
use super::prompts::{PromptArg, ServerPrompt, prompt_text};
use super::resources::{ResourceInfo, resource_text};
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
/// Most prompts taken from one server.
pub const MAX_PROMPTS_PER_SERVER: usize = 256;
/// Most resources taken from one server's list.
pub const MAX_RESOURCES_PER_SERVER: usize = 1024;
/// Longest server `instructions` kept, in bytes (Claude Code's cap).
pub const MAX_INSTRUCTIONS_BYTES: usize = 2048;
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

/// What the connection reports back: tool-, prompt- and resource-list changes.
#[derive(Clone)]
struct Listener {
    changed: Arc<AtomicBool>,
    prompts_changed: Arc<AtomicBool>,
    resources_changed: Arc<AtomicBool>,
}

impl ClientHandler for Listener {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.changed.store(true, Ordering::SeqCst);
        std::future::ready(())
    }

    fn on_prompt_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.prompts_changed.store(true, Ordering::SeqCst);
        std::future::ready(())
    }

    fn on_resource_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.resources_changed.store(true, Ordering::SeqCst);
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.client_info = Implementation::new("cadre", env!("CARGO_PKG_VERSION"));
        info
    }
}

type Connection = RunningService<RoleClient, Listener>;

/// What a server offers besides tools, read when it connects.
#[derive(Debug, Clone, Default)]
struct Extras {
    /// Its `instructions`, capped.
    instructions: Option<String>,
    /// It lists prompts.
    has_prompts: bool,
    /// It lists resources.
    has_resources: bool,
    prompts: Arc<Vec<ServerPrompt>>,
    resources: Arc<Vec<ResourceInfo>>,
}

/// One configured server and its connection.
pub struct McpServer {
    config: ServerConfig,
    cwd: PathBuf,
    log_path: PathBuf,
    timeouts: McpTimeouts,
    connection: tokio::sync::Mutex<Option<Arc<Connection>>>,
    state: Mutex<ServerState>,
    changed: Arc<AtomicBool>,
    prompts_changed: Arc<AtomicBool>,
    resources_changed: Arc<AtomicBool>,
    extras: Mutex<Extras>,
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
            prompts_changed: Arc::new(AtomicBool::new(false)),
            resources_changed: Arc::new(AtomicBool::new(false)),
            extras: Mutex::new(Extras::default()),
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

    /// Its `instructions` (from `initialize`, cut at 2 KiB), when it is ready.
    pub fn instructions(&self) -> Option<String> {
        self.ready_extras().and_then(|e| e.instructions)
    }

    /// Its prompts, when it is ready.
    pub fn prompts(&self) -> Arc<Vec<ServerPrompt>> {
        self.ready_extras().map(|e| e.prompts).unwrap_or_default()
    }

    /// Its resources, when it is ready.
    pub fn resources(&self) -> Arc<Vec<ResourceInfo>> {
        self.ready_extras().map(|e| e.resources).unwrap_or_default()
    }

    fn ready_extras(&self) -> Option<Extras> {
        if !matches!(self.state(), ServerState::Ready(_)) {
            return None;
        }
        self.extras.lock().ok().map(|e| e.clone())
    }

    fn update_extras(&self, update: impl FnOnce(&mut Extras)) {
        if let Ok(mut e) = self.extras.lock() {
            update(&mut e);
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
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
            Ok(Ok((conn, tools, extras))) => {
                let count = tools.len();
                *slot = Some(Arc::new(conn));
                // Before it is marked ready, so whoever sees it ready sees these.
                self.update_extras(|e| *e = extras);
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

    async fn connect(&self) -> Result<(Connection, Vec<ServerTool>, Extras), String> {
        let listener = Listener {
            changed: self.changed.clone(),
            prompts_changed: self.prompts_changed.clone(),
            resources_changed: self.resources_changed.clone(),
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
        let extras = self.read_extras(&conn).await;
        Ok((conn, tools, extras))
    }

    /// Its instructions, prompts and resources. A list that fails leaves
    /// that list empty: the server's tools still work.
    async fn read_extras(&self, conn: &Connection) -> Extras {
        let info = conn.peer_info();
        let caps = info.as_ref().map(|i| &i.capabilities);
        let mut extras = Extras {
            instructions: info
                .as_ref()
                .and_then(|i| i.instructions.as_deref())
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(|t| sanitize_report(&cap_text(t, MAX_INSTRUCTIONS_BYTES, "instructions"))),
            has_prompts: caps.is_some_and(|c| c.prompts.is_some()),
            has_resources: caps.is_some_and(|c| c.resources.is_some()),
            ..Extras::default()
        };
        if extras.has_prompts {
            extras.prompts = Arc::new(self.list_prompts(conn).await.unwrap_or_default());
        }
        if extras.has_resources {
            extras.resources = Arc::new(self.list_resources(conn).await.unwrap_or_default());
        }
        extras
    }

    async fn list_prompts(&self, conn: &Connection) -> Result<Vec<ServerPrompt>, String> {
        self.prompts_changed.store(false, Ordering::SeqCst);
        let listed = conn
            .list_all_prompts()
            .await
            .map_err(|e| format!("listing its prompts failed: {e}"))?;
        let describe = |d: Option<&str>| {
            d.map(|d| sanitize_report(&cap_text(d, MAX_DESCRIPTION_BYTES, "description")))
                .unwrap_or_default()
        };
        Ok(listed
            .into_iter()
            .filter(|p| !p.name.trim().is_empty())
            .take(MAX_PROMPTS_PER_SERVER)
            .map(|p| ServerPrompt {
                description: describe(p.description.as_deref()),
                arguments: p
                    .arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| PromptArg {
                        description: describe(a.description.as_deref()),
                        required: a.required.unwrap_or(false),
                        name: a.name,
                    })
                    .collect(),
                name: p.name,
            })
            .collect())
    }

    async fn list_resources(&self, conn: &Connection) -> Result<Vec<ResourceInfo>, String> {
        self.resources_changed.store(false, Ordering::SeqCst);
        let listed = conn
            .list_all_resources()
            .await
            .map_err(|e| format!("listing its resources failed: {e}"))?;
        Ok(listed
            .into_iter()
            .take(MAX_RESOURCES_PER_SERVER)
            .map(|r| ResourceInfo {
                uri: r.uri,
                name: r.name,
                description: r
                    .description
                    .map(|d| sanitize_report(&cap_text(&d, MAX_DESCRIPTION_BYTES, "description"))),
                mime_type: r.mime_type,
            })
            .collect())
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
                .map(|d| sanitize_report(&cap_text(d, MAX_DESCRIPTION_BYTES, "description")))
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

    /// Lists again its tools, prompts or resources, those the server said
    /// changed.
    pub async fn refresh_if_changed(&self) {
        let tools = self.changed.load(Ordering::SeqCst);
        let prompts = self.prompts_changed.load(Ordering::SeqCst);
        let resources = self.resources_changed.load(Ordering::SeqCst);
        if !(tools || prompts || resources) {
            return;
        }
        let current = self.connection.lock().await.clone();
        let Some(conn) = current else { return };
        if tools && let Ok(tools) = self.list(&conn).await {
            self.set_state(ServerState::Ready(Arc::new(tools)));
        }
        if prompts && let Ok(list) = self.list_prompts(&conn).await {
            self.update_extras(|e| e.prompts = Arc::new(list));
        }
        if resources && let Ok(list) = self.list_resources(&conn).await {
            self.update_extras(|e| e.resources = Arc::new(list));
        }
    }

    /// Gets its prompt `name` with `arguments`, within the call timeout: the
    /// text of the messages it returns.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<String, String> {
        let conn = self.connection().await?;
        let mut params = GetPromptRequestParams::new(name.to_string());
        params.arguments = Some(arguments);
        let got = tokio::time::timeout(self.timeouts.call, conn.get_prompt(params)).await;
        match got {
            Ok(Ok(result)) => serde_json::to_value(&result)
                .map(|v| prompt_text(&v))
                .map_err(|e| format!("the prompt could not be read: {e}")),
            Ok(Err(e)) => Err(self.request_failed(&conn, "prompt", name, e).await),
            Err(_) => Err(format!(
                "the MCP prompt {name} did not answer within {} s (call timeout)",
                self.timeouts.call.as_secs_f64()
            )),
        }
    }

    /// Reads its resource `uri`, within the call timeout, until `cancel`:
    /// its text, binary contents described (uncapped: callers cap).
    pub async fn read_resource(
        &self,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        let conn = self.connection().await?;
        let read = tokio::time::timeout(
            self.timeouts.call,
            conn.read_resource(ReadResourceRequestParams::new(uri.to_string())),
        );
        let outcome = tokio::select! {
            r = read => r,
            () = cancel.cancelled() => return Err("interrupted".to_string()),
        };
        match outcome {
            Ok(Ok(result)) => serde_json::to_value(&result)
                .map(|v| resource_text(&v))
                .map_err(|e| format!("the resource could not be read: {e}")),
            Ok(Err(e)) => Err(self.request_failed(&conn, "resource", uri, e).await),
            Err(_) => Err(format!(
                "the MCP resource {uri} did not answer within {} s (call timeout)",
                self.timeouts.call.as_secs_f64()
            )),
        }
    }

    /// Why a prompt or resource request failed; a connection that died is
    /// dropped so the next use starts the server again.
    async fn request_failed(
        &self,
        conn: &Arc<Connection>,
        what: &str,
        name: &str,
        e: rmcp::ServiceError,
    ) -> String {
        let died = conn.is_closed()
            || matches!(
                e,
                rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
            );
        if died {
            self.forget(conn).await;
            return format!(
                "MCP server {} exited while asked for the {what} {name} ({e}); it is started again on its next use",
                self.config.name
            );
        }
        match e {
            rmcp::ServiceError::McpError(e) => {
                format!(
                    "MCP server {} refused the {what} {name}: {}",
                    self.config.name,
                    sanitize_report(&e.message)
                )
            }
            other => format!("MCP error for the {what} {name}: {other}"),
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

    /// Closes the connection at once when no one is using or starting it
    /// (a stdio server's process ends); false when it is busy and
    /// [`McpServer::close`] must wait for it. A run that ends closes its
    /// servers this way, so a run resumed right after it never picks up
    /// the old connection.
    pub fn close_now(&self) -> bool {
        let Ok(mut slot) = self.connection.try_lock() else {
            return false;
        };
        if let Some(conn) = slot.take() {
            conn.cancellation_token().cancel();
        }
        self.set_state(ServerState::Closed);
        true
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

/// `text` cut to `cap` bytes on a character boundary, marked `[<what> cut]`
/// when cut.
pub(crate) fn cap_text(text: &str, cap: usize, what: &str) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{what} cut]", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_on_a_character_boundary_and_marked() {
        assert_eq!(cap_text("short", 10, "instructions"), "short");
        // 'é' is two bytes: a cut in its middle goes back before it.
        let cut = cap_text("aé-rest", 2, "instructions");
        assert_eq!(cut, "a… [instructions cut]");
        let long = "x".repeat(5000);
        let cut = cap_text(&long, MAX_INSTRUCTIONS_BYTES, "instructions");
        assert!(cut.starts_with(&"x".repeat(MAX_INSTRUCTIONS_BYTES)));
        assert!(cut.ends_with("[instructions cut]"));
    }
}
