//! The database outage (issue 4): one real `sundial serve` on a private, throwaway
//! MariaDB (its own data directory and port, never the shared server), a sink
//! executor and a per-second job with misfire `fire_once`. The database is stopped
//! (SIGTERM) for 30 s and started again on the same data directory and port:
//! - meanwhile the node stays up, `/healthz` answers 200 and `/readyz` 503, and it
//!   delivers nothing it could not commit (only attempts committed before the outage);
//! - after the restart deliveries resume by themselves within 20 s;
//! - the fires missed during the outage follow `fire_once`: the earliest ones
//!   `expired`, then one late fire, then fires that were late by less than the misfire
//!   threshold when the database came back; each delivered once, none doubled.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use common::*;
use reqwest::Method;
use serde_json::json;
use tokio::time::Instant;

const OPERATOR_KEY: &str = "sk_outage_operator_key_for_the_database_test_0123456789";
const OUTAGE: Duration = Duration::from_secs(30);
const THRESHOLD_MS: i64 = 5_000; // the default misfire threshold

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_rides_out_a_database_outage_and_applies_fire_once_to_the_missed_fires() {
    let test_start = Instant::now();
    let mut db = PrivateMariaDb::install(&[]);
    db.start().await;
    db.execute("CREATE DATABASE sundial CHARACTER SET utf8mb4 COLLATE utf8mb4_bin").await;
    let url = db.url("sundial");

    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("node.log");
    let sink = Sink::start().await;
    let envs = [("SUNDIAL_ADMIN_KEY", OPERATOR_KEY), ("SUNDIAL_LOG", "warn"), ("NO_COLOR", "1")];
    let mut node = serve_async(&url, "node-o", &envs, &log).await;
    let (key, _app, secret) = tenant_and_app(&node.base, OPERATOR_KEY, &sink.url).await;
    sink.set_secret(&secret);
    let (s, job) = call(
        &node.base,
        Method::POST,
        "/api/v1/jobs",
        &key,
        Some(json!({
            "name": "every-second", "app": "sink", "handler": "outage.tick",
            "schedule": {"kind": "fixed_rate", "every_ms": 1000},
            "misfire": {"policy": "fire_once"},
            "timeout_ms": 5000,
        })),
    )
    .await;
    assert_eq!(s, 201, "{job}");
    let job_id = job["id"].as_str().unwrap().to_string();
    let anchor = sundial_core::time::parse_rfc3339("anchor", job["schedule"]["anchor"].as_str().unwrap()).unwrap();

    // Deliveries flow.
    let flowing = Instant::now() + Duration::from_secs(20);
    while sink.deliveries().len() < 3 {
        assert!(Instant::now() < flowing, "no deliveries before the outage; log:\n{}", tail(&log, 30));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The outage: SIGTERM mariadbd, 30 s down.
    let stop_ms = now_ms();
    db.stop().await;
    let down_ms = now_ms();
    let (health, h1) = probe(&node.base, "/healthz", Duration::from_millis(500), Duration::from_secs(3), stop_ms);
    let (ready, h2) = probe(&node.base, "/readyz", Duration::from_millis(500), Duration::from_secs(15), stop_ms);
    let mut died = None;
    let outage_end = Instant::now() + OUTAGE.saturating_sub(Duration::from_millis((down_ms - stop_ms) as u64));
    while Instant::now() < outage_end {
        if !node.alive() {
            died = Some(now_ms() - stop_ms);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(died.is_none(), "the node exited {} ms into the outage; log:\n{}", died.unwrap_or(0), tail(&log, 40));
    h1.abort();
    h2.abort();
    let health = health.lock().unwrap().clone();
    let ready = ready.lock().unwrap().clone();

    // The database comes back on the same data directory and port.
    let restart_ms = now_ms();
    db.start().await;
    let up_ms = now_ms();
    let resume_deadline = Instant::now() + Duration::from_secs(20);
    let mut resumed_ms = None;
    while Instant::now() < resume_deadline {
        if let Some(d) = sink.deliveries().iter().find(|d| d.received_ms > up_ms) {
            resumed_ms = Some(d.received_ms - up_ms);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Let the missed fires settle: every fire of the job scheduled before the restart has a
    // terminal run (≤ 45 s: claims held in the node's timer when the database went away come
    // back with their lease). A per-second job's run rows are written when each fire is
    // dispatched (or expired), so a fire with no row yet is open too.
    let pool = db_pool(&url).await;
    let settle = Instant::now();
    let mut open = Vec::new();
    while settle.elapsed() < Duration::from_secs(45) {
        let mine: Vec<RunRow> = runs(&pool).await.into_iter().filter(|r| r.job_id == job_id).collect();
        let done: HashSet<i64> = mine.iter().filter(|r| terminal(&r.state)).map(|r| r.scheduled_ms).collect();
        open = (0..)
            .map(|k| anchor + k * 1_000)
            .take_while(|at| *at < up_ms)
            .filter(|at| !done.contains(at))
            .map(|at| {
                let row = mine.iter().find(|r| r.scheduled_ms == at);
                format!(
                    "fire at {at} (stop + {} ms): {}",
                    at - stop_ms,
                    row.map_or("no run".into(), |r| format!("{r:?}"))
                )
            })
            .collect::<Vec<_>>();
        if open.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let ready_after = reqwest::get(format!("{}/readyz", node.base)).await.map(|r| r.status().as_u16()).unwrap_or(0);
    let node_log = node.log.clone();
    let status = node.sigterm(Duration::from_secs(40)).await;
    let all_runs: Vec<RunRow> = runs(&pool).await.into_iter().filter(|r| r.job_id == job_id).collect();
    let all_attempts = attempts(&pool).await;
    pool.close().await;
    db.stop().await;

    // ---- what happened ----
    let mut bad = Findings::default();
    bad.check(
        "node exit status after SIGTERM is not 0",
        if status.success() { vec![] } else { vec![format!("{status:?}")] },
    );
    bad.check(
        "/healthz did not answer 200 during the outage",
        health.iter().filter(|p| p.1 != 200).map(|p| format!("{p:?} (t ms, status, latency ms)")).collect(),
    );
    bad.check(
        "/readyz did not answer 503 during the outage (after its first 2 s)",
        ready
            .iter()
            .filter(|p| p.0 > 2_000 && p.1 != 503)
            .map(|p| format!("{p:?} (t ms, status, latency ms)"))
            .collect(),
    );
    bad.check(
        "/readyz is not 200 after the database is back",
        if ready_after == 200 { vec![] } else { vec![ready_after.to_string()] },
    );
    bad.check(
        "deliveries did not resume within 20 s of the database restart",
        if resumed_ms.is_some() { vec![] } else { vec![format!("log:\n{}", tail(&node_log, 20))] },
    );
    bad.check("fires scheduled before the restart still without a terminal run 45 s later", open.clone());

    let deliveries = sink.deliveries();
    let attempt_started: HashMap<(&str, i64), i64> =
        all_attempts.iter().map(|a| ((a.run_id.as_str(), a.attempt), a.started_ms)).collect();
    // Delivered while the database was down: only attempts committed before it went.
    let during: Vec<&Delivery> =
        deliveries.iter().filter(|d| d.received_ms > stop_ms && d.received_ms < up_ms).collect();
    bad.check(
        "deliveries during the outage of attempts not committed before it",
        during
            .iter()
            .filter(|d| attempt_started.get(&(d.run_id.as_str(), d.attempt)).is_none_or(|s| *s >= stop_ms))
            .map(|d| format!("{d:?}"))
            .collect(),
    );
    bad.check(
        "deliveries with a bad signature",
        deliveries.iter().filter(|d| !d.signature_ok).map(|d| format!("{d:?}")).collect(),
    );
    let mut per_webhook: HashMap<&str, usize> = HashMap::new();
    let mut per_run: HashMap<&str, HashSet<&str>> = HashMap::new();
    for d in &deliveries {
        *per_webhook.entry(&d.webhook_id).or_default() += 1;
        per_run.entry(&d.run_id).or_default().insert(&d.webhook_id);
    }
    bad.check(
        "webhook-ids delivered more than once (no node died)",
        per_webhook.iter().filter(|(_, n)| **n > 1).map(|(w, n)| format!("{w} × {n}")).collect(),
    );
    bad.check(
        "runs delivered under more than one webhook-id (a second attempt)",
        per_run.iter().filter(|(_, w)| w.len() > 1).map(|(r, w)| format!("{r}: {w:?}")).collect(),
    );
    let mut keys = HashSet::new();
    bad.check(
        "several runs for one fire key",
        all_runs.iter().filter(|r| !keys.insert(r.fire_key.clone())).map(|r| format!("{r:?}")).collect(),
    );

    // The missed fires: scheduled while the database was down (from the stop to the restart).
    let first_delivery: HashMap<&str, i64> = deliveries.iter().fold(HashMap::new(), |mut m, d| {
        let e = m.entry(d.run_id.as_str()).or_insert(d.received_ms);
        *e = (*e).min(d.received_ms);
        m
    });
    let missed: Vec<&RunRow> =
        all_runs.iter().filter(|r| r.scheduled_ms >= stop_ms && r.scheduled_ms < up_ms).collect();
    let mut states: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &missed {
        *states.entry(r.state.as_str()).or_default() += 1;
    }
    let expired: Vec<&&RunRow> = missed.iter().filter(|r| r.state == "expired").collect();
    let fired: Vec<&&RunRow> = missed.iter().filter(|r| r.state == "succeeded").collect();
    bad.check(
        "missed fires in a state other than expired or succeeded",
        missed
            .iter()
            .filter(|r| terminal(&r.state) && r.state != "expired" && r.state != "succeeded")
            .map(|r| format!("{r:?}"))
            .collect(),
    );
    // fire_once: every expired fire comes before every fired one.
    let last_expired = expired.iter().map(|r| r.scheduled_ms).max().unwrap_or(i64::MIN);
    bad.check(
        "fired (succeeded) missed fires scheduled before an expired one: fire_once fired more than the latest",
        fired
            .iter()
            .filter(|r| r.scheduled_ms < last_expired)
            .map(|r| format!("{r:?} (last expired at {last_expired})"))
            .collect(),
    );
    // When the database is back (at `up_ms`, the node sees it at some t ≥ up_ms), fire_once
    // fires the latest fire that is later than the threshold and expires the older ones;
    // fires within the threshold fire normally. So: nothing scheduled more than
    // threshold + one period before `up_ms` is fired, and the earliest fired one is the
    // collapsed late fire (delivered beyond the threshold). The later ones were on time
    // when claimed; a serial job delivers them one by one, so their delivery lateness may
    // still exceed the threshold: that is not a misfire.
    let late_fires: Vec<(i64, i64)> = fired
        .iter()
        .filter(|r| r.scheduled_ms < up_ms - THRESHOLD_MS - 1_000)
        .map(|r| (r.scheduled_ms - stop_ms, first_delivery.get(r.id.as_str()).map_or(-1, |t| t - r.scheduled_ms)))
        .collect();
    bad.check(
        "missed fires older than threshold + one period when the database came back, yet fired (fire_once fires only the latest)",
        late_fires.iter().map(|f| format!("{f:?} (scheduled − stop, delivery lateness ms)")).collect(),
    );
    let collapsed = fired
        .iter()
        .min_by_key(|r| r.scheduled_ms)
        .map(|r| (r.scheduled_ms - stop_ms, first_delivery.get(r.id.as_str()).map_or(-1, |t| t - r.scheduled_ms)));
    bad.check(
        "the earliest fired missed fire was not delivered beyond the threshold (no collapsed late fire)",
        match collapsed {
            Some((_, late)) if late > THRESHOLD_MS => vec![],
            other => vec![format!("{other:?} (scheduled − stop, delivery lateness ms)")],
        },
    );
    bad.check("no missed fire was expired", if expired.is_empty() { vec![format!("{states:?}")] } else { vec![] });
    bad.check("no missed fire was fired", if fired.is_empty() { vec![format!("{states:?}")] } else { vec![] });

    // Each missed fire: (scheduled − stop, state, delivered − scheduled, updated − scheduled) in ms.
    let missed_detail: Vec<String> = missed
        .iter()
        .map(|r| {
            let late = first_delivery.get(r.id.as_str()).map(|t| (t - r.scheduled_ms).to_string());
            format!(
                "{}:{}:{}:{}",
                r.scheduled_ms - stop_ms,
                &r.state[..3],
                late.unwrap_or_else(|| "-".into()),
                r.updated_ms - r.scheduled_ms
            )
        })
        .collect();
    let lat = |v: &[(i64, u16, i64)]| v.iter().map(|p| p.2).max().unwrap_or(0);
    let mut during_sorted: Vec<i64> = during.iter().map(|d| d.received_ms - stop_ms).collect();
    during_sorted.sort_unstable();
    println!(
        "\n==== outage summary ====\n\
         database down             {} ms (stop → restart), back up after {} ms more\n\
         node                      alive throughout; SIGTERM exit {status:?}\n\
         /healthz during outage    {} probes, statuses {:?}, max latency {} ms\n\
         /readyz during outage     {} probes, statuses {:?}, max latency {} ms\n\
         deliveries during outage  {} (ms after the stop: {during_sorted:?})\n\
         first delivery after up   {:?} ms\n\
         missed fires              {} scheduled while down: {states:?}\n\
         collapsed late fire       {collapsed:?} (scheduled − stop, delivery lateness ms)\n\
         missed fires in detail    (scheduled − stop : state : delivered − scheduled : updated − scheduled, ms)\n    {}\n\
         deliveries in all         {} ({} distinct webhook-ids)\n\
         test                      {:.1} s\n\
         node log digest:\n{}",
        restart_ms - stop_ms,
        up_ms - restart_ms,
        health.len(),
        health.iter().map(|p| p.1).collect::<HashSet<_>>(),
        lat(&health),
        ready.len(),
        ready.iter().map(|p| p.1).collect::<HashSet<_>>(),
        lat(&ready),
        during.len(),
        resumed_ms,
        missed.len(),
        missed_detail.join(" "),
        deliveries.len(),
        per_webhook.len(),
        test_start.elapsed().as_secs_f64(),
        log_digest(&[node_log], 10),
    );
    assert!(bad.is_empty(), "database outage guarantees violated:\n{}", bad.report());
}
