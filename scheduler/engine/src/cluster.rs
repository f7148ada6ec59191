//! The node's place in the cluster: heartbeats stamped with database time, the
//! clock-skew guard, dead-node recovery and retention cleanup. None of these needs a
//! leader: every step is a conditional write that is correct when several nodes run it.

use std::sync::atomic::Ordering;

use crate::{Engine, Result};

impl Engine {
    /// Heartbeat into the database, check this node's clock against the database's,
    /// and recover the claims of nodes that stopped heartbeating. Returns the dead nodes found.
    pub async fn heartbeat_once(&self) -> Result<Vec<String>> {
        let db_now = self.store.db_now_ms().await?;
        let skew = self.now_ms() - db_now;
        let too_far = skew.abs() > self.cfg.max_clock_skew_ms;
        let was = self.skewed.swap(too_far, Ordering::SeqCst);
        if too_far {
            tracing::error!(
                skew_ms = skew,
                max_ms = self.cfg.max_clock_skew_ms,
                "this node's clock is too far from the database's: not claiming until it is fixed"
            );
        } else if was {
            tracing::info!(skew_ms = skew, "clock back in line with the database: claiming again");
        }
        self.store
            .node_heartbeat(
                &self.cfg.node_id,
                &self.cfg.address,
                env!("CARGO_PKG_VERSION"),
                self.timer.len() as i64,
                self.started_at_ms,
            )
            .await?;
        let dead = self.store.node_reap_dead(db_now - self.cfg.node_dead_ms, self.now_ms()).await?;
        for id in &dead {
            tracing::warn!(node_id = %id, "node stopped heartbeating: its claims were handed back");
        }
        if !dead.is_empty() {
            self.wake.notify_one();
        }
        Ok(dead)
    }

    /// Delete finished runs, their logs and silent executors older than the retention
    /// period, in bounded batches. Returns runs deleted.
    pub async fn retention_once(&self) -> Result<u64> {
        let before = self.now_ms() - self.cfg.retention_ms;
        let mut total = 0;
        loop {
            let n = self.store.retention_cleanup(before, 500).await?;
            total += n;
            if n < 500 {
                break;
            }
        }
        if total > 0 {
            tracing::info!(runs = total, "retention: old runs deleted");
        }
        Ok(total)
    }

    /// Is claiming suspended because this node's clock disagrees with the database?
    pub fn clock_skewed(&self) -> bool {
        self.skewed.load(Ordering::SeqCst)
    }
}
