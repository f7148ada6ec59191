use axum::extract::{Path, State};
use axum::http::StatusCode;
use sundial_core::ids::{self, new_id};
use sundial_core::keys::{display_prefix, generate_api_key, hash_api_key};
use sundial_core::types::{Name, Role};
use sundial_store::ApiKey;

use crate::auth::TenantCaller;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{Json, Query};
use crate::state::AppState;
use crate::wire::*;

/// Create an API key in the caller's tenant (admin).
#[utoipa::path(post, path = "/api/v1/keys", operation_id = "create_key", tag = "keys", request_body = KeyCreate,
    responses((status = 201, body = KeyCreated), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn create(
    State(st): State<AppState>,
    caller: TenantCaller,
    Json(body): Json<KeyCreate>,
) -> ApiResult<(StatusCode, axum::Json<KeyCreated>)> {
    caller.require_admin()?;
    let name = Name::parse("name", &body.name)?;
    if body.role == Role::Operator {
        return Err(ApiError::field("role", "invalid_field", "tenant keys are `admin`, `editor` or `viewer`"));
    }
    let key = generate_api_key();
    let row = ApiKey {
        id: new_id(ids::API_KEY),
        tenant_id: Some(caller.tenant_id.clone()),
        name: name.into_string(),
        role: body.role,
        key_hash: hash_api_key(&key),
        display_prefix: display_prefix(&key),
        created_at_ms: st.now_ms(),
    };
    st.store.api_key_insert(&row).await?;
    Ok((StatusCode::CREATED, axum::Json(KeyCreated { meta: row.into(), key })))
}

/// List the tenant's API keys (admin). Keys themselves are never shown again.
#[utoipa::path(get, path = "/api/v1/keys", operation_id = "list_keys", tag = "keys", params(PageQuery),
    responses((status = 200, body = KeyList), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)))]
pub async fn list(
    State(st): State<AppState>,
    caller: TenantCaller,
    Query(q): Query<PageQuery>,
) -> ApiResult<axum::Json<KeyList>> {
    caller.require_admin()?;
    let page = q.page_of_ids(sundial_core::ids::API_KEY)?;
    let rows = st.store.api_key_list(Some(&caller.tenant_id), &page).await?;
    let (items, next_cursor) = paginate(rows, &page, |k| k.id.clone(), KeyOut::from);
    Ok(axum::Json(KeyList { items, next_cursor }))
}

/// Revoke an API key (admin). The tenant's last admin key cannot be revoked.
#[utoipa::path(delete, path = "/api/v1/keys/{id}", operation_id = "delete_key", tag = "keys", params(("id" = String, Path)),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn delete(State(st): State<AppState>, caller: TenantCaller, Path(id): Path<String>) -> ApiResult<StatusCode> {
    caller.require_admin()?;
    let target = st.store.api_key_get(&caller.tenant_id, &id).await?.ok_or_else(|| ApiError::not_found("API key"))?;
    if target.role == Role::Admin && st.store.api_key_count(Some(&caller.tenant_id), Role::Admin).await? <= 1 {
        return Err(ApiError::conflict(
            "last_admin_key",
            "this is the tenant's last admin key; create another admin key first",
        ));
    }
    st.store.api_key_delete(&caller.tenant_id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
