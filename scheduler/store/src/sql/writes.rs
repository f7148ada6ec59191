//! Writes shared by several modules: inserting runs (one, many, a child in its chain),
//! ending a run through the state machine, cancelling a sharded run's open shards, log
//! lines, and the states a claim and a hand-back write. Imports only the helpers of
//! `sql/mod.rs`, so the modules that end runs (`runs`, `runs/batch`, `shards`, `chains`) and
//! the others can all use it without an import cycle.

use sqlx::{Any, Transaction};
use sundial_core::run_state::{RunEvent, transition};
use sundial_core::types::{RunState, TriggerKind};

use super::{moved_to, placeholders, pow2_chunks, refused, sql_state, sql_states, to_json};
use crate::{Dialect, Result, Run};

/// The state change a claim makes to a fresh fire, from the state machine: (`pending`, its claimed state).
pub(super) fn claim_states() -> Result<(&'static str, &'static str)> {
    let to = transition(RunState::Pending, &RunEvent::Claim).map_err(refused)?.to;
    Ok((RunState::Pending.as_str(), to.as_str()))
}

/// The state change a hand-back makes to a claimed fire, from the state machine: (`queued`, `pending`).
pub(super) fn release_states() -> Result<(&'static str, &'static str)> {
    let to = transition(RunState::Queued, &RunEvent::Release).map_err(refused)?.to;
    Ok((RunState::Queued.as_str(), to.as_str()))
}

/// Insert runs unless their (job, fire key) exists, in multi-row statements; returns how many were inserted.
pub(super) async fn insert_runs<R: std::borrow::Borrow<Run>>(
    tx: &mut Transaction<'static, Any>,
    dialect: Dialect,
    runs: &[R],
) -> Result<usize> {
    let verb = match dialect {
        Dialect::MySql => "INSERT IGNORE",
        Dialect::Sqlite => "INSERT OR IGNORE",
    };
    let row = format!("({})", placeholders(26));
    let mut inserted = 0;
    let mut rest = runs;
    for size in pow2_chunks(runs.len()) {
        let (chunk, tail) = rest.split_at(size);
        rest = tail;
        let sql = format!(
            "{verb} INTO runs (id, tenant_id, job_id, fire_key, trigger_kind, scheduled_at_ms, state, attempt, shard_total, params, \
             parent_run_id, parent_output, job_version, owner_node, lease_until_ms, deadline_ms, next_attempt_at_ms, reason, message, \
             output, expired_count, created_at_ms, updated_at_ms, started_at_ms, finished_at_ms, bucket) VALUES {}",
            vec![row.as_str(); size].join(", ")
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
        for r in chunk {
            let r: &Run = r.borrow();
            q = q
                .bind(&r.id)
                .bind(&r.tenant_id)
                .bind(&r.job_id)
                .bind(&r.fire_key)
                .bind(r.trigger.as_str())
                .bind(r.scheduled_at_ms)
                .bind(r.state.as_str())
                .bind(r.attempt)
                .bind(r.shard_total)
                .bind(r.params.as_ref().map(to_json))
                .bind(&r.parent_run_id)
                .bind(r.parent_output.as_ref().map(to_json))
                .bind(r.job_version)
                .bind(&r.owner_node)
                .bind(r.lease_until_ms)
                .bind(r.deadline_ms)
                .bind(r.next_attempt_at_ms)
                .bind(&r.reason)
                .bind(&r.message)
                .bind(r.output.as_ref().map(to_json))
                .bind(r.expired_count)
                .bind(r.created_at_ms)
                .bind(r.updated_at_ms)
                .bind(r.started_at_ms)
                .bind(r.finished_at_ms)
                // Job affinity: derived from the job id, never stored on `Run` (it cannot disagree).
                .bind(sundial_core::affinity::bucket_of(&r.job_id));
        }
        inserted += q.execute(&mut **tx).await?.rows_affected() as usize;
    }
    Ok(inserted)
}

/// Insert a run unless its (job, fire key) exists; true if inserted.
pub(super) async fn insert_run(tx: &mut Transaction<'static, Any>, dialect: Dialect, r: &Run) -> Result<bool> {
    Ok(insert_runs(tx, dialect, std::slice::from_ref(r)).await? > 0)
}

/// A run fired by `parent` (whose output it carries), in `parent`'s chain: inserted once per
/// child job and parent run (`p:<parent run id>`), and listed in the chain. False if it was
/// already there.
pub(super) async fn insert_child_run(
    tx: &mut Transaction<'static, Any>,
    dialect: Dialect,
    parent: &Run,
    child_job_id: &str,
    output: Option<serde_json::Value>,
    now_ms: i64,
) -> Result<Option<Run>> {
    let mut child = Run::pending(
        &parent.tenant_id,
        child_job_id,
        0,
        format!("p:{}", parent.id),
        TriggerKind::Parent,
        now_ms,
        now_ms,
    );
    child.parent_run_id = Some(parent.id.clone());
    child.parent_output = output;
    child.chain_id = Some(parent.chain().to_string());
    // The chain's params flow down: a root's are those it was triggered with, a child's its parent's.
    child.params = parent.params.clone();
    if !insert_run(tx, dialect, &child).await? {
        return Ok(None);
    }
    list_in_chain(tx, &child).await?;
    Ok(Some(child))
}

/// A child run just inserted joins its chain: the hot path's insert leaves `chain_id` and
/// `parents` out (almost every run is a root), so they are set here, and the run is listed in
/// `chain_runs`.
pub(super) async fn list_in_chain(tx: &mut Transaction<'static, Any>, run: &Run) -> Result<()> {
    sqlx::query("UPDATE runs SET chain_id = ?, parents = ? WHERE id = ?")
        .bind(&run.chain_id)
        .bind(run.parents.as_ref().map(to_json))
        .bind(&run.id)
        .execute(&mut **tx)
        .await?;
    sqlx::query("INSERT INTO chain_runs (run_id, chain_id, tenant_id) VALUES (?, ?, ?)")
        .bind(&run.id)
        .bind(&run.chain_id)
        .bind(&run.tenant_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The `webhook-id` of an attempt of a run that is not sharded (stable across its redeliveries).
pub(super) fn webhook_id_of(run_id: &str, attempt: i64) -> String {
    format!("msg_{run_id}_0_{attempt}")
}

/// Move a run to a terminal state through the state machine, conditional on the
/// state it was read in; the current attempt follows. False if refused or raced.
pub(super) async fn set_terminal(
    tx: &mut Transaction<'static, Any>,
    run: &Run,
    event: RunEvent,
    message: &str,
    now_ms: i64,
) -> Result<bool> {
    let Ok(t) = transition(run.state, &event) else {
        return Ok(false);
    };
    let r = sqlx::query(
        "UPDATE runs SET state = ?, message = ?, finished_at_ms = ?, updated_at_ms = ?, owner_node = NULL, lease_until_ms = NULL, \
         next_attempt_at_ms = NULL WHERE id = ? AND state = ? AND attempt = ?",
    )
    .bind(t.to.as_str())
    .bind(message)
    .bind(now_ms)
    .bind(now_ms)
    .bind(&run.id)
    .bind(run.state.as_str())
    .bind(run.attempt)
    .execute(&mut **tx)
    .await?;
    if r.rows_affected() == 0 {
        return Ok(false);
    }
    let closed = sqlx::query(
        "UPDATE attempts SET state = ?, message = ?, finished_at_ms = ? WHERE run_id = ? AND attempt = ? AND finished_at_ms IS NULL",
    )
    .bind(t.to.as_str())
    .bind(message)
    .bind(now_ms)
    .bind(&run.id)
    .bind(run.attempt)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    // An attempt in flight has a row only once it was accepted or ended: written here, ended.
    if closed == 0 && run.shard_total.is_none() && matches!(run.state, RunState::Dispatching | RunState::Running) {
        let stored: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM attempts WHERE run_id = ? AND shard_index = 0 AND attempt = ?")
                .bind(&run.id)
                .bind(run.attempt)
                .fetch_one(&mut **tx)
                .await?;
        if stored == 0 {
            sqlx::query(
                "INSERT INTO attempts (run_id, shard_index, attempt, webhook_id, state, message, trail, started_at_ms, finished_at_ms) \
                 VALUES (?, 0, ?, ?, ?, ?, '[]', ?, ?)",
            )
            .bind(&run.id)
            .bind(run.attempt)
            .bind(webhook_id_of(&run.id, run.attempt))
            .bind(t.to.as_str())
            .bind(message)
            .bind(run.updated_at_ms)
            .bind(now_ms)
            .execute(&mut **tx)
            .await?;
        }
    }
    if run.shard_total.is_some() {
        cancel_open(tx, &run.id, message, now_ms).await?;
    }
    Ok(true)
}

/// Cancel the shards of a run still in flight or waiting to retry, and close their
/// open attempts. Called in the transaction that ends the run (a cancel, cover_early,
/// a deleted job, a shard failed for good). Returns the shards cancelled.
pub(super) async fn cancel_open(
    tx: &mut Transaction<'static, Any>,
    run_id: &str,
    message: &str,
    now_ms: i64,
) -> Result<u64> {
    let open = [RunState::Dispatching, RunState::Running, RunState::Retrying];
    let cancelled = moved_to(&open, &RunEvent::Cancel)?;
    let r = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE run_shards SET state = {}, message = ?, next_attempt_at_ms = NULL, finished_at_ms = ?, updated_at_ms = ? \
         WHERE run_id = ? AND state IN ({})",
        sql_state(cancelled),
        sql_states(&open)
    )))
    .bind(message)
    .bind(now_ms)
    .bind(now_ms)
    .bind(run_id)
    .execute(&mut **tx)
    .await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE attempts SET state = {}, message = ?, finished_at_ms = ? WHERE run_id = ? AND finished_at_ms IS NULL",
        sql_state(cancelled)
    )))
    .bind(message)
    .bind(now_ms)
    .bind(run_id)
    .execute(&mut **tx)
    .await?;
    Ok(r.rows_affected())
}

/// Insert log lines of one shard attempt (`log_append`, and `log_append_within` after its quota check).
pub(super) async fn log_insert(
    tx: &mut Transaction<'static, Any>,
    run_id: &str,
    shard_index: i64,
    attempt: i64,
    lines: &[(i64, String, String)],
) -> Result<()> {
    for (at, level, message) in lines {
        sqlx::query(
            "INSERT INTO run_logs (run_id, shard_index, attempt, at_ms, level, message) VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(run_id)
        .bind(shard_index)
        .bind(attempt)
        .bind(*at)
        .bind(level)
        .bind(message)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
