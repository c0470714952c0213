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
//!   `Write`; `Read(...)` also covers `Glob` and `Grep`.
//! * `mcp__server`, `mcp__server__*` — every tool of an MCP server;
//!   `mcp__server__tool` — one tool.
//! * `Agent(Explore)` — an Agent call with that subagent type.
//!
//! Shell commands are split into their simple commands (on `&&`, `||`, `;`,
//! `|`, `&`, newlines, subshell parentheses and substitutions) by a small
//! quote-aware lexer that reads as bash does (see `shell`): a deny or ask rule
//! matches when it matches any of them, while allow rules must cover every
//! one. Commands with command or process substitution or output redirection
//! to a file (`>file`, `&>file`, `>&file`), and commands the lexer is not sure
//! it reads as bash does, are only allowed by `Bash` / `Bash(*)`; for the
//! latter, and for commands that run code their words don't show (a shell
//! reading stdin, `source`, `python3 -c`, ...), deny and ask rules also match
//! any run of words in a loose reading.
//! Deny and ask rules see through wrappers (`timeout`, `env`, `sudo`,
//! `find -exec`, `sh -c`, ...); allow rules only through the ones Claude Code
//! strips (`timeout`, `time`, `nice`, `nohup`, `stdbuf`), and only when every
//! option is understood (see `wrappers`).

use std::fmt;
use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use super::shell::{ShellParse, loose_tokens, parse_shell};
use super::wrappers::{allow_view, deny_any, runs_unseen_code};

/// Which list a rule belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleKind {
    Allow,
    Ask,
    Deny,
}

impl RuleKind {
    /// The lowercase name, as in settings (`allow`, `ask`, `deny`).
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Allow => "allow",
            RuleKind::Ask => "ask",
            RuleKind::Deny => "deny",
        }
    }
}

impl fmt::Display for RuleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    /// Bash: the command line.
    pub command: Option<&'a str>,
    /// File tools: the resolved absolute path.
    pub path: Option<&'a Path>,
    /// Agent: the subagent type.
    pub agent_type: Option<&'a str>,
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

    /// Deny beats ask beats allow. Returns the winning kind and the rule text that
    /// decided it (for a compound shell command allowed by several rules, the rule
    /// that allowed its first sub-command). `None` when no rule applies.
    pub fn evaluate(
        &self,
        facts: &CallFacts<'_>,
        project_dir: &Path,
    ) -> Option<(RuleKind, String)> {
        let call = Call::new(facts, project_dir);
        for (kind, rules) in [(RuleKind::Deny, &self.deny), (RuleKind::Ask, &self.ask)] {
            if let Some(rule) = rules.iter().find(|r| r.pattern.matches_any_part(&call)) {
                return Some((kind, rule.text.clone()));
            }
        }
        let allowed = if call.tool == "Bash" {
            self.allow_bash(&call)
        } else {
            self.allow
                .iter()
                .find(|r| r.pattern.matches_any_part(&call))
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
        "Read" | "Edit" | "Write" | "Glob" | "Grep" => Ok(Pattern::Path {
            tool: tool.to_string(),
            glob: PathGlob::compile(orig, spec, home)?,
        }),
        "Agent" => Ok(Pattern::Agent(spec.to_string())),
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

/// Tools an `Edit` rule covers, as in Claude Code.
const EDIT_TOOLS: &[&str] = &["Edit", "Write", "NotebookEdit"];
/// Tools a `Read` rule covers, as in Claude Code.
const READ_TOOLS: &[&str] = &["Read", "Glob", "Grep", "LS"];

fn tool_covers(rule_tool: &str, call_tool: &str) -> bool {
    rule_tool == call_tool
        || (rule_tool == "Edit" && EDIT_TOOLS.contains(&call_tool))
        || (rule_tool == "Read" && READ_TOOLS.contains(&call_tool))
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
}

impl Pattern {
    /// Deny/ask semantics: the rule matches the call, or for a shell command any
    /// part of it.
    fn matches_any_part(&self, call: &Call<'_>) -> bool {
        match self {
            Pattern::Tool(tool) => tool_covers(tool, call.tool),
            Pattern::Bash(bash) => call.tool == "Bash" && bash.matches_any_part(call),
            Pattern::Path { tool, glob } => tool_covers(tool, call.tool) && glob.matches(call),
            Pattern::McpServer(prefix) => {
                call.tool.starts_with(prefix.as_str())
                    || prefix.strip_suffix("__") == Some(call.tool)
            }
            Pattern::McpTool(tool) => call.tool == tool,
            Pattern::Agent(kind) => {
                call.tool == "Agent" && (kind == "*" || call.agent_type == Some(kind.as_str()))
            }
        }
    }
}

#[derive(Debug, Clone)]
enum BashPattern {
    /// `Bash` or `Bash(*)`.
    Any,
    /// `Bash(prefix:*)`. `words` is the prefix split into shell words; `None`
    /// when it is not a single simple command (then only the whole command
    /// text can match).
    Prefix {
        text: String,
        words: Option<Vec<String>>,
    },
    /// `Bash(command)`.
    Exact {
        text: String,
        words: Option<Vec<String>>,
    },
}

fn parse_bash_spec(orig: &str, spec: &str) -> Result<BashPattern, RuleError> {
    if spec == "*" {
        return Ok(BashPattern::Any);
    }
    let (text, prefix) = match spec.strip_suffix(":*") {
        Some(prefix) => (prefix.trim(), true),
        None => (spec, false),
    };
    if text.is_empty() {
        return Err(RuleError::EmptyPrefix { rule: orig.into() });
    }
    let parsed = parse_shell(text);
    if parsed.malformed {
        return Err(RuleError::BadCommand { rule: orig.into() });
    }
    let words = match <[Vec<String>; 1]>::try_from(parsed.segments) {
        Ok([words]) => Some(words),
        Err(_) => None,
    };
    let text = text.to_string();
    Ok(if prefix {
        BashPattern::Prefix { text, words }
    } else {
        BashPattern::Exact { text, words }
    })
}

impl BashPattern {
    /// Deny/ask semantics: matches the whole command text or any reading of
    /// any sub-command (through assignments, keywords, wrappers, `find -exec`
    /// and shell strings), and for a command the lexer is unsure about also
    /// any run of words in its loose reading.
    fn matches_any_part(&self, call: &Call<'_>) -> bool {
        let (text, words, prefix) = match self {
            BashPattern::Any => return true,
            BashPattern::Prefix { text, words } => (text, words, true),
            BashPattern::Exact { text, words } => (text, words, false),
        };
        let Some(command) = call.command else {
            return false;
        };
        let whole = command.trim();
        let whole_match = if prefix {
            whole.strip_prefix(text.as_str()).is_some_and(|rest| {
                rest.is_empty() || rest.starts_with(|c: char| c.is_whitespace())
            })
        } else {
            whole == text
        };
        if whole_match {
            return true;
        }
        let (Some(words), Some(shell)) = (words, &call.shell) else {
            return false;
        };
        deny_match(command, shell, words, prefix, 0)
    }

    /// Allow semantics for one sub-command: taken literally, or with Claude
    /// Code's wrappers (`timeout 5`, `nice -n 5`, ...) stripped.
    fn matches_segment(&self, segment: &[String]) -> bool {
        let literal = |segment: &[String]| match self {
            BashPattern::Any => true,
            BashPattern::Prefix { words, .. } => {
                words.as_ref().is_some_and(|w| segment.starts_with(w))
            }
            BashPattern::Exact { words, .. } => {
                words.as_ref().is_some_and(|w| segment == w.as_slice())
            }
        };
        literal(segment) || allow_view(segment).is_some_and(literal)
    }
}

/// How deep shell strings inside shell strings (`sh -c "eval '...'"`) are read.
const MAX_NESTING: usize = 4;

/// Whether a deny/ask rule's `words` match any reading of `shell` (the
/// parse of `text`).
fn deny_match(
    text: &str,
    shell: &ShellParse,
    words: &[String],
    prefix: bool,
    depth: usize,
) -> bool {
    let matches = |name: &str, args: &[String]| {
        let Some((command, rule_args)) = words.split_first() else {
            return false;
        };
        name == command
            && if prefix {
                args.starts_with(rule_args)
            } else {
                args == rule_args
            }
    };
    let mut nested = |inner: &str| {
        if depth >= MAX_NESTING {
            // Too deep to read: its loose reading decides.
            return loose_match(inner, words);
        }
        deny_match(inner, &parse_shell(inner), words, prefix, depth + 1)
    };
    if shell
        .segments
        .iter()
        .any(|segment| deny_any(segment, &matches, &mut nested))
    {
        return true;
    }
    if !(shell.unsure || shell.malformed || shell.segments.iter().any(|s| runs_unseen_code(s))) {
        return false;
    }
    if loose_match(text, words) {
        return true;
    }
    // Another plausible reading: every backslash-newline joined.
    let joined = text.replace("\\\n", "");
    depth < MAX_NESTING
        && joined != text
        && deny_match(&joined, &parse_shell(&joined), words, prefix, depth + 1)
}

/// Whether the rule's words occur in order, anywhere, in a loose reading of
/// `text` (tokens split at every shell operator, quote and path separator).
fn loose_match(text: &str, words: &[String]) -> bool {
    let [wanted, ..] = loose_tokens(&words.join(" "));
    if wanted.is_empty() {
        return false;
    }
    loose_tokens(text)
        .iter()
        .any(|tokens| tokens.windows(wanted.len()).any(|w| w == wanted.as_slice()))
}

/// Whether `word` is a `NAME=value` (or `NAME+=value`) assignment.
pub(super) fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

// ---------------------------------------------------------------------------
// Path globs

#[derive(Debug, Clone)]
struct PathGlob {
    /// Matched against the absolute path; otherwise against the path relative
    /// to the project directory.
    absolute: bool,
    matcher: GlobMatcher,
}

impl PathGlob {
    fn compile(orig: &str, spec: &str, home: Option<&Path>) -> Result<Self, RuleError> {
        let (absolute, mut glob) = if let Some(rest) = spec.strip_prefix("//") {
            (true, format!("/{rest}"))
        } else if spec == "~" || spec.starts_with("~/") {
            let home = home.ok_or_else(|| RuleError::NoHomeDir { rule: orig.into() })?;
            let home = home.to_str().ok_or_else(|| RuleError::InvalidGlob {
                rule: orig.into(),
                glob: spec.into(),
                message: "the home directory is not valid UTF-8".into(),
            })?;
            let home = globset::escape(home.trim_end_matches('/'));
            (true, format!("{home}{}", &spec[1..]))
        } else {
            (false, relative_glob(spec))
        };
        if absolute && glob.ends_with('/') {
            glob.push_str("**");
        }
        let matcher = GlobBuilder::new(&glob)
            .literal_separator(true)
            .build()
            .map_err(|e| RuleError::InvalidGlob {
                rule: orig.into(),
                glob: spec.into(),
                message: e.kind().to_string(),
            })?
            .compile_matcher();
        Ok(PathGlob { absolute, matcher })
    }

    /// A path matches when it or one of its parent directories matches
    /// (gitignore-like: a matched directory covers its contents).
    fn matches(&self, call: &Call<'_>) -> bool {
        let target = if self.absolute {
            call.abs_path.as_deref()
        } else {
            call.rel_path.as_deref()
        };
        target.is_some_and(|path| {
            path.ancestors()
                .filter(|p| !p.as_os_str().is_empty())
                .any(|p| self.matcher.is_match(p))
        })
    }
}

/// Turns a project-relative gitignore-style pattern into a glob over the
/// relative path: a leading `/` or `./` anchors it at the project root, as does
/// a `/` inside it; otherwise it matches at any depth. A trailing `/` means
/// "everything under this directory".
fn relative_glob(spec: &str) -> String {
    let mut body = spec;
    let mut anchored = false;
    loop {
        if let Some(rest) = body.strip_prefix("./") {
            body = rest;
        } else if let Some(rest) = body.strip_prefix('/') {
            body = rest;
        } else {
            break;
        }
        anchored = true;
    }
    let dir_only = body.ends_with('/');
    let body = body.trim_end_matches('/');
    if body.is_empty() || body == "." {
        return "**".into();
    }
    let mut glob = if anchored || body.contains('/') {
        body.to_string()
    } else {
        format!("**/{body}")
    };
    if dir_only {
        glob.push_str("/**");
    }
    glob
}

/// Lexically resolves `.` and `..` (no file-system access).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other),
        }
    }
    out
}

/// A call prepared for matching.
struct Call<'f> {
    tool: &'f str,
    command: Option<&'f str>,
    shell: Option<ShellParse>,
    abs_path: Option<PathBuf>,
    /// Relative to the project directory; `None` outside it (or for the
    /// project directory itself).
    rel_path: Option<PathBuf>,
    agent_type: Option<&'f str>,
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
            command: facts.command,
            shell,
            abs_path,
            rel_path,
            agent_type: facts.agent_type,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROJECT: &str = "/proj";
    const HOME: &str = "/home/u";

    /// Builds a rule set from `kind:rule` strings.
    fn rules(specs: &[&str]) -> RuleSet {
        let mut set = RuleSet::new();
        for spec in specs {
            let (kind, text) = spec.split_once(':').expect("kind:rule");
            let kind = match kind {
                "allow" => RuleKind::Allow,
                "ask" => RuleKind::Ask,
                "deny" => RuleKind::Deny,
                other => panic!("bad kind {other}"),
            };
            set.add(parse_rule(kind, text, Some(Path::new(HOME))).expect(text));
        }
        set
    }

    fn eval(set: &RuleSet, facts: &CallFacts<'_>) -> Option<RuleKind> {
        set.evaluate(facts, Path::new(PROJECT))
            .map(|(kind, _)| kind)
    }

    fn bash(command: &str) -> CallFacts<'_> {
        CallFacts {
            tool: "Bash",
            command: Some(command),
            ..CallFacts::default()
        }
    }

    fn file<'a>(tool: &'a str, path: &'a str) -> CallFacts<'a> {
        CallFacts {
            tool,
            path: Some(Path::new(path)),
            ..CallFacts::default()
        }
    }

    use RuleKind::{Allow, Ask, Deny};

    #[test]
    fn bash_rules() {
        let cases: &[(&[&str], &str, Option<RuleKind>)] = &[
            // prefix
            (&["allow:Bash(git status:*)"], "git status", Some(Allow)),
            (&["allow:Bash(git status:*)"], "git status -s", Some(Allow)),
            (
                &["allow:Bash(git status:*)"],
                "  git status -s  ",
                Some(Allow),
            ),
            (&["allow:Bash(git status:*)"], "git statusx", None),
            (&["allow:Bash(git status:*)"], "git stat", None),
            (
                &["allow:Bash(git status:*)"],
                "git \"status\" -s",
                Some(Allow),
            ),
            (&["allow:Bash(git status:*)"], "FOO=1 git status", None),
            (&["allow:Bash(npm run:*)"], "npm run-script x", None),
            // exact
            (&["allow:Bash(npm test)"], "npm test", Some(Allow)),
            (&["allow:Bash(npm test)"], " npm test ", Some(Allow)),
            (&["allow:Bash(npm test)"], "npm test --watch", None),
            (
                &["allow:Bash(ls > /dev/null)"],
                "ls >/dev/null",
                Some(Allow),
            ),
            (&["allow:Bash(cd x && make)"], "cd x && make", Some(Allow)),
            (
                &["allow:Bash(cd x && make)"],
                "cd x && make; rm -rf y",
                None,
            ),
            // any
            (
                &["allow:Bash(*)"],
                "rm -rf / && echo $(whoami) > x",
                Some(Allow),
            ),
            (&["allow:Bash"], "anything at all", Some(Allow)),
            (&["allow:bash"], "ls", Some(Allow)),
            // compound commands: allow needs every part
            (
                &["allow:Bash(git status:*)"],
                "git status && rm -rf x",
                None,
            ),
            (
                &["allow:Bash(git status:*)"],
                "git status; git status -s",
                Some(Allow),
            ),
            (
                &["allow:Bash(git status:*)", "allow:Bash(rm:*)"],
                "git status && rm -rf x",
                Some(Allow),
            ),
            (
                &["allow:Bash(ls:*)", "allow:Bash(grep:*)"],
                "ls | grep x",
                Some(Allow),
            ),
            (&["allow:Bash(ls:*)"], "ls | grep x", None),
            (&["allow:Bash(ls:*)"], "ls || rm x", None),
            (&["allow:Bash(ls:*)"], "ls & rm x", None),
            (&["allow:Bash(ls:*)"], "ls\nrm x", None),
            (&["allow:Bash(ls:*)"], "ls |& rm x", None),
            (&["allow:Bash(ls:*)"], "(ls; rm x)", None),
            (&["allow:Bash(ls:*)"], "(ls; ls -l)", Some(Allow)),
            (&["allow:Bash(ls:*)"], "", None),
            (&["allow:Bash(ls:*)"], "   ", None),
            // quoting
            (&["allow:Bash(echo:*)"], "echo 'a; rm -rf x'", Some(Allow)),
            (
                &["allow:Bash(echo:*)"],
                "echo \"a && rm -rf x\"",
                Some(Allow),
            ),
            (&["allow:Bash(echo:*)"], "echo a\\; rm -rf x", Some(Allow)),
            (
                &["allow:Bash(echo:*)"],
                "echo \"a\\\"; rm -rf x\"",
                Some(Allow),
            ),
            (&["allow:Bash(echo:*)"], "echo \"a\\\\\"; rm -rf x", None),
            (&["allow:Bash(echo:*)"], "echo 'unterminated; rm x", None),
            (
                &["allow:Bash(echo:*)"],
                "echo $'a\\'; rm -rf x; echo '",
                Some(Allow),
            ),
            (
                &["allow:Bash(echo:*)"],
                "echo $'\\'' ; rm -rf x ; echo ''",
                None,
            ),
            (
                &["allow:Bash(echo:*)"],
                "echo hi # it's ; fine",
                Some(Allow),
            ),
            (&["allow:Bash(echo:*)"], "echo hi # it's\nrm -rf x #'", None),
            (&["allow:Bash(echo:*)"], "echo ${HOME}", Some(Allow)),
            (
                &["allow:Bash(echo:*)"],
                "echo \"${x:-'\"'}\" ; rm -rf y #'",
                None,
            ),
            // substitution and redirection block prefix/exact allows
            (&["allow:Bash(echo:*)"], "echo $(rm -rf x)", None),
            (&["allow:Bash(echo:*)"], "echo \"$(date)\"", None),
            (
                &["allow:Bash(echo:*)", "allow:Bash(date)"],
                "echo $(date)",
                None,
            ),
            (&["allow:Bash(echo:*)"], "echo `date`", None),
            (&["allow:Bash(echo:*)"], "echo $((1 + 2))", None),
            (&["allow:Bash(diff:*)"], "diff <(ls a) <(ls b)", None),
            (&["allow:Bash(tee:*)"], "tee >(cat)", None),
            (&["allow:Bash(echo:*)"], "echo hi > out.txt", None),
            (&["allow:Bash(echo:*)"], "echo hi >> out.txt", None),
            (&["allow:Bash(echo:*)"], "echo hi>out.txt", None),
            (&["allow:Bash(echo:*)"], "echo hi &> out.txt", None),
            (&["allow:Bash(echo:*)"], "echo hi >& out.txt", None),
            (&["allow:Bash(echo:*)"], "echo hi > $FILE", None),
            (&["allow:Bash(cat:*)"], "cat <> file", None),
            (&["allow:Bash(echo:*)"], "echo hi >", None),
            (&["allow:Bash(echo:*)"], "echo hi 2>&1", Some(Allow)),
            (&["allow:Bash(echo:*)"], "echo hi >&2", Some(Allow)),
            (
                &["allow:Bash(echo:*)"],
                "echo hi >/dev/null 2>&1",
                Some(Allow),
            ),
            (&["allow:Bash(echo:*)"], "echo hi &>/dev/null", Some(Allow)),
            (&["allow:Bash(echo:*)"], "echo hi 2> /dev/null", Some(Allow)),
            (&["allow:Bash(cat:*)"], "cat < input.txt", Some(Allow)),
            (&["allow:Bash(cat:*)"], "cat <<< hello", Some(Allow)),
            // here-documents
            (
                &["allow:Bash(cat:*)"],
                "cat <<'EOF'\nit's; rm -rf x\nEOF",
                Some(Allow),
            ),
            (
                &["allow:Bash(cat:*)"],
                "cat <<EOF\nit's\nEOF\nrm -rf x #'",
                None,
            ),
            (&["allow:Bash(cat:*)"], "cat <<EOF\n$(rm -rf x)\nEOF", None),
            (&["allow:Bash(cat:*)"], "cat <<-EOF\n\thi\n\tEOF\nls", None),
            (
                &["allow:Bash(cat:*)", "allow:Bash(ls)"],
                "cat <<-EOF\n\thi\n\tEOF\nls",
                Some(Allow),
            ),
            // deny / ask match any part
            (&["deny:Bash(rm:*)"], "ls; rm -rf build", Some(Deny)),
            (&["deny:Bash(rm:*)"], "ls && echo 'rm -rf build'", None),
            (&["deny:Bash(rm:*)"], "ls | xargs echo; rm x", Some(Deny)),
            (&["deny:Bash(rm:*)"], "echo $(rm -rf x)", Some(Deny)),
            (&["deny:Bash(rm:*)"], "echo \"$(rm -rf x)\"", Some(Deny)),
            (&["deny:Bash(rm:*)"], "echo `rm -rf x`", Some(Deny)),
            (&["deny:Bash(rm:*)"], "(cd x && rm -rf y)", Some(Deny)),
            (&["deny:Bash(rm:*)"], "FOO=1 rm x", Some(Deny)),
            (&["deny:Bash(rm:*)"], "sudo rm x", Some(Deny)),
            (&["deny:Bash(rm:*)"], "/bin/rm x", Some(Deny)),
            (&["deny:Bash(rm:*)"], "\"rm\" x", Some(Deny)),
            (&["deny:Bash(rm:*)"], "if true; then rm x; fi", Some(Deny)),
            (&["deny:Bash(rm:*)"], "rmdir x", None),
            (&["deny:Bash(rm -rf)"], "ls; rm -rf", Some(Deny)),
            (
                &["deny:Bash(cd /tmp && rm:*)"],
                "cd /tmp && rm x",
                Some(Deny),
            ),
            (&["deny:Bash(*)"], "ls", Some(Deny)),
            (&["deny:Bash"], "ls", Some(Deny)),
            (
                &["ask:Bash(git push:*)"],
                "git add . && git push --force",
                Some(Ask),
            ),
            // precedence
            (
                &["allow:Bash(git:*)", "deny:Bash(git push:*)"],
                "git push",
                Some(Deny),
            ),
            (&["allow:Bash", "deny:Bash(rm:*)"], "rm x", Some(Deny)),
            (
                &["allow:Bash(git:*)", "ask:Bash(git push:*)"],
                "git push",
                Some(Ask),
            ),
            (
                &["ask:Bash(git:*)", "deny:Bash(git push:*)"],
                "git push",
                Some(Deny),
            ),
            (
                &["allow:Bash(git:*)", "ask:Bash(git push:*)"],
                "git status",
                Some(Allow),
            ),
            // rules for other tools don't match
            (&["allow:Read"], "ls", None),
        ];
        for (specs, command, want) in cases {
            let set = rules(specs);
            assert_eq!(
                eval(&set, &bash(command)),
                *want,
                "rules {specs:?}, command {command:?}"
            );
        }
    }

    #[test]
    fn bash_reports_the_deciding_rule() {
        let set = rules(&[
            "allow:Bash(git status:*)",
            "allow:Bash(ls:*)",
            "deny:Bash(rm:*)",
        ]);
        let project = Path::new(PROJECT);
        assert_eq!(
            set.evaluate(&bash("ls && git status"), project),
            Some((Allow, "Bash(ls:*)".into()))
        );
        assert_eq!(
            set.evaluate(&bash("ls && rm x"), project),
            Some((Deny, "Bash(rm:*)".into()))
        );
        let no_command = CallFacts {
            tool: "Bash",
            ..CallFacts::default()
        };
        assert_eq!(set.evaluate(&no_command, project), None);
    }

    #[test]
    fn file_rules() {
        let cases: &[(&[&str], &str, &str, Option<RuleKind>)] = &[
            (
                &["allow:Edit(src/**)"],
                "Edit",
                "/proj/src/a/b.rs",
                Some(Allow),
            ),
            (
                &["allow:Edit(src/**)"],
                "Write",
                "/proj/src/a/b.rs",
                Some(Allow),
            ),
            (
                &["allow:MultiEdit(src/**)"],
                "Write",
                "/proj/src/a/b.rs",
                Some(Allow),
            ),
            (&["allow:Edit(src/**)"], "Read", "/proj/src/a/b.rs", None),
            (&["allow:Edit(src/**)"], "Edit", "/proj/tests/a.rs", None),
            (&["allow:Edit(src/**)"], "Edit", "/proj/x/src/a.rs", None),
            (
                &["allow:Edit(src/**)"],
                "Edit",
                "/proj/src/../tests/a.rs",
                None,
            ),
            (
                &["allow:Edit(src/**)"],
                "Edit",
                "/proj/./src/./a.rs",
                Some(Allow),
            ),
            (
                &["allow:Edit(/src/**)"],
                "Edit",
                "/proj/src/a.rs",
                Some(Allow),
            ),
            (
                &["allow:Edit(./src/**)"],
                "Edit",
                "/proj/src/a.rs",
                Some(Allow),
            ),
            (
                &["allow:Edit(src/*.rs)"],
                "Edit",
                "/proj/src/a.rs",
                Some(Allow),
            ),
            (&["allow:Edit(src/*.rs)"], "Edit", "/proj/src/a/b.rs", None),
            (
                &["allow:Edit(src)"],
                "Edit",
                "/proj/src/a/b.rs",
                Some(Allow),
            ),
            (
                &["allow:Edit(src/)"],
                "Edit",
                "/proj/src/a/b.rs",
                Some(Allow),
            ),
            (&["allow:Write(src/**)"], "Edit", "/proj/src/a.rs", None),
            (
                &["allow:Write(src/**)"],
                "Write",
                "/proj/src/a.rs",
                Some(Allow),
            ),
            (
                &["allow:Read(*.md)"],
                "Read",
                "/proj/docs/x.md",
                Some(Allow),
            ),
            (&["allow:Read(*.md)"], "Read", "/proj/x.md", Some(Allow)),
            (
                &["allow:Read(*.md)"],
                "Grep",
                "/proj/docs/x.md",
                Some(Allow),
            ),
            (
                &["allow:Read(*.md)"],
                "Glob",
                "/proj/docs/x.md",
                Some(Allow),
            ),
            (&["allow:Read(*.md)"], "Read", "/proj/docs/x.rs", None),
            (&["allow:Read(*.md)"], "Edit", "/proj/docs/x.md", None),
            (&["allow:Read(*.md)"], "Read", "/elsewhere/x.md", None),
            (
                &["allow:read_file(*.md)"],
                "Read",
                "/proj/x.md",
                Some(Allow),
            ),
            (&["allow:Glob(src/**)"], "Glob", "/proj/src", None),
            (&["allow:Glob(src/**)"], "Glob", "/proj/src/a", Some(Allow)),
            (&["allow:Glob(src/**)"], "Read", "/proj/src/a", None),
            (&["allow:Grep(src/**)"], "Grep", "/proj/src/a", Some(Allow)),
            (&["deny:Read(.env)"], "Read", "/proj/.env", Some(Deny)),
            (&["deny:Read(.env)"], "Read", "/proj/sub/.env", Some(Deny)),
            (&["deny:Read(.env)"], "Grep", "/proj/.env", Some(Deny)),
            (
                &["deny:Read(secrets/**)"],
                "Read",
                "/proj/secrets/k",
                Some(Deny),
            ),
            // absolute and home globs
            (&["deny:Read(//etc/**)"], "Read", "/etc/passwd", Some(Deny)),
            (&["deny:Read(//etc/**)"], "Read", "/proj/etc/passwd", None),
            (&["allow:Edit(//tmp/)"], "Write", "/tmp/a/b", Some(Allow)),
            (
                &["allow:Read(//proj/docs/**)"],
                "Read",
                "/proj/docs/a",
                Some(Allow),
            ),
            (
                &["deny:Read(~/.ssh/**)"],
                "Read",
                "/home/u/.ssh/id_rsa",
                Some(Deny),
            ),
            (
                &["deny:Read(~/.ssh/**)"],
                "Read",
                "/home/v/.ssh/id_rsa",
                None,
            ),
            (&["deny:Read(~)"], "Read", "/home/u/notes", Some(Deny)),
            (&["allow:Read(/etc/**)"], "Read", "/etc/passwd", None),
            (&["allow:Read(**)"], "Read", "/etc/passwd", None),
            // bare names
            (&["allow:Read"], "Read", "/anywhere", Some(Allow)),
            (&["allow:Read"], "Grep", "/anywhere", Some(Allow)),
            (&["allow:Edit"], "Write", "/anywhere", Some(Allow)),
            (&["allow:Write"], "Edit", "/anywhere", None),
            (&["allow:Read"], "Edit", "/anywhere", None),
            // precedence
            (
                &["allow:Read", "deny:Read(.env)"],
                "Read",
                "/proj/.env",
                Some(Deny),
            ),
            (
                &["allow:Edit", "ask:Edit(*.lock)"],
                "Write",
                "/proj/Cargo.lock",
                Some(Ask),
            ),
            (
                &["allow:Edit", "ask:Edit(*.lock)"],
                "Write",
                "/proj/Cargo.toml",
                Some(Allow),
            ),
        ];
        for (specs, tool, path, want) in cases {
            let set = rules(specs);
            assert_eq!(
                eval(&set, &file(tool, path)),
                *want,
                "rules {specs:?}, {tool} {path}"
            );
        }
    }

    #[test]
    fn path_rules_need_a_path() {
        let set = rules(&["allow:Read(src/**)"]);
        let facts = CallFacts {
            tool: "Read",
            ..CallFacts::default()
        };
        assert_eq!(eval(&set, &facts), None);
    }

    #[test]
    fn tool_mcp_and_agent_rules() {
        let agent = |t: Option<&'static str>| CallFacts {
            tool: "Agent",
            agent_type: t,
            ..CallFacts::default()
        };
        let tool = |name: &'static str| CallFacts {
            tool: name,
            ..CallFacts::default()
        };
        let cases: &[(&[&str], CallFacts<'static>, Option<RuleKind>)] = &[
            (&["allow:WebFetch"], tool("WebFetch"), Some(Allow)),
            (&["allow:WebFetch"], tool("WebSearch"), None),
            (&["allow:TodoWrite"], tool("TodoWrite"), Some(Allow)),
            (
                &["allow:mcp__github__*"],
                tool("mcp__github__create_issue"),
                Some(Allow),
            ),
            (
                &["allow:mcp__github"],
                tool("mcp__github__create_issue"),
                Some(Allow),
            ),
            (
                &["allow:mcp__github"],
                tool("mcp__githubx__create_issue"),
                None,
            ),
            (
                &["allow:mcp__github__*"],
                tool("mcp__gitlab__create_issue"),
                None,
            ),
            (
                &["allow:mcp__github__create_issue"],
                tool("mcp__github__create_issue"),
                Some(Allow),
            ),
            (
                &["allow:mcp__github__create_issue"],
                tool("mcp__github__delete_repo"),
                None,
            ),
            (
                &["allow:mcp__github", "deny:mcp__github__delete_repo"],
                tool("mcp__github__delete_repo"),
                Some(Deny),
            ),
            (
                &["allow:Agent(Explore)"],
                agent(Some("Explore")),
                Some(Allow),
            ),
            (&["allow:Agent(Explore)"], agent(Some("explore")), None),
            (&["allow:Agent(Explore)"], agent(Some("Plan")), None),
            (&["allow:Agent(Explore)"], agent(None), None),
            (
                &["allow:Task(Explore)"],
                agent(Some("Explore")),
                Some(Allow),
            ),
            (&["allow:Agent"], agent(Some("Plan")), Some(Allow)),
            (&["allow:Task"], agent(None), Some(Allow)),
            (
                &["allow:Agent", "deny:Agent(Plan)"],
                agent(Some("Plan")),
                Some(Deny),
            ),
            (&["allow:Agent(Explore)"], tool("Task"), None),
        ];
        for (specs, facts, want) in cases {
            let set = rules(specs);
            assert_eq!(eval(&set, facts), *want, "rules {specs:?}, facts {facts:?}");
        }
    }

    #[test]
    fn parses_valid_rules() {
        for text in [
            "Read",
            " Bash ",
            "Bash(*)",
            "Bash(git status:*)",
            "Bash(echo \")\")",
            "Bash(echo $(date))",
            "Edit(src/**)",
            "Read(//etc/**)",
            "Read(~/.ssh/**)",
            "Read(/)",
            "WebFetch",
            "Task",
            "MultiEdit",
            "edit_file",
            "write_file",
            "mcp__github",
            "mcp__github__*",
            "mcp__my-server__some_tool",
            "Agent(Explore)",
            "SomeFutureTool",
        ] {
            let rule = parse_rule(Allow, text, Some(Path::new(HOME)));
            assert!(rule.is_ok(), "{text:?}: {rule:?}");
        }
        let rule = parse_rule(Deny, "  Bash(ls:*) ", None).expect("parses");
        assert_eq!(rule.text, "Bash(ls:*)");
        assert_eq!(rule.kind, Deny);
    }

    #[test]
    fn parse_errors_name_the_rule() {
        let cases: &[(&str, Option<&Path>, &str)] = &[
            ("", None, "the rule is empty"),
            ("   ", None, "the rule is empty"),
            ("Bash(", None, "missing closing \")\""),
            ("Bash(ls", None, "missing closing \")\""),
            ("Bash)", None, "unbalanced parentheses"),
            ("Read(a(b)", None, "unbalanced parentheses"),
            ("Bash(ls))", None, "unbalanced parentheses"),
            ("Bash(ls)x", None, "unexpected text after"),
            ("(ls)", None, "missing tool name"),
            ("Ba sh", None, "not a valid tool name"),
            ("Bash (ls)", None, "not a valid tool name"),
            ("*", None, "not a valid tool name"),
            ("mcp__", None, "not a valid tool name"),
            ("mcp__*", None, "not a valid tool name"),
            ("mcp__a__", None, "not a valid tool name"),
            ("mcp__a__b*", None, "not a valid tool name"),
            ("mcp__github(x)", None, "take no"),
            ("Bash()", None, "empty \"()\""),
            ("Read( )", None, "empty \"()\""),
            ("Agent()", None, "empty \"()\""),
            ("Bash(:*)", None, "empty command prefix"),
            ("Bash( :*)", None, "empty command prefix"),
            ("Bash(echo 'x:*)", None, "unterminated quote"),
            ("TodoWrite(x)", None, "TodoWrite rules take no"),
            (
                "WebFetch(domain:example.com)",
                None,
                "WebFetch rules take no",
            ),
            ("Read(src/[)", None, "invalid glob \"src/[\""),
            ("Read(~/.ssh/**)", None, "needs a home directory"),
        ];
        for (text, home, reason) in cases {
            let err = parse_rule(Allow, text, *home).expect_err(text);
            let message = err.to_string();
            assert!(
                message.starts_with(&format!("invalid permission rule {text:?}: ")),
                "{message}"
            );
            assert!(message.contains(reason), "{text:?}: {message}");
            assert_eq!(err.rule(), *text);
        }
        assert_eq!(
            parse_rule(Allow, "Bash(", None)
                .expect_err("bad")
                .to_string(),
            r#"invalid permission rule "Bash(": missing closing ")""#
        );
    }

    #[test]
    fn lexer_splits_commands() {
        let cases: &[(&str, &[&[&str]], bool)] = &[
            ("git status -s", &[&["git", "status", "-s"]], false),
            (
                "a && b || c; d | e & f\ng",
                &[&["a"], &["b"], &["c"], &["d"], &["e"], &["f"], &["g"]],
                false,
            ),
            (
                "echo 'a;b' \"c|d\" e\\&f",
                &[&["echo", "a;b", "c|d", "e&f"]],
                false,
            ),
            ("echo \"\" ''", &[&["echo", "", ""]], false),
            ("echo a\\\nb", &[&["echo", "ab"]], false),
            ("ls 2>&1 | wc -l", &[&["ls", "2>&1"], &["wc", "-l"]], false),
            ("ls >/dev/null", &[&["ls", ">", "/dev/null"]], false),
            ("ls > out", &[&["ls", ">", "out"]], true),
            // The substitution's output is a word of its own.
            (
                "echo $(rm x) y",
                &[&["echo"], &["rm", "x"], &["", "y"]],
                true,
            ),
            ("a # b; c\nd", &[&["a"], &["d"]], false),
            ("echo a#b", &[&["echo", "a#b"]], false),
        ];
        for (src, want, opaque) in cases {
            let parsed = parse_shell(src);
            let want: Vec<Vec<String>> = want
                .iter()
                .map(|seg| seg.iter().map(|w| w.to_string()).collect())
                .collect();
            assert_eq!(parsed.segments, want, "{src:?}");
            assert_eq!(parsed.opaque, *opaque, "{src:?}");
            assert!(!parsed.malformed, "{src:?}");
        }
    }

    #[test]
    fn rule_sets() {
        let mut set = RuleSet::new();
        assert!(set.is_empty());
        set.extend([
            parse_rule(Allow, "Read", None).expect("rule"),
            parse_rule(Deny, "Read(.env)", None).expect("rule"),
        ]);
        assert!(!set.is_empty());
        assert_eq!(set.iter().count(), 2);
        assert_eq!(
            set.evaluate(&file("Read", "/proj/.env"), Path::new(PROJECT)),
            Some((Deny, "Read(.env)".into()))
        );
        assert_eq!(
            serde_json::to_string(&RuleKind::Ask).expect("json"),
            "\"ask\""
        );
    }
}
