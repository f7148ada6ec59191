//! Every bad input gets 400/413/422 with `{code, message, details}` naming the field,
//! and writes nothing.

use reqwest::StatusCode;
use serde_json::{Value, json};

use sundial_core::clock::Clock;

use crate::executor::signed_headers;
use crate::helpers::*;

crate::on_both_databases!(
    bad_job_bodies_are_refused_and_write_nothing,
    bad_app_bodies_are_refused_and_write_nothing,
    malformed_and_oversized_bodies,
    bad_query_parameters,
    child_cycles_are_refused,
    fan_in_edges_and_wait_are_checked,
    stale_updates_are_refused,
    schedules_that_would_never_fire_are_refused,
    job_names_are_unique_within_a_tenant,
    params_must_be_a_json_object,
    bytes_after_the_json_body_are_refused,
    bodies_must_be_declared_json,
    executor_calls_answer_413_in_json,
    every_list_refuses_a_cursor_it_did_not_make,
    unknown_query_parameters_are_refused_everywhere,
    urls_with_user_info_are_refused,
);

fn with(mut base: Value, path: &[&str], value: Value) -> Value {
    let mut cur = &mut base;
    for p in &path[..path.len() - 1] {
        cur = &mut cur[*p];
    }
    cur[path[path.len() - 1]] = value;
    base
}

fn without(mut base: Value, key: &str) -> Value {
    base.as_object_mut().unwrap().remove(key);
    base
}

async fn bad_job_bodies_are_refused_and_write_nothing(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    let good = cron_job("nightly", "billing");
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    let cases: Vec<(Value, &str, &str, Option<&str>)> = vec![
        // (body, code, field, a word the message must contain)
        (
            with(good.clone(), &["schedule", "expression"], json!("0 61 * * * *")),
            "invalid_cron",
            "schedule.expression",
            Some("minute"),
        ),
        (
            with(good.clone(), &["schedule", "expression"], json!("0 0 25 * * *")),
            "invalid_cron",
            "schedule.expression",
            Some("hour"),
        ),
        (
            with(good.clone(), &["schedule", "expression"], json!("* * *")),
            "invalid_cron",
            "schedule.expression",
            Some("fields"),
        ),
        (
            with(good.clone(), &["schedule", "expression"], json!("0 0 12 ? * 6#9")),
            "invalid_cron",
            "schedule.expression",
            Some("day_of_week"),
        ),
        (
            with(good.clone(), &["schedule", "timezone"], json!("Mars/Olympus_Mons")),
            "invalid_field",
            "schedule.timezone",
            Some("IANA"),
        ),
        (
            with(good.clone(), &["schedule", "kind"], json!("hourly")),
            "unknown_variant",
            "schedule.kind",
            Some("fixed_rate"),
        ),
        (with(good.clone(), &["route"], json!("randm")), "unknown_variant", "route", Some("round_robin")),
        (with(good.clone(), &["block"], json!("queue")), "unknown_variant", "block", Some("serial")),
        (
            with(good.clone(), &["misfire"], json!({"policy": "later"})),
            "unknown_variant",
            "misfire.policy",
            Some("fire_all"),
        ),
        (without(good.clone(), "name"), "missing_field", "name", None),
        (without(good.clone(), "schedule"), "missing_field", "schedule", None),
        (with(good.clone(), &["schedule"], json!({"kind": "fixed_rate"})), "missing_field", "schedule.every_ms", None),
        (with(good.clone(), &["timeout_ms"], json!("soon")), "wrong_type", "timeout_ms", Some("invalid type")),
        (with(good.clone(), &["timeout_ms"], json!(5)), "invalid_field", "timeout_ms", Some("range")),
        (
            with(good.clone(), &["schedule", "every_ms"], json!(1000)),
            "invalid_field",
            "schedule.every_ms",
            Some("does not apply"),
        ),
        (with(good.clone(), &["name"], json!("has spaces")), "invalid_field", "name", None),
        (with(good.clone(), &["app"], json!("nope")), "invalid_field", "app", Some("nope")),
        (
            with(good.clone(), &["failure"], json!({"policy": "retry", "max_retries": -1})),
            "invalid_field",
            "failure.max_retries",
            None,
        ),
        (with(good.clone(), &["children"], json!(["not-a-job"])), "invalid_field", "children[0]", None),
        (
            with(good.clone(), &["children"], json!([{"job": "job_0123", "on": "sometimes"}])),
            "unknown_variant",
            "children[0].on",
            None,
        ),
        (with(good.clone(), &["children"], json!([{"job": "nope"}])), "invalid_field", "children[0].job", None),
        (with(good.clone(), &["scheduel"], json!({})), "unknown_field", "scheduel", None),
        (with(good.clone(), &["schedule", "at"], json!("tomorrow")), "invalid_field", "schedule.at", None),
        (
            with(good.clone(), &["schedule"], json!({"kind": "once", "at": "next week"})),
            "invalid_field",
            "schedule.at",
            Some("RFC 3339"),
        ),
        (with(good.clone(), &["script"], json!("s")), "invalid_field", "script", Some("not both")),
        // Valid, but it would never fire (the test clock is at 2026-03-28T12:00:00Z).
        (
            with(good.clone(), &["schedule"], json!({"kind": "once", "at": "2026-03-28T11:00:00Z"})),
            "invalid_field",
            "schedule.at",
            Some("in the past"),
        ),
        (
            with(good.clone(), &["schedule", "end_at"], json!("2026-03-28T11:00:00Z")),
            "invalid_field",
            "schedule.end_at",
            Some("in the past"),
        ),
    ];
    for (body, code, field, word) in cases {
        let got = app.post("/api/v1/jobs", &t.admin, body.clone()).await;
        assert_error(&got, unprocessable, code, Some(field));
        if let Some(w) = word {
            assert!(got.1["message"].as_str().unwrap().contains(w), "message of {body} should mention {w}: {}", got.1);
        }
    }
    assert_eq!(app.job_count(&t.admin).await, 0, "no refused job was written");
    // The same checks guard schedule previews.
    assert_error(
        &app.post(
            "/api/v1/schedules/preview",
            &t.admin,
            json!({"schedule": {"kind": "cron", "expression": "61 * * * *"}}),
        )
        .await,
        unprocessable,
        "invalid_cron",
        Some("schedule.expression"),
    );
    assert_error(
        &app.post(
            "/api/v1/schedules/preview",
            &t.admin,
            json!({"schedule": {"kind": "cron", "expression": "@hourly"}, "count": 0}),
        )
        .await,
        unprocessable,
        "invalid_field",
        Some("count"),
    );
}

async fn bad_app_bodies_are_refused_and_write_nothing(app: &TestApp) {
    let t = app.tenant("acme").await;
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    let cases = [
        (
            json!({"name": "billing", "endpoints": ["https://ok.example/x", "not a url"]}),
            "invalid_field",
            "endpoints[1]",
        ),
        (json!({"name": "billing", "endpoints": ["ftp://files.example/x"]}), "invalid_field", "endpoints[0]"),
        (json!({"name": "billing", "endpoints": "https://x.example"}), "wrong_type", "endpoints"),
        (json!({"name": ""}), "invalid_field", "name"),
        (json!({"endpoints": []}), "missing_field", "name"),
        (json!({"name": 5}), "wrong_type", "name"),
        (json!({"name": "billing", "secret": "mine"}), "unknown_field", "secret"),
    ];
    for (body, code, field) in cases {
        assert_error(&app.post("/api/v1/apps", &t.admin, body).await, unprocessable, code, Some(field));
    }
    let (_, list) = app.get("/api/v1/apps", &t.admin).await;
    assert!(list["items"].as_array().unwrap().is_empty(), "no refused app was written: {list}");
    // A refused update leaves the app as it was.
    let a = app.app(&t.admin, "billing").await;
    let path = format!("/api/v1/apps/{}", a["id"].as_str().unwrap());
    assert_error(
        &app.patch(&path, &t.admin, json!({"endpoints": ["javascript:alert(1)"]})).await,
        unprocessable,
        "invalid_field",
        Some("endpoints[0]"),
    );
    let (_, now) = app.get(&path, &t.admin).await;
    assert_eq!(now["endpoints"], a["endpoints"]);
    assert_error(
        &app.post("/api/v1/apps", &t.admin, json!({"name": "billing"})).await,
        StatusCode::CONFLICT,
        "conflict",
        None,
    );
}

async fn malformed_and_oversized_bodies(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    let bad_json = app.call("POST", "/api/v1/jobs", Some(&t.admin), Some(b"{\"name\": ".to_vec())).await;
    assert_error(&bad_json, StatusCode::BAD_REQUEST, "invalid_json", Some("body"));
    let empty = app.call("POST", "/api/v1/jobs", Some(&t.admin), Some(Vec::new())).await;
    assert_error(&empty, StatusCode::BAD_REQUEST, "invalid_json", Some("body"));
    let not_object = app.call("POST", "/api/v1/jobs", Some(&t.admin), Some(b"[1,2]".to_vec())).await;
    assert_error(&not_object, StatusCode::UNPROCESSABLE_ENTITY, "wrong_type", Some("body"));
    let mut huge = cron_job("nightly", "billing");
    huge["params"] = json!({"blob": "x".repeat(MAX_BODY + 1)});
    let too_big = app.call("POST", "/api/v1/jobs", Some(&t.admin), Some(serde_json::to_vec(&huge).unwrap())).await;
    assert_error(&too_big, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", Some("body"));
    assert_eq!(app.job_count(&t.admin).await, 0);
    // The trigger's body is optional, but when given it is an object too: serde alone would
    // read `[{"x": 1}]` as `params` and fire.
    let job = app.job(&t.admin, cron_job("nightly", "billing")).await;
    let trigger = format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap());
    let array = app.call("POST", &trigger, Some(&t.admin), Some(br#"[{"x": 1}]"#.to_vec())).await;
    assert_error(&array, StatusCode::UNPROCESSABLE_ENTITY, "wrong_type", Some("body"));
    let (_, runs) = app.get(&format!("/api/v1/runs?job_id={}", job["id"].as_str().unwrap()), &t.admin).await;
    assert!(runs["items"].as_array().unwrap().iter().all(|r| r["trigger"] != "manual"), "nothing fired: {runs}");
}

async fn bad_query_parameters(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    let job = app.job(&t.admin, cron_job("nightly", "billing")).await;
    let id = job["id"].as_str().unwrap();
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    assert_error(&app.get("/api/v1/apps?limit=0", &t.admin).await, unprocessable, "invalid_field", Some("limit"));
    assert_error(&app.get("/api/v1/apps?limit=abc", &t.admin).await, unprocessable, "invalid_field", Some("limit"));
    assert_error(
        &app.get("/api/v1/jobs?state=paused", &t.admin).await,
        unprocessable,
        "unknown_variant",
        Some("state"),
    );
    assert_error(&app.get("/api/v1/runs?state=done", &t.admin).await, unprocessable, "unknown_variant", Some("state"));
    assert_error(&app.get("/api/v1/runs?from=yesterday", &t.admin).await, unprocessable, "invalid_field", Some("from"));
    assert_error(&app.get("/api/v1/runs?cursor=zzz", &t.admin).await, unprocessable, "invalid_field", Some("cursor"));
    assert_error(&app.get("/api/v1/runs?colour=red", &t.admin).await, unprocessable, "unknown_field", Some("colour"));
    assert_error(
        &app.get(&format!("/api/v1/jobs/{id}/preview?count=101"), &t.admin).await,
        unprocessable,
        "invalid_field",
        Some("count"),
    );
    assert_error(&app.get("/api/v1/nothing-here", &t.admin).await, StatusCode::NOT_FOUND, "not_found", None);
}

async fn child_cycles_are_refused(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    let c = app.job(&t.admin, cron_job("c", "billing")).await;
    let mut b = cron_job("b", "billing");
    b["children"] = json!([c["id"]]);
    let b = app.job(&t.admin, b).await;
    let mut a = cron_job("a", "billing");
    a["children"] = json!([b["id"]]);
    let a = app.job(&t.admin, a).await;
    assert_eq!(a["children"], json!([{"job": b["id"], "on": "on_success"}]));
    let mut c_body = cron_job("c", "billing");
    c_body["children"] = json!([a["id"]]);
    let path = format!("/api/v1/jobs/{}", c["id"].as_str().unwrap());
    let got = app.put(&path, &t.admin, c_body).await;
    assert_error(&got, StatusCode::UNPROCESSABLE_ENTITY, "invalid_field", Some("children[0]"));
    assert!(got.1["message"].as_str().unwrap().ends_with("cycle: c → a → b → c"), "names the cycle: {}", got.1);
    let (_, after) = app.get(&path, &t.admin).await;
    assert_eq!((after["children"].clone(), after["version"].clone()), (json!([]), json!(1)), "nothing changed");
}

/// A fan-in's edges get the same checks: a cycle through it is named, another tenant's job
/// is refused as one that does not exist, and `wait` takes `all` or `any` only.
async fn fan_in_edges_and_wait_are_checked(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    let d = app.job(&t.admin, cron_job("d", "billing")).await;
    assert_eq!(d["wait"], "all");
    for name in ["p1", "p2"] {
        let mut p = cron_job(name, "billing");
        p["children"] = json!([d["id"]]);
        app.job(&t.admin, p).await;
    }
    let (_, jobs) = app.get("/api/v1/jobs?limit=10", &t.admin).await;
    let p1 = jobs["items"].as_array().unwrap().iter().find(|j| j["name"] == "p1").unwrap()["id"].clone();
    let path = format!("/api/v1/jobs/{}", d["id"].as_str().unwrap());
    let mut body = cron_job("d", "billing");
    body["children"] = json!([{"job": p1, "on": "always"}]);
    let got = app.put(&path, &t.admin, body).await;
    assert_error(&got, StatusCode::UNPROCESSABLE_ENTITY, "invalid_field", Some("children[0]"));
    assert!(got.1["message"].as_str().unwrap().ends_with("cycle: d → p1 → d"), "names the cycle: {}", got.1);

    let other = app.tenant("other").await;
    app.app(&other.admin, "billing").await;
    let theirs = app.job(&other.admin, cron_job("theirs", "billing")).await;
    let mut body = cron_job("mine", "billing");
    body["children"] = json!([d["id"], theirs["id"]]);
    let got = app.post("/api/v1/jobs", &t.admin, body).await;
    assert_error(&got, StatusCode::UNPROCESSABLE_ENTITY, "invalid_field", Some("children[1]"));
    assert!(got.1["message"].as_str().unwrap().contains("does not exist"), "{}", got.1);

    let mut body = cron_job("mine", "billing");
    body["wait"] = json!("some");
    let got = app.post("/api/v1/jobs", &t.admin, body).await;
    assert_eq!(got.0, StatusCode::UNPROCESSABLE_ENTITY, "{}", got.1);
    assert!(got.1["message"].as_str().unwrap().contains("wait"), "names the field: {}", got.1);
    let mut body = cron_job("mine", "billing");
    body["wait"] = json!("any");
    let (_, mine) = app.post("/api/v1/jobs", &t.admin, body).await;
    assert_eq!(mine["wait"], "any");
    assert_eq!(app.job_count(&t.admin).await, 4, "nothing else was written");
}

async fn stale_updates_are_refused(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    let job = app.job(&t.admin, cron_job("nightly", "billing")).await;
    let path = format!("/api/v1/jobs/{}", job["id"].as_str().unwrap());
    let mut changed = cron_job("renamed", "billing");
    let put = |body: Value, version: &str| {
        let req =
            app.http.put(format!("{}{}", app.base, path)).bearer_auth(&t.admin).header("if-match", version).json(&body);
        async move {
            let r = req.send().await.unwrap();
            (r.status(), r.json::<Value>().await.unwrap())
        }
    };
    let ok = put(changed.clone(), "1").await;
    assert_eq!(ok.0, StatusCode::OK, "{}", ok.1);
    assert_eq!(ok.1["version"], 2);
    changed["name"] = json!("lost-update");
    assert_error(&put(changed.clone(), "1").await, StatusCode::CONFLICT, "stale", None);
    assert_error(&put(changed, "one").await, StatusCode::UNPROCESSABLE_ENTITY, "invalid_field", Some("If-Match"));
    let (_, now) = app.get(&path, &t.admin).await;
    assert_eq!(now["name"], "renamed");
}

/// A schedule with no fire left is refused when it is set, not when an unrelated field of a
/// job whose one-shot time has passed is edited.
async fn schedules_that_would_never_fire_are_refused(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    let mut body = cron_job("one", "billing");
    body["schedule"] = json!({"kind": "once", "at": "2026-03-28T12:01:00Z"});
    let job = app.job(&t.admin, body.clone()).await;
    let path = format!("/api/v1/jobs/{}", job["id"].as_str().unwrap());
    app.clock.advance(120_000); // past its one-shot time
    body["name"] = json!("renamed");
    let (st, v) = app.put(&path, &t.admin, body.clone()).await;
    assert_eq!((st, v["name"].clone()), (StatusCode::OK, json!("renamed")), "{v}");
    body["name"] = json!("moved");
    body["schedule"]["at"] = json!("2026-03-28T12:01:30Z");
    let got = app.put(&path, &t.admin, body.clone()).await;
    assert_error(&got, StatusCode::UNPROCESSABLE_ENTITY, "invalid_field", Some("schedule.at"));
    assert!(got.1["message"].as_str().unwrap().contains("trigger"), "{}", got.1);
    let (_, now) = app.get(&path, &t.admin).await;
    assert_eq!((now["name"].clone(), now["version"].clone()), (json!("renamed"), json!(2)), "nothing changed");
    // A time still ahead is fine.
    body["schedule"]["at"] = json!("2026-03-28T12:05:00Z");
    assert_eq!(app.put(&path, &t.admin, body).await.0, StatusCode::OK);
}

/// A job's name is unique within its tenant: a second job of that name, or a rename onto
/// it, is 409 naming the field `name`, and changes nothing. Another tenant has its own names.
async fn job_names_are_unique_within_a_tenant(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    app.app(&t.admin, "mail").await;
    let nightly = app.job(&t.admin, cron_job("nightly", "billing")).await;
    for body in [cron_job("nightly", "billing"), cron_job("nightly", "mail")] {
        let got = app.post("/api/v1/jobs", &t.admin, body).await;
        assert_error(&got, StatusCode::CONFLICT, "conflict", Some("name"));
        assert!(got.1["message"].as_str().unwrap().contains("`nightly`"), "{}", got.1);
    }
    assert_eq!(app.job_count(&t.admin).await, 1, "no duplicate was written");
    let other = app.tenant("other").await;
    app.app(&other.admin, "billing").await;
    app.job(&other.admin, cron_job("nightly", "billing")).await;
    // A rename through PUT onto a taken name: 409, the job as it was.
    let weekly = app.job(&t.admin, cron_job("weekly", "billing")).await;
    let path = format!("/api/v1/jobs/{}", weekly["id"].as_str().unwrap());
    let mut renamed = cron_job("nightly", "billing");
    renamed["timeout_ms"] = json!(5000);
    assert_error(&app.put(&path, &t.admin, renamed.clone()).await, StatusCode::CONFLICT, "conflict", Some("name"));
    let (_, now) = app.get(&path, &t.admin).await;
    assert_eq!(now, weekly, "the refused rename changed nothing");
    // Keeping its own name, or taking a free one, works.
    assert_eq!(app.put(&path, &t.admin, cron_job("weekly", "billing")).await.0, StatusCode::OK);
    renamed["name"] = json!("monthly");
    let (s, v) = app.put(&path, &t.admin, renamed).await;
    assert_eq!((s, v["name"].as_str()), (StatusCode::OK, Some("monthly")), "{v}");
    let (_, first) = app.get(&format!("/api/v1/jobs/{}", nightly["id"].as_str().unwrap()), &t.admin).await;
    assert_eq!(first["name"], "nightly");
}

/// `params` is a JSON object (absent or null: `{}`), on jobs and on triggers; anything else
/// is 422 `wrong_type` naming `params`, and writes nothing.
async fn params_must_be_a_json_object(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    let not_objects = [json!([1, 2]), json!(1), json!("x"), json!(true)];
    for p in &not_objects {
        let body = with(cron_job("nightly", "billing"), &["params"], p.clone());
        let got = app.post("/api/v1/jobs", &t.admin, body).await;
        assert_error(&got, StatusCode::UNPROCESSABLE_ENTITY, "wrong_type", Some("params"));
    }
    assert_eq!(app.job_count(&t.admin).await, 0, "no refused job was written");
    let null = app.job(&t.admin, with(cron_job("nightly", "billing"), &["params"], Value::Null)).await;
    assert_eq!(null["params"], json!({}));
    let path = format!("/api/v1/jobs/{}", null["id"].as_str().unwrap());
    let put = app.put(&path, &t.admin, with(cron_job("nightly", "billing"), &["params"], json!([1]))).await;
    assert_error(&put, StatusCode::UNPROCESSABLE_ENTITY, "wrong_type", Some("params"));
    assert_eq!(app.get(&path, &t.admin).await.1, null, "the refused update changed nothing");
    let (_, runs_before) = app.get("/api/v1/runs?limit=200", &t.admin).await;
    for p in &not_objects {
        let got = app.post(&format!("{path}/trigger"), &t.admin, json!({"params": p})).await;
        assert_error(&got, StatusCode::UNPROCESSABLE_ENTITY, "wrong_type", Some("params"));
    }
    assert_eq!(app.get("/api/v1/runs?limit=200", &t.admin).await.1, runs_before, "no refused trigger made a run");
    let (s, run) = app.post(&format!("{path}/trigger"), &t.admin, json!({"params": {"a": [1, 2]}})).await;
    assert_eq!((s, run["params"].clone()), (StatusCode::CREATED, json!({"a": [1, 2]})), "{run}");
}

/// A raw request with the given `Content-Type` (or none) and body.
async fn raw(
    app: &TestApp,
    method: &str,
    path: &str,
    key: Option<&str>,
    content_type: Option<&str>,
    body: Vec<u8>,
    extra: &[(String, String)],
) -> (StatusCode, Value) {
    let mut req = app.http.request(method.parse().unwrap(), format!("{}{}", app.base, path)).body(body);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    for (k, v) in extra {
        if k != "content-type" {
            req = req.header(k, v);
        }
    }
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// One JSON value per body: bytes after it (other than whitespace) are refused, 400 naming
/// the body, and nothing is written. (They were accepted and ignored.)
async fn bytes_after_the_json_body_are_refused(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    let job = serde_json::to_string(&cron_job("nightly", "billing")).unwrap();
    for tail in [" x", "}", "{}", " {\"name\": \"other\"}", "\u{0}"] {
        let body = format!("{job}{tail}").into_bytes();
        let got = app.call("POST", "/api/v1/jobs", Some(&t.admin), Some(body)).await;
        assert_error(&got, StatusCode::BAD_REQUEST, "invalid_json", Some("body"));
    }
    assert_eq!(app.job_count(&t.admin).await, 0, "no refused body was written");
    let spaced = format!("{job} \n\t ").into_bytes();
    let (s, v) = app.call("POST", "/api/v1/jobs", Some(&t.admin), Some(spaced)).await;
    assert_eq!(s, StatusCode::CREATED, "trailing whitespace is fine: {v}");
}

/// A body must be declared JSON (`application/json`, parameters and `+json` types allowed;
/// no Content-Type is taken as JSON): anything else is 415 in the JSON error format, on
/// key-authenticated and signed endpoints alike. An empty body (a trigger's optional one)
/// may come with any type.
async fn bodies_must_be_declared_json(app: &TestApp) {
    let t = app.tenant("acme").await;
    let a = app.app(&t.admin, "billing").await;
    let body = serde_json::to_vec(&json!({"name": "other", "endpoints": ["http://127.0.0.1:9/hook"]})).unwrap();
    for ct in
        ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x", "application/jsonx"]
    {
        let got = raw(app, "POST", "/api/v1/apps", Some(&t.admin), Some(ct), body.clone(), &[]).await;
        assert_error(&got, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", Some("content-type"));
    }
    let (_, list) = app.get("/api/v1/apps", &t.admin).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "no refused app was written: {list}");
    for (i, ct) in
        [Some("application/json; charset=utf-8"), Some("Application/JSON"), Some("application/merge-patch+json"), None]
            .into_iter()
            .enumerate()
    {
        let body =
            serde_json::to_vec(&json!({"name": format!("ok{i}"), "endpoints": ["http://127.0.0.1:9/hook"]})).unwrap();
        let (s, v) = raw(app, "POST", "/api/v1/apps", Some(&t.admin), ct, body, &[]).await;
        assert_eq!(s, StatusCode::CREATED, "{ct:?}: {v}");
    }
    // A trigger without a body, whatever its type.
    let job = app.job(&t.admin, cron_job("nightly", "billing")).await;
    let trigger = format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap());
    let (s, v) =
        raw(app, "POST", &trigger, Some(&t.admin), Some("application/x-www-form-urlencoded"), vec![], &[]).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let got = raw(app, "POST", &trigger, Some(&t.admin), Some("text/plain"), b"{}".to_vec(), &[]).await;
    assert_error(&got, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", Some("content-type"));
    // A signed executor call.
    let (app_id, secret) = (a["id"].as_str().unwrap(), a["secret"].as_str().unwrap());
    let body = serde_json::to_vec(&json!({"address": "http://127.0.0.1:9/hook", "handlers": ["h"]})).unwrap();
    let signed = signed_headers(secret, app_id, "ct-1", &body, app.clock.now_ms() / 1000);
    let got = raw(app, "POST", "/api/v1/executors/register", None, Some("text/plain"), body, &signed).await;
    assert_error(&got, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", Some("content-type"));
}

/// The signed executor endpoints read their body before anything else: an oversized one was
/// answered 413 in plain text by the body limit. Every error is JSON.
async fn executor_calls_answer_413_in_json(app: &TestApp) {
    let t = app.tenant("acme").await;
    let a = app.app(&t.admin, "billing").await;
    let huge = serde_json::to_vec(&json!({"address": "x".repeat(MAX_BODY + 1)})).unwrap();
    let signed = signed_headers(
        a["secret"].as_str().unwrap(),
        a["id"].as_str().unwrap(),
        "big-1",
        &huge,
        app.clock.now_ms() / 1000,
    );
    for path in [
        "/api/v1/executors/register",
        "/api/v1/executors/heartbeat",
        "/api/v1/executors/deregister",
        "/api/v1/runs/run_x/result",
        "/api/v1/runs/run_x/logs",
        "/api/v1/runs/run_x/script",
    ] {
        let got = raw(app, "POST", path, None, Some("application/json"), huge.clone(), &signed).await;
        assert_error(&got, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", Some("body"));
    }
    // axum's own rejections too: a path parameter that is not one (here a method with no route).
    let got = raw(app, "PUT", "/api/v1/executors/register", None, None, vec![], &[]).await;
    assert_eq!(got.0, StatusCode::METHOD_NOT_ALLOWED);
    assert!(got.1["code"].is_string(), "JSON error: {}", got.1);
}

/// Every list refuses a cursor it did not hand out (422 naming `cursor`), and still follows
/// its own.
async fn every_list_refuses_a_cursor_it_did_not_make(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    app.app(&t.admin, "shipping").await;
    let (s, v) =
        app.post("/api/v1/scripts", &t.admin, json!({"name": "s", "runtime": "python", "source": "print(1)\n"})).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    let lists = [
        ("/api/v1/tenants", app.operator_key.as_str()),
        ("/api/v1/keys", t.admin.as_str()),
        ("/api/v1/apps", t.admin.as_str()),
        ("/api/v1/scripts", t.admin.as_str()),
        ("/api/v1/scripts/s/versions", t.admin.as_str()),
        ("/api/v1/jobs", t.admin.as_str()),
        ("/api/v1/runs", t.admin.as_str()),
    ];
    for (list, key) in lists {
        for bad in ["zzz", "app_zz", "%27%20OR%201%3D1", "job_0000000000000000000000000000000g"] {
            let got = app.get(&format!("{list}?cursor={bad}"), key).await;
            assert_error(&got, unprocessable, "invalid_field", Some("cursor"));
        }
    }
    // An id of another kind is not a cursor of this list either.
    let got = app.get("/api/v1/apps?cursor=job_0123456789abcdef0123456789abcdef", &t.admin).await;
    assert_error(&got, unprocessable, "invalid_field", Some("cursor"));
    let (_, first) = app.get("/api/v1/apps?limit=1", &t.admin).await;
    let next = first["next_cursor"].as_str().expect("a next page");
    let (s, rest) = app.get(&format!("/api/v1/apps?limit=1&cursor={next}"), &t.admin).await;
    assert_eq!((s, rest["items"][0]["name"].as_str()), (StatusCode::OK, Some("shipping")), "{rest}");
}

/// Every endpoint refuses a query parameter it does not take, 422 naming it; endpoints
/// without one ignored it (`POST /schedules/preview?count=1000000000`).
async fn unknown_query_parameters_are_refused_everywhere(app: &TestApp) {
    let t = app.tenant("acme").await;
    let a = app.app(&t.admin, "billing").await;
    let job = app.job(&t.admin, cron_job("nightly", "billing")).await;
    let (app_id, job_id) = (a["id"].as_str().unwrap(), job["id"].as_str().unwrap());
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    let preview = json!({"schedule": {"kind": "cron", "expression": "0 0 * * * *"}});
    let got = app.post("/api/v1/schedules/preview?count=1000000000", &t.admin, preview.clone()).await;
    assert_error(&got, unprocessable, "unknown_field", Some("count"));
    let (s, v) = app.post("/api/v1/schedules/preview", &t.admin, preview).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let cases = [
        ("GET", format!("/api/v1/apps/{app_id}?verbose=1"), "verbose"),
        ("GET", format!("/api/v1/jobs/{job_id}?fields=all"), "fields"),
        ("POST", format!("/api/v1/jobs/{job_id}/stop?force=true"), "force"),
        ("DELETE", format!("/api/v1/jobs/{job_id}?cascade=1"), "cascade"),
        ("GET", "/api/v1/settings/scheduling?x=1".to_string(), "x"),
        ("GET", "/api/v1/runtimes?all".to_string(), "all"),
        ("GET", "/healthz?probe=1".to_string(), "probe"),
        ("GET", format!("/api/v1/jobs/{job_id}/preview?count=3&colour=red"), "colour"),
    ];
    for (method, path, param) in cases {
        let got = app.call(method, &path, Some(&t.admin), None).await;
        assert_error(&got, unprocessable, "unknown_field", Some(param));
    }
    let (_, still) = app.get(&format!("/api/v1/jobs/{job_id}"), &t.admin).await;
    assert_eq!(still["state"], job["state"], "the refused stop and delete changed nothing: {still}");
    let (s, v) = app.get(&format!("/api/v1/jobs/{job_id}/preview?count=3"), &t.admin).await;
    assert_eq!(s, StatusCode::OK, "declared parameters still work: {v}");
}

/// A URL with user info (`http://user:password@host/`) is refused as an app endpoint (create,
/// PATCH) and as an executor's address, naming the field and never echoing the password:
/// it would be stored, shown to viewers and logged.
async fn urls_with_user_info_are_refused(app: &TestApp) {
    let t = app.tenant("acme").await;
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    let got = app
        .post(
            "/api/v1/apps",
            &t.admin,
            json!({"name": "leaky", "endpoints": ["http://127.0.0.1:9/ok", "http://u:hunter2@127.0.0.1:9/hook"]}),
        )
        .await;
    assert_error(&got, unprocessable, "invalid_field", Some("endpoints[1]"));
    assert!(!got.1.to_string().contains("hunter2"), "{}", got.1);
    let a = app.app(&t.admin, "billing").await;
    let path = format!("/api/v1/apps/{}", a["id"].as_str().unwrap());
    let got = app.patch(&path, &t.admin, json!({"endpoints": ["http://admin@127.0.0.1:9/hook"]})).await;
    assert_error(&got, unprocessable, "invalid_field", Some("endpoints[0]"));
    let (_, now) = app.get(&path, &t.admin).await;
    assert_eq!(now["endpoints"], a["endpoints"], "the refused update changed nothing");
    let (_, list) = app.get("/api/v1/apps", &t.admin).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "{list}");
    let body = serde_json::to_vec(&json!({"address": "http://u:hunter2@127.0.0.1:9/hook", "handlers": ["h"]})).unwrap();
    let signed = signed_headers(
        a["secret"].as_str().unwrap(),
        a["id"].as_str().unwrap(),
        "ui-1",
        &body,
        app.clock.now_ms() / 1000,
    );
    let got = raw(app, "POST", "/api/v1/executors/register", None, Some("application/json"), body, &signed).await;
    assert_error(&got, unprocessable, "invalid_field", Some("address"));
    assert!(!got.1.to_string().contains("hunter2"), "{}", got.1);
    let (_, execs) = app.get(&format!("{path}/executors"), &t.admin).await;
    assert!(execs.to_string().find("hunter2").is_none(), "nothing registered: {execs}");
}
