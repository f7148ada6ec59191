//! The hot path in batches: many claimed runs' dispatch decisions, many attempts'
//! results, many jobs' generated runs — each batch one transaction and one durable
//! commit (group commit), with the same per-run rules as one run alone.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;
use sqlx::{Any, Transaction};
use sundial_core::dispatch::{self, Entry, Plan};
use sundial_core::run_state::{RunEvent, transition};
use sundial_core::types::{BlockStrategy, Route, RunState};

use crate::sql::chains;
use crate::sql::rows::{JOB_COLS, executor_row, job_row, run_row};
use crate::sql::writes::{insert_runs, set_terminal, webhook_id_of};
use crate::sql::{
    IDS, IN_CHUNK, Ix, SqlStore, col, distinct, fetch_in, in_list, in_width, json_opt, placeholders, pow2_chunks,
    refused, sorted, sql_state, sql_states, to_json,
};
use crate::{
    AppRouting, AttemptResult, Dialect, DispatchDecision, FinishAttempt, FinishOutcome, GenerateJob, Job, Result, Run,
    StoreError, ToDispatch,
};

impl SqlStore {
    /// Lock and read runs by id (MySQL `FOR UPDATE`; SQLite holds the write lock already).
    async fn lock_runs(&self, tx: &mut Transaction<'static, Any>, ids: &[&str]) -> Result<HashMap<String, Run>> {
        let sql = format!("SELECT * FROM runs{} WHERE id IN ({}){}", self.hint(Ix::Primary), IDS, self.lock_clause());
        let mut out = HashMap::new();
        for row in fetch_in(tx, &sql, ids).await? {
            let run = run_row(&row)?;
            out.insert(run.id.clone(), run);
        }
        Ok(out)
    }

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

    /// The dispatch transaction for a batch of claimed runs: see [`RunStore::run_dispatch_many`](crate::RunStore::run_dispatch_many).
    pub(super) async fn dispatch_many(
        &self,
        to_dispatch: &[ToDispatch],
        node_id: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Vec<(String, DispatchDecision)>> {
        let ids = distinct(to_dispatch.iter().map(|t| t.run_id.as_str()));
        let redeliver: HashSet<&str> = to_dispatch.iter().filter(|t| t.redeliver).map(|t| t.run_id.as_str()).collect();
        // Fires with no row yet: decided like `pending` rows, and written in the state decided.
        let mut unwritten: HashMap<&str, &Run> = HashMap::new();
        for t in to_dispatch {
            if let Some(r) = &t.unwritten {
                debug_assert_eq!(r.state, RunState::Pending);
                unwritten.entry(t.run_id.as_str()).or_insert(r);
            }
        }
        let mut tx = self.begin().await?;
        // Locks are taken in id order everywhere (runs, then jobs): two transactions over
        // overlapping rows then wait for each other instead of deadlocking.
        let written_ids: Vec<&str> = ids.iter().copied().filter(|id| !unwritten.contains_key(*id)).collect();
        let mut runs = self.lock_runs(&mut tx, &sorted(&written_ids)).await?;
        let mut decisions: Vec<(String, Option<DispatchDecision>)> = Vec::with_capacity(ids.len());
        let mut todo: Vec<String> = Vec::new();
        for id in &ids {
            if let Some(r) = unwritten.get(*id) {
                runs.insert(id.to_string(), (*r).clone());
                todo.push(id.to_string());
                decisions.push((id.to_string(), None));
                continue;
            }
            let decision = match runs.get(*id) {
                None => Some(DispatchDecision::Gone),
                Some(run) => match dispatch::entry(run, node_id, now_ms, redeliver.contains(id)) {
                    Entry::Decide => {
                        todo.push(id.to_string());
                        None
                    }
                    Entry::Redeliver => Some(self.redeliver(&mut tx, run.clone(), node_id, now_ms, lease_ms).await?),
                    Entry::Gone => Some(DispatchDecision::Gone),
                },
            };
            decisions.push((id.to_string(), decision));
        }
        // The job rows' locks serialise dispatch decisions of one job across nodes.
        let job_ids = sorted(&distinct(todo.iter().map(|id| runs[id].job_id.as_str())));
        let jobs = self.lock_jobs(&mut tx, &job_ids).await?;
        // Runs in flight per job, for the block strategy and max concurrency of queued runs.
        let fresh = |r: &Run| matches!(r.state, RunState::Pending | RunState::Queued);
        let queued_jobs = distinct(todo.iter().filter(|id| fresh(&runs[*id])).map(|id| runs[id].job_id.as_str()));
        let inflight_sql = format!(
            "SELECT * FROM runs{} WHERE open_job_id IN ({}) AND state IN ({})",
            self.hint(Ix::RunsOpen),
            IDS,
            sql_states(&[RunState::Dispatching, RunState::Running, RunState::Retrying])
        );
        let mut inflight: HashMap<String, Vec<Run>> = HashMap::new();
        for row in fetch_in(&mut tx, &inflight_sql, &queued_jobs).await? {
            let r = run_row(&row)?;
            inflight.entry(r.job_id.clone()).or_default().push(r);
        }
        let mut dispatched: Vec<String> = Vec::new();
        let mut skipped: HashMap<String, DispatchDecision> = HashMap::new();
        let mut covered_by: HashMap<String, Vec<Run>> = HashMap::new();
        // An unwritten fire whose job is gone, stopped or changed so that it no longer fires
        // then, or whose fire key has a row already (another node's, or written while this
        // one waited for the job's lock), is `Gone` and writes nothing. Read after the job
        // locks: a dispatch elsewhere that wrote the same fire held the same lock.
        // Checked ahead only for `cover_early` jobs, the one decision that writes to other runs
        // (it cancels the job's runs in flight): for the others a fire that has a row already is
        // found by the insert below, which ignores it, and nothing else of it is written.
        let covering = unwritten
            .values()
            .copied()
            .filter(|r| jobs.get(&r.job_id).is_some_and(|j| j.block == BlockStrategy::CoverEarly));
        let taken = self.fires_with_rows(&mut tx, covering).await?;
        for (id, run) in &unwritten {
            if !dispatch::fire_stands(jobs.get(&run.job_id).map(Arc::as_ref), run)
                || taken.contains(&(run.job_id.clone(), run.fire_key.clone()))
            {
                skipped.insert(id.to_string(), DispatchDecision::Gone);
            }
        }
        // How many runs of each job the loop below has still to decide: a dispatched run is
        // kept as in flight for the job's later runs in the batch only when there are some.
        let mut later: HashMap<&str, usize> = HashMap::new();
        for id in &todo {
            if let Some((job_id, _)) = jobs.get_key_value(runs[id].job_id.as_str()) {
                *later.entry(job_id.as_str()).or_default() += 1;
            }
        }
        let mut to_write: Vec<String> = Vec::new();
        for id in &todo {
            if skipped.contains_key(id) {
                continue;
            }
            let state = runs[id].state;
            let fresh_fire = unwritten.contains_key(id.as_str());
            if fresh_fire {
                to_write.push(id.clone());
            }
            let job = jobs.get(&runs[id].job_id);
            let more_of_job = job.is_some_and(|job| {
                later.get_mut(job.id.as_str()).is_some_and(|n| {
                    *n -= 1;
                    *n > 0
                })
            });
            let overlap_busy = match job {
                Some(job) if dispatch::needs_overlap_check(&runs[id], job) => {
                    self.still_running_elsewhere(&mut tx, &runs[id], now_ms).await?
                }
                _ => false,
            };
            let no_runs = Vec::new();
            let job_in_flight = job.and_then(|j| inflight.get(&j.id)).unwrap_or(&no_runs);
            let plan = dispatch::decide(&runs[id], job.map(Arc::as_ref), job_in_flight, overlap_busy, now_ms, lease_ms);
            let (deadline_ms, lease_until_ms, cover) = match plan {
                Plan::JobDeleted => {
                    set_terminal(&mut tx, &runs[id], RunEvent::Cancel, "the job was deleted", now_ms).await?;
                    skipped.insert(id.clone(), DispatchDecision::Gone);
                    continue;
                }
                Plan::Hold { lease_until_ms, until_ms } => {
                    // Waits claimed by this node (in `queued`, claimed now if it was `pending`).
                    let r = runs.get_mut(id).expect("in the batch");
                    hold_fire(&mut tx, r, fresh_fire, node_id, now_ms, lease_until_ms).await?;
                    skipped.insert(id.clone(), DispatchDecision::Blocked { until_ms });
                    continue;
                }
                Plan::Skip(reason) => {
                    let r = runs.get_mut(id).expect("in the batch");
                    skip_fire(&mut tx, self.dialect, r, fresh_fire, reason.message(), now_ms).await?;
                    skipped.insert(id.clone(), DispatchDecision::Skipped { reason: reason.code() });
                    continue;
                }
                Plan::Dispatch { deadline_ms, lease_until_ms, cover } => (deadline_ms, lease_until_ms, cover),
            };
            let job = job.expect("a dispatch plan has its job");
            if !cover.is_empty() {
                // `cover_early`: the runs in flight this fire replaces are cancelled first.
                let list = inflight.remove(&job.id).unwrap_or_default();
                let mut covered = Vec::new();
                let mut left = 0;
                for r in list.into_iter().filter(|r| cover.contains(&r.id)) {
                    if set_terminal(&mut tx, &r, RunEvent::Cancel, "cover_early: replaced by a newer run", now_ms)
                        .await?
                    {
                        if r.chain_id.is_some() {
                            // A chain step replaced: fan-ins waiting for it are released.
                            let mut ended = r.clone();
                            ended.state = RunState::Cancelled;
                            chains::run_ended(&mut tx, self.dialect, &ended, None, now_ms).await?;
                        }
                        covered.push(r);
                    } else {
                        left += 1;
                    }
                }
                covered_by.insert(id.clone(), covered);
                if !dispatch::within_concurrency(job.max_concurrency, left) {
                    let reason = dispatch::SkipReason::MaxConcurrency;
                    let r = runs.get_mut(id).expect("in the batch");
                    skip_fire(&mut tx, self.dialect, r, fresh_fire, reason.message(), now_ms).await?;
                    skipped.insert(id.clone(), DispatchDecision::Skipped { reason: reason.code() });
                    continue;
                }
            }
            let from = match state {
                // Claimed and dispatched in one step.
                RunState::Pending => transition(state, &RunEvent::Claim).map_err(refused)?.to,
                s => s,
            };
            let t = transition(from, &RunEvent::Dispatch).map_err(refused)?;
            let r = runs.get_mut(id).expect("locked above");
            r.state = t.to;
            r.attempt += 1;
            r.owner_node = Some(node_id.to_string());
            r.lease_until_ms = Some(lease_until_ms);
            r.deadline_ms = Some(deadline_ms);
            r.next_attempt_at_ms = None;
            r.started_at_ms = r.started_at_ms.or(Some(now_ms));
            r.job_version = job.version;
            r.updated_at_ms = now_ms;
            // Later queued runs of this job in the batch see this one in flight.
            if more_of_job {
                inflight.entry(job.id.clone()).or_default().push(r.clone());
            }
            dispatched.push(id.clone());
        }
        // The fires that had no row: one multi-row insert, each in the state decided above.
        // The fire-key check above ran under the job locks; a row that appeared since anyway
        // (a generator's insert of the same fire, not yet committed then) makes the insert
        // ignore ours: such a fire is `Gone` here (the other row fires it), nothing else of
        // it written.
        if !to_write.is_empty() {
            let rows: Vec<&Run> = to_write.iter().map(|id| &runs[id]).collect();
            let inserted = insert_runs(&mut tx, self.dialect, &rows).await?;
            if inserted != rows.len() {
                let present = self.ids_present(&mut tx, &to_write).await?;
                for id in to_write.iter().filter(|id| !present.contains(*id)) {
                    skipped.insert(id.clone(), DispatchDecision::Gone);
                    covered_by.remove(id);
                }
                dispatched.retain(|id| present.contains(id) || !unwritten.contains_key(id.as_str()));
            }
        }
        // One statement per chunk of runs whose jobs share timeout and version moves the
        // dispatched runs; the locks taken above make the reads and these writes one decision.
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
        // The new state is `transition`'s (computed per run above), and the write is
        // conditional on the attempt each run had when it was read (the runs above carry it
        // already incremented).
        let key = |id: &String| {
            let run = &runs[id];
            let job = &jobs[&run.job_id];
            (job.timeout_ms, job.version, run.state, run.attempt - 1)
        };
        let rewritten: Vec<String> =
            dispatched.iter().filter(|id| !unwritten.contains_key(id.as_str())).cloned().collect();
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
                let n = q.bind(node_id).bind(attempt_read).execute(&mut *tx).await?.rows_affected();
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
        let sharded: Vec<&String> = dispatched
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
            q.execute(&mut *tx).await?;
        }
        let mut out: Vec<(String, DispatchDecision)> = decisions
            .into_iter()
            .map(|(id, d)| {
                let d = d.unwrap_or_else(|| {
                    if let Some(d) = skipped.remove(&id) {
                        return d;
                    }
                    let run = runs.remove(&id).expect("dispatched");
                    let job = Arc::clone(&jobs[&run.job_id]);
                    DispatchDecision::Dispatch {
                        webhook_id: webhook_id(&run),
                        covered: covered_by.remove(&id).unwrap_or_default(),
                        run,
                        job,
                        routing: None,
                    }
                });
                (id, d)
            })
            .collect();
        // The apps and executors the deliveries need, read on this connection (no extra round
        // trips through the pool); routing is judged on them after the commit.
        let app_ids = distinct(out.iter().filter_map(|(_, d)| match d {
            DispatchDecision::Dispatch { job, .. } => Some(job.app_id.as_str()),
            _ => None,
        }));
        let routing = self.app_routing(&mut tx, &app_ids).await?;
        for (_, d) in &mut out {
            if let DispatchDecision::Dispatch { job, routing: r, .. } = d {
                *r = routing.get(&job.app_id).cloned();
            }
        }
        tx.commit().await?;
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

    /// Record a batch of attempt results in one transaction: see [`RunStore::run_finish_many`](crate::RunStore::run_finish_many).
    pub(super) async fn finish_many(&self, ps: &[FinishAttempt]) -> Result<Vec<FinishOutcome>> {
        if let Some(out) = self.finish_as_dispatched(ps).await? {
            return Ok(out);
        }
        let ids = distinct(ps.iter().map(|p| p.run_id.as_str()));
        // Every result of the batch is recorded as written at the latest arrival among them
        // (a few milliseconds at most after its own): results that differ only in their
        // arrival time then share one `UPDATE` per table, where each was one statement.
        let at = ps.iter().map(|p| p.now_ms).max().unwrap_or_default();
        let mut tx = self.begin().await?;
        let mut runs = self.lock_runs(&mut tx, &sorted(&ids)).await?;
        // Results applied earlier in this batch, for the duplicate check: (run, attempt) → (status, output).
        let mut applied: HashMap<(String, i64), (&'static str, Option<Value>)> = HashMap::new();
        let mut outcomes = Vec::with_capacity(ps.len());
        let mut run_writes: Vec<RunWrite> = Vec::new();
        let mut attempt_writes: Vec<AttemptWrite> = Vec::new();
        let mut ended: Vec<usize> = Vec::new();
        for p in ps {
            let Some(run) = runs.get_mut(&p.run_id) else {
                outcomes.push(FinishOutcome::NotFound);
                continue;
            };
            if run.shard_total.is_some() {
                // A sharded run finishes through its shards (`shard_finish`), never as a whole.
                outcomes.push(FinishOutcome::Conflict { state: run.state, attempt: run.attempt });
                continue;
            }
            let (status, event) = result_event(&p.result);
            let current = run.attempt == p.attempt && matches!(run.state, RunState::Dispatching | RunState::Running);
            if !current {
                let prior = match applied.get(&(p.run_id.clone(), p.attempt)) {
                    Some((s, o)) => Some((s.to_string(), o.clone())),
                    None => sqlx::query(
                        "SELECT state, output FROM attempts WHERE run_id = ? AND shard_index = 0 AND attempt = ?",
                    )
                    .bind(&p.run_id)
                    .bind(p.attempt)
                    .fetch_optional(&mut *tx)
                    .await?
                    .map(|row| Ok::<_, StoreError>((col::<String>(&row, "state")?, json_opt(&row, "output")?)))
                    .transpose()?,
                };
                outcomes.push(match prior {
                    Some((state, output)) if state == status && output == p.output => FinishOutcome::Duplicate,
                    _ => FinishOutcome::Conflict { state: run.state, attempt: run.attempt },
                });
                continue;
            }
            let (rw, aw) = apply_result(run, p, event, status, at)?;
            run_writes.push(rw);
            attempt_writes.push(aw);
            applied.insert((run.id.clone(), p.attempt), (status, p.output.clone()));
            if matches!(run.state, RunState::Succeeded | RunState::Failed) {
                ended.push(outcomes.len());
            }
            outcomes.push(FinishOutcome::Applied { run: run.clone(), children: Vec::new() });
        }
        if !write_runs(&mut tx, self.hint(Ix::Primary), &run_writes).await? {
            // Cannot happen under the row locks; refuse the whole batch rather than guess.
            return Err(StoreError::Stale("a run of the result batch"));
        }
        write_attempts(&mut tx, self.dialect, &attempt_writes).await?;
        self.fire_children(&mut tx, &mut outcomes, &ended).await?;
        tx.commit().await?;
        Ok(outcomes)
    }

    /// The result batch when every result carries its run as dispatched (the engine's own
    /// deliveries), each for a distinct run that is not sharded: written without reading the
    /// rows first, each write conditional on the run still being at that attempt and in flight.
    /// `None`, with nothing written, if one is not (cancelled, timed out, recovered by another
    /// node meanwhile): the caller then decides the batch from the rows.
    async fn finish_as_dispatched(&self, ps: &[FinishAttempt]) -> Result<Option<Vec<FinishOutcome>>> {
        let mut seen = HashSet::new();
        let eligible = ps.iter().all(|p| {
            p.dispatched.as_ref().is_some_and(|r| {
                r.id == p.run_id
                    && r.attempt == p.attempt
                    && r.shard_total.is_none()
                    && matches!(r.state, RunState::Dispatching | RunState::Running)
            }) && seen.insert(p.run_id.as_str())
        });
        if ps.is_empty() || !eligible {
            return Ok(None);
        }
        let at = ps.iter().map(|p| p.now_ms).max().unwrap_or_default();
        let mut outcomes = Vec::with_capacity(ps.len());
        let mut run_writes = Vec::with_capacity(ps.len());
        let mut attempt_writes = Vec::with_capacity(ps.len());
        let mut ended = Vec::new();
        for p in ps {
            let mut run = p.dispatched.clone().expect("checked above");
            let (status, event) = result_event(&p.result);
            let (rw, aw) = apply_result(&mut run, p, event, status, at)?;
            run_writes.push(rw);
            attempt_writes.push(aw);
            if matches!(run.state, RunState::Succeeded | RunState::Failed) {
                ended.push(outcomes.len());
            }
            outcomes.push(FinishOutcome::Applied { run, children: Vec::new() });
        }
        let mut tx = self.begin().await?;
        // The writes lock the rows in id order, as every batch takes them.
        run_writes.sort_by(|a, b| a.id.cmp(&b.id));
        if !write_runs(&mut tx, self.hint(Ix::Primary), &run_writes).await? {
            tx.rollback().await?;
            return Ok(None);
        }
        write_attempts(&mut tx, self.dialect, &attempt_writes).await?;
        self.fire_children(&mut tx, &mut outcomes, &ended).await?;
        tx.commit().await?;
        Ok(Some(outcomes))
    }

    /// The ended runs' child jobs, in the result's transaction: those whose edge holds fire
    /// once each (a fan-in once per chain), the others pass on that they will not run.
    async fn fire_children(
        &self,
        tx: &mut Transaction<'static, Any>,
        outcomes: &mut [FinishOutcome],
        ended: &[usize],
    ) -> Result<()> {
        if !ended.is_empty() {
            let parents = distinct(ended.iter().map(|&i| match &outcomes[i] {
                FinishOutcome::Applied { run, .. } => run.job_id.as_str(),
                _ => unreachable!("only applied outcomes are listed"),
            }));
            let mut edges = chains::edges_from(tx, &parents).await?;
            for &i in ended {
                let FinishOutcome::Applied { run, children } = &mut outcomes[i] else { continue };
                let Some(e) = edges.get(&run.job_id).cloned() else { continue };
                *children = chains::run_ended(tx, self.dialect, run, Some(e), run.updated_at_ms).await?;
            }
            edges.clear();
        }
        Ok(())
    }

    /// Generated runs of several jobs in one transaction: see [`RunStore::run_generate_many`](crate::RunStore::run_generate_many).
    ///
    /// The job rows are written last, so their locks (which dispatch takes too) are held only
    /// for the moment before the commit: the runs are inserted first, then each job's
    /// `generated_until_ms` moves conditional on the version the runs were planned from. If a
    /// job changed meanwhile, the whole batch is undone and its jobs are written one by one.
    pub(super) async fn generate_many(&self, batch: &[GenerateJob]) -> Result<Vec<Option<usize>>> {
        match self.generate_batch(batch).await? {
            Some(out) => Ok(out),
            None if batch.len() == 1 => Ok(vec![None]),
            None => {
                let mut out = Vec::with_capacity(batch.len());
                for g in batch {
                    out.push(self.generate_batch(std::slice::from_ref(g)).await?.and_then(|mut o| o.pop().flatten()));
                }
                Ok(out)
            }
        }
    }

    /// `None` (nothing written) if a job of the batch is no longer at its planned version.
    async fn generate_batch(&self, batch: &[GenerateJob]) -> Result<Option<Vec<Option<usize>>>> {
        let mut tx = self.begin().await?;
        // Which jobs are at the version the runs were planned from (and active)? No lock:
        // the conditional UPDATE at the end re-checks under the row lock.
        let ids = distinct(batch.iter().map(|g| g.job_id.as_str()));
        let sql = format!("SELECT id, version, state FROM jobs WHERE id IN ({})", IDS);
        let mut current: HashMap<String, (i64, String)> = HashMap::new();
        for row in fetch_in(&mut tx, &sql, &ids).await? {
            current.insert(col(&row, "id")?, (col(&row, "version")?, col(&row, "state")?));
        }
        let fresh: Vec<&GenerateJob> = batch
            .iter()
            .filter(|g| current.get(&g.job_id).is_some_and(|(v, st)| *v == g.job_version && st == "active"))
            .collect();
        let rows: Vec<Run> = fresh.iter().flat_map(|g| g.runs.iter().cloned()).collect();
        let inserted = insert_runs(&mut tx, self.dialect, &rows).await?;
        // One statement per chunk of jobs, whatever their versions and cursors (versions differ
        // from job to job): constant text, ids padded with the last job (CASE takes the first
        // match; repeats change nothing).
        let when = vec!["WHEN ? THEN ?"; IN_CHUNK].join(" ");
        let update = format!(
            "UPDATE jobs SET generated_until_ms = CASE id {when} END \
             WHERE state = 'active' AND version = CASE id {when} END AND id IN ({})",
            placeholders(IN_CHUNK)
        );
        let mut seen = std::collections::HashSet::new();
        let mut jobs: Vec<&GenerateJob> = fresh.iter().copied().filter(|g| seen.insert(g.job_id.as_str())).collect();
        // In id order, like every other lock on job rows (see `dispatch_many`).
        jobs.sort_unstable_by(|a, b| a.job_id.cmp(&b.job_id));
        for chunk in jobs.chunks(IN_CHUNK) {
            let pad = |i: usize| chunk[i.min(chunk.len() - 1)];
            let mut q = sqlx::query(sqlx::AssertSqlSafe(update.clone()));
            for i in 0..IN_CHUNK {
                q = q.bind(&pad(i).job_id).bind(pad(i).generated_until_ms);
            }
            for i in 0..IN_CHUNK {
                q = q.bind(&pad(i).job_id).bind(pad(i).job_version);
            }
            for i in 0..IN_CHUNK {
                q = q.bind(&pad(i).job_id);
            }
            if q.execute(&mut *tx).await?.rows_affected() != chunk.len() as u64 {
                tx.rollback().await?;
                return Ok(None);
            }
        }
        tx.commit().await?;
        // INSERT IGNORE reports a total only: credit it to the jobs in order (exact when
        // nothing was ignored, which is the rule: fire keys are new past `generated_until`).
        let mut left = inserted;
        Ok(Some(
            batch
                .iter()
                .map(|g| {
                    fresh.iter().any(|f| std::ptr::eq(*f, g)).then(|| {
                        let n = g.runs.len().min(left);
                        left -= n;
                        n
                    })
                })
                .collect(),
        ))
    }
}

/// Is `at` still a fire of the job's current schedule? (An unwritten fire planned from an
/// older version of the job.)
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

struct RunWrite {
    id: String,
    attempt: i64,
    state: &'static str,
    reason: Option<&'static str>,
    message: Option<String>,
    output: Option<String>,
    next_attempt_at_ms: Option<i64>,
    finished_at_ms: Option<i64>,
    now_ms: i64,
}

struct AttemptWrite {
    run_id: String,
    attempt: i64,
    webhook_id: String,
    started_at_ms: i64,
    state: &'static str,
    reason: Option<&'static str>,
    message: Option<String>,
    output: Option<String>,
    finished_at_ms: i64,
    target: Option<(Option<String>, Option<String>, String)>,
}

/// An attempt result's stored status and its event for the run's state machine.
fn result_event(r: &AttemptResult) -> (&'static str, RunEvent) {
    match r {
        AttemptResult::Succeeded => (RunState::Succeeded.as_str(), RunEvent::Succeeded),
        AttemptResult::Failed { reason, retry_at_ms } => {
            (RunState::Failed.as_str(), RunEvent::AttemptFailed { reason: *reason, retry: retry_at_ms.is_some() })
        }
    }
}

/// Apply a result for the run's current attempt to the run as read (or as dispatched), and
/// the writes that store it: the run's row (conditional on its attempt) and the attempt's.
fn apply_result(
    run: &mut Run,
    p: &FinishAttempt,
    event: RunEvent,
    status: &'static str,
    at: i64,
) -> Result<(RunWrite, AttemptWrite)> {
    let t = transition(run.state, &event).map_err(refused)?;
    let (reason, retry_at) = match &p.result {
        AttemptResult::Succeeded => (None, None),
        AttemptResult::Failed { reason, retry_at_ms } => (Some(reason.as_str()), *retry_at_ms),
    };
    let finished = t.to.is_terminal().then_some(at);
    let output = p.output.as_ref().map(to_json);
    let rw = RunWrite {
        id: run.id.clone(),
        attempt: p.attempt,
        state: t.to.as_str(),
        reason,
        message: p.message.clone(),
        output: output.clone(),
        next_attempt_at_ms: retry_at,
        finished_at_ms: finished,
        now_ms: at,
    };
    let aw = AttemptWrite {
        run_id: run.id.clone(),
        attempt: p.attempt,
        webhook_id: webhook_id(run),
        // As dispatched (a row written earlier, when the attempt was accepted, keeps its own).
        started_at_ms: run.updated_at_ms,
        state: status,
        reason,
        message: p.message.clone(),
        output,
        finished_at_ms: at,
        target: p.target.as_ref().map(|t| (t.executor_id.clone(), t.address.clone(), to_json(&t.trail))),
    };
    run.state = t.to;
    run.reason = reason.map(String::from);
    run.message = p.message.clone();
    run.output = p.output.clone();
    run.next_attempt_at_ms = retry_at;
    run.finished_at_ms = finished;
    run.owner_node = None;
    run.lease_until_ms = None;
    run.updated_at_ms = at;
    Ok((rw, aw))
}

/// Group writes whose values are equal, so each group is one `UPDATE … WHERE id IN (…)`.
fn groups<W, K: PartialEq>(writes: &[W], key: impl Fn(&W) -> K) -> Vec<Vec<&W>> {
    let mut out: Vec<(K, Vec<&W>)> = Vec::new();
    for w in writes {
        let k = key(w);
        match out.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(w),
            None => out.push((k, vec![w])),
        }
    }
    out.into_iter().map(|(_, v)| v).collect()
}

/// The runs' outcomes, each conditional on the run being at that attempt and in flight;
/// false if one was not (nothing then is to be kept of the transaction).
async fn write_runs(tx: &mut Transaction<'static, Any>, hint: &str, writes: &[RunWrite]) -> Result<bool> {
    let sql = format!(
        "UPDATE runs{hint} SET state = ?, reason = ?, message = ?, output = ?, next_attempt_at_ms = ?, finished_at_ms = ?, \
         owner_node = NULL, lease_until_ms = NULL, updated_at_ms = ? WHERE id IN ({}) AND state IN ({}) \
         AND attempt = ?",
        IDS,
        sql_states(&[RunState::Dispatching, RunState::Running])
    );
    let key = |w: &RunWrite| {
        (
            w.state,
            w.reason,
            w.message.clone(),
            w.output.clone(),
            w.next_attempt_at_ms,
            w.finished_at_ms,
            w.now_ms,
            w.attempt,
        )
    };
    for group in groups(writes, key) {
        for chunk in group.chunks(IN_CHUNK) {
            let w = chunk[0];
            let mut q = sqlx::query(sqlx::AssertSqlSafe(in_list(&sql, chunk.len())))
                .bind(w.state)
                .bind(w.reason)
                .bind(&w.message)
                .bind(&w.output)
                .bind(w.next_attempt_at_ms)
                .bind(w.finished_at_ms)
                .bind(w.now_ms);
            for i in 0..in_width(chunk.len()) {
                q = q.bind(&chunk[i.min(chunk.len() - 1)].id);
            }
            let n = q.bind(w.attempt).execute(&mut **tx).await?.rows_affected();
            if n != chunk.len() as u64 {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// The attempts' outcomes: each row inserted with its outcome, or (written earlier, when
/// the executor accepted the attempt) updated with it. Multi-row statements; rows that carry
/// a dispatch target set it, the others leave a stored one as it is.
async fn write_attempts(tx: &mut Transaction<'static, Any>, dialect: Dialect, writes: &[AttemptWrite]) -> Result<()> {
    let (plain, targeted): (Vec<&AttemptWrite>, Vec<&AttemptWrite>) = writes.iter().partition(|w| w.target.is_none());
    const OUTCOME: &[&str] = &["state", "reason", "message", "output", "finished_at_ms"];
    const WITH_TARGET: &[&str] =
        &["state", "reason", "message", "output", "finished_at_ms", "executor_id", "address", "trail"];
    for (rows, set) in [(plain, OUTCOME), (targeted, WITH_TARGET)] {
        let tail = match dialect {
            Dialect::MySql => {
                let sets: Vec<String> = set.iter().map(|c| format!("{c} = VALUES({c})")).collect();
                format!("ON DUPLICATE KEY UPDATE {}", sets.join(", "))
            }
            Dialect::Sqlite => {
                let sets: Vec<String> = set.iter().map(|c| format!("{c} = excluded.{c}")).collect();
                format!("ON CONFLICT (run_id, shard_index, attempt) DO UPDATE SET {}", sets.join(", "))
            }
        };
        let row = format!("(?, 0, {})", placeholders(11));
        let mut rest = rows.as_slice();
        for size in pow2_chunks(rows.len()) {
            let (chunk, tail_rows) = rest.split_at(size);
            rest = tail_rows;
            let sql = format!(
                "INSERT INTO attempts (run_id, shard_index, attempt, webhook_id, executor_id, address, state, reason, message, \
                 trail, output, started_at_ms, finished_at_ms) VALUES {} {tail}",
                vec![row.as_str(); size].join(", ")
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for w in chunk {
                let (executor_id, address, trail) = match &w.target {
                    Some((e, a, t)) => (e.as_deref(), a.as_deref(), t.as_str()),
                    None => (None, None, "[]"),
                };
                q = q
                    .bind(&w.run_id)
                    .bind(w.attempt)
                    .bind(&w.webhook_id)
                    .bind(executor_id)
                    .bind(address)
                    .bind(w.state)
                    .bind(w.reason)
                    .bind(&w.message)
                    .bind(trail)
                    .bind(&w.output)
                    .bind(w.started_at_ms)
                    .bind(w.finished_at_ms);
            }
            q.execute(&mut **tx).await?;
        }
    }
    Ok(())
}
