//! The timer loop: pops due runs from the timer a dispatch lead ahead of their instant
//! and hands them to dispatch ([`Engine::fire_due`]), settling late fires first.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::Engine;
use crate::misfire::LATE_POP_MS;
use crate::stats::Counters;
use crate::timer::Popped;
use sundial_core::misfire::LateFire;

/// Runs per dispatch transaction at most.
pub(crate) const DISPATCH_BATCH: usize = 256;

impl Engine {
    /// Dispatch every run in the timer due at or before now (plus the dispatch lead, see
    /// [`Engine::dispatch_lead_ms`]); returns how many were started.
    /// Due runs go in batches of up to [`DISPATCH_BATCH`], one dispatch transaction
    /// each, a few at once; while every slot is busy more runs fall due, so batches grow
    /// with the load. Fresh schedule fires popped more than [`LATE_POP_MS`] late are settled
    /// by their misfire policy in bulk first ([`Engine::settle_late`]), so a node that fell
    /// behind clears its backlog in a few statements instead of delivering it late. With
    /// `wait`, deliveries finish before this returns (tests); otherwise they run as tasks.
    pub async fn fire_due(self: &Arc<Self>, wait: bool) -> usize {
        let mut n = 0;
        let mut handles = Vec::new();
        loop {
            // Shutdown must not wait for the timer to run dry: under load (or with every
            // `serial` job polling behind a predecessor that is retrying) it never does.
            if self.cancel_token().is_cancelled() {
                break;
            }
            let asked = self.now_ms();
            let slot = self.fire.batch_slots.clone().acquire_owned().await.expect("the semaphore is never closed");
            let popped_at = self.now_ms();
            if popped_at - asked > crate::LATENESS_NOTED_MS / 4 {
                tracing::debug!(target: "sundial_engine::lateness", waited_ms = popped_at - asked, "the timer waited for a dispatch slot");
            }
            // Runs whose instant has come are committed only while a delivery slot is free, so
            // none waits long for one after its commit (its deadline runs from then); runs due
            // later (the dispatch lead) are committed ahead whatever the slots, since they wait
            // for their instant anyway. Every popped run holds a staging permit until delivered.
            let horizon = if self.inflight_free() { popped_at + self.dispatch_lead_ms() } else { popped_at - 1 };
            // Waiting serial runs renew their claim when a third of its lease is left.
            let batch = DISPATCH_BATCH.min(self.cfg.capacity.max(1));
            let due = self.fire.timer.pop_due_max(horizon, self.cfg.lease_ms / 3, batch, popped_at - LATE_POP_MS);
            if due.is_empty() {
                break;
            }
            n += due.len();
            Counters::add(&self.counters.dispatched, due.len() as u64);
            let turn = self.fire.turns.take();
            let permits = self.staged_permits(due.len()).await;
            let staged_ms = self.now_ms() - popped_at;
            if staged_ms > crate::LATENESS_NOTED_MS {
                tracing::debug!(target: "sundial_engine::lateness", waited_ms = staged_ms, runs = due.len(), "the timer waited for staging permits");
            }
            let e = self.clone();
            let h = self.fire.deliveries.spawn(async move {
                e.dispatch_popped(due, permits, wait, popped_at, turn).await;
                drop(slot);
            });
            if wait {
                handles.push(h);
            }
        }
        for h in handles {
            let _ = h.await;
        }
        n
    }

    /// Settle the late fires of a popped batch, then dispatch the rest.
    async fn dispatch_popped(
        self: &Arc<Self>,
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
            match self.settle_late(&fires).await {
                Ok(kept) => {
                    let kept: HashSet<String> = kept.into_iter().collect();
                    let now = self.now_ms();
                    for p in late {
                        if kept.contains(&p.id) {
                            go.push(p);
                        } else {
                            self.fire.timer.after_dispatch(&p.id, now, now + self.cfg.lease_ms);
                        }
                    }
                }
                Err(err) => {
                    // Not judged: they stay in the timer and are judged again shortly (never
                    // sent past their misfire policy because the store could not be asked).
                    tracing::warn!(runs = fires.len(), error = %err, "misfire check failed; checking the late runs again shortly");
                    let again = self.now_ms() + 500;
                    for p in late {
                        self.fire.timer.push(again, p.id);
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
        if let Err(err) = self.dispatch_batch(due, permits, wait, popped_at, turn).await {
            tracing::warn!(run_id = %first, runs = count, error = %err, "dispatch failed; the runs' leases will bring them back");
            let now = self.now_ms();
            for id in &ids {
                self.fire.timer.after_dispatch(id, now, now + self.cfg.lease_ms);
                // A fire with no row has no lease to bring it back: it tries again shortly
                // (late by then, so its misfire policy has its say).
                if let Some(run) = self.at_dispatch.get(id) {
                    self.fire.timer.push_run(now + 500, &run);
                }
            }
        }
    }
}

/// The timer-loop service: sleeps until the timer's next run is due less the dispatch
/// lead (at most a tick, or until runs due sooner arrive), then [`Engine::fire_due`].
pub(crate) struct TimerLoop {
    engine: Arc<Engine>,
}

impl TimerLoop {
    /// Its settings are read where they are used: `tick_ms` (the longest sleep),
    /// `max_dispatch_lead_ms`, `capacity` and `lease_ms`.
    pub(crate) fn new(engine: &Arc<Engine>) -> Self {
        TimerLoop { engine: engine.clone() }
    }

    /// One step: fire what is due now (deliveries run as tasks).
    pub(crate) async fn run_once(&self) -> usize {
        self.engine.fire_due(false).await
    }

    /// Start the loop; it ends when the engine's loops are cancelled.
    pub(crate) fn spawn(self) -> JoinHandle<()> {
        tokio::spawn(async move {
            let e = &self.engine;
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
                self.run_once().await;
                e.load.maybe_report(e.now_ms(), || e.fire.timer.due_by(e.now_ms()));
                let turn_took = e.now_ms() - turn_began;
                if turn_took > crate::LATENESS_NOTED_MS / 4 {
                    tracing::debug!(target: "sundial_engine::lateness", took_ms = turn_took, "a turn of the timer took long");
                }
            }
        })
    }
}
