//! API tests over real HTTP on 127.0.0.1:0, each on a fresh database, run on
//! SQLite and on MariaDB.

mod executor;
mod helpers;

mod auth;
mod bad_input;
mod batch;
mod engine;
mod objects;
mod openapi;
mod quotas;
mod scripts;
mod shard;

/// Generate `sqlite::NAME` and `mysql::NAME` tests from `async fn NAME(app: TestApp)`.
#[macro_export]
macro_rules! on_both_databases {
    ($($name:ident),+ $(,)?) => {
        mod sqlite {
            $(#[tokio::test]
            async fn $name() {
                let app = $crate::helpers::spawn_app(sundial_store::Dialect::Sqlite).await;
                super::$name(&app).await;
                app.cleanup().await;
            })+
        }
        mod mysql {
            $(#[tokio::test]
            async fn $name() {
                let app = $crate::helpers::spawn_app(sundial_store::Dialect::MySql).await;
                super::$name(&app).await;
                app.cleanup().await;
            })+
        }
    };
}
