//! Secrets at rest on the embedded default (issue 26, finding 7), on the real binary:
//! `sundial serve` on SQLite generates its secret key beside the data; an app created and
//! rotated through the API leaves no `whsec_` in the database file or its WAL; the data
//! directory is `0700`, the database, WAL, shared-memory and key files `0600`; signed
//! deliveries keep flowing. Then key rotation: a key file with a new key first and the old
//! one after seals everything under the new key on start, `sundial rekey` moves to a third
//! key, and a node given only a key the rows are not under refuses to start, naming it.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use common::*;
use reqwest::Method;
use serde_json::json;
use sqlx::Row;
use sundial_store::SecretKey;
use tokio::time::Instant;

const OPERATOR_KEY: &str = "sk_secrets_operator_key_for_the_secrets_test_0123456789";

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).permissions().mode() & 0o777
}

fn holds(p: &Path, needle: &[u8]) -> bool {
    std::fs::read(p).map(|b| b.windows(needle.len()).any(|w| w == needle)).unwrap_or(false)
}

/// The apps' stored secret columns (read-only: WAL readers do not block the node).
async fn stored_secrets(db: &Path) -> Vec<String> {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let mut c = sqlx::AnyConnection::connect(&format!("sqlite://{}?mode=ro", db.display())).await.unwrap();
    let rows = sqlx::query("SELECT secret, previous_secret FROM apps").fetch_all(&mut c).await.unwrap();
    let _ = c.close().await;
    rows.iter()
        .flat_map(|r| [r.try_get::<String, _>(0).ok(), r.try_get::<Option<String>, _>(1).ok().flatten()])
        .flatten()
        .collect()
}

/// A key file (mode 0600) holding `keys`, the current one first.
fn key_file(path: &Path, keys: &[&SecretKey]) {
    let text: Vec<String> = keys.iter().map(|k| k.to_base64()).collect();
    std::fs::write(path, text.join("\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// The first key of a key file.
fn first_key(path: &Path) -> SecretKey {
    let text = std::fs::read_to_string(path).unwrap();
    let line = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')).unwrap();
    SecretKey::parse(line).unwrap()
}

async fn signed_deliveries_flow(sink: &Sink, after: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ok = sink.deliveries().iter().skip(after).filter(|d| d.signature_ok).count();
        if ok >= 2 {
            return;
        }
        assert!(Instant::now() < deadline, "no signed deliveries: {:?}", sink.deliveries());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_secrets_are_sealed_and_the_data_files_private_on_the_embedded_database() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let db = data.join("sundial.db");
    let url = format!("sqlite://{}", db.display());
    let log = tmp.path().join("node.log");
    let envs = [("SUNDIAL_ADMIN_KEY", OPERATOR_KEY), ("SUNDIAL_LOG", "info")];
    let node = serve_async(&url, "node-s", &envs, &log).await;

    let sink = Sink::start().await;
    let (key, app_id, first_secret) = tenant_and_app(&node.base, OPERATOR_KEY, &sink.url).await;
    let (s, rotated) =
        call(&node.base, Method::POST, &format!("/api/v1/apps/{app_id}/rotate-secret"), &key, None).await;
    assert_eq!(s, 200, "{rotated}");
    let secret = rotated["secret"].as_str().unwrap().to_string();
    assert_ne!(secret, first_secret);
    sink.set_secret(&secret);
    let (s, job) = call(
        &node.base,
        Method::POST,
        "/api/v1/jobs",
        &key,
        Some(json!({"name": "tick", "app": "sink", "handler": "tick", "schedule": {"kind": "fixed_rate", "every_ms": 1000}})),
    )
    .await;
    assert_eq!(s, 201, "{job}");
    signed_deliveries_flow(&sink, 0).await;

    // The files, while the node runs.
    let key_path = data.join("secret.key");
    assert_eq!(mode(&data), 0o700, "data directory");
    for f in [db.clone(), data.join("sundial.db-wal"), data.join("sundial.db-shm"), key_path.clone()] {
        assert_eq!(mode(&f), 0o600, "{}", f.display());
    }
    for f in [db.clone(), data.join("sundial.db-wal")] {
        assert!(!holds(&f, b"whsec_"), "a plain-text app secret in {}", f.display());
    }
    let first = first_key(&key_path);
    let stored = stored_secrets(&db).await;
    assert_eq!(stored.len(), 2, "the secret and the previous one");
    for v in &stored {
        assert!(v.starts_with(&format!("enc:v1:{}:", first.id())), "{v}");
    }
    let log_text = std::fs::read_to_string(&log).unwrap();
    for s in [&first_secret, &secret, &first.to_base64()] {
        assert!(!log_text.contains(s.as_str()), "a secret in the log");
    }
    assert_eq!(node.sigterm(Duration::from_secs(30)).await.code(), Some(0));
    for f in [db.clone(), data.join("sundial.db-wal")] {
        assert!(!holds(&f, b"whsec_"), "a plain-text app secret in {} after shutdown", f.display());
    }

    // Rotation: the new key first, the old one after it; the node seals everything anew.
    let second = SecretKey::generate();
    let keys = tmp.path().join("keys");
    key_file(&keys, &[&second, &first]);
    let keys_env = keys.display().to_string();
    let envs2 = [("SUNDIAL_ADMIN_KEY", OPERATOR_KEY), ("SUNDIAL_SECRET_KEY_FILE", keys_env.as_str())];
    let node = serve_async(&url, "node-s", &envs2, &log).await;
    for v in stored_secrets(&db).await {
        assert!(v.starts_with(&format!("enc:v1:{}:", second.id())), "{v}");
    }
    let before = sink.deliveries().len();
    signed_deliveries_flow(&sink, before).await;
    assert_eq!(node.sigterm(Duration::from_secs(30)).await.code(), Some(0));

    // `sundial rekey` to a third key.
    let third = SecretKey::generate();
    key_file(&keys, &[&third, &second]);
    let out = sundial().args(["rekey", "--database-url", &url, "--secret-key-file", &keys_env]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(third.id()) && stdout.contains("2 under a previous key"), "{stdout}");
    for v in stored_secrets(&db).await {
        assert!(v.starts_with(&format!("enc:v1:{}:", third.id())), "{v}");
    }

    // The first key alone (the generated file, no setting): refused, naming the key id it lacks.
    let out = sundial().args(["serve", "--database-url", &url, "--listen", "127.0.0.1:0"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains(third.id()) && stderr.contains("not configured"), "{stderr}");

    // A key file open to other users is refused.
    std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = sundial().args(["serve", "--database-url", &url, "--listen", "127.0.0.1:0"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("chmod 600"), "{stderr}");
}
