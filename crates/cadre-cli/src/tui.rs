//! `cadre` with no subcommand on a terminal: the full-screen front end
//! (crate `cadre-tui`). This decides when it is used and opens the session
//! for it the way the line front end does (same flags, `--resume`,
//! `--agent`); everything on screen is the TUI crate's.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};
use cadre_core::driver::{Lifetime, PendingResume};
use cadre_core::protocol::EventSink;
use cadre_tui::app::SessionInfo;

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

/// Runs the session in the TUI until the user leaves.
pub async fn run(
    model: &ModelArgs,
    perms: &PermissionArgs,
    resume: &ResumeArgs,
    agent_args: &AgentArgs,
) -> Result<ExitCode> {
    let runtime = setup::prepare(model, perms, agent_args)?;
    let (sink, rx) = EventSink::channel();
    let accept_unknown = match resume.resume.as_deref() {
        Some(id) if !resume.accept_unknown => confirm_resume(&runtime.home, id).await?,
        _ => resume.accept_unknown,
    };
    let mut open = sessions::open(
        &runtime,
        resume.resume.as_deref(),
        accept_unknown,
        None,
        &sink,
    )
    .await?;
    let (session, handle) = runtime
        .open_session(
            &open.id,
            open.log.clone(),
            std::mem::take(&mut open.messages),
            runtime.warnings.clone(),
            sink,
            true,
            Lifetime::UntilShutdown,
        )
        .await?;
    crate::signals::background_on_sigusr1(handle.clone());
    let info = SessionInfo {
        model: runtime.client.config().model.clone(),
        permission_mode: runtime.policy.mode.to_string(),
        cwd: shown_path(&runtime.cwd),
        git_branch: git_branch(&runtime.cwd),
    };
    let session = tokio::spawn(session.run());
    let history = cadre_tui::history::history_path(&runtime.home, &runtime.cwd);
    let exit = cadre_tui::run(handle.clone(), rx, info, Some(history)).await;
    // Whatever way the TUI ended, the session ends with it.
    handle.submit(cadre_core::protocol::Op::Shutdown);
    let exit = exit?;
    if exit == cadre_tui::Exit::Left {
        // Its events have ended: it is finishing, not waiting on work.
        let _ = session.await;
    }
    drop(open);
    Ok(match exit {
        cadre_tui::Exit::Left | cadre_tui::Exit::LeftAtOnce => ExitCode::SUCCESS,
        cadre_tui::Exit::Signal(code) => ExitCode::from(code),
    })
}

/// For `--resume` of a session whose calls may have run: lists them and
/// asks on the plain terminal (before the full screen starts) whether to go
/// on; true when the user agrees. Nothing to ask is false: nothing to accept.
async fn confirm_resume(home: &Path, id: &str) -> Result<bool> {
    // Any problem loading is reported by the real open that follows.
    let Ok(pending) = PendingResume::load(home, id, &EventSink::discard()) else {
        return Ok(false);
    };
    let calls: Vec<String> = pending
        .may_have_run()
        .iter()
        .map(|c| format!("  {} ({})", c.tool, c.call_id))
        .collect();
    drop(pending);
    if calls.is_empty() {
        return Ok(false);
    }
    eprintln!(
        "cadre stopped while these calls were running; they may or may not have run:\n{}\nThey will be recorded as `unknown` and not run again.",
        calls.join("\n")
    );
    eprint!("Continue the session? [y/N] ");
    let _ = std::io::stderr().flush();
    let answer = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).map(|_| line)
    })
    .await??;
    if !matches!(answer.trim(), "y" | "Y" | "yes") {
        bail!(UsageError("not resumed".into()));
    }
    Ok(true)
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
