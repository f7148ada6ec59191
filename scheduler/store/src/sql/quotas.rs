//! [`QuotaStore`] for [`SqlStore`]: the operator's per-tenant quota settings, usage counts,
//! and the checks the job writes (`sql/jobs.rs`) and log appends make inside their
//! transaction.

use async_trait::async_trait;
use sqlx::{Any, Transaction};
use sundial_core::quota::{self, MICROS_PER_FIRE, Quota, QuotaOverrides, Quotas};
use sundial_core::schedule::{Schedule, ScheduleSpec};
use sundial_core::types::RunState;

use super::{SqlStore, col, json_col, sql_states, to_json};
use crate::{Dialect, LogAppend, QuotaStore, RegisteredHandlers, Result, StoreError, TenantUsage};

/// `SUM(expr)` as an integer, 0 over no rows (MySQL sums to DECIMAL, which the driver does not read as i64).
fn sum_int(dialect: Dialect, expr: &str) -> String {
    let ty = match dialect {
        Dialect::MySql => "SIGNED",
        Dialect::Sqlite => "INTEGER",
    };
    format!("CAST(COALESCE(SUM({expr}), 0) AS {ty})")
}

/// A job's peak fires per second, millionths (stored in `jobs.fire_rate`). A schedule that
/// does not parse counts as the most any schedule can fire (once a second).
pub(super) fn fire_rate_of(spec: &ScheduleSpec, created_at_ms: i64) -> i64 {
    Schedule::parse(spec, created_at_ms).map_or(MICROS_PER_FIRE, |s| quota::peak_fire_rate_micros(&s))
}

impl SqlStore {
    /// Serialise the quota checks of one tenant: MySQL locks the tenant's row until the
    /// transaction ends (SQLite's `BEGIN IMMEDIATE` already holds the only write lock), so two
    /// creates cannot both pass a check that only one of them fits.
    pub(super) async fn lock_tenant(&self, tx: &mut Transaction<'static, Any>, tenant_id: &str) -> Result<()> {
        let sql = format!("SELECT id FROM tenants WHERE id = ?{}", self.lock_clause());
        sqlx::query(sqlx::AssertSqlSafe(sql)).bind(tenant_id).fetch_optional(&mut **tx).await?;
        Ok(())
    }
}

/// Fill the fire rate of the tenant's jobs written before migration 0017 left it NULL
/// (cron expressions are parsed here, in Rust), then count its jobs and its active jobs'
/// fire rate. Both through `ix_jobs_quota (tenant_id, fire_rate, state)`.
pub(super) async fn job_usage(
    tx: &mut Transaction<'static, Any>,
    dialect: Dialect,
    tenant_id: &str,
) -> Result<(i64, i64)> {
    let unset = sqlx::query("SELECT id, schedule, created_at_ms FROM jobs WHERE tenant_id = ? AND fire_rate IS NULL")
        .bind(tenant_id)
        .fetch_all(&mut **tx)
        .await?;
    for r in &unset {
        let id: String = col(r, "id")?;
        let spec: ScheduleSpec = json_col(r, "schedule")?;
        let rate = fire_rate_of(&spec, col(r, "created_at_ms")?);
        sqlx::query("UPDATE jobs SET fire_rate = ? WHERE id = ?").bind(rate).bind(&id).execute(&mut **tx).await?;
    }
    let sum = sum_int(dialect, "CASE WHEN state = 'active' THEN fire_rate ELSE 0 END");
    let r =
        sqlx::query(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) AS n, {sum} AS rate FROM jobs WHERE tenant_id = ?")))
            .bind(tenant_id)
            .fetch_one(&mut **tx)
            .await?;
    Ok((col(&r, "n")?, col(&r, "rate")?))
}

/// `tenant_job_counts.jobs` of a tenant whose row was written ([`SqlStore::job_write_tx`])
/// but whose jobs are not counted yet.
const UNCOUNTED: i64 = -1;

impl SqlStore {
    /// The transaction of a job write of `tenant_id`. Every job write of a tenant (insert,
    /// batch, edit, start, stop, delete; with quotas or without) writes its rows first, then,
    /// last before its commit, [`SqlStore::settle_job_counts`]: it locks the tenant's job count
    /// and active jobs' summed fire rate (`tenant_job_counts`), checks the quotas against them
    /// and moves them by what it wrote. So the counts are the tenant's jobs as of the lock, two
    /// writes cannot both pass a check only one of them fits, a tenant's writes wait for each
    /// other only over the check, the update and the commit, and every writer takes job rows
    /// before the counts (one order, no deadlock between them; SQLite's `BEGIN IMMEDIATE`
    /// already holds the only write lock). The row is made once per tenant here, before the
    /// transaction (an autocommit insert, ignored if it is there: racing inserts inside
    /// transactions deadlock on MySQL), marked [`UNCOUNTED`] until the first write counts the
    /// tenant's jobs.
    pub(super) async fn job_write_tx(&self, tenant_id: &str) -> Result<Transaction<'static, Any>> {
        if !self.counted_tenants.lock().expect("not poisoned").contains(tenant_id) {
            let insert = match self.dialect {
                Dialect::MySql => "INSERT IGNORE INTO tenant_job_counts (tenant_id, jobs, fire_rate) VALUES (?, ?, 0)",
                Dialect::Sqlite => {
                    "INSERT OR IGNORE INTO tenant_job_counts (tenant_id, jobs, fire_rate) VALUES (?, ?, 0)"
                }
            };
            sqlx::query(insert).bind(tenant_id).bind(UNCOUNTED).execute(&self.pool).await?;
            self.counted_tenants.lock().expect("not poisoned").insert(tenant_id.to_string());
        }
        self.begin().await
    }

    /// The last step of a job write ([`SqlStore::job_write_tx`]) that added `own` (jobs, active
    /// fire rate; either sign) to its tenant: lock the counts, refuse past `quotas`
    /// ([`check_jobs`]; the caller's transaction is then dropped with its rows), move the counts.
    pub(super) async fn settle_job_counts(
        &self,
        tx: &mut Transaction<'static, Any>,
        tenant_id: &str,
        quotas: Option<&Quotas>,
        own: (i64, i64),
    ) -> Result<()> {
        let counts = self.lock_job_counts(tx, tenant_id, own).await?;
        if let Some(q) = quotas {
            check_jobs(counts, q, own.0, own.1)?;
        }
        add_job_counts(tx, tenant_id, own.0, own.1).await
    }

    /// Lock the tenant's counts row for the rest of `tx` and read it: the tenant's jobs and
    /// active fire rate without what `tx` has written already (`own`: jobs, rate), counted
    /// from the jobs (and the row filled) if the row is new.
    async fn lock_job_counts(
        &self,
        tx: &mut Transaction<'static, Any>,
        tenant_id: &str,
        own: (i64, i64),
    ) -> Result<(i64, i64)> {
        let sql = format!("SELECT jobs, fire_rate FROM tenant_job_counts WHERE tenant_id = ?{}", self.lock_clause());
        let row = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(tenant_id).fetch_optional(&mut **tx).await?;
        Ok(match row {
            Some(r) if col::<i64>(&r, "jobs")? != UNCOUNTED => (col(&r, "jobs")?, col(&r, "fire_rate")?),
            found => {
                // Counted as this transaction sees the jobs: its own rows are among them.
                let (n, rate) = job_usage(tx, self.dialect, tenant_id).await?;
                let (n, rate) = (n - own.0, rate - own.1);
                if found.is_some() {
                    sqlx::query("UPDATE tenant_job_counts SET jobs = ?, fire_rate = ? WHERE tenant_id = ?")
                        .bind(n)
                        .bind(rate)
                        .bind(tenant_id)
                        .execute(&mut **tx)
                        .await?;
                }
                (n, rate)
            }
        })
    }
}

/// Move the tenant's counts (locked by [`SqlStore::settle_job_counts`]) by what a
/// write did: `jobs` jobs and `rate` millionths of active fires per second, either sign.
async fn add_job_counts(tx: &mut Transaction<'static, Any>, tenant_id: &str, jobs: i64, rate: i64) -> Result<()> {
    if jobs == 0 && rate == 0 {
        return Ok(());
    }
    sqlx::query(
        "UPDATE tenant_job_counts SET jobs = jobs + ?, fire_rate = fire_rate + ? WHERE tenant_id = ? AND jobs >= 0",
    )
    .bind(jobs)
    .bind(rate)
    .bind(tenant_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Refuse (nothing written: the caller's transaction is dropped) a job write adding
/// `jobs` jobs and `rate` millionths of fires per second beyond the tenant's quotas, given
/// its `counts` from [`SqlStore::settle_job_counts`].
fn check_jobs(counts: (i64, i64), quotas: &Quotas, jobs: i64, rate: i64) -> Result<()> {
    let (n, used_rate) = counts;
    quota::check(quotas, Quota::MaxJobs, n, jobs).map_err(StoreError::QuotaExceeded)?;
    quota::check(quotas, Quota::MaxFiresPerSecond, used_rate, rate).map_err(StoreError::QuotaExceeded)?;
    Ok(())
}

#[async_trait]
impl QuotaStore for SqlStore {
    async fn quota_get(&self, tenant_id: &str) -> Result<QuotaOverrides> {
        match sqlx::query("SELECT quotas FROM tenant_quotas WHERE tenant_id = ?")
            .bind(tenant_id)
            .fetch_optional(self.reader())
            .await?
        {
            Some(r) => json_col(&r, "quotas"),
            None => Ok(QuotaOverrides::default()),
        }
    }

    async fn quota_set(&self, tenant_id: &str, o: &QuotaOverrides, now_ms: i64) -> Result<()> {
        let mut tx = self.begin().await?;
        sqlx::query("DELETE FROM tenant_quotas WHERE tenant_id = ?").bind(tenant_id).execute(&mut *tx).await?;
        sqlx::query("INSERT INTO tenant_quotas (tenant_id, quotas, updated_at_ms) VALUES (?, ?, ?)")
            .bind(tenant_id)
            .bind(to_json(o))
            .bind(now_ms)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn quota_all(&self) -> Result<Vec<(String, QuotaOverrides)>> {
        sqlx::query("SELECT tenant_id, quotas FROM tenant_quotas ORDER BY tenant_id")
            .fetch_all(self.reader())
            .await?
            .iter()
            .map(|r| Ok((col(r, "tenant_id")?, json_col(r, "quotas")?)))
            .collect()
    }

    async fn usage_get(&self, tenant_id: &str, now_ms: i64) -> Result<TenantUsage> {
        let mut tx = self.begin().await?;
        let (jobs, fire_rate_micros) = job_usage(&mut tx, self.dialect, tenant_id).await?;
        tx.commit().await?;
        let bytes = sum_int(self.dialect, "v.size_bytes");
        let scripts = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) AS n, (SELECT {bytes} FROM script_versions v \
             JOIN scripts s2 ON s2.id = v.script_id WHERE s2.tenant_id = ?) AS bytes FROM scripts WHERE tenant_id = ?"
        )))
        .bind(tenant_id)
        .bind(tenant_id)
        .fetch_one(self.reader())
        .await?;
        let log_bytes_today =
            sqlx::query("SELECT log_bytes FROM tenant_daily_usage WHERE tenant_id = ? AND day_ms = ?")
                .bind(tenant_id)
                .bind(quota::day_of(now_ms))
                .fetch_optional(self.reader())
                .await?
                .map(|r| col(&r, "log_bytes"))
                .transpose()?
                .unwrap_or(0);
        let handlers = sqlx::query(
            "SELECT COALESCE(MAX(n), 0) AS n FROM (SELECT COUNT(*) AS n FROM jobs WHERE tenant_id = ? \
             AND source = 'registration' GROUP BY app_id) per_app",
        )
        .bind(tenant_id)
        .fetch_one(self.reader())
        .await?;
        // Through each job's open runs (`ix_runs_open`), not every run of the tenant.
        let inflight = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) AS n FROM jobs j JOIN runs r ON r.open_job_id = j.id \
             WHERE j.tenant_id = ? AND r.state IN ({})",
            sql_states(&[RunState::Dispatching, RunState::Running])
        )))
        .bind(tenant_id)
        .fetch_one(self.reader())
        .await?;
        Ok(TenantUsage {
            jobs,
            fire_rate_micros,
            scripts: col(&scripts, "n")?,
            script_bytes: col(&scripts, "bytes")?,
            log_bytes_today,
            handlers_most_in_one_app: col(&handlers, "n")?,
            inflight: col(&inflight, "n")?,
        })
    }

    async fn app_registered_handlers(
        &self,
        tenant_id: &str,
        app_id: &str,
        handlers: &[String],
    ) -> Result<RegisteredHandlers> {
        let total: i64 = col(
            &sqlx::query("SELECT COUNT(*) AS n FROM jobs WHERE app_id = ? AND source = 'registration'")
                .bind(app_id)
                .fetch_one(self.reader())
                .await?,
            "n",
        )?;
        let mut present = 0;
        // One lookup each through `uq_jobs_registration` (at most the per-call limit of handlers).
        for h in handlers {
            let found = sqlx::query("SELECT 1 FROM jobs WHERE registration_key = ?")
                .bind(format!("{app_id}:{h}"))
                .fetch_optional(self.reader())
                .await?
                .is_some();
            present += i64::from(found);
        }
        // The kept count (`settle_job_counts`); counted for a tenant with none yet.
        let kept = sqlx::query("SELECT jobs FROM tenant_job_counts WHERE tenant_id = ? AND jobs >= 0")
            .bind(tenant_id)
            .fetch_optional(self.reader())
            .await?;
        let tenant_jobs = match kept {
            Some(r) => col(&r, "jobs")?,
            None => col(
                &sqlx::query("SELECT COUNT(*) AS n FROM jobs WHERE tenant_id = ?")
                    .bind(tenant_id)
                    .fetch_one(self.reader())
                    .await?,
                "n",
            )?,
        };
        Ok(RegisteredHandlers { app_total: total, present, tenant_jobs })
    }

    async fn log_append_within(&self, a: &LogAppend<'_>, quotas: &Quotas) -> Result<()> {
        let bytes: i64 = a.lines.iter().map(|(_, _, m)| m.len() as i64).sum();
        let day = quota::day_of(a.now_ms);
        let mut tx = self.begin().await?;
        self.lock_tenant(&mut tx, a.tenant_id).await?;
        let run_bytes: i64 = sqlx::query("SELECT log_bytes FROM run_log_usage WHERE run_id = ?")
            .bind(a.run_id)
            .fetch_optional(&mut *tx)
            .await?
            .map(|r| col(&r, "log_bytes"))
            .transpose()?
            .unwrap_or(-1);
        let day_bytes: i64 = sqlx::query("SELECT log_bytes FROM tenant_daily_usage WHERE tenant_id = ? AND day_ms = ?")
            .bind(a.tenant_id)
            .bind(day)
            .fetch_optional(&mut *tx)
            .await?
            .map(|r| col(&r, "log_bytes"))
            .transpose()?
            .unwrap_or(-1);
        quota::check(quotas, Quota::MaxLogBytesPerRun, run_bytes.max(0), bytes).map_err(StoreError::QuotaExceeded)?;
        quota::check(quotas, Quota::MaxLogBytesPerDay, day_bytes.max(0), bytes).map_err(StoreError::QuotaExceeded)?;
        super::writes::log_insert(&mut tx, a.run_id, a.shard_index, a.attempt, a.lines).await?;
        if run_bytes < 0 {
            sqlx::query("INSERT INTO run_log_usage (run_id, log_bytes) VALUES (?, ?)")
                .bind(a.run_id)
                .bind(bytes)
                .execute(&mut *tx)
                .await?;
        } else {
            sqlx::query("UPDATE run_log_usage SET log_bytes = log_bytes + ? WHERE run_id = ?")
                .bind(bytes)
                .bind(a.run_id)
                .execute(&mut *tx)
                .await?;
        }
        if day_bytes < 0 {
            sqlx::query("INSERT INTO tenant_daily_usage (tenant_id, day_ms, log_bytes) VALUES (?, ?, ?)")
                .bind(a.tenant_id)
                .bind(day)
                .bind(bytes)
                .execute(&mut *tx)
                .await?;
        } else {
            sqlx::query("UPDATE tenant_daily_usage SET log_bytes = log_bytes + ? WHERE tenant_id = ? AND day_ms = ?")
                .bind(bytes)
                .bind(a.tenant_id)
                .bind(day)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
