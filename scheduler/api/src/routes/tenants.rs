use axum::extract::{Path, State};
use axum::http::StatusCode;
use sundial_core::ids::{self, new_id};
use sundial_core::keys::{display_prefix, generate_api_key, hash_api_key};
use sundial_core::types::{Name, Role};
use sundial_store::{ApiKey, Tenant};

use crate::auth::OperatorCaller;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{Json, Query};
use crate::state::AppState;
use crate::wire::*;

/// Create a tenant and its first admin key (operator key only).
#[utoipa::path(post, path = "/api/v1/tenants", operation_id = "create_tenant", tag = "tenants", request_body = TenantCreate,
    responses((status = 201, body = TenantCreated), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn create(
    State(st): State<AppState>,
    _op: OperatorCaller,
    Json(body): Json<TenantCreate>,
) -> ApiResult<(StatusCode, axum::Json<TenantCreated>)> {
    let name = Name::parse("name", &body.name)?;
    let now = st.now_ms();
    let tenant = Tenant { id: new_id(ids::TENANT), name: name.into_string(), created_at_ms: now };
    st.store.tenant_insert(&tenant).await?;
    let key = generate_api_key();
    st.store
        .api_key_insert(&ApiKey {
            id: new_id(ids::API_KEY),
            tenant_id: Some(tenant.id.clone()),
            name: "first admin".into(),
            role: Role::Admin,
            key_hash: hash_api_key(&key),
            display_prefix: display_prefix(&key),
            created_at_ms: now,
        })
        .await?;
    tracing::info!(tenant_id = %tenant.id, name = %tenant.name, "tenant created");
    let out = TenantOut::from(tenant);
    Ok((
        StatusCode::CREATED,
        axum::Json(TenantCreated { id: out.id, name: out.name, created_at: out.created_at, admin_key: key }),
    ))
}

/// List tenants (operator key only).
#[utoipa::path(get, path = "/api/v1/tenants", operation_id = "list_tenants", tag = "tenants", params(PageQuery),
    responses((status = 200, body = TenantList), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn list(
    State(st): State<AppState>,
    _op: OperatorCaller,
    Query(q): Query<PageQuery>,
) -> ApiResult<axum::Json<TenantList>> {
    let page = q.page_of_ids(sundial_core::ids::TENANT)?;
    let rows = st.store.tenant_list(&page).await?;
    let (items, next_cursor) = paginate(rows, &page, |t| t.id.clone(), TenantOut::from);
    Ok(axum::Json(TenantList { items, next_cursor }))
}

/// One tenant (operator key only).
#[utoipa::path(get, path = "/api/v1/tenants/{id}", operation_id = "get_tenant", tag = "tenants", params(("id" = String, Path)),
    responses((status = 200, body = TenantOut), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(st): State<AppState>,
    _op: OperatorCaller,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<TenantOut>> {
    let t = st.store.tenant_get(&id).await?.ok_or_else(|| ApiError::not_found("tenant"))?;
    Ok(axum::Json(t.into()))
}
