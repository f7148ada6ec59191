//! [`SqlStore`]: the [`Store`](crate::Store) implementation for MySQL/MariaDB and SQLite.
//!
//! Statement text is constant for every call of a method (optional filters are
//! `(? IS NULL OR col = ?)`), so sqlx's prepared-statement cache never churns.
//!
//! One module per aggregate, each holding its SQL beside the trait methods that use it:
//! `tenants` (tenants, API keys), `apps` (apps, executors), `jobs` (jobs, child edges,
//! the generation cursor, scripts), `runs` (runs, attempts, logs; the hot-path batches in
//! `runs/batch`), `shards`, `nodes` (nodes, hand-back, settings), `seen` (seen webhook
//! ids) and `retention`. This file: the connection set-up per dialect, the row-decoding
//! and id-list helpers they share, and [`DbStore`]. What several modules share beyond
//! that is in modules of its own that import only this file: `rows` (run, job and executor
//! rows), `writes` (inserting runs, ending a run, log lines) and `jobs_seen` (the dispatch's
//! job cache). The modules import each other without a cycle (`sundial/tests/invariants.rs`).
//!
//! Id lists stay few texts whatever the batch size (sqlx's prepared-statement cache must
//! not churn, see `connect`): id lists go in chunks of at most [`IN_CHUNK`], each list a
//! power of two long (1, 2, 4 … 128 placeholders, padded with the chunk's last id), and
//! multi-row inserts in power-of-two sizes up to [`INSERT_CHUNK`]. Sized lists rather than
//! lists always padded to 32: MariaDB builds a range for every list item before merging
//! the repeats, and small batches paid for 32.

use std::fs::File;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use sqlx::ConnectOptions as _;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::{Any, AnyPool, Executor as _, Row, Transaction};
use sundial_core::run_state::{RunEvent, transition};
use sundial_core::types::RunState;

use crate::{DbStore, Dialect, KeyRing, RekeyReport, Result, StoreError, migrate};

mod apps;
mod chains;
mod jobs;
mod jobs_seen;
mod nodes;
mod quotas;
mod retention;
mod rows;
mod runs;
mod scripts;
mod seen;
mod shards;
mod tenants;
mod writes;

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
    /// The keys app secrets are sealed with at rest (see `secrets.rs`). `None` stores them
    /// as given and refuses sealed ones: for tools that never read apps (`sundial migrate`);
    /// `sundial serve` always gives keys.
    pub secret_keys: Option<KeyRing>,
    /// Statements slower than this are logged at WARN with their text and time; `None`: off.
    pub slow_statement: Option<Duration>,
}

impl ConnectOptions {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            max_connections: 10,
            lock_sqlite_file: true,
            migrate_lock_wait: migrate::DEFAULT_LOCK_WAIT,
            secret_keys: None,
            slow_statement: Some(Duration::from_secs(1)),
        }
    }
}

#[derive(Debug)]
pub struct SqlStore {
    /// Every write, and every read of a transaction. SQLite: the one writer connection.
    pool: AnyPool,
    /// SQLite (a file): connections that only read, beside the writer (WAL lets them read
    /// while it writes). Reads outside transactions go here ([`SqlStore::reader`]), so the one
    /// writer connection is not held by the API's lists, the claim's peeks or the engine's
    /// job scans while dispatches wait for it. `None`: reads share `pool` (MySQL, in-memory).
    read_pool: Option<AnyPool>,
    dialect: Dialect,
    /// Jobs as the dispatch transactions last read them (see `runs/batch.rs`, `lock_jobs`).
    jobs_seen: jobs_seen::JobsSeen,
    migrate_lock_wait: Duration,
    /// Seals and opens app secrets (`sql/apps.rs`).
    secrets: Option<KeyRing>,
    /// Tenants whose `tenant_job_counts` row this store has made sure of (`sql/quotas.rs`).
    counted_tenants: std::sync::Mutex<std::collections::HashSet<String>>,
    _lock: Option<File>,
}

/// SQLite connections that only read, beside the one writer.
const SQLITE_READERS: u32 = 2;

/// Settings of every SQLite connection, the writer's and the readers'.
async fn sqlite_session(conn: &mut sqlx::AnyConnection) -> std::result::Result<(), sqlx::Error> {
    conn.execute("PRAGMA busy_timeout = 5000").await?;
    // The default page cache (2 MiB) holds a small part of a busy node's runs: id lookups
    // then read their pages through system calls. 64 MiB of cache per connection, and
    // reads through a memory map of up to 256 MiB (address space, not memory).
    conn.execute("PRAGMA cache_size = -65536").await?;
    conn.execute("PRAGMA mmap_size = 268435456").await?;
    conn.execute("PRAGMA temp_store = MEMORY").await?;
    Ok(())
}

/// Connection options of a URL, with the slow-statement log set (sqlx's regular statement
/// log stays at DEBUG).
fn any_options(url: &str, slow: Option<Duration>) -> Result<AnyConnectOptions> {
    let opts = AnyConnectOptions::from_str(url)?;
    Ok(match slow {
        Some(d) => opts.log_slow_statements(log::LevelFilter::Warn, d),
        None => opts.log_slow_statements(log::LevelFilter::Off, Duration::MAX),
    })
}

/// The file of a `sqlite://PATH` (or `sqlite:PATH`) URL, without its query; `None` for
/// another scheme.
pub fn sqlite_path(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    Some(rest.split('?').next().unwrap_or(rest))
}

/// A database URL fit to show: its user and password replaced by `***`.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://***@{}", &url[..s], &url[at + 1..]),
        _ => url.to_string(),
    }
}

/// Hold `<path>.lock` for the life of the store: a second `sundial serve` on the same
/// SQLite file is refused with a hint instead of corrupting it.
fn lock_sqlite_file(path: &str) -> Result<std::fs::File> {
    let lock_path = format!("{path}.lock");
    let f =
        private_file_options().create(true).truncate(false).write(true).open(&lock_path).map_err(|e| {
            StoreError::Locked { path: lock_path.clone(), hint: format!("cannot open the lock file: {e}") }
        })?;
    if f.try_lock().is_err() {
        return Err(StoreError::Locked {
            path: lock_path,
            hint: "is another `sundial serve` running on this database file? Stop it, or use another --data-dir".into(),
        });
    }
    Ok(f)
}

impl SqlStore {
    /// Connect (creating a SQLite file if missing) without migrating.
    pub async fn connect(opts: &ConnectOptions) -> Result<SqlStore> {
        sqlx::any::install_default_drivers();
        if opts.url.starts_with("mysql://") || opts.url.starts_with("mariadb://") {
            return Self::connect_mysql(opts).await;
        }
        Self::connect_sqlite(opts).await
    }

    /// A pool of `max_connections` to MySQL/MariaDB, each session strict, UTC and `READ COMMITTED`.
    async fn connect_mysql(opts: &ConnectOptions) -> Result<SqlStore> {
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
            // (docs/benchmarks-history.md). A connection that died fails its query, is dropped,
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
            .connect_with(any_options(&url, opts.slow_statement)?)
            .await?;
        Ok(SqlStore {
            pool,
            read_pool: None,
            dialect: Dialect::MySql,
            jobs_seen: Default::default(),
            migrate_lock_wait: opts.migrate_lock_wait,
            secrets: opts.secret_keys.clone(),
            counted_tenants: Default::default(),
            _lock: None,
        })
    }

    /// One writer connection and a few readers to a SQLite file (or one connection to
    /// `:memory:`), the file private to its user and locked against a second `sundial serve`.
    async fn connect_sqlite(opts: &ConnectOptions) -> Result<SqlStore> {
        let Some(path) = sqlite_path(&opts.url) else {
            return Err(StoreError::BadUrl(redact_url(&opts.url)));
        };
        let memory = path == ":memory:" || path.is_empty();
        if !memory {
            if let Some(dir) = std::path::Path::new(path).parent().filter(|d| !d.as_os_str().is_empty()) {
                create_private_dir(dir).map_err(|e| StoreError::Locked {
                    path: dir.display().to_string(),
                    hint: format!("cannot create the data directory: {e}"),
                })?;
            }
            private_sqlite_files(path)?;
        }
        let lock = if opts.lock_sqlite_file && !memory { Some(lock_sqlite_file(path)?) } else { None };
        let url = if memory { "sqlite::memory:".to_string() } else { format!("sqlite://{path}?mode=rwc") };
        // One writer connection: SQLite has one writer, and one connection means no
        // SQLITE_BUSY and a natural queue. WAL lets the readers below read while it writes.
        let pool = AnyPoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .after_connect(|conn, _| {
                Box::pin(async move {
                    conn.execute("PRAGMA journal_mode = WAL").await?;
                    conn.execute("PRAGMA synchronous = NORMAL").await?;
                    sqlite_session(conn).await
                })
            })
            .connect_with(any_options(&url, opts.slow_statement)?)
            .await?;
        let read_pool = if memory {
            None // another connection to `:memory:` would be another, empty, database
        } else {
            Some(
                AnyPoolOptions::new()
                    .max_connections(SQLITE_READERS)
                    .idle_timeout(None)
                    .max_lifetime(None)
                    .after_connect(|conn, _| {
                        Box::pin(async move {
                            sqlite_session(conn).await?;
                            conn.execute("PRAGMA query_only = ON").await?;
                            Ok(())
                        })
                    })
                    .connect_lazy_with(any_options(&url, opts.slow_statement)?),
            )
        };
        Ok(SqlStore {
            pool,
            read_pool,
            dialect: Dialect::Sqlite,
            jobs_seen: Default::default(),
            migrate_lock_wait: opts.migrate_lock_wait,
            secrets: opts.secret_keys.clone(),
            counted_tenants: Default::default(),
            _lock: lock,
        })
    }

    /// Connect and apply pending migrations.
    /// With secret keys, every app secret not yet sealed under the current key is sealed
    /// now ([`SqlStore::secrets_rekey`]); a secret under a key not given refuses the open.
    pub async fn open(opts: &ConnectOptions, now_ms: i64) -> Result<SqlStore> {
        let store = Self::connect(opts).await?;
        store.migrate(now_ms).await?;
        if let Some(ring) = &store.secrets {
            let report = store.secrets_rekey().await?;
            if report != RekeyReport::default() {
                tracing::info!(
                    encrypted = report.encrypted,
                    rekeyed = report.rekeyed,
                    key_id = ring.current_id(),
                    "app secrets sealed under the current secret key"
                );
            }
        }
        Ok(store)
    }

    /// Check the applied migrations and apply the pending ones; returns the versions
    /// applied. Refuses an edited or unknown applied migration (see `migrate.rs`).
    pub async fn migrate(&self, now_ms: i64) -> Result<Vec<i64>> {
        let mut conn = self.pool.acquire().await?;
        migrate::run(&mut conn, self.dialect, now_ms, self.migrate_lock_wait).await
    }

    pub async fn close(&self) {
        if let Some(r) = &self.read_pool {
            r.close().await;
        }
        self.pool.close().await;
    }

    /// Where a read outside a transaction goes: SQLite's readers, else the pool.
    fn reader(&self) -> &AnyPool {
        self.read_pool.as_ref().unwrap_or(&self.pool)
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

// ---- file modes (SQLite) -------------------------------------------------------

/// Group and other permission bits.
#[cfg(unix)]
const NOT_OWNER: u32 = 0o077;

/// Create `dir` (and missing parents) readable by its owner only. An existing directory is
/// left as it is, with a warning if other users can enter it.
fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        if let Ok(meta) = std::fs::metadata(dir) {
            let mode = meta.permissions().mode() & 0o777;
            if meta.is_dir() && mode & NOT_OWNER != 0 {
                tracing::warn!(
                    dir = %dir.display(),
                    mode = format!("{mode:04o}"),
                    "the data directory is open to other users; its database and key files are 0600, \
                     but consider `chmod 700` on it"
                );
            }
            return Ok(());
        }
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
}

/// Options creating a file readable and writable by its owner only.
fn private_file_options() -> std::fs::OpenOptions {
    let mut o = File::options();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o
}

/// The SQLite database file created `0600` before SQLite opens it (its `-wal` and `-shm`
/// files take the database file's mode), and an existing database file, WAL or shared-memory
/// file open to other users set to `0600`, with a warning.
fn private_sqlite_files(path: &str) -> Result<()> {
    let io = |e: std::io::Error| StoreError::Locked {
        path: path.to_string(),
        hint: format!("cannot create or check the database file: {e}"),
    };
    private_file_options().create(true).truncate(false).write(true).open(path).map_err(io)?;
    #[cfg(unix)]
    for file in [path.to_string(), format!("{path}-wal"), format!("{path}-shm"), format!("{path}.lock")] {
        use std::os::unix::fs::PermissionsExt;
        let Ok(meta) = std::fs::metadata(&file) else { continue };
        let mode = meta.permissions().mode() & 0o777;
        if mode & NOT_OWNER != 0 {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode & 0o700)).map_err(io)?;
            tracing::warn!(
                file = %file,
                was = format!("{mode:04o}"),
                now = format!("{:04o}", mode & 0o700),
                "database file was open to other users; set to owner-only"
            );
        }
    }
    Ok(())
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

fn refused(e: sundial_core::run_state::Refused) -> StoreError {
    StoreError::Refused { field: "state".into(), message: e.to_string() }
}

// ---- run states in SQL ----------------------------------------------------------

/// Run states as SQL literals for `state IN ({})`: `'queued', 'retrying'`. A state in SQL
/// comes from [`RunState`] (bound, or formatted in by these), never typed out
/// (`tests/sql_sources.rs` checks); they are constants of the code, so the text stays constant.
fn sql_states(states: &[RunState]) -> String {
    states.iter().map(|s| format!("'{}'", s.as_str())).collect::<Vec<_>>().join(", ")
}

/// One run state as an SQL literal: `'pending'`.
fn sql_state(state: RunState) -> String {
    sql_states(&[state])
}

/// The one state `event` moves each of `from` to, from the state machine: what a write
/// changing rows in any of `from` by that event sets. Refused if one of them refuses the
/// event or they would not all go to the same state.
fn moved_to(from: &[RunState], event: &RunEvent) -> Result<RunState> {
    let mut to = None;
    for &state in from {
        let t = transition(state, event).map_err(refused)?.to;
        if to.is_some_and(|to| to != t) {
            return Err(StoreError::Refused {
                field: "state".into(),
                message: format!("{event} moves {} to different states", sql_states(from)),
            });
        }
        to = Some(t);
    }
    to.ok_or_else(|| StoreError::Refused { field: "state".into(), message: format!("{event} from no state") })
}

impl SqlStore {
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
            (Dialect::MySql, Ix::RunsOpen) => " FORCE INDEX (ix_runs_open)",
        }
    }

    /// Row locks for a read-then-write transaction: MySQL needs them; SQLite's
    /// `BEGIN IMMEDIATE` already holds the only write lock.
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
    /// `runs (open_job_id, state)`: the runs not yet finished, by job.
    RunsOpen,
}

// ---- id lists -----------------------------------------------------------------

/// Ids per `IN (…)` list.
const IN_CHUNK: usize = 128;
/// Rows per multi-row `INSERT` at most (chunks are powers of two: a handful of texts).
const INSERT_CHUNK: usize = 128;

fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

/// Where a statement template's id list goes: `… IN ({IDS})`; [`in_list`] fills it.
const IDS: &str = ":ids";

/// Placeholders in the id list for a chunk of `n` ids (n ≤ [`IN_CHUNK`]).
fn in_width(n: usize) -> usize {
    n.max(1).next_power_of_two().min(IN_CHUNK)
}

/// The template with its id list sized for a chunk of `n` ids.
fn in_list(template: &str, n: usize) -> String {
    debug_assert!(template.contains(IDS), "no id list in {template}");
    template.replacen(IDS, &placeholders(in_width(n)), 1)
}

/// Split `n` rows into power-of-two chunk sizes, largest first.
fn pow2_chunks(mut n: usize) -> Vec<usize> {
    let mut out = Vec::new();
    while n > 0 {
        let size = INSERT_CHUNK.min(1 << (usize::BITS - 1 - n.leading_zeros()));
        out.push(size);
        n -= size;
    }
    out
}

/// Run the template `sql` (with one `IN ({IDS})` list, then a `?` for each of `after`) over
/// `ids` in chunks, collecting the rows.
async fn fetch_in_with(
    tx: &mut Transaction<'static, Any>,
    sql: &str,
    ids: &[&str],
    after: &[i64],
) -> Result<Vec<AnyRow>> {
    let mut rows = Vec::new();
    for chunk in ids.chunks(IN_CHUNK) {
        let mut q = sqlx::query(sqlx::AssertSqlSafe(in_list(sql, chunk.len())));
        for i in 0..in_width(chunk.len()) {
            q = q.bind(chunk[i.min(chunk.len() - 1)]);
        }
        for v in after {
            q = q.bind(*v);
        }
        rows.extend(q.fetch_all(&mut **tx).await?);
    }
    Ok(rows)
}

/// [`fetch_in_with`] with nothing after the id list.
async fn fetch_in(tx: &mut Transaction<'static, Any>, sql: &str, ids: &[&str]) -> Result<Vec<AnyRow>> {
    fetch_in_with(tx, sql, ids, &[]).await
}

/// The ids in ascending order: the order every batch takes its row locks in.
fn sorted<'a>(ids: &[&'a str]) -> Vec<&'a str> {
    let mut v = ids.to_vec();
    v.sort_unstable();
    v
}

/// Distinct values in first-seen order.
fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = std::collections::HashSet::new();
    items.filter(|s| seen.insert(*s)).collect()
}

#[async_trait]
impl DbStore for SqlStore {
    fn dialect(&self) -> Dialect {
        self.dialect
    }

    async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(self.reader()).await?;
        Ok(())
    }

    async fn db_now_ms(&self) -> Result<i64> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT {} AS now_ms", self.now_expr())))
            .fetch_one(self.reader())
            .await?;
        col(&row, "now_ms")
    }
}

#[cfg(test)]
mod tests {
    use sundial_core::run_state::RunEvent;
    use sundial_core::types::RunState;

    use super::{in_list, in_width, moved_to, pow2_chunks, sql_state, sql_states};

    #[test]
    fn run_states_are_sql_literals_and_a_bulk_move_is_the_state_machines() {
        assert_eq!(sql_states(&[RunState::Queued, RunState::Retrying]), "'queued', 'retrying'");
        assert_eq!(sql_states(RunState::TERMINAL), "'succeeded', 'failed', 'cancelled', 'expired', 'skipped'");
        assert_eq!(sql_state(RunState::Pending), "'pending'");
        let open = [RunState::Dispatching, RunState::Running, RunState::Retrying];
        assert_eq!(moved_to(&open, &RunEvent::Cancel).unwrap(), RunState::Cancelled);
        assert!(moved_to(&[RunState::Pending, RunState::Succeeded], &RunEvent::Cancel).is_err());
        assert!(moved_to(&[], &RunEvent::Cancel).is_err());
    }

    #[test]
    fn id_lists_are_sized_to_a_power_of_two_up_to_the_chunk() {
        let widths: Vec<usize> = [1, 2, 3, 4, 5, 9, 17, 31, 32, 100, 128].iter().map(|&n| in_width(n)).collect();
        assert_eq!(widths, vec![1, 2, 4, 4, 8, 16, 32, 32, 32, 128, 128]);
        assert_eq!(in_list("SELECT 1 WHERE id IN (:ids) AND x = ?", 3), "SELECT 1 WHERE id IN (?, ?, ?, ?) AND x = ?");
        // Eight texts per statement at most, whatever the batch.
        let texts: std::collections::HashSet<String> = (1..=128).map(|n| in_list("IN (:ids)", n)).collect();
        assert_eq!(texts.len(), 8);
    }

    #[test]
    fn chunks_are_powers_of_two_summing_to_n() {
        assert_eq!(pow2_chunks(0), Vec::<usize>::new());
        assert_eq!(pow2_chunks(1), vec![1]);
        assert_eq!(pow2_chunks(7), vec![4, 2, 1]);
        assert_eq!(pow2_chunks(32), vec![32]);
        assert_eq!(pow2_chunks(77), vec![64, 8, 4, 1]);
        assert_eq!(pow2_chunks(300), vec![128, 128, 32, 8, 4]);
        for n in 0..200 {
            let c = pow2_chunks(n);
            assert_eq!(c.iter().sum::<usize>(), n);
            assert!(c.iter().all(|s| s.is_power_of_two() && *s <= super::INSERT_CHUNK));
        }
    }
}
