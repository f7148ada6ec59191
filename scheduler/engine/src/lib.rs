//! The scheduling engine: what makes runs happen.
//!
//! One [`Engine`] per node: its shared state (`engine.rs`) and the services that work on it,
//! one per duty and file, each a loop around a one-step function that tests call directly
//! on a `ManualClock`. [`Engine::start`] (`node.rs`) starts them, [`Engine::stop`] and
//! [`Engine::drain`] stop them in the order written there:
//! - [`Engine::generate_once`] (`generate.rs`): write runs for the horizon ahead;
//! - [`Engine::claim_once`] (`claim.rs`): claim due runs and peek own fires into the timer;
//! - [`Engine::at_dispatch_sync`], [`Engine::at_dispatch_fill`] (`at_dispatch.rs`): the
//!   high-frequency jobs, whose fires enter the timer without a row;
//! - [`Engine::fire_due`] (`fire.rs`): pop due runs from the timer and dispatch them;
//! - [`Engine::shard_retry_once`] (`shard_retry.rs`): start the due retries of shards;
//! - [`Engine::heartbeat_once`] (`cluster.rs`): heartbeat, clock check, dead nodes, live set;
//! - [`Engine::retention_once`] (`retention.rs`): delete old finished runs;
//! - [`Engine::reap_once`] (`reaper.rs`): fail `running` runs (and shards) past their deadline;
//! - [`Engine::watch_exchanges_once`] (`exchange_watch.rs`): cancel at the executor a run
//!   cancelled elsewhere while this node's synchronous exchange with it is open.
//!
//! Every change of a run's state goes through the store's conditional updates
//! (which apply `sundial_core::run_state::transition`), so the in-memory timer is
//! only a cache: losing it loses nothing.
//!
//! Modules import each other without a cycle. In this order each uses (`use crate::…`)
//! only modules before it; the crate root, which re-exports, is no layer:
//! 1. leaves: `config`, `stats`, `retry`, `lead`, `service`, `due_heap`, `instant_gate`,
//!    `bulkhead`, `misfire`, `timer`;
//! 2. the services filling the timer: `generate`, `at_dispatch`, `claim`;
//! 3. the fire path: `transport` ← `cancel` ← `outcome` ← `work` ← `shard` ← `delivery`;
//! 4. the other services: `fire`, `shard_retry`, `cluster`, `retention`, `reaper`,
//!    `exchange_watch`;
//! 5. `engine` (the state every service reaches through `self`), then `node` (the wiring).
//!
//! Not yet true of the services' state (**Broken**): most steps are still `impl Engine` blocks
//! in their service's file, naming `Engine` through the crate root, while `engine.rs` holds
//! their state (`claim::PeekCursor`, `at_dispatch::AtDispatch`, the timer): a dependency loop
//! the import check cannot see. `Heartbeat`, `Reaper`, `Retention` and `ExchangeWatch` already
//! run on their own settings; the others are to own their state the same way.
//!
//! What is not here: SQL (the store), HTTP routing of the API (the api crate).

mod at_dispatch;
pub mod bulkhead;
pub mod cancel;
mod claim;
mod cluster;
mod config;
mod delivery;
mod due_heap;
mod engine;
mod exchange_watch;
mod fire;
mod generate;
mod instant_gate;
mod lead;
mod misfire;
mod node;
pub mod outcome;
mod reaper;
mod retention;
mod retry;
mod service;
mod shard;
mod shard_retry;
mod stats;
mod timer;
pub mod transport;
mod work;

pub use cancel::{CancelTarget, Canceller};
pub use config::{BuiltinRunner, EngineConfig, SETTING_SCHEDULES_PAUSED};
pub use engine::Engine;
pub use outcome::{finish_attempt, finish_params};
pub use retry::deadlock_retries;
pub(crate) use retry::{retry_deadlock, retry_deadlock_only};
pub use shard::finish_shard;
pub(crate) use stats::Counters;
pub use stats::EngineStats;
pub use transport::{DeliveryClient, ExecutorResult};

/// A delivery sent this long after its instant, or a timer waiting this long for a dispatch
/// slot or staging permits, is explained in one debug line (target `sundial_engine::lateness`).
pub(crate) const LATENESS_NOTED_MS: i64 = 200;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] sundial_store::StoreError),
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;
