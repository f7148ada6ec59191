//! Fresh databases for tests (feature `testing`): each test gets its own MariaDB
//! database with a unique name, or its own SQLite file, migrated and empty.
//!
//! MariaDB is found at `SUNDIAL_TEST_MYSQL_URL` (default `mysql://root@127.0.0.1:3306`).

use std::sync::Arc;

use sqlx::Connection;

use crate::{ConnectOptions, Dialect, KeyRing, SecretKey, SqlStore, Store};

pub fn mysql_server_url() -> String {
    std::env::var("SUNDIAL_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".into())
}

pub struct TestDb {
    pub store: Arc<SqlStore>,
    pub url: String,
    pub dialect: Dialect,
    /// The keys the store seals app secrets with (fresh for every test database).
    pub keys: KeyRing,
    mysql_db: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

impl TestDb {
    pub async fn new(dialect: Dialect) -> TestDb {
        match dialect {
            Dialect::MySql => Self::mysql().await,
            Dialect::Sqlite => Self::sqlite().await,
        }
    }

    pub async fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().expect("temp dir");
        let url = format!("sqlite://{}", dir.path().join("sundial.db").display());
        let keys = KeyRing::new(SecretKey::generate(), vec![]);
        let mut opts = ConnectOptions::new(&url);
        opts.secret_keys = Some(keys.clone());
        let store = SqlStore::open(&opts, 0).await.expect("open sqlite");
        TestDb { store: Arc::new(store), url, dialect: Dialect::Sqlite, keys, mysql_db: None, _dir: Some(dir) }
    }

    /// A URL for a new, empty, unmigrated MariaDB database.
    pub async fn mysql_empty_url() -> (String, String) {
        sqlx::any::install_default_drivers();
        let server = mysql_server_url();
        let name = format!("sundial_t_{}", &uuid::Uuid::new_v4().simple().to_string()[..16]);
        let mut conn = sqlx::AnyConnection::connect(&format!("{server}/mysql")).await.expect(
            "MariaDB must be running at SUNDIAL_TEST_MYSQL_URL (default 127.0.0.1:3306); `scripts/test` starts it",
        );
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")))
            .execute(&mut conn)
            .await
            .expect("create test database");
        let _ = conn.close().await;
        (format!("{server}/{name}"), name)
    }

    pub async fn mysql() -> TestDb {
        let (url, name) = Self::mysql_empty_url().await;
        let keys = KeyRing::new(SecretKey::generate(), vec![]);
        let mut opts = ConnectOptions::new(&url);
        opts.max_connections = 5;
        opts.secret_keys = Some(keys.clone());
        let store = SqlStore::open(&opts, 0).await.expect("open mysql");
        TestDb { store: Arc::new(store), url, dialect: Dialect::MySql, keys, mysql_db: Some(name), _dir: None }
    }

    pub fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    /// Drop the MariaDB database (SQLite files go with the temp dir).
    pub async fn cleanup(self) {
        self.store.close().await;
        if let Some(name) = &self.mysql_db {
            drop_mysql_database(name).await;
        }
    }
}

/// A fresh database that nothing has opened yet (no tables, not migrated), for tests of
/// opening and migrating: a new MariaDB database, or a SQLite file in a temp dir.
pub struct EmptyDb {
    pub url: String,
    pub dialect: Dialect,
    mysql_db: Option<String>,
    dir: Option<tempfile::TempDir>,
}

impl EmptyDb {
    pub async fn new(dialect: Dialect) -> EmptyDb {
        sqlx::any::install_default_drivers();
        match dialect {
            Dialect::MySql => {
                let (url, name) = TestDb::mysql_empty_url().await;
                EmptyDb { url, dialect, mysql_db: Some(name), dir: None }
            }
            Dialect::Sqlite => {
                let dir = tempfile::tempdir().expect("temp dir");
                let url = format!("sqlite://{}", dir.path().join("sundial.db").display());
                EmptyDb { url, dialect, mysql_db: None, dir: Some(dir) }
            }
        }
    }

    /// Options for a store on this database: a small pool, and no SQLite lock file, so
    /// several stores can open one file at once (as processes without it would).
    pub fn options(&self) -> ConnectOptions {
        let mut opts = ConnectOptions::new(&self.url);
        opts.max_connections = 2;
        opts.lock_sqlite_file = false;
        opts
    }

    /// The MariaDB database's name (`None` for SQLite).
    pub fn mysql_database(&self) -> Option<&str> {
        self.mysql_db.as_deref()
    }

    /// A plain connection to the database, for SQL the store does not offer
    /// (creating the SQLite file if missing).
    pub async fn connect_raw(&self) -> sqlx::AnyConnection {
        let url = match self.dialect {
            Dialect::MySql => self.url.clone(),
            Dialect::Sqlite => format!("{}?mode=rwc", self.url),
        };
        sqlx::AnyConnection::connect(&url).await.expect("connect to the test database")
    }

    /// Drop the MariaDB database (SQLite files go with the temp dir).
    pub async fn cleanup(self) {
        if let Some(name) = &self.mysql_db {
            drop_mysql_database(name).await;
        }
        drop(self.dir);
    }
}

pub use crate::migrate::{MIGRATIONS, Migration, lock_name as migration_lock_name};

/// Apply `migrations` (a test's own files, not the shipped ones) with the store's migrator,
/// as `SqlStore::migrate` applies the shipped ones.
pub async fn run_migrations(
    conn: &mut sqlx::AnyConnection,
    dialect: Dialect,
    now_ms: i64,
    migrations: &[Migration],
) -> crate::Result<Vec<i64>> {
    crate::migrate::run_these(conn, dialect, now_ms, crate::migrate::DEFAULT_LOCK_WAIT, migrations).await
}

pub async fn drop_mysql_database(name: &str) {
    if let Ok(mut conn) = sqlx::AnyConnection::connect(&format!("{}/mysql", mysql_server_url())).await {
        let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name}"))).execute(&mut conn).await;
        let _ = conn.close().await;
    }
}
