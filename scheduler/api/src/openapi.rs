//! The OpenAPI 3.1 document, generated from the handlers' annotations. The copy
//! checked in at `openapi/openapi.json` is compared with this by a test.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::error::ErrorBody;
use crate::routes::*;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("A Sundial API key: `Authorization: Bearer sk_…`"))
                    .build(),
            ),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Sundial",
        description = "A distributed job scheduler: jobs fire on time and are delivered to executors, signed webhook endpoints in any language.",
        license(name = "Apache-2.0")
    ),
    paths(
        tenants::create, tenants::list, tenants::get,
        keys::create, keys::list, keys::delete,
        apps::create, apps::list, apps::get, apps::update, apps::rotate_secret, apps::delete,
        jobs::create, jobs::list, jobs::get, jobs::replace, jobs::delete, jobs::start, jobs::stop, jobs::preview, jobs::preview_schedule,
        jobs::trigger,
        runs::list, runs::get, runs::cancel, runs::retry,
        executors::register, executors::heartbeat, executors::deregister, executors::result, executors::logs, executors::list,
        settings::get, settings::put, settings::nodes,
        health::healthz, health::readyz,
    ),
    components(schemas(
        ErrorBody,
        sundial_core::protocol::Delivery, sundial_core::protocol::ShardRef, sundial_core::protocol::ParentRef,
        sundial_core::protocol::Answer, sundial_core::protocol::AnswerStatus, sundial_core::protocol::AnswerCode,
        sundial_core::protocol::Cancel, sundial_core::types::TriggerKind,
    )),
    modifiers(&BearerAuth),
    security(("api_key" = [])),
    tags(
        (name = "tenants", description = "Isolated business lines (operator key)"),
        (name = "keys", description = "A tenant's API keys (admin)"),
        (name = "apps", description = "Executor groups and their signing secrets"),
        (name = "jobs", description = "What runs, when and how"),
        (name = "runs", description = "Fires of jobs and their outcome"),
        (name = "executors", description = "Executor calls, signed with the app secret (Standard Webhooks) instead of an API key"),
        (name = "settings", description = "Operator switches and the cluster's nodes"),
        (name = "health", description = "Liveness and readiness"),
    )
)]
pub struct ApiDoc;

/// The document as pretty JSON with a trailing newline: the form checked in.
pub fn document() -> String {
    let mut doc = ApiDoc::openapi();
    // Health endpoints need no key.
    for path in ["/healthz", "/readyz"] {
        if let Some(item) = doc.paths.paths.get_mut(path)
            && let Some(op) = item.get.as_mut()
        {
            op.security = Some(vec![utoipa::openapi::security::SecurityRequirement::default()]);
        }
    }
    for item in doc.paths.paths.values_mut() {
        let ops = [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch];
        for op in ops.into_iter().flatten() {
            document_extractor_errors(op);
        }
    }
    let mut value = serde_json::to_value(&doc).expect("OpenAPI serialises");
    add_webhooks(&mut value);
    let mut s = serde_json::to_string_pretty(&value).expect("OpenAPI serialises");
    s.push('\n');
    s
}

/// The calls Sundial makes to executors, as OpenAPI 3.1 `webhooks` (utoipa 5 has no
/// derive for them): a delivery and a cancel, their headers, bodies and answers, all from
/// the typed messages of `sundial_core::protocol` (registered as components above).
fn add_webhooks(doc: &mut serde_json::Value) {
    use serde_json::json;
    use sundial_core::protocol::headers;
    use sundial_core::signing;
    let header = |name: &str, required: bool, description: &str, example: serde_json::Value| {
        json!({"name": name, "in": "header", "required": required, "description": description,
            "schema": {"type": "string"}, "example": example})
    };
    let signed = vec![
        header(
            signing::HEADER_ID,
            true,
            "Message id: the same on every redelivery of one attempt (`msg_<run>_<shard>_<attempt>`); act once per id",
            json!("msg_run_01_0_1"),
        ),
        header(
            signing::HEADER_TIMESTAMP,
            true,
            "Unix seconds when it was signed; refuse it more than 5 minutes off",
            json!("1764028800"),
        ),
        header(
            signing::HEADER_SIGNATURE,
            true,
            "Standard Webhooks signature(s), `v1,<base64 HMAC-SHA256 of id.timestamp.body>` with the app secret, space-separated while a rotated secret is in its grace period",
            json!("v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="),
        ),
        header(headers::APP_ID, true, "The app whose secret signed it", json!("app_01")),
        header(
            headers::NODE,
            false,
            "The Sundial node that sent it (a redelivery after a node died comes from another node)",
            json!("node_01"),
        ),
    ];
    let mut delivery_headers = signed.clone();
    delivery_headers.extend([
        header(headers::RUN_ID, true, "The run", json!("run_01")),
        header(headers::ATTEMPT, true, "The attempt (a shard's own attempt for a sharded run), from 1", json!("1")),
        header(
            headers::SCHEDULED_AT,
            true,
            "The instant the run is for (RFC 3339, UTC)",
            json!("2026-11-25T02:30:00.000Z"),
        ),
        header(headers::SHARD, true, "`index/total` (`0/1` for an unsharded run)", json!("0/1")),
    ]);
    let schema = |name: &str| json!({"$ref": format!("#/components/schemas/{name}")});
    let webhooks = json!({
        "delivery": {"post": {
            "operationId": "deliver_run",
            "summary": "A run delivered to an executor",
            "description": "Sundial POSTs each attempt of a run to an executor of the job's app, signed with the app secret (Standard Webhooks). Verify the signature, refuse timestamps more than 5 minutes off, and act once per `webhook-id` (a redelivery of the same attempt after a node died carries the same id). A retry is a new attempt with a new id: an executor whose work must not run twice acts once per `sundial-run-id` (and shard). Answers are read strictly, at most `max_answer_bytes` (1 MiB by default); redirects are never followed.",
            "tags": ["executors"],
            "parameters": delivery_headers,
            "requestBody": {"required": true, "content": {"application/json": {"schema": schema("Delivery")}}},
            "responses": {
                "200": {"description": "Done: the result. Any other 2xx (but 202) is read the same way; an empty body is success with no output. A body that is not JSON, not an object or not this shape fails the attempt.",
                    "content": {"application/json": {"schema": schema("Answer")}}},
                "202": {"description": "Accepted: the result comes later through `POST /api/v1/runs/{id}/result` (signed)"},
                "410": {"description": "`{\"code\": \"handler_retired\"}`: this executor no longer serves the handler (when every executor asked says so, the job is stopped)",
                    "content": {"application/json": {"schema": schema("AnswerCode")}}},
                "503": {"description": "`{\"code\": \"executor_offline\"}`: going offline; the next executor is tried",
                    "content": {"application/json": {"schema": schema("AnswerCode")}}},
                "default": {"description": "Anything else (a redirect, another status, an answer over the limit, no answer within the job's `timeout_ms`) fails the attempt; the failure policy decides on a retry"}
            }
        }},
        "cancel": {"post": {
            "operationId": "cancel_attempt",
            "summary": "A best-effort cancel of an attempt",
            "description": "`POST {executor URL}/cancel`, signed like a delivery, after an attempt timed out, was cancelled through the API, was covered by a newer run (`cover_early`), or its sharded run failed. Sent in the background by the node that recorded the attempt's end: Sundial does not wait for it and ignores the answer.",
            "tags": ["executors"],
            "parameters": signed,
            "requestBody": {"required": true, "content": {"application/json": {"schema": schema("Cancel")}}},
            "responses": {"2XX": {"description": "Received"}, "default": {"description": "Ignored (best effort)"}}
        }}
    });
    doc.as_object_mut().expect("an object").insert("webhooks".into(), webhooks);
}

/// What the shared extractors refuse, the same on every route (`extract.rs`, the body
/// limit): documented on each operation that reads a body or a query string, so no
/// handler's annotation can forget one, and every error response says what it means.
fn document_extractor_errors(op: &mut utoipa::openapi::path::Operation) {
    use utoipa::openapi::path::ParameterIn;
    use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
    let mut codes: Vec<&str> = Vec::new();
    if op.request_body.is_some() {
        codes.extend(["400", "413", "422"]);
    }
    if op.parameters.iter().flatten().any(|p| p.parameter_in == ParameterIn::Query) {
        codes.push("422");
    }
    for code in codes {
        op.responses.responses.entry(code.to_string()).or_insert_with(|| {
            RefOr::T(
                ResponseBuilder::new()
                    .content(
                        "application/json",
                        ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build(),
                    )
                    .build(),
            )
        });
    }
    for (code, response) in op.responses.responses.iter_mut() {
        let meaning = match code.as_str() {
            "400" => "The body is not JSON, or is empty (`invalid_json`)",
            "401" => "No valid API key, or for executor calls no valid signature (`bad_signature`, `replayed`)",
            "403" => "The key's role may not do this",
            "404" => "No such object in this tenant",
            "409" => "The object's state or version does not allow it",
            "413" => "The body is over the size limit (`payload_too_large`)",
            "422" => "A field is invalid: `details.field` names it and `details.problem` says why",
            "503" => "Not ready",
            _ => continue,
        };
        if let RefOr::T(r) = response
            && r.description.is_empty()
        {
            r.description = meaning.to_string();
        }
    }
}

pub async fn serve() -> impl axum::response::IntoResponse {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], document())
}
