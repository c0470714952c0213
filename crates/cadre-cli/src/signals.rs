//! Signals the line front ends turn into operations: `SIGUSR1` is
//! `Op::BackgroundBatch` (what a key does in a full UI); SIGINT (Ctrl+C),
//! SIGTERM and SIGHUP are `Op::Shutdown` (in the interactive mode Ctrl+C
//! interrupts the turn instead).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use tokio::signal::unix::{SignalKind, signal};

use cadre_core::driver::SessionHandle;
use cadre_core::protocol::Op;

/// Submits `Op::BackgroundBatch` on every `SIGUSR1`, for as long as the
/// session runs: the session keeps it for the batch running then (even one
/// that has not reached its wait yet), and for no later batch.
pub fn background_on_sigusr1(session: SessionHandle) {
    on_sigusr1(move || session.submit(Op::BackgroundBatch));
}

/// Calls `act` on every `SIGUSR1` until it returns false.
pub fn on_sigusr1(act: impl Fn() -> bool + Send + 'static) {
    let Ok(mut signals) = signal(SignalKind::user_defined1()) else {
        return;
    };
    tokio::spawn(async move {
        while signals.recv().await.is_some() {
            if !act() {
                break;
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

/// Shuts the session down on the first stop signal (SIGINT included); a
/// second leaves at once.
pub fn shutdown_on_stop_signals(session: SessionHandle) -> StopSignal {
    on_stop_signals(true, move |_| {
        session.submit(Op::Shutdown);
    })
}
