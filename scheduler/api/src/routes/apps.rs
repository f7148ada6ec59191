use axum::extract::{Path, State};
use axum::http::StatusCode;
use sundial_core::ids::{self, new_id};
use sundial_core::keys::generate_signing_secret;
use sundial_core::types::{Name, WebhookUrl, bounded_text};
use sundial_core::{FieldError, Result as FieldResult};
use sundial_store::App;

use crate::auth::TenantCaller;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{Json, Query};
use crate::state::AppState;
use crate::wire::*;

const MAX_ENDPOINTS: usize = 100;

/// Static endpoints: valid http(s) URLs that the outbound address policy does not refuse
/// where that can be known now (IP literals, `localhost`; names are judged at connect time).
fn parse_endpoints(st: &AppState, endpoints: &[String]) -> FieldResult<Vec<String>> {
    if endpoints.len() > MAX_ENDPOINTS {
        return Err(FieldError::invalid("endpoints", format!("at most {MAX_ENDPOINTS} endpoints")));
    }
    endpoints
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let field = format!("endpoints[{i}]");
            let url = WebhookUrl::parse(&field, e)?;
            st.config.outbound.check_url(url.as_str()).map_err(|r| FieldError::invalid(&field, r.to_string()))?;
            Ok(url.as_str().to_string())
        })
        .collect()
}

async fn load(st: &AppState, caller: &TenantCaller, id: &str) -> ApiResult<App> {
    st.store.app_get(&caller.tenant_id, id).await?.ok_or_else(|| ApiError::not_found("app"))
}

/// Create an app (executor group) with a fresh signing secret (admin).
#[utoipa::path(post, path = "/api/v1/apps", operation_id = "create_app", tag = "apps", request_body = AppCreate,
    responses((status = 201, body = AppWithSecret), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn create(
    State(st): State<AppState>,
    caller: TenantCaller,
    Json(body): Json<AppCreate>,
) -> ApiResult<(StatusCode, axum::Json<AppWithSecret>)> {
    caller.require_admin()?;
    let name = Name::parse("name", &body.name)?;
    let description = bounded_text("description", body.description.as_deref().unwrap_or(""), 2000)?;
    let endpoints = parse_endpoints(&st, body.endpoints.as_deref().unwrap_or(&[]))?;
    let now = st.now_ms();
    let app = App {
        id: new_id(ids::APP),
        tenant_id: caller.tenant_id.clone(),
        name: name.into_string(),
        description,
        endpoints,
        secret: generate_signing_secret(),
        previous_secret: None,
        previous_expires_ms: None,
        created_at_ms: now,
        updated_at_ms: now,
    };
    st.store.app_insert(&app).await?;
    tracing::info!(app_id = %app.id, name = %app.name, "app created");
    let secret = app.secret.clone();
    Ok((StatusCode::CREATED, axum::Json(AppWithSecret { app: app.into(), secret })))
}

/// List the tenant's apps.
#[utoipa::path(get, path = "/api/v1/apps", operation_id = "list_apps", tag = "apps", params(PageQuery),
    responses((status = 200, body = AppList), (status = 401, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn list(
    State(st): State<AppState>,
    caller: TenantCaller,
    Query(q): Query<PageQuery>,
) -> ApiResult<axum::Json<AppList>> {
    let page = q.page_of_ids(sundial_core::ids::APP)?;
    let rows = st.store.app_list(&caller.tenant_id, &page).await?;
    let (items, next_cursor) = paginate(rows, &page, |a| a.id.clone(), AppOut::from);
    Ok(axum::Json(AppList { items, next_cursor }))
}

/// One app, by id or name. The secret is not shown.
#[utoipa::path(get, path = "/api/v1/apps/{id}", operation_id = "get_app", tag = "apps", params(("id" = String, Path, description = "App id or name")),
    responses((status = 200, body = AppOut), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<AppOut>> {
    Ok(axum::Json(load(&st, &caller, &id).await?.into()))
}

/// Change an app's description or static endpoints (editor).
#[utoipa::path(patch, path = "/api/v1/apps/{id}", operation_id = "update_app", tag = "apps", params(("id" = String, Path, description = "App id or name")), request_body = AppUpdate,
    responses((status = 200, body = AppOut), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn update(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
    Json(body): Json<AppUpdate>,
) -> ApiResult<axum::Json<AppOut>> {
    caller.require_editor()?;
    let description = body.description.as_deref().map(|d| bounded_text("description", d, 2000)).transpose()?;
    let endpoints = body.endpoints.as_deref().map(|e| parse_endpoints(&st, e)).transpose()?;
    let mut app = load(&st, &caller, &id).await?;
    if let Some(d) = description {
        app.description = d;
    }
    if let Some(e) = endpoints {
        app.endpoints = e;
    }
    app.updated_at_ms = st.now_ms();
    if !st.store.app_update(&app).await? {
        return Err(ApiError::not_found("app"));
    }
    Ok(axum::Json(app.into()))
}

/// Rotate the signing secret (admin). The previous secret keeps verifying for a grace period.
#[utoipa::path(post, path = "/api/v1/apps/{id}/rotate-secret", operation_id = "rotate_app_secret", tag = "apps", params(("id" = String, Path, description = "App id or name")),
    responses((status = 200, body = AppWithSecret), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn rotate_secret(
    State(st): State<AppState>,
    caller: TenantCaller,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<AppWithSecret>> {
    caller.require_admin()?;
    let mut app = load(&st, &caller, &id).await?;
    let now = st.now_ms();
    app.previous_secret = Some(std::mem::replace(&mut app.secret, generate_signing_secret()));
    app.previous_expires_ms = Some(now + st.config.secret_grace_ms);
    app.updated_at_ms = now;
    if !st.store.app_update(&app).await? {
        return Err(ApiError::not_found("app"));
    }
    tracing::info!(app_id = %app.id, "app secret rotated");
    let secret = app.secret.clone();
    Ok(axum::Json(AppWithSecret { app: app.into(), secret }))
}

/// Delete an app (admin); refused while jobs use it.
#[utoipa::path(delete, path = "/api/v1/apps/{id}", operation_id = "delete_app", tag = "apps", params(("id" = String, Path, description = "App id or name")),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn delete(State(st): State<AppState>, caller: TenantCaller, Path(id): Path<String>) -> ApiResult<StatusCode> {
    caller.require_admin()?;
    let app = load(&st, &caller, &id).await?;
    if !st.store.app_delete(&caller.tenant_id, &app.id).await? {
        return Err(ApiError::not_found("app"));
    }
    Ok(StatusCode::NO_CONTENT)
}
