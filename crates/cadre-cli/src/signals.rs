//! Signals a front end turns into operations: `SIGUSR1` moves the running
//! foreground subagent batch to the background (what a key does in a full UI);
//! SIGINT (Ctrl+C), SIGTERM and SIGHUP stop the run the same way.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use cadre_core::tools::Delegation;

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
pub fn background_on_sigusr1(runtime: Option<Arc<dyn Delegation>>) {
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

/// Which stop signal arrived first, as the exit status a shell expects
/// (128 + its number): 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP.
#[derive(Debug, Clone, Default)]
pub struct StopSignal(Arc<AtomicU8>);

impl StopSignal {
    /// The exit status for the first stop signal, if one came.
    pub fn exit_code(&self) -> Option<u8> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            code => Some(code),
        }
    }
}

/// Calls `on_stop` on the first SIGTERM or SIGHUP (and SIGINT when
/// `interrupt`), which the returned handle remembers; a second SIGINT or
/// SIGTERM leaves at once with the first one's status.
pub fn on_stop_signals(interrupt: bool, on_stop: impl Fn(u8) + Send + 'static) -> StopSignal {
    let stop = StopSignal::default();
    let kinds = [
        (SignalKind::interrupt(), 130u8),
        (SignalKind::terminate(), 143),
        (SignalKind::hangup(), 129),
    ];
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u8>();
    for (kind, code) in kinds {
        if code == 130 && !interrupt {
            continue;
        }
        // Without the handler the default action would end cadre at once,
        // leaving its work running and its task rows `running`.
        let Ok(mut stream) = signal(kind) else {
            continue;
        };
        let tx = tx.clone();
        tokio::spawn(async move {
            while stream.recv().await.is_some() {
                if tx.send(code).is_err() {
                    break;
                }
            }
        });
    }
    let first = stop.clone();
    tokio::spawn(async move {
        while let Some(code) = rx.recv().await {
            let earlier = first.0.load(Ordering::SeqCst);
            if earlier == 0 {
                first.0.store(code, Ordering::SeqCst);
                on_stop(code);
            } else if code != 129 {
                // A repeated SIGHUP is a closing terminal (the kernel, then
                // the shell, hang up its jobs), not a second Ctrl+C.
                std::process::exit(i32::from(earlier));
            }
        }
    });
    stop
}

/// Cancels `cancel` on the first stop signal; a second leaves at once.
pub fn cancel_on_stop_signals(cancel: CancellationToken) -> StopSignal {
    on_stop_signals(true, move |_| cancel.cancel())
}
