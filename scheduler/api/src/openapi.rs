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
    let mut s = serde_json::to_string_pretty(&doc).expect("OpenAPI serialises");
    s.push('\n');
    s
}

pub async fn serve() -> impl axum::response::IntoResponse {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], document())
}
