//! The store conformance suite: every test runs once on SQLite and once on MariaDB,
//! each on a fresh database.

mod conformance;
mod migrate;
mod shards;

/// Generate `sqlite::NAME` and `mysql::NAME` tests from `conformance::NAME(store)`
/// (or from `MODULE::NAME(store)` with `@in MODULE;` first).
macro_rules! for_each_database {
    ($($name:ident),+ $(,)?) => {
        for_each_database!(@in conformance; $($name),+);
    };
    (@in $module:ident; $($name:ident),+ $(,)?) => {
        mod sqlite {
            $(#[tokio::test]
            async fn $name() {
                let db = sundial_store::testing::TestDb::sqlite().await;
                crate::$module::$name(db.store()).await;
                db.cleanup().await;
            })+
        }
        mod mysql {
            $(#[tokio::test]
            async fn $name() {
                let db = sundial_store::testing::TestDb::mysql().await;
                crate::$module::$name(db.store()).await;
                db.cleanup().await;
            })+
        }
    };
}

for_each_database!(
    the_database_clock_is_sane,
    tenants_are_unique_by_name_and_paginate,
    api_keys_are_found_by_hash_and_scoped_to_their_tenant,
    apps_are_unique_per_tenant_and_isolated,
    app_delete_is_refused_while_jobs_use_it,
    jobs_round_trip_every_field,
    job_update_is_conditional_on_version,
    job_filters_and_state_changes,
    child_edges_refuse_cycles_and_foreign_jobs,
    registration_jobs_are_unique_per_app_and_handler,
    runs_are_unique_per_fire_key,
    runs_list_newest_first_with_a_stable_cursor,
    job_delete_removes_edges_and_unstarted_runs,
    claims_are_atomic_and_expired_claims_are_recovered,
    dead_nodes_hand_back_their_claims,
    retention_deletes_only_old_finished_runs,
    reaper_scans_see_only_running_runs,
    seen_webhook_ids_are_refused_twice,
    dispatch_batches_decide_each_run_as_if_alone,
    result_batches_apply_in_order_with_duplicates_and_conflicts,
    generate_batches_skip_jobs_that_changed,
    generate_moves_each_jobs_own_cursor_in_a_mixed_batch,
    claims_prefer_owned_buckets_and_take_others_after_the_grace,
    peeked_fires_are_read_without_a_claim_and_dispatched_from_pending,
    late_fires_are_settled_in_bulk,
);

/// Sharded runs (`shards.rs`): `shard::sqlite::NAME` and `shard::mysql::NAME`.
mod shard {
    for_each_database!(
        @in shards;
        shards_are_frozen_once_with_stable_webhook_ids,
        shard_results_are_conditional_on_the_shard_attempt,
        a_due_shard_retry_is_started_by_one_caller,
        a_sharded_run_succeeds_with_all_shards_and_fails_with_one,
        reapers_see_shards_not_whole_sharded_runs,
    );
}

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
    );
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
