//! App signing secrets at rest (`secrets.rs`, `sql/apps.rs`): sealed in the columns, opened
//! for their own row only, legacy plain-text rows sealed when a store opens, key rotation;
//! and the SQLite files' modes. Each test opens its own stores on an [`EmptyDb`], with the
//! keys it chooses.

use std::sync::Arc;

use sqlx::Row;
use sundial_core::types::BlockStrategy;
use sundial_store::testing::EmptyDb;
use sundial_store::*;

use crate::fixtures::*;

const FIRST: &str = "whsec_Zmlyc3Qgc2VjcmV0IG9mIHRoZSBhcHAgYmlsbGluZw==";
const SECOND: &str = "whsec_c2Vjb25kIHNlY3JldCBvZiB0aGUgYXBwIGJpbGxpbmc=";

fn ring(current: &SecretKey, previous: &[&SecretKey]) -> KeyRing {
    KeyRing::new(current.clone(), previous.iter().map(|k| (*k).clone()).collect())
}

async fn open(db: &EmptyDb, keys: Option<KeyRing>) -> Result<Arc<SqlStore>> {
    let mut opts = db.options();
    opts.lock_sqlite_file = false;
    opts.secret_keys = keys;
    SqlStore::open(&opts, NOW).await.map(Arc::new)
}

/// The two secret columns of an app as stored.
async fn raw(db: &EmptyDb, app_id: &str) -> (String, Option<String>) {
    let mut c = db.connect_raw().await;
    let r = sqlx::query("SELECT secret, previous_secret FROM apps WHERE id = ?")
        .bind(app_id)
        .fetch_one(&mut c)
        .await
        .unwrap();
    (r.try_get("secret").unwrap(), r.try_get("previous_secret").unwrap())
}

async fn set_raw(db: &EmptyDb, app_id: &str, secret: &str) {
    let mut c = db.connect_raw().await;
    sqlx::query("UPDATE apps SET secret = ? WHERE id = ?").bind(secret).bind(app_id).execute(&mut c).await.unwrap();
}

fn assert_sealed_under(stored: &str, key: &SecretKey) {
    assert!(stored.starts_with(&format!("enc:v1:{}:", key.id())), "not sealed under {}: {stored}", key.id());
    assert!(!stored.contains("whsec_"), "{stored}");
}

/// An app with a rotated secret: `SECOND` current, `FIRST` previous.
async fn rotated_app(s: &S, name: &str) -> App {
    let t = tenant(s, name).await;
    let mut a = app_of(&t, name);
    a.secret = FIRST.into();
    s.app_insert(&a).await.unwrap();
    a.previous_secret = Some(std::mem::replace(&mut a.secret, SECOND.into()));
    a.previous_expires_ms = Some(NOW + 60_000);
    assert!(s.app_update(&a).await.unwrap());
    a
}

/// Create and rotate write sealed values only; reads give the plain secrets back.
pub async fn secrets_are_sealed_in_their_columns_and_read_back_in_plain(dialect: Dialect) {
    let db = EmptyDb::new(dialect).await;
    let key = SecretKey::generate();
    let store = open(&db, Some(ring(&key, &[]))).await.unwrap();
    let s: S = store.clone();
    let t = tenant(&s, "t").await;
    let mut a = app_of(&t, "billing");
    a.secret = FIRST.into();
    s.app_insert(&a).await.unwrap();
    let (secret, previous) = raw(&db, &a.id).await;
    assert_sealed_under(&secret, &key);
    assert_eq!(previous, None);
    assert_eq!(s.app_get(&t.id, &a.id).await.unwrap(), Some(a.clone()));

    a.previous_secret = Some(std::mem::replace(&mut a.secret, SECOND.into()));
    a.previous_expires_ms = Some(NOW + 60_000);
    assert!(s.app_update(&a).await.unwrap());
    let (secret, previous) = raw(&db, &a.id).await;
    assert_sealed_under(&secret, &key);
    assert_sealed_under(previous.as_deref().unwrap(), &key);
    assert_eq!(s.app_get(&t.id, &a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(s.app_by_id(&a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(s.app_list(&t.id, &page(10)).await.unwrap(), vec![a.clone()]);
    assert_eq!(s.app_by_id(&a.id).await.unwrap().unwrap().valid_secrets(NOW), vec![SECOND, FIRST]);
    store.close().await;
    db.cleanup().await;
}

/// A sealed value copied to another app's row, moved to the other column or altered does
/// not open: reads of that app fail with an error naming it (and no secret), while dispatch
/// of another app's runs in the same batch goes on.
pub async fn a_value_moved_to_another_row_or_altered_does_not_open(dialect: Dialect) {
    let db = EmptyDb::new(dialect).await;
    let store = open(&db, Some(ring(&SecretKey::generate(), &[]))).await.unwrap();
    let s: S = store.clone();
    let victim = rotated_app(&s, "victim").await;
    let other = rotated_app(&s, "other").await;
    let (other_secret, other_previous) = raw(&db, &other.id).await;
    let (victim_secret, victim_previous) = raw(&db, &victim.id).await;

    let mut flipped: Vec<char> = victim_secret.chars().collect();
    let i = flipped.len() - 20;
    flipped[i] = if flipped[i] == 'A' { 'B' } else { 'A' };
    let flipped: String = flipped.into_iter().collect();
    for bad in [other_secret, other_previous.unwrap(), victim_previous.unwrap(), flipped] {
        set_raw(&db, &victim.id, &bad).await;
        for err in
            [s.app_by_id(&victim.id).await.unwrap_err(), s.app_get(&victim.tenant_id, &victim.id).await.unwrap_err()]
        {
            let msg = err.to_string();
            assert!(matches!(err, StoreError::Secret(_)), "{err:?}");
            assert!(msg.contains(&victim.id) && msg.contains("does not decrypt"), "{msg}");
            assert!(!msg.contains("whsec_"), "{msg}");
        }
    }
    // The other app is untouched, and its runs dispatch in the same batch as the victim's.
    assert_eq!(s.app_by_id(&other.id).await.unwrap(), Some(other.clone()));
    let jv = job_with(&s, &victim, "jv", BlockStrategy::Serial).await;
    let jo = job_with(&s, &other, "jo", BlockStrategy::Serial).await;
    let (rv, ro) = (run_of(&jv, "s:1", NOW), run_of(&jo, "s:1", NOW));
    s.run_insert(&rv).await.unwrap();
    s.run_insert(&ro).await.unwrap();
    let claimed = s.run_claim(&claim("node_a", NOW)).await.unwrap();
    assert_eq!(claimed.len(), 2);
    let ids: Vec<String> = claimed.iter().map(|r| r.id.clone()).collect();
    let decided = s.run_dispatch_many(&to_dispatch(&ids), "node_a", NOW, 30_000).await.unwrap();
    let routing_of = |run_id: &str| match &decided.iter().find(|(id, _)| id == run_id).unwrap().1 {
        DispatchDecision::Dispatch { routing, .. } => routing.clone(),
        d => panic!("expected a dispatch, got {d:?}"),
    };
    assert_eq!(routing_of(&ro.id).expect("the other app routes").app, other);
    assert!(routing_of(&rv.id).is_none(), "an app whose secret does not open has no routing");
    store.close().await;
    db.cleanup().await;
}

/// Rows written before secrets were encrypted (a store without keys, as the previous
/// release) are sealed when a store with keys opens; on SQLite no `whsec_` is left in the
/// database file or its WAL afterwards.
pub async fn plain_rows_are_sealed_when_a_store_with_keys_opens(dialect: Dialect) {
    let db = EmptyDb::new(dialect).await;
    let legacy = open(&db, None).await.unwrap();
    let ls: S = legacy.clone();
    let a = rotated_app(&ls, "old").await;
    let b = rotated_app(&ls, "older").await;
    assert_eq!(raw(&db, &a.id).await, (SECOND.to_string(), Some(FIRST.to_string())), "stored as given");
    legacy.close().await;
    drop((ls, legacy));
    if dialect == Dialect::Sqlite {
        assert!(file_holds(&db, b"whsec_"), "the legacy rows are in the file (the check below can fail)");
    }

    let key = SecretKey::generate();
    let store = open(&db, Some(ring(&key, &[]))).await.unwrap();
    for app in [&a, &b] {
        let (secret, previous) = raw(&db, &app.id).await;
        assert_sealed_under(&secret, &key);
        assert_sealed_under(previous.as_deref().unwrap(), &key);
        assert_eq!(store.app_by_id(&app.id).await.unwrap().as_ref(), Some(app));
    }
    // Nothing left to do on the next open.
    assert_eq!(store.secrets_rekey().await.unwrap(), RekeyReport::default());
    store.close().await;
    drop(store);
    if dialect == Dialect::Sqlite {
        assert!(!file_holds(&db, b"whsec_"), "a plain-text secret is left in the SQLite file or its WAL");
    }
    db.cleanup().await;
}

/// Does the SQLite database file, or its WAL, contain `needle`?
fn file_holds(db: &EmptyDb, needle: &[u8]) -> bool {
    let path = db.url.strip_prefix("sqlite://").unwrap();
    [path.to_string(), format!("{path}-wal")]
        .iter()
        .any(|p| std::fs::read(p).map(|bytes| bytes.windows(needle.len()).any(|w| w == needle)).unwrap_or(false))
}

/// Rotation of the operator key: with the new key current and the old one previous, opening
/// seals every value again under the new key; then the new key alone reads everything, and
/// the old key alone is refused at open with an error naming the app and the missing key id.
pub async fn a_new_key_reseals_every_row_and_an_unknown_key_is_a_clear_error(dialect: Dialect) {
    let db = EmptyDb::new(dialect).await;
    let (old, new) = (SecretKey::generate(), SecretKey::generate());
    let first = open(&db, Some(ring(&old, &[]))).await.unwrap();
    let fs: S = first.clone();
    let a = rotated_app(&fs, "a").await;
    assert_sealed_under(&raw(&db, &a.id).await.0, &old);
    first.close().await;
    drop((fs, first));

    // The new key alone cannot open the old rows: refused, naming the app and the key id.
    let err = open(&db, Some(ring(&new, &[]))).await.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StoreError::Secret(_)), "{err:?}");
    assert!(msg.contains(&a.id) && msg.contains(old.id()) && msg.contains("not configured"), "{msg}");

    let rotated = open(&db, Some(ring(&new, &[&old]))).await.unwrap();
    let (secret, previous) = raw(&db, &a.id).await;
    assert_sealed_under(&secret, &new);
    assert_sealed_under(previous.as_deref().unwrap(), &new);
    assert_eq!(rotated.app_by_id(&a.id).await.unwrap(), Some(a.clone()));
    rotated.close().await;
    drop(rotated);

    let after = open(&db, Some(ring(&new, &[]))).await.unwrap();
    assert_eq!(after.app_by_id(&a.id).await.unwrap(), Some(a.clone()), "the old key is no longer needed");
    after.close().await;
    drop(after);
    let err = open(&db, Some(ring(&old, &[]))).await.unwrap_err().to_string();
    assert!(err.contains(new.id()) && err.contains("not configured"), "{err}");
    // A store without keys (`sundial migrate`) opens, and refuses to read a sealed secret.
    let keyless = open(&db, None).await.unwrap();
    let err = keyless.app_by_id(&a.id).await.unwrap_err().to_string();
    assert!(err.contains("without a secret key"), "{err}");
    keyless.close().await;
    db.cleanup().await;
}

#[cfg(unix)]
pub mod sqlite_files {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    use sundial_store::{ConnectOptions, SqlStore};

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).permissions().mode() & 0o777
    }

    /// A new data directory is `0700`; the database file, its WAL, shared-memory and lock
    /// files are `0600` whatever the umask.
    #[tokio::test]
    async fn a_new_database_and_its_directory_are_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data").join("nested");
        let db = dir.join("sundial.db");
        let store = SqlStore::open(&ConnectOptions::new(format!("sqlite://{}", db.display())), 0).await.unwrap();
        assert_eq!(mode(&dir), 0o700, "data directory");
        assert_eq!(mode(&tmp.path().join("data")), 0o700, "its new parent");
        for suffix in ["", "-wal", "-shm", ".lock"] {
            let f = dir.join(format!("sundial.db{suffix}"));
            assert_eq!(mode(&f), 0o600, "{}", f.display());
        }
        store.close().await;
    }

    /// A database file left `0644` (and its WAL `0664`) by an earlier release is set to
    /// `0600` when a store opens it.
    #[tokio::test]
    async fn an_existing_database_open_to_others_is_made_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("sundial.db");
        let url = format!("sqlite://{}", db.display());
        let store = SqlStore::open(&ConnectOptions::new(&url), 0).await.unwrap();
        store.close().await;
        drop(store);
        let wal = tmp.path().join("sundial.db-wal");
        std::fs::write(&wal, b"").unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::set_permissions(&wal, std::fs::Permissions::from_mode(0o664)).unwrap();
        let store = SqlStore::open(&ConnectOptions::new(&url), 0).await.unwrap();
        assert_eq!(mode(&db), 0o600);
        assert_eq!(mode(&wal), 0o600);
        store.close().await;
    }
}
