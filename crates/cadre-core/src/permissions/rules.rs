//! The permission-rule language: `permissions.allow` / `ask` / `deny` rules as
//! written in settings or on the command line, compatible with Claude Code's.
//!
//! A rule is a tool name, optionally followed by a specifier in parentheses:
//!
//! * `Read`, `Bash`, `WebFetch`, `Agent` — every call of that tool. Aliases are
//!   accepted (`Task` → `Agent`, `MultiEdit` → `Edit`, `read_file` → `Read`,
//!   `write_file` → `Write`, `edit_file` → `Edit`, `bash` → `Bash`).
//! * `Bash(git status:*)` — a command starting with the words `git status`;
//!   `Bash(npm test)` — exactly that command; `Bash(*)` — any command.
//! * `Read(src/**)`, `Edit(*.md)`, `Write(//tmp/**)`, `Read(~/.ssh/**)` —
//!   gitignore-style globs over the call's path. `Edit(...)` also covers
//!   every tool that edits a file (`Write`); `Read(...)` every tool that
//!   reads one (`Glob`, `Grep`): a tool's declared effect says which.
//! * `mcp__server`, `mcp__server__*` — every tool of an MCP server;
//!   `mcp__server__tool` — one tool.
//! * `Agent(Explore)` — an Agent call with that subagent type.
//!
//! How a `Bash(...)` rule reads a command is in `bash_rules` (over the
//! lexer in `shell` and the wrappers in `wrappers`); path globs are in
//! `path_rules`.

use std::fmt;
use std::path::{Path, PathBuf};

use super::ToolEffect;
use super::bash_rules::{BashPattern, parse_bash_spec};
use super::path_rules::{PathGlob, normalize};
use super::shell::{ShellParse, parse_shell};

/// Which list a rule belongs to (defined beside the modes, where config can name it too).
pub use crate::protocol::RuleKind;

/// One parsed permission rule.
#[derive(Debug, Clone)]
pub struct Rule {
    pub kind: RuleKind,
    /// The rule as written (surrounding whitespace trimmed).
    pub text: String,
    pattern: Pattern,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Why a rule string could not be parsed. Every message quotes the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("invalid permission rule {rule:?}: the rule is empty")]
    Empty { rule: String },
    #[error("invalid permission rule {rule:?}: missing closing \")\"")]
    MissingClosingParen { rule: String },
    #[error("invalid permission rule {rule:?}: unexpected text after the closing \")\"")]
    TrailingText { rule: String },
    #[error("invalid permission rule {rule:?}: unbalanced parentheses")]
    UnbalancedParens { rule: String },
    #[error("invalid permission rule {rule:?}: missing tool name before \"(\"")]
    MissingToolName { rule: String },
    #[error(
        "invalid permission rule {rule:?}: {name:?} is not a valid tool name \
         (letters, digits, \"_\" and \"-\"; MCP rules are mcp__server, \
         mcp__server__* or mcp__server__tool)"
    )]
    InvalidToolName { rule: String, name: String },
    #[error(
        "invalid permission rule {rule:?}: empty \"()\"; write {tool:?} alone to match every call"
    )]
    EmptySpecifier { rule: String, tool: String },
    #[error("invalid permission rule {rule:?}: {tool} rules take no \"(...)\" specifier")]
    UnexpectedSpecifier { rule: String, tool: String },
    #[error(
        "invalid permission rule {rule:?}: WebFetch rules take \"domain:HOST\", e.g. WebFetch(domain:example.com)"
    )]
    BadDomain { rule: String },
    #[error("invalid permission rule {rule:?}: empty command prefix before \":*\"")]
    EmptyPrefix { rule: String },
    #[error("invalid permission rule {rule:?}: unterminated quote or parenthesis in the command")]
    BadCommand { rule: String },
    #[error("invalid permission rule {rule:?}: invalid glob {glob:?}: {message}")]
    InvalidGlob {
        rule: String,
        glob: String,
        message: String,
    },
    #[error("invalid permission rule {rule:?}: \"~\" needs a home directory and none is known")]
    NoHomeDir { rule: String },
}

impl RuleError {
    /// The rule text that failed to parse, as given.
    pub fn rule(&self) -> &str {
        match self {
            RuleError::Empty { rule }
            | RuleError::MissingClosingParen { rule }
            | RuleError::TrailingText { rule }
            | RuleError::UnbalancedParens { rule }
            | RuleError::MissingToolName { rule }
            | RuleError::InvalidToolName { rule, .. }
            | RuleError::EmptySpecifier { rule, .. }
            | RuleError::UnexpectedSpecifier { rule, .. }
            | RuleError::EmptyPrefix { rule }
            | RuleError::BadDomain { rule }
            | RuleError::BadCommand { rule }
            | RuleError::InvalidGlob { rule, .. }
            | RuleError::NoHomeDir { rule } => rule,
        }
    }
}

/// The facts about one tool call a rule can look at.
#[derive(Debug, Clone, Default)]
pub struct CallFacts<'a> {
    /// Canonical tool name (Read, Bash, Agent, mcp__s__t, ...). Aliases are tolerated.
    pub tool: &'a str,
    /// What the tool declares its calls do; `None` when unknown.
    pub effect: Option<ToolEffect>,
    /// Bash: the command line.
    pub command: Option<&'a str>,
    /// File tools: the resolved absolute path.
    pub path: Option<&'a Path>,
    /// Agent: the subagent type.
    pub agent_type: Option<&'a str>,
    /// WebFetch: the host of its URL, lower-case.
    pub domain: Option<&'a str>,
}

/// Allow, ask and deny rules, evaluated together.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
}

impl RuleSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a rule to the list of its kind.
    pub fn add(&mut self, rule: Rule) {
        match rule.kind {
            RuleKind::Allow => self.allow.push(rule),
            RuleKind::Ask => self.ask.push(rule),
            RuleKind::Deny => self.deny.push(rule),
        }
    }

    pub fn extend(&mut self, rules: impl IntoIterator<Item = Rule>) {
        for rule in rules {
            self.add(rule);
        }
    }

    /// All rules: deny, then ask, then allow, each in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = &Rule> {
        self.deny.iter().chain(&self.ask).chain(&self.allow)
    }

    /// [`RuleSet::evaluate`], and from the same reading of the call the first
    /// deny or ask rule on particular commands when the command's name is
    /// made by expansion and so might be one of them (`$(printf r)m -rf x`
    /// against `Bash(rm:*)`): the caller asks instead of trusting a miss.
    pub fn evaluate_with_hidden_name(
        &self,
        facts: &CallFacts<'_>,
        project_dir: &Path,
    ) -> (Option<(RuleKind, String)>, Option<String>) {
        // No rule can match: the call is not prepared (its paths normalised) for nothing.
        if self.is_empty() {
            return (None, None);
        }
        let call = Call::new(facts, project_dir);
        (self.evaluate_call(&call), self.hidden_name_rule(&call))
    }

    fn hidden_name_rule(&self, call: &Call<'_>) -> Option<String> {
        if !call.shell.as_ref().is_some_and(|s| s.name_hidden) {
            return None;
        }
        self.deny
            .iter()
            .chain(&self.ask)
            .find(|r| matches!(&r.pattern, Pattern::Bash(b) if !matches!(b, BashPattern::Any)))
            .map(|r| r.text.clone())
    }

    /// Deny beats ask beats allow. Returns the winning kind and the rule text that
    /// decided it (for a compound shell command allowed by several rules, the rule
    /// that allowed its first sub-command). `None` when no rule applies.
    pub fn evaluate(
        &self,
        facts: &CallFacts<'_>,
        project_dir: &Path,
    ) -> Option<(RuleKind, String)> {
        if self.is_empty() {
            return None;
        }
        self.evaluate_call(&Call::new(facts, project_dir))
    }

    fn evaluate_call(&self, call: &Call<'_>) -> Option<(RuleKind, String)> {
        for (kind, rules) in [(RuleKind::Deny, &self.deny), (RuleKind::Ask, &self.ask)] {
            if let Some(rule) = rules.iter().find(|r| r.pattern.matches_any_part(call)) {
                return Some((kind, rule.text.clone()));
            }
        }
        let allowed = if call.tool == "Bash" {
            self.allow_bash(call)
        } else {
            self.allow.iter().find(|r| r.pattern.matches_any_part(call))
        };
        allowed.map(|r| (RuleKind::Allow, r.text.clone()))
    }

    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.ask.is_empty() && self.deny.is_empty()
    }

    /// The allow rule that lets this shell command run, if the allow rules cover it.
    fn allow_bash(&self, call: &Call<'_>) -> Option<&Rule> {
        let bash_rules = || {
            self.allow.iter().filter_map(|r| match &r.pattern {
                Pattern::Bash(b) => Some((r, b)),
                _ => None,
            })
        };
        if let Some((rule, _)) = bash_rules().find(|(_, b)| matches!(b, BashPattern::Any)) {
            return Some(rule);
        }
        let (Some(command), Some(shell)) = (call.command, call.shell.as_ref()) else {
            return None;
        };
        if !shell.allowable() {
            return None;
        }
        // A rule naming this exact (possibly compound) command.
        let whole = command.trim();
        if let Some((rule, _)) = bash_rules()
            .find(|(_, b)| matches!(b, BashPattern::Exact { text, .. } if text == whole))
        {
            return Some(rule);
        }
        let mut first = None;
        for segment in &shell.segments {
            let (rule, _) = bash_rules().find(|(_, b)| b.matches_segment(segment))?;
            first.get_or_insert(rule);
        }
        first
    }
}

/// Parses one rule as written by a user. `home` expands a leading `~` in path globs.
pub fn parse_rule(kind: RuleKind, text: &str, home: Option<&Path>) -> Result<Rule, RuleError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(RuleError::Empty { rule: text.into() });
    }
    let (name, spec) = split_rule(text, trimmed)?;
    let pattern = build_pattern(text, name, spec, home)?;
    Ok(Rule {
        kind,
        text: trimmed.to_string(),
        pattern,
    })
}

/// Splits `Name(spec)` into its name and specifier.
fn split_rule<'r>(orig: &str, rule: &'r str) -> Result<(&'r str, Option<&'r str>), RuleError> {
    let Some(open) = rule.find('(') else {
        if rule.contains(')') {
            return Err(RuleError::UnbalancedParens { rule: orig.into() });
        }
        return Ok((rule, None));
    };
    let Some(close) = rule.rfind(')').filter(|&c| c > open) else {
        return Err(RuleError::MissingClosingParen { rule: orig.into() });
    };
    if close + 1 != rule.len() {
        return Err(RuleError::TrailingText { rule: orig.into() });
    }
    Ok((&rule[..open], Some(&rule[open + 1..close])))
}

fn build_pattern(
    orig: &str,
    name: &str,
    spec: Option<&str>,
    home: Option<&Path>,
) -> Result<Pattern, RuleError> {
    if name.is_empty() {
        return Err(RuleError::MissingToolName { rule: orig.into() });
    }
    let invalid_name = || RuleError::InvalidToolName {
        rule: orig.into(),
        name: name.into(),
    };
    if let Some(rest) = name.strip_prefix("mcp__") {
        let pattern = mcp_pattern(rest).ok_or_else(invalid_name)?;
        if spec.is_some() {
            return Err(RuleError::UnexpectedSpecifier {
                rule: orig.into(),
                tool: name.into(),
            });
        }
        return Ok(pattern);
    }
    if !valid_name(name) {
        return Err(invalid_name());
    }
    let tool = canonical_tool(name);
    let Some(spec) = spec else {
        return Ok(if tool == "Bash" {
            Pattern::Bash(BashPattern::Any)
        } else {
            Pattern::Tool(tool.to_string())
        });
    };
    if !parens_balanced(spec, tool == "Bash") {
        return Err(RuleError::UnbalancedParens { rule: orig.into() });
    }
    let spec = spec.trim();
    if spec.is_empty() {
        return Err(RuleError::EmptySpecifier {
            rule: orig.into(),
            tool: tool.into(),
        });
    }
    match tool {
        "Bash" => parse_bash_spec(orig, spec).map(Pattern::Bash),
        "Read" | "Edit" | "Write" | "NotebookEdit" | "Glob" | "Grep" => Ok(Pattern::Path {
            tool: tool.to_string(),
            glob: PathGlob::compile(orig, spec, home)?,
        }),
        "Agent" => Ok(Pattern::Agent(spec.to_string())),
        "WebFetch" => match spec.strip_prefix("domain:").map(str::trim) {
            Some(host) if !host.is_empty() && !host.contains(['/', ' ', '*']) => {
                Ok(Pattern::Domain(host.to_ascii_lowercase()))
            }
            _ => Err(RuleError::BadDomain { rule: orig.into() }),
        },
        _ => Err(RuleError::UnexpectedSpecifier {
            rule: orig.into(),
            tool: tool.into(),
        }),
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `rest` is what follows `mcp__` in an MCP rule.
fn mcp_pattern(rest: &str) -> Option<Pattern> {
    if let Some(server) = rest.strip_suffix("__*") {
        return valid_name(server).then(|| Pattern::McpServer(format!("mcp__{server}__")));
    }
    if !valid_name(rest) {
        return None;
    }
    match rest.split_once("__") {
        None => Some(Pattern::McpServer(format!("mcp__{rest}__"))),
        Some((server, tool)) if !server.is_empty() && !tool.is_empty() => {
            Some(Pattern::McpTool(format!("mcp__{rest}")))
        }
        Some(_) => None,
    }
}

/// Maps accepted aliases to canonical tool names; other names pass through.
fn canonical_tool(name: &str) -> &str {
    crate::tool_names::canonical_tool_name(name)
}

/// Whether a rule naming `rule_tool` covers the call: its own tool, and as in
/// Claude Code, for `Edit` every tool that edits a file and for `Read` every
/// tool that reads one (a call with that effect on a path).
fn tool_covers(rule_tool: &str, call: &Call<'_>) -> bool {
    if rule_tool == call.tool {
        return true;
    }
    let family = match rule_tool {
        "Edit" => ToolEffect::Edit,
        "Read" => ToolEffect::ReadOnly,
        _ => return false,
    };
    call.effect == Some(family) && call.abs_path.is_some()
}

/// Checks parenthesis balance; for shell commands, quoted and escaped
/// parentheses don't count.
fn parens_balanced(s: &str, shell: bool) -> bool {
    let mut depth = 0i32;
    let (mut single, mut double) = (false, false);
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if shell {
            if single {
                single = c != '\'';
                continue;
            }
            match c {
                '\\' => {
                    chars.next();
                    continue;
                }
                '\'' if !double => {
                    single = true;
                    continue;
                }
                '"' => {
                    double = !double;
                    continue;
                }
                _ if double => continue,
                _ => {}
            }
        }
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}

#[derive(Debug, Clone)]
enum Pattern {
    /// A bare tool name other than Bash.
    Tool(String),
    Bash(BashPattern),
    Path {
        tool: String,
        glob: PathGlob,
    },
    /// `mcp__server__` prefix.
    McpServer(String),
    McpTool(String),
    Agent(String),
    /// `WebFetch(domain:HOST)`.
    Domain(String),
}

impl Pattern {
    /// Deny/ask semantics: the rule matches the call, or for a shell command any
    /// part of it.
    fn matches_any_part(&self, call: &Call<'_>) -> bool {
        match self {
            Pattern::Tool(tool) => tool_covers(tool, call),
            Pattern::Bash(bash) => call.tool == "Bash" && bash.matches_any_part(call),
            Pattern::Path { tool, glob } => tool_covers(tool, call) && glob.matches(call),
            Pattern::McpServer(prefix) => {
                call.tool.starts_with(prefix.as_str())
                    || prefix.strip_suffix("__") == Some(call.tool)
            }
            Pattern::McpTool(tool) => call.tool == tool,
            Pattern::Agent(kind) => {
                call.tool == "Agent" && (kind == "*" || call.agent_type == Some(kind.as_str()))
            }
            Pattern::Domain(host) => call.tool == "WebFetch" && call.domain == Some(host.as_str()),
        }
    }
}

/// A call prepared for matching.
pub(super) struct Call<'f> {
    pub(super) tool: &'f str,
    effect: Option<ToolEffect>,
    pub(super) command: Option<&'f str>,
    pub(super) shell: Option<ShellParse>,
    pub(super) abs_path: Option<PathBuf>,
    /// Relative to the project directory; `None` outside it (or for the
    /// project directory itself).
    pub(super) rel_path: Option<PathBuf>,
    pub(super) agent_type: Option<&'f str>,
    pub(super) domain: Option<&'f str>,
}

impl<'f> Call<'f> {
    fn new(facts: &CallFacts<'f>, project_dir: &Path) -> Self {
        let tool = canonical_tool(facts.tool);
        let shell = (tool == "Bash")
            .then_some(facts.command)
            .flatten()
            .map(parse_shell);
        let project = normalize(project_dir);
        let abs_path = facts.path.map(|p| normalize(&project.join(p)));
        let rel_path = abs_path
            .as_deref()
            .and_then(|p| p.strip_prefix(&project).ok())
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf);
        Call {
            tool,
            effect: facts.effect,
            command: facts.command,
            shell,
            abs_path,
            rel_path,
            agent_type: facts.agent_type,
            domain: facts.domain,
        }
    }
}
