//! Git worktrees for isolated agents (DESIGN 7.11): a child with
//! `isolation: worktree` (or a session started with `--worktree`) works in
//! `git worktree add .cadre/worktrees/<name>` on a new branch `cadre/<name>`
//! from the current HEAD. At its end a worktree without changes is removed
//! with its branch; one with changes, committed or not, is kept.
//!
//! Everything goes through the `git` binary. cadre's own git commands run
//! with hooks and the file-system monitor off (an agent may have written
//! files git reads), and the commands that change the repository's worktree
//! list or branches are serialised: concurrent `git worktree add` calls
//! contend for the same lock files.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// Where worktrees live, relative to the main checkout's top.
pub const WORKTREES_DIR: &str = ".cadre/worktrees";
/// The prefix of every worktree's branch.
pub const BRANCH_PREFIX: &str = "cadre/";

/// One git command at a time changes worktrees or branches in this process.
static REPOSITORY_CHANGES: Mutex<()> = Mutex::new(());

/// Variables that would point git at another repository than the one asked.
const GIT_LOCATION_VARS: [&str; 8] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
];

/// Why a worktree could not be made, found or changed.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    /// The folder is not inside a git repository.
    #[error("{0} is not inside a git repository, and a worktree needs one")]
    NotARepository(PathBuf),
    /// `git` could not be started.
    #[error("git cannot run here: {0}")]
    NoGit(io::Error),
    /// A git command failed.
    #[error("`git {command}` failed: {stderr}")]
    Git {
        /// The command's arguments.
        command: String,
        /// What git said.
        stderr: String,
    },
    /// No cadre worktree has this name.
    #[error("there is no cadre worktree named {0} (see `cadre worktrees list`)")]
    Unknown(String),
    /// A name git or cadre cannot use.
    #[error("{0:?} cannot name a worktree: use letters, digits, `-`, `_` and `.`")]
    BadName(String),
    /// The operation was refused, for the reason given.
    #[error("{0}")]
    Refused(String),
    /// A file-system error.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// A git repository, as seen from a folder in it.
#[derive(Debug, Clone)]
pub struct Repository {
    /// The main checkout's top folder (where `.cadre/worktrees/` goes), canonical.
    pub top: PathBuf,
    /// The top of the checkout the folder is in (the main one, or a linked worktree).
    pub checkout: PathBuf,
    /// The git directory shared by all its worktrees, canonical.
    pub common_dir: PathBuf,
}

/// A cadre worktree: its folder, its branch and where it started.
#[derive(Debug, Clone)]
pub struct Worktree {
    /// Its name: the agent id, or the name given to `--worktree`.
    pub name: String,
    /// Its folder, canonical.
    pub path: PathBuf,
    /// Its branch, `cadre/<name>`.
    pub branch: String,
    /// The commit it started from.
    pub base: String,
    /// Whether the checkout it was made from had uncommitted changes then
    /// (they are not in the worktree).
    pub left_uncommitted: bool,
    /// Its own git directory (`<common>/worktrees/<name>`).
    pub git_dir: PathBuf,
    /// The repository it belongs to.
    pub repository: Repository,
}

/// How a worktree ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// No changes: the worktree and its branch are gone.
    Removed,
    /// Changes: kept, with what they are.
    Kept(Changes),
}

/// A kept worktree's changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changes {
    /// Commits on its branch since it started.
    pub commits: usize,
    /// Files changed but not committed (untracked ones included).
    pub uncommitted: usize,
}

/// One line of `cadre worktrees list`.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The worktree's name.
    pub name: String,
    /// Its folder.
    pub path: PathBuf,
    /// Its branch.
    pub branch: String,
    /// Its changes against the main checkout's HEAD, when they can be read.
    pub changes: Option<Changes>,
}

impl Repository {
    /// The repository `dir` is in.
    pub fn discover(dir: &Path) -> Result<Repository, WorktreeError> {
        let out =
            git(dir, ["rev-parse", "--show-toplevel", "--git-common-dir"]).map_err(
                |e| match e {
                    WorktreeError::Git { .. } => WorktreeError::NotARepository(dir.to_path_buf()),
                    other => other,
                },
            )?;
        let mut lines = out.lines();
        let (Some(checkout), Some(common)) = (lines.next(), lines.next()) else {
            return Err(WorktreeError::NotARepository(dir.to_path_buf()));
        };
        let checkout = PathBuf::from(checkout).canonicalize()?;
        let common_dir = checkout.join(common).canonicalize().or_else(|_| {
            // `--git-common-dir` is relative to the folder asked from.
            dir.join(common).canonicalize()
        })?;
        // The main checkout holds the common git dir as its `.git`; a bare
        // repository has none, and then the linked checkout is the top.
        let top = match common_dir.file_name() {
            Some(n) if n == ".git" => common_dir
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| checkout.clone()),
            _ => checkout.clone(),
        };
        Ok(Repository {
            top,
            checkout,
            common_dir,
        })
    }

    /// The folder of the worktree named `name`.
    pub fn worktree_path(&self, name: &str) -> PathBuf {
        self.top.join(WORKTREES_DIR).join(name)
    }

    /// Whether the checkout has changes git would show (untracked files
    /// included; ignored ones not).
    pub fn has_uncommitted(&self) -> Result<bool, WorktreeError> {
        Ok(!git(&self.checkout, ["status", "--porcelain"])?
            .trim()
            .is_empty())
    }

    /// Adds the worktree `name` on a new branch `cadre/<name>` from the
    /// checkout's HEAD.
    pub fn add(&self, name: &str) -> Result<Worktree, WorktreeError> {
        check_name(name)?;
        let path = self.worktree_path(name);
        let branch = format!("{BRANCH_PREFIX}{name}");
        let base = git(&self.checkout, ["rev-parse", "--verify", "HEAD^{commit}"])
            .map_err(|_| {
                WorktreeError::Refused(format!(
                    "{} has no commit yet, and a worktree starts from HEAD",
                    self.checkout.display()
                ))
            })?
            .trim()
            .to_string();
        let left_uncommitted = self.has_uncommitted()?;
        let parent = self.top.join(WORKTREES_DIR);
        std::fs::create_dir_all(&parent)?;
        // Worktrees are never part of the main checkout's changes.
        let ignore = parent.join(".gitignore");
        if !ignore.exists() {
            std::fs::write(&ignore, "*\n")?;
        }
        let path_arg = path.as_os_str();
        with_repository_lock(|| {
            git(
                &self.checkout,
                [
                    OsStr::new("worktree"),
                    OsStr::new("add"),
                    OsStr::new("--quiet"),
                    OsStr::new("-b"),
                    OsStr::new(&branch),
                    path_arg,
                    OsStr::new(&base),
                ],
            )
        })?;
        let path = path.canonicalize()?;
        let git_dir = PathBuf::from(git(&path, ["rev-parse", "--absolute-git-dir"])?.trim());
        Ok(Worktree {
            name: name.to_string(),
            path,
            branch,
            base,
            left_uncommitted,
            git_dir,
            repository: self.clone(),
        })
    }

    /// The cadre worktree `name`, which must exist.
    pub fn open(&self, name: &str) -> Result<Worktree, WorktreeError> {
        check_name(name)?;
        let path = self.worktree_path(name);
        let branch = format!("{BRANCH_PREFIX}{name}");
        let listed = self.list()?;
        if !listed.iter().any(|l| l.name == name) {
            return Err(WorktreeError::Unknown(name.to_string()));
        }
        let path = path.canonicalize()?;
        let git_dir = PathBuf::from(git(&path, ["rev-parse", "--absolute-git-dir"])?.trim());
        let base = git(&self.top, ["merge-base", "HEAD", &branch])?
            .trim()
            .to_string();
        Ok(Worktree {
            name: name.to_string(),
            path,
            branch,
            base,
            left_uncommitted: false,
            git_dir,
            repository: self.clone(),
        })
    }

    /// Whether the cadre worktree `name` still has its branch `cadre/<name>`.
    pub fn has_branch(&self, name: &str) -> bool {
        check_name(name).is_ok()
            && git(
                &self.top,
                [
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    format!("refs/heads/{BRANCH_PREFIX}{name}^{{commit}}").as_str(),
                ],
            )
            .is_ok()
    }

    /// Writes the branches of the cadre worktrees `names` (whole history,
    /// so a repository without the base commits can take them) to the
    /// bundle file `out`.
    pub fn bundle_branches(&self, names: &[String], out: &Path) -> Result<(), WorktreeError> {
        let mut args: Vec<std::ffi::OsString> = vec!["bundle".into(), "create".into()];
        args.push(out.as_os_str().into());
        for name in names {
            check_name(name)?;
            args.push(format!("refs/heads/{BRANCH_PREFIX}{name}").into());
        }
        git(&self.top, &args).map(|_| ())
    }

    /// Fetches the cadre worktree branches `names` from the bundle file
    /// `bundle` into the same branch names here. A branch that exists here
    /// is updated only when that is a fast-forward; nothing else (no tag,
    /// no other ref) is taken from the bundle.
    pub fn fetch_bundle(&self, bundle: &Path, names: &[String]) -> Result<(), WorktreeError> {
        let mut args: Vec<std::ffi::OsString> = vec![
            "fetch".into(),
            "--no-tags".into(),
            "--no-write-fetch-head".into(),
            "--quiet".into(),
        ];
        args.push(bundle.as_os_str().into());
        for name in names {
            check_name(name)?;
            args.push(
                format!("refs/heads/{BRANCH_PREFIX}{name}:refs/heads/{BRANCH_PREFIX}{name}").into(),
            );
        }
        with_repository_lock(|| git(&self.top, &args).map(|_| ()))
    }

    /// The cadre worktrees of this repository (those under `.cadre/worktrees/`).
    pub fn list(&self) -> Result<Vec<Listed>, WorktreeError> {
        let text = git(&self.top, ["worktree", "list", "--porcelain"])?;
        let root = self.top.join(WORKTREES_DIR);
        let mut out = Vec::new();
        for block in text.split("\n\n") {
            let mut path = None;
            let mut branch = None;
            for line in block.lines() {
                if let Some(p) = line.strip_prefix("worktree ") {
                    path = Some(PathBuf::from(p));
                } else if let Some(b) = line.strip_prefix("branch refs/heads/") {
                    branch = Some(b.to_string());
                }
            }
            let Some(path) = path else { continue };
            let Ok(rel) = path.strip_prefix(&root) else {
                continue;
            };
            let name = rel.display().to_string();
            let branch = branch.unwrap_or_else(|| "(detached)".into());
            let changes = self.changes_of(&path, &branch).ok();
            out.push(Listed {
                name,
                path,
                branch,
                changes,
            });
        }
        Ok(out)
    }

    /// Settles the worktree `name` of an agent that died with its cadre
    /// process: removed with its branch when it holds no changes, kept
    /// otherwise (and when its changes cannot be read).
    pub fn settle_lost(&self, name: &str) -> Result<Ending, WorktreeError> {
        check_name(name)?;
        let path = self.worktree_path(name);
        let branch = format!("{BRANCH_PREFIX}{name}");
        if !path.is_dir() {
            return Err(WorktreeError::Unknown(name.to_string()));
        }
        let changes = self.changes_of(&path, &branch)?;
        if changes.commits > 0 || changes.uncommitted > 0 {
            return Ok(Ending::Kept(changes));
        }
        remove_worktree(&self.top, &path, &branch)?;
        Ok(Ending::Removed)
    }

    /// Commits on `branch` not in the main checkout's HEAD, and files
    /// changed in `path` but not committed.
    fn changes_of(&self, path: &Path, branch: &str) -> Result<Changes, WorktreeError> {
        let range = format!("HEAD..{branch}");
        let commits = git(&self.top, ["rev-list", "--count", &range])?
            .trim()
            .parse()
            .unwrap_or(0);
        let uncommitted = git(path, ["status", "--porcelain", "--untracked-files=all"])?
            .lines()
            .count();
        Ok(Changes {
            commits,
            uncommitted,
        })
    }
}

impl Worktree {
    /// The folder in the worktree that corresponds to `dir` of the checkout
    /// it was made from (its top when `dir` has no counterpart).
    pub fn counterpart(&self, dir: &Path) -> PathBuf {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        match dir.strip_prefix(&self.repository.checkout) {
            Ok(rel) if !rel.as_os_str().is_empty() && self.path.join(rel).is_dir() => {
                self.path.join(rel)
            }
            _ => self.path.clone(),
        }
    }

    /// Its changes since it started.
    pub fn changes(&self) -> Result<Changes, WorktreeError> {
        let range = format!("{}..HEAD", self.base);
        let commits = git(&self.path, ["rev-list", "--count", &range])?
            .trim()
            .parse()
            .unwrap_or(0);
        let uncommitted = git(
            &self.path,
            ["status", "--porcelain", "--untracked-files=all"],
        )?
        .lines()
        .count();
        Ok(Changes {
            commits,
            uncommitted,
        })
    }

    /// Ends it: removed with its branch when nothing changed, kept otherwise.
    /// A worktree whose changes cannot be read is kept.
    pub fn finish(&self) -> Ending {
        match self.changes() {
            Ok(c) if c.commits == 0 && c.uncommitted == 0 => match self.remove() {
                Ok(()) => Ending::Removed,
                Err(_) => Ending::Kept(c),
            },
            Ok(c) => Ending::Kept(c),
            Err(_) => Ending::Kept(Changes {
                commits: 0,
                uncommitted: 0,
            }),
        }
    }

    /// Removes the worktree (whatever it holds) and deletes its branch.
    pub fn remove(&self) -> Result<(), WorktreeError> {
        remove_worktree(&self.repository.top, &self.path, &self.branch)
    }

    /// What a report says of it once it ended: where it is and on which
    /// branch, or that it is gone.
    pub fn describe(&self, ending: &Ending) -> String {
        let mut text = match ending {
            Ending::Removed => "removed: it had no changes".to_string(),
            Ending::Kept(c) => {
                let mut what = Vec::new();
                if c.commits > 0 {
                    what.push(plural(c.commits, "commit", "commits"));
                }
                if c.uncommitted > 0 {
                    what.push(format!(
                        "{} not committed",
                        plural(c.uncommitted, "changed file", "changed files")
                    ));
                }
                let what = if what.is_empty() {
                    "its changes could not be read".to_string()
                } else {
                    what.join(", ")
                };
                format!(
                    "{} on branch {} (kept: {what}; `cadre worktrees merge {}` brings it in)",
                    self.path.display(),
                    self.branch,
                    self.name
                )
            }
        };
        if self.left_uncommitted {
            text.push_str(
                "; the main checkout's uncommitted changes were not in this worktree (it started from HEAD)",
            );
        }
        text
    }

    /// The paths of the shared git directory a sandboxed command in this
    /// worktree must write for `git commit` to work: objects, its branch's
    /// ref and log folders, and its own git dir. Hooks and config are not
    /// among them.
    pub fn git_writable(&self) -> Vec<PathBuf> {
        commit_paths(&self.repository.common_dir, &self.git_dir)
    }

    /// The diff of everything it changed since it started, uncommitted work
    /// included, and the names of its untracked files.
    pub fn diff(&self) -> Result<String, WorktreeError> {
        let mut text = git(&self.path, ["diff", "--no-color", &self.base])?;
        let untracked = git(&self.path, ["ls-files", "--others", "--exclude-standard"])?;
        for file in untracked.lines() {
            text.push_str(&format!("untracked: {file}\n"));
        }
        Ok(text)
    }

    /// Merges its branch into the main checkout (a normal `git merge`),
    /// after committing work left uncommitted in it. Refused while the main
    /// checkout has uncommitted changes to tracked files.
    pub fn merge(&self) -> Result<String, WorktreeError> {
        let top = &self.repository.top;
        if !git(top, ["status", "--porcelain", "--untracked-files=no"])?
            .trim()
            .is_empty()
        {
            return Err(WorktreeError::Refused(format!(
                "{} has uncommitted changes; commit or stash them, then merge again",
                top.display()
            )));
        }
        let mut said = String::new();
        if self.changes()?.uncommitted > 0 {
            git(&self.path, ["add", "--all"])?;
            let message = format!("cadre: work of agent {} left uncommitted", self.name);
            git(
                &self.path,
                ["commit", "--quiet", "--no-verify", "-m", &message],
            )?;
            said.push_str(&format!(
                "committed the worktree's uncommitted changes on {}\n",
                self.branch
            ));
        }
        let out = run_git(top, ["merge", "--no-edit", &self.branch], true)?;
        said.push_str(&out);
        Ok(said)
    }
}

/// Removes the worktree at `path` (whatever it holds) and deletes `branch`.
fn remove_worktree(top: &Path, path: &Path, branch: &str) -> Result<(), WorktreeError> {
    with_repository_lock(|| {
        git(
            top,
            [
                OsStr::new("worktree"),
                OsStr::new("remove"),
                OsStr::new("--force"),
                OsStr::new("--force"),
                path.as_os_str(),
            ],
        )?;
        git(top, ["branch", "-D", "--quiet", branch])
    })?;
    Ok(())
}

/// [`Worktree::git_writable`] for a folder in a cadre worktree (a session
/// started with `--worktree`); empty anywhere else.
pub fn git_writable_at(dir: &Path) -> Vec<PathBuf> {
    // Only a folder inside `<top>/.cadre/worktrees/<name>` can be in one:
    // anywhere else no git process is started (every session start asks).
    let real = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let in_worktrees = [dir, real.as_path()].iter().any(|d| {
        d.ancestors()
            .filter_map(Path::parent)
            .any(|parent| parent.ends_with(WORKTREES_DIR))
    });
    if !in_worktrees {
        return Vec::new();
    }
    let Ok(repo) = Repository::discover(dir) else {
        return Vec::new();
    };
    if repo.checkout.parent() != Some(repo.top.join(WORKTREES_DIR).as_path()) {
        return Vec::new();
    }
    match git(&repo.checkout, ["rev-parse", "--absolute-git-dir"]) {
        Ok(git_dir) => commit_paths(&repo.common_dir, Path::new(git_dir.trim())),
        Err(_) => Vec::new(),
    }
}

/// What a commit on a `cadre/` branch in the worktree whose git dir is
/// `git_dir` writes in the shared git dir `common`, where present.
fn commit_paths(common: &Path, git_dir: &Path) -> Vec<PathBuf> {
    let mut paths = vec![
        common.join("objects"),
        common.join("refs/heads/cadre"),
        common.join("logs/refs/heads/cadre"),
        git_dir.to_path_buf(),
    ];
    paths.retain(|p| p.exists());
    paths
}

/// Refuses names that git or a path could misread: a safe path segment (the
/// rule every name from a file follows) that git also takes as a branch name.
fn check_name(name: &str) -> Result<(), WorktreeError> {
    let fine = crate::path_segment::is_safe_segment(name)
        && !name.starts_with(['.', '-'])
        && !name.ends_with(".lock")
        && !name.contains("..");
    if fine {
        Ok(())
    } else {
        Err(WorktreeError::BadName(name.to_string()))
    }
}

/// Runs `f` holding this process's lock on repository changes, trying again
/// a few times when git reports another process's lock file.
fn with_repository_lock<T>(f: impl Fn() -> Result<T, WorktreeError>) -> Result<T, WorktreeError> {
    let _held = REPOSITORY_CHANGES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut tries = 0;
    loop {
        match f() {
            Err(WorktreeError::Git { stderr, .. }) if stderr.contains(".lock") && tries < 5 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(100 * tries));
            }
            other => return other,
        }
    }
}

/// Runs one of cadre's own git commands in `dir`: hooks and the file-system
/// monitor off, no prompts, stdout back as text.
fn git<I, S>(dir: &Path, args: I) -> Result<String, WorktreeError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run_git(dir, args, false)
}

/// Runs git in `dir`; `as_user` keeps the repository's hooks (a merge the
/// user asked for), otherwise they are off.
fn run_git<I, S>(dir: &Path, args: I, as_user: bool) -> Result<String, WorktreeError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(|a| a.as_ref().into()).collect();
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .stdin(Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C");
    for var in GIT_LOCATION_VARS {
        cmd.env_remove(var);
    }
    if !as_user {
        cmd.args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
        ]);
    }
    cmd.args(&args);
    let out = cmd.output().map_err(WorktreeError::NoGit)?;
    if out.status.success() {
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        if as_user {
            text.push_str(&String::from_utf8_lossy(&out.stderr));
        }
        Ok(text)
    } else {
        Err(WorktreeError::Git {
            command: args
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

#[cfg(test)]
mod tests;
