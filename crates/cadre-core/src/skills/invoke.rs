//! A message that starts with `/name`: which skills or commands it uses,
//! and their text made ready to send. Up to six inline skills stack
//! (`/a /b text` loads both, each with `text` as its arguments); stacking
//! stops at the first token that is not an inline user-invocable skill. A
//! `context: fork` skill runs alone; an MCP server's prompt
//! (`/mcp__server__prompt`) is the agent's to run.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::render::{ShellPiece, ShellRunner, Vars, run_shell_pieces, substitute};
use super::{Skill, SkillKind, SkillSet};
use crate::permissions::rules::RuleSet;
use crate::permissions::{Decision, PermissionTracker};
use crate::tools::{BashTool, Tool, ToolContext, ToolInput};

/// Most skills one message stacks.
pub const MAX_STACKED: usize = 6;
/// How long a body's command may run (Claude Code's default).
const SHELL_TIMEOUT_MS: u64 = 120_000;

/// What a message's leading `/name` tokens ask for.
#[derive(Debug, Clone, PartialEq)]
pub enum Invocation<'a> {
    /// No command: the message goes as typed.
    None,
    /// Skills and commands loaded into the message, with the arguments they share.
    Inline {
        /// In the order typed.
        skills: Vec<&'a Skill>,
        /// The text after them.
        args: String,
    },
    /// A `context: fork` skill: its rendered body runs as a child.
    Fork {
        /// The skill.
        skill: &'a Skill,
        /// The text after it.
        args: String,
    },
    /// An MCP server's prompt.
    McpPrompt {
        /// `mcp__<server>__<prompt>`.
        name: String,
        /// The text after it.
        args: String,
    },
    /// `/name` names no skill or command.
    Unknown(String),
    /// `/name` names one the user may not run (`user-invocable: false`).
    NotUserInvocable(String),
}

/// The command name a token spells (`/name`), if it is one: letters,
/// digits, `_ - . :` (a path such as `/usr/bin` is not).
fn command_name(token: &str) -> Option<&str> {
    let name = token.strip_prefix('/')?;
    (!name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')))
    .then_some(name)
}

/// Splits the first whitespace-separated token off `text`.
fn first_token(text: &str) -> (&str, &str) {
    let text = text.trim_start();
    match text.find(char::is_whitespace) {
        Some(i) => (&text[..i], text[i..].trim_start()),
        None => (text, ""),
    }
}

/// Reads the leading `/name` tokens of `text`.
pub fn parse_invocation<'a>(set: &'a SkillSet, text: &str) -> Invocation<'a> {
    let (token, mut rest) = first_token(text);
    let Some(name) = command_name(token) else {
        return Invocation::None;
    };
    if name.starts_with("mcp__") && set.lookup(name).is_none() {
        return Invocation::McpPrompt {
            name: name.to_string(),
            args: rest.trim().to_string(),
        };
    }
    let Some(first) = set.lookup(name) else {
        return Invocation::Unknown(name.to_string());
    };
    if !first.user_invocable {
        return Invocation::NotUserInvocable(name.to_string());
    }
    if first.fork_agent.is_some() {
        return Invocation::Fork {
            skill: first,
            args: rest.trim().to_string(),
        };
    }
    let mut skills = vec![first];
    while skills.len() < MAX_STACKED {
        let (token, after) = first_token(rest);
        let next = command_name(token).and_then(|n| set.lookup(n));
        match next {
            Some(s) if s.user_invocable && s.fork_agent.is_none() => {
                skills.push(s);
                rest = after;
            }
            _ => break,
        }
    }
    Invocation::Inline {
        skills,
        args: rest.trim().to_string(),
    }
}

/// The text one use of `skill` sends: its body with `args` and `vars`
/// substituted and its commands run by `runner`. A skill's bundled files
/// are relative to its folder, which the text names first; a command's
/// body goes as it is.
pub async fn render_use(
    skill: &Skill,
    args: &str,
    vars: &Vars,
    runner: &dyn ShellRunner,
) -> Result<String, String> {
    let body = substitute(skill, &skill.body, args, vars);
    let body = run_shell_pieces(&body, runner).await?;
    Ok(match skill.kind {
        SkillKind::Skill => format!(
            "Skill {}. Its files are in {}; paths in it are relative to that folder.\n\n{}",
            skill.name,
            skill.dir.display(),
            body.trim()
        ),
        SkillKind::Command => body.trim().to_string(),
    })
}

/// The `Agent` call a `context: fork` skill's rendered `prompt` makes.
pub fn fork_input(skill: &Skill, prompt: String) -> ToolInput {
    let mut input = ToolInput::new();
    input.insert(
        "description".into(),
        Value::String(format!("/{}", skill.name)),
    );
    input.insert("prompt".into(), Value::String(prompt));
    input.insert(
        "subagent_type".into(),
        Value::String(skill.fork_agent.clone().unwrap_or_default()),
    );
    if let Some(model) = &skill.model {
        input.insert("model".into(), Value::String(model.clone()));
    }
    input
}

/// Why the policy refuses the `Agent` call a forked skill makes (a deny
/// or ask rule on `Agent(type)`), if it does: the user's `/name` and the
/// model's `Skill` call start no child a rule keeps out.
pub fn fork_refusal(
    policy: &crate::permissions::PermissionPolicy,
    tracker: &PermissionTracker,
    input: &ToolInput,
    grants: &RuleSet,
) -> Option<String> {
    match policy.decide_pre_approved(
        tracker,
        "Agent",
        crate::permissions::ToolEffect::ReadOnly,
        input,
        None,
        false,
        grants,
    ) {
        Decision::Allow => None,
        Decision::Deny(why) => Some(why),
        Decision::Ask { reason, .. } => Some(format!("{reason}, and starting it never asks")),
    }
}

/// One use of `skill` by an agent: its text rendered with `args`, its
/// commands run as [`PolicyShell`] runs them with its `allowed-tools` added
/// to the agent's active grants. Also the rules those `allowed-tools` make
/// and the entries that are none, for the caller to grant for the turn.
pub async fn render_for(
    skill: &Skill,
    args: &str,
    vars: &Vars,
    ctx: &ToolContext,
    tracker: &PermissionTracker,
) -> Result<(String, Vec<crate::permissions::rules::Rule>, Vec<String>), String> {
    let (granted, skipped) = allowed_rules(skill, vars);
    let mut grants = ctx.grants.rules();
    grants.extend(granted.iter().cloned());
    let runner = PolicyShell {
        skill,
        ctx,
        tracker,
        grants,
    };
    let text = render_use(skill, args, vars, &runner).await?;
    Ok((text, granted, skipped))
}

/// The `allowed-tools` of `skill` as allow rules, with variables in them
/// substituted; entries that are no rule are returned by text.
pub fn allowed_rules(
    skill: &Skill,
    vars: &Vars,
) -> (Vec<crate::permissions::rules::Rule>, Vec<String>) {
    rules_of(
        skill,
        &skill.allowed_tools,
        crate::permissions::rules::RuleKind::Allow,
        vars,
    )
}

/// The `disallowed-tools` of `skill` as deny rules.
pub fn disallowed_rules(skill: &Skill, vars: &Vars) -> Vec<crate::permissions::rules::Rule> {
    rules_of(
        skill,
        &skill.disallowed_tools,
        crate::permissions::rules::RuleKind::Deny,
        vars,
    )
    .0
}

fn rules_of(
    skill: &Skill,
    entries: &[String],
    kind: crate::permissions::rules::RuleKind,
    vars: &Vars,
) -> (Vec<crate::permissions::rules::Rule>, Vec<String>) {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let mut rules = Vec::new();
    let mut skipped = Vec::new();
    for entry in entries {
        // `Bash(${CLAUDE_SKILL_DIR}/run.sh *)` matches the body's command;
        // arguments are no part of a rule.
        let text = substitute(skill, entry, "", vars);
        match crate::permissions::rules::parse_rule(kind, &text, home.as_deref()) {
            Ok(rule) => rules.push(rule),
            Err(e) => skipped.push(format!("{entry} ({e})")),
        }
    }
    (rules, skipped)
}

/// Runs a body's commands as the `Bash` tool would, decided by the
/// session's policy with `grants` counting as allow rules, never asking:
/// anything but an allow aborts the use with Claude Code's message.
pub struct PolicyShell<'a> {
    /// The skill whose commands run (named in a refusal's hint).
    pub skill: &'a Skill,
    /// The calling agent's tool context (folder, sandbox, policy).
    pub ctx: &'a ToolContext,
    /// The calling agent's session approvals.
    pub tracker: &'a PermissionTracker,
    /// Rules granted for this use (active skills' and this one's `allowed-tools`).
    pub grants: RuleSet,
}

impl ShellRunner for PolicyShell<'_> {
    fn run<'a>(&'a self, piece: &'a ShellPiece) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let pattern = &piece.pattern;
            let refused = |why: &str| {
                format!("Shell command permission check failed for pattern \"{pattern}\": {why}")
            };
            let Some(policy) = &self.ctx.policy else {
                return Err(refused("no permission policy applies here"));
            };
            let bash = BashTool::default();
            let input = ToolInput::from_iter([
                ("command".to_string(), json!(piece.command)),
                ("timeout".to_string(), json!(SHELL_TIMEOUT_MS)),
            ]);
            if let Err(out) = bash.validate(&input) {
                return Err(refused(&out.content));
            }
            match policy.decide_pre_approved(
                self.tracker,
                "Bash",
                bash.effect(),
                &input,
                None,
                false,
                &self.grants,
            ) {
                Decision::Allow => {}
                Decision::Deny(why) => return Err(refused(&why)),
                // A command that only reads runs, sandboxed, as Claude Code's do.
                Decision::Ask { .. }
                    if self.ctx.sandbox.is_some()
                        && crate::permissions::is_read_only_command(&piece.command) => {}
                Decision::Ask { reason, .. } => {
                    let hint = if self.skill.held_back {
                        "this folder is not trusted, so the command's own allowed-tools do not apply (answer yes when cadre asks, run `cadre config trust`, or pass --trust)"
                    } else {
                        "add it to the command's allowed-tools or to an allow rule"
                    };
                    return Err(refused(&format!(
                        "{reason}; it would need a question, and a command's lines never ask: {hint}"
                    )));
                }
            }
            let out = bash.execute(self.ctx, &input).await;
            let (text, code) = split_exit_code(&out.content);
            if !out.is_error || (code == Some(1) && finds_or_compares(&piece.command)) {
                return Ok(text);
            }
            Err(format!(
                "Shell command failed for pattern \"{pattern}\": [stderr]\n{}",
                out.content
            ))
        })
    }
}

/// The output of a `Bash` result without its `exit code N` line, and N.
fn split_exit_code(content: &str) -> (String, Option<i32>) {
    let (body, last) = match content.rsplit_once('\n') {
        Some((body, last)) => (body, last),
        None => ("", content),
    };
    match last
        .strip_prefix("exit code ")
        .and_then(|n| n.trim().parse().ok())
    {
        Some(code) => {
            let body = if body == "(no output)" { "" } else { body };
            (body.to_string(), Some(code))
        }
        None => (content.to_string(), None),
    }
}

/// Whether a command's exit status 1 means "nothing found" or "differs"
/// rather than failure (grep, diff and their kin).
fn finds_or_compares(command: &str) -> bool {
    let first = command.split_whitespace().next().unwrap_or("");
    let name = first.rsplit('/').next().unwrap_or(first);
    matches!(
        name,
        "grep" | "egrep" | "fgrep" | "rg" | "ag" | "diff" | "cmp" | "test" | "["
    ) && !command.contains("&&")
}

/// A `@mention` in a message: a file (`@src/main.rs`) or an MCP resource
/// (`@server:scheme://path`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mention {
    /// A path as written.
    Path(String),
    /// A server's resource.
    Resource {
        /// The server.
        server: String,
        /// The resource's URI.
        uri: String,
    },
}

/// The `@mentions` of `text`: an `@` at a line's start or after
/// whitespace, up to the next whitespace, trailing punctuation dropped;
/// each once, in order.
pub fn mentions(text: &str) -> Vec<Mention> {
    let mut out: Vec<Mention> = Vec::new();
    let mut prev_space = true;
    for (i, c) in text.char_indices() {
        if c == '@' && prev_space {
            let rest = &text[i + 1..];
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let token = rest[..end].trim_end_matches(['.', ',', ';', ')', '!', '?', '"', '\'']);
            if !token.is_empty() {
                let mention = match token.split_once(':') {
                    Some((server, uri))
                        if uri.contains("://")
                            && !server.is_empty()
                            && server
                                .chars()
                                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-')) =>
                    {
                        Mention::Resource {
                            server: server.to_string(),
                            uri: uri.to_string(),
                        }
                    }
                    _ => Mention::Path(token.to_string()),
                };
                if !out.contains(&mention) {
                    out.push(mention);
                }
            }
        }
        prev_space = c.is_whitespace();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[(&str, bool, bool)]) -> SkillSet {
        let mut set = SkillSet::default();
        for (name, invocable, fork) in names {
            set.skills.push(Skill {
                name: name.to_string(),
                description: String::new(),
                body: String::new(),
                dir: Default::default(),
                file: Default::default(),
                allowed_tools: Vec::new(),
                disallowed_tools: Vec::new(),
                model: None,
                effort: None,
                user_only: false,
                user_invocable: *invocable,
                argument_hint: None,
                arguments: Vec::new(),
                fork_agent: fork.then(|| "Explore".to_string()),
                scope: "project",
                kind: SkillKind::Command,
                label: "project".into(),
                plugin: None,
                held_back: false,
            });
        }
        set
    }

    fn names(inv: &Invocation) -> Vec<String> {
        match inv {
            Invocation::Inline { skills, args } => skills
                .iter()
                .map(|s| s.name.clone())
                .chain([format!("args={args}")])
                .collect(),
            other => vec![format!("{other:?}")],
        }
    }

    #[test]
    fn commands_stack_until_a_token_that_is_not_one() {
        let s = set(&[
            ("a", true, false),
            ("b", true, false),
            ("hidden", false, false),
            ("f", true, true),
        ]);
        assert_eq!(
            names(&parse_invocation(&s, "/a /b fix it")),
            ["a", "b", "args=fix it"]
        );
        assert_eq!(
            names(&parse_invocation(&s, "/a /hidden x")),
            ["a", "args=/hidden x"]
        );
        assert_eq!(names(&parse_invocation(&s, "/a /f x")), ["a", "args=/f x"]);
        assert_eq!(
            names(&parse_invocation(&s, "/a /a /a /a /a /a /a")),
            ["a", "a", "a", "a", "a", "a", "args=/a"]
        );
        assert!(
            matches!(parse_invocation(&s, "/f x y"), Invocation::Fork { args, .. } if args == "x y")
        );
        assert_eq!(
            parse_invocation(&s, "/hidden"),
            Invocation::NotUserInvocable("hidden".into())
        );
        assert_eq!(
            parse_invocation(&s, "/nope"),
            Invocation::Unknown("nope".into())
        );
        assert_eq!(
            parse_invocation(&s, "/usr/bin/env is odd"),
            Invocation::None
        );
        assert_eq!(parse_invocation(&s, "hello /a"), Invocation::None);
        assert_eq!(
            parse_invocation(&s, "/mcp__fx__greet Ann"),
            Invocation::McpPrompt {
                name: "mcp__fx__greet".into(),
                args: "Ann".into()
            }
        );
    }

    #[test]
    fn mentions_are_paths_or_resources_after_whitespace() {
        let found = mentions("see @src/main.rs, and @fx:mem://note. mail a@b.c @src/main.rs\n@x");
        assert_eq!(
            found,
            [
                Mention::Path("src/main.rs".into()),
                Mention::Resource {
                    server: "fx".into(),
                    uri: "mem://note".into()
                },
                Mention::Path("x".into()),
            ]
        );
    }

    #[test]
    fn exit_codes_are_read_off_bash_results() {
        assert_eq!(split_exit_code("out\nexit code 1"), ("out".into(), Some(1)));
        assert_eq!(
            split_exit_code("(no output)\nexit code 0"),
            (String::new(), Some(0))
        );
        assert_eq!(split_exit_code("plain"), ("plain".into(), None));
        assert!(finds_or_compares("grep -q x f"));
        assert!(!finds_or_compares("false"));
    }
}
