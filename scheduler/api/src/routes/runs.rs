use axum::extract::{Path, State};
use sundial_core::time::parse_rfc3339;
use sundial_core::types::RunState;
use sundial_store::RunFilter;

use crate::auth::TenantCaller;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::Query;
use crate::state::AppState;
use crate::wire::*;

/// The most runs `GET /runs?chain_id=` lists.
const CHAIN_MAX: i64 = 1000;

/// List runs, newest scheduled first, filtered by job, state and scheduled time; or the runs
/// of one chain (`chain_id`), oldest first.
#[utoipa::path(get, path = "/api/v1/runs", operation_id = "list_runs", tag = "runs", params(RunListQuery),
    responses((status = 200, body = RunList), (status = 401, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn list(
    State(st): State<AppState>,
    caller: TenantCaller,
    Query(q): Query<RunListQuery>,
) -> ApiResult<axum::Json<RunList>> {
    let page = PageQuery { limit: q.limit, cursor: q.cursor.clone() }.page()?;
    if let Some(c) = &q.cursor
        && c.split_once(':').is_none_or(|(ms, _)| ms.parse::<i64>().is_err())
    {
        return Err(ApiError::field("cursor", "invalid_field", "is not a cursor this endpoint returned"));
    }
    let filter = RunFilter {
        job_id: q.job_id.clone(),
        state: q.state,
        from_ms: q.from.as_deref().map(|s| parse_rfc3339("from", s)).transpose()?,
        to_ms: q.to.as_deref().map(|s| parse_rfc3339("to", s)).transpose()?,
    };
    if let Some(chain) = &q.chain_id {
        if q.cursor.is_some() {
            return Err(ApiError::field("cursor", "invalid_field", "a chain is listed whole, on one page"));
        }
        let items = st
            .store
            .run_chain(&caller.tenant_id, chain, CHAIN_MAX)
            .await?
            .into_iter()
            .filter(|r| filter.job_id.as_ref().is_none_or(|j| *j == r.job_id))
            .filter(|r| filter.state.is_none_or(|s| s == r.state))
            .filter(|r| filter.from_ms.is_none_or(|f| r.scheduled_at_ms >= f))
            .filter(|r| filter.to_ms.is_none_or(|t| r.scheduled_at_ms < t))
            .map(RunOut::from)
            .collect();
        return Ok(axum::Json(RunList { items, next_cursor: None }));
    }
    let rows = st.store.run_list(&caller.tenant_id, &filter, &page).await?;
    let (items, next_cursor) = paginate(rows, &page, |r| format!("{}:{}", r.scheduled_at_ms, r.id), RunOut::from);
    Ok(axum::Json(RunList { items, next_cursor }))
}

/// One run with its shards (for the `sharding` route), attempts (executor, dispatch trail,
/// timings, result) and log lines.
#[utoipa::path(get, path = "/api/v1/runs/{id}", operation_id = "get_run", tag = "runs", params(("id" = String, Path)),
    responses((status = 200, body = RunDetail), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<RunDetail>> {
    let run = st.store.run_get(&caller.tenant_id, &id).await?.ok_or_else(|| ApiError::not_found("run"))?;
    let attempts = st.store.run_attempts(&run.id).await?.into_iter().map(AttemptOut::from).collect();
    let shards = st.store.shard_list(&run.id).await?.into_iter().map(ShardOut::from).collect();
    let logs = st.store.run_logs(&run.id, 1000).await?.into_iter().map(LogOut::from).collect();
    Ok(axum::Json(RunDetail { run: run.into(), shards, attempts, logs }))
}

/// A run's log lines after `after` (a line's `seq`), oldest first, with the run's state:
/// read a whole log page by page, or follow a run as it goes (poll with `next_after` until
/// `run_finished` and not `has_more`). Any role of the run's tenant.
#[utoipa::path(get, path = "/api/v1/runs/{id}/logs", operation_id = "list_run_logs", tag = "runs",
    params(("id" = String, Path), RunLogsQuery),
    responses((status = 200, body = RunLogPage), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn logs(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
    Query(q): Query<RunLogsQuery>,
) -> ApiResult<axum::Json<RunLogPage>> {
    let limit = q.limit.unwrap_or(DEFAULT_LOG_LIMIT);
    if !(1..=MAX_LOG_LIMIT).contains(&limit) {
        return Err(ApiError::field("limit", "invalid_field", format!("{limit} is out of range 1-{MAX_LOG_LIMIT}")));
    }
    let after = q.after.unwrap_or(0);
    if after < 0 {
        return Err(ApiError::field("after", "invalid_field", format!("{after} is not a line's `seq` (0 or more)")));
    }
    // The state before the lines: a final state read first means every line stored
    // before it ended is in what follows.
    let run = st.store.run_get(&caller.tenant_id, &id).await?.ok_or_else(|| ApiError::not_found("run"))?;
    let mut rows = st.store.run_logs_after(&run.id, after, limit + 1).await?;
    let has_more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    let next_after = rows.last().map_or(after, |l| l.id);
    Ok(axum::Json(RunLogPage {
        items: rows.into_iter().map(LogOut::from).collect(),
        next_after,
        has_more,
        run_state: run.state,
        run_finished: run.state.is_terminal(),
    }))
}

/// Cancel a run that has not finished (editor). A delivered attempt gets a signed
/// best-effort cancel at its executor; for a sharded run, every shard still out does.
#[utoipa::path(post, path = "/api/v1/runs/{id}/cancel", operation_id = "cancel_run", tag = "runs", params(("id" = String, Path)),
    responses((status = 200, body = RunOut), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn cancel(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<RunOut>> {
    caller.require_editor()?;
    let now = st.now_ms();
    match st.store.run_cancel(&caller.tenant_id, &id, "cancelled through the API", now).await? {
        Some(before) => {
            if matches!(before.state, RunState::Dispatching | RunState::Running) {
                st.cancels.cancel_run(&before);
            }
            let run = st.store.run_get(&caller.tenant_id, &id).await?.ok_or_else(|| ApiError::not_found("run"))?;
            Ok(axum::Json(run.into()))
        }
        None => {
            let run = st.store.run_get(&caller.tenant_id, &id).await?.ok_or_else(|| ApiError::not_found("run"))?;
            Err(ApiError::conflict("not_cancellable", format!("the run is already `{}`", run.state)))
        }
    }
}

/// Skip the backoff of a `retrying` run: its next attempt starts now; for a sharded run,
/// every shard waiting out its backoff goes now (editor).
#[utoipa::path(post, path = "/api/v1/runs/{id}/retry", operation_id = "retry_run", tag = "runs", params(("id" = String, Path)),
    responses((status = 200, body = RunOut), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn retry(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<RunOut>> {
    caller.require_editor()?;
    let done = st.store.run_retry_now(&caller.tenant_id, &id, st.now_ms()).await?;
    let run = st.store.run_get(&caller.tenant_id, &id).await?.ok_or_else(|| ApiError::not_found("run"))?;
    if !done {
        return Err(ApiError::conflict(
            "not_retrying",
            format!(
                "only a `retrying` run, or a sharded run with a `retrying` shard, can be retried now; this one is `{}`",
                run.state
            ),
        ));
    }
    st.wake.notify_one();
    Ok(axum::Json(run.into()))
}

/// What cancelling a chain did.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(example = json!({"chain_id": "run_01JDX2V6Q8", "cancelled": ["run_01JDX2V6R0", "run_01JDX2V6R1"], "runs": 4}))]
pub struct ChainCancelled {
    pub chain_id: String,
    /// The runs this call cancelled (those not yet final).
    pub cancelled: Vec<String>,
    /// How many runs the chain has.
    pub runs: usize,
}

/// Cancel a whole chain (editor): every run of it not yet final is cancelled (executors
/// holding one get a cancel), so no further child fires; a child a finishing parent fired
/// meanwhile is cancelled too.
#[utoipa::path(post, path = "/api/v1/chains/{chain_id}/cancel", operation_id = "cancel_chain", tag = "runs",
    params(("chain_id" = String, Path, description = "The chain's id: its root run's id")),
    responses((status = 200, body = ChainCancelled), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn cancel_chain(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(chain_id): Path<String>,
) -> ApiResult<axum::Json<ChainCancelled>> {
    caller.require_editor()?;
    let mut cancelled = Vec::new();
    let mut runs = 0;
    // Again while a pass cancels something: a parent ending between the listing and its
    // cancel may have fired a child the first listing did not have.
    for pass in 0..4 {
        let chain = st.store.run_chain(&caller.tenant_id, &chain_id, CHAIN_MAX).await?;
        if chain.is_empty() && pass == 0 {
            return Err(ApiError::not_found("chain"));
        }
        runs = chain.len();
        let mut this_pass = 0;
        for run in chain.iter().filter(|r| !r.state.is_terminal()) {
            let now = st.now_ms();
            if let Some(before) =
                st.store.run_cancel(&caller.tenant_id, &run.id, "the chain was cancelled", now).await?
            {
                if matches!(before.state, RunState::Dispatching | RunState::Running) {
                    st.cancels.cancel_run(&before);
                }
                cancelled.push(run.id.clone());
                this_pass += 1;
            }
        }
        if this_pass == 0 {
            break;
        }
    }
    tracing::info!(chain_id = %chain_id, cancelled = cancelled.len(), "chain cancelled");
    Ok(axum::Json(ChainCancelled { chain_id, cancelled, runs }))
}
