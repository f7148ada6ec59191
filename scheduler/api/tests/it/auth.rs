//! 401 without a valid key, 403 for a role that may not act, 404 for another tenant's object.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::*;

crate::on_both_databases!(
    missing_or_unknown_keys_are_401,
    operator_keys_manage_tenants_only,
    roles_limit_what_a_key_may_do,
    another_tenants_objects_are_404,
    revoked_keys_stop_working_and_the_last_admin_stays,
);

async fn missing_or_unknown_keys_are_401(app: &TestApp) {
    let none = app.call("GET", "/api/v1/apps", None, None).await;
    assert_error(&none, StatusCode::UNAUTHORIZED, "unauthorized", None);
    assert_error(&app.get("/api/v1/apps", "sk_not_a_key").await, StatusCode::UNAUTHORIZED, "unauthorized", None);
    let basic =
        app.http.get(format!("{}/api/v1/apps", app.base)).header("authorization", "Basic abc").send().await.unwrap();
    let status = basic.status();
    assert_error(&(status, basic.json().await.unwrap()), StatusCode::UNAUTHORIZED, "unauthorized", None);
}

async fn operator_keys_manage_tenants_only(app: &TestApp) {
    let t = app.tenant("acme").await;
    let (s, v) = app.get("/api/v1/tenants", &app.operator_key).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["items"][0]["name"], "acme");
    let (s, v) = app.get(&format!("/api/v1/tenants/{}", t.id), &app.operator_key).await;
    assert_eq!((s, v["name"].as_str()), (StatusCode::OK, Some("acme")));
    assert_error(&app.get("/api/v1/apps", &app.operator_key).await, StatusCode::FORBIDDEN, "forbidden", None);
    assert_error(
        &app.post("/api/v1/tenants", &t.admin, json!({"name": "other"})).await,
        StatusCode::FORBIDDEN,
        "forbidden",
        None,
    );
    assert_error(
        &app.post("/api/v1/tenants", &app.operator_key, json!({"name": "acme"})).await,
        StatusCode::CONFLICT,
        "conflict",
        None,
    );
}

async fn roles_limit_what_a_key_may_do(app: &TestApp) {
    let t = app.tenant("acme").await;
    let editor = app.key(&t.admin, "editor").await;
    let viewer = app.key(&t.admin, "viewer").await;
    // Apps hold signing secrets: admins create and rotate them.
    assert_error(
        &app.post("/api/v1/apps", &editor, json!({"name": "billing"})).await,
        StatusCode::FORBIDDEN,
        "forbidden",
        None,
    );
    let a = app.app(&t.admin, "billing").await;
    let (s, _) =
        app.patch(&format!("/api/v1/apps/{}", a["id"].as_str().unwrap()), &editor, json!({"description": "x"})).await;
    assert_eq!(s, StatusCode::OK);
    // Editors write jobs; viewers only read.
    let job = app.job(&editor, cron_job("nightly", "billing")).await;
    assert_error(
        &app.post("/api/v1/jobs", &viewer, cron_job("n2", "billing")).await,
        StatusCode::FORBIDDEN,
        "forbidden",
        None,
    );
    let id = job["id"].as_str().unwrap();
    assert_error(
        &app.post(&format!("/api/v1/jobs/{id}/stop"), &viewer, json!({})).await,
        StatusCode::FORBIDDEN,
        "forbidden",
        None,
    );
    assert_eq!(app.get(&format!("/api/v1/jobs/{id}"), &viewer).await.0, StatusCode::OK);
    assert_eq!(app.get("/api/v1/runs", &viewer).await.0, StatusCode::OK);
    // Only admins manage keys.
    assert_error(
        &app.post("/api/v1/keys", &editor, json!({"name": "x", "role": "viewer"})).await,
        StatusCode::FORBIDDEN,
        "forbidden",
        None,
    );
    assert_error(&app.get("/api/v1/keys", &viewer).await, StatusCode::FORBIDDEN, "forbidden", None);
    assert_eq!(app.job_count(&viewer).await, 1, "refused writes wrote nothing");
}

async fn another_tenants_objects_are_404(app: &TestApp) {
    let a = app.tenant("a").await;
    let b = app.tenant("b").await;
    let app_a = app.app(&a.admin, "billing").await;
    let job_a = app.job(&a.admin, cron_job("nightly", "billing")).await;
    let (app_id, job_id) = (app_a["id"].as_str().unwrap(), job_a["id"].as_str().unwrap());
    for path in [
        format!("/api/v1/apps/{app_id}"),
        "/api/v1/apps/billing".to_string(),
        format!("/api/v1/jobs/{job_id}"),
        format!("/api/v1/jobs/{job_id}/preview"),
    ] {
        assert_error(&app.get(&path, &b.admin).await, StatusCode::NOT_FOUND, "not_found", None);
    }
    assert_error(
        &app.delete(&format!("/api/v1/jobs/{job_id}"), &b.admin).await,
        StatusCode::NOT_FOUND,
        "not_found",
        None,
    );
    assert_error(
        &app.post(&format!("/api/v1/jobs/{job_id}/stop"), &b.admin, json!({})).await,
        StatusCode::NOT_FOUND,
        "not_found",
        None,
    );
    assert_error(
        &app.put(&format!("/api/v1/jobs/{job_id}"), &b.admin, cron_job("x", "billing")).await,
        StatusCode::NOT_FOUND,
        "not_found",
        None,
    );
    assert_error(
        &app.post(&format!("/api/v1/apps/{app_id}/rotate-secret"), &b.admin, json!({})).await,
        StatusCode::NOT_FOUND,
        "not_found",
        None,
    );
    // B cannot reference A's app or jobs either.
    assert_error(
        &app.post("/api/v1/jobs", &b.admin, cron_job("x", app_id)).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_field",
        Some("app"),
    );
    app.app(&b.admin, "mine").await;
    let mut with_foreign_child = cron_job("x", "mine");
    with_foreign_child["children"] = json!([job_id]);
    assert_error(
        &app.post("/api/v1/jobs", &b.admin, with_foreign_child).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_field",
        Some("children[0]"),
    );
    assert_eq!(app.job_count(&b.admin).await, 0);
    let (_, list) = app.get("/api/v1/apps", &b.admin).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    // A still sees its own.
    assert_eq!(app.get(&format!("/api/v1/jobs/{job_id}"), &a.admin).await.0, StatusCode::OK);
}

async fn revoked_keys_stop_working_and_the_last_admin_stays(app: &TestApp) {
    let t = app.tenant("acme").await;
    let viewer = app.key(&t.admin, "viewer").await;
    let (s, keys) = app.get("/api/v1/keys", &t.admin).await;
    assert_eq!(s, StatusCode::OK);
    let items = keys["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert!(items.iter().all(|k| k.get("key").is_none() && k["prefix"].as_str().unwrap().starts_with("sk_")), "{keys}");
    let admin_id = items.iter().find(|k| k["role"] == "admin").unwrap()["id"].as_str().unwrap().to_string();
    let viewer_id = items.iter().find(|k| k["role"] == "viewer").unwrap()["id"].as_str().unwrap().to_string();
    assert_error(
        &app.delete(&format!("/api/v1/keys/{admin_id}"), &t.admin).await,
        StatusCode::CONFLICT,
        "last_admin_key",
        None,
    );
    assert_eq!(app.delete(&format!("/api/v1/keys/{viewer_id}"), &t.admin).await.0, StatusCode::NO_CONTENT);
    assert_error(&app.get("/api/v1/apps", &viewer).await, StatusCode::UNAUTHORIZED, "unauthorized", None);
    assert_error(
        &app.delete(&format!("/api/v1/keys/{viewer_id}"), &t.admin).await,
        StatusCode::NOT_FOUND,
        "not_found",
        None,
    );
    assert_error(
        &app.post("/api/v1/keys", &t.admin, json!({"name": "op", "role": "operator"})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_field",
        Some("role"),
    );
}
