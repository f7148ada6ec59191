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
use sqlx::{Any, AnyPool, Executor as _, Row, Transaction};
use sundial_core::run_state::{RunEvent, transition};
use sundial_core::types::{BlockStrategy, ExecutorState, JobState, Role, RunState, TriggerKind};

mod batch;

use crate::error::conflict_on;
use crate::{
    ApiKey, App, Attempt, AttemptResult, ClaimParams, Dialect, DispatchDecision, Executor, FinishAttempt,
    FinishOutcome, Job, JobFilter, Node, NodeBeat, Page, PeekParams, Result, Run, RunFilter, RunLog, Script, Store,
    StoreError, Tenant, ToDispatch, migrate,
};
use crate::{FinishShard, RunShard, ShardDelivery, ShardFinishOutcome, ShardFreeze, ShardRetryBegin};

#[path = "shards.rs"]
mod shards;

#[derive(Debug, Clone)]
pub struct ConnectOptions {
    pub url: String,
    pub max_connections: u32,
    /// SQLite only: hold an exclusive lock file beside the database for the life of
    /// the store, refusing a second server on the same file.
    pub lock_sqlite_file: bool,
    /// How long `open`/`migrate` waits for another node's (or process's) migration
    /// before failing with [`StoreError::MigrationLock`].
    pub migrate_lock_wait: Duration,
}

impl ConnectOptions {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            max_connections: 10,
            lock_sqlite_file: true,
            migrate_lock_wait: migrate::DEFAULT_LOCK_WAIT,
        }
    }
}

#[derive(Debug)]
pub struct SqlStore {
    pool: AnyPool,
    dialect: Dialect,
    migrate_lock_wait: Duration,
    _lock: Option<File>,
}

fn sqlite_path(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    Some(rest.split('?').next().unwrap_or(rest))
}

impl SqlStore {
    /// Connect (creating a SQLite file if missing) without migrating.
    pub async fn connect(opts: &ConnectOptions) -> Result<SqlStore> {
        sqlx::any::install_default_drivers();
        if opts.url.starts_with("mysql://") || opts.url.starts_with("mariadb://") {
            let mut url = opts.url.replacen("mariadb://", "mysql://", 1);
            // Every statement of the store fits in the prepared-statement cache (about 100
            // distinct texts exist): an eviction costs a re-prepare, and sqlx's sockets run
            // without TCP_NODELAY, where that round trip was measured to stall ~40 ms.
            if !url.contains("statement-cache-capacity") {
                url.push(if url.contains('?') { '&' } else { '?' });
                url.push_str("statement-cache-capacity=1024");
            }
            let pool = AnyPoolOptions::new()
                .max_connections(opts.max_connections)
                // No ping on every checkout: it was a third of the hot path's round trips
                // (docs/benchmarks.md). A connection that died fails its query, is dropped,
                // and the loops retry with backoff.
                .test_before_acquire(false)
                .acquire_timeout(Duration::from_secs(10))
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        // Strict mode: refuse rather than truncate; UTC only matters for NOW().
                        conn.execute(
                            "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION', time_zone = '+00:00'",
                        )
                        .await?;
                        // READ COMMITTED: locking reads lock the rows they return, not the gaps
                        // and the rows they only scanned (REPEATABLE READ keeps both until commit).
                        // Every locking read here is a point lookup by id or a claim scan whose
                        // rows are re-checked under their lock, so no transaction relies on gap
                        // locks; under REPEATABLE READ the claim's scan (past other nodes' buckets)
                        // held thousands of next-key locks, deadlocking the generator's inserts and
                        // the result writes of deliveries already sent (found by the chaos test).
                        conn.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED").await?;
                        Ok(())
                    })
                })
                .connect(&url)
                .await?;
            return Ok(SqlStore {
                pool,
                dialect: Dialect::MySql,
                migrate_lock_wait: opts.migrate_lock_wait,
                _lock: None,
            });
        }
        let Some(path) = sqlite_path(&opts.url) else {
            return Err(StoreError::BadUrl(opts.url.clone()));
        };
        let memory = path == ":memory:" || path.is_empty();
        let lock = if opts.lock_sqlite_file && !memory {
            if let Some(dir) = std::path::Path::new(path).parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| StoreError::Locked {
                    path: dir.display().to_string(),
                    hint: format!("cannot create the data directory: {e}"),
                })?;
            }
            let lock_path = format!("{path}.lock");
            let f = File::options().create(true).truncate(false).write(true).open(&lock_path).map_err(|e| {
                StoreError::Locked { path: lock_path.clone(), hint: format!("cannot open the lock file: {e}") }
            })?;
            if f.try_lock().is_err() {
                return Err(StoreError::Locked {
                    path: lock_path,
                    hint:
                        "is another `sundial serve` running on this database file? Stop it, or use another --data-dir"
                            .into(),
                });
            }
            Some(f)
        } else {
            None
        };
        let url = if memory { "sqlite::memory:".to_string() } else { format!("sqlite://{path}?mode=rwc") };
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
        Ok(SqlStore { pool, dialect: Dialect::Sqlite, migrate_lock_wait: opts.migrate_lock_wait, _lock: lock })
    }

    /// Connect and apply pending migrations.
    pub async fn open(opts: &ConnectOptions, now_ms: i64) -> Result<SqlStore> {
        let store = Self::connect(opts).await?;
        store.migrate(now_ms).await?;
        Ok(store)
    }

    /// Check the applied migrations and apply the pending ones; returns the versions
    /// applied. Refuses an edited or unknown applied migration (see `migrate.rs`).
    pub async fn migrate(&self, now_ms: i64) -> Result<Vec<i64>> {
        let mut conn = self.pool.acquire().await?;
        migrate::run(&mut conn, self.dialect, now_ms, self.migrate_lock_wait).await
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
    r.try_get(name).map_err(|e| StoreError::Corrupt(format!("column {name}: {e}")))
}

fn parse_col<T: FromStr<Err = String>>(r: &AnyRow, name: &str) -> Result<T> {
    let s: String = col(r, name)?;
    s.parse().map_err(|e| StoreError::Corrupt(format!("column {name}: {e}")))
}

fn json_col<T: serde::de::DeserializeOwned>(r: &AnyRow, name: &str) -> Result<T> {
    let s: String = col(r, name)?;
    serde_json::from_str(&s).map_err(|e| StoreError::Corrupt(format!("column {name}: {e}")))
}

fn json_opt(r: &AnyRow, name: &str) -> Result<Option<Value>> {
    let s: Option<String> = col(r, name)?;
    s.map(|s| serde_json::from_str(&s).map_err(|e| StoreError::Corrupt(format!("column {name}: {e}")))).transpose()
}

fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("domain values serialise")
}

fn tenant_row(r: &AnyRow) -> Result<Tenant> {
    Ok(Tenant { id: col(r, "id")?, name: col(r, "name")?, created_at_ms: col(r, "created_at_ms")? })
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

fn executor_row(r: &AnyRow) -> Result<Executor> {
    Ok(Executor {
        id: col(r, "id")?,
        tenant_id: col(r, "tenant_id")?,
        app_id: col(r, "app_id")?,
        name: col(r, "name")?,
        address: col(r, "address")?,
        tags: json_col(r, "tags")?,
        metadata: json_col(r, "metadata")?,
        handlers: json_col(r, "handlers")?,
        state: parse_col(r, "state")?,
        running: col(r, "running")?,
        registered_at_ms: col(r, "registered_at_ms")?,
        last_heartbeat_ms: col(r, "last_heartbeat_ms")?,
        last_metadata_ms: col(r, "last_metadata_ms")?,
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
    for (i, child) in children.iter().enumerate() {
        let mut stack = vec![child.clone()];
        let mut seen = std::collections::HashSet::new();
        while let Some(n) = stack.pop() {
            if n == parent {
                return Err(StoreError::Refused {
                    field: format!("children[{i}]"),
                    message: format!("job `{child}` already leads back to this job; the chain would be a cycle"),
                });
            }
            if seen.insert(n.clone()) {
                stack.extend(edges.iter().filter(|(p, _)| *p == n).map(|(_, c)| c.clone()));
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
    sqlx::query("DELETE FROM job_children WHERE parent_job_id = ?").bind(parent).execute(&mut **tx).await?;
    for child in children {
        sqlx::query(
            "INSERT INTO job_children (parent_job_id, child_job_id, tenant_id, created_at_ms) VALUES (?, ?, ?, ?)",
        )
        .bind(parent)
        .bind(child)
        .bind(tenant_id)
        .bind(now_ms)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

const CLAIM_UPDATE_SQL: &str = "UPDATE runs SET state = CASE WHEN state = 'pending' THEN 'queued' ELSE state END, owner_node = ?, \
    lease_until_ms = ?, updated_at_ms = ? WHERE id IN (:ids)";

fn refused(e: sundial_core::run_state::Refused) -> StoreError {
    StoreError::Refused { field: "state".into(), message: e.to_string() }
}

fn sha256_hex(s: &str) -> String {
    sundial_core::keys::hash_api_key(s)
}

impl SqlStore {
    /// Row locks for a read-then-write transaction: MySQL needs them; SQLite's
    /// `BEGIN IMMEDIATE` already holds the only write lock.
    /// The database's clock as an SQL expression (UTC epoch milliseconds).
    fn now_expr(&self) -> &'static str {
        match self.dialect {
            Dialect::MySql => "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
            Dialect::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
        }
    }

    /// MySQL: an index hint naming the one index a hot statement uses. MariaDB re-plans a
    /// prepared statement at every execution, and for `id IN (…) AND state IN (…) AND
    /// owner_node = ?` it weighed every index on those columns, with index dives into each
    /// (`test_quick_select` was a sixth of the server's CPU under load).
    fn hint(&self, index: Ix) -> &'static str {
        match (self.dialect, index) {
            (Dialect::Sqlite, _) => "",
            (Dialect::MySql, Ix::Primary) => " FORCE INDEX (PRIMARY)",
            (Dialect::MySql, Ix::RunsJob) => " FORCE INDEX (ix_runs_job)",
        }
    }

    fn lock_clause(&self) -> &'static str {
        match self.dialect {
            Dialect::MySql => " FOR UPDATE",
            Dialect::Sqlite => "",
        }
    }
}

/// Indexes a hot statement names ([`SqlStore::hint`]).
#[derive(Debug, Clone, Copy)]
enum Ix {
    /// By id.
    Primary,
    /// `runs (job_id, state)`.
    RunsJob,
}

/// Insert a run unless its (job, fire key) exists; true if inserted.
async fn insert_run(tx: &mut Transaction<'static, Any>, dialect: Dialect, r: &Run) -> Result<bool> {
    Ok(batch::insert_runs(tx, dialect, std::slice::from_ref(r)).await? > 0)
}

/// Move a run to a terminal state through the state machine, conditional on the
/// state it was read in; the current attempt follows. False if refused or raced.
async fn set_terminal(
    tx: &mut Transaction<'static, Any>,
    run: &Run,
    event: RunEvent,
    message: &str,
    now_ms: i64,
) -> Result<bool> {
    let Ok(t) = transition(run.state, &event) else {
        return Ok(false);
    };
    let r = sqlx::query(
        "UPDATE runs SET state = ?, message = ?, finished_at_ms = ?, updated_at_ms = ?, owner_node = NULL, lease_until_ms = NULL, \
         next_attempt_at_ms = NULL WHERE id = ? AND state = ? AND attempt = ?",
    )
    .bind(t.to.as_str())
    .bind(message)
    .bind(now_ms)
    .bind(now_ms)
    .bind(&run.id)
    .bind(run.state.as_str())
    .bind(run.attempt)
    .execute(&mut **tx)
    .await?;
    if r.rows_affected() == 0 {
        return Ok(false);
    }
    sqlx::query(
        "UPDATE attempts SET state = ?, message = ?, finished_at_ms = ? WHERE run_id = ? AND attempt = ? AND finished_at_ms IS NULL",
    )
    .bind(t.to.as_str())
    .bind(message)
    .bind(now_ms)
    .bind(&run.id)
    .bind(run.attempt)
    .execute(&mut **tx)
    .await?;
    if run.shard_total.is_some() {
        shards::cancel_open(tx, &run.id, message, now_ms).await?;
    }
    Ok(true)
}

/// Return a node's claims: `queued` → `pending`, retrying runs lose their owner, and the
/// leases of its `dispatching` runs end so any node redelivers them. Returns rows changed.
/// A claimed run always holds a lease, so the scans go through `ix_runs_lease` (runs in
/// flight only) rather than an index on the owner that every claim and result would rewrite.
async fn hand_back(tx: &mut Transaction<'static, Any>, id: &str, now_ms: i64) -> Result<u64> {
    let r = sqlx::query(
        "UPDATE runs SET state = CASE WHEN state = 'queued' THEN 'pending' ELSE state END, owner_node = NULL, \
                 lease_until_ms = NULL, updated_at_ms = ? WHERE lease_until_ms IS NOT NULL AND owner_node = ? AND state IN ('queued', 'retrying')",
    )
    .bind(now_ms)
    .bind(id)
    .execute(&mut **tx)
    .await?;
    let d = sqlx::query("UPDATE runs SET lease_until_ms = 0 WHERE lease_until_ms IS NOT NULL AND owner_node = ? AND state = 'dispatching'")
        .bind(id)
        .execute(&mut **tx)
        .await?;
    Ok(r.rows_affected() + d.rows_affected())
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
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {} AS now_ms", self.now_expr())))
            .fetch_one(&self.pool)
            .await?;
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
            .map_err(conflict_on("tenant_name", format!("a tenant named `{}` exists", t.name)))?;
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
        sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {JOB_COLS} FROM jobs WHERE id = ? AND tenant_id = ?")))
            .bind(id)
            .bind(tenant_id)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(job_row)
            .transpose()
    }

    async fn job_get_many(&self, ids: &[String]) -> Result<Vec<Job>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let sql = format!("SELECT {JOB_COLS} FROM jobs WHERE id IN ({})", batch::IDS);
        let mut tx = self.begin().await?;
        let rows = batch::fetch_in_with(&mut tx, &sql, &ids, &[]).await?;
        tx.commit().await?;
        rows.iter().map(job_row).collect()
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

    async fn job_update(&self, j: &Job, children: Option<&[String]>, expected_version: i64) -> Result<bool> {
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
            return if exists { Err(StoreError::Stale("job")) } else { Ok(false) };
        }
        if let Some(children) = children {
            write_children(&mut tx, &j.tenant_id, &j.id, children, j.updated_at_ms).await?;
        }
        // Re-derive the not-yet-dispatched future: generated fires of the old definition
        // go, and the generator regenerates from the new one (no duplicates: the rows are gone).
        sqlx::query(
            "DELETE FROM runs WHERE job_id = ? AND state IN ('pending', 'queued') AND trigger_kind = 'schedule' AND scheduled_at_ms > ?",
        )
        .bind(&j.id)
        .bind(j.updated_at_ms)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn job_set_state(&self, tenant_id: &str, id: &str, state: JobState, now_ms: i64) -> Result<Option<Job>> {
        let mut tx = self.begin().await?;
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
            sqlx::query(
                "DELETE FROM runs WHERE job_id = ? AND state IN ('pending', 'queued') AND trigger_kind = 'schedule'",
            )
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
        sqlx::query("SELECT child_job_id FROM job_children WHERE parent_job_id = ? ORDER BY child_job_id")
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
        let mut tx = self.begin().await?;
        let inserted = insert_run(&mut tx, self.dialect, r).await?;
        tx.commit().await?;
        Ok(inserted)
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

    // ---- scheduling engine ----

    async fn job_due_for_generation(&self, horizon_end_ms: i64, limit: i64) -> Result<Vec<Job>> {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {JOB_COLS} FROM jobs WHERE state = 'active' AND schedule_kind IN ('cron', 'fixed_rate', 'once') \
             AND (generated_until_ms IS NULL OR generated_until_ms < ?) ORDER BY generated_until_ms LIMIT ?"
        )))
        .bind(horizon_end_ms)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(job_row)
        .collect()
    }

    async fn run_generate_many(&self, batch: &[crate::GenerateJob]) -> Result<Vec<Option<usize>>> {
        self.generate_many(batch).await
    }

    async fn run_claim(&self, p: &ClaimParams) -> Result<Vec<Run>> {
        // Nodes claiming at once skip each other's locked rows instead of waiting.
        let lock = match self.dialect {
            Dialect::MySql => " FOR UPDATE SKIP LOCKED",
            Dialect::Sqlite => "",
        };
        let mut tx = self.begin().await?;
        // Triggered runs (manual, API, a parent's children) go to whichever node claims first: the one
        // that took the request is woken at once. Job affinity: a schedule fire is ours at once
        // if its bucket is in our mask (unless our peek reads those), anyone's once overdue
        // past the grace. Each scan reads its own trigger kinds of `ix_runs_pending_kind`
        // only, never the schedule fires the peek hands to dispatch. One bind for the mask
        // keeps the text constant.
        // Like the orphans below, found by plain reads and locked by id (still `pending`), so
        // that no locking range scan holds the entry past its end: the next schedule fire to be
        // dispatched. Kinds listed, not `<> 'schedule'`: each is a bounded range of the index.
        let triggered_sql = "SELECT id FROM runs WHERE trigger_kind IN ('manual', 'api', 'parent', 'misfire') \
             AND pending_at_ms <= ? ORDER BY pending_at_ms LIMIT ?";
        let schedule_sql = "SELECT id FROM runs WHERE trigger_kind = 'schedule' AND pending_at_ms <= ? \
             AND pending_at_ms <= CASE WHEN ((? >> bucket) & 1) = 1 THEN ? ELSE ? END ORDER BY pending_at_ms LIMIT ?";
        let lock_pending_sql = format!(
            "SELECT * FROM runs{} WHERE id IN ({}) AND state = 'pending'{lock}",
            self.hint(Ix::Primary),
            batch::IDS
        );
        let mask = p.owned_buckets as i64;
        // Pending fires of our own buckets that the peek reads are claimed only as a backstop.
        let own_due = p.own_fires_due_before_ms.unwrap_or(p.due_before_ms);
        let mut claimed: Vec<Run> = Vec::new();
        {
            // Recovery: claims whose lease ran out (their node died or lost the database).
            // A `queued` run goes back through the misfire policy; a `dispatching` one is
            // redelivered as the same attempt with the same webhook-id.
            // Found by a plain read, then locked by id with the condition checked again: a
            // locking range scan of `ix_runs_lease` also locks the first entry past its end,
            // the lease of the run claimed longest ago, which is the next to be dispatched;
            // every dispatch of it then waited for this claim's commit.
            let candidates: Vec<String> = sqlx::query(
                "SELECT id FROM runs WHERE state IN ('queued', 'dispatching') AND lease_until_ms < ? LIMIT ?",
            )
            .bind(p.now_ms)
            .bind(p.limit)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| col::<String>(r, "id"))
            .collect::<Result<_>>()?;
            let orphan_sql = format!(
                "SELECT * FROM runs{} WHERE id IN ({}) AND state IN ('queued', 'dispatching') AND lease_until_ms < ?{lock}",
                self.hint(Ix::Primary),
                batch::IDS
            );
            let ids: Vec<&str> = candidates.iter().map(String::as_str).collect();
            let orphans: Vec<Run> = batch::fetch_in_with(&mut tx, &orphan_sql, &ids, &[p.now_ms])
                .await?
                .iter()
                .map(run_row)
                .collect::<Result<_>>()?;
            if !orphans.is_empty() {
                tracing::warn!(runs = orphans.len(), node_id = %p.node_id, "recovering runs whose claim expired");
            }
            claimed.extend(orphans);
        }
        let room = p.limit - claimed.len() as i64;
        if room > 0 {
            let ids: Vec<String> = sqlx::query(triggered_sql)
                .bind(p.due_before_ms)
                .bind(room)
                .fetch_all(&mut *tx)
                .await?
                .iter()
                .map(|r| col::<String>(r, "id"))
                .collect::<Result<_>>()?;
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            for row in batch::fetch_in_with(&mut tx, &lock_pending_sql, &ids, &[]).await? {
                claimed.push(run_row(&row)?);
            }
        }
        let room = p.limit - claimed.len() as i64;
        if room > 0 && p.include_schedule {
            // Left to the peek, our own fires are scanned only up to the backstop's instant. A
            // node that owns every bucket scans no further: past that instant every row would be
            // read and filtered out, and while a node is behind (own backstop a lease back) that
            // was every fire of the last half minute, on each claim round.
            let scan_to = if p.owned_buckets == sundial_core::affinity::ALL_BUCKETS {
                own_due
            } else {
                own_due.max(p.foreign_due_before_ms)
            };
            let ids: Vec<String> = sqlx::query(schedule_sql)
                .bind(scan_to)
                .bind(mask)
                .bind(own_due)
                .bind(p.foreign_due_before_ms)
                .bind(room)
                .fetch_all(&mut *tx)
                .await?
                .iter()
                .map(|r| col::<String>(r, "id"))
                .collect::<Result<_>>()?;
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            for row in batch::fetch_in_with(&mut tx, &lock_pending_sql, &ids, &[]).await? {
                claimed.push(run_row(&row)?);
            }
        }
        let room = p.limit - claimed.len() as i64;
        if room > 0 {
            let retry_sql = format!(
                "SELECT * FROM runs WHERE state = 'retrying' AND next_attempt_at_ms <= ? \
                 AND (owner_node IS NULL OR lease_until_ms < ?) \
                 AND (owner_node IS NOT NULL OR trigger_kind <> 'schedule' OR next_attempt_at_ms <= ? OR ((? >> bucket) & 1) = 1) \
                 ORDER BY next_attempt_at_ms LIMIT ?{lock}"
            );
            let retrying: Vec<Run> = sqlx::query(sqlx::AssertSqlSafe(retry_sql))
                .bind(p.due_before_ms)
                .bind(p.now_ms)
                .bind(p.foreign_due_before_ms)
                .bind(mask)
                .bind(room)
                .fetch_all(&mut *tx)
                .await?
                .iter()
                .map(run_row)
                .collect::<Result<_>>()?;
            claimed.extend(retrying);
        }
        // Few statement texts: ids go in chunks, each list sized to a power of two (`batch::in_list`).
        for chunk in claimed.chunks(batch::IN_CHUNK) {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(batch::in_list(CLAIM_UPDATE_SQL, chunk.len())))
                .bind(&p.node_id)
                .bind(p.lease_until_ms)
                .bind(p.now_ms);
            for i in 0..batch::in_width(chunk.len()) {
                q = q.bind(&chunk[i.min(chunk.len() - 1)].id);
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        for r in &mut claimed {
            if r.state == RunState::Pending {
                r.state = transition(r.state, &RunEvent::Claim).map_err(refused)?.to;
            }
            r.owner_node = Some(p.node_id.clone());
            r.lease_until_ms = Some(p.lease_until_ms);
            r.updated_at_ms = p.now_ms;
        }
        Ok(claimed)
    }

    async fn run_peek(&self, p: &PeekParams) -> Result<Vec<Run>> {
        // (pending_at_ms, id) > cursor, in the order of `ix_runs_pending_kind` (whose entries
        // carry the primary key): a range scan that starts where the last one stopped.
        sqlx::query(
            "SELECT * FROM runs WHERE trigger_kind = 'schedule' AND pending_at_ms >= ? AND pending_at_ms <= ? \
             AND (pending_at_ms > ? OR id > ?) AND ((? >> bucket) & 1) = 1 ORDER BY pending_at_ms, id LIMIT ?",
        )
        .bind(p.after_ms)
        .bind(p.due_before_ms)
        .bind(p.after_ms)
        .bind(&p.after_id)
        .bind(p.owned_buckets as i64)
        .bind(p.limit)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(run_row)
        .collect()
    }

    async fn run_expire_many(&self, run_ids: &[String], node_id: &str, message: &str, now_ms: i64) -> Result<u64> {
        let to = transition(RunState::Queued, &RunEvent::Expire).map_err(refused)?.to;
        debug_assert!(transition(RunState::Pending, &RunEvent::Expire).is_ok_and(|t| t.to == to));
        let sql = format!(
            "UPDATE runs{} SET state = ?, message = ?, finished_at_ms = ?, updated_at_ms = ?, owner_node = NULL, \
             lease_until_ms = NULL WHERE id IN ({}) AND (state = 'pending' OR (state = 'queued' AND owner_node = ?))",
            self.hint(Ix::Primary),
            batch::IDS
        );
        let mut n = 0;
        for chunk in run_ids.chunks(batch::IN_CHUNK) {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(batch::in_list(&sql, chunk.len())))
                .bind(to.as_str())
                .bind(message)
                .bind(now_ms)
                .bind(now_ms);
            for i in 0..batch::in_width(chunk.len()) {
                q = q.bind(&chunk[i.min(chunk.len() - 1)]);
            }
            n += q.bind(node_id).execute(&self.pool).await?.rows_affected();
        }
        Ok(n)
    }

    async fn run_later_fires(&self, fires: &[(String, i64)], before_ms: i64) -> Result<Vec<String>> {
        // The job's schedule fires after the earliest asked-about instant, found through
        // `uq_runs_fire` (job, fire key): `s:<ms>` keys of 13 digits (2001-09-09 to 2286)
        // sort as their instants do, so the scan reads only fires from that instant on, not
        // the job's whole history (which a range on `ix_runs_job (job_id, state)` walked).
        // The instant is checked again as a number, so the key order is only the access path.
        let Some(from) = fires.iter().map(|(_, at)| *at).min() else { return Ok(Vec::new()) };
        let mut jobs: Vec<&str> = fires.iter().map(|(j, _)| j.as_str()).collect();
        jobs.sort_unstable();
        jobs.dedup();
        let sql = format!(
            "SELECT job_id, scheduled_at_ms FROM runs WHERE job_id IN ({}) AND fire_key > ? AND fire_key < 's;' \
             AND trigger_kind = 'schedule' AND scheduled_at_ms > ? \
             AND (state IN ('dispatching', 'running', 'retrying', 'succeeded', 'failed') \
                  OR (state IN ('pending', 'queued') AND scheduled_at_ms < ?))",
            batch::IDS
        );
        let mut latest: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
        let mut tx = self.begin().await?;
        for chunk in jobs.chunks(batch::IN_CHUNK) {
            let mut q = sqlx::query(sqlx::AssertSqlSafe(batch::in_list(&sql, chunk.len())));
            for i in 0..batch::in_width(chunk.len()) {
                q = q.bind(chunk[i.min(chunk.len() - 1)]);
            }
            let rows = q.bind(format!("s:{from}")).bind(from).bind(before_ms).fetch_all(&mut *tx).await?;
            for r in &rows {
                let at: i64 = col(r, "scheduled_at_ms")?;
                let e = latest.entry(col(r, "job_id")?).or_insert(at);
                *e = (*e).max(at);
            }
        }
        tx.commit().await?;
        let mut out: Vec<String> = fires
            .iter()
            .filter(|(job, at)| latest.get(job).is_some_and(|l| l > at))
            .map(|(job, _)| job.clone())
            .collect();
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    async fn run_release(&self, node_id: &str, run_ids: &[String], now_ms: i64) -> Result<u64> {
        let mut n = 0;
        let mut tx = self.begin().await?;
        for id in run_ids {
            let r = sqlx::query(
                "UPDATE runs SET state = CASE WHEN state = 'queued' THEN 'pending' ELSE state END, owner_node = NULL, \
                 lease_until_ms = NULL, updated_at_ms = ? WHERE id = ? AND owner_node = ? AND state IN ('queued', 'retrying')",
            )
            .bind(now_ms)
            .bind(id)
            .bind(node_id)
            .execute(&mut *tx)
            .await?;
            n += r.rows_affected();
        }
        tx.commit().await?;
        Ok(n)
    }

    async fn run_dispatch_many(
        &self,
        runs: &[ToDispatch],
        node_id: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Vec<(String, DispatchDecision)>> {
        self.dispatch_many(runs, node_id, now_ms, lease_ms).await
    }

    async fn attempt_set_target(
        &self,
        run_id: &str,
        attempt: i64,
        executor_id: Option<&str>,
        address: Option<&str>,
        trail: &Value,
    ) -> Result<()> {
        sqlx::query("UPDATE attempts SET executor_id = ?, address = ?, trail = ? WHERE run_id = ? AND shard_index = 0 AND attempt = ?")
            .bind(executor_id)
            .bind(address)
            .bind(to_json(trail))
            .bind(run_id)
            .bind(attempt)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn run_mark_running(&self, run_id: &str, attempt: i64, now_ms: i64) -> Result<bool> {
        let to = transition(RunState::Dispatching, &RunEvent::Accepted).map_err(refused)?.to;
        let mut tx = self.begin().await?;
        let r = sqlx::query(
            "UPDATE runs SET state = ?, updated_at_ms = ? WHERE id = ? AND state = 'dispatching' AND attempt = ?",
        )
        .bind(to.as_str())
        .bind(now_ms)
        .bind(run_id)
        .bind(attempt)
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE attempts SET state = 'running' WHERE run_id = ? AND shard_index = 0 AND attempt = ? AND state = 'dispatching'")
            .bind(run_id)
            .bind(attempt)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(r.rows_affected() > 0)
    }

    async fn run_extend_dispatch(&self, run_ids: &[String], node_id: &str, by_ms: i64) -> Result<u64> {
        self.extend_dispatch(run_ids, node_id, by_ms).await
    }

    async fn run_finish_many(&self, ps: &[FinishAttempt]) -> Result<Vec<FinishOutcome>> {
        self.finish_many(ps).await
    }

    async fn run_cancel(&self, tenant_id: &str, run_id: &str, message: &str, now_ms: i64) -> Result<Option<Run>> {
        let lock = self.lock_clause();
        let mut tx = self.begin().await?;
        let Some(run) =
            sqlx::query(sqlx::AssertSqlSafe(format!("SELECT * FROM runs WHERE id = ? AND tenant_id = ?{lock}")))
                .bind(run_id)
                .bind(tenant_id)
                .fetch_optional(&mut *tx)
                .await?
                .as_ref()
                .map(run_row)
                .transpose()?
        else {
            return Ok(None);
        };
        let done = set_terminal(&mut tx, &run, RunEvent::Cancel, message, now_ms).await?;
        tx.commit().await?;
        Ok(done.then_some(run))
    }

    async fn run_retry_now(&self, tenant_id: &str, run_id: &str, now_ms: i64) -> Result<bool> {
        let mut tx = self.begin().await?;
        let r = sqlx::query(
            "UPDATE runs SET next_attempt_at_ms = ?, owner_node = NULL, lease_until_ms = NULL, updated_at_ms = ? \
             WHERE id = ? AND tenant_id = ? AND state = 'retrying'",
        )
        .bind(now_ms)
        .bind(now_ms)
        .bind(run_id)
        .bind(tenant_id)
        .execute(&mut *tx)
        .await?;
        let mut done = r.rows_affected() > 0;
        if !done {
            // A sharded run stays `running` while a shard waits out its backoff: those shards go now.
            done = shards::retry_now(&mut tx, tenant_id, run_id, now_ms).await? > 0;
        }
        tx.commit().await?;
        Ok(done)
    }

    async fn run_overdue(&self, now_ms: i64, limit: i64) -> Result<Vec<Run>> {
        sqlx::query("SELECT * FROM runs WHERE running_deadline_ms < ? AND shard_total IS NULL ORDER BY running_deadline_ms LIMIT ?")
            .bind(now_ms)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(run_row)
            .collect()
    }

    async fn run_on_silent_executors(&self, silent_before_ms: i64, limit: i64) -> Result<Vec<Run>> {
        sqlx::query(
            "SELECT r.* FROM runs r \
             JOIN attempts a ON a.run_id = r.id AND a.shard_index = 0 AND a.attempt = r.attempt \
             JOIN executors e ON e.id = a.executor_id \
             WHERE r.running_deadline_ms IS NOT NULL AND r.shard_total IS NULL AND e.last_heartbeat_ms < ? LIMIT ?",
        )
        .bind(silent_before_ms)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?
        .iter()
        .map(run_row)
        .collect()
    }

    async fn run_attempts(&self, run_id: &str) -> Result<Vec<Attempt>> {
        sqlx::query("SELECT * FROM attempts WHERE run_id = ? ORDER BY shard_index, attempt")
            .bind(run_id)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| {
                Ok(Attempt {
                    run_id: col(r, "run_id")?,
                    shard_index: col(r, "shard_index")?,
                    attempt: col(r, "attempt")?,
                    webhook_id: col(r, "webhook_id")?,
                    executor_id: col(r, "executor_id")?,
                    address: col(r, "address")?,
                    state: col(r, "state")?,
                    reason: col(r, "reason")?,
                    message: col(r, "message")?,
                    trail: json_col(r, "trail")?,
                    output: json_opt(r, "output")?,
                    started_at_ms: col(r, "started_at_ms")?,
                    finished_at_ms: col(r, "finished_at_ms")?,
                })
            })
            .collect()
    }

    async fn run_log_append(&self, run_id: &str, attempt: i64, lines: &[(i64, String, String)]) -> Result<()> {
        shards::log_append(self, run_id, 0, attempt, lines).await
    }

    async fn run_logs(&self, run_id: &str, limit: i64) -> Result<Vec<RunLog>> {
        sqlx::query("SELECT * FROM run_logs WHERE run_id = ? ORDER BY id LIMIT ?")
            .bind(run_id)
            .bind(limit)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| {
                Ok(RunLog {
                    id: col(r, "id")?,
                    run_id: col(r, "run_id")?,
                    shard_index: col(r, "shard_index")?,
                    attempt: col(r, "attempt")?,
                    at_ms: col(r, "at_ms")?,
                    level: col(r, "level")?,
                    message: col(r, "message")?,
                })
            })
            .collect()
    }

    async fn app_by_id(&self, id: &str) -> Result<Option<App>> {
        sqlx::query(
            "SELECT id, tenant_id, name, description, endpoints, secret, previous_secret, previous_expires_ms, created_at_ms, updated_at_ms \
             FROM apps WHERE id = ?",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?
        .as_ref()
        .map(app_row)
        .transpose()
    }

    async fn executor_upsert(&self, e: &Executor) -> Result<Executor> {
        let address_hash = sha256_hex(&e.address);
        let mut tx = self.begin().await?;
        let existing: Option<String> = sqlx::query("SELECT id FROM executors WHERE app_id = ? AND address_hash = ?")
            .bind(&e.app_id)
            .bind(&address_hash)
            .fetch_optional(&mut *tx)
            .await?
            .as_ref()
            .map(|r| col(r, "id"))
            .transpose()?;
        let id = match existing {
            Some(id) => {
                sqlx::query(
                    "UPDATE executors SET name = ?, tags = ?, metadata = ?, handlers = ?, state = ?, running = ?, registered_at_ms = ?, \
                     last_heartbeat_ms = ?, last_metadata_ms = ? WHERE id = ?",
                )
                .bind(&e.name)
                .bind(to_json(&e.tags))
                .bind(to_json(&e.metadata))
                .bind(to_json(&e.handlers))
                .bind(e.state.as_str())
                .bind(e.running)
                .bind(e.registered_at_ms)
                .bind(e.last_heartbeat_ms)
                .bind(e.last_metadata_ms)
                .bind(&id)
                .execute(&mut *tx)
                .await?;
                id
            }
            None => {
                sqlx::query(
                    "INSERT INTO executors (id, tenant_id, app_id, name, address, address_hash, tags, metadata, handlers, state, running, \
                     registered_at_ms, last_heartbeat_ms, last_metadata_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                )
                .bind(&e.id)
                .bind(&e.tenant_id)
                .bind(&e.app_id)
                .bind(&e.name)
                .bind(&e.address)
                .bind(&address_hash)
                .bind(to_json(&e.tags))
                .bind(to_json(&e.metadata))
                .bind(to_json(&e.handlers))
                .bind(e.state.as_str())
                .bind(e.running)
                .bind(e.registered_at_ms)
                .bind(e.last_heartbeat_ms)
                .bind(e.last_metadata_ms)
                .execute(&mut *tx)
                .await?;
                e.id.clone()
            }
        };
        tx.commit().await?;
        Ok(Executor { id, ..e.clone() })
    }

    async fn executor_heartbeat(
        &self,
        app_id: &str,
        executor_id: &str,
        running: i64,
        running_runs: Option<&[String]>,
        metadata: Option<&Value>,
        now_ms: i64,
    ) -> Result<bool> {
        let r = sqlx::query(
            "UPDATE executors SET state = 'online', running = ?, running_runs = ?, last_heartbeat_ms = ?, \
             metadata = COALESCE(?, metadata), last_metadata_ms = CASE WHEN ? IS NULL THEN last_metadata_ms ELSE ? END \
             WHERE id = ? AND app_id = ?",
        )
        .bind(running)
        .bind(running_runs.map(|r| to_json(&r)))
        .bind(now_ms)
        .bind(metadata.map(to_json))
        .bind(metadata.map(|_| now_ms))
        .bind(now_ms)
        .bind(executor_id)
        .bind(app_id)
        .execute(&self.pool)
        .await?;
        Ok(r.rows_affected() > 0)
    }

    async fn executor_set_state(
        &self,
        app_id: &str,
        executor_id: &str,
        state: ExecutorState,
        _now_ms: i64,
    ) -> Result<bool> {
        let r = sqlx::query("UPDATE executors SET state = ? WHERE id = ? AND app_id = ?")
            .bind(state.as_str())
            .bind(executor_id)
            .bind(app_id)
            .execute(&self.pool)
            .await?;
        Ok(r.rows_affected() > 0)
    }

    async fn executor_list(&self, app_id: &str) -> Result<Vec<Executor>> {
        sqlx::query("SELECT * FROM executors WHERE app_id = ? ORDER BY registered_at_ms, id")
            .bind(app_id)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(executor_row)
            .collect()
    }

    async fn job_insert_if_absent(&self, job: &Job) -> Result<bool> {
        match self.job_insert(job, &[]).await {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict { what: "job_registration", .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn webhook_seen(&self, app_id: &str, webhook_id: &str, now_ms: i64) -> Result<bool> {
        let r = sqlx::query("INSERT INTO seen_webhooks (app_id, webhook_id, seen_at_ms) VALUES (?, ?, ?)")
            .bind(app_id)
            .bind(webhook_id)
            .bind(now_ms)
            .execute(&self.pool)
            .await;
        match r {
            Ok(_) => Ok(true),
            Err(sqlx::Error::Database(d)) if d.is_unique_violation() => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    async fn webhook_forget(&self, before_ms: i64) -> Result<u64> {
        let r =
            sqlx::query("DELETE FROM seen_webhooks WHERE seen_at_ms < ?").bind(before_ms).execute(&self.pool).await?;
        Ok(r.rows_affected())
    }

    async fn node_heartbeat(&self, b: &NodeBeat) -> Result<()> {
        let now = self.now_expr();
        let updated = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE nodes SET address = ?, version = ?, state = 'alive', claimed = ?, lateness_ms = ?, backlog = ?, \
             misfired = ?, heartbeat_at_ms = {now} WHERE id = ?"
        )))
        .bind(&b.address)
        .bind(&b.version)
        .bind(b.claimed)
        .bind(b.lateness_ms)
        .bind(b.backlog)
        .bind(b.misfired)
        .bind(&b.id)
        .execute(&self.pool)
        .await?;
        if updated.rows_affected() == 0 {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "INSERT INTO nodes (id, address, version, state, claimed, lateness_ms, backlog, misfired, started_at_ms, \
                 heartbeat_at_ms) VALUES (?, ?, ?, 'alive', ?, ?, ?, ?, ?, {now})"
            )))
            .bind(&b.id)
            .bind(&b.address)
            .bind(&b.version)
            .bind(b.claimed)
            .bind(b.lateness_ms)
            .bind(b.backlog)
            .bind(b.misfired)
            .bind(b.started_at_ms)
            .execute(&self.pool)
            .await
            .map_err(conflict_on("node_id", format!("node id `{}` is in use", b.id)))?;
        }
        Ok(())
    }

    async fn node_leave(&self, id: &str) -> Result<()> {
        sqlx::query("UPDATE nodes SET state = 'left' WHERE id = ?").bind(id).execute(&self.pool).await?;
        Ok(())
    }

    async fn node_list(&self) -> Result<Vec<Node>> {
        sqlx::query("SELECT * FROM nodes ORDER BY started_at_ms, id")
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| {
                Ok(Node {
                    id: col(r, "id")?,
                    address: col(r, "address")?,
                    version: col(r, "version")?,
                    state: col(r, "state")?,
                    claimed: col(r, "claimed")?,
                    started_at_ms: col(r, "started_at_ms")?,
                    heartbeat_at_ms: col(r, "heartbeat_at_ms")?,
                    lateness_ms: col(r, "lateness_ms")?,
                    backlog: col(r, "backlog")?,
                    misfired: col(r, "misfired")?,
                })
            })
            .collect()
    }

    async fn node_live_ids(&self, alive_since_ms: i64) -> Result<Vec<String>> {
        sqlx::query("SELECT id FROM nodes WHERE state = 'alive' AND heartbeat_at_ms >= ? ORDER BY id")
            .bind(alive_since_ms)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| col(r, "id"))
            .collect()
    }

    async fn node_reap_dead(&self, dead_before_ms: i64, now_ms: i64) -> Result<Vec<String>> {
        let mut tx = self.begin().await?;
        let dead: Vec<String> = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT id FROM nodes WHERE state = 'alive' AND heartbeat_at_ms < ?{}",
            self.lock_clause()
        )))
        .bind(dead_before_ms)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| col(r, "id"))
        .collect::<Result<_>>()?;
        for id in &dead {
            hand_back(&mut tx, id, now_ms).await?;
            sqlx::query("UPDATE nodes SET state = 'dead' WHERE id = ?").bind(id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(dead)
    }

    async fn node_recover_own(&self, id: &str, now_ms: i64) -> Result<u64> {
        let mut tx = self.begin().await?;
        let n = hand_back(&mut tx, id, now_ms).await?;
        tx.commit().await?;
        Ok(n)
    }

    async fn retention_cleanup(&self, before_ms: i64, batch: i64) -> Result<u64> {
        let mut tx = self.begin().await?;
        let ids: Vec<String> = sqlx::query(
            "SELECT id FROM runs WHERE scheduled_at_ms < ? AND state IN ('succeeded', 'failed', 'cancelled', 'expired', 'skipped') \
             AND finished_at_ms IS NOT NULL AND finished_at_ms < ? LIMIT ?",
        )
        .bind(before_ms)
        .bind(before_ms)
        .bind(batch)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| col(r, "id"))
        .collect::<Result<_>>()?;
        for id in &ids {
            for sql in [
                "DELETE FROM run_logs WHERE run_id = ?",
                "DELETE FROM attempts WHERE run_id = ?",
                "DELETE FROM run_shards WHERE run_id = ?",
                "DELETE FROM runs WHERE id = ?",
            ] {
                sqlx::query(sql).bind(id).execute(&mut *tx).await?;
            }
        }
        sqlx::query("DELETE FROM executors WHERE last_heartbeat_ms < ?").bind(before_ms).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM nodes WHERE state <> 'alive' AND heartbeat_at_ms < ?")
            .bind(before_ms)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(ids.len() as u64)
    }

    async fn setting_get(&self, name: &str) -> Result<Option<String>> {
        sqlx::query("SELECT value FROM settings WHERE name = ?")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(|r| col(r, "value"))
            .transpose()
    }

    async fn setting_set(&self, name: &str, value: &str, now_ms: i64) -> Result<()> {
        let mut tx = self.begin().await?;
        sqlx::query("DELETE FROM settings WHERE name = ?").bind(name).execute(&mut *tx).await?;
        sqlx::query("INSERT INTO settings (name, value, updated_at_ms) VALUES (?, ?, ?)")
            .bind(name)
            .bind(value)
            .bind(now_ms)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    // ---- shards (SQL in shards.rs) ----

    async fn shard_freeze(&self, p: &ShardFreeze) -> Result<Option<Vec<ShardDelivery>>> {
        shards::freeze(self, p).await
    }
    async fn shard_list(&self, run_id: &str) -> Result<Vec<RunShard>> {
        shards::list(self, run_id).await
    }
    async fn shard_mark_running(&self, run_id: &str, shard_index: i64, attempt: i64, now_ms: i64) -> Result<bool> {
        shards::mark_running(self, run_id, shard_index, attempt, now_ms).await
    }
    async fn shard_attempt_set_target(
        &self,
        run_id: &str,
        shard_index: i64,
        attempt: i64,
        executor_id: Option<&str>,
        address: Option<&str>,
        trail: &Value,
    ) -> Result<()> {
        shards::set_target(self, run_id, shard_index, attempt, executor_id, address, trail).await
    }
    async fn shard_finish(&self, p: &FinishShard) -> Result<ShardFinishOutcome> {
        shards::finish(self, p).await
    }
    async fn shard_run_delivered(&self, run_id: &str, run_attempt: i64, now_ms: i64) -> Result<bool> {
        shards::run_delivered(self, run_id, run_attempt, now_ms).await
    }
    async fn shard_due_retries(&self, now_ms: i64, limit: i64) -> Result<Vec<(Run, RunShard)>> {
        shards::due_retries(self, now_ms, limit).await
    }
    async fn shard_retry_begin(&self, p: &ShardRetryBegin) -> Result<Option<ShardDelivery>> {
        shards::retry_begin(self, p).await
    }
    async fn shard_overdue(&self, before_ms: i64, limit: i64) -> Result<Vec<(Run, RunShard)>> {
        shards::overdue(self, before_ms, limit).await
    }
    async fn shard_on_silent_executors(&self, silent_before_ms: i64, limit: i64) -> Result<Vec<(Run, RunShard)>> {
        shards::on_silent_executors(self, silent_before_ms, limit).await
    }
    async fn shard_log_append(
        &self,
        run_id: &str,
        shard_index: i64,
        attempt: i64,
        lines: &[(i64, String, String)],
    ) -> Result<()> {
        shards::log_append(self, run_id, shard_index, attempt, lines).await
    }
}
