//! Opening exactly the path a permission decision was made on. Paths given
//! here are already resolved (`permissions::resolve_real`: absolute, no
//! symlink, no `..`), so any symlink met on the way means the tree changed
//! since: the open fails rather than following it. Directories are opened
//! with `openat2(RESOLVE_NO_SYMLINKS)` where the kernel has it (5.6+), else
//! one component at a time with `O_NOFOLLOW`; the final component is always
//! opened relative to its directory's descriptor with `O_NOFOLLOW`, and the
//! result is checked against `/proc/self/fd`.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Write as _};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Cleared once `openat2` turns out to be missing (or filtered) here.
static OPENAT2_WORKS: AtomicBool = AtomicBool::new(true);

fn cstr(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

/// Retries `f` while it fails with EINTR; a negative result is the OS error.
fn retry(mut f: impl FnMut() -> libc::c_int) -> io::Result<libc::c_int> {
    loop {
        let rc = f();
        if rc >= 0 {
            return Ok(rc);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn owned(fd: libc::c_int) -> OwnedFd {
    // SAFETY: `fd` was just returned by a successful open call and is owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// `openat(dir, name, flags, mode)`.
fn openat(dir: libc::c_int, name: &OsStr, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
    let c = cstr(name.as_bytes())?;
    // SAFETY: `c` is NUL-terminated and outlives the call.
    retry(|| unsafe { libc::openat(dir, c.as_ptr(), flags | libc::O_CLOEXEC, mode) }).map(owned)
}

/// `fstat` of an open descriptor.
fn fstat(fd: &OwnedFd) -> io::Result<libc::stat> {
    // SAFETY: an all-zero `stat` is a valid value for fstat to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` is a valid out-pointer.
    retry(|| unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st)
}

fn is_type(st: &libc::stat, kind: libc::mode_t) -> bool {
    st.st_mode & libc::S_IFMT == kind
}

fn moved(path: &Path) -> io::Error {
    io::Error::other(format!(
        "{} changed while it was being opened (a symlink appeared on the way); not followed",
        path.display()
    ))
}

/// The normal components of a resolved absolute path; anything else is refused.
fn parts(path: &Path) -> io::Result<Vec<&OsStr>> {
    let mut out = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir => {}
            Component::Normal(n) => out.push(n),
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is not a resolved path", path.display()),
                ));
            }
        }
    }
    if !path.is_absolute() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not absolute", path.display()),
        ));
    }
    Ok(out)
}

/// `openat2(AT_FDCWD, path, flags, RESOLVE_NO_SYMLINKS)`, or `None` when the
/// kernel does not offer it.
fn openat2_no_symlinks(path: &Path, flags: libc::c_int) -> Option<io::Result<OwnedFd>> {
    if !OPENAT2_WORKS.load(Ordering::Relaxed) {
        return None;
    }
    let c = match cstr(path.as_os_str().as_bytes()) {
        Ok(c) => c,
        Err(e) => return Some(Err(e)),
    };
    // SAFETY: an all-zero `open_how` is valid; the fields are set below.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    let result = retry(|| {
        // SAFETY: `c` and `how` outlive the call; the size is `how`'s own.
        unsafe {
            libc::syscall(
                libc::SYS_openat2,
                libc::AT_FDCWD,
                c.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            ) as libc::c_int
        }
    });
    match result {
        Ok(fd) => Some(Ok(owned(fd))),
        // Missing, or filtered by a seccomp policy: walk instead.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOSYS | libc::EPERM | libc::E2BIG)
            ) =>
        {
            OPENAT2_WORKS.store(false, Ordering::Relaxed);
            None
        }
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Some(Err(moved(path))),
        Err(e) => Some(Err(e)),
    }
}

/// Opens the resolved directory `dir` (`O_PATH`) following no symlink.
/// With `create`, missing directories are made on the way.
fn open_dir(dir: &Path, create: bool) -> io::Result<OwnedFd> {
    let flags = libc::O_PATH | libc::O_DIRECTORY;
    if !create && let Some(result) = openat2_no_symlinks(dir, flags) {
        // The kernel itself refused every symlink on the way.
        return result;
    }
    let mut fd = openat(libc::AT_FDCWD, OsStr::new("/"), flags, 0)?;
    for name in parts(dir)? {
        let next = match openat(fd.as_raw_fd(), name, flags | libc::O_NOFOLLOW, 0) {
            Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                let c = cstr(name.as_bytes())?;
                // SAFETY: `c` is NUL-terminated and outlives the call.
                match retry(|| unsafe { libc::mkdirat(fd.as_raw_fd(), c.as_ptr(), 0o777) }) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
                openat(fd.as_raw_fd(), name, flags | libc::O_NOFOLLOW, 0)
            }
            other => other,
        };
        let next = next.map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP | libc::ENOTDIR) => moved(dir),
            _ => e,
        })?;
        // O_PATH|O_NOFOLLOW on a symlink opens the link itself: refuse it.
        if !is_type(&fstat(&next)?, libc::S_IFDIR) {
            return Err(moved(dir));
        }
        fd = next;
    }
    verify(&fd, dir)?;
    Ok(fd)
}

/// Checks through `/proc/self/fd` that `fd` is open at `path`. Where `/proc`
/// is not mounted the no-follow opens above stand alone.
fn verify(fd: &OwnedFd, path: &Path) -> io::Result<()> {
    match std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())) {
        Ok(real) if real == path => Ok(()),
        Ok(_) => Err(moved(path)),
        Err(_) => Ok(()),
    }
}

/// Splits a resolved path into its directory and final name.
fn split(path: &Path) -> io::Result<(&Path, &OsStr)> {
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => Ok((dir, name)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is a directory", path.display()),
        )),
    }
}

/// Opens the resolved `path` for reading, following no symlink. A FIFO or
/// device does not block the open (`O_NONBLOCK`); callers check the type
/// with `File::metadata` before reading.
pub(crate) fn open_read(path: &Path) -> io::Result<File> {
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
    let fd = match split(path) {
        // The root directory itself.
        Err(_) => openat(libc::AT_FDCWD, OsStr::new("/"), libc::O_RDONLY, 0)?,
        Ok((dir, name)) => {
            let dir_fd = open_dir(dir, false)?;
            openat(dir_fd.as_raw_fd(), name, flags, 0).map_err(|e| {
                if e.raw_os_error() == Some(libc::ELOOP) {
                    moved(path)
                } else {
                    e
                }
            })?
        }
    };
    verify(&fd, path)?;
    Ok(File::from(fd))
}

/// What is at the resolved `path` now, not following a final symlink
/// (`None` when nothing is).
pub(crate) fn kind(path: &Path) -> io::Result<Option<std::fs::FileType>> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(m.file_type())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes `data` to the resolved `path` atomically and following no symlink:
/// a temporary file beside it, then a rename over it. Missing directories
/// are created when `create_dirs`. An existing file keeps its permissions;
/// a symlink or directory in its place is refused.
pub(crate) fn write_atomic(path: &Path, data: &[u8], create_dirs: bool) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let (dir, name) = split(path)?;
    let dir_fd = open_dir(dir, create_dirs)?;
    let c_name = cstr(name.as_bytes())?;
    // SAFETY: an all-zero `stat` is a valid value for fstatat to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `c_name` is NUL-terminated, `st` a valid out-pointer.
    let existing = match retry(|| unsafe {
        libc::fstatat(
            dir_fd.as_raw_fd(),
            c_name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    }) {
        Ok(_) if is_type(&st, libc::S_IFLNK) => return Err(moved(path)),
        Ok(_) if is_type(&st, libc::S_IFDIR) => {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{} is a directory", path.display()),
            ));
        }
        Ok(_) => Some(st.st_mode & 0o7777),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };

    let mut attempt = 0;
    let (tmp, file) = loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = PathBuf::from(format!(
            ".{}.cadre-{}-{n}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        match openat(dir_fd.as_raw_fd(), tmp.as_os_str(), flags, 0o666) {
            Ok(fd) => break (tmp, File::from(fd)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
            Err(e) => return Err(e),
        }
    };
    let c_tmp = cstr(tmp.as_os_str().as_bytes())?;
    let result = (|| {
        let mut file = file;
        file.write_all(data)?;
        if let Some(mode) = existing {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        file.sync_all()?;
        drop(file);
        // SAFETY: both names are NUL-terminated and outlive the call.
        retry(|| unsafe {
            libc::renameat(
                dir_fd.as_raw_fd(),
                c_tmp.as_ptr(),
                dir_fd.as_raw_fd(),
                c_name.as_ptr(),
            )
        })
        .map(|_| ())
    })();
    if result.is_err() {
        // SAFETY: `c_tmp` is NUL-terminated; removing our own temporary file.
        unsafe { libc::unlinkat(dir_fd.as_raw_fd(), c_tmp.as_ptr(), 0) };
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;
    use std::os::unix::fs::symlink;

    fn tmp() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        (d, root)
    }

    #[test]
    fn reads_and_writes_exactly_the_resolved_path() {
        let (_d, root) = tmp();
        write_atomic(&root.join("a/b/c.txt"), b"hi", true).unwrap();
        let mut s = String::new();
        open_read(&root.join("a/b/c.txt"))
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "hi");
        // Without create_dirs a missing directory is an error.
        assert!(write_atomic(&root.join("x/y.txt"), b"", false).is_err());
    }

    #[test]
    fn a_symlink_anywhere_on_the_way_is_not_followed() {
        let (_d, root) = tmp();
        let out = root.join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("f"), "secret").unwrap();
        std::fs::create_dir(root.join("p")).unwrap();
        symlink(&out, root.join("p/dir")).unwrap();
        symlink(out.join("f"), root.join("p/file")).unwrap();
        assert!(open_read(&root.join("p/dir/f")).is_err());
        assert!(open_read(&root.join("p/file")).is_err());
        assert!(write_atomic(&root.join("p/dir/g"), b"x", true).is_err());
        assert!(write_atomic(&root.join("p/file"), b"x", false).is_err());
        assert!(write_atomic(&root.join("p/dir/new/g"), b"x", true).is_err());
        assert_eq!(std::fs::read_to_string(out.join("f")).unwrap(), "secret");
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
        // The walk without openat2 refuses the same.
        OPENAT2_WORKS.store(false, Ordering::Relaxed);
        assert!(open_read(&root.join("p/dir/f")).is_err());
        OPENAT2_WORKS.store(true, Ordering::Relaxed);
    }

    #[test]
    fn keeps_permissions_and_leaves_no_temporary_files() {
        use std::os::unix::fs::PermissionsExt;
        let (_d, root) = tmp();
        let f = root.join("a.sh");
        std::fs::write(&f, "old").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o750)).unwrap();
        write_atomic(&f, b"new", false).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o750);
        assert_eq!(std::fs::read_dir(&root).unwrap().count(), 1);
    }
}
