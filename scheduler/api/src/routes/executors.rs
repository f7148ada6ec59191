//! The executor registry and executor callbacks (signed with the app secret).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sundial_core::error::FieldError;
use sundial_core::ids::{self, new_id};
use sundial_core::job::{DEFAULT_TIMEOUT_MS, FailureSpec, MisfireSpec, parse_handler};
use sundial_core::quota::{self, Quota, Quotas};
use sundial_core::run_state::FailReason;
use sundial_core::schedule::ScheduleSpec;
use sundial_core::types::*;
use sundial_store::{Executor, FinishOutcome, Job, Run, ShardFinishOutcome, StoreError};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::signed::verify;
use crate::state::AppState;

pub const HEARTBEAT_INTERVAL_MS: i64 = 3_000;
pub const METADATA_INTERVAL_MS: i64 = 30_000;

/// What one executor may register: every handler becomes a job (if new), and tags and
/// metadata are stored on its row and re-sent every 30 s.
const MAX_HANDLERS: usize = 1_000;
const MAX_TAGS: usize = 50;
const MAX_TAG_CHARS: usize = 100;
const MAX_METADATA_BYTES: usize = 16 * 1024;

fn check_tags(tags: &[String]) -> ApiResult<()> {
    if tags.len() > MAX_TAGS {
        return Err(ApiError::field("tags", "invalid_field", format!("has {} tags; at most {MAX_TAGS}", tags.len())));
    }
    for (i, t) in tags.iter().enumerate() {
        if t.is_empty() || t.chars().count() > MAX_TAG_CHARS || t.chars().any(char::is_control) {
            return Err(ApiError::field(
                &format!("tags[{i}]"),
                "invalid_field",
                format!("must be 1-{MAX_TAG_CHARS} characters without control characters"),
            ));
        }
    }
    Ok(())
}

/// Metadata is a JSON object of at most 16 KiB.
fn check_metadata(metadata: &Value) -> ApiResult<()> {
    if !metadata.is_object() {
        return Err(ApiError::field("metadata", "wrong_type", "must be a JSON object"));
    }
    let size = serde_json::to_vec(metadata).map_or(usize::MAX, |v| v.len());
    if size > MAX_METADATA_BYTES {
        return Err(ApiError::field(
            "metadata",
            "invalid_field",
            format!("is {size} bytes; at most {MAX_METADATA_BYTES} are allowed"),
        ));
    }
    Ok(())
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterRequest {
    /// Where deliveries go (`http`/`https`).
    pub address: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// Handler names this executor serves.
    #[serde(default)]
    pub handlers: Vec<String>,
    /// Script runtimes this executor runs (`wasm`, `python`, `javascript`, `bash`, `sh`):
    /// a `sundial runner` lists them and receives the app's script jobs of those runtimes.
    /// A webhook executor leaves it empty and never receives a script run.
    #[serde(default)]
    pub runtimes: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Registered {
    pub executor_id: String,
    pub heartbeat_interval_ms: i64,
    pub metadata_interval_ms: i64,
    /// Without a heartbeat for this long the executor counts as offline.
    pub offline_after_ms: i64,
    /// Jobs this registration created (stopped until a person starts them).
    pub jobs_created: Vec<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatRequest {
    pub executor_id: String,
    /// Runs in progress on this executor (used by the `busyover` route). Default: the
    /// length of `running_runs`, else 0.
    #[serde(default)]
    pub running: Option<i64>,
    /// The ids of the runs in progress on this executor, at most 10000. A retry of a run
    /// whose attempt timed out waits while its executor still lists it here (unless the
    /// job's `failure.allow_overlap` is true).
    #[serde(default)]
    pub running_runs: Option<Vec<String>>,
    /// Sent every 30 s; replaces the stored metadata.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeregisterRequest {
    pub executor_id: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Ack {
    pub ok: bool,
}

fn registration_job(app_id: &str, tenant_id: &str, handler: &str, now: i64) -> Job {
    let name: String = handler
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '-' })
        .take(100)
        .collect();
    let name = if name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        name
    } else {
        format!("h{}", &name[..name.len().min(99)])
    };
    Job {
        id: new_id(ids::JOB),
        tenant_id: tenant_id.to_string(),
        app_id: app_id.to_string(),
        name,
        description: "created by an executor's handler registration".into(),
        handler: Some(handler.to_string()),
        script_id: None,
        script_version: None,
        schedule_kind: ScheduleKind::Manual,
        schedule: ScheduleSpec {
            kind: ScheduleKind::Manual,
            expression: None,
            timezone: None,
            every_ms: None,
            anchor: None,
            at: None,
            start_at: None,
            end_at: None,
        },
        params: json!({}),
        route: Route::RoundRobin,
        block: BlockStrategy::Serial,
        misfire: MisfireSpec {
            policy: MisfirePolicy::FireOnce,
            threshold_ms: None,
            catchup_window_ms: None,
            max_catchup: None,
        }
        .resolve()
        .expect("defaults are valid"),
        failure: FailureSpec {
            policy: FailurePolicyKind::Retry,
            max_retries: None,
            backoff: None,
            allow_overlap: None,
        }
        .resolve()
        .expect("defaults are valid"),
        timeout_ms: DEFAULT_TIMEOUT_MS,
        max_concurrency: None,
        wait: sundial_core::types::WaitFor::All,
        state: JobState::Stopped,
        script_limits: None,
        source: JobSource::Registration,
        registration_key: Some(format!("{app_id}:{handler}")),
        version: 1,
        generated_until_ms: None,
        created_at_ms: now,
        updated_at_ms: now,
    }
}

/// A registration-created job, unless the app has one for the handler; within the tenant's quotas.
async fn insert_if_absent(st: &AppState, job: &Job, quotas: &Quotas) -> Result<bool, StoreError> {
    match st.store.job_insert_within(job, &[], quotas).await {
        Ok(()) => Ok(true),
        Err(StoreError::Conflict { what: "job_registration", .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Refuse (before anything is written) a registration whose new handlers, each a new job,
/// are more than one call may add (`max_new_handlers_per_registration`, a node setting), would
/// take the app past `max_handlers_per_app`, or the tenant past `max_jobs`.
async fn check_new_handlers(
    st: &AppState,
    app: &sundial_store::App,
    handlers: &[String],
    quotas: &Quotas,
) -> ApiResult<()> {
    if handlers.is_empty() {
        return Ok(());
    }
    let r = st.store.app_registered_handlers(&app.tenant_id, &app.id, handlers).await?;
    let new = handlers.len() as i64 - r.present;
    let per_call = st.config.max_new_handlers_per_registration as i64;
    if new > per_call {
        return Err(ApiError::limit(
            StatusCode::CONFLICT,
            "max_new_handlers_per_registration",
            per_call,
            new,
            format!(
                "quota max_new_handlers_per_registration exceeded: this registration lists {new} handlers the app \
                 has no job for; one registration may add at most {per_call} (register the rest in later calls)"
            ),
        )
        .with_field("handlers"));
    }
    quota::check(quotas, Quota::MaxHandlersPerApp, r.app_total, new).map_err(|e| ApiError::quota(&e))?;
    quota::check(quotas, Quota::MaxJobs, r.tenant_jobs, new).map_err(|e| ApiError::quota(&e))?;
    Ok(())
}

/// Register (or re-register) an executor of an app. Signed with the app secret. Each
/// handler the app has no job for yet creates one (stopped); a registration adding more
/// than `max_new_handlers_per_registration` of them, or taking the app past
/// `max_handlers_per_app` or the tenant past `max_jobs`, is refused with 409
/// `quota_exceeded` and registers nothing.
#[utoipa::path(post, path = "/api/v1/executors/register", operation_id = "register_executor", tag = "executors", request_body = RegisterRequest, security(("webhook_signature" = [], "webhook_id" = [], "webhook_timestamp" = [], "sundial_app_id" = [])),
    responses((status = 200, body = Registered), (status = 401, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn register(
    State(st): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<axum::Json<Registered>> {
    let (app, req): (_, RegisterRequest) = verify(&st, &headers, &body).await?;
    let address = WebhookUrl::parse("address", &req.address)?;
    st.config.outbound.check_url(address.as_str()).map_err(|r| FieldError::invalid("address", r.to_string()))?;
    if req.handlers.len() > MAX_HANDLERS {
        return Err(ApiError::field(
            "handlers",
            "invalid_field",
            format!("has {} handlers; at most {MAX_HANDLERS}", req.handlers.len()),
        ));
    }
    check_tags(req.tags.as_deref().unwrap_or_default())?;
    if let Some(m) = &req.metadata {
        check_metadata(m)?;
    }
    let mut handlers = req
        .handlers
        .iter()
        .enumerate()
        .map(|(i, h)| parse_handler(&format!("handlers[{i}]"), h))
        .collect::<Result<Vec<_>, _>>()?;
    let mut seen = std::collections::HashSet::new();
    handlers.retain(|h| seen.insert(h.clone()));
    let mut runtimes = Vec::new();
    for (i, r) in req.runtimes.iter().enumerate() {
        let r: sundial_core::types::ScriptRuntime = sundial_core::types::parse_enum(&format!("runtimes[{i}]"), r)?;
        if !runtimes.contains(&r.as_str().to_string()) {
            runtimes.push(r.as_str().to_string());
        }
    }
    let quotas = st.quotas_of(&app.tenant_id).await?;
    check_new_handlers(&st, &app, &handlers, &quotas).await?;
    let now = st.now_ms();
    let exec = st
        .store
        .executor_upsert(&Executor {
            id: new_id(ids::EXECUTOR),
            tenant_id: app.tenant_id.clone(),
            app_id: app.id.clone(),
            name: bounded_text("name", req.name.as_deref().unwrap_or(address.as_str()), 200)?,
            address: address.as_str().to_string(),
            tags: req.tags.unwrap_or_default(),
            metadata: req.metadata.unwrap_or(json!({})),
            handlers: handlers.clone(),
            runtimes,
            state: ExecutorState::Online,
            running: 0,
            registered_at_ms: now,
            last_heartbeat_ms: now,
            last_metadata_ms: now,
        })
        .await?;
    let mut jobs_created = Vec::new();
    for h in &handlers {
        let mut job = registration_job(&app.id, &app.tenant_id, h, now);
        let created = match insert_if_absent(&st, &job, &quotas).await {
            // The handler's name is taken by another job of the tenant (a person's, or another
            // app's handler of the same name): the new job is `<name>-<job id>`, unique since ids are.
            Err(StoreError::Conflict { what: "job_name", .. }) => {
                job.name = format!("{}-{}", &job.name[..job.name.len().min(99 - job.id.len())], job.id);
                insert_if_absent(&st, &job, &quotas).await?
            }
            other => other?,
        };
        if created {
            jobs_created.push(job.id);
        }
    }
    tracing::info!(app_id = %app.id, executor_id = %exec.id, address = %exec.address, handlers = handlers.len(), "executor registered");
    Ok(axum::Json(Registered {
        executor_id: exec.id,
        heartbeat_interval_ms: HEARTBEAT_INTERVAL_MS,
        metadata_interval_ms: METADATA_INTERVAL_MS,
        offline_after_ms: sundial_core::route::EXECUTOR_OFFLINE_MS,
        jobs_created,
    }))
}

/// Heartbeat (every 3 s), optionally with metadata (every 30 s). Signed.
#[utoipa::path(post, path = "/api/v1/executors/heartbeat", operation_id = "heartbeat_executor", tag = "executors", request_body = HeartbeatRequest, security(("webhook_signature" = [], "webhook_id" = [], "webhook_timestamp" = [], "sundial_app_id" = [])),
    responses((status = 200, body = Ack), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn heartbeat(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> ApiResult<axum::Json<Ack>> {
    let (app, req): (_, HeartbeatRequest) = verify(&st, &headers, &body).await?;
    let running = req.running.unwrap_or(req.running_runs.as_ref().map_or(0, |r| r.len() as i64));
    if running < 0 {
        return Err(ApiError::field("running", "invalid_field", "must not be negative"));
    }
    if let Some(m) = &req.metadata {
        check_metadata(m)?;
    }
    if let Some(ids) = &req.running_runs {
        if ids.len() > 10_000 {
            return Err(ApiError::field("running_runs", "invalid_field", "at most 10000 run ids"));
        }
        if let Some(i) = ids.iter().position(|id| id.is_empty() || id.len() > 64) {
            return Err(ApiError::field(&format!("running_runs[{i}]"), "invalid_field", "not a run id"));
        }
    }
    let store = &st.store;
    let runs = req.running_runs.as_deref();
    if !store.executor_heartbeat(&app.id, &req.executor_id, running, runs, req.metadata.as_ref(), st.now_ms()).await? {
        return Err(ApiError::not_found("executor (register first)"));
    }
    Ok(axum::Json(Ack { ok: true }))
}

/// Deregister on shutdown: the executor is offline at once. Signed.
#[utoipa::path(post, path = "/api/v1/executors/deregister", operation_id = "deregister_executor", tag = "executors", request_body = DeregisterRequest, security(("webhook_signature" = [], "webhook_id" = [], "webhook_timestamp" = [], "sundial_app_id" = [])),
    responses((status = 200, body = Ack), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn deregister(State(st): State<AppState>, headers: HeaderMap, body: Bytes) -> ApiResult<axum::Json<Ack>> {
    let (app, req): (_, DeregisterRequest) = verify(&st, &headers, &body).await?;
    if !st.store.executor_set_state(&app.id, &req.executor_id, ExecutorState::Offline, st.now_ms()).await? {
        return Err(ApiError::not_found("executor"));
    }
    tracing::info!(app_id = %app.id, executor_id = %req.executor_id, "executor deregistered");
    Ok(axum::Json(Ack { ok: true }))
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    Succeeded,
    Failed,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResultRequest {
    /// The attempt this result is for (`sundial-attempt` of the delivery; for a shard, the shard's attempt).
    pub attempt: i64,
    /// Shard index (`sundial-shard` of the delivery: `index/total`), from 0 to total - 1 for a
    /// sharded run; 0 or omitted for runs that are not sharded.
    #[serde(default)]
    pub shard: Option<i64>,
    pub status: ResultStatus,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub output: Option<Value>,
    #[serde(default)]
    pub message: Option<String>,
    /// `false` with a failure: it cannot succeed on a retry (the script does not compile, the
    /// runtime is missing, …), so the job's failure policy is not applied and the run fails
    /// at once. Omitted or `true`: the failure policy decides.
    #[serde(default)]
    pub retry: Option<bool>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ResultAccepted {
    pub run_id: String,
    pub state: RunState,
    /// True when this exact result had already been recorded.
    pub duplicate: bool,
    /// For a sharded run: the shard's state after this result (the run's `state` follows
    /// its shards: `succeeded` when every shard has, `failed` when one failed for good).
    pub shard_state: Option<RunState>,
}

async fn run_of_app(st: &AppState, app: &sundial_store::App, run_id: &str) -> ApiResult<(sundial_store::Run, Job)> {
    let run = st.store.run_get(&app.tenant_id, run_id).await?.ok_or_else(|| ApiError::not_found("run"))?;
    let job = st.store.job_get(&app.tenant_id, &run.job_id).await?.ok_or_else(|| ApiError::not_found("run"))?;
    if job.app_id != app.id {
        return Err(ApiError::not_found("run"));
    }
    Ok((run, job))
}

/// The source a runner runs for a run of a script job.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunScript {
    pub run_id: String,
    pub script_id: String,
    pub name: String,
    pub runtime: sundial_core::types::ScriptRuntime,
    /// The version the run's latest attempt runs (as in its delivery's `script.version`).
    pub version: i64,
    /// SHA-256 of the source's bytes (decoded for `base64`), lower-case hex.
    pub sha256: String,
    /// `text`, or `base64` for a WebAssembly binary.
    pub encoding: String,
    pub source: String,
}

/// The script source of a run of a script job: the version its latest attempt runs (a
/// runner fetches it after a delivery and caches it by `sha256`). Signed with the app
/// secret, for a run of the app only; the body is `{}`.
#[utoipa::path(post, path = "/api/v1/runs/{id}/script", operation_id = "get_run_script", tag = "executors", request_body = Object, security(("webhook_signature" = [], "webhook_id" = [], "webhook_timestamp" = [], "sundial_app_id" = [])),
    params(("id" = String, Path)),
    responses((status = 200, body = RunScript), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn run_script(
    State(st): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<axum::Json<RunScript>> {
    let (app, _): (_, serde_json::Map<String, Value>) = verify(&st, &headers, &body).await?;
    let (run, job) = run_of_app(&st, &app, &id).await?;
    let Some(script_id) = job.script_id else {
        return Err(ApiError::conflict(
            "not_a_script_run",
            format!("run {id} is a run of a handler job, not of a script"),
        ));
    };
    let Some(version) = run.script_version else {
        return Err(ApiError::conflict("not_delivered", format!("run {id} has not been delivered yet")));
    };
    let script = st.store.script_get(&app.tenant_id, &script_id).await?.ok_or_else(|| ApiError::not_found("script"))?;
    let v = st
        .store
        .script_version_get(&app.tenant_id, &script_id, version)
        .await?
        .ok_or_else(|| ApiError::not_found("script version"))?;
    Ok(axum::Json(RunScript {
        run_id: run.id,
        script_id,
        name: script.name,
        runtime: script.runtime,
        version,
        sha256: v.sha256,
        encoding: v.encoding,
        source: v.source,
    }))
}

/// An attempt's result, for a delivery answered `202`. Signed. The same result again
/// is accepted (200, `duplicate`); a result for an attempt that is not current, or a
/// different result for a finished attempt, is refused with 409 and changes nothing.
#[utoipa::path(post, path = "/api/v1/runs/{id}/result", operation_id = "report_run_result", tag = "executors", request_body = ResultRequest, security(("webhook_signature" = [], "webhook_id" = [], "webhook_timestamp" = [], "sundial_app_id" = [])),
    params(("id" = String, Path)),
    responses((status = 200, body = ResultAccepted), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn result(
    State(st): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<axum::Json<ResultAccepted>> {
    let (app, req): (_, ResultRequest) = verify(&st, &headers, &body).await?;
    let (run, job) = run_of_app(&st, &app, &id).await?;
    let shard = shard_of(&run, req.shard)?;
    let limit = st.config.max_output_bytes;
    if let Some(size) = sundial_core::protocol::output_over(req.output.as_ref(), limit) {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "output_too_large",
            format!(
                "the output is {size} bytes; at most {limit} (max_output_bytes) are kept and passed to child runs: \
                 report a smaller output (for example where the data is), or report the attempt failed"
            ),
        )
        .with_details(json!({"field": "output", "size": size, "max": limit})));
    }
    let result = sundial_engine::ExecutorResult {
        retry: req.retry != Some(false),
        succeeded: req.status == ResultStatus::Succeeded,
        reason: FailReason::Error,
        output: req.output,
        message: req.message,
    };
    if run.shard_total.is_some() {
        return shard_result(&st, &app, &run, &job, shard, req.attempt, result).await;
    }
    match sundial_engine::finish_attempt(st.store.as_ref(), &job, &id, req.attempt, result, st.now_ms()).await? {
        FinishOutcome::Applied { run, .. } => {
            st.wake.notify_one();
            Ok(axum::Json(ResultAccepted { run_id: run.id, state: run.state, duplicate: false, shard_state: None }))
        }
        FinishOutcome::Duplicate => {
            let run = st.store.run_get(&app.tenant_id, &id).await?.ok_or_else(|| ApiError::not_found("run"))?;
            Ok(axum::Json(ResultAccepted { run_id: run.id, state: run.state, duplicate: true, shard_state: None }))
        }
        FinishOutcome::Conflict { state, attempt } => Err(ApiError::conflict(
            "not_current",
            format!("the run is `{state}` at attempt {attempt}; a result for attempt {} is not accepted", req.attempt),
        )
        .with_details(json!({"field": "attempt", "state": state, "attempt": attempt}))),
        FinishOutcome::NotFound => Err(ApiError::not_found("run")),
    }
}

/// The shard a call names: `0..shard_total` for a sharded run, 0 (or none) otherwise.
fn shard_of(run: &Run, shard: Option<i64>) -> ApiResult<i64> {
    let index = shard.unwrap_or(0);
    match run.shard_total {
        Some(total) if !(0..total).contains(&index) => Err(ApiError::field(
            "shard",
            "invalid_field",
            format!("this run has {total} shard(s): use an index from 0 to {}", total - 1),
        )),
        None if index != 0 => {
            Err(ApiError::field("shard", "invalid_field", "this run is not sharded; use 0 or omit it"))
        }
        _ => Ok(index),
    }
}

/// A result for one shard of a sharded run: the same rules per shard attempt as for a run.
async fn shard_result(
    st: &AppState,
    app: &sundial_store::App,
    run: &Run,
    job: &Job,
    shard: i64,
    attempt: i64,
    result: sundial_engine::ExecutorResult,
) -> ApiResult<axum::Json<ResultAccepted>> {
    match sundial_engine::finish_shard(st.store.as_ref(), job, run, shard, attempt, result, st.now_ms()).await? {
        ShardFinishOutcome::Applied { run, shard, .. } => {
            if run.state == RunState::Failed {
                // This shard failed for good: the shards still out are told to stop.
                st.cancels.cancel_run(&run);
            }
            st.wake.notify_one();
            Ok(axum::Json(ResultAccepted {
                run_id: run.id,
                state: run.state,
                duplicate: false,
                shard_state: Some(shard.state),
            }))
        }
        ShardFinishOutcome::Duplicate => {
            let run = st.store.run_get(&app.tenant_id, &run.id).await?.ok_or_else(|| ApiError::not_found("run"))?;
            let shards = st.store.shard_list(&run.id).await?;
            let shard_state = shards.iter().find(|s| s.shard_index == shard).map(|s| s.state);
            Ok(axum::Json(ResultAccepted { run_id: run.id, state: run.state, duplicate: true, shard_state }))
        }
        ShardFinishOutcome::Conflict { state, attempt: current } => Err(ApiError::conflict(
            "not_current",
            format!(
                "shard {shard} of the run is `{state}` at attempt {current}, the run `{}`; a result for attempt {attempt} is not accepted",
                run.state
            ),
        )
        .with_details(json!({"field": "attempt", "shard": shard, "state": state, "attempt": current}))),
        ShardFinishOutcome::NotFound => Err(ApiError::not_found("run")),
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LogLine {
    /// `debug`, `info` (default), `warn` or `error`.
    #[serde(default)]
    pub level: Option<String>,
    pub message: String,
    /// RFC 3339; default: when received.
    #[serde(default)]
    pub at: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LogsRequest {
    pub attempt: i64,
    /// Shard index, for a sharded run (default 0).
    #[serde(default)]
    pub shard: Option<i64>,
    #[serde(default)]
    pub lines: Vec<LogLine>,
}

/// Log lines (and a liveness signal) from the executor working on a run. Signed.
/// Liveness does not extend the job's timeout. Accepted while the run is in progress and
/// for a short grace after it ended (`log_grace_ms`, default 60 s), else 409
/// `run_not_in_progress`. A call's messages may carry at most `max_log_bytes_per_call`
/// bytes (413); a run at most the tenant's `max_log_bytes_per_run`, the tenant's runs at
/// most `max_log_bytes_per_day` in a UTC day (409 `quota_exceeded`).
#[utoipa::path(post, path = "/api/v1/runs/{id}/logs", operation_id = "append_run_logs", tag = "executors", request_body = LogsRequest, security(("webhook_signature" = [], "webhook_id" = [], "webhook_timestamp" = [], "sundial_app_id" = [])),
    params(("id" = String, Path)),
    responses((status = 200, body = Ack), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn logs(
    State(st): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<axum::Json<Ack>> {
    let (app, req): (_, LogsRequest) = verify(&st, &headers, &body).await?;
    if req.lines.len() > 1000 {
        return Err(ApiError::field("lines", "invalid_field", "at most 1000 lines per call"));
    }
    let now = st.now_ms();
    let mut lines = Vec::with_capacity(req.lines.len());
    for (i, l) in req.lines.iter().enumerate() {
        let level = l.level.clone().unwrap_or_else(|| "info".into());
        if !["debug", "info", "warn", "error"].contains(&level.as_str()) {
            return Err(ApiError::field(
                &format!("lines[{i}].level"),
                "unknown_variant",
                "expected one of: debug, info, warn, error",
            ));
        }
        let at = match &l.at {
            Some(a) => sundial_core::time::parse_rfc3339(&format!("lines[{i}].at"), a)?,
            None => now,
        };
        lines.push((at, level, bounded_text(&format!("lines[{i}].message"), &l.message, 10_000)?));
    }
    let bytes: usize = lines.iter().map(|(_, _, m)| m.len()).sum();
    let per_call = st.config.max_log_bytes_per_call;
    if bytes > per_call {
        return Err(ApiError::limit(
            StatusCode::PAYLOAD_TOO_LARGE,
            "max_log_bytes_per_call",
            per_call as i64,
            bytes as i64,
            format!(
                "quota max_log_bytes_per_call exceeded: these lines carry {bytes} bytes of messages; \
                 one call may carry at most {per_call} (send them in several calls)"
            ),
        )
        .with_field("lines"));
    }
    let (run, _) = run_of_app(&st, &app, &id).await?;
    refuse_if_not_in_progress(&run, now, st.config.log_grace_ms)?;
    let shard = shard_of(&run, req.shard)?;
    let last_attempt = match run.shard_total {
        Some(_) => st.store.shard_list(&id).await?.iter().find(|s| s.shard_index == shard).map_or(0, |s| s.attempt),
        None => run.attempt,
    };
    if req.attempt < 1 || req.attempt > last_attempt {
        return Err(ApiError::field("attempt", "invalid_field", format!("the run has no attempt {}", req.attempt)));
    }
    let quotas = st.quotas_of(&app.tenant_id).await?;
    let append = sundial_store::LogAppend {
        tenant_id: &app.tenant_id,
        run_id: &id,
        shard_index: shard,
        attempt: req.attempt,
        lines: &lines,
        now_ms: now,
    };
    st.store.log_append_within(&append, &quotas).await?;
    Ok(axum::Json(Ack { ok: true }))
}

/// Logs are for a run in progress: one that has ended takes trailing lines for `grace_ms`
/// after its end, then nothing (a finished run's log does not grow for ever).
fn refuse_if_not_in_progress(run: &Run, now: i64, grace_ms: i64) -> ApiResult<()> {
    if !run.state.is_terminal() {
        return Ok(());
    }
    let ended = run.finished_at_ms.unwrap_or(run.updated_at_ms);
    if now <= ended.saturating_add(grace_ms) {
        return Ok(());
    }
    Err(ApiError::conflict(
        "run_not_in_progress",
        format!(
            "the run is `{}` since {}; log lines are accepted until {} ms after a run ends",
            run.state,
            sundial_core::time::rfc3339_utc(ended),
            grace_ms
        ),
    )
    .with_details(
        json!({"state": run.state, "finished_at": sundial_core::time::rfc3339_utc(ended), "grace_ms": grace_ms}),
    ))
}

/// An executor of an app and its state.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExecutorOut {
    pub id: String,
    pub name: String,
    pub address: String,
    pub tags: Vec<String>,
    #[schema(value_type = Object)]
    pub metadata: Value,
    pub handlers: Vec<String>,
    /// `online` only while heartbeats keep arriving.
    pub state: ExecutorState,
    /// Script runtimes it runs (a `sundial runner`).
    pub runtimes: Vec<String>,
    pub running: i64,
    pub last_heartbeat_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ExecutorList {
    pub items: Vec<ExecutorOut>,
}

/// List an app's executors and their state.
#[utoipa::path(get, path = "/api/v1/apps/{id}/executors", operation_id = "list_app_executors", tag = "apps", params(("id" = String, Path, description = "App id or name")),
    responses((status = 200, body = ExecutorList), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn list(
    State(st): State<AppState>,
    caller: crate::auth::TenantCaller,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<ExecutorList>> {
    let app = st.store.app_get(&caller.tenant_id, &id).await?.ok_or_else(|| ApiError::not_found("app"))?;
    let now = st.now_ms();
    let items = st
        .store
        .executor_list(&app.id)
        .await?
        .into_iter()
        .map(|e| ExecutorOut {
            state: if e.state == ExecutorState::Online
                && e.last_heartbeat_ms >= now - sundial_core::route::EXECUTOR_OFFLINE_MS
            {
                ExecutorState::Online
            } else {
                ExecutorState::Offline
            },
            id: e.id,
            name: e.name,
            address: e.address,
            tags: e.tags,
            metadata: e.metadata,
            handlers: e.handlers,
            runtimes: e.runtimes,
            running: e.running,
            last_heartbeat_at: sundial_core::time::rfc3339_utc(e.last_heartbeat_ms),
        })
        .collect();
    Ok(axum::Json(ExecutorList { items }))
}
