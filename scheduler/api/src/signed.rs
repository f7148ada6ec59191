//! Executor → scheduler calls: authenticated by the app's Standard Webhooks
//! signature instead of an API key. The app is named by the `sundial-app-id`
//! header; a `webhook-id` already seen (by any node: seen ids live in the store)
//! is a replay and refused.

use axum::http::{HeaderMap, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::json;
use sundial_core::signing::{self, SigningKey};
use sundial_store::App;

use crate::error::ApiError;
use crate::extract::parse_json;
use crate::state::AppState;

pub const HEADER_APP_ID: &str = "sundial-app-id";

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

fn bad_signature(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, "bad_signature", message)
}

/// Verify a signed executor call and parse its body. Nothing is written but the
/// seen `webhook-id`, and only once the signature is valid.
pub async fn verify<T: DeserializeOwned>(
    st: &AppState,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(App, T), ApiError> {
    let app_id =
        header(headers, HEADER_APP_ID).ok_or_else(|| bad_signature(format!("missing header `{HEADER_APP_ID}`")))?;
    let app = st.store.app_by_id(app_id).await?.ok_or_else(|| bad_signature("unknown app"))?;
    let now = st.now_ms();
    let keys: Vec<SigningKey> = app.valid_secrets(now).into_iter().filter_map(|s| SigningKey::parse(s).ok()).collect();
    signing::verify(
        &keys,
        header(headers, signing::HEADER_ID),
        header(headers, signing::HEADER_TIMESTAMP),
        header(headers, signing::HEADER_SIGNATURE),
        body,
        now.div_euclid(1000),
    )
    .map_err(|e| bad_signature(e.to_string()))?;
    crate::extract::require_json_body(headers, body)?;
    let parsed: T = parse_json(body)?;
    let msg_id = header(headers, signing::HEADER_ID).unwrap_or_default();
    if !st.store.webhook_seen(&app.id, msg_id, now).await? {
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "replayed", "this webhook-id was already used")
            .with_details(json!({"field": "webhook-id"})));
    }
    Ok((app, parsed))
}
