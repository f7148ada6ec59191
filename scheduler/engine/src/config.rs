//! The node's engine settings ([`EngineConfig`]) and their defaults. Each service takes
//! the slice it needs (its `…Settings`, built from this in [`crate::node`]).

/// Name of the operator switch in the `settings` table.
pub const SETTING_SCHEDULES_PAUSED: &str = "schedules_paused";

#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub node_id: String,
    /// Runs are generated this far ahead.
    pub horizon_ms: i64,
    /// Runs due within this window are claimed into the timer.
    pub claim_window_ms: i64,
    /// At most this many runs wait in the timer (memory bound under any backlog).
    pub capacity: usize,
    /// Runs per claim transaction at most (a full claim is followed by the next at once).
    pub claim_batch: usize,
    /// How long a claim or a dispatch is ours without renewal.
    pub lease_ms: i64,
    /// Poll interval of the claimer (it is also woken by triggers and results).
    pub tick_ms: u64,
    /// Deliveries in flight at once.
    pub max_inflight: usize,
    /// Deliveries in flight at once for one app (its bulkhead, [`bulkhead`]); `None`: half
    /// of `max_inflight`.
    pub max_inflight_per_app: Option<usize>,
    /// Deliveries in flight at once for one tenant; `None`: three quarters of `max_inflight`.
    pub max_inflight_per_tenant: Option<usize>,
    /// The node's default tenant quotas (operators override them per tenant): the engine
    /// enforces `max_inflight`, per node, as a tenant's share of the delivery slots.
    pub quotas: sundial_core::quota::Quotas,
    /// A running run is failed `timeout` this long after its deadline.
    pub reaper_grace_ms: i64,
    /// An executor silent this long is offline (static endpoints never are).
    pub executor_offline_ms: i64,
    /// An executor silent this long has lost the runs it was running.
    pub executor_lost_ms: i64,
    /// This node's address, shown in the node list.
    pub address: String,
    /// A node without a heartbeat for this long is dead (its claims are recovered).
    pub node_dead_ms: i64,
    /// Stop claiming while this node's clock is further than this from the database's.
    pub max_clock_skew_ms: i64,
    /// Finished runs and their logs are deleted after this long.
    pub retention_ms: i64,
    /// How often this node heartbeats, recovers dead nodes and re-reads the live node set.
    pub heartbeat_ms: u64,
    /// Job affinity: schedule fires of jobs another node owns are claimed once they are
    /// this late (so a dying owner's share still fires before it is declared dead).
    pub affinity_grace_ms: i64,
    /// How often retention cleanup runs.
    pub retention_every_ms: u64,
    /// Dispatch lead, at most: runs are taken from the timer this much before they are
    /// due (as much as recent dispatch transactions took, see [`crate::Engine::dispatch_lead_ms`]),
    /// so that the `dispatching` commit is done by the fire's instant and the delivery
    /// goes out on time; the delivery itself waits for the instant. 0 turns it off.
    pub max_dispatch_lead_ms: i64,
    /// An executor's answer larger than this fails the attempt `answer_too_large` (it is
    /// not read into memory).
    pub max_answer_bytes: usize,
    /// Largest run output accepted, bytes (its compact JSON); a larger one fails the attempt
    /// `output_too_large`.
    pub max_output_bytes: usize,
    /// Where deliveries and cancels may go ([`sundial_core::outbound`]).
    pub outbound: sundial_core::outbound::OutboundPolicy,
    /// This node's built-in script runner, if it has one (`sundial serve` starts it).
    pub builtin_runner: Option<BuiltinRunner>,
}

/// A node's built-in script runner: for every app's script jobs of the runtimes it runs, a
/// candidate beside the app's registered runners (after them in registration order), under
/// the executor id `builtin:<node id>`. It is an executor like any other: signed
/// deliveries to `address`, cancels to `address/cancel`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinRunner {
    pub address: String,
    /// `wasm`, `python`, …: what it runs on this node.
    pub runtimes: Vec<String>,
}

impl EngineConfig {
    /// The per-app and per-tenant shares of the delivery slots in force.
    pub fn shares(&self) -> (usize, usize) {
        let all = self.max_inflight.max(1);
        let app = self.max_inflight_per_app.unwrap_or(all / 2).clamp(1, all);
        let tenant = self.max_inflight_per_tenant.unwrap_or(all * 3 / 4).clamp(1, all);
        (app, tenant)
    }

    pub fn new(node_id: impl Into<String>) -> Self {
        Self {
            node_id: node_id.into(),
            horizon_ms: 180_000,
            claim_window_ms: 5_000,
            capacity: 50_000,
            claim_batch: 1_000,
            lease_ms: 30_000,
            tick_ms: 200,
            max_inflight: 512,
            max_inflight_per_app: None,
            max_inflight_per_tenant: None,
            quotas: sundial_core::quota::Quotas::default(),
            reaper_grace_ms: 5_000,
            executor_offline_ms: sundial_core::route::EXECUTOR_OFFLINE_MS,
            executor_lost_ms: 30_000,
            address: String::new(),
            node_dead_ms: sundial_core::affinity::NODE_DEAD_MS,
            max_clock_skew_ms: 2_000,
            retention_ms: 5 * 24 * 3_600_000,
            heartbeat_ms: 3_000,
            affinity_grace_ms: 2_000,
            retention_every_ms: 60_000,
            max_dispatch_lead_ms: 2_000,
            max_answer_bytes: 1024 * 1024,
            max_output_bytes: sundial_core::protocol::DEFAULT_MAX_OUTPUT_BYTES,
            outbound: sundial_core::outbound::OutboundPolicy::default(),
            builtin_runner: None,
        }
    }
}
