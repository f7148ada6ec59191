use axum::extract::State;
use axum::http::StatusCode;

use crate::state::AppState;
use crate::wire::Health;

/// The process is alive.
#[utoipa::path(get, path = "/healthz", operation_id = "healthz", tag = "health", responses((status = 200, body = Health)))]
pub async fn healthz() -> axum::Json<Health> {
    axum::Json(Health { status: "ok".into() })
}

/// The database is reachable.
#[utoipa::path(get, path = "/readyz", operation_id = "readyz", tag = "health", responses((status = 200, body = Health), (status = 503, body = Health)))]
pub async fn readyz(State(st): State<AppState>) -> (StatusCode, axum::Json<Health>) {
    // Answer within 2 s even while the pool waits for a connection that will not come.
    let ping = tokio::time::timeout(std::time::Duration::from_secs(2), st.store.ping()).await;
    match ping.unwrap_or_else(|_| Err(sundial_store::StoreError::Corrupt("ping timed out".into()))) {
        Ok(()) => (StatusCode::OK, axum::Json(Health { status: "ok".into() })),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            (StatusCode::SERVICE_UNAVAILABLE, axum::Json(Health { status: "database unreachable".into() }))
        }
    }
}
