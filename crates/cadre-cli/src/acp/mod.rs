//! `cadre acp`: cadre as an Agent Client Protocol agent on stdin and
//! stdout, for editors (Zed, JetBrains IDEs, Neovim and Emacs plugins).
//! Each `session/new` builds a session for the editor's folder as `cadre`
//! would there; prompts run turns whose text, tool calls, plan and
//! questions stream to the editor, and subagents show as child sessions
//! when the editor can show them. Stdout is the protocol: warnings go to
//! stderr.

mod client_files;
mod client_terminal;
mod replay;
mod session;
mod updates;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ContentBlock, EmbeddedResourceResource, Implementation,
    InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    PromptRequest, PromptResponse, SessionMode, SessionModeState, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, Stdio};
use anyhow::{Context, Result};
use cadre_core::permissions::PermissionMode;

use crate::{AgentArgs, ModelArgs, PermissionArgs, setup};
use session::LiveSession;

/// The flags `cadre acp` was started with: every session is built from
/// them, in the folder the editor names.
struct AcpServer {
    model: ModelArgs,
    perms: PermissionArgs,
    agent: AgentArgs,
    /// What the editor said it can do, from `initialize`.
    client: Mutex<ClientSide>,
    /// The open sessions by id.
    sessions: Mutex<HashMap<String, Arc<LiveSession>>>,
}

/// The editor's capabilities that change what cadre sends.
#[derive(Debug, Default, Clone, Copy)]
struct ClientSide {
    /// It shows child sessions (`subagent_update`).
    child_sessions: bool,
    /// It serves file reads (`fs/read_text_file`), unsaved buffers included.
    reads: bool,
    /// It takes file writes (`fs/write_text_file`).
    writes: bool,
    /// It runs commands in terminals it shows (`terminal/*`).
    terminal: bool,
}

/// Runs `cadre acp` until the editor closes the connection.
pub async fn run(model: &ModelArgs, perms: &PermissionArgs, agent: &AgentArgs) -> Result<ExitCode> {
    let server = Arc::new(AcpServer {
        model: model.clone(),
        perms: perms.clone(),
        agent: agent.clone(),
        client: Mutex::new(ClientSide::default()),
        sessions: Mutex::new(HashMap::new()),
    });
    let (s1, s2, s3, s4, s5, s6) = (
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
        server.clone(),
    );
    let served = Agent
        .v1()
        .name("cadre")
        .on_receive_request(
            async move |req: InitializeRequest, responder, _cx| s1.initialize(req, responder),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, responder, cx| {
                let server = s2.clone();
                answer_later(responder, async move { server.new_session(req, cx).await });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, responder, cx| {
                let server = s3.clone();
                answer_later(responder, async move { server.load_session(req, cx).await });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder, _cx| {
                let server = s4.clone();
                answer_later(responder, async move { server.prompt(req).await });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest, responder, _cx| {
                let answer = s5.set_mode(req);
                respond(responder, answer);
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |note: CancelNotification, _cx| {
                let id = note.session_id.to_string();
                if let Some((session, name)) = s6.teammate_session(&id) {
                    session.interrupt_teammate(&name);
                } else if let Some(session) = s6.session(&id) {
                    session.cancel();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await;
    // The editor is gone: every session ends (their background work stops).
    let open: Vec<Arc<LiveSession>> = server
        .sessions
        .lock()
        .map(|mut s| s.drain().map(|(_, v)| v).collect())
        .unwrap_or_default();
    for session in open {
        session.shutdown();
    }
    served.map_err(|e| anyhow::anyhow!("ACP connection failed: {e}"))?;
    Ok(ExitCode::SUCCESS)
}

/// Works out a request's answer in a task of its own (a handler holds the
/// connection's dispatch loop, and the work waits on the editor's answers).
fn answer_later<T>(
    responder: Responder<T>,
    work: impl std::future::Future<Output = Result<T, Error>> + Send + 'static,
) where
    T: agent_client_protocol::JsonRpcResponse + Send + 'static,
{
    tokio::spawn(async move { respond(responder, work.await) });
}

/// Sends a handler's answer (a closed connection has nobody to tell).
fn respond<T: agent_client_protocol::JsonRpcResponse>(
    responder: Responder<T>,
    answer: Result<T, Error>,
) {
    let _ = responder.respond_with_result(answer);
}

/// A warning on stderr, its control characters shown rather than obeyed.
fn warn(message: &str) {
    eprintln!(
        "warning: {}",
        cadre_tui::sanitize::visible_controls(message)
    );
}

/// The session `id` cannot be found (ACP's "resource not found").
fn not_found(id: &str, why: impl std::fmt::Display) -> Error {
    Error::new(-32002, format!("session {id} not found")).data(why.to_string())
}

/// An error the editor shows, with cadre's message.
fn failure(e: impl std::fmt::Display) -> Error {
    Error::internal_error().data(e.to_string())
}

impl AcpServer {
    fn initialize(
        &self,
        req: InitializeRequest,
        responder: Responder<InitializeResponse>,
    ) -> Result<(), Error> {
        let caps = &req.client_capabilities;
        if let Ok(mut c) = self.client.lock() {
            c.child_sessions = caps.subagents.is_some();
            c.reads = caps.fs.read_text_file;
            c.writes = caps.fs.write_text_file;
            c.terminal = caps.terminal;
        }
        let agent = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
            .mcp_capabilities(McpCapabilities::new().http(true));
        responder.respond(
            InitializeResponse::new(ProtocolVersion::V1)
                .agent_capabilities(agent)
                .agent_info(Implementation::new("cadre", env!("CARGO_PKG_VERSION")).title("cadre")),
        )
    }

    /// The editor's file access for session `id`, when it offers any.
    fn client_files(
        &self,
        cx: &ConnectionTo<Client>,
        id: &str,
    ) -> Option<Arc<dyn cadre_core::tools::EditorFiles>> {
        let side = self.client_side();
        (side.reads || side.writes).then(|| {
            Arc::new(client_files::ClientFiles {
                cx: cx.clone(),
                session_id: id.to_string(),
                reads: side.reads,
                writes: side.writes,
            }) as Arc<dyn cadre_core::tools::EditorFiles>
        })
    }

    /// The editor's terminals for session `id`, when it offers them.
    fn client_terminal(
        &self,
        cx: &ConnectionTo<Client>,
        id: &str,
    ) -> Option<Arc<dyn cadre_core::tools::EditorTerminal>> {
        let side = self.client_side();
        side.terminal.then(|| {
            Arc::new(client_terminal::ClientTerminal {
                cx: cx.clone(),
                session_id: id.to_string(),
                child_sessions: side.child_sessions,
            }) as Arc<dyn cadre_core::tools::EditorTerminal>
        })
    }

    fn client_side(&self) -> ClientSide {
        self.client.lock().map(|c| *c).unwrap_or_default()
    }

    fn session(&self, id: &str) -> Option<Arc<LiveSession>> {
        self.sessions.lock().ok()?.get(id).cloned()
    }

    /// The open session and teammate name of a teammate's child session id.
    fn teammate_session(&self, id: &str) -> Option<(Arc<LiveSession>, String)> {
        let (parent, _) = id.rsplit_once('/')?;
        let session = self.session(parent)?;
        let name = session.teammate_at(id)?;
        Some((session, name))
    }

    /// The session's flags in the editor's folder, its MCP servers added.
    fn runtime_for(
        &self,
        cwd: &Path,
        servers: &[McpServer],
    ) -> Result<cadre_core::driver::SessionBuilder, Error> {
        if !cwd.is_absolute() {
            return Err(Error::invalid_params().data("cwd must be an absolute path"));
        }
        let cwd = cwd
            .canonicalize()
            .map_err(|e| Error::invalid_params().data(format!("cwd {}: {e}", cwd.display())))?;
        let mut agent = self.agent.clone();
        if !servers.is_empty() {
            let file = write_client_servers(servers).map_err(failure)?;
            agent.mcp_config.push(file);
        }
        let runtime = setup::prepare_at(cwd, &self.model, &self.perms, &agent);
        // The servers are read by now; their file (it may hold keys) goes.
        if !servers.is_empty()
            && let Some(file) = agent.mcp_config.last()
        {
            let _ = std::fs::remove_file(file);
        }
        let runtime = runtime.map_err(failure)?;
        for w in &runtime.warnings {
            warn(w);
        }
        Ok(runtime)
    }

    async fn new_session(
        &self,
        req: NewSessionRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<NewSessionResponse, Error> {
        let mut runtime = self.runtime_for(&req.cwd, &req.mcp_servers)?;
        let config = runtime.client.config();
        let opened = cadre_core::driver::create_log_as(
            &runtime.home,
            &runtime.cwd,
            &config.provider.to_string(),
            &config.model,
            None,
        )
        .map_err(failure)?;
        runtime.editor_files = self.client_files(&cx, &opened.id);
        runtime.editor_terminal = self.client_terminal(&cx, &opened.id);
        let runtime = Arc::new(runtime);
        let modes = modes(runtime.policy.mode);
        let live = LiveSession::open(
            runtime,
            opened,
            cx.clone(),
            self.client_side().child_sessions,
            Vec::new(),
        )
        .await
        .map_err(failure)?;
        self.remember(&live);
        // The menu follows the answer, so the editor knows the session by then.
        let commands = live.commands();
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            let _ = cx.send_notification(commands);
        });
        Ok(NewSessionResponse::new(live.id.clone()).modes(modes))
    }

    async fn load_session(
        &self,
        req: LoadSessionRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<LoadSessionResponse, Error> {
        let id = req.session_id.to_string();
        if self.session(&id).is_some() {
            return Err(Error::invalid_params().data(format!("session {id} is already open")));
        }
        let mut runtime = self.runtime_for(&req.cwd, &req.mcp_servers)?;
        runtime.editor_files = self.client_files(&cx, &id);
        runtime.editor_terminal = self.client_terminal(&cx, &id);
        let runtime = Arc::new(runtime);
        let child_sessions = self.client_side().child_sessions;
        let replayed = replay::history(&runtime.home, &id, &runtime.cwd, child_sessions)
            .await
            .map_err(|e| not_found(&id, e))?;
        let (sink, mut drained) = cadre_core::protocol::EventSink::channel();
        let pending = cadre_core::driver::PendingResume::load(&runtime.home, &id, &sink)
            .map_err(|e| not_found(&id, e))?;
        // Calls that may have run were shown in the replay; the editor's
        // user reopened the session knowing that.
        let opened = pending.accept(&sink).map_err(failure)?;
        drop(sink);
        while let Ok(event) = drained.try_recv() {
            if let cadre_core::protocol::Event::Warning { message } = event {
                warn(&message);
            }
        }
        let modes = modes(runtime.policy.mode);
        let live = LiveSession::open(runtime, opened, cx.clone(), child_sessions, replayed)
            .await
            .map_err(failure)?;
        self.remember(&live);
        let _ = cx.send_notification(live.commands());
        Ok(LoadSessionResponse::new().modes(modes))
    }

    fn remember(&self, live: &Arc<LiveSession>) {
        if let Ok(mut s) = self.sessions.lock() {
            s.insert(live.id.clone(), live.clone());
        }
    }

    async fn prompt(&self, req: PromptRequest) -> Result<PromptResponse, Error> {
        let id = req.session_id.to_string();
        let text = prompt_text(&req.prompt);
        if text.trim().is_empty() {
            return Err(Error::invalid_params().data("the prompt holds no text"));
        }
        // A teammate's child session: the words go to its mailbox, and the
        // prompt ends once they are filed (its work shows on its session).
        if let Some((session, name)) = self.teammate_session(&id) {
            if !session.message_teammate(&name, text) {
                return Err(Error::internal_error().data("the session has ended"));
            }
            return Ok(PromptResponse::new(
                agent_client_protocol::v1::schema::StopReason::EndTurn,
            ));
        }
        let Some(session) = self.session(&id) else {
            return Err(not_found(
                &req.session_id.to_string(),
                "no such open session",
            ));
        };
        let stop = session.prompt(text).await?;
        Ok(PromptResponse::new(stop))
    }

    fn set_mode(&self, req: SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
        let Some(session) = self.session(&req.session_id.to_string()) else {
            return Err(not_found(
                &req.session_id.to_string(),
                "no such open session",
            ));
        };
        let mode: PermissionMode = req
            .mode_id
            .to_string()
            .parse()
            .map_err(|e: String| Error::invalid_params().data(e))?;
        if mode == PermissionMode::BypassPermissions
            && session.runtime.policy.mode != PermissionMode::BypassPermissions
        {
            return Err(Error::invalid_params()
                .data("bypassPermissions is only for a session started in it"));
        }
        session.set_mode(mode);
        Ok(SetSessionModeResponse::new())
    }
}

/// cadre's permission modes as the editor's mode menu.
fn modes(current: PermissionMode) -> SessionModeState {
    let mut available = vec![
        SessionMode::new("default", "Default").description("Ask before edits and commands"),
        SessionMode::new("acceptEdits", "Accept edits")
            .description("Edits in the project and sandboxed commands run"),
        SessionMode::new("plan", "Plan")
            .description("Read-only: nothing that changes anything runs"),
        SessionMode::new("dontAsk", "Don't ask")
            .description("What no rule allows is denied; nothing is asked"),
    ];
    // Bypass is offered only to a session started in it (as a switch it
    // would widen what the user chose at launch).
    if current == PermissionMode::BypassPermissions {
        available.push(
            SessionMode::new("bypassPermissions", "Bypass permissions")
                .description("Everything runs"),
        );
    }
    SessionModeState::new(current.as_str(), available)
}

/// The prompt's blocks as the text cadre runs: text as it is, a linked
/// file as an `@` mention (attached under the file tools' rules), an
/// embedded resource (an editor's selection or unsaved buffer) inline.
fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => match link.uri.strip_prefix("file://") {
                Some(path) => parts.push(format!("@{path}")),
                None => parts.push(format!("[{}]({})", link.name, link.uri)),
            },
            ContentBlock::Resource(res) => {
                if let EmbeddedResourceResource::TextResourceContents(text) = &res.resource {
                    parts.push(format!(
                        "<context uri=\"{}\">\n{}\n</context>",
                        text.uri, text.text
                    ));
                }
            }
            _ => {}
        }
    }
    parts.join("\n")
}

/// The editor's MCP servers as a Claude Code `mcpServers` file (0600, in
/// the data directory), loaded like `--mcp-config`.
fn write_client_servers(servers: &[McpServer]) -> Result<PathBuf> {
    let mut entries = serde_json::Map::new();
    for server in servers {
        let (name, entry) = match server {
            McpServer::Stdio(s) => (
                s.name.clone(),
                serde_json::json!({
                    "command": s.command,
                    "args": s.args,
                    "env": s.env.iter().map(|v| (v.name.clone(), serde_json::Value::String(v.value.clone())))
                        .collect::<serde_json::Map<_, _>>(),
                }),
            ),
            McpServer::Http(s) => (
                s.name.clone(),
                serde_json::json!({
                    "type": "http",
                    "url": s.url,
                    "headers": s.headers.iter().map(|h| (h.name.clone(), serde_json::Value::String(h.value.clone())))
                        .collect::<serde_json::Map<_, _>>(),
                }),
            ),
            _ => continue,
        };
        entries.insert(name, entry);
    }
    let dir = cadre_core::config::data_dir()?.join("acp");
    cadre_core::config::ensure_private_dir(&dir)?;
    let file = dir.join(format!("{}.mcp.json", uuid::Uuid::now_v7()));
    let text = serde_json::to_string(&serde_json::json!({ "mcpServers": entries }))?;
    cadre_core::small_file::write_private(&file, &text)
        .with_context(|| format!("cannot write {}", file.display()))?;
    Ok(file)
}
