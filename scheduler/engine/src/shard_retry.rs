//! The shard-retry service: starts the due retries of the shards of sharded runs.

use std::sync::Arc;

use sundial_store::ShardRetryBegin;
use tokio::task::JoinSet;

use crate::Result;
use crate::shard::{self, passed_over, target_of};
use crate::shared::Shared;

/// The shard-retry service: every tick, [`ShardRetrier::run_once`].
pub(crate) struct ShardRetrier {
    node: Arc<Shared>,
    settings: ShardRetrierSettings,
}

/// The shard retrier's settings. Its step reads `executor_offline_ms`, `builtin_runner`
/// and `node_id` (routing) and the delivery client's limits.
#[derive(Debug, Clone)]
pub(crate) struct ShardRetrierSettings {
    /// How often it runs (`tick_ms`; backing off on failure).
    pub every: std::time::Duration,
}

impl ShardRetrier {
    pub(crate) fn new(node: &Arc<Shared>) -> Self {
        let every = std::time::Duration::from_millis(node.cfg.tick_ms);
        ShardRetrier { node: node.clone(), settings: ShardRetrierSettings { every } }
    }

    /// One step: [`ShardRetrier::retry_due`] at `now`, its deliveries left running as tasks.
    pub(crate) async fn run_once(&self, now: i64) -> Result<usize> {
        self.retry_due(now, false).await
    }

    /// Start the next attempt of every due `retrying` shard this node wins, then send it
    /// to the shard's executor if it is still eligible, else to another eligible one.
    /// Returns how many attempts were started. With `wait`, deliveries finish before this
    /// returns (tests); otherwise they run as tasks.
    pub(crate) async fn retry_due(&self, now: i64, wait: bool) -> Result<usize> {
        let node = &self.node;
        if node.clock_skewed() {
            return Ok(0); // backoffs are judged by this node's clock: not while it is off
        }
        let due = node.store.shard_due_retries(now, 100).await?;
        let mut started = 0;
        let mut tasks = JoinSet::new();
        for (run, shard) in due {
            let Some(job) = node.store.job_get(&run.tenant_id, &run.job_id).await? else {
                node.store.run_cancel(&run.tenant_id, &run.id, "the job was deleted", now).await?;
                continue;
            };
            let (app, eligible, trail, script) = shard::shard_plan(node, &run, &job).await?;
            let target = eligible
                .iter()
                .find(|c| shard.executor_id.as_deref() == Some(c.id.as_str()))
                .or_else(|| eligible.get(shard.shard_index as usize % eligible.len().max(1)));
            let begin = ShardRetryBegin {
                run_id: run.id.clone(),
                shard_index: shard.shard_index,
                attempt: shard.attempt,
                target: target.map(target_of),
                deadline_ms: sundial_core::dispatch::deadline_ms(now, job.timeout_ms),
                now_ms: now,
            };
            let Some(d) = crate::retry_deadlock(|| node.store.shard_retry_begin(&begin)).await? else {
                continue; // another node started it, or the run ended
            };
            started += 1;
            let total = run.shard_total.unwrap_or(1);
            let permit = node.inflight_permit().await;
            let (node, trail) = (node.clone(), passed_over(&trail));
            tasks.spawn(async move {
                let _permit = permit;
                if let Err(err) =
                    shard::send_shard(&node, &run, &job, (app.as_ref(), script.as_ref()), total, &d, trail).await
                {
                    tracing::warn!(run_id = %run.id, shard = d.shard.shard_index, error = %err,
                        "shard retry not recorded; its deadline brings it back");
                }
            });
        }
        if wait {
            while tasks.join_next().await.is_some() {}
        } else {
            tasks.detach_all();
        }
        Ok(started)
    }

    /// Start the loop; it ends when `cancel` fires.
    pub(crate) fn spawn(self: Arc<Self>, cancel: tokio_util::sync::CancellationToken) -> tokio::task::JoinHandle<()> {
        let every = self.settings.every;
        crate::service::every("shard-retry", every, cancel, move || {
            let me = self.clone();
            async move { me.run_once(me.node.now_ms()).await.map(|_| ()) }
        })
    }
}
