//! The exchange watch: cancels at the executor the runs of this node's open synchronous
//! exchanges that were cancelled elsewhere (another node's API, a chain, a covering run).

use sundial_core::types::RunState;

use crate::Result;
use crate::cancel::CancelTarget;
use crate::shared::Shared;

/// The exchange watch looks at exchanges open at least this long (most answer sooner).
pub(crate) const WATCH_AFTER_MS: i64 = 1_000;

/// The exchange-watch service: every second, one [`ExchangeWatch::run_once`].
pub(crate) struct ExchangeWatch {
    node: std::sync::Arc<Shared>,
    settings: ExchangeWatchSettings,
}

/// The exchange watch's settings.
#[derive(Debug, Clone)]
pub(crate) struct ExchangeWatchSettings {
    /// How often it runs (1 s; backing off on failure).
    pub every: std::time::Duration,
}

impl ExchangeWatch {
    pub(crate) fn new(node: &std::sync::Arc<Shared>) -> Self {
        ExchangeWatch {
            node: node.clone(),
            settings: ExchangeWatchSettings { every: std::time::Duration::from_millis(1000) },
        }
    }

    /// One turn of the exchange watch: the runs of this node's synchronous exchanges open
    /// longer than [`WATCH_AFTER_MS`] are read in one query, and each found cancelled at that
    /// attempt (through the API of another node, a chain cancel, a covering run) gets its
    /// signed cancel, once. A cancel made on this node was sent already. Returns how many
    /// cancels were queued.
    pub(crate) async fn run_once(&self, now: i64) -> Result<usize> {
        let e = &self.node;
        let open = e.calls.cancels.exchanges();
        let watched = open.uncancelled_since(now - WATCH_AFTER_MS);
        if watched.is_empty() {
            return Ok(0);
        }
        let ids: Vec<String> = watched.iter().map(|(id, _)| id.clone()).collect();
        let states: std::collections::HashMap<String, (RunState, i64)> =
            e.store.run_states(&ids).await?.into_iter().map(|(id, state, attempt)| (id, (state, attempt))).collect();
        let mut sent = 0;
        for (run_id, ex) in watched {
            if states.get(&run_id) != Some(&(RunState::Cancelled, ex.attempt)) {
                continue;
            }
            if let Some(ex) = open.take_for_cancel(&run_id, ex.attempt) {
                tracing::info!(
                    run_id,
                    attempt = ex.attempt,
                    "run cancelled while its exchange is open; cancelling it at the executor"
                );
                e.calls.cancels.cancel(CancelTarget::Open {
                    app: ex.app,
                    run_id,
                    attempt: ex.attempt,
                    address: ex.address,
                });
                sent += 1;
            }
        }
        Ok(sent)
    }

    /// Start the loop; it ends when `cancel` fires.
    pub(crate) fn spawn(
        self: std::sync::Arc<Self>,
        cancel: tokio_util::sync::CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        let every = self.settings.every;
        let me = self;
        crate::service::every("exchange-watch", every, cancel, move || {
            let me = me.clone();
            async move { me.run_once(me.node.now_ms()).await.map(|_| ()) }
        })
    }
}
