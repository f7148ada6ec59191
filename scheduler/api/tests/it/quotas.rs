//! Tenant quotas (issue 26): the operator sets them per tenant, every refusal names the
//! quota, its limit and the usage, and the tenant and the operator see the usage.

use reqwest::StatusCode;
use serde_json::{Value, json};
use sundial_core::clock::Clock;

use crate::executor::{Answer, TestExecutor, signed_headers};
use crate::helpers::*;

crate::on_both_databases!(
    a_create_beyond_the_job_quota_is_refused_naming_it,
    fires_per_second_count_each_schedule_and_refuse_past_the_limit,
    a_keys_requests_past_its_rate_get_429_with_retry_after,
    a_registration_with_too_many_new_handlers_is_refused_and_creates_nothing,
    logs_are_refused_for_a_finished_run_and_past_the_byte_limits,
    usage_shows_every_quota_to_the_tenant_and_the_operator,
    only_the_operator_sets_quotas_and_bad_values_are_refused,
);

async fn set_quotas(app: &TestApp, tenant_id: &str, body: Value) -> Value {
    let (s, v) = app.put(&format!("/api/v1/tenants/{tenant_id}/quotas"), &app.operator_key, body).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

/// A 409 `quota_exceeded` naming the quota, its limit and the usage.
#[track_caller]
fn assert_quota(got: &(StatusCode, Value), status: StatusCode, quota: &str, limit: i64, usage: Value) {
    let (s, v) = got;
    assert_eq!((*s, v["code"].as_str()), (status, Some("quota_exceeded")), "{v}");
    assert_eq!(
        (v["details"]["quota"].as_str(), v["details"]["limit"].as_i64(), &v["details"]["usage"]),
        (Some(quota), Some(limit), &usage),
        "{v}"
    );
    assert!(v["message"].as_str().unwrap().contains(quota), "{v}");
}

fn fixed_rate(name: &str, every_ms: i64) -> Value {
    json!({"name": name, "app": "billing", "handler": "h", "schedule": {"kind": "fixed_rate", "every_ms": every_ms}})
}

fn usage_of(v: &Value, quota: &str) -> (Value, Value) {
    let q = v["quotas"].as_array().unwrap().iter().find(|q| q["quota"] == quota).unwrap_or_else(|| panic!("{v}"));
    (q["limit"].clone(), q["usage"].clone())
}

async fn a_create_beyond_the_job_quota_is_refused_naming_it(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    let got = set_quotas(app, &t.id, json!({"max_jobs": 2})).await;
    assert_eq!((got["effective"]["max_jobs"].clone(), got["overrides"]["max_jobs"].clone()), (json!(2), json!(2)));
    assert_eq!(got["overrides"]["max_scripts"], Value::Null, "the rest follow the defaults: {got}");
    app.job(&t.admin, cron_job("one", "billing")).await;
    app.job(&t.admin, cron_job("two", "billing")).await;
    let refused = app.post("/api/v1/jobs", &t.admin, cron_job("three", "billing")).await;
    assert_quota(&refused, StatusCode::CONFLICT, "max_jobs", 2, json!(2));
    assert_eq!(app.job_count(&t.admin).await, 2, "the refused create wrote nothing");
    // Another tenant is not held by this one's limit.
    let other = app.tenant("other").await;
    app.app(&other.admin, "billing").await;
    app.job(&other.admin, cron_job("three", "billing")).await;
    // Deleting one frees room; the operator raising the limit does too.
    let (_, list) = app.get("/api/v1/jobs", &t.admin).await;
    let (s, _) = app.delete(&format!("/api/v1/jobs/{}", list["items"][0]["id"].as_str().unwrap()), &t.admin).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    app.job(&t.admin, cron_job("three", "billing")).await;
    assert_quota(
        &app.post("/api/v1/jobs", &t.admin, cron_job("four", "billing")).await,
        StatusCode::CONFLICT,
        "max_jobs",
        2,
        json!(2),
    );
    set_quotas(app, &t.id, json!({"max_jobs": 3})).await;
    app.job(&t.admin, cron_job("four", "billing")).await;
    assert_eq!(app.job_count(&t.admin).await, 3);
}

async fn fires_per_second_count_each_schedule_and_refuse_past_the_limit(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    set_quotas(app, &t.id, json!({"max_fires_per_second": 3})).await;
    let fires = |v: &Value| usage_of(v, "max_fires_per_second").1;
    // A fixed rate of 1,000 ms counts 1 fire per second; a cron firing every other second 0.5.
    app.job(&t.admin, fixed_rate("a", 1_000)).await;
    let (_, u) = app.get("/api/v1/usage", &t.admin).await;
    assert_eq!((fires(&u), usage_of(&u, "max_fires_per_second").0), (json!(1), json!(3)), "{u}");
    let mut cron = cron_job("b", "billing");
    cron["schedule"] = json!({"kind": "cron", "expression": "*/2 * * * * *"});
    app.job(&t.admin, cron).await;
    let slow = app.job(&t.admin, fixed_rate("c", 2_000)).await;
    let (_, u) = app.get("/api/v1/usage", &t.admin).await;
    assert_eq!(fires(&u), json!(2), "{u}");
    // One-shot and manual jobs count nothing; a minute cron 1/60.
    let mut manual = cron_job("m", "billing");
    manual["schedule"] = json!({"kind": "manual"});
    let m = app.job(&t.admin, manual).await;
    let mut minute = cron_job("per-minute", "billing");
    minute["schedule"] = json!({"kind": "cron", "expression": "* * * * *"});
    app.job(&t.admin, minute).await;
    let (_, u) = app.get("/api/v1/usage", &t.admin).await;
    assert_eq!(fires(&u), json!(2.017), "{u}");
    // A create that would pass 3 fires per second is refused, naming the quota.
    let refused = app.post("/api/v1/jobs", &t.admin, fixed_rate("d", 1_000)).await;
    assert_quota(&refused, StatusCode::CONFLICT, "max_fires_per_second", 3, json!(2.017));
    assert_eq!(refused.1["details"]["requested"], json!(1), "{}", refused.1);
    // Created stopped it counts nothing; starting it is refused the same way.
    let mut stopped = fixed_rate("d", 1_000);
    stopped["state"] = json!("stopped");
    let d = app.job(&t.admin, stopped).await;
    let d_id = d["id"].as_str().unwrap();
    let start = app.post(&format!("/api/v1/jobs/{d_id}/start"), &t.admin, json!({})).await;
    assert_quota(&start, StatusCode::CONFLICT, "max_fires_per_second", 3, json!(2.017));
    let (_, got) = app.get(&format!("/api/v1/jobs/{d_id}"), &t.admin).await;
    assert_eq!(got["state"], "stopped", "the refused start changed nothing");
    // An update raising a job's rate past the limit is refused (the manual job made to fire
    // every second adds 1); within it, accepted (2,000 ms to 1,500 ms adds 1/6).
    let m_id = m["id"].as_str().unwrap();
    let replace = app.put(&format!("/api/v1/jobs/{m_id}"), &t.admin, fixed_rate("m", 1_000)).await;
    assert_quota(&replace, StatusCode::CONFLICT, "max_fires_per_second", 3, json!(2.017));
    let (_, got) = app.get(&format!("/api/v1/jobs/{m_id}"), &t.admin).await;
    assert_eq!(got["schedule"]["kind"], "manual", "the refused update changed nothing");
    let slow_id = slow["id"].as_str().unwrap();
    let (s, v) = app.put(&format!("/api/v1/jobs/{slow_id}"), &t.admin, fixed_rate("c", 1_500)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    // Stopping a job frees its share: now `d` starts.
    let (s, _) = app.post(&format!("/api/v1/jobs/{slow_id}/stop"), &t.admin, json!({})).await;
    assert_eq!(s, StatusCode::OK);
    let (s, v) = app.post(&format!("/api/v1/jobs/{d_id}/start"), &t.admin, json!({})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (_, u) = app.get("/api/v1/usage", &t.admin).await;
    assert_eq!(fires(&u), json!(2.517), "{u}");
}

async fn a_keys_requests_past_its_rate_get_429_with_retry_after(app: &TestApp) {
    let t = app.tenant("acme").await;
    let viewer = app.key(&t.admin, "viewer").await;
    set_quotas(app, &t.id, json!({"max_api_requests_per_second": 3})).await;
    for _ in 0..3 {
        let (s, v) = app.get("/api/v1/jobs", &t.admin).await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    let resp = app.http.get(format!("{}/api/v1/jobs", app.base)).bearer_auth(&t.admin).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(resp.headers()["retry-after"], "1");
    let v: Value = resp.json().await.unwrap();
    assert_quota(
        &(StatusCode::TOO_MANY_REQUESTS, v),
        StatusCode::TOO_MANY_REQUESTS,
        "max_api_requests_per_second",
        3,
        json!(3),
    );
    // Health endpoints carry no key and are not counted; another key has its own bucket.
    let (s, _) = app.call("GET", "/healthz", None, None).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = app.get("/api/v1/jobs", &viewer).await;
    assert_eq!(s, StatusCode::OK);
    // A third of a second later one request fits again, then none.
    app.clock.advance(334);
    let (s, v) = app.get("/api/v1/jobs", &t.admin).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, _) = app.get("/api/v1/jobs", &t.admin).await;
    assert_eq!(s, StatusCode::TOO_MANY_REQUESTS);
    // Refused requests did nothing: creates over the rate write no job.
    let (s, _) = app.post("/api/v1/apps", &t.admin, json!({"name": "billing"})).await;
    assert_eq!(s, StatusCode::TOO_MANY_REQUESTS);
    app.clock.advance(1_000);
    let (s, v) = app.get("/api/v1/apps", &t.admin).await;
    assert_eq!((s, v["items"].as_array().map(Vec::len)), (StatusCode::OK, Some(0)), "{v}");
}

struct Executor {
    key: String,
    tenant_id: String,
    app_id: String,
    secret: String,
    exec: TestExecutor,
}

async fn executor_setup(app: &TestApp) -> Executor {
    let t = app.tenant("acme").await;
    let (s, a) = app.post("/api/v1/apps", &t.admin, json!({"name": "billing"})).await;
    assert_eq!(s, StatusCode::CREATED, "{a}");
    let secret = a["secret"].as_str().unwrap().to_string();
    let exec = TestExecutor::start(&secret, app.clock.clone()).await;
    let (s, _) = app.patch("/api/v1/apps/billing", &t.admin, json!({"endpoints": [exec.url]})).await;
    assert_eq!(s, StatusCode::OK);
    Executor { key: t.admin, tenant_id: t.id, app_id: a["id"].as_str().unwrap().into(), secret, exec }
}

async fn signed(app: &TestApp, e: &Executor, path: &str, msg_id: &str, body: Value) -> (StatusCode, Value) {
    let bytes = serde_json::to_vec(&body).unwrap();
    let mut req = app.http.post(format!("{}{}", app.base, path)).body(bytes.clone());
    for (k, v) in signed_headers(&e.secret, &e.app_id, msg_id, &bytes, app.clock.now_ms() / 1000) {
        req = req.header(k, v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn a_registration_with_too_many_new_handlers_is_refused_and_creates_nothing(app: &TestApp) {
    let e = executor_setup(app).await;
    let register = |handlers: Vec<String>| json!({"address": e.exec.url, "handlers": handlers});
    let many: Vec<String> = (0..101).map(|i| format!("h{i}")).collect();
    let refused = signed(app, &e, "/api/v1/executors/register", "r1", register(many.clone())).await;
    assert_quota(&refused, StatusCode::CONFLICT, "max_new_handlers_per_registration", 100, json!(101));
    assert_eq!(refused.1["details"]["field"], "handlers");
    assert_eq!(app.job_count(&e.key).await, 0, "no job created");
    let (_, execs) = app.get("/api/v1/apps/billing/executors", &e.key).await;
    assert_eq!(execs["items"].as_array().unwrap().len(), 0, "no executor registered: {execs}");
    // A hundred at once are accepted; the same again adds nothing and is accepted too.
    let (s, v) = signed(app, &e, "/api/v1/executors/register", "r2", register(many[..100].to_vec())).await;
    assert_eq!((s, v["jobs_created"].as_array().map(Vec::len)), (StatusCode::OK, Some(100)), "{v}");
    // The app's total: at most `max_handlers_per_app` registration-created jobs.
    set_quotas(app, &e.tenant_id, json!({"max_handlers_per_app": 101})).await;
    let (s, v) = signed(app, &e, "/api/v1/executors/register", "r3", register(many.clone())).await;
    assert_eq!((s, v["jobs_created"].as_array().map(Vec::len)), (StatusCode::OK, Some(1)), "{v}");
    let more = vec!["x1".to_string(), "x2".to_string()];
    let refused = signed(app, &e, "/api/v1/executors/register", "r4", register(more)).await;
    assert_quota(&refused, StatusCode::CONFLICT, "max_handlers_per_app", 101, json!(101));
    let (s, v) = signed(app, &e, "/api/v1/executors/register", "r5", register(many)).await;
    assert_eq!((s, v["jobs_created"].as_array().map(Vec::len)), (StatusCode::OK, Some(0)), "{v}");
    let (_, u) = app.get("/api/v1/usage", &e.key).await;
    assert_eq!(usage_of(&u, "max_handlers_per_app"), (json!(101), json!(101)), "{u}");
}

/// Trigger a job and let the engine deliver the run; its id.
async fn trigger(app: &TestApp, key: &str, job: &Value) -> String {
    let (s, run) = app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), key, json!({})).await;
    assert_eq!(s, StatusCode::CREATED, "{run}");
    app.engine.tick().await.unwrap();
    run["id"].as_str().unwrap().to_string()
}

async fn logs_are_refused_for_a_finished_run_and_past_the_byte_limits(app: &TestApp) {
    let e = executor_setup(app).await;
    let mut job = cron_job("j", "billing");
    job["schedule"] = json!({"kind": "manual"});
    let first = app.job(&e.key, job.clone()).await;
    job["name"] = json!("k");
    // A second job: the first's running run holds its next one back (block strategy `serial`).
    let second = app.job(&e.key, job).await;
    let line = |n: usize| json!({"attempt": 1, "lines": [{"message": "x".repeat(n)}]});
    // A run that succeeded takes trailing lines for 60 s, then none.
    let done = trigger(app, &e.key, &first).await;
    let (_, d) = app.get(&format!("/api/v1/runs/{done}"), &e.key).await;
    assert_eq!(d["state"], "succeeded", "{d}");
    let logs = format!("/api/v1/runs/{done}/logs");
    let (s, v) = signed(app, &e, &logs, "l1", line(10)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    app.clock.advance(60_001);
    let (s, v) = signed(app, &e, &logs, "l2", line(10)).await;
    assert_eq!(
        (s, v["code"].as_str(), v["details"]["state"].as_str()),
        (StatusCode::CONFLICT, Some("run_not_in_progress"), Some("succeeded")),
        "{v}"
    );
    let (_, d) = app.get(&format!("/api/v1/runs/{done}"), &e.key).await;
    assert_eq!(d["logs"].as_array().unwrap().len(), 1, "nothing written: {d}");
    // A run in progress, up to its byte limit per run; a call over the per-call limit is 413.
    set_quotas(app, &e.tenant_id, json!({"max_log_bytes_per_run": 100, "max_log_bytes_per_day": 150})).await;
    e.exec.then(Answer::Accept);
    let running = trigger(app, &e.key, &first).await;
    let logs = format!("/api/v1/runs/{running}/logs");
    let (s, v) = signed(app, &e, &logs, "l3", line(60)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let refused = signed(app, &e, &logs, "l4", line(60)).await;
    assert_quota(&refused, StatusCode::CONFLICT, "max_log_bytes_per_run", 100, json!(60));
    let (s, v) = signed(app, &e, &logs, "l5", line(40)).await;
    assert_eq!(s, StatusCode::OK, "up to the limit: {v}");
    let big = json!({"attempt": 1, "lines": (0..20).map(|_| json!({"message": "y".repeat(1000)})).collect::<Vec<_>>()});
    let refused = signed(app, &e, &logs, "l6", big).await;
    assert_quota(&refused, StatusCode::PAYLOAD_TOO_LARGE, "max_log_bytes_per_call", MAX_LOG_CALL as i64, json!(20_000));
    // The tenant's day: 110 bytes so far (10 + 60 + 40); another run may add 40, not 41.
    e.exec.then(Answer::Accept);
    let other = trigger(app, &e.key, &second).await;
    let logs = format!("/api/v1/runs/{other}/logs");
    let refused = signed(app, &e, &logs, "l7", line(41)).await;
    assert_quota(&refused, StatusCode::CONFLICT, "max_log_bytes_per_day", 150, json!(110));
    let (s, v) = signed(app, &e, &logs, "l8", line(40)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (_, u) = app.get("/api/v1/usage", &e.key).await;
    assert_eq!(usage_of(&u, "max_log_bytes_per_day"), (json!(150), json!(150)), "{u}");
    assert_eq!(usage_of(&u, "max_inflight").1, json!(2), "two runs answered 202 and not finished: {u}");
}

async fn usage_shows_every_quota_to_the_tenant_and_the_operator(app: &TestApp) {
    let t = app.tenant("acme").await;
    app.app(&t.admin, "billing").await;
    app.job(&t.admin, fixed_rate("a", 1_000)).await;
    app.job(&t.admin, cron_job("b", "billing")).await;
    let (s, v) =
        app.post("/api/v1/scripts", &t.admin, json!({"name": "s", "runtime": "python", "source": "print(1)\n"})).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, u) = app.get("/api/v1/usage", &t.admin).await;
    assert_eq!(s, StatusCode::OK, "{u}");
    assert_eq!(u["tenant_id"], t.id.as_str());
    let names: Vec<&str> = u["quotas"].as_array().unwrap().iter().map(|q| q["quota"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "max_jobs",
            "max_fires_per_second",
            "max_inflight",
            "max_scripts",
            "max_script_bytes",
            "max_log_bytes_per_run",
            "max_log_bytes_per_day",
            "max_handlers_per_app",
            "max_api_requests_per_second"
        ]
    );
    assert_eq!(usage_of(&u, "max_jobs"), (json!(10_000), json!(2)));
    // Plus the cron `0 30 2 * * *`, which may fire once in a minute: 1/60.
    assert_eq!(usage_of(&u, "max_fires_per_second"), (json!(1_000), json!(1.017)));
    assert_eq!(usage_of(&u, "max_scripts"), (json!(1_000), json!(1)));
    assert_eq!(usage_of(&u, "max_script_bytes").1, json!(9));
    assert_eq!(usage_of(&u, "max_log_bytes_per_run").1, Value::Null);
    // The operator sees the same per tenant, with its own limits once set.
    set_quotas(app, &t.id, json!({"max_scripts": 1})).await;
    let (s, o) = app.get(&format!("/api/v1/tenants/{}/usage", t.id), &app.operator_key).await;
    assert_eq!(s, StatusCode::OK, "{o}");
    assert_eq!(usage_of(&o, "max_scripts"), (json!(1), json!(1)));
    assert_eq!(usage_of(&o, "max_jobs"), (json!(10_000), json!(2)));
    // And the script quota applies: a second script is refused.
    let refused =
        app.post("/api/v1/scripts", &t.admin, json!({"name": "s2", "runtime": "python", "source": "print(2)\n"})).await;
    assert_quota(&refused, StatusCode::CONFLICT, "max_scripts", 1, json!(1));
    set_quotas(app, &t.id, json!({"max_script_bytes": 12})).await;
    let refused = app.post("/api/v1/scripts/s/versions", &t.admin, json!({"source": "print(22)\n"})).await;
    assert_quota(&refused, StatusCode::CONFLICT, "max_script_bytes", 12, json!(9));
    // Each view is for its caller: a tenant key cannot read the operator's, nor the operator the tenant's.
    let (s, _) = app.get(&format!("/api/v1/tenants/{}/usage", t.id), &t.admin).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = app.get("/api/v1/usage", &app.operator_key).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = app.get("/api/v1/tenants/ten_nope/usage", &app.operator_key).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

async fn only_the_operator_sets_quotas_and_bad_values_are_refused(app: &TestApp) {
    let t = app.tenant("acme").await;
    let path = format!("/api/v1/tenants/{}/quotas", t.id);
    let (s, _) = app.put(&path, &t.admin, json!({"max_jobs": 1_000_000})).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "a tenant cannot raise its own quotas");
    let (s, _) = app.get(&path, &t.admin).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert_error(
        &app.put(&path, &app.operator_key, json!({"max_jobs": -1})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_field",
        Some("max_jobs"),
    );
    assert_error(
        &app.put(&path, &app.operator_key, json!({"max_jobz": 1})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "unknown_field",
        None,
    );
    let (s, v) = app.get(&path, &app.operator_key).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["overrides"]["max_jobs"], Value::Null, "refused settings changed nothing: {v}");
    assert_eq!(v["effective"], v["defaults"]);
    let (s, _) = app.put("/api/v1/tenants/ten_nope/quotas", &app.operator_key, json!({})).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}
