//! [`ShardStore`] for [`SqlStore`]: the shard records of a run (`run_shards`) and their
//! attempts. The trait methods (at the end) delegate in one line each to the functions
//! here, which the run module's retry and log calls share (a run's end cancels its open
//! shards through `writes::cancel_open`).
//!
//! Every change is conditional on the state and attempt it expects, inside a
//! transaction that first reads (and on MySQL locks) the run row, so two nodes, a
//! late result or a stale reaper change nothing. A shard moves through the run
//! state machine ([`transition`]) from `dispatching`; the run it belongs to follows
//! its shards: `succeeded` when every shard has, `failed` when one failed for good.

use async_trait::async_trait;
use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::{Any, Transaction};
use sundial_core::run_state::{RunEvent, transition};
use sundial_core::types::RunState;

use super::chains;
use super::rows::run_row;
use super::writes::{cancel_open, log_insert};
use super::{SqlStore, col, json_opt, parse_col, refused, sql_state, sql_states, to_json};
use crate::{
    AttemptResult, Dialect, FinishShard, Result, Run, RunShard, ShardDelivery, ShardFinishOutcome, ShardFreeze,
    ShardRetryBegin, ShardStore,
};

fn shard_row(r: &AnyRow) -> Result<RunShard> {
    Ok(RunShard {
        run_id: col(r, "run_id")?,
        shard_index: col(r, "shard_index")?,
        state: parse_col(r, "state")?,
        attempt: col(r, "attempt")?,
        executor_id: col(r, "executor_id")?,
        address: col(r, "address")?,
        reason: col(r, "reason")?,
        message: col(r, "message")?,
        output: json_opt(r, "output")?,
        next_attempt_at_ms: col(r, "next_attempt_at_ms")?,
        deadline_ms: col(r, "deadline_ms")?,
        started_at_ms: col(r, "started_at_ms")?,
        finished_at_ms: col(r, "finished_at_ms")?,
        updated_at_ms: col(r, "updated_at_ms")?,
    })
}

/// The `webhook-id` of a shard attempt: `msg_<run>_<shard>_<attempt>` (the protocol's form).
pub(crate) fn webhook_id(run_id: &str, shard_index: i64, attempt: i64) -> String {
    format!("msg_{run_id}_{shard_index}_{attempt}")
}

async fn lock_run(s: &SqlStore, tx: &mut Transaction<'static, Any>, run_id: &str) -> Result<Option<Run>> {
    sqlx::query(sqlx::AssertSqlSafe(format!("SELECT * FROM runs WHERE id = ?{}", s.lock_clause())))
        .bind(run_id)
        .fetch_optional(&mut **tx)
        .await?
        .as_ref()
        .map(run_row)
        .transpose()
}

async fn shards_of(tx: &mut Transaction<'static, Any>, run_id: &str) -> Result<Vec<RunShard>> {
    sqlx::query("SELECT * FROM run_shards WHERE run_id = ? ORDER BY shard_index")
        .bind(run_id)
        .fetch_all(&mut **tx)
        .await?
        .iter()
        .map(shard_row)
        .collect()
}

/// The stored webhook id of each shard's current attempt (the same on every redelivery).
async fn deliveries(
    tx: &mut Transaction<'static, Any>,
    run_id: &str,
    shards: Vec<RunShard>,
) -> Result<Vec<ShardDelivery>> {
    let ids: Vec<(i64, i64, String)> =
        sqlx::query("SELECT shard_index, attempt, webhook_id FROM attempts WHERE run_id = ?")
            .bind(run_id)
            .fetch_all(&mut **tx)
            .await?
            .iter()
            .map(|r| Ok((col(r, "shard_index")?, col(r, "attempt")?, col(r, "webhook_id")?)))
            .collect::<Result<_>>()?;
    Ok(shards
        .into_iter()
        .map(|shard| {
            let webhook_id = ids
                .iter()
                .find(|(i, a, _)| *i == shard.shard_index && *a == shard.attempt)
                .map(|(_, _, id)| id.clone())
                .unwrap_or_else(|| webhook_id(run_id, shard.shard_index, shard.attempt));
            ShardDelivery { shard, webhook_id }
        })
        .collect())
}

pub(super) async fn freeze(s: &SqlStore, p: &ShardFreeze) -> Result<Option<Vec<ShardDelivery>>> {
    let mut tx = s.begin().await?;
    let Some(run) = lock_run(s, &mut tx, &p.run_id).await? else {
        return Ok(None);
    };
    let ours = run.state == RunState::Dispatching
        && run.attempt == p.run_attempt
        && run.owner_node.as_deref() == Some(p.node_id.as_str())
        && run.lease_until_ms.is_some_and(|l| l >= p.now_ms);
    if !ours {
        return Ok(None);
    }
    let mut shards = shards_of(&mut tx, &run.id).await?;
    if shards.is_empty() {
        if p.targets.is_empty() {
            return Ok(Some(Vec::new()));
        }
        write_shard_set(s, &mut tx, &run, p).await?;
        shards = shards_of(&mut tx, &run.id).await?;
    } else {
        // A redelivery (the run's lease ran out and this node re-began the same attempt):
        // the frozen set stands; shards not yet answered get a fresh deadline.
        transition(RunState::Dispatching, &RunEvent::Redeliver).map_err(refused)?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE run_shards SET deadline_ms = ?, updated_at_ms = ? WHERE run_id = ? AND state = {}",
            sql_state(RunState::Dispatching)
        )))
        .bind(p.deadline_ms)
        .bind(p.now_ms)
        .bind(&run.id)
        .execute(&mut *tx)
        .await?;
        for sh in shards.iter_mut().filter(|sh| sh.state == RunState::Dispatching) {
            sh.deadline_ms = Some(p.deadline_ms);
            sh.updated_at_ms = p.now_ms;
        }
    }
    let out = deliveries(&mut tx, &run.id, shards).await?;
    tx.commit().await?;
    Ok(Some(out))
}

/// Freeze a sharded run's shard set: one shard per target, each with its first attempt's
/// row (shard 0's exists already, written by the dispatch), and the run's shard total.
async fn write_shard_set(s: &SqlStore, tx: &mut Transaction<'static, Any>, run: &Run, p: &ShardFreeze) -> Result<()> {
    // Shards are born `dispatching`: the run's Dispatch event, once per shard.
    let born = transition(RunState::Queued, &RunEvent::Dispatch).map_err(refused)?.to;
    let insert_attempt = match s.dialect {
        Dialect::MySql => "INSERT IGNORE",
        Dialect::Sqlite => "INSERT OR IGNORE",
    };
    let insert_attempt = format!(
        "{insert_attempt} INTO attempts (run_id, shard_index, attempt, webhook_id, executor_id, address, state, trail, started_at_ms) \
         VALUES (?, ?, ?, ?, ?, ?, {}, '[]', ?)",
        sql_state(born)
    );
    let insert_shard = format!(
        "INSERT INTO run_shards (run_id, shard_index, state, attempt, executor_id, address, deadline_ms, started_at_ms, updated_at_ms) \
         VALUES (?, ?, {}, ?, ?, ?, ?, ?, ?)",
        sql_state(born)
    );
    for (i, t) in p.targets.iter().enumerate() {
        let i = i as i64;
        sqlx::query(sqlx::AssertSqlSafe(insert_shard.as_str()))
            .bind(&run.id)
            .bind(i)
            .bind(run.attempt)
            .bind(&t.executor_id)
            .bind(&t.address)
            .bind(p.deadline_ms)
            .bind(p.now_ms)
            .bind(p.now_ms)
            .execute(&mut **tx)
            .await?;
        // Shard 0's first attempt row was written by the dispatch transaction, with
        // this same webhook id; it only learns its executor here.
        let inserted = sqlx::query(sqlx::AssertSqlSafe(insert_attempt.clone()))
            .bind(&run.id)
            .bind(i)
            .bind(run.attempt)
            .bind(webhook_id(&run.id, i, run.attempt))
            .bind(&t.executor_id)
            .bind(&t.address)
            .bind(p.now_ms)
            .execute(&mut **tx)
            .await?;
        if inserted.rows_affected() == 0 {
            sqlx::query(
                "UPDATE attempts SET executor_id = ?, address = ? WHERE run_id = ? AND shard_index = ? AND attempt = ?",
            )
            .bind(&t.executor_id)
            .bind(&t.address)
            .bind(&run.id)
            .bind(i)
            .bind(run.attempt)
            .execute(&mut **tx)
            .await?;
        }
    }
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE runs SET shard_total = ?, updated_at_ms = ? WHERE id = ? AND state = {} AND attempt = ?",
        sql_state(RunState::Dispatching)
    )))
    .bind(p.targets.len() as i64)
    .bind(p.now_ms)
    .bind(&run.id)
    .bind(run.attempt)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

pub(super) async fn list(s: &SqlStore, run_id: &str) -> Result<Vec<RunShard>> {
    sqlx::query("SELECT * FROM run_shards WHERE run_id = ? ORDER BY shard_index")
        .bind(run_id)
        .fetch_all(&s.pool)
        .await?
        .iter()
        .map(shard_row)
        .collect()
}

pub(super) async fn mark_running(
    s: &SqlStore,
    run_id: &str,
    shard_index: i64,
    attempt: i64,
    now_ms: i64,
) -> Result<bool> {
    let to = transition(RunState::Dispatching, &RunEvent::Accepted).map_err(refused)?.to;
    let mut tx = s.begin().await?;
    let r = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE run_shards SET state = ?, updated_at_ms = ? WHERE run_id = ? AND shard_index = ? AND attempt = ? AND state = {}",
        sql_state(RunState::Dispatching)
    )))
    .bind(to.as_str())
    .bind(now_ms)
    .bind(run_id)
    .bind(shard_index)
    .bind(attempt)
    .execute(&mut *tx)
    .await?;
    if r.rows_affected() > 0 {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE attempts SET state = ? WHERE run_id = ? AND shard_index = ? AND attempt = ? AND state = {}",
            sql_state(RunState::Dispatching)
        )))
        .bind(to.as_str())
        .bind(run_id)
        .bind(shard_index)
        .bind(attempt)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(r.rows_affected() > 0)
}

pub(super) async fn set_target(
    s: &SqlStore,
    run_id: &str,
    shard_index: i64,
    attempt: i64,
    executor_id: Option<&str>,
    address: Option<&str>,
    trail: &Value,
) -> Result<()> {
    let mut tx = s.begin().await?;
    sqlx::query(
        "UPDATE attempts SET executor_id = ?, address = ?, trail = ? WHERE run_id = ? AND shard_index = ? AND attempt = ?",
    )
    .bind(executor_id)
    .bind(address)
    .bind(to_json(trail))
    .bind(run_id)
    .bind(shard_index)
    .bind(attempt)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "UPDATE run_shards SET executor_id = ?, address = ? WHERE run_id = ? AND shard_index = ? AND attempt = ?",
    )
    .bind(executor_id)
    .bind(address)
    .bind(run_id)
    .bind(shard_index)
    .bind(attempt)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Make the `retrying` shards of a tenant's `running` sharded run due now. Returns shards changed.
pub(super) async fn retry_now(
    tx: &mut Transaction<'static, Any>,
    tenant_id: &str,
    run_id: &str,
    now_ms: i64,
) -> Result<u64> {
    let r = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE run_shards SET next_attempt_at_ms = ?, updated_at_ms = ? WHERE run_id = ? AND state = {} \
         AND run_id IN (SELECT id FROM runs WHERE id = ? AND tenant_id = ? AND state = {})",
        sql_state(RunState::Retrying),
        sql_state(RunState::Running)
    )))
    .bind(now_ms)
    .bind(now_ms)
    .bind(run_id)
    .bind(run_id)
    .bind(tenant_id)
    .execute(&mut **tx)
    .await?;
    Ok(r.rows_affected())
}

pub(super) async fn finish(s: &SqlStore, p: &FinishShard) -> Result<ShardFinishOutcome> {
    let mut tx = s.begin().await?;
    let Some(run) = lock_run(s, &mut tx, &p.run_id).await? else {
        return Ok(ShardFinishOutcome::NotFound);
    };
    let Some(shard) = sqlx::query("SELECT * FROM run_shards WHERE run_id = ? AND shard_index = ?")
        .bind(&p.run_id)
        .bind(p.shard_index)
        .fetch_optional(&mut *tx)
        .await?
        .as_ref()
        .map(shard_row)
        .transpose()?
    else {
        return Ok(ShardFinishOutcome::NotFound);
    };
    let (status, event) = match &p.result {
        AttemptResult::Succeeded => (RunState::Succeeded.as_str(), RunEvent::Succeeded),
        AttemptResult::Failed { reason, retry_at_ms } => {
            (RunState::Failed.as_str(), RunEvent::AttemptFailed { reason: *reason, retry: retry_at_ms.is_some() })
        }
    };
    let live = |st: RunState| matches!(st, RunState::Dispatching | RunState::Running);
    let current = shard.attempt == p.attempt && live(shard.state) && live(run.state);
    if !current {
        return stale_result(&mut tx, p, status, &shard).await;
    }
    let t = transition(shard.state, &event).map_err(refused)?;
    let (reason, retry_at) = match &p.result {
        AttemptResult::Succeeded => (None, None),
        AttemptResult::Failed { reason, retry_at_ms } => (Some(*reason), *retry_at_ms),
    };
    let finished = t.to.is_terminal().then_some(p.now_ms);
    let output = p.output.as_ref().map(to_json);
    let updated = sqlx::query(
        "UPDATE run_shards SET state = ?, reason = ?, message = ?, output = ?, next_attempt_at_ms = ?, finished_at_ms = ?, updated_at_ms = ? \
         WHERE run_id = ? AND shard_index = ? AND state = ? AND attempt = ?",
    )
    .bind(t.to.as_str())
    .bind(reason.map(|r| r.as_str()))
    .bind(&p.message)
    .bind(&output)
    .bind(retry_at)
    .bind(finished)
    .bind(p.now_ms)
    .bind(&p.run_id)
    .bind(p.shard_index)
    .bind(shard.state.as_str())
    .bind(shard.attempt)
    .execute(&mut *tx)
    .await?;
    if updated.rows_affected() == 0 {
        return Ok(ShardFinishOutcome::Conflict { state: shard.state, attempt: shard.attempt });
    }
    sqlx::query(
        "UPDATE attempts SET state = ?, reason = ?, message = ?, output = ?, finished_at_ms = ? \
         WHERE run_id = ? AND shard_index = ? AND attempt = ?",
    )
    .bind(status)
    .bind(reason.map(|r| r.as_str()))
    .bind(&p.message)
    .bind(&output)
    .bind(p.now_ms)
    .bind(&p.run_id)
    .bind(p.shard_index)
    .bind(p.attempt)
    .execute(&mut *tx)
    .await?;
    let shard = RunShard {
        state: t.to,
        reason: reason.map(|r| r.as_str().to_string()),
        message: p.message.clone(),
        output: p.output.clone(),
        next_attempt_at_ms: retry_at,
        finished_at_ms: finished,
        updated_at_ms: p.now_ms,
        ..shard
    };
    let mut run = run;
    let children = run_follows_shard(s, &mut tx, &mut run, p, t.to, reason).await?;
    tx.commit().await?;
    if run.state.is_terminal() {
        run.owner_node = None;
        run.lease_until_ms = None;
        run.updated_at_ms = p.now_ms;
    }
    Ok(ShardFinishOutcome::Applied { run, shard, children })
}

/// A shard result that is not for the shard's current attempt in flight: a duplicate of the
/// one recorded, or a conflict.
async fn stale_result(
    tx: &mut Transaction<'static, Any>,
    p: &FinishShard,
    status: &str,
    shard: &RunShard,
) -> Result<ShardFinishOutcome> {
    let prior = sqlx::query("SELECT state, output FROM attempts WHERE run_id = ? AND shard_index = ? AND attempt = ?")
        .bind(&p.run_id)
        .bind(p.shard_index)
        .bind(p.attempt)
        .fetch_optional(&mut **tx)
        .await?;
    if let Some(prior) = prior {
        let state: String = col(&prior, "state")?;
        if state == status && json_opt(&prior, "output")? == p.output {
            return Ok(ShardFinishOutcome::Duplicate);
        }
    }
    Ok(ShardFinishOutcome::Conflict { state: shard.state, attempt: shard.attempt })
}

/// The sharded run follows a shard that ended (`shard_to`): it succeeds when every shard
/// has, with their outputs in index order; it fails when one shard failed for good, and the
/// shards still out are cancelled. Returns the child runs its end fired.
async fn run_follows_shard(
    s: &SqlStore,
    tx: &mut Transaction<'static, Any>,
    run: &mut Run,
    p: &FinishShard,
    shard_to: RunState,
    reason: Option<sundial_core::run_state::FailReason>,
) -> Result<Vec<Run>> {
    let mut children = Vec::new();
    match shard_to {
        RunState::Succeeded => {
            let all = shards_of(tx, &run.id).await?;
            let total = run.shard_total.unwrap_or(all.len() as i64);
            let done = all.iter().filter(|sh| sh.state == RunState::Succeeded).count() as i64;
            if done == total && all.len() as i64 == total {
                // Every shard succeeded: so did the run. Its output is the shards' outputs in index order.
                let output = Value::Array(all.iter().map(|sh| sh.output.clone().unwrap_or(Value::Null)).collect());
                let rt = transition(run.state, &RunEvent::Succeeded).map_err(refused)?;
                if end_run(tx, run, rt.to, None, None, Some(&output), p.now_ms).await? {
                    run.state = rt.to;
                    run.output = Some(output);
                    run.reason = None;
                    run.message = None;
                    run.finished_at_ms = Some(p.now_ms);
                    children = chains::run_ended(tx, s.dialect, run, None, p.now_ms).await?;
                }
            }
        }
        RunState::Failed => {
            // One shard failed for good: so did the run; the shards still out are cancelled.
            let reason = reason.unwrap_or(sundial_core::run_state::FailReason::Error);
            let rt = transition(run.state, &RunEvent::AttemptFailed { reason, retry: false }).map_err(refused)?;
            let message =
                format!("shard {} failed for good: {}", p.shard_index, p.message.as_deref().unwrap_or(reason.as_str()));
            if end_run(tx, run, rt.to, Some(reason.as_str()), Some(&message), None, p.now_ms).await? {
                cancel_open(tx, &run.id, &format!("the run failed: shard {} failed for good", p.shard_index), p.now_ms)
                    .await?;
                run.state = rt.to;
                run.reason = Some(reason.as_str().to_string());
                run.message = Some(message);
                run.finished_at_ms = Some(p.now_ms);
                run.output = None;
                children = chains::run_ended(tx, s.dialect, run, None, p.now_ms).await?;
            }
        }
        _ => {} // retrying: the shard waits out its backoff; the run stays where it is
    }
    Ok(children)
}

/// Move a sharded run to its terminal state, conditional on the state and attempt it was read in.
async fn end_run(
    tx: &mut Transaction<'static, Any>,
    run: &Run,
    to: RunState,
    reason: Option<&str>,
    message: Option<&str>,
    output: Option<&Value>,
    now_ms: i64,
) -> Result<bool> {
    let r = sqlx::query(
        "UPDATE runs SET state = ?, reason = ?, message = ?, output = ?, next_attempt_at_ms = NULL, finished_at_ms = ?, \
         owner_node = NULL, lease_until_ms = NULL, updated_at_ms = ? WHERE id = ? AND state = ? AND attempt = ?",
    )
    .bind(to.as_str())
    .bind(reason)
    .bind(message)
    .bind(output.map(to_json))
    .bind(now_ms)
    .bind(now_ms)
    .bind(&run.id)
    .bind(run.state.as_str())
    .bind(run.attempt)
    .execute(&mut **tx)
    .await?;
    Ok(r.rows_affected() > 0)
}

pub(super) async fn run_delivered(s: &SqlStore, run_id: &str, run_attempt: i64, now_ms: i64) -> Result<bool> {
    let to = transition(RunState::Dispatching, &RunEvent::Accepted).map_err(refused)?.to;
    let r = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE runs SET state = ?, updated_at_ms = ? WHERE id = ? AND state = {} AND attempt = ? AND shard_total IS NOT NULL",
        sql_state(RunState::Dispatching)
    )))
    .bind(to.as_str())
    .bind(now_ms)
    .bind(run_id)
    .bind(run_attempt)
    .execute(&s.pool)
    .await?;
    Ok(r.rows_affected() > 0)
}

/// Shards selected by `sql` (binding `at_ms` and `limit`), each with its run.
/// Shards found by `sql` (binds: `at_ms`, then the bucket mask if given, then `limit`), with their runs.
async fn with_runs(
    s: &SqlStore,
    sql: String,
    at_ms: i64,
    buckets: Option<u64>,
    limit: i64,
) -> Result<Vec<(Run, RunShard)>> {
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(at_ms);
    if let Some(mask) = buckets {
        q = q.bind(mask as i64);
    }
    let shards: Vec<RunShard> = q.bind(limit).fetch_all(&s.pool).await?.iter().map(shard_row).collect::<Result<_>>()?;
    let mut out = Vec::with_capacity(shards.len());
    for shard in shards {
        let run = sqlx::query("SELECT * FROM runs WHERE id = ?")
            .bind(&shard.run_id)
            .fetch_optional(&s.pool)
            .await?
            .as_ref()
            .map(run_row)
            .transpose()?;
        if let Some(run) = run {
            out.push((run, shard));
        }
    }
    Ok(out)
}

pub(super) async fn due_retries(s: &SqlStore, now_ms: i64, limit: i64) -> Result<Vec<(Run, RunShard)>> {
    with_runs(
        s,
        format!(
            "SELECT s.* FROM run_shards s JOIN runs r ON r.id = s.run_id \
             WHERE s.state = {} AND s.next_attempt_at_ms <= ? AND r.state = {} \
             ORDER BY s.next_attempt_at_ms LIMIT ?",
            sql_state(RunState::Retrying),
            sql_state(RunState::Running)
        ),
        now_ms,
        None,
        limit,
    )
    .await
}

pub(super) async fn retry_begin(s: &SqlStore, p: &ShardRetryBegin) -> Result<Option<ShardDelivery>> {
    let to = transition(RunState::Retrying, &RunEvent::Dispatch).map_err(refused)?.to;
    let mut tx = s.begin().await?;
    let Some(run) = lock_run(s, &mut tx, &p.run_id).await? else {
        return Ok(None);
    };
    if run.state != RunState::Running {
        return Ok(None);
    }
    let attempt = p.attempt + 1;
    let (executor_id, address) = match &p.target {
        Some(t) => (Some(t.executor_id.as_str()), Some(t.address.as_str())),
        None => (None, None),
    };
    let won = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE run_shards SET state = ?, attempt = ?, executor_id = ?, address = ?, reason = NULL, message = NULL, output = NULL, \
         next_attempt_at_ms = NULL, deadline_ms = ?, updated_at_ms = ? \
         WHERE run_id = ? AND shard_index = ? AND state = {} AND attempt = ? AND next_attempt_at_ms <= ?",
        sql_state(RunState::Retrying)
    )))
    .bind(to.as_str())
    .bind(attempt)
    .bind(executor_id)
    .bind(address)
    .bind(p.deadline_ms)
    .bind(p.now_ms)
    .bind(&p.run_id)
    .bind(p.shard_index)
    .bind(p.attempt)
    .bind(p.now_ms)
    .execute(&mut *tx)
    .await?;
    if won.rows_affected() == 0 {
        return Ok(None);
    }
    let webhook_id = webhook_id(&p.run_id, p.shard_index, attempt);
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO attempts (run_id, shard_index, attempt, webhook_id, executor_id, address, state, trail, started_at_ms) \
         VALUES (?, ?, ?, ?, ?, ?, {}, '[]', ?)",
        sql_state(to)
    )))
    .bind(&p.run_id)
    .bind(p.shard_index)
    .bind(attempt)
    .bind(&webhook_id)
    .bind(executor_id)
    .bind(address)
    .bind(p.now_ms)
    .execute(&mut *tx)
    .await?;
    let shard = sqlx::query("SELECT * FROM run_shards WHERE run_id = ? AND shard_index = ?")
        .bind(&p.run_id)
        .bind(p.shard_index)
        .fetch_one(&mut *tx)
        .await
        .map_err(crate::StoreError::from)
        .and_then(|r| shard_row(&r))?;
    tx.commit().await?;
    Ok(Some(ShardDelivery { shard, webhook_id }))
}

pub(super) async fn overdue(s: &SqlStore, before_ms: i64, buckets: u64, limit: i64) -> Result<Vec<(Run, RunShard)>> {
    // Shards of a run still `dispatching` are covered by the run's lease (a redelivery).
    with_runs(
        s,
        format!(
            "SELECT s.* FROM run_shards s JOIN runs r ON r.id = s.run_id \
             WHERE s.state IN ({}) AND s.deadline_ms < ? AND r.state = {} \
             AND ((? >> r.bucket) & 1) = 1 ORDER BY s.deadline_ms, s.run_id, s.shard_index LIMIT ?",
            sql_states(&[RunState::Dispatching, RunState::Running]),
            sql_state(RunState::Running)
        ),
        before_ms,
        Some(buckets),
        limit,
    )
    .await
}

pub(super) async fn on_silent_executors(
    s: &SqlStore,
    silent_before_ms: i64,
    buckets: u64,
    limit: i64,
) -> Result<Vec<(Run, RunShard)>> {
    with_runs(
        s,
        format!(
            "SELECT s.* FROM run_shards s JOIN runs r ON r.id = s.run_id JOIN executors e ON e.id = s.executor_id \
             WHERE s.state = {running} AND r.state = {running} AND e.last_heartbeat_ms < ? AND ((? >> r.bucket) & 1) = 1 LIMIT ?",
            running = sql_state(RunState::Running)
        ),
        silent_before_ms,
        Some(buckets),
        limit,
    )
    .await
}

pub(super) async fn log_append(
    s: &SqlStore,
    run_id: &str,
    shard_index: i64,
    attempt: i64,
    lines: &[(i64, String, String)],
) -> Result<()> {
    let mut tx = s.begin().await?;
    log_insert(&mut tx, run_id, shard_index, attempt, lines).await?;
    tx.commit().await?;
    Ok(())
}

#[async_trait]
impl ShardStore for SqlStore {
    async fn shard_freeze(&self, p: &ShardFreeze) -> Result<Option<Vec<ShardDelivery>>> {
        freeze(self, p).await
    }
    async fn shard_list(&self, run_id: &str) -> Result<Vec<RunShard>> {
        list(self, run_id).await
    }
    async fn shard_mark_running(&self, run_id: &str, shard_index: i64, attempt: i64, now_ms: i64) -> Result<bool> {
        mark_running(self, run_id, shard_index, attempt, now_ms).await
    }
    async fn shard_attempt_set_target(
        &self,
        run_id: &str,
        shard_index: i64,
        attempt: i64,
        executor_id: Option<&str>,
        address: Option<&str>,
        trail: &Value,
    ) -> Result<()> {
        set_target(self, run_id, shard_index, attempt, executor_id, address, trail).await
    }
    async fn shard_finish(&self, p: &FinishShard) -> Result<ShardFinishOutcome> {
        finish(self, p).await
    }
    async fn shard_run_delivered(&self, run_id: &str, run_attempt: i64, now_ms: i64) -> Result<bool> {
        run_delivered(self, run_id, run_attempt, now_ms).await
    }
    async fn shard_due_retries(&self, now_ms: i64, limit: i64) -> Result<Vec<(Run, RunShard)>> {
        due_retries(self, now_ms, limit).await
    }
    async fn shard_retry_begin(&self, p: &ShardRetryBegin) -> Result<Option<ShardDelivery>> {
        retry_begin(self, p).await
    }
    async fn shard_overdue(&self, before_ms: i64, buckets: u64, limit: i64) -> Result<Vec<(Run, RunShard)>> {
        overdue(self, before_ms, buckets, limit).await
    }
    async fn shard_on_silent_executors(
        &self,
        silent_before_ms: i64,
        buckets: u64,
        limit: i64,
    ) -> Result<Vec<(Run, RunShard)>> {
        on_silent_executors(self, silent_before_ms, buckets, limit).await
    }
    async fn shard_log_append(
        &self,
        run_id: &str,
        shard_index: i64,
        attempt: i64,
        lines: &[(i64, String, String)],
    ) -> Result<()> {
        log_append(self, run_id, shard_index, attempt, lines).await
    }
}
