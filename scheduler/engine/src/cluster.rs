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

use crate::{Engine, Result};

impl Engine {
    /// Heartbeat into the database, check this node's clock against the database's,
    /// and recover the claims of nodes that stopped heartbeating. Returns the dead nodes found.
    pub async fn heartbeat_once(&self) -> Result<Vec<String>> {
        let db_now = self.store.db_now_ms().await?;
        let skew = self.now_ms() - db_now;
        let too_far = skew.abs() > self.cfg.max_clock_skew_ms;
        let was = self.membership.skewed.swap(too_far, Ordering::SeqCst);
        if too_far {
            tracing::error!(
                skew_ms = skew,
                max_ms = self.cfg.max_clock_skew_ms,
                "this node's clock is too far from the database's: not claiming until it is fixed"
            );
        } else if was {
            tracing::info!(skew_ms = skew, "clock back in line with the database: claiming again");
        }
        // Each its own transaction: one the database rolled back to break a deadlock (with
        // another node reaping, say) is simply run again, not left for the next beat.
        let (lateness_ms, misfired) = self.load.take_beat();
        let beat = sundial_store::NodeBeat {
            id: self.cfg.node_id.clone(),
            address: self.cfg.address.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            claimed: self.fire.timer.len() as i64,
            started_at_ms: self.life.started_at_ms,
            lateness_ms,
            backlog: self.fire.timer.due_by(self.now_ms()) as i64,
            misfired: misfired as i64,
        };
        crate::retry_deadlock_only(|| self.store.node_heartbeat(&beat)).await?;
        let dead =
            crate::retry_deadlock_only(|| self.store.node_reap_dead(db_now - self.cfg.node_dead_ms, self.now_ms()))
                .await?;
        for id in &dead {
            tracing::warn!(node_id = %id, "node stopped heartbeating: its claims were handed back");
        }
        if !dead.is_empty() {
            self.wake.notify_one();
        }
        let mut live = self.store.node_live_ids(db_now - self.cfg.node_dead_ms).await?;
        self.set_members(&mut live);
        Ok(dead)
    }

    /// Recompute this node's share of the job buckets from the live node set (this node is
    /// always in it: it is alive, whatever the database said when it was read).
    pub(crate) fn set_members(&self, live: &mut Vec<String>) {
        if !live.contains(&self.cfg.node_id) {
            live.push(self.cfg.node_id.clone());
        }
        live.sort_unstable();
        live.dedup();
        let mut members = self.membership.members.lock().expect("members lock");
        if *members == *live {
            return;
        }
        let ring = Ring::new(live);
        let mask = ring.mask_of(&self.cfg.node_id);
        self.membership.owned.store(mask, Ordering::SeqCst);
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
        self.wake.notify_one();
    }

    /// The job buckets this node owns (bit `b` = bucket `b`).
    pub fn owned_buckets(&self) -> u64 {
        self.membership.owned.load(Ordering::SeqCst)
    }

    /// The live node set this node's share was last computed from (sorted ids; empty
    /// before the first heartbeat).
    pub fn members(&self) -> Vec<String> {
        self.membership.members.lock().expect("members lock").clone()
    }

    /// Is claiming suspended because this node's clock disagrees with the database?
    pub fn clock_skewed(&self) -> bool {
        self.membership.skewed.load(Ordering::SeqCst)
    }
}

/// The heartbeat service: every `heartbeat_ms`, [`Engine::heartbeat_once`], at a steady
/// pace, never backing off: a node that backed off past `node_dead_ms` would be declared
/// dead by the others while still working.
pub(crate) struct Heartbeat {
    engine: Arc<Engine>,
    settings: HeartbeatSettings,
}

/// The heartbeat's settings. Its step reads `max_clock_skew_ms`, `node_dead_ms`, `address`
/// and `node_id`.
#[derive(Debug, Clone)]
pub(crate) struct HeartbeatSettings {
    /// How often it beats (`heartbeat_ms`).
    pub every: Duration,
}

impl Heartbeat {
    pub(crate) fn new(engine: &Arc<Engine>) -> Self {
        let every = Duration::from_millis(engine.cfg.heartbeat_ms);
        Heartbeat { engine: engine.clone(), settings: HeartbeatSettings { every } }
    }

    /// One beat: the dead nodes found.
    pub(crate) async fn run_once(&self) -> Result<Vec<String>> {
        self.engine.heartbeat_once().await
    }

    /// Start the loop; it ends when `cancel` fires.
    pub(crate) fn spawn(self, cancel: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = cancel.cancelled() => break,
                    _ = tokio::time::sleep(self.settings.every) => {}
                }
                if let Err(err) = self.run_once().await {
                    tracing::warn!(error = %err, "heartbeat failed; retrying");
                }
            }
        })
    }
}
