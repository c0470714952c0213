//! Signals a front end turns into operations: `SIGUSR1` moves the running
//! foreground subagent batch to the background (what a key does in a full UI).

use std::sync::Arc;

use cadre_core::subagents::SubagentRuntime;

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
