//! Migrations (`migrate.rs`): one migrator at a time, checksums of applied files, a
//! database from a newer release or from before checksums. Each test runs on SQLite
//! and on MariaDB, on a fresh database that nothing has opened yet.

use std::path::Path;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use sqlx::{AnyConnection, Row};
use sundial_core::ids::{self, new_id};
use sundial_store::prelude::*;
use sundial_store::testing::{EmptyDb, MIGRATIONS, Migration, run_migrations};
use sundial_store::{Dialect, SqlStore, StoreError, Tenant};

use crate::fixtures::{app_of, job_of};

const NOW: i64 = 1_790_000_000_000;

/// The migration files of `dialect` as they are on disk: (version, name, SHA-256 hex).
fn files(dialect: Dialect) -> Vec<(i64, String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations").join(match dialect {
        Dialect::MySql => "mysql",
        Dialect::Sqlite => "sqlite",
    });
    let mut out: Vec<(i64, String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
            let (version, name) = stem.split_once('_').unwrap();
            (version.parse().unwrap(), name.to_string(), hex::encode(Sha256::digest(std::fs::read(&path).unwrap())))
        })
        .collect();
    out.sort();
    assert!(out.len() >= 9, "{out:?}");
    out
}

fn file_checksum(dialect: Dialect, version: i64) -> String {
    files(dialect).into_iter().find(|f| f.0 == version).unwrap().2
}

fn versions(dialect: Dialect) -> Vec<i64> {
    files(dialect).iter().map(|f| f.0).collect()
}

/// What `sundial_migrations` records: (version, name, checksum).
async fn recorded(conn: &mut AnyConnection) -> Vec<(i64, String, Option<String>)> {
    sqlx::query("SELECT version, name, checksum FROM sundial_migrations ORDER BY version")
        .fetch_all(conn)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

async fn exec(conn: &mut AnyConnection, sql: &str) {
    sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).execute(conn).await.unwrap();
}

/// Open (connect and migrate), returning the store and the versions it applied.
async fn open(db: &EmptyDb) -> Result<(SqlStore, Vec<i64>), StoreError> {
    let store = SqlStore::connect(&db.options()).await?;
    match store.migrate(NOW).await {
        Ok(applied) => Ok((store, applied)),
        Err(e) => {
            store.close().await;
            Err(e)
        }
    }
}

/// Open and close, leaving a fully migrated database.
async fn migrate_once(db: &EmptyDb) {
    let (store, applied) = open(db).await.unwrap();
    assert_eq!(applied, versions(db.dialect));
    store.close().await;
}

fn all_recorded(dialect: Dialect) -> Vec<(i64, String, Option<String>)> {
    files(dialect).into_iter().map(|(v, n, c)| (v, n, Some(c))).collect()
}

/// Undo migration 0020 (drop the kept job counts), as if the database predated it.
async fn undo_latest(conn: &mut AnyConnection, dialect: Dialect) {
    assert_eq!(*versions(dialect).last().unwrap(), 20, "undo the latest migration here");
    exec(conn, "DROP TABLE tenant_job_counts").await;
    exec(conn, "DELETE FROM sundial_migrations WHERE version = 20").await;
}

/// Connect two stores, then migrate both at once (connecting takes longer than migrating,
/// so `open` twice would mostly not overlap); returns the versions each applied.
async fn migrate_two_at_once(db: &EmptyDb) -> [Vec<i64>; 2] {
    let opts = db.options();
    let (a, b) = tokio::join!(SqlStore::connect(&opts), SqlStore::connect(&opts));
    let (a, b) = (a.unwrap(), b.unwrap());
    let (applied_a, applied_b) = tokio::join!(a.migrate(NOW), b.migrate(NOW));
    let mut applied = [applied_a.expect("first store migrates"), applied_b.expect("second store migrates")];
    applied.sort();
    // Both work on the schema.
    let t = Tenant { id: new_id(ids::TENANT), name: new_id("name"), created_at_ms: NOW };
    a.tenant_insert(&t).await.unwrap();
    assert_eq!(b.tenant_get(&t.id).await.unwrap(), Some(t));
    a.close().await;
    b.close().await;
    applied
}

/// (a) Two stores opening at once (as two nodes or processes would), on an empty database
/// and on one a migration behind: one applies the migrations, the other waits for it and
/// applies nothing, neither fails.
pub async fn two_stores_opening_at_once_migrate_once(dialect: Dialect) {
    let db = EmptyDb::new(dialect).await;
    let applied = migrate_two_at_once(&db).await;
    assert_eq!(applied, [vec![], versions(dialect)], "exactly one store applies the migrations");
    let mut raw = db.connect_raw().await;
    assert_eq!(recorded(&mut raw).await, all_recorded(dialect), "every migration once, with its checksum");
    // An upgrade: the bookkeeping table exists, so nothing but the lock orders the two.
    undo_latest(&mut raw, dialect).await;
    let latest = *versions(dialect).last().unwrap();
    assert_eq!(migrate_two_at_once(&db).await, [vec![], vec![latest]], "exactly one store applies the latest");
    assert_eq!(recorded(&mut raw).await, all_recorded(dialect));
    drop(raw);
    db.cleanup().await;
}

/// (b) An applied migration whose file changed is refused, naming it and both checksums;
/// the refusal changes nothing and (MySQL) leaves the lock free.
pub async fn an_edited_migration_is_refused(dialect: Dialect) {
    let db = EmptyDb::new(dialect).await;
    migrate_once(&db).await;
    let mut raw = db.connect_raw().await;
    // As if 0003's file had changed since it was applied.
    let other = "0".repeat(64);
    exec(&mut raw, &format!("UPDATE sundial_migrations SET checksum = '{other}' WHERE version = 3")).await;
    let store = SqlStore::connect(&db.options()).await.unwrap();
    let err = store.migrate(NOW).await.unwrap_err();
    assert!(matches!(&err, StoreError::MigrationEdited { version: 3, name, .. } if name == "shards"), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("migration 0003 shards was edited after it was applied"), "{msg}");
    assert!(msg.contains(&other) && msg.contains(&file_checksum(dialect, 3)), "both checksums: {msg}");
    assert!(msg.contains("restore the file or write a new migration"), "{msg}");
    if let Some(name) = db.mysql_database() {
        // The refused store is still open: its connection must not keep the migration lock.
        let holders: i64 =
            sqlx::query("SELECT COUNT(*) FROM information_schema.processlist WHERE db = ? AND id = IS_USED_LOCK(?)")
                .bind(name)
                .bind(sundial_store::testing::migration_lock_name(name))
                .fetch_one(&mut raw)
                .await
                .unwrap()
                .get(0);
        assert_eq!(holders, 0, "the lock is released after a refusal");
    }
    store.close().await;
    let mut expected = all_recorded(dialect);
    expected[2].2 = Some(other.clone());
    assert_eq!(recorded(&mut raw).await, expected, "nothing adopted or rewritten");
    assert!(SqlStore::open(&db.options(), NOW).await.is_err(), "refused on every start");
    // Restoring the file (here: its checksum) lets the database start again.
    let sum = file_checksum(dialect, 3);
    exec(&mut raw, &format!("UPDATE sundial_migrations SET checksum = '{sum}' WHERE version = 3")).await;
    let (store, applied) = open(&db).await.unwrap();
    assert_eq!(applied, Vec::<i64>::new());
    store.close().await;
    db.cleanup().await;
}

/// (c) A database that records a version this binary does not know (a newer release
/// migrated it) is refused before anything is applied.
pub async fn a_database_from_a_newer_release_is_refused(dialect: Dialect) {
    let db = EmptyDb::new(dialect).await;
    migrate_once(&db).await;
    let mut raw = db.connect_raw().await;
    let latest = *versions(dialect).last().unwrap();
    let future = latest + 1;
    exec(
        &mut raw,
        &format!(
            "INSERT INTO sundial_migrations (version, name, applied_at_ms, checksum) \
             VALUES ({future}, 'from_the_future', 0, '{}')",
            "a".repeat(64)
        ),
    )
    .await;
    // And our latest one pending: it must not be applied to a database this binary refuses.
    undo_latest(&mut raw, dialect).await;
    let err = open(&db).await.map(|(_, applied)| applied).unwrap_err();
    assert!(matches!(err, StoreError::MigrationUnknown { version, .. } if version == future), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&format!("migration {future:04} from_the_future")), "{msg}");
    assert!(msg.contains("newer Sundial migrated this database"), "{msg}");
    let rows = recorded(&mut raw).await;
    assert_eq!(rows.iter().map(|r| r.0).filter(|v| *v == latest).count(), 0, "nothing applied: {rows:?}");
    db.cleanup().await;
}

/// (d) A database from before checksums (no column; or NULL) adopts the files'
/// checksums once, then is checked like any other.
pub async fn a_database_from_before_checksums_is_adopted(dialect: Dialect) {
    let db = EmptyDb::new(dialect).await;
    migrate_once(&db).await;
    let mut raw = db.connect_raw().await;
    exec(&mut raw, "ALTER TABLE sundial_migrations DROP COLUMN checksum").await;
    let (store, applied) = open(&db).await.expect("a database from before checksums opens");
    assert_eq!(applied, Vec::<i64>::new());
    store.close().await;
    assert_eq!(recorded(&mut raw).await, all_recorded(dialect), "column added, checksums adopted");
    // A NULL checksum (a row written by an older binary after the column existed) too.
    exec(&mut raw, "UPDATE sundial_migrations SET checksum = NULL WHERE version = 5").await;
    let (store, applied) = open(&db).await.unwrap();
    assert_eq!(applied, Vec::<i64>::new());
    store.close().await;
    assert_eq!(recorded(&mut raw).await, all_recorded(dialect));
    // Adopted once: from now on an edit is refused.
    exec(&mut raw, &format!("UPDATE sundial_migrations SET checksum = '{}' WHERE version = 5", "b".repeat(64))).await;
    let err = open(&db).await.map(|(_, applied)| applied).unwrap_err();
    assert!(matches!(err, StoreError::MigrationEdited { version: 5, .. }), "{err:?}");
    db.cleanup().await;
}

/// (e) Migrating a migrated database applies nothing and rewrites nothing, from the same
/// store or a new one.
pub async fn running_the_migrations_twice_applies_nothing(dialect: Dialect) {
    let db = EmptyDb::new(dialect).await;
    let store = SqlStore::connect(&db.options()).await.unwrap();
    assert_eq!(store.migrate(NOW).await.unwrap(), versions(dialect));
    assert_eq!(store.migrate(NOW + 1_000).await.unwrap(), Vec::<i64>::new());
    let (again, applied) = open(&db).await.unwrap();
    assert_eq!(applied, Vec::<i64>::new());
    let mut raw = db.connect_raw().await;
    assert_eq!(recorded(&mut raw).await, all_recorded(dialect));
    let stamps: Vec<i64> = sqlx::query("SELECT applied_at_ms FROM sundial_migrations")
        .fetch_all(&mut raw)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(stamps.iter().all(|t| *t == NOW), "{stamps:?}");
    store.close().await;
    again.close().await;
    db.cleanup().await;
}

/// Hold the migration lock from another session: a store waits for it while it is held
/// (then migrates), and gives up with a clear error once it has waited its bound.
pub async fn a_held_migration_lock_is_waited_for_and_bounded(dialect: Dialect) {
    let db = EmptyDb::new(dialect).await;
    let mut holder = db.connect_raw().await;
    // MySQL: this database's lock (other databases on the server, other tests, never wait for it).
    let lock = db.mysql_database().map(sundial_store::testing::migration_lock_name).unwrap_or_default();
    let (take, release) = match dialect {
        Dialect::MySql => (format!("SELECT GET_LOCK('{lock}', 60)"), format!("SELECT RELEASE_LOCK('{lock}')")),
        Dialect::Sqlite => ("BEGIN IMMEDIATE".to_string(), "ROLLBACK".to_string()),
    };
    if dialect == Dialect::Sqlite {
        exec(&mut holder, "PRAGMA journal_mode = WAL").await;
    }
    exec(&mut holder, &take).await;
    let mut opts = db.options();
    opts.migrate_lock_wait = Duration::from_secs(2);
    let started = Instant::now();
    let err = match SqlStore::open(&opts, NOW).await {
        Ok(_) => panic!("opened while another session held the migration lock"),
        Err(e) => e,
    };
    let waited = started.elapsed();
    assert!(matches!(err, StoreError::MigrationLock(_)), "{err:?}");
    assert!(err.to_string().contains("still holds it"), "{err}");
    assert!(waited >= Duration::from_secs(2) && waited < Duration::from_secs(10), "{waited:?}");
    // Held for a second more, then released: a store with the default bound waits, then migrates.
    let release_later = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        exec(&mut holder, &release).await;
    };
    let started = Instant::now();
    let (opened, ()) = tokio::join!(open(&db), release_later);
    let (store, applied) = opened.expect("opens once the lock is free");
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(applied, versions(dialect));
    store.close().await;
    drop(holder);
    db.cleanup().await;
}

/// A file goes to the database whole: `;` inside strings and comments is no statement
/// end, every statement runs, and a failing statement fails the migration (not recorded).
pub async fn a_file_is_applied_whole_with_semicolons_in_strings_and_comments(dialect: Dialect) {
    const SEMICOLONS: &str = "-- A comment; with a semicolon.\n\
        CREATE TABLE t (a VARCHAR(40) NOT NULL DEFAULT 'x;y');\n\
        /* A block comment; also\n   over two lines; */\n\
        INSERT INTO t (a) VALUES ('1;2');\n\
        INSERT INTO t (a) VALUES ('-- not a comment; /* nor this */');\n";
    const FAILS: &str = "CREATE TABLE u (b INT);\nINSERT INTO no_such_table (b) VALUES (1);\nCREATE TABLE v (c INT);\n";
    let first = Migration { version: 1, name: "semicolons", mysql: SEMICOLONS, sqlite: SEMICOLONS };
    let second = Migration { version: 2, name: "fails", mysql: FAILS, sqlite: FAILS };
    let db = EmptyDb::new(dialect).await;
    let mut conn = db.connect_raw().await;
    assert_eq!(run_migrations(&mut conn, dialect, NOW, std::slice::from_ref(&first)).await.unwrap(), [1]);
    let rows: Vec<String> = sqlx::query("SELECT a FROM t ORDER BY a")
        .fetch_all(&mut conn)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(rows, ["-- not a comment; /* nor this */", "1;2"]);
    let err = run_migrations(&mut conn, dialect, NOW, &[first, second]).await.unwrap_err();
    assert!(matches!(err, StoreError::Migration { version: 2, .. }), "{err:?}");
    assert!(err.to_string().contains("no_such_table"), "{err}");
    assert_eq!(
        recorded(&mut conn).await.iter().map(|r| r.0).collect::<Vec<_>>(),
        [1],
        "the failed file is not recorded"
    );
    let sql = match dialect {
        Dialect::MySql => {
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'v'"
        }
        Dialect::Sqlite => "SELECT COUNT(*) FROM sqlite_master WHERE name = 'v'",
    };
    let v_exists: i64 = sqlx::query(sql).fetch_one(&mut conn).await.unwrap().get(0);
    assert_eq!(v_exists, 0, "nothing after the failing statement ran");
    drop(conn);
    db.cleanup().await;
}

/// A job row as a binary of migration 0009 wrote it (the store's own insert writes later columns).
async fn insert_job_as_of_0009(raw: &mut AnyConnection, j: &sundial_store::Job) {
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
    .bind(serde_json::to_string(&j.schedule).unwrap())
    .bind(serde_json::to_string(&j.params).unwrap())
    .bind(j.route.as_str())
    .bind(j.block.as_str())
    .bind(serde_json::to_string(&j.misfire).unwrap())
    .bind(serde_json::to_string(&j.failure).unwrap())
    .bind(j.timeout_ms)
    .bind(j.max_concurrency)
    .bind(j.state.as_str())
    .bind(j.source.as_str())
    .bind(&j.registration_key)
    .bind(j.version)
    .bind(j.generated_until_ms)
    .bind(j.created_at_ms)
    .bind(j.updated_at_ms)
    .execute(raw)
    .await
    .unwrap();
}

/// 0010 adds the unique key on jobs' (tenant, name) to a database that may already hold
/// duplicate names: the oldest job of each name keeps it, every later one is renamed
/// `<name>-<job id>` (cut to fit 100 characters), and the upgrade succeeds.
pub async fn duplicate_job_names_are_renamed_by_the_unique_names_migration(dialect: Dialect) {
    let db = EmptyDb::new(dialect).await;
    let mut raw = db.connect_raw().await;
    let before: Vec<i64> = (1..=9).collect();
    assert_eq!(run_migrations(&mut raw, dialect, NOW, &MIGRATIONS[..9]).await.unwrap(), before);
    let store = SqlStore::connect(&db.options()).await.unwrap();
    let t = Tenant { id: new_id(ids::TENANT), name: "t".into(), created_at_ms: NOW };
    let other = Tenant { id: new_id(ids::TENANT), name: "other".into(), created_at_ms: NOW };
    let (a, b) = (app_of(&t, "a"), app_of(&other, "a"));
    let long = "x".repeat(100);
    let mut jobs = Vec::new();
    // Created in this order; `created_at_ms` decides who keeps the name, then the id.
    for (app, name, created) in [
        (&a, "dup", NOW + 2),
        (&a, "dup", NOW + 1),
        (&a, "dup", NOW + 3),
        (&a, long.as_str(), NOW),
        (&a, long.as_str(), NOW),
        (&a, "single", NOW),
        (&b, "dup", NOW + 9),
    ] {
        let mut j = job_of(app, name);
        j.created_at_ms = created;
        insert_job_as_of_0009(&mut raw, &j).await;
        jobs.push(j);
    }
    let applied = store.migrate(NOW).await.unwrap();
    assert_eq!(applied.first(), Some(&10));
    let name_of = async |j: &sundial_store::Job| store.job_get(&j.tenant_id, &j.id).await.unwrap().unwrap().name;
    assert_eq!(name_of(&jobs[1]).await, "dup", "the oldest keeps its name");
    assert_eq!(name_of(&jobs[0]).await, format!("dup-{}", jobs[0].id));
    assert_eq!(name_of(&jobs[2]).await, format!("dup-{}", jobs[2].id));
    let (first, second) = if jobs[3].id < jobs[4].id { (&jobs[3], &jobs[4]) } else { (&jobs[4], &jobs[3]) };
    assert_eq!(name_of(first).await, long, "same instant: the lower id keeps the name");
    let renamed = name_of(second).await;
    assert_eq!(renamed, format!("{}-{}", &long[..99 - second.id.len()], second.id));
    assert_eq!(renamed.len(), 100);
    assert_eq!(name_of(&jobs[5]).await, "single");
    assert_eq!(name_of(&jobs[6]).await, "dup", "another tenant's name is its own");
    // From now on the key refuses a duplicate.
    let again = job_of(&a, "dup");
    assert!(matches!(store.job_insert(&again, &[]).await, Err(StoreError::Conflict { what: "job_name", .. })));
    store.close().await;
    drop(raw);
    db.cleanup().await;
}

/// (h) A database from before the kept job counts (migration 0020): each tenant's jobs are
/// counted by its next job write, which then keeps the count, so quotas hold across the upgrade.
pub async fn job_counts_are_taken_from_the_jobs_of_a_database_from_before_them(dialect: Dialect) {
    use sundial_core::quota::{Quota, Quotas};
    let db = EmptyDb::new(dialect).await;
    let (store, _) = open(&db).await.unwrap();
    let t = Tenant { id: new_id(ids::TENANT), name: "t".into(), created_at_ms: NOW };
    store.tenant_insert(&t).await.unwrap();
    let a = app_of(&t, "a");
    store.app_insert(&a).await.unwrap();
    for name in ["one", "two", "three"] {
        store.job_insert(&job_of(&a, name), &[]).await.unwrap();
    }
    store.close().await;
    // As if these jobs were written before 0020: no counts; migrating again creates the table empty.
    let mut raw = db.connect_raw().await;
    undo_latest(&mut raw, dialect).await;
    let (store, applied) = open(&db).await.unwrap();
    assert_eq!(applied, vec![20]);
    let full = Quotas { max_jobs: 3, ..Quotas::default() };
    match store.job_insert_within(&job_of(&a, "four"), &[], &full).await {
        Err(StoreError::QuotaExceeded(e)) => assert_eq!((e.quota, e.usage), (Quota::MaxJobs, 3.0)),
        other => panic!("the three jobs from before count: {other:?}"),
    }
    let room = Quotas { max_jobs: 4, ..Quotas::default() };
    store.job_insert_within(&job_of(&a, "four"), &[], &room).await.unwrap();
    let kept: i64 = sqlx::query("SELECT jobs FROM tenant_job_counts WHERE tenant_id = ?")
        .bind(&t.id)
        .fetch_one(&mut raw)
        .await
        .unwrap()
        .get(0);
    assert_eq!(kept, 4);
    store.close().await;
    drop(raw);
    db.cleanup().await;
}
