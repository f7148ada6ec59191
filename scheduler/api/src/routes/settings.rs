use axum::extract::State;
use sundial_core::affinity::Ring;
use sundial_engine::SETTING_SCHEDULES_PAUSED;

use crate::auth::OperatorCaller;
use crate::error::{ApiResult, ErrorBody};
use crate::extract::Json;
use crate::state::AppState;
use crate::wire::SchedulingSettings;

/// The operator switch: are schedules paused cluster-wide?
#[utoipa::path(get, path = "/api/v1/settings/scheduling", operation_id = "get_scheduling_settings", tag = "settings",
    responses((status = 200, body = SchedulingSettings), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn get(State(st): State<AppState>, _op: OperatorCaller) -> ApiResult<axum::Json<SchedulingSettings>> {
    let paused = st.store.setting_get(SETTING_SCHEDULES_PAUSED).await?.as_deref() == Some("true");
    Ok(axum::Json(SchedulingSettings { paused }))
}

/// Pause (or resume) every schedule, cluster-wide, while manual and API triggers
/// keep working (operator key).
#[utoipa::path(put, path = "/api/v1/settings/scheduling", operation_id = "set_scheduling_settings", tag = "settings", request_body = SchedulingSettings,
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

/// A node of the cluster as the database last saw it.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct NodeOut {
    pub id: String,
    pub address: String,
    pub version: String,
    /// `alive` (heartbeat within 10 s), `dead` (silent; its claims were recovered) or `left` (shut down).
    pub state: String,
    /// Runs waiting in its timer at its last heartbeat.
    pub claimed: i64,
    /// Job affinity: how many of the 64 job buckets it owns in the ring of the alive
    /// nodes listed here (0 unless alive). It claims its buckets' fires ahead of time;
    /// other nodes take them only once they are overdue past a short grace.
    pub buckets: u32,
    /// How late its deliveries went out lately: the worst lateness (ms past the fire's
    /// instant) over its last heartbeat interval (about 3 s). 0 when on time or idle.
    pub lateness_ms: i64,
    /// Runs in its timer already past their instant at its last heartbeat: work it is behind on.
    pub backlog: i64,
    /// Fires it expired by their misfire policy over its last heartbeat interval.
    pub misfired: i64,
    pub started_at: String,
    pub heartbeat_at: String,
}

#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct NodeList {
    pub items: Vec<NodeOut>,
}

/// The nodes of the cluster, their state and load (operator key).
#[utoipa::path(get, path = "/api/v1/nodes", operation_id = "list_nodes", tag = "settings",
    responses((status = 200, body = NodeList), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn nodes(State(st): State<AppState>, _op: OperatorCaller) -> ApiResult<axum::Json<NodeList>> {
    let db_now = st.store.db_now_ms().await?;
    let nodes: Vec<_> = st
        .store
        .node_list()
        .await?
        .into_iter()
        .map(|mut n| {
            if n.state == "alive" && n.heartbeat_at_ms < db_now - sundial_core::affinity::NODE_DEAD_MS {
                n.state = "dead".into();
            }
            n
        })
        .collect();
    // The same ring every node computes from the live node set (sundial_core::affinity).
    let ring = Ring::new(&nodes.iter().filter(|n| n.state == "alive").map(|n| n.id.as_str()).collect::<Vec<_>>());
    let items = nodes
        .into_iter()
        .map(|n| NodeOut {
            buckets: ring.count_of(&n.id),
            state: n.state,
            id: n.id,
            address: n.address,
            version: n.version,
            claimed: n.claimed,
            lateness_ms: n.lateness_ms,
            backlog: n.backlog,
            misfired: n.misfired,
            started_at: sundial_core::time::rfc3339_utc(n.started_at_ms),
            heartbeat_at: sundial_core::time::rfc3339_utc(n.heartbeat_at_ms),
        })
        .collect();
    Ok(axum::Json(NodeList { items }))
}
