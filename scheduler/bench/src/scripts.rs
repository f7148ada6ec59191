//! `sundial-bench scripts`: script jobs run by `sundial serve`'s built-in runner, measured
//! from outside against webhook jobs delivered to the sink, in the same run.
//!
//! **What it measures**: the real binary with its default configuration (only the listen
//! address, the database, a data directory of its own, the operator key and the log level
//! set; the interpreters reach it through `<data_dir>/interpreters`, the default
//! `interpreters_dir`, a symlink to `--interpreters-dir`). Through the public API, just
//! before measuring: a tenant, an app `bench` whose static endpoint is the sink, the scripts
//! `hello-wasm` (`examples/scripts/hello.wat`), `hello-py` (`print("hello")`) and `hello-js`
//! (`console.log("hello")`), and manual jobs (`{"kind": "manual"}`, every other setting the
//! default).
//!
//! - *Throughput*: N runs triggered (`POST /api/v1/jobs/{id}/trigger`) round-robin over J
//!   jobs from C client connections as fast as they are answered, then waited for until no
//!   run of the tenant is open; runs/s = N / (the last `finished_at` − the first trigger's
//!   start). Baseline first: J webhook jobs (handler `bench.tick`) delivered to the sink,
//!   which answers `200 {"status": "succeeded"}` at once; then J `hello-wasm` jobs. A job's
//!   runs are serial (the default block strategy), hence many jobs.
//! - *Latency*: one run at a time, `--latency-runs` per kind (webhook, wasm, python,
//!   javascript) after one unmeasured warm-up run each: `finished_at − scheduled_at` of the
//!   run (the server's account) and the client's wall time from sending the trigger to
//!   reading the run in a final state (polling `GET /api/v1/runs/{id}` every 5 ms).
//!
//! **Not measured**: the shell runtime (off by default), scripts that do real work, larger
//! modules, the runner in a process of its own (`sundial runner`), clusters.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use serde_json::{Value, json};

use crate::db::Target;
use crate::server::{Api, Sundial};
use crate::sink::{Sink, now_us, parse_ms};
use crate::{cpu, cpu_model, say, sh};

/// The small wasm module every wasm run runs.
const HELLO_WAT: &str = include_str!("../../../examples/scripts/hello.wat");
const HELLO_PY: &str = "print(\"hello\")\n";
const HELLO_JS: &str = "console.log(\"hello\")\n";
/// Run states that are not final.
const OPEN_STATES: [&str; 5] = ["pending", "queued", "dispatching", "running", "retrying"];
/// The client's polling period while it waits for one run.
const POLL: Duration = Duration::from_millis(5);
/// Connections creating the jobs.
const CREATE_CONNECTIONS: usize = 8;
/// Before each latency run, a random pause below this: the engine's timer turns every 200 ms
/// when idle, and back-to-back triggers would otherwise all land at the same phase of it.
const LATENCY_JITTER_MS: u64 = 250;
/// Longest wait for a phase's runs to finish.
const PHASE_TIMEOUT: Duration = Duration::from_secs(900);

#[derive(Parser, Debug)]
#[command(
    name = "sundial-bench scripts",
    about = "Script jobs through the built-in runner against webhook jobs, measured in the same run"
)]
pub struct ScriptsArgs {
    /// N: runs triggered in each throughput phase (webhook, then wasm).
    #[arg(long, default_value_t = 2000)]
    runs: usize,
    /// J: jobs the throughput runs are spread over, round-robin (default N: one run per job;
    /// a job's runs are serial, each waiting for the engine's next turn after the last).
    #[arg(long)]
    jobs: Option<usize>,
    /// C: client connections triggering the runs.
    #[arg(long, default_value_t = 4)]
    connections: usize,
    /// Runs of each kind in the latency phase, one at a time.
    #[arg(long, default_value_t = 20)]
    latency_runs: usize,
    #[arg(long, value_enum, default_value = "sqlite")]
    database: crate::Database,
    /// Use this MySQL/MariaDB server (a fresh database is created and dropped) instead of a
    /// private throwaway MariaDB (with `--database mysql`).
    #[arg(long)]
    mysql_url: Option<String>,
    /// The `sundial` binary to run.
    #[arg(long, env = "SUNDIAL_BIN", default_value = "target/release/sundial")]
    sundial: PathBuf,
    /// Where `python.wasm` and `javascript.wasm` are (`scripts/fetch-interpreters`).
    #[arg(long, default_value = "target/interpreters")]
    interpreters_dir: PathBuf,
    /// Keep Sundial's log.
    #[arg(long)]
    keep_logs: bool,
    /// Extra environment for `sundial serve` (KEY=VALUE, repeatable): non-default settings,
    /// listed in the report.
    #[arg(long = "env", value_parser = crate::parse_env)]
    envs: Vec<(String, String)>,
}

/// Percentile (nearest rank) of sorted values.
fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

pub async fn run(args: ScriptsArgs) -> anyhow::Result<()> {
    sqlx::any::install_default_drivers();
    anyhow::ensure!(
        args.runs > 0 && args.jobs != Some(0) && args.connections > 0 && args.latency_runs > 0,
        "counts must be ≥ 1"
    );
    let bin = std::fs::canonicalize(&args.sundial)
        .with_context(|| format!("the sundial binary {} (build it, or pass --sundial)", args.sundial.display()))?;
    let interpreters = std::fs::canonicalize(&args.interpreters_dir).with_context(|| {
        format!("interpreters dir {} (run scripts/fetch-interpreters)", args.interpreters_dir.display())
    })?;
    let mut target = match (args.database, &args.mysql_url) {
        (crate::Database::Sqlite, _) => Target::sqlite()?,
        (crate::Database::Mysql, Some(url)) => Target::external(url).await?,
        (crate::Database::Mysql, None) => Target::private().await?,
    };
    let database_server = target.describe().await;
    // The data directory: SQLite's own, or one of ours beside a MySQL database (the runner's
    // cache and per-run directories live there).
    let own_dir = tempfile::Builder::new().prefix("sundial-bench-scripts-").tempdir()?;
    let (data_dir, mut extra_env) = match &target {
        Target::Sqlite { dir } => (dir.path().to_path_buf(), vec![]),
        _ => {
            let d = own_dir.path().to_path_buf();
            (d.clone(), vec![("SUNDIAL_DATA_DIR".to_string(), d.display().to_string())])
        }
    };
    extra_env.extend(args.envs.iter().cloned());
    std::os::unix::fs::symlink(&interpreters, data_dir.join("interpreters"))
        .context("symlink the interpreters into the data dir")?;
    let sink = Sink::start().await?;
    let log = own_dir.path().join("sundial.log");
    say(format!("starting {} serve (data dir {}, log {})", bin.display(), data_dir.display(), log.display()));
    let started = Instant::now();
    let result = match Sundial::start(&bin, target.sundial_env(), &extra_env, &log).await {
        Ok(mut sundial) => {
            let ready_s = started.elapsed().as_secs_f64();
            say(format!("ready in {ready_s:.2} s"));
            let r = measure(&args, &sink, &sundial, &target).await;
            say("stopping sundial (SIGTERM)");
            let exit = sundial.stop().await;
            r.map(|m| (m, ready_s, exit))
        }
        Err(e) => Err(e),
    };
    target.cleanup().await;
    let keep = args.keep_logs || result.is_err();
    if keep {
        let dir = own_dir.keep();
        say(format!("sundial's log is kept: {}", dir.join("sundial.log").display()));
    }
    let (m, ready_s, exit) = result?;
    print!("{}", m.human(&args, &bin, &database_server, ready_s, &exit));
    Ok(())
}

struct Throughput {
    runs: usize,
    jobs: usize,
    connections: usize,
    /// Seconds from the first trigger's start until the last trigger was answered.
    trigger_secs: f64,
    /// Seconds from the first trigger's start to the last `finished_at`.
    secs: f64,
    states: Vec<(String, usize)>,
    cpu: cpu::Usage,
}

impl Throughput {
    fn runs_per_sec(&self) -> f64 {
        self.runs as f64 / self.secs
    }
    fn succeeded(&self) -> usize {
        self.states.iter().find(|(s, _)| s == "succeeded").map_or(0, |x| x.1)
    }
}

struct Latency {
    kind: &'static str,
    /// The unmeasured first run: finished − scheduled, client wall (ms).
    warmup: (f64, f64),
    /// finished_at − scheduled_at, ms, sorted.
    server_ms: Vec<f64>,
    /// started_at − scheduled_at, ms, sorted (the dispatch delay).
    start_ms: Vec<f64>,
    /// finished_at − started_at, ms, sorted (delivery, the run, its answer recorded).
    exec_ms: Vec<f64>,
    /// Client wall time trigger → final state read, ms, sorted.
    client_ms: Vec<f64>,
    failed: usize,
}

struct Measured {
    runtimes: Vec<String>,
    webhook: Throughput,
    wasm: Throughput,
    latency: Vec<Latency>,
}

// Over 100 lines on purpose: one sitting in the order it runs (set up through the API, each
// workload, latency); each step is short and reads best in sequence.
async fn measure(args: &ScriptsArgs, sink: &Sink, sundial: &Sundial, target: &Target) -> anyhow::Result<Measured> {
    let op = Api::new(&sundial.base, &sundial.admin_key);
    let tenant = op.create("/api/v1/tenants", &json!({"name": "bench"})).await?;
    crate::server::raise_quotas(
        &op,
        tenant["id"].as_str().context("tenant without id")?,
        args.jobs.unwrap_or(args.runs).max(args.runs) * 2,
    )
    .await?;
    let api = op.with_key(tenant["admin_key"].as_str().context("tenant without admin_key")?);
    let app = api.create("/api/v1/apps", &json!({"name": "bench", "endpoints": [sink.url()]})).await?;
    sink.set_key(crate::sign::Key::parse(app["secret"].as_str().context("app without secret")?)?);

    let rts = api.get("/api/v1/runtimes").await?;
    let runtimes: Vec<String> = rts["items"]
        .as_array()
        .context("runtimes without items")?
        .iter()
        .map(|r| {
            format!(
                "{}: {}",
                r["runtime"].as_str().unwrap_or("?"),
                if r["available"] == true { r["isolation"].as_str().unwrap_or("?") } else { "not available" }
            )
        })
        .collect();
    for want in ["wasm", "python", "javascript"] {
        let ok =
            rts["items"].as_array().is_some_and(|a| a.iter().any(|r| r["runtime"] == want && r["available"] == true));
        anyhow::ensure!(ok, "runtime {want} not available: {rts}");
    }
    for (name, runtime, source) in
        [("hello-wasm", "wasm", HELLO_WAT), ("hello-py", "python", HELLO_PY), ("hello-js", "javascript", HELLO_JS)]
    {
        api.create("/api/v1/scripts", &json!({"name": name, "runtime": runtime, "source": source})).await?;
    }
    let job = |name: String, what: (&str, &str)| {
        let mut body = json!({"name": name, "app": "bench", "schedule": {"kind": "manual"}});
        body[what.0] = json!(what.1);
        body
    };
    let j = args.jobs.unwrap_or(args.runs);
    say(format!("creating 2 × {j} throughput jobs over {CREATE_CONNECTIONS} connections, and 4 latency jobs"));
    let started = Instant::now();
    let hook_jobs =
        create_jobs(&api, (0..j).map(|i| job(format!("hook-{i}"), ("handler", "bench.tick"))).collect()).await?;
    let wasm_jobs =
        create_jobs(&api, (0..j).map(|i| job(format!("wasm-{i}"), ("script", "hello-wasm"))).collect()).await?;
    say(format!("created in {:.2} s", started.elapsed().as_secs_f64()));
    let mut lat_jobs = Vec::new();
    for (kind, what) in [
        ("webhook", ("handler", "bench.latency")),
        ("wasm", ("script", "hello-wasm")),
        ("python", ("script", "hello-py")),
        ("javascript", ("script", "hello-js")),
    ] {
        lat_jobs.push((kind, id(&api.create("/api/v1/jobs", &job(format!("latency-{kind}"), what)).await?)?));
    }

    let procs = vec![
        ("sundial", sundial.pid()),
        ("mariadbd", target.server_pid()),
        ("sundial-bench", Some(std::process::id())),
    ];
    // One unmeasured run of every latency job first: the wasm module's first compile and the
    // first run of each interpreter are reported apart.
    let mut warmups = HashMap::new();
    for (kind, job) in &lat_jobs {
        let (r, client_ms) = one_run(&api, job).await?;
        warmups.insert(*kind, (r.finished_ms - r.scheduled_ms, client_ms));
    }
    say(format!("throughput, webhook: {} runs over {} jobs, {} connections", args.runs, j, args.connections));
    let webhook = throughput(&api, &hook_jobs, args, &procs).await?;
    say(format!("  {:.1} runs/s", webhook.runs_per_sec()));
    say(format!("throughput, wasm: {} runs over {} jobs, {} connections", args.runs, j, args.connections));
    let wasm = throughput(&api, &wasm_jobs, args, &procs).await?;
    say(format!("  {:.1} runs/s", wasm.runs_per_sec()));

    let mut latency = Vec::new();
    for (kind, job) in &lat_jobs {
        say(format!("latency, {kind}: {} runs one at a time", args.latency_runs));
        let (mut server, mut start, mut exec, mut client, mut failed) = (vec![], vec![], vec![], vec![], 0);
        for _ in 0..args.latency_runs {
            tokio::time::sleep(Duration::from_millis(rand::random_range(0..LATENCY_JITTER_MS))).await;
            let (r, client_ms) = one_run(&api, job).await?;
            if r.state != "succeeded" {
                failed += 1;
            }
            server.push((r.finished_ms - r.scheduled_ms) as f64);
            start.push(r.started_ms.map_or(f64::NAN, |s| (s - r.scheduled_ms) as f64));
            exec.push(r.started_ms.map_or(f64::NAN, |s| (r.finished_ms - s) as f64));
            client.push(client_ms);
        }
        let w = warmups[kind];
        latency.push(Latency {
            kind,
            warmup: (w.0 as f64, w.1),
            server_ms: sorted(server),
            start_ms: sorted(start),
            exec_ms: sorted(exec),
            client_ms: sorted(client),
            failed,
        });
    }
    Ok(Measured { runtimes, webhook, wasm, latency })
}

/// POST each body to `/api/v1/jobs` over [`CREATE_CONNECTIONS`] connections; the ids in order.
async fn create_jobs(api: &Api, bodies: Vec<Value>) -> anyhow::Result<Vec<String>> {
    let bodies = Arc::new(bodies);
    let next = Arc::new(AtomicUsize::new(0));
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..CREATE_CONNECTIONS {
        let (api, bodies, next) = (api.clone(), bodies.clone(), next.clone());
        set.spawn(async move {
            let mut made = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(b) = bodies.get(i) else { return anyhow::Ok(made) };
                made.push((i, id(&api.create("/api/v1/jobs", b).await?)?));
            }
        });
    }
    let mut ids = vec![String::new(); bodies.len()];
    while let Some(r) = set.join_next().await {
        for (i, id) in r?? {
            ids[i] = id;
        }
    }
    Ok(ids)
}

fn id(v: &Value) -> anyhow::Result<String> {
    Ok(v["id"].as_str().with_context(|| format!("no id in {v}"))?.to_string())
}

struct RunTimes {
    state: String,
    scheduled_ms: i64,
    started_ms: Option<i64>,
    finished_ms: i64,
}

fn run_times(v: &Value) -> Option<RunTimes> {
    let t = |k: &str| v[k].as_str().and_then(parse_ms);
    Some(RunTimes {
        state: v["state"].as_str()?.to_string(),
        scheduled_ms: t("scheduled_at")?,
        started_ms: t("started_at"),
        finished_ms: t("finished_at")?,
    })
}

/// Trigger one run and poll it until it is final; returns its times and the client's wall ms.
async fn one_run(api: &Api, job: &str) -> anyhow::Result<(RunTimes, f64)> {
    let t0 = Instant::now();
    let run = api.post(&format!("/api/v1/jobs/{job}/trigger"), &json!({})).await?;
    let run_id = id(&run)?;
    loop {
        let v = api.get(&format!("/api/v1/runs/{run_id}")).await?;
        if !OPEN_STATES.contains(&v["state"].as_str().unwrap_or("pending")) {
            let client_ms = t0.elapsed().as_secs_f64() * 1000.0;
            let r = run_times(&v).with_context(|| format!("final run without times: {v}"))?;
            return Ok((r, client_ms));
        }
        anyhow::ensure!(t0.elapsed() < Duration::from_secs(120), "run {run_id} not final after 120 s: {v}");
        tokio::time::sleep(POLL).await;
    }
}

async fn throughput(
    api: &Api,
    jobs: &[String],
    args: &ScriptsArgs,
    procs: &[(&str, Option<u32>)],
) -> anyhow::Result<Throughput> {
    let jobs = Arc::new(jobs.to_vec());
    let next = Arc::new(AtomicUsize::new(0));
    let n = args.runs;
    let cpu0 = cpu::sample(procs);
    let first_ms = now_us() / 1000;
    let t0 = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..args.connections {
        let (api, jobs, next) = (api.clone(), jobs.clone(), next.clone());
        set.spawn(async move {
            let mut ids = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return anyhow::Ok(ids);
                }
                let job = &jobs[i % jobs.len()];
                ids.push(id(&api.post(&format!("/api/v1/jobs/{job}/trigger"), &json!({})).await?)?);
            }
        });
    }
    let mut ids = HashSet::new();
    while let Some(r) = set.join_next().await {
        ids.extend(r??);
    }
    let trigger_secs = t0.elapsed().as_secs_f64();
    // Wait until no run of the tenant is open (the finish times come from the runs, so the
    // polling period does not matter).
    loop {
        let mut open = false;
        for s in OPEN_STATES {
            let v = api.get(&format!("/api/v1/runs?state={s}&limit=1")).await?;
            open |= v["items"].as_array().is_some_and(|a| !a.is_empty());
        }
        if !open {
            break;
        }
        anyhow::ensure!(t0.elapsed() < PHASE_TIMEOUT, "runs still open after {PHASE_TIMEOUT:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let cpu1 = cpu::sample(procs);
    // Read every run of these jobs back.
    let mut last_ms = first_ms;
    let mut states: HashMap<String, usize> = HashMap::new();
    let mut seen = 0;
    for job in jobs.iter() {
        let mut cursor: Option<String> = None;
        loop {
            let mut path = format!("/api/v1/runs?job_id={job}&limit=200");
            if let Some(c) = &cursor {
                path.push_str(&format!("&cursor={}", urlencode(c)));
            }
            let page = api.get(&path).await?;
            for r in page["items"].as_array().context("runs without items")? {
                if !r["id"].as_str().is_some_and(|i| ids.contains(i)) {
                    continue;
                }
                seen += 1;
                *states.entry(r["state"].as_str().unwrap_or("?").to_string()).or_default() += 1;
                if let Some(f) = r["finished_at"].as_str().and_then(parse_ms) {
                    last_ms = last_ms.max(f);
                }
            }
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
    }
    anyhow::ensure!(seen == n, "{seen} of {n} triggered runs read back");
    let mut states: Vec<(String, usize)> = states.into_iter().collect();
    states.sort();
    Ok(Throughput {
        runs: n,
        jobs: jobs.len(),
        connections: args.connections,
        trigger_secs,
        secs: (last_ms - first_ms) as f64 / 1000.0,
        states,
        cpu: cpu::usage(&cpu0, &cpu1),
    })
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn cpu_line(u: &cpu::Usage) -> String {
    let procs: Vec<String> = u.processes.iter().filter_map(|(n, p)| p.map(|p| format!("{n} {p:.0} %"))).collect();
    format!(
        "{} (% of one core), everything else {}; machine {} of {} cores busy",
        procs.join(", "),
        u.everything_else_pct_of_one_core.map_or("?".into(), |p| format!("{p:.0} %")),
        u.machine_busy_pct_of_all_cores.map_or("?".into(), |p| format!("{p:.0} %")),
        u.cores
    )
}

impl Measured {
    // Over 100 lines on purpose: the report, section by section, in the order it prints.
    fn human(&self, args: &ScriptsArgs, bin: &Path, database_server: &str, ready_s: f64, exit: &str) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(s, "== sundial-bench scripts ==");
        let _ = writeln!(
            s,
            "sundial:   {} ({}), git {}",
            bin.display(),
            sh(&bin.display().to_string(), &["--version"]).unwrap_or_else(|| "?".into()),
            sh("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "?".into())
        );
        let _ = writeln!(
            s,
            "machine:   {} cores, {}",
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            cpu_model()
        );
        let _ = writeln!(s, "database:  {database_server}");
        let _ = writeln!(
            s,
            "settings:  {}{}; interpreters_dir = <data_dir>/interpreters → {}",
            if args.envs.is_empty() {
                "defaults (no --env)".to_string()
            } else {
                let e: Vec<String> = args.envs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("NON-DEFAULT settings: {}", e.join(" "))
            },
            if args.database == crate::Database::Sqlite { "" } else { "; SUNDIAL_DATA_DIR = a temporary directory" },
            args.interpreters_dir.display()
        );
        let _ = writeln!(s, "runtimes:  {}", self.runtimes.join("; "));
        let _ = writeln!(
            s,
            "start:     ready {ready_s:.2} s after spawn (fresh data dir: the interpreters compiled into an empty cache)"
        );
        let _ = writeln!(
            s,
            "\nthroughput (N runs triggered over J manual jobs from C connections; runs/s = N / (last finished_at − first trigger)):"
        );
        for (label, t) in
            [("webhook → sink (baseline)", &self.webhook), ("wasm hello.wat (built-in runner)", &self.wasm)]
        {
            let states: Vec<String> = t.states.iter().map(|(s, n)| format!("{s} {n}")).collect();
            let _ = writeln!(
                s,
                "  {label}: N={} J={} C={}: {:.1} runs/s ({:.2} s; triggers answered in {:.2} s = {:.0}/s); {}",
                t.runs,
                t.jobs,
                t.connections,
                t.runs_per_sec(),
                t.secs,
                t.trigger_secs,
                t.runs as f64 / t.trigger_secs,
                states.join(", ")
            );
            let _ = writeln!(s, "    cpu: {}", cpu_line(&t.cpu));
        }
        let _ = writeln!(
            s,
            "  ratio: wasm runs/s ÷ webhook runs/s = {:.2}{}",
            self.wasm.runs_per_sec() / self.webhook.runs_per_sec(),
            if self.wasm.succeeded() < self.wasm.runs || self.webhook.succeeded() < self.webhook.runs {
                "  (NOT every run succeeded: see the states)"
            } else {
                ""
            }
        );
        let _ = writeln!(
            s,
            "\nlatency, one run at a time after a random 0-{LATENCY_JITTER_MS} ms pause, {} each after one warm-up (ms; p50 / p95 / max):",
            args.latency_runs
        );
        let _ = writeln!(
            s,
            "  {:<11} {:<26} {:<26} {:<26} {:<26} {:<22} failed",
            "kind",
            "finished−scheduled",
            "started−scheduled",
            "finished−started",
            "client trigger→final",
            "warm-up (server/client)"
        );
        let base = self
            .latency
            .iter()
            .find(|l| l.kind == "webhook")
            .map(|l| (pct(&l.server_ms, 50.0), pct(&l.exec_ms, 50.0), pct(&l.client_ms, 50.0)));
        for l in &self.latency {
            let f = |v: &[f64]| {
                format!(
                    "{:>6.1} / {:>6.1} / {:>6.1}",
                    pct(v, 50.0),
                    pct(v, 95.0),
                    v.last().copied().unwrap_or(f64::NAN)
                )
            };
            let _ = writeln!(
                s,
                "  {:<11} {:<26} {:<26} {:<26} {:<26} {:<22} {}",
                l.kind,
                f(&l.server_ms),
                f(&l.start_ms),
                f(&l.exec_ms),
                f(&l.client_ms),
                format!("{:.0} / {:.1}", l.warmup.0, l.warmup.1),
                l.failed
            );
        }
        if let Some((bs, be, bc)) = base {
            let r: Vec<String> = self
                .latency
                .iter()
                .filter(|l| l.kind != "webhook")
                .map(|l| {
                    format!(
                        "{} {:.2}× / {:.2}× / {:.2}×",
                        l.kind,
                        pct(&l.server_ms, 50.0) / bs,
                        pct(&l.exec_ms, 50.0) / be,
                        pct(&l.client_ms, 50.0) / bc
                    )
                })
                .collect();
            let _ =
                writeln!(s, "  p50 ÷ webhook p50 (finished−scheduled / finished−started / client): {}", r.join(", "));
        }
        let _ = writeln!(s, "\nsundial:   {exit}");
        s
    }
}
