//! `cadre-mcp-fixture [FLAGS]`: a small MCP server over stdio for cadre's tests.
//!
//! By default it is a well-behaved server with a fixed set of tools, prompts and
//! resources, and instructions; flags make it record what it sees (pid, calls,
//! environment) or misbehave in one chosen way.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, JsonObject, ListPromptsResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt, PromptArgument,
    PromptMessage, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, Role, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// An MCP server over stdio with test tools and optional misbehaviours.
#[derive(Debug, Parser)]
#[command(name = "cadre-mcp-fixture", version)]
struct Args {
    /// The server name reported in the initialize result.
    #[arg(long, default_value = "fixture")]
    name: String,
    /// Write the process id to this file at start.
    #[arg(long)]
    pid_file: Option<PathBuf>,
    /// Append one JSON line per tool call to this file.
    #[arg(long)]
    calls_file: Option<PathBuf>,
    /// Write the process environment as a JSON object to this file at start.
    #[arg(long)]
    env_file: Option<PathBuf>,
    /// Print this text to stderr at start.
    #[arg(long)]
    stderr: Option<String>,
    /// Print a line that is not JSON-RPC to stdout before serving.
    #[arg(long)]
    garbage_stdout: bool,
    /// Read stdin forever and never answer anything.
    #[arg(long)]
    never_initialize: bool,
    /// Add N extra tools named t0..tN-1.
    #[arg(long, value_name = "N", default_value_t = 0)]
    many_tools: usize,
    /// Make the `echo` tool's description this many bytes long.
    #[arg(long, value_name = "BYTES")]
    long_description: Option<usize>,
    /// Exit (status 0) as soon as the client sends `notifications/initialized`.
    #[arg(long)]
    exit_after_init: bool,
    /// Serve streamable HTTP on 127.0.0.1 (a free port) at `/mcp` instead of
    /// stdio, and write the endpoint's URL to this file.
    #[arg(long, value_name = "URL_FILE")]
    http: Option<PathBuf>,
    /// The instructions given in the initialize result (empty: none).
    #[arg(long, default_value = DEFAULT_INSTRUCTIONS)]
    instructions: String,
    /// Tools only: no instructions, prompts or resources.
    #[arg(long)]
    no_extras: bool,
    /// Offer `approve`, a permission prompt tool: it allows a call whose
    /// input mentions "allowed" and denies the rest.
    #[arg(long)]
    approver: bool,
}

/// The instructions the fixture gives unless told otherwise.
const DEFAULT_INSTRUCTIONS: &str = "Fixture instructions: always greet politely.";

/// The text of the `mem://note` resource.
const NOTE_TEXT: &str = "The note says 42.";

/// A 1x1 red PNG, base64-encoded.
const TINY_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4z8AAAAMBAQD3A0FDAAAAAElFTkSuQmCC";

/// Exit status of the `die` tool.
const DIE_STATUS: i32 = 3;

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line, not anyhow's Debug form: a client closing stdin early is routine.
            eprintln!("cadre-mcp-fixture: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    if let Some(path) = &args.pid_file {
        write_atomically(path, std::process::id().to_string().as_bytes())
            .with_context(|| format!("cannot write pid file {}", path.display()))?;
    }
    if let Some(path) = &args.env_file {
        let env: serde_json::Map<String, Value> = std::env::vars_os()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    Value::String(v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        let text = serde_json::to_vec(&env).context("cannot encode the environment")?;
        write_atomically(path, &text)
            .with_context(|| format!("cannot write env file {}", path.display()))?;
    }
    if let Some(text) = &args.stderr {
        eprintln!("{text}");
    }
    if args.garbage_stdout {
        let mut out = std::io::stdout().lock();
        writeln!(out, "hello from a noisy server")?;
        // Flushed now so it reaches the client before any protocol message.
        out.flush()?;
    }
    if args.never_initialize {
        never_answer();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")?;
    runtime.block_on(serve(args))
}

/// Swallows stdin and then hangs, like a server that is stuck before the handshake.
fn never_answer() -> ! {
    let stdin = std::io::stdin();
    let mut line = Vec::new();
    // Keep reading so the client's writes never block on a full pipe.
    while stdin
        .lock()
        .read_until(b'\n', &mut line)
        .is_ok_and(|n| n > 0)
    {
        line.clear();
    }
    // Stay alive after EOF too: tests check that the client kills a hung server.
    loop {
        std::thread::park();
    }
}

async fn serve(args: Args) -> anyhow::Result<()> {
    let fixture = Fixture::new(&args);
    if let Some(url_file) = &args.http {
        return serve_http(fixture, url_file).await;
    }
    let running = fixture
        .serve(rmcp::transport::stdio())
        .await
        .context("MCP handshake failed")?;
    running.waiting().await.context("MCP service failed")?;
    Ok(())
}

/// Streamable HTTP on a free loopback port, until killed.
async fn serve_http(fixture: Fixture, url_file: &Path) -> anyhow::Result<()> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let service = StreamableHttpService::new(
        move || Ok(fixture.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot bind a loopback port")?;
    let addr = listener.local_addr()?;
    write_atomically(url_file, format!("http://{addr}/mcp").as_bytes())
        .with_context(|| format!("cannot write {}", url_file.display()))?;
    axum::serve(listener, router)
        .await
        .context("HTTP server failed")?;
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file, so readers never see half of it.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// The server state shared by all requests.
#[derive(Debug, Clone)]
struct Fixture {
    name: String,
    echo_description: String,
    many_tools: usize,
    exit_after_init: bool,
    calls_file: Option<Arc<Mutex<PathBuf>>>,
    /// Tools created at run time by `add_tool`, in order.
    added: Arc<Mutex<Vec<String>>>,
    instructions: String,
    no_extras: bool,
    approver: bool,
    /// Prompts created at run time by `add_prompt`, in order.
    added_prompts: Arc<Mutex<Vec<String>>>,
    /// Resources (URI, text) created at run time by `add_resource`, in order.
    added_resources: Arc<Mutex<Vec<(String, String)>>>,
}

impl Fixture {
    fn new(args: &Args) -> Self {
        let echo_description = match args.long_description {
            Some(len) => long_text(len),
            None => "Echo the text back, prefixed with \"echo: \".".to_string(),
        };
        Self {
            name: args.name.clone(),
            echo_description,
            many_tools: args.many_tools,
            exit_after_init: args.exit_after_init,
            calls_file: args.calls_file.clone().map(|p| Arc::new(Mutex::new(p))),
            added: Arc::new(Mutex::new(Vec::new())),
            instructions: args.instructions.clone(),
            no_extras: args.no_extras,
            approver: args.approver,
            added_prompts: Arc::new(Mutex::new(Vec::new())),
            added_resources: Arc::new(Mutex::new(Vec::new())),
        }
    }

    fn prompts(&self) -> Vec<Prompt> {
        let mut prompts = vec![
            Prompt::new(
                "greet",
                Some("Ask for a greeting."),
                Some(vec![
                    PromptArgument::new("name")
                        .with_description("Who to greet.")
                        .with_required(true),
                    PromptArgument::new("style")
                        .with_description("How to greet.")
                        .with_required(false),
                ]),
            ),
            Prompt::new(
                "daily report",
                Some("A prompt whose name has a space."),
                None::<Vec<PromptArgument>>,
            ),
            Prompt::new(
                "mixed",
                Some("Messages of every content kind."),
                None::<Vec<PromptArgument>>,
            ),
        ];
        prompts.extend(lock(&self.added_prompts).iter().map(|name| {
            Prompt::new(
                name.clone(),
                Some("Prompt added at run time."),
                None::<Vec<PromptArgument>>,
            )
        }));
        prompts
    }

    fn prompt(&self, name: &str, args: &JsonObject) -> Result<GetPromptResult, ErrorData> {
        let messages = match name {
            "greet" => {
                let who = arg_str(args, "name")?;
                let mut text = format!("Say hello to {who}.");
                if let Some(style) = args.get("style").and_then(Value::as_str) {
                    text.push_str(&format!(" Make it {style}."));
                }
                vec![PromptMessage::new_text(Role::User, text)]
            }
            "daily report" => vec![PromptMessage::new_text(Role::User, "Report on today.")],
            "mixed" => vec![
                PromptMessage::new_text(Role::User, "Read the note."),
                PromptMessage::new(
                    Role::User,
                    ContentBlock::embedded_text("mem://note", NOTE_TEXT),
                ),
                PromptMessage::new(Role::User, ContentBlock::image(TINY_PNG, "image/png")),
                PromptMessage::new_text(Role::Assistant, "Noted."),
            ],
            other if lock(&self.added_prompts).iter().any(|p| p == other) => {
                vec![PromptMessage::new_text(
                    Role::User,
                    format!("Prompt {other} added at run time."),
                )]
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown prompt: {other}"),
                    None,
                ));
            }
        };
        Ok(GetPromptResult::new(messages))
    }

    fn resources(&self) -> Vec<Resource> {
        let mut resources = vec![
            Resource::new("mem://note", "note")
                .with_description("A short note.")
                .with_mime_type("text/plain"),
            Resource::new("mem://logo", "logo")
                .with_description("A tiny image.")
                .with_mime_type("image/png"),
        ];
        resources.extend(
            lock(&self.added_resources).iter().map(|(uri, _)| {
                Resource::new(uri.clone(), uri.clone()).with_mime_type("text/plain")
            }),
        );
        resources
    }

    fn resource(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let contents = match uri {
            "mem://note" => ResourceContents::text(NOTE_TEXT, uri),
            "mem://logo" => ResourceContents::blob(TINY_PNG, uri).with_mime_type("image/png"),
            other => {
                let added = lock(&self.added_resources)
                    .iter()
                    .find(|(u, _)| u == other)
                    .map(|(_, text)| text.clone());
                match added {
                    Some(text) => ResourceContents::text(text, uri),
                    None => {
                        return Err(ErrorData::resource_not_found(
                            format!("no resource {other}"),
                            None,
                        ));
                    }
                }
            }
        };
        Ok(ReadResourceResult::new(vec![contents]))
    }

    fn added_tools(&self) -> Vec<String> {
        self.added
            .lock()
            .map(|a| a.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }

    fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![
            tool(
                "echo",
                &self.echo_description,
                json!({"text": {"type": "string", "description": "Text to echo."}}),
                &["text"],
            ),
            tool(
                "add",
                "Add two numbers and return the sum as text.",
                json!({
                    "a": {"type": "number", "description": "First addend."},
                    "b": {"type": "number", "description": "Second addend."}
                }),
                &["a", "b"],
            ),
            tool(
                "tiny_image",
                "Return a 1x1 PNG image and a caption.",
                json!({}),
                &[],
            ),
            tool(
                "fail",
                "Return a tool error whose text is the message.",
                json!({"message": {"type": "string", "description": "Error text."}}),
                &["message"],
            ),
            tool(
                "slow",
                "Sleep for the given milliseconds, then answer.",
                json!({"ms": {"type": "integer", "minimum": 0, "description": "Milliseconds to sleep."}}),
                &["ms"],
            ),
            tool(
                "resource",
                "Return an embedded text resource and a resource link.",
                json!({}),
                &[],
            ),
            tool(
                "add_tool",
                "Add a tool with the given name and announce the list change.",
                json!({"name": {"type": "string", "description": "Name of the new tool."}}),
                &["name"],
            ),
            tool(
                "add_prompt",
                "Add a prompt with the given name and announce the list change.",
                json!({"name": {"type": "string", "description": "Name of the new prompt."}}),
                &["name"],
            ),
            tool(
                "add_resource",
                "Add a text resource and announce the list change.",
                json!({
                    "uri": {"type": "string", "description": "URI of the new resource."},
                    "text": {"type": "string", "description": "Its text."}
                }),
                &["uri", "text"],
            ),
            tool(
                "die",
                "Exit the server process at once without answering.",
                json!({}),
                &[],
            ),
            tool("peek", "Look without changing anything.", json!({}), &[])
                .annotate(ToolAnnotations::new().read_only(true)),
            tool(
                "big",
                "Return a text of the given number of 'x' characters.",
                json!({"bytes": {"type": "integer", "minimum": 0, "description": "Length of the text."}}),
                &["bytes"],
            ),
        ];
        if self.approver {
            tools.push(tool(
                "approve",
                "Answer a permission question: allow when the input mentions \"allowed\".",
                json!({"tool_name": {"type": "string"}, "input": {"type": "object"}, "tool_use_id": {"type": "string"}}),
                &["tool_name", "input"],
            ));
        }
        tools.extend((0..self.many_tools).map(|i| {
            tool(
                &format!("t{i}"),
                &format!("Extra tool number {i}; answers \"t{i} called\"."),
                json!({}),
                &[],
            )
        }));
        tools.extend(self.added_tools().iter().map(|name| {
            tool(
                name,
                &format!("Tool added at run time; answers \"{name} called\"."),
                json!({}),
                &[],
            )
        }));
        tools
    }

    /// Appends the call to the calls file, if there is one.
    fn record_call(&self, name: &str, arguments: &JsonObject) {
        let Some(path) = &self.calls_file else {
            return;
        };
        let line = json!({
            "tool": name,
            "arguments": arguments,
            "pid": std::process::id(),
        });
        // The lock keeps lines from concurrent calls whole.
        let path = path.lock().unwrap_or_else(|p| p.into_inner());
        let result = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&*path)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = result {
            eprintln!("cadre-mcp-fixture: cannot write {}: {e}", path.display());
        }
    }

    async fn run_tool(
        &self,
        name: &str,
        args: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let result = match name {
            "echo" => text_result(format!("echo: {}", arg_str(args, "text")?)),
            "add" => text_result((arg_f64(args, "a")? + arg_f64(args, "b")?).to_string()),
            "tiny_image" => CallToolResult::success(vec![
                ContentBlock::image(TINY_PNG, "image/png"),
                ContentBlock::text("a tiny image"),
            ]),
            "fail" => CallToolResult::error(vec![ContentBlock::text(arg_str(args, "message")?)]),
            "slow" => {
                let ms = arg_u64(args, "ms")?;
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                    // A cancelled call stops sleeping; rmcp drops the answer.
                    () = context.ct.cancelled() => {}
                }
                text_result(format!("slept {ms}"))
            }
            "resource" => CallToolResult::success(vec![
                ContentBlock::embedded_text("file:///fixture/notes.txt", "notes body"),
                ContentBlock::resource_link(Resource::new("https://example.com/doc", "doc")),
            ]),
            "add_tool" => return self.add_tool(arg_str(args, "name")?, context).await,
            "add_prompt" => {
                lock(&self.added_prompts).push(arg_str(args, "name")?.to_string());
                if let Err(e) = context.peer.notify_prompt_list_changed().await {
                    eprintln!("cadre-mcp-fixture: cannot send prompts/list_changed: {e}");
                }
                text_result("prompt added")
            }
            "add_resource" => {
                let added = (
                    arg_str(args, "uri")?.to_string(),
                    arg_str(args, "text")?.to_string(),
                );
                lock(&self.added_resources).push(added);
                if let Err(e) = context.peer.notify_resource_list_changed().await {
                    eprintln!("cadre-mcp-fixture: cannot send resources/list_changed: {e}");
                }
                text_result("resource added")
            }
            "die" => std::process::exit(DIE_STATUS),
            "peek" => text_result("peeked"),
            "approve" if self.approver => {
                let input = args.get("input").map(Value::to_string).unwrap_or_default();
                if input.contains("allowed") {
                    text_result(
                        json!({"behavior": "allow", "updatedInput": args.get("input")}).to_string(),
                    )
                } else {
                    text_result(
                        json!({"behavior": "deny", "message": "the approve tool said no"})
                            .to_string(),
                    )
                }
            }
            "big" => {
                let len = usize::try_from(arg_u64(args, "bytes")?)
                    .map_err(|_| ErrorData::invalid_params("bytes is too large", None))?;
                text_result("x".repeat(len))
            }
            other if self.is_extra_tool(other) => text_result(format!("{other} called")),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool: {other}"),
                    None,
                ));
            }
        };
        Ok(result)
    }

    fn is_extra_tool(&self, name: &str) -> bool {
        let many = name
            .strip_prefix('t')
            .filter(|n| !n.starts_with('0') || *n == "0")
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|i| i < self.many_tools);
        many || self.added_tools().iter().any(|a| a == name)
    }

    async fn add_tool(
        &self,
        name: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if name.is_empty() {
            return Err(ErrorData::invalid_params("name must not be empty", None));
        }
        let taken = self.tools().iter().any(|t| t.name == name) || {
            // Checked again under the lock so two concurrent adds of one name add it once.
            let mut added = self.added.lock().unwrap_or_else(|p| p.into_inner());
            let taken = added.iter().any(|a| a == name);
            if !taken {
                added.push(name.to_string());
            }
            taken
        };
        if taken {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "tool {name} already exists"
            ))]));
        }
        // The notification goes out before the result, so a client that lists
        // tools after the call returns already knows the list changed.
        if let Err(e) = context.peer.notify_tool_list_changed().await {
            eprintln!("cadre-mcp-fixture: cannot send tools/list_changed: {e}");
        }
        Ok(text_result(format!("added {name}")))
    }
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        if self.no_extras {
            let mut config = ServerConfig::new(
                ServerCapabilities::builder()
                    .enable_tools()
                    .enable_tool_list_changed()
                    .build(),
            );
            config.server_info = Implementation::new(self.name.clone(), env!("CARGO_PKG_VERSION"));
            return config;
        }
        let mut config = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        );
        config.server_info = Implementation::new(self.name.clone(), env!("CARGO_PKG_VERSION"));
        config.instructions = (!self.instructions.is_empty()).then(|| self.instructions.clone());
        config
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(self.prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        self.prompt(&request.name, &arguments)
            .map(GetPromptResponse::from)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(self.resources()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.resource(&request.uri).map(ReadResourceResponse::from)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        self.record_call(&request.name, &arguments);
        self.run_tool(&request.name, &arguments, &context)
            .await
            .map(CallToolResponse::from)
    }

    async fn on_initialized(&self, _context: NotificationContext<RoleServer>) {
        if self.exit_after_init {
            std::process::exit(0);
        }
    }
}

/// A tool whose input schema is an object with these properties and required names.
fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Tool {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), properties);
    schema.insert("required".into(), json!(required));
    Tool::new(name.to_string(), description.to_string(), Arc::new(schema))
}

/// The value behind `m`, even if a panicking holder poisoned it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// An ASCII description exactly `len` bytes long.
fn long_text(len: usize) -> String {
    let sentence =
        "Echo the text back; this description is padded to test long tool descriptions. ";
    sentence.chars().cycle().take(len).collect()
}

fn bad_arg(key: &str, kind: &str) -> ErrorData {
    ErrorData::invalid_params(format!("argument {key} must be {kind}"), None)
}

fn arg_str<'a>(args: &'a JsonObject, key: &str) -> Result<&'a str, ErrorData> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| bad_arg(key, "a string"))
}

fn arg_f64(args: &JsonObject, key: &str) -> Result<f64, ErrorData> {
    args.get(key)
        .and_then(Value::as_f64)
        .ok_or_else(|| bad_arg(key, "a number"))
}

fn arg_u64(args: &JsonObject, key: &str) -> Result<u64, ErrorData> {
    args.get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| bad_arg(key, "a non-negative integer"))
}
