//! Slash commands, shared by the front ends: a typed line is read into a
//! command, and a command is run into the text to show and, for what only
//! the front end can do (leave, start or switch sessions, compact, stop a
//! task), an [`Action`]. Nothing here prints or reads the terminal, and no
//! command ever reaches the model.

mod permissions;

use std::collections::HashMap;

use cadre_core::driver::SessionHandle;
use cadre_core::protocol::{ApprovalAnswer, Event, Op};
use cadre_core::session::list_sessions;

use crate::setup::Runtime;
use crate::{AgentArgs, PermissionArgs};

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
    /// `/compact [FOCUS]`.
    Compact(Option<String>),
    /// `/exit`, `/quit`.
    Exit,
}

/// What `/tasks` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TasksCommand {
    /// List this session's tasks.
    List,
    /// Stop one.
    Stop(String),
}

/// The commands, as `/help` lists them.
pub const HELP: &str = "\
/help                 this list
/agents [NAME]        agent definitions with their sources and overrides, or one definition
/tasks [stop ID]      this session's subagents and background shells, or stop one
/clear                end this session (it stays resumable) and start a new one
/resume [ID]          recent sessions, or end this one and continue session ID
/sessions             every session
/model [NAME]         the model in use, or the model for the next session this process starts
/permissions          the permission mode and the rules in force, with where each comes from
/compact [focus]      summarise the conversation now to free context; the focus says what to keep above all
/exit, /quit          leave (Ctrl+D too); Ctrl+C interrupts a turn
A line starting with // is sent as a message starting with /.";

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
        _ => Input::Unknown(format!("/{name}")),
    }
}

/// What the front end does after showing a command's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing more: back to the prompt.
    None,
    /// Leave.
    Exit,
    /// Submit this operation (it may start work the prompt waits for).
    Submit(Op),
    /// End this session and start a new one.
    NewSession,
    /// End this session and continue the one with this id (as `--resume`).
    Resume(String),
    /// Use this model (as given) for the next session this process starts.
    NextModel(String),
}

/// A command's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// What to show (may be empty), without a trailing newline.
    pub text: String,
    /// What to do then.
    pub action: Action,
}

impl Outcome {
    fn text(text: impl Into<String>) -> Outcome {
        Outcome {
            text: text.into(),
            action: Action::None,
        }
    }
}

/// What a front end learns from a session's events that commands show:
/// the rules granted for the rest of the session by a "yes, don't ask again".
#[derive(Debug, Default, Clone)]
pub struct SessionView {
    /// The rule each open question would grant, by (agent, tool).
    offered: HashMap<(String, String), String>,
    /// Granted rules: (agent, rule), in order.
    granted: Vec<(String, String)>,
}

impl SessionView {
    /// Follows one event.
    pub fn follow(&mut self, event: &Event) {
        match event {
            Event::ApprovalRequested { question, .. } => {
                self.offered.insert(
                    (question.agent.clone(), question.tool.clone()),
                    question.session_rule.clone(),
                );
            }
            Event::ApprovalAnswered {
                agent,
                tool,
                answer,
            } => {
                let rule = self.offered.remove(&(agent.clone(), tool.clone()));
                if let (ApprovalAnswer::Session, Some(rule)) = (answer, rule)
                    && !self.granted.iter().any(|(a, r)| a == agent && *r == rule)
                {
                    self.granted.push((agent.clone(), rule));
                }
            }
            _ => {}
        }
    }

    /// The rules granted so far: (agent, rule).
    pub fn granted(&self) -> &[(String, String)] {
        &self.granted
    }
}

/// What commands read: the runtime the session was built from, the flags,
/// the session, and what the front end followed of it.
pub struct CommandContext<'a> {
    /// The runtime of the running session.
    pub runtime: &'a Runtime,
    /// The permission flags cadre was started with.
    pub perms: &'a PermissionArgs,
    /// The agent flags cadre was started with.
    pub agents: &'a AgentArgs,
    /// The running session.
    pub session: &'a SessionHandle,
    /// What was followed of its events.
    pub view: &'a SessionView,
    /// The model `/model NAME` chose for the next session, if any.
    pub next_model: Option<&'a str>,
}

/// How many sessions `/resume` lists.
const RECENT_SESSIONS: usize = 10;

/// Runs a command.
pub async fn execute(command: Command, ctx: &CommandContext<'_>) -> Outcome {
    match command {
        Command::Help => Outcome::text(HELP),
        Command::Exit => Outcome {
            text: String::new(),
            action: Action::Exit,
        },
        Command::Compact(focus) => Outcome {
            text: String::new(),
            action: Action::Submit(Op::Compact { focus }),
        },
        Command::Agents(name) => agents(ctx, name.as_deref()),
        Command::Tasks(TasksCommand::List) => list_tasks(ctx).await,
        Command::Tasks(TasksCommand::Stop(id)) => stop_task(ctx, &id).await,
        Command::Clear => {
            let mut text = ends_here(ctx).await;
            text.push_str("; starting a new session");
            Outcome {
                text,
                action: Action::NewSession,
            }
        }
        Command::Resume(None) => recent_sessions(ctx),
        Command::Resume(Some(id)) => {
            let current = ctx.session.session_id();
            if id == current {
                return Outcome::text(format!("{id} is this session"));
            }
            if let Err(e) = cadre_core::session::session_path(&ctx.runtime.home, &id) {
                return Outcome::text(format!("cannot resume {id}: {e}"));
            }
            let mut text = ends_here(ctx).await;
            text.push_str(&format!("; resuming session {id}"));
            Outcome {
                text,
                action: Action::Resume(id),
            }
        }
        Command::Sessions => {
            let list = list_sessions(&ctx.runtime.home);
            if list.is_empty() {
                return Outcome::text("no sessions yet");
            }
            Outcome::text(written(|out| crate::sessions::write_list(out, &list)))
        }
        Command::Model(None) => model(ctx),
        Command::Model(Some(name)) => {
            let config = ctx.runtime.client.config();
            let id = ctx.runtime.settings.resolve_model(config.provider, &name);
            Outcome {
                text: format!(
                    "the next session this process starts (/clear, or /resume ID) talks to {id}; \
                     this session keeps {}, as a running session's model cannot be changed",
                    config.model
                ),
                action: Action::NextModel(name),
            }
        }
        Command::Permissions => Outcome::text(permissions::describe(ctx)),
    }
}

/// What a writer wrote, as text without its last newline.
fn written(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    let result = write(&mut out);
    let mut text = String::from_utf8_lossy(&out).trim_end().to_string();
    if let Err(e) = result {
        text.push_str(&format!("\nerror: {e}"));
    }
    text
}

fn agents(ctx: &CommandContext<'_>, name: Option<&str>) -> Outcome {
    let mut out = Vec::new();
    let result = match name {
        None => crate::agents::write_list(&mut out, &ctx.runtime.sources)
            .map(|errors| (errors > 0).then(|| crate::agents::skipped_note(errors))),
        Some(name) => crate::agents::write_show(
            &mut out,
            name,
            &ctx.runtime.sources,
            ctx.perms,
            &ctx.runtime.settings,
        )
        .map(|()| None),
    };
    let mut text = String::from_utf8_lossy(&out).trim_end().to_string();
    match result {
        Ok(Some(note)) => text.push_str(&format!("\n{note}")),
        Ok(None) => {}
        Err(e) => text.push_str(&format!(
            "{}error: {e:#}",
            if text.is_empty() { "" } else { "\n" }
        )),
    }
    if name.is_none() {
        text.push_str("\n/agents NAME shows one definition as a child would get it");
    }
    Outcome::text(text)
}

async fn list_tasks(ctx: &CommandContext<'_>) -> Outcome {
    let rows = match ctx.session.tasks().await {
        Ok(rows) => rows,
        Err(e) => return Outcome::text(format!("cannot read the task table: {e}")),
    };
    if rows.is_empty() {
        return Outcome::text("no tasks in this session");
    }
    let mut text = written(|out| crate::tasks::write_rows(out, &rows, crate::tasks::now_ms()));
    text.push_str(
        "\n/tasks stop ID stops one; `cadre tasks show ID --transcript` shows a subagent's transcript",
    );
    Outcome::text(text)
}

async fn stop_task(ctx: &CommandContext<'_>, id: &str) -> Outcome {
    let rows = ctx.session.tasks().await.unwrap_or_default();
    let Some(row) = rows.iter().find(|r| r.id == id) else {
        return Outcome::text(format!("no task {id} in this session (see /tasks)"));
    };
    if row.status.is_final() {
        return Outcome::text(format!(
            "task {id} already ended as {}; nothing to stop",
            row.status
        ));
    }
    Outcome {
        text: format!("stopping task {id} ({})", row.description),
        action: Action::Submit(Op::StopTask {
            task_id: id.to_string(),
        }),
    }
}

/// `session X ends here (it stays resumable …)`, with the tasks that stop with it.
async fn ends_here(ctx: &CommandContext<'_>) -> String {
    let id = ctx.session.session_id();
    let active = ctx
        .session
        .tasks()
        .await
        .map(|rows| rows.iter().filter(|r| !r.status.is_final()).count())
        .unwrap_or(0);
    let stopped = match active {
        0 => String::new(),
        1 => "; its running task is stopped".to_string(),
        n => format!("; its {n} running tasks are stopped"),
    };
    format!(
        "session {id} ends here (it stays resumable: /resume {id}, or cadre --resume {id}){stopped}"
    )
}

fn recent_sessions(ctx: &CommandContext<'_>) -> Outcome {
    let current = ctx.session.session_id();
    let list: Vec<_> = list_sessions(&ctx.runtime.home)
        .into_iter()
        .filter(|s| s.id != current)
        .take(RECENT_SESSIONS)
        .collect();
    if list.is_empty() {
        return Outcome::text("no other sessions to resume");
    }
    let mut text = written(|out| crate::sessions::write_list(out, &list));
    text.push_str("\n/resume ID ends this session and continues that one");
    Outcome::text(text)
}

fn model(ctx: &CommandContext<'_>) -> Outcome {
    let config = ctx.runtime.client.config();
    let mut text = format!("model: {} ({})", config.model, config.provider);
    if let Some(next) = ctx.next_model {
        let id = ctx.runtime.settings.resolve_model(config.provider, next);
        text.push_str(&format!(
            "\nthe next session this process starts talks to {id}"
        ));
    }
    text.push_str("\n/model NAME picks the model for the next session (/clear or /resume ID)");
    Outcome::text(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(c: Command) -> Input {
        Input::Command(c)
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
    fn help_lists_every_command() {
        for name in [
            "/help",
            "/agents",
            "/tasks",
            "/clear",
            "/resume",
            "/sessions",
            "/model",
            "/permissions",
            "/compact",
            "/exit",
        ] {
            assert!(HELP.contains(name), "{name}");
            assert!(
                !matches!(parse(name), Input::Unknown(_)),
                "{name} is listed but not known"
            );
        }
    }

    #[test]
    fn the_view_keeps_rules_granted_for_the_session() {
        use cadre_core::protocol::ApprovalQuestion;
        let mut view = SessionView::default();
        let asked = |agent: &str, rule: &str| Event::ApprovalRequested {
            id: 1,
            question: ApprovalQuestion {
                agent: agent.into(),
                label: None,
                tool: "Bash".into(),
                input: "ls".into(),
                reason: String::new(),
                sandbox: None,
                session_rule: rule.into(),
            },
        };
        let answered = |agent: &str, answer| Event::ApprovalAnswered {
            agent: agent.into(),
            tool: "Bash".into(),
            answer,
        };
        view.follow(&asked("main", "Bash(ls:*)"));
        view.follow(&answered("main", ApprovalAnswer::Once));
        view.follow(&asked("main", "Bash(cargo test:*)"));
        view.follow(&answered("main", ApprovalAnswer::Session));
        view.follow(&asked("a1", "Bash(make:*)"));
        view.follow(&answered("a1", ApprovalAnswer::No));
        assert_eq!(
            view.granted(),
            [("main".to_string(), "Bash(cargo test:*)".to_string())]
        );
    }
}
