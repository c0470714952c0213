//! Parsing one agent definition: a Markdown file with YAML frontmatter, in
//! Claude Code's `.claude/agents/*.md` format (a user's existing files must
//! load unchanged), or the JSON object of the `--agents` flag.
//!
//! Parsing never fails as a whole: problems become [`DefinitionIssue`]s and a
//! file is either loaded (possibly with warnings) or skipped with its reason.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use super::{AgentDefinition, DefinitionSource};

/// How serious an issue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IssueLevel {
    /// The file is skipped.
    Error,
    /// The file is loaded, but something in it is odd or ignored.
    Warning,
    /// The file is skipped silently at start-up (no `name`: documentation),
    /// but listed by `cadre agents validate`.
    Info,
}

impl IssueLevel {
    /// The lower-case name shown to users.
    pub fn as_str(&self) -> &'static str {
        match self {
            IssueLevel::Error => "error",
            IssueLevel::Warning => "warning",
            IssueLevel::Info => "info",
        }
    }
}

/// One problem found in a definition.
#[derive(Debug, Clone, Serialize)]
pub struct DefinitionIssue {
    /// The file, when there is one.
    pub path: Option<PathBuf>,
    /// How serious it is.
    pub level: IssueLevel,
    /// The 1-based line in the file, when known.
    pub line: Option<usize>,
    /// What is wrong, for a human.
    pub message: String,
}

impl fmt::Display for DefinitionIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = &self.path {
            write!(f, "{}", path.display())?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
            }
            write!(f, ": ")?;
        } else if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        write!(f, "{}: {}", self.level.as_str(), self.message)
    }
}

/// The result of parsing one file: the definition unless it was skipped,
/// and every issue found either way.
#[derive(Debug, Clone)]
pub struct ParseOutcome {
    /// `None` when the file is skipped (an `Error` or `Info` issue says why).
    pub definition: Option<AgentDefinition>,
    /// Everything worth telling, in file order where possible.
    pub issues: Vec<DefinitionIssue>,
}

/// The accepted `permissionMode` values.
pub const PERMISSION_MODES: &[&str] = &[
    "default",
    "manual",
    "acceptEdits",
    "plan",
    "dontAsk",
    "bypassPermissions",
];

/// A blank definition (every optional field unset), for the parsers and the built-ins.
pub(crate) fn blank_definition(
    name: &str,
    description: &str,
    prompt: &str,
    source: DefinitionSource,
    path: Option<PathBuf>,
) -> AgentDefinition {
    AgentDefinition {
        name: name.to_string(),
        description: description.to_string(),
        prompt: prompt.to_string(),
        tools: None,
        disallowed_tools: Vec::new(),
        model: None,
        permission_mode: None,
        max_turns: None,
        background: false,
        isolation: None,
        initial_prompt: None,
        color: None,
        effort: None,
        skills: Vec::new(),
        mcp_servers: None,
        hooks: None,
        memory: None,
        include_project_instructions: true,
        read_only: false,
        unknown_fields: BTreeMap::new(),
        source,
        path,
    }
}

// ---------------------------------------------------------------------------
// Tool names and lists
// ---------------------------------------------------------------------------

/// Maps legacy and alternative tool names to cadre's (`MultiEdit` → `Edit`,
/// `LS` → `Glob`, `Task` → `Agent`, …). A `Name(args)` form keeps its
/// arguments (`Task(Explore)` → `Agent(Explore)`); anything else, including
/// `mcp__server__tool`, is returned unchanged (trimmed).
pub fn normalize_tool_name(name: &str) -> String {
    let name = name.trim();
    let (head, rest) = match name.find('(') {
        Some(i) => (&name[..i], &name[i..]),
        None => (name, ""),
    };
    let mapped = match head.trim_end() {
        "MultiEdit" => "Edit",
        "LS" => "Glob",
        "Task" => "Agent",
        "BashOutput" => "TaskOutput",
        "KillShell" => "TaskStop",
        "read_file" => "Read",
        "write_file" => "Write",
        "edit_file" => "Edit",
        "bash" => "Bash",
        _ => return name.to_string(),
    };
    format!("{mapped}{rest}")
}

/// Splits `text` at `,` and whitespace outside parentheses, so that
/// `Agent(Explore, Plan)` or `Bash(git diff:*)` stay whole. Entries are
/// trimmed; empty ones are dropped.
fn split_list_string(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => {
                depth += 1;
                current.push(c);
            }
            ')' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            c if depth == 0 && (c == ',' || c.is_whitespace()) => {
                let entry = current.trim();
                if !entry.is_empty() {
                    out.push(entry.to_string());
                }
                current.clear();
            }
            c => current.push(c),
        }
    }
    let entry = current.trim();
    if !entry.is_empty() {
        out.push(entry.to_string());
    }
    out
}

/// A list field as written: a YAML/JSON list, or one string separated by
/// commas and/or spaces. Returns the entries (trimmed, empty ones dropped)
/// and complaints about entries that are clearly not names.
fn split_list(value: &Value) -> (Vec<String>, Vec<String>) {
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    match value {
        Value::String(s) => entries = split_list_string(s),
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::String(s) => {
                        let entry = s.trim();
                        if entry.is_empty() {
                            problems.push("empty entry (dropped)".to_string());
                        } else {
                            if entry.contains(char::is_whitespace) && !entry.contains('(') {
                                problems.push(format!("`{entry}` does not look like a tool name"));
                            }
                            entries.push(entry.to_string());
                        }
                    }
                    other => problems.push(format!("entry `{other}` is not a string (dropped)")),
                }
            }
        }
        Value::Null => {}
        other => problems.push(format!(
            "expected a list or a comma-separated string, found `{other}` (ignored)"
        )),
    }
    (entries, problems)
}

/// A `tools`-style list: a YAML/JSON list, a comma string (`Read, Grep, Glob`),
/// a space-separated string (`Read Grep Glob`) or `*`. Commas inside
/// parentheses do not split; entries are trimmed and normalised
/// ([`normalize_tool_name`]); empty entries are dropped. Entries that are not
/// known tools are kept: the filter reports them.
pub fn parse_tool_list(value: &Value) -> Vec<String> {
    split_list(value)
        .0
        .iter()
        .map(|entry| normalize_tool_name(entry))
        .collect()
}

// ---------------------------------------------------------------------------
// Field conversion, shared by the file and JSON parsers
// ---------------------------------------------------------------------------

/// A problem with one field's value.
struct FieldProblem {
    field: String,
    message: String,
}

/// Collects field problems while converting a map of fields.
#[derive(Default)]
struct FieldReader {
    problems: Vec<FieldProblem>,
}

impl FieldReader {
    fn problem(&mut self, field: &str, message: impl Into<String>) {
        self.problems.push(FieldProblem {
            field: field.to_string(),
            message: message.into(),
        });
    }

    /// Removes the first of `keys` present (the canonical spelling first); a
    /// second spelling also present is reported and dropped. `null` counts as
    /// absent.
    fn take(&mut self, map: &mut Map<String, Value>, keys: &[&str]) -> Option<(String, Value)> {
        let mut found: Option<(String, Value)> = None;
        for key in keys {
            if let Some(value) = map.remove(*key) {
                match &found {
                    None => found = Some((key.to_string(), value)),
                    Some((first, _)) => {
                        let message = format!("ignored: `{first}` is also set");
                        self.problem(key, message);
                    }
                }
            }
        }
        found.filter(|(_, value)| !value.is_null())
    }

    /// A scalar field as a string (numbers and booleans are written out); an
    /// empty string counts as absent.
    fn string(&mut self, map: &mut Map<String, Value>, keys: &[&str]) -> Option<String> {
        let (key, value) = self.take(map, keys)?;
        match scalar_string(&value) {
            Some(s) if s.trim().is_empty() => None,
            Some(s) => Some(s),
            None => {
                self.problem(&key, "expected a string (ignored)");
                None
            }
        }
    }

    fn tools(&mut self, map: &mut Map<String, Value>, keys: &[&str]) -> Option<Vec<String>> {
        let (key, value) = self.take(map, keys)?;
        if !matches!(value, Value::String(_) | Value::Array(_)) {
            self.problem(
                &key,
                "expected a list or a comma-separated string (ignored)",
            );
            return None;
        }
        let (entries, problems) = split_list(&value);
        for problem in problems {
            self.problem(&key, problem);
        }
        if entries.is_empty() && matches!(value, Value::String(_)) {
            self.problem(&key, "empty: the agent gets no tools");
        }
        Some(entries.iter().map(|e| normalize_tool_name(e)).collect())
    }

    fn names(&mut self, map: &mut Map<String, Value>, keys: &[&str]) -> Vec<String> {
        let Some((key, value)) = self.take(map, keys) else {
            return Vec::new();
        };
        let (entries, problems) = split_list(&value);
        for problem in problems {
            self.problem(&key, problem);
        }
        entries
    }

    fn raw(&mut self, map: &mut Map<String, Value>, keys: &[&str]) -> Option<Value> {
        self.take(map, keys).map(|(_, value)| value)
    }

    fn bool(&mut self, map: &mut Map<String, Value>, keys: &[&str]) -> bool {
        let Some((key, value)) = self.take(map, keys) else {
            return false;
        };
        match &value {
            Value::Bool(b) => *b,
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" => true,
                "false" | "no" | "off" | "" => false,
                _ => {
                    self.problem(
                        &key,
                        format!("expected true or false, found `{s}` (ignored)"),
                    );
                    false
                }
            },
            other => {
                self.problem(
                    &key,
                    format!("expected true or false, found `{other}` (ignored)"),
                );
                false
            }
        }
    }

    fn max_turns(&mut self, map: &mut Map<String, Value>, keys: &[&str]) -> Option<u32> {
        let (key, value) = self.take(map, keys)?;
        let parsed = match &value {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        match parsed
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
        {
            Some(n) => Some(n),
            None => {
                self.problem(
                    &key,
                    format!("expected a positive integer, found `{value}` (ignored)"),
                );
                None
            }
        }
    }

    fn permission_mode(&mut self, map: &mut Map<String, Value>, keys: &[&str]) -> Option<String> {
        let (key, value) = self.take(map, keys)?;
        match scalar_string(&value) {
            Some(mode) if PERMISSION_MODES.contains(&mode.trim()) => Some(mode.trim().to_string()),
            _ => {
                self.problem(
                    &key,
                    format!(
                        "unknown permission mode `{}` (ignored; expected one of {})",
                        display_value(&value),
                        PERMISSION_MODES.join(", ")
                    ),
                );
                None
            }
        }
    }

    /// Converts every field but `name`, `description` and the prompt (which
    /// the caller has taken out). Unknown fields end up in `unknown_fields`;
    /// the caller decides whether to report them.
    fn fill(&mut self, def: &mut AgentDefinition, map: &mut Map<String, Value>) {
        def.tools = self.tools(map, &["tools"]);
        def.disallowed_tools = self
            .tools(map, &["disallowedTools", "disallowed_tools"])
            .unwrap_or_default();
        def.model = self.string(map, &["model"]).map(|m| m.trim().to_string());
        def.permission_mode = self.permission_mode(map, &["permissionMode", "permission_mode"]);
        def.max_turns = self.max_turns(map, &["maxTurns", "max_turns"]);
        def.skills = self.names(map, &["skills"]);
        def.mcp_servers = self.raw(map, &["mcpServers"]);
        def.hooks = self.raw(map, &["hooks"]);
        def.memory = self.raw(map, &["memory"]);
        def.background = self.bool(map, &["background"]);
        def.isolation = self
            .string(map, &["isolation"])
            .map(|s| s.trim().to_string());
        if let Some(isolation) = &def.isolation
            && isolation != "worktree"
        {
            let message = format!("unknown isolation `{isolation}` (only `worktree` is supported)");
            self.problem("isolation", message);
        }
        def.effort = self.string(map, &["effort"]).map(|s| s.trim().to_string());
        def.color = self.string(map, &["color"]).map(|s| s.trim().to_string());
        def.initial_prompt = self.string(map, &["initialPrompt"]);
        def.unknown_fields = std::mem::take(map).into_iter().collect();
    }
}

/// A scalar as a string: strings as they are, numbers and booleans written out.
fn scalar_string(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn display_value(value: &Value) -> String {
    scalar_string(value).unwrap_or_else(|| value.to_string())
}

/// Why a name is refused, if it is.
fn name_problem(name: &str) -> Option<String> {
    if name.starts_with('-') {
        Some(format!("invalid name `{name}`: must not start with `-`"))
    } else if name.contains(':') {
        Some(format!("invalid name `{name}`: must not contain `:`"))
    } else {
        None
    }
}

// ---------------------------------------------------------------------------
// Markdown files
// ---------------------------------------------------------------------------

/// The frontmatter split off a file.
enum Split {
    /// The file does not start with a `---` line.
    None,
    /// A `---` first line but no closing `---` line.
    Unclosed,
    /// The YAML between the `---` lines, and the body after them.
    Found { frontmatter: String, body: String },
}

fn split_frontmatter(text: &str) -> Split {
    let mut lines = text.split('\n');
    match lines.next() {
        Some(first) if first.trim_end() == "---" => {}
        _ => return Split::None,
    }
    let mut frontmatter = Vec::new();
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            let body = lines.collect::<Vec<_>>().join("\n");
            return Split::Found {
                frontmatter: frontmatter.join("\n"),
                body: body.trim().to_string(),
            };
        }
        frontmatter.push(line);
    }
    Split::Unclosed
}

/// Bounds for the frontmatter YAML: generous for real files, small enough
/// that a hostile file cannot exhaust memory or time.
fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_documents: 1,
            max_depth: 32,
            max_nodes: 20_000,
            max_events: 100_000,
            max_aliases: 1_000,
            max_anchors: 1_000,
            max_total_scalar_bytes: 4 << 20,
        },
        // YAML 1.2 booleans only (`yes`/`no` stay strings), as Claude Code reads them.
        strict_booleans: true,
    }
}

fn parse_yaml(frontmatter: &str) -> Result<Value, serde_saphyr::Error> {
    if frontmatter.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_saphyr::from_str_with_options::<Value>(frontmatter, yaml_options())
}

/// The file line of a YAML error (the frontmatter starts on file line 2) and
/// its message without the location suffix.
fn yaml_error(err: &serde_saphyr::Error) -> (Option<usize>, String) {
    let line = err
        .location()
        .map(|loc| loc.line())
        .filter(|line| *line > 0)
        .and_then(|line| usize::try_from(line).ok())
        .map(|line| line + 1);
    let rendered = err.render_with_options(serde_saphyr::render_options! {
        formatter: &serde_saphyr::UserMessageFormatter,
        snippets: serde_saphyr::SnippetMode::Off,
        line_offset: 1,
    });
    let message = match rendered.rfind(" at line ") {
        Some(i) if line.is_some() => rendered[..i].to_string(),
        _ => rendered,
    };
    (line, format!("invalid YAML in frontmatter: {message}"))
}

/// Why a line was quoted by [`quote_colon_values`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QuoteReason {
    /// The value contains `: ` (or ends with `:`).
    Colon,
    /// The value starts with a character YAML reserves (`` ` ``, `@`, `%`).
    Reserved(char),
}

/// Quotes every one-line `key: value` whose plain value contains `: ` or
/// ends with `:` (which YAML refuses but Claude Code tolerates), or starts
/// with a reserved indicator (`` ` ``, `@`, `%`), as a single-quoted scalar.
/// Returns the rewritten frontmatter and the 0-based indices of rewritten
/// lines with the reason. Lines inside block scalars (`key: |` / `key: >`)
/// are left alone.
fn quote_colon_values(frontmatter: &str) -> (String, Vec<(usize, QuoteReason)>) {
    let mut out = Vec::new();
    let mut rewritten = Vec::new();
    let mut block_indent: Option<usize> = None;
    for (index, line) in frontmatter.split('\n').enumerate() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        if let Some(parent) = block_indent {
            if line.trim().is_empty() || indent > parent {
                out.push(line.to_string());
                continue;
            }
            block_indent = None;
        }
        let rest = &line[indent..];
        let Some((key, value)) = rest.split_once(':') else {
            out.push(line.to_string());
            continue;
        };
        let key_ok = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !key_ok || !(value.is_empty() || value.starts_with([' ', '\t'])) {
            out.push(line.to_string());
            continue;
        }
        let value = value.trim();
        if value.starts_with(['|', '>']) {
            block_indent = Some(indent);
            out.push(line.to_string());
            continue;
        }
        let reason = match value.chars().next() {
            Some(c @ ('`' | '@' | '%')) => Some(QuoteReason::Reserved(c)),
            Some('\'' | '"' | '[' | '{' | '#' | '&' | '*' | '!') | None => None,
            Some(_) if value.contains(": ") || value.ends_with(':') => Some(QuoteReason::Colon),
            Some(_) => None,
        };
        match reason {
            Some(reason) => {
                out.push(format!(
                    "{}{key}: '{}'",
                    &line[..indent],
                    value.replace('\'', "''")
                ));
                rewritten.push((index, reason));
            }
            None => out.push(line.to_string()),
        }
    }
    (out.join("\n"), rewritten)
}

/// The file line (1-based) of a top-level `key:` in the frontmatter.
fn key_line(frontmatter: &str, key: &str) -> Option<usize> {
    frontmatter
        .split('\n')
        .position(|line| {
            line.strip_prefix(key)
                .and_then(|rest| rest.trim_start().strip_prefix(':'))
                .is_some()
                || line
                    .strip_prefix(['"', '\''])
                    .and_then(|rest| rest.strip_prefix(key))
                    .is_some_and(|rest| rest.starts_with(['"', '\'']))
        })
        .map(|index| index + 2)
}

/// Collects issues for one file.
struct Issues<'a> {
    path: &'a Path,
    list: Vec<DefinitionIssue>,
}

impl Issues<'_> {
    fn push(&mut self, level: IssueLevel, line: Option<usize>, message: impl Into<String>) {
        self.list.push(DefinitionIssue {
            path: Some(self.path.to_path_buf()),
            level,
            line,
            message: message.into(),
        });
    }
}

/// Parses one definition file's text. `path` is recorded in the definition
/// and its issues; `source` is where it was found.
pub fn parse_definition(text: &str, path: &Path, source: DefinitionSource) -> ParseOutcome {
    let mut issues = Issues {
        path,
        list: Vec::new(),
    };
    let definition = parse_into(text, path, source, &mut issues);
    ParseOutcome {
        definition,
        issues: issues.list,
    }
}

fn parse_into(
    text: &str,
    path: &Path,
    source: DefinitionSource,
    issues: &mut Issues<'_>,
) -> Option<AgentDefinition> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = text.replace("\r\n", "\n");
    let (frontmatter, body) = match split_frontmatter(&text) {
        Split::None => {
            issues.push(
                IssueLevel::Info,
                None,
                "no frontmatter; treated as documentation",
            );
            return None;
        }
        Split::Unclosed => {
            issues.push(
                IssueLevel::Error,
                Some(1),
                "frontmatter is not closed: no second `---` line",
            );
            return None;
        }
        Split::Found { frontmatter, body } => (frontmatter, body),
    };

    let value = match parse_yaml(&frontmatter) {
        Ok(value) => value,
        Err(first) => {
            let (quoted, lines) = quote_colon_values(&frontmatter);
            match (lines.is_empty(), parse_yaml(&quoted)) {
                (false, Ok(value)) => {
                    for (index, reason) in lines {
                        let line = index + 2;
                        let message = match reason {
                            QuoteReason::Colon => {
                                "a value with ': ' was quoted to parse (as Claude Code does)"
                                    .to_string()
                            }
                            QuoteReason::Reserved(c) => {
                                format!("a value starting with '{c}' was quoted to parse")
                            }
                        };
                        issues.push(IssueLevel::Warning, Some(line), message);
                    }
                    value
                }
                _ => {
                    let (line, message) = yaml_error(&first);
                    issues.push(IssueLevel::Error, line, message);
                    return None;
                }
            }
        }
    };
    let mut map = match value {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        _ => {
            issues.push(
                IssueLevel::Error,
                Some(2),
                "frontmatter is not a mapping of `field: value` lines",
            );
            return None;
        }
    };

    let name = match map.remove("name") {
        None | Some(Value::Null) => None,
        Some(value) => match scalar_string(&value) {
            Some(s) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
            None => {
                issues.push(
                    IssueLevel::Error,
                    key_line(&frontmatter, "name"),
                    "`name` must be a string",
                );
                return None;
            }
        },
    };
    let Some(name) = name else {
        issues.push(IssueLevel::Info, None, "no name: treated as documentation");
        return None;
    };
    if let Some(problem) = name_problem(&name) {
        issues.push(IssueLevel::Error, key_line(&frontmatter, "name"), problem);
        return None;
    }
    let description = match map.remove("description") {
        Some(value) => scalar_string(&value).map(|s| s.trim().to_string()),
        None => None,
    }
    .unwrap_or_default();
    if description.is_empty() {
        issues.push(
            IssueLevel::Error,
            key_line(&frontmatter, "description").or(key_line(&frontmatter, "name")),
            format!("agent `{name}` has no `description` (required with `name`)"),
        );
        return None;
    }

    let mut def = blank_definition(&name, &description, &body, source, Some(path.to_path_buf()));
    let mut reader = FieldReader::default();
    reader.fill(&mut def, &mut map);
    for problem in reader.problems {
        let field = &problem.field;
        issues.push(
            IssueLevel::Warning,
            key_line(&frontmatter, field),
            format!("`{field}`: {}", problem.message),
        );
    }
    for key in def.unknown_fields.keys() {
        issues.push(
            IssueLevel::Warning,
            key_line(&frontmatter, key),
            format!("unknown field `{key}` (kept, ignored)"),
        );
    }
    if def.prompt.is_empty() {
        issues.push(
            IssueLevel::Warning,
            None,
            "empty body: the agent has no system prompt",
        );
    }
    Some(def)
}

// ---------------------------------------------------------------------------
// The --agents JSON
// ---------------------------------------------------------------------------

/// Parses the `--agents` flag: a JSON object mapping names to definitions,
/// `{"name": {"description": "...", "prompt": "...", "tools": [...], ...}}`
/// with the same (Claude Code) field names as the files. Any problem is an
/// error naming the agent and the field; unknown fields are kept silently.
pub fn definitions_from_json(json: &str) -> Result<Vec<AgentDefinition>, String> {
    let value: Value =
        serde_json::from_str(json).map_err(|e| format!("--agents: invalid JSON: {e}"))?;
    let Value::Object(agents) = value else {
        return Err(
            "--agents: expected a JSON object mapping agent names to definitions".to_string(),
        );
    };
    let mut out = Vec::new();
    for (name, spec) in agents {
        let name = name.trim().to_string();
        if name.is_empty() {
            return Err("--agents: an agent has an empty name".to_string());
        }
        if let Some(problem) = name_problem(&name) {
            return Err(format!("--agents: {problem}"));
        }
        let Value::Object(mut map) = spec else {
            return Err(format!("--agents: agent `{name}`: expected an object"));
        };
        if let Some(inner) = map.remove("name")
            && scalar_string(&inner).is_none_or(|inner| inner.trim() != name)
        {
            return Err(format!(
                "--agents: agent `{name}`: field `name`: differs from the key `{name}`"
            ));
        }
        let required = |map: &mut Map<String, Value>, field: &str| -> Result<String, String> {
            match map.remove(field) {
                Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
                Some(Value::String(_)) | None | Some(Value::Null) => Err(format!(
                    "--agents: agent `{name}`: field `{field}` is required"
                )),
                Some(_) => Err(format!(
                    "--agents: agent `{name}`: field `{field}`: expected a string"
                )),
            }
        };
        let description = required(&mut map, "description")?;
        let prompt = required(&mut map, "prompt")?;
        let mut def = blank_definition(
            &name,
            description.trim(),
            prompt.trim(),
            DefinitionSource::Flag,
            None,
        );
        let mut reader = FieldReader::default();
        reader.fill(&mut def, &mut map);
        if let Some(problem) = reader.problems.first() {
            return Err(format!(
                "--agents: agent `{name}`: field `{}`: {}",
                problem.field, problem.message
            ));
        }
        out.push(def);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ParseOutcome {
        parse_definition(text, Path::new("/p/agents/a.md"), DefinitionSource::Project)
    }

    fn loaded(text: &str) -> (AgentDefinition, Vec<DefinitionIssue>) {
        let out = parse(text);
        match out.definition {
            Some(def) => (def, out.issues),
            None => panic!("not loaded: {:?}", out.issues),
        }
    }

    fn warnings(issues: &[DefinitionIssue]) -> Vec<String> {
        issues
            .iter()
            .filter(|i| i.level == IssueLevel::Warning)
            .map(|i| i.message.clone())
            .collect()
    }

    #[test]
    fn tool_lists_in_every_spelling() {
        let cases: &[(&str, &[&str])] = &[
            ("tools: Read, Grep, Glob", &["Read", "Grep", "Glob"]),
            ("tools: Read Grep Glob", &["Read", "Grep", "Glob"]),
            ("tools: Read,Grep,  Glob,", &["Read", "Grep", "Glob"]),
            (
                "tools:\n  - Read\n  - Grep\n  - Glob",
                &["Read", "Grep", "Glob"],
            ),
            ("tools: [Read, Grep, Glob]", &["Read", "Grep", "Glob"]),
            ("tools: \"*\"", &["*"]),
            ("tools: '*'", &["*"]),
            (
                "tools: Read, Agent(Explore, Plan), Bash",
                &["Read", "Agent(Explore, Plan)", "Bash"],
            ),
            (
                "tools: Task(Explore, Plan) Read",
                &["Agent(Explore, Plan)", "Read"],
            ),
            (
                "tools:\n  - Agent(Explore, Plan)\n  - mcp__github__create_issue",
                &["Agent(Explore, Plan)", "mcp__github__create_issue"],
            ),
            (
                "tools: Bash(git diff:*), Read",
                &["Bash(git diff:*)", "Read"],
            ),
            (
                "tools: MultiEdit, LS, Task, BashOutput, KillShell, read_file, write_file, edit_file, bash",
                &[
                    "Edit",
                    "Glob",
                    "Agent",
                    "TaskOutput",
                    "TaskStop",
                    "Read",
                    "Write",
                    "Edit",
                    "Bash",
                ],
            ),
            ("tools: mcp__srv__*, mcp__srv", &["mcp__srv__*", "mcp__srv"]),
            ("tools: []", &[]),
        ];
        for (line, expected) in cases {
            let text = format!("---\nname: a\ndescription: d\n{line}\n---\nbody\n");
            let (def, issues) = loaded(&text);
            let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
            assert_eq!(def.tools, Some(expected), "{line}: {issues:?}");
            assert!(warnings(&issues).is_empty(), "{line}: {issues:?}");
        }
        let (def, _) = loaded("---\nname: a\ndescription: d\n---\nbody");
        assert_eq!(def.tools, None);
        let (def, _) = loaded("---\nname: a\ndescription: d\ntools:\n---\nbody");
        assert_eq!(def.tools, None);
    }

    #[test]
    fn tool_list_oddities_warn_but_keep() {
        let (def, issues) = loaded(
            "---\nname: a\ndescription: d\ntools:\n  - Read\n  - Web Search\n  - ''\n  - NotATool\n---\nb",
        );
        assert_eq!(
            def.tools,
            Some(vec![
                "Read".to_string(),
                "Web Search".to_string(),
                "NotATool".to_string()
            ])
        );
        let w = warnings(&issues);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("Web Search"));
        assert!(w[1].contains("empty entry"));
        assert_eq!(issues[0].line, Some(4));
    }

    #[test]
    fn parse_tool_list_and_normalize() {
        assert_eq!(
            parse_tool_list(&Value::String("Read, Agent(Explore, Plan)".into())),
            vec!["Read", "Agent(Explore, Plan)"]
        );
        assert_eq!(
            parse_tool_list(&serde_json::json!([" MultiEdit ", "", "Grep"])),
            vec!["Edit", "Grep"]
        );
        assert_eq!(parse_tool_list(&Value::Null), Vec::<String>::new());
        assert_eq!(normalize_tool_name("Task(Explore)"), "Agent(Explore)");
        assert_eq!(normalize_tool_name("Agent(a, b)"), "Agent(a, b)");
        assert_eq!(normalize_tool_name("mcp__x__y"), "mcp__x__y");
        assert_eq!(normalize_tool_name("Read"), "Read");
        assert_eq!(normalize_tool_name("bash(ls:*)"), "Bash(ls:*)");
    }

    #[test]
    fn disallowed_tools_and_snake_case_variants() {
        let (def, issues) = loaded(
            "---\nname: a\ndescription: d\ndisallowed_tools: Write, MultiEdit\nmax_turns: 7\npermission_mode: plan\n---\nb",
        );
        assert_eq!(def.disallowed_tools, vec!["Write", "Edit"]);
        assert_eq!(def.max_turns, Some(7));
        assert_eq!(def.permission_mode.as_deref(), Some("plan"));
        assert!(issues.is_empty(), "{issues:?}");
        let (def, _) = loaded(
            "---\nname: a\ndescription: d\ndisallowedTools: [Agent]\nmaxTurns: 3\npermissionMode: acceptEdits\n---\nb",
        );
        assert_eq!(def.disallowed_tools, vec!["Agent"]);
        assert_eq!(def.max_turns, Some(3));
        assert_eq!(def.permission_mode.as_deref(), Some("acceptEdits"));
    }

    const ONE_LINE_EXAMPLES: &str = r#"Use this agent when the user asks for a review.\n\n<example>\nContext: the user wrote code.\nuser: "Please review my change"\nassistant: "I'll use the reviewer agent."\n<commentary>\nA review was asked for.\n</commentary>\n</example>"#;

    #[test]
    fn multi_line_descriptions() {
        // Block scalar with <example> blocks.
        let text = "---\nname: reviewer\ndescription: |\n  Use for reviews.\n\n  <example>\n  Context: code was written\n  user: \"review it\"\n  </example>\nmodel: sonnet\n---\nYou review.\n";
        let (def, issues) = loaded(text);
        assert_eq!(
            def.description,
            "Use for reviews.\n\n<example>\nContext: code was written\nuser: \"review it\"\n</example>"
        );
        assert!(issues.is_empty(), "{issues:?}");
        // Folded block scalar.
        let (def, _) = loaded("---\nname: r\ndescription: >\n  one\n  two: three\n---\nb");
        assert_eq!(def.description, "one two: three");

        // Long single-line value, unquoted: contains ": " so it needs the quoting retry.
        let text = format!(
            "---\nname: reviewer\ndescription: {ONE_LINE_EXAMPLES}\ntools: Read, Grep\ncolor: blue\n---\nYou review."
        );
        let (def, issues) = loaded(&text);
        assert_eq!(def.description, ONE_LINE_EXAMPLES);
        assert_eq!(
            def.tools,
            Some(vec!["Read".to_string(), "Grep".to_string()])
        );
        assert_eq!(issues.len(), 1, "{issues:?}");
        assert_eq!(issues[0].line, Some(3));

        // The same, single-quoted: kept as written (literal backslash-n).
        let quoted = ONE_LINE_EXAMPLES.replace('\'', "''");
        let text = format!("---\nname: reviewer\ndescription: '{quoted}'\n---\nb");
        let (def, issues) = loaded(&text);
        assert_eq!(def.description, ONE_LINE_EXAMPLES);
        assert!(issues.is_empty(), "{issues:?}");

        // Double-quoted: YAML escapes apply (\n is a newline).
        let text =
            "---\nname: r\ndescription: \"Use it.\\n<example>\\nuser: hi\\n</example>\"\n---\nb";
        let (def, issues) = loaded(text);
        assert_eq!(def.description, "Use it.\n<example>\nuser: hi\n</example>");
        assert!(issues.is_empty(), "{issues:?}");

        // Unquoted without ": " parses directly, literal \n kept.
        let text = "---\nname: r\ndescription: Use it.\\n<example>hi</example>\n---\nb";
        let (def, issues) = loaded(text);
        assert_eq!(def.description, "Use it.\\n<example>hi</example>");
        assert!(issues.is_empty(), "{issues:?}");
    }

    #[test]
    fn unquoted_colon_value_is_quoted_with_warning() {
        let text = "---\nname: helper\nmodel: haiku\ndescription: Use this: when it's needed\ninitialPrompt: Start: now\n---\nBody";
        let (def, issues) = loaded(text);
        assert_eq!(def.description, "Use this: when it's needed");
        assert_eq!(def.initial_prompt.as_deref(), Some("Start: now"));
        let lines: Vec<_> = issues.iter().map(|i| (i.level, i.line)).collect();
        assert_eq!(
            lines,
            vec![
                (IssueLevel::Warning, Some(4)),
                (IssueLevel::Warning, Some(5))
            ]
        );
        assert!(issues[0].message.contains("was quoted to parse"));
        assert_eq!(issues[0].path.as_deref(), Some(Path::new("/p/agents/a.md")));
    }

    #[test]
    fn crlf_and_bom() {
        let text = "\u{feff}---\r\nname: a\r\ndescription: d\r\ntools: Read\r\n---\r\nLine one\r\nLine two\r\n";
        let (def, issues) = loaded(text);
        assert_eq!(def.name, "a");
        assert_eq!(def.prompt, "Line one\nLine two");
        assert_eq!(def.tools, Some(vec!["Read".to_string()]));
        assert!(issues.is_empty());
    }

    #[test]
    fn unknown_fields_kept_and_warned() {
        let text = "---\nname: a\ndescription: d\ncolor: automatic-purple\nmodel: claude-3-5-sonnet-20241022\nversion: 2\nauthor:\n  name: x\n---\nb";
        let (def, issues) = loaded(text);
        assert_eq!(def.color.as_deref(), Some("automatic-purple"));
        assert_eq!(def.model.as_deref(), Some("claude-3-5-sonnet-20241022"));
        assert_eq!(def.unknown_fields.len(), 2);
        assert_eq!(def.unknown_fields["version"], serde_json::json!(2));
        assert_eq!(
            def.unknown_fields["author"],
            serde_json::json!({"name": "x"})
        );
        let w: Vec<_> = issues
            .iter()
            .map(|i| (i.line, i.message.as_str()))
            .collect();
        assert_eq!(
            w,
            vec![
                (Some(7), "unknown field `author` (kept, ignored)"),
                (Some(6), "unknown field `version` (kept, ignored)"),
            ]
        );
    }

    #[test]
    fn all_fields() {
        let text = "---\nname: full\ndescription: d\nmodel: inherit\nskills: a, b\nmcpServers:\n  - github\nhooks:\n  PreToolUse:\n    - matcher: Bash\nmemory: project\nbackground: true\nisolation: worktree\neffort: high\ninitialPrompt: go\n---\nb";
        let (def, issues) = loaded(text);
        assert!(issues.is_empty(), "{issues:?}");
        assert_eq!(def.model.as_deref(), Some("inherit"));
        assert_eq!(def.skills, vec!["a", "b"]);
        assert_eq!(def.mcp_servers, Some(serde_json::json!(["github"])));
        assert_eq!(
            def.hooks,
            Some(serde_json::json!({"PreToolUse": [{"matcher": "Bash"}]}))
        );
        assert_eq!(def.memory, Some(serde_json::json!("project")));
        assert!(def.background);
        assert_eq!(def.isolation.as_deref(), Some("worktree"));
        assert_eq!(def.effort.as_deref(), Some("high"));
        assert_eq!(def.initial_prompt.as_deref(), Some("go"));
        assert!(def.include_project_instructions);
        assert!(!def.read_only);
        assert_eq!(def.source, DefinitionSource::Project);
        assert_eq!(def.path.as_deref(), Some(Path::new("/p/agents/a.md")));
    }

    #[test]
    fn bad_values_warn_and_unset() {
        let cases: &[(&str, &str)] = &[
            ("permissionMode: yolo", "unknown permission mode `yolo`"),
            ("maxTurns: 0", "positive integer"),
            ("maxTurns: -3", "positive integer"),
            ("maxTurns: lots", "positive integer"),
            ("background: maybe", "expected true or false"),
            ("tools: {a: b}", "expected a list"),
        ];
        for (line, needle) in cases {
            let text = format!("---\nname: a\ndescription: d\n{line}\n---\nb");
            let (def, issues) = loaded(&text);
            assert!(def.permission_mode.is_none() && def.max_turns.is_none() && !def.background);
            assert!(def.tools.is_none());
            assert_eq!(issues.len(), 1, "{line}: {issues:?}");
            assert_eq!(issues[0].level, IssueLevel::Warning);
            assert_eq!(issues[0].line, Some(4));
            assert!(issues[0].message.contains(needle), "{:?}", issues[0]);
        }
    }

    #[test]
    fn skip_rules() {
        let cases: &[(&str, IssueLevel, Option<usize>, &str)] = &[
            ("# Just docs\n", IssueLevel::Info, None, "no frontmatter"),
            (
                "---\ndescription: d\n---\nb",
                IssueLevel::Info,
                None,
                "no name: treated as documentation",
            ),
            ("---\n---\nb", IssueLevel::Info, None, "no name"),
            (
                "---\nname: -x\ndescription: d\n---\nb",
                IssueLevel::Error,
                Some(2),
                "must not start with `-`",
            ),
            (
                "---\nname: 'a:b'\ndescription: d\n---\nb",
                IssueLevel::Error,
                Some(2),
                "must not contain `:`",
            ),
            (
                "---\nname: a\n---\nb",
                IssueLevel::Error,
                Some(2),
                "has no `description`",
            ),
            (
                "---\nname: a\ndescription: ''\n---\nb",
                IssueLevel::Error,
                Some(3),
                "has no `description`",
            ),
            (
                "---\nname: a\ndescription: d\nunclosed",
                IssueLevel::Error,
                Some(1),
                "not closed",
            ),
            (
                "---\n- a\n- b\n---\nb",
                IssueLevel::Error,
                Some(2),
                "not a mapping",
            ),
        ];
        for (text, level, line, needle) in cases {
            let out = parse(text);
            assert!(out.definition.is_none(), "{text}");
            assert_eq!(out.issues.len(), 1, "{text}: {:?}", out.issues);
            let issue = &out.issues[0];
            assert_eq!(issue.level, *level, "{text}");
            assert_eq!(issue.line, *line, "{text}: {issue:?}");
            assert!(issue.message.contains(needle), "{text}: {issue:?}");
        }
    }

    #[test]
    fn bad_yaml_reports_file_line() {
        let text = "---\nname: a\ndescription: d\ntools: [Read, Grep\nmodel: sonnet\n---\nb";
        let out = parse(text);
        assert!(out.definition.is_none());
        assert_eq!(out.issues.len(), 1);
        let issue = &out.issues[0];
        assert_eq!(issue.level, IssueLevel::Error);
        assert!(issue.message.starts_with("invalid YAML"), "{issue:?}");
        assert!(matches!(issue.line, Some(4..=6)), "{issue:?}");

        let text = "---\nname: a\ndescription: d\n  bad: indent\n---\nb";
        let out = parse(text);
        assert!(out.definition.is_none());
        assert_eq!(out.issues[0].line, Some(4), "{:?}", out.issues);

        // Quoting does not help: still an error, at the original place.
        let text = "---\nname: a\ndescription: a: b\ntools: \"Read\n---\nb";
        let out = parse(text);
        assert!(out.definition.is_none());
        assert_eq!(out.issues[0].level, IssueLevel::Error);
    }

    #[test]
    fn quoting_leaves_block_scalars_alone() {
        let fm = "description: |\n  user: hi: there\nmodel: a: b\nlist:\n  - x: y: z\nc: `x` it's\nd: Examples:\ne: \"q: x\"";
        let (out, lines) = quote_colon_values(fm);
        assert_eq!(
            lines,
            vec![
                (2, QuoteReason::Colon),
                (5, QuoteReason::Reserved('`')),
                (6, QuoteReason::Colon)
            ]
        );
        assert_eq!(
            out,
            "description: |\n  user: hi: there\nmodel: 'a: b'\nlist:\n  - x: y: z\nc: '`x` it''s'\nd: 'Examples:'\ne: \"q: x\""
        );
        let (def, issues) = loaded("---\nname: a\ndescription: `code` reviewer\n---\nb");
        assert_eq!(def.description, "`code` reviewer");
        assert_eq!(
            issues[0].message,
            "a value starting with '`' was quoted to parse"
        );
    }

    #[test]
    fn issue_display() {
        let issue = DefinitionIssue {
            path: Some(PathBuf::from("/a/b.md")),
            level: IssueLevel::Error,
            line: Some(3),
            message: "boom".into(),
        };
        assert_eq!(issue.to_string(), "/a/b.md:3: error: boom");
    }

    #[test]
    fn json_agents() {
        let json = r#"{
            "reviewer": {"description": "Reviews code", "prompt": "You review.", "tools": ["Read", "Grep", "MultiEdit"], "disallowedTools": "Write", "model": "sonnet", "permissionMode": "plan", "maxTurns": 5, "background": true, "extra": 1},
            "tester": {"description": "Tests", "prompt": "You test.", "tools": "Read, Bash"}
        }"#;
        let defs = definitions_from_json(json).unwrap();
        assert_eq!(defs.len(), 2);
        let r = &defs[0];
        assert_eq!(r.name, "reviewer");
        assert_eq!(r.prompt, "You review.");
        assert_eq!(
            r.tools,
            Some(vec![
                "Read".to_string(),
                "Grep".to_string(),
                "Edit".to_string()
            ])
        );
        assert_eq!(r.disallowed_tools, vec!["Write"]);
        assert_eq!(r.model.as_deref(), Some("sonnet"));
        assert_eq!(r.permission_mode.as_deref(), Some("plan"));
        assert_eq!(r.max_turns, Some(5));
        assert!(r.background);
        assert_eq!(r.source, DefinitionSource::Flag);
        assert!(r.path.is_none());
        assert!(r.include_project_instructions);
        assert_eq!(r.unknown_fields["extra"], serde_json::json!(1));
        assert_eq!(
            defs[1].tools,
            Some(vec!["Read".to_string(), "Bash".to_string()])
        );

        let bad: &[(&str, &str)] = &[
            ("not json", "invalid JSON"),
            ("[1]", "expected a JSON object"),
            (r#"{"a": 1}"#, "agent `a`: expected an object"),
            (
                r#"{"a": {"prompt": "p"}}"#,
                "agent `a`: field `description` is required",
            ),
            (
                r#"{"a": {"description": "d"}}"#,
                "agent `a`: field `prompt` is required",
            ),
            (
                r#"{"a": {"description": "d", "prompt": 3}}"#,
                "agent `a`: field `prompt`: expected a string",
            ),
            (
                r#"{"a": {"description": "d", "prompt": "p", "maxTurns": "x"}}"#,
                "agent `a`: field `maxTurns`",
            ),
            (
                r#"{"a": {"description": "d", "prompt": "p", "permissionMode": "yolo"}}"#,
                "agent `a`: field `permissionMode`",
            ),
            (
                r#"{"a": {"description": "d", "prompt": "p", "tools": 3}}"#,
                "agent `a`: field `tools`",
            ),
            (
                r#"{"x:y": {"description": "d", "prompt": "p"}}"#,
                "must not contain `:`",
            ),
            (
                r#"{"-x": {"description": "d", "prompt": "p"}}"#,
                "must not start with `-`",
            ),
        ];
        for (json, needle) in bad {
            let err = definitions_from_json(json).unwrap_err();
            assert!(err.contains(needle), "{json}: {err}");
        }
    }
}
