//! The one place that decides whether a tool call runs, is asked about, or is
//! denied: rules, the mode, path safety and the sandbox, in a fixed order.

use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

use super::rules::{CallFacts, Rule, RuleKind, RuleSet, parse_rule};
use super::{PermissionMode, ToolEffect};
use crate::model::ToolInput;

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
    /// A settings file disables `bypassPermissions`: the mode then lets
    /// nothing more run than `default` does (children included).
    pub bypass_disabled: bool,
    /// Folders that count as part of the project (`additionalDirectories`,
    /// `--add-dir`), canonical.
    pub additional_dirs: Vec<PathBuf>,
    /// Layers of tool rules (`tools: Bash(git:*)`), one per agent down the
    /// line that was granted tools only as rules: a call of such a tool must
    /// be covered by every layer that names the tool.
    pub only: Vec<Vec<Rule>>,
    /// This agent's own memory folder (a definition's `memory`), canonical:
    /// its file tools read and write there without asking, in the data
    /// directory or `.cadre/` as it may be. No other agent's policy has it.
    pub memory_dir: Option<PathBuf>,
}

/// A mode change asked for by the user (Shift+Tab, `/permissions`), taken
/// by the main agent at its next step: before its next request, or at once
/// when it is idle.
#[derive(Debug, Default)]
pub struct ModeSwitch {
    requested: Mutex<Option<PermissionMode>>,
}

impl ModeSwitch {
    /// Asks for `mode` (a later request replaces an earlier one not yet taken).
    pub fn request(&self, mode: PermissionMode) {
        if let Ok(mut r) = self.requested.lock() {
            *r = Some(mode);
        }
    }

    /// The mode asked for since the last take, if any.
    pub fn take(&self) -> Option<PermissionMode> {
        self.requested.lock().ok().and_then(|mut r| r.take())
    }
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

/// Folders whose writes always ask: the repository's and the agent
/// definitions' and settings'.
const ALWAYS_ASK_DIRS: [&str; 3] = [".git", ".claude", ".cadre"];

/// Most symlinks followed while resolving one path (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// Resolves `path` against `base` the way the kernel will: component by
/// component, following every symlink (a dangling one too, to its target),
/// applying `..` to the real directory reached so far. Past the first missing
/// component the rest is appended lexically; after too many links, likewise.
/// The result is absolute and holds no symlink, `.` or `..` where it exists.
pub fn resolve_real(base: &Path, path: impl AsRef<Path>) -> PathBuf {
    let path = path.as_ref();
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    // Components still to walk, last first.
    let mut pending: Vec<std::ffi::OsString> = Vec::new();
    push_components(&mut pending, &joined);
    let mut out = PathBuf::from("/");
    let mut links = 0;
    let mut exists = true;
    while let Some(part) = pending.pop() {
        if part == ".." {
            out.pop();
            continue;
        }
        let next = out.join(&part);
        if !exists {
            out = next;
            continue;
        }
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() && links < MAX_LINKS => {
                links += 1;
                match std::fs::read_link(&next) {
                    Ok(target) => {
                        if target.is_absolute() {
                            out = PathBuf::from("/");
                        }
                        push_components(&mut pending, &target);
                    }
                    Err(_) => out = next,
                }
            }
            Ok(meta) if meta.file_type().is_symlink() => {
                exists = false;
                out = next;
            }
            Ok(_) => out = next,
            Err(_) => {
                exists = false;
                out = next;
            }
        }
    }
    out
}

/// Pushes `path`'s normal and `..` components onto `stack` so they pop in order.
fn push_components(stack: &mut Vec<std::ffi::OsString>, path: &Path) {
    let parts: Vec<_> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    stack.extend(parts.into_iter().rev());
}

/// The real path a call of `tool` with `args` touches, resolved now as the
/// kernel would: what the policy decides on, and what the tool must still
/// find when it runs (a symlink swapped in meanwhile is refused).
pub fn decided_path(tool: &str, args: &ToolInput, cwd: &Path) -> Option<PathBuf> {
    let str_arg = |k: &str| args.get(k).and_then(Value::as_str);
    match tool {
        "Read" | "Write" | "Edit" => str_arg("file_path").map(|p| resolve_real(cwd, p)),
        "NotebookEdit" => str_arg("notebook_path").map(|p| resolve_real(cwd, p)),
        "Glob" => Some(super::glob_plan(cwd, str_arg("path"), str_arg("pattern").unwrap_or("")).0),
        "Grep" => Some(resolve_real(cwd, str_arg("path").unwrap_or("."))),
        _ => None,
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
        // Resolved even when missing, so a data dir made later compares equal.
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| resolve_real(p, "."));
        PermissionPolicy {
            mode,
            rules,
            project_dir: canon(project_dir),
            data_dir: canon(data_dir),
            sandbox_available,
            bypass_disabled: false,
            additional_dirs: Vec::new(),
            only: Vec::new(),
            memory_dir: None,
        }
    }

    /// Why `tool`'s call is outside the rules its agent's tools granted it
    /// by, if it is (`Bash(git:*)` and a call of `rm`).
    fn outside_granted(&self, tool: &str, facts: &CallFacts<'_>) -> Option<String> {
        for layer in &self.only {
            let mine: Vec<&Rule> = layer
                .iter()
                .filter(|r| r.text.split('(').next().map(str::trim) == Some(tool))
                .collect();
            if mine.is_empty() {
                continue;
            }
            let mut set = RuleSet::new();
            set.extend(mine.iter().map(|r| (*r).clone()));
            if !matches!(
                set.evaluate(facts, &self.project_dir),
                Some((RuleKind::Allow, _))
            ) {
                let texts: Vec<&str> = mine.iter().map(|r| r.text.as_str()).collect();
                return Some(format!(
                    "this agent's tools allow {tool} only as {}",
                    texts.join(", ")
                ));
            }
        }
        None
    }

    /// Decides a call of `tool` (canonical name), whose calls have `effect`,
    /// with arguments `args` (the parsed object the tool will run with),
    /// working in `cwd`, for an agent whose own approvals are `tracker`.
    pub fn decide(
        &self,
        tracker: &PermissionTracker,
        tool: &str,
        effect: ToolEffect,
        args: &ToolInput,
        cwd: &Path,
    ) -> Decision {
        let path = decided_path(tool, args, cwd);
        self.decide_at(tracker, tool, effect, args, path.as_deref())
    }

    /// [`decide`](Self::decide) for a caller that already resolved the
    /// call's path with [`decided_path`] (and keeps it to hold the tool to it).
    pub fn decide_at(
        &self,
        tracker: &PermissionTracker,
        tool: &str,
        effect: ToolEffect,
        args: &ToolInput,
        path: Option<&Path>,
    ) -> Decision {
        self.decide_pre_approved(tracker, tool, effect, args, path, false, &RuleSet::new())
    }

    /// [`PermissionPolicy::decide_at`], with `pre_approved` (a PreToolUse
    /// hook allowed the call) and the allow rules of `grants` (active
    /// skills' `allowed-tools`) counting as allow rules: deny rules, ask
    /// rules, plan mode and the calls that always ask still win.
    #[allow(clippy::too_many_arguments)]
    pub fn decide_pre_approved(
        &self,
        tracker: &PermissionTracker,
        tool: &str,
        effect: ToolEffect,
        args: &ToolInput,
        path: Option<&Path>,
        pre_approved: bool,
        grants: &RuleSet,
    ) -> Decision {
        let str_arg = |k: &str| args.get(k).and_then(Value::as_str);
        let path = path.map(Path::to_path_buf);
        let command = if effect == ToolEffect::Execute {
            str_arg("command")
        } else {
            None
        };
        let domain = (tool == "WebFetch")
            .then(|| str_arg("url").and_then(url_host))
            .flatten();
        let facts = CallFacts {
            tool,
            effect: Some(effect),
            command,
            path: path.as_deref(),
            agent_type: str_arg("subagent_type"),
            domain: domain.as_deref(),
        };
        // The data directory counts as outside even when the project holds it.
        let inside = path.as_deref().is_none_or(|p| {
            (p.starts_with(&self.project_dir)
                || self.additional_dirs.iter().any(|d| p.starts_with(d)))
                && !p.starts_with(&self.data_dir)
        });
        let ask = |reason: String| -> Decision {
            match self.mode {
                // dontAsk turns every question into a denial; plan never asks either.
                PermissionMode::DontAsk | PermissionMode::Plan => {
                    Decision::Deny(format!("{reason}, and the {} mode does not ask", self.mode))
                }
                // The rule a "yes for the session" would add, made only when asked.
                _ => Decision::Ask {
                    reason,
                    session_rule: match &domain {
                        Some(host) => format!("WebFetch(domain:{host})"),
                        None => self.session_rule(tool, effect, path.as_deref(), command, inside),
                    },
                },
            }
        };

        // 1. A deny rule always wins.
        let (rule, hidden_name_rule) = self
            .rules
            .evaluate_with_hidden_name(&facts, &self.project_dir);
        if let Some((RuleKind::Deny, text)) = &rule {
            return Decision::Deny(format!("denied by the rule {text}"));
        }
        // An active skill's `disallowed-tools` refuse as a deny rule does.
        if let Some((RuleKind::Deny, text)) = grants.evaluate(&facts, &self.project_dir) {
            return Decision::Deny(format!("an active skill's disallowed-tools refuses {text}"));
        }
        if let Some(why) = self.outside_granted(tool, &facts) {
            return Decision::Deny(why);
        }
        // A command whose name is made when it runs may be one a deny or ask
        // rule names: asked, in every mode (a question denies where none can
        // be asked).
        if !matches!(rule, Some((RuleKind::Ask, _)))
            && let Some(text) = hidden_name_rule
        {
            return ask(format!(
                "the command's name is made when it runs, so the rule {text} may cover it"
            ));
        }
        // The data directory and the folders that always ask are decided
        // before this agent's memory: the exemption below covers only what
        // lies inside its own folder.
        let own_memory = path.as_deref().is_some_and(|p| self.in_memory_dir(p));
        // No file tool writes the data directory, whatever the rules and mode.
        if effect == ToolEffect::Edit
            && let Some(why) = path.as_deref().and_then(|p| self.data_dir_write(p))
        {
            return Decision::Deny(why);
        }
        if self.mode == PermissionMode::BypassPermissions && !self.bypass_disabled {
            return Decision::Allow;
        }
        // Plan mode is read-only whatever allow rules or approvals say;
        // spawning is read-only too (children inherit plan mode).
        if self.mode == PermissionMode::Plan
            && !matches!(effect, ToolEffect::ReadOnly | ToolEffect::McpReadOnly)
        {
            if effect == ToolEffect::Mcp {
                return Decision::Deny(format!(
                    "plan mode is read-only, and the MCP server does not mark {tool} read-only"
                ));
            }
            return Decision::Deny("plan mode is read-only".into());
        }
        // 2. Calls that always ask, whatever rules and modes say. `.claude`
        // and `.cadre` hold agent definitions and settings (in the home
        // directory, trusted ones that may ask for wider modes).
        // Only the part inside the project counts: an agent whose project is
        // a worktree under `.cadre/worktrees/` writes its own files freely,
        // and an agent its own memory folder (none of these folders is
        // inside it: `in_memory_dir`).
        if effect == ToolEffect::Edit
            && !own_memory
            && let Some(p) = &path
            && let Some(dir) = p
                .strip_prefix(&self.project_dir)
                .unwrap_or(p)
                .components()
                .map(|c| c.as_os_str())
                .find(|c| ALWAYS_ASK_DIRS.iter().any(|d| c == d))
        {
            return ask(format!(
                "writes to {}/ always ask ({})",
                dir.to_string_lossy(),
                p.display()
            ));
        }
        // An agent keeps its own memory without asking (plan mode only
        // reads, above; deny rules and its tools' rules still hold, above).
        if own_memory && matches!(effect, ToolEffect::ReadOnly | ToolEffect::Edit) {
            return Decision::Allow;
        }
        if effect == ToolEffect::Execute
            && args.get("sandbox").and_then(Value::as_bool) == Some(false)
        {
            return ask("the command asks to run without the sandbox".into());
        }
        // 3. Ask and allow rules, then this agent's own session approvals.
        if let Some((RuleKind::Ask, text)) = &rule {
            return ask(format!("the rule {text} asks"));
        }
        if matches!(rule, Some((RuleKind::Allow, _)))
            || pre_approved
            || matches!(
                grants.evaluate(&facts, &self.project_dir),
                Some((RuleKind::Allow, _))
            )
            || tracker.allows(&facts, &self.project_dir)
        {
            return Decision::Allow;
        }
        // 4. The mode table.
        let mode = self.mode;
        let shown = || path.as_deref().unwrap_or(Path::new("?")).display();
        match effect {
            // Spawning is here too: what the child does is decided call by call.
            ToolEffect::ReadOnly if inside => Decision::Allow,
            ToolEffect::ReadOnly => ask(format!(
                "it reads outside the project ({})",
                shown()
            )),
            ToolEffect::Edit if !inside => {
                ask(format!("it writes outside the project ({})", shown()))
            }
            ToolEffect::Edit if mode == PermissionMode::AcceptEdits => Decision::Allow,
            ToolEffect::Edit => ask("it changes a file".into()),
            ToolEffect::Execute if !self.sandbox_available => ask(
                "it runs a command, and this kernel has no Landlock sandbox, so it would run unsandboxed"
                    .into(),
            ),
            ToolEffect::Execute if mode == PermissionMode::AcceptEdits => Decision::Allow,
            ToolEffect::Execute => ask("it runs a command".into()),
            // No sandbox holds the network back, so every mode that asks asks.
            ToolEffect::Network => ask(format!("{tool} reaches the network")),
            // An MCP server runs with the user's rights, outside the sandbox.
            ToolEffect::Mcp | ToolEffect::McpReadOnly => {
                ask(format!("{tool} is a tool of an MCP server"))
            }
        }
    }

    /// Whether the resolved `path` lies inside this agent's own memory
    /// folder (not the folder itself), and not in a `.git`, `.claude` or
    /// `.cadre` folder below it.
    fn in_memory_dir(&self, path: &Path) -> bool {
        self.memory_dir.as_deref().is_some_and(|d| {
            path.strip_prefix(d).is_ok_and(|rest| {
                rest.components().next().is_some()
                    && rest.components().all(|c| match c {
                        Component::Normal(part) => !ALWAYS_ASK_DIRS.iter().any(|d| part == *d),
                        _ => false,
                    })
            })
        })
    }

    /// Why writing `path` is refused outright: it lies in the data directory.
    fn data_dir_write(&self, path: &Path) -> Option<String> {
        (path.starts_with(&self.data_dir) && !self.in_memory_dir(path)).then(|| {
            format!(
                "file tools never write the cadre data directory ({})",
                path.display()
            )
        })
    }

    /// Why a file tool (`tool`, with `effect`) must not touch the resolved
    /// `path` now, whatever was decided before it ran: a deny rule covers it,
    /// or it would write the data directory. Checked again at the moment the
    /// tool opens the path.
    pub fn refusal(&self, tool: &str, effect: ToolEffect, path: &Path) -> Option<String> {
        if effect == ToolEffect::Edit
            && let Some(why) = self.data_dir_write(path)
        {
            return Some(format!("denied: {why}"));
        }
        self.deny_rule(tool, effect, path)
            .map(|text| format!("denied: denied by the rule {text}"))
    }

    /// Whether a search (`Glob`/`Grep`) rooted at `root` skips the resolved
    /// `path`: the data directory unless the search was made inside it, and
    /// anything a `Read` deny rule covers.
    pub fn search_skips(&self, tool: &str, root: &Path, path: &Path) -> bool {
        (path.starts_with(&self.data_dir) && !root.starts_with(&self.data_dir))
            || self.deny_rule(tool, ToolEffect::ReadOnly, path).is_some()
    }

    /// The deny rule covering `tool` (with `effect`) on `path`, if any.
    fn deny_rule(&self, tool: &str, effect: ToolEffect, path: &Path) -> Option<String> {
        let facts = CallFacts {
            tool,
            effect: Some(effect),
            command: None,
            domain: None,
            path: Some(path),
            agent_type: None,
        };
        match self.rules.evaluate(&facts, &self.project_dir) {
            Some((RuleKind::Deny, text)) => Some(text),
            _ => None,
        }
    }

    /// The rule a "yes for the session" adds: narrow enough to mean what was approved.
    fn session_rule(
        &self,
        tool: &str,
        effect: ToolEffect,
        path: Option<&Path>,
        command: Option<&str>,
        inside: bool,
    ) -> String {
        let scope = if effect == ToolEffect::Edit {
            "Edit"
        } else {
            "Read"
        };
        match (effect, path, command) {
            (ToolEffect::Execute, _, Some(cmd)) => {
                let words: Vec<&str> = cmd.split_whitespace().take(2).collect();
                let prefix = match words.as_slice() {
                    [first, second] if !second.starts_with('-') && !is_shell_syntax(second) => {
                        format!("{first} {second}")
                    }
                    [first, ..] => (*first).to_string(),
                    [] => String::new(),
                };
                if prefix.is_empty() || is_shell_syntax(&prefix) {
                    format!("{tool}({})", cmd.trim())
                } else {
                    format!("{tool}({prefix}:*)")
                }
            }
            (ToolEffect::ReadOnly | ToolEffect::Edit, Some(_), _) if inside => {
                format!("{scope}(**)")
            }
            (ToolEffect::ReadOnly | ToolEffect::Edit, Some(p), _) => {
                format!("{scope}(/{})", p.display())
            }
            _ => tool.to_string(),
        }
    }

    /// Parses a session rule back (they are generated here, so failure is a bug; fall back to the tool name).
    pub fn parse_session_rule(text: &str) -> Option<Rule> {
        parse_rule(RuleKind::Allow, text, None).ok()
    }
}

/// The host of `url`, lower-case, as a WebFetch rule names it.
pub(super) fn url_host(url: &str) -> Option<String> {
    url::Url::parse(url.trim())
        .ok()?
        .host_str()
        .map(|h| h.trim_matches(['[', ']']).to_ascii_lowercase())
}

fn is_shell_syntax(word: &str) -> bool {
    word.chars()
        .any(|c| matches!(c, ';' | '&' | '|' | '>' | '<' | '$' | '`' | '(' | ')'))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::os::unix::fs::symlink;

    use super::*;

    fn root() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let r = d.path().canonicalize().unwrap();
        (d, r)
    }

    #[test]
    fn resolves_like_the_kernel() {
        let (_d, r) = root();
        let p = r.join("p");
        std::fs::create_dir_all(p.join("docs")).unwrap();
        std::fs::create_dir(r.join("out")).unwrap();
        symlink(".", p.join("self")).unwrap();
        symlink(r.join("out"), p.join("o")).unwrap();
        symlink(r.join("out/new.txt"), p.join("dangling")).unwrap();
        symlink("dangling", p.join("chain")).unwrap();
        symlink("loop", p.join("loop")).unwrap();
        // `..` applies to the real directory a link led to.
        assert_eq!(resolve_real(&p, "self/../docs/x"), r.join("docs/x"));
        assert_eq!(resolve_real(&p, "o/../p/docs"), p.join("docs"));
        assert_eq!(resolve_real(&p, "o/a/b"), r.join("out/a/b"));
        // A dangling link resolves to its target, through a chain.
        assert_eq!(resolve_real(&p, "dangling"), r.join("out/new.txt"));
        assert_eq!(resolve_real(&p, "chain"), r.join("out/new.txt"));
        // Missing parts and `..` past them are lexical; a loop stops.
        assert_eq!(resolve_real(&p, "new/../docs"), p.join("docs"));
        assert_eq!(resolve_real(&p, "loop/x"), p.join("loop/x"));
        assert_eq!(resolve_real(&p, "/../.."), PathBuf::from("/"));
        // What the kernel opens is what this says.
        std::fs::write(r.join("out/f"), "x").unwrap();
        let via = p.join("self/../out/f");
        assert_eq!(
            std::fs::canonicalize(&via).unwrap(),
            resolve_real(&p, "self/../out/f")
        );
    }

    #[test]
    fn data_dir_writes_are_denied_in_every_mode_and_reads_there_are_outside() {
        let (_d, r) = root();
        let data = r.join(".cadre");
        std::fs::create_dir(&data).unwrap();
        let t = PermissionTracker::default();
        for mode in [
            PermissionMode::BypassPermissions,
            PermissionMode::AcceptEdits,
        ] {
            let rules = {
                let mut set = RuleSet::default();
                set.add(parse_rule(RuleKind::Allow, "Edit", None).unwrap());
                set
            };
            let policy = PermissionPolicy::new(mode, rules, &r, &data, true);
            let input = serde_json::json!({"file_path": ".cadre/config.toml", "content": ""});
            assert!(matches!(
                policy.decide(
                    &t,
                    "Write",
                    ToolEffect::Edit,
                    &input.as_object().cloned().unwrap_or_default(),
                    &r
                ),
                Decision::Deny(_)
            ));
            assert!(
                policy
                    .refusal("Edit", ToolEffect::Edit, &data.join("x"))
                    .is_some()
            );
            assert!(policy.search_skips("Grep", &r, &data.join("x")));
            assert!(!policy.search_skips("Grep", &data, &data.join("x")));
        }
        let policy =
            PermissionPolicy::new(PermissionMode::Default, RuleSet::default(), &r, &data, true);
        let input = serde_json::json!({"file_path": ".cadre/note"});
        assert!(matches!(
            policy.decide(
                &t,
                "Read",
                ToolEffect::ReadOnly,
                &input.as_object().cloned().unwrap_or_default(),
                &r
            ),
            Decision::Ask { .. }
        ));
        let input = serde_json::json!({"pattern": format!("{}/*", data.display())});
        assert!(matches!(
            policy.decide(
                &t,
                "Glob",
                ToolEffect::ReadOnly,
                &input.as_object().cloned().unwrap_or_default(),
                &r
            ),
            Decision::Ask { .. }
        ));
    }

    #[test]
    fn a_memory_folder_exempts_only_what_lies_inside_it() {
        let (_d, r) = root();
        let project = r.join("p");
        let data = r.join("data");
        let memory = project.join(".cadre/agent-memory/notes");
        std::fs::create_dir_all(&memory).unwrap();
        std::fs::create_dir_all(&data).unwrap();
        let t = PermissionTracker::default();
        let decide = |policy: &PermissionPolicy, tool: &str, effect, path: &Path| {
            let input = serde_json::json!({"file_path": path, "content": "", "old_string": "a", "new_string": "b"});
            policy.decide(
                &t,
                tool,
                effect,
                &input.as_object().cloned().unwrap_or_default(),
                &project,
            )
        };
        for mode in [
            PermissionMode::DontAsk,
            PermissionMode::Default,
            PermissionMode::AcceptEdits,
        ] {
            let mut policy = PermissionPolicy::new(mode, RuleSet::default(), &project, &data, true);
            policy.memory_dir = Some(memory.clone());
            // Inside its own folder: no question.
            assert_eq!(
                decide(
                    &policy,
                    "Write",
                    ToolEffect::Edit,
                    &memory.join("MEMORY.md")
                ),
                Decision::Allow,
                "{mode}"
            );
            assert_eq!(
                decide(&policy, "Read", ToolEffect::ReadOnly, &memory.join("x")),
                Decision::Allow
            );
            // The folder's neighbours, a .git below it, and the project's
            // .git are not its own: they ask (or are denied) as ever.
            for other in [
                project.join(".cadre/agent-memory/other/MEMORY.md"),
                memory.join(".git/config"),
                project.join(".git/config"),
            ] {
                assert!(
                    !matches!(
                        decide(&policy, "Write", ToolEffect::Edit, &other),
                        Decision::Allow
                    ),
                    "{mode}: {}",
                    other.display()
                );
            }
            // A memory folder in the data directory covers only itself.
            policy.memory_dir = Some(data.join("agent-memory/notes"));
            assert!(matches!(
                decide(
                    &policy,
                    "Write",
                    ToolEffect::Edit,
                    &data.join("config.toml")
                ),
                Decision::Deny(_)
            ));
            assert_eq!(
                decide(
                    &policy,
                    "Write",
                    ToolEffect::Edit,
                    &data.join("agent-memory/notes/MEMORY.md")
                ),
                Decision::Allow
            );
        }
        // Plan mode reads its memory and writes nothing.
        let mut policy = PermissionPolicy::new(
            PermissionMode::Plan,
            RuleSet::default(),
            &project,
            &data,
            true,
        );
        policy.memory_dir = Some(data.join("agent-memory/notes"));
        let file = data.join("agent-memory/notes/MEMORY.md");
        assert_eq!(
            decide(&policy, "Read", ToolEffect::ReadOnly, &file),
            Decision::Allow
        );
        assert!(matches!(
            decide(&policy, "Write", ToolEffect::Edit, &file),
            Decision::Deny(_)
        ));
    }
}
