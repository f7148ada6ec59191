//! Delivering an attempt: the dispatch transaction, routing, the signed webhook,
//! and what the executor's answer means.

use std::sync::Arc;
use std::time::Duration;

use sundial_core::dispatch::deadline_ms;
use sundial_core::route::{Candidate, TrailEntry};
use sundial_core::run_state::FailReason;
use sundial_core::time::rfc3339_utc;
use sundial_core::types::{ExecutorState, JobState, Route};
use sundial_store::{AppRouting, AttemptTarget, DispatchDecision, FinishOutcome, Job, Run, ToDispatch};

use crate::bulkhead::{Bulkheads, Saturated, Share};
use crate::cancel::OpenExchange;
use crate::outcome::finish_params;
use crate::shared::Shared;
use crate::transport::{Answer, ExecutorResult, delivery_body, is_registered, read_answer};
use crate::work::Work;
use crate::{Counters, Result, shard, work};

/// What an HTTP exchange holds while it is open: one of the node's delivery slots and its
/// app's and tenant's share of them (none for a sharded run: each shard takes its own).
pub(crate) struct Slot {
    _global: tokio::sync::OwnedSemaphorePermit,
    _share: Option<Share>,
}

/// A dispatch transaction slower than this moves its runs' deadlines by its duration.
const DISPATCH_SLOW_MS: i64 = 250;

/// A run its dispatch transaction committed (`DispatchDecision::Dispatch`), on its way to
/// the wire.
struct Committed {
    run: Run,
    job: Arc<Job>,
    webhook_id: String,
    covered: Vec<Run>,
    routing: Option<Arc<AppRouting>>,
}

/// Dispatch claimed runs: one transaction commits every one that may go as
/// `dispatching` (commit before send) and reads the apps and executors routing needs;
/// then each run is routed and delivered in a task of its own. With `wait`, returns
/// when every delivery is over (tests).
///
/// `permits` holds one staging permit per run, taken before the dispatch transaction
/// (it bounds the runs between the timer and their delivery). A run is committed at most
/// the dispatch lead ahead of its instant; the transaction is stamped with the batch's
/// latest instant (when it is still ahead), so deadlines and leases count from when the
/// deliveries may go, not from the commit. Each delivery then waits for its instant and
/// for a delivery slot (`max_inflight`); a run that waited long for a slot has its
/// deadline moved by the wait.
pub(crate) async fn dispatch_batch(
    node: &Arc<Shared>,
    due: Vec<(String, i64, u64)>,
    mut permits: tokio::sync::OwnedSemaphorePermit,
    wait: bool,
    popped_at_ms: i64,
    turn: crate::instant_gate::Turn,
) -> Result<()> {
    let unwritten = node.at_dispatch.take_each(due.iter().map(|(id, _, _)| id));
    let runs: Vec<ToDispatch> = due
        .iter()
        .zip(unwritten)
        .map(|((id, _, _), u)| match u {
            Some(run) => ToDispatch::unwritten(run),
            None => ToDispatch::new(id.clone(), node.fire.timer.redelivers(id)),
        })
        .collect();
    let latest_due = due.iter().map(|(_, d, _)| *d).max().unwrap_or(i64::MIN);
    let instant: std::collections::HashMap<String, (i64, u64)> =
        due.into_iter().map(|(id, d, seq)| (id, (d, seq))).collect();
    let began = node.now_ms();
    let now = began.max(latest_due);
    let mut decisions =
        match crate::retry_deadlock(|| node.store.run_dispatch_many(&runs, &node.cfg.node_id, now, node.cfg.lease_ms))
            .await
        {
            Ok(d) => d,
            Err(e) => {
                // Nothing was decided: fires with no row go back to wait for another try.
                for t in runs {
                    if let Some(run) = t.unwritten {
                        node.at_dispatch.put_back(run);
                    }
                }
                return Err(e.into());
            }
        };
    let committed = note_committed(node, runs.len(), popped_at_ms, began);
    // The deadlines were set from `now`; if the transaction ended well after it (lock
    // waits, a busy pool), that time must not count against the executor's timeout.
    move_deadlines(node, &mut decisions, committed - now).await?;
    let now = committed;
    // Before any `Blocked` below is parked: a run of its job sent in this same batch wakes it.
    for (run_id, d) in &decisions {
        if matches!(d, DispatchDecision::Dispatch { .. }) {
            node.fire.timer.delivering(run_id);
        }
    }
    let mut handles = Vec::new();
    // The batches popped before this one hand their runs over first (instant_gate.rs).
    turn.wait().await;
    let stages = Stages { popped_at_ms, began_ms: began, committed_ms: committed, turn_ms: node.now_ms() };
    for (run_id, decision) in decisions {
        let (run, job, webhook_id, covered, routing) = match decision {
            DispatchDecision::Dispatch { run, job, webhook_id, covered, routing } => {
                (run, job, webhook_id, covered, routing)
            }
            DispatchDecision::Gone => {
                node.fire.timer.after_dispatch(&run_id, now, now + node.cfg.lease_ms);
                continue;
            }
            DispatchDecision::Blocked { until_ms } => {
                // Polls again; the decision renewed its claim for `lease_ms`. Held back by its
                // block strategy, not missed: the misfire policy does not apply to the wait.
                node.fire.timer.settled(&run_id);
                let at = crate::timer::blocked_poll_at(now, until_ms, node.cfg.lease_ms);
                node.fire.timer.push(at, run_id.clone());
                node.fire.timer.after_dispatch(&run_id, now, now + node.cfg.lease_ms);
                continue;
            }
            DispatchDecision::Skipped { reason } => {
                tracing::info!(run_id, reason, "run skipped");
                node.fire.timer.after_dispatch(&run_id, now, now + node.cfg.lease_ms);
                continue;
            }
        };
        let staged = permits.split(1);
        // Every decided run was in the batch: its instant is known.
        let (due_ms, seq) = instant.get(&run_id).copied().unwrap_or((now, 0));
        let run = Committed { run, job, webhook_id, covered, routing };
        let h = node.fire.deliveries.spawn(deliver_committed(node.clone(), run, (due_ms, seq), stages, staged));
        if wait {
            handles.push(h);
        }
    }
    turn.done();
    for h in handles {
        let _ = h.await;
    }
    Ok(())
}

/// A dispatch transaction of `runs` runs, popped at `popped_at_ms` and begun at `began`,
/// committed now: its times feed the dispatch lead. Returns the commit's instant.
fn note_committed(node: &Shared, runs: usize, popped_at_ms: i64, began: i64) -> i64 {
    let committed = node.now_ms();
    node.fire.last_commit_ms.store(committed, std::sync::atomic::Ordering::Relaxed);
    tracing::debug!(runs, since_pop_ms = committed - popped_at_ms, commit_ms = committed - began, "dispatch committed");
    node.note_dispatch_took(committed - popped_at_ms);
    node.note_dispatch_cost(committed - began, runs);
    committed
}

/// The deadlines were set from the transaction's `now`; if it ended `took` ms after it
/// (lock waits, a busy pool) and that is over [`DISPATCH_SLOW_MS`], that time must not
/// count against the executor's timeout: the dispatched runs' deadlines and leases move.
async fn move_deadlines(node: &Shared, decisions: &mut [(String, DispatchDecision)], took: i64) -> Result<()> {
    if took <= DISPATCH_SLOW_MS {
        return Ok(());
    }
    let sent: Vec<String> = decisions
        .iter()
        .filter(|(_, d)| matches!(d, DispatchDecision::Dispatch { .. }))
        .map(|(id, _)| id.clone())
        .collect();
    if !sent.is_empty() {
        crate::retry_deadlock(|| node.store.run_extend_dispatch(&sent, &node.cfg.node_id, took)).await?;
        for (_, d) in decisions.iter_mut() {
            if let DispatchDecision::Dispatch { run, .. } = d {
                run.deadline_ms = run.deadline_ms.map(|t| t + took);
                run.lease_until_ms = run.lease_until_ms.map(|t| t + took);
            }
        }
        tracing::info!(runs = sent.len(), took_ms = took, "slow dispatch transaction: deadlines moved by its duration");
    }
    Ok(())
}

/// Take one committed run to the wire: wait for its instant (in pop order), its app's
/// and tenant's share, a delivery slot; then deliver it, and tell the timer it is over.
async fn deliver_committed(
    node: Arc<Shared>,
    committed: Committed,
    (due_ms, seq): (i64, u64),
    stages: Stages,
    _staged: Option<tokio::sync::OwnedSemaphorePermit>,
) {
    let e = node;
    let Committed { mut run, job, webhook_id, covered, routing } = committed;
    let run_id = run.id.clone();
    // Taken from the timer ahead by the dispatch lead: committed, it goes out at the
    // instant it was due in the timer (its fire time, or a retry's end of backoff), not before.
    // Never before the run's own instant either (a run let go again after waiting
    // behind its job's previous run may be popped before it).
    // Waiting runs leave in the order they were popped (tenants take turns at an
    // instant), not in the order the runtime wakes sleepers: instant_gate.rs.
    let due_ms = due_ms.max(run.scheduled_at_ms);
    let early = due_ms - e.now_ms();
    if early > 0 {
        let early = Duration::from_millis(early.min(e.cfg.max_dispatch_lead_ms.max(0)) as u64);
        let _ = e.fire.gate.enter(due_ms, seq, early).await;
    }
    let gate_ms = e.now_ms();
    // The app's and tenant's share of the slots first (a sharded run's shards each
    // take theirs): a hung executor holds only its own app's share.
    let share = if job.route == Route::Sharding || run.shard_total.is_some() {
        None
    } else {
        let wait = Bulkheads::wait_for(job.timeout_ms);
        let quota = e.fire.tenant_quotas.max_inflight(e.store.as_ref(), &job.tenant_id, e.now_ms()).await;
        match e.fire.bulkheads.acquire(&job.tenant_id, &job.app_id, quota, wait).await {
            Ok(share) => Some(share),
            Err(why) => {
                Counters::add(&e.counters.saturated, 1);
                if let Err(err) = fail_unsent(&e, run, &job, why).await {
                    tracing::warn!(run_id = %run_id, error = %err, "could not record an attempt not sent; its lease will bring it back");
                }
                let now = e.now_ms();
                e.fire.timer.after_dispatch(&run_id, now, now + e.cfg.lease_ms);
                return;
            }
        }
    };
    let share_ms = e.now_ms();
    let slot = match delivery_slot(&e, &mut run, due_ms, job.timeout_ms).await {
        Ok(p) => p,
        Err(err) => {
            tracing::warn!(run_id = %run_id, error = %err, "could not extend a waiting delivery; its lease will bring it back");
            let now = e.now_ms();
            e.fire.timer.after_dispatch(&run_id, now, now + e.cfg.lease_ms);
            return;
        }
    };
    let sent_ms = e.now_ms();
    e.load.note_sent(sent_ms - due_ms);
    stages.note_late(&run_id, (due_ms, run.scheduled_at_ms), [gate_ms, share_ms, sent_ms]);
    let slot = Slot { _global: slot, _share: share };
    if let Err(err) = deliver(&e, run, job, webhook_id, covered, routing.as_deref(), slot).await {
        tracing::warn!(run_id = %run_id, error = %err, "delivery failed; the run's lease will bring it back");
    }
    let now = e.now_ms();
    e.fire.timer.after_dispatch(&run_id, now, now + e.cfg.lease_ms);
}

/// A delivery slot for a committed run. Waiting for it is normally short (only runs
/// committed ahead of their instant can find every slot taken). A wait longer than a
/// tenth of the job's timeout (at least [`DISPATCH_SLOW_MS`]) moves the run's deadline
/// and lease by its length, one statement for that run: a herd's runs waiting a few
/// hundred ms for a slot write nothing. A very long wait (a slow executor holding every
/// slot) renews them every half lease, so the run is never taken for lost while it
/// waits here.
async fn delivery_slot(
    node: &Shared,
    run: &mut Run,
    due_ms: i64,
    timeout_ms: i64,
) -> Result<tokio::sync::OwnedSemaphorePermit> {
    let from = node.now_ms().max(due_ms);
    let step = Duration::from_millis((node.cfg.lease_ms / 2).max(1) as u64);
    let worth_moving = (timeout_ms / 10).max(DISPATCH_SLOW_MS);
    let mut moved = 0;
    loop {
        match tokio::time::timeout(step, node.inflight_permit()).await {
            Ok(p) => {
                let waited = node.now_ms() - from;
                if waited > worth_moving && waited > moved {
                    extend_waiting(node, run, waited - moved).await?;
                }
                return Ok(p);
            }
            Err(_) => {
                extend_waiting(node, run, node.cfg.lease_ms / 2).await?;
                moved += node.cfg.lease_ms / 2;
            }
        }
    }
}

async fn extend_waiting(node: &Shared, run: &mut Run, by_ms: i64) -> Result<()> {
    let ids = [run.id.clone()];
    crate::retry_deadlock(|| node.store.run_extend_dispatch(&ids, &node.cfg.node_id, by_ms)).await?;
    run.deadline_ms = run.deadline_ms.map(|t| t + by_ms);
    run.lease_until_ms = run.lease_until_ms.map(|t| t + by_ms);
    Ok(())
}

/// Route and deliver one attempt committed as `dispatching`, and record the answer.
// Over 100 lines on purpose: one attempt read top to bottom (its body, the `'replan` loop
// over the route's targets, the answer recorded), the loop sharing the trail, the
// candidates, the chosen target and the answer.
async fn deliver(
    node: &Arc<Shared>,
    run: Run,
    job: Arc<Job>,
    webhook_id: String,
    covered: Vec<Run>,
    routing: Option<&AppRouting>,
    slot: Slot,
) -> Result<()> {
    let now = node.now_ms();
    // The runs this one covered were cancelled by its dispatch transaction: their
    // executors get a cancel in the background, this delivery does not wait for it.
    for c in &covered {
        node.calls.cancels.cancel_run(c);
    }
    if job.route == Route::Sharding || run.shard_total.is_some() {
        drop(slot); // each shard's POST takes a slot of its own
        return shard::dispatch_sharded(node, run, Job::clone(&job)).await;
    }
    let (app, executors) = routing.map(|r| (Some(&r.app), r.executors.as_slice())).unwrap_or((None, &[]));
    let mut cands = app.map(|a| work::candidates_for(node, &job, a, executors, now)).unwrap_or_default();
    let work = work::work_of(node, &run, &job).await?;
    let handler = work.handler(&job);
    let mut body = delivery_body(&run, &job);
    let mut last_failure = (FailReason::NoExecutor, "no online executor serves this handler".to_string());
    match work {
        Work::Handler => {}
        Work::Script(s) => {
            last_failure.1 = format!("no online runner runs `{}` scripts", s.runtime);
            body.script = Some(s);
        }
        Work::ScriptGone(msg) => {
            cands.clear();
            last_failure = (FailReason::Error, msg);
        }
    }
    let body = serde_json::to_vec(&body).expect("JSON");
    let headers = [
        ("sundial-run-id", run.id.clone()),
        ("sundial-attempt", run.attempt.to_string()),
        ("sundial-scheduled-at", rfc3339_utc(run.scheduled_at_ms)),
        ("sundial-shard", "0/1".to_string()),
    ];
    let mut trail: Vec<TrailEntry> = Vec::new();
    let mut retired = 0;
    let mut tried = 0;
    let mut chosen: Option<Candidate> = None;
    let mut answer_final: Option<Answer> = None;
    'replan: for _ in 0..8 {
        let plan = node.fire.routes.lock().await.plan(job.route, handler.as_deref(), &job.id, &cands);
        let plan = match plan {
            Ok(p) => p,
            Err(no) => {
                if trail.is_empty() {
                    trail = no.trail;
                }
                break;
            }
        };
        if trail.is_empty() {
            trail = plan.trail.clone();
        }
        for target in &plan.targets {
            let Some(app) = app else { break 'replan };
            tried += 1;
            let posted_at = node.now_ms();
            if posted_at - run.scheduled_at_ms > crate::LATENESS_NOTED_MS {
                tracing::debug!(target: "sundial_engine::lateness", run_id = %run.id, late_ms = posted_at - run.scheduled_at_ms, "posting late");
            }
            let remaining = (run.deadline_ms.unwrap_or(deadline_ms(now, job.timeout_ms)) - node.now_ms()).max(1);
            // Open until the answer is read (the guard leaves on every path): a cancel of
            // this run finds the exchange's address here before any is stored.
            let _open = node.calls.cancels.exchanges().open(
                &run.id,
                OpenExchange {
                    app: app.clone(),
                    address: target.address.clone(),
                    attempt: run.attempt,
                    opened_at_ms: node.now_ms(),
                },
            );
            let resp = node
                .calls
                .client
                .post_signed(
                    app,
                    &target.address,
                    &webhook_id,
                    &body,
                    &headers,
                    Duration::from_millis(remaining as u64),
                )
                .await;
            let answered_at = node.now_ms();
            if answered_at - posted_at > crate::LATENESS_NOTED_MS
                && resp.as_ref().is_ok_and(|r| r.status().is_success())
            {
                tracing::debug!(target: "sundial_engine::lateness", run_id = %run.id, took_ms = answered_at - posted_at, "a successful exchange took long");
            }
            node.fire.routes.lock().await.record_use(&job.id, &target.id, node.now_ms());
            match read_answer(resp, node.cfg.max_answer_bytes, node.cfg.max_output_bytes).await {
                Answer::Offline => {
                    trail.push(TrailEntry::new(target, "executor_offline"));
                    if is_registered(&target.id) {
                        node.store
                            .executor_set_state(&app.id, &target.id, ExecutorState::Offline, node.now_ms())
                            .await?;
                    }
                    for c in cands.iter_mut().filter(|c| c.id == target.id) {
                        c.online = false;
                    }
                    continue 'replan;
                }
                Answer::Retired => {
                    retired += 1;
                    trail.push(TrailEntry::new(target, "handler_retired"));
                    last_failure = (FailReason::Error, format!("executor {} retired handler", target.id));
                }
                Answer::Failed(reason, msg) => {
                    trail.push(TrailEntry::new(target, &format!("failed: {msg}")));
                    last_failure = (reason, msg);
                    if job.route != Route::Failover {
                        chosen = Some(target.clone());
                        break 'replan;
                    }
                }
                a @ (Answer::Done(_) | Answer::Accepted) => {
                    trail.push(TrailEntry::new(target, "delivered"));
                    chosen = Some(target.clone());
                    answer_final = Some(a);
                    break 'replan;
                }
            }
        }
        break;
    }
    // The HTTP exchange is over: the slot goes to the next delivery while the outcome is
    // recorded (the run keeps its staging permit until then).
    drop(slot);
    let target = AttemptTarget {
        executor_id: chosen.as_ref().map(|c| c.id.clone()),
        address: chosen.as_ref().map(|c| c.address.clone()),
        trail: serde_json::to_value(&trail).expect("JSON"),
    };
    let result = match answer_final {
        Some(Answer::Accepted) => {
            node.store
                .attempt_set_target(
                    &run.id,
                    run.attempt,
                    target.executor_id.as_deref(),
                    target.address.as_deref(),
                    &target.trail,
                )
                .await?;
            crate::retry_deadlock(|| node.store.run_mark_running(&run.id, run.attempt, node.now_ms())).await?;
            return Ok(());
        }
        Some(Answer::Done(result)) => result,
        _ => {
            if retired > 0 && retired == tried {
                // Every executor asked says the handler is gone: stop the job.
                node.store.job_set_state(&job.tenant_id, &job.id, JobState::Stopped, node.now_ms()).await?;
                tracing::warn!(job_id = %job.id, "every executor retired the handler; job stopped");
            }
            let (reason, message) = last_failure;
            ExecutorResult { retry: true, succeeded: false, reason, output: None, message: Some(message) }
        }
    };
    // An exchange that timed out may still be running at the executor: once the failure
    // is recorded (by this node: the write was won), it gets a cancel in the background.
    let timed_out = !result.succeeded && result.reason == FailReason::Timeout && chosen.is_some();
    record(node, run, &job, result, target, timed_out).await
}

/// Record an attempt's result through the group commit (the failure policy applied),
/// cancel a timed-out exchange once its failure is recorded, wake the timer for children.
async fn record(
    node: &Shared,
    run: Run,
    job: &Job,
    result: ExecutorResult,
    target: AttemptTarget,
    cancel_if_applied: bool,
) -> Result<()> {
    let mut params = finish_params(job, &run.id, run.attempt, result, Some(target), node.now_ms());
    let to_cancel = cancel_if_applied.then(|| run.clone());
    params.dispatched = Some(run);
    let outcome = node.calls.results.finish(node.store.as_ref(), params).await?;
    if let Some(run) = to_cancel
        && matches!(outcome, FinishOutcome::Applied { .. })
    {
        node.calls.cancels.cancel_run(&run);
    }
    if matches!(&outcome, FinishOutcome::Applied { children, .. } if !children.is_empty()) {
        node.wake.notify_one(); // child runs are due now
    }
    Ok(())
}

/// The attempt was never sent: its app's or tenant's share of the delivery slots stayed
/// in use (see [`crate::bulkhead`]). It fails `saturated` and the failure policy decides.
async fn fail_unsent(node: &Shared, run: Run, job: &Job, why: Saturated) -> Result<()> {
    tracing::debug!(run_id = %run.id, job_id = %job.id, app_id = %job.app_id, %why, "attempt not sent");
    let result = ExecutorResult::saturated(&why);
    let target = AttemptTarget { executor_id: None, address: None, trail: serde_json::json!([]) };
    record(node, run, job, result, target, false).await
}
/// When a dispatched batch passed each step, for saying why one of its deliveries left late
/// (`SUNDIAL_LOG=info,sundial_engine::lateness=debug`).
#[derive(Debug, Clone, Copy)]
struct Stages {
    popped_at_ms: i64,
    began_ms: i64,
    committed_ms: i64,
    turn_ms: i64,
}

impl Stages {
    /// One line for a delivery sent more than [`crate::LATENESS_NOTED_MS`] after its
    /// instant in the timer or its scheduled time: when each step before the send ended
    /// (engine clock, ms after the instant). An instant well after the scheduled time is a
    /// run that waited in the timer (held back `Blocked` behind its job's previous run, or
    /// a retry).
    fn note_late(&self, run_id: &str, (due_ms, scheduled_ms): (i64, i64), [gate_ms, share_ms, sent_ms]: [i64; 3]) {
        if sent_ms - due_ms.min(scheduled_ms) > crate::LATENESS_NOTED_MS {
            tracing::debug!(
                target: "sundial_engine::lateness",
                run_id,
                late_ms = sent_ms - scheduled_ms,
                instant_after_scheduled = due_ms - scheduled_ms,
                popped = self.popped_at_ms - due_ms,
                began = self.began_ms - due_ms,
                committed = self.committed_ms - due_ms,
                turn = self.turn_ms - due_ms,
                gate = gate_ms - due_ms,
                share = share_ms - due_ms,
                "delivery sent late; when each step ended, in ms after its instant (then a delivery slot)"
            );
        }
    }
}
