//! The OpenAPI 3.1 document, generated from the handlers' annotations. The copy
//! checked in at `openapi/openapi.json` is compared with this by a test, and
//! `scripts/spec-check` feeds it to client generators and a linter.
//!
//! [`document`] refines what the derive cannot say, in one place: every instant (a string
//! property named `at` or `…_at`, `times`, the `from`/`to` queries) is `format: date-time`;
//! the JSON values the API passes through are "any JSON value" ([`ANY_JSON`]) or "a JSON
//! object" ([`JSON_OBJECT`]) instead of an empty object; and the signed executor calls
//! name the Standard Webhooks headers as security schemes.

use utoipa::openapi::schema::{AdditionalProperties, KnownFormat, Schema, SchemaFormat, SchemaType, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{RefOr, path::Operation};
use utoipa::{Modify, OpenApi};

use crate::error::ErrorBody;
use crate::routes::*;

struct SecuritySchemes;

/// The executor calls' headers (Standard Webhooks, signed with the app secret), each a
/// security scheme so generators and readers see what to send; an operation requires all four.
const SIGNED: [(&str, &str, &str); 4] = [
    (
        "webhook_signature",
        "webhook-signature",
        "Standard Webhooks signature: `v1,<base64 HMAC-SHA256(key, \"{webhook-id}.{webhook-timestamp}.{body}\")>`, \
         key = the base64-decoded app secret after `whsec_` (during a rotation the previous secret also verifies). \
         Sent with `webhook-id`, `webhook-timestamp` and `sundial-app-id`.",
    ),
    (
        "webhook_id",
        "webhook-id",
        "A fresh unique id per call (e.g. `msg_<random>`); a repeated id is refused as a replay (401 `replayed`).",
    ),
    (
        "webhook_timestamp",
        "webhook-timestamp",
        "Unix seconds when signed; more than 5 minutes off the server's clock is refused (401).",
    ),
    ("sundial_app_id", "sundial-app-id", "The id of the app whose secret signed the call."),
];

impl Modify for SecuritySchemes {
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
        for (scheme, header, description) in SIGNED {
            components.add_security_scheme(
                scheme,
                SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(header, description))),
            );
        }
    }
}

/// Properties that hold any JSON value an executor sent: (schema, property).
pub const ANY_JSON: &[(&str, &str)] = &[
    ("RunOut", "output"),
    ("AttemptOut", "output"),
    ("AttemptOut", "trail"),
    ("ShardOut", "output"),
    ("ResultRequest", "output"),
];

/// Properties that hold a JSON object with any members: (schema, property).
pub const JSON_OBJECT: &[(&str, &str)] = &[
    ("ErrorBody", "details"),
    ("JobInput", "params"),
    ("JobOut", "params"),
    ("RunOut", "params"),
    ("TriggerRequest", "params"),
    ("RegisterRequest", "metadata"),
    ("HeartbeatRequest", "metadata"),
    ("ExecutorOut", "metadata"),
];

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Sundial",
        description = "A distributed job scheduler: jobs fire on time and are delivered to executors, signed webhook endpoints in any language.",
        license(name = "Apache-2.0", identifier = "Apache-2.0")
    ),
    servers((url = "http://127.0.0.1:7700", description = "A local `sundial serve` (its default listen address)")),
    paths(
        tenants::create, tenants::list, tenants::get, quotas::get, quotas::put, quotas::tenant_usage, quotas::usage,
        keys::create, keys::list, keys::delete,
        apps::create, apps::list, apps::get, apps::update, apps::rotate_secret, apps::delete,
        scripts::runtimes, scripts::create, scripts::list, scripts::get, scripts::delete, scripts::create_version, scripts::list_versions,
        scripts::get_version, scripts::diff, scripts::restore,
        jobs::create, jobs::create_batch, jobs::list, jobs::get, jobs::replace, jobs::delete, jobs::start, jobs::stop, jobs::preview, jobs::preview_schedule,
        jobs::trigger,
        runs::list, runs::get, runs::logs, runs::cancel, runs::retry, runs::cancel_chain, chains::get,
        executors::register, executors::heartbeat, executors::deregister, executors::result, executors::logs, executors::run_script, executors::list,
        settings::get, settings::put, settings::nodes,
        health::healthz, health::readyz,
    ),
    components(schemas(
        ErrorBody,
        sundial_core::protocol::Delivery, sundial_core::protocol::ShardRef, sundial_core::protocol::ParentRef, sundial_core::protocol::ParentRun, sundial_core::protocol::ScriptRef,
        sundial_core::protocol::Answer, sundial_core::protocol::AnswerStatus, sundial_core::protocol::AnswerCode,
        sundial_core::protocol::Cancel, sundial_core::types::TriggerKind,
    )),
    modifiers(&SecuritySchemes),
    security(("api_key" = [])),
    tags(
        (name = "tenants", description = "Isolated business lines (operator key)"),
        (name = "keys", description = "A tenant's API keys (admin)"),
        (name = "apps", description = "Executor groups and their signing secrets"),
        (name = "scripts", description = "Uploaded code with immutable versions, run sandboxed (WebAssembly, or an OS sandbox for shell)"),
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
            instants_in_queries(op);
        }
    }
    if let Some(components) = doc.components.as_mut() {
        for (name, schema) in components.schemas.iter_mut() {
            refine_schema(name, schema);
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
    use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
    let mut codes: Vec<&str> = Vec::new();
    if op.request_body.is_some() {
        codes.extend(["400", "413", "415", "422"]);
    }
    // Any endpoint refuses a query parameter it does not list (`unknown_field`).
    codes.push("422");
    // Every call with an API key counts against the key's request rate.
    let with_key = op.security.is_none() && op.responses.responses.contains_key("401");
    if with_key {
        codes.push("429");
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
            "400" => "The body is not JSON, is empty, or has bytes after its JSON value (`invalid_json`)",
            "401" => "No valid API key, or for executor calls no valid signature (`bad_signature`, `replayed`)",
            "403" => "The key's role may not do this",
            "404" => "No such object in this tenant",
            "409" => {
                "The object's state or version does not allow it, or its name is taken (`details.field` is `name`), \
                 or a quota of the tenant would be passed (`quota_exceeded`: `details.quota`, `details.limit`, `details.usage`)"
            }
            "429" => {
                "`quota_exceeded`: this API key's requests per second (`max_api_requests_per_second`) are used up; \
                 retry after `Retry-After` seconds"
            }
            "413" => "The body is over the size limit (`payload_too_large`)",
            "415" => "The body is not declared JSON: send `Content-Type: application/json` (`unsupported_media_type`)",
            "422" => {
                "A field or query parameter is invalid or unknown: `details.field` names it and `details.problem` says why"
            }
            "503" => "Not ready",
            _ => continue,
        };
        if let RefOr::T(r) = response
            && r.description.is_empty()
        {
            r.description = meaning.to_string();
            if code == "429" {
                let seconds = utoipa::openapi::ObjectBuilder::new().schema_type(Type::Integer).build();
                let mut header = utoipa::openapi::header::Header::new(seconds);
                header.description = Some("Seconds to wait before the key's next request is accepted".into());
                r.headers.insert("Retry-After".into(), header);
            }
        }
    }
}

fn object_mut(schema: &mut RefOr<Schema>) -> Option<&mut utoipa::openapi::schema::Object> {
    match schema {
        RefOr::T(Schema::Object(o)) => Some(o),
        _ => None,
    }
}

fn is_string(o: &utoipa::openapi::schema::Object) -> bool {
    match &o.schema_type {
        SchemaType::Type(Type::String) => true,
        SchemaType::Array(types) => types.contains(&Type::String),
        _ => false,
    }
}

fn date_time() -> Option<SchemaFormat> {
    Some(SchemaFormat::KnownFormat(KnownFormat::DateTime))
}

/// Instants, any-JSON values and JSON objects of one component schema (see the module doc).
fn refine_schema(name: &str, schema: &mut RefOr<Schema>) {
    let Some(o) = object_mut(schema) else { return };
    for (prop, value) in o.properties.iter_mut() {
        let listed = |list: &[(&str, &str)]| list.iter().any(|(s, p)| *s == name && *p == prop.as_str());
        let (any_json, json_object) = (listed(ANY_JSON), listed(JSON_OBJECT));
        let Some(p) = object_mut(value) else { continue };
        if any_json {
            let description = p.description.take();
            *p = utoipa::openapi::schema::Object::with_type(SchemaType::AnyValue);
            p.description = description;
        } else if json_object {
            p.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(true)));
        } else if (prop == "at" || prop.ends_with("_at")) && is_string(p) {
            p.format = date_time();
        }
    }
    // `Preview.times`: an array of instants.
    if let Some(RefOr::T(Schema::Array(a))) = o.properties.get_mut("times")
        && let utoipa::openapi::schema::ArrayItems::RefOrSchema(items) = &mut a.items
        && let Some(item) = object_mut(items)
    {
        item.format = date_time();
    }
}

/// The `from`/`to` queries (of `list_runs`) are instants.
fn instants_in_queries(op: &mut Operation) {
    use utoipa::openapi::path::ParameterIn;
    for p in op.parameters.iter_mut().flatten() {
        if p.parameter_in == ParameterIn::Query
            && matches!(p.name.as_str(), "from" | "to")
            && let Some(schema) = p.schema.as_mut().and_then(object_mut)
        {
            schema.format = date_time();
        }
    }
}

pub async fn serve() -> impl axum::response::IntoResponse {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], document())
}
