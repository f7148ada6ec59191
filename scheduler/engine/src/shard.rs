//! The `sharding` route: one run broadcast to every online executor serving the
//! handler, one shard each, every shard with its own attempts and retries.
//!
//! - **Freeze, then send.** After the dispatch transaction (`run_dispatch_begin`), the
//!   shard set is frozen in one committed transaction (`shard_freeze`): N shards for the
//!   N eligible executors, each `dispatching` with an attempt row and a stable
//!   `webhook-id`, and `shard_total = N`. Only then are the shards POSTed, concurrently.
//!   A redelivery of the run (its lease ran out) finds the frozen set and re-sends the
//!   shards still `dispatching` with the same webhook ids. When every shard was sent,
//!   the run is `running`.
//! - **Each shard retries on its own**, with the job's failure policy counted in that
//!   shard's attempts: a failed shard is `retrying` until its `next_attempt_at_ms`; the
//!   shard-retry service ([`crate::Engine::shard_retry_once`], `shard_retry.rs`) starts its next attempt with a
//!   conditional update (one node wins), commits, then sends it to the shard's executor
//!   if still eligible, else to another eligible one.
//! - **The run follows its shards** (in the store's `shard_finish`): `succeeded` when all
//!   have, `failed` as soon as one failed for good (its open shards are cancelled, and
//!   their executors get a best-effort signed cancel).
//! - **Timeouts and lost executors** are reaped per shard ([`crate::Engine::reap_once`], `reaper.rs`).

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use sundial_core::dispatch::deadline_ms;
use sundial_core::route::{Candidate, TrailEntry, outcome};
use sundial_core::run_state::FailReason;
use sundial_core::time::rfc3339_utc;
use sundial_core::types::{ExecutorState, JobState, Route, RunState};
use sundial_store::{
    App, AttemptResult, FinishShard, Job, Run, ShardDelivery, ShardFinishOutcome, ShardFreeze, ShardTarget, Store,
};
use tokio::task::JoinSet;

use crate::cancel::CancelTarget;
use crate::outcome::finish_attempt;
use crate::transport::{Answer, ExecutorResult, is_registered, read_answer, shard_delivery_body};
use crate::work::Work;
use sundial_core::failure::retry_delay_ms;
use sundial_core::protocol::ScriptRef;

/// What [`shard_plan`] decides: the app, the eligible executors, the trail, and a
/// script job's script version.
type ShardPlan = (Option<App>, Vec<Candidate>, Vec<TrailEntry>, Option<ScriptRef>);
use crate::bulkhead::Bulkheads;
use crate::shared::Shared;
use crate::{Counters, Result, work};

const NO_EXECUTOR: &str = "no online executor serves this handler";

/// Record how a shard attempt ended, applying the job's failure policy to that shard.
/// A shard's n-th attempt is `attempt - run.attempt + 1` (its first attempt carries the
/// run's attempt number), so every shard gets the job's whole retry budget.
pub async fn finish_shard(
    store: &dyn Store,
    job: &Job,
    run: &Run,
    shard_index: i64,
    attempt: i64,
    result: ExecutorResult,
    now_ms: i64,
) -> sundial_store::Result<ShardFinishOutcome> {
    let kind = if result.succeeded {
        AttemptResult::Succeeded
    } else {
        let unit: f64 = rand::rng().random();
        let nth = (attempt - run.attempt + 1).max(1);
        AttemptResult::Failed {
            reason: result.reason,
            retry_at_ms: retry_delay_ms(&job.failure, nth, unit).filter(|_| result.retry).map(|d| now_ms + d),
        }
    };
    let p = FinishShard {
        run_id: run.id.clone(),
        shard_index,
        attempt,
        result: kind,
        output: result.output,
        message: result.message,
        now_ms,
    };
    let outcome = crate::retry_deadlock(|| store.shard_finish(&p)).await?;
    if let ShardFinishOutcome::Applied { run, shard, children } = &outcome {
        tracing::info!(run_id = %run.id, shard = shard.shard_index, attempt, shard_state = %shard.state,
            run_state = %run.state, children = children.len(), "shard attempt finished");
    }
    Ok(outcome)
}

pub(crate) fn target_of(c: &Candidate) -> ShardTarget {
    ShardTarget { executor_id: c.id.clone(), address: c.address.clone() }
}

/// The executors a route passed over (offline, lacking the handler): the start of every shard's trail.
pub(crate) fn passed_over(trail: &[TrailEntry]) -> Vec<TrailEntry> {
    trail.iter().filter(|t| t.outcome != outcome::CHOSEN).cloned().collect()
}

/// What sending one shard attempt came to.
pub(crate) struct Sent {
    retired: bool,
}

/// The app, its candidates, and the sharding plan (eligible executors and trail) now;
/// for a script job, the script version the shards run (recorded on the run).
pub(crate) async fn shard_plan(node: &Shared, run: &Run, job: &Job) -> Result<ShardPlan> {
    let now = node.now_ms();
    let app = node.store.app_by_id(&job.app_id).await?;
    let Some(a) = &app else {
        return Ok((None, Vec::new(), Vec::new(), None));
    };
    let work = work::work_of(node, run, job).await?;
    let handler = work.handler(job);
    let script = match work {
        Work::Script(s) => Some(s),
        Work::ScriptGone(msg) => {
            tracing::warn!(run_id = %run.id, "{msg}");
            return Ok((app, Vec::new(), Vec::new(), None));
        }
        Work::Handler => None,
    };
    let executors = node.store.executor_list(&a.id).await?;
    let cands = work::candidates_for(node, job, a, &executors, now);
    Ok(match node.fire.routes.lock().await.plan(Route::Sharding, handler.as_deref(), &job.id, &cands) {
        Ok(plan) => (app, plan.targets, plan.trail, script),
        Err(no) => (app, Vec::new(), no.trail, script),
    })
}

/// The sharding route's delivery of a run `run_dispatch_begin` just moved to
/// `dispatching` (first dispatch or redelivery): freeze the shard set, then send.
pub(crate) async fn dispatch_sharded(node: &Arc<Shared>, run: Run, job: Job) -> Result<()> {
    let now = node.now_ms();
    let (app, eligible, trail, script) = shard_plan(node, &run, &job).await?;
    let freeze = ShardFreeze {
        run_id: run.id.clone(),
        run_attempt: run.attempt,
        node_id: node.cfg.node_id.clone(),
        targets: eligible.iter().map(target_of).collect(),
        deadline_ms: run.deadline_ms.unwrap_or(deadline_ms(now, job.timeout_ms)),
        now_ms: now,
    };
    let Some(shards) = crate::retry_deadlock(|| node.store.shard_freeze(&freeze)).await? else {
        return Ok(()); // not ours any more
    };
    if shards.is_empty() {
        // No executor at all: the run's attempt fails as any route's would; the
        // failure policy applies to the run, and a later attempt freezes the set anew.
        let trail = serde_json::to_value(&trail).expect("JSON");
        node.store.attempt_set_target(&run.id, run.attempt, None, None, &trail).await?;
        let result = ExecutorResult {
            retry: true,
            succeeded: false,
            reason: FailReason::NoExecutor,
            output: None,
            message: Some(NO_EXECUTOR.into()),
        };
        finish_attempt(node.store.as_ref(), &job, &run.id, run.attempt, result, node.now_ms()).await?;
        return Ok(());
    }
    let total = shards.len() as i64;
    let passed = passed_over(&trail);
    let (run, job) = (Arc::new(run), Arc::new(job));
    let app = app.map(Arc::new);
    let mut set = JoinSet::new();
    for d in shards.into_iter().filter(|d| d.shard.state == RunState::Dispatching) {
        let (e, run, job, app, trail) = (node.clone(), run.clone(), job.clone(), app.clone(), passed.clone());
        let script = script.clone();
        set.spawn(async move {
            let r = send_shard(&e, &run, &job, (app.as_deref(), script.as_ref()), total, &d, trail).await;
            (d.shard.shard_index, r)
        });
    }
    let (mut sent, mut retired) = (0, 0);
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok((_, Ok(s))) => {
                sent += 1;
                retired += s.retired as usize;
            }
            Ok((shard, Err(err))) => {
                tracing::warn!(run_id = %run.id, shard, error = %err, "shard delivery not recorded; its deadline or the run's lease brings it back")
            }
            Err(err) => tracing::warn!(run_id = %run.id, error = %err, "shard delivery task failed"),
        }
    }
    if sent > 0 && retired == sent {
        node.store.job_set_state(&job.tenant_id, &job.id, JobState::Stopped, node.now_ms()).await?;
        tracing::warn!(job_id = %job.id, "every executor retired the handler; job stopped");
    }
    crate::retry_deadlock(|| node.store.shard_run_delivered(&run.id, run.attempt, node.now_ms())).await?;
    Ok(())
}

/// Send one committed shard attempt, record its trail and what the answer means.
// Over 100 lines on purpose: like `delivery.rs`'s `deliver`, one attempt read top to
// bottom (its share and slot, the POST, the answer's meaning, its trail).
pub(crate) async fn send_shard(
    node: &Shared,
    run: &Run,
    job: &Job,
    (app, script): (Option<&App>, Option<&ScriptRef>),
    total: i64,
    d: &ShardDelivery,
    mut trail: Vec<TrailEntry>,
) -> Result<Sent> {
    let shard = &d.shard;
    let target = match (app, &shard.executor_id, &shard.address) {
        (Some(app), Some(id), Some(address)) => Some((app, id.as_str(), address.as_str())),
        _ => None,
    };
    let Some((app, exec_id, address)) = target else {
        let trail = serde_json::to_value(&trail).expect("JSON");
        node.store.shard_attempt_set_target(&run.id, shard.shard_index, shard.attempt, None, None, &trail).await?;
        let result = ExecutorResult {
            retry: true,
            succeeded: false,
            reason: FailReason::NoExecutor,
            output: None,
            message: Some(NO_EXECUTOR.into()),
        };
        after_finish(node, job, run, shard.shard_index, shard.attempt, result).await?;
        return Ok(Sent { retired: false });
    };
    let entry = |outcome: &str| TrailEntry {
        executor_id: exec_id.to_string(),
        address: address.to_string(),
        outcome: outcome.to_string(),
    };
    trail.push(entry(outcome::CHOSEN));
    let mut body = shard_delivery_body(run, job, shard.attempt, shard.shard_index, total);
    body.script = script.cloned();
    let body = serde_json::to_vec(&body).expect("JSON");
    let headers = [
        ("sundial-run-id", run.id.clone()),
        ("sundial-attempt", shard.attempt.to_string()),
        ("sundial-scheduled-at", rfc3339_utc(run.scheduled_at_ms)),
        ("sundial-shard", format!("{}/{total}", shard.shard_index)),
    ];
    // The app's and tenant's share of the delivery slots, as for any exchange (bulkhead.rs).
    let quota = node.fire.tenant_quotas.max_inflight(node.store.as_ref(), &job.tenant_id, node.now_ms()).await;
    let share = match node
        .fire
        .bulkheads
        .acquire(&job.tenant_id, &job.app_id, quota, Bulkheads::wait_for(job.timeout_ms))
        .await
    {
        Ok(share) => share,
        Err(why) => {
            Counters::add(&node.counters.saturated, 1);
            let trail = serde_json::to_value(&trail).expect("JSON");
            node.store.shard_attempt_set_target(&run.id, shard.shard_index, shard.attempt, None, None, &trail).await?;
            let result = ExecutorResult::saturated(&why);
            after_finish(node, job, run, shard.shard_index, shard.attempt, result).await?;
            return Ok(Sent { retired: false });
        }
    };
    let now = node.now_ms();
    let remaining = (shard.deadline_ms.unwrap_or(deadline_ms(now, job.timeout_ms)) - now).max(1);
    let resp = node
        .calls
        .client
        .post_signed(app, address, &d.webhook_id, &body, &headers, Duration::from_millis(remaining as u64))
        .await;
    node.fire.routes.lock().await.record_use(&job.id, exec_id, node.now_ms());
    let answer = read_answer(resp, node.cfg.max_answer_bytes, node.cfg.max_output_bytes).await;
    drop(share);
    let failed = |reason, message: String| ExecutorResult {
        retry: true,
        succeeded: false,
        reason,
        output: None,
        message: Some(message),
    };
    let (result, retired) = match answer {
        Answer::Accepted => {
            trail.push(entry("delivered"));
            set_shard_trail(node, run, d, exec_id, address, &trail).await?;
            crate::retry_deadlock(|| {
                node.store.shard_mark_running(&run.id, shard.shard_index, shard.attempt, node.now_ms())
            })
            .await?;
            return Ok(Sent { retired: false });
        }
        Answer::Done(result) => {
            trail.push(entry("delivered"));
            (result, false)
        }
        Answer::Offline => {
            trail.push(entry("executor_offline"));
            if is_registered(exec_id) {
                node.store.executor_set_state(&app.id, exec_id, ExecutorState::Offline, node.now_ms()).await?;
            }
            (failed(FailReason::Error, format!("executor {exec_id} is going offline (503)")), false)
        }
        Answer::Retired => {
            trail.push(entry("handler_retired"));
            (failed(FailReason::Error, format!("executor {exec_id} retired handler")), true)
        }
        Answer::Failed(reason, message) => {
            trail.push(entry(&format!("failed: {message}")));
            (failed(reason, message), false)
        }
    };
    let timed_out = !result.succeeded && result.reason == FailReason::Timeout;
    set_shard_trail(node, run, d, exec_id, address, &trail).await?;
    if after_finish(node, job, run, shard.shard_index, shard.attempt, result).await? && timed_out {
        // The shard attempt may still be running there: a cancel, in the background.
        node.calls.cancels.cancel(CancelTarget::Shard {
            app: app.clone(),
            run_id: run.id.clone(),
            shard_index: shard.shard_index,
            attempt: shard.attempt,
            address: address.to_string(),
        });
    }
    Ok(Sent { retired })
}

async fn set_shard_trail(
    node: &Shared,
    run: &Run,
    d: &ShardDelivery,
    exec_id: &str,
    address: &str,
    trail: &[TrailEntry],
) -> Result<()> {
    let trail = serde_json::to_value(trail).expect("JSON");
    node.store
        .shard_attempt_set_target(&run.id, d.shard.shard_index, d.shard.attempt, Some(exec_id), Some(address), &trail)
        .await?;
    Ok(())
}

/// Record a shard attempt's end; if that ended the run, cancel what is still out, or wake the claimer for children.
pub(crate) async fn after_finish(
    node: &Shared,
    job: &Job,
    run: &Run,
    shard_index: i64,
    attempt: i64,
    r: ExecutorResult,
) -> Result<bool> {
    let outcome = finish_shard(node.store.as_ref(), job, run, shard_index, attempt, r, node.now_ms()).await?;
    let ShardFinishOutcome::Applied { run, children, .. } = outcome else {
        return Ok(false);
    };
    if run.state == RunState::Failed {
        node.calls.cancels.cancel_run(&run);
    }
    if !children.is_empty() {
        node.wake.notify_one(); // child runs are due now
    }
    Ok(true)
}
