use axum::extract::State;
use sundial_engine::SETTING_SCHEDULES_PAUSED;

use crate::auth::OperatorCaller;
use crate::error::{ApiResult, ErrorBody};
use crate::extract::Json;
use crate::state::AppState;
use crate::wire::SchedulingSettings;

/// The operator switch: are schedules paused cluster-wide?
#[utoipa::path(get, path = "/api/v1/settings/scheduling", tag = "settings",
    responses((status = 200, body = SchedulingSettings), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn get(State(st): State<AppState>, _op: OperatorCaller) -> ApiResult<axum::Json<SchedulingSettings>> {
    let paused = st.store.setting_get(SETTING_SCHEDULES_PAUSED).await?.as_deref() == Some("true");
    Ok(axum::Json(SchedulingSettings { paused }))
}

/// Pause (or resume) every schedule, cluster-wide, while manual and API triggers
/// keep working (operator key).
#[utoipa::path(put, path = "/api/v1/settings/scheduling", tag = "settings", request_body = SchedulingSettings,
    responses((status = 200, body = SchedulingSettings), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn put(
    State(st): State<AppState>,
    _op: OperatorCaller,
    Json(body): Json<SchedulingSettings>,
) -> ApiResult<axum::Json<SchedulingSettings>> {
    st.store.setting_set(SETTING_SCHEDULES_PAUSED, if body.paused { "true" } else { "false" }, st.now_ms()).await?;
    tracing::warn!(paused = body.paused, "schedules paused switch set");
    Ok(axum::Json(body))
}
