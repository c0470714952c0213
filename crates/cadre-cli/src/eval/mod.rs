//! `cadre eval`: runs replayable evaluation cases (`docs/evals.md`), offline
//! against the scripted model server or `--live` against the configured
//! model, and grades each run on its events, logs and files.
//!
//! - `case`: the case folder and `case.yaml`;
//! - `runner`: one run of `cadre exec --json` in fresh temp directories;
//! - `evidence`: what a run left behind, read back;
//! - `graders`: the checks, as `case.yaml` gives them (`spec`) and as they run (`checks`);
//! - `report`: the table and the JSON document.

mod case;
mod evidence;
mod graders;
mod report;
mod runner;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use self::case::{Case, discover};
use self::graders::{GradeResult, Grader};
use self::report::{CaseResult, Outcome, Requests, Summary, table};
use self::runner::{RunConfig, run_case};
use crate::UsageError;

/// Arguments of `cadre eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Case folders, or folders holding case folders (e.g. evals/)
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Run the cases marked `live: true` against the configured model instead of the mock
    #[arg(long)]
    pub live: bool,
    /// Print one JSON document on stdout instead of the table
    #[arg(long)]
    pub json: bool,
    /// Cases run at once [default: the number of CPUs]
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    pub jobs: Option<usize>,
    /// Keep each case's temp directory (project, data dir, mock record) and print where
    #[arg(long)]
    pub keep: bool,
}

/// Environment a live run passes through to cadre.
const LIVE_ENV: &[&str] = &[
    "CADRE_PROVIDER",
    "CADRE_BASE_URL",
    "CADRE_MODEL",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Runs the cases and prints the results; exit 1 if any failed.
pub async fn run(args: EvalArgs) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot find the cadre executable")?;
    let mut cases: Vec<Case> = Vec::new();
    for p in &args.paths {
        for c in discover(p).map_err(UsageError)? {
            if !cases.iter().any(|k| k.dir == c.dir) {
                cases.push(c);
            }
        }
    }
    let jobs = match args.jobs {
        Some(0) => return Err(UsageError("-j must be at least 1".into()).into()),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let live = if args.live {
        live_setup()?
    } else {
        LiveSetup::default()
    };
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    // Ctrl+C or SIGTERM: kill every running case's process group and report.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::spawn(async move {
        let terminated = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminated => {}
        }
        on_signal.cancel();
    });
    let cfg = Arc::new(RunConfig {
        exe,
        live: args.live,
        keep: args.keep,
        live_env: live.env,
        live_config: live.config,
        cancel: cancel.clone(),
    });

    let started = Instant::now();
    let mut results: Vec<(usize, CaseResult)> =
        futures::stream::iter(cases.into_iter().enumerate())
            .map(|(i, case)| {
                let cfg = cfg.clone();
                async move {
                    // Its own task: a panic in one case's grading cannot touch another.
                    let fallback = case.clone();
                    match tokio::spawn(evaluate(case, cfg)).await {
                        Ok(r) => (i, r),
                        Err(e) => (i, broken(&fallback, format!("the runner crashed: {e}"))),
                    }
                }
            })
            .buffer_unordered(jobs)
            .collect()
            .await;
    results.sort_by_key(|(i, _)| *i);
    let summary = Summary::new(
        args.live,
        results.into_iter().map(|(_, r)| r).collect(),
        started.elapsed().as_millis() as u64,
    );
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", table(&summary));
    }
    Ok(if cancel.is_cancelled() {
        ExitCode::from(130)
    } else if summary.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The environment and config a live run uses: the provider settings from
/// this environment, and the user's config without its `[permissions]` (a
/// case sets its own).
fn live_setup() -> Result<LiveSetup> {
    let env: Vec<(String, String)> = LIVE_ENV
        .iter()
        .filter_map(|k| {
            crate::keys::var(k)
                .filter(|v| !v.is_empty())
                .map(|v| (k.to_string(), v))
        })
        .collect();
    let home = cadre_core::config::data_dir()?;
    let path = home.join("config.toml");
    let config = match cadre_core::small_file::read_small_text(
        &path,
        cadre_core::config::MAX_CONFIG_BYTES,
    ) {
        Ok(text) => {
            let mut table: toml::Table = text
                .parse()
                .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
            table.remove("permissions");
            Some(table)
        }
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(e.into()),
    };
    let has = |k: &str| env.iter().any(|(name, _)| name == k);
    let configured_url = config.as_ref().is_some_and(|c| c.contains_key("base_url"));
    if !(has("ANTHROPIC_API_KEY")
        || has("OPENAI_API_KEY")
        || has("CADRE_BASE_URL")
        || configured_url)
    {
        return Err(UsageError(
            "--live needs a model: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or CADRE_BASE_URL (or base_url in the config) for a local server".into(),
        )
        .into());
    }
    Ok(LiveSetup { env, config })
}

/// What `--live` passes to every run.
#[derive(Debug, Default)]
struct LiveSetup {
    /// Environment passed through.
    env: Vec<(String, String)>,
    /// The user's config without `[permissions]`.
    config: Option<toml::Table>,
}

fn base_result(case: &Case, result: Outcome) -> CaseResult {
    CaseResult {
        name: case.name.clone(),
        path: case.dir.display().to_string(),
        description: case.file.as_ref().ok().and_then(|f| f.description.clone()),
        result,
        error: None,
        exit_code: None,
        turn: None,
        requests: None,
        tool_calls: 0,
        tokens: 0,
        started_ms: 0,
        duration_ms: 0,
        workdir: None,
        session_id: None,
        graders: Vec::new(),
        stderr_tail: None,
        unparsed_lines: 0,
        unparsed: Vec::new(),
    }
}

fn broken(case: &Case, error: String) -> CaseResult {
    CaseResult {
        error: Some(error),
        ..base_result(case, Outcome::Fail)
    }
}

/// Runs one case and grades it.
async fn evaluate(case: Case, cfg: Arc<RunConfig>) -> CaseResult {
    if cfg.live && !case.is_live() && case.file.is_ok() {
        return base_result(&case, Outcome::Skipped);
    }
    let file = match &case.file {
        Ok(f) => f.clone(),
        Err(e) => return broken(&case, e.clone()),
    };
    let run = run_case(&case, &file, &cfg).await;
    let ev = &run.evidence;
    let mut graded: Vec<GradeResult> = Vec::new();
    if ev.exit_code.is_some() || ev.signal.is_some() || ev.timed_out {
        if !file
            .graders
            .iter()
            .any(|g| matches!(g, Grader::ExitCode(_)))
        {
            let mut g = Grader::ExitCode(0).grade(ev);
            g.grader.push_str(" (implicit)");
            graded.push(g);
        }
        graded.extend(file.graders.iter().map(|g| g.grade(ev)));
    }
    let passed = run.error.is_none() && !graded.is_empty() && graded.iter().all(|g| g.passed);
    let (parent, total) = ev.requests();
    let calls = ev.calls().len() as u64;
    CaseResult {
        result: if passed { Outcome::Pass } else { Outcome::Fail },
        error: run.error.clone().or_else(|| {
            graded
                .is_empty()
                .then(|| format!("cadre did not run ({})", ev.exit_description()))
        }),
        exit_code: ev.exit_code,
        turn: ev.turn_problem(),
        requests: Some(Requests { parent, total }),
        tool_calls: calls,
        tokens: ev.tokens(),
        started_ms: run.started_ms,
        duration_ms: run.duration.as_millis() as u64,
        workdir: run.workdir.as_ref().map(|p| p.display().to_string()),
        session_id: ev.session_id.clone(),
        graders: graded,
        stderr_tail: (!passed).then(|| ev.stderr_tail.clone()),
        unparsed_lines: ev.unparsed_count,
        unparsed: ev.unparsed.clone(),
        ..base_result(&case, Outcome::Fail)
    }
}
