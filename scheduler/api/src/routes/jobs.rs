use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde_json::json;
use std::collections::HashMap;
use sundial_core::ids::{self, new_id};
use sundial_core::job::{JobDef, JobInput, Target};
use sundial_core::schedule::{MAX_PREVIEW, Schedule, ScheduleSpec, Trigger};
use sundial_core::time::rfc3339_utc;
use sundial_core::types::JobState;

use sundial_store::{ItemRefusal, Job, JobFilter, NewJob, StoreError};

use crate::auth::TenantCaller;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{Json, Query};
use crate::state::AppState;
use crate::wire::*;

async fn load(st: &AppState, caller: &TenantCaller, id: &str) -> ApiResult<Job> {
    st.store.job_get(&caller.tenant_id, id).await?.ok_or_else(|| ApiError::not_found("job"))
}

async fn out(st: &AppState, job: Job) -> ApiResult<JobOut> {
    let children = st.store.job_children(&job.id).await?;
    Ok(JobOut::new(job, children, st.now_ms()))
}

/// A schedule that would never fire from now on is a mistake, not a job: refuse a one-shot
/// time or a window end already past (and anything else with no fire left) instead of
/// storing an active job that silently does nothing. Manual jobs never fire on their own.
fn refuse_if_it_never_fires(schedule: &Schedule, now: i64) -> ApiResult<()> {
    if matches!(schedule.trigger, Trigger::Manual) || schedule.next_after(now - 1).is_some() {
        return Ok(());
    }
    let past = |ms: i64| format!("{} is in the past (the server's time is {})", rfc3339_utc(ms), rfc3339_utc(now));
    let (field, problem) = match (&schedule.trigger, schedule.end_ms) {
        (Trigger::Once { at_ms }, _) if *at_ms < now => {
            ("schedule.at", format!("{}: a one-shot job would never fire (to run it now, trigger a job)", past(*at_ms)))
        }
        (_, Some(end)) if end <= now => ("schedule.end_at", format!("{}: the job would never fire", past(end))),
        _ => ("schedule", "has no fire time from now on: the job would never fire".to_string()),
    };
    Err(ApiError::field(field, "invalid_field", problem))
}

/// Apps, scripts and script versions a request looked up, by the reference it gave: a batch
/// resolves each once.
#[derive(Default)]
struct Refs {
    apps: HashMap<String, Option<sundial_store::App>>,
    scripts: HashMap<String, Option<sundial_store::Script>>,
    versions: HashMap<(String, i64), bool>,
}

/// Resolve the references of a validated definition (app, script) into a job row.
async fn to_row(
    st: &AppState,
    caller: &TenantCaller,
    def: JobDef,
    id: String,
    now: i64,
    refs: &mut Refs,
) -> ApiResult<Job> {
    if !refs.apps.contains_key(&def.app) {
        let app = st.store.app_get(&caller.tenant_id, &def.app).await?;
        refs.apps.insert(def.app.clone(), app);
    }
    let app = refs.apps[&def.app]
        .as_ref()
        .ok_or_else(|| ApiError::field("app", "invalid_field", format!("no app `{}` in this tenant", def.app)))?;
    let (handler, script_id) = match &def.target {
        Target::Handler(h) => (Some(h.clone()), None),
        Target::Script(s) => {
            if !refs.scripts.contains_key(s) {
                let script = st.store.script_get(&caller.tenant_id, s).await?;
                refs.scripts.insert(s.clone(), script);
            }
            let script = refs.scripts[s]
                .as_ref()
                .ok_or_else(|| ApiError::field("script", "invalid_field", format!("no script `{s}` in this tenant")))?;
            if let Some(v) = def.script_version {
                let key = (script.id.clone(), v);
                if !refs.versions.contains_key(&key) {
                    let found = st.store.script_version_get(&caller.tenant_id, &script.id, v).await?.is_some();
                    refs.versions.insert(key.clone(), found);
                }
                if !refs.versions[&key] {
                    return Err(ApiError::field(
                        "script_version",
                        "invalid_field",
                        format!(
                            "script `{}` has no version {v} (its current one is {})",
                            script.name, script.current_version
                        ),
                    ));
                }
            }
            (None, Some(script.id.clone()))
        }
    };
    let app_id = app.id.clone();
    Ok(Job::from_def(def, id, &caller.tenant_id, app_id, handler, script_id, now))
}

/// One job as `POST /api/v1/jobs` takes it: validated, its references resolved, a new row
/// with its child edges (not written).
async fn new_job(
    st: &AppState,
    caller: &TenantCaller,
    input: &JobInput,
    now: i64,
    refs: &mut Refs,
) -> ApiResult<NewJob> {
    let def = JobDef::parse(input, now)?;
    refuse_if_it_never_fires(&def.schedule, now)?;
    let children = def.children.clone();
    let job = to_row(st, caller, def, new_id(ids::JOB), now, refs).await?;
    Ok(NewJob { job, children })
}

/// Create a job (editor). Refused with 409 `quota_exceeded` beyond the tenant's `max_jobs`,
/// or when its schedule's peak fires per second would take the tenant's active jobs past
/// `max_fires_per_second` (a fixed rate counts `1000 / every_ms`, a cron the seconds of a
/// minute it may fire over 60, one-shot and manual jobs nothing).
#[utoipa::path(post, path = "/api/v1/jobs", operation_id = "create_job", tag = "jobs", request_body = JobInput,
    responses((status = 201, body = JobOut), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn create(
    State(st): State<AppState>,
    caller: TenantCaller,
    Json(input): Json<JobInput>,
) -> ApiResult<(StatusCode, axum::Json<JobOut>)> {
    caller.require_editor()?;
    let now = st.now_ms();
    let NewJob { job, children } = new_job(&st, &caller, &input, now, &mut Refs::default()).await?;
    let quotas = st.quotas_of(&caller.tenant_id).await?;
    st.store.job_insert_within(&job, &children, &quotas).await?;
    tracing::info!(job_id = %job.id, name = %job.name, "job created");
    Ok((StatusCode::CREATED, axum::Json(JobOut::new(job, children, st.now_ms()))))
}

/// Most jobs one `POST /api/v1/jobs/batch` creates.
pub const MAX_BATCH_JOBS: usize = 1000;

/// One refused item of a batch, as the single create would have refused it alone.
struct ItemProblem {
    index: usize,
    field: String,
    code: &'static str,
    message: String,
    conflict: bool,
}

impl ItemProblem {
    fn of_api(index: usize, e: ApiError) -> Self {
        let field = e.details.get("field").and_then(|f| f.as_str()).unwrap_or("body").to_string();
        ItemProblem { index, field, code: e.code, message: e.message, conflict: e.status == StatusCode::CONFLICT }
    }

    fn of_store(index: usize, r: ItemRefusal) -> Self {
        match r.conflict {
            Some(_) => ItemProblem { index, field: r.field, code: "conflict", message: r.message, conflict: true },
            None => ItemProblem {
                index,
                message: format!("{}: {}", r.field, r.message),
                field: r.field,
                code: "invalid_field",
                conflict: false,
            },
        }
    }
}

/// The refusal of a whole batch: every refused item in `details.errors` (`index` into `jobs`,
/// `field`, `code` and `message` as the single create gives them). 409 `conflict` when every
/// item was refused for a name taken, else 422 `invalid_field`; `details.field` is `jobs`.
fn batch_refused(total: usize, mut items: Vec<ItemProblem>) -> ApiError {
    items.sort_by_key(|p| p.index);
    let all_conflicts = items.iter().all(|p| p.conflict);
    let first = &items[0];
    let message =
        format!("{} of {total} jobs refused, none created; jobs[{}]: {}", items.len(), first.index, first.message);
    let errors: Vec<serde_json::Value> = items
        .iter()
        .map(|p| json!({"index": p.index, "field": p.field, "code": p.code, "message": p.message}))
        .collect();
    let details = json!({"field": "jobs", "errors": errors});
    match all_conflicts {
        true => ApiError::conflict("conflict", message).with_details(details),
        false => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_field", message).with_details(details),
    }
}

/// Create up to 1,000 jobs at once (editor), all or none. Each item is what `POST
/// /api/v1/jobs` takes, checked as it checks it (with the same defaults), and the answer lists
/// the created jobs in the request's order, each as that call returns it. If any item is
/// refused nothing is created: 422 `invalid_field` (409 `conflict` when every refused item's
/// name is taken, in the tenant or by an earlier item) with `details.field` = `jobs` and
/// `details.errors`, one `{index, field, code, message}` per refused item (`index` into
/// `jobs`; `field`, `code` and `message` as the single create names them, e.g. `field` =
/// `schedule.expression`). No item or more than 1,000: 400 on `jobs`. Quotas count the whole
/// batch (409 `quota_exceeded`); the body limit (`max_body_bytes`) applies to the whole body.
#[utoipa::path(post, path = "/api/v1/jobs/batch", operation_id = "create_jobs", tag = "jobs", request_body = JobBatchInput,
    responses((status = 201, body = JobBatch, description = "Every job created, in the request's order"),
        (status = 400, body = ErrorBody, description = "No job or more than 1,000 (`invalid_field` on `jobs`), or the body is not JSON (`invalid_json`)"),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "Nothing created: every refused item's name is taken, in the tenant or by an earlier item \
            (`conflict`, `details.errors`), or a quota of the tenant would be passed (`quota_exceeded`)"),
        (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody, description = "Nothing created: `details.field` is `jobs` and `details.errors` lists every refused item \
            as `{index, field, code, message}`, or the body itself is refused (`details.field` names the field)")))]
pub async fn create_batch(
    State(st): State<AppState>,
    caller: TenantCaller,
    Json(body): Json<JobBatchBody>,
) -> ApiResult<(StatusCode, axum::Json<JobBatch>)> {
    caller.require_editor()?;
    let total = body.jobs.len();
    if !(1..=MAX_BATCH_JOBS).contains(&total) {
        let problem = format!("holds {total} jobs; a batch holds 1 to {MAX_BATCH_JOBS}");
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "invalid_field", format!("jobs: {problem}"))
            .with_details(json!({"field": "jobs", "problem": problem, "limit": MAX_BATCH_JOBS, "count": total})));
    }
    let now = st.now_ms();
    let mut refs = Refs::default();
    let mut problems = Vec::new();
    // (index into `jobs`, the row) of every item that passed alone.
    let mut rows: Vec<(usize, NewJob)> = Vec::with_capacity(total);
    for (index, item) in body.jobs.iter().enumerate() {
        let made = match crate::extract::parse_json::<JobInput>(item.get().as_bytes()) {
            Ok(input) => new_job(&st, &caller, &input, now, &mut refs).await,
            Err(e) => Err(e),
        };
        match made {
            Ok(row) => rows.push((index, row)),
            Err(e) if e.status.is_server_error() => return Err(e),
            Err(e) => problems.push(ItemProblem::of_api(index, e)),
        }
    }
    drop(body);
    let (indexes, jobs): (Vec<usize>, Vec<NewJob>) = rows.into_iter().unzip();
    if !problems.is_empty() {
        // What the database would also refuse of the others, so every refused item is listed.
        for r in st.store.job_insert_problems(&caller.tenant_id, &jobs).await? {
            problems.push(ItemProblem::of_store(indexes[r.index], r));
        }
        return Err(batch_refused(total, problems));
    }
    let quotas = st.quotas_of(&caller.tenant_id).await?;
    match st.store.job_insert_many_within(&caller.tenant_id, &jobs, &quotas).await {
        Ok(()) => {}
        Err(StoreError::Items(refused)) => {
            let items = refused.into_iter().map(|r| ItemProblem::of_store(indexes[r.index], r)).collect();
            return Err(batch_refused(total, items));
        }
        Err(e) => return Err(e.into()),
    }
    let shown = st.now_ms();
    let mut out = Vec::with_capacity(jobs.len());
    for NewJob { job, children } in jobs {
        tracing::info!(job_id = %job.id, name = %job.name, "job created");
        out.push(JobOut::new(job, children, shown));
    }
    Ok((StatusCode::CREATED, axum::Json(JobBatch { jobs: out })))
}

/// List jobs, filtered by app, state or name.
#[utoipa::path(get, path = "/api/v1/jobs", operation_id = "list_jobs", tag = "jobs", params(JobListQuery),
    responses((status = 200, body = JobList), (status = 401, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn list(
    State(st): State<AppState>,
    caller: TenantCaller,
    Query(q): Query<JobListQuery>,
) -> ApiResult<axum::Json<JobList>> {
    let page = PageQuery { limit: q.limit, cursor: q.cursor.clone() }.page_of_ids(sundial_core::ids::JOB)?;
    let app_id = match &q.app {
        Some(a) => match st.store.app_get(&caller.tenant_id, a).await? {
            Some(app) => Some(app.id),
            None => {
                return Ok(axum::Json(JobList { items: vec![], next_cursor: None }));
            }
        },
        None => None,
    };
    let filter = JobFilter { app_id, state: q.state, name: q.name.clone() };
    let rows = st.store.job_list(&caller.tenant_id, &filter, &page).await?;
    let (jobs, next_cursor) = paginate(rows, &page, |j| j.id.clone(), |j| j);
    let mut items = Vec::with_capacity(jobs.len());
    for j in jobs {
        items.push(out(&st, j).await?);
    }
    Ok(axum::Json(JobList { items, next_cursor }))
}

/// One job.
#[utoipa::path(get, path = "/api/v1/jobs/{id}", operation_id = "get_job", tag = "jobs", params(("id" = String, Path)),
    responses((status = 200, body = JobOut), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<JobOut>> {
    let job = load(&st, &caller, &id).await?;
    Ok(axum::Json(out(&st, job).await?))
}

/// Replace a job's definition (editor). Send `If-Match: <version>` to refuse the
/// update (409) if someone else changed the job since you read it.
#[utoipa::path(put, path = "/api/v1/jobs/{id}", operation_id = "replace_job", tag = "jobs", params(("id" = String, Path), ("If-Match" = Option<i64>, Header, description = "Expected version")),
    request_body = JobInput,
    responses((status = 200, body = JobOut), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn replace(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
    headers: HeaderMap,
    Json(input): Json<JobInput>,
) -> ApiResult<axum::Json<JobOut>> {
    caller.require_editor()?;
    let if_match = match headers.get("if-match") {
        Some(v) => Some(
            v.to_str()
                .ok()
                .map(|s| s.trim_matches('"'))
                .and_then(|s| s.parse::<i64>().ok())
                .ok_or_else(|| ApiError::field("If-Match", "invalid_field", "must be the job's version number"))?,
        ),
        None => None,
    };
    let current = load(&st, &caller, &id).await?;
    let now = st.now_ms();
    let mut input = input;
    // Keep a fixed-rate job's grid: an update that does not name an anchor keeps the old one.
    if input.schedule.anchor.is_none()
        && let Ok(old) = Schedule::parse(&current.schedule, current.created_at_ms)
        && let Trigger::FixedRate { .. } = old.trigger
        && input.schedule.kind == current.schedule_kind
    {
        input.schedule.anchor = current.schedule.anchor.clone();
    }
    let keep_state = input.state.is_none();
    let def = JobDef::parse(&input, now)?;
    // Only a changed schedule: a one-shot job that has fired can still be renamed.
    if Schedule::parse(&current.schedule, current.created_at_ms).ok().as_ref() != Some(&def.schedule) {
        refuse_if_it_never_fires(&def.schedule, now)?;
    }
    let children = def.children.clone();
    let mut job = to_row(&st, &caller, def, current.id.clone(), now, &mut Refs::default()).await?;
    if keep_state {
        job.state = current.state;
    }
    job.source = current.source;
    job.registration_key = current.registration_key.clone();
    job.created_at_ms = current.created_at_ms;
    job.generated_until_ms = Some(now);
    let expected = if_match.unwrap_or(current.version);
    job.version = expected + 1;
    let quotas = st.quotas_of(&caller.tenant_id).await?;
    if !st.store.job_update_within(&job, Some(&children), expected, &quotas).await? {
        return Err(ApiError::not_found("job"));
    }
    Ok(axum::Json(JobOut::new(job, children, st.now_ms())))
}

/// Delete a job with its child edges and its runs that have not started (editor).
#[utoipa::path(delete, path = "/api/v1/jobs/{id}", operation_id = "delete_job", tag = "jobs", params(("id" = String, Path)),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn delete(State(st): State<AppState>, caller: TenantCaller, Path(id): Path<String>) -> ApiResult<StatusCode> {
    caller.require_editor()?;
    if !st.store.job_delete(&caller.tenant_id, &id, st.now_ms()).await? {
        return Err(ApiError::not_found("job"));
    }
    Ok(StatusCode::NO_CONTENT)
}

async fn set_state(st: AppState, caller: TenantCaller, id: String, state: JobState) -> ApiResult<axum::Json<JobOut>> {
    caller.require_editor()?;
    let quotas = st.quotas_of(&caller.tenant_id).await?;
    let job = st
        .store
        .job_set_state_within(&caller.tenant_id, &id, state, st.now_ms(), &quotas)
        .await?
        .ok_or_else(|| ApiError::not_found("job"))?;
    tracing::info!(job_id = %job.id, state = %state, "job state set");
    Ok(axum::Json(out(&st, job).await?))
}

/// Start firing on schedule from now on (no catch-up of the stopped period).
#[utoipa::path(post, path = "/api/v1/jobs/{id}/start", operation_id = "start_job", tag = "jobs", params(("id" = String, Path)),
    responses((status = 200, body = JobOut), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "`quota_exceeded`: starting it would pass the tenant's `max_fires_per_second`")))]
pub async fn start(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<JobOut>> {
    set_state(st, caller, id, JobState::Active).await
}

/// Stop firing on schedule. Manual triggers still work.
#[utoipa::path(post, path = "/api/v1/jobs/{id}/stop", operation_id = "stop_job", tag = "jobs", params(("id" = String, Path)),
    responses((status = 200, body = JobOut), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn stop(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<JobOut>> {
    set_state(st, caller, id, JobState::Stopped).await
}

fn preview_count(count: Option<i64>) -> ApiResult<usize> {
    let n = count.unwrap_or(5);
    if !(1..=MAX_PREVIEW as i64).contains(&n) {
        return Err(ApiError::field("count", "invalid_field", format!("{n} is out of range 1-{MAX_PREVIEW}")));
    }
    Ok(n as usize)
}

fn preview_of(schedule: &Schedule, now: i64, count: usize) -> Preview {
    let times = schedule.fires_after(now, count).into_iter().map(|t| schedule.format(t)).collect();
    Preview { times, timezone: schedule.display_tz().name().to_string() }
}

/// The job's next fire times from now.
#[utoipa::path(get, path = "/api/v1/jobs/{id}/preview", operation_id = "preview_job", tag = "jobs", params(("id" = String, Path), PreviewQuery),
    responses((status = 200, body = Preview), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn preview(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
    Query(q): Query<PreviewQuery>,
) -> ApiResult<axum::Json<Preview>> {
    let count = preview_count(q.count)?;
    let job = load(&st, &caller, &id).await?;
    let schedule = Schedule::parse(&job.schedule, job.created_at_ms)
        .map_err(|e| ApiError::internal(&sundial_store::StoreError::Corrupt(e.to_string())))?;
    Ok(axum::Json(preview_of(&schedule, st.now_ms(), count)))
}

/// Validate a schedule and show its next fire times, before creating a job.
#[utoipa::path(post, path = "/api/v1/schedules/preview", operation_id = "preview_schedule", tag = "jobs", request_body = SchedulePreviewRequest,
    responses((status = 200, body = Preview), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn preview_schedule(
    State(st): State<AppState>,
    _caller: TenantCaller,
    Json(body): Json<SchedulePreviewRequest>,
) -> ApiResult<axum::Json<Preview>> {
    let count = preview_count(body.count)?;
    let now = st.now_ms();
    let spec: &ScheduleSpec = &body.schedule;
    let schedule = Schedule::parse(spec, now).map_err(|e| e.within("schedule"))?;
    Ok(axum::Json(preview_of(&schedule, now, count)))
}

/// Fire a job now or at a given time, with optional parameters (editor). With an
/// `Idempotency-Key` header, repeating the call returns the run the first one created.
#[utoipa::path(post, path = "/api/v1/jobs/{id}/trigger", operation_id = "trigger_job", tag = "jobs", request_body = TriggerRequest,
    params(("id" = String, Path), ("Idempotency-Key" = Option<String>, Header, description = "Up to 200 characters")),
    responses((status = 201, body = RunOut), (status = 200, body = RunOut, description = "The run an earlier call with the same Idempotency-Key created"),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn trigger(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> ApiResult<(StatusCode, axum::Json<RunOut>)> {
    caller.require_editor()?;
    crate::extract::require_json_body(&headers, &body)?;
    let req: TriggerRequest = if body.iter().all(|b| b.is_ascii_whitespace()) {
        TriggerRequest { params: None, at: None }
    } else {
        crate::extract::parse_json(&body)?
    };
    let key = match headers.get("idempotency-key") {
        Some(v) => {
            let k = v.to_str().ok().filter(|k| !k.is_empty() && k.len() <= 200).ok_or_else(|| {
                ApiError::field("Idempotency-Key", "invalid_field", "must be 1-200 visible ASCII characters")
            })?;
            Some(k.to_string())
        }
        None => None,
    };
    let now = st.now_ms();
    let at = req.at.as_deref().map(|a| sundial_core::time::parse_rfc3339("at", a)).transpose()?.unwrap_or(now);
    if let Some(p) = &req.params {
        sundial_core::job::check_params(p)?;
        let size = serde_json::to_vec(p).map(|v| v.len()).unwrap_or(usize::MAX);
        if size > sundial_core::job::MAX_PARAMS_BYTES {
            return Err(ApiError::field(
                "params",
                "invalid_field",
                format!("is {size} bytes; at most 65536 are allowed"),
            ));
        }
    }
    let job = load(&st, &caller, &id).await?;
    let (fire_key, trigger) = match &key {
        Some(k) => (format!("i:{k}"), sundial_core::types::TriggerKind::Api),
        None => (String::new(), sundial_core::types::TriggerKind::Manual), // m:<run id>, set below
    };
    let mut run = sundial_store::Run::pending(&caller.tenant_id, &job.id, job.version, fire_key, trigger, at, now);
    if key.is_none() {
        run.fire_key = format!("m:{}", run.id);
    }
    run.params = req.params;
    let fire_key = run.fire_key.clone();
    if st.store.run_insert(&run).await? {
        tracing::info!(job_id = %job.id, run_id = %run.id, "job triggered");
        st.wake.notify_one();
        return Ok((StatusCode::CREATED, axum::Json(run.into())));
    }
    let existing = st.store.run_by_fire_key(&job.id, &fire_key).await?.ok_or_else(|| ApiError::not_found("run"))?;
    Ok((StatusCode::OK, axum::Json(existing.into())))
}
