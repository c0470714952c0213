//! The tools an agent can call: their trait, strict argument parsing, the output
//! cap, and the registry that resolves names and aliases. Whether a call may run
//! is decided elsewhere (permissions); this module only runs it.

pub mod ask_user;
mod background_tasks;
pub(crate) mod bash;
pub mod board;
mod delegation;
mod edit;
mod editor_files;
mod editor_terminal;
mod exact;
mod file_state;
mod glob;
mod grep;
mod notebook;
mod read;
pub(crate) mod schema;
mod task_tools;
mod todo;
mod typed;
pub mod untrusted_text;
pub(crate) mod util;
mod web_fetch;
mod web_search;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde::de::{self, DeserializeOwned};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::model::ToolSpec;
use crate::permissions::ToolEffect;
use crate::sandbox::SandboxPolicy;

pub use ask_user::AskUserQuestionTool;
pub use background_tasks::BackgroundTasks;
pub use bash::BashTool;
pub use delegation::{AgentPlace, Caller, Delegation, ROSTER_HEADER, SpawnCall};
pub use edit::EditTool;
pub use editor_files::EditorFiles;
pub use editor_terminal::{EditorTerminal, TerminalCall, TerminalRun};
pub use file_state::FileStateCache;
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use notebook::NotebookEditTool;
pub use read::ReadTool;
pub use schema::{input_schema, with_description};
pub use task_tools::{TaskListTool, TaskOutputTool, TaskStopTool, background_lines};
pub use todo::{TodoItem, TodoList, TodoWriteTool};
pub use typed::TypedTool;
pub use web_fetch::WebFetchTool;
pub use web_search::{
    BRAVE_URL, BackendSearch, DEFAULT_MAX_RESULTS, SearchBackend, TAVILY_URL, WebSearchTool,
};
pub use write::WriteTool;

pub use crate::tool_names::canonical_tool_name;

/// Default cap on tool output sent to the model: 64 KiB keeps one noisy call
/// from eating a large share of a context window.
pub const DEFAULT_OUTPUT_CAP: usize = 64 * 1024;

/// What a tool returns to the model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutput {
    /// Text the model sees.
    pub content: String,
    /// Whether the call failed (the model sees that too).
    pub is_error: bool,
    /// Images for providers that take them in tool results (an MCP tool's).
    pub images: Vec<crate::model::ToolImage>,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    /// A failed result.
    pub fn error(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: true,
            images: Vec::new(),
        }
    }

    /// An `invalid_arguments: ...` result.
    pub fn invalid_arguments(what: impl std::fmt::Display) -> Self {
        ToolOutput::error(format!("invalid_arguments: {what}"))
    }
}

/// Everything a tool may use while it runs. One per agent; cheap to clone.
#[derive(Clone)]
pub struct ToolContext {
    /// The project directory: relative paths resolve here, `Bash` runs here.
    pub cwd: PathBuf,
    /// What this agent has read, for `Edit`'s read-before-edit rule.
    pub file_state: Arc<FileStateCache>,
    /// This agent's todo list.
    pub todos: Arc<TodoList>,
    /// Cancelled when the turn is interrupted; long-running tools stop.
    pub cancel: CancellationToken,
    /// Cap on the text a tool returns, in bytes.
    pub output_cap: usize,
    /// How `Bash` commands are sandboxed; `None` when they cannot be (no Landlock) or sandboxing is off.
    pub sandbox: Option<Arc<SandboxPolicy>>,
    /// The agent these calls belong to (tasks are filed under it).
    pub agent_id: String,
    /// The session's background work; `None` where background tasks are not offered.
    pub background: Option<Arc<dyn BackgroundTasks>>,
    /// The session's permission policy, which file tools consult again as
    /// they open a path and searches consult for every file; `None` in tests.
    pub policy: Option<Arc<crate::permissions::PermissionPolicy>>,
    /// The real path this call was decided on (set per call by the agent):
    /// if the tool resolves its path elsewhere when it runs (a symlink
    /// swapped in while a question waited), it refuses.
    pub decided_path: Option<PathBuf>,
    /// This agent's place in the subagent runtime (`Agent`, `SendMessage`);
    /// `None` where it may neither start nor message children.
    pub delegation: Option<Arc<dyn Delegation>>,
    /// The calling agent, set by the agent loop for a batch of calls.
    pub caller: Option<Arc<Caller>>,
    /// Variables the settings files' `env` adds to the commands `Bash` starts.
    pub command_env: Arc<Vec<(String, String)>>,
    /// Rules this agent's active skills grant (their `allowed-tools`).
    pub grants: Arc<crate::permissions::ActiveGrants>,
    /// The editor that serves the file tools' reads and writes, when the
    /// front end is one's agent (`cadre acp`); children share it.
    pub editor_files: Option<Arc<dyn EditorFiles>>,
    /// The editor whose terminals run `Bash`'s foreground commands, when
    /// the front end is one's agent; children share it.
    pub editor_terminal: Option<Arc<dyn EditorTerminal>>,
    /// The call being run (set per call by the agent), for what a tool
    /// shows with it.
    pub call_id: Option<String>,
    /// This agent's seat in the session's team; `None` outside a team.
    pub team: Option<crate::teams::TeamSeat>,
    /// The board's hooks as this agent fires them (set per call by the
    /// agent when `TaskCreated` or `TaskCompleted` hooks are configured).
    pub board_hooks: Option<Arc<dyn board::BoardHooks>>,
    /// The session's code checkpoints, which the file tools save files to
    /// before changing them; `None` where changes are not tracked
    /// (background children, teammates, tests).
    pub checkpoints: Option<Arc<crate::checkpoints::CheckpointStore>>,
}

impl ToolContext {
    /// A context for an agent working in `cwd`.
    pub fn new(cwd: PathBuf) -> Self {
        ToolContext {
            cwd,
            file_state: Arc::new(FileStateCache::default()),
            todos: Arc::new(TodoList::default()),
            cancel: CancellationToken::new(),
            output_cap: DEFAULT_OUTPUT_CAP,
            sandbox: None,
            agent_id: "main".to_string(),
            background: None,
            policy: None,
            decided_path: None,
            delegation: None,
            caller: None,
            command_env: Arc::default(),
            grants: Arc::default(),
            editor_files: None,
            editor_terminal: None,
            call_id: None,
            team: None,
            board_hooks: None,
            checkpoints: None,
        }
    }

    /// Before a file tool changes `path` (resolved; `given` as the model
    /// named it): the open checkpoint saves what it holds now.
    pub fn before_change(&self, given: &str, path: &Path) {
        if let Some(c) = &self.checkpoints {
            let given = Path::new(given);
            let lexical = if given.is_absolute() {
                given.to_path_buf()
            } else {
                self.cwd.join(given)
            };
            c.before_change(&lexical, path);
        }
    }

    /// After a file tool changed `path`: the checkpoints remember what cadre left there.
    pub fn after_change(&self, path: &Path) {
        if let Some(c) = &self.checkpoints {
            c.after_change(path);
        }
    }

    /// The sandbox line of a `Bash` approval question for arguments `input`.
    pub fn sandbox_line(&self, input: &ToolInput) -> String {
        let off = input.get("sandbox").and_then(Value::as_bool) == Some(false);
        match &self.sandbox {
            _ if off => {
                "sandbox: off — the command asks to run unsandboxed, with your full access".into()
            }
            Some(policy) => policy.describe(),
            None => {
                "sandbox: NOT available on this system — the command would run unsandboxed".into()
            }
        }
    }

    /// Resolves a path argument against the project directory the way the
    /// permission policy does (every symlink followed, `..` applied after),
    /// so the tool opens the very path the decision was made on.
    pub fn resolve(&self, path: &str) -> PathBuf {
        crate::permissions::resolve_real(&self.cwd, path)
    }

    /// Why `tool` must not touch the resolved `path` (a deny rule, or a write
    /// to the data directory), checked again as the tool runs.
    pub(crate) fn refusal(&self, tool: &dyn Tool, path: &Path) -> Option<ToolOutput> {
        if let Some(decided) = &self.decided_path
            && decided != path
        {
            return Some(ToolOutput::error(format!(
                "not run: the path now resolves to {}, not to {} where the call was decided \
                 (a link changed meanwhile); call the tool again",
                path.display(),
                decided.display()
            )));
        }
        self.policy
            .as_ref()
            .and_then(|p| p.refusal(tool.name(), tool.effect(), path))
            .map(ToolOutput::error)
    }
}

/// A tool the model can call.
pub trait Tool: Send + Sync {
    /// Canonical name (Claude Code's); owned by the tool, so an MCP tool
    /// that goes away takes its name with it.
    fn name(&self) -> &str;
    /// Description shown to the model.
    fn description(&self) -> &'static str;
    /// JSON schema of the arguments.
    fn input_schema(&self) -> serde_json::Value;
    /// True when the tool never changes anything; such calls may run concurrently.
    fn is_read_only(&self) -> bool;
    /// What its calls do; the permission policy decides by this.
    fn effect(&self) -> ToolEffect;
    /// Runs the call with exactly the arguments the permission policy decided
    /// on; the tool reads its typed input from them with [`parse_args`].
    fn execute<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a ToolInput,
    ) -> BoxFuture<'a, ToolOutput>;

    /// Checks a call's arguments before anything decides on it (a hook, a
    /// rule, the approval gate): `Err` is the `invalid_arguments` result the
    /// model gets instead, and the call goes no further. The default checks
    /// numbers against the schema's bounds; a [`TypedTool`] also reads its
    /// typed arguments (a tool that implements this trait itself can with
    /// [`validate_as`]).
    fn validate(&self, input: &ToolInput) -> Result<(), ToolOutput> {
        check_bounds_with(|| self.input_schema(), input)
    }

    /// How a reply's calls to this tool may run beside its other calls.
    fn scheduling(&self) -> Scheduling {
        if self.is_read_only() {
            Scheduling::Shared
        } else {
            Scheduling::Exclusive
        }
    }

    /// For a [`Scheduling::Batch`] tool, before its calls are decided on:
    /// completes each call's arguments, and refuses the calls it will not run.
    fn admit_batch(&self, _ctx: &ToolContext, inputs: &mut [ToolInput]) -> Vec<Option<Refusal>> {
        vec![None; inputs.len()]
    }

    /// Runs a batch of calls that passed the permission policy, results in
    /// the order of `inputs`. `Err`: the turn must stop (a log failed).
    fn execute_batch<'a>(
        &'a self,
        ctx: &'a ToolContext,
        _position: BatchPosition,
        inputs: &'a [ToolInput],
    ) -> BoxFuture<'a, Result<Vec<ToolOutput>, String>> {
        Box::pin(async move {
            Ok(futures::future::join_all(inputs.iter().map(|i| self.execute(ctx, i))).await)
        })
    }

    /// Text that goes into an agent's conversation once, before its first
    /// message, when the agent has this tool.
    fn first_reminder(&self, _ctx: &ToolContext) -> Option<String> {
        None
    }

    /// Sees a message the user sends the agent, before its turn runs (a
    /// skill the user invoked with `/NAME` grants what it grants).
    fn user_message(&self, _ctx: &ToolContext, _text: &str) {}

    /// This tool as offered beside `tools` (canonical names): a version that
    /// does not point to a tool missing from them, or `None` when this one
    /// points to none.
    fn among(&self, _tools: &[&str]) -> Option<Arc<dyn Tool>> {
        None
    }

    /// When the provider runs this tool itself (Anthropic's web search): what
    /// the request offers instead of a client tool.
    fn server_web_search(&self) -> Option<crate::model::ServerWebSearch> {
        None
    }

    /// The spec sent to the model.
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_string(),
            description: self.description().to_string(),
            input_schema: self.input_schema(),
        }
    }
}

pub use crate::model::ToolInput;

/// Below this many tokens of context window a model gets short tool
/// descriptions (and a short system prompt), so a small local model has
/// room left to work.
pub const SMALL_WINDOW: u64 = 16_000;

/// Longest description a compact spec keeps, in characters.
const COMPACT_DESCRIPTION_CHARS: usize = 200;

/// `spec` for a small window: each description (the tool's and its
/// arguments') cut to its first sentence, examples and notes left out.
pub fn compact_spec(mut spec: crate::model::ToolSpec) -> crate::model::ToolSpec {
    spec.description = first_sentence(&spec.description);
    compact_schema(&mut spec.input_schema);
    spec
}

/// The schema's nested descriptions cut to their first sentence.
fn compact_schema(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    serde_json::Value::String(text) if key == "description" => {
                        *text = first_sentence(text);
                    }
                    other => compact_schema(other),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(compact_schema),
        _ => {}
    }
}

/// The first sentence (or line) of `text`, at most [`COMPACT_DESCRIPTION_CHARS`].
fn first_sentence(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or_default();
    let end = line
        .match_indices(". ")
        .map(|(i, _)| i + 1)
        .next()
        .unwrap_or(line.len());
    let sentence = &line[..end];
    if sentence.chars().count() <= COMPACT_DESCRIPTION_CHARS {
        return sentence.to_string();
    }
    let cut: String = sentence
        .chars()
        .take(COMPACT_DESCRIPTION_CHARS - 1)
        .collect();
    format!("{}…", cut.trim_end())
}

/// How a reply's calls to a tool may be run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheduling {
    /// Beside the reply's other shared and batch calls (it changes nothing).
    Shared,
    /// Alone, after the calls before it and before the calls after it.
    Exclusive,
    /// Beside shared calls; neighbouring calls to it are handed over together.
    Batch,
}

/// Where a batch stands among a reply's calls to its tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchPosition {
    /// 1-based position of the batch's first call among them.
    pub first_index: usize,
    /// How many calls to the tool the reply holds.
    pub total: usize,
}

/// Why a batch tool will not run a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The call is malformed or cannot run here: this result, as an error.
    Invalid(ToolOutput),
    /// The call is denied: this reason, as a denial.
    Denied(String),
}

/// Parses the model's argument text once, strictly: it must be one JSON
/// object, with no key twice at any depth (a plain `Value` would silently
/// keep the last one, so what was checked and what runs could differ).
/// Arrays, scalars and malformed text become an `invalid_arguments` result.
pub fn parse_input(raw: &str) -> Result<ToolInput, ToolOutput> {
    let trimmed = raw.trim();
    // An empty argument string means "no arguments": treat as `{}` so a tool
    // whose arguments are all optional still works.
    if trimmed.is_empty() {
        return Ok(ToolInput::new());
    }
    match serde_json::from_str::<Strict>(trimmed) {
        Ok(Strict(Value::Object(map))) => Ok(map),
        Ok(Strict(other)) => Err(ToolOutput::invalid_arguments(format!(
            "the arguments must be a JSON object, not {}",
            json_kind(&other)
        ))),
        Err(e) => Err(ToolOutput::invalid_arguments(e)),
    }
}

/// Reads a tool's typed input `T` (which should use
/// `#[serde(deny_unknown_fields)]`) from parsed arguments: unknown or missing
/// keys and wrong types become an `invalid_arguments` result.
pub fn parse_args<T: DeserializeOwned>(input: &ToolInput) -> Result<T, ToolOutput> {
    T::deserialize(input).map_err(ToolOutput::invalid_arguments)
}

/// [`Tool::validate`] for a tool whose typed arguments are `T`: the schema's
/// bounds, then unknown or missing keys and wrong types.
pub fn validate_as<T: DeserializeOwned>(
    tool: &dyn Tool,
    input: &ToolInput,
) -> Result<(), ToolOutput> {
    check_bounds_with(|| tool.input_schema(), input)?;
    parse_args::<T>(input).map(|_: T| ())
}

/// [`check_bounds`] against the schema `schema` makes, made only when the
/// call holds a number: bounds are on numbers, and most calls have none.
pub fn check_bounds_with(
    schema: impl FnOnce() -> Value,
    input: &ToolInput,
) -> Result<(), ToolOutput> {
    if input.values().any(Value::is_number) {
        check_bounds(&schema(), input)?;
    }
    Ok(())
}

/// Every top-level number of `input` inside the `minimum`/`maximum` its
/// property has in `schema`; the error names the range. (A value out of
/// range is refused, never clamped: a timeout of 0 is not a 1 ms timeout.)
pub fn check_bounds(schema: &Value, input: &ToolInput) -> Result<(), ToolOutput> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (key, value) in input {
        let (Some(n), Some(property)) = (value.as_f64(), properties.get(key)) else {
            continue;
        };
        let min = property.get("minimum").and_then(Value::as_f64);
        let max = property.get("maximum").and_then(Value::as_f64);
        let inside = min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m);
        if inside {
            continue;
        }
        let bound = |b: f64| {
            Value::from(b)
                .to_string()
                .trim_end_matches(".0")
                .to_string()
        };
        let range = match (min, max) {
            (Some(lo), Some(hi)) => format!("between {} and {}", bound(lo), bound(hi)),
            (Some(lo), None) => format!("at least {}", bound(lo)),
            (None, Some(hi)) => format!("at most {}", bound(hi)),
            (None, None) => continue,
        };
        return Err(ToolOutput::invalid_arguments(format!(
            "{key} must be {range} (got {value})"
        )));
    }
    Ok(())
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON value read with duplicate keys refused at every depth.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> de::Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(de::Error::custom(format!("duplicate key `{key}`")));
            }
            let Strict(v) = access.next_value()?;
            map.insert(key, v);
        }
        Ok(Value::Object(map))
    }
}

/// Test helper: the arguments object inside `v` (which must be an object).
#[cfg(test)]
#[allow(clippy::panic)]
pub(crate) fn object(v: Value) -> ToolInput {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

/// Cuts `text` to at most `cap` bytes on a UTF-8 boundary, appending
/// `[truncated N bytes]` when anything was dropped; the marker fits within
/// `cap` too, so capping again at the same cap changes nothing.
pub fn cap_output(text: String, cap: usize) -> String {
    if text.len() <= cap {
        return text;
    }
    cut_with_marker(&text, 0, cap)
}

/// `text` cut so that it and its `[truncated N bytes]` marker fit in `cap`
/// bytes (when `cap` has room for the marker); `already_dropped` bytes were
/// dropped before `text` was kept and count in N.
pub(crate) fn cut_with_marker(text: &str, already_dropped: u64, cap: usize) -> String {
    let total = text.len() as u64 + already_dropped;
    // N has at most as many digits as the total.
    let marker_room = "\n[truncated  bytes]".len() + total.to_string().len();
    let mut end = cap.saturating_sub(marker_room).min(text.len());
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    let dropped = total - end as u64;
    let mut out = String::with_capacity(end + marker_room);
    out.push_str(&text[..end]);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("[truncated {dropped} bytes]"));
    out
}

/// The tools available to one agent, looked up by canonical name or alias.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    /// The specs for the model, full and short, made once per set of tools
    /// (every change to the set drops them).
    shared_specs: [std::sync::OnceLock<crate::model::ToolSpecs>; 2],
}

impl ToolRegistry {
    /// The built-in file, search, shell and todo tools.
    pub fn builtin() -> Self {
        ToolRegistry {
            tools: vec![
                Arc::new(ReadTool),
                Arc::new(WriteTool),
                Arc::new(EditTool),
                Arc::new(NotebookEditTool),
                Arc::new(GlobTool),
                Arc::new(GrepTool),
                Arc::new(BashTool::default()),
                Arc::new(TodoWriteTool),
                Arc::new(WebFetchTool::default()),
            ],
            shared_specs: Default::default(),
        }
    }

    /// A registry of exactly `tools`, in that order.
    pub fn from_tools(tools: Vec<Arc<dyn Tool>>) -> Self {
        ToolRegistry {
            tools,
            shared_specs: Default::default(),
        }
    }

    /// Adds a tool (replacing one of the same name).
    pub fn insert(&mut self, tool: Arc<dyn Tool>) {
        self.shared_specs = Default::default();
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
    }

    /// The tools, in order.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// Keeps only the tools for which `keep` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(&dyn Tool) -> bool) {
        self.shared_specs = Default::default();
        self.tools.retain(|t| keep(t.as_ref()));
    }

    /// Finds a tool by canonical name or accepted alias.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let canonical = canonical_tool_name(name);
        self.tools.iter().find(|t| t.name() == canonical).cloned()
    }

    /// Canonical names, in registry order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// Specs for the model, in registry order; tools the provider runs
    /// itself are offered by [`ToolRegistry::web_search`] instead.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|t| t.server_web_search().is_none())
            .map(|t| t.spec())
            .collect()
    }

    /// [`Self::specs`] as every request of the agent sends them, short ones
    /// (`compact`) for a model with a small window: made once, then shared.
    pub fn model_specs(&self, compact: bool) -> crate::model::ToolSpecs {
        self.shared_specs[usize::from(compact)]
            .get_or_init(|| {
                spec_sets::shared(&self.tools, compact, || {
                    let specs = self.specs();
                    if compact {
                        specs
                            .into_iter()
                            .map(compact_spec)
                            .collect::<Vec<_>>()
                            .into()
                    } else {
                        specs.into()
                    }
                })
            })
            .clone()
    }

    /// The provider's web search, when one of these tools is it.
    pub fn web_search(&self) -> Option<crate::model::ServerWebSearch> {
        self.tools.iter().find_map(|t| t.server_web_search())
    }

    /// Puts `tool` in the place of the tool of its name (at the end when there is none).
    pub fn replace(&mut self, tool: Arc<dyn Tool>) {
        self.shared_specs = Default::default();
        match self.tools.iter_mut().find(|t| t.name() == tool.name()) {
            Some(slot) => *slot = tool,
            None => self.tools.push(tool),
        }
    }
}

mod spec_sets;

#[cfg(test)]
mod tests;
