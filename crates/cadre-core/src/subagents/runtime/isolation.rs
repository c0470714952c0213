//! `isolation: worktree`: a child working in a git worktree of its own. Its
//! folder, project root and sandbox move there; its worktree ends with it
//! (removed without changes, kept with them) whichever way it ends.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::permissions::PermissionPolicy;
use crate::sandbox::SandboxPolicy;
use crate::tools::{ToolContext, ToolOutput};
use crate::worktrees::{Repository, Worktree};

/// The file in a worktree child's task folder that names its worktree.
const RECORD_FILE: &str = "worktree";

/// For a task found `lost` at start-up (its cadre process died): its
/// worktree, when it had one, is removed with its branch if it holds no
/// changes and kept otherwise. Returns what became of it, for a warning.
pub async fn settle_lost_worktree(output_path: &Path) -> Option<String> {
    let record = output_path.parent()?.join(RECORD_FILE);
    let text = std::fs::read_to_string(&record).ok()?;
    let path = std::path::PathBuf::from(text.lines().next()?.trim());
    let name = path.file_name()?.to_str()?.to_string();
    if !path.parent()?.ends_with(crate::worktrees::WORKTREES_DIR) {
        return None;
    }
    let top = path.parent()?.parent()?.parent()?.to_path_buf();
    let branch = format!("{}{name}", crate::worktrees::BRANCH_PREFIX);
    let shown = path.display().to_string();
    let settled = tokio::task::spawn_blocking(move || {
        Repository::discover(&top).and_then(|repo| repo.settle_lost(&name))
    })
    .await
    .ok()?;
    let said = match settled {
        Ok(crate::worktrees::Ending::Removed) => {
            format!("its worktree {shown} had no changes and was removed with its branch {branch}")
        }
        Ok(crate::worktrees::Ending::Kept(_)) => format!(
            "its worktree {shown} (branch {branch}) holds changes and was kept; see `cadre worktrees list`"
        ),
        // Removed by hand since: nothing left to settle.
        Err(crate::worktrees::WorktreeError::Unknown(_)) => return None,
        Err(e) => format!("its worktree {shown} (branch {branch}) was kept: {e}"),
    };
    // Settled once: a later sweep has nothing more to say.
    let _ = std::fs::remove_file(&record);
    Some(said)
}

/// A child's worktree, ended once: by [`ChildWorktree::end`] after its run,
/// or when dropped (a child that never ran).
pub(super) struct ChildWorktree {
    worktree: Option<Worktree>,
}

impl ChildWorktree {
    /// Makes the worktree `name` for a child started from `cwd`; the error
    /// is the call's result (nothing starts).
    pub(super) async fn add(cwd: &Path, name: &str, who: &str) -> Result<Self, ToolOutput> {
        let (cwd, name) = (cwd.to_path_buf(), name.to_string());
        let made = tokio::task::spawn_blocking(move || {
            Repository::discover(&cwd).and_then(|repo| repo.add(&name))
        })
        .await;
        match made {
            Ok(Ok(worktree)) => Ok(ChildWorktree {
                worktree: Some(worktree),
            }),
            Ok(Err(e)) => Err(ToolOutput::error(format!(
                "{who} was not started: isolation \"worktree\": {e}"
            ))),
            Err(e) => Err(ToolOutput::error(format!(
                "{who} was not started: isolation \"worktree\": {e}"
            ))),
        }
    }

    /// The worktree again for a resumed child whose folder was `project`:
    /// reopened when it is still there, made again (same name, from HEAD)
    /// when it was removed; `None` when `project` is no cadre worktree.
    pub(super) async fn for_resumed(project: &Path) -> Option<Result<Self, String>> {
        let name = project.file_name()?.to_str()?.to_string();
        let top = project.parent()?.parent()?.parent()?.to_path_buf();
        if !project.parent()?.ends_with(crate::worktrees::WORKTREES_DIR) {
            return None;
        }
        let exists = project.exists();
        let made = tokio::task::spawn_blocking(move || {
            let repo = Repository::discover(&top)?;
            if exists {
                repo.open(&name)
            } else {
                repo.add(&name)
            }
        })
        .await;
        Some(match made {
            Ok(Ok(worktree)) => Ok(ChildWorktree {
                worktree: Some(worktree),
            }),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(e.to_string()),
        })
    }

    /// [`ChildWorktree::for_resumed`], named in the resumed child's task
    /// folder (beside `output_path`) as a new child's is.
    pub(super) async fn resumed_for(
        project: &Path,
        output_path: &Path,
    ) -> Result<Option<Self>, String> {
        let worktree = Self::for_resumed(project).await.transpose()?;
        if let Some(w) = &worktree {
            w.record(output_path);
        }
        Ok(worktree)
    }

    /// The worktree.
    pub(super) fn worktree(&self) -> Option<&Worktree> {
        self.worktree.as_ref()
    }

    /// Names the worktree in the child's task folder (beside its
    /// `output_path`), so that the start-up sweep of a later process can
    /// settle it if this one dies. Best effort.
    pub(super) fn record(&self, output_path: &Path) {
        if let Some((path, bytes)) = self.record_file(output_path) {
            let _ = std::fs::write(path, bytes);
        }
    }

    /// The file [`Self::record`] writes, as path and bytes.
    pub(super) fn record_file(&self, output_path: &Path) -> Option<(PathBuf, Vec<u8>)> {
        let (wt, dir) = (self.worktree.as_ref()?, output_path.parent()?);
        Some((
            dir.join(RECORD_FILE),
            format!("{}\n", wt.path.display()).into_bytes(),
        ))
    }

    /// Moves a child's folder, project and sandbox into the worktree.
    pub(super) fn confine(
        &self,
        ctx: &mut ToolContext,
        policy: &mut PermissionPolicy,
        sandbox: &mut Option<Arc<SandboxPolicy>>,
    ) {
        let Some(wt) = &self.worktree else { return };
        ctx.cwd = wt.counterpart(&ctx.cwd);
        // The editor holds the main checkout's buffers, not the worktree's files.
        ctx.editor_files = None;
        ctx.editor_terminal = None;
        // A path into the main checkout is outside the project for it.
        policy.project_dir = wt.path.clone();
        if let Some(s) = sandbox.as_mut() {
            let mut moved = SandboxPolicy::clone(s);
            moved.project_dir = wt.path.clone();
            moved.git_writable = wt.git_writable();
            *s = Arc::new(moved);
        }
    }

    /// What its system prompt says of it: where it works and why.
    pub(super) fn prompt_section(&self) -> String {
        let Some(wt) = &self.worktree else {
            return String::new();
        };
        let mut text = format!(
            "# Worktree\n\nYou work in your own git worktree, {} (branch {}), made from the main checkout {} at its HEAD. Read, edit and run commands only there; the main checkout is outside your project. Paths under {} that you see elsewhere correspond to the same paths under {}. Your changes stay on your branch, committed or not; the user merges them.",
            wt.path.display(),
            wt.branch,
            wt.repository.top.display(),
            wt.repository.top.display(),
            wt.path.display(),
        );
        if wt.left_uncommitted {
            text.push_str(
                " The main checkout had uncommitted changes; they are not in your worktree.",
            );
        }
        text
    }

    /// Ends it after the child's run: the report's `worktree:` line.
    pub(super) async fn end(mut self) -> Option<String> {
        let worktree = self.worktree.take()?;
        tokio::task::spawn_blocking(move || {
            let ending = worktree.finish();
            worktree.describe(&ending)
        })
        .await
        .ok()
    }
}

impl Drop for ChildWorktree {
    fn drop(&mut self) {
        if let Some(worktree) = self.worktree.take() {
            worktree.finish();
        }
    }
}
