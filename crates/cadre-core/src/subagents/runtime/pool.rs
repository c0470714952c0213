//! The pool: a batch's children run concurrently, each as its own task that
//! can move to the background; each run ends in one report.

use super::{
    BatchCall, BatchFailure, ChildTag, ForegroundChild, Parent, Prepared, RunningSlot,
    SubagentRuntime,
};
use crate::agent::TurnOutcome;
use crate::model::Usage;
use crate::protocol::{Event, TurnStatus};
use crate::subagents::report::{ChildReport, ChildStatus, parse_verdict, render_batch};
use crate::tools::ToolOutput;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

impl SubagentRuntime {
    /// Runs a batch. `total` is the number of `Agent` calls in the reply;
    /// results come back in the order of `calls`.
    pub async fn run_batch(
        self: &Arc<Self>,
        parent: &Parent<'_>,
        calls: Vec<BatchCall>,
        total: usize,
        cancel: &CancellationToken,
    ) -> Result<Vec<ToolOutput>, BatchFailure> {
        // From here on a request to background the batch is kept for it.
        let mut background_asked = self.background_now.begin_batch();
        let n = calls.len();
        let mut outputs: Vec<Option<ToolOutput>> = vec![None; n];

        // Resolve every call before anything runs. The project's
        // instructions and facts, read once for the batch, are read on the
        // blocking pool while the definitions are checked here.
        let (project, catalog) = futures::future::join(
            crate::agent::ProjectContext::read(&parent.caller.place.cwd),
            async { self.catalog() },
        )
        .await;
        let catalog = match catalog {
            Ok(c) => c,
            Err(e) => {
                let out = ToolOutput::error(format!("cannot load agent definitions: {e}"));
                return Ok(vec![out; n]);
            }
        };
        if let Some(dir) = &self.agents_dir {
            crate::config::ensure_private_dir(dir).map_err(|e| BatchFailure(e.to_string()))?;
        }

        let pool = Arc::new(Semaphore::new(self.settings.max_concurrent.clamp(1, 32)));
        let batch_cancel = cancel.child_token();
        let mut waiting: Vec<ForegroundChild> = Vec::new();
        // Teammates and background children are launched once the batch's
        // foreground children run; the parent gets their names and ids.
        let mut later: Vec<(usize, Prepared, Option<RunningSlot>)> = Vec::new();
        let mut saves = Vec::new();
        let mut startup_failure = None;
        // Each child starts as soon as it is ready, not after its siblings:
        // resolved, its task row filed (on the table's thread) and its log
        // handed to the log writer, announced, then running while the next
        // one is prepared. Its task row exists before it is announced or
        // runs; its log file is made before any later record of it.
        for (slot, call) in calls.into_iter().enumerate() {
            let mut p = match self.prepare(parent, &catalog, &project, call, total).await {
                Ok(p) => p,
                Err(out) => {
                    outputs[slot] = Some(out);
                    continue;
                }
            };
            // The session's running cap: past it a spawn fails and says not
            // to retry. Teammates have a cap of their own (`max_teammates`).
            let running_slot = if p.teammate.is_none() {
                match self.reserve_slots(1).pop() {
                    Some(s) => Some(s),
                    None => {
                        outputs[slot] = Some(ToolOutput::error(self.running_cap_reached()));
                        continue;
                    }
                }
            } else {
                None
            };
            let filing = self.file_task(parent, &p);
            // The row's job is handed to the table first, then the log's
            // start to its writer, which makes the file while the child runs.
            let opened = self.open_child_log(&mut p);
            let filed = filing.await;
            saves.extend(self.open_task(parent, &mut p, filed));
            if let Err(e) = opened {
                self.end_unstarted(&p, &e).await;
                startup_failure = Some(BatchFailure(e));
                break;
            }
            self.emit_started(&p);
            parent
                .spawner
                .started_this_turn
                .fetch_add(1, Ordering::SeqCst);
            if p.teammate.is_some() || p.background {
                later.push((slot, p, running_slot));
                continue;
            }
            // Each foreground child runs as its own task so that it can be
            // moved to the background mid-run (after `auto_background_after`
            // or on request) without a restart: it keeps its progress and
            // reports by notice.
            let (tx, rx) = tokio::sync::oneshot::channel();
            let detached = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let child_cancel = p
                .task_cancel
                .clone()
                .unwrap_or_else(|| batch_cancel.child_token());
            let (task_id, tag) = (p.task_id.clone(), p.tag.clone());
            let rt = self.clone();
            let pool = pool.clone();
            let (moved_away, cancel_child) = (detached.clone(), child_cancel.clone());
            let run = tokio::spawn(async move {
                let running_slot = running_slot;
                let permit = tokio::select! {
                    p = pool.acquire_owned() => p.ok(),
                    _ = cancel_child.cancelled() => None,
                };
                let task = p.task_id.clone();
                let result = match permit {
                    Some(_permit) => rt.run_guarded(p, &cancel_child).await,
                    None => Ok(rt.cancelled_before_start(p)),
                };
                if moved_away.load(Ordering::SeqCst) {
                    // Moved to the background: its end is announced by notice.
                    if let Some(task) = &task {
                        rt.file_result(task, &result, true).await;
                    }
                    return;
                }
                // Attached, the report goes back as the call's result at
                // once, and its end is filed after: the parent's next request
                // does not wait for the table; its turn waits before it ends.
                let ended = result.as_ref().ok().cloned();
                drop(running_slot);
                match (tx.send(result), &task) {
                    (Ok(()), Some(task)) => {
                        if let Some(report) = ended {
                            rt.file_result(task, &Ok(report), false).await;
                        }
                    }
                    // Moved to the background just now: announced instead.
                    (Err(result), Some(task)) => rt.file_result(task, &result, true).await,
                    (_, None) => {}
                }
            });
            waiting.push(ForegroundChild {
                slot,
                rx,
                detached,
                cancel: child_cancel,
                task_id,
                tag,
                run,
            });
            // The child sends its first request before the next is prepared.
            tokio::task::yield_now().await;
        }
        // What a later process needs to resume them is written beside their
        // logs on the table's thread, after their folders are made there: no
        // child waits for it.
        let saving = match &self.base_ctx.background {
            Some(work) if !saves.is_empty() => Some(work.table().write_beside(saves)),
            _ => None,
        };
        if startup_failure.is_some() {
            // A child whose log cannot open stops the batch: the siblings
            // already running are cancelled (their reports still come in
            // below), the ones not launched end unstarted.
            for c in &waiting {
                c.cancel.cancel();
            }
            for (_, p, _) in later.drain(..) {
                self.end_unstarted(&p, "the batch stopped before it started")
                    .await;
            }
        }
        for (slot, p, running_slot) in later {
            outputs[slot] = Some(if p.teammate.is_some() {
                self.launch_teammate(p).await
            } else {
                self.launch_background(p, running_slot)
            });
        }

        let mut finished: Vec<(usize, Result<ChildReport, BatchFailure>)> = Vec::new();
        let auto = self.settings.auto_background_after;
        let deadline = tokio::time::Instant::now() + auto;
        while !waiting.is_empty() {
            let next = futures::future::select_all(waiting.iter_mut().map(|c| &mut c.rx));
            tokio::select! {
                (result, k, _) = next => {
                    let child = waiting.swap_remove(k);
                    parent.spawner.keep_closing(child.run);
                    let result = result.unwrap_or_else(|_| Err(BatchFailure("the subagent ended without a report".into())));
                    // A child whose log broke stops its siblings too.
                    if result.is_err() {
                        for c in &waiting {
                            c.cancel.cancel();
                        }
                    }
                    finished.push((child.slot, result));
                }
                _ = cancel.cancelled() => {
                    for c in &waiting {
                        c.cancel.cancel();
                    }
                    // Their reports still arrive (as cancelled) through the loop.
                    let grace = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
                    while !waiting.is_empty() {
                        let next = futures::future::select_all(waiting.iter_mut().map(|c| &mut c.rx));
                        match tokio::time::timeout_at(grace, next).await {
                            Ok((result, k, _)) => {
                                let child = waiting.swap_remove(k);
                                parent.spawner.keep_closing(child.run);
                                finished.push((child.slot, result.unwrap_or_else(|_| Err(BatchFailure("the subagent ended without a report".into())))));
                            }
                            Err(_) => break,
                        }
                    }
                    break;
                }
                _ = tokio::time::sleep_until(deadline), if self.base_ctx.background.is_some() => {
                    self.detach(&mut waiting, &mut outputs, "it ran longer than the auto-background limit").await;
                }
                _ = background_asked.requested(), if self.base_ctx.background.is_some() => {
                    self.detach(&mut waiting, &mut outputs, "the user moved it to the background").await;
                }
            }
        }
        if let Some(saving) = saving {
            saving.await;
        }
        if let Some(f) = startup_failure {
            return Err(f);
        }
        if finished.is_empty() {
            return Ok(outputs
                .into_iter()
                .map(|o| o.unwrap_or_else(|| ToolOutput::error("not run")))
                .collect());
        }

        let mut reports: Vec<(usize, ChildReport)> = Vec::new();
        let mut failure = None;
        for (slot, r) in finished {
            match r {
                Ok(report) => reports.push((slot, report)),
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
        if let Some(f) = failure {
            return Err(f);
        }
        reports.sort_by_key(|(_, r)| r.index);
        let only: Vec<ChildReport> = reports.iter().map(|(_, r)| r.clone()).collect();
        let texts = render_batch(&only);
        for ((slot, report), text) in reports.iter().zip(texts) {
            let out = if report.status == ChildStatus::Completed {
                ToolOutput::ok(text)
            } else {
                ToolOutput::error(text)
            };
            outputs[*slot] = Some(out);
        }
        Ok(outputs
            .into_iter()
            .map(|o| o.unwrap_or_else(|| ToolOutput::error("not run")))
            .collect())
    }

    /// Runs a child with the panic guard: a panicking child ends as failed;
    /// it never takes the parent down.
    pub(super) async fn run_guarded(
        &self,
        p: Prepared,
        cancel: &CancellationToken,
    ) -> Result<ChildReport, BatchFailure> {
        let run = std::panic::AssertUnwindSafe(self.run_child(p, cancel));
        futures::FutureExt::catch_unwind(run)
            .await
            .unwrap_or_else(|_| Err(BatchFailure("the subagent panicked".into())))
    }

    /// Moves every child still running to the background: the batch stops
    /// waiting and their results become task ids; they report by notice.
    pub(super) async fn detach(
        &self,
        waiting: &mut Vec<ForegroundChild>,
        outputs: &mut [Option<ToolOutput>],
        why: &str,
    ) {
        for child in waiting.drain(..) {
            child.detached.store(true, Ordering::SeqCst);
            let id = child.task_id.unwrap_or_default();
            // Its row says so too: the task list shows it in the background.
            if let Some(work) = &self.base_ctx.background
                && !id.is_empty()
            {
                let _ = work.table().set_background(&id).await;
            }
            self.events.emit(Event::SubagentBackgrounded {
                index: child.tag.index,
                total: child.tag.total,
                agent_id: child.tag.agent_id.clone(),
                task_id: id.clone(),
            });
            outputs[child.slot] = Some(ToolOutput::ok(format!(
                "launched in background: task {id} · {} · agent {} ({why}; it keeps its progress). You will get a <task-notification> with its report when it ends; don't wait or poll for it.",
                child.tag.agent_type, child.tag.agent_id
            )));
        }
    }

    /// Starts a background child; the parent gets its task id at once.
    pub(super) fn launch_background(
        self: &Arc<Self>,
        p: Prepared,
        slot: Option<RunningSlot>,
    ) -> ToolOutput {
        let (Some(task_id), Some(cancel)) = (p.task_id.clone(), p.task_cancel.clone()) else {
            return ToolOutput::error(
                "cannot file a background task for this subagent; nothing was started",
            );
        };
        let text = format!(
            "launched in background: task {task_id} · {} · agent {}. You will get a <task-notification> with its report when it ends; don't wait or poll for it.",
            p.tag.agent_type, p.tag.agent_id
        );
        let rt = self.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let result = rt.run_guarded(p, &cancel).await;
            rt.file_result(&task_id, &result, true).await;
        });
        ToolOutput::ok(text)
    }

    pub(super) fn cancelled_before_start(&self, p: Prepared) -> ChildReport {
        let report = ChildReport {
            index: p.index,
            total: p.tag.total,
            status: ChildStatus::Cancelled,
            agent_type: p.tag.agent_type.clone(),
            agent_id: p.tag.agent_id.to_string(),
            requests: 0,
            tool_calls: 0,
            tokens: 0,
            duration: Duration::ZERO,
            final_text: String::new(),
            error: Some("cancelled before it started".into()),
            changed_files: Vec::new(),
            verdict: None,
            worktree: None,
            cost: None,
            compactions: 0,
        };
        self.emit_ended(&p.tag, &report, Usage::default());
        report
    }

    pub(super) fn emit_ended(&self, tag: &ChildTag, r: &ChildReport, usage: Usage) {
        self.events.emit(Event::SubagentEnded {
            index: tag.index,
            total: tag.total,
            agent_id: tag.agent_id.clone(),
            agent_type: tag.agent_type.clone(),
            status: r.status,
            requests: r.requests,
            tool_calls: r.tool_calls,
            usage,
            duration_ms: r.duration.as_millis() as u64,
            error: r.error.clone(),
            cost_usd: r.cost.map(|c| c.usd()),
            compactions: r.compactions,
            worktree: r.worktree.clone(),
        });
    }

    /// Runs one child to completion and turns its outcome into a report.
    ///
    /// Boxed: a child may itself run batches, and naming the future's type
    /// here is what lets that recursion be spawned on other threads.
    pub(super) fn run_child<'a>(
        &'a self,
        p: Prepared,
        cancel: &'a CancellationToken,
    ) -> futures::future::BoxFuture<'a, Result<ChildReport, BatchFailure>> {
        Box::pin(self.run_child_inner(p, cancel))
    }

    pub(super) async fn run_child_inner(
        &self,
        mut p: Prepared,
        cancel: &CancellationToken,
    ) -> Result<ChildReport, BatchFailure> {
        let started = Instant::now();
        let outcome = p
            .agent
            .run_turn(p.prompt.clone(), cancel.child_token())
            .await;
        if let Some(e) = &outcome.log_error {
            return Err(BatchFailure(format!(
                "subagent {} could not write its log: {e}",
                p.tag.agent_id
            )));
        }
        let usage = p.agent.usage();
        let mut report = child_report(&p, &outcome, usage, started.elapsed());
        // Clean-up, whichever way it ended: its background shells stop
        // (first: they may run in its worktree, which may be removed next),
        // and dropping the child drops its caches and closes its log.
        if let Some(work) = &self.base_ctx.background {
            work.stop_owned_by(&p.tag.agent_id).await;
        }
        if let Some(worktree) = p.worktree.take() {
            report.worktree = worktree.end().await;
        }
        self.emit_ended(&p.tag, &report, usage);
        drop(p);
        Ok(report)
    }
}

/// The one way from a child's outcome to its report, for a first run and a
/// resumed one alike: an API error keeps the partial text with a note, a
/// verification child's verdict is parsed, the files it changed are listed.
pub(super) fn child_report(
    p: &Prepared,
    outcome: &TurnOutcome,
    usage: Usage,
    duration: Duration,
) -> ChildReport {
    let (status, final_text, error) = match outcome.status {
        TurnStatus::Completed => (ChildStatus::Completed, outcome.final_text.clone(), None),
        TurnStatus::Interrupted => (
            ChildStatus::Cancelled,
            outcome.final_text.clone(),
            Some("cancelled".to_string()),
        ),
        TurnStatus::LimitReached => (
            ChildStatus::Failed,
            outcome.final_text.clone(),
            outcome.error.as_ref().map(|e| format!("failed: {e}")),
        ),
        TurnStatus::Failed => match (&outcome.model_error, outcome.final_text.is_empty()) {
            (Some(e), true) => (
                ChildStatus::Failed,
                String::new(),
                Some(format!("failed: terminated early due to an API error: {e}")),
            ),
            (Some(e), false) => (
                ChildStatus::Failed,
                format!(
                    "{}\n\n[cut off: the model API failed before the subagent finished: {e}]",
                    outcome.final_text
                ),
                Some(format!("failed: cut off by an API error: {e}")),
            ),
            (None, _) => (
                ChildStatus::Failed,
                outcome.final_text.clone(),
                outcome.error.as_ref().map(|e| format!("failed: {e}")),
            ),
        },
    };
    let cwd = &p.ctx.cwd;
    let changed_files = p
        .ctx
        .file_state
        .written()
        .into_iter()
        .map(|f| {
            f.strip_prefix(cwd)
                .map(|r| r.display().to_string())
                .unwrap_or_else(|_| f.display().to_string())
        })
        .collect();
    let verdict = p.verification.then(|| parse_verdict(&final_text));
    ChildReport {
        index: p.index,
        total: p.tag.total,
        status,
        agent_type: p.tag.agent_type.clone(),
        agent_id: p.tag.agent_id.to_string(),
        requests: outcome.requests,
        tool_calls: outcome.tool_calls,
        tokens: usage.total(),
        duration,
        final_text,
        error,
        changed_files,
        verdict,
        worktree: None,
        cost: p.agent.cost(),
        compactions: p.agent.compactions(),
    }
}
