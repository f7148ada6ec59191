use axum::extract::{Path, State};
use sundial_core::time::parse_rfc3339;
use sundial_store::RunFilter;

use crate::auth::TenantCaller;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::Query;
use crate::state::AppState;
use crate::wire::*;

/// List runs, newest scheduled first, filtered by job, state and scheduled time.
#[utoipa::path(get, path = "/api/v1/runs", tag = "runs", params(RunListQuery),
    responses((status = 200, body = RunList), (status = 401, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn list(
    State(st): State<AppState>,
    caller: TenantCaller,
    Query(q): Query<RunListQuery>,
) -> ApiResult<axum::Json<RunList>> {
    let page = PageQuery {
        limit: q.limit,
        cursor: q.cursor.clone(),
    }
    .page()?;
    if let Some(c) = &q.cursor
        && c.split_once(':')
            .is_none_or(|(ms, _)| ms.parse::<i64>().is_err())
    {
        return Err(ApiError::field(
            "cursor",
            "invalid_field",
            "is not a cursor this endpoint returned",
        ));
    }
    let filter = RunFilter {
        job_id: q.job_id.clone(),
        state: q.state,
        from_ms: q
            .from
            .as_deref()
            .map(|s| parse_rfc3339("from", s))
            .transpose()?,
        to_ms: q
            .to
            .as_deref()
            .map(|s| parse_rfc3339("to", s))
            .transpose()?,
    };
    let rows = st.store.run_list(&caller.tenant_id, &filter, &page).await?;
    let (items, next_cursor) = paginate(
        rows,
        &page,
        |r| format!("{}:{}", r.scheduled_at_ms, r.id),
        RunOut::from,
    );
    Ok(axum::Json(RunList { items, next_cursor }))
}

/// One run.
#[utoipa::path(get, path = "/api/v1/runs/{id}", tag = "runs", params(("id" = String, Path)),
    responses((status = 200, body = RunOut), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<RunOut>> {
    let run = st
        .store
        .run_get(&caller.tenant_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("run"))?;
    Ok(axum::Json(run.into()))
}
