//! SIGTERM in the documented order, on the real binary: the node stops claiming, marks
//! itself `left` and hands back its undispatched claims first, while HTTP still serves;
//! then it drains open HTTP requests and in-flight deliveries within the grace, and exits 0.

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use sundial_core::time::rfc3339_utc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const OPERATOR_KEY: &str = "sk_shutdown_operator_key_for_the_sigterm_test_0123456789";

async fn node_state(pool: &sqlx::AnyPool, node_id: &str) -> String {
    sqlx::query_scalar("SELECT state FROM nodes WHERE id = ?").bind(node_id).fetch_one(pool).await.unwrap()
}

/// (state, owner_node) of a job's only run.
async fn run_of(pool: &sqlx::AnyPool, job_id: &str) -> Option<(String, Option<String>)> {
    sqlx::query_as("SELECT state, owner_node FROM runs WHERE job_id = ?")
        .bind(job_id)
        .fetch_optional(pool)
        .await
        .unwrap()
}

async fn wait_until<F: std::future::Future<Output = bool>>(limit: Duration, mut cond: impl FnMut() -> F) -> bool {
    let until = std::time::Instant::now() + limit;
    while std::time::Instant::now() < until {
        if cond().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_leaves_and_hands_back_first_then_drains_http_and_deliveries() {
    let (url, db_name) = sundial_store::testing::TestDb::mysql_empty_url().await;
    let _drop_db = DropDb { name: db_name, keep_if: None };
    let pool = db_pool(&url).await;
    let sink = Sink::start().await;
    sink.set_delay(Duration::from_secs(4));
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("node.log");
    let node = serve_async(
        &url,
        "node_sigterm",
        &[("SUNDIAL_ADMIN_KEY", OPERATOR_KEY), ("NO_COLOR", "1"), ("SUNDIAL_LOG", "info")],
        &log,
    )
    .await;
    let (key, _app, secret) = tenant_and_app(&node.base, OPERATOR_KEY, &sink.url).await;
    sink.set_secret(&secret);
    let job = |name: &str, at_ms: i64| json!({"name": name, "app": "sink", "handler": "h", "schedule": {"kind": "once", "at": rfc3339_utc(at_ms)}});
    let t0 = now_ms();
    let (s, a) = call(&node.base, reqwest::Method::POST, "/api/v1/jobs", &key, Some(job("a", t0 + 1_500))).await;
    assert_eq!(s, 201, "{a}");
    let (s, b) = call(&node.base, reqwest::Method::POST, "/api/v1/jobs", &key, Some(job("b", t0 + 5_000))).await;
    assert_eq!(s, 201, "{b}");
    let (a_id, b_id) = (a["id"].as_str().unwrap().to_string(), b["id"].as_str().unwrap().to_string());

    // A is delivered and held by the executor for 4 s; B, due at +5 s, is claimed by the node.
    assert!(wait_until(Duration::from_secs(5), || async { sink.deliveries().len() == 1 }).await, "A delivered");
    assert!(
        wait_until(Duration::from_secs(3), || async {
            run_of(&pool, &b_id).await.is_some_and(|(_, owner)| owner.as_deref() == Some("node_sigterm"))
        })
        .await,
        "B claimed by the node before SIGTERM: {:?}",
        run_of(&pool, &b_id).await
    );
    // An HTTP request still open when the signal comes (its body not sent yet).
    let addr = node.base.trim_start_matches("http://").to_string();
    let mut held = tokio::net::TcpStream::connect(&addr).await.unwrap();
    // A signed executor call: its handler reads the whole body before anything else.
    held.write_all(b"POST /api/v1/executors/register HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\n\r\n{\"name\"")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    signal(node.pid(), "TERM");
    // First: left, and B handed back, while the HTTP request is still open and A in flight.
    assert!(
        wait_until(Duration::from_secs(3), || async { node_state(&pool, "node_sigterm").await == "left" }).await,
        "the node marks itself left before draining HTTP; log:\n{}",
        tail(&log, 30)
    );
    // (`left` is written just before the hand-back: wait for it.)
    assert!(
        wait_until(Duration::from_secs(3), || async { run_of(&pool, &b_id).await == Some(("pending".into(), None)) })
            .await,
        "B handed back: {:?}; log:\n{}",
        run_of(&pool, &b_id).await,
        tail(&log, 30)
    );
    // B's instant passes during the drain: nothing claims or sends it.
    let b_due = t0 + 5_000;
    tokio::time::sleep(Duration::from_millis((b_due + 1_500 - now_ms()).max(0) as u64)).await;
    assert_eq!(sink.deliveries().len(), 1, "no new delivery after SIGTERM");
    assert_eq!(run_of(&pool, &b_id).await, Some(("pending".into(), None)), "B still pending, for another node");
    // A's delivery finished within the grace and was recorded.
    assert!(
        wait_until(Duration::from_secs(5), || async {
            run_of(&pool, &a_id).await.is_some_and(|(s, _)| s == "succeeded")
        })
        .await,
        "A's result recorded during the drain: {:?}",
        run_of(&pool, &a_id).await
    );
    // The open request is still served (the drain), then the node exits 0.
    held.write_all(b": \"x\"}").await.unwrap();
    held.write_all(b"").await.unwrap();
    let mut answer = vec![0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(5), held.read(&mut answer)).await.expect("an answer").unwrap();
    let status_line = String::from_utf8_lossy(&answer[..n]).lines().next().unwrap_or_default().to_string();
    assert!(status_line.starts_with("HTTP/1.1 401"), "the open request was answered: {status_line:?}");
    drop(held);
    let status = node.exit_status(Duration::from_secs(10)).await;
    assert!(status.success(), "exit 0: {status:?}");
}
