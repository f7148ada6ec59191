//! The state a node's services share: [`Shared`] (the store and the clock, the timer and
//! the fire path's limits, the calls to executors, the cluster membership, the counters) and
//! small accessors on it. No behaviour lives here: each service (its own file) works on this
//! state through an `Arc<Shared>`, and [`crate::Engine`] wires them.

use std::sync::Arc;

use sundial_core::clock::SharedClock;
use sundial_core::route::RouteState;
use sundial_store::Store;
use tokio::sync::{Mutex, Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::bulkhead;
use crate::cancel::Canceller;
use crate::config::{EngineConfig, SETTING_SCHEDULES_PAUSED};
use crate::lead::{DISPATCH_SLOTS, DispatchLead};
use crate::stats::{Counters, EngineStats};
use crate::transport::DeliveryClient;
use crate::{Result, held, instant_gate, misfire, outcome, timer};

/// What a node's services share (see the module doc).
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) clock: SharedClock,
    pub(crate) cfg: EngineConfig,
    /// Woken when runs may have become due (a trigger, a child run, a retry).
    pub(crate) wake: Arc<Notify>,
    /// The fire path: the timer and what takes its runs to their delivery (`timer.rs`,
    /// `delivery.rs`, `shard.rs`).
    pub(crate) fire: FirePath,
    /// This node's high-frequency jobs, whose fires enter the timer without a row
    /// (`held.rs`; the services filling it are in `at_dispatch.rs`).
    pub(crate) at_dispatch: held::AtDispatch,
    /// How far ahead of their instant runs leave the timer (`Shared::dispatch_lead_ms`).
    pub(crate) lead: DispatchLead,
    /// Calls to executors and the results they bring back (`transport.rs`, `outcome.rs`).
    pub(crate) calls: Calls,
    /// This node in the cluster: its clock check, its share of the job buckets, where its
    /// peek stopped (`cluster.rs`, `timer.rs`).
    pub(crate) membership: Membership,
    /// How late this node is: for the heartbeat and the rate-limited "behind" WARN.
    pub(crate) load: misfire::Load,
    pub(crate) counters: Counters,
    /// The loops and their stop signal.
    pub(crate) life: Lifecycle,
}

/// The fire path's state (see [`Shared`]).
#[derive(Debug)]
pub(crate) struct FirePath {
    pub(crate) timer: timer::Timer,
    pub(crate) routes: Mutex<RouteState>,
    /// Dispatch transactions in flight at once (each commits a batch of runs).
    pub(crate) batch_slots: Arc<Semaphore>,
    /// Delivery slots: HTTP exchanges in flight at once (`max_inflight`).
    pub(crate) inflight: Arc<Semaphore>,
    /// Each app's and tenant's share of the delivery slots, taken before a slot.
    pub(crate) bulkheads: bulkhead::Bulkheads,
    /// Tenants' `max_inflight` quotas, re-read every few seconds.
    pub(crate) tenant_quotas: bulkhead::TenantQuotas,
    /// Deliveries committed ahead wait for their instant here, to leave in pop order.
    pub(crate) gate: Arc<instant_gate::InstantGate>,
    /// Dispatch batches hand their runs to delivery in the order they were popped.
    pub(crate) turns: Arc<instant_gate::Turns>,
    /// Runs taken from the timer and not yet delivered (committed ahead of their instant,
    /// or waiting for a delivery slot): at most the timer's capacity.
    pub(crate) staged: Arc<Semaphore>,
    /// Dispatch batches and deliveries under way: shutdown waits for them.
    pub(crate) deliveries: tokio_util::task::TaskTracker,
    /// When a dispatch transaction last committed (engine clock, ms): tells a stalled
    /// database from a node that is merely busy.
    pub(crate) last_commit_ms: std::sync::atomic::AtomicI64,
    /// Wakes the timer loop when runs due sooner than its next look enter the timer (a
    /// trigger, a retry, a child run): they go at once instead of after up to a tick.
    pub(crate) due_sooner: tokio::sync::Notify,
}

/// Outbound calls and results (see [`Shared`]).
#[derive(Debug)]
pub(crate) struct Calls {
    pub(crate) client: DeliveryClient,
    /// Best-effort cancels, sent in the background (shared with the API of this node).
    pub(crate) cancels: Canceller,
    /// Group commit of the results of this node's deliveries.
    pub(crate) results: outcome::FinishBatcher,
}

/// This node's membership of the cluster (see [`Shared`]).
#[derive(Debug)]
pub(crate) struct Membership {
    pub(crate) skewed: std::sync::atomic::AtomicBool,
    /// Job affinity: the buckets this node owns in the ring of live nodes (all of them
    /// until the live set has been read).
    pub(crate) owned: std::sync::atomic::AtomicU64,
    /// The live node set the ring was last computed from (sorted ids).
    pub(crate) members: std::sync::Mutex<Vec<String>>,
}

/// When the node started, and the stop signal of its services.
#[derive(Debug)]
pub(crate) struct Lifecycle {
    pub(crate) started_at_ms: i64,
    pub(crate) cancel: CancellationToken,
}

impl Shared {
    pub(crate) fn new(store: Arc<dyn Store>, clock: SharedClock, cfg: EngineConfig, wake: Arc<Notify>) -> Arc<Shared> {
        let client = DeliveryClient::with_policy(clock.clone(), cfg.outbound).for_node(&cfg.node_id);
        let started_at_ms = clock.now_ms();
        Arc::new(Shared {
            fire: FirePath {
                timer: timer::Timer::default(),
                routes: Mutex::new(RouteState::new()),
                batch_slots: Arc::new(Semaphore::new(DISPATCH_SLOTS)),
                inflight: Arc::new(Semaphore::new(cfg.max_inflight)),
                gate: Arc::default(),
                tenant_quotas: bulkhead::TenantQuotas::new(cfg.quotas),
                turns: Arc::default(),
                bulkheads: {
                    let (app, tenant) = cfg.shares();
                    bulkhead::Bulkheads::new(app, tenant)
                },
                staged: Arc::new(Semaphore::new(cfg.capacity.max(cfg.max_inflight).max(1))),
                deliveries: tokio_util::task::TaskTracker::new(),
                last_commit_ms: std::sync::atomic::AtomicI64::new(i64::MIN / 2),
                due_sooner: tokio::sync::Notify::new(),
            },
            at_dispatch: held::AtDispatch::default(),
            lead: DispatchLead::new(cfg.max_dispatch_lead_ms),
            calls: Calls {
                cancels: Canceller::start(store.clone(), client.clone()),
                client,
                results: outcome::FinishBatcher::default(),
            },
            membership: Membership {
                skewed: std::sync::atomic::AtomicBool::new(false),
                owned: std::sync::atomic::AtomicU64::new(sundial_core::affinity::ALL_BUCKETS),
                members: std::sync::Mutex::new(Vec::new()),
            },
            load: misfire::Load::default(),
            counters: Counters::default(),
            life: Lifecycle { started_at_ms, cancel: CancellationToken::new() },
            store,
            clock,
            cfg,
            wake,
        })
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// This node's best-effort cancel sender (the API queues its cancels here too).
    pub fn cancels(&self) -> &Canceller {
        &self.calls.cancels
    }

    /// `n` staging permits at once: runs taken from the timer until they are delivered.
    pub(crate) async fn staged_permits(&self, n: usize) -> tokio::sync::OwnedSemaphorePermit {
        let n = n.min(self.cfg.capacity.max(self.cfg.max_inflight)).max(1) as u32;
        self.fire.staged.clone().acquire_many_owned(n).await.expect("the semaphore is never closed")
    }

    /// Is a delivery slot free now?
    pub(crate) fn inflight_free(&self) -> bool {
        self.fire.inflight.available_permits() > 0
    }

    pub(crate) async fn inflight_permit(&self) -> tokio::sync::OwnedSemaphorePermit {
        self.fire.inflight.clone().acquire_owned().await.expect("the semaphore is never closed")
    }

    pub(crate) fn cancel_token(&self) -> &CancellationToken {
        &self.life.cancel
    }

    /// How far ahead of their instant runs leave the timer for dispatch now: a quarter
    /// more than the slowest recent dispatch took from leaving the timer to its commit
    /// (waiting for a dispatch slot and a delivery permit included), at most
    /// `max_dispatch_lead_ms`. Idle, it is a few ms; under load it grows with the
    /// transactions, so the commit still comes before the instant and the delivery on time.
    /// The time the engine's clock does not see pass (a manual clock in tests) counts 0.
    ///
    /// A herd (many runs due at about the same instant) needs more: its dispatch
    /// transactions run one after another, so the lead also covers the runs due within the
    /// longest lead times the measured cost per run, over the transactions run at once.
    pub fn dispatch_lead_ms(&self) -> i64 {
        self.lead.lead_ms(|| self.now_ms(), |t| self.fire.timer.due_by(t))
    }

    /// Record what a dispatch transaction cost per run (µs), for the herd part of the lead.
    pub(crate) fn note_dispatch_cost(&self, took_ms: i64, runs: usize) {
        self.lead.note_cost(took_ms, runs);
    }

    /// Record how long a dispatch took from leaving the timer to its commit (the engine
    /// does after every dispatch batch; tests on a manual clock, whose time does not pass
    /// during a transaction, set it to exercise the lead).
    pub fn note_dispatch_took(&self, took_ms: i64) {
        self.lead.note_took(took_ms);
    }

    /// What this engine has done since it was created.
    pub fn stats(&self) -> EngineStats {
        let c = &self.counters;
        let get = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        EngineStats {
            claim_calls: get(&c.claim_calls),
            claim_empty: get(&c.claim_empty),
            claimed: get(&c.claimed),
            claimed_foreign: get(&c.claimed_foreign),
            claim_failures: get(&c.claim_failures),
            claim_rollbacks: get(&c.claim_rollbacks),
            dispatched: get(&c.dispatched),
            peeked: get(&c.peeked),
            claimed_at_insert: get(&c.claimed_at_insert),
            saturated: get(&c.saturated),
        }
    }

    /// The job buckets this node owns (job affinity; all of them until the live node set
    /// has been read).
    pub fn owned_buckets(&self) -> u64 {
        self.membership.owned.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The live node set the buckets were last computed from.
    pub fn members(&self) -> Vec<String> {
        self.membership.members.lock().expect("members lock").clone()
    }

    /// Is this node's clock too far from the database's (no claiming while it is)?
    pub fn clock_skewed(&self) -> bool {
        self.membership.skewed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Is the operator switch that stops schedules from firing on their own on?
    pub async fn schedules_paused(&self) -> Result<bool> {
        Ok(self.store.setting_get(SETTING_SCHEDULES_PAUSED).await?.as_deref() == Some("true"))
    }
}
