//! Signals a front end turns into operations: `SIGUSR1` moves the running
//! foreground subagent batch to the background (what a key does in a full UI).

use std::sync::Arc;

use cadre_core::subagents::SubagentRuntime;

/// How often stops requested by `cadre tasks stop` from another process are picked up.
const EXTERNAL_STOP_POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// Applies `cadre tasks stop` requests from other processes to this session's work.
pub fn watch_external_stops(work: &Arc<cadre_core::background::BackgroundWork>) {
    let weak = Arc::downgrade(work);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EXTERNAL_STOP_POLL);
        loop {
            tick.tick().await;
            match weak.upgrade() {
                Some(w) => w.apply_external_stops(),
                None => break,
            }
        }
    });
}

/// Listens for `SIGUSR1` for as long as the process runs.
pub fn background_on_sigusr1(runtime: Option<Arc<SubagentRuntime>>) {
    // A weak handle: the runtime holds the event sink, and the printer only
    // finishes once every holder of the sink is gone.
    let Some(runtime) = runtime.map(|r| Arc::downgrade(&r)) else {
        return;
    };
    let Ok(mut signals) =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())
    else {
        return;
    };
    tokio::spawn(async move {
        while signals.recv().await.is_some() {
            match runtime.upgrade() {
                Some(r) => r.background_now(),
                None => break,
            }
        }
    });
}
