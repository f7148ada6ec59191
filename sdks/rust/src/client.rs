//! The management client: Sundial's REST API (`/api/v1`) with an API key, typed where the
//! server's wire types are public (`sundial_core`) and as `serde_json::Value` underneath
//! otherwise (every output type keeps the fields it does not name in `extra`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sundial_core::types::{JobState, RunState, TriggerKind};

pub use sundial_core::job::{BackoffSpec, ChildInput, FailureSpec, JobInput, MisfireSpec};
pub use sundial_core::schedule::ScheduleSpec;

/// An error answer of the API: `{"code", "message", "details"}` with its HTTP status.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    /// Stable machine code: `invalid_field`, `not_found`, `invalid_cron`, `quota_exceeded`, …
    pub code: String,
    pub message: String,
    /// Structured detail; for a refused field `{"field": "schedule.expression", "problem": …}`.
    pub details: Value,
}

impl ApiError {
    /// `details.field`: which part of the request was refused.
    pub fn field(&self) -> Option<&str> {
        self.details.get("field").and_then(Value::as_str)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP {} {}: {}", self.status, self.code, self.message)
    }
}

/// Why a management call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Sundial answered with an error (`4xx`/`5xx` and its JSON error body).
    #[error("{0}")]
    Api(ApiError),
    /// No answer: connection refused, timeout, TLS.
    #[error("request to Sundial failed: {0}")]
    Transport(#[from] reqwest::Error),
    /// An answer that is not what the operation returns.
    #[error("unexpected answer (HTTP {status}): {message}")]
    Decode { status: u16, message: String },
}

impl ClientError {
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            ClientError::Api(e) => Some(e),
            _ => None,
        }
    }
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api(e) => Some(e.status),
            ClientError::Decode { status, .. } => Some(*status),
            ClientError::Transport(e) => e.status().map(|s| s.as_u16()),
        }
    }
    /// The server's `code`, for an API error.
    pub fn code(&self) -> Option<&str> {
        self.api().map(|e| e.code.as_str())
    }
    /// `details.field`, for an API error naming a field.
    pub fn field(&self) -> Option<&str> {
        self.api().and_then(ApiError::field)
    }
}

pub type ClientResult<T> = Result<T, ClientError>;

/// One page of a listing.
#[derive(Debug, Clone, Deserialize)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Pass as `cursor` for the next page; `None` on the last.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// An app (executor group).
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct App {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub endpoints: Vec<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An app as created (or its secret rotated): with its signing secret, shown only then.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct AppWithSecret {
    #[serde(flatten)]
    pub app: App,
    pub secret: String,
}

/// `POST /api/v1/apps`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AppCreate {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Static executor URLs (serverless executors that never register).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<Vec<String>>,
}

/// A job as Sundial returns it.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Job {
    pub id: String,
    pub name: String,
    pub app_id: String,
    #[serde(default)]
    pub handler: Option<String>,
    #[serde(default)]
    pub script_id: Option<String>,
    pub schedule: ScheduleSpec,
    #[serde(default)]
    pub params: Value,
    pub state: JobState,
    pub version: i64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A run as listed.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Run {
    pub id: String,
    pub job_id: String,
    pub state: RunState,
    pub trigger: TriggerKind,
    pub attempt: i64,
    pub scheduled_at: String,
    #[serde(default)]
    pub params: Option<Value>,
    #[serde(default)]
    pub output: Option<Value>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub parent_run_id: Option<String>,
    #[serde(default)]
    pub chain_id: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One log line of a run.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct LogEntry {
    /// The line's sequence number (grows with every line stored); resume a read after it.
    #[serde(default)]
    pub seq: i64,
    pub shard: i64,
    pub attempt: i64,
    pub at: String,
    pub level: String,
    pub message: String,
}

/// `GET /api/v1/runs/{id}/logs`: a page of a run's log and the run's state.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct RunLogPage {
    /// In `seq` order.
    pub items: Vec<LogEntry>,
    /// Where the next read starts (`after`): the last item's `seq`, or the `after` given.
    pub next_after: i64,
    /// More lines are stored already.
    pub has_more: bool,
    /// The run's state, read before the lines.
    pub run_state: RunState,
    /// `run_state` is final: with `has_more` false, the log is complete (but for lines an
    /// executor may still send in the short grace after the end).
    pub run_finished: bool,
}

/// `GET /api/v1/runs/{id}`: the run with its attempts, shards and first 1000 log lines.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct RunDetail {
    #[serde(flatten)]
    pub run: Run,
    #[serde(default)]
    pub attempts: Vec<Value>,
    #[serde(default)]
    pub shards: Vec<Value>,
    #[serde(default)]
    pub logs: Vec<LogEntry>,
}

/// A script (GLUE job code).
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Script {
    pub id: String,
    pub name: String,
    pub runtime: String,
    pub current_version: i64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `POST /api/v1/scripts`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ScriptCreate {
    pub name: String,
    /// `wasm`, `python`, `javascript`, `bash` or `sh`.
    pub runtime: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_base64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `POST /api/v1/jobs/{id}/trigger`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Trigger {
    /// Params for this run instead of the job's (a JSON object).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    /// RFC 3339: fire then instead of now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// Filters of `GET /api/v1/jobs`.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    /// App name or id.
    pub app: Option<String>,
    pub state: Option<JobState>,
    pub name: Option<String>,
    pub limit: Option<i64>,
}

/// Filters of `GET /api/v1/runs`.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub job_id: Option<String>,
    pub chain_id: Option<String>,
    pub state: Option<RunState>,
    /// RFC 3339: scheduled at or after.
    pub from: Option<String>,
    /// RFC 3339: scheduled before.
    pub to: Option<String>,
    pub limit: Option<i64>,
}

type Query = Vec<(&'static str, String)>;

impl JobFilter {
    fn query(&self) -> Query {
        let mut q = Query::new();
        push(&mut q, "app", self.app.clone());
        push(&mut q, "state", self.state.map(|s| s.as_str().to_string()));
        push(&mut q, "name", self.name.clone());
        push(&mut q, "limit", self.limit.map(|l| l.to_string()));
        q
    }
}

impl RunFilter {
    fn query(&self) -> Query {
        let mut q = Query::new();
        push(&mut q, "job_id", self.job_id.clone());
        push(&mut q, "chain_id", self.chain_id.clone());
        push(&mut q, "state", self.state.map(|s| s.as_str().to_string()));
        push(&mut q, "from", self.from.clone());
        push(&mut q, "to", self.to.clone());
        push(&mut q, "limit", self.limit.map(|l| l.to_string()));
        q
    }
}

fn push(q: &mut Query, k: &'static str, v: Option<String>) {
    if let Some(v) = v {
        q.push((k, v));
    }
}

fn limit_query(limit: Option<i64>) -> Query {
    let mut q = Query::new();
    push(&mut q, "limit", limit.map(|l| l.to_string()));
    q
}

/// Sundial nodes (one or several of a cluster) and an API key.
///
/// With several nodes, a call that gets no connection, or `503` (a node starting, draining
/// or cut off from its database), is made again at the next node; the node that last
/// answered is asked first. Nothing else is repeated elsewhere: a call that reached a node
/// and timed out may have been carried out there.
#[derive(Clone)]
pub struct Client {
    bases: Arc<[String]>,
    /// The index in `bases` of the node that last answered.
    current: Arc<AtomicUsize>,
    key: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("bases", &self.bases).finish_non_exhaustive()
    }
}

impl Client {
    /// `base_url`: a node, e.g. `http://127.0.0.1:7700`; `api_key`: a tenant key (`sk_…`).
    pub fn new(base_url: impl Into<String>, api_key: impl Into<String>) -> Self {
        Client::with_nodes([base_url.into()], api_key)
    }

    /// Several nodes of one cluster, tried in order when one does not answer (see
    /// [`Client`]). Blank entries are skipped; with none left, `http://127.0.0.1:7700`.
    pub fn with_nodes<I, S>(base_urls: I, api_key: impl Into<String>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut bases: Vec<String> = base_urls
            .into_iter()
            .map(|u| u.into().trim().trim_end_matches('/').to_string())
            .filter(|u| !u.is_empty())
            .collect();
        if bases.is_empty() {
            bases.push("http://127.0.0.1:7700".into());
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(5))
            .build()
            .expect("an HTTP client with default TLS settings");
        Client { bases: bases.into(), current: Arc::new(AtomicUsize::new(0)), key: api_key.into(), http }
    }

    /// From `SUNDIAL_URL` (default `http://127.0.0.1:7700`; a comma-separated list is
    /// several nodes) and `SUNDIAL_API_KEY`.
    pub fn from_env() -> Self {
        let url = std::env::var("SUNDIAL_URL").unwrap_or_default();
        Client::with_nodes(url.split(','), std::env::var("SUNDIAL_API_KEY").unwrap_or_default())
    }

    /// The node asked first: the one that last answered.
    pub fn base_url(&self) -> &str {
        &self.bases[self.current.load(Ordering::Relaxed) % self.bases.len()]
    }

    /// Every node this client knows, in the order given.
    pub fn base_urls(&self) -> &[String] {
        &self.bases
    }

    /// Any operation: `method` on `/api/v1{path}` (or an absolute path starting `/api/`,
    /// `/healthz`, …) with query pairs, an optional JSON body and extra headers. `T` is the
    /// answer (`serde_json::Value` for any, `()` for an empty one).
    pub async fn send<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&(dyn erased::JsonBody + Sync)>,
        headers: &[(&str, &str)],
    ) -> ClientResult<T> {
        let path = if path.starts_with("/api/") || path.starts_with("/healthz") || path.starts_with("/readyz") {
            path.to_string()
        } else {
            format!("/api/v1{path}")
        };
        let mut path_query = path;
        if !query.is_empty() {
            let mut q = form_urlencoded::Serializer::new(String::new());
            for (k, v) in query {
                q.append_pair(k, v);
            }
            path_query.push('?');
            path_query.push_str(&q.finish());
        }
        let body = body.map(|b| b.to_json());
        let first = self.current.load(Ordering::Relaxed);
        let n = self.bases.len();
        let mut tried = 0;
        let (status, bytes) = loop {
            let i = (first + tried) % n;
            tried += 1;
            let mut req =
                self.http.request(method.clone(), format!("{}{}", self.bases[i], path_query)).bearer_auth(&self.key);
            for (k, v) in headers {
                req = req.header(*k, *v);
            }
            if let Some(b) = &body {
                req = req.header("content-type", "application/json").body(b.clone());
            }
            let last = tried >= n;
            match req.send().await {
                Err(e) if e.is_connect() && !last => continue,
                Err(e) => return Err(e.into()),
                Ok(resp) if resp.status().as_u16() == 503 && !last => continue,
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    if status != 503 {
                        self.current.store(i, Ordering::Relaxed);
                    }
                    break (status, resp.bytes().await?);
                }
            }
        };
        if !(200..300).contains(&status) {
            let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let text = String::from_utf8_lossy(&bytes).into_owned();
            return Err(ClientError::Api(ApiError {
                status,
                code: v.get("code").and_then(Value::as_str).unwrap_or("http_error").to_string(),
                message: v.get("message").and_then(Value::as_str).map(String::from).unwrap_or(text),
                details: v.get("details").cloned().unwrap_or_else(|| json!({})),
            }));
        }
        let bytes = if bytes.iter().all(u8::is_ascii_whitespace) { &b"null"[..] } else { &bytes[..] };
        serde_json::from_slice(bytes).map_err(|e| ClientError::Decode { status, message: e.to_string() })
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str, query: &[(&str, String)]) -> ClientResult<T> {
        self.send(Method::GET, path, query, None, &[]).await
    }
    pub async fn post<T: DeserializeOwned, B: Serialize + Sync>(&self, path: &str, body: &B) -> ClientResult<T> {
        self.send(Method::POST, path, &[], Some(&erased::Json(body)), &[]).await
    }
    pub async fn put<T: DeserializeOwned, B: Serialize + Sync>(&self, path: &str, body: &B) -> ClientResult<T> {
        self.send(Method::PUT, path, &[], Some(&erased::Json(body)), &[]).await
    }
    pub async fn delete(&self, path: &str) -> ClientResult<()> {
        self.send::<Value>(Method::DELETE, path, &[], None, &[]).await.map(|_| ())
    }

    /// Every item of a listing at `path`, following `next_cursor` page by page.
    pub fn paginate<T: DeserializeOwned + Send + 'static>(
        &self,
        path: &str,
        query: Vec<(&'static str, String)>,
    ) -> BoxStream<'static, ClientResult<T>> {
        struct St<T> {
            client: Client,
            path: String,
            query: Vec<(&'static str, String)>,
            buffered: std::vec::IntoIter<T>,
            cursor: Option<String>,
            done: bool,
        }
        let st = St {
            client: self.clone(),
            path: path.to_string(),
            query,
            buffered: Vec::new().into_iter(),
            cursor: None,
            done: false,
        };
        let stream = futures_util::stream::unfold(st, |mut st| async move {
            loop {
                if let Some(item) = st.buffered.next() {
                    return Some((Ok(item), st));
                }
                if st.done {
                    return None;
                }
                let mut q = st.query.clone();
                if let Some(c) = &st.cursor {
                    q.push(("cursor", c.clone()));
                }
                match st.client.get::<Page<T>>(&st.path, &q).await {
                    Ok(page) => {
                        st.cursor = page.next_cursor;
                        st.done = st.cursor.is_none();
                        st.buffered = page.items.into_iter();
                    }
                    Err(e) => {
                        st.done = true;
                        return Some((Err(e), st));
                    }
                }
            }
        });
        stream.boxed()
    }

    // ---- apps ----

    pub async fn list_apps(&self, limit: Option<i64>, cursor: Option<&str>) -> ClientResult<Page<App>> {
        let mut q = limit_query(limit);
        push(&mut q, "cursor", cursor.map(String::from));
        self.get("/apps", &q).await
    }
    pub fn apps(&self) -> BoxStream<'static, ClientResult<App>> {
        self.paginate("/apps", Vec::new())
    }
    /// By id or name.
    pub async fn get_app(&self, id: &str) -> ClientResult<App> {
        self.get(&format!("/apps/{}", enc(id)), &[]).await
    }
    pub async fn create_app(&self, app: &AppCreate) -> ClientResult<AppWithSecret> {
        self.post("/apps", app).await
    }

    // ---- jobs ----

    pub async fn list_jobs(&self, filter: &JobFilter, cursor: Option<&str>) -> ClientResult<Page<Job>> {
        let mut q = filter.query();
        push(&mut q, "cursor", cursor.map(String::from));
        self.get("/jobs", &q).await
    }
    /// Every job matching `filter`, page after page.
    pub fn jobs(&self, filter: &JobFilter) -> BoxStream<'static, ClientResult<Job>> {
        self.paginate("/jobs", filter.query())
    }
    pub async fn get_job(&self, id: &str) -> ClientResult<Job> {
        self.get(&format!("/jobs/{}", enc(id)), &[]).await
    }
    pub async fn create_job(&self, job: &JobInput) -> ClientResult<Job> {
        self.post("/jobs", job).await
    }
    /// Create 1 to 1,000 jobs in one call, all or none (`POST /api/v1/jobs/batch`); the created
    /// jobs in the same order. A refused batch is an [`ApiError`] whose `details.errors` lists
    /// each refused item as `{index, field, code, message}`; nothing was created.
    pub async fn create_jobs(&self, jobs: &[JobInput]) -> ClientResult<Vec<Job>> {
        #[derive(Deserialize)]
        struct Batch {
            jobs: Vec<Job>,
        }
        let batch: Batch = self.post("/jobs/batch", &json!({ "jobs": jobs })).await?;
        Ok(batch.jobs)
    }
    /// A job given as JSON (e.g. a file a CLI read); the server checks it.
    pub async fn create_job_json(&self, job: &Value) -> ClientResult<Job> {
        self.post("/jobs", job).await
    }
    pub async fn replace_job(&self, id: &str, job: &JobInput) -> ClientResult<Job> {
        self.put(&format!("/jobs/{}", enc(id)), job).await
    }
    pub async fn delete_job(&self, id: &str) -> ClientResult<()> {
        self.delete(&format!("/jobs/{}", enc(id))).await
    }
    pub async fn start_job(&self, id: &str) -> ClientResult<Job> {
        self.post(&format!("/jobs/{}/start", enc(id)), &json!({})).await
    }
    pub async fn stop_job(&self, id: &str) -> ClientResult<Job> {
        self.post(&format!("/jobs/{}/stop", enc(id)), &json!({})).await
    }
    /// Fire a run now (or at `trigger.at`). Always sends an `Idempotency-Key` (yours, or a
    /// fresh one) and repeats the call with the same key after a network error or a `5xx`,
    /// so the run is created once.
    pub async fn trigger_job(&self, id: &str, trigger: &Trigger, idempotency_key: Option<&str>) -> ClientResult<Run> {
        let key = idempotency_key.map(String::from).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let path = format!("/jobs/{}/trigger", enc(id));
        let mut delay = Duration::from_millis(200);
        let mut tries = 0;
        loop {
            tries += 1;
            let r = self
                .send(Method::POST, &path, &[], Some(&erased::Json(trigger)), &[("idempotency-key", key.as_str())])
                .await;
            let retry = match &r {
                Err(ClientError::Transport(_)) => true,
                Err(ClientError::Api(e)) => e.status >= 500,
                _ => false,
            };
            if !retry || tries >= 4 {
                return r;
            }
            tokio::time::sleep(delay).await;
            delay *= 2;
        }
    }

    // ---- runs ----

    pub async fn list_runs(&self, filter: &RunFilter, cursor: Option<&str>) -> ClientResult<Page<Run>> {
        let mut q = filter.query();
        push(&mut q, "cursor", cursor.map(String::from));
        self.get("/runs", &q).await
    }
    pub fn runs(&self, filter: &RunFilter) -> BoxStream<'static, ClientResult<Run>> {
        self.paginate("/runs", filter.query())
    }
    pub async fn get_run(&self, id: &str) -> ClientResult<RunDetail> {
        self.get(&format!("/runs/{}", enc(id)), &[]).await
    }
    pub async fn cancel_run(&self, id: &str) -> ClientResult<Run> {
        self.post(&format!("/runs/{}/cancel", enc(id)), &json!({})).await
    }
    pub async fn retry_run(&self, id: &str) -> ClientResult<Run> {
        self.post(&format!("/runs/{}/retry", enc(id)), &json!({})).await
    }
    /// The run's log lines (the first 1000, as `GET /runs/{id}` returns them).
    pub async fn run_logs(&self, id: &str) -> ClientResult<Vec<LogEntry>> {
        Ok(self.get_run(id).await?.logs)
    }
    /// A page of the run's log: the lines after `after` (a line's `seq`; 0 for the start),
    /// at most `limit` (1-1000; the server's default, 100, without), and the run's state.
    pub async fn run_logs_after(&self, id: &str, after: i64, limit: Option<i64>) -> ClientResult<RunLogPage> {
        let mut q = limit_query(limit);
        q.push(("after", after.to_string()));
        self.get(&format!("/runs/{}/logs", enc(id)), &q).await
    }
    /// Follow a run's log from after `after`: every line once, as the run writes them
    /// (polling every `every` while nothing is new), ending when the run has finished and
    /// every line is read. The first error ends it too.
    ///
    /// Lines come in `seq` order. On MySQL two appends in flight at once (the shards of a
    /// sharded run) may commit out of `seq` order, so a poll can pass over a line that
    /// commits just after it; once the run has finished the log is read once more from
    /// `after`, and any line not yet given comes then.
    pub fn follow_run_logs(&self, id: &str, after: i64, every: Duration) -> BoxStream<'static, ClientResult<LogEntry>> {
        #[derive(PartialEq)]
        enum Phase {
            Following,
            /// The run has finished: the second reading, from the first `after`.
            Checking,
            Done,
        }
        struct St {
            client: Client,
            id: String,
            start: i64,
            after: i64,
            buffered: std::vec::IntoIter<LogEntry>,
            seen: std::collections::HashSet<i64>,
            /// Ask again without waiting (the last page was full, or none was read yet).
            now: bool,
            phase: Phase,
        }
        let st = St {
            client: self.clone(),
            id: id.to_string(),
            start: after,
            after,
            buffered: Vec::new().into_iter(),
            seen: std::collections::HashSet::new(),
            now: true,
            phase: Phase::Following,
        };
        futures_util::stream::unfold(st, move |mut st| async move {
            loop {
                for line in st.buffered.by_ref() {
                    if st.seen.insert(line.seq) {
                        return Some((Ok(line), st));
                    }
                }
                match st.phase {
                    Phase::Done => return None,
                    Phase::Following if !st.now => tokio::time::sleep(every).await,
                    _ => {}
                }
                match st.client.run_logs_after(&st.id, st.after, Some(1000)).await {
                    Ok(page) => {
                        st.after = page.next_after;
                        st.now = page.has_more;
                        st.buffered = page.items.into_iter();
                        if !page.has_more {
                            st.phase = match st.phase {
                                Phase::Following if page.run_finished => {
                                    st.after = st.start;
                                    Phase::Checking
                                }
                                Phase::Following => Phase::Following,
                                _ => Phase::Done,
                            };
                        }
                    }
                    Err(e) => {
                        st.phase = Phase::Done;
                        st.buffered = Vec::new().into_iter();
                        return Some((Err(e), st));
                    }
                }
            }
        })
        .boxed()
    }
    /// Poll the run until `done` says so (e.g. `|r| r.run.state.is_terminal()`), every
    /// `every`, for at most `within`; the last state read.
    pub async fn wait_run(
        &self,
        id: &str,
        within: Duration,
        every: Duration,
        done: impl Fn(&RunDetail) -> bool,
    ) -> ClientResult<RunDetail> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let r = self.get_run(id).await?;
            if done(&r) || tokio::time::Instant::now() >= deadline {
                return Ok(r);
            }
            tokio::time::sleep(every).await;
        }
    }

    // ---- scripts ----

    pub async fn list_scripts(&self, limit: Option<i64>, cursor: Option<&str>) -> ClientResult<Page<Script>> {
        let mut q = limit_query(limit);
        push(&mut q, "cursor", cursor.map(String::from));
        self.get("/scripts", &q).await
    }
    pub fn scripts(&self) -> BoxStream<'static, ClientResult<Script>> {
        self.paginate("/scripts", Vec::new())
    }
    pub async fn get_script(&self, id: &str) -> ClientResult<Script> {
        self.get(&format!("/scripts/{}", enc(id)), &[]).await
    }
    pub async fn create_script(&self, script: &ScriptCreate) -> ClientResult<Script> {
        self.post("/scripts", script).await
    }
}

/// Path segments: ids and names are plain, but never let one change the path.
fn enc(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A JSON request body of any `Serialize` type, behind a trait object (so [`Client::send`]
/// stays one non-generic-in-the-body function).
pub mod erased {
    use serde::Serialize;

    pub trait JsonBody {
        fn to_json(&self) -> Vec<u8>;
    }

    /// Wrap a `Serialize` value as a body.
    pub struct Json<'a, T: ?Sized>(pub &'a T);

    impl<T: Serialize + ?Sized> JsonBody for Json<'_, T> {
        fn to_json(&self) -> Vec<u8> {
            serde_json::to_vec(self.0).unwrap_or_else(|_| b"null".to_vec())
        }
    }
}
