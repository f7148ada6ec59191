//! `sundial-runner`: the executor that runs script jobs.
//!
//! A runner is an executor like any other (the executor protocol: signed deliveries in,
//! signed calls out), which runs the script a delivery names in its sandbox instead of
//! calling application code:
//!
//! 1. `POST /` — a signed delivery of a script job (`script` names the version). The
//!    runner fetches the source by the run (`POST /api/v1/runs/{id}/script`, cached by
//!    SHA-256 and checked against the delivery's), waits for one of its `concurrency`
//!    slots, runs it (off the async threads), streams its output to the run's log, and
//!    answers with the result if it is done within `sync_wait`, else `202` and the result
//!    by callback (`POST /api/v1/runs/{id}/result`). A delivery of an attempt it is
//!    already running (a redelivery) joins it: `202`, and the result by callback.
//! 2. `POST /cancel` — a signed cancel: the attempt is stopped (wasm within ~10 ms, shell
//!    within ~20 ms) and fails `cancelled`.
//! 3. While shutting down it answers `503 {"code": "executor_offline"}`, so Sundial sends
//!    the attempt elsewhere, and lets the runs in progress finish (up to a grace).
//!
//! It is used two ways: `sundial runner` (a process of its own that registers with an
//! app, heartbeats and deregisters: [`Registration`]), and the runner `sundial serve`
//! builds in, which serves every app's script jobs on that node (its [`AppKeys`] read
//! the apps' secrets from the store).

mod calls;
mod exec;
mod runtimes;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sundial_core::clock::SharedClock;
use sundial_core::protocol::{Cancel, Delivery, headers};
use sundial_core::signing::{self, SigningKey};
use tokio::sync::{Semaphore, oneshot};

pub use calls::RunScript;
pub use exec::Outcome;
pub use runtimes::{Offer, Runtimes, RuntimesConfig};

use crate::exec::{LineSink, Source};

/// Source texts kept in memory, by SHA-256.
const SOURCES_IN_MEMORY: usize = 256;
/// Log lines are sent in batches at most this often.
const LOG_FLUSH: Duration = Duration::from_millis(300);
/// A script's budget ends this much (at most a tenth of the timeout) before the job's
/// timeout, so that its own failure is the answer rather than the exchange's timeout.
const ANSWER_MARGIN: Duration = Duration::from_millis(500);
/// A log line longer than this is sent in pieces (the API's limit is 10,000 characters).
const MAX_LINE: usize = 8_000;

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("no secret for app {0}")]
    UnknownApp(String),
    #[error("call to {path} failed: {message}")]
    Call { path: String, message: String },
    #[error("call to {path} refused with {status}: {body}")]
    Refused { path: String, status: u16, body: String },
}

/// The signing secrets of the apps this runner serves.
#[async_trait]
pub trait AppKeys: Send + Sync + 'static {
    /// The app's secrets valid now (`whsec_…`), or `None` if this runner does not serve it.
    async fn secrets(&self, app_id: &str) -> Option<Vec<String>>;
}

/// One app and its secret: what a `sundial runner` process serves.
#[derive(Debug, Clone)]
pub struct OneApp {
    pub app_id: String,
    pub secret: String,
}

#[async_trait]
impl AppKeys for OneApp {
    async fn secrets(&self, app_id: &str) -> Option<Vec<String>> {
        (app_id == self.app_id).then(|| vec![self.secret.clone()])
    }
}

/// How a runner behaves.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Sundial's base URL (`http://127.0.0.1:7700`).
    pub api_url: String,
    /// Scripts run at once at most; more wait for a slot (their timeout runs meanwhile).
    pub concurrency: usize,
    /// A result ready within this is the delivery's answer; later ones go by callback.
    pub sync_wait: Duration,
    /// Used when a delivery's script names no timeout.
    pub default_timeout: Duration,
}

impl RunnerConfig {
    pub fn new(api_url: impl Into<String>) -> Self {
        Self {
            api_url: api_url.into(),
            concurrency: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
            sync_wait: Duration::from_secs(10),
            default_timeout: Duration::from_secs(60),
        }
    }
}

/// An attempt in progress: its cancel flag, and whether its result must go by callback
/// (its first delivery's exchange is gone, or a redelivery joined it).
struct InFlight {
    cancel: Arc<AtomicBool>,
    by_callback: AtomicBool,
}

type AttemptKey = (String, i64, i64);

struct Inner {
    cfg: RunnerConfig,
    keys: Arc<dyn AppKeys>,
    clock: SharedClock,
    api: calls::Api,
    runtimes: Arc<Runtimes>,
    slots: Arc<Semaphore>,
    running: Mutex<HashMap<AttemptKey, Arc<InFlight>>>,
    sources: Mutex<HashMap<String, Arc<Vec<u8>>>>,
    stopping: AtomicBool,
    idle: tokio::sync::Notify,
}

/// The runner: cheap to clone, shared by its HTTP routes and its tasks.
#[derive(Clone)]
pub struct Runner {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner").field("api_url", &self.inner.cfg.api_url).finish()
    }
}

impl Runner {
    pub fn new(cfg: RunnerConfig, keys: Arc<dyn AppKeys>, runtimes: Arc<Runtimes>, clock: SharedClock) -> Self {
        let api = calls::Api::new(&cfg.api_url, keys.clone(), clock.clone());
        let slots = Arc::new(Semaphore::new(cfg.concurrency.max(1)));
        Runner {
            inner: Arc::new(Inner {
                cfg,
                keys,
                clock,
                api,
                runtimes,
                slots,
                running: Mutex::new(HashMap::new()),
                sources: Mutex::new(HashMap::new()),
                stopping: AtomicBool::new(false),
                idle: tokio::sync::Notify::new(),
            }),
        }
    }

    pub fn runtimes(&self) -> &Runtimes {
        &self.inner.runtimes
    }

    /// The runner's sandboxes, shared (e.g. to check sources at upload).
    pub fn runtimes_shared(&self) -> Arc<Runtimes> {
        self.inner.runtimes.clone()
    }

    /// The runner's HTTP routes: `POST /` (deliveries) and `POST /cancel`.
    pub fn router(&self) -> axum::Router {
        axum::Router::new()
            .route("/", post(deliver))
            .route("/cancel", post(cancel))
            .layer(axum::extract::DefaultBodyLimit::max(4 * 1024 * 1024))
            .with_state(self.clone())
    }

    /// The ids of the runs in progress (for heartbeats).
    pub fn running_runs(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.inner.running.lock().expect("running").keys().map(|k| k.0.clone()).collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// Stop taking deliveries (they get `503 executor_offline`) and wait up to `grace` for
    /// the runs in progress; those still running then are cancelled. Returns how many were.
    pub async fn shutdown(&self, grace: Duration) -> usize {
        self.inner.stopping.store(true, Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let idle = self.inner.idle.notified();
            if self.inner.running.lock().expect("running").is_empty() {
                return 0;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                break;
            }
        }
        let left: Vec<Arc<InFlight>> = self.inner.running.lock().expect("running").values().cloned().collect();
        for f in &left {
            f.cancel.store(true, Ordering::SeqCst);
        }
        // The cancelled runs report their results (by callback) before the process goes.
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            while !self.inner.running.lock().expect("running").is_empty() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        left.len()
    }

    /// Check a signed call from Sundial; the app it is for.
    async fn verify(&self, headers: &HeaderMap, body: &[u8]) -> Result<String, Response> {
        let h = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let unauthorized = |m: String| {
            (StatusCode::UNAUTHORIZED, axum::Json(json!({"code": "bad_signature", "message": m}))).into_response()
        };
        let app_id = h(headers::APP_ID).ok_or_else(|| unauthorized(format!("missing header `{}`", headers::APP_ID)))?;
        let secrets =
            self.inner.keys.secrets(app_id).await.ok_or_else(|| unauthorized(format!("unknown app {app_id}")))?;
        let keys: Vec<SigningKey> = secrets.iter().filter_map(|s| SigningKey::parse(s).ok()).collect();
        signing::verify(
            &keys,
            h(signing::HEADER_ID),
            h(signing::HEADER_TIMESTAMP),
            h(signing::HEADER_SIGNATURE),
            body,
            self.inner.clock.now_ms().div_euclid(1000),
        )
        .map_err(|e| unauthorized(e.to_string()))?;
        Ok(app_id.to_string())
    }

    /// The source of the run's script: from memory, else fetched, checked against `sha256`.
    /// The error says whether it is for good (the script is missing: `404`/`410`).
    async fn source(&self, app_id: &str, d: &Delivery, sha256: &str) -> Result<Arc<Vec<u8>>, (String, bool)> {
        if let Some(s) = self.inner.sources.lock().expect("sources").get(sha256) {
            return Ok(s.clone());
        }
        let got = self.inner.api.run_script(app_id, &d.run_id).await.map_err(|e| {
            let missing = matches!(e, RunnerError::Refused { status: 404 | 410, .. });
            (format!("fetching the script: {e}"), missing)
        })?;
        let bytes = match got.encoding.as_str() {
            "base64" => {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD
                    .decode(got.source.trim())
                    .map_err(|e| (format!("the script's base64: {e}"), true))?
            }
            _ => got.source.into_bytes(),
        };
        let actual = hex::encode(Sha256::digest(&bytes));
        if actual != sha256 {
            return Err((format!("the script's SHA-256 is {actual}, the delivery names {sha256}"), false));
        }
        let bytes = Arc::new(bytes);
        let mut sources = self.inner.sources.lock().expect("sources");
        if sources.len() >= SOURCES_IN_MEMORY {
            sources.clear();
        }
        sources.insert(sha256.to_string(), bytes.clone());
        Ok(bytes)
    }

    /// Run one attempt to its outcome (the task behind a delivery), within the job's
    /// timeout counted from `received` (less a margin, so that the run's own failure —
    /// deadline, fuel, … — reaches Sundial before its exchange times out).
    async fn execute(&self, app_id: String, d: Delivery, flight: Arc<InFlight>, received: Instant) -> Outcome {
        let Some(script) = d.script.clone() else {
            return Outcome::failed_for_good("this executor runs script jobs only (the delivery names no script)");
        };
        if !self.inner.runtimes.available().contains(&script.runtime) {
            let why =
                self.inner.runtimes.offers().iter().find(|o| o.runtime == script.runtime).map(|o| o.detail.clone());
            return Outcome::failed_for_good(format!(
                "this runner does not run `{}` scripts{}",
                script.runtime,
                why.map(|w| format!(": {w}")).unwrap_or_default()
            ));
        }
        let bytes = match self.source(&app_id, &d, &script.sha256).await {
            Ok(b) => b,
            Err((e, true)) => return Outcome::failed_for_good(e),
            Err((e, false)) => return Outcome::failed(e),
        };
        let timeout = if script.timeout_ms > 0 {
            Duration::from_millis(script.timeout_ms as u64)
        } else {
            self.inner.cfg.default_timeout
        };
        let margin = (timeout / 10).min(ANSWER_MARGIN);
        let deadline = received + timeout.saturating_sub(margin);
        let slot = tokio::time::timeout_at(deadline.into(), self.inner.slots.clone().acquire_owned()).await;
        let Ok(Ok(_slot)) = slot else {
            return Outcome::failed(format!(
                "timeout: no script slot was free within the job's timeout ({} ms; the runner runs {} at once)",
                timeout.as_millis(),
                self.inner.cfg.concurrency
            ));
        };
        let timeout = deadline.saturating_duration_since(Instant::now());
        let (lines_tx, lines_rx) = tokio::sync::mpsc::unbounded_channel::<(&'static str, String)>();
        let logger = tokio::spawn(ship_logs(
            self.inner.api.clone(),
            app_id.clone(),
            d.run_id.clone(),
            d.attempt,
            d.shard.index,
            lines_rx,
        ));
        let sink = line_sink(lines_tx);
        let runtimes = self.inner.runtimes.clone();
        let source = Source { runtime: script.runtime.clone(), bytes, sha256: script.sha256.clone() };
        let cancel = flight.cancel.clone();
        let d2 = d.clone();
        let outcome =
            tokio::task::spawn_blocking(move || exec::run_blocking(&runtimes, &d2, &source, timeout, cancel, sink))
                .await
                .unwrap_or_else(|e| Outcome::failed(format!("the run panicked: {e}")));
        let _ = logger.await; // every line is sent before the result
        outcome
    }
}

/// Split output chunks into lines (per stream) and queue them for the run's log. Every byte
/// the sandbox passes on reaches the log: a line longer than [`MAX_LINE`] bytes (or output
/// without newlines) is sent in pieces of at most that many, cut between characters, and
/// what is left without a newline at the end of the run is sent when the sink is dropped.
fn line_sink(tx: tokio::sync::mpsc::UnboundedSender<(&'static str, String)>) -> LineSink {
    let splitter = LineSplitter { tx, partial: Mutex::new(HashMap::new()) };
    Arc::new(move |level: &'static str, bytes: &[u8]| splitter.push(level, bytes))
}

struct LineSplitter {
    tx: tokio::sync::mpsc::UnboundedSender<(&'static str, String)>,
    partial: Mutex<HashMap<&'static str, Vec<u8>>>,
}

impl LineSplitter {
    fn push(&self, level: &'static str, bytes: &[u8]) {
        let mut partial = self.partial.lock().expect("partial");
        let buf = partial.entry(level).or_default();
        buf.extend_from_slice(bytes);
        while let Some(nl) = buf.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = buf.drain(..=nl).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            self.send_pieces(level, &line);
        }
        while buf.len() > MAX_LINE {
            let cut = char_cut(buf, MAX_LINE);
            let piece: Vec<u8> = buf.drain(..cut).collect();
            let _ = self.tx.send((level, String::from_utf8_lossy(&piece).into_owned()));
        }
    }

    /// One line, in pieces of at most `MAX_LINE` bytes (an empty line is one empty piece).
    fn send_pieces(&self, level: &'static str, mut line: &[u8]) {
        loop {
            let cut = char_cut(line, MAX_LINE);
            let _ = self.tx.send((level, String::from_utf8_lossy(&line[..cut]).into_owned()));
            line = &line[cut..];
            if line.is_empty() {
                break;
            }
        }
    }
}

impl Drop for LineSplitter {
    fn drop(&mut self) {
        let partial = std::mem::take(self.partial.get_mut().unwrap_or_else(|e| e.into_inner()));
        for (level, rest) in partial {
            if !rest.is_empty() {
                self.send_pieces(level, &rest);
            }
        }
    }
}

/// Where to cut `bytes` to keep at most `max` of them without splitting a UTF-8 character
/// (at `max` when there is no character to keep whole, e.g. bytes that are not UTF-8).
fn char_cut(bytes: &[u8], max: usize) -> usize {
    if bytes.len() <= max {
        return bytes.len();
    }
    // A continuation byte (0b10xx_xxxx) at the cut: move back to its character's start.
    let mut cut = max;
    while cut > max.saturating_sub(3) && cut > 0 && bytes[cut] & 0xC0 == 0x80 {
        cut -= 1;
    }
    if cut == 0 || bytes[cut] & 0xC0 == 0x80 { max } else { cut }
}

/// Send queued log lines in batches until the run's sink is dropped.
async fn ship_logs(
    api: calls::Api,
    app_id: String,
    run_id: String,
    attempt: i64,
    shard: i64,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<(&'static str, String)>,
) {
    let mut open = true;
    while open {
        let mut batch = Vec::new();
        match rx.recv().await {
            Some((level, line)) => batch.push((level.to_string(), line)),
            None => break,
        }
        let until = tokio::time::Instant::now() + LOG_FLUSH;
        while batch.len() < 500 {
            match tokio::time::timeout_at(until, rx.recv()).await {
                Ok(Some((level, line))) => batch.push((level.to_string(), line)),
                Ok(None) => {
                    open = false;
                    break;
                }
                Err(_) => break,
            }
        }
        if let Err(e) = api.logs(&app_id, &run_id, attempt, shard, batch).await {
            tracing::warn!(run_id, attempt, error = %e, "log lines not sent");
        }
    }
}

fn offline() -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, axum::Json(json!({"code": "executor_offline"}))).into_response()
}

async fn deliver(State(r): State<Runner>, headers: HeaderMap, body: Bytes) -> Response {
    let app_id = match r.verify(&headers, &body).await {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    if r.inner.stopping.load(Ordering::SeqCst) {
        return offline();
    }
    let received = Instant::now();
    let d: Delivery = match serde_json::from_slice(&body) {
        Ok(d) => d,
        Err(e) => {
            return (
                StatusCode::UNPROCESSABLE_ENTITY,
                axum::Json(json!({"code": "invalid_body", "message": e.to_string()})),
            )
                .into_response();
        }
    };
    let key: AttemptKey = (d.run_id.clone(), d.attempt, d.shard.index);
    let (flight, joined) = {
        let mut running = r.inner.running.lock().expect("running");
        match running.get(&key) {
            Some(f) => (f.clone(), true),
            None => {
                let f = Arc::new(InFlight {
                    cancel: Arc::new(AtomicBool::new(false)),
                    by_callback: AtomicBool::new(false),
                });
                running.insert(key.clone(), f.clone());
                (f, false)
            }
        }
    };
    if joined {
        // A redelivery of an attempt in progress here: one run, its result by callback.
        flight.by_callback.store(true, Ordering::SeqCst);
        return (StatusCode::ACCEPTED, axum::Json(json!({}))).into_response();
    }
    let (tx, rx) = oneshot::channel::<Value>();
    let runner = r.clone();
    tokio::spawn(async move {
        let (run_id, attempt, shard) = (d.run_id.clone(), d.attempt, d.shard.index);
        let outcome = runner.execute(app_id.clone(), d, flight.clone(), received).await;
        let answer = outcome.answer();
        let answered = !flight.by_callback.load(Ordering::SeqCst) && tx.send(answer.clone()).is_ok();
        if !answered || flight.by_callback.load(Ordering::SeqCst) {
            runner.inner.api.result(&app_id, &run_id, attempt, shard, &answer).await;
        }
        runner.inner.running.lock().expect("running").remove(&key);
        runner.inner.idle.notify_waiters();
    });
    let sync_wait = r.inner.cfg.sync_wait;
    let mut rx = rx;
    match tokio::time::timeout(sync_wait, &mut rx).await {
        Ok(Ok(answer)) => (StatusCode::OK, axum::Json(answer)).into_response(),
        _ => {
            rx.close(); // the task reports by callback from now on…
            match rx.try_recv() {
                // …unless it sent its answer just before the close.
                Ok(answer) => (StatusCode::OK, axum::Json(answer)).into_response(),
                Err(_) => (StatusCode::ACCEPTED, axum::Json(json!({}))).into_response(),
            }
        }
    }
}

async fn cancel(State(r): State<Runner>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(resp) = r.verify(&headers, &body).await {
        return resp;
    }
    let c: Cancel = match serde_json::from_slice(&body) {
        Ok(c) => c,
        Err(e) => {
            return (
                StatusCode::UNPROCESSABLE_ENTITY,
                axum::Json(json!({"code": "invalid_body", "message": e.to_string()})),
            )
                .into_response();
        }
    };
    let key: AttemptKey = (c.run_id.clone(), c.attempt, c.shard.unwrap_or(0));
    let found = r.inner.running.lock().expect("running").get(&key).cloned();
    if let Some(f) = &found {
        f.cancel.store(true, Ordering::SeqCst);
        tracing::info!(run_id = %c.run_id, attempt = c.attempt, "run cancelled");
    }
    (StatusCode::OK, axum::Json(json!({"cancelled": found.is_some()}))).into_response()
}

/// A `sundial runner` process's registration with its app: register, heartbeat every
/// interval Sundial names (with the runs in progress), deregister on the way out.
pub struct Registration {
    runner: Runner,
    app_id: String,
    executor_id: String,
    interval: Duration,
}

impl Registration {
    /// Register `address` (where this runner listens) with the app, for its runtimes.
    pub async fn register(
        runner: &Runner,
        app_id: &str,
        address: &str,
        name: &str,
    ) -> Result<Registration, RunnerError> {
        let body = json!({
            "address": address,
            "name": name,
            "handlers": [],
            "runtimes": runner.runtimes().available(),
            "metadata": {"runner": env!("CARGO_PKG_VERSION")},
        });
        let v = runner.inner.api.post(app_id, "/api/v1/executors/register", &body).await?;
        let executor_id = v["executor_id"].as_str().unwrap_or_default().to_string();
        let interval = Duration::from_millis(v["heartbeat_interval_ms"].as_u64().unwrap_or(3_000));
        Ok(Registration { runner: runner.clone(), app_id: app_id.to_string(), executor_id, interval })
    }

    pub fn executor_id(&self) -> &str {
        &self.executor_id
    }

    /// Heartbeat until `stop` is notified (a failed beat is logged and the next one tried).
    pub async fn heartbeat_until(&self, stop: Arc<tokio::sync::Notify>) {
        loop {
            tokio::select! {
                _ = stop.notified() => return,
                _ = tokio::time::sleep(self.interval) => {}
            }
            let runs = self.runner.running_runs();
            let body = json!({"executor_id": self.executor_id, "running": runs.len(), "running_runs": runs});
            if let Err(e) = self.runner.inner.api.post(&self.app_id, "/api/v1/executors/heartbeat", &body).await {
                tracing::warn!(error = %e, "heartbeat failed");
            }
        }
    }

    pub async fn deregister(&self) -> Result<(), RunnerError> {
        self.runner
            .inner
            .api
            .post(&self.app_id, "/api/v1/executors/deregister", &json!({"executor_id": self.executor_id}))
            .await
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(chunks: &[(&'static str, &[u8])]) -> Vec<(&'static str, String)> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let sink = line_sink(tx);
        for (level, bytes) in chunks {
            sink(level, bytes);
        }
        drop(sink);
        let mut lines = Vec::new();
        while let Ok(line) = rx.try_recv() {
            lines.push(line);
        }
        lines
    }

    #[test]
    fn output_without_newlines_reaches_the_log_byte_for_byte() {
        let blob: Vec<u8> = (0..20_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let lines = collect(&[("info", &blob[..12_000]), ("info", &blob[12_000..])]);
        assert!(lines.iter().all(|(l, s)| *l == "info" && s.len() <= MAX_LINE), "{lines:?}");
        let joined: String = lines.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(joined.as_bytes(), &blob[..]);
    }

    #[test]
    fn long_lines_and_multibyte_characters_are_kept_whole() {
        let long = "é".repeat(9_000); // 18,000 bytes in one line
        let text = format!("first\r\n{long}\nlast without newline");
        let lines = collect(&[("warn", text.as_bytes()), ("info", b"out\n")]);
        let warn: Vec<&str> = lines.iter().filter(|(l, _)| *l == "warn").map(|(_, s)| s.as_str()).collect();
        assert_eq!(warn[0], "first");
        assert_eq!(warn[1..warn.len() - 1].concat(), long);
        assert!(warn[1..warn.len() - 1].iter().all(|p| p.len() <= MAX_LINE && !p.contains('\u{FFFD}')));
        assert_eq!(warn[warn.len() - 1], "last without newline");
        assert!(lines.contains(&("info", "out".to_string())));
        assert_eq!(collect(&[("info", b"\n")]), vec![("info", String::new())]);
    }
}
