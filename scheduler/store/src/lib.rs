//! The store: every byte of SQL in Sundial lives in this crate.
//!
//! [`Store`] is the seam (river's driver, Oban's engine): methods named noun-first
//! (`job_insert`, `run_list`), each taking its own small argument, grouped in one trait
//! per aggregate, and `Store` is all of them at once (`Arc<dyn Store>` is what callers
//! hold; `use sundial_store::prelude::*` brings every method into scope on a concrete
//! store). One implementation, [`SqlStore`], speaks both MySQL/MariaDB and SQLite through
//! sqlx's `Any` driver; where the dialects differ (connection set-up, locking, claiming)
//! it branches on [`Dialect`].
//!
//! One module per aggregate, and the SQL beside the methods that use it:
//!
//! | aggregate | contract (trait, argument and result types) | SQL |
//! |---|---|---|
//! | the database itself | [`DbStore`] (here) | `sql/mod.rs` (connection set-up, shared helpers); `sql/rows.rs`, `sql/writes.rs` (rows and writes several modules share) |
//! | tenants, API keys | [`TenantStore`] (`tenants.rs`) | `sql/tenants.rs` |
//! | apps, executors | [`AppStore`] (`apps.rs`) | `sql/apps.rs` |
//! | jobs, child edges, generation cursor | [`JobStore`] (`jobs.rs`) | `sql/jobs.rs` |
//! | scripts and their versions | [`ScriptStore`] (`scripts.rs`) | `sql/scripts.rs` |
//! | runs, attempts, logs | [`RunStore`] (`runs.rs`) | `sql/runs.rs`, hot-path batches in `sql/runs/batch.rs` |
//! | shards of sharded runs | [`ShardStore`] (`shards.rs`; types in `records.rs`) | `sql/shards.rs` |
//! | nodes, settings | [`NodeStore`] (`nodes.rs`) | `sql/nodes.rs` |
//! | seen webhook ids | [`SeenStore`] (`seen.rs`) | `sql/seen.rs` |
//! | retention | [`RetentionStore`] (`retention.rs`) | `sql/retention.rs` |
//!
//! Row types are in [`records`]. One conformance suite (`tests/it/`, one file per
//! aggregate) runs against both databases.
//!
//! What is not here: validation (the domain crate did it), HTTP, JSON shapes of the API.

mod apps;
mod error;
mod jobs;
mod migrate;
mod nodes;
mod quotas;
pub mod records;
mod retention;
mod runs;
mod scripts;
pub mod secrets;
mod seen;
mod shards;
mod sql;
mod tenants;

use async_trait::async_trait;

pub use apps::*;
pub use error::{DbFailure, ItemRefusal, Result, StoreError};
pub use jobs::*;
pub use nodes::*;
pub use quotas::*;
pub use records::*;
pub use retention::*;
pub use runs::*;
pub use scripts::*;
pub use secrets::{KeyRing, SecretKey};
pub use seen::*;
pub use shards::*;
pub use sql::{ConnectOptions, SqlStore, redact_url, sqlite_path};
pub use tenants::*;

/// Every store trait, for `use sundial_store::prelude::*`: the methods of [`Store`]
/// are declared in these, so a caller holding a concrete store (or calling through a
/// generic) needs them in scope.
pub mod prelude {
    pub use crate::{
        AppStore, DbStore, JobStore, NodeStore, QuotaStore, RetentionStore, RunStore, ScriptStore, SeenStore,
        ShardStore, Store, TenantStore,
    };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    MySql,
    Sqlite,
}

/// Keyset pagination: up to `limit` rows after the cursor `after` (exclusive).
#[derive(Debug, Clone, Default)]
pub struct Page {
    pub limit: i64,
    pub after: Option<String>,
}

/// The database itself: its dialect, whether it answers, and its clock.
#[async_trait]
pub trait DbStore: Send + Sync {
    fn dialect(&self) -> Dialect;
    /// Is the database reachable?
    async fn ping(&self) -> Result<()>;
    /// The database's clock, UTC epoch milliseconds: the judge of leases and deadlines.
    async fn db_now_ms(&self) -> Result<i64>;
}

/// The database seam: every aggregate's trait at once. Every method is one short
/// transaction or one statement. Implemented for every type that implements them all.
pub trait Store:
    DbStore
    + TenantStore
    + AppStore
    + JobStore
    + ScriptStore
    + RunStore
    + ShardStore
    + NodeStore
    + SeenStore
    + RetentionStore
    + QuotaStore
    + Send
    + Sync
    + std::fmt::Debug
    + 'static
{
}

impl<T> Store for T where
    T: DbStore
        + TenantStore
        + AppStore
        + JobStore
        + ScriptStore
        + RunStore
        + ShardStore
        + NodeStore
        + SeenStore
        + RetentionStore
        + QuotaStore
        + Send
        + Sync
        + std::fmt::Debug
        + 'static
{
}

#[cfg(feature = "testing")]
pub mod testing;
