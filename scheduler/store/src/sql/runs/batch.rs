//! The hot path in batches: many attempts' results, many jobs' generated runs (the
//! dispatch batch is `dispatch.rs`) — each batch one transaction and one durable
//! commit (group commit), with the same per-run rules as one run alone.

use std::collections::{HashMap, HashSet};

use serde_json::Value;
use sqlx::{Any, Transaction};
use sundial_core::run_state::{RunEvent, transition};
use sundial_core::types::RunState;

use crate::sql::chains;
use crate::sql::rows::run_row;
use crate::sql::writes::{insert_runs, webhook_id_of};
use crate::sql::{
    IDS, IN_CHUNK, Ix, SqlStore, col, distinct, fetch_in, in_list, in_width, json_opt, placeholders, pow2_chunks,
    refused, sorted, sql_states, to_json,
};
use crate::{AttemptResult, Dialect, FinishAttempt, FinishOutcome, GenerateJob, Result, Run, StoreError};

impl SqlStore {
    /// Lock and read runs by id (MySQL `FOR UPDATE`; SQLite holds the write lock already).
    pub(super) async fn lock_runs(
        &self,
        tx: &mut Transaction<'static, Any>,
        ids: &[&str],
    ) -> Result<HashMap<String, Run>> {
        let sql = format!("SELECT * FROM runs{} WHERE id IN ({}){}", self.hint(Ix::Primary), IDS, self.lock_clause());
        let mut out = HashMap::new();
        for row in fetch_in(tx, &sql, ids).await? {
            let run = run_row(&row)?;
            out.insert(run.id.clone(), run);
        }
        Ok(out)
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
pub(super) fn groups<W, K: PartialEq>(writes: &[W], key: impl Fn(&W) -> K) -> Vec<Vec<&W>> {
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
