//! The reaper: fails `running` runs and shards past their deadline (`timeout`) or on a
//! silent executor (`lost`), in this node's job buckets, and forgets old webhook ids.

use std::sync::Arc;
use std::time::Duration;

use sundial_core::run_state::FailReason;
use sundial_store::FinishOutcome;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::cancel::CancelTarget;
use crate::outcome::finish_attempt;
use crate::transport::ExecutorResult;
use crate::{Engine, Result};

/// The reaper service: every second, one [`Reaper::run_once`].
pub(crate) struct Reaper {
    engine: Arc<Engine>,
    settings: ReaperSettings,
}

/// The reaper's settings: its slice of [`crate::EngineConfig`].
#[derive(Debug, Clone)]
pub(crate) struct ReaperSettings {
    /// How often it runs (1 s; backing off on failure).
    pub every: Duration,
    /// A running run is failed `timeout` this long after its deadline (`reaper_grace_ms`).
    pub reaper_grace_ms: i64,
    /// An executor silent this long has lost the runs it was running (`executor_lost_ms`).
    pub executor_lost_ms: i64,
}

impl Reaper {
    pub(crate) fn new(engine: &Arc<Engine>) -> Self {
        let cfg = &engine.cfg;
        let settings = ReaperSettings {
            every: Duration::from_millis(1000),
            reaper_grace_ms: cfg.reaper_grace_ms,
            executor_lost_ms: cfg.executor_lost_ms,
        };
        Reaper { engine: engine.clone(), settings }
    }

    /// Fail `running` runs whose deadline (plus grace) passed, with reason `timeout`, then
    /// queue a best-effort signed cancel to their executor (only for the attempts this node
    /// failed: the loser of a race has nothing to cancel, and no one waits for the cancel),
    /// and runs whose executor went silent, with reason `lost`. Only the runs of this
    /// node's job buckets: each overdue run is reaped by one node, which takes over a dead
    /// node's buckets with the rest of its share. Returns how many.
    pub(crate) async fn run_once(&self) -> Result<usize> {
        let e = &self.engine;
        let now = e.now_ms();
        let mine = e.owned_buckets();
        let overdue = e.store.run_overdue(now - self.settings.reaper_grace_ms, mine, 500).await?;
        let mut n = 0;
        for run in overdue {
            let Some(job) = e.store.job_get(&run.tenant_id, &run.job_id).await? else {
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
                finish_attempt(e.store.as_ref(), &job, &run.id, run.attempt, result, now).await?,
                FinishOutcome::Applied { .. }
            ) {
                e.calls.cancels.cancel_run(&run);
                n += 1;
            }
        }
        // Executors silent past the grace period lose their runs (a missed heartbeat or two is not enough).
        let lost = e.store.run_on_silent_executors(now - self.settings.executor_lost_ms, mine, 500).await?;
        for run in lost {
            let Some(job) = e.store.job_get(&run.tenant_id, &run.job_id).await? else { continue };
            let result = ExecutorResult {
                retry: true,
                succeeded: false,
                reason: FailReason::Lost,
                output: None,
                message: Some(format!("the executor sent no heartbeat for {} ms", self.settings.executor_lost_ms)),
            };
            if matches!(
                finish_attempt(e.store.as_ref(), &job, &run.id, run.attempt, result, now).await?,
                FinishOutcome::Applied { .. }
            ) {
                tracing::warn!(run_id = %run.id, "executor lost; attempt failed");
                n += 1;
            }
        }
        n += self.reap_shards(now).await?;
        // Seen webhook ids only matter inside the signature tolerance window.
        e.store.webhook_forget(now - 2 * sundial_core::signing::TOLERANCE_SECS * 1000).await?;
        if n > 0 {
            e.wake.notify_one();
        }
        Ok(n)
    }

    /// The reaper's part for shards: a shard past its deadline (plus grace) gets a signed
    /// cancel and fails `timeout`; one whose executor went silent fails `lost`; each then
    /// follows its own retry policy. Returns how many shard attempts were failed.
    async fn reap_shards(&self, now: i64) -> Result<usize> {
        let e = &self.engine;
        let mut n = 0;
        let mine = e.owned_buckets();
        for (run, shard) in e.store.shard_overdue(now - self.settings.reaper_grace_ms, mine, 500).await? {
            let Some(job) = e.store.job_get(&run.tenant_id, &run.job_id).await? else {
                e.store.run_cancel(&run.tenant_id, &run.id, "the job was deleted", now).await?;
                continue;
            };
            let result = ExecutorResult {
                retry: true,
                succeeded: false,
                reason: FailReason::Timeout,
                output: None,
                message: Some(format!("no result within timeout_ms = {}", job.timeout_ms)),
            };
            if e.after_finish(&job, &run, shard.shard_index, shard.attempt, result).await? {
                // Failed by this node: its executor gets a cancel in the background.
                if let (Some(address), Ok(Some(app))) = (&shard.address, e.store.app_by_id(&job.app_id).await) {
                    e.calls.cancels.cancel(CancelTarget::Shard {
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
        let lost = e.store.shard_on_silent_executors(now - self.settings.executor_lost_ms, mine, 500).await?;
        for (run, shard) in lost {
            let Some(job) = e.store.job_get(&run.tenant_id, &run.job_id).await? else {
                e.store.run_cancel(&run.tenant_id, &run.id, "the job was deleted", now).await?;
                continue;
            };
            let result = ExecutorResult {
                retry: true,
                succeeded: false,
                reason: FailReason::Lost,
                output: None,
                message: Some(format!("the executor sent no heartbeat for {} ms", self.settings.executor_lost_ms)),
            };
            if e.after_finish(&job, &run, shard.shard_index, shard.attempt, result).await? {
                tracing::warn!(run_id = %run.id, shard = shard.shard_index, "executor lost; shard attempt failed");
                n += 1;
            }
        }
        Ok(n)
    }

    /// Start the loop; it ends when `cancel` fires.
    pub(crate) fn spawn(self, cancel: CancellationToken) -> JoinHandle<()> {
        let every = self.settings.every;
        let me = Arc::new(self);
        crate::service::every("reaper", every, cancel, move || {
            let me = me.clone();
            async move { me.run_once().await.map(|_| ()) }
        })
    }
}

impl Engine {
    /// One step of the reaper service ([`Reaper::run_once`]).
    pub async fn reap_once(self: &Arc<Self>) -> Result<usize> {
        Reaper::new(self).run_once().await
    }
}
