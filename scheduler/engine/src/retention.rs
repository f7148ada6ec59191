//! Retention: deletes finished runs, their logs and silent executors older than the
//! retention period.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::{Engine, Result};

/// The retention service: every `retention_every_ms`, one [`Retention::run_once`].
pub(crate) struct Retention {
    engine: Arc<Engine>,
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
    pub(crate) fn new(engine: &Arc<Engine>) -> Self {
        let cfg = &engine.cfg;
        let settings =
            RetentionSettings { every: Duration::from_millis(cfg.retention_every_ms), retention_ms: cfg.retention_ms };
        Retention { engine: engine.clone(), settings }
    }

    /// Delete finished runs, their logs and silent executors older than the retention
    /// period, in bounded batches. Returns runs deleted.
    pub(crate) async fn run_once(&self) -> Result<u64> {
        let e = &self.engine;
        let before = e.now_ms() - self.settings.retention_ms;
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
    pub(crate) fn spawn(self, cancel: CancellationToken) -> JoinHandle<()> {
        let every = self.settings.every;
        let me = Arc::new(self);
        crate::service::every("retention", every, cancel, move || {
            let me = me.clone();
            async move { me.run_once().await.map(|_| ()) }
        })
    }
}

impl Engine {
    /// One step of the retention service ([`Retention::run_once`]).
    pub async fn retention_once(self: &Arc<Self>) -> Result<u64> {
        Retention::new(self).run_once().await
    }
}
