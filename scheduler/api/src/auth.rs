//! `Authorization: Bearer <key>`: who is calling, for which tenant, with which role.
//!
//! 401 without a valid key; 403 for a role that may not act; objects of other
//! tenants are never found (404), because every store query is tenant-scoped.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use sundial_core::keys::hash_api_key;
use sundial_core::types::Role;
use sundial_store::ApiKey;

use crate::error::ApiError;
use crate::state::AppState;

/// An authenticated caller.
#[derive(Debug, Clone)]
pub struct Caller {
    pub key: ApiKey,
}

/// An authenticated caller acting inside a tenant.
#[derive(Debug, Clone)]
pub struct TenantCaller {
    pub tenant_id: String,
    pub role: Role,
    pub key_id: String,
}

impl TenantCaller {
    /// Editors and admins may change objects; viewers only read.
    pub fn require_editor(&self) -> Result<(), ApiError> {
        if self.role.can_edit() {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!("a `{}` key may only read; this needs an editor or admin key", self.role)))
        }
    }
    pub fn require_admin(&self) -> Result<(), ApiError> {
        if self.role == Role::Admin {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!("a `{}` key cannot do this; it needs an admin key", self.role)))
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(AUTHORIZATION)
            .ok_or_else(|| ApiError::unauthorized("missing `Authorization: Bearer <api key>` header"))?;
        let token = header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ApiError::unauthorized("the Authorization header must be `Bearer <api key>`"))?;
        let key = state
            .store
            .api_key_by_hash(&hash_api_key(token))
            .await?
            .ok_or_else(|| ApiError::unauthorized("unknown or revoked API key"))?;
        let span = tracing::Span::current();
        span.record("key_id", key.id.as_str());
        if let Some(t) = &key.tenant_id {
            span.record("tenant_id", t.as_str());
        }
        // Every request with a key counts against the key's rate (health endpoints and
        // signed executor calls carry no key and are not counted).
        let rate = match &key.tenant_id {
            Some(t) => state.quotas_of(t).await?.max_api_requests_per_second,
            None => state.limits.defaults().max_api_requests_per_second,
        };
        state.limits.take(&key.id, rate, state.now_ms())?;
        Ok(Caller { key })
    }
}

impl FromRequestParts<AppState> for TenantCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let Caller { key } = Caller::from_request_parts(parts, state).await?;
        match key.tenant_id {
            Some(tenant_id) => Ok(TenantCaller { tenant_id, role: key.role, key_id: key.id }),
            None => Err(ApiError::forbidden(
                "operator keys manage tenants only; use a key of the tenant (POST /api/v1/tenants returns its first admin key)",
            )),
        }
    }
}

/// An operator (bootstrap) key: manages tenants.
#[derive(Debug, Clone)]
pub struct OperatorCaller {
    pub key_id: String,
}

impl FromRequestParts<AppState> for OperatorCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let Caller { key } = Caller::from_request_parts(parts, state).await?;
        if key.role == Role::Operator {
            Ok(OperatorCaller { key_id: key.id })
        } else {
            Err(ApiError::forbidden("only the operator key manages tenants"))
        }
    }
}
