//! Landlock sandbox for `Bash` commands.
//!
//! A sandboxed command may:
//! - write only inside the project directory and the temp dirs (`/tmp`,
//!   `/var/tmp`, `$TMPDIR`, `/dev/shm`), except the project's git hooks and
//!   config (see below), and to the usual character devices (`/dev/null`,
//!   `zero`, `full`, `random`, `urandom`, `tty`, `ptmx`); not the ptys in
//!   `/dev/pts`, which are other terminals (a command runs on pipes, and
//!   writing or reading another pty would inject or steal keystrokes);
//! - read and execute everything else, except the cadre data directory
//!   (`$CADRE_HOME`, default `~/.cadre`: keys and logs), which is neither
//!   readable nor writable, and the other devices in `/dev` (block devices,
//!   `/dev/mem`, input devices...), which it cannot open at all (`/dev` can
//!   still be listed; `/dev/stdout`, `/dev/fd/N` lead to its own descriptors);
//! - use sockets only when the policy allows network access. With the
//!   network off, Landlock refuses TCP connect and bind, and a seccomp filter
//!   ([`seccomp`]) refuses to create any socket (UDP, unix-domain, netlink,
//!   raw...), datagram `socketpair`s and io_uring; stream `socketpair`s stay
//!   (local plumbing: asyncio, multiprocessing). Landlock also scopes
//!   abstract unix sockets to the sandbox;
//! - signal only processes of its own sandbox (its children), not cadre nor
//!   anything else (Landlock signal scope, ABI 6), whatever the network;
//! - not push input into a terminal (`TIOCSTI`, `TIOCLINUX`, refused by the
//!   seccomp filter whatever the network).
//!
//! # Git hooks and config
//!
//! In a project with a `.git` directory, its `hooks/`, `config` (and
//! `config.worktree`, `commondir`, where present), those of its submodules
//! and linked worktrees under it, and a `.git` file (`gitdir:` pointer) are
//! read-only; the rest of `.git` stays writable so `git commit` works. Landlock
//! cannot express this (see [`git`]): the command runs in its own mount
//! namespace with read-only bind mounts of those paths. Where this process
//! cannot create mount namespaces (a container without `CAP_SYS_ADMIN`, user
//! namespaces disabled), the whole `.git` is read-only instead, and with it
//! the project's top level accepts no new entries (the same walk as for the
//! data dir below); [`SandboxPolicy::describe`] says so.
//!
//! # A project inside a temp dir
//!
//! The temp dirs are writable, and Landlock only adds rights: a project
//! under `/tmp` could be moved away and replaced by a copy with other hooks,
//! and a linked worktree's main checkout under `/tmp` would be writable
//! through the temp dir's grant. So, in the same mount namespace, the project
//! and its ancestors below the temp dir are bound onto themselves (they
//! cannot be renamed), and a linked worktree's main checkout is bound
//! read-only but for the worktree and [`SandboxPolicy::git_writable`]. Without
//! mount namespaces the main checkout is kept out of the temp dir's grant by
//! the walk below (the temp dir's own top level then takes no new entries).
//!
//! # How the data directory is hidden
//!
//! Landlock only grants rights, and a rule on a directory covers its whole
//! subtree, so "read everything but the data dir" cannot be one rule on `/`.
//! Instead [`SandboxPolicy::prepare`] walks the data dir's path from `/`: in
//! every ancestor directory it grants read (and execute) on each entry except
//! the one leading toward the data dir. The ancestors themselves get no right
//! at all: path lookup, `chdir` and `stat` are not restricted by Landlock, so
//! traversal still works, but listing them (`ls /`, `ls ~`) is denied.
//! Symbolic links among those entries are skipped (never followed): Landlock
//! checks the real location of a file, and every real location outside the
//! data dir is already covered by some other entry.
//!
//! The same walk applies to a writable root that contains the data dir (cadre
//! started in `$HOME` with the data dir at `~/.cadre`): its entries, except
//! the one toward the data dir, get read+write, but the directories along
//! that path (the project root itself, in that example) can neither be listed
//! nor get new entries.
//!
//! # Known limits
//!
//! - The entries of the ancestor directories are enumerated when the command
//!   is spawned: entries created there later are neither readable nor
//!   writable by the sandboxed command.
//! - The data dir always wins: if the project directory is inside the data
//!   dir, the project is not accessible at all (not even readable).
//! - Landlock does not restrict `stat`: the existence and metadata of the data
//!   dir (and of files in it whose names are known) remain visible.
//! - The data dir is hidden by its real location: another bind mount of it
//!   elsewhere, or a hard link to a file in it, is not hidden.
//! - Network rules need Landlock ABI 4 (Linux 6.7), truncation rules ABI 3
//!   (Linux 6.2), signal and abstract-socket scopes ABI 6 (Linux 6.12); on
//!   older kernels the sandbox is reported as partially enforced. Device
//!   ioctls are restricted from ABI 5. The seccomp filter knows the x86_64 and
//!   aarch64 system call tables; on other targets sockets other than TCP are
//!   not restricted (reported as partially enforced).
//! - System calls through another table (32-bit programs on a 64-bit
//!   kernel) kill the process, with the network on too: the filter cannot
//!   tell what they do. x32 system calls fail with `ENOSYS`.
//! - With the network off, local services reached over sockets are out of
//!   reach too: an ssh or gpg agent (signed commits), D-Bus, nscd, a test
//!   suite's own unix or UDP sockets. Such commands need the network on or
//!   the sandbox off.
//! - A command cannot signal processes of other sandboxed commands (each
//!   command is its own sandbox), such as a background task started earlier:
//!   stop those through cadre.
//! - GPUs and other devices are not accessible; run such commands with the
//!   sandbox off.
//! - Git: a command can still create new files in `.git` that git reads,
//!   such as `commondir` (which redirects git to another directory's config
//!   and hooks), can write hooks of nested repositories that are not
//!   submodules, can create a repository (a `.git`) where there is none, and
//!   can change files that `core.hooksPath` points to inside the project. A
//!   `.git` (or its `hooks`, `config`...) that is a symlink makes the whole
//!   `.git` read-only (as without mount namespaces). A linked worktree's git dir outside the project is
//!   read-only (commits there need the sandbox off), except for an agent's
//!   own cadre worktree: its policy's `git_writable` opens the objects, its
//!   branch's refs and its git dir, and only while the mounts protect the
//!   hooks and config. Missing `hooks`
//!   directories are created (empty) so that they can be protected.
//! - The command runs with `no_new_privs`: setuid programs (`sudo`) don't gain
//!   privileges. Without root, it runs in a user namespace (for the git
//!   mounts): files of users other than its own show as owned by `nobody`.

use std::ffi::{CString, OsStr};
use std::fmt;
use std::fs::{self, File};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};

mod git;
mod seccomp;
#[cfg(test)]
mod tests;

/// The Landlock ABI whose file-system rights we handle (tested set; newer
/// kernels keep the same semantics for it).
const FS_ABI: ABI = ABI::V5;
/// The Landlock ABI whose network rights we handle (TCP bind and connect).
const NET_ABI: ABI = ABI::V4;
/// The Landlock ABI with scopes (signals, abstract unix sockets).
const SCOPE_ABI: i32 = 6;
/// The character devices in `/dev` a command may read and write.
const DEVICES: [&str; 7] = ["null", "zero", "full", "random", "urandom", "tty", "ptmx"];
/// `LANDLOCK_CREATE_RULESET_VERSION` from `<linux/landlock.h>`.
const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1 << 0;

/// What a sandboxed command may touch.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SandboxPolicy {
    /// Readable and writable (unless inside `data_dir`).
    pub project_dir: PathBuf,
    /// Neither readable nor writable: cadre's keys and logs.
    pub data_dir: PathBuf,
    /// Also readable and writable: the temp dirs by default. Paths that do
    /// not exist are ignored.
    pub extra_writable: Vec<PathBuf>,
    /// Whether sockets are allowed (TCP connect and bind, UDP, unix-domain
    /// and other sockets).
    pub network: bool,
    /// The project is readable but not writable (read-only agents such as
    /// `Explore`); the temp dirs stay writable for scratch files.
    pub read_only_project: bool,
    /// Folders that count as part of the project (`additionalDirectories`,
    /// `--add-dir`): writable like it, read-only with it.
    pub additional_dirs: Vec<PathBuf>,
    /// Parts of a shared git directory outside the project that a linked
    /// worktree's commits write (objects, its branch's refs, its own git
    /// dir); writable only while its hooks and config are protected by the
    /// read-only mounts, read-only otherwise.
    pub git_writable: Vec<PathBuf>,
    /// Folders inside `data_dir` that commands may read and run, nothing
    /// else of it: the enabled plugins cadre installed there, whose `bin/`
    /// is on `Bash`'s PATH. Paths outside `data_dir` are ignored (the rest
    /// of the machine is readable anyway).
    pub readable_in_data_dir: Vec<PathBuf>,
}

impl SandboxPolicy {
    /// A policy for `project_dir`, with `/tmp`, `/var/tmp` and `$TMPDIR` (if
    /// set) as extra writable directories.
    pub fn new(project_dir: PathBuf, data_dir: PathBuf, network: bool) -> Self {
        let mut extra_writable = vec![PathBuf::from("/tmp"), PathBuf::from("/var/tmp")];
        if let Some(tmp) = std::env::var_os("TMPDIR") {
            let tmp = PathBuf::from(tmp);
            if tmp.is_absolute() && !extra_writable.contains(&tmp) {
                extra_writable.push(tmp);
            }
        }
        SandboxPolicy {
            project_dir,
            data_dir,
            extra_writable,
            network,
            read_only_project: false,
            additional_dirs: Vec::new(),
            git_writable: Vec::new(),
            readable_in_data_dir: Vec::new(),
        }
    }

    /// The same policy with the project made read-only.
    pub fn read_only(mut self) -> Self {
        self.read_only_project = true;
        self
    }

    /// Builds the Landlock ruleset: opens the path fds, enumerates the
    /// ancestors of the data dir and adds every rule, all in the parent, so
    /// that the child only has to call [`PreparedSandbox::apply`].
    ///
    /// Does blocking file-system work (a few hundred syscalls at most).
    /// When the kernel has no Landlock, returns a sandbox that enforces
    /// nothing ([`PreparedSandbox::status`] is [`SandboxSupport::Unavailable`]).
    pub fn prepare(&self) -> Result<PreparedSandbox, SandboxError> {
        self.prepare_with(git::supported)
    }

    /// [`prepare`](Self::prepare), with a way to tell whether mount
    /// namespaces work (asked only for a project with a `.git`).
    fn prepare_with(
        &self,
        mounts_work: impl Fn() -> bool,
    ) -> Result<PreparedSandbox, SandboxError> {
        let abi = kernel_abi();
        if abi < 1 {
            return Ok(PreparedSandbox {
                ruleset: None,
                filter: None,
                git: None,
                support: SandboxSupport::Unavailable,
            });
        }
        let hidden = resolve_lenient(&self.data_dir).map_err(|source| SandboxError::Path {
            path: self.data_dir.clone(),
            source,
        })?;
        if hidden.parent().is_none() {
            return Err(SandboxError::DataDirIsRoot);
        }
        let project = self
            .project_dir
            .canonicalize()
            .map_err(|source| SandboxError::Path {
                path: self.project_dir.clone(),
                source,
            })?;

        let all = AccessFs::from_all(FS_ABI);
        // Signals may reach only processes of this sandbox, whatever the network.
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(all)?
            .scope(Scope::Signal)?;
        if !self.network {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(NET_ABI))?
                .scope(Scope::AbstractUnixSocket)?;
        }

        // The project's git hooks and config: read-only mounts when this
        // process can make them, else the whole git dir is read-only.
        let mut no_write: Vec<PathBuf> = Vec::new();
        // Kept out of the grants of the temp and additional dirs only.
        let mut not_through_others: Vec<PathBuf> = Vec::new();
        let mut git = None;
        if self.read_only_project {
            no_write.push(project.clone());
        } else {
            match git::plan(&project) {
                Ok(None) => {}
                Ok(Some(guard)) if mounts_work() => {
                    match self.guard_surroundings(guard, &project) {
                        Ok(guard) => git = Some(guard),
                        Err(main) => {
                            no_write.push(project.join(".git"));
                            not_through_others.extend(main);
                        }
                    }
                }
                Ok(Some(guard)) => {
                    no_write.push(project.join(".git"));
                    // The main checkout of a linked worktree stays out of a
                    // writable temp dir's grant (the walk below).
                    not_through_others.extend(guard.main_checkout);
                }
                Err(_) => no_write.push(project.join(".git")),
            }
        }
        // Started in the home directory, the project holds `~/.claude`, whose
        // agent definitions are trusted (they may ask for wider modes).
        if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty())
            && let Ok(user) = resolve_lenient(&Path::new(&home).join(".claude"))
            && user.starts_with(&project)
        {
            no_write.push(user);
        }
        let mut builder = Builder {
            ruleset: ruleset.create()?,
            hidden: &hidden,
            no_write: &no_write,
        };

        let dev = Path::new("/dev");
        builder.grant_tree(Path::new("/"), AccessFs::from_read(FS_ABI), false, &[dev])?;
        if !self.read_only_project {
            builder.grant_tree(&project, all, true, &[])?;
        } else {
            // Already readable through `/`, unless it lies under /dev.
            builder.grant_tree(&project, AccessFs::from_read(FS_ABI), true, &[])?;
        }
        let others: Vec<&Path> = not_through_others.iter().map(PathBuf::as_path).collect();
        for dir in &self.additional_dirs {
            // A folder removed since start-up is not an error.
            if let Ok(real) = dir.canonicalize() {
                let access = if self.read_only_project {
                    AccessFs::from_read(FS_ABI)
                } else {
                    all
                };
                builder.grant_tree(&real, access, false, &others)?;
            }
        }
        if git.is_some() && !self.read_only_project {
            for dir in &self.git_writable {
                if let Ok(real) = dir.canonicalize() {
                    builder.grant_tree(&real, all, false, &[])?;
                }
            }
        }
        builder.grant_devices(dev)?;
        for extra in &self.extra_writable {
            // Missing temp dirs (no /var/tmp, stale $TMPDIR) are not an error.
            if let Ok(real) = extra.canonicalize() {
                builder.grant_tree(&real, all, false, &others)?;
            }
        }

        for dir in &self.readable_in_data_dir {
            // Granted past the data dir's exclusion, and only inside it: a
            // link out of it gets nothing more than `/` already gives.
            if let Ok(real) = dir.canonicalize() {
                builder.grant_inside_hidden(&real, AccessFs::from_read(FS_ABI));
            }
        }
        let ruleset: Option<OwnedFd> = builder.ruleset.into();
        let filter = seccomp::build(self.network);
        let support = match ruleset {
            Some(_) if filter.is_none() && !self.network => SandboxSupport::Partial,
            Some(_) => support_for(abi, self.network),
            None => SandboxSupport::Unavailable,
        };
        Ok(PreparedSandbox {
            ruleset,
            filter,
            git,
            support,
        })
    }

    /// The folders other than the project that this policy lets commands
    /// write (temp dirs, additional dirs), as real paths.
    fn other_writable_roots(&self) -> Vec<PathBuf> {
        self.extra_writable
            .iter()
            .chain(&self.additional_dirs)
            .filter_map(|d| d.canonicalize().ok())
            .collect()
    }

    /// Adds to `guard` the mounts that keep the project's surroundings out
    /// of reach when another writable folder (a temp dir) contains them:
    /// the project and its ancestors below that folder are anchored (they
    /// cannot be moved away and replaced), and a linked worktree's main
    /// checkout is read-only but for the project and [`Self::git_writable`].
    /// `Err` holds the main checkout (to keep out of those grants instead)
    /// when the mounts cannot be planned.
    fn guard_surroundings(
        &self,
        mut guard: git::GitGuard,
        project: &Path,
    ) -> Result<git::GitGuard, Option<PathBuf>> {
        let roots = self.other_writable_roots();
        let main = guard.main_checkout.clone();
        let fail = |_| main.clone();
        let below_a_root = |dir: &Path| {
            roots
                .iter()
                .filter(|r| dir.starts_with(r) && dir != r.as_path())
                .min_by_key(|r| r.components().count())
                .cloned()
        };
        if let Some(top) = &main
            && let Some(root) = below_a_root(top)
        {
            let mut writable = vec![project.to_path_buf()];
            writable.extend(
                self.git_writable
                    .iter()
                    .filter_map(|d| d.canonicalize().ok()),
            );
            guard.anchor(&ancestors_below(top, &root)).map_err(fail)?;
            guard.read_only_tree(top, &writable).map_err(fail)?;
        } else if let Some(root) = below_a_root(project) {
            let mut anchors = ancestors_below(project, &root);
            anchors.push(project.to_path_buf());
            guard.anchor(&anchors).map_err(fail)?;
        }
        Ok(guard)
    }

    /// One line for the approval question.
    pub fn describe(&self) -> String {
        let abi = kernel_abi();
        if abi < 1 {
            return "sandbox: NOT available on this kernel — the command would run unsandboxed"
                .to_string();
        }
        let project = self
            .project_dir
            .canonicalize()
            .unwrap_or_else(|_| self.project_dir.clone());
        let data = resolve_lenient(&self.data_dir).unwrap_or_else(|_| self.data_dir.clone());
        let inside = if project.starts_with(&data) {
            " (but the project is inside the data dir, so it is not accessible)"
        } else {
            ""
        };
        let network = match (self.network, abi < 4) {
            (true, _) => "on",
            (false, false) => "off",
            (false, true) => "TCP NOT restricted (the kernel has no Landlock network rules)",
        };
        let mut line = if self.read_only_project {
            format!(
                "sandbox: read-only — writes limited to temp dirs ({} is read-only){inside}; \
                 cadre data dir hidden; network {network}",
                self.project_dir.display(),
            )
        } else {
            let mut roots = self.project_dir.display().to_string();
            for dir in &self.additional_dirs {
                roots.push_str(&format!(", {}", dir.display()));
            }
            format!(
                "sandbox: writes limited to {roots} and temp dirs{inside}; cadre data dir hidden; \
                 network {network}",
            )
        };
        if abi < 3 {
            line.push_str("; file truncation not restricted (old kernel)");
        }
        if abi < SCOPE_ABI {
            line.push_str("; signals to other processes not restricted (old kernel)");
        }
        if !self.network && seccomp::build(false).is_none() {
            line.push_str("; UDP and unix sockets NOT restricted on this architecture");
        }
        let has_git = fs::symlink_metadata(project.join(".git")).is_ok();
        if !self.read_only_project && has_git && !git::supported() {
            line.push_str(
                "; .git is read-only and no new entries at the project's top level \
                 (no mount namespaces here to protect only its hooks and config)",
            );
        }
        line
    }
}

/// A ruleset built by [`SandboxPolicy::prepare`], ready to be applied in a
/// child process. The ruleset fd is closed when this is dropped.
#[derive(Debug)]
pub struct PreparedSandbox {
    /// The Landlock ruleset fd; `None` when Landlock is not available.
    ruleset: Option<OwnedFd>,
    /// The seccomp filter; `None` on targets it does not know.
    filter: Option<seccomp::Filter>,
    /// Read-only mounts of the project's git hooks and config.
    git: Option<git::GitGuard>,
    support: SandboxSupport,
}

impl PreparedSandbox {
    /// Restricts the calling process: the git mounts in a new mount
    /// namespace, `prctl(PR_SET_NO_NEW_PRIVS)`, `landlock_restrict_self`,
    /// then the seccomp filter. Meant for the child, between fork and exec
    /// (`CommandExt::pre_exec`): system calls only, on data prepared before
    /// the fork, no allocation. Does nothing when Landlock is not available.
    pub fn apply(&self) -> io::Result<()> {
        let Some(fd) = &self.ruleset else {
            return Ok(());
        };
        // A Landlock domain may not mount, so the mounts come first.
        if let Some(git) = &self.git {
            git.apply()?;
        }
        drop_ptrace_capability();
        let (one, zero): (libc::c_ulong, libc::c_ulong) = (1, 0);
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, one, zero, zero, zero) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let flags: libc::c_uint = 0;
        // SAFETY: the fd is a valid, open Landlock ruleset owned by `self`.
        let rc = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), flags) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some(filter) = &self.filter {
            filter.install()?;
        }
        Ok(())
    }

    /// How much of the policy [`apply`](Self::apply) will enforce.
    pub fn status(&self) -> SandboxSupport {
        self.support
    }
}

/// Takes `CAP_SYS_PTRACE` away from the command for good (bounding,
/// ambient and inheritable sets; a root command's permitted set after `exec`
/// comes from those). With it, a command running as root could read
/// `/proc/<pid>/environ` of processes outside the sandbox (cadre's ancestors,
/// which may hold an API key) despite Landlock; without it Landlock's ptrace
/// scoping refuses. Failures are ignored: a process that may not drop the
/// capability does not hold it either. Async-signal-safe: syscalls only.
fn drop_ptrace_capability() {
    const CAP_SYS_PTRACE: u32 = 19;
    const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let cap = libc::c_ulong::from(CAP_SYS_PTRACE);
    let zero: libc::c_ulong = 0;
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(libc::PR_CAPBSET_DROP, cap, zero, zero, zero);
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_LOWER as libc::c_ulong,
            cap,
            zero,
            zero,
        );
    }
    let mut header = Header {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: header and data are the layouts capget/capset expect for version 3.
    unsafe {
        if libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) == 0 {
            data[0].inheritable &= !(1 << CAP_SYS_PTRACE);
            libc::syscall(libc::SYS_capset, &mut header, data.as_ptr());
        }
    }
}

/// Replaces this process with `bash -c command` (`sh` without bash) under
/// `policy`, cadre's credentials out of its environment: how a command an
/// editor's terminal runs stays in cadre's sandbox (`cadre __sandbox-exec`).
/// Call it while the process has one thread. Returns only on failure.
pub fn exec_sandboxed(policy: &SandboxPolicy, command: &str) -> io::Error {
    use std::os::unix::process::CommandExt;
    let prepared = match policy.prepare() {
        Ok(p) => Arc::new(p),
        Err(e) => return io::Error::other(format!("cannot set up the sandbox: {e}")),
    };
    let mut last = io::Error::other("no shell found");
    for shell in ["bash", "sh"] {
        let mut cmd = std::process::Command::new(shell);
        cmd.arg("-c").arg(command);
        for key in crate::secrets::secret_vars() {
            cmd.env_remove(key);
        }
        // SAFETY: the hook makes only the sandbox's system calls on a ruleset
        // built above; exec follows in this same process.
        unsafe {
            cmd.pre_exec(command_pre_exec(prepared.clone()));
        }
        last = cmd.exec();
        if last.kind() != io::ErrorKind::NotFound {
            break;
        }
    }
    last
}

/// A `pre_exec` hook applying `prepared` (async-signal-safe):
/// `unsafe { cmd.pre_exec(command_pre_exec(prepared)) }`.
pub fn command_pre_exec(
    prepared: Arc<PreparedSandbox>,
) -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
    move || prepared.apply()
}

/// How well Landlock works on this kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxSupport {
    /// Every restriction is enforced.
    Full,
    /// Some restrictions are enforced: the kernel lacks signal scoping
    /// (ABI < 6), network rules (ABI < 4) or truncation rules (ABI < 3).
    Partial,
    /// No Landlock: nothing is enforced.
    Unavailable,
}

impl fmt::Display for SandboxSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SandboxSupport::Full => "fully enforced",
            SandboxSupport::Partial => "partially enforced",
            SandboxSupport::Unavailable => "not enforced",
        })
    }
}

/// One kernel feature the sandbox relies on, and whether this machine has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFeature {
    /// What it is, in a few words.
    pub name: &'static str,
    /// Whether it works here.
    pub present: bool,
    /// What is not restricted without it.
    pub without: &'static str,
}

/// The kernel features the sandbox uses, each with whether this machine has
/// it (for `cadre doctor`).
pub fn kernel_support() -> Vec<KernelFeature> {
    let abi = kernel_abi();
    let feature = |name, present, without| KernelFeature {
        name,
        present,
        without,
    };
    vec![
        feature("Landlock", abi >= 1, "commands run unsandboxed"),
        feature(
            "Landlock truncation rules (ABI 3, Linux 6.2)",
            abi >= 3,
            "file truncation is not restricted",
        ),
        feature(
            "Landlock network rules (ABI 4, Linux 6.7)",
            abi >= 4,
            "TCP connect and bind are not restricted",
        ),
        feature(
            "Landlock device ioctl rules (ABI 5, Linux 6.10)",
            abi >= 5,
            "device ioctls are not restricted",
        ),
        feature(
            "Landlock scopes (ABI 6, Linux 6.12)",
            abi >= SCOPE_ABI,
            "signals to other processes and abstract sockets are not restricted",
        ),
        feature(
            "seccomp filter for this architecture",
            seccomp::build(false).is_some(),
            "UDP and unix sockets are not restricted with the network off",
        ),
        feature(
            "mount namespaces",
            git::supported(),
            "a project's whole .git is read-only to commands (not only its hooks and config)",
        ),
    ]
}

/// Whether Landlock works on this kernel, for a policy without network
/// access (the strictest case). Cached after the first call.
pub fn probe() -> SandboxSupport {
    support_for(kernel_abi(), false)
}

/// Why a sandbox could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("landlock: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("cannot resolve {}: {source}", path.display())]
    Path {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the cadre data directory cannot be `/`")]
    DataDirIsRoot,
}

/// The kernel's Landlock ABI version, 0 when Landlock is missing or disabled.
fn kernel_abi() -> i32 {
    static ABI_VERSION: OnceLock<i32> = OnceLock::new();
    *ABI_VERSION.get_or_init(|| {
        // SAFETY: the documented version query: NULL attributes, size 0.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        i32::try_from(rc).unwrap_or(0).max(0)
    })
}

fn support_for(abi: i32, network: bool) -> SandboxSupport {
    if abi < 1 {
        SandboxSupport::Unavailable
    } else if abi < 3 || abi < SCOPE_ABI || (!network && abi < 4) {
        SandboxSupport::Partial
    } else {
        SandboxSupport::Full
    }
}

/// Adds rules to a ruleset while keeping `hidden` out of every rule.
struct Builder<'a> {
    ruleset: RulesetCreated,
    /// The real path of the data dir.
    hidden: &'a Path,
    /// No write grant may cover these (a read-only project, a git dir that
    /// cannot be protected otherwise), even through a writable temp dir
    /// that contains them.
    no_write: &'a [PathBuf],
}

impl Builder<'_> {
    /// Grants `access` on the tree at `root` (a real path), minus the data
    /// dir, minus `also_excluded`, and (for write access) minus `no_write`.
    fn grant_tree(
        &mut self,
        root: &Path,
        access: BitFlags<AccessFs>,
        required: bool,
        also_excluded: &[&Path],
    ) -> Result<(), SandboxError> {
        // No device nodes anywhere: as root, one made in the project would
        // reach the disks and devices `/dev` keeps from the command.
        let access = access & !(AccessFs::MakeChar | AccessFs::MakeBlock);
        let writes = access.intersects(AccessFs::from_write(FS_ABI));
        let mut excluded: Vec<PathBuf> = vec![self.hidden.to_path_buf()];
        excluded.extend(also_excluded.iter().map(|p| p.to_path_buf()));
        if writes {
            excluded.extend(self.no_write.iter().cloned());
        }
        self.grant_excluding(root, access, required, &excluded)
    }

    /// `/dev`: listing it, reading and writing the usual character devices
    /// (no pty of `/dev/pts`: those are other terminals), and everything in `/dev/shm` (POSIX shared memory, a
    /// temp dir); nothing else (block devices, other devices, new entries).
    fn grant_devices(&mut self, dev: &Path) -> Result<(), SandboxError> {
        let Ok(dev) = dev.canonicalize() else {
            return Ok(());
        };
        let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
        let device = device | (AccessFs::from_all(FS_ABI) & AccessFs::IoctlDev);
        self.grant_tree(&dev, AccessFs::ReadDir.into(), false, &[])?;
        for name in DEVICES {
            self.grant_tree(&dev.join(name), device, false, &[])?;
        }
        if let Ok(shm) = dev.join("shm").canonicalize() {
            self.grant_tree(&shm, AccessFs::from_all(FS_ABI), false, &[])?;
        }
        Ok(())
    }

    /// Grants `access` on `root` unless an excluded path is `root` or lies
    /// inside it; in that case it descends, granting every entry except the
    /// ones leading to an excluded path. Landlock cannot subtract a subtree
    /// from a grant, so this is how "everything but X" is expressed.
    fn grant_excluding(
        &mut self,
        root: &Path,
        access: BitFlags<AccessFs>,
        required: bool,
        excluded: &[PathBuf],
    ) -> Result<(), SandboxError> {
        if excluded.iter().any(|e| root.starts_with(e)) {
            return Ok(());
        }
        if !excluded.iter().any(|e| e.starts_with(root)) {
            return self.grant_path(root, access, required);
        }
        // An unlistable directory grants nothing (its entries stay denied).
        if let Ok(entries) = fs::read_dir(root) {
            for entry in entries.flatten() {
                let child = root.join(entry.file_name());
                let leads_to_excluded = excluded.iter().any(|e| e.starts_with(&child));
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                if leads_to_excluded && is_dir {
                    self.grant_excluding(&child, access, false, excluded)?;
                } else if !leads_to_excluded {
                    self.grant_path(&child, access, false)?;
                }
            }
        }
        Ok(())
    }

    /// Grants `access` beneath one folder strictly inside the data dir
    /// (checked on the opened folder itself, so a folder swapped for a link
    /// meanwhile grants nothing); a failure only denies more.
    fn grant_inside_hidden(&mut self, path: &Path, access: BitFlags<AccessFs>) {
        let Ok(file) = open_path(path) else { return };
        let is_dir = file.metadata().is_ok_and(|m| m.is_dir());
        let inside =
            fd_path(&file).is_some_and(|real| real.starts_with(self.hidden) && real != self.hidden);
        if is_dir && inside {
            let _ = (&mut self.ruleset).add_rule(PathBeneath::new(file, access));
        }
    }

    /// Grants `access` beneath one path, never following a final symlink and
    /// never if it overlaps the data dir. Failures are errors only when
    /// `required`.
    fn grant_path(
        &mut self,
        path: &Path,
        access: BitFlags<AccessFs>,
        required: bool,
    ) -> Result<(), SandboxError> {
        let path_error = |source| SandboxError::Path {
            path: path.to_path_buf(),
            source,
        };
        let file = match open_path(path) {
            Ok(f) => f,
            Err(e) if required => return Err(path_error(e)),
            Err(_) => return Ok(()),
        };
        let meta = match file.metadata() {
            Ok(m) => m,
            Err(e) if required => return Err(path_error(e)),
            Err(_) => return Ok(()),
        };
        if meta.file_type().is_symlink() {
            return Ok(());
        }
        // Guards against the path having been swapped (e.g. a parent turned
        // into a symlink) between listing and opening.
        if let Some(real) = fd_path(&file)
            && (real.starts_with(self.hidden) || self.hidden.starts_with(&real))
        {
            return Ok(());
        }
        let access = if meta.is_dir() {
            access
        } else {
            access & AccessFs::from_file(FS_ABI)
        };
        if access.is_empty() {
            return Ok(());
        }
        match (&mut self.ruleset).add_rule(PathBeneath::new(file, access)) {
            Ok(_) => Ok(()),
            Err(e) if required => Err(e.into()),
            // Losing one enumerated entry only denies more.
            Err(_) => Ok(()),
        }
    }
}

/// Opens `path` with `O_PATH | O_NOFOLLOW`: a final symlink is opened itself,
/// and nothing (not even a FIFO) is actually opened for reading.
fn open_path(path: &Path) -> io::Result<File> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    loop {
        // SAFETY: `c_path` is NUL-terminated; these flags take no mode argument.
        let fd = unsafe {
            libc::open(
                c_path.as_ptr(),
                libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd >= 0 {
            // SAFETY: `fd` was just opened and is owned by nobody else.
            return Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }));
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// The real path of an open file, from `/proc/self/fd`; `None` without /proc.
fn fd_path(file: &File) -> Option<PathBuf> {
    fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

/// The ancestors of `dir` strictly between `root` and `dir`, outermost first.
fn ancestors_below(dir: &Path, root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = dir
        .ancestors()
        .skip(1)
        .take_while(|a| a.starts_with(root) && *a != root)
        .map(Path::to_path_buf)
        .collect();
    out.reverse();
    out
}

/// The real absolute path of `path`, which may not exist yet: the longest
/// existing prefix is canonicalized and the rest appended.
fn resolve_lenient(path: &Path) -> io::Result<PathBuf> {
    let absolute = std::path::absolute(path)?;
    let mut existing = absolute.as_path();
    let mut missing: Vec<&OsStr> = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(mut real) => {
                real.extend(missing.iter().rev());
                return Ok(real);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                match (existing.parent(), existing.file_name()) {
                    (Some(parent), Some(name)) => {
                        missing.push(name);
                        existing = parent;
                    }
                    _ => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
}
