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
    let every = &doc["components"]["schemas"]["ScheduleSpec"]["properties"]["every_ms"];
    assert_eq!((every["minimum"].clone(), every["maximum"].clone()), (MIN_EVERY_MS.into(), MAX_EVERY_MS.into()));
}

crate::on_both_databases!(served_at_openapi_json);

async fn served_at_openapi_json(app: &TestApp) {
    let resp = app.http.get(format!("{}/openapi.json", app.base)).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.text().await.unwrap(), sundial_api::openapi::document());
}
