//! [`RunStore`] for [`SqlStore`]: runs and attempts, listing, claim and peek, cancel and
//! retry, the reaper's scans, run logs. The hot-path batches (dispatch, finish, generate)
//! are in `runs/dispatch.rs` and `runs/batch.rs`.

use async_trait::async_trait;
use serde_json::Value;
use sqlx::{Any, Transaction};
use sundial_core::run_state::{RunEvent, transition};
use sundial_core::types::RunState;

use super::rows::run_row;
use super::shards;
use super::writes::{claim_states, insert_run, insert_runs, release_states, set_terminal, webhook_id_of};
use super::{
    IDS, IN_CHUNK, Ix, SqlStore, col, fetch_in_with, in_list, in_width, json_col, json_opt, moved_to, parse_col,
    refused, sql_state, sql_states, to_json,
};
use crate::{
    Attempt, ClaimParams, Dialect, DispatchDecision, FinishAttempt, FinishOutcome, Page, PeekParams, Result, Run,
    RunFilter, RunLog, RunStore, ToDispatch,
};

mod batch;
mod dispatch;

/// The instant of a schedule fire key `s:<ms>`.
fn fire_key_ms(key: &str) -> Result<i64> {
    key.strip_prefix("s:")
        .and_then(|ms| ms.parse().ok())
        .ok_or_else(|| crate::StoreError::Corrupt(format!("runs.fire_key `{key}` is not a schedule fire key")))
}

/// The claim's write: the states come from `transition` (bound, see [`claim_states`]).
const CLAIM_UPDATE_SQL: &str = "UPDATE runs SET state = CASE WHEN state = ? THEN ? ELSE state END, owner_node = ?, \
    lease_until_ms = ?, updated_at_ms = ? WHERE id IN (:ids)";

#[async_trait]
impl RunStore for SqlStore {
    // ---- runs ----

    async fn run_insert(&self, r: &Run) -> Result<bool> {
        let mut tx = self.begin().await?;
        let inserted = insert_run(&mut tx, self.dialect, r).await?;
        tx.commit().await?;
        Ok(inserted)
    }

    async fn run_get(&self, tenant_id: &str, id: &str) -> Result<Option<Run>> {
        sqlx::query("SELECT * FROM runs WHERE id = ? AND tenant_id = ?")
            .bind(id)
            .bind(tenant_id)
            .fetch_optional(self.reader())
            .await?
            .as_ref()
            .map(run_row)
            .transpose()
    }

    async fn run_chain(&self, tenant_id: &str, chain_id: &str, limit: i64) -> Result<Vec<Run>> {
        sqlx::query(
            "SELECT * FROM runs WHERE tenant_id = ? AND (id = ? OR id IN (SELECT run_id FROM chain_runs WHERE chain_id = ?)) \
             ORDER BY created_at_ms, id LIMIT ?",
        )
        .bind(tenant_id)
        .bind(chain_id)
        .bind(chain_id)
        .bind(limit)
        .fetch_all(self.reader())
        .await?
        .iter()
        .map(run_row)
        .collect()
    }

    async fn chain_view(&self, tenant_id: &str, chain_id: &str, limit: i64) -> Result<Option<crate::ChainView>> {
        let runs = self.run_chain(tenant_id, chain_id, limit).await?;
        if runs.is_empty() {
            return Ok(None);
        }
        // The jobs, edges and joins in one read transaction (the runs were read just before).
        let mut tx = self.reader().begin().await?;
        let view = super::chains::view(&mut tx, chain_id, runs).await?;
        tx.commit().await?;
        Ok(Some(view))
    }

    async fn run_by_fire_key(&self, job_id: &str, fire_key: &str) -> Result<Option<Run>> {
        sqlx::query("SELECT * FROM runs WHERE job_id = ? AND fire_key = ?")
            .bind(job_id)
            .bind(fire_key)
            .fetch_optional(self.reader())
            .await?
            .as_ref()
            .map(run_row)
            .transpose()
    }

    async fn run_list(&self, tenant_id: &str, f: &RunFilter, page: &Page) -> Result<Vec<Run>> {
        let (c_ms, c_id) = match page.after.as_deref().and_then(|c| c.split_once(':')) {
            Some((ms, id)) => (ms.parse::<i64>().ok(), Some(id.to_string())),
            None => (None, None),
        };
        let state = f.state.map(|s| s.as_str());
        sqlx::query(
            "SELECT * FROM runs WHERE tenant_id = ? AND (? IS NULL OR job_id = ?) AND (? IS NULL OR state = ?) \
             AND (? IS NULL OR scheduled_at_ms >= ?) AND (? IS NULL OR scheduled_at_ms < ?) \
             AND (? IS NULL OR scheduled_at_ms < ? OR (scheduled_at_ms = ? AND id < ?)) \
             ORDER BY scheduled_at_ms DESC, id DESC LIMIT ?",
        )
        .bind(tenant_id)
        .bind(&f.job_id)
        .bind(&f.job_id)
        .bind(state)
        .bind(state)
        .bind(f.from_ms)
        .bind(f.from_ms)
        .bind(f.to_ms)
        .bind(f.to_ms)
        .bind(c_ms)
        .bind(c_ms)
        .bind(c_ms)
        .bind(&c_id)
        .bind(page.limit)
        .fetch_all(self.reader())
        .await?
        .iter()
        .map(run_row)
        .collect()
    }

    // ---- scheduling engine ----

    async fn run_generate_many(&self, batch: &[crate::GenerateJob]) -> Result<Vec<Option<usize>>> {
        self.generate_many(batch).await
    }

    async fn run_claim(&self, p: &ClaimParams) -> Result<Vec<Run>> {
        let mut tx = self.begin().await?;
        // In order, while there is room: runs whose claim expired, triggered runs, schedule
        // fires (only as the backstop for this node's own, which the peek reads), due retries.
        let mut claimed = self.claim_orphans(&mut tx, p).await?;
        let room = p.limit - claimed.len() as i64;
        if room > 0 {
            claimed.extend(self.claim_pending(&mut tx, p, WakeScan::Triggered, room).await?);
        }
        let room = p.limit - claimed.len() as i64;
        if room > 0 && p.include_schedule {
            claimed.extend(self.claim_pending(&mut tx, p, WakeScan::Schedule, room).await?);
        }
        let room = p.limit - claimed.len() as i64;
        if room > 0 {
            claimed.extend(self.claim_retries(&mut tx, p, room).await?);
        }
        // Few statement texts: ids go in chunks, each list sized to a power of two (`in_list`).
        for chunk in claimed.chunks(IN_CHUNK) {
            let (from, to) = claim_states()?;
            let mut q = sqlx::query(sqlx::AssertSqlSafe(in_list(CLAIM_UPDATE_SQL, chunk.len())))
                .bind(from)
                .bind(to)
                .bind(&p.node_id)
                .bind(p.lease_until_ms)
                .bind(p.now_ms);
            for i in 0..in_width(chunk.len()) {
                q = q.bind(&chunk[i.min(chunk.len() - 1)].id);
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        for r in &mut claimed {
            if r.state == RunState::Pending {
                r.state = transition(r.state, &RunEvent::Claim).map_err(refused)?.to;
            }
            r.owner_node = Some(p.node_id.clone());
            r.lease_until_ms = Some(p.lease_until_ms);
            r.updated_at_ms = p.now_ms;
        }
        Ok(claimed)
    }

    async fn run_peek(&self, p: &PeekParams) -> Result<Vec<Run>> {
        // (wake_at_ms, id) > cursor, in the order of `ix_runs_wake` (whose entries carry the
        // primary key): a range scan that starts where the last one stopped.
        let skip = if p.skip_tenant.is_some() { " AND tenant_id <> ?" } else { "" };
        let sql = format!(
            "SELECT * FROM runs WHERE wake_kind = 'schedule' AND wake_at_ms >= ? AND wake_at_ms <= ? \
             AND (wake_at_ms > ? OR id > ?) AND ((? >> bucket) & 1) = 1{skip} ORDER BY wake_at_ms, id LIMIT ?"
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(p.after_ms)
            .bind(p.due_before_ms)
            .bind(p.after_ms)
            .bind(&p.after_id)
            .bind(p.owned_buckets as i64);
        if let Some(t) = &p.skip_tenant {
            q = q.bind(t);
        }
        q.bind(p.limit).fetch_all(self.reader()).await?.iter().map(run_row).collect()
    }

    async fn run_expire_many(&self, run_ids: &[String], node_id: &str, message: &str, now_ms: i64) -> Result<u64> {
        let to = moved_to(&[RunState::Queued, RunState::Pending], &RunEvent::Expire)?;
        let sql = format!(
            "UPDATE runs{} SET state = ?, message = ?, finished_at_ms = ?, updated_at_ms = ?, owner_node = NULL, \
             lease_until_ms = NULL WHERE id IN ({}) AND (state = {} OR (state = {} AND owner_node = ?))",
            self.hint(Ix::Primary),
            IDS,
            sql_state(RunState::Pending),
            sql_state(RunState::Queued)
        );
        let mut n = 0;
        for chunk in run_ids.chunks(IN_CHUNK) {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(in_list(&sql, chunk.len())))
                .bind(to.as_str())
                .bind(message)
                .bind(now_ms)
                .bind(now_ms);
            for i in 0..in_width(chunk.len()) {
                q = q.bind(&chunk[i.min(chunk.len() - 1)]);
            }
            n += q.bind(node_id).execute(&self.pool).await?.rows_affected();
        }
        Ok(n)
    }

    async fn run_later_fires(&self, fires: &[(String, i64)], before_ms: i64) -> Result<Vec<String>> {
        // The job's schedule fires after the earliest asked-about instant, found through
        // `uq_runs_fire` (job, fire key): `s:<ms>` keys of 13 digits (2001-09-09 to 2286)
        // sort as their instants do, so the scan reads only fires from that instant on, not
        // the job's whole history (which a range on the old `ix_runs_job (job_id, state)` walked).
        // The instant is checked again as a number, so the key order is only the access path.
        let Some(from) = fires.iter().map(|(_, at)| *at).min() else { return Ok(Vec::new()) };
        let mut jobs: Vec<&str> = fires.iter().map(|(j, _)| j.as_str()).collect();
        jobs.sort_unstable();
        jobs.dedup();
        let sql = format!(
            "SELECT job_id, scheduled_at_ms FROM runs WHERE job_id IN ({}) AND fire_key > ? AND fire_key < 's;' \
             AND trigger_kind = 'schedule' AND scheduled_at_ms > ? \
             AND (state IN ({}) \
                  OR (state IN ({}) AND scheduled_at_ms < ?))",
            IDS,
            sql_states(&[
                RunState::Dispatching,
                RunState::Running,
                RunState::Retrying,
                RunState::Succeeded,
                RunState::Failed
            ]),
            sql_states(&[RunState::Pending, RunState::Queued])
        );
        let mut latest: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
        let mut tx = self.begin().await?;
        for chunk in jobs.chunks(IN_CHUNK) {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(in_list(&sql, chunk.len())));
            for i in 0..in_width(chunk.len()) {
                q = q.bind(chunk[i.min(chunk.len() - 1)]);
            }
            let rows = q.bind(format!("s:{from}")).bind(from).bind(before_ms).fetch_all(&mut *tx).await?;
            for r in &rows {
                let at: i64 = col(r, "scheduled_at_ms")?;
                let e = latest.entry(col(r, "job_id")?).or_insert(at);
                *e = (*e).max(at);
            }
        }
        tx.commit().await?;
        let mut out: Vec<String> = fires
            .iter()
            .filter(|(job, at)| latest.get(job).is_some_and(|l| l > at))
            .map(|(job, _)| job.clone())
            .collect();
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    async fn run_insert_missing(&self, runs: &[Run]) -> Result<usize> {
        if runs.is_empty() {
            return Ok(0);
        }
        let mut tx = self.begin().await?;
        let n = insert_runs(&mut tx, self.dialect, runs).await?;
        tx.commit().await?;
        Ok(n)
    }

    async fn run_last_fires(&self, job_ids: &[String]) -> Result<std::collections::HashMap<String, i64>> {
        // Through `uq_runs_fire` (job, fire key), as `run_later_fires`: `s:<ms>` keys of 13
        // digits (2001-09-09 to 2286) sort as their instants do, so the greatest key is the
        // latest fire, found by one index dive per job (MariaDB reads MAX of a group from the
        // index; SQLite is asked per job, which its MIN/MAX optimisation answers the same way).
        let mut out = std::collections::HashMap::new();
        let mut tx = self.begin().await?;
        match self.dialect {
            Dialect::MySql => {
                let sql = format!(
                    "SELECT job_id, MAX(fire_key) AS k FROM runs WHERE job_id IN ({}) AND fire_key > 's:' AND fire_key < 's;' \
                     GROUP BY job_id",
                    IDS
                );
                for chunk in job_ids.chunks(IN_CHUNK) {
                    let mut q = sqlx::query(sqlx::AssertSqlSafe(in_list(&sql, chunk.len())));
                    for i in 0..in_width(chunk.len()) {
                        q = q.bind(&chunk[i.min(chunk.len() - 1)]);
                    }
                    for r in q.fetch_all(&mut *tx).await? {
                        let key: String = col(&r, "k")?;
                        out.insert(col(&r, "job_id")?, fire_key_ms(&key)?);
                    }
                }
            }
            Dialect::Sqlite => {
                for id in job_ids {
                    let key: Option<String> = sqlx::query_scalar(
                        "SELECT MAX(fire_key) FROM runs WHERE job_id = ? AND fire_key > 's:' AND fire_key < 's;'",
                    )
                    .bind(id)
                    .fetch_one(&mut *tx)
                    .await?;
                    if let Some(key) = key {
                        out.insert(id.clone(), fire_key_ms(&key)?);
                    }
                }
            }
        }
        tx.commit().await?;
        Ok(out)
    }

    async fn run_fires_between(
        &self,
        ranges: &[(String, i64, i64)],
    ) -> Result<std::collections::HashMap<String, Vec<i64>>> {
        // Through `uq_runs_fire` (job, fire key): `s:<ms>` keys of 13 digits sort as their
        // instants do (see `run_last_fires`), so each job's range is one index range of its own
        // (never one span covering every job's, which after a long downtime would read days of
        // a busy job's rows).
        let mut out: std::collections::HashMap<String, Vec<i64>> = std::collections::HashMap::new();
        let ranges: Vec<&(String, i64, i64)> = ranges.iter().filter(|(_, from, to)| from <= to).collect();
        for chunk in ranges.chunks(IN_CHUNK) {
            let sql = format!(
                "SELECT job_id, fire_key FROM runs WHERE {}",
                vec!["(job_id = ? AND fire_key >= ? AND fire_key <= ?)"; chunk.len()].join(" OR ")
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
            for (job, from, to) in chunk {
                q = q.bind(job).bind(format!("s:{from:013}")).bind(format!("s:{to:013}"));
            }
            for r in q.fetch_all(self.reader()).await? {
                let key: String = col(&r, "fire_key")?;
                out.entry(col(&r, "job_id")?).or_default().push(fire_key_ms(&key)?);
            }
        }
        for fires in out.values_mut() {
            fires.sort_unstable();
            fires.dedup();
        }
        Ok(out)
    }

    async fn run_release(&self, node_id: &str, run_ids: &[String], now_ms: i64) -> Result<u64> {
        let mut n = 0;
        let (from, to) = release_states()?;
        let mut tx = self.begin().await?;
        for id in run_ids {
            let r = sqlx::query(sqlx::AssertSqlSafe(format!(
                "UPDATE runs SET state = CASE WHEN state = ? THEN ? ELSE state END, owner_node = NULL, \
                 lease_until_ms = NULL, updated_at_ms = ? WHERE id = ? AND owner_node = ? AND state IN ({})",
                sql_states(&[RunState::Queued, RunState::Retrying])
            )))
            .bind(from)
            .bind(to)
            .bind(now_ms)
            .bind(id)
            .bind(node_id)
            .execute(&mut *tx)
            .await?;
            n += r.rows_affected();
        }
        tx.commit().await?;
        Ok(n)
    }

    async fn run_dispatch_many(
        &self,
        runs: &[ToDispatch],
        node_id: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Vec<(String, DispatchDecision)>> {
        self.dispatch_many(runs, node_id, now_ms, lease_ms).await
    }

    async fn attempt_set_target(
        &self,
        run_id: &str,
        attempt: i64,
        executor_id: Option<&str>,
        address: Option<&str>,
        trail: &Value,
    ) -> Result<()> {
        let set = || {
            sqlx::query(
                "UPDATE attempts SET executor_id = ?, address = ?, trail = ? WHERE run_id = ? AND shard_index = 0 AND attempt = ?",
            )
            .bind(executor_id)
            .bind(address)
            .bind(to_json(trail))
            .bind(run_id)
            .bind(attempt)
        };
        if set().execute(&self.pool).await?.rows_affected() > 0 {
            return Ok(());
        }
        // Not sharded, the attempt's row is written now (accepted: its outcome comes later),
        // started when the run was dispatched. Its outcome may have been written meanwhile
        // (an executor answering at once): that row then takes the target.
        let verb = match self.dialect {
            Dialect::MySql => "INSERT IGNORE",
            Dialect::Sqlite => "INSERT OR IGNORE",
        };
        let inserted = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{verb} INTO attempts (run_id, shard_index, attempt, webhook_id, executor_id, address, state, trail, started_at_ms) \
             SELECT id, 0, attempt, ?, ?, ?, {}, ?, updated_at_ms FROM runs WHERE id = ? AND attempt = ?",
            sql_state(RunState::Dispatching)
        )))
        .bind(webhook_id_of(run_id, attempt))
        .bind(executor_id)
        .bind(address)
        .bind(to_json(trail))
        .bind(run_id)
        .bind(attempt)
        .execute(&self.pool)
        .await?
        .rows_affected();
        if inserted == 0 {
            set().execute(&self.pool).await?;
        }
        Ok(())
    }

    async fn run_mark_running(&self, run_id: &str, attempt: i64, now_ms: i64) -> Result<bool> {
        let to = transition(RunState::Dispatching, &RunEvent::Accepted).map_err(refused)?.to;
        let mut tx = self.begin().await?;
        let r = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE runs SET state = ?, updated_at_ms = ? WHERE id = ? AND state = {} AND attempt = ?",
            sql_state(RunState::Dispatching)
        )))
        .bind(to.as_str())
        .bind(now_ms)
        .bind(run_id)
        .bind(attempt)
        .execute(&mut *tx)
        .await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE attempts SET state = {} WHERE run_id = ? AND shard_index = 0 AND attempt = ? AND state = {}",
            sql_state(to),
            sql_state(RunState::Dispatching)
        )))
        .bind(run_id)
        .bind(attempt)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(r.rows_affected() > 0)
    }

    async fn run_extend_dispatch(&self, run_ids: &[String], node_id: &str, by_ms: i64) -> Result<u64> {
        self.extend_dispatch(run_ids, node_id, by_ms).await
    }

    async fn run_finish_many(&self, ps: &[FinishAttempt]) -> Result<Vec<FinishOutcome>> {
        self.finish_many(ps).await
    }

    async fn run_cancel(&self, tenant_id: &str, run_id: &str, message: &str, now_ms: i64) -> Result<Option<Run>> {
        let lock = self.lock_clause();
        let mut tx = self.begin().await?;
        let Some(run) =
            sqlx::query(sqlx::AssertSqlSafe(format!("SELECT * FROM runs WHERE id = ? AND tenant_id = ?{lock}")))
                .bind(run_id)
                .bind(tenant_id)
                .fetch_optional(&mut *tx)
                .await?
                .as_ref()
                .map(run_row)
                .transpose()?
        else {
            return Ok(None);
        };
        let done = set_terminal(&mut tx, &run, RunEvent::Cancel, message, now_ms).await?;
        if done && run.chain_id.is_some() {
            // A step of a chain: the fan-ins waiting for it are released (it fires nothing).
            let mut ended = run.clone();
            ended.state = transition(run.state, &RunEvent::Cancel).map_err(refused)?.to;
            super::chains::run_ended(&mut tx, self.dialect, &ended, None, now_ms).await?;
        }
        tx.commit().await?;
        Ok(done.then_some(run))
    }

    async fn run_retry_now(&self, tenant_id: &str, run_id: &str, now_ms: i64) -> Result<bool> {
        let mut tx = self.begin().await?;
        let r = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE runs SET next_attempt_at_ms = ?, owner_node = NULL, lease_until_ms = NULL, updated_at_ms = ? \
             WHERE id = ? AND tenant_id = ? AND state = {}",
            sql_state(RunState::Retrying)
        )))
        .bind(now_ms)
        .bind(now_ms)
        .bind(run_id)
        .bind(tenant_id)
        .execute(&mut *tx)
        .await?;
        let mut done = r.rows_affected() > 0;
        if !done {
            // A sharded run stays `running` while a shard waits out its backoff: those shards go now.
            done = shards::retry_now(&mut tx, tenant_id, run_id, now_ms).await? > 0;
        }
        tx.commit().await?;
        Ok(done)
    }

    async fn run_overdue(&self, now_ms: i64, buckets: u64, limit: i64) -> Result<Vec<Run>> {
        sqlx::query(
            "SELECT * FROM runs WHERE wake_kind = 'deadline' AND wake_at_ms < ? AND shard_total IS NULL \
             AND ((? >> bucket) & 1) = 1 ORDER BY wake_at_ms LIMIT ?",
        )
        .bind(now_ms)
        .bind(buckets as i64)
        .bind(limit)
        .fetch_all(self.reader())
        .await?
        .iter()
        .map(run_row)
        .collect()
    }

    async fn run_on_silent_executors(&self, silent_before_ms: i64, buckets: u64, limit: i64) -> Result<Vec<Run>> {
        sqlx::query(
            "SELECT r.* FROM runs r \
             JOIN attempts a ON a.run_id = r.id AND a.shard_index = 0 AND a.attempt = r.attempt \
             JOIN executors e ON e.id = a.executor_id \
             WHERE r.wake_kind = 'deadline' AND r.shard_total IS NULL AND e.last_heartbeat_ms < ? \
             AND ((? >> r.bucket) & 1) = 1 LIMIT ?",
        )
        .bind(silent_before_ms)
        .bind(buckets as i64)
        .bind(limit)
        .fetch_all(self.reader())
        .await?
        .iter()
        .map(run_row)
        .collect()
    }

    async fn run_attempts(&self, run_id: &str) -> Result<Vec<Attempt>> {
        // The run first: an attempt in flight has no row until it is accepted or ends (read
        // after the run, a row written meanwhile is found and the attempt not shown twice).
        let in_flight = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT attempt, updated_at_ms FROM runs WHERE id = ? AND state = {} AND shard_total IS NULL",
            sql_state(RunState::Dispatching)
        )))
        .bind(run_id)
        .fetch_optional(self.reader())
        .await?
        .map(|r| Ok::<_, crate::StoreError>((col::<i64>(&r, "attempt")?, col::<i64>(&r, "updated_at_ms")?)))
        .transpose()?;
        let mut out: Vec<Attempt> =
            sqlx::query("SELECT * FROM attempts WHERE run_id = ? ORDER BY shard_index, attempt")
                .bind(run_id)
                .fetch_all(self.reader())
                .await?
                .iter()
                .map(|r| {
                    Ok(Attempt {
                        run_id: col(r, "run_id")?,
                        shard_index: col(r, "shard_index")?,
                        attempt: col(r, "attempt")?,
                        webhook_id: col(r, "webhook_id")?,
                        executor_id: col(r, "executor_id")?,
                        address: col(r, "address")?,
                        state: col(r, "state")?,
                        reason: col(r, "reason")?,
                        message: col(r, "message")?,
                        trail: json_col(r, "trail")?,
                        output: json_opt(r, "output")?,
                        started_at_ms: col(r, "started_at_ms")?,
                        finished_at_ms: col(r, "finished_at_ms")?,
                    })
                })
                .collect::<Result<_>>()?;
        if let Some((attempt, started_at_ms)) = in_flight
            && !out.iter().any(|a| a.shard_index == 0 && a.attempt == attempt)
        {
            out.push(Attempt {
                run_id: run_id.to_string(),
                shard_index: 0,
                attempt,
                webhook_id: webhook_id_of(run_id, attempt),
                executor_id: None,
                address: None,
                state: RunState::Dispatching.as_str().to_string(),
                reason: None,
                message: None,
                trail: Value::Array(Vec::new()),
                output: None,
                started_at_ms,
                finished_at_ms: None,
            });
        }
        Ok(out)
    }

    async fn run_states(&self, run_ids: &[String]) -> Result<Vec<(String, RunState, i64)>> {
        let sql = format!("SELECT id, state, attempt FROM runs WHERE id IN ({IDS})");
        let mut out = Vec::with_capacity(run_ids.len());
        for chunk in run_ids.chunks(IN_CHUNK) {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(in_list(&sql, chunk.len())));
            for i in 0..in_width(chunk.len()) {
                q = q.bind(&chunk[i.min(chunk.len() - 1)]);
            }
            for r in q.fetch_all(self.reader()).await? {
                out.push((col(&r, "id")?, parse_col(&r, "state")?, col(&r, "attempt")?));
            }
        }
        Ok(out)
    }

    async fn run_log_append(&self, run_id: &str, attempt: i64, lines: &[(i64, String, String)]) -> Result<()> {
        shards::log_append(self, run_id, 0, attempt, lines).await
    }

    async fn run_logs(&self, run_id: &str, limit: i64) -> Result<Vec<RunLog>> {
        self.run_logs_after(run_id, 0, limit).await
    }

    async fn run_logs_after(&self, run_id: &str, after_id: i64, limit: i64) -> Result<Vec<RunLog>> {
        // `ix_run_logs_run (run_id, id)` serves the range and the order.
        sqlx::query("SELECT * FROM run_logs WHERE run_id = ? AND id > ? ORDER BY id LIMIT ?")
            .bind(run_id)
            .bind(after_id)
            .bind(limit)
            .fetch_all(self.reader())
            .await?
            .iter()
            .map(|r| {
                Ok(RunLog {
                    id: col(r, "id")?,
                    run_id: col(r, "run_id")?,
                    shard_index: col(r, "shard_index")?,
                    attempt: col(r, "attempt")?,
                    at_ms: col(r, "at_ms")?,
                    level: col(r, "level")?,
                    message: col(r, "message")?,
                })
            })
            .collect()
    }
}

/// Which pending runs a claim scan reads (each its own kind of `ix_runs_wake`).
#[derive(Clone, Copy)]
enum WakeScan {
    /// Manual, API and a parent's children: whichever node claims first.
    Triggered,
    /// Schedule fires: ours at once if their bucket is in our mask (only as the peek's
    /// backstop), anyone's once overdue past the affinity grace.
    Schedule,
}

impl SqlStore {
    /// ` FOR UPDATE SKIP LOCKED` on MySQL: nodes claiming at once skip each other's locked
    /// rows instead of waiting (SQLite holds the write lock already).
    fn skip_locked(&self) -> &'static str {
        match self.dialect {
            Dialect::MySql => " FOR UPDATE SKIP LOCKED",
            Dialect::Sqlite => "",
        }
    }

    /// Recovery: claims whose lease ran out (their node died or lost the database). A
    /// `queued` run goes back through the misfire policy; a `dispatching` one is redelivered
    /// as the same attempt with the same webhook-id. Found by a plain read, then locked by id
    /// with the condition checked again: a locking range scan of `ix_runs_wake` also locks
    /// the first entry past its end, the lease of the run claimed longest ago, which is the
    /// next to be dispatched; every dispatch of it then waited for this claim's commit.
    async fn claim_orphans(&self, tx: &mut Transaction<'static, Any>, p: &ClaimParams) -> Result<Vec<Run>> {
        let candidates: Vec<String> =
            sqlx::query("SELECT id FROM runs WHERE wake_kind = 'lease' AND wake_at_ms < ? LIMIT ?")
                .bind(p.now_ms)
                .bind(p.limit)
                .fetch_all(&mut **tx)
                .await?
                .iter()
                .map(|r| col::<String>(r, "id"))
                .collect::<Result<_>>()?;
        let orphan_sql = format!(
            "SELECT * FROM runs{} WHERE id IN ({}) AND state IN ({}) AND lease_until_ms < ?{}",
            self.hint(Ix::Primary),
            IDS,
            sql_states(&[RunState::Queued, RunState::Dispatching]),
            self.skip_locked()
        );
        let ids: Vec<&str> = candidates.iter().map(String::as_str).collect();
        let orphans: Vec<Run> =
            fetch_in_with(tx, &orphan_sql, &ids, &[p.now_ms]).await?.iter().map(run_row).collect::<Result<_>>()?;
        if !orphans.is_empty() {
            tracing::warn!(runs = orphans.len(), node_id = %p.node_id, "recovering runs whose claim expired");
        }
        Ok(orphans)
    }

    /// Up to `room` pending runs of one scan, due now. Like the orphans, found by a plain read
    /// and locked by id (still `pending`), so that no locking range scan holds the index entry
    /// past its end. A tenant over its share of the node's timer (`skip_tenant`) is passed
    /// over: one more condition, only then (it reads each candidate's row). One bind for the
    /// bucket mask keeps the text constant.
    async fn claim_pending(
        &self,
        tx: &mut Transaction<'static, Any>,
        p: &ClaimParams,
        scan: WakeScan,
        room: i64,
    ) -> Result<Vec<Run>> {
        let skip = if p.skip_tenant.is_some() { " AND tenant_id <> ?" } else { "" };
        let mut q = match scan {
            WakeScan::Triggered => sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT id FROM runs WHERE wake_kind = 'triggered' AND wake_at_ms <= ?{skip} ORDER BY wake_at_ms LIMIT ?"
            )))
            .bind(p.due_before_ms),
            WakeScan::Schedule => {
                // Pending fires of our own buckets, which the peek reads, are claimed only as a
                // backstop, and scanned only up to its instant. A node that owns every bucket
                // scans no further: past that instant every row would be read and filtered out,
                // and while a node is behind (own backstop a lease back) that was every fire of
                // the last half minute, on each claim round.
                let own_due = p.own_fires_due_before_ms.unwrap_or(p.due_before_ms);
                let scan_to = if p.owned_buckets == sundial_core::affinity::ALL_BUCKETS {
                    own_due
                } else {
                    own_due.max(p.foreign_due_before_ms)
                };
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT id FROM runs WHERE wake_kind = 'schedule' AND wake_at_ms <= ? \
                     AND wake_at_ms <= CASE WHEN ((? >> bucket) & 1) = 1 THEN ? ELSE ? END{skip} ORDER BY wake_at_ms LIMIT ?"
                )))
                .bind(scan_to)
                .bind(p.owned_buckets as i64)
                .bind(own_due)
                .bind(p.foreign_due_before_ms)
            }
        };
        if let Some(t) = &p.skip_tenant {
            q = q.bind(t);
        }
        let ids: Vec<String> =
            q.bind(room).fetch_all(&mut **tx).await?.iter().map(|r| col::<String>(r, "id")).collect::<Result<_>>()?;
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let lock_pending_sql = format!(
            "SELECT * FROM runs{} WHERE id IN ({}) AND state = {}{}",
            self.hint(Ix::Primary),
            IDS,
            sql_state(RunState::Pending),
            self.skip_locked()
        );
        fetch_in_with(tx, &lock_pending_sql, &ids, &[]).await?.iter().map(run_row).collect()
    }

    /// Up to `room` retries due: unowned or whose claim ran out; a schedule fire's retry with
    /// no owner only once overdue past the grace or when its bucket is ours.
    async fn claim_retries(&self, tx: &mut Transaction<'static, Any>, p: &ClaimParams, room: i64) -> Result<Vec<Run>> {
        let skip = if p.skip_tenant.is_some() { " AND tenant_id <> ?" } else { "" };
        let retry_sql = format!(
            "SELECT * FROM runs WHERE wake_kind = 'retry' AND wake_at_ms <= ? \
             AND (owner_node IS NULL OR lease_until_ms < ?) \
             AND (owner_node IS NOT NULL OR trigger_kind <> 'schedule' OR next_attempt_at_ms <= ? OR ((? >> bucket) & 1) = 1)\
             {skip} ORDER BY wake_at_ms LIMIT ?{}",
            self.skip_locked()
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(retry_sql))
            .bind(p.due_before_ms)
            .bind(p.now_ms)
            .bind(p.foreign_due_before_ms)
            .bind(p.owned_buckets as i64);
        if let Some(t) = &p.skip_tenant {
            q = q.bind(t);
        }
        q.bind(room).fetch_all(&mut **tx).await?.iter().map(run_row).collect()
    }
}
