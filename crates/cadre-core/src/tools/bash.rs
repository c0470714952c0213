//! `Bash`: runs a shell command in the project directory, with a timeout, in
//! its own process group so the whole group can be stopped.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use futures::future::BoxFuture;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::time::{Instant, sleep_until};

use super::{Tool, ToolContext, ToolOutput, TypedTool};
use crate::permissions::ToolEffect;
use crate::sandbox::{PreparedSandbox, command_pre_exec};

pub(crate) mod reaper;

/// Timeout when none is given, in milliseconds.
const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Longest allowed timeout, in milliseconds.
const MAX_TIMEOUT_MS: u64 = 600_000;
/// After the shell exits, how long to wait for background processes that
/// still hold the output pipe before returning.
const DRAIN_GRACE: Duration = Duration::from_millis(200);
/// After SIGTERM, how long before SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// Runs shell commands.
pub struct BashTool {
    /// Whether the agent has `TaskOutput` to read a background command's
    /// output with; without it, its texts point to the notice instead.
    task_output: bool,
}

impl Default for BashTool {
    fn default() -> Self {
        BashTool { task_output: true }
    }
}

/// The arguments of a `Bash` call.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The shell command to run
    command: String,
    /// Timeout in milliseconds (default 120000, max 600000)
    #[schemars(range(min = 1, max = MAX_TIMEOUT_MS))]
    timeout: Option<u64>,
    /// Short description of what the command does, in 5-10 words
    description: Option<String>,
    /// Run as a background task: returns a task id at once; read output with TaskOutput; a <task-notification> arrives when it ends
    run_in_background: Option<bool>,
    /// Commands run sandboxed (writes only in the project and temp dirs, no network). Set false only when a command truly needs more; the user is always asked first.
    sandbox: Option<bool>,
}

impl Args {
    /// What the schema cannot say: a command to run, a timeout in range
    /// (0 is not "none" or "the default": Claude Code's Bash takes 1 to 600000 ms).
    fn check(&self) -> Result<(), ToolOutput> {
        if self.command.trim().is_empty() {
            return Err(ToolOutput::invalid_arguments("command is empty"));
        }
        match self.timeout {
            Some(t) if !(1..=MAX_TIMEOUT_MS).contains(&t) => Err(ToolOutput::invalid_arguments(
                format!("timeout must be between 1 and {MAX_TIMEOUT_MS} ms (got {t})"),
            )),
            _ => Ok(()),
        }
    }
}

impl TypedTool for BashTool {
    type Input = Args;
    const NAME: &'static str = "Bash";
    const DESCRIPTION: &'static str = "Run a shell command with `bash -c` in the project directory and return its combined \
         stdout and stderr (plus the exit code when it is not 0). Stdin is closed: interactive \
         commands will not work.\n\
         Default timeout 120000 ms, at most 600000 (`timeout`); on timeout the command and \
         its children are killed. Each call runs in a fresh shell: `cd` and variables do not \
         persist. Prefer Read/Glob/Grep/Edit over cat/find/grep/sed for files.";
    const EFFECT: ToolEffect = ToolEffect::Execute;

    fn adjust_schema(&self, schema: serde_json::Value) -> serde_json::Value {
        if self.task_output {
            schema
        } else {
            super::with_description(
                schema,
                "run_in_background",
                "Run as a background task: returns a task id at once; a <task-notification> with the end of its output arrives when it ends",
            )
        }
    }

    fn check(&self, args: &Args) -> Result<(), ToolOutput> {
        args.check()
    }

    fn among(&self, tools: &[&str]) -> Option<std::sync::Arc<dyn Tool>> {
        let task_output = tools.contains(&"TaskOutput");
        (task_output != self.task_output)
            .then(|| std::sync::Arc::new(BashTool { task_output }) as std::sync::Arc<dyn Tool>)
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext, args: Args) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            // What a command changes is not tracked; a restore names it.
            if let Some(c) = &ctx.checkpoints {
                c.note_bash(&args.command);
            }
            let timeout_ms = args.timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
            // In the editor's terminal, where the user watches it run.
            if args.run_in_background != Some(true)
                && let Some(terminal) = &ctx.editor_terminal
            {
                let policy = match (&ctx.sandbox, args.sandbox) {
                    (Some(policy), None | Some(true)) => Some(policy.as_ref()),
                    _ => None,
                };
                return in_editor_terminal(
                    ctx,
                    terminal.as_ref(),
                    &args.command,
                    timeout_ms,
                    policy,
                )
                .await;
            }
            // The permission layer has already approved `sandbox: false`.
            let sandbox = match (&ctx.sandbox, args.sandbox) {
                (Some(policy), None | Some(true)) => match policy.prepare() {
                    Ok(prepared) => Some(std::sync::Arc::new(prepared)),
                    Err(e) => {
                        return ToolOutput::error(format!(
                            "cannot set up the sandbox: {e}; the command was not run"
                        ));
                    }
                },
                _ => None,
            };
            if args.run_in_background == Some(true) {
                // Without an explicit timeout a background command runs until it
                // ends or is stopped.
                let timeout_ms = args.timeout.unwrap_or(BACKGROUND_TIMEOUT_MS);
                return start_background(
                    ctx,
                    args.command,
                    args.description,
                    timeout_ms,
                    sandbox,
                    self.task_output,
                )
                .await;
            }
            match run(
                ctx,
                &args.command,
                timeout_ms,
                sandbox,
                &ctx.cancel,
                None,
                None,
            )
            .await
            {
                Ok(out) => out,
                Err(e) => ToolOutput::error(format!("cannot run command: {e}")),
            }
        })
    }
}

/// How a run ended early.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Timeout,
    Cancelled,
}

/// Output collected up to a cap; the rest is counted and discarded.
pub(crate) struct Output {
    kept: Vec<u8>,
    dropped: u64,
    cap: usize,
}

impl Output {
    /// An empty buffer keeping at most `cap` bytes.
    pub(crate) fn new(cap: usize) -> Output {
        Output {
            kept: Vec::new(),
            dropped: 0,
            cap,
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        let room = self.cap.saturating_sub(self.kept.len());
        let take = room.min(bytes.len());
        self.kept.extend_from_slice(&bytes[..take]);
        self.dropped += (bytes.len() - take) as u64;
    }

    pub(crate) fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.kept).into_owned();
        if self.dropped > 0 {
            // The marker fits in the cap, so the result is not cut again.
            text = super::cut_with_marker(&text, self.dropped, self.cap);
        } else {
            while text.ends_with('\n') {
                text.pop();
            }
        }
        text
    }
}

/// Kills the process group if the run is abandoned (future dropped) midway.
pub(crate) struct GroupGuard(pub(crate) Option<Pid>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

/// Where a command's output also goes as it arrives (a background task's log).
type Tee<'a> = Option<&'a (dyn Fn(&[u8]) + Send + Sync)>;

async fn run(
    ctx: &ToolContext,
    command: &str,
    timeout_ms: u64,
    sandbox: Option<std::sync::Arc<PreparedSandbox>>,
    cancel: &tokio_util::sync::CancellationToken,
    tee: Tee<'_>,
    on_spawn: Option<&(dyn Fn(u32) + Send + Sync)>,
) -> io::Result<ToolOutput> {
    if !ctx.cwd.is_dir() {
        return Ok(ToolOutput::error(format!(
            "working directory {} does not exist",
            ctx.cwd.display()
        )));
    }
    // One pipe for both streams keeps stdout and stderr in arrival order.
    let (reader, writer) = io::pipe()?;
    let mut child = spawn(command, &ctx.cwd, &ctx.command_env, writer, sandbox)?;
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    if let (Some(on_spawn), Some(id)) = (on_spawn, child.id()) {
        on_spawn(id);
    }
    let mut guard = GroupGuard(pgid);
    let mut rx = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;

    let mut out = Output::new(ctx.output_cap);
    let mut buf = vec![0u8; 16 * 1024];
    let mut eof = false;
    let mut status: Option<ExitStatus> = None;
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    let mut drain_until: Option<Instant> = None;
    let mut stop: Option<Stop> = None;

    while !(eof && status.is_some()) {
        let drain = async {
            match drain_until {
                Some(t) => sleep_until(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = rx.read(&mut buf), if !eof => match r {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => {
                    out.push(&buf[..n]);
                    if let Some(tee) = tee {
                        tee(&buf[..n]);
                    }
                }
            },
            s = child.wait(), if status.is_none() => {
                status = Some(s?);
                drain_until = Some(Instant::now() + DRAIN_GRACE);
            }
            _ = sleep_until(deadline) => {
                stop = Some(Stop::Timeout);
                break;
            }
            _ = cancel.cancelled() => {
                stop = Some(Stop::Cancelled);
                break;
            }
            // The shell is gone but something it started still holds the pipe.
            _ = drain => break,
        }
    }

    let Some(stop) = stop else {
        // Finished normally: leave any background processes it started alone.
        guard.0 = None;
        let text = out.text();
        let body = if text.is_empty() {
            "(no output)"
        } else {
            &text
        };
        return Ok(match status.map(|s| (s.code(), s)) {
            Some((Some(0), _)) if text.is_empty() => ToolOutput::ok("(no output)\nexit code 0"),
            Some((Some(0), _)) => ToolOutput::ok(text),
            Some((Some(code), _)) => ToolOutput::error(format!("{body}\nexit code {code}")),
            Some((None, s)) => {
                use std::os::unix::process::ExitStatusExt;
                let sig = s.signal().unwrap_or(0);
                ToolOutput::error(format!("{body}\nkilled by signal {sig}"))
            }
            None => ToolOutput::error(format!("{body}\nexit status unknown")),
        });
    };

    // Stop the whole group: SIGTERM, then SIGKILL after a grace period.
    if let Some(pgid) = pgid {
        let _ = killpg(pgid, Signal::SIGTERM);
    }
    let kill_at = Instant::now() + KILL_GRACE;
    while !(eof && status.is_some()) {
        tokio::select! {
            r = rx.read(&mut buf), if !eof => match r {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => {
                    out.push(&buf[..n]);
                    if let Some(tee) = tee {
                        tee(&buf[..n]);
                    }
                }
            },
            s = child.wait(), if status.is_none() => status = Some(s?),
            _ = sleep_until(kill_at) => break,
        }
    }
    if let Some(pgid) = pgid {
        let _ = killpg(pgid, Signal::SIGKILL);
    }
    guard.0 = None;
    if status.is_none() {
        let _ = child.start_kill();
        let _ = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
    }
    let head = match stop {
        Stop::Timeout => format!("command timed out after {timeout_ms} ms"),
        Stop::Cancelled => "interrupted".to_string(),
    };
    let text = out.text();
    Ok(ToolOutput::error(if text.is_empty() {
        head
    } else {
        format!("{head}\n{text}")
    }))
}

/// Runs `command` in the editor's terminal: under `policy` through cadre's
/// own launcher (`cadre __sandbox-exec`), else as `bash -c`. The result
/// reads as a run here would.
async fn in_editor_terminal(
    ctx: &ToolContext,
    terminal: &dyn super::EditorTerminal,
    command: &str,
    timeout_ms: u64,
    policy: Option<&crate::sandbox::SandboxPolicy>,
) -> ToolOutput {
    let (program, args) = match policy {
        Some(policy) => {
            let Ok(me) = std::env::current_exe() else {
                return ToolOutput::error("cannot find cadre's own program to sandbox the command");
            };
            let Ok(json) = serde_json::to_string(policy) else {
                return ToolOutput::error("cannot pass the sandbox to the editor's terminal");
            };
            (
                me.display().to_string(),
                vec!["__sandbox-exec".to_string(), json, command.to_string()],
            )
        }
        None => (
            "bash".to_string(),
            vec!["-c".to_string(), command.to_string()],
        ),
    };
    let call = super::TerminalCall {
        program,
        args,
        env: ctx.command_env.as_ref().clone(),
        cwd: &ctx.cwd,
        output_limit: ctx.output_cap,
        timeout: Duration::from_millis(timeout_ms),
        cancel: &ctx.cancel,
        agent_id: &ctx.agent_id,
        call_id: ctx.call_id.as_deref(),
    };
    let run = match terminal.run(call).await {
        Ok(run) => run,
        Err(e) => return ToolOutput::error(format!("cannot run command: {e}")),
    };
    let mut text = run.output;
    while text.ends_with('\n') {
        text.pop();
    }
    if run.truncated {
        text = format!("[the start of the output was dropped]\n{text}");
    }
    let body = if text.is_empty() {
        "(no output)"
    } else {
        &text
    };
    if run.timed_out || run.cancelled {
        let head = if run.timed_out {
            format!("command timed out after {timeout_ms} ms")
        } else {
            "interrupted".to_string()
        };
        return ToolOutput::error(if text.is_empty() {
            head
        } else {
            format!("{head}\n{text}")
        });
    }
    match (run.exit_code, run.signal) {
        (Some(0), _) if text.is_empty() => ToolOutput::ok("(no output)\nexit code 0"),
        (Some(0), _) => ToolOutput::ok(text),
        (Some(code), _) => ToolOutput::error(format!("{body}\nexit code {code}")),
        (None, Some(sig)) => ToolOutput::error(format!("{body}\nkilled by signal {sig}")),
        (None, None) => ToolOutput::error(format!("{body}\nexit status unknown")),
    }
}

/// Longest a background command runs without an explicit `timeout`: a day.
const BACKGROUND_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;
/// Bytes of a background command's output quoted in its completion notice.
const BACKGROUND_TAIL: usize = 2048;

/// Starts `command` as a background task of this agent and returns at once.
async fn start_background(
    ctx: &ToolContext,
    command: String,
    description: Option<String>,
    timeout_ms: u64,
    sandbox: Option<std::sync::Arc<PreparedSandbox>>,
    task_output: bool,
) -> ToolOutput {
    let Some(work) = ctx.background.clone() else {
        return ToolOutput::error(
            "background commands are not available to this agent; run it in the foreground",
        );
    };
    let description = description
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(|| command.chars().take(80).collect());
    let spec = crate::tasks::TaskSpec {
        owner: &ctx.agent_id,
        kind: crate::tasks::TaskKind::Bash,
        description: &description,
        agent_type: None,
        name: None,
        background: true,
    };
    let (row, cancel) = match work.start(spec, None).await {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(format!("cannot start a background task: {e}")),
    };
    let id = row.id.clone();
    let mut bg_ctx = ctx.clone();
    // The captured text only feeds the notice's tail; the log gets everything.
    bg_ctx.output_cap = BACKGROUND_TAIL * 8;
    tokio::spawn(async move {
        let log_work = work.clone();
        let log_id = id.clone();
        // Pieces are redacted as a stream: a key split between two reads is
        // caught. They are written by the table's thread, in order, and
        // before the task's end is recorded.
        let redactor = std::sync::Mutex::new(crate::secrets::StreamRedactor::default());
        let tee = |bytes: &[u8]| {
            let text = redactor
                .lock()
                .map(|mut r| r.push(bytes))
                .unwrap_or_default();
            if !text.is_empty() {
                log_work.table().queue_output(&log_id, text);
            }
        };
        // The group is recorded so a later cadre can stop it if this one dies.
        let group_work = work.clone();
        let group_id = id.clone();
        let on_spawn = move |pid: u32| {
            let start = crate::tasks::proc_id::start_time(pid);
            group_work.table().queue_group(&group_id, pid, start);
        };
        let result = run(
            &bg_ctx,
            &command,
            timeout_ms,
            sandbox,
            &cancel,
            Some(&tee),
            Some(&on_spawn),
        )
        .await;
        let rest = redactor.lock().map(|mut r| r.finish()).unwrap_or_default();
        let _ = work.table().append_output(&id, &rest).await;
        let (status, report) = match result {
            Ok(out) if cancel.is_cancelled() => (crate::tasks::TaskStatus::Cancelled, out.content),
            Ok(out) if out.is_error => (crate::tasks::TaskStatus::Failed, out.content),
            Ok(out) => (crate::tasks::TaskStatus::Succeeded, out.content),
            Err(e) => (
                crate::tasks::TaskStatus::Failed,
                format!("cannot run command: {e}"),
            ),
        };
        let tail = tail_chars(&report, BACKGROUND_TAIL);
        let report = super::untrusted_text::sanitize_report(&format!("$ {command}\n{tail}"));
        work.finish(&id, status, &report, None, true).await;
    });
    if !task_output {
        return ToolOutput::ok(format!(
            "launched in background: task {} ({description}). You will get a <task-notification> with the end of its output when it ends, so don't poll.",
            row.id
        ));
    }
    ToolOutput::ok(format!(
        "launched in background: task {} ({description}). Its output is readable with TaskOutput(task_id: \"{}\"); you will get a <task-notification> when it ends, so don't poll.",
        row.id, row.id
    ))
}

/// The last `max` bytes of `text`, cut on a character boundary.
fn tail_chars(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("[… {} earlier bytes]\n{}", start, &text[start..])
}

/// Starts `command` under bash (or sh when there is no bash), stdout and stderr
/// both going to `writer`, in a new process group.
fn spawn(
    command: &str,
    cwd: &Path,
    env: &[(String, String)],
    writer: io::PipeWriter,
    sandbox: Option<std::sync::Arc<PreparedSandbox>>,
) -> io::Result<Child> {
    let mut last_err = None;
    for shell in ["bash", "sh"] {
        let mut cmd = Command::new(shell);
        cmd.arg("-c")
            .arg(command)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(writer.try_clone()?)
            .stderr(writer.try_clone()?)
            .process_group(0)
            .kill_on_drop(true);
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        // The model's commands never see cadre's credentials.
        for key in crate::secrets::secret_vars() {
            cmd.env_remove(key);
        }
        // SAFETY: the hook makes only async-signal-safe system calls (see reaper).
        unsafe {
            cmd.pre_exec(reaper::tie_to_cadre());
        }
        if let Some(prepared) = &sandbox {
            // SAFETY: the hook only makes the two Landlock system calls on a
            // ruleset built before the fork; it does not allocate.
            unsafe {
                cmd.pre_exec(command_pre_exec(prepared.clone()));
            }
        }
        // `cmd` (and its copies of the write end) is dropped at the end of this
        // iteration, so the pipe reaches EOF once the child's side closes.
        match cmd.spawn() {
            Ok(child) => return Ok(child),
            Err(e) if e.kind() == io::ErrorKind::NotFound => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("no shell found")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use std::time::Instant as StdInstant;

    use super::super::util::test_support;
    use super::*;

    async fn run_tool(ctx: &ToolContext, input: serde_json::Value) -> ToolOutput {
        BashTool::default()
            .execute(ctx, &crate::tools::object(input))
            .await
    }

    #[tokio::test]
    async fn runs_in_cwd_and_merges_streams() {
        let (_d, ctx) = test_support::ctx();
        let out = run_tool(&ctx, json!({"command": "pwd", "description": "where"})).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, ctx.cwd.display().to_string());

        let out = run_tool(
            &ctx,
            json!({"command": "echo out; sleep 0.05; echo err >&2; sleep 0.05; echo out2; exit 3"}),
        )
        .await;
        assert!(out.is_error);
        assert_eq!(out.content, "out\nerr\nout2\nexit code 3");

        let out = run_tool(&ctx, json!({"command": "true", "sandbox": true})).await;
        assert!(!out.is_error);
        assert_eq!(out.content, "(no output)\nexit code 0");

        let out = run_tool(&ctx, json!({"command": "exit 1"})).await;
        assert!(out.is_error);
        assert_eq!(out.content, "(no output)\nexit code 1");

        let out = run_tool(&ctx, json!({"command": "read x || echo \"eof[$x]\""})).await;
        assert_eq!(out.content, "eof[]");
    }

    #[tokio::test]
    async fn timeout_kills_the_group() {
        let (_d, ctx) = test_support::ctx();
        let start = StdInstant::now();
        let out = run_tool(
            &ctx,
            json!({"command": "echo begun; sleep 30", "timeout": 300}),
        )
        .await;
        let took = start.elapsed();
        assert!(out.is_error);
        assert_eq!(out.content, "command timed out after 300 ms\nbegun");
        assert!(took < Duration::from_millis(1500), "took {took:?}");

        // A background grandchild holding the pipe is killed with the group.
        let start = StdInstant::now();
        let out = run_tool(
            &ctx,
            json!({"command": "sleep 30 & echo $!; sleep 30", "timeout": 300}),
        )
        .await;
        let took = start.elapsed();
        assert!(took < Duration::from_millis(1500), "took {took:?}");
        assert!(
            out.content.starts_with("command timed out after 300 ms\n"),
            "{}",
            out.content
        );
        #[cfg(target_os = "linux")]
        {
            let pid: i32 = out.content.lines().nth(1).unwrap().trim().parse().unwrap();
            assert!(gone_soon(pid).await, "grandchild {pid} still running");
        }
    }

    #[cfg(target_os = "linux")]
    use crate::tools::util::test_support::gone_soon;

    #[tokio::test]
    async fn background_grandchild_does_not_block_completion() {
        let (_d, ctx) = test_support::ctx();
        let start = StdInstant::now();
        let out = run_tool(&ctx, json!({"command": "sleep 30 & echo $!; echo done"})).await;
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "took {:?}",
            start.elapsed()
        );
        assert!(!out.is_error, "{}", out.content);
        let mut lines = out.content.lines();
        let pid: i32 = lines.next().unwrap().trim().parse().unwrap();
        assert_eq!(lines.next(), Some("done"));
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
    }

    #[tokio::test]
    async fn cancellation_interrupts() {
        let (_d, ctx) = test_support::ctx();
        let cancel = ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cancel.cancel();
        });
        let start = StdInstant::now();
        let out = run_tool(&ctx, json!({"command": "sleep 30"})).await;
        assert!(out.is_error);
        assert_eq!(out.content, "interrupted");
        assert!(start.elapsed() < Duration::from_millis(1500));
    }

    #[tokio::test]
    async fn large_output_is_capped_and_drained() {
        let (_d, mut ctx) = test_support::ctx();
        ctx.output_cap = 1000;
        let out = run_tool(
            &ctx,
            json!({"command": "yes abcdefg | head -c 5000000; echo tail >&2"}),
        )
        .await;
        assert!(!out.is_error, "{}", &out.content[..100]);
        assert!(out.content.len() <= 1000, "{}", out.content.len());
        assert!(
            out.content.ends_with("[truncated 4999031 bytes]"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn argument_errors() {
        let (_d, ctx) = test_support::ctx();
        let out = run_tool(
            &ctx,
            json!({"command": "echo hi", "run_in_background": true}),
        )
        .await;
        assert!(out.is_error);
        assert!(
            out.content
                .starts_with("background commands are not available to this agent"),
            "{}",
            out.content
        );
        for bad in [
            json!({}),
            json!({"command": 1}),
            json!({"command": "ls", "timeout": "100"}),
            json!({"command": "ls", "cwd": "/"}),
            json!({"command": "  "}),
        ] {
            let out = run_tool(&ctx, bad).await;
            assert!(
                out.content.starts_with("invalid_arguments: "),
                "{}",
                out.content
            );
        }
        // A timeout out of range is refused naming the range, never clamped
        // (0 used to become 1 ms); the checks before any decision say the same.
        for timeout in [0, 600_001, 99_999_999] {
            let input = json!({"command": "echo ok", "timeout": timeout});
            let out = run_tool(&ctx, input.clone()).await;
            assert!(
                out.content.starts_with("invalid_arguments: ")
                    && out.content.contains("between 1 and 600000"),
                "{timeout}: {}",
                out.content
            );
            let map = input.as_object().cloned().unwrap_or_default();
            let refused = BashTool::default().validate(&map).unwrap_err();
            assert!(
                refused.content.contains("between 1 and 600000"),
                "{refused:?}"
            );
        }
        let out = run_tool(&ctx, json!({"command": "echo ok", "timeout": 600_000})).await;
        assert_eq!(out.content, "ok");
    }
}
