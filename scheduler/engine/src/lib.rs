//! The scheduling engine: what makes runs happen.
//!
//! One [`Engine`] per node (`engine.rs`): the state its services share ([`shared::Shared`],
//! `shared.rs`) and one instance of each service, one per duty and file. Each service is a
//! type with its own settings (its slice of [`EngineConfig`]), a `run_once(now)` step that
//! tests drive on a `ManualClock` (through [`Engine::tick`] and the `Engine::*_once`
//! forwarders) and a `spawn` loop; `node.rs` starts them and stops them in the order written
//! there:
//! - `Generator` (`generate.rs`): write runs for the horizon ahead;
//! - `Claimer` (`claim.rs`): claim due runs and peek own fires into the timer (it owns its
//!   peek cursor);
//! - `AtDispatchSync`, `AtDispatchFill` (`at_dispatch.rs`): the high-frequency jobs, whose
//!   fires enter the timer without a row (held in `held.rs`);
//! - `TimerLoop` (`fire.rs`): pop due runs from the timer and dispatch them;
//! - `ShardRetrier` (`shard_retry.rs`): start the due retries of shards;
//! - `Heartbeat` (`cluster.rs`): heartbeat, clock check, dead nodes, live set;
//! - `Retention` (`retention.rs`): delete old finished runs;
//! - `Reaper` (`reaper.rs`): fail `running` runs (and shards) past their deadline;
//! - `ExchangeWatch` (`exchange_watch.rs`): cancel at the executor a run cancelled elsewhere
//!   while this node's synchronous exchange with it is open.
//!
//! Every change of a run's state goes through the store's conditional updates
//! (which apply `sundial_core::run_state::transition`), so the in-memory timer is
//! only a cache: losing it loses nothing.
//!
//! Modules import each other without a cycle (guarded by the invariants test, which sees
//! through the crate root's re-exports). In this order each uses only modules before it:
//! 1. leaves: `config`, `stats`, `retry`, `lead`, `service`, `due_heap`, `instant_gate`,
//!    `bulkhead`, `misfire`, `timer`, `held`, `transport`, `cancel`, `outcome`;
//! 2. `shared` (the state every service holds an `Arc` of: accessors only, no behaviour);
//! 3. `intake` (how runs enter the timer: late fires settled by their misfire policy);
//! 4. the fire path, functions over `&Shared`: `work` ← `shard` ← `delivery`;
//! 5. the services: `generate` ← `at_dispatch`, `claim`, `fire`, `shard_retry`, `cluster`,
//!    `retention`, `reaper`, `exchange_watch`;
//! 6. `engine` (the services wired on one `Shared`), then `node` (start and shutdown order).
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
mod held;
mod instant_gate;
mod intake;
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
mod shared;
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
