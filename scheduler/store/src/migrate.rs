//! Schema migrations: the files in `migrations/<dialect>/`, compiled into the binary
//! and applied in order, each recorded in `sundial_migrations`.

use sqlx::{AnyConnection, Connection, Row};

use crate::{Dialect, Result, StoreError};

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
];

/// Split a migration file into statements (no statement of ours contains `;` inside).
fn statements(sql: &str) -> impl Iterator<Item = String> + '_ {
    sql.split(';')
        .map(|s| s.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join("\n"))
        .filter(|s| !s.trim().is_empty())
}

/// Apply every migration not yet recorded; returns the versions applied.
/// On MySQL a named lock serialises nodes that start together.
pub async fn run(conn: &mut AnyConnection, dialect: Dialect, now_ms: i64) -> Result<Vec<i64>> {
    if dialect == Dialect::MySql {
        sqlx::query("SELECT GET_LOCK('sundial_migrate', 60)").execute(&mut *conn).await?;
    }
    let result = apply(conn, dialect, now_ms).await;
    if dialect == Dialect::MySql {
        sqlx::query("SELECT RELEASE_LOCK('sundial_migrate')").execute(&mut *conn).await?;
    }
    result
}

async fn apply(conn: &mut AnyConnection, dialect: Dialect, now_ms: i64) -> Result<Vec<i64>> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS sundial_migrations (version BIGINT NOT NULL PRIMARY KEY, name VARCHAR(100) NOT NULL, applied_at_ms BIGINT NOT NULL)",
    )
    .execute(&mut *conn)
    .await?;
    let done: Vec<i64> = sqlx::query("SELECT version FROM sundial_migrations")
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|r| r.try_get::<i64, _>(0))
        .collect::<Result<_, _>>()?;
    let mut applied = Vec::new();
    for m in MIGRATIONS.iter().filter(|m| !done.contains(&m.version)) {
        let sql = match dialect {
            Dialect::MySql => m.mysql,
            Dialect::Sqlite => m.sqlite,
        };
        let err = |source| StoreError::Migration { version: m.version, name: m.name.to_string(), source };
        // SQLite runs DDL transactionally; MySQL commits DDL implicitly, so a failed
        // MySQL migration may need manual repair (each of ours is one CREATE per table).
        let mut tx = conn.begin().await.map_err(err)?;
        for stmt in statements(sql) {
            sqlx::query(sqlx::AssertSqlSafe(stmt)).execute(&mut *tx).await.map_err(err)?;
        }
        sqlx::query("INSERT INTO sundial_migrations (version, name, applied_at_ms) VALUES (?, ?, ?)")
            .bind(m.version)
            .bind(m.name)
            .bind(now_ms)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        tx.commit().await.map_err(err)?;
        tracing::info!(version = m.version, name = m.name, "migration applied");
        applied.push(m.version);
    }
    Ok(applied)
}
