//! Schema migrations: the files in `migrations/<dialect>/`, compiled into the binary,
//! applied in version order and recorded in `sundial_migrations` (version, name,
//! applied_at_ms, checksum).
//!
//! The rules (docs/decisions.md, "Migrations: our own runner"):
//!
//! - **Each file is sent whole**, in one multi-statement call (`sqlx::raw_sql`, which works
//!   on the `Any` connection for both MySQL and SQLite): the database's own parser splits
//!   it, so a `;` inside a string or a comment is fine. A file holds no transaction control
//!   (`BEGIN`, `COMMIT`) and, on MySQL, no `DELIMITER` (a client-side command).
//! - **A shipped file is never edited.** The SHA-256 (hex) of each applied file, per dialect,
//!   is recorded; on start a database whose recorded checksum differs from the file's
//!   (any byte counts, comments too) is refused with [`StoreError::MigrationEdited`].
//!   Rows written before checksums were kept (NULL, or no column at all) adopt the current
//!   file's checksum once.
//! - **A newer database is refused**: a recorded version this binary does not know means a
//!   newer release migrated it ([`StoreError::MigrationUnknown`]).
//! - **One migrator at a time.** MySQL: the named lock `sundial_migrate.<database>` (one per
//!   database: nodes of another database on the same server, or tests running side by
//!   side, never wait for each other; see [`lock_name`]) (`GET_LOCK`, whose
//!   result is checked: 1 got it, 0 timed out, NULL an error), waited for in steps of at most
//!   5 s up to a bound (120 s by default, logging at INFO), and always released. SQLite:
//!   the file's write lock, `BEGIN IMMEDIATE` around the read and the apply, which run in
//!   that one transaction (SQLite's DDL is transactional), waited for the same way.
//! - MySQL commits each DDL statement on its own, so a MySQL migration that fails half-way
//!   leaves its earlier statements applied and is not recorded: repair by hand.

use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use sqlx::{AnyConnection, Connection, Row};

use crate::{Dialect, Result, StoreError};

/// The MySQL named lock held while migrating one database: `sundial_migrate.<database>`
/// (MySQL limits lock names to 64 characters: a longer one ends in a SHA-256 prefix of the
/// database name instead). Named locks are server-wide, hence the database in the name.
/// Releases before 2026-11-25 took the server-wide `sundial_migrate`: during a rolling
/// upgrade, start the first upgraded node alone.
pub fn lock_name(database: &str) -> String {
    let name = format!("sundial_migrate.{database}");
    if name.len() <= 64 {
        name
    } else {
        format!("sundial_migrate.{}", &hex::encode(Sha256::digest(database.as_bytes()))[..40])
    }
}

/// How long a node waits, by default, for another node's migration before giving up.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(120);

/// The longest single wait for the lock, so a long wait is logged as it goes.
const LOCK_STEP: Duration = Duration::from_secs(5);

pub struct Migration {
    pub version: i64,
    pub name: &'static str,
    pub mysql: &'static str,
    pub sqlite: &'static str,
}

pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "init",
        mysql: include_str!("../../../migrations/mysql/0001_init.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0001_init.sql"),
    },
    Migration {
        version: 2,
        name: "lease_indexes",
        mysql: include_str!("../../../migrations/mysql/0002_lease_indexes.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0002_lease_indexes.sql"),
    },
    Migration {
        version: 3,
        name: "shards",
        mysql: include_str!("../../../migrations/mysql/0003_shards.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0003_shards.sql"),
    },
    Migration {
        version: 4,
        name: "affinity",
        mysql: include_str!("../../../migrations/mysql/0004_affinity.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0004_affinity.sql"),
    },
    Migration {
        version: 5,
        name: "executor_running_runs",
        mysql: include_str!("../../../migrations/mysql/0005_executor_running_runs.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0005_executor_running_runs.sql"),
    },
    Migration {
        version: 6,
        name: "lighter_run_indexes",
        mysql: include_str!("../../../migrations/mysql/0006_lighter_run_indexes.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0006_lighter_run_indexes.sql"),
    },
    Migration {
        version: 7,
        name: "state_free_run_indexes",
        mysql: include_str!("../../../migrations/mysql/0007_state_free_run_indexes.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0007_state_free_run_indexes.sql"),
    },
    Migration {
        version: 8,
        name: "pending_by_trigger_kind",
        mysql: include_str!("../../../migrations/mysql/0008_pending_by_trigger_kind.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0008_pending_by_trigger_kind.sql"),
    },
    Migration {
        version: 9,
        name: "node_load",
        mysql: include_str!("../../../migrations/mysql/0009_node_load.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0009_node_load.sql"),
    },
    Migration {
        version: 10,
        name: "unique_job_names",
        mysql: include_str!("../../../migrations/mysql/0010_unique_job_names.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0010_unique_job_names.sql"),
    },
    Migration {
        version: 11,
        name: "script_versions",
        mysql: include_str!("../../../migrations/mysql/0011_script_versions.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0011_script_versions.sql"),
    },
    Migration {
        version: 12,
        name: "script_runs",
        mysql: include_str!("../../../migrations/mysql/0012_script_runs.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0012_script_runs.sql"),
    },
    Migration {
        version: 13,
        name: "edge_conditions",
        mysql: include_str!("../../../migrations/mysql/0013_edge_conditions.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0013_edge_conditions.sql"),
    },
    Migration {
        version: 14,
        name: "chains",
        mysql: include_str!("../../../migrations/mysql/0014_chains.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0014_chains.sql"),
    },
    Migration {
        version: 15,
        name: "fan_in",
        mysql: include_str!("../../../migrations/mysql/0015_fan_in.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0015_fan_in.sql"),
    },
    Migration {
        version: 16,
        name: "one_wake_index",
        mysql: include_str!("../../../migrations/mysql/0016_one_wake_index.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0016_one_wake_index.sql"),
    },
    Migration {
        version: 17,
        name: "tenant_quotas",
        mysql: include_str!("../../../migrations/mysql/0017_tenant_quotas.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0017_tenant_quotas.sql"),
    },
    Migration {
        version: 18,
        name: "job_script_limits",
        mysql: include_str!("../../../migrations/mysql/0018_job_script_limits.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0018_job_script_limits.sql"),
    },
    Migration {
        version: 19,
        name: "sealed_app_secrets",
        mysql: include_str!("../../../migrations/mysql/0019_sealed_app_secrets.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0019_sealed_app_secrets.sql"),
    },
    Migration {
        version: 20,
        name: "tenant_job_counts",
        mysql: include_str!("../../../migrations/mysql/0020_tenant_job_counts.sql"),
        sqlite: include_str!("../../../migrations/sqlite/0020_tenant_job_counts.sql"),
    },
];

impl Migration {
    /// This migration's file for `dialect`.
    pub fn sql(&self, dialect: Dialect) -> &'static str {
        match dialect {
            Dialect::MySql => self.mysql,
            Dialect::Sqlite => self.sqlite,
        }
    }

    /// The SHA-256 (lower-case hex) of this migration's file for `dialect`, as recorded.
    pub fn checksum(&self, dialect: Dialect) -> String {
        checksum(self.sql(dialect))
    }
}

/// SHA-256 of a migration file, lower-case hex.
pub fn checksum(sql: &str) -> String {
    hex::encode(Sha256::digest(sql.as_bytes()))
}

/// Apply every migration not yet recorded, after checking the recorded ones; returns the
/// versions applied. Waits at most `lock_wait` for another migrator (see the module doc).
pub async fn run(conn: &mut AnyConnection, dialect: Dialect, now_ms: i64, lock_wait: Duration) -> Result<Vec<i64>> {
    run_these(conn, dialect, now_ms, lock_wait, MIGRATIONS).await
}

/// [`run`] with another list of migrations (tests use their own files).
pub(crate) async fn run_these(
    conn: &mut AnyConnection,
    dialect: Dialect,
    now_ms: i64,
    lock_wait: Duration,
    migrations: &[Migration],
) -> Result<Vec<i64>> {
    match dialect {
        Dialect::MySql => {
            let database: Option<String> = sqlx::query("SELECT DATABASE()").fetch_one(&mut *conn).await?.try_get(0)?;
            let lock = lock_name(database.as_deref().unwrap_or_default());
            mysql_lock(conn, &lock, lock_wait).await?;
            let result = apply(conn, dialect, now_ms, migrations).await;
            let released = sqlx::query("SELECT RELEASE_LOCK(?)").bind(&lock).fetch_one(&mut *conn).await;
            match (result, released) {
                (Ok(applied), Ok(_)) => Ok(applied),
                // Migrated, but the lock may still be held by this pooled connection: fail, so
                // the store (and its connections, and with them the lock) is dropped.
                (Ok(_), Err(e)) => Err(e.into()),
                (Err(e), Err(release)) => {
                    tracing::warn!(error = %release, "could not release the migration lock");
                    Err(e)
                }
                (Err(e), Ok(_)) => Err(e),
            }
        }
        Dialect::Sqlite => sqlite_run(conn, now_ms, lock_wait, migrations).await,
    }
}

/// Take the MySQL named lock, waiting at most `wait` in steps of [`LOCK_STEP`].
async fn mysql_lock(conn: &mut AnyConnection, lock: &str, wait: Duration) -> Result<()> {
    let started = Instant::now();
    loop {
        // Whole seconds: GET_LOCK's timeout is in seconds.
        let left = wait.saturating_sub(started.elapsed());
        let step = left.min(LOCK_STEP).as_secs_f64().ceil() as i64;
        if step == 0 {
            return Err(StoreError::MigrationLock(format!(
                "another node held the MySQL lock `{lock}` for {} s and still holds it (it may be \
                 migrating; `SELECT IS_USED_LOCK('{lock}')` names its connection); start again later",
                started.elapsed().as_secs()
            )));
        }
        let got: Option<i64> =
            sqlx::query("SELECT GET_LOCK(?, ?)").bind(lock).bind(step).fetch_one(&mut *conn).await?.try_get(0)?;
        match got {
            Some(1) => return Ok(()),
            Some(_) => tracing::info!(
                waited_s = started.elapsed().as_secs(),
                limit_s = wait.as_secs(),
                "another node is migrating; waiting for the migration lock"
            ),
            None => {
                return Err(StoreError::MigrationLock(format!(
                    "GET_LOCK('{lock}') returned NULL: the server could not take the lock"
                )));
            }
        }
    }
}

/// SQLite: the whole check-and-apply in one `BEGIN IMMEDIATE` transaction, so two
/// processes on one file cannot both apply; waits at most `wait` for the write lock.
async fn sqlite_run(
    conn: &mut AnyConnection,
    now_ms: i64,
    wait: Duration,
    migrations: &[Migration],
) -> Result<Vec<i64>> {
    let busy_ms: i64 = sqlx::query("PRAGMA busy_timeout").fetch_one(&mut *conn).await?.try_get(0)?;
    let started = Instant::now();
    let result = loop {
        let left = wait.saturating_sub(started.elapsed());
        if left.is_zero() {
            break Err(StoreError::MigrationLock(format!(
                "another process held the SQLite database's write lock for {} s and still holds it; start again later",
                started.elapsed().as_secs()
            )));
        }
        // The wait for the write lock is SQLite's busy timeout: one step at a time.
        let step_ms = left.min(LOCK_STEP).as_millis().max(1);
        sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA busy_timeout = {step_ms}"))).execute(&mut *conn).await?;
        match conn.begin_with("BEGIN IMMEDIATE").await {
            Ok(mut tx) => {
                break match apply(&mut tx, Dialect::Sqlite, now_ms, migrations).await {
                    Ok(applied) => tx.commit().await.map(|()| applied).map_err(StoreError::from),
                    Err(e) => {
                        let _ = tx.rollback().await;
                        Err(e)
                    }
                };
            }
            Err(e) if is_busy(&e) => tracing::info!(
                waited_s = started.elapsed().as_secs(),
                limit_s = wait.as_secs(),
                "another process is migrating (the database file is locked); waiting"
            ),
            Err(e) => break Err(e.into()),
        }
    };
    sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA busy_timeout = {busy_ms}"))).execute(&mut *conn).await?;
    result
}

/// SQLITE_BUSY (5) or one of its extended codes: another connection holds the lock.
fn is_busy(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(d) => {
            d.code().and_then(|c| c.parse::<i64>().ok()).is_some_and(|c| c & 0xff == 5)
                || d.message().contains("database is locked")
        }
        _ => false,
    }
}

async fn has_checksum_column(conn: &mut AnyConnection, dialect: Dialect) -> Result<bool> {
    let sql = match dialect {
        Dialect::MySql => {
            "SELECT COUNT(*) FROM information_schema.columns \
             WHERE table_schema = DATABASE() AND table_name = 'sundial_migrations' AND column_name = 'checksum'"
        }
        Dialect::Sqlite => "SELECT COUNT(*) FROM pragma_table_info('sundial_migrations') WHERE name = 'checksum'",
    };
    let n: i64 = sqlx::query(sql).fetch_one(&mut *conn).await?.try_get(0)?;
    Ok(n > 0)
}

/// Under the lock: check what is recorded, adopt missing checksums, apply what is missing.
async fn apply(conn: &mut AnyConnection, dialect: Dialect, now_ms: i64, migrations: &[Migration]) -> Result<Vec<i64>> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS sundial_migrations (version BIGINT NOT NULL PRIMARY KEY, \
         name VARCHAR(100) NOT NULL, applied_at_ms BIGINT NOT NULL, checksum CHAR(64))",
    )
    .execute(&mut *conn)
    .await?;
    // Databases from before checksums have the table without the column.
    if !has_checksum_column(conn, dialect).await? {
        sqlx::query("ALTER TABLE sundial_migrations ADD COLUMN checksum CHAR(64)").execute(&mut *conn).await?;
        tracing::info!("added the checksum column to sundial_migrations");
    }
    let mut recorded = Vec::new();
    for r in sqlx::query("SELECT version, name, checksum FROM sundial_migrations ORDER BY version")
        .fetch_all(&mut *conn)
        .await?
    {
        let version: i64 = r.try_get(0)?;
        let name: String = r.try_get(1)?;
        let checksum: Option<String> = r.try_get(2)?;
        recorded.push((version, name, checksum));
    }
    let latest = migrations.iter().map(|m| m.version).max().unwrap_or(0);
    if let Some((version, name, _)) = recorded.iter().find(|(v, ..)| !migrations.iter().any(|m| m.version == *v)) {
        return Err(StoreError::MigrationUnknown { version: *version, name: name.clone(), latest });
    }
    let mut adopt = Vec::new();
    for (version, _, sum) in &recorded {
        let m = migrations.iter().find(|m| m.version == *version).expect("checked above");
        let current = m.checksum(dialect);
        match sum {
            Some(sum) if *sum == current => {}
            Some(sum) => {
                return Err(StoreError::MigrationEdited {
                    version: m.version,
                    name: m.name.to_string(),
                    recorded: sum.clone(),
                    current,
                });
            }
            None => adopt.push((m.version, current)),
        }
    }
    for (version, sum) in &adopt {
        sqlx::query("UPDATE sundial_migrations SET checksum = ? WHERE version = ? AND checksum IS NULL")
            .bind(sum)
            .bind(*version)
            .execute(&mut *conn)
            .await?;
    }
    if !adopt.is_empty() {
        tracing::info!(
            versions = ?adopt.iter().map(|(v, _)| *v).collect::<Vec<_>>(),
            "migrations applied before checksums were kept: recorded the checksums of this binary's files"
        );
    }
    let mut applied = Vec::new();
    for m in migrations.iter().filter(|m| !recorded.iter().any(|(v, ..)| *v == m.version)) {
        let err = |e: sqlx::Error| StoreError::Migration {
            version: m.version,
            name: m.name.to_string(),
            message: crate::error::driver_message(&e),
        };
        sqlx::raw_sql(m.sql(dialect)).execute(&mut *conn).await.map_err(err)?;
        sqlx::query("INSERT INTO sundial_migrations (version, name, applied_at_ms, checksum) VALUES (?, ?, ?, ?)")
            .bind(m.version)
            .bind(m.name)
            .bind(now_ms)
            .bind(m.checksum(dialect))
            .execute(&mut *conn)
            .await
            .map_err(err)?;
        tracing::info!(version = m.version, name = m.name, "migration applied");
        applied.push(m.version);
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_are_sha256_hex_of_the_file() {
        // `printf %s 'CREATE TABLE t (a INT);' | sha256sum`
        assert_eq!(
            checksum("CREATE TABLE t (a INT);"),
            "d7cd921450ce8f8a50f8c321661635a1d1ba90feec8c1ef58366d35d6973d540"
        );
        assert_ne!(MIGRATIONS[0].checksum(Dialect::MySql), MIGRATIONS[0].checksum(Dialect::Sqlite), "per dialect");
    }

    #[test]
    fn versions_are_unique_and_in_order() {
        assert!(MIGRATIONS.windows(2).all(|w| w[0].version < w[1].version));
        assert_eq!(MIGRATIONS[0].version, 1);
    }
}
