//! The `sundial serve` process under test and the public API calls that set it up.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::db::{free_port, signal, tail};

/// A running `sundial serve` with default configuration, apart from what the benchmark must
/// set (listen address, database, operator key, log level) and the user's `--env` overrides.
pub struct Sundial {
    child: Option<Child>,
    pub base: String,
    pub log: PathBuf,
    pub admin_key: String,
}

/// The key sealing app secrets on MySQL benchmarks (every node of a cluster shares it).
const BENCH_SECRET_KEY: &str = "YmVuY2htYXJrIHNlY3JldCBrZXksIDMyIGJ5dGVzISE=";

impl Sundial {
    pub async fn start(
        bin: &Path,
        db_env: (&str, String),
        overrides: &[(String, String)],
        log: &Path,
    ) -> anyhow::Result<Sundial> {
        let port = free_port()?;
        let admin_key = format!("sk_bench_{:032x}", rand::random::<u128>());
        let out = std::fs::File::create(log).with_context(|| format!("log file {}", log.display()))?;
        let mut cmd = Command::new(bin);
        cmd.arg("serve");
        // Defaults: nothing inherited from the benchmark's own environment.
        for (k, _) in std::env::vars() {
            if k.starts_with("SUNDIAL_") {
                cmd.env_remove(k);
            }
        }
        if db_env.0 == "SUNDIAL_DATABASE_URL" {
            // MySQL needs a secret key, the same on every node of a cluster.
            cmd.env("SUNDIAL_SECRET_KEY", BENCH_SECRET_KEY);
        }
        cmd.env("SUNDIAL_LISTEN", format!("127.0.0.1:{port}"))
            .env(db_env.0, db_env.1)
            .env("SUNDIAL_ADMIN_KEY", &admin_key)
            .env("SUNDIAL_LOG", "info")
            .envs(overrides.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::from(out.try_clone()?))
            .stderr(Stdio::from(out))
            .process_group(0);
        let child = cmd.spawn().with_context(|| format!("starting {} serve", bin.display()))?;
        let mut s =
            Sundial { child: Some(child), base: format!("http://127.0.0.1:{port}"), log: log.to_path_buf(), admin_key };
        s.wait_ready().await?;
        Ok(s)
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let r = client.get(format!("{}/readyz", self.base)).timeout(Duration::from_secs(2)).send().await;
            if r.is_ok_and(|r| r.status() == 200) {
                return Ok(());
            }
            if let Some(s) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                anyhow::bail!("sundial serve exited {s}; its log:\n{}", tail(&self.log, 30));
            }
            anyhow::ensure!(Instant::now() < deadline, "sundial not ready in 120 s; log:\n{}", tail(&self.log, 30));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Exited already (a crash)?
    pub fn exited(&mut self) -> Option<String> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()).map(|s| s.to_string())
    }

    /// SIGTERM; SIGKILL after 30 s. Returns how it ended.
    pub async fn stop(&mut self) -> String {
        let Some(mut child) = self.child.take() else { return "not running".into() };
        signal(child.id(), "TERM");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(s)) = child.try_wait() {
                return format!("exited after SIGTERM: {s}");
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return "did not exit within 30 s of SIGTERM: SIGKILLed".into();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Sundial {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// An API client with a bearer key.
#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
    key: String,
}

impl Api {
    pub fn new(base: &str, key: &str) -> Api {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(16)
            .tcp_nodelay(true)
            .timeout(Duration::from_secs(60))
            .build()
            .expect("HTTP client builds");
        Api { http, base: base.to_string(), key: key.to_string() }
    }

    pub fn with_key(&self, key: &str) -> Api {
        Api { key: key.to_string(), ..self.clone() }
    }

    /// POST a JSON body; the answer must be 201.
    pub async fn create(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let r = self.http.post(format!("{}{path}", self.base)).bearer_auth(&self.key).json(body).send().await?;
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        anyhow::ensure!(status == 201, "POST {path} answered {status}: {v}");
        Ok(v)
    }

    /// POST a JSON body; the answer must be 2xx.
    pub async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let r = self.http.post(format!("{}{path}", self.base)).bearer_auth(&self.key).json(body).send().await?;
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        anyhow::ensure!(status.is_success(), "POST {path} answered {status}: {v}");
        Ok(v)
    }

    /// PUT a JSON body; the answer must be 200.
    pub async fn put(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let r = self.http.put(format!("{}{path}", self.base)).bearer_auth(&self.key).json(body).send().await?;
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        anyhow::ensure!(status == 200, "PUT {path} answered {status}: {v}");
        Ok(v)
    }

    /// GET; the answer must be 200.
    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        let r = self.http.get(format!("{}{path}", self.base)).bearer_auth(&self.key).send().await?;
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        anyhow::ensure!(status == 200, "GET {path} answered {status}: {v}");
        Ok(v)
    }
}

/// The schedule of job `i`: every whole second (aligned), or once a second at its own phase.
pub fn schedule(phase_offset_ms: Option<i64>, anchor_second_ms: i64) -> Value {
    match phase_offset_ms {
        None => cron("* * * * * *"),
        Some(off) => json!({
            "kind": "fixed_rate",
            "every_ms": 1000,
            "anchor": crate::sink::rfc3339_ms(anchor_second_ms + off),
        }),
    }
}

/// A cron schedule in UTC.
pub fn cron(expression: &str) -> Value {
    json!({"kind": "cron", "expression": expression})
}

/// The next `count` (at most 100) fire times of a schedule after now, as the server computes
/// them (`POST /api/v1/schedules/preview`), epoch ms.
pub async fn preview(api: &Api, schedule: &Value, count: usize) -> anyhow::Result<Vec<i64>> {
    let v = api.post("/api/v1/schedules/preview", &json!({"schedule": schedule, "count": count})).await?;
    v["times"]
        .as_array()
        .context("a preview without times")?
        .iter()
        .map(|t| t.as_str().and_then(crate::sink::parse_ms).context("a preview time that is not RFC 3339"))
        .collect()
}

/// Raise the bench tenant's quotas (operator key) to what `jobs` jobs firing every second,
/// created as fast as the node takes them, need: the defaults protect a shared install
/// (10,000 jobs, 1,000 fires per second, 1,000 requests per second per key), and the
/// bench is one tenant measuring the node.
pub async fn raise_quotas(op: &Api, tenant_id: &str, jobs: usize) -> anyhow::Result<()> {
    let jobs = jobs as i64 + 1_000;
    op.put(
        &format!("/api/v1/tenants/{tenant_id}/quotas"),
        &serde_json::json!({
            "max_jobs": jobs,
            "max_fires_per_second": jobs,
            "max_inflight": jobs,
            "max_api_requests_per_second": 1_000_000,
        }),
    )
    .await?;
    Ok(())
}

/// The body of job `i` (what `POST /api/v1/jobs` takes, and each item of a batch).
pub type JobBody = Arc<dyn Fn(usize) -> Value + Send + Sync>;

/// `bench-<i>` on the app `bench`, handler `bench.tick`, with this schedule (and timeout).
pub fn job_body(i: usize, schedule: Value, timeout_ms: Option<i64>) -> Value {
    let mut body = json!({"name": format!("bench-{i}"), "app": "bench", "handler": "bench.tick", "schedule": schedule});
    if let Some(t) = timeout_ms {
        body["timeout_ms"] = json!(t);
    }
    body
}

/// Create jobs `range` one `POST /api/v1/jobs` each, over `connections` keep-alive
/// connections; returns (index, job id) of each.
pub async fn create_jobs(
    api: &Api,
    range: std::ops::Range<usize>,
    body: JobBody,
    connections: usize,
) -> anyhow::Result<Vec<(usize, String)>> {
    let next = Arc::new(AtomicUsize::new(range.start));
    let end = range.end;
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let (api, body, next) = (api.clone(), body.clone(), next.clone());
        set.spawn(async move {
            let mut made = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= end {
                    return anyhow::Ok(made);
                }
                let job = api.create("/api/v1/jobs", &body(i)).await?;
                made.push((i, job["id"].as_str().context("job without id")?.to_string()));
            }
        });
    }
    let mut ids = Vec::with_capacity(range.len());
    while let Some(r) = set.join_next().await {
        ids.extend(r??);
    }
    Ok(ids)
}

/// Create jobs `range` through `POST /api/v1/jobs/batch`, `per_call` a call, `in_flight`
/// calls at once; returns (index, job id) of each.
pub async fn create_jobs_batched(
    api: &Api,
    range: std::ops::Range<usize>,
    body: JobBody,
    per_call: usize,
    in_flight: usize,
) -> anyhow::Result<Vec<(usize, String)>> {
    let next = Arc::new(AtomicUsize::new(range.start));
    let end = range.end;
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..in_flight {
        let (api, body, next) = (api.clone(), body.clone(), next.clone());
        set.spawn(async move {
            let mut made = Vec::new();
            loop {
                let from = next.fetch_add(per_call, Ordering::Relaxed);
                if from >= end {
                    return anyhow::Ok(made);
                }
                let to = (from + per_call).min(end);
                let jobs: Vec<Value> = (from..to).map(|i| body(i)).collect();
                let created = api.create("/api/v1/jobs/batch", &json!({"jobs": jobs})).await?;
                let created = created["jobs"].as_array().context("a batch answer without jobs")?;
                anyhow::ensure!(created.len() == to - from, "a batch of {} created {}", to - from, created.len());
                for (i, job) in (from..to).zip(created) {
                    made.push((i, job["id"].as_str().context("job without id")?.to_string()));
                }
            }
        });
    }
    let mut ids = Vec::with_capacity(range.len());
    while let Some(r) = set.join_next().await {
        ids.extend(r??);
    }
    Ok(ids)
}
