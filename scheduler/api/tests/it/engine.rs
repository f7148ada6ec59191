//! The engine end to end: jobs fire on the manual clock and reach a real executor
//! over HTTP; results come back; policies hold.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::executor::{Answer, TestExecutor, signed_headers};
use crate::helpers::*;

crate::on_both_databases!(
    a_fixed_rate_job_fires_on_time_signed_and_succeeds,
    jobs_created_in_a_batch_fire_each_once,
    an_async_result_completes_the_run_once,
    failed_attempts_retry_with_backoff_in_the_same_run,
    a_failure_the_executor_says_cannot_succeed_is_not_retried,
    misfire_skip_fire_once_and_fire_all_after_downtime,
    a_long_outage_is_one_counted_record,
    block_strategies_and_max_concurrency,
    triggers_are_idempotent_and_may_be_delayed,
    registered_executors_route_fail_over_and_go_offline,
    the_reaper_times_out_silent_runs_and_cancels_them,
    stop_drops_future_fires_and_start_does_not_catch_up,
    children_fire_with_the_parents_output,
    the_pause_switch_stops_schedules_not_triggers,
    a_retired_handler_stops_the_job,
    editing_a_job_rederives_its_future_runs,
    a_dead_nodes_claims_are_recovered_and_redelivered_with_the_same_webhook_id,
    runs_of_a_silent_executor_are_lost_after_a_grace_period,
    a_node_whose_clock_is_off_stops_claiming,
    a_retry_waits_while_the_timed_out_executor_still_runs_it,
    many_due_runs_go_out_in_batches_and_each_result_is_recorded_once,
    two_nodes_fire_their_own_share_and_one_takes_over_when_the_other_stops,
    a_run_taken_ahead_by_the_dispatch_lead_goes_out_at_its_instant,
    a_fire_written_behind_the_peek_cursor_still_fires_on_time,
    a_full_claim_says_so_and_the_next_takes_the_rest,
    a_node_far_behind_settles_its_backlog_by_policy_and_is_on_time_again,
    a_node_taking_a_job_on_writes_the_fires_a_gone_node_left_without_a_row,
    cancels_an_executor_never_answers_hold_up_nothing,
    an_overdue_run_is_reaped_by_its_buckets_owner_only,
    answers_are_read_strictly_bounded_and_never_redirected,
    outbound_addresses_are_judged_at_registration_and_at_connect_time,
    a_registration_job_whose_name_is_taken_gets_a_free_one,
    a_script_job_goes_only_to_a_runner_of_its_runtime_which_fetches_its_source_by_the_run,
    a_chain_is_cancelled_whole_and_fires_no_further_child,
    a_fan_out_and_fan_in_chain_passes_outputs_and_params_and_shows_its_tree,
    outputs_over_the_limit_are_refused_by_the_result_call_and_fail_a_sync_answer,
    a_retried_step_of_a_chain_fires_its_children_once,
    a_child_job_stopped_mid_chain_is_not_fired_and_releases_the_fan_in,
    fires_beyond_the_timers_room_and_a_tenants_share_lose_nothing,
    a_tenant_past_its_share_of_the_timer_is_passed_over_by_the_claim,
    a_small_tenants_fire_finds_room_in_a_timer_another_tenant_filled,
    a_runs_log_is_followed_page_by_page_until_the_run_ends,
    the_log_endpoint_refuses_bad_input_and_other_tenants,
    a_cancel_through_the_api_reaches_a_synchronous_handler_still_running,
    a_cancel_made_on_another_node_reaches_the_open_exchange_by_its_watch,
);

struct Setup {
    key: String,
    app_id: String,
    secret: String,
    exec: TestExecutor,
}

async fn setup(app: &TestApp) -> Setup {
    let t = app.tenant("acme").await;
    let (s, a) = app.post("/api/v1/apps", &t.admin, json!({"name": "billing"})).await;
    assert_eq!(s, StatusCode::CREATED);
    let secret = a["secret"].as_str().unwrap().to_string();
    let exec = TestExecutor::start(&secret, app.clock.clone()).await;
    let (s, _) = app.patch("/api/v1/apps/billing", &t.admin, json!({"endpoints": [exec.url]})).await;
    assert_eq!(s, StatusCode::OK);
    Setup { key: t.admin, app_id: a["id"].as_str().unwrap().into(), secret, exec }
}

fn every_minute(name: &str, extra: Value) -> Value {
    let mut body = json!({"name": name, "app": "billing", "handler": "invoice.run", "params": {"n": 1},
        "schedule": {"kind": "fixed_rate", "every_ms": 60000}});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

fn manual(name: &str, extra: Value) -> Value {
    let mut body = json!({"name": name, "app": "billing", "handler": "invoice.run", "schedule": {"kind": "manual"}});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

async fn runs(app: &TestApp, key: &str, job_id: &str) -> Vec<Value> {
    let (s, v) = app.get(&format!("/api/v1/runs?job_id={job_id}&limit=200"), key).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let mut items = v["items"].as_array().unwrap().clone();
    items.reverse(); // oldest first
    items
}

async fn run_detail(app: &TestApp, key: &str, run_id: &str) -> Value {
    let (s, v) = app.get(&format!("/api/v1/runs/{run_id}"), key).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v
}

async fn callback(app: &TestApp, s: &Setup, path: &str, msg_id: &str, body: Value) -> (StatusCode, Value) {
    let bytes = serde_json::to_vec(&body).unwrap();
    let mut req = app.http.post(format!("{}{}", app.base, path)).body(bytes.clone());
    for (k, v) in signed_headers(&s.secret, &s.app_id, msg_id, &bytes, app.clock.now_ms() / 1000) {
        req = req.header(k, v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

use sundial_core::clock::Clock;
use sundial_store::prelude::*;

async fn a_fixed_rate_job_fires_on_time_signed_and_succeeds(app: &TestApp) {
    let s = setup(app).await;
    let job = app.job(&s.key, every_minute("tick", json!({}))).await;
    let job_id = job["id"].as_str().unwrap();
    app.engine.tick().await.unwrap();
    let d = s.exec.deliveries();
    assert_eq!(d.len(), 1, "the fire at creation time");
    let r = &d[0];
    assert!(r.signature_ok, "signed with the app secret");
    let run_id = r.body["run_id"].as_str().unwrap();
    assert_eq!(r.headers["webhook-id"], format!("msg_{run_id}_0_1").as_str());
    assert_eq!(r.headers["sundial-run-id"], run_id);
    assert_eq!(r.headers["sundial-attempt"], "1");
    assert_eq!(r.headers["sundial-scheduled-at"], "2026-03-28T12:00:00.000Z");
    assert_eq!(r.headers["sundial-shard"], "0/1");
    assert_eq!(r.headers["sundial-app-id"], s.app_id.as_str());
    assert_eq!(r.headers["sundial-node"], "node_test", "the dispatching node names itself");
    assert_eq!(r.body["job"], "tick");
    assert_eq!(r.body["handler"], "invoice.run");
    assert_eq!(r.body["params"], json!({"n": 1}));
    assert_eq!(r.body["shard"], json!({"index": 0, "total": 1}));
    assert_eq!(r.body["trigger"], "schedule");
    // The body is exactly the published `Delivery` message (the spec's `webhooks.delivery`).
    let typed: sundial_core::protocol::Delivery = serde_json::from_value(r.body.clone()).unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap(), r.body);
    let spec: Value = serde_json::from_str(&sundial_api::openapi::document()).unwrap();
    let schema = &spec["components"]["schemas"]["Delivery"];
    let documented: std::collections::BTreeSet<&str> =
        schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
    let sent: std::collections::BTreeSet<&str> = r.body.as_object().unwrap().keys().map(String::as_str).collect();
    assert!(sent.is_subset(&documented), "undocumented fields: {:?}", sent.difference(&documented));
    for h in spec["webhooks"]["delivery"]["post"]["parameters"].as_array().unwrap() {
        if h["required"] == json!(true) {
            assert!(r.headers.contains_key(h["name"].as_str().unwrap()), "documented header {} sent", h["name"]);
        }
    }
    let detail = run_detail(app, &s.key, run_id).await;
    assert_eq!(detail["state"], "succeeded", "{detail}");
    assert_eq!(detail["fire_key"], format!("s:{T0}"));
    assert_eq!(detail["output"], json!({"done": true}));
    assert_eq!(detail["attempts"][0]["address"], s.exec.url.as_str());
    assert_eq!(detail["attempts"][0]["trail"].as_array().unwrap().last().unwrap()["outcome"], "delivered");
    // Nothing more until the next minute; then exactly one more, anchored on the grid.
    app.clock.advance(30_000);
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 1);
    app.clock.advance(30_000);
    app.engine.tick().await.unwrap();
    let d = s.exec.deliveries();
    assert_eq!(d.len(), 2);
    assert_eq!(d[1].headers["sundial-scheduled-at"], "2026-03-28T12:01:00.000Z");
    let all = runs(app, &s.key, job_id).await;
    assert!(all.len() >= 3, "runs are generated ahead of time");
    assert_eq!(all.iter().filter(|r| r["state"] == "succeeded").count(), 2);
    assert!(all.iter().skip(2).all(|r| r["state"] == "pending"));
}

/// Jobs created by `POST /api/v1/jobs/batch` fire as any other: each once at its instant,
/// signed, to the app's executor.
async fn jobs_created_in_a_batch_fire_each_once(app: &TestApp) {
    let s = setup(app).await;
    // Ten seconds after the test clock's 12:00:00Z: two cron jobs and a one-shot.
    let at_ten = |name: &str| {
        json!({"name": name, "app": "billing", "handler": format!("h.{name}"),
            "schedule": {"kind": "cron", "expression": "10 0 12 * * *"}})
    };
    let once = json!({"name": "once", "app": "billing", "handler": "h.once",
        "schedule": {"kind": "once", "at": "2026-03-28T12:00:10Z"}});
    let (st, v) = app.post("/api/v1/jobs/batch", &s.key, json!({"jobs": [at_ten("a"), at_ten("b"), once]})).await;
    assert_eq!(st, StatusCode::CREATED, "{v}");
    let mut ids: Vec<String> = v["jobs"].as_array().unwrap().iter().map(|j| j["id"].as_str().unwrap().into()).collect();
    app.engine.tick().await.unwrap();
    assert!(s.exec.deliveries().is_empty(), "nothing before its instant");
    app.clock.advance(10_000);
    app.engine.tick().await.unwrap();
    let d = s.exec.deliveries();
    let mut fired: Vec<String> = d.iter().map(|r| r.body["job_id"].as_str().unwrap().into()).collect();
    fired.sort();
    ids.sort();
    assert_eq!(fired, ids, "each job once");
    for r in &d {
        assert!(r.signature_ok, "signed with the app secret");
        assert_eq!(r.headers["sundial-scheduled-at"], "2026-03-28T12:00:10.000Z");
    }
    // A minute on, nothing more (the crons fire again tomorrow, the one-shot never).
    app.clock.advance(60_000);
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 3);
    for id in &ids {
        let all = runs(app, &s.key, id).await;
        let done: Vec<&Value> = all.iter().filter(|r| r["state"] == "succeeded").collect();
        assert_eq!(done.len(), 1, "{all:?}");
    }
}

async fn an_async_result_completes_the_run_once(app: &TestApp) {
    let s = setup(app).await;
    s.exec.always(Answer::Accept);
    let job = app.job(&s.key, manual("async", json!({}))).await;
    let (st, run) = app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), &s.key, json!({})).await;
    assert_eq!(st, StatusCode::CREATED, "{run}");
    let run_id = run["id"].as_str().unwrap().to_string();
    app.engine.tick().await.unwrap();
    assert_eq!(run_detail(app, &s.key, &run_id).await["state"], "running");
    let path = format!("/api/v1/runs/{run_id}/result");
    let ok = json!({"attempt": 1, "status": "succeeded", "output": {"rows": 3}});
    // A bad signature, an unknown app, a stale timestamp: 401 `bad_signature` saying which
    // check refused it, and nothing changes.
    let bytes = serde_json::to_vec(&ok).unwrap();
    let refused = |resp: reqwest::Response| async move {
        let status = resp.status();
        (status, resp.json::<Value>().await.unwrap_or(Value::Null))
    };
    let forged = app
        .http
        .post(format!("{}{}", app.base, path))
        .body(bytes.clone())
        .header("webhook-id", "m0")
        .header("webhook-timestamp", (app.clock.now_ms() / 1000).to_string())
        .header("webhook-signature", "v1,AAAA")
        .header("sundial-app-id", &s.app_id)
        .send()
        .await
        .unwrap();
    let v = refused(forged).await;
    assert_error(&v, StatusCode::UNAUTHORIZED, "bad_signature", None);
    assert!(v.1["message"].as_str().unwrap().contains("no signature"), "{}", v.1);
    let mut stale = app.http.post(format!("{}{}", app.base, path)).body(bytes.clone());
    for (k, v) in signed_headers(&s.secret, &s.app_id, "m-stale", &bytes, app.clock.now_ms() / 1000 - 301) {
        stale = stale.header(k, v);
    }
    let v = refused(stale.send().await.unwrap()).await;
    assert_error(&v, StatusCode::UNAUTHORIZED, "bad_signature", None);
    assert!(v.1["message"].as_str().unwrap().contains("tolerance"), "{}", v.1);
    let mut unknown = app.http.post(format!("{}{}", app.base, path)).body(bytes.clone());
    for (k, v) in signed_headers(&s.secret, "app_nope", "m-unknown", &bytes, app.clock.now_ms() / 1000) {
        unknown = unknown.header(k, v);
    }
    let v = refused(unknown.send().await.unwrap()).await;
    assert_error(&v, StatusCode::UNAUTHORIZED, "bad_signature", None);
    assert!(v.1["message"].as_str().unwrap().contains("unknown app"), "{}", v.1);
    // A signed body that is JSON but not an object (serde would read `[1, "succeeded"]` as
    // attempt and status): 422 naming the body.
    let (st, v) = callback(app, &s, &path, "m-array", json!([1, "succeeded"])).await;
    assert_eq!(
        (st, v["code"].clone(), v["details"]["field"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("wrong_type"), json!("body")),
        "{v}"
    );
    assert_eq!(run_detail(app, &s.key, &run_id).await["state"], "running", "refused calls changed nothing");
    // The result is accepted once (under the forged call's webhook-id: a refused call
    // records no id); the same result again is idempotent.
    let (st, v) = callback(app, &s, &path, "m0", ok.clone()).await;
    assert_eq!(
        (st, v["state"].clone(), v["duplicate"].clone()),
        (StatusCode::OK, json!("succeeded"), json!(false)),
        "{v}"
    );
    let (st, v) = callback(app, &s, &path, "m2", ok.clone()).await;
    assert_eq!((st, v["duplicate"].clone()), (StatusCode::OK, json!(true)));
    // A replayed webhook-id is refused by signature check, whatever it carries.
    let (st, v) = callback(app, &s, &path, "m0", ok.clone()).await;
    assert_eq!((st, v["code"].clone()), (StatusCode::UNAUTHORIZED, json!("replayed")));
    // A different result for the finished attempt, or another attempt: 409, never applied.
    let (st, v) = callback(app, &s, &path, "m3", json!({"attempt": 1, "status": "failed"})).await;
    assert_eq!((st, v["code"].clone()), (StatusCode::CONFLICT, json!("not_current")));
    let (st, v) = callback(app, &s, &path, "m4", json!({"attempt": 2, "status": "succeeded"})).await;
    assert_eq!((st, v["code"].clone()), (StatusCode::CONFLICT, json!("not_current")), "{v}");
    let detail = run_detail(app, &s.key, &run_id).await;
    assert_eq!((detail["state"].clone(), detail["output"].clone()), (json!("succeeded"), json!({"rows": 3})));
    // Logs from the executor land on the run.
    let (st, _) = callback(
        app,
        &s,
        &format!("/api/v1/runs/{run_id}/logs"),
        "m5",
        json!({"attempt": 1, "lines": [{"message": "started"}, {"level": "warn", "message": "slow"}]}),
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    let (st, v) = callback(
        app,
        &s,
        &format!("/api/v1/runs/{run_id}/logs"),
        "m6",
        json!({"attempt": 1, "lines": [{"level": "loud", "message": "x"}]}),
    )
    .await;
    assert_eq!((st, v["details"]["field"].clone()), (StatusCode::UNPROCESSABLE_ENTITY, json!("lines[0].level")));
    let logs = run_detail(app, &s.key, &run_id).await["logs"].clone();
    assert_eq!(
        logs.as_array().unwrap().iter().map(|l| l["message"].as_str().unwrap()).collect::<Vec<_>>(),
        ["started", "slow"]
    );
}

async fn failed_attempts_retry_with_backoff_in_the_same_run(app: &TestApp) {
    let s = setup(app).await;
    s.exec.then(Answer::Status(500, json!({}))).then(Answer::Fail("boom"));
    let job = app
        .job(
            &s.key,
            manual(
                "flaky",
                json!({"failure": {"policy": "retry", "max_retries": 2,
        "backoff": {"kind": "exponential", "base_ms": 1000, "jitter": false}}}),
            ),
        )
        .await;
    let (_, run) = app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), &s.key, json!({})).await;
    let run_id = run["id"].as_str().unwrap();
    app.engine.tick().await.unwrap();
    let d = run_detail(app, &s.key, run_id).await;
    assert_eq!((d["state"].clone(), d["attempt"].clone()), (json!("retrying"), json!(1)), "{d}");
    app.clock.advance(999);
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 1, "not before the backoff");
    app.clock.advance(1);
    app.engine.tick().await.unwrap();
    assert_eq!(run_detail(app, &s.key, run_id).await["state"], "retrying");
    app.clock.advance(2000);
    app.engine.tick().await.unwrap();
    let d = run_detail(app, &s.key, run_id).await;
    assert_eq!((d["state"].clone(), d["attempt"].clone()), (json!("succeeded"), json!(3)), "{d}");
    let ids: Vec<String> =
        s.exec.deliveries().iter().map(|r| r.headers["webhook-id"].to_str().unwrap().to_string()).collect();
    assert_eq!(ids, [1, 2, 3].map(|a| format!("msg_{run_id}_0_{a}")), "three attempts of one run");
    assert_eq!(runs(app, &s.key, job["id"].as_str().unwrap()).await.len(), 1, "a retry is never a new run");
    assert_eq!(d["attempts"][1]["message"], "boom");
    // Discard: one attempt, then failed.
    let job = app.job(&s.key, manual("once-only", json!({"failure": {"policy": "discard"}}))).await;
    s.exec.then(Answer::Fail("nope"));
    let (_, run) = app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), &s.key, json!({})).await;
    app.engine.tick().await.unwrap();
    let d = run_detail(app, &s.key, run["id"].as_str().unwrap()).await;
    assert_eq!((d["state"].clone(), d["reason"].clone()), (json!("failed"), json!("error")));
}

/// `"retry": false` with a failure (a script that does not compile, a missing runtime): the
/// run fails at once whatever the failure policy allows, by answer and by callback alike.
async fn a_failure_the_executor_says_cannot_succeed_is_not_retried(app: &TestApp) {
    let s = setup(app).await;
    let policy = json!({"failure": {"policy": "retry", "max_retries": 5,
        "backoff": {"kind": "fixed", "base_ms": 1000, "jitter": false}}});
    let job = app.job(&s.key, manual("broken", policy.clone())).await;
    s.exec.then(Answer::Status(
        200,
        json!({"status": "failed", "message": "the python source does not compile", "retry": false}),
    ));
    let (_, run) = app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), &s.key, json!({})).await;
    let run_id = run["id"].as_str().unwrap().to_string();
    app.engine.tick().await.unwrap();
    let d = run_detail(app, &s.key, &run_id).await;
    assert_eq!((d["state"].clone(), d["attempt"].clone()), (json!("failed"), json!(1)), "{d}");
    assert_eq!(d["attempts"][0]["message"], "the python source does not compile");
    app.clock.advance(10_000);
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 1, "one attempt, no retry");
    // `"retry": true` (or none) leaves it to the policy.
    s.exec.then(Answer::Status(200, json!({"status": "failed", "message": "flaky", "retry": true})));
    let (_, run) = app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), &s.key, json!({})).await;
    app.engine.tick().await.unwrap();
    assert_eq!(run_detail(app, &s.key, run["id"].as_str().unwrap()).await["state"], "retrying");
    // By callback: the same.
    let job = app.job(&s.key, manual("broken-async", policy)).await;
    s.exec.always(Answer::Accept);
    let (_, run) = app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), &s.key, json!({})).await;
    let run_id = run["id"].as_str().unwrap().to_string();
    app.engine.tick().await.unwrap();
    let (st, v) = callback(
        app,
        &s,
        &format!("/api/v1/runs/{run_id}/result"),
        "m-final",
        json!({"attempt": 1, "status": "failed", "message": "script missing", "retry": false}),
    )
    .await;
    assert_eq!((st, v["state"].clone()), (StatusCode::OK, json!("failed")), "{v}");
}

async fn misfire_skip_fire_once_and_fire_all_after_downtime(app: &TestApp) {
    let s = setup(app).await;
    let mk = |name: &str, policy: &str| {
        json!({"name": name, "app": "billing", "handler": "h",
        "schedule": {"kind": "fixed_rate", "every_ms": 10000}, "misfire": {"policy": policy}})
    };
    let skip = app.job(&s.key, mk("skip", "skip")).await;
    let once = app.job(&s.key, mk("once", "fire_once")).await;
    let all = app.job(&s.key, mk("all", "fire_all")).await;
    // Down for 60 s: fires at T0, +10 … +60 s; those older than the 5 s threshold are missed.
    app.clock.advance(60_000);
    // Serial jobs (the default) deliver one run at a time: let the queue drain (4.5 s < the next fire).
    for _ in 0..9 {
        app.engine.tick().await.unwrap();
        app.clock.advance(500);
    }
    let delivered = |job: &Value| s.exec.deliveries().iter().filter(|r| r.body["job_id"] == job["id"]).count();
    let states = |rs: &[Value]| rs.iter().map(|r| r["state"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    let r_skip = runs(app, &s.key, skip["id"].as_str().unwrap()).await;
    assert_eq!(delivered(&skip), 1, "only the on-time fire at +60 s");
    assert_eq!(states(&r_skip[..6]), ["expired"; 6], "every missed fire is recorded expired");
    let r_once = runs(app, &s.key, once["id"].as_str().unwrap()).await;
    assert_eq!(delivered(&once), 2, "the missed fires collapse into one, plus the on-time one");
    assert_eq!(states(&r_once[..7]), ["expired", "expired", "expired", "expired", "expired", "succeeded", "succeeded"]);
    let r_all = runs(app, &s.key, all["id"].as_str().unwrap()).await;
    assert_eq!(delivered(&all), 7, "each missed fire is delivered late");
    assert!(r_all[..7].iter().all(|r| r["state"] == "succeeded"));
    // None doubled: one run per fire key.
    let mut keys: Vec<&str> = r_all.iter().map(|r| r["fire_key"].as_str().unwrap()).collect();
    keys.dedup();
    assert_eq!(keys.len(), r_all.len());
}

async fn a_long_outage_is_one_counted_record(app: &TestApp) {
    let s = setup(app).await;
    let job = app
        .job(
            &s.key,
            json!({"name": "every-second", "app": "billing", "handler": "h",
        "schedule": {"kind": "fixed_rate", "every_ms": 1000},
        "misfire": {"policy": "fire_all", "catchup_window_ms": 30000, "max_catchup": 10}}),
        )
        .await;
    app.clock.advance(3_600_000);
    app.engine.tick().await.unwrap();
    let rs = runs(app, &s.key, job["id"].as_str().unwrap()).await;
    let expired: Vec<&Value> = rs.iter().filter(|r| r["state"] == "expired").collect();
    assert_eq!(expired.len(), 1, "no flood of rows");
    // Fires at T0 … T0+3600 s; those more than 5 s late (T0 … T0+3594 s) are missed.
    let missed_total = 3595;
    assert_eq!(expired[0]["expired_count"].as_i64().unwrap() + 10, missed_total, "{}", expired[0]);
    // Serial: one delivery at a time, a blocked run retries every 500 ms.
    for _ in 0..30 {
        app.engine.tick().await.unwrap();
        app.clock.advance(500);
    }
    let on_time = rs.iter().filter(|r| r["state"] != "expired").count() - 10;
    assert!(on_time >= 6, "the fires of the last 5 s");
    let late = s
        .exec
        .deliveries()
        .iter()
        .filter(|d| d.headers["sundial-scheduled-at"].to_str().unwrap() < "2026-03-28T12:59:55")
        .count();
    assert_eq!(late, 10, "the cap of late fires is delivered, no more");
}

async fn trigger(app: &TestApp, key: &str, job_id: &str) -> String {
    let (st, r) = app.post(&format!("/api/v1/jobs/{job_id}/trigger"), key, json!({})).await;
    assert_eq!(st, StatusCode::CREATED, "{r}");
    r["id"].as_str().unwrap().to_string()
}

async fn state(app: &TestApp, key: &str, run_id: &str) -> String {
    run_detail(app, key, run_id).await["state"].as_str().unwrap().to_string()
}

async fn block_strategies_and_max_concurrency(app: &TestApp) {
    let s = setup(app).await;
    s.exec.always(Answer::Accept);
    let key = s.key.as_str();
    for (block, second_state, first_state) in [
        ("serial", "queued", "running"),
        ("discard_later", "skipped", "running"),
        ("cover_early", "running", "cancelled"),
    ] {
        let job = app.job(&s.key, manual(block, json!({"block": block}))).await;
        let id = job["id"].as_str().unwrap().to_string();
        let first = trigger(app, key, &id).await;
        app.engine.tick().await.unwrap();
        assert_eq!(state(app, key, &first).await, "running");
        let second = trigger(app, key, &id).await;
        app.engine.tick().await.unwrap();
        assert_eq!(state(app, key, &second).await, second_state, "block {block}");
        assert_eq!(state(app, key, &first).await, first_state, "block {block}");
    }
    let c = s.exec.wait_cancels(1).await;
    assert_eq!(c.len(), 1, "cover_early cancels the running run at its executor");
    assert!(c[0].signature_ok);
    // Serial: the waiting run goes once its predecessor finishes.
    let serial_job = app.get("/api/v1/jobs?name=serial", &s.key).await.1;
    let serial = runs(app, &s.key, serial_job["items"][0]["id"].as_str().unwrap()).await;
    let (first, second) = (serial[0]["id"].as_str().unwrap(), serial[1]["id"].as_str().unwrap());
    let (st, _) =
        callback(app, &s, &format!("/api/v1/runs/{first}/result"), "r1", json!({"attempt": 1, "status": "succeeded"}))
            .await;
    assert_eq!(st, StatusCode::OK);
    app.clock.advance(600);
    app.engine.tick().await.unwrap();
    assert_eq!(run_detail(app, &s.key, second).await["state"], "running");
    // `max_concurrency` 2: two runs go side by side; at the limit the block strategy acts.
    for (block, third_state) in [("discard_later", "skipped"), ("serial", "queued"), ("cover_early", "running")] {
        let name = format!("two-{block}");
        let job = app.job(&s.key, manual(&name, json!({"block": block, "max_concurrency": 2}))).await;
        let id = job["id"].as_str().unwrap().to_string();
        let mut ids = Vec::new();
        for _ in 0..3 {
            ids.push(trigger(app, key, &id).await);
            app.engine.tick().await.unwrap();
            app.clock.advance(10);
        }
        let states = [state(app, key, &ids[0]).await, state(app, key, &ids[1]).await, state(app, key, &ids[2]).await];
        let first = if block == "cover_early" { "cancelled" } else { "running" };
        assert_eq!(states, [first, "running", third_state], "block {block} at max_concurrency 2");
        if block == "discard_later" {
            assert_eq!(run_detail(app, key, &ids[2]).await["message"], "max_concurrency reached");
        }
    }
}

async fn triggers_are_idempotent_and_may_be_delayed(app: &TestApp) {
    let s = setup(app).await;
    let job = app.job(&s.key, manual("on-demand", json!({}))).await;
    let path = format!("{}/api/v1/jobs/{}/trigger", app.base, job["id"].as_str().unwrap());
    let send = |key: &'static str, body: Value| {
        let req = app.http.post(&path).bearer_auth(&s.key).header("idempotency-key", key).json(&body);
        async move {
            let r = req.send().await.unwrap();
            (r.status(), r.json::<Value>().await.unwrap())
        }
    };
    let (st1, r1) = send("order-42", json!({"params": {"order": 42}})).await;
    let (st2, r2) = send("order-42", json!({"params": {"order": 42}})).await;
    assert_eq!((st1, st2), (StatusCode::CREATED, StatusCode::OK));
    assert_eq!(r1["id"], r2["id"], "the same run, not a second fire");
    assert_eq!((r1["fire_key"].clone(), r1["trigger"].clone()), (json!("i:order-42"), json!("api")));
    let (_, later) = app
        .post(
            &format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()),
            &s.key,
            json!({"at": "2026-03-28T12:00:30Z", "params": {"late": true}}),
        )
        .await;
    assert_eq!(later["trigger"], "manual");
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 1, "only the immediate one");
    assert_eq!(s.exec.deliveries()[0].body["params"], json!({"order": 42}));
    app.clock.advance(30_000);
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 2);
    assert_eq!(s.exec.deliveries()[1].body["params"], json!({"late": true}));
    let bad =
        app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), &s.key, json!({"at": "soon"})).await;
    assert_error(&bad, StatusCode::UNPROCESSABLE_ENTITY, "invalid_field", Some("at"));
}

async fn registered_executors_route_fail_over_and_go_offline(app: &TestApp) {
    let s = setup(app).await;
    app.patch("/api/v1/apps/billing", &s.key, json!({"endpoints": []})).await;
    let e2 = TestExecutor::start(&s.secret, app.clock.clone()).await;
    let reg = |url: &str, msg: &str| json!({"address": url, "name": msg, "handlers": ["report.build"], "tags": ["eu"]});
    let (st, r1) = callback(app, &s, "/api/v1/executors/register", "reg-1", reg(&s.exec.url, "reg-1")).await;
    assert_eq!(st, StatusCode::OK, "{r1}");
    assert_eq!(r1["heartbeat_interval_ms"], 3000);
    assert_eq!(r1["jobs_created"].as_array().unwrap().len(), 1);
    app.clock.advance(1);
    let (_, r2) = callback(app, &s, "/api/v1/executors/register", "reg-2", reg(&e2.url, "reg-2")).await;
    assert!(r2["jobs_created"].as_array().unwrap().is_empty(), "one job per app and handler");
    let job_id = r1["jobs_created"][0].as_str().unwrap();
    let (_, job) = app.get(&format!("/api/v1/jobs/{job_id}"), &s.key).await;
    assert_eq!((job["state"].clone(), job["source"].clone()), (json!("stopped"), json!("registration")));
    // The job's route: failover. The first executor is going offline.
    let mut body = manual("reports", json!({"route": "failover"}));
    body["handler"] = json!("report.build");
    let job = app.job(&s.key, body).await;
    s.exec.then(Answer::Status(503, json!({"code": "executor_offline"})));
    let (_, run) = app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), &s.key, json!({})).await;
    app.engine.tick().await.unwrap();
    let d = run_detail(app, &s.key, run["id"].as_str().unwrap()).await;
    assert_eq!(d["state"], "succeeded", "{d}");
    assert_eq!(d["attempts"][0]["address"], e2.url.as_str());
    let trail: Vec<String> = d["attempts"][0]["trail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["outcome"].as_str().unwrap().to_string())
        .collect();
    assert!(trail.contains(&"executor_offline".to_string()) && trail.last().unwrap() == "delivered", "{trail:?}");
    let (_, list) = app.get("/api/v1/apps/billing/executors", &s.key).await;
    let states: Vec<&str> = list["items"].as_array().unwrap().iter().map(|e| e["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["offline", "online"]);
    // Heartbeats keep an executor online; silence for 10 s makes it offline.
    let (st, _) = callback(
        app,
        &s,
        "/api/v1/executors/heartbeat",
        "hb-1",
        json!({"executor_id": r2["executor_id"], "running": 2}),
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    app.clock.advance(10_001);
    let (_, list) = app.get("/api/v1/apps/billing/executors", &s.key).await;
    assert!(list["items"].as_array().unwrap().iter().all(|e| e["state"] == "offline"));
    let (_, run) =
        app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), &s.key, json!({"params": {}})).await;
    app.engine.tick().await.unwrap();
    let d = run_detail(app, &s.key, run["id"].as_str().unwrap()).await;
    assert_eq!((d["state"].clone(), d["reason"].clone()), (json!("retrying"), json!("no_executor")), "{d}");
    let (st, v) = callback(app, &s, "/api/v1/executors/heartbeat", "hb-2", json!({"executor_id": "exe_nope"})).await;
    assert_eq!((st, v["code"].clone()), (StatusCode::NOT_FOUND, json!("not_found")), "{v}");
    let (st, v) =
        callback(app, &s, "/api/v1/executors/register", "reg-3", json!({"address": "ftp://x", "handlers": []})).await;
    assert_eq!((st, v["details"]["field"].clone()), (StatusCode::UNPROCESSABLE_ENTITY, json!("address")));
    // What a registration may carry is bounded, and each refusal names its field.
    let addr = s.exec.url.clone();
    let too_many: Vec<String> = (0..1001).map(|i| format!("h{i}")).collect();
    for (i, (body, field)) in [
        (json!({"address": addr, "handlers": too_many}), "handlers"),
        (json!({"address": addr, "tags": vec!["t"; 51]}), "tags"),
        (json!({"address": addr, "tags": ["ok", ""]}), "tags[1]"),
        (json!({"address": addr, "metadata": [1, 2]}), "metadata"),
        (json!({"address": addr, "metadata": {"blob": "x".repeat(20_000)}}), "metadata"),
    ]
    .into_iter()
    .enumerate()
    {
        let (st, v) = callback(app, &s, "/api/v1/executors/register", &format!("reg-bad-{i}"), body).await;
        assert_eq!((st, v["details"]["field"].clone()), (StatusCode::UNPROCESSABLE_ENTITY, json!(field)), "{v}");
    }
    let (st, v) = callback(
        app,
        &s,
        "/api/v1/executors/heartbeat",
        "hb-bad",
        json!({"executor_id": r1["executor_id"], "metadata": "v2"}),
    )
    .await;
    assert_eq!((st, v["details"]["field"].clone()), (StatusCode::UNPROCESSABLE_ENTITY, json!("metadata")), "{v}");
    let (_, list) = app.get("/api/v1/apps/billing/executors", &s.key).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 2, "no refused registration was written: {list}");
}

async fn the_reaper_times_out_silent_runs_and_cancels_them(app: &TestApp) {
    let s = setup(app).await;
    s.exec.always(Answer::Accept);
    let job = app.job(&s.key, manual("slow", json!({"timeout_ms": 10000, "failure": {"policy": "discard"}}))).await;
    let (_, run) = app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), &s.key, json!({})).await;
    let run_id = run["id"].as_str().unwrap();
    app.engine.tick().await.unwrap();
    app.clock.advance(10_000 + 4_000);
    assert_eq!(app.engine.reap_once().await.unwrap(), 0, "within the grace period");
    app.clock.advance(1_001);
    assert_eq!(app.engine.reap_once().await.unwrap(), 1);
    let d = run_detail(app, &s.key, run_id).await;
    assert_eq!((d["state"].clone(), d["reason"].clone()), (json!("failed"), json!("timeout")), "{d}");
    let c = s.exec.wait_cancels(1).await;
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].body, json!({"run_id": run_id, "attempt": 1}));
    // A late result for the timed-out attempt is refused.
    let (st, v) = callback(
        app,
        &s,
        &format!("/api/v1/runs/{run_id}/result"),
        "late",
        json!({"attempt": 1, "status": "succeeded"}),
    )
    .await;
    assert_eq!((st, v["code"].clone()), (StatusCode::CONFLICT, json!("not_current")), "{v}");
}

async fn stop_drops_future_fires_and_start_does_not_catch_up(app: &TestApp) {
    let s = setup(app).await;
    let job = app.job(&s.key, every_minute("tick", json!({}))).await;
    let id = job["id"].as_str().unwrap();
    app.engine.tick().await.unwrap();
    assert!(runs(app, &s.key, id).await.iter().any(|r| r["state"] == "pending"));
    app.post(&format!("/api/v1/jobs/{id}/stop"), &s.key, json!({})).await;
    assert!(runs(app, &s.key, id).await.iter().all(|r| r["state"] != "pending"), "future fires dropped");
    app.clock.advance(600_000);
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 1, "a stopped job fires nothing");
    // Manual triggers still work while stopped.
    app.post(&format!("/api/v1/jobs/{id}/trigger"), &s.key, json!({})).await;
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 2);
    app.clock.advance(30_000); // 12:10:30
    app.post(&format!("/api/v1/jobs/{id}/start"), &s.key, json!({})).await;
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 2, "no catch-up of the stopped period");
    app.clock.advance(30_000);
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 3);
    assert_eq!(s.exec.deliveries()[2].headers["sundial-scheduled-at"], "2026-03-28T12:11:00.000Z");
}

async fn children_fire_with_the_parents_output(app: &TestApp) {
    let s = setup(app).await;
    let child = app.job(&s.key, manual("child", json!({}))).await;
    let parent = app.job(&s.key, manual("parent", json!({"children": [child["id"]]}))).await;
    s.exec.then(Answer::Ok(json!({"rows": 7})));
    app.post(&format!("/api/v1/jobs/{}/trigger", parent["id"].as_str().unwrap()), &s.key, json!({})).await;
    app.engine.tick().await.unwrap();
    app.engine.tick().await.unwrap();
    let d = s.exec.deliveries();
    assert_eq!(d.len(), 2, "parent then child");
    assert_eq!(d[1].body["trigger"], "parent");
    assert_eq!(d[1].body["parent"], json!({"run_id": d[0].body["run_id"], "output": {"rows": 7}}));
    let child_runs = runs(app, &s.key, child["id"].as_str().unwrap()).await;
    assert_eq!(child_runs[0]["fire_key"], format!("p:{}", d[0].body["run_id"].as_str().unwrap()));
    // One chain: the parent's run is its root, the child's run is in it.
    let root = d[0].body["run_id"].as_str().unwrap();
    assert_eq!(child_runs[0]["chain_id"], root);
    let (st, chain) = app.get(&format!("/api/v1/runs?chain_id={root}"), &s.key).await;
    assert_eq!(st, StatusCode::OK, "{chain}");
    let ids: Vec<&str> = chain["items"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [root, child_runs[0]["id"].as_str().unwrap()], "root first: {chain}");
    assert!(chain["items"].as_array().unwrap().iter().all(|r| r["chain_id"] == root));
    let (st, v) = app.get(&format!("/api/v1/runs?chain_id={root}&cursor=1:x"), &s.key).await;
    assert_eq!((st, v["details"]["field"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("cursor")), "{v}");

    // A clean-up step on failure: a parent failing for good (no retries) fires its
    // `on_failure` and `always` children, not its `on_success` one.
    let cleanup = app.job(&s.key, manual("cleanup", json!({}))).await;
    let audit = app.job(&s.key, manual("audit", json!({}))).await;
    let risky = app
        .job(
            &s.key,
            manual(
                "risky",
                json!({"failure": {"policy": "discard"}, "children": [
                    child["id"], {"job": cleanup["id"], "on": "on_failure"}, {"job": audit["id"], "on": "always"}]}),
            ),
        )
        .await;
    s.exec.then(Answer::Fail("disk full"));
    let (_, run) =
        app.post(&format!("/api/v1/jobs/{}/trigger", risky["id"].as_str().unwrap()), &s.key, json!({})).await;
    app.engine.tick().await.unwrap();
    app.engine.tick().await.unwrap();
    assert_eq!(run_detail(app, &s.key, run["id"].as_str().unwrap()).await["state"], "failed");
    let d = s.exec.deliveries();
    let mut fired: Vec<&str> = d[3..].iter().map(|x| x.body["job"].as_str().unwrap()).collect();
    fired.sort();
    assert_eq!(fired, ["audit", "cleanup"], "{d:?}");
    assert!(d[3..].iter().all(|x| x.body["parent"]["run_id"] == run["id"]));
    assert_eq!(runs(app, &s.key, child["id"].as_str().unwrap()).await.len(), 1, "no on_success child this time");
}

async fn the_pause_switch_stops_schedules_not_triggers(app: &TestApp) {
    let s = setup(app).await;
    let (st, v) = app
        .call("PUT", "/api/v1/settings/scheduling", Some(&app.operator_key), Some(br#"{"paused": true}"#.to_vec()))
        .await;
    assert_eq!((st, v), (StatusCode::OK, json!({"paused": true})));
    assert_error(
        &app.call("PUT", "/api/v1/settings/scheduling", Some(&s.key), Some(br#"{"paused": true}"#.to_vec())).await,
        StatusCode::FORBIDDEN,
        "forbidden",
        None,
    );
    let job = app.job(&s.key, every_minute("tick", json!({}))).await;
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 0, "paused: no schedule fires");
    app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), &s.key, json!({})).await;
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 1, "triggers still run");
    app.call("PUT", "/api/v1/settings/scheduling", Some(&app.operator_key), Some(br#"{"paused": false}"#.to_vec()))
        .await;
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 2, "resumed: the held fire goes");
}

async fn a_retired_handler_stops_the_job(app: &TestApp) {
    let s = setup(app).await;
    s.exec.always(Answer::Status(410, json!({"code": "handler_retired"})));
    let job = app.job(&s.key, every_minute("old", json!({"failure": {"policy": "discard"}}))).await;
    app.engine.tick().await.unwrap();
    let (_, j) = app.get(&format!("/api/v1/jobs/{}", job["id"].as_str().unwrap()), &s.key).await;
    assert_eq!(j["state"], "stopped");
}

async fn editing_a_job_rederives_its_future_runs(app: &TestApp) {
    let s = setup(app).await;
    let job = app.job(&s.key, every_minute("tick", json!({}))).await;
    let id = job["id"].as_str().unwrap();
    app.engine.generate_once().await.unwrap();
    let before = runs(app, &s.key, id).await;
    assert!(before.len() >= 3);
    app.clock.advance(1_000);
    let (st, _) = app
        .put(
            &format!("/api/v1/jobs/{id}"),
            &s.key,
            json!({"name": "tick", "app": "billing", "handler": "h",
        "schedule": {"kind": "fixed_rate", "every_ms": 60000, "anchor": "2026-03-28T12:00:30Z"}}),
        )
        .await;
    assert_eq!(st, StatusCode::OK);
    app.engine.generate_once().await.unwrap();
    let after = runs(app, &s.key, id).await;
    let future: Vec<&str> = after
        .iter()
        .filter(|r| r["state"] == "pending" && r["scheduled_at"].as_str().unwrap() > "2026-03-28T12:00:01")
        .map(|r| r["scheduled_at"].as_str().unwrap())
        .collect();
    assert!(future.len() >= 2 && future.iter().all(|t| t.ends_with(":30.000Z")), "only the new grid ahead: {future:?}");
    let mut keys: Vec<&str> = after.iter().map(|r| r["fire_key"].as_str().unwrap()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), after.len(), "never duplicated");
}

async fn a_dead_nodes_claims_are_recovered_and_redelivered_with_the_same_webhook_id(app: &TestApp) {
    use std::sync::Arc;
    use sundial_engine::{Engine, EngineConfig};
    let s = setup(app).await;
    let job = app.job(&s.key, manual("recover", json!({"timeout_ms": 10000}))).await;
    let job_id = job["id"].as_str().unwrap();
    let queued = trigger(app, &s.key, job_id).await;
    // Node A claims the run into its timer, then dies before firing it.
    let node_a = Engine::new(
        app.db.store(),
        Arc::new(app.clock.clone()),
        EngineConfig::new("node_a"),
        Arc::new(Default::default()),
    );
    assert_eq!(node_a.claim_once().await.unwrap(), 1);
    drop(node_a);
    assert_eq!(state(app, &s.key, &queued).await, "queued");
    // Another run: node A committed `dispatching` and died before (or while) sending.
    let dispatching = trigger(app, &s.key, job_id).await;
    let store = app.db.store();
    store
        .run_claim(&sundial_store::ClaimParams {
            node_id: "node_a".into(),
            due_before_ms: app.clock.now_ms(),
            now_ms: app.clock.now_ms(),
            lease_until_ms: app.clock.now_ms() + 30_000,
            limit: 10,
            include_schedule: true,
            owned_buckets: sundial_core::affinity::ALL_BUCKETS,
            foreign_due_before_ms: app.clock.now_ms(),
            own_fires_due_before_ms: None,
            skip_tenant: None,
        })
        .await
        .unwrap();
    let d = store.run_dispatch_begin(&dispatching, "node_a", app.clock.now_ms(), 30_000).await.unwrap();
    assert!(matches!(d, sundial_store::DispatchDecision::Dispatch { .. }), "{d:?}");
    assert_eq!(state(app, &s.key, &dispatching).await, "dispatching");
    // Node B, the survivor, does nothing while the leases hold ...
    let node_b = Engine::new(
        app.db.store(),
        Arc::new(app.clock.clone()),
        EngineConfig::new("node_b"),
        Arc::new(Default::default()),
    );
    node_b.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 0);
    // ... and recovers both once they expire: the queued run fires (misfire fire_once),
    // the dispatching one is redelivered as attempt 1 with the same webhook-id.
    app.clock.advance(10_000 + 30_000 + 1);
    node_b.tick().await.unwrap();
    app.clock.advance(600); // the job is serial: the queued run waits for the redelivered one
    node_b.tick().await.unwrap();
    let ids: Vec<String> =
        s.exec.deliveries().iter().map(|r| r.headers["webhook-id"].to_str().unwrap().to_string()).collect();
    assert!(ids.contains(&format!("msg_{dispatching}_0_1")), "{ids:?}");
    assert!(ids.contains(&format!("msg_{queued}_0_1")), "{ids:?}");
    assert_eq!(ids.len(), 2, "each delivered once: {ids:?}");
    assert_eq!(state(app, &s.key, &queued).await, "succeeded");
    assert_eq!(state(app, &s.key, &dispatching).await, "succeeded");
    assert_eq!(run_detail(app, &s.key, &dispatching).await["attempt"], 1, "a redelivery is not a new attempt");
}

async fn runs_of_a_silent_executor_are_lost_after_a_grace_period(app: &TestApp) {
    let s = setup(app).await;
    app.patch("/api/v1/apps/billing", &s.key, json!({"endpoints": []})).await;
    s.exec.always(Answer::Accept);
    let (st, reg) = callback(
        app,
        &s,
        "/api/v1/executors/register",
        "reg",
        json!({"address": s.exec.url, "handlers": ["invoice.run"]}),
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    let job = app.job(&s.key, manual("long", json!({"timeout_ms": 3600000, "failure": {"policy": "discard"}}))).await;
    let run = trigger(app, &s.key, job["id"].as_str().unwrap()).await;
    app.engine.tick().await.unwrap();
    assert_eq!(state(app, &s.key, &run).await, "running");
    // A missed heartbeat or two is not enough.
    app.clock.advance(20_000);
    let (st, _) = callback(
        app,
        &s,
        "/api/v1/executors/heartbeat",
        "hb",
        json!({"executor_id": reg["executor_id"], "running": 1}),
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    app.clock.advance(29_000);
    assert_eq!(app.engine.reap_once().await.unwrap(), 0);
    assert_eq!(state(app, &s.key, &run).await, "running");
    app.clock.advance(1_001);
    assert_eq!(app.engine.reap_once().await.unwrap(), 1);
    let d = run_detail(app, &s.key, &run).await;
    assert_eq!((d["state"].clone(), d["reason"].clone()), (json!("failed"), json!("lost")), "{d}");
}

async fn a_node_whose_clock_is_off_stops_claiming(app: &TestApp) {
    let s = setup(app).await;
    let job = app.job(&s.key, manual("skew", json!({}))).await;
    // The test clock starts months away from the database's: the node refuses to claim.
    app.engine.heartbeat_once().await.unwrap();
    assert!(app.engine.clock_skewed());
    trigger(app, &s.key, job["id"].as_str().unwrap()).await;
    assert_eq!(app.engine.claim_once().await.unwrap(), 0);
    // Back in line with the database: it claims and fires.
    app.clock.set(app.db.store.db_now_ms().await.unwrap());
    app.engine.heartbeat_once().await.unwrap();
    assert!(!app.engine.clock_skewed());
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 1);
    let (st, nodes) = app.get("/api/v1/nodes", &app.operator_key).await;
    assert_eq!(st, StatusCode::OK, "{nodes}");
    assert_eq!(nodes["items"][0]["id"], "node_test");
    assert_eq!(nodes["items"][0]["state"], "alive");
}

async fn a_retry_waits_while_the_timed_out_executor_still_runs_it(app: &TestApp) {
    let s = setup(app).await;
    app.patch("/api/v1/apps/billing", &s.key, json!({"endpoints": []})).await;
    s.exec.always(Answer::Accept);
    let (st, reg) = callback(
        app,
        &s,
        "/api/v1/executors/register",
        "reg",
        json!({"address": s.exec.url, "handlers": ["invoice.run"]}),
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    let exe = reg["executor_id"].clone();
    let retry = |overlap: bool| {
        json!({"timeout_ms": 10000, "failure": {"policy": "retry", "max_retries": 3, "allow_overlap": overlap,
            "backoff": {"kind": "fixed", "base_ms": 1000, "jitter": false}}})
    };
    let careful = app.job(&s.key, manual("careful", retry(false))).await;
    assert_eq!(careful["failure"]["allow_overlap"], false);
    let relaxed = app.job(&s.key, manual("relaxed", retry(true))).await;
    let c = trigger(app, &s.key, careful["id"].as_str().unwrap()).await;
    let r = trigger(app, &s.key, relaxed["id"].as_str().unwrap()).await;
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 2);
    // Both attempts time out; the executor keeps reporting both runs as running.
    app.clock.advance(15_001);
    running_heartbeat(app, &s, &exe, "hb-1", json!([c, r])).await;
    assert_eq!(app.engine.reap_once().await.unwrap(), 2);
    assert_eq!(s.exec.wait_cancels(2).await.len(), 2, "each timed-out attempt was cancelled");
    app.clock.advance(1_000);
    app.engine.tick().await.unwrap();
    assert_eq!(run_detail(app, &s.key, &r).await["attempt"], 2, "overlap allowed: the retry went at once");
    assert_eq!(state(app, &s.key, &c).await, "retrying", "the executor still runs it: the retry waits");
    app.clock.advance(600);
    running_heartbeat(app, &s, &exe, "hb-2", json!([c])).await;
    app.engine.tick().await.unwrap();
    assert_eq!(run_detail(app, &s.key, &c).await["attempt"], 1, "still listed: still waiting");
    // The executor lets go of it: the retry starts.
    app.clock.advance(600);
    running_heartbeat(app, &s, &exe, "hb-3", json!([])).await;
    app.engine.tick().await.unwrap();
    let d = run_detail(app, &s.key, &c).await;
    assert_eq!((d["attempt"].clone(), d["state"].clone()), (json!(2), json!("running")), "{d}");
    // A bad list is refused, naming the field, and changes nothing.
    let bad = json!({"executor_id": exe, "running_runs": ["run_1", ""]});
    let (st, v) = callback(app, &s, "/api/v1/executors/heartbeat", "hb-bad", bad).await;
    assert_eq!((st, v["details"]["field"].clone()), (StatusCode::UNPROCESSABLE_ENTITY, json!("running_runs[1]")));
}

async fn running_heartbeat(app: &TestApp, s: &Setup, executor_id: &Value, msg_id: &str, running: Value) {
    let body = json!({"executor_id": executor_id, "running_runs": running});
    let (st, v) = callback(app, s, "/api/v1/executors/heartbeat", msg_id, body).await;
    assert_eq!(st, StatusCode::OK, "{v}");
}

async fn many_due_runs_go_out_in_batches_and_each_result_is_recorded_once(app: &TestApp) {
    let s = setup(app).await;
    // More runs than one dispatch batch (64) and than one IN-list chunk (32), due together.
    let mut runs_by_job = Vec::new();
    for i in 0..70 {
        let job = app.job(&s.key, manual(&format!("bulk-{i}"), json!({"params": {"i": i}}))).await;
        let run = trigger(app, &s.key, job["id"].as_str().unwrap()).await;
        runs_by_job.push((job["id"].as_str().unwrap().to_string(), run));
    }
    assert_eq!(app.engine.tick().await.unwrap(), 70);
    let deliveries = s.exec.deliveries();
    assert_eq!(deliveries.len(), 70, "each run delivered once");
    let ids: std::collections::HashSet<String> =
        deliveries.iter().map(|d| d.headers["webhook-id"].to_str().unwrap().to_string()).collect();
    assert_eq!(ids.len(), 70);
    for (job_id, run_id) in &runs_by_job {
        let d = run_detail(app, &s.key, run_id).await;
        assert_eq!((d["state"].clone(), d["attempt"].clone()), (json!("succeeded"), json!(1)), "{d}");
        // Where it went is recorded with the result, in the same group commit.
        assert_eq!(d["attempts"][0]["address"], s.exec.url.as_str(), "{d}");
        assert_eq!(d["attempts"][0]["trail"].as_array().unwrap().last().unwrap()["outcome"], "delivered");
        assert_eq!(runs(app, &s.key, job_id).await.len(), 1);
    }
    assert_eq!(app.engine.tick().await.unwrap(), 0, "nothing left to fire");
}

/// Job affinity end to end: two engines on one database split the jobs by the ring of
/// live nodes and each fires only its own share on time; a silent owner's share is fired
/// by the other after the grace; once the owner leaves, the survivor owns every job and
/// fires all of them on time.
async fn two_nodes_fire_their_own_share_and_one_takes_over_when_the_other_stops(app: &TestApp) {
    use std::collections::BTreeSet;
    use std::sync::Arc;
    use sundial_core::affinity::{ALL_BUCKETS, bucket_of};
    use sundial_engine::{Engine, EngineConfig};
    let s = setup(app).await;
    let node = |id: &str| {
        let mut cfg = EngineConfig::new(id);
        // Liveness is judged by database time; the test's manual clock is months away
        // from it, which the skew guard (tested above) would refuse.
        cfg.max_clock_skew_ms = i64::MAX / 2;
        Engine::new(app.db.store(), Arc::new(app.clock.clone()), cfg, Arc::new(Default::default()))
    };
    let (a, b) = (node("node_a"), node("node_b"));
    a.heartbeat_once().await.unwrap();
    b.heartbeat_once().await.unwrap();
    a.heartbeat_once().await.unwrap(); // a sees b now
    assert_eq!(a.members(), ["node_a", "node_b"]);
    assert_eq!(b.members(), ["node_a", "node_b"]);
    let (mask_a, mask_b) = (a.owned_buckets(), b.owned_buckets());
    assert_eq!((mask_a & mask_b, mask_a | mask_b), (0, ALL_BUCKETS), "the buckets are split, none twice");
    let (st, nodes) = app.get("/api/v1/nodes", &app.operator_key).await;
    assert_eq!(st, StatusCode::OK, "{nodes}");
    let shown: Vec<(String, u32)> = nodes["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap().to_string(), n["buckets"].as_u64().unwrap() as u32))
        .collect();
    let expected = vec![("node_a".to_string(), mask_a.count_ones()), ("node_b".to_string(), mask_b.count_ones())];
    assert_eq!(shown, expected, "GET /nodes shows each node's share");

    // Per-minute jobs until each node owns at least three.
    let owned_by = |mask: u64, job: &str| mask & (1 << bucket_of(job)) != 0;
    let (mut of_a, mut of_b) = (BTreeSet::new(), BTreeSet::new());
    for i in 0..64 {
        if of_a.len() >= 3 && of_b.len() >= 3 {
            break;
        }
        let job = app.job(&s.key, every_minute(&format!("j{i}"), json!({}))).await;
        let id = job["id"].as_str().unwrap().to_string();
        if owned_by(mask_a, &id) {
            of_a.insert(id)
        } else {
            of_b.insert(id)
        };
    }
    assert!(of_a.len() >= 3 && of_b.len() >= 3, "{of_a:?} {of_b:?}");
    let delivered_since = |n: usize| -> BTreeSet<String> {
        s.exec.deliveries()[n..].iter().map(|d| d.body["job_id"].as_str().unwrap().to_string()).collect()
    };

    // The fire at creation: the node that writes a fire due within the claim window writes
    // it claimed by itself (no peek cursor may have passed it), so node_a, whose generator
    // went first, fires every job's first fire, each once; node_b finds nothing to fire.
    let all: BTreeSet<String> = of_a.union(&of_b).cloned().collect();
    a.tick().await.unwrap();
    assert_eq!(delivered_since(0), all, "node_a wrote and fires every first fire");
    b.tick().await.unwrap();
    let n = s.exec.deliveries().len();
    assert_eq!(n, all.len(), "each fire once");
    assert!(a.stats().claimed_at_insert >= all.len() as u64, "{:?}", a.stats());

    // Next minute, node_a is silent (stuck or dying, not yet declared dead): node_b fires
    // its own share on time and node_a's share once the grace has passed.
    // From here on every fire was generated minutes ahead and stays `pending` until its
    // owner's peek reads it.
    app.clock.advance(60_000);
    b.tick().await.unwrap();
    assert_eq!(delivered_since(n), of_b, "on time: only node_b's own jobs");
    assert!(b.stats().peeked >= of_b.len() as u64, "{:?}", b.stats());
    let n2 = s.exec.deliveries().len();
    app.clock.advance(b.config().affinity_grace_ms - 1);
    b.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), n2, "node_a's share is left to node_a within the grace");
    app.clock.advance(1);
    b.tick().await.unwrap();
    assert_eq!(delivered_since(n2), of_a, "after the grace, node_b fires node_a's share");
    let late: Vec<String> = s.exec.deliveries()[n2..]
        .iter()
        .map(|d| d.headers["sundial-scheduled-at"].to_str().unwrap().to_string())
        .collect();
    assert!(late.iter().all(|t| *t == late[0]), "all of that minute's fires: {late:?}");
    let n3 = s.exec.deliveries().len();

    // Three seconds before the next fires both nodes have read their share of them into
    // their timers (node_b's peek cursor is past that minute now). Then node_a stops
    // (SIGTERM: it leaves the ring). At its next heartbeat node_b owns every bucket, its
    // peek starts again from before its cursor, and it fires every job on time.
    app.clock.advance(60_000 - b.config().affinity_grace_ms - 3_000);
    a.tick().await.unwrap();
    b.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), n3, "not due yet");
    a.shutdown(std::time::Duration::from_secs(1)).await;
    b.heartbeat_once().await.unwrap();
    assert_eq!(b.members(), ["node_b"]);
    assert_eq!(b.owned_buckets(), ALL_BUCKETS);
    app.clock.advance(3_000);
    b.tick().await.unwrap();
    assert_eq!(delivered_since(n3), all, "node_b fires every job on time");
    assert_eq!(s.exec.deliveries().len(), n3 + all.len());
    let (_, nodes) = app.get("/api/v1/nodes", &app.operator_key).await;
    let buckets =
        |id: &str| nodes["items"].as_array().unwrap().iter().find(|n| n["id"] == id).unwrap()["buckets"].clone();
    assert_eq!((buckets("node_a"), buckets("node_b")), (json!(0), json!(64)), "{nodes}");
}

/// A fire written due within the claim window (here a one-shot job created two seconds
/// before its time) is below the node's peek cursor, which an earlier fire already moved
/// past that instant: the generator writes it claimed and it fires on time anyway.
async fn a_fire_written_behind_the_peek_cursor_still_fires_on_time(app: &TestApp) {
    let s = setup(app).await;
    app.clock.advance(10_000); // 12:00:10
    let early = app
        .job(
            &s.key,
            every_minute(
                "cursor",
                json!({"schedule": {"kind": "fixed_rate", "every_ms": 60000, "anchor": "2026-03-28T12:00:04Z"}}),
            ),
        )
        .await;
    app.engine.tick().await.unwrap();
    // Its next fire (12:01:04) was generated minutes ahead; read by the peek 4 s before.
    app.clock.advance(50_000); // 12:01:00
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 0);
    assert!(app.engine.stats().peeked >= 1, "{:?}", app.engine.stats());
    // A one-shot job due at 12:01:02, below the cursor (12:01:04).
    let once = app
        .job(&s.key, every_minute("once", json!({"schedule": {"kind": "once", "at": "2026-03-28T12:01:02Z"}})))
        .await;
    app.engine.generate_once().await.unwrap();
    assert_eq!(app.engine.stats().claimed_at_insert, 1);
    app.clock.advance(2_000);
    app.engine.tick().await.unwrap();
    let d = s.exec.deliveries();
    assert_eq!(d.len(), 1, "the one-shot fire, on time");
    assert_eq!(d[0].body["job_id"], once["id"]);
    assert_eq!(d[0].headers["sundial-scheduled-at"], "2026-03-28T12:01:02.000Z");
    app.clock.advance(2_000);
    app.engine.tick().await.unwrap();
    let d = s.exec.deliveries();
    assert_eq!(d.len(), 2);
    assert_eq!(d[1].body["job_id"], early["id"], "and the peeked fire at its own time");
    assert_eq!(d[1].headers["sundial-scheduled-at"], "2026-03-28T12:01:04.000Z");
}

async fn a_run_taken_ahead_by_the_dispatch_lead_goes_out_at_its_instant(app: &TestApp) {
    let s = setup(app).await;
    let job = app.job(&s.key, every_minute("lead", json!({}))).await;
    let job_id = job["id"].as_str().unwrap();
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 1, "the fire at creation time");
    // 80 ms before the next fire. No lead while no dispatch was slow: nothing goes yet.
    app.clock.advance(60_000 - 80);
    assert_eq!(app.engine.dispatch_lead_ms(), 0);
    app.engine.tick().await.unwrap();
    assert_eq!(s.exec.deliveries().len(), 1, "not before its instant");
    // Dispatches took 100 ms lately: the lead (125 ms) takes the run now, commits it as
    // `dispatching`, and its delivery waits out the 80 ms (real time: the manual clock
    // stands still) before it goes.
    app.engine.note_dispatch_took(100);
    assert_eq!(app.engine.dispatch_lead_ms(), 125);
    let started = std::time::Instant::now();
    app.engine.tick().await.unwrap();
    let waited = started.elapsed();
    let d = s.exec.deliveries();
    assert_eq!(d.len(), 2, "taken ahead and delivered");
    assert_eq!(d[1].headers["sundial-scheduled-at"], "2026-03-28T12:01:00.000Z");
    assert!(waited >= std::time::Duration::from_millis(75), "the delivery waited for its instant: {waited:?}");
    let all = runs(app, &s.key, job_id).await;
    assert_eq!(all.iter().filter(|r| r["state"] == "succeeded").count(), 2, "each fire once");

    // A retry is due at the end of its backoff (its fire time is long past): taken ahead
    // by the lead, it too waits for that instant.
    s.exec.then(Answer::Fail("boom"));
    let flaky = app
        .job(
            &s.key,
            manual(
                "flaky-lead",
                json!({"failure": {"policy": "retry", "max_retries": 1,
                    "backoff": {"kind": "fixed", "base_ms": 1000, "jitter": false}}}),
            ),
        )
        .await;
    let run_id = trigger(app, &s.key, flaky["id"].as_str().unwrap()).await;
    app.engine.tick().await.unwrap();
    assert_eq!(state(app, &s.key, &run_id).await, "retrying");
    app.clock.advance(1_000 - 80);
    app.engine.note_dispatch_took(100);
    let started = std::time::Instant::now();
    app.engine.tick().await.unwrap();
    let waited = started.elapsed();
    assert_eq!(state(app, &s.key, &run_id).await, "succeeded", "taken ahead and delivered");
    assert!(waited >= std::time::Duration::from_millis(75), "the retry waited for its backoff to end: {waited:?}");
}

async fn a_full_claim_says_so_and_the_next_takes_the_rest(app: &TestApp) {
    use std::sync::Arc;
    use sundial_engine::{Engine, EngineConfig};
    let s = setup(app).await;
    for i in 0..40 {
        let job = app.job(&s.key, manual(&format!("many-{i}"), json!({}))).await;
        trigger(app, &s.key, job["id"].as_str().unwrap()).await;
    }
    let mut cfg = EngineConfig::new("node_claims");
    cfg.claim_batch = 16;
    let engine = Engine::new(app.db.store(), Arc::new(app.clock.clone()), cfg, Arc::new(Default::default()));
    // The claimer loop goes again at once after a full claim, without waiting a tick.
    assert_eq!(engine.claim_round().await.unwrap(), (16, true));
    assert_eq!(engine.claim_round().await.unwrap(), (16, true));
    assert_eq!(engine.claim_round().await.unwrap(), (8, false), "the rest, and then the claimer may rest");
    assert_eq!(engine.claim_round().await.unwrap(), (0, false));
    assert_eq!(engine.timer_len(), 40);
}

/// Issue 14's "never wedged", on the manual clock: 40 per-second jobs have their next
/// fires in the node's timer when the node stops turning for 30 s (a paused process, a
/// stalled store). Its next turn settles the whole backlog by the misfire policies (the
/// fires in its timer, the ones its peek finds late, the ones generation writes for the
/// gap) and delivers the fires still within the threshold; the turn after that is on time.
/// Every fire of the gap is recorded (delivered, or `expired` with a reason), none twice,
/// and the node's load figures in `GET /api/v1/nodes` say what happened.
async fn a_node_far_behind_settles_its_backlog_by_policy_and_is_on_time_again(app: &TestApp) {
    let s = setup(app).await;
    let mut jobs: Vec<(String, &str)> = Vec::new();
    for (policy, n) in [("skip", 20), ("fire_once", 20)] {
        for i in 0..n {
            let j = app
                .job(
                    &s.key,
                    json!({"name": format!("{policy}-{i}"), "app": "billing", "handler": "h", "block": "discard_later",
                    "schedule": {"kind": "fixed_rate", "every_ms": 1000}, "misfire": {"policy": policy}}),
                )
                .await;
            jobs.push((j["id"].as_str().unwrap().to_string(), policy));
        }
    }
    let start = app.clock.now_ms();
    app.engine.tick().await.unwrap();
    app.clock.advance(1_000);
    app.engine.tick().await.unwrap();
    // Per-second jobs fire at dispatch: their next few seconds of fires wait in the timer, unwritten.
    assert!(app.engine.timer_len() >= 40 * 2, "the next fires wait in the timer: {}", app.engine.timer_len());
    assert_eq!(app.engine.at_dispatch_counts().0, 40, "every job is held by this (lone) node");
    // Stopped for 30 s.
    app.clock.advance(30_000);
    let behind_at = app.clock.now_ms();
    app.engine.tick().await.unwrap();
    // On time again: the next turn delivers each job's fire at its instant.
    app.clock.advance(1_000);
    let next = app.clock.now_ms();
    let before = s.exec.deliveries().len();
    app.engine.tick().await.unwrap();
    let fresh: Vec<_> = s.exec.deliveries()[before..].to_vec();
    assert_eq!(fresh.len(), 40, "one fire per job at {next}, nothing from the backlog");
    let delivered: std::collections::HashMap<String, usize> =
        s.exec.deliveries().iter().fold(Default::default(), |mut m, d| {
            *m.entry(d.body["run_id"].as_str().unwrap().to_string()).or_default() += 1;
            m
        });
    let mut expired = 0;
    for (job_id, policy) in &jobs {
        let rs = runs(app, &s.key, job_id).await;
        let mut late_delivered = 0;
        let mut covered = std::collections::BTreeSet::new();
        for r in &rs {
            let at = r["fire_key"].as_str().unwrap().trim_start_matches("s:").parse::<i64>().unwrap();
            let n = delivered.get(r["id"].as_str().unwrap()).copied().unwrap_or(0);
            assert!(n <= 1, "delivered once at most: {r}");
            match r["state"].as_str().unwrap() {
                "expired" => {
                    expired += 1;
                    assert_eq!(n, 0, "{r}");
                    assert!(r["message"].as_str().unwrap().contains("misfire"), "{r}");
                }
                "succeeded" => {
                    assert_eq!(n, 1, "{r}");
                    // Missed: due while the node stood still, more than the threshold before it woke.
                    if at > start + 1_000 && at < behind_at - 5_000 {
                        late_delivered += 1;
                    }
                }
                // Fires the policy let through that went in one batch: one goes, the job's
                // block strategy (discard_later) skips the rest.
                "skipped" => {
                    assert!(at >= behind_at - 6_000 && at <= behind_at, "{r}");
                    if at < behind_at - 5_000 {
                        late_delivered += 1; // a missed fire the policy let through
                    }
                }
                "pending" | "queued" => assert!(at > next, "only future fires are still open: {r}"),
                other => panic!("unexpected state {other}: {r}"),
            }
            covered.insert(at);
        }
        // Every fire from the first to `next` has its run: none lost in the backlog.
        let first = *covered.iter().next().unwrap();
        assert!(first <= start + 1_000, "{first} {start}");
        for at in (first..=next).step_by(1_000) {
            assert!(covered.contains(&at), "job {job_id}: the fire at {at} has no run");
        }
        match *policy {
            "skip" => assert_eq!(late_delivered, 0, "skip delivers no missed fire"),
            _ => assert!(late_delivered <= 1, "fire_once delivers at most one missed fire: {late_delivered}"),
        }
    }
    assert!(expired >= 40 * 20, "the gap's missed fires are recorded expired: {expired}");
    // The node says it: its heartbeat publishes what it expired.
    app.engine.heartbeat_once().await.unwrap();
    let (st, nodes) = app.get("/api/v1/nodes", &app.operator_key).await;
    assert_eq!(st, StatusCode::OK, "{nodes}");
    let node = &nodes["items"][0];
    assert!(node["misfired"].as_i64().unwrap() >= expired as i64, "{node}");
    assert!(node["backlog"].is_i64() && node["lateness_ms"].is_i64(), "{node}");
}

/// Best-effort cancels are sent in the background after the write that ended the attempt:
/// an executor that never answers its cancel endpoint delays neither the reaper, nor the
/// run-cancel API, nor the delivery of the run that covered its predecessor
/// (`cover_early`). Each step took the cancel's whole timeout (5 s) when cancels were awaited.
/// Found by the chaos test on a loaded machine: rows of a high-frequency job are written at
/// dispatch, and two dispatch batches commit in either order (a failed one is tried again
/// after a later one), so a node that dies or leaves can leave a fire without a row behind
/// a later fire that has one. The node that takes the job on must write that fire, not
/// start after the last row.
async fn a_node_taking_a_job_on_writes_the_fires_a_gone_node_left_without_a_row(app: &TestApp) {
    let s = setup(app).await;
    let j = app
        .job(
            &s.key,
            json!({"name": "per-second", "app": "billing", "handler": "h", "misfire": {"policy": "fire_all"},
                "schedule": {"kind": "fixed_rate", "every_ms": 1000}}),
        )
        .await;
    let id = j["id"].as_str().unwrap().to_string();
    let store = app.db.store();
    let job = store.job_get_many(std::slice::from_ref(&id)).await.unwrap().remove(0);
    let schedule = sundial_core::schedule::Schedule::parse(&job.schedule, job.created_at_ms).unwrap();
    let grid = schedule.fires_between(job.updated_at_ms - 1, job.updated_at_ms + 10_000, 4);
    let now = app.clock.now_ms();
    // The gone node wrote the 1st, 2nd and 4th fires; the 3rd's dispatch never committed.
    let rows: Vec<sundial_store::Run> = [grid[0], grid[1], grid[3]]
        .iter()
        .map(|t| {
            sundial_store::Run::pending(
                &job.tenant_id,
                &id,
                job.version,
                format!("s:{t}"),
                sundial_core::types::TriggerKind::Schedule,
                *t,
                now,
            )
        })
        .collect();
    assert_eq!(store.run_insert_missing(&rows).await.unwrap(), 3);
    app.clock.set(grid[3] + 300);
    app.engine.tick().await.unwrap();
    app.engine.tick().await.unwrap();
    let keys: Vec<String> = runs(app, &s.key, &id)
        .await
        .iter()
        .map(|r| r["fire_key"].as_str().unwrap().to_string())
        .filter(|k| k[2..].parse::<i64>().unwrap() <= grid[3])
        .collect();
    let want: Vec<String> = grid.iter().map(|t| format!("s:{t}")).collect();
    assert_eq!(keys, want, "every fire up to the last row once, the one left without a row included");
    // Serial: each goes once the one before it is done (a blocked run polls every 500 ms).
    for _ in 0..4 {
        app.clock.advance(500);
        app.engine.tick().await.unwrap();
    }
    let last = sundial_core::time::rfc3339_utc(grid[3]);
    let delivered: Vec<String> = s
        .exec
        .deliveries()
        .iter()
        .map(|d| d.headers["sundial-scheduled-at"].to_str().unwrap().to_string())
        .filter(|at| *at <= last)
        .collect();
    let want: Vec<String> = grid.iter().map(|t| sundial_core::time::rfc3339_utc(*t)).collect();
    assert_eq!(delivered, want, "each of the four delivered once, in order");
}

async fn cancels_an_executor_never_answers_hold_up_nothing(app: &TestApp) {
    let s = setup(app).await;
    s.exec.always(Answer::Accept);
    s.exec.hang_cancels();
    let quick = std::time::Duration::from_millis(1500);
    // The reaper.
    let slow = app.job(&s.key, manual("slow", json!({"timeout_ms": 10000, "failure": {"policy": "discard"}}))).await;
    let reaped = trigger(app, &s.key, slow["id"].as_str().unwrap()).await;
    app.engine.tick().await.unwrap();
    app.clock.advance(10_000 + 5_001);
    let t = std::time::Instant::now();
    assert_eq!(app.engine.reap_once().await.unwrap(), 1);
    assert!(t.elapsed() < quick, "the reaper waited {:?} for a cancel", t.elapsed());
    assert_eq!(state(app, &s.key, &reaped).await, "failed");
    // The run-cancel API.
    let held = app.job(&s.key, manual("held", json!({}))).await;
    let cancelled = trigger(app, &s.key, held["id"].as_str().unwrap()).await;
    app.engine.tick().await.unwrap();
    assert_eq!(state(app, &s.key, &cancelled).await, "running");
    let t = std::time::Instant::now();
    let (st, v) = app.post(&format!("/api/v1/runs/{cancelled}/cancel"), &s.key, json!({})).await;
    assert_eq!((st, v["state"].clone()), (StatusCode::OK, json!("cancelled")), "{v}");
    assert!(t.elapsed() < quick, "the cancel API answered after {:?}", t.elapsed());
    // Another run's delivery: cover_early cancels the run in flight, then sends the new one.
    let cover = app.job(&s.key, manual("cover", json!({"block": "cover_early"}))).await;
    let cover_id = cover["id"].as_str().unwrap();
    let first = trigger(app, &s.key, cover_id).await;
    app.engine.tick().await.unwrap();
    assert_eq!(state(app, &s.key, &first).await, "running");
    let second = trigger(app, &s.key, cover_id).await;
    let t = std::time::Instant::now();
    app.engine.tick().await.unwrap();
    assert!(t.elapsed() < quick, "the covering run's delivery waited {:?}", t.elapsed());
    assert_eq!(state(app, &s.key, &first).await, "cancelled");
    assert_eq!(state(app, &s.key, &second).await, "running");
    assert!(s.exec.deliveries().iter().any(|d| d.body["run_id"] == json!(second)), "the covering run was delivered");
    // Every cancel still went out (and is still waiting for its answer).
    let c = s.exec.wait_cancels(3).await;
    let mut ids: Vec<String> = c.iter().map(|r| r.body["run_id"].as_str().unwrap().to_string()).collect();
    ids.sort();
    let mut want = vec![reaped, cancelled, first];
    want.sort();
    assert_eq!(ids, want);
}

/// In a cluster, a run past its deadline is reaped by the owner of its job's bucket alone
/// (every node's reaper used to scan, and cancel, the same overdue runs); once the owner
/// has left, the survivor owns its buckets and reaps what is left.
async fn an_overdue_run_is_reaped_by_its_buckets_owner_only(app: &TestApp) {
    use std::sync::Arc;
    use sundial_core::affinity::bucket_of;
    use sundial_engine::{Engine, EngineConfig};
    let s = setup(app).await;
    s.exec.always(Answer::Accept);
    let node = |id: &str| {
        let mut cfg = EngineConfig::new(id);
        cfg.max_clock_skew_ms = i64::MAX / 2; // liveness is judged by database time (see above)
        Engine::new(app.db.store(), Arc::new(app.clock.clone()), cfg, Arc::new(Default::default()))
    };
    let (a, b) = (node("node_a"), node("node_b"));
    a.heartbeat_once().await.unwrap();
    b.heartbeat_once().await.unwrap();
    a.heartbeat_once().await.unwrap();
    // One job in each node's share, each with a run in flight.
    let (mut of_a, mut of_b) = (None, None);
    for i in 0..64 {
        if of_a.is_some() && of_b.is_some() {
            break;
        }
        let job = app
            .job(&s.key, manual(&format!("slow{i}"), json!({"timeout_ms": 10000, "failure": {"policy": "discard"}})))
            .await;
        let id = job["id"].as_str().unwrap().to_string();
        let mine = a.owned_buckets() & (1 << bucket_of(&id)) != 0;
        let slot = if mine { &mut of_a } else { &mut of_b };
        if slot.is_none() {
            *slot = Some(trigger(app, &s.key, &id).await);
        }
    }
    let (run_a, run_b) = (of_a.unwrap(), of_b.unwrap());
    a.tick().await.unwrap(); // triggered runs go out from whichever node takes them
    assert_eq!(
        (state(app, &s.key, &run_a).await, state(app, &s.key, &run_b).await),
        ("running".into(), "running".into())
    );
    app.clock.advance(10_000 + 5_001);
    assert_eq!(b.reap_once().await.unwrap(), 1, "b reaps its own share only");
    assert_eq!(
        (state(app, &s.key, &run_a).await, state(app, &s.key, &run_b).await),
        ("running".into(), "failed".into())
    );
    assert_eq!(s.exec.wait_cancels(1).await.len(), 1);
    // a leaves: b owns every bucket at its next heartbeat and reaps a's share.
    a.shutdown(std::time::Duration::from_secs(1)).await;
    b.heartbeat_once().await.unwrap();
    assert_eq!(b.members(), ["node_b"]);
    assert_eq!(b.reap_once().await.unwrap(), 1, "the survivor takes over the share of the node that left");
    assert_eq!(state(app, &s.key, &run_a).await, "failed");
    let c = s.exec.wait_cancels(2).await;
    assert_eq!(c.len(), 2, "one cancel per timed-out attempt, from the node that failed it");
}

/// What each answer means (issue 16): an empty `2xx` is success with no output; a `200`
/// that is not JSON, not an object, or not the protocol's shape fails the attempt saying
/// so (it counted as `succeeded`); an answer over `max_answer_bytes` fails it
/// `answer_too_large`; a redirect is not followed (it was followed, as a GET).
async fn answers_are_read_strictly_bounded_and_never_redirected(app: &TestApp) {
    let s = setup(app).await;
    let internal = TestExecutor::start(&s.secret, app.clock.clone()).await;
    let job = app.job(&s.key, manual("strict", json!({"failure": {"policy": "discard"}}))).await;
    let job_id = job["id"].as_str().unwrap().to_string();
    let big = vec![b' '; 1024 * 1024 + 1];
    let cases: Vec<(Answer, &str, Option<&str>, &str)> = vec![
        (Answer::Raw(200, Vec::new(), None), "succeeded", None, ""),
        (Answer::Raw(204, Vec::new(), None), "succeeded", None, ""),
        (Answer::Raw(200, b"OK".to_vec(), None), "failed", Some("error"), "not JSON"),
        (Answer::Raw(200, b"[1, 2]".to_vec(), None), "failed", Some("error"), "not an object"),
        (
            Answer::Raw(200, br#"{"status": "ok"}"#.to_vec(), None),
            "failed",
            Some("error"),
            "does not match the protocol",
        ),
        (Answer::Raw(200, big, None), "failed", Some("answer_too_large"), "max_answer_bytes"),
        (
            Answer::Raw(302, Vec::new(), Some(format!("{}/internal", internal.url))),
            "failed",
            Some("error"),
            "does not follow redirects",
        ),
    ];
    for (answer, state_want, reason, says) in cases {
        s.exec.then(answer.clone());
        let run_id = trigger(app, &s.key, &job_id).await;
        app.engine.tick().await.unwrap();
        let d = run_detail(app, &s.key, &run_id).await;
        assert_eq!(d["state"], json!(state_want), "{answer:?}: {d}");
        assert_eq!(d["reason"], reason.map_or(Value::Null, |r| json!(r)), "{answer:?}: {d}");
        if state_want == "succeeded" {
            assert_eq!(d["output"], Value::Null, "{d}");
        } else {
            assert!(d["message"].as_str().unwrap_or_default().contains(says), "{answer:?}: {d}");
        }
    }
    assert!(internal.received.lock().unwrap().is_empty(), "the redirect's target was never called");
}

/// The outbound address policy (SSRF): a link-local/metadata endpoint or a private
/// executor address is refused at registration (422 naming the field, nothing stored);
/// a node whose policy refuses loopback sends nothing to a loopback endpoint and fails the
/// attempt `address_refused`.
async fn outbound_addresses_are_judged_at_registration_and_at_connect_time(app: &TestApp) {
    let s = setup(app).await;
    let got = app
        .post(
            "/api/v1/apps",
            &s.key,
            json!({"name": "meta", "endpoints": ["http://169.254.169.254/latest/meta-data/"]}),
        )
        .await;
    assert_error(&got, StatusCode::UNPROCESSABLE_ENTITY, "invalid_field", Some("endpoints[0]"));
    assert!(got.1["message"].as_str().unwrap().contains("link-local"), "{}", got.1);
    let (_, apps) = app.get("/api/v1/apps", &s.key).await;
    assert_eq!(apps["items"].as_array().unwrap().len(), 1, "nothing stored: {apps}");
    let got = app.patch("/api/v1/apps/billing", &s.key, json!({"endpoints": ["http://[::ffff:a9fe:a9fe]/x"]})).await;
    assert_error(&got, StatusCode::UNPROCESSABLE_ENTITY, "invalid_field", Some("endpoints[0]"));
    let body = serde_json::to_vec(&json!({"address": "http://10.0.0.5:8080/hook", "handlers": ["h"]})).unwrap();
    let mut req = app.http.post(format!("{}/api/v1/executors/register", app.base)).body(body.clone());
    for (k, v) in signed_headers(&s.secret, &s.app_id, "reg-private", &body, app.clock.now_ms() / 1000) {
        req = req.header(k, v);
    }
    let resp = req.send().await.unwrap();
    let got = (resp.status(), resp.json::<Value>().await.unwrap());
    assert_error(&got, StatusCode::UNPROCESSABLE_ENTITY, "invalid_field", Some("address"));
    assert!(got.1["message"].as_str().unwrap().contains("outbound_allow_private"), "{}", got.1);
    // At send time: a node whose policy refuses loopback never calls the (loopback) executor.
    let mut cfg = sundial_engine::EngineConfig::new("node_closed");
    cfg.outbound = sundial_core::outbound::OutboundPolicy { allow_loopback: false, allow_private: false };
    let closed = sundial_engine::Engine::new(
        app.db.store(),
        std::sync::Arc::new(app.clock.clone()),
        cfg,
        std::sync::Arc::new(Default::default()),
    );
    let job = app.job(&s.key, manual("refused", json!({"failure": {"policy": "discard"}}))).await;
    let run_id = trigger(app, &s.key, job["id"].as_str().unwrap()).await;
    closed.tick().await.unwrap();
    let d = run_detail(app, &s.key, &run_id).await;
    assert_eq!((d["state"].clone(), d["reason"].clone()), (json!("failed"), json!("address_refused")), "{d}");
    assert!(d["message"].as_str().unwrap().contains("loopback"), "{d}");
    assert!(s.exec.deliveries().is_empty(), "nothing was sent");
}

/// A handler registration creates a job named after the handler; when a job of the tenant
/// already has that name, the new job is `<handler>-<job id>` instead of failing the
/// registration, and registering again creates nothing.
async fn a_registration_job_whose_name_is_taken_gets_a_free_one(app: &TestApp) {
    let s = setup(app).await;
    let mine = app.job(&s.key, manual("report.build", json!({}))).await;
    let body = json!({"address": s.exec.url, "handlers": ["report.build", "mail.send"]});
    let (st, r) = callback(app, &s, "/api/v1/executors/register", "reg-taken-1", body.clone()).await;
    assert_eq!(st, StatusCode::OK, "{r}");
    let created = r["jobs_created"].as_array().unwrap();
    assert_eq!(created.len(), 2, "{r}");
    let mut names = Vec::new();
    for id in created {
        let (_, job) = app.get(&format!("/api/v1/jobs/{}", id.as_str().unwrap()), &s.key).await;
        assert_eq!(job["source"], "registration");
        names.push(job["name"].as_str().unwrap().to_string());
    }
    assert_eq!(names[0], format!("report.build-{}", created[0].as_str().unwrap()));
    assert_eq!(names[1], "mail.send");
    let (_, still) = app.get(&format!("/api/v1/jobs/{}", mine["id"].as_str().unwrap()), &s.key).await;
    assert_eq!(still["name"], "report.build");
    app.clock.advance(1);
    let (st, again) = callback(app, &s, "/api/v1/executors/register", "reg-taken-2", body).await;
    assert_eq!(st, StatusCode::OK, "{again}");
    assert!(again["jobs_created"].as_array().unwrap().is_empty(), "{again}");
    assert_eq!(app.job_count(&s.key).await, 3);
}

async fn a_script_job_goes_only_to_a_runner_of_its_runtime_which_fetches_its_source_by_the_run(app: &TestApp) {
    let s = setup(app).await; // the app's static endpoint is `s.exec`: it never gets a script run
    let (st, v) = app
        .post("/api/v1/scripts", &s.key, json!({"name": "etl", "runtime": "python", "source": "print('{}')\n"}))
        .await;
    assert_eq!(st, StatusCode::CREATED, "{v}");
    let script_id = v["id"].as_str().unwrap().to_string();
    let mut body = manual("etl", json!({}));
    body["handler"] = Value::Null;
    body["script"] = json!("etl");
    body["failure"] = json!({"policy": "discard"});
    let job = app.job(&s.key, body).await;
    let job_id = job["id"].as_str().unwrap().to_string();
    let d = trigger_and_tick(app, &s.key, &job_id).await;
    assert_eq!((d["state"].as_str(), d["reason"].as_str()), (Some("failed"), Some("no_executor")), "{d}");
    assert!(d["message"].as_str().unwrap().contains("no online runner runs `python` scripts"), "{d}");
    assert!(s.exec.deliveries().is_empty(), "the static endpoint is not a runner");
    // A runner for `wasm` only, then one for `python` too (bad runtimes are refused, naming the entry).
    let runner = TestExecutor::start(&s.secret, app.clock.clone()).await;
    let reg = |runtimes: Value| json!({"address": runner.url, "name": "runner", "runtimes": runtimes});
    let (st, v) = callback(app, &s, "/api/v1/executors/register", "reg-bad", reg(json!(["wasm", "cobol"]))).await;
    assert_eq!((st, v["details"]["field"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("runtimes[1]")), "{v}");
    let (st, _) = callback(app, &s, "/api/v1/executors/register", "reg-1", reg(json!(["wasm"]))).await;
    assert_eq!(st, StatusCode::OK);
    let d = trigger_and_tick(app, &s.key, &job_id).await;
    assert_eq!(d["reason"], "no_executor", "a wasm runner does not run python: {d}");
    app.clock.advance(1);
    let (st, v) =
        callback(app, &s, "/api/v1/executors/register", "reg-2", reg(json!(["wasm", "python", "python"]))).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let (_, execs) = app.get("/api/v1/apps/billing/executors", &s.key).await;
    assert_eq!(execs["items"][0]["runtimes"], json!(["wasm", "python"]), "{execs}");
    runner.then(Answer::Accept);
    let d = trigger_and_tick(app, &s.key, &job_id).await;
    assert_eq!(d["state"], "running", "{d}");
    assert_eq!(d["script_version"], 1, "the run records the version it runs");
    let got = runner.deliveries().pop().unwrap().body;
    assert_eq!(got["handler"], Value::Null);
    assert_eq!(got["script"]["id"], script_id.as_str());
    assert_eq!((got["script"]["runtime"].as_str(), got["script"]["version"].as_i64()), (Some("python"), Some(1)));
    assert_eq!(got["script"]["timeout_ms"], job["timeout_ms"]);
    let run_id = d["id"].as_str().unwrap().to_string();
    // The runner fetches the source by the run, signed.
    let (st, src) = callback(app, &s, &format!("/api/v1/runs/{run_id}/script"), "src-1", json!({})).await;
    assert_eq!(st, StatusCode::OK, "{src}");
    assert_eq!((src["source"].as_str(), src["version"].as_i64()), (Some("print('{}')\n"), Some(1)));
    assert_eq!(src["sha256"], got["script"]["sha256"]);
    // Not for a handler job's run, nor a run not yet delivered, nor another app's, nor unsigned.
    let handler_job = app.job(&s.key, manual("plain", json!({}))).await;
    let (_, hrun) =
        app.post(&format!("/api/v1/jobs/{}/trigger", handler_job["id"].as_str().unwrap()), &s.key, json!({})).await;
    let hrun = hrun["id"].as_str().unwrap();
    let (st, v) = callback(app, &s, &format!("/api/v1/runs/{hrun}/script"), "src-2", json!({})).await;
    assert_eq!((st, v["code"].as_str()), (StatusCode::CONFLICT, Some("not_a_script_run")), "{v}");
    let (_, pending) =
        app.post(&format!("/api/v1/jobs/{job_id}/trigger"), &s.key, json!({"at": "2099-01-01T00:00:00Z"})).await;
    let pending = pending["id"].as_str().unwrap();
    let (st, v) = callback(app, &s, &format!("/api/v1/runs/{pending}/script"), "src-3", json!({})).await;
    assert_eq!((st, v["code"].as_str()), (StatusCode::CONFLICT, Some("not_delivered")), "{v}");
    let (st, other) = app.post("/api/v1/apps", &s.key, json!({"name": "other"})).await;
    assert_eq!(st, StatusCode::CREATED);
    let o = Setup {
        key: s.key.clone(),
        app_id: other["id"].as_str().unwrap().into(),
        secret: other["secret"].as_str().unwrap().into(),
        exec: runner.clone(),
    };
    let (st, _) = callback(app, &o, &format!("/api/v1/runs/{run_id}/script"), "src-4", json!({})).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "another app's run");
    let resp = app.http.post(format!("{}/api/v1/runs/{run_id}/script", app.base)).body("{}").send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
}

/// Trigger a run of `job_id`, let the engine take it, and read the run.
async fn trigger_and_tick(app: &TestApp, key: &str, job_id: &str) -> Value {
    let (_, run) = app.post(&format!("/api/v1/jobs/{job_id}/trigger"), key, json!({})).await;
    app.engine.tick().await.unwrap();
    run_detail(app, key, run["id"].as_str().unwrap()).await
}

async fn a_chain_is_cancelled_whole_and_fires_no_further_child(app: &TestApp) {
    let s = setup(app).await;
    let child = app.job(&s.key, manual("load", json!({}))).await;
    let parent = app.job(&s.key, manual("extract", json!({"children": [child["id"]]}))).await;
    s.exec.then(Answer::Accept); // the parent runs on, its result to come by callback
    let (_, run) =
        app.post(&format!("/api/v1/jobs/{}/trigger", parent["id"].as_str().unwrap()), &s.key, json!({})).await;
    let root = run["id"].as_str().unwrap().to_string();
    app.engine.tick().await.unwrap();
    assert_eq!(run_detail(app, &s.key, &root).await["state"], "running");
    let other = app.tenant("other").await;
    let (st, _) = app.post(&format!("/api/v1/chains/{root}/cancel"), &other.admin, json!({})).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "another tenant's chain");
    let (st, _) = app.post("/api/v1/chains/run_0123/cancel", &s.key, json!({})).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, v) = app.post(&format!("/api/v1/chains/{root}/cancel"), &s.key, json!({})).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!((v["cancelled"].clone(), v["runs"].clone()), (json!([root]), json!(1)), "{v}");
    assert_eq!(run_detail(app, &s.key, &root).await["state"], "cancelled");
    let cancels = s.exec.wait_cancels(1).await;
    assert_eq!(cancels[0].body["run_id"], root.as_str(), "the executor running it is told");
    // Its late result changes nothing and fires no child.
    let (st, _) = callback(
        app,
        &s,
        &format!("/api/v1/runs/{root}/result"),
        "late-1",
        json!({"attempt": 1, "status": "succeeded"}),
    )
    .await;
    assert_eq!(st, StatusCode::CONFLICT);
    app.engine.tick().await.unwrap();
    assert!(runs(app, &s.key, child["id"].as_str().unwrap()).await.is_empty(), "no child fired");
    let (_, v) = app.post(&format!("/api/v1/chains/{root}/cancel"), &s.key, json!({})).await;
    assert_eq!(v["cancelled"], json!([]), "nothing left to cancel: {v}");
}

/// extract → (t1, t2 in parallel) → load, and a clean-up on extract's failure: the root's
/// trigger params flow down, `load` fires once with both outputs, and the tree says which
/// edge fired each run and why the clean-up did not fire.
async fn a_fan_out_and_fan_in_chain_passes_outputs_and_params_and_shows_its_tree(app: &TestApp) {
    let s = setup(app).await;
    let load = app.job(&s.key, manual("load", json!({"params": {"target": "warehouse", "day": "job's"}}))).await;
    assert_eq!(load["wait"], "all", "the default");
    let t1 = app.job(&s.key, manual("t1", json!({"children": [load["id"]]}))).await;
    let t2 = app.job(&s.key, manual("t2", json!({"children": [{"job": load["id"], "on": "on_success"}]}))).await;
    let cleanup = app.job(&s.key, manual("cleanup", json!({}))).await;
    let extract = app
        .job(
            &s.key,
            manual("extract", json!({"children": [t1["id"], t2["id"], {"job": cleanup["id"], "on": "on_failure"}]})),
        )
        .await;
    s.exec.then(Answer::Ok(json!({"rows": 10})));
    s.exec.then(Answer::Ok(json!({"part": "a"})));
    s.exec.then(Answer::Ok(json!({"part": "b"})));
    s.exec.then(Answer::Ok(json!({"loaded": 2})));
    let (st, run) = app
        .post(
            &format!("/api/v1/jobs/{}/trigger", extract["id"].as_str().unwrap()),
            &s.key,
            json!({"params": {"day": "2026-11-25"}}),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{run}");
    let root = run["id"].as_str().unwrap().to_string();
    for _ in 0..4 {
        app.engine.tick().await.unwrap();
    }
    let d = s.exec.deliveries();
    assert_eq!(d.len(), 4, "extract, t1, t2, load: {:?}", d.iter().map(|x| x.body["job"].clone()).collect::<Vec<_>>());
    let by_job = |name: &str| d.iter().find(|x| x.body["job"] == name).unwrap().body.clone();
    let t1d = by_job("t1");
    assert_eq!(t1d["parent"]["output"], json!({"rows": 10}));
    assert_eq!(t1d["chain_params"], json!({"day": "2026-11-25"}));
    let l = by_job("load");
    assert!(l.get("parent").is_none(), "a fan-in has `parents`, not `parent`: {l}");
    let mut outputs: Vec<String> =
        l["parents"].as_array().unwrap().iter().map(|p| p["output"]["part"].as_str().unwrap().to_string()).collect();
    outputs.sort();
    assert_eq!(outputs, ["a", "b"], "{l}");
    assert!(l["parents"].as_array().unwrap().iter().all(|p| p["state"] == "succeeded" && p["run_id"].is_string()));
    assert_eq!(l["params"], json!({"target": "warehouse", "day": "2026-11-25"}), "the chain's params over the job's");
    assert_eq!(l["chain_params"], json!({"day": "2026-11-25"}));
    let load_runs = runs(app, &s.key, load["id"].as_str().unwrap()).await;
    assert_eq!(load_runs.len(), 1, "once per chain");
    assert_eq!(load_runs[0]["fire_key"], format!("p:{root}"));
    assert_eq!(load_runs[0]["parent_run_ids"].as_array().unwrap().len(), 2);

    let (st, tree) = app.get(&format!("/api/v1/chains/{root}"), &s.key).await;
    assert_eq!(st, StatusCode::OK, "{tree}");
    assert_eq!((tree["chain_id"].as_str(), tree["state"].as_str()), (Some(root.as_str()), Some("done")), "{tree}");
    assert_eq!(tree["params"], json!({"day": "2026-11-25"}));
    let names: Vec<&str> = tree["runs"].as_array().unwrap().iter().map(|r| r["job"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 4);
    assert_eq!(names[0], "extract", "the root first: {tree}");
    assert!(tree["runs"].as_array().unwrap().iter().all(|r| r["state"] == "succeeded"), "{tree}");
    let edge = |from: &Value, to: &Value| {
        tree["edges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["from_job"] == *from && e["to_job"] == *to)
            .cloned()
            .unwrap()
    };
    assert_eq!(edge(&extract["id"], &t1["id"])["status"], "fired");
    assert_eq!(edge(&t2["id"], &load["id"])["status"], "fired");
    assert_eq!(edge(&t1["id"], &load["id"])["to_run"], load_runs[0]["id"]);
    let c = edge(&extract["id"], &cleanup["id"]);
    assert_eq!((c["status"].as_str(), c["reason"].as_str()), (Some("not_fired"), Some("condition_not_met")), "{c}");
    assert!(c["detail"].as_str().unwrap().contains("on_failure"), "{c}");
    let other = app.tenant("other").await;
    assert_eq!(
        app.get(&format!("/api/v1/chains/{root}"), &other.admin).await.0,
        StatusCode::NOT_FOUND,
        "another tenant's"
    );
    assert_eq!(app.get("/api/v1/chains/run_0123", &s.key).await.0, StatusCode::NOT_FOUND);

    // A fan-in with a parent that fails: `all` is skipped with the reason, and the tree says so.
    s.exec.then(Answer::Ok(json!({"rows": 1})));
    s.exec.then(Answer::Ok(json!({"part": "a"})));
    s.exec.then(Answer::Fail("bad input"));
    app.put(
        &format!("/api/v1/jobs/{}", t2["id"].as_str().unwrap()),
        &s.key,
        manual("t2", json!({"failure": {"policy": "discard"}, "children": [load["id"]]})),
    )
    .await;
    let (_, run) =
        app.post(&format!("/api/v1/jobs/{}/trigger", extract["id"].as_str().unwrap()), &s.key, json!({})).await;
    let root2 = run["id"].as_str().unwrap().to_string();
    for _ in 0..4 {
        app.engine.tick().await.unwrap();
    }
    assert_eq!(s.exec.deliveries().len(), 7, "load is not delivered");
    let (_, tree) = app.get(&format!("/api/v1/chains/{root2}"), &s.key).await;
    let skipped = tree["runs"].as_array().unwrap().iter().find(|r| r["job"] == "load").cloned().expect("recorded");
    assert_eq!(skipped["state"], "skipped", "{tree}");
    assert!(skipped["message"].as_str().unwrap().contains("failed"), "{skipped}");
    let e = tree["edges"].as_array().unwrap().iter().find(|e| e["from_job"] == t2["id"]).cloned().unwrap();
    assert_eq!(e["status"], "skipped", "{tree}");
}

/// Outputs are kept with the run and passed to its children: one over `max_output_bytes`
/// (64 KiB by default, 16 KiB here) is refused by the result call (413, nothing changes) and fails a
/// synchronous answer (`output_too_large`).
async fn outputs_over_the_limit_are_refused_by_the_result_call_and_fail_a_sync_answer(app: &TestApp) {
    let s = setup(app).await;
    let job = app.job(&s.key, manual("big", json!({"failure": {"policy": "discard"}}))).await;
    let big = json!({"blob": "x".repeat(MAX_OUTPUT + 1)});
    s.exec.then(Answer::Accept);
    let run = trigger_and_tick(app, &s.key, job["id"].as_str().unwrap()).await;
    let run_id = run["id"].as_str().unwrap();
    assert_eq!(run["state"], "running");
    let (st, v) = callback(
        app,
        &s,
        &format!("/api/v1/runs/{run_id}/result"),
        "big-1",
        json!({"attempt": 1, "status": "succeeded", "output": big}),
    )
    .await;
    assert_eq!(
        (st, v["code"].as_str(), v["details"]["field"].as_str()),
        (StatusCode::PAYLOAD_TOO_LARGE, Some("output_too_large"), Some("output")),
        "{v}"
    );
    assert!(v["message"].as_str().unwrap().contains(&MAX_OUTPUT.to_string()), "{v}");
    assert_eq!(run_detail(app, &s.key, run_id).await["state"], "running", "nothing changed");
    let (st, _) = callback(
        app,
        &s,
        &format!("/api/v1/runs/{run_id}/result"),
        "big-2",
        json!({"attempt": 1, "status": "succeeded", "output": {"where": "s3://bucket/key"}}),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "a small one is accepted");

    s.exec.then(Answer::Ok(big));
    let run = trigger_and_tick(app, &s.key, job["id"].as_str().unwrap()).await;
    assert_eq!((run["state"].as_str(), run["reason"].as_str()), (Some("failed"), Some("output_too_large")), "{run}");
    assert!(run["message"].as_str().unwrap().contains("max_output_bytes"), "{run}");
}

/// `POST /runs/{id}/retry` on a chain step waiting to retry: when it then succeeds, its
/// children fire once.
async fn a_retried_step_of_a_chain_fires_its_children_once(app: &TestApp) {
    let s = setup(app).await;
    let child = app.job(&s.key, manual("report", json!({}))).await;
    let step = app
        .job(
            &s.key,
            manual(
                "step",
                json!({"children": [child["id"]], "failure": {"policy": "retry", "max_retries": 3,
                "backoff": {"kind": "fixed", "base_ms": 3600000, "jitter": false}}}),
            ),
        )
        .await;
    s.exec.then(Answer::Fail("flaky"));
    s.exec.then(Answer::Ok(json!({"ok": true})));
    let run = trigger_and_tick(app, &s.key, step["id"].as_str().unwrap()).await;
    assert_eq!(run["state"], "retrying", "{run}");
    let run_id = run["id"].as_str().unwrap();
    let (st, v) = app.post(&format!("/api/v1/runs/{run_id}/retry"), &s.key, json!({})).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    for _ in 0..3 {
        app.engine.tick().await.unwrap();
    }
    assert_eq!(run_detail(app, &s.key, run_id).await["state"], "succeeded");
    let kids = runs(app, &s.key, child["id"].as_str().unwrap()).await;
    assert_eq!(kids.len(), 1, "fired once");
    assert_eq!(kids[0]["chain_id"], run_id);
    assert_eq!(s.exec.deliveries().iter().filter(|d| d.body["job"] == "report").count(), 1);
}

/// A branch's job stopped while the chain runs: its edge is not fired (the tree says the
/// child job is stopped), and the fan-in below it is recorded `skipped` with the reason
/// instead of waiting for ever; the other branch still runs, and its late arrival changes nothing.
async fn a_child_job_stopped_mid_chain_is_not_fired_and_releases_the_fan_in(app: &TestApp) {
    let s = setup(app).await;
    let load = app.job(&s.key, manual("load", json!({}))).await;
    let t1 = app.job(&s.key, manual("t1", json!({"children": [load["id"]]}))).await;
    let t2 = app.job(&s.key, manual("t2", json!({"children": [load["id"]]}))).await;
    let extract = app.job(&s.key, manual("extract", json!({"children": [t1["id"], t2["id"]]}))).await;
    s.exec.then(Answer::Accept); // extract runs on; its result comes by callback
    let (_, run) =
        app.post(&format!("/api/v1/jobs/{}/trigger", extract["id"].as_str().unwrap()), &s.key, json!({})).await;
    let root = run["id"].as_str().unwrap().to_string();
    app.engine.tick().await.unwrap();
    let (st, _) = app.post(&format!("/api/v1/jobs/{}/stop", t2["id"].as_str().unwrap()), &s.key, json!({})).await;
    assert_eq!(st, StatusCode::OK);
    let (_, tree) = app.get(&format!("/api/v1/chains/{root}"), &s.key).await;
    let e = tree["edges"].as_array().unwrap().iter().find(|e| e["to_job"] == t1["id"]).cloned().unwrap();
    assert_eq!(e["reason"], "parent_running", "{tree}");
    let (st, v) = callback(
        app,
        &s,
        &format!("/api/v1/runs/{root}/result"),
        "extract-done",
        json!({"attempt": 1, "status": "succeeded", "output": {"rows": 3}}),
    )
    .await;
    assert_eq!(st, StatusCode::OK, "{v}");
    s.exec.then(Answer::Ok(json!({"part": 1})));
    for _ in 0..3 {
        app.engine.tick().await.unwrap();
    }
    assert!(runs(app, &s.key, t2["id"].as_str().unwrap()).await.is_empty(), "a stopped child job is not fired");
    let (_, tree) = app.get(&format!("/api/v1/chains/{root}"), &s.key).await;
    let link = |to: &Value| tree["edges"].as_array().unwrap().iter().find(|e| e["to_job"] == *to).cloned().unwrap();
    assert_eq!(
        (link(&t2["id"])["status"].as_str(), link(&t2["id"])["reason"].as_str()),
        (Some("not_fired"), Some("child_job_stopped")),
        "{tree}"
    );
    let l = tree["runs"].as_array().unwrap().iter().find(|r| r["job"] == "load").cloned().expect("recorded");
    assert_eq!(l["state"], "skipped", "{tree}");
    assert!(l["message"].as_str().unwrap().contains("the job is stopped"), "{l}");
    let t1_run = tree["runs"].as_array().unwrap().iter().find(|r| r["job"] == "t1").cloned().unwrap();
    assert_eq!(t1_run["state"], "succeeded", "the other branch still ran: {tree}");
    let after = link(&load["id"]);
    assert_eq!(
        (after["status"].as_str(), after["reason"].as_str()),
        (Some("not_fired"), Some("decided_without_it")),
        "{tree}"
    );
    assert_eq!(s.exec.deliveries().iter().filter(|d| d.body["job"] == "load").count(), 0, "load never delivered");
}

/// Issue 26: one tenant's high-frequency fires take at most three quarters of the timer,
/// and no more than its capacity in all. Here 40 per-second jobs meet a timer of 8 (a share of
/// 6), an overload by design: the fires that find no room wait, fall behind, and are written
/// as rows through the misfire policy — every fire has its run (delivered, recorded, or
/// written and waiting its turn), none is delivered twice, and the timer never holds more
/// than its capacity.
async fn fires_beyond_the_timers_room_and_a_tenants_share_lose_nothing(app: &TestApp) {
    use std::sync::Arc;
    use sundial_engine::{Engine, EngineConfig};
    let s = setup(app).await;
    let mut jobs = Vec::new();
    for i in 0..40 {
        let j = app
            .job(
                &s.key,
                json!({"name": format!("share-{i}"), "app": "billing", "handler": "h", "block": "discard_later",
                    "schedule": {"kind": "fixed_rate", "every_ms": 1000}}),
            )
            .await;
        jobs.push(j["id"].as_str().unwrap().to_string());
    }
    let mut cfg = EngineConfig::new("node_share");
    cfg.capacity = 8;
    let engine = Engine::new(app.db.store(), Arc::new(app.clock.clone()), cfg, Arc::new(Default::default()));
    let start = app.clock.now_ms();
    for _ in 0..15 {
        engine.at_dispatch_sync().await.unwrap();
        engine.at_dispatch_fill();
        assert!(engine.timer_len() <= 8, "the timer holds at most its capacity: {}", engine.timer_len());
        engine.tick().await.unwrap();
        app.clock.advance(1_000);
    }
    let end = app.clock.now_ms() - 1_000;
    let mut delivered: std::collections::HashMap<String, usize> = Default::default();
    for d in s.exec.deliveries() {
        *delivered.entry(d.body["run_id"].as_str().unwrap().to_string()).or_default() += 1;
    }
    assert!(!delivered.is_empty());
    for job_id in &jobs {
        let rs = runs(app, &s.key, job_id).await;
        let mut covered = std::collections::BTreeSet::new();
        for r in &rs {
            let at = r["fire_key"].as_str().unwrap().trim_start_matches("s:").parse::<i64>().unwrap();
            assert!(delivered.get(r["id"].as_str().unwrap()).copied().unwrap_or(0) <= 1, "delivered once at most: {r}");
            match r["state"].as_str().unwrap() {
                // Written and waiting its turn (the node is overloaded by design here): kept.
                "succeeded" | "expired" | "skipped" | "pending" | "queued" | "dispatching" => {}
                other => panic!("unexpected state {other}: {r}"),
            }
            covered.insert(at);
        }
        let first = *covered.iter().next().expect("the job fired");
        assert!(first <= start + 1_000, "{first} {start}");
        for at in (first..end - 2_000).step_by(1_000) {
            assert!(covered.contains(&at), "job {job_id}: the fire at {at} has no run");
        }
    }
}

/// The big tenant of the timer-share tests: a manual job triggered ten times, its runs due.
async fn a_big_tenant_with_ten_runs_due(app: &TestApp) -> (Setup, Value) {
    let s = setup(app).await;
    let big = app.job(&s.key, manual("big", json!({}))).await;
    for _ in 0..10 {
        let (st, v) =
            app.post(&format!("/api/v1/jobs/{}/trigger", big["id"].as_str().unwrap()), &s.key, json!({})).await;
        assert_eq!(st, StatusCode::CREATED, "{v}");
    }
    app.clock.advance(10);
    (s, big)
}

/// A tenant whose runs fill its share of a node's timer (three quarters: a hung executor's
/// serial jobs pile up there) is passed over by the claim, so another tenant's run still finds
/// room; its own runs wait as rows (`store/it/runs.rs` checks they are claimed again).
async fn a_tenant_past_its_share_of_the_timer_is_passed_over_by_the_claim(app: &TestApp) {
    use std::sync::Arc;
    use sundial_engine::{Engine, EngineConfig};
    let (s, big) = a_big_tenant_with_ten_runs_due(app).await;
    let small = app.tenant("small").await;
    let (st, _) = app.post("/api/v1/apps", &small.admin, json!({"name": "billing"})).await;
    assert_eq!(st, StatusCode::CREATED);
    let job = app.job(&small.admin, manual("small", json!({}))).await;
    let (st, run) =
        app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), &small.admin, json!({})).await;
    assert_eq!(st, StatusCode::CREATED, "{run}");
    let run_id = run["id"].as_str().unwrap();

    let mut cfg = EngineConfig::new("node_share");
    cfg.capacity = 8; // a share of 6
    cfg.claim_batch = 2;
    let engine = Engine::new(app.db.store(), Arc::new(app.clock.clone()), cfg, Arc::new(Default::default()));
    // Two by two, oldest first: the big tenant's runs until it holds its share, then the
    // small tenant's, though the big tenant's older runs are still due and there is room.
    let mut took = Vec::new();
    for _ in 0..5 {
        took.push(engine.claim_once().await.unwrap());
    }
    assert_eq!(took, [2, 2, 2, 1, 0]);
    assert_eq!(engine.timer_len(), 7);
    assert_eq!(run_detail(app, &small.admin, run_id).await["state"], "queued", "claimed by the node");
    let waiting = runs(app, &s.key, big["id"].as_str().unwrap()).await;
    assert_eq!(waiting.iter().filter(|r| r["state"] == "pending").count(), 4, "the rest wait, as rows");
}

/// The claim takes a whole batch at once, so a tenant just below its share can fill the
/// timer (a hung executor's thousand serial jobs did, on SQLite): a small tenant's fire, due
/// next, still goes into the timer — up to a quarter past its capacity — instead of waiting
/// seconds for room (the 1–3 s late fires of the hung-tenant benchmark).
async fn a_small_tenants_fire_finds_room_in_a_timer_another_tenant_filled(app: &TestApp) {
    use std::sync::Arc;
    use sundial_engine::{Engine, EngineConfig};
    let (s, _) = a_big_tenant_with_ten_runs_due(app).await;
    let mut cfg = EngineConfig::new("node_reserve");
    cfg.capacity = 8; // a share of 6, a quarter of 2
    cfg.claim_batch = 8;
    let engine = Engine::new(app.db.store(), Arc::new(app.clock.clone()), cfg, Arc::new(Default::default()));
    assert_eq!(engine.claim_once().await.unwrap(), 8, "below its share, the big tenant takes a whole batch");
    assert_eq!(engine.timer_len(), 8, "the timer is full");
    // The big tenant's own high-frequency fires find no room: it holds more than the quarter.
    app.job(
        &s.key,
        json!({"name": "big-tick", "app": "billing", "handler": "h", "schedule": {"kind": "fixed_rate", "every_ms": 1000}}),
    )
    .await;
    engine.at_dispatch_sync().await.unwrap();
    assert_eq!(engine.at_dispatch_fill(), 0, "no room for the tenant that filled the timer");

    let small = app.tenant("small").await;
    let (st, _) = app.post("/api/v1/apps", &small.admin, json!({"name": "billing"})).await;
    assert_eq!(st, StatusCode::CREATED);
    app.job(
        &small.admin,
        json!({"name": "tick", "app": "billing", "handler": "h", "schedule": {"kind": "fixed_rate", "every_ms": 1000}}),
    )
    .await;
    engine.at_dispatch_sync().await.unwrap();
    let added = engine.at_dispatch_fill();
    assert!(added >= 1, "the small tenant's next fire goes into the full timer");
    assert!(engine.timer_len() <= 10, "at most a quarter past the capacity: {}", engine.timer_len());
}

/// `GET /runs/{id}/logs`: pages after a `seq`, `next_after` to resume from (also on the
/// last page), the run's state with each page; lines sent later are what the next poll gets.
async fn a_runs_log_is_followed_page_by_page_until_the_run_ends(app: &TestApp) {
    let s = setup(app).await;
    s.exec.always(Answer::Accept);
    let job = app.job(&s.key, manual("follow", json!({}))).await;
    let (_, run) = app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), &s.key, json!({})).await;
    let run_id = run["id"].as_str().unwrap().to_string();
    let logs = format!("/api/v1/runs/{run_id}/logs");
    // Before any line: an empty page that says where to resume and that the run goes on.
    let (st, v) = app.get(&logs, &s.key).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        (v["items"].clone(), v["next_after"].clone(), v["has_more"].clone(), v["run_finished"].clone()),
        (json!([]), json!(0), json!(false), json!(false)),
        "{v}"
    );
    app.engine.tick().await.unwrap();
    let lines =
        |from: usize, n: usize| (from..from + n).map(|i| json!({"message": format!("line {i}")})).collect::<Vec<_>>();
    let (st, _) = callback(app, &s, &logs, "l1", json!({"attempt": 1, "lines": lines(0, 5)})).await;
    assert_eq!(st, StatusCode::OK);
    // Two lines a page: 2 + 2 + 1, each page resuming where the last ended.
    let mut after = 0;
    let mut read = Vec::new();
    for want_more in [true, true, false] {
        let (st, v) = app.get(&format!("{logs}?after={after}&limit=2"), &s.key).await;
        assert_eq!(st, StatusCode::OK, "{v}");
        assert_eq!((v["has_more"].clone(), v["run_state"].clone()), (json!(want_more), json!("running")), "{v}");
        let items = v["items"].as_array().unwrap();
        assert_eq!(v["next_after"], items.last().unwrap()["seq"], "{v}");
        after = v["next_after"].as_i64().unwrap();
        read.extend(items.iter().map(|l| l["message"].as_str().unwrap().to_string()));
    }
    assert_eq!(read, (0..5).map(|i| format!("line {i}")).collect::<Vec<_>>());
    // Polling at the end: nothing new, the same resume point.
    let (_, v) = app.get(&format!("{logs}?after={after}"), &s.key).await;
    assert_eq!((v["items"].clone(), v["next_after"].clone()), (json!([]), json!(after)), "{v}");
    // More lines, then the result: the next poll has exactly the new lines and the end.
    let (st, _) = callback(app, &s, &logs, "l2", json!({"attempt": 1, "lines": lines(5, 2)})).await;
    assert_eq!(st, StatusCode::OK);
    let path = format!("/api/v1/runs/{run_id}/result");
    let (st, _) = callback(app, &s, &path, "r1", json!({"attempt": 1, "status": "succeeded"})).await;
    assert_eq!(st, StatusCode::OK);
    let (_, v) = app.get(&format!("{logs}?after={after}"), &s.key).await;
    let msgs: Vec<&str> = v["items"].as_array().unwrap().iter().map(|l| l["message"].as_str().unwrap()).collect();
    assert_eq!(msgs, ["line 5", "line 6"]);
    assert_eq!(
        (v["has_more"].clone(), v["run_state"].clone(), v["run_finished"].clone()),
        (json!(false), json!("succeeded"), json!(true)),
        "{v}"
    );
    // The run's detail carries the same `seq`s; a viewer may read the log.
    let detail = run_detail(app, &s.key, &run_id).await;
    let (_, all) = app.get(&format!("{logs}?limit=1000"), &s.key).await;
    let seqs = |v: &Value| v.as_array().unwrap().iter().map(|l| l["seq"].as_i64().unwrap()).collect::<Vec<_>>();
    assert_eq!(seqs(&detail["logs"]), seqs(&all["items"]));
    assert_eq!(seqs(&all["items"]).len(), 7);
    let viewer = app.key(&s.key, "viewer").await;
    let (st, v) = app.get(&logs, &viewer).await;
    assert_eq!((st, v["items"].as_array().map(Vec::len)), (StatusCode::OK, Some(7)), "{v}");
}

/// Bad `after` and `limit`, unknown parameters, an unknown run and another tenant's run are
/// refused with the field named; nobody without a key reads a log.
async fn the_log_endpoint_refuses_bad_input_and_other_tenants(app: &TestApp) {
    let s = setup(app).await;
    s.exec.always(Answer::Accept);
    let job = app.job(&s.key, manual("secret-log", json!({}))).await;
    let (_, run) = app.post(&format!("/api/v1/jobs/{}/trigger", job["id"].as_str().unwrap()), &s.key, json!({})).await;
    let run_id = run["id"].as_str().unwrap().to_string();
    app.engine.tick().await.unwrap();
    let logs = format!("/api/v1/runs/{run_id}/logs");
    let (st, _) =
        callback(app, &s, &logs, "l1", json!({"attempt": 1, "lines": [{"message": "password=hunter2"}]})).await;
    assert_eq!(st, StatusCode::OK);
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    for (query, field) in [
        ("after=abc", "after"),
        ("after=-1", "after"),
        ("after=1.5", "after"),
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("limit=-3", "limit"),
        ("limit=ten", "limit"),
    ] {
        let got = app.get(&format!("{logs}?{query}"), &s.key).await;
        assert_error(&got, unprocessable, "invalid_field", Some(field));
    }
    assert_error(&app.get(&format!("{logs}?cursor=5"), &s.key).await, unprocessable, "unknown_field", Some("cursor"));
    assert_error(&app.get(&format!("{logs}?follow=1"), &s.key).await, unprocessable, "unknown_field", Some("follow"));
    let (st, v) = app.get(&format!("{logs}?limit=1000&after=0"), &s.key).await;
    assert_eq!((st, v["items"].as_array().map(Vec::len)), (StatusCode::OK, Some(1)), "the bounds themselves: {v}");
    // Another tenant (admin or not) sees no such run, exactly as for an id that does not exist.
    let other = app.tenant("globex").await;
    let got = app.get(&logs, &other.admin).await;
    assert_error(&got, StatusCode::NOT_FOUND, "not_found", None);
    assert!(!got.1.to_string().contains("hunter2"), "{}", got.1);
    assert_eq!(got.1["message"], app.get("/api/v1/runs/run_nope/logs", &other.admin).await.1["message"]);
    assert_error(&app.get("/api/v1/runs/run_nope/logs", &s.key).await, StatusCode::NOT_FOUND, "not_found", None);
    // The operator key is not a tenant's; no key, a wrong key: refused.
    let (st, _) = app.get(&logs, &app.operator_key).await;
    assert!(st == StatusCode::FORBIDDEN || st == StatusCode::NOT_FOUND, "{st}");
    let (st, v) = app.call("GET", &logs, None, None).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED, "{v}");
    let (st, _) = app.get(&logs, "sk_wrong").await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
}

/// A synchronous handler still running: the run is `dispatching`, no address is stored for
/// its attempt (it is written with the answer). A cancel through the API of the node holding
/// the exchange goes to the exchange's executor at once, signed, naming the run and attempt;
/// the late answer changes nothing.
async fn a_cancel_through_the_api_reaches_a_synchronous_handler_still_running(app: &TestApp) {
    let s = setup(app).await;
    let release = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    s.exec.always(Answer::Hold(release.clone(), json!({"late": true})));
    let job = app.job(&s.key, manual("held", json!({"timeout_ms": 60000}))).await;
    let run = trigger(app, &s.key, job["id"].as_str().unwrap()).await;
    let engine = app.engine.clone();
    let turn = tokio::spawn(async move { engine.tick().await.unwrap() });
    assert_eq!(s.exec.wait_deliveries(1).await.len(), 1, "the handler got the run and holds its answer");
    assert_eq!(state(app, &s.key, &run).await, "dispatching");
    let (st, v) = app.post(&format!("/api/v1/runs/{run}/cancel"), &s.key, json!({})).await;
    assert_eq!((st, v["state"].clone()), (StatusCode::OK, json!("cancelled")), "{v}");
    let c = s.exec.wait_cancels(1).await;
    assert_eq!(c.len(), 1, "the executor holding the exchange is told");
    assert!(c[0].signature_ok, "signed with the app secret");
    assert_eq!(c[0].path, "/hook/cancel");
    assert_eq!(c[0].body, json!({"run_id": run, "attempt": 1}));
    assert_eq!(c[0].headers["sundial-node"], "node_test");
    // The watch has nothing left to send: the exchange got its cancel.
    app.clock.advance(1_000);
    assert_eq!(app.engine.watch_exchanges_once().await.unwrap(), 0);
    release.add_permits(1);
    turn.await.unwrap();
    assert_eq!(state(app, &s.key, &run).await, "cancelled", "the late answer changes nothing");
    assert_eq!(s.exec.cancels().len(), 1, "one cancel");
    assert!(app.engine.cancels().exchanges().is_empty(), "the exchange left when it ended");
}

/// In a cluster the cancel may reach another node, which neither holds the exchange nor
/// finds an address: the delivering node's watch reads the states of its exchanges open
/// over a second, and sends the cancel to the one found cancelled, once.
async fn a_cancel_made_on_another_node_reaches_the_open_exchange_by_its_watch(app: &TestApp) {
    use std::sync::Arc;
    use sundial_engine::{Engine, EngineConfig};
    let s = setup(app).await;
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    s.exec.always(Answer::Hold(release.clone(), json!({"late": true})));
    let job = app.job(&s.key, manual("held", json!({"timeout_ms": 60000}))).await;
    let run = trigger(app, &s.key, job["id"].as_str().unwrap()).await;
    let node_b = Engine::new(
        app.db.store(),
        Arc::new(app.clock.clone()),
        EngineConfig::new("node_b"),
        Arc::new(Default::default()),
    );
    let b = node_b.clone();
    let turn = tokio::spawn(async move { b.tick().await.unwrap() });
    let d = s.exec.wait_deliveries(1).await;
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].headers["sundial-node"], "node_b", "node B delivered it");
    // Cancelled through node_test's API.
    let (st, v) = app.post(&format!("/api/v1/runs/{run}/cancel"), &s.key, json!({})).await;
    assert_eq!((st, v["state"].clone()), (StatusCode::OK, json!("cancelled")), "{v}");
    assert_eq!(node_b.watch_exchanges_once().await.unwrap(), 0, "an exchange open under a second is not read");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(s.exec.cancels().is_empty(), "node_test knows no address for the attempt");
    app.clock.advance(1_000);
    assert_eq!(node_b.watch_exchanges_once().await.unwrap(), 1);
    let c = s.exec.wait_cancels(1).await;
    assert_eq!(c.len(), 1, "node B's watch told the executor");
    assert!(c[0].signature_ok, "signed with the app secret");
    assert_eq!(c[0].body, json!({"run_id": run, "attempt": 1}));
    assert_eq!(c[0].headers["sundial-node"], "node_b");
    app.clock.advance(1_000);
    assert_eq!(node_b.watch_exchanges_once().await.unwrap(), 0, "each exchange is cancelled once");
    release.add_permits(1);
    turn.await.unwrap();
    assert_eq!(state(app, &s.key, &run).await, "cancelled");
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(s.exec.cancels().len(), 1, "one cancel");
    assert!(node_b.cancels().exchanges().is_empty(), "the exchange left when it ended");
}
