//! The test harness: a real `sundial serve` (embedded SQLite in a temp dir, port 0, the
//! operator key given by `SUNDIAL_ADMIN_KEY`), a tenant, and executors served in-process on
//! 127.0.0.1:0. Everything stops by itself (the node on drop, the executors on their signal).
#![allow(dead_code)] // each test binary uses its own subset

use std::future::Future;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sundial_sdk::client::{JobInput, ScheduleSpec};
use sundial_sdk::{Builder, Client, Executor, Registered};
use tokio::sync::oneshot;

/// The repository root (`sdks/rust/../..`).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// `SUNDIAL_BIN` (relative to the repository root), default `target/debug/sundial`.
pub fn sundial_bin() -> PathBuf {
    let p = std::env::var("SUNDIAL_BIN").map(PathBuf::from).unwrap_or_else(|_| PathBuf::from("target/debug/sundial"));
    if p.is_absolute() { p } else { repo().join(p) }
}

pub fn vector(name: &str) -> Value {
    let path = repo().join("sdks/vectors").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// A running `sundial serve`, killed on drop.
pub struct Sundial {
    child: Child,
    pub base: String,
    pub operator_key: String,
    _dir: tempfile::TempDir,
    log: PathBuf,
}

impl Sundial {
    pub fn start() -> Sundial {
        let bin = sundial_bin();
        assert!(bin.exists(), "{} not found: build it (cargo build -p sundial) or set SUNDIAL_BIN", bin.display());
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("sundial.log");
        let operator_key = format!("sk_rust_sdk_{}", uuid_hex());
        let mut cmd = Command::new(&bin);
        for (k, _) in std::env::vars() {
            if k.starts_with("SUNDIAL_") {
                cmd.env_remove(k);
            }
        }
        let mut child = cmd
            .args(["serve", "--listen", "127.0.0.1:0", "--runner", "false", "--data-dir"])
            .arg(dir.path().join("data"))
            .env("SUNDIAL_ADMIN_KEY", &operator_key)
            .env("SUNDIAL_LOG", std::env::var("SUNDIAL_TEST_LOG").unwrap_or_else(|_| "warn".into()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
            .spawn()
            .expect("spawn sundial");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut base = None;
        while Instant::now() < deadline {
            let Some(Ok(line)) = lines.next() else { break };
            if let Some(url) = line.strip_prefix("Sundial listening on ") {
                base = Some(url.trim().trim_end_matches('/').to_string());
                break;
            }
        }
        std::thread::spawn(move || for _ in lines {});
        let Some(base) = base else {
            let _ = child.kill();
            panic!("sundial did not print its URL; its log:\n{}", std::fs::read_to_string(&log).unwrap_or_default());
        };
        Sundial { child, base, operator_key, _dir: dir, log }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A new tenant: a client with its admin key.
    pub async fn tenant(&self, name: &str) -> Client {
        let op = Client::new(&self.base, &self.operator_key);
        let t: Value = op.post("/tenants", &json!({"name": name})).await.expect("create tenant");
        Client::new(&self.base, t["admin_key"].as_str().unwrap())
    }
}

impl Drop for Sundial {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn uuid_hex() -> String {
    use std::time::SystemTime;
    let n = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos();
    format!("{n:x}{:x}", std::process::id())
}

/// An executor served on 127.0.0.1:0 in this process; stops (drain, deregister) when
/// [`Served::stop`] is called or on drop.
pub struct Served {
    pub ex: Executor,
    pub url: String,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Served {
    pub async fn start(builder: Builder) -> Served {
        let ex = builder.shutdown_grace(Duration::from_secs(10)).build().expect("executor");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let (tx, rx) = oneshot::channel::<()>();
        let serving = ex.clone();
        let done = tokio::spawn(async move {
            serving
                .serve_listener(listener, async move {
                    let _ = rx.await;
                })
                .await
        });
        // Registered once `registration()` is set (serve_listener registers before serving).
        let ex2 = ex.clone();
        wait_for("the executor to register", Duration::from_secs(10), || {
            let r = ex2.registration();
            async move { r }
        })
        .await;
        Served { ex, url, stop: Some(tx), done: Some(done) }
    }

    pub fn registration(&self) -> Registered {
        self.ex.registration().expect("registered")
    }

    /// Drain, wait for the runs in progress, deregister, stop serving.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(done) = self.done.take() {
            tokio::time::timeout(Duration::from_secs(20), done).await.expect("executor stops").unwrap().unwrap();
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// Poll `f` every 50 ms until it gives `Some`; panic after `within`.
pub async fn wait_for<T, F, Fut>(what: &str, within: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out after {within:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A manual job for `handler` on `app`, with `extra` fields merged in.
pub fn manual_job(name: &str, app: &str, handler: &str, extra: Value) -> JobInput {
    let mut v = json!({"name": name, "app": app, "handler": handler, "schedule": {"kind": "manual"}});
    if let (Some(m), Value::Object(e)) = (v.as_object_mut(), extra) {
        m.extend(e);
    }
    serde_json::from_value(v).expect("a JobInput")
}

pub fn manual() -> ScheduleSpec {
    serde_json::from_value(json!({"kind": "manual"})).unwrap()
}

/// Wait for a run to end (succeeded, failed, cancelled, skipped, expired).
pub async fn finished(api: &Client, run_id: &str) -> sundial_sdk::client::RunDetail {
    let r = api
        .wait_run(run_id, Duration::from_secs(20), Duration::from_millis(50), |r| r.run.state.is_terminal())
        .await
        .expect("read the run");
    assert!(r.run.state.is_terminal(), "run {run_id} did not end: {r:?}");
    r
}
