//! Running hook commands: each in its own process group, all at once, each
//! with its timeout, stdin fed the event's JSON.

use std::io;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use super::HookCommand;
use crate::tools::bash::reaper::tie_tree_to_cadre;
use crate::tools::bash::{GroupGuard, Output};

/// Bytes kept of each of a hook's stdout and stderr; the rest is read and
/// dropped so the hook never blocks on a full pipe.
const STREAM_CAP: usize = 1024 * 1024;
/// After the hook's shell exits, how long to wait for processes it left
/// behind that still hold its output pipes.
const DRAIN_GRACE: Duration = Duration::from_millis(200);

/// What one hook process did.
#[derive(Debug, Clone, Default)]
pub struct HookRun {
    /// The command as configured.
    pub command: String,
    /// Where the hook was configured.
    pub source: String,
    /// The exit code; `None` when it did not exit normally (signal, timeout,
    /// cancellation, start failure).
    pub exit_code: Option<i32>,
    /// Its stdout, at most 1 MiB (then a truncation note).
    pub stdout: String,
    /// Its stderr, at most 1 MiB (then a truncation note).
    pub stderr: String,
    /// Whether it was killed for exceeding its timeout.
    pub timed_out: bool,
    /// Whether it was killed because the run was cancelled.
    pub cancelled: bool,
    /// Why it could not be started, when it could not.
    pub start_error: Option<String>,
    /// How long it ran.
    pub duration: Duration,
    /// The timeout it ran with.
    pub timeout: Duration,
}

/// Runs the commands in parallel, each with its timeout, under `bash -c`
/// (`sh -c` without bash) in `cwd`, with `input` on stdin, the process
/// environment minus the model keys plus `env` plus `CLAUDE_PROJECT_DIR` and
/// `CADRE_PROJECT_DIR`. Each runs in its own process group, killed as a
/// group on timeout or when `cancel` fires. Results are in `commands` order.
pub async fn run_hooks(
    commands: &[HookCommand],
    input: &serde_json::Value,
    cwd: &Path,
    project_dir: &Path,
    env: &[(String, String)],
    cancel: &CancellationToken,
) -> Vec<HookRun> {
    let mut stdin = serde_json::to_vec(input).unwrap_or_default();
    stdin.push(b'\n');
    let runs = commands
        .iter()
        .map(|c| run_one(c, &stdin, cwd, project_dir, env, cancel));
    futures::future::join_all(runs).await
}

/// The command for one hook under `shell`, before spawning.
fn build_command(
    shell: &str,
    hook: &HookCommand,
    cwd: &Path,
    project_dir: &Path,
    env: &[(String, String)],
) -> Command {
    let mut cmd = Command::new(shell);
    cmd.arg("-c")
        .arg(&hook.command)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    // Hooks never see cadre's model keys from the inherited environment;
    // `env` comes from the user's own settings and is applied as given.
    for key in crate::secrets::secret_vars() {
        cmd.env_remove(key);
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd.envs(hook.env.iter().map(|(k, v)| (k, v)));
    cmd.env("CLAUDE_PROJECT_DIR", project_dir)
        .env("CADRE_PROJECT_DIR", project_dir);
    // What the hook starts goes with cadre, even in a session of its own.
    // SAFETY: the hook makes only async-signal-safe system calls (see reaper).
    unsafe {
        cmd.pre_exec(tie_tree_to_cadre());
    }
    cmd
}

/// Starts the hook under bash, or sh when there is no bash.
fn spawn(
    hook: &HookCommand,
    cwd: &Path,
    project_dir: &Path,
    env: &[(String, String)],
) -> io::Result<Child> {
    let mut last_err = None;
    for shell in ["bash", "sh"] {
        match build_command(shell, hook, cwd, project_dir, env).spawn() {
            Ok(child) => return Ok(child),
            Err(e) if e.kind() == io::ErrorKind::NotFound && !cwd.is_dir() => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("working directory {} does not exist", cwd.display()),
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("no shell found")))
}

/// Reads once from `stream` into `out`; `false` at end of stream or error.
async fn read_some<R: AsyncRead + Unpin>(
    stream: &mut Option<R>,
    buf: &mut [u8],
    out: &mut Output,
) -> bool {
    let Some(s) = stream else {
        return false;
    };
    match s.read(buf).await {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            out.push(&buf[..n]);
            true
        }
    }
}

/// Runs one hook to its end, its timeout or cancellation.
async fn run_one(
    hook: &HookCommand,
    input: &[u8],
    cwd: &Path,
    project_dir: &Path,
    env: &[(String, String)],
    cancel: &CancellationToken,
) -> HookRun {
    let started = Instant::now();
    let mut run = HookRun {
        command: hook.command.clone(),
        source: hook.source.clone(),
        timeout: hook.timeout,
        ..HookRun::default()
    };
    let mut child = match spawn(hook, cwd, project_dir, env) {
        Ok(c) => c,
        Err(e) => {
            run.start_error = Some(e.to_string());
            run.duration = started.elapsed();
            return run;
        }
    };
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let mut guard = GroupGuard(pgid);

    let stdin = child.stdin.take();
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    // Written in one go, then closed; a hook that exits without reading
    // makes the write fail (EPIPE), which is not the hook's failure.
    let write = async move {
        if let Some(mut pipe) = stdin {
            let _ = pipe.write_all(input).await;
            let _ = pipe.shutdown().await;
        }
    };
    tokio::pin!(write);
    let mut written = false;

    let mut out = Output::new(STREAM_CAP);
    let mut err = Output::new(STREAM_CAP);
    let mut out_buf = vec![0u8; 16 * 1024];
    let mut err_buf = vec![0u8; 16 * 1024];
    let mut status: Option<ExitStatus> = None;
    let deadline = tokio::time::Instant::now() + hook.timeout;
    let mut drain_until: Option<tokio::time::Instant> = None;

    while !(stdout.is_none() && stderr.is_none() && status.is_some()) {
        let drain = async {
            match drain_until {
                Some(t) => tokio::time::sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = &mut write, if !written => written = true,
            more = read_some(&mut stdout, &mut out_buf, &mut out), if stdout.is_some() => {
                if !more {
                    stdout = None;
                }
            }
            more = read_some(&mut stderr, &mut err_buf, &mut err), if stderr.is_some() => {
                if !more {
                    stderr = None;
                }
            }
            s = child.wait(), if status.is_none() => match s {
                Ok(s) => {
                    status = Some(s);
                    drain_until = Some(tokio::time::Instant::now() + DRAIN_GRACE);
                }
                Err(e) => {
                    run.start_error = Some(format!("cannot wait for the hook: {e}"));
                    break;
                }
            },
            () = tokio::time::sleep_until(deadline) => {
                run.timed_out = true;
                break;
            }
            () = cancel.cancelled() => {
                run.cancelled = true;
                break;
            }
            // The shell is gone but something it started holds a pipe.
            () = drain => break,
        }
    }

    if run.timed_out || run.cancelled || status.is_none() {
        // Hooks get no grace period: nothing waits on their cleanup, and the
        // agent is blocked until they are gone.
        if let Some(pgid) = pgid {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
        if status.is_none() {
            let _ = child.start_kill();
            let _ = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
        }
    }
    // Finished normally: whatever it left running in the background is its
    // own business (the reaper still ends it with cadre).
    guard.0 = None;
    if !(run.timed_out || run.cancelled)
        && let Some(s) = status
    {
        use std::os::unix::process::ExitStatusExt;
        run.exit_code = s.code();
        if let Some(sig) = s.signal() {
            err.push(format!("\nkilled by signal {sig}").as_bytes());
        }
    }
    run.stdout = out.text();
    run.stderr = err.text();
    run.duration = started.elapsed();
    run
}

#[cfg(test)]
pub(super) mod tests {
    use std::ffi::OsStr;

    use serde_json::json;

    use super::*;

    /// A hook running `command` with a timeout of `secs` seconds.
    pub(crate) fn hook(command: &str, secs: f64) -> HookCommand {
        HookCommand {
            command: command.to_string(),
            timeout: Duration::from_secs_f64(secs),
            source: "test".to_string(),
            env: Vec::new(),
        }
    }

    async fn run_in(dir: &Path, commands: &[HookCommand]) -> Vec<HookRun> {
        run_hooks(
            commands,
            &json!({"hook_event_name": "Stop"}),
            dir,
            dir,
            &[],
            &CancellationToken::new(),
        )
        .await
    }

    use crate::tools::util::test_support::gone_soon;

    #[tokio::test]
    async fn hooks_run_in_parallel() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path().display();
        // Each marks its start, then waits for the other's mark: only
        // possible when both run at once (one after the other, the first
        // would time out).
        let a = format!("echo $$ > {d}/a; while [ ! -f {d}/b ]; do sleep 0.02; done; echo a-done");
        let b = format!("echo $$ > {d}/b; while [ ! -f {d}/a ]; do sleep 0.02; done; echo b-done");
        let runs = run_in(dir.path(), &[hook(&a, 20.0), hook(&b, 20.0)]).await;
        assert_eq!(runs.len(), 2);
        for (run, want) in runs.iter().zip(["a-done", "b-done"]) {
            assert!(!run.timed_out, "{run:?}");
            assert_eq!(run.exit_code, Some(0), "{run:?}");
            assert_eq!(run.stdout, want);
        }
    }

    #[tokio::test]
    async fn identical_commands_run_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let command = format!("echo ran >> {}/log", dir.path().display());
        let entry = json!({"hooks": [{"type": "command", "command": command}]});
        let (mut set, _) = crate::hooks::HookSet::parse(
            &json!({"PreToolUse": [entry.clone(), entry.clone()]}),
            "user settings",
        )
        .expect("valid");
        let (other, _) =
            crate::hooks::HookSet::parse(&json!({"PreToolUse": [entry]}), "project settings")
                .expect("valid");
        set.extend(other);
        let commands = set.matching(crate::hooks::HookEvent::PreToolUse, Some("Bash"));
        assert_eq!(commands.len(), 1);
        let runs = run_in(dir.path(), &commands).await;
        assert_eq!(runs.len(), 1);
        let log = std::fs::read_to_string(dir.path().join("log")).expect("log");
        assert_eq!(log, "ran\n");
    }

    #[tokio::test]
    async fn stdin_env_and_cwd_reach_the_hook() {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = tempfile::tempdir().expect("tempdir");
        let d = dir.path().display();
        let command = format!(
            "cat > {d}/stdin.json; pwd; echo \"$CLAUDE_PROJECT_DIR|$CADRE_PROJECT_DIR|$FROM_SETTINGS\""
        );
        let input = json!({"hook_event_name": "PreToolUse", "tool_name": "Bash"});
        let runs = run_hooks(
            &[hook(&command, 10.0)],
            &input,
            dir.path(),
            project.path(),
            &[("FROM_SETTINGS".to_string(), "yes".to_string())],
            &CancellationToken::new(),
        )
        .await;
        let run = &runs[0];
        assert_eq!(run.exit_code, Some(0), "{run:?}");
        let p = project.path().display();
        let cwd = dir.path().canonicalize().expect("canonical");
        assert_eq!(run.stdout, format!("{}\n{p}|{p}|yes", cwd.display()));
        let got = std::fs::read_to_string(dir.path().join("stdin.json")).expect("stdin file");
        let got: serde_json::Value = serde_json::from_str(&got).expect("json");
        assert_eq!(got, input);
        assert_eq!(run.command, command);
        assert_eq!(run.source, "test");
    }

    #[test]
    fn model_keys_are_removed_and_settings_env_added() {
        let dir = Path::new("/");
        let env = [("PATH_EXTRA".to_string(), "1".to_string())];
        let cmd = build_command("bash", &hook("true", 1.0), dir, Path::new("/p"), &env);
        let envs: Vec<(&OsStr, Option<&OsStr>)> = cmd.as_std().get_envs().collect();
        for key in crate::secrets::KEY_VARS {
            assert!(
                envs.contains(&(OsStr::new(key), None)),
                "{key} not removed: {envs:?}"
            );
        }
        assert!(envs.contains(&(OsStr::new("PATH_EXTRA"), Some(OsStr::new("1")))));
        assert!(envs.contains(&(OsStr::new("CLAUDE_PROJECT_DIR"), Some(OsStr::new("/p")))));
        assert!(envs.contains(&(OsStr::new("CADRE_PROJECT_DIR"), Some(OsStr::new("/p")))));
    }

    #[tokio::test]
    async fn timeout_kills_the_group() {
        let dir = tempfile::tempdir().expect("tempdir");
        let command = "sleep 100 & echo $!; wait";
        let runs = run_in(dir.path(), &[hook(command, 0.5)]).await;
        let run = &runs[0];
        assert!(run.timed_out, "{run:?}");
        assert_eq!(run.exit_code, None);
        let pid: i32 = run.stdout.trim().parse().expect("pid printed");
        assert!(gone_soon(pid).await, "grandchild {pid} still running");
        assert!(run.duration < Duration::from_secs(5), "{run:?}");
    }

    #[tokio::test]
    async fn cancel_kills() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            trigger.cancel();
        });
        let runs = run_hooks(
            &[hook("sleep 100 & echo $!; wait", 60.0)],
            &json!({}),
            dir.path(),
            dir.path(),
            &[],
            &cancel,
        )
        .await;
        let run = &runs[0];
        assert!(run.cancelled && !run.timed_out, "{run:?}");
        let pid: i32 = run.stdout.trim().parse().expect("pid printed");
        assert!(gone_soon(pid).await, "grandchild {pid} still running");
    }

    #[tokio::test]
    async fn a_hook_that_ignores_stdin_still_gives_its_result() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Far more input than a pipe buffer, to a hook that never reads it.
        let input = json!({"big": "x".repeat(4 * 1024 * 1024)});
        let runs = run_hooks(
            &[hook("echo '{\"ok\": true}'; exit 0", 10.0)],
            &input,
            dir.path(),
            dir.path(),
            &[],
            &CancellationToken::new(),
        )
        .await;
        let run = &runs[0];
        assert_eq!(run.exit_code, Some(0), "{run:?}");
        assert_eq!(run.stdout, "{\"ok\": true}");
        assert!(run.start_error.is_none());
    }

    #[tokio::test]
    async fn huge_output_is_capped_and_the_hook_finishes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let command = "head -c 10000000 /dev/zero | tr '\\0' a; echo done >&2";
        let runs = run_in(dir.path(), &[hook(command, 30.0)]).await;
        let run = &runs[0];
        assert_eq!(run.exit_code, Some(0), "stderr: {}", run.stderr);
        assert!(run.stdout.len() < STREAM_CAP + 100, "{}", run.stdout.len());
        assert!(
            run.stdout.ends_with("[truncated 8951451 bytes]"),
            "{}",
            &run.stdout[run.stdout.len() - 60..]
        );
        assert_eq!(run.stderr, "done");
    }

    #[tokio::test]
    async fn exit_codes_and_start_failures() {
        let dir = tempfile::tempdir().expect("tempdir");
        let runs = run_in(
            dir.path(),
            &[hook("echo why >&2; exit 2", 10.0), hook("kill -9 $$", 10.0)],
        )
        .await;
        assert_eq!(runs[0].exit_code, Some(2));
        assert_eq!(runs[0].stderr, "why");
        assert_eq!(runs[1].exit_code, None);
        assert!(runs[1].stderr.contains("killed by signal 9"), "{runs:?}");

        let missing = dir.path().join("missing");
        let runs = run_in(&missing, &[hook("true", 10.0)]).await;
        let error = runs[0].start_error.as_deref().unwrap_or("");
        assert!(error.contains("does not exist"), "{runs:?}");
    }
}
