//! `sundial bench`: fires/s and lateness of the real engine against raw baselines
//! measured in the same run (issue #3). `docs/benchmarks.md` has the method and results.
//!
//! One step of the bench: a fresh database; through the `Store` trait a tenant, an app
//! whose static endpoint is an in-process sink, and `rate` fixed-rate jobs firing every
//! second with anchors spread evenly over the second; a real [`Engine`] on the system
//! clock; a measurement window of `duration` seconds after a warm-up; then counts from
//! the sink (delivered, lateness) and from the store (results recorded).
//!
//! The baselines use raw SQL on a scratch copy of the `runs` table. That is the one place
//! outside `sundial-store` with SQL, on purpose: it measures what the database can do
//! without the store in between, and nothing here is on a serving path. `--trace-sql`
//! (MySQL) puts a wire-protocol proxy between the store and the server that counts every
//! statement per fire.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use sqlx::any::AnyPoolOptions;
use sqlx::{AnyConnection, AnyPool, Connection, Executor as _, Row};
use sundial_core::clock::{SharedClock, SystemClock};
use sundial_core::ids::{self, new_id};
use sundial_core::job::{FailureSpec, JobDef, JobInput, MisfireSpec, Target};
use sundial_core::keys::generate_signing_secret;
use sundial_core::schedule::ScheduleSpec;
use sundial_core::signing::{self, SigningKey};
use sundial_core::time::{parse_rfc3339, rfc3339_utc};
use sundial_core::types::{BlockStrategy, FailurePolicyKind, MisfirePolicy, RunState, ScheduleKind};
use sundial_engine::{DeliveryClient, Engine, EngineConfig, EngineStats};
use sundial_store::{App, ConnectOptions, Dialect, Job, Page, RunFilter, SqlStore, Store, Tenant};
use tokio::task::JoinSet;

const DEFAULT_MYSQL_SERVER: &str = "mysql://root@127.0.0.1:3306";
/// Rows per statement of the batched INSERT baseline.
const INSERT_BATCH: usize = 100;
/// Ids per claim-style UPDATE (the store's claim chunk).
const CLAIM_CHUNK: usize = 32;
/// Rows per transaction of the generator-shaped INSERT baseline.
const GEN_TX_ROWS: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DbKind {
    Sqlite,
    Mysql,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BlockArg {
    /// A fire whose previous run of the same job is still in flight is skipped.
    DiscardLater,
    /// A fire waits (re-checked every 500 ms) while the previous run is in flight.
    Serial,
}

#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// `sqlite` (a temporary file) or `mysql` (the server at mysql://root@127.0.0.1:3306).
    #[arg(long, value_enum, default_value = "sqlite")]
    pub database: DbKind,
    /// `mysql://user:pass@host:port`: the bench creates a fresh database `sundial_bench_<random>`
    /// on that server and drops it at the end. `sqlite://dir/file.db`: a fresh temporary file
    /// in that directory. Overrides `--database`.
    #[arg(long)]
    pub database_url: Option<String>,
    /// Fires per second: this many jobs, each firing once a second.
    #[arg(long, default_value_t = 100)]
    pub rate: u32,
    /// Seconds measured (default 30, or 10 per step with `--max`).
    #[arg(long)]
    pub duration: Option<u64>,
    /// Step the rate up through `--rates` and report the highest sustained one
    /// (delivered >= 99% of scheduled and p99 lateness <= 100 ms).
    #[arg(long)]
    pub max: bool,
    /// The rates `--max` tries, in order; it stops at the first that fails. The low steps
    /// keep the answer informative when 500/s is already out of reach.
    #[arg(long, value_delimiter = ',', default_values_t = vec![100, 200, 300, 500, 1000, 2000, 3000, 4000])]
    pub rates: Vec<u32>,
    /// Seconds of steady firing before the window opens.
    #[arg(long, default_value_t = 3)]
    pub warmup: u64,
    /// Block strategy of the bench jobs.
    #[arg(long, value_enum, default_value = "discard-later")]
    pub block: BlockArg,
    /// The engine's generation horizon in ms. Shorter than the engine default (180 s) so the
    /// first fill fits the run; the generation work per fire (one INSERT) is the same. At
    /// 20 s a refill (at half the horizon) writes fires at least 10 s ahead, past the claim
    /// window and the margin within which the generator writes fires claimed: the fires go
    /// the way they do under the default horizon (read by the peek).
    #[arg(long, default_value_t = 20_000)]
    pub horizon_ms: i64,
    /// The engine's deliveries in flight at once (also the raw POST baseline's concurrency).
    #[arg(long, default_value_t = 512)]
    pub max_inflight: usize,
    /// Database connections (MySQL; SQLite always uses one), as `serve --db-max-connections`.
    #[arg(long, default_value_t = 10)]
    pub db_max_connections: u32,
    /// Seconds each baseline runs.
    #[arg(long, default_value_t = 2.0)]
    pub baseline_secs: f64,
    /// Engines (cluster nodes) on the one database, each with its own node id and its own
    /// connection pool, in this process (MySQL only for more than one). They split the jobs
    /// by job affinity and compete for claims; the report adds each node's claim figures.
    #[arg(long, default_value_t = 1)]
    pub nodes: u32,
    /// MySQL only: route the engine's connections through an in-process proxy that reads the
    /// wire protocol and counts every statement (and its latency) per fire. The extra hop costs
    /// latency and CPU: use it for the breakdown, not for the headline numbers.
    #[arg(long)]
    pub trace_sql: bool,
}

// ---- entry point ----------------------------------------------------------------

pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SUNDIAL_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .try_init();
    sqlx::any::install_default_drivers();
    anyhow::ensure!(args.rate >= 1, "--rate must be at least 1");
    anyhow::ensure!(args.horizon_ms >= 5_000, "--horizon-ms must be at least the claim window (5000)");
    anyhow::ensure!(args.nodes >= 1, "--nodes must be at least 1");
    let clock: SharedClock = Arc::new(SystemClock);
    let secret = generate_signing_secret();
    let sink = Sink::start(&secret).await?;
    let (rates, duration) = if args.max {
        (args.rates.clone(), args.duration.unwrap_or(10))
    } else {
        (vec![args.rate], args.duration.unwrap_or(30))
    };
    anyhow::ensure!(!rates.is_empty() && duration >= 1, "nothing to measure");
    let mut baselines: Option<Baselines> = None;
    let mut results = Vec::new();
    let mut env: Option<String> = None;
    for rate in rates {
        let db = BenchDb::create(&args).await?;
        let step = tokio::select! {
            r = run_step(&args, &db, &sink, &secret, &clock, rate, duration, &mut baselines, &mut env) => r,
            _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
        };
        db.drop_db().await;
        let step = step?;
        let b = baselines.as_ref().expect("measured in the first step");
        print_step(&step, b, env.as_deref().unwrap_or(""));
        let ok = step.delivered_ratio() >= 0.99 && step.lateness.p99 <= 100.0;
        results.push((rate, ok, step));
        if args.max && !ok {
            break;
        }
    }
    if args.max {
        println!();
        println!("== --max summary ==");
        for (rate, ok, s) in &results {
            println!(
                "  {rate:>5}/s: delivered {:>6.2} %, sustained {:>7.1}/s, p99 {:>8.1} ms  {}{}",
                s.delivered_ratio() * 100.0,
                s.sustained,
                s.lateness.p99,
                if *ok { "ok" } else { "FAILS (needs >= 99 % delivered, p99 <= 100 ms)" },
                match s.other_cpu() {
                    Some(o) if o > 25.0 => format!("  [disturbed: other processes {o:.0} % CPU]"),
                    _ => String::new(),
                }
            );
        }
        match results.iter().filter(|r| r.1).map(|r| r.0).max() {
            Some(r) => println!("  highest sustained rate: {r} fires/s"),
            None => println!("  highest sustained rate: none of the rates tried"),
        }
        let best = results.iter().filter(|r| r.1).map(|r| r.0).max().unwrap_or(0);
        println!("  target >= 3000 fires/s with p99 <= 100 ms: {}", if best >= 3000 { "MET" } else { "NOT MET" });
    }
    Ok(())
}

// ---- the database under test ------------------------------------------------------

enum BenchDb {
    Sqlite {
        url: String,
        _dir: tempfile::TempDir,
    },
    MySql {
        /// `mysql://user@host:port`, without a database.
        server: String,
        /// `?…` of the given URL, if any.
        query: String,
        name: String,
        url: String,
    },
}

impl BenchDb {
    async fn create(args: &BenchArgs) -> anyhow::Result<BenchDb> {
        let url = match (&args.database_url, args.database) {
            (Some(u), _) => u.clone(),
            (None, DbKind::Mysql) => DEFAULT_MYSQL_SERVER.to_string(),
            (None, DbKind::Sqlite) => String::new(),
        };
        if url.is_empty() || url.starts_with("sqlite:") {
            let parent = url
                .strip_prefix("sqlite://")
                .or_else(|| url.strip_prefix("sqlite:"))
                .map(|p| p.split('?').next().unwrap_or(p))
                .and_then(|p| std::path::Path::new(p).parent())
                .filter(|d| !d.as_os_str().is_empty())
                .map(|d| d.to_path_buf());
            let dir = match parent {
                Some(d) => {
                    std::fs::create_dir_all(&d)?;
                    tempfile::Builder::new().prefix("sundial-bench").tempdir_in(d)?
                }
                None => tempfile::Builder::new().prefix("sundial-bench").tempdir()?,
            };
            let url = format!("sqlite://{}", dir.path().join("sundial.db").display());
            return Ok(BenchDb::Sqlite { url, _dir: dir });
        }
        let Some(rest) = url.strip_prefix("mysql://").or_else(|| url.strip_prefix("mariadb://")) else {
            bail!("--database-url must start with mysql://, mariadb:// or sqlite://");
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, format!("?{q}")),
            None => (rest, String::new()),
        };
        let host = rest.split('/').next().unwrap_or(rest);
        let server = format!("mysql://{host}");
        let name = format!("sundial_bench_{:016x}", rand::random::<u64>());
        let mut conn = AnyConnection::connect(&format!("{server}/mysql{query}"))
            .await
            .with_context(|| format!("connecting to the MySQL/MariaDB server {}", redact(&server)))?;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")))
            .execute(&mut conn)
            .await
            .context("creating the bench database")?;
        let _ = conn.close().await;
        let url = format!("{server}/{name}{query}");
        Ok(BenchDb::MySql { server, query, name, url })
    }

    fn url(&self) -> &str {
        match self {
            BenchDb::Sqlite { url, .. } | BenchDb::MySql { url, .. } => url,
        }
    }

    fn dialect(&self) -> Dialect {
        match self {
            BenchDb::Sqlite { .. } => Dialect::Sqlite,
            BenchDb::MySql { .. } => Dialect::MySql,
        }
    }

    fn server_url(&self) -> Option<String> {
        match self {
            BenchDb::MySql { server, query, .. } => Some(format!("{server}/mysql{query}")),
            BenchDb::Sqlite { .. } => None,
        }
    }

    /// Drop the MySQL database (the SQLite temp dir goes with `self`).
    async fn drop_db(self) {
        if let BenchDb::MySql { name, .. } = &self {
            let server = self.server_url().expect("mysql");
            match AnyConnection::connect(&server).await {
                Ok(mut conn) => {
                    if let Err(e) = sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name}")))
                        .execute(&mut conn)
                        .await
                    {
                        eprintln!("warning: could not drop database {name}: {e}");
                    }
                    let _ = conn.close().await;
                }
                Err(e) => eprintln!("warning: could not drop database {name}: {e}"),
            }
        }
    }
}

fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://***@{}", &url[..s], &url[at + 1..]),
        _ => url.to_string(),
    }
}

// ---- the sink executor --------------------------------------------------------------

#[derive(Debug, Clone)]
struct Delivery {
    run_id: String,
    scheduled_ms: i64,
    recv_us: i64,
}

#[derive(Debug, Default)]
struct SinkState {
    seen: HashSet<String>,
    deliveries: Vec<Delivery>,
    duplicates: u64,
    bad_signatures: u64,
    /// Deliveries scheduled inside `window` (start inclusive, end exclusive).
    window: (i64, i64),
    in_window: u64,
}

/// An executor on 127.0.0.1:0: `/hook` takes the engine's deliveries, `/raw` the raw
/// POST baseline's. Both verify the Standard Webhooks signature with the app secret.
struct Sink {
    base: String,
    state: Arc<Mutex<SinkState>>,
    raw: Arc<AtomicU64>,
    _server: tokio::task::JoinHandle<()>,
}

fn now_us() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

impl Sink {
    async fn start(secret: &str) -> anyhow::Result<Sink> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let key = Arc::new(SigningKey::parse(secret).map_err(|e| anyhow::anyhow!("{e}"))?);
        let state = Arc::new(Mutex::new(SinkState::default()));
        let raw = Arc::new(AtomicU64::new(0));
        let (st, rw) = (state.clone(), raw.clone());
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
            let (st, rw, key) = (st.clone(), rw.clone(), key.clone());
            async move {
                let recv_us = now_us();
                let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
                let verified = signing::verify(
                    std::slice::from_ref(&*key),
                    h(signing::HEADER_ID),
                    h(signing::HEADER_TIMESTAMP),
                    h(signing::HEADER_SIGNATURE),
                    &body,
                    recv_us / 1_000_000,
                );
                if verified.is_err() {
                    st.lock().expect("sink lock").bad_signatures += 1;
                    return (StatusCode::UNAUTHORIZED, axum::Json(json!({"code": "bad_signature"}))).into_response();
                }
                if uri.path() == "/raw" {
                    rw.fetch_add(1, Ordering::Relaxed);
                } else {
                    let scheduled_ms = h("sundial-scheduled-at").and_then(|s| parse_rfc3339("", s).ok());
                    let msg_id = h(signing::HEADER_ID).unwrap_or_default();
                    let mut g = st.lock().expect("sink lock");
                    if g.seen.insert(msg_id.to_string()) {
                        if let Some(scheduled_ms) = scheduled_ms {
                            if scheduled_ms >= g.window.0 && scheduled_ms < g.window.1 {
                                g.in_window += 1;
                            }
                            let run_id = h("sundial-run-id").unwrap_or_default().to_string();
                            g.deliveries.push(Delivery { run_id, scheduled_ms, recv_us });
                        }
                    } else {
                        g.duplicates += 1;
                    }
                }
                axum::Json(json!({"status": "succeeded"})).into_response()
            }
        });
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                eprintln!("sink stopped: {e}");
            }
        });
        Ok(Sink { base, state, raw, _server: server })
    }

    fn reset(&self, window: (i64, i64)) {
        let mut g = self.state.lock().expect("sink lock");
        *g = SinkState { window, ..SinkState::default() };
    }

    fn in_window(&self) -> u64 {
        self.state.lock().expect("sink lock").in_window
    }
}

// ---- one step ------------------------------------------------------------------

#[derive(Debug, Clone, Copy, Default)]
struct Pct {
    p50: f64,
    p99: f64,
    max: f64,
}

/// Nearest-rank percentiles.
fn pct(mut v: Vec<f64>) -> Pct {
    if v.is_empty() {
        return Pct::default();
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    Pct { p50: at(0.50), p99: at(0.99), max: v[v.len() - 1] }
}

#[derive(Debug)]
struct Step {
    dialect: Dialect,
    rate: u32,
    duration: u64,
    setup_secs: f64,
    scheduled: u64,
    runs_in_store: u64,
    states: BTreeMap<String, u64>,
    delivered: u64,
    duplicates: u64,
    bad_signatures: u64,
    sustained: f64,
    lateness: Pct,
    /// scheduled → dispatch transaction starts (`started_at_ms`).
    ph_start: Pct,
    /// dispatch start → delivery received by the sink.
    ph_deliver: Pct,
    /// delivery received → result recording starts (`finished_at_ms`).
    ph_result: Pct,
    /// With `--trace-sql`: each statement's count per scheduled fire and mean latency.
    per_fire: Option<Vec<SqlPerFire>>,
    /// Each engine's claim figures over the window.
    nodes: Vec<NodeStep>,
    /// Transactions the engines ran again after a deadlock, over the window.
    deadlock_retries: u64,
    /// Server-wide InnoDB deltas over the window: deadlocks, row lock waits, row lock time (ms).
    innodb: Option<[u64; 3]>,
    cpu_bench: Option<f64>,
    cpu_db: Option<f64>,
    /// Busy CPU of the whole machine (all processes), 100 % = one core.
    cpu_machine: Option<f64>,
}

impl Step {
    /// CPU used during the window by processes other than the bench and the database server.
    fn other_cpu(&self) -> Option<f64> {
        Some((self.cpu_machine? - self.cpu_bench? - self.cpu_db.unwrap_or(0.0)).max(0.0))
    }
    fn delivered_ratio(&self) -> f64 {
        if self.scheduled == 0 { 0.0 } else { self.delivered as f64 / self.scheduled as f64 }
    }
    fn succeeded(&self) -> u64 {
        self.states.get("succeeded").copied().unwrap_or(0)
    }
}

async fn sleep_until_ms(clock: &SharedClock, t: i64) {
    let d = t - clock.now_ms();
    if d > 0 {
        tokio::time::sleep(Duration::from_millis(d as u64)).await;
    }
}

#[allow(clippy::too_many_arguments)]
async fn run_step(
    args: &BenchArgs,
    db: &BenchDb,
    sink: &Sink,
    secret: &str,
    clock: &SharedClock,
    rate: u32,
    duration: u64,
    baselines: &mut Option<Baselines>,
    env: &mut Option<String>,
) -> anyhow::Result<Step> {
    let dialect = db.dialect();
    anyhow::ensure!(
        args.nodes == 1 || dialect == Dialect::MySql,
        "--nodes {} needs MySQL/MariaDB: clusters run on MySQL only",
        args.nodes
    );
    let n = rate as i64;
    eprintln!("[{rate}/s] fresh {} database; setting up {n} jobs", dialect_name(dialect));
    let trace = match (args.trace_sql, db) {
        (true, BenchDb::MySql { .. }) => Some(SqlTrace::start(db).await?),
        (true, BenchDb::Sqlite { .. }) => {
            eprintln!("--trace-sql applies to MySQL only; ignored");
            None
        }
        (false, _) => None,
    };
    let mut opts = ConnectOptions::new(trace.as_ref().map(|t| t.url.as_str()).unwrap_or(db.url()));
    opts.max_connections = args.db_max_connections;
    let sql_store = Arc::new(SqlStore::open(&opts, clock.now_ms()).await.context("opening the bench database")?);
    let store: Arc<dyn Store> = sql_store.clone();
    if env.is_none() {
        *env = Some(db_version(db).await.unwrap_or_else(|e| format!("version unknown: {e}")));
    }

    // Tenant, app (static endpoint: the sink), and the jobs.
    let now = clock.now_ms();
    let tenant = Tenant { id: new_id(ids::TENANT), name: "bench".into(), created_at_ms: now };
    store.tenant_insert(&tenant).await?;
    let app = App {
        id: new_id(ids::APP),
        tenant_id: tenant.id.clone(),
        name: "sink".into(),
        description: "sundial bench sink".into(),
        endpoints: vec![format!("{}/hook", sink.base)],
        secret: secret.to_string(),
        previous_secret: None,
        previous_expires_ms: None,
        created_at_ms: now,
        updated_at_ms: now,
    };
    store.app_insert(&app).await?;

    // Baselines once, on the first fresh database, before any engine runs.
    if baselines.is_none() {
        eprintln!("[{rate}/s] measuring baselines ({} s each)", args.baseline_secs);
        *baselines = Some(measure_baselines(args, db, sink, &app, clock).await?);
    }

    // No run exists before `first_fire`: jobs start with `generated_until_ms` there, so the
    // engine's first generation is an ordinary refill (H/2 of fires, due H/2 ahead).
    let setup_start = Instant::now();
    let margin_ms = 3_000 + n / 2;
    let first_fire = (clock.now_ms() + args.horizon_ms / 2 + margin_ms + 999) / 1000 * 1000;
    let mut set = JoinSet::new();
    for i in 0..n {
        while set.len() >= 16 {
            set.join_next().await.expect("non-empty")??;
        }
        let job = bench_job(args, &tenant, &app, i, n, first_fire, clock.now_ms())?;
        let st = store.clone();
        set.spawn(async move { st.job_insert(&job, &[]).await });
    }
    while let Some(r) = set.join_next().await {
        r??;
    }
    let setup_secs = setup_start.elapsed().as_secs_f64();
    if clock.now_ms() > first_fire - args.horizon_ms / 2 {
        eprintln!("[{rate}/s] warning: setup took {setup_secs:.1} s; the first generation has less than H/2 to finish");
    }

    // The engines, as `serve` starts them: one per node, each with its own pool. They meet
    // in the nodes table within a heartbeat (3 s), well before the first fire.
    let mut node_stores = vec![sql_store.clone()];
    for _ in 1..args.nodes {
        node_stores.push(Arc::new(SqlStore::open(&opts, clock.now_ms()).await.context("opening a node's pool")?));
    }
    let engines: Vec<Arc<Engine>> = node_stores
        .iter()
        .enumerate()
        .map(|(i, st)| {
            let mut cfg = EngineConfig::new(format!("node_bench_{}", i + 1));
            cfg.horizon_ms = args.horizon_ms;
            cfg.max_inflight = args.max_inflight;
            let st: Arc<dyn Store> = st.clone();
            Engine::new(st, clock.clone(), cfg, Arc::new(tokio::sync::Notify::new()))
        })
        .collect();
    let t0 = first_fire + args.warmup as i64 * 1000;
    let t1 = t0 + duration as i64 * 1000;
    sink.reset((t0, t1));
    for e in &engines {
        e.start().await;
    }
    eprintln!(
        "[{rate}/s] {} started; first fire in {:.1} s, window {duration} s after {} s warm-up",
        if engines.len() == 1 { "engine".to_string() } else { format!("{} engines", engines.len()) },
        (first_fire - clock.now_ms()) as f64 / 1000.0,
        args.warmup
    );

    // The window: statements (with --trace-sql) and CPU time around it.
    let db_pid = match db.server_url() {
        Some(u) => mysql_server_pid(&u).await,
        None => None,
    };
    sleep_until_ms(clock, t0).await;
    if let Some(t) = &trace {
        t.reset();
    }
    let stats0: Vec<EngineStats> = engines.iter().map(|e| e.stats()).collect();
    let retries0 = sundial_engine::deadlock_retries();
    let locks0 = innodb_lock_status(db).await;
    let (cpu0, dbcpu0, wall0) = (cpu_ticks("self"), db_pid.as_deref().and_then(cpu_ticks), Instant::now());
    let machine0 = machine_ticks();
    sleep_until_ms(clock, t1).await;
    let sql = trace.as_ref().map(|t| t.snapshot());
    let nodes: Vec<NodeStep> = engines
        .iter()
        .zip(&stats0)
        .map(|(e, s0)| NodeStep {
            id: e.config().node_id.clone(),
            buckets: e.owned_buckets().count_ones(),
            stats: stats_delta(s0, &e.stats()),
        })
        .collect();
    let deadlock_retries = sundial_engine::deadlock_retries() - retries0;
    let innodb = match (locks0, innodb_lock_status(db).await) {
        (Some(a), Some(b)) => Some([b[0] - a[0], b[1] - a[1], b[2] - a[2]]),
        _ => None,
    };
    let (cpu1, dbcpu1, wall) = (cpu_ticks("self"), db_pid.as_deref().and_then(cpu_ticks), wall0.elapsed());
    let machine1 = machine_ticks();

    // Drain: wait for the window's stragglers (until all arrive or none for 2 s, at most 15 s).
    let expected = n as u64 * duration;
    let drain_start = Instant::now();
    let (mut last, mut last_change) = (sink.in_window(), Instant::now());
    while sink.in_window() < expected && drain_start.elapsed() < Duration::from_secs(15) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let c = sink.in_window();
        if c != last {
            (last, last_change) = (c, Instant::now());
        } else if last_change.elapsed() > Duration::from_secs(2) {
            break;
        }
    }
    for e in &engines {
        e.shutdown(Duration::from_secs(10)).await;
    }

    // Count: the sink's deliveries of window fires, and the store's runs of the window.
    let (deliveries, duplicates, bad_signatures) = {
        let g = sink.state.lock().expect("sink lock");
        let d: Vec<Delivery> =
            g.deliveries.iter().filter(|d| d.scheduled_ms >= t0 && d.scheduled_ms < t1).cloned().collect();
        (d, g.duplicates, g.bad_signatures)
    };
    let mut states: BTreeMap<String, u64> = BTreeMap::new();
    let mut runs: HashMap<String, (i64, Option<i64>, Option<i64>)> = HashMap::new();
    let mut after: Option<String> = None;
    loop {
        let filter = RunFilter { from_ms: Some(t0), to_ms: Some(t1), ..RunFilter::default() };
        let page = store.run_list(&tenant.id, &filter, &Page { limit: 5_000, after: after.clone() }).await?;
        for r in &page {
            *states.entry(r.state.to_string()).or_default() += 1;
            if r.state == RunState::Succeeded {
                runs.insert(r.id.clone(), (r.scheduled_at_ms, r.started_at_ms, r.finished_at_ms));
            }
        }
        match page.last() {
            Some(r) if page.len() == 5_000 => after = Some(format!("{}:{}", r.scheduled_at_ms, r.id)),
            _ => break,
        }
    }
    for st in &node_stores {
        st.close().await;
    }

    let lateness = pct(deliveries.iter().map(|d| (d.recv_us - d.scheduled_ms * 1000) as f64 / 1000.0).collect());
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for d in &deliveries {
        if let Some((sched, Some(started), finished)) = runs.get(&d.run_id) {
            // Store stamps are whole milliseconds: compare in whole milliseconds.
            let recv_ms = (d.recv_us / 1000) as f64;
            a.push((started - sched) as f64);
            b.push(recv_ms - *started as f64);
            if let Some(f) = finished {
                c.push(*f as f64 - recv_ms);
            }
        }
    }
    let last_recv_ms = deliveries.iter().map(|d| d.recv_us / 1000).max().unwrap_or(t1);
    let span_s = ((last_recv_ms - t0) as f64 / 1000.0).max(duration as f64);
    let fires_in_window = expected as f64;
    let per_fire = sql.map(|m| {
        let mut v: Vec<SqlPerFire> = m
            .into_iter()
            .map(|(label, st)| SqlPerFire {
                label,
                per_fire: st.count as f64 / fires_in_window,
                avg_ms: st.total_us as f64 / st.count.max(1) as f64 / 1000.0,
            })
            .collect();
        v.sort_by(|a, b| b.per_fire.total_cmp(&a.per_fire).then(a.label.cmp(&b.label)));
        v
    });
    let secs = wall.as_secs_f64();
    let cpu = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => Some((b.saturating_sub(a)) as f64 / 100.0 / secs * 100.0),
        _ => None,
    };
    Ok(Step {
        dialect,
        rate,
        duration,
        setup_secs,
        scheduled: expected,
        runs_in_store: states.values().sum(),
        states,
        delivered: deliveries.len() as u64,
        duplicates,
        bad_signatures,
        sustained: deliveries.len() as f64 / span_s,
        lateness,
        ph_start: pct(a),
        ph_deliver: pct(b),
        ph_result: pct(c),
        per_fire,
        nodes,
        deadlock_retries,
        innodb,
        cpu_bench: cpu(cpu0, cpu1),
        cpu_db: cpu(dbcpu0, dbcpu1),
        cpu_machine: match (machine0, machine1) {
            (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => Some(
                (b1 - b0) as f64 / (t1 - t0) as f64
                    * std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
                    * 100.0,
            ),
            _ => None,
        },
    })
}

/// Job `i` of `n`: fixed rate every second, anchored `i/n` of a second after `first_fire`.
fn bench_job(
    args: &BenchArgs,
    tenant: &Tenant,
    app: &App,
    i: i64,
    n: i64,
    first_fire: i64,
    now: i64,
) -> anyhow::Result<Job> {
    let input = JobInput {
        name: format!("bench-{i:05}"),
        description: None,
        app: app.name.clone(),
        handler: Some("bench.noop".into()),
        script: None,
        schedule: ScheduleSpec {
            kind: ScheduleKind::FixedRate,
            expression: None,
            timezone: None,
            every_ms: Some(1000),
            anchor: Some(rfc3339_utc(first_fire + i * 1000 / n)),
            at: None,
            start_at: None,
            end_at: None,
        },
        params: Some(json!({"i": i})),
        route: None,
        block: Some(match args.block {
            BlockArg::DiscardLater => BlockStrategy::DiscardLater,
            BlockArg::Serial => BlockStrategy::Serial,
        }),
        // Late fires are still delivered (and show up as lateness) rather than dropped.
        misfire: Some(MisfireSpec {
            policy: MisfirePolicy::FireAll,
            threshold_ms: None,
            catchup_window_ms: None,
            max_catchup: None,
        }),
        failure: Some(FailureSpec {
            policy: FailurePolicyKind::Discard,
            max_retries: None,
            backoff: None,
            allow_overlap: None,
        }),
        timeout_ms: Some(30_000),
        max_concurrency: None,
        children: None,
        state: None,
    };
    let def = JobDef::parse(&input, now).map_err(|e| anyhow::anyhow!("bench job: {e:?}"))?;
    let Target::Handler(handler) = def.target.clone() else { bail!("bench jobs run a handler") };
    let mut job = Job::from_def(def, new_id(ids::JOB), &tenant.id, app.id.clone(), Some(handler), None, now);
    job.generated_until_ms = Some(first_fire);
    Ok(job)
}

/// One engine's figures over the window.
#[derive(Debug)]
struct NodeStep {
    id: String,
    /// Job buckets it owned at the end of the window.
    buckets: u32,
    stats: EngineStats,
}

fn stats_delta(a: &EngineStats, b: &EngineStats) -> EngineStats {
    EngineStats {
        claim_calls: b.claim_calls - a.claim_calls,
        claim_empty: b.claim_empty - a.claim_empty,
        claimed: b.claimed - a.claimed,
        claimed_foreign: b.claimed_foreign - a.claimed_foreign,
        claim_failures: b.claim_failures - a.claim_failures,
        claim_rollbacks: b.claim_rollbacks - a.claim_rollbacks,
        dispatched: b.dispatched - a.dispatched,
        peeked: b.peeked - a.peeked,
        claimed_at_insert: b.claimed_at_insert - a.claimed_at_insert,
    }
}

/// MySQL/MariaDB `Innodb_deadlocks`, `Innodb_row_lock_waits`, `Innodb_row_lock_time` (ms):
/// counters of the whole server, not just the bench database.
async fn innodb_lock_status(db: &BenchDb) -> Option<[u64; 3]> {
    let mut conn = AnyConnection::connect(&db.server_url()?).await.ok()?;
    let rows = sqlx::query(
        "SELECT VARIABLE_NAME, CAST(VARIABLE_VALUE AS CHAR) FROM information_schema.GLOBAL_STATUS \
         WHERE VARIABLE_NAME IN ('INNODB_DEADLOCKS', 'INNODB_ROW_LOCK_WAITS', 'INNODB_ROW_LOCK_TIME')",
    )
    .fetch_all(&mut conn)
    .await
    .ok()?;
    let _ = conn.close().await;
    let mut out = [0u64; 3];
    let mut found = 0;
    for r in rows {
        let (name, value): (String, String) = (r.try_get(0).ok()?, r.try_get(1).ok()?);
        let i = match name.to_ascii_uppercase().as_str() {
            "INNODB_DEADLOCKS" => 0,
            "INNODB_ROW_LOCK_WAITS" => 1,
            _ => 2,
        };
        out[i] = value.trim().parse().ok()?;
        found += 1;
    }
    (found == 3).then_some(out)
}

fn dialect_name(d: Dialect) -> &'static str {
    match d {
        Dialect::MySql => "MySQL/MariaDB",
        Dialect::Sqlite => "SQLite",
    }
}

async fn db_version(db: &BenchDb) -> anyhow::Result<String> {
    let mut conn = AnyConnection::connect(db.url()).await?;
    let sql = match db.dialect() {
        Dialect::MySql => "SELECT VERSION()",
        Dialect::Sqlite => "SELECT sqlite_version()",
    };
    let v: String = sqlx::query(sql).fetch_one(&mut conn).await?.try_get(0)?;
    let extra = match db.dialect() {
        Dialect::MySql => {
            let r = sqlx::query("SELECT CAST(@@innodb_flush_log_at_trx_commit AS CHAR), CAST(@@sync_binlog AS CHAR)")
                .fetch_one(&mut conn)
                .await?;
            let (f, s): (String, String) = (r.try_get(0)?, r.try_get(1)?);
            format!(" (innodb_flush_log_at_trx_commit={f}, sync_binlog={s})")
        }
        Dialect::Sqlite => " (WAL, synchronous=NORMAL, one connection)".to_string(),
    };
    let _ = conn.close().await;
    Ok(format!("{} {v}{extra}", if db.dialect() == Dialect::MySql { "MariaDB/MySQL" } else { "SQLite" }))
}

/// utime + stime of a process in clock ticks (100 per second on Linux).
fn cpu_ticks(pid: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// (busy, total) jiffies of all CPUs, from /proc/stat.
fn machine_ticks() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let f: Vec<u64> = s.lines().next()?.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    let total: u64 = f.iter().take(8).sum();
    let idle = f.get(3)? + f.get(4)?;
    Some((total - idle, total))
}

/// The database server's process id, when it runs on this machine (for its CPU time):
/// its `@@pid_file`, if that names a live local process of the server.
async fn mysql_server_pid(server_url: &str) -> Option<String> {
    let mut conn = AnyConnection::connect(server_url).await.ok()?;
    let path: Option<String> = sqlx::query("SELECT @@pid_file").fetch_one(&mut conn).await.ok()?.try_get(0).ok();
    let _ = conn.close().await;
    let pid = std::fs::read_to_string(path?).ok()?.trim().to_string();
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    matches!(comm.trim(), "mariadbd" | "mysqld").then_some(pid)
}

// ---- SQL trace: a counting proxy for the MySQL wire protocol ----------------------------

#[derive(Debug, Clone)]
struct SqlPerFire {
    label: String,
    per_fire: f64,
    avg_ms: f64,
}

#[derive(Debug, Default, Clone, Copy)]
struct SqlStat {
    count: u64,
    total_us: u64,
}

/// What a connection sent and is waiting for an answer to.
enum Sent {
    Statement(String),
    Prepare(String),
}

#[derive(Default)]
struct ConnTrace {
    /// Prepared statement id → its text.
    prepared: HashMap<u32, String>,
    waiting: std::collections::VecDeque<(Sent, Instant)>,
}

/// Forwards 127.0.0.1:<port> to the MySQL server and reads both directions: a command
/// packet (sequence 0) from the client starts a round trip, the server's first answer
/// packet (sequence 1) ends it. Prepared statements are named by the text they were
/// prepared from.
struct SqlTrace {
    url: String,
    stats: Arc<Mutex<HashMap<String, SqlStat>>>,
    _task: tokio::task::JoinHandle<()>,
}

#[derive(Clone, Copy, PartialEq)]
enum Dir {
    ToServer,
    ToClient,
}

impl SqlTrace {
    async fn start(db: &BenchDb) -> anyhow::Result<SqlTrace> {
        let BenchDb::MySql { server, query, name, .. } = db else { bail!("--trace-sql needs MySQL") };
        let rest = server.strip_prefix("mysql://").unwrap_or(server);
        let (userinfo, hostport) = match rest.rfind('@') {
            Some(at) => (&rest[..=at], &rest[at + 1..]),
            None => ("", rest),
        };
        let upstream = if hostport.contains(':') { hostport.to_string() } else { format!("{hostport}:3306") };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let q = if query.is_empty() { "?ssl-mode=disabled".to_string() } else { format!("{query}&ssl-mode=disabled") };
        let url = format!("mysql://{userinfo}127.0.0.1:{port}/{name}{q}");
        let stats: Arc<Mutex<HashMap<String, SqlStat>>> = Arc::default();
        let st = stats.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (st, upstream) = (st.clone(), upstream.clone());
                tokio::spawn(async move {
                    let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else { return };
                    let _ = (client.set_nodelay(true), server.set_nodelay(true));
                    let conn = Arc::new(Mutex::new(ConnTrace::default()));
                    let (cr, cw) = client.into_split();
                    let (sr, sw) = server.into_split();
                    tokio::join!(
                        pump(cr, sw, conn.clone(), st.clone(), Dir::ToServer),
                        pump(sr, cw, conn, st, Dir::ToClient)
                    );
                });
            }
        });
        Ok(SqlTrace { url, stats, _task: task })
    }

    fn reset(&self) {
        self.stats.lock().expect("trace lock").clear();
    }

    fn snapshot(&self) -> HashMap<String, SqlStat> {
        self.stats.lock().expect("trace lock").clone()
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    conn: Arc<Mutex<ConnTrace>>,
    stats: Arc<Mutex<HashMap<String, SqlStat>>>,
    dir: Dir,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
        pending.extend_from_slice(&buf[..n]);
        let mut off = 0;
        while pending.len() - off >= 4 {
            let len = u32::from_le_bytes([pending[off], pending[off + 1], pending[off + 2], 0]) as usize;
            if pending.len() - off < 4 + len {
                break;
            }
            on_packet(dir, pending[off + 3], &pending[off + 4..off + 4 + len], &conn, &stats);
            off += 4 + len;
        }
        pending.drain(..off);
    }
    let _ = to.shutdown().await;
}

fn sql_label(text: &[u8]) -> String {
    let t = String::from_utf8_lossy(text);
    let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
    if t.chars().count() > 150 { format!("{}…", t.chars().take(150).collect::<String>()) } else { t }
}

fn on_packet(dir: Dir, seq: u8, payload: &[u8], conn: &Mutex<ConnTrace>, stats: &Mutex<HashMap<String, SqlStat>>) {
    let now = Instant::now();
    let mut c = conn.lock().expect("trace lock");
    match dir {
        Dir::ToServer if seq == 0 && !payload.is_empty() => {
            let sent = match payload[0] {
                0x03 => Sent::Statement(sql_label(&payload[1..])),
                0x16 => Sent::Prepare(sql_label(&payload[1..])),
                0x17 if payload.len() >= 5 => {
                    let id = u32::from_le_bytes([payload[1], payload[2], payload[3], payload[4]]);
                    Sent::Statement(c.prepared.get(&id).cloned().unwrap_or_else(|| format!("EXECUTE #{id}")))
                }
                0x0e => Sent::Statement("(ping)".into()),
                // Close, quit, long data: no answer comes.
                0x19 | 0x01 | 0x18 => return,
                other => Sent::Statement(format!("(command {other:#04x})")),
            };
            c.waiting.push_back((sent, now));
        }
        Dir::ToClient if seq == 1 => {
            let Some((sent, at)) = c.waiting.pop_front() else { return };
            let label = match sent {
                Sent::Statement(l) => l,
                Sent::Prepare(text) => {
                    if payload.len() >= 5 && payload[0] == 0 {
                        let id = u32::from_le_bytes([payload[1], payload[2], payload[3], payload[4]]);
                        c.prepared.insert(id, text.clone());
                    }
                    format!("(prepare) {text}")
                }
            };
            let mut g = stats.lock().expect("trace lock");
            let e = g.entry(label).or_default();
            e.count += 1;
            e.total_us += now.duration_since(at).as_micros() as u64;
        }
        _ => {}
    }
}

// ---- baselines -------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Baselines {
    post_concurrency: usize,
    post_per_s: f64,
    post_rtt: Pct,
    post_rtt_one: Pct,
    db_conns: u32,
    insert_rows_per_s: f64,
    insert_stmts_per_s: f64,
    gen_rows_per_s: f64,
    claim_stmts_per_s: f64,
    commits_per_s: f64,
}

async fn measure_baselines(
    args: &BenchArgs,
    db: &BenchDb,
    sink: &Sink,
    app: &App,
    clock: &SharedClock,
) -> anyhow::Result<Baselines> {
    let secs = args.baseline_secs;
    let (post_per_s, post_rtt) = post_baseline(sink, app, clock, args.max_inflight, secs).await?;
    let (_, post_rtt_one) = post_baseline(sink, app, clock, 1, secs.min(1.0)).await?;
    let conns = match db.dialect() {
        Dialect::MySql => args.db_max_connections,
        Dialect::Sqlite => 1,
    };
    let d = db_baselines(db, conns, secs).await?;
    Ok(Baselines {
        post_concurrency: args.max_inflight,
        post_per_s,
        post_rtt,
        post_rtt_one,
        db_conns: conns,
        insert_rows_per_s: d.0,
        insert_stmts_per_s: d.0 / INSERT_BATCH as f64,
        gen_rows_per_s: d.1,
        claim_stmts_per_s: d.2,
        commits_per_s: d.3,
    })
}

/// Signed POSTs straight to the sink with the engine's own client (`DeliveryClient`:
/// same reqwest settings, same signing), `concurrency` at a time. Returns POST/s and RTTs.
async fn post_baseline(
    sink: &Sink,
    app: &App,
    clock: &SharedClock,
    concurrency: usize,
    secs: f64,
) -> anyhow::Result<(f64, Pct)> {
    let client = DeliveryClient::new(clock.clone());
    let url = format!("{}/raw", sink.base);
    let before = sink.raw.load(Ordering::Relaxed);
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let start = Instant::now();
    let mut set = JoinSet::new();
    for w in 0..concurrency {
        let (client, app, url) = (client.clone(), app.clone(), url.clone());
        set.spawn(async move {
            let mut rtts = Vec::new();
            let mut errors = 0u64;
            let mut i = 0u64;
            while Instant::now() < deadline {
                i += 1;
                let run_id = format!("run_raw_{w}_{i}");
                let body = serde_json::to_vec(&json!({
                    "run_id": run_id, "job_id": "job_raw", "job": "bench-raw", "handler": "bench.noop",
                    "params": {"i": w}, "attempt": 1, "scheduled_at": rfc3339_utc(0), "trigger": "schedule",
                    "shard": {"index": 0, "total": 1},
                }))
                .expect("JSON");
                let msg_id = format!("msg_{run_id}_0_1");
                let headers = [
                    ("sundial-run-id", run_id.clone()),
                    ("sundial-attempt", "1".to_string()),
                    ("sundial-shard", "0/1".to_string()),
                ];
                let t = Instant::now();
                let resp = client.post_signed(&app, &url, &msg_id, &body, &headers, Duration::from_secs(30)).await;
                match resp {
                    Ok(r) if r.status().is_success() => {
                        let _: Value = r.json().await.unwrap_or(Value::Null);
                        rtts.push(t.elapsed().as_secs_f64() * 1000.0);
                    }
                    _ => errors += 1,
                }
            }
            (rtts, errors)
        });
    }
    let mut rtts = Vec::new();
    let mut errors = 0;
    while let Some(r) = set.join_next().await {
        let (r, e) = r?;
        rtts.extend(r);
        errors += e;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let received = sink.raw.load(Ordering::Relaxed) - before;
    if errors > 0 {
        eprintln!("raw POST baseline: {errors} requests failed");
    }
    anyhow::ensure!(received > 0, "the raw POST baseline reached the sink 0 times");
    Ok((rtts.len() as f64 / elapsed, pct(rtts)))
}

const RUN_COLS: &str = "id, tenant_id, job_id, fire_key, trigger_kind, scheduled_at_ms, state, attempt, shard_total, \
    params, parent_run_id, parent_output, job_version, owner_node, lease_until_ms, deadline_ms, next_attempt_at_ms, \
    reason, message, output, expired_count, created_at_ms, updated_at_ms, started_at_ms, finished_at_ms";
/// One row of `runs` as the generator writes it, 25 values.
const ROW_VALUES: &str = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

fn bind_row<'q>(
    q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
    id: String,
    seq: i64,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments> {
    q.bind(id)
        .bind("ten_bench")
        .bind(format!("job_bench_{}", seq % 1000))
        .bind(format!("s:{seq}"))
        .bind("schedule")
        .bind(seq)
        .bind("pending")
        .bind(0_i64)
        .bind(None::<i64>)
        .bind(None::<String>)
        .bind(None::<String>)
        .bind(None::<String>)
        .bind(1_i64)
        .bind(None::<String>)
        .bind(None::<i64>)
        .bind(None::<i64>)
        .bind(None::<i64>)
        .bind(None::<String>)
        .bind(None::<String>)
        .bind(None::<String>)
        .bind(0_i64)
        .bind(seq)
        .bind(seq)
        .bind(None::<i64>)
        .bind(None::<i64>)
}

/// Raw SQL on `bench_scratch`, a copy of `runs` with the same indexes, on the bench
/// database: (batched INSERT rows/s, generator-shaped single-row INSERT rows/s,
/// claim-style UPDATE statements/s, single-row UPDATE commits/s).
async fn db_baselines(db: &BenchDb, conns: u32, secs: f64) -> anyhow::Result<(f64, f64, f64, f64)> {
    let sqlite = db.dialect() == Dialect::Sqlite;
    let pool: AnyPool = AnyPoolOptions::new()
        .max_connections(conns)
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if sqlite {
                    conn.execute("PRAGMA synchronous = NORMAL").await?;
                    conn.execute("PRAGMA busy_timeout = 5000").await?;
                }
                Ok(())
            })
        })
        .connect(db.url())
        .await?;
    if sqlite {
        pool.execute("CREATE TABLE bench_scratch AS SELECT * FROM runs WHERE 0").await?;
        for ddl in [
            "CREATE UNIQUE INDEX bs_id ON bench_scratch (id)",
            "CREATE UNIQUE INDEX bs_fire ON bench_scratch (job_id, fire_key)",
            "CREATE INDEX bs_due ON bench_scratch (state, scheduled_at_ms)",
            "CREATE INDEX bs_job ON bench_scratch (job_id, state)",
            "CREATE INDEX bs_tenant ON bench_scratch (tenant_id, scheduled_at_ms, id)",
            "CREATE INDEX bs_owner ON bench_scratch (owner_node, state)",
            "CREATE INDEX bs_retry ON bench_scratch (state, next_attempt_at_ms)",
        ] {
            pool.execute(ddl).await?;
        }
    } else {
        pool.execute("CREATE TABLE bench_scratch LIKE runs").await?;
    }
    let workers = conns as usize;
    let seq = Arc::new(AtomicU64::new(0));

    // (a) Batched INSERTs, INSERT_BATCH rows per statement, autocommit, one worker per connection.
    let insert_sql: Arc<str> =
        format!("INSERT INTO bench_scratch ({RUN_COLS}) VALUES {}", vec![ROW_VALUES; INSERT_BATCH].join(", ")).into();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    let mut set = JoinSet::new();
    for _ in 0..workers {
        let (pool, sql, seq) = (pool.clone(), insert_sql.clone(), seq.clone());
        set.spawn(async move {
            let mut rows = 0u64;
            while Instant::now() < deadline {
                let first = seq.fetch_add(INSERT_BATCH as u64, Ordering::Relaxed) as i64;
                let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.clone()));
                for k in 0..INSERT_BATCH as i64 {
                    q = bind_row(q, format!("run_bench_{:012}", first + k), first + k);
                }
                q.execute(&pool).await?;
                rows += INSERT_BATCH as u64;
            }
            anyhow::Ok(rows)
        });
    }
    let mut rows = 0;
    while let Some(r) = set.join_next().await {
        rows += r??;
    }
    let insert_rows_per_s = rows as f64 / start.elapsed().as_secs_f64();

    // (b) Generator-shaped: one task, single-row INSERT IGNORE, GEN_TX_ROWS per transaction.
    let verb = if sqlite { "INSERT OR IGNORE" } else { "INSERT IGNORE" };
    let gen_sql: Arc<str> = format!("{verb} INTO bench_scratch ({RUN_COLS}) VALUES {ROW_VALUES}").into();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    let mut gen_rows = 0u64;
    while Instant::now() < deadline {
        let mut tx = if sqlite { pool.begin_with("BEGIN IMMEDIATE").await? } else { pool.begin().await? };
        for _ in 0..GEN_TX_ROWS {
            let s = seq.fetch_add(1, Ordering::Relaxed) as i64;
            bind_row(sqlx::query(sqlx::AssertSqlSafe(gen_sql.clone())), format!("run_bench_{s:012}"), s)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        gen_rows += GEN_TX_ROWS as u64;
    }
    let gen_rows_per_s = gen_rows as f64 / start.elapsed().as_secs_f64();
    let total = seq.load(Ordering::Relaxed) as i64;

    // (c) Claim-style UPDATE … WHERE id IN (32 ids), autocommit; each worker its own id range.
    let claim_sql: Arc<str> = format!(
        "UPDATE bench_scratch SET state = CASE WHEN state = 'pending' THEN 'queued' ELSE state END, owner_node = ?, \
         lease_until_ms = ?, updated_at_ms = ? WHERE id IN ({})",
        vec!["?"; CLAIM_CHUNK].join(", ")
    )
    .into();
    let per_worker = (total / workers as i64).max(CLAIM_CHUNK as i64);
    let p = pool.clone();
    let stmts = run_workers(workers, secs, move |w, i| {
        let pool = p.clone();
        let sql = claim_sql.clone();
        async move {
            let base = w as i64 * per_worker;
            let chunks = (per_worker / CLAIM_CHUNK as i64).max(1);
            let first = base + (i as i64 % chunks) * CLAIM_CHUNK as i64;
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(format!("node_{i}")).bind(i as i64).bind(i as i64);
            for k in 0..CLAIM_CHUNK as i64 {
                q = q.bind(format!("run_bench_{:012}", (first + k) % total.max(1)));
            }
            q.execute(&pool).await.map(|_| ())
        }
    })
    .await?;
    let claim_stmts_per_s = stmts;

    // (d) Single-row UPDATE, autocommit: the commit (log flush) rate with `conns` writers.
    let p = pool.clone();
    let commits_per_s = run_workers(workers, secs, move |w, i| {
        let pool = p.clone();
        async move {
            let id = (w as i64 * per_worker + i as i64 % per_worker.max(1)) % total.max(1);
            sqlx::query("UPDATE bench_scratch SET updated_at_ms = ? WHERE id = ?")
                .bind(i as i64)
                .bind(format!("run_bench_{id:012}"))
                .execute(&pool)
                .await
                .map(|_| ())
        }
    })
    .await?;

    pool.execute("DROP TABLE bench_scratch").await?;
    pool.close().await;
    Ok((insert_rows_per_s, gen_rows_per_s, claim_stmts_per_s, commits_per_s))
}

/// Run `op(worker, iteration)` in a loop on `workers` tasks for `secs`; operations per second.
async fn run_workers<F, Fut>(workers: usize, secs: f64, op: F) -> anyhow::Result<f64>
where
    F: Fn(usize, u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<(), sqlx::Error>> + Send,
{
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(secs);
    let mut set = JoinSet::new();
    for w in 0..workers {
        let op = op.clone();
        set.spawn(async move {
            let mut i = 0u64;
            while Instant::now() < deadline {
                op(w, i).await?;
                i += 1;
            }
            anyhow::Ok(i)
        });
    }
    let mut n = 0;
    while let Some(r) = set.join_next().await {
        n += r??;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

// ---- report ----------------------------------------------------------------------------

fn thousands(v: f64) -> String {
    let s = format!("{:.0}", v);
    let (sign, digits) = s.strip_prefix('-').map(|d| ("-", d)).unwrap_or(("", &s));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

fn ratio(engine: f64, raw: f64) -> String {
    if raw > 0.0 { format!("{:.3}×", engine / raw) } else { "n/a".into() }
}

fn print_step(s: &Step, b: &Baselines, env: &str) {
    let other: u64 = s
        .states
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "succeeded" | "skipped" | "expired" | "failed"))
        .map(|(_, v)| *v)
        .sum();
    let get = |k: &str| s.states.get(k).copied().unwrap_or(0);
    println!();
    println!(
        "== sundial bench: {} fires/s on {}{} ==",
        s.rate,
        dialect_name(s.dialect),
        if s.nodes.len() > 1 { format!(", {} nodes", s.nodes.len()) } else { String::new() }
    );
    println!("  database                {env}");
    println!(
        "  jobs                    {} fixed-rate jobs, every 1000 ms, anchors spread over the second (setup {:.1} s)",
        s.rate, s.setup_secs
    );
    println!("  window                  {} s", s.duration);
    println!("  fires scheduled         {} ({} runs of the window in the store)", s.scheduled, s.runs_in_store);
    println!(
        "  delivered               {} ({:.2} %), duplicates {}, bad signatures {}",
        s.delivered,
        s.delivered_ratio() * 100.0,
        s.duplicates,
        s.bad_signatures
    );
    println!(
        "  results recorded        {} succeeded (skipped {}, expired {}, failed {}, not finished {})",
        s.succeeded(),
        get("skipped"),
        get("expired"),
        get("failed"),
        other
    );
    println!("  sustained fires/s       {:.1}", s.sustained);
    println!(
        "  lateness ms             p50 {:.2}  p99 {:.2}  max {:.2}",
        s.lateness.p50, s.lateness.p99, s.lateness.max
    );
    println!(
        "  phases ms (p50 / p99)   scheduled→dispatch start {:.0} / {:.0};  dispatch start→delivered {:.2} / {:.2};  delivered→result write starts {:.2} / {:.2}",
        s.ph_start.p50, s.ph_start.p99, s.ph_deliver.p50, s.ph_deliver.p99, s.ph_result.p50, s.ph_result.p99
    );
    if let Some(c) = s.cpu_bench {
        let db = s.cpu_db.map(|d| format!(", database server {d:.0} %")).unwrap_or_default();
        let other = s.other_cpu().map(|o| format!(", everything else {o:.0} %")).unwrap_or_default();
        println!(
            "  CPU in window           bench process {c:.0} %{db}{other} (100 % = one core; {} cores)",
            std::thread::available_parallelism().map_or(1, |n| n.get())
        );
        if let Some(o) = s.other_cpu().filter(|o| *o > 25.0) {
            println!(
                "  WARNING                 other processes used {o:.0} % CPU during the window: these numbers are disturbed"
            );
        }
    }
    if s.nodes.len() > 1 || s.nodes.iter().any(|n| n.stats.claim_failures > 0) {
        println!(
            "  nodes                   {} engines in this process, each with its own pool; figures over the window",
            s.nodes.len()
        );
    } else {
        println!("  node                    one engine; figures over the window");
    }
    println!(
        "    {:<14} {:>7} {:>7} {:>7} {:>9} {:>8} {:>8} {:>9} {:>8} {:>10}",
        "node", "buckets", "claims", "empty", "rows won", "foreign", "failed", "rollback", "peeked", "dispatched"
    );
    for n in &s.nodes {
        let t = &n.stats;
        println!(
            "    {:<14} {:>7} {:>7} {:>7} {:>9} {:>8} {:>8} {:>9} {:>8} {:>10}",
            n.id,
            n.buckets,
            t.claim_calls,
            t.claim_empty,
            t.claimed,
            t.claimed_foreign,
            t.claim_failures,
            t.claim_rollbacks,
            t.peeked,
            t.dispatched
        );
    }
    println!(
        "    (rows won: runs the node's claims took; foreign: schedule fires of buckets it did not own, taken after the affinity grace or from an expired lease; failed: claims that errored, rollback: of those, deadlocks the database broke; peeked: pending fires of its own buckets read into its timer without a claim)"
    );
    let innodb = match s.innodb {
        Some([d, w, t]) => format!("; InnoDB, whole server: {d} deadlocks, {w} row lock waits ({t} ms)"),
        None => String::new(),
    };
    println!("  deadlocks retried       {} transactions run again by the engines{innodb}", s.deadlock_retries);
    if let Some(p) = &s.per_fire {
        let trips: f64 = p.iter().map(|x| x.per_fire).sum();
        let busy: f64 = p.iter().map(|x| x.per_fire * x.avg_ms).sum();
        println!(
            "  SQL per scheduled fire  {trips:.1} round trips, {busy:.2} ms of statement latency (through the counting proxy)"
        );
        println!("     /fire   mean ms  statement");
        for x in p.iter().filter(|x| x.per_fire >= 0.005).take(30) {
            println!("    {:>6.3}  {:>8.3}  {}", x.per_fire, x.avg_ms, x.label);
        }
    }
    println!("  baselines (same run, same database, before the engine started)");
    println!(
        "    raw signed POST/s       {:>10}  ({} at a time; RTT p50 {:.2} ms, p99 {:.2} ms; one at a time p50 {:.3} ms)",
        thousands(b.post_per_s),
        b.post_concurrency,
        b.post_rtt.p50,
        b.post_rtt.p99,
        b.post_rtt_one.p50
    );
    println!(
        "    batched INSERT rows/s   {:>10}  ({} statements/s of {INSERT_BATCH} rows, {} connection(s))",
        thousands(b.insert_rows_per_s),
        thousands(b.insert_stmts_per_s),
        b.db_conns
    );
    println!(
        "    generator-shaped rows/s {:>10}  (one task, one INSERT per row, {GEN_TX_ROWS} per transaction)",
        thousands(b.gen_rows_per_s)
    );
    println!(
        "    claim UPDATE stmts/s    {:>10}  (UPDATE … WHERE id IN ({CLAIM_CHUNK} ids), autocommit, {} connection(s))",
        thousands(b.claim_stmts_per_s),
        b.db_conns
    );
    println!("    single-row commits/s    {:>10}  ({} connection(s))", thousands(b.commits_per_s), b.db_conns);
    println!("  ratios");
    println!("    fires/s = {} raw signed POST/s", ratio(s.sustained, b.post_per_s));
    println!("    fires/s = {} raw batched INSERT rows/s", ratio(s.sustained, b.insert_rows_per_s));
    println!("    fires/s = {} generator-shaped INSERT rows/s", ratio(s.sustained, b.gen_rows_per_s));
    println!("    fires/s = {} raw claim-style UPDATE statements/s", ratio(s.sustained, b.claim_stmts_per_s));
    println!("    fires/s = {} raw single-row commits/s", ratio(s.sustained, b.commits_per_s));
    println!(
        "    lateness p50 = {:.1}× a raw POST's RTT (one at a time)",
        if b.post_rtt_one.p50 > 0.0 { s.lateness.p50 / b.post_rtt_one.p50 } else { f64::NAN }
    );
    if s.rate == 100 {
        println!(
            "  target (100 fires/s, p99 lateness <= 10 ms): {}",
            if s.lateness.p99 <= 10.0 && s.delivered_ratio() >= 0.99 { "MET" } else { "NOT MET" }
        );
    }
    if s.rate >= 3000 {
        println!(
            "  target (>= 3000 fires/s sustained, p99 <= 100 ms): {}",
            if s.lateness.p99 <= 100.0 && s.delivered_ratio() >= 0.99 { "MET" } else { "NOT MET" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let p = pct((1..=100).map(f64::from).collect());
        assert_eq!((p.p50, p.p99, p.max), (50.0, 99.0, 100.0));
        assert_eq!(pct(vec![]).max, 0.0);
        assert_eq!(pct(vec![7.0]).p99, 7.0);
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(-1000.0), "-1,000");
    }
}
