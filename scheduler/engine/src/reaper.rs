//! The reaper: fails `running` runs and shards past their deadline (`timeout`) or on a
//! silent executor (`lost`), in this node's job buckets, and forgets old webhook ids.

use std::sync::Arc;
use std::time::Duration;

use sundial_core::run_state::FailReason;
use sundial_store::{FinishOutcome, Job, Run, RunShard};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::Result;
use crate::cancel::CancelTarget;
use crate::outcome::finish_attempt;
use crate::shard;
use crate::shared::Shared;
use crate::transport::ExecutorResult;

/// Why an attempt is failed: past its deadline, or on an executor gone silent.
#[derive(Debug, Clone, Copy)]
enum Why {
    Timeout,
    Lost,
}

/// The reaper service: every second, one [`Reaper::run_once`].
pub(crate) struct Reaper {
    node: Arc<Shared>,
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
    pub(crate) fn new(node: &Arc<Shared>) -> Self {
        let cfg = &node.cfg;
        let settings = ReaperSettings {
            every: Duration::from_millis(1000),
            reaper_grace_ms: cfg.reaper_grace_ms,
            executor_lost_ms: cfg.executor_lost_ms,
        };
        Reaper { node: node.clone(), settings }
    }

    /// Fail `running` runs whose deadline (plus grace) passed, with reason `timeout`, then
    /// queue a best-effort signed cancel to their executor (only for the attempts this node
    /// failed: the loser of a race has nothing to cancel, and no one waits for the cancel),
    /// and runs whose executor went silent, with reason `lost`. Only the runs of this
    /// node's job buckets: each overdue run is reaped by one node, which takes over a dead
    /// node's buckets with the rest of its share. Returns how many.
    pub(crate) async fn run_once(&self, now: i64) -> Result<usize> {
        let e = &self.node;
        let mine = e.owned_buckets();
        let timed_out = e.store.run_overdue(now - self.settings.reaper_grace_ms, mine, 500).await?;
        let lost = e.store.run_on_silent_executors(now - self.settings.executor_lost_ms, mine, 500).await?;
        let mut n = 0;
        for (runs, why) in [(timed_out, Why::Timeout), (lost, Why::Lost)] {
            for run in runs {
                n += self.fail_run(run, why, now).await? as usize;
            }
        }
        let timed_out = e.store.shard_overdue(now - self.settings.reaper_grace_ms, mine, 500).await?;
        let lost = e.store.shard_on_silent_executors(now - self.settings.executor_lost_ms, mine, 500).await?;
        for (shards, why) in [(timed_out, Why::Timeout), (lost, Why::Lost)] {
            for (run, shard) in shards {
                n += self.fail_shard(run, shard, why, now).await? as usize;
            }
        }
        e.store.webhook_forget(now - 2 * sundial_core::signing::TOLERANCE_SECS * 1000).await?;
        if n > 0 {
            e.wake.notify_one();
        }
        Ok(n)
    }

    /// The failed attempt's result: retryable, with the reason and what was waited for.
    fn result(&self, why: Why, job: &Job) -> ExecutorResult {
        let (reason, message) = match why {
            Why::Timeout => (FailReason::Timeout, format!("no result within timeout_ms = {}", job.timeout_ms)),
            Why::Lost => {
                (FailReason::Lost, format!("the executor sent no heartbeat for {} ms", self.settings.executor_lost_ms))
            }
        };
        ExecutorResult { retry: true, succeeded: false, reason, output: None, message: Some(message) }
    }

    /// Fail a run's attempt; a timed-out one is also cancelled at its executor. Did it apply?
    async fn fail_run(&self, run: Run, why: Why, now: i64) -> Result<bool> {
        let e = &self.node;
        let Some(job) = e.store.job_get(&run.tenant_id, &run.job_id).await? else {
            return Ok(false);
        };
        let applied = matches!(
            finish_attempt(e.store.as_ref(), &job, &run.id, run.attempt, self.result(why, &job), now).await?,
            FinishOutcome::Applied { .. }
        );
        match why {
            Why::Timeout if applied => e.calls.cancels.cancel_run(&run),
            Why::Lost if applied => tracing::warn!(run_id = %run.id, "executor lost; attempt failed"),
            _ => {}
        }
        Ok(applied)
    }

    /// Fail a shard's attempt (the run of a deleted job is cancelled); a timed-out one is
    /// also cancelled at its executor. Did it apply?
    async fn fail_shard(&self, run: Run, shard: RunShard, why: Why, now: i64) -> Result<bool> {
        let e = &self.node;
        let Some(job) = e.store.job_get(&run.tenant_id, &run.job_id).await? else {
            e.store.run_cancel(&run.tenant_id, &run.id, "the job was deleted", now).await?;
            return Ok(false);
        };
        let result = self.result(why, &job);
        if !shard::after_finish(e, &job, &run, shard.shard_index, shard.attempt, result).await? {
            return Ok(false);
        }
        match why {
            Why::Timeout => {
                if let (Some(address), Ok(Some(app))) = (&shard.address, e.store.app_by_id(&job.app_id).await) {
                    e.calls.cancels.cancel(CancelTarget::Shard {
                        app,
                        run_id: run.id.clone(),
                        shard_index: shard.shard_index,
                        attempt: shard.attempt,
                        address: address.clone(),
                    });
                }
            }
            Why::Lost => {
                tracing::warn!(run_id = %run.id, shard = shard.shard_index, "executor lost; shard attempt failed")
            }
        }
        Ok(true)
    }

    /// Start the loop; it ends when `cancel` fires.
    pub(crate) fn spawn(self: Arc<Self>, cancel: CancellationToken) -> JoinHandle<()> {
        let every = self.settings.every;
        let me = self;
        crate::service::every("reaper", every, cancel, move || {
            let me = me.clone();
            async move { me.run_once(me.node.now_ms()).await.map(|_| ()) }
        })
    }
}
