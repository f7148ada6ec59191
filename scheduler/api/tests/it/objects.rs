//! Happy paths: apps, jobs, previews, runs, health.

use reqwest::StatusCode;
use serde_json::{Value, json};
use sundial_core::types::{RunState, TriggerKind};
use sundial_store::Run;

use crate::helpers::*;

crate::on_both_databases!(
    apps_lifecycle_and_secret_rotation,
    jobs_lifecycle,
    job_lists_filter_and_paginate,
    previews_follow_time_zones_and_dst,
    fixed_rate_grid_survives_an_update,
    runs_list_and_detail,
    health_and_readiness,
    jobs_show_their_next_fire_from_the_servers_clock,
);

async fn apps_lifecycle_and_secret_rotation(app: &TestApp) {
    let t = app.tenant("acme").await;
    let created = app.app(&t.admin, "billing").await;
    let secret = created["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("whsec_"), "{created}");
    let id = created["id"].as_str().unwrap();
    let (s, got) = app.get(&format!("/api/v1/apps/{id}"), &t.admin).await;
    assert_eq!(s, StatusCode::OK);
    assert!(got.get("secret").is_none(), "the secret is shown on create and rotate only: {got}");
    assert_eq!(app.get("/api/v1/apps/billing", &t.admin).await.1["id"], id, "found by name too");
    app.clock.advance(1000);
    let (s, rotated) = app.post(&format!("/api/v1/apps/{id}/rotate-secret"), &t.admin, json!({})).await;
    assert_eq!(s, StatusCode::OK, "{rotated}");
    let new_secret = rotated["secret"].as_str().unwrap();
    assert!(new_secret.starts_with("whsec_") && new_secret != secret);
    assert_eq!(rotated["previous_secret_expires_at"], sundial_core::time::rfc3339_utc(T0 + 1000 + GRACE_MS));
    // The store keeps the previous secret valid for the grace period only.
    let stored = app.db.store.as_ref();
    let row = sundial_store::AppStore::app_get(stored, &t.id, id).await.unwrap().unwrap();
    assert_eq!(row.valid_secrets(T0 + 1000), vec![new_secret, secret.as_str()]);
    assert_eq!(row.valid_secrets(T0 + 1000 + GRACE_MS), vec![new_secret]);
    let (s, patched) = app
        .patch(
            &format!("/api/v1/apps/{id}"),
            &t.admin,
            json!({"endpoints": ["https://fn.example/a"], "description": "Billing"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        (patched["endpoints"].clone(), patched["description"].clone()),
        (json!(["https://fn.example/a"]), json!("Billing"))
    );
    app.job(&t.admin, cron_job("nightly", "billing")).await;
    assert_error(&app.delete(&format!("/api/v1/apps/{id}"), &t.admin).await, StatusCode::CONFLICT, "conflict", None);
}

async fn jobs_lifecycle(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    let child = app
        .job(&t.admin, json!({"name": "child", "app": "billing", "handler": "after", "schedule": {"kind": "manual"}}))
        .await;
    let cleanup = app
        .job(&t.admin, json!({"name": "cleanup", "app": "billing", "handler": "undo", "schedule": {"kind": "manual"}}))
        .await;
    let report = app
        .job(&t.admin, json!({"name": "report", "app": "billing", "handler": "report", "schedule": {"kind": "manual"}}))
        .await;
    let body = json!({
        "name": "nightly", "description": "Invoices", "app": "billing", "handler": "invoice.run",
        "schedule": {"kind": "cron", "expression": "0 30 2 * * *", "timezone": "Europe/Berlin"},
        "params": {"region": "eu"}, "route": "failover", "block": "discard_later",
        "misfire": {"policy": "fire_all", "max_catchup": 10},
        "failure": {"policy": "retry", "max_retries": 3, "backoff": {"kind": "fixed", "base_ms": 2000}},
        "timeout_ms": 60000, "max_concurrency": 2,
        "children": [child["id"], {"job": cleanup["id"], "on": "on_failure"}, {"job": report["id"]}]
    });
    let job = app.job(&t.admin, body).await;
    assert_eq!(job["state"], "active");
    assert_eq!(job["source"], "api");
    assert_eq!(job["route"], "failover");
    assert_eq!(
        job["misfire"],
        json!({"policy": "fire_all", "threshold_ms": 5000, "catchup_window_ms": 3600000, "max_catchup": 10})
    );
    assert_eq!(job["failure"]["backoff"], json!({"kind": "fixed", "base_ms": 2000, "max_ms": 300000, "jitter": true}));
    // Both forms accepted; the edge form shown (in job id order).
    let mut want = vec![
        json!({"job": child["id"], "on": "on_success"}),
        json!({"job": cleanup["id"], "on": "on_failure"}),
        json!({"job": report["id"], "on": "on_success"}),
    ];
    want.sort_by_key(|e| e["job"].as_str().unwrap().to_string());
    assert_eq!(job["children"], json!(want));
    let path = format!("/api/v1/jobs/{}", job["id"].as_str().unwrap());
    assert_eq!(app.get(&path, &t.admin).await.1, job);
    let (s, stopped) = app.post(&format!("{path}/stop"), &t.admin, json!({})).await;
    assert_eq!((s, stopped["state"].clone(), stopped["version"].clone()), (StatusCode::OK, json!("stopped"), json!(2)));
    let (_, started) = app.post(&format!("{path}/start"), &t.admin, json!({})).await;
    assert_eq!(started["state"], "active");
    // A full replace keeps state, source and creation time unless told otherwise.
    let (s, replaced) = app.put(&path, &t.admin, cron_job("nightly-v2", "billing")).await;
    assert_eq!(s, StatusCode::OK, "{replaced}");
    assert_eq!(
        (replaced["name"].clone(), replaced["version"].clone(), replaced["children"].clone()),
        (json!("nightly-v2"), json!(4), json!([]))
    );
    assert_eq!(replaced["created_at"], job["created_at"]);
    assert_eq!(app.delete(&path, &t.admin).await.0, StatusCode::NO_CONTENT);
    assert_error(&app.get(&path, &t.admin).await, StatusCode::NOT_FOUND, "not_found", None);
}

async fn job_lists_filter_and_paginate(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "a").await;
    app.app(&t.admin, "b").await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let j = app.job(&t.admin, cron_job(&format!("job-{i}"), if i % 2 == 0 { "a" } else { "b" })).await;
        ids.push(j["id"].as_str().unwrap().to_string());
    }
    app.post(&format!("/api/v1/jobs/{}/stop", ids[4]), &t.admin, json!({})).await;
    let mut seen = Vec::new();
    let mut url = "/api/v1/jobs?limit=2".to_string();
    loop {
        let (s, page) = app.get(&url, &t.admin).await;
        assert_eq!(s, StatusCode::OK, "{page}");
        seen.extend(page["items"].as_array().unwrap().iter().map(|j| j["id"].as_str().unwrap().to_string()));
        match page["next_cursor"].as_str() {
            Some(c) => url = format!("/api/v1/jobs?limit=2&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen, ids, "every job once, in creation order");
    let names = |v: &Value| {
        v["items"].as_array().unwrap().iter().map(|j| j["name"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    assert_eq!(names(&app.get("/api/v1/jobs?app=a", &t.admin).await.1), ["job-0", "job-2", "job-4"]);
    assert_eq!(names(&app.get("/api/v1/jobs?app=a&state=stopped", &t.admin).await.1), ["job-4"]);
    assert_eq!(names(&app.get("/api/v1/jobs?name=job-3", &t.admin).await.1), ["job-3"]);
    assert!(names(&app.get("/api/v1/jobs?app=nope", &t.admin).await.1).is_empty());
}

async fn previews_follow_time_zones_and_dst(app: &TestApp) {
    let t = app.tenant("acme").await;
    // 02:30 does not exist in Berlin on 2026-03-29: it fires once, at 03:00 CEST.
    let body =
        json!({"schedule": {"kind": "cron", "expression": "0 30 2 * * *", "timezone": "Europe/Berlin"}, "count": 3});
    let (s, p) = app.post("/api/v1/schedules/preview", &t.admin, body).await;
    assert_eq!(s, StatusCode::OK, "{p}");
    assert_eq!(
        p,
        json!({
            "times": ["2026-03-29T03:00:00.000+02:00", "2026-03-30T02:30:00.000+02:00", "2026-03-31T02:30:00.000+02:00"],
            "timezone": "Europe/Berlin"
        })
    );
    let (_, unix) = app
        .post(
            "/api/v1/schedules/preview",
            &t.admin,
            json!({"schedule": {"kind": "cron", "expression": "*/15 * * * *"}, "count": 2}),
        )
        .await;
    assert_eq!(unix["times"], json!(["2026-03-28T12:15:00.000+00:00", "2026-03-28T12:30:00.000+00:00"]));
    assert_eq!(unix["timezone"], "UTC");
    // Quartz: the last Friday of each month (March's was yesterday).
    let (_, quartz) = app
        .post(
            "/api/v1/schedules/preview",
            &t.admin,
            json!({"schedule": {"kind": "cron", "expression": "0 0 10 ? * 6L"}, "count": 2}),
        )
        .await;
    assert_eq!(quartz["times"], json!(["2026-04-24T10:00:00.000+00:00", "2026-05-29T10:00:00.000+00:00"]));
    app.app(&t.admin, "billing").await;
    let job = app.job(&t.admin, cron_job("nightly", "billing")).await;
    let (_, jp) = app.get(&format!("/api/v1/jobs/{}/preview?count=2", job["id"].as_str().unwrap()), &t.admin).await;
    assert_eq!(jp["times"], json!(["2026-03-29T03:00:00.000+02:00", "2026-03-30T02:30:00.000+02:00"]));
    let (_, window) = app.post("/api/v1/schedules/preview", &t.admin, json!({"schedule": {
        "kind": "fixed_rate", "every_ms": 3600000, "anchor": "2026-03-28T00:00:00Z", "end_at": "2026-03-28T15:00:00Z"}, "count": 10})).await;
    assert_eq!(window["times"], json!(["2026-03-28T13:00:00.000+00:00", "2026-03-28T14:00:00.000+00:00"]));
    let (_, manual) = app.post("/api/v1/schedules/preview", &t.admin, json!({"schedule": {"kind": "manual"}})).await;
    assert_eq!(manual["times"], json!([]));
}

async fn fixed_rate_grid_survives_an_update(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    let body = json!({"name": "tick", "app": "billing", "handler": "tick", "schedule": {"kind": "fixed_rate", "every_ms": 60000}});
    let job = app.job(&t.admin, body.clone()).await;
    assert_eq!(job["schedule"]["anchor"], sundial_core::time::rfc3339_utc(T0), "the anchor is the creation time");
    app.clock.advance(12_345);
    let (_, updated) = app.put(&format!("/api/v1/jobs/{}", job["id"].as_str().unwrap()), &t.admin, body).await;
    assert_eq!(updated["schedule"]["anchor"], job["schedule"]["anchor"], "an update keeps anchor + k·every");
    let (_, p) = app.get(&format!("/api/v1/jobs/{}/preview?count=2", job["id"].as_str().unwrap()), &t.admin).await;
    assert_eq!(p["times"], json!(["2026-03-28T12:01:00.000+00:00", "2026-03-28T12:02:00.000+00:00"]));
}

async fn runs_list_and_detail(app: &TestApp) {
    let t = app.tenant("acme").await;
    let other = app.tenant("other").await;
    app.app(&t.admin, "billing").await;
    let job = app.job(&t.admin, cron_job("nightly", "billing")).await;
    let job_id = job["id"].as_str().unwrap().to_string();
    let store = app.db.store.as_ref();
    let mut run_ids = Vec::new();
    for (i, state) in [RunState::Succeeded, RunState::Failed, RunState::Pending].into_iter().enumerate() {
        let at = T0 + i as i64 * 1000;
        let mut run = Run::pending(&t.id, &job_id, 1, format!("s:{at}"), TriggerKind::Schedule, at, at);
        run.state = state;
        run.attempt = 1;
        run.output = Some(json!({"ok": i}));
        assert!(sundial_store::RunStore::run_insert(store, &run).await.unwrap());
        run_ids.push(run.id);
    }
    let (s, list) = app.get(&format!("/api/v1/runs?job_id={job_id}&limit=2"), &t.admin).await;
    assert_eq!(s, StatusCode::OK, "{list}");
    let got: Vec<&str> = list["items"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(got, [run_ids[2].as_str(), run_ids[1].as_str()], "newest first");
    let cursor = list["next_cursor"].as_str().unwrap();
    let (_, rest) = app.get(&format!("/api/v1/runs?job_id={job_id}&limit=2&cursor={cursor}"), &t.admin).await;
    assert_eq!(rest["items"][0]["id"], run_ids[0].as_str());
    assert!(rest["next_cursor"].is_null());
    let (_, failed) = app.get("/api/v1/runs?state=failed", &t.admin).await;
    assert_eq!(failed["items"].as_array().unwrap().len(), 1);
    let (s, one) = app.get(&format!("/api/v1/runs/{}", run_ids[0]), &t.admin).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        (one["state"].clone(), one["fire_key"].clone(), one["output"].clone()),
        (json!("succeeded"), json!(format!("s:{T0}")), json!({"ok": 0}))
    );
    assert_eq!(one["scheduled_at"], "2026-03-28T12:00:00.000Z");
    assert_error(
        &app.get(&format!("/api/v1/runs/{}", run_ids[0]), &other.admin).await,
        StatusCode::NOT_FOUND,
        "not_found",
        None,
    );
    assert!(app.get("/api/v1/runs", &other.admin).await.1["items"].as_array().unwrap().is_empty());
}

async fn health_and_readiness(app: &TestApp) {
    let (s, v) = app.call("GET", "/healthz", None, None).await;
    assert_eq!((s, v), (StatusCode::OK, json!({"status": "ok"})));
    let (s, v) = app.call("GET", "/readyz", None, None).await;
    assert_eq!((s, v), (StatusCode::OK, json!({"status": "ok"})));
    app.db.store.close().await;
    let (s, _) = app.call("GET", "/readyz", None, None).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "database gone: not ready");
    let (s, _) = app.call("GET", "/healthz", None, None).await;
    assert_eq!(s, StatusCode::OK, "but alive");
}

/// `next_fire_at` on get and list: the next fire of the job's schedule after the server's
/// time (its clock, here the manual one), in UTC; null for a stopped or manual job and for a
/// one-shot whose time has passed.
async fn jobs_show_their_next_fire_from_the_servers_clock(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    // T0 is 2026-03-28 12:00Z; 02:30 in Berlin does not exist the next night: 03:00 CEST.
    let nightly = app.job(&t.admin, cron_job("nightly", "billing")).await;
    assert_eq!(nightly["next_fire_at"], "2026-03-29T01:00:00.000Z", "{nightly}");
    let id = nightly["id"].as_str().unwrap();
    app.clock.set(T0 + 24 * 3_600_000);
    let (_, got) = app.get(&format!("/api/v1/jobs/{id}"), &t.admin).await;
    assert_eq!(got["next_fire_at"], "2026-03-30T00:30:00.000Z", "summer time: {got}");
    let once = app
        .job(
            &t.admin,
            json!({"name": "once", "app": "billing", "handler": "h",
                   "schedule": {"kind": "once", "at": sundial_core::time::rfc3339_utc(T0 + 24 * 3_600_000 + 60_000)}}),
        )
        .await;
    assert_eq!(once["next_fire_at"], sundial_core::time::rfc3339_utc(T0 + 24 * 3_600_000 + 60_000));
    let manual = app
        .job(&t.admin, json!({"name": "by-hand", "app": "billing", "handler": "h", "schedule": {"kind": "manual"}}))
        .await;
    assert!(manual["next_fire_at"].is_null(), "{manual}");
    let (s, stopped) = app.post(&format!("/api/v1/jobs/{id}/stop"), &t.admin, json!({})).await;
    assert_eq!(s, StatusCode::OK, "{stopped}");
    assert!(stopped["next_fire_at"].is_null(), "{stopped}");
    app.clock.advance(120_000);
    let (_, list) = app.get("/api/v1/jobs?limit=10", &t.admin).await;
    let next: std::collections::HashMap<&str, &Value> =
        list["items"].as_array().unwrap().iter().map(|j| (j["name"].as_str().unwrap(), &j["next_fire_at"])).collect();
    assert_eq!(next.len(), 3, "{list}");
    assert!(next.values().all(|v| v.is_null()), "stopped, manual, a one-shot in the past: {list}");
}
