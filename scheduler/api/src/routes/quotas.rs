//! Tenant quotas: the operator sets them per tenant (`/tenants/{id}/quotas`), and a tenant
//! (`/usage`) or the operator (`/tenants/{id}/usage`) sees each limit with its usage.

use axum::extract::{Path, State};
use serde::Serialize;
use serde_json::Value;
use sundial_core::quota::{MICROS_PER_FIRE, Quota, QuotaOverrides, Quotas};
use utoipa::ToSchema;

use crate::auth::{OperatorCaller, TenantCaller};
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::Json;
use crate::state::AppState;

/// A tenant's quotas: the limits in force, what the operator set, and the node's defaults.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantQuotas {
    pub tenant_id: String,
    /// The limits in force: the defaults with the operator's settings.
    pub effective: Quotas,
    /// What the operator set for this tenant (`null`: the node's default).
    pub overrides: QuotaOverrides,
    /// The node's defaults (`serve` settings `--quota-*`).
    pub defaults: Quotas,
}

/// One quota's limit and what the tenant uses of it.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuotaUsage {
    pub quota: Quota,
    pub limit: i64,
    /// What the tenant uses now, in the limit's unit (fires per second may be a fraction);
    /// `null` where the limit applies to each run (`max_log_bytes_per_run`) or to each API
    /// key on each node (`max_api_requests_per_second`) rather than to the tenant.
    #[schema(value_type = Option<f64>)]
    pub usage: Value,
}

/// Every quota of a tenant with its usage.
#[derive(Debug, Serialize, ToSchema)]
pub struct Usage {
    pub tenant_id: String,
    pub quotas: Vec<QuotaUsage>,
}

async fn tenant_quotas(st: &AppState, tenant_id: &str) -> ApiResult<TenantQuotas> {
    st.store.tenant_get(tenant_id).await?.ok_or_else(|| ApiError::not_found("tenant"))?;
    let overrides = st.store.quota_get(tenant_id).await?;
    let defaults = *st.limits.defaults();
    Ok(TenantQuotas { tenant_id: tenant_id.to_string(), effective: defaults.with(&overrides), overrides, defaults })
}

async fn usage_of(st: &AppState, tenant_id: &str) -> ApiResult<Usage> {
    let now = st.now_ms();
    let limits = st.defaults_with(tenant_id).await?;
    let u = st.store.usage_get(tenant_id, now).await?;
    let quotas = Quota::ALL
        .into_iter()
        .map(|q| {
            let usage = match q {
                Quota::MaxJobs => Value::from(u.jobs),
                Quota::MaxFiresPerSecond => {
                    let micros = u.fire_rate_micros;
                    if micros % MICROS_PER_FIRE == 0 {
                        Value::from(micros / MICROS_PER_FIRE)
                    } else {
                        Value::from((micros as f64 / MICROS_PER_FIRE as f64 * 1000.0).round() / 1000.0)
                    }
                }
                Quota::MaxInflight => Value::from(u.inflight),
                Quota::MaxScripts => Value::from(u.scripts),
                Quota::MaxScriptBytes => Value::from(u.script_bytes),
                Quota::MaxLogBytesPerDay => Value::from(u.log_bytes_today),
                Quota::MaxHandlersPerApp => Value::from(u.handlers_most_in_one_app),
                Quota::MaxLogBytesPerRun | Quota::MaxApiRequestsPerSecond => Value::Null,
            };
            QuotaUsage { quota: q, limit: limits.get(q), usage }
        })
        .collect();
    Ok(Usage { tenant_id: tenant_id.to_string(), quotas })
}

impl AppState {
    /// A tenant's limits read now (not the cache: what usage views show is what was set).
    async fn defaults_with(&self, tenant_id: &str) -> ApiResult<Quotas> {
        Ok(self.limits.defaults().with(&self.store.quota_get(tenant_id).await?))
    }
}

/// A tenant's quotas (operator key only).
#[utoipa::path(get, path = "/api/v1/tenants/{id}/quotas", operation_id = "get_tenant_quotas", tag = "tenants", params(("id" = String, Path)),
    responses((status = 200, body = TenantQuotas), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 429, body = ErrorBody)))]
pub async fn get(
    State(st): State<AppState>,
    _op: OperatorCaller,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<TenantQuotas>> {
    Ok(axum::Json(tenant_quotas(&st, &id).await?))
}

/// Set a tenant's quotas (operator key only). The body replaces every setting: a quota left
/// out or `null` follows the node's default. Lowering a limit below the tenant's usage
/// removes nothing; it refuses what would add more.
#[utoipa::path(put, path = "/api/v1/tenants/{id}/quotas", operation_id = "set_tenant_quotas", tag = "tenants", params(("id" = String, Path)),
    request_body = QuotaOverrides,
    responses((status = 200, body = TenantQuotas), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody), (status = 429, body = ErrorBody)))]
pub async fn put(
    State(st): State<AppState>,
    _op: OperatorCaller,
    Path(id): Path<String>,
    Json(body): Json<QuotaOverrides>,
) -> ApiResult<axum::Json<TenantQuotas>> {
    body.check()?;
    st.store.tenant_get(&id).await?.ok_or_else(|| ApiError::not_found("tenant"))?;
    st.store.quota_set(&id, &body, st.now_ms()).await?;
    st.limits.forget(&id);
    tracing::info!(tenant_id = %id, quotas = ?body, "tenant quotas set");
    Ok(axum::Json(tenant_quotas(&st, &id).await?))
}

/// A tenant's usage of each quota (operator key only).
#[utoipa::path(get, path = "/api/v1/tenants/{id}/usage", operation_id = "get_tenant_usage", tag = "tenants", params(("id" = String, Path)),
    responses((status = 200, body = Usage), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 429, body = ErrorBody)))]
pub async fn tenant_usage(
    State(st): State<AppState>,
    _op: OperatorCaller,
    Path(id): Path<String>,
) -> ApiResult<axum::Json<Usage>> {
    st.store.tenant_get(&id).await?.ok_or_else(|| ApiError::not_found("tenant"))?;
    Ok(axum::Json(usage_of(&st, &id).await?))
}

/// The calling tenant's usage of each quota, with its limits.
#[utoipa::path(get, path = "/api/v1/usage", operation_id = "get_usage", tag = "tenants",
    responses((status = 200, body = Usage), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 429, body = ErrorBody)))]
pub async fn usage(State(st): State<AppState>, caller: TenantCaller) -> ApiResult<axum::Json<Usage>> {
    Ok(axum::Json(usage_of(&st, &caller.tenant_id).await?))
}
