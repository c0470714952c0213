//! Slash commands, shared by the front ends: a typed line is read into a
//! command, and a command is run into the text to show and, for what only
//! the front end can do (leave, start or switch sessions, compact, stop a
//! task), an [`Action`]. Nothing here prints or reads the terminal, and no
//! command ever reaches the model.

pub mod config;
mod context;
mod memory;
mod permissions;
mod usage;

use std::collections::HashMap;

use cadre_core::driver::SessionHandle;
use cadre_core::permissions::PermissionMode;
use cadre_core::protocol::{ApprovalAnswer, Event, HookDecision, Op};
use cadre_core::session::list_sessions;

use crate::{AgentArgs, PermissionArgs};
use cadre_core::driver::SessionBuilder;

pub use cadre_tui::commands::{
    COMMANDS_HELP, Command, ConfigCommand, Input, PluginCommand, TasksCommand, hook_line,
    mcp_status_line, menu_help, parse, session_runs,
};

/// The line front end's keys, after the commands in `/help`.
const LINE_KEYS: &str = "Keys: Ctrl+D leaves too · Ctrl+C interrupts a turn";

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
    /// Talk to this model from the next turn on (`Op::SetModel` with `id`),
    /// and start the sessions `/clear` and `/resume` open with it (`name`, as given).
    Model {
        /// As the user typed it (an alias or an id).
        name: String,
        /// The model id it resolves to.
        id: String,
    },
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
    /// The main agent's mode, once the user changed it in the session (Shift+Tab).
    mode: Option<PermissionMode>,
    /// What its context held at the last report, for `/context`.
    context: Option<context::Breakdown>,
    /// Hook runs that failed or timed out, for `/doctor`.
    hook_failures: Vec<String>,
    /// The checkpoints last listed, for `/rewind N`.
    checkpoints: Vec<cadre_core::protocol::CheckpointInfo>,
}

impl SessionView {
    /// Follows one event.
    pub fn follow(&mut self, event: &Event) {
        match event {
            Event::ApprovalRequested { question, .. } => {
                self.offered.insert(
                    (question.agent.to_string(), question.tool.clone()),
                    question.session_rule.clone(),
                );
            }
            Event::ApprovalAnswered {
                agent,
                tool,
                answer,
            } => {
                let rule = self.offered.remove(&(agent.to_string(), tool.clone()));
                if let (ApprovalAnswer::Session, Some(rule)) = (answer, rule)
                    && !self.granted.iter().any(|(a, r)| a == agent && *r == rule)
                {
                    self.granted.push((agent.to_string(), rule));
                }
            }
            Event::ModeChanged { agent, mode } if agent == "main" => self.mode = Some(*mode),
            Event::HookEnded {
                event,
                command,
                decision: decision @ (HookDecision::Error | HookDecision::Timeout),
                duration_ms,
                ..
            } => {
                let what = if *decision == HookDecision::Timeout {
                    "timed out"
                } else {
                    "failed"
                };
                self.hook_failures.push(format!(
                    "{event} hook `{command}` {what} after {duration_ms} ms"
                ));
            }
            Event::ContextBreakdown {
                categories,
                tokens,
                window,
                estimated,
                ..
            } => {
                self.context = Some(context::Breakdown {
                    categories: categories.clone(),
                    tokens: *tokens,
                    window: *window,
                    estimated: *estimated,
                });
            }
            Event::Checkpoints { checkpoints, .. } => self.checkpoints = checkpoints.clone(),
            _ => {}
        }
    }

    /// The rules granted so far: (agent, rule).
    pub fn granted(&self) -> &[(String, String)] {
        &self.granted
    }

    /// The main agent's mode when the user changed it in the session.
    pub fn mode(&self) -> Option<PermissionMode> {
        self.mode
    }
}

/// What commands read: the runtime the session was built from, the flags,
/// the session, and what the front end followed of it.
pub struct CommandContext<'a> {
    /// The runtime of the running session.
    pub runtime: &'a SessionBuilder,
    /// The permission flags cadre was started with.
    pub perms: &'a PermissionArgs,
    /// The agent flags cadre was started with.
    pub agents: &'a AgentArgs,
    /// The running session.
    pub session: &'a SessionHandle,
    /// What was followed of its events.
    pub view: &'a SessionView,
    /// The model `/model NAME` chose (for this session and the next ones), if any.
    pub next_model: Option<&'a str>,
    /// Whether the full screen shows the answer (`/context` draws a grid there).
    pub full_screen: bool,
}

/// How many sessions `/resume` lists.
const RECENT_SESSIONS: usize = 10;

/// Runs a command.
pub async fn execute(command: Command, ctx: &CommandContext<'_>) -> Outcome {
    match command {
        Command::Help => Outcome::text(format!(
            "{COMMANDS_HELP}{}\n{LINE_KEYS}",
            menu_help(&ctx.runtime.skills.menu())
        )),
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
            let current = ctx.session.session_id();
            Outcome::text(written(|out| write_sessions(out, &list, current)))
        }
        Command::Model(None) => model(ctx),
        Command::Model(Some(name)) => {
            let config = ctx.runtime.client.config();
            let id = ctx.runtime.settings.resolve_model(config.provider, &name);
            Outcome {
                text: format!(
                    "model: {id} from the next turn on (was {}); sessions /clear or /resume start from here use it too",
                    current_model(ctx)
                ),
                action: Action::Model { name, id },
            }
        }
        Command::Permissions => Outcome::text(permissions::describe(ctx)),
        Command::Memory => Outcome::text(memory::describe(ctx)),
        Command::Mcp => Outcome::text(crate::mcp_cmd::describe_servers(&ctx.runtime.mcp)),
        Command::Context if ctx.full_screen => {
            Outcome::text(context::grid(ctx.view.context.as_ref()))
        }
        Command::Context => Outcome::text(context::table(ctx.view.context.as_ref())),
        Command::Usage => Outcome::text(usage::describe(ctx).await),
        Command::Doctor => {
            let (Ok(home), Ok(cwd)) = (cadre_core::config::data_dir(), std::env::current_dir())
            else {
                return Outcome::text("/doctor: cannot find the data directory or this folder");
            };
            let live = crate::doctor::LiveSession {
                mcp: &ctx.runtime.mcp,
                hook_failures: &ctx.view.hook_failures,
            };
            let checks =
                crate::doctor::checks(&home, &cwd, ctx.perms, ctx.agents, Some(live)).await;
            Outcome::text(crate::doctor::text(&checks).trim_end())
        }
        Command::Config(ConfigCommand::Show) => {
            Outcome::text(config::table(&config::rows(ctx), &config::user_file(ctx)))
        }
        Command::Config(ConfigCommand::Set(key, value)) => {
            Outcome::text(config::set(ctx, &key, &value))
        }
        Command::Rewind(None) => Outcome {
            text: String::new(),
            action: Action::Submit(Op::ListCheckpoints),
        },
        Command::Rewind(Some(choice)) => rewind(ctx, choice),
        Command::Plugin(PluginCommand::List) => Outcome::text(
            crate::plugin_cmd::list_text(&ctx.runtime.plugins)
                .trim_end()
                .to_string(),
        ),
        Command::Plugin(PluginCommand::Enable(name)) => {
            Outcome::text(crate::plugin_cmd::switch(ctx.runtime, &name, true))
        }
        Command::Plugin(PluginCommand::Disable(name)) => {
            Outcome::text(crate::plugin_cmd::switch(ctx.runtime, &name, false))
        }
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

/// `/rewind N [ACTION] [force]`: checkpoint N of the last listing.
fn rewind(ctx: &CommandContext<'_>, choice: cadre_tui::commands::RewindChoice) -> Outcome {
    let Some(c) = ctx
        .view
        .checkpoints
        .iter()
        .find(|c| c.number == choice.number)
    else {
        return Outcome::text(format!(
            "no checkpoint {} in the last listing (/rewind lists them)",
            choice.number
        ));
    };
    Outcome {
        text: String::new(),
        action: Action::Submit(Op::Rewind {
            prompt: c.prompt.clone(),
            later_same: c.later_same,
            action: choice.action,
            overwrite: choice.force,
        }),
    }
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
    let mut text = written(|out| write_sessions(out, &list, current));
    text.push_str("\n/resume ID ends this session and continues that one");
    Outcome::text(text)
}

/// Sessions two lines each, to read in 80 columns: id, start, tokens and
/// cost; then the directory and the first prompt.
fn write_sessions(
    out: &mut impl std::io::Write,
    list: &[cadre_core::session::SessionSummary],
    current: &str,
) -> std::io::Result<()> {
    for s in list {
        let mut head = format!(
            "{} · {} · {} tok",
            s.id,
            cadre_core::session::utc_datetime(s.started_ms),
            s.totals.tokens()
        );
        if let Some(cost) = s.totals.cost {
            head.push_str(&format!(" · {cost}"));
        }
        if s.id == current {
            head.push_str(" · this session");
        }
        writeln!(out, "{head}")?;
        let prompt = crate::sessions::one_line(&s.first_prompt, 60);
        if prompt.is_empty() {
            writeln!(out, "  in {} · (no messages)", s.cwd)?;
        } else {
            writeln!(out, "  in {} · {prompt}", s.cwd)?;
        }
    }
    Ok(())
}

/// The model the session talks to now: the one `/model NAME` chose, else the configured one.
fn current_model(ctx: &CommandContext<'_>) -> String {
    let config = ctx.runtime.client.config();
    match ctx.next_model {
        Some(name) => ctx.runtime.settings.resolve_model(config.provider, name),
        None => config.model.clone(),
    }
}

fn model(ctx: &CommandContext<'_>) -> Outcome {
    let config = ctx.runtime.client.config();
    let mut text = format!("model: {} ({})", current_model(ctx), config.provider);
    if ctx.next_model.is_some() {
        text.push_str(&format!(
            " · chosen with /model; started with {}",
            config.model
        ));
    }
    text.push_str("\n/model NAME switches from the next turn on (an alias such as sonnet, opus, haiku, or a model id)");
    Outcome::text(text)
}

#[cfg(test)]
mod tests {
    use super::*;

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
                call_id: None,
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

    #[test]
    fn the_view_keeps_the_main_agents_mode_once_changed() {
        let mut view = SessionView::default();
        assert_eq!(view.mode(), None);
        let changed = |agent: &str, mode| Event::ModeChanged {
            agent: agent.into(),
            mode,
        };
        view.follow(&changed("main", PermissionMode::AcceptEdits));
        view.follow(&changed("a1", PermissionMode::Plan));
        assert_eq!(view.mode(), Some(PermissionMode::AcceptEdits));
    }
}
