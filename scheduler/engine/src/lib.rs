//! The scheduling engine: what makes runs happen.
//!
//! One [`Engine`] per node runs ten loops ([`Engine::start`]), each a thin wrapper around a
//! step function that tests call directly with an injected clock; the main ones:
//! - [`Engine::generate_once`]: write runs for the horizon ahead (pre-generation);
//! - [`Engine::claim_once`]: claim due runs into the in-memory timer, applying the misfire policy;
//! - [`Engine::fire_due`]: pop due runs from the timer and dispatch them;
//! - [`Engine::shard_retry_once`]: start the due retries of shards of sharded runs;
//! - [`Engine::reap_once`]: fail `running` runs (and shards) past their deadline;
//! - [`Engine::watch_exchanges_once`]: cancel at the executor a run cancelled elsewhere
//!   while this node's synchronous exchange with it is open.
//!
//! Every change of a run's state goes through the store's conditional updates
//! (which apply `sundial_core::run_state::transition`), so the in-memory timer is
//! only a cache: losing it loses nothing.
//!
//! What is not here: SQL (the store), HTTP routing of the API (the api crate).

mod at_dispatch;
pub mod bulkhead;
mod cluster;
mod delivery;
mod due_heap;
mod generate;
mod instant_gate;
mod misfire;
pub mod outcome;
mod shard;
mod timer;
pub mod transport;

use std::sync::Arc;
use std::time::Duration;

use sundial_core::clock::SharedClock;
use sundial_core::route::RouteState;
use sundial_store::Store;
use tokio::sync::{Mutex, Notify, Semaphore};
use tokio_util::sync::CancellationToken;

pub use outcome::{finish_attempt, finish_params};
pub use shard::finish_shard;
pub use transport::{CancelTarget, Canceller, DeliveryClient, ExecutorResult};

/// Dispatch transactions in flight at once per node.
const DISPATCH_SLOTS: usize = 2;
/// A delivery sent this long after its instant, or a timer waiting this long for a dispatch
/// slot or staging permits, is explained in one debug line (target `sundial_engine::lateness`).
pub(crate) const LATENESS_NOTED_MS: i64 = 200;
/// How often the herd part of the dispatch lead is recounted, at most.
const HERD_RECOUNT_MS: i64 = 20;
/// Runs per dispatch transaction at most.
pub(crate) const DISPATCH_BATCH: usize = 256;

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
    /// due (as much as recent dispatch transactions took, see [`Engine::dispatch_lead_ms`]),
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

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] sundial_store::StoreError),
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// The dispatch-time estimate after a new sample: up to a slower sample at once, down by
/// 1/32 per batch (at least 1 ms) otherwise: a slow commit now and then keeps the lead up
/// for a while.
fn decayed_max(old: i64, sample: i64) -> i64 {
    sample.max(old - (old + 31) / 32).max(0)
}

/// A dispatch time as a sample for the lead's estimate: at most the lead's cap `max`. A
/// dispatch that waited out a database stall took as long as the stall (20 s); the lead is
/// capped at `max` (2 s) whatever the estimate, but that estimate decays by 1/32 per batch,
/// so it kept the lead at its cap for a hundred batches after the stall — half a minute in
/// which each per-second `serial` job's next fire was checked while its previous one was
/// committed and waiting for its instant, held back, and sent a second late every few seconds.
fn lead_sample(took: i64, max: i64) -> i64 {
    if max > 0 { took.min(max) } else { took }
}

/// The lead for a dispatch-time estimate: a quarter more, at most `max`.
fn lead_for(took: i64, max: i64) -> i64 {
    (took + took / 4).clamp(0, max.max(0))
}

/// Transactions run again after the database rolled them back (deadlocks), in this process.
static DEADLOCK_RETRIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many times, in this process, a transaction was run again after the database rolled
/// it back to break a deadlock (all engines together).
pub fn deadlock_retries() -> u64 {
    DEADLOCK_RETRIES.load(std::sync::atomic::Ordering::Relaxed)
}

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

/// Run a store transaction again when the database rolled it back to break a deadlock
/// or a lock wait (nothing was written): a few times, with a short growing pause.
pub(crate) async fn retry_deadlock<T, F, Fut>(op: F) -> sundial_store::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = sundial_store::Result<T>>,
{
    retry_if(sundial_store::StoreError::is_retryable, op).await
}

/// [`retry_deadlock`] for the cluster heartbeat's calls: only a deadlock (reported at once)
/// is run again. A lock wait that timed out has already cost its wait, longer than a beat,
/// and retrying it could keep a live node silent until the others declare it dead; the
/// next beat comes sooner.
pub(crate) async fn retry_deadlock_only<T, F, Fut>(op: F) -> sundial_store::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = sundial_store::Result<T>>,
{
    retry_if(sundial_store::StoreError::is_deadlock, op).await
}

async fn retry_if<T, F, Fut>(retry: fn(&sundial_store::StoreError) -> bool, mut op: F) -> sundial_store::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = sundial_store::Result<T>>,
{
    let mut pause = Duration::from_millis(5);
    let mut tries = 0;
    loop {
        match op().await {
            Err(e) if retry(&e) && tries < 6 => {
                tries += 1;
                DEADLOCK_RETRIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::debug!(error = %e, tries, "transaction rolled back by the database; running it again");
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
            other => return other,
        }
    }
}

/// One node's engine.
#[derive(Debug)]
pub struct Engine {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) clock: SharedClock,
    pub(crate) cfg: EngineConfig,
    /// Woken when runs may have become due (a trigger, a child run, a retry).
    pub wake: Arc<Notify>,
    /// The fire path: the timer and what takes its runs to their delivery (`timer.rs`,
    /// `delivery.rs`, `shard.rs`).
    pub(crate) fire: FirePath,
    /// This node's high-frequency jobs, whose fires enter the timer without a row
    /// (`at_dispatch.rs`).
    pub(crate) at_dispatch: at_dispatch::AtDispatch,
    /// How far ahead of their instant runs leave the timer (`Engine::dispatch_lead_ms`).
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

/// The fire path's state (see [`Engine`]).
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

/// What sizes the dispatch lead (see [`Engine::dispatch_lead_ms`]).
#[derive(Debug)]
pub(crate) struct DispatchLead {
    /// A dispatch transaction's cost per run, in µs (a moving average): with the runs due
    /// soon, it sizes the lead for a herd.
    pub(crate) dispatch_per_run_us: std::sync::atomic::AtomicI64,
    /// The herd part of the lead (ms) and when it was last counted.
    pub(crate) herd_ms: std::sync::atomic::AtomicI64,
    pub(crate) herd_counted_at: std::sync::atomic::AtomicI64,
    /// How long recent dispatches took from leaving the timer to their commit: a decaying
    /// maximum, in ms.
    pub(crate) dispatch_took_ms: std::sync::atomic::AtomicI64,
}

/// Outbound calls and results (see [`Engine`]).
#[derive(Debug)]
pub(crate) struct Calls {
    pub(crate) client: DeliveryClient,
    /// Best-effort cancels, sent in the background (shared with the API of this node).
    pub(crate) cancels: Canceller,
    /// Group commit of the results of this node's deliveries.
    pub(crate) results: outcome::FinishBatcher,
}

/// This node's membership of the cluster (see [`Engine`]).
#[derive(Debug)]
pub(crate) struct Membership {
    pub(crate) skewed: std::sync::atomic::AtomicBool,
    /// Job affinity: the buckets this node owns in the ring of live nodes (all of them
    /// until the live set has been read).
    pub(crate) owned: std::sync::atomic::AtomicU64,
    /// The live node set the ring was last computed from (sorted ids).
    pub(crate) members: std::sync::Mutex<Vec<String>>,
    /// Where the peek of this node's buckets stopped.
    pub(crate) peek_cursor: std::sync::Mutex<timer::PeekCursor>,
}

/// The loops of [`Engine::start`] and their stop signal.
#[derive(Debug)]
pub(crate) struct Lifecycle {
    pub(crate) started_at_ms: i64,
    pub(crate) cancel: CancellationToken,
    pub(crate) tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Engine {
    pub fn new(store: Arc<dyn Store>, clock: SharedClock, cfg: EngineConfig, wake: Arc<Notify>) -> Arc<Engine> {
        let client = DeliveryClient::with_policy(clock.clone(), cfg.outbound).for_node(&cfg.node_id);
        let started_at_ms = clock.now_ms();
        Arc::new(Engine {
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
            at_dispatch: at_dispatch::AtDispatch::default(),
            lead: DispatchLead {
                dispatch_per_run_us: std::sync::atomic::AtomicI64::new(0),
                herd_ms: std::sync::atomic::AtomicI64::new(0),
                herd_counted_at: std::sync::atomic::AtomicI64::new(i64::MIN / 2),
                dispatch_took_ms: std::sync::atomic::AtomicI64::new(0),
            },
            calls: Calls {
                cancels: Canceller::start(store.clone(), client.clone()),
                client,
                results: outcome::FinishBatcher::default(),
            },
            membership: Membership {
                skewed: std::sync::atomic::AtomicBool::new(false),
                owned: std::sync::atomic::AtomicU64::new(sundial_core::affinity::ALL_BUCKETS),
                members: std::sync::Mutex::new(Vec::new()),
                peek_cursor: std::sync::Mutex::new(timer::PeekCursor::default()),
            },
            load: misfire::Load::default(),
            counters: Counters::default(),
            life: Lifecycle { started_at_ms, cancel: CancellationToken::new(), tasks: Mutex::new(Vec::new()) },
            store,
            clock,
            cfg,
            wake,
        })
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// This node's best-effort cancel sender (the API queues its cancels here too).
    pub fn cancels(&self) -> &Canceller {
        &self.calls.cancels
    }

    /// Start the loops. Stop with [`Engine::shutdown`].
    pub async fn start(self: &Arc<Self>) {
        // A restart in place (same node id): the previous life's claims are not in this
        // timer, so hand them back now instead of waiting for their leases.
        match retry_deadlock(|| self.store.node_recover_own(&self.cfg.node_id, self.now_ms())).await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(runs = n, "handed back the claims of this node id's previous run"),
            Err(e) => tracing::warn!(error = %e, "could not hand back earlier claims; their leases will"),
        }
        // Join the cluster (and read the live node set for job affinity) before claiming.
        if let Err(e) = self.heartbeat_once().await {
            tracing::warn!(error = %e, "first heartbeat failed; retrying");
        }
        let mut tasks = self.life.tasks.lock().await;
        let tick = Duration::from_millis(self.cfg.tick_ms);
        tasks.push(self.spawn_loop("generator", Duration::from_millis(1000), |e| async move {
            e.generate_once().await.map(|_| ())
        }));
        let e = self.clone();
        tasks.push(tokio::spawn(async move {
            let mut full = false;
            loop {
                if full {
                    // The last claim took all it asked for: more may be due already.
                    if e.life.cancel.is_cancelled() {
                        break;
                    }
                } else {
                    tokio::select! {
                        _ = e.life.cancel.cancelled() => break,
                        _ = tokio::time::sleep(tick) => {}
                        _ = e.wake.notified() => {}
                    }
                }
                full = false;
                match e.claim_round().await {
                    Ok((_, f)) => full = f,
                    Err(err) => {
                        Counters::add(&e.counters.claim_failures, 1);
                        let EngineError::Store(se) = &err;
                        if se.is_retryable() {
                            Counters::add(&e.counters.claim_rollbacks, 1);
                        }
                        tracing::warn!(error = %err, "claim failed; retrying");
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                }
            }
        }));
        // Once a second, or at once when a job fell behind. No backoff: jobs that fell
        // behind while the database was away are caught up by the first sync that works (a
        // backoff made them wait up to its length after the database came back, all their
        // fires late); failures are logged at most every 10 s.
        let e = self.clone();
        tasks.push(tokio::spawn(async move {
            let mut failures = 0u64;
            loop {
                tokio::select! {
                    _ = e.life.cancel.cancelled() => break,
                    _ = tokio::time::sleep(Duration::from_millis(1000)) => {}
                    _ = e.at_dispatch.behind.notified() => {}
                }
                match e.at_dispatch_sync().await {
                    Ok(_) => failures = 0,
                    Err(err) => {
                        if failures.is_multiple_of(10) {
                            tracing::warn!(service = "at-dispatch", error = %err, failures = failures + 1, "step failed; retrying every second");
                        }
                        failures += 1;
                    }
                }
            }
        }));
        // Memory only: keeps the timer filled with the high-frequency jobs' fires even while
        // the database stalls (the timer's capacity bounds it).
        let e = self.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = e.life.cancel.cancelled() => break,
                    _ = tokio::time::sleep(tick.min(Duration::from_millis(100))) => {}
                }
                e.at_dispatch_fill();
            }
        }));
        let e = self.clone();
        tasks.push(tokio::spawn(async move { e.timer_loop().await }));
        tasks.push(self.spawn_loop(
            "shard-retry",
            tick,
            |e| async move { e.shard_retry_once(false).await.map(|_| ()) },
        ));
        // Heartbeat at a steady pace, never backing off: a node that backed off past
        // `node_dead_ms` would be declared dead by the others while still working.
        let e = self.clone();
        tasks.push(tokio::spawn(async move {
            let every = Duration::from_millis(e.cfg.heartbeat_ms);
            loop {
                tokio::select! {
                    _ = e.life.cancel.cancelled() => break,
                    _ = tokio::time::sleep(every) => {}
                }
                if let Err(err) = e.heartbeat_once().await {
                    tracing::warn!(error = %err, "heartbeat failed; retrying");
                }
            }
        }));
        tasks.push(self.spawn_loop("retention", Duration::from_millis(self.cfg.retention_every_ms), |e| async move {
            e.retention_once().await.map(|_| ())
        }));
        tasks.push(
            self.spawn_loop("reaper", Duration::from_millis(1000), |e| async move { e.reap_once().await.map(|_| ()) }),
        );
        tasks.push(self.spawn_loop("exchange-watch", Duration::from_millis(1000), |e| async move {
            e.watch_exchanges_once().await.map(|_| ())
        }));
    }

    fn spawn_loop<F, Fut>(self: &Arc<Self>, name: &'static str, every: Duration, step: F) -> tokio::task::JoinHandle<()>
    where
        F: Fn(Arc<Engine>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<()>> + Send,
    {
        let e = self.clone();
        tokio::spawn(async move {
            let mut backoff = every;
            loop {
                tokio::select! {
                    _ = e.life.cancel.cancelled() => break,
                    _ = tokio::time::sleep(backoff) => {}
                }
                match step(e.clone()).await {
                    Ok(()) => backoff = every,
                    Err(err) => {
                        backoff = (backoff * 2).min(Duration::from_secs(30));
                        tracing::warn!(service = name, error = %err, retry_in_ms = backoff.as_millis() as u64, "step failed");
                    }
                }
            }
        })
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
        self.life.cancel.cancel();
        for t in self.life.tasks.lock().await.drain(..) {
            let _ = t.await;
        }
        if let Err(e) = self.store.node_leave(&self.cfg.node_id).await {
            tracing::warn!(error = %e, "could not mark this node as leaving");
        }
        let held = self.fire.timer.drain();
        // Unwritten fires (high-frequency jobs') become `pending` rows for the next owner.
        self.at_dispatch_hand_over().await;
        if !held.is_empty() {
            match self.store.run_release(&self.cfg.node_id, &held, self.now_ms()).await {
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
        self.fire.deliveries.close();
        if tokio::time::timeout(grace, self.fire.deliveries.wait()).await.is_err() {
            tracing::warn!("deliveries still in flight after the grace period");
        }
        // Fires whose dispatch failed after the hand-over in `stop` came back unwritten:
        // hand them over too (else the next owner finds them only by their gap).
        self.at_dispatch_hand_over().await;
        if let Err(e) = self.store.node_leave(&self.cfg.node_id).await {
            tracing::warn!(error = %e, "could not mark this node as gone");
        }
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
        use std::sync::atomic::Ordering::Relaxed;
        let max = self.cfg.max_dispatch_lead_ms;
        let base = lead_for(self.lead.dispatch_took_ms.load(Relaxed), max);
        let per_run_us = self.lead.dispatch_per_run_us.load(Relaxed);
        if max <= 0 || per_run_us <= 0 {
            return base;
        }
        // Counting the runs due soon walks the timer's per-instant counts under its lock:
        // at most once per HERD_RECOUNT_MS, not for every batch popped.
        let now = self.now_ms();
        let herd_ms = if now - self.lead.herd_counted_at.load(Relaxed) < HERD_RECOUNT_MS {
            self.lead.herd_ms.load(Relaxed)
        } else {
            let herd = self.fire.timer.due_by(now + max) as i64;
            let ms = herd * per_run_us / 1000 / DISPATCH_SLOTS as i64;
            self.lead.herd_ms.store(ms, Relaxed);
            self.lead.herd_counted_at.store(now, Relaxed);
            ms
        };
        (base + herd_ms + herd_ms / 4).clamp(0, max)
    }

    /// Record what a dispatch transaction cost per run (µs), for the herd part of the lead.
    pub(crate) fn note_dispatch_cost(&self, took_ms: i64, runs: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        let max = self.cfg.max_dispatch_lead_ms;
        // A transaction slower than the whole lead waited on something (a stalled database),
        // and measures that, not the cost of its runs.
        if runs == 0 || took_ms < 0 || (max > 0 && took_ms > max) {
            return;
        }
        let sample = took_ms * 1000 / runs as i64;
        let _ = self
            .lead
            .dispatch_per_run_us
            .fetch_update(Relaxed, Relaxed, |old| Some(if old == 0 { sample } else { old + (sample - old) / 8 }));
    }

    /// Record how long a dispatch took from leaving the timer to its commit (the engine
    /// does after every dispatch batch; tests on a manual clock, whose time does not pass
    /// during a transaction, set it to exercise the lead).
    pub fn note_dispatch_took(&self, took_ms: i64) {
        use std::sync::atomic::Ordering::Relaxed;
        let sample = lead_sample(took_ms, self.cfg.max_dispatch_lead_ms);
        let _ = self.lead.dispatch_took_ms.fetch_update(Relaxed, Relaxed, |old| Some(decayed_max(old, sample)));
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

    /// High-frequency jobs this node fires at dispatch, and their fires in its timer that
    /// have no row yet.
    pub fn at_dispatch_counts(&self) -> (usize, usize) {
        self.at_dispatch.counts()
    }

    /// Runs waiting in this node's timer.
    pub fn timer_len(&self) -> usize {
        self.fire.timer.len()
    }

    /// Is the operator switch that stops schedules from firing on their own on?
    pub async fn schedules_paused(&self) -> Result<bool> {
        Ok(self.store.setting_get(SETTING_SCHEDULES_PAUSED).await?.as_deref() == Some("true"))
    }
}

#[cfg(test)]
mod tests {
    use super::{decayed_max, lead_for, lead_sample};

    #[test]
    fn after_a_database_stall_the_lead_is_back_under_a_second_within_thirty_batches() {
        // A 20 s stall counts as the cap (2 s) ...
        let mut est = decayed_max(0, lead_sample(20_000, 2_000));
        assert_eq!(lead_for(est, 2_000), 2_000);
        // ... so 30 ordinary batches later the lead is under a second (uncapped: 100 batches).
        for _ in 0..30 {
            est = decayed_max(est, lead_sample(30, 2_000));
        }
        assert!(lead_for(est, 2_000) < 1_000, "{est}");
        assert_eq!(lead_sample(20_000, 0), 20_000, "no cap: the lead is off anyway");
    }

    #[test]
    fn the_dispatch_lead_follows_slow_dispatches_at_once_and_decays_slowly() {
        assert_eq!(lead_for(0, 200), 0, "no lead before anything was slow (and on a manual clock)");
        let mut est = decayed_max(0, 40);
        assert_eq!(est, 40, "a slower sample counts at once");
        assert_eq!(lead_for(est, 200), 50, "a quarter of margin");
        for _ in 0..10 {
            est = decayed_max(est, 2);
        }
        assert_eq!(est, 26, "decays by 1/32 per batch, at least 1 ms");
        for _ in 0..500 {
            est = decayed_max(est, 2);
        }
        assert_eq!(est, 2, "down to what dispatches take now");
        assert_eq!(lead_for(1_000, 200), 200, "capped");
        assert_eq!(lead_for(1_000, 0), 0, "0 turns it off");
        assert_eq!(decayed_max(0, -3), 0, "a clock step back is no sample below zero");
    }
}
