//! A node far behind because its database stalls: one real `sundial serve` with default
//! engine settings on a private, throwaway MariaDB (default durability), a
//! signature-checking sink executor, and `STALL_JOBS` (default 200) cron jobs firing
//! every second, all on the same second. After about 10 s of normal running the
//! `mariadbd` process is frozen with SIGSTOP for `STALL_SECS` (default 20) and thawed
//! with SIGCONT: every connection stays open and every query in flight just waits, so
//! the node ends up one stall behind with a backlog of overdue fires. The issue's
//! target is that such a node is on time again within 10 s of the database coming back,
//! by itself (measured on the release build by the benchmark); this test checks it on the
//! debug build with slack for a loaded 2-core CI machine (see `RECOVER_MS`):
//! - **on time again**: for the `SPAN_MS` (8 s) of fires from 20 s after the resume on,
//!   every job's every fire is delivered, once, and the p99 lateness (sink receive −
//!   `sundial-scheduled-at`) of those fires is ≤ 1,500 ms;
//! - **nothing lost**: every job's every second from its first fire to the end of that span
//!   is delivered or recorded in `runs` (`fire_key = 's:<ms>'`, terminal: `expired`, or
//!   inside an `expired` run's `expired_count`, or another final state); the unaccounted
//!   ones are listed;
//! - **exactly once**: no fire delivered under two run ids, no run under two webhook-ids,
//!   no webhook-id twice (one node, none dies: nothing is ever redelivered);
//! - **the misfire policies** (docs/runs.md, "Misfire"): a fire is *missed* when the node first
//!   finds it more than `threshold_ms` (5 s) late. Fires the node had read into its timer
//!   before the freeze (due within the claim window, 5 s, plus the insert-claim margin,
//!   3 s: `FOUND_AHEAD_MS`) were found on time and are delivered late whatever the
//!   policy. The fires from `stop + FOUND_AHEAD_MS` to `resume − threshold` are surely
//!   missed: `skip` records each `expired` and delivers none; `fire_once` (the default)
//!   delivers at most one of them and expires the rest; `fire_all` delivers every fire
//!   (20 s is well inside its 1 h catch-up window and its cap of 100);
//! - **it says so**: the node logs a rate-limited WARN containing "behind" (at least once,
//!   fewer than 30 lines over the whole test: not one per run);
//! - meanwhile the node stays up, `/healthz` answers 200 and `/readyz` 503 (within its
//!   2 s), and `/readyz` is 200 again within 10 s of the resume; SIGTERM exits 0.
//!
//! Every violated property is listed (count and examples) after a summary with the
//! lateness of every second around the stall. About 65 s; runs alone (its timings are not
//! other tests' noise). Longer manual runs: `STALL_JOBS`, `STALL_SECS` (the freeze),
//! `STALL_KEEP=1` (keep the node log), `STALL_LOG=<filter>` (the node's log level, default `info`).

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use common::*;
use reqwest::Method;
use serde_json::json;
use tokio::time::Instant;

const OPERATOR_KEY: &str = "sk_stall_operator_key_for_the_database_stall_test_0123456789";
const SEC: i64 = 1_000;
/// The default misfire threshold.
const THRESHOLD_MS: i64 = 5_000;
/// How far ahead of its instant the node may have read a fire into its timer: the claim
/// window (5 s) plus the insert-claim margin (clock-skew bound 2 s + insert commit 1 s).
const FOUND_AHEAD_MS: i64 = 5_000 + 2_000 + 1_000;
/// The on-time span starts this long after the resume. The target is 10 s, measured by
/// `sundial-bench --stall-db-at` on the release build (docs/benchmarks.md). This test runs the
/// debug build: on time again 3.6–8.7 s after the resume on a 2-core guest. It used to take
/// 24–39 s, every third second's fires a second late, because the dispatches that waited out
/// the stall raised the dispatch lead's estimate to 20 s and it decayed by 1/32 a batch: a lead
/// over a second checked each per-second `serial` job's next fire while its previous one was
/// still waiting for its instant, and held it back (`lead_sample` in `engine/src/lib.rs`). 20 s
/// keeps "on time again by itself" a hard check with room for a loaded CI machine.
const RECOVER_MS: i64 = 20_000;
/// The on-time span: fires scheduled in [resume + RECOVER_MS, + SPAN_MS).
const SPAN_MS: i64 = 8_000;
/// The p99 lateness bound in the on-time span (before the stall it is a few ms).
const P99_MS: i64 = 1_500;
/// Fewer "behind" WARN lines than this over the whole test (rate-limited, not per run).
const BEHIND_WARN_LINES_MAX: usize = 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Policy {
    /// The default (`misfire` left out).
    FireOnce,
    Skip,
    FireAll,
}

impl Policy {
    fn label(self) -> &'static str {
        match self {
            Policy::FireOnce => "fire_once",
            Policy::Skip => "skip",
            Policy::FireAll => "fire_all",
        }
    }
}

struct Plan {
    jobs: usize,
    skip_jobs: usize,
    fire_all_jobs: usize,
    pre_secs: u64,
    stall_secs: u64,
    keep: bool,
}

impl Plan {
    fn from_env() -> Plan {
        let jobs = env_or("STALL_JOBS", 200usize).max(3);
        let group = (jobs / 10).max(1);
        Plan {
            jobs,
            skip_jobs: group,
            fire_all_jobs: group,
            pre_secs: 10,
            stall_secs: env_or("STALL_SECS", 20u64).max(1),
            keep: std::env::var("STALL_KEEP").is_ok(),
        }
    }
}

fn ceil_sec(ms: i64) -> i64 {
    (ms + SEC - 1).div_euclid(SEC) * SEC
}

async fn sleep_until_ms(t: i64) {
    let d = t - now_ms();
    if d > 0 {
        tokio::time::sleep(Duration::from_millis(d as u64)).await;
    }
}

/// What became of one (job, second).
#[derive(Debug, Clone, PartialEq)]
enum Fate {
    Delivered,
    /// Its own `expired` run.
    Expired,
    /// Inside an `expired` run's `expired_count`.
    CountedExpired,
    /// Another terminal state (named).
    Other(String),
    /// A run not terminal by the end: unaccounted.
    Open(String),
    /// No run and no delivery: unaccounted.
    Missing,
}

impl Fate {
    fn accounted(&self) -> bool {
        !matches!(self, Fate::Open(_) | Fate::Missing)
    }
    fn expired(&self) -> bool {
        matches!(self, Fate::Expired | Fate::CountedExpired)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_far_behind_after_a_database_stall_is_on_time_again_by_itself_and_loses_nothing() {
    let plan = Plan::from_env();
    let test_start = Instant::now();
    let mut db = PrivateMariaDb::install(&[]);
    db.start().await;
    db.execute("CREATE DATABASE sundial CHARACTER SET utf8mb4 COLLATE utf8mb4_bin").await;
    let url = db.url("sundial");

    let logs_tmp = tempfile::tempdir().unwrap();
    let log = logs_tmp.path().join("node.log");
    let _logs_guard = if plan.keep {
        eprintln!("STALL_KEEP: node log {}", log.display());
        let _ = logs_tmp.keep();
        None
    } else {
        Some(logs_tmp)
    };
    let sink = Sink::start().await;
    // The default log level (info): the node's own lines are part of what it costs to catch up.
    // `STALL_LOG` overrides it when looking into a failure (for example `info,sundial_engine=debug`).
    let level = std::env::var("STALL_LOG").unwrap_or_else(|_| "info".to_string());
    let envs = [("SUNDIAL_ADMIN_KEY", OPERATOR_KEY), ("SUNDIAL_LOG", level.as_str()), ("NO_COLOR", "1")];
    let mut node = serve_async(&url, "node-s", &envs, &log).await;
    let (key, _app, secret) = tenant_and_app(&node.base, OPERATOR_KEY, &sink.url).await;
    sink.set_secret(&secret);

    // Jobs: every second (cron with seconds), all on the same second; defaults for the rest.
    let (skip_jobs, fire_all_jobs) = (plan.skip_jobs, plan.fire_all_jobs);
    let created = join_limited(
        16,
        (0..plan.jobs).map(|i| {
            let (api, key) = (node.base.clone(), key.clone());
            let policy = if i < skip_jobs {
                Policy::Skip
            } else if i < skip_jobs + fire_all_jobs {
                Policy::FireAll
            } else {
                Policy::FireOnce
            };
            async move {
                let mut body = json!({
                    "name": format!("{}-{i}", policy.label()), "app": "sink", "handler": "stall.tick",
                    "schedule": {"kind": "cron", "expression": "* * * * * *"},
                });
                if policy != Policy::FireOnce {
                    body["misfire"] = json!({"policy": policy.label()});
                }
                let (s, job) = call(&api, Method::POST, "/api/v1/jobs", &key, Some(body)).await;
                assert_eq!(s, 201, "{job}");
                // The default misfire policy is fire_once (docs/runs.md, "Misfire"; JobInput.misfire in the spec).
                assert_eq!(job["misfire"]["policy"], policy.label(), "{job}");
                (job["id"].as_str().unwrap().to_string(), policy)
            }
        }),
    )
    .await;
    let jobs: HashMap<String, Policy> = created.into_iter().collect();
    let setup_secs = test_start.elapsed().as_secs_f64();

    // Deliveries flow (every job once, about), then the normal run before the stall.
    let flowing = Instant::now() + Duration::from_secs(20);
    while sink.count() < plan.jobs {
        assert!(Instant::now() < flowing, "deliveries did not start; log:\n{}", tail(&log, 30));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(plan.pre_secs)).await;

    // The stall: mariadbd frozen, every connection open.
    let stop_ms = now_ms();
    db.pause();
    let (health, h1) = probe(&node.base, "/healthz", Duration::from_secs(1), Duration::from_secs(3), stop_ms);
    let (ready, h2) = probe(&node.base, "/readyz", Duration::from_secs(2), Duration::from_secs(5), stop_ms);
    let mut died = None;
    while now_ms() < stop_ms + plan.stall_secs as i64 * SEC {
        if !node.alive() {
            died = Some(now_ms() - stop_ms);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let resume_ms = now_ms();
    db.resume();
    assert!(died.is_none(), "the node exited {} ms into the stall; log:\n{}", died.unwrap_or(0), tail(&log, 40));

    // The on-time span, then its fires' last deliveries (later than the p99 bound is late
    // anyway), then every run due before its end terminal (bounded).
    let span_start = ceil_sec(resume_ms + RECOVER_MS);
    let span_end = span_start + SPAN_MS;
    sleep_until_ms(resume_ms + RECOVER_MS).await;
    h1.abort();
    h2.abort();
    let health = health.lock().unwrap().clone();
    let ready = ready.lock().unwrap().clone();
    sleep_until_ms(span_end + 2 * P99_MS).await;
    let node_alive_after = node.alive();
    let pool = db_pool(&url).await;
    let settle = Instant::now();
    let mut open = Vec::new();
    while settle.elapsed() < Duration::from_secs(15) {
        open = open_schedule_runs(&pool, span_end).await;
        if open.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let settle_secs = settle.elapsed().as_secs_f64();
    let ready_after = reqwest::get(format!("{}/readyz", node.base)).await.map(|r| r.status().as_u16()).unwrap_or(0);

    // SIGTERM: exit 0 (bounded here, so a node that does not stop still gets its report).
    signal(node.pid(), "TERM");
    let term_deadline = Instant::now() + Duration::from_secs(40);
    let exit = loop {
        if let Some(s) = node.child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > term_deadline {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let node_log = node.log.clone();
    drop(node); // SIGKILL if it is still there
    let all_runs: Vec<RunRow> =
        schedule_runs_before(&pool, span_end).await.into_iter().filter(|r| jobs.contains_key(&r.job_id)).collect();
    let first_fire: HashMap<String, i64> = {
        use sqlx::Row;
        sqlx::query("SELECT id, updated_at_ms FROM jobs")
            .fetch_all(&pool)
            .await
            .expect("read jobs")
            .iter()
            // Generation starts after `updated_at_ms - 1`: the first fire is the first whole second from it.
            .map(|r| (r.get::<String, _>("id"), ceil_sec(r.get::<i64, _>("updated_at_ms"))))
            .collect()
    };
    pool.close().await;
    db.stop().await;
    let all = sink.all();
    let deliveries = sink.deliveries();

    // ---- what happened ----
    let mut bad = Findings::default();
    bad.check(
        "node exit after SIGTERM is not 0 (within 40 s)",
        match exit {
            Some(s) if s.success() => vec![],
            other => vec![format!("{other:?}; log:\n{}", tail(&node_log, 20))],
        },
    );
    bad.check("the node died after the stall", if node_alive_after { vec![] } else { vec![tail(&node_log, 20)] });
    bad.check(
        &format!("schedule runs due before the span's end still not terminal {settle_secs:.0} s later"),
        open.iter().map(|r| format!("{r:?}")).collect(),
    );
    bad.check(
        "requests failing signature verification",
        all.iter().filter(|d| !d.signature_ok).map(|d| format!("{d:?}")).collect(),
    );
    let stall_ms = resume_ms - stop_ms;
    bad.check(
        "/healthz did not answer 200 during the stall",
        health.iter().filter(|p| p.1 != 200).map(|p| format!("{p:?} (t ms, status, latency ms)")).collect(),
    );
    bad.check(
        "/readyz did not answer 503 within 3 s during the stall (probes sent from 3 s in to 3 s before the resume)",
        ready
            .iter()
            .filter(|p| p.0 >= 3_000 && p.0 + 3_000 <= stall_ms && (p.1 != 503 || p.2 > 3_000))
            .map(|p| format!("{p:?} (t ms, status, latency ms)"))
            .collect(),
    );
    let ready_again = ready.iter().find(|p| p.0 >= stall_ms && p.1 == 200).map(|p| p.0 - stall_ms);
    bad.check(
        "/readyz not 200 again within 10 s of the resume, or not 200 at the end",
        if ready_again.is_some() && ready_after == 200 {
            vec![]
        } else {
            vec![format!(
                "after the resume: {:?} (t − resume ms, status, latency ms); at the end: {ready_after}",
                ready.iter().filter(|p| p.0 >= stall_ms).map(|p| (p.0 - stall_ms, p.1, p.2)).collect::<Vec<_>>()
            )]
        },
    );

    // The database: one run per fire, on the grid, under its fire key.
    let mut per_key: HashMap<(&str, &str), usize> = HashMap::new();
    for r in &all_runs {
        *per_key.entry((&r.job_id, &r.fire_key)).or_default() += 1;
    }
    bad.check(
        "several runs for one (job, fire key)",
        per_key.iter().filter(|(_, n)| **n > 1).map(|(k, n)| format!("{k:?} × {n}")).collect(),
    );
    bad.check(
        "schedule runs off the per-second grid or with a wrong fire key",
        all_runs
            .iter()
            .filter(|r| r.scheduled_ms % SEC != 0 || r.fire_key != format!("s:{}", r.scheduled_ms))
            .map(|r| format!("{r:?}"))
            .collect(),
    );
    let run_by_id: HashMap<&str, &RunRow> = all_runs.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut row_of: HashMap<(&str, i64), &RunRow> = HashMap::new();
    let mut counted: HashMap<&str, Vec<(i64, i64)>> = HashMap::new(); // job → [first, last] counted expiries
    for r in &all_runs {
        row_of.insert((r.job_id.as_str(), r.scheduled_ms), r);
        if r.state == "expired" && r.expired_count > 1 {
            // plan_runs: one `expired` run at the first dropped fire carries the count of
            // consecutive fires dropped (here one a second).
            counted.entry(&r.job_id).or_default().push((r.scheduled_ms, r.scheduled_ms + (r.expired_count - 1) * SEC));
        }
    }

    // The sink: each delivery is a known run; per (job, second) one run; per run one webhook-id.
    let mut by_fire: HashMap<(&str, i64), Vec<&Delivery>> = HashMap::new();
    let mut by_webhook: HashMap<&str, usize> = HashMap::new();
    let mut by_run: HashMap<&str, HashSet<&str>> = HashMap::new();
    let mut unknown = Vec::new();
    for d in &deliveries {
        *by_webhook.entry(&d.webhook_id).or_default() += 1;
        by_run.entry(&d.run_id).or_default().insert(&d.webhook_id);
        match run_by_id.get(d.run_id.as_str()) {
            Some(r) if r.scheduled_ms == d.scheduled_ms => {
                by_fire.entry((r.job_id.as_str(), r.scheduled_ms)).or_default().push(d)
            }
            Some(r) => unknown.push(format!("{d:?} vs {r:?}")),
            // Runs due from the span's end on were not read.
            None if d.scheduled_ms >= span_end => {}
            None => unknown.push(format!("{d:?}: no such schedule run of a test job")),
        }
    }
    bad.check("deliveries of unknown runs or with a wrong sundial-scheduled-at", unknown);
    bad.check(
        "fires delivered under more than one run id",
        by_fire
            .iter()
            .filter_map(|((j, s), ds)| {
                let ids: HashSet<&str> = ds.iter().map(|d| d.run_id.as_str()).collect();
                (ids.len() > 1).then(|| format!("job {j} at {} ms after the stop: runs {ids:?}", s - stop_ms))
            })
            .collect(),
    );
    bad.check(
        "runs delivered under more than one webhook-id (a second attempt although the sink answers 200)",
        by_run.iter().filter(|(_, w)| w.len() > 1).map(|(r, w)| format!("{r}: {w:?}")).collect(),
    );
    bad.check(
        "webhook-ids delivered more than once (one node that never died: nothing to redeliver)",
        by_webhook.iter().filter(|(_, n)| **n > 1).map(|(w, n)| format!("{w} × {n}")).collect(),
    );
    let lateness_of = |job: &str, s: i64| -> Option<i64> {
        by_fire.get(&(job, s)).map(|ds| ds.iter().map(|d| d.received_ms).min().unwrap() - s)
    };

    // Every (job, second) from the job's first fire to the span's end: its fate.
    let is_counted = |job: &str, s: i64| counted.get(job).is_some_and(|v| v.iter().any(|(a, b)| *a <= s && s <= *b));
    let mut fates: HashMap<(&str, i64), Fate> = HashMap::new();
    let (mut delivered_wrong_state, mut succeeded_undelivered) = (Vec::new(), Vec::new());
    for job in jobs.keys() {
        let first = *first_fire.get(job).expect("the job's row");
        for s in (first..span_end).step_by(SEC as usize) {
            let row = row_of.get(&(job.as_str(), s));
            let fate = if by_fire.contains_key(&(job.as_str(), s)) {
                if let Some(r) = row
                    && r.state != "succeeded"
                {
                    delivered_wrong_state.push(format!("{r:?}"));
                }
                Fate::Delivered
            } else {
                match row {
                    Some(r) if r.state == "expired" => Fate::Expired,
                    Some(r) if r.state == "succeeded" => {
                        succeeded_undelivered.push(format!("{r:?}"));
                        Fate::Other("succeeded (never delivered)".into())
                    }
                    Some(r) if terminal(&r.state) => Fate::Other(r.state.clone()),
                    Some(r) => Fate::Open(r.state.clone()),
                    None if is_counted(job, s) => Fate::CountedExpired,
                    None => Fate::Missing,
                }
            };
            fates.insert((job.as_str(), s), fate);
        }
    }
    bad.check("delivered fires whose run did not end succeeded", delivered_wrong_state);
    bad.check("succeeded runs never delivered", succeeded_undelivered);
    let mut unaccounted: Vec<(&str, i64, &Fate)> =
        fates.iter().filter(|(_, f)| !f.accounted()).map(|((j, s), f)| (*j, *s, f)).collect();
    unaccounted.sort_by_key(|u| (u.1, u.0));
    bad.check(
        "fires neither delivered nor recorded terminal (lost or stranded)",
        unaccounted.iter().map(|(j, s, f)| format!("job {j} at stop {:+} ms: {f:?}", s - stop_ms)).collect(),
    );

    // The misfire policies on the surely missed fires.
    let missed_from = stop_ms + FOUND_AHEAD_MS;
    let missed_to = resume_ms - THRESHOLD_MS; // exclusive
    let missed_secs: Vec<i64> = (ceil_sec(missed_from)..missed_to).step_by(SEC as usize).collect();
    let (mut skip_delivered, mut fire_once_many, mut not_expired, mut fire_all_missing) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut fire_once_late: BTreeMap<usize, usize> = BTreeMap::new(); // late deliveries → jobs
    for (job, policy) in &jobs {
        let job = job.as_str();
        match policy {
            Policy::Skip | Policy::FireOnce => {
                let delivered: Vec<i64> =
                    missed_secs.iter().copied().filter(|s| fates.get(&(job, *s)) == Some(&Fate::Delivered)).collect();
                for s in &missed_secs {
                    match fates.get(&(job, *s)) {
                        Some(f) if f.expired() || *f == Fate::Delivered => {}
                        f => not_expired.push(format!(
                            "{} job {job} at stop {:+} ms: {f:?}",
                            policy.label(),
                            s - stop_ms
                        )),
                    }
                }
                let late = |s: &i64| lateness_of(job, *s).unwrap_or(-1);
                if *policy == Policy::Skip && !delivered.is_empty() {
                    skip_delivered.push(format!(
                        "job {job}: {} delivered (stop + ms, lateness ms): {:?}",
                        delivered.len(),
                        delivered.iter().map(|s| (s - stop_ms, late(s))).collect::<Vec<_>>()
                    ));
                }
                if *policy == Policy::FireOnce {
                    *fire_once_late.entry(delivered.len()).or_default() += 1;
                    if delivered.len() > 1 {
                        fire_once_many.push(format!(
                            "job {job}: {} delivered (stop + ms, lateness ms): {:?}",
                            delivered.len(),
                            delivered.iter().map(|s| (s - stop_ms, late(s))).collect::<Vec<_>>()
                        ));
                    }
                }
            }
            Policy::FireAll => {
                let first = first_fire[job];
                for s in (first..span_end).step_by(SEC as usize) {
                    let f = &fates[&(job, s)];
                    if *f != Fate::Delivered {
                        fire_all_missing.push(format!("job {job} at stop {:+} ms: {f:?}", s - stop_ms));
                    }
                }
            }
        }
    }
    bad.check("skip: surely missed fires delivered (skip records them expired)", skip_delivered);
    bad.check("fire_once: more than one surely missed fire delivered (fires only the latest)", fire_once_many);
    bad.check("skip/fire_once: surely missed fires neither delivered nor expired", not_expired);
    bad.check("fire_all: fires not delivered (all are inside the 1 h catch-up window)", fire_all_missing);

    // On time again: the span's fires, all delivered, p99 lateness ≤ P99_MS.
    let span_secs: Vec<i64> = (span_start..span_end).step_by(SEC as usize).collect();
    let mut span_lateness = Vec::new();
    let mut span_undelivered = Vec::new();
    for s in &span_secs {
        for job in jobs.keys() {
            match lateness_of(job, *s) {
                Some(l) => span_lateness.push(l),
                None => span_undelivered.push(format!(
                    "job {job} at resume {:+} ms: {:?}",
                    s - resume_ms,
                    fates[&(job.as_str(), *s)]
                )),
            }
        }
    }
    let expected_span = span_secs.len() * jobs.len();
    // Undelivered fires count as infinitely late.
    let mut span_all: Vec<i64> = span_lateness.clone();
    span_all.extend(std::iter::repeat_n(i64::MAX, span_undelivered.len()));
    span_all.sort_unstable();
    let span_p99 = quantile(&span_all, 0.99);
    bad.check(
        &format!(
            "fires of the on-time span (resume + {} s … + {} s) not delivered",
            (span_start - resume_ms) as f64 / 1000.0,
            (span_end - resume_ms) as f64 / 1000.0
        ),
        span_undelivered.clone(),
    );
    bad.check(
        &format!("p99 lateness of the on-time span above {P99_MS} ms (undelivered count as infinite)"),
        if span_p99 <= P99_MS {
            vec![]
        } else {
            vec![format!(
                "p99 {} ({} of {expected_span} delivered: {})",
                fmt_ms(span_p99),
                span_lateness.len(),
                stats(&span_lateness)
            )]
        },
    );

    // The rate-limited "behind" warning.
    let log_text = std::fs::read_to_string(&node_log).unwrap_or_default();
    let behind_lines: Vec<&str> =
        log_text.lines().filter(|l| l.contains(" WARN ") && l.to_lowercase().contains("behind")).collect();
    bad.check(
        &format!(
            "WARN lines saying the node is behind: {} (want 1 to {})",
            behind_lines.len(),
            BEHIND_WARN_LINES_MAX - 1
        ),
        if (1..BEHIND_WARN_LINES_MAX).contains(&behind_lines.len()) {
            vec![]
        } else if behind_lines.is_empty() {
            vec![
                "none: a node a whole stall behind must say so (rate-limited, at WARN, with the word \"behind\")"
                    .into(),
            ]
        } else {
            behind_lines.iter().map(|l| l.to_string()).collect()
        },
    );
    let panics = log_text.lines().filter(|l| l.contains("panicked")).count();
    bad.check("node panics", (0..panics).map(|_| "see the node log digest".to_string()).collect());

    // ---- the summary: every second around the stall ----
    let mut rows = String::new();
    let mut on_time_from = None;
    let first_row =
        first_fire.values().copied().min().unwrap_or(stop_ms).max(stop_ms - (plan.pre_secs as i64 + 5) * SEC);
    for s in (first_row..span_end).step_by(SEC as usize) {
        let mut late: Vec<i64> = Vec::new();
        let (mut expired, mut other, mut unacc) = (0, 0, 0);
        for job in jobs.keys() {
            match fates.get(&(job.as_str(), s)) {
                Some(Fate::Delivered) => late.push(lateness_of(job, s).unwrap()),
                Some(f) if f.expired() => expired += 1,
                Some(f) if f.accounted() => other += 1,
                Some(_) => unacc += 1,
                None => {} // before the job's first fire
            }
        }
        late.sort_unstable();
        let p99 = quantile(&late, 0.99);
        let ok = late.len() == jobs.len() && p99 <= P99_MS;
        if s >= resume_ms {
            match (ok, on_time_from) {
                (true, None) => on_time_from = Some(s),
                (false, _) => on_time_from = None,
                _ => {}
            }
        }
        let mark = if s < stop_ms {
            "before"
        } else if s < missed_from {
            "in timer"
        } else if s < missed_to {
            "missed"
        } else if s < resume_ms {
            "<thresh"
        } else if s >= span_start {
            "SPAN"
        } else {
            "after"
        };
        rows.push_str(&format!(
            "  {:>+7.1} {:>+7.1}  {mark:<8} {:>4} {:>4} {:>4} {:>4}   {:>8} {:>8} {:>8}\n",
            (s - stop_ms) as f64 / 1000.0,
            (s - resume_ms) as f64 / 1000.0,
            late.len(),
            expired,
            other,
            unacc,
            fmt_ms(quantile(&late, 0.5)),
            fmt_ms(p99),
            fmt_ms(late.last().copied().unwrap_or(0)),
        ));
    }
    let mut fates_by_policy: BTreeMap<(&str, String), usize> = BTreeMap::new();
    for ((job, _), f) in &fates {
        let name = match f {
            Fate::Other(s) => format!("other {s}"),
            Fate::Open(s) => format!("open {s}"),
            f => format!("{f:?}"),
        };
        *fates_by_policy.entry((jobs[*job].label(), name)).or_default() += 1;
    }
    let fate_rows: String = fates_by_policy.iter().map(|((p, f), n)| format!("\n  {p:<9} {f:<16} {n:>7}")).collect();
    // Who was late after the resume: fires delivered more than P99_MS late, by policy and by
    // how many of the job's fires were (a few jobs far behind, or everyone a little).
    let mut late_after: BTreeMap<&str, (usize, HashSet<&str>)> = BTreeMap::new();
    for (job, s) in by_fire.keys() {
        if *s >= resume_ms && lateness_of(job, *s).is_some_and(|l| l > P99_MS) {
            let e = late_after.entry(jobs[*job].label()).or_default();
            e.0 += 1;
            e.1.insert(job);
        }
    }
    let late_rows: String =
        late_after.iter().map(|(p, (n, js))| format!("\n  {p:<9} {n:>5} fires of {:>4} jobs", js.len())).collect();
    let pre: Vec<i64> = by_fire
        .iter()
        .filter(|((_, s), _)| *s < stop_ms - SEC && *s >= stop_ms - 6 * SEC)
        .map(|((j, s), _)| lateness_of(j, *s).unwrap())
        .collect();
    let count = |needle: &str| log_text.lines().filter(|l| l.contains(needle)).count();
    println!(
        "\n==== stall summary ====\n\
         jobs                      {} (fire_once default {}, skip {}, fire_all {}), cron every second, all on the same second\n\
         setup / stall / test      {setup_secs:.1} s / {stall_ms} ms (SIGSTOP → SIGCONT) / {:.1} s; settle {settle_secs:.1} s\n\
         lateness before the stall {} (its last 5 s)\n\
         lateness in the span      {} (+ {} undelivered of {expected_span}); p99 incl. undelivered {}\n\
         on time again             {}\n\
         fire_once: surely missed fires delivered → jobs {fire_once_late:?} ({} surely missed seconds)\n\
         fates (job, second) from each first fire to the span's end:{fate_rows}\n\
         delivered more than {P99_MS} ms late from the resume on:{late_rows}\n\
         /readyz                   during the stall {:?}; 200 again {:?} ms after the resume; at the end {ready_after}\n\
         node log                  {} lines; WARN {}; 'behind' WARN {}; 'misfire: expired' {}\n\
         deliveries                {} ({} distinct webhook-ids)\n\
         per second (from the stop, from the resume; delivered / expired / other final / unaccounted of {}; lateness of the delivered):\n\
         \x20 t−stop  t−resume  phase   dlv  exp  oth  unac        p50      p99      max\n{rows}\
         node log digest (warnings and errors):\n{}",
        plan.jobs,
        plan.jobs - plan.skip_jobs - plan.fire_all_jobs,
        plan.skip_jobs,
        plan.fire_all_jobs,
        test_start.elapsed().as_secs_f64(),
        stats(&pre),
        stats(&span_lateness),
        span_undelivered.len(),
        fmt_ms(span_p99),
        match on_time_from {
            Some(s) => format!(
                "from the fires at resume {:+.1} s on (every job delivered, p99 ≤ {P99_MS} ms, to the span's end)",
                (s - resume_ms) as f64 / 1000.0
            ),
            None => "not by the span's end".into(),
        },
        missed_secs.len(),
        ready.iter().filter(|p| p.0 < stall_ms).map(|p| (p.1, p.2)).collect::<Vec<_>>(),
        ready_again,
        log_text.lines().count(),
        count(" WARN "),
        behind_lines.len(),
        count("misfire: expired"),
        deliveries.len(),
        by_webhook.len(),
        plan.jobs,
        log_digest(std::slice::from_ref(&node_log), 12),
    );
    assert!(bad.is_empty(), "database stall guarantees violated:\n{}", bad.report());
}

fn fmt_ms(v: i64) -> String {
    if v == i64::MAX { "never".into() } else { v.to_string() }
}
