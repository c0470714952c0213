//! Runs real commands under the sandbox. Skipped (with a message) where the
//! kernel has no Landlock.

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

fn skip() -> bool {
    if probe() == SandboxSupport::Unavailable {
        eprintln!("skipping: Landlock is not available on this kernel");
        return true;
    }
    false
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
fn writes_allowed_in_project_and_temp() {
    if skip() {
        return;
    }
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
fn writes_denied_outside_project() {
    if skip() {
        return;
    }
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
fn data_dir_hidden_but_siblings_readable() {
    if skip() {
        return;
    }
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
fn project_containing_data_dir_hides_data_dir() {
    if skip() {
        return;
    }
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
fn project_inside_data_dir_is_blocked() {
    if skip() {
        return;
    }
    let fx = Fixture::new();
    let inner = fx.data.join("project");
    fs::create_dir(&inner).unwrap();
    let policy = SandboxPolicy::new(inner.clone(), fx.data.clone(), false);
    assert!(!run(&policy, "echo x > file").0);
    assert!(!inner.join("file").exists());
    assert!(policy.describe().contains("inside the data dir"));
}

#[test]
fn network_follows_policy() {
    if skip() {
        return;
    }
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
    for dir in ["/tmp", "/var/tmp", "/dev"] {
        assert!(policy.extra_writable.contains(&PathBuf::from(dir)));
    }
    assert!(policy.network);
}

#[test]
fn resolve_lenient_handles_missing_tail() {
    let base = base();
    let resolved = resolve_lenient(&base.join("no/such/dir")).unwrap();
    assert_eq!(resolved, base.join("no/such/dir"));
}

#[test]
fn data_dir_root_is_rejected() {
    if skip() {
        return;
    }
    let policy = SandboxPolicy::new(base(), PathBuf::from("/"), false);
    assert!(matches!(policy.prepare(), Err(SandboxError::DataDirIsRoot)));
}
