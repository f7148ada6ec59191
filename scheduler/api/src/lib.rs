//! Sundial's HTTP API: REST + JSON under `/api/v1`, the OpenAPI document, health.
//!
//! What lives here: routing, authentication ([`auth`]), request extraction with
//! field-naming errors ([`extract`]), the JSON shapes ([`wire`]) and their
//! conversion from domain/store types, and the error type ([`error::ApiError`]).
//!
//! What does not: SQL (the store crate), validation rules (the domain crate),
//! scheduling (the engine). Handlers parse, authorise, call the store, convert.

pub mod auth;
pub mod bootstrap;
pub mod error;
pub mod extract;
pub mod openapi;
pub mod routes;
pub mod signed;
pub mod state;
pub mod wire;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Request, StatusCode};
use axum::routing::{get, post};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

pub use state::{ApiConfig, AppState, RuntimeOffer, ScriptLimits, SourceChecker, SourceProblem};

use crate::error::ApiError;
use crate::routes::*;

/// The whole HTTP surface.
pub fn router(state: AppState) -> Router {
    // Script uploads may be larger than any other request (a 10 MiB module is 13.4 MiB in base64).
    let script_body = state.config.scripts.max_body_bytes().max(state.config.max_body_bytes);
    let api = Router::new()
        .route("/tenants", post(tenants::create).get(tenants::list))
        .route("/tenants/{id}", get(tenants::get))
        .route("/keys", post(keys::create).get(keys::list))
        .route("/keys/{id}", axum::routing::delete(keys::delete))
        .route("/apps", post(apps::create).get(apps::list))
        .route("/apps/{id}", get(apps::get).patch(apps::update).delete(apps::delete))
        .route("/apps/{id}/rotate-secret", post(apps::rotate_secret))
        .route("/runtimes", get(scripts::runtimes))
        .route("/scripts", post(scripts::create).layer(DefaultBodyLimit::max(script_body)).get(scripts::list))
        .route("/scripts/{id}", get(scripts::get).delete(scripts::delete))
        .route(
            "/scripts/{id}/versions",
            post(scripts::create_version).layer(DefaultBodyLimit::max(script_body)).get(scripts::list_versions),
        )
        .route("/scripts/{id}/versions/{version}", get(scripts::get_version))
        .route("/scripts/{id}/diff", get(scripts::diff))
        .route("/scripts/{id}/restore", post(scripts::restore))
        .route("/jobs", post(jobs::create).get(jobs::list))
        .route("/jobs/{id}", get(jobs::get).put(jobs::replace).delete(jobs::delete))
        .route("/jobs/{id}/start", post(jobs::start))
        .route("/jobs/{id}/stop", post(jobs::stop))
        .route("/jobs/{id}/preview", get(jobs::preview))
        .route("/jobs/{id}/trigger", post(jobs::trigger))
        .route("/schedules/preview", post(jobs::preview_schedule))
        .route("/runs", get(runs::list))
        .route("/runs/{id}", get(runs::get))
        .route("/runs/{id}/cancel", post(runs::cancel))
        .route("/runs/{id}/retry", post(runs::retry))
        .route("/chains/{chain_id}", get(chains::get))
        .route("/chains/{chain_id}/cancel", post(runs::cancel_chain))
        .route("/runs/{id}/result", post(executors::result))
        .route("/runs/{id}/logs", post(executors::logs))
        .route("/runs/{id}/script", post(executors::run_script))
        .route("/apps/{id}/executors", get(executors::list))
        .route("/executors/register", post(executors::register))
        .route("/executors/heartbeat", post(executors::heartbeat))
        .route("/executors/deregister", post(executors::deregister))
        .route("/settings/scheduling", get(settings::get).put(settings::put))
        .route("/nodes", get(settings::nodes));

    let max_body = state.config.max_body_bytes;
    Router::new()
        .nest("/api/v1", api)
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/openapi.json", get(openapi::serve))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint; see /openapi.json") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "this endpoint does not take that method")
        })
        .with_state(state)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(
            TraceLayer::new_for_http().make_span_with(|req: &Request<_>| {
                let request_id = req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("");
                tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id, tenant_id = tracing::field::Empty, key_id = tracing::field::Empty)
            }),
        )
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
}
