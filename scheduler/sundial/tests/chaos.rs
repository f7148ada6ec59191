//! Cluster proof (issue 4): three real `sundial serve` nodes on one MariaDB database,
//! one of them SIGKILLed and restarted every few seconds, another SIGTERMed and
//! restarted once, while a few hundred per-second jobs fire into a signature-checking
//! sink in this process. Then, from the database (read-only SQL) and the sink: every
//! schedule fire is exactly one run, none is stranded or silently lost, every attempt
//! reached the executor effectively once, and the only raw redeliveries (same
//! `webhook-id`) are of deliveries in flight on a node at the moment it was SIGKILLed.
//! Every violated property is listed (count and examples) after a summary table.
//!
//! Chains too: one more per-second job is the root of a fan-out/fan-in chain (`ch-root` →
//! `ch-b0`, `ch-b1`, `ch-b2` → `ch-join`, which waits for all three). Every chain whose root
//! succeeded must have each branch run once (`p:<root run id>`) and the fan-in once
//! (`p:<chain id>`) with the three parents' outputs, all succeeded, however the branches
//! were spread over nodes being killed: no child missed, none doubled.
//!
//! Defaults are the CI version (~90 s when the cluster is healthy). `scripts/chaos` runs
//! longer ones: `CHAOS_JOBS` (jobs in all, default 200), `CHAOS_SKIP_JOBS` (how many of
//! them use misfire `skip`, default half), `CHAOS_SECS` (chaos duration, default 60),
//! `CHAOS_KILL_EVERY` (seconds between SIGKILLs, default 10; 0 = none),
//! `CHAOS_SETTLE_SECS` (default 40). For diagnosis: `CHAOS_SIGTERM=0`,
//! `CHAOS_BLOCK=discard_later`, `CHAOS_KEEP=1` (keep the database and node logs).
//!
//! Choices, and why:
//! - **Block strategy: the default `serial`.** With `discard_later`, a run orphaned in
//!   `dispatching` by a SIGKILL keeps counting as in flight until its lease runs out
//!   (timeout_ms + 30 s), and a killed node's queued claims come back together, so the
//!   job's next fires would be `skipped` by design, and "nothing lost" could only be
//!   checked modulo those. With `serial` they wait and are delivered late instead: every
//!   fire of a `fire_all` job must end `succeeded`, the stronger claim. A sync 200 sink
//!   keeps a serial job from lagging otherwise.
//! - **Misfire**: half the jobs `fire_all` (a killed node's queued claims come back late
//!   by ~25 s, inside the 1 h catch-up window: each must still be delivered, once), half
//!   `skip` in the same run (those late fires must be recorded `expired`, never dropped
//!   silently nor delivered); fires are counted per job from its anchor.
//! - **Restarts alternate the node id**: even-numbered kills restart the node under the
//!   same id (a StatefulSet-style restart: the new process carries the dead one's
//!   `owner_node`, so only the lease, not the id, may decide that the old claims are
//!   dead), odd-numbered ones under a fresh id (an autoscaled replacement: the old id's
//!   claims are never touched again by their owner and must be recovered by others).
//! - `timeout_ms: 5000` bounds how long a `dispatching` orphan waits (lease = timeout +
//!   30 s); the last SIGKILL happens one interval before the chaos ends so the settle
//!   phase fits in the test budget.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use common::*;
use reqwest::Method;
use serde_json::json;
use tokio::time::Instant;

const OPERATOR_KEY: &str = "sk_chaos_operator_key_for_the_cluster_test_0123456789";
/// The misfire threshold (default 5 s): a fire later than this was delayed by a crash.
const LATE_MS: i64 = 5_000;
const EVERY_MS: i64 = 1_000;

struct Plan {
    fire_all_jobs: usize,
    skip_jobs: usize,
    secs: u64,
    kill_every: u64,
    settle_secs: u64,
    /// SIGTERM (and restart) node B once mid-chaos (`CHAOS_SIGTERM=0` turns it off, for diagnosis).
    sigterm: bool,
    /// `serial` (default) or `discard_later` (`CHAOS_BLOCK`, for diagnosis).
    block: String,
}

impl Plan {
    fn from_env() -> Plan {
        let jobs = env_or("CHAOS_JOBS", 200usize);
        let skip_jobs = env_or("CHAOS_SKIP_JOBS", jobs / 2).min(jobs);
        Plan {
            fire_all_jobs: jobs - skip_jobs,
            skip_jobs,
            secs: env_or("CHAOS_SECS", 60u64),
            kill_every: env_or("CHAOS_KILL_EVERY", 10u64),
            settle_secs: env_or("CHAOS_SETTLE_SECS", 40u64),
            sigterm: env_or("CHAOS_SIGTERM", 1u8) != 0,
            block: env_or("CHAOS_BLOCK", "serial".to_string()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Policy {
    FireAll,
    Skip,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_under_sigkill_and_sigterm_fires_every_schedule_exactly_once() {
    let plan = Plan::from_env();
    let test_start = Instant::now();

    // One fresh database, migrated once.
    let (url, db_name) = sundial_store::testing::TestDb::mysql_empty_url().await;
    let _drop_db = DropDb { name: db_name, keep_if: Some("CHAOS_KEEP") };
    let out = sundial().args(["migrate", "--database-url", &url]).output().unwrap();
    assert!(out.status.success(), "migrate: {}", String::from_utf8_lossy(&out.stderr));

    let logs_tmp = tempfile::tempdir().unwrap();
    let logs = logs_tmp.path().to_path_buf();
    let _logs_guard = if std::env::var("CHAOS_KEEP").is_ok() {
        eprintln!("CHAOS_KEEP: node logs in {}", logs.display());
        let _ = logs_tmp.keep();
        None
    } else {
        Some(logs_tmp)
    };
    let log = |name: &str| logs.join(format!("{name}.log"));
    // Membership changes (job affinity) are logged at info: they explain where fires went late.
    let envs =
        [("SUNDIAL_ADMIN_KEY", OPERATOR_KEY), ("SUNDIAL_LOG", "warn,sundial_engine::cluster=info"), ("NO_COLOR", "1")];
    let sink = Sink::start().await;

    // A is SIGKILLed and restarted; B is SIGTERMed and restarted once; C stays up (the API).
    let mut node_c = serve_async(&url, "node-c", &envs, &log("c")).await;
    let (log_a, log_b) = (log("a"), log("b"));
    let (a, b) = tokio::join!(serve_async(&url, "node-a", &envs, &log_a), serve_async(&url, "node-b", &envs, &log_b));
    let (mut node_a, mut node_b) = (Some(a), Some(b));
    let api = node_c.base.clone();

    let (key, _app_id, secret) = tenant_and_app(&api, OPERATOR_KEY, &sink.url).await;
    sink.set_secret(&secret);

    // Jobs: fixed rate 1 s, serial (default), 5 s timeout; fire_all, then a skip group.
    let mut jobs: HashMap<String, (Policy, i64)> = HashMap::new(); // id → (policy, anchor ms)
    let total = plan.fire_all_jobs + plan.skip_jobs;
    let fire_all_jobs = plan.fire_all_jobs;
    let block = plan.block.clone();
    let created = join_limited(
        16,
        (0..total).map(|i| {
            let (api, key, block) = (api.clone(), key.clone(), block.clone());
            async move {
                let (policy, name) =
                    if i < fire_all_jobs { ("fire_all", format!("fa-{i}")) } else { ("skip", format!("sk-{i}")) };
                let body = json!({
                    "name": name, "app": "sink", "handler": "chaos.tick",
                    "schedule": {"kind": "fixed_rate", "every_ms": EVERY_MS},
                    "misfire": {"policy": policy},
                    "block": block,
                    "timeout_ms": 5000,
                });
                let (s, job) = call(&api, Method::POST, "/api/v1/jobs", &key, Some(body)).await;
                assert_eq!(s, 201, "{job}");
                job
            }
        }),
    )
    .await;
    for job in created {
        let policy = if job["misfire"]["policy"] == "skip" { Policy::Skip } else { Policy::FireAll };
        let anchor = sundial_core::time::parse_rfc3339("anchor", job["schedule"]["anchor"].as_str().unwrap()).unwrap();
        jobs.insert(job["id"].as_str().unwrap().to_string(), (policy, anchor));
    }
    let chain = ChainJobs::create(&api, &key, &block).await;
    jobs.insert(chain.root.clone(), (Policy::FireAll, chain.root_anchor));
    let setup_secs = test_start.elapsed().as_secs_f64();

    // Let the cluster warm up, then the chaos.
    wait_for(Duration::from_secs(15), || sink.count() >= total).await;
    let chaos_start = Instant::now();
    let at = |s: f64| chaos_start + Duration::from_secs_f64(s);
    // SIGKILLs every `kill_every` s from t = 1 s, the last one a full interval before the end
    // (so its claims can be recovered within the settle phase); the SIGTERM half-way between two.
    let kills: Vec<f64> = match plan.kill_every {
        0 => Vec::new(),
        every => (0..)
            .map(|k| 1.0 + (k * every) as f64)
            .take_while(|t| *t + every as f64 <= plan.secs as f64 + 1.0)
            .collect(),
    };
    let sigterm_at = match kills.get(kills.len() / 2) {
        Some(t) => t + plan.kill_every as f64 / 2.0,
        None => plan.secs as f64 / 2.0,
    };
    let mut sigterm_done = !plan.sigterm;
    // (when, node id killed)
    let mut kills_done: Vec<(i64, String)> = Vec::new();
    let mut sigterm_ms = 0;
    let mut restarts_same_id = 0;
    let mut restarts_new_id = 0;
    for (k, t) in kills.iter().enumerate() {
        if !sigterm_done && sigterm_at < *t {
            sigterm_ms = sigterm_b(&mut node_b, at(sigterm_at), &url, &envs, &log("b")).await;
            sigterm_done = true;
        }
        tokio::time::sleep_until(at(*t)).await;
        let a = node_a.take().unwrap();
        kills_done.push((now_ms(), a.node_id.clone()));
        a.sigkill();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let id = if k % 2 == 0 {
            restarts_same_id += 1;
            "node-a".to_string()
        } else {
            restarts_new_id += 1;
            format!("node-a{k}")
        };
        node_a = Some(serve_async(&url, &id, &envs, &log("a")).await);
    }
    if !sigterm_done {
        sigterm_ms = sigterm_b(&mut node_b, at(sigterm_at), &url, &envs, &log("b")).await;
    }
    tokio::time::sleep_until(at(plan.secs as f64)).await;
    let chaos_end_ms = now_ms();
    assert!(node_c.alive(), "node C died; log:\n{}", tail(&node_c.log, 40));

    // Settle: every schedule fire before the end of the chaos reaches a terminal state. A
    // per-second job's runs are written when each fire is dispatched (or expired), so a fire
    // with no row at all is open too (`unwritten`: fires on the jobs' grids with no run).
    let pool = db_pool(&url).await;
    let settle_start = Instant::now();
    let mut open = Vec::new();
    let mut unwritten = Vec::new();
    let mut last_report = Instant::now();
    while settle_start.elapsed() < Duration::from_secs(plan.settle_secs) {
        // One snapshot for every check: reading the open runs and the fires' rows in two
        // queries would miss a late fire written between them (its row absent from the
        // first read, present and open in the second).
        let now_runs = runs(&pool).await;
        open = now_runs
            .iter()
            .filter(|r| r.trigger == "schedule" && r.scheduled_ms < chaos_end_ms && !terminal(&r.state))
            .cloned()
            .collect();
        unwritten = fires_without_runs(&now_runs, &jobs, chaos_end_ms);
        let chain_gaps = chain.gaps(&now_runs, chaos_end_ms);
        if open.is_empty() && unwritten.is_empty() && chain_gaps.is_empty() {
            break;
        }
        if last_report.elapsed() >= Duration::from_secs(5) {
            last_report = Instant::now();
            let mut by: BTreeMap<(&str, &str), usize> = BTreeMap::new();
            for r in &open {
                *by.entry((r.state.as_str(), r.owner_node.as_deref().unwrap_or("-"))).or_default() += 1;
            }
            println!(
                "settling {:>4.1} s: {} open {by:?}, {} fires without a run, {} chain gaps",
                settle_start.elapsed().as_secs_f64(),
                open.len(),
                unwritten.len(),
                chain_gaps.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    let settle_secs = settle_start.elapsed().as_secs_f64();

    // Stop every node with SIGTERM: each exits 0.
    let nodes = [node_a.take().unwrap(), node_b.take().unwrap(), node_c];
    for n in &nodes {
        signal(n.pid(), "TERM");
    }
    let mut node_logs = Vec::new();
    for n in nodes {
        let (id, log) = (n.node_id.clone(), n.log.clone());
        let status = n.exit_status(Duration::from_secs(40)).await;
        assert!(status.success(), "node {id} exited {status:?} after SIGTERM; log:\n{}", tail(&log, 40));
        node_logs.push(log);
    }
    let all_runs = runs(&pool).await;
    let all_attempts = attempts(&pool).await;
    let fan_ins = chain.fan_in_runs(&pool).await;
    pool.close().await;
    let mut bad = Findings::default();

    // ---- chains: every branch and the fan-in once per chain whose root succeeded ----
    bad.check(
        &format!("chains whose root succeeded with a child missing, doubled or not succeeded {settle_secs:.0} s later"),
        chain.gaps(&all_runs, chaos_end_ms),
    );
    bad.check("fan-in runs not carrying their chain and its three succeeded parents", chain.check_fan_ins(&fan_ins));
    let chains_done = chain.roots(&all_runs, chaos_end_ms).filter(|r| r.state == "succeeded").count();

    // ---- the database: one run per fire, none stranded, none lost ----
    let open_jobs: HashSet<&str> = open.iter().map(|r| r.job_id.as_str()).collect();
    bad.check(
        &format!(
            "schedule runs due before the chaos ended still not terminal {settle_secs:.0} s later (in {} jobs)",
            open_jobs.len()
        ),
        open.iter().map(|r| format!("{r:?}")).collect(),
    );
    bad.check(
        &format!("schedule fires due before the chaos ended still without a run {settle_secs:.0} s later"),
        unwritten.clone(),
    );
    // After every node stopped: nothing before the chaos's end left open (a node stopping
    // hands its unwritten fires over as `pending` runs: those must have been fired before).
    bad.check(
        "schedule runs due before the chaos ended not terminal after every node stopped",
        all_runs
            .iter()
            .filter(|r| r.trigger == "schedule" && r.scheduled_ms < chaos_end_ms && !terminal(&r.state))
            .map(|r| format!("{r:?}"))
            .collect(),
    );
    let mut per_key: HashMap<(&str, &str), usize> = HashMap::new();
    for r in &all_runs {
        *per_key.entry((&r.job_id, &r.fire_key)).or_default() += 1;
    }
    bad.check(
        "several runs for one (job, fire key)",
        per_key.iter().filter(|(_, n)| **n > 1).map(|(k, n)| format!("{k:?} × {n}")).collect(),
    );
    let by_id: HashMap<&str, &RunRow> = all_runs.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut states: BTreeMap<(&str, String), usize> = BTreeMap::new();
    let (mut wrong_key, mut wrong_state, mut fire_count_errors) = (Vec::new(), Vec::new(), Vec::new());
    let mut window_runs = 0;
    let mut expected_fires_total = 0;
    for (job_id, (policy, anchor)) in &jobs {
        let label = if *policy == Policy::Skip { "skip" } else { "fire_all" };
        let mine: Vec<&RunRow> = all_runs
            .iter()
            .filter(|r| &r.job_id == job_id && r.trigger == "schedule" && r.scheduled_ms < chaos_end_ms)
            .collect();
        let mut accounted = 0;
        for r in &mine {
            if r.fire_key != format!("s:{}", r.scheduled_ms) || (r.scheduled_ms - anchor).rem_euclid(EVERY_MS) != 0 {
                wrong_key.push(format!("{r:?} (anchor {anchor})"));
            }
            *states.entry((label, r.state.clone())).or_default() += 1;
            let allowed: &[&str] = match (policy, plan.block.as_str()) {
                (Policy::FireAll, "serial") => &["succeeded"],
                (Policy::Skip, "serial") => &["succeeded", "expired"],
                (Policy::FireAll, _) => &["succeeded", "skipped"],
                (Policy::Skip, _) => &["succeeded", "expired", "skipped"],
            };
            if terminal(&r.state) && !allowed.contains(&r.state.as_str()) {
                wrong_state.push(format!("{label} {r:?}"));
            }
            accounted += if r.expired_count > 0 { r.expired_count } else { 1 };
        }
        window_runs += mine.len();
        // Fire instants anchor + k·every in [anchor, chaos end).
        let expected = (chaos_end_ms - anchor + EVERY_MS - 1).div_euclid(EVERY_MS).max(0);
        expected_fires_total += expected;
        if accounted != expected {
            fire_count_errors.push(format!("{label} job {job_id}: {expected} fires, {accounted} accounted for"));
        }
    }
    bad.check("schedule runs off their job's grid or with a wrong fire key", wrong_key);
    bad.check("terminal runs in a state the job's policies do not allow", wrong_state);
    bad.check("jobs whose fires are not all accounted for (lost or invented)", fire_count_errors);

    // ---- the sink: signed, effectively once ----
    let all = sink.all();
    bad.check(
        "deliveries failing signature verification",
        all.iter().filter(|d| !d.signature_ok).map(|d| format!("{d:?}")).collect(),
    );
    let cancels = all.iter().filter(|d| d.path.ends_with("/cancel")).count();
    let deliveries = sink.deliveries();
    let mut by_webhook: HashMap<&str, Vec<&Delivery>> = HashMap::new();
    let mut by_run: HashMap<&str, Vec<&Delivery>> = HashMap::new();
    let mut unknown = Vec::new();
    for d in &deliveries {
        match by_id.get(d.run_id.as_str()) {
            Some(r) if d.scheduled_ms == r.scheduled_ms => {}
            other => unknown.push(format!("{d:?} vs {other:?}")),
        }
        by_webhook.entry(&d.webhook_id).or_default().push(d);
        by_run.entry(&d.run_id).or_default().push(d);
    }
    bad.check("deliveries of unknown runs or with a wrong sundial-scheduled-at", unknown);
    bad.check(
        "webhook-ids carrying different runs or attempts",
        by_webhook
            .iter()
            .filter(|(_, ds)| ds.iter().any(|d| d.run_id != ds[0].run_id || d.attempt != ds[0].attempt))
            .map(|(w, ds)| format!("{w}: {ds:?}"))
            .collect(),
    );
    // Every succeeded run was delivered; after dropping repeats of a webhook-id, exactly
    // once per attempt. A sync 200 sink never needs a retry, so an attempt > 1 means an
    // attempt was failed although the executor answered (or could have answered) 200.
    let attempts_of: HashMap<&str, Vec<&AttemptRow>> = all_attempts.iter().fold(HashMap::new(), |mut m, a| {
        m.entry(a.run_id.as_str()).or_default().push(a);
        m
    });
    let (mut undelivered, mut per_attempt, mut multi_attempt, mut delivered_not_ok) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for r in all_runs.iter().filter(|r| r.state == "succeeded") {
        let ds = by_run.get(r.id.as_str()).map(Vec::as_slice).unwrap_or_default();
        let ids: HashSet<&str> = ds.iter().map(|d| d.webhook_id.as_str()).collect();
        if ids.is_empty() {
            undelivered.push(format!("{r:?}"));
        } else if ids.len() as i64 != r.attempt {
            per_attempt.push(format!("{r:?}: {} distinct webhook-ids", ids.len()));
        }
        if r.attempt > 1 {
            multi_attempt.push(format!("{r:?} attempts {:?} deliveries {ds:?}", attempts_of.get(r.id.as_str())));
        }
    }
    for (run_id, ds) in &by_run {
        if let Some(r) = by_id.get(run_id)
            && r.state != "succeeded"
            && terminal(&r.state)
        {
            delivered_not_ok.push(format!("{r:?} delivered {} times", ds.len()));
        }
    }
    bad.check("succeeded runs never delivered", undelivered);
    bad.check("succeeded runs whose distinct delivered webhook-ids differ from their attempts", per_attempt);
    bad.check("runs delivered but ending in another terminal state than succeeded", delivered_not_ok);
    bad.check("runs needing more than one attempt although the sink always answers 200", multi_attempt.clone());
    let mut failed_attempts: BTreeMap<String, usize> = BTreeMap::new();
    for a in all_attempts.iter().filter(|a| a.state != "succeeded") {
        *failed_attempts.entry(format!("{}/{}", a.state, a.reason.as_deref().unwrap_or("-"))).or_default() += 1;
    }
    // Raw redeliveries: only of deliveries in flight on a node when it was SIGKILLed: the
    // first came from a node that was killed before the repeat arrived. How long before
    // the kill the first went out is not bounded (the node may have had the executor's
    // answer but not yet committed it, which takes long when the disk is slow to sync);
    // after it, by the time the sink records a request the signal may already have landed
    // (the kill time is read just before the signal is sent): 1 s of slack.
    let mut redelivered = Vec::new();
    let mut unexplained = Vec::new();
    for (w, ds) in &by_webhook {
        if ds.len() < 2 {
            continue;
        }
        let mut ds = ds.clone();
        ds.sort_by_key(|d| d.received_ms);
        let first = ds[0];
        let explained = ds[1..].iter().all(|again| {
            kills_done
                .iter()
                .any(|(k, node)| *node == first.node && first.received_ms <= k + 1_000 && *k <= again.received_ms)
        });
        if !explained {
            unexplained.push(format!(
                "{w}: deliveries from {:?} at {:?} ms after the first; no SIGKILL of the first sender between (SIGKILLs {kills_done:?}, SIGTERM {sigterm_ms}); attempts {:?}",
                ds.iter().map(|d| d.node.as_str()).collect::<Vec<_>>(),
                ds.iter().map(|d| d.received_ms - first.received_ms).collect::<Vec<_>>(),
                attempts_of.get(first.run_id.as_str())
            ));
        }
        redelivered.push((ds[1].received_ms - first.received_ms, ds[1].received_ms - first.scheduled_ms));
    }
    bad.check("webhook-ids delivered more than once without a SIGKILL of the delivering node", unexplained);

    // Lateness of each run's first delivery (receive − scheduled).
    let mut lateness = Vec::new();
    let mut crash_delayed = Vec::new();
    for ds in by_run.values() {
        let first = ds.iter().map(|d| d.received_ms).min().unwrap();
        let late = first - ds[0].scheduled_ms;
        lateness.push(late);
        if late > LATE_MS {
            crash_delayed.push(late);
        }
    }
    bad.check(
        "first deliveries later than 60 s (recovery should be bounded by lease + timeout)",
        lateness.iter().filter(|l| **l >= 60_000).map(|l| format!("{l} ms")).collect(),
    );
    let redelivery_gap: Vec<i64> = redelivered.iter().map(|r| r.0).collect();
    let redelivery_late: Vec<i64> = redelivered.iter().map(|r| r.1).collect();
    let recovered = node_logs.iter().map(|l| count_in_log(l, "recovering runs whose claim expired")).sum::<usize>();
    let panics = node_logs.iter().map(|l| count_in_log(l, "panicked")).sum::<usize>();
    bad.check("node panics", (0..panics).map(|_| "see the node log digest".to_string()).collect());
    let state_rows: String = states.iter().map(|((p, s), n)| format!("\n  {p:<9} {s:<10} {n:>7}")).collect();

    println!(
        "\n==== chaos summary ====\n\
         jobs                      {} fire_all + {} skip, every {EVERY_MS} ms, block {}, timeout 5 s\n\
         setup / chaos / settle    {setup_secs:.1} s / {} s / {settle_secs:.1} s (test {:.1} s)\n\
         SIGKILLs                  {} (restarts: {restarts_same_id} same id, {restarts_new_id} new id); SIGTERM+restart {} (exit 0)\n\
         fires in window           {expected_fires_total} expected, {window_runs} run rows{state_rows}\n\
         chains                    {chains_done} fan-out/fan-in chains done ({} fan-in runs)\n\
         failed attempts           {failed_attempts:?}; runs with > 1 attempt: {}\n\
         deliveries                {} ({} distinct webhook-ids, {cancels} cancels)\n\
         raw redeliveries          {} webhook-ids delivered more than once\n\
         redelivery gap            {}\n\
         redelivery lateness       {}\n\
         lateness, first deliveries        {}\n\
         lateness, crash-delayed (> {LATE_MS} ms)  {}\n\
         claim recoveries logged   {recovered}\n\
         node log digest (warnings and errors):\n{}",
        plan.fire_all_jobs,
        plan.skip_jobs,
        plan.block,
        plan.secs,
        test_start.elapsed().as_secs_f64(),
        kills_done.len(),
        u8::from(plan.sigterm),
        fan_ins.len(),
        multi_attempt.len(),
        deliveries.len(),
        by_webhook.len(),
        redelivered.len(),
        stats(&redelivery_gap),
        stats(&redelivery_late),
        stats(&lateness),
        stats(&crash_delayed),
        log_digest(&node_logs, 12),
    );
    assert!(bad.is_empty(), "cluster guarantees violated:\n{}", bad.report());
}

/// SIGTERM node B at `when`; it must exit 0; restart it under the same id. Returns the SIGTERM instant.
async fn sigterm_b(
    node_b: &mut Option<Node>,
    when: Instant,
    url: &str,
    envs: &[(&str, &str)],
    log: &std::path::Path,
) -> i64 {
    tokio::time::sleep_until(when).await;
    let b = node_b.take().unwrap();
    let ms = now_ms();
    let status = b.sigterm(Duration::from_secs(40)).await;
    assert!(status.success(), "node B exited {status:?} after SIGTERM; log:\n{}", tail(log, 40));
    *node_b = Some(serve_async(url, "node-b", envs, log).await);
    ms
}

async fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while !cond() && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Fires on the jobs' grids before `before_ms` (from each job's anchor) that have no run.
fn fires_without_runs(all: &[RunRow], jobs: &HashMap<String, (Policy, i64)>, before_ms: i64) -> Vec<String> {
    let mut covered: HashMap<&str, HashSet<i64>> = HashMap::new();
    for r in all.iter().filter(|r| r.trigger == "schedule" && r.scheduled_ms < before_ms) {
        let set = covered.entry(r.job_id.as_str()).or_default();
        // A counted `expired` record stands for `expired_count` fires from its own on.
        for k in 0..r.expired_count.max(1) {
            set.insert(r.scheduled_ms + k * EVERY_MS);
        }
    }
    let mut out = Vec::new();
    for (job, (_, anchor)) in jobs {
        let mut at = *anchor;
        while at < before_ms {
            if !covered.get(job.as_str()).is_some_and(|s| s.contains(&at)) {
                out.push(format!("{job} at {at}"));
            }
            at += EVERY_MS;
        }
    }
    out.sort();
    out
}

/// The chain jobs: a per-second root fanning out to three branches that fan in to one job.
struct ChainJobs {
    root: String,
    root_anchor: i64,
    branches: Vec<String>,
    join: String,
}

impl ChainJobs {
    async fn create(api: &str, key: &str, block: &str) -> ChainJobs {
        let job = |name: &str, schedule: serde_json::Value, children: Vec<String>| {
            json!({
                "name": name, "app": "sink", "handler": "chaos.tick", "schedule": schedule,
                "misfire": {"policy": "fire_all"}, "block": block, "timeout_ms": 5000, "children": children,
            })
        };
        let manual = json!({"kind": "manual"});
        let create = |body: serde_json::Value| async move {
            let (s, job) = call(api, Method::POST, "/api/v1/jobs", key, Some(body)).await;
            assert_eq!(s, 201, "{job}");
            job
        };
        let join = create(job("ch-join", manual.clone(), vec![])).await;
        assert_eq!(join["wait"], "all");
        let join_id = join["id"].as_str().unwrap().to_string();
        let mut branches = Vec::new();
        for i in 0..3 {
            let b = create(job(&format!("ch-b{i}"), manual.clone(), vec![join_id.clone()])).await;
            branches.push(b["id"].as_str().unwrap().to_string());
        }
        let root = create(job("ch-root", json!({"kind": "fixed_rate", "every_ms": EVERY_MS}), branches.clone())).await;
        let root_anchor =
            sundial_core::time::parse_rfc3339("anchor", root["schedule"]["anchor"].as_str().unwrap()).unwrap();
        ChainJobs { root: root["id"].as_str().unwrap().to_string(), root_anchor, branches, join: join_id }
    }

    fn roots<'a>(&'a self, all: &'a [RunRow], before_ms: i64) -> impl Iterator<Item = &'a RunRow> {
        all.iter().filter(move |r| r.job_id == self.root && r.trigger == "schedule" && r.scheduled_ms < before_ms)
    }

    /// For each chain whose root (due before `before_ms`) succeeded: each branch and the
    /// fan-in exactly once, keyed by the root's id, and succeeded.
    fn gaps(&self, all: &[RunRow], before_ms: i64) -> Vec<String> {
        let mut by_key: HashMap<(&str, &str), Vec<&RunRow>> = HashMap::new();
        for r in all.iter().filter(|r| r.trigger == "parent") {
            by_key.entry((r.job_id.as_str(), r.fire_key.as_str())).or_default().push(r);
        }
        let mut out = Vec::new();
        for root in self.roots(all, before_ms).filter(|r| r.state == "succeeded") {
            let key = format!("p:{}", root.id);
            for job in self.branches.iter().chain(std::iter::once(&self.join)) {
                let found = by_key.get(&(job.as_str(), key.as_str())).map(Vec::as_slice).unwrap_or_default();
                match found {
                    [one] if one.state == "succeeded" => {}
                    [] => out.push(format!("chain {}: no run of {job}", root.id)),
                    [one] => out.push(format!("chain {}: {job} is {} ({one:?})", root.id, one.state)),
                    many => out.push(format!("chain {}: {} runs of {job}: {many:?}", root.id, many.len())),
                }
            }
        }
        out
    }

    /// Every fan-in run: (id, chain_id, parents).
    async fn fan_in_runs(&self, pool: &sqlx::AnyPool) -> Vec<(String, Option<String>, Option<String>)> {
        use sqlx::Row;
        sqlx::query("SELECT id, chain_id, parents FROM runs WHERE job_id = ?")
            .bind(&self.join)
            .fetch_all(pool)
            .await
            .expect("read fan-in runs")
            .iter()
            .map(|r| (r.get("id"), r.get("chain_id"), r.get("parents")))
            .collect()
    }

    fn check_fan_ins(&self, fan_ins: &[(String, Option<String>, Option<String>)]) -> Vec<String> {
        let mut out = Vec::new();
        for (id, chain_id, parents) in fan_ins {
            let parents: Vec<serde_json::Value> =
                parents.as_deref().and_then(|p| serde_json::from_str(p).ok()).unwrap_or_default();
            let mut jobs: Vec<&str> = parents.iter().filter_map(|p| p["job_id"].as_str()).collect();
            jobs.sort();
            let mut want: Vec<&str> = self.branches.iter().map(String::as_str).collect();
            want.sort();
            if chain_id.is_none() || jobs != want || parents.iter().any(|p| p["state"] != "succeeded") {
                out.push(format!("{id}: chain {chain_id:?}, parents {parents:?}"));
            }
        }
        out
    }
}
