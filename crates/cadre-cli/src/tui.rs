//! `cadre` with no subcommand on a terminal: the full-screen front end
//! (crate `cadre-tui`). This decides when it is used and opens the session
//! for it the way the line front end does (same flags, `--resume`,
//! `--agent`); everything on screen is the TUI crate's.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use std::sync::{Arc, Mutex};

use anyhow::Result;
use cadre_core::driver::{Lifetime, OpenedLog, SessionHandle};
use cadre_core::protocol::{Event, EventSink, Op};
use cadre_core::session::{list_sessions, session_path, utc_datetime};
use cadre_tui::app::SessionInfo;
use cadre_tui::host::{HostEnd, HostReply, HostRequest, SessionSwitch};
use cadre_tui::panes::sessions::{ResumeConfirm, SessionPicker, SessionRow};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::commands::{self, Action, Command, CommandContext, SessionView};
use crate::{AgentArgs, ModelArgs, PermissionArgs, ResumeArgs, UsageError, sessions, setup};

/// True when the full-screen front end should run: not turned off with
/// `--no-tui`, stdin and stdout both terminals, and a terminal that can
/// draw (`TERM` is not `dumb`).
pub fn wanted(no_tui: bool) -> bool {
    !no_tui
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal()
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// Runs sessions in the TUI until the user leaves (`/clear` and `/resume ID`
/// go on in another session in the same screen).
pub async fn run(
    model: &ModelArgs,
    perms: &PermissionArgs,
    resume: &ResumeArgs,
    agent_args: &AgentArgs,
    prompt: Option<String>,
) -> Result<ExitCode> {
    setup::ask_trust_if_needed(perms)?;
    let runtime = setup::prepare(model, perms, agent_args)?;
    let (sink, rx) = EventSink::channel();
    let choice = crate::session_choice::choose(&runtime, resume)?;
    let open = match &choice {
        // Asked on the plain terminal: the full screen has not started yet.
        crate::session_choice::SessionChoice::Resume { id, fork: None } => {
            sessions::resume_asking(&runtime, id, &sink, |calls| async move {
                resume.accept_unknown || confirm_resume(calls).await
            })
            .await?
            .ok_or_else(|| UsageError("not resumed".into()))?
        }
        // The picker opens in the full screen, over a new session.
        crate::session_choice::SessionChoice::Pick => {
            crate::session_choice::open(
                &runtime,
                &crate::session_choice::SessionChoice::New(None),
                false,
                None,
                &sink,
            )
            .await?
        }
        other => {
            crate::session_choice::open(&runtime, other, resume.accept_unknown, None, &sink).await?
        }
    };
    let warnings = runtime.warnings.clone();
    // Only the session the user started, and only when new: a resumed one
    // had its first turn, and `/clear` is the user's own fresh start.
    // A prompt given on the command line is the first message, after a
    // new session's `initialPrompt` (as `exec` puts them).
    let initial = runtime.initial_prompt.clone().filter(|_| !choice.resumes());
    let first_message = match (initial, prompt) {
        _ if choice == crate::session_choice::SessionChoice::Pick => Some("/resume".to_string()),
        (Some(first), Some(prompt)) => Some(format!("{first}\n\n{prompt}")),
        (first, prompt) => prompt.or(first),
    };
    let (tui_end, host_end) = cadre_tui::host::channel();
    let mut host = TuiHost {
        model,
        perms,
        agents: agent_args,
        runtime,
        next_model: None,
        view: Arc::new(Mutex::new(SessionView::default())),
        running: None,
        shown: Arc::default(),
        replies: host_end.replies.clone(),
    };
    let first = host.start(open, sink, rx, warnings).await?;
    // SIGUSR1 backgrounds the batch of whichever session is shown then.
    let shown = host.shown.clone();
    crate::signals::on_sigusr1(move || {
        if let Some(handle) = shown.lock().ok().and_then(|h| h.clone()) {
            handle.submit(Op::BackgroundBatch);
        }
        true
    });
    let history = cadre_tui::history::history_path(&host.runtime.home, &host.runtime.cwd);
    let exit = {
        let tui = cadre_tui::run(
            first.handle,
            first.events,
            first.info,
            Some(history),
            tui_end,
            first_message,
            host.runtime.skills.menu(),
        );
        let serve = host.serve(host_end);
        tokio::pin!(tui, serve);
        let mut served = false;
        loop {
            tokio::select! {
                exit = &mut tui => break exit,
                () = &mut serve, if !served => served = true,
            }
        }
    };
    // Whatever way the TUI ended, the session ends with it.
    let Some(running) = host.running.take() else {
        return Ok(ExitCode::SUCCESS);
    };
    running.handle.submit(Op::Shutdown);
    let exit = exit?;
    if exit == cadre_tui::Exit::Left {
        // Its events have ended: it is finishing, not waiting on work.
        let _ = running.task.await;
    }
    drop(running.open);
    Ok(match exit {
        cadre_tui::Exit::Left | cadre_tui::Exit::LeftAtOnce => ExitCode::SUCCESS,
        cadre_tui::Exit::Signal(code) => ExitCode::from(code),
    })
}

/// The session shown now.
struct Running {
    handle: SessionHandle,
    task: tokio::task::JoinHandle<()>,
    /// Its log and lock: dropped once it has ended, so it can be resumed.
    open: OpenedLog,
}

/// The binary's side of the TUI: runs the commands that need the runtime
/// (definitions, settings, other sessions) and starts the sessions.
struct TuiHost<'a> {
    model: &'a ModelArgs,
    perms: &'a PermissionArgs,
    agents: &'a AgentArgs,
    runtime: cadre_core::driver::SessionBuilder,
    /// The model `/model NAME` chose: this session's now, and the next ones'.
    next_model: Option<String>,
    /// What `/permissions` shows of the running session (rules granted in it).
    view: Arc<Mutex<SessionView>>,
    running: Option<Running>,
    /// The running session's handle, for the signal handler.
    shown: Arc<Mutex<Option<SessionHandle>>>,
    /// Replies sent while a command still runs (a switch says it has begun,
    /// a resume asks about calls that may have run).
    replies: UnboundedSender<HostReply>,
}

impl TuiHost<'_> {
    /// The running session's handle (a closed one between sessions is never seen:
    /// there is always one once the first started).
    fn current_handle(&self) -> Option<SessionHandle> {
        self.running.as_ref().map(|r| r.handle.clone())
    }

    /// Starts a session over an opened log; its events go to the TUI through
    /// a follower that keeps [`SessionView`] up to date.
    async fn start(
        &mut self,
        mut open: OpenedLog,
        sink: EventSink,
        mut rx: UnboundedReceiver<Event>,
        warnings: Vec<String>,
    ) -> Result<SessionSwitch> {
        let (session, handle) = self
            .runtime
            .open_session(
                &open.id,
                open.log.clone(),
                std::mem::take(&mut open.messages),
                warnings,
                sink,
                true,
                Lifetime::UntilShutdown,
            )
            .await?;
        let view = Arc::new(Mutex::new(SessionView::default()));
        self.view = view.clone();
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                if let Ok(mut v) = view.lock() {
                    v.follow(&event);
                }
                if tx.send(event).is_err() {
                    break;
                }
            }
        });
        let info = SessionInfo {
            model: self.runtime.client.config().model.clone(),
            permission_mode: self.runtime.policy.mode,
            cwd: shown_path(&self.runtime.cwd),
            git_branch: git_branch(&self.runtime.cwd),
            root: self.runtime.cwd.clone(),
            status_line: status_line_setup(&self.runtime, &open.id, open.log.path()),
        };
        let task = tokio::spawn(async move {
            let _ = session.run().await;
        });
        if let Ok(mut shown) = self.shown.lock() {
            *shown = Some(handle.clone());
        }
        self.running = Some(Running {
            handle: handle.clone(),
            task,
            open,
        });
        Ok(SessionSwitch {
            handle,
            events,
            info,
        })
    }

    /// Answers the TUI's requests until it goes.
    async fn serve(&mut self, mut end: HostEnd) {
        while let Some(request) = end.requests.recv().await {
            let mut replies = match request {
                HostRequest::Command(command) => self.command(command).await,
                HostRequest::Teammate(name) => vec![self.teammate_pane(&name).await],
            };
            // Messages typed meanwhile wait for this.
            replies.push(HostReply::Done);
            for reply in replies {
                if end.replies.send(reply).is_err() {
                    return;
                }
            }
        }
    }

    /// Runs one command into the TUI's replies.
    async fn command(&mut self, command: Command) -> Vec<HostReply> {
        if command == Command::Agents(None) {
            return vec![HostReply::Open(crate::tui_agents::pane(
                &self.runtime,
                self.perms,
            ))];
        }
        let Some(handle) = self.current_handle() else {
            return vec![HostReply::Warning("no session is running".into())];
        };
        if command == Command::Tasks(commands::TasksCommand::List) {
            let pane = cadre_tui::panes::tasks::TasksPane::new(handle, self.runtime.home.clone());
            return vec![HostReply::Open(Box::new(pane))];
        }
        if command == Command::Resume(None) {
            return vec![self.resume_picker(&handle)];
        }
        // A session that is not there is a warning here (the shared text is plain).
        if let Command::Resume(Some(id)) = &command
            && id != handle.session_id()
            && let Err(e) = session_path(&self.runtime.home, id)
        {
            return vec![HostReply::Warning(format!(
                "cannot resume {id}: {e}; still in session {}",
                handle.session_id()
            ))];
        }
        let view = self.view.lock().map(|v| v.clone()).unwrap_or_default();
        let ctx = CommandContext {
            runtime: &self.runtime,
            perms: self.perms,
            agents: self.agents,
            session: &handle,
            view: &view,
            next_model: self.next_model.as_deref(),
            full_screen: true,
        };
        // `/config` is a pane of the settings here.
        if command == Command::Config(commands::ConfigCommand::Show) {
            let pane = cadre_tui::panes::config::ConfigPane::new(
                commands::config::rows(&ctx),
                commands::config::user_file(&ctx).display().to_string(),
            );
            return vec![HostReply::Open(Box::new(pane))];
        }
        let outcome = commands::execute(command, &ctx).await;
        let text = HostReply::Text(outcome.text);
        match outcome.action {
            Action::None => vec![text],
            Action::Exit => vec![text, HostReply::Exit],
            Action::Submit(op) => vec![text, HostReply::Submit(op)],
            Action::Model { name, id } => {
                self.next_model = Some(name);
                vec![text, HostReply::Submit(Op::SetModel { model: id })]
            }
            Action::NewSession => self.switch(None, text).await,
            Action::Resume(id) => self.switch(Some(id), text).await,
        }
    }

    /// Teammate `name`'s live transcript, from its task's log (the pane
    /// sends what is typed to it).
    async fn teammate_pane(&self, name: &str) -> HostReply {
        let Some(handle) = self.current_handle() else {
            return HostReply::Warning("no session is running".into());
        };
        let rows = match handle.tasks().await {
            Ok(rows) => rows,
            Err(e) => return HostReply::Warning(format!("cannot read the tasks: {e}")),
        };
        // Newest first: a name used again is the latest teammate's.
        let Some(row) = rows.into_iter().find(|r| {
            r.kind == cadre_core::protocol::TaskKind::Subagent && r.name.as_deref() == Some(name)
        }) else {
            return HostReply::Warning(format!("teammate {name} has no task yet"));
        };
        let Some(log) = cadre_core::subagents::transcript::child_log_path(&self.runtime.home, &row)
        else {
            return HostReply::Warning(format!(
                "teammate {name} has no transcript yet (its log is not filed)"
            ));
        };
        let listing = cadre_tui::panes::tasks::poll_tasks(handle);
        HostReply::Open(Box::new(
            cadre_tui::panes::transcript::TranscriptPane::teammate(
                row,
                log,
                Some(listing),
                name.to_string(),
            ),
        ))
    }

    /// `/resume` with no id: a picker of the other sessions (this project's
    /// first); Enter there runs `/resume ID`.
    fn resume_picker(&self, handle: &SessionHandle) -> HostReply {
        let current = handle.session_id();
        let here = self.runtime.cwd.display().to_string();
        let rows: Vec<SessionRow> = list_sessions(&self.runtime.home)
            .into_iter()
            // Nothing to go back to in a session without a message.
            .filter(|s| s.id != current && !s.first_prompt.trim().is_empty())
            .map(|s| SessionRow {
                this_project: s.cwd == here,
                started: utc_datetime(s.started_ms),
                tokens: s.totals.tokens(),
                cost: s.totals.cost.map(|c| c.to_string()),
                id: s.id,
                started_ms: s.started_ms,
                first_prompt: s.first_prompt,
                cwd: s.cwd,
            })
            .collect();
        if rows.is_empty() {
            return HostReply::Text("no other sessions to resume".into());
        }
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        HostReply::Open(Box::new(SessionPicker::new(rows, now_ms)))
    }

    /// Ends the running session and starts the next (new, or `resume`'s);
    /// when the next cannot be opened the running one goes on.
    async fn switch(&mut self, resume: Option<String>, said: HostReply) -> Vec<HostReply> {
        let runtime = match &self.next_model {
            Some(name) => {
                let model = ModelArgs {
                    model: Some(name.clone()),
                    ..self.model.clone()
                };
                match setup::prepare(&model, self.perms, self.agents) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        return vec![HostReply::Warning(format!(
                            "cannot start a session with model {name}: {e:#}"
                        ))];
                    }
                }
            }
            None => None,
        };
        let (sink, rx) = EventSink::channel();
        let next_runtime = runtime.as_ref().unwrap_or(&self.runtime);
        let opened = match resume.as_deref() {
            None => sessions::open(next_runtime, None, false, None, &sink)
                .await
                .map(Some),
            Some(id) => {
                let replies = self.replies.clone();
                sessions::resume_asking(next_runtime, id, &sink, |calls| {
                    ask_in_pane(replies, id.to_string(), calls)
                })
                .await
            }
        };
        let open = match opened {
            Ok(Some(open)) => open,
            Ok(None) => {
                let current = self
                    .current_handle()
                    .map(|h| h.session_id().to_string())
                    .unwrap_or_default();
                return vec![HostReply::Text(format!(
                    "not resumed; still in session {current}"
                ))];
            }
            Err(e) => {
                let what = resume.map_or_else(
                    || "cannot start a new session".to_string(),
                    |id| format!("cannot resume {id}"),
                );
                let current = self
                    .current_handle()
                    .map(|h| h.session_id().to_string())
                    .unwrap_or_default();
                return vec![HostReply::Warning(format!(
                    "{what}: {e:#}; still in session {current}"
                ))];
            }
        };
        // Said before waiting for the old session to wind down (the screen
        // holds what is typed meanwhile for the next session), and again in
        // the next session's transcript, which starts empty.
        let again = match &said {
            HostReply::Text(text) => Some(HostReply::Text(text.clone())),
            _ => None,
        };
        let _ = self.replies.send(said);
        let _ = self.replies.send(HostReply::Switching);
        let mut replies = Vec::new();
        if let Some(old) = self.running.take() {
            old.handle.submit(Op::Shutdown);
            let _ = old.task.await;
            drop(old.open);
        }
        if let Some(runtime) = runtime {
            self.runtime = runtime;
            self.next_model = None;
        }
        match self.start(open, sink, rx, Vec::new()).await {
            Ok(next) => {
                replies.push(HostReply::Switched(Box::new(next)));
                replies.extend(again);
            }
            Err(e) => {
                replies.push(HostReply::Warning(format!(
                    "cannot start the session: {e:#}"
                )));
                replies.push(HostReply::Exit);
            }
        }
        replies
    }
}

/// For `--resume` of a session whose calls may have run: lists them and
/// asks on the plain terminal (before the full screen starts) whether to go
/// on; true when the user agrees.
async fn confirm_resume(calls: Vec<String>) -> bool {
    eprintln!(
        "cadre stopped while these calls were running; they may or may not have run:\n  {}\nThey will be recorded as `unknown` and not run again.",
        calls.join("\n  ")
    );
    eprint!("Continue the session? [y/N] ");
    let _ = std::io::stderr().flush();
    let answer = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).map(|_| line)
    })
    .await;
    matches!(answer, Ok(Ok(a)) if matches!(a.trim(), "y" | "Y" | "yes"))
}

/// For `/resume ID` of a session whose calls may have run: asks in a pane
/// over the transcript; true when the user agrees (a pane closed any
/// other way, or a screen that is gone, is a no).
async fn ask_in_pane(replies: UnboundedSender<HostReply>, id: String, calls: Vec<String>) -> bool {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let pane = ResumeConfirm::new(id, calls, tx);
    if replies.send(HostReply::Open(Box::new(pane))).is_err() {
        return false;
    }
    rx.await.unwrap_or(false)
}

/// The user's status line for session `id` (log at `transcript`), when
/// the settings that apply set one (a project's only in a trusted folder).
fn status_line_setup(
    runtime: &cadre_core::driver::SessionBuilder,
    id: &str,
    transcript: &Path,
) -> Option<cadre_tui::status_line::StatusLineSetup> {
    let line = runtime.settings.status_line()?;
    Some(cadre_tui::status_line::StatusLineSetup {
        command: line.command.clone(),
        padding: line.padding,
        refresh: line.refresh_interval_s.map(std::time::Duration::from_secs),
        project_dir: runtime.cwd.clone(),
        env: runtime
            .settings
            .env
            .iter()
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect(),
        session_id: id.to_string(),
        transcript_path: transcript.to_path_buf(),
        output_style: runtime
            .applied_style()
            .map_or_else(|| "default".to_string(), |s| s.name.clone()),
        version: env!("CARGO_PKG_VERSION").to_string(),
        context_window: runtime.session_context().profile.context_window,
        agent_name: runtime.main_type.clone(),
        worktree: None,
    })
}

/// `path` with the home directory shown as `~`.
fn shown_path(path: &Path) -> String {
    if let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from)
        && let Ok(rest) = path.strip_prefix(&home)
    {
        return if rest.as_os_str().is_empty() {
            "~".to_string()
        } else {
            format!("~/{}", rest.display())
        };
    }
    path.display().to_string()
}

/// The branch checked out in the repository holding `dir` (a short commit
/// id when detached), read from `.git/HEAD`; none outside a repository.
fn git_branch(dir: &Path) -> Option<String> {
    for at in dir.ancestors() {
        let dot_git = at.join(".git");
        let git_dir = if dot_git.is_dir() {
            dot_git
        } else if dot_git.is_file() {
            // A worktree or submodule: `gitdir: <path>`.
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let target = text.strip_prefix("gitdir:")?.trim();
            at.join(target)
        } else {
            continue;
        };
        let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
        let head = head.trim();
        return Some(match head.strip_prefix("ref: refs/heads/") {
            Some(branch) => branch.to_string(),
            None => head.chars().take(8).collect(),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_branch_comes_from_head_in_a_repository_or_a_worktree() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        assert_eq!(git_branch(root), None);
        std::fs::create_dir_all(root.join("repo/.git")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join("repo/.git/HEAD"), "ref: refs/heads/feature/x\n")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(root.join("repo/src/deep")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            git_branch(&root.join("repo/src/deep")).as_deref(),
            Some("feature/x")
        );
        std::fs::create_dir_all(root.join("wt")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(root.join("gitdirs/wt")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join("wt/.git"), "gitdir: ../gitdirs/wt\n")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join("gitdirs/wt/HEAD"), "0123456789abcdef\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(git_branch(&root.join("wt")).as_deref(), Some("01234567"));
    }
}
