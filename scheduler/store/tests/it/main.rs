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
mod chains;
mod database;
mod jobs;
mod migrate;
mod nodes;
mod quotas;
mod retention;
mod runs;
mod scripts;
mod secrets;
mod seen;
mod shards;
mod tenants;

/// Migrations (`migrate.rs`): `migrations::sqlite::NAME` and `migrations::mysql::NAME`, each
/// from `migrate::NAME(dialect)` on a database nothing has opened yet.
mod migrations {
    macro_rules! on_both {
        ($($name:ident),+ $(,)?) => {
            mod sqlite {
                $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::migrate::$name(sundial_store::Dialect::Sqlite).await;
                })+
            }
            mod mysql {
                $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::migrate::$name(sundial_store::Dialect::MySql).await;
                })+
            }
        };
    }

    on_both!(
        two_stores_opening_at_once_migrate_once,
        an_edited_migration_is_refused,
        a_database_from_a_newer_release_is_refused,
        a_database_from_before_checksums_is_adopted,
        running_the_migrations_twice_applies_nothing,
        a_held_migration_lock_is_waited_for_and_bounded,
        a_file_is_applied_whole_with_semicolons_in_strings_and_comments,
        duplicate_job_names_are_renamed_by_the_unique_names_migration,
        job_counts_are_taken_from_the_jobs_of_a_database_from_before_them,
    );
}

/// App secrets at rest (`secrets.rs`): `secrets_at_rest::sqlite::NAME` and
/// `secrets_at_rest::mysql::NAME`, each from `secrets::NAME(dialect)` on a fresh database
/// whose stores the test opens with the keys it chooses.
mod secrets_at_rest {
    macro_rules! on_both {
        ($($name:ident),+ $(,)?) => {
            mod sqlite {
                $(#[tokio::test]
                async fn $name() {
                    crate::secrets::$name(sundial_store::Dialect::Sqlite).await;
                })+
            }
            mod mysql {
                $(#[tokio::test]
                async fn $name() {
                    crate::secrets::$name(sundial_store::Dialect::MySql).await;
                })+
            }
        };
    }

    on_both!(
        secrets_are_sealed_in_their_columns_and_read_back_in_plain,
        a_value_moved_to_another_row_or_altered_does_not_open,
        plain_rows_are_sealed_when_a_store_with_keys_opens,
        a_new_key_reseals_every_row_and_an_unknown_key_is_a_clear_error,
    );
}
