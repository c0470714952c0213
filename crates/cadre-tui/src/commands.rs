//! Slash commands: how a typed prompt is read, shared by both front ends
//! (the binary's line front end uses this parser too). Commands are answered
//! by the front end and never reach the model; an unknown one says so.

use cadre_core::protocol::{HookDecision, HookEvent, McpStatus, RewindAction};

/// What a typed line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Nothing (a blank line).
    Empty,
    /// A message for the model.
    Message(String),
    /// A command.
    Command(Command),
    /// A `/word` that is no command.
    Unknown(String),
    /// A command given arguments it does not take: how to call it.
    Usage(String),
    /// `!command`: shell mode (the command, without the `!`).
    Shell(String),
}

/// A slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/help`.
    Help,
    /// `/agents [NAME]`: every definition, or one.
    Agents(Option<String>),
    /// `/tasks`, `/tasks stop ID`.
    Tasks(TasksCommand),
    /// `/clear`: end this session, start a new one.
    Clear,
    /// `/resume [ID]`: recent sessions, or switch to one.
    Resume(Option<String>),
    /// `/sessions`.
    Sessions,
    /// `/model [NAME]`.
    Model(Option<String>),
    /// `/permissions`.
    Permissions,
    /// `/memory`: the instruction files loaded, with their sizes.
    Memory,
    /// `/mcp`: the MCP servers with their state and tools.
    Mcp,
    /// `/plugin`, `/plugin enable|disable NAME`.
    Plugin(PluginCommand),
    /// `/compact [FOCUS]`.
    Compact(Option<String>),
    /// `/context`: what fills the context window, by category.
    Context,
    /// `/usage` (`/cost`): the session's tokens and cost by model and by child.
    Usage,
    /// `/doctor`: read-only diagnostics of settings, definitions, servers and hooks.
    Doctor,
    /// `/config`, `/config set KEY VALUE`.
    Config(ConfigCommand),
    /// `/rewind` (`/undo`, `/checkpoint`): the checkpoints, or go back to one.
    Rewind(Option<RewindChoice>),
    /// `/exit`, `/quit`.
    Exit,
}

/// What `/config` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigCommand {
    /// Show the settings cadre honours, their values and where each comes from.
    Show,
    /// Write KEY = VALUE to the user's settings file.
    Set(String, String),
}

/// What `/tasks` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TasksCommand {
    /// List this session's tasks.
    List,
    /// Stop one.
    Stop(String),
}

/// `/rewind N [ACTION] [force]`: which checkpoint, and what goes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RewindChoice {
    /// The checkpoint's number, as listed.
    pub number: u64,
    /// What goes back (code and conversation when not named).
    pub action: RewindAction,
    /// Overwrite files changed outside cadre.
    pub force: bool,
}

/// How `/rewind` is called.
pub const REWIND_USAGE: &str =
    "usage: /rewind, or /rewind N [both|conversation|code|summarize] [force]";

/// Reads `/rewind`'s arguments.
fn rewind_args(words: &[&str]) -> Input {
    let Some((first, rest)) = words.split_first() else {
        return Input::Command(Command::Rewind(None));
    };
    let Ok(number) = first.trim_start_matches('#').parse::<u64>() else {
        return Input::Usage(REWIND_USAGE.into());
    };
    let mut choice = RewindChoice {
        number,
        action: RewindAction::Both,
        force: false,
    };
    for word in rest {
        match *word {
            "both" | "all" => choice.action = RewindAction::Both,
            "conversation" | "conv" => choice.action = RewindAction::Conversation,
            "code" => choice.action = RewindAction::Code,
            "summarize" | "summarise" => choice.action = RewindAction::Summarize,
            "force" | "--force" => choice.force = true,
            _ => return Input::Usage(REWIND_USAGE.into()),
        }
    }
    Input::Command(Command::Rewind(Some(choice)))
}

/// What `/plugin` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginCommand {
    /// List the plugins found and whether they load.
    List,
    /// Enable one in the user's settings (from the next session on).
    Enable(String),
    /// Disable one in the user's settings (from the next session on).
    Disable(String),
}

/// The commands, as `/help` lists them (each front end adds its keys).
pub const COMMANDS_HELP: &str = "\
/help                 this list
/agents [NAME]        agent definitions with their sources and overrides, or one definition
/tasks [stop ID]      this session's subagents and background shells, or stop one
/clear                end this session (it stays resumable) and start a new one
/resume [ID]          pick a recent session, or end this one and continue session ID
/sessions             every session
/model [NAME]         the model in use, or switch to NAME now (this session's next turn, and the sessions /clear or /resume start)
/permissions          the permission mode and the rules in force, with where each comes from
/memory               the instruction files (CLAUDE.md, AGENTS.md, imports) loaded, with their sizes
/mcp                  the MCP servers with their state and tools
/plugin [ARGS]        the plugins found and whether they load; /plugin enable|disable NAME switches one for the next sessions
/compact [focus]      summarise the conversation now to free context; the focus says what to keep above all
/context              what fills the context window: system prompt, instruction files, tools, MCP tools, skills, agents, messages, free space
/usage, /cost         this session's tokens and cost, by model and by subagent
/doctor               check settings, agents, skills, MCP servers, hooks and the sandbox (read-only)
/config [set KEY VAL] the settings cadre honours (model, permission mode, output style, status line, theme) with where each comes from; set writes one to your user settings
/rewind, /undo, /checkpoint  go back to before a message: the files the file tools changed since, the conversation, or both, or summarise from there
/team                 the team's teammates (type, state, current task) and its task board (a session with --teams)
@NAME MESSAGE         send MESSAGE to teammate NAME (wakes it if it rests)
/exit, /quit          leave
!COMMAND              shell mode: run COMMAND yourself (deny rules and the sandbox apply); its output joins the conversation for the next turn
A line starting with // is sent as a message starting with /.";

/// Every command name with what it does in a few words, for `/` completion.
pub const COMMAND_NAMES: &[(&str, &str)] = &[
    ("/agents", "agent definitions"),
    ("/clear", "start a new session"),
    ("/compact", "summarise the conversation"),
    ("/config", "settings, and change one"),
    ("/context", "what fills the context window"),
    ("/cost", "tokens and cost (as /usage)"),
    ("/doctor", "check the setup"),
    ("/exit", "leave"),
    ("/checkpoint", "go back to before a message (as /rewind)"),
    ("/help", "commands and keys"),
    ("/mcp", "MCP servers and their tools"),
    ("/memory", "instruction files loaded"),
    ("/model", "the model"),
    ("/permissions", "mode and rules in force"),
    ("/plugin", "plugins, enable or disable one"),
    ("/quit", "leave"),
    ("/resume", "continue a past session"),
    ("/rewind", "restore code and/or conversation"),
    ("/sessions", "every session"),
    ("/tasks", "subagents and background shells"),
    ("/undo", "go back to before a message (as /rewind)"),
    ("/usage", "tokens and cost by model and subagent"),
    ("/team", "teammates and the task board"),
];

/// Commands the front ends answer before [`parse`] (they need the team):
/// listed for `/help` and completion, never a [`Command`].
pub const FRONT_END_COMMANDS: &[&str] = &["/team"];

/// Reads a typed line: a command when it starts with `/` (`//` escapes
/// one), otherwise a message.
pub fn parse(line: &str) -> Input {
    let line = line.trim();
    if line.is_empty() {
        return Input::Empty;
    }
    if let Some(escaped) = line.strip_prefix("//") {
        return Input::Message(format!("/{escaped}"));
    }
    if let Some(command) = line.strip_prefix('!') {
        return Input::Shell(command.trim().to_string());
    }
    let Some(command) = line.strip_prefix('/') else {
        return Input::Message(line.to_string());
    };
    let (name, rest) = command
        .split_once(char::is_whitespace)
        .unwrap_or((command, ""));
    let rest = rest.trim();
    let words: Vec<&str> = rest.split_whitespace().collect();
    let at_most_one = |usage: &str, make: fn(Option<String>) -> Command| match words.as_slice() {
        [] => Input::Command(make(None)),
        [one] => Input::Command(make(Some((*one).to_string()))),
        _ => Input::Usage(format!("usage: {usage}")),
    };
    let none = |command: Command, usage: &str| {
        if words.is_empty() {
            Input::Command(command)
        } else {
            Input::Usage(format!("usage: {usage} (it takes no arguments)"))
        }
    };
    match name {
        "exit" | "quit" => Input::Command(Command::Exit),
        "help" => Input::Command(Command::Help),
        "compact" => Input::Command(Command::Compact(
            (!rest.is_empty()).then(|| rest.to_string()),
        )),
        "agents" => at_most_one("/agents [NAME]", Command::Agents),
        "resume" => at_most_one("/resume [SESSION_ID]", Command::Resume),
        "model" => at_most_one("/model [NAME]", Command::Model),
        "tasks" => match words.as_slice() {
            [] | ["list"] => Input::Command(Command::Tasks(TasksCommand::List)),
            ["stop", id] => Input::Command(Command::Tasks(TasksCommand::Stop((*id).to_string()))),
            _ => Input::Usage("usage: /tasks, or /tasks stop TASK_ID".into()),
        },
        "clear" => none(Command::Clear, "/clear"),
        "sessions" => none(Command::Sessions, "/sessions"),
        "permissions" => none(Command::Permissions, "/permissions"),
        "memory" => none(Command::Memory, "/memory"),
        "mcp" => none(Command::Mcp, "/mcp"),
        "context" => none(Command::Context, "/context"),
        "usage" | "cost" => none(Command::Usage, "/usage"),
        "doctor" => none(Command::Doctor, "/doctor"),
        "config" | "settings" => match words.as_slice() {
            [] | ["show"] => Input::Command(Command::Config(ConfigCommand::Show)),
            ["set", key, _, ..] => {
                // The value is the rest of the line, spaces kept (a status line command).
                let value = rest
                    .trim_start_matches("set")
                    .trim_start()
                    .strip_prefix(key)
                    .unwrap_or_default()
                    .trim();
                Input::Command(Command::Config(ConfigCommand::Set(
                    (*key).to_string(),
                    value.to_string(),
                )))
            }
            _ => Input::Usage("usage: /config, or /config set KEY VALUE".into()),
        },
        "rewind" | "undo" | "checkpoint" => rewind_args(&words),
        "plugin" | "plugins" => match words.as_slice() {
            [] | ["list"] => Input::Command(Command::Plugin(PluginCommand::List)),
            ["enable", name] => {
                Input::Command(Command::Plugin(PluginCommand::Enable((*name).to_string())))
            }
            ["disable", name] => {
                Input::Command(Command::Plugin(PluginCommand::Disable((*name).to_string())))
            }
            _ => Input::Usage("usage: /plugin, or /plugin enable|disable NAME".into()),
        },
        _ => Input::Unknown(format!("/{name}")),
    }
}

/// Whether the session runs `/name` (typed with its slash): a skill or
/// custom command of `menu` (a plugin's by its bare name too), or an MCP
/// server's prompt (`/mcp__server__prompt`, known once its server is ready).
pub fn session_runs(name: &str, menu: &[cadre_core::protocol::CommandEntry]) -> bool {
    let bare = name.trim_start_matches('/');
    bare.starts_with("mcp__")
        || menu
            .iter()
            .any(|c| c.name == bare || c.name.split_once(':').is_some_and(|(_, n)| n == bare))
}

/// `/help`'s list of the session's skills and commands, with their
/// argument hints; empty when there are none.
pub fn menu_help(menu: &[cadre_core::protocol::CommandEntry]) -> String {
    if menu.is_empty() {
        return String::new();
    }
    let mut text = String::from("\nSkills and commands (sent to the session):");
    for entry in menu {
        let usage = match &entry.argument_hint {
            Some(hint) => format!("/{} {hint}", entry.name),
            None => format!("/{}", entry.name),
        };
        let mut line = format!("\n{usage:<22}");
        if !line.ends_with(' ') {
            line.push(' ');
        }
        let description: String = entry.description.chars().take(100).collect();
        line.push_str(&format!("{description} ({})", entry.label));
        text.push_str(&line);
    }
    text
}

/// How an MCP server's status is shown, in both front ends; `None` for one
/// still starting: `MCP server github: ready (26 tools)`.
pub fn mcp_status_line(
    server: &str,
    status: McpStatus,
    tools: Option<usize>,
    message: Option<&str>,
) -> Option<String> {
    match status {
        McpStatus::Starting => None,
        McpStatus::Ready => {
            let n = tools.unwrap_or(0);
            Some(format!(
                "MCP server {server}: ready ({n} tool{})",
                if n == 1 { "" } else { "s" }
            ))
        }
        _ => Some(format!(
            "MCP server {server}: {status}{}",
            message.map(|m| format!(": {m}")).unwrap_or_default()
        )),
    }
}

/// How a hook run that decided something is shown, in both front ends:
/// `hook PreToolUse · ./guard.sh → deny (12 ms)`.
pub fn hook_line(
    event: HookEvent,
    command: &str,
    decision: HookDecision,
    duration_ms: u64,
) -> String {
    let mut shown: String = command.chars().take(60).collect();
    if command.chars().count() > 60 {
        shown.push('…');
    }
    format!("hook {event} · {shown} → {decision} ({duration_ms} ms)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(c: Command) -> Input {
        Input::Command(c)
    }

    #[test]
    fn config_shows_or_sets_with_the_rest_of_the_line_as_value() {
        assert_eq!(
            parse("/config"),
            command(Command::Config(ConfigCommand::Show))
        );
        assert_eq!(
            parse("/config set outputStyle Explanatory"),
            command(Command::Config(ConfigCommand::Set(
                "outputStyle".into(),
                "Explanatory".into()
            )))
        );
        assert_eq!(
            parse("/config set statusLine  ~/bin/status.sh --short "),
            command(Command::Config(ConfigCommand::Set(
                "statusLine".into(),
                "~/bin/status.sh --short".into()
            )))
        );
        assert!(matches!(parse("/config set model"), Input::Usage(_)));
    }

    #[test]
    fn a_bang_line_is_shell_mode() {
        assert_eq!(parse("!ls -la "), Input::Shell("ls -la".into()));
        assert_eq!(parse("  ! git status"), Input::Shell("git status".into()));
        assert_eq!(parse("!"), Input::Shell(String::new()));
        assert_eq!(parse("hi!"), Input::Message("hi!".into()));
    }

    #[test]
    fn the_sessions_commands_are_known_by_name_and_bare_plugin_name() {
        use cadre_core::protocol::CommandEntry;
        let entry = |name: &str| CommandEntry {
            name: name.into(),
            description: "does it".into(),
            argument_hint: Some("[n]".into()),
            label: "project".into(),
        };
        let menu = [entry("changelog"), entry("tools:hello")];
        assert!(session_runs("/changelog", &menu));
        assert!(session_runs("/hello", &menu));
        assert!(session_runs("/tools:hello", &menu));
        assert!(session_runs("/mcp__fx__greet", &menu));
        assert!(!session_runs("/nope", &menu));
        let help = menu_help(&menu);
        assert!(help.contains("/changelog [n]"), "{help}");
        assert!(help.contains("does it (project)"), "{help}");
        assert_eq!(menu_help(&[]), "");
    }

    #[test]
    fn lines_starting_with_a_slash_are_commands() {
        assert_eq!(parse("  "), Input::Empty);
        assert_eq!(parse(" fix it "), Input::Message("fix it".into()));
        assert_eq!(parse("/exit"), command(Command::Exit));
        assert_eq!(parse("/quit "), command(Command::Exit));
        assert_eq!(parse("/help"), command(Command::Help));
        assert_eq!(parse("/compact"), command(Command::Compact(None)));
        assert_eq!(parse("/compact   "), command(Command::Compact(None)));
        assert_eq!(
            parse("/compact  keep the parser notes "),
            command(Command::Compact(Some("keep the parser notes".into())))
        );
        assert_eq!(parse("/compactly now"), Input::Unknown("/compactly".into()));
        assert_eq!(parse("/nonsense"), Input::Unknown("/nonsense".into()));
        assert_eq!(
            parse("/etc/hosts is empty"),
            Input::Unknown("/etc/hosts".into())
        );
        assert_eq!(
            parse("//etc/hosts is empty"),
            Input::Message("/etc/hosts is empty".into())
        );
    }

    #[test]
    fn commands_take_their_arguments() {
        assert_eq!(parse("/agents"), command(Command::Agents(None)));
        assert_eq!(
            parse("/agents  Explore "),
            command(Command::Agents(Some("Explore".into())))
        );
        assert!(matches!(parse("/agents a b"), Input::Usage(u) if u.contains("/agents [NAME]")));
        assert_eq!(parse("/tasks"), command(Command::Tasks(TasksCommand::List)));
        assert_eq!(
            parse("/tasks list"),
            command(Command::Tasks(TasksCommand::List))
        );
        assert_eq!(
            parse("/tasks stop t-0123456789ab"),
            command(Command::Tasks(TasksCommand::Stop("t-0123456789ab".into())))
        );
        assert!(matches!(parse("/tasks stop"), Input::Usage(_)));
        assert!(matches!(parse("/tasks kill t-1"), Input::Usage(_)));
        assert_eq!(parse("/clear"), command(Command::Clear));
        assert!(
            matches!(parse("/clear everything"), Input::Usage(u) if u.contains("no arguments"))
        );
        assert_eq!(parse("/resume"), command(Command::Resume(None)));
        assert_eq!(
            parse("/resume 0190-abc"),
            command(Command::Resume(Some("0190-abc".into())))
        );
        assert_eq!(parse("/sessions"), command(Command::Sessions));
        assert_eq!(parse("/model"), command(Command::Model(None)));
        assert_eq!(
            parse("/model opus"),
            command(Command::Model(Some("opus".into())))
        );
        assert!(matches!(parse("/model a b"), Input::Usage(_)));
        assert_eq!(parse("/permissions"), command(Command::Permissions));
        // Names are exact: a capital is no command.
        assert_eq!(parse("/Help"), Input::Unknown("/Help".into()));
    }

    #[test]
    fn rewind_lists_or_names_a_checkpoint_and_what_goes_back() {
        for name in ["/rewind", "/undo", "/checkpoint"] {
            assert_eq!(parse(name), command(Command::Rewind(None)));
        }
        assert_eq!(
            parse("/rewind 3"),
            command(Command::Rewind(Some(RewindChoice {
                number: 3,
                action: RewindAction::Both,
                force: false
            })))
        );
        assert_eq!(
            parse("/undo 2 code force"),
            command(Command::Rewind(Some(RewindChoice {
                number: 2,
                action: RewindAction::Code,
                force: true
            })))
        );
        assert_eq!(parse("/rewind x"), Input::Usage(REWIND_USAGE.into()));
        assert_eq!(
            parse("/rewind 1 sideways"),
            Input::Usage(REWIND_USAGE.into())
        );
    }

    #[test]
    fn help_and_completion_list_every_command() {
        for (name, _) in COMMAND_NAMES {
            assert!(COMMANDS_HELP.contains(name), "{name}");
            if FRONT_END_COMMANDS.contains(name) {
                continue;
            }
            assert!(
                matches!(parse(name), Input::Command(_)),
                "{name} is listed but not known"
            );
        }
    }
}
