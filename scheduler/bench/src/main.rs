//! `sundial-bench`: what a user gets from one real `sundial serve`, measured from outside.
//!
//! **What it measures** (issue 14): the binary started with its default configuration on a
//! private MariaDB at default durability (or SQLite), J jobs created through the public API
//! (in batches, see **Creation** below) just before measuring, each firing once a second — every job
//! on the same second (`--phase aligned`: cron `* * * * * *`) or spread over the second
//! (`--phase spread`: fixed rate, job i anchored i·1000/J ms into the second) — delivered to a
//! signature-checking Rust sink that answers `200 {"status": "succeeded"}` at once. For the
//! fires scheduled in a window (from `--measure-after` s after creation ended, for `--window`
//! s), it reports misses (not received within 5 s of the window's end), exactly-once breaches,
//! redeliveries, lateness (receive − scheduled) p50/p90/p99/max, fires/s, a per-second
//! series, the CPU split, and the database's accounting of the window's runs. In the same run,
//! before Sundial starts, it measures the baselines — the *floor* (J signed POSTs at each of 5
//! whole seconds, no store, no bookkeeping, to the same sink; every request built and signed
//! ahead and waiting in a task of its own, released at the whole second, sent by a process of
//! its own as Sundial's deliveries are) and J raw multi-row
//! inserts — and prints each figure as a ratio to them, with the verdict
//! `missed == 0 and p99 ≤ 2 × floor p99`.
//! `--stall-db-at`/`--stall-db-secs` SIGSTOP the private `mariadbd` mid-window and report when
//! fires are on time again and whether any fire was lost.
//!
//! **Herds of a cron expression** (`--cron EXPR`): the jobs fire on EXPR instead of every second
//! (`0 * * * * *`: J fires at second 0 of every minute). The window opens at EXPR's first
//! instant at or after `--measure-after` s past creation and covers `--window` s from there
//! (so it holds at least one herd; one that would not start within `--cron-max-wait` s is
//! refused); expected fires = J × the instants in the window. The floor is then a *burst*: J
//! signed POSTs due at one whole second. CPU is read over a span as long as the window that
//! starts 10 s before it (the herd is claimed and committed ahead of its instant).
//!
//! **Creation** goes through `POST /api/v1/jobs/batch` (`--batch-size` jobs a call,
//! `--batches-in-flight` calls at once), after the first `--single-create-sample` jobs created
//! one `POST /api/v1/jobs` each over 8 connections; both rates are reported, with sundial's
//! resident memory after creation. `--create-only` (with `--cron`) stops there: no floor, no
//! window.
//!
//! **What it does not measure**: clusters (one node only), executors that take time or fail,
//! retries, callbacks, API latency under load, anything past the window, or another machine's
//! figures (compare the ratios, not the absolute numbers, across machines). One case per
//! invocation; it is a measurement, not a test of correctness beyond the counts it prints.
//!
//! **`sundial-bench scripts`** (module `scripts`): script jobs run by the built-in runner —
//! wasm runs/s end to end as a ratio of webhook runs/s to the sink, and one-at-a-time
//! latency of wasm, Python and JavaScript hello scripts against a webhook run, same process.
//!
//! **`sundial-bench executors`** (module `executors`): deliveries per second one executor
//! process sustains through an SDK, beside the same executor written without one.

mod baseline;
mod cpu;
mod db;
mod executors;
mod measure;
mod report;
mod scripts;
mod server;
mod sign;
mod sink;
mod small;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use clap::{Parser, ValueEnum};

use crate::baseline::FloorKind;
use crate::baseline::sleep_until_ms;
use crate::db::Target;
use crate::measure::{Expected, PERIOD_MS, Window, analyse, on_time_from, spread_offset_ms};
use crate::report::{Case, CpuPerFire, CreateOnlyReport, Creation, Rate, Report, SinkCounts, Stall};
use crate::server::{Api, JobBody, Sundial};
use crate::sink::{Sink, now_us};

/// Fires not received this long after the window's end are misses.
const GRACE_S: u64 = 5;
/// Concurrent keep-alive connections creating the jobs.
const CREATE_CONNECTIONS: usize = 8;
/// The herd's job timeout with `--hung` (issue 26's case: an executor that never answers).
const HUNG_TIMEOUT_MS: i64 = 30_000;
/// A second is "on time" when its p99 lateness is within this.
const ON_TIME_MS: f64 = 1000.0;
/// `--cron`: the CPU span starts this long before the window (the herd is claimed up to 5 s
/// and committed up to 2 s ahead of its instant), as long as the window.
const CRON_CPU_LEAD_MS: i64 = 10_000;
/// Fire times read ahead for `--cron` (the preview's most).
const CRON_PREVIEW: usize = 100;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Phase {
    /// Every job on the same whole second (cron `* * * * * *`).
    Aligned,
    /// Job i at i·1000/J ms into each second (fixed rate 1000 ms with an anchor).
    Spread,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
enum Database {
    Mysql,
    Sqlite,
}

#[derive(Parser, Debug)]
#[command(
    name = "sundial-bench",
    version,
    about = "Measure one real `sundial serve` from outside against baselines measured in the same run"
)]
struct Args {
    /// J: how many jobs, each firing once a second (or on `--cron`), up to 1,000,000.
    #[arg(long)]
    jobs: usize,
    /// The jobs fire on this cron expression (6 fields, seconds first, UTC), a herd of J at each
    /// instant, instead of every second: e.g. `0 * * * * *` (every minute at second 0). The
    /// window opens at its first instant at or after `--measure-after` s past creation; the
    /// floor is one burst of J POSTs.
    #[arg(long, conflicts_with = "phase")]
    cron: Option<String>,
    /// With `--cron`: refuse a run whose window would open more than this many seconds from
    /// now (checked before creating the jobs and after).
    #[arg(long, default_value_t = 600)]
    cron_max_wait: u64,
    /// Create the jobs, report the creation rates and sundial's memory, and stop (no floor,
    /// no window). With `--cron`, so the jobs do not fire meanwhile unless the expression says so.
    #[arg(long, requires = "cron")]
    create_only: bool,
    /// Create the first N of the J jobs one `POST /api/v1/jobs` each over 8 connections (the
    /// single create's rate), the rest in batches. 0: all in batches.
    #[arg(long, default_value_t = 0)]
    single_create_sample: usize,
    /// Jobs per `POST /api/v1/jobs/batch` call (1-1,000).
    #[arg(long, default_value_t = 1000)]
    batch_size: usize,
    /// Batch calls in flight at once.
    #[arg(long, default_value_t = 4)]
    batches_in_flight: usize,
    #[arg(long, value_enum, default_value = "aligned")]
    phase: Phase,
    #[arg(long, value_enum, default_value = "mysql")]
    database: Database,
    /// Use this MySQL/MariaDB server (a fresh database is created and dropped) instead of a
    /// private throwaway MariaDB.
    #[arg(long)]
    mysql_url: Option<String>,
    /// The `sundial` binary to run.
    #[arg(long, env = "SUNDIAL_BIN", default_value = "target/release/sundial")]
    sundial: PathBuf,
    /// Seconds from the end of job creation to the window's start (0: from the first fire).
    #[arg(long, default_value_t = 5)]
    measure_after: u64,
    /// Seconds of scheduled fires measured.
    #[arg(long, default_value_t = 30)]
    window: u64,
    /// SIGSTOP the private mariadbd this many seconds into the window …
    #[arg(long, requires = "stall_db_secs")]
    stall_db_at: Option<f64>,
    /// … and SIGCONT it after this many seconds.
    #[arg(long, requires = "stall_db_at")]
    stall_db_secs: Option<f64>,
    /// One JSON object on stdout (the text goes to stderr).
    #[arg(long)]
    json: bool,
    /// Keep Sundial's log even when the run passes.
    #[arg(long)]
    keep_logs: bool,
    /// Also measure a second tenant with one job on the same second, on a sink of its own:
    /// alone for `--small-idle-secs` before the herd's jobs are created, then in the herd's
    /// window (issue 26: its p99 within max(1.5 × alone, alone + 50 ms)).
    #[arg(long)]
    small_tenant: bool,
    /// The herd's endpoint accepts connections and never answers (an executor that hangs;
    /// job timeout 30 s): with `--small-tenant`, the small tenant's lateness beside a hung
    /// tenant (issue 26). The herd's own figures then only show that nothing reached it.
    #[arg(long, requires = "small_tenant")]
    hung: bool,
    /// Seconds the small tenant is measured alone.
    #[arg(long, default_value_t = 20)]
    small_idle_secs: u64,
    /// Extra environment for `sundial serve` (KEY=VALUE, repeatable): non-default settings,
    /// listed in the report.
    #[arg(long = "env", value_parser = parse_env)]
    envs: Vec<(String, String)>,
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("`{s}`: expected KEY=VALUE"))?;
    Ok((k.to_string(), v.to_string()))
}

fn main() -> anyhow::Result<()> {
    // Run again by itself as the floor's sender (see `baseline::floor`).
    if let Ok(spec) = std::env::var(baseline::SENDER_ENV) {
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        return rt.block_on(baseline::floor_sender(&spec));
    }
    // `sundial-bench scripts …`: script jobs through the built-in runner (see `scripts`).
    if std::env::args().nth(1).as_deref() == Some("scripts") {
        let args = scripts::ScriptsArgs::parse_from(std::env::args().skip(1));
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        return rt.block_on(async {
            tokio::select! {
                r = scripts::run(args) => r,
                _ = tokio::signal::ctrl_c() => {
                    eprintln!("interrupted: cleaning up");
                    Err(anyhow::anyhow!("interrupted"))
                }
            }
        });
    }
    // `sundial-bench executors …`: one executor process's deliveries/s, SDK and bare (see `executors`).
    if std::env::args().nth(1).as_deref() == Some("executors") {
        let args = executors::ExecutorsArgs::parse_from(std::env::args().skip(1));
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        return rt.block_on(executors::run(args));
    }
    let args = Args::parse();
    anyhow::ensure!(args.jobs > 0, "--jobs must be at least 1");
    anyhow::ensure!(args.jobs <= 1_000_000, "--jobs is at most 1,000,000");
    anyhow::ensure!((1..=1000).contains(&args.batch_size), "--batch-size must be 1 to 1,000");
    anyhow::ensure!(args.batches_in_flight > 0, "--batches-in-flight must be at least 1");
    anyhow::ensure!(args.window > 0, "--window must be at least 1");
    if args.stall_db_at.is_some() {
        anyhow::ensure!(
            args.database == Database::Mysql && args.mysql_url.is_none(),
            "--stall-db-at stops the database: only with the private MariaDB (no --sqlite, no --mysql-url)"
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async {
        tokio::select! {
            r = run(args) => r,
            _ = tokio::signal::ctrl_c() => {
                // Dropping `run` stops sundial and the private MariaDB and drops the database.
                eprintln!("interrupted: cleaning up");
                Err(anyhow::anyhow!("interrupted"))
            }
        }
    })
}

fn sh(cmd: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(cmd).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|x| x.1.trim().to_string())
        })
        .unwrap_or_else(|| "?".into())
}

/// Print progress to stderr.
fn say(msg: impl std::fmt::Display) {
    eprintln!("[sundial-bench] {msg}");
}

async fn run(args: Args) -> anyhow::Result<()> {
    sqlx::any::install_default_drivers();
    let bin = std::fs::canonicalize(&args.sundial)
        .with_context(|| format!("the sundial binary {} (build it, or pass --sundial)", args.sundial.display()))?;
    let j = args.jobs;

    say(format!("database: {:?}", args.database));
    let mut target = match (args.database, &args.mysql_url) {
        (Database::Sqlite, _) => Target::sqlite()?,
        (Database::Mysql, Some(url)) => Target::external(url).await?,
        (Database::Mysql, None) => Target::private().await?,
    };
    let database_server = target.describe().await;
    let sink = Sink::start().await?;

    let floor = match (args.create_only, &args.cron) {
        (true, _) => None,
        (false, None) => {
            say(format!(
                "floor baseline: {j} signed POSTs at each of 5 whole seconds, built ahead, released at the second"
            ));
            Some(baseline::floor(&sink, j, FloorKind::PerSecond).await?)
        }
        (false, Some(_)) => {
            say(format!("burst floor baseline: {j} signed POSTs built ahead, all released at one whole second"));
            Some(baseline::floor(&sink, j, FloorKind::Burst).await?)
        }
    };
    say(format!("raw insert baseline: {j} rows"));
    let raw = baseline::raw_inserts(&target, j).await?;

    let logdir = tempfile::Builder::new().prefix("sundial-bench-log-").tempdir()?;
    let log = logdir.path().join("sundial.log");
    say(format!("starting {} serve (log: {})", bin.display(), log.display()));
    let started = Sundial::start(&bin, target.sundial_env(), &args.envs, &log).await;
    if args.create_only {
        let outcome = match started {
            Ok(mut sundial) => {
                let r = create_only(&args, &target, &sink, &sundial, &bin, &database_server, raw).await;
                say("stopping sundial (SIGTERM)");
                let exit = sundial.stop().await;
                r.map(|mut r| {
                    r.sundial_exit = exit;
                    r
                })
            }
            Err(e) => Err(e),
        };
        target.cleanup().await;
        let report = outcome.inspect_err(|_| {
            let dir = logdir.keep();
            say(format!("failed; sundial's log is kept: {}", dir.join("sundial.log").display()));
        })?;
        let text = report.human();
        if args.json {
            eprint!("{text}");
            println!("{}", serde_json::to_string(&report)?);
        } else {
            print!("{text}");
        }
        return Ok(());
    }
    let floor = floor.context("a floor is measured for every run that fires")?;
    let outcome = match started {
        Ok(mut sundial) => {
            let outcome = measure(&args, &mut target, &sink, &mut sundial, &bin, &database_server, floor, raw).await;
            say("stopping sundial (SIGTERM)");
            let exit = sundial.stop().await;
            outcome.map(|mut r| {
                r.sundial_exit = exit;
                r
            })
        }
        Err(e) => Err(e),
    };
    target.cleanup().await;
    let mut report = match outcome {
        Ok(r) => r,
        Err(e) => {
            let dir = logdir.keep();
            say(format!("failed; sundial's log is kept: {}", dir.join("sundial.log").display()));
            return Err(e);
        }
    };
    if args.keep_logs || !report.verdict.pass {
        let dir = logdir.keep();
        report.sundial_log = Some(dir.join("sundial.log").display().to_string());
    }
    let text = report.human();
    if args.json {
        eprint!("{text}");
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print!("{text}");
    }
    Ok(())
}

/// The bench tenant (quotas raised for J jobs) and its app `bench` on `endpoint`; returns the
/// operator's client and the tenant's, and the app's signing secret.
async fn tenant_and_app(sundial: &Sundial, j: usize, endpoint: &str) -> anyhow::Result<(Api, Api, String)> {
    let op = Api::new(&sundial.base, &sundial.admin_key);
    let tenant = op.create("/api/v1/tenants", &serde_json::json!({"name": "bench"})).await?;
    server::raise_quotas(&op, tenant["id"].as_str().context("tenant without id")?, j).await?;
    let api = op.with_key(tenant["admin_key"].as_str().context("tenant without admin_key")?);
    let app = api.create("/api/v1/apps", &serde_json::json!({"name": "bench", "endpoints": [endpoint]})).await?;
    let secret = app["secret"].as_str().context("app without secret")?.to_string();
    Ok((op, api, secret))
}

/// Create the J jobs (`body(i)` each): the first `--single-create-sample` one call each over
/// [`CREATE_CONNECTIONS`], the rest through the batch endpoint. Returns the ids in order and
/// the rates, with the CPU of `procs` over the creation and sundial's memory after it.
async fn create(
    args: &Args,
    api: &Api,
    body: JobBody,
    procs: &[(&str, Option<u32>)],
    sundial_pid: Option<u32>,
) -> anyhow::Result<(Vec<String>, Creation)> {
    let j = args.jobs;
    let sample = args.single_create_sample.min(j);
    let cpu0 = cpu::sample(procs);
    let started = Instant::now();
    let mut made = Vec::with_capacity(j);
    let single = if sample > 0 {
        say(format!("creating {sample} jobs one POST /api/v1/jobs each over {CREATE_CONNECTIONS} connections"));
        let t = Instant::now();
        made.extend(server::create_jobs(api, 0..sample, body.clone(), CREATE_CONNECTIONS).await?);
        Some(Rate::new(sample, t.elapsed().as_secs_f64()))
    } else {
        None
    };
    let batch = if sample < j {
        say(format!(
            "creating {} jobs through POST /api/v1/jobs/batch, {} a call, {} calls in flight",
            j - sample,
            args.batch_size,
            args.batches_in_flight
        ));
        let t = Instant::now();
        made.extend(server::create_jobs_batched(api, sample..j, body, args.batch_size, args.batches_in_flight).await?);
        Some(Rate::new(j - sample, t.elapsed().as_secs_f64()))
    } else {
        None
    };
    let secs = started.elapsed().as_secs_f64();
    let cpu = cpu::usage(&cpu0, &cpu::sample(procs));
    made.sort_unstable_by_key(|(i, _)| *i);
    anyhow::ensure!(made.len() == j, "{} jobs created of {j}", made.len());
    let ids = made.into_iter().map(|(_, id)| id).collect();
    let creation = Creation {
        jobs: j,
        secs,
        jobs_per_sec: j as f64 / secs,
        connections: CREATE_CONNECTIONS,
        batch,
        batch_size: args.batch_size,
        batches_in_flight: args.batches_in_flight,
        single,
        sundial_rss_mib: sundial_pid.and_then(cpu::rss_kib).map(|k| k as f64 / 1024.0),
        cpu,
    };
    say(format!("created in {secs:.2} s ({:.0} jobs/s)", creation.jobs_per_sec));
    Ok((ids, creation))
}

/// `--create-only`: the tenant, the app, the jobs; the creation's figures.
async fn create_only(
    args: &Args,
    target: &Target,
    sink: &Sink,
    sundial: &Sundial,
    bin: &std::path::Path,
    database_server: &str,
    raw: baseline::RawInserts,
) -> anyhow::Result<CreateOnlyReport> {
    let expr = args.cron.clone().context("--create-only needs --cron")?;
    let (_, api, _) = tenant_and_app(sundial, args.jobs, &sink.url()).await?;
    let schedule = server::cron(&expr);
    let body: JobBody = Arc::new(move |i| server::job_body(i, schedule.clone(), None));
    let procs = [("sundial", sundial.pid()), ("mariadbd", target.server_pid())];
    let (_, creation) = create(args, &api, body, &procs, sundial.pid()).await?;
    Ok(CreateOnlyReport {
        jobs: args.jobs,
        cron: expr,
        database: target.label().to_string(),
        database_server: database_server.to_string(),
        sundial_bin: bin.display().to_string(),
        sundial_version: sh(&bin.display().to_string(), &["--version"]).unwrap_or_else(|| "?".into()),
        git_commit: sh("git", &["rev-parse", "--short", "HEAD"]),
        nproc: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        cpu_model: cpu_model(),
        creation,
        raw_inserts: raw,
        sundial_exit: String::new(),
    })
}

/// `--cron`: the window (from EXPR's first instant at or after `from_ms`, `--window` s long)
/// and EXPR's instants from now, read from the server. Refused when the window would open
/// more than `--cron-max-wait` s from now, or holds more instants than were read.
async fn cron_window(args: &Args, api: &Api, expr: &str, from_ms: i64) -> anyhow::Result<(Window, Vec<i64>)> {
    let at = server::preview(api, &server::cron(expr), CRON_PREVIEW).await?;
    let now = now_us() / 1000;
    let first = at.iter().copied().find(|t| *t >= from_ms);
    let wait_s = first.map(|f| (f - now) as f64 / 1000.0);
    let Some(first) = first.filter(|f| f - now <= args.cron_max_wait as i64 * 1000) else {
        anyhow::bail!(
            "--cron `{expr}`: the window would open {} (its first instant at least {} s from now): more than \
             --cron-max-wait {} s. Start the run closer to an instant, or pass a larger --cron-max-wait",
            first.map_or("at no instant the server could name".into(), crate::sink::rfc3339_ms),
            wait_s.map_or("?".into(), |w| format!("{w:.0}")),
            args.cron_max_wait
        );
    };
    let w = Window { start_ms: first, end_ms: first + args.window as i64 * 1000 };
    let covered = at.len() < CRON_PREVIEW || at.last().is_some_and(|l| *l >= w.end_ms);
    anyhow::ensure!(
        covered,
        "--cron `{expr}` fires more than {CRON_PREVIEW} times between now and the window's end: shorten --window"
    );
    Ok((w, at))
}

#[allow(clippy::too_many_arguments)]
// Over 100 lines on purpose: one sitting in the order it runs (create through the API, warm
// up, the window, settle, collect); each step is short and reads best in sequence.
async fn measure(
    args: &Args,
    target: &mut Target,
    sink: &Sink,
    sundial: &mut Sundial,
    bin: &std::path::Path,
    database_server: &str,
    floor: baseline::Floor,
    raw: baseline::RawInserts,
) -> anyhow::Result<Report> {
    let j = args.jobs;
    let hung = match args.hung {
        true => Some(small::Hung::start().await?),
        false => None,
    };
    let endpoint = hung.as_ref().map_or_else(|| sink.url(), small::Hung::url);
    let (op, api, secret) = tenant_and_app(sundial, j, &endpoint).await?;
    sink.set_key(sign::Key::parse(&secret)?);
    sink.take();
    sink.reset_counters();
    if let Some(expr) = &args.cron {
        // Refuse early, before creating anything, a run whose window would be too far off.
        cron_window(args, &api, expr, now_us() / 1000 + args.measure_after as i64 * 1000).await?;
    }

    // The small tenant, alone on the node first.
    let small = match args.small_tenant {
        true => {
            let small = small::Small::start(&op).await?;
            let from = (now_us() / 1000 + 3_000).div_euclid(PERIOD_MS) * PERIOD_MS;
            let w = Window { start_ms: from, end_ms: from + args.small_idle_secs as i64 * 1000 };
            say(format!("small tenant alone for {} s", args.small_idle_secs));
            sleep_until_ms(w.end_ms + 2_000).await;
            let idle = small.seen(w);
            say(format!(
                "small tenant alone: p99 {:.1} ms, {}/{} delivered",
                idle.lateness_ms.p99, idle.delivered, idle.expected
            ));
            Some((small, idle))
        }
        false => None,
    };

    let offsets: Vec<i64> = match (args.phase, &args.cron) {
        (Phase::Spread, None) => (0..j).map(|i| spread_offset_ms(i, j)).collect(),
        _ => vec![0; j],
    };
    let anchor_second = (now_us() / 1000).div_euclid(PERIOD_MS) * PERIOD_MS;
    let timeout = args.hung.then_some(HUNG_TIMEOUT_MS);
    let body: JobBody = match (&args.cron, args.phase) {
        (Some(expr), _) => {
            let schedule = server::cron(expr);
            Arc::new(move |i| server::job_body(i, schedule.clone(), timeout))
        }
        (None, Phase::Aligned) => {
            Arc::new(move |i| server::job_body(i, server::schedule(None, anchor_second), timeout))
        }
        (None, Phase::Spread) => {
            let offsets = Arc::new(offsets.clone());
            Arc::new(move |i| server::job_body(i, server::schedule(Some(offsets[i]), anchor_second), timeout))
        }
    };
    let procs = |s: &Sundial, t: &Target| {
        vec![("sundial", s.pid()), ("mariadbd", t.server_pid()), ("sundial-bench", Some(std::process::id()))]
    };
    say(format!(
        "creating {j} jobs ({})",
        args.cron.as_deref().map_or(format!("{:?}", args.phase), |c| format!("cron {c}"))
    ));
    let (job_ids, creation) = create(args, &api, body, &procs(sundial, target), sundial.pid()).await?;
    let t0_ms = now_us() / 1000;

    let from_ms = t0_ms + args.measure_after as i64 * 1000;
    let (w, instants) = match &args.cron {
        None => {
            let start_ms = (from_ms + PERIOD_MS - 1).div_euclid(PERIOD_MS) * PERIOD_MS;
            (Window { start_ms, end_ms: start_ms + args.window as i64 * 1000 }, Vec::new())
        }
        Some(expr) => cron_window(args, &api, expr, from_ms).await?,
    };
    let expected = match &args.cron {
        None => Expected::PerSecond(&offsets),
        Some(_) => Expected::Instants { jobs: j, at: &instants },
    };
    // CPU over a span as long as the window: for a herd, from before it is claimed.
    let lead_ms = if args.cron.is_some() { CRON_CPU_LEAD_MS.min(w.start_ms - t0_ms).max(0) } else { 0 };
    let cpu_span = Window { start_ms: w.start_ms - lead_ms, end_ms: w.end_ms - lead_ms };
    sleep_until_ms(cpu_span.start_ms).await;
    say(format!("measuring fires scheduled in the {} s from {}", args.window, crate::sink::rfc3339_ms(w.start_ms)));
    let cpu0 = cpu::sample(&procs(sundial, target));

    let stall = match (args.stall_db_at, args.stall_db_secs) {
        (Some(at), Some(secs)) => {
            let pid = target.server_pid().context("no private mariadbd to stop")?;
            let stop_ms = w.start_ms + (at * 1000.0) as i64;
            let resume_ms = stop_ms + (secs * 1000.0) as i64;
            Some((
                tokio::spawn(async move {
                    sleep_until_ms(stop_ms).await;
                    db::signal(pid, "STOP");
                    say(format!("mariadbd (pid {pid}) stopped"));
                    sleep_until_ms(resume_ms).await;
                    db::signal(pid, "CONT");
                    say("mariadbd resumed");
                }),
                stop_ms,
                resume_ms,
            ))
        }
        _ => None,
    };

    sleep_until_ms(cpu_span.end_ms).await;
    let cpu1 = cpu::sample(&procs(sundial, target));
    let deadline_us = (w.end_ms + GRACE_S as i64 * 1000) * 1000;
    sleep_until_ms(deadline_us / 1000).await;
    if let Some((task, _, _)) = &stall {
        while !task.is_finished() {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
    if let Some(s) = sundial.exited() {
        say(format!("sundial serve exited during the run: {s}"));
    }

    // Map the sink's interned job ids onto the creation order.
    let names = sink.job_names();
    let index: HashMap<&str, u32> = job_ids.iter().enumerate().map(|(i, id)| (id.as_str(), i as u32)).collect();
    let mut recs = sink.take();
    for r in &mut recs {
        r.job = names.get(r.job as usize).and_then(|n| index.get(n.as_str())).copied().unwrap_or(u32::MAX);
    }
    let outcome = analyse(&recs, expected, w, deadline_us);
    let small_tenant = match small {
        Some((small, idle)) => {
            let mut r = small::SmallReport::new(idle, small.seen(w));
            r.not_succeeded = small.not_succeeded(w).await;
            Some(r)
        }
        None => None,
    };
    drop(recs);
    say(format!("delivered {}/{}; reading the database's account of the window", outcome.delivered, outcome.expected));
    let missing: Vec<(String, i64)> = outcome.missing.iter().map(|(j, t)| (job_ids[*j].clone(), *t)).collect();
    let (accounting, accounting_error) = match db::account(target, w, &missing, expected.period_ms()).await {
        Ok(a) => (Some(a), None),
        Err(e) => (None, Some(format!("{e:#}"))),
    };

    let stall = stall.map(|(_, stop_ms, resume_ms)| {
        let from_sec = (resume_ms - w.start_ms).div_euclid(1000);
        Stall {
            stopped_at_s: (stop_ms - w.start_ms) as f64 / 1000.0,
            resumed_at_s: (resume_ms - w.start_ms) as f64 / 1000.0,
            on_time_again_after_s: on_time_from(&outcome.series, from_sec, ON_TIME_MS)
                .map(|s| ((s * 1000 + w.start_ms - resume_ms) as f64 / 1000.0).max(0.0)),
        }
    });
    let (ratios, mut verdict) = Report::ratios_and_verdict(&outcome, &floor, &raw, j);
    if let (true, Some(t)) = (args.hung, &small_tenant) {
        // The herd's executor never answers: only the small tenant is judged.
        verdict.pass = t.pass;
    }
    let cpu = cpu::usage(&cpu0, &cpu1);
    let cpu_per_fire = CpuPerFire::new(&cpu, outcome.delivered, target.is_sqlite(), &floor);
    let mut env_overrides: Vec<String> = args.envs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    env_overrides.sort();
    let phase = match &args.cron {
        Some(expr) => format!("cron `{expr}`"),
        None => format!("{:?}", args.phase).to_lowercase(),
    };
    Ok(Report {
        case: Case {
            jobs: j,
            phase: phase + if args.hung { ", hung executor" } else { "" },
            cron: args.cron.clone(),
            database: target.label().to_string(),
            database_server: database_server.to_string(),
            env_overrides,
            sundial_bin: bin.display().to_string(),
            sundial_version: sh(&bin.display().to_string(), &["--version"]).unwrap_or_else(|| "?".into()),
            git_commit: sh("git", &["rev-parse", "--short", "HEAD"]),
            nproc: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            cpu_model: cpu_model(),
            measure_after_s: args.measure_after,
            window_start_after_creation_s: (w.start_ms - t0_ms) as f64 / 1000.0,
            window_s: args.window,
            grace_s: GRACE_S,
            window: w,
            cpu_span,
        },
        creation,
        floor,
        raw_inserts: raw,
        sink: SinkCounts {
            bad_signatures: sink.bad_signatures(),
            unreadable: sink.unreadable(),
            cancels: sink.cancels(),
        },
        cpu,
        cpu_per_fire,
        outcome,
        accounting,
        accounting_error,
        stall,
        ratios,
        verdict,
        small_tenant,
        sundial_exit: String::new(),
        sundial_log: None,
    })
}
