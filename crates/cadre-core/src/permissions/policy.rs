//! The one place that decides whether a tool call runs, is asked about, or is
//! denied: rules, the mode, path safety and the sandbox, in a fixed order.

use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

use super::PermissionMode;
use super::rules::{CallFacts, Rule, RuleKind, RuleSet, parse_rule};
use crate::tools::ToolInput;

/// The verdict on one call.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Don't; the text says why (the model sees it).
    Deny(String),
    /// Ask the user.
    Ask {
        /// Why a question is needed.
        reason: String,
        /// The rule a "yes for the session" adds.
        session_rule: String,
    },
}

/// Session-wide permission settings, shared by every agent of the session.
#[derive(Debug, Clone)]
pub struct PermissionPolicy {
    /// The mode.
    pub mode: PermissionMode,
    /// Configured allow/ask/deny rules.
    pub rules: RuleSet,
    /// The project directory (canonical).
    pub project_dir: PathBuf,
    /// The cadre data directory (canonical when it exists).
    pub data_dir: PathBuf,
    /// Whether `Bash` commands can actually be sandboxed here.
    pub sandbox_available: bool,
}

/// An agent's own "yes for the session" approvals. Each agent has its own.
#[derive(Debug, Default)]
pub struct PermissionTracker {
    allowed: Mutex<RuleSet>,
}

impl PermissionTracker {
    /// Remembers an approval for the rest of the session.
    pub fn allow(&self, rule: Rule) {
        if let Ok(mut set) = self.allowed.lock() {
            set.add(rule);
        }
    }

    fn allows(&self, facts: &CallFacts<'_>, project: &Path) -> bool {
        self.allowed
            .lock()
            .is_ok_and(|set| matches!(set.evaluate(facts, project), Some((RuleKind::Allow, _))))
    }
}

/// What kind of effect a tool has, for the mode table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Read,
    Edit,
    Bash,
    Agent,
    Other,
}

fn classify(tool: &str) -> Class {
    match tool {
        // Managing the agent's own tasks changes nothing outside cadre.
        "Read" | "Glob" | "Grep" | "TodoWrite" | "TaskList" | "TaskOutput" | "TaskStop"
        | "SendMessage" => Class::Read,
        "Write" | "Edit" => Class::Edit,
        "Bash" => Class::Bash,
        "Agent" => Class::Agent,
        _ => Class::Other,
    }
}

/// Resolves `path` against `base`, following symlinks as far as the path
/// exists and normalising `..` lexically beyond that, so a link or `..` that
/// leads out of the project is seen for what it is.
pub fn resolve_real(base: &Path, path: &str) -> PathBuf {
    let joined = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        base.join(path)
    };
    let mut clean = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                clean.pop();
            }
            Component::CurDir => {}
            other => clean.push(other.as_os_str()),
        }
    }
    // Canonicalise the longest existing prefix, then re-append the rest.
    let mut existing = clean.clone();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return clean,
        }
    }
}

impl PermissionPolicy {
    /// A policy; `project_dir` and `data_dir` are canonicalised where they exist.
    pub fn new(
        mode: PermissionMode,
        rules: RuleSet,
        project_dir: &Path,
        data_dir: &Path,
        sandbox_available: bool,
    ) -> Self {
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        PermissionPolicy {
            mode,
            rules,
            project_dir: canon(project_dir),
            data_dir: canon(data_dir),
            sandbox_available,
        }
    }

    /// Decides a call of `tool` (canonical name) with arguments `args` (the
    /// parsed object the tool will run with), working in `cwd`, for an agent
    /// whose own approvals are `tracker`.
    pub fn decide(
        &self,
        tracker: &PermissionTracker,
        tool: &str,
        args: &ToolInput,
        cwd: &Path,
    ) -> Decision {
        let class = classify(tool);
        let str_arg = |k: &str| args.get(k).and_then(Value::as_str);
        let path = match tool {
            "Read" | "Write" | "Edit" => str_arg("file_path").map(|p| resolve_real(cwd, p)),
            "Glob" | "Grep" => Some(resolve_real(cwd, str_arg("path").unwrap_or("."))),
            _ => None,
        };
        let command = if class == Class::Bash {
            str_arg("command")
        } else {
            None
        };
        let facts = CallFacts {
            tool,
            command,
            path: path.as_deref(),
            agent_type: str_arg("subagent_type"),
        };
        let inside = path
            .as_deref()
            .is_none_or(|p| p.starts_with(&self.project_dir));
        let session_rule = self.session_rule(tool, class, path.as_deref(), command, inside);
        let ask = |reason: String| -> Decision {
            match self.mode {
                // dontAsk turns every question into a denial; plan never asks either.
                PermissionMode::DontAsk | PermissionMode::Plan => {
                    Decision::Deny(format!("{reason}, and the {} mode does not ask", self.mode))
                }
                _ => Decision::Ask {
                    reason,
                    session_rule: session_rule.clone(),
                },
            }
        };

        // 1. A deny rule always wins.
        let rule = self.rules.evaluate(&facts, &self.project_dir);
        if let Some((RuleKind::Deny, text)) = &rule {
            return Decision::Deny(format!("denied by the rule {text}"));
        }
        if self.mode == PermissionMode::BypassPermissions {
            return Decision::Allow;
        }
        // Plan mode is read-only whatever allow rules or approvals say;
        // spawning is allowed (children inherit plan mode).
        if self.mode == PermissionMode::Plan && !matches!(class, Class::Read | Class::Agent) {
            return Decision::Deny("plan mode is read-only".into());
        }
        // 2. Calls that always ask, whatever rules and modes say.
        if class == Class::Edit
            && let Some(p) = &path
        {
            if p.components().any(|c| c.as_os_str() == ".git") {
                return ask(format!("writes to .git/ always ask ({})", p.display()));
            }
            if p.starts_with(&self.data_dir) {
                return ask(format!(
                    "writes to the cadre data directory always ask ({})",
                    p.display()
                ));
            }
        }
        if class == Class::Bash && args.get("sandbox").and_then(Value::as_bool) == Some(false) {
            return ask("the command asks to run without the sandbox".into());
        }
        // 3. Ask and allow rules, then this agent's own session approvals.
        if let Some((RuleKind::Ask, text)) = &rule {
            return ask(format!("the rule {text} asks"));
        }
        if matches!(rule, Some((RuleKind::Allow, _))) || tracker.allows(&facts, &self.project_dir) {
            return Decision::Allow;
        }
        // 4. The mode table.
        let mode = self.mode;
        match class {
            Class::Read if inside => Decision::Allow,
            Class::Read => ask(format!(
                "it reads outside the project ({})",
                path.as_deref().unwrap_or(Path::new("?")).display()
            )),
            Class::Edit if !inside => ask(format!(
                "it writes outside the project ({})",
                path.as_deref().unwrap_or(Path::new("?")).display()
            )),
            Class::Edit if mode == PermissionMode::AcceptEdits => Decision::Allow,
            Class::Edit => ask("it changes a file".into()),
            Class::Bash if !self.sandbox_available => ask(
                "it runs a command, and this kernel has no Landlock sandbox, so it would run unsandboxed"
                    .into(),
            ),
            Class::Bash if mode == PermissionMode::AcceptEdits => Decision::Allow,
            Class::Bash => ask("it runs a command".into()),
            // Spawning is allowed; what the child does is decided call by call.
            Class::Agent => Decision::Allow,
            Class::Other => ask(format!("{tool} is not known to be read-only")),
        }
    }

    /// The rule a "yes for the session" adds: narrow enough to mean what was approved.
    fn session_rule(
        &self,
        tool: &str,
        class: Class,
        path: Option<&Path>,
        command: Option<&str>,
        inside: bool,
    ) -> String {
        let scope = if class == Class::Edit { "Edit" } else { "Read" };
        match (class, path, command) {
            (Class::Bash, _, Some(cmd)) => {
                let words: Vec<&str> = cmd.split_whitespace().take(2).collect();
                let prefix = match words.as_slice() {
                    [first, second] if !second.starts_with('-') && !is_shell_syntax(second) => {
                        format!("{first} {second}")
                    }
                    [first, ..] => (*first).to_string(),
                    [] => String::new(),
                };
                if prefix.is_empty() || is_shell_syntax(&prefix) {
                    format!("Bash({})", cmd.trim())
                } else {
                    format!("Bash({prefix}:*)")
                }
            }
            (Class::Read | Class::Edit, Some(_), _) if inside => format!("{scope}(**)"),
            (Class::Read | Class::Edit, Some(p), _) => format!("{scope}(/{})", p.display()),
            _ => tool.to_string(),
        }
    }

    /// Parses a session rule back (they are generated here, so failure is a bug; fall back to the tool name).
    pub fn parse_session_rule(text: &str) -> Option<Rule> {
        parse_rule(RuleKind::Allow, text, None).ok()
    }
}

fn is_shell_syntax(word: &str) -> bool {
    word.chars()
        .any(|c| matches!(c, ';' | '&' | '|' | '>' | '<' | '$' | '`' | '(' | ')'))
}
