//! The node: wires the engine's services, starts them in order and stops them in the
//! shutdown order, both written down here and nowhere else.
//!
//! **Start** ([`Engine::start`]): hand back the claims of this node id's previous life
//! (they are in no timer now); one heartbeat, to join the cluster and read the live node
//! set (job affinity) before anything claims; then the services, in this order: generator,
//! claimer, at-dispatch sync, at-dispatch fill, timer loop, shard retrier, heartbeat,
//! retention, reaper, exchange watch. (The canceller, which the API shares, runs from
//! [`Engine::new`] and is never stopped: cancels are best effort.)
//!
//! **Shutdown**, on SIGTERM, in this order and why:
//! 1. [`Engine::stop`]: cancel every service at once and wait for each (none is cut off in
//!    a step): no more generating, claiming, peeking or popping the timer;
//! 2. mark the node `left`: the others take its job buckets at their next heartbeat, and
//!    none declares it dead (which would hand its dispatches in flight back for
//!    redelivery) while it finishes them;
//! 3. drain the timer and hand back what it held: unwritten fires of high-frequency jobs
//!    become `pending` rows for the next owner, claimed runs are released (`run_release`);
//!    the serving process keeps answering HTTP meanwhile;
//! 4. [`Engine::drain`]: close the delivery tracker and wait, up to the grace, for the
//!    dispatch transactions under way and the deliveries they committed;
//! 5. hand over again the unwritten fires whose dispatch failed after step 3, and mark the
//!    node `left` again (a heartbeat under way during step 2 may have written `alive`).

use std::sync::Arc;
use std::time::Duration;

use crate::engine::Engine;
use crate::{Result, at_dispatch, retry_deadlock};

impl Engine {
    /// Start the services, in the order of the [module doc](crate::node). Stop with
    /// [`Engine::shutdown`].
    pub async fn start(self: &Arc<Self>) {
        // A restart in place (same node id): the previous life's claims are not in this
        // timer, so hand them back now instead of waiting for their leases.
        let node = &self.node;
        match retry_deadlock(|| node.store.node_recover_own(&node.cfg.node_id, node.now_ms())).await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(runs = n, "handed back the claims of this node id's previous run"),
            Err(e) => tracing::warn!(error = %e, "could not hand back earlier claims; their leases will"),
        }
        // Join the cluster (and read the live node set for job affinity) before claiming.
        if let Err(e) = self.heartbeat_once().await {
            tracing::warn!(error = %e, "first heartbeat failed; retrying");
        }
        let (cancel, s) = (&node.life.cancel, &self.services);
        let mut tasks = self.tasks.lock().await;
        tasks.push(s.generator.clone().spawn(cancel.clone()));
        tasks.push(s.claimer.clone().spawn(cancel.clone()));
        tasks.push(s.at_dispatch_sync.clone().spawn(cancel.clone()));
        tasks.push(s.at_dispatch_fill.clone().spawn(cancel.clone()));
        tasks.push(s.timer.clone().spawn());
        tasks.push(s.shard_retrier.clone().spawn(cancel.clone()));
        tasks.push(s.heartbeat.clone().spawn(cancel.clone()));
        tasks.push(s.retention.clone().spawn(cancel.clone()));
        tasks.push(s.reaper.clone().spawn(cancel.clone()));
        tasks.push(s.exchange_watch.clone().spawn(cancel.clone()));
    }

    /// Graceful stop: no more generating or claiming, hand back claimed runs not yet
    /// dispatched, and wait up to `grace` for deliveries in flight.
    pub async fn shutdown(self: &Arc<Self>, grace: Duration) {
        self.stop().await;
        self.drain(grace).await;
    }

    /// The first half of [`Engine::shutdown`], done before anything else on SIGTERM: stop
    /// the loops (no more claiming, generating or popping the timer), mark the node `left`
    /// (the others take its job buckets at their next heartbeat, and no heartbeat check
    /// declares it dead, handing back the dispatches still in flight for redelivery, while it
    /// finishes them), and hand back the timer's claimed runs that were not dispatched.
    /// Deliveries already committed go on; [`Engine::drain`] waits for them.
    pub async fn stop(self: &Arc<Self>) {
        let node = &self.node;
        node.life.cancel.cancel();
        for t in self.tasks.lock().await.drain(..) {
            let _ = t.await;
        }
        if let Err(e) = node.store.node_leave(&node.cfg.node_id).await {
            tracing::warn!(error = %e, "could not mark this node as leaving");
        }
        let held = node.fire.timer.drain();
        // Unwritten fires (high-frequency jobs') become `pending` rows for the next owner.
        at_dispatch::hand_over(node).await;
        if !held.is_empty() {
            match node.store.run_release(&node.cfg.node_id, &held, node.now_ms()).await {
                Ok(n) => tracing::info!(released = n, "handed back claimed runs"),
                Err(e) => {
                    tracing::warn!(error = %e, "could not hand back claimed runs; they return when their lease expires")
                }
            }
        }
    }

    /// The second half of [`Engine::shutdown`]: wait up to `grace` for the dispatch
    /// transactions under way and the deliveries of what they committed (including those
    /// still waiting for a delivery permit), then mark the node `left` again (a heartbeat
    /// that was under way during [`Engine::stop`] may have written `alive` after it).
    pub async fn drain(self: &Arc<Self>, grace: Duration) {
        let node = &self.node;
        node.fire.deliveries.close();
        if tokio::time::timeout(grace, node.fire.deliveries.wait()).await.is_err() {
            tracing::warn!("deliveries still in flight after the grace period");
        }
        // Fires whose dispatch failed after the hand-over in `stop` came back unwritten:
        // hand them over too (else the next owner finds them only by their gap).
        at_dispatch::hand_over(node).await;
        if let Err(e) = node.store.node_leave(&node.cfg.node_id).await {
            tracing::warn!(error = %e, "could not mark this node as gone");
        }
    }

    /// Generate, claim and fire everything due now, waiting for deliveries: one
    /// deterministic turn of the engine for tests driven by a manual clock.
    pub async fn tick(self: &Arc<Self>) -> Result<usize> {
        self.generate_once().await?;
        self.at_dispatch_fill();
        self.at_dispatch_sync().await?;
        self.at_dispatch_fill();
        self.claim_once().await?;
        let fired = self.fire_due(true).await;
        self.shard_retry_once(true).await?;
        Ok(fired)
    }
}
