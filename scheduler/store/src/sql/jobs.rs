//! [`JobStore`] for [`SqlStore`]: jobs, their child edges, the generation cursor, scripts.

use async_trait::async_trait;
use sqlx::any::AnyRow;
use sqlx::{Any, Transaction};
use sundial_core::job::ChildEdge;
use sundial_core::quota::Quotas;
use sundial_core::types::{JobState, RunState};

use super::quotas::fire_rate_of;
use super::rows::{JOB_COLS, job_row};
use super::{
    IDS, IN_CHUNK, SqlStore, col, distinct, fetch_in_with, in_list, in_width, json_col, parse_col, placeholders,
    pow2_chunks, sql_states, to_json,
};
use crate::error::job_conflict;
use crate::{ItemRefusal, Job, JobFilter, JobMisfire, JobStore, NewJob, Page, Result, StoreError};

/// Runs not yet dispatched: what a job's change or deletion drops of its future.
const NOT_DISPATCHED: &[RunState] = &[RunState::Pending, RunState::Queued];

impl SqlStore {
    /// Rows of `sql` (a read of `jobs` with an id list) for these ids, whatever their tenant
    /// (the engine's own reads on ids it holds), in one transaction.
    async fn jobs_by_id(&self, sql: &str, ids: &[String]) -> Result<Vec<AnyRow>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let mut tx = self.begin().await?;
        let rows = fetch_in_with(&mut tx, sql, &ids, &[]).await?;
        tx.commit().await?;
        Ok(rows)
    }
}

/// Refuse children that are not jobs of this tenant, or that would close a cycle.
async fn check_children(
    tx: &mut Transaction<'static, Any>,
    tenant_id: &str,
    parent: &str,
    children: &[ChildEdge],
) -> Result<()> {
    for (i, child) in children.iter().map(|c| &c.job_id).enumerate() {
        let field = format!("children[{i}]");
        if child == parent {
            return Err(StoreError::Refused { field, message: "a job cannot be its own child".into() });
        }
        let exists = sqlx::query("SELECT 1 FROM jobs WHERE id = ? AND tenant_id = ?")
            .bind(child)
            .bind(tenant_id)
            .fetch_optional(&mut **tx)
            .await?
            .is_some();
        if !exists {
            return Err(StoreError::Refused { field, message: format!("job `{child}` does not exist") });
        }
    }
    // Walk down from each new child; reaching the parent means a cycle.
    let edges: Vec<(String, String)> =
        sqlx::query("SELECT parent_job_id, child_job_id FROM job_children WHERE tenant_id = ?")
            .bind(tenant_id)
            .fetch_all(&mut **tx)
            .await?
            .iter()
            .map(|r| Ok((col(r, "parent_job_id")?, col(r, "child_job_id")?)))
            .collect::<Result<_>>()?;
    for (i, child) in children.iter().map(|c| &c.job_id).enumerate() {
        // Depth first from the new child, each node with the path that reached it.
        let mut stack = vec![vec![child.clone()]];
        let mut seen = std::collections::HashSet::new();
        while let Some(path) = stack.pop() {
            let n = path.last().expect("a path is never empty").clone();
            if n == parent {
                let mut names = Vec::with_capacity(path.len() + 1);
                for id in std::iter::once(parent).chain(path.iter().map(String::as_str)) {
                    let name: Option<String> = sqlx::query("SELECT name FROM jobs WHERE id = ?")
                        .bind(id)
                        .fetch_optional(&mut **tx)
                        .await?
                        .as_ref()
                        .map(|r| col(r, "name"))
                        .transpose()?;
                    names.push(name.unwrap_or_else(|| id.to_string()));
                }
                return Err(StoreError::Refused {
                    field: format!("children[{i}]"),
                    message: format!("the chain would be a cycle: {}", names.join(" → ")),
                });
            }
            if seen.insert(n.clone()) {
                for (_, c) in edges.iter().filter(|(p, _)| *p == n) {
                    let mut next = path.clone();
                    next.push(c.clone());
                    stack.push(next);
                }
            }
        }
    }
    Ok(())
}

/// Replace `parent`'s outgoing edges with `children`.
async fn write_children(
    tx: &mut Transaction<'static, Any>,
    tenant_id: &str,
    parent: &str,
    children: &[ChildEdge],
    now_ms: i64,
) -> Result<()> {
    sqlx::query("DELETE FROM job_children WHERE parent_job_id = ?").bind(parent).execute(&mut **tx).await?;
    let edges: Vec<(&str, &ChildEdge, i64)> = children.iter().map(|c| (parent, c, now_ms)).collect();
    insert_edges(tx, tenant_id, &edges).await
}

/// Insert `(parent job id, edge, created_at_ms)` edges of one tenant, a multi-row statement a chunk.
async fn insert_edges(
    tx: &mut Transaction<'static, Any>,
    tenant_id: &str,
    edges: &[(&str, &ChildEdge, i64)],
) -> Result<()> {
    let mut rest = edges;
    for size in pow2_chunks(edges.len()) {
        let (chunk, tail) = rest.split_at(size);
        rest = tail;
        let sql = format!(
            "INSERT INTO job_children (parent_job_id, child_job_id, fire_on, tenant_id, created_at_ms) VALUES {}",
            vec!["(?, ?, ?, ?, ?)"; size].join(", ")
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
        for (parent, c, at_ms) in chunk {
            q = q
                .bind(parent.to_string())
                .bind(c.job_id.clone())
                .bind(c.on.as_str())
                .bind(tenant_id.to_string())
                .bind(*at_ms);
        }
        q.execute(&mut **tx).await?;
    }
    Ok(())
}

/// The columns a job row is inserted with, and how many.
const JOB_INSERT_COLS: &str = "id, tenant_id, app_id, name, description, handler, script_id, script_version, schedule_kind, \
     schedule, params, route, block_strategy, misfire, failure, timeout_ms, max_concurrency, wait_for, state, script_limits, \
     source, registration_key, version, generated_until_ms, created_at_ms, updated_at_ms, fire_rate";
const JOB_INSERT_WIDTH: usize = 27;

type AnyQuery<'q> = sqlx::query::Query<'q, Any, <Any as sqlx::Database>::Arguments>;

/// `INSERT INTO jobs` of `rows` rows (one text per chunk size, see `pow2_chunks`).
fn insert_jobs_sql(rows: usize) -> String {
    let row = format!("({})", placeholders(JOB_INSERT_WIDTH));
    format!("INSERT INTO jobs ({JOB_INSERT_COLS}) VALUES {}", vec![row.as_str(); rows].join(", "))
}

/// Bind one job row's values, in [`JOB_INSERT_COLS`]' order; `rate` is its peak fire rate.
fn bind_job<'q>(q: AnyQuery<'q>, j: &Job, rate: i64) -> AnyQuery<'q> {
    q.bind(&j.id)
        .bind(&j.tenant_id)
        .bind(&j.app_id)
        .bind(&j.name)
        .bind(&j.description)
        .bind(&j.handler)
        .bind(&j.script_id)
        .bind(j.script_version)
        .bind(j.schedule_kind.as_str())
        .bind(to_json(&j.schedule))
        .bind(to_json(&j.params))
        .bind(j.route.as_str())
        .bind(j.block.as_str())
        .bind(to_json(&j.misfire))
        .bind(to_json(&j.failure))
        .bind(j.timeout_ms)
        .bind(j.max_concurrency)
        .bind(j.wait.as_str())
        .bind(j.state.as_str())
        .bind(j.script_limits.as_ref().map(to_json))
        .bind(j.source.as_str())
        .bind(&j.registration_key)
        .bind(j.version)
        .bind(j.generated_until_ms)
        .bind(j.created_at_ms)
        .bind(j.updated_at_ms)
        .bind(rate)
}

/// Values of `column` among `values` that `jobs` of the tenant hold (`name` through
/// `uq_jobs_tenant_name`, `id` through the primary key), in id-list chunks.
async fn present_in_tenant(
    tx: &mut Transaction<'static, Any>,
    column: &'static str,
    tenant_id: &str,
    values: &[&str],
) -> Result<std::collections::HashSet<String>> {
    let sql = format!("SELECT {column} AS v FROM jobs WHERE tenant_id = ? AND {column} IN ({IDS})");
    let mut found = std::collections::HashSet::new();
    for chunk in values.chunks(IN_CHUNK) {
        let mut q = sqlx::query(sqlx::AssertSqlSafe(in_list(&sql, chunk.len()))).bind(tenant_id);
        for i in 0..in_width(chunk.len()) {
            q = q.bind(chunk[i.min(chunk.len() - 1)]);
        }
        for r in q.fetch_all(&mut **tx).await? {
            found.insert(col::<String>(&r, "v")?);
        }
    }
    Ok(found)
}

/// Every item of a batch of new jobs the data refuses (see [`JobStore::job_insert_problems`]):
/// a name repeated in the batch or taken in the tenant, a child that is not a job of the
/// tenant. New jobs cannot close a cycle: nothing refers to their fresh ids yet.
async fn batch_problems(
    tx: &mut Transaction<'static, Any>,
    tenant_id: &str,
    jobs: &[NewJob],
) -> Result<Vec<ItemRefusal>> {
    let mut problems = Vec::new();
    let names: Vec<&str> = distinct(jobs.iter().map(|n| n.job.name.as_str()));
    let taken = present_in_tenant(tx, "name", tenant_id, &names).await?;
    let children: Vec<&str> = distinct(jobs.iter().flat_map(|n| n.children.iter().map(|c| c.job_id.as_str())));
    let present = present_in_tenant(tx, "id", tenant_id, &children).await?;
    let mut seen = std::collections::HashSet::new();
    for (index, n) in jobs.iter().enumerate() {
        let name = n.job.name.as_str();
        let repeated = !seen.insert(name);
        let problem = if taken.contains(name) {
            Some(("name".to_string(), Some("job_name"), format!("a job named `{name}` exists in this tenant")))
        } else if repeated {
            Some(("name".to_string(), Some("job_name"), format!("a job named `{name}` is earlier in this batch")))
        } else {
            n.children
                .iter()
                .position(|c| !present.contains(&c.job_id))
                .map(|i| (format!("children[{i}]"), None, format!("job `{}` does not exist", n.children[i].job_id)))
        };
        if let Some((field, conflict, message)) = problem {
            problems.push(ItemRefusal { index, field, conflict, message });
        }
    }
    Ok(problems)
}

impl SqlStore {
    /// A job's peak fire rate as stored (`fire_rate`, or computed for a row from before 0017)
    /// and whether it is active; `None` if the job does not exist.
    async fn job_rate_now(
        &self,
        tx: &mut Transaction<'static, Any>,
        tenant_id: &str,
        id: &str,
    ) -> Result<Option<(i64, bool)>> {
        let sql = format!(
            "SELECT state, fire_rate, schedule, created_at_ms FROM jobs WHERE id = ? AND tenant_id = ?{}",
            self.lock_clause()
        );
        let Some(r) = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(id).bind(tenant_id).fetch_optional(&mut **tx).await?
        else {
            return Ok(None);
        };
        let rate = match col::<Option<i64>>(&r, "fire_rate")? {
            Some(rate) => rate,
            None => fire_rate_of(&json_col(&r, "schedule")?, col(&r, "created_at_ms")?),
        };
        Ok(Some((rate, parse_col::<JobState>(&r, "state")? == JobState::Active)))
    }

    async fn insert_job(&self, j: &Job, children: &[ChildEdge], quotas: Option<&Quotas>) -> Result<()> {
        let rate = fire_rate_of(&j.schedule, j.created_at_ms);
        let adding = if j.state == JobState::Active { rate } else { 0 };
        let mut tx = self.job_write_tx(&j.tenant_id).await?;
        check_children(&mut tx, &j.tenant_id, &j.id, children).await?;
        bind_job(sqlx::query(sqlx::AssertSqlSafe(insert_jobs_sql(1))), j, rate)
            .execute(&mut *tx)
            .await
            .map_err(job_conflict(&j.name))?;
        let edges: Vec<(&str, &ChildEdge, i64)> =
            children.iter().map(|c| (j.id.as_str(), c, j.created_at_ms)).collect();
        insert_edges(&mut tx, &j.tenant_id, &edges).await?;
        self.settle_job_counts(&mut tx, &j.tenant_id, quotas, (1, adding)).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn insert_jobs(&self, tenant_id: &str, jobs: &[NewJob], quotas: &Quotas) -> Result<()> {
        if let Some(other) = jobs.iter().find(|n| n.job.tenant_id != tenant_id) {
            return Err(StoreError::Refused {
                field: "tenant_id".into(),
                message: format!("job `{}` is of another tenant than the batch", other.job.id),
            });
        }
        let rates: Vec<i64> = jobs.iter().map(|n| fire_rate_of(&n.job.schedule, n.job.created_at_ms)).collect();
        let adding: i64 =
            jobs.iter().zip(&rates).filter(|(n, _)| n.job.state == JobState::Active).map(|(_, r)| r).sum();
        let mut tx = self.job_write_tx(tenant_id).await?;
        let problems = batch_problems(&mut tx, tenant_id, jobs).await?;
        if !problems.is_empty() {
            return Err(StoreError::Items(problems));
        }
        let mut rest = jobs.iter().zip(&rates).collect::<Vec<_>>();
        for size in pow2_chunks(jobs.len()) {
            let chunk: Vec<_> = rest.drain(..size).collect();
            let mut q = sqlx::query(sqlx::AssertSqlSafe(insert_jobs_sql(size)));
            for (n, rate) in &chunk {
                q = bind_job(q, &n.job, **rate);
            }
            if let Err(e) = q.execute(&mut *tx).await {
                // A name taken since the check by a write racing this one (another create, an
                // executor's registration): found again, by item, once this batch's own rows
                // are rolled back.
                if matches!(&e, sqlx::Error::Database(d) if d.is_unique_violation()) {
                    tx.rollback().await?;
                    let found = self.job_insert_problems(tenant_id, jobs).await?;
                    if !found.is_empty() {
                        return Err(StoreError::Items(found));
                    }
                }
                return Err(job_conflict(&chunk[0].0.job.name)(e));
            }
        }
        let edges: Vec<(&str, &ChildEdge, i64)> = jobs
            .iter()
            .flat_map(|n| n.children.iter().map(move |c| (n.job.id.as_str(), c, n.job.created_at_ms)))
            .collect();
        insert_edges(&mut tx, tenant_id, &edges).await?;
        self.settle_job_counts(&mut tx, tenant_id, Some(quotas), (jobs.len() as i64, adding)).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn update_job(
        &self,
        j: &Job,
        children: Option<&[ChildEdge]>,
        expected_version: i64,
        quotas: Option<&Quotas>,
    ) -> Result<bool> {
        let rate = fire_rate_of(&j.schedule, j.created_at_ms);
        let mut tx = self.job_write_tx(&j.tenant_id).await?;
        // What the change adds: the new definition's rate if active, less the old one's.
        let adding = self.job_rate_now(&mut tx, &j.tenant_id, &j.id).await?.map_or(0, |(old, was_active)| {
            (if j.state == JobState::Active { rate } else { 0 }) - if was_active { old } else { 0 }
        });
        if let Some(children) = children {
            check_children(&mut tx, &j.tenant_id, &j.id, children).await?;
        }
        let r = sqlx::query(
            "UPDATE jobs SET app_id = ?, name = ?, description = ?, handler = ?, script_id = ?, script_version = ?, schedule_kind = ?, schedule = ?, \
             params = ?, route = ?, block_strategy = ?, misfire = ?, failure = ?, timeout_ms = ?, max_concurrency = ?, wait_for = ?, state = ?, \
             script_limits = ?, version = ?, generated_until_ms = ?, updated_at_ms = ?, fire_rate = ? WHERE id = ? AND tenant_id = ? AND version = ?",
        )
        .bind(&j.app_id)
        .bind(&j.name)
        .bind(&j.description)
        .bind(&j.handler)
        .bind(&j.script_id)
        .bind(j.script_version)
        .bind(j.schedule_kind.as_str())
        .bind(to_json(&j.schedule))
        .bind(to_json(&j.params))
        .bind(j.route.as_str())
        .bind(j.block.as_str())
        .bind(to_json(&j.misfire))
        .bind(to_json(&j.failure))
        .bind(j.timeout_ms)
        .bind(j.max_concurrency)
        .bind(j.wait.as_str())
        .bind(j.state.as_str())
        .bind(j.script_limits.as_ref().map(to_json))
        .bind(j.version)
        .bind(j.generated_until_ms)
        .bind(j.updated_at_ms)
        .bind(rate)
        .bind(&j.id)
        .bind(&j.tenant_id)
        .bind(expected_version)
        .execute(&mut *tx)
        .await
        .map_err(job_conflict(&j.name))?;
        if r.rows_affected() == 0 {
            let exists = sqlx::query("SELECT 1 FROM jobs WHERE id = ? AND tenant_id = ?")
                .bind(&j.id)
                .bind(&j.tenant_id)
                .fetch_optional(&mut *tx)
                .await?
                .is_some();
            return if exists { Err(StoreError::Stale("job")) } else { Ok(false) };
        }
        if let Some(children) = children {
            write_children(&mut tx, &j.tenant_id, &j.id, children, j.updated_at_ms).await?;
        }
        // Re-derive the not-yet-dispatched future: generated fires of the old definition
        // go, and the generator regenerates from the new one (no duplicates: the rows are gone).
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DELETE FROM runs WHERE open_job_id = ? AND state IN ({}) AND trigger_kind = 'schedule' \
             AND scheduled_at_ms > ?",
            sql_states(NOT_DISPATCHED)
        )))
        .bind(&j.id)
        .bind(j.updated_at_ms)
        .execute(&mut *tx)
        .await?;
        self.settle_job_counts(&mut tx, &j.tenant_id, quotas, (0, adding)).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn set_job_state(
        &self,
        tenant_id: &str,
        id: &str,
        state: JobState,
        now_ms: i64,
        quotas: Option<&Quotas>,
    ) -> Result<Option<Job>> {
        let mut tx = self.job_write_tx(tenant_id).await?;
        let before = self.job_rate_now(&mut tx, tenant_id, id).await?;
        // What the change adds to the tenant's active rate.
        let adding = before.map_or(0, |(rate, was_active)| match (was_active, state == JobState::Active) {
            (false, true) => rate,
            (true, false) => -rate,
            _ => 0,
        });
        // Start fires from now on (no catch-up of the stopped period); stop drops the
        // generated fires not yet dispatched. Triggered runs are kept either way.
        let changed = sqlx::query(
            "UPDATE jobs SET state = ?, version = version + 1, updated_at_ms = ?, generated_until_ms = ? \
             WHERE id = ? AND tenant_id = ? AND state <> ?",
        )
        .bind(state.as_str())
        .bind(now_ms)
        .bind(now_ms)
        .bind(id)
        .bind(tenant_id)
        .bind(state.as_str())
        .execute(&mut *tx)
        .await?;
        if changed.rows_affected() > 0 && state == JobState::Stopped {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DELETE FROM runs WHERE open_job_id = ? AND state IN ({}) AND trigger_kind = 'schedule'",
                sql_states(NOT_DISPATCHED)
            )))
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        let job =
            sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {JOB_COLS} FROM jobs WHERE id = ? AND tenant_id = ?")))
                .bind(id)
                .bind(tenant_id)
                .fetch_optional(&mut *tx)
                .await?
                .as_ref()
                .map(job_row)
                .transpose()?;
        if changed.rows_affected() > 0 {
            self.settle_job_counts(&mut tx, tenant_id, quotas, (0, adding)).await?;
        }
        tx.commit().await?;
        Ok(job)
    }
}

#[async_trait]
impl JobStore for SqlStore {
    // ---- jobs ----

    async fn job_insert(&self, j: &Job, children: &[ChildEdge]) -> Result<()> {
        self.insert_job(j, children, None).await
    }

    async fn job_insert_within(&self, j: &Job, children: &[ChildEdge], quotas: &Quotas) -> Result<()> {
        self.insert_job(j, children, Some(quotas)).await
    }

    async fn job_insert_many_within(&self, tenant_id: &str, jobs: &[NewJob], quotas: &Quotas) -> Result<()> {
        if jobs.is_empty() {
            return Ok(());
        }
        self.insert_jobs(tenant_id, jobs, quotas).await
    }

    async fn job_insert_problems(&self, tenant_id: &str, jobs: &[NewJob]) -> Result<Vec<ItemRefusal>> {
        let mut tx = self.begin().await?;
        let problems = batch_problems(&mut tx, tenant_id, jobs).await?;
        tx.commit().await?;
        Ok(problems)
    }

    async fn job_get(&self, tenant_id: &str, id: &str) -> Result<Option<Job>> {
        sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {JOB_COLS} FROM jobs WHERE id = ? AND tenant_id = ?")))
            .bind(id)
            .bind(tenant_id)
            .fetch_optional(self.reader())
            .await?
            .as_ref()
            .map(job_row)
            .transpose()
    }

    async fn job_get_many(&self, ids: &[String]) -> Result<Vec<Job>> {
        let sql = format!("SELECT {JOB_COLS} FROM jobs WHERE id IN ({})", IDS);
        self.jobs_by_id(&sql, ids).await?.iter().map(job_row).collect()
    }

    async fn job_misfire_many(&self, ids: &[String]) -> Result<Vec<JobMisfire>> {
        let sql = format!("SELECT id, misfire, generated_until_ms FROM jobs WHERE id IN ({})", IDS);
        self.jobs_by_id(&sql, ids)
            .await?
            .iter()
            .map(|r| {
                Ok(JobMisfire {
                    id: col(r, "id")?,
                    misfire: json_col(r, "misfire")?,
                    generated_until_ms: col(r, "generated_until_ms")?,
                })
            })
            .collect()
    }

    async fn job_list(&self, tenant_id: &str, f: &JobFilter, page: &Page) -> Result<Vec<Job>> {
        let state = f.state.map(|s| s.as_str());
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {JOB_COLS} FROM jobs WHERE tenant_id = ? AND (? IS NULL OR app_id = ?) AND (? IS NULL OR state = ?) \
             AND (? IS NULL OR name = ?) AND (? IS NULL OR id > ?) ORDER BY id LIMIT ?"
        )))
        .bind(tenant_id)
        .bind(&f.app_id)
        .bind(&f.app_id)
        .bind(state)
        .bind(state)
        .bind(&f.name)
        .bind(&f.name)
        .bind(&page.after)
        .bind(&page.after)
        .bind(page.limit)
        .fetch_all(self.reader())
        .await?
        .iter()
        .map(job_row)
        .collect()
    }

    async fn job_update(&self, j: &Job, children: Option<&[ChildEdge]>, expected_version: i64) -> Result<bool> {
        self.update_job(j, children, expected_version, None).await
    }

    async fn job_update_within(
        &self,
        j: &Job,
        children: Option<&[ChildEdge]>,
        expected_version: i64,
        quotas: &Quotas,
    ) -> Result<bool> {
        self.update_job(j, children, expected_version, Some(quotas)).await
    }

    async fn job_set_state(&self, tenant_id: &str, id: &str, state: JobState, now_ms: i64) -> Result<Option<Job>> {
        self.set_job_state(tenant_id, id, state, now_ms, None).await
    }

    async fn job_set_state_within(
        &self,
        tenant_id: &str,
        id: &str,
        state: JobState,
        now_ms: i64,
        quotas: &Quotas,
    ) -> Result<Option<Job>> {
        self.set_job_state(tenant_id, id, state, now_ms, Some(quotas)).await
    }

    async fn job_delete(&self, tenant_id: &str, id: &str, now_ms: i64) -> Result<bool> {
        let mut tx = self.job_write_tx(tenant_id).await?;
        let before = self.job_rate_now(&mut tx, tenant_id, id).await?;
        let r = sqlx::query("DELETE FROM jobs WHERE id = ? AND tenant_id = ?")
            .bind(id)
            .bind(tenant_id)
            .execute(&mut *tx)
            .await?;
        if r.rows_affected() > 0 {
            // Fan-ins waiting for it in a chain are released before its edges go.
            super::chains::job_deleted(&mut tx, self.dialect, tenant_id, id, now_ms).await?;
            sqlx::query("DELETE FROM job_children WHERE parent_job_id = ? OR child_job_id = ?")
                .bind(id)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DELETE FROM runs WHERE open_job_id = ? AND state IN ({})",
                sql_states(NOT_DISPATCHED)
            )))
            .bind(id)
            .execute(&mut *tx)
            .await?;
            let rate = before.map_or(0, |(rate, was_active)| if was_active { rate } else { 0 });
            self.settle_job_counts(&mut tx, tenant_id, None, (-1, -rate)).await?;
        }
        tx.commit().await?;
        Ok(r.rows_affected() > 0)
    }

    async fn job_children(&self, job_id: &str) -> Result<Vec<ChildEdge>> {
        sqlx::query("SELECT child_job_id, fire_on FROM job_children WHERE parent_job_id = ? ORDER BY child_job_id")
            .bind(job_id)
            .fetch_all(self.reader())
            .await?
            .iter()
            .map(|r| Ok(ChildEdge { job_id: col(r, "child_job_id")?, on: parse_col(r, "fire_on")? }))
            .collect()
    }

    async fn job_insert_if_absent(&self, job: &Job) -> Result<bool> {
        match self.job_insert(job, &[]).await {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict { what: "job_registration", .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    // ---- scheduling engine ----

    async fn job_timed_versions(&self) -> Result<Vec<(String, i64)>> {
        sqlx::query(
            "SELECT id, version FROM jobs WHERE state = 'active' AND schedule_kind IN ('cron', 'fixed_rate') ORDER BY id",
        )
        .fetch_all(self.reader())
        .await?
        .iter()
        .map(|r| Ok((col(r, "id")?, col(r, "version")?)))
        .collect()
    }

    async fn job_due_for_generation(&self, horizon_end_ms: i64, limit: i64) -> Result<Vec<Job>> {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {JOB_COLS} FROM jobs WHERE state = 'active' AND schedule_kind IN ('cron', 'fixed_rate', 'once') \
             AND (generated_until_ms IS NULL OR generated_until_ms < ?) ORDER BY generated_until_ms LIMIT ?"
        )))
        .bind(horizon_end_ms)
        .bind(limit)
        .fetch_all(self.reader())
        .await?
        .iter()
        .map(job_row)
        .collect()
    }
}
