//! Sharded runs: [`ShardStore`]. Argument and result types are in `records.rs`;
//! SQL in `sql/shards.rs`.

use async_trait::async_trait;

use crate::{FinishShard, Result, Run, RunShard, ShardDelivery, ShardFinishOutcome, ShardFreeze, ShardRetryBegin};

/// The shards of sharded runs (`run_shards`) and their attempts.
#[async_trait]
pub trait ShardStore: Send + Sync {
    /// Freeze the shard set of a run `dispatching` as `p.run_attempt` under `p.node_id`'s
    /// unexpired lease: one `dispatching` shard per target (attempt = the run's attempt),
    /// each with its attempt row and stable webhook id, and `shard_total`, in one
    /// transaction. If the run already has shards (a redelivery), they stand as frozen and
    /// those still `dispatching` get `p.deadline_ms`. Returns every shard with its current
    /// attempt's webhook id (empty: no shard and no target), or `None` if the run is not ours.
    async fn shard_freeze(&self, p: &ShardFreeze) -> Result<Option<Vec<ShardDelivery>>>;
    /// A run's shards in index order (empty for a run that is not sharded).
    async fn shard_list(&self, run_id: &str) -> Result<Vec<RunShard>>;
    /// `dispatching` → `running` (the executor answered 202), for the shard's current attempt only.
    async fn shard_mark_running(&self, run_id: &str, shard_index: i64, attempt: i64, now_ms: i64) -> Result<bool>;
    /// Record where a shard attempt went and its dispatch trail.
    async fn shard_attempt_set_target(
        &self,
        run_id: &str,
        shard_index: i64,
        attempt: i64,
        executor_id: Option<&str>,
        address: Option<&str>,
        trail: &serde_json::Value,
    ) -> Result<()>;
    /// Record how a shard's current attempt ended, conditional on its state and attempt
    /// and on the run still `dispatching`/`running`. When every shard has succeeded the run
    /// succeeds (output: the shards' outputs in index order) and fires its children; when
    /// this shard failed for good the run fails and the other open shards are cancelled.
    async fn shard_finish(&self, p: &FinishShard) -> Result<ShardFinishOutcome>;
    /// A sharded run whose shards were all sent: `dispatching` → `running`, if still there.
    async fn shard_run_delivered(&self, run_id: &str, run_attempt: i64, now_ms: i64) -> Result<bool>;
    /// `retrying` shards due at `now_ms` of `running` runs, with their run, oldest due first.
    async fn shard_due_retries(&self, now_ms: i64, limit: i64) -> Result<Vec<(Run, RunShard)>>;
    /// Start a due `retrying` shard's next attempt (`retrying` → `dispatching`, a new
    /// attempt row and webhook id), if it is still at `p.attempt`: of several callers, one wins.
    async fn shard_retry_begin(&self, p: &ShardRetryBegin) -> Result<Option<ShardDelivery>>;
    /// Shards `dispatching`/`running` past their deadline (`< before_ms`) in `running` runs.
    /// Of the job buckets in `buckets` (as `RunStore::run_overdue`).
    async fn shard_overdue(&self, before_ms: i64, buckets: u64, limit: i64) -> Result<Vec<(Run, RunShard)>>;
    /// `running` shards of the job buckets in `buckets` whose executor has sent no heartbeat
    /// since `silent_before_ms`.
    async fn shard_on_silent_executors(
        &self,
        silent_before_ms: i64,
        buckets: u64,
        limit: i64,
    ) -> Result<Vec<(Run, RunShard)>>;
    /// Append log lines of one shard attempt.
    async fn shard_log_append(
        &self,
        run_id: &str,
        shard_index: i64,
        attempt: i64,
        lines: &[(i64, String, String)],
    ) -> Result<()>;
}
