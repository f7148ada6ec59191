//! The claimer: claims due runs into the node's timer (`run_claim`), then reads the
//! node's own schedule fires without claiming them (the peek); late schedule fires are
//! settled by their misfire policy before they enter the timer.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use sundial_core::affinity::bucket_of;
use sundial_core::types::{RunState, TriggerKind};
use sundial_store::{ClaimParams, PeekParams, Run};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::stats::Counters;
use crate::{Engine, EngineError, Result};
use sundial_core::misfire::LateFire;

/// Where this node's peek stopped: the last (scheduled at, id) read, for the buckets `mask`.
#[derive(Debug, Default)]
pub(crate) struct PeekCursor {
    pub mask: u64,
    pub at_ms: i64,
    pub id: String,
}

impl Engine {
    /// Claim runs due within the claim window (up to the timer's free capacity),
    /// apply the misfire policy to late schedule fires, and put the rest in the timer.
    /// Returns how many runs entered the timer.
    pub async fn claim_once(&self) -> Result<usize> {
        Ok(self.claim_round().await?.0)
    }

    /// [`Engine::claim_once`], also telling whether the claim came back full (as many runs
    /// as it asked for: more may be due, so the claimer goes again without waiting a tick,
    /// and claiming keeps up with any rate the rest of the node sustains).
    pub async fn claim_round(&self) -> Result<(usize, bool)> {
        let room = self.cfg.capacity.saturating_sub(self.fire.timer.len());
        if room == 0 || self.clock_skewed() {
            return Ok((0, false));
        }
        let now = self.now_ms();
        let include_schedule = !self.schedules_paused().await?;
        let owned = self.owned_buckets();
        // The backstop for our own fires (those the peek reads): claimed once overdue past the
        // grace, like anyone's. But while this node is itself that far behind (its timer's
        // earliest run is older than the grace), its overdue fires are almost all in its timer
        // already; claiming them would add a write to each exactly when the node is short of
        // time, so then it waits as long as a claim's lease.
        let behind = self.fire.timer.next_due().is_some_and(|d| d < now - self.cfg.affinity_grace_ms);
        let own_backstop = now - if behind { self.cfg.lease_ms } else { self.cfg.affinity_grace_ms };
        Counters::add(&self.counters.claim_calls, 1);
        // A tenant over its share of the timer (its runs pile up: a hung executor's serial
        // jobs) is not claimed for: what room is left is the other tenants'.
        let skip_tenant = self.fire.timer.tenant_over(crate::at_dispatch::tenant_share(self.cfg.capacity));
        let claimed = self
            .store
            .run_claim(&ClaimParams {
                node_id: self.cfg.node_id.clone(),
                due_before_ms: now + self.cfg.claim_window_ms,
                now_ms: now,
                lease_until_ms: now + self.cfg.lease_ms,
                limit: room.min(self.cfg.claim_batch.max(1)) as i64,
                include_schedule,
                owned_buckets: owned,
                foreign_due_before_ms: now - self.cfg.affinity_grace_ms,
                own_fires_due_before_ms: Some(own_backstop),
                skip_tenant: skip_tenant.clone(),
            })
            .await?;
        let limit = room.min(self.cfg.claim_batch.max(1));
        let mut full = claimed.len() == limit;
        Counters::add(&self.counters.claimed, claimed.len() as u64);
        if claimed.is_empty() {
            Counters::add(&self.counters.claim_empty, 1);
        }
        let foreign = claimed
            .iter()
            .filter(|r| r.trigger == TriggerKind::Schedule && owned & (1u64 << bucket_of(&r.job_id)) == 0)
            .count();
        Counters::add(&self.counters.claimed_foreign, foreign as u64);
        let mut queued = self.take_into_timer(claimed).await;
        let room = self.cfg.capacity.saturating_sub(self.fire.timer.len()).min(self.cfg.claim_batch.max(1));
        if include_schedule && room > 0 {
            let peeked = self.peek(owned, now, room, skip_tenant).await?;
            full |= peeked.len() == room;
            Counters::add(&self.counters.peeked, peeked.len() as u64);
            queued += self.take_into_timer(peeked).await;
        }
        Ok((queued, full))
    }

    /// Read the pending schedule fires of this node's buckets due within the claim window,
    /// after the cursor, without claiming them: most fires then cost no claim write at
    /// all, and the dispatch transaction takes them from `pending` under the row lock.
    ///
    /// Rules that keep every fire found (ARCHITECTURE.md, "the peek"): the cursor only
    /// moves forward over what was read; it restarts `affinity_grace_ms` back whenever the
    /// node's buckets change; a run written `pending` below a cursor cannot happen in the
    /// normal course, because the generator writes any run due within the claim window plus
    /// [`Engine::insert_claim_margin_ms`] already claimed by itself; and anything left `pending`
    /// past the grace (a node that died, a dispatch that failed) is claimed by any node's
    /// claim, as a backstop.
    async fn peek(&self, owned: u64, now: i64, room: usize, skip_tenant: Option<String>) -> Result<Vec<Run>> {
        let (after_ms, after_id) = {
            let mut c = self.membership.peek_cursor.lock().expect("cursor lock");
            if c.mask != owned {
                *c = PeekCursor { mask: owned, at_ms: now - self.cfg.affinity_grace_ms, id: String::new() };
            }
            (c.at_ms, c.id.clone())
        };
        let runs = self
            .store
            .run_peek(&PeekParams {
                after_ms,
                after_id,
                due_before_ms: now + self.cfg.claim_window_ms,
                owned_buckets: owned,
                limit: room as i64,
                skip_tenant,
            })
            .await?;
        if let Some(last) = runs.last() {
            let mut c = self.membership.peek_cursor.lock().expect("cursor lock");
            // Only for the buckets it was read for (the read itself only goes forward).
            if c.mask == owned {
                c.at_ms = last.scheduled_at_ms;
                c.id = last.id.clone();
            }
        }
        Ok(runs)
    }

    /// Put claimed or peeked runs into the timer, applying the misfire policy to late
    /// schedule fires first (in bulk: [`Engine::settle_late`]). Returns how many entered the timer.
    pub(crate) async fn take_into_timer(&self, runs: Vec<Run>) -> usize {
        let now = self.now_ms();
        let late: Vec<LateFire> = runs
            .iter()
            .filter(|r| {
                matches!(r.state, RunState::Pending | RunState::Queued)
                    && r.trigger == TriggerKind::Schedule
                    && r.scheduled_at_ms < now
            })
            .map(|r| LateFire { id: r.id.clone(), job_id: r.job_id.clone(), scheduled_at_ms: r.scheduled_at_ms })
            .collect();
        let keep: Option<HashSet<String>> = if late.is_empty() {
            None
        } else {
            match self.settle_late(&late).await {
                Ok(kept) => Some(kept.into_iter().collect()),
                Err(e) => {
                    // The rest of the batch still goes on; these come back with their lease
                    // (claimed) or through the claim's backstop (peeked).
                    tracing::warn!(runs = late.len(), error = %e, "misfire check failed; the runs will come back");
                    Some(HashSet::new())
                }
            }
        };
        let late_ids: HashSet<&str> = late.iter().map(|f| f.id.as_str()).collect();
        let mut queued = 0;
        let soon = now + self.cfg.tick_ms as i64 + self.dispatch_lead_ms();
        let mut wake = false;
        for run in runs {
            if late_ids.contains(run.id.as_str()) && !keep.as_ref().is_some_and(|k| k.contains(&run.id)) {
                continue;
            }
            let due = match run.state {
                RunState::Retrying => run.next_attempt_at_ms.unwrap_or(now),
                _ => run.scheduled_at_ms,
            };
            self.fire.timer.push_run(due, &run);
            if late_ids.contains(run.id.as_str()) {
                self.fire.timer.settled(&run.id);
            }
            wake |= due < soon;
            queued += 1;
        }
        if wake {
            self.fire.due_sooner.notify_one();
        }
        queued
    }
}

/// The claimer service: [`Engine::claim_round`] every tick, or at once when woken (a
/// trigger, a result, a retry); a full claim is followed by the next without waiting.
pub(crate) struct Claimer {
    engine: Arc<Engine>,
    settings: ClaimerSettings,
}

/// The claimer's settings. Its step reads `capacity`, `claim_batch`, `claim_window_ms`,
/// `lease_ms`, `affinity_grace_ms`, `tick_ms` and `node_id`.
#[derive(Debug, Clone)]
pub(crate) struct ClaimerSettings {
    /// The poll interval (`tick_ms`).
    pub tick: Duration,
    /// The pause after a failed claim.
    pub after_failure: Duration,
}

impl Claimer {
    pub(crate) fn new(engine: &Arc<Engine>) -> Self {
        let settings = ClaimerSettings {
            tick: Duration::from_millis(engine.cfg.tick_ms),
            after_failure: Duration::from_millis(500),
        };
        Claimer { engine: engine.clone(), settings }
    }

    /// One claim round: how many runs entered the timer, and whether it came back full.
    pub(crate) async fn run_once(&self) -> Result<(usize, bool)> {
        self.engine.claim_round().await
    }

    /// Start the loop; it ends when `cancel` fires.
    pub(crate) fn spawn(self, cancel: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            let e = &self.engine;
            let mut full = false;
            loop {
                if full {
                    // The last claim took all it asked for: more may be due already.
                    if cancel.is_cancelled() {
                        break;
                    }
                } else {
                    tokio::select! {
                        _ = cancel.cancelled() => break,
                        _ = tokio::time::sleep(self.settings.tick) => {}
                        _ = e.wake.notified() => {}
                    }
                }
                full = false;
                match self.run_once().await {
                    Ok((_, f)) => full = f,
                    Err(err) => {
                        Counters::add(&e.counters.claim_failures, 1);
                        let EngineError::Store(se) = &err;
                        if se.is_retryable() {
                            Counters::add(&e.counters.claim_rollbacks, 1);
                        }
                        tracing::warn!(error = %err, "claim failed; retrying");
                        tokio::time::sleep(self.settings.after_failure).await;
                    }
                }
            }
        })
    }
}
