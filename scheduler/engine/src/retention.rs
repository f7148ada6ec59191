//! Retention: deletes finished runs, their logs and silent executors older than the
//! retention period.

use crate::{Engine, Result};

impl Engine {
    /// Delete finished runs, their logs and silent executors older than the retention
    /// period, in bounded batches. Returns runs deleted.
    pub async fn retention_once(&self) -> Result<u64> {
        let before = self.now_ms() - self.cfg.retention_ms;
        let mut total = 0;
        loop {
            let n = self.store.retention_cleanup(before, 500).await?;
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
}

/// The retention service: every `retention_every_ms`, [`Engine::retention_once`].
pub(crate) struct Retention {
    engine: std::sync::Arc<Engine>,
    settings: RetentionSettings,
}

/// Retention's settings. Its step reads `retention_ms`.
#[derive(Debug, Clone)]
pub(crate) struct RetentionSettings {
    /// How often it runs (`retention_every_ms`; backing off on failure).
    pub every: std::time::Duration,
}

impl Retention {
    pub(crate) fn new(engine: &std::sync::Arc<Engine>) -> Self {
        let cfg = &engine.cfg;
        Retention {
            engine: engine.clone(),
            settings: RetentionSettings { every: std::time::Duration::from_millis(cfg.retention_every_ms) },
        }
    }

    /// One step: [`Engine::retention_once`].
    pub(crate) async fn run_once(&self) -> Result<u64> {
        self.engine.retention_once().await
    }

    /// Start the loop; it ends when `cancel` fires.
    pub(crate) fn spawn(self, cancel: tokio_util::sync::CancellationToken) -> tokio::task::JoinHandle<()> {
        let every = self.settings.every;
        let me = std::sync::Arc::new(self);
        crate::service::every("retention", every, cancel, move || {
            let me = me.clone();
            async move { me.run_once().await.map(|_| ()) }
        })
    }
}
