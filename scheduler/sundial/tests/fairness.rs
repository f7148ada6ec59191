//! One tenant cannot take delivery away from another (issue 26), on the real binary:
//! - a tenant whose executor accepts connections and never answers holds only its app's
//!   share of the node's delivery slots: another tenant's per-second job is still delivered
//!   on time, and the hung app's surplus attempts fail `saturated` (not sent) for its
//!   failure policy to decide;
//! - a tenant's herd of per-second cron jobs does not go before another tenant's job on
//!   the same second: at each instant tenants take turns, so the small tenant's fire leaves
//!   among the first of the second instead of after the whole herd (the benchmark row of
//!   docs/benchmarks.md measures its lateness against its lateness alone; here, on a shared
//!   test machine, its median position in the herd's second must be in the first half).
//!
//! Each runs on the embedded SQLite and on MariaDB.

mod common;

use std::time::Duration;

use common::*;
use reqwest::Method;
use serde_json::{Value, json};

const OPERATOR_KEY: &str = "sk_fairness_operator_key_for_the_tenant_tests_0123456789";

/// A tenant with one app whose one static endpoint is `url`: (admin key, app id, secret).
async fn tenant(base: &str, name: &str, url: &str) -> (String, String, String) {
    let (s, t) = call(base, Method::POST, "/api/v1/tenants", OPERATOR_KEY, Some(json!({"name": name}))).await;
    assert_eq!(s, 201, "{t}");
    let key = t["admin_key"].as_str().unwrap().to_string();
    let (s, app) =
        call(base, Method::POST, "/api/v1/apps", &key, Some(json!({"name": name, "endpoints": [url]}))).await;
    assert_eq!(s, 201, "{app}");
    (key, app["id"].as_str().unwrap().to_string(), app["secret"].as_str().unwrap().to_string())
}

async fn create_jobs(base: &str, key: &str, app: &str, jobs: Vec<Value>) {
    let mut set = tokio::task::JoinSet::new();
    for (i, mut job) in jobs.into_iter().enumerate() {
        job["app"] = json!(app);
        let (base, key) = (base.to_string(), key.to_string());
        set.spawn(async move {
            let (s, body) = call(&base, Method::POST, "/api/v1/jobs", &key, Some(job)).await;
            assert_eq!(s, 201, "job {i}: {body}");
        });
        while set.len() >= 8 {
            set.join_next().await.unwrap().unwrap();
        }
    }
    while let Some(r) = set.join_next().await {
        r.unwrap();
    }
}

/// An executor that accepts every connection, reads nothing and never answers.
async fn hung_endpoint() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            held.push(sock);
        }
    });
    (url, task)
}

async fn hung_executor_holds_only_its_apps_share(database_url: String) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("node.log");
    // 40 delivery slots: the hung app may hold 20 (half), its tenant 30.
    let envs = [("SUNDIAL_ADMIN_KEY", OPERATOR_KEY), ("SUNDIAL_MAX_INFLIGHT", "40"), ("NO_COLOR", "1")];
    let node = serve_async(&database_url, "node-fair", &envs, &log).await;
    let (hung_url, _hung) = hung_endpoint().await;
    let sink = Sink::start().await;
    let (key_a, app_a, _) = tenant(&node.base, "hung", &hung_url).await;
    let (key_b, app_b, secret_b) = tenant(&node.base, "small", &sink.url).await;
    sink.set_secret(&secret_b);
    // Tenant A: 60 jobs a second, each waiting up to 30 s for its hung executor.
    let a_jobs = (0..60)
        .map(|i| {
            json!({"name": format!("hung-{i}"), "handler": "h", "timeout_ms": 30_000,
                   "schedule": {"kind": "fixed_rate", "every_ms": 1000},
                   "failure": {"policy": "discard"}})
        })
        .collect();
    create_jobs(&node.base, &key_a, &app_a, a_jobs).await;
    // Let A's executor take every share it can before B's job exists.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let b_from = now_ms();
    create_jobs(
        &node.base,
        &key_b,
        &app_b,
        vec![json!({"name": "steady", "handler": "h", "schedule": {"kind": "fixed_rate", "every_ms": 1000}})],
    )
    .await;
    tokio::time::sleep(Duration::from_secs(12)).await;
    let b_to = now_ms() - 1_500;
    let got: Vec<Delivery> = sink.deliveries().into_iter().filter(|d| d.scheduled_ms <= b_to).collect();
    let late: Vec<i64> = got.iter().map(|d| d.received_ms - d.scheduled_ms).collect();
    let expected = ((b_to - b_from) / 1000) as usize;
    assert!(got.iter().all(|d| d.signature_ok));
    assert!(
        got.len() + 1 >= expected && expected >= 8,
        "tenant B got {} of about {expected} fires while tenant A's executor hung; log:\n{}",
        got.len(),
        tail(&log, 30)
    );
    let mut sorted = late.clone();
    sorted.sort_unstable();
    assert!(quantile(&sorted, 0.9) < 1_000, "tenant B's fires were late: {}", stats(&sorted));
    // A's surplus was not sent: failed `saturated`, for its failure policy (discard here).
    let (s, runs) = call(&node.base, Method::GET, "/api/v1/runs?state=failed&limit=200", &key_a, None).await;
    assert_eq!(s, 200, "{runs}");
    let saturated = runs["items"].as_array().unwrap().iter().filter(|r| r["reason"] == "saturated").count();
    assert!(saturated > 0, "no run of the hung app failed `saturated`: {runs}");
    let message = runs["items"].as_array().unwrap().iter().find(|r| r["reason"] == "saturated").unwrap()["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("max_inflight_per_app"), "{message}");
    node.sigterm(Duration::from_secs(40)).await;
}

async fn a_small_tenant_goes_among_the_first_of_a_herds_second(database_url: String) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("node.log");
    let envs = [("SUNDIAL_ADMIN_KEY", OPERATOR_KEY), ("NO_COLOR", "1")];
    let node = serve_async(&database_url, "node-herd", &envs, &log).await;
    // The small tenant's sink on a thread of its own: it records when its delivery arrived,
    // not when the test process got round to it behind the herd's 600 requests.
    let (herd_sink, small_sink) = (Sink::start().await, Sink::start_isolated());
    let (key_a, app_a, secret_a) = tenant(&node.base, "herd", &herd_sink.url).await;
    let (key_b, app_b, secret_b) = tenant(&node.base, "small", &small_sink.url).await;
    herd_sink.set_secret(&secret_a);
    small_sink.set_secret(&secret_b);
    const HERD: usize = 600;
    let every_second =
        |name: String| json!({"name": name, "handler": "h", "schedule": {"kind": "cron", "expression": "* * * * * *"}});
    create_jobs(&node.base, &key_a, &app_a, (0..HERD).map(|i| every_second(format!("herd-{i}"))).collect()).await;
    // The small tenant's job is created last: without turns it would go after the herd.
    create_jobs(&node.base, &key_b, &app_b, vec![every_second("mine".into())]).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let from = now_ms();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let to = now_ms() - 2_000;
    let herd = herd_sink.deliveries();
    let mut seconds = 0;
    let mut among_first = 0;
    let mut positions = Vec::new();
    for mine in small_sink.deliveries().iter().filter(|d| d.scheduled_ms >= from && d.scheduled_ms <= to) {
        let same: Vec<&Delivery> = herd.iter().filter(|d| d.scheduled_ms == mine.scheduled_ms).collect();
        if same.len() < HERD / 2 {
            continue; // the herd's second was mostly not delivered (expired): nothing to compare
        }
        seconds += 1;
        let before = same.iter().filter(|d| d.received_ms < mine.received_ms).count();
        positions.push(before);
        if before * 2 < same.len() {
            among_first += 1;
        }
    }
    assert!(seconds >= 5, "only {seconds} seconds of herd and small tenant delivered; log:\n{}", tail(&log, 30));
    // Which of 600 simultaneous requests a receiver on a loaded 2-core test machine sees
    // first is noisy; the median second must still see it in the first half of the herd
    // (without turns it was popped, committed and sent last).
    positions.sort_unstable();
    let median = positions[positions.len() / 2];
    assert!(
        median * 2 < HERD,
        "the small tenant's fire came after half of the herd's second in most seconds (before it: {positions:?}; \
         before half in {among_first} of {seconds})"
    );
    node.sigterm(Duration::from_secs(40)).await;
}

fn sqlite_url(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}", dir.path().join("sundial.db").display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_executor_holds_only_its_apps_share_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    hung_executor_holds_only_its_apps_share(sqlite_url(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_executor_holds_only_its_apps_share_on_mariadb() {
    let (url, db_name) = sundial_store::testing::TestDb::mysql_empty_url().await;
    let _drop_db = DropDb { name: db_name, keep_if: None };
    hung_executor_holds_only_its_apps_share(url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_tenant_goes_among_the_first_of_a_herds_second_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    a_small_tenant_goes_among_the_first_of_a_herds_second(sqlite_url(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_tenant_goes_among_the_first_of_a_herds_second_on_mariadb() {
    let (url, db_name) = sundial_store::testing::TestDb::mysql_empty_url().await;
    let _drop_db = DropDb { name: db_name, keep_if: None };
    a_small_tenant_goes_among_the_first_of_a_herds_second(url).await;
}
