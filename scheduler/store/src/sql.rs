//! [`SqlStore`]: the [`Store`] implementation for MySQL/MariaDB and SQLite.
//!
//! Statement text is constant for every call of a method (optional filters are
//! `(? IS NULL OR col = ?)`), so sqlx's prepared-statement cache never churns.

use std::fs::File;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{Any, AnyPool, Executor, Row, Transaction};
use sundial_core::types::{JobState, Role};

use crate::error::conflict_on;
use crate::{
    ApiKey, App, Dialect, Job, JobFilter, Page, Result, Run, RunFilter, Script, Store, StoreError,
    Tenant, migrate,
};

#[derive(Debug, Clone)]
pub struct ConnectOptions {
    pub url: String,
    pub max_connections: u32,
    /// SQLite only: hold an exclusive lock file beside the database for the life of
    /// the store, refusing a second server on the same file.
    pub lock_sqlite_file: bool,
}

impl ConnectOptions {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            max_connections: 10,
            lock_sqlite_file: true,
        }
    }
}

#[derive(Debug)]
pub struct SqlStore {
    pool: AnyPool,
    dialect: Dialect,
    _lock: Option<File>,
}

fn sqlite_path(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    Some(rest.split('?').next().unwrap_or(rest))
}

impl SqlStore {
    /// Connect (creating a SQLite file if missing) without migrating.
    pub async fn connect(opts: &ConnectOptions) -> Result<SqlStore> {
        sqlx::any::install_default_drivers();
        if opts.url.starts_with("mysql://") || opts.url.starts_with("mariadb://") {
            let url = opts.url.replacen("mariadb://", "mysql://", 1);
            let pool = AnyPoolOptions::new()
                .max_connections(opts.max_connections)
                .acquire_timeout(Duration::from_secs(10))
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        // Strict mode: refuse rather than truncate; UTC only matters for NOW().
                        conn.execute("SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION', time_zone = '+00:00'")
                            .await?;
                        Ok(())
                    })
                })
                .connect(&url)
                .await?;
            return Ok(SqlStore {
                pool,
                dialect: Dialect::MySql,
                _lock: None,
            });
        }
        let Some(path) = sqlite_path(&opts.url) else {
            return Err(StoreError::BadUrl(opts.url.clone()));
        };
        let memory = path == ":memory:" || path.is_empty();
        let lock = if opts.lock_sqlite_file && !memory {
            if let Some(dir) = std::path::Path::new(path)
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
            {
                std::fs::create_dir_all(dir).map_err(|e| StoreError::Locked {
                    path: dir.display().to_string(),
                    hint: format!("cannot create the data directory: {e}"),
                })?;
            }
            let lock_path = format!("{path}.lock");
            let f = File::options()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock_path)
                .map_err(|e| StoreError::Locked {
                    path: lock_path.clone(),
                    hint: format!("cannot open the lock file: {e}"),
                })?;
            if f.try_lock().is_err() {
                return Err(StoreError::Locked {
                    path: lock_path,
                    hint: "is another `sundial serve` running on this database file? Stop it, or use another --data-dir"
                        .into(),
                });
            }
            Some(f)
        } else {
            None
        };
        let url = if memory {
            "sqlite::memory:".to_string()
        } else {
            format!("sqlite://{path}?mode=rwc")
        };
        // One connection: SQLite has one writer, and one connection means no
        // SQLITE_BUSY and a natural queue. WAL keeps readers of other processes unblocked.
        let pool = AnyPoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .after_connect(|conn, _| {
                Box::pin(async move {
                    conn.execute("PRAGMA journal_mode = WAL").await?;
                    conn.execute("PRAGMA synchronous = NORMAL").await?;
                    conn.execute("PRAGMA busy_timeout = 5000").await?;
                    Ok(())
                })
            })
            .connect(&url)
            .await?;
        Ok(SqlStore {
            pool,
            dialect: Dialect::Sqlite,
            _lock: lock,
        })
    }

    /// Connect and apply pending migrations.
    pub async fn open(opts: &ConnectOptions, now_ms: i64) -> Result<SqlStore> {
        let store = Self::connect(opts).await?;
        store.migrate(now_ms).await?;
        Ok(store)
    }

    /// Apply pending migrations; returns the versions applied.
    pub async fn migrate(&self, now_ms: i64) -> Result<Vec<i64>> {
        let mut conn = self.pool.acquire().await?;
        migrate::run(&mut conn, self.dialect, now_ms).await
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// A write transaction. SQLite takes the write lock at BEGIN (IMMEDIATE), so a
    /// transaction never fails half-way for lack of it.
    async fn begin(&self) -> Result<Transaction<'static, Any>> {
        Ok(match self.dialect {
            Dialect::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            Dialect::MySql => self.pool.begin().await?,
        })
    }
}

// ---- row decoding -------------------------------------------------------------

fn col<'r, T: sqlx::Decode<'r, Any> + sqlx::Type<Any>>(r: &'r AnyRow, name: &str) -> Result<T> {
    r.try_get(name)
        .map_err(|e| StoreError::Corrupt(format!("column {name}: {e}")))
}

fn parse_col<T: FromStr<Err = String>>(r: &AnyRow, name: &str) -> Result<T> {
    let s: String = col(r, name)?;
    s.parse()
        .map_err(|e| StoreError::Corrupt(format!("column {name}: {e}")))
}

fn json_col<T: serde::de::DeserializeOwned>(r: &AnyRow, name: &str) -> Result<T> {
    let s: String = col(r, name)?;
    serde_json::from_str(&s).map_err(|e| StoreError::Corrupt(format!("column {name}: {e}")))
}

fn json_opt(r: &AnyRow, name: &str) -> Result<Option<Value>> {
    let s: Option<String> = col(r, name)?;
    s.map(|s| {
        serde_json::from_str(&s).map_err(|e| StoreError::Corrupt(format!("column {name}: {e}")))
    })
    .transpose()
}

fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("domain values serialise")
}

fn tenant_row(r: &AnyRow) -> Result<Tenant> {
    Ok(Tenant {
        id: col(r, "id")?,
        name: col(r, "name")?,
        created_at_ms: col(r, "created_at_ms")?,
    })
}

fn api_key_row(r: &AnyRow) -> Result<ApiKey> {
    Ok(ApiKey {
        id: col(r, "id")?,
        tenant_id: col(r, "tenant_id")?,
        name: col(r, "name")?,
        role: parse_col(r, "role")?,
        key_hash: col(r, "key_hash")?,
        display_prefix: col(r, "display_prefix")?,
        created_at_ms: col(r, "created_at_ms")?,
    })
}

fn app_row(r: &AnyRow) -> Result<App> {
    Ok(App {
        id: col(r, "id")?,
        tenant_id: col(r, "tenant_id")?,
        name: col(r, "name")?,
        description: col(r, "description")?,
        endpoints: json_col(r, "endpoints")?,
        secret: col(r, "secret")?,
        previous_secret: col(r, "previous_secret")?,
        previous_expires_ms: col(r, "previous_expires_ms")?,
        created_at_ms: col(r, "created_at_ms")?,
        updated_at_ms: col(r, "updated_at_ms")?,
    })
}

fn job_row(r: &AnyRow) -> Result<Job> {
    Ok(Job {
        id: col(r, "id")?,
        tenant_id: col(r, "tenant_id")?,
        app_id: col(r, "app_id")?,
        name: col(r, "name")?,
        description: col(r, "description")?,
        handler: col(r, "handler")?,
        script_id: col(r, "script_id")?,
        schedule_kind: parse_col(r, "schedule_kind")?,
        schedule: json_col(r, "schedule")?,
        params: json_col(r, "params")?,
        route: parse_col(r, "route")?,
        block: parse_col(r, "block_strategy")?,
        misfire: json_col(r, "misfire")?,
        failure: json_col(r, "failure")?,
        timeout_ms: col(r, "timeout_ms")?,
        max_concurrency: col(r, "max_concurrency")?,
        state: parse_col(r, "state")?,
        source: parse_col(r, "source")?,
        registration_key: col(r, "registration_key")?,
        version: col(r, "version")?,
        generated_until_ms: col(r, "generated_until_ms")?,
        created_at_ms: col(r, "created_at_ms")?,
        updated_at_ms: col(r, "updated_at_ms")?,
    })
}

fn run_row(r: &AnyRow) -> Result<Run> {
    Ok(Run {
        id: col(r, "id")?,
        tenant_id: col(r, "tenant_id")?,
        job_id: col(r, "job_id")?,
        fire_key: col(r, "fire_key")?,
        trigger: parse_col(r, "trigger_kind")?,
        scheduled_at_ms: col(r, "scheduled_at_ms")?,
        state: parse_col(r, "state")?,
        attempt: col(r, "attempt")?,
        shard_total: col(r, "shard_total")?,
        params: json_opt(r, "params")?,
        parent_run_id: col(r, "parent_run_id")?,
        parent_output: json_opt(r, "parent_output")?,
        job_version: col(r, "job_version")?,
        owner_node: col(r, "owner_node")?,
        lease_until_ms: col(r, "lease_until_ms")?,
        deadline_ms: col(r, "deadline_ms")?,
        next_attempt_at_ms: col(r, "next_attempt_at_ms")?,
        reason: col(r, "reason")?,
        message: col(r, "message")?,
        output: json_opt(r, "output")?,
        expired_count: col(r, "expired_count")?,
        created_at_ms: col(r, "created_at_ms")?,
        updated_at_ms: col(r, "updated_at_ms")?,
        started_at_ms: col(r, "started_at_ms")?,
        finished_at_ms: col(r, "finished_at_ms")?,
    })
}

const JOB_COLS: &str = "id, tenant_id, app_id, name, description, handler, script_id, schedule_kind, schedule, params, route, block_strategy, misfire, failure, timeout_ms, max_concurrency, state, source, registration_key, version, generated_until_ms, created_at_ms, updated_at_ms";

/// Refuse children that are not jobs of this tenant, or that would close a cycle.
async fn check_children(
    tx: &mut Transaction<'static, Any>,
    tenant_id: &str,
    parent: &str,
    children: &[String],
) -> Result<()> {
    for (i, child) in children.iter().enumerate() {
        let field = format!("children[{i}]");
        if child == parent {
            return Err(StoreError::Refused {
                field,
                message: "a job cannot be its own child".into(),
            });
        }
        let exists = sqlx::query("SELECT 1 FROM jobs WHERE id = ? AND tenant_id = ?")
            .bind(child)
            .bind(tenant_id)
            .fetch_optional(&mut **tx)
            .await?
            .is_some();
        if !exists {
            return Err(StoreError::Refused {
                field,
                message: format!("job `{child}` does not exist"),
            });
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
    for (i, child) in children.iter().enumerate() {
        let mut stack = vec![child.clone()];
        let mut seen = std::collections::HashSet::new();
        while let Some(n) = stack.pop() {
            if n == parent {
                return Err(StoreError::Refused {
                    field: format!("children[{i}]"),
                    message: format!(
                        "job `{child}` already leads back to this job; the chain would be a cycle"
                    ),
                });
            }
            if seen.insert(n.clone()) {
                stack.extend(
                    edges
                        .iter()
                        .filter(|(p, _)| *p == n)
                        .map(|(_, c)| c.clone()),
                );
            }
        }
    }
    Ok(())
}

async fn write_children(
    tx: &mut Transaction<'static, Any>,
    tenant_id: &str,
    parent: &str,
    children: &[String],
    now_ms: i64,
) -> Result<()> {
    sqlx::query("DELETE FROM job_children WHERE parent_job_id = ?")
        .bind(parent)
        .execute(&mut **tx)
        .await?;
    for child in children {
        sqlx::query("INSERT INTO job_children (parent_job_id, child_job_id, tenant_id, created_at_ms) VALUES (?, ?, ?, ?)")
            .bind(parent)
            .bind(child)
            .bind(tenant_id)
            .bind(now_ms)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

#[async_trait]
impl Store for SqlStore {
    fn dialect(&self) -> Dialect {
        self.dialect
    }

    async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn db_now_ms(&self) -> Result<i64> {
        let sql = match self.dialect {
            Dialect::MySql => "SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) AS now_ms",
            Dialect::Sqlite => {
                "SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) AS now_ms"
            }
        };
        let row = sqlx::query(sql).fetch_one(&self.pool).await?;
        col(&row, "now_ms")
    }

    // ---- tenants ----

    async fn tenant_insert(&self, t: &Tenant) -> Result<()> {
        sqlx::query("INSERT INTO tenants (id, name, created_at_ms) VALUES (?, ?, ?)")
            .bind(&t.id)
            .bind(&t.name)
            .bind(t.created_at_ms)
            .execute(&self.pool)
            .await
            .map_err(conflict_on(
                "tenant_name",
                format!("a tenant named `{}` exists", t.name),
            ))?;
        Ok(())
    }

    async fn tenant_get(&self, id: &str) -> Result<Option<Tenant>> {
        sqlx::query("SELECT id, name, created_at_ms FROM tenants WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(tenant_row)
            .transpose()
    }

    async fn tenant_list(&self, page: &Page) -> Result<Vec<Tenant>> {
        sqlx::query("SELECT id, name, created_at_ms FROM tenants WHERE (? IS NULL OR id > ?) ORDER BY id LIMIT ?")
            .bind(&page.after)
            .bind(&page.after)
            .bind(page.limit)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(tenant_row)
            .collect()
    }

    // ---- api keys ----

    async fn api_key_insert(&self, k: &ApiKey) -> Result<()> {
        sqlx::query(
            "INSERT INTO api_keys (id, tenant_id, name, role, key_hash, display_prefix, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&k.id)
        .bind(&k.tenant_id)
        .bind(&k.name)
        .bind(k.role.as_str())
        .bind(&k.key_hash)
        .bind(&k.display_prefix)
        .bind(k.created_at_ms)
        .execute(&self.pool)
        .await
        .map_err(conflict_on("api_key", "this key already exists"))?;
        Ok(())
    }

    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<ApiKey>> {
        sqlx::query("SELECT id, tenant_id, name, role, key_hash, display_prefix, created_at_ms FROM api_keys WHERE key_hash = ?")
            .bind(key_hash)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(api_key_row)
            .transpose()
    }

    async fn api_key_list(&self, tenant_id: Option<&str>, page: &Page) -> Result<Vec<ApiKey>> {
        sqlx::query(
            "SELECT id, tenant_id, name, role, key_hash, display_prefix, created_at_ms FROM api_keys \
             WHERE ((? IS NULL AND tenant_id IS NULL) OR tenant_id = ?) AND (? IS NULL OR id > ?) ORDER BY id LIMIT ?",
        )
        .bind(tenant_id)
        .bind(tenant_id)
        .bind(&page.after)
        .bind(&page.after)
        .bind(page.limit)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(api_key_row)
        .collect()
    }

    async fn api_key_get(&self, tenant_id: &str, id: &str) -> Result<Option<ApiKey>> {
        sqlx::query("SELECT id, tenant_id, name, role, key_hash, display_prefix, created_at_ms FROM api_keys WHERE id = ? AND tenant_id = ?")
            .bind(id)
            .bind(tenant_id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(api_key_row)
            .transpose()
    }

    async fn api_key_count(&self, tenant_id: Option<&str>, role: Role) -> Result<i64> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n FROM api_keys WHERE ((? IS NULL AND tenant_id IS NULL) OR tenant_id = ?) AND role = ?",
        )
        .bind(tenant_id)
        .bind(tenant_id)
        .bind(role.as_str())
        .fetch_one(&self.pool)
        .await?;
        col(&row, "n")
    }

    async fn api_key_delete(&self, tenant_id: &str, id: &str) -> Result<bool> {
        let r = sqlx::query("DELETE FROM api_keys WHERE id = ? AND tenant_id = ?")
            .bind(id)
            .bind(tenant_id)
            .execute(&self.pool)
            .await?;
        Ok(r.rows_affected() > 0)
    }

    // ---- apps ----

    async fn app_insert(&self, a: &App) -> Result<()> {
        sqlx::query(
            "INSERT INTO apps (id, tenant_id, name, description, endpoints, secret, previous_secret, previous_expires_ms, created_at_ms, updated_at_ms) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&a.id)
        .bind(&a.tenant_id)
        .bind(&a.name)
        .bind(&a.description)
        .bind(to_json(&a.endpoints))
        .bind(&a.secret)
        .bind(&a.previous_secret)
        .bind(a.previous_expires_ms)
        .bind(a.created_at_ms)
        .bind(a.updated_at_ms)
        .execute(&self.pool)
        .await
        .map_err(conflict_on("app_name", format!("an app named `{}` exists in this tenant", a.name)))?;
        Ok(())
    }

    async fn app_get(&self, tenant_id: &str, id_or_name: &str) -> Result<Option<App>> {
        sqlx::query(
            "SELECT id, tenant_id, name, description, endpoints, secret, previous_secret, previous_expires_ms, created_at_ms, updated_at_ms \
             FROM apps WHERE tenant_id = ? AND (id = ? OR name = ?)",
        )
        .bind(tenant_id)
        .bind(id_or_name)
        .bind(id_or_name)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(app_row)
        .transpose()
    }

    async fn app_list(&self, tenant_id: &str, page: &Page) -> Result<Vec<App>> {
        sqlx::query(
            "SELECT id, tenant_id, name, description, endpoints, secret, previous_secret, previous_expires_ms, created_at_ms, updated_at_ms \
             FROM apps WHERE tenant_id = ? AND (? IS NULL OR id > ?) ORDER BY id LIMIT ?",
        )
        .bind(tenant_id)
        .bind(&page.after)
        .bind(&page.after)
        .bind(page.limit)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(app_row)
        .collect()
    }

    async fn app_update(&self, a: &App) -> Result<bool> {
        let r = sqlx::query(
            "UPDATE apps SET description = ?, endpoints = ?, secret = ?, previous_secret = ?, previous_expires_ms = ?, updated_at_ms = ? \
             WHERE id = ? AND tenant_id = ?",
        )
        .bind(&a.description)
        .bind(to_json(&a.endpoints))
        .bind(&a.secret)
        .bind(&a.previous_secret)
        .bind(a.previous_expires_ms)
        .bind(a.updated_at_ms)
        .bind(&a.id)
        .bind(&a.tenant_id)
        .execute(&self.pool)
        .await?;
        Ok(r.rows_affected() > 0)
    }

    async fn app_delete(&self, tenant_id: &str, id: &str) -> Result<bool> {
        let mut tx = self.begin().await?;
        let jobs = sqlx::query("SELECT COUNT(*) AS n FROM jobs WHERE app_id = ? AND tenant_id = ?")
            .bind(id)
            .bind(tenant_id)
            .fetch_one(&mut *tx)
            .await?;
        let n: i64 = col(&jobs, "n")?;
        if n > 0 {
            return Err(StoreError::Conflict {
                what: "app_in_use",
                message: format!("{n} job(s) use this app; delete or move them first"),
            });
        }
        let r = sqlx::query("DELETE FROM apps WHERE id = ? AND tenant_id = ?")
            .bind(id)
            .bind(tenant_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM executors WHERE app_id = ? AND tenant_id = ?")
            .bind(id)
            .bind(tenant_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(r.rows_affected() > 0)
    }

    // ---- jobs ----

    async fn job_insert(&self, j: &Job, children: &[String]) -> Result<()> {
        let mut tx = self.begin().await?;
        check_children(&mut tx, &j.tenant_id, &j.id, children).await?;
        sqlx::query(
            "INSERT INTO jobs (id, tenant_id, app_id, name, description, handler, script_id, schedule_kind, schedule, params, route, \
             block_strategy, misfire, failure, timeout_ms, max_concurrency, state, source, registration_key, version, generated_until_ms, \
             created_at_ms, updated_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&j.id)
        .bind(&j.tenant_id)
        .bind(&j.app_id)
        .bind(&j.name)
        .bind(&j.description)
        .bind(&j.handler)
        .bind(&j.script_id)
        .bind(j.schedule_kind.as_str())
        .bind(to_json(&j.schedule))
        .bind(to_json(&j.params))
        .bind(j.route.as_str())
        .bind(j.block.as_str())
        .bind(to_json(&j.misfire))
        .bind(to_json(&j.failure))
        .bind(j.timeout_ms)
        .bind(j.max_concurrency)
        .bind(j.state.as_str())
        .bind(j.source.as_str())
        .bind(&j.registration_key)
        .bind(j.version)
        .bind(j.generated_until_ms)
        .bind(j.created_at_ms)
        .bind(j.updated_at_ms)
        .execute(&mut *tx)
        .await
        .map_err(conflict_on("job_registration", "a job for this app and handler exists"))?;
        write_children(&mut tx, &j.tenant_id, &j.id, children, j.created_at_ms).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn job_get(&self, tenant_id: &str, id: &str) -> Result<Option<Job>> {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {JOB_COLS} FROM jobs WHERE id = ? AND tenant_id = ?"
        )))
        .bind(id)
        .bind(tenant_id)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(job_row)
        .transpose()
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
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(job_row)
        .collect()
    }

    async fn job_update(
        &self,
        j: &Job,
        children: Option<&[String]>,
        expected_version: i64,
    ) -> Result<bool> {
        let mut tx = self.begin().await?;
        if let Some(children) = children {
            check_children(&mut tx, &j.tenant_id, &j.id, children).await?;
        }
        let r = sqlx::query(
            "UPDATE jobs SET app_id = ?, name = ?, description = ?, handler = ?, script_id = ?, schedule_kind = ?, schedule = ?, \
             params = ?, route = ?, block_strategy = ?, misfire = ?, failure = ?, timeout_ms = ?, max_concurrency = ?, state = ?, \
             version = ?, generated_until_ms = ?, updated_at_ms = ? WHERE id = ? AND tenant_id = ? AND version = ?",
        )
        .bind(&j.app_id)
        .bind(&j.name)
        .bind(&j.description)
        .bind(&j.handler)
        .bind(&j.script_id)
        .bind(j.schedule_kind.as_str())
        .bind(to_json(&j.schedule))
        .bind(to_json(&j.params))
        .bind(j.route.as_str())
        .bind(j.block.as_str())
        .bind(to_json(&j.misfire))
        .bind(to_json(&j.failure))
        .bind(j.timeout_ms)
        .bind(j.max_concurrency)
        .bind(j.state.as_str())
        .bind(j.version)
        .bind(j.generated_until_ms)
        .bind(j.updated_at_ms)
        .bind(&j.id)
        .bind(&j.tenant_id)
        .bind(expected_version)
        .execute(&mut *tx)
        .await?;
        if r.rows_affected() == 0 {
            let exists = sqlx::query("SELECT 1 FROM jobs WHERE id = ? AND tenant_id = ?")
                .bind(&j.id)
                .bind(&j.tenant_id)
                .fetch_optional(&mut *tx)
                .await?
                .is_some();
            return if exists {
                Err(StoreError::Stale("job"))
            } else {
                Ok(false)
            };
        }
        if let Some(children) = children {
            write_children(&mut tx, &j.tenant_id, &j.id, children, j.updated_at_ms).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    async fn job_set_state(
        &self,
        tenant_id: &str,
        id: &str,
        state: JobState,
        now_ms: i64,
    ) -> Result<Option<Job>> {
        let mut tx = self.begin().await?;
        sqlx::query(
            "UPDATE jobs SET state = ?, version = version + 1, updated_at_ms = ? WHERE id = ? AND tenant_id = ? AND state <> ?",
        )
        .bind(state.as_str())
        .bind(now_ms)
        .bind(id)
        .bind(tenant_id)
        .bind(state.as_str())
        .execute(&mut *tx)
        .await?;
        let job = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {JOB_COLS} FROM jobs WHERE id = ? AND tenant_id = ?"
        )))
        .bind(id)
        .bind(tenant_id)
        .fetch_optional(&mut *tx)
        .await?
        .as_ref()
        .map(job_row)
        .transpose()?;
        tx.commit().await?;
        Ok(job)
    }

    async fn job_delete(&self, tenant_id: &str, id: &str) -> Result<bool> {
        let mut tx = self.begin().await?;
        let r = sqlx::query("DELETE FROM jobs WHERE id = ? AND tenant_id = ?")
            .bind(id)
            .bind(tenant_id)
            .execute(&mut *tx)
            .await?;
        if r.rows_affected() > 0 {
            sqlx::query("DELETE FROM job_children WHERE parent_job_id = ? OR child_job_id = ?")
                .bind(id)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            sqlx::query("DELETE FROM runs WHERE job_id = ? AND state IN ('pending', 'queued')")
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(r.rows_affected() > 0)
    }

    async fn job_children(&self, job_id: &str) -> Result<Vec<String>> {
        sqlx::query(
            "SELECT child_job_id FROM job_children WHERE parent_job_id = ? ORDER BY child_job_id",
        )
        .bind(job_id)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(|r| col(r, "child_job_id"))
        .collect()
    }

    // ---- scripts ----

    async fn script_get(&self, tenant_id: &str, id_or_name: &str) -> Result<Option<Script>> {
        let row = sqlx::query(
            "SELECT id, tenant_id, name, runtime, current_version, created_at_ms, updated_at_ms FROM scripts \
             WHERE tenant_id = ? AND (id = ? OR name = ?)",
        )
        .bind(tenant_id)
        .bind(id_or_name)
        .bind(id_or_name)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref()
            .map(|r| {
                Ok(Script {
                    id: col(r, "id")?,
                    tenant_id: col(r, "tenant_id")?,
                    name: col(r, "name")?,
                    runtime: parse_col(r, "runtime")?,
                    current_version: col(r, "current_version")?,
                    created_at_ms: col(r, "created_at_ms")?,
                    updated_at_ms: col(r, "updated_at_ms")?,
                })
            })
            .transpose()
    }

    // ---- runs ----

    async fn run_insert(&self, r: &Run) -> Result<bool> {
        let res = sqlx::query(
            "INSERT INTO runs (id, tenant_id, job_id, fire_key, trigger_kind, scheduled_at_ms, state, attempt, shard_total, params, \
             parent_run_id, parent_output, job_version, owner_node, lease_until_ms, deadline_ms, next_attempt_at_ms, reason, message, \
             output, expired_count, created_at_ms, updated_at_ms, started_at_ms, finished_at_ms) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&r.id)
        .bind(&r.tenant_id)
        .bind(&r.job_id)
        .bind(&r.fire_key)
        .bind(r.trigger.as_str())
        .bind(r.scheduled_at_ms)
        .bind(r.state.as_str())
        .bind(r.attempt)
        .bind(r.shard_total)
        .bind(r.params.as_ref().map(to_json))
        .bind(&r.parent_run_id)
        .bind(r.parent_output.as_ref().map(to_json))
        .bind(r.job_version)
        .bind(&r.owner_node)
        .bind(r.lease_until_ms)
        .bind(r.deadline_ms)
        .bind(r.next_attempt_at_ms)
        .bind(&r.reason)
        .bind(&r.message)
        .bind(r.output.as_ref().map(to_json))
        .bind(r.expired_count)
        .bind(r.created_at_ms)
        .bind(r.updated_at_ms)
        .bind(r.started_at_ms)
        .bind(r.finished_at_ms)
        .execute(&self.pool)
        .await;
        match res {
            Ok(_) => Ok(true),
            Err(sqlx::Error::Database(d)) if d.is_unique_violation() => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    async fn run_get(&self, tenant_id: &str, id: &str) -> Result<Option<Run>> {
        sqlx::query("SELECT * FROM runs WHERE id = ? AND tenant_id = ?")
            .bind(id)
            .bind(tenant_id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(run_row)
            .transpose()
    }

    async fn run_by_fire_key(&self, job_id: &str, fire_key: &str) -> Result<Option<Run>> {
        sqlx::query("SELECT * FROM runs WHERE job_id = ? AND fire_key = ?")
            .bind(job_id)
            .bind(fire_key)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(run_row)
            .transpose()
    }

    async fn run_list(&self, tenant_id: &str, f: &RunFilter, page: &Page) -> Result<Vec<Run>> {
        let (c_ms, c_id) = match page.after.as_deref().and_then(|c| c.split_once(':')) {
            Some((ms, id)) => (ms.parse::<i64>().ok(), Some(id.to_string())),
            None => (None, None),
        };
        let state = f.state.map(|s| s.as_str());
        sqlx::query(
            "SELECT * FROM runs WHERE tenant_id = ? AND (? IS NULL OR job_id = ?) AND (? IS NULL OR state = ?) \
             AND (? IS NULL OR scheduled_at_ms >= ?) AND (? IS NULL OR scheduled_at_ms < ?) \
             AND (? IS NULL OR scheduled_at_ms < ? OR (scheduled_at_ms = ? AND id < ?)) \
             ORDER BY scheduled_at_ms DESC, id DESC LIMIT ?",
        )
        .bind(tenant_id)
        .bind(&f.job_id)
        .bind(&f.job_id)
        .bind(state)
        .bind(state)
        .bind(f.from_ms)
        .bind(f.from_ms)
        .bind(f.to_ms)
        .bind(f.to_ms)
        .bind(c_ms)
        .bind(c_ms)
        .bind(c_ms)
        .bind(&c_id)
        .bind(page.limit)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(run_row)
        .collect()
    }
}
