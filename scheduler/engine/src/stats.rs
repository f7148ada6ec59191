//! What one engine has done: the counters its services bump and the snapshot tests read.

/// What one engine has done since it was created (tests read these; the node list shows load through the heartbeat).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// `run_claim` calls.
    pub claim_calls: u64,
    /// Calls that returned no run.
    pub claim_empty: u64,
    /// Runs won by this node's claims.
    pub claimed: u64,
    /// Of those, schedule fires of buckets this node did not own when it claimed them
    /// (taken after the affinity grace, or recovered from an expired lease).
    pub claimed_foreign: u64,
    /// Claims that failed (the claimer retries after 500 ms), and how many of them were
    /// rolled back by the database (deadlocks, lock wait timeouts).
    pub claim_failures: u64,
    pub claim_rollbacks: u64,
    /// Runs popped from this node's timer and handed to dispatch (a `serial` run blocked by
    /// its predecessor counts once per check).
    pub dispatched: u64,
    /// Pending schedule fires of its own buckets the node read into its timer without
    /// claiming them (the peek).
    pub peeked: u64,
    /// Runs the generator wrote already claimed by this node, because they were due within
    /// the claim window (and a margin) when written: a new job's first fires, catch-up.
    pub claimed_at_insert: u64,
    /// Attempts failed `saturated`: not sent, their app's or tenant's share of the delivery
    /// slots stayed in use ([`bulkhead`]).
    pub saturated: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub claim_calls: std::sync::atomic::AtomicU64,
    pub claim_empty: std::sync::atomic::AtomicU64,
    pub claimed: std::sync::atomic::AtomicU64,
    pub claimed_foreign: std::sync::atomic::AtomicU64,
    pub claim_failures: std::sync::atomic::AtomicU64,
    pub claim_rollbacks: std::sync::atomic::AtomicU64,
    pub dispatched: std::sync::atomic::AtomicU64,
    pub peeked: std::sync::atomic::AtomicU64,
    pub claimed_at_insert: std::sync::atomic::AtomicU64,
    /// Attempts not sent because their app's or tenant's share stayed in use.
    pub saturated: std::sync::atomic::AtomicU64,
}

impl Counters {
    pub fn add(c: &std::sync::atomic::AtomicU64, n: u64) {
        c.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }
}
