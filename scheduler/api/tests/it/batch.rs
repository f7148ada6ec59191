//! `POST /api/v1/jobs/batch`: up to 1,000 jobs created all or none, each exactly as
//! `POST /api/v1/jobs` creates it; every refused item named by its index and field, and a
//! refused batch writes nothing.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

crate::on_both_databases!(
    a_batch_creates_each_job_as_the_single_create_does,
    a_batch_with_a_refused_item_names_every_one_and_writes_nothing,
    batch_sizes_names_roles_tenants_and_quotas_are_checked,
);

const BATCH: &str = "/api/v1/jobs/batch";

fn batch(jobs: Vec<Value>) -> Value {
    json!({"jobs": jobs})
}

/// The job as shown, less what differs between two creations of the same body.
fn comparable(mut job: Value) -> Value {
    for k in ["id", "name", "created_at", "updated_at"] {
        job.as_object_mut().unwrap().remove(k);
    }
    job
}

async fn a_batch_creates_each_job_as_the_single_create_does(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    let parent_of = app.job(&t.admin, cron_job("child", "billing")).await;
    let bodies = |prefix: &str| {
        vec![
            cron_job(&format!("{prefix}-cron"), "billing"),
            json!({"name": format!("{prefix}-rate"), "app": "billing", "handler": "h.tick", "params": {"n": 1},
                "schedule": {"kind": "fixed_rate", "every_ms": 60000}, "route": "failover", "block": "discard_later",
                "misfire": {"policy": "skip"}, "failure": {"policy": "discard"}, "timeout_ms": 5000,
                "max_concurrency": 3, "children": [{"job": parent_of["id"], "on": "always"}]}),
            json!({"name": format!("{prefix}-manual"), "app": "billing", "handler": "h.manual",
                "schedule": {"kind": "manual"}, "state": "stopped"}),
            json!({"name": format!("{prefix}-once"), "app": "billing", "handler": "h.once", "description": "later",
                "schedule": {"kind": "once", "at": "2026-03-28T13:00:00Z"}}),
        ]
    };
    let (s, created) = app.post(BATCH, &t.admin, batch(bodies("b"))).await;
    assert_eq!(s, StatusCode::CREATED, "{created}");
    let created = created["jobs"].as_array().unwrap().clone();
    assert_eq!(created.len(), 4);
    for (got, want) in created.iter().zip(bodies("b")) {
        assert_eq!(got["name"], want["name"], "in the request's order");
        // What the single create returns for the same body.
        let mut single = want.clone();
        single["name"] = json!(format!("single-{}", want["name"].as_str().unwrap()));
        let alone = app.job(&t.admin, single).await;
        assert_eq!(comparable(got.clone()), comparable(alone), "{got}");
        // And what is stored.
        let (_, stored) = app.get(&format!("/api/v1/jobs/{}", got["id"].as_str().unwrap()), &t.admin).await;
        assert_eq!(&stored, got);
    }
    // A larger batch: several multi-row statements.
    let many: Vec<Value> = (0..300)
        .map(|i| json!({"name": format!("m{i}"), "app": "billing", "handler": "h", "schedule": {"kind": "manual"}}))
        .collect();
    let (s, v) = app.post(BATCH, &t.admin, batch(many)).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let names: Vec<&str> = v["jobs"].as_array().unwrap().iter().map(|j| j["name"].as_str().unwrap()).collect();
    assert_eq!(names, (0..300).map(|i| format!("m{i}")).collect::<Vec<_>>());
    let (_, usage) = app.get("/api/v1/usage", &t.admin).await;
    let jobs = usage["quotas"].as_array().unwrap().iter().find(|q| q["quota"] == "max_jobs").unwrap().clone();
    assert_eq!(jobs["usage"], 1 + 4 + 4 + 300, "{usage}");
}

/// Bodies the single create refuses, each with the field it names.
fn refused_bodies(good: &Value) -> Vec<Value> {
    let with = |path: &[&str], v: Value| {
        let mut b = good.clone();
        let mut cur = &mut b;
        for p in &path[..path.len() - 1] {
            cur = &mut cur[*p];
        }
        cur[path[path.len() - 1]] = v;
        b
    };
    let mut no_name = good.clone();
    no_name.as_object_mut().unwrap().remove("name");
    vec![
        with(&["schedule", "expression"], json!("0 61 * * * *")),
        with(&["schedule", "kind"], json!("hourly")),
        with(&["schedule"], json!({"kind": "fixed_rate"})),
        with(&["timeout_ms"], json!("soon")),
        with(&["timeout_ms"], json!(5)),
        with(&["name"], json!("has spaces")),
        with(&["app"], json!("nope")),
        with(&["children"], json!([{"job": "nope"}])),
        with(&["children"], json!(["job_01JDX2B00000000000000000"])),
        with(&["scheduel"], json!({})),
        with(&["schedule"], json!({"kind": "once", "at": "2026-03-28T11:00:00Z"})),
        with(&["params"], json!([1])),
        no_name,
        json!([1, 2]),
        json!("a string"),
    ]
}

async fn a_batch_with_a_refused_item_names_every_one_and_writes_nothing(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    let good = |i: usize| cron_job(&format!("good-{i}"), "billing");
    // Each refused body alone among good ones, at index 2 of 5: the item's error is the single
    // create's (status aside), under its index.
    for bad in refused_bodies(&cron_job("bad", "billing")) {
        let (status, single) = app.post("/api/v1/jobs", &t.admin, bad.clone()).await;
        assert!(status.is_client_error(), "{bad}: {single}");
        let items = vec![good(0), good(1), bad.clone(), good(3), good(4)];
        let got = app.post(BATCH, &t.admin, batch(items)).await;
        assert_error(&got, StatusCode::UNPROCESSABLE_ENTITY, "invalid_field", Some("jobs"));
        let field = single["details"]["field"].clone();
        let want = json!([{"index": 2, "field": field, "code": single["code"], "message": single["message"]}]);
        assert_eq!(got.1["details"]["errors"], want, "{bad}");
        assert!(got.1["message"].as_str().unwrap().starts_with("1 of 5 jobs refused"), "{}", got.1);
    }
    assert_eq!(app.job_count(&t.admin).await, 0, "no refused batch wrote a job");

    // Several refused items, of every kind, all listed in order: checks that need no database
    // (0, 3), a reference (5), a name taken in the tenant (4) and one repeated in the batch (6).
    app.job(&t.admin, cron_job("taken", "billing")).await;
    let items = vec![
        json!({"name": "x"}),
        good(1),
        good(2),
        with_expr(good(3), "* * *"),
        cron_job("taken", "billing"),
        cron_job("elsewhere", "nope"),
        cron_job("good-1", "billing"),
    ];
    let got = app.post(BATCH, &t.admin, batch(items)).await;
    assert_error(&got, StatusCode::UNPROCESSABLE_ENTITY, "invalid_field", Some("jobs"));
    let listed: Vec<(u64, &str, &str)> = got.1["details"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["index"].as_u64().unwrap(), e["field"].as_str().unwrap(), e["code"].as_str().unwrap()))
        .collect();
    assert_eq!(
        listed,
        vec![
            (0, "app", "missing_field"),
            (3, "schedule.expression", "invalid_cron"),
            (4, "name", "conflict"),
            (5, "app", "invalid_field"),
            (6, "name", "conflict"),
        ],
        "{}",
        got.1
    );
    assert_eq!(app.job_count(&t.admin).await, 1, "only the job created alone");
}

fn with_expr(mut job: Value, expr: &str) -> Value {
    job["schedule"]["expression"] = json!(expr);
    job
}

async fn batch_sizes_names_roles_tenants_and_quotas_are_checked(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    let bad_request = StatusCode::BAD_REQUEST;
    // No item, or more than 1,000: 400 naming `jobs`, whatever the items are.
    assert_error(&app.post(BATCH, &t.admin, batch(vec![])).await, bad_request, "invalid_field", Some("jobs"));
    let over = app.post(BATCH, &t.admin, batch(vec![json!({}); 1001])).await;
    assert_error(&over, bad_request, "invalid_field", Some("jobs"));
    assert_eq!((over.1["details"]["limit"].clone(), over.1["details"]["count"].clone()), (json!(1000), json!(1001)));
    // The envelope is checked as any body.
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    assert_error(&app.post(BATCH, &t.admin, json!({})).await, unprocessable, "missing_field", Some("jobs"));
    assert_error(&app.post(BATCH, &t.admin, json!({"jobs": {}})).await, unprocessable, "wrong_type", Some("jobs"));
    let extra = json!({"jobs": [cron_job("a", "billing")], "dry_run": true});
    assert_error(&app.post(BATCH, &t.admin, extra).await, unprocessable, "unknown_field", Some("dry_run"));
    let not_json = app.call("POST", BATCH, Some(&t.admin), Some(b"{\"jobs\": [".to_vec())).await;
    assert_error(&not_json, bad_request, "invalid_json", Some("body"));

    // Names: taken in the tenant, or twice in the batch, is 409 `conflict` on `name`.
    app.job(&t.admin, cron_job("nightly", "billing")).await;
    let taken = app.post(BATCH, &t.admin, batch(vec![cron_job("a", "billing"), cron_job("nightly", "billing")])).await;
    assert_error(&taken, StatusCode::CONFLICT, "conflict", Some("jobs"));
    assert_eq!(taken.1["details"]["errors"][0]["index"], 1);
    assert_eq!(taken.1["details"]["errors"][0]["field"], "name");
    let twice = vec![cron_job("a", "billing"), cron_job("b", "billing"), cron_job("a", "billing")];
    let got = app.post(BATCH, &t.admin, batch(twice)).await;
    assert_error(&got, StatusCode::CONFLICT, "conflict", Some("jobs"));
    assert_eq!(
        got.1["details"]["errors"],
        json!([{"index": 2, "field": "name", "code": "conflict",
        "message": "a job named `a` is earlier in this batch"}])
    );
    assert_eq!(app.job_count(&t.admin).await, 1);

    // Roles and tenants, as for one job: a viewer and the operator may not; no key is 401.
    let one = batch(vec![cron_job("a", "billing")]);
    let viewer = app.key(&t.admin, "viewer").await;
    assert_error(&app.post(BATCH, &viewer, one.clone()).await, StatusCode::FORBIDDEN, "forbidden", None);
    assert_error(&app.post(BATCH, &app.operator_key, one.clone()).await, StatusCode::FORBIDDEN, "forbidden", None);
    let anonymous = app.call("POST", BATCH, None, Some(serde_json::to_vec(&one).unwrap())).await;
    assert_error(&anonymous, StatusCode::UNAUTHORIZED, "unauthorized", None);
    let editor = app.key(&t.admin, "editor").await;
    assert_eq!(app.post(BATCH, &editor, one).await.0, StatusCode::CREATED);
    // Another tenant's app and jobs are not found from this one.
    let other = app.tenant("other").await;
    app.app(&other.admin, "theirs").await;
    let theirs = app.job(&other.admin, cron_job("theirs", "theirs")).await;
    let mut child_of_theirs = cron_job("c", "billing");
    child_of_theirs["children"] = json!([theirs["id"]]);
    let got = app.post(BATCH, &t.admin, batch(vec![cron_job("b", "theirs"), child_of_theirs])).await;
    assert_error(&got, unprocessable, "invalid_field", Some("jobs"));
    let fields: Vec<&str> =
        got.1["details"]["errors"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
    assert_eq!(fields, vec!["app", "children[0]"], "{}", got.1);
    assert_eq!(app.job_count(&t.admin).await, 2);
    assert_eq!(app.job_count(&other.admin).await, 1);

    // Quotas count the batch whole: 2 jobs + 3 pass a limit of 4; nothing is written.
    let (s, v) = app.put(&format!("/api/v1/tenants/{}/quotas", t.id), &app.operator_key, json!({"max_jobs": 4})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let three = batch(vec![cron_job("q1", "billing"), cron_job("q2", "billing"), cron_job("q3", "billing")]);
    let got = app.post(BATCH, &t.admin, three).await;
    assert_error(&got, StatusCode::CONFLICT, "quota_exceeded", None);
    assert_eq!(
        (got.1["details"]["quota"].clone(), got.1["details"]["requested"].clone()),
        (json!("max_jobs"), json!(3))
    );
    assert_eq!(app.job_count(&t.admin).await, 2);
    let two = batch(vec![cron_job("q1", "billing"), cron_job("q2", "billing")]);
    assert_eq!(app.post(BATCH, &t.admin, two).await.0, StatusCode::CREATED);
}
