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
    components(schemas(ErrorBody)),
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
    let mut s = serde_json::to_string_pretty(&doc).expect("OpenAPI serialises");
    s.push('\n');
    s
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
