//! The database itself ([`DbStore`]): the clock, and SQLite's file lock and WAL (the
//! migrations are `migrate.rs`'s).

use crate::fixtures::*;

for_each_database!(the_database_clock_is_sane);

/// The database's clock agrees with ours (running the migrations twice is `migrate.rs`'s).
pub async fn the_database_clock_is_sane(s: S) {
    s.ping().await.unwrap();
    let db_now = s.db_now_ms().await.unwrap();
    let sys_now = chrono::Utc::now().timestamp_millis();
    assert!((db_now - sys_now).abs() < 5_000, "db {db_now} vs system {sys_now}");
}

mod sqlite_only {
    use sundial_store::{ConnectOptions, SqlStore, StoreError};

    #[tokio::test]
    async fn a_second_server_on_the_same_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("s.db").display());
        let first = SqlStore::open(&ConnectOptions::new(&url), 0).await.unwrap();
        let err = SqlStore::open(&ConnectOptions::new(&url), 0).await.unwrap_err();
        assert!(matches!(err, StoreError::Locked { .. }), "{err}");
        assert!(err.to_string().contains("another `sundial serve`"), "{err}");
        first.close().await;
        drop(first);
        // Released with the store: a later server starts.
        SqlStore::open(&ConnectOptions::new(&url), 0).await.unwrap();
    }

    #[tokio::test]
    async fn wal_mode_is_on() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("s.db").display());
        let _s = SqlStore::open(&ConnectOptions::new(&url), 0).await.unwrap();
        assert!(dir.path().join("s.db-wal").exists(), "WAL file exists");
    }
}
