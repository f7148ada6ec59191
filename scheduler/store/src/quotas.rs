//! Tenant quotas: the operator's settings per tenant and the usage the store counts:
//! [`QuotaStore`]. SQL in `sql/quotas.rs`. The rules (what counts, when a change is
//! refused) are `sundial_core::quota`'s; the job writes that check them are
//! `JobStore::job_*_within`.

use async_trait::async_trait;
use sundial_core::quota::{QuotaOverrides, Quotas};

use crate::Result;

/// What a tenant uses of the quotas the store counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TenantUsage {
    /// Jobs, whatever their state.
    pub jobs: i64,
    /// The active jobs' peak fires per second, in millionths.
    pub fire_rate_micros: i64,
    pub scripts: i64,
    /// Bytes of every version of every script.
    pub script_bytes: i64,
    /// Log bytes received today (UTC).
    pub log_bytes_today: i64,
    /// The most registration-created jobs of any one app of the tenant.
    pub handlers_most_in_one_app: i64,
    /// Runs delivered and not yet answered (`dispatching`, `running`).
    pub inflight: i64,
}

/// What a registration would add, and to what ([`QuotaStore::app_registered_handlers`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegisteredHandlers {
    /// Jobs registrations created for the app so far.
    pub app_total: i64,
    /// How many of the listed handlers the app has a job for already.
    pub present: i64,
    /// The tenant's jobs, whatever their state.
    pub tenant_jobs: i64,
}

/// Log lines to append to one shard attempt of a run, within the quotas: the bytes of the
/// messages count towards `max_log_bytes_per_run` and the tenant's `max_log_bytes_per_day`.
#[derive(Debug, Clone)]
pub struct LogAppend<'a> {
    pub tenant_id: &'a str,
    pub run_id: &'a str,
    pub shard_index: i64,
    pub attempt: i64,
    /// (at_ms, level, message)
    pub lines: &'a [(i64, String, String)],
    pub now_ms: i64,
}

#[async_trait]
pub trait QuotaStore: Send + Sync {
    /// The operator's settings for a tenant (all `None` when none were set).
    async fn quota_get(&self, tenant_id: &str) -> Result<QuotaOverrides>;
    /// Replace a tenant's settings.
    async fn quota_set(&self, tenant_id: &str, overrides: &QuotaOverrides, now_ms: i64) -> Result<()>;
    /// Every tenant's settings, for a cache (one read of a table with a row per tenant that
    /// has any): the engine merges them with its node's defaults (`Quotas::with`).
    async fn quota_all(&self) -> Result<Vec<(String, QuotaOverrides)>>;
    /// What the tenant uses now (`now_ms` picks the day of the daily log bytes).
    async fn usage_get(&self, tenant_id: &str, now_ms: i64) -> Result<TenantUsage>;
    /// What a registration listing `handlers` would add to an app of `tenant_id`.
    async fn app_registered_handlers(
        &self,
        tenant_id: &str,
        app_id: &str,
        handlers: &[String],
    ) -> Result<RegisteredHandlers>;
    /// Append log lines if the run's and the tenant's log bytes stay within `quotas`, else
    /// [`StoreError::QuotaExceeded`](crate::StoreError::QuotaExceeded) and nothing is written.
    async fn log_append_within(&self, append: &LogAppend<'_>, quotas: &Quotas) -> Result<()>;
}
