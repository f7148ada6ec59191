//! Retention: deletes finished runs, their logs and silent executors older than the
//! retention period.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::Result;
use crate::shared::Shared;

/// The retention service: every `retention_every_ms`, one [`Retention::run_once`].
pub(crate) struct Retention {
    node: Arc<Shared>,
    settings: RetentionSettings,
}

/// Retention's settings: its slice of [`crate::EngineConfig`].
#[derive(Debug, Clone)]
pub(crate) struct RetentionSettings {
    /// How often it runs (`retention_every_ms`; backing off on failure).
    pub every: Duration,
    /// Finished runs and their logs are deleted after this long (`retention_ms`).
    pub retention_ms: i64,
}

impl Retention {
    pub(crate) fn new(node: &Arc<Shared>) -> Self {
        let cfg = &node.cfg;
        let settings =
            RetentionSettings { every: Duration::from_millis(cfg.retention_every_ms), retention_ms: cfg.retention_ms };
        Retention { node: node.clone(), settings }
    }

    /// Delete finished runs, their logs and silent executors older than the retention
    /// period, in bounded batches. Returns runs deleted.
    pub(crate) async fn run_once(&self, now: i64) -> Result<u64> {
        let e = &self.node;
        let before = now - self.settings.retention_ms;
        let mut total = 0;
        loop {
            let n = e.store.retention_cleanup(before, 500).await?;
            total += n;
            if n < 500 {
                break;
            }
        }
        if total > 0 {
            tracing::info!(runs = total, "retention: old runs deleted");
        }
        Ok(total)
    }

    /// Start the loop; it ends when `cancel` fires.
    pub(crate) fn spawn(self: Arc<Self>, cancel: CancellationToken) -> JoinHandle<()> {
        let every = self.settings.every;
        let me = self;
        crate::service::every("retention", every, cancel, move || {
            let me = me.clone();
            async move { me.run_once(me.node.now_ms()).await.map(|_| ()) }
        })
    }
}
