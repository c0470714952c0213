//! Runs one case: a fresh temp project and `$CADRE_HOME`, its own mock
//! server (offline) or the configured provider (live), the real `cadre exec
//! --json` binary in its own process group, a time limit, and an optional
//! SIGINT, or SIGKILL and a resume, after a given number of events. Then
//! reads back the evidence.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cadre_mock::MockServer;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::case::{Case, CaseFile};
use super::evidence::{Evidence, StdoutLine};
use cadre_core::protocol::Event;

/// Bytes of stderr kept for failure reports.
const STDERR_TAIL: usize = 4096;

/// What every case of one `cadre eval` shares.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The `cadre` executable to run (the one running `cadre eval`).
    pub exe: PathBuf,
    /// Against the configured real model instead of the mock.
    pub live: bool,
    /// Keep each run's temp directory (and say where it is).
    pub keep: bool,
    /// Live: environment passed through (provider, endpoint, model, keys, proxies).
    pub live_env: Vec<(String, String)>,
    /// Live: the user's config (its `[permissions]` dropped), under the case's overrides.
    pub live_config: Option<toml::Table>,
    /// Fires when the user interrupts `cadre eval`.
    pub cancel: CancellationToken,
}

/// How a run went, before grading.
#[derive(Debug, Default)]
pub struct RunOutcome {
    /// What the graders read.
    pub evidence: Evidence,
    /// Start, ms since the Unix epoch.
    pub started_ms: u64,
    /// Wall time of the whole case (set-up included).
    pub duration: Duration,
    /// Why the run itself failed (set-up, time limit, interrupt), if it did.
    pub error: Option<String>,
    /// The run's directory, when kept.
    pub workdir: Option<PathBuf>,
    /// The run's directory, removed when this is dropped (after grading).
    pub tmp: Option<tempfile::TempDir>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Copies `src` into `dst` (created), files, folders and symlinks, dotfiles included.
pub fn copy_tree(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let from = entry.path();
        let to = dst.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&from)?, &to)?;
        } else if kind.is_dir() {
            copy_tree(&from, &to)?;
        } else {
            std::fs::copy(&from, &to)?;
        }
    }
    Ok(())
}

/// Deep-merges `over` into `base`: tables merge, other values replace.
pub fn merge_toml(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge_toml(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// The directories of one run.
struct Dirs {
    root: PathBuf,
    project: PathBuf,
    home: PathBuf,
    data: PathBuf,
}

/// Creates the project (a copy of the fixture) and the data dir with its config.
fn prepare_dirs(
    root: &Path,
    case: &Case,
    file: &CaseFile,
    cfg: &RunConfig,
) -> Result<Dirs, String> {
    let project = root.join("project");
    let home = root.join("home");
    let data = home.join(".cadre");
    let fixture = case.fixture();
    if fixture.is_dir() {
        copy_tree(&fixture, &project)
            .map_err(|e| format!("cannot copy {}: {e}", fixture.display()))?;
    } else {
        std::fs::create_dir_all(&project).map_err(|e| format!("cannot create the project: {e}"))?;
    }
    std::fs::create_dir_all(&data).map_err(|e| format!("cannot create {}: {e}", data.display()))?;
    let config = if cfg.live {
        let mut table = cfg.live_config.clone().unwrap_or_default();
        if let Some(text) = &file.config {
            let over: toml::Table = text
                .parse()
                .map_err(|e| format!("case.yaml config is not valid TOML: {e}"))?;
            merge_toml(&mut table, over);
        }
        (!table.is_empty())
            .then(|| toml::to_string(&table))
            .transpose()
            .map_err(|e| format!("cannot write the config: {e}"))?
    } else {
        file.config.clone()
    };
    if let Some(text) = config {
        std::fs::write(data.join("config.toml"), text)
            .map_err(|e| format!("cannot write config.toml: {e}"))?;
    }
    Ok(Dirs {
        root: root.to_path_buf(),
        project,
        home,
        data,
    })
}

/// Runs `case` and reads back what it left. Never panics on a bad case or a
/// crashing cadre: those become `error` or failing graders.
pub async fn run_case(case: &Case, file: &CaseFile, cfg: &RunConfig) -> RunOutcome {
    let started = Instant::now();
    let mut out = RunOutcome {
        started_ms: now_ms(),
        ..RunOutcome::default()
    };
    out.evidence.prompt = file.prompt.clone();
    out.evidence.fixture = case.fixture();
    let tmp = match tempfile::Builder::new()
        .prefix(&format!("cadre-eval-{}-", case.name))
        .tempdir()
    {
        Ok(t) => t,
        Err(e) => {
            out.error = Some(format!("cannot create a temp directory: {e}"));
            return out;
        }
    };
    let result = run_in(tmp.path(), case, file, cfg, &mut out).await;
    if let Err(e) = result {
        out.error = Some(e);
    }
    out.evidence.read_logs();
    out.evidence.read_tasks().await;
    if cfg.keep {
        out.workdir = Some(tmp.keep());
    } else {
        out.tmp = Some(tmp);
    }
    out.duration = started.elapsed();
    out
}

async fn run_in(
    root: &Path,
    case: &Case,
    file: &CaseFile,
    cfg: &RunConfig,
    out: &mut RunOutcome,
) -> Result<(), String> {
    let dirs = {
        let (root, case, file, cfg) = (root.to_path_buf(), case.clone(), file.clone(), cfg.clone());
        tokio::task::spawn_blocking(move || prepare_dirs(&root, &case, &file, &cfg))
            .await
            .map_err(|e| format!("set-up failed: {e}"))??
    };
    out.evidence.project = dirs.project.clone();
    out.evidence.data_dir = dirs.data.clone();

    let mock = if cfg.live {
        None
    } else {
        let path = case.model_script();
        let script = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let record = dirs.root.join("mock-record.jsonl");
        Some(
            MockServer::start(&script, Some(record))
                .await
                .map_err(|e| format!("{}: {e}", path.display()))?,
        )
    };

    let deadline = tokio::time::Instant::now() + file.timeout();
    let mock_url = mock.as_ref().map(|m| m.url());
    let first = match &file.kill_after_event {
        Some(event) => Some(Trigger {
            event: event.clone(),
            count: file.kill_after_count.unwrap_or(1).max(1),
            delay: Duration::from_millis(file.kill_delay_ms.unwrap_or(0)),
            kill: true,
        }),
        None => file.interrupt_after_event.as_ref().map(|event| Trigger {
            event: event.clone(),
            count: file.interrupt_after_count.unwrap_or(1).max(1),
            delay: Duration::from_millis(file.interrupt_delay_ms.unwrap_or(0)),
            kill: false,
        }),
    };
    let mut line_no = 0u64;
    let run = Run {
        cfg,
        dirs: &dirs,
        mock_url: mock_url.as_deref(),
        deadline,
        limit: file.timeout(),
    };
    let went_on = run
        .once(file.cadre_args(), first.as_ref(), &mut line_no, out)
        .await?;
    if went_on && file.resume_prompt.is_some() {
        // The resume continues the session the killed run started.
        let session = out.evidence.events.iter().find_map(|e| match e {
            Event::SessionStarted { session_id, .. } => Some(session_id.clone()),
            _ => None,
        });
        match session.and_then(|id| file.resume_args(&id)) {
            Some(args) => {
                run.once(args, None, &mut line_no, out).await?;
            }
            None => out.error = Some("cannot resume: the first run started no session".into()),
        }
    }
    if let Some(m) = &mock {
        let mut records = m.records();
        records.sort_by_key(|r| r.t_start_ms);
        out.evidence.records = Some(records);
    }
    Ok(())
}

/// When to signal cadre: after `count` events of type `event`, `delay` later.
struct Trigger {
    event: String,
    count: usize,
    delay: Duration,
    /// SIGKILL to the process group (a crash) rather than SIGINT to cadre.
    kill: bool,
}

/// What every cadre process of one case shares.
struct Run<'a> {
    cfg: &'a RunConfig,
    dirs: &'a Dirs,
    mock_url: Option<&'a str>,
    /// The case's time limit, shared by a killed run and its resume.
    deadline: tokio::time::Instant,
    limit: Duration,
}

impl Run<'_> {
    /// Runs `cadre ARGS` once, adding its stdout to the evidence (line
    /// numbers go on from `line_no`) and its end to `out`. Returns whether
    /// a further run may follow (not timed out, not cancelled).
    async fn once(
        &self,
        args: Vec<String>,
        trigger: Option<&Trigger>,
        line_no: &mut u64,
        out: &mut RunOutcome,
    ) -> Result<bool, String> {
        let (cfg, dirs) = (self.cfg, self.dirs);
        let mut cmd = tokio::process::Command::new(&cfg.exe);
        cmd.args(args)
            .current_dir(&dirs.project)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &dirs.home)
            .env("CADRE_HOME", &dirs.data)
            // No managed definitions from /etc: the case's project is the only source.
            .env("CADRE_MANAGED_AGENTS_DIR", dirs.root.join("managed-agents"))
            // Nor managed settings: a machine's policy would change the cases' outcomes.
            .env(
                "CADRE_MANAGED_SETTINGS_DIR",
                dirs.root.join("managed-settings"),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        match self.mock_url {
            Some(url) => {
                cmd.env("CADRE_PROVIDER", "anthropic")
                    .env("CADRE_BASE_URL", url)
                    .env("CADRE_MODEL", "mock-model");
            }
            None => {
                for (k, v) in &cfg.live_env {
                    cmd.env(k, v);
                }
            }
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", cfg.exe.display()))?;
        let pid = child.id().and_then(|p| i32::try_from(p).ok());

        let stderr_task = child.stderr.take().map(|mut err| {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let _ = err.read_to_end(&mut buf).await;
                let start = buf.len().saturating_sub(STDERR_TAIL);
                String::from_utf8_lossy(&buf[start..]).into_owned()
            })
        });
        let stdout = child.stdout.take();

        let evidence = &mut out.evidence;
        let read_and_wait = async {
            if let Some(stdout) = stdout {
                let mut lines = BufReader::new(stdout).lines();
                let mut seen = 0usize;
                while let Ok(Some(line)) = lines.next_line().await {
                    *line_no += 1;
                    let parsed = StdoutLine::parse(&line);
                    // A line of the right type counts even if this build cannot read the rest.
                    if let Some(t) = trigger
                        && parsed.kind() == Some(t.event.as_str())
                    {
                        seen += 1;
                        if seen == t.count
                            && let Some(pid) = pid
                        {
                            let (delay, kill_group) = (t.delay, t.kill);
                            tokio::spawn(async move {
                                tokio::time::sleep(delay).await;
                                let pid = Pid::from_raw(pid);
                                if kill_group {
                                    let _ = killpg(pid, Signal::SIGKILL);
                                } else {
                                    let _ = kill(pid, Signal::SIGINT);
                                }
                            });
                        }
                    }
                    evidence.push_line(*line_no, parsed, &line);
                }
            }
            child.wait().await
        };
        enum End {
            Exited(std::io::Result<std::process::ExitStatus>),
            TimedOut,
            Cancelled,
        }
        let end = tokio::select! {
            r = tokio::time::timeout_at(self.deadline, read_and_wait) => match r {
                Ok(s) => End::Exited(s),
                Err(_) => End::TimedOut,
            },
            _ = cfg.cancel.cancelled() => End::Cancelled,
        };
        // Whatever happened, nothing of this run outlives it.
        if let Some(pid) = pid {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
        let mut went_on = true;
        let status = match end {
            End::Exited(s) => s.ok(),
            End::TimedOut => {
                out.evidence.timed_out = true;
                out.error = Some(format!("timed out after {} s", self.limit.as_secs()));
                went_on = false;
                child.wait().await.ok()
            }
            End::Cancelled => {
                out.error = Some("interrupted: cadre eval was stopped".into());
                went_on = false;
                child.wait().await.ok()
            }
        };
        if let Some(s) = status {
            out.evidence.exit_code = s.code();
            out.evidence.signal = s.signal();
        }
        if let Some(task) = stderr_task {
            // The pipe closes once the process group is gone.
            if let Ok(Ok(text)) = tokio::time::timeout(Duration::from_secs(2), task).await {
                out.evidence.stderr_tail = text;
            }
        }
        Ok(went_on)
    }
}
