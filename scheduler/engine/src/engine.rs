//! [`Engine`]: what the binary, the API and the tests hold of a node's engine. It owns the
//! shared state ([`Shared`]) and one instance of each service, and forwards to them; the
//! start and shutdown order is in [`crate::node`]. No scheduling behaviour lives here.

use std::sync::Arc;

use sundial_core::clock::SharedClock;
use sundial_store::Store;
use tokio::sync::{Mutex, Notify};

use crate::Result;
use crate::at_dispatch::{AtDispatchFill, AtDispatchSync};
use crate::cancel::Canceller;
use crate::claim::Claimer;
use crate::cluster::Heartbeat;
use crate::config::EngineConfig;
use crate::exchange_watch::ExchangeWatch;
use crate::fire::TimerLoop;
use crate::generate::Generator;
use crate::reaper::Reaper;
use crate::retention::Retention;
use crate::shard_retry::ShardRetrier;
use crate::shared::Shared;
use crate::stats::EngineStats;

/// One node's engine.
pub struct Engine {
    pub(crate) node: Arc<Shared>,
    pub(crate) services: Services,
    /// The services' loops, once started (awaited when they stop).
    pub(crate) tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("node", &self.node).finish_non_exhaustive()
    }
}

/// One instance of each service, on the node's shared state.
pub(crate) struct Services {
    pub(crate) generator: Arc<Generator>,
    pub(crate) claimer: Arc<Claimer>,
    pub(crate) at_dispatch_sync: Arc<AtDispatchSync>,
    pub(crate) at_dispatch_fill: Arc<AtDispatchFill>,
    pub(crate) timer: Arc<TimerLoop>,
    pub(crate) shard_retrier: Arc<ShardRetrier>,
    pub(crate) heartbeat: Arc<Heartbeat>,
    pub(crate) retention: Arc<Retention>,
    pub(crate) reaper: Arc<Reaper>,
    pub(crate) exchange_watch: Arc<ExchangeWatch>,
}

impl Engine {
    pub fn new(store: Arc<dyn Store>, clock: SharedClock, cfg: EngineConfig, wake: Arc<Notify>) -> Arc<Engine> {
        let node = Shared::new(store, clock, cfg, wake);
        let services = Services {
            generator: Arc::new(Generator::new(&node)),
            claimer: Arc::new(Claimer::new(&node)),
            at_dispatch_sync: Arc::new(AtDispatchSync::new(&node)),
            at_dispatch_fill: Arc::new(AtDispatchFill::new(&node)),
            timer: Arc::new(TimerLoop::new(&node)),
            shard_retrier: Arc::new(ShardRetrier::new(&node)),
            heartbeat: Arc::new(Heartbeat::new(&node)),
            retention: Arc::new(Retention::new(&node)),
            reaper: Arc::new(Reaper::new(&node)),
            exchange_watch: Arc::new(ExchangeWatch::new(&node)),
        };
        Arc::new(Engine { node, services, tasks: Mutex::new(Vec::new()) })
    }

    /// The engine's clock, in ms.
    pub fn now_ms(&self) -> i64 {
        self.node.now_ms()
    }

    pub fn config(&self) -> &EngineConfig {
        &self.node.cfg
    }

    /// This node's best-effort cancel sender (the API queues its cancels here too).
    pub fn cancels(&self) -> &Canceller {
        self.node.cancels()
    }

    /// How far ahead of their instant runs leave the timer now ([`Shared::dispatch_lead_ms`]).
    pub fn dispatch_lead_ms(&self) -> i64 {
        self.node.dispatch_lead_ms()
    }

    /// Record how long a dispatch took from leaving the timer to its commit (tests on a
    /// manual clock, whose time does not pass during a transaction, set it).
    pub fn note_dispatch_took(&self, took_ms: i64) {
        self.node.note_dispatch_took(took_ms);
    }

    /// What this engine has done since it was created.
    pub fn stats(&self) -> EngineStats {
        self.node.stats()
    }

    /// High-frequency jobs this node fires at dispatch, and their fires in its timer that
    /// have no row yet.
    pub fn at_dispatch_counts(&self) -> (usize, usize) {
        self.node.at_dispatch.counts()
    }

    /// Runs waiting in this node's timer.
    pub fn timer_len(&self) -> usize {
        self.node.fire.timer.len()
    }

    /// Is the operator switch that stops schedules from firing on their own on?
    pub async fn schedules_paused(&self) -> Result<bool> {
        self.node.schedules_paused().await
    }

    /// The job buckets this node owns (bit `b` = bucket `b`).
    pub fn owned_buckets(&self) -> u64 {
        self.node.owned_buckets()
    }

    /// The live node set this node's share was last computed from (sorted ids; empty
    /// before the first heartbeat).
    pub fn members(&self) -> Vec<String> {
        self.node.members()
    }

    /// Is this node's clock too far from the database's (no claiming while it is)?
    pub fn clock_skewed(&self) -> bool {
        self.node.clock_skewed()
    }

    // One step of each service at the engine's clock, for tests and `tick`.

    /// The generator's step ([`Generator::run_once`]): runs written.
    pub async fn generate_once(&self) -> Result<usize> {
        self.services.generator.run_once(self.now_ms()).await
    }

    /// The claimer's step ([`Claimer::run_once`]): runs that entered the timer.
    pub async fn claim_once(&self) -> Result<usize> {
        Ok(self.claim_round().await?.0)
    }

    /// The claimer's step, also telling whether the claim came back full.
    pub async fn claim_round(&self) -> Result<(usize, bool)> {
        self.services.claimer.run_once(self.now_ms()).await
    }

    /// The at-dispatch sync's step ([`AtDispatchSync::run_once`]): jobs taken on.
    pub async fn at_dispatch_sync(&self) -> Result<usize> {
        self.services.at_dispatch_sync.run_once(self.now_ms()).await
    }

    /// The at-dispatch fill's step ([`AtDispatchFill::run_once`]): fires put in the timer.
    pub fn at_dispatch_fill(&self) -> usize {
        self.services.at_dispatch_fill.run_once(self.now_ms())
    }

    /// The timer loop's step ([`TimerLoop::fire_due`]): runs started. With `wait`,
    /// deliveries finish before this returns.
    pub async fn fire_due(&self, wait: bool) -> usize {
        self.services.timer.fire_due(self.now_ms(), wait).await
    }

    /// The shard retrier's step ([`ShardRetrier::retry_due`]): shard attempts started.
    /// With `wait`, deliveries finish before this returns.
    pub async fn shard_retry_once(&self, wait: bool) -> Result<usize> {
        self.services.shard_retrier.retry_due(self.now_ms(), wait).await
    }

    /// The heartbeat's step ([`Heartbeat::run_once`]): dead nodes found.
    pub async fn heartbeat_once(&self) -> Result<Vec<String>> {
        self.services.heartbeat.run_once(self.now_ms()).await
    }

    /// Retention's step ([`Retention::run_once`]): runs deleted.
    pub async fn retention_once(&self) -> Result<u64> {
        self.services.retention.run_once(self.now_ms()).await
    }

    /// The reaper's step ([`Reaper::run_once`]): attempts failed.
    pub async fn reap_once(&self) -> Result<usize> {
        self.services.reaper.run_once(self.now_ms()).await
    }

    /// The exchange watch's step ([`ExchangeWatch::run_once`]): cancels sent.
    pub async fn watch_exchanges_once(&self) -> Result<usize> {
        self.services.exchange_watch.run_once(self.now_ms()).await
    }
}
