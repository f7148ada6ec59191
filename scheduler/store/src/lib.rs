//! The store: every byte of SQL in Sundial lives in this crate.
//!
//! [`Store`] is the seam (river's driver, Oban's engine): one trait, methods named
//! noun-first (`job_insert`, `run_list`), each taking its own small argument. One
//! implementation, [`SqlStore`], speaks both MySQL/MariaDB and SQLite through
//! sqlx's `Any` driver; where the dialects differ (connection set-up, locking,
//! claiming) it branches on [`Dialect`]. One conformance suite
//! (`tests/it/conformance.rs`) runs against both databases.
//!
//! What is not here: validation (the domain crate did it), HTTP, JSON shapes of the API.

mod error;
mod migrate;
pub mod records;
mod sql;

use async_trait::async_trait;
use sundial_core::types::{JobState, Role, RunState};

pub use error::{Result, StoreError};
pub use records::*;
pub use sql::{ConnectOptions, SqlStore};

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

#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    pub app_id: Option<String>,
    pub state: Option<JobState>,
    pub name: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub job_id: Option<String>,
    pub state: Option<RunState>,
    /// Runs scheduled at or after this instant.
    pub from_ms: Option<i64>,
    /// Runs scheduled before this instant.
    pub to_ms: Option<i64>,
}

/// The database seam. Every method is one short transaction or one statement.
#[async_trait]
pub trait Store: Send + Sync + std::fmt::Debug + 'static {
    fn dialect(&self) -> Dialect;
    /// Is the database reachable?
    async fn ping(&self) -> Result<()>;
    /// The database's clock, UTC epoch milliseconds: the judge of leases and deadlines.
    async fn db_now_ms(&self) -> Result<i64>;

    async fn tenant_insert(&self, tenant: &Tenant) -> Result<()>;
    async fn tenant_get(&self, id: &str) -> Result<Option<Tenant>>;
    async fn tenant_list(&self, page: &Page) -> Result<Vec<Tenant>>;

    async fn api_key_insert(&self, key: &ApiKey) -> Result<()>;
    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<ApiKey>>;
    /// Keys of a tenant, or operator keys when `tenant_id` is `None`.
    async fn api_key_list(&self, tenant_id: Option<&str>, page: &Page) -> Result<Vec<ApiKey>>;
    async fn api_key_get(&self, tenant_id: &str, id: &str) -> Result<Option<ApiKey>>;
    async fn api_key_count(&self, tenant_id: Option<&str>, role: Role) -> Result<i64>;
    async fn api_key_delete(&self, tenant_id: &str, id: &str) -> Result<bool>;

    async fn app_insert(&self, app: &App) -> Result<()>;
    /// By id or by name, within the tenant.
    async fn app_get(&self, tenant_id: &str, id_or_name: &str) -> Result<Option<App>>;
    async fn app_list(&self, tenant_id: &str, page: &Page) -> Result<Vec<App>>;
    /// Write the mutable fields (description, endpoints, secrets, updated_at). False if gone.
    async fn app_update(&self, app: &App) -> Result<bool>;
    /// Refused with a conflict while jobs use the app.
    async fn app_delete(&self, tenant_id: &str, id: &str) -> Result<bool>;

    /// Insert a job and its child edges. Children must be jobs of the same tenant and
    /// must not make a cycle; both are checked inside the transaction.
    async fn job_insert(&self, job: &Job, children: &[String]) -> Result<()>;
    async fn job_get(&self, tenant_id: &str, id: &str) -> Result<Option<Job>>;
    async fn job_list(&self, tenant_id: &str, filter: &JobFilter, page: &Page) -> Result<Vec<Job>>;
    /// Replace a job's definition if its version is still `expected_version`
    /// (`job.version` is the new one). `children: Some` replaces the edges.
    /// `Ok(false)` if the job does not exist; [`StoreError::Stale`] if it changed meanwhile.
    async fn job_update(
        &self,
        job: &Job,
        children: Option<&[String]>,
        expected_version: i64,
    ) -> Result<bool>;
    /// Set `active`/`stopped`, bumping the version. `None` if the job does not exist.
    async fn job_set_state(
        &self,
        tenant_id: &str,
        id: &str,
        state: JobState,
        now_ms: i64,
    ) -> Result<Option<Job>>;
    /// Delete a job, its edges (both directions) and its runs that have not started.
    async fn job_delete(&self, tenant_id: &str, id: &str) -> Result<bool>;
    async fn job_children(&self, job_id: &str) -> Result<Vec<String>>;

    /// By id or by name, within the tenant.
    async fn script_get(&self, tenant_id: &str, id_or_name: &str) -> Result<Option<Script>>;

    /// Insert a run unless one exists for its (job, fire key); true if inserted.
    async fn run_insert(&self, run: &Run) -> Result<bool>;
    async fn run_get(&self, tenant_id: &str, id: &str) -> Result<Option<Run>>;
    async fn run_by_fire_key(&self, job_id: &str, fire_key: &str) -> Result<Option<Run>>;
    /// Newest scheduled first. The cursor is the last row's `"{scheduled_at_ms}:{id}"`.
    async fn run_list(&self, tenant_id: &str, filter: &RunFilter, page: &Page) -> Result<Vec<Run>>;
}

#[cfg(feature = "testing")]
pub mod testing;
