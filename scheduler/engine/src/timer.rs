//! Claiming due runs into the node's in-memory timer, and firing them on time.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::sync::Arc;
use std::sync::Mutex as StdMutex;
use std::time::Duration;

use sundial_core::schedule::Schedule;
use sundial_core::types::{MisfirePolicy, RunState, TriggerKind};
use sundial_store::{ClaimParams, Run};

use crate::{Engine, Result};

/// Due runs, earliest first: (due time, run id).
type Heap = BinaryHeap<Reverse<(i64, String)>>;

/// A min-heap of (due time, run id) with a set to keep ids unique.
#[derive(Debug, Default)]
pub(crate) struct Timer {
    inner: StdMutex<(Heap, HashSet<String>)>,
}

impl Timer {
    pub fn push(&self, due_ms: i64, run_id: String) {
        let mut g = self.inner.lock().expect("timer lock");
        if g.1.insert(run_id.clone()) {
            g.0.push(Reverse((due_ms, run_id)));
        }
    }
    pub fn len(&self) -> usize {
        self.inner.lock().expect("timer lock").1.len()
    }
    pub fn next_due(&self) -> Option<i64> {
        self.inner.lock().expect("timer lock").0.peek().map(|r| r.0.0)
    }
    /// Remove and return every run due at or before `now_ms`.
    pub fn pop_due(&self, now_ms: i64) -> Vec<String> {
        let mut g = self.inner.lock().expect("timer lock");
        let mut out = Vec::new();
        while g.0.peek().is_some_and(|r| r.0.0 <= now_ms) {
            let Reverse((_, id)) = g.0.pop().expect("peeked");
            g.1.remove(&id);
            out.push(id);
        }
        out
    }
    pub fn drain(&self) -> Vec<String> {
        let mut g = self.inner.lock().expect("timer lock");
        g.0.clear();
        g.1.drain().collect()
    }
}

impl Engine {
    /// Claim runs due within the claim window (up to the timer's free capacity),
    /// apply the misfire policy to late schedule fires, and put the rest in the timer.
    /// Returns how many runs entered the timer.
    pub async fn claim_once(&self) -> Result<usize> {
        let room = self.cfg.capacity.saturating_sub(self.timer.len());
        if room == 0 || self.clock_skewed() {
            return Ok(0);
        }
        let now = self.now_ms();
        let include_schedule = !self.schedules_paused().await?;
        let claimed = self
            .store
            .run_claim(&ClaimParams {
                node_id: self.cfg.node_id.clone(),
                due_before_ms: now + self.cfg.claim_window_ms,
                now_ms: now,
                lease_until_ms: now + self.cfg.lease_ms,
                limit: room.min(1000) as i64,
                include_schedule,
                owned_buckets: self.owned_buckets(),
                foreign_due_before_ms: now - self.cfg.affinity_grace_ms,
            })
            .await?;
        let mut queued = 0;
        for run in claimed {
            if run.state == RunState::Queued && run.trigger == TriggerKind::Schedule && self.misfire_drops(&run).await?
            {
                continue;
            }
            let due = match run.state {
                RunState::Retrying => run.next_attempt_at_ms.unwrap_or(now),
                _ => run.scheduled_at_ms,
            };
            self.timer.push(due, run.id);
            queued += 1;
        }
        Ok(queued)
    }

    /// Apply the job's misfire policy to a claimed schedule fire; true if it was expired.
    async fn misfire_drops(&self, run: &Run) -> Result<bool> {
        // Read the clock now, not before the claim: the claim may have waited for a connection.
        let now = self.now_ms();
        let late = now - run.scheduled_at_ms;
        if late <= 0 {
            return Ok(false); // claimed ahead of time: the normal case, no lookup
        }
        let Some(job) = self.store.job_get(&run.tenant_id, &run.job_id).await? else {
            return Ok(false); // dispatch will find the job gone and cancel
        };
        let threshold = job.misfire.threshold_ms.unwrap_or(sundial_core::job::DEFAULT_MISFIRE_THRESHOLD_MS);
        if late <= threshold {
            return Ok(false);
        }
        let window = job.misfire.catchup_window_ms.unwrap_or(sundial_core::job::DEFAULT_CATCHUP_WINDOW_MS);
        let message = match job.misfire.policy {
            MisfirePolicy::Skip => Some(format!("missed by {late} ms; misfire policy skip")),
            MisfirePolicy::FireOnce => self
                .store
                .run_has_later_overdue(&run.job_id, run.scheduled_at_ms, now - threshold)
                .await?
                .then(|| format!("missed by {late} ms; fire_once fires only the latest missed fire")),
            MisfirePolicy::FireAll => {
                (late > window).then(|| format!("missed by {late} ms, beyond the catch-up window of {window} ms"))
            }
        };
        let Some(message) = message else {
            return Ok(false);
        };
        let expired = self.store.run_expire(&run.id, &self.cfg.node_id, &message, now).await?;
        if expired {
            tracing::info!(run_id = %run.id, job_id = %run.job_id, late_ms = late, "misfire: expired");
        }
        Ok(expired)
    }

    /// Dispatch every run in the timer due at or before now; returns how many were started.
    /// With `wait`, deliveries finish before this returns (tests); otherwise they run as tasks.
    pub async fn fire_due(self: &Arc<Self>, wait: bool) -> usize {
        let due = self.timer.pop_due(self.now_ms());
        let n = due.len();
        let mut handles = Vec::new();
        for run_id in due {
            let permit = self.inflight_permit().await;
            let e = self.clone();
            let h = tokio::spawn(async move {
                let _permit = permit;
                if let Err(err) = e.dispatch_one(&run_id).await {
                    tracing::warn!(run_id = %run_id, error = %err, "dispatch failed; the run's lease will bring it back");
                }
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

    pub(crate) async fn timer_loop(self: Arc<Self>) {
        loop {
            let now = self.now_ms();
            let sleep_ms = match self.timer.next_due() {
                Some(due) if due <= now => 0,
                Some(due) => (due - now).min(self.cfg.tick_ms as i64),
                None => self.cfg.tick_ms as i64,
            };
            if sleep_ms > 0 {
                tokio::select! {
                    _ = self.cancel_token().cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_millis(sleep_ms as u64)) => {}
                }
            }
            if self.cancel_token().is_cancelled() {
                return;
            }
            self.fire_due(false).await;
        }
    }

    /// Generate, claim and fire everything due now, waiting for deliveries: one
    /// deterministic turn of the engine for tests driven by a manual clock.
    pub async fn tick(self: &Arc<Self>) -> Result<usize> {
        self.generate_once().await?;
        self.claim_once().await?;
        Ok(self.fire_due(true).await)
    }

    /// Parse a stored schedule (stored specs are canonical, so this does not fail in practice).
    pub(crate) fn schedule_of(job: &sundial_store::Job) -> Option<Schedule> {
        Schedule::parse(&job.schedule, job.created_at_ms).ok()
    }
}
