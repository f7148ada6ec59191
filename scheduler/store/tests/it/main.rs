//! The store conformance suite: every test runs once on SQLite and once on MariaDB,
//! each on a fresh database. One file per aggregate, as in `src/sql/`; each file lists
//! its tests in one `for_each_database!`, which makes `<file>::sqlite::NAME` and
//! `<file>::mysql::NAME`. Shared builders are in `fixtures.rs`.

/// Generate `sqlite::NAME` and `mysql::NAME` tests, in the module that invokes it, from
/// that module's `NAME(store)`.
macro_rules! for_each_database {
    ($($name:ident),+ $(,)?) => {
        mod sqlite {
            $(#[tokio::test]
            async fn $name() {
                let db = sundial_store::testing::TestDb::sqlite().await;
                super::$name(db.store()).await;
                db.cleanup().await;
            })+
        }
        mod mysql {
            $(#[tokio::test]
            async fn $name() {
                let db = sundial_store::testing::TestDb::mysql().await;
                super::$name(db.store()).await;
                db.cleanup().await;
            })+
        }
    };
}

mod fixtures;

mod apps;
mod database;
mod jobs;
mod nodes;
mod retention;
mod runs;
mod seen;
mod shards;
mod tenants;
