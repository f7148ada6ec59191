//! Runs, their attempts and logs: [`RunStore`] and its argument and result types.
//! SQL in `sql/runs.rs` (the hot-path batches in `sql/runs/batch.rs`).

use std::sync::Arc;

use async_trait::async_trait;
use sundial_core::types::RunState;

use crate::{AppRouting, Attempt, AttemptResult, Job, Page, Result, Run, RunLog};

#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub job_id: Option<String>,
    pub state: Option<RunState>,
    /// Runs scheduled at or after this instant.
    pub from_ms: Option<i64>,
    /// Runs scheduled before this instant.
    pub to_ms: Option<i64>,
}

/// Claim due runs for a node's timer.
#[derive(Debug, Clone)]
pub struct ClaimParams {
    pub node_id: String,
    /// Runs scheduled (or due to retry) at or before this instant.
    pub due_before_ms: i64,
    pub now_ms: i64,
    pub lease_until_ms: i64,
    pub limit: i64,
    /// False while the operator has paused schedules: only triggered runs are claimed.
    pub include_schedule: bool,
    /// Job affinity: the buckets (`runs.bucket`, bit `b` = bucket `b`) this node owns in
    /// the ring of live nodes. Schedule fires of other buckets are claimed only once due
    /// at or before `foreign_due_before_ms`. [`sundial_core::affinity::ALL_BUCKETS`]
    /// claims everything at once (a lone node).
    pub owned_buckets: u64,
    /// Overdue instant past which any node claims a schedule fire whatever its bucket
    /// (now − the affinity grace), so a silent owner's share still fires.
    pub foreign_due_before_ms: i64,
    /// `Some(t)`: the node reads the pending schedule fires of its own buckets with
    /// [`RunStore::run_peek`] instead, and the claim takes them only once due at or before `t`
    /// (the backstop for a fire the peek missed). `None`: they are claimed once due by
    /// `due_before_ms`. Retries and triggered runs are claimed as always.
    pub own_fires_due_before_ms: Option<i64>,
    /// A tenant holding more than its share of the node's timer: its triggered, schedule and
    /// retry runs are left for later (recovery of expired claims still takes them), so that
    /// every other tenant's runs find room. At most one tenant can be over a share of more
    /// than half the timer.
    pub skip_tenant: Option<String>,
}

/// Read (without claiming) the pending schedule fires of a node's buckets, in
/// (`scheduled_at_ms`, id) order after a cursor: see [`RunStore::run_peek`].
#[derive(Debug, Clone)]
pub struct PeekParams {
    /// The cursor: fires at or before (`after_ms`, `after_id`) were read already.
    pub after_ms: i64,
    pub after_id: String,
    /// Fires scheduled at or before this instant.
    pub due_before_ms: i64,
    /// Bit `b` = bucket `b` (as [`ClaimParams::owned_buckets`]).
    pub owned_buckets: u64,
    pub limit: i64,
    /// As [`ClaimParams::skip_tenant`]: its fires are passed over (the claim's backstop takes
    /// them once the tenant is back within its share).
    pub skip_tenant: Option<String>,
}

/// A run a node hands to [`RunStore::run_dispatch_many`].
#[derive(Debug, Clone, PartialEq)]
pub struct ToDispatch {
    pub run_id: String,
    /// A fire with no row yet (a high-frequency job's, see
    /// `sundial_core::schedule::Schedule::fires_at_dispatch`): the dispatch transaction
    /// writes its row, in the state it decides, unless its (job, fire key) has one already
    /// (then `Gone`), or the job is gone, not active, or no longer fires at that instant
    /// (then `Gone`, nothing written). `run_id` is this run's id.
    pub unwritten: Option<Run>,
    /// The node claimed it `dispatching` (recovered from a node that lost it), so a
    /// `dispatching` run of this node is delivered again as the same attempt. Otherwise a
    /// `dispatching` run is one already under way, and the decision is `Gone`.
    pub redeliver: bool,
}

impl ToDispatch {
    /// A run as the node claimed or read it.
    pub fn new(run_id: impl Into<String>, redeliver: bool) -> Self {
        Self { run_id: run_id.into(), redeliver, unwritten: None }
    }
    /// A fire with no row yet: see [`ToDispatch::unwritten`].
    pub fn unwritten(run: Run) -> Self {
        Self { run_id: run.id.clone(), redeliver: false, unwritten: Some(run) }
    }
}

/// What the dispatch transaction decided.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // built once per dispatch, never stored in bulk
pub enum DispatchDecision {
    /// Now `dispatching` as `attempt`, committed; send it. `routing`: the job's app and its
    /// executors, read in the same transaction (`None` if the app is gone).
    Dispatch { run: Run, job: Arc<Job>, webhook_id: String, covered: Vec<Run>, routing: Option<Arc<AppRouting>> },
    /// Not ours any more (another node, a lost lease, a cancel, a deleted job): do nothing.
    Gone,
    /// A `serial` job's previous run is still in flight: stays queued; try again later.
    /// `until_ms`: when every run holding it back is a retry waiting out its backoff, the
    /// earliest of their due times (nothing can change before then); `None` otherwise.
    Blocked { until_ms: Option<i64> },
    /// Refused by the block strategy or max concurrency: the run is now `skipped`.
    Skipped { reason: &'static str },
}

#[derive(Debug, Clone, PartialEq)]
pub struct FinishAttempt {
    pub run_id: String,
    pub attempt: i64,
    pub result: AttemptResult,
    pub output: Option<serde_json::Value>,
    pub message: Option<String>,
    pub now_ms: i64,
    /// Where the attempt went, recorded with the result (the engine's own deliveries);
    /// `None` leaves what was recorded before (executor callbacks).
    pub target: Option<AttemptTarget>,
    /// The run as the node dispatched it (the engine's own deliveries). When every result of
    /// a batch carries it, the batch writes without reading the rows first: its conditional
    /// writes find whether each is still for its run's current attempt, and if one is not,
    /// the batch is undone and decided from the rows read under their locks. The outcome's
    /// run is then this copy with the result applied.
    pub dispatched: Option<Run>,
}

/// Where an attempt was delivered and the dispatch trail that led there.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptTarget {
    pub executor_id: Option<String>,
    pub address: Option<String>,
    pub trail: serde_json::Value,
}

/// One job's generated runs, for [`RunStore::run_generate_many`].
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateJob {
    pub job_id: String,
    /// Written only if the job is still at this version (and active).
    pub job_version: i64,
    pub runs: Vec<Run>,
    pub generated_until_ms: i64,
}

#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // built once per result, never stored in bulk
pub enum FinishOutcome {
    /// Recorded; the run is now in `run.state`. `children` are the child runs fired.
    Applied {
        run: Run,
        children: Vec<Run>,
    },
    /// The same result was already recorded for this attempt: nothing changed.
    Duplicate,
    /// Refused: not the current attempt, or the run is no longer dispatching/running.
    Conflict {
        state: RunState,
        attempt: i64,
    },
    NotFound,
}

/// Runs: inserting and listing them, and the scheduling engine's side — generation,
/// claim and peek, the dispatch and result batches, cancel and retry, the reaper's
/// scans, attempts and logs.
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Insert a run unless one exists for its (job, fire key); true if inserted.
    async fn run_insert(&self, run: &Run) -> Result<bool>;
    async fn run_get(&self, tenant_id: &str, id: &str) -> Result<Option<Run>>;
    /// The runs of a chain (its root, whose id is the chain's, and every run fired down
    /// from it), oldest first, at most `limit`; empty for another tenant's chain.
    async fn run_chain(&self, tenant_id: &str, chain_id: &str, limit: i64) -> Result<Vec<Run>>;
    /// A chain's runs (as [`run_chain`](RunStore::run_chain)) with its jobs, edges and
    /// fan-in joins; `None` if the tenant has no such chain.
    async fn chain_view(&self, tenant_id: &str, chain_id: &str, limit: i64) -> Result<Option<crate::ChainView>>;
    async fn run_by_fire_key(&self, job_id: &str, fire_key: &str) -> Result<Option<Run>>;
    /// Newest scheduled first. The cursor is the last row's `"{scheduled_at_ms}:{id}"`.
    async fn run_list(&self, tenant_id: &str, filter: &RunFilter, page: &Page) -> Result<Vec<Run>>;

    // ---- scheduling engine ----

    /// Insert generated runs (duplicates of a fire key are ignored) and move the job's
    /// `generated_until_ms`, if the job is still at `job_version`. Returns the number
    /// inserted, or `None` if the job changed meanwhile (nothing written).
    async fn run_generate(
        &self,
        job_id: &str,
        job_version: i64,
        runs: &[Run],
        generated_until_ms: i64,
    ) -> Result<Option<usize>> {
        let batch = [GenerateJob { job_id: job_id.into(), job_version, runs: runs.to_vec(), generated_until_ms }];
        Ok(self.run_generate_many(&batch).await?.pop().flatten())
    }
    /// [`RunStore::run_generate`] for several jobs in one transaction (one commit), in order.
    async fn run_generate_many(&self, batch: &[GenerateJob]) -> Result<Vec<Option<usize>>>;
    /// Atomically claim due `pending` runs (→ `queued`) and due `retrying` runs
    /// (owner set) for a node, oldest first.
    async fn run_claim(&self, p: &ClaimParams) -> Result<Vec<Run>>;
    /// The pending schedule fires of the given buckets after the cursor, due by
    /// `due_before_ms`, oldest first: a plain read, no lock and no write. The node keeps
    /// them in its timer, and [`RunStore::run_dispatch_many`] takes them from `pending`.
    async fn run_peek(&self, p: &PeekParams) -> Result<Vec<Run>>;
    /// Runs the misfire policy drops (one statement per chunk): each moves to `expired` with
    /// `message` if still `pending` (a peeked fire), or `queued` and claimed by `node_id`.
    /// Returns how many were expired.
    async fn run_expire_many(&self, run_ids: &[String], node_id: &str, message: &str, now_ms: i64) -> Result<u64>;
    /// Misfire `fire_once`, for many (job, scheduled at) at once: the jobs that have a
    /// schedule fire after theirs that has gone already (dispatched or finished) or is still
    /// `pending`/`queued` but scheduled before `before_ms` (missed too). A few statements for
    /// the whole batch, each reading only the jobs' fires from the earliest instant asked
    /// about on.
    async fn run_later_fires(&self, fires: &[(String, i64)], before_ms: i64) -> Result<Vec<String>>;
    /// Insert runs unless their (job, fire key) has a row already (one transaction): fires
    /// that had no row yet, written in the state they ended in (`expired` by the misfire
    /// policy) or handed over `pending` (a node stopping). Returns how many were inserted.
    async fn run_insert_missing(&self, runs: &[Run]) -> Result<usize>;
    /// The latest schedule fire that has a row, per job (jobs with none are absent): where
    /// a node taking a high-frequency job over starts from.
    async fn run_last_fires(&self, job_ids: &[String]) -> Result<std::collections::HashMap<String, i64>>;
    /// The schedule fires that have a row, per job, each job in its own `(job_id, from_ms,
    /// to_ms)` range, bounds included (instants, ascending; jobs with none are absent): a node
    /// taking a job over looks for fires that a node gone before it left without a row behind
    /// a later one that has one.
    async fn run_fires_between(
        &self,
        ranges: &[(String, i64, i64)],
    ) -> Result<std::collections::HashMap<String, Vec<i64>>>;
    /// Hand claimed runs not yet dispatched back (`queued` → `pending`, retrying runs lose their owner).
    async fn run_release(&self, node_id: &str, run_ids: &[String], now_ms: i64) -> Result<u64>;
    /// The dispatch transaction: move a run to `dispatching` as its next attempt, reading
    /// the job's current definition and deciding block strategy and max concurrency under
    /// the job's lock. The run must be `pending` (anyone's: a peeked fire; a `serial` fire
    /// it blocks is claimed for this node, `Blocked`), or `queued`/`retrying` under this
    /// node's live claim, or `dispatching` under it (a recovered run: redelivered as the
    /// same attempt). Anything else is `Gone`.
    async fn run_dispatch_begin(
        &self,
        run_id: &str,
        node_id: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<DispatchDecision> {
        let mut d = self.run_dispatch_many(&[ToDispatch::new(run_id, true)], node_id, now_ms, lease_ms).await?;
        Ok(d.pop().map(|(_, d)| d).unwrap_or(DispatchDecision::Gone))
    }
    /// [`RunStore::run_dispatch_begin`] for a batch of runs in one transaction and one
    /// commit: each run decided as if alone, in order (a queued run sees the runs of its
    /// job dispatched earlier in the batch as in flight). One decision per distinct id.
    /// A `dispatching` run is redelivered only if its [`ToDispatch::redeliver`] says so.
    async fn run_dispatch_many(
        &self,
        runs: &[ToDispatch],
        node_id: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Vec<(String, DispatchDecision)>>;
    /// Push back the deadline and lease of runs this node has just committed `dispatching`,
    /// by `by_ms`: for a dispatch transaction that took long (lock waits), so the time it took
    /// does not count against the executor's timeout. Conditional on state and owner.
    async fn run_extend_dispatch(&self, run_ids: &[String], node_id: &str, by_ms: i64) -> Result<u64>;
    /// Record where an attempt went and the dispatch trail.
    async fn attempt_set_target(
        &self,
        run_id: &str,
        attempt: i64,
        executor_id: Option<&str>,
        address: Option<&str>,
        trail: &serde_json::Value,
    ) -> Result<()>;
    /// `dispatching` → `running` (the executor answered 202), for the current attempt only.
    async fn run_mark_running(&self, run_id: &str, attempt: i64, now_ms: i64) -> Result<bool>;
    /// Record how the current attempt ended, through the state machine, conditional on
    /// state and attempt. Success fires the job's children (`p:<run id>`) in the same transaction.
    async fn run_finish_attempt(&self, p: &FinishAttempt) -> Result<FinishOutcome> {
        let mut out = self.run_finish_many(std::slice::from_ref(p)).await?;
        Ok(out.pop().unwrap_or(FinishOutcome::NotFound))
    }
    /// [`RunStore::run_finish_attempt`] for several results in one transaction and one commit
    /// (group commit), applied in order; one outcome per result. Every applied result is
    /// stamped with the latest `now_ms` of the batch (finish and update times).
    async fn run_finish_many(&self, ps: &[FinishAttempt]) -> Result<Vec<FinishOutcome>>;
    /// Cancel a non-terminal run. Returns the run as it was before, if it was cancelled.
    async fn run_cancel(&self, tenant_id: &str, run_id: &str, message: &str, now_ms: i64) -> Result<Option<Run>>;
    /// Make a `retrying` run due now; for a `running` sharded run, its `retrying` shards.
    /// False (nothing changed) if there was nothing waiting to retry.
    async fn run_retry_now(&self, tenant_id: &str, run_id: &str, now_ms: i64) -> Result<bool>;
    /// `running` runs past their deadline, of the job buckets in `buckets` (bit `b` = bucket
    /// `b`; `sundial_core::affinity::ALL_BUCKETS` for all), up to `limit`.
    async fn run_overdue(&self, now_ms: i64, buckets: u64, limit: i64) -> Result<Vec<Run>>;
    /// `running` runs of the job buckets in `buckets` whose executor has sent no heartbeat
    /// since `silent_before_ms`.
    async fn run_on_silent_executors(&self, silent_before_ms: i64, buckets: u64, limit: i64) -> Result<Vec<Run>>;
    async fn run_attempts(&self, run_id: &str) -> Result<Vec<Attempt>>;
    /// The state and current attempt of each of these runs, in one read (runs not found
    /// are absent; order unspecified): a node watching its open exchanges for cancels.
    async fn run_states(&self, run_ids: &[String]) -> Result<Vec<(String, RunState, i64)>>;
    async fn run_log_append(&self, run_id: &str, attempt: i64, lines: &[(i64, String, String)]) -> Result<()>;
    async fn run_logs(&self, run_id: &str, limit: i64) -> Result<Vec<RunLog>>;
    /// The run's log lines with an id (`RunLog::id`, the line's sequence number) above
    /// `after_id`, in id order, at most `limit`: a reader following a log passes the last id it
    /// read.
    async fn run_logs_after(&self, run_id: &str, after_id: i64, limit: i64) -> Result<Vec<RunLog>>;
}
