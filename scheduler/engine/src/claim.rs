//! The claimer: claims due runs into the node's timer (`run_claim`), then reads the
//! node's own schedule fires without claiming them (the peek); late schedule fires are
//! settled by their misfire policy before they enter the timer.

use std::sync::Arc;
use std::time::Duration;

use sundial_core::affinity::bucket_of;
use sundial_core::types::TriggerKind;
use sundial_store::{ClaimParams, PeekParams, Run};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::held::tenant_share;
use crate::shared::Shared;
use crate::stats::Counters;
use crate::{EngineError, Result, intake};

/// Where this node's peek stopped: the last (scheduled at, id) read, for the buckets `mask`.
#[derive(Debug, Default)]
pub(crate) struct PeekCursor {
    pub mask: u64,
    pub at_ms: i64,
    pub id: String,
}

/// The claimer service: its [`run_once`](Claimer::run_once) every tick, or at once when
/// woken (a trigger, a result, a retry); a full claim is followed by the next without
/// waiting. It owns where its peek stopped.
pub(crate) struct Claimer {
    node: Arc<Shared>,
    settings: ClaimerSettings,
    /// Where the peek of this node's buckets stopped.
    cursor: std::sync::Mutex<PeekCursor>,
}

/// The claimer's settings. Its step also reads `capacity`, `claim_batch`,
/// `claim_window_ms`, `lease_ms`, `affinity_grace_ms` and `node_id` from the node's config.
#[derive(Debug, Clone)]
pub(crate) struct ClaimerSettings {
    /// The poll interval (`tick_ms`).
    pub tick: Duration,
    /// The pause after a failed claim.
    pub after_failure: Duration,
}

impl Claimer {
    pub(crate) fn new(node: &Arc<Shared>) -> Self {
        let settings = ClaimerSettings {
            tick: Duration::from_millis(node.cfg.tick_ms),
            after_failure: Duration::from_millis(500),
        };
        Claimer { node: node.clone(), settings, cursor: Default::default() }
    }

    /// One claim round: claim runs due within the claim window (up to the timer's free
    /// capacity), apply the misfire policy to late schedule fires, and put the rest in the
    /// timer. Returns how many runs entered the timer, and whether the claim came back full
    /// (as many runs as it asked for: more may be due, so the claimer goes again without
    /// waiting a tick, and claiming keeps up with any rate the rest of the node sustains).
    pub(crate) async fn run_once(&self, now: i64) -> Result<(usize, bool)> {
        let node = &self.node;
        let room = node.cfg.capacity.saturating_sub(node.fire.timer.len());
        if room == 0 || node.clock_skewed() {
            return Ok((0, false));
        }
        let include_schedule = !node.schedules_paused().await?;
        let owned = node.owned_buckets();
        // The backstop for our own fires (those the peek reads): claimed once overdue past the
        // grace, like anyone's. But while this node is itself that far behind (its timer's
        // earliest run is older than the grace), its overdue fires are almost all in its timer
        // already; claiming them would add a write to each exactly when the node is short of
        // time, so then it waits as long as a claim's lease.
        let behind = node.fire.timer.next_due().is_some_and(|d| d < now - node.cfg.affinity_grace_ms);
        let own_backstop = now - if behind { node.cfg.lease_ms } else { node.cfg.affinity_grace_ms };
        Counters::add(&node.counters.claim_calls, 1);
        // A tenant over its share of the timer (its runs pile up: a hung executor's serial
        // jobs) is not claimed for: what room is left is the other tenants'.
        let skip_tenant = node.fire.timer.tenant_over(tenant_share(node.cfg.capacity));
        let claimed = node
            .store
            .run_claim(&ClaimParams {
                node_id: node.cfg.node_id.clone(),
                due_before_ms: now + node.cfg.claim_window_ms,
                now_ms: now,
                lease_until_ms: now + node.cfg.lease_ms,
                limit: room.min(node.cfg.claim_batch.max(1)) as i64,
                include_schedule,
                owned_buckets: owned,
                foreign_due_before_ms: now - node.cfg.affinity_grace_ms,
                own_fires_due_before_ms: Some(own_backstop),
                skip_tenant: skip_tenant.clone(),
            })
            .await?;
        let limit = room.min(node.cfg.claim_batch.max(1));
        let mut full = claimed.len() == limit;
        Counters::add(&node.counters.claimed, claimed.len() as u64);
        if claimed.is_empty() {
            Counters::add(&node.counters.claim_empty, 1);
        }
        let foreign = claimed
            .iter()
            .filter(|r| r.trigger == TriggerKind::Schedule && owned & (1u64 << bucket_of(&r.job_id)) == 0)
            .count();
        Counters::add(&node.counters.claimed_foreign, foreign as u64);
        let mut queued = intake::take_into_timer(node, claimed).await;
        let room = node.cfg.capacity.saturating_sub(node.fire.timer.len()).min(node.cfg.claim_batch.max(1));
        if include_schedule && room > 0 {
            let peeked = self.peek(owned, now, room, skip_tenant).await?;
            full |= peeked.len() == room;
            Counters::add(&node.counters.peeked, peeked.len() as u64);
            queued += intake::take_into_timer(node, peeked).await;
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
    /// [`intake::insert_claim_margin_ms`] already claimed by itself; and anything left `pending`
    /// past the grace (a node that died, a dispatch that failed) is claimed by any node's
    /// claim, as a backstop.
    async fn peek(&self, owned: u64, now: i64, room: usize, skip_tenant: Option<String>) -> Result<Vec<Run>> {
        let node = &self.node;
        let (after_ms, after_id) = {
            let mut c = self.cursor.lock().expect("cursor lock");
            if c.mask != owned {
                *c = PeekCursor { mask: owned, at_ms: now - node.cfg.affinity_grace_ms, id: String::new() };
            }
            (c.at_ms, c.id.clone())
        };
        let runs = node
            .store
            .run_peek(&PeekParams {
                after_ms,
                after_id,
                due_before_ms: now + node.cfg.claim_window_ms,
                owned_buckets: owned,
                limit: room as i64,
                skip_tenant,
            })
            .await?;
        if let Some(last) = runs.last() {
            let mut c = self.cursor.lock().expect("cursor lock");
            // Only for the buckets it was read for (the read itself only goes forward).
            if c.mask == owned {
                c.at_ms = last.scheduled_at_ms;
                c.id = last.id.clone();
            }
        }
        Ok(runs)
    }

    /// Start the loop; it ends when `cancel` fires.
    pub(crate) fn spawn(self: Arc<Self>, cancel: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            let e = &self.node;
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
                match self.run_once(e.now_ms()).await {
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
