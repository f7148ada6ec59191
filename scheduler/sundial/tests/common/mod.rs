//! Shared by the binary's cluster tests (`chaos.rs`, `outage.rs`, `stall.rs`): spawning real
//! `sundial serve` processes (copied from `cli.rs`, plus node ids, SIGKILL and
//! per-node log files), a signature-verifying sink executor recording every delivery,
//! API calls, health probes, a private `mariadbd` to stop or freeze, and read-only SQL on
//! the test database.
#![allow(dead_code)] // each test binary uses its own subset

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use sundial_core::clock::{Clock, SystemClock};
use sundial_core::signing::{self, SigningKey};

/// Wall-clock now, UTC epoch ms (the nodes use the same host clock).
pub fn now_ms() -> i64 {
    SystemClock.now_ms()
}

pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// The secret key of the test nodes on MySQL (base64 of 32 bytes).
pub const TEST_SECRET_KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

/// The binary with no inherited `SUNDIAL_*` settings.
pub fn sundial() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sundial"));
    for (k, _) in std::env::vars() {
        if k.starts_with("SUNDIAL_") {
            c.env_remove(k);
        }
    }
    c.env("SUNDIAL_LOG", "warn");
    c
}

/// A running `sundial serve`. Its stderr goes to `log` (appended across restarts).
pub struct Node {
    pub child: Child,
    pub base: String,
    pub node_id: String,
    pub log: PathBuf,
}

/// Start `sundial serve --database-url URL --node-id ID --listen 127.0.0.1:0` with
/// `envs`, and wait for its "listening" line (blocking; call through `spawn_blocking`
/// from async code, or use [`serve_async`]).
pub fn serve(database_url: &str, node_id: &str, envs: &[(&str, &str)], log: &Path) -> Node {
    let log_file = std::fs::OpenOptions::new().create(true).append(true).open(log).expect("node log file");
    let mut cmd = sundial();
    cmd.arg("serve").args(["--database-url", database_url, "--node-id", node_id, "--listen", "127.0.0.1:0"]);
    if database_url.starts_with("mysql") {
        // MySQL needs a secret key, the same on every node (a test's envs may give another).
        cmd.env("SUNDIAL_SECRET_KEY", TEST_SECRET_KEY);
    }
    cmd.envs(envs.iter().copied());
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::from(log_file)).spawn().expect("spawn sundial");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Generous: a node compiles the Python interpreter before it listens when its runner's
    // cache does not have it yet (about 11 s in a debug build, more on a loaded machine).
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut base = None;
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(url) = line.strip_prefix("Sundial listening on ") {
            base = Some(url.trim().to_string());
            break;
        }
    }
    // Keep draining stdout so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    let Some(base) = base else {
        let _ = child.kill();
        panic!("node {node_id} did not print its URL; its log:\n{}", tail(log, 40));
    };
    Node { child, base, node_id: node_id.to_string(), log: log.to_path_buf() }
}

pub async fn serve_async(database_url: &str, node_id: &str, envs: &[(&str, &str)], log: &Path) -> Node {
    let (url, id, log) = (database_url.to_string(), node_id.to_string(), log.to_path_buf());
    let envs: Vec<(String, String)> = envs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    tokio::task::spawn_blocking(move || {
        let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        serve(&url, &id, &envs, &log)
    })
    .await
    .expect("spawn task")
}

impl Node {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: no shutdown of any kind.
    pub fn sigkill(mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reap");
    }

    /// SIGTERM, then wait (up to `within`) for the exit status.
    pub async fn sigterm(self, within: Duration) -> ExitStatus {
        signal(self.child.id(), "TERM");
        self.exit_status(within).await
    }

    /// Wait (up to `within`) for the process to exit, e.g. after a signal sent with [`signal`].
    pub async fn exit_status(mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "node {} did not exit within {within:?}; log:\n{}",
                self.node_id,
                tail(&self.log, 40)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Still running?
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill").args([&format!("-{sig}"), &pid.to_string()]).status().unwrap().success();
    assert!(ok, "kill -{sig} {pid}");
}

/// The last `n` lines of a file.
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Lines of a node log containing `needle`.
pub fn count_in_log(path: &Path, needle: &str) -> usize {
    std::fs::read_to_string(path).unwrap_or_default().lines().filter(|l| l.contains(needle)).count()
}

pub async fn call(base: &str, method: reqwest::Method, path: &str, key: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .request(method, format!("{base}{path}"))
        .bearer_auth(key)
        .timeout(Duration::from_secs(30));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap_or_else(|e| panic!("{path}: {e}"));
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// A tenant and an app whose one static endpoint is `sink_url`: (tenant admin key, app id, secret).
pub async fn tenant_and_app(base: &str, operator_key: &str, sink_url: &str) -> (String, String, String) {
    use reqwest::Method;
    let (s, tenant) = call(base, Method::POST, "/api/v1/tenants", operator_key, Some(json!({"name": "chaos"}))).await;
    assert_eq!(s, 201, "{tenant}");
    let key = tenant["admin_key"].as_str().unwrap().to_string();
    let (s, app) =
        call(base, Method::POST, "/api/v1/apps", &key, Some(json!({"name": "sink", "endpoints": [sink_url]}))).await;
    assert_eq!(s, 201, "{app}");
    (key, app["id"].as_str().unwrap().to_string(), app["secret"].as_str().unwrap().to_string())
}

/// One delivery as the sink saw it.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub webhook_id: String,
    pub run_id: String,
    pub attempt: i64,
    /// `sundial-scheduled-at`, epoch ms.
    pub scheduled_ms: i64,
    pub received_ms: i64,
    pub signature_ok: bool,
    pub path: String,
    /// `sundial-node`: the node that sent it.
    pub node: String,
}

/// A test executor: verifies each delivery's Standard Webhooks signature with the app
/// secret against real system time, records it, and answers `200 {"status": "succeeded"}`.
#[derive(Clone)]
pub struct Sink {
    pub url: String,
    deliveries: Arc<Mutex<Vec<Delivery>>>,
    secret: Arc<Mutex<Option<String>>>,
    /// How long each delivery (not a cancel) is held before the answer, ms.
    delay_ms: Arc<std::sync::atomic::AtomicU64>,
}

impl Sink {
    /// Listen on 127.0.0.1:0; the secret is set once the app exists ([`Sink::set_secret`]).
    pub async fn start() -> Sink {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (sink, app) = Self::with_listener(&listener);
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        sink
    }

    /// A sink served by a runtime on a thread of its own: what it records as received is
    /// not delayed behind another sink of the test flooded at the same time.
    pub fn start_isolated() -> Sink {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
                let (sink, app) = Self::with_listener(&listener);
                tx.send(sink).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        rx.recv().unwrap()
    }

    fn with_listener(listener: &tokio::net::TcpListener) -> (Sink, axum::Router) {
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let deliveries: Arc<Mutex<Vec<Delivery>>> = Arc::default();
        let secret: Arc<Mutex<Option<String>>> = Arc::default();
        let delay_ms = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (d, k, delay) = (deliveries.clone(), secret.clone(), delay_ms.clone());
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
            let (d, k, delay) = (d.clone(), k.clone(), delay.clone());
            async move {
                let received_ms = now_ms();
                let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
                let key = k.lock().unwrap().as_deref().map(|s| SigningKey::parse(s).expect("whsec secret"));
                let signature_ok = key.is_some_and(|key| {
                    signing::verify(
                        &[key],
                        h("webhook-id"),
                        h("webhook-timestamp"),
                        h("webhook-signature"),
                        &body,
                        received_ms.div_euclid(1000),
                    )
                    .is_ok()
                });
                let scheduled_ms = h("sundial-scheduled-at")
                    .and_then(|s| sundial_core::time::parse_rfc3339("sundial-scheduled-at", s).ok())
                    .unwrap_or(i64::MIN);
                d.lock().unwrap().push(Delivery {
                    webhook_id: h("webhook-id").unwrap_or_default().to_string(),
                    run_id: h("sundial-run-id").unwrap_or_default().to_string(),
                    attempt: h("sundial-attempt").and_then(|a| a.parse().ok()).unwrap_or(-1),
                    scheduled_ms,
                    received_ms,
                    signature_ok,
                    path: uri.path().to_string(),
                    node: h("sundial-node").unwrap_or_default().to_string(),
                });
                if !signature_ok {
                    return (StatusCode::UNAUTHORIZED, axum::Json(json!({"code": "bad_signature"}))).into_response();
                }
                if uri.path().ends_with("/cancel") {
                    return (StatusCode::ACCEPTED, axum::Json(json!({}))).into_response();
                }
                let hold = delay.load(std::sync::atomic::Ordering::SeqCst);
                if hold > 0 {
                    tokio::time::sleep(Duration::from_millis(hold)).await;
                }
                axum::Json(json!({"status": "succeeded"})).into_response()
            }
        });
        (Sink { url, deliveries, secret, delay_ms }, app)
    }

    /// Hold each delivery this long before answering (cancels are answered at once).
    pub fn set_delay(&self, delay: Duration) {
        self.delay_ms.store(delay.as_millis() as u64, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn set_secret(&self, secret: &str) {
        *self.secret.lock().unwrap() = Some(secret.to_string());
    }

    /// Every request received so far (deliveries and cancels).
    pub fn all(&self) -> Vec<Delivery> {
        self.deliveries.lock().unwrap().clone()
    }

    /// Deliveries (not cancels) received so far.
    pub fn deliveries(&self) -> Vec<Delivery> {
        self.all().into_iter().filter(|d| !d.path.ends_with("/cancel")).collect()
    }

    pub fn count(&self) -> usize {
        self.deliveries.lock().unwrap().len()
    }
}

/// Drops a test database (on the shared server) even when an assertion fails; kept, with
/// a line saying so, when the environment variable `keep_if` names is set.
pub struct DropDb {
    pub name: String,
    pub keep_if: Option<&'static str>,
}

impl Drop for DropDb {
    fn drop(&mut self) {
        let name = self.name.clone();
        if let Some(var) = self.keep_if.filter(|v| std::env::var(v).is_ok()) {
            eprintln!("{var}: database {name} kept");
            return;
        }
        let _ = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(sundial_store::testing::drop_mysql_database(&name))
        })
        .join();
    }
}

/// Read-only SQL on a test database (sqlx `Any`).
pub async fn db_pool(url: &str) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    sqlx::any::AnyPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(Duration::from_secs(5))
        .connect(url)
        .await
        .expect("connect to the test database")
}

/// A run row, as the assertions need it.
#[derive(Debug, Clone)]
pub struct RunRow {
    pub id: String,
    pub job_id: String,
    pub fire_key: String,
    pub trigger: String,
    pub scheduled_ms: i64,
    pub state: String,
    pub attempt: i64,
    pub expired_count: i64,
    pub owner_node: Option<String>,
    pub lease_until_ms: Option<i64>,
    pub updated_ms: i64,
}

const RUN_COLS: &str = "id, job_id, fire_key, trigger_kind, scheduled_at_ms, state, attempt, expired_count, owner_node, lease_until_ms, updated_at_ms";

pub async fn runs(pool: &sqlx::AnyPool) -> Vec<RunRow> {
    let sql = format!("SELECT {RUN_COLS} FROM runs ORDER BY scheduled_at_ms");
    sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(pool).await.expect("read runs").iter().map(run_row).collect()
}

/// Schedule runs due before `before_ms`, whatever their state.
pub async fn schedule_runs_before(pool: &sqlx::AnyPool, before_ms: i64) -> Vec<RunRow> {
    let sql = format!(
        "SELECT {RUN_COLS} FROM runs WHERE trigger_kind = 'schedule' AND scheduled_at_ms < ? ORDER BY scheduled_at_ms"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(before_ms)
        .fetch_all(pool)
        .await
        .expect("read schedule runs")
        .iter()
        .map(run_row)
        .collect()
}

/// Schedule runs due before `before_ms` that are not terminal yet.
pub async fn open_schedule_runs(pool: &sqlx::AnyPool, before_ms: i64) -> Vec<RunRow> {
    let sql = format!(
        "SELECT {RUN_COLS} FROM runs WHERE trigger_kind = 'schedule' AND scheduled_at_ms < ? \
         AND state NOT IN ('succeeded', 'failed', 'cancelled', 'expired', 'skipped') ORDER BY scheduled_at_ms"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(before_ms)
        .fetch_all(pool)
        .await
        .expect("read open runs")
        .iter()
        .map(run_row)
        .collect()
}

fn run_row(r: &sqlx::any::AnyRow) -> RunRow {
    use sqlx::Row;
    RunRow {
        id: r.get("id"),
        job_id: r.get("job_id"),
        fire_key: r.get("fire_key"),
        trigger: r.get("trigger_kind"),
        scheduled_ms: r.get("scheduled_at_ms"),
        state: r.get("state"),
        attempt: r.get("attempt"),
        expired_count: r.get("expired_count"),
        owner_node: r.get("owner_node"),
        lease_until_ms: r.get("lease_until_ms"),
        updated_ms: r.get("updated_at_ms"),
    }
}

/// Terminal run states.
pub fn terminal(state: &str) -> bool {
    matches!(state, "succeeded" | "failed" | "cancelled" | "expired" | "skipped")
}

/// p-quantile (0..=1) of sorted values (nearest rank).
pub fn quantile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// "n  p50  p99  max" of a set of millisecond values.
pub fn stats(values: &[i64]) -> String {
    let mut v = values.to_vec();
    v.sort_unstable();
    format!(
        "n={:<6} p50={:>6} ms  p99={:>6} ms  max={:>6} ms",
        v.len(),
        quantile(&v, 0.5),
        quantile(&v, 0.99),
        v.last().copied().unwrap_or(0)
    )
}

/// A throwaway MariaDB server of our own (never the shared one on 3306): its own
/// data directory, socket and port, for tests that stop and restart the database.
pub struct PrivateMariaDb {
    pub port: u16,
    pub datadir: PathBuf,
    pub socket: PathBuf,
    pub log: PathBuf,
    extra_args: Vec<String>,
    child: Option<Child>,
    _dir: tempfile::TempDir,
}

impl PrivateMariaDb {
    /// `mariadb-install-db` into a fresh directory owned by `mysql`, on a free port.
    pub fn install(extra_args: &[&str]) -> PrivateMariaDb {
        let dir = tempfile::Builder::new().prefix("sundial-mariadb-").tempdir().expect("temp dir");
        let datadir = dir.path().join("data");
        std::fs::create_dir(&datadir).unwrap();
        let ok = Command::new("chown").args(["-R", "mysql:mysql"]).arg(dir.path()).status().unwrap().success();
        assert!(ok, "chown mysql {}", dir.path().display());
        let out = Command::new("mariadb-install-db")
            .args(["--no-defaults", "--user=mysql", "--auth-root-authentication-method=normal", "--skip-test-db"])
            .arg(format!("--datadir={}", datadir.display()))
            .output()
            .expect("mariadb-install-db (package mariadb-server)");
        assert!(out.status.success(), "mariadb-install-db: {}", String::from_utf8_lossy(&out.stderr));
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        PrivateMariaDb {
            port,
            socket: dir.path().join("mysqld.sock"),
            log: dir.path().join("mariadbd.log"),
            datadir,
            extra_args: extra_args.iter().map(|s| s.to_string()).collect(),
            child: None,
            _dir: dir,
        }
    }

    /// URL of database `db` on this server (root, no password).
    pub fn url(&self, db: &str) -> String {
        format!("mysql://root@127.0.0.1:{}/{db}", self.port)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Start `mariadbd` on the data directory and wait until it answers a query.
    pub async fn start(&mut self) {
        assert!(self.child.is_none(), "already running");
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log).unwrap();
        let child = Command::new("mariadbd")
            .args(["--no-defaults", "--user=mysql", "--bind-address=127.0.0.1", "--skip-name-resolve"])
            .arg(format!("--datadir={}", self.datadir.display()))
            .arg(format!("--port={}", self.port))
            .arg(format!("--socket={}", self.socket.display()))
            .args(&self.extra_args)
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("mariadbd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if self.ping().await {
                return;
            }
            if let Some(s) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("mariadbd exited {s:?}; its log:\n{}", tail(&self.log, 30));
            }
            assert!(Instant::now() < deadline, "mariadbd did not answer in 60 s; log:\n{}", tail(&self.log, 30));
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn ping(&self) -> bool {
        use sqlx::Connection;
        sqlx::any::install_default_drivers();
        match tokio::time::timeout(Duration::from_secs(2), sqlx::AnyConnection::connect(&self.url("mysql"))).await {
            Ok(Ok(mut c)) => {
                let ok = sqlx::query("SELECT 1").execute(&mut c).await.is_ok();
                let _ = c.close().await;
                ok
            }
            _ => false,
        }
    }

    /// SIGTERM `mariadbd` and wait for it to exit.
    pub async fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        signal(child.id(), "TERM");
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "mariadbd did not stop within 60 s of SIGTERM");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// SIGSTOP `mariadbd`: the process freezes with every connection open, so queries in
    /// flight neither fail nor answer (a stalled disk or a frozen VM, not a crash).
    pub fn pause(&self) {
        signal(self.pid().expect("mariadbd is running"), "STOP");
    }

    /// SIGCONT after [`PrivateMariaDb::pause`]: the queries in flight go on where they were.
    pub fn resume(&self) {
        signal(self.pid().expect("mariadbd is running"), "CONT");
    }

    /// Run one statement as root (set-up only: creating the database).
    pub async fn execute(&self, sql: &str) {
        use sqlx::Connection;
        let mut c = sqlx::AnyConnection::connect(&self.url("mysql")).await.expect("connect as root");
        sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).execute(&mut c).await.expect(sql);
        let _ = c.close().await;
    }
}

impl Drop for PrivateMariaDb {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // The directory (datadir, socket, log) goes with `_dir`.
    }
}

/// The distinct warning/error lines of node logs (ids and numbers masked), most frequent first.
pub fn log_digest(paths: &[PathBuf], top: usize) -> String {
    let mut counts: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for p in paths {
        for line in std::fs::read_to_string(p).unwrap_or_default().lines() {
            if !(line.contains(" WARN ") || line.contains(" ERROR ") || line.contains("panicked")) {
                continue;
            }
            let rest = line.split_once(' ').map(|x| x.1).unwrap_or(line);
            let masked: String = rest
                .split(' ')
                .map(|w| match w.split_once('=') {
                    Some((k, v)) if v.starts_with("run_") || v.chars().all(|c| c.is_ascii_digit()) => format!("{k}=…"),
                    _ => w.to_string(),
                })
                .collect::<Vec<_>>()
                .join(" ");
            *counts.entry(masked).or_default() += 1;
        }
    }
    let mut v: Vec<_> = counts.into_iter().collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.1));
    v.into_iter().take(top).map(|(l, n)| format!("  {n:>5} × {}\n", l.chars().take(220).collect::<String>())).collect()
}

/// An attempt row.
#[derive(Debug, Clone)]
pub struct AttemptRow {
    pub run_id: String,
    pub attempt: i64,
    pub webhook_id: String,
    pub state: String,
    pub reason: Option<String>,
    pub started_ms: i64,
    pub finished_ms: Option<i64>,
}

pub async fn attempts(pool: &sqlx::AnyPool) -> Vec<AttemptRow> {
    use sqlx::Row;
    sqlx::query("SELECT run_id, attempt, webhook_id, state, reason, started_at_ms, finished_at_ms FROM attempts")
        .fetch_all(pool)
        .await
        .expect("read attempts")
        .iter()
        .map(|r| AttemptRow {
            run_id: r.get("run_id"),
            attempt: r.get("attempt"),
            webhook_id: r.get("webhook_id"),
            state: r.get("state"),
            reason: r.get("reason"),
            started_ms: r.get("started_at_ms"),
            finished_ms: r.get("finished_at_ms"),
        })
        .collect()
}

/// Violations of one property: how many, and a few examples.
#[derive(Default)]
pub struct Findings {
    items: Vec<(String, usize, Vec<String>)>,
}

impl Findings {
    /// Record `examples.len()` violations of `what` (nothing if empty).
    pub fn check(&mut self, what: &str, examples: Vec<String>) {
        if !examples.is_empty() {
            let n = examples.len();
            self.items.push((what.to_string(), n, examples.into_iter().take(3).collect()));
        }
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn report(&self) -> String {
        self.items
            .iter()
            .map(|(what, n, ex)| {
                format!("- {what}: {n}\n{}", ex.iter().map(|e| format!("    e.g. {e}\n")).collect::<String>())
            })
            .collect()
    }
}

/// (ms since `since` when the probe was sent, HTTP status or 0 for no answer, latency ms)
pub type Probes = Arc<Mutex<Vec<(i64, u16, i64)>>>;

/// GET `base` + `path` every `every` (each with `timeout`) until the task is aborted.
pub fn probe(
    base: &str,
    path: &'static str,
    every: Duration,
    timeout: Duration,
    since: i64,
) -> (Probes, tokio::task::JoinHandle<()>) {
    let out: Probes = Arc::default();
    let (o, url) = (out.clone(), format!("{base}{path}"));
    let h = tokio::spawn(async move {
        let client = reqwest::Client::builder().timeout(timeout).build().unwrap();
        loop {
            let t0 = now_ms();
            let status = client.get(&url).send().await.map(|r| r.status().as_u16()).unwrap_or(0);
            o.lock().unwrap().push((t0 - since, status, now_ms() - t0));
            tokio::time::sleep(every).await;
        }
    });
    (out, h)
}

/// Run futures concurrently, at most `limit` at a time, keeping their order.
pub async fn join_limited<F: std::future::Future<Output = T> + Send + 'static, T: Send + 'static>(
    limit: usize,
    futs: impl Iterator<Item = F>,
) -> Vec<T> {
    let sem = Arc::new(tokio::sync::Semaphore::new(limit));
    let handles: Vec<_> = futs
        .map(|f| {
            let sem = sem.clone();
            tokio::spawn(async move {
                let _p = sem.acquire().await.unwrap();
                f.await
            })
        })
        .collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.expect("task"));
    }
    out
}
