//! The baselines, measured in the same run before Sundial starts, with the sink otherwise idle.
//!
//! - **floor**: no store and no bookkeeping, and everything a perfect scheduler could do ahead
//!   of the instant done ahead. After one unmeasured whole second that warms the connection
//!   pool, at each of 5 consecutive whole seconds, J POSTs signed like Sundial's deliveries
//!   (same headers, a body of the same shape) go to the same sink over one keep-alive client
//!   pool. Every request, of every second, is built before the first of them (body bytes,
//!   headers, and the signature over the webhook-timestamp of its second, a whole second known
//!   ahead) and handed to a task of its own that waits for the whole second; then it takes one
//!   of 512 delivery slots (Sundial's default `max_inflight`, taken after the instant as
//!   Sundial's are) and is sent, from a process of its own (as Sundial sends from its own, not
//!   sharing threads with the sink that times it). Lateness = receive − the whole second.
//! - **burst floor** (`--cron`): the same, for a herd at one instant: J such POSTs all due at
//!   one whole second, after a warm-up of up to 512 (opening the pool's connections) the second
//!   before; lateness = receive − that second.
//! - Both floors report the sender process's CPU per POST: all of its CPU time (building and
//!   signing every request, sending, the warm-up) over every POST it sent.
//! - **raw inserts**: J rows in multi-row `INSERT`s (500 rows a statement, one commit each)
//!   into a scratch table shaped like Sundial's `runs`, in the same database.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;
use tokio::sync::Semaphore;

use sqlx::Connection as _;

use crate::db::Target;
use crate::measure::{Pct, pct};
use crate::sign::Key;
use crate::sink::{Sink, now_us, rfc3339_ms};

pub const FLOOR_SECONDS: i64 = 5;
pub const MAX_INFLIGHT: usize = 512;
pub const ROWS_PER_INSERT: usize = 500;

/// Which floor: J POSTs at each of 5 whole seconds (per-second jobs), or one burst of J at
/// one second (`--cron` herds).
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FloorKind {
    PerSecond,
    Burst,
}

impl FloorKind {
    fn arg(self) -> &'static str {
        match self {
            FloorKind::PerSecond => "seconds",
            FloorKind::Burst => "burst",
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Floor {
    pub kind: FloorKind,
    /// The measured POSTs (the warm-up's not counted).
    pub sent: u64,
    pub received: u64,
    pub errors: u64,
    pub bad_signatures: u64,
    /// Receive − whole second, every measured POST.
    pub lateness_ms: Pct,
    /// Every POST the sender sent, the warm-up's included.
    pub sent_with_warm_up: u64,
    /// The sender process's CPU time over every POST it sent (building and signing included), µs.
    pub cpu_us_per_post: Option<f64>,
}

/// Sundial's delivery client settings (scheduler/engine/src/transport.rs): one keep-alive
/// pool, no redirects followed, no proxy.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .pool_idle_timeout(Duration::from_secs(60))
        .tcp_nodelay(true)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .user_agent(concat!("sundial/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("HTTP client builds")
}

/// One POST signed as Sundial signs a delivery of a run's first attempt, built ahead of its
/// whole second `second_ms`: body bytes, every header, and the signature, computed with that
/// second as the `webhook-timestamp` (whole seconds, so known ahead; Sundial stamps its send
/// time, which is that second for a delivery on time).
fn request(http: &reqwest::Client, url: &reqwest::Url, key: &Key, second_ms: i64, i: usize) -> reqwest::Request {
    let run_id = format!("run_floor{:010}{:08}", second_ms / 1000 % 10_000_000_000, i);
    let job_id = format!("job_floor{i:08}");
    let scheduled_at = rfc3339_ms(second_ms);
    let body = serde_json::to_vec(&json!({
        "run_id": run_id, "job_id": job_id, "job": format!("bench-{i}"), "handler": "bench.tick",
        "params": {}, "attempt": 1, "scheduled_at": scheduled_at, "trigger": "schedule",
        "shard": {"index": 0, "total": 1},
    }))
    .expect("JSON");
    let msg_id = format!("msg_{run_id}_0_1");
    let ts = second_ms.div_euclid(1000).to_string();
    http.post(url.clone())
        .timeout(Duration::from_secs(30))
        .header("content-type", "application/json")
        .header("webhook-id", &msg_id)
        .header("webhook-timestamp", &ts)
        .header("webhook-signature", key.sign(&msg_id, &ts, &body))
        .header("sundial-app-id", "app_floor00000000000000000000000")
        .header("sundial-node", "floor")
        .header("sundial-run-id", &run_id)
        .header("sundial-attempt", "1")
        .header("sundial-scheduled-at", &scheduled_at)
        .header("sundial-shard", "0/1")
        .body(body)
        .build()
        .expect("the floor's request builds")
}

/// Send a prebuilt request and read the answer; true on a 2xx read to its end.
async fn send(http: &reqwest::Client, req: reqwest::Request) -> bool {
    match http.execute(req).await {
        Ok(r) if r.status().is_success() => r.bytes().await.is_ok(),
        _ => false,
    }
}

/// Sleep until epoch ms `t` (tokio's timer, as Sundial's).
pub async fn sleep_until_ms(t: i64) {
    let now = now_us() / 1000;
    if t > now {
        tokio::time::sleep(Duration::from_millis((t - now) as u64)).await;
    }
}

/// Requests built once to time the building, so the first second leaves room to build all.
const CALIBRATION_REQUESTS: usize = 1000;

/// Environment of the floor's sender process (`sundial-bench` run again by itself): the
/// sink's URL, the signing secret, J and the kind (`seconds` or `burst`). Set only by [`floor`].
pub const SENDER_ENV: &str = "SUNDIAL_BENCH_FLOOR_SENDER";

/// The floor, measured at `sink`. The requests are sent by a process of their own (this
/// binary again, see [`floor_sender`]), as Sundial sends its deliveries from its own process:
/// a sender sharing this process's threads with the sink that times it would be slowed by it,
/// and a floor slower than it need be flatters whatever is compared with it.
pub async fn floor(sink: &Sink, jobs: usize, kind: FloorKind) -> anyhow::Result<Floor> {
    let (key, secret) = Key::generate();
    sink.set_key(key);
    sink.take();
    sink.reset_counters();
    let exe = std::env::current_exe()?;
    let out = tokio::process::Command::new(exe)
        .env(SENDER_ENV, format!("{} {secret} {jobs} {}", sink.url(), kind.arg()))
        .stderr(std::process::Stdio::inherit())
        .output()
        .await?;
    anyhow::ensure!(out.status.success(), "the floor's sender failed: {}", out.status);
    let line = String::from_utf8(out.stdout)?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let [first, errors, cpu_s, total] = words[..] else { anyhow::bail!("the floor's sender printed `{line}`") };
    let (first, errors, total): (i64, u64, u64) = (first.parse()?, errors.parse()?, total.parse()?);
    let cpu_s: f64 = cpu_s.parse()?;
    let recs: Vec<_> = sink.take().into_iter().filter(|r| r.scheduled_ms >= first).collect();
    let lateness: Vec<f64> = recs.iter().map(|r| (r.received_us - r.scheduled_ms * 1000) as f64 / 1000.0).collect();
    let seconds = if kind == FloorKind::Burst { 1 } else { FLOOR_SECONDS as u64 };
    Ok(Floor {
        kind,
        sent: seconds * jobs as u64,
        received: recs.len() as u64,
        errors,
        bad_signatures: sink.bad_signatures(),
        lateness_ms: pct(lateness),
        sent_with_warm_up: total,
        cpu_us_per_post: (cpu_s >= 0.0 && total > 0).then(|| cpu_s * 1e6 / total as f64),
    })
}

/// The floor's sender (`SENDER_ENV` = "<sink URL> <whsec secret> <J> <seconds|burst>"): sends
/// the warm-up second and the measured seconds (`seconds`: J POSTs at each of 6 whole seconds,
/// the first the warm-up; `burst`: up to 512 at one second, J at the next), then prints "<first
/// measured second, ms> <errors> <its CPU seconds> <POSTs sent>".
pub async fn floor_sender(spec: &str) -> anyhow::Result<()> {
    let parts: Vec<&str> = spec.split_whitespace().collect();
    anyhow::ensure!(parts.len() == 4, "{SENDER_ENV}: expected `<url> <secret> <jobs> <seconds|burst>`");
    let url: reqwest::Url = parts[0].parse()?;
    let key = Key::parse(parts[1])?;
    let jobs: usize = parts[2].parse()?;
    // POSTs at each whole second, the first of them the warm-up.
    let counts: Vec<usize> = match parts[3] {
        "seconds" => vec![jobs; FLOOR_SECONDS as usize + 1],
        "burst" => vec![jobs.min(MAX_INFLIGHT), jobs],
        other => anyhow::bail!("{SENDER_ENV}: unknown floor `{other}`"),
    };
    let http = client();
    // Building every request takes time before the first of them: time a sample and start
    // the warm-up second after twice the estimate (and at least a second).
    let sample = jobs.min(CALIBRATION_REQUESTS);
    let timed = Instant::now();
    for i in 0..sample {
        std::hint::black_box(request(&http, &url, &key, 0, i));
    }
    let total: usize = counts.iter().sum();
    let build_ms = (timed.elapsed().as_secs_f64() * 1000.0 * total as f64 / sample as f64).ceil() as i64;
    // Warm the pool the way a running Sundial's is warm when the window opens (it has sent
    // herds before): one whole second of POSTs, sent but not measured, so the measured
    // seconds do not pay for opening up to 512 connections that Sundial has open already.
    let warm = (now_us() / 1000 + 2 * build_ms).div_euclid(1000) * 1000 + 2000;
    let first = warm + 1000;
    // Every request of every second built and signed now, each in a task of its own that
    // waits for its whole second, then for a delivery slot (at most 512 in flight, taken
    // after the instant as Sundial's delivery slots are), then sends.
    let permits = Arc::new(Semaphore::new(MAX_INFLIGHT));
    let mut posts = tokio::task::JoinSet::new();
    for (k, n) in counts.iter().enumerate() {
        let second = warm + k as i64 * 1000;
        for i in 0..*n {
            let req = request(&http, &url, &key, second, i);
            let (http, permits) = (http.clone(), permits.clone());
            posts.spawn(async move {
                sleep_until_ms(second).await;
                let _slot = permits.acquire_owned().await.expect("semaphore open");
                send(&http, req).await
            });
        }
    }
    let built = now_us() / 1000;
    anyhow::ensure!(
        built < warm,
        "building the floor's {total} requests took until {} ms past the warm-up second's start (estimate {build_ms} ms)",
        built - warm
    );
    let mut errors = 0;
    while let Some(ok) = posts.join_next().await {
        if !ok.unwrap_or(false) {
            errors += 1;
        }
    }
    let cpu_s = crate::cpu::own_cpu_secs().unwrap_or(-1.0);
    println!("{first} {errors} {cpu_s} {total}");
    Ok(())
}

#[derive(Debug, Serialize)]
pub struct RawInserts {
    pub rows: u64,
    pub rows_per_statement: usize,
    pub secs: f64,
    pub rows_per_sec: f64,
}

const SCRATCH: &str = "bench_runs_scratch";
const COLS: &str = "id, tenant_id, job_id, fire_key, trigger_kind, scheduled_at_ms, state, attempt, job_version, \
    bucket, expired_count, created_at_ms, updated_at_ms";
const NCOLS: usize = 13;

fn create_sql(sqlite: bool) -> Vec<String> {
    let (text, big, tail) = if sqlite {
        ("TEXT", "INTEGER", "")
    } else {
        ("VARCHAR(40)", "BIGINT", " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin")
    };
    let key = if sqlite { "TEXT" } else { "VARCHAR(255)" };
    vec![
        format!("DROP TABLE IF EXISTS {SCRATCH}"),
        format!(
            "CREATE TABLE {SCRATCH} (id {text} NOT NULL PRIMARY KEY, tenant_id {text} NOT NULL, job_id {text} NOT NULL, \
             fire_key {key} NOT NULL, trigger_kind {text} NOT NULL, scheduled_at_ms {big} NOT NULL, state {text} NOT NULL, \
             attempt {big} NOT NULL DEFAULT 0, job_version {big} NOT NULL, bucket {big} NOT NULL, \
             owner_node {text} NULL, lease_until_ms {big} NULL, expired_count {big} NOT NULL DEFAULT 0, \
             created_at_ms {big} NOT NULL, updated_at_ms {big} NOT NULL){tail}"
        ),
        format!("CREATE UNIQUE INDEX uq_scratch_fire ON {SCRATCH} (job_id, fire_key)"),
        format!("CREATE INDEX ix_scratch_tenant ON {SCRATCH} (tenant_id, scheduled_at_ms, id)"),
        format!("CREATE INDEX ix_scratch_lease ON {SCRATCH} (lease_until_ms)"),
    ]
}

/// J rows, [`ROWS_PER_INSERT`] per statement, each statement its own (auto)commit, one
/// connection. SQLite: a scratch file beside Sundial's, with Sundial's settings.
pub async fn raw_inserts(target: &Target, jobs: usize) -> anyhow::Result<RawInserts> {
    let sqlite = target.is_sqlite();
    let mut conn = sqlx::AnyConnection::connect(&target.sql_url(sqlite.then_some("scratch.db"))).await?;
    if sqlite {
        sqlx::query("PRAGMA journal_mode = WAL").execute(&mut conn).await?;
        sqlx::query("PRAGMA synchronous = NORMAL").execute(&mut conn).await?;
    }
    for s in create_sql(sqlite) {
        sqlx::query(sqlx::AssertSqlSafe(s)).execute(&mut conn).await?;
    }
    let now = now_us() / 1000;
    let start = Instant::now();
    let mut written = 0usize;
    while written < jobs {
        let n = ROWS_PER_INSERT.min(jobs - written);
        let row = format!("({})", vec!["?"; NCOLS].join(", "));
        let sql = format!("INSERT INTO {SCRATCH} ({COLS}) VALUES {}", vec![row.as_str(); n].join(", "));
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
        for i in written..written + n {
            let at = now + (i as i64 % 1000) * 1000;
            q = q
                .bind(format!("run_{i:036}"))
                .bind("ten_00000000000000000000000000000000")
                .bind(format!("job_{:036}", i))
                .bind(format!("s:{at}"))
                .bind("schedule")
                .bind(at)
                .bind("pending")
                .bind(0i64)
                .bind(1i64)
                .bind((i % 64) as i64)
                .bind(0i64)
                .bind(now)
                .bind(now);
        }
        q.execute(&mut conn).await?;
        written += n;
    }
    let secs = start.elapsed().as_secs_f64();
    sqlx::query(sqlx::AssertSqlSafe(format!("DROP TABLE {SCRATCH}"))).execute(&mut conn).await?;
    let _ = conn.close().await;
    Ok(RawInserts { rows: jobs as u64, rows_per_statement: ROWS_PER_INSERT, secs, rows_per_sec: jobs as f64 / secs })
}
