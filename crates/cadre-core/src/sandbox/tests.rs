//! Runs real commands under the sandbox. Where the kernel lacks what a test
//! needs, the build script compiles it `#[ignore]`d (cargo counts it as
//! ignored, with the reason); see `build.rs` and the README's testing section.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use tempfile::TempDir;

use super::*;

/// Test directories live outside the temp dirs (which every policy lets
/// commands write): under the target dir, or in the user's cache when the
/// checkout itself is inside a temp dir.
fn base() -> PathBuf {
    let temp_roots: Vec<PathBuf> = ["/tmp", "/var/tmp"]
        .iter()
        .map(PathBuf::from)
        .chain(std::env::var_os("TMPDIR").map(PathBuf::from))
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    let target = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/sandbox-test"
    ));
    fs::create_dir_all(&target).unwrap();
    let target = target.canonicalize().unwrap();
    if !temp_roots.iter().any(|t| target.starts_with(t)) {
        return target;
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    let cache = home.join(".cache").join("cadre-sandbox-test");
    fs::create_dir_all(&cache).unwrap();
    cache.canonicalize().unwrap()
}

/// `root/{project, data/secret.txt, sibling.txt, outside/}`.
struct Fixture {
    _root: TempDir,
    root: PathBuf,
    project: PathBuf,
    data: PathBuf,
    outside: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let root_dir = tempfile::Builder::new()
            .prefix("t")
            .tempdir_in(base())
            .unwrap();
        let root = root_dir.path().to_path_buf();
        let project = root.join("project");
        let data = root.join("data");
        let outside = root.join("outside");
        for dir in [&project, &data, &outside] {
            fs::create_dir(dir).unwrap();
        }
        fs::write(data.join("secret.txt"), "KEY").unwrap();
        fs::write(root.join("sibling.txt"), "hello sibling").unwrap();
        Fixture {
            _root: root_dir,
            root,
            project,
            data,
            outside,
        }
    }

    fn policy(&self, network: bool) -> SandboxPolicy {
        SandboxPolicy::new(self.project.clone(), self.data.clone(), network)
    }
}

/// Fails a test the build script let run on a kernel without Landlock (the
/// build was probed on another kernel): it must not pass without checking.
fn require_landlock() {
    assert_ne!(
        probe(),
        SandboxSupport::Unavailable,
        "this kernel has no Landlock, but the build found it: rebuild so the \
         sandbox tests are compiled as ignored"
    );
}

/// Runs `script` with `shell -c` under `policy` in `cwd`; returns whether it
/// succeeded and its stdout.
fn run_in(policy: &SandboxPolicy, shell: &str, cwd: &Path, script: &str) -> (bool, String) {
    let prepared = Arc::new(policy.prepare().unwrap());
    let mut cmd = Command::new(shell);
    cmd.arg("-c").arg(script).current_dir(cwd);
    // SAFETY: the hook only makes two syscalls.
    unsafe { cmd.pre_exec(command_pre_exec(prepared)) };
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!(
        "$ {script}\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), stdout)
}

fn run(policy: &SandboxPolicy, script: &str) -> (bool, String) {
    run_in(policy, "sh", &policy.project_dir, script)
}

#[test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
fn writes_allowed_in_project_and_temp() {
    require_landlock();
    let fx = Fixture::new();
    let tmp = tempfile::tempdir().unwrap();
    let policy = fx.policy(false);
    let script = format!(
        "echo a > in-project.txt && echo b > '{}/in-tmp.txt' && echo c > /dev/null",
        tmp.path().display()
    );
    assert!(run(&policy, &script).0);
    assert_eq!(
        fs::read_to_string(fx.project.join("in-project.txt")).unwrap(),
        "a\n"
    );
    assert_eq!(
        fs::read_to_string(tmp.path().join("in-tmp.txt")).unwrap(),
        "b\n"
    );
    // Reading and executing outside the project works.
    assert!(
        run(
            &policy,
            "cat /etc/hostname >/dev/null || cat /etc/passwd >/dev/null"
        )
        .0
    );
}

#[test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
fn writes_denied_outside_project() {
    require_landlock();
    let fx = Fixture::new();
    let policy = fx.policy(false);
    let target = fx.outside.join("nope.txt");
    assert!(!run(&policy, &format!("echo x > '{}'", target.display())).0);
    assert!(!target.exists());
    assert!(!run(&policy, &format!("mkdir '{}/d'", fx.outside.display())).0);
    let existing = fx.root.join("sibling.txt");
    assert!(!run(&policy, &format!(": > '{}'", existing.display())).0);
    assert_eq!(fs::read_to_string(existing).unwrap(), "hello sibling");
}

#[test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
fn data_dir_hidden_but_siblings_readable() {
    require_landlock();
    let fx = Fixture::new();
    let policy = fx.policy(false);
    let secret = fx.data.join("secret.txt");
    let (ok, out) = run(&policy, &format!("cat '{}'", secret.display()));
    assert!(!ok);
    assert!(!out.contains("KEY"));
    let (ok, out) = run(&policy, &format!("ls '{}'", fx.data.display()));
    assert!(!ok);
    assert!(!out.contains("secret"));
    assert!(!run(&policy, &format!("echo x > '{}/new'", fx.data.display())).0);
    let (ok, out) = run(&policy, &format!("cat '{}/sibling.txt'", fx.root.display()));
    assert!(ok);
    assert_eq!(out, "hello sibling");
    // Through a symlink, the data dir stays hidden.
    let link = fx.project.join("link");
    std::os::unix::fs::symlink(&fx.data, &link).unwrap();
    assert!(!run(&policy, "cat link/secret.txt").0);
}

#[test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
fn project_containing_data_dir_hides_data_dir() {
    require_landlock();
    let fx = Fixture::new();
    // Like running cadre in $HOME with the data dir at ~/.cadre.
    let policy = SandboxPolicy::new(fx.root.clone(), fx.data.clone(), false);
    let (ok, out) = run(&policy, "cat data/secret.txt");
    assert!(!ok && !out.contains("KEY"));
    assert!(!run(&policy, "echo x > data/new").0);
    assert!(!run(&policy, "mv data moved").0);
    assert!(fx.data.join("secret.txt").exists());
    assert!(run(&policy, "echo y > project/new.txt && cat sibling.txt").0);
    assert_eq!(
        fs::read_to_string(fx.project.join("new.txt")).unwrap(),
        "y\n"
    );
}

#[test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
fn project_inside_data_dir_is_blocked() {
    require_landlock();
    let fx = Fixture::new();
    let inner = fx.data.join("project");
    fs::create_dir(&inner).unwrap();
    let policy = SandboxPolicy::new(inner.clone(), fx.data.clone(), false);
    assert!(!run(&policy, "echo x > file").0);
    assert!(!inner.join("file").exists());
    assert!(policy.describe().contains("inside the data dir"));
}

#[test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
fn network_follows_policy() {
    require_landlock();
    if Command::new("bash").arg("-c").arg(":").status().is_err() {
        eprintln!("skipping: bash not found");
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
    let fx = Fixture::new();

    let on = fx.policy(true);
    assert!(run_in(&on, "bash", &fx.project, &script).0);

    let off = fx.policy(false);
    if kernel_abi() < 4 {
        eprintln!("skipping the denial check: no Landlock network rules (ABI < 4)");
        assert_eq!(off.prepare().unwrap().status(), SandboxSupport::Partial);
        return;
    }
    assert!(!run_in(&off, "bash", &fx.project, &script).0);
    assert_eq!(off.prepare().unwrap().status(), SandboxSupport::Full);
}

#[test]
fn describe_mentions_project_and_network() {
    let policy = SandboxPolicy::new(
        PathBuf::from("/some/project"),
        PathBuf::from("/some/home/.cadre"),
        false,
    );
    let line = policy.describe();
    if probe() == SandboxSupport::Unavailable {
        assert!(line.contains("NOT available"));
    } else {
        assert!(line.contains("/some/project"), "{line}");
        assert!(line.contains("network off"), "{line}");
    }
}

#[test]
fn new_fills_temp_dirs() {
    let policy = SandboxPolicy::new(PathBuf::from("/p"), PathBuf::from("/d"), true);
    for dir in ["/tmp", "/var/tmp"] {
        assert!(policy.extra_writable.contains(&PathBuf::from(dir)));
    }
    // Devices are granted one by one, not the /dev directory.
    assert!(!policy.extra_writable.contains(&PathBuf::from("/dev")));
    assert!(policy.network);
}

#[test]
fn resolve_lenient_handles_missing_tail() {
    let base = base();
    let resolved = resolve_lenient(&base.join("no/such/dir")).unwrap();
    assert_eq!(resolved, base.join("no/such/dir"));
}

#[test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
fn data_dir_root_is_rejected() {
    require_landlock();
    let policy = SandboxPolicy::new(base(), PathBuf::from("/"), false);
    assert!(matches!(policy.prepare(), Err(SandboxError::DataDirIsRoot)));
}

/// A perl script sending one datagram over UDP, one message over a unix path
/// socket, one over an abstract unix socket and one over a datagram
/// socketpair readdressed to the unix datagram path; each line of output
/// says what happened.
const SENDER: &str = r#"
use Socket;
my ($port, $path, $abstract, $dgram) = @ARGV;
if (socket(my $u, PF_INET, SOCK_DGRAM, 0)) {
    send($u, "udp", 0, sockaddr_in($port, inet_aton("127.0.0.1"))) ? print "udp sent\n" : print "udp send: $!\n";
} else { print "udp socket: $!\n" }
if (socket(my $s, PF_UNIX, SOCK_STREAM, 0)) {
    connect($s, pack_sockaddr_un($path)) ? (syswrite($s, "path"), print "path sent\n") : print "path connect: $!\n";
} else { print "path socket: $!\n" }
if (socket(my $a, PF_UNIX, SOCK_STREAM, 0)) {
    connect($a, pack_sockaddr_un("\0$abstract")) ? (syswrite($a, "abstract"), print "abstract sent\n") : print "abstract connect: $!\n";
} else { print "abstract socket: $!\n" }
if (socketpair(my $p, my $q, AF_UNIX, SOCK_DGRAM, 0)) {
    send($p, "pair", 0, pack_sockaddr_un($dgram)) ? print "pair sent\n" : print "pair send: $!\n";
} else { print "pair socketpair: $!\n" }
if (socketpair(my $p, my $q, AF_UNIX, SOCK_STREAM, 0)) {
    print "stream pair ok\n";
} else { print "stream pair: $!\n" }
"#;

/// Listeners outside the sandbox: UDP on loopback, unix stream on a path and
/// an abstract name, unix datagram on a path.
struct Listeners {
    udp: std::net::UdpSocket,
    path: std::os::unix::net::UnixListener,
    abstract_: std::os::unix::net::UnixListener,
    dgram: std::os::unix::net::UnixDatagram,
    args: String,
}

impl Listeners {
    fn new(dir: &Path) -> Self {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::{SocketAddr, UnixDatagram, UnixListener};
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.set_nonblocking(true).unwrap();
        let sock = dir.join("s.sock");
        let path = UnixListener::bind(&sock).unwrap();
        path.set_nonblocking(true).unwrap();
        let tag = dir.parent().and_then(|p| p.file_name()).unwrap();
        // A fresh name each time: another test's child, between its fork and
        // exec, may briefly hold a copy of an earlier listener, and with it
        // the name (a path socket is a new file each time anyway).
        static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let name = format!(
            "cadre-sandbox-test-{}-{}-{}",
            std::process::id(),
            tag.display(),
            MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let abstract_ =
            UnixListener::bind_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap();
        abstract_.set_nonblocking(true).unwrap();
        let dsock = dir.join("d.sock");
        let dgram = UnixDatagram::bind(&dsock).unwrap();
        dgram.set_nonblocking(true).unwrap();
        let args = format!(
            "{} '{}' '{}' '{}'",
            udp.local_addr().unwrap().port(),
            sock.display(),
            name,
            dsock.display()
        );
        Listeners {
            udp,
            path,
            abstract_,
            dgram,
            args,
        }
    }

    /// What reached the listeners.
    fn received(&self) -> Vec<&'static str> {
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        if self.udp.recv(&mut buf).is_ok() {
            got.push("udp");
        }
        if self.path.accept().is_ok() {
            got.push("path");
        }
        if self.abstract_.accept().is_ok() {
            got.push("abstract");
        }
        if self.dgram.recv(&mut buf).is_ok() {
            got.push("pair");
        }
        got
    }
}

fn perl_missing() -> bool {
    let ok = Command::new("perl")
        .args(["-MSocket", "-e", "1"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipping: perl with Socket not found");
    }
    !ok
}

#[test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
fn network_off_blocks_udp_and_unix_sockets() {
    require_landlock();
    if perl_missing() {
        return;
    }
    let fx = Fixture::new();
    let script = fx.outside.join("send.pl");
    fs::write(&script, SENDER).unwrap();

    // With network on, everything arrives: the probe itself works.
    let listeners = Listeners::new(&fx.outside);
    let cmd = format!("perl '{}' {}", script.display(), listeners.args);
    let (ok, out) = run(&fx.policy(true), &cmd);
    assert!(ok, "{out}");
    assert_eq!(
        listeners.received(),
        ["udp", "path", "abstract", "pair"],
        "{out}"
    );
    drop(listeners);
    for f in ["s.sock", "d.sock"] {
        fs::remove_file(fx.outside.join(f)).unwrap();
    }

    let listeners = Listeners::new(&fx.outside);
    let cmd = format!("perl '{}' {}", script.display(), listeners.args);
    let (ok, out) = run(&fx.policy(false), &cmd);
    assert!(ok, "{out}");
    assert_eq!(listeners.received(), Vec::<&str>::new(), "{out}");
    assert!(!out.contains(" sent"), "{out}");
    // A stream socketpair is local plumbing (asyncio, multiprocessing) and stays.
    assert!(out.contains("stream pair ok"), "{out}");
}

#[test]
#[cfg_attr(
    any(cadre_no_landlock, cadre_no_landlock_signal_scope),
    ignore = "skipped: this kernel has no Landlock signal scoping (ABI 6)"
)]
fn signals_cannot_leave_the_sandbox() {
    require_landlock();
    assert!(
        kernel_abi() >= 6,
        "no Landlock signal scoping (ABI < 6), but the build found it: rebuild"
    );
    let fx = Fixture::new();
    let mut outside = Command::new("sleep").arg("60").spawn().unwrap();
    let policy = fx.policy(true);
    // The test process is the shell's parent.
    assert!(!run(&policy, "kill -0 $PPID").0);
    assert!(!run(&policy, &format!("kill -TERM {}", outside.id())).0);
    assert!(
        outside.try_wait().unwrap().is_none(),
        "outside process alive"
    );
    // Its own children it can still signal.
    assert!(run(&policy, "sleep 30 & kill $! && wait $!; test $? -gt 128").0);
    assert!(!run(&fx.policy(false), "kill -0 $PPID").0);
    outside.kill().unwrap();
    outside.wait().unwrap();
}

/// The first block device in /dev, if any.
fn block_device() -> Option<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let mut devs: Vec<PathBuf> = fs::read_dir("/dev")
        .ok()?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_block_device()))
        .map(|e| e.path())
        .collect();
    devs.sort();
    devs.into_iter().next()
}

#[test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
fn dev_is_writable_only_for_the_usual_devices() {
    require_landlock();
    let fx = Fixture::new();
    let policy = fx.policy(false);
    let name = format!("/dev/cadre-sandbox-test-{}", std::process::id());
    assert!(!run(&policy, &format!("echo x > {name}")).0);
    assert!(!Path::new(&name).exists());
    assert!(!run(&policy, &format!("mkdir {name}")).0);
    assert!(!Path::new(&name).exists());
    match block_device() {
        Some(dev) => {
            assert!(!run(&policy, &format!(": 1<> {}", dev.display())).0);
            assert!(!run(&policy, &format!(": < {}", dev.display())).0);
        }
        None => eprintln!("no block device in /dev: skipping the block device check"),
    }
    // The usual devices and fd links keep working.
    let (ok, out) = run(
        &policy,
        "echo a > /dev/null && echo b 2>/dev/null >&2 && echo c > /dev/stderr && \
         echo d > /dev/stdout && head -c 4 /dev/zero | wc -c && head -c 4 /dev/urandom | wc -c && \
         : > /dev/full; cat /dev/null && ls /dev >/dev/null && echo ok",
    );
    assert!(ok, "{out}");
    assert!(out.contains("d\n") && out.ends_with("ok\n"), "{out}");
    // dash opens /dev/stderr and /dev/stdout as files (through /proc/self/fd).
    assert!(run_in(&policy, "sh", &fx.project, "echo e > /dev/stderr").0);
    // POSIX shared memory (Python multiprocessing locks) lives in /dev/shm.
    if Path::new("/dev/shm").is_dir() {
        let shm = format!("/dev/shm/cadre-sandbox-test-{}", std::process::id());
        assert!(run(&policy, &format!("echo x > {shm} && rm {shm}")).0);
    }
}

fn git(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
#[cfg_attr(
    any(cadre_no_landlock, cadre_no_mount_namespace),
    ignore = "skipped: needs Landlock and a private mount namespace, which are missing here"
)]
fn git_hooks_and_config_are_read_only() {
    require_landlock();
    let fx = Fixture::new();
    if !git(&fx.project, &["init", "-q"]) {
        eprintln!("skipping: git not found");
        return;
    }
    let policy = fx.policy(false);
    let ident = "GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com \
                 GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com";
    let (ok, out) = run(
        &policy,
        &format!(
            "echo hi > a.txt && git add a.txt && {ident} git commit -q -m one && \
             git checkout -q -b side && git log --oneline | wc -l"
        ),
    );
    assert!(ok, "{out}");
    assert_eq!(out.trim(), "1");
    let config = fs::read_to_string(fx.project.join(".git/config")).unwrap();
    for attack in [
        "echo x > .git/hooks/pre-commit",
        "echo '[core]' >> .git/config",
        "git config foo.bar 1",
        "rm .git/config",
        "mv .git/hooks .git/old-hooks",
        "mkdir -p .git/hooks/sub",
        "mv .git .git-old",
        "rm -rf .git/hooks",
        "ln .git/config cfg && echo '[core]' >> cfg",
        "ln -s hooks .git/h && echo x > .git/h/pre-commit",
    ] {
        assert!(!run(&policy, attack).0, "{attack} should fail");
    }
    assert!(!fx.project.join(".git/hooks/pre-commit").exists());
    assert!(fx.project.join(".git/hooks").is_dir());
    assert_eq!(
        fs::read_to_string(fx.project.join(".git/config")).unwrap(),
        config
    );
    // Still a commit away.
    let (ok, out) = run(
        &policy,
        &format!(
            "echo more >> a.txt && {ident} git commit -q -am two && git log --oneline | wc -l"
        ),
    );
    assert!(ok, "{out}");
    assert_eq!(out.trim(), "2");
}

#[test]
#[cfg_attr(
    any(cadre_no_landlock, cadre_no_mount_namespace),
    ignore = "skipped: needs Landlock and a private mount namespace, which are missing here"
)]
fn git_file_pointer_is_read_only() {
    require_landlock();
    let fx = Fixture::new();
    let main = fx.outside.join("main");
    fs::create_dir(&main).unwrap();
    let worktree = fx.project.join("wt");
    if !git(&main, &["init", "-q"])
        || !git(
            &main,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.com",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "init",
            ],
        )
        || !git(
            &main,
            &["worktree", "add", "-q", worktree.to_str().unwrap()],
        )
    {
        eprintln!("skipping: git (with worktrees) not available");
        return;
    }
    let policy = SandboxPolicy::new(worktree.clone(), fx.data.clone(), false);
    let pointer = fs::read_to_string(worktree.join(".git")).unwrap();
    let cwd = worktree.clone();
    for attack in [
        "echo 'gitdir: /tmp' > .git",
        "rm .git",
        "mv .git moved",
        "git config foo.bar 1",
    ] {
        assert!(
            !run_in(&policy, "sh", &cwd, attack).0,
            "{attack} should fail"
        );
    }
    assert_eq!(fs::read_to_string(worktree.join(".git")).unwrap(), pointer);
    // The checkout itself stays writable.
    assert!(run_in(&policy, "sh", &cwd, "echo x > file && git status --short").0);
}

#[test]
#[cfg_attr(
    any(cadre_no_landlock, cadre_no_mount_namespace),
    ignore = "skipped: needs Landlock and a private mount namespace, which are missing here"
)]
fn a_sibling_worktree_removed_after_the_plan_does_not_stop_the_command() {
    require_landlock();
    let fx = Fixture::new();
    let ident = ["-c", "user.name=t", "-c", "user.email=t@example.com"];
    let mine = fx.project.join("wt-mine");
    let sibling = fx.project.join("wt-sibling");
    let made = git(&fx.project, &["init", "-q"])
        && git(
            &fx.project,
            &[&ident[..], &["commit", "-q", "--allow-empty", "-m", "init"]].concat(),
        )
        && git(
            &fx.project,
            &["worktree", "add", "-q", mine.to_str().unwrap()],
        )
        && git(
            &fx.project,
            &["worktree", "add", "-q", sibling.to_str().unwrap()],
        );
    if !made {
        eprintln!("skipping: git (with worktrees) not available");
        return;
    }
    let policy = SandboxPolicy::new(mine.clone(), fx.data.clone(), false);
    // Planned while the sibling is there, started once it is gone (another
    // agent's worktree removed at its end).
    let prepared = Arc::new(policy.prepare().unwrap());
    let sibling_git_dir = fx.project.join(".git/worktrees/wt-sibling");
    assert!(sibling_git_dir.is_dir());
    assert!(
        !sibling_git_dir.join("hooks").exists(),
        "no hooks dir is made in another worktree's git dir"
    );
    assert!(git(
        &fx.project,
        &["worktree", "remove", "--force", sibling.to_str().unwrap()]
    ));
    assert!(!sibling_git_dir.exists());
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg("echo ran").current_dir(&mine);
    // SAFETY: the hook only makes system calls.
    unsafe { cmd.pre_exec(command_pre_exec(prepared)) };
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n");
}

/// Runs `script` under an already prepared sandbox; whether it succeeded.
fn run_prepared(prepared: PreparedSandbox, cwd: &Path, script: &str) -> bool {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(script).current_dir(cwd);
    // SAFETY: the hook only makes system calls.
    unsafe { cmd.pre_exec(command_pre_exec(Arc::new(prepared))) };
    let out = cmd.output().unwrap();
    eprintln!(
        "$ {script}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out.status.success()
}

#[test]
#[cfg_attr(
    any(cadre_no_landlock, cadre_no_mount_namespace),
    ignore = "skipped: needs Landlock and a private mount namespace, which are missing here"
)]
fn a_main_checkout_inside_a_writable_dir_stays_read_only_for_its_worktree() {
    require_landlock();
    let fx = Fixture::new();
    // `outside` plays the temp dir that holds the main checkout.
    let main = fx.outside.join("main");
    fs::create_dir_all(main.join("src")).unwrap();
    fs::write(main.join("src/lib.rs"), "kept\n").unwrap();
    let worktree = main.join(".cadre/worktrees/w1");
    let made = git(&main, &["init", "-q"])
        && git(&main, &["add", "."])
        && git(
            &main,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.com",
                "commit",
                "-q",
                "-m",
                "init",
            ],
        )
        && git(
            &main,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "cadre/w1",
                worktree.to_str().unwrap(),
            ],
        );
    if !made {
        eprintln!("skipping: git (with worktrees) not available");
        return;
    }
    let worktree = worktree.canonicalize().unwrap();
    let mut policy = SandboxPolicy::new(worktree.clone(), fx.data.clone(), false);
    policy.extra_writable = vec![fx.outside.clone()];
    let commit = "echo x > inside.txt && git add inside.txt && \
                  git -c user.name=t -c user.email=t@example.com commit -q -m inside";
    let escapes = [
        format!("echo pwned > {}/src/lib.rs", main.display()),
        format!("echo x > {}/src/new.rs", main.display()),
        format!("git rev-parse HEAD > {}/.git/refs/heads/x", main.display()),
        format!("mv {} {}/moved", main.display(), fx.outside.display()),
    ];
    // With the mounts: the rest of the writable dir stays writable.
    policy.git_writable = vec![
        main.join(".git/objects"),
        main.join(".git/refs/heads/cadre"),
        main.join(".git/logs/refs/heads/cadre"),
        main.join(".git/worktrees/w1"),
    ];
    for attack in &escapes {
        assert!(
            !run_prepared(policy.prepare().unwrap(), &worktree, attack),
            "{attack}"
        );
    }
    assert!(run_prepared(
        policy.prepare().unwrap(),
        &worktree,
        &format!("echo ok > {}/scratch.txt", fx.outside.display())
    ));
    assert!(run_prepared(policy.prepare().unwrap(), &worktree, commit));
    // Without them: kept out of the writable dir's grant instead.
    for attack in &escapes {
        assert!(
            !run_prepared(policy.prepare_with(|| false).unwrap(), &worktree, attack),
            "{attack}"
        );
    }
    assert!(run_prepared(
        policy.prepare_with(|| false).unwrap(),
        &worktree,
        // Its top level takes no new entries then (`.git` is read-only).
        "echo x > src/in-worktree.rs"
    ));
    assert_eq!(
        fs::read_to_string(main.join("src/lib.rs")).unwrap(),
        "kept\n"
    );
    assert!(!main.join("src/new.rs").exists());
    assert!(!main.join(".git/refs/heads/x").exists());
}

#[test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
fn common_tools_work_with_the_network_off() {
    require_landlock();
    let fx = Fixture::new();
    let policy = fx.policy(false);
    let python = "import asyncio, multiprocessing, subprocess, getpass, socket\n\
                  async def main(): return 1\n\
                  assert asyncio.run(main()) == 1\n\
                  if __name__ == '__main__':\n\
                  \x20   with multiprocessing.Pool(2) as p: assert p.map(abs, [-1, -2]) == [1, 2]\n\
                  \x20   lock = multiprocessing.Lock()\n\
                  \x20   assert subprocess.run(['true']).returncode == 0\n\
                  \x20   getpass.getuser(); socket.gethostname()\n\
                  \x20   print('python ok')\n";
    fs::write(fx.project.join("t.py"), python).unwrap();
    let have_python = Command::new("python3")
        .arg("-c")
        .arg("")
        .status()
        .is_ok_and(|s| s.success());
    if have_python {
        let (ok, out) = run(&policy, "python3 t.py");
        assert!(ok && out.contains("python ok"), "{out}");
    } else {
        eprintln!("python3 not found: skipping its check");
    }
    let (ok, out) = run(
        &policy,
        "id -un >/dev/null && ls -la /dev/null && getent hosts localhost >/dev/null; \
         tty; stty size 2>/dev/null; echo done",
    );
    assert!(ok && out.ends_with("done\n"), "{out}");
}

#[test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
fn terminal_input_cannot_be_injected() {
    require_landlock();
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills two fds; no name, termios or window size.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0);
    // SAFETY: both fds were just opened and are owned here only.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let fx = Fixture::new();
    for network in [true, false] {
        let prepared = Arc::new(fx.policy(network).prepare().unwrap());
        let mut cmd = Command::new("perl");
        let script = format!(
            "my $c = \"x\"; ioctl(STDIN, {}, $c) or die \"ioctl: $!\\n\"",
            libc::TIOCSTI
        );
        cmd.args(["-e", &script])
            .stdin(std::process::Stdio::from(slave.try_clone().unwrap()));
        // SAFETY: the hook only makes system calls.
        unsafe { cmd.pre_exec(command_pre_exec(prepared)) };
        let out = cmd.output().unwrap();
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success());
    }
    // Nothing was pushed into the terminal's input (it would be echoed).
    // SAFETY: a non-blocking read on the master fd into a local buffer.
    unsafe { libc::fcntl(master.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    let mut buf = [0u8; 8];
    let n = unsafe { libc::read(master.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    assert!(n <= 0, "{:?}", &buf[..n as usize]);
}

#[test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
fn git_dir_is_read_only_without_mount_namespaces() {
    require_landlock();
    let fx = Fixture::new();
    if !git(&fx.project, &["init", "-q"]) {
        eprintln!("skipping: git not found");
        return;
    }
    fs::create_dir(fx.project.join("src")).unwrap();
    let prepared = Arc::new(fx.policy(false).prepare_with(|| false).unwrap());
    let run = |script: &str| {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script).current_dir(&fx.project);
        // SAFETY: the hook only makes system calls.
        unsafe { cmd.pre_exec(command_pre_exec(prepared.clone())) };
        let out = cmd.output().unwrap();
        eprintln!("$ {script}\n{}", String::from_utf8_lossy(&out.stderr));
        out.status.success()
    };
    assert!(!run("echo x > .git/hooks/pre-commit"));
    assert!(!run("git config foo.bar 1"));
    assert!(!run("mv .git .git-old"));
    assert!(!run("echo x > .git/commondir"));
    assert!(!fx.project.join(".git/hooks/pre-commit").exists());
    // The rest of the project stays writable.
    assert!(run("echo x > src/a.txt"));
}

#[test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
fn git_hooks_read_only_from_a_working_dir_inside_them() {
    require_landlock();
    let fx = Fixture::new();
    if !git(&fx.project, &["init", "-q"]) {
        eprintln!("skipping: git not found");
        return;
    }
    let hooks = fx.project.join(".git/hooks");
    let (ok, _) = run_in(&fx.policy(false), "sh", &hooks, "echo x > pre-commit");
    assert!(!ok);
    assert!(!hooks.join("pre-commit").exists());
}

/// A sandboxed command holds no `CAP_SYS_PTRACE`, now or after any `exec`:
/// with it, a command running as root could read `/proc/<cadre>/environ`
/// although cadre is not dumpable. (A dumpable process of the same user
/// outside cadre stays readable: Landlock does not scope `/proc` reads.)
#[test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
fn commands_hold_no_ptrace_capability() {
    require_landlock();
    let fx = Fixture::new();
    let policy = fx.policy(false);
    let (ok, out) = run(
        &policy,
        "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status",
    );
    assert!(ok, "{out}");
    let mut seen = 0;
    for line in out.lines() {
        let (name, hex) = line.split_once(':').unwrap();
        let bits = u64::from_str_radix(hex.trim(), 16).unwrap();
        assert_eq!(
            bits & (1 << 19),
            0,
            "{name} still holds CAP_SYS_PTRACE: {out}"
        );
        seen += 1;
    }
    assert_eq!(seen, 5, "{out}");
}

/// Another terminal's pty cannot be written or read (keystrokes injected
/// into, or stolen from, the user's shells).
#[test]
#[cfg_attr(cadre_no_landlock, ignore = "skipped: this kernel has no Landlock")]
fn other_terminals_are_out_of_reach() {
    require_landlock();
    let fx = Fixture::new();
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two new descriptors, closed below.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0);
    let name = fs::read_link(format!("/proc/self/fd/{slave}")).unwrap();
    let policy = fx.policy(false);
    let (wrote, _) = run(&policy, &format!("echo INJECTED > {}", name.display()));
    let (read, _) = run(&policy, &format!(": < {}", name.display()));
    // SAFETY: closing the descriptors openpty gave us.
    unsafe {
        libc::close(master);
        libc::close(slave);
    }
    assert!(!wrote, "wrote to {}", name.display());
    assert!(!read, "read from {}", name.display());
}
