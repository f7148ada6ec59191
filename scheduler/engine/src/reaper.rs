//! The reaper: fails `running` runs and shards past their deadline (`timeout`) or on a
//! silent executor (`lost`), in this node's job buckets, and forgets old webhook ids.

use sundial_core::run_state::FailReason;
use sundial_store::FinishOutcome;

use crate::cancel::CancelTarget;
use crate::outcome::finish_attempt;
use crate::transport::ExecutorResult;
use crate::{Engine, Result};

impl Engine {
    /// Fail `running` runs whose deadline (plus grace) passed, with reason `timeout`, then
    /// queue a best-effort signed cancel to their executor (only for the attempts this node
    /// failed: the loser of a race has nothing to cancel, and no one waits for the cancel),
    /// and runs whose executor went silent, with reason `lost`. Only the runs of this
    /// node's job buckets: each overdue run is reaped by one node, which takes over a dead
    /// node's buckets with the rest of its share. Returns how many.
    pub async fn reap_once(&self) -> Result<usize> {
        let now = self.now_ms();
        let mine = self.owned_buckets();
        let overdue = self.store.run_overdue(now - self.cfg.reaper_grace_ms, mine, 500).await?;
        let mut n = 0;
        for run in overdue {
            let Some(job) = self.store.job_get(&run.tenant_id, &run.job_id).await? else {
                continue;
            };
            let result = ExecutorResult {
                retry: true,
                succeeded: false,
                reason: FailReason::Timeout,
                output: None,
                message: Some(format!("no result within timeout_ms = {}", job.timeout_ms)),
            };
            if matches!(
                finish_attempt(self.store.as_ref(), &job, &run.id, run.attempt, result, now).await?,
                FinishOutcome::Applied { .. }
            ) {
                self.calls.cancels.cancel_run(&run);
                n += 1;
            }
        }
        // Executors silent past the grace period lose their runs (a missed heartbeat or two is not enough).
        let lost = self.store.run_on_silent_executors(now - self.cfg.executor_lost_ms, mine, 500).await?;
        for run in lost {
            let Some(job) = self.store.job_get(&run.tenant_id, &run.job_id).await? else { continue };
            let result = ExecutorResult {
                retry: true,
                succeeded: false,
                reason: FailReason::Lost,
                output: None,
                message: Some(format!("the executor sent no heartbeat for {} ms", self.cfg.executor_lost_ms)),
            };
            if matches!(
                finish_attempt(self.store.as_ref(), &job, &run.id, run.attempt, result, now).await?,
                FinishOutcome::Applied { .. }
            ) {
                tracing::warn!(run_id = %run.id, "executor lost; attempt failed");
                n += 1;
            }
        }
        n += self.reap_shards(now).await?;
        // Seen webhook ids only matter inside the signature tolerance window.
        self.store.webhook_forget(now - 2 * sundial_core::signing::TOLERANCE_SECS * 1000).await?;
        if n > 0 {
            self.wake.notify_one();
        }
        Ok(n)
    }

    /// The reaper's part for shards: a shard past its deadline (plus grace) gets a signed
    /// cancel and fails `timeout`; one whose executor went silent fails `lost`; each then
    /// follows its own retry policy. Returns how many shard attempts were failed.
    pub(crate) async fn reap_shards(&self, now: i64) -> Result<usize> {
        let mut n = 0;
        let mine = self.owned_buckets();
        for (run, shard) in self.store.shard_overdue(now - self.cfg.reaper_grace_ms, mine, 500).await? {
            let Some(job) = self.store.job_get(&run.tenant_id, &run.job_id).await? else {
                self.store.run_cancel(&run.tenant_id, &run.id, "the job was deleted", now).await?;
                continue;
            };
            let result = ExecutorResult {
                retry: true,
                succeeded: false,
                reason: FailReason::Timeout,
                output: None,
                message: Some(format!("no result within timeout_ms = {}", job.timeout_ms)),
            };
            if self.after_finish(&job, &run, shard.shard_index, shard.attempt, result).await? {
                // Failed by this node: its executor gets a cancel in the background.
                if let (Some(address), Ok(Some(app))) = (&shard.address, self.store.app_by_id(&job.app_id).await) {
                    self.calls.cancels.cancel(CancelTarget::Shard {
                        app,
                        run_id: run.id.clone(),
                        shard_index: shard.shard_index,
                        attempt: shard.attempt,
                        address: address.clone(),
                    });
                }
                n += 1;
            }
        }
        let lost = self.store.shard_on_silent_executors(now - self.cfg.executor_lost_ms, mine, 500).await?;
        for (run, shard) in lost {
            let Some(job) = self.store.job_get(&run.tenant_id, &run.job_id).await? else {
                self.store.run_cancel(&run.tenant_id, &run.id, "the job was deleted", now).await?;
                continue;
            };
            let result = ExecutorResult {
                retry: true,
                succeeded: false,
                reason: FailReason::Lost,
                output: None,
                message: Some(format!("the executor sent no heartbeat for {} ms", self.cfg.executor_lost_ms)),
            };
            if self.after_finish(&job, &run, shard.shard_index, shard.attempt, result).await? {
                tracing::warn!(run_id = %run.id, shard = shard.shard_index, "executor lost; shard attempt failed");
                n += 1;
            }
        }
        Ok(n)
    }
}

/// The reaper service: every second, [`Engine::reap_once`].
pub(crate) struct Reaper {
    engine: std::sync::Arc<Engine>,
    settings: ReaperSettings,
}

/// The reaper's settings. Its step reads `reaper_grace_ms` and `executor_lost_ms`.
#[derive(Debug, Clone)]
pub(crate) struct ReaperSettings {
    /// How often it runs (1 s; backing off on failure).
    pub every: std::time::Duration,
}

impl Reaper {
    pub(crate) fn new(engine: &std::sync::Arc<Engine>) -> Self {
        Reaper { engine: engine.clone(), settings: ReaperSettings { every: std::time::Duration::from_millis(1000) } }
    }

    /// One step: [`Engine::reap_once`].
    pub(crate) async fn run_once(&self) -> Result<usize> {
        self.engine.reap_once().await
    }

    /// Start the loop; it ends when `cancel` fires.
    pub(crate) fn spawn(self, cancel: tokio_util::sync::CancellationToken) -> tokio::task::JoinHandle<()> {
        let every = self.settings.every;
        let me = std::sync::Arc::new(self);
        crate::service::every("reaper", every, cancel, move || {
            let me = me.clone();
            async move { me.run_once().await.map(|_| ()) }
        })
    }
}
