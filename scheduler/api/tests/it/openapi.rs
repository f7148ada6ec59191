//! The checked-in OpenAPI document matches the code, and the server serves it.

use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::*;

const CHECKED_IN: &str = "../../openapi/openapi.json";

#[test]
fn checked_in_openapi_matches_the_code() {
    let generated = sundial_api::openapi::document();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(CHECKED_IN);
    if std::env::var_os("SUNDIAL_UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "openapi/openapi.json differs from what the code generates.\n\
         Regenerate it with:  cargo run -q -p sundial -- openapi > openapi/openapi.json\n\
         (or: SUNDIAL_UPDATE_OPENAPI=1 cargo test -p sundial-api --test it openapi)"
    );
}

#[test]
fn the_document_describes_every_route_error_and_the_auth_scheme() {
    let doc: serde_json::Value = serde_json::from_str(&sundial_api::openapi::document()).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["components"]["securitySchemes"]["api_key"]["scheme"], "bearer");
    for path in [
        "/api/v1/apps",
        "/api/v1/jobs",
        "/api/v1/jobs/{id}/preview",
        "/api/v1/schedules/preview",
        "/api/v1/runs",
        "/api/v1/tenants",
        "/api/v1/keys",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} documented");
    }
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
    assert_eq!(
        doc["paths"]["/api/v1/jobs"]["post"]["responses"]["422"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/ErrorBody"
    );
    assert!(doc["components"]["schemas"]["JobInput"]["properties"]["schedule"].is_object());
    // What the shared extractors refuse is documented wherever they run, and every error
    // response says what it means.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            let has = |code: &str| responses.contains_key(code);
            if op.get("requestBody").is_some() {
                assert!(has("400") && has("413") && has("422"), "{method} {path}: body errors");
            }
            let query = op["parameters"].as_array().is_some_and(|ps| ps.iter().any(|p| p["in"] == "query"));
            if query {
                assert!(has("422"), "{method} {path}: query errors");
            }
            for (code, r) in responses {
                if code.starts_with('4') || code.starts_with('5') {
                    assert_ne!(r["description"], "", "{method} {path} {code}: described");
                }
            }
        }
    }
}

/// The spec's bounds are literals (utoipa's attributes take no constants): they must be the
/// constants the code enforces.
/// The executor protocol is part of the document: a delivery and a cancel under OpenAPI 3.1
/// `webhooks`, with their signed headers, typed bodies and answers, every `$ref` resolving.
#[test]
fn the_spec_carries_the_executor_protocol() {
    let doc: Value = serde_json::from_str(&sundial_api::openapi::document()).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "webhooks need OpenAPI 3.1");
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let delivery = &doc["webhooks"]["delivery"]["post"];
    let cancel = &doc["webhooks"]["cancel"]["post"];
    let names = |op: &Value| -> Vec<String> {
        op["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap().to_string()).collect()
    };
    for h in ["webhook-id", "webhook-timestamp", "webhook-signature", "sundial-app-id"] {
        assert!(names(delivery).contains(&h.to_string()) && names(cancel).contains(&h.to_string()), "{h}");
    }
    for h in ["sundial-run-id", "sundial-attempt", "sundial-scheduled-at", "sundial-shard"] {
        assert!(names(delivery).contains(&h.to_string()), "{h}");
    }
    let body_ref =
        |op: &Value| op["requestBody"]["content"]["application/json"]["schema"]["$ref"].as_str().unwrap().to_string();
    assert_eq!(body_ref(delivery), "#/components/schemas/Delivery");
    assert_eq!(body_ref(cancel), "#/components/schemas/Cancel");
    for code in ["200", "202", "410", "503"] {
        assert!(delivery["responses"][code].is_object(), "answer {code} documented");
    }
    // Every $ref in the document resolves.
    fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r);
                }
                m.values().for_each(|x| refs(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&doc, &mut all);
    for r in all {
        let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("unexpected ref {r}"));
        assert!(schemas.contains_key(name), "dangling {r}");
    }
}

#[test]
fn the_documented_bounds_are_the_enforced_ones() {
    use sundial_core::schedule::{MAX_EVERY_MS, MAX_PREVIEW, MIN_EVERY_MS};
    let doc: serde_json::Value = serde_json::from_str(&sundial_api::openapi::document()).unwrap();
    for path in ["/api/v1/runs", "/api/v1/jobs", "/api/v1/apps", "/api/v1/keys", "/api/v1/tenants"] {
        let limit = doc["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "limit")
            .unwrap_or_else(|| panic!("{path}: limit"));
        assert_eq!(limit["schema"]["maximum"], sundial_api::wire::MAX_LIMIT, "{path}");
    }
    let count = &doc["components"]["schemas"]["SchedulePreviewRequest"]["properties"]["count"];
    assert_eq!(count["maximum"], MAX_PREVIEW as i64);
    let every = &doc["components"]["schemas"]["FixedRateSchedule"]["properties"]["every_ms"];
    assert_eq!((every["minimum"].clone(), every["maximum"].clone()), (MIN_EVERY_MS.into(), MAX_EVERY_MS.into()));
}

/// operationIds become method names in every generated client: unique, snake_case, and
/// these exact names (renaming one breaks every client; add new ones here).
#[test]
fn operation_ids_are_unique_and_stable_and_every_operation_is_summarised() {
    let doc: serde_json::Value = serde_json::from_str(&sundial_api::openapi::document()).unwrap();
    let mut ids = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path}: operationId"));
            assert!(id.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{id}: snake_case");
            assert!(op["summary"].as_str().is_some_and(|s| !s.is_empty()), "{method} {path}: summary");
            ids.push(id.to_string());
        }
    }
    ids.sort();
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(ids, unique, "operationIds are unique");
    let stable = [
        "append_run_logs",
        "cancel_chain",
        "cancel_run",
        "create_app",
        "create_job",
        "create_jobs",
        "create_key",
        "create_script",
        "create_script_version",
        "create_tenant",
        "delete_app",
        "delete_job",
        "delete_key",
        "delete_script",
        "deregister_executor",
        "diff_script_versions",
        "get_app",
        "get_chain",
        "get_job",
        "get_run",
        "get_run_script",
        "get_scheduling_settings",
        "get_script",
        "get_script_version",
        "get_tenant",
        "get_tenant_quotas",
        "get_tenant_usage",
        "get_usage",
        "healthz",
        "heartbeat_executor",
        "list_app_executors",
        "list_apps",
        "list_jobs",
        "list_keys",
        "list_nodes",
        "list_run_logs",
        "list_runs",
        "list_runtimes",
        "list_script_versions",
        "list_scripts",
        "list_tenants",
        "preview_job",
        "preview_schedule",
        "readyz",
        "register_executor",
        "replace_job",
        "report_run_result",
        "restore_script_version",
        "retry_run",
        "rotate_app_secret",
        "set_scheduling_settings",
        "set_tenant_quotas",
        "start_job",
        "stop_job",
        "trigger_job",
        "update_app",
    ];
    assert_eq!(ids, stable);
    assert_eq!(doc["servers"][0]["url"], "http://127.0.0.1:7700");
}

/// The types say what the server does: instants are date-times, a schedule is one object
/// per kind, params are an object, passed-through JSON is any value, and the signed calls
/// name their headers.
#[test]
fn the_document_types_are_as_precise_as_the_api() {
    let doc: serde_json::Value = serde_json::from_str(&sundial_api::openapi::document()).unwrap();
    let schemas = &doc["components"]["schemas"];
    for (schema, prop) in [
        ("JobOut", "created_at"),
        ("RunOut", "finished_at"),
        ("LogLine", "at"),
        ("AppOut", "previous_secret_expires_at"),
    ] {
        assert_eq!(schemas[schema]["properties"][prop]["format"], "date-time", "{schema}.{prop}");
    }
    assert_eq!(schemas["Preview"]["properties"]["times"]["items"]["format"], "date-time");
    let from = doc["paths"]["/api/v1/runs"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "from")
        .unwrap();
    assert_eq!(from["schema"]["format"], "date-time");
    // Every string property named like an instant is one.
    for (name, schema) in schemas.as_object().unwrap() {
        for (prop, p) in schema["properties"].as_object().into_iter().flatten() {
            if (prop == "at" || prop.ends_with("_at")) && p.get("type").is_some() {
                assert_eq!(p["format"], "date-time", "{name}.{prop}");
            }
        }
    }
    let spec = &schemas["ScheduleSpec"];
    assert_eq!(spec["discriminator"]["propertyName"], "kind");
    assert_eq!(spec["oneOf"].as_array().unwrap().len(), 4);
    assert_eq!(schemas["CronSchedule"]["required"], serde_json::json!(["kind", "expression"]));
    assert_eq!(schemas["OnceSchedule"]["properties"]["kind"]["enum"], serde_json::json!(["once"]));
    assert_eq!(schemas["ManualSchedule"]["properties"].as_object().unwrap().len(), 1, "manual has only `kind`");
    for (schema, prop) in sundial_api::openapi::JSON_OBJECT {
        let p = &schemas[schema]["properties"][prop];
        assert_eq!(p["additionalProperties"], true, "{schema}.{prop}: {p}");
        assert!(p["type"] == "object" || p["type"] == serde_json::json!(["object", "null"]), "{schema}.{prop}: {p}");
    }
    for (schema, prop) in sundial_api::openapi::ANY_JSON {
        let p = &schemas[schema]["properties"][prop];
        assert!(p.is_object() && p.get("type").is_none() && p.get("$ref").is_none(), "{schema}.{prop}: {p}");
    }
    let schemes = &doc["components"]["securitySchemes"];
    for (scheme, header) in [
        ("webhook_signature", "webhook-signature"),
        ("webhook_id", "webhook-id"),
        ("webhook_timestamp", "webhook-timestamp"),
        ("sundial_app_id", "sundial-app-id"),
    ] {
        assert_eq!(
            (schemes[scheme]["type"].as_str(), schemes[scheme]["in"].as_str()),
            (Some("apiKey"), Some("header"))
        );
        assert_eq!(schemes[scheme]["name"], header);
    }
    for (path, method) in [
        ("/api/v1/executors/register", "post"),
        ("/api/v1/executors/heartbeat", "post"),
        ("/api/v1/executors/deregister", "post"),
        ("/api/v1/runs/{id}/result", "post"),
        ("/api/v1/runs/{id}/logs", "post"),
    ] {
        let security = &doc["paths"][path][method]["security"];
        assert_eq!(security.as_array().unwrap().len(), 1, "{path}: one requirement, all four headers");
        let names: Vec<&String> = security[0].as_object().unwrap().keys().collect();
        assert_eq!(names.len(), 4, "{path}: {security}");
    }
}

crate::on_both_databases!(served_at_openapi_json);

async fn served_at_openapi_json(app: &TestApp) {
    let resp = app.http.get(format!("{}/openapi.json", app.base)).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.text().await.unwrap(), sundial_api::openapi::document());
}
