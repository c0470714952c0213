//! Keeps a repository's hooks and configuration read-only inside a writable
//! project, while the rest of its git directory stays writable.
//!
//! Landlock cannot do it: git commits by creating `index.lock` and renaming
//! it over `index`, and the same rights on the git directory let a command
//! rename a new file over `config`. So the sandboxed command gets its own
//! mount namespace (a user namespace too when cadre is not root) in which
//! the protected files and directories are read-only bind mounts of
//! themselves: writing them fails with `EROFS`, replacing or removing them
//! with `EBUSY`. The git directory itself is bound onto itself so that it
//! cannot be renamed away and replaced. Mount changes stay in the command's
//! namespace (`/` is made a mount slave first), and Landlock forbids the
//! command to undo them.
//!
//! Inside a writable temp dir (a project under `/tmp`), Landlock's grant on
//! the temp dir covers the project's surroundings too, so two more kinds of
//! mount are made first: the project (or the main checkout) and its
//! ancestors below the temp dir are bound onto themselves ("anchors": they
//! cannot be renamed away and replaced by a copy with other hooks), and the
//! main checkout of a linked worktree is bound read-only as a whole, after
//! the folders that stay writable in it (the worktree, the git objects and
//! refs its commits write) were bound onto themselves.
//!
//! The git dirs of the repository's other linked worktrees are protected too,
//! but they come and go while commands run (sibling agents' worktrees are
//! removed when they end): one that is gone by the time the command starts is
//! skipped, never an error, and none of them gets a `hooks` directory made
//! (git reads hooks only from the common git dir).

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// At most this many mounts; beyond it (hundreds of submodules) the plan is
/// refused and the caller falls back to a read-only git directory.
const MAX_MOUNTS: usize = 256;

/// Files in a git directory that git reads as configuration or that redirect
/// it to another directory.
const PROTECTED_FILES: [&str; 4] = ["config", "config.worktree", "commondir", "gitdir"];

/// What to mount in the command's namespace, prepared before the fork.
#[derive(Debug)]
pub(super) struct GitGuard {
    /// `Some((uid_map, gid_map))`: create a user namespace first (not root).
    id_maps: Option<(Vec<u8>, Vec<u8>)>,
    /// Directories bound onto themselves before anything else, outermost
    /// first, so that they can't be renamed away (see the module doc).
    anchors: Vec<CString>,
    /// Folders inside a read-only tree that stay writable: bound onto
    /// themselves before the tree is bound read-only.
    writable_inside: Vec<CString>,
    /// Trees bound read-only as a whole, with their locked mount flags.
    read_only_trees: Vec<(CString, libc::c_ulong)>,
    /// Directories bound onto themselves, read-write, so they can't be renamed.
    pins: Vec<Target>,
    /// Files and directories bound onto themselves read-only, with the mount
    /// flags (`nosuid`, `nodev`, ...) their file system already has, which a
    /// read-only remount must keep.
    read_only: Vec<(Target, libc::c_ulong)>,
    /// The main checkout of a linked-worktree project (the folder holding
    /// the common `.git`), when the project is not that checkout itself.
    pub(super) main_checkout: Option<PathBuf>,
}

/// A path to mount. An `optional` one (another linked worktree's git dir,
/// which may be removed at any moment) is skipped when it is gone by the
/// time the command starts.
#[derive(Debug)]
struct Target {
    path: CString,
    optional: bool,
}

/// A path to protect, as planned.
struct Planned {
    path: PathBuf,
    optional: bool,
}

impl Planned {
    fn required(path: PathBuf) -> Planned {
        Planned {
            path,
            optional: false,
        }
    }
}

/// The paths to protect for `project` (a real path), or `None` when there
/// is no git directory in it. `Err` names what cannot be protected.
pub(super) fn plan(project: &Path) -> Result<Option<GitGuard>, PathBuf> {
    let dot_git = project.join(".git");
    let Ok(meta) = fs::symlink_metadata(&dot_git) else {
        return Ok(None);
    };
    let mut pins: Vec<Planned> = Vec::new();
    let mut read_only: Vec<Planned> = Vec::new();
    let git_dir = if meta.is_dir() {
        pins.push(Planned::required(dot_git.clone()));
        dot_git
    } else if meta.is_file() {
        // A worktree or submodule checkout: `.git` says where its git dir is.
        read_only.push(Planned::required(dot_git.clone()));
        match gitdir_pointer(&dot_git, project) {
            Some(dir) => {
                pins.push(Planned::required(dir.clone()));
                dir
            }
            None => return Ok(Some(guard(pins, read_only, None)?)),
        }
    } else {
        // A symlink can be replaced, and a bind mount would follow it.
        return Err(dot_git);
    };
    let common = fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .and_then(|c| git_dir.join(c.trim()).canonicalize().ok());
    let common = match common {
        Some(c) if c != git_dir => {
            // A linked worktree: its own git dir holds no hooks git reads.
            protect_git_dir(&git_dir, false, false, &mut read_only);
            pins.push(Planned::required(c.clone()));
            protect_git_dir(&c, true, false, &mut read_only);
            c
        }
        _ => {
            protect_git_dir(&git_dir, true, false, &mut read_only);
            git_dir.clone()
        }
    };
    // The checkout that holds the common git dir, when it is not the project.
    let main_checkout = match common.file_name() {
        Some(n) if n == ".git" => common.parent().filter(|top| *top != project),
        _ => None,
    }
    .map(Path::to_path_buf);
    // Submodules' and linked worktrees' git dirs: their hooks run, and their
    // files are read, when git is used in those checkouts.
    let mut stack = vec![common.join("modules"), common.join("worktrees")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        // Linked worktrees (their git dirs sit right under `worktrees/`)
        // come and go while commands run: theirs are optional mounts.
        let worktrees = dir == common.join("worktrees");
        for entry in entries.flatten() {
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let sub = entry.path();
            if sub == git_dir {
                continue;
            }
            if sub.join("HEAD").is_file() {
                pins.push(Planned {
                    path: sub.clone(),
                    optional: worktrees,
                });
                protect_git_dir(&sub, !worktrees, worktrees, &mut read_only);
                if !worktrees {
                    stack.push(sub.join("modules"));
                }
            } else if dir.ends_with("modules") {
                // Submodule names may contain slashes.
                stack.push(sub);
            }
            if pins.len() + read_only.len() > MAX_MOUNTS {
                return Err(common);
            }
        }
    }
    Ok(Some(guard(pins, read_only, main_checkout)?))
}

/// Adds a git dir's hooks (`with_hooks`: a git dir whose hooks git runs) and
/// configuration files to `read_only`; creates an empty `hooks` directory
/// when there is none, so that a command cannot.
fn protect_git_dir(git_dir: &Path, with_hooks: bool, optional: bool, read_only: &mut Vec<Planned>) {
    if with_hooks {
        let hooks = git_dir.join("hooks");
        if fs::symlink_metadata(&hooks).is_err() {
            let _ = fs::create_dir(&hooks);
        }
        read_only.push(Planned {
            path: hooks,
            optional,
        });
    }
    for name in PROTECTED_FILES {
        let path = git_dir.join(name);
        if fs::symlink_metadata(&path).is_ok() {
            read_only.push(Planned { path, optional });
        }
    }
}

/// The git dir a `.git` file points to (`gitdir: <path>`), as a real path.
fn gitdir_pointer(dot_git: &Path, project: &Path) -> Option<PathBuf> {
    let text = fs::read_to_string(dot_git).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    project.join(target).canonicalize().ok()
}

fn c_path(p: &Path) -> Result<CString, PathBuf> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| p.to_path_buf())
}

fn guard(
    pins: Vec<Planned>,
    read_only: Vec<Planned>,
    main_checkout: Option<PathBuf>,
) -> Result<GitGuard, PathBuf> {
    let mut kept_pins = Vec::with_capacity(pins.len());
    for pin in pins {
        kept_pins.push(Target {
            path: c_path(&pin.path)?,
            optional: pin.optional,
        });
    }
    let mut ro = Vec::with_capacity(read_only.len());
    for planned in &read_only {
        let path = &planned.path;
        let meta = fs::symlink_metadata(path);
        // Another worktree's git dir removed meanwhile: nothing to protect.
        if planned.optional && meta.is_err() {
            continue;
        }
        // A symlink here would be replaced while its target got the mount.
        if meta.is_ok_and(|m| m.file_type().is_symlink()) {
            if planned.optional {
                continue;
            }
            return Err(path.clone());
        }
        let flags = match locked_flags(path) {
            Some(f) => f,
            None if planned.optional => continue,
            None => return Err(path.clone()),
        };
        ro.push((
            Target {
                path: c_path(path)?,
                optional: planned.optional,
            },
            flags,
        ));
    }
    Ok(GitGuard {
        id_maps: id_maps(),
        anchors: Vec::new(),
        writable_inside: Vec::new(),
        read_only_trees: Vec::new(),
        pins: kept_pins,
        read_only: ro,
        main_checkout,
    })
}

impl GitGuard {
    /// Binds `dirs` onto themselves first (outermost first), so they cannot
    /// be renamed away. `Err` names a path that cannot be mounted.
    pub(super) fn anchor(&mut self, dirs: &[PathBuf]) -> Result<(), PathBuf> {
        for dir in dirs {
            self.anchors.push(c_path(dir)?);
        }
        Ok(())
    }

    /// Makes `tree` read-only but for `writable` (folders inside it).
    pub(super) fn read_only_tree(
        &mut self,
        tree: &Path,
        writable: &[PathBuf],
    ) -> Result<(), PathBuf> {
        let flags = locked_flags(tree).ok_or_else(|| tree.to_path_buf())?;
        for dir in writable.iter().filter(|d| d.starts_with(tree)) {
            self.writable_inside.push(c_path(dir)?);
        }
        self.read_only_trees.push((c_path(tree)?, flags));
        Ok(())
    }
}

/// `None` as root; otherwise the uid and gid maps that keep the user's ids
/// inside a new user namespace.
fn id_maps() -> Option<(Vec<u8>, Vec<u8>)> {
    // SAFETY: getters without arguments.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    (uid != 0).then(|| {
        (
            format!("{uid} {uid} 1\n").into_bytes(),
            format!("{gid} {gid} 1\n").into_bytes(),
        )
    })
}

/// The mount flags of the file system holding `path` that a remount inside
/// a user namespace may not drop.
fn locked_flags(path: &Path) -> Option<libc::c_ulong> {
    let c_path = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct; the path is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut st) } != 0 {
        return None;
    }
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    Some(
        pairs
            .iter()
            .filter(|(st_flag, _)| st.f_flag & st_flag != 0)
            .fold(0, |acc, (_, ms)| acc | ms),
    )
}

impl GitGuard {
    /// Enters a new mount namespace and makes the mounts. Only system calls
    /// on data prepared before the fork: safe between fork and exec. Must
    /// run before Landlock is applied (a Landlock domain cannot mount).
    pub(super) fn apply(&self) -> io::Result<()> {
        enter_namespace(self.id_maps.as_ref())?;
        for path in self.anchors.iter().chain(&self.writable_inside) {
            mount(Some(path), path, libc::MS_BIND | libc::MS_REC)?;
        }
        // Recursive, so the writable folders bound above stay writable in
        // it; the read-only remount is of the tree's own mount only.
        for (path, flags) in &self.read_only_trees {
            bind_read_only(path, *flags)?;
        }
        // Another worktree's git dir removed since the plan: nothing to protect.
        let vanished =
            |optional: bool, e: &io::Error| optional && e.raw_os_error() == Some(libc::ENOENT);
        for pin in &self.pins {
            if let Err(e) = mount(Some(&pin.path), &pin.path, libc::MS_BIND | libc::MS_REC)
                && !vanished(pin.optional, &e)
            {
                return Err(e);
            }
        }
        for (target, flags) in &self.read_only {
            if let Err(e) = bind_read_only(&target.path, *flags)
                && !vanished(target.optional, &e)
            {
                return Err(e);
            }
        }
        reenter_cwd()
    }
}

/// Binds `path` onto itself and makes that mount read-only, keeping `flags`.
fn bind_read_only(path: &std::ffi::CStr, flags: libc::c_ulong) -> io::Result<()> {
    mount(Some(path), path, libc::MS_BIND | libc::MS_REC)?;
    mount(
        None,
        path,
        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | flags,
    )
}

/// Changes to the working directory again by its path: a working directory
/// under a new mount still refers to what the mount covers.
fn reenter_cwd() -> io::Result<()> {
    let mut buf = [0 as libc::c_char; libc::PATH_MAX as usize];
    // SAFETY: getcwd writes at most `buf.len()` bytes, NUL-terminated.
    if unsafe { libc::getcwd(buf.as_mut_ptr(), buf.len()) }.is_null() {
        // Too long or gone: relative paths then resolve as before.
        return Ok(());
    }
    // SAFETY: `buf` now holds a NUL-terminated path.
    if unsafe { libc::chdir(buf.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `unshare` a mount namespace (and a user namespace with `id_maps`), then
/// stop mount events from propagating back to cadre's namespace.
fn enter_namespace(id_maps: Option<&(Vec<u8>, Vec<u8>)>) -> io::Result<()> {
    let flags = match id_maps {
        Some(_) => libc::CLONE_NEWUSER | libc::CLONE_NEWNS,
        None => libc::CLONE_NEWNS,
    };
    // SAFETY: unshare takes flags only.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if let Some((uid_map, gid_map)) = id_maps {
        // A process that is not dumpable (cadre may make itself so, to keep
        // its memory private) finds its /proc files owned by root and cannot
        // write its own id maps. Memory is replaced at exec anyway, and
        // sandboxed commands cannot ptrace this one (Landlock).
        let (one, zero): (libc::c_ulong, libc::c_ulong) = (1, 0);
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, one, zero, zero, zero) } != 0 {
            return Err(io::Error::last_os_error());
        }
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", uid_map)?;
        write_file(c"/proc/self/gid_map", gid_map)?;
    }
    mount(None, c"/", libc::MS_REC | libc::MS_SLAVE)
}

fn mount(
    source: Option<&std::ffi::CStr>,
    target: &std::ffi::CStr,
    flags: libc::c_ulong,
) -> io::Result<()> {
    let source = source.map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: NUL-terminated paths (or NULL source), no fs type, no data.
    let rc = unsafe {
        libc::mount(
            source,
            target.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// open + write + close, nothing else.
fn write_file(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: NUL-terminated path; flags without a mode.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `data` is a valid buffer; `fd` was just opened.
    let written = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    let error = io::Error::last_os_error();
    // SAFETY: closing the fd opened above.
    unsafe { libc::close(fd) };
    if usize::try_from(written).ok() != Some(data.len()) {
        return Err(error);
    }
    Ok(())
}

/// Whether this process can make the mounts at all (a new mount namespace,
/// through a user namespace when not root): tried once in a forked child.
/// Fails in containers without `CAP_SYS_ADMIN` and where unprivileged user
/// namespaces are disabled or stripped of capabilities.
pub(super) fn supported() -> bool {
    static SUPPORTED: OnceLock<bool> = OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        let maps = id_maps();
        let Some(flags) = locked_flags(Path::new("/")) else {
            return false;
        };
        // SAFETY: the child only makes system calls on data prepared here,
        // then `_exit`s; the parent waits for it.
        unsafe {
            let pid = libc::fork();
            if pid == 0 {
                let ok = enter_namespace(maps.as_ref()).is_ok()
                    && mount(Some(c"/"), c"/", libc::MS_BIND | libc::MS_REC).is_ok()
                    && mount(
                        None,
                        c"/",
                        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | flags,
                    )
                    .is_ok();
                libc::_exit(if ok { 0 } else { 1 });
            }
            if pid < 0 {
                return false;
            }
            let mut status = 0;
            loop {
                let rc = libc::waitpid(pid, &mut status, 0);
                if rc == pid {
                    break;
                }
                if rc < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                    return false;
                }
            }
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
        }
    })
}
