//! The API's error: JSON `{code, message, details}` with a status. 4xx carry the
//! caller's detail (the field and the problem); 5xx hide internals and log the cause.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};
use sundial_core::FieldError;
use sundial_store::{DbFailure, StoreError};

/// The body of every error response.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// Stable machine code, e.g. `invalid_field`, `not_found`.
    pub code: String,
    /// Human explanation.
    pub message: String,
    /// Structured detail; for a refused field: `{"field": "schedule.expression", "problem": "..."}`.
    #[schema(value_type = Object)]
    pub details: Value,
}

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub details: Value,
    /// Seconds for a `Retry-After` header (429).
    pub retry_after_s: Option<u64>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into(), details: json!({}), retry_after_s: None }
    }
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }
    /// 422: a field's value was refused.
    pub fn field(field: &str, code: &'static str, problem: impl Into<String>) -> Self {
        let problem = problem.into();
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code,
            message: format!("{field}: {problem}"),
            details: json!({"field": field, "problem": problem}),
            retry_after_s: None,
        }
    }
    /// Add `details.field` (which part of the request a refusal is about).
    pub fn with_field(mut self, field: &str) -> Self {
        if let Value::Object(m) = &mut self.details {
            m.insert("field".into(), Value::from(field));
        }
        self
    }
    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", format!("{what} not found"))
    }
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }
    /// A quota refused the request: `quota_exceeded` naming the quota, its limit and the
    /// usage. Rates (API requests per second) are 429; caps (jobs, fires per second, scripts,
    /// bytes, handlers) are 409: the request is well-formed and may succeed later, once the
    /// tenant frees room or the operator raises the limit, but repeating it as is will not.
    pub fn quota(e: &sundial_core::quota::Exceeded) -> Self {
        let status = match e.quota {
            sundial_core::quota::Quota::MaxApiRequestsPerSecond => StatusCode::TOO_MANY_REQUESTS,
            _ => StatusCode::CONFLICT,
        };
        Self::new(status, "quota_exceeded", e.to_string()).with_details(json!({
            "quota": e.quota,
            "limit": e.limit,
            "usage": amount(e.usage),
            "requested": amount(e.requested),
        }))
    }
    /// A node limit on one request (not a tenant's quota) refused it: `quota_exceeded` with
    /// the limit's name, the limit and what the request carried.
    pub fn limit(status: StatusCode, quota: &str, limit: i64, usage: i64, message: impl Into<String>) -> Self {
        Self::new(status, "quota_exceeded", message).with_details(json!({
            "quota": quota,
            "limit": limit,
            "usage": usage,
        }))
    }
    pub fn internal(cause: &dyn std::error::Error) -> Self {
        let mut chain = cause.to_string();
        let mut src = cause.source();
        while let Some(s) = src {
            chain.push_str(": ");
            chain.push_str(&s.to_string());
            src = s.source();
        }
        tracing::error!(error = %chain, "internal error");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "internal error; see the server log")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody { code: self.code.to_string(), message: self.message, details: self.details };
        let mut resp = (self.status, Json(body)).into_response();
        if let Some(s) = self.retry_after_s {
            resp.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(s));
        }
        resp
    }
}

impl From<FieldError> for ApiError {
    fn from(e: FieldError) -> Self {
        let code = match e.code {
            "missing_field" => "missing_field",
            "unknown_variant" => "unknown_variant",
            "invalid_cron" => "invalid_cron",
            "wrong_type" => "wrong_type",
            _ => "invalid_field",
        };
        ApiError::field(&e.field, code, e.message)
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            // A name taken in the tenant (`app_name`, `job_name`, …) names the field.
            StoreError::Conflict { what, message } => match what.strip_suffix("_name") {
                Some(_) => {
                    ApiError::conflict("conflict", message).with_details(json!({"conflict": what, "field": "name"}))
                }
                None => ApiError::conflict("conflict", message).with_details(json!({"conflict": what})),
            },
            StoreError::Stale(what) => ApiError::conflict(
                "stale",
                format!("the {what} was changed by another request meanwhile; reload it and try again"),
            ),
            StoreError::Refused { field, message } => ApiError::field(&field, "invalid_field", message),
            StoreError::QuotaExceeded(e) => ApiError::quota(&e),
            StoreError::Database { kind: DbFailure::Unavailable, .. } => {
                tracing::warn!(error = %e, "database unavailable");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "the database is unreachable; retry later",
                )
            }
            other => ApiError::internal(&other),
        }
    }
}

/// A whole number as an integer, a fraction as a float (fires per second).
fn amount(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9e15 { json!(v as i64) } else { json!((v * 1000.0).round() / 1000.0) }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use sundial_store::{DbFailure, StoreError};

    use super::ApiError;

    #[test]
    fn an_unreachable_database_is_503_and_any_other_database_failure_500() {
        let db = |kind| StoreError::Database { kind, message: "x".into() };
        let e = ApiError::from(db(DbFailure::Unavailable));
        assert_eq!((e.status, e.code), (StatusCode::SERVICE_UNAVAILABLE, "unavailable"));
        for kind in [DbFailure::Deadlock, DbFailure::LockTimeout, DbFailure::Other] {
            let e = ApiError::from(db(kind));
            assert_eq!((e.status, e.code), (StatusCode::INTERNAL_SERVER_ERROR, "internal"), "{kind:?}");
        }
    }
}
