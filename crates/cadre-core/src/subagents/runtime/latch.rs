//! "Move the running batch to the background" (SIGUSR1, a UI key) as a latch:
//! a request made while a batch runs is kept until that batch looks, even if
//! it came before the batch reached its wait; a request made while no batch
//! runs is for nobody and never reaches a later batch.

use tokio::sync::watch;

/// The session's requests to background the running batch: a counter each
/// request bumps. Batches compare it with the value they saw when they began.
#[derive(Debug)]
pub(super) struct BackgroundRequests(watch::Sender<u64>);

impl Default for BackgroundRequests {
    fn default() -> Self {
        BackgroundRequests(watch::channel(0).0)
    }
}

impl BackgroundRequests {
    /// Asks every batch running now to move to the background.
    pub(super) fn request(&self) {
        // Kept even with no batch subscribed: the counter is only compared.
        self.0.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Called when a batch begins: it sees the requests made from now on.
    pub(super) fn begin_batch(&self) -> BatchLatch {
        BatchLatch(self.0.subscribe())
    }
}

/// One batch's view of the requests: those made since it began.
#[derive(Debug)]
pub(super) struct BatchLatch(watch::Receiver<u64>);

impl BatchLatch {
    /// Resolves once a request was made since the batch began (at once if
    /// one already was); it stays resolved for this batch.
    pub(super) async fn requested(&mut self) {
        if self.0.changed().await.is_err() {
            // The runtime (and its sender) is gone: nobody can ask any more.
            std::future::pending::<()>().await;
        }
        // Seen once, it stays latched: the next call resolves at once too.
        self.0.mark_changed();
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;

    use super::*;

    #[test]
    fn a_request_before_the_wait_is_kept_for_the_running_batch() {
        let requests = BackgroundRequests::default();
        let mut latch = requests.begin_batch();
        // The batch has begun but is not waiting yet (preparing its children).
        requests.request();
        assert!(latch.requested().now_or_never().is_some());
        // Latched: looking again still sees it.
        assert!(latch.requested().now_or_never().is_some());
    }

    #[test]
    fn a_request_while_no_batch_runs_never_reaches_a_later_batch() {
        let requests = BackgroundRequests::default();
        requests.request();
        let mut latch = requests.begin_batch();
        assert!(latch.requested().now_or_never().is_none());
        // A request while it runs still gets through.
        requests.request();
        assert!(latch.requested().now_or_never().is_some());
        // A batch begun after that one starts clean.
        let mut next = requests.begin_batch();
        assert!(next.requested().now_or_never().is_none());
    }

    #[test]
    fn every_running_batch_sees_a_request() {
        let requests = BackgroundRequests::default();
        let mut outer = requests.begin_batch();
        let mut nested = requests.begin_batch();
        requests.request();
        assert!(outer.requested().now_or_never().is_some());
        assert!(nested.requested().now_or_never().is_some());
    }
}
