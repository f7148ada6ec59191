//! Request extractors whose refusals name the field: JSON bodies and query strings.
//!
//! axum's own `Json` and `Query` reject with plain text; these return [`ApiError`]
//! with `details.field` set from the deserializer's path (`serde_path_to_error`).

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::error::ApiError;

/// A JSON body, deserialised with precise errors.
pub struct Json<T>(pub T);

fn strip_position(msg: &str) -> &str {
    msg.find(" at line ").map_or(msg, |i| &msg[..i])
}

fn between_backticks(msg: &str) -> Option<&str> {
    let start = msg.find('`')? + 1;
    let end = start + msg[start..].find('`')?;
    Some(&msg[start..end])
}

fn join(path: &str, leaf: &str) -> String {
    if path.is_empty() || path == "." {
        leaf.to_string()
    } else if path == leaf || path.ends_with(&format!(".{leaf}")) {
        // serde_path_to_error already descended into the unknown key.
        path.to_string()
    } else {
        format!("{path}.{leaf}")
    }
}

/// Turn a serde data error at `path` into a field error.
fn data_error(path: &str, msg: &str) -> ApiError {
    let msg = strip_position(msg);
    if msg.starts_with("missing field") {
        let leaf = between_backticks(msg).unwrap_or("?");
        return ApiError::field(&join(path, leaf), "missing_field", "is required");
    }
    if msg.starts_with("unknown field") {
        let leaf = between_backticks(msg).unwrap_or("?");
        let field = join(path, leaf);
        let expected = msg.split_once(", expected ").map(|(_, e)| e).unwrap_or("");
        return ApiError::field(&field, "unknown_field", format!("is not a known field; expected {expected}"));
    }
    let field = if path.is_empty() || path == "." { "body" } else { path };
    if msg.starts_with("unknown variant") {
        return ApiError::field(field, "unknown_variant", msg.to_string());
    }
    if msg.starts_with("invalid type") {
        return ApiError::field(field, "wrong_type", msg.to_string());
    }
    ApiError::field(field, "invalid_field", msg.to_string())
}

/// Parse a request body. Every request body of this API is a JSON object: anything else that
/// is valid JSON is refused here, before serde, which would read a struct from an array
/// (`[1]` as the first field's value).
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') | None => {}
        Some(_) if serde_json::from_slice::<serde_json::Value>(bytes).is_ok() => {
            return Err(ApiError::field("body", "wrong_type", "must be a JSON object"));
        }
        Some(_) => {}
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let result: Result<T, _> = serde_path_to_error::deserialize(&mut *de);
    let value = result.map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data => data_error(&path, &inner.to_string()),
            serde_json::error::Category::Eof if bytes.iter().all(|b| b.is_ascii_whitespace()) => ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_json",
                "the request body is empty; a JSON object is expected",
            )
            .with_details(json!({"field": "body", "problem": "empty"})),
            _ => ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_json",
                format!("the request body is not valid JSON: {inner}"),
            )
            .with_details(
                json!({"field": "body", "problem": inner.to_string(), "line": inner.line(), "column": inner.column()}),
            ),
        }
    })?;
    // One JSON value, then only whitespace: `{"a":1} x` or `{}{}` is not a JSON body.
    de.end().map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the request body has bytes after its JSON value: {e}"),
        )
        .with_details(
            json!({"field": "body", "problem": "trailing characters", "line": e.line(), "column": e.column()}),
        )
    })?;
    Ok(value)
}

/// A request body must be JSON: a `Content-Type` of `application/json` or any `…+json` type
/// (parameters such as `charset` allowed), or none at all (taken as JSON; RFC 9110 lets the
/// recipient decide). Anything else, `application/x-www-form-urlencoded` (what `curl -d`
/// sends unless told otherwise) included, is refused with 415. Pure.
pub fn require_json(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(axum::http::header::CONTENT_TYPE) else { return Ok(()) };
    let essence = value.to_str().ok().map(|v| v.split(';').next().unwrap_or("").trim().to_ascii_lowercase());
    let ok = essence.as_deref().is_some_and(|m| {
        m == "application/json" || (m.starts_with("application/") && m.ends_with("+json") && !m.contains(' '))
    });
    if ok {
        return Ok(());
    }
    let sent = essence.unwrap_or_else(|| "(not text)".into());
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        format!("the request body must be JSON (`Content-Type: application/json`), not `{sent}`"),
    )
    .with_details(json!({"field": "content-type", "problem": format!("`{sent}` is not application/json")})))
}

/// A non-empty body must be declared JSON ([`require_json`]); an empty one may come with any
/// type (or none): endpoints whose body is optional take it as absent.
pub fn require_json_body(headers: &axum::http::HeaderMap, body: &[u8]) -> Result<(), ApiError> {
    if body.iter().all(|b| b.is_ascii_whitespace()) { Ok(()) } else { require_json(headers) }
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let headers = req.headers().clone();
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    "the request body is over the size limit",
                )
                .with_details(json!({"field": "body", "problem": "too large"}))
            } else {
                ApiError::new(rejection.status(), "bad_request", rejection.body_text())
            }
        })?;
        require_json_body(&headers, &bytes)?;
        parse_json(&bytes).map(Json)
    }
}

/// A query string, deserialised with precise errors.
pub struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let q = parts.uri.query().unwrap_or("");
        let de = serde_urlencoded::Deserializer::new(form_urlencoded_parse(q));
        let result: Result<T, _> = serde_path_to_error::deserialize(de);
        result.map(Query).map_err(|e| {
            let path = e.path().to_string();
            let msg = e.into_inner().to_string();
            let mut err = data_error(&path, &msg);
            if err.details.get("field").and_then(|f| f.as_str()) == Some("body") {
                err = ApiError::field("query", "invalid_field", msg);
            }
            err
        })
    }
}

fn form_urlencoded_parse(q: &str) -> form_urlencoded::Parse<'_> {
    form_urlencoded::parse(q.as_bytes())
}
