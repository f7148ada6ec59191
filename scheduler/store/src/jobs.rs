//! Jobs, their child edges and the generation cursor: [`JobStore`]. SQL in `sql/jobs.rs`.

use async_trait::async_trait;
use sundial_core::job::ChildEdge;
use sundial_core::quota::Quotas;
use sundial_core::types::JobState;

use crate::{ItemRefusal, Job, JobMisfire, Page, Result};

#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    pub app_id: Option<String>,
    pub state: Option<JobState>,
    pub name: Option<String>,
}

/// A new job with its child edges: an item of [`JobStore::job_insert_many_within`].
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    pub job: Job,
    pub children: Vec<ChildEdge>,
}

/// Jobs: definitions, child edges (`job_children`), the generator's cursor
/// (`job_due_for_generation`).
#[async_trait]
pub trait JobStore: Send + Sync {
    /// Insert a job and its child edges. Children must be jobs of the same tenant and
    /// must not make a cycle; both are checked inside the transaction.
    async fn job_insert(&self, job: &Job, children: &[ChildEdge]) -> Result<()>;
    /// [`job_insert`](JobStore::job_insert) within the tenant's quotas: one more job, and
    /// (if active) its peak fire rate; over either, [`StoreError::QuotaExceeded`](crate::StoreError::QuotaExceeded)
    /// and nothing is written. Every job write of a tenant (with quotas or not) locks and moves
    /// its kept counts (`tenant_job_counts`), so its quota checks are serialised and read one
    /// row, not its jobs.
    async fn job_insert_within(&self, job: &Job, children: &[ChildEdge], quotas: &Quotas) -> Result<()>;
    /// Insert new jobs of `tenant_id` (fresh ids), each with its child edges, in one
    /// transaction within the tenant's quotas: all or nothing. Every item is checked first as
    /// [`job_insert_problems`](JobStore::job_insert_problems) does; any found are
    /// [`StoreError::Items`] (indexes into `jobs`); then the rows go in multi-row `INSERT`s;
    /// then, under the lock of the tenant's counts, past a quota (the batch's jobs and the
    /// active ones' fire rates together) [`StoreError::QuotaExceeded`]. Either refusal writes
    /// nothing.
    async fn job_insert_many_within(&self, tenant_id: &str, jobs: &[NewJob], quotas: &Quotas) -> Result<()>;
    /// What [`job_insert_many_within`](JobStore::job_insert_many_within) would refuse of these
    /// jobs, every item (read only): a name repeated in the batch or taken in the tenant
    /// (`name`, conflict `job_name`), a child that is not a job of the tenant (`children[i]`).
    /// Sorted by index, at most one per item (its first).
    async fn job_insert_problems(&self, tenant_id: &str, jobs: &[NewJob]) -> Result<Vec<ItemRefusal>>;
    async fn job_get(&self, tenant_id: &str, id: &str) -> Result<Option<Job>>;
    /// Jobs by id, whatever their tenant (the engine's misfire decisions for a batch of
    /// late fires; never reachable from a caller's request). Missing ids are left out.
    async fn job_get_many(&self, ids: &[String]) -> Result<Vec<Job>>;
    /// The misfire policy and generation cursor of jobs by id, whatever their tenant (a
    /// node behind settles every batch of late fires on them: three columns, where the whole
    /// definition cost the node a tenth of its time, issue 14). Missing ids are left out.
    async fn job_misfire_many(&self, ids: &[String]) -> Result<Vec<JobMisfire>>;
    async fn job_list(&self, tenant_id: &str, filter: &JobFilter, page: &Page) -> Result<Vec<Job>>;
    /// Replace a job's definition if its version is still `expected_version`
    /// (`job.version` is the new one). `children: Some` replaces the edges.
    /// `Ok(false)` if the job does not exist; [`StoreError::Stale`](crate::StoreError::Stale) if it changed meanwhile.
    async fn job_update(&self, job: &Job, children: Option<&[ChildEdge]>, expected_version: i64) -> Result<bool>;
    /// [`job_update`](JobStore::job_update) within the tenant's fires-per-second quota: the
    /// new definition's rate (if active) less the old one's (if it was) is what it adds.
    async fn job_update_within(
        &self,
        job: &Job,
        children: Option<&[ChildEdge]>,
        expected_version: i64,
        quotas: &Quotas,
    ) -> Result<bool>;
    /// Set `active`/`stopped`, bumping the version. `None` if the job does not exist.
    async fn job_set_state(&self, tenant_id: &str, id: &str, state: JobState, now_ms: i64) -> Result<Option<Job>>;
    /// [`job_set_state`](JobStore::job_set_state) within the fires-per-second quota: starting
    /// a stopped job adds its rate.
    async fn job_set_state_within(
        &self,
        tenant_id: &str,
        id: &str,
        state: JobState,
        now_ms: i64,
        quotas: &Quotas,
    ) -> Result<Option<Job>>;
    /// Delete a job, its edges (both directions) and its runs that have not started. A
    /// fan-in waiting for it in a chain where it has not ended is released first (`all`:
    /// recorded `skipped`, the job was deleted).
    async fn job_delete(&self, tenant_id: &str, id: &str, now_ms: i64) -> Result<bool>;
    async fn job_children(&self, job_id: &str) -> Result<Vec<ChildEdge>>;
    /// Insert a registration-created job unless one exists for its registration key.
    async fn job_insert_if_absent(&self, job: &Job) -> Result<bool>;

    /// Active jobs with a timed schedule whose runs are not generated up to `horizon_end_ms`.
    /// Every active job with a cron or fixed-rate schedule: (id, version), by id. Nodes
    /// compare it with the high-frequency jobs they fire to see what was created, edited,
    /// stopped or deleted.
    async fn job_timed_versions(&self) -> Result<Vec<(String, i64)>>;
    async fn job_due_for_generation(&self, horizon_end_ms: i64, limit: i64) -> Result<Vec<Job>>;
}
