//! Cluster nodes (heartbeats, leases handed back) and settings: [`NodeStore`].
//! SQL in `sql/nodes.rs`.

use async_trait::async_trait;

use crate::{Node, NodeBeat, Result};

/// Nodes of the cluster and the operator's settings.
#[async_trait]
pub trait NodeStore: Send + Sync {
    /// Record a node's heartbeat (inserting it on first call), stamped with database time.
    async fn node_heartbeat(&self, beat: &NodeBeat) -> Result<()>;
    /// Mark a node as having left (graceful shutdown).
    async fn node_leave(&self, id: &str) -> Result<()>;
    async fn node_list(&self) -> Result<Vec<Node>>;
    /// Ids of the live nodes: `alive` with a heartbeat at or after `alive_since_ms`
    /// (database time). The ring of job affinity is computed from them.
    async fn node_live_ids(&self, alive_since_ms: i64) -> Result<Vec<String>>;
    /// Nodes silent since `dead_before_ms` (database time) are dead: their claimed runs
    /// go back (`queued` → `pending`, retrying runs lose their owner) and their
    /// `dispatching` runs' leases end, so any node recovers them at once. Returns the
    /// ids of nodes newly found dead.
    async fn node_reap_dead(&self, dead_before_ms: i64, now_ms: i64) -> Result<Vec<String>>;
    /// A node starting under an id that may have run before (a restart in place): hand back
    /// whatever its previous life claimed, as for a dead node. Returns the runs handed back.
    async fn node_recover_own(&self, id: &str, now_ms: i64) -> Result<u64>;

    async fn setting_get(&self, name: &str) -> Result<Option<String>>;
    async fn setting_set(&self, name: &str, value: &str, now_ms: i64) -> Result<()>;
}
