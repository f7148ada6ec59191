//! The executor: handlers by name, verified deliveries, once per `webhook-id`, sync or async
//! answers, cancels, registration and heartbeats, draining.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::routing::post;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sundial_core::protocol::{AnswerStatus, Cancel, Delivery};
use sundial_core::signing::{self, SigningKey};
use tokio::sync::{Notify, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::calls::{Calls, DeregisterRequest, HeartbeatRequest, RegisterRequest, Registered, ResultRequest};
use crate::context::Context;
use crate::error::Error;
use crate::verify::{self, BadSecret};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
type HandlerFn = Arc<dyn Fn(Context, Value) -> BoxFuture<Result<Value, Error>> + Send + Sync>;

/// How a handler's answer reaches Sundial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// `200` with the result if the handler returns within the time budget, else `202` and
    /// the signed result callback when it does. The default.
    #[default]
    Auto,
    /// Always `200` with the result (the handler must finish within the job's `timeout_ms`).
    Sync,
    /// Always `202` at once, then the signed result callback.
    Async,
}

/// Per-handler options for [`Builder::handler_with`].
#[derive(Debug, Clone, Copy, Default)]
pub struct HandlerOptions {
    pub mode: Mode,
    /// The time budget of [`Mode::Auto`]; default the executor's [`Builder::sync_budget`].
    pub budget: Option<Duration>,
}

impl HandlerOptions {
    pub fn sync() -> Self {
        HandlerOptions { mode: Mode::Sync, budget: None }
    }
    pub fn asynchronous() -> Self {
        HandlerOptions { mode: Mode::Async, budget: None }
    }
    pub fn budget(budget: Duration) -> Self {
        HandlerOptions { mode: Mode::Auto, budget: Some(budget) }
    }
}

#[derive(Clone)]
struct HandlerEntry {
    f: HandlerFn,
    options: HandlerOptions,
}

/// The executor could not be built or started.
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    #[error("no signing secret: give `.secret(\"whsec_…\")` or SUNDIAL_SECRET")]
    NoSecret,
    #[error(transparent)]
    BadSecret(#[from] BadSecret),
    #[error(
        "registering needs an app id (`.app_id(..)` or SUNDIAL_APP_ID) and a scheduler URL (`.scheduler_url(..)` or SUNDIAL_URL)"
    )]
    NotConfigured,
    #[error("registration refused: HTTP {status} {body}")]
    Refused { status: u16, body: Value },
    #[error(transparent)]
    Call(#[from] crate::calls::CallError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Builds an [`Executor`]: `Executor::builder().secret(..).scheduler_url(..).app_id(..)
/// .handler("name", |ctx, params: MyType| async move { … }).build()`.
#[must_use]
pub struct Builder {
    secrets: Vec<String>,
    urls: Vec<String>,
    app_id: Option<String>,
    address: Option<String>,
    name: Option<String>,
    tags: Vec<String>,
    metadata: Option<Value>,
    sync_budget: Duration,
    remember: Duration,
    remember_max: usize,
    grace: Duration,
    register: bool,
    handlers: HashMap<String, HandlerEntry>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            secrets: Vec::new(),
            urls: Vec::new(),
            app_id: None,
            address: None,
            name: None,
            tags: Vec::new(),
            metadata: None,
            sync_budget: Duration::from_secs(10),
            remember: Duration::from_secs(15 * 60),
            remember_max: 10_000,
            grace: Duration::from_secs(30),
            register: true,
            handlers: HashMap::new(),
        }
    }
}

fn split_list(v: &str) -> impl Iterator<Item = String> + '_ {
    v.split([',', ' ']).map(str::trim).filter(|s| !s.is_empty()).map(String::from)
}

impl Builder {
    /// Read what the environment gives: `SUNDIAL_SECRET` (several comma separated),
    /// `SUNDIAL_APP_ID`, `SUNDIAL_URL` (several comma separated), `SUNDIAL_EXECUTOR_URL`
    /// (the address Sundial delivers to).
    pub fn from_env(mut self) -> Self {
        if let Ok(v) = std::env::var("SUNDIAL_SECRET") {
            self.secrets.extend(split_list(&v));
        }
        if let Ok(v) = std::env::var("SUNDIAL_URL") {
            self.urls.extend(split_list(&v));
        }
        if let Ok(v) = std::env::var("SUNDIAL_APP_ID")
            && !v.trim().is_empty()
        {
            self.app_id = Some(v.trim().to_string());
        }
        if let Ok(v) = std::env::var("SUNDIAL_EXECUTOR_URL")
            && !v.trim().is_empty()
        {
            self.address = Some(v.trim().to_string());
        }
        self
    }
    /// An app secret (`whsec_…`); call again for each secret valid during a rotation.
    pub fn secret(mut self, secret: impl Into<String>) -> Self {
        self.secrets.push(secret.into());
        self
    }
    pub fn secrets<I: IntoIterator<Item = S>, S: Into<String>>(mut self, secrets: I) -> Self {
        self.secrets.extend(secrets.into_iter().map(Into::into));
        self
    }
    /// A Sundial node (`http://host:7700`); call again for more: any live one is used.
    pub fn scheduler_url(mut self, url: impl Into<String>) -> Self {
        self.urls.push(url.into());
        self
    }
    pub fn scheduler_urls<I: IntoIterator<Item = S>, S: Into<String>>(mut self, urls: I) -> Self {
        self.urls.extend(urls.into_iter().map(Into::into));
        self
    }
    pub fn app_id(mut self, app_id: impl Into<String>) -> Self {
        self.app_id = Some(app_id.into());
        self
    }
    /// The URL Sundial delivers to (default for [`Executor::serve`]: `http://<bound address>/`).
    pub fn address(mut self, address: impl Into<String>) -> Self {
        self.address = Some(address.into());
        self
    }
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    pub fn tags<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tags: I) -> Self {
        self.tags.extend(tags.into_iter().map(Into::into));
        self
    }
    pub fn metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }
    /// [`Mode::Auto`]: how long a handler may run before the answer is `202` (default 10 s).
    pub fn sync_budget(mut self, budget: Duration) -> Self {
        self.sync_budget = budget;
        self
    }
    /// How long answers are remembered per `webhook-id` (at least 10 minutes; default 15),
    /// and at most how many (default 10 000; the oldest finished ones are forgotten first).
    pub fn remember(mut self, ttl: Duration, max: usize) -> Self {
        self.remember = ttl.max(Duration::from_secs(600));
        self.remember_max = max.max(100);
        self
    }
    /// On shutdown, how long runs in progress may take to finish (default 30 s).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }
    /// `false` for an executor listed as a static endpoint of its app (serverless): no
    /// registration, no heartbeats. Results and logs are still sent when a URL is given.
    pub fn register(mut self, register: bool) -> Self {
        self.register = register;
        self
    }

    /// Serve the handler `name`. `params` is the run's params as `P` (any `serde`
    /// `Deserialize`; `serde_json::Value` for untyped): params that do not match fail the run
    /// with `"retry": false` and a message naming the field. The output is any `Serialize`.
    pub fn handler<P, O, F, Fut>(self, name: &str, f: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        O: Serialize + Send + 'static,
        F: Fn(Context, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, Error>> + Send + 'static,
    {
        self.handler_with(name, HandlerOptions::default(), f)
    }

    /// [`Builder::handler`] with a [`Mode`] and time budget.
    pub fn handler_with<P, O, F, Fut>(mut self, name: &str, options: HandlerOptions, f: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        O: Serialize + Send + 'static,
        F: Fn(Context, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, Error>> + Send + 'static,
    {
        let f = Arc::new(f);
        let handler_name = name.to_string();
        let wrapped: HandlerFn = Arc::new(move |ctx: Context, params: Value| -> BoxFuture<Result<Value, Error>> {
            let f = f.clone();
            let name = handler_name.clone();
            Box::pin(async move {
                let p: P = parse_params(&name, params)?;
                let out = f(ctx, p).await?;
                serde_json::to_value(out)
                    .map_err(|e| Error::no_retry(format!("the output of handler `{name}` is not JSON: {e}")))
            })
        });
        self.handlers.insert(name.to_string(), HandlerEntry { f: wrapped, options });
        self
    }

    pub fn build(self) -> Result<Executor, ExecutorError> {
        if self.secrets.is_empty() {
            return Err(ExecutorError::NoSecret);
        }
        let keys = verify::parse_secrets(&self.secrets)?;
        let calls = match (&self.app_id, self.urls.is_empty()) {
            (Some(app), false) => Some(Arc::new(Calls::new(self.urls.clone(), app.clone(), keys.clone()))),
            _ => None,
        };
        Ok(Executor {
            inner: Arc::new(Inner {
                keys,
                calls,
                handlers: self.handlers,
                retired: Mutex::new(HashSet::new()),
                sync_budget: self.sync_budget,
                remember: self.remember,
                remember_max: self.remember_max,
                grace: self.grace,
                register: self.register,
                address: self.address,
                name: self.name,
                tags: self.tags,
                metadata: self.metadata,
                answers: Mutex::new(Answers::default()),
                running: Mutex::new(HashMap::new()),
                recent_cancels: Mutex::new(HashMap::new()),
                idle: Notify::new(),
                draining: AtomicBool::new(false),
                registration: Mutex::new(None),
                heartbeats: Mutex::new(None),
            }),
        })
    }
}

fn parse_params<P: DeserializeOwned>(name: &str, params: Value) -> Result<P, Error> {
    let first = serde_path_to_error::deserialize::<_, P>(&params);
    match first {
        Ok(p) => Ok(p),
        Err(e) => {
            // A job with no params sends `null`: read it as `{}` when that fits.
            if params.is_null()
                && let Ok(p) = serde_json::from_value::<P>(json!({}))
            {
                return Ok(p);
            }
            let path = e.path().to_string();
            let at = if path == "." { String::new() } else { format!("{path}: ") };
            Err(Error::no_retry(format!("params do not match handler `{name}`: {at}{}", e.into_inner())))
        }
    }
}

/// An executor. Clone it freely: every clone is the same executor.
#[derive(Clone)]
pub struct Executor {
    inner: Arc<Inner>,
}

/// (run id, shard index, attempt)
type RunKey = (String, i64, i64);

struct Inner {
    keys: Vec<SigningKey>,
    calls: Option<Arc<Calls>>,
    handlers: HashMap<String, HandlerEntry>,
    retired: Mutex<HashSet<String>>,
    sync_budget: Duration,
    remember: Duration,
    remember_max: usize,
    grace: Duration,
    register: bool,
    address: Option<String>,
    name: Option<String>,
    tags: Vec<String>,
    metadata: Option<Value>,
    answers: Mutex<Answers>,
    running: Mutex<HashMap<RunKey, CancellationToken>>,
    recent_cancels: Mutex<HashMap<RunKey, Instant>>,
    idle: Notify,
    draining: AtomicBool,
    registration: Mutex<Option<Registered>>,
    heartbeats: Mutex<Option<CancellationToken>>,
}

/// An answer as sent, to repeat it.
#[derive(Debug, Clone)]
struct Stored {
    status: u16,
    body: Option<Value>,
}

impl Stored {
    fn json(status: u16, body: Value) -> Self {
        Stored { status, body: Some(body) }
    }
    fn response(&self) -> Response {
        let mut b = Response::builder().status(StatusCode::from_u16(self.status).unwrap_or(StatusCode::OK));
        match &self.body {
            Some(v) => {
                b = b.header(header::CONTENT_TYPE, "application/json");
                b.body(Body::from(serde_json::to_vec(v).unwrap_or_default())).unwrap()
            }
            None => b.body(Body::empty()).unwrap(),
        }
    }
}

enum Remembered {
    InFlight(watch::Receiver<Option<Stored>>),
    Done(Stored),
}

/// Answers by `webhook-id`, time-limited and bounded.
#[derive(Default)]
struct Answers {
    by_id: HashMap<String, (Instant, Remembered)>,
    order: VecDeque<(Instant, String)>,
}

impl Answers {
    fn prune(&mut self, ttl: Duration, max: usize) {
        let now = Instant::now();
        let mut running = Vec::new();
        while let Some((at, id)) = self.order.front().cloned() {
            if now.duration_since(at) <= ttl && self.by_id.len() <= max {
                break;
            }
            self.order.pop_front();
            let still_running = match self.by_id.get(&id) {
                Some((t, r)) if *t == at => matches!(r, Remembered::InFlight(_)),
                _ => continue, // a stale order entry: the id was remembered again later
            };
            if still_running {
                // Never forget one still running: its repeat must not run it again.
                running.push((at, id));
            } else {
                self.by_id.remove(&id);
            }
        }
        for r in running.into_iter().rev() {
            self.order.push_front(r);
        }
    }
}

fn code(status: u16, code: &str, message: &str) -> Response {
    Stored::json(status, json!({"code": code, "message": message})).response()
}

fn header_str<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

impl Executor {
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The axum `Router` serving deliveries at `/` and cancels at `/cancel`: merge it, or nest
    /// it (`Router::new().nest("/sundial", ex.router())`, registered as `https://host/sundial`).
    pub fn router(&self) -> Router {
        Router::new().route("/", post(delivery_route)).route("/cancel", post(cancel_route)).with_state(self.clone())
    }

    /// Verify and handle one delivery (the framework-free core of [`Executor::router`]).
    pub async fn handle_delivery(&self, headers: &HeaderMap, body: Bytes) -> Response {
        let inner = &self.inner;
        if let Err(e) = verify::verify(
            &inner.keys,
            header_str(headers, signing::HEADER_ID),
            header_str(headers, signing::HEADER_TIMESTAMP),
            header_str(headers, signing::HEADER_SIGNATURE),
            &body,
            verify::now_secs(),
        ) {
            return code(401, e.code(), &e.to_string());
        }
        let webhook_id = header_str(headers, signing::HEADER_ID).unwrap_or_default().to_string();

        // A repeat gets the first answer, even while draining.
        let first = {
            let mut answers = inner.answers.lock().unwrap();
            answers.prune(inner.remember, inner.remember_max);
            match answers.by_id.get(&webhook_id) {
                Some((_, Remembered::Done(s))) => Some(Err(s.clone())),
                Some((_, Remembered::InFlight(rx))) => Some(Ok(rx.clone())),
                None => None,
            }
        };
        match first {
            Some(Err(s)) => return s.response(),
            Some(Ok(rx)) => return wait_answer(rx).await.response(),
            None => {}
        }
        if inner.draining.load(Ordering::SeqCst) {
            return code(503, "executor_offline", "this executor is shutting down");
        }
        let delivery: Delivery = match serde_json::from_slice(&body) {
            Ok(d) => d,
            Err(e) => {
                return Stored::json(
                    200,
                    json!({"status": "failed", "retry": false,
                           "message": format!("the executor could not read the delivery: {e}")}),
                )
                .response();
            }
        };
        let name = delivery.handler.clone().unwrap_or_default();
        let entry = match inner.handlers.get(&name) {
            Some(e) if !inner.retired.lock().unwrap().contains(&name) => e.clone(),
            _ => return code(410, "handler_retired", &format!("this executor does not serve handler `{name}`")),
        };

        let (tx, rx) = watch::channel(None);
        let raced = {
            let mut answers = inner.answers.lock().unwrap();
            match answers.by_id.get(&webhook_id) {
                // Two copies raced past the first look.
                Some((_, Remembered::Done(s))) => Some(Err(s.clone())),
                Some((_, Remembered::InFlight(r))) => Some(Ok(r.clone())),
                None => {
                    let now = Instant::now();
                    answers.by_id.insert(webhook_id.clone(), (now, Remembered::InFlight(rx.clone())));
                    answers.order.push_back((now, webhook_id.clone()));
                    None
                }
            }
        };
        match raced {
            Some(Err(s)) => return s.response(),
            Some(Ok(r)) => return wait_answer(r).await.response(),
            None => {}
        }
        // The run is driven by its own task: a dropped connection does not stop it, and its
        // answer is remembered for the repeat.
        let ex = self.clone();
        let id = webhook_id.clone();
        tokio::spawn(async move {
            let stored = ex.run(delivery, id.clone(), entry).await;
            {
                // Remembered from the answer on, whatever the run took.
                let mut answers = ex.inner.answers.lock().unwrap();
                let now = Instant::now();
                answers.by_id.insert(id.clone(), (now, Remembered::Done(stored.clone())));
                answers.order.push_back((now, id.clone()));
            }
            let _ = tx.send(Some(stored));
        });
        wait_answer(rx).await.response()
    }

    /// Run a delivery's handler; the answer to give (the result goes by callback after a `202`).
    async fn run(&self, delivery: Delivery, webhook_id: String, entry: HandlerEntry) -> Stored {
        let inner = self.inner.clone();
        let key: RunKey = (delivery.run_id.clone(), delivery.shard.index, delivery.attempt);
        let token = CancellationToken::new();
        {
            let mut cancels = inner.recent_cancels.lock().unwrap();
            if cancels.remove(&key).is_some() {
                token.cancel();
            }
        }
        inner.running.lock().unwrap().insert(key.clone(), token.clone());
        let answer_later = Arc::new(Notify::new());
        let ctx = Context::new(delivery.clone(), webhook_id, token, answer_later.clone(), inner.calls.clone());
        let params = delivery.params.clone();

        #[derive(PartialEq)]
        enum Phase {
            Waiting,
            Async,
        }
        let phase = Arc::new(Mutex::new(Phase::Waiting));
        let (tx, mut rx) = oneshot::channel::<Result<Value, Error>>();

        let task_phase = phase.clone();
        let task_inner = inner.clone();
        let task_ctx = ctx.clone();
        let f = entry.f.clone();
        let task_key = key.clone();
        tokio::spawn(async move {
            // Flush logs every second while the handler runs.
            let ticker_ctx = task_ctx.clone();
            let ticker = tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    if ticker_ctx.has_logs() {
                        ticker_ctx.flush().await;
                    }
                }
            });
            let outcome = match tokio::spawn(f(task_ctx.clone(), params)).await {
                Ok(o) => o,
                Err(e) if e.is_panic() => {
                    let p = e.into_panic();
                    let m = p
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "a panic".into());
                    Err(Error::new(format!("the handler panicked: {m}")))
                }
                Err(e) => Err(Error::new(format!("the handler was stopped: {e}"))),
            };
            ticker.abort();
            task_ctx.flush().await;
            // Decided under the lock the answering side takes: either the waiting request
            // gets the outcome, or it already answered 202 and the outcome goes by callback.
            let leftover = {
                let p = task_phase.lock().unwrap();
                if *p == Phase::Waiting { tx.send(outcome).err() } else { Some(outcome) }
            };
            if let Some(outcome) = leftover {
                send_result(&task_inner, &task_ctx, outcome).await;
            }
            task_inner.running.lock().unwrap().remove(&task_key);
            task_inner.idle.notify_waiters();
        });

        let budget = entry.options.budget.unwrap_or(inner.sync_budget);
        let mode = entry.options.mode;
        let budget_spent = async move {
            match mode {
                Mode::Async => {}
                Mode::Sync => std::future::pending::<()>().await,
                Mode::Auto => tokio::time::sleep(budget).await,
            }
        };
        tokio::select! {
            o = &mut rx => return o.map(answer_of).unwrap_or_else(|_| lost()),
            _ = budget_spent => {}
            _ = answer_later.notified() => {}
        }
        let mut p = phase.lock().unwrap();
        match rx.try_recv() {
            Ok(o) => answer_of(o),
            Err(oneshot::error::TryRecvError::Empty) => {
                *p = Phase::Async;
                Stored { status: 202, body: None }
            }
            Err(oneshot::error::TryRecvError::Closed) => lost(),
        }
    }

    /// Verify and handle one cancel (`POST <address>/cancel`).
    pub async fn handle_cancel(&self, headers: &HeaderMap, body: Bytes) -> Response {
        let inner = &self.inner;
        if let Err(e) = verify::verify(
            &inner.keys,
            header_str(headers, signing::HEADER_ID),
            header_str(headers, signing::HEADER_TIMESTAMP),
            header_str(headers, signing::HEADER_SIGNATURE),
            &body,
            verify::now_secs(),
        ) {
            return code(401, e.code(), &e.to_string());
        }
        let cancel: Cancel = match serde_json::from_slice(&body) {
            Ok(c) => c,
            Err(e) => return code(400, "bad_request", &format!("not a cancel: {e}")),
        };
        let key: RunKey = (cancel.run_id, cancel.shard.unwrap_or(0), cancel.attempt);
        let token = inner.running.lock().unwrap().get(&key).cloned();
        match token {
            Some(t) => t.cancel(),
            None => {
                // It may arrive before its delivery: remember it briefly.
                let mut cancels = inner.recent_cancels.lock().unwrap();
                let now = Instant::now();
                cancels.retain(|_, at| now.duration_since(*at) < Duration::from_secs(600));
                if cancels.len() < 10_000 {
                    cancels.insert(key, now);
                }
            }
        }
        Stored::json(200, json!({"ok": true})).response()
    }

    /// Stop serving `handler`: its deliveries get `410 handler_retired` (when every
    /// executor of the app says so, Sundial stops the job).
    pub fn retire(&self, handler: &str) {
        self.inner.retired.lock().unwrap().insert(handler.to_string());
    }

    /// The handler names served (not retired; the handler named `""`, which serves jobs
    /// without a handler, is not listed).
    pub fn handlers(&self) -> Vec<String> {
        let retired = self.inner.retired.lock().unwrap();
        let mut v: Vec<String> =
            self.inner.handlers.keys().filter(|h| !h.is_empty() && !retired.contains(*h)).cloned().collect();
        v.sort();
        v
    }

    /// The ids of the runs in progress here (sent with every heartbeat).
    pub fn running_runs(&self) -> Vec<String> {
        let mut v: Vec<String> = self.inner.running.lock().unwrap().keys().map(|k| k.0.clone()).collect();
        v.sort();
        v.dedup();
        v
    }

    /// From now on new deliveries get `503 executor_offline` (repeats still get their answer).
    pub fn drain(&self) {
        self.inner.draining.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.inner.draining.load(Ordering::SeqCst)
    }

    /// This executor's registration, once [`Executor::start`] succeeded.
    pub fn registration(&self) -> Option<Registered> {
        self.inner.registration.lock().unwrap().clone()
    }

    /// Register with Sundial as `address` (the URL it delivers to) and heartbeat with the runs
    /// in progress until [`Executor::shutdown`]. Registering creates a `stopped` job per
    /// handler new to the app.
    pub async fn start(&self, address: &str) -> Result<Registered, ExecutorError> {
        let calls = self.inner.calls.clone().ok_or(ExecutorError::NotConfigured)?;
        let registered = register(&self.inner, &calls, address).await?;
        let stop = CancellationToken::new();
        if let Some(old) = self.inner.heartbeats.lock().unwrap().replace(stop.clone()) {
            old.cancel();
        }
        let inner = self.inner.clone();
        let address = address.to_string();
        tokio::spawn(async move {
            let mut interval = Duration::from_millis(registered.heartbeat_interval_ms.clamp(200, 60_000) as u64);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(interval) => {}
                }
                let Some(id) = inner.registration.lock().unwrap().as_ref().map(|r| r.executor_id.clone()) else {
                    return;
                };
                let running_runs = Executor { inner: inner.clone() }.running_runs();
                let body = HeartbeatRequest {
                    executor_id: &id,
                    running: running_runs.len() as i64,
                    running_runs,
                    metadata: None,
                };
                match calls.post("/api/v1/executors/heartbeat", &body).await {
                    Ok((404, _)) => {
                        // Sundial forgot us (offline too long): register again.
                        if let Ok(r) = register(&inner, &calls, &address).await {
                            interval = Duration::from_millis(r.heartbeat_interval_ms.clamp(200, 60_000) as u64);
                        }
                    }
                    Ok((s, answer)) if !(200..300).contains(&s) => {
                        tracing::warn!(status = s, %answer, "heartbeat refused");
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "heartbeat not sent"),
                }
            }
        });
        Ok(registered)
    }

    /// Drain (`503` to new deliveries), wait up to `grace` for the runs in progress, stop
    /// heartbeating and deregister.
    pub async fn shutdown(&self, grace: Duration) {
        self.drain();
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let idle = self.inner.idle.notified();
            if self.inner.running.lock().unwrap().is_empty() {
                break;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                tracing::warn!(running = ?self.running_runs(), "shutting down with runs still in progress");
                break;
            }
        }
        if let Some(stop) = self.inner.heartbeats.lock().unwrap().take() {
            stop.cancel();
        }
        let registered = self.inner.registration.lock().unwrap().take();
        if let (Some(r), Some(calls)) = (registered, self.inner.calls.clone()) {
            let body = DeregisterRequest { executor_id: &r.executor_id };
            match calls.post("/api/v1/executors/deregister", &body).await {
                Ok((s, _)) if (200..300).contains(&s) => {}
                Ok((s, answer)) => tracing::warn!(status = s, %answer, "deregister refused"),
                Err(e) => tracing::warn!(error = %e, "deregister not sent"),
            }
        }
    }

    /// Serve on `addr` until Ctrl-C or SIGTERM: register (as the builder's address, or
    /// `http://<bound address>/`), heartbeat, then drain, wait for the runs in progress and
    /// deregister.
    pub async fn serve(&self, addr: impl tokio::net::ToSocketAddrs) -> std::io::Result<()> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        self.serve_listener(listener, shutdown_signal()).await
    }

    /// [`Executor::serve`] on a bound listener, until `signal` completes.
    pub async fn serve_listener(
        &self,
        listener: tokio::net::TcpListener,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let local = listener.local_addr()?;
        let address = self.inner.address.clone().unwrap_or_else(|| {
            let host = if local.ip().is_unspecified() { "127.0.0.1".to_string() } else { local.ip().to_string() };
            let host = if local.is_ipv6() && !local.ip().is_unspecified() { format!("[{host}]") } else { host };
            format!("http://{host}:{}/", local.port())
        });
        if self.inner.register && self.inner.calls.is_some() {
            let r = self.start(&address).await.map_err(std::io::Error::other)?;
            tracing::info!(executor_id = %r.executor_id, %address, handlers = ?self.handlers(), "registered with Sundial");
        }
        let ex = self.clone();
        let grace = self.inner.grace;
        axum::serve(listener, self.router())
            .with_graceful_shutdown(async move {
                signal.await;
                ex.shutdown(grace).await;
            })
            .await
    }
}

async fn register(inner: &Arc<Inner>, calls: &Calls, address: &str) -> Result<Registered, ExecutorError> {
    let handlers = Executor { inner: inner.clone() }.handlers();
    let body = RegisterRequest {
        address,
        name: inner.name.as_deref(),
        tags: &inner.tags,
        metadata: inner.metadata.as_ref(),
        handlers,
    };
    let (status, answer) = calls.post("/api/v1/executors/register", &body).await?;
    if !(200..300).contains(&status) {
        return Err(ExecutorError::Refused { status, body: answer });
    }
    let r: Registered =
        serde_json::from_value(answer.clone()).map_err(|_| ExecutorError::Refused { status, body: answer })?;
    *inner.registration.lock().unwrap() = Some(r.clone());
    Ok(r)
}

async fn wait_answer(mut rx: watch::Receiver<Option<Stored>>) -> Stored {
    match rx.wait_for(Option::is_some).await {
        Ok(v) => v.clone().unwrap_or_else(lost),
        Err(_) => lost(),
    }
}

fn lost() -> Stored {
    Stored::json(200, json!({"status": "failed", "message": "the executor lost this run's answer"}))
}

fn answer_of(outcome: Result<Value, Error>) -> Stored {
    match outcome {
        Ok(output) => Stored::json(200, json!({"status": "succeeded", "output": output})),
        Err(e) if e.retry() => Stored::json(200, json!({"status": "failed", "message": e.message()})),
        Err(e) => Stored::json(200, json!({"status": "failed", "message": e.message(), "retry": false})),
    }
}

/// The signed result callback after a `202`, retried on network errors and `5xx`.
async fn send_result(inner: &Inner, ctx: &Context, outcome: Result<Value, Error>) {
    let Some(calls) = inner.calls.clone() else {
        tracing::warn!(run_id = ctx.run_id(), "no scheduler URL: the result of an answered-later run is lost");
        return;
    };
    let path = format!("/api/v1/runs/{}/result", ctx.run_id());
    let (status, output, message, retry) = match &outcome {
        Ok(v) => (AnswerStatus::Succeeded, Some(v), None, None),
        Err(e) => (AnswerStatus::Failed, None, Some(e.message().to_string()), (!e.retry()).then_some(false)),
    };
    let body = ResultRequest {
        attempt: ctx.attempt(),
        shard: ctx.shard().index,
        status,
        output,
        message: message.as_deref(),
        retry,
    };
    let mut delay = Duration::from_millis(250);
    for _ in 0..8 {
        match calls.post(&path, &body).await {
            Ok((s, _)) if (200..300).contains(&s) => return,
            Ok((413, answer)) => {
                let message = format!(
                    "the output is too large for Sundial: {}",
                    answer.get("message").and_then(Value::as_str).unwrap_or("413")
                );
                let smaller = ResultRequest {
                    attempt: body.attempt,
                    shard: body.shard,
                    status: AnswerStatus::Failed,
                    output: None,
                    message: Some(&message),
                    retry: Some(false),
                };
                return post_once(&calls, &path, &smaller).await;
            }
            Ok((s, answer)) if s < 500 => {
                tracing::warn!(run_id = ctx.run_id(), status = s, %answer, "result refused");
                return;
            }
            Ok((s, _)) => tracing::warn!(run_id = ctx.run_id(), status = s, "result not accepted yet"),
            Err(e) => tracing::warn!(run_id = ctx.run_id(), error = %e, "result not sent yet"),
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(5));
    }
    tracing::error!(run_id = ctx.run_id(), "gave up sending the result");
}

async fn post_once(calls: &Calls, path: &str, body: &ResultRequest<'_>) {
    if let Err(e) = calls.post(path, body).await {
        tracing::warn!(error = %e, "result not sent");
    }
}

async fn delivery_route(State(ex): State<Executor>, headers: HeaderMap, body: Bytes) -> Response {
    ex.handle_delivery(&headers, body).await
}

async fn cancel_route(State(ex): State<Executor>, headers: HeaderMap, body: Bytes) -> Response {
    ex.handle_cancel(&headers, body).await
}

/// Ctrl-C, or SIGTERM on Unix.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
