//! The dispatch transaction: a batch of claimed runs locked, each decided by
//! [`sundial_core::dispatch`] as if alone, and the plans executed — one transaction and one
//! durable commit for the batch.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use sqlx::{Any, Transaction};
use sundial_core::dispatch::{self, Entry, Plan, SkipReason};
use sundial_core::run_state::{RunEvent, transition};
use sundial_core::types::{BlockStrategy, Route, RunState};

use super::batch::groups;
use crate::sql::chains;
use crate::sql::rows::{JOB_COLS, executor_row, job_row, run_row};
use crate::sql::writes::{insert_runs, set_terminal, webhook_id_of};
use crate::sql::{
    IDS, IN_CHUNK, Ix, SqlStore, col, distinct, fetch_in, in_list, in_width, json_opt, pow2_chunks, refused, sorted,
    sql_state, sql_states,
};
use crate::{AppRouting, Dialect, DispatchDecision, Job, Result, Run, StoreError, ToDispatch};

type Tx = Transaction<'static, Any>;

/// One dispatch transaction's working state: the batch's runs and jobs as read under their
/// locks, and what is decided of each run.
struct Batch<'a> {
    node_id: &'a str,
    now_ms: i64,
    lease_ms: i64,
    /// Fires with no row yet: decided like `pending` rows, and written in the state decided.
    unwritten: HashMap<&'a str, &'a Run>,
    runs: HashMap<String, Run>,
    jobs: HashMap<String, Arc<Job>>,
    /// The runs in flight of each job with a fresh fire in the batch (and those it sends).
    inflight: HashMap<String, Vec<Run>>,
    /// Every run of the batch in order, with its decision when made before its job is read.
    order: Vec<(String, Option<DispatchDecision>)>,
    /// The runs still to decide against their jobs, in order.
    todo: Vec<String>,
    /// Decided other than `Dispatch`.
    settled: HashMap<String, DispatchDecision>,
    /// Sent, in order.
    dispatched: Vec<String>,
    /// Fires with no row, to insert.
    to_write: Vec<String>,
    /// What each `cover_early` dispatch cancelled.
    covered_by: HashMap<String, Vec<Run>>,
}

impl<'a> Batch<'a> {
    fn new(to_dispatch: &'a [ToDispatch], node_id: &'a str, now_ms: i64, lease_ms: i64) -> Self {
        let mut unwritten: HashMap<&str, &Run> = HashMap::new();
        for t in to_dispatch {
            if let Some(r) = &t.unwritten {
                debug_assert_eq!(r.state, RunState::Pending);
                unwritten.entry(t.run_id.as_str()).or_insert(r);
            }
        }
        Batch {
            node_id,
            now_ms,
            lease_ms,
            unwritten,
            runs: HashMap::new(),
            jobs: HashMap::new(),
            inflight: HashMap::new(),
            order: Vec::with_capacity(to_dispatch.len()),
            todo: Vec::new(),
            settled: HashMap::new(),
            dispatched: Vec::new(),
            to_write: Vec::new(),
            covered_by: HashMap::new(),
        }
    }
}

impl SqlStore {
    /// Lock jobs' rows (in id order) and read them: only the version and last change under
    /// the lock, the rest from the jobs seen before when they match (`JobsSeen`).
    async fn lock_jobs(&self, tx: &mut Transaction<'static, Any>, ids: &[&str]) -> Result<HashMap<String, Arc<Job>>> {
        let sql = format!("SELECT id, version, updated_at_ms FROM jobs WHERE id IN ({}){}", IDS, self.lock_clause());
        let keys = fetch_in(tx, &sql, ids)
            .await?
            .iter()
            .map(|r| Ok((col::<String>(r, "id")?, col::<i64>(r, "version")?, col::<i64>(r, "updated_at_ms")?)))
            .collect::<Result<Vec<_>>>()?;
        let (mut jobs, missing) = self.jobs_seen.get(&keys);
        if !missing.is_empty() {
            let sql = format!("SELECT {JOB_COLS} FROM jobs WHERE id IN ({})", IDS);
            let missing: Vec<&str> = missing.iter().map(String::as_str).collect();
            let read = fetch_in(tx, &sql, &missing)
                .await?
                .iter()
                .map(|r| job_row(r).map(Arc::new))
                .collect::<Result<Vec<Arc<Job>>>>()?;
            self.jobs_seen.put(read.iter().cloned());
            jobs.extend(read.into_iter().map(|j| (j.id.clone(), j)));
        }
        Ok(jobs)
    }

    /// The dispatch transaction for a batch of claimed runs: see
    /// [`RunStore::run_dispatch_many`](crate::RunStore::run_dispatch_many). Each run is
    /// decided by [`sundial_core::dispatch`] as if alone, on the rows read under their locks;
    /// this executes the plans, in phases over the whole batch.
    pub(super) async fn dispatch_many(
        &self,
        to_dispatch: &[ToDispatch],
        node_id: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Vec<(String, DispatchDecision)>> {
        let mut b = Batch::new(to_dispatch, node_id, now_ms, lease_ms);
        let mut tx = self.begin().await?;
        self.lock_batch(&mut tx, &mut b, to_dispatch).await?;
        self.drop_fires_that_do_not_stand(&mut tx, &mut b).await?;
        self.decide_batch(&mut tx, &mut b).await?;
        self.write_dispatched(&mut tx, &mut b).await?;
        let out = self.dispatch_outcome(&mut tx, b).await?;
        tx.commit().await?;
        Ok(out)
    }

    /// Lock the batch's runs, settle those not ours to send (or to send again), lock the jobs
    /// of the rest and read their runs in flight. Locks are taken in id order everywhere
    /// (runs, then jobs): two transactions over overlapping rows then wait for each other
    /// instead of deadlocking.
    async fn lock_batch(&self, tx: &mut Tx, b: &mut Batch<'_>, to_dispatch: &[ToDispatch]) -> Result<()> {
        let ids = distinct(to_dispatch.iter().map(|t| t.run_id.as_str()));
        let redeliver: HashSet<&str> = to_dispatch.iter().filter(|t| t.redeliver).map(|t| t.run_id.as_str()).collect();
        let written_ids: Vec<&str> = ids.iter().copied().filter(|id| !b.unwritten.contains_key(*id)).collect();
        b.runs = self.lock_runs(tx, &sorted(&written_ids)).await?;
        for id in &ids {
            if let Some(r) = b.unwritten.get(*id) {
                b.runs.insert(id.to_string(), (*r).clone());
                b.todo.push(id.to_string());
                b.order.push((id.to_string(), None));
                continue;
            }
            let decision = match b.runs.get(*id) {
                None => Some(DispatchDecision::Gone),
                Some(run) => match dispatch::entry(run, b.node_id, b.now_ms, redeliver.contains(id)) {
                    Entry::Decide => {
                        b.todo.push(id.to_string());
                        None
                    }
                    Entry::Redeliver => Some(self.redeliver(tx, run.clone(), b.node_id, b.now_ms, b.lease_ms).await?),
                    Entry::Gone => Some(DispatchDecision::Gone),
                },
            };
            b.order.push((id.to_string(), decision));
        }
        // The job rows' locks serialise dispatch decisions of one job across nodes.
        let job_ids = sorted(&distinct(b.todo.iter().map(|id| b.runs[id].job_id.as_str())));
        b.jobs = self.lock_jobs(tx, &job_ids).await?;
        // Runs in flight per job, for the block strategy and concurrency limit of fresh fires.
        let fresh = |r: &Run| matches!(r.state, RunState::Pending | RunState::Queued);
        let fresh_jobs = distinct(b.todo.iter().filter(|id| fresh(&b.runs[*id])).map(|id| b.runs[id].job_id.as_str()));
        let inflight_sql = format!(
            "SELECT * FROM runs{} WHERE open_job_id IN ({}) AND state IN ({})",
            self.hint(Ix::RunsOpen),
            IDS,
            sql_states(&[RunState::Dispatching, RunState::Running, RunState::Retrying])
        );
        for row in fetch_in(tx, &inflight_sql, &fresh_jobs).await? {
            let r = run_row(&row)?;
            b.inflight.entry(r.job_id.clone()).or_default().push(r);
        }
        Ok(())
    }

    /// An unwritten fire whose job is gone, stopped or changed so that it no longer fires
    /// then (`dispatch::fire_stands`), or whose fire key has a row already (another node's, or
    /// written while this one waited for the job's lock), is `Gone` and writes nothing. Read
    /// after the job locks: a dispatch elsewhere that wrote the same fire held the same lock.
    /// The fire key is checked ahead only for `cover_early` jobs, the one decision that writes
    /// to other runs (it cancels the job's runs in flight): for the others a fire that has a
    /// row already is found by the insert ([`Self::write_dispatched`]), which ignores it, and
    /// nothing else of it is written.
    async fn drop_fires_that_do_not_stand(&self, tx: &mut Tx, b: &mut Batch<'_>) -> Result<()> {
        let covering = b
            .unwritten
            .values()
            .copied()
            .filter(|r| b.jobs.get(&r.job_id).is_some_and(|j| j.block == BlockStrategy::CoverEarly));
        let taken = self.fires_with_rows(tx, covering).await?;
        for (id, run) in &b.unwritten {
            if !dispatch::fire_stands(b.jobs.get(&run.job_id).map(Arc::as_ref), run)
                || taken.contains(&(run.job_id.clone(), run.fire_key.clone()))
            {
                b.settled.insert(id.to_string(), DispatchDecision::Gone);
            }
        }
        Ok(())
    }

    /// Decide each run against its job and execute the plan, in batch order: a run sent
    /// earlier in the batch is in flight for its job's later runs.
    async fn decide_batch(&self, tx: &mut Tx, b: &mut Batch<'_>) -> Result<()> {
        // How many runs of each job are still to decide: a dispatched run is kept as in
        // flight for the job's later runs in the batch only when there are some.
        let mut later: HashMap<String, usize> = HashMap::new();
        for id in &b.todo {
            if b.jobs.contains_key(&b.runs[id].job_id) {
                *later.entry(b.runs[id].job_id.clone()).or_default() += 1;
            }
        }
        for id in std::mem::take(&mut b.todo) {
            if b.settled.contains_key(&id) {
                continue;
            }
            if b.unwritten.contains_key(id.as_str()) {
                b.to_write.push(id.clone());
            }
            let job = b.jobs.get(&b.runs[&id].job_id).cloned();
            let more_of_job = job.as_ref().is_some_and(|job| {
                later.get_mut(&job.id).is_some_and(|n| {
                    *n -= 1;
                    *n > 0
                })
            });
            let run = &b.runs[&id];
            let overlap_busy = match &job {
                Some(job) if dispatch::needs_overlap_check(run, job) => {
                    self.still_running_elsewhere(tx, run, b.now_ms).await?
                }
                _ => false,
            };
            let in_flight = job.as_ref().and_then(|j| b.inflight.get(&j.id)).map(Vec::as_slice).unwrap_or(&[]);
            let plan = dispatch::decide(run, job.as_deref(), in_flight, overlap_busy, b.now_ms, b.lease_ms);
            self.execute_plan(tx, b, &id, job, plan, more_of_job).await?;
        }
        Ok(())
    }

    /// Carry out one run's plan: cancel, hold, skip, or move it to `dispatching` (in memory;
    /// [`Self::write_dispatched`] writes the batch's dispatches), covering first what
    /// `cover_early` replaces.
    async fn execute_plan(
        &self,
        tx: &mut Tx,
        b: &mut Batch<'_>,
        id: &str,
        job: Option<Arc<Job>>,
        plan: Plan,
        more_of_job: bool,
    ) -> Result<()> {
        let (now_ms, fresh_fire) = (b.now_ms, b.unwritten.contains_key(id));
        let (deadline_ms, lease_until_ms, cover) = match plan {
            Plan::JobDeleted => {
                set_terminal(tx, &b.runs[id], RunEvent::Cancel, "the job was deleted", now_ms).await?;
                b.settled.insert(id.to_string(), DispatchDecision::Gone);
                return Ok(());
            }
            Plan::Hold { lease_until_ms, until_ms } => {
                // Waits claimed by this node (in `queued`, claimed now if it was `pending`).
                let r = b.runs.get_mut(id).expect("in the batch");
                hold_fire(tx, r, fresh_fire, b.node_id, now_ms, lease_until_ms).await?;
                b.settled.insert(id.to_string(), DispatchDecision::Blocked { until_ms });
                return Ok(());
            }
            Plan::Skip(reason) => return self.skip(tx, b, id, reason).await,
            Plan::Dispatch { deadline_ms, lease_until_ms, cover } => (deadline_ms, lease_until_ms, cover),
        };
        let job = job.expect("a dispatch plan has its job");
        if !cover.is_empty() {
            // `cover_early`: the runs in flight this fire replaces are cancelled first.
            let mut covered = Vec::new();
            let (replaced, kept): (Vec<Run>, Vec<Run>) =
                b.inflight.remove(&job.id).unwrap_or_default().into_iter().partition(|r| cover.contains(&r.id));
            // Runs in flight not covered (below the limit) stay in flight for the batch's later fires.
            let mut left = kept.len();
            b.inflight.insert(job.id.clone(), kept);
            for r in replaced {
                if set_terminal(tx, &r, RunEvent::Cancel, "cover_early: replaced by a newer run", now_ms).await? {
                    if r.chain_id.is_some() {
                        // A chain step replaced: fan-ins waiting for it are released.
                        let mut ended = r.clone();
                        ended.state = RunState::Cancelled;
                        chains::run_ended(tx, self.dialect, &ended, None, now_ms).await?;
                    }
                    covered.push(r);
                } else {
                    // Ended or moved since it was read: counted as still in flight.
                    left += 1;
                    b.inflight.entry(job.id.clone()).or_default().push(r);
                }
            }
            b.covered_by.insert(id.to_string(), covered);
            if !dispatch::within_concurrency(job.max_concurrency, left) {
                return self.skip(tx, b, id, SkipReason::MaxConcurrency).await;
            }
        }
        let r = b.runs.get_mut(id).expect("in the batch");
        let from = match r.state {
            // Claimed and dispatched in one step.
            RunState::Pending => transition(r.state, &RunEvent::Claim).map_err(refused)?.to,
            s => s,
        };
        r.state = transition(from, &RunEvent::Dispatch).map_err(refused)?.to;
        r.attempt += 1;
        r.owner_node = Some(b.node_id.to_string());
        r.lease_until_ms = Some(lease_until_ms);
        r.deadline_ms = Some(deadline_ms);
        r.next_attempt_at_ms = None;
        r.started_at_ms = r.started_at_ms.or(Some(now_ms));
        r.job_version = job.version;
        r.updated_at_ms = now_ms;
        // Later fresh fires of this job in the batch see this one in flight.
        if more_of_job {
            let r = r.clone();
            b.inflight.entry(job.id.clone()).or_default().push(r);
        }
        b.dispatched.push(id.to_string());
        Ok(())
    }

    /// A fire its job's block strategy or concurrency limit refuses: `skipped`.
    async fn skip(&self, tx: &mut Tx, b: &mut Batch<'_>, id: &str, reason: SkipReason) -> Result<()> {
        let fresh_fire = b.unwritten.contains_key(id);
        let r = b.runs.get_mut(id).expect("in the batch");
        skip_fire(tx, self.dialect, r, fresh_fire, reason.message(), b.now_ms).await?;
        b.settled.insert(id.to_string(), DispatchDecision::Skipped { reason: reason.code() });
        Ok(())
    }

    /// Write what the batch decided: the fires that had no row (one multi-row insert, each in
    /// the state decided), the dispatched rows (one conditional update per chunk of runs whose
    /// jobs share timeout and version), and a sharded run's attempt row.
    async fn write_dispatched(&self, tx: &mut Tx, b: &mut Batch<'_>) -> Result<()> {
        let (node_id, now_ms, lease_ms) = (b.node_id, b.now_ms, b.lease_ms);
        // The fire-key check ran under the job locks; a row that appeared since anyway (a
        // generator's insert of the same fire, not yet committed then) makes the insert
        // ignore ours: such a fire is `Gone` here (the other row fires it), nothing else of
        // it written.
        if !b.to_write.is_empty() {
            let rows: Vec<&Run> = b.to_write.iter().map(|id| &b.runs[id]).collect();
            let inserted = insert_runs(tx, self.dialect, &rows).await?;
            if inserted != rows.len() {
                let present = self.ids_present(tx, &b.to_write).await?;
                for id in b.to_write.iter().filter(|id| !present.contains(*id)) {
                    b.settled.insert(id.clone(), DispatchDecision::Gone);
                    b.covered_by.remove(id);
                }
                let unwritten = &b.unwritten;
                b.dispatched.retain(|id| present.contains(id) || !unwritten.contains_key(id.as_str()));
            }
        }
        let update_sql = format!(
            "UPDATE runs{} SET state = ?, attempt = attempt + 1, owner_node = ?, deadline_ms = ?, \
             lease_until_ms = ?, next_attempt_at_ms = NULL, started_at_ms = COALESCE(started_at_ms, ?), \
             job_version = ?, updated_at_ms = ? WHERE id IN ({}) \
             AND (state = {} OR (state IN ({}) AND owner_node = ?)) AND attempt = ?",
            self.hint(Ix::Primary),
            IDS,
            sql_state(RunState::Pending),
            sql_states(&[RunState::Queued, RunState::Retrying])
        );
        // The new state is `transition`'s (computed per run in `execute_plan`), and the write
        // is conditional on the attempt each run had when it was read (the runs here carry it
        // already incremented).
        let (runs, jobs) = (&b.runs, &b.jobs);
        let key = |id: &String| {
            let run = &runs[id];
            let job = &jobs[&run.job_id];
            (job.timeout_ms, job.version, run.state, run.attempt - 1)
        };
        let rewritten: Vec<String> =
            b.dispatched.iter().filter(|id| !b.unwritten.contains_key(id.as_str())).cloned().collect();
        for group in groups(&rewritten, key) {
            let (timeout_ms, version, to, attempt_read) = key(group[0]);
            for chunk in group.chunks(IN_CHUNK) {
                let mut q = sqlx::query(sqlx::AssertSqlSafe(in_list(&update_sql, chunk.len())))
                    .bind(to.as_str())
                    .bind(node_id)
                    .bind(dispatch::deadline_ms(now_ms, timeout_ms))
                    .bind(dispatch::lease_until_ms(now_ms, timeout_ms, lease_ms))
                    .bind(now_ms)
                    .bind(version)
                    .bind(now_ms);
                for i in 0..in_width(chunk.len()) {
                    q = q.bind(chunk[i.min(chunk.len() - 1)]);
                }
                let n = q.bind(node_id).bind(attempt_read).execute(&mut **tx).await?.rows_affected();
                if n != chunk.len() as u64 {
                    // Cannot happen under the row locks; refuse the whole batch rather than guess.
                    return Err(StoreError::Stale("a run of the dispatch batch"));
                }
            }
        }
        // An attempt's row is written once, with its outcome (`write_attempts`), or when the
        // executor accepts it for later (`attempt_set_target`): its webhook-id follows from the
        // run and the attempt, its start is the run's `updated_at_ms` as dispatched here. A
        // sharded run's is written now, beside its shards' attempts.
        let sharded: Vec<&String> = b
            .dispatched
            .iter()
            .filter(|id| {
                let r = &runs[*id];
                r.shard_total.is_some() || jobs[&r.job_id].route == Route::Sharding
            })
            .collect();
        let row = format!("(?, 0, ?, ?, {}, '[]', ?)", sql_state(RunState::Dispatching));
        let mut rest = sharded.as_slice();
        for size in pow2_chunks(sharded.len()) {
            let (chunk, tail) = rest.split_at(size);
            rest = tail;
            let sql = format!(
                "INSERT INTO attempts (run_id, shard_index, attempt, webhook_id, state, trail, started_at_ms) VALUES {}",
                vec![row.as_str(); size].join(", ")
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for id in chunk {
                let r = &runs[*id];
                q = q.bind(&r.id).bind(r.attempt).bind(webhook_id(r)).bind(now_ms);
            }
            q.execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// Every run's decision, in the batch's order, with the apps and executors the deliveries
    /// need (read on this connection, no extra round trips through the pool; routing is
    /// judged on them after the commit).
    async fn dispatch_outcome(&self, tx: &mut Tx, mut b: Batch<'_>) -> Result<Vec<(String, DispatchDecision)>> {
        let mut out: Vec<(String, DispatchDecision)> = std::mem::take(&mut b.order)
            .into_iter()
            .map(|(id, d)| {
                let d = d.unwrap_or_else(|| {
                    if let Some(d) = b.settled.remove(&id) {
                        return d;
                    }
                    let run = b.runs.remove(&id).expect("dispatched");
                    let job = Arc::clone(&b.jobs[&run.job_id]);
                    DispatchDecision::Dispatch {
                        webhook_id: webhook_id(&run),
                        covered: b.covered_by.remove(&id).unwrap_or_default(),
                        run,
                        job,
                        routing: None,
                    }
                });
                (id, d)
            })
            .collect();
        let app_ids = distinct(out.iter().filter_map(|(_, d)| match d {
            DispatchDecision::Dispatch { job, .. } => Some(job.app_id.as_str()),
            _ => None,
        }));
        let routing = self.app_routing(tx, &app_ids).await?;
        for (_, d) in &mut out {
            if let DispatchDecision::Dispatch { job, routing: r, .. } = d {
                *r = routing.get(&job.app_id).cloned();
            }
        }
        Ok(out)
    }

    /// Which of these fires (job, fire key) have a row already?
    async fn fires_with_rows<'a>(
        &self,
        tx: &mut Transaction<'static, Any>,
        fires: impl Iterator<Item = &'a Run>,
    ) -> Result<HashSet<(String, String)>> {
        let fires: Vec<&Run> = fires.collect();
        let mut out = HashSet::new();
        for chunk in fires.chunks(IN_CHUNK) {
            // Equalities on `uq_runs_fire`'s two columns, OR-ed: one index dive each.
            let sql = format!(
                "SELECT job_id, fire_key FROM runs WHERE {}",
                vec!["(job_id = ? AND fire_key = ?)"; chunk.len()].join(" OR ")
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for r in chunk {
                q = q.bind(&r.job_id).bind(&r.fire_key);
            }
            for row in q.fetch_all(&mut **tx).await? {
                out.insert((col(&row, "job_id")?, col(&row, "fire_key")?));
            }
        }
        Ok(out)
    }

    /// Which of these run ids have a row?
    async fn ids_present(&self, tx: &mut Transaction<'static, Any>, ids: &[String]) -> Result<HashSet<String>> {
        let sql = format!("SELECT id FROM runs{} WHERE id IN ({})", self.hint(Ix::Primary), IDS);
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        fetch_in(tx, &sql, &refs).await?.iter().map(|r| col(r, "id")).collect()
    }

    /// Does the executor of the run's timed-out attempt, online by its heartbeat, still
    /// list the run among those it is running?
    async fn still_running_elsewhere(
        &self,
        tx: &mut Transaction<'static, Any>,
        run: &Run,
        now_ms: i64,
    ) -> Result<bool> {
        let row = sqlx::query(
            "SELECT e.running_runs FROM attempts a JOIN executors e ON e.id = a.executor_id \
             WHERE a.run_id = ? AND a.shard_index = 0 AND a.attempt = ? AND a.reason = 'timeout' \
             AND e.state = 'online' AND e.last_heartbeat_ms >= ?",
        )
        .bind(&run.id)
        .bind(run.attempt)
        .bind(now_ms - sundial_core::route::EXECUTOR_OFFLINE_MS)
        .fetch_optional(&mut **tx)
        .await?;
        let Some(row) = row else { return Ok(false) };
        let listed: Option<Vec<String>> = json_opt(&row, "running_runs")?
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("executors.running_runs: {e}")))?;
        Ok(listed.is_some_and(|ids| ids.contains(&run.id)))
    }

    /// See [`RunStore::run_extend_dispatch`](crate::RunStore::run_extend_dispatch).
    pub(super) async fn extend_dispatch(&self, run_ids: &[String], node_id: &str, by_ms: i64) -> Result<u64> {
        let sql = format!(
            "UPDATE runs{} SET deadline_ms = deadline_ms + ?, lease_until_ms = lease_until_ms + ? \
             WHERE id IN ({}) AND state = {} AND owner_node = ?",
            self.hint(Ix::Primary),
            IDS,
            sql_state(RunState::Dispatching)
        );
        let mut n = 0;
        for chunk in run_ids.chunks(IN_CHUNK) {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(in_list(&sql, chunk.len()))).bind(by_ms).bind(by_ms);
            for i in 0..in_width(chunk.len()) {
                q = q.bind(&chunk[i.min(chunk.len() - 1)]);
            }
            n += q.bind(node_id).execute(&self.pool).await?.rows_affected();
        }
        Ok(n)
    }

    /// Apps and their executors (in registration order) by app id.
    async fn app_routing(
        &self,
        tx: &mut Transaction<'static, Any>,
        app_ids: &[&str],
    ) -> Result<HashMap<String, Arc<AppRouting>>> {
        let apps_sql = format!(
            "SELECT id, tenant_id, name, description, endpoints, secret, previous_secret, previous_expires_ms, created_at_ms, \
             updated_at_ms FROM apps WHERE id IN ({})",
            IDS
        );
        let mut out: HashMap<String, AppRouting> = HashMap::new();
        for row in fetch_in(tx, &apps_sql, app_ids).await? {
            match self.app_row(&row) {
                Ok(app) => {
                    out.insert(app.id.clone(), AppRouting { app, executors: Vec::new() });
                }
                // An app whose secret this node cannot open (a key missing from its ring) fails
                // its own deliveries (no app: no executor), not the batch's other apps'.
                Err(e @ StoreError::Secret(_)) => tracing::error!(error = %e, "cannot sign deliveries for this app"),
                Err(e) => return Err(e),
            }
        }
        let exec_sql = format!("SELECT * FROM executors WHERE app_id IN ({}) ORDER BY registered_at_ms, id", IDS);
        for row in fetch_in(tx, &exec_sql, app_ids).await? {
            let e = executor_row(&row)?;
            if let Some(r) = out.get_mut(&e.app_id) {
                r.executors.push(e);
            }
        }
        Ok(out.into_iter().map(|(k, v)| (k, Arc::new(v))).collect())
    }

    /// A `dispatching` run recovered from a node that lost it: the same attempt, the same
    /// webhook-id, a fresh deadline and lease. Inside the caller's transaction.
    async fn redeliver(
        &self,
        tx: &mut Transaction<'static, Any>,
        mut run: Run,
        node_id: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<DispatchDecision> {
        transition(run.state, &RunEvent::Redeliver).map_err(refused)?;
        let job = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {JOB_COLS} FROM jobs WHERE id = ?")))
            .bind(&run.job_id)
            .fetch_optional(&mut **tx)
            .await?
            .as_ref()
            .map(job_row)
            .transpose()?;
        let Some(job) = job else {
            set_terminal(tx, &run, RunEvent::Cancel, "the job was deleted", now_ms).await?;
            return Ok(DispatchDecision::Gone);
        };
        let stored: Option<String> =
            sqlx::query("SELECT webhook_id FROM attempts WHERE run_id = ? AND shard_index = 0 AND attempt = ?")
                .bind(&run.id)
                .bind(run.attempt)
                .fetch_optional(&mut **tx)
                .await?
                .as_ref()
                .map(|r| col(r, "webhook_id"))
                .transpose()?;
        let webhook_id = stored.unwrap_or_else(|| webhook_id(&run));
        let lease = dispatch::lease_until_ms(now_ms, job.timeout_ms, lease_ms);
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE runs SET lease_until_ms = ?, deadline_ms = ?, updated_at_ms = ? WHERE id = ? AND state = {} AND owner_node = ?",
            sql_state(RunState::Dispatching)
        )))
        .bind(lease)
        .bind(dispatch::deadline_ms(now_ms, job.timeout_ms))
        .bind(now_ms)
        .bind(&run.id)
        .bind(node_id)
        .execute(&mut **tx)
        .await?;
        run.lease_until_ms = Some(lease);
        // The redelivery gets the job's full timeout, measured from now.
        run.deadline_ms = Some(dispatch::deadline_ms(now_ms, job.timeout_ms));
        run.updated_at_ms = now_ms;
        Ok(DispatchDecision::Dispatch { run, job: Arc::new(job), webhook_id, covered: Vec::new(), routing: None })
    }
}

/// A fire its job's block strategy or concurrency limit refuses: `skipped`. A row is moved
/// there; an unwritten fire (`unwritten`) is changed in memory, to be written so.
async fn skip_fire(
    tx: &mut Transaction<'static, Any>,
    dialect: Dialect,
    run: &mut Run,
    unwritten: bool,
    message: &str,
    now_ms: i64,
) -> Result<()> {
    if !unwritten {
        if set_terminal(tx, run, RunEvent::Skip, message, now_ms).await? && run.chain_id.is_some() {
            // A chain step that will not run: fan-ins waiting for it are released.
            let mut ended = run.clone();
            ended.state = transition(run.state, &RunEvent::Skip).map_err(refused)?.to;
            chains::run_ended(tx, dialect, &ended, None, now_ms).await?;
        }
        return Ok(());
    }
    run.state = transition(run.state, &RunEvent::Skip).map_err(refused)?.to;
    run.message = Some(message.to_string());
    run.finished_at_ms = Some(now_ms);
    run.updated_at_ms = now_ms;
    Ok(())
}

/// A fire that must wait (`Blocked`) stays claimed by this node until `lease_until_ms`: a
/// row through [`hold_claim`]; an unwritten fire is claimed in memory, to be written `queued`.
async fn hold_fire(
    tx: &mut Transaction<'static, Any>,
    run: &mut Run,
    unwritten: bool,
    node_id: &str,
    now_ms: i64,
    lease_until_ms: i64,
) -> Result<()> {
    if !unwritten {
        return hold_claim(tx, run, node_id, now_ms, lease_until_ms).await;
    }
    run.state = transition(run.state, &RunEvent::Claim).map_err(refused)?.to;
    run.owner_node = Some(node_id.to_string());
    run.lease_until_ms = Some(lease_until_ms);
    run.updated_at_ms = now_ms;
    Ok(())
}

/// A run that must wait (`Blocked`) stays claimed: renew its lease, if still ours in the state read.
/// Keep a blocked run claimed by this node until `lease_until_ms`: renew the claim, or
/// claim it (`pending` → `queued`) if it came from the peek.
async fn hold_claim(
    tx: &mut Transaction<'static, Any>,
    run: &Run,
    node_id: &str,
    now_ms: i64,
    lease_until_ms: i64,
) -> Result<()> {
    if run.state == RunState::Pending {
        let to = transition(run.state, &RunEvent::Claim).map_err(refused)?.to;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE runs SET state = ?, owner_node = ?, lease_until_ms = ?, updated_at_ms = ? WHERE id = ? AND state = {}",
            sql_state(RunState::Pending)
        )))
        .bind(to.as_str())
        .bind(node_id)
        .bind(lease_until_ms)
        .bind(now_ms)
        .bind(&run.id)
        .execute(&mut **tx)
        .await?;
        return Ok(());
    }
    sqlx::query("UPDATE runs SET lease_until_ms = ? WHERE id = ? AND owner_node = ? AND state = ?")
        .bind(lease_until_ms)
        .bind(&run.id)
        .bind(node_id)
        .bind(run.state.as_str())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

fn webhook_id(run: &Run) -> String {
    webhook_id_of(&run.id, run.attempt)
}
