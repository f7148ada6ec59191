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
pub mod limits;
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
        .route("/tenants/{id}/quotas", get(quotas::get).put(quotas::put))
        .route("/tenants/{id}/usage", get(quotas::tenant_usage))
        .route("/usage", get(quotas::usage))
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
        .route("/jobs/batch", post(jobs::create_batch))
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
        .route("/runs/{id}/logs", get(runs::logs).post(executors::logs))
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
        // Every query parameter the OpenAPI document does not list for the endpoint is refused.
        .route_layer(axum::middleware::from_fn(known_query_params))
        .with_state(state)
        .layer(DefaultBodyLimit::max(max_body))
        // Errors produced below the handlers (axum's extractors, the body limit) come as
        // plain text: every error leaves as JSON.
        .layer(axum::middleware::map_response(json_errors))
        .layer(
            TraceLayer::new_for_http().make_span_with(|req: &Request<_>| {
                let request_id = req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("");
                tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id, tenant_id = tracing::field::Empty, key_id = tracing::field::Empty)
            }),
        )
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
}

/// The query parameters each operation declares (`"GET /api/v1/jobs"` → names), from the
/// OpenAPI document: the spec and the server cannot disagree on what a request may carry.
static QUERY_PARAMS: std::sync::LazyLock<std::collections::HashMap<String, Vec<String>>> =
    std::sync::LazyLock::new(|| {
        use utoipa::OpenApi;
        use utoipa::openapi::path::ParameterIn;
        let doc = openapi::ApiDoc::openapi();
        let mut map = std::collections::HashMap::new();
        for (path, item) in &doc.paths.paths {
            let ops = [
                ("GET", &item.get),
                ("PUT", &item.put),
                ("POST", &item.post),
                ("DELETE", &item.delete),
                ("PATCH", &item.patch),
            ];
            for (method, op) in ops {
                if let Some(op) = op {
                    let names = op
                        .parameters
                        .iter()
                        .flatten()
                        .filter(|p| p.parameter_in == ParameterIn::Query)
                        .map(|p| p.name.clone())
                        .collect();
                    map.insert(format!("{method} {path}"), names);
                }
            }
        }
        map
    });

/// Refuse (422, naming it) a query parameter the endpoint does not take. Endpoints with a
/// query extractor refuse unknown ones themselves; this covers every other endpoint
/// (e.g. `POST /api/v1/schedules/preview?count=…`, which took no parameter and ignored it).
async fn known_query_params(
    matched: Option<axum::extract::MatchedPath>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if let Some(q) = req.uri().query().filter(|q| !q.is_empty()) {
        let method = if req.method() == axum::http::Method::HEAD { "GET" } else { req.method().as_str() };
        let key = format!("{method} {}", matched.as_ref().map_or("", |m| m.as_str()));
        let allowed = QUERY_PARAMS.get(&key).map_or(&[][..], Vec::as_slice);
        for (name, _) in form_urlencoded::parse(q.as_bytes()) {
            if !allowed.iter().any(|a| *a == name) {
                let expected = if allowed.is_empty() {
                    "this endpoint takes no query parameters".to_string()
                } else {
                    format!(
                        "expected one of {}",
                        allowed.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
                    )
                };
                return ApiError::field(&name, "unknown_field", format!("is not a known query parameter; {expected}"))
                    .into_response();
            }
        }
    }
    next.run(req).await
}

/// Turn an error response that is not JSON (axum's extractor rejections, the body-limit
/// layer's 413) into the API's JSON error, keeping its status and headers.
async fn json_errors(response: axum::response::Response) -> axum::response::Response {
    use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
    use axum::response::IntoResponse;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 4096).await.map(|b| String::from_utf8_lossy(&b).trim().to_string());
    let message = match text {
        Ok(t) if !t.is_empty() => t,
        _ => status.canonical_reason().unwrap_or("error").to_string(),
    };
    let (code, details) = match status {
        StatusCode::PAYLOAD_TOO_LARGE => {
            ("payload_too_large", serde_json::json!({"field": "body", "problem": "too large"}))
        }
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ("unsupported_media_type", serde_json::json!({"field": "content-type"})),
        StatusCode::NOT_FOUND => ("not_found", serde_json::json!({})),
        StatusCode::METHOD_NOT_ALLOWED => ("method_not_allowed", serde_json::json!({})),
        StatusCode::REQUEST_TIMEOUT => ("request_timeout", serde_json::json!({})),
        StatusCode::UNPROCESSABLE_ENTITY => ("invalid_field", serde_json::json!({})),
        s if s.is_server_error() => ("internal", serde_json::json!({})),
        _ => ("bad_request", serde_json::json!({})),
    };
    let mut out = ApiError::new(status, code, message).with_details(details).into_response();
    for (name, value) in &parts.headers {
        if name != CONTENT_TYPE && name != CONTENT_LENGTH {
            out.headers_mut().append(name, value.clone());
        }
    }
    out
}
