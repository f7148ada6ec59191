//! The timer loop: pops due runs from the timer a dispatch lead ahead of their instant
//! and hands them to dispatch ([`TimerLoop::run_once`]), settling late fires first.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::misfire::LATE_POP_MS;
use crate::shared::Shared;
use crate::stats::Counters;
use crate::timer::Popped;
use crate::{delivery, intake};
use sundial_core::misfire::LateFire;

/// Runs per dispatch transaction at most.
pub(crate) const DISPATCH_BATCH: usize = 256;

/// The timer-loop service: sleeps until the timer's next run is due less the dispatch
/// lead (at most a tick, or until runs due sooner arrive), then [`TimerLoop::run_once`].
/// Its settings are the node's `tick_ms` (the longest sleep), `max_dispatch_lead_ms`,
/// `capacity` and `lease_ms`, read where they are used.
pub(crate) struct TimerLoop {
    node: Arc<Shared>,
}

impl TimerLoop {
    pub(crate) fn new(node: &Arc<Shared>) -> Self {
        TimerLoop { node: node.clone() }
    }

    /// One step: fire what is due at `now` (deliveries run as tasks).
    pub(crate) async fn run_once(&self, now: i64) -> usize {
        self.fire_due(now, false).await
    }

    /// Dispatch every run in the timer due at or before `now` (plus the dispatch lead, see
    /// [`Shared::dispatch_lead_ms`]); returns how many were started.
    /// Due runs go in batches of up to [`DISPATCH_BATCH`], one dispatch transaction
    /// each, a few at once; while every slot is busy more runs fall due, so batches grow
    /// with the load. Fresh schedule fires popped more than [`LATE_POP_MS`] late are settled
    /// by their misfire policy in bulk first ([`intake::settle_late`]), so a node that fell
    /// behind clears its backlog in a few statements instead of delivering it late. With
    /// `wait`, deliveries finish before this returns (tests); otherwise they run as tasks.
    pub(crate) async fn fire_due(&self, now: i64, wait: bool) -> usize {
        let node = &self.node;
        let mut asked = now;
        let mut n = 0;
        let mut handles = Vec::new();
        loop {
            // Shutdown must not wait for the timer to run dry: under load (or with every
            // `serial` job polling behind a predecessor that is retrying) it never does.
            if node.cancel_token().is_cancelled() {
                break;
            }
            let slot = node.fire.batch_slots.clone().acquire_owned().await.expect("the semaphore is never closed");
            let popped_at = node.now_ms().max(asked);
            if popped_at - asked > crate::LATENESS_NOTED_MS / 4 {
                tracing::debug!(target: "sundial_engine::lateness", waited_ms = popped_at - asked, "the timer waited for a dispatch slot");
            }
            // Runs whose instant has come are committed only while a delivery slot is free, so
            // none waits long for one after its commit (its deadline runs from then); runs due
            // later (the dispatch lead) are committed ahead whatever the slots, since they wait
            // for their instant anyway. Every popped run holds a staging permit until delivered.
            let horizon = if node.inflight_free() { popped_at + node.dispatch_lead_ms() } else { popped_at - 1 };
            // Waiting serial runs renew their claim when a third of its lease is left.
            let batch = DISPATCH_BATCH.min(node.cfg.capacity.max(1));
            let due = node.fire.timer.pop_due_max(horizon, node.cfg.lease_ms / 3, batch, popped_at - LATE_POP_MS);
            if due.is_empty() {
                break;
            }
            n += due.len();
            Counters::add(&node.counters.dispatched, due.len() as u64);
            let turn = node.fire.turns.take();
            let permits = node.staged_permits(due.len()).await;
            let staged_ms = node.now_ms() - popped_at;
            if staged_ms > crate::LATENESS_NOTED_MS {
                tracing::debug!(target: "sundial_engine::lateness", waited_ms = staged_ms, runs = due.len(), "the timer waited for staging permits");
            }
            let task_node = node.clone();
            let h = node.fire.deliveries.spawn(async move {
                dispatch_popped(&task_node, due, permits, wait, popped_at, turn).await;
                drop(slot);
            });
            if wait {
                handles.push(h);
            }
            asked = node.now_ms();
        }
        for h in handles {
            let _ = h.await;
        }
        n
    }

    /// Start the loop; it ends when the node's services are cancelled.
    pub(crate) fn spawn(self: Arc<Self>) -> JoinHandle<()> {
        tokio::spawn(async move {
            let e = &self.node;
            loop {
                let now = e.now_ms();
                let sleep_ms = match e.fire.timer.next_due().map(|due| due - e.dispatch_lead_ms()) {
                    Some(due) if due <= now => 0,
                    Some(due) => (due - now).min(e.cfg.tick_ms as i64),
                    None => e.cfg.tick_ms as i64,
                };
                if sleep_ms > 0 {
                    tokio::select! {
                        _ = e.cancel_token().cancelled() => return,
                        _ = tokio::time::sleep(Duration::from_millis(sleep_ms as u64)) => {}
                        _ = e.fire.due_sooner.notified() => {}
                    }
                    let overslept = e.now_ms() - now - sleep_ms;
                    if overslept > crate::LATENESS_NOTED_MS / 4 {
                        tracing::debug!(target: "sundial_engine::lateness", overslept_ms = overslept, "the timer woke late (a busy runtime)");
                    }
                }
                let turn_began = e.now_ms();
                if e.cancel_token().is_cancelled() {
                    return;
                }
                self.run_once(turn_began).await;
                e.load.maybe_report(e.now_ms(), || e.fire.timer.due_by(e.now_ms()));
                let turn_took = e.now_ms() - turn_began;
                if turn_took > crate::LATENESS_NOTED_MS / 4 {
                    tracing::debug!(target: "sundial_engine::lateness", took_ms = turn_took, "a turn of the timer took long");
                }
            }
        })
    }
}

/// Settle the late fires of a popped batch, then dispatch the rest.
async fn dispatch_popped(
    node: &Arc<Shared>,
    due: Vec<Popped>,
    permits: tokio::sync::OwnedSemaphorePermit,
    wait: bool,
    popped_at: i64,
    turn: crate::instant_gate::Turn,
) {
    let (late, mut go): (Vec<Popped>, Vec<Popped>) = due.into_iter().partition(|p| p.late && p.job_id.is_some());
    if !late.is_empty() {
        let fires: Vec<LateFire> = late
            .iter()
            .map(|p| LateFire {
                id: p.id.clone(),
                job_id: p.job_id.clone().unwrap_or_default(),
                scheduled_at_ms: p.scheduled_at_ms,
            })
            .collect();
        match intake::settle_late(node, &fires).await {
            Ok(kept) => {
                let kept: HashSet<String> = kept.into_iter().collect();
                let now = node.now_ms();
                for p in late {
                    if kept.contains(&p.id) {
                        go.push(p);
                    } else {
                        node.fire.timer.after_dispatch(&p.id, now, now + node.cfg.lease_ms);
                    }
                }
            }
            Err(err) => {
                // Not judged: they stay in the timer and are judged again shortly (never
                // sent past their misfire policy because the store could not be asked).
                tracing::warn!(runs = fires.len(), error = %err, "misfire check failed; checking the late runs again shortly");
                let again = node.now_ms() + 500;
                for p in late {
                    node.fire.timer.push(again, p.id);
                }
            }
        }
    }
    if go.is_empty() {
        return;
    }
    let ids: Vec<String> = go.iter().map(|p| p.id.clone()).collect();
    let first = ids[0].clone();
    let count = ids.len();
    let due: Vec<(String, i64, u64)> = go.into_iter().map(|p| (p.id, p.due_ms, p.seq)).collect();
    if let Err(err) = delivery::dispatch_batch(node, due, permits, wait, popped_at, turn).await {
        tracing::warn!(run_id = %first, runs = count, error = %err, "dispatch failed; the runs' leases will bring them back");
        let now = node.now_ms();
        for id in &ids {
            node.fire.timer.after_dispatch(id, now, now + node.cfg.lease_ms);
            // A fire with no row has no lease to bring it back: it tries again shortly
            // (late by then, so its misfire policy has its say).
            if let Some(run) = node.at_dispatch.get(id) {
                node.fire.timer.push_run(now + 500, &run);
            }
        }
    }
}
