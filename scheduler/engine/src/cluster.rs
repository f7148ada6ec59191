//! The node's place in the cluster: heartbeats stamped with database time, the
//! clock-skew guard, dead-node recovery, the live node set behind job affinity
//! (`sundial_core::affinity`). None of these needs a
//! leader: every step is a conditional write that is correct when several nodes run it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use sundial_core::affinity::{self, Ring};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::Result;
use crate::shared::Shared;

/// The heartbeat service: every `heartbeat_ms`, one [`Heartbeat::run_once`], at a steady
/// pace, never backing off: a node that backed off past `node_dead_ms` would be declared
/// dead by the others while still working.
pub(crate) struct Heartbeat {
    node: Arc<Shared>,
    settings: HeartbeatSettings,
}

/// The heartbeat's settings: its slice of [`crate::EngineConfig`].
#[derive(Debug, Clone)]
pub(crate) struct HeartbeatSettings {
    /// How often it beats (`heartbeat_ms`).
    pub every: Duration,
    /// This node's id and address, as the node list shows them (`node_id`, `address`).
    pub node_id: String,
    pub address: String,
    /// Stop claiming while this node's clock is further than this from the database's.
    pub max_clock_skew_ms: i64,
    /// A node without a heartbeat for this long is dead (`node_dead_ms`).
    pub node_dead_ms: i64,
}

impl Heartbeat {
    pub(crate) fn new(node: &Arc<Shared>) -> Self {
        let cfg = &node.cfg;
        let settings = HeartbeatSettings {
            every: Duration::from_millis(cfg.heartbeat_ms),
            node_id: cfg.node_id.clone(),
            address: cfg.address.clone(),
            max_clock_skew_ms: cfg.max_clock_skew_ms,
            node_dead_ms: cfg.node_dead_ms,
        };
        Heartbeat { node: node.clone(), settings }
    }

    /// Heartbeat into the database, check this node's clock against the database's,
    /// and recover the claims of nodes that stopped heartbeating. Returns the dead nodes found.
    /// `now` stamps the beat; the skew is this node's clock when the database answered (a
    /// slow answer must not read as skew) minus the database's.
    pub(crate) async fn run_once(&self, now: i64) -> Result<Vec<String>> {
        let e = &self.node;
        let db_now = e.store.db_now_ms().await?;
        let answered = e.now_ms().max(now);
        let skew = answered - db_now;
        let too_far = skew.abs() > self.settings.max_clock_skew_ms;
        let was = e.membership.skewed.swap(too_far, Ordering::SeqCst);
        if too_far {
            tracing::error!(
                skew_ms = skew,
                max_ms = self.settings.max_clock_skew_ms,
                "this node's clock is too far from the database's: not claiming until it is fixed"
            );
        } else if was {
            tracing::info!(skew_ms = skew, "clock back in line with the database: claiming again");
        }
        // Each its own transaction: one the database rolled back to break a deadlock (with
        // another node reaping, say) is simply run again, not left for the next beat.
        let (lateness_ms, misfired) = e.load.take_beat();
        let beat = sundial_store::NodeBeat {
            id: self.settings.node_id.clone(),
            address: self.settings.address.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            claimed: e.fire.timer.len() as i64,
            started_at_ms: e.life.started_at_ms,
            lateness_ms,
            backlog: e.fire.timer.due_by(now) as i64,
            misfired: misfired as i64,
        };
        crate::retry_deadlock_only(|| e.store.node_heartbeat(&beat)).await?;
        let dead =
            crate::retry_deadlock_only(|| e.store.node_reap_dead(db_now - self.settings.node_dead_ms, now)).await?;
        for id in &dead {
            tracing::warn!(node_id = %id, "node stopped heartbeating: its claims were handed back");
        }
        if !dead.is_empty() {
            e.wake.notify_one();
        }
        let mut live = e.store.node_live_ids(db_now - self.settings.node_dead_ms).await?;
        self.set_members(&mut live);
        Ok(dead)
    }

    /// Recompute this node's share of the job buckets from the live node set (this node is
    /// always in it: it is alive, whatever the database said when it was read).
    fn set_members(&self, live: &mut Vec<String>) {
        let e = &self.node;
        if !live.contains(&self.settings.node_id) {
            live.push(self.settings.node_id.clone());
        }
        live.sort_unstable();
        live.dedup();
        let mut members = e.membership.members.lock().expect("members lock");
        if *members == *live {
            return;
        }
        let ring = Ring::new(live);
        let mask = ring.mask_of(&self.settings.node_id);
        e.membership.owned.store(mask, Ordering::SeqCst);
        tracing::info!(
            nodes = live.len(),
            buckets = mask.count_ones(),
            of = affinity::BUCKETS,
            members = ?live,
            "live node set changed: job buckets reassigned"
        );
        *members = std::mem::take(live);
        drop(members);
        // Buckets this node just took over may hold runs due now.
        e.wake.notify_one();
    }

    /// Start the loop; it ends when `cancel` fires.
    pub(crate) fn spawn(self: Arc<Self>, cancel: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = cancel.cancelled() => break,
                    _ = tokio::time::sleep(self.settings.every) => {}
                }
                if let Err(err) = self.run_once(self.node.now_ms()).await {
                    tracing::warn!(error = %err, "heartbeat failed; retrying");
                }
            }
        })
    }
}
