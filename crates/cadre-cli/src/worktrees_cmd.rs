//! `cadre worktrees list | diff ID | merge ID | rm ID`, and `cadre --worktree
//! [NAME]`, which starts the main session in a worktree of its own.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use cadre_core::worktrees::{Ending, Repository, Worktree, WorktreeError};
use clap::{Args, Subcommand};

use crate::UsageError;

/// Arguments of `cadre worktrees`.
#[derive(Debug, Args)]
pub struct WorktreesArgs {
    #[command(subcommand)]
    command: WorktreesCommand,
}

#[derive(Debug, Subcommand)]
enum WorktreesCommand {
    /// The worktrees agents left, with their branches and changes.
    List,
    /// Everything one worktree changed since it started, uncommitted work included.
    Diff {
        /// The worktree's name (the agent id in its report).
        id: String,
    },
    /// Merges a worktree's branch into this checkout (its uncommitted work is committed first).
    Merge {
        /// The worktree's name.
        id: String,
    },
    /// Removes a worktree and deletes its branch.
    Rm {
        /// The worktree's name.
        id: String,
    },
}

/// Runs `cadre worktrees …`.
pub fn run(args: WorktreesArgs) -> Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let repo = Repository::discover(&cwd).map_err(usage)?;
    match args.command {
        WorktreesCommand::List => {
            let listed = repo.list().map_err(usage)?;
            if listed.is_empty() {
                println!("No cadre worktrees in {}.", repo.top.display());
            }
            for w in listed {
                let changes = match w.changes {
                    Some(c) => format!(
                        "{} commit(s) ahead, {} file(s) not committed",
                        c.commits, c.uncommitted
                    ),
                    None => "changes unknown".into(),
                };
                println!(
                    "{:<18} {:<24} {} · {}",
                    w.name,
                    w.branch,
                    changes,
                    w.path.display()
                );
            }
        }
        WorktreesCommand::Diff { id } => {
            print!("{}", repo.open(&id).map_err(usage)?.diff()?);
        }
        WorktreesCommand::Merge { id } => {
            let said = repo.open(&id).map_err(usage)?.merge().map_err(usage)?;
            print!("{said}");
            println!(
                "merged {}{id}; `cadre worktrees rm {id}` removes the worktree",
                cadre_core::worktrees::BRANCH_PREFIX
            );
        }
        WorktreesCommand::Rm { id } => {
            let wt = repo.open(&id).map_err(usage)?;
            wt.remove()?;
            println!("removed {} and branch {}", wt.path.display(), wt.branch);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The main session's worktree (`--worktree [NAME]`), made before anything
/// reads the folder; the process then works in it.
pub struct SessionWorktree(Worktree);

impl SessionWorktree {
    /// Makes the worktree `name` (a fresh name when empty) from the current
    /// folder's HEAD and moves the process into it.
    pub fn enter(name: &str) -> Result<SessionWorktree> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let repo = Repository::discover(&cwd).map_err(usage)?;
        let name = if name.is_empty() {
            cadre_core::subagents::new_agent_id()
        } else {
            name.to_string()
        };
        let wt = repo.add(&name).map_err(usage)?;
        let dir: PathBuf = wt.counterpart(&cwd);
        std::env::set_current_dir(&dir)
            .with_context(|| format!("cannot enter the worktree {}", dir.display()))?;
        eprintln!(
            "cadre: working in the worktree {} on branch {}",
            wt.path.display(),
            wt.branch
        );
        if wt.left_uncommitted {
            eprintln!(
                "cadre: the uncommitted changes of {} are not in it (it starts from HEAD)",
                repo.checkout.display()
            );
        }
        Ok(SessionWorktree(wt))
    }

    /// Ends it with the session: removed without changes, kept with them.
    pub fn leave(self) {
        let wt = self.0;
        // Out of the folder first: removing it is removing the process's cwd.
        let _ = std::env::set_current_dir(&wt.repository.checkout);
        let ending = wt.finish();
        match ending {
            Ending::Removed => eprintln!("cadre: worktree {} removed (no changes)", wt.name),
            Ending::Kept(_) => eprintln!("cadre: worktree {}", wt.describe(&ending)),
        }
    }
}

/// A worktree error the user can fix is a usage error (exit code 2).
fn usage(e: WorktreeError) -> anyhow::Error {
    match e {
        WorktreeError::Io(_) | WorktreeError::NoGit(_) => anyhow::Error::new(e),
        other => UsageError(other.to_string()).into(),
    }
}
